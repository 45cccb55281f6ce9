#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-diff: pairs of synthetic traces with known answers (one kernel
# 30 % slower, one added, one removed, everything 3x faster), every
# figure and p-value against an independent computation
# (diff_reference.py over trace-dump --json) and against trace-stats,
# the rate of false verdicts on pure noise, exit statuses, every output
# format, --normalize, bad input.

load helpers

REF="$BATS_TEST_DIRNAME/diff_reference.py"

# synth options shared by a pair: small, quick traces
SMALL="--steps 12 --layers 2"

# check_reference BEFORE AFTER [trace-diff options]: every figure of
# trace-diff --json against the reference; fails listing differences
check_reference() {
	local b=$1 a=$2 d=$BATS_TEST_TMPDIR
	shift 2
	trace-dump --json "$b" > "$d/b.jsonl"
	trace-dump --json "$a" > "$d/a.jsonl"
	python3 "$REF" "$d/b.jsonl" "$d/a.jsonl" > "$d/ref.json"
	trace-diff --json "$@" "$b" "$a" > "$d/ours.json" || [ $? -eq 1 ]
	run python3 "$REF" --compare "$d/ref.json" "$d/ours.json"
	[ "$status" -eq 0 ] || { printf '%s\n' "$output" >&2; return 1; }
}

# verdicts FILE.json TABLE: "verdict<TAB>name" of each row of a table
verdicts() {
	jq -r --arg t "$2" '.groups[] | select(.report == $t) | [.verdict, .name] | @tsv' "$1"
}

@test "one kernel 30 % slower: it alone among the kernels is slower, by 1.30x" {
	d=$BATS_TEST_TMPDIR
	B=$(synth_trace before.tkt $SMALL)
	A=$(synth_trace after.tkt $SMALL --slow flash_bwd=1.3)
	run -1 trace-diff --json "$B" "$A"
	printf '%s\n' "$output" > "$d/diff.json"
	run verdicts "$d/diff.json" kernels
	slower=$(grep -c '^slower' <<< "$output")
	same=$(grep -c '^same' <<< "$output")
	assert_eq "$slower" 1
	[[ "$(grep '^slower' <<< "$output")" == *"flash_bwd_dq_dk_dv_loop"* ]]
	assert_eq "$same" "$(($(wc -l <<< "$output") - 1))"
	# the ratio of medians: every instance is 1.3 times longer, but for
	# truncation to whole nanoseconds
	jq -e '.groups[] | select(.name | startswith("flash_bwd")) |
	       .ratio > 1.2999 and .ratio < 1.3001 and .p_value < 1e-6 and
	       .test == "mann-whitney-exact"' "$d/diff.json"
	# the CPU waits for the GPU: steps and their synchronisation take
	# longer too, and nothing else does
	run verdicts "$d/diff.json" ranges
	assert_eq "$(grep -v '^same' <<< "$output")" "$(printf 'slower\tstep')"
	run verdicts "$d/diff.json" api
	assert_eq "$(grep -v '^same' <<< "$output")" "$(printf 'slower\tcudaStreamSynchronize')"
	check_reference "$B" "$A"
}

@test "every figure agrees with trace-stats to the nanosecond" {
	d=$BATS_TEST_TMPDIR
	B=$(synth_trace before.tkt $SMALL --runs 2)
	A=$(synth_trace after.tkt $SMALL --runs 2 --seed 3 --slow gemm=1.2)
	trace-diff --json "$B" "$A" > "$d/diff.json" || [ $? -eq 1 ]
	trace-stats --json "$B" > "$d/b.json"
	trace-stats --json "$A" > "$d/a.json"
	python3 - "$d/diff.json" "$d/b.json" "$d/a.json" <<'PY'
import json, sys
diff, b, a = (json.load(open(p)) for p in sys.argv[1:])
n = 0
for side, st in (("before", b), ("after", a)):
    rows = {(r["kind"], r.get("domain", ""), r["name"]): r
            for t in ("kernels", "memops", "api", "ranges") for r in st[t]}
    for g in diff["groups"]:
        s = g[side]
        r = rows.get((g["kind"], g["domain"], g["name"]))
        assert (s is None) == (r is None), g["name"]
        if s is None:
            continue
        for k in ("count", "total_ns", "mean_ns", "std_ns", "min_ns", "median_ns",
                  "p95_ns", "p99_ns", "max_ns"):
            assert s[k] == r[k], (side, g["name"], k, s[k], r[k])
            n += 1
        if g["report"] == "memops":
            assert s["bytes"] == r["bytes"]
    # run-wide figures: whole-trace ones equal, per-run ones the mean
    summ = {x["metric"]: x for x in diff["summary"]}
    assert summ["gpu"][side] == sum(x["busy_ns"] for x in st["gpus"])
    assert summ["kernel"]["per_run"] and summ["wall"]["per_run"]
    walls = [x["wall_ns"] for x in st["run"]["runs"]]
    assert abs(summ["wall"][side] - sum(walls) / len(walls)) <= 0.5
    assert summ["cpu"][side] == sum(p["user_ns"] + p["system_ns"] for p in st["processes"])
    assert summ["max_rss"][side] == max(p["max_rss_bytes"] for p in st["processes"])
    assert summ["bytes"][side] == sum(r["bytes"] for r in st["memops"] if r["kind"] == "memcpy")
    assert diff[side]["wall_ns"] == st["run"]["wall_ns"]
    assert diff[side]["run_wall_ns"] == walls
assert n > 300, n
PY
	check_reference "$B" "$A"
}

