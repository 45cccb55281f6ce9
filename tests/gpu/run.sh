#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Live GPU test of trace-record's CUDA recording (CUPTI).
#
#   make check-gpu            or            O=build tests/gpu/run.sh
#
# Records tests/apps/cuda_sample (built by `make tests` when nvcc is
# present) with trace-record and checks what it recorded against what the
# program does, exactly: kernel names and counts, mangled names, streams,
# copies, memset, allocations, synchronisations, NVTX ranges and the
# launches inside them, correlation ids linking each kernel to its
# launch call, and times on one clock (every kernel starts after the API
# call that launched it; kernels of a stream in launch order).  Then
# --cuda=kernel, and the capture schedule.  Expected numbers come from the
# sample's documented work (see the top of tests/apps/cuda_sample.cu) and
# ITER.
#
# Exit status: 0 all checks passed, or no usable GPU here (a line starting
# "gpu tests: skip:" says why); 1 a check failed; 2 something needed is
# missing (trace-record, trace-dump, the sample, jq, python3) on a machine that
# has a GPU.
set -u
export LC_ALL=C
cd "$(dirname "$0")/../.."
O=${O:-build}
ITER=${ITER:-4}
bin=$PWD/$O/bin
sample=$PWD/$O/tests/apps/cuda_sample
N=65536 # elements in the sample's arrays

skip() { echo "gpu tests: skip: $*"; exit 0; }
die() { echo "gpu tests: $*" >&2; exit 2; }

# ---- is there a GPU? ------------------------------------------------------
if command -v nvidia-smi >/dev/null 2>&1; then
	gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
	[ "$gpus" -gt 0 ] || skip "nvidia-smi lists no GPU"
	[ -x "$sample" ] || die "$sample is not built (it needs nvcc: make tests)"
	why=$("$sample" --query 2>&1) ||
		die "nvidia-smi lists $gpus GPU(s) but CUDA cannot use them: $why"
elif [ -x "$sample" ]; then
	why=$("$sample" --query 2>&1) || skip "no usable CUDA device ($why)"
else
	skip "no nvidia-smi and no CUDA sample to ask (no GPU tools on this machine)"
fi
echo "gpu tests: $why"

# ---- what the checks need -----------------------------------------------------
command -v jq >/dev/null 2>&1 || die "jq is needed"
command -v python3 >/dev/null 2>&1 || die "python3 is needed"
record=$bin/trace-record
dump=$bin/trace-dump
[ -x "$record" ] || record=$(command -v trace-record) ||
	die "trace-record is not built"
[ -x "$dump" ] || dump=$(command -v trace-dump) || die "trace-dump is not built"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$record" -o "$tmp/run.tkt" -- "$sample" "$ITER" >"$tmp/out" 2>"$tmp/err"
rc=$?
"$dump" --json "$tmp/run.tkt" >"$tmp/run.jsonl" 2>>"$tmp/err" ||
	{ cat "$tmp/err" >&2; die "trace-dump could not read the recording"; }

