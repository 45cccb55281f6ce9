/* SPDX-License-Identifier: MIT */
/*
 * trace-diff --normalize (cmd/analysis/normalize.c): each rule, what it
 * must leave alone, and real kernel names from two builds that must
 * (and must not) end up equal.
 */
#include "tap.h"
#include "helpers.h"
#include "analysis/normalize.h"

static void
check_norm(const char *in, const char *want, int line)
{
	char *got = diff_normalize(in);
	if (!got || strcmp(got, want) != 0) {
		fprintf(stderr, "# line %d: normalize(\"%s\")\n#   = \"%s\"\n# want \"%s\"\n",
		        line, in, got ? got : "(null)", want);
		tap_current_failed = 1;
	}
	free(got);
}
#define NORM(in, want) check_norm(in, want, __LINE__)

static int
same_after(const char *a, const char *b)
{
	char *x = diff_normalize(a), *y = diff_normalize(b);
	int eq = x && y && strcmp(x, y) == 0;
	free(x);
	free(y);
	return eq;
}

TEST(template_arguments)
{
	NORM("ncclKernel<float, 4>", "ncclKernel<...>");
	NORM("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
	     "at::native::NormTwoOps<float, float, float>, unsigned int, float, 4> >"
	     "(at::native::ReduceOp<float, at::native::NormTwoOps<float, float, float>, "
	     "unsigned int, float, 4>)",
	     "void at::native::reduce_kernel<...>(at::native::ReduceOp<...>)");
	/* nested, and several at one level */
	NORM("a<b<c>, d<e<f>>>::g<h>(i<j>)", "a<...>::g<...>(i<...>)");
	/* '->' inside does not close */
	NORM("f<decltype(p->x)>(int)", "f<...>(int)");
	/* operators are not templates */
	NORM("operator<(a, b)", "operator<(a, b)");
	NORM("std::operator<<(ostream&)", "std::operator<<(ostream&)");
	NORM("std::less<int>::operator()(a<b)", "std::less<...>::operator()(a<b)");
	/* after a space or at the start: not template arguments */
	NORM("nn.Module: <lambda>", "nn.Module: <lambda>");
	NORM("<module>", "<module>");
	/* no match: kept as it is */
	NORM("a<b", "a<b");
	NORM("x<y<z>", "x<y<...>");
	NORM("", "");
}

TEST(addresses)
{
	NORM("<built-in method conv2d of type object at 0x7f3a2c1b9e40>",
	     "<built-in method conv2d of type object at 0x...>");
	NORM("buffer 0XDEADBEEF freed", "buffer 0x... freed");
	NORM("kernel_0x7f00(int)", "kernel_0x...(int)");
	/* inside a word, or with no digits after: not an address */
	NORM("tile_100x200", "tile_100x200");
	NORM("0x", "0x");
	NORM("a0x12", "a0x12");
}

TEST(numeric_suffixes)
{
	NORM("triton_poi_fused_add_0", "triton_poi_fused_add_N");
	NORM("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_12",
	     "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_N");
	NORM("ProfilerStep#12", "ProfilerStep#N");
	NORM("layer.3", "layer.N");
	NORM("model.layers.12.mlp.down_proj", "model.layers.N.mlp.down_proj");
	NORM("resnet-50", "resnet-N");
	NORM("{lambda()#2}::operator()", "{lambda()#N}::operator()");
	/* hex hashes at the end of a word */
	NORM("fused_kernel_3fa9c0d1e2", "fused_kernel_N");
	NORM("fused_kernel_deadbeefcafe", "fused_kernel_deadbeefcafe"); /* no digit */
	NORM("kernel_abc123", "kernel_abc123");                         /* too short */
	/* digits inside words name different kernels: kept */
	NORM("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn",
	     "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn");
	NORM("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
	     "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1");
	NORM("cudaLaunchKernel_v7000", "cudaLaunchKernel_v7000");
	NORM("cuda:0", "cuda:0");
	NORM("step 12", "step 12");        /* a word of its own, not a suffix */
	NORM("_1", "_1");                   /* nothing before the separator */
	NORM("a _1", "a _1");
	NORM("split_0_1", "split_0_N");     /* only the end of the word */
}

TEST(two_builds_match)
{
	/* the same operation, renamed by a new build */
	CHECK(same_after("triton_poi_fused_add_mul_3", "triton_poi_fused_add_mul_7"));
	CHECK(same_after("ProfilerStep#1", "ProfilerStep#250"));
	CHECK(same_after(
		"void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl("
		"at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::"
		"{lambda()#1}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >"
		"(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::"
		"{lambda()#2}::operator()() const::{lambda()#1}::operator()() const::"
		"{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)",
		"void at::native::vectorized_elementwise_kernel<8, at::native::GeluCUDAKernelImpl("
		"at::TensorIteratorBase&, at::native::GeluType)::{lambda()#3}::operator()() const::"
		"{lambda()#1}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >"
		"(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::"
		"{lambda()#3}::operator()() const::{lambda()#1}::operator()() const::"
		"{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)"));
	CHECK(same_after("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false>, true>",
	                 "flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 32, 4, false>, false>"));
	/* different operations stay apart */
	CHECK(!same_after("void at::native::vectorized_elementwise_kernel<4, at::native::"
	                  "CUDAFunctorOnSelf_add<c10::BFloat16>, at::detail::Array<char*, 2> >"
	                  "(int, at::native::CUDAFunctorOnSelf_add<c10::BFloat16>, "
	                  "at::detail::Array<char*, 2>)",
	                  "void at::native::vectorized_elementwise_kernel<4, at::native::"
	                  "CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >"
	                  "(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
	                  "at::detail::Array<char*, 3>)"));
	CHECK(!same_after("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn",
	                  "ampere_bf16_s16816gemm_bf16_64x64_sliced1x2_ldg8_f2f_tn"));
	CHECK(!same_after("cudaMemcpyAsync", "cudaMemsetAsync"));
	/* the parameter list is kept: where it names the instantiation
	 * again, another tile size is another kernel */
	CHECK(!same_after(
		"void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>"
		"(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)",
		"void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x64_64x3_tn_align8>"
		"(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x64_64x3_tn_align8::Params)"));
}

TEST(long_and_odd_names)
{
	/* growth is bounded ("a<>" is the worst), and nothing is read past
	 * the end, whatever the bytes */
	char buf[3001];
	for (int i = 0; i < 1000; i++)
		memcpy(buf + 3 * i, "a<>", 3);
	buf[3000] = 0;
	char *n = diff_normalize(buf);
	CHECK(n && strlen(n) == 6000);
	free(n);
	for (int t = 0; t < 2000; t++) {
		size_t len = rnd_below(40);
		for (size_t i = 0; i < len; i++)
			buf[i] = "<>_.#-0x9aF ()"[rnd_below(14)];
		buf[len] = 0;
		n = diff_normalize(buf);
		CHECK(n && strlen(n) <= 2 * len);
		/* normalizing twice changes nothing more */
		char *m = n ? diff_normalize(n) : NULL;
		if (!m || strcmp(m, n) != 0) {
			fprintf(stderr, "# not idempotent: \"%s\" -> \"%s\" -> \"%s\"\n", buf,
			        n ? n : "", m ? m : "");
			tap_current_failed = 1;
		}
		free(n);
		free(m);
	}
}

int
main(void)
{
	RUN(template_arguments);
	RUN(addresses);
	RUN(numeric_suffixes);
	RUN(two_builds_match);
	RUN(long_and_odd_names);
	return tap_done();
}
