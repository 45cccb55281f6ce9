#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-record following processes and threads where timing matters:
# many threads at once, signals to threads, a thread that execs, a
# stopped job, hundreds of short processes, processes outside the
# recording window, orphans.  What is expected comes from the commands
# themselves (what they ran, what they counted), never from a trace.

load helpers
load record

# The processes of a trace: "name exit_code", sorted.
processes() {
	ev 'select(.kind=="process") | "\(.name) \(.exit_code)"' "$1" | sort
}

@test "300 threads at once, a signal to each of ten reaches it, a thread that execs takes the process" {
	# threads_signals.py counts the SIGUSR1s its threads handled, then
	# one of its threads execs sh -c 'exit 7'
	run -7 trace-record -o "$T" -- python3 "$TK_SRC/tests/cli/threads_signals.py" 300 \
		"$BATS_TEST_TMPDIR/hits"
	assert_eq "$(cat "$BATS_TEST_TMPDIR/hits")" 10
	# the exec'd thread took the process: one process event, as sh, with
	# the status of `exit 7` (python3 may be a wrapper script: its own
	# processes are in the trace too), every pid once
	assert_eq "$(ev 'select(.kind=="process" and .name=="sh") | .exit_code')" 7
	assert_eq "$(ev 'select(.kind=="process") | .pid' | sort | uniq -d)" ""
}

@test "a stopped command stays stopped under ptrace until SIGCONT: SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU" {
	local d=$BATS_TEST_TMPDIR cpid state sig
	for sig in STOP TSTP TTIN TTOU; do
		rm -f "$d/f" "$d/f.pid"
		trace-record -o "$T" -- sh -c 'echo $$ > "$1.pid"; kill -'$sig' $$; echo resumed > "$1"' \
			sh "$d/f" &
		local rec=$!
		for _ in $(seq 100); do [ -s "$d/f.pid" ] && break; sleep 0.05; done
		cpid=$(cat "$d/f.pid")
		for _ in $(seq 100); do
			state=$(awk '{print $3}' "/proc/$cpid/stat")
			[[ "$state" == [Tt] ]] && break
			sleep 0.05
		done
		[[ "$state" == [Tt] ]]
		sleep 0.3
		# still stopped: trace-record kept its group-stop
		[ ! -e "$d/f" ]
		kill -CONT "$cpid"
		local st=0
		wait "$rec" || st=$?
		assert_eq "$st" 0
		assert_eq "$(cat "$d/f")" resumed
		assert_eq "$(processes "$T")" "sh 0"
	done
}

@test "550 short processes of one run: each in the trace, with its status" {
	run -0 trace-record -o "$T" -- sh -c \
		'i=0; while [ $i -lt 550 ]; do if [ $((i % 2)) = 0 ]; then /bin/true; else /bin/false; fi; i=$((i + 1)); done'
	assert_eq "$(processes "$T" | uniq -c | awk '{print $1, $2, $3}')" \
		"275 false 1
1 sh 0
275 true 0"
	# every pid once
	assert_eq "$(ev 'select(.kind=="process") | .pid' "$T" | sort | uniq -d)" ""
}

@test "--delay: a process that ended before the recording window is not in the trace" {
	run -0 trace-record --delay 300ms -o "$T" -- sh -c '/bin/true; sleep 0.6; /bin/false; exit 0'
	assert_eq "$(processes "$T")" "false 1
sh 0
sleep 0"
}

@test "--no-ptrace: an orphan that lived and died between two scans is reaped, nothing else changes" {
	# (sh -c ... &) in a subshell: its parent is gone at once, it comes
	# back to trace-record (the subreaper) and ends before any scan
	run -0 trace-record --no-ptrace --flush-interval 1s -o "$T" -- sh -c \
		'(sh -c "exit 5" &); sleep 0.3; exit 0'
	# the command and its sleep (whose status a scan cannot know); the
	# orphan may or may not have been seen
	processes "$T" | grep -qx 'sh 0'
	processes "$T" | grep -qx 'sleep null'
	[ -z "$(processes "$T" | grep -v -e '^sh 0$' -e '^sh null$' -e '^sleep null$')" ]
}
