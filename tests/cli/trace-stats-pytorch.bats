#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-stats on PyTorch profiler traces (issue 19): steps found and
# matched as a series, their breakdown, the operator view, the tables'
# totals in JSON and CSV, tables that fit COLUMNS, usage at a terminal.
# Figures are checked against pytorch_reference.py, which reads the
# profiler's JSON itself.

load helpers

REF="$BATS_TEST_DIRNAME/pytorch_reference.py"

# import SOURCE: the imported trace's path on stdout
import() {
	local out="$BATS_TEST_TMPDIR/$(basename "$1").tkt"
	trace-import -o "$out" "$1" || return 1
	printf '%s\n' "$out"
}

@test "every trace of the test data: steps, their kernel time and breakdown, self times, kernel totals match the JSON" {
	[ -d "$TK_SHARED/testdata" ] || skip "real test data not found: $TK_SHARED/testdata"
	d=$BATS_TEST_TMPDIR
	n=0 steps=0 ops=0
	while IFS= read -r f; do
		t=$(import "$f")
		trace-stats --json --steps --operators -r all "$t" > "$d/ours.json"
		python3 "$REF" "$f" > "$d/ref.json"
		run python3 "$REF" --compare "$d/ref.json" "$d/ours.json"
		[ "$status" -eq 0 ] || { echo "$f: $output" >&2; false; }
		n=$((n + 1))
		steps=$((steps + $(jq '.steps | length' "$d/ref.json")))
		ops=$((ops + $(jq '.operators | length' "$d/ref.json")))
		# under valgrind or the sanitizers, the smallest few only: the
		# plain build's run compares every trace
		if under_valgrind || under_sanitizers; then
			[ "$n" -lt 4 ] || break
		fi
	done < <(find "$TK_SHARED/testdata" -type f \( -name '*.json' -o -name '*.json.gz' -o -name '*_gz.gz' \) |
	         xargs ls -S -r)
	echo "# $n traces, $steps steps, $ops operator rows compared" >&3
	if under_valgrind || under_sanitizers; then
		[ "$n" -eq 4 ]
	else
		[ "$n" -ge 30 ] && [ "$steps" -ge 40 ] && [ "$ops" -ge 1000 ]
	fi
}

@test "the reference comparison can fail: one nanosecond off is caught" {
	shared_data hta/trace_diff/control/control.json.gz F
	d=$BATS_TEST_TMPDIR
	t=$(import "$F")
	trace-stats --json --steps --operators -r all "$t" > "$d/ours.json"
	python3 "$REF" "$F" > "$d/ref.json"
	python3 "$REF" --compare "$d/ref.json" "$d/ours.json"
	for cut in '.steps.instances[2].breakdown.cpu += 1' '.steps.instances[0].kernel_ns += 1' \
	           '.steps.instances[5].dur_ns -= 1' '.operators[3].self_ns += 1' \
	           '.operators[7].gpu_self_ns += 1' '.totals.kernels.total_ns += 1' \
	           'del(.operators)' 'del(.steps)' '.steps.instances |= .[1:]' \
	           '.steps.whole_input = true' '.per.gpu_outside.count += 1'; do
		jq "$cut" "$d/ours.json" > "$d/bad.json"
		run python3 "$REF" --compare "$d/ref.json" "$d/bad.json"
		[ "$status" -eq 1 ] || { echo "$cut not caught" >&2; false; }
	done
	# a trace with no ProfilerStep#N: its capture range's step
	shared_data hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz G
	t=$(import "$G")
	trace-stats --json --steps --operators -r all "$t" > "$d/ours.json"
	python3 "$REF" "$G" > "$d/ref.json"
	python3 "$REF" --compare "$d/ref.json" "$d/ours.json"
	for cut in '.steps.whole_input = false' '.steps.instances[0].copy_ns -= 1' \
	           '.steps.instances[0].api_ns += 1' '.per.gpu_no_launch.total_ns += 1'; do
		jq "$cut" "$d/ours.json" > "$d/bad.json"
		run python3 "$REF" --compare "$d/ref.json" "$d/bad.json"
		[ "$status" -eq 1 ] || { echo "$cut not caught" >&2; false; }
	done
}

