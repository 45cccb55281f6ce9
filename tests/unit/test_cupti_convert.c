/* SPDX-License-Identifier: MIT */
/*
 * The CUPTI activity converter (lib/inject/cupti_convert.c) on records
 * built here from the installed cupti_activity.h: every kind it
 * converts, checked field by field after a round trip through the
 * tracekit writer and reader; lost records, unknown kinds, records of
 * garbage.  When libcupti can be linked (it needs no GPU or driver for
 * this), real buffers are walked with cuptiActivityGetNextRecord and
 * API names come from cuptiGetCallbackName.
 *
 * Expected values are written out by hand: demangled names as c++filt
 * prints them, API names as the CUDA documentation spells them.
 *
 * Built only with CUPTI headers (the Makefile defines TK_HAVE_CUPTI);
 * otherwise this file is a single skipped test.
 */
#include <stdio.h>

#ifndef TK_HAVE_CUPTI
int
main(void)
{
	printf("ok 1 # SKIP no CUPTI 13.0 headers under CUDA_HOME: the converter is not built\n");
	printf("1..1\n");
	return 0;
}
#else

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cupti_driver_cbid.h>
#include <cupti_version.h>
#include <cupti_runtime_cbid.h>

#include "cupti_convert.h"
#include "helpers.h"
#include "tap.h"

/* Linked only when the build found libcupti (see the Makefile). */
#pragma weak cuptiActivityGetNextRecord
static int
have_libcupti(void)
{
	return cuptiActivityGetNextRecord != NULL;
}


/* ---- allocations failing ---------------------------------------------------
 * This program is linked with -Wl,--wrap for malloc, calloc, realloc,
 * strdup and strndup (Makefile): the converter's calls, and the
 * writer's, go through the functions below, which can make the Nth
 * one made on the armed thread fail (the writer's own threads are not
 * counted, so that a run is the same every time). */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static int alloc_armed;
static pthread_t alloc_thread;
static long alloc_calls, alloc_fail_at;
static int alloc_failed; /* the failing call was reached */

static int
alloc_fails(void)
{
	if (!alloc_armed || !pthread_equal(pthread_self(), alloc_thread))
		return 0;
	if (++alloc_calls != alloc_fail_at)
		return 0;
	alloc_failed = 1;
	return 1;
}

void *__wrap_malloc(size_t n) { return alloc_fails() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) { return alloc_fails() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n) { return alloc_fails() ? NULL : __real_realloc(p, n); }

/* (made here: a sanitizer's build has no __real_strndup to link) */
char *
__wrap_strndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *d = alloc_fails() ? NULL : __real_malloc(len + 1);
	if (d) {
		memcpy(d, s, len);
		d[len] = 0;
	}
	return d;
}

char *
__wrap_strdup(const char *s)
{
	return __wrap_strndup(s, SIZE_MAX);
}

static void
alloc_arm(long n)
{
	alloc_calls = 0;
	alloc_fail_at = n;
	alloc_failed = 0;
	alloc_thread = pthread_self();
	alloc_armed = 1;
}

/* ---- definitions refused ----------------------------------------------------
 * Linked with -Wl,--wrap for the writer's definition calls the converter
 * makes (strings, streams, devices, counters; Makefile): the Nth one on
 * the armed thread answers 0, as the writer answers a call it rejects,
 * and the writer stays usable (tk_writer_cstring, which the converter
 * asks to tell a refusal from a failure, is not wrapped). */
uint32_t __real_tk_writer_string(struct tk_writer *w, const char *s, size_t len);
uint32_t __real_tk_writer_stream(struct tk_writer *w, uint32_t id,
                                 const struct tk_stream *st);
uint32_t __real_tk_writer_device(struct tk_writer *w, uint32_t id,
                                 const struct tk_device *d);
uint32_t __real_tk_writer_counter(struct tk_writer *w, uint32_t id,
                                  const struct tk_counter *c);
uint32_t __wrap_tk_writer_string(struct tk_writer *w, const char *s, size_t len);
uint32_t __wrap_tk_writer_stream(struct tk_writer *w, uint32_t id,
                                 const struct tk_stream *st);
uint32_t __wrap_tk_writer_device(struct tk_writer *w, uint32_t id,
                                 const struct tk_device *d);
uint32_t __wrap_tk_writer_counter(struct tk_writer *w, uint32_t id,
                                  const struct tk_counter *c);

static int def_armed;
static pthread_t def_thread;
static long def_calls, def_refuse_at;
static int def_refused; /* the refused call was reached */

static int
def_refuses(void)
{
	if (!def_armed || !pthread_equal(pthread_self(), def_thread))
		return 0;
	if (++def_calls != def_refuse_at)
		return 0;
	def_refused = 1;
	return 1;
}

uint32_t
__wrap_tk_writer_string(struct tk_writer *w, const char *s, size_t len)
{
	return def_refuses() ? 0 : __real_tk_writer_string(w, s, len);
}

uint32_t
__wrap_tk_writer_stream(struct tk_writer *w, uint32_t id, const struct tk_stream *st)
{
	return def_refuses() ? 0 : __real_tk_writer_stream(w, id, st);
}

uint32_t
__wrap_tk_writer_device(struct tk_writer *w, uint32_t id, const struct tk_device *d)
{
	return def_refuses() ? 0 : __real_tk_writer_device(w, id, d);
}

uint32_t
__wrap_tk_writer_counter(struct tk_writer *w, uint32_t id, const struct tk_counter *c)
{
	return def_refuses() ? 0 : __real_tk_writer_counter(w, id, c);
}

static void
def_arm(long n)
{
	def_calls = 0;
	def_refuse_at = n;
	def_refused = 0;
	def_thread = pthread_self();
	def_armed = 1;
}

/* ---- a host: one process, threads defined on demand ------------------ */

#define PID 4242u
#define T0 1700000000000000000ll /* CUPTI timestamps below are small */

struct host {
	struct tk_writer *w;
	uint32_t process;
	uint32_t threads[16][2];  /* tid, track */
	int nthreads;
	int thread_calls;
	uint32_t bogus_thread;    /* nonzero: answer this (undefined) track */
};

static uint32_t
host_process(void *arg, uint32_t pid)
{
	struct host *h = arg;
	(void)pid;
	return h->process;
}

static uint32_t
host_thread(void *arg, uint32_t pid, uint32_t tid)
{
	struct host *h = arg;
	h->thread_calls++;
	if (h->bogus_thread)
		return h->bogus_thread;
	if (pid != PID || h->nthreads == 16)
		return 0;
	struct tk_thread t = { h->process, tid, "" };
	uint32_t id = tk_writer_thread(h->w, 0, &t);
	h->threads[h->nthreads][0] = tid;
	h->threads[h->nthreads++][1] = id;
	return id;
}

static int64_t
host_now(void *arg)
{
	(void)arg;
	return T0 + 999;
}

/* A trace in memory, its writer, a host and a converter. */
struct fixture {
	struct mem_trace m;
	struct host h;
	struct cupti_convert_host ch;
	struct cupti_convert *c;
};

static void
setup_with(struct fixture *f, unsigned flags, const struct tk_writer_options *o)
{
	memset(f, 0, sizeof(*f));
	f->h.w = mem_open(&f->m, o);
	const char *argv[] = { "./train" };
	struct tk_process p = { "gpu-host", PID, 1, T0, 1, argv, "" };
	f->h.process = tk_writer_process(f->h.w, 0, &p);
	f->ch.arg = &f->h;
	f->ch.process_track = host_process;
	f->ch.thread_track = host_thread;
	f->ch.clock_offset = T0;
	f->ch.now = host_now;
	f->ch.host_name = "gpu-host";
	f->ch.flags = flags;
	f->c = cupti_convert_new(f->h.w, &f->ch);
	if (!f->c)
		abort();
}

static void
setup(struct fixture *f)
{
	setup_with(f, 0, NULL);
}

/* ---- reading back ------------------------------------------------------- */

struct got {
	struct tk_event e;       /* strings below replace its pointers */
	char *name, *mangled, *reason;
	struct tk_track trk;     /* type and ids only */
	uint32_t dev_index;      /* stream tracks: CUDA ordinal of the device */
	char *stream_name;
	char *counter_name, *counter_unit;
};

struct readback {
	struct got *ev;
	size_t n;
	struct tk_device dev[8];
	char *devname[8], *devhost[8];
	size_t ndev;
	char *meta_ignored;
	int rc;
	char err[128];
};

static char *
dup0(const char *s)
{
	char *d = strdup(s ? s : "");
	if (!d)
		abort();
	return d;
}

/* Finish the converter, close the trace and read everything back. */
static void
finish(struct fixture *f, struct readback *rb)
{
	memset(rb, 0, sizeof(*rb));
	if (cupti_convert_finish(f->c) != TK_OK)
		fprintf(stderr, "# finish: %s\n", cupti_convert_error(f->c));
	mem_finish(&f->m, 1);
	struct tk_reader *r = tk_reader_new();
	struct tk_record rec;
	size_t cap = 0;
	int rc = tk_reader_open_mem(r, f->m.buf, f->m.len, "mem");
	while (rc == TK_OK && (rc = tk_reader_next(r, &rec)) == TK_OK) {
		if (rec.type == TK_REC_DEVICE && rb->ndev < 8) {
			rb->dev[rb->ndev] = *rec.u.device;
			rb->devhost[rb->ndev] = dup0(rec.u.device->host);
			rb->devname[rb->ndev++] = dup0(rec.u.device->name);
		} else if (rec.type == TK_REC_META &&
		           strcmp(rec.u.meta->key, "cupti.ignored") == 0) {
			free(rb->meta_ignored);
			rb->meta_ignored = dup0(rec.u.meta->value);
		} else if (rec.type == TK_REC_EVENT) {
			if (rb->n == cap) {
				cap = cap ? cap * 2 : 64;
				rb->ev = realloc(rb->ev, cap * sizeof(*rb->ev));
				if (!rb->ev)
					abort();
			}
			const struct tk_event *e = rec.u.event;
			struct got *g = &rb->ev[rb->n++];
			memset(g, 0, sizeof(*g));
			g->e = *e;
			g->name = dup0(e->name);
			if (e->kind == TK_KERNEL)
				g->mangled = dup0(e->u.kernel.mangled);
			if (e->kind == TK_DROPPED)
				g->reason = dup0(e->u.dropped.reason);
			/* the ids only: the strings are borrowed */
			g->trk.id = e->trk->id;
			g->trk.type = e->trk->type;
			g->trk.u = e->trk->u;
			if (e->trk->type == TK_TRACK_COUNTER) {
				g->counter_name = dup0(e->trk->u.counter.name);
				g->counter_unit = dup0(e->trk->u.counter.unit);
				g->trk.u.counter.name = g->trk.u.counter.unit = NULL;
			}
			if (e->trk->type == TK_TRACK_THREAD)
				g->trk.u.thread.name = NULL;
			if (e->trk->type == TK_TRACK_PROCESS) {
				g->trk.u.process.host = g->trk.u.process.label = NULL;
				g->trk.u.process.argv = NULL;
			}
			if (e->trk->type == TK_TRACK_STREAM) {
				const struct tk_device *d =
					tk_reader_device(r, e->trk->u.stream.device);
				g->dev_index = d ? d->index : 9999;
				g->stream_name = dup0(e->trk->u.stream.name);
				g->trk.u.stream.name = NULL;
			}
		}
	}
	rb->rc = rc;
	snprintf(rb->err, sizeof(rb->err), "%s", tk_reader_error(r));
	tk_reader_free(r);
}

static void
readback_free(struct readback *rb)
{
	for (size_t i = 0; i < rb->n; i++) {
		free(rb->ev[i].name);
		free(rb->ev[i].mangled);
		free(rb->ev[i].reason);
		free(rb->ev[i].stream_name);
		free(rb->ev[i].counter_name);
		free(rb->ev[i].counter_unit);
	}
	for (size_t i = 0; i < rb->ndev; i++) {
		free(rb->devname[i]);
		free(rb->devhost[i]);
	}
	free(rb->ev);
	free(rb->meta_ignored);
}

static void
teardown(struct fixture *f, struct readback *rb)
{
	readback_free(rb);
	cupti_convert_free(f->c);
	mem_free(&f->m);
}

/* The i-th event of `kind`, NULL if there are fewer. */
static const struct got *
nth(const struct readback *rb, unsigned kind, size_t i)
{
	for (size_t k = 0; k < rb->n; k++)
		if (rb->ev[k].e.kind == kind && i-- == 0)
			return &rb->ev[k];
	return NULL;
}

static size_t
count_kind(const struct readback *rb, unsigned kind)
{
	size_t n = 0;
	for (size_t k = 0; k < rb->n; k++)
		n += rb->ev[k].e.kind == kind;
	return n;
}

static uint32_t
thread_of(const struct fixture *f, uint32_t tid)
{
	for (int i = 0; i < f->h.nthreads; i++)
		if (f->h.threads[i][0] == tid)
			return f->h.threads[i][1];
	return 0;
}

static int
convert(struct fixture *f, const void *rec)
{
	return cupti_convert_record(f->c, (const CUpti_Activity *)rec);
}

/* ---- records --------------------------------------------------------------- */

static CUpti_ActivityKernel10
kernel_rec(const char *name, uint32_t stream, uint64_t start, uint64_t end)
{
	CUpti_ActivityKernel10 k;
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.name = name;
	k.deviceId = 0;
	k.contextId = 1;
	k.streamId = stream;
	k.start = start;
	k.end = end;
	k.gridX = k.gridY = k.gridZ = 1;
	k.blockX = k.blockY = k.blockZ = 1;
	return k;
}

