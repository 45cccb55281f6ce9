#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-record and its injection library when the calls that create
# things fail: pipe2, fork, memfd_create, signalfd, posix_spawnp,
# pthread_create, and poll during the run.  tests/apps/faultsys.c,
# loaded with LD_PRELOAD, fails the Nth call of one of them in one
# program (FAULTSYS_PROG) and logs it (FAULTSYS_LOG), so each test knows
# its fault happened.  What trace-record cannot do without is one line
# and 125 (man page, EXIT STATUS); what it can do without (metadata from
# git, the CUDA driver probe) changes nothing else in the trace.  The
# expected lines are strerror's words for the errno given.

load helpers
load record

setup() {
	record_setup
	SHIM=$TK_BUILD/tests/apps/libfaultsys.so
	[ -f "$SHIM" ] || skip "the fault injector was not built: $SHIM"
	under_valgrind && skip "not under valgrind: LD_PRELOAD would load into valgrind"
	D=$BATS_TEST_TMPDIR
	LOG=$D/faults.log
	# the command: two processes of its own, one output file
	CMD=(sh -c 'sh -c "exit 3"; echo ran > "$1"' sh "$D/ran")
}

# failing PROG CALL:N:ERRNO TRACE-RECORD-ARGS...: trace-record with the
# Nth CALL of PROG failing.
failing() {
	local prog=$1 fail=$2
	shift 2
	: > "$LOG"
	rm -f "$D/ran"
	env LD_PRELOAD="$SHIM" FAULTSYS_PROG="$prog" FAULTSYS_FAIL="$fail" FAULTSYS_LOG="$LOG" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		trace-record "$@"
}

# The call the shim failed ("CALL N"), or nothing.
failed() {
	cut -d' ' -f2- "$LOG"
}

# The processes of a trace, without pids or times: "exit_code name",
# sorted; and its metadata keys.
processes() {
	ev 'select(.kind=="process") | "\(.exit_code) \(.name)"' "$1" | sort
}
meta_keys() {
	trace-dump --info --json "$1" | jq -r '.metadata | keys[]' | sort
}

