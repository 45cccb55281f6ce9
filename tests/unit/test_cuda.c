/* SPDX-License-Identifier: MIT */
/*
 * The CUDA part of the injection library (lib/inject/cuda.c,
 * cuda_activity.c) driven by a fake CUPTI: what it asks CUPTI for and in
 * which order, each way attaching can fail (another subscriber, CUPTI
 * errors, a libcupti of another version, kinds CUPTI refuses), buffers
 * of synthesized records delivered at each flush, at exit and on a fatal
 * signal, the bounded buffer pool, dropped records, kernel thread ids
 * (and the pthread map when CUPTI cannot give them), the clock, the
 * capture schedule and recording window, fork, and a spool whose
 * descriptor the process never holds.  Everything is read back from the process's spool.
 *
 * Each scenario runs in a child process of its own: the session is once
 * per process, as in a real program.  The fake's record of calls is in
 * shared memory, so that the parent sees what a child's exit did.  Last,
 * InitializeInjection() itself runs against the real libcupti, which on a
 * machine without a driver refuses to attach: the trace must say why.
 */
#include <stdio.h>

#if !defined(TK_HAVE_CUPTI)
int
main(void)
{
	printf("ok 1 # SKIP no CUPTI 13.0 or NVTX headers under CUDA_HOME: "
	       "the CUDA recording is not built\n");
	printf("1..1\n");
	return 0;
}
#else

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <cupti_runtime_cbid.h>
#include <nvtx3/nvToolsExt.h>

#include "cuda_record.h"
#include "tbuf.h"
#include "helpers.h"
#include "tap.h"

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);
int InitializeInjection(void);

/* Linked when the build found libcupti (its buffer walk is used). */
#pragma weak cuptiActivityGetNextRecord

static char spool[256];

/* ---- the fake CUPTI --------------------------------------------------------------- */

#define MAXQ 8

struct fake {
	/* what it answers */
	uint32_t version;
	CUptiResult subscribe_rc, timestamp_rc, thread_type_rc, register_rc;
	CUptiResult enable_rc[64];
	char other[64];          /* the subscriber already there */
	int64_t clock_skew;      /* cuptiGetTimestamp - CLOCK_REALTIME */
	size_t dropped;          /* for the next completed buffer */
	int no_context_ids;      /* cuptiGetContextId fails */
	/* what it was asked */
	int subscribes, unsubscribes, timestamp_cbs, thread_types;
	int registered, zeroed;
	int enabled[64], enables, disables;
	int domains[8], reset_cb, context_cb;
	int flush0, forced;
	int work_names;          /* f_cbname names the calls of work_names[] */
	int cb_on[2][1024];      /* callbacks enabled: [0] runtime, [1] driver */
	/* buffers waiting for a flush */
	struct {
		uint8_t *buf;
		size_t size, valid;
	} q[MAXQ];
	int nq;
};

static struct fake *fk;         /* shared with the children */
static CUpti_CallbackFunc fk_cb;
static CUpti_BuffersCallbackRequestFunc fk_req;
static CUpti_BuffersCallbackCompleteFunc fk_done;

static CUptiResult
f_version(uint32_t *v)
{
	*v = fk->version;
	return CUPTI_SUCCESS;
}

static CUptiResult
f_result(CUptiResult r, const char **s)
{
	switch (r) {
	case CUPTI_ERROR_UNKNOWN: *s = "CUPTI_ERROR_UNKNOWN"; break;
	case CUPTI_ERROR_NOT_SUPPORTED: *s = "CUPTI_ERROR_NOT_SUPPORTED"; break;
	case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: *s = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"; break;
	default: *s = "CUPTI_ERROR_SOMETHING"; break;
	}
	return CUPTI_SUCCESS;
}

/* Names of calls that issue work and of calls that do not, at cbids
 * of the fake's choosing (CUPTI's own numbers do not matter here). */
static const struct {
	CUpti_CallbackDomain domain;
	uint32_t cbid;
	const char *name;
} work_names[] = {
	{ CUPTI_CB_DOMAIN_RUNTIME_API, 51, "cudaMemset_v3020" },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, 52, "cudaLaunchHostFunc_v10000" },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, 31, "cudaMemcpy_v3020" },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, 60, "cudaDeviceSynchronize_v3020" },
	{ CUPTI_CB_DOMAIN_RUNTIME_API, 61, "hostLaunchKernel" }, /* not "cuda..." */
	{ CUPTI_CB_DOMAIN_DRIVER_API, 10, "cuLaunchKernel" },
	{ CUPTI_CB_DOMAIN_DRIVER_API, 11, "cuLaunchHostFunc" },
	{ CUPTI_CB_DOMAIN_DRIVER_API, 12, "cuMemcpyHtoD_v2" },
	{ CUPTI_CB_DOMAIN_DRIVER_API, 13, "cuMemsetD8_v2" },
	{ CUPTI_CB_DOMAIN_DRIVER_API, 14, "cuCtxSynchronize" },
	{ CUPTI_CB_DOMAIN_DRIVER_API, 15, "cuLaunchKernelEx" },
};

