#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Calibration of trace-diff's verdicts: how often it cries wolf on
unchanged jobs (null pairs) and how often it finds a planted regression.

Null pairs (an unchanged job measured twice):
  ranks      every pair of the 8 ranks of param's dlrm_kineto job
  synth      synthetic training loops with different noise seeds
  synth xN   the same, N recordings (files) per side, compared run by
             run (trace-diff B1 ... BN -- A1 ... AN; --runs N, 5)
  summary    the same again with BEFORE a trace-stats --baseline summary
             of its N files
  record     repeated trace-record recordings of one shell loop
  resampled  copies of real traces (dlrm worker 0: whole microseconds;
             nCompass H100: fractional microseconds) whose durations are
             drawn again from each name's own durations
HTA's trace_filter rank 0 against rank 1 is not a null pair, though the
ranks ran the same code and step: rank 0 copied 204 MiB and rank 1 3.13
GiB, and one kernel ran 2.5x longer on one of them, so an alarm there is
a true difference of work, not a false alarm.  Earlier tables counted it
(its 2 pairs were the whole 2 % of false alarms); it is left out.

Planted regressions (AFTER = a resampled or re-seeded copy, changed;
"synth xN": N of each per side, run by run):
  kernel+10%   the kernel with the largest total takes 10 % longer
  extra sync   one more synchronisation call per step, 2 % of the step
  step+5%      every duration and gap 5 % longer
  calls x2     the kernel with the largest total is launched twice as often

A comparison "alarms" when trace-diff exits 1.  The perturbed traces are
Chrome/Kineto JSON written here and read by trace-import, so that the
expected change comes from this script, never from tracekit.

Usage: calibrate.py [--diff CMD] [--seeds N] [--runs N] [--shared DIR] [--tmp DIR]
"""
import argparse, copy, gzip, itertools, json, os, random, shlex, subprocess, sys

p = argparse.ArgumentParser()
p.add_argument("--diff", default="trace-diff")
p.add_argument("--seeds", type=int, default=20)
p.add_argument("--runs", type=int, default=5)
p.add_argument("--shared", default=os.environ.get("TK_SHARED", "../shared") + "/testdata")
p.add_argument("--tmp", default="/tmp")
args = p.parse_args()
diff = shlex.split(args.diff)
tmp = args.tmp
os.makedirs(tmp, exist_ok=True)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.DEVNULL, **kw).returncode


def alarms(b, a):
    """b and a: a file each, or lists of files (runs: B... -- A...)."""
    files = [b, a] if isinstance(b, str) else list(b) + ["--"] + list(a)
    rc = run(diff + ["-q"] + files)
    if rc not in (0, 1):
        sys.exit("calibrate: %s failed on %s" % (" ".join(diff), " ".join(files)))
    return rc == 1


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        d = json.load(f)
    return d if isinstance(d, dict) else {"traceEvents": d}


def write_import(doc, name):
    js = os.path.join(tmp, name + ".json")
    with open(js, "w") as f:
        json.dump(doc, f)
    out = os.path.join(tmp, name + ".tkt")
    if run(["trace-import", "-q", "-o", out, js], stderr=subprocess.DEVNULL) != 0 and \
            run(["trace-import", "-o", out, js]) != 0:
        sys.exit("calibrate: trace-import failed on " + js)
    os.unlink(js)
    return out


def spans(doc):
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and "dur" in e]


def is_int_us(doc):
    return all(float(e["dur"]).is_integer() and float(e["ts"]).is_integer()
               for e in spans(doc))


def resample(doc, seed):
    """Each span's duration drawn again from the durations of its name."""
    rng = random.Random(seed)
    out = copy.deepcopy(doc)
    by = {}
    for e in spans(out):
        by.setdefault((e.get("cat"), e["name"]), []).append(e["dur"])
    for e in spans(out):
        e["dur"] = rng.choice(by[(e.get("cat"), e["name"])])
    return out


def kind_of(e):
    c = (e.get("cat") or "").lower()
    return "kernel" if c == "kernel" else "api" if c in ("cuda_runtime", "cuda_driver") else c


