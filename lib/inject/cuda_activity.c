/* SPDX-License-Identifier: MIT */
/*
 * CUPTI's activity buffers: a bounded pool of zeroed buffers handed to
 * CUPTI, and each buffer it completes converted into the spool.
 *
 * CUPTI completes buffers on any thread: its own, the flusher's (inside
 * cuptiActivityFlushAll), or a program thread whose buffer filled.  The
 * conversion runs under the spool lock (the converter writes to the
 * spool's writer), so nothing that holds that lock may call CUPTI.
 *
 * What the converter needs from the library: the process's track, a
 * thread's track by kernel tid (CUPTI gives kernel tids, or pthread ids
 * mapped here when it cannot), the offset of CUPTI's clock, and which
 * events to keep: those that begin inside the recording window and,
 * with a capture schedule, in an active phase.  GPU work is judged by
 * the API call that launched it (its correlation id), so that a kernel
 * launched in the last active step and run after it is kept, and one
 * launched before the window is not.  The call is judged as it begins,
 * in CUPTI's callback (CUPTI delivers a kernel's record before its
 * launch's as often as not); work whose call was not seen is judged by
 * its own begin.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cuda_record.h"
#include "tbuf.h"

#define CORR_SLOTS (1u << 18)       /* launch verdicts remembered */
#define PHASES 256                  /* active phases remembered */
#define METAS 8                     /* metadata written again per scope */
#define THREADS 4096                /* pthread ids mapped */
#define NEW_CONTEXTS 64             /* contexts waiting for the converter */

static struct tki_cupti api;
static struct tki_cuda_conv cv;
static struct cupti_convert *conv;  /* spool lock */
static uint32_t conv_scope;
static char host_name[256];

static atomic_size_t outstanding;   /* buffers CUPTI holds */
static atomic_ullong refused;
static uint64_t buffers, finished_at, late;
static int64_t max_delay, hold_mark, buffer_time;
static int finished;

static struct {
	char *key, *value;
} metas[METAS];
static int nmetas;

/* Launch calls kept or not, by correlation id: corr << 1 | keep, 0 for
 * none.  Written by the program's threads (tki_activity_launch) and the
 * converter, so one atomic word each. */
static _Atomic uint64_t *verdicts;

/* Contexts created since the last buffer, from CUPTI's resource
 * callback: handed to the converter before the next buffer's records.
 * A lock of their own: the callback runs inside CUPTI, which must never
 * wait for the spool lock (its holder calls CUPTI). */
static pthread_mutex_t contexts_lock = PTHREAD_MUTEX_INITIALIZER;
struct new_context {
	uint32_t id, device, null_stream;
};
static struct new_context new_contexts[NEW_CONTEXTS];
static unsigned nnew_contexts;

/* Active phases of the capture schedule, oldest first (spool lock). */
static struct {
	int64_t begin, end;      /* end INT64_MAX: still active */
} phases[PHASES];
static unsigned nphases, phase_first;

/* pthread id (cut to 32 bits, as CUPTI gives it) -> kernel tid. */
static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint32_t pthread;
	uint32_t tid;
} threads[THREADS];
static unsigned nthreads;
static __thread int thread_mapped __attribute__((tls_model("initial-exec")));

/* ---- what the converter asks ------------------------------------------------------ */

static uint32_t
host_process(void *arg, uint32_t pid)
{
	(void)arg;
	(void)pid;
	return tki_spool_process();
}

static uint32_t
map_lookup(uint32_t id)
{
	uint32_t tid = 0;
	pthread_mutex_lock(&map_lock);
	for (unsigned i = 0; i < nthreads; i++)
		if (threads[i].pthread == id)
			tid = threads[i].tid;
	pthread_mutex_unlock(&map_lock);
	return tid;
}

static uint32_t
host_thread(void *arg, uint32_t pid, uint32_t tid)
{
	(void)arg;
	if (pid && pid != (uint32_t)getpid())
		return 0;
	if (cv.thread_map && !(tid = map_lookup(tid)))
		return 0; /* a thread we cannot name: the process track */
	return tki_spool_thread(tid, 0);
}

static uint64_t
correlation(const struct tk_event *e)
{
	switch (e->kind) {
	case TK_KERNEL: return e->u.kernel.correlation;
	case TK_MEMCPY: return e->u.memcpy.correlation;
	case TK_MEMSET: return e->u.memset.correlation;
	case TK_MEMORY: return e->u.memory.correlation;
	case TK_SYNC: return e->u.sync.correlation;
	default: return 0;
	}
}

