/* SPDX-License-Identifier: MIT */
/*
 * cupti-convert-bench: what converting CUPTI activity records costs on
 * top of writing the events they become.
 *
 * One generator makes a training-loop-like activity stream twice over:
 * as CUPTI records in 8 MiB buffers (cudaLaunchKernel + kernel pairs on
 * three streams, copies each way, memsets, stream syncs recorded before
 * their call as CUPTI does, allocations, CUPTI overhead) and as the
 * tracekit events those records stand for.  Then, in alternating rounds,
 *   writer only:       the events go straight to a tk_writer, names and
 *                      tracks defined once up front (the cheapest a
 *                      recorder could possibly do);
 *   convert + writer:  the buffers go through cupti_convert_buffer() (or
 *                      cupti_convert_record() without libcupti) into a
 *                      tk_writer.
 * Both write to /dev/null with the default writer options.  Times are
 * CPU time of this single-threaded process, so that other load on the
 * machine does not count.  Reported: the median of each way, and the
 * median and range of the per-round ratios against the target of 1.20.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include "cupti_convert.h"
#include "common/util.h"

#pragma weak cuptiActivityGetNextRecord

#define BUF_BYTES (8u << 20)
#define PID 4242u
#define TID 4242u

/* Kernel names as CUPTI gives them: mangled C++, or plain. */
static const char *const kernel_names[] = {
	"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
	"_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastINS0_13BinaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_",
	"_ZN2at6native12_GLOBAL__N_120softmax_warp_forwardIN3c108BFloat16ES4_fLi10ELb0ELb0EEEvPT0_PKT_iiiPKbib",
	"_ZN2at6native12_GLOBAL__N_125multi_tensor_apply_kernelINS1_18TensorListMetadataILi4EEENS1_20FusedAdamMathFunctorIfLi4ELNS1_9ADAM_MODEE1ELb0EEEJPdddddddNS1_8adamModeEbPfSA_EEEvT_T0_DpT1_",
	"_ZN4vllm25paged_attention_v2_kernelIttLi128ELi16ELi128ELNS_18Fp8KVCacheDataTypeE0ELb0ELi512EEEvPfS2_PT_PKS3_PKT0_S9_ifPKiSB_iPKfiiiSD_SD_",
	"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn",
	"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
	"ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
	"triton_poi_fused_add_mul_0",
};
#define NKERNELS (sizeof(kernel_names) / sizeof(kernel_names[0]))

/* ---- the twin streams ------------------------------------------------ */

struct buffers {
	uint8_t **buf;
	size_t *len;
	size_t n, cap;
	uint64_t records;
};

/* Reference events: track and name given as small indexes, resolved
 * to ids after the writer is opened. */
enum { TR_THREAD, TR_STREAM0, TR_STREAM1, TR_STREAM2, TR_COUNTER, TR_N };
struct ref_event {
	struct tk_event e;
	uint8_t track;       /* TR_* */
	uint16_t name;       /* index into ref names */
	uint16_t mangled;    /* index + 1, 0 = none */
};

struct gen {
	struct buffers b;
	struct ref_event *ev;
	size_t nev, capev;
	const char *names[64];
	unsigned nnames;
	uint64_t t;          /* CPU clock, ns */
	uint64_t gpu[3];     /* per stream: when idle */
	uint32_t corr;
	uint64_t rng;
	int64_t mem_in_use;
	uint64_t kernels;
};