static CUptiResult
f_cbname(CUpti_CallbackDomain d, uint32_t cbid, const char **name)
{
	*name = d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == 211 ? "cudaLaunchKernel_v7000"
	                                                         : NULL;
	for (size_t i = 0; fk->work_names && i < sizeof(work_names) / sizeof(work_names[0]);
	     i++)
		if (work_names[i].domain == d && work_names[i].cbid == cbid)
			*name = work_names[i].name;
	return *name ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

static CUptiResult
f_timestamp(uint64_t *t)
{
	*t = (uint64_t)(tki_now() + fk->clock_skew);
	return CUPTI_SUCCESS;
}

static CUptiResult
f_subscribe(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *ud,
            CUpti_SubscriberParams *p)
{
	(void)ud;
	fk->subscribes++;
	if (fk->subscribe_rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && p &&
	    p->oldSubscriberName)
		snprintf(p->oldSubscriberName, p->oldSubscriberSize, "%s", fk->other);
	if (fk->subscribe_rc)
		return fk->subscribe_rc;
	fk_cb = cb;
	*h = (CUpti_SubscriberHandle)(uintptr_t)0x5b0;
	return CUPTI_SUCCESS;
}

static CUptiResult
f_unsubscribe(CUpti_SubscriberHandle h)
{
	(void)h;
	fk->unsubscribes++;
	return CUPTI_SUCCESS;
}

static CUptiResult
f_enable_callback(uint32_t on, CUpti_SubscriberHandle h, CUpti_CallbackDomain d,
                  CUpti_CallbackId cbid)
{
	(void)h;
	if (on && d == CUPTI_CB_DOMAIN_RUNTIME_API &&
	    cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020)
		fk->reset_cb++;
	if (on && d == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
		fk->context_cb++;
	if (on && (d == CUPTI_CB_DOMAIN_RUNTIME_API || d == CUPTI_CB_DOMAIN_DRIVER_API) &&
	    cbid < 1024)
		fk->cb_on[d == CUPTI_CB_DOMAIN_DRIVER_API][cbid]++;
	return CUPTI_SUCCESS;
}

static CUptiResult
f_enable_domain(uint32_t on, CUpti_SubscriberHandle h, CUpti_CallbackDomain d)
{
	(void)h;
	if (on && (unsigned)d < 8)
		fk->domains[d]++;
	return CUPTI_SUCCESS;
}

static CUptiResult
f_thread_type(CUpti_ActivityThreadIdType t)
{
	fk->thread_types += t == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM;
	return fk->thread_type_rc;
}

static CUptiResult
f_timestamp_cb(CUpti_TimestampCallbackFunc f)
{
	fk->timestamp_cbs += f != NULL;
	return fk->timestamp_rc;
}

static CUptiResult
f_register(CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done)
{
	fk->registered++;
	fk_req = req;
	fk_done = done;
	return fk->register_rc;
}

static CUptiResult
f_set_attribute(CUpti_ActivityAttribute a, size_t *size, void *v)
{
	if (a == CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER && *size == 1)
		fk->zeroed = *(uint8_t *)v;
	return CUPTI_SUCCESS;
}

static CUptiResult
f_enable(CUpti_ActivityKind k)
{
	CUptiResult rc = (unsigned)k < 64 ? fk->enable_rc[k] : CUPTI_ERROR_UNKNOWN;
	if (rc == CUPTI_SUCCESS) {
		fk->enabled[k] = 1;
		fk->enables++;
	}
	return rc;
}

static CUptiResult
f_disable(CUpti_ActivityKind k)
{
	if ((unsigned)k < 64 && fk->enabled[k]) {
		fk->enabled[k] = 0;
		fk->disables++;
	}
	return CUPTI_SUCCESS;
}

/* Deliver the waiting buffers, as CUPTI does inside a flush. */
static CUptiResult
f_flush(uint32_t flag)
{
	if (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)
		fk->forced++;
	else
		fk->flush0++;
	while (fk->nq > 0) {
		fk->nq--;
		fk_done(NULL, 0, fk->q[fk->nq].buf, fk->q[fk->nq].size, fk->q[fk->nq].valid);
	}
	return CUPTI_SUCCESS;
}

static CUptiResult
f_dropped(CUcontext c, uint32_t s, size_t *n)
{
	(void)c;
	(void)s;
	*n = fk->dropped;
	fk->dropped = 0;
	return CUPTI_SUCCESS;
}

/* One context, 0xc0: id 1 on device 0, its NULL stream 7. */
static CUptiResult
f_stream_id(CUcontext c, CUstream s, uint8_t per_thread, uint32_t *id)
{
	*id = 0;
	if (c != (CUcontext)(uintptr_t)0xc0 || s || per_thread)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*id = 7;
	return CUPTI_SUCCESS;
}

static CUptiResult
f_context_id(CUcontext c, uint32_t *id)
{
	*id = 1;
	return c == (CUcontext)(uintptr_t)0xc0 && !fk->no_context_ids
	       ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_CONTEXT;
}

static CUptiResult
f_device_id(CUcontext c, uint32_t *id)
{
	*id = 0;
	return c == (CUcontext)(uintptr_t)0xc0 ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_CONTEXT;
}

static struct tki_cupti fake_api;

/* A fresh fake that answers yes to everything. */
static void
fake_reset(void)
{
	memset(fk, 0, sizeof(*fk));
	fk->version = CUPTI_API_VERSION;
	fake_api = (struct tki_cupti){
		.cuptiGetVersion = f_version,
		.cuptiGetResultString = f_result,
		.cuptiGetCallbackName = f_cbname,
		.cuptiGetTimestamp = f_timestamp,
		.cuptiSubscribe_v2 = f_subscribe,
		.cuptiUnsubscribe = f_unsubscribe,
		.cuptiEnableCallback = f_enable_callback,
		.cuptiEnableDomain = f_enable_domain,
		.cuptiSetThreadIdType = f_thread_type,
		.cuptiActivityRegisterTimestampCallback = f_timestamp_cb,
		.cuptiActivityRegisterCallbacks = f_register,
		.cuptiActivitySetAttribute = f_set_attribute,
		.cuptiActivityEnable = f_enable,
		.cuptiActivityDisable = f_disable,
		.cuptiActivityFlushAll = f_flush,
		.cuptiActivityGetNumDroppedRecords = f_dropped,
		.cuptiActivityGetNextRecord = cuptiActivityGetNextRecord,
		.cuptiGetStreamIdEx = f_stream_id,
		.cuptiGetContextId = f_context_id,
		.cuptiGetDeviceId = f_device_id,
	};
}

/* ---- buffers of records ---------------------------------------------------------- */

struct buf {
	uint8_t *b;
	size_t size, len;
};

static int
buf_new(struct buf *b)
{
	size_t maxr;
	b->len = 0;
	fk_req(&b->b, &b->size, &maxr);
	return b->b != NULL;
}

static void
put(struct buf *b, const void *rec, size_t n)
{
	if (b->len + n > b->size)
		abort();
	memcpy(b->b + b->len, rec, n);
	b->len += n;
}

/* Into the queue: delivered at the next flush. */
static void
queue(struct buf *b)
{
	if (fk->nq == MAXQ)
		abort();
	fk->q[fk->nq].buf = b->b;
	fk->q[fk->nq].size = b->size;
	fk->q[fk->nq].valid = b->len;
	fk->nq++;
}

static int64_t
gettid_(void)
{
	return syscall(SYS_gettid);
}

static void
put_api(struct buf *b, uint32_t cbid, uint32_t tid, uint32_t corr, int64_t start,
        int64_t end)
{
	CUpti_ActivityAPI a;
	memset(&a, 0, sizeof(a));
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = cbid;
	a.processId = (uint32_t)getpid();
	a.threadId = tid;
	a.correlationId = corr;
	a.start = (uint64_t)start;
	a.end = (uint64_t)end;
	put(b, &a, sizeof(a));
}

static void
put_kernel(struct buf *b, const char *name, uint32_t corr, int64_t start, int64_t end)
{
	CUpti_ActivityKernel10 k;
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.name = name;
	k.deviceId = 0;
	k.contextId = 1;
	k.streamId = 13;
	k.correlationId = corr;
	k.start = (uint64_t)start;
	k.end = (uint64_t)end;
	k.gridX = 40;
	k.gridY = k.gridZ = 1;
	k.blockX = 256;
	k.blockY = k.blockZ = 1;
	put(b, &k, sizeof(k));
}

static void
put_device(struct buf *b)
{
	CUpti_ActivityDevice5 d;
	memset(&d, 0, sizeof(d));
	d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
	d.id = 0;
	d.name = strdup("NVIDIA H100 80GB HBM3"); /* the client's to free */
	d.numMultiprocessors = 132;
	d.globalMemorySize = 85520809984ull;
	d.computeCapabilityMajor = 9;
	put(b, &d, sizeof(d));
	CUpti_ActivityContext3 x;
	memset(&x, 0, sizeof(x));
	x.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
	x.contextId = 1;
	x.deviceId = 0;
	x.nullStreamId = 7;
	put(b, &x, sizeof(x));
}

/* ---- reading a spool back ---------------------------------------------------------- */

struct ev {
	unsigned kind;
	int64_t ts, dur;
	char name[96];
	unsigned track_type;
	int64_t tid;
	uint64_t stream, corr, count;
	char device[64];
	char stream_name[32];
	char reason[160];
};

struct spool_read {
	struct ev *ev;
	size_t n;
	int ended;
	int devices;             /* DEVICE definitions read */
	char meta[16][2][400];
	int nmeta;
};

static void
read_file(const char *path, struct spool_read *s)
{
	memset(s, 0, sizeof(*s));
	struct tk_reader *r = tk_reader_new();
	if (tk_reader_open_path(r, path) != TK_OK) {
		tk_reader_free(r);
		return;
	}
	struct tk_record rec;
	size_t cap = 0;
	int rc;
	while ((rc = tk_reader_next(r, &rec)) == TK_OK) {
		if (rec.type == TK_REC_META && s->nmeta < 16) {
			snprintf(s->meta[s->nmeta][0], 400, "%s", rec.u.meta->key);
			snprintf(s->meta[s->nmeta++][1], 400, "%s", rec.u.meta->value);
		}
		s->devices += rec.type == TK_REC_DEVICE;
		if (rec.type != TK_REC_EVENT)
			continue;
		const struct tk_event *e = rec.u.event;
		if (s->n == cap) {
			cap = cap ? cap * 2 : 64;
			s->ev = realloc(s->ev, cap * sizeof(*s->ev));
		}
		struct ev *x = &s->ev[s->n++];
		memset(x, 0, sizeof(*x));
		x->kind = e->kind;
		x->ts = e->ts;
		x->dur = e->dur;
		snprintf(x->name, sizeof(x->name), "%s", e->name);
		x->track_type = e->trk->type;
		if (e->trk->type == TK_TRACK_THREAD)
			x->tid = e->trk->u.thread.tid;
		if (e->trk->type == TK_TRACK_STREAM) {
			x->stream = e->trk->u.stream.stream;
			snprintf(x->stream_name, sizeof(x->stream_name), "%s",
			         e->trk->u.stream.name);
			const struct tk_device *d = tk_reader_device(r, e->trk->u.stream.device);
			if (d)
				snprintf(x->device, sizeof(x->device), "%s", d->name);
		}
		if (e->kind == TK_KERNEL)
			x->corr = e->u.kernel.correlation;
		if (e->kind == TK_API)
			x->corr = e->u.api.correlation;
		if (e->kind == TK_DROPPED) {
			x->count = e->u.dropped.count;
			snprintf(x->reason, sizeof(x->reason), "%s", e->u.dropped.reason);
		}
	}
	s->ended = rc == TK_EOF;
	tk_reader_free(r);
}

/* The latest spool of process `pid`. */
static int
read_spool(long pid, struct spool_read *s)
{
	char path[1024];
	memset(s, 0, sizeof(*s));
	if (latest_spool(spool, pid, path, sizeof(path)) < 0)
		return -1;
	read_file(path, s);
	return 0;
}

static size_t
count(const struct spool_read *s, unsigned kind)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n; i++)
		n += s->ev[i].kind == kind;
	return n;
}

