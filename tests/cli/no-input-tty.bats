#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Every reading command given no FILE at a terminal prints its usage and
# exits 2 instead of waiting for a trace to be typed (issue 19, item 7);
# from a pipe it reads standard input as before.

load helpers

@test "no FILE at a terminal: trace-dump, trace-merge, trace-to-chrome, trace-to-perfetto, trace-import print the usage, exit 2" {
	command -v script > /dev/null || skip "script(1) is not installed"
	for c in trace-dump trace-merge trace-to-chrome trace-to-perfetto trace-import trace-stats; do
		# script gives the command a terminal for standard input
		run timeout 20 script -qec "$c" /dev/null < /dev/null
		[ "$status" -eq 2 ] || { echo "$c: exit $status: $output" >&2; false; }
		[[ "$output" == *"Usage: $c [OPTIONS] [FILE"* ]] || { echo "$c: $output" >&2; false; }
		[[ "$output" == *"$c: no input: give a FILE, or pipe a trace into standard input"* ]]
	done
}

@test "no FILE from a pipe, or '-' at a terminal: standard input is read" {
	command -v script > /dev/null || skip "script(1) is not installed"
	T=$(synth_trace run.tkt --steps 2 --layers 1)
	want=$(trace-dump "$T" | wc -l)
	assert_eq "$(cat "$T" | trace-dump | wc -l)" "$want"
	assert_eq "$(cat "$T" | trace-merge | trace-dump | wc -l)" "$want"
	cat "$T" | trace-to-chrome | jq -e '.traceEvents | length > 0' > /dev/null
	# '-' asks for standard input even at a terminal: it is read (and
	# is empty here), no usage
	run timeout 20 script -qec "trace-dump -" /dev/null < /dev/null
	[[ "$output" != *"Usage:"* ]]
}
