#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-record under faults, beyond those of trace-record.bats (the
# command killed with SIGKILL or SIGTERM, SIGINT to trace-record and to
# its process group, 50 children, closed descriptors, another working
# directory, TMPDIR missing, trace-record killed): a disk full from the
# start or during the run, the prefix a killed trace-record leaves read by
# every reader, other signals passed on, a command killed with a child
# left running, 50 children recording NVTX at once, a TMPDIR that exists
# but cannot be written, and the command's own behaviour unchanged.

load helpers
load record

@test "a run longer than ten flush intervals, with children, is quiet" {
	# the shell's lifetime comes late, by design: it is no broken promise
	run -0 --separate-stderr trace-record --flush-interval 20ms -o "$T" -- \
		sh -c 'sleep 0.5; sleep 0.3'
	assert_eq "$stderr" ""
	assert_eq "$(ev 'select(.kind=="process") | .name' | sort | paste -sd,)" "sh,sleep,sleep"
	# and the promises of the output hold: merging it finds nothing late
	run -0 --separate-stderr trace-merge "$T"
	assert_eq "$stderr" ""
}

@test "output to a full disk, or closed: exit 125, one line, the command not run" {
	require_dev_full
	local ran=$BATS_TEST_TMPDIR/ran
	run -125 --separate-stderr trace-record -o /dev/full -- touch "$ran"
	assert_eq "$stderr" "trace-record: /dev/full: No space left on device"
	run -125 --separate-stderr bash -c "trace-record -- touch '$ran' > /dev/full"
	assert_eq "$stderr" "trace-record: (stdout): No space left on device"
	run -125 --separate-stderr bash -c "trace-record -- touch '$ran' >&-"
	assert_eq "$stderr" "trace-record: (stdout): Bad file descriptor"
	[ ! -e "$ran" ]
	[ -c /dev/full ]
}

@test "a disk that fills during the run: exit 125, one line, the command runs on, the prefix reads" {
	need_nvtx
	under_valgrind && skip "valgrind: the spool and its timing differ"
	unshare -m true 2>/dev/null ||
		skip "cannot make a mount namespace (unshare -m) for a small file system"
	local mnt=$BATS_TEST_TMPDIR/small
	mkdir "$mnt"
	run --separate-stderr unshare -m sh -c '
		mount -t tmpfs -o size=64k tmpfs "$1" || exit 99
		trace-record --flush-interval 20ms -o "$1/run.tkt" -- sh -c \
			"\"$2\" --steps 2000 --threads 2 --wide; echo done > \"$3\"; exit 4"
		status=$?
		cp "$1/run.tkt" "$3.tkt"
		exit $status' sh "$mnt" "$APPS/nvtx_sample" "$BATS_TEST_TMPDIR/done"
	[ "$status" != 99 ] || skip "cannot mount a tmpfs (needs privileges)"
	assert_eq "$status" 125
	assert_eq "$stderr" "trace-record: $mnt/run.tkt: write error: No space left on device"
	assert_eq "$(cat "$BATS_TEST_TMPDIR/done")" done
	run -1 --separate-stderr trace-dump "$BATS_TEST_TMPDIR/done.tkt"
	[[ "$stderr" =~ ^trace-dump:\ .*/done.tkt:\ truncated\ chunk\ at\ byte\ [0-9]+$ ]]
	[ "${#lines[@]}" -gt 1000 ]
}

# trace_killed_at SECONDS: record nvtx_sample, kill trace-record with
# SIGKILL after SECONDS; the program goes on and removes the spool.
trace_killed_at() {
	trace-record --flush-interval 20ms -o "$T" -- "$APPS/nvtx_sample" \
		--steps 60 --threads 1 --sleep 30 &
	local pid=$!
	sleep "$1"
	kill -KILL "$pid"
	wait "$pid" || true
}

wait_spool_gone() {
	for i in $(seq 100); do
		ls "$TMPDIR" | grep -q '^tracekit-' || return 0
		sleep 0.1
	done
}

