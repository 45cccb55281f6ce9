/* SPDX-License-Identifier: MIT */
/*
 * libtracekit-inject.so: the library trace-record loads into the
 * processes it records.  Internal to the library; the contract with
 * trace-record is protocol.h.
 *
 * How a process records:
 *  - NVTX calls (nvtx.c) append raw records to a buffer of the calling
 *    thread (tbuf.h): no lock, no system call, no encoding on that
 *    path.  The message bytes are copied: the caller's string may be a
 *    stack buffer.
 *  - A flusher thread (flusher.c) wakes every flush interval (or when
 *    a buffer block fills), turns the records into events (pairing
 *    pushes with pops, starts with ends) and writes them into the
 *    process's spool (spool.c), a .tkt stream that trace-record tails.
 *    Each chunk carries a watermark, so trace-record can merge spools
 *    as they grow.
 *  - At exit (and on fatal signals whose action was the default) the
 *    rest is flushed and the spool closed.  A process killed with
 *    SIGKILL leaves its spool as of the last flush, and its status page
 *    tells trace-record how many events it lost.
 *
 * Other event sources of the process use the functions under "Event
 * sources" below: they are thread-safe and write straight into the
 * spool.  CUDA activity (cuda.c, cuda_activity.c, cuda_record.h) writes
 * through the spool's writer under the spool lock instead, with the
 * same accounting, because the CUPTI converter defines its own tracks,
 * devices and strings as records come.
 */
#ifndef TK_INJECT_H
#define TK_INJECT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "tracekit.h"
#include "protocol.h"

#define TKI_EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

static inline int64_t
tki_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- configuration (init.c) ---------------------------------------------- */

struct tki_config {
	char *spool;             /* spool directory, absolute */
	long recorder;           /* pid of trace-record, 0 = unknown */
	int64_t flush_ns;        /* flush interval */
	int64_t win_begin;       /* record events beginning in [begin, end) */
	int64_t win_end;
	char *label;
	char *capture;           /* NVTX range that drives the schedule */
	char *capture_domain;    /* NULL = default domain, "*" = any */
	uint64_t skip, warmup, active, cycles;
	size_t buffer_limit;     /* bytes of thread buffers per process */
	int64_t boot;            /* wall-clock time of boot (process starts) */
};

extern struct tki_config tki_cfg;

/* Recording on: records are taken.  Checked first on every NVTX call. */
extern atomic_int tki_on;

/* Set up recording in this process: idempotent and thread-safe; called
 * by every entry point (InitializeInjectionNvtx2, and later
 * InitializeInjection).  Returns 0 when the process records. */
int tki_init(void);

/* After fork() the child records into its own spool, set up lazily by
 * its first record: returns 0 when the process (now) records. */
int tki_ensure_process(void);
/* Whether trace-record still runs; stop for good when it does not. */
int tki_recorder_alive(void);
void tki_stop_orphaned(void);

/* ---- thread buffers (tbuf.c, tbuf.h) ---------------------------------------- */

struct tki_thread;

/* ---- names: domains, registered strings, categories (registry.c) ---------- */

struct tki_domain {
	uint32_t id;             /* 0 = the default domain */
	char *name;              /* "" for the default domain */
	int capture;             /* its ranges can drive the schedule */
};

struct tki_string {
	uint32_t id;             /* >= 1 */
	uint32_t len;
	struct tki_domain *domain;
	int capture;             /* equals the capture range's name */
	char s[];
};

struct tki_domain *tki_domain_default(void);
/* Find or create; NULL when out of memory. */
struct tki_domain *tki_domain_get(const char *name);
struct tki_domain *tki_domain_by_id(uint32_t id);
struct tki_string *tki_string_register(struct tki_domain *d, const char *s,
                                       size_t len);
struct tki_string *tki_string_by_id(uint32_t id);
void tki_category_set(uint32_t domain, uint32_t category, const char *name);
/* Categories named since the last call with the same cursor (starting
 * at 0): calls fn for each and advances *cursor. */
