#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# trace-record's CUDA recording, on machines without a GPU: --cuda, the
# injection library's entry points, a CUDA program on a machine without
# a driver (it must behave exactly as without trace-record, and the trace
# must say why nothing was recorded), CUPTI refusing to attach, and the
# whole path from the driver's call to the output with a stand-in CUPTI
# (tests/apps/fake_cupti.c) that the driver-less machine can run:
# tests/apps/fake_driver.c does what cuInit does with the library.
# Live tests on a GPU: tests/gpu/run.sh (make check-gpu).

load helpers
load record

INJECT=$TK_BUILD/lib/tracekit/libtracekit-inject.so
FAKE=$APPS/libfake_cupti.so

setup() {
	record_setup
	unset CUDA_INJECTION64_PATH TRACEKIT_CUPTI FAKE_CUPTI_SUBSCRIBE FAKE_CUPTI_LOG FAKE_CUPTI_GPU_LAG \
		FAKE_CUPTI_ALL_KINDS FAKE_CUPTI_NO_CONTEXT_RECORD FAKE_CUPTI_STATE
}

cuda_built() {
	trace-record --help | grep -q -- '--cuda=LIST *CUDA activity to record through CUPTI'
}

need_cuda() {
	cuda_built || skip "trace-record was built without CUPTI 13.0 and NVTX (CUDA_HOME)"
}