failed=0 passed=0
check() { # check DESCRIPTION EXPECTED ACTUAL
	if [ "$2" = "$3" ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		printf 'gpu tests: FAIL: %s\n  expected: %s\n  got:      %s\n' "$1" "$2" "$3"
	fi
}
q() { jq -r "$@" "$tmp/run.jsonl"; }
count() { q "select($1)" | jq -s length; }

check "cuda_sample exit status through trace-record" 0 "$rc"

# Kernels: exactly these names, this many times, and nothing else.
want=$(cat <<EOF
$ITER fill_kernel(float*, float, int)
$((3 * ITER)) sample::scale_kernel(float*, float, int)
1 plain_c_kernel
$ITER void reduce_kernel<256>(float const*, float*, int)
$((2 * ITER)) void saxpy_kernel<float>(float, float const*, float*, int)
EOF
)
got=$(q 'select(.kind=="kernel") | .name' | sort | uniq -c | sed 's/^ *//')
check "kernel names and counts" "$(echo "$want" | sort)" "$(echo "$got" | sort)"

# Mangled names kept next to the demangled ones; none for extern "C".
got=$(q 'select(.kind=="kernel") | "\(.name)|\(.mangled // "")"' | sort -u)
want=$(sort <<'EOF'
fill_kernel(float*, float, int)|_Z11fill_kernelPffi
plain_c_kernel|
sample::scale_kernel(float*, float, int)|_ZN6sample12scale_kernelEPffi
void reduce_kernel<256>(float const*, float*, int)|_Z13reduce_kernelILi256EEvPKfPfi
void saxpy_kernel<float>(float, float const*, float*, int)|_Z12saxpy_kernelIfEvT_PKS0_PS0_i
EOF
)
check "mangled names" "$want" "$got"

# Streams: fill and saxpy share stream A, scale runs on B, reduce and
# plain_c_kernel on the default stream: three different streams.
stream_of() { q "select(.kind==\"kernel\" and (.name|startswith(\"$1\"))) | .stream" | sort -u | tr '\n' ' '; }
a=$(stream_of fill_kernel) b=$(stream_of sample::) d=$(stream_of "void reduce")
check "saxpy on fill's stream" "$a" "$(stream_of "void saxpy")"
check "plain_c_kernel on reduce's stream" "$d" "$(stream_of plain_c)"
check "three streams" 3 "$(printf '%s\n' "$a" "$b" "$d" | sort -u | wc -l)"

# Every kernel was launched by one API call with its correlation id
# (cudaLaunchKernel, or __cudaLaunchKernel for <<<>>> in CUDA 13), on the
# program's thread, inside the NVTX range it was launched in: 7 launches
# in each "iteration", plain_c_kernel in "teardown".  GPU and CPU times
# are on one clock: a kernel begins after its launch call began, and
# within the process's life.  On each stream, kernels run one after the
# other, in launch order.  (Python: exact integers; jq's are doubles.)
"$dump" --json "$tmp/run.tkt" | python3 -c '
import json, sys
from collections import defaultdict
evs = [json.loads(l) for l in sys.stdin]
proc = [e for e in evs if e["kind"] == "process"][0]
pid = proc["pid"]
api = defaultdict(list)
for e in evs:
    if e["kind"] == "api":
        api[e["correlation"]].append(e)
ranges = [e for e in evs if e["kind"] == "range"]
bad = []
per_range = defaultdict(int)
streams = defaultdict(list)
for k in (e for e in evs if e["kind"] == "kernel"):
    calls = [a for a in api[k["correlation"]]
             if a["name"] in ("cudaLaunchKernel", "__cudaLaunchKernel")]
    if len(calls) != 1:
        bad.append("kernel corr %d: %d launch calls" % (k["correlation"], len(calls)))
        continue
    a = calls[0]
    if a.get("tid") != pid:
        bad.append("launch corr %d not on the main thread" % k["correlation"])
    if k["ts"] < a["ts"]:
        bad.append("kernel corr %d begins before its launch call" % k["correlation"])
    if not (proc["ts"] <= k["ts"] and k["ts"] + k["dur"] <= proc["ts"] + proc["dur"]):
        bad.append("kernel corr %d outside the process" % k["correlation"])
    inside = [r for r in ranges if r.get("tid") == a.get("tid") and
              r["ts"] <= a["ts"] and a["ts"] + a["dur"] <= r["ts"] + r["dur"]]
    names = sorted(r["name"] for r in inside)
    if names not in (["iteration"], ["teardown"]):
        bad.append("launch corr %d inside %s" % (k["correlation"], names))
    else:
        per_range[(names[0], inside[0]["ts"])] += 1
    streams[k["stream"]].append(k)
counts = sorted((n, c) for (n, _), c in per_range.items())
want = sorted([("iteration", 7)] * int(sys.argv[1]) + [("teardown", 1)])
if counts != want:
    bad.append("launches per range %s, want %s" % (counts, want))
for s, ks in streams.items():
    ks.sort(key=lambda k: k["ts"])
    for x, y in zip(ks, ks[1:]):
        if y["ts"] < x["ts"] + x["dur"]:
            bad.append("stream %s: kernels overlap (corr %d, %d)" % (s, x["correlation"], y["correlation"]))
        if y["correlation"] < x["correlation"]:
            bad.append("stream %s: kernels out of launch order (corr %d, %d)" % (s, x["correlation"], y["correlation"]))
print("\n".join(bad[:5]))' "$ITER" >"$tmp/corr"
check "kernels linked to their launch calls, in NVTX ranges, times in order" "" "$(cat "$tmp/corr")"

# Copies, memset, allocations.
check "one HtoD copy of the input" 1 "$(count ".kind==\"memcpy\" and .copy_kind==\"HtoD\" and .bytes==$((N * 4))")"
check "one DtoH copy of the result" 1 "$(count '.kind=="memcpy" and .copy_kind=="DtoH" and .bytes==8')"
check "one memset" 1 "$(count ".kind==\"memset\" and .bytes==$((N * 4))")"
check "two device allocations of the arrays" 2 "$(count ".kind==\"memory\" and .op==\"alloc\" and .mem_kind==\"Device\" and .bytes==$((N * 4))")"
check "two releases of them" 2 "$(count ".kind==\"memory\" and .op==\"free\" and .mem_kind==\"Device\" and .bytes==$((N * 4))")"
# (the only counter with a device is the "device memory" one)
peak=$(q 'select(.kind=="counter" and .device != null) | .value' | sort -g | tail -1)
check "device memory counter reached both arrays" 1 "$(jq -n "${peak:-0} >= $((2 * N * 4)) | if . then 1 else 0 end")"