@test "a kernel added is new, one removed is gone, the reshuffled rest the same" {
	d=$BATS_TEST_TMPDIR
	B=$(synth_trace before.tkt $SMALL)
	A=$(synth_trace after.tkt $SMALL --add my_fused_kernel --remove flash_fwd)
	# the extra kernel shifts every later random draw: the other kernels
	# change by noise alone, which must not be called a change; the
	# backward pass launches one more kernel (+5 %), but that adds 0.03 %
	# to the run: immaterial, not a regression; without flash_fwd the
	# step is faster
	run -0 trace-diff --json "$B" "$A"
	printf '%s\n' "$output" > "$d/diff.json"
	jq -e '.result.checks == []' "$d/diff.json"
	jq -e '.groups[] | select(.name == "backward") | .verdict == "same" and
	       .why == "immaterial" and .ratio > 1.03' "$d/diff.json"
	run verdicts "$d/diff.json" ranges
	[[ "$output" == *$'same\tbackward'* && "$output" == *$'faster\tstep'* ]]
	# what --min-share leaves out: at 0.01 % (and a looser alpha) it counts
	run -1 trace-diff -q --min-share 0.01% --alpha 0.2 "$B" "$A"
	run verdicts "$d/diff.json" kernels
	assert_eq "$(grep '^new' <<< "$output")" "$(printf 'new\tmy_fused_kernel')"
	[[ "$(grep '^gone' <<< "$output")" == "gone	flash_fwd_kernel<"* ]]
	assert_eq "$(grep -c '^gone' <<< "$output")" 1
	assert_eq "$(grep -Evc '^(same|new|gone)' <<< "$output")" 0
	jq -e '.groups[] | select(.verdict == "new") | .before == null and .after.count == 12 and
	       .delta_ns == .after.total_ns and .p_value == null' "$d/diff.json"
	jq -e '.groups[] | select(.verdict == "gone") | .after == null and
	       .delta_ns == -.before.total_ns' "$d/diff.json"
	check_reference "$B" "$A"
}

@test "--speedup 3: about 3x faster; --expect-speedup 2.5 passes, 4 fails" {
	d=$BATS_TEST_TMPDIR
	# repeated runs: the wall time per run leaves out start-up and exit
	B=$(synth_trace before.tkt $SMALL --runs 3)
	A=$(synth_trace after.tkt $SMALL --runs 3 --speedup 3)
	run -0 trace-diff --json "$B" "$A"
	jq -e '.summary[] | select(.metric == "wall") |
	       .per_run and .runs_before == 3 and .speedup > 2.8 and .speedup < 3.2 and
	       .verdict == "faster" and .test == "welch" and .p_value < 0.01' <<< "$output"
	# every kernel faster, but for those too small to matter
	jq -e '[.groups[] | select(.report == "kernels") | .verdict + " " + (.why // "")] |
	       unique == ["faster ", "same immaterial"]' <<< "$output"
	run -0 trace-diff --expect-speedup 2.5 "$B" "$A"
	[[ "${lines[-1]}" =~ ^\ \ pass\ \ expected\ 2.5x\ faster\ on\ wall:\ 2\.[89][0-9]x\ faster$ ]]
	run -1 trace-diff --expect-speedup 4 "$B" "$A"
	[[ "${lines[-1]}" == "  FAIL  expected 4x faster on wall: "*"x faster" ]]
	# one run each: start-up counts in the wall time; kernels alone are 3x
	B1=$(synth_trace b1.tkt $SMALL)
	A1=$(synth_trace a1.tkt $SMALL --speedup 3)
	run -1 trace-diff -q --expect-speedup 2.5 "$B1" "$A1"
	run -0 trace-diff -q --expect-speedup 2.5 --metric kernel "$B1" "$A1"
	run -0 trace-diff -q --expect-speedup 2.5 --metric gpu "$B1" "$A1"
	run -1 trace-diff -q --expect-speedup 4 --metric kernel "$B1" "$A1"
	run -0 trace-diff --json --metric kernel "$B1" "$A1"
	jq -e '.summary[] | select(.metric == "kernel") | .speedup > 2.99 and .speedup < 3.01' <<< "$output"
}

@test "pure noise across many seeds: false faster/slower verdicts at most alpha" {
	d=$BATS_TEST_TMPDIR
	n=40
	under_valgrind && n=3
	for s in $(seq 1 $n); do
		synth --steps 8 --layers 2 --seed "$s" -o "$d/b.tkt"
		synth --steps 8 --layers 2 --seed $((s + 1000)) -o "$d/a.tkt"
		trace-diff --json "$d/b.tkt" "$d/a.tkt" > "$d/default.$s.json" || [ $? -eq 1 ]
		# the test alone at a loose level, without threshold and materiality
		trace-diff --json --threshold 0 --min-share 0 --alpha 0.5 "$d/b.tkt" "$d/a.tkt" \
			> "$d/raw.$s.json" || [ $? -eq 1 ]
	done
	count() {
		cat "$d"/"$1".*.json | jq -s '[.[].groups[] | select(.before and .after)] |
			[length, (map(select(.verdict == "faster" or .verdict == "slower")) | length)] |
			@tsv' -r
	}
	read -r tests changes < <(count default)
	read -r tests0 changes0 < <(count raw)
	echo "# $changes false changes in $tests comparisons; $changes0 without the threshold" >&3
	[ "$tests" -ge $((n * 30)) ]
	# at most alpha = 0.01 of all comparisons
	[ $((changes * 100)) -le "$tests" ]
	# the count can fail: the test alone at alpha 0.5 calls some of them
	# changes, and more than with the rule
	under_valgrind || [ "$changes0" -gt 0 ]
	[ "$changes0" -ge "$changes" ]
}