# The tests of a machine without a driver, and what the loader says
# about it, found independently of trace-record.
need_no_driver() {
	local why
	why=$(python3 -c 'import ctypes
try:
    ctypes.CDLL("libcuda.so.1")
except OSError as e:
    print(e)')
	[ -n "$why" ] || skip "a CUDA driver is installed here: see tests/gpu/run.sh"
	DRIVER_ERROR=$why
}

# Value(s) of a metadata key, one a line, in file order.
meta() {
	trace-dump --info "${2:-$T}" | sed -n "s/^  meta $1 = //p"
}

@test "--cuda: the lists it takes, and what the trace says about them" {
	run -125 --separate-stderr trace-record --cuda=kernels -- true
	assert_eq "$stderr" "trace-record: --cuda: unknown activity 'kernels' (kernel, memcpy, memset, memory, runtime, driver, api, sync, overhead, all, none)
Try 'trace-record --help' for more information."
	run -125 --separate-stderr trace-record --cuda=kernel, -- true
	assert_eq "${stderr_lines[0]}" "trace-record: --cuda: unknown activity '' (kernel, memcpy, memset, memory, runtime, driver, api, sync, overhead, all, none)"
	run -0 trace-record -o "$T" --cuda=none -- true
	assert_eq "$(meta record.cuda)" "none"
	if ! cuda_built; then
		assert_eq "$(meta cuda)" "not recorded: trace-record was built without CUPTI"
		run -125 --separate-stderr trace-record -o "$T" --cuda=kernel -- true
		assert_eq "$stderr" "trace-record: --cuda: GPU recording is not built into this trace-record (no CUPTI 13.0 under CUDA_HOME when it was built); record without --cuda"
		run -0 trace-record -o "$T" -- true
		assert_eq "$(meta record.cuda)" "none"
		assert_eq "$(meta cuda)" "not recorded: trace-record was built without CUPTI"
		return
	fi
	assert_eq "$(meta cuda)" "not recorded: --cuda=none"
	run -0 trace-record -o "$T" -- true
	assert_eq "$(meta record.cuda)" "kernel,memcpy,memset,memory,runtime,driver,sync,overhead"
	run -0 trace-record -o "$T" --cuda=sync,api,kernel,kernel -- true
	assert_eq "$(meta record.cuda)" "kernel,runtime,driver,sync"
	# the command gets the list, and the library as the CUDA injection
	run -0 --separate-stderr trace-record -o "$T" --cuda=memcpy -- sh -c 'echo "$TRACEKIT_CUDA $CUDA_INJECTION64_PATH"'
	assert_eq "$output" "memcpy $(realpath "$INJECT")"
	run -0 trace-record -o "$T" --cuda=none -- sh -c 'echo "$TRACEKIT_CUDA ${CUDA_INJECTION64_PATH-unset}"'
	assert_eq "$output" "none unset"
}

@test "the injection library exports its entry points, and nothing else" {
	[ -f "$INJECT" ] || skip "no injection library (built without the NVTX headers)"
	want="InitializeInjectionNvtx2"
	cuda_built && want="InitializeInjection
InitializeInjectionNvtx2"
	# defined, global (T), default visibility (in the dynamic table)
	assert_eq "$(nm -D --defined-only "$INJECT" | awk '$2 == "T" { print $3 }' | sort | no_gcov_symbols)" "$want"
	assert_eq "$(nm -D --defined-only "$INJECT" | awk '$2 != "T" { print $3 }' | grep -v -E '^(_init|_fini)$' | no_gcov_symbols || true)" ""
	# libcupti is loaded when CUDA starts, not with the library
	run -0 readelf -d "$INJECT"
	[[ "$output" == *"(NEEDED)"* ]]
	run -1 grep 'NEEDED.*libcupti' <<< "$output"
}

@test "a CUDA program without a driver runs as without trace-record, and the trace says why" {
	need_cuda
	need_no_driver
	[ -x "$APPS/cuda_sample" ] || skip "the CUDA sample is not built (no nvcc)"
	out=$BATS_TEST_TMPDIR/out
	run "$APPS/cuda_sample" 2
	plain_status=$status
	"$APPS/cuda_sample" 2 >"$out.1" 2>"$out.2" || true
	[ "$plain_status" -ne 0 ] # it needs a GPU
	run trace-record -o "$T" -- "$APPS/cuda_sample" 2
	[ "$status" -eq "$plain_status" ]
	trace-record -o "$T" -- "$APPS/cuda_sample" 2 >"$out.r1" 2>"$out.r2" || true
	cmp "$out.1" "$out.r1"
	cmp "$out.2" "$out.r2" # not a word from trace-record: --cuda is the default
	assert_eq "$(meta cuda)" "not recorded: no CUDA driver ($DRIVER_ERROR)"
	assert_eq "$(meta record.cuda)" "kernel,memcpy,memset,memory,runtime,driver,sync,overhead"
	# its NVTX range is there, cut short by its exit
	assert_eq "$(ev 'select(.kind=="range") | "\(.name) \(.args.unfinished)"')" "setup true"
	assert_eq "$(ev 'select(.kind=="kernel" or .kind=="api")')" ""
	# asked for explicitly, the user hears about it once
	run --separate-stderr trace-record -o "$T" --cuda=kernel -- "$APPS/cuda_sample" 2
	[ "$status" -eq "$plain_status" ]
	assert_eq "${stderr_lines[0]}" "trace-record: --cuda: no CUDA driver ($DRIVER_ERROR): GPU activity cannot be recorded"
	assert_eq "${stderr_lines[1]}" "$(cat "$out.2")"
	assert_eq "${#stderr_lines[@]}" 2
}

@test "CUPTI cannot attach (no driver): the program runs on, the trace and stderr say why" {
	need_cuda
	need_no_driver
	run -0 --separate-stderr trace-record -o "$T" -- "$APPS/fake_driver"
	assert_eq "$output" "InitializeInjection: 0"
	pid=$(ev 'select(.kind=="process") | .pid')
	assert_eq "$stderr" "trace-record: pid $pid (fake_driver): GPU activity not recorded: CUPTI could not attach: cuptiSubscribe: CUPTI_ERROR_UNKNOWN (999)"
	assert_eq "$(meta cuda)" "not recorded (pid $pid): CUPTI could not attach: cuptiSubscribe: CUPTI_ERROR_UNKNOWN (999)"
	# without the library in its way, the same
	run -0 env CUDA_INJECTION64_PATH="$INJECT" "$APPS/fake_driver"
	assert_eq "$output" "InitializeInjection: 0"
}

@test "no libcupti anywhere, or a library that is not CUPTI: the program runs on, the trace and stderr say which and why" {
	need_cuda
	shim=$APPS/libfaultsys.so
	[ -f "$shim" ] || skip "the fault injector was not built: $shim"
	under_valgrind && skip "not under valgrind: LD_PRELOAD would load into valgrind"
	# every libcupti the library looks for missing (faultsys asks the
	# loader for it under /nonexistent-faultsys/ instead)
	log=$BATS_TEST_TMPDIR/faults.log
	run -0 --separate-stderr env LD_PRELOAD="$shim" FAULTSYS_PROG=fake_driver FAULTSYS_HIDE=libcupti \
		FAULTSYS_LOG="$log" TRACEKIT_CUPTI=/nonexistent/libcupti.so \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		trace-record -o "$T" -- "$APPS/fake_driver"
	assert_eq "$output" "InitializeInjection: 0"
	grep -q " dlopen hidden " "$log"
	pid=$(ev 'select(.kind=="process") | .pid')
	# TRACEKIT_CUPTI first, the build's libcupti if it had one, the soname
	why_re="libcupti not found \(tried /nonexistent/libcupti\.so( /[^ ]*libcupti[^ ]*)? libcupti\.so\.13; set TRACEKIT_CUPTI\): /nonexistent-faultsys/libcupti\.so\.13: cannot open shared object file: No such file or directory"
	[[ "$(meta cuda)" =~ ^"not recorded (pid $pid): "$why_re$ ]]
	[[ "$stderr" =~ ^"trace-record: pid $pid (fake_driver): GPU activity not recorded: "$why_re$ ]]
	assert_eq "${#stderr_lines[@]}" 1
	# a library that is there but is not CUPTI: the first function missing
	run -0 --separate-stderr env TRACEKIT_CUPTI="$shim" trace-record -o "$T" -- "$APPS/fake_driver"
	pid=$(ev 'select(.kind=="process") | .pid')
	first=$(grep -A1 '^#define TKI_CUPTI_FUNCTIONS' "$BATS_TEST_DIRNAME/../../lib/inject/cuda_record.h" |
		sed -n 's/^[[:space:]]*X(\([A-Za-z_0-9]*\)).*/\1/p')
	[ -n "$first" ]
	assert_eq "$(meta cuda)" "not recorded (pid $pid): $shim has no $first (not CUPTI 13?)"
	assert_eq "$stderr" "trace-record: pid $pid (fake_driver): GPU activity not recorded: $shim has no $first (not CUPTI 13?)"
}

@test "a driver is found: its version in the trace; no process used it: the trace says so, not a word on stderr" {
	need_cuda
	fake=$APPS/fakecuda
	[ -f "$fake/libcuda.so.1" ] || skip "the stand-in driver was not built"
	# version N is major N/1000, minor N%1000/10, as CUDA numbers them
	for v in 13000:13.0 12040:12.4 11080:11.8 fail:"unknown version"; do
		run -0 --separate-stderr env LD_LIBRARY_PATH="$fake" FAKE_CUDA_VERSION="${v%%:*}" \
			trace-record -o "$T" --cuda=kernel -- true
		assert_eq "$stderr" ""
		assert_eq "$(meta cuda.driver)" "${v#*:}"
		assert_eq "$(meta cuda)" "not recorded: no process of the run initialised CUDA"
	done
}

# fake_cupti_run FAILS TRACE-RECORD-ARGS...: fake_driver 3 (three
# launches) recorded through the stand-in CUPTI, whose functions named
# in FAILS return what is given (FAKE_CUPTI_FAIL); the stand-in driver
# keeps an explicit --cuda quiet.
fake_cupti_run() {
	local fails=$1
	shift
	run -0 --separate-stderr env TRACEKIT_CUPTI="$FAKE" FAKE_CUPTI_FAIL="$fails" \
		LD_LIBRARY_PATH="$APPS/fakecuda" trace-record -o "$T" "$@" -- "$APPS/fake_driver" 3
	pid=$(ev 'select(.kind=="process") | .pid')
}

@test "CUPTI calls that fail while attaching: the program runs on, the trace and stderr name the call and its error" {
	need_cuda
	[ -f "$FAKE" ] || skip "no stand-in CUPTI"
	# (the stand-in names 999 CUPTI_ERROR_UNKNOWN, other codes
	# CUPTI_ERROR_FAKE)
	for spec in "cuptiGetVersion:999|cuptiGetVersion: CUPTI_ERROR_UNKNOWN (999)" \
		"cuptiActivityRegisterCallbacks:17|cuptiActivityRegisterCallbacks: CUPTI_ERROR_FAKE (17)" \
		"cuptiGetVersion:999,cuptiGetResultString:1|cuptiGetVersion: unknown CUPTI error (999)"; do
		fake_cupti_run "${spec%%|*}"
		assert_eq "$output" "InitializeInjection: 0"
		why="CUPTI could not attach: ${spec#*|}"
		assert_eq "$stderr" "trace-record: pid $pid (fake_driver): GPU activity not recorded: $why"
		assert_eq "$(meta cuda)" "not recorded (pid $pid): $why"
		assert_eq "$(ev 'select(.kind=="kernel" or .kind=="api") | .kind')" ""
	done
	# each kind CUPTI refuses, by CUPTI's name for it, in --cuda's order
	fake_cupti_run cuptiActivityEnable:999 --cuda=kernel,runtime
	why="CONCURRENT_KERNEL: CUPTI_ERROR_UNKNOWN (999); RUNTIME: CUPTI_ERROR_UNKNOWN (999)"
	assert_eq "$stderr" "trace-record: pid $pid (fake_driver): GPU activity not recorded: $why"
	assert_eq "$(meta cuda)" "not recorded (pid $pid): $why"
}

@test "no CUPTI clock callback and no CUPTI timestamp: the activity is recorded all the same, and the trace says on which clock" {
	need_cuda
	[ -f "$FAKE" ] || skip "no stand-in CUPTI"
	fake_cupti_run cuptiActivityRegisterTimestampCallback:999,cuptiGetTimestamp:999
	assert_eq "$output" "InitializeInjection: 1"
	assert_eq "$stderr" ""
	[[ "$(meta cuda)" == "recorded (pid $pid): "*"; clock CUPTI's own (cuptiGetTimestamp failed: taken as CLOCK_REALTIME)" ]]
	assert_eq "$(ev 'select(.kind=="kernel") | .kind' | wc -l)" 3
}

@test "CUPTI's last flush fails: the kernels and calls it never delivered are counted as dropped, kind by kind" {
	need_cuda
	[ -f "$FAKE" ] || skip "no stand-in CUPTI"
	# (the stand-in delivers only when flushed: here, nothing)
	fake_cupti_run cuptiActivityFlushAll:999
	assert_eq "$output" "InitializeInjection: 1"
	assert_eq "$stderr" ""
	assert_eq "$(ev 'select(.kind=="kernel" or .kind=="api") | .kind')" ""
	why="CUDA activity CUPTI never delivered: its last flush failed (cuptiActivityFlushAll: CUPTI_ERROR_UNKNOWN (999))"
	# three launches: three kernels, three launch calls
	assert_eq "$(ev 'select(.kind=="dropped") | "\(.pid) \(.name) \(.count) \(.reason)"' | sort)" \
		"$(printf '%s\n' "$pid kernel 3 $why" "$pid runtime 3 $why")"
}

@test "another CUPTI client (a profiler) holds CUPTI: said once, the program runs on" {
	need_cuda
	[ -f "$FAKE" ] || skip "no stand-in CUPTI"
	export TRACEKIT_CUPTI=$FAKE FAKE_CUPTI_SUBSCRIBE=39
	run -0 --separate-stderr trace-record -o "$T" -- sh -c "'$APPS/fake_driver' 2; '$APPS/fake_driver' 2"
	assert_eq "$output" "InitializeInjection: 0
InitializeInjection: 0"
	why="another CUPTI client is attached (CUPTI for fake-profiler): the PyTorch profiler, Nsight Systems or Compute, cuda-gdb or compute-sanitizer; the program runs on unrecorded"
	pids=$(ev 'select(.kind=="process" and .name=="fake_driver") | .pid' | sort -n)
	assert_eq "$(echo "$pids" | wc -l)" 2
	# once, for the first process
	assert_eq "${#stderr_lines[@]}" 1
	[[ "$stderr" =~ ^"trace-record: pid "([0-9]+)" (fake_driver): GPU activity not recorded: $why"$ ]]
	echo "$pids" | grep -qx "${BASH_REMATCH[1]}"
	assert_eq "$(meta cuda | sort)" "$(for p in $pids; do echo "not recorded (pid $p): $why"; done | sort)"
	assert_eq "$(ev 'select(.kind=="kernel" or .kind=="api")')" ""
	# NVTX is recorded all the same
	assert_eq "$(ev 'select(.kind=="range") | .name' | sort | uniq -c | sed 's/^ *//')" "4 step"
}

@test "GPU activity end to end: kernels and launch calls with NVTX ranges, one clock, one trace" {
	need_cuda
	[ -f "$FAKE" ] || skip "no stand-in CUPTI"
	export TRACEKIT_CUPTI=$FAKE FAKE_CUPTI_LOG=$BATS_TEST_TMPDIR/log
	run -0 --separate-stderr trace-record -o "$T" -- "$APPS/fake_driver" 5
	assert_eq "$output" "InitializeInjection: 1"
	assert_eq "$stderr" ""
	pid=$(ev 'select(.kind=="process") | .pid')
	assert_eq "$(ev 'select(.kind=="kernel") | .name' | sort | uniq -c | sed 's/^ *//')" "5 _Z6kernelPfi"
	assert_eq "$(ev 'select(.kind=="api") | "\(.name) \(.tid)"' | sort | uniq -c | sed 's/^ *//')" "5 cudaLaunchKernel $pid"
	# kernels on the device's stream; each linked to its launch, after it,
	# and the launch inside its NVTX step on the same thread
	assert_eq "$(trace-dump --info --json "$T" | jq -r '.devices[] | "\(.index) \(.name)"')" "0 Fake GPU"
	assert_eq "$(ev 'select(.kind=="kernel") | .stream' | sort -u)" "7"
	# the context's NULL stream, named
	trace-dump --info "$T" | grep -qx '  track [0-9]*: GPU 0 stream 7 (default)'
	# (in exact integers: jq's numbers are doubles)
	trace-dump --json "$T" | python3 -c '
import json, sys
evs = [json.loads(l) for l in sys.stdin]
api = {e["correlation"]: e for e in evs if e["kind"] == "api"}
steps = [e for e in evs if e["kind"] == "range"]
for k in (e for e in evs if e["kind"] == "kernel"):
    a = api.get(k["correlation"])
    if a is None:
        print("no launch for", k["correlation"])
    elif k["ts"] < a["ts"] + a["dur"]:
        print("kernel before its launch ended:", k["correlation"])
    elif sum(1 for s in steps if s["tid"] == a["tid"] and s["ts"] <= a["ts"]
             and a["ts"] + a["dur"] <= s["ts"] + s["dur"]) != 1:
        print("launch", k["correlation"], "not in one step")' > "$BATS_TEST_TMPDIR/bad"
	assert_eq "$(cat "$BATS_TEST_TMPDIR/bad")" ""
	assert_eq "$(ev 'select(.kind=="kernel") | .correlation' | sort -n | paste -sd,)" "1,2,3,4,5"
	# every field of every record the stand-in wrote (its log), converted
	trace-dump --json "$T" | python3 -c '
import json, sys
evs = [json.loads(l) for l in sys.stdin]
recs = [dict(f.split("=", 1) for f in l.split()[1:]) | {"kind": l.split()[0]}
        for l in open(sys.argv[1]) if l.startswith(("kernel ", "runtime "))]
got = {(e["kind"], e["correlation"]): e for e in evs if e["kind"] in ("kernel", "api")}
n = 0
for r in recs:
    kind = "api" if r["kind"] == "runtime" else "kernel"
    e = got.pop((kind, int(r["corr"])), None)
    if e is None:
        print("no event for", r)
        continue
    want = {"ts": int(r["start"]), "dur": int(r["end"]) - int(r["start"])}
    if kind == "kernel":
        want |= {"device": int(r["device"]), "stream": int(r["stream"]), "name": r["name"],
                 "grid": [int(x) for x in r["grid"].split(",")],
                 "block": [int(x) for x in r["block"].split(",")],
                 "registers": int(r["registers"]), "shared_static": int(r["static"]),
                 "shared_dynamic": int(r["dynamic"])}
    else:
        want |= {"tid": int(r["tid"]), "cbid": int(r["cbid"]), "name": "cudaLaunchKernel"}
    for k, v in want.items():
        if e.get(k) != v:
            print("correlation", r["corr"], kind, k, e.get(k), "expected", v)
    n += 1
print(n, "records,", len(got), "events not from one")' "$BATS_TEST_TMPDIR/log" > "$BATS_TEST_TMPDIR/fields"
	assert_eq "$(cat "$BATS_TEST_TMPDIR/fields")" "10 records, 0 events not from one"
	m=$(meta cuda)
	[[ "$m" == "recorded (pid $pid): kernel,memcpy,memset,memory,runtime,driver,sync,overhead; CUPTI 130001 ($FAKE); clock CLOCK_REALTIME (timestamp callback)" ]]
	[[ "$(meta cuda.stats)" == "pid $pid: 12 records, 10 events, 0 dropped by CUPTI, 1 buffers (0 refused: pool full), 0 late, longest delay "* ]]
	# what was asked of CUPTI, in order: kernel thread ids and our clock
	# before any kind, the API callbacks (they count what each call
	# issues); CONCURRENT_KERNEL (10), never KERNEL (3); a forced flush
	# at exit after collection stops
	log=$BATS_TEST_TMPDIR/log
	assert_eq "$(head -6 "$log")" "subscribe tracekit -> 0
timestamp-callback
thread-id-type 1
domain 1 2
domain 1 1
buffer-callbacks"
	assert_eq "$(sed -n 's/^enable //p' "$log" | sort -n | paste -sd,)" "1,2,4,5,8,9,10,17,22,37,38,48,49"
	assert_eq "$(tail -1 "$log")" "flush 1"
	assert_eq "$(grep -c '^flush 1' "$log")" 1
}

@test "every kind of GPU activity end to end: copies, memsets, allocations, syncs, overheads, field by field" {
	need_cuda
	[ -f "$FAKE" ] || skip "no stand-in CUPTI"
	export TRACEKIT_CUPTI=$FAKE FAKE_CUPTI_LOG=$BATS_TEST_TMPDIR/log FAKE_CUPTI_ALL_KINDS=1
	run -0 --separate-stderr trace-record -o "$T" -- "$APPS/fake_driver" 4
	assert_eq "$stderr" ""
	# every record the stand-in logged against its event; the names and
	# labels from CUPTI's documented numbers (cupti_activity.h), not from
	# tracekit's tables
	trace-dump --json "$T" | python3 -c '
import json, sys
evs = [json.loads(l) for l in sys.stdin]
pid = next(e["pid"] for e in evs if e["kind"] == "process")
copy = {1: "HtoD", 10: "PtoP"}
mem = {1: "Pageable", 2: "Pinned", 3: "Device"}
sync = {3: ("Stream Synchronize", "StreamSynchronize")}
overhead = {1 << 16: "CUPTI buffer flush"}
recs = [dict(f.split("=", 1) for f in l.split()[1:]) | {"rec": l.split()[0]}
        for l in open(sys.argv[1])
        if l.startswith(("memcpy ", "memcpy2 ", "memset ", "memory ", "sync ", "overhead "))]
left = [e for e in evs if e["kind"] in ("memcpy", "memset", "memory", "sync", "overhead")]
bad = []
for r in recs:
    if r["rec"] == "memory":
        want = {"kind": "memory", "ts": int(r["ts"]), "dur": 0, "op": r["op"],
                "address": int(r["address"]), "bytes": int(r["bytes"]),
                "mem_kind": mem[int(r["memkind"])], "correlation": int(r["corr"]),
                "device": 0, "stream": 7,
                "name": ("Free" if r["op"] == "free" else "Alloc") + " (" + mem[int(r["memkind"])] + ")"}
    elif r["rec"] == "overhead":
        want = {"kind": "overhead", "ts": int(r["start"]), "dur": int(r["end"]) - int(r["start"]),
                "overhead": int(r["type"]), "name": overhead[int(r["type"])],
                "tid": int(r["tid"]), "pid": pid}
    elif r["rec"] == "sync":
        want = {"kind": "sync", "ts": int(r["start"]), "dur": int(r["end"]) - int(r["start"]),
                "correlation": int(r["corr"]), "name": sync[int(r["type"])][0],
                "sync": sync[int(r["type"])][1], "tid": int(r["tid"])}
    else:
        want = {"ts": int(r["start"]), "dur": int(r["end"]) - int(r["start"]),
                "correlation": int(r["corr"]), "bytes": int(r["bytes"]),
                "device": 0, "stream": int(r["stream"])}
        if r["rec"] == "memset":
            want |= {"kind": "memset", "async": r["async"] == "1", "value": int(r["value"]),
                     "mem_kind": mem[int(r["memkind"])],
                     "name": "Memset (" + mem[int(r["memkind"])] + ")"}
        else:
            c, s, d = copy[int(r["copy"])], mem[int(r["src"])], mem[int(r["dst"])]
            want |= {"kind": "memcpy", "async": r["async"] == "1", "copy_kind": c, "src_kind": s, "dst_kind": d,
                     "name": "Memcpy %s (%s -> %s)" % (c, s, d)}
            if r["rec"] == "memcpy2":
                want |= {"src_device": int(r["src_device"]), "dst_device": int(r["dst_device"])}
    match = [e for e in left if e["kind"] == want["kind"] and e["ts"] == want["ts"]]
    if len(match) != 1:
        bad.append("%d events for %s" % (len(match), r))
        continue
    e = match[0]
    left.remove(e)
    for k, v in want.items():
        if e.get(k) != v:
            bad.append("%s %s: %s, expected %s" % (r["rec"], k, e.get(k), v))
    if r["rec"] == "memcpy" and "src_device" in e:
        bad.append("a copy that is not peer-to-peer has devices")
# device memory in use: the allocations less the releases, in time order
counters = sorted((e["ts"], e["value"]) for e in evs if e["kind"] == "counter")
mems = sorted((int(r["ts"]), int(r["bytes"]) * (-1 if r["op"] == "free" else 1))
              for r in recs if r["rec"] == "memory")
in_use, want = 0, []
for ts, delta in mems:
    in_use += delta
    want.append((ts, float(in_use)))
if counters != want:
    bad.append("device memory %s, expected %s" % (counters, want))
for b in bad:
    print(b)
print(len(recs), "records,", len(left), "events not from one")' "$BATS_TEST_TMPDIR/log" > "$BATS_TEST_TMPDIR/fields"
	# 4 launches: 2 copies, a memset, a sync, an overhead and 1 or 2
	# memory records each (a release on even launches)
	assert_eq "$(cat "$BATS_TEST_TMPDIR/fields")" "26 records, 0 events not from one"
	# the counter's track, and the stream the STREAM record made (its
	# copies go there)
	trace-dump --info "$T" | grep -qx '  track [0-9]*: counter device memory'
	trace-dump --info "$T" | grep -qx '  track [0-9]*: GPU 0 stream 9'
	# the MARKER record nobody asked for: skipped, and counted by kind
	assert_eq "$(meta cupti.ignored)" "12:1"
	assert_eq "$(grep -c '^marker$' "$BATS_TEST_TMPDIR/log")" 1
}

@test "the capture schedule keeps every kind of GPU work by its call's correlation, and overheads by their time" {
	need_cuda
	[ -f "$FAKE" ] || skip "no stand-in CUPTI"
	# the GPU's work 50 ms after its call, past the schedule's end: only
	# the call's correlation can keep it
	export TRACEKIT_CUPTI=$FAKE FAKE_CUPTI_LOG=$BATS_TEST_TMPDIR/log FAKE_CUPTI_ALL_KINDS=1 \
		FAKE_CUPTI_GPU_LAG=50000000
	run -0 trace-record -o "$T" --capture-range=nvtx:step --skip 2 --warmup 1 --active 2 -- "$APPS/fake_driver" 8
	for kind in kernel api memcpy memset memory sync; do
		# memcpy: one copy to the device, one between devices per
		# call; memory: an allocation, and its release on even calls
		want=4,5
		[ $kind = memcpy ] && want=4,4,5,5
		[ $kind = memory ] && want=4,4,5
		assert_eq "$kind $(ev "select(.kind==\"$kind\") | .correlation" | sort -n | paste -sd,)" "$kind $want"
	done
	# an overhead has no call: kept when it falls in an active step
	steps=$(ev 'select(.kind=="range") | "\(.ts) \(.ts + .dur)"')
	n=0
	while read -r ts; do
		inside=0
		while read -r b e; do
			if [ "$ts" -ge "$b" ] && [ "$ts" -lt "$e" ]; then inside=1; fi
		done <<< "$steps"
		assert_eq "overhead at $ts in a step: $inside" "overhead at $ts in a step: 1"
		n=$((n + 1))
	done < <(trace-dump --json "$T" | python3 -c '
import json, sys
for l in sys.stdin:
    e = json.loads(l)
    if e["kind"] == "overhead":
        print(e["ts"])')
	assert_eq "$n" 2
}

@test "CUPTI's state callbacks go to cuda.errors; a context known from its creation names its NULL stream" {
	need_cuda
	[ -f "$FAKE" ] || skip "no stand-in CUPTI"
	# a fatal error with a message; no CONTEXT record ever: the
	# resource callback alone says which stream is the NULL one
	export TRACEKIT_CUPTI=$FAKE FAKE_CUPTI_LOG=$BATS_TEST_TMPDIR/log FAKE_CUPTI_NO_CONTEXT_RECORD=1
	FAKE_CUPTI_STATE="1:999:the GPU fell off the bus" run -0 --separate-stderr \
		trace-record -o "$T" -- "$APPS/fake_driver" 2
	assert_eq "$(meta cuda.errors)" "fatal: CUPTI_ERROR_UNKNOWN (999): the GPU fell off the bus"
	grep -qx 'context-created' "$BATS_TEST_TMPDIR/log"
	trace-dump --info "$T" | grep -qx '  track [0-9]*: GPU 0 stream 7 (default)'
	assert_eq "$(ev 'select(.kind=="kernel") | .stream' | paste -sd,)" "7,7"
	# an error without a message; no callbacks at all (cuptiEnableCallback
	# fails): the stream stays unnamed, its kernels are there all the same
	rm -f "$BATS_TEST_TMPDIR/log"
	FAKE_CUPTI_STATE="2:5:" FAKE_CUPTI_FAIL=cuptiEnableCallback:1 run -0 \
		trace-record -o "$T" -- "$APPS/fake_driver" 2
	assert_eq "$(meta cuda.errors)" "error: CUPTI_ERROR_FAKE (5)"
	run grep -c 'context-created' "$BATS_TEST_TMPDIR/log"
	assert_eq "$output" 0
	trace-dump --info "$T" | grep -qx '  track [0-9]*: GPU 0 stream 7'
	assert_eq "$(ev 'select(.kind=="kernel") | .stream' | paste -sd,)" "7,7"
}

@test "--cuda=kernel: only kernels; the rest of CUPTI stays off" {
	need_cuda
	[ -f "$FAKE" ] || skip "no stand-in CUPTI"
	export TRACEKIT_CUPTI=$FAKE FAKE_CUPTI_LOG=$BATS_TEST_TMPDIR/log
	run -0 trace-record -o "$T" --cuda=kernel -- "$APPS/fake_driver" 3
	assert_eq "$(ev 'select(.kind=="kernel") | .correlation' | paste -sd,)" "1,2,3"
	assert_eq "$(ev 'select(.kind=="api")')" ""
	# devices, contexts, streams, and the kernels
	assert_eq "$(sed -n 's/^enable //p' "$BATS_TEST_TMPDIR/log" | sort -n | paste -sd,)" "8,9,10,37"
}

@test "a program killed by SIGTERM keeps its GPU activity" {
	need_cuda
	[ -f "$FAKE" ] || skip "no stand-in CUPTI"
	export TRACEKIT_CUPTI=$FAKE
	run -143 trace-record -o "$T" -- "$APPS/fake_driver" 4 term
	assert_eq "$(ev 'select(.kind=="kernel") | .correlation' | paste -sd,)" "1,2,3,4"
	assert_eq "$(ev 'select(.kind=="dropped")')" ""
}

# Record fake_driver making $1 launches, then kill it with SIGKILL (no
# handler runs: CUPTI's buffers are never flushed); trace-record's other
# options follow.
record_killed() {
	local n=$1
	shift
	trace-record -o "$T" "$@" -- "$APPS/fake_driver" "$n" wait "$BATS_TEST_TMPDIR/ready" &
	local rec=$!
	for _ in $(seq 200); do [ -e "$BATS_TEST_TMPDIR/ready" ] && break; sleep 0.05; done
	[ -e "$BATS_TEST_TMPDIR/ready" ]
	# long enough for several flush rounds of the short interval
	sleep 1
	kill -KILL "$(cat "$BATS_TEST_TMPDIR/ready")"
	local st=0
	wait "$rec" || st=$?
	assert_eq "$st" 137
}

# "<name> <count>" of each dropped event, sorted.
dropped() {
	ev 'select(.kind=="dropped") | "\(.name) \(.count)"' | sort
}

@test "SIGKILL before CUPTI delivered anything: every launch and kernel counted as dropped" {
	need_cuda
	[ -f "$FAKE" ] || skip "no stand-in CUPTI"
	export TRACEKIT_CUPTI=$FAKE
	# no flush before the kill: CUPTI still holds every record
	record_killed 4 --flush-interval 10s
	assert_eq "$(ev 'select(.kind=="range") | .name' | sort | uniq -c | sed 's/^ *//')" "4 step"
	assert_eq "$(ev 'select(.kind=="kernel" or .kind=="api")')" ""
	assert_eq "$(dropped)" "kernel 4
runtime 4"
	assert_eq "$(ev 'select(.kind=="dropped") | .reason' | sort -u)" "CUDA activity CUPTI had not delivered when the process died without its last flush (SIGKILL, _exit, a crash, exec)"
	# CUPTI not in use (another client holds it): nothing dropped
	rm -f "$BATS_TEST_TMPDIR/ready"
	FAKE_CUPTI_SUBSCRIBE=39 record_killed 4 --flush-interval 10s
	assert_eq "$(ev 'select(.kind=="range") | .name' | sort | uniq -c | sed 's/^ *//')" "4 step"
	assert_eq "$(dropped)" ""
}

@test "SIGKILL with work still running: the trace's kernels and calls plus the dropped ones, exactly" {
	need_cuda
	[ -f "$FAKE" ] || skip "no stand-in CUPTI"
	# CUPTI delivers the first 4 launches at the flushes, never the last 3
	export TRACEKIT_CUPTI=$FAKE FAKE_CUPTI_PENDING=3
	record_killed 7 --flush-interval 20ms
	assert_eq "$(ev 'select(.kind=="kernel") | .correlation' | paste -sd,)" "1,2,3,4"
	assert_eq "$(ev 'select(.kind=="api") | .correlation' | paste -sd,)" "1,2,3,4"
	# nothing else lost: no "nvtx+cuda" of the status page's count
	assert_eq "$(dropped)" "kernel 3
runtime 3"
	# --cuda=kernel: only what it recorded is counted
	rm -f "$BATS_TEST_TMPDIR/ready"
	record_killed 7 --flush-interval 20ms --cuda=kernel
	assert_eq "$(ev 'select(.kind=="kernel") | .correlation' | paste -sd,)" "1,2,3,4"
	assert_eq "$(dropped)" "kernel 3"
	# a normal exit: CUPTI hands back everything, nothing is dropped
	run -0 trace-record -o "$T" --flush-interval 20ms -- "$APPS/fake_driver" 7
	assert_eq "$(ev 'select(.kind=="kernel") | .correlation' | paste -sd,)" "1,2,3,4,5,6,7"
	assert_eq "$(dropped)" ""
}

@test "SIGKILL after CUPTI handed back full buffers: their records are in the trace, not lost in the writer" {
	need_cuda
	[ -f "$FAKE" ] || skip "no stand-in CUPTI"
	# 64 KiB buffers fill every few hundred launches and CUPTI hands
	# them back on the program's thread; the flush interval is long, so
	# only a round started by that hand-back puts them in the spool
	# before the kill (seen on an H200 with PyTorch: 16 090 kernels CUPTI
	# had delivered were lost at SIGKILL, counted only as "nvtx+cuda").
	export TRACEKIT_CUPTI=$FAKE TRACEKIT_CUDA_BUFFER_BYTES=65536
	record_killed 3000 --flush-interval 10s
	kernels=$(ev 'select(.kind=="kernel") | .correlation' | wc -l)
	# (none: the full buffers waited for a round the kill prevented)
	[ "$kernels" -gt 0 ]
	# every launch is a kernel of the trace or counted as a dropped
	# kernel, and the status page counted nothing lost besides
	dropped_kernels=$(ev 'select(.kind=="dropped" and .name=="kernel") | .count')
	assert_eq "$((kernels + ${dropped_kernels:-0}))" 3000
	assert_eq "$(ev 'select(.kind=="dropped" and .name!="kernel" and .name!="runtime") | .name')" ""
}

@test "--cuda=kernel: callbacks on the launch calls only, not on every API call" {
	need_cuda
	[ -f "$FAKE" ] || skip "no stand-in CUPTI"
	export TRACEKIT_CUPTI=$FAKE FAKE_CUPTI_LOG=$BATS_TEST_TMPDIR/log
	run -0 trace-record -o "$T" --cuda=kernel -- "$APPS/fake_driver" 3
	log=$BATS_TEST_TMPDIR/log
	# (CUPTI_CB_DOMAIN_DRIVER_API is 1, RUNTIME_API 2; 211 cudaLaunchKernel)
	assert_eq "$(grep -cE '^domain 1 (1|2)$' "$log")" 0
	assert_eq "$(grep -c '^callback 1 2 211$' "$log")" 1
	assert_eq "$(ev 'select(.kind=="kernel") | .correlation' | paste -sd,)" "1,2,3"
	# recording the API calls too: every runtime and driver call
	rm -f "$log"
	run -0 trace-record -o "$T" -- "$APPS/fake_driver" 3
	assert_eq "$(grep -cE '^domain 1 (1|2)$' "$log")" 2
}

@test "the capture schedule: CUPTI collects from the warmup, the trace keeps the active steps" {
	need_cuda
	[ -f "$FAKE" ] || skip "no stand-in CUPTI"
	export TRACEKIT_CUPTI=$FAKE FAKE_CUPTI_LOG=$BATS_TEST_TMPDIR/log
	run -0 trace-record -o "$T" --capture-range=nvtx:step --skip 2 --warmup 1 --active 2 -- "$APPS/fake_driver" 8
	# steps 1-2 skipped (no collection), 3 warmup (collected, not kept),
	# 4-5 active; after the schedule, collection stops
	assert_eq "$(ev 'select(.kind=="kernel") | .correlation' | paste -sd,)" "4,5"
	assert_eq "$(ev 'select(.kind=="api") | .correlation' | paste -sd,)" "4,5"
	assert_eq "$(ev 'select(.kind=="range") | .name' | wc -l)" 2
	log=$BATS_TEST_TMPDIR/log
	assert_eq "$(grep -c '^enable 10$' "$log")" 1
	assert_eq "$(grep -c '^disable 10$' "$log")" 1
}

@test "the capture schedule judges GPU work by its launch call, whenever the GPU runs it" {
	need_cuda
	[ -f "$FAKE" ] || skip "no stand-in CUPTI"
	# each kernel begins 50 ms after its launch, after the schedule's
	# end, and its record comes before its launch's: as on a real GPU
	export TRACEKIT_CUPTI=$FAKE FAKE_CUPTI_LOG=$BATS_TEST_TMPDIR/log FAKE_CUPTI_GPU_LAG=50000000
	run -0 trace-record -o "$T" --capture-range=nvtx:step --skip 2 --warmup 1 --active 2 -- "$APPS/fake_driver" 8
	assert_eq "$(ev 'select(.kind=="kernel") | .correlation' | paste -sd,)" "4,5"
	assert_eq "$(ev 'select(.kind=="api") | .correlation' | paste -sd,)" "4,5"
	# the calls are judged as they begin: CUPTI's runtime callbacks are on
	grep -q '^domain 1 1$' "$BATS_TEST_TMPDIR/log"
}

@test "another tool's CUDA injection is replaced, and said so; --cuda=none keeps it" {
	need_cuda
	need_no_driver
	export CUDA_INJECTION64_PATH=/opt/other/libother-inject.so
	run -0 --separate-stderr trace-record -o "$T" -- sh -c 'echo "$CUDA_INJECTION64_PATH"'
	assert_eq "$output" "$(realpath "$INJECT")"
	assert_eq "$stderr" "trace-record: CUDA_INJECTION64_PATH=/opt/other/libother-inject.so is replaced for the command (--cuda=none keeps it)"
	run -0 --separate-stderr trace-record -o "$T" --cuda=none -- sh -c 'echo "$CUDA_INJECTION64_PATH"'
	assert_eq "$output" "/opt/other/libother-inject.so"
	assert_eq "$stderr" ""
}
