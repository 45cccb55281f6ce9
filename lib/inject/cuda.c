/* SPDX-License-Identifier: MIT */
/*
 * The CUDA driver's entry point, InitializeInjection(), and the CUPTI
 * session of the process.
 *
 * trace-record sets CUDA_INJECTION64_PATH to this library; the driver
 * loads it during cuInit() and calls InitializeInjection().  Without the
 * default visibility the driver would not find it, and says nothing:
 * the library is built with -fvisibility=hidden.
 *
 * Attaching, in the order CUPTI wants: one subscriber (CUPTI refuses a
 * second one: the PyTorch profiler, Nsight tools), CUPTI's clock tied to
 * CLOCK_REALTIME, kernel thread ids, buffer callbacks, then the activity
 * kinds asked for -- now, or when the capture schedule's warmup begins,
 * so that CUPTI's start-up cost falls outside the recorded steps.  A
 * step that fails says why, once, in the spool's metadata ("cuda") and
 * the status page (trace-record warns), and the program runs on as if
 * nothing had been loaded.
 *
 * Flushing: cuptiActivityFlushAll(0) (complete buffers only) before each
 * flush round, on the flusher thread without the spool lock; a forced
 * flush from an atexit handler of our own, registered after CUPTI's
 * set-up so that it runs before the runtime's and CUPTI's teardown, and
 * from the final round when a fatal signal ends the process.  The
 * library's destructor comes after libcupti's: it converts what came,
 * and never calls CUPTI.
 *
 * No handler runs at SIGKILL: what CUPTI holds then is never delivered.
 * So that it is counted rather than missing, the API callback counts,
 * in the durable file, what each call issues while the kinds are
 * collected (protocol.h, "CUDA activity"); trace-record subtracts what
 * CUPTI delivered.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include "cuda_record.h"
#include "tbuf.h"

#define LAG_INTERVALS 10            /* as the flusher's */
#define BUFFER_BYTES (8u << 20)
#define MAX_BUFFERS 64

static struct tki_cupti api;
static unsigned kinds;              /* TKI_CUDA_* asked for */
static atomic_int state;            /* TKI_CUDA_STATE_* */
static CUpti_SubscriberHandle subscriber;
static pid_t owner;
static atomic_int forked, exit_flushed;
static int hold = -1;

/* collection of the kinds asked for: on between the first warmup or
 * active phase and the end of the schedule (or of the window) */
static pthread_mutex_t enable_lock = PTHREAD_MUTEX_INITIALIZER;
static int enabled, schedule_over;
/* what each API call's callback does: set before it is enabled */
static int map_threads, judge_calls;
static enum tki_phase last_phase;
static uint64_t cycles_done;
/* the kinds are collected now: each API call counts what it issues */
static atomic_int collecting;

/* What each API call issues besides its own record, by callback id:
 * WORK_* (a kernel, a copy, a set), told from its name once at attach
 * (so that new CUDA calls are counted without a list to keep up), read
 * without a lock afterwards. */