def top_kernel(doc):
    tot = {}
    for e in spans(doc):
        if kind_of(e) == "kernel":
            tot[e["name"]] = tot.get(e["name"], 0) + e["dur"]
    return max(tot, key=tot.get)


def rnd(x, intus):
    return round(x) if intus else round(x, 3)


def slow_kernel(doc, f):
    k, intus = top_kernel(doc), is_int_us(doc)
    for e in spans(doc):
        if kind_of(e) == "kernel" and e["name"] == k:
            e["dur"] = rnd(e["dur"] * f, intus)
    return doc


def twice(doc):
    k = top_kernel(doc)
    extra = []
    for e in spans(doc):
        if kind_of(e) == "kernel" and e["name"] == k:
            c = dict(e)
            c["ts"] = e["ts"] + e["dur"]
            c["args"] = {kk: v for kk, v in e.get("args", {}).items() if kk != "correlation"}
            extra.append(c)
    doc["traceEvents"] += extra
    return doc


def stretch(doc, f):
    intus = is_int_us(doc)
    t0 = min(e["ts"] for e in doc["traceEvents"] if "ts" in e)
    for e in doc["traceEvents"]:
        if "ts" in e:
            e["ts"] = rnd(t0 + (e["ts"] - t0) * f, intus)
        if "dur" in e:
            e["dur"] = rnd(e["dur"] * f, intus)
    return doc


def extra_sync(doc):
    """One more synchronisation per step, on the step's thread at its
    end, named as the trace's own synchronisation calls."""
    intus = is_int_us(doc)
    steps = [e for e in spans(doc)
             if e["name"] == "step" or e["name"].startswith("ProfilerStep#")]
    if not steps:  # one step: the whole trace
        s = min(spans(doc), key=lambda e: e["ts"])
        steps = [dict(s, ts=s["ts"], dur=max(e["ts"] + e["dur"] for e in spans(doc)) - s["ts"])]
    api = [e for e in spans(doc) if kind_of(e) == "api"]
    syncs = [e for e in api if "Synchronize" in e["name"]]
    proto = syncs[0] if syncs else api[0]
    name = proto["name"] if syncs else "cudaDeviceSynchronize"
    for s in steps:
        d = rnd(s["dur"] * 0.02, intus) or 1
        doc["traceEvents"].append({"ph": "X", "cat": proto.get("cat"), "name": name,
                                   "pid": s["pid"], "tid": s["tid"],
                                   "ts": s["ts"] + s["dur"] - d, "dur": d, "args": {}})
    return doc


PLANTS = [("kernel +10%", lambda d: slow_kernel(d, 1.10)),
          ("extra sync per step", extra_sync),
          ("step +5%", lambda d: stretch(d, 1.05)),
          ("kernel called 2x", twice)]

results = []  # (section, case, pairs, alarms)


def tally(section, case, pairs):
    if not pairs:
        return
    n = sum(1 for b, a in pairs if alarms(b, a))
    results.append((section, case, len(pairs), n))


# ---- null pairs --------------------------------------------------------------
S = args.seeds
ranks = []
dlrm = os.path.join(args.shared, "param/dlrm_kineto")
if os.path.isdir(dlrm):
    for i, f in enumerate(sorted(os.listdir(dlrm))):
        if f.endswith(".json"):
            out = os.path.join(tmp, "rank%d.tkt" % i)
            run(["trace-import", "-o", out, os.path.join(dlrm, f)])
            ranks.append(out)
    tally("null", "dlrm ranks (every pair)", list(itertools.combinations(ranks, 2)))
# (not HTA's trace_filter ranks: see the top of this file)


def synth_file(seed):
    out = os.path.join(tmp, "syn%d.tkt" % seed)
    if not os.path.exists(out):
        run(["synth", "--steps", "12", "--layers", "2", "--seed", str(seed), "-o", out])
    return out


# N recordings per side: seeds s + 1000 k (BEFORE) and s + 1000 k + 500
RUN_OFFSETS = tuple(1000 * k for k in range(1, args.runs + 1))
XN = "synth x%d files per side" % args.runs
syn = [(synth_file(s), synth_file(s + 1000)) for s in range(1, S + 1)]
tally("null", "synth, other seed", syn)
synN = [([synth_file(s + k) for k in RUN_OFFSETS], [synth_file(s + k + 500) for k in RUN_OFFSETS])
        for s in range(1, S + 1)]