/* Whether the schedule was in an active phase at ts. */
static int
was_active(int64_t ts)
{
	if (!tki_cfg.capture)
		return 1;
	for (unsigned i = nphases; i-- > 0;) {
		unsigned k = (phase_first + i) % PHASES;
		if (ts >= phases[k].begin)
			return ts < phases[k].end;
	}
	return 0;
}

static int
in_window(int64_t ts)
{
	return ts >= tki_cfg.win_begin && ts < tki_cfg.win_end && was_active(ts);
}

static void
remember(uint64_t corr, int keep)
{
	atomic_store_explicit(&verdicts[corr & (CORR_SLOTS - 1)], corr << 1 | (keep != 0),
	                      memory_order_relaxed);
}

/* Whether the launch call `corr` was judged; *keep says how. */
static int
judged(uint64_t corr, int *keep)
{
	uint64_t v = atomic_load_explicit(&verdicts[corr & (CORR_SLOTS - 1)],
	                                  memory_order_relaxed);
	if (!corr || v >> 1 != corr)
		return 0;
	*keep = (int)(v & 1);
	return 1;
}

static int
host_keep(void *arg, const struct tk_event *e)
{
	(void)arg;
	int64_t delay = buffer_time - e->ts;
	if (delay > max_delay)
		max_delay = delay;
	if (e->ts < hold_mark)
		late++;
	if (!cv.filter)
		return 1;
	int api_call = e->kind == TK_API;
	uint64_t c = api_call ? e->u.api.correlation : correlation(e);
	int keep;
	if (judged(c, &keep))
		return keep;
	keep = in_window(e->ts);
	if (api_call && c)
		remember(c, keep);
	return keep;
}

/* ---- the converter and the spool's scope (spool lock held) ---------------------------- */

/* Ready to write: the converter follows the spool into a new scope. */
static int
ready(void)
{
	if (!conv || !tki_writer)
		return 0;
	if (conv_scope != tki_scope) {
		cupti_convert_set_writer(conv, tki_writer);
		conv_scope = tki_scope;
		for (int i = 0; i < nmetas; i++)
			tk_writer_meta(tki_writer, metas[i].key, metas[i].value);
	}
	return 1;
}

/* Give the converter the contexts created since the last call (spool
 * lock held). */
static void
take_new_contexts(void)
{
	pthread_mutex_lock(&contexts_lock);
	for (unsigned i = 0; i < nnew_contexts; i++)
		cupti_convert_context(conv, new_contexts[i].id, new_contexts[i].device,
		                      new_contexts[i].null_stream);
	nnew_contexts = 0;
	pthread_mutex_unlock(&contexts_lock);
}

void
tki_activity_context(uint32_t id, uint32_t device, uint32_t null_stream)
{
	pthread_mutex_lock(&contexts_lock);
	if (nnew_contexts < NEW_CONTEXTS) /* else: CUPTI's own record names it later */
		new_contexts[nnew_contexts++] = (struct new_context){ id, device, null_stream };
	pthread_mutex_unlock(&contexts_lock);
}

/* The records CUPTI has delivered, by counted kind, into the durable
 * file: against what was issued (cuda.c), what a process killed before
 * CUPTI completed its buffers lost.  Spool lock held. */
static void
publish_delivered(void)
{
	const uint64_t *k = cupti_convert_stats(conv)->by_kind;
	uint64_t n[TKI_CUDA_COUNTED];
	n[TKI_CUDA_COUNT_KERNEL] = k[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] +
	                           k[CUPTI_ACTIVITY_KIND_KERNEL];
	n[TKI_CUDA_COUNT_MEMCPY] = k[CUPTI_ACTIVITY_KIND_MEMCPY] +
	                           k[CUPTI_ACTIVITY_KIND_MEMCPY2];
	n[TKI_CUDA_COUNT_MEMSET] = k[CUPTI_ACTIVITY_KIND_MEMSET];
	n[TKI_CUDA_COUNT_RUNTIME] = k[CUPTI_ACTIVITY_KIND_RUNTIME];
	n[TKI_CUDA_COUNT_DRIVER] = k[CUPTI_ACTIVITY_KIND_DRIVER];
	tki_buf_cuda_delivered(n);
}

/* Count what the converter wrote in the status page: what a killed
 * process lost is told from it. */
static void
count_events(uint64_t before)
{
	uint64_t now = cupti_convert_stats(conv)->events;
	if (now > before)
		tki_spool_count_direct(now - before);
}

