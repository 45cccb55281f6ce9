#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks of a trace-report page against trace-stats --json of the same
trace (tests/cli/trace-report.bats).

  report_check.py page PAGE.html STATS.json   well-formed, self-contained,
      small, and every figure in its data-* attributes equal to the JSON's
  report_check.py diff PAGE.html DIFF.json    trace-diff --html's page against
      trace-diff --json: run-wide rows, verdict rows, waterfalls, histograms
  report_check.py png SHOT.png                the screenshot is not blank

Exit 0 when all holds; else 1, with what is wrong on stderr.  The PNG is
decoded here (zlib and the filters of the PNG specification), PIL may be
missing.
"""
import html
import html.parser
import json
import re
import struct
import sys
import xml.etree.ElementTree as ET
import zlib

errors = []


def bad(msg):
    errors.append(msg)


class Page(html.parser.HTMLParser):
    """Elements with data-* attributes, by tag, and what must not be."""

    def __init__(self):
        super().__init__()
        self.items = []   # (tag, attrs dict)
        self.stack = []
        self.void = {"meta", "br", "img", "link", "input", "hr"}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.items.append((tag, a))
        if tag == "script":
            bad("a script element")
        for k in ("src", "href"):
            if k in a:
                bad(f"<{tag} {k}=...>: the page must fetch nothing")
        if tag not in self.void:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.items.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in self.void:
            return
        if not self.stack or self.stack[-1] != tag:
            bad(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            return
        self.stack.pop()


def num(a, k):
    return int(a[k])


def check_page(path, stats_path):
    raw = open(path, "rb").read()
    if len(raw) > 2 * 1024 * 1024:
        bad(f"{len(raw)} bytes: more than 2 MB")
    text = raw.decode("utf-8")
    if not text.startswith("<!DOCTYPE html>"):
        bad("no doctype")
    p = Page()
    p.feed(text)
    p.close()
    if p.stack:
        bad(f"unclosed elements: {p.stack}")
    nsvg = 0
    for m in re.finditer(r"<svg\b.*?</svg>", text, re.S):
        try:
            ET.fromstring(m.group(0))
            nsvg += 1
        except ET.ParseError as e:
            bad(f"an SVG is not well-formed XML: {e}")
    if re.search(r"url\(|@import|https?://(?!www\.w3\.org/2000/svg)", text):
        bad("a reference to something outside the page")
    st = json.load(open(stats_path))
    items = p.items

    def with_attr(k):
        return [a for t, a in items if k in a]

    run = [a for t, a in items if a.get("id") == "run"]
    if len(run) != 1 or num(run[0], "data-wall-ns") != st["run"]["wall_ns"] \
            or num(run[0], "data-events") != st["run"]["events"]:
        bad(f"run header {run} != wall {st['run']['wall_ns']}, events {st['run']['events']}")
    checked = 0

    # GPUs: one row per device with work, its figures
    rows = {num(a, "data-gpu"): a for a in with_attr("data-busy-ns")}
    gpus = st.get("gpus", [])[:64]   # the page lists 64 devices at most
    if len(rows) != len(gpus):
        bad(f"{len(rows)} GPU rows, the JSON has {len(gpus)}")
    for g in gpus:
        a = rows.get(g["device"] if g["device"] is not None else -1)
        if a is None:
            bad(f"no row for GPU {g['device']}")
            continue
        for k, j in (("busy-ns", "busy_ns"), ("idle-ns", "idle_ns"), ("kernel-ns", "kernel_ns"),
                     ("copy-ns", "copy_ns"), ("ops", "ops")):
            if num(a, "data-" + k) != g[j]:
                bad(f"GPU {g['device']} {k}: {a['data-' + k]} != {g[j]}")
            checked += 1
    if len(with_attr("data-strip")) != min(len(gpus), 64):
        bad(f"{len(with_attr('data-strip'))} busy strips for {len(gpus)} GPUs")
    # what each strip draws adds up to the device's busy time
    busy = {g["device"] if g["device"] is not None else -1: g["busy_ns"] for g in gpus}
    for a in with_attr("data-strip"):
        if num(a, "data-bins-ns") != busy.get(num(a, "data-strip")):
            bad(f"strip of GPU {a['data-strip']}: bins add up to {a['data-bins-ns']}")
        checked += 1

    # top operations: the first rows of each table by total, their figures
    for key in ("kernels", "ranges", "memops", "api"):
        ref = sorted(st.get(key, []), key=lambda g: (-g["total_ns"], g["name"]))
        got = [a for a in with_attr("data-table") if a["data-table"] == key]
        if len(got) != min(len(ref), 10):
            bad(f"{key}: {len(got)} rows, expected {min(len(ref), 10)}")
        for a, g in zip(got, ref):
            if a["data-name"] != g["name"] or a.get("data-domain", "") != g.get("domain", ""):
                bad(f"{key}: row {a['data-name']!r} where {g['name']!r} ranks")
                continue
            for k, j in (("count", "count"), ("total-ns", "total_ns"),
                         ("median-ns", "median_ns"), ("p95-ns", "p95_ns")):
                if num(a, "data-" + k) != g[j]:
                    bad(f"{key} {g['name']!r} {k}: {a['data-' + k]} != {g[j]}")
                checked += 1
        # histograms: every duration counted once
        for h in (a for a in with_attr("data-hist") if a["data-hist"] == key):
            g = [x for x in ref if x["name"] == h["data-name"]
                 and x.get("domain", "") == h.get("data-domain", "")]
            if not g or num(h, "data-count") != sum(x["count"] for x in g):
                bad(f"histogram of {h['data-name']!r}: count {h['data-count']}")
            checked += 1
    # the bins of each histogram add up to its count (document order)
    cur, total = None, 0
    for t, a in items + [("end", {"data-hist": "", "data-count": "0"})]:
        if "data-hist" in a:
            if cur is not None and total != num(cur, "data-count"):
                bad(f"bins of {cur['data-name']!r} add up to {total}, not {cur['data-count']}")
            cur, total = a, 0
        elif "data-bin" in a:
            total += num(a, "data-n")

    # steps: each bar's window and breakdown
    steps = st.get("steps", {}).get("instances", [])
    bars = with_attr("data-step")
    # the note says when the steps are the capture range, one per input
    for a in with_attr("data-whole-input"):
        if num(a, "data-whole-input") != int(st["steps"]["whole_input"]):
            bad(f"data-whole-input {a['data-whole-input']}, the JSON's whole_input "
                f"{st['steps']['whole_input']}")
        checked += 1
    if len(bars) != min(len(steps), 400):
        bad(f"{len(bars)} step bars, the JSON has {len(steps)} steps")
    cats = ("kernel", "memcpy", "memset", "runtime", "dataloader", "cpu", "other")
    for a, s in zip(bars, steps):
        if num(a, "data-begin-ns") != s["begin_ns"] or num(a, "data-dur-ns") != s["dur_ns"]:
            bad(f"step {a['data-step']}: window differs")
        for c in cats:
            if num(a, "data-" + c) != s["breakdown"][c]:
                bad(f"step {a['data-step']} {c}: {a['data-' + c]} != {s['breakdown'][c]}")
            checked += 1
    for a in with_attr("data-cat"):
        c = a["data-cat"]
        want = sum(s["dur_ns"] if c == "all" else s["breakdown"][c] for s in steps)
        if num(a, "data-total-ns") != want:
            bad(f"steps total of {c}: {a['data-total-ns']} != {want}")
        checked += 1

    # processes with their end: lifetime and resources
    procs = {p["pid"]: p for p in st.get("processes", []) if p.get("wall_ns", 0) > 0}
    rows = with_attr("data-max-rss-bytes")
    if len(rows) != min(len(procs), 64):
        bad(f"{len(rows)} process rows, the JSON has {len(procs)} with an end")
    for a in rows:
        p = procs.get(num(a, "data-pid"))
        if p is None:
            bad(f"process {a['data-pid']} is not in the JSON")
            continue
        for k, j in (("wall-ns", "wall_ns"), ("user-ns", "user_ns"), ("system-ns", "system_ns"),
                     ("max-rss-bytes", "max_rss_bytes")):
            if num(a, "data-" + k) != p[j]:
                bad(f"process {p['pid']} {k}: {a['data-' + k]} != {p[j]}")
            checked += 1

    # memory peaks
    mem = {num(a, "data-mem-gpu"): a for a in with_attr("data-mem-gpu")}
    for d in st.get("memory", {}).get("devices", [])[:64]:
        a = mem.get(d["device"] if d["device"] is not None else -1)
        if a is None:
            bad(f"no memory row for device {d['device']}")
            continue
        for k, j in (("allocated-peak-bytes", "allocated_peak_bytes"),
                     ("counter-peak-bytes", "counter_peak_bytes"),
                     ("allocs", "allocs"), ("frees", "frees")):
            if j in d and num(a, "data-" + k) != d[j]:
                bad(f"memory of device {d['device']} {k}: {a.get('data-' + k)} != {d[j]}")
            checked += j in d
        for k in ("allocated_peak_bytes", "reserved_peak_bytes"):
            j = d.get("allocator", {}).get(k)
            got = a.get("data-allocator-" + k.replace("_", "-"))
            if (j is None) != (got is None) or (j is not None and int(got) != j):
                bad(f"memory of device {d['device']} allocator {k}: {got} != {j}")
            checked += 1

    checked += check_findings(text, items, st)
    return checked, nsvg


def check_findings(text, items, st):
    """The findings, in trace-stats --json's order and words; their
    figures against the JSON's tables (not the findings' own text)."""
    checked = 0
    want = st.get("findings", [])
    got = [a for t, a in items if "data-finding" in a]
    lines = [html.unescape(re.sub(r"<[^>]*>", "", m.group(1)))
             for m in re.finditer(r"<li\b[^>]*\bdata-finding=[^>]*>(.*?)</li>", text, re.S)]
    if len(got) != len(want) or len(lines) != len(got):
        bad(f"{len(got)} findings ({len(lines)} lines), the JSON has {len(want)}")
    # ranges of one name in several domains: the finding names no domain
    groups = {}
    for k in ("kernels", "memops", "api", "ranges"):
        for g in st.get(k, []):
            groups.setdefault((k, g["name"]), []).append(g)
    tables = {k: sum(g["total_ns"] for g in st.get(k, [])) for k in ("kernels", "memops", "api", "ranges")}
    gpus = {f"GPU {g['device']}": g for g in st.get("gpus", [])}
    ranks = {r["rank"]: r for r in st.get("distributed", {}).get("ranks", [])}
    for a, line, f in zip(got, lines, want):
        for k in ("type", "report", "name"):
            if a.get("data-finding" if k == "type" else "data-" + k) != f[k]:
                bad(f"finding {f['type']} {f['name']!r}: {k} differs")
        if abs(float(a["data-value"]) - f["value"]) > 1e-9 * max(1, abs(f["value"])):
            bad(f"finding {f['type']} {f['name']!r}: value {a['data-value']} != {f['value']}")
        if line != f"{f['type']} {f['message']}":
            bad(f"finding text {line!r} != {f['type']} {f['message']!r}")
        sev = "warning" if f["type"] in ("dropped", "bottleneck", "straggler") else "note"
        if a.get("data-severity") != sev:
            bad(f"finding {f['type']} {f['name']!r}: severity {a.get('data-severity')}")
        # each figure from the table, device or rank the finding is about
        cands = groups.get((f["report"], f["name"]), [{}])
        g = next((c for c in cands if all(
            "data-" + k not in a or num(a, "data-" + k) == c.get(j)
            for k, j in (("total-ns", "total_ns"), ("min-ns", "min_ns"), ("max-ns", "max_ns")))),
            cands[0])
        ref = {"total-ns": g.get("total_ns"), "min-ns": g.get("min_ns"),
               "max-ns": g.get("max_ns"), "table-ns": tables.get(f["report"])}
        if f["type"] == "gpu_idle":
            d = gpus.get(f["name"], {})
            ref = {"idle-ns": d.get("idle_ns"), "wall-ns": st["run"]["wall_ns"],
                   "span-ns": d.get("last_ns", 0) - d.get("first_ns", 0)}
        elif f["type"] == "straggler":
            r = ranks.get(f["name"], {})
            ref = {"compute-ns": r.get("compute_ns"), "step-total-ns": r.get("step_total_ns"),
                   "steps": r.get("steps")}
        elif f["report"] == "per":
            per = st.get("per", {})
            ch = [c for c in per.get("children", []) if c["name"] == f["name"]
                  and c["kind"] not in ("kernel", "memcpy", "memset", "gpu")]
            ref = {"instances-ns": per.get("duration", {}).get("total_ns"),
                   "total-ns": ch[0]["time_per_instance"]["total_ns"] if ch else None}
        elif f["type"] == "dropped":
            ref = {"events": st["run"]["dropped"] if "dropped" in f["message"]
                   else st["run"]["skipped_unknown"]}
        for k, v in ref.items():
            if "data-" + k in a:
                if num(a, "data-" + k) != v:
                    bad(f"finding {f['type']} {f['name']!r} {k}: {a['data-' + k]} != {v}")
                checked += 1
    # the straggler's strip: the rank the (compute, else step) finding names
    strag = [f for f in want if f["type"] == "straggler"]
    strag.sort(key=lambda f: "computes" not in f["message"])
    note = [a for t, a in items if "data-straggler" in a]
    if len(note) != (1 if strag else 0):
        bad(f"{len(note)} straggler notes for {len(strag)} straggler findings")
    elif strag:
        if note[0]["data-straggler"] != strag[0]["name"] or \
                abs(float(note[0]["data-ratio"]) - strag[0]["value"]) > 1e-9 * strag[0]["value"]:
            bad(f"straggler {note[0]['data-straggler']} {note[0]['data-ratio']} where "
                f"{strag[0]['name']} {strag[0]['value']}")
        checked += 1
    return checked


def check_diff(path, diff_path):
    """trace-diff --html's page against trace-diff --json."""
    text = open(path, encoding="utf-8").read()
    if len(text.encode()) > 2 * 1024 * 1024:
        bad("more than 2 MB")
    p = Page()
    p.feed(text)
    p.close()
    if p.stack:
        bad(f"unclosed elements: {p.stack}")
    for m in re.finditer(r"<svg\b.*?</svg>", text, re.S):
        try:
            ET.fromstring(m.group(0))
        except ET.ParseError as e:
            bad(f"an SVG is not well-formed XML: {e}")
    js = json.load(open(diff_path))
    checked = 0
    rows = [a for t, a in p.items if "data-metric" in a]
    if len(rows) != len(js["summary"]):
        bad(f"{len(rows)} run-wide rows, the JSON has {len(js['summary'])}")
    for a, r in zip(rows, js["summary"]):
        if a["data-metric"] != r["metric"]:
            bad(f"run-wide row {a['data-metric']} where {r['metric']} is")
        for k in ("before", "after"):
            if (r[k] is None) != ("data-" + k not in a) or \
                    (r[k] is not None and num(a, "data-" + k) != r[k]):
                bad(f"{r['metric']} {k}: {a.get('data-' + k)} != {r[k]}")
            checked += 1
    groups = {(g["report"], g["name"]): g for g in js["groups"]}
    for a in (a for t, a in p.items if "data-verdict" in a):
        g = groups.get((a["data-report"], a["data-name"]))
        if not g or g["verdict"] != a["data-verdict"] or g["delta_ns"] != num(a, "data-delta-ns"):
            bad(f"verdict row {a['data-name']!r}: {a['data-verdict']} {a['data-delta-ns']}")
        checked += 1
    # waterfalls: totals of the table, and the steps in between add up
    cur = None
    for t, a in p.items + [("end", {"data-before-ns": "0", "data-table": ""})]:
        if "data-before-ns" in a:
            if cur is not None:
                tb = sum(g["before"]["total_ns"] for g in js["groups"]
                         if g["report"] == cur["data-table"] and g["before"])
                ta = sum(g["after"]["total_ns"] for g in js["groups"]
                         if g["report"] == cur["data-table"] and g["after"])
                if (num(cur, "data-before-ns"), num(cur, "data-after-ns")) != (tb, ta):
                    bad(f"waterfall of {cur['data-table']}: totals differ from the JSON's")
                if not steps or steps[0] != tb or steps[-1] != ta or \
                        tb + sum(steps[1:-1]) != ta:
                    bad(f"waterfall of {cur['data-table']}: steps {steps} do not add up")
                checked += 2
            cur, steps = a, []
        elif "data-delta-ns" in a and "data-step" in a and cur is not None:
            steps.append(num(a, "data-delta-ns"))
    # histograms: before and after counts are the groups' counts
    for a in (a for t, a in p.items if "data-before-count" in a):
        g = groups.get((a["data-table"], a["data-name"]))
        if not g or (num(a, "data-before-count"), num(a, "data-after-count")) != \
                (g["before"]["count"], g["after"]["count"]):
            bad(f"histogram of {a['data-name']!r}: counts differ")
        checked += 1
    return checked