@test "a pipe or fork that trace-record needs fails: one line, 125, the command never runs, no trace to read" {
	# its first calls are for metadata and the driver probe, which
	# may fail (the next test); the one for the command may not
	for spec in pipe2:EMFILE:"Too many open files" fork:EAGAIN:"Resource temporarily unavailable"; do
		call=${spec%%:*} rest=${spec#*:}
		err=${rest%%:*} words=${rest#*:}
		word=$call
		[ "$call" = pipe2 ] && word=pipe
		hit=
		for n in 1 2 3 4 5 6 7 8; do
			run --separate-stderr failing trace-record "$call:$n:$err" -o "$T" -- "${CMD[@]}"
			assert_eq "$(failed)" "$call $n"
			if [ "$status" -eq 125 ]; then
				hit=$n
				break
			fi
		done
		[ -n "$hit" ]
		assert_eq "$stderr" "trace-record: $word: $words"
		[ ! -e "$D/ran" ]
		# what is left of the output says it is not a trace
		run -1 --separate-stderr trace-dump "$T"
		assert_eq "$stderr" "trace-dump: $T: truncated at byte $(stat -c %s "$T") (the trace has no end marker: its writer did not finish)"
	done
}

@test "a pipe, fork or spawn for metadata or the driver probe fails: the same processes, nothing said, metadata only lost" {
	run -0 --separate-stderr trace-record -o "$D/ref.tkt" -- "${CMD[@]}"
	processes "$D/ref.tkt" > "$D/ref.procs"
	meta_keys "$D/ref.tkt" > "$D/ref.meta"
	assert_eq "$(cat "$D/ref.procs")" "$(printf '0 sh\n3 sh')"
	for call in pipe2 fork posix_spawnp; do
		for n in 1 2 3 4 5 6 7 8; do
			run --separate-stderr failing trace-record "$call:$n:EAGAIN" -o "$T" -- "${CMD[@]}"
			# past the calls it makes, or at the one it needs
			[ -s "$LOG" ] && [ "$status" -ne 125 ] || break
			assert_eq "$status" 0
			assert_eq "$stderr" ""
			assert_eq "$(cat "$D/ran")" ran
			assert_eq "$(processes "$T")" "$(cat "$D/ref.procs")"
			# no key that a run without faults does not have
			assert_eq "$(meta_keys "$T" | comm -23 - "$D/ref.meta")" ""
		done
		# every call but the last one tried was one it can do without
		[ "$n" -gt 1 ]
	done
}

@test "its memory files or its signal descriptor cannot be made: one line, 125, the command never runs" {
	run -125 --separate-stderr failing trace-record memfd_create:1:EMFILE -o "$T" -- "${CMD[@]}"
	assert_eq "$stderr" "trace-record: memfd_create: Too many open files"
	assert_eq "$(failed)" "memfd_create 1"
	[ ! -e "$D/ran" ]
	# --max-size keeps a second one, for the processes' lives
	run -125 --separate-stderr failing trace-record memfd_create:2:ENFILE -o "$T" --max-size 1M -- "${CMD[@]}"
	assert_eq "$stderr" "trace-record: memfd_create: Too many open files in system"
	assert_eq "$(failed)" "memfd_create 2"
	[ ! -e "$D/ran" ]
	run -125 --separate-stderr failing trace-record signalfd:1:ENOMEM -o "$T" -- "${CMD[@]}"
	assert_eq "$stderr" "trace-record: signalfd: Cannot allocate memory"
	assert_eq "$(failed)" "signalfd 1"
	[ ! -e "$D/ran" ]
}

@test "poll fails while the command runs: one line, 125, the command and its processes killed and waited for, the trace says it is unfinished" {
	# the command starts a child, then makes "go": the first poll of
	# trace-record after that fails (their output elsewhere: `run`
	# waits for the end of its pipe)
	rm -f "$D/ran.go" "$D/ran.child"
	export FAULTSYS_AFTER=$D/ran.go
	run -125 --separate-stderr failing trace-record \
		poll:1:ENOMEM -o "$T" -- sh -c \
		'exec >/dev/null 2>&1; sleep 30 & echo $! > "$1.child"; : > "$1.go"; sleep 1; echo ran > "$1"; wait' \
		sh "$D/ran"
	unset FAULTSYS_AFTER
	assert_eq "$stderr" "trace-record: poll: Cannot allocate memory"
	assert_eq "$(failed)" "poll 1"
	# the child is gone (or a zombie of whoever adopted it), at once
	local child state
	child=$(cat "$D/ran.child")
	state=$(ps -o stat= -p "$child" || true)
	[[ -z "$state" || "$state" == Z* ]]
	# the command is gone: it never writes its file
	sleep 1.3
	[ ! -e "$D/ran" ]
	run -1 --separate-stderr trace-dump "$T"
	[[ "$stderr" == "trace-dump: $T: truncated at byte "* ]]
}

@test "a recorded program cannot start its flusher thread: its process is there, and the trace says its ranges are not" {
	need_nvtx
	run -0 --separate-stderr failing nvtx_sample pthread_create:1:EAGAIN -o "$T" -- \
		"$APPS/nvtx_sample" --steps 2 --threads 0
	assert_eq "$(failed)" "pthread_create 1"
	pid=$(cut -d' ' -f1 "$LOG")
	assert_eq "$(ev 'select(.kind=="process") | "\(.pid) \(.exit_code) \(.name)"')" "$pid 0 nvtx_sample"
	# not one range or mark, and the reason
	assert_eq "$(ev 'select(.kind!="process") | .kind')" ""
	assert_eq "$(trace-dump --info --json "$T" | jq -r .metadata.nvtx)" \
		"not recorded (pid $pid): no flusher thread: Resource temporarily unavailable"
}

# alloc_sweep OPTION...: trace-record OPTION... with each of its first
# 30 allocations failing in turn (setting up), then every 11th to the
# end (every one with TK_SWEEP_STEP=1, by hand: a minute): either exit 0 with the processes of a run without faults and
# nothing on stderr, or 125, one line of these, and no output that reads
# as a whole trace; never a word on its stdout (the teardown checks that
# no spool directory is left).
alloc_sweep() {
	run -0 --separate-stderr trace-record -o "$D/ref.tkt" "$@" -- "${CMD[@]}"
	processes "$D/ref.tkt" > "$D/ref.procs"
	# how many allocations a run makes
	run -0 failing trace-record alloc:0:ENOMEM -o "$T" "$@" -- "${CMD[@]}"
	total=$(awk '$2 == "alloc" && $3 == "count" { print $4 }' "$LOG")
	[ "$total" -gt 100 ]
	fails=0 fine=0
	# (the count varies a little with the timing: past the end of a
	# run, no call fails)
	for n in $(seq 1 30) $(seq 31 "${TK_SWEEP_STEP:-11}" "$total") "$total"; do
		rm -f "$T"
		run --separate-stderr failing trace-record "alloc:$n:ENOMEM" -o "$T" "$@" -- "${CMD[@]}"
		[ -s "$LOG" ] || [ "$n" -gt $((total - 20)) ]
		[ ! -s "$LOG" ] || assert_eq "$(failed)" "alloc $n"
		assert_eq "$output" ""          # nothing on trace-record's stdout
		if [ "$status" -eq 0 ]; then
			fine=$((fine + 1))
			assert_eq "$stderr" ""
			assert_eq "$(cat "$D/ran")" ran
			assert_eq "$(processes "$T")" "$(cat "$D/ref.procs")"
			continue
		fi
		fails=$((fails + 1))
		assert_eq "$status" 125
		case $stderr in
		"trace-record: out of memory" | "trace-record: $T: out of memory" | \
		"trace-record: memfd: out of memory" | \
		"trace-record: $T: Cannot allocate memory" | \
		"trace-record: $T: write error: Cannot allocate memory") ;;
		*) echo "allocation $n: $stderr" >&2; false ;;
		esac
		if [ -e "$T" ]; then
			run ! trace-dump "$T"
		fi
	done
	# both outcomes were seen
	[ "$fails" -gt 0 ] && [ "$fine" -gt 0 ]
}