static const struct ev *
find(const struct spool_read *s, unsigned kind, size_t nth)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->ev[i].kind == kind && nth-- == 0)
			return &s->ev[i];
	return NULL;
}

static const char *
meta(const struct spool_read *s, const char *key)
{
	const char *v = NULL;
	for (int i = 0; i < s->nmeta; i++)
		if (!strcmp(s->meta[i][0], key))
			v = s->meta[i][1];
	return v;
}

static int
starts(const char *s, const char *prefix)
{
	return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* A flush interval's work: the hooks (CUPTI's flush), the round. */
static void
flush_round(void)
{
	tki_run_flush_hooks(0);
	tki_flusher_round(0);
}

/* ---- running a scenario in a child --------------------------------------------------- */

/* Run fn in a child; its checks fail the test; returns its pid, with its
 * wait status in *st. */
static pid_t
in_child(void (*fn)(void), int *st)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		tap_current_failed = 0;
		if (tki_init() != 0) {
			fprintf(stderr, "# the child does not record\n");
			_exit(3);
		}
		fn();
		fflush(NULL);
		exit(tap_current_failed ? 1 : 0); /* atexit, destructors */
	}
	waitpid(pid, st, 0);
	return pid;
}

static pid_t
child_ok(void (*fn)(void))
{
	int st;
	pid_t pid = in_child(fn, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return pid;
}

static int
attach(void)
{
	return tki_cuda_attach(&fake_api, TKI_CUDA_ALL);
}

/* ---- scenarios ------------------------------------------------------------------------ */

static uint32_t helper_tid;
static pthread_t helper_pthread;

static void *
helper(void *arg)
{
	(void)arg;
	helper_tid = (uint32_t)gettid_();
	helper_pthread = pthread_self();
	return NULL;
}

static void
records_and_flushes(void)
{
	CHECK_EQ_INT(attach(), 1);
	CHECK_EQ_INT(tki_cuda_state(), TKI_CUDA_STATE_ON);
	/* the order and what was asked */
	CHECK_EQ_INT(fk->subscribes, 1);
	CHECK_EQ_INT(fk->timestamp_cbs, 1);
	CHECK_EQ_INT(fk->thread_types, 1);
	CHECK_EQ_INT(fk->registered, 1);
	CHECK_EQ_INT(fk->zeroed, 1);
	CHECK_EQ_INT(fk->reset_cb, 1);
	CHECK_EQ_INT(fk->domains[CUPTI_CB_DOMAIN_STATE], 1);
	/* every API call's callback, to count what it issues (for what a
	 * SIGKILL keeps CUPTI from delivering) */
	CHECK_EQ_INT(fk->domains[CUPTI_CB_DOMAIN_RUNTIME_API], 1);
	CHECK_EQ_INT(fk->domains[CUPTI_CB_DOMAIN_DRIVER_API], 1);
	static const CUpti_ActivityKind on[] = {
		CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
		CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
		CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_RUNTIME,
		CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API,
		CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_OVERHEAD,
		CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT,
		CUPTI_ACTIVITY_KIND_STREAM,
	};
	for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++)
		CHECK(fk->enabled[on[i]]);
	CHECK(!fk->enabled[CUPTI_ACTIVITY_KIND_KERNEL]); /* it serialises kernels */
	CHECK(!fk->enabled[CUPTI_ACTIVITY_KIND_MEMORY]);
	CHECK_EQ_INT(fk->enables, (int)(sizeof(on) / sizeof(on[0])));

	/* a launch on another thread: its kernel tid names it */
	pthread_t th;
	pthread_create(&th, NULL, helper, NULL);
	pthread_join(th, NULL);
	struct buf b;
	CHECK(buf_new(&b));
	CHECK_EQ_INT(b.size, 8u << 20);
	int64_t t = tki_now() - 1000000;
	put_device(&b);
	put_api(&b, 211, helper_tid, 42, t, t + 5000);
	put_kernel(&b, "_Z6kernelPfi", 42, t + 7000, t + 9000);
	queue(&b);
	fk->dropped = 5;
	int64_t before = tki_now();
	flush_round();
	int64_t after = tki_now();
	CHECK_EQ_INT(fk->flush0, 1);
	CHECK_EQ_INT(fk->forced, 0);
	/* the watermark waits for GPU records: ten flush intervals */
	CHECK(tki_holds_min() >= before - 10 * tki_cfg.flush_ns);
	CHECK(tki_holds_min() <= after - 10 * tki_cfg.flush_ns);

	struct spool_read s;
	read_spool(getpid(), &s);
	const struct ev *a = find(&s, TK_API, 0), *k = find(&s, TK_KERNEL, 0);
	CHECK(a && k);
	if (a && k) {
		CHECK_STR(a->name, "cudaLaunchKernel");
		CHECK_EQ_INT(a->track_type, TK_TRACK_THREAD);
		CHECK_EQ_INT(a->tid, helper_tid);
		CHECK_EQ_INT(a->corr, 42);
		CHECK_EQ_INT(k->corr, 42);
		/* CUPTI's clock is CLOCK_REALTIME: the times as given */
		CHECK_EQ_INT(a->ts, t);
		CHECK_EQ_INT(a->dur, 5000);
		CHECK_EQ_INT(k->ts, t + 7000);
		CHECK_EQ_INT(k->track_type, TK_TRACK_STREAM);
		CHECK_EQ_INT(k->stream, 13);
		CHECK_STR(k->device, "NVIDIA H100 80GB HBM3");
	}
	const struct ev *d = find(&s, TK_DROPPED, 0);
	CHECK(d && d->count == 5 && !strcmp(d->reason, "CUPTI had no buffer space"));
	const char *m = meta(&s, "cuda");
	char want[64];
	snprintf(want, sizeof(want), "recorded (pid %ld): kernel,memcpy,", (long)getpid());
	CHECK(starts(m, want));
	CHECK(m && strstr(m, "clock CLOCK_REALTIME (timestamp callback)"));
	/* the status page counts what the converter wrote */
	CHECK_EQ_INT(tki_status_produced(tki_status), s.n);
	CHECK_EQ_INT(tki_status->cuda, TKI_CUDA_STATE_ON);
	free(s.ev);

	/* cudaDeviceReset: its records are delivered first */
	CUpti_CallbackData cd;
	memset(&cd, 0, sizeof(cd));
	cd.callbackSite = CUPTI_API_ENTER;
	fk_cb(NULL, CUPTI_CB_DOMAIN_RUNTIME_API,
	      CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020, &cd);
	CHECK_EQ_INT(fk->forced, 1);
	/* a CUPTI error report lands in the metadata */
	CUpti_StateData sd;
	memset(&sd, 0, sizeof(sd));
	sd.notification.result = CUPTI_ERROR_UNKNOWN;
	sd.notification.message = "device lost";
	fk_cb(NULL, CUPTI_CB_DOMAIN_STATE, CUPTI_CBID_STATE_FATAL_ERROR, &sd);

	/* one more buffer, left for the exit to deliver */
	CHECK(buf_new(&b));
	put_api(&b, 211, helper_tid, 43, t + 20000, t + 25000);
	queue(&b);
}