@test "the prefix a killed trace-record leaves reads in every reader" {
	need_nvtx
	under_valgrind && skip "timing: too slow under valgrind"
	trace_killed_at 1.2
	local msg="truncated at byte [0-9]+ \\(the trace has no end marker: its writer did not finish\\)"
	run -1 --separate-stderr trace-dump "$T"
	[[ "$stderr" =~ ^trace-dump:\ $T:\ $msg$ ]]
	n=${#lines[@]}
	[ "$n" -gt 100 ]
	run -1 --separate-stderr trace-stats --json "$T"
	[[ "$stderr" =~ ^trace-stats:\ $T:\ $msg$ ]]
	assert_eq "$(jq .run.events <<< "$output")" "$n"
	run -1 --separate-stderr trace-to-chrome "$T"
	[[ "$stderr" =~ ^trace-to-chrome:\ $T:\ $msg$ ]]
	assert_eq "$(jq .otherData.tracekit.events_read <<< "$output")" "$n"
	trace-merge -k -o "$BATS_TEST_TMPDIR/m.tkt" "$T" 2> /dev/null || true
	assert_eq "$(trace-dump "$BATS_TEST_TMPDIR/m.tkt" | wc -l)" "$n"
	wait_spool_gone
}

@test "killed before its first chunk: a header alone, which readers call truncated" {
	# the command kills trace-record at once
	run -137 trace-record -o "$T" -- sh -c 'kill -9 $PPID'
	assert_eq "$(stat -c %s "$T")" 36
	run -1 --separate-stderr trace-stats "$T"
	assert_eq "$stderr" "trace-stats: $T: truncated at byte 36 (the trace has no end marker: its writer did not finish)"
	assert_eq "$output" ""
	# no recorded program is left to remove the spool directory, which
	# stays behind (trace-record(1), ENVIRONMENT)
	rm -rf "$TMPDIR"/tracekit-*
}

@test "killed while writing to a pipe: the reader reports the cut and keeps the rest" {
	need_nvtx
	under_valgrind && skip "timing: too slow under valgrind"
	local pidfile=$BATS_TEST_TMPDIR/pid
	run -1 --separate-stderr bash -c "
		sh -c 'echo \$\$ > \"\$1\"; exec trace-record --flush-interval 20ms -- \"\$2\" --steps 60 --threads 1 --sleep 30 2>/dev/null' \\
			sh '$pidfile' '$APPS/nvtx_sample' | trace-stats --json &
		sleep 1.2
		kill -KILL \$(cat '$pidfile')
		wait \$!"
	[[ "$stderr" =~ ^trace-stats:\ \(stdin\):\ truncated\ at\ byte\ [0-9]+ ]]
	[ "$(jq .run.events <<< "$output")" -gt 100 ]
	wait_spool_gone
}

@test "SIGTERM, SIGHUP and SIGQUIT to trace-record reach the command once" {
	local got=$BATS_TEST_TMPDIR/got
	for sig in TERM HUP QUIT; do
		rm -f "$got" "$got.ready"
		# the command says when its trap is set (a loaded machine may
		# take seconds to start it)
		env --default-signal trace-record -o "$T" -- sh -c \
			"trap 'echo $sig >> \"$got\"; exit 7' $sig; : > \"$got.ready\"; sleep 30 & wait" &
		pid=$!
		for _ in $(seq 600); do [ -e "$got.ready" ] && break; sleep 0.1; done
		kill -"$sig" "$pid"
		status=0
		wait "$pid" || status=$?
		assert_eq "$status" 7
		assert_eq "$(cat "$got")" "$sig"
		# complete: the shell's exit, and the sleep left running
		run -0 trace-dump --json "$T"
		assert_eq "$(jq -r 'select(.kind=="process") | "\(.name) \(.exit_code)"' <<< "$output" | sort | paste -sd,)" \
			"sh 7,sleep null"
		kill "$(jq -r 'select(.kind=="process" and .name=="sleep") | .pid' <<< "$output")"
	done
}

@test "the command killed with a child left running: trace-record ends with it" {
	local start=$SECONDS
	run -137 trace-record -o "$T" -- sh -c "sleep 30 > /dev/null 2>&1 & echo \$! > '$BATS_TEST_TMPDIR/orphan'; kill -9 \$\$"
	kill "$(cat "$BATS_TEST_TMPDIR/orphan")"
	[ $((SECONDS - start)) -lt 20 ]
	# the child still running (caught before or after its exec) has no end
	assert_eq "$(ev 'select(.kind=="process") | "\(.signal) \(.exit_code)"' | sort | paste -sd,)" \
		"9 null,null null"
}

@test "50 children recording NVTX at once: every event of every one" {
	need_nvtx
	run -0 trace-record -o "$T" -- sh -c \
		"for i in \$(seq 50); do '$APPS/nvtx_sample' --steps 2 --threads 1 & done; wait"
	# 16 ranges and marks in each (nvtx_sample.c), none dropped
	assert_eq "$(ev 'select(.kind=="range" or .kind=="mark") | .pid' | sort | uniq -c | awk '{ print $1 }' | sort | uniq -c | awk '{ print $1 "x" $2 }')" "50x16"
	assert_eq "$(ev 'select(.kind=="process" and .name=="nvtx_sample") | .exit_code' | sort | uniq -c | awk '{ print $1 "x" $2 }')" "50x0"
	assert_eq "$(ev 'select(.kind=="dropped") | .count')" ""
}

@test "a TMPDIR that exists but cannot be written: spools elsewhere, says so once" {
	need_nvtx
	under_valgrind && skip "valgrind itself needs a usable TMPDIR"
	# /proc refuses new files even to root
	run -0 --separate-stderr env TMPDIR=/proc trace-record -o "$T" -- sh -c \
		"echo \"\$TMPDIR\" > '$BATS_TEST_TMPDIR/seen'; '$APPS/nvtx_sample' --steps 1 --threads 0"
	[[ "$stderr" =~ ^trace-record:\ cannot\ create\ files\ in\ TMPDIR=/proc\ \([^\)]*\)\;\ spooling\ in\ /tmp$ ]]
	assert_eq "$(cat "$BATS_TEST_TMPDIR/seen")" /proc
	assert_eq "$(ev 'select(.kind=="range") | .name' | wc -l)" 6
}

