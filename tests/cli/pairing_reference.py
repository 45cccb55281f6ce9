#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Begin/end pairing of a Chrome Trace Event JSON file as a viewer that
# sorts first pairs it (Chrome's trace viewer, Perfetto): events sorted
# by ts, ties in file order; per thread (B/E) or per key (b/e and S/F:
# category, id), each end closes the newest begin before it.
# X events are ranges as they are.
# Prints one line per range: "kind ts_ns dur_ns name" with dur "open" for
# a begin never ended, then "unmatched N": the ends without a begin.
# Independent of tracekit: used by trace-import-order.bats.
import json, sys

with open(sys.argv[1]) as f:
    doc = json.load(f)
events = doc["traceEvents"] if isinstance(doc, dict) else doc
order = sorted(range(len(events)), key=lambda i: (events[i]["ts"], i))
stacks, out, unmatched = {}, [], 0
kind_of = {"B": ("range", "B"), "E": ("range", "B"),
           "b": ("async_range", "b"), "e": ("async_range", "b"),
           "S": ("async_range", "S"), "F": ("async_range", "S")}
for i in order:
    e = events[i]
    ph = e["ph"]
    if ph == "X":
        out.append(("range", round(e["ts"] * 1000), round(e["dur"] * 1000), e["name"]))
    if ph not in kind_of:
        continue
    kind, family = kind_of[ph]
    if family == "B":
        key = (family, e.get("pid"), e.get("tid"))
    else:
        key = (family, e.get("cat"), str(e.get("id")))
    stack = stacks.setdefault(key, [])
    if ph in "BbS":
        stack.append(e)
    elif stack:
        b = stack.pop()
        out.append((kind, round(b["ts"] * 1000), round((e["ts"] - b["ts"]) * 1000), b["name"]))
    else:
        unmatched += 1
for stack in stacks.values():
    for b in stack:
        kind = "range" if b["ph"] == "B" else "async_range"
        out.append((kind, round(b["ts"] * 1000), "open", b["name"]))
for r in sorted(out, key=str):
    print(*r)
print("unmatched", unmatched)