int
tki_activity_init(const struct tki_cupti *a, const struct tki_cuda_conv *c)
{
	api = *a;
	cv = *c;
	if (gethostname(host_name, sizeof(host_name)) < 0)
		snprintf(host_name, sizeof(host_name), "localhost");
	host_name[sizeof(host_name) - 1] = 0;
	if (cv.filter && !verdicts &&
	    !(verdicts = calloc(CORR_SLOTS, sizeof(*verdicts))))
		return -1;
	struct cupti_convert_host h = { 0 };
	h.process_track = host_process;
	h.thread_track = host_thread;
	h.clock_offset = cv.clock_offset;
	h.host_name = host_name;
	h.keep = host_keep;
	h.next_record = api.cuptiActivityGetNextRecord;
	h.callback_name = api.cuptiGetCallbackName;
	h.result_string = api.cuptiGetResultString;
	pthread_mutex_lock(&tki_lock);
	if (tki_writer && !conv && (conv = cupti_convert_new(tki_writer, &h)))
		conv_scope = tki_scope;
	int ok = conv != NULL;
	pthread_mutex_unlock(&tki_lock);
	return ok ? 0 : -1;
}

void
tki_activity_meta(const char *key, const char *value)
{
	pthread_mutex_lock(&tki_lock);
	if (tki_writer)
		tk_writer_meta(tki_writer, key, value);
	if (nmetas < METAS) {
		char *k = strdup(key), *v = strdup(value);
		if (k && v) {
			metas[nmetas].key = k;
			metas[nmetas++].value = v;
		} else {
			free(k);
			free(v);
		}
	}
	pthread_mutex_unlock(&tki_lock);
}

/* ---- buffers ------------------------------------------------------------------------ */

/* Depth of this library's own cuptiActivityFlushAll on this thread, and
 * whether the last one has begun (tki_activity_flush_begin). */
static _Thread_local int own_flush;
static atomic_int ending;

void CUPTIAPI
tki_activity_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
	*buf = NULL;
	*size = 0;
	*max_records = 0; /* as many as fit */
	if (atomic_fetch_add(&outstanding, 1) >= cv.max_buffers) {
		atomic_fetch_sub(&outstanding, 1);
		atomic_fetch_add(&refused, 1);
		return;
	}
	/* zeroed, as CUPTI was told (ZEROED_OUT_ACTIVITY_BUFFER), so that
	 * it does not clear it on a program thread; fresh pages are zero
	 * without being touched */
	uint8_t *b = calloc(1, cv.buffer_bytes);
	if (!b) {
		atomic_fetch_sub(&outstanding, 1);
		atomic_fetch_add(&refused, 1);
		return;
	}
	*buf = b;
	*size = cv.buffer_bytes;
}

void CUPTIAPI
tki_activity_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                       size_t valid)
{
	(void)size;
	size_t dropped = 0;
	if (api.cuptiActivityGetNumDroppedRecords &&
	    api.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) != CUPTI_SUCCESS)
		dropped = 0;
	pthread_mutex_lock(&tki_lock);
	if (ready()) {
		uint64_t before = cupti_convert_stats(conv)->events;
		buffer_time = tki_now();
		take_new_contexts();
		/* an error is the writer's, for good: the spool says the rest */
		cupti_convert_buffer(conv, buf, buf ? valid : 0, dropped);
		count_events(before);
		publish_delivered();
		buffers++;
	}
	pthread_mutex_unlock(&tki_lock);
	if (buf) {
		free(buf);
		atomic_fetch_sub(&outstanding, 1);
	}
	/* What was just converted waits in the writer until a flush round
	 * writes it to the spool; a SIGKILL before that loses it, and only
	 * the status page's total counts it, not by kind.  A buffer CUPTI
	 * completed on its own (it filled) may come a whole flush interval
	 * before the next round: start one now (not for the buffers of
	 * our own flushes, which their round or the end writes). */
	if (buf && valid && !own_flush && !atomic_load(&ending))
		tki_flusher_wake();
}

void
tki_activity_flush_begin(int final)
{
	own_flush++;
	if (final)
		atomic_store(&ending, 1);
}

void
tki_activity_flush_end(void)
{
	own_flush--;
}

/* ---- the end, fork, the schedule ---------------------------------------------------- */

/* Why the last flush failed, or empty; and the records of each counted
 * kind already written as never delivered.  Spool lock. */
static char final_flush_why[200];
static uint64_t undelivered_said[TKI_CUDA_COUNTED];

void
tki_activity_final_flush_failed(const char *why)
{
	pthread_mutex_lock(&tki_lock);
	snprintf(final_flush_why, sizeof(final_flush_why),
	         "CUDA activity CUPTI never delivered: its last flush failed (%s)", why);
	pthread_mutex_unlock(&tki_lock);
}

/* After a last flush that failed, what was issued (cuda.c) and never
 * delivered is lost: counted as dropped, kind by kind, or the trace
 * would have fewer kernels than the program launched and not a word
 * about it.  (A last flush that succeeds delivers everything.)  Spool
 * lock held. */