tally("null", XN + ", run by run", synN)


def summary_of(files, name):
    out = os.path.join(tmp, name + ".json")
    with open(out, "w") as f:
        subprocess.run(["trace-stats", "--baseline"] + files, stdout=f, check=True)
    return out


tally("null", "synth x%d, BEFORE a --baseline summary" % args.runs,
      [([summary_of(b, "sum%d" % i)], a) for i, (b, a) in enumerate(synN)])

rec = []
loop = 'i=0; while [ $i -lt 3000 ]; do i=$((i + 1)); done; sh -c :; sh -c :'
for s in range(min(S, 10) + 1):
    out = os.path.join(tmp, "rec%d.tkt" % s)
    if run(["trace-record", "-o", out, "--", "sh", "-c", loop], stderr=subprocess.DEVNULL) == 0 \
            and os.path.exists(out):
        rec.append(out)
tally("null", "trace-record, same loop", list(zip(rec, rec[1:])))

bases = []
w0 = os.path.join(dlrm, sorted(os.listdir(dlrm))[0]) if os.path.isdir(dlrm) else None
nc = os.path.join(args.shared, "ncompass/flops_example/test_trace.pt.trace.json")
for label, path in (("dlrm worker 0, us", w0), ("ncompass H100, frac us", nc)):
    if path and os.path.exists(path):
        bases.append((label, load(path)))
for label, doc in bases:
    pairs = []
    for s in range(1, S + 1):
        pairs.append((write_import(resample(doc, s), "rb%d" % s),
                      write_import(resample(doc, s + 1000), "ra%d" % s)))
    tally("null", "resampled " + label, pairs)

# ---- planted regressions -----------------------------------------------------
synth_json = {}


def chrome_of(seed):
    if seed not in synth_json:
        js = os.path.join(tmp, "syn%d.json" % seed)
        subprocess.run(["trace-to-chrome", "-o", js, synth_file(seed)], check=True)
        synth_json[seed] = js
    return synth_json[seed]


for case, plant in PLANTS:
    for label, doc in [("synth", None)] + bases + [(XN, None)]:
        pairs = []
        for s in range(1, S + 1):
            if label == XN:
                b = [write_import(load(chrome_of(s + k)), "pb%d_%d" % (s, k)) for k in RUN_OFFSETS]
                a = [write_import(plant(load(chrome_of(s + k + 500))), "pa%d_%d" % (s, k))
                     for k in RUN_OFFSETS]
            elif doc is None:
                b = write_import(load(chrome_of(s)), "pb%d" % s)
                a = write_import(plant(load(chrome_of(s + 1000))), "pa%d" % s)
            else:
                b = write_import(resample(doc, s), "pb%d" % s)
                a = write_import(plant(resample(doc, s + 1000)), "pa%d" % s)
            pairs.append((b, a))
        tally("planted", "%s: %s" % (case, label), pairs)

# ---- table -------------------------------------------------------------------
null = [r for r in results if r[0] == "null"]
np_, na = sum(r[2] for r in null), sum(r[3] for r in null)
print("calibration: %s, %d seeds (alarm = exit status 1)" % (" ".join(diff), S))
print("  %-44s %6s %7s %7s  %s" % ("null pairs (unchanged job)", "pairs", "alarms", "rate", "target"))
for _, case, n, a in null:
    print("  %-44s %6d %7d %6.1f%%  <= 1%%" % (case, n, a, 100.0 * a / n))
print("  %-44s %6d %7d %6.1f%%  <= 1%%  %s" % ("all null pairs", np_, na, 100.0 * na / max(np_, 1),
                                               "ok" if na <= 0.01 * np_ else "MISSED"))
print("  %-44s %6s %7s %7s  %s" % ("planted regressions", "pairs", "found", "rate", "target"))
for _, case, n, a in (r for r in results if r[0] == "planted"):
    print("  %-44s %6d %7d %6.1f%%  >= 90%%  %s" % (case, n, a, 100.0 * a / n,
                                                    "ok" if a >= 0.9 * n else "MISSED"))
