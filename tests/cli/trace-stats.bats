#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-stats: every figure against an independent computation
# (stats_reference.py over trace-dump --json), unsorted and concatenated
# input, options, formats, findings, bad input, real traces.

load helpers

REF="$BATS_TEST_DIRNAME/stats_reference.py"

setup() {
	T=$(synth_trace run.tkt --steps 6 --layers 2)
}

# ref FILES... -- [reference options]: the reference's JSON on stdout
ref() {
	local files=()
	while [ "$1" != "--" ]; do files+=("$1"); shift; done
	shift
	trace-dump --json "${files[@]}" | python3 "$REF" "$@"
}

# check_figures OURS.json REF.json [--top N]: fails listing the differences
check_figures() {
	run python3 "$REF" --compare "$2" "$1" "${@:3}"
	[ "$status" -eq 0 ] || { printf '%s\n' "$output" >&2; return 1; }
}

@test "every figure matches an independent computation" {
	d=$BATS_TEST_TMPDIR
	trace-stats --json --per step "$T" > "$d/ours.json"
	ref "$T" -- --per step > "$d/ref.json"
	check_figures "$d/ours.json" "$d/ref.json"
	# the comparison can fail: one nanosecond off is caught
	jq '.kernels[0].total_ns += 1' "$d/ours.json" > "$d/bad.json"
	run python3 "$REF" --compare "$d/ref.json" "$d/bad.json"
	[ "$status" -eq 1 ]
	[[ "$output" == *"kernels "*"total_ns: "* ]]
	# and so can a member or a field that is not there at all
	for cut in '.memory' '.gpus' '.processes' '.kernels' '.per' '.run.dropped' \
	           '.kernels[0].p95_ns' '.kernels[0].min_ns' '.memops[0].bytes' \
	           '.gpus[0].busy_ns' '.memory.devices' '.memory.devices[0].allocs' \
	           '.memory.processes[0].rss_peak_bytes' '.processes[0].exit_code'; do
		jq "del($cut)" "$d/ours.json" > "$d/bad.json"
		run python3 "$REF" --compare "$d/ref.json" "$d/bad.json"
		[ "$status" -eq 1 ] || { echo "del($cut) not caught: $output" >&2; false; }
	done
}

@test "unsorted traces give the same figures (by end time, shuffled, reversed)" {
	d=$BATS_TEST_TMPDIR
	trace-stats --json --per step "$T" | jq 'del(.run.inputs)' > "$d/sorted.json"
	for how in "--by-end" "--shuffle 7" "--reverse"; do
		# small chunks: watermarks every few events
		reorder $how --chunk-bytes 2048 "$T" "$d/u.tkt"
		# the rewritten trace is not sorted
		run bash -c "trace-dump --json '$d/u.tkt' | jq -s '[.[].ts] as \$t | \$t == (\$t | sort)'"
		assert_eq "$output" "false"
		trace-stats --json --per step "$d/u.tkt" | jq 'del(.run.inputs)' > "$d/u.json"
		diff "$d/sorted.json" "$d/u.json"
	done
	ref "$d/u.tkt" -- --per step > "$d/ref.json"
	trace-stats --json --per step "$d/u.tkt" > "$d/u.json"
	check_figures "$d/u.json" "$d/ref.json"
}

@test "several files, and traces concatenated with cat, are summarised together" {
	d=$BATS_TEST_TMPDIR
	B=$(synth_trace b.tkt --steps 4 --layers 3 --seed 9 --pid 5151 \
		--start 1700000005000000000 --slow flash=1.5)
	trace-stats --json --per step "$T" "$B" > "$d/ours.json"
	ref "$T" "$B" -- --per step > "$d/ref.json"
	check_figures "$d/ours.json" "$d/ref.json"
	run jq -r '.run.processes, .run.inputs | length' "$d/ours.json"
	assert_eq "${lines[0]}" 2
	cat "$T" "$B" > "$d/cat.tkt"
	trace-stats --json --per step "$d/cat.tkt" > "$d/cat.json"
	check_figures "$d/cat.json" "$d/ref.json"
	run jq -r '.run.scopes' "$d/cat.json"
	assert_eq "$output" 2
	# metadata: each key=value once, the values of different inputs all
	# (synth writes seed=N, the default seed is 1)
	assert_eq "$(jq -c '.run.metadata | [.generator, .seed]' "$d/ours.json")" '["synth",["1","9"]]'
	run -0 trace-stats --json --report run "$T" "$T"
	assert_eq "$(jq -c '.run.metadata | [.generator, .seed]' <<< "$output")" '["synth","1"]'
}