def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise ValueError(f"PNG depth {depth} type {ctype} interlace {interlace}")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pr) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def check_png(path):
    w, h, bpp, rows = png_pixels(path)
    colours = set()
    inked = 0
    for row in rows[::2]:
        for x in range(0, w * bpp, bpp * 2):
            px = row[x:x + 3]
            colours.add(px)
            inked += px != b"\xff\xff\xff"
    # a page of text and pictures: many colours (antialiasing, charts),
    # and ink on a good part of it
    if len(colours) < 50:
        bad(f"{len(colours)} distinct colours: a blank or broken page")
    if inked < 0.02 * len(rows[::2]) * (w // 2):
        bad(f"only {inked} pixels that are not white")
    return len(colours)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "page":
        checked, nsvg = check_page(sys.argv[2], sys.argv[3])
        print(f"{checked} figures, {nsvg} pictures")
    elif len(sys.argv) == 4 and sys.argv[1] == "diff":
        print(f"{check_diff(sys.argv[2], sys.argv[3])} figures")
    elif len(sys.argv) == 3 and sys.argv[1] == "png":
        print(f"{check_png(sys.argv[2])} colours")
    else:
        sys.exit(__doc__)
    for e in errors:
        print(e, file=sys.stderr)
    sys.exit(1 if errors else 0)


main()
