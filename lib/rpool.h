/* SPDX-License-Identifier: MIT */
/*
 * The reader's worker threads (tk_reader_options.threads): chunks read
 * ahead of the caller are checked (CRC32) and inflated by a pool of
 * threads while the caller decodes the chunk before.  The reader reads
 * the bytes of each unit (a chunk, a header, or what is left where the
 * framing stops) into a slot, in order; workers fill in the verdicts;
 * the reader takes the slots back in the same order and goes through
 * them with its one-thread code, which uses the verdicts instead of
 * computing them.  A decode hook (tkp_rpool.decode) may do more of a
 * chunk's work on the worker.  Memory: the slots, threads + 1 chunks.
 */
#ifndef TK_RPOOL_H
#define TK_RPOOL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "tk_private.h"

struct libdeflate_decompressor;

/* One unit of input read ahead, and what a worker made of it. */
struct tkp_rslot {
	struct tkp_buf in;        /* the unit's bytes, when copied */
	const uint8_t *bytes;     /* the unit's bytes (in.p, or the caller's
	                             memory for tk_reader_open_mem()) */
	size_t len;
	int chunk;                /* a whole chunk: a worker checks it */
	int last;                 /* nothing was read ahead after it */
	struct tkp_error read_err;/* a failed read met after its bytes */
	/* by the worker, for a chunk */
	int crc_ok;               /* the checksum matches */
	int inflated;             /* 1: out holds the payload; -1: the
	                             compressed data is bad */
	struct tkp_buf out;
	/* the columns of an inflated chunk, decoded by the pool's decode
	 * hook with this reader of the slot's own (the reader's code:
	 * reader.c); NULL: not decoded on the worker */
	struct tk_reader *decoder;
	int state;                /* private to rpool.c */
};

struct tkp_rpool {
	struct tkp_rslot *slots;
	unsigned nslots;
	unsigned fill, work, take; /* counters, modulo nslots */
	pid_t pid;                /* the process that started the threads */
	int inline_only;          /* no threads (none started, or fork()):
	                             the taker does the work */
	unsigned nthreads;
	pthread_t *threads;
	struct libdeflate_decompressor **decs; /* one per thread, + 1 */
	/* run on a worker after a chunk is inflated (set before the first
	 * post): reader.c's decode of the chunk's columns */
	void (*decode)(struct tkp_rslot *s);
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int quit;
	/* which thread does which slot: 0 as built, whoever comes first;
	 * another only where rpool.c is built with TK_RPOOL_SCHEDULE, as
	 * tests/unit/test_parallel links it (rpool.c, schedules) */
	int schedule;
	unsigned schedule_seed;   /* the reading thread's, for jitter */
};

/* Start `threads` workers (fewer, or none, if threads cannot be
 * made: the work is then done by tkp_rpool_take()).  NULL: no memory. */
TKP_HIDDEN struct tkp_rpool *tkp_rpool_new(unsigned threads);
/* The next slot to fill, or NULL when every slot is in use. */
TKP_HIDDEN struct tkp_rslot *tkp_rpool_free_slot(struct tkp_rpool *p);
/* Hand the slot from tkp_rpool_free_slot(), filled, to the workers. */
TKP_HIDDEN void tkp_rpool_post(struct tkp_rpool *p, struct tkp_rslot *s);
/* The oldest posted slot once worked on, or NULL when none is posted;
 * where no worker has begun it, the caller's thread does the work.  It
 * stays the caller's until tkp_rpool_release(). */
TKP_HIDDEN struct tkp_rslot *tkp_rpool_take(struct tkp_rpool *p);
TKP_HIDDEN void tkp_rpool_release(struct tkp_rpool *p, struct tkp_rslot *s);
/* Stop the threads and free everything, the slots' decoders too (in a
 * child after fork(), the threads are not there: only memory is
 * freed). */
TKP_HIDDEN void tkp_rpool_free(struct tkp_rpool *p);

/* The verdicts on a whole chunk (header and stored bytes), as the
 * reader would find them: CRC first, then inflating. */
TKP_HIDDEN void tkp_rslot_work(struct tkp_rslot *s,
                               struct libdeflate_decompressor *dec);

#ifdef TK_RPOOL_SCHEDULE
/* 1: this build of rpool.c follows TK_RPOOL_SCHEDULE (rpool.c); a test
 * calls it so that it cannot link the library's own build by mistake. */
TKP_HIDDEN int tkp_rpool_schedules(void);
#endif

#endif
