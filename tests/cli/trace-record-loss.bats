#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-record: nothing a recorded program wrote is lost, however it
# ends (return, exit, _exit in a child that started NVTX after fork,
# SIGKILL from outside, abort, a segfault, the OOM killer, a Python
# multiprocessing worker): the durable buffers (protocol.h) let
# trace-record convert what the process had not flushed.
#
# The expected events come from nvtx_sample's own description (its
# header comment), computed here from its options, never from a trace:
# per step the main thread writes the ranges step, forward, layer.0 ..
# layer.(L-1), backward, optimizer and the mark loss; each loader
# thread one range load.

load helpers
load record

# "name=count ..." of what nvtx_sample writes with S steps, L layers
# and T loader threads (and the never-closed range with --hold-open).
expected() {
	local s=$1 l=$2 t=$3 hold=${4:-}
	{
		for n in step forward backward optimizer loss; do echo "$n=$s"; done
		for ((i = 0; i < l; i++)); do echo "layer.$i=$s"; done
		[ "$t" -gt 0 ] && echo "load=$((s * t))"
		[ -n "$hold" ] && echo "never.closed=1"
	} | sort | paste -sd' '
}

# The same from the trace: ranges and marks by name.
in_trace() {
	ev 'select(.kind=="range" or .kind=="mark") | .name' | sort | uniq -c |
		awk '{ print $2 "=" $1 }' | sort | paste -sd' '
}

no_drops() {
	# (-k dropped first: a flood's trace holds millions of ranges)
	assert_eq "$(trace-dump --json -k dropped "$T" | jq -r '"\(.count) \(.reason)"')" ""
}

@test "return from main and exit(): every range, nothing dropped" {
	need_nvtx
	run -0 trace-record -o "$T" -- "$APPS/nvtx_sample" --steps 3 --layers 2 --threads 2
	assert_eq "$(in_trace)" "$(expected 3 2 2)"
	no_drops
	run -3 trace-record -o "$T" -- "$APPS/nvtx_sample" --steps 2 --layers 1 --threads 1 --exit 3
	assert_eq "$(in_trace)" "$(expected 2 1 1)"
	no_drops
}

@test "_exit in a child that first used NVTX after fork: every range, the open one unfinished" {
	need_nvtx
	# before the durable buffers: "dropped 14 ... the process ended
	# without its last flush"
	run -0 trace-record -o "$T" -- "$APPS/nvtx_sample" --fork-first 1 --steps 2 --layers 2 --threads 1 --quick-exit --hold-open
	assert_eq "$(in_trace)" "$(expected 2 2 1 hold)"
	no_drops
	assert_eq "$(ev 'select(.name=="never.closed") | .args.unfinished')" true
	# the ranges are the child's; its parent, the command, recorded nothing
	root=$(ev 'select(.kind=="process") | "\(.ts) \(.pid)"' | sort -n | head -1 | cut -d' ' -f2)
	child=$(ev 'select(.name=="step") | .pid' | sort -u)
	assert_eq "$(ev 'select(.kind=="process") | .pid' | wc -l)" 2
	[ "$child" != "$root" ]
	assert_eq "$(ev "select(.pid==$root and .kind!=\"process\") | .kind")" ""
}

@test "_exit in a child of a child, the parents never recording" {
	need_nvtx
	run -5 trace-record -o "$T" -- "$APPS/nvtx_sample" --fork-first 2 --steps 3 --layers 1 --threads 2 --quick-exit --exit 5
	assert_eq "$(in_trace)" "$(expected 3 1 2)"
	no_drops
	# one recording process, the third of the chain
	assert_eq "$(ev 'select(.kind=="range") | .pid' | sort -u | wc -l)" 1
	assert_eq "$(ev 'select(.kind=="process") | .pid' | wc -l)" 3
	# its loader threads keep their NVTX names
	assert_eq "$(ev 'select(.name=="load") | .thread' | sort -u | paste -sd' ')" "loader-0 loader-1"
}

