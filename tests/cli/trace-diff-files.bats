#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-diff BEFORE... -- AFTER...: several recordings per side, each one
# run, compared run by run (Welch's t over each operation's time per
# run), as a trace-record --repeat recording is; planted regressions are
# found, unchanged jobs pass, and what cannot be compared run by run is
# one line and exit status 2.

load helpers

# files PREFIX SEED... [-- SYNTH OPTIONS]: one synth recording per seed
files() {
	local prefix=$1
	shift
	local seeds=() opts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do seeds+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	opts=("$@")
	for s in "${seeds[@]}"; do
		synth --steps 6 --layers 2 --seed "$s" "${opts[@]}" -o "$BATS_TEST_TMPDIR/$prefix$s.tkt"
		printf '%s\n' "$BATS_TEST_TMPDIR/$prefix$s.tkt"
	done
}

@test "several files per side: a slowed kernel found run by run, each file's time per run as Python adds it" {
	d=$BATS_TEST_TMPDIR
	mapfile -t B < <(files b 1 2 3 4)
	mapfile -t A < <(files a 11 12 13 14 -- --slow flash_bwd=1.2)
	run -1 trace-diff --json "${B[@]}" -- "${A[@]}"
	echo "$output" > "$d/o.json"
	jq -e '.runs and (.before.files | length) == 4 and (.after.files | length) == 4' "$d/o.json"
	# the slowed kernel, decided by the runs; no other kernel changed
	assert_eq "$(jq -c '[.groups[] | select(.report == "kernels" and .verdict != "same") |
	                     [.verdict, .evidence, .name[0:9]]]' "$d/o.json")" \
		'[["slower","runs","flash_bwd"]]'
	# each file's time of each kernel, from its Chrome export
	for f in "${B[@]}"; do trace-to-chrome -o "$f.json" "$f"; done
	python3 - "$d/o.json" "${B[@]/%/.json}" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
want = {}
for i, path in enumerate(sys.argv[2:]):
    for e in json.load(open(path))["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            want.setdefault(e["name"], [0] * 4)[i] += round(e["dur"] * 1000)
got = {g["name"]: g["before"]["run_total_ns"] for g in out["groups"] if g["report"] == "kernels"}
assert set(got) == set(want)
for k, v in want.items():
    assert all(abs(x - y) <= 100 for x, y in zip(v, got[k])), (k, v, got[k])
wall = [s for s in out["summary"] if s["metric"] == "wall"][0]
assert wall["per_run"] and wall["runs_before"] == 4 and wall["runs_after"] == 4, wall
PY
	run -1 trace-diff "${B[@]}" -- "${A[@]}"
	[[ "$output" == "Before  ${B[0]} and 3 more files: wall "*", 4 runs"* ]]
}

@test "several files per side: unchanged jobs pass" {
	mapfile -t B < <(files b 21 22 23)
	mapfile -t A < <(files a 31 32 33)
	run -0 trace-diff --json "${B[@]}" -- "${A[@]}"
	jq -e '.runs and ([.groups[] | select(.verdict == "slower" or .verdict == "faster")] | length) == 0' \
		<<< "$output"
	# options before the "--" still apply; a "--" with nothing before
	# it only ends the options
	run -0 trace-diff -q --kind kernel "${B[@]}" -- "${A[@]}"
	run -0 trace-diff -q -- "${B[0]}" "${A[0]}"
}

@test "several files on one side, a repeated recording on the other: compared run by run" {
	d=$BATS_TEST_TMPDIR
	mapfile -t B < <(files b 41 42 43)
	synth --steps 6 --layers 2 --seed 44 --runs 3 --slow flash_bwd=1.2 -o "$d/a3.tkt"
	run -1 trace-diff --json "${B[@]}" -- "$d/a3.tkt"
	jq -e '.runs and ([.groups[] | select(.report == "kernels" and .verdict == "slower") |
	        .name[0:9]] == ["flash_bwd"])' <<< "$output"
}

