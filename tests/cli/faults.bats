#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# System calls that fail as no file system does on demand: write(2)
# interrupted, short, returning 0, or out of space part way; read(2) and
# pread(2) interrupted, short, or failing part way; close(2) failing;
# /proc's children files missing.  tests/apps/faultio.c, loaded with
# LD_PRELOAD, makes them fail on the files named by FAULTIO_MATCH.
# Interrupted and short calls must change nothing (the bytes or events of
# a run without faults); the others must give the exit status of the
# man page and one line naming the file.  Every test checks through
# FAULTIO_LOG that its faults really happened.

load helpers

setup() {
	SHIM=$TK_BUILD/tests/apps/libfaultio.so
	[ -f "$SHIM" ] || skip "the fault injector was not built: $SHIM"
	# valgrind would load the shim into itself, not into the command
	under_valgrind && skip "not under valgrind: LD_PRELOAD would load into valgrind"
	D=$BATS_TEST_TMPDIR
	A=$(synth_trace a.tkt -n 3000 --seed 7 --chunk-bytes 8192)
	B=$(synth_trace b.tkt -n 800 --seed 8 --pid 5151 --chunk-bytes 8192)
	LOG=$D/faults.log
}

# faulty VAR=VALUE... -- COMMAND...: COMMAND with the shim loaded and
# the FAULTIO_ variables given (a sanitized command is told not to mind
# the shim coming before its runtime).
faulty() {
	local vars=()
	while [ "$1" != -- ]; do vars+=("$1"); shift; done
	shift
	env LD_PRELOAD="$SHIM" FAULTIO_LOG="$LOG" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		"${vars[@]}" "$@"
}

# The calls the shim changed, over every process that logged.
changed() {
	awk '{ n += $2 } END { print n + 0 }' "$LOG"
}

@test "writes interrupted (EINTR) or short: the output is byte for byte the same" {
	trace-merge -o "$D/ref.tkt" "$A" "$B"
	for how in eintr short; do
		: > "$LOG"
		run -0 --separate-stderr faulty FAULTIO_MATCH=out- FAULTIO_WRITE=$how -- \
			trace-merge -o "$D/out-$how.tkt" "$A" "$B"
		assert_eq "$stderr" ""
		cmp "$D/ref.tkt" "$D/out-$how.tkt"
		[ "$(changed)" -gt 0 ]
	done
}

@test "a write that returns 0: an I/O error, exit 2, one line" {
	run -2 --separate-stderr faulty FAULTIO_MATCH=out- FAULTIO_WRITE=zero -- \
		trace-merge -o "$D/out-zero.tkt" "$A" "$B"
	assert_eq "$stderr" "trace-merge: $D/out-zero.tkt: write error: Input/output error"
	[ "$(changed)" -gt 0 ]
}

@test "a disk that fills part way: exit 2, one line, no byte past the limit" {
	run -2 --separate-stderr faulty FAULTIO_MATCH=out- FAULTIO_WRITE=enospc:5000 -- \
		trace-merge -o "$D/out-full.tkt" "$A" "$B"
	assert_eq "$stderr" "trace-merge: $D/out-full.tkt: write error: No space left on device"
	[ "$(stat -c %s "$D/out-full.tkt")" -le 5000 ]
	[ "$(changed)" -gt 0 ]
	# trace-record: the command still runs, its status is kept
	run -125 --separate-stderr faulty FAULTIO_MATCH=rec- FAULTIO_WRITE=enospc:100 -- \
		trace-record -o "$D/rec-full.tkt" -- sh -c 'echo ran > "$1"' sh "$D/ran"
	assert_eq "${#stderr_lines[@]}" 1
	[[ "$stderr" == "trace-record: $D/rec-full.tkt: write error: No space left on device" ]]
	assert_eq "$(cat "$D/ran")" ran
}

@test "close(2) of the output fails: a write error, exit 2 (merge) and 125 (record)" {
	run -2 --separate-stderr faulty FAULTIO_MATCH=out- FAULTIO_CLOSE=eio -- \
		trace-merge -o "$D/out-close.tkt" "$A" "$B"
	assert_eq "$stderr" "trace-merge: $D/out-close.tkt: write error: Input/output error"
	: > "$LOG"
	run -125 --separate-stderr faulty FAULTIO_MATCH=rec- FAULTIO_CLOSE=eio -- \
		trace-record -o "$D/rec-close.tkt" -- true
	assert_eq "$stderr" "trace-record: $D/rec-close.tkt: write error: Input/output error"
	[ "$(changed)" -gt 0 ]
}

@test "trace-record's memory file for its own events full: one line naming it, 125, the command never runs" {
	# (memfd's writes fail with ENOSPC when its memory runs out; it was
	# "out of memory", which it was not)
	run -125 --separate-stderr faulty FAULTIO_MATCH=memfd:tracekit-self FAULTIO_WRITE=enospc:0 -- \
		trace-record -o "$D/self.tkt" -- touch "$D/ran"
	assert_eq "$stderr" "trace-record: memfd: No space left on device"
	[ "$(changed)" -gt 0 ]
	[ ! -e "$D/ran" ]
}