@test "repeated runs: the runs are compared too, with Welch's t-test" {
	d=$BATS_TEST_TMPDIR
	B=$(synth_trace before.tkt --steps 4 --layers 2 --runs 3)
	A=$(synth_trace after.tkt --steps 4 --layers 2 --runs 3 --seed 8 --slow flash_bwd=1.3)
	run -1 trace-diff --json "$B" "$A"
	jq -e '.runs and (.groups[] | select(.name | startswith("flash_bwd")) |
	       .verdict == "slower" and .runs_test == "welch" and .runs_p_value < 0.01 and
	       (.before.run_total_ns | length) == 3)' <<< "$output"
	check_reference "$B" "$A"
	# a difference within one run that the runs do not repeat: with one
	# run per trace the instances alone decide; with runs, they must agree
	run -0 trace-diff --json "$B" "$(synth_trace b2.tkt --steps 4 --layers 2 --runs 3 --seed 9)"
	jq -e '[.groups[] | select(.verdict == "faster" or .verdict == "slower")] | length == 0' <<< "$output"
}

@test "a trace-record --repeat recording is compared run by run" {
	command -v trace-record > /dev/null || skip "trace-record is not built"
	under_valgrind && skip "recording under valgrind takes too long"
	d=$BATS_TEST_TMPDIR
	loop='i=0; while [ $i -lt "$0" ]; do i=$((i + 1)); done'
	trace-record --repeat 6 -o "$d/a.tkt" -- sh -c "$loop" 20000 2> /dev/null
	trace-record --repeat 6 -o "$d/b.tkt" -- sh -c "$loop" 80000 2> /dev/null
	run trace-diff --json "$d/a.tkt" "$d/b.tkt"
	[ "$status" -le 1 ]
	# four times the work per run; run times vary on a shared machine,
	# so only what cannot: the runs found, tested, at least 2x slower
	jq -e '.runs and (.summary[0] | .metric == "wall" and .per_run and
	       .runs_before == 6 and .runs_after == 6 and .test == "welch" and
	       .ratio > 2)' <<< "$output"
	assert_eq "$(jq '.before.run_wall_ns | length' <<< "$output")" 6
	run -0 trace-diff -q --expect-speedup 2 "$d/b.tkt" "$d/a.tkt"
	run -1 trace-diff -q --expect-speedup 10 "$d/b.tkt" "$d/a.tkt"
}

@test "exit status: 0 without, 1 with a regression; -q prints nothing" {
	B=$(synth_trace before.tkt $SMALL)
	S=$(synth_trace slow.tkt $SMALL --slow flash_bwd=1.3)
	F=$(synth_trace fast.tkt $SMALL --slow flash_bwd=0.7)
	run -0 --separate-stderr trace-diff -q "$B" "$B"
	assert_eq "$output$stderr" ""
	run -1 --separate-stderr trace-diff -q "$B" "$S"
	assert_eq "$output$stderr" ""
	run -0 trace-diff -q "$B" "$F"
	run -0 trace-diff -q "$S" "$B"
	if trace-diff -q "$B" "$S"; then false; fi
	# a smaller change than the threshold is not a regression
	run -0 trace-diff -q --threshold 40% "$B" "$S"
	# the result names what failed
	run -1 trace-diff "$B" "$S"
	[[ "$output" == *"Result"*"  FAIL  slower beyond 3% (p < 0.01): kernel flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<"*"1.30x slower"* ]]
	run -0 trace-diff "$B" "$F"
	assert_eq "${lines[-1]}" "  no significant regression beyond 3% (p < 0.01)"
	# JSON says the same
	run -1 trace-diff --json "$B" "$S"
	jq -e '.result.status == 1 and ([.result.checks[] | select(.pass | not) | .subject] |
	       any(startswith("flash_bwd")))' <<< "$output"
}

