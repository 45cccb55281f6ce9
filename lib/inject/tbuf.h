/* SPDX-License-Identifier: MIT */
/*
 * Per-thread record buffers.  Each thread appends raw records to its
 * own chain of blocks and publishes how far it wrote with a release
 * store; the flusher reads up to there and frees blocks it finished
 * once what it made of them is committed (flusher.c).  One writer and
 * one reader per block, so no lock and no atomic read-modify-write on
 * the path of an NVTX call.  The blocks are units of the durable
 * buffer file (durable.c), mapped shared: the same stores that publish
 * a record to the flusher leave it for trace-record if the process
 * dies.
 */
#ifndef TK_INJECT_TBUF_H
#define TK_INJECT_TBUF_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "inject.h"

#define TKI_BLOCK_BYTES (TKI_BUF_UNIT - (uint32_t)sizeof(struct tki_block))

/* ---- the durable buffer file (durable.c) --------------------------------------- */

int tki_buf_open(const char *file, size_t buffer_limit, int64_t win_end);
/* After fork (the mapping is the parent's) or a failed start: unmap
 * without writing; `remove` deletes the file. */
void tki_buf_forget(int remove);
/* The recorder is gone: remove the file, keep the mapping. */
void tki_buf_unlink(void);
/* The last flush is done: nothing for trace-record to recover. */
void tki_buf_closed(void);
/* Blocks of `units` units; NULL when the file has no room.  Pool lock. */
struct tki_block *tki_buf_alloc(uint32_t units);
void tki_buf_free(struct tki_block *b);
struct tki_block *tki_buf_block(uint32_t index);
uint32_t tki_buf_index(const struct tki_block *b);
/* A thread slot (-1 if none is free); list lock held. */
int tki_buf_slot_take(int64_t tid, const char *name, struct tki_block *first);
void tki_buf_slot_free(int slot);
uint32_t tki_buf_slot_serial(int slot);
uint64_t *tki_buf_slot_dropped(int slot);
/* The names log (registry lock held). */
void tki_buf_name(uint32_t kind, uint64_t a, uint64_t b, const char *s,
                  size_t len);
/* A snapshot: begin, add entries, commit (spool lock held). */
void tki_buf_snap_begin(void);
void tki_buf_snap_add(const struct tki_snap *e, const char *name,
                      uint32_t len);
/* The spool's length before the first commit: its header and first chunk. */
void tki_buf_spool_start(uint64_t spool_bytes);
/* The snapshot written since tki_buf_snap_begin agrees with the first
 * `spool_bytes` of the spool: it becomes the committed one. */
void tki_buf_snap_commit(uint64_t spool_bytes);
/* CUDA activity (protocol.h): one more record of counted kind `k`
 * issued (any thread, no lock); the totals CUPTI delivered so far
 * (spool lock held). */
void tki_buf_cuda_issued(unsigned k);
void tki_buf_cuda_delivered(const uint64_t n[TKI_CUDA_COUNTED]);
/* Both counts, by kind; -1 without the durable file. */
int tki_buf_cuda_counts(uint64_t issued[TKI_CUDA_COUNTED],
                        uint64_t delivered[TKI_CUDA_COUNTED]);

/* ---- threads ------------------------------------------------------------------- */

/* Push/pop nesting of one domain on one thread, as the writer sees it:
 * which levels were not recorded (outside the window or schedule), so
 * that their pops are skipped too. */
#define TKI_LEVEL_SKIP 0x1
#define TKI_LEVEL_CAPTURE 0x2
#define TKI_LEVELS 128

struct tki_levels {
	uint32_t depth;
	uint8_t flag[TKI_LEVELS];
};

struct tki_open;             /* flusher side, flusher.c */

struct tki_thread {
	/* owner thread */
	struct tki_block *cur;
	uint32_t wpos;                  /* == cur->used, private copy */
	uint32_t nlevels;               /* domains with levels */
	struct tki_levels **levels;     /* by domain id */
	uint64_t nproduced;
	uint64_t *produced;             /* status page slot */
	int shared_slot;                /* slot 0: atomic adds */
	uint64_t next_range_id;
	uint64_t *dropped;              /* records lost: buffers full (in
	                                   its slot of the durable file) */
	uint64_t dropped_private;       /* where it counts without a slot */
	int slot;                       /* in the durable file, -1 = none */
	int64_t tid;
	uint32_t index;                 /* 1, 2, ... in this process */
	int dropping;                   /* the flusher could not keep up */
	atomic_int exited;
	int64_t exit_ts;

	/* flusher */
	struct tki_block *keep;         /* first block not freed */
	struct tki_block *head;         /* block being read */
	uint32_t rpos;
	int retired;                    /* exited, written: free at commit */
	uint64_t dropped_seen;
	uint32_t track;                 /* writer track, 0 = not defined */
	uint32_t track_scope;
	char name[64];                  /* as defined */
	int64_t last_ts;
	struct tki_open *open;          /* open push ranges, by domain */
	size_t nopen;
	struct tki_thread *next;        /* in the process's list */
};

extern __thread struct tki_thread *tki_self
	__attribute__((tls_model("initial-exec")));

/* The calling thread's buffer, set up on its first record (which may
 * set up the process first, after fork).  NULL when not recording. */
struct tki_thread *tki_thread_attach(void);
/* Room for n more bytes in a new block; NULL when the process's buffer
 * limit holds and the flusher could not make room in time. */
void *tki_reserve_slow(struct tki_thread *t, uint32_t n);
/* Levels of a domain on the calling thread (grown on demand). */
struct tki_levels *tki_levels_slow(struct tki_thread *t, uint32_t domain);

/* The list of threads, for the flusher: a snapshot under the list lock.
 * Returns the count; *out is malloc'd. */
size_t tki_threads_snapshot(struct tki_thread ***out);
/* Unlink and free a thread the flusher finished with. */
void tki_thread_free(struct tki_thread *t);
/* Blocks: the flusher gives back what it consumed and committed. */
void tki_block_release(struct tki_block *b);
/* The block after b, NULL when the writer has not moved on. */
struct tki_block *tki_block_next(const struct tki_block *b);
/* After fork: drop the parent's threads and blocks. */
void tki_threads_after_fork(void);
/* Bytes in blocks now (for the flusher's wake-up decision). */
size_t tki_buffer_bytes(void);
/* Hold the list and the block pool across fork() (atfork handlers). */
void tki_tbuf_lock(void);
void tki_tbuf_unlock(void);
/* Free the flusher's state of a thread (flusher.c). */
void tki_open_free(struct tki_thread *t);

static inline void *
tki_reserve(struct tki_thread *t, uint32_t n)
{
	if (likely(t->cur && t->cur->cap - t->wpos >= n))
		return t->cur->data + t->wpos;
	return tki_reserve_slow(t, n);
}

static inline void
tki_commit(struct tki_thread *t, uint32_t n)
{
	t->wpos += n;
	atomic_store_explicit(&t->cur->used, t->wpos, memory_order_release);
}

/* One more record that becomes an event, for the status page. */
static inline void
tki_count(struct tki_thread *t)
{
	t->nproduced++;
	if (likely(!t->shared_slot))
		__atomic_store_n(t->produced, t->nproduced, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(t->produced, 1, __ATOMIC_RELAXED);
}

static inline struct tki_levels *
tki_levels(struct tki_thread *t, uint32_t domain)
{
	if (likely(domain < t->nlevels && t->levels[domain]))
		return t->levels[domain];
	return tki_levels_slow(t, domain);
}

static inline uint32_t
tki_align8(uint32_t n)
{
	return (n + 7u) & ~7u;
}

#endif
