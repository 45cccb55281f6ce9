#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Live GPU test of trace-record on a real PyTorch training loop
# (tests/gpu/train_loop.py): DataLoader worker processes, NVTX steps,
# cuBLAS and PyTorch kernels, host-to-device copies of each batch; then
# a PyTorch process killed with SIGKILL while it launches kernels.
# Run by `make check-gpu` after tests/gpu/run.sh.
#
# What the loop measured itself (its workers' pids, each step's begin and
# end around the NVTX push and pop, the batches' bytes) is the reference;
# the trace is read with trace-dump --json and checked in Python:
#   - the exit status is the program's; every DataLoader worker is a
#     process of the trace with exit status 0 (they end with os._exit);
#   - one "step" range per step, on the main process, its ends within
#     1 ms of the loop's own clock readings around the push and pop;
#   - each step launched kernels, the same number in every step after
#     the first; each kernel links to a launch call inside its step and
#     ends before the step's range does (it synchronises);
#   - each step copied its batch to the GPU: two HtoD copies of exactly
#     the batch's bytes;
#   - trace-stats --steps finds the same number of steps, each one's
#     duration equals the range's and its kernel time the kernels
#     launched in it from any thread (the backward pass runs on
#     PyTorch's autograd thread); trace-to-chrome has every kernel;
#   - killed with SIGKILL after 20 000 launches: every launch it reported
#     is in the trace as a kernel or counted by a "dropped kernel" event.
#
# Exit status: 0 passed, or skipped (a line "pytorch gpu tests: skip:"
# says why); 1 a check failed; 2 something needed is missing.
set -u
export LC_ALL=C
cd "$(dirname "$0")/../.."
O=${O:-build}
bin=$PWD/$O/bin
EPOCHS=${EPOCHS:-2}
BATCHES=${BATCHES:-8}

skip() { echo "pytorch gpu tests: skip: $*"; exit 0; }
die() { echo "pytorch gpu tests: $*" >&2; exit 2; }
command -v python3 >/dev/null 2>&1 || skip "no python3"
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
	skip "no PyTorch with a usable CUDA device"
for c in trace-record trace-dump trace-stats trace-to-chrome; do
	[ -x "$bin/$c" ] || die "$bin/$c is not built"
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/workers"
TK_TEST_WORKERS=$tmp/workers "$bin/trace-record" -o "$tmp/run.tkt" -- \
	python3 tests/gpu/train_loop.py "$tmp/loop.json" "$EPOCHS" "$BATCHES" \
	>"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" = 0 ] || { tail -20 "$tmp/err"; echo "pytorch gpu tests: FAIL: the loop exited $rc under trace-record"; exit 1; }
"$bin/trace-dump" --json "$tmp/run.tkt" >"$tmp/run.jsonl" || die "trace-dump could not read the recording"
"$bin/trace-stats" --steps --json "$tmp/run.tkt" >"$tmp/stats.json" || die "trace-stats --steps failed"
"$bin/trace-to-chrome" "$tmp/run.tkt" >"$tmp/run.json" || die "trace-to-chrome failed"

python3 - "$tmp" <<'PY'
import json, sys
from collections import Counter, defaultdict
tmp = sys.argv[1]
loop = json.load(open(tmp + "/loop.json"))
evs = [json.loads(l) for l in open(tmp + "/run.jsonl")]
stats = json.load(open(tmp + "/stats.json"))
failed = passed = 0
def check(what, ok, detail=""):
    global failed, passed
    if ok:
        passed += 1
    else:
        failed += 1
        print("pytorch gpu tests: FAIL: %s %s" % (what, detail))

procs = {e["pid"]: e for e in evs if e["kind"] == "process"}
check("the main process recorded", loop["pid"] in procs, sorted(procs))
check("every DataLoader worker recorded (%d)" % len(loop["workers"]),
      all(w in procs for w in loop["workers"]),
      "missing %s" % [w for w in loop["workers"] if w not in procs])
check("workers exited 0", all(procs[w].get("exit_code") == 0 for w in loop["workers"] if w in procs),
      [procs[w] for w in loop["workers"] if w in procs and procs[w].get("exit_code") != 0][:2])
check("%d workers for %d epochs" % (len(loop["workers"]), len(set(s["epoch"] for s in loop["steps"]))),
      len(loop["workers"]) == 2 * len(set(s["epoch"] for s in loop["steps"])))

ranges = sorted((e for e in evs if e["kind"] == "range" and e["name"] == "step"), key=lambda e: e["ts"])
steps = loop["steps"]
check("one step range per step", len(ranges) == len(steps), "%d ranges, %d steps" % (len(ranges), len(steps)))
check("step ranges on the main process", all(r.get("pid") == loop["pid"] for r in ranges))
worst = 0
for r, s in zip(ranges, steps):
    # the loop's clock readings bracket the push and pop
    lead = r["ts"] - s["begin"]
    tail = s["end"] - (r["ts"] + r["dur"])
    worst = max(worst, abs(lead), abs(tail))
    if not (-1000 <= lead <= 1_000_000 and -1000 <= tail <= 1_000_000):
        check("step range within the loop's times", False, "range %s..%s loop %s..%s" %
              (r["ts"], r["ts"] + r["dur"], s["begin"], s["end"]))
