#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The CUPTI activity converter end to end: cupti-convert-bench makes one
# activity stream twice, as CUPTI buffers (walked by libcupti and
# converted) and as the tracekit events those records stand for, built
# independently and written straight to a writer.  Both traces must list
# the same events.  (Unit tests: tests/unit/test_cupti_convert.c.)

load helpers

setup() {
	bench=$TK_BUILD/tests/bench/cupti-convert-bench
	[ -x "$bench" ] || skip "converter not built (no CUPTI 13.0 headers under CUDA_HOME)"
	run -0 "$bench" -n 20000 -r 1 -o "$BATS_TEST_TMPDIR/t"
	C=$BATS_TEST_TMPDIR/t.converted.tkt
	D=$BATS_TEST_TMPDIR/t.direct.tkt
}

@test "converted CUPTI buffers list the same events as the direct reference" {
	run -0 trace-dump "$C"
	converted=$output
	run -0 trace-dump "$D"
	assert_eq "$converted" "$output"
	# and not trivially: kernels, API calls, copies, syncs are there
	for k in kernel api memcpy memset sync memory counter overhead; do
		n=$(trace-dump --kind "$k" "$C" | wc -l)
		[ "$n" -gt 0 ] || { echo "no $k events"; return 1; }
	done
}

@test "kernels carry demangled and mangled names, launch calls their correlation" {
	trace-dump --json --kind kernel "$C" > "$BATS_TEST_TMPDIR/k.json"
	run -0 jq -r 'select(.mangled == "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_") | .name' "$BATS_TEST_TMPDIR/k.json"
	[ "${#lines[@]}" -gt 0 ]
	assert_eq "${lines[0]}" "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
	# plain (not C++) names have no mangled name
	run -0 jq -r 'select(.name == "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn") | .mangled // "none"' "$BATS_TEST_TMPDIR/k.json"
	assert_eq "$(printf '%s\n' "${lines[@]}" | sort -u)" "none"
	# every kernel's correlation id is that of a cudaLaunchKernel call
	kernels=$(jq -r .correlation "$BATS_TEST_TMPDIR/k.json" | sort)
	launches=$(trace-dump --json --kind api "$C" |
		jq -r 'select(.cbid == 211) | .correlation' | sort)
	assert_eq "$kernels" "$launches"
}