@test "memory runs out at any allocation of trace-record: the whole trace and exit 0, or one line and 125 and no trace that reads as whole" {
	under_sanitizers && skip "the allocation shim replaces malloc: not with a sanitizer's"
	SHIM=$TK_BUILD/tests/apps/libfaultalloc.so
	alloc_sweep
}

@test "memory runs out at any allocation of trace-record --max-size, sampling: the same" {
	under_sanitizers && skip "the allocation shim replaces malloc: not with a sanitizer's"
	SHIM=$TK_BUILD/tests/apps/libfaultalloc.so
	alloc_sweep --max-size 1M -s 20ms
}

@test "memory runs out at any allocation of a recorded program: each range, mark or async range is in the trace or counted as dropped" {
	under_sanitizers && skip "the allocation shim replaces malloc: not with a sanitizer's"
	need_nvtx
	SHIM=$TK_BUILD/tests/apps/libfaultalloc.so
	prog=("$APPS/nvtx_sample" --steps 2 --threads 0 --async)
	# the events a run without faults records: its NVTX ones by kind
	run -0 failing nvtx_sample alloc:0:ENOMEM -o "$D/ref.tkt" -- "${prog[@]}"
	total=$(awk '$2 == "alloc" && $3 == "count" { print $4 }' "$LOG")
	nvtx='select(.kind=="range" or .kind=="mark" or .kind=="async_range")'
	want=$(trace-dump --json "$D/ref.tkt" | jq -s "[.[] | $nvtx] | length")
	[ "$want" -gt 10 ]
	accounted=0 counted=0 unrecorded=0
	# (the count varies a little with the timing: past the end of a
	# run, no call fails)
	for n in $(seq 1 "$total"); do
		run -0 --separate-stderr failing nvtx_sample "alloc:$n:ENOMEM" -o "$T" -- "${prog[@]}"
		[ -s "$LOG" ] || [ "$n" -gt $((total - 5)) ]
		[ ! -s "$LOG" ] || assert_eq "$(failed)" "alloc $n"
		assert_eq "$stderr" ""
		# "exit_code name" of each process, then the NVTX events
		# recorded, then those counted as dropped, then the drops
		# whose reason is not memory (the program flushed, its
		# buffers never fill: memory is the only cause here)
		{ read -r proc; read -r got; read -r drops; read -r blamed; } < <(trace-dump --json "$T" | jq -rs "
			([.[] | select(.kind==\"process\") | \"\\(.exit_code):\\(.name)\"] | join(\",\")),
			([.[] | $nvtx] | length),
			([.[] | select(.kind==\"dropped\") | .count] | add // 0),
			([.[] | select(.kind==\"dropped\" and (.reason | test(\"out of memory\") | not))] | length)")
		assert_eq "$blamed" 0
		assert_eq "$proc" "0:nvtx_sample"
		if [ "$got" -eq 0 ] && [ "$drops" -eq 0 ]; then
			# KNOWN GAP: memory failing while the library sets the
			# process up (its spool, its writer) leaves the process
			# unrecorded without a word: there is no spool yet to
			# say so in
			unrecorded=$((unrecorded + 1))
			continue
		fi
		# recorded plus counted as dropped: all of them
		assert_eq "$((got + drops))" "$want"
		accounted=$((accounted + 1))
		[ "$drops" -eq 0 ] || counted=$((counted + 1))
	done
	[ "$accounted" -gt 0 ] && [ "$counted" -gt 0 ]
}
