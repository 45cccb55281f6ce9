#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The loops of the reliability matrix: one command over every damaged
trace of a manifest written by `badtrace cuts` or `badtrace flips`.

    reliability.py cuts|flips KEY DIR
    reliability.py json-fixtures DIR
    reliability.py json-cuts|json-flips DIR

KEY is dump, stats, chrome, merge or diff; DIR holds base.tkt and what
rel_fixtures (reliability.bash) made of it.  For each damaged trace the
command must exit 1, print exactly one line on stderr naming the file
and the byte offset the manifest gives, and deliver every event of the
complete chunks before the damage: as many as their headers count, and
the same ones.  Under valgrind (TK_UNDER_VALGRIND=1) one in eight cases
runs.  Prints the number of cases checked; exits 1 at the first failure.

The json-* modes do the same for trace-import's input, Chrome JSON:
json-fixtures cuts DIR/base.json (one event per line, as trace-to-chrome
writes it) and its gzip form DIR/base.json.gz at many offsets and flips
bits in them; json-cuts and json-flips run trace-import on each and
check that every event complete before the damage was imported (GPU
kernels are counted: each is one line of the JSON and one event of the
trace), and what it says on stderr.
"""
import gzip
import zlib
import collections
import json
import os
import re
import subprocess
import sys

ARGV = {
    "dump": ["trace-dump"],
    "stats": ["trace-stats", "--json"],
    "chrome": ["trace-to-chrome"],
    "merge": ["trace-merge", "-k"],
    # compares base.tkt with the damaged trace: it is not compared at all
    "diff": ["trace-diff", "--json"],
}


def cut_message(what, at):
    return {
        "empty": r"empty input \(not a trace\)",
        "header": f"truncated header at byte {at}",
        "end": rf"truncated at byte {at} \(the trace has no end marker: "
               r"its writer did not finish\)",
        "chunk": f"truncated chunk at byte {at}",
    }[what]


def flip_message(at):
    # which check fails depends on the field hit; where it is does not
    return rf".* at byte {at}([ )].*)?"


class Base:
    def __init__(self, d):
        self.lines = open(os.path.join(d, "base.txt"), "rb").read().splitlines(True)
        self.csv = open(os.path.join(d, "base.csv"), "rb").read().splitlines()
        self.kinds = [r.split(b",", 1)[0].decode() for r in self.csv]


def delivered(key, out, n, base):
    """None if `out` holds exactly the first n events, else what differs."""
    if key == "diff":
        return "a damaged trace was compared" if out else None
    if key == "dump":
        if out != b"".join(base.lines[:n]):
            return f"not the first {n} lines of the listing"
    elif key == "stats":
        if n == 0:
            return None if not out else "a summary of nothing"
        run = json.loads(out)["run"]
        want = collections.Counter(base.kinds[:n])
        if run["events"] != n or run["kinds"] != dict(want):
            return f"events {run['events']} {run['kinds']}, expected {n} {dict(want)}"
    elif key == "chrome":
        doc = json.loads(out)
        tk = doc["otherData"]["tracekit"]
        kernels = sum(1 for e in doc["traceEvents"] if e.get("cat") == "kernel")
        want = base.kinds[:n].count("kernel")
        if tk["events_read"] != n or kernels != want:
            return f"read {tk['events_read']} events, {kernels} kernels; " \
                   f"expected {n}, {want}"
        if len(tk["errors"]) != 1:
            return f"errors in the output: {tk['errors']}"
    elif key == "merge":
        p = subprocess.run(["trace-dump", "--csv", "-"], input=out,
                           capture_output=True)
        if p.returncode != 0:
            return "the merged output does not read: " + p.stderr.decode()
        got = sorted(p.stdout.splitlines()[1:])
        if got != sorted(base.csv[:n]):
            return f"{len(got)} events that are not the first {n}"
    return None


# ---- trace-import ---------------------------------------------------------

def kernel_ends(text):
    """Offsets just past the closing brace of each GPU kernel event."""
    ends, o = [], 0
    for line in text.split(b"\n"):
        if b'"cat":"kernel"' in line:
            ends.append(o + line.rindex(b"}") + 1)
        o += len(line) + 1
    return ends


def complete_kernels(text, cut):
    return sum(1 for e in kernel_ends(text) if e <= cut)


def json_fixtures(d):
    text = open(os.path.join(d, "base.json"), "rb").read()
    gz = gzip.compress(text, mtime=0)
    open(os.path.join(d, "base.json.gz"), "wb").write(gz)
    os.makedirs(os.path.join(d, "json"), exist_ok=True)
    lines, offs, o = text.split(b"\n"), [], 0
    for line in lines:
        offs.append(o)
        o += len(line) + 1
    kl = [i for i, line in enumerate(lines) if b'"cat":"kernel"' in line]
    pick = kl[1:len(kl):max(1, len(kl) // 10)]
    cuts = {0, 1, 5, 16, 17, 18, len(text) - 200, len(text) - 2, len(text) - 1}
    for i in pick:
        end = offs[i] + len(lines[i])
        cuts |= {offs[i], offs[i] + 1, offs[i] + len(lines[i]) // 2,
                 end - 1, end, end + 1}
    with open(os.path.join(d, "json-cuts.txt"), "w") as m:
        for c in sorted(cuts):
            if not text[c:].strip():
                continue  # only white space cut: the JSON is whole
            path = os.path.join(d, "json", f"cut-{c}.json")
            open(path, "wb").write(text[:c])
            m.write(f"{path} {c} {complete_kernels(text, c)}\n")
        # gzip: what a reader can still inflate of the cut stream
        for c in (10, len(gz) // 3, 2 * len(gz) // 3, len(gz) - 8, len(gz) - 1):
            path = os.path.join(d, "json", f"cut-{c}.json.gz")
            open(path, "wb").write(gz[:c])
            z = zlib.decompressobj(wbits=31)
            try:
                got = z.decompress(gz[:c])
            except zlib.error:
                got = b""
            m.write(f"{path} {c} {complete_kernels(text, len(got))}\n")
    total = len(kl)
    with open(os.path.join(d, "json-flips.txt"), "w") as m:
        for k, i in enumerate(pick):
            # "ph" becomes "qh": that event has no phase and is skipped
            o = offs[i] + lines[i].index(b'"ph"') + 1
            flip(text, d, m, o, 0, total - 1, "ph", offs[i])
            # "{" becomes "z": the structure breaks, reading stops there
            if k % 3 == 0:
                flip(text, d, m, offs[i], 0, complete_kernels(text, offs[i]),
                     "structure", offs[i])
        for c in (len(gz) // 4, len(gz) // 2, len(gz) - 6):
            path = os.path.join(d, "json", f"flip-{c}.json.gz")
            b = bytearray(gz)
            b[c] ^= 0x10
            open(path, "wb").write(b)
            m.write(f"{path} {c} {total} gzip {c}\n")


def flip(text, d, m, off, bit, kernels, what, at):
    path = os.path.join(d, "json", f"flip-{off}-{bit}.json")
    b = bytearray(text)
    b[off] ^= 1 << bit
    open(path, "wb").write(b)
    m.write(f"{path} {off} {kernels} {what} {at}\n")


def imported_kernels(path):
    p = subprocess.run(["trace-dump", "-k", "kernel", path], capture_output=True)
    if p.returncode != 0:
        return f"the output does not read: {p.stderr.decode()}"
    return p.stdout.count(b"\n")


def json_case(mode, line, tmp):
    f = line.split()
    path, off, kernels = f[0], f[1], int(f[2])
    out = os.path.join(tmp, "import.tkt")
    p = subprocess.run(["trace-import", "-o", out, path], capture_output=True)
    err = p.stderr.decode(errors="replace")
    q = re.escape(path)
    if mode == "json-cuts":
        if path.endswith(".gz"):
            msg = rf"trace-import: {q}: truncated gzip data after byte \d+ of the JSON\n"
        elif off == "0":
            msg = rf"trace-import: {q}: the input is empty\n"
        else:
            msg = rf"trace-import: {q}: [^\n]* at byte \d+\n"
        if p.returncode != 1:
            return f"exit status {p.returncode}, expected 1"
        if not re.fullmatch(msg, err):
            return f"expected one line matching {msg}"
        got = imported_kernels(out)
        if got != kernels:
            return f"{got} kernels imported, expected {kernels}"
        return None
    what, at = f[3], f[4]
    if p.returncode != 1:
        return f"exit status {p.returncode}, expected 1"
    got = imported_kernels(out)
    if what == "ph":
        msg = rf"trace-import: {q}: event at byte {at}: no 'ph'\n"
    elif what == "structure":
        msg = rf"trace-import: {q}: expected an event at byte {at}\n"
    else:
        # inflated garbage may be reported as such first; the last line
        # says where the compressed data broke
        msg = rf"(trace-import: {q}: [^\n]* byte \d+[^\n]*\n)*" \
              rf"trace-import: {q}: corrupt gzip data at byte \d+ of the file: [^\n]*\n"
        if not re.fullmatch(msg, err):
            return f"expected lines matching {msg}"
        if isinstance(got, str) or got > kernels:
            return f"{got} kernels imported, at most {kernels} expected"
        return None
    if not re.fullmatch(msg, err):
        return f"expected one line matching {msg}"
    if got != kernels:
        return f"{got} kernels imported, expected {kernels}"
    return None


def json_main(mode, d):
    if mode == "json-fixtures":
        json_fixtures(d)
        return
    step = 8 if os.environ.get("TK_UNDER_VALGRIND") == "1" else 1
    name = "json-cuts.txt" if mode == "json-cuts" else "json-flips.txt"
    cases = open(os.path.join(d, name)).read().splitlines()[::step]
    for line in cases:
        problem = json_case(mode, line, d)
        if problem:
            print(f"{mode}: {line}: {problem}", file=sys.stderr)
            sys.exit(1)
    print(len(cases))


def main():
    if sys.argv[1].startswith("json-"):
        json_main(sys.argv[1], sys.argv[2])
        return
    mode, key, d = sys.argv[1:4]
    base = Base(d)
    step = 8 if os.environ.get("TK_UNDER_VALGRIND") == "1" else 1
    cases = open(os.path.join(d, mode + ".txt")).read().splitlines()[::step]
    for line in cases:
        f = line.split()
        if mode == "cuts":
            path, off, n, what, at = f
            msg = cut_message(what, at)
        else:
            path, off, n, at = f
            msg = flip_message(at)
        n = int(n)
        # trace-diff: the damaged trace after the intact one
        files = [os.path.join(d, "base.tkt"), path] if key == "diff" else [path]
        p = subprocess.run(ARGV[key] + files, capture_output=True)
        err = p.stderr.decode(errors="replace")
        name = ARGV[key][0]
        bad = 2 if key == "diff" else 1
        problem = None
        if p.returncode != bad:
            problem = f"exit status {p.returncode}, expected {bad}"
        elif not re.fullmatch(f"{name}: {re.escape(path)}: {msg}\n", err):
            problem = f"expected one line matching '{msg}'"
        else:
            problem = delivered(key, p.stdout, n, base)
        if problem:
            print(f"{mode} at byte {off} ({path}): {problem}\nstderr: {err}",
                  file=sys.stderr)
            sys.exit(1)
    print(len(cases))


main()