@test "SIGKILL from outside before any flush: every range, the open one unfinished" {
	need_nvtx
	# killed as soon as it is done: long before its first flush (10 s)
	trace-record -o "$T" --flush-interval 10s -- "$APPS/nvtx_sample" --steps 3 --layers 2 --threads 2 --hold-open --wait-kill "$BATS_TEST_TMPDIR/ready" &
	rec=$!
	for _ in $(seq 200); do [ -e "$BATS_TEST_TMPDIR/ready" ] && break; sleep 0.05; done
	[ -e "$BATS_TEST_TMPDIR/ready" ]
	kill -KILL "$(cat "$BATS_TEST_TMPDIR/ready")"
	st=0
	wait "$rec" || st=$?
	assert_eq "$st" 137
	assert_eq "$(in_trace)" "$(expected 3 2 2 hold)"
	no_drops
	assert_eq "$(ev 'select(.name=="never.closed") | .args.unfinished')" true
	assert_eq "$(ev 'select(.kind=="process") | .signal')" 9
}

@test "SIGKILL from outside in the middle of a flood: the ranges it finished, exactly" {
	need_nvtx
	under_valgrind && skip "a flood under valgrind takes too long"
	for flush in 1s 20ms; do
		rm -f "$BATS_TEST_TMPDIR/count"
		trace-record -o "$T" --flush-interval $flush -- "$APPS/nvtx_sample" --steps 0 --threads 0 --flood 100000000 --count-file "$BATS_TEST_TMPDIR/count" &
		rec=$!
		# some hundreds of thousands of ranges, several commits
		sleep 1.5
		pid=$(od -An -t d8 -j0 -N8 "$BATS_TEST_TMPDIR/count" | tr -d ' ')
		[ "$pid" -gt 0 ]
		kill -KILL "$pid"
		st=0
	wait "$rec" || st=$?
	assert_eq "$st" 137
		done_n=$(od -An -t d8 -j8 -N8 "$BATS_TEST_TMPDIR/count" | tr -d ' ')
		# the i-th range has payload i: "min max count distinct"
		# (CSV and awk: jq takes ~40 s over the 5 M ranges of 1.5 s of
		# flood; field 4 is the name, 23 the payload)
		assert_eq "$(trace-dump --csv -k range "$T" | head -1 | cut -d, -f4,23)" "name,payload"
		read -r lo hi got distinct <<<"$(trace-dump --csv -k range "$T" |
			awk -F, '$4 == "flood" { print $23 }' | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1; n++; if (!($1 in s)) d++; s[$1] }
				END { print lo, hi, n, d }')"
		echo "flush $flush: counted $done_n, in the trace $got ($lo..$hi)"
		[ "$done_n" -gt 100000 ]
		# every range from the first to the last, each once: none
		# lost in the middle
		assert_eq "$lo $hi $distinct" "0 $((got - 1)) $got"
		# the pop of the last range may be done, its count not yet
		[ "$got" -eq "$done_n" ] || [ "$got" -eq $((done_n + 1)) ]
		no_drops
	done
}

@test "abort() and a segfault: every range" {
	need_nvtx
	run -134 trace-record -o "$T" -- "$APPS/nvtx_sample" --steps 2 --layers 3 --threads 1 --hold-open --crash abort
	assert_eq "$(in_trace)" "$(expected 2 3 1 hold)"
	no_drops
	run -139 trace-record -o "$T" -- "$APPS/nvtx_sample" --steps 2 --layers 3 --threads 1 --hold-open --crash segv
	assert_eq "$(in_trace)" "$(expected 2 3 1 hold)"
	no_drops
	assert_eq "$(ev 'select(.kind=="process") | .signal')" 11
	# a child that crashes after starting NVTX after fork
	run -134 trace-record -o "$T" -- "$APPS/nvtx_sample" --fork-first 1 --steps 1 --layers 1 --threads 0 --crash abort
	assert_eq "$(in_trace)" "$(expected 1 1 0)"
	no_drops
}

