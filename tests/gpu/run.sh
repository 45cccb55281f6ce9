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
# copies, memset, allocations, synchronisations, NVTX ranges, and that
# every kernel starts after the API call that launched it (GPU and CPU
# timestamps on one clock).  Expected numbers come from the sample's
# documented work (see the top of tests/apps/cuda_sample.cu) and ITER.
#
# Exit status: 0 all checks passed, or no usable GPU here (a line starting
# "gpu tests: skip:" says why); 1 a check failed; 2 something needed is
# missing (trace-record, trace-dump, the sample, jq) on a machine that
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

# Every kernel was launched by an API call with its correlation id, and
# starts after that call began (one clock for CPU and GPU).
q -s '
  (map(select(.kind=="api")) | map({key: (.correlation|tostring), value: .ts}) | from_entries) as $api
  | map(select(.kind=="kernel"))
  | map(if $api[(.correlation|tostring)] == null then "no launch call for corr \(.correlation)"
        elif .ts < $api[(.correlation|tostring)] then "kernel before its launch: corr \(.correlation)"
        else empty end) | .[]' >"$tmp/corr"
check "kernels linked to their launch calls, after them" "" "$(head -3 "$tmp/corr")"

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

# Nothing lost.
check "no dropped records" "" "$(q 'select(.kind=="dropped") | "\(.count) \(.reason)"')"

if [ "$failed" -gt 0 ]; then
	echo "gpu tests: $failed failed, $passed passed (trace kept in $tmp.tkt)"
	cp "$tmp/run.tkt" "$tmp.tkt"
	sed 's/^/  trace-record: /' "$tmp/err" | head -20
	exit 1
fi
echo "gpu tests: $passed passed"