@test "CSV: one header for the operation tables, same figures as the reference" {
	d=$BATS_TEST_TMPDIR
	trace-stats --csv "$T" > "$d/ops.csv"
	ref "$T" -- > "$d/ref.json"
	run head -1 "$d/ops.csv"
	assert_eq "$output" "report,kind,domain,name,count,total_ns,time_pct,mean_ns,std_ns,min_ns,median_ns,p95_ns,p99_ns,max_ns,bytes,bytes_per_s,mean_bytes_per_s"
	# no thousands separators, integer nanoseconds, names never cut
	python3 - "$d/ops.csv" "$d/ref.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ref = json.load(open(sys.argv[2]))
want = {(t, r["name"]): r for t in ("kernels", "memops", "api", "ranges") for r in ref[t]}
assert len(rows) == len(want), (len(rows), len(want))
for r in rows:
    x = want[(r["report"], r["name"])]
    for k in ("count", "total_ns", "min_ns", "max_ns"):
        assert r[k].isdigit() and int(r[k]) == x[k], (r["name"], k, r[k], x[k])
    for k in ("mean_ns", "std_ns", "median_ns", "p95_ns", "p99_ns"):
        assert r[k].isdigit() and abs(int(r[k]) - x[k]) <= 0.5 + 1e-6, (r["name"], k)
    assert abs(float(r["time_pct"]) - x["time_pct"]) < 1e-4
    if r["report"] == "memops":
        assert int(r["bytes"]) == x["bytes"]
assert any("," in r["name"] and len(r["name"]) > 150 for r in rows)
PY
}

@test "CSV: other reports by name, each with its own header" {
	run -0 trace-stats --csv --report gpu,processes,memory,run,findings "$T"
	[[ "$output" == *"report,device,name,host,busy_ns,busy_pct,kernel_ns,copy_ns,overlap_ns,idle_ns,idle_pct,ops,first_ns,last_ns,exact"* ]]
	[[ "$output" == *"report,pid,ppid,host,name,label,command,wall_ns,user_ns,system_ns,cpu_pct,max_rss_bytes,exit,exit_code,signal,rss_peak_bytes"* ]]
	[[ "$output" == *"report,where,pid,device,source,peak_bytes,allocs,frees,alloc_bytes,not_freed_bytes"* ]]
	[[ "$output" == *"run,meta.command,python3 train.py --model gpt-small --batch-size 32"* ]]
	[[ "$output" == *"findings,gpu_idle,gpu,GPU 0,"* ]]
	# sections are separated by one empty line
	n=$(printf '%s\n' "$output" | grep -c '^$')
	assert_eq "$n" 4
	busy=$(trace-stats --json "$T" | jq -r '.gpus[0].busy_ns')
	[[ "$output" == *"gpu,0,NVIDIA H100 80GB HBM3,synth-host,$busy,"* ]]
}

@test "text: run header, aligned tables, readable units, findings" {
	run -0 trace-stats "$T"
	assert_eq "${lines[0]}" "Run"
	[[ "$output" == *"  command   python3 train.py --model gpt-small --batch-size 32"* ]]
	[[ "$output" == *"  host      synth-host"* ]]
	[[ "$output" == *"  processes 1 (pid 4242)"* ]]
	[[ "$output" == *"  GPUs      1: GPU 0 NVIDIA H100 80GB HBM3 on synth-host"* ]]
	[[ "$output" == *"  dropped   none"* ]]
	[[ "$output" == *"  metadata  generator=synth seed=1"* ]]
	kernels=$(trace-dump -k kernel "$T" | wc -l)
	[[ "$output" == *"  events    "*"kernel $kernels"* ]]
	wall=$(trace-stats --json "$T" | jq -r '.run.wall_ns')
	[[ "$output" == *"  wall      $(awk -v w="$wall" 'BEGIN { printf "%.3f ms", w / 1e6 }')"* ]]
	for title in "GPU kernels: $kernels in" "Memory operations:" "CUDA API calls:" \
	             "Ranges (NVTX, CPU operators, annotations):" "Processes" "GPU time" \
	             "Memory peaks" "Findings"; do
		[[ "$output" == *"$title"* ]]
	done
	# in each table, every row's name starts in the column of "Name"
	trace-stats "$T" | awk '
		/^  Time %/ { col = index($0, "Name"); next }
		/^$/ { col = 0 }
		col && /^  / && !/^  \.\.\./ {
			if (substr($0, col - 2, 2) != "  " || substr($0, col, 1) == " ") bad++
		}
		END { exit bad > 0 }'
	# the largest kernel's total, in readable units
	t=$(trace-stats --json "$T" | jq -r '.kernels[0].total_ns')
	[[ "$output" == *"$(awk -v t="$t" 'BEGIN { printf "%.3f ms", t / 1e6 }')"* ]]
}

@test "--units fixes the unit of every time in text" {
	run -0 trace-stats --units us --report kernels --no-findings "$T"
	[[ "${lines[1]}" == *"Total [us]"*"Mean [us]"*"P99 [us]"* ]]
	t=$(trace-stats --json "$T" | jq -r '.kernels[0].total_ns')
	[[ "${lines[2]}" == *" $(awk -v t="$t" 'BEGIN { printf "%.3f", t / 1e3 }') "* ]]
	# the rows' times are bare numbers; the lines of prose keep the unit
	rows=$(printf '%s\n' "${lines[@]:1}")
	[[ "$rows" != *" ms "* && "$rows" != *" us "* ]]
	all=$(trace-stats --json "$T" | jq '.totals.kernels.total_ns')
	[[ "${lines[0]}" == *", $(awk -v t="$all" 'BEGIN { printf "%.3f", t / 1e3 }') us in all" ]]
	run -0 trace-stats --units ms --report run --no-findings "$T"
	[[ "$output" == *"  wall      "*" ms"$'\n'* ]]
	run -0 trace-stats --units ns --report api --no-findings "$T"
	t=$(trace-stats --json "$T" | jq -r '.api[0].total_ns')
	[[ "${lines[2]}" == *" $t "* ]]
}