@test "the OOM killer: every range" {
	need_nvtx
	under_valgrind && skip "the OOM killer and valgrind"
	# cgroup v1, else v2 (the memory controller enabled for children)
	cg=/sys/fs/cgroup/memory/tracekit-oom-$$
	if mkdir "$cg" 2>/dev/null; then
		echo $((64 << 20)) > "$cg/memory.limit_in_bytes"
		[ -e "$cg/memory.memsw.limit_in_bytes" ] && echo $((64 << 20)) > "$cg/memory.memsw.limit_in_bytes"
	else
		cg=/sys/fs/cgroup/tracekit-oom-$$
		grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null && mkdir "$cg" 2>/dev/null ||
			skip "cannot create a memory cgroup (v1 at /sys/fs/cgroup/memory or v2 with the memory controller, as root)"
		echo $((64 << 20)) > "$cg/memory.max"
		[ -e "$cg/memory.swap.max" ] && echo 0 > "$cg/memory.swap.max"
	fi
	run trace-record -o "$T" -- sh -c "echo \$\$ > $cg/cgroup.procs && exec $APPS/nvtx_sample --steps 2 --layers 2 --threads 1 --hold-open --crash oom"
	rmdir "$cg" || true
	assert_eq "$status" 137
	assert_eq "$(ev 'select(.kind=="process" and .name=="nvtx_sample") | .signal')" 9
	assert_eq "$(in_trace)" "$(expected 2 2 1 hold)"
	no_drops
}

@test "a Python multiprocessing worker ending with os._exit: every range" {
	command -v python3 >/dev/null || skip "no python3"
	lib=${CUDA_HOME:-/usr/local/cuda}/lib64/libnvtx3interop.so
	[ -e "$lib" ] || skip "no libnvtx3interop.so in the CUDA toolkit"
	cat > "$BATS_TEST_TMPDIR/mp.py" <<-'PY'
		import ctypes, multiprocessing as mp, sys
		def worker(lib, n, tag):
		    nvtx = ctypes.CDLL(lib)
		    for i in range(n):
		        nvtx.nvtxRangePushA(tag.encode())
		        nvtx.nvtxMarkA(b"worker.mark")
		        nvtx.nvtxRangePop()
		    nvtx.nvtxRangePushA(b"worker.open")
		    # multiprocessing ends its workers with os._exit
		if __name__ == "__main__":
		    mp.set_start_method("fork")
		    ps = [mp.Process(target=worker, args=(sys.argv[1], 50 + k, "w%d" % k))
		          for k in range(3)]
		    for p in ps: p.start()
		    for p in ps: p.join()
		    sys.exit(0 if all(p.exitcode == 0 for p in ps) else 1)
	PY
	run -0 trace-record -o "$T" -- python3 "$BATS_TEST_TMPDIR/mp.py" "$lib"
	assert_eq "$(in_trace)" "w0=50 w1=51 w2=52 worker.mark=153 worker.open=3"
	no_drops
	# three workers, each its own process
	assert_eq "$(ev 'select(.kind=="range") | .pid' | sort -u | wc -l)" 3
	assert_eq "$(ev 'select(.name=="worker.open") | .args.unfinished' | sort -u)" true
}

@test "full buffers: what is dropped is counted with its reason, the rest kept" {
	need_nvtx
	under_valgrind && skip "a flood under valgrind takes too long"
	# the smallest buffers, a flusher that rarely comes, and a flood:
	# records are dropped; kept + dropped is what was written
	run -137 trace-record -o "$T" --flush-interval 10s -- env TRACEKIT_BUFFER_BYTES=131072 \
		"$APPS/nvtx_sample" --steps 0 --threads 0 --flood 2000000 --signal 9
	got=$(ev 'select(.name=="flood") | .name' | wc -l)
	lost=$(ev 'select(.kind=="dropped") | .count' | paste -sd+ | bc)
	echo "kept $got, dropped ${lost:-0}"
	assert_eq "$((got + ${lost:-0}))" 2000000
	[ "$(ev 'select(.kind=="dropped") | .reason' | sort -u)" = \
		"buffers full: the program recorded NVTX events faster than they could be written" ] ||
		[ "${lost:-0}" = 0 ]
}