@test "the command's own behaviour is unchanged" {
	# what a program can see of its surroundings, bare and recorded (less
	# the variables through which the NVTX and CUDA tools are loaded, and
	# those valgrind gives the program it runs, trace-record here)
	export HIDDEN='_|NVTX_INJECTION64_PATH|CUDA_INJECTION64_PATH|TRACEKIT_[A-Z_]*|SHLVL'
	under_valgrind && HIDDEN="$HIDDEN|GLIBCPP_FORCE_NEW|GLIBCXX_FORCE_NEW|LD_LIBRARY_PATH|LD_PRELOAD"
	local probe='
		echo "args: $*"
		echo "cwd: $(pwd)"
		echo "umask: $(umask)"
		echo "limits: $(ulimit -n) $(ulimit -s) $(ulimit -c)"
		grep -E "^(SigIgn|SigBlk|SigCgt):" /proc/self/status
		echo "stdin: $(cat)"
		env | grep -v -E "^($HIDDEN)=" | sort
		echo "to stderr" >&2
		yes | head -1
		exit 42'
	cd "$BATS_TEST_TMPDIR"
	run -42 --separate-stderr bash -c "echo input | sh -c '$probe' probe a 'b c'"
	bare_out=$output bare_err=$stderr
	run -42 --separate-stderr bash -c "echo input | trace-record -o '$T' -- sh -c '$probe' probe a 'b c'"
	assert_eq "$output" "$bare_out"
	assert_eq "$stderr" "$bare_err"
	assert_eq "$(ev 'select(.kind=="process" and .exit_code==42) | .name')" sh
}