void tki_category_each(size_t *cursor,
                       void (*fn)(void *arg, const char *domain,
                                  uint32_t category, const char *name),
                       void *arg);
/* NVTX names of OS threads (nvtxNameOsThread). */
void tki_thread_name_set(int64_t tid, const char *name);
/* Copies the name into buf; returns 1 if there is one. */
int tki_thread_name_get(int64_t tid, char *buf, size_t n);
/* Names given to CUDA objects through NVTX (nvtxNameCudaStream, ...),
 * by kind and handle, for the GPU converter to apply. */
enum tki_resource {
	TKI_RES_CU_DEVICE = 1, TKI_RES_CU_CONTEXT, TKI_RES_CU_STREAM,
	TKI_RES_CU_EVENT, TKI_RES_CUDA_DEVICE, TKI_RES_CUDA_STREAM,
	TKI_RES_CUDA_EVENT,
};
void tki_resource_name_set(enum tki_resource kind, uint64_t handle,
                           const char *name);
int tki_resource_name_get(enum tki_resource kind, uint64_t handle, char *buf,
                          size_t n);
/* Forget what belongs to the parent after fork (thread names); hold
 * the registry across fork() (atfork handlers). */
void tki_registry_after_fork(void);
/* Write every name so far into the durable file's names log (a new
 * spool); later ones are logged as they come. */
void tki_registry_log_all(void);
void tki_registry_lock(void);
void tki_registry_unlock(void);
/* UTF-8 copy of a wide string (NVTX *W calls); malloc'd, NULL on failure. */
char *tki_wide_to_utf8(const wchar_t *w, size_t *len);

/* ---- capture schedule and window (capture.c) -------------------------------- */

enum tki_phase {
	TKI_PHASE_OFF = 0,       /* waiting, skipping, or after the last cycle */
	TKI_PHASE_WARMUP = 1,    /* counted, not recorded */
	TKI_PHASE_ACTIVE = 2,    /* recorded */
};

extern atomic_int tki_phase;

/* Whether an event that begins at ts is recorded. */
static inline int
tki_recording(int64_t ts)
{
	return ts >= tki_cfg.win_begin && ts < tki_cfg.win_end &&
	       atomic_load_explicit(&tki_phase, memory_order_relaxed) ==
	               TKI_PHASE_ACTIVE;
}

void tki_capture_init(void);
/* An occurrence of the capture range begins / ends (in any thread). */
void tki_capture_begin(void);
void tki_capture_end(void);
/* Whether a range of this domain and name is the capture range. */
int tki_capture_matches(const struct tki_domain *d, const char *s, size_t len);
/* Called, on the thread that changed it, when the phase changes. */
void tki_on_phase(void (*fn)(void *arg, enum tki_phase phase), void *arg);
void tki_capture_notify(void);

/* ---- the spool (spool.c) ------------------------------------------------------- */

/* The spool lock guards the writer and the definitions below. */
extern pthread_mutex_t tki_lock;
extern struct tk_writer *tki_writer;       /* NULL when not recording */
extern volatile struct tki_status *tki_status;
/* Bumped whenever the writer starts a new scope (reopened after the
 * program closed its descriptor): ids from before are void. */
extern uint32_t tki_scope;

int tki_spool_open(void);
/* Write a chunk with watermark w; publish open_since first.  Lock held. */
int tki_spool_flush(int64_t w, int64_t open_since);
/* Close with an end marker (exit; -1 when it could not be written) or
 * abandon (after fork, recorder gone: `remove` deletes the files).
 * Lock held. */
int tki_spool_close(void);
void tki_spool_abandon(int remove);
/* The durable snapshot written since tki_buf_snap_begin agrees with the
 * spool as flushed: commit it, then let trace-record read that far
 * (protocol.h).  Lock held, right after a successful flush. */
void tki_spool_commit(void);
/* A flush failed (a full disk): the writer is gone, recording goes on
 * into the durable buffers for trace-record to recover.  Lock held. */
int tki_spool_failed(void);
/* Count one event written by the library itself (not from a thread
 * buffer) in the status page.  Lock held. */
