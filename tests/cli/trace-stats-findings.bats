#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-stats findings at their thresholds (man trace-stats, FINDINGS):
# each one just below and at or just above the figure that makes it,
# on traces of known durations (findings_trace.py through mktrace), so
# that a moved threshold or a finding never made fails a test.

load helpers

FT="$BATS_TEST_DIRNAME/findings_trace.py"
STATS_ARGS=

# trace [findings_trace.py arguments]: the trace, in $BATS_TEST_TMPDIR/f.tkt
trace() {
	python3 "$FT" "$@" | mktrace > "$BATS_TEST_TMPDIR/f.tkt"
}

# found [REPORT]: "type report name value" per finding of the trace (of
# REPORT's table only, if given), sorted; empty when there is none.
# $STATS_ARGS: more options for trace-stats.
found() {
	trace-stats --json --report findings $STATS_ARGS "$BATS_TEST_TMPDIR/f.tkt" |
		jq -r --arg r "${1:-}" '.findings // [] | .[] | select($r == "" or .report == $r)
			| "\(.type) \(.report) \(.name) \(.value)"' | sort
}

@test "hotspot from 20% of a table's time, bottleneck from 50%" {
	trace kernel:hot:19999 kernel:rest:80001
	assert_eq "$(found)" "bottleneck kernels rest 80.001"
	trace kernel:hot:20000 kernel:rest:80000
	assert_eq "$(found)" "bottleneck kernels rest 80
hotspot kernels hot 20"
	trace kernel:hot:49999 kernel:rest:50001
	assert_eq "$(found)" "bottleneck kernels rest 50.001
hotspot kernels hot 49.999"
	trace kernel:hot:50000 kernel:rest:50000
	assert_eq "$(found)" "bottleneck kernels hot 50
bottleneck kernels rest 50"
	# CUDA API calls alike, in their own table
	trace api:cudaMalloc:19999 api:cudaStreamSynchronize:80001
	assert_eq "$(found api)" "bottleneck api cudaStreamSynchronize 80.001"
	trace api:cudaMalloc:20000 api:cudaStreamSynchronize:80000
	assert_eq "$(found api)" "bottleneck api cudaStreamSynchronize 80
hotspot api cudaMalloc 20"
	# the text says which
	run -0 trace-stats --report findings "$BATS_TEST_TMPDIR/f.tkt"
	[[ "$output" == *"  worth a look  cudaMalloc takes 20.0% of CUDA API time (20.000 us)"* ]]
	[[ "$output" == *"  bottleneck    cudaStreamSynchronize takes 80.0% of CUDA API time (80.000 us)"* ]]
}

@test "a hotspot must also cost 5% of the run's wall time" {
	# 30 us of kernels: 5% of 600 us, not of 600.001 us
	trace --span 600000 kernel:hot:30000 kernel:rest:70000
	assert_eq "$(found kernels)" "bottleneck kernels rest 70
hotspot kernels hot 30"
	trace --span 600001 kernel:hot:30000 kernel:rest:70000
	assert_eq "$(found kernels)" "bottleneck kernels rest 70"
}

@test "at most 3 hotspots per table, the largest first" {
	trace kernel:a:20000 kernel:b:20000 kernel:c:20000 kernel:d:20000 kernel:e:20000
	assert_eq "$(found kernels | wc -l)" 3
	trace kernel:a:21000 kernel:b:20000 kernel:c:19000 kernel:d:22000 kernel:e:18000
	assert_eq "$(found kernels | awk '{ print $3 }' | paste -sd' ')" "a b d"
}

@test "at most 3 high-variance and 3 warm-up findings per table, the largest first" {
	# five groups that each vary (max/min over 2, 5% of the table): the
	# three of most time are listed, e d c
	trace kernel:a:1000x4,3000 kernel:b:1000x4,3100 kernel:c:1000x4,3200 \
		kernel:d:1000x4,3300 kernel:e:1000x4,3400
	assert_eq "$(trace-stats --json --report findings "$BATS_TEST_TMPDIR/f.tkt" |
		jq -r '[.findings[] | select(.type == "variance") | .name] | join(" ")')" "e d c"
	# four groups that each warm up: d c b
	trace kernel:a:3000,1000x2 kernel:b:3100,1000x2 kernel:c:3200,1000x2 kernel:d:3300,1000x2
	assert_eq "$(trace-stats --json --report findings "$BATS_TEST_TMPDIR/f.tkt" |
		jq -r '[.findings[] | select(.type == "warmup") | .name] | join(" ")')" "d c b"
}