/* A context created: CUPTI's resource callback gives its NULL stream
 * before CUPTI's CONTEXT record, which CUPTI 13 sends after the work in
 * it.  A kernel on the NULL stream is on a track named "default" from
 * its first chunk, and memory CUPTI gives no stream lands there, not on
 * a "stream 0".  When CUPTI cannot name the context, neither happens. */
static void
context_from_callback(void)
{
	CHECK_EQ_INT(attach(), 1);
	CUpti_ResourceData rd;
	memset(&rd, 0, sizeof(rd));
	rd.context = (CUcontext)(uintptr_t)0xc0;
	fk_cb(NULL, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &rd);
	struct buf b;
	CHECK(buf_new(&b));
	int64_t t = tki_now();
	/* the device's record comes first, as CUPTI sends it: defined once,
	 * not first as a placeholder for the context */
	CUpti_ActivityDevice5 d;
	memset(&d, 0, sizeof(d));
	d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
	d.name = strdup("NVIDIA H100 80GB HBM3");
	put(&b, &d, sizeof(d));
	CUpti_ActivityKernel10 k;
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.name = "k";
	k.contextId = 1;
	k.streamId = 7;
	k.correlationId = 5;
	k.start = (uint64_t)t;
	k.end = (uint64_t)t + 100;
	put(&b, &k, sizeof(k));
	CUpti_ActivityMemory4 m;
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
	m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.address = 0x7f0000000000ull;
	m.bytes = 4096;
	m.timestamp = (uint64_t)t + 200;
	m.contextId = 1;
	m.streamId = 0; /* static memory: no stream, as CUDA 13.0 says it */
	put(&b, &m, sizeof(m));
	queue(&b);
	flush_round();
	struct spool_read s;
	read_spool(getpid(), &s);
	const struct ev *ke = find(&s, TK_KERNEL, 0), *me = find(&s, TK_MEMORY, 0);
	CHECK(ke && me);
	if (ke && me) {
		CHECK_EQ_INT(ke->stream, 7);
		CHECK_EQ_INT(me->stream, fk->no_context_ids ? 0 : 7);
		CHECK_STR(ke->stream_name, fk->no_context_ids ? "" : "default");
		CHECK_STR(ke->device, "NVIDIA H100 80GB HBM3");
	}
	CHECK_EQ_INT(s.devices, 1);
	free(s.ev);
}

TEST(context_known_at_creation)
{
	fake_reset();
	child_ok(context_from_callback);
	CHECK_EQ_INT(fk->context_cb, 1);
	fake_reset();
	fk->no_context_ids = 1;
	child_ok(context_from_callback);
}

TEST(attach_record_flush_exit)
{
	fake_reset();
	pid_t pid = child_ok(records_and_flushes);
	/* exit: a forced flush from the atexit handler, none from the
	 * destructor after it; activity collection off first */
	CHECK_EQ_INT(fk->forced, 2);
	CHECK_EQ_INT(fk->flush0, 1);
	CHECK(!fk->enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]);
	struct spool_read s;
	CHECK(read_spool(pid, &s) == 0);
	CHECK(s.ended);
	CHECK_EQ_INT(count(&s, TK_API), 2);
	CHECK_EQ_INT(count(&s, TK_KERNEL), 1);
	const char *m = meta(&s, "cuda.stats");
	char want[160];
	snprintf(want, sizeof(want),
	         "pid %ld: 5 records, 4 events, 5 dropped by CUPTI, 2 buffers (0 refused: "
	         "pool full), 0 late", (long)pid);
	CHECK(starts(m, want));
	if (!starts(m, want))
		fprintf(stderr, "# got: %s\n", m ? m : "(none)");
	m = meta(&s, "cuda.errors");
	CHECK(m && !strcmp(m, "fatal: CUPTI_ERROR_UNKNOWN (999): device lost"));
	free(s.ev);
}

static void
killed_by_signal(void)
{
	CHECK_EQ_INT(attach(), 1);
	struct buf b;
	CHECK(buf_new(&b));
	int64_t t = tki_now();
	put_api(&b, 211, (uint32_t)gettid_(), 7, t, t + 100);
	queue(&b);
	if (tap_current_failed)
		exit(1);
	raise(SIGTERM); /* the default action: the library flushes first */
}