@test "long names: shortened in text, whole with --full-names, CSV and JSON" {
	run -0 env COLUMNS=200 trace-stats --report kernels --no-findings "$T"
	# the return type and the parameter list of templates go, then the
	# namespaces of long ones, then a cut
	[[ "$output" == *"  vectorized_elementwise_kernel<4, GeluCUDAKernelImpl(TensorIteratorBase&, GeluType)::"* ]]
	[[ "$output" != *"void at::native"* ]]
	[[ "$output" == *"..."* ]]
	max=0
	for l in "${lines[@]}"; do [ ${#l} -gt $max ] && max=${#l}; done
	[ "$max" -le 200 ]
	run -0 trace-stats --full-names --report kernels --no-findings "$T"
	[[ "$output" == *"void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#1}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#1}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)"* ]]
	n=$(trace-stats --json "$T" | jq '[.kernels[].name | select(length > 300)] | length')
	[ "$n" -ge 3 ]
}

@test "--top and --sort choose and order the rows" {
	d=$BATS_TEST_TMPDIR
	trace-stats --json --top 3 "$T" > "$d/top.json"
	ref "$T" -- > "$d/ref.json"
	check_figures "$d/top.json" "$d/ref.json" --top 3
	run -0 jq -r '.kernels | length' "$d/top.json"
	assert_eq "$output" 3
	run -0 trace-stats --top 3 --report kernels --no-findings "$T"
	n=$(jq '.kernels | length' "$d/ref.json")
	[[ "${lines[-1]}" == "  ... $((n - 3)) more ("*" instances, "*" of the time)" ]]
	for key in count mean median p95 max; do
		field=$key
		[ $key = mean ] && field=mean_ns
		[ $key = median ] && field=median_ns
		[ $key = p95 ] && field=p95_ns
		[ $key = max ] && field=max_ns
		got=$(trace-stats --json --sort $key "$T" | jq -c "[.api[].$field]")
		want=$(trace-stats --json --sort $key "$T" | jq -c "[.api[].$field] | sort | reverse")
		assert_eq "$got" "$want"
	done
	got=$(trace-stats --json --sort name "$T" | jq -c '[.ranges[].name]')
	want=$(trace-stats --json --sort name "$T" | jq -c '[.ranges[].name] | sort')
	assert_eq "$got" "$want"
}

@test "--name and --exclude select operations by extended regex" {
	d=$BATS_TEST_TMPDIR
	trace-stats --json --name 'gemm|^cuda(Launch|Memcpy)' "$T" > "$d/ours.json"
	ref "$T" -- --name 'gemm|^cuda(Launch|Memcpy)' > "$d/ref.json"
	check_figures "$d/ours.json" "$d/ref.json"
	run -0 jq -r '[.kernels[].name | test("gemm")] | all' "$d/ours.json"
	assert_eq "$output" true
	trace-stats --json --exclude '^(layer|void)' --per step "$T" > "$d/ours.json"
	ref "$T" -- --exclude '^(layer|void)' --per step > "$d/ref.json"
	check_figures "$d/ours.json" "$d/ref.json"
	run -0 jq -r '[.ranges[].name | select(startswith("layer"))] | length' "$d/ours.json"
	assert_eq "$output" 0
}

@test "--pid, --device and --stream select processes and GPU work" {
	d=$BATS_TEST_TMPDIR
	B=$(synth_trace b.tkt --steps 3 --pid 777 --seed 3)
	trace-stats --json --pid 777 "$T" "$B" > "$d/pid.json"
	ref "$T" "$B" -- --pid 777 > "$d/ref.json"
	check_figures "$d/pid.json" "$d/ref.json"
	# the same as the second trace alone, but for the inputs and reads
	diff <(jq 'del(.run.inputs, .run.events_read, .run.scopes, .run.metadata)' "$d/pid.json") \
	     <(trace-stats --json --pid 777 "$B" | jq 'del(.run.inputs, .run.events_read, .run.scopes, .run.metadata)')
	trace-stats --json --stream 21 "$T" > "$d/s.json"
	ref "$T" -- --stream 21 > "$d/ref.json"
	check_figures "$d/s.json" "$d/ref.json"
	run -0 jq -r '[.kernels[].name] | unique | length' "$d/s.json"
	assert_eq "$output" 1     # only the all-reduce runs on stream 21
	trace-stats --json --device 1 "$T" > "$d/dev.json"
	run -0 jq -r '.kernels | length' "$d/dev.json"
	assert_eq "$output" 0
	run -0 jq -r '.api | length' "$d/dev.json"
	[ "$output" -gt 0 ]       # host-side events stay
	run -2 --separate-stderr trace-stats --pid 12x "$T"
	assert_eq "${stderr_lines[0]}" "trace-stats: invalid --pid '12x'"
}

@test "--from and --to keep the events that begin in a window" {
	d=$BATS_TEST_TMPDIR
	trace-stats --json --from 160ms --to 0.25s --per step "$T" > "$d/w.json"
	ref "$T" -- --from-ns 160000000 --to-ns 250000000 --per step > "$d/ref.json"
	check_figures "$d/w.json" "$d/ref.json"
	all=$(trace-stats --json "$T" | jq '.run.events')
	run -0 jq -r ".run.events < $all and .run.events > 0" "$d/w.json"
	assert_eq "$output" true
	run -2 --separate-stderr trace-stats --from 2s --to 1s "$T"
	assert_eq "${stderr_lines[0]}" "trace-stats: --to must be later than --from"
	run -2 --separate-stderr trace-stats --from soon "$T"
	assert_eq "${stderr_lines[0]}" "trace-stats: invalid --from 'soon'"
}

@test "--run N summarises one run of a repeated recording, from a file or a pipe" {
	d=$BATS_TEST_TMPDIR
	R=$(synth_trace runs.tkt --runs 3 --steps 2 --layers 1)
	trace-stats --json --run 2 --per step "$R" > "$d/r2.json"
	ref "$R" -- --run 2 --per step > "$d/ref.json"
	check_figures "$d/r2.json" "$d/ref.json"
	run -0 jq -r '.per.instances' "$d/r2.json"
	assert_eq "$output" 2
	trace-stats --json --run 2 --per step < "$R" | jq 'del(.run.inputs)' > "$d/stdin.json"
	diff <(jq 'del(.run.inputs)' "$d/r2.json") "$d/stdin.json"
	cat "$R" | trace-stats --json --run 2 --per step | jq 'del(.run.inputs)' > "$d/pipe.json"
	diff "$d/stdin.json" "$d/pipe.json"
	# the header gives each run's wall time, as the TK_RUN events say
	walls=$(trace-dump --json "$R" | jq -r 'select(.kind == "run") | .dur' | paste -sd' ')
	assert_eq "$(trace-stats --json "$R" | jq -r '[.run.runs[].wall_ns] | join(" ")')" "$walls"
	run -0 trace-stats --report run "$R"
	[[ "$output" == *"  runs      3: "*", "*", "* ]]
	# a run that is not there: said, not hidden
	run -0 trace-stats --run 9 --report run "$R"
	[[ "$output" == *"no run 9 in some of the input"* ]]
	run -0 trace-stats --json --run 9 "$R"
	assert_eq "$(jq -r '.run.run_missing' <<< "$output")" true
}

@test "--per: GPU work belongs to the range that launched it, not to overlap" {
	d=$BATS_TEST_TMPDIR
	trace-stats --json --per step "$T" > "$d/p.json"
	ref "$T" -- --per step > "$d/ref.json"
	check_figures "$d/p.json" "$d/ref.json"
	run -0 jq -r '.per.children[] | select(.name | startswith("flash_bwd")) | .count_per_instance | "\(.min) \(.max)"' "$d/p.json"
	assert_eq "$output" "2 2"
	# the data loader's ranges overlap the steps in time, on another
	# thread: the kernels the main thread launches are none of theirs
	trace-stats --json --per dataloader "$T" > "$d/dl.json"
	ref "$T" -- --per dataloader > "$d/ref.json"
	check_figures "$d/dl.json" "$d/ref.json"
	kernels=$(jq '.run.kinds.kernel + .run.kinds.memcpy + .run.kinds.memset' "$d/dl.json")
	assert_eq "$(jq '.per.gpu_outside.count' "$d/dl.json")" "$kernels"
	assert_eq "$(jq '[.per.children[] | select(.kind == "kernel")] | length' "$d/dl.json")" 0
	trace-dump --json "$T" | python3 -c '
import json, sys
ev = [json.loads(l) for l in sys.stdin]
dl = [(e["ts"], e["ts"] + e["dur"]) for e in ev if e["kind"] == "range" and e["name"] == "dataloader"]
k = [e for e in ev if e["kind"] == "kernel"]
by_overlap = sum(1 for e in k for b, x in dl if b <= e["ts"] < x)
assert by_overlap > 0, by_overlap   # what attribution by time would claim
'
	run -0 trace-stats --per step --report run --no-findings "$T"
	[[ "$output" == *'Per instance of range "step": 6 instances, '*' per second'* ]]
	[[ "$output" == *"  duration  mean "* ]]
	[[ "$output" == *"gpu     all kernels"* ]]
	run -0 trace-stats --per nosuchrange --report run "$T"
	[[ "$output" == *'Per instance of range "nosuchrange": 0 instances'* ]]
	[[ "$output" == *"(no such range)"* ]]
	run -0 trace-stats --csv --per step "$T"
	[[ "$output" == *$'\n'"report,kind,domain,name,instances,instances_with,count_mean,count_min,count_max,time_mean_ns,"* ]]
	[[ "$output" == *$'\n'"per,instance,,step,6,6,"* ]]
}

# Compare two --json outputs: the same rows, counts, totals and extremes
# exact, percentiles within 1 %: close EXACT.json APPROX.json
close() {
	python3 - "$1" "$2" <<'PY'
import json, sys
e, a = (json.load(open(p)) for p in sys.argv[1:])
worst = 0
for t in ("kernels", "memops", "api", "ranges"):
    assert [r["name"] for r in e[t]] == [r["name"] for r in a[t]]
    for x, y in zip(e[t], a[t]):
        for k in ("count", "total_ns", "min_ns", "max_ns"):
            assert x[k] == y[k], (t, x["name"], k)
        assert abs(x["mean_ns"] - y["mean_ns"]) <= 1
        assert abs(x["std_ns"] - y["std_ns"]) <= 1 + 1e-6 * x["std_ns"]
        for k in ("median_ns", "p95_ns", "p99_ns"):
            err = abs(x[k] - y[k]) / max(x[k], 1)
            worst = max(worst, err)
            assert err <= 0.01 or abs(x[k] - y[k]) <= 1, (t, x["name"], k, x[k], y[k])
assert e["gpus"] == a["gpus"]
print("worst relative error", worst, file=sys.stderr)
PY
}

@test "--approx: counts and totals exact, percentiles within 1 %" {
	d=$BATS_TEST_TMPDIR
	S=$(synth_trace a.tkt -n 100000 --noise 0.3)
	trace-stats --json --per step "$S" > "$d/exact.json"
	trace-stats --json --per step --approx "$S" > "$d/approx.json"
	run -0 jq -r '.approx' "$d/approx.json"
	assert_eq "$output" true
	close "$d/exact.json" "$d/approx.json"
}

@test "-S: exact percentiles within the memory given, the rows past it within 1 %" {
	d=$BATS_TEST_TMPDIR
	S=$(synth_trace a.tkt -n 100000 --noise 0.3)
	trace-stats --json --per step "$S" > "$d/exact.json"
	assert_eq "$(jq -c '[.approx, .approx_rows]' "$d/exact.json")" '[false,0]'
	trace-stats --json --per step -S 64K "$S" > "$d/bounded.json"
	assert_eq "$(jq -r .approx "$d/bounded.json")" true
	n=$(jq -r .approx_rows "$d/bounded.json")
	[ "$n" -gt 0 ]
	close "$d/exact.json" "$d/bounded.json"
	n=$(trace-stats --json -S 64K "$S" | jq -r .approx_rows)
	run -0 trace-stats -S 64K "$S"
	[[ "$output" == *"  note      percentiles of $n rows within 1%, not exact: exact ones need more than -S 64.00 KiB"* ]]
	run -2 trace-stats -S 0 "$S"
	assert_eq "$output" "trace-stats: invalid --buffer-size '0'"$'\n'"Try 'trace-stats --help' for more information."
}

@test "memory: 8 bytes per operation exact, constant with --approx" {
	under_valgrind && skip "memory figures are not valgrind's"
	[[ "$TK_BUILD" == *build-san* ]] && skip "memory figures are not the sanitizers'"
	d=$BATS_TEST_TMPDIR
	S=$(synth_trace m1.tkt -n 200000)
	L=$(synth_trace m2.tkt -n 800000)
	# the same reader threads for both sizes (by default only the larger
	# input, over 1 MiB, would start them: their buffers are no growth);
	# malloc as glibc sets it (a malloc tunable given turns off the
	# commands' huge-page heap, whose up to 30 MiB, resident by 2 MiB,
	# would blur a growth of a few MiB)
	rss() { GLIBC_TUNABLES=glibc.malloc.hugetlb=0 TK_THREADS=2 /usr/bin/time -f %M trace-stats "$@" 2>&1 >/dev/null | tail -1; }
	e1=$(rss "$S"); e2=$(rss "$L"); a1=$(rss --approx "$S"); a2=$(rss --approx "$L")
	n1=$(trace-stats --json "$S" | jq '.run.events')
	n2=$(trace-stats --json "$L" | jq '.run.events')
	echo "exact $e1 -> $e2 KiB, approx $a1 -> $a2 KiB for $n1 -> $n2 events" >&2
	# growth per added event, exact: at most 8 bytes (+1 for rounding)
	[ $(( (e2 - e1) * 1024 / (n2 - n1) )) -le 9 ]
	# approximate: no growth beyond noise
	[ $(( a2 - a1 )) -le 1024 ]
}

@test "findings: bottleneck, high variance, warm-up, idle GPU; --no-findings" {
	d=$BATS_TEST_TMPDIR
	# a first short run with a slow flash_fwd, then the normal run
	W=$(synth_trace warm.tkt --steps 1 --layers 2 --slow flash_fwd=6 --start 1699999999000000000)
	B=$(synth_trace bottle.tkt --steps 6 --layers 2 --slow flash_bwd=30)
	run -0 trace-stats --report kernels,findings "$W" "$T"
	[[ "$output" == *"  warm-up       flash_fwd_kernel<"*": the first instance took "*"x the median "* ]]
	[[ "$output" == *"  high variance flash_fwd_kernel<"*" varies: max/min "* ]]
	run -0 trace-stats --report kernels,findings "$B"
	[[ "$output" == *"  bottleneck    flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<"*" takes "*"% of GPU kernel time ("* ]]
	run -0 trace-stats --json "$B"
	share=$(jq -r '.kernels[0].time_pct' <<< "$output")
	run -0 jq -r '.findings[] | select(.type == "bottleneck" and .report == "kernels") | .value' <<< "$output"
	assert_eq "$output" "$share"
	run -0 trace-stats --json "$T"
	idle=$(jq -r '.gpus[0].idle_pct' <<< "$output")
	read -r first last busy < <(jq -r '.gpus[0] | "\(.first_ns) \(.last_ns) \(.busy_ns)"' <<< "$output")
	run -0 jq -r '.findings[] | select(.type == "gpu_idle") | .value' <<< "$output"
	assert_eq "$output" "$idle"
	# and how idle from its first operation to its last
	active=$(awk -v f="$first" -v l="$last" -v b="$busy" 'BEGIN { printf "%.1f", 100 * (l - f - b) / (l - f) }')
	run -0 trace-stats --report findings "$T"
	[[ "$output" == *"GPU 0 is idle "*"% of the run ("*"); $active% from its first operation to its last ("* ]]
	run -0 trace-stats --no-findings "$T"
	[[ "$output" != *"Findings"* ]]
	run -0 trace-stats --json --no-findings "$T"
	assert_eq "$(jq 'has("findings")' <<< "$output")" false
	run -0 trace-stats --per step --report findings "$B"
	[[ "$output" == *"  bottleneck    cudaStreamSynchronize takes "*"% of each step"* ]]
}

@test "--report chooses the reports; an empty one says so" {
	run -0 trace-stats --report gpu "$T"
	[[ "${lines[0]}" == "GPU time"* ]]
	[[ "$output" != *"GPU kernels"* ]]
	run -0 trace-stats --json --report kernels,api "$T"
	assert_eq "$(jq -c 'keys' <<< "$output")" '["api","approx","approx_rows","kernels","schema"]'
	run -0 trace-stats --json --report kernels,findings "$T"
	assert_eq "$(jq -c 'keys' <<< "$output")" '["approx","approx_rows","findings","kernels","schema"]'
	run -0 trace-stats --report findings "$T"
	assert_eq "${lines[0]}" "Findings"
	# one CSV table when one is asked for
	run -0 trace-stats --csv --report kernels "$T"
	[ "$(printf '%s\n' "$output" | grep -c '^report,')" -eq 1 ]
	run -0 trace-stats --report kernels --exclude . "$T"
	[[ "$output" == *"GPU kernels: none"* ]]
	# only what is asked for is computed, and it is the same
	for r in kernels memops api ranges; do
		diff <(trace-stats --json --report $r "$T" | jq ".$r") <(trace-stats --json "$T" | jq ".$r")
	done
	diff <(trace-stats --json --report gpu "$T" | jq .gpus) <(trace-stats --json "$T" | jq .gpus)
	diff <(trace-stats --json --report memory "$T" | jq .memory) <(trace-stats --json "$T" | jq .memory)
	diff <(trace-stats --csv --report kernels "$T") <(trace-stats --csv "$T" | grep -E '^(report|kernels),')
	run -2 --separate-stderr trace-stats --report kernels,bogus "$T"
	assert_eq "${stderr_lines[0]}" "trace-stats: unknown report 'bogus'"
	assert_eq "${stderr_lines[1]}" "trace-stats: reports are: run, kernels, memops, api, ranges, processes, gpu, memory, findings, all"
}

@test "JSON: stable schema, integer nanoseconds" {
	run -0 trace-stats --json --per step "$T"
	assert_eq "$(jq -r '.schema' <<< "$output")" "tracekit-stats/1"
	assert_eq "$(jq -c '.kernels[0] | keys' <<< "$output")" '["count","kind","max_ns","mean_ns","median_ns","min_ns","name","p95_ns","p99_ns","std_ns","time_pct","total_ns"]'
	assert_eq "$(jq -c '.memops[0] | keys' <<< "$output")" '["bytes","bytes_per_s","copy_kind","count","dst_kind","kind","max_ns","mean_bytes_per_s","mean_ns","median_ns","min_ns","name","p95_ns","p99_ns","src_kind","std_ns","time_pct","total_ns"]'
	assert_eq "$(jq -c '.gpus[0] | keys' <<< "$output")" '["busy_ns","busy_pct","copy_ns","device","exact","first_ns","host","idle_ns","idle_pct","kernel_ns","last_ns","name","ops","overlap_ns"]'
	assert_eq "$(jq -c '.run | keys' <<< "$output")" '["dropped","drops","events","events_read","gpus","inputs","kinds","metadata","processes","runs","scopes","skipped_unknown","t_max","t_min","wall_ns"]'
	assert_eq "$(jq -c '.per | keys' <<< "$output")" '["children","duration","gpu_no_launch","gpu_outside","instances","per_second","range"]'
	assert_eq "$(jq '[.. | objects | to_entries[] | select(.key | endswith("_ns")) | .value | (type == "number" and . == floor)] | all' <<< "$output")" true
}

@test "stdin is read when no file or - is given" {
	a=$(trace-stats --json "$T" | jq -c 'del(.run.inputs)')
	b=$(trace-stats --json < "$T" | jq -c 'del(.run.inputs)')
	c=$(cat "$T" | trace-stats --json - | jq -c 'del(.run.inputs)')
	assert_eq "$b" "$a"
	assert_eq "$c" "$a"
	run -0 bash -c "trace-stats < '$T'"
	[[ "${lines[1]}" == "  input     (stdin)" ]]
}

@test "--help names every option; the man page documents each" {
	run -0 trace-stats --help
	assert_eq "${lines[0]}" "Usage: trace-stats [OPTIONS] [FILE...]"
	opts=$(printf '%s\n' "$output" | grep -oE '^ +(-[a-zA-Z], )?--[a-z-]+' | grep -oE -- '--[a-z-]+' | sort -u)
	[ "$(printf '%s\n' "$opts" | wc -l)" -ge 20 ]
	for o in $opts; do
		grep -q -- "Fl Fl ${o#--}" "$TK_SRC/man/trace-stats.1" || { echo "$o not in man page" >&2; false; }
	done
	run -0 trace-stats --version
	[[ "$output" == "trace-stats (tracekit) "* ]]
}

@test "usage errors: one line and exit 2" {
	run -2 --separate-stderr trace-stats --bogus "$T"
	assert_eq "${stderr_lines[0]}" "trace-stats: unknown option '--bogus'"
	assert_eq "${stderr_lines[1]}" "Try 'trace-stats --help' for more information."
	run -2 --separate-stderr trace-stats --sort fastest "$T"
	assert_eq "${stderr_lines[0]}" "trace-stats: invalid --sort 'fastest' (total, count, mean, median, p95, max or name)"
	run -2 --separate-stderr trace-stats --name '(' "$T"
	[[ "${stderr_lines[0]}" == "trace-stats: invalid --name '(': "* ]]
	run -2 --separate-stderr trace-stats --top 0 "$T"
	assert_eq "${stderr_lines[0]}" "trace-stats: invalid --top '0'"
	run -2 --separate-stderr trace-stats --units weeks "$T"
	assert_eq "${stderr_lines[0]}" "trace-stats: invalid --units 'weeks' (ns, us, ms or s)"
	run -2 --separate-stderr trace-stats --run 0 "$T"
	assert_eq "${stderr_lines[0]}" "trace-stats: invalid --run '0'"
	run -2 --separate-stderr trace-stats --per
	assert_eq "${stderr_lines[0]}" "trace-stats: option '--per' needs a value"
}

@test "bad input: one line naming the file, exit 1, nothing else printed" {
	d=$BATS_TEST_TMPDIR
	: > "$d/empty.tkt"
	run -1 --separate-stderr trace-stats "$d/empty.tkt"
	assert_eq "$stderr" "trace-stats: $d/empty.tkt: empty input (not a trace)"
	assert_eq "$output" ""
	printf '\211PNG\r\n\032\n\0\0\0\rIHDR' > "$d/png.tkt"
	run -1 --separate-stderr trace-stats "$d/png.tkt"
	assert_eq "$stderr" "trace-stats: $d/png.tkt: not a tracekit trace, Chrome JSON or Nsight Systems SQLite export (first bytes 89 50 4e 47)"
	run -1 --separate-stderr trace-stats "$d/missing.tkt"
	assert_eq "$stderr" "trace-stats: $d/missing.tkt: No such file or directory"
	run -1 --separate-stderr trace-stats "$d"
	assert_eq "$stderr" "trace-stats: $d: read error at byte 0: Is a directory"
	run -1 --separate-stderr trace-stats --run 1 "$d/missing.tkt"
	assert_eq "$stderr" "trace-stats: $d/missing.tkt: No such file or directory"
	# a good file next to a bad one is still summarised
	run -1 --separate-stderr trace-stats --json "$T" "$d/empty.tkt"
	assert_eq "$stderr" "trace-stats: $d/empty.tkt: empty input (not a trace)"
	assert_eq "$(jq -r '.run.events' <<< "$output")" "$(trace-stats --json "$T" | jq -r '.run.events')"
}

@test "truncated and corrupt traces: the complete chunks are summarised" {
	d=$BATS_TEST_TMPDIR
	S=$(synth_trace big.tkt -n 60000 --chunk-bytes 65536)
	size=$(stat -c %s "$S")
	head -c $((size / 2)) "$S" > "$d/half.tkt"
	run -1 --separate-stderr trace-stats --json "$d/half.tkt"
	[[ "$stderr" =~ ^trace-stats:\ .*/half.tkt:\ truncated\ chunk\ at\ byte\ [0-9]+$ ]]
	# exactly the events trace-dump delivers before the damage
	n=$(trace-dump "$d/half.tkt" 2>/dev/null | wc -l)
	assert_eq "$(jq -r '.run.events_read' <<< "$output")" "$n"
	[ "$n" -gt 1000 ]
	cp "$S" "$d/bad.tkt"
	printf '\xff' | dd of="$d/bad.tkt" bs=1 seek=300 conv=notrunc 2>/dev/null
	run -1 --separate-stderr trace-stats "$d/bad.tkt"
	assert_eq "$stderr" "trace-stats: $d/bad.tkt: corrupt chunk at byte 36 (checksum mismatch)"
}

@test "a closed pipe ends the output quietly" {
	S=$(synth_trace p.tkt --steps 40)
	run -0 --separate-stderr bash -c "trace-stats '$S' | head -1"
	assert_eq "$stderr" ""
	assert_eq "$output" "Run"
	set -o pipefail
	trace-stats --csv --full-names "$S" | head -1 > /dev/null
	trace-stats --json "$S" | head -1 > /dev/null
}

@test "a full disk is an error (ENOSPC)" {
	# the full device: our own node when we may make one
	full=$BATS_TEST_TMPDIR/full
	mknod "$full" c 1 7 2>/dev/null || full=/dev/full
	[ -c "$full" ] || skip "no full device (/dev/full is not one on this machine)"
	run -2 --separate-stderr bash -c "trace-stats '$T' > '$full'"
	assert_eq "$stderr" "trace-stats: write error: No space left on device"
	run -2 --separate-stderr bash -c "trace-stats --csv '$T' > '$full'"
	assert_eq "$stderr" "trace-stats: write error: No space left on device"
	run -2 --separate-stderr bash -c "trace-stats --json '$T' > '$full'"
	assert_eq "$stderr" "trace-stats: write error: No space left on device"
}

# ---- real traces (imported from other tools) --------------------------------

# The kernels of a Chrome-format trace, computed from its JSON alone:
# count and total (ns) per name, and the GPU busy time (union).
chrome_reference() {
	python3 - "$1" <<'PY'
import gzip, json, sys
p = sys.argv[1]
raw = open(p, "rb").read()
if raw[:2] == b"\x1f\x8b":
    raw = gzip.decompress(raw)
doc = json.loads(raw)
events = doc["traceEvents"] if isinstance(doc, dict) else doc
kern = {}
iv = {}        # GPU work by device (Kineto: the pid of GPU events)
for e in events:
    if e.get("ph") == "X" and e.get("cat") in ("kernel", "Kernel"):
        d = kern.setdefault(e["name"], [0, 0.0])
        d[0] += 1
        d[1] += float(e.get("dur", 0))
    if e.get("ph") == "X" and e.get("cat") in ("kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"):
        iv.setdefault(str(e.get("pid")), []).append(
            (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))))
busy = 0.0
for dev in iv.values():
    cs = ce = None
    for b, x in sorted(dev):
        if cs is None: cs, ce = b, x
        elif b <= ce: ce = max(ce, x)
        else: busy += ce - cs; cs, ce = b, x
    if cs is not None: busy += ce - cs
print(json.dumps({"kernels": {k: [v[0], v[1] * 1000] for k, v in kern.items()},
                  "busy_ns": busy * 1000, "ops": sum(len(v) for v in iv.values())}))
PY
}

