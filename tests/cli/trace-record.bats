#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-record: processes, NVTX ranges, exit statuses and signals, the
# options, faults while recording, and errors.  Every figure is checked
# against what the command is known to do (tests/apps/nvtx_sample.c
# documents its events) with jq over trace-dump --json.

load helpers
load record

# jq over the whole trace as one array
evs() {
	trace-dump --json "${2:-$T}" | jq -s -r "$1"
}

# Each range named INNER lies within a range named OUTER on its thread,
# in exact integer nanoseconds (jq's numbers are doubles): inside INNER OUTER
inside() {
	trace-dump --csv "$T" | python3 -c '
import csv, sys
inner, outer = sys.argv[1], sys.argv[2]
rows = [r for r in csv.DictReader(sys.stdin) if r["kind"] == "range"]
span = lambda r: (int(r["ts"]), int(r["ts"]) + int(r["dur"]))
outs = [(r["tid"], span(r)) for r in rows if r["name"] == outer]
ins = [r for r in rows if r["name"].startswith(inner)]
bad = [r["name"] for r in ins if not any(t == r["tid"] and o[0] <= span(r)[0]
       and span(r)[1] <= o[1] for t, o in outs)]
sys.exit(1 if bad or not ins else 0)' "$1" "$2"
}

@test "--help and --version; every long option is in the man page" {
	run -0 trace-record --help
	[[ "$output" == "Usage: trace-record [OPTIONS] [--] COMMAND [ARG...]"* ]]
	opts=$(printf '%s\n' "$output" | grep -oE -- '--[a-z][a-z-]+' | sort -u)
	[ -n "$opts" ]
	for o in $opts; do
		grep -q -- "Fl Fl ${o#--}" "$TK_SRC/man/trace-record.1" ||
			{ echo "not in the man page: $o"; return 1; }
	done
	run -0 trace-record --version
	assert_eq "$output" "trace-record (tracekit) 0.1.0"
}

@test "records every process of a shell command with its exit status" {
	run -5 trace-record -o "$T" -- sh -c 'ls / > /dev/null; (exit 3); (sleep 0.1; exit 4) & wait; exit 5'
	assert_eq "$(ev 'select(.kind=="process") | "\(.name) \(.exit_code)"' | sort | paste -sd,)" \
		"ls 0,sh 3,sh 4,sh 5,sleep 0"
	# the parent of ls and the subshells is the first shell; sleep's is
	# the second subshell
	root=$(evs '[.[] | select(.kind=="process")] | min_by(.ts) | .pid')
	n=$(trace-dump --info --json "$T" | jq "[.tracks[] | select(.type==\"process\" and .ppid==$root)] | length")
	assert_eq "$n" 3
	sleeper=$(ev 'select(.name=="sleep") | .pid')
	sub=$(trace-dump --info --json "$T" | jq ".tracks[] | select(.type==\"process\" and .pid==$sleeper) | .ppid")
	assert_eq "$(ev "select(.kind==\"process\" and .pid==$sub) | .exit_code")" 4
	# every process: an end after its start, and resource use
	assert_eq "$(ev 'select(.kind=="process" and (.dur <= 0 or .max_rss <= 0)) | .name')" ""
}

@test "exit status is the command's, 128+N for a signal" {
	run -42 trace-record -o "$T" -- sh -c 'exit 42'
	assert_eq "$(ev 'select(.kind=="process") | .exit_code')" 42
	run -143 trace-record -o "$T" -- sh -c 'kill -TERM $$'
	assert_eq "$(ev 'select(.kind=="process") | .signal')" 15
	run -137 trace-record -o "$T" -- sh -c 'kill -KILL $$'
	assert_eq "$(ev 'select(.kind=="process") | .signal')" 9
}

@test "a command that cannot be run: 127 or 126, one line, like a shell" {
	run -127 --separate-stderr trace-record -o "$T" -- no-such-command-xyz
	assert_eq "$stderr" "trace-record: no-such-command-xyz: command not found"
	[ ! -e "$T" ]
	run -127 --separate-stderr trace-record -o "$T" -- ./no/such/file
	assert_eq "$stderr" "trace-record: ./no/such/file: No such file or directory"
	printf 'data\n' > "$BATS_TEST_TMPDIR/notexec"
	chmod 644 "$BATS_TEST_TMPDIR/notexec"
	run -126 --separate-stderr trace-record -o "$T" -- "$BATS_TEST_TMPDIR/notexec"
	assert_eq "$stderr" "trace-record: $BATS_TEST_TMPDIR/notexec: Permission denied"
}

@test "an executable script without #!: a shell runs it, as execvp does" {
	printf 'echo "ran with $# args: $1"\nexit 6\n' > "$BATS_TEST_TMPDIR/noshebang"
	chmod 755 "$BATS_TEST_TMPDIR/noshebang"
	for opt in "" --no-ptrace; do
		run -6 --separate-stderr trace-record $opt -o "$T" -- "$BATS_TEST_TMPDIR/noshebang" one two
		assert_eq "$output" "ran with 2 args: one"
		assert_eq "$stderr" ""
		assert_eq "$(ev 'select(.kind=="process") | "\(.name) \(.exit_code)"')" "sh 6"
	done
}

