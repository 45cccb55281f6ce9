/* SPDX-License-Identifier: MIT */
/*
 * CUDA activity through CUPTI, inside a recorded process: the part of
 * libtracekit-inject.so that the CUDA driver loads through
 * CUDA_INJECTION64_PATH and calls InitializeInjection() in (cuda.c).
 *
 *  - cupti_load.c  finds libcupti with dlopen() (only CUDA programs pay
 *                  for it: the library is loaded into every NVTX program
 *                  too) and fills a table of its functions;
 *  - cuda.c        the session: attaching to CUPTI (or saying why it
 *                  could not), which activity kinds, when (the capture
 *                  schedule), the clock, the thread ids, flushing at each
 *                  flush interval, at exit and on fatal signals;
 *  - cuda_activity.c  activity buffers: a bounded pool handed to CUPTI,
 *                  and each completed buffer converted into the spool by
 *                  cupti_convert.c under the spool lock.
 *
 * Everything calls CUPTI through struct tki_cupti, so that the unit test
 * (tests/unit/test_cuda.c) can drive the session with a fake CUPTI: its
 * failures, its buffers, its callbacks.
 */
#ifndef TK_INJECT_CUDA_RECORD_H
#define TK_INJECT_CUDA_RECORD_H

#include <cupti.h>

#include "cupti_convert.h"
#include "inject.h"

/* libcupti's functions the session uses, by name. */
#define TKI_CUPTI_FUNCTIONS(X)                                           \
	X(cuptiGetVersion)                                               \
	X(cuptiGetResultString)                                          \
	X(cuptiGetCallbackName)                                          \
	X(cuptiGetTimestamp)                                             \
	X(cuptiSubscribe_v2)                                             \
	X(cuptiUnsubscribe)                                              \
	X(cuptiEnableCallback)                                           \
	X(cuptiEnableDomain)                                             \
	X(cuptiSetThreadIdType)                                          \
	X(cuptiActivityRegisterTimestampCallback)                        \
	X(cuptiActivityRegisterCallbacks)                                \
	X(cuptiActivitySetAttribute)                                     \
	X(cuptiActivityEnable)                                           \
	X(cuptiActivityDisable)                                          \
	X(cuptiActivityFlushAll)                                         \
	X(cuptiActivityGetNumDroppedRecords)                             \
	X(cuptiActivityGetNextRecord)                                    \
	X(cuptiGetStreamIdEx)                                            \
	X(cuptiGetContextId)                                             \
	X(cuptiGetDeviceId)

struct tki_cupti {
	void *handle;            /* from dlopen(); NULL for a table filled by hand */
#define TKI_CUPTI_MEMBER(f) __typeof__(f) *f;
	TKI_CUPTI_FUNCTIONS(TKI_CUPTI_MEMBER)
#undef TKI_CUPTI_MEMBER
};

/* Load libcupti and fill `api`: the copy the program already loaded if
 * any, else $TRACEKIT_CUPTI, else the one the library was built with
 * (TKI_CUPTI_PATH), else libcupti.so.13 from the search path.  -1 with
 * a one-line reason in `why` when none could be loaded or one lacks a
 * function. */
int tki_cupti_load(struct tki_cupti *api, char *why, size_t n);

/* ---- the session (cuda.c) ----------------------------------------------------------- */

/* Attach to CUPTI through `api` (copied) for `kinds` (TKI_CUDA_*,
 * protocol.h): the body of InitializeInjection once the process records
 * and libcupti is loaded.  Returns 1 when recording, 0 when it could not
 * attach: then the spool's metadata and the status page say why, and
 * CUPTI is left alone. */
int tki_cuda_attach(const struct tki_cupti *api, unsigned kinds);
/* The process's CUDA state so far: TKI_CUDA_STATE_* (protocol.h). */
int tki_cuda_state(void);
/* Say that CUDA is not recorded in this process, and why: metadata
 * "cuda", the status page; once. */
void tki_cuda_fail(const char *why);

/* ---- activity buffers (cuda_activity.c) ------------------------------------------------ */

/* The converter's settings, fixed when attaching. */
struct tki_cuda_conv {
	int64_t clock_offset;    /* CUPTI ns + offset = CLOCK_REALTIME ns */
	int thread_map;          /* CUPTI thread ids are pthread ids: map them */
	int filter;              /* a window or capture schedule applies */
	size_t buffer_bytes;     /* size of each activity buffer */
	size_t max_buffers;      /* handed out at once, at most */
};

/* Set up the converter into the spool; -1 when out of memory. */
int tki_activity_init(const struct tki_cupti *api, const struct tki_cuda_conv *cv);
/* CUPTI's buffer callbacks. */
void CUPTIAPI tki_activity_requested(uint8_t **buf, size_t *size,
                                     size_t *max_records);
void CUPTIAPI tki_activity_completed(CUcontext ctx, uint32_t stream,
                                     uint8_t *buf, size_t size, size_t valid);
/* The end: write what the converter holds back, its counts. */
void tki_activity_finish(void);
/* The last cuptiActivityFlushAll failed (why): what CUPTI was asked
 * for and never delivered is then written as dropped at the end. */
void tki_activity_final_flush_failed(const char *why);
/* Around this library's own cuptiActivityFlushAll: the buffers it
 * completes on this thread are written by the round (or the end) that
 * asked for them, so they start no flush round of their own; `final`:
 * the last flush, after which no round is started at all. */
void tki_activity_flush_begin(int final);
void tki_activity_flush_end(void);
/* After fork(): forget the parent's converter (its buffers are the
 * parent's CUPTI's). */
void tki_activity_after_fork(void);
/* Write metadata into the spool (lock taken here), again after a new
 * scope. */
void tki_activity_meta(const char *key, const char *value);
/* A context was created (CUPTI's resource callback): its id, device and
 * NULL stream, for the converter before its next buffer. */
void tki_activity_context(uint32_t id, uint32_t device, uint32_t null_stream);
/* An API call with this correlation id begins now (CUPTI's callback):
 * judge it, and the GPU work it launches, by the phase it is made in. */
void tki_activity_launch(uint32_t corr);
/* The capture schedule's active phase began or ended at `ts`. */
void tki_activity_phase(int active, int64_t ts);
/* Where the watermark must wait for GPU records still in CUPTI's
 * buffers, given the time now: now minus the longest delay seen
 * (at least `lag`). */
int64_t tki_activity_hold(int64_t now, int64_t lag);
/* Pthread-to-kernel thread ids, when CUPTI cannot give kernel ids:
 * the calling thread's pair. */
void tki_activity_map_thread(void);

/* Counts, for the end of the recording and the tests. */
struct tki_activity_counts {
	uint64_t buffers;        /* completed buffers converted */
	uint64_t refused;        /* buffer requests refused: pool full */
	uint64_t late;           /* records that came after the hold */
	int64_t max_delay;       /* longest delay of a record, ns */
};
void tki_activity_counts(struct tki_activity_counts *out);
const struct cupti_convert_stats *tki_activity_stats(void);

#endif