@test "--per ProfilerStep takes every ProfilerStep#N, as trace-diff --normalize matches them" {
	shared_data hta/trace_diff/control/control.json.gz F
	t=$(import "$F")
	want=$(python3 -c '
import gzip, json, re, sys
ev = json.load(gzip.open(sys.argv[1], "rt"))["traceEvents"]
print(sum(1 for e in ev if e.get("ph") == "X" and e.get("cat") != "gpu_user_annotation"
          and re.fullmatch(r"ProfilerStep#[0-9]+", e.get("name", ""))))' "$F")
	[ "$want" -ge 5 ]
	for name in ProfilerStep 'ProfilerStep#1009' 'ProfilerStep#N'; do
		run -0 trace-stats --per "$name" --report run --no-findings "$t"
		[[ "$output" == *"Per instance of range \"$name\": $want instances"* ]]
		assert_eq "$(trace-stats --json --per "$name" --report run "$t" | jq '.steps.instances | length')" "$want"
	done
	# --steps finds the same series
	run -0 trace-stats --steps --report run --no-findings "$t"
	[[ "$output" == *'Per instance of range "ProfilerStep#N": '"$want instances"* ]]
	# a name that is no series still matches only itself
	run -0 trace-stats --per ProfilerSte --report run "$t"
	[[ "$output" == *'"ProfilerSte": 0 instances'* ]]
}

@test "--steps: NVTX ranges named step or iteration, else the capture range; GPU mirrors are no steps" {
	T=$(synth_trace run.tkt --steps 4 --layers 1)
	run -0 trace-stats --steps --json --report run "$T"
	assert_eq "$(jq -r '.steps.range' <<< "$output")" "step"
	assert_eq "$(jq '.steps.instances | length' <<< "$output")" \
	          "$(trace-dump --json -k range "$T" | jq -s '[.[] | select(.name == "step")] | length')"
	shared_data hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz F
	t=$(import "$F")
	# ProfilerStep#2 is also on a GPU stream (gpu_user_annotation)
	assert_eq "$(trace-stats --json --steps --report run "$t" | jq '.steps.instances | length')" 2
	shared_data hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz F
	t=$(import "$F")
	run -0 trace-stats --json --steps --report run "$t"
	assert_eq "$(jq -r '.steps.range' <<< "$output")" "PyTorch Profiler (0)"
	assert_eq "$(jq '.steps.instances | length' <<< "$output")" 1
	# the breakdown adds up to each step's duration
	shared_data hta/trace_diff/test/test.json.gz F
	t=$(import "$F")
	trace-stats --json --steps --report run "$t" |
		jq -e '.steps.instances | length > 0 and all(.breakdown | add) == true' > /dev/null
	trace-stats --json --steps --report run "$t" |
		jq -e '[.steps.instances[] | (.breakdown | add) == .dur_ns and .gpu_busy_ns == .breakdown.kernel + .breakdown.memcpy + .breakdown.memset] | all' > /dev/null
}

@test "--steps, no ProfilerStep#N: the capture range is one step over all the work of its input" {
	shared_data hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz F
	shared_data hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz G
	shared_data hta/critical_path/cuda_event_sync/event_sync_trace.json.gz H
	d=$BATS_TEST_TMPDIR
	# independent: per file, the GPU work and the API calls (the capture
	# range spans them all), and whether the file has a ProfilerStep#N
	sums() {
		python3 - "$1" <<'PY'
import gzip, json, re, sys
from decimal import Decimal
ev = json.load(gzip.open(sys.argv[1], "rt"), parse_float=Decimal)["traceEvents"]
def tot(cats):
    return sum(int(Decimal(e.get("dur", 0)) * 1000) for e in ev
               if e.get("ph") == "X" and e.get("cat") in cats)
steps = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "user_annotation"
         and re.fullmatch(r"ProfilerStep#[0-9]+", e.get("name", ""))]
cap = [e for e in ev if e.get("cat") == "Trace" and e.get("name") == "PyTorch Profiler (0)"]
gpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
print(len(steps), len(cap), tot({"kernel"}), tot({"gpu_memcpy", "gpu_memset"}),
      tot({"cuda_runtime", "cuda_driver"}), len(gpu), tot({"kernel", "gpu_memcpy", "gpu_memset"}))
PY
	}
	read -r fsteps fcap fk fc fa fn fg <<< "$(sums "$F")"
	read -r gsteps gcap gk gc ga gn gg <<< "$(sums "$G")"
	read -r hsteps _ hk hc ha _ <<< "$(sums "$H")"
	[ "$fsteps" -eq 0 ] && [ "$gsteps" -eq 0 ] && [ "$hsteps" -eq 1 ]
	[ "$fcap" -eq 1 ] && [ "$gcap" -eq 1 ] && [ "$fk" -gt 0 ] && [ "$gk" -gt 0 ]
	# (G and H have the same file name)
	f=$(import "$F") g=$d/g.tkt h=$d/h.tkt
	trace-import -o "$g" "$G"
	trace-import -o "$h" "$H"
	# alone: one step holding every kernel, copy and API call of the file
	trace-stats --json --steps --report run "$f" > "$d/f.json"
	assert_eq "$(jq -c '.steps | [.range, .whole_input, (.instances | length)]' "$d/f.json")" \
	          '["PyTorch Profiler (0)",true,1]'
	assert_eq "$(jq -r '.steps.instances[0] | "\(.kernel_ns) \(.copy_ns) \(.api_ns)"' "$d/f.json")" \
	          "$fk $fc $fa"
	assert_eq "$(jq -c .per.gpu_outside "$d/f.json")" '{"count":0,"total_ns":0}'
	run -0 trace-stats --steps --report run --no-findings "$f"
	[[ "$output" == *"no ProfilerStep#N or step ranges: the profiler's capture range is one step"* ]]
	# merged with a label each: each capture range owns its own input's work
	trace-merge -l a -l b -o "$d/fg.tkt" "$f" "$g"
	trace-stats --json --steps --report run "$d/fg.tkt" > "$d/fg.json"
	assert_eq "$(jq -r '[.steps.instances[] | "\(.kernel_ns) \(.copy_ns) \(.api_ns)"] | join(" ")' "$d/fg.json")" \
	          "$fk $fc $fa $gk $gc $ga"
	# with an input that has a ProfilerStep#N, that is the step: the
	# capture range is none, and the other input's GPU work is outside
	trace-merge -l b -l c -o "$d/gh.tkt" "$g" "$h"
	trace-stats --json --steps --report run "$d/gh.tkt" > "$d/gh.json"
	assert_eq "$(jq -c '.steps | [.range, .whole_input, (.instances | length)]' "$d/gh.json")" \
	          '["ProfilerStep#N",false,1]'
	assert_eq "$(jq -c .per.gpu_outside "$d/gh.json")" "{\"count\":$gn,\"total_ns\":$gg}"
	run -0 trace-stats --steps --report run --no-findings "$d/gh.tkt"
	[[ "$output" != *"capture range"* ]]
	# named with --per on a trace that has a ProfilerStep#N: the same
	# whole input, said without claiming there is no step
	trace-stats --json --per 'PyTorch Profiler (0)' --report run "$h" > "$d/h.json"
	assert_eq "$(jq -r '.steps.whole_input, (.steps.instances[] | "\(.kernel_ns) \(.copy_ns) \(.api_ns)")' "$d/h.json")" \
	          "$(printf 'true\n%s %s %s' "$hk" "$hc" "$ha")"
	run -0 trace-stats --per 'PyTorch Profiler (0)' --report run --no-findings "$h"
	[[ "$output" == *"the profiler's capture range: each instance holds all the work of its input"* ]]
	[[ "$output" != *"no ProfilerStep#N"* ]]
}