@test "errors of trace-record itself: one line, exit 125" {
	run -125 --separate-stderr trace-record -o /nonexistent/dir/x.tkt -- true
	assert_eq "$stderr" "trace-record: /nonexistent/dir/x.tkt: No such file or directory"
	run -125 --separate-stderr trace-record --bogus -- true
	assert_eq "$stderr" "trace-record: unknown option '--bogus'
Try 'trace-record --help' for more information."
	run -125 --separate-stderr trace-record
	assert_eq "${stderr_lines[0]}" "trace-record: no command to record"
	run -125 --separate-stderr trace-record --repeat 0 -- true
	assert_eq "${stderr_lines[0]}" "trace-record: --repeat: at least 1"
	run -125 --separate-stderr trace-record --sample-interval 10xs -- true
	assert_eq "${stderr_lines[0]}" "trace-record: --sample-interval: invalid duration '10xs' (e.g. 10ms, 1.5s)"
	run -125 --separate-stderr trace-record --meta novalue -- true
	assert_eq "${stderr_lines[0]}" "trace-record: --meta: expected KEY=VALUE, not 'novalue'"
	run -125 --separate-stderr trace-record --warmup 1 -- true
	assert_eq "${stderr_lines[0]}" "trace-record: --skip, --warmup, --active and --repeat-cycles need --capture-range"
	run -125 --separate-stderr trace-record --capture-range=step -- true
	assert_eq "${stderr_lines[0]}" "trace-record: --capture-range: expected nvtx:NAME[@DOMAIN], not 'step'"
	run -125 --separate-stderr trace-record --meta =v -- true
	assert_eq "${stderr_lines[0]}" "trace-record: --meta: expected KEY=VALUE, not '=v'"
	run -125 --separate-stderr trace-record --capture-range=nvtx: -- true
	assert_eq "${stderr_lines[0]}" "trace-record: --capture-range: expected nvtx:NAME[@DOMAIN], not 'nvtx:'"
	run -125 --separate-stderr trace-record --capture-range=nvtx:@dom -- true
	assert_eq "${stderr_lines[0]}" "trace-record: --capture-range: the range has no name"
	run -125 --separate-stderr trace-record --capture-range=nvtx:s --active 0 -- true
	assert_eq "${stderr_lines[0]}" "trace-record: --active: at least 1"
	run -125 --separate-stderr trace-record --repeat 4294967296 -- true
	assert_eq "${stderr_lines[0]}" "trace-record: --repeat: invalid count '4294967296'"
	run -125 --separate-stderr trace-record --duration 0s -- true
	assert_eq "${stderr_lines[0]}" "trace-record: --duration: '0s' is too short"
	run -125 --separate-stderr trace-record -o
	assert_eq "${stderr_lines[0]}" "trace-record: option '-o' needs a value"
	run -125 --separate-stderr trace-record -x -- true
	assert_eq "${stderr_lines[0]}" "trace-record: unknown option '-x'"
	run -125 --separate-stderr trace-record --cuda=kernels -- true
	assert_eq "${stderr_lines[0]}" "trace-record: --cuda: unknown activity 'kernels' (kernel, memcpy, memset, memory, runtime, driver, api, sync, overhead, all, none)"
	# (the rest of --cuda: trace-record-cuda.bats)
}

@test "the injection library missing: one line, exit 125" {
	need_nvtx
	[ ! -e /usr/local/lib/tracekit/libtracekit-inject.so ] ||
		skip "an installed injection library would be found"
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	cp "$TK_BUILD/bin/trace-record" "$BATS_TEST_TMPDIR/bin/"
	run -125 --separate-stderr "$BATS_TEST_TMPDIR/bin/trace-record" -o "$T" -- true
	assert_eq "$stderr" "trace-record: injection library not found: /usr/local/lib/tracekit/libtracekit-inject.so (run 'make', or 'make install')"
}

# (what the injection library exports: trace-record-cuda.bats)