# Synchronisations, on the calling thread.
check "stream synchronisations" $((2 * ITER)) "$(count '.kind=="sync" and .sync=="StreamSynchronize"')"
check "device synchronisation" 1 "$(count '.kind=="sync" and .sync=="ContextSynchronize"')"
check "syncs on a thread" 0 "$(count '.kind=="sync" and .tid==null')"
check "API calls on a thread" 0 "$(count '.kind=="api" and .tid==null')"

# NVTX ranges next to the GPU work.
check "NVTX iteration ranges" "$ITER" "$(count '.kind=="range" and .name=="iteration"')"
check "NVTX setup/teardown" 2 "$(count '.kind=="range" and (.name=="setup" or .name=="teardown")')"
check "NVTX mark" 1 "$(count '.kind=="mark" and .name=="done"')"

# Nothing lost; what the trace says about the recording.
check "no dropped records" "" "$(q 'select(.kind=="dropped") | "\(.count) \(.reason)"')"
meta() { "$dump" --info "${2:-$tmp/run.tkt}" | sed -n "s/^  meta $1 = //p"; }
pid=$(q 'select(.kind=="process") | .pid')
check "recorded, says the trace" "recorded (pid $pid): kernel,memcpy,memset,memory,runtime,driver,sync,overhead" \
	"$(meta cuda | sed 's/; CUPTI .*//')"
check "nothing refused or late" "0 dropped by CUPTI, 0 refused, 0 late" \
	"$(meta cuda.stats | sed -E 's/.* ([0-9]+ dropped by CUPTI), [0-9]+ buffers \(([0-9]+ refused): pool full\), ([0-9]+ late),.*/\1, \2, \3/')"
check "the device's name" "$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null || echo "?")" \
	"$("$dump" --info --json "$tmp/run.tkt" | jq -r '.devices[] | select(.index==0) | .name')"
check "no stderr from trace-record" "" "$(grep '^trace-record:' "$tmp/err")"

# --cuda=kernel: kernels only.
"$record" -o "$tmp/k.tkt" --cuda=kernel -- "$sample" "$ITER" >/dev/null 2>>"$tmp/err"
check "--cuda=kernel: the same kernels" "$((7 * ITER + 1))" "$("$dump" -k kernel "$tmp/k.tkt" | wc -l)"
check "--cuda=kernel: no API calls, copies or syncs" "0" \
	"$("$dump" -k api,memcpy,memset,sync,memory "$tmp/k.tkt" | wc -l)"

# The capture schedule: iteration 1 is the warmup (CUPTI starts there),
# 2 and 3 are recorded: their kernels, all of them, and nothing else.
"$record" -o "$tmp/s.tkt" --capture-range=nvtx:iteration --warmup 1 --active 2 -- \
	"$sample" "$ITER" >/dev/null 2>>"$tmp/err"
# Each kernel is judged by its launch call: reduce_kernel, launched last
# in iteration 3, runs after the range ends and is kept all the same.
kernels_of() { "$dump" --json -k kernel "$1" | jq -r .name | sort | uniq -c | sed 's/^ *//' | sort; }
want=$(sort <<EOF
2 fill_kernel(float*, float, int)
6 sample::scale_kernel(float*, float, int)
2 void reduce_kernel<256>(float const*, float*, int)
4 void saxpy_kernel<float>(float, float const*, float*, int)
EOF
)
check "capture schedule: the kernels of the two active iterations" "$want" "$(kernels_of "$tmp/s.tkt")"
check "capture schedule: two iteration ranges" 2 "$("$dump" --json -k range "$tmp/s.tkt" | jq -r .name | grep -c '^iteration$')"
# With --cuda=kernel CUPTI records no launch calls: the calls are judged
# as they are made, all the same.
"$record" -o "$tmp/sk.tkt" --cuda=kernel --capture-range=nvtx:iteration --warmup 1 --active 2 -- \
	"$sample" "$ITER" >/dev/null 2>>"$tmp/err"
check "capture schedule with --cuda=kernel: the same kernels" "$want" "$(kernels_of "$tmp/sk.tkt")"

if [ "$failed" -gt 0 ]; then
	echo "gpu tests: $failed failed, $passed passed (trace kept in $tmp.tkt)"
	cp "$tmp/run.tkt" "$tmp.tkt"
	sed 's/^/  trace-record: /' "$tmp/err" | head -20
	exit 1
fi
echo "gpu tests: $passed passed"
