#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Every long option in every command's --help appears in some test
# (tests/tools/check-options), and the long forms that no other test
# used do what their short forms do.

load helpers

setup() {
	D=$BATS_TEST_TMPDIR
	T=$(synth_trace run.tkt --steps 3 --layers 2)
}

@test "every long option of every command's --help is in some test" {
	run "$TK_SRC/tests/tools/check-options" "$TK_BUILD/bin" "$TK_SRC/tests/cli"
	printf '%s\n' "$output" >&3
	[ "$status" -eq 0 ]
	[[ "${lines[-1]}" =~ ^[1-9][0-9]*\ options\ checked,\ 0\ in\ no\ test$ ]]
	# and the check can fail: a command with an option no test names
	mkdir "$D/bin" "$D/cli"
	printf '#!/bin/sh\necho "  -x, --xyzzy-never-tested   nothing"\n' > "$D/bin/trace-fake"
	chmod +x "$D/bin/trace-fake"
	echo '@test "x" { trace-fake --other; }' > "$D/cli/trace-fake.bats"
	run -1 "$TK_SRC/tests/tools/check-options" "$D/bin" "$D/cli"
	assert_eq "${lines[0]}" "trace-fake: --xyzzy-never-tested is in no test"
}

@test "trace-to-chrome --output --gzip: as -o -z" {
	trace-to-chrome -o "$D/short.json.gz" -z "$T"
	trace-to-chrome --output "$D/long.json.gz" --gzip "$T"
	assert_eq "$(head -c 2 "$D/long.json.gz" | od -An -tx1 | tr -d ' ')" "1f8b"
	cmp <(gzip -dc "$D/short.json.gz") <(gzip -dc "$D/long.json.gz")
	cmp <(gzip -dc "$D/long.json.gz") <(trace-to-chrome "$T")
}

@test "trace-import --output --verbose: as -o -v" {
	trace-to-chrome -o "$D/in.json" "$T"
	run -0 --separate-stderr trace-import -o "$D/short.tkt" -v "$D/in.json"
	short_err=$stderr
	run -0 --separate-stderr trace-import --output "$D/long.tkt" --verbose "$D/in.json"
	assert_eq "$stderr" "$short_err"
	[ -n "$stderr" ]
	cmp <(trace-dump "$D/short.tkt") <(trace-dump "$D/long.tkt")
	# without it, nothing on stderr
	run -0 --separate-stderr trace-import --output "$D/quiet.tkt" "$D/in.json"
	assert_eq "$stderr" ""
}

@test "trace-merge --output --temporary-directory: as -o -T" {
	B=$(synth_trace b.tkt --steps 2 --pid 4242 --seed 5)
	trace-merge "$T" "$B" > "$D/stdout.tkt"
	trace-merge --output "$D/long.tkt" "$T" "$B"
	cmp <(trace-dump "$D/stdout.tkt") <(trace-dump "$D/long.tkt")
	# input that promises no order spills to the directory named
	run -2 --separate-stderr bash -c "scramble --no-watermark '$T' 2>/dev/null |
		trace-merge --buffer-size 16K --temporary-directory '$D/nonexistent' - > /dev/null"
	assert_eq "$stderr" "trace-merge: cannot create a temporary file in $D/nonexistent: No such file or directory"
}

@test "trace-record --output: the trace goes to the file" {
	run -0 trace-record --output "$D/r.tkt" -- true
	assert_eq "$(trace-dump --json "$D/r.tkt" | jq -r 'select(.kind == "process") | .exit_code')" 0
}

@test "trace-diff --quiet prints nothing, as -q; --full-names keeps long names whole" {
	A=$(synth_trace after.tkt --steps 3 --layers 2 --slow flash_bwd=1.5)
	# 6 instances each: the smallest exact p, 0.002, is 0.065 after Holm
	# over the 30 operations tested, hence alpha 0.1
	run -1 --separate-stderr trace-diff -a 0.1 --quiet "$T" "$A"
	assert_eq "$output$stderr" ""
	run -0 --separate-stderr trace-diff -a 0.1 --quiet "$T" "$T"
	assert_eq "$output$stderr" ""
	run -1 trace-diff -a 0.1 "$T" "$A"
	[ -n "$output" ]
	long=$(trace-dump --json "$T" | jq -r 'select(.kind == "kernel") | .name' | awk 'length > 150' | head -1)
	[ -n "$long" ]
	run -1 trace-diff -a 0.1 --kind kernel "$T" "$A"
	[[ "$output" != *"$long"* ]]
	run -1 trace-diff -a 0.1 --full-names --kind kernel "$T" "$A"
	[[ "$output" == *"$long"* ]]
}