static CUpti_ActivityAPI
api_rec(CUpti_ActivityKind kind, uint32_t cbid, uint32_t tid, uint32_t corr,
        uint64_t start, uint64_t end)
{
	CUpti_ActivityAPI a;
	memset(&a, 0, sizeof(a));
	a.kind = kind;
	a.cbid = cbid;
	a.processId = PID;
	a.threadId = tid;
	a.correlationId = corr;
	a.start = start;
	a.end = end;
	return a;
}

static CUpti_ActivityMemory4
memory2_rec(CUpti_ActivityMemoryOperationType op, CUpti_ActivityMemoryKind kind,
            uint64_t addr, uint64_t bytes, uint64_t ts, uint32_t stream)
{
	CUpti_ActivityMemory4 m;
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
	m.memoryOperationType = op;
	m.memoryKind = kind;
	m.address = addr;
	m.bytes = bytes;
	m.timestamp = ts;
	m.processId = PID;
	m.deviceId = 0;
	m.contextId = 1;
	m.streamId = stream;
	m.correlationId = (uint32_t)(ts % 1000);
	return m;
}

static CUpti_ActivityContext3
context_rec(uint32_t ctx, uint32_t dev, uint16_t null_stream)
{
	CUpti_ActivityContext3 x;
	memset(&x, 0, sizeof(x));
	x.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
	x.contextId = ctx;
	x.deviceId = dev;
	x.nullStreamId = null_stream;
	return x;
}

/* A DEVICE record as CUPTI hands it: the name is the client's to free. */
static CUpti_ActivityDevice5
device_rec(uint32_t id, const char *name)
{
	CUpti_ActivityDevice5 d;
	memset(&d, 0, sizeof(d));
	d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
	d.id = id;
	d.name = dup0(name);
	d.numMultiprocessors = 132;
	d.globalMemorySize = 85520809984ull;
	d.computeCapabilityMajor = 9;
	d.computeCapabilityMinor = 0;
	for (int i = 0; i < 16; i++)
		d.uuid.bytes[i] = (char)(0xa0 + i);
	return d;
}

/* ---- tests ------------------------------------------------------------------- */

TEST(device_context_stream)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	CUpti_ActivityDevice5 d = device_rec(0, "NVIDIA H100 80GB HBM3");
	CHECK_EQ_INT(convert(&f, &d), TK_OK);
	cupti_convert_release((CUpti_Activity *)&d);
	CHECK(d.name == NULL);
	CUpti_ActivityContext3 x = context_rec(1, 0, 7);
	CHECK_EQ_INT(convert(&f, &x), TK_OK);
	CUpti_ActivityStream s;
	memset(&s, 0, sizeof(s));
	s.kind = CUPTI_ACTIVITY_KIND_STREAM;
	s.contextId = 1;
	s.streamId = 13;
	CHECK_EQ_INT(convert(&f, &s), TK_OK);
	CUpti_ActivityKernel10 k = kernel_rec("k0", 7, 100, 200);
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	finish(&f, &rb);
	CHECK_EQ_INT(rb.rc, TK_EOF);
	CHECK_EQ_INT(rb.ndev, 1);
	CHECK_STR(rb.devname[0], "NVIDIA H100 80GB HBM3");
	CHECK_STR(rb.devhost[0], "gpu-host");
	CHECK_EQ_INT(rb.dev[0].index, 0);
	CHECK_EQ_INT(rb.dev[0].sm_count, 132);
	CHECK(rb.dev[0].memory == 85520809984ull);
	CHECK_EQ_INT(rb.dev[0].cc_major, 9);
	CHECK_EQ_INT(rb.dev[0].cc_minor, 0);
	for (int i = 0; i < 16; i++)
		CHECK_EQ_INT(rb.dev[0].uuid[i], 0xa0 + i);
	const struct got *g = nth(&rb, TK_KERNEL, 0);
	CHECK(g != NULL);
	if (g) {
		CHECK_EQ_INT(g->trk.type, TK_TRACK_STREAM);
		CHECK_EQ_INT(g->trk.u.stream.process, f.h.process);
		CHECK_EQ_INT(g->trk.u.stream.context, 1);
		CHECK_EQ_INT(g->trk.u.stream.stream, 7);
		CHECK_EQ_INT(g->dev_index, 0);
		CHECK_STR(g->stream_name, "default");
	}
	CHECK_EQ_INT(cupti_convert_stats(f.c)->events, 1);
	teardown(&f, &rb);
}

/* The STREAM record defined the track of stream 13 before any work,
 * and of stream 14, created before its context's record came, once it
 * came (CUPTI sends a context after its streams). */
TEST(stream_defined_without_work)
{
	struct fixture f;
	setup(&f);
	CUpti_ActivityContext3 x = context_rec(3, 2, 7);
	CUpti_ActivityStream s;
	memset(&s, 0, sizeof(s));
	s.kind = CUPTI_ACTIVITY_KIND_STREAM;
	s.contextId = 3;
	s.streamId = 14;
	CHECK_EQ_INT(convert(&f, &s), TK_OK);
	s.contextId = 99; /* a context that never comes: nothing defined */
	CHECK_EQ_INT(convert(&f, &s), TK_OK);
	CHECK_EQ_INT(convert(&f, &x), TK_OK);
	s.contextId = 3;
	s.streamId = 13;
	CHECK_EQ_INT(convert(&f, &s), TK_OK);
	CHECK_EQ_INT(cupti_convert_stats(f.c)->malformed, 0);
	cupti_convert_finish(f.c);
	mem_finish(&f.m, 1);
	struct tk_reader *r = tk_reader_new();
	struct tk_record rec;
	int streams = 0, devices = 0, rc = tk_reader_open_mem(r, f.m.buf, f.m.len, "m");
	while (rc == TK_OK && (rc = tk_reader_next(r, &rec)) == TK_OK) {
		if (rec.type == TK_REC_TRACK && rec.u.track->type == TK_TRACK_STREAM) {
			CHECK_EQ_INT(rec.u.track->u.stream.context, 3);
			CHECK_EQ_INT(rec.u.track->u.stream.stream, streams ? 13 : 14);
			const struct tk_device *d =
				tk_reader_device(r, rec.u.track->u.stream.device);
			CHECK(d && d->index == 2);
			streams++;
		}
		devices += rec.type == TK_REC_DEVICE;
	}
	CHECK_EQ_INT(rc, TK_EOF);
	CHECK_EQ_INT(streams, 2);
	CHECK_EQ_INT(devices, 1); /* a placeholder: no DEVICE record came */
	tk_reader_free(r);
	cupti_convert_free(f.c);
	mem_free(&f.m);
}

/* Work on the NULL stream came before the CONTEXT record that says it
 * is the NULL stream: the track is named "default" once it comes (here
 * for all four events: a chunk's definitions precede its events); other
 * streams keep no name. */
TEST(null_stream_named_by_a_late_context)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	CUpti_ActivityKernel10 k = kernel_rec("k0", 7, 100, 200);
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	CUpti_ActivityKernel10 k2 = kernel_rec("k1", 8, 150, 250);
	CHECK_EQ_INT(convert(&f, &k2), TK_OK);
	CUpti_ActivityContext3 x = context_rec(1, 0, 7);
	CHECK_EQ_INT(convert(&f, &x), TK_OK);
	CHECK_EQ_INT(convert(&f, &x), TK_OK); /* again: no harm */
	k = kernel_rec("k0", 7, 300, 400);
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	k2 = kernel_rec("k1", 8, 350, 450);
	CHECK_EQ_INT(convert(&f, &k2), TK_OK);
	finish(&f, &rb);
	CHECK_EQ_INT(rb.rc, TK_EOF);
	CHECK_EQ_INT(count_kind(&rb, TK_KERNEL), 4);
	const struct got *g[4];
	for (int i = 0; i < 4; i++)
		g[i] = nth(&rb, TK_KERNEL, (size_t)i);
	CHECK(g[0] && g[1] && g[2] && g[3]);
	if (g[0] && g[1] && g[2] && g[3]) {
		CHECK_EQ_INT(g[0]->trk.id, g[2]->trk.id);
		CHECK_EQ_INT(g[1]->trk.id, g[3]->trk.id);
		CHECK_STR(g[0]->stream_name, "default");
		CHECK_STR(g[1]->stream_name, "");
		CHECK_STR(g[2]->stream_name, "default");
		CHECK_STR(g[3]->stream_name, "");
		CHECK_EQ_INT(g[2]->trk.u.stream.stream, 7);
	}
	CHECK_EQ_INT(cupti_convert_stats(f.c)->malformed, 0);
	teardown(&f, &rb);
}

static int have_demangler;

TEST(kernel_fields)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	CUpti_ActivityKernel10 k = kernel_rec("_Z10add_kernelIfEvPT_PKS0_i", 13,
	                                      1000, 4500);
	k.kind = CUPTI_ACTIVITY_KIND_KERNEL;
	k.gridX = 264; k.gridY = 2; k.gridZ = 3;
	/* no two fields alike: a swap or a constant is seen */
	k.blockX = 256; k.blockY = 4; k.blockZ = 5;
	k.clusterX = 2; k.clusterY = 6; k.clusterZ = 7;
	k.staticSharedMemory = 1024;
	k.dynamicSharedMemory = 73728;
	k.registersPerThread = 238;
	k.correlationId = 4711;
	k.graphId = 5;
	k.graphNodeId = 77777777777ull;
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	/* a second kernel of the same name: the cached ids */
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = 5000;
	k.end = 5001;
	k.correlationId = 4712;
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	finish(&f, &rb);
	CHECK_EQ_INT(rb.rc, TK_EOF);
	CHECK_EQ_INT(count_kind(&rb, TK_KERNEL), 2);
	const struct got *g = nth(&rb, TK_KERNEL, 0);
	if (g) {
		if (have_demangler) {
			CHECK_STR(g->name, "void add_kernel<float>(float*, float const*, int)");
			CHECK_STR(g->mangled, "_Z10add_kernelIfEvPT_PKS0_i");
		} else {
			CHECK_STR(g->name, "_Z10add_kernelIfEvPT_PKS0_i");
			CHECK_STR(g->mangled, "");
		}
		CHECK(g->e.ts == T0 + 1000);
		CHECK_EQ_INT(g->e.dur, 3500);
		const struct tk_kernel_attrs *a = &g->e.u.kernel;
		CHECK_EQ_INT(a->correlation, 4711);
		CHECK_EQ_INT(a->grid[0], 264);
		CHECK_EQ_INT(a->grid[1], 2);
		CHECK_EQ_INT(a->grid[2], 3);
		CHECK_EQ_INT(a->block[0], 256);
		CHECK_EQ_INT(a->block[1], 4);
		CHECK_EQ_INT(a->block[2], 5);
		CHECK_EQ_INT(a->cluster[0], 2);
		CHECK_EQ_INT(a->cluster[1], 6);
		CHECK_EQ_INT(a->cluster[2], 7);
		CHECK_EQ_INT(a->static_smem, 1024);
		CHECK_EQ_INT(a->dynamic_smem, 73728);
		CHECK_EQ_INT(a->registers, 238);
		CHECK_EQ_INT(a->graph_id, 5);
		CHECK(a->graph_node == 77777777777ull);
		CHECK_EQ_INT(g->trk.u.stream.stream, 13);
		CHECK_EQ_INT(g->trk.u.stream.context, 1);
		CHECK_EQ_INT(g->dev_index, 0);
		CHECK_STR(g->stream_name, "");
	}
	g = nth(&rb, TK_KERNEL, 1);
	if (g) {
		CHECK_EQ_INT(g->e.u.kernel.correlation, 4712);
		CHECK(g->e.ts == T0 + 5000);
		CHECK_EQ_INT(g->e.dur, 1);
	}
	teardown(&f, &rb);
}

/* Names that are not C++ stay as they are; NO_DEMANGLE keeps C++ names
 * mangled. */
TEST(kernel_names_plain_and_no_demangle)
{
	struct fixture f;
	struct readback rb;
	setup_with(&f, CUPTI_CONVERT_NO_DEMANGLE, NULL);
	CUpti_ActivityKernel10 k = kernel_rec("_ZN2nn5scaleEPffi", 7, 10, 20);
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	k = kernel_rec("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn", 7, 30, 40);
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	finish(&f, &rb);
	const struct got *a = nth(&rb, TK_KERNEL, 0), *b = nth(&rb, TK_KERNEL, 1);
	CHECK(a && b);
	if (a && b) {
		CHECK_STR(a->name, "_ZN2nn5scaleEPffi");
		CHECK_STR(a->mangled, "");
		CHECK_STR(b->name, "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn");
		CHECK_STR(b->mangled, "");
	}
	teardown(&f, &rb);

	setup(&f);
	k = kernel_rec("_ZN2nn5scaleEPffi", 7, 10, 20);
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	k = kernel_rec("_Znot a valid mangling", 7, 30, 40);
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	finish(&f, &rb);
	a = nth(&rb, TK_KERNEL, 0);
	b = nth(&rb, TK_KERNEL, 1);
	if (a && b && have_demangler) {
		CHECK_STR(a->name, "nn::scale(float*, float, int)");
		CHECK_STR(a->mangled, "_ZN2nn5scaleEPffi");
	}
	if (b) {
		CHECK_STR(b->name, "_Znot a valid mangling");
		CHECK_STR(b->mangled, "");
	}
	teardown(&f, &rb);
}

/* CUPTI names are cached by pointer; memory reused for another name
 * (a module unloaded and another loaded) must not keep the old name.
 * The converter compares names once per buffer or 4096 records. */
