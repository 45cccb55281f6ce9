#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Independent reference for trace-stats, for its tests.

  trace-dump --json FILE... | stats_reference.py [filters] > ref.json
  stats_reference.py --compare ref.json ours.json

The first form computes, from the events alone and with nothing from
tracekit's C code, every figure trace-stats --json prints: the operation
tables (count, total, mean, sample std, min, percentiles interpolated at
rank q*(n-1), max, share, bytes, bandwidths), GPU busy time as a union of
intervals, wall time, events by kind, processes, memory peaks and the
per-instance view.  The second form checks trace-stats' figures against
it: integers exactly, rounded figures within half a nanosecond.
"""
import argparse
import json
import math
import re
import sys


def quantile(sorted_vals, q):
    n = len(sorted_vals)
    if n == 0:
        return 0.0
    r = q * (n - 1)
    lo = math.floor(r)
    f = r - lo
    a = sorted_vals[lo]
    if f == 0 or lo + 1 >= n:
        return float(a)
    return a + f * (sorted_vals[lo + 1] - a)


def stats(vals):
    n = len(vals)
    s = sorted(vals)
    total = sum(s)
    mean = total / n if n else 0.0
    std = math.sqrt(sum((x - mean) ** 2 for x in s) / (n - 1)) if n > 1 else 0.0
    return {
        "count": n, "total_ns": total, "mean_ns": mean, "std_ns": std,
        "min_ns": s[0] if n else 0, "max_ns": s[-1] if n else 0,
        "median_ns": quantile(s, 0.5), "p95_ns": quantile(s, 0.95),
        "p99_ns": quantile(s, 0.99),
    }


def union_length(intervals):
    total = 0
    cs = ce = None
    for b, e in sorted(intervals):
        if cs is None:
            cs, ce = b, e
        elif b <= ce:
            ce = max(ce, e)
        else:
            total += ce - cs
            cs, ce = b, e
    if cs is not None:
        total += ce - cs
    return total


TABLE_OF = {"kernel": "kernels", "memcpy": "memops", "memset": "memops",
            "api": "api", "range": "ranges", "async_range": "ranges"}


def group_key(e):
    k = e["kind"]
    if k == "memcpy":
        if e.get("copy_kind", "Unknown") != "Unknown":
            return (k, "", "Memcpy %s (%s -> %s)" % (e["copy_kind"], e["src_kind"], e["dst_kind"]))
        return (k, "", e["name"] or "Memcpy Unknown")
    if k == "memset":
        return (k, "", "Memset (%s)" % e["mem_kind"])
    if k in ("range", "async_range"):
        return (k, e.get("domain", ""), e["name"])
    return (k, "", e["name"])


def reference(args):
    events = [json.loads(line) for line in sys.stdin if line.strip()]
    name_re = re.compile(args.name) if args.name else None
    exclude_re = re.compile(args.exclude) if args.exclude else None
    # time window: relative to the first event (sorted inputs) or a run
    lo, hi = -2**63, 2**63 - 1
    if events and (args.from_ns or args.to_ns is not None or args.run):
        origin = min(e["ts"] for e in events if e["kind"] != "dropped")
        end = 2**63 - 1
        if args.run:
            runs = [e for e in events if e["kind"] == "run" and e["run"] == args.run]
            origin, end = runs[0]["ts"], runs[0]["ts"] + runs[0]["dur"] + 1
        lo = origin + args.from_ns
        hi = min(end, origin + args.to_ns) if args.to_ns is not None else end

    kept = []
    kinds = {}
    dropped = 0
    for e in events:
        if e["kind"] == "dropped":
            dropped += e["count"]
            kinds["dropped"] = kinds.get("dropped", 0) + 1
            continue
        if not lo <= e["ts"] < hi:
            continue
        if args.pid and e.get("pid") not in args.pid:
            continue
        if args.device and "device" in e and e["device"] not in args.device:
            continue
        if args.stream and "stream" in e and e["stream"] not in args.stream:
            continue
        if e["kind"] in TABLE_OF:
            key = group_key(e)
            named_out = (name_re and not name_re.search(key[2])) or \
                        (exclude_re and exclude_re.search(key[2]))
            is_per = args.per and e["kind"] in ("range", "async_range") and e["name"] == args.per
            if named_out and not is_per:
                continue
            e["_grouped"] = not named_out
        kept.append(e)
        kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1

    out = {}
    timed = [e for e in kept]
    t_min = min((e["ts"] for e in timed), default=0)
    t_max = max((e["ts"] + e["dur"] for e in timed), default=0)
    wall = t_max - t_min if timed else 0
    out["run"] = {"wall_ns": wall, "events": len(kept) + kinds.get("dropped", 0),
                  "events_read": len(events), "kinds": kinds, "dropped": dropped}

    groups = {}
    for e in kept:
        if e["kind"] in TABLE_OF and e["_grouped"]:
            groups.setdefault(group_key(e), []).append(e)
    for table in ("kernels", "memops", "api", "ranges"):
        rows = []
        keys = [k for k in groups if TABLE_OF[k[0]] == table]
        table_total = sum(sum(e["dur"] for e in groups[k]) for k in keys)
        for k in keys:
            evs = groups[k]
            row = {"kind": k[0], "domain": k[1], "name": k[2]}
            row.update(stats([e["dur"] for e in evs]))
            row["time_pct"] = 100.0 * row["total_ns"] / table_total if table_total else 0.0
            if table == "memops":
                row["bytes"] = sum(e["bytes"] for e in evs)
                row["bytes_per_s"] = row["bytes"] * 1e9 / row["total_ns"] if row["total_ns"] else 0
                rates = [e["bytes"] / e["dur"] for e in evs if e["dur"] > 0]
                row["mean_bytes_per_s"] = sum(rates) / len(rates) * 1e9 if rates else 0
            first = min(evs, key=lambda e: e["ts"])
            row["_first_dur"] = first["dur"]
            rows.append(row)
        out[table] = rows

    # GPU time per device: unions of intervals
    gpus = {}
    for e in kept:
        if e["kind"] in ("kernel", "memcpy", "memset"):
            g = gpus.setdefault(e.get("device", -1), {"all": [], "kernel": [], "copy": []})
            iv = (e["ts"], e["ts"] + e["dur"])
            g["all"].append(iv)
            g["kernel" if e["kind"] == "kernel" else "copy"].append(iv)
    out["gpus"] = []
    for dev, g in sorted(gpus.items()):
        busy = union_length(g["all"])
        k = union_length(g["kernel"])
        c = union_length(g["copy"])
        out["gpus"].append({"device": dev, "busy_ns": busy, "kernel_ns": k, "copy_ns": c,
                            "overlap_ns": k + c - busy, "idle_ns": wall - busy,
                            "busy_pct": 100.0 * busy / wall if wall else 0,
                            "ops": len(g["all"]),
                            "first_ns": min(b for b, _ in g["all"]),
                            "last_ns": max(x for _, x in g["all"])})

    out["processes"] = [{"pid": e["pid"], "wall_ns": e["dur"], "user_ns": e["utime"],
                         "system_ns": e["stime"], "max_rss_bytes": e["max_rss"],
                         "exit_code": e.get("exit_code")}
                        for e in kept if e["kind"] == "process"]

    # memory: sampled counters and allocations in time order (frees
    # first at equal times)
    rss, devmem, mem = {}, {}, {}
    for e in kept:
        if e["kind"] == "counter" and e.get("unit") == "bytes":
            if "device" in e:
                devmem[e["device"]] = max(devmem.get(e["device"], -1), e["value"])
            elif "pid" in e:
                rss[e["pid"]] = max(rss.get(e["pid"], -1), e["value"])
        if e["kind"] == "memory" and "device" in e:
            mem.setdefault(e["device"], []).append(
                (e["ts"], -e["bytes"] if e["op"] == "free" else e["bytes"], e["op"]))
    devices = []
    for dev in sorted(set(devmem) | set(mem)):
        d = {"device": dev}
        if dev in devmem:
            d["counter_peak_bytes"] = devmem[dev]
        if dev in mem:
            in_use = peak = 0
            for ts, delta, _ in sorted(mem[dev]):
                in_use += delta
                peak = max(peak, in_use)
            d["allocated_peak_bytes"] = peak
            d["allocs"] = sum(1 for m in mem[dev] if m[2] == "alloc")
            d["frees"] = sum(1 for m in mem[dev] if m[2] == "free")
            d["alloc_bytes"] = sum(m[1] for m in mem[dev] if m[2] == "alloc")
            d["not_freed_bytes"] = in_use
        devices.append(d)
    out["memory"] = {"processes": [{"pid": p, "rss_peak_bytes": v} for p, v in sorted(rss.items())],
                     "devices": devices}

    if args.per:
        out["per"] = per_instance(kept, args.per)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


def per_instance(kept, name):
    insts = {}      # (pid, tid) -> [(b, e, index)]
    n = 0
    durs = []
    for e in kept:
        if e["kind"] in ("range", "async_range") and e["name"] == name:
            insts.setdefault((e.get("pid"), e.get("tid")), []).append((e["ts"], e["ts"] + e["dur"], n))
            durs.append(e["dur"])
            n += 1

    # steps (a training loop's: ProfilerStep#N, step, iteration, ...)
    # own the work of the threads with no step of their own
    steps = re.fullmatch(r"(?i)(profilerstep|step|iteration|iter|train_step|training_step)([#_.-]\d*)?", name)

    def enclosing(thread, t):
        # a thread with no instance of its own: its process's, any thread
        if thread in insts:
            cands = insts[thread]
        elif steps and thread[0] is not None:
            cands = [x for k, v in insts.items() if k[0] == thread[0] for x in v]
        else:
            cands = []
        best = None
        for b, e, i in cands:
            if b <= t and (t < e or b == e):
                if best is None or b > best[0] or (b == best[0] and e < best[1]):
                    best = (b, e, i)
        return best[2] if best else None

    launches = {}
    for e in kept:
        if e["kind"] == "api" and e.get("correlation"):
            launches[(e.get("pid"), e["correlation"])] = ((e.get("pid"), e.get("tid")), e["ts"])
    cells = {}
    outside = no_launch = 0
    for e in kept:
        if e["kind"] not in TABLE_OF or not e["_grouped"]:
            continue
        if e["kind"] in ("range", "async_range") and e["name"] == name:
            continue
        if e["kind"] in ("kernel", "memcpy", "memset"):
            l = launches.get((e.get("pid"), e.get("correlation")))
            if not l:
                no_launch += 1
                continue
            i = enclosing(l[0], l[1])
            if i is None:
                outside += 1
                continue
        else:
            i = enclosing((e.get("pid"), e.get("tid")), e["ts"])
            if i is None:
                continue
        keys = [group_key(e)]
        if e["kind"] == "kernel":
            keys.append(("gpu", "", "all kernels"))
        elif e["kind"] in ("memcpy", "memset"):
            keys.append(("gpu", "", "all copies and memsets"))
        for key in keys:
            c = cells.setdefault(key, {}).setdefault(i, [0, 0])
            c[0] += 1
            c[1] += e["dur"]
    children = []
    for key, per in cells.items():
        counts = [per.get(i, [0, 0])[0] for i in range(n)]
        times = [per.get(i, [0, 0])[1] for i in range(n)]
        cs, ts = stats(counts), stats(times)
        children.append({"kind": key[0], "domain": key[1], "name": key[2],
                         "instances_with": len(per),
                         "count_per_instance": {"mean": cs["mean_ns"], "min": cs["min_ns"],
                                                "max": cs["max_ns"], "median": cs["median_ns"],
                                                "total": cs["total_ns"]},
                         "time_per_instance": ts,
                         "share_pct": 100.0 * ts["total_ns"] / sum(durs) if durs else 0})
    return {"instances": n, "duration": stats(durs), "children": children,
            "gpu_outside": outside, "gpu_no_launch": no_launch}


# ---- comparison ---------------------------------------------------------------------

failures = []


def check(what, ours, ref, tol=0.0):
    if ours is None:
        failures.append("%s: missing (expected %r)" % (what, ref))
        return
    if isinstance(ref, float) or tol:
        ok = abs(ours - ref) <= tol + 1e-9 * abs(ref)
    else:
        ok = ours == ref
    if not ok:
        failures.append("%s: %r, expected %r" % (what, ours, ref))


ROUNDED = ("mean_ns", "std_ns", "median_ns", "p95_ns", "p99_ns")


def check_stats(what, ours, ref, exact=("count", "total_ns", "min_ns", "max_ns")):
    # every field asked for must be there: a missing one fails
    for k in exact:
            check("%s %s" % (what, k), ours.get(k), ref[k])
    for k in ROUNDED:
        # trace-stats rounds to integer ns
        check("%s %s" % (what, k), ours.get(k), ref[k], 0.5 + 1e-6)


def member(obj, key, what, ref=None):
    """obj[key], or None and a failure: a member that is not there is
    never taken for one that need not be checked.  trace-stats leaves
    out a report without data (by default): that is no failure when the
    reference's is empty too."""
    if not isinstance(obj, dict) or key not in obj:
        if ref is not None and not ref:
            return None
        failures.append("%s: missing" % what)
        return None
    return obj[key]


