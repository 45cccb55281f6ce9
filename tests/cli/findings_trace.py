#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A trace description for mktrace with operations of known durations,
for the tests of trace-stats' findings at their thresholds.

  findings_trace.py [--dropped N] [--span NS] [--per NAME:DUR] ITEM... | mktrace > t.tkt

ITEM is KIND:NAME:DURS with KIND kernel (on GPU 0, stream 7), api (a
runtime call on the main thread) or range (an NVTX range on a second
thread), and DURS a comma-separated list of nanoseconds, each
optionally xCOUNT ("1000x4,2000").  Each kind is laid end to end from
t = 1 ms in the order given, so a kind's busy time is the sum of its
durations and nothing overlaps.  --span NS adds a mark at 1 ms + NS,
which sets the run's wall time (marks are in no table).  --dropped N
adds the recorder's notice of N lost events.  --per NAME:DUR puts every
api item inside back-to-back ranges NAME of DUR ns each (one instance
per api call), on the main thread, for --per NAME.
"""
import argparse
import json
import sys

T0 = 1000000


def durations(spec):
    out = []
    for part in spec.split(","):
        d, _, n = part.partition("x")
        out += [int(d)] * (int(n) if n else 1)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dropped", type=int)
    p.add_argument("--span", type=int)
    p.add_argument("--per")
    p.add_argument("items", nargs="*")
    a = p.parse_args()
    out = []
    emit = out.append
    emit({"def": "process", "ref": "p", "pid": 100, "host": "h", "argv": ["app"], "start": 0})
    emit({"def": "thread", "ref": "t", "process": "p", "tid": 100, "name": "main"})
    emit({"def": "thread", "ref": "t2", "process": "p", "tid": 101, "name": "other"})
    emit({"def": "device", "ref": "d", "index": 0, "name": "GPU"})
    emit({"def": "stream", "ref": "s", "process": "p", "device": "d", "stream": 7, "context": 1})
    cursor = {"kernel": T0, "api": T0, "range": T0}
    track = {"kernel": "s", "api": "t", "range": "t2"}
    per_name, per_dur = (a.per.split(":") if a.per else (None, 0))
    per_dur = int(per_dur)
    corr = 0
    for item in a.items:
        kind, name, spec = item.split(":")
        for d in durations(spec):
            ts = cursor[kind]
            if kind == "api" and per_name:
                emit({"kind": "range", "track": "t", "ts": ts, "dur": per_dur, "name": per_name})
                cursor[kind] += per_dur
            else:
                cursor[kind] += d
            ev = {"kind": kind, "track": track[kind], "ts": ts, "dur": d, "name": name}
            if kind in ("kernel", "api"):
                corr += 1
                ev["correlation"] = corr
            emit(ev)
    if a.span:
        emit({"kind": "mark", "track": "t2", "ts": T0 + a.span, "name": "end"})
    if a.dropped is not None:
        emit({"kind": "dropped", "track": "t", "ts": T0, "count": a.dropped,
              "reason": "buffer full"})
    for e in out:
        print(json.dumps(e))


if __name__ == "__main__":
    sys.exit(main())