#define WORK_NONE 0
#define WORK_KERNEL 1
#define WORK_MEMCPY 2
#define WORK_MEMSET 3
static uint8_t runtime_work[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static uint8_t driver_work[CUPTI_DRIVER_TRACE_CBID_SIZE];
/* runtime calls this thread is inside: the driver calls they make issue
 * nothing more */
static __thread int in_runtime __attribute__((tls_model("initial-exec")));

/* ---- saying why not --------------------------------------------------------------- */

static const char *
result_name(CUptiResult r)
{
	const char *s = NULL;
	if (!api.cuptiGetResultString || api.cuptiGetResultString(r, &s) != CUPTI_SUCCESS ||
	    !s)
		s = "unknown CUPTI error";
	return s;
}

void
tki_cuda_fail(const char *why)
{
	int expected = TKI_CUDA_STATE_NONE;
	if (!atomic_compare_exchange_strong(&state, &expected, TKI_CUDA_STATE_FAILED))
		return;
	char b[512];
	snprintf(b, sizeof(b), "not recorded (pid %ld): %s", (long)getpid(), why);
	volatile struct tki_status *s = tki_status;
	/* the note first: trace-record reads it once it sees the state */
	size_t n = strlen(why);
	if (n >= sizeof(s->cuda_note))
		n = sizeof(s->cuda_note) - 1;
	for (size_t i = 0; i < n; i++)
		s->cuda_note[i] = why[i];
	s->cuda_note[n] = 0;
	__atomic_store_n(&s->cuda, TKI_CUDA_STATE_FAILED, __ATOMIC_RELEASE);
	pthread_mutex_lock(&tki_lock);
	if (tki_writer)
		tk_writer_meta(tki_writer, "cuda", b);
	pthread_mutex_unlock(&tki_lock);
}

/* A CUPTI call that failed: why, with its name and result; leave CUPTI
 * to whoever else may want it. */
static void
fail_call(const char *call, CUptiResult r)
{
	char b[256];
	snprintf(b, sizeof(b), "CUPTI could not attach: %s: %s (%d)", call, result_name(r),
	         (int)r);
	tki_cuda_fail(b);
	if (subscriber)
		api.cuptiUnsubscribe(subscriber);
	subscriber = NULL;
}

int
tki_cuda_state(void)
{
	return atomic_load(&state);
}

/* ---- activity kinds ---------------------------------------------------------------- */

static const struct {
	unsigned bit;
	CUpti_ActivityKind kind;
	const char *name;
} kind_map[] = {
	{ TKI_CUDA_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL" },
	{ TKI_CUDA_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY" },
	{ TKI_CUDA_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2, "MEMCPY2" },
	{ TKI_CUDA_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET" },
	{ TKI_CUDA_MEMORY, CUPTI_ACTIVITY_KIND_MEMORY2, "MEMORY2" },
	{ TKI_CUDA_RUNTIME, CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME" },
	{ TKI_CUDA_DRIVER, CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER" },
	/* kernels the driver launches outside any API call */
	{ TKI_CUDA_DRIVER, CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API, "INTERNAL_LAUNCH_API" },
	{ TKI_CUDA_SYNC, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION" },
	{ TKI_CUDA_OVERHEAD, CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD" },
};
#define NKINDS (sizeof(kind_map) / sizeof(kind_map[0]))

/* Turn the kinds asked for on or off; returns how many could be. */
static size_t
set_collection(int on)
{
	size_t ok = 0;
	char errors[512] = "";
	size_t at = 0;
	pthread_mutex_lock(&enable_lock);
	if (enabled == on || (on && schedule_over)) {
		pthread_mutex_unlock(&enable_lock);
		return NKINDS;
	}
	/* a call counted must be one CUPTI records: stop counting before
	 * collection stops, start after it starts */
	if (!on)
		atomic_store_explicit(&collecting, 0, memory_order_relaxed);
	for (size_t i = 0; i < NKINDS; i++) {
		if (!(kinds & kind_map[i].bit))
			continue;
		CUptiResult r = on ? api.cuptiActivityEnable(kind_map[i].kind)
		                   : api.cuptiActivityDisable(kind_map[i].kind);
		if (r == CUPTI_SUCCESS)
			ok++;
		else if (on && at < sizeof(errors))
			at += (size_t)snprintf(errors + at, sizeof(errors) - at, "%s%s: %s (%d)",
			                       at ? "; " : "", kind_map[i].name,
			                       result_name(r), (int)r);
	}
	enabled = on;
	if (on)
		atomic_store_explicit(&collecting, 1, memory_order_relaxed);
	pthread_mutex_unlock(&enable_lock);
	if (errors[0] && ok)
		tki_activity_meta("cuda.errors", errors);
	else if (errors[0])
		tki_cuda_fail(errors);
	return ok;
}

/* ---- CUPTI's callbacks ------------------------------------------------------------- */

static uint64_t CUPTIAPI
realtime_ns(void)
{
	return (uint64_t)tki_now();
}

/* CUPTI sends a context's record after work in it: learn its id, device
 * and NULL stream as it is created, so that the NULL stream's track is
 * named, and work CUPTI puts on "the NULL stream" lands there, from the
 * start.  Where CUPTI cannot say, its record does, later. */
static void
context_created(CUcontext ctx)
{
	uint32_t id, device, null_stream;
	if (api.cuptiGetContextId(ctx, &id) == CUPTI_SUCCESS &&
	    api.cuptiGetDeviceId(ctx, &device) == CUPTI_SUCCESS &&
	    api.cuptiGetStreamIdEx(ctx, NULL, 0, &null_stream) == CUPTI_SUCCESS)
		tki_activity_context(id, device, null_stream);
}

static const unsigned work_bit[] = { 0, TKI_CUDA_KERNEL, TKI_CUDA_MEMCPY, TKI_CUDA_MEMSET };
static const unsigned work_count[] = { 0, TKI_CUDA_COUNT_KERNEL, TKI_CUDA_COUNT_MEMCPY,
                                       TKI_CUDA_COUNT_MEMSET };

/* An API call begins while the kinds are collected: count the records
 * CUPTI will write for it, so that those it never delivers (SIGKILL)
 * are counted as lost (protocol.h). */
static void
count_issued(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	unsigned work = WORK_NONE;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
		if (kinds & TKI_CUDA_RUNTIME)
			tki_buf_cuda_issued(TKI_CUDA_COUNT_RUNTIME);
		if (cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
			work = runtime_work[cbid];
	} else {
		if (kinds & TKI_CUDA_DRIVER)
			tki_buf_cuda_issued(TKI_CUDA_COUNT_DRIVER);
		if (!in_runtime && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
			work = driver_work[cbid];
	}
	if (work != WORK_NONE && kinds & work_bit[work])
		tki_buf_cuda_issued(work_count[work]);
}

static void CUPTIAPI
on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
            const void *data)
{
	(void)userdata;
	if (atomic_load(&forked))
		return;
	if (domain == CUPTI_CB_DOMAIN_STATE) {
		const CUpti_StateData *s = data;
		char b[400];
		snprintf(b, sizeof(b), "%s: %s (%d)%s%s",
		         cbid == CUPTI_CBID_STATE_FATAL_ERROR ? "fatal" : "error",
		         result_name(s->notification.result), (int)s->notification.result,
		         s->notification.message ? ": " : "",
		         s->notification.message ? s->notification.message : "");
		tki_activity_meta("cuda.errors", b);
		return;
	}
	if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
		if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
			context_created(((const CUpti_ResourceData *)data)->context);
		return;
	}
	if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API)
		return;
	const CUpti_CallbackData *cd = data;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cd->callbackSite == CUPTI_API_EXIT &&
	    in_runtime > 0)
		in_runtime--;
	if (cd->callbackSite != CUPTI_API_ENTER)
		return;
	if (atomic_load_explicit(&collecting, memory_order_relaxed))
		count_issued(domain, cbid);
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		in_runtime++;
	if (judge_calls)
		tki_activity_launch(cd->correlationId);
	/* CUPTI could not give kernel thread ids: map pthread ids */
	if (map_threads)
		tki_activity_map_thread();
	/* the device's records go with it: deliver them first */
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
	    cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020)
		api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

/* ---- flushing ------------------------------------------------------------------------ */

static int
ours(void)
{
	return atomic_load(&state) == TKI_CUDA_STATE_ON && !atomic_load(&forked) &&
	       getpid() == owner;
}

/* The last flush: everything CUPTI holds, or the trace is told what
 * it kept (tki_activity_final_flush_failed). */
static void
final_flush(void)
{
	CUptiResult r = api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	if (r != CUPTI_SUCCESS) {
		char why[160];
		snprintf(why, sizeof(why), "cuptiActivityFlushAll: %s (%d)", result_name(r),
		         (int)r);
		tki_activity_final_flush_failed(why);
	}
}

static void
at_exit(void)
{
	if (!ours() || atomic_exchange(&exit_flushed, 1))
		return;
	/* nothing of the teardown after this, and everything before */
	set_collection(0);
	tki_activity_flush_begin(1);
	final_flush();
	tki_activity_flush_end();
	tki_activity_finish();
	tki_hold_set(hold, INT64_MAX);
}

static void
on_flush(void *arg, int final)
{
	(void)arg;
	if (!ours())
		return;
	int64_t now = tki_now();
	if (final) {
		/* a fatal signal (no atexit): the flusher thread is here */
		if (!atomic_exchange(&exit_flushed, 1)) {
			tki_activity_flush_begin(1);
			final_flush();
			tki_activity_flush_end();
		}
		tki_activity_finish();
		tki_hold_set(hold, INT64_MAX);
		return;
	}
	/* --duration: collection ends with the window */
	if (now >= tki_cfg.win_end) {
		pthread_mutex_lock(&enable_lock);
		schedule_over = 1;
		pthread_mutex_unlock(&enable_lock);
		set_collection(0);
	}
	tki_activity_flush_begin(0);
	api.cuptiActivityFlushAll(0);
	tki_activity_flush_end();
	tki_hold_set(hold, tki_activity_hold(now, LAG_INTERVALS * tki_cfg.flush_ns));
}

static void
on_phase(void *arg, enum tki_phase p)
{
	(void)arg;
	if (!ours())
		return;
	tki_activity_phase(p == TKI_PHASE_ACTIVE, tki_now());
	pthread_mutex_lock(&enable_lock);
	/* the schedule's last active step ended: for good */
	int over = p == TKI_PHASE_OFF && last_phase == TKI_PHASE_ACTIVE &&
	           tki_cfg.cycles && ++cycles_done >= tki_cfg.cycles;
	if (over)
		schedule_over = 1;
	last_phase = p;
	pthread_mutex_unlock(&enable_lock);
	if (p == TKI_PHASE_WARMUP || p == TKI_PHASE_ACTIVE)
		set_collection(1);
	else if (over)
		set_collection(0);
}

static void
after_fork_child(void)
{
	/* CUPTI does not work in a forked child: never call it there */
	atomic_store(&forked, 1);
	tki_activity_after_fork();
	tki_hold_set(hold, INT64_MAX);
}

/* ---- attaching ------------------------------------------------------------------------ */

/* CUPTI's clock against CLOCK_REALTIME, without the callback: the
 * offset at the narrowest of a few reads of both (0 when within 2 us:
 * the same clock, as on Linux by default). */
static int64_t
measure_offset(char *how, size_t n)
{
	int64_t best = INT64_MAX, off = 0;
	for (int i = 0; i < 16; i++) {
		uint64_t c;
		int64_t a = tki_now();
		if (api.cuptiGetTimestamp(&c) != CUPTI_SUCCESS)
			break;
		int64_t b = tki_now();
		if (b - a < best) {
			best = b - a;
			off = a + (b - a) / 2 - (int64_t)c;
		}
	}
	if (best == INT64_MAX) {
		snprintf(how, n, "CUPTI's own (cuptiGetTimestamp failed: taken as CLOCK_REALTIME)");
		return 0;
	}
	if (off > -2000 && off < 2000) {
		snprintf(how, n, "CUPTI's own, found equal to CLOCK_REALTIME");
		return 0;
	}
	snprintf(how, n, "CUPTI's own + %" PRId64 " ns to CLOCK_REALTIME (measured at start)",
	         off);
	return off;
}

static size_t
buffer_bytes(void)
{
	const char *s = getenv(TKI_ENV_CUDA_BUFFER);
	char *end;
	unsigned long long v = s ? strtoull(s, &end, 10) : 0;
	if (!s || *end || v < (64u << 10) || v > (1ull << 30))
		return BUFFER_BYTES;
	return (size_t)v & ~(size_t)7;
}

/* A CUPTI of the version the converter reads; 0, or -1 (said why). */
static int
check_version(uint32_t *version)
{
	char msg[256];
	CUptiResult r = api.cuptiGetVersion(version);
	if (r != CUPTI_SUCCESS) {
		fail_call("cuptiGetVersion", r);
		return -1;
	}
	if (cupti_convert_check_api_version(*version, msg, sizeof(msg)) < 0) {
		tki_cuda_fail(msg);
		return -1;
	}
	return 0;
}

/* Our subscriber, the only one CUPTI allows; 0, or -1 (said why, with
 * the other client's name when CUPTI tells it). */
static int
subscribe(void)
{
	/* room for the fixed words and the other client's whole name */
	char msg[512];
	char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 64] = "";
	CUpti_SubscriberParams sp = { 0 };
	sp.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
	sp.subscriberName = "tracekit";
	sp.oldSubscriberName = other;
	sp.oldSubscriberSize = sizeof(other);
	CUptiResult r = api.cuptiSubscribe_v2(&subscriber, on_callback, NULL, &sp);
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		other[sizeof(other) - 1] = 0;
		snprintf(msg, sizeof(msg),
		         "another CUPTI client is attached (%s): the PyTorch profiler, "
		         "Nsight Systems or Compute, cuda-gdb or compute-sanitizer; the "
		         "program runs on unrecorded",
		         other[0] ? other : "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
		tki_cuda_fail(msg);
		return -1;
	}
	if (r != CUPTI_SUCCESS) {
		fail_call("cuptiSubscribe", r);
		return -1;
	}
	return 0;
}

/* The work a call named `name` issues: "cudaLaunchKernel",
 * "cuLaunchKernelEx", "cudaMemcpyAsync", "cuMemsetD8", ... (not a host
 * function's launch: no kernel runs). */
static unsigned
work_of(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);
	if (strncmp(name, prefix, n) != 0)
		return WORK_NONE;
	name += n;
	if (strncmp(name, "Launch", 6) == 0 && !strstr(name, "HostFunc"))
		return WORK_KERNEL;
	if (strncmp(name, "Memcpy", 6) == 0)
		return WORK_MEMCPY;
	if (strncmp(name, "Memset", 6) == 0)
		return WORK_MEMSET;
	return WORK_NONE;
}

/* Fill runtime_work and driver_work from CUPTI's names of the calls;
 * before the API domains are enabled. */
static void
classify_calls(void)
{
	const char *name;
	for (uint32_t i = 0; i < CUPTI_RUNTIME_TRACE_CBID_SIZE; i++)
		if (api.cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, i, &name) ==
		    CUPTI_SUCCESS && name)
			runtime_work[i] = (uint8_t)work_of(name, "cuda");
	for (uint32_t i = 0; i < CUPTI_DRIVER_TRACE_CBID_SIZE; i++)
		if (api.cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, i, &name) ==
		    CUPTI_SUCCESS && name)
			driver_work[i] = (uint8_t)work_of(name, "cu");
}

/* The callbacks counting needs in one API domain: every call when its
 * records are collected (`every`), else only the calls that issue work
 * of a collected kind (launches, copies, sets): a runtime launch makes
 * several driver calls, none of which needs us.  (On an H200 one run
 * measured --cuda=kernel at 7.2 us a launch against 5.5 us recording
 * everything; alternating runs later gave 4.1-4.5 us for --cuda=kernel
 * with and without this change, within the machine's noise.) */
static void
enable_counted(CUpti_CallbackDomain domain, int every, const uint8_t *work, uint32_t n)
{
	if (every) {
		api.cuptiEnableDomain(1, subscriber, domain);
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		if (work[i] != WORK_NONE && kinds & work_bit[work[i]])
			api.cuptiEnableCallback(1, subscriber, domain, i);
}

/* CUPTI's clock and thread ids, and the API callbacks they and the
 * capture filter need: fills the converter's settings, `clock` (how
 * times are taken) and `note` (about thread ids, when they are mapped). */
static void
set_clock_and_threads(struct tki_cuda_conv *cv, char *clock, size_t nclock,
                      char *note, size_t nnote)
{
	/* before any kind is enabled, as CUPTI asks */
	if (api.cuptiActivityRegisterTimestampCallback(realtime_ns) == CUPTI_SUCCESS)
		snprintf(clock, nclock, "CLOCK_REALTIME (timestamp callback)");
	else
		cv->clock_offset = measure_offset(clock, nclock);
	CUptiResult r = api.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	if (r != CUPTI_SUCCESS) {
		cv->thread_map = 1;
		snprintf(note, nnote, "pthread ids mapped to kernel tids "
		         "(cuptiSetThreadIdType: %s)", result_name(r));
		tki_activity_map_thread();
	}
	cv->filter = tki_cfg.capture || tki_cfg.win_begin != INT64_MIN ||
	             tki_cfg.win_end != INT64_MAX;
	/* every call's callback: to map its thread, to judge it as it
	 * begins (tki_activity_launch), or to count what it issues */
	map_threads = cv->thread_map;
	judge_calls = cv->filter;
	int counting = (kinds & (TKI_CUDA_KERNEL | TKI_CUDA_MEMCPY | TKI_CUDA_MEMSET |
	                         TKI_CUDA_RUNTIME | TKI_CUDA_DRIVER)) != 0;
	if (counting)
		classify_calls();
	if (cv->thread_map || cv->filter) {
		api.cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
		api.cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
	} else if (counting) {
		enable_counted(CUPTI_CB_DOMAIN_RUNTIME_API, kinds & TKI_CUDA_RUNTIME,
		               runtime_work, CUPTI_RUNTIME_TRACE_CBID_SIZE);
		enable_counted(CUPTI_CB_DOMAIN_DRIVER_API, kinds & TKI_CUDA_DRIVER,
		               driver_work, CUPTI_DRIVER_TRACE_CBID_SIZE);
	}
}

/* The activity buffers and what the tracks need, whatever the schedule:
 * devices, contexts, streams, and the callbacks that follow them; 0, or
 * -1 (said why). */
static int
set_up_activity(struct tki_cuda_conv *cv)
{
	cv->buffer_bytes = buffer_bytes();
	cv->max_buffers = MAX_BUFFERS;
	if (tki_activity_init(&api, cv) < 0) {
		fail_call("setting up", CUPTI_ERROR_OUT_OF_MEMORY);
		return -1;
	}
	CUptiResult r = api.cuptiActivityRegisterCallbacks(tki_activity_requested,
	                                                   tki_activity_completed);
	if (r != CUPTI_SUCCESS) {
		fail_call("cuptiActivityRegisterCallbacks", r);
		return -1;
	}
	uint8_t zeroed = 1;
	size_t zsize = sizeof(zeroed);
	api.cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER,
	                              &zsize, &zeroed);
	api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE);
	api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONTEXT);
	api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_STREAM);
	if (!cv->thread_map)
		api.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
		                        CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020);
	api.cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_STATE);
	api.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
	                        CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
	return 0;
}