TEST(kernel_name_memory_reused)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	char buf[64] = "first_kernel";
	CUpti_ActivityKernel10 k = kernel_rec(buf, 7, 10, 20);
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	strcpy(buf, "second_kernel");
	for (int i = 0; i < 4096; i++) {
		CUpti_ActivityAPI a = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, 1, 4243,
		                              (uint32_t)i, 20, 21);
		CHECK_EQ_INT(convert(&f, &a), TK_OK);
	}
	k.start = 30;
	k.end = 40;
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	strcpy(buf, "third_kernel");
	if (have_libcupti()) /* a new buffer: compared again */
		CHECK_EQ_INT(cupti_convert_buffer(f.c, NULL, 0, 0), TK_OK);
	k.start = 50;
	k.end = 60;
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	finish(&f, &rb);
	const struct got *a = nth(&rb, TK_KERNEL, 0), *b = nth(&rb, TK_KERNEL, 1),
	                 *c = nth(&rb, TK_KERNEL, 2);
	CHECK(a && b && c);
	if (a && b && c) {
		CHECK_STR(a->name, "first_kernel");
		CHECK_STR(b->name, "second_kernel");
		if (have_libcupti())
			CHECK_STR(c->name, "third_kernel");
	}
	teardown(&f, &rb);
}

TEST(memcpy_fields)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	CUpti_ActivityMemcpy6 m;
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
	m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
	m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
	m.bytes = 8u << 20;
	m.start = 2000;
	m.end = 2400;
	m.deviceId = 1;
	m.contextId = 2;
	m.streamId = 14;
	m.correlationId = 900;        /* the driver call */
	m.runtimeCorrelationId = 899; /* the runtime call: wins */
	CHECK_EQ_INT(convert(&f, &m), TK_OK);
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
	m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
	m.flags = 0;
	m.bytes = 4;
	m.runtimeCorrelationId = 0; /* a driver-API program */
	m.correlationId = 901;
	m.start = 3000;
	m.end = 3001;
	CHECK_EQ_INT(convert(&f, &m), TK_OK);
	finish(&f, &rb);
	const struct got *a = nth(&rb, TK_MEMCPY, 0), *b = nth(&rb, TK_MEMCPY, 1);
	CHECK(a && b);
	if (a && b) {
		CHECK_STR(a->name, "Memcpy HtoD (Pinned -> Device)");
		CHECK_EQ_INT(a->e.u.memcpy.correlation, 899);
		CHECK_EQ_INT(a->e.u.memcpy.bytes, 8u << 20);
		CHECK_EQ_INT(a->e.u.memcpy.copy_kind, TK_COPY_HTOD);
		CHECK_EQ_INT(a->e.u.memcpy.src_kind, TK_MEM_PINNED);
		CHECK_EQ_INT(a->e.u.memcpy.dst_kind, TK_MEM_DEVICE);
		CHECK_EQ_INT(a->e.u.memcpy.flags, TK_FLAG_ASYNC);
		CHECK(a->e.ts == T0 + 2000);
		CHECK_EQ_INT(a->e.dur, 400);
		CHECK_EQ_INT(a->dev_index, 1);
		CHECK_EQ_INT(a->trk.u.stream.context, 2);
		CHECK_EQ_INT(a->trk.u.stream.stream, 14);
		CHECK_STR(b->name, "Memcpy DtoH (Device -> Pageable)");
		CHECK_EQ_INT(b->e.u.memcpy.correlation, 901);
		CHECK_EQ_INT(b->e.u.memcpy.bytes, 4);
		CHECK_EQ_INT(b->e.u.memcpy.copy_kind, TK_COPY_DTOH);
		CHECK_EQ_INT(b->e.u.memcpy.flags, 0);
		CHECK_EQ_INT(b->trk.id, a->trk.id);
	}
	teardown(&f, &rb);
}

TEST(peer_memcpy_fields)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	CUpti_ActivityMemcpyPtoP4 m;
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
	m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
	m.bytes = 1u << 30;
	m.start = 10;
	m.end = 20010;
	m.deviceId = 3;
	m.contextId = 4;
	m.streamId = 20;
	m.srcDeviceId = 3;
	m.dstDeviceId = 5;
	m.correlationId = 31;
	CHECK_EQ_INT(convert(&f, &m), TK_OK);
	finish(&f, &rb);
	const struct got *g = nth(&rb, TK_MEMCPY, 0);
	CHECK(g != NULL);
	if (g) {
		CHECK_STR(g->name, "Memcpy PtoP (Device -> Device)");
		CHECK_EQ_INT(g->e.u.memcpy.copy_kind, TK_COPY_PTOP);
		CHECK_EQ_INT(g->e.u.memcpy.src_device, 3);
		CHECK_EQ_INT(g->e.u.memcpy.dst_device, 5);
		CHECK(g->e.u.memcpy.bytes == 1u << 30);
		CHECK_EQ_INT(g->e.u.memcpy.correlation, 31);
		CHECK_EQ_INT(g->e.u.memcpy.flags, TK_FLAG_ASYNC);
		CHECK_EQ_INT(g->e.dur, 20000);
		CHECK_EQ_INT(g->dev_index, 3);
		CHECK_EQ_INT(g->trk.u.stream.stream, 20);
	}
	teardown(&f, &rb);
}

TEST(memset_fields)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	CUpti_ActivityMemset4 m;
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	m.value = 0xab;
	m.bytes = 64u << 20;
	m.start = 500;
	m.end = 583;
	m.deviceId = 0;
	m.contextId = 1;
	m.streamId = 7;
	m.correlationId = 3;
	m.flags = CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC;
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	CHECK_EQ_INT(convert(&f, &m), TK_OK);
	finish(&f, &rb);
	const struct got *g = nth(&rb, TK_MEMSET, 0);
	CHECK(g != NULL);
	if (g) {
		CHECK_STR(g->name, "Memset (Device)");
		CHECK_EQ_INT(g->e.u.memset.value, 0xab);
		CHECK_EQ_INT(g->e.u.memset.bytes, 64u << 20);
		CHECK_EQ_INT(g->e.u.memset.mem_kind, TK_MEM_DEVICE);
		CHECK_EQ_INT(g->e.u.memset.flags, TK_FLAG_ASYNC);
		CHECK_EQ_INT(g->e.u.memset.correlation, 3);
		CHECK_EQ_INT(g->e.dur, 83);
		CHECK_EQ_INT(g->trk.u.stream.stream, 7);
	}
	teardown(&f, &rb);
}

/* Allocations and releases, and the "device memory" counter: in use
 * after each, peak; pinned host memory is not device memory. */
/* Static (module) memory comes with stream 0 from CUDA 13.0, where its
 * documentation says CUPTI_INVALID_STREAM_ID: both mean no stream, and
 * the event goes on the context's NULL stream; a real stream stays.  It
 * comes with no context either: then the device's context is taken. */
TEST(memory2_stream_zero_is_no_stream)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	CUpti_ActivityContext3 x = context_rec(1, 0, 7);
	CHECK_EQ_INT(convert(&f, &x), TK_OK);
	CUpti_ActivityMemory4 m = memory2_rec(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
	                                      CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC,
	                                      0x7f0000000000ull, 102400, 100, 0);
	CHECK_EQ_INT(convert(&f, &m), TK_OK);
	m.contextId = CUPTI_INVALID_CONTEXT_ID;
	m.timestamp = 150;
	CHECK_EQ_INT(convert(&f, &m), TK_OK);
	m.contextId = 0;
	m.timestamp = 160;
	CHECK_EQ_INT(convert(&f, &m), TK_OK);
	m = memory2_rec(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
	                CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0x7f0000100000ull, 4096, 200, 13);
	CHECK_EQ_INT(convert(&f, &m), TK_OK);
	finish(&f, &rb);
	CHECK_EQ_INT(count_kind(&rb, TK_MEMORY), 4);
	for (size_t i = 0; i < 3; i++) {
		const struct got *a = nth(&rb, TK_MEMORY, i);
		if (a) {
			CHECK_EQ_INT(a->trk.u.stream.context, 1);
			CHECK_EQ_INT(a->trk.u.stream.stream, 7);
			CHECK_STR(a->stream_name, "default");
		}
	}
	const struct got *b = nth(&rb, TK_MEMORY, 3);
	CHECK(b && b->trk.u.stream.stream == 13);
	teardown(&f, &rb);
}

TEST(memory2_and_counter)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	CUpti_ActivityContext3 x = context_rec(1, 0, 7);
	CHECK_EQ_INT(convert(&f, &x), TK_OK);
	const CUpti_ActivityMemoryOperationType A =
		CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
		R = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
	const CUpti_ActivityMemoryKind D = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
		P = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
	CUpti_ActivityMemory4 recs[] = {
		memory2_rec(A, D, 0x7f0000000000ull, 1000, 100, CUPTI_INVALID_STREAM_ID),
		memory2_rec(A, D, 0x7f0000100000ull, 500, 200, 13), /* async */
		memory2_rec(A, P, 0x600000, 77, 250, CUPTI_INVALID_STREAM_ID),
		memory2_rec(R, D, 0x7f0000000000ull, 1000, 300, CUPTI_INVALID_STREAM_ID),
		memory2_rec(R, P, 0x600000, 77, 350, CUPTI_INVALID_STREAM_ID),
		memory2_rec(A, D, 0x7f0000200000ull, 200, 400, CUPTI_INVALID_STREAM_ID),
	};
	for (size_t i = 0; i < sizeof(recs) / sizeof(recs[0]); i++)
		CHECK_EQ_INT(convert(&f, &recs[i]), TK_OK);
	CUpti_ActivityMemory4 bad = recs[0];
	bad.memoryOperationType = (CUpti_ActivityMemoryOperationType)9;
	CHECK_EQ_INT(convert(&f, &bad), TK_OK);
	int64_t in_use = -1, peak = -1;
	CHECK_EQ_INT(cupti_convert_device_memory(f.c, 0, &in_use, &peak), 0);
	CHECK_EQ_INT(in_use, 700);
	CHECK_EQ_INT(peak, 1500);
	CHECK_EQ_INT(cupti_convert_device_memory(f.c, 5, &in_use, &peak), -1);
	finish(&f, &rb);
	CHECK_EQ_INT(count_kind(&rb, TK_MEMORY), 6);
	static const double want[] = { 1000, 1500, 500, 700 };
	CHECK_EQ_INT(count_kind(&rb, TK_COUNTER), 4);
	for (size_t i = 0; i < 4; i++) {
		const struct got *g = nth(&rb, TK_COUNTER, i);
		if (!g)
			continue;
		CHECK(g->e.u.counter.value == want[i]);
		CHECK_EQ_INT(g->trk.type, TK_TRACK_COUNTER);
		CHECK_STR(g->counter_name, "device memory");
		CHECK_STR(g->counter_unit, "bytes");
		CHECK_EQ_INT(g->trk.u.counter.process, f.h.process);
	}
	const struct got *g = nth(&rb, TK_COUNTER, 3);
	CHECK(g && g->e.ts == T0 + 400);
	g = nth(&rb, TK_MEMORY, 0);
	if (g) {
		CHECK_STR(g->name, "Alloc (Device)");
		CHECK_EQ_INT(g->e.u.memory.op, TK_MEM_ALLOC);
		CHECK_EQ_INT(g->e.u.memory.mem_kind, TK_MEM_DEVICE);
		CHECK(g->e.u.memory.address == 0x7f0000000000ull);
		CHECK_EQ_INT(g->e.u.memory.bytes, 1000);
		CHECK_EQ_INT(g->e.u.memory.correlation, 100);
		CHECK(g->e.ts == T0 + 100);
		CHECK_EQ_INT(g->e.dur, 0);
		CHECK_EQ_INT(g->trk.u.stream.stream, 7); /* the null stream */
		CHECK_STR(g->stream_name, "default");
	}
	g = nth(&rb, TK_MEMORY, 1);
	CHECK(g && g->trk.u.stream.stream == 13);
	g = nth(&rb, TK_MEMORY, 2);
	if (g) {
		CHECK_STR(g->name, "Alloc (Pinned)");
		CHECK_EQ_INT(g->e.u.memory.mem_kind, TK_MEM_PINNED);
	}
	g = nth(&rb, TK_MEMORY, 3);
	if (g) {
		CHECK_STR(g->name, "Free (Device)");
		CHECK_EQ_INT(g->e.u.memory.op, TK_MEM_FREE);
		CHECK_EQ_INT(g->e.u.memory.bytes, 1000);
	}
	/* the unknown operation was counted and reported */
	CHECK_EQ_INT(cupti_convert_stats(f.c)->malformed, 1);
	g = nth(&rb, TK_DROPPED, 0);
	CHECK(g && g->e.u.dropped.count == 1);
	if (g)
		CHECK_STR(g->reason, "CUPTI records with values tracekit cannot interpret");
	teardown(&f, &rb);
}

/* The older MEMORY kind: one record, allocated at start, freed at end. */
TEST(memory_v1)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	CUpti_ActivityMemory m;
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMORY;
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.address = 0x1000;
	m.bytes = 4096;
	m.start = 10;
	m.end = 90;
	m.deviceId = 0;
	m.contextId = 1;
	CHECK_EQ_INT(convert(&f, &m), TK_OK);
	m.end = 0; /* never freed */
	m.address = 0x2000;
	CHECK_EQ_INT(convert(&f, &m), TK_OK);
	finish(&f, &rb);
	CHECK_EQ_INT(count_kind(&rb, TK_MEMORY), 3);
	const struct got *a = nth(&rb, TK_MEMORY, 0), *b = nth(&rb, TK_MEMORY, 1);
	if (a && b) {
		CHECK_EQ_INT(a->e.u.memory.op, TK_MEM_ALLOC);
		CHECK(a->e.ts == T0 + 10);
		CHECK_EQ_INT(b->e.u.memory.op, TK_MEM_FREE);
		CHECK(b->e.ts == T0 + 90);
		CHECK(b->e.u.memory.address == 0x1000);
	}
	int64_t in_use, peak;
	cupti_convert_device_memory(f.c, 0, &in_use, &peak);
	CHECK_EQ_INT(in_use, 4096);
	CHECK_EQ_INT(peak, 4096);
	teardown(&f, &rb);
}

