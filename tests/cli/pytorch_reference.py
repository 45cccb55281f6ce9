#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Figures of a PyTorch profiler (Kineto) trace computed from its JSON,
independently of tracekit, for tests/cli/trace-stats-pytorch.bats.

    pytorch_reference.py TRACE.json[.gz]            reference JSON on stdout
    pytorch_reference.py --compare REF.json STATS.json
        check trace-stats --json (with --steps --operators -r all) against it; exit 1
        listing the differences.
    pytorch_reference.py --distributed [-l LABEL]... TRACE...
        the distributed view: one rank per TRACE, named LABEL (as
        trace-merge -l labels them) or "rank N" from distributedInfo.rank
    pytorch_reference.py --compare-distributed REF.json STATS.json
        check trace-stats --json --distributed against it.
    pytorch_reference.py --memory TRACE.json[.gz]
        the allocator's peaks, one line each: "gpu DEVICE|host WHAT BYTES NS",
        sorted (tests/cli/memory.bats).
    pytorch_reference.py --memory-ops TRACE.json[.gz]
        the same with the operation at each peak, and the peaks of each
        step, as JSON.
    pytorch_reference.py --compare-memory REF.json STATS.json
        check trace-stats -r memory --steps --json against it.

Times are integer nanoseconds read from the digits of ts and dur
(microseconds), fractions of a nanosecond rounded half away from zero,
as trace-import documents.  Definitions (trace-stats(1) says the same):

  steps      ranges on CPU threads named ProfilerStep#N; duration = dur.
             A trace with none (and no ranges named step or iteration,
             which this reference does not handle: it stops) has Kineto's
             capture range, cat Trace, "PyTorch Profiler (N)", as its
             one step, over every thread of every process of the trace
             (whole_input).
  launch     a GPU operation belongs to the runtime or driver call with
             its correlation id (not 0).
  step GPU   kernel_ns / copy_ns: kernels / memcpys and memsets whose
             launch call begins inside the step, on the step's thread
             or, from a thread with no step of its own (PyTorch's
             autograd thread), on any thread of its process.
             gpu_outside: those with a launch call in no step;
             gpu_no_launch: those with no launch call in the trace.
  breakdown  each nanosecond of a step's window goes to the first of
             kernel, memcpy, memset, runtime, data loading, CPU execution
             that covers it, else to other (TensorBoard's overview).
  operators  ranges on CPU threads nested by time on each thread; self =
             dur - the durs of the ranges directly inside; same begin and
             end: the name that sorts first encloses.
  ranks      per rank (one input each), in the window from its first GPU
             operation's begin to its last one's end, and per step: the
             union of compute kernels, of communication kernels (names
             starting, after "void ", with nccl, rccl, msccl or nvshmem,
             any case), of memcpys and memsets, of all of them (busy);
             exposed = communication minus compute; idle = window - busy.
  memory     [memory] instants (profile_memory=True): the highest "Total
             Allocated" and "Total Reserved" of each device (Device Type
             1, its Device Id) and of the host (Device Type 0), with the
             time of the first sample at that peak.
  op at a    the innermost range on the [memory] event's own thread
  peak       (ranges as for operators, nested the same way) enclosing
             the event that reached the peak: b <= ts < b + dur.
  memory     per step and per device or host, each total: a total holds
  per step   its value until the next [memory] event of its device
             changes it, so the level entering the step counts as well as
             every event inside the step window [b, b + dur); the peak is
             the highest, at the first event that reached it (of a run of
             events repeating one value, the first).
