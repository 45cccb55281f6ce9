/* SPDX-License-Identifier: MIT */
/*
 * libfake_cupti.so: a stand-in for libcupti, for end-to-end tests of
 * GPU recording on machines without a GPU (tests/cli/trace-record-cuda.bats).
 * trace-record's injection library loads it through TRACEKIT_CUPTI.
 *
 * It behaves like CUPTI where the library can tell: one subscriber,
 * buffers requested from the client and handed back through its
 * completion callback (at a flush, or when full), records only of the
 * kinds enabled, timestamps from the client's timestamp callback, kernel
 * thread ids once asked for.  The "GPU work" comes from the program:
 * fake_launch(name) records a cudaLaunchKernel call on the calling thread
 * and the kernel it launched, as CUPTI would.
 *
 * The subscriber's callback is called as each launch call begins when
 * the runtime API domain is enabled, with the call's correlation id.
 *
 * Environment:
 *   FAKE_CUPTI_SUBSCRIBE=N  cuptiSubscribe_v2 returns CUptiResult N
 *                           (39: another subscriber, "CUPTI for fake-profiler")
 *   FAKE_CUPTI_GPU_LAG=NS   kernels (and the copies, memsets, allocations
 *                           and syncs of FAKE_CUPTI_ALL_KINDS) begin NS
 *                           nanoseconds after their launch
 *                           (default 1000), and each kernel's record comes
 *                           before its launch's, as a busy GPU's do
 *   FAKE_CUPTI_PENDING=K    the records of the last K launches stay in
 *                           their buffer at a flush that is not forced,
 *                           as those of work still running on a GPU do
 *   FAKE_CUPTI_FAIL=FUNC:N[,FUNC:N...]  the CUPTI function FUNC (cuptiGetVersion,
 *                           cuptiGetTimestamp, cuptiGetResultString,
 *                           cuptiSetThreadIdType,
 *                           cuptiActivityRegisterCallbacks, ...) returns
 *                           CUptiResult N, doing nothing
 *   FAKE_CUPTI_LOG=FILE     one line per call that matters: subscribe,
 *                           enable KIND, disable KIND, flush FLAG, ...,
 *                           and one per kernel and launch record written,
 *                           with its fields (kernel corr=N start=NS ...)
 *   FAKE_CUPTI_ALL_KINDS=1  each launch also does the rest of a training
 *                           step's GPU work, each record of a kind enabled
 *                           and logged with its fields: a copy to the
 *                           device (memcpy), one between two devices
 *                           (memcpy2), a memset, an allocation and its
 *                           release (memory2), a stream synchronisation
 *                           and a CUPTI overhead on the calling thread;
 *                           the first launch also a STREAM record and one
 *                           record of a kind nobody enabled (MARKER), as
 *                           CUPTI delivers some unasked
 *   FAKE_CUPTI_NO_CONTEXT_RECORD=1  no CONTEXT record: the context is
 *                           known only from the resource callback
 *                           (context created) before the first launch, when
 *                           the subscriber enabled it
 *   FAKE_CUPTI_STATE=CBID:N:MESSAGE  before the first launch, a state
 *                           callback (1 fatal error, 2 error) with
 *                           CUptiResult N and MESSAGE (empty: none)
 *
 * Each launch's runtime callback is made as the call begins and as it
 * ends (CUPTI_API_ENTER, CUPTI_API_EXIT).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

void fake_launch(const char *name);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_BuffersCallbackRequestFunc requested;
static CUpti_BuffersCallbackCompleteFunc completed;
static CUpti_TimestampCallbackFunc clock_cb;
static int subscribed, system_tids, enabled[64], devices_sent, runtime_callbacks;
static int state_callbacks, context_callbacks, first_launch_done;
static CUpti_CallbackFunc subscriber_cb;
static void *subscriber_data;
static uint32_t corr;
static uint8_t *buf;
static size_t size, used;
/* where each launch's records begin in the buffer (FAKE_CUPTI_PENDING) */
#define STARTS 4096
static size_t starts[STARTS], nstarts;