TEST(api_calls)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	CUpti_ActivityAPI a = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME,
	                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
	                              4243, 17, 1000, 1004);
	a.returnValue = 0;
	CHECK_EQ_INT(convert(&f, &a), TK_OK);
	a = api_rec(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
	            4243, 18, 1010, 1013);
	a.returnValue = 1; /* CUDA_ERROR_INVALID_VALUE */
	CHECK_EQ_INT(convert(&f, &a), TK_OK);
	a = api_rec(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
	            4250, 19, 1020, 1030);
	CHECK_EQ_INT(convert(&f, &a), TK_OK);
	a = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, 60000, 4243, 20, 1040, 1041);
	CHECK_EQ_INT(convert(&f, &a), TK_OK);
	a = api_rec(CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API, 0, 4243, 21, 1050, 1051);
	CHECK_EQ_INT(convert(&f, &a), TK_OK);
	a = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, 1, 777, 22, 1060, 1061);
	a.processId = 31337; /* another process: the host knows no thread */
	CHECK_EQ_INT(convert(&f, &a), TK_OK);
	/* three (pid, tid) pairs asked for once each, then cached */
	CHECK_EQ_INT(f.h.thread_calls, 3);
	finish(&f, &rb);
	CHECK_EQ_INT(count_kind(&rb, TK_API), 6);
	const struct got *g = nth(&rb, TK_API, 0);
	if (g) {
		CHECK_STR(g->name, have_libcupti() ? "cudaLaunchKernel" : "runtime cbid 211");
		CHECK_EQ_INT(g->e.u.api.domain, TK_API_RUNTIME);
		CHECK_EQ_INT(g->e.u.api.cbid, 211);
		CHECK_EQ_INT(g->e.u.api.correlation, 17);
		CHECK_EQ_INT(g->e.u.api.result, 0);
		CHECK(g->e.ts == T0 + 1000);
		CHECK_EQ_INT(g->e.dur, 4);
		CHECK_EQ_INT(g->trk.type, TK_TRACK_THREAD);
		CHECK_EQ_INT(g->trk.u.thread.tid, 4243);
		CHECK_EQ_INT(g->trk.u.thread.process, f.h.process);
	}
	g = nth(&rb, TK_API, 1);
	if (g) {
		CHECK_STR(g->name, have_libcupti() ? "cuLaunchKernel" : "driver cbid 307");
		CHECK_EQ_INT(g->e.u.api.domain, TK_API_DRIVER);
		CHECK_EQ_INT(g->e.u.api.result, 1);
		CHECK_EQ_INT(g->trk.id, thread_of(&f, 4243));
	}
	g = nth(&rb, TK_API, 2);
	if (g) {
		/* driver names keep their _v2: it is the real symbol */
		CHECK_STR(g->name, have_libcupti() ? "cuMemAlloc_v2" : "driver cbid 243");
		CHECK_EQ_INT(g->trk.u.thread.tid, 4250);
	}
	g = nth(&rb, TK_API, 3);
	if (g)
		CHECK_STR(g->name, "runtime cbid 60000");
	g = nth(&rb, TK_API, 4);
	if (g) {
		CHECK_STR(g->name, "internal kernel launch");
		CHECK_EQ_INT(g->e.u.api.domain, TK_API_DRIVER);
		CHECK_EQ_INT(g->e.u.api.cbid, 0);
	}
	g = nth(&rb, TK_API, 5);
	if (g)
		CHECK_EQ_INT(g->trk.type, TK_TRACK_PROCESS);
	teardown(&f, &rb);
}

static CUpti_ActivitySynchronization2
sync_rec(CUpti_ActivitySynchronizationType type, uint32_t corr, uint64_t start,
         uint64_t end)
{
	CUpti_ActivitySynchronization2 s;
	memset(&s, 0, sizeof(s));
	s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	s.type = type;
	s.correlationId = corr;
	s.contextId = 1;
	s.streamId = 7;
	s.start = start;
	s.end = end;
	return s;
}

/* Syncs go to the thread of their API call, whichever comes first; one
 * whose call never comes ends on the process track. */
TEST(sync_on_calling_thread)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	/* the sync before its call (the call's record is written at return) */
	CUpti_ActivitySynchronization2 s =
		sync_rec(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 50, 110, 190);
	CHECK_EQ_INT(convert(&f, &s), TK_OK);
	CUpti_ActivityAPI a = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME,
	                              CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
	                              4244, 50, 100, 200);
	CHECK_EQ_INT(convert(&f, &a), TK_OK);
	/* the call first */
	a = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME,
	            CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, 4245, 51, 300, 400);
	CHECK_EQ_INT(convert(&f, &a), TK_OK);
	s = sync_rec(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 51, 305, 395);
	CHECK_EQ_INT(convert(&f, &s), TK_OK);
	/* no call ever */
	s = sync_rec(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 52, 500, 510);
	CHECK_EQ_INT(convert(&f, &s), TK_OK);
	s = sync_rec((CUpti_ActivitySynchronizationType)77, 52, 600, 610);
	CHECK_EQ_INT(convert(&f, &s), TK_OK);
	finish(&f, &rb);
	CHECK_EQ_INT(count_kind(&rb, TK_SYNC), 4);
	const struct got *g;
	for (size_t i = 0; (g = nth(&rb, TK_SYNC, i)); i++) {
		if (g->e.u.sync.correlation == 50) {
			CHECK_STR(g->name, "Stream Synchronize");
			CHECK_EQ_INT(g->e.u.sync.type, TK_SYNC_STREAM);
			CHECK_EQ_INT(g->trk.id, thread_of(&f, 4244));
			CHECK(g->e.ts == T0 + 110);
			CHECK_EQ_INT(g->e.dur, 80);
		} else if (g->e.u.sync.correlation == 51) {
			CHECK_STR(g->name, "Context Synchronize");
			CHECK_EQ_INT(g->e.u.sync.type, TK_SYNC_CONTEXT);
			CHECK_EQ_INT(g->trk.id, thread_of(&f, 4245));
		} else if (g->e.ts == T0 + 500) {
			CHECK_STR(g->name, "Event Synchronize");
			CHECK_EQ_INT(g->trk.id, f.h.process);
		} else {
			CHECK_STR(g->name, "Synchronize");
			CHECK_EQ_INT(g->e.u.sync.type, 77);
			CHECK_EQ_INT(g->trk.id, f.h.process);
		}
	}
	teardown(&f, &rb);
}

TEST(overhead)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	CUpti_ActivityOverhead3 o;
	memset(&o, 0, sizeof(o));
	o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
	o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
	o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	o.objectId.pt.processId = PID;
	o.objectId.pt.threadId = 4246;
	o.start = 700;
	o.end = 750;
	CHECK_EQ_INT(convert(&f, &o), TK_OK);
	o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER;
	o.objectKind = CUPTI_ACTIVITY_OBJECT_DEVICE;
	o.objectId.dcs.deviceId = 0;
	CHECK_EQ_INT(convert(&f, &o), TK_OK);
	o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT;
	CHECK_EQ_INT(convert(&f, &o), TK_OK);
	o.overheadKind = (CUpti_ActivityOverheadKind)(9 << 16);
	CHECK_EQ_INT(convert(&f, &o), TK_OK);
	finish(&f, &rb);
	const struct got *a = nth(&rb, TK_OVERHEAD, 0), *b = nth(&rb, TK_OVERHEAD, 1),
	                 *c = nth(&rb, TK_OVERHEAD, 2), *d = nth(&rb, TK_OVERHEAD, 3);
	CHECK(a && b && c && d);
	if (a && b && c && d) {
		CHECK_STR(a->name, "CUPTI buffer flush");
		CHECK_EQ_INT(a->e.u.overhead.type, CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH);
		CHECK_EQ_INT(a->trk.id, thread_of(&f, 4246));
		CHECK_EQ_INT(a->e.dur, 50);
		CHECK_STR(b->name, "Driver compiler");
		CHECK_EQ_INT(b->trk.id, f.h.process);
		CHECK_STR(c->name, "UVM activity init");
		CHECK_STR(d->name, "Overhead");
		CHECK_EQ_INT(d->e.u.overhead.type, 9 << 16);
	}
	teardown(&f, &rb);
}

/* Lost records: a count from the host, spans CUPTI could not time. */
TEST(dropped_and_untimed)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	CHECK_EQ_INT(cupti_convert_dropped(f.c, 5, "CUPTI had no buffer space"), TK_OK);
	CHECK_EQ_INT(cupti_convert_dropped(f.c, 0, "nothing"), TK_OK);
	CUpti_ActivityKernel10 k = kernel_rec("k", 7, 0, 0);
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	k = kernel_rec("k", 7, 500, 400); /* ends before it begins */
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	k = kernel_rec("k", 7, UINT64_MAX - 5, UINT64_MAX); /* past int64 */
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	const struct cupti_convert_stats *st = cupti_convert_stats(f.c);
	CHECK_EQ_INT(st->no_timestamp, 2);
	CHECK_EQ_INT(st->bad_timestamp, 2);
	CHECK_EQ_INT(st->records, 4);
	finish(&f, &rb);
	CHECK_EQ_INT(count_kind(&rb, TK_KERNEL), 0);
	CHECK_EQ_INT(count_kind(&rb, TK_DROPPED), 3);
	const struct got *g = nth(&rb, TK_DROPPED, 0);
	if (g) {
		CHECK_EQ_INT(g->e.u.dropped.count, 5);
		CHECK_STR(g->reason, "CUPTI had no buffer space");
		CHECK_STR(g->name, "CUPTI");
		CHECK(g->e.ts == T0 + 999);
		CHECK_EQ_INT(g->trk.id, f.h.process);
	}
	g = nth(&rb, TK_DROPPED, 1);
	if (g) {
		CHECK_EQ_INT(g->e.u.dropped.count, 2);
		CHECK_STR(g->reason, "CUPTI could not time these records (device buffer full)");
	}
	g = nth(&rb, TK_DROPPED, 2);
	if (g) {
		CHECK_EQ_INT(g->e.u.dropped.count, 2);
		CHECK_STR(g->reason, "CUPTI records ending before they begin, or out of range");
	}
	teardown(&f, &rb);
}

/* Kinds it does not convert are counted, written nowhere, and named in
 * the metadata. */
TEST(unknown_kinds)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	/* big enough for any kind's fields, all zero */
	uint64_t raw[64];
	memset(raw, 0, sizeof(raw));
	uint32_t kinds[] = { CUPTI_ACTIVITY_KIND_MARKER, CUPTI_ACTIVITY_KIND_CUDA_EVENT,
	                     CUPTI_ACTIVITY_KIND_CUDA_EVENT, 999, CUPTI_ACTIVITY_KIND_INVALID };
	for (size_t i = 0; i < 5; i++) {
		memcpy(raw, &kinds[i], sizeof(kinds[i]));
		CHECK_EQ_INT(cupti_convert_record(f.c, (CUpti_Activity *)raw), TK_OK);
	}
	const struct cupti_convert_stats *st = cupti_convert_stats(f.c);
	CHECK_EQ_INT(st->ignored, 5);
	CHECK_EQ_INT(st->by_kind[CUPTI_ACTIVITY_KIND_CUDA_EVENT], 2);
	CHECK_EQ_INT(st->by_kind[CUPTI_CONVERT_KINDS - 1], 1);
	finish(&f, &rb);
	CHECK_EQ_INT(rb.rc, TK_EOF);
	CHECK_EQ_INT(rb.n, 0);
	CHECK_STR(rb.meta_ignored, "0:1 12:1 36:2 >=63:1");
	teardown(&f, &rb);
}

static int64_t
double_clock(void *arg, uint64_t t)
{
	(void)arg;
	return (int64_t)t * 2 + 7;
}

TEST(clock_callback)
{
	struct fixture f;
	struct readback rb;
	memset(&f, 0, sizeof(f));
	setup(&f);
	cupti_convert_free(f.c);
	f.ch.clock = double_clock;
	f.c = cupti_convert_new(f.h.w, &f.ch);
	CUpti_ActivityKernel10 k = kernel_rec("k", 7, 100, 150);
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	finish(&f, &rb);
	const struct got *g = nth(&rb, TK_KERNEL, 0);
	CHECK(g && g->e.ts == 207 && g->e.dur == 100);
	teardown(&f, &rb);
}

/* Records of every handled kind full of random bytes, with names NULL,
 * empty, garbage or 200 KB long: no crash, every event the converter
 * says it wrote reads back. */