TEST(fatal_signal_flushes)
{
	fake_reset();
	int st;
	pid_t pid = in_child(killed_by_signal, &st);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	CHECK_EQ_INT(fk->forced, 1);
	struct spool_read s;
	CHECK(read_spool(pid, &s) == 0);
	CHECK(s.ended);
	CHECK_EQ_INT(count(&s, TK_API), 1);
	free(s.ev);
}

static void
subscribe_fails(void)
{
	CHECK_EQ_INT(attach(), 0);
	CHECK_EQ_INT(tki_cuda_state(), TKI_CUDA_STATE_FAILED);
	CHECK_EQ_INT(tki_status->cuda, TKI_CUDA_STATE_FAILED);
	CHECK(strlen((const char *)tki_status->cuda_note) > 10);
	flush_round(); /* no CUPTI call */
}

/* Subscribing fails: the trace and the status page say why, and CUPTI
 * is not asked for anything else. */
static void
refused_by(CUptiResult rc, const char *other, const char *why)
{
	fake_reset();
	fk->subscribe_rc = rc;
	snprintf(fk->other, sizeof(fk->other), "%s", other);
	pid_t pid = child_ok(subscribe_fails);
	CHECK_EQ_INT(fk->registered, 0);
	CHECK_EQ_INT(fk->enables, 0);
	CHECK_EQ_INT(fk->flush0 + fk->forced, 0);
	struct spool_read s;
	CHECK(read_spool(pid, &s) == 0);
	char want[400];
	snprintf(want, sizeof(want), "not recorded (pid %ld): %s", (long)pid, why);
	CHECK_STR(meta(&s, "cuda"), want);
	CHECK(s.ended);
	free(s.ev);
}

TEST(another_subscriber)
{
	refused_by(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "CUPTI for kineto",
	           "another CUPTI client is attached (CUPTI for kineto): the PyTorch "
	           "profiler, Nsight Systems or Compute, cuda-gdb or compute-sanitizer; "
	           "the program runs on unrecorded");
}

TEST(cupti_cannot_attach)
{
	refused_by(CUPTI_ERROR_UNKNOWN, "",
	           "CUPTI could not attach: cuptiSubscribe: CUPTI_ERROR_UNKNOWN (999)");
	refused_by(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, "",
	           "CUPTI could not attach: cuptiSubscribe: "
	           "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (35)");
}

static void
wrong_version(void)
{
	CHECK_EQ_INT(attach(), 0);
}

TEST(libcupti_of_another_version)
{
	fake_reset();
	fk->version = 130200;
	pid_t pid = child_ok(wrong_version);
	CHECK_EQ_INT(fk->subscribes, 0);
	struct spool_read s;
	read_spool(pid, &s);
	char want[200];
	snprintf(want, sizeof(want), "not recorded (pid %ld): libcupti API version 130200, "
	         "built for %d: its records would be misread", (long)pid, CUPTI_API_VERSION);
	CHECK_STR(meta(&s, "cuda"), want);
	free(s.ev);
}

static void
enable_fails(void)
{
	CHECK_EQ_INT(attach(), 0);
}

static void
memory_unsupported(void)
{
	CHECK_EQ_INT(attach(), 1);
}

/* CUPTI refuses every kind: not recorded, and CUPTI is left alone; it
 * refuses one: recorded, and the trace says which is missing. */
TEST(kinds_refused)
{
	fake_reset();
	for (int k = 0; k < 64; k++)
		fk->enable_rc[k] = CUPTI_ERROR_UNKNOWN;
	pid_t pid = child_ok(enable_fails);
	CHECK_EQ_INT(fk->unsubscribes, 1);
	struct spool_read s;
	read_spool(pid, &s);
	CHECK(starts(meta(&s, "cuda"), "not recorded (pid "));
	CHECK(meta(&s, "cuda") && strstr(meta(&s, "cuda"),
	      "): CONCURRENT_KERNEL: CUPTI_ERROR_UNKNOWN (999); MEMCPY: "));
	free(s.ev);

	fake_reset();
	fk->enable_rc[CUPTI_ACTIVITY_KIND_MEMORY2] = CUPTI_ERROR_NOT_SUPPORTED;
	pid = child_ok(memory_unsupported);
	CHECK_EQ_INT(fk->unsubscribes, 0);
	read_spool(pid, &s);
	CHECK(starts(meta(&s, "cuda"), "recorded (pid "));
	CHECK_STR(meta(&s, "cuda.errors"), "MEMORY2: CUPTI_ERROR_NOT_SUPPORTED (27)");
	free(s.ev);
}

/* A thread's first API call, as CUPTI's callback sees it. */
static void *
api_caller(void *arg)
{
	(void)arg;
	CUpti_CallbackData cd;
	memset(&cd, 0, sizeof(cd));
	cd.callbackSite = CUPTI_API_ENTER;
	fk_cb(NULL, CUPTI_CB_DOMAIN_RUNTIME_API, 211, &cd);
	fk_cb(NULL, CUPTI_CB_DOMAIN_RUNTIME_API, 211, &cd);
	helper(NULL);
	return NULL;
}

/* Without kernel thread ids from CUPTI: pthread ids, mapped on each
 * thread's first API call (CUPTI's callbacks). */
static void
thread_map(void)
{
	CHECK_EQ_INT(attach(), 1);
	CHECK_EQ_INT(fk->domains[CUPTI_CB_DOMAIN_RUNTIME_API], 1);
	CHECK_EQ_INT(fk->domains[CUPTI_CB_DOMAIN_DRIVER_API], 1);
	CHECK_EQ_INT(fk->reset_cb, 0);
	pthread_t th;
	pthread_create(&th, NULL, api_caller, NULL);
	pthread_join(th, NULL);
	struct buf b;
	CHECK(buf_new(&b));
	int64_t t = tki_now();
	/* this thread attached; the other made calls; a third is unknown */
	put_api(&b, 211, (uint32_t)(uintptr_t)pthread_self(), 1, t, t + 10);
	put_api(&b, 211, (uint32_t)(uintptr_t)helper_pthread, 2, t + 20, t + 30);
	put_api(&b, 211, 0xdeadbeefu, 3, t + 40, t + 50);
	queue(&b);
	flush_round();
	struct spool_read s;
	read_spool(getpid(), &s);
	const struct ev *a = find(&s, TK_API, 0), *h = find(&s, TK_API, 1),
	                *u = find(&s, TK_API, 2);
	CHECK(a && a->track_type == TK_TRACK_THREAD && a->tid == gettid_());
	CHECK(h && h->track_type == TK_TRACK_THREAD && h->tid == helper_tid);
	CHECK(u && u->track_type == TK_TRACK_PROCESS); /* unknown: the process */
	CHECK(strstr(meta(&s, "cuda"), "; pthread ids mapped to kernel tids "
	             "(cuptiSetThreadIdType: CUPTI_ERROR_NOT_SUPPORTED)") != NULL);
	free(s.ev);
}

/* An API call's callback, entering or leaving. */
static void
api_call(CUpti_CallbackDomain d, uint32_t cbid, CUpti_ApiCallbackSite site)
{
	CUpti_CallbackData cd;
	memset(&cd, 0, sizeof(cd));
	cd.callbackSite = site;
	fk_cb(NULL, d, cbid, &cd);
}