@test "trace-record --max-size: its output full or failing to close, one line, 125" {
	run -125 --separate-stderr faulty FAULTIO_MATCH=bnd- FAULTIO_WRITE=enospc:100 -- \
		trace-record -o "$D/bnd-full.tkt" --max-size 1M -- sh -c 'exit 3'
	assert_eq "$stderr" "trace-record: $D/bnd-full.tkt: No space left on device"
	[ "$(changed)" -gt 0 ]
	: > "$LOG"
	run -125 --separate-stderr faulty FAULTIO_MATCH=bnd- FAULTIO_CLOSE=eio -- \
		trace-record -o "$D/bnd-close.tkt" --max-size 1M -- true
	assert_eq "$stderr" "trace-record: $D/bnd-close.tkt: write error: Input/output error"
	[ "$(changed)" -gt 0 ]
}

@test "reads interrupted (EINTR) or short, of files and pipes: the same events" {
	trace-dump --csv "$A" > "$D/ref.csv"
	trace-merge -o "$D/ref.tkt" "$A" "$B"
	for how in eintr short; do
		: > "$LOG"
		# a file: pread(2) for the scan of trace-merge and for the reader
		run -0 --separate-stderr faulty FAULTIO_MATCH=a.tkt FAULTIO_READ=$how -- \
			trace-merge -o "$D/m-$how.tkt" "$A" "$B"
		assert_eq "$stderr" ""
		cmp "$D/ref.tkt" "$D/m-$how.tkt"
		faulty FAULTIO_MATCH=a.tkt FAULTIO_READ=$how -- trace-dump --csv "$A" > "$D/f-$how.csv"
		cmp "$D/ref.csv" "$D/f-$how.csv"
		# a pipe: read(2)
		faulty FAULTIO_MATCH=pipe: FAULTIO_READ=$how -- trace-dump --csv - < <(cat "$A") \
			> "$D/p-$how.csv"
		cmp "$D/ref.csv" "$D/p-$how.csv"
		[ "$(changed)" -gt 10 ]
	done
}

@test "a read error part way: exit 1, one line with the byte offset, the events before it" {
	run -1 --separate-stderr faulty FAULTIO_MATCH=a.tkt FAULTIO_READ=eio:20000 -- \
		trace-dump --csv "$A"
	[[ "$stderr" =~ ^trace-dump:\ $A:\ read\ error\ at\ byte\ ([0-9]+):\ Input/output\ error$ ]]
	at=${BASH_REMATCH[1]}
	[ "$at" -le 20000 ]
	# what came out is a prefix of the whole, with events in it
	trace-dump --csv "$A" > "$D/ref.csv"
	printf '%s\n' "$output" > "$D/got.csv"
	n=$(wc -l < "$D/got.csv")
	[ "$n" -gt 1 ]
	head -n "$n" "$D/ref.csv" | cmp - "$D/got.csv"
	# trace-merge stops there too, without -k
	: > "$LOG"
	run -1 --separate-stderr faulty FAULTIO_MATCH=a.tkt FAULTIO_READ=eio:20000 -- \
		trace-merge -o "$D/m.tkt" "$A" "$B"
	[[ "$stderr" =~ ^trace-merge:\ $A:\ read\ error\ at\ byte\ [0-9]+:\ Input/output\ error$ ]]
	[ "$(changed)" -gt 0 ]
}

@test "trace-merge --align of a pipe: a temporary directory missing or full, exit 2, one line" {
	run -2 --separate-stderr bash -c "cat '$A' | trace-merge --align start -T '$D/none' -o '$D/m.tkt' - '$B'"
	assert_eq "$stderr" "trace-merge: cannot create a temporary file in $D/none: No such file or directory"
	mkdir "$D/tmp"
	run -2 --separate-stderr faulty FAULTIO_MATCH="$D/tmp/" FAULTIO_WRITE=enospc:3000 -- \
		bash -c "cat '$A' | trace-merge --align start -T '$D/tmp' -o '$D/m.tkt' - '$B'"
	assert_eq "$stderr" "trace-merge: temporary file in $D/tmp: No space left on device"
	[ "$(changed)" -gt 0 ]
}

