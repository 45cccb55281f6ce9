#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-record --max-size: the trace stays within the bound (plus at
# most one chunk: SIZE/8 of events before compression), keeps the
# newest (or the first) ranges exactly, and counts what it discarded.
#
# The expected ranges come from nvtx_sample: --flood N writes N ranges
# "flood", the i-th (from 0) with payload i, and prints how many it
# wrote; never from a trace.

load helpers
load record

# A flood of N ranges (fewer under valgrind: every event goes through
# trace-record's merges twice).
flood_n() {
	if under_valgrind; then echo 120000; else echo 400000; fi
}

# "min max count distinct" of the flood ranges' payloads in the trace.
payloads() {
	trace-dump --json -k range "${1:-$T}" |
		jq -s -r 'map(select(.name == "flood") | .payload) |
			"\(min) \(max) \(length) \(unique | length)"'
}

# Sum of the counts of the dropped ranges whose reason names the bound.
dropped_ranges() {
	trace-dump --json -k dropped "${1:-$T}" |
		jq -s -r "map(select(.name == \"range\" and (.reason | startswith(\"--max-size $2: \")))
			| .count) | add // 0"
}

# What nvtx_sample printed: the ranges it wrote.
written() {
	sed -n 's/^flood: \([0-9]*\) ranges written$/\1/p' <<<"$1"
}

# Every command reads the trace; its events are in begin order.
readable() {
	run -0 --separate-stderr trace-stats "$1"
	assert_eq "$stderr" ""
	assert_eq "$(trace-dump --json "$1" | jq -s '[.[].ts] | . == sort')" true
	under_valgrind && return 0   # the other readers: in the plain run
	trace-to-chrome "$1" | jq -e '.traceEvents | length > 0' >/dev/null
	trace-to-perfetto -o "$BATS_TEST_TMPDIR/p.pftrace" "$1"
	[ -s "$BATS_TEST_TMPDIR/p.pftrace" ]
	trace-merge -o "$BATS_TEST_TMPDIR/m.tkt" "$1" "$1"
}

@test "--max-size: the newest ranges, exactly; the rest counted; within the bound" {
	need_nvtx
	n=$(flood_n)
	run -0 trace-record -o "$T" --max-size 64K -- "$APPS/nvtx_sample" --steps 0 --threads 0 --flood "$n"
	w=$(written "$output")
	assert_eq "$w" "$n"
	size=$(stat -c %s "$T")
	echo "size $size, written $w, in the trace: $(payloads)"
	# the bound and one chunk of at most 64K/8
	[ "$size" -le $((65536 + 8192)) ]
	read -r lo hi k distinct <<<"$(payloads)"
	# something was discarded, something kept
	[ "$k" -gt 1000 ] && [ "$k" -lt "$w" ]
	# the newest: w-k .. w-1, each once
	assert_eq "$lo $hi $distinct" "$((w - k)) $((w - 1)) $k"
	assert_eq "$(($(dropped_ranges "$T" 64K) + k))" "$w"
	assert_eq "$(trace-dump --json -k dropped "$T" | jq -r .reason | sort -u)" \
		"--max-size 64K: older events discarded, the newest kept"
	# the process event is kept, with how it ended
	assert_eq "$(trace-dump --json -k process "$T" | jq -r '"\(.name) \(.exit_code)"')" "nvtx_sample 0"
	assert_eq "$(trace-dump -i "$T" | sed -n 's/^ *meta record.max_size = //p')" "64K keep=newest"
	readable "$T"
}

@test "--max-size-keep=first: the first ranges, exactly; the rest counted" {
	need_nvtx
	under_valgrind && skip "covered by the plain and sanitizer runs; a flood is slow under valgrind"
	n=$(flood_n)
	run -0 trace-record -o "$T" --max-size 96K --max-size-keep=first -- "$APPS/nvtx_sample" --steps 0 --threads 0 --flood "$n"
	w=$(written "$output")
	assert_eq "$w" "$n"
	size=$(stat -c %s "$T")
	echo "size $size, written $w, in the trace: $(payloads)"
	[ "$size" -le $((98304 + 12288)) ]
	read -r lo hi k distinct <<<"$(payloads)"
	[ "$k" -gt 1000 ] && [ "$k" -lt "$w" ]
	assert_eq "$lo $hi $distinct" "0 $((k - 1)) $k"
	assert_eq "$(($(dropped_ranges "$T" 96K) + k))" "$w"
	assert_eq "$(trace-dump --json -k dropped "$T" | jq -r .reason | sort -u)" \
		"--max-size 96K: later events discarded, the first kept"
	assert_eq "$(trace-dump --json -k process "$T" | jq -r '"\(.name) \(.exit_code)"')" "nvtx_sample 0"
	readable "$T"
}

@test "--max-size on stdout: the trace comes at the end, whole" {
	need_nvtx
	under_valgrind && skip "covered by the plain and sanitizer runs; a flood is slow under valgrind"
	n=$(flood_n)
	trace-record --max-size 64K -- "$APPS/nvtx_sample" --steps 0 --threads 0 --flood "$n" \
		2>"$BATS_TEST_TMPDIR/err" | cat > "$T"
	w=$(written "$(cat "$BATS_TEST_TMPDIR/err")")
	assert_eq "$w" "$n"
	read -r lo hi k distinct <<<"$(payloads)"
	[ "$k" -lt "$w" ]
	assert_eq "$lo $hi $distinct" "$((w - k)) $((w - 1)) $k"
	assert_eq "$(($(dropped_ranges "$T" 64K) + k))" "$w"
}

@test "--max-size on stdout whose reader went away: quiet, the command's status" {
	# the trace is written at the end, to a pipe closed long before
	run --separate-stderr bash -c \
		'trace-record --max-size 64K -- sh -c "sleep 0.3; exit 3" | true; echo "${PIPESTATUS[0]}"'
	assert_eq "$output" 3
	assert_eq "$stderr" ""
}

@test "--max-size that nothing reaches: every range, nothing dropped, every process" {
	need_nvtx
	run -0 trace-record -o "$T" --max-size 1M -r 2 -- "$APPS/nvtx_sample" --steps 0 --threads 0 --flood 2000
	assert_eq "$(payloads)" "0 1999 4000 2000"
	assert_eq "$(trace-dump --json -k dropped "$T")" ""
	assert_eq "$(trace-dump --json -k process "$T" | wc -l)" 2
	assert_eq "$(trace-dump --json -k run "$T" | jq -r .run | paste -sd' ')" "1 2"
	readable "$T"
}

@test "--max-size, --max-size-keep: bad values are usage errors" {
	run -125 --separate-stderr trace-record --max-size 10K -- true
	assert_eq "${stderr_lines[0]}" "trace-record: --max-size: '10K' is too small (at least 64K)"
	run -125 --separate-stderr trace-record --max-size lots -- true
	assert_eq "${stderr_lines[0]}" "trace-record: --max-size: invalid size 'lots' (e.g. 100M, 2G)"
	run -125 --separate-stderr trace-record --max-size 1M --max-size-keep=oldest -- true
	assert_eq "${stderr_lines[0]}" "trace-record: --max-size-keep: expected newest or first, not 'oldest'"
	run -125 --separate-stderr trace-record --max-size-keep=first -- true
	assert_eq "${stderr_lines[0]}" "trace-record: --max-size-keep needs --max-size"
	# newest, named: the default
	run -0 trace-record --max-size 1M --max-size-keep=newest -o "$T" -- sh -c 'exit 0'
	assert_eq "$(ev 'select(.kind=="process") | .name')" sh
}