@test "NVTX ranges, marks, payloads, colours, categories, domains and threads, exactly" {
	need_nvtx
	run -0 trace-record -o "$T" -- "$APPS/nvtx_sample" --steps 3 --layers 2 --threads 2 --domain --async --wide
	kinds=$(ev '.kind' | sort | uniq -c | awk '{ print $2 "=" $1 }' | paste -sd' ')
	# 3 steps x (step forward 2 layers backward optimizer) + 2x3 loads + io
	assert_eq "$kinds" "async_range=1 mark=4 process=1 range=25"
	assert_eq "$(ev 'select(.kind=="range") | .name' | sort | uniq -c | awk '{ print $2 "=" $1 }' | paste -sd' ')" \
		"backward=3 forward=3 io=1 layer.0=3 layer.1=3 load=6 optimizer=3 step=3"
	# step: payload = its index, colour, category 1
	assert_eq "$(ev 'select(.name=="step") | "\(.payload) \(.color) \(.category)"' | paste -sd,)" \
		"0 4285970688 1,1 4285970688 1,2 4285970688 1"
	assert_eq "$(ev 'select(.name=="loss") | .payload' | paste -sd,)" "1,0.5,0.3333333333333333"
	assert_eq "$(ev 'select(.kind=="mark" and .name!="loss") | .name')" "wide-ü"
	assert_eq "$(ev 'select(.name=="io") | "\(.domain) \(.category)"')" "sample 2"
	# every layer inside a forward inside a step, on the same thread
	inside layer. forward
	inside forward step
	inside backward step
	inside optimizer step
	# (the loaders run on their own threads, outside any step)
	run -1 inside load step
	# threads: the loaders named through NVTX, with their own tids
	assert_eq "$(ev 'select(.name=="load") | .thread' | sort | uniq -c | awk '{ print $2 "=" $1 }' | paste -sd' ')" \
		"loader-0=3 loader-1=3"
	assert_eq "$(ev 'select(.kind=="range") | .tid' | sort -u | wc -l)" 3
	# the start/end range ends on another thread
	assert_eq "$(ev 'select(.kind=="async_range") | "\(.name) \(.thread)"')" "prefetch nvtx_sample"
	# category names and the domain's
	trace-dump --info "$T" | grep -qx '  category /1 = compute'
	trace-dump --info "$T" | grep -qx '  category sample/2 = disk'
	# all of it comes in begin order
	evs '[.[].ts] | . == sort' | grep -qx true
}

@test "a forked child records into its own process" {
	need_nvtx
	run -0 trace-record -o "$T" -- "$APPS/nvtx_sample" --steps 1 --threads 0 --fork
	parent=$(ev 'select(.name=="step") | .pid')
	child=$(ev 'select(.name=="child.work") | .pid')
	[ "$child" != "$parent" ]
	assert_eq "$(ev "select(.kind==\"process\") | .pid" | sort -n | paste -sd' ')" "$(printf '%s\n' "$parent" "$child" | sort -n | paste -sd' ')"
	assert_eq "$(ev "select(.pid==$child and .kind!=\"process\") | .name" | paste -sd,)" "child.work,child.done"
	ppid=$(trace-dump --info --json "$T" | jq ".tracks[] | select(.type==\"process\" and .pid==$child) | .ppid")
	assert_eq "$ppid" "$parent"
}

@test "a program without NVTX still gets its processes, times and resources" {
	run -0 trace-record -o "$T" -- sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; head -c 20000000 /dev/zero | tail -c 1 > /dev/null'
	assert_eq "$(ev 'select(.kind=="process") | .name' | sort | paste -sd,)" "head,sh,tail"
	# the shell's loop shows in its CPU time; head and tail moved 20 MB
	ev 'select(.name=="sh") | .utime + .stime' | awk '{ exit !($1 > 1000000) }'
	ev 'select(.name=="tail") | .max_rss' | awk '{ exit !($1 > 1000000) }'
	assert_eq "$(trace-dump --info --json "$T" | jq -r '.metadata["record.processes"]')" "ptrace"
}

@test "SIGKILL of the command: exit 137, what it wrote is kept, flushed or not" {
	need_nvtx
	# never flushed: all 3 steps (7 events each) recovered from its
	# buffers, nothing counted as lost
	run -137 trace-record -o "$T" -- "$APPS/nvtx_sample" --steps 3 --threads 0 --signal 9
	assert_eq "$(ev 'select(.kind=="range" or .kind=="mark") | .name' | wc -l)" 21
	assert_eq "$(ev 'select(.kind=="dropped") | .count')" ""
	assert_eq "$(ev 'select(.kind=="process") | .signal')" 9
	# flushed every 20 ms and killed after a pause: every event kept
	run -137 trace-record -o "$T" --flush-interval 20ms -- "$APPS/nvtx_sample" --steps 3 --threads 0 --sleep 100 --signal 9
	assert_eq "$(ev 'select(.kind=="range" or .kind=="mark") | .name' | wc -l)" 21
	assert_eq "$(ev 'select(.kind=="dropped") | .count')" ""
	# with loaders: kept and lost add up to what it recorded
	run -137 trace-record -o "$T" -- "$APPS/nvtx_sample" --steps 3 --threads 2 --signal 9
	kept=$(ev 'select(.kind=="range" or .kind=="mark") | .name' | wc -l)
	lost=$(ev 'select(.kind=="dropped") | .count')
	assert_eq "$((kept + ${lost:-0}))" 27
}

@test "SIGTERM of the command: flushed on the way out, nothing lost" {
	need_nvtx
	run -143 trace-record -o "$T" -- "$APPS/nvtx_sample" --steps 3 --threads 2 --signal 15
	assert_eq "$(ev 'select(.kind=="range" or .kind=="mark") | .name' | wc -l)" 27
	assert_eq "$(ev 'select(.kind=="dropped") | .count')" ""
	assert_eq "$(ev 'select(.kind=="process") | .signal')" 15
}

@test "a range never closed is written as unfinished at exit" {
	need_nvtx
	run -0 trace-record -o "$T" -- "$APPS/nvtx_sample" --steps 1 --threads 0 --hold-open
	assert_eq "$(ev 'select(.name=="never.closed") | .args.unfinished')" "true"
	assert_eq "$(ev 'select(.kind=="range" and .args.unfinished) | .name')" "never.closed"
}