@test "trace-record --no-ptrace without /proc's children files: found by a scan of /proc" {
	export TMPDIR=$D
	run -4 --separate-stderr faulty FAULTIO_HIDE=/children -- \
		trace-record --no-ptrace -o "$D/r.tkt" -- \
		sh -c 'sleep 0.4 & sleep 0.4; (exit 3); wait; exit 4'
	assert_eq "$stderr" ""
	[ "$(changed)" -gt 0 ]
	# the shell with its status; both sleeps, children of the shell,
	# whose status only the shell knew (and the subshell of `(exit 3)`
	# where a scan came while it lived: on a loaded machine, or in a
	# coverage build, whose processes take longer to end)
	trace-dump --json "$D/r.tkt" | jq -r 'select(.kind=="process") | "\(.name) \(.exit_code)"' |
		grep -vx 'sh null' | sort > "$D/procs"
	assert_eq "$(paste -sd, "$D/procs")" "sh 4,sleep null,sleep null"
	sh=$(trace-dump --json "$D/r.tkt" | jq -r 'select(.kind=="process" and .name=="sh" and .exit_code==4) | .pid')
	assert_eq "$(trace-dump --info --json "$D/r.tkt" |
		jq "[.tracks[] | select(.type==\"process\" and .ppid==$sh and .argv[0]==\"sleep\")] | length")" 2
}

# leftover: the worker threads (common/ordpool.c's, named tk-ordpool)
# still running when the command exited, as the shim saw them
leftover() {
	grep -c ' tk-ordpool$' "$D/threads.list" || true
}

@test "a write error or a closed pipe: trace-dump and trace-to-chrome -z stop their workers before they exit" {
	local n=40000
	under_valgrind && n=8000
	T=$(synth_trace t.tkt -n $n)
	export TK_THREADS=3 FAULTIO_THREADS=$D/threads.list
	# /dev/full and a closed pipe, met by the caller's thread while the
	# workers wait for or work on the next blocks
	for cmd in "trace-dump --csv" "trace-dump --json" "trace-to-chrome -z"; do
		: > "$D/threads.list"
		run -2 --separate-stderr faulty -- bash -c "exec $cmd '$T' > /dev/full"
		[[ "$stderr" == "${cmd%% *}: "*"write error: No space left on device" ]]
		assert_eq "$(leftover)" 0
		# a reader that goes away: quiet, status 0, and the same
		: > "$D/threads.list"
		run -0 --separate-stderr faulty -- bash -c "$cmd '$T' | head -c 1000 > /dev/null; exit \${PIPESTATUS[0]}"
		assert_eq "$stderr" ""
		assert_eq "$(leftover)" 0
	done
	# a disk that fills part way (-z writes with write(2), which the
	# shim sees; trace-dump's stdio does not go through it)
	: > "$D/threads.list"
	run -2 --separate-stderr faulty FAULTIO_MATCH=out- FAULTIO_WRITE=enospc:200000 -- \
		trace-to-chrome -z -o "$D/out-full.json.gz" "$T"
	assert_eq "$stderr" "trace-to-chrome: $D/out-full.json.gz: write error: No space left on device"
	[ "$(changed)" -gt 0 ]
	assert_eq "$(leftover)" 0
	[ ! -e "$D/out-full.json.gz" ]
}

@test "trace-record --max-size: reads of its bounded spool interrupted or short change nothing; failing, one line and 125" {
	nvtx=$TK_BUILD/tests/apps/nvtx_sample
	[ -x "$nvtx" ] || skip "NVTX headers were not found at build time (CUDA_HOME): no NVTX sample"
	n=100000
	for how in eintr short; do
		: > "$LOG"
		run -0 --separate-stderr faulty FAULTIO_MATCH=/bounded FAULTIO_READ=$how -- \
			trace-record -o "$D/bound-$how.tkt" --max-size 64K -- \
			"$nvtx" --steps 0 --threads 0 --flood $n
		assert_eq "$stderr" ""
		assert_eq "$output" "flood: $n ranges written"
		[ "$(changed)" -gt 0 ]
		# the newest ranges, each once, and the rest counted
		read -r min max count distinct dropped < <(trace-dump --json "$D/bound-$how.tkt" | jq -rs '
			(map(select(.kind == "range" and .name == "flood") | .payload)) as $p |
			"\($p | min) \($p | max) \($p | length) \($p | unique | length) " +
			"\(map(select(.kind == "dropped" and .name == "range") | .count) | add)"')
		assert_eq "$max" $((n - 1))
		assert_eq "$min" $((n - count))
		assert_eq "$distinct" "$count"
		assert_eq "$((count + dropped))" $n
		[ "$dropped" -gt 0 ]
	done
	: > "$LOG"
	run -125 --separate-stderr faulty FAULTIO_MATCH=/bounded FAULTIO_READ=eio:3000 -- \
		trace-record -o "$D/bound-eio.tkt" --max-size 64K -- \
		"$nvtx" --steps 0 --threads 0 --flood $n
	assert_eq "$output" "flood: $n ranges written"    # the command ran to its end
	[[ "$stderr" =~ ^"trace-record: "/[^\ ]*/tracekit-[^/]*"/bounded: read error: Input/output error"$ ]]
	[ "$(changed)" -gt 0 ]
	run ! trace-dump "$D/bound-eio.tkt"
}
