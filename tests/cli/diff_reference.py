#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Independent reference for trace-diff, for its tests.

  diff_reference.py BEFORE.jsonl AFTER.jsonl [--threshold F] [--alpha A] [--min-share F] > ref.json
  diff_reference.py --compare ref.json ours.json

BEFORE.jsonl and AFTER.jsonl are `trace-dump --json` of the two traces;
a side of several files, each one run, is their paths joined by commas.
The first form computes, from the events alone and with nothing from
tracekit's C code, what trace-diff --json reports: per operation
(grouped as stats_reference.py groups them) the count, total and
percentiles of each side, the change in total, the ratio of medians, the
Mann-Whitney U statistic by comparing every pair, its two-sided p-value
(exact by the classic recursion f(u; m, n) = f(u - n; m - 1, n) +
f(u; m, n - 1) without ties, by a knapsack over the pooled values with
ties, else the normal approximation with tie and continuity
corrections), Welch's t-test over the runs by numerical integration of
the t density, Holm's adjustment over the operations, the verdict (the
rule of trace-diff(1), VERDICTS); and the run-wide figures.  When the
two sides hold different numbers of runs, every figure that adds up over
the runs (counts, totals, deltas, the kinds' and the wall's times the
rule weighs, GPU busy time, bytes) is its mean per run, as
trace-diff(1) says; the instances are pooled as they are.  The second form
checks trace-diff's JSON against it and exits 1 listing the differences.
Pure Python: no numpy or scipy needed.
"""
import argparse
import json
import math
import os
import sys
from functools import lru_cache

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.setrecursionlimit(100000)
from stats_reference import TABLE_OF, group_key, stats, union_length  # noqa: E402


def load(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def runs_of(events):
    """Windows (index, begin, end) of the TK_RUN events, by begin."""
    return sorted((e["ts"], e["ts"] + e["dur"], e["run"]) for e in events if e["kind"] == "run")


def run_at(windows, ts):
    """The run whose window holds ts: the last to begin at or before it."""
    best = None
    for b, e, i in windows:
        if b <= ts:
            best = (b, e, i)
    return best[2] if best and ts <= best[1] else 0


def span(events):
    timed = [e for e in events if e["kind"] != "dropped"]
    return (max(e["ts"] + e["dur"] for e in timed) - min(e["ts"] for e in timed)) if timed else 0


def trace_figures(inputs):
    """The figures of one side: `inputs` holds the events of each of its
    files; several files are one run each (their wall the sum of their
    spans), else the TK_RUN events of the one file part it."""
    groups, runs, counts = {}, {}, {}
    if len(inputs) > 1:
        nruns = len(inputs)
        tagged = [(i + 1, e) for i, evs in enumerate(inputs) for e in evs]
        run_wall = [span(evs) for evs in inputs]
        wall = sum(run_wall)
    else:
        events = inputs[0]
        windows = runs_of(events)
        nruns = max([w[2] for w in windows], default=0)
        tagged = [(run_at(windows, e["ts"]) if nruns >= 2 else 0, e) for e in events]
        wall = span(events)
        run_wall = [0] * nruns
        for w in windows:
            run_wall[w[2] - 1] += w[1] - w[0]
    for r, e in tagged:
        if e["kind"] in TABLE_OF:
            k = group_key(e)
            groups.setdefault(k, []).append(e["dur"])
            if r:
                runs.setdefault(k, [0] * nruns)[r - 1] += e["dur"]
                counts.setdefault(k, [0] * nruns)[r - 1] += 1
    events = [e for _, e in tagged]
    gpu = {}
    for r, e in tagged:
        if e["kind"] in ("kernel", "memcpy", "memset"):
            # the files of a side ran at different times: their busy
            # intervals never merge
            gpu.setdefault((r, e.get("device", -1)), []).append((e["ts"], e["ts"] + e["dur"]))
    devices = {d for _, d in gpu}
    summary = {
        "wall": wall,
        "gpu": sum(union_length(v) for v in gpu.values()),
        "kernel": sum(sum(v) for k, v in groups.items() if k[0] == "kernel"),
        "copy": sum(sum(v) for k, v in groups.items() if k[0] in ("memcpy", "memset")),
        "api": sum(sum(v) for k, v in groups.items() if k[0] == "api"),
        "bytes": sum(e["bytes"] for e in events if e["kind"] == "memcpy"),
        # every process's user and system time: a pid that ends in
        # several files is a process of each
        "cpu": sum(e.get("utime", 0) + e.get("stime", 0) for e in events if e["kind"] == "process"),
    }
    per_run = {}
    if nruns >= 2:
        per_run["wall"] = run_wall
        for m, kinds in (("kernel", ("kernel",)), ("copy", ("memcpy", "memset")), ("api", ("api",))):
            per_run[m] = [sum(v[i] for k, v in runs.items() if k[0] in kinds) for i in range(nruns)]
    # the explanation's parts: kernels split by NCCL/RCCL in the name
    comm = lambda name: "nccl" in name.lower() or "rccl" in name.lower()  # noqa: E731
    parts = {
        "kernels": sum(sum(v) for k, v in groups.items() if k[0] == "kernel" and not comm(k[2])),
        "communication": sum(sum(v) for k, v in groups.items() if k[0] == "kernel" and comm(k[2])),
        "copies": summary["copy"], "api": summary["api"],
        "_ngpus": len(devices),
    }
    return groups, runs, nruns, summary, per_run, counts, run_wall, parts


# ---- Mann-Whitney U ----------------------------------------------------------------

def u_pairwise(x, y):
    u = 0.0
    for a in x:
        for b in y:
            u += 1.0 if a > b else 0.5 if a == b else 0.0
    return u


@lru_cache(maxsize=None)
def count_u(u, m, n):
    """Arrangements of m x-values and n y-values with U (x above y) = u."""
    if u < 0 or u > m * n:
        return 0
    if m == 0 or n == 0:
        return 1 if u == 0 else 0
    # the largest value is an x (above all n y's) or a y
    return count_u(u - n, m - 1, n) + count_u(u, m, n - 1)


def two_sided(counts, obs):
    lo = sum(c for s, c in counts.items() if s <= obs)
    hi = sum(c for s, c in counts.items() if s >= obs)
    return min(1.0, 2.0 * min(lo, hi) / sum(counts.values()))


def mwu(x, y):
    """(test, U, p) as trace-diff computes them, by other means."""
    m, n = len(x), len(y)
    u = u_pairwise(x, y)
    pool = sorted(x + y)
    tied = len(set(pool)) < len(pool)
    N = m + n
    if not tied and m * n <= (1 << 21) and math.comb(N, min(m, n)) < 2e18:
        counts = {s: count_u(s, m, n) for s in range(m * n + 1)}
        return "mann-whitney-exact", u, two_sided(counts, u)
    if tied and N <= 64:
        # doubled mean ranks; subsets of m values chosen one value at a time
        score = {}
        for v in set(pool):
            first = pool.index(v) + 1
            t = pool.count(v)
            score[v] = 2 * first + t - 1
        dp = [dict() for _ in range(m + 1)]
        dp[0][0] = 1
        for v in pool:
            s = score[v]
            for k in range(m, 0, -1):
                for tot, c in dp[k - 1].items():
                    dp[k][tot + s] = dp[k].get(tot + s, 0) + c
        obs = sum(score[v] for v in x)
        return "mann-whitney-exact", u, two_sided(dp[m], obs)
    ties = sum(t ** 3 - t for t in (pool.count(v) for v in set(pool)))
    var = m * n / 12.0 * ((N + 1) - ties / (N * (N - 1)))
    if var <= 0:
        return "mann-whitney-normal", u, 1.0
    d = max(abs(u - m * n / 2.0) - 0.5, 0.0)
    return "mann-whitney-normal", u, math.erfc(d / math.sqrt(var) / math.sqrt(2))


# ---- Welch's t-test --------------------------------------------------------------------

def t_sf2(t, df):
    """P(|T| >= |t|) by Simpson's rule over the density on [0, |t|]."""
    t = abs(t)
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    f = lambda x: c * (1 + x * x / df) ** (-(df + 1) / 2)  # noqa: E731
    # tails: integrate the tail itself, over x = t e^s (the integrand
    # then decays like e^(-df s))
    if t > 5:
        g = lambda s: f(t * math.exp(s)) * t * math.exp(s)  # noqa: E731
        hi, steps = 60.0 / df + 5, 20000
        h = hi / steps
        s = g(0) + g(hi) + sum((4 if i % 2 else 2) * g(i * h) for i in range(1, steps))
        return 2 * s * h / 3
    steps = 20000
    h = t / steps
    s = f(0) + f(t) + sum((4 if i % 2 else 2) * f(i * h) for i in range(1, steps))
    return max(0.0, 1 - 2 * s * h / 3)