@test "what cannot be compared run by run: one line, exit status 2" {
	d=$BATS_TEST_TMPDIR
	mapfile -t B < <(files b 51 52)
	mapfile -t A < <(files a 61 62 63)
	run -2 trace-diff "${B[@]}" -- "${A[0]}"
	[[ "$output" == *"several files on one side are runs: the other side needs several runs too"* ]]
	assert_eq "${#lines[@]}" 1
	# a repeated recording against one run: no spread on one side
	synth --steps 2 --layers 1 --runs 3 -o "$d/r3.tkt"
	run -2 trace-diff "$d/r3.tkt" "${A[0]}"
	assert_eq "$output" "trace-diff: BEFORE has 3 runs and AFTER 1: comparing run by run needs several runs on each side (trace-record --repeat N)"
	run -2 trace-diff "${A[0]}" "$d/r3.tkt"
	[[ "$output" == *"BEFORE has 1 run and AFTER 3: "* ]]
	run -2 trace-diff "${B[@]}" --
	[[ "$output" == *"needs files on both sides of --"* ]]
	run -2 trace-diff "${B[@]}" "${A[0]}"
	[[ "$output" == *"compares exactly two traces: BEFORE AFTER (or BEFORE... -- AFTER...)"* ]]
	run -2 trace-diff "${B[@]}" -- - < "${A[0]}"
	[[ "$output" == *"standard input is one side of two: not with several files"* ]]
	trace-stats --baseline "${B[0]}" > "$d/b.json"
	run -2 trace-diff "$d/b.json" "${B[1]}" -- "${A[@]}"
	[[ "$output" == *"b.json is a summary: it is a side on its own, not one run of several"* ]]
	# a damaged file among several: reported, nothing compared
	head -c 2000 "${A[1]}" > "$d/cut.tkt"
	run -2 trace-diff "${B[@]}" -- "${A[0]}" "$d/cut.tkt"
	[[ "$output" == *"cut.tkt"* ]]
}

@test "runs: a count changed alike in every run is certain; one that varies from run to run is not" {
	d=$BATS_TEST_TMPDIR
	FT="$BATS_TEST_DIRNAME/findings_trace.py"
	# one NAME COUNT DURATION: a run with COUNT calls of kernel k
	one() { python3 "$FT" --span 1000000 "kernel:k:$3x$2" kernel:other:5000x10 | mktrace > "$d/$1.tkt"; }
	# one call more in each run (1.7 % of the kernels' time), while
	# the time per run varies too much from run to run to tell (means
	# 10 and 11 us, sd 2 and 2.2 us: Welch's t over the times gives
	# p = 0.6); Welch's t over counts of no spread gives p = 0
	one b1 10 800; one b2 10 1200; one b3 10 1000
	one a1 11 1200; one a2 11 800; one a3 11 1000
	run -1 trace-diff --json "$d"/b?.tkt -- "$d"/a?.tkt
	jq -e '.groups[] | select(.name == "k") | .verdict == "slower" and .evidence == "runs" and
	       .why == "more calls" and .runs_count_p_value == 0 and .runs_p_value > 0.5' <<< "$output"
	# the CSV carries the same count test, in its last column
	run -1 trace-diff --csv "$d"/b?.tkt -- "$d"/a?.tkt
	python3 -c '
import csv, sys
rows = list(csv.DictReader(sys.stdin))
k = [r for r in rows if r["name"] == "k"][0]
assert float(k["runs_count_p_value"]) == 0 and float(k["runs_p_value"]) > 0.5, k
assert list(rows[0])[-1] == "runs_count_p_value"' <<< "$output"
	# counts 10, 20, 15 against 18, 12, 20: 11 % more calls in all, but
	# the runs do not agree (t = 0.45)
	one b1 10 1000; one b2 20 1000; one b3 15 1000
	one a1 18 1000; one a2 12 1000; one a3 20 1000
	run -0 trace-diff --json "$d"/b?.tkt -- "$d"/a?.tkt
	jq -e '.groups[] | select(.name == "k") | .verdict == "unsure" and .calls == "more" and
	       .why == "not significant (Holm)" and .runs_count_p_value > 0.5' <<< "$output"
}