TEST(garbage_records)
{
	static const uint32_t kinds[] = {
		CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
		CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
		CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_MEMORY2,
		CUPTI_ACTIVITY_KIND_MEMORY, CUPTI_ACTIVITY_KIND_RUNTIME,
		CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API,
		CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_OVERHEAD,
		CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT,
		CUPTI_ACTIVITY_KIND_STREAM, 63, 12345,
	};
	size_t huge_len = 200 * 1024;
	char *huge = malloc(huge_len + 1);
	char junk[40];
	if (!huge)
		abort();
	for (size_t i = 0; i < huge_len; i++)
		huge[i] = (char)('a' + i % 26);
	huge[huge_len] = 0;
	for (size_t i = 0; i + 1 < sizeof(junk); i++)
		junk[i] = (char)(1 + rnd_below(255));
	junk[sizeof(junk) - 1] = 0;
	const char *names[] = { NULL, "", junk, huge, "_Z", "_ZZZZ", "_Z1fv" };

	struct fixture f;
	struct readback rb;
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.chunk_bytes = 4096; /* many chunks */
	setup_with(&f, 0, &o);
	int bad_rc = 0;
	for (int i = 0; i < 6000; i++) {
		_Alignas(8) uint8_t rec[512];
		for (size_t b = 0; b < sizeof(rec); b += 8) {
			uint64_t v = rnd();
			/* mostly small numbers, sometimes extremes */
			if (v % 4 == 0)
				v = 0;
			else if (v % 4 == 1)
				v %= 100000;
			else if (v % 16 == 2)
				v = UINT64_MAX;
			memcpy(rec + b, &v, 8);
		}
		uint32_t kind = kinds[rnd_below(sizeof(kinds) / sizeof(kinds[0]))];
		memcpy(rec, &kind, 4);
		const char *name = names[rnd_below(sizeof(names) / sizeof(names[0]))];
		if (kind == CUPTI_ACTIVITY_KIND_KERNEL ||
		    kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
			((CUpti_ActivityKernel10 *)rec)->name = name;
		if (kind == CUPTI_ACTIVITY_KIND_DEVICE)
			((CUpti_ActivityDevice5 *)rec)->name = name;
		if (cupti_convert_record(f.c, (CUpti_Activity *)rec) != TK_OK)
			bad_rc++;
	}
	CHECK_EQ_INT(bad_rc, 0);
	uint64_t written = cupti_convert_stats(f.c)->events;
	finish(&f, &rb);
	CHECK_EQ_INT(rb.rc, TK_EOF);
	if (rb.rc != TK_EOF)
		fprintf(stderr, "# %s\n", rb.err);
	/* plus the loss reports written at the end */
	CHECK(rb.n >= written);
	const struct cupti_convert_stats *st = cupti_convert_stats(f.c);
	printf("# garbage: %" PRIu64 " events; %" PRIu64 " untimed, %" PRIu64
	       " bad times, %" PRIu64 " malformed, %" PRIu64 " refused, %" PRIu64
	       " ignored\n", written, st->no_timestamp, st->bad_timestamp,
	       st->malformed, st->rejected, st->ignored);
	/* most random records have inconsistent times; many still convert */
	CHECK(written > 400);
	CHECK_EQ_INT(cupti_convert_stats(f.c)->records, 6000);
	teardown(&f, &rb);
	free(huge);
}

/* A host whose thread tracks are wrong: the writer refuses the events,
 * the converter counts them and says so in the trace. */
TEST(refused_events_reported)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	f.h.bogus_thread = 9999;
	CUpti_ActivityAPI a = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 1, 1, 10, 20);
	CHECK_EQ_INT(convert(&f, &a), TK_OK);
	CHECK_EQ_INT(cupti_convert_stats(f.c)->rejected, 1);
	CHECK(strstr(cupti_convert_error(f.c), "undefined track") != NULL);
	finish(&f, &rb);
	CHECK_EQ_INT(count_kind(&rb, TK_API), 0);
	const struct got *g = nth(&rb, TK_DROPPED, 0);
	CHECK(g != NULL);
	if (g) {
		CHECK_EQ_INT(g->e.u.dropped.count, 1);
		CHECK_STR(g->reason, "events the trace writer refused");
	}
	teardown(&f, &rb);
}

/* A writer that cannot write: the converter returns its error. */
TEST(writer_failure_propagates)
{
	int fd = open("/dev/full", O_WRONLY);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISCHR(sb.st_mode)) {
		/* (a tool that unlinks its output on error, run as root, can
		 * turn /dev/full into a plain file) */
		printf("# /dev/full is not the full device here: test skipped\n");
		if (fd >= 0)
			close(fd);
		return;
	}
	struct tk_writer *w = tk_writer_new();
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.chunk_bytes = 1024;
	o.level = 0;
	/* the header write already fails on /dev/full */
	int open_rc = tk_writer_open_fd(w, fd, "full", &o);
	struct host h = { .w = w };
	struct cupti_convert_host ch = { .arg = &h, .process_track = host_process };
	struct cupti_convert *c = cupti_convert_new(w, &ch);
	int rc = TK_OK;
	for (int i = 0; i < 2000 && rc == TK_OK; i++) {
		CUpti_ActivityKernel10 k = kernel_rec("k", 7, 10 + i, 20 + i);
		rc = cupti_convert_record(c, (CUpti_Activity *)&k);
	}
	CHECK(open_rc != TK_OK || rc != TK_OK);
	if (open_rc == TK_OK)
		CHECK_EQ_INT(rc, TK_EIO);
	cupti_convert_free(c);
	tk_writer_free(w);
	close(fd);
}

/* The writer reopened on a new file (a new scope): after a reset the
 * same converter defines its device (remembered from the DEVICE record
 * of the first scope), stream and names again. */
TEST(reset_same_converter)
{
	struct fixture f;
	setup(&f);
	CUpti_ActivityDevice5 d = device_rec(0, "GPU zero");
	CHECK_EQ_INT(convert(&f, &d), TK_OK);
	cupti_convert_release((CUpti_Activity *)&d);
	CUpti_ActivityKernel10 k = kernel_rec("kern", 7, 10, 20);
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	CHECK_EQ_INT(cupti_convert_finish(f.c), TK_OK);
	/* reopen the same writer on a second file: a new scope */
	FILE *second = tmpfile();
	CHECK_EQ_INT(tk_writer_open_fd(f.h.w, fileno(second), "second", NULL), TK_OK);
	const char *argv[] = { "./train" };
	struct tk_process p = { "gpu-host", PID, 1, T0, 1, argv, "" };
	f.h.process = tk_writer_process(f.h.w, 0, &p);
	cupti_convert_reset(f.c);
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	CHECK_EQ_INT(tk_writer_close(f.h.w), TK_OK);
	long n = lseek(fileno(second), 0, SEEK_END);
	uint8_t *buf = malloc((size_t)n);
	CHECK(buf && pread(fileno(second), buf, (size_t)n, 0) == n);
	struct tk_reader *r = tk_reader_new();
	struct tk_record rec;
	int rc = tk_reader_open_mem(r, buf, (size_t)n, "second");
	int kernels = 0, devices = 0;
	while (rc == TK_OK && (rc = tk_reader_next(r, &rec)) == TK_OK) {
		if (rec.type == TK_REC_DEVICE) {
			devices++;
			CHECK_STR(rec.u.device->name, "GPU zero");
		}
		if (rec.type == TK_REC_EVENT && rec.u.event->kind == TK_KERNEL) {
			kernels++;
			CHECK_STR(rec.u.event->name, "kern");
			CHECK_EQ_INT(rec.u.event->trk->type, TK_TRACK_STREAM);
		}
	}
	CHECK_EQ_INT(rc, TK_EOF);
	CHECK_EQ_INT(kernels, 1);
	CHECK_EQ_INT(devices, 1);
	tk_reader_free(r);
	free(buf);
	fclose(second);
	tk_writer_free(f.h.w);
	fclose(f.m.f);
	cupti_convert_free(f.c);
}

/* The host's keep(): events it declines are counted, not written and
 * not reported lost; lost-record reports are never asked about. */
static int keep_calls;

static int
keep_late_only(void *arg, const struct tk_event *e)
{
	(void)arg;
	keep_calls++;
	return e->ts >= T0 + 1000;
}

TEST(host_keep_filter)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	cupti_convert_free(f.c);
	f.ch.keep = keep_late_only;
	f.c = cupti_convert_new(f.h.w, &f.ch);
	keep_calls = 0;
	CUpti_ActivityKernel10 k = kernel_rec("early", 7, 10, 20);
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	k = kernel_rec("late", 7, 1000, 1020);
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	CUpti_ActivityAPI a = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 4243, 1, 5, 6);
	CHECK_EQ_INT(convert(&f, &a), TK_OK);
	CHECK_EQ_INT(cupti_convert_dropped(f.c, 3, "lost"), TK_OK);
	const struct cupti_convert_stats *st = cupti_convert_stats(f.c);
	CHECK_EQ_INT(st->filtered, 2);
	CHECK_EQ_INT(st->events, 2);
	CHECK_EQ_INT(keep_calls, 3);
	finish(&f, &rb);
	CHECK_EQ_INT(count_kind(&rb, TK_KERNEL), 1);
	CHECK_EQ_INT(count_kind(&rb, TK_API), 0);
	CHECK_EQ_INT(count_kind(&rb, TK_DROPPED), 1); /* "lost", nothing else */
	const struct got *g = nth(&rb, TK_KERNEL, 0);
	CHECK(g && !strcmp(g->name, "late"));
	teardown(&f, &rb);
}

/* A new writer (the host reopened its output): ids are defined again in
 * it, devices with what their records said. */
TEST(set_writer_new_scope)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	CUpti_ActivityDevice5 d = device_rec(0, "GPU zero");
	CHECK_EQ_INT(convert(&f, &d), TK_OK);
	cupti_convert_release((CUpti_Activity *)&d);
	CUpti_ActivityContext3 x = context_rec(1, 0, 7);
	CHECK_EQ_INT(convert(&f, &x), TK_OK);
	CUpti_ActivityKernel10 k = kernel_rec("before", 7, 10, 20);
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	CHECK_EQ_INT(cupti_convert_finish(f.c), TK_OK);
	struct mem_trace second;
	struct tk_writer *w2 = mem_open(&second, NULL);
	const char *argv[] = { "./train" };
	struct tk_process p = { "gpu-host", PID, 1, T0, 1, argv, "" };
	struct tk_writer *w1 = f.h.w;
	f.h.w = w2;
	f.h.process = tk_writer_process(w2, 0, &p);
	f.h.nthreads = 0;
	cupti_convert_set_writer(f.c, w2);
	k = kernel_rec("after", 7, 30, 40);
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	CUpti_ActivityAPI a = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 4243, 1, 5, 6);
	CHECK_EQ_INT(convert(&f, &a), TK_OK);
	/* the fixture reads back what its trace holds: the second writer */
	struct mem_trace first = f.m;
	f.m = second;
	finish(&f, &rb);
	CHECK_EQ_INT(count_kind(&rb, TK_KERNEL), 1);
	const struct got *g = nth(&rb, TK_KERNEL, 0);
	CHECK(g && !strcmp(g->name, "after") && g->trk.type == TK_TRACK_STREAM);
	CHECK(g && !strcmp(g->stream_name, "default"));
	CHECK_EQ_INT(rb.ndev, 1);
	if (rb.ndev)
		CHECK_STR(rb.devname[0], "GPU zero");
	g = nth(&rb, TK_API, 0);
	CHECK(g && g->trk.type == TK_TRACK_THREAD && g->trk.u.thread.tid == 4243);
	readback_free(&rb);
	cupti_convert_free(f.c);
	mem_free(&f.m);
	tk_writer_free(w1);
	fclose(first.f);
}

/* A host that loads libcupti with dlopen() gives its functions. */
static int fake_walks;

static CUptiResult
fake_next(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
	fake_walks++;
	size_t at = *rec ? (size_t)((uint8_t *)*rec - buf) + sizeof(CUpti_ActivityAPI) : 0;
	if (at + sizeof(CUpti_ActivityAPI) > valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*rec = (CUpti_Activity *)(void *)(buf + at);
	return CUPTI_SUCCESS;
}

static CUptiResult
fake_name(CUpti_CallbackDomain d, uint32_t cbid, const char **name)
{
	(void)d;
	*name = cbid == 5 ? "cudaFakeCall_v12000" : NULL;
	return *name ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

TEST(host_cupti_functions)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	cupti_convert_free(f.c);
	f.ch.next_record = fake_next;
	f.ch.callback_name = fake_name;
	f.c = cupti_convert_new(f.h.w, &f.ch);
	_Alignas(8) uint8_t buf[2 * sizeof(CUpti_ActivityAPI)];
	CUpti_ActivityAPI a = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, 5, 4243, 1, 5, 6);
	memcpy(buf, &a, sizeof(a));
	a = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, 6, 4243, 2, 7, 8);
	memcpy(buf + sizeof(a), &a, sizeof(a));
	fake_walks = 0;
	CHECK_EQ_INT(cupti_convert_buffer(f.c, buf, sizeof(buf), 0), TK_OK);
	CHECK_EQ_INT(fake_walks, 3);
	finish(&f, &rb);
	CHECK_EQ_INT(count_kind(&rb, TK_API), 2);
	const struct got *g = nth(&rb, TK_API, 0);
	CHECK(g && !strcmp(g->name, "cudaFakeCall"));
	g = nth(&rb, TK_API, 1);
	CHECK(g && !strcmp(g->name, "runtime cbid 6"));
	teardown(&f, &rb);
}

TEST(api_version_check)
{
	char msg[160];
	CHECK_EQ_INT(cupti_convert_check_api_version(CUPTI_API_VERSION, msg, sizeof(msg)), 0);
	CHECK_STR(msg, "");
	/* a patch release writes the same records */
	CHECK_EQ_INT(cupti_convert_check_api_version(CUPTI_API_VERSION / 100 * 100 + 99, msg,
	                                             sizeof(msg)), 0);
	CHECK_EQ_INT(cupti_convert_check_api_version(130100, msg, sizeof(msg)), -1);
	char want[160];
	snprintf(want, sizeof(want), "libcupti API version 130100, built for %d: its "
	         "records would be misread", CUPTI_API_VERSION);
	CHECK_STR(msg, want);
	CHECK_EQ_INT(cupti_convert_check_api_version(120900, msg, sizeof(msg)), -1);
}

/* ---- real buffers, walked by libcupti ---------------------------------------- */

struct buffer {
	_Alignas(8) uint8_t bytes[8192];
	size_t len;
};

static void
append(struct buffer *b, const void *rec, size_t size)
{
	if (b->len + size > sizeof(b->bytes))
		abort();
	memcpy(b->bytes + b->len, rec, size);
	b->len += size;
}