static void
note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
note(const char *fmt, ...)
{
	const char *path = getenv("FAKE_CUPTI_LOG");
	FILE *f = path ? fopen(path, "a") : NULL;
	if (!f)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static uint64_t
now(void)
{
	if (clock_cb)
		return clock_cb();
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static size_t
record_size(uint32_t kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_RUNTIME: return sizeof(CUpti_ActivityAPI);
	case CUPTI_ACTIVITY_KIND_DEVICE: return sizeof(CUpti_ActivityDevice5);
	case CUPTI_ACTIVITY_KIND_CONTEXT: return sizeof(CUpti_ActivityContext3);
	case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
	case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
	case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
	case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(CUpti_ActivityMemory4);
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
	case CUPTI_ACTIVITY_KIND_OVERHEAD: return sizeof(CUpti_ActivityOverhead3);
	case CUPTI_ACTIVITY_KIND_STREAM: return sizeof(CUpti_ActivityStream);
	case CUPTI_ACTIVITY_KIND_MARKER: return sizeof(CUpti_ActivityMarker2);
	default: return 0;
	}
}

/* ---- buffers (lock held) ------------------------------------------------------ */

static void
hand_back(void)
{
	if (!buf)
		return;
	uint8_t *b = buf;
	size_t s = size, u = used;
	buf = NULL;
	used = size = 0;
	nstarts = 0;
	pthread_mutex_unlock(&lock);
	completed(NULL, 0, b, s, u);
	pthread_mutex_lock(&lock);
}

/* A flush that is not forced: all but the records of the last K
 * launches (FAKE_CUPTI_PENDING), which move to a new buffer. */
static void
hand_back_completed(void)
{
	const char *e = getenv("FAKE_CUPTI_PENDING");
	size_t k = e ? strtoul(e, NULL, 10) : 0;
	if (!k || nstarts >= STARTS) {
		hand_back();
		return;
	}
	if (nstarts <= k)
		return;          /* every launch of the buffer still running */
	size_t split = starts[nstarts - k];
	uint8_t *nb = NULL;
	size_t nsize = 0, max;
	requested(&nb, &nsize, &max);
	if (!nb || nsize < used - split) {
		hand_back();
		return;
	}
	memcpy(nb, buf + split, used - split);
	uint8_t *b = buf;
	size_t s = size;
	buf = nb;
	size = nsize;
	used -= split;
	for (size_t i = 0; i < k; i++)
		starts[i] = starts[nstarts - k + i] - split;
	nstarts = k;
	pthread_mutex_unlock(&lock);
	completed(NULL, 0, b, s, split);
	pthread_mutex_lock(&lock);
}

static void *
room(size_t n)
{
	if (!requested)
		return NULL;
	if (buf && used + n > size)
		hand_back();
	if (!buf) {
		size_t max;
		requested(&buf, &size, &max);
		used = 0;
		if (!buf || size < n)
			return NULL; /* refused: the record is lost */
	}
	void *p = buf + used;
	used += n;
	return p;
}

static void
send_devices(void)
{
	if (devices_sent || !enabled[CUPTI_ACTIVITY_KIND_DEVICE])
		return;
	devices_sent = 1;
	CUpti_ActivityDevice5 *d = room(sizeof(*d));
	if (d) {
		memset(d, 0, sizeof(*d));
		d->kind = CUPTI_ACTIVITY_KIND_DEVICE;
		d->id = 0;
		d->name = strdup("Fake GPU"); /* the client frees it */
		d->numMultiprocessors = 4;
		d->globalMemorySize = 1u << 30;
		d->computeCapabilityMajor = 9;
	}
	CUpti_ActivityContext3 *x =
		getenv("FAKE_CUPTI_NO_CONTEXT_RECORD") ? NULL : room(sizeof(*x));
	if (x) {
		memset(x, 0, sizeof(*x));
		x->kind = CUPTI_ACTIVITY_KIND_CONTEXT;
		x->contextId = 1;
		x->deviceId = 0;
		x->nullStreamId = 7;
	}
}

static uint32_t
calling_tid(void)
{
	return system_tids ? (uint32_t)syscall(SYS_gettid) : (uint32_t)(uintptr_t)pthread_self();
}

/* Before the first launch (lock held): the context created, and the
 * state callback of FAKE_CUPTI_STATE. */
static void
first_launch_callbacks(void)
{
	CUpti_CallbackFunc cb = subscriber_cb;
	void *data = subscriber_data;
	if (!cb)
		return;
	pthread_mutex_unlock(&lock);
	if (context_callbacks) {
		CUpti_ResourceData r;
		memset(&r, 0, sizeof(r));
		r.context = (CUcontext)(uintptr_t)0x1000;
		note("context-created");
		cb(data, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &r);
	}
	const char *e = getenv("FAKE_CUPTI_STATE");
	char *end;
	unsigned long cbid = e ? strtoul(e, &end, 10) : 0;
	if (state_callbacks && cbid && *end == ':') {
		CUpti_StateData st;
		memset(&st, 0, sizeof(st));
		st.notification.result = (CUptiResult)strtol(end + 1, &end, 10);
		st.notification.message = *end == ':' && end[1] ? end + 1 : NULL;
		note("state %lu", cbid);
		cb(data, CUPTI_CB_DOMAIN_STATE, (CUpti_CallbackId)cbid, &st);
	}
	pthread_mutex_lock(&lock);
}

static void
launch_call(uint32_t c, uint64_t t)
{
	if (!enabled[CUPTI_ACTIVITY_KIND_RUNTIME])
		return;
	CUpti_ActivityAPI *a = room(sizeof(*a));
	if (a) {
		memset(a, 0, sizeof(*a));
		a->kind = CUPTI_ACTIVITY_KIND_RUNTIME;
		a->cbid = 211;
		a->start = t;
		a->end = now();
		a->processId = (uint32_t)getpid();
		a->threadId = calling_tid();
		a->correlationId = c;
		note("runtime corr=%u start=%llu end=%llu tid=%u cbid=%u", c,
		     (unsigned long long)a->start, (unsigned long long)a->end,
		     (unsigned)a->threadId, (unsigned)a->cbid);
	}
}

/* The rest of launch c's step (FAKE_CUPTI_ALL_KINDS), from `t` on, the
 * GPU's part `lag` later (FAKE_CUPTI_GPU_LAG): every field its own
 * value, changing with c, so that one converted wrong or swapped with
 * another cannot pass. */
static void
more_work(uint32_t c, uint64_t t, uint64_t lag)
{
	uint64_t cpu = t;
	t += lag;
	if (c == 1 && enabled[CUPTI_ACTIVITY_KIND_STREAM]) {
		CUpti_ActivityStream *s = room(sizeof(*s));
		if (s) {
			memset(s, 0, sizeof(*s));
			s->kind = CUPTI_ACTIVITY_KIND_STREAM;
			s->contextId = 1;
			s->streamId = 9;
			s->priority = -1;
			s->flag = CUPTI_ACTIVITY_STREAM_CREATE_FLAG_NON_BLOCKING;
			note("stream context=1 stream=9");
		}
	}
	if (c == 1) {
		/* a kind nobody enabled: skipped and counted */
		CUpti_ActivityMarker2 *m = room(sizeof(*m));
		if (m) {
			memset(m, 0, sizeof(*m));
			m->kind = CUPTI_ACTIVITY_KIND_MARKER;
			m->timestamp = t;
			note("marker");
		}
	}
	if (enabled[CUPTI_ACTIVITY_KIND_MEMCPY]) {
		CUpti_ActivityMemcpy6 *m = room(sizeof(*m));
		if (m) {
			memset(m, 0, sizeof(*m));
			m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
			/* odd launches from pinned memory, asynchronously; even
			 * ones from pageable memory, synchronously */
			m->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
			m->srcKind = c % 2 ? CUPTI_ACTIVITY_MEMORY_KIND_PINNED
			                   : CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
			m->dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
			m->flags = c % 2 ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
			m->bytes = 4096ull * c + 3;
			m->start = t + 100;
			m->end = m->start + 300 + c;
			m->deviceId = 0;
			m->contextId = 1;
			m->streamId = 9;
			m->correlationId = 1000 + c; /* the driver's call */
			m->runtimeCorrelationId = c; /* the program's: it wins */
			note("memcpy corr=%u start=%llu end=%llu stream=%u copy=%u src=%u dst=%u "
			     "bytes=%llu async=%d", c, (unsigned long long)m->start,
			     (unsigned long long)m->end, (unsigned)m->streamId,
			     (unsigned)m->copyKind, (unsigned)m->srcKind, (unsigned)m->dstKind,
			     (unsigned long long)m->bytes, c % 2);
		}
	}
	if (enabled[CUPTI_ACTIVITY_KIND_MEMCPY2]) {
		CUpti_ActivityMemcpyPtoP4 *m = room(sizeof(*m));
		if (m) {
			memset(m, 0, sizeof(*m));
			m->kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
			m->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
			m->srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
			m->dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
			m->flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
			m->bytes = (1ull << 20) + c;
			m->start = t + 500;
			m->end = m->start + 2000 + c;
			m->deviceId = 0;
			m->contextId = 1;
			m->streamId = 7;
			m->srcDeviceId = 0;
			m->dstDeviceId = 1;
			m->correlationId = c;
			note("memcpy2 corr=%u start=%llu end=%llu stream=%u copy=%u src=%u dst=%u "
			     "bytes=%llu async=1 src_device=0 dst_device=1", c,
			     (unsigned long long)m->start, (unsigned long long)m->end,
			     (unsigned)m->streamId, (unsigned)m->copyKind, (unsigned)m->srcKind,
			     (unsigned)m->dstKind, (unsigned long long)m->bytes);
		}
	}
	if (enabled[CUPTI_ACTIVITY_KIND_MEMSET]) {
		CUpti_ActivityMemset4 *m = room(sizeof(*m));
		if (m) {
			memset(m, 0, sizeof(*m));
			m->kind = CUPTI_ACTIVITY_KIND_MEMSET;
			m->value = (uint32_t)(0xa0 + c);
			m->bytes = 256ull * c;
			m->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
			m->flags = CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC;
			m->start = t + 2600;
			m->end = m->start + 40 + c;
			m->deviceId = 0;
			m->contextId = 1;
			m->streamId = 7;
			m->correlationId = c;
			note("memset corr=%u start=%llu end=%llu stream=%u value=%u bytes=%llu "
			     "memkind=%u async=1", c, (unsigned long long)m->start,
			     (unsigned long long)m->end, (unsigned)m->streamId, (unsigned)m->value,
			     (unsigned long long)m->bytes, (unsigned)m->memoryKind);
		}
	}
	for (int op = 0; op < 2 && enabled[CUPTI_ACTIVITY_KIND_MEMORY2]; op++) {
		CUpti_ActivityMemory4 *m = room(sizeof(*m));
		if (!m)
			break;
		memset(m, 0, sizeof(*m));
		m->kind = CUPTI_ACTIVITY_KIND_MEMORY2;
		m->memoryOperationType = op ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE
		                            : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
		m->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
		m->address = 0x7f0000000000ull + (uint64_t)c * 0x200000;
		/* a release only every other launch: memory in use grows */
		m->bytes = (1ull << 20) * c;
		m->timestamp = t + 50 + 3000 * (uint64_t)op;
		m->processId = (uint32_t)getpid();
		m->deviceId = 0;
		m->contextId = 1;
		m->streamId = 7;
		m->correlationId = c;
		note("memory corr=%u ts=%llu op=%s address=%llu bytes=%llu memkind=%u", c,
		     (unsigned long long)m->timestamp, op ? "free" : "alloc",
		     (unsigned long long)m->address, (unsigned long long)m->bytes,
		     (unsigned)m->memoryKind);
		if (c % 2)
			break;
	}
	if (enabled[CUPTI_ACTIVITY_KIND_SYNCHRONIZATION]) {
		CUpti_ActivitySynchronization2 *s = room(sizeof(*s));
		if (s) {
			memset(s, 0, sizeof(*s));
			s->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
			s->type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
			s->start = t + 2700;
			s->end = s->start + 900 + c;
			s->contextId = 1;
			s->streamId = 7;
			s->correlationId = c;
			note("sync corr=%u start=%llu end=%llu type=%u tid=%u", c,
			     (unsigned long long)s->start, (unsigned long long)s->end,
			     (unsigned)s->type, calling_tid());
		}
	}
	if (enabled[CUPTI_ACTIVITY_KIND_OVERHEAD]) {
		CUpti_ActivityOverhead3 *o = room(sizeof(*o));
		if (o) {
			memset(o, 0, sizeof(*o));
			o->kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
			o->overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
			o->objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
			o->objectId.pt.processId = (uint32_t)getpid();
			o->objectId.pt.threadId = calling_tid();
			o->start = cpu + 10; /* on the CPU: no lag */
			o->end = o->start + 20 + c;
			note("overhead start=%llu end=%llu type=%u tid=%u",
			     (unsigned long long)o->start, (unsigned long long)o->end,
			     (unsigned)o->overheadKind, calling_tid());
		}
	}
}

void
fake_launch(const char *name)
{
	const char *e = getenv("FAKE_CUPTI_GPU_LAG");
	uint64_t lag = e ? strtoull(e, NULL, 10) : 1000;
	pthread_mutex_lock(&lock);
	if (!subscribed) {
		pthread_mutex_unlock(&lock);
		return;
	}
	if (!first_launch_done) {
		first_launch_done = 1;
		first_launch_callbacks();
	}
	send_devices();
	uint32_t c = ++corr;
	uint64_t t = now();
	if (nstarts < STARTS)
		starts[nstarts++] = buf ? used : 0;
	if (runtime_callbacks && subscriber_cb) {
		CUpti_CallbackData cd;
		memset(&cd, 0, sizeof(cd));
		cd.callbackSite = CUPTI_API_ENTER;
		cd.functionName = "cudaLaunchKernel";
		cd.correlationId = c;
		pthread_mutex_unlock(&lock);
		subscriber_cb(subscriber_data, CUPTI_CB_DOMAIN_RUNTIME_API, 211, &cd);
		pthread_mutex_lock(&lock);
	}
	/* the call: as long as this takes, like the real one */
	if (!e)
		launch_call(c, t);
	if (enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]) {
		CUpti_ActivityKernel10 *k = room(sizeof(*k));
		if (k) {
			memset(k, 0, sizeof(*k));
			k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
			k->name = name; /* CUPTI keeps names for the process's life */
			k->start = now() + lag;
			/* every field its own value, and changing with each
			 * launch, so that a field converted wrong or swapped
			 * with another cannot pass */
			k->end = k->start + 5000 + 10 * c;
			k->deviceId = 0;
			k->contextId = 1;
			k->streamId = 7;
			k->correlationId = c;
			k->gridX = (int32_t)(64 + c);
			k->gridY = 3;
			k->gridZ = 2;
			k->blockX = 128;
			k->blockY = 4;
			k->blockZ = 5;
			k->registersPerThread = (uint16_t)(32 + c);
			k->staticSharedMemory = (int32_t)(1024 + c);
			k->dynamicSharedMemory = (int32_t)(4096 + 2 * c);
			note("kernel corr=%u start=%llu end=%llu device=%u stream=%u "
			     "grid=%u,%u,%u block=%u,%u,%u registers=%u static=%u dynamic=%u name=%s",
			     c, (unsigned long long)k->start, (unsigned long long)k->end,
			     (unsigned)k->deviceId, (unsigned)k->streamId, (unsigned)k->gridX,
			     (unsigned)k->gridY, (unsigned)k->gridZ, (unsigned)k->blockX,
			     (unsigned)k->blockY, (unsigned)k->blockZ,
			     (unsigned)k->registersPerThread, (unsigned)k->staticSharedMemory,
			     (unsigned)k->dynamicSharedMemory, name);
		}
	}
	if (e)
		launch_call(c, t);
	if (getenv("FAKE_CUPTI_ALL_KINDS"))
		more_work(c, now(), e ? lag : 0);
	if (runtime_callbacks && subscriber_cb) {
		CUpti_CallbackData cd;
		memset(&cd, 0, sizeof(cd));
		cd.callbackSite = CUPTI_API_EXIT;
		cd.functionName = "cudaLaunchKernel";
		cd.correlationId = c;
		pthread_mutex_unlock(&lock);
		subscriber_cb(subscriber_data, CUPTI_CB_DOMAIN_RUNTIME_API, 211, &cd);
		pthread_mutex_lock(&lock);
	}
	pthread_mutex_unlock(&lock);
}