void tki_spool_count_direct(uint64_t n);
/* Count records lost for want of memory (a thread's buffers, a domain's
 * levels): counted as produced (in `direct`) and as lost to memory
 * (`nomem`), so that trace-record says why they are missing.  Any
 * thread. */
void tki_spool_count_nomem(uint64_t n);
/* Intern a string in the current scope (lock held); 0 on failure. */
uint32_t tki_spool_string(const char *s, size_t len);
/* The process's track, and a thread's by kernel tid, defined on first
 * use; `refresh` reads the thread's name again.  Lock held. */
uint32_t tki_spool_process(void);
uint32_t tki_spool_thread(int64_t tid, int refresh);

/* ---- the flusher (flusher.c) ------------------------------------------------- */

int tki_flusher_start(void);
/* Wake it now (a buffer block filled); async-signal-safe. */
void tki_flusher_wake(void);
/* Last flush at exit: stop the thread, drain everything, close the
 * spool.  Open ranges are written as unfinished. */
void tki_flusher_finish(void);
/* The same from a signal handler: the flusher thread does it; waits
 * at most `timeout_ns`.  Async-signal-safe. */
void tki_flusher_finish_async(int64_t timeout_ns);
/* fork() waits for the flusher to be between two wake-ups: prepare
 * before fork, release after it (the child of a live recorder starts
 * afresh in tki_flusher_after_fork instead). */
void tki_flusher_fork_prepare(void);
void tki_flusher_fork_release(void);
/* Forget the parent's flusher and buffers after fork. */
void tki_flusher_after_fork(void);
/* Run one flush round now (tests, and the recording window's end). */
void tki_flusher_round(int final);

/* ==== Event sources ===========================================================
 *
 * Thread-safe; usable from any thread once tki_init() returned 0.  Ids
 * are track/device ids of the process's spool; they stay valid until
 * tki_scope changes (rare: the program closed the spool descriptor),
 * after which they must be looked up again, and after fork() (a child
 * has its own spool).
 *
 * The CUDA part (cuda.c) uses the hooks: tki_on_flush() to flush
 * CUPTI's buffers before each round (the final hook runs from the
 * library's destructor, after the program's atexit handlers, when CUPTI
 * may be gone: it flushes from an atexit handler of its own), holds for
 * GPU records not delivered yet, and tki_on_phase() to start collection
 * at the capture schedule's warmup.
 */

/* Append events (strings by pointer or by tki_string() id).  Returns
 * the number written; fewer when recording is off.  Events beginning
 * outside the recording window or the capture schedule's active phase
 * are the caller's to filter (tki_recording()). */
size_t tki_events(const struct tk_event *ev, size_t n);
int tki_event(const struct tk_event *ev);
/* Track of this process, and of one of its threads by kernel tid
 * (defined on first use); 0 when not recording. */
uint32_t tki_process_track(void);
uint32_t tki_thread_track(int64_t tid);
/* Define a device, a stream (s->process 0 = this process) or a
 * counter; returns its id, 0 on failure. */
uint32_t tki_device(const struct tk_device *d);
uint32_t tki_stream(const struct tk_stream *s);
uint32_t tki_counter(const struct tk_counter *c);
/* A string id for events (name_id and the like). */
uint32_t tki_string(const char *s);
/* Watermark holds: a source that will still deliver events beginning
 * at or after t (GPU records in CUPTI's buffers) holds the spool's
 * watermark there.  tki_hold_new() returns a handle (-1 if none left);
 * tki_hold_set(h, INT64_MAX) releases. */
int tki_hold_new(void);
void tki_hold_set(int h, int64_t t);
/* Called on the flusher's thread before each flush, without the spool
 * lock (so it may call tki_events, or cuptiActivityFlushAll whose
 * callbacks do); `final` at exit. */
void tki_on_flush(void (*fn)(void *arg, int final), void *arg);

/* Internal to the flusher: the lowest hold, and running the hooks. */
int64_t tki_holds_min(void);
void tki_run_flush_hooks(int final);

#endif
