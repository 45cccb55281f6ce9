/* SPDX-License-Identifier: MIT */
/*
 * cupti_convert.h - turn CUPTI activity records into tracekit events.
 *
 * The injection library hands every buffer CUPTI completes to
 * cupti_convert_buffer(); the converter writes devices, GPU streams,
 * kernels, copies, memsets, memory allocations (and a "device memory"
 * counter per device), runtime and driver API calls, synchronisations,
 * CUPTI overhead and lost-record reports to a tk_writer.  It knows
 * nothing about the injection library: what it needs from it (process
 * and thread tracks, the clock) comes through struct cupti_convert_host.
 *
 * Assumptions, stated once:
 *  - Thread ids: the host calls
 *    cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) before
 *    enabling activities, so CUPTI's threadId is the kernel tid
 *    (gettid()), the id NVTX and process events use.  With CUPTI's
 *    default type it would be pthread_self() cut to 32 bits.
 *  - Clock: on Linux x86_64 and aarch64 CUPTI's timestamps are
 *    CLOCK_REALTIME ns (cupti_activity.h, at
 *    cuptiActivityRegisterTimestampCallback; cuptiGetTimestamp() matches
 *    clock_gettime(CLOCK_REALTIME) here), the clock of tracekit
 *    recordings, so the default offset 0 is right.  A host that
 *    registers its own timestamp callback, or measured an offset, says
 *    so through `clock` / `clock_offset`.
 *  - Record layouts are those of the CUPTI headers the converter was
 *    compiled with (CUDA 13.0).  libcupti writes the layouts of its own
 *    version, so the host must refuse a libcupti of another version:
 *    cupti_convert_check_version().
 *  - One thread at a time: CUPTI may complete buffers on several
 *    threads; the host serialises calls (one lock around the converter
 *    and the writer).
 *
 * Kernel names: CUPTI gives mangled names.  The converter demangles them
 * with __cxa_demangle, found at run time with dlsym(RTLD_DEFAULT) in the
 * recorded process (every CUDA C++ program and Python with PyTorch has
 * libstdc++ loaded).  It never loads libstdc++ itself: a second copy
 * could clash with the program's own.  Without a demangler, or for names
 * that are not C++ (extern "C", PTX, Triton), the event name is the name
 * CUPTI gave and the mangled name is left empty.
 *
 * Functions return TK_OK or a negative TK_E* code from the writer when
 * it failed for good (I/O error, out of memory); records the converter
 * cannot use never fail a call: they are counted (cupti_convert_stats)
 * and reported in the trace as TK_DROPPED events.
 */
#ifndef TK_CUPTI_CONVERT_H
#define TK_CUPTI_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include <cupti_activity.h>

#include "tracekit.h"

/* What the converter needs from the injection library. */
struct cupti_convert_host {
	void *arg;               /* passed to every callback */

	/* Track of process `pid`; pid 0 means the recorded process itself
	 * (GPU streams, devices and lost-record reports belong to it).
	 * Required. */
	uint32_t (*process_track)(void *arg, uint32_t pid);

	/* Track of thread `tid` (a kernel tid, see above) of process `pid`,
	 * defining it when new; 0 if it cannot.  NULL or 0: the events go
	 * on the process track.  Answers are cached per (pid, tid). */
	uint32_t (*thread_track)(void *arg, uint32_t pid, uint32_t tid);

	/* A CUPTI timestamp in tracekit ns (CLOCK_REALTIME).  NULL: the
	 * timestamp plus `clock_offset`. */
	int64_t (*clock)(void *arg, uint64_t cupti_ns);
	int64_t clock_offset;

	/* Now, in tracekit ns: the time of lost-record reports.  NULL:
	 * clock_gettime(CLOCK_REALTIME). */
	int64_t (*now)(void *arg);

	const char *host_name;   /* host of device definitions; NULL = "" */
	unsigned flags;          /* CUPTI_CONVERT_* */

	/* Whether to write an event (the capture window of the host, say):
	 * 0 skips it, counted in stats.filtered, not as lost.  Called for
	 * every event but lost-record reports, which are always written.
	 * NULL: every event. */
	int (*keep)(void *arg, const struct tk_event *ev);

	/* libcupti's functions, for a host that loads libcupti with
	 * dlopen(): the converter's weak references to it stay unresolved
	 * then.  NULL: the functions linked into the program, if any. */
	CUptiResult (*next_record)(uint8_t *buf, size_t valid_size,
	                           CUpti_Activity **rec);
	CUptiResult (*callback_name)(CUpti_CallbackDomain domain,
	                             uint32_t cbid, const char **name);
	CUptiResult (*result_string)(CUptiResult result, const char **str);
};

/* Keep kernel names as CUPTI gives them (no demangling). */
#define CUPTI_CONVERT_NO_DEMANGLE 0x1u
/* cupti_convert_buffer(): do not free the memory cupti_activity.h says
 * the client owns (device names, overhead data); see
 * cupti_convert_release(). */
#define CUPTI_CONVERT_KEEP_RECORD_MEMORY 0x2u

/* Records counted by kind up to this CUpti_ActivityKind; larger kinds
 * share the last slot. */
#define CUPTI_CONVERT_KINDS 64

