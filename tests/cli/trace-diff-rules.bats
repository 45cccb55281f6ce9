#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-diff's verdict rules (trace-diff(1), VERDICTS), each on traces
# laid out by findings_trace.py with known durations, so that what is
# expected follows from the input: one clock tick of a microsecond
# import is no change; many operations of pure noise stay under alpha
# together (Holm); a change of count is reported as one; a median and a
# total that disagree say so; one run per side says what it cannot tell.

load helpers

FT="$BATS_TEST_DIRNAME/findings_trace.py"

# trace FILE ITEM...: a trace of operations of these durations
trace() {
	local out=$BATS_TEST_TMPDIR/$1
	shift
	python3 "$FT" "$@" | mktrace > "$out"
	printf '%s\n' "$out"
}

@test "a median moving by one tick of a microsecond clock is no change; by more in ns, it is" {
	# the issue's unchanged job: 8772 cudaLaunchKernel calls in whole
	# microseconds, median 9 us -> 10 us, +2.2 ms (2.7 % of API time, so
	# material) in a 1.17 s run
	B=$(trace b.tkt --span 1170000000 api:cudaLaunchKernel:8000x2000,9000x4000,10000x2772)
	A=$(trace a.tkt --span 1170000000 api:cudaLaunchKernel:8000x1500,9000x2800,10000x4472)
	run -0 trace-diff --json "$B" "$A"
	jq -e '.resolution_ns == 1000 and (.groups[0] |
	       .verdict == "same" and .why == "within one clock tick" and
	       .ratio > 1.11 and .ratio < 1.112 and .p_value < 1e-4 and
	       .delta_ns == 2200000000 / 1000)' <<< "$output"
	run -0 trace-diff "$B" "$A"
	[[ "$output" == *$'\nClock   durations in whole microseconds: a median must move by more than one tick\n'* ]]
	# one nanosecond more each: a nanosecond clock, and the same
	# change of the median is a regression
	B=$(trace bn.tkt --span 1170000000 api:cudaLaunchKernel:8001x2000,9001x4000,10001x2772)
	A=$(trace an.tkt --span 1170000000 api:cudaLaunchKernel:8001x1500,9001x2800,10001x4472)
	run -1 trace-diff --json "$B" "$A"
	jq -e '.resolution_ns == 1 and .groups[0].verdict == "slower"' <<< "$output"
}

@test "many operations of pure noise: a false change in at most alpha of the comparisons" {
	d=$BATS_TEST_TMPDIR
	pairs=20
	under_valgrind && pairs=3
	# 60 kernels of 30 instances each, every duration drawn from one
	# distribution: any faster or slower is a false alarm.  The rule
	# alone decides (no threshold, no materiality): per operation at
	# alpha, about 45 % of the comparisons would have one
	python3 - "$d" "$pairs" <<'PY'
import random, sys
d, pairs = sys.argv[1], int(sys.argv[2])
for i in range(2 * pairs):
    rng = random.Random(i)
    items = ["kernel:k%02d:%s" % (k, ",".join(str(int(rng.lognormvariate(10, 0.2)))
                                               for _ in range(30))) for k in range(60)]
    open("%s/items.%d" % (d, i), "w").write("\n".join(items))
PY
	alarms=0 loose=0
	for i in $(seq 0 $((pairs - 1))); do
		mapfile -t b < "$d/items.$i"
		mapfile -t a < "$d/items.$((i + pairs))"
		python3 "$FT" "${b[@]}" | mktrace > "$d/b.tkt"
		python3 "$FT" "${a[@]}" | mktrace > "$d/a.tkt"
		trace-diff --json --threshold 0 --min-share 0 "$d/b.tkt" "$d/a.tkt" > "$d/o.json" ||
			[ $? -eq 1 ]
		n=$(jq '[.groups[] | select(.verdict == "faster" or .verdict == "slower")] | length' "$d/o.json")
		[ "$(jq .tested "$d/o.json")" -eq 60 ]
		[ "$n" -eq 0 ] || alarms=$((alarms + 1))
		# the count can fail: at alpha 0.5 the same rule errs often
		trace-diff --json --threshold 0 --min-share 0 --alpha 0.5 "$d/b.tkt" "$d/a.tkt" \
			> "$d/o.json" || [ $? -eq 1 ]
		n=$(jq '[.groups[] | select(.verdict == "faster" or .verdict == "slower")] | length' "$d/o.json")
		[ "$n" -eq 0 ] || loose=$((loose + 1))
	done
	echo "# $alarms of $pairs comparisons with a false change; $loose at alpha 0.5" >&3
	# at most alpha = 1 % expected: 2 of 20 has a chance below 2 %
	[ "$alarms" -le 1 ]
	under_valgrind || [ "$loose" -gt 0 ]
}

