#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The rule trace-to-chrome's "dur" keeps for JavaScript viewers, checked
without them (no node, no npm).

  chrome_js_dur.py FILE.json          check every complete ("X") slice
  chrome_js_dur.py --naive IN OUT     write IN with every dur as the exact
                                      decimal of its nanoseconds (what a
                                      writer without the rule gives)

DevTools and chrome://tracing parse ts and dur as doubles and add them.
A slice's exact end is ts + dur in whole nanoseconds; the decimal of
that end, parsed as a double, is what the viewer compares against the
next slice or the parent's end.  So for every X slice:
  - ts has at most 3 decimals (whole nanoseconds);
  - dur, rounded to nanoseconds, is a whole number of them (d_ns);
  - double(ts) + double(dur) == double(ts + d_ns / 1000)
    (as JavaScript computes it: IEEE doubles, round to nearest).
Prints "N slices, M with a longer dur" and exits 1 on any violation,
listing up to 10.
"""
import json
import sys
from decimal import Decimal


def slices(doc):
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return [e for e in events if e.get("ph") == "X"]


def check(path):
    doc = json.load(open(path), parse_float=Decimal)
    bad = []
    longer = 0
    xs = slices(doc)
    for e in xs:
        ts, dur = Decimal(e["ts"]), Decimal(e["dur"])
        if ts * 1000 != (ts * 1000).to_integral_value():
            bad.append("ts %s is not whole nanoseconds: %s" % (e["ts"], e.get("name")))
            continue
        d_ns = int((dur * 1000).to_integral_value())
        if abs(dur * 1000 - d_ns) >= Decimal("0.5"):
            bad.append("dur %s is not near whole nanoseconds" % e["dur"])
            continue
        end = ts + Decimal(d_ns) / 1000
        if float(ts) + float(dur) != float(end):
            bad.append("%s: ts %s + dur %s != end %s as doubles (%r + %r = %r, want %r)"
                       % (e.get("name"), e["ts"], e["dur"], end, float(ts), float(dur),
                          float(ts) + float(dur), float(end)))
        if dur != Decimal(d_ns) / 1000:
            longer += 1
    print("%d slices, %d with a longer dur" % (len(xs), longer))
    for b in bad[:10]:
        print(b)
    if bad:
        print("%d slices break the rule" % len(bad))
        return 1
    return 0


def naive(src, dst):
    # plain floats: json.dumps writes each as its shortest decimal, so
    # d_ns / 1000 (the double nearest the exact decimal) reads back as it
    doc = json.load(open(src))
    for e in slices(doc):
        e["dur"] = round(e["dur"] * 1000) / 1000
    with open(dst, "w") as f:
        json.dump(doc, f)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--naive":
        naive(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 2:
        sys.exit(check(sys.argv[1]))
    else:
        sys.exit("usage: chrome_js_dur.py FILE.json | --naive IN OUT")
