/* SPDX-License-Identifier: MIT */
/*
 * synth: a deterministic generator of realistic training-loop traces for
 * tests and benchmarks.  One process with a main thread and a data-loader
 * thread; each step is an NVTX "step" range holding "forward" (one
 * "layer.N" range per layer), "backward" and "optimizer" ranges; every
 * kernel, copy and memset is launched by a CUDA runtime call with a
 * correlation id and runs on one of three streams of one GPU; RSS,
 * CPU and device-memory counters are sampled every step; device memory is
 * allocated at the start and freed at the end.  The same seed gives the
 * same trace, byte for byte.
 *
 * Knobs for tests with known answers:
 *   --slow NAME=F   kernels whose name contains NAME take F times longer
 *   --add NAME      launch one more kernel NAME in every backward pass
 *   --remove NAME   never launch kernels whose name contains NAME
 *   --speedup F     everything (GPU and CPU) F times faster
 *   --noise S       relative jitter of durations (default 0.05)
 *   --runs N        N runs of --steps steps each, marked with run events
 *
 * Output is sorted by begin time.  To write the process event (which
 * begins first but whose duration is known last) in order, the
 * simulation runs twice: once to time it, once to write it.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracekit.h"
#include "common/util.h"

#define MAX_TWEAKS 16

struct kernel_def {
	const char *name;
	uint32_t grid, block, regs, smem;
	double base_us;          /* typical duration */
};

/* Names as they appear in real PyTorch traces on NVIDIA GPUs. */
static const struct kernel_def forward_kernels[] = {
	{ "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn", 264, 256, 238, 73728, 180 },
	{ "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#1}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#1}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)", 2048, 128, 20, 0, 28 },
	{ "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)", 4096, 256, 40, 0, 22 },
	{ "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>, false, false, false, false, true, true, false>", 512, 128, 255, 49152, 310 },
	{ "ampere_bf16_s16816gemm_bf16_64x64_sliced1x2_ldg8_f2f_tn", 528, 128, 154, 24576, 95 },
	{ "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<c10::BFloat16>, at::detail::Array<char*, 2> >(int, at::native::CUDAFunctorOnSelf_add<c10::BFloat16>, at::detail::Array<char*, 2>)", 2048, 128, 16, 0, 14 },
	{ "void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)", 396, 128, 168, 65536, 120 },
	{ "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)", 8192, 256, 32, 2048, 35 },
};

static const struct kernel_def backward_kernels[] = {
	{ "ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_nn", 132, 256, 232, 98304, 260 },
	{ "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nt", 264, 256, 238, 73728, 240 },
	{ "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t>, true, false, false, false, false, true, false>", 1024, 256, 255, 98304, 620 },
	{ "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<c10::BFloat16, float>(long, long, c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16*, c10::BFloat16*)", 64, 1024, 48, 16384, 41 },
	{ "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#1}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3> >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#1}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3>)", 2048, 128, 22, 0, 33 },
	{ "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<c10::BFloat16, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<c10::BFloat16, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)", 216, 512, 32, 16, 19 },
	{ "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, c10::BFloat16*, int)", 4096, 128, 56, 0, 37 },
	{ "void cutlass::Kernel<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_nn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_nn_align8::Params)", 1056, 128, 128, 34816, 88 },
	{ "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::SoftMaxBackwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, int)", 8192, 256, 36, 2048, 31 },
	{ "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)", 2048, 128, 18, 0, 16 },
};

