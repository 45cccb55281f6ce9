/* SPDX-License-Identifier: MIT */
/*
 * Per-thread record buffers.  Each thread appends raw records to its
 * own chain of blocks and publishes how far it wrote with a release
 * store; the flusher reads up to there and frees blocks it finished.
 * One writer and one reader per block, so no lock and no atomic
 * read-modify-write on the path of an NVTX call.
 */
#ifndef TK_INJECT_TBUF_H
#define TK_INJECT_TBUF_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "inject.h"

#define TKI_BLOCK_BYTES (64u * 1024u)

struct tki_block {
	_Atomic(struct tki_block *) next; /* set when the writer moved on */
	atomic_uint used;                 /* bytes published */
	atomic_uint read;                 /* bytes the flusher has read */
	uint32_t cap;
	uint32_t pad;
	_Alignas(8) uint8_t data[];       /* records, 8-byte aligned */
};

/* ---- records ------------------------------------------------------------------ */

enum tki_rec_type {
	TKI_REC_PUSH = 1,        /* a push/pop range begins: tki_rec_msg */
	TKI_REC_POP = 2,         /* it ends: tki_pop */
	TKI_REC_MARK = 3,        /* an instant: tki_rec_msg */
	TKI_REC_START = 4,       /* a start/end range begins: id, tki_rec_msg */
	TKI_REC_END = 5,         /* it ends: id */
};

#define TKI_F_ATTRS 0x1      /* struct tki_attrs follows the header (+id) */
#define TKI_F_REGISTERED 0x2 /* the message is a registered string id */
#define TKI_F_CAPTURE 0x4    /* push/start of the capture range */

struct tki_rec {
	uint8_t type;
	uint8_t flags;
	uint16_t domain;         /* domain id, 0 = default */
	uint32_t size;           /* whole record, a multiple of 8 */
	int64_t ts;
};

struct tki_attrs {
	uint32_t category;
	uint32_t color;          /* ARGB, 0 = none */
	uint32_t payload_type;   /* enum tk_payload */
	uint32_t pad;
	uint64_t payload;
};

struct tki_msg {
	uint32_t len;            /* bytes that follow */
	uint32_t string;         /* registered string id, or 0 */
	uint32_t level;          /* push: the nesting level it opens */
	uint32_t pad;
};

/* A pop: the level it closes, so that a pop or push lost to full
 * buffers cannot pair the wrong ranges. */
struct tki_pop {
	uint32_t level;
	uint32_t pad;
};

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
	atomic_ullong dropped;          /* records lost: buffers full */
	int64_t tid;
	uint32_t index;                 /* 1, 2, ... in this process */
	int dropping;                   /* the flusher could not keep up */
	atomic_int exited;
	int64_t exit_ts;

	/* flusher */
	struct tki_block *head;
	uint32_t rpos;
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
/* Blocks: the flusher gives back what it consumed. */
void tki_block_release(struct tki_block *b);
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