@test "real traces: kernel tables and GPU busy time match the source JSON" {
	command -v trace-import > /dev/null ||
		skip "trace-import is not built yet: real-trace checks start when it lands"
	d=$BATS_TEST_TMPDIR
	n=0
	files="hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz
	       hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz
	       hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
	# more, and larger, when not under valgrind: two Kineto dialects,
	# several streams, NCCL, a DLRM worker, a 3.6 MB profile
	under_valgrind || files="$files
	       hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz
	       hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz
	       hta/nccl_parser_config/nccl_data.json.gz
	       hta/trace_diff/control/control.json.gz
	       param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json
	       ncompass/flops_example/test_trace.pt.trace.json"
	for f in $files; do
		shared_data "$f" src
		trace-import -o "$d/real.tkt" "$src"
		trace-stats --json "$d/real.tkt" > "$d/ours.json"
		chrome_reference "$src" > "$d/ref.json"
		python3 - "$d/ours.json" "$d/ref.json" <<'PY'
import json, sys
ours, ref = (json.load(open(p)) for p in sys.argv[1:])
got = {k["name"]: k for k in ours.get("kernels", [])}
assert set(got) == set(ref["kernels"]), (set(got) ^ set(ref["kernels"]))
for name, (count, total) in ref["kernels"].items():
    assert got[name]["count"] == count, name
    # microseconds with three decimals at most: each event within 1 ns
    assert abs(got[name]["total_ns"] - total) <= count, (name, got[name]["total_ns"], total)
busy = sum(g["busy_ns"] for g in ours.get("gpus", []))
ops = sum(g["ops"] for g in ours.get("gpus", []))
assert ops == ref["ops"], (ops, ref["ops"])
assert abs(busy - ref["busy_ns"]) <= ref["ops"], (busy, ref["busy_ns"])
PY
		n=$((n + 1))
	done
	[ "$n" -eq "$(echo $files | wc -w)" ]
}

@test "real traces: imported CPU operators and annotations land in the ranges table" {
	command -v trace-import > /dev/null ||
		skip "trace-import is not built yet: real-trace checks start when it lands"
	d=$BATS_TEST_TMPDIR
	shared_data hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz src
	trace-import -o "$d/real.tkt" "$src"
	run -0 trace-stats --json "$d/real.tkt"
	want=$(python3 -c '
import gzip, json, sys
doc = json.loads(gzip.decompress(open(sys.argv[1], "rb").read()))
print(sum(1 for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op"))' "$src")
	got=$(jq '[.ranges[] | select(.domain == "cpu_op") | .count] | add' <<< "$output")
	assert_eq "$got" "$want"
}
