#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-record: commands that are found but cannot be run (the child's
# exec fails after the fork), the search of PATH as a shell does it,
# option values refused, and the recording window cutting an
# asynchronous range, from the library's flush and from trace-record's
# recovery of a process that ended with _exit.  Expected lines and
# statuses come from the man page (EXIT STATUS: 125, 126, 127).

load helpers
load record

@test "a script whose #! interpreter is missing: 127, one line, no process recorded" {
	# valgrind cannot go on after an execve that fails (it exits 101)
	under_valgrind && skip "not under valgrind: a failing exec ends valgrind itself"
	printf '#!/nonexistent/interpreter\necho never\n' > "$BATS_TEST_TMPDIR/badinterp"
	chmod 755 "$BATS_TEST_TMPDIR/badinterp"
	for opt in "" --no-ptrace; do
		run -127 --separate-stderr trace-record $opt -o "$T" -- "$BATS_TEST_TMPDIR/badinterp"
		assert_eq "$stderr" "trace-record: $BATS_TEST_TMPDIR/badinterp: No such file or directory"
		assert_eq "$output" ""
		assert_eq "$(ev 'select(.kind=="process") | .name')" ""
	done
}

@test "a directory: 126, one line" {
	run -126 --separate-stderr trace-record -o "$T" -- "$BATS_TEST_TMPDIR"
	assert_eq "$stderr" "trace-record: $BATS_TEST_TMPDIR: Is a directory"
	[ ! -e "$T" ]
}

@test "PATH: a name not executable is skipped for a later one, alone it is 126; no PATH is the shell's default" {
	mkdir -p "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	printf 'exit 9\n' > "$BATS_TEST_TMPDIR/a/tkcmd"
	chmod 644 "$BATS_TEST_TMPDIR/a/tkcmd"
	printf '#!/bin/sh\nexit 7\n' > "$BATS_TEST_TMPDIR/b/tkcmd"
	chmod 755 "$BATS_TEST_TMPDIR/b/tkcmd"
	rec=$TK_BUILD/bin/trace-record
	# the first of PATH is not executable: the second runs (exit 7)
	run -7 --separate-stderr env PATH="$BATS_TEST_TMPDIR/a::$BATS_TEST_TMPDIR/b" "$rec" -o "$T" -- tkcmd
	assert_eq "$stderr" ""
	assert_eq "$(ev 'select(.kind=="process") | .exit_code')" 7
	# only the one that is not: permission denied, 126
	run -126 --separate-stderr env PATH="$BATS_TEST_TMPDIR/a" "$rec" -o "$T.2" -- tkcmd
	assert_eq "$stderr" "trace-record: tkcmd: Permission denied"
	[ ! -e "$T.2" ]
	# no PATH at all: /usr/local/bin:/usr/bin:/bin, where true is
	run -0 --separate-stderr env -u PATH "$rec" -o "$T" -- true
	assert_eq "$stderr" ""
	assert_eq "$(ev 'select(.kind=="process") | "\(.name) \(.exit_code)"')" "true 0"
}

@test "option values refused: one line each, exit 125, the command never runs" {
	m=$BATS_TEST_TMPDIR/ran
	check() {
		local want=$1
		shift
		run -125 --separate-stderr trace-record "$@" -- touch "$m"
		assert_eq "${stderr_lines[0]}" "trace-record: $want"
		[ ! -e "$m" ]
	}
	check "--flush-interval: '999us' is too short" --flush-interval 999us
	check "--sample-interval: '10us' is too short" --sample-interval 10us
	check "--duration: '0s' is too short" --duration 0s
	check "--skip: invalid count 'x'" --capture-range nvtx:step --skip x
	check "--warmup: invalid count '4294967296'" --capture-range nvtx:step --warmup 4294967296
	check "--active: at least 1" --capture-range nvtx:step --active 0
	check "--capture-range: the range has no name" --capture-range nvtx:@dom
	check "--max-size-keep: expected newest or first, not 'last'" --max-size 1M --max-size-keep=last
	check "unknown option '-x'" -x
	run -125 --separate-stderr trace-record -o
	assert_eq "${stderr_lines[0]}" "trace-record: option '-o' needs a value"
	run -125 --separate-stderr trace-record --label
	assert_eq "${stderr_lines[0]}" "trace-record: option '--label' needs a value"
}

# The prefetch range of nvtx_sample --async opens before the first step
# and ends after loader 0's first load (--work 400 ms); a 200 ms window
# ends while it is open: it is cut at the window's end, unfinished, to
# the nanosecond (the window starts at the run's start metadata).
window_cut() {
	trace-dump --csv "$T" | python3 -c '
import csv, sys
t0 = int(sys.argv[1])
end = t0 + 200 * 10**6
rows = [r for r in csv.DictReader(sys.stdin) if r["name"] == "prefetch"]
assert len(rows) == 1, rows
r = rows[0]
assert r["kind"] == "async_range", r
assert int(r["ts"]) + int(r["dur"]) == end, (int(r["ts"]) + int(r["dur"]) - end)
assert "unfinished" in r["args"], r
for r in csv.DictReader(open(sys.argv[2])):
    if r["kind"] in ("range", "mark"):
        assert int(r["ts"]) + int(r["dur"]) <= end, r
' "$(start_ns "$T")" <(trace-dump --csv "$T")
}

@test "--duration cuts an open asynchronous range at the window's end, flushed or recovered" {
	need_nvtx
	# a 200 ms window: under valgrind the program may not have opened
	# the range by then (seen on a loaded machine)
	under_valgrind && skip "timing: too slow under valgrind"
	app=("$APPS/nvtx_sample" --async --steps 1 --layers 0 --threads 1 --work 400000)
	run -0 trace-record -o "$T" --duration 200ms -- "${app[@]}"
	window_cut
	# ended with _exit before any flush: trace-record recovers it from
	# the spool, and cuts it the same way
	run -3 trace-record -o "$T" --flush-interval 60s --duration 200ms -- "${app[@]}" --quick-exit --exit 3
	window_cut
}

@test "a terminal on stdout, or a --max-size output that cannot be opened: one line, 125, the command never runs" {
	command -v script > /dev/null || skip "no script(1) to give trace-record a terminal"
	m=$BATS_TEST_TMPDIR/ran
	for opt in "" "--max-size 1M"; do
		run -125 script -qec "trace-record $opt -- touch '$m'" /dev/null
		assert_eq "$(printf '%s' "$output" | tr -d '\r')" \
			"trace-record: refusing to write a binary trace to a terminal; use -o FILE or a pipe"
		[ ! -e "$m" ]
	done
	run -125 --separate-stderr trace-record --max-size 1M -o "$BATS_TEST_TMPDIR/no/x.tkt" -- touch "$m"
	assert_eq "$stderr" "trace-record: $BATS_TEST_TMPDIR/no/x.tkt: No such file or directory"
	[ ! -e "$m" ]
}