@test "--steps --pid on a trace with only the capture range: the one step, over that process's work" {
	shared_data hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz F
	d=$BATS_TEST_TMPDIR
	# independent: the process that calls the CUDA API (the capture
	# range is on a placeholder process of its own), and the GPU work and
	# API calls of the file, all that process's
	read -r pid k c a <<< "$(python3 - "$F" <<'PY'
import gzip, json, sys
from decimal import Decimal
ev = json.load(gzip.open(sys.argv[1], "rt"), parse_float=Decimal)["traceEvents"]
def tot(cats):
    return sum(int(Decimal(e.get("dur", 0)) * 1000) for e in ev
               if e.get("ph") == "X" and e.get("cat") in cats)
api_pids = {e["pid"] for e in ev if e.get("cat") == "cuda_runtime"}
assert len(api_pids) == 1
cap = [e for e in ev if e.get("cat") == "Trace"]
assert len(cap) == 1 and cap[0]["pid"] not in api_pids
print(api_pids.pop(), tot({"kernel"}), tot({"gpu_memcpy", "gpu_memset"}),
      tot({"cuda_runtime", "cuda_driver"}))
PY
)"
	f=$(import "$F")
	trace-stats --json --steps --pid "$pid" --report run "$f" > "$d/p.json"
	assert_eq "$(jq -c '.steps | [.range, .whole_input, (.instances | length)]' "$d/p.json")" \
	          '["PyTorch Profiler (0)",true,1]'
	assert_eq "$(jq -r '.steps.instances[0] | "\(.kernel_ns) \(.copy_ns) \(.api_ns)"' "$d/p.json")" \
	          "$k $c $a"
	run -0 trace-stats --steps --pid "$pid" --report run --no-findings "$f"
	[[ "$output" == *"no ProfilerStep#N or step ranges: the profiler's capture range is one step"* ]]
	# CSV says it is the whole input as JSON does
	trace-stats --csv --steps --pid "$pid" --report run "$f" |
		python3 -c '