/* Recording kernels and memsets only (no API records, no filter): only
 * the callbacks of calls whose names say they launch a kernel (not a
 * host function) or set memory are enabled, and each such call counts
 * one record issued, a driver call inside a runtime call not again. */
static void
counted_by_name(void)
{
	const CUpti_CallbackDomain R = CUPTI_CB_DOMAIN_RUNTIME_API,
	                           D = CUPTI_CB_DOMAIN_DRIVER_API;
	CHECK_EQ_INT(tki_cuda_attach(&fake_api, TKI_CUDA_KERNEL | TKI_CUDA_MEMSET), 1);
	CHECK_EQ_INT(fk->domains[R], 0);
	CHECK_EQ_INT(fk->domains[D], 0);
	int on[] = { 211, 51 }, off[] = { 52, 31, 60, 61 };
	int don[] = { 10, 13, 15 }, doff[] = { 11, 12, 14 };
	for (size_t i = 0; i < 2; i++)
		CHECK_EQ_INT(fk->cb_on[0][on[i]], 1);
	for (size_t i = 0; i < 4; i++)
		CHECK_EQ_INT(fk->cb_on[0][off[i]], 0);
	for (size_t i = 0; i < 3; i++)
		CHECK_EQ_INT(fk->cb_on[1][don[i]], 1);
	for (size_t i = 0; i < 3; i++)
		CHECK_EQ_INT(fk->cb_on[1][doff[i]], 0);

	api_call(R, 211, CUPTI_API_ENTER);     /* a runtime launch ... */
	api_call(D, 10, CUPTI_API_ENTER);      /* ... and its driver call */
	api_call(D, 10, CUPTI_API_EXIT);
	api_call(R, 211, CUPTI_API_EXIT);
	api_call(D, 15, CUPTI_API_ENTER);      /* a driver launch alone */
	api_call(D, 15, CUPTI_API_EXIT);
	api_call(D, 13, CUPTI_API_ENTER);      /* a memset */
	api_call(D, 11, CUPTI_API_ENTER);      /* a host function: no kernel */
	api_call(R, 52, CUPTI_API_ENTER);
	api_call(R, 52, CUPTI_API_EXIT);
	api_call(D, 12, CUPTI_API_ENTER);      /* a copy: not recorded */
	api_call(R, 600, CUPTI_API_ENTER);     /* past the named calls */
	api_call(R, 600, CUPTI_API_EXIT);
	api_call(D, 2000, CUPTI_API_ENTER);
	uint64_t issued[TKI_CUDA_COUNTED], delivered[TKI_CUDA_COUNTED];
	CHECK_EQ_INT(tki_buf_cuda_counts(issued, delivered), 0);
	CHECK_EQ_INT(issued[TKI_CUDA_COUNT_KERNEL], 2);
	CHECK_EQ_INT(issued[TKI_CUDA_COUNT_MEMSET], 1);
	CHECK_EQ_INT(issued[TKI_CUDA_COUNT_MEMCPY], 0);
	CHECK_EQ_INT(issued[TKI_CUDA_COUNT_RUNTIME], 0);
	CHECK_EQ_INT(issued[TKI_CUDA_COUNT_DRIVER], 0);
}

TEST(issued_counted_by_call_name)
{
	fake_reset();
	fk->work_names = 1;
	child_ok(counted_by_name);
}

/* The size of CUPTI's buffers: TRACEKIT_CUDA_BUFFER_BYTES when it is a
 * number from 64 KiB to 1 GiB (rounded down to 8 bytes), else 8 MiB. */
static size_t buffer_size_want;

static void
buffer_size_is(void)
{
	CHECK_EQ_INT(attach(), 1);
	struct buf b;
	CHECK(buf_new(&b));
	CHECK_EQ_INT(b.size, buffer_size_want);
	queue(&b); /* given back, empty, at exit */
}

TEST(buffer_size_from_the_environment)
{
	static const struct {
		const char *value;
		size_t want;
	} cases[] = {
		{ "1048581", 1048576 }, { "65536", 65536 },
		{ "65535", 8u << 20 }, { "1073741825", 8u << 20 }, { "12x", 8u << 20 },
		{ "", 8u << 20 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fake_reset();
		setenv(TKI_ENV_CUDA_BUFFER, cases[i].value, 1);
		buffer_size_want = cases[i].want;
		child_ok(buffer_size_is);
	}
	unsetenv(TKI_ENV_CUDA_BUFFER);
}

TEST(pthread_ids_mapped)
{
	fake_reset();
	fk->thread_type_rc = CUPTI_ERROR_NOT_SUPPORTED;
	child_ok(thread_map);
}

static int64_t skew_seen;

static void
clock_offset(void)
{
	CHECK_EQ_INT(attach(), 1);
	struct buf b;
	CHECK(buf_new(&b));
	uint64_t now;
	f_timestamp(&now);
	put_api(&b, 211, (uint32_t)gettid_(), 1, (int64_t)now, (int64_t)now + 10);
	queue(&b);
	flush_round();
	struct spool_read s;
	read_spool(getpid(), &s);
	const struct ev *a = find(&s, TK_API, 0);
	CHECK(a != NULL);
	if (a)
		skew_seen = a->ts - (int64_t)now;
	/* within the width of the measurement (two clock reads) */
	CHECK(a && llabs(skew_seen + fk->clock_skew) < 200000);
	const char *m = meta(&s, "cuda");
	if (fk->clock_skew)
		CHECK(m && strstr(m, " ns to CLOCK_REALTIME (measured at start)"));
	else
		CHECK(m && strstr(m, "clock CUPTI's own, found equal to CLOCK_REALTIME"));
	free(s.ev);
}

/* Without the timestamp callback, CUPTI's clock is measured against
 * CLOCK_REALTIME at start. */
TEST(clock_without_timestamp_callback)
{
	fake_reset();
	fk->timestamp_rc = CUPTI_ERROR_NOT_SUPPORTED;
	fk->clock_skew = -5000000000ll; /* CUPTI 5 s behind */
	child_ok(clock_offset);
	fake_reset();
	fk->timestamp_rc = CUPTI_ERROR_NOT_SUPPORTED;
	child_ok(clock_offset);
}

static void
pool(void)
{
	CHECK_EQ_INT(attach(), 1);
	struct buf b[65];
	int got = 0;
	for (int i = 0; i < 65; i++)
		got += buf_new(&b[i]);
	CHECK_EQ_INT(got, 64);
	CHECK(b[64].b == NULL && b[64].size == 0);
	CHECK_EQ_INT(b[0].size, 65536);
	/* zeroed, as CUPTI was told */
	size_t nz = 0;
	for (size_t i = 0; i < b[0].size; i++)
		nz += b[0].b[i] != 0;
	CHECK_EQ_INT(nz, 0);
	/* one back: one more can be had */
	fk_done(NULL, 0, b[0].b, b[0].size, 0);
	CHECK(buf_new(&b[64]));
	for (int i = 1; i < 65; i++)
		fk_done(NULL, 0, b[i].b, b[i].size, 0);
	struct tki_activity_counts c;
	tki_activity_counts(&c);
	CHECK_EQ_INT(c.refused, 1);
	CHECK_EQ_INT(c.buffers, 65);
}

TEST(buffer_pool_bounded)
{
	fake_reset();
	setenv(TKI_ENV_CUDA_BUFFER, "65536", 1);
	child_ok(pool);
	unsetenv(TKI_ENV_CUDA_BUFFER);
}

/* The schedule: collection from the warmup, kept events from the active
 * step -- GPU work by the step its launch call was in. */
static void
schedule(void)
{
	tki_cfg.capture = "step";
	tki_cfg.skip = 1;
	tki_cfg.warmup = 1;
	tki_cfg.active = 1;
	tki_cfg.cycles = 1;
	tki_capture_init();
	CHECK_EQ_INT(attach(), 1);
	CHECK(fk->enabled[CUPTI_ACTIVITY_KIND_DEVICE]);
	CHECK(!fk->enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]);
	int64_t t0 = tki_now();
	nvtxRangePushA("step"); /* skipped */
	nvtxRangePop();
	CHECK(!fk->enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]);
	int64_t t1 = tki_now();
	nvtxRangePushA("step"); /* warmup: collection on */
	CHECK(fk->enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]);
	int64_t t2 = tki_now();
	nvtxRangePop();
	int64_t t3 = tki_now();
	nvtxRangePushA("step"); /* active */
	int64_t t4 = tki_now();
	nvtxRangePop();
	int64_t t5 = tki_now();
	/* the schedule is over: collection off */
	CHECK(!fk->enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]);
	(void)t0;
	(void)t1;
	struct buf b;
	CHECK(buf_new(&b));
	uint32_t tid = (uint32_t)gettid_();
	put_api(&b, 211, tid, 1, t2, t2 + 1);            /* warmup: out */
	put_kernel(&b, "warmup_launched", 1, t4, t4 + 1); /* run in active: out */
	put_api(&b, 211, tid, 2, t4, t4 + 1);            /* active: in */
	put_kernel(&b, "active_launched", 2, t5 + 100, t5 + 200); /* ran after: in */
	put_kernel(&b, "unknown_in", 99, t4, t4 + 1);     /* no call: by its time */
	put_kernel(&b, "unknown_out", 98, t5 + 100, t5 + 200);
	put_api(&b, 211, tid, 3, t5 + 100, t5 + 200);    /* after: out */
	(void)t3;
	queue(&b);
	flush_round();
	struct spool_read s;
	read_spool(getpid(), &s);
	CHECK_EQ_INT(count(&s, TK_API), 1);
	CHECK_EQ_INT(count(&s, TK_KERNEL), 2);
	const struct ev *k0 = find(&s, TK_KERNEL, 0), *k1 = find(&s, TK_KERNEL, 1);
	CHECK(k0 && k1 && !strcmp(k0->name, "active_launched") &&
	      !strcmp(k1->name, "unknown_in"));
	CHECK(find(&s, TK_API, 0) && find(&s, TK_API, 0)->corr == 2);
	free(s.ev);
}