static void
write_undelivered(void)
{
	uint64_t issued[TKI_CUDA_COUNTED], delivered[TKI_CUDA_COUNTED];
	if (!final_flush_why[0] || !tki_writer || tki_buf_cuda_counts(issued, delivered) < 0)
		return;
	for (unsigned k = 0; k < TKI_CUDA_COUNTED; k++) {
		uint64_t lost = issued[k] > delivered[k] ? issued[k] - delivered[k] : 0;
		if (lost <= undelivered_said[k])
			continue;
		struct tk_event e = { 0 };
		e.kind = TK_DROPPED;
		e.track = tki_spool_process();
		e.ts = tki_now();
		e.name = tki_cuda_counted_names[k];
		e.u.dropped.count = lost - undelivered_said[k];
		e.u.dropped.reason = final_flush_why;
		undelivered_said[k] = lost;
		tki_spool_count_direct(1);
		tk_writer_event(tki_writer, &e);
	}
}

void
tki_activity_finish(void)
{
	pthread_mutex_lock(&tki_lock);
	/* again only when buffers came since (the program's teardown) */
	if (ready() && (!finished || buffers != finished_at || final_flush_why[0])) {
		uint64_t before = cupti_convert_stats(conv)->events;
		take_new_contexts();
		cupti_convert_finish(conv);
		count_events(before);
		write_undelivered();
		const struct cupti_convert_stats *st = cupti_convert_stats(conv);
		char b[400];
		snprintf(b, sizeof(b),
		         "pid %ld: %llu records, %llu events, %llu dropped by CUPTI, "
		         "%llu buffers (%llu refused: pool full), %llu late, "
		         "longest delay %.3f s",
		         (long)getpid(), (unsigned long long)st->records,
		         (unsigned long long)st->events,
		         (unsigned long long)st->dropped,
		         (unsigned long long)buffers,
		         (unsigned long long)atomic_load(&refused),
		         (unsigned long long)late, (double)max_delay / 1e9);
		tk_writer_meta(tki_writer, "cuda.stats", b);
		finished = 1;
		finished_at = buffers;
	}
	pthread_mutex_unlock(&tki_lock);
}

void
tki_activity_after_fork(void)
{
	/* the child's CUPTI has none of the parent's state: what the
	 * converter holds is the parent's to write */
	cupti_convert_free(conv);
	conv = NULL;
	atomic_store(&outstanding, 0);
	for (int i = 0; i < nmetas; i++) {
		free(metas[i].key);
		free(metas[i].value);
	}
	nmetas = 0;
	pthread_mutex_init(&map_lock, NULL);
}

void
tki_activity_launch(uint32_t corr)
{
	if (verdicts && corr)
		remember(corr, tki_recording(tki_now()));
}

void
tki_activity_phase(int active, int64_t ts)
{
	pthread_mutex_lock(&tki_lock);
	unsigned last = (phase_first + nphases - 1) % PHASES;
	int open = nphases && phases[last].end == INT64_MAX;
	if (active && !open) {
		if (nphases == PHASES) {
			phase_first = (phase_first + 1) % PHASES;
			nphases--;
		}
		unsigned k = (phase_first + nphases++) % PHASES;
		phases[k].begin = ts;
		phases[k].end = INT64_MAX;
	} else if (!active && open) {
		phases[last].end = ts;
	}
	pthread_mutex_unlock(&tki_lock);
}

int64_t
tki_activity_hold(int64_t now, int64_t lag)
{
	pthread_mutex_lock(&tki_lock);
	int64_t d = max_delay > lag / 2 ? 2 * max_delay : lag;
	hold_mark = now - d;
	int64_t h = hold_mark;
	pthread_mutex_unlock(&tki_lock);
	return h;
}

void
tki_activity_map_thread(void)
{
	if (thread_mapped)
		return;
	thread_mapped = 1;
	uint32_t id = (uint32_t)(uintptr_t)pthread_self();
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	pthread_mutex_lock(&map_lock);
	unsigned i;
	for (i = 0; i < nthreads; i++)
		if (threads[i].pthread == id)
			break; /* a new thread where an old one was */
	if (i < THREADS) {
		threads[i].pthread = id;
		threads[i].tid = tid;
		if (i == nthreads)
			nthreads++;
	}
	pthread_mutex_unlock(&map_lock);
}

void
tki_activity_counts(struct tki_activity_counts *out)
{
	pthread_mutex_lock(&tki_lock);
	out->buffers = buffers;
	out->refused = atomic_load(&refused);
	out->late = late;
	out->max_delay = max_delay;
	pthread_mutex_unlock(&tki_lock);
}

const struct cupti_convert_stats *
tki_activity_stats(void)
{
	return conv ? cupti_convert_stats(conv) : NULL;
}