@test "--repeat runs the command N times into one trace, each run marked" {
	need_nvtx
	run -0 trace-record -o "$T" --repeat 3 -- "$APPS/nvtx_sample" --steps 2 --threads 1
	assert_eq "$(ev 'select(.kind=="run") | "\(.run) \(.exit_code)"' | paste -sd,)" "1 0,2 0,3 0"
	assert_eq "$(ev 'select(.kind=="process") | .name' | wc -l)" 3
	assert_eq "$(ev 'select(.name=="step") | .name' | wc -l)" 6
	# each run holds its process, and the runs follow each other (1 us
	# of slack: jq's numbers are doubles)
	evs '[.[] | select(.kind=="run")] as $r | [.[] | select(.kind=="process")] as $p
	     | [range(3)] | all(. as $i | $p[$i].ts >= $r[$i].ts - 1000
	                       and $p[$i].ts + $p[$i].dur <= $r[$i].ts + $r[$i].dur + 1000
	                       and ($i == 0 or $r[$i].ts >= $r[$i-1].ts + $r[$i-1].dur - 1000))' | grep -qx true
	assert_eq "$(trace-dump --info --json "$T" | jq -r '.metadata["record.repeat"]')" 3
}

@test "--repeat with runs that outlast the ticks, and --duration ending the recording in the last run" {
	# runs of 0.3 s: every run's process inside its run, in order
	run -0 trace-record -o "$T" --repeat 2 --flush-interval 40ms -- sleep 0.3
	assert_eq "$(ev 'select(.kind=="run") | .run' | paste -sd,)" "1,2"
	evs '[.[] | select(.kind=="run")] as $r | [.[] | select(.kind=="process")] as $p
	     | ($r | length) == 2 and ($p | length) == 2 and ($r[0].dur >= 300000000)
	       and ($r[1].ts >= $r[0].ts + $r[0].dur - 1000)
	       and ([range(2)] | all(. as $i | $p[$i].ts >= $r[$i].ts - 1000
	                             and $p[$i].ts + $p[$i].dur <= $r[$i].ts + $r[$i].dur + 1000))' |
		grep -qx true
	# --duration bounds each run; the trace ends once the last run's
	# window has been flushed: that run's event is cut there (written
	# once), while the first one is whole
	run -0 trace-record -o "$T" --repeat 2 --duration 100ms --flush-interval 20ms -- sleep 0.4
	assert_eq "$(ev 'select(.kind=="run") | .run' | paste -sd,)" "1,2"
	evs '[.[] | select(.kind=="run")] | (.[0].dur >= 400000000)
	     and (.[1].dur >= 100000000) and (.[1].dur < 400000000)' | grep -qx true
}

@test "--repeat stops at a failed run and exits with its status" {
	run -4 trace-record -o "$T" --repeat 3 -- sh -c 'exit 4'
	assert_eq "$(ev 'select(.kind=="run") | "\(.run) \(.exit_code)"')" "1 4"
}

@test "--repeat with a run killed by a signal: stops there, 128+N, the run event names the signal" {
	run -143 trace-record -o "$T" -r 3 -- sh -c 'kill -TERM $$'
	assert_eq "$(ev 'select(.kind=="run") | "\(.run) \(.signal) \(.exit_code)"')" "1 15 null"
}

@test "--capture-range: skip, warmup, active, repeat-cycles over occurrences of a range" {
	need_nvtx
	run -0 trace-record -o "$T" --capture-range=nvtx:step --skip 1 --warmup 1 --active 2 --repeat-cycles 2 -- \
		"$APPS/nvtx_sample" --steps 10 --threads 0
	# cycles of 4 occurrences (skip, warmup, 2 active): 3 4 7 8, which are
	# steps 2 3 6 7 (payload = index from 0)
	assert_eq "$(ev 'select(.name=="step") | .payload' | paste -sd,)" "2,3,6,7"
	assert_eq "$(ev 'select(.kind=="range" or .kind=="mark") | .name' | sort | uniq -c | awk '{ print $2 "=" $1 }' | paste -sd' ')" \
		"backward=4 forward=4 layer.0=4 layer.1=4 loss=4 optimizer=4 step=4"
	assert_eq "$(trace-dump --info --json "$T" | jq -r '.metadata["record.capture"]')" \
		"nvtx:step skip=1 warmup=1 active=2 repeat-cycles=2"
	# the process is recorded all the same
	assert_eq "$(ev 'select(.kind=="process") | .name')" "nvtx_sample"
}