TEST(buffer_walk)
{
	if (!have_libcupti()) {
		printf("# libcupti not linked: buffer walk not tested\n");
		return;
	}
	struct fixture f;
	struct readback rb;
	setup(&f);
	struct buffer b = { .len = 0 };
	CUpti_ActivityDevice5 d = device_rec(0, "NVIDIA H100 80GB HBM3");
	append(&b, &d, sizeof(d)); /* the buffer owns the name now */
	CUpti_ActivityContext3 x = context_rec(1, 0, 7);
	append(&b, &x, sizeof(x));
	for (uint32_t i = 0; i < 10; i++) {
		CUpti_ActivityAPI a = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 4243, 100 + i,
		                              1000 + i * 100, 1005 + i * 100);
		append(&b, &a, sizeof(a));
		CUpti_ActivityKernel10 k = kernel_rec("_Z6kernelPfi", 7, 1010 + i * 100,
		                                      1090 + i * 100);
		k.correlationId = 100 + i;
		append(&b, &k, sizeof(k));
	}
	CUpti_ActivityOverhead3 o;
	memset(&o, 0, sizeof(o));
	o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
	o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL;
	o.objectKind = CUPTI_ACTIVITY_OBJECT_PROCESS;
	o.objectId.pt.processId = PID;
	o.start = 5000;
	o.end = 5100;
	o.overheadData = malloc(sizeof(CUpti_ActivityOverheadCommandBufferFullData));
	append(&b, &o, sizeof(o));
	CHECK_EQ_INT(cupti_convert_buffer(f.c, b.bytes, b.len, 3), TK_OK);
	/* the client-owned memory was freed and cleared in the buffer */
	CUpti_ActivityDevice5 d2;
	memcpy(&d2, b.bytes, sizeof(d2));
	CHECK(d2.name == NULL);
	CUpti_ActivityOverhead3 o2;
	memcpy(&o2, b.bytes + b.len - sizeof(o2), sizeof(o2));
	CHECK(o2.overheadData == NULL);
	const struct cupti_convert_stats *st = cupti_convert_stats(f.c);
	CHECK_EQ_INT(st->records, 23);
	CHECK_EQ_INT(st->dropped, 3);
	CHECK_EQ_INT(st->unreadable, 0);
	finish(&f, &rb);
	CHECK_EQ_INT(count_kind(&rb, TK_API), 10);
	CHECK_EQ_INT(count_kind(&rb, TK_KERNEL), 10);
	CHECK_EQ_INT(count_kind(&rb, TK_OVERHEAD), 1);
	const struct got *g = nth(&rb, TK_KERNEL, 9);
	if (g) {
		CHECK_STR(g->name, have_demangler ? "kernel(float*, int)" : "_Z6kernelPfi");
		CHECK_EQ_INT(g->e.u.kernel.correlation, 109);
	}
	g = nth(&rb, TK_OVERHEAD, 0);
	if (g)
		CHECK_STR(g->name, "Command buffer full");
	g = nth(&rb, TK_DROPPED, 0);
	if (g) {
		CHECK_EQ_INT(g->e.u.dropped.count, 3);
		CHECK_STR(g->reason, "CUPTI had no buffer space");
	}
	CHECK_EQ_INT(rb.ndev, 1);
	if (rb.ndev)
		CHECK_STR(rb.devname[0], "NVIDIA H100 80GB HBM3");
	teardown(&f, &rb);
}

/* A record libcupti cannot read stops the walk; what came before is
 * kept, the rest is reported lost.  Aged syncs leave after 2 buffers. */
TEST(buffer_unreadable_and_empty)
{
	if (!have_libcupti()) {
		printf("# libcupti not linked: buffer walk not tested\n");
		return;
	}
	struct fixture f;
	struct readback rb;
	setup(&f);
	struct buffer b = { .len = 0 };
	CUpti_ActivityAPI a = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 4243, 1, 10, 20);
	append(&b, &a, sizeof(a));
	uint64_t bad[8] = { 999 }; /* kind 999 */
	append(&b, bad, sizeof(bad));
	append(&b, &a, sizeof(a));
	CHECK_EQ_INT(cupti_convert_buffer(f.c, b.bytes, b.len, 0), TK_OK);
	CHECK_EQ_INT(cupti_convert_stats(f.c)->unreadable, 1);
	CHECK_EQ_INT(cupti_convert_stats(f.c)->records, 1);
	CHECK(strstr(cupti_convert_error(f.c), "after byte 40 of 144") != NULL);
	/* a sync whose call never comes: two empty buffers later it is out */
	CUpti_ActivitySynchronization2 s =
		sync_rec(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 77, 30, 40);
	CHECK_EQ_INT(convert(&f, &s), TK_OK);
	CHECK_EQ_INT(cupti_convert_buffer(f.c, b.bytes, 0, 0), TK_OK);
	uint64_t before = cupti_convert_stats(f.c)->events;
	CHECK_EQ_INT(cupti_convert_buffer(f.c, NULL, 0, 0), TK_OK);
	CHECK_EQ_INT(cupti_convert_stats(f.c)->events, before + 1);
	finish(&f, &rb);
	CHECK_EQ_INT(count_kind(&rb, TK_API), 1);
	const struct got *g = nth(&rb, TK_DROPPED, 0);
	CHECK(g != NULL);
	if (g) {
		CHECK_EQ_INT(g->e.u.dropped.count, 1);
		CHECK(strncmp(g->reason, "unreadable CUPTI buffer after byte 40 of 144: ", 46) == 0);
	}
	g = nth(&rb, TK_SYNC, 0);
	CHECK(g && g->trk.id == f.h.process);
	teardown(&f, &rb);
}

TEST(libcupti_link_state)
{
	char msg[160];
	struct fixture f;
	setup(&f);
	if (have_libcupti()) {
		CHECK_EQ_INT(cupti_convert_check_version(msg, sizeof(msg)), 0);
		CHECK_STR(msg, "");
	} else {
		CHECK_EQ_INT(cupti_convert_check_version(msg, sizeof(msg)), -1);
		CHECK_STR(msg, "libcupti is not linked");
		uint8_t buf[64] = { 0 };
		CHECK_EQ_INT(cupti_convert_buffer(f.c, buf, sizeof(buf), 0), TK_EINVAL);
		CHECK_STR(cupti_convert_error(f.c),
		          "libcupti is not linked: cannot walk a CUPTI buffer");
	}
	CHECK(cupti_convert_new(NULL, &f.ch) == NULL);
	struct cupti_convert_host none = { 0 };
	CHECK(cupti_convert_new(f.h.w, &none) == NULL);
	CHECK(cupti_convert_new(f.h.w, NULL) == NULL);
	CHECK_EQ_INT(cupti_convert_record(f.c, NULL), TK_EINVAL);
	cupti_convert_free(NULL);
	cupti_convert_release(NULL);
	struct readback rb;
	finish(&f, &rb);
	teardown(&f, &rb);
}

/* API names as CUPTI spells them: a runtime name loses the "_vNNNN" of
 * the CUDA version that introduced it (four digits or more after "_v"),
 * nothing else; a driver name keeps its suffix (cuMemAlloc_v2 is the
 * symbol).  Expected names written out by hand. */
static const char *const odd_names[] = {
	"cudaMalloc_v3020", "cudaFoo_v12", "cudaBar3020", "cudaBaz_x3020",
	"x_v3020", "cudaQux_v", "cudaMemcpy_v123456", "",
};

static CUptiResult
odd_name(CUpti_CallbackDomain d, uint32_t cbid, const char **name)
{
	(void)d;
	if (cbid >= sizeof(odd_names) / sizeof(odd_names[0]))
		return CUPTI_ERROR_INVALID_PARAMETER;
	*name = odd_names[cbid];
	return CUPTI_SUCCESS;
}

TEST(api_name_suffixes)
{
	static const char *const runtime_want[] = {
		"cudaMalloc", "cudaFoo_v12", "cudaBar3020", "cudaBaz_x3020",
		"x", "cudaQux_v", "cudaMemcpy", "runtime cbid 7",
	};
	struct fixture f;
	struct readback rb;
	setup(&f);
	cupti_convert_free(f.c);
	f.ch.callback_name = odd_name;
	f.c = cupti_convert_new(f.h.w, &f.ch);
	for (uint32_t i = 0; i < 8; i++) {
		CUpti_ActivityAPI a = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, i, 4243, i + 1,
		                              10 * i + 10, 10 * i + 15);
		CHECK_EQ_INT(convert(&f, &a), TK_OK);
	}
	CUpti_ActivityAPI drv = api_rec(CUPTI_ACTIVITY_KIND_DRIVER, 0, 4243, 99, 200, 210);
	CHECK_EQ_INT(convert(&f, &drv), TK_OK);
	finish(&f, &rb);
	CHECK_EQ_INT(count_kind(&rb, TK_API), 9);
	for (size_t i = 0; i < 8; i++) {
		const struct got *g = nth(&rb, TK_API, i);
		CHECK(g && !strcmp(g->name, runtime_want[i]));
		if (g && strcmp(g->name, runtime_want[i]))
			printf("# cbid %zu: %s, expected %s\n", i, g->name, runtime_want[i]);
	}
	const struct got *g = nth(&rb, TK_API, 8);
	CHECK(g && !strcmp(g->name, "cudaMalloc_v3020")); /* a driver name: kept whole */
	teardown(&f, &rb);
}

/* CUPTI without a name for a call: an error, no string, an empty one. */
static CUptiResult
no_name(CUpti_CallbackDomain d, uint32_t cbid, const char **name)
{
	(void)d;
	if (cbid == 1)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*name = cbid == 2 ? NULL : "";
	return CUPTI_SUCCESS;
}

/* ... then the call is named by its domain and number, also the calls
 * past the cached table (cbid 100000, asked each time). */
TEST(api_names_cupti_cannot_give)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	cupti_convert_free(f.c);
	f.ch.callback_name = no_name;
	f.c = cupti_convert_new(f.h.w, &f.ch);
	uint32_t cbids[] = { 1, 2, 3, 100000, 100000 };
	for (uint32_t i = 0; i < 5; i++) {
		CUpti_ActivityAPI a = api_rec(i == 2 ? CUPTI_ACTIVITY_KIND_DRIVER
		                                     : CUPTI_ACTIVITY_KIND_RUNTIME,
		                              cbids[i], 4243, i + 1, 10 * i + 10, 10 * i + 15);
		CHECK_EQ_INT(convert(&f, &a), TK_OK);
	}
	finish(&f, &rb);
	const char *want[] = { "runtime cbid 1", "runtime cbid 2", "driver cbid 3",
	                       "runtime cbid 100000", "runtime cbid 100000" };
	CHECK_EQ_INT(count_kind(&rb, TK_API), 5);
	for (size_t i = 0; i < 5; i++) {
		const struct got *g = nth(&rb, TK_API, i);
		CHECK(g && !strcmp(g->name, want[i]) && g->e.u.api.cbid == cbids[i]);
	}
	teardown(&f, &rb);
}

/* Names that start like C++ names and are not: kept as they came, with
 * no mangled name. */
TEST(kernel_names_not_quite_mangled)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	const char *names[] = { "_foo", "_Z", "_Zq!" };
	for (uint32_t i = 0; i < 3; i++) {
		CUpti_ActivityKernel10 k = kernel_rec(names[i], 7, 100 + 100 * i, 150 + 100 * i);
		CHECK_EQ_INT(convert(&f, &k), TK_OK);
	}
	finish(&f, &rb);
	CHECK_EQ_INT(count_kind(&rb, TK_KERNEL), 3);
	for (size_t i = 0; i < 3; i++) {
		const struct got *g = nth(&rb, TK_KERNEL, i);
		CHECK(g && !strcmp(g->name, names[i]) && !g->mangled[0]);
	}
	teardown(&f, &rb);
}

/* A host that defines no thread tracks: calls and a thread's overhead
 * go on the process track. */
TEST(host_without_thread_tracks)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	cupti_convert_free(f.c);
	f.ch.thread_track = NULL;
	f.c = cupti_convert_new(f.h.w, &f.ch);
	CUpti_ActivityAPI a = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 4243, 1, 10, 20);
	CHECK_EQ_INT(convert(&f, &a), TK_OK);
	CUpti_ActivityOverhead3 o;
	memset(&o, 0, sizeof(o));
	o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
	o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	o.objectId.pt.processId = PID;
	o.objectId.pt.threadId = 4246;
	o.start = 30;
	o.end = 40;
	CHECK_EQ_INT(convert(&f, &o), TK_OK);
	finish(&f, &rb);
	const struct got *g = nth(&rb, TK_API, 0), *h = nth(&rb, TK_OVERHEAD, 0);
	CHECK(g && g->trk.id == f.h.process && g->e.ts == T0 + 10 && g->e.dur == 10);
	CHECK(h && h->trk.id == f.h.process && h->e.ts == T0 + 30);
	teardown(&f, &rb);
}

static int64_t
extreme_clock(void *arg, uint64_t t)
{
	(void)arg;
	return t == 1 ? INT64_MIN : INT64_MAX;
}

/* A span whose length does not fit in 64 bits is a bad time, not a
 * wrapped duration; times of 0 are no time, in every kind. */
TEST(spans_too_long_and_untimed)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	cupti_convert_free(f.c);
	f.ch.clock = extreme_clock;
	f.c = cupti_convert_new(f.h.w, &f.ch);
	CUpti_ActivityKernel10 k = kernel_rec("k", 7, 1, 2);
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	CHECK_EQ_INT(cupti_convert_stats(f.c)->bad_timestamp, 1);
	CUpti_ActivityMemory m;
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMORY;
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.bytes = 4096;
	m.start = 0;
	m.end = 90;
	CHECK_EQ_INT(convert(&f, &m), TK_OK);
	CUpti_ActivityMemory4 m2 = memory2_rec(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
	                                       CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0x10, 64, 0, 7);
	CHECK_EQ_INT(convert(&f, &m2), TK_OK);
	CHECK_EQ_INT(cupti_convert_stats(f.c)->no_timestamp, 2);
	finish(&f, &rb);
	CHECK_EQ_INT(count_kind(&rb, TK_KERNEL) + count_kind(&rb, TK_MEMORY) +
	             count_kind(&rb, TK_COUNTER), 0);
	teardown(&f, &rb);
}