@test "--fail-if-slower: on the --metric, or on each operation --name keeps" {
	B=$(synth_trace before.tkt $SMALL)
	S=$(synth_trace slow.tkt $SMALL --slow flash_bwd=1.3)
	# the wall time grows by a few percent only
	w=$(trace-diff --json "$B" "$S" | jq '.summary[] | select(.metric == "wall") | .ratio')
	python3 -c "import sys; r = float(sys.argv[1]); sys.exit(not 1.01 < r < 1.2)" "$w"
	run -0 trace-diff -q --fail-if-slower 20% "$B" "$S"
	run -1 trace-diff -q --fail-if-slower 1% "$B" "$S"
	run -1 trace-diff --fail-if-slower 1% "$B" "$S"
	[[ "${lines[-1]}" == "  FAIL  at most 1% slower on wall: +"*"%" ]]
	# kernels: 30 % of flash_bwd's share
	run -1 trace-diff -q --fail-if-slower 2% --metric kernel "$B" "$S"
	run -0 trace-diff -q --fail-if-slower 30% --metric kernel "$B" "$S"
	# the operations --name keeps, each one: 30 % slower
	run -1 trace-diff -q --name flash --fail-if-slower 25% "$B" "$S"
	run -0 trace-diff -q --name flash --fail-if-slower 35% "$B" "$S"
	run -0 trace-diff -q --name flash_fwd --fail-if-slower 5% "$B" "$S"
	run -1 trace-diff --json --name flash --fail-if-slower 25% "$B" "$S"
	jq -e '[.result.checks[] | {type, pass, f: (.subject | startswith("flash_bwd"))}] ==
	       [{type: "fail-if-slower", pass: false, f: true},
	        {type: "fail-if-slower", pass: true, f: false}]' <<< "$output"
	# --name with --metric: the metric over what --name keeps
	run -0 trace-diff -q --name flash_fwd --metric kernel --fail-if-slower 5% "$B" "$S"
	run -1 trace-diff -q --name flash_bwd --metric kernel --fail-if-slower 5% "$B" "$S"
	# a metric neither trace has is an error
	run -2 --separate-stderr trace-diff --kind kernel --name nothing_matches --metric gpu \
		--fail-if-slower 5% "$B" "$S"
	assert_eq "$stderr" "trace-diff: --fail-if-slower: no gpu time in either trace"
}

@test "CSV: one row per operation, parsed by python's csv, same figures as JSON" {
	d=$BATS_TEST_TMPDIR
	B=$(synth_trace before.tkt $SMALL)
	A=$(synth_trace after.tkt $SMALL --slow flash_bwd=1.3 --add extra_kernel)
	run -1 trace-diff --csv "$B" "$A"
	printf '%s\n' "$output" > "$d/ops.csv"
	assert_eq "${lines[0]}" "report,kind,domain,name,verdict,count_before,count_after,total_before_ns,total_after_ns,delta_ns,mean_before_ns,mean_after_ns,std_before_ns,std_after_ns,min_before_ns,min_after_ns,median_before_ns,median_after_ns,p95_before_ns,p95_after_ns,p99_before_ns,p99_after_ns,max_before_ns,max_after_ns,ratio,speedup,change_pct,test,p_value,runs_p_value,bytes_before,bytes_after,p_holm,evidence,calls,why,runs_count_p_value"
	trace-diff --json "$B" "$A" > "$d/diff.json" || true
	python3 - "$d/ops.csv" "$d/diff.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
groups = json.load(open(sys.argv[2]))["groups"]
assert len(rows) == len(groups), (len(rows), len(groups))
for r, g in zip(rows, groups):
    assert (r["report"], r["kind"], r["name"], r["verdict"]) == \
           (g["report"], g["kind"], g["name"], g["verdict"]), (r["name"], g["name"])
    for side in ("before", "after"):
        for k in ("count", "total_ns", "median_ns", "p95_ns", "max_ns"):
            col = k.replace("_ns", "") + "_" + side + ("_ns" if k.endswith("_ns") else "")
            want = "" if g[side] is None else str(g[side][k])
            assert r[col] == want, (r["name"], col, r[col], want)
    assert int(r["delta_ns"]) == g["delta_ns"]
    if g["p_value"] is None:
        assert r["p_value"] == "" and r["ratio"] == ""
    else:
        assert abs(float(r["p_value"]) - g["p_value"]) <= 1e-5 * g["p_value"]
        assert abs(float(r["ratio"]) - g["ratio"]) <= 1e-5 * g["ratio"]
        assert abs(float(r["change_pct"]) - (g["ratio"] - 1) * 100) < 1e-3
# names with commas are quoted, never cut
assert any("," in r["name"] and len(r["name"]) > 150 for r in rows)
assert [r["verdict"] for r in rows if r["name"] == "extra_kernel"] == ["new"]
PY
	# --report summary: its own table first, then the operations
	run -1 trace-diff --csv --report summary,groups "$B" "$A"
	assert_eq "${lines[0]}" "report,metric,device,unit,before,after,delta,ratio,speedup,change_pct,verdict,runs_before,runs_after,sd_before,sd_after,test,p_value"
	[[ "${lines[1]}" == "summary,wall,,ns,"* ]]
	[[ "$output" == *$'\n\nreport,kind,domain,name,'* ]]
}