/* Hold the spool's watermarks for what CUPTI still has, and collect the
 * kinds now if the schedule is already in a warmup or active phase; 0,
 * or -1 (said why, and unsubscribed). */
static int
start_collection(void)
{
	hold = tki_hold_new();
	tki_hold_set(hold, tki_activity_hold(tki_now(), LAG_INTERVALS * tki_cfg.flush_ns));
	last_phase = (enum tki_phase)atomic_load(&tki_phase);
	if (last_phase == TKI_PHASE_OFF)
		return 0;
	tki_activity_phase(last_phase == TKI_PHASE_ACTIVE, INT64_MIN);
	if (!set_collection(1)) {
		/* tki_cuda_fail said why */
		tki_hold_set(hold, INT64_MAX);
		api.cuptiUnsubscribe(subscriber);
		subscriber = NULL;
		return -1;
	}
	return 0;
}

/* Recording: say so, with what and how, in the metadata and the status
 * page; then the hooks of the flushes, the phases, fork and exit. */
static void
announce(uint32_t version, const char *clock, const char *note)
{
	char what[128], b[512];
	Dl_info dl;
	const char *lib = dladdr((void *)(uintptr_t)api.cuptiGetVersion, &dl) && dl.dli_fname
	                  ? dl.dli_fname : "libcupti";
	tki_cuda_format(kinds, what, sizeof(what));
	snprintf(b, sizeof(b), "recorded (pid %ld): %s%s; CUPTI %" PRIu32 " (%s); clock %s%s%s",
	         (long)getpid(), what,
	         tki_cfg.capture ? " (collected from the first warmup step)" : "",
	         version, lib, clock, note[0] ? "; " : "", note);
	atomic_store(&state, TKI_CUDA_STATE_ON);
	__atomic_store_n(&tki_status->cuda, TKI_CUDA_STATE_ON, __ATOMIC_RELEASE);
	tki_activity_meta("cuda", b);
	tki_on_flush(on_flush, NULL);
	tki_on_phase(on_phase, NULL);
	pthread_atfork(NULL, NULL, after_fork_child);
	/* after CUPTI's set-up: it runs before CUPTI's own teardown */
	atexit(at_exit);
}