/* Releases past INT64_MIN (a scribbled byte count) hold the sum there;
 * the counter shows no negative memory. */
TEST(device_memory_saturates_downwards)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	const CUpti_ActivityMemoryOperationType R = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
	const CUpti_ActivityMemoryKind D = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	CUpti_ActivityMemory4 a = memory2_rec(R, D, 0x1000, UINT64_MAX, 100, 7);
	CUpti_ActivityMemory4 b = memory2_rec(R, D, 0x2000, UINT64_MAX, 200, 7);
	CHECK_EQ_INT(convert(&f, &a), TK_OK);
	CHECK_EQ_INT(convert(&f, &b), TK_OK);
	int64_t in_use = 0, peak = -1;
	CHECK_EQ_INT(cupti_convert_device_memory(f.c, 0, &in_use, &peak), 0);
	CHECK(in_use == INT64_MIN);
	CHECK_EQ_INT(peak, 0);
	finish(&f, &rb);
	CHECK_EQ_INT(count_kind(&rb, TK_COUNTER), 2);
	for (size_t i = 0; i < 2; i++) {
		const struct got *g = nth(&rb, TK_COUNTER, i);
		CHECK(g && g->e.u.counter.value == 0.0);
	}
	teardown(&f, &rb);
}

/* Device memory whose sum passes INT64_MAX (a scribbled or absurd byte
 * count): held at INT64_MAX, not wrapped to a negative sum. */
TEST(device_memory_saturates)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	const CUpti_ActivityMemoryOperationType A =
		CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
	const CUpti_ActivityMemoryKind D = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	CUpti_ActivityMemory4 big = memory2_rec(A, D, 0x1000, UINT64_MAX, 100, 7);
	CUpti_ActivityMemory4 more = memory2_rec(A, D, 0x2000, 4096, 200, 7);
	CHECK_EQ_INT(convert(&f, &big), TK_OK);
	CHECK_EQ_INT(convert(&f, &more), TK_OK);
	int64_t in_use = 0, peak = 0;
	CHECK_EQ_INT(cupti_convert_device_memory(f.c, 0, &in_use, &peak), 0);
	CHECK(in_use == INT64_MAX);
	CHECK(peak == INT64_MAX);
	finish(&f, &rb);
	CHECK_EQ_INT(count_kind(&rb, TK_COUNTER), 2);
	for (size_t i = 0; i < 2; i++) {
		const struct got *g = nth(&rb, TK_COUNTER, i);
		CHECK(g && g->e.u.counter.value == (double)INT64_MAX);
	}
	const struct got *g = nth(&rb, TK_MEMORY, 0);
	CHECK(g && g->e.u.memory.bytes == UINT64_MAX); /* the record as it came */
	teardown(&f, &rb);
}

/* More syncs waiting for their calls than the converter keeps (1024):
 * the oldest goes to the process track to make room; none is lost, and
 * the call that then comes still takes the ones that waited. */
TEST(syncs_waiting_past_the_table)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	const uint32_t n = 1025;
	for (uint32_t i = 0; i < n; i++) {
		CUpti_ActivitySynchronization2 s = sync_rec(
			CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 5000 + i,
			1000 + 10 * (uint64_t)i, 1005 + 10 * (uint64_t)i);
		CHECK_EQ_INT(convert(&f, &s), TK_OK);
	}
	CUpti_ActivityAPI a = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME,
	                              CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
	                              4250, 5000 + n - 1, 1000 + 10 * (uint64_t)n, 1000 + 10 * (uint64_t)n + 50);
	CHECK_EQ_INT(convert(&f, &a), TK_OK);
	finish(&f, &rb);
	CHECK_EQ_INT(count_kind(&rb, TK_SYNC), n);
	size_t on_process = 0, on_thread = 0;
	const struct got *g;
	for (size_t i = 0; (g = nth(&rb, TK_SYNC, i)); i++) {
		if (g->e.u.sync.correlation == 5000 + n - 1)
			on_thread += g->trk.id == thread_of(&f, 4250);
		else
			on_process += g->trk.id == f.h.process;
	}
	CHECK_EQ_INT(on_thread, 1);
	CHECK_EQ_INT(on_process, n - 1);
	teardown(&f, &rb);
}

/* More streams waiting for a context than the converter keeps (1024):
 * the newest are kept; when the context comes they are defined, the
 * oldest not. */
TEST(streams_waiting_past_the_table)
{
	struct fixture f;
	setup(&f);
	const uint32_t n = 1030;
	for (uint32_t i = 0; i < n; i++) {
		CUpti_ActivityStream s;
		memset(&s, 0, sizeof(s));
		s.kind = CUPTI_ACTIVITY_KIND_STREAM;
		s.contextId = 3;
		s.streamId = 100 + i;
		CHECK_EQ_INT(convert(&f, &s), TK_OK);
	}
	CUpti_ActivityContext3 x = context_rec(3, 0, 7);
	CHECK_EQ_INT(convert(&f, &x), TK_OK);
	cupti_convert_finish(f.c);
	mem_finish(&f.m, 1);
	struct tk_reader *r = tk_reader_new();
	struct tk_record rec;
	uint32_t streams = 0, lowest = UINT32_MAX;
	int rc = tk_reader_open_mem(r, f.m.buf, f.m.len, "m");
	while (rc == TK_OK && (rc = tk_reader_next(r, &rec)) == TK_OK)
		if (rec.type == TK_REC_TRACK && rec.u.track->type == TK_TRACK_STREAM) {
			streams++;
			if (rec.u.track->u.stream.stream < lowest)
				lowest = rec.u.track->u.stream.stream;
		}
	CHECK_EQ_INT(rc, TK_EOF);
	CHECK_EQ_INT(streams, 1024);
	CHECK_EQ_INT(lowest, 100 + n - 1024);
	tk_reader_free(r);
	cupti_convert_free(f.c);
	mem_free(&f.m);
}

/* A walk that fails after one record says where that record ends: the
 * size of each kind's CUPTI 13.0 record (cupti_activity.h), or 0 for a
 * kind whose size the converter does not know. */
static int first_then_error_calls;

static CUptiResult
first_then_error(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
	(void)valid;
	if (first_then_error_calls++ == 0) {
		*rec = (CUpti_Activity *)(void *)buf;
		return CUPTI_SUCCESS;
	}
	return CUPTI_ERROR_INVALID_KIND;
}

TEST(unreadable_after_each_kind)
{
	static const struct {
		CUpti_ActivityKind kind;
		size_t size;
	} kinds[] = {
		{ CUPTI_ACTIVITY_KIND_KERNEL, sizeof(CUpti_ActivityKernel10) },
		{ CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, sizeof(CUpti_ActivityKernel10) },
		{ CUPTI_ACTIVITY_KIND_MEMCPY, sizeof(CUpti_ActivityMemcpy6) },
		{ CUPTI_ACTIVITY_KIND_MEMCPY2, sizeof(CUpti_ActivityMemcpyPtoP4) },
		{ CUPTI_ACTIVITY_KIND_MEMSET, sizeof(CUpti_ActivityMemset4) },
		{ CUPTI_ACTIVITY_KIND_MEMORY2, sizeof(CUpti_ActivityMemory4) },
		{ CUPTI_ACTIVITY_KIND_MEMORY, sizeof(CUpti_ActivityMemory) },
		{ CUPTI_ACTIVITY_KIND_RUNTIME, sizeof(CUpti_ActivityAPI) },
		{ CUPTI_ACTIVITY_KIND_DRIVER, sizeof(CUpti_ActivityAPI) },
		{ CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API, sizeof(CUpti_ActivityAPI) },
		{ CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, sizeof(CUpti_ActivitySynchronization2) },
		{ CUPTI_ACTIVITY_KIND_OVERHEAD, sizeof(CUpti_ActivityOverhead3) },
		{ CUPTI_ACTIVITY_KIND_DEVICE, sizeof(CUpti_ActivityDevice5) },
		{ CUPTI_ACTIVITY_KIND_CONTEXT, sizeof(CUpti_ActivityContext3) },
		{ CUPTI_ACTIVITY_KIND_STREAM, sizeof(CUpti_ActivityStream) },
		{ CUPTI_ACTIVITY_KIND_MARKER, 0 },
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		struct fixture f;
		struct readback rb;
		setup(&f);
		cupti_convert_free(f.c);
		f.ch.next_record = first_then_error;
		f.ch.flags |= CUPTI_CONVERT_KEEP_RECORD_MEMORY;
		f.c = cupti_convert_new(f.h.w, &f.ch);
		_Alignas(8) uint8_t buf[1024];
		memset(buf, 0, sizeof(buf));
		((CUpti_Activity *)(void *)buf)->kind = kinds[i].kind;
		first_then_error_calls = 0;
		CHECK_EQ_INT(cupti_convert_buffer(f.c, buf, sizeof(buf), 0), TK_OK);
		char want[64];
		snprintf(want, sizeof(want), "after byte %zu of 1024:", kinds[i].size);
		if (!strstr(cupti_convert_error(f.c), want)) {
			printf("# kind %d: '%s', expected '%s'\n", (int)kinds[i].kind,
			       cupti_convert_error(f.c), want);
			CHECK(0);
		}
		CHECK_EQ_INT(cupti_convert_stats(f.c)->unreadable, 1);
		finish(&f, &rb);
		teardown(&f, &rb);
	}
}

/* One of every kind the converter writes, with enough streams, names,
 * threads and devices that its tables grow: the converter is made and
 * finished inside the run, so that its own allocations count too.
 * Returns the first code that is not TK_OK (the rest is not fed) and
 * leaves the converter in *out (NULL when it could not be made). */
static int
every_kind(struct fixture *f, struct cupti_convert **out)
{
	int rc = TK_OK;
	*out = f->c = cupti_convert_new(f->h.w, &f->ch);
	if (!f->c)
		return TK_ENOMEM;
#define FEED(rec)                                                              \
	do {                                                                   \
		if ((rc = convert(f, &(rec))) != TK_OK)                        \
			return rc;                                             \
	} while (0)
	CUpti_ActivityStream st;
	memset(&st, 0, sizeof(st));
	st.kind = CUPTI_ACTIVITY_KIND_STREAM;
	st.contextId = 1;
	st.streamId = 30; /* before its context: waits for it */
	FEED(st);
	for (uint32_t dev = 0; dev < 3; dev++) {
		CUpti_ActivityDevice5 d;
		memset(&d, 0, sizeof(d));
		d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
		d.id = dev;
		d.name = dev ? "GPU one or two" : "GPU zero";
		d.numMultiprocessors = 132;
		FEED(d);
		CUpti_ActivityContext3 x = context_rec(dev + 1, dev, 7);
		FEED(x);
	}
	static const char *const names[] = {
		"_Z6kernelPfi", "_Z4gemmIfEvPKT_S2_PS0_i", "plain_kernel", "_Z3addv",
		"_Z3subv", "_Z3mulv", "_Z3divv", "_Z3negv", "_Z3absv",
	};
	uint64_t t = 1000;
	for (uint32_t i = 0; i < 12; i++, t += 1000) {
		CUpti_ActivityAPI a = api_rec(i % 2 ? CUPTI_ACTIVITY_KIND_DRIVER
		                                    : CUPTI_ACTIVITY_KIND_RUNTIME,
		                              i % 2 ? CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel
		                                    : CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
		                              4300 + i % 5, 100 + i, t, t + 50);
		CUpti_ActivitySynchronization2 sy =
			sync_rec(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 100 + i,
			         t + 60, t + 90);
		if (i % 3 == 0) /* before its call: waits for it */
			FEED(sy);
		FEED(a);
		if (i % 3 != 0)
			FEED(sy);
		CUpti_ActivityKernel10 k = kernel_rec(names[i % 9], 7 + i, t + 100, t + 200);
		k.deviceId = i % 3;
		k.contextId = i % 3 + 1;
		k.correlationId = 100 + i;
		FEED(k);
		CUpti_ActivityMemcpy6 m;
		memset(&m, 0, sizeof(m));
		m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
		m.copyKind = 1 + i % 4;
		m.srcKind = 1 + i % 3;
		m.dstKind = 3;
		m.bytes = 1000 + i;
		m.start = t + 200;
		m.end = t + 300;
		m.contextId = 1;
		m.streamId = 30;
		m.correlationId = 100 + i;
		FEED(m);
		CUpti_ActivityMemcpyPtoP4 p;
		memset(&p, 0, sizeof(p));
		p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
		p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
		p.srcKind = p.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
		p.start = t + 300;
		p.end = t + 400;
		p.deviceId = p.srcDeviceId = 1;
		p.dstDeviceId = 2;
		p.contextId = 2;
		p.streamId = 7;
		FEED(p);
		CUpti_ActivityMemset4 ms;
		memset(&ms, 0, sizeof(ms));
		ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
		ms.memoryKind = 1 + i % 3;
		ms.value = i;
		ms.bytes = 64;
		ms.start = t + 400;
		ms.end = t + 410;
		ms.contextId = 1;
		ms.streamId = 7;
		FEED(ms);
		CUpti_ActivityMemory4 al = memory2_rec(
			CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
			CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0x1000 * (i + 1), 4096, t + 420, 7);
		al.deviceId = i % 3;
		al.contextId = i % 3 + 1;
		FEED(al);
		CUpti_ActivityMemory old;
		memset(&old, 0, sizeof(old));
		old.kind = CUPTI_ACTIVITY_KIND_MEMORY;
		old.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC;
		old.address = 0x900000 + i;
		old.bytes = 512;
		old.start = t + 430;
		old.end = t + 440;
		old.deviceId = 0;
		old.contextId = 0; /* static memory: the device's context */
		FEED(old);
		CUpti_ActivityOverhead3 o;
		memset(&o, 0, sizeof(o));
		o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
		o.overheadKind = i % 2 ? CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH
		                       : CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER;
		o.objectKind = i % 2 ? CUPTI_ACTIVITY_OBJECT_THREAD : CUPTI_ACTIVITY_OBJECT_PROCESS;
		o.objectId.pt.processId = PID;
		o.objectId.pt.threadId = 4300 + i % 5;
		o.start = t + 450;
		o.end = t + 460;
		FEED(o);
	}
	/* a sync whose call never comes, a kind not converted, a loss */
	CUpti_ActivitySynchronization2 lone =
		sync_rec(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 999, t, t + 5);
	FEED(lone);
	CUpti_ActivityMarker2 mk;
	memset(&mk, 0, sizeof(mk));
	mk.kind = CUPTI_ACTIVITY_KIND_MARKER;
	FEED(mk);
#undef FEED
	if ((rc = cupti_convert_dropped(f->c, 3, "CUPTI had no buffer space")) != TK_OK)
		return rc;
	return cupti_convert_finish(f->c);
}