struct cupti_convert_stats {
	uint64_t records;        /* records given to the converter */
	uint64_t events;         /* events written (definitions not counted) */
	uint64_t by_kind[CUPTI_CONVERT_KINDS]; /* records per activity kind */
	uint64_t ignored;        /* records of kinds it does not convert */
	uint64_t no_timestamp;   /* spans CUPTI could not time (0, 0) */
	uint64_t bad_timestamp;  /* end before start, or out of range */
	uint64_t malformed;      /* values it cannot interpret */
	uint64_t rejected;       /* events the writer refused */
	uint64_t dropped;        /* records CUPTI reported dropped */
	uint64_t unreadable;     /* buffers whose walk stopped on an error */
	uint64_t filtered;       /* events the host's keep() declined */
};

struct cupti_convert;

/* A converter writing to `w`, which it borrows (it must outlive the
 * converter); `host` is copied.  NULL when out of memory, or when `w`,
 * `host` or host->process_track is missing. */
struct cupti_convert *cupti_convert_new(struct tk_writer *w,
                                        const struct cupti_convert_host *host);
/* Frees the converter (not the writer).  Call cupti_convert_finish()
 * first, or pending events are lost.  NULL is a no-op. */
void cupti_convert_free(struct cupti_convert *c);

/* Convert one record.  The record is borrowed: strings in it are copied
 * or interned before the call returns.  Records of kinds the converter
 * does not handle are counted and skipped.  `rec` must hold a whole
 * record of its kind (cuptiActivityGetNextRecord guarantees it). */
int cupti_convert_record(struct cupti_convert *c, const CUpti_Activity *rec);
/* What a CONTEXT record says, learnt sooner (CUPTI's resource callback):
 * CUPTI sends the record itself after work in the context. */
int cupti_convert_context(struct cupti_convert *c, uint32_t context, uint32_t device,
                          uint32_t null_stream);

/* Free what cupti_activity.h says the client owns in a record that came
 * from CUPTI: CUpti_ActivityDevice5.name and
 * CUpti_ActivityOverhead3.overheadData ("Client is responsible for
 * freeing this memory"), and clear those pointers.  Other kinds: no-op. */
void cupti_convert_release(CUpti_Activity *rec);

/* Convert every record of a completed CUPTI buffer (walked with
 * cuptiActivityGetNextRecord), release each record's client-owned memory
 * unless CUPTI_CONVERT_KEEP_RECORD_MEMORY, and report `dropped` records,
 * the count cuptiActivityGetNumDroppedRecords() gave for this buffer's
 * context and stream, as a TK_DROPPED event.  The buffer stays the
 * caller's.  A walk that stops on an error is reported in the trace and
 * in stats.unreadable.  Needs libcupti at run time, linked or given as
 * host->next_record: TK_EINVAL (and cupti_convert_error()) without. */
int cupti_convert_buffer(struct cupti_convert *c, uint8_t *buf,
                         size_t valid_size, size_t dropped);

/* Report `count` lost records as a TK_DROPPED event on the process
 * track, now, with `reason` (e.g. "CUPTI had no buffer space"). */
int cupti_convert_dropped(struct cupti_convert *c, uint64_t count,
                          const char *reason);

/* End of recording (or before the writer is closed): write events still
 * held back (synchronisations waiting for the API call that tells their
 * thread), report records lost since the last report, and name the
 * kinds that were skipped in metadata "cupti.ignored" ("KIND:COUNT ...",
 * CUpti_ActivityKind numbers, ">=63:N" for larger ones).  The converter
 * stays usable. */
int cupti_convert_finish(struct cupti_convert *c);

/* The writer was reopened (a new trace scope): forget every string,
 * track and device id.  Devices and contexts seen so far are defined
 * again when next used; device memory in use is kept. */
void cupti_convert_reset(struct cupti_convert *c);

/* The writer was replaced (the host reopened its output: a new trace
 * scope): write to `w` from now on, forgetting every id as
 * cupti_convert_reset() does. */
void cupti_convert_set_writer(struct cupti_convert *c, struct tk_writer *w);

/* Counters so far (borrowed). */
const struct cupti_convert_stats *cupti_convert_stats(
	const struct cupti_convert *c);

/* Bytes of device memory the process has allocated on CUDA device
 * `device` (CUPTI's device id, the CUDA ordinal) and the peak so far,
 * from MEMORY2/MEMORY records of device memory.  -1 if the device was
 * never seen. */
int cupti_convert_device_memory(const struct cupti_convert *c,
                                uint32_t device, int64_t *in_use,
                                int64_t *peak);

/* One line about the last problem (a refused event, an unreadable
 * buffer, a writer error); "" if none. */
const char *cupti_convert_error(const struct cupti_convert *c);

/* 0 if the libcupti in use writes the record layouts this converter was
 * compiled for; otherwise -1 and a one-line reason in `msg`, e.g.
 * "libcupti API version 130200, built for 130001: its records would be
 * misread".  Call before enabling activities. */
int cupti_convert_check_version(char *msg, size_t len);
/* The same for a version the host got itself (cuptiGetVersion() called
 * through dlopen()). */
int cupti_convert_check_api_version(uint32_t version, char *msg, size_t len);

#endif