@test "JSON: stable schema, integer nanoseconds, null where nothing exists" {
	B=$(synth_trace before.tkt $SMALL)
	A=$(synth_trace after.tkt $SMALL --add extra_kernel)
	# (the backward pass is slower by the extra launch, immaterially)
	run -0 trace-diff --json "$B" "$A"
	assert_eq "$(jq -c 'keys_unsorted' <<< "$output")" \
		'["schema","before","after","threshold","alpha","min_share","normalize","metric","runs","resolution_ns","tested","warnings","summary","explain","groups","result"]'
	assert_eq "$(jq -r '.schema' <<< "$output")" "tracekit-diff/1"
	assert_eq "$(jq -c '.before | keys_unsorted' <<< "$output")" \
		'["input","files","summary","wall_ns","events","dropped","processes","run_wall_ns","metadata"]'
	assert_eq "$(jq -c '.summary[0] | keys_unsorted' <<< "$output")" \
		'["metric","device","unit","before","after","delta","ratio","speedup","per_run","runs_before","runs_after","sd_before","sd_after","test","p_value","verdict"]'
	assert_eq "$(jq -c '.groups[0] | keys_unsorted' <<< "$output")" \
		'["report","kind","domain","name","verdict","before","after","delta_ns","ratio","speedup","change_pct","test","p_value","runs_test","runs_p_value","runs_count_p_value","p_holm","evidence","calls","why"]'
	assert_eq "$(jq -c '[.groups[] | select(.before) | .before | keys_unsorted] | unique' <<< "$output")" \
		'[["count","total_ns","mean_ns","std_ns","min_ns","median_ns","p95_ns","p99_ns","max_ns"],["count","total_ns","mean_ns","std_ns","min_ns","median_ns","p95_ns","p99_ns","max_ns","bytes"]]'
	assert_eq "$(jq -c '[.summary[].metric]' <<< "$output")" \
		'["wall","cpu","gpu","kernel","copy","api","bytes","max_rss","device_memory"]'
	# integers where the schema says ns; verdicts from the documented set
	jq -e '[.groups[] | .before, .after | select(.) | .[]] | all(. == floor)' <<< "$output"
	jq -e '[.groups[].verdict] - ["same","faster","slower","unsure","new","gone"] == []' <<< "$output"
	jq -e '.groups[] | select(.verdict == "new") | .ratio == null and .test == null' <<< "$output"
	jq -e '.result | keys_unsorted == ["status", "checks"]' <<< "$output"
	jq -e '[.groups[] | select(.before and .after) | .evidence] | unique == ["instances"]' <<< "$output"
	run -1 trace-diff --json "$B" "$(synth_trace slow.tkt $SMALL --slow gemm=2)"
	jq -e '.result.status == 1 and (.result.checks | length > 0) and
	       ([.result.checks[] | keys_unsorted] | unique ==
	        [["type","subject","kind","value","limit","pass"]])' <<< "$output"
}

@test "Markdown: GitHub tables with the same number of cells in every row" {
	d=$BATS_TEST_TMPDIR
	B=$(synth_trace before.tkt $SMALL --add 'odd|name`x')
	A=$(synth_trace after.tkt $SMALL --add 'odd|name`x' --slow flash_bwd=1.3)
	run -1 trace-diff --markdown "$B" "$A"
	printf '%s\n' "$output" > "$d/out.md"
	assert_eq "${lines[0]}" "### trace-diff: \`$B\` → \`$A\`"
	assert_eq "${lines[1]}" "**3 checks failed**"
	[[ "${lines[2]}" == "- **FAIL** slower beyond 3 % on kernel \`flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<"*"\`: 1.30x slower" ]]
	python3 - "$d/out.md" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
def cells(line):
    # split on pipes that are not escaped
    return len(re.findall(r"(?<!\\)\|", line)) - 1
tables, cur = [], None
for line in lines:
    if line.startswith("|"):
        if cur is None:
            cur = []
            tables.append(cur)
        cur.append(line)
    else:
        cur = None
assert len(tables) >= 6, len(tables)
for t in tables:
    n = cells(t[0])
    assert re.fullmatch(r"\|(:?-+:?\|)+", t[1]), t[1]
    assert all(cells(r) == n for r in t), t[0]
text = "\n".join(lines)
assert "| **slower** | 1.30x slower |" in text
assert "| same | no change | 0 ns | 12 | " in text
assert "`` odd\\|name`x `` |" in text, "a name with | and ` stays one cell"
assert "<details><summary>" in text and "</details>" in text
PY
}

@test "text: one aligned table per kind, largest change in time first" {
	d=$BATS_TEST_TMPDIR
	B=$(synth_trace before.tkt $SMALL)
	A=$(synth_trace after.tkt $SMALL --slow flash_bwd=1.3 --slow nccl=0.5 --remove SoftMax)
	run -1 env COLUMNS=300 trace-diff "$B" "$A"
	printf '%s\n' "$output" > "$d/out.txt"
	wall=$(trace-stats "$B" | awk '$1 == "wall" { print $2, $3 }')
	assert_eq "${lines[0]}" "Before  $B: wall $wall, $(trace-dump "$B" | wc -l) events"
	assert_eq "${lines[2]}" "Command python3 train.py --model gpt-small --batch-size 32"
	[[ "$output" == *$'\nSummary\n  Metric  '* ]]
	[[ "$output" == *$'\nGPU kernels: 1 slower, 1 faster, 18 same, 2 gone (22 groups, '* ]]
	python3 - "$d/out.txt" <<'PY'
import sys
text = open(sys.argv[1]).read()
block = text.split("\nGPU kernels:")[1].split("\n\n")[0].split("\n")[1:]
head, rows = block[0], block[1:]
assert len(rows) == 22, len(rows)
# right-aligned numbers: each Delta ends where its title does
start = head.index("Change") + len("Change")
end = head.index("Delta") + len("Delta")
units = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
vals = []
for r in rows:
    assert r[end] == " " and r[start:start + 2] == "  ", r
    v, u = r[start:end].split()
    vals.append(abs(float(v)) * units[u])
# sorted by the absolute change in time, largest first
assert vals == sorted(vals, reverse=True), vals
assert rows[0].startswith("  slower ") or rows[0].startswith("  faster "), rows[0]
PY
}

