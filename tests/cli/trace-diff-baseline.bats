#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-diff with a summary (trace-stats --baseline) in place of a
# trace: known by its content; what it carries (each run's time per
# operation, counts, medians, run-wide figures) gives the verdicts the
# trace gives; what it cannot carry (each instance) is said, never
# guessed; a damaged or unfit summary is one line and exit status 2.

load helpers

FT="$BATS_TEST_DIRNAME/findings_trace.py"

# The comparison's verdicts, one line per operation and per run-wide
# figure, for comparing a trace's with its summary's.
verdicts() {
	jq -c '[.groups[] | [.report, .name, .verdict, .why, .evidence, .p_holm]],
	       [.summary[] | [.metric, .device, .verdict, .p_value]], .result.status' "$1"
}

@test "a summary of a recording with runs gives the trace's verdicts, p-values and exit status" {
	d=$BATS_TEST_TMPDIR
	synth --runs 5 --steps 8 --layers 2 --seed 1 -o "$d/b.tkt"
	synth --runs 5 --steps 8 --layers 2 --seed 2 --slow flash_bwd=1.2 -o "$d/a.tkt"
	synth --runs 5 --steps 8 --layers 2 --seed 3 -o "$d/n.tkt"
	trace-stats --baseline "$d/b.tkt" > "$d/b.json"
	# small: a few kilobytes per operation and run, not the trace
	[ "$(stat -c %s "$d/b.json")" -lt 40000 ]
	# each operation's time per run, as Python adds it up from the
	# events of each run's window in the trace's Chrome export
	trace-to-chrome -o "$d/b.chrome.json" "$d/b.tkt"
	python3 - "$d/b.chrome.json" "$d/b.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
runs = sorted((e["ts"], e["ts"] + e["dur"], e["args"]["run"]) for e in ev if e.get("cat") == "run")
want = {}
for e in ev:
    if e.get("ph") != "X" or e.get("cat") != "kernel":
        continue
    per = want.setdefault(e["name"], [0] * len(runs))
    for b, end, n in runs:
        if b <= e["ts"] <= end:
            per[n - 1] += round(e["dur"] * 1000)
got = {k["name"]: k["runs_ns"] for k in json.load(open(sys.argv[2]))["kernels"]}
assert len(runs) == 5 and set(got) == set(want), (len(runs), set(got) ^ set(want))
for name, v in want.items():
    # the export rounds each duration to the ns
    assert all(abs(x - y) <= 100 for x, y in zip(v, got[name])), (name, v, got[name])
PY
	# a slowed kernel, and a null pair: the same verdicts either way
	for after in a n; do
		trace-diff --json "$d/b.tkt" "$d/$after.tkt" > "$d/t.json" || [ $? -eq 1 ]
		trace-diff --json "$d/b.json" "$d/$after.tkt" > "$d/s.json" || [ $? -eq 1 ]
		assert_eq "$(verdicts "$d/s.json")" "$(verdicts "$d/t.json")"
		jq -e '.runs and .before.summary and (.after.summary | not)' "$d/s.json"
	done
	trace-diff --json "$d/b.json" "$d/a.tkt" > "$d/s.json" || [ $? -eq 1 ]
	assert_eq "$(jq -c '[.groups[] | select(.report == "kernels" and .verdict != "same") | [.verdict, .name[0:9]]]' "$d/s.json")" \
		'[["slower","flash_bwd"]]'
	run -1 trace-diff -q "$d/b.json" "$d/a.tkt"
	run -0 trace-diff -q "$d/b.json" "$d/n.tkt"
	# the summary may be AFTER as well
	trace-stats --baseline "$d/a.tkt" > "$d/a.json"
	run -1 trace-diff -q "$d/b.tkt" "$d/a.json"
}

@test "a summary of one run: a change of count is found as from the trace; the instances' test is not possible" {
	d=$BATS_TEST_TMPDIR
	# gemm 20 % slower (a test of instances decides it); memcpy called
	# twice as often (its count decides it); the rest unchanged
	python3 "$FT" --span 10000000 kernel:gemm:100000x20 kernel:memcpy_k:50000x10 \
		api:cudaLaunchKernel:5000x30 | mktrace > "$d/b.tkt"
	python3 "$FT" --span 10000000 kernel:gemm:120000x20 kernel:memcpy_k:50000x20 \
		api:cudaLaunchKernel:5000x30 | mktrace > "$d/a.tkt"
	trace-stats --baseline "$d/b.tkt" > "$d/b.json"
	run -1 trace-diff --json "$d/b.tkt" "$d/a.tkt"
	jq -e '[.groups[] | {(.name): [.verdict, .evidence]}] | add ==
	       {"gemm": ["slower", "instances"], "memcpy_k": ["slower", "count"],
	        "cudaLaunchKernel": ["same", "instances"]}' <<< "$output"
	run -1 trace-diff --json "$d/b.json" "$d/a.tkt"
	jq -e '[.groups[] | {(.name): [.verdict, .evidence, .why]}] | add ==
	       {"gemm": ["unsure", null, "a summary has no instances"],
	        "memcpy_k": ["slower", "count", "more calls"],
	        "cudaLaunchKernel": ["same", null, "within the threshold"]}' <<< "$output"
	run -1 trace-diff "$d/b.json" "$d/a.tkt"
	[[ "$output" == *$'\nSummary '*"b.json is a summary of one run: it has no instances to test"* ]]
	# the clock tick travels with the summary: whole microseconds here
	jq -e '.baseline.resolution_ns == 1000' "$d/b.json"
	run trace-diff --json "$d/b.json" "$d/a.tkt"
	jq -e '.resolution_ns == 1000' <<< "$output"
}