int
tki_cuda_attach(const struct tki_cupti *a, unsigned k)
{
	api = *a;
	kinds = k;
	owner = getpid();
	struct tki_cuda_conv cv = { 0 };
	char clock[160], note[256] = "";
	uint32_t version = 0;
	if (check_version(&version) < 0 || subscribe() < 0)
		return 0;
	set_clock_and_threads(&cv, clock, sizeof(clock), note, sizeof(note));
	if (set_up_activity(&cv) < 0 || start_collection() < 0)
		return 0;
	announce(version, clock, note);
	return 1;
}

TKI_EXPORT int InitializeInjection(void);

TKI_EXPORT int
InitializeInjection(void)
{
	static atomic_int called;
	if (tki_init() != 0)
		return 0;   /* not started by trace-record */
	if (atomic_exchange(&called, 1))
		return atomic_load(&state) == TKI_CUDA_STATE_ON;
	const char *env = getenv(TKI_ENV_CUDA);
	unsigned k = TKI_CUDA_ALL;
	if (env && tki_cuda_parse(env, &k, NULL, NULL) < 0) {
		tki_cuda_fail("TRACEKIT_CUDA is not a list of activity kinds");
		return 0;
	}
	if (!k) {
		tki_cuda_fail("--cuda=none");
		return 0;
	}
	struct tki_cupti a;
	char why[512];
	if (tki_cupti_load(&a, why, sizeof(why)) < 0) {
		tki_cuda_fail(why);
		return 0;
	}
	return tki_cuda_attach(&a, k);
}