"""
import gzip
import json
import re
import sys
from bisect import bisect_right
from decimal import Decimal, ROUND_HALF_UP

GPU_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset",
            "Kernel": "kernel", "Memcpy": "memcpy", "Memset": "memset"}
API_CATS = {"cuda_runtime", "cuda_driver", "Runtime"}
# ranges on CPU threads: every complete event but the GPU's and the API's
NOT_HOST = set(GPU_CATS) | API_CATS | {"gpu_user_annotation", "cuda_sync", "overhead"}
STEP = re.compile(r"^ProfilerStep#[0-9]+$")
CAPTURE = re.compile(r"^PyTorch Profiler \([0-9]+\)$")
LOOP = re.compile(r"^(step|iteration|iter|train_step|training_step)([#_.-][0-9]+)?$", re.I)
LOADER = re.compile(r"^(enumerate\(DataLoader\)#.*\.__next__|enumerate\(DataPipe\)#.*)$")


def ns(x):
    return int((Decimal(x) * 1000).to_integral_value(rounding=ROUND_HALF_UP))


def load(path):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt") as f:
        doc = json.load(f, parse_float=Decimal)
    ev = doc["traceEvents"] if isinstance(doc, dict) else doc
    base = int(doc.get("baseTimeNanoseconds", 0)) if isinstance(doc, dict) else 0
    out = []
    open_ = {}
    # a B never ended lasts to the end of the trace (trace-import(1))
    # (the latest time of the other events: begins of ranges never ended
    # do not count)
    end = max((Decimal(e["ts"]) + Decimal(e.get("dur", 0) if e.get("ph") == "X" else 0)
               for e in ev if "ts" in e and e.get("ph") != "B"), default=0)
    for e in ev:
        if e.get("ph") in ("B", "E") and "ts" in e:
            # B/E pairs nest per thread: an E closes the latest open B
            k = (e.get("pid"), e.get("tid"))
            if e["ph"] == "B":
                open_.setdefault(k, []).append(e)
                continue
            if not open_.get(k):
                continue
            b = open_[k].pop()
            e = dict(b, ph="X", dur=str(Decimal(e["ts"]) - Decimal(b["ts"])))
        if e.get("ph") != "X" or "ts" not in e:
            continue
        out.append(event(e, base))
    for k, v in open_.items():
        for b in v:
            out.append(event(dict(b, dur=str(max(end - Decimal(b["ts"]), 0))), base))
    return out


def event(e, base):
    d = e.get("dur", 0)
    dur = max(ns(d), 0)
    return {"cat": e.get("cat", ""), "name": e.get("name", ""),
            "pid": e.get("pid"), "tid": e.get("tid"),
            "ts": ns(e["ts"]) + base, "dur": dur, "args": e.get("args") or {}}


def union(iv):
    out = []
    for b, e in sorted(iv):
        if out and b <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([b, e])
    return out


def nest(ranges):
    """ranges of one thread -> (sorted list, parent index of each)."""
    rs = sorted(ranges, key=lambda r: (r["ts"], -r["dur"], r["name"]))
    parent, stack = [], []
    for i, r in enumerate(rs):
        while stack and not (rs[stack[-1]]["ts"] + rs[stack[-1]]["dur"] >= r["ts"] + r["dur"]
                             and (rs[stack[-1]]["ts"] + rs[stack[-1]]["dur"] > r["ts"]
                                  or rs[stack[-1]]["dur"] == 0 and r["dur"] == 0)):
            stack.pop()
        parent.append(stack[-1] if stack else -1)
        stack.append(i)
    return rs, parent


def innermost(rs, parent, begins, t):
    j = bisect_right(begins, t) - 1
    while j >= 0:
        r = rs[j]
        if r["ts"] <= t < r["ts"] + r["dur"] or (r["dur"] == 0 and r["ts"] == t):
            return j
        j = parent[j]
    return -1


def reference(path):
    ev = load(path)
    host = [e for e in ev if e["cat"] not in NOT_HOST]
    gpu = [e for e in ev if e["cat"] in GPU_CATS]
    api = [e for e in ev if e["cat"] in API_CATS]
    launch = {}
    for a in api:
        c = a["args"].get("correlation")
        if c:
            launch[c] = a
    kernels = [g for g in gpu if GPU_CATS[g["cat"]] == "kernel"]
    out = {"kernels": {"count": len(kernels), "total_ns": sum(k["dur"] for k in kernels)}}

    threads = {}
    for r in host:
        if r["cat"] == "Trace":      # the capture range: no operator
            continue
        threads.setdefault((r["pid"], r["tid"]), []).append(r)
    nested = {}
    for k, rs in threads.items():
        rs, parent = nest(rs)
        nested[k] = (rs, parent, [r["ts"] for r in rs])

    # operators: self time and the GPU time of what they launched
    ops = {}
    for k, (rs, parent, begins) in nested.items():
        selfns = [r["dur"] for r in rs]
        for i, p in enumerate(parent):
            if p >= 0:
                selfns[p] -= rs[i]["dur"]
        for i, r in enumerate(rs):
            o = ops.setdefault((r["cat"], r["name"]), {"count": 0, "total_ns": 0, "self_ns": 0,
                                                     "gpu_self_ns": 0, "gpu_total_ns": 0})
            o["count"] += 1
            o["total_ns"] += r["dur"]
            o["self_ns"] += selfns[i]
    for g in gpu:
        a = launch.get(g["args"].get("correlation"))
        if a is None or (a["pid"], a["tid"]) not in nested:
            continue
        rs, parent, begins = nested[(a["pid"], a["tid"])]
        j = innermost(rs, parent, begins, a["ts"])
        first = True
        while j >= 0:
            o = ops[(rs[j]["cat"], rs[j]["name"])]
            if first:
                o["gpu_self_ns"] += g["dur"]
            o["gpu_total_ns"] += g["dur"]
            first = False
            j = parent[j]
    out["operators"] = [dict(domain=c, name=n, **v) for (c, n), v in sorted(ops.items())]

    # steps
    steps = sorted((r for r in host if STEP.match(r["name"])), key=lambda r: r["ts"])
    whole_input = not steps
    if whole_input:
        if any(LOOP.match(r["name"]) for r in host):
            sys.exit("%s: ranges named step or iteration: not handled here" % path)
        steps = sorted((r for r in host if r["cat"] == "Trace" and CAPTURE.match(r["name"])),
                       key=lambda r: r["ts"])
    sid = {id(s): i for i, s in enumerate(steps)}
    rows = [{"name": s["name"], "begin_ns": s["ts"], "dur_ns": s["dur"], "kernel_ns": 0,
             "copy_ns": 0, "api_ns": 0} for s in steps]
    by_thread = {}
    for s in steps:
        by_thread.setdefault((s["pid"], s["tid"]), []).append(s)

    by_pid = {}
    for s in steps:
        by_pid.setdefault(s["pid"], []).append(s)

    def step_of(pid, tid, t):
        # the step thread's own steps; on a thread with none (autograd's
        # backward pass), the steps of its process; the capture range:
        # any thread's
        if whole_input:
            v = steps
        elif (pid, tid) in by_thread:
            v = by_thread[(pid, tid)]
        else:
            v = by_pid.get(pid, [])
        j = bisect_right([s["ts"] for s in v], t) - 1
        if j >= 0 and (v[j]["ts"] <= t < v[j]["ts"] + v[j]["dur"]
                       or v[j]["dur"] == 0 and v[j]["ts"] == t):
            return v[j]
        return None
    outside = {"count": 0, "total_ns": 0}
    no_launch = {"count": 0, "total_ns": 0}
    for g in gpu:
        a = launch.get(g["args"].get("correlation"))
        s = a and step_of(a["pid"], a["tid"], a["ts"])
        if s:
            key = "kernel_ns" if GPU_CATS[g["cat"]] == "kernel" else "copy_ns"
            rows[sid[id(s)]][key] += g["dur"]
        else:
            w = outside if a else no_launch
            w["count"] += 1
            w["total_ns"] += g["dur"]
    for a in api:
        s = step_of(a["pid"], a["tid"], a["ts"])
        if s:
            rows[sid[id(s)]]["api_ns"] += a["dur"]
    cats = {"kernel": [], "memcpy": [], "memset": [], "runtime": [], "dataloader": [], "cpu": []}
    for g in gpu:
        cats[GPU_CATS[g["cat"]]].append((g["ts"], g["ts"] + g["dur"]))
    for a in api:
        cats["runtime"].append((a["ts"], a["ts"] + a["dur"]))
    for r in host:
        if LOADER.match(r["name"]):
            cats["dataloader"].append((r["ts"], r["ts"] + r["dur"]))
        elif not STEP.match(r["name"]) and r["cat"] != "Trace":
            cats["cpu"].append((r["ts"], r["ts"] + r["dur"]))
    order = ["kernel", "memcpy", "memset", "runtime", "dataloader", "cpu"]
    unions = {c: union(v) for c, v in cats.items()}
    for s, row in zip(steps, rows):
        b, e = s["ts"], s["ts"] + s["dur"]
        pts = {b, e}
        for c in order:
            for x, y in unions[c]:
                if y > b and x < e:
                    pts.add(max(x, b))
                    pts.add(min(y, e))
        pts = sorted(pts)
        bd = {c: 0 for c in order + ["other"]}
        for x, y in zip(pts, pts[1:]):
            for c in order:
                u = unions[c]
                j = bisect_right(u, [x, float("inf")]) - 1
                if j >= 0 and u[j][0] <= x and u[j][1] >= y:
                    bd[c] += y - x
                    break
            else:
                bd["other"] += y - x
        row["breakdown"] = bd
    out["steps"] = rows
    out["whole_input"] = whole_input
    out["gpu_outside"] = outside
    out["gpu_no_launch"] = no_launch
    return out


COMM = re.compile(r"^(void )?(nccl|rccl|msccl|nvshmem)", re.I)


def length(u, b, e):
    """Length of the union u (sorted, disjoint) inside [b, e)."""
    return sum(max(0, min(y, e) - max(x, b)) for x, y in u)


def minus(u, v):
    """u minus v, both sorted and disjoint, by cutting at every edge."""
    pts = sorted({p for x in u + v for p in x})
    out = []
    for x, y in zip(pts, pts[1:]):
        if length(u, x, y) == y - x and length(v, x, y) == 0:
            if out and out[-1][1] == x:
                out[-1][1] = y
            else:
                out.append([x, y])
    return out


def natural(name):
    return [int(t) if t.isdigit() else t for t in re.split(r"([0-9]+)", name)]


def distributed(paths, labels):
    ranks, steps = [], []
    for i, path in enumerate(paths):
        opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
        with opener(path, "rt") as f:
            doc = json.load(f)
        name = labels[i] if labels else "rank %s" % doc["distributedInfo"]["rank"]
        ev = load(path)
        gpu = [e for e in ev if e["cat"] in GPU_CATS]
        cls = {"compute": [], "comm": [], "memops": []}
        for g in gpu:
            iv = (g["ts"], g["ts"] + g["dur"])
            if GPU_CATS[g["cat"]] != "kernel":
                cls["memops"].append(iv)
            else:
                cls["comm" if COMM.match(g["name"]) else "compute"].append(iv)
        u = {c: union(v) for c, v in cls.items()}
        u["busy"] = union([x for v in cls.values() for x in v])
        u["exposed"] = minus(u["comm"], u["compute"])

        def figures(b, e):
            f = {"begin_ns": b, "dur_ns": e - b}
            for c in ("busy", "compute", "comm", "exposed", "memops"):
                f[("exposed_comm" if c == "exposed" else c) + "_ns"] = length(u[c], b, e)
            f["idle_ns"] = e - b - f["busy_ns"]
            return f
        host = [e for e in ev if e["cat"] not in NOT_HOST]
        mine = sorted((r for r in host if STEP.match(r["name"])), key=lambda r: r["ts"])
        row = figures(u["busy"][0][0], u["busy"][-1][1]) if u["busy"] else \
            {k: 0 for k in ("begin_ns", "dur_ns", "busy_ns", "compute_ns", "comm_ns",
                            "exposed_comm_ns", "memops_ns", "idle_ns")}
        row.update(rank=name, ops=len(gpu), steps=len(mine),
                   step_total_ns=sum(r["dur"] for r in mine))
        ranks.append(row)
        for r in mine:
            f = figures(r["ts"], r["ts"] + r["dur"])
            f.update(rank=name, step=r["name"])
            steps.append(f)
    ranks.sort(key=lambda r: natural(r["rank"]))
    order = {r["rank"]: i for i, r in enumerate(ranks)}
    steps.sort(key=lambda s: (s["begin_ns"], order[s["rank"]]))
    return {"ranks": ranks, "steps": steps}


def compare_distributed(ref, ours):
    bad = []
    d = ours.get("distributed")
    if d is None:
        return ["distributed missing"]
    for what in ("ranks", "steps"):
        if len(d[what]) != len(ref[what]):
            bad.append("%s: trace-stats %d rows, reference %d" % (what, len(d[what]), len(ref[what])))
        for x, y in zip(d[what], ref[what]):
            for k, v in y.items():
                if x.get(k) != v:
                    bad.append("%s %s %s: trace-stats %r, reference %r"
                               % (what, y["rank"], k, x.get(k), v))
    return bad


def compare(ref, ours):
    bad = []

    def check(what, a, b):
        if a != b:
            bad.append("%s: trace-stats %r, reference %r" % (what, a, b))
    t = ours.get("totals", {}).get("kernels")
    if ref["kernels"]["count"]:
        if t is None:
            bad.append("totals.kernels missing")
        else:
            check("kernels count", t["count"], ref["kernels"]["count"])
            check("kernels total_ns", t["total_ns"], ref["kernels"]["total_ns"])
    st = ours.get("steps")
    if ref["steps"]:
        if st is None:
            bad.append("steps missing")
        else:
            got = st["instances"]
            check("steps count", len(got), len(ref["steps"]))
            check("steps whole_input", st.get("whole_input"), ref["whole_input"])
            for k in ("gpu_outside", "gpu_no_launch"):
                check(k, ours.get("per", {}).get(k), ref[k])
            for x, y in zip(got, ref["steps"]):
                w = "step %s " % y["name"]
                check(w + "begin", x["begin_ns"], y["begin_ns"])
                check(w + "dur", x["dur_ns"], y["dur_ns"])
                check(w + "kernel_ns", x["kernel_ns"], y["kernel_ns"])
                check(w + "copy_ns", x["copy_ns"], y["copy_ns"])
                check(w + "api_ns", x["api_ns"], y["api_ns"])
                for c, v in y["breakdown"].items():
                    check(w + "breakdown " + c, x["breakdown"].get(c), v)
    ops = ours.get("operators")
    if ref["operators"]:
        if ops is None:
            bad.append("operators missing")
        else:
            mine = {(o["domain"], o["name"]): o for o in ops}
            check("operator rows", len(mine), len(ref["operators"]))
            for y in ref["operators"]:
                x = mine.get((y["domain"], y["name"]))
                if x is None:
                    bad.append("operator %s missing" % y["name"])
                    continue
                for k in ("count", "total_ns", "self_ns", "gpu_self_ns", "gpu_total_ns"):
                    check("operator %s %s" % (y["name"][:40], k), x[k], y[k])
    return bad


def memory(path):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt") as f:
        doc = json.load(f, parse_float=Decimal)
    base = int(doc.get("baseTimeNanoseconds", 0))
    peaks = {}
    for e in doc["traceEvents"]:
        a = e.get("args") or {}
        if e.get("name") != "[memory]" or e.get("ph") not in ("i", "I"):
            continue
        where = f"gpu {a['Device Id']}" if a.get("Device Type") == 1 else "host"
        for key, what in (("Total Allocated", "allocated"), ("Total Reserved", "reserved")):
            if key not in a:
                continue
            v, t = int(a[key]), ns(e["ts"]) + base
            old = peaks.get((where, what))
            if old is None or v > old[0] or (v == old[0] and t < old[1]):
                peaks[(where, what)] = (v, t)
    return sorted(f"{w} {k} {v} {t}" for (w, k), (v, t) in peaks.items())


def memory_ops(path):
    """The allocator's peaks with the operation at each, whole trace and
    per step (see the module's definitions)."""
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt") as f:
        doc = json.load(f, parse_float=Decimal)
    base = int(doc.get("baseTimeNanoseconds", 0))
    ranges = [e for e in load(path) if e["cat"] not in NOT_HOST and e["cat"] != "Trace"]
    threads = {}
    for r in ranges:
        threads.setdefault((r["pid"], r["tid"]), []).append(r)
    nested = {k: nest(v) for k, v in threads.items()}
    begins = {k: [r["ts"] for r in rs] for k, (rs, _) in nested.items()}

    def op_at(pid, tid, t):
        if (pid, tid) not in nested:
            return None
        rs, parent = nested[(pid, tid)]
        j = innermost(rs, parent, begins[(pid, tid)], t)
        return rs[j]["name"] if j >= 0 else None

    # series: (kind, id) -> total -> [(ts, value, op)], repeats of the
    # last value dropped (the level is the same; the time it was reached
    # is the first)
    series = {}
    for e in doc["traceEvents"]:
        a = e.get("args") or {}
        if e.get("name") != "[memory]" or e.get("ph") not in ("i", "I"):
            continue
        where = ("device", a["Device Id"]) if a.get("Device Type") == 1 else ("pid", e["pid"])
        t = ns(e["ts"]) + base
        for key, what in (("Total Allocated", "allocated"), ("Total Reserved", "reserved")):
            if key not in a:
                continue
            v = series.setdefault(where, {}).setdefault(what, [])
            v.append((t, int(a[key]), e["pid"], e["tid"]))
    # events come out of time order in the file: a stable sort, then the
    # repeats dropped
    for s in series.values():
        for what in s:
            v = sorted(s[what], key=lambda x: x[0])
            s[what] = [x for i, x in enumerate(v) if i == 0 or v[i - 1][1] != x[1]]

    def peak(samples, b=None, e=None):
        if b is not None:
            j = bisect_right([x[0] for x in samples], b - 1)   # first ts >= b
            inside = [x for x in samples[j:] if x[0] < e]
            samples = ([samples[j - 1]] if j > 0 else []) + inside
        best = None
        for x in samples:
            if best is None or x[1] > best[1]:
                best = x
        if best is None:
            return None
        return {"bytes": best[1], "ns": best[0], "op": op_at(best[2], best[3], best[0])}

    def entry(where, b=None, e=None):
        o = {where[0]: where[1]}
        for what, samples in series[where].items():
            p = peak(samples, b, e)
            if p:
                o[what] = p
        return o
    out = {"peaks": [entry(w) for w in sorted(series)]}
    steps = sorted((r for r in ranges if STEP.match(r["name"])), key=lambda r: r["ts"])
    out["steps"] = [[entry(w, s["ts"], s["ts"] + s["dur"]) for w in sorted(series)]
                    for s in steps]
    return out


def compare_memory(ref, ours):
    """ref: memory_ops(); ours: trace-stats -r memory --steps --json."""
    bad = []

    def mine(o):
        where = ("device", o["device"]) if "device" in o else ("pid", o["pid"])
        got = {where[0]: where[1]}
        src = o.get("allocator", o)
        for what in ("allocated", "reserved"):
            if what + "_peak_bytes" in src:
                got[what] = {"bytes": src[what + "_peak_bytes"], "ns": src[what + "_peak_ns"],
                             "op": src[what + "_peak_op"]}
        return got

    def key(o):
        return ("device", o["device"]) if "device" in o else ("pid", o["pid"])
    got = sorted((mine(o) for o in ours["memory"]["processes"] + ours["memory"]["devices"]
                  if "allocator" in o), key=key)
    want = sorted(ref["peaks"], key=key)
    if got != want:
        bad.append(f"whole trace: ours {got} reference {want}")
    inst = ours.get("steps", {}).get("instances", [])
    if len(inst) != len(ref["steps"]):
        bad.append(f"steps: ours {len(inst)} reference {len(ref['steps'])}")
    for i, (o, r) in enumerate(zip(inst, ref["steps"])):
        g = sorted((mine(m) for m in o.get("memory", [])), key=key)
        w = sorted((x for x in r if len(x) > 1), key=key)
        if g != w:
            bad.append(f"step {i + 1}: ours {g} reference {w}")
    return bad


def main():
    if sys.argv[1] == "--distributed":
        args, labels = sys.argv[2:], []
        while args and args[0] == "-l":
            labels.append(args[1])
            args = args[2:]
        json.dump(distributed(args, labels), sys.stdout)
        return
    if sys.argv[1] == "--compare-distributed":
        bad = compare_distributed(json.load(open(sys.argv[2])), json.load(open(sys.argv[3])))
        for b in bad[:30]:
            print(b)
        sys.exit(1 if bad else 0)
    if sys.argv[1] == "--memory-ops":
        json.dump(memory_ops(sys.argv[2]), sys.stdout)
        return
    if sys.argv[1] == "--compare-memory":
        bad = compare_memory(json.load(open(sys.argv[2])), json.load(open(sys.argv[3])))
        for b in bad[:30]:
            print(b)
        sys.exit(1 if bad else 0)
    if sys.argv[1] == "--memory":
        print("\n".join(memory(sys.argv[2])))
        return
    if sys.argv[1] == "--compare":
        ref = json.load(open(sys.argv[2]))
        ours = json.load(open(sys.argv[3]))
        bad = compare(ref, ours)
        for b in bad[:30]:
            print(b)
        sys.exit(1 if bad else 0)
    json.dump(reference(sys.argv[1]), sys.stdout)


if __name__ == "__main__":
    main()