TEST(capture_schedule)
{
	fake_reset();
	child_ok(schedule);
}

static void
window_ends(void)
{
	tki_cfg.win_end = tki_now() + 50000000; /* 50 ms */
	CHECK_EQ_INT(attach(), 1);
	CHECK(fk->enabled[CUPTI_ACTIVITY_KIND_RUNTIME]);
	flush_round();
	CHECK(fk->enabled[CUPTI_ACTIVITY_KIND_RUNTIME]);
	usleep(60000);
	flush_round();
	CHECK(!fk->enabled[CUPTI_ACTIVITY_KIND_RUNTIME]);
	CHECK(fk->enabled[CUPTI_ACTIVITY_KIND_DEVICE]);
}

/* --duration: collection ends with the window. */
TEST(window_end_stops_collection)
{
	fake_reset();
	child_ok(window_ends);
}

static void
forks(void)
{
	CHECK_EQ_INT(attach(), 1);
	int flushes = fk->flush0;
	pid_t pid = fork();
	if (pid == 0) {
		/* the child never calls CUPTI: not its hooks, not at exit */
		tki_run_flush_hooks(0);
		exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ_INT(fk->flush0, flushes);
	CHECK_EQ_INT(fk->forced, 0);
	flush_round();
	CHECK_EQ_INT(fk->flush0, flushes + 1);
}

TEST(fork_child_leaves_cupti_alone)
{
	fake_reset();
	child_ok(forks);
	CHECK_EQ_INT(fk->forced, 1); /* the parent's exit only */
}

/* The spool is opened for each write (spool.c): a program that closes
 * every descriptor between two buffers changes nothing, the kernels of
 * both buffers are in one scope with one device definition. */
static void
holds_no_spool_descriptor(void)
{
	CHECK_EQ_INT(attach(), 1);
	struct buf b;
	CHECK(buf_new(&b));
	int64_t t = tki_now();
	put_device(&b);
	put_kernel(&b, "before", 1, t, t + 10);
	queue(&b);
	flush_round();
	DIR *d = opendir("/proc/self/fd");
	int fds[256], n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)) && n < 256) {
		int fd = atoi(de->d_name);
		if (fd > 2 && fd != dirfd(d))
			fds[n++] = fd;
	}
	if (d)
		closedir(d);
	for (int i = 0; i < n; i++) {
		char link[64], target[1024];
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fds[i]);
		ssize_t k = readlink(link, target, sizeof(target) - 1);
		target[k > 0 ? k : 0] = 0;
		CHECK(!strstr(target, spool));
	}
	CHECK(buf_new(&b));
	put_kernel(&b, "after", 2, t + 20, t + 30);
	queue(&b);
	flush_round();
	struct spool_read s;
	read_spool(getpid(), &s);
	CHECK_EQ_INT(count(&s, TK_KERNEL), 2);
	const struct ev *k = find(&s, TK_KERNEL, 1);
	CHECK(k && !strcmp(k->name, "after") && !strcmp(k->device, "NVIDIA H100 80GB HBM3"));
	int cudas = 0;
	for (int i = 0; i < s.nmeta; i++)
		cudas += !strcmp(s.meta[i][0], "cuda");
	CHECK_EQ_INT(cudas, 1);
	free(s.ev);
}

TEST(spool_descriptor_not_held)
{
	fake_reset();
	child_ok(holds_no_spool_descriptor);
}

/* The watermark waits for the longest delay seen, twice over, once it
 * exceeds half the lag; records older than the hold are counted late. */
static void
holds(void)
{
	CHECK_EQ_INT(attach(), 1);
	int64_t lag = 10 * tki_cfg.flush_ns;
	int64_t old = tki_now() - lag; /* a record delivered a lag late */
	struct buf b;
	CHECK(buf_new(&b));
	put_api(&b, 211, (uint32_t)gettid_(), 1, old, old + 10);
	queue(&b);
	int64_t before = tki_now();
	flush_round();
	int64_t h = tki_holds_min();
	CHECK(h <= before - 2 * lag && h > before - 2 * lag - 2000000000);
	CHECK(buf_new(&b));
	put_api(&b, 211, (uint32_t)gettid_(), 2, h - 1, h);
	queue(&b);
	flush_round();
	struct tki_activity_counts c;
	tki_activity_counts(&c);
	CHECK_EQ_INT(c.late, 1);
	CHECK(c.max_delay >= lag);
}