@test "summaries that cannot serve: one line, exit status 2" {
	d=$BATS_TEST_TMPDIR
	python3 "$FT" kernel:gemm:1000x5 | mktrace > "$d/b.tkt"
	trace-stats --baseline "$d/b.tkt" > "$d/b.json"
	# plain --json lacks the clock tick and the runs
	trace-stats --json "$d/b.tkt" > "$d/plain.json"
	run -2 trace-diff "$d/plain.json" "$d/b.tkt"
	assert_eq "${#lines[@]}" 1
	[[ "$output" == *"plain.json: a trace-stats summary without what trace-diff needs: make it with trace-stats --baseline" ]]
	# cut short
	head -c 300 "$d/b.json" > "$d/cut.json"
	run -2 trace-diff "$d/cut.json" "$d/b.tkt"
	assert_eq "${#lines[@]}" 1
	[[ "$output" == *"cut.json: not a readable summary: "* ]]
	# a row without its count, a kind in the wrong table
	jq 'del(.kernels[0].count)' "$d/b.json" > "$d/nocount.json"
	run -2 trace-diff "$d/nocount.json" "$d/b.tkt"
	[[ "$output" == *"nocount.json: not a trace-stats --baseline summary: a number is missing or not a number" ]]
	jq '.kernels[0].total_ns = -1' "$d/b.json" > "$d/neg.json"
	run -2 trace-diff "$d/neg.json" "$d/b.tkt"
	[[ "$output" == *"neg.json: not a trace-stats --baseline summary: a count or a time is negative" ]]
	jq '.kernels[0].kind = "api"' "$d/b.json" > "$d/kind.json"
	run -2 trace-diff "$d/kind.json" "$d/b.tkt"
	[[ "$output" == *"kind.json: not a trace-stats --baseline summary: an operation has no name or a kind not of its table" ]]
	# two summaries; what needs every instance
	run -2 trace-diff "$d/b.json" "$d/b.json"
	[[ "$output" == *"both "*"b.json and "*"b.json are summaries"* ]]
	run -2 trace-diff --normalize "$d/b.json" "$d/b.tkt"
	[[ "$output" == *"--normalize, --from and --to need every instance: not with a summary"* ]]
	run -2 trace-diff --from 1ms "$d/b.tkt" "$d/b.json"
	[[ "$output" == *"not with a summary"* ]]
	# --baseline writes its own JSON
	run -2 trace-stats --baseline --top 3 "$d/b.tkt"
	[[ "$output" == *"--baseline writes its own JSON"* ]]
}

@test "real traces: a summary of a dlrm rank gives the trace's verdicts wherever no instance test decides" {
	command -v trace-import > /dev/null || skip "trace-import is not built"
	under_valgrind && skip "too slow under valgrind"
	d=$BATS_TEST_TMPDIR
	shared_data param/dlrm_kineto dir
	set -- "$dir"/worker0_*.json "$dir"/worker1_*.json
	trace-import -o "$d/r0.tkt" "$1"
	trace-import -o "$d/r1.tkt" "$2"
	trace-stats --baseline "$d/r0.tkt" > "$d/r0.json"
	trace-diff --json "$d/r0.tkt" "$d/r1.tkt" > "$d/t.json" || [ $? -eq 1 ]
	trace-diff --json "$d/r0.json" "$d/r1.tkt" > "$d/s.json" || [ $? -eq 1 ]
	# every row the instances' test decided is "unsure" from the
	# summary; every other row, and every run-wide figure, is the same
	python3 - "$d/t.json" "$d/s.json" <<'PY'
import json, sys
t, s = (json.load(open(p)) for p in sys.argv[1:])
key = lambda g: (g["report"], g["domain"], g["name"])
sg = {key(g): g for g in s["groups"]}
assert set(sg) == {key(g) for g in t["groups"]}
same = tested = 0
for g in t["groups"]:
    h = sg[key(g)]
    if g["evidence"] == "instances":
        tested += 1
        assert h["verdict"] in ("unsure", "same"), (g["name"], h["verdict"])
        # the summary's own reasons: no instances, or the rule before any test
        assert h["verdict"] == g["verdict"] or h["why"] == "a summary has no instances", g["name"]
    else:
        same += 1
        assert (h["verdict"], h["why"], h["evidence"]) == (g["verdict"], g["why"], g["evidence"]), \
            (g["name"], g["verdict"], g["why"], h["verdict"], h["why"])
for a, b in zip(t["summary"], s["summary"]):
    assert (a["metric"], a["before"], a["verdict"]) == (b["metric"], b["before"], b["verdict"]), (a, b)
assert t["resolution_ns"] == s["resolution_ns"] == 1000
print("# %d rows decided without instances agree, %d rested on instances" % (same, tested),
      file=sys.stderr)
PY
}

@test "a summary of several files, each one run, gives the verdicts of the files themselves" {
	d=$BATS_TEST_TMPDIR
	for s in 1 2 3; do
		synth --steps 6 --layers 2 --seed $s -o "$d/b$s.tkt"
		synth --steps 6 --layers 2 --seed $((s + 10)) --slow flash_bwd=1.2 -o "$d/a$s.tkt"
	done
	trace-stats --baseline "$d"/b?.tkt > "$d/b.json"
	jq -e '(.run.runs | length) == 3 and (.kernels[0].runs_ns | length) == 3' "$d/b.json"
	trace-diff --json "$d"/b?.tkt -- "$d"/a?.tkt > "$d/t.json" || [ $? -eq 1 ]
	trace-diff --json "$d/b.json" -- "$d"/a?.tkt > "$d/s.json" || [ $? -eq 1 ]
	assert_eq "$(verdicts "$d/s.json")" "$(verdicts "$d/t.json")"
	jq -e '.runs and .result.status == 1' "$d/s.json"
}