static const struct kernel_def allreduce_kernel =
	{ "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 8, 640, 96, 0, 900 };

static const struct kernel_def optimizer_kernels[] = {
	{ "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, double, at::native::(anonymous namespace)::adamMode, bool, float*, float*>(int, at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, double, at::native::(anonymous namespace)::adamMode, bool, float*, float*)", 320, 512, 72, 0, 410 },
	{ "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::UnaryOpScalarFunctor<float, 1, 1, 0>, std::multiplies<float>, float>(int, at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::UnaryOpScalarFunctor<float, 1, 1, 0>, std::multiplies<float>, float)", 320, 512, 30, 0, 48 },
	{ "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::NormTwoOps<float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::NormTwoOps<float, float, float>, unsigned int, float, 4>)", 128, 512, 40, 16, 26 },
};

#define N_ARR(a) (sizeof(a) / sizeof((a)[0]))

struct tweak {
	char *pattern;
	double factor;
};

struct options {
	uint64_t events;       /* stop after a step once this many written */
	uint64_t steps;        /* or this many steps per run (0 = by events) */
	uint64_t runs;
	uint64_t seed;
	unsigned layers;
	double noise;
	double speedup;
	struct tweak slow[MAX_TWEAKS];
	unsigned nslow;
	char *add[MAX_TWEAKS];
	unsigned nadd;
	char *remove[MAX_TWEAKS];
	unsigned nremove;
	const char *output;
	int level;
	uint32_t chunk_bytes;
	int64_t start;
	int64_t pid;
};

/* ---- randomness ------------------------------------------------------------ */

static uint64_t rng_state;

static uint64_t
rng_next(void)
{
	/* splitmix64: small, fast, good enough for jitter */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double
rng_uniform(void)
{
	return (double)(rng_next() >> 11) * 0x1.0p-53;
}

static double
rng_normal(void)
{
	double u1 = rng_uniform(), u2 = rng_uniform();
	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

/* ---- the simulation ----------------------------------------------------------- */

struct sim {
	const struct options *opt;
	struct tk_writer *w;    /* NULL in the timing pass */
	struct tk_event *buf;   /* events of the current step */
	size_t nbuf, capbuf;
	uint64_t *seq;
	uint64_t written;
	int64_t cpu;            /* main thread clock */
	int64_t stream_free[3]; /* per stream: when it is idle */
	uint64_t corr;
	uint32_t main_thread, loader_thread, process_track;
	uint32_t streams[3];
	uint32_t rss, cpu_pct, devmem;
	uint64_t device_bytes;
	uint32_t name_launch, name_memcpy, name_memset, name_sync;
	int64_t *run_end;       /* timing pass: end of each run */
	int64_t process_end;
};

static void
push(struct sim *s, const struct tk_event *e)
{
	if (s->nbuf == s->capbuf) {
		s->capbuf = s->capbuf ? s->capbuf * 2 : 1024;
		s->buf = realloc(s->buf, s->capbuf * sizeof(*s->buf));
		s->seq = realloc(s->seq, s->capbuf * sizeof(*s->seq));
		if (!s->buf || !s->seq)
			cmd_die(2, "out of memory");
	}
	s->seq[s->nbuf] = s->nbuf;
	s->buf[s->nbuf++] = *e;
}

struct keyed {
	int64_t ts;
	uint64_t seq;
	size_t idx;
};

static int
cmp_keyed(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void
flush_step(struct sim *s)
{
	if (!s->w) {
		s->written += s->nbuf;
		s->nbuf = 0;
		return;
	}
	struct keyed *k = malloc(s->nbuf * sizeof(*k));
	if (!k && s->nbuf)
		cmd_die(2, "out of memory");
	for (size_t i = 0; i < s->nbuf; i++)
		k[i] = (struct keyed){ s->buf[i].ts, s->seq[i], i };
	qsort(k, s->nbuf, sizeof(*k), cmp_keyed);
	for (size_t i = 0; i < s->nbuf; i++) {
		if (tk_writer_event(s->w, &s->buf[k[i].idx]) != TK_OK) {
			if (tk_writer_errno(s->w) == EPIPE)
				exit(0); /* `synth | head -c N` */
			cmd_die(2, "%s", tk_writer_error(s->w));
		}
	}
	s->written += s->nbuf;
	s->nbuf = 0;
	free(k);
}

static int
matches(char *const *patterns, unsigned n, const char *name)
{
	for (unsigned i = 0; i < n; i++)
		if (strstr(name, patterns[i]))
			return 1;
	return 0;
}

static double
slow_factor(const struct options *o, const char *name)
{
	double f = 1;
	for (unsigned i = 0; i < o->nslow; i++)
		if (strstr(name, o->slow[i].pattern))
			f *= o->slow[i].factor;
	return f;
}

/* A duration around `base_ns`, with multiplicative jitter. */
static int64_t
jitter(const struct sim *s, double base_ns)
{
	double j = exp(s->opt->noise * rng_normal());
	double v = base_ns * j / s->opt->speedup;
	return v < 1 ? 1 : (int64_t)v;
}

static void
api_call(struct sim *s, uint32_t name, int64_t dur, uint64_t corr,
         int64_t *begin_out)
{
	struct tk_event e = { 0 };
	e.kind = TK_API;
	e.track = s->main_thread;
	e.ts = s->cpu;
	e.dur = dur;
	e.name_id = name;
	e.u.api.domain = TK_API_RUNTIME;
	e.u.api.cbid = name == s->name_launch ? 211 : name == s->name_memcpy ? 41
	             : name == s->name_memset ? 51 : 131;
	e.u.api.correlation = corr;
	push(s, &e);
	*begin_out = s->cpu;
	s->cpu += dur;
}

/* Launch a kernel on stream `si` from the main thread. */
static void
launch(struct sim *s, const struct kernel_def *k, int si)
{
	const struct options *o = s->opt;
	if (matches(o->remove, o->nremove, k->name))
		return;
	uint64_t corr = ++s->corr;
	int64_t at;
	api_call(s, s->name_launch, jitter(s, 4200), corr, &at);
	int64_t start = at + jitter(s, 3000);
	if (start < s->stream_free[si])
		start = s->stream_free[si] + (int64_t)(rng_uniform() * 1500);
	int64_t dur = jitter(s, k->base_us * 1000 * slow_factor(o, k->name));
	s->stream_free[si] = start + dur;
	s->cpu += (int64_t)(rng_uniform() * 2500 / o->speedup);
	struct tk_event e = { 0 };
	e.kind = TK_KERNEL;
	e.track = s->streams[si];
	e.ts = start;
	e.dur = dur;
	e.name = k->name;
	e.u.kernel.correlation = corr;
	e.u.kernel.grid[0] = k->grid;
	e.u.kernel.grid[1] = e.u.kernel.grid[2] = 1;
	e.u.kernel.block[0] = k->block;
	e.u.kernel.block[1] = e.u.kernel.block[2] = 1;
	e.u.kernel.registers = k->regs;
	e.u.kernel.dynamic_smem = k->smem;
	e.u.kernel.static_smem = k->smem ? 0 : 1024;
	push(s, &e);
}

static void
copy(struct sim *s, int si, uint64_t bytes, unsigned kind)
{
	uint64_t corr = ++s->corr;
	int64_t at;
	api_call(s, s->name_memcpy, jitter(s, 6500), corr, &at);
	int64_t start = at + jitter(s, 2500);
	if (start < s->stream_free[si])
		start = s->stream_free[si] + 800;
	/* ~22 GB/s over PCIe for pinned host memory */
	int64_t dur = jitter(s, (double)bytes / 22.0);
	s->stream_free[si] = start + dur;
	struct tk_event e = { 0 };
	e.kind = TK_MEMCPY;
	e.track = s->streams[si];
	e.ts = start;
	e.dur = dur;
	e.name = kind == TK_COPY_HTOD ? "Memcpy HtoD (Pinned -> Device)"
	                              : "Memcpy DtoH (Device -> Pinned)";
	e.u.memcpy.correlation = corr;
	e.u.memcpy.bytes = bytes;
	e.u.memcpy.copy_kind = kind;
	e.u.memcpy.src_kind = kind == TK_COPY_HTOD ? TK_MEM_PINNED : TK_MEM_DEVICE;
	e.u.memcpy.dst_kind = kind == TK_COPY_HTOD ? TK_MEM_DEVICE : TK_MEM_PINNED;
	e.u.memcpy.flags = TK_FLAG_ASYNC;
	push(s, &e);
}

static void
memset_op(struct sim *s, int si, uint64_t bytes)
{
	uint64_t corr = ++s->corr;
	int64_t at;
	api_call(s, s->name_memset, jitter(s, 3800), corr, &at);
	int64_t start = at + jitter(s, 2000);
	if (start < s->stream_free[si])
		start = s->stream_free[si] + 600;
	int64_t dur = jitter(s, (double)bytes / 900.0); /* ~900 GB/s */
	s->stream_free[si] = start + dur;
	struct tk_event e = { 0 };
	e.kind = TK_MEMSET;
	e.track = s->streams[si];
	e.ts = start;
	e.dur = dur;
	e.name = "Memset (Device)";
	e.u.memset.correlation = corr;
	e.u.memset.bytes = bytes;
	e.u.memset.mem_kind = TK_MEM_DEVICE;
	e.u.memset.flags = TK_FLAG_ASYNC;
	push(s, &e);
}

/* cudaStreamSynchronize on every stream: the CPU waits for the GPU. */
static void
synchronize(struct sim *s)
{
	int64_t idle = s->stream_free[0];
	for (int i = 1; i < 3; i++)
		if (s->stream_free[i] > idle)
			idle = s->stream_free[i];
	int64_t begin = s->cpu;
	int64_t end = idle > begin ? idle + jitter(s, 3000) : begin + jitter(s, 2500);
	uint64_t corr = ++s->corr;
	struct tk_event e = { 0 };
	e.kind = TK_API;
	e.track = s->main_thread;
	e.ts = begin;
	e.dur = end - begin;
	e.name_id = s->name_sync;
	e.u.api.domain = TK_API_RUNTIME;
	e.u.api.cbid = 131;
	e.u.api.correlation = corr;
	push(s, &e);
	e = (struct tk_event){ 0 };
	e.kind = TK_SYNC;
	e.track = s->main_thread;
	e.ts = begin;
	e.dur = end - begin;
	e.name = "Stream Synchronize";
	e.u.sync.correlation = corr;
	e.u.sync.type = TK_SYNC_STREAM;
	push(s, &e);
	s->cpu = end;
}

static size_t
open_range(struct sim *s, const char *name, uint32_t track, int64_t ts)
{
	struct tk_event e = { 0 };
	e.kind = TK_RANGE;
	e.track = track;
	e.ts = ts;
	e.name = name;
	e.u.range.color = 0xff76b900;
	push(s, &e);
	return s->nbuf - 1;
}

static void
close_range(struct sim *s, size_t i, int64_t end)
{
	s->buf[i].dur = end - s->buf[i].ts;
}

static void
counters(struct sim *s, uint64_t step)
{
	struct tk_event e = { 0 };
	e.kind = TK_COUNTER;
	e.ts = s->cpu;
	e.track = s->rss;
	e.u.counter.value = (double)(1800u << 20) + (double)(step % 512) * 65536.0 +
	                    floor(rng_uniform() * 4096) * 4096;
	push(s, &e);
	e.track = s->cpu_pct;
	e.u.counter.value = round(900 + rng_normal() * 40) / 10;
	push(s, &e);
	e.track = s->devmem;
	e.u.counter.value = (double)s->device_bytes +
	                    (double)((step % 3) * (256u << 20));
	push(s, &e);
}

static void
step(struct sim *s, uint64_t index)
{
	const struct options *o = s->opt;
	char layer_names[64][24];
	size_t st = open_range(s, "step", s->main_thread, s->cpu);
	s->buf[st].u.range.payload_type = TK_PAYLOAD_UINT;
	s->buf[st].u.range.payload.u = index;
	s->cpu += jitter(s, 2000);

	/* the data loader prepares the next batch meanwhile */
	int64_t lb = s->cpu + jitter(s, 5000);
	size_t ld = open_range(s, "dataloader", s->loader_thread, lb);
	close_range(s, ld, lb + jitter(s, 1.8e6));

	copy(s, 1, 8u << 20, TK_COPY_HTOD);
	copy(s, 1, 512u << 10, TK_COPY_HTOD);
	memset_op(s, 0, 64u << 20);

	size_t fw = open_range(s, "forward", s->main_thread, s->cpu);
	for (unsigned l = 0; l < o->layers; l++) {
		snprintf(layer_names[l % 64], sizeof(layer_names[0]), "layer.%u", l);
		size_t lr = open_range(s, layer_names[l % 64], s->main_thread, s->cpu);
		for (size_t k = 0; k < N_ARR(forward_kernels); k++)
			launch(s, &forward_kernels[k], 0);
		close_range(s, lr, s->cpu);
	}
	close_range(s, fw, s->cpu);

	size_t bw = open_range(s, "backward", s->main_thread, s->cpu);
	for (unsigned l = 0; l < o->layers; l++) {
		for (size_t k = 0; k < N_ARR(backward_kernels); k++)
			launch(s, &backward_kernels[k], 0);
		if (l + 1 == o->layers || l % 2 == 1)
			launch(s, &allreduce_kernel, 2);
	}
	for (unsigned a = 0; a < o->nadd; a++) {
		struct kernel_def extra = { o->add[a], 1024, 256, 64, 0, 75 };
		launch(s, &extra, 0);
	}
	close_range(s, bw, s->cpu);

	size_t op = open_range(s, "optimizer", s->main_thread, s->cpu);
	for (size_t k = 0; k < N_ARR(optimizer_kernels); k++)
		launch(s, &optimizer_kernels[k], 0);
	close_range(s, op, s->cpu);

	copy(s, 1, 4, TK_COPY_DTOH); /* loss.item() */
	synchronize(s);
	close_range(s, st, s->cpu);
	counters(s, index);
	s->cpu += jitter(s, 30000);
	flush_step(s);
}

static void
define(struct sim *s, struct tk_writer *w)
{
	const struct options *o = s->opt;
	char host[] = "synth-host";
	const char *argv[] = { "python3", "train.py", "--model", "gpt-small",
	                       "--batch-size", "32" };
	struct tk_process p = { host, o->pid, 1, o->start, 6, argv, "" };
	s->process_track = tk_writer_process(w, 0, &p);
	struct tk_thread t = { s->process_track, o->pid, "python3" };
	s->main_thread = tk_writer_thread(w, 0, &t);
	t.tid = o->pid + 7;
	t.name = "pt_data_worker";
	s->loader_thread = tk_writer_thread(w, 0, &t);
	struct tk_device d = { 0 };
	d.host = host;
	d.name = "NVIDIA H100 80GB HBM3";
	d.sm_count = 132;
	d.memory = 85520809984ull;
	d.cc_major = 9;
	for (int i = 0; i < 16; i++)
		d.uuid[i] = (uint8_t)(0x5a ^ (i * 37));
	uint32_t dev = tk_writer_device(w, 0, &d);
	static const uint64_t ids[3] = { 7, 13, 21 };
	static const char *const names[3] = { "compute", "copy", "nccl" };
	for (int i = 0; i < 3; i++) {
		struct tk_stream st = { s->process_track, dev, 1, ids[i], names[i] };
		s->streams[i] = tk_writer_stream(w, 0, &st);
	}
	struct tk_counter c = { "rss", "bytes", s->process_track, 0 };
	s->rss = tk_writer_counter(w, 0, &c);
	c = (struct tk_counter){ "cpu", "%", s->process_track, 0 };
	s->cpu_pct = tk_writer_counter(w, 0, &c);
	c = (struct tk_counter){ "device memory", "bytes", 0, dev };
	s->devmem = tk_writer_counter(w, 0, &c);
	s->name_launch = tk_writer_cstring(w, "cudaLaunchKernel");
	s->name_memcpy = tk_writer_cstring(w, "cudaMemcpyAsync");
	s->name_memset = tk_writer_cstring(w, "cudaMemsetAsync");
	s->name_sync = tk_writer_cstring(w, "cudaStreamSynchronize");
	tk_writer_meta(w, "command", "python3 train.py --model gpt-small --batch-size 32");
	tk_writer_meta(w, "host", host);
	tk_writer_meta(w, "generator", "synth");
	char seed[32];
	snprintf(seed, sizeof(seed), "%" PRIu64, o->seed);
	tk_writer_meta(w, "seed", seed);
	if (!s->main_thread || !s->devmem || !s->name_sync)
		cmd_die(2, "%s", tk_writer_error(w));
}

static void
memory_event(struct sim *s, int64_t ts, unsigned op, uint64_t addr,
             uint64_t bytes)
{
	struct tk_event e = { 0 };
	e.kind = TK_MEMORY;
	e.track = s->streams[0];
	e.ts = ts;
	e.name = op == TK_MEM_ALLOC ? "cudaMalloc" : "cudaFree";
	e.u.memory.op = op;
	e.u.memory.mem_kind = TK_MEM_DEVICE;
	e.u.memory.address = addr;
	e.u.memory.bytes = bytes;
	push(s, &e);
}

/* Run the whole program.  In the writing pass, events go out sorted. */
static void
simulate(struct sim *s)
{
	const struct options *o = s->opt;
	rng_state = o->seed * 0x2545f4914f6cdd1dull + 1;
	s->cpu = o->start;
	s->corr = 0;
	s->written = 0;
	s->device_bytes = 0;
	for (int i = 0; i < 3; i++)
		s->stream_free[i] = o->start;

	struct tk_event proc = { 0 };
	proc.kind = TK_PROCESS;
	proc.track = s->process_track;
	proc.ts = o->start;
	proc.dur = s->process_end - o->start;
	proc.name = "python3";
	proc.u.process.exit = TK_EXIT_NORMAL;
	proc.u.process.utime = proc.dur * 9 / 10;
	proc.u.process.stime = proc.dur / 20;
	proc.u.process.max_rss = 2200ull << 20;
	proc.u.process.minflt = 812345;
	proc.u.process.majflt = 12;
	proc.u.process.nvcsw = 4242;
	proc.u.process.nivcsw = 311;
	push(s, &proc);

	s->cpu += 150000000; /* interpreter and CUDA start-up */
	static const uint64_t sizes[] = { 2ull << 30, 6ull << 30, 512ull << 20 };
	for (int i = 0; i < 3; i++) {
		memory_event(s, s->cpu, TK_MEM_ALLOC, 0x7f0000000000ull + (uint64_t)i * (8ull << 30),
		             sizes[i]);
		s->device_bytes += sizes[i];
		s->cpu += jitter(s, 120000);
	}
	uint64_t global_step = 0;
	for (uint64_t run = 0; run < o->runs; run++) {
		if (o->runs > 1) {
			struct tk_event re = { 0 };
			re.kind = TK_RUN;
			re.track = s->process_track;
			re.ts = s->cpu;
			re.dur = s->run_end[run] - s->cpu;
			re.name = "run";
			re.u.run.index = (uint32_t)run + 1;
			re.u.run.exit = TK_EXIT_NORMAL;
			push(s, &re);
		}
		for (uint64_t i = 0;; i++) {
			if (o->steps ? i >= o->steps
			             : s->written + s->nbuf >= o->events / o->runs * (run + 1))
				break;
			step(s, global_step++);
		}
		s->run_end[run] = s->cpu;
		s->cpu += jitter(s, 5e6);
	}
	for (int i = 0; i < 3; i++)
		memory_event(s, s->cpu + i * 1000, TK_MEM_FREE,
		             0x7f0000000000ull + (uint64_t)i * (8ull << 30), sizes[i]);
	s->cpu += 40000000;
	s->process_end = s->cpu;
	flush_step(s);
}

/* ---- main ---------------------------------------------------------------------- */

static void
usage(void)
{
	printf("Usage: %s [OPTIONS]\n"
	       "Write a synthetic training-loop trace (sorted) to stdout or -o FILE.\n"
	       "\n"
	       "  -n, --events N      about N events (default 10000)\n"
	       "      --steps N       exactly N steps per run instead\n"
	       "      --runs N        N runs (default 1)\n"
	       "  -s, --seed N        random seed (default 1)\n"
	       "      --layers N      layers per step (default 4)\n"
	       "      --noise S       relative jitter (default 0.05)\n"
	       "      --speedup F     make everything F times faster\n"
	       "      --slow NAME=F   kernels matching NAME take F times longer\n"
	       "      --add NAME      add a kernel NAME to every backward pass\n"
	       "      --remove NAME   drop kernels matching NAME\n"
	       "      --start NS      start time (default 1700000000000000000)\n"
	       "      --pid N         process id (default 4242)\n"
	       "      --level L       deflate level (default 6)\n"
	       "      --chunk-bytes N uncompressed chunk size\n"
	       "  -o, --output FILE\n",
	       cmd_name());
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "events", required_argument, NULL, 'n' },
		{ "steps", required_argument, NULL, 'S' },
		{ "runs", required_argument, NULL, 'R' },
		{ "seed", required_argument, NULL, 's' },
		{ "layers", required_argument, NULL, 'L' },
		{ "noise", required_argument, NULL, 'N' },
		{ "speedup", required_argument, NULL, 'F' },
		{ "slow", required_argument, NULL, 'w' },
		{ "add", required_argument, NULL, 'a' },
		{ "remove", required_argument, NULL, 'r' },
		{ "start", required_argument, NULL, 't' },
		{ "pid", required_argument, NULL, 'p' },
		{ "level", required_argument, NULL, 'l' },
		{ "chunk-bytes", required_argument, NULL, 'c' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct options o = { 0 };
	o.events = 10000;
	o.runs = 1;
	o.seed = 1;
	o.layers = 4;
	o.noise = 0.05;
	o.speedup = 1;
	o.output = "-";
	o.level = 6;
	o.start = 1700000000000000000ll;
	o.pid = 4242;
	cmd_init("synth");
	int c;
	uint64_t v;
	while ((c = getopt_long(argc, argv, "n:s:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': if (cmd_parse_uint(optarg, &o.events)) goto bad; break;
		case 'S': if (cmd_parse_uint(optarg, &o.steps)) goto bad; break;
		case 'R': if (cmd_parse_uint(optarg, &o.runs) || !o.runs) goto bad; break;
		case 's': if (cmd_parse_uint(optarg, &o.seed)) goto bad; break;
		case 'L':
			if (cmd_parse_uint(optarg, &v) || v < 1 || v > 64) goto bad;
			o.layers = (unsigned)v;
			break;
		case 'N': o.noise = atof(optarg); if (o.noise < 0) goto bad; break;
		case 'F': if (cmd_parse_factor(optarg, &o.speedup)) goto bad; break;
		case 'w': {
			char *eq = strrchr(optarg, '=');
			if (!eq || o.nslow == MAX_TWEAKS) goto bad;
			*eq = 0;
			o.slow[o.nslow].pattern = optarg;
			if (cmd_parse_factor(eq + 1, &o.slow[o.nslow].factor)) goto bad;
			o.nslow++;
			break;
		}
		case 'a': if (o.nadd == MAX_TWEAKS) goto bad; o.add[o.nadd++] = optarg; break;
		case 'r': if (o.nremove == MAX_TWEAKS) goto bad; o.remove[o.nremove++] = optarg; break;
		case 't': if (cmd_parse_uint(optarg, &v)) goto bad; o.start = (int64_t)v; break;
		case 'p': if (cmd_parse_uint(optarg, &v)) goto bad; o.pid = (int64_t)v; break;
		case 'l': if (cmd_parse_uint(optarg, &v) || v > 12) goto bad; o.level = (int)v; break;
		case 'c': if (cmd_parse_uint(optarg, &v)) goto bad; o.chunk_bytes = (uint32_t)v; break;
		case 'o': o.output = optarg; break;
		case 'h': usage(); return 0;
		default: goto bad;
		}
	}
	if (optind != argc)
		goto bad;

	struct sim s = { 0 };
	s.opt = &o;
	s.run_end = calloc(o.runs, sizeof(*s.run_end));
	/* timing pass */
	s.process_end = o.start;
	simulate(&s);
	int64_t end = s.process_end;
	/* writing pass */
	struct tk_writer_options wo = TK_WRITER_OPTIONS_INIT;
	wo.level = o.level;
	wo.sorted = 1;
	if (o.chunk_bytes)
		wo.chunk_bytes = o.chunk_bytes;
	struct tk_writer *w = tk_writer_new();
	if (!w || tk_writer_open_path(w, o.output, &wo) != TK_OK)
		cmd_die(2, "%s: %s", o.output, w ? tk_writer_error(w) : "out of memory");
	s.w = w;
	define(&s, w);
	s.process_end = end;
	simulate(&s);
	if (tk_writer_close(w) != TK_OK && tk_writer_errno(w) != EPIPE)
		cmd_die(2, "%s: %s", o.output, tk_writer_error(w));
	tk_writer_free(w);
	free(s.buf);
	free(s.seq);
	free(s.run_end);
	return 0;
bad:
	cmd_usage_error("invalid arguments");
}