@test "--capture-range with a domain, and a range that never occurs" {
	need_nvtx
	run -0 trace-record -o "$T" --capture-range=nvtx:io@sample -- "$APPS/nvtx_sample" --steps 2 --threads 0 --domain
	assert_eq "$(ev 'select(.kind=="range") | .name')" "io"
	run -0 trace-record -o "$T" --capture-range=nvtx:io -- "$APPS/nvtx_sample" --steps 2 --threads 0 --domain
	assert_eq "$(ev 'select(.kind=="range") | .name')" ""
	run -0 trace-record -o "$T" --capture-range=nvtx:io@* -- "$APPS/nvtx_sample" --steps 2 --threads 0 --domain
	assert_eq "$(ev 'select(.kind=="range") | .name')" "io"
	# NAME@ with no domain after it: the default domain, as without @
	run -0 trace-record -o "$T" --capture-range=nvtx:io@ -- "$APPS/nvtx_sample" --steps 2 --threads 0 --domain
	assert_eq "$(ev 'select(.kind=="range") | .name')" ""
	run -0 trace-record -o "$T" --capture-range=nvtx:step@ -- "$APPS/nvtx_sample" --steps 2 --threads 0 --domain
	[ -n "$(ev 'select(.kind=="range" and .name=="step") | .name')" ]
}

@test "--sample-interval writes RSS and CPU counters of each process" {
	run -0 trace-record -o "$T" --sample-interval 20ms -- sh -c 'sleep 0.4; head -c 30000000 /dev/zero | tail -c 1 >/dev/null'
	# a counter of each kind for the shell and sleep, on their process
	for name in sh sleep; do
		pid=$(ev "select(.kind==\"process\" and .name==\"$name\") | .pid")
		n=$(ev "select(.kind==\"counter\" and .pid==$pid and .name==\"rss\") | .value" | wc -l)
		[ "$n" -ge 3 ] || { echo "$name: $n rss samples"; return 1; }
		m=$(ev "select(.kind==\"counter\" and .pid==$pid and .name==\"cpu\") | .value" | wc -l)
		assert_eq "$m" "$n"
	done
	assert_eq "$(ev 'select(.kind=="counter") | "\(.name) \(.unit)"' | sort -u | paste -sd,)" "cpu %,rss bytes"
	# samples every 20 ms: the shell's span
	sh_n=$(ev 'select(.kind=="counter" and .name=="rss") | .ts' | wc -l)
	[ "$sh_n" -ge 15 ]
	ev 'select(.kind=="counter" and .name=="rss") | .value' | awk '$1 <= 0 { exit 1 }'
	ev 'select(.kind=="counter" and .name=="cpu") | .value' | awk '$1 < 0 || $1 > 200 { exit 1 }'
}

@test "--sample-interval with --delay and --duration: samples only inside the window" {
	run -0 trace-record -o "$T" --sample-interval 20ms --delay 200ms --duration 200ms \
		--flush-interval 20ms -- sleep 0.6
	local start
	start=$(start_ns "$T")
	# samples of sleep between start + 200 ms and start + 400 ms (1 ms
	# of slack: jq's numbers are doubles), several of them
	ev 'select(.kind=="counter" and .name=="rss") | .ts' |
		awk -v lo=$((start + 199000000)) -v hi=$((start + 401000000)) '
			$1 < lo || $1 > hi { bad = 1 } { n++ }
			END { exit bad || n < 3 }'
}

@test "--delay and --duration bound what is recorded" {
	need_nvtx
	run -0 trace-record -o "$T" --flush-interval 50ms --delay 200ms --duration 300ms -- \
		"$APPS/nvtx_sample" --steps 20 --threads 0 --sleep 40
	# the window: from the run's start (the start metadata) + 200 ms, for
	# 300 ms; ranges still open at its end are cut there
	trace-dump --csv "$T" | python3 -c '
import csv, sys
t0 = int(sys.argv[1])
begin, end = t0 + 200 * 10**6, t0 + 500 * 10**6
rows = [r for r in csv.DictReader(sys.stdin) if r["kind"] in ("range", "mark")]
assert rows, "nothing recorded"
for r in rows:
    ts, dur = int(r["ts"]), int(r["dur"])
    assert begin <= ts < end, (r["name"], ts - t0)
    assert ts + dur <= end, (r["name"], ts + dur - t0)
    if ts + dur == end and r["kind"] == "range":
        assert "unfinished" in r["args"], r
' "$(start_ns "$T")"
	n=$(ev 'select(.name=="step") | .name' | wc -l)
	[ "$n" -ge 2 ] && [ "$n" -le 8 ]
	assert_eq "$(trace-dump --info --json "$T" | jq -r '.metadata["record.duration"]')" "300.000 ms"
}

@test "a command that forks 50 children" {
	run -0 trace-record -o "$T" -- sh -c 'for i in $(seq 50); do (exit $((i % 7))) & done; wait'
	assert_eq "$(ev 'select(.kind=="process") | .name' | wc -l)" 52
	assert_eq "$(ev 'select(.kind=="process" and .name=="sh") | .exit_code' | sort -n | uniq -c | awk '{ print $2 "=" $1 }' | paste -sd' ')" \
		"0=8 1=8 2=7 3=7 4=7 5=7 6=7"
}

@test "a command that closes its descriptors and changes directory" {
	need_nvtx
	run -0 trace-record -o "$T" -- "$APPS/nvtx_sample" --steps 3 --threads 2 --close-fds --chdir /
	assert_eq "$(ev 'select(.kind=="range" or .kind=="mark") | .name' | wc -l)" 27
	assert_eq "$(ev 'select(.kind=="dropped") | .name')" ""
}