/* ---- the CUPTI functions the library uses ------------------------------------- */

/* FAKE_CUPTI_FAIL names this function: 1 with its result in *r. */
static int
forced(const char *func, CUptiResult *r)
{
	const char *e = getenv("FAKE_CUPTI_FAIL");
	size_t n = strlen(func);
	for (; e && *e; e = strchr(e, ',') ? strchr(e, ',') + 1 : NULL) {
		if (strncmp(e, func, n) != 0 || e[n] != ':')
			continue;
		*r = (CUptiResult)atoi(e + n + 1);
		note("forced %s -> %d", func, (int)*r);
		return 1;
	}
	return 0;
}
#define FORCED(func)                                                           \
	do {                                                                   \
		CUptiResult forced_;                                           \
		if (forced(func, &forced_))                                    \
			return forced_;                                        \
	} while (0)

CUptiResult CUPTIAPI
cuptiGetVersion(uint32_t *version)
{
	FORCED("cuptiGetVersion");
	*version = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiGetResultString(CUptiResult result, const char **str)
{
	FORCED("cuptiGetResultString");
	switch (result) {
	case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
	case CUPTI_ERROR_UNKNOWN: *str = "CUPTI_ERROR_UNKNOWN"; break;
	case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: *str = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"; break;
	case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
		*str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
		break;
	default: *str = "CUPTI_ERROR_FAKE"; break;
	}
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char **name)
{
	FORCED("cuptiGetCallbackName");
	if (domain != CUPTI_CB_DOMAIN_RUNTIME_API || cbid != 211)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*name = "cudaLaunchKernel_v7000";
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiGetTimestamp(uint64_t *timestamp)
{
	FORCED("cuptiGetTimestamp");
	*timestamp = now();
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                  void *userdata, CUpti_SubscriberParams *params)
{
	const char *e = getenv("FAKE_CUPTI_SUBSCRIBE");
	CUptiResult rc = e ? (CUptiResult)atoi(e) : CUPTI_SUCCESS;
	note("subscribe %s -> %d", params && params->subscriberName ? params->subscriberName : "",
	     (int)rc);
	if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && params &&
	    params->oldSubscriberName && params->oldSubscriberSize)
		snprintf(params->oldSubscriberName, params->oldSubscriberSize,
		         "CUPTI for fake-profiler");
	if (rc != CUPTI_SUCCESS)
		return rc;
	pthread_mutex_lock(&lock);
	subscribed = 1;
	subscriber_cb = callback;
	subscriber_data = userdata;
	pthread_mutex_unlock(&lock);
	*subscriber = (CUpti_SubscriberHandle)(uintptr_t)1;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
	(void)subscriber;
	note("unsubscribe");
	pthread_mutex_lock(&lock);
	subscribed = 0;
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                    CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	FORCED("cuptiEnableCallback");
	(void)subscriber;
	note("callback %u %d %u", enable, (int)domain, cbid);
	pthread_mutex_lock(&lock);
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == 211) /* cudaLaunchKernel */
		runtime_callbacks = enable != 0;
	if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
		context_callbacks = enable != 0;
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                  CUpti_CallbackDomain domain)
{
	FORCED("cuptiEnableDomain");
	(void)subscriber;
	note("domain %u %d", enable, (int)domain);
	pthread_mutex_lock(&lock);
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		runtime_callbacks = enable != 0;
	if (domain == CUPTI_CB_DOMAIN_STATE)
		state_callbacks = enable != 0;
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiSetThreadIdType(CUpti_ActivityThreadIdType type)
{
	FORCED("cuptiSetThreadIdType");
	note("thread-id-type %d", (int)type);
	system_tids = type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f)
{
	FORCED("cuptiActivityRegisterTimestampCallback");
	note("timestamp-callback");
	clock_cb = f;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                               CUpti_BuffersCallbackCompleteFunc done)
{
	FORCED("cuptiActivityRegisterCallbacks");
	note("buffer-callbacks");
	requested = req;
	completed = done;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t *value_size, void *value)
{
	(void)value_size;
	(void)value;
	note("attribute %d", (int)attr);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiActivityEnable(CUpti_ActivityKind kind)
{
	FORCED("cuptiActivityEnable");
	note("enable %d", (int)kind);
	if ((unsigned)kind >= 64)
		return CUPTI_ERROR_INVALID_KIND;
	pthread_mutex_lock(&lock);
	enabled[kind] = 1;
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiActivityDisable(CUpti_ActivityKind kind)
{
	note("disable %d", (int)kind);
	if ((unsigned)kind >= 64)
		return CUPTI_ERROR_INVALID_KIND;
	pthread_mutex_lock(&lock);
	enabled[kind] = 0;
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiActivityFlushAll(uint32_t flag)
{
	FORCED("cuptiActivityFlushAll");
	note("flush %u", flag);
	pthread_mutex_lock(&lock);
	if (subscribed)
		send_devices();
	if (buf && used && flag == CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)
		hand_back();
	else if (buf && used)
		hand_back_completed();
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream_id, size_t *dropped)
{
	FORCED("cuptiActivityGetNumDroppedRecords");
	(void)context;
	(void)stream_id;
	*dropped = 0;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
	size_t at = *record ? (size_t)((uint8_t *)*record - buffer) +
	                      record_size((*record)->kind) : 0;
	if (at >= valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	CUpti_Activity *r = (CUpti_Activity *)(void *)(buffer + at);
	size_t n = record_size(r->kind);
	if (!n || at + n > valid)
		return CUPTI_ERROR_INVALID_KIND;
	*record = r;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiGetContextId(CUcontext context, uint32_t *id)
{
	(void)context;
	*id = 1;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiGetDeviceId(CUcontext context, uint32_t *id)
{
	(void)context;
	*id = 0;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiGetStreamIdEx(CUcontext context, CUstream stream, uint8_t per_thread,
                   uint32_t *stream_id)
{
	(void)context;
	(void)stream;
	(void)per_thread;
	*stream_id = 7;
	return CUPTI_SUCCESS;
}
