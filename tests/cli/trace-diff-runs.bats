#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-diff with different numbers of runs on the two sides (5 runs of
# main against 3 of a branch, a crashed run left out): every figure that
# adds up over the runs is its mean per run.  Each figure, p-value and
# verdict against diff_reference.py, which computes them from
# trace-dump --json alone; a slowed kernel found and nothing else
# among the kernels; what each output says; the exit status; a
# summary of 5 runs against a trace of 3.

load helpers

REF="$BATS_TEST_DIRNAME/diff_reference.py"

# reference BEFORE AFTER [trace-diff options]: BEFORE and AFTER are
# comma-joined lists of files (several: one run each); trace-diff --json
# against the reference, which fails listing the differences
reference() {
	local d=$BATS_TEST_TMPDIR side f jsonl=() args=()
	for side in "$1" "$2"; do
		local list=() dumps=()
		IFS=, read -ra list <<< "$side"
		for f in "${list[@]}"; do
			trace-dump --json "$f" > "$f.jsonl"
			dumps+=("$f.jsonl")
		done
		jsonl+=("$(IFS=,; echo "${dumps[*]}")")
		# BEFORE... -- AFTER...
		[ ${#args[@]} -eq 0 ] && args+=("${list[@]}" --) || args+=("${list[@]}")
	done
	python3 "$REF" "${jsonl[0]}" "${jsonl[1]}" > "$d/ref.json"
	trace-diff --json "${args[@]}" > "$d/ours.json" || [ $? -eq 1 ]
	run python3 "$REF" --compare "$d/ref.json" "$d/ours.json"
	[ "$status" -eq 0 ] || { printf '%s\n' "$output" >&2; return 1; }
}

@test "2 files against 3, 5 runs against 3: every figure per run as the reference computes it" {
	d=$BATS_TEST_TMPDIR
	for s in 1 2; do synth --steps 6 --layers 2 --seed $s -o "$d/b$s.tkt"; done
	for s in 11 12 13; do synth --steps 6 --layers 2 --seed $s --slow gemm=1.2 -o "$d/a$s.tkt"; done
	reference "$d/b1.tkt,$d/b2.tkt" "$d/a11.tkt,$d/a12.tkt,$d/a13.tkt"
	jq -e '.runs and .per_run and .runs_before == 2 and .runs_after == 3' "$d/ours.json"
	# the counts per run are those of one run (6 steps of 2 layers),
	# not 2 and 3 runs' worth: no "more calls"
	jq -e '[.groups[] | select(.calls != null)] | length == 0' "$d/ours.json"
	synth --steps 6 --layers 2 --runs 5 --seed 3 -o "$d/r5.tkt"
	synth --steps 6 --layers 2 --runs 3 --seed 4 --slow flash_bwd=1.3 -o "$d/r3.tkt"
	reference "$d/r5.tkt" "$d/r3.tkt"
	reference "$d/r3.tkt" "$d/r5.tkt"
	# and the other way: a count changed in every run is found per run
	synth --steps 6 --layers 2 --runs 3 --seed 5 --add extra_kernel -o "$d/x3.tkt"
	synth --steps 6 --layers 2 --runs 5 --seed 6 --add extra_kernel --add extra_kernel -o "$d/x5.tkt"
	reference "$d/x3.tkt" "$d/x5.tkt"
}

@test "3 runs against 5: a kernel 30 % slower alone among the kernels is slower; the exit status" {
	d=$BATS_TEST_TMPDIR
	synth --steps 8 --layers 2 --runs 3 --seed 2 -o "$d/b3.tkt"
	synth --steps 8 --layers 2 --runs 5 --seed 22 --slow flash_bwd=1.3 -o "$d/a5.tkt"
	synth --steps 8 --layers 2 --runs 5 --seed 23 -o "$d/n5.tkt"
	run -1 trace-diff --json "$d/b3.tkt" "$d/a5.tkt"
	echo "$output" > "$d/o.json"
	assert_eq "$(jq -c '[.groups[] | select(.report == "kernels" and .verdict != "same") |
	                     [.verdict, .evidence, .name[0:9]]]' "$d/o.json")" '[["slower","runs","flash_bwd"]]'
	# its time per run, as the runs' own totals give it: the mean of 3
	# against the mean of 5, however many instances each side pooled
	jq -e '.groups[] | select(.name | startswith("flash_bwd")) |
	       (.before.run_total_ns | length) == 3 and (.after.run_total_ns | length) == 5 and
	       (.before.total_ns - (.before.run_total_ns | add) / 3 | fabs) <= 0.5 and
	       (.after.total_ns - (.after.run_total_ns | add) / 5 | fabs) <= 0.5 and
	       .delta_ns / .before.total_ns > 0.2 and .ratio > 1.2 and .ratio < 1.4' "$d/o.json"
	reference "$d/b3.tkt" "$d/a5.tkt"
	# exit status: the kernel fails --fail-if-slower 10 %, not 40 %
	run -1 trace-diff -q --name flash_bwd --fail-if-slower 10 "$d/b3.tkt" "$d/a5.tkt"
	run -0 trace-diff -q --name flash_bwd --fail-if-slower 40 "$d/b3.tkt" "$d/a5.tkt"
	# an unchanged job of 5 runs against 3 passes, though its totals
	# would be 5/3 as large
	run -0 trace-diff --json "$d/b3.tkt" "$d/n5.tkt"
	jq -e '.per_run and ([.groups[] | select(.verdict != "same")] | length) == 0 and
	       ([.summary[] | select(.verdict == "slower" or .verdict == "faster")] | length) == 0' \
		<<< "$output"
	run -0 trace-diff -q --fail-if-slower 5 "$d/b3.tkt" "$d/n5.tkt"
	run -0 trace-diff -q --metric gpu --fail-if-slower 5 "$d/n5.tkt" "$d/b3.tkt"
	run -0 trace-diff -q --fail-if-slower 5 "$d/n5.tkt" "$d/b3.tkt"
}

@test "per run: what each output says, only when the numbers of runs differ" {
	d=$BATS_TEST_TMPDIR
	synth --steps 4 --layers 2 --runs 3 --seed 2 -o "$d/b3.tkt"
	synth --steps 4 --layers 2 --runs 2 --seed 3 -o "$d/a2.tkt"
	synth --steps 4 --layers 2 --runs 3 --seed 4 -o "$d/a3.tkt"
	run trace-diff "$d/b3.tkt" "$d/a2.tkt"
	[[ "$output" == *$'\nPer run 3 before, 2 after: counts, times in all and deltas are means per run'* ]]
	[[ "$output" == *"Delta per run  Count per run  Per run before  Per run after"* ]]
	[[ "$output" == *"  GPU busy per run "* && "$output" == *"  bytes copied per run "* ]]
	[[ "$output" == *"  max RSS "* && "$output" != *"max RSS per run"* ]]
	run trace-diff "$d/b3.tkt" "$d/a3.tkt"
	[[ "$output" != *"Per run "* && "$output" == *"  Count  Total before  Total after"* ]]
	run trace-diff --markdown "$d/b3.tkt" "$d/a2.tkt"
	[[ "$output" == *"3 runs before, 2 after: counts, times and Δ are means per run."* ]]
	[[ "$output" == *"| Δ per run | Count per run |"* ]]
	trace-diff --html "$d/p.html" -q "$d/b3.tkt" "$d/a2.tkt" || true
	grep -q '3 runs before, 2 after: times, counts and deltas are means per run' "$d/p.html"
	# CSV: the per_run columns last, on the groups and the explanation,
	# with the JSON's figures; the summary's sd empty where no spread
	trace-diff --json "$d/b3.tkt" "$d/a2.tkt" > "$d/o.json" || true
	trace-diff --csv -r summary,explain,groups "$d/b3.tkt" "$d/a2.tkt" > "$d/o.csv" || true
	python3 - "$d/o.json" "$d/o.csv" <<'PY'
import csv, json, sys
out = json.load(open(sys.argv[1]))
tables = open(sys.argv[2]).read().strip().split("\n\n")
summary, explain, groups = (list(csv.DictReader(t.splitlines())) for t in tables)
assert list(groups[0])[-3:] == ["per_run", "runs_before", "runs_after"], list(groups[0])
assert list(explain[0])[-3:] == ["per_run", "runs_before", "runs_after"], list(explain[0])
assert "per_run" not in summary[0]
js = {(g["kind"], g["name"]): g for g in out["groups"]}
for r in groups:
    g = js[(r["kind"], r["name"])]
    assert (r["per_run"], r["runs_before"], r["runs_after"]) == ("true", "3", "2"), r
    for s, side in (("before", "before"), ("after", "after")):
        assert abs(float(r["count_" + s]) - g[side]["count"]) < 1e-6, (r["name"], s)
        assert int(r["total_%s_ns" % s]) == g[side]["total_ns"], (r["name"], s)
    assert int(r["delta_ns"]) == g["delta_ns"]
cpu = [r for r in summary if r["metric"] == "cpu"][0]
assert (cpu["runs_before"], cpu["runs_after"], cpu["sd_before"], cpu["sd_after"]) == ("3", "2", "", ""), cpu
wall = [r for r in summary if r["metric"] == "wall"][0]
assert wall["sd_before"] and wall["sd_after"], wall
js_cpu = [s for s in out["summary"] if s["metric"] == "cpu"][0]
assert js_cpu["per_run"] and js_cpu["sd_before"] is None and js_cpu["test"] is None, js_cpu
PY
	run trace-diff --csv "$d/b3.tkt" "$d/a3.tkt"
	[[ "${lines[0]}" == *",why,runs_count_p_value" ]]
	run trace-diff --json "$d/b3.tkt" "$d/a3.tkt"
	jq -e 'has("per_run") | not' <<< "$output"
}

@test "a summary of 5 runs against a trace of 3: the verdicts, p-values and figures of the trace" {
	d=$BATS_TEST_TMPDIR
	synth --steps 8 --layers 2 --runs 5 --seed 1 -o "$d/b5.tkt"
	synth --steps 8 --layers 2 --runs 3 --seed 2 --slow flash_bwd=1.3 -o "$d/a3.tkt"
	trace-stats --baseline "$d/b5.tkt" > "$d/b5.json"
	trace-diff --json "$d/b5.tkt" "$d/a3.tkt" > "$d/trace.json" && s1=0 || s1=$?
	trace-diff --json "$d/b5.json" "$d/a3.tkt" > "$d/summary.json" && s2=0 || s2=$?
	assert_eq "$s2" "$s1"
	assert_eq "$s1" 1
	python3 - "$d/trace.json" "$d/summary.json" <<'PY'
import json, sys
t, s = (json.load(open(p)) for p in sys.argv[1:])
assert s["per_run"] and s["runs_before"] == 5 and s["runs_after"] == 3, s.get("per_run")
key = lambda g: (g["kind"], g["name"])
tg = {key(g): g for g in t["groups"]}
sg = {key(g): g for g in s["groups"]}
assert tg.keys() == sg.keys()
for k, g in tg.items():
    h = sg[k]
    for f in ("verdict", "delta_ns", "runs_p_value", "runs_count_p_value", "p_holm", "calls"):
        assert g[f] == h[f] or abs(g[f] - h[f]) <= 1e-12 * abs(g[f]), (k, f, g[f], h[f])
    for side in ("before", "after"):
        assert g[side]["count"] == h[side]["count"] and g[side]["total_ns"] == h[side]["total_ns"], k
ts = {(x["metric"], x["device"]): x for x in t["summary"]}
for x in s["summary"]:
    y = ts[(x["metric"], x["device"])]
    assert (x["before"], x["after"], x["verdict"]) == (y["before"], y["after"], y["verdict"]), x
assert [g["name"][:9] for g in t["groups"] if g["verdict"] == "slower" and g["report"] == "kernels"] == ["flash_bwd"]
PY
}