def compare(ref_path, ours_path, top):
    ref = json.load(open(ref_path))
    ours = json.load(open(ours_path))
    r, o = ref["run"], member(ours, "run", "run") or {}
    for k in ("wall_ns", "events", "events_read", "kinds", "dropped"):
        check("run " + k, o.get(k), r[k])
    for table in ("kernels", "memops", "api", "ranges"):
        refrows = {(x["kind"], x["domain"], x["name"]): x for x in ref[table]}
        rows = member(ours, table, table, ref[table])
        if rows is None:
            continue
        if not top:
            check("%s rows" % table, len(rows), len(refrows))
        for row in rows:
            key = (row.get("kind"), row.get("domain", ""), row.get("name"))
            x = refrows.get(key)
            if x is None:
                failures.append("%s: unexpected row %r" % (table, key))
                continue
            what = "%s %s" % (table, key[2][:40])
            check_stats(what, row, x)
            check(what + " time_pct", row.get("time_pct"), x["time_pct"], 1e-6)
            if table == "memops":
                check(what + " bytes", row.get("bytes"), x["bytes"])
                check(what + " bytes_per_s", row.get("bytes_per_s"), x["bytes_per_s"],
                      0.5 + 1e-9 * x["bytes_per_s"])
                check(what + " mean_bytes_per_s", row.get("mean_bytes_per_s"), x["mean_bytes_per_s"],
                      0.5 + 1e-9 * x["mean_bytes_per_s"])
        # the rows shown are the largest by total time, in order
        totals = [row.get("total_ns") for row in rows]
        if None in totals:
            continue
        if totals != sorted(totals, reverse=True) and not top:
            failures.append("%s: not sorted by total" % table)
        if top:
            expect = sorted((x["total_ns"] for x in refrows.values()), reverse=True)[:top]
            check("%s top totals" % table, totals, expect)
    refg = {g["device"]: g for g in ref["gpus"]}
    for g in member(ours, "gpus", "gpus", ref["gpus"]) or []:
        dev = g.get("device")
        x = refg.get(dev if dev is not None else -1)
        if x is None:
            failures.append("gpu %r unexpected" % dev)
            continue
        for k in ("busy_ns", "kernel_ns", "copy_ns", "overlap_ns", "idle_ns", "ops",
                  "first_ns", "last_ns"):
            check("gpu %s %s" % (dev, k), g.get(k), x[k])
        check("gpu %s busy_pct" % dev, g.get("busy_pct"), x["busy_pct"], 1e-6)
        check("gpu %s exact" % dev, g.get("exact"), True)
    if "gpus" in ours:
        check("gpu count", len(ours["gpus"]), len(refg))
    procs = member(ours, "processes", "processes", ref["processes"])
    if procs is not None:
        mine = {p.get("pid"): p for p in procs if "wall_ns" in p}
        check("processes with rusage", sorted(mine), sorted(p["pid"] for p in ref["processes"]))
        for p in ref["processes"]:
            for k in ("wall_ns", "user_ns", "system_ns", "max_rss_bytes", "exit_code"):
                check("process %s %s" % (p["pid"], k), mine.get(p["pid"], {}).get(k), p[k])
    mem = member(ours, "memory", "memory",
                 ref["memory"]["processes"] + ref["memory"]["devices"])
    if mem is not None:
        mp = {p.get("pid"): p for p in member(mem, "processes", "memory processes") or []}
        check("memory processes", sorted(mp), [p["pid"] for p in ref["memory"]["processes"]])
        for p in ref["memory"]["processes"]:
            check("rss peak pid %s" % p["pid"], mp.get(p["pid"], {}).get("rss_peak_bytes"),
                  p["rss_peak_bytes"])
        md = {d.get("device"): d for d in member(mem, "devices", "memory devices") or []}
        check("memory devices", sorted(md), [d["device"] for d in ref["memory"]["devices"]])
        for d in ref["memory"]["devices"]:
            for k, v in d.items():
                check("device memory %s %s" % (d["device"], k), md.get(d["device"], {}).get(k), v)
    p, x = ours.get("per"), ref.get("per")
    if x is not None and member(ours, "per", "per") is not None:
        check("per instances", p["instances"], x["instances"])
        # per.instances is the count: the durations have none
        per_exact = ("total_ns", "min_ns", "max_ns")
        check_stats("per duration", p["duration"], x["duration"], per_exact)
        check("per gpu_outside", p["gpu_outside"]["count"], x["gpu_outside"])
        check("per gpu_no_launch", p["gpu_no_launch"]["count"], x["gpu_no_launch"])
        refc = {(c["kind"], c["domain"], c["name"]): c for c in x["children"]}
        check("per children", len(p["children"]), len(refc))
        for c in p["children"]:
            key = (c["kind"], c["domain"], c["name"])
            rc = refc.get(key)
            if rc is None:
                failures.append("per: unexpected child %r" % (key,))
                continue
            what = "per %s" % key[2][:40]
            check(what + " instances_with", c["instances_with"], rc["instances_with"])
            for k in ("min", "max", "total"):
                check(what + " count " + k, c["count_per_instance"][k], rc["count_per_instance"][k])
            for k in ("mean", "median"):
                check(what + " count " + k, c["count_per_instance"][k], rc["count_per_instance"][k], 1e-9)
            check_stats(what + " time", c["time_per_instance"], rc["time_per_instance"], per_exact)
            check(what + " share", c["share_pct"], rc["share_pct"], 1e-6)
    if failures:
        for f in failures[:40]:
            print(f)
        print("%d differences" % len(failures))
        sys.exit(1)
    print("all figures match")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--compare", nargs=2)
    p.add_argument("--top", type=int, default=0)
    p.add_argument("--per")
    p.add_argument("--name")
    p.add_argument("--exclude")
    p.add_argument("--pid", type=lambda s: [int(x) for x in s.split(",")])
    p.add_argument("--device", type=lambda s: [int(x) for x in s.split(",")])
    p.add_argument("--stream", type=lambda s: [int(x) for x in s.split(",")])
    p.add_argument("--from-ns", type=int, default=0)
    p.add_argument("--to-ns", type=int)
    p.add_argument("--run", type=int)
    args = p.parse_args()
    if args.compare:
        compare(args.compare[0], args.compare[1], args.top)
    else:
        reference(args)


if __name__ == "__main__":
    main()