TEST(watermark_hold_follows_delays)
{
	fake_reset();
	child_ok(holds);
}

/* --cuda lists, shared with trace-record. */
TEST(kind_lists)
{
	unsigned k;
	const char *bad;
	size_t len;
	CHECK_EQ_INT(tki_cuda_parse("kernel,memcpy", &k, &bad, &len), 0);
	CHECK_EQ_INT(k, TKI_CUDA_KERNEL | TKI_CUDA_MEMCPY);
	CHECK_EQ_INT(tki_cuda_parse("api", &k, NULL, NULL), 0);
	CHECK_EQ_INT(k, TKI_CUDA_RUNTIME | TKI_CUDA_DRIVER);
	CHECK_EQ_INT(tki_cuda_parse("all", &k, NULL, NULL), 0);
	CHECK_EQ_INT(k, TKI_CUDA_ALL);
	CHECK_EQ_INT(tki_cuda_parse("kernel,none", &k, NULL, NULL), 0);
	CHECK_EQ_INT(k, 0);
	CHECK_EQ_INT(tki_cuda_parse("kernel,kernels,sync", &k, &bad, &len), -1);
	CHECK(len == 7 && !strncmp(bad, "kernels", 7));
	CHECK_EQ_INT(tki_cuda_parse("", &k, &bad, &len), -1);
	CHECK_EQ_INT(tki_cuda_parse("sync,", &k, &bad, &len), -1);
	char b[128];
	tki_cuda_format(TKI_CUDA_ALL, b, sizeof(b));
	CHECK_STR(b, "kernel,memcpy,memset,memory,runtime,driver,sync,overhead");
	tki_cuda_format(TKI_CUDA_SYNC | TKI_CUDA_KERNEL, b, sizeof(b));
	CHECK_STR(b, "kernel,sync");
	tki_cuda_format(0, b, sizeof(b));
	CHECK_STR(b, "none");
}

/* ---- the real entry point and the real libcupti ------------------------------------- */

static void
real_entry(void)
{
	/* the driver's call: libcupti loads (the test links it), and with
	 * no CUDA driver on this machine it refuses to attach */
	CHECK_EQ_INT(InitializeInjection(), 0);
	CHECK_EQ_INT(tki_cuda_state(), TKI_CUDA_STATE_FAILED);
	/* once per process */
	CHECK_EQ_INT(InitializeInjection(), 0);
}

static void
entry_none(void)
{
	setenv(TKI_ENV_CUDA, "none", 1);
	CHECK_EQ_INT(InitializeInjection(), 0);
}

static void
entry_bad_list(void)
{
	setenv(TKI_ENV_CUDA, "kernels", 1);
	CHECK_EQ_INT(InitializeInjection(), 0);
}

TEST(initialize_injection)
{
	struct tki_cupti api;
	char why[512];
	CHECK_EQ_INT(tki_cupti_load(&api, why, sizeof(why)), 0);
	uint32_t v = 0;
	CHECK(api.cuptiGetVersion && api.cuptiGetVersion(&v) == CUPTI_SUCCESS &&
	      v == CUPTI_API_VERSION);

	pid_t pid = child_ok(entry_none);
	struct spool_read s;
	read_spool(pid, &s);
	char want[300];
	snprintf(want, sizeof(want), "not recorded (pid %ld): --cuda=none", (long)pid);
	CHECK_STR(meta(&s, "cuda"), want);
	free(s.ev);
	pid = child_ok(entry_bad_list);
	read_spool(pid, &s);
	CHECK(meta(&s, "cuda") && strstr(meta(&s, "cuda"), "TRACEKIT_CUDA is not a list"));
	free(s.ev);

	/* what a machine without a driver says; with one, CUPTI attaches */
	int st;
	pid = in_child(real_entry, &st);
	read_spool(pid, &s);
	const char *m = meta(&s, "cuda");
	if (m && starts(m, "recorded")) {
		printf("# a CUDA driver is here: CUPTI attached for real\n");
	} else {
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		snprintf(want, sizeof(want), "not recorded (pid %ld): CUPTI could not attach: "
		         "cuptiSubscribe: CUPTI_ERROR_UNKNOWN (999)", (long)pid);
		CHECK_STR(m, want);
	}
	free(s.ev);
}

static void
remove_spool(void)
{
	DIR *d = opendir(spool);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	rmdir(spool);
}

int
main(void)
{
	if (!cuptiActivityGetNextRecord) {
		printf("ok 1 # SKIP libcupti could not be linked: no buffer walk\n1..1\n");
		return 0;
	}
	fk = mmap(NULL, sizeof(*fk), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
	          -1, 0);
	if (fk == MAP_FAILED)
		return 1;
	/* A process not started by trace-record: InitializeInjection is a
	 * no-op (a child, before this one records). */
	unsetenv(TKI_ENV_SPOOL);
	int st;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		_exit(InitializeInjection() == 0 && tki_cuda_state() == TKI_CUDA_STATE_NONE ? 0 : 1);
	waitpid(pid, &st, 0);

	strcpy(spool, "/tmp/tracekit-test-XXXXXX");
	if (!mkdtemp(spool))
		return 1;
	char self[32];
	snprintf(self, sizeof(self), "%ld", (long)getpid());
	setenv(TKI_ENV_SPOOL, spool, 1);
	setenv(TKI_ENV_RECORDER, self, 1);
	setenv(TKI_ENV_FLUSH, "60000000000", 1); /* rounds when asked */
	unsetenv(TKI_ENV_CUDA);
	unsetenv(TKI_ENV_CUPTI);
	unsetenv(TKI_ENV_CUDA_BUFFER);
	unsetenv("NVTX_INJECTION64_PATH");
	InitializeInjectionNvtx2_fnptr = InitializeInjectionNvtx2;
	if (tki_init() != 0)
		return 1;
	/* the demangler is the program's: a C++ program has libstdc++ */
	dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);

	tap_current_failed = !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	tap_count++;
	tap_failed += tap_current_failed;
	printf("%sok %d - not_started_by_trace_record\n", tap_current_failed ? "not " : "",
	       tap_count);
	RUN(kind_lists);
	RUN(attach_record_flush_exit);
	RUN(context_known_at_creation);
	RUN(fatal_signal_flushes);
	RUN(another_subscriber);
	RUN(cupti_cannot_attach);
	RUN(libcupti_of_another_version);
	RUN(kinds_refused);
	RUN(pthread_ids_mapped);
	RUN(issued_counted_by_call_name);
	RUN(buffer_size_from_the_environment);
	RUN(clock_without_timestamp_callback);
	RUN(buffer_pool_bounded);
	RUN(capture_schedule);
	RUN(window_end_stops_collection);
	RUN(fork_child_leaves_cupti_alone);
	RUN(spool_descriptor_not_held);
	RUN(watermark_hold_follows_delays);
	RUN(initialize_injection);
	tki_flusher_finish();
	remove_spool();
	return tap_done();
}

#endif