@test "--normalize matches renamed instantiations and says which names it merged" {
	d=$BATS_TEST_TMPDIR
	B=$(synth_trace before.tkt $SMALL --add triton_poi_fused_add_0 --add 'fused<128>(int)')
	A=$(synth_trace after.tkt $SMALL --add triton_poi_fused_add_7 --add 'fused<64>(int)')
	run -0 trace-diff --json "$B" "$A"
	assert_eq "$(verdicts /dev/stdin kernels <<< "$output" | grep -Ec '^(new|gone)')" 4
	run -0 trace-diff --json --normalize "$B" "$A"
	printf '%s\n' "$output" > "$d/n.json"
	jq -e '.normalize' "$d/n.json"
	run verdicts "$d/n.json" kernels
	[[ "$output" == *$'same\ttriton_poi_fused_add_N'* ]]
	[[ "$output" == *$'same\tfused<...>(int)'* ]]
	run -1 grep -E '^(new|gone)' <<< "$output"
	jq -e '.groups[] | select(.name == "triton_poi_fused_add_N") |
	       .before.names == ["triton_poi_fused_add_0"] and .after.names == ["triton_poi_fused_add_7"]' "$d/n.json"
	# two names of one trace that normalize alike are one row: counts add up
	M=$(synth_trace merged.tkt $SMALL --add kernel_1 --add kernel_2)
	run -0 trace-diff --json --normalize --kind kernel "$B" "$M"
	jq -e '.groups[] | select(.name == "kernel_N") | .verdict == "new" and .after.count == 24 and
	       (.after.names | sort) == ["kernel_1", "kernel_2"]' <<< "$output"
	assert_eq "$(jq '[.groups[] | select(.report != "kernels")] | length' <<< "$output")" 0
	# ranges normalize too: layer.0 and layer.1 are one row of 24
	run -0 trace-diff --json --normalize "$B" "$A"
	jq -e '.groups[] | select(.name == "layer.N") | .before.count == 24' <<< "$output"
}

@test "--kind, --name, --exclude and --top choose what is compared and shown" {
	B=$(synth_trace before.tkt $SMALL)
	A=$(synth_trace after.tkt $SMALL --slow flash_bwd=1.3)
	run -1 trace-diff --json --kind kernel,api "$B" "$A"
	assert_eq "$(jq -c '[.groups[].report] | unique' <<< "$output")" '["api","kernels"]'
	run -0 trace-diff --json --kind range --name '^layer' "$B" "$A"
	assert_eq "$(jq -c '[.groups[].name]' <<< "$output")" '["layer.0","layer.1"]'
	run -1 trace-diff --json --name flash --exclude fwd "$B" "$A"
	assert_eq "$(jq -r '.groups[].name | .[0:9]' <<< "$output")" "flash_bwd"
	run -1 trace-diff --top 2 --kind kernel "$B" "$A"
	[[ "$output" == *$'\n  ... 20 more\n'* ]]
	run -1 trace-diff --json --top 1 "$B" "$A"
	assert_eq "$(jq -c '[.groups[].report]' <<< "$output")" '["kernels","memops","api","ranges"]'
	# the time window is each trace's own
	run -0 trace-diff --json --from 0.2s --to 0.25s --kind range --name step "$B" "$A"
	jq -e '.groups[0].before.count < 12 and .groups[0].before.count > 0' <<< "$output"
}

@test "stdin and pipes are read, once each" {
	B=$(synth_trace before.tkt $SMALL --runs 2)
	A=$(synth_trace after.tkt $SMALL --runs 2 --slow flash_bwd=1.3)
	want=$(trace-diff --json "$B" "$A" | jq -c '.groups, .summary')
	run -1 bash -c "trace-diff --json '$B' - < '$A'"
	assert_eq "$(jq -c '.groups, .summary' <<< "$output")" "$want"
	run -1 bash -c "cat '$B' | trace-diff --json - '$A'"
	assert_eq "$(jq -c '.groups, .summary' <<< "$output")" "$want"
	assert_eq "$(jq -r '.before.input' <<< "$output")" "(stdin)"
	# pipes cannot be read twice either, as from <(zcat run.tkt.gz)
	run -1 bash -c "trace-diff --json <(cat '$B') <(cat '$A')"
	assert_eq "$(jq -c '.groups, .summary' <<< "$output")" "$want"
	jq -e '.runs' <<< "$output"
}