/* What a run wrote, in a form two runs can be compared in. */
static char *
summary(const struct readback *rb)
{
	size_t cap = 256 + rb->n * 128, at = 0;
	char *s = malloc(cap);
	if (!s)
		abort();
	at += (size_t)snprintf(s + at, cap - at, "%zu devices, ignored %s\n", rb->ndev,
	                       rb->meta_ignored ? rb->meta_ignored : "-");
	for (size_t i = 0; i < rb->n && at < cap; i++) {
		const struct got *g = &rb->ev[i];
		at += (size_t)snprintf(s + at, cap - at, "%u %s %lld %lld track %u/%u %s\n",
		                       g->e.kind, g->name, (long long)g->e.ts,
		                       (long long)g->e.dur, g->trk.type, g->dev_index,
		                       g->stream_name ? g->stream_name : "");
	}
	return s;
}

/* Each allocation of the converter (and of the writer under it) failing
 * in turn, over a run of every kind: the run stops with TK_ENOMEM, or,
 * where the converter can do without (a name table), writes what a run
 * without failures writes; either way it frees everything (ASan). */
TEST(every_allocation_failing)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	cupti_convert_free(f.c);
	struct cupti_convert *c;
	CHECK_EQ_INT(every_kind(&f, &c), TK_OK);
	finish(&f, &rb);
	char *want = summary(&rb);
	/* the run has every kind: 12 calls, each with its kernel, two
	 * copies, a memset, an allocation, a static allocation and its
	 * release (the old MEMORY kind), a sync and an overhead; a sync
	 * without its call; a loss */
	CHECK(count_kind(&rb, TK_KERNEL) == 12 && count_kind(&rb, TK_MEMCPY) == 24 &&
	      count_kind(&rb, TK_MEMSET) == 12 && count_kind(&rb, TK_MEMORY) == 36 &&
	      count_kind(&rb, TK_SYNC) == 13 && count_kind(&rb, TK_OVERHEAD) == 12 &&
	      count_kind(&rb, TK_API) == 12 && count_kind(&rb, TK_DROPPED) == 1);
	teardown(&f, &rb);
	int failures = 0, same = 0;
	for (long n = 1; n < 100000; n++) {
		setup(&f);
		cupti_convert_free(f.c);
		alloc_arm(n);
		int rc = every_kind(&f, &c);
		alloc_armed = 0;
		if (!alloc_failed) {
			CHECK_EQ_INT(rc, TK_OK);
			cupti_convert_free(c);
			tk_writer_free(f.h.w);
			fclose(f.m.f);
			printf("# %ld allocations failed in turn: %d runs stopped with "
			       "TK_ENOMEM, %d did without\n", n - 1, failures, same);
			break;
		}
		if (rc == TK_OK) {
			/* done without the memory: the same trace */
			finish(&f, &rb);
			char *got = summary(&rb);
			if (strcmp(got, want) != 0) {
				printf("# allocation %ld failing: a run that says TK_OK "
				       "wrote another trace\n", n);
				CHECK(0);
			}
			free(got);
			teardown(&f, &rb);
			same++;
			continue;
		}
		if (rc != TK_ENOMEM)
			printf("# allocation %ld failing: %d (%s)\n", n, rc,
			       c ? cupti_convert_error(c) : "no converter");
		CHECK_EQ_INT(rc, TK_ENOMEM);
		failures++;
		cupti_convert_free(c);
		tk_writer_free(f.h.w); /* (closing would write a trace it failed) */
		fclose(f.m.f);
	}
	CHECK(failures > 10);
	free(want);
}

/* An event as two runs can compare it whatever its track: kind, name,
 * time, length and a counter's value (a sync whose call was lost waits
 * on the process track; a stream whose naming was refused stays
 * unnamed). */
static char *
event_keys(const struct readback *rb, size_t *n)
{
	size_t cap = 64 + rb->n * 128, at = 0;
	char *s = malloc(cap);
	if (!s)
		abort();
	s[0] = 0;
	*n = 0;
	for (size_t i = 0; i < rb->n && at < cap; i++) {
		const struct got *g = &rb->ev[i];
		if (g->e.kind == TK_DROPPED)
			continue;
		at += (size_t)snprintf(s + at, cap - at, "%u %s %lld %lld %.0f\n", g->e.kind,
		                       g->name, (long long)g->e.ts, (long long)g->e.dur,
		                       g->e.kind == TK_COUNTER ? g->e.u.counter.value : 0.0);
		(*n)++;
	}
	return s;
}

/* How many lines of `want` are missing from `got`, each line of `got`
 * used once; -1 when `got` has a line `want` does not. */
static long
lines_missing(const char *want, const char *got)
{
	char *w = strdup(want), *g = strdup(got);
	if (!w || !g)
		abort();
	long missing = 0;
	for (char *line = w, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		*nl = 0;
		char *at = g;
		size_t len = strlen(line);
		while ((at = strstr(at, line)) && ((at != g && at[-1] != '\n') ||
		                                    at[len] != '\n'))
			at++;
		if (at)
			memset(at, '#', len); /* used */
		else if (++missing > 1)
			printf("# missing: %s\n", line);
	}
	for (char *p = g; *p; p++)
		if (*p != '#' && *p != '\n')
			missing = -1;
	free(w);
	free(g);
	return missing;
}

/* Each definition the converter asks the writer for (a name, a stream,
 * a device, a counter) refused in turn, over a run of every kind: the
 * run goes on (TK_OK) and says why; at most the one event that needed
 * the definition is missing, reported as one event the writer refused
 * (a definition made for no event - a device's or context's record, a
 * stream created without work - loses none, and none is reported); every
 * other event is what a run without refusals writes: an allocation not
 * written still counts in the device's memory in use. */
TEST(every_definition_refused)
{
	struct fixture f;
	struct readback rb;
	struct cupti_convert *c;
	setup(&f);
	cupti_convert_free(f.c);
	CHECK_EQ_INT(every_kind(&f, &c), TK_OK);
	finish(&f, &rb);
	size_t nwant;
	char *want = event_keys(&rb, &nwant);
	teardown(&f, &rb);
	int runs = 0, lost_one = 0;
	for (long n = 1; n < 100000; n++) {
		setup(&f);
		cupti_convert_free(f.c);
		def_arm(n);
		int rc = every_kind(&f, &c);
		def_armed = 0;
		if (!def_refused) {
			CHECK_EQ_INT(rc, TK_OK);
			finish(&f, &rb);
			teardown(&f, &rb);
			break;
		}
		runs++;
		CHECK_EQ_INT(rc, TK_OK);
		CHECK(strstr(cupti_convert_error(c), "refused a definition") != NULL);
		uint64_t refused = cupti_convert_stats(c)->rejected;
		finish(&f, &rb);
		CHECK_EQ_INT(rb.rc, TK_EOF);
		size_t ngot;
		char *got = event_keys(&rb, &ngot);
		long missing = lines_missing(want, got);
		if (missing < 0 || missing > 1)
			printf("# definition %ld refused: %ld events missing\n", n,
			       missing);
		CHECK(missing == 0 || missing == 1);
		lost_one += missing == 1;
		/* the loss said, as it is: the run's own report, then the
		 * event refused, if one was */
		if (refused != (uint64_t)missing)
			printf("# definition %ld refused: %ld events missing, %llu "
			       "reported\n", n, missing, (unsigned long long)refused);
		CHECK_EQ_INT(refused, missing);
		CHECK_EQ_INT(count_kind(&rb, TK_DROPPED), 1 + missing);
		const struct got *g = nth(&rb, TK_DROPPED, 1);
		CHECK(!missing || (g && g->e.u.dropped.count == 1 &&
		                   !strcmp(g->reason, "events the trace writer refused")));
		free(got);
		teardown(&f, &rb);
	}
	printf("# %d definitions refused in turn: %d lost their event\n", runs,
	       lost_one);
	CHECK(runs > 40);
	CHECK(lost_one > 20);
	free(want);
}

/* A missing converter, record or writer is refused, not followed. */
TEST(null_arguments)
{
	struct fixture f;
	struct readback rb;
	setup(&f);
	CUpti_ActivityKernel10 k = kernel_rec("k", 7, 100, 200);
	CHECK_EQ_INT(cupti_convert_record(NULL, (const CUpti_Activity *)&k), TK_EINVAL);
	CHECK_EQ_INT(cupti_convert_record(f.c, NULL), TK_EINVAL);
	CHECK_EQ_INT(cupti_convert_dropped(NULL, 1, "x"), TK_EINVAL);
	CHECK_EQ_INT(cupti_convert_buffer(NULL, NULL, 0, 0), TK_EINVAL);
	CHECK_EQ_INT(cupti_convert_finish(NULL), TK_EINVAL);
	CHECK_EQ_INT(cupti_convert_context(NULL, 1, 0, 7), TK_EINVAL);
	CHECK(cupti_convert_new(NULL, &f.ch) == NULL);
	CHECK(cupti_convert_new(f.h.w, NULL) == NULL);
	cupti_convert_reset(NULL);
	cupti_convert_set_writer(NULL, f.h.w);
	cupti_convert_set_writer(f.c, NULL); /* keeps its writer */
	cupti_convert_release(NULL);
	cupti_convert_free(NULL);
	/* a loss without a reason: an empty one */
	CHECK_EQ_INT(cupti_convert_dropped(f.c, 2, NULL), TK_OK);
	CHECK_EQ_INT(convert(&f, &k), TK_OK);
	int64_t in_use = -1, peak = -1;
	CHECK_EQ_INT(cupti_convert_device_memory(f.c, 0, NULL, NULL), 0);
	CHECK_EQ_INT(cupti_convert_device_memory(f.c, 0, &in_use, &peak), 0);
	CHECK(in_use == 0 && peak == 0);
	CHECK_EQ_INT(cupti_convert_device_memory(f.c, 5, &in_use, &peak), -1);
	finish(&f, &rb);
	CHECK_EQ_INT(count_kind(&rb, TK_KERNEL), 1);
	const struct got *g = nth(&rb, TK_DROPPED, 0);
	CHECK(g && g->e.u.dropped.count == 2 && !strcmp(g->reason, ""));
	teardown(&f, &rb);
	char msg[8] = "x";
	CHECK_EQ_INT(cupti_convert_check_api_version(CUPTI_API_VERSION, msg, 0), 0);
	CHECK_STR(msg, "x"); /* no room: nothing written */
}

int
main(void)
{
	/* The demangler comes from the recorded program's libstdc++; this
	 * C test loads one the way Python does (an extension module's
	 * dependency: RTLD_LOCAL, not in the global scope). */
	have_demangler = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL) != NULL;
	if (!have_demangler)
		printf("# libstdc++ not found: names are checked undemangled\n");
	printf("# libcupti %s\n", have_libcupti() ? "linked" : "not linked");
	RUN(device_context_stream);
	RUN(stream_defined_without_work);
	RUN(null_stream_named_by_a_late_context);
	RUN(kernel_fields);
	RUN(kernel_names_plain_and_no_demangle);
	RUN(kernel_name_memory_reused);
	RUN(memcpy_fields);
	RUN(peer_memcpy_fields);
	RUN(memset_fields);
	RUN(memory2_and_counter);
	RUN(memory2_stream_zero_is_no_stream);
	RUN(memory_v1);
	RUN(api_calls);
	RUN(sync_on_calling_thread);
	RUN(overhead);
	RUN(dropped_and_untimed);
	RUN(unknown_kinds);
	RUN(clock_callback);
	RUN(garbage_records);
	RUN(refused_events_reported);
	RUN(writer_failure_propagates);
	RUN(reset_same_converter);
	RUN(host_keep_filter);
	RUN(set_writer_new_scope);
	RUN(host_cupti_functions);
	RUN(api_version_check);
	RUN(buffer_walk);
	RUN(buffer_unreadable_and_empty);
	RUN(libcupti_link_state);
	RUN(api_name_suffixes);
	RUN(device_memory_saturates);
	RUN(api_names_cupti_cannot_give);
	RUN(kernel_names_not_quite_mangled);
	RUN(host_without_thread_tracks);
	RUN(spans_too_long_and_untimed);
	RUN(device_memory_saturates_downwards);
	RUN(syncs_waiting_past_the_table);
	RUN(streams_waiting_past_the_table);
	RUN(unreadable_after_each_kind);
	RUN(every_allocation_failing);
	RUN(every_definition_refused);
	RUN(null_arguments);
	return tap_done();
}

#endif /* TK_HAVE_CUPTI */