@test "a thread that records while the process exits" {
	need_nvtx
	run -0 trace-record -o "$T" -- "$APPS/nvtx_sample" --steps 2 --threads 0 --mark-until-exit
	[ "$(ev 'select(.name=="until.exit") | .name' | wc -l)" -gt 0 ]
	# what it recorded after the last flush, if anything, is counted
	# within the process's lifetime, never at the end of time
	ev 'select(.kind=="process") | "\(.ts) \(.ts + .dur)"' > "$BATS_TEST_TMPDIR/span"
	ev 'select(.kind=="dropped") | "\(.ts) \(.reason)"' | while read -r ts reason; do
		read -r from to < "$BATS_TEST_TMPDIR/span"
		[ "$ts" -ge "$from" ] && [ "$ts" -le "$to" ] || { echo "dropped at $ts outside $from..$to: $reason"; false; }
	done
}

@test "TMPDIR not writable: spools elsewhere, says so, the command sees its TMPDIR" {
	need_nvtx
	under_valgrind && skip "valgrind itself needs a usable TMPDIR"
	run -0 --separate-stderr env TMPDIR=/nonexistent/tmp trace-record -o "$T" -- sh -c \
		"echo \"\$TMPDIR\" > '$BATS_TEST_TMPDIR/seen'; '$APPS/nvtx_sample' --steps 1 --threads 0"
	[[ "$stderr" == "trace-record: cannot create files in TMPDIR=/nonexistent/tmp (No such file or directory); spooling in /tmp" ]]
	assert_eq "$(cat "$BATS_TEST_TMPDIR/seen")" /nonexistent/tmp
	assert_eq "$(ev 'select(.kind=="range") | .name' | wc -l)" 6
}

@test "ptrace denied: processes followed through /proc, said once and in the trace" {
	run -2 --separate-stderr "$APPS/no_ptrace" trace-record -o "$T" -- sh -c 'sleep 0.3; exit 2'
	assert_eq "$stderr" "trace-record: cannot trace processes (ptrace: Operation not permitted); following them through /proc: the exit status of their children is not recorded"
	assert_eq "$(trace-dump --info --json "$T" | jq -r '.metadata["record.processes"]')" \
		"scan (ptrace not permitted: Operation not permitted)"
	# the command's status is known (it is our child), sleep's is not
	assert_eq "$(ev 'select(.kind=="process") | "\(.name) \(.exit_code)"' | sort | paste -sd,)" "sh 2,sleep null"
	sleep_start=$(ev 'select(.name=="sleep") | .ts')
	sh_start=$(ev 'select(.name=="sh") | .ts')
	# its start comes from /proc: 10 ms precise
	[ $((sleep_start - sh_start)) -gt -20000000 ]
}

@test "--no-ptrace records NVTX and the command the same way" {
	need_nvtx
	run -0 --separate-stderr trace-record --no-ptrace -o "$T" -- "$APPS/nvtx_sample" --steps 2 --threads 1
	assert_eq "$stderr" ""
	assert_eq "$(ev 'select(.kind=="range" or .kind=="mark") | .name' | wc -l)" 16
	assert_eq "$(ev 'select(.kind=="process") | "\(.name) \(.exit_code)"')" "nvtx_sample 0"
	assert_eq "$(trace-dump --info --json "$T" | jq -r '.metadata["record.processes"]')" "scan (--no-ptrace)"
}

# How long sigcount waits for signals once ready (longer under valgrind).
signal_times() {
	wait_s=2
	under_valgrind && wait_s=7
	return 0
}

# Wait (up to 60 s) until sigcount has its handler: FILE.ready.
sigcount_ready() {
	for _ in $(seq 600); do [ -e "$1.ready" ] && return 0; sleep 0.1; done
	return 1
}

@test "SIGINT to trace-record reaches the command once; the trace is complete" {
	signal_times
	for opt in --flush-interval=1s --no-ptrace; do
		# (a background job of a script starts with SIGINT ignored)
		env --default-signal=INT trace-record $opt -o "$T" -- "$APPS/sigcount" "$wait_s" "$BATS_TEST_TMPDIR/got" &
		pid=$!
		sigcount_ready "$BATS_TEST_TMPDIR/got"
		kill -INT "$pid"
		status=0
		wait "$pid" || status=$?
		assert_eq "$status" 3
		assert_eq "$(cat "$BATS_TEST_TMPDIR/got")" 1
		assert_eq "$(ev 'select(.kind=="process") | .exit_code')" 3
		trace-dump "$T" > /dev/null
		rm -f "$BATS_TEST_TMPDIR/got.ready"
	done
}