@test "--help names every option; the man page documents each" {
	run -0 trace-diff --help
	[[ "${lines[0]}" == "Usage: trace-diff [OPTIONS] BEFORE AFTER" ]]
	opts=$(printf '%s\n' "$output" | grep -oE '^ +(-[a-zA-Z], )?--[a-z-]+' | grep -oE -- '--[a-z-]+' | sort -u)
	[ "$(printf '%s\n' "$opts" | wc -l)" -ge 20 ]
	for o in $opts; do
		grep -q -- "Fl Fl ${o#--}" "$TK_SRC/man/trace-diff.1" || { echo "$o not in man page" >&2; false; }
	done
	run -0 trace-diff --version
	[[ "$output" =~ ^trace-diff\ \(tracekit\)\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
}

@test "usage errors: one line and exit 2" {
	B=$(synth_trace before.tkt --steps 2)
	try="Try 'trace-diff --help' for more information."
	run -2 --separate-stderr trace-diff "$B"
	assert_eq "$stderr" "trace-diff: needs two traces: BEFORE AFTER (or BEFORE... -- AFTER...)"$'\n'"$try"
	run -2 --separate-stderr trace-diff "$B" "$B" "$B"
	assert_eq "$stderr" "trace-diff: compares exactly two traces: BEFORE AFTER (or BEFORE... -- AFTER...)"$'\n'"$try"
	run -2 --separate-stderr trace-diff - -
	assert_eq "${stderr%%$'\n'*}" "trace-diff: only one of BEFORE and AFTER can be standard input"
	for bad in "--threshold x" "--threshold -5%" "--alpha 0" "--alpha 1" "--alpha x" \
	           "--metric speed" "--kind counter" "--kind bogus" "--top 0" \
	           "--fail-if-slower fast" "--expect-speedup 0" "--report everything" \
	           "--name (" "--from 2s --to 1s" "--bogus" "-Z"; do
		run -2 --separate-stderr trace-diff $bad "$B" "$B"
		assert_eq "$output" ""
		[[ "$stderr" == "trace-diff: "*$'\n'"$try" ]] || { echo "$bad: $stderr"; false; }
	done
	run -2 --separate-stderr trace-diff --metric speed "$B" "$B"
	assert_eq "${stderr%%$'\n'*}" "trace-diff: invalid --metric 'speed' (wall, gpu, kernel, copy, api or cpu)"
	run -2 --separate-stderr trace-diff --alpha 2 "$B" "$B"
	assert_eq "${stderr%%$'\n'*}" "trace-diff: invalid --alpha '2' (between 0 and 1)"
}

@test "--alpha: the Mann-Whitney p-value a change must be below" {
	d=$BATS_TEST_TMPDIR
	# 4 instances before, 4 after, every one slower: the exact two-sided
	# p-value is 2 / C(8, 4), 0.0286; the medians double
	python3 "$BATS_TEST_DIRNAME/findings_trace.py" kernel:k:1000,1010,1020,1030 | mktrace > "$d/b.tkt"
	python3 "$BATS_TEST_DIRNAME/findings_trace.py" kernel:k:2000,2010,2020,2030 | mktrace > "$d/a.tkt"
	p=$(python3 -c 'import math; print(2 / math.comb(8, 4))')
	kernel() { jq -r --argjson p "$p" '.alpha as $a | .groups[] | select(.report == "kernels")
		| "\($a) \(.verdict) \((.p_value - $p | fabs) < 1e-9)"' "$d/o.json"; }
	trace-diff --json "$d/b.tkt" "$d/a.tkt" > "$d/o.json" || [ $? -eq 1 ]
	assert_eq "$(kernel)" "0.01 unsure true"
	trace-diff --json --alpha 0.05 "$d/b.tkt" "$d/a.tkt" > "$d/o.json" || [ $? -eq 1 ]
	assert_eq "$(kernel)" "0.05 slower true"
	# either side of p
	trace-diff --json --alpha 0.0286 "$d/b.tkt" "$d/a.tkt" > "$d/o.json" || [ $? -eq 1 ]
	assert_eq "$(kernel)" "0.0286 slower true"
	trace-diff --json --alpha 0.0285 "$d/b.tkt" "$d/a.tkt" > "$d/o.json" || [ $? -eq 1 ]
	assert_eq "$(kernel)" "0.0285 unsure true"
	# the text says the rule
	run -1 trace-diff --alpha 0.05 "$d/b.tkt" "$d/a.tkt"
	[[ "$output" == *"Rule    faster or slower: the median (the time in all when the count changes) moves by more than 3%, by at least 1% of its kind's time, and Mann-Whitney U over the instances gives p < 0.05, Holm-adjusted over the 1 operations tested"* ]]
}

@test "bad input: one line naming the file, exit 2 (1 means a regression), nothing printed" {
	d=$BATS_TEST_TMPDIR
	B=$(synth_trace before.tkt $SMALL)
	: > "$d/empty.tkt"
	run -2 --separate-stderr trace-diff "$B" "$d/empty.tkt"
	assert_eq "$stderr" "trace-diff: $d/empty.tkt: empty input (not a trace)"
	assert_eq "$output" ""
	printf '\211PNG\r\n\032\n\0\0\0\rIHDR' > "$d/png.tkt"
	run -2 --separate-stderr trace-diff "$d/png.tkt" "$B"
	assert_eq "$stderr" "trace-diff: $d/png.tkt: not a tracekit trace, Chrome JSON or Nsight Systems SQLite export (first bytes 89 50 4e 47)"
	run -2 --separate-stderr trace-diff "$B" "$d/missing.tkt"
	assert_eq "$stderr" "trace-diff: $d/missing.tkt: No such file or directory"
	run -2 --separate-stderr trace-diff "$d" "$B"
	assert_eq "$stderr" "trace-diff: $d: read error at byte 0: Is a directory"
	# both are reported, in order
	run -2 --separate-stderr trace-diff "$d/missing.tkt" "$d/empty.tkt"
	assert_eq "$stderr" "trace-diff: $d/missing.tkt: No such file or directory"$'\n'"trace-diff: $d/empty.tkt: empty input (not a trace)"
	# -q hides the output, never the reason for a failure
	run -2 --separate-stderr trace-diff -q "$B" "$d/missing.tkt"
	assert_eq "$stderr" "trace-diff: $d/missing.tkt: No such file or directory"
	# a truncated trace is not compared: its missing end would look faster
	S=$(synth_trace big.tkt -n 60000 --chunk-bytes 65536)
	size=$(stat -c %s "$S")
	head -c $((size / 2)) "$S" > "$d/half.tkt"
	run -2 --separate-stderr trace-diff "$S" "$d/half.tkt"
	[[ "$stderr" =~ ^trace-diff:\ .*/half.tkt:\ truncated\ chunk\ at\ byte\ [0-9]+$ ]]
	assert_eq "$output" ""
	cp "$S" "$d/bad.tkt"
	printf '\xff' | dd of="$d/bad.tkt" bs=1 seek=300 conv=notrunc 2>/dev/null
	run -2 --separate-stderr trace-diff "$d/bad.tkt" "$S"
	assert_eq "$stderr" "trace-diff: $d/bad.tkt: corrupt chunk at byte 36 (checksum mismatch)"
	# truncated runs, read twice, are refused as well
	R=$(synth_trace runs.tkt --steps 30 --runs 2 --chunk-bytes 16384)
	head -c $(($(stat -c %s "$R") / 2)) "$R" > "$d/rhalf.tkt"
	run -2 --separate-stderr trace-diff "$R" "$d/rhalf.tkt"
	[[ "$stderr" =~ ^trace-diff:\ .*/rhalf.tkt:\ truncated\ chunk\ at\ byte\ [0-9]+$ ]]
}

@test "dropped events are reported next to the figures they lower" {
	d=$BATS_TEST_TMPDIR
	B=$(synth_trace before.tkt $SMALL)
	# a trace plus a trace holding a drop record: cat makes one input
	printf '%s\n' '{"def":"process","ref":"p","pid":4242,"host":"synth-host","argv":["python3"]}' \
		'{"kind":"dropped","track":"p","ts":1700000000000000000,"count":1234,"reason":"buffer full"}' |
		mktrace > "$d/drop.tkt"
	cat "$B" "$d/drop.tkt" > "$d/after.tkt"
	run -0 trace-diff --json "$B" "$d/after.tkt"
	dropped=$(jq '.after.dropped' <<< "$output")
	assert_eq "$dropped" 1234
	run -0 trace-diff "$B" "$d/after.tkt"
	[[ "${lines[2]}" == "        the recorder dropped $dropped events: these figures are low" ]]
}

@test "a closed pipe ends the output quietly" {
	B=$(synth_trace before.tkt --steps 40)
	A=$(synth_trace after.tkt --steps 40 --slow gemm=2)
	run -0 --separate-stderr bash -c "trace-diff --csv '$B' '$A' | head -1"
	assert_eq "$stderr" ""
	run -0 --separate-stderr bash -c "trace-diff '$B' '$A' | head -1"
	assert_eq "$stderr" ""
}

@test "a full disk is an error (ENOSPC)" {
	require_dev_full
	B=$(synth_trace before.tkt $SMALL)
	run -2 --separate-stderr bash -c "trace-diff '$B' '$B' > /dev/full"
	assert_eq "$stderr" "trace-diff: write error: No space left on device"
	run -2 --separate-stderr bash -c "trace-diff --json '$B' '$B' > /dev/full"
	assert_eq "$stderr" "trace-diff: write error: No space left on device"
}

@test "real traces: HTA's own diff pair, figures from the source JSON" {
	command -v trace-import > /dev/null ||
		skip "trace-import is not built yet: real-trace checks start when it lands"
	d=$BATS_TEST_TMPDIR
	shared_data hta/trace_diff/control/control.json.gz ctl
	shared_data hta/trace_diff/test/test.json.gz tst
	trace-import -o "$d/control.tkt" "$ctl"
	trace-import -o "$d/test.tkt" "$tst"
	# an A100 against a V100 with another model: much is slower
	run -1 trace-diff --json --kind kernel "$d/control.tkt" "$d/test.tkt"
	printf '%s\n' "$output" > "$d/diff.json"
	python3 - "$d/diff.json" "$ctl" "$tst" <<'PY'
import gzip, json, sys
diff = json.load(open(sys.argv[1]))
def kernels(path):
    out = {}
    for e in json.load(gzip.open(path))["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "Kernel"):
            c = out.setdefault(e["name"], [0, 0])
            c[0] += 1
            c[1] += e["dur"]
    return out
b, a = kernels(sys.argv[2]), kernels(sys.argv[3])
got = {g["name"]: g for g in diff["groups"]}
assert set(got) == set(b) | set(a), set(got) ^ (set(b) | set(a))
for name, g in got.items():
    assert (g["verdict"] == "new") == (name not in b), name
    assert (g["verdict"] == "gone") == (name not in a), name
    for side, ref in (("before", b), ("after", a)):
        if name in ref:
            assert g[side]["count"] == ref[name][0], name
            # microseconds in the source: each instance within 1 ns
            assert abs(g[side]["total_ns"] - ref[name][1] * 1000) <= ref[name][0], name
PY
	# the same trace against itself: nothing changed
	run -0 trace-diff --json "$d/control.tkt" "$d/control.tkt"
	jq -e '[.groups[].verdict] | unique == ["same"]' <<< "$output"
}