static uint64_t
rnd(struct gen *g)
{
	uint64_t z = (g->rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void *
record(struct gen *g, size_t size)
{
	struct buffers *b = &g->b;
	if (!b->n || b->len[b->n - 1] + size > BUF_BYTES) {
		if (b->n == b->cap) {
			b->cap = b->cap ? b->cap * 2 : 16;
			b->buf = realloc(b->buf, b->cap * sizeof(*b->buf));
			b->len = realloc(b->len, b->cap * sizeof(*b->len));
			if (!b->buf || !b->len)
				cmd_die(2, "out of memory");
		}
		if (!(b->buf[b->n] = aligned_alloc(8, BUF_BYTES)))
			cmd_die(2, "out of memory");
		b->len[b->n++] = 0;
	}
	void *p = b->buf[b->n - 1] + b->len[b->n - 1];
	memset(p, 0, size);
	b->len[b->n - 1] += size;
	b->records++;
	return p;
}

static uint16_t
name_index(struct gen *g, const char *s)
{
	for (unsigned i = 0; i < g->nnames; i++)
		if (strcmp(g->names[i], s) == 0)
			return (uint16_t)i;
	if (g->nnames == 64)
		cmd_die(2, "too many names");
	g->names[g->nnames] = s;
	return (uint16_t)g->nnames++;
}

static struct ref_event *
ref(struct gen *g, unsigned kind, unsigned track, const char *name, uint64_t ts,
    uint64_t dur)
{
	if (g->nev == g->capev) {
		g->capev = g->capev ? g->capev * 2 : 1 << 16;
		if (!(g->ev = realloc(g->ev, g->capev * sizeof(*g->ev))))
			cmd_die(2, "out of memory");
	}
	struct ref_event *r = &g->ev[g->nev++];
	memset(r, 0, sizeof(*r));
	r->e.kind = kind;
	r->e.ts = (int64_t)ts;
	r->e.dur = (int64_t)dur;
	r->track = (uint8_t)track;
	r->name = name_index(g, name);
	return r;
}

static int have_libcupti;

/* The converter names API calls with cuptiGetCallbackName(); without
 * libcupti, "runtime cbid N". */
static const char *
api_label(uint32_t cbid, const char *name)
{
	static char labels[16][32];
	static uint32_t cbids[16];
	static unsigned n;
	if (have_libcupti)
		return name;
	for (unsigned i = 0; i < n; i++)
		if (cbids[i] == cbid)
			return labels[i];
	if (n == 16)
		cmd_die(2, "too many API names");
	cbids[n] = cbid;
	snprintf(labels[n], sizeof(labels[n]), "runtime cbid %" PRIu32, cbid);
	return labels[n++];
}

static void
api(struct gen *g, uint32_t cbid, const char *name, uint64_t dur)
{
	CUpti_ActivityAPI *a = record(g, sizeof(*a));
	a->kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a->cbid = cbid;
	a->start = g->t;
	a->end = g->t + dur;
	a->processId = PID;
	a->threadId = TID;
	a->correlationId = g->corr;
	struct ref_event *r = ref(g, TK_API, TR_THREAD, api_label(cbid, name), g->t, dur);
	r->e.u.api.domain = TK_API_RUNTIME;
	r->e.u.api.cbid = cbid;
	r->e.u.api.correlation = g->corr;
	g->t += dur;
}

/* The name the converter will give, computed here on its own. */
static const char *demangled[NKERNELS];

static void
kernel(struct gen *g, unsigned k, unsigned s)
{
	g->corr++;
	uint64_t launch = g->t;
	api(g, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel",
	    3000 + rnd(g) % 2000);
	uint64_t start = launch + 4000 > g->gpu[s] ? launch + 4000 : g->gpu[s] + 500;
	uint64_t dur = 5000 + rnd(g) % 200000;
	g->gpu[s] = start + dur;
	CUpti_ActivityKernel10 *r = record(g, sizeof(*r));
	r->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	r->start = start;
	r->end = start + dur;
	r->deviceId = 0;
	r->contextId = 1;
	r->streamId = 7 + 6 * s;
	r->gridX = 132 * (1 + (int32_t)(k % 4));
	r->gridY = r->gridZ = 1;
	r->blockX = 128 << (k % 3);
	r->blockY = r->blockZ = 1;
	r->registersPerThread = (uint16_t)(32 + 8 * k);
	r->staticSharedMemory = k % 2 ? 0 : 1024;
	r->dynamicSharedMemory = (int32_t)(k % 3) * 49152;
	r->correlationId = g->corr;
	r->name = kernel_names[k];
	struct ref_event *e = ref(g, TK_KERNEL, TR_STREAM0 + s, demangled[k], start, dur);
	if (demangled[k] != kernel_names[k])
		e->mangled = (uint16_t)(name_index(g, kernel_names[k]) + 1);
	struct tk_kernel_attrs *a = &e->e.u.kernel;
	a->correlation = g->corr;
	a->grid[0] = (uint32_t)r->gridX;
	a->grid[1] = a->grid[2] = 1;
	a->block[0] = (uint32_t)r->blockX;
	a->block[1] = a->block[2] = 1;
	a->registers = r->registersPerThread;
	a->static_smem = (uint32_t)r->staticSharedMemory;
	a->dynamic_smem = (uint32_t)r->dynamicSharedMemory;
	g->t += 500 + rnd(g) % 3000;
	g->kernels++;
}

static void
copy(struct gen *g, int htod, uint64_t bytes)
{
	g->corr++;
	uint64_t launch = g->t;
	api(g, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "cudaMemcpyAsync", 6000);
	uint64_t start = launch + 3000 > g->gpu[1] ? launch + 3000 : g->gpu[1] + 800;
	uint64_t dur = bytes / 22 + 1;
	g->gpu[1] = start + dur;
	CUpti_ActivityMemcpy6 *m = record(g, sizeof(*m));
	m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m->copyKind = htod ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOD : CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
	m->srcKind = htod ? CUPTI_ACTIVITY_MEMORY_KIND_PINNED : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m->dstKind = htod ? CUPTI_ACTIVITY_MEMORY_KIND_DEVICE : CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
	m->flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
	m->bytes = bytes;
	m->start = start;
	m->end = start + dur;
	m->contextId = 1;
	m->streamId = 13;
	m->correlationId = g->corr;
	struct ref_event *r = ref(g, TK_MEMCPY, TR_STREAM1,
	                          htod ? "Memcpy HtoD (Pinned -> Device)"
	                               : "Memcpy DtoH (Device -> Pinned)", start, dur);
	r->e.u.memcpy.correlation = g->corr;
	r->e.u.memcpy.bytes = bytes;
	r->e.u.memcpy.copy_kind = htod ? TK_COPY_HTOD : TK_COPY_DTOH;
	r->e.u.memcpy.src_kind = htod ? TK_MEM_PINNED : TK_MEM_DEVICE;
	r->e.u.memcpy.dst_kind = htod ? TK_MEM_DEVICE : TK_MEM_PINNED;
	r->e.u.memcpy.flags = TK_FLAG_ASYNC;
}

static void
memset_op(struct gen *g)
{
	g->corr++;
	uint64_t launch = g->t;
	api(g, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, "cudaMemsetAsync", 3800);
	uint64_t start = launch + 2000 > g->gpu[0] ? launch + 2000 : g->gpu[0] + 600;
	uint64_t dur = 70000;
	g->gpu[0] = start + dur;
	CUpti_ActivityMemset4 *m = record(g, sizeof(*m));
	m->kind = CUPTI_ACTIVITY_KIND_MEMSET;
	m->bytes = 64u << 20;
	m->start = start;
	m->end = start + dur;
	m->contextId = 1;
	m->streamId = 7;
	m->correlationId = g->corr;
	m->flags = CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC;
	m->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	struct ref_event *r = ref(g, TK_MEMSET, TR_STREAM0, "Memset (Device)", start, dur);
	r->e.u.memset.correlation = g->corr;
	r->e.u.memset.bytes = 64u << 20;
	r->e.u.memset.mem_kind = TK_MEM_DEVICE;
	r->e.u.memset.flags = TK_FLAG_ASYNC;
}

/* cudaStreamSynchronize: CUPTI writes the sync record before the call's. */
static void
sync_op(struct gen *g)
{
	g->corr++;
	uint64_t idle = g->gpu[0] > g->gpu[1] ? g->gpu[0] : g->gpu[1];
	idle = idle > g->gpu[2] ? idle : g->gpu[2];
	uint64_t begin = g->t, end = idle > begin ? idle + 2000 : begin + 2500;
	CUpti_ActivitySynchronization2 *s = record(g, sizeof(*s));
	s->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	s->type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
	s->start = begin + 100;
	s->end = end - 100;
	s->correlationId = g->corr;
	s->contextId = 1;
	s->streamId = 7;
	api(g, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
	    "cudaStreamSynchronize", end - begin);
	struct ref_event *r = ref(g, TK_SYNC, TR_THREAD, "Stream Synchronize",
	                          begin + 100, end - begin - 200);
	r->e.u.sync.correlation = g->corr;
	r->e.u.sync.type = TK_SYNC_STREAM;
}

static void
alloc_op(struct gen *g, int release, uint64_t addr, uint64_t bytes)
{
	g->corr++;
	uint64_t at = g->t;
	api(g, release ? CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020
	               : CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
	    release ? "cudaFree" : "cudaMalloc", 20000);
	CUpti_ActivityMemory4 *m = record(g, sizeof(*m));
	m->kind = CUPTI_ACTIVITY_KIND_MEMORY2;
	m->memoryOperationType = release ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE
	                                 : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
	m->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m->correlationId = g->corr;
	m->address = addr;
	m->bytes = bytes;
	m->timestamp = at + 1000;
	m->processId = PID;
	m->contextId = 1;
	m->streamId = CUPTI_INVALID_STREAM_ID;
	struct ref_event *r = ref(g, TK_MEMORY, TR_STREAM0,
	                          release ? "Free (Device)" : "Alloc (Device)", at + 1000, 0);
	r->e.u.memory.correlation = g->corr;
	r->e.u.memory.op = release ? TK_MEM_FREE : TK_MEM_ALLOC;
	r->e.u.memory.mem_kind = TK_MEM_DEVICE;
	r->e.u.memory.address = addr;
	r->e.u.memory.bytes = bytes;
	g->mem_in_use += release ? -(int64_t)bytes : (int64_t)bytes;
	r = ref(g, TK_COUNTER, TR_COUNTER, "", at + 1000, 0);
	r->e.u.counter.value = (double)g->mem_in_use;
}

static void
overhead_op(struct gen *g)
{
	CUpti_ActivityOverhead3 *o = record(g, sizeof(*o));
	o->kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
	o->overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
	o->objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	o->objectId.pt.processId = PID;
	o->objectId.pt.threadId = TID;
	o->start = g->t;
	o->end = g->t + 40000;
	struct ref_event *r = ref(g, TK_OVERHEAD, TR_THREAD, "CUPTI buffer flush", g->t, 40000);
	r->e.u.overhead.type = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
	g->t += 40000;
}

static void
generate(struct gen *g, uint64_t target)
{
	/* the first context, whose null stream is 7 */
	CUpti_ActivityContext3 *x = record(g, sizeof(*x));
	x->kind = CUPTI_ACTIVITY_KIND_CONTEXT;
	x->contextId = 1;
	x->nullStreamId = 7;
	for (uint64_t step = 0; g->b.records < target; step++) {
		alloc_op(g, 0, 0x7f0000000000ull + step * 0x1000000, 256u << 20);
		copy(g, 1, 8u << 20);
		memset_op(g);
		for (unsigned i = 0; i < 200; i++)
			kernel(g, (unsigned)(rnd(g) % NKERNELS), i % 17 == 16 ? 2 : 0);
		copy(g, 0, 4);
		sync_op(g);
		alloc_op(g, 1, 0x7f0000000000ull + step * 0x1000000, 256u << 20);
		if (step % 10 == 9)
			overhead_op(g);
		g->t += 30000;
	}
}

/* ---- the two ways of writing --------------------------------------------- */

static uint32_t host_process_id, host_thread_id;

static uint32_t
host_process(void *arg, uint32_t pid)
{
	(void)arg;
	(void)pid;
	return host_process_id;
}

static uint32_t
host_thread(void *arg, uint32_t pid, uint32_t tid)
{
	struct tk_writer *w = arg;
	struct tk_thread t = { host_process_id, tid, "python3" };
	(void)pid;
	return host_thread_id = tk_writer_thread(w, 0, &t);
}

static struct tk_writer *
open_writer(int fd)
{
	struct tk_writer *w = tk_writer_new();
	if (!w || tk_writer_open_fd(w, fd, "/dev/null", NULL) != TK_OK)
		cmd_die(2, "cannot open a writer");
	const char *argv[] = { "python3", "train.py" };
	struct tk_process p = { "bench", PID, 1, 0, 2, argv, "" };
	host_process_id = tk_writer_process(w, 0, &p);
	return w;
}

/* CPU time of this (single-threaded) process: other work on the machine
 * does not count against either side. */
static double
seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t
write_direct(const struct gen *g, int fd)
{
	struct tk_writer *w = open_writer(fd);
	uint32_t tracks[TR_N], names[64];
	struct tk_thread t = { host_process_id, TID, "python3" };
	tracks[TR_THREAD] = tk_writer_thread(w, 0, &t);
	struct tk_device d = { 0 };
	d.host = "bench";
	d.name = "";
	uint32_t dev = tk_writer_device(w, 0, &d);
	static const char *const snames[3] = { "default", "", "" };
	for (int s = 0; s < 3; s++) {
		struct tk_stream st = { host_process_id, dev, 1, 7 + 6 * (uint64_t)s, snames[s] };
		tracks[TR_STREAM0 + s] = tk_writer_stream(w, 0, &st);
	}
	struct tk_counter ct = { "device memory", "bytes", host_process_id, dev };
	tracks[TR_COUNTER] = tk_writer_counter(w, 0, &ct);
	for (unsigned i = 0; i < g->nnames; i++)
		names[i] = tk_writer_cstring(w, g->names[i]);
	for (size_t i = 0; i < g->nev; i++) {
		struct tk_event e = g->ev[i].e;
		e.track = tracks[g->ev[i].track];
		e.name_id = names[g->ev[i].name];
		if (e.kind == TK_KERNEL && g->ev[i].mangled)
			e.u.kernel.mangled_id = names[g->ev[i].mangled - 1];
		if (tk_writer_event(w, &e) != TK_OK)
			cmd_die(2, "writer: %s", tk_writer_error(w));
	}
	if (tk_writer_close(w) != TK_OK)
		cmd_die(2, "writer: %s", tk_writer_error(w));
	uint64_t n = tk_writer_events(w);
	tk_writer_free(w);
	return n;
}

static uint64_t
write_converted(const struct gen *g, int fd, int walk)
{
	struct tk_writer *w = open_writer(fd);
	struct cupti_convert_host h = { 0 };
	h.arg = w;
	h.process_track = host_process;
	h.thread_track = host_thread;
	h.host_name = "bench";
	h.flags = CUPTI_CONVERT_KEEP_RECORD_MEMORY; /* the buffers are reused */
	struct cupti_convert *c = cupti_convert_new(w, &h);
	if (!c)
		cmd_die(2, "out of memory");
	for (size_t i = 0; i < g->b.n; i++) {
		int rc = TK_OK;
		if (walk) {
			rc = cupti_convert_buffer(c, g->b.buf[i], g->b.len[i], 0);
		} else {
			/* no libcupti: walk by the sizes the generator used */
			for (size_t off = 0; off < g->b.len[i] && rc == TK_OK;) {
				const CUpti_Activity *r = (const void *)(g->b.buf[i] + off);
				rc = cupti_convert_record(c, r);
				switch (r->kind) {
				case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: off += sizeof(CUpti_ActivityKernel10); break;
				case CUPTI_ACTIVITY_KIND_RUNTIME: off += sizeof(CUpti_ActivityAPI); break;
				case CUPTI_ACTIVITY_KIND_MEMCPY: off += sizeof(CUpti_ActivityMemcpy6); break;
				case CUPTI_ACTIVITY_KIND_MEMSET: off += sizeof(CUpti_ActivityMemset4); break;
				case CUPTI_ACTIVITY_KIND_MEMORY2: off += sizeof(CUpti_ActivityMemory4); break;
				case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: off += sizeof(CUpti_ActivitySynchronization2); break;
				case CUPTI_ACTIVITY_KIND_OVERHEAD: off += sizeof(CUpti_ActivityOverhead3); break;
				case CUPTI_ACTIVITY_KIND_CONTEXT: off += sizeof(CUpti_ActivityContext3); break;
				default: cmd_die(2, "unexpected record kind %d", (int)r->kind);
				}
			}
		}
		if (rc != TK_OK)
			cmd_die(2, "convert: %s", cupti_convert_error(c));
	}
	if (cupti_convert_finish(c) != TK_OK || tk_writer_close(w) != TK_OK)
		cmd_die(2, "convert: %s", cupti_convert_error(c));
	uint64_t n = tk_writer_events(w);
	cupti_convert_free(c);
	tk_writer_free(w);
	return n;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void
usage(FILE *f)
{
	fprintf(f, "Usage: cupti-convert-bench [-n RECORDS] [-r ROUNDS] [-o FILE]\n"
	           "Time CUPTI records through the converter into a trace against\n"
	           "writing the same events straight to the writer.  -o FILE also\n"
	           "writes both traces, as FILE.converted.tkt and FILE.direct.tkt.\n");
}

int
main(int argc, char **argv)
{
	uint64_t target = 2000000, rounds = 9;
	const char *save = NULL;
	int c;
	cmd_init("cupti-convert-bench");
	while ((c = getopt(argc, argv, ":n:r:o:h")) != -1) {
		switch (c) {
		case 'o':
			save = optarg;
			break;
		case 'n':
			if (cmd_parse_uint(optarg, &target) || target == 0)
				cmd_usage_error("bad record count '%s'", optarg);
			break;
		case 'r':
			if (cmd_parse_uint(optarg, &rounds) || rounds == 0 || rounds > 99)
				cmd_usage_error("bad round count '%s'", optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	/* A CUDA C++ process has libstdc++ loaded: demangle as it would. */
	void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);
	void *sym = cxx ? dlsym(cxx, "__cxa_demangle") : NULL;
	char *(*dm)(const char *, char *, size_t *, int *) = NULL;
	memcpy(&dm, &sym, sizeof(sym));
	for (size_t k = 0; k < NKERNELS; k++) {
		int st = -1;
		char *s = dm && kernel_names[k][0] == '_' ? dm(kernel_names[k], NULL, NULL, &st)
		                                          : NULL;
		demangled[k] = s && st == 0 ? s : kernel_names[k];
	}
	int walk = have_libcupti = cuptiActivityGetNextRecord != NULL;

	struct gen g;
	memset(&g, 0, sizeof(g));
	g.rng = 42;
	g.t = 1700000000000000000ull;
	generate(&g, target);

	if (save) {
		char path[4096];
		snprintf(path, sizeof(path), "%s.converted.tkt", save);
		int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
		if (out < 0)
			cmd_die(2, "%s: cannot create", path);
		write_converted(&g, out, walk);
		close(out);
		snprintf(path, sizeof(path), "%s.direct.tkt", save);
		if ((out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666)) < 0)
			cmd_die(2, "%s: cannot create", path);
		write_direct(&g, out);
		close(out);
	}
	int fd = open("/dev/null", O_WRONLY);
	if (fd < 0)
		cmd_die(2, "/dev/null: cannot open");
	double direct[99], conv[99], ratios[99];
	uint64_t n_direct = 0, n_conv = 0;
	write_direct(&g, fd); /* warm up caches and the allocator */
	write_converted(&g, fd, walk);
	for (uint64_t r = 0; r < rounds; r++) {
		double t0 = seconds();
		n_direct = write_direct(&g, fd);
		double t1 = seconds();
		n_conv = write_converted(&g, fd, walk);
		double t2 = seconds();
		direct[r] = t1 - t0;
		conv[r] = t2 - t1;
		ratios[r] = conv[r] / direct[r];
	}
	close(fd);
	if (n_direct != n_conv)
		cmd_die(2, "the two ways wrote %" PRIu64 " and %" PRIu64 " events",
		        n_direct, n_conv);
	qsort(direct, rounds, sizeof(double), cmp_double);
	qsort(conv, rounds, sizeof(double), cmp_double);
	qsort(ratios, rounds, sizeof(double), cmp_double);
	double md = direct[rounds / 2], mc = conv[rounds / 2];
	double ratio = ratios[rounds / 2];
	printf("%" PRIu64 " CUPTI records (%" PRIu64 " kernels) in %zu buffers -> "
	       "%" PRIu64 " events; CPU time, median of %" PRIu64 " rounds%s\n",
	       g.b.records, g.kernels, g.b.n, n_conv, rounds,
	       walk ? "" : " (no libcupti: records walked by size)");
	printf("%-18s %10s %10s %12s\n", "", "ms", "ns/event", "Mevents/s");
	printf("%-18s %10.1f %10.1f %12.2f\n", "writer only", md * 1e3,
	       md * 1e9 / (double)n_direct, (double)n_direct / md / 1e6);
	printf("%-18s %10.1f %10.1f %12.2f\n", "convert + writer", mc * 1e3,
	       mc * 1e9 / (double)n_conv, (double)n_conv / mc / 1e6);
	printf("%-18s %10.3f   (rounds %.3f to %.3f; target <= 1.200: %s)\n",
	       "ratio", ratio, ratios[0], ratios[rounds - 1],
	       ratio <= 1.2 ? "met" : "NOT met");
	for (size_t k = 0; k < NKERNELS; k++)
		if (demangled[k] != kernel_names[k])
			free((void *)(uintptr_t)demangled[k]);
	for (size_t i = 0; i < g.b.n; i++)
		free(g.b.buf[i]);
	free(g.b.buf);
	free(g.b.len);
	free(g.ev);
	return 0;
}