@test "SIGINT to the whole process group is not passed on twice" {
	signal_times
	# (under ptrace, where trace-record sees the command receive it;
	# scanning /proc, it cannot see a signal already handled)
	# the group: this bash (which lives through it), trace-record, sigcount
	run -0 setsid bash -c '
		trap true INT
		env --default-signal=INT trace-record -o "$1" -- "$3" $5 "$2/got" &
		pid=$!
		for _ in $(seq 600); do [ -e "$2/got.ready" ] && break; sleep 0.1; done
		kill -INT -$$
		wait $pid; st=$?
		[ $st -gt 128 ] && { wait $pid; st=$?; }
		echo "status $st" >> "$2/got"
	' bash "$T" "$BATS_TEST_TMPDIR" "$APPS/sigcount" "" "$wait_s"
	assert_eq "$(paste -sd, "$BATS_TEST_TMPDIR/got")" "1,status 3"
}

@test "the trace on stdout; the command's stdout goes to stderr" {
	run -0 --separate-stderr bash -c "trace-record -- sh -c 'echo hello' | trace-dump --json | jq -r .name"
	assert_eq "$output" "sh"
	assert_eq "$stderr" "hello"
}

@test "| head: the reader going away is quiet, the command runs to its end" {
	need_nvtx
	run -0 --separate-stderr bash -c "set -o pipefail; trace-record -- '$APPS/nvtx_sample' --steps 30 --threads 1 --fork | head -c 40 | wc -c"
	assert_eq "$output" 40
	assert_eq "$stderr" ""
}

@test "the reader going away while the command runs: quiet from then on, the command's status" {
	# head takes the header and goes; the samples that follow find the
	# pipe closed
	run -0 --separate-stderr bash -c \
		'trace-record -s 10ms --flush-interval 20ms -- sh -c "sleep 0.6; exit 4" | head -c 1 > /dev/null; echo "${PIPESTATUS[0]}"'
	assert_eq "$output" 4
	assert_eq "$stderr" ""
}

@test "trace-record killed with SIGKILL leaves a readable prefix" {
	need_nvtx
	under_valgrind && skip "timing: too slow under valgrind"
	trace-record --flush-interval 20ms -o "$T" -- "$APPS/nvtx_sample" --steps 60 --threads 1 --sleep 30 &
	pid=$!
	sleep 1.2
	kill -KILL "$pid"
	wait "$pid" || true
	run -1 --separate-stderr trace-dump --json "$T"
	[[ "$stderr" == "trace-dump: $T: truncated at byte "*" (the trace has no end marker: its writer did not finish)" ]]
	n=$(printf '%s\n' "$output" | jq -r 'select(.name=="step") | .name' | wc -l)
	[ "$n" -ge 5 ]
	# the program goes on, and its library cleans the spool up
	for i in $(seq 50); do
		ls "$TMPDIR" | grep -q '^tracekit-' || break
		sleep 0.1
	done
}

@test "output streams while the command runs" {
	need_nvtx
	under_valgrind && skip "timing: too slow under valgrind"
	trace-record --flush-interval 20ms -o "$T" -- sh -c "'$APPS/nvtx_sample' --steps 3 --threads 0; sleep 1.5" &
	pid=$!
	sleep 1
	n=$(trace-dump --json "$T" 2>/dev/null | jq -r 'select(.name=="step") | .name' | wc -l)
	wait "$pid"
	assert_eq "$n" 3
	# in the end the shell's lifetime is there too: written late, the
	# chunk watermarks allow for it
	assert_eq "$(ev 'select(.kind=="process") | .name' | sort | paste -sd,)" "nvtx_sample,sh,sleep"
}