@test "high variance: 5 instances or more, max/min over 2, 5% of the table" {
	trace kernel:v:1000x4,2000
	assert_eq "$(found kernels | grep variance)" ""
	trace kernel:v:1000x4,2001
	run -0 trace-stats --json --report findings "$BATS_TEST_TMPDIR/f.tkt"
	# value: the coefficient of variation, sample std / mean
	cv=$(python3 -c 'import statistics as s; v = [1000] * 4 + [2001]; print(s.stdev(v) / s.mean(v))')
	jq -e --argjson cv "$cv" '[.findings[] | select(.type == "variance")] | length == 1 and
		(.[0].value - $cv | fabs) < 1e-9 and .[0].name == "v"' <<< "$output"
	run -0 trace-stats --report findings "$BATS_TEST_TMPDIR/f.tkt"
	[[ "$output" == *"  high variance v varies: max/min 2.0, CV "*" (min 1.000 us, max 2.001 us)"* ]]
	# 4 instances are not enough
	trace kernel:v:1000x3,3000
	assert_eq "$(found kernels | grep variance)" ""
	trace kernel:v:1000x4,3000
	assert_eq "$(found kernels | grep -c variance)" 1
	# 7 us of 140 us is 5%; of 140.001 us, less
	trace kernel:v:1000x4,3000 kernel:big:133000
	assert_eq "$(found kernels | grep variance | awk '{ print $3 }')" "v"
	trace kernel:v:1000x4,3000 kernel:big:133001
	assert_eq "$(found kernels | grep variance)" ""
	# a zero-length instance: max/min is infinite
	trace kernel:v:0,1000x4
	run -0 trace-stats --report findings "$BATS_TEST_TMPDIR/f.tkt"
	[[ "$output" == *"v varies: max/min inf, "* ]]
	# API calls and ranges alike; copies and memsets never
	trace api:cudaMemcpy:1000x4,2001
	assert_eq "$(found api | grep variance | awk '{ print $3 }')" "cudaMemcpy"
	trace range:load:1000x4,2001
	assert_eq "$(found ranges | grep variance | awk '{ print $3 }')" "load"
}

@test "warm-up: a first instance at least twice the median, 3 instances, 1% of the table" {
	trace kernel:w:1999,1000x2
	assert_eq "$(found kernels | grep warmup)" ""
	trace kernel:w:2000,1000x2
	assert_eq "$(found kernels | grep warmup)" "warmup kernels w 2"
	run -0 trace-stats --report findings "$BATS_TEST_TMPDIR/f.tkt"
	[[ "$output" == *"  warm-up       w: the first instance took 2.000 us, 2.0x the median 1.000 us"* ]]
	trace kernel:w:2000,1000
	assert_eq "$(found kernels | grep warmup)" ""
	# twice the median of two (the other one empty), yet only 2 instances
	trace kernel:w:2000,0
	assert_eq "$(found kernels | grep warmup)" ""
	# the excess (1 us) against 1% of the table's time: 100 us, 100.001 us
	trace kernel:w:2000,1000x2 kernel:big:96000
	assert_eq "$(found kernels | grep warmup | awk '{ print $3 }')" "w"
	trace kernel:w:2000,1000x2 kernel:big:96001
	assert_eq "$(found kernels | grep warmup)" ""
	trace api:cudaFree:3000,1000x2
	assert_eq "$(found api | grep warmup)" "warmup api cudaFree 3"
	trace range:load:3000,1000x2
	assert_eq "$(found ranges | grep warmup)" "warmup ranges load 3"
}

@test "GPU idle: more than 25% of the run" {
	trace --span 100000 kernel:k:75000
	assert_eq "$(found gpu)" ""
	trace --span 100000 kernel:k:74999
	assert_eq "$(found gpu)" "gpu_idle gpu GPU 0 25.001"
}

@test "data loss: any event the recorder dropped is a finding" {
	trace kernel:k:1000
	assert_eq "$(found run)" ""
	trace --dropped 0 kernel:k:1000
	assert_eq "$(found run)" ""
	trace --dropped 1 kernel:k:1000
	assert_eq "$(found run)" "dropped run  1"
	run -0 trace-stats --report findings "$BATS_TEST_TMPDIR/f.tkt"
	[[ "$output" == *"  data loss     the recorder dropped 1 events: figures undercount what ran"* ]]
	trace --dropped 7 kernel:k:1000
	assert_eq "$(found run)" "dropped run  7"
}

@test "--per: a call from 20% of each instance, bottleneck from 50%, not all of it" {
	STATS_ARGS="--per step"
	trace --per step:10000 api:call:1999x3
	assert_eq "$(found per)" ""
	trace --per step:10000 api:call:2000x3
	assert_eq "$(found per)" "hotspot per call 20"
	run -0 trace-stats --per step --report findings "$BATS_TEST_TMPDIR/f.tkt"
	[[ "$output" == *"  worth a look  call takes 20.0% of each step"* ]]
	trace --per step:10000 api:call:4999x3
	run -0 trace-stats --per step --json --report findings "$BATS_TEST_TMPDIR/f.tkt"
	assert_eq "$(jq -r '.findings[] | select(.report == "per") | "\(.type) \(.value)"' <<< "$output")" "hotspot 49.99"
	trace --per step:10000 api:call:5000x3
	run -0 trace-stats --per step --json --report findings "$BATS_TEST_TMPDIR/f.tkt"
	assert_eq "$(jq -r '.findings[] | select(.report == "per") | "\(.type) \(.value)"' <<< "$output")" "bottleneck 50"
	# what fills the whole instance is the instance, no finding
	trace --per step:10000 api:call:9950x3
	run -0 trace-stats --per step --json --report findings "$BATS_TEST_TMPDIR/f.tkt"
	assert_eq "$(jq -r '.findings[] | select(.report == "per") | "\(.type) \(.value)"' <<< "$output")" "bottleneck 99.5"
	trace --per step:10000 api:call:9951x3
	run -0 trace-stats --per step --json --report findings "$BATS_TEST_TMPDIR/f.tkt"
	assert_eq "$(jq -r '.findings[] | select(.report == "per") | .type' <<< "$output")" ""
}