import csv, io, sys
rows = [r for r in csv.DictReader(io.StringIO(sys.stdin.read().split("\n\n")[-1].strip() + "\n"))]
assert len(rows) == 1 and rows[0]["report"] == "steps" and rows[0]["whole_input"] == "1", rows
print(rows[0]["kernel_ns"], rows[0]["copy_ns"], rows[0]["api_ns"])' > "$d/csv"
	assert_eq "$(cat "$d/csv")" "$k $c $a"
	# another process: the step is there, with none of the work
	trace-stats --json --steps --pid 1 --report run "$f" > "$d/q.json"
	assert_eq "$(jq -r '.steps.instances[] | "\(.kernel_ns) \(.copy_ns) \(.api_ns)"' "$d/q.json")" "0 0 0"
}

@test "--steps and --operators in CSV carry the JSON's figures" {
	shared_data param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json F
	d=$BATS_TEST_TMPDIR
	t=$(import "$F")
	trace-stats --json --steps --operators -r run,ranges "$t" > "$d/s.json"
	trace-stats --csv --steps --operators -r run,ranges "$t" > "$d/s.csv"
	python3 - "$d/s.json" "$d/s.csv" <<'PY'
import csv, io, json, sys
j = json.load(open(sys.argv[1]))
sections = open(sys.argv[2]).read().split("\n\n")
tabs = {}
for s in sections:
    rows = list(csv.DictReader(io.StringIO(s)))
    if rows:
        tabs.setdefault(rows[0]["report"], []).extend(rows)
steps = tabs["steps"]
assert len(steps) == len(j["steps"]["instances"]) > 0
for r, x in zip(steps, j["steps"]["instances"]):
    for k in ("begin_ns", "dur_ns", "gpu_busy_ns", "kernel_ns", "copy_ns", "api_ns"):
        assert int(r[k]) == x[k], k
    for k, v in x["breakdown"].items():
        assert int(r[k]) == v, k
    assert r["whole_input"] == str(int(j["steps"]["whole_input"])) == "0"
ops = tabs["operators"]
assert len(ops) == len(j["operators"]) > 100
for r, x in zip(ops, j["operators"]):
    assert (r["domain"], r["name"]) == (x["domain"], x["name"])
    for k in ("count", "total_ns", "self_ns", "gpu_self_ns", "gpu_total_ns"):
        assert int(r[k]) == x[k], k
run = {r["key"]: r["value"] for r in tabs["run"]}
assert int(run["totals.ranges.count"]) == j["totals"]["ranges"]["count"]
PY
}

@test "JSON and CSV carry each table's totals, as the text's title and '... more' lines say" {
	shared_data hta/trace_diff/control/control.json.gz F
	t=$(import "$F")
	d=$BATS_TEST_TMPDIR
	# independent: the JSON's kernels, copies and memsets, runtime calls
	python3 - "$F" > "$d/want" <<'PY'
import gzip, json, sys
from decimal import Decimal
ev = json.load(gzip.open(sys.argv[1], "rt"), parse_float=Decimal)["traceEvents"]
def tot(cats):
    x = [e for e in ev if e.get("ph") == "X" and e.get("cat") in cats]
    return "%d %d" % (len(x), sum(int(Decimal(e.get("dur", 0)) * 1000) for e in x))
print(tot({"kernel"}), tot({"gpu_memcpy", "gpu_memset"}), tot({"cuda_runtime", "cuda_driver"}))
PY
	trace-stats --json -n 3 "$t" > "$d/s.json"
	assert_eq "$(jq -r '[.totals.kernels, .totals.memops, .totals.api] | map("\(.count) \(.total_ns)") | join(" ")' "$d/s.json")" "$(cat "$d/want")"
	# what --top left out: the rows that are not shown
	trace-stats --json "$t" > "$d/all.json"
	assert_eq "$(jq '.totals.kernels | [.more_groups, .more_count, .more_ns, .shown]' -c "$d/s.json")" \
	          "$(jq -c '[(.kernels | length) - 3, (.kernels[3:] | map(.count) | add), (.kernels[3:] | map(.total_ns) | add), 3]' "$d/all.json")"
	# the text's title line says the same
	k=$(jq '.totals.kernels' "$d/s.json")
	run -0 trace-stats -n 3 -r kernels --units ns "$t"
	assert_eq "${lines[0]}" "GPU kernels: $(jq .count <<< "$k") in $(jq .groups <<< "$k") groups, $(jq .total_ns <<< "$k") ns in all"
	# CSV: keys of the run table
	run -0 trace-stats --csv -n 3 -r run,kernels,api "$t"
	[[ "$output" == *$'\nrun,totals.kernels.total_ns,'"$(jq .total_ns <<< "$k")"$'\n'* ]]
	[[ "$output" == *$'\nrun,totals.kernels.more_groups,'"$(jq .more_groups <<< "$k")"$'\n'* ]]
	[[ "$output" == *$'\nrun,totals.api.count,'* ]]
}

