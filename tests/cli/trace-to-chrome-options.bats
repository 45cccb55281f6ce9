#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-to-chrome: refused option values not tried elsewhere (--to,
# -S), --name given twice (the last one counts), and a trace that
# starts before 1970 (its start in UTC, computed here by Python).
# The conversions themselves are checked in trace-to-chrome.bats.

load helpers

setup() {
	T=$(synth_trace t.tkt -n 2000 --seed 3)
}

@test "invalid --to and -S: exit 2, the value named, nothing written" {
	run -2 --separate-stderr trace-to-chrome --to 3parsecs "$T"
	assert_eq "${stderr_lines[0]}" "trace-to-chrome: invalid --to '3parsecs' (a duration such as 1.5s or 200ms)"
	assert_eq "${stderr_lines[1]}" "Try 'trace-to-chrome --help' for more information."
	assert_eq "$output" ""
	run -2 --separate-stderr trace-to-chrome -S -1 "$T"
	assert_eq "${stderr_lines[0]}" "trace-to-chrome: invalid --buffer-size '-1' (bytes, or with k, M, G)"
	assert_eq "$output" ""
}

@test "--name twice: the last one counts" {
	trace-to-chrome --name '^cudaLaunchKernel$' -o "$BATS_TEST_TMPDIR/first.json" "$T"
	trace-to-chrome --name '^cudaMemcpyAsync$' -o "$BATS_TEST_TMPDIR/last.json" "$T"
	run -0 --separate-stderr trace-to-chrome --name '^cudaLaunchKernel$' --name '^cudaMemcpyAsync$' \
		-o "$BATS_TEST_TMPDIR/both.json" "$T"
	assert_eq "$stderr" ""
	cmp "$BATS_TEST_TMPDIR/last.json" "$BATS_TEST_TMPDIR/both.json"
	# what the last keeps, by name: only the memory copies (and the
	# counters, which --name never removes)
	assert_eq "$(jq -r '[.traceEvents[] | select(.ph == "X") | .name] | unique | join(",")' \
		"$BATS_TEST_TMPDIR/both.json")" "cudaMemcpyAsync"
	run -1 cmp -s "$BATS_TEST_TMPDIR/first.json" "$BATS_TEST_TMPDIR/both.json"
}

@test "a trace that starts before 1970: its start in nanoseconds and in UTC" {
	mktrace > "$BATS_TEST_TMPDIR/old.tkt" <<'EOF2'
{"def":"process","ref":"p","pid":1,"host":"h","argv":["x"]}
{"def":"thread","ref":"t","process":"p","tid":1,"name":"main"}
{"kind":"range","track":"t","ts":-1500000001,"dur":5,"name":"early"}
{"kind":"range","track":"t","ts":2000,"dur":5,"name":"later"}
EOF2
	run -0 --separate-stderr trace-to-chrome "$BATS_TEST_TMPDIR/old.tkt"
	assert_eq "$stderr" ""
	want=$(python3 -c '
import datetime
ns = -1500000001
s, frac = divmod(ns, 10**9)
t = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=s)
print("%s %s.%09dZ" % (ns, t.strftime("%Y-%m-%dT%H:%M:%S"), frac))')
	assert_eq "$(jq -r '.otherData.tracekit | "\(.trace_start_ns) \(.trace_start_utc)"' <<< "$output")" "$want"
	# and the events are placed from there: "later" 1.500002001 s after
	assert_eq "$(jq -c '[.traceEvents[] | select(.ph == "X") | [.name, .ts]]' <<< "$output")" \
		'[["early",0],["later",1500002.001]]'
}
