#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Describe a trace for mktrace: properly nested ranges and API calls on two
threads, and the kernels they launch on two streams, in the order a
recorder writes them (each span when it ends: children before parents),
or sorted by begin.  With --watermarks, each chunk carries the exact
watermark (the earliest begin still to come).

Usage: chrome-nested.py [--order end|begin] [--watermarks] [--chunk N]
                        [--seed S] [--spans N]
"""
import argparse
import json
import random

ap = argparse.ArgumentParser()
ap.add_argument("--order", choices=["end", "begin"], default="end")
ap.add_argument("--watermarks", action="store_true")
ap.add_argument("--chunk", type=int, default=200)
ap.add_argument("--seed", type=int, default=7)
ap.add_argument("--spans", type=int, default=3000)
a = ap.parse_args()
rnd = random.Random(a.seed)

T0 = 1_700_000_000_000_000_000
defs = [
    {"def": "process", "ref": "p", "pid": 500, "host": "gen", "argv": ["train"], "start": T0},
    {"def": "thread", "ref": "t0", "process": "p", "tid": 500, "name": "main"},
    {"def": "thread", "ref": "t1", "process": "p", "tid": 501, "name": "worker"},
    {"def": "device", "ref": "d", "index": 0, "name": "NVIDIA H100 80GB HBM3", "sm_count": 132},
    {"def": "stream", "ref": "s0", "process": "p", "device": "d", "stream": 7, "context": 1},
    {"def": "stream", "ref": "s1", "process": "p", "device": "d", "stream": 8, "context": 1},
]
events = []
corr = [0]
gpu_free = {"s0": T0, "s1": T0}


def tree(track, begin, end, depth):
    """Spans nested in [begin, end) on one thread; some are API calls that
    launch a kernel."""
    t = begin
    while len(events) < a.spans and t < end:
        gap = rnd.randint(0, 3) * 100          # adjacent spans happen
        b = t + gap
        if b >= end:
            break
        e = min(end, b + rnd.randint(1, 40) * 1000)
        if depth < 4 and rnd.random() < 0.5:
            events.append({"kind": "range", "track": track, "ts": b, "dur": e - b,
                           "name": "r%d" % depth})
            tree(track, b, e, depth + 1)
        else:
            corr[0] += 1
            events.append({"kind": "api", "track": track, "ts": b, "dur": e - b,
                           "name": "cudaLaunchKernel", "correlation": corr[0]})
            s = "s0" if rnd.random() < 0.7 else "s1"
            kb = max(b + 2000, gpu_free[s])
            kd = rnd.randint(1, 30) * 1000
            gpu_free[s] = kb + kd
            events.append({"kind": "kernel", "track": s, "ts": kb, "dur": kd,
                           "name": "kernel_%d" % rnd.randint(0, 9), "correlation": corr[0]})
        t = e


t = T0 + 1000
while len(events) < a.spans:
    for track in ("t0", "t1"):
        e = t + 500_000
        events.append({"kind": "range", "track": track, "ts": t, "dur": e - t, "name": "step"})
        tree(track, t, e, 1)
    t += 600_000

if a.order == "end":
    # a recorder writes each span when it ends; the parent after its children
    order = sorted(range(len(events)),
                   key=lambda i: (events[i]["ts"] + events[i]["dur"], -events[i]["ts"], i))
else:
    order = sorted(range(len(events)),
                   key=lambda i: (events[i]["ts"], -events[i]["dur"], i))
out = [json.dumps(d) for d in defs]
suffix_min = [0] * (len(order) + 1)
suffix_min[len(order)] = 2**63 - 1
for k in range(len(order) - 1, -1, -1):
    suffix_min[k] = min(suffix_min[k + 1], events[order[k]]["ts"])
for k, i in enumerate(order):
    out.append(json.dumps(events[i]))
    if (k + 1) % a.chunk == 0:
        if a.watermarks:
            out.append(json.dumps({"watermark": suffix_min[k + 1]}))
        out.append(json.dumps({"flush": True}))
print("\n".join(out))