check("step ranges agree with the loop's own clock (worst %.3f ms)" % (worst / 1e6), worst <= 1_000_000)

api = defaultdict(list)
for e in evs:
    if e["kind"] == "api":
        api[e["correlation"]].append(e)
kernels = [e for e in evs if e["kind"] == "kernel"]
check("kernels recorded", len(kernels) > 0)
per_step = Counter()
kernel_ns = Counter()
late = unlinked = 0
for k in kernels:
    calls = [a for a in api.get(k.get("correlation"), []) if "aunch" in a["name"]]
    if len(calls) != 1:
        unlinked += 1
        continue
    a = calls[0]
    for i, r in enumerate(ranges):
        if r["ts"] <= a["ts"] <= r["ts"] + r["dur"]:
            per_step[i] += 1
            kernel_ns[i] += k["dur"]
            if k["ts"] + k["dur"] > r["ts"] + r["dur"]:
                late += 1
            break
check("every kernel linked to one launch call", unlinked == 0, "%d not" % unlinked)
check("every step launched kernels", all(per_step[i] > 0 for i in range(len(ranges))), dict(per_step))
later = set(per_step[i] for i in range(1, len(ranges)))
check("the same number of kernels in every step after the first", len(later) == 1, sorted(later))
check("kernels of a step end before its range (it synchronises)", late == 0, "%d end after" % late)

copies = [e for e in evs if e["kind"] == "memcpy" and e.get("copy_kind") == "HtoD"]
for i, (r, s) in enumerate(zip(ranges, steps)):
    inside = sorted(c["bytes"] for c in copies if r["ts"] <= c["ts"] <= r["ts"] + r["dur"])
    want = sorted([s["x_bytes"], s["y_bytes"]])
    if [b for b in inside if b in want] != want:
        check("step %d copied its batch (%s bytes)" % (i, want), False, "copies in it: %s" % inside[:6])
        break
else:
    check("every step copied its batch to the GPU", True)

st = stats.get("steps") or {}
inst = st.get("instances", [])
check("trace-stats --steps finds the steps", len(inst) == len(ranges), "%d instances" % len(inst))
check("trace-stats step durations are the ranges'", [i["dur_ns"] for i in inst] == [r["dur"] for r in ranges])
# the backward pass is launched from PyTorch's autograd thread: still the step's
check("trace-stats kernel time per step, launched from any thread of the process",
      [i["kernel_ns"] for i in inst] == [kernel_ns[j] for j in range(len(ranges))],
      "%s vs %s" % ([i["kernel_ns"] for i in inst][:4], [kernel_ns[j] for j in range(4)]))
chrome = json.load(open(tmp + "/run.json"))
ev = chrome["traceEvents"] if isinstance(chrome, dict) else chrome
check("trace-to-chrome: as many kernels", sum(1 for e in ev if e.get("cat") == "kernel") == len(kernels),
      "%d vs %d" % (sum(1 for e in ev if e.get("cat") == "kernel"), len(kernels)))
print("pytorch gpu tests: training loop: %d steps, %d kernels (%s a step), %d workers, worst step edge %.3f ms: %d passed, %d failed"
      % (len(ranges), len(kernels), sorted(later), len(loop["workers"]), worst / 1e6, passed, failed))
sys.exit(1 if failed else 0)
PY
loop_rc=$?

# SIGKILL while launching: nothing launched goes unaccounted.  The
# program is killed once it has reported 20 000 launches.
"$bin/trace-record" -o "$tmp/kill.tkt" -- bash -c '
	python3 tests/gpu/train_loop.py spin 0 >"$1" & p=$!
	for _ in $(seq 600); do [ "$(wc -l <"$1")" -ge 20 ] && break; sleep 0.1; done
	kill -9 $p; wait $p; exit 0' spin "$tmp/spin.out" 2>"$tmp/spin.err"
kill_rc=0
last=$(tail -1 "$tmp/spin.out")
kernels=$("$bin/trace-dump" --json -k kernel "$tmp/kill.tkt" 2>/dev/null | grep -c .)
dropped=$("$bin/trace-dump" --json -k dropped "$tmp/kill.tkt" 2>/dev/null | python3 -c '
import json, sys
print(sum(e["count"] for e in map(json.loads, sys.stdin) if e.get("name") == "kernel"))')
others=$("$bin/trace-dump" -k dropped "$tmp/kill.tkt" 2>/dev/null | grep -v " kernel " | tr -s ' ' | cut -c1-160)
echo "pytorch gpu tests: killed loop: $last launches reported, $kernels kernels in the trace, $dropped counted as dropped kernels${others:+; other dropped events: $others}"
if [ -z "$last" ] || [ $((kernels + dropped)) -lt "$last" ] || [ $((kernels + dropped)) -gt $((last + 1010)) ]; then
	echo "pytorch gpu tests: FAIL: after SIGKILL, kernels + dropped should be within [$last, $((last + 1010))] (1000 launches between reports, a few of set-up)"
	tail -5 "$tmp/spin.err"
	kill_rc=1
fi
[ "$loop_rc" = 0 ] && [ "$kill_rc" = 0 ] || exit 1
echo "pytorch gpu tests: passed"
