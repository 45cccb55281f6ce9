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
 *   FAKE_CUPTI_GPU_LAG=NS   kernels begin NS nanoseconds after their launch
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
	CUpti_ActivityContext3 *x = room(sizeof(*x));
	if (x) {
		memset(x, 0, sizeof(*x));
		x->kind = CUPTI_ACTIVITY_KIND_CONTEXT;
		x->contextId = 1;
		x->deviceId = 0;
		x->nullStreamId = 7;
	}
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
		a->threadId = system_tids ? (uint32_t)syscall(SYS_gettid)
		                          : (uint32_t)(uintptr_t)pthread_self();
		a->correlationId = c;
		note("runtime corr=%u start=%llu end=%llu tid=%u cbid=%u", c,
		     (unsigned long long)a->start, (unsigned long long)a->end,
		     (unsigned)a->threadId, (unsigned)a->cbid);
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