@test "COLUMNS=80: every table fits, columns least telling left out first" {
	shared_data hta/trace_diff/control/control.json.gz F
	t=$(import "$F")
	# (the run header and the findings are lines of text, not tables)
	run -0 env COLUMNS=80 trace-stats --steps --operators -n 5 --no-findings \
		-r kernels,memops,api,ranges,processes,gpu "$t"
	long=$(printf '%s\n' "$output" | awk 'length($0) > 80')
	assert_eq "$long" ""
	# the kernel table keeps its share, total, count, median and names
	[[ "${lines[1]}" == "  Time %       Total  Count    Median"*"  Name" ]]
	[[ "${lines[1]}" != *P99* && "${lines[1]}" != *StdDev* ]]
	# wide enough: every column as before
	run -0 env COLUMNS=200 trace-stats -n 5 -r kernels "$t"
	[[ "${lines[1]}" == *"StdDev"*"P99"*"Name" ]]
	# --full-names: nothing left out or cut
	run -0 env COLUMNS=80 trace-stats --full-names -n 5 -r kernels "$t"
	[[ "${lines[1]}" == *"StdDev"*"P99"*"Name" ]]
}

@test "no FILE at a terminal: the usage, exit 2, no wait for input" {
	command -v script > /dev/null || skip "script(1) is not installed"
	run timeout 20 script -qec "trace-stats" /dev/null < /dev/null
	[ "$status" -eq 2 ]
	[[ "$output" == *"Usage: trace-stats [OPTIONS] [FILE...]"* ]]
	[[ "$output" == *"trace-stats: no input: give a FILE, or pipe a trace into standard input"* ]]
	# a pipe is read as before
	T=$(synth_trace run.tkt --steps 2 --layers 1)
	cat "$T" | trace-stats -r run > /dev/null
}

@test "--steps on ranks merged with a label each: every rank's steps split by that rank's work alone" {
	[ -d "$TK_SHARED/testdata/param/dlrm_kineto" ] ||
		skip "real test data not found: $TK_SHARED/testdata/param/dlrm_kineto"
	n=8
	if under_valgrind || under_sanitizers; then n=3; fi
	mapfile -t F < <(ls "$TK_SHARED"/testdata/param/dlrm_kineto/worker*_step_12.*.pt.trace.json | head -n "$n")
	d=$BATS_TEST_TMPDIR
	t=() l=()
	for f in "${F[@]}"; do
		t+=("$(import "$f")")
		l+=(-l "rank${#l[@]}")
		python3 "$REF" "$f" > "$d/ref${#t[@]}.json"
	done
	trace-merge "${l[@]}" -o "$d/job.tkt" "${t[@]}"
	# the reference of the job: each file's steps, by begin (as
	# TensorBoard takes each worker's trace alone); kernels added up
	python3 - "$d"/ref*.json > "$d/ref.json" <<'PY'
import json, sys
refs = [json.load(open(p)) for p in sys.argv[1:]]
steps = sorted((s for r in refs for s in r["steps"]), key=lambda s: s["begin_ns"])
assert len({s["begin_ns"] for s in steps}) == len(steps) == len(refs)
assert not any(r["whole_input"] for r in refs)
print(json.dumps({"kernels": {k: sum(r["kernels"][k] for r in refs) for k in ("count", "total_ns")},
                  "steps": steps, "operators": [], "whole_input": False,
                  **{w: {k: sum(r[w][k] for r in refs) for k in ("count", "total_ns")}
                     for w in ("gpu_outside", "gpu_no_launch")}}))
PY
	trace-stats --json --steps -r run,kernels "$d/job.tkt" > "$d/ours.json"
	run python3 "$REF" --compare "$d/ref.json" "$d/ours.json"
	[ "$status" -eq 0 ] || { echo "$output" >&2; false; }
}