@test "run metadata: command, cwd, host, kernel, cpu, start, label, git, user keys" {
	repo=$BATS_TEST_TMPDIR/repo
	mkdir -p "$repo"
	git -C "$repo" init -q -b trunk
	git -C "$repo" -c user.name=t -c user.email=t@t commit -q --allow-empty -m init
	commit=$(git -C "$repo" rev-parse HEAD)
	cd "$repo"
	run -0 trace-record -o "$T" --label before --meta batch=32 --meta 'note=a b' -- sh -c "echo 'it''s' > /dev/null" "x y"
	m=$(trace-dump --info --json "$T" | jq -c .metadata)
	assert_eq "$(jq -r .command <<< "$m")" "sh -c 'echo '\\''it'\\'''\\''s'\\'' > /dev/null' 'x y'"
	assert_eq "$(jq -r .cwd <<< "$m")" "$repo"
	assert_eq "$(jq -r .host <<< "$m")" "$(hostname)"
	assert_eq "$(jq -r .kernel <<< "$m")" "$(uname -srm)"
	[ -n "$(jq -r .cpu <<< "$m")" ]
	[[ "$(jq -r .start <<< "$m")" =~ ^20[0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\.[0-9]{9}Z$ ]]
	assert_eq "$(jq -r .label <<< "$m")" before
	assert_eq "$(jq -r '.["git.commit"]' <<< "$m")" "$commit"
	assert_eq "$(jq -r '.["git.branch"]' <<< "$m")" trunk
	assert_eq "$(jq -r '.["git.dirty"]' <<< "$m")" 0
	assert_eq "$(jq -r .recorder <<< "$m")" "trace-record 0.1.0"
	assert_eq "$(jq -r .batch <<< "$m")" 32
	assert_eq "$(jq -r .note <<< "$m")" "a b"
	# the label is on the processes too
	assert_eq "$(trace-dump --info --json "$T" | jq -r '.tracks[] | select(.type=="process") | .label')" before
	# the shell's start time is the metadata's, within a second
	start=$(ev 'select(.kind=="process") | .ts')
	iso=$(jq -r .start <<< "$m")
	[ $(( start / 1000000000 - $(date -d "$iso" +%s) )) -le 1 ]
	# a detached HEAD: its commit, no branch; a change: dirty
	git -C "$repo" checkout -q --detach
	echo x > "$repo/f" && git -C "$repo" add f
	run -0 trace-record -o "$T" -- true
	m=$(trace-dump --info --json "$T" | jq -c .metadata)
	assert_eq "$(jq -r '.["git.commit"]' <<< "$m")" "$commit"
	assert_eq "$(jq -r '.["git.branch"]' <<< "$m")" null
	assert_eq "$(jq -r '.["git.dirty"]' <<< "$m")" 1
}

@test "NVTX from Python (ctypes on the CUDA toolkit's NVTX library)" {
	lib=
	for d in "${CUDA_HOME:-/usr/local/cuda}/lib64" "${CUDA_HOME:-/usr/local/cuda}/lib"; do
		[ -e "$d/libnvtx3interop.so" ] && lib=$d/libnvtx3interop.so && break
	done
	[ -n "$lib" ] || skip "no libnvtx3interop.so in the CUDA toolkit"
	cat > "$BATS_TEST_TMPDIR/nvtx.py" <<-'PY'
		import ctypes, sys, threading
		lib = ctypes.CDLL(sys.argv[1])
		lib.nvtxRangePushA.argtypes = [ctypes.c_char_p]
		lib.nvtxMarkA.argtypes = [ctypes.c_char_p]
		def work(n):
		    for i in range(n):
		        lib.nvtxRangePushA(b"py.step")
		        lib.nvtxRangePushA("py.\u00fcnicode".encode())
		        lib.nvtxRangePop()
		        lib.nvtxRangePop()
		t = threading.Thread(target=work, args=(5,))
		t.start(); work(5); t.join()
		lib.nvtxMarkA(b"py.done")
	PY
	run -0 trace-record -o "$T" -- python3 "$BATS_TEST_TMPDIR/nvtx.py" "$lib"
	assert_eq "$(ev 'select(.kind=="range" or .kind=="mark") | .name' | sort | uniq -c | awk '{ print $2 "=" $1 }' | paste -sd' ')" \
		"py.done=1 py.step=10 py.ünicode=10"
	assert_eq "$(ev 'select(.name=="py.step") | .tid' | sort -u | wc -l)" 2
	inside py.ü py.step
	pid=$(ev 'select(.name=="py.done") | .pid')
	[[ "$(ev "select(.kind==\"process\" and .pid==$pid) | .name")" == python3* ]]
}

@test "a program that execs keeps what it had not flushed" {
	lib=${CUDA_HOME:-/usr/local/cuda}/lib64/libnvtx3interop.so
	[ -e "$lib" ] || skip "no libnvtx3interop.so in the CUDA toolkit"
	cat > "$BATS_TEST_TMPDIR/exec.py" <<-'PY'
		import ctypes, os, sys
		lib = ctypes.CDLL(sys.argv[1])
		for i in range(3):
		    lib.nvtxRangePushA(b"before.exec")
		    lib.nvtxRangePop()
		os.execv("/bin/true", ["true"])
	PY
	run -0 trace-record -o "$T" -- python3 "$BATS_TEST_TMPDIR/exec.py" "$lib"
	assert_eq "$(ev 'select(.name=="before.exec") | .kind' | sort | uniq -c | awk '{ print $1, $2 }')" "3 range"
	assert_eq "$(ev 'select(.kind=="dropped") | .count')" ""
	pid=$(ev 'select(.name=="before.exec") | .pid' | sort -u)
	assert_eq "$(ev "select(.kind==\"process\" and .pid==$pid) | .name")" true
}

@test "600 async ranges open at once across several flushes: each once, whole, begun in order and ended in reverse" {
	need_nvtx
	# (the library's table of open async ranges starts at 256 slots)
	run -0 --separate-stderr trace-record -o "$T" --flush-interval 20ms -- \
		"$APPS/nvtx_sample" --steps 0 --threads 0 --async-open 600 --sleep 100
	assert_eq "$output" "async-open: 600"
	assert_eq "$stderr" ""
	trace-dump --json -k async_range "$T" | python3 -c '
import json, sys
r = sorted((json.loads(l) for l in sys.stdin), key=lambda e: e["payload"])
assert [e["payload"] for e in r] == list(range(600)), "payloads"
assert all(e["name"] == "open" and "unfinished" not in e.get("args", {}) for e in r)
begins = [e["ts"] for e in r]
ends = [e["ts"] + e["dur"] for e in r]
assert begins == sorted(begins), "begun in order"
assert ends == sorted(ends, reverse=True), "ended in reverse"
# all open during the 100 ms nap between the last start and first end
assert ends[-1] - begins[-1] >= 100_000_000, ends[-1] - begins[-1]
assert len(set(e["id"] for e in r)) == 600, "ids"'
}