def welch(x, y):
    nx, ny = len(x), len(y)
    if nx < 2 or ny < 2:
        return None, 0
    mx, my = sum(x) / nx, sum(y) / ny
    vx = sum((v - mx) ** 2 for v in x) / (nx - 1)
    vy = sum((v - my) ** 2 for v in y) / (ny - 1)
    se2 = vx / nx + vy / ny
    direction = (my > mx) - (my < mx)
    if se2 <= 0:
        return (1.0 if mx == my else 0.0), direction
    t = (my - mx) / math.sqrt(se2)
    df = se2 * se2 / ((vx / nx) ** 2 / (nx - 1) + (vy / ny) ** 2 / (ny - 1))
    return t_sf2(t, df), direction


def holm(ps):
    """Holm's step-down adjusted p-values, in the order given."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: (ps[i], i))
    out, best = [0.0] * m, 0.0
    for j, i in enumerate(order):
        best = max(best, min(1.0, (m - j) * ps[i]))
        out[i] = best
    return out


def tick(groups):
    """The coarsest of 1000, 100, 10, 1 ns dividing every duration."""
    for t in (1000, 100, 10):
        if all(v % t == 0 for vs in groups.values() for v in vs):
            return t
    return 1


def decide(rows, b, a, args, both_runs, per):
    """The verdict of every row present on both sides, as trace-diff(1)
    VERDICTS says: direction by the count when it changed beyond the
    threshold, else by the median (beyond the threshold and beyond one
    clock tick, agreeing with the change in total); material when the
    change in total is at least --min-share of the kind's time (or of
    the wall when smaller); sure when the Holm-adjusted p of the runs'
    test (several runs: of their counts when the count changed) or of
    the instances' test (one run; a count change needs no test) is below
    alpha.  `per` holds what each side's totals are divided by: its runs
    when the sides have different numbers of runs, else 1."""
    walls = [fig[3]["wall"] if d == 1 else sum(fig[6]) / d for fig, d in zip((b, a), per)]
    wall = max(walls)
    ref = {}
    for t in set(TABLE_OF.values()):
        tot = [sum(sum(v) for k, v in fig[0].items() if TABLE_OF[k[0]] == t) / d
               for fig, d in zip((b, a), per)]
        ref[t] = min(max(tot), wall)
    res = max(tick(b[0]), tick(a[0]))
    fam = []
    for r in rows:
        sb, sa = r["before"], r["after"]
        r["_calls"] = sa["count"] / sb["count"]
        counted = abs(r["_calls"] - 1) > args.threshold
        if both_runs and counted:
            # the count's test decides, and points the way of the count
            r["_ev"], r["_p"], r["_dir"] = "runs", r["runs_count_p_value"], r["_count_dir"]
            r["_want"] = 1 if r["_calls"] > 1 else -1
        elif both_runs:
            r["_ev"], r["_p"], r["_dir"] = "runs", r["runs_p_value"], r["_runs_dir"]
        elif counted:
            r["_ev"], r["_p"], r["_dir"] = "count", None, 0
        else:
            r["_ev"], r["_p"], r["_dir"] = "instances", r["p_value"], r["_inst_dir"]
        # twice the mean per run over both sides' runs together (with
        # as many runs, the two totals added)
        pooled = (sb["total_ns"] * per[0] + sa["total_ns"] * per[1]) / ((per[0] + per[1]) / 2)
        if r["_p"] is not None and pooled >= args.min_share * ref[TABLE_OF[r["kind"]]]:
            fam.append(r)
    for r, q in zip(fam, holm([r["_p"] for r in fam])):
        r["p_holm"] = q
    for r in rows:
        sb, sa = r["before"], r["after"]
        sign = (r["delta_ns"] > 0) - (r["delta_ns"] < 0)
        if abs(r["_calls"] - 1) > args.threshold:
            d = sign
            if not d:
                r["verdict"] = "same"
                continue
        else:
            ratio = r["_ratio"]
            d = 1 if ratio - 1 > args.threshold else -1 if 1 - ratio > args.threshold else 0
            if not d or abs(sa["median_ns"] - sb["median_ns"]) <= res:
                r["verdict"] = "same"
                continue
            if sign != d:
                r["verdict"] = "unsure"
                continue
        if abs(r["delta_ns"]) < args.min_share * ref[TABLE_OF[r["kind"]]]:
            r["verdict"] = "same"
        elif r["_ev"] == "count":
            r["verdict"] = "slower" if d > 0 else "faster"
        elif r.get("p_holm", 1) < args.alpha and r["_dir"] == r.get("_want", d):
            r["verdict"] = "slower" if d > 0 else "faster"
        else:
            r["verdict"] = "unsure"
    for r in rows:
        for k in ("_calls", "_ev", "_p", "_dir", "_ratio", "_inst_dir", "_runs_dir",
                  "_count_dir", "_want"):
            r.pop(k, None)


def reference(args):
    b = trace_figures([load(p) for p in args.before.split(",")])
    a = trace_figures([load(p) for p in args.after.split(",")])
    both_runs = b[2] >= 2 and a[2] >= 2
    # 5 runs against 3: what adds up over the runs, per run
    per_run = both_runs and b[2] != a[2]
    per = (b[2], a[2]) if per_run else (1, 1)
    groups = []
    for key in sorted(set(b[0]) | set(a[0])):
        row = {"kind": key[0], "domain": key[1], "name": key[2]}
        sides = []
        for fig in (b, a):
            v = fig[0].get(key)
            sides.append(stats(v) if v else None)
        for side, d in zip(sides, per):
            if side:
                side["count"] /= d
                side["total_ns"] /= d
        row["before"], row["after"] = sides
        tb = sides[0]["total_ns"] if sides[0] else 0
        ta = sides[1]["total_ns"] if sides[1] else 0
        row["delta_ns"] = ta - tb
        if not sides[1]:
            row["verdict"] = "gone"
        elif not sides[0]:
            row["verdict"] = "new"
        else:
            mb, ma = sides[0]["median_ns"], sides[1]["median_ns"]
            ratio = ma / mb if mb > 0 else (math.inf if ma > 0 else 1.0)
            test, u, p = mwu(b[0][key], a[0][key])
            mu = len(b[0][key]) * len(a[0][key]) / 2.0
            direction = 1 if u < mu else -1 if u > mu else 0
            if ratio != ratio or math.isinf(ratio):
                row["ratio"] = None
            else:
                row["ratio"] = ratio
            row.update({"test": test, "u": u, "p_value": p, "_ratio": ratio,
                        "_inst_dir": direction})
            if both_runs:
                zero = lambda fig: fig[1].get(key, [0] * fig[2])  # noqa: E731
                row["runs_p_value"], row["_runs_dir"] = welch(zero(b), zero(a))
                zero = lambda fig: fig[5].get(key, [0] * fig[2])  # noqa: E731
                row["runs_count_p_value"], row["_count_dir"] = welch(zero(b), zero(a))
        groups.append(row)
    decide([r for r in groups if r["before"] and r["after"]], b, a, args, both_runs, per)
    summary = {}
    for m in ("wall", "gpu", "kernel", "copy", "api", "bytes", "cpu"):
        if both_runs and m in b[4]:
            vb, va = b[4][m], a[4][m]
            summary[m] = {"before": sum(vb) / len(vb), "after": sum(va) / len(va),
                          "p_value": welch(vb, va)[0]}
        else:
            summary[m] = {"before": b[3][m] / per[0], "after": a[3][m] / per[1]}
    # the explanation: each part per run when per_run; GPU idle is the
    # wall less the busy time averaged over the GPUs
    explain = {}
    for fig, d, side in ((b, per[0], "before"), (a, per[1], "after")):
        wall = fig[3]["wall"] if d == 1 else sum(fig[6]) / d
        for k in ("kernels", "communication", "copies", "api"):
            explain.setdefault(k, {})[side] = fig[7][k] / d
        if fig[7]["_ngpus"]:
            idle = wall - fig[3]["gpu"] / d / fig[7]["_ngpus"]
            explain.setdefault("gpu_idle", {})[side] = max(idle, 0)
        explain.setdefault("_wall", {})[side] = wall
    out = {"runs": both_runs, "per_run": per_run, "groups": groups, "summary": summary,
           "explain": explain}
    if per_run:
        out["runs_before"], out["runs_after"] = per
    json.dump(out, sys.stdout, indent=1)
    print()


def compare(args):
    ref = json.load(open(args.before))
    ours = json.load(open(args.after))
    bad = []

    def close(x, y, rel, absolute=0.0):
        if x is None or y is None:
            return x is None and y is None
        return abs(x - y) <= max(rel * abs(y), absolute)

    if ours.get("runs") != ref["runs"]:
        bad.append("runs: %s, want %s" % (ours.get("runs"), ref["runs"]))
    # per run only when the numbers of runs differ: said only then
    per_run = ref.get("per_run", False)
    for k in ("per_run", "runs_before", "runs_after"):
        if ours.get(k) != (ref.get(k) or None):
            bad.append("%s: %s, want %s" % (k, ours.get(k), ref.get(k)))
    got = {(g["kind"], g["domain"], g["name"]): g for g in ours["groups"]}
    if len(got) != len(ref["groups"]):
        bad.append("%d groups, want %d" % (len(got), len(ref["groups"])))
    for r in ref["groups"]:
        key = (r["kind"], r["domain"], r["name"])
        g = got.get(key)
        if g is None:
            bad.append("missing %s" % (key,))
            continue
        what = "%s %s" % (r["kind"], r["name"][:60])
        for side in ("before", "after"):
            if (g[side] is None) != (r[side] is None):
                bad.append("%s %s: %s, want %s" % (what, side, g[side], r[side]))
                continue
            if r[side] is None:
                continue
            for k in ("count", "total_ns", "min_ns", "max_ns"):
                if per_run and k in ("count", "total_ns"):
                    # means per run: a count to 1e-9, a time to the ns
                    if not close(g[side][k], r[side][k], 1e-9, 0.5 + 1e-6 if k == "total_ns" else 0):
                        bad.append("%s %s.%s per run: %s, want %s" % (what, side, k, g[side][k],
                                                                      r[side][k]))
                    continue
                if g[side][k] != r[side][k]:
                    bad.append("%s %s.%s: %s, want %s" % (what, side, k, g[side][k], r[side][k]))
            for k in ("mean_ns", "median_ns", "p95_ns", "std_ns"):
                if abs(g[side][k] - r[side][k]) > 0.5 + 1e-6:
                    bad.append("%s %s.%s: %s, want %s" % (what, side, k, g[side][k], r[side][k]))
        if g["delta_ns"] != r["delta_ns"] and not (per_run and abs(g["delta_ns"] - r["delta_ns"]) <= 0.5 + 1e-6):
            bad.append("%s delta_ns: %s, want %s" % (what, g["delta_ns"], r["delta_ns"]))
        if g["verdict"] != r["verdict"]:
            bad.append("%s verdict: %s, want %s" % (what, g["verdict"], r["verdict"]))
        if "test" in r:
            if g["test"] != r["test"]:
                bad.append("%s test: %s, want %s" % (what, g["test"], r["test"]))
            if not close(g["ratio"], r["ratio"], 1e-9):
                bad.append("%s ratio: %s, want %s" % (what, g["ratio"], r["ratio"]))
            if not close(g["p_value"], r["p_value"], 1e-6, 1e-12):
                bad.append("%s p_value: %s, want %s" % (what, g["p_value"], r["p_value"]))
            if not close(g.get("p_holm"), r.get("p_holm"), 1e-5, 1e-12):
                bad.append("%s p_holm: %s, want %s" % (what, g.get("p_holm"), r.get("p_holm")))
        for k in ("runs_p_value", "runs_count_p_value"):
            if k in r and not close(g[k], r[k], 1e-5, 1e-9):
                bad.append("%s %s: %s, want %s" % (what, k, g[k], r[k]))
    summary = {s["metric"]: s for s in ours.get("summary", []) if s["device"] is None}
    for m, r in ref["summary"].items():
        s = summary.get(m if m != "bytes" else "bytes")
        if s is None:
            bad.append("summary %s missing" % m)
            continue
        for side in ("before", "after"):
            if abs(s[side] - r[side]) > 0.5 + 1e-6:
                bad.append("summary %s.%s: %s, want %s" % (m, side, s[side], r[side]))
        if "p_value" in r and not close(s["p_value"], r["p_value"], 1e-5, 1e-9):
            bad.append("summary %s.p_value: %s, want %s" % (m, s["p_value"], r["p_value"]))
    if "explain" in ours:
        parts = {p["part"]: p for p in ours["explain"]}
        for part, r in ref["explain"].items():
            if part.startswith("_") or not any(r.values()) and part not in parts:
                continue
            p = parts.get(part)
            if p is None:
                bad.append("explain %s missing" % part)
                continue
            for side in ("before", "after"):
                if abs(p[side + "_ns"] - r.get(side, 0)) > 0.5 + 1e-6:
                    bad.append("explain %s.%s: %s, want %s" % (part, side, p[side + "_ns"],
                                                               r.get(side, 0)))
        w = ref["explain"]["_wall"]
        for p in ours["explain"]:
            r = ref["explain"].get(p["part"], {})
            want = ((r.get("after", 0) - r.get("before", 0)) / (w["after"] - w["before"]) * 100
                    if w["after"] != w["before"] else None)
            if not close(p["share_pct"], want, 1e-4, 1e-6):
                bad.append("explain %s.share_pct: %s, want %s" % (p["part"], p["share_pct"], want))
    for line in bad[:40]:
        print(line)
    sys.exit(1 if bad else 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--threshold", type=float, default=0.03)
    ap.add_argument("--alpha", type=float, default=0.01)
    ap.add_argument("--min-share", type=float, default=0.01)
    ap.add_argument("before")
    ap.add_argument("after")
    args = ap.parse_args()
    if args.compare:
        compare(args)
    else:
        reference(args)


if __name__ == "__main__":
    main()