@test "a kernel called twice as often is slower by its count, and says so" {
	B=$(trace b.tkt kernel:k:1000x100 kernel:other:5000x100)
	A=$(trace a.tkt kernel:k:1000x200 kernel:other:5000x100)
	run -1 trace-diff --json "$B" "$A"
	jq -e '.groups[] | select(.name == "k") | .verdict == "slower" and .calls == "more" and
	       .evidence == "count" and .why == "more calls" and .ratio == 1 and
	       .delta_ns == 100000' <<< "$output"
	jq -e '.result.checks == [{type: "regression", subject: "k", kind: "kernel", value: 2,
	       limit: 1.03, pass: false}]' <<< "$output"
	run -1 trace-diff "$B" "$A"
	re=$'\n  slower +2\\.00x more calls +\\+100\\.000 us +100 -> 200 '
	[[ "$output" =~ $re ]]
	assert_eq "${lines[-1]}" "  FAIL  more calls: kernel k 100 -> 200 (+100.000 us)"
	# and the other way round, faster by fewer calls
	run -0 trace-diff --json "$A" "$B"
	jq -e '.groups[] | select(.name == "k") | .verdict == "faster" and .calls == "fewer"' <<< "$output"
	run -0 trace-diff --markdown "$A" "$B"
	[[ "$output" == *"| **faster** | 2.00x fewer calls | -100.000 us | 200 → 100 |"* ]]
	# a count within the threshold is not a change of count
	C=$(trace c.tkt kernel:k:1000x102 kernel:other:5000x100)
	run -0 trace-diff --json "$B" "$C"
	jq -e '.groups[] | select(.name == "k") | .verdict == "same" and .calls == null' <<< "$output"
}

@test "a median and a total that move opposite ways are unsure, and say why" {
	# same count; the median 20 % longer, the long tail gone: less time in all
	# (nanosecond durations: a clock tick of 1 ns)
	B=$(trace b.tkt kernel:k:1001x60,50001x40)
	A=$(trace a.tkt kernel:k:1201x60,2001x40)
	run -0 trace-diff --json "$B" "$A"
	jq -e '.groups[0] | .verdict == "unsure" and .why == "median longer, total shorter" and
	       .ratio > 1.19 and .delta_ns == (1201 * 60 + 2001 * 40) - (1001 * 60 + 50001 * 40)' <<< "$output"
	run -0 trace-diff --csv "$B" "$A"
	[[ "${lines[1]}" == *",unsure,"*",instances,,median longer, total shorter" ]] ||
		[[ "${lines[1]}" == *",unsure,"*",instances,,\"median longer, total shorter\"" ]]
}

@test "one run per side: verdicts rest on the instances, and the header says more runs would tell" {
	B=$(synth_trace b.tkt --steps 6 --layers 2)
	A=$(synth_trace a.tkt --steps 6 --layers 2 --seed 2)
	run -0 trace-diff "$B" "$A"
	[[ "$output" == *$'\nRuns    one run per side: instances of one run do not show the run-to-run spread, and the wall time is not tested; more runs (trace-record -r N) would tell\n'* ]]
	run -0 trace-diff --json "$B" "$A"
	jq -e '[.groups[] | select(.before and .after) | .evidence] | unique == ["instances"]' <<< "$output"
	B=$(synth_trace b3.tkt --steps 4 --layers 2 --runs 3)
	A=$(synth_trace a3.tkt --steps 4 --layers 2 --runs 3 --seed 2)
	run -0 trace-diff "$B" "$A"
	[[ "$output" != *$'\nRuns    '* ]]
	[[ "$output" == *"Welch's t over the 3 and 3 runs gives p < 0.01, Holm-adjusted over the "* ]]
	run -0 trace-diff --json "$B" "$A"
	jq -e '[.groups[] | select(.before and .after) | .evidence] | unique == ["runs"]' <<< "$output"
}
