/* SPDX-License-Identifier: MIT */
/*
 * The last step of writing a chunk: compress its payload, frame it with
 * a header and checksum, and hand the bytes on -- on the caller's
 * thread, or on background ones so that the caller goes on building the
 * next chunk meanwhile (tk_writer_options.threads), several chunks being
 * compressed at once where there are several threads, and put in order.
 */
#ifndef TK_SEALER_H
#define TK_SEALER_H

#include <pthread.h>
#include <stdint.h>

#include "tk_private.h"

struct libdeflate_compressor;

/* Where the framed bytes go: 0, or -1 with errno set. */
typedef int (*tkp_put_fn)(void *arg, const void *p, size_t n);

/* One chunk handed to the background threads, and a thread's own
 * state (private to sealer.c). */
struct tkp_seal_job;
struct tkp_seal_thread;

/* A zeroed sealer is an idle one: wait, bytes and free work on it. */
struct tkp_sealer {
	struct libdeflate_compressor *comp; /* the caller's thread's; NULL:
	                                       chunks are stored */
	struct tkp_buf out;      /* the framed chunk, on the caller's thread */
	tkp_put_fn put;
	void *put_arg;
	uint64_t bytes;          /* framed bytes put so far */

	/* the background threads, when there are any; everything below is
	 * shared with them under mu */
	unsigned nthreads;       /* 0: none, chunks are sealed by the caller */
	unsigned nalloc;         /* threads asked for: the arrays' size */
	pthread_t *threads;
	struct tkp_seal_thread *ts;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct tkp_seal_job *jobs; /* a ring of nthreads jobs */
	uint64_t posted;         /* jobs posted so far */
	uint64_t put_done;       /* jobs put (or dropped) so far, in order */
	uint64_t started;        /* jobs a thread has begun */
	int putting;             /* a thread is putting finished jobs */
	int quit;
	int err_no;              /* the first failed put, sticky */
};

/* Level 0 stores chunks.  With `threads` > 0, that many threads are
 * started (as many as can be: with none, chunks are sealed on the
 * caller's thread).  0, or a TK_ error (TK_ENOMEM). */
TKP_HIDDEN int tkp_sealer_init(struct tkp_sealer *s, int level, unsigned threads,
                               tkp_put_fn put, void *put_arg);
/* Seal the payload raw[0..raw_len), which lies in *buf, under a header
 * that says what `head` does (its flags, events, times and watermark;
 * the sizes and TK_CHUNK_DEFLATE are decided here).  Threaded, *buf
 * is taken for a background thread and replaced by a free buffer (that
 * of an earlier chunk), after waiting for a thread to be free.  0, or
 * an errno value from a failed put (this chunk's or, when threaded, an
 * earlier one's). */
TKP_HIDDEN int tkp_sealer_seal(struct tkp_sealer *s, struct tkp_buf *buf,
                               const uint8_t *raw, size_t raw_len,
                               const struct tkp_chunk_header *head);
/* Wait until every sealed chunk is put: 0, or the errno of a failure. */
TKP_HIDDEN int tkp_sealer_wait(struct tkp_sealer *s);
/* Framed bytes put so far. */
TKP_HIDDEN uint64_t tkp_sealer_bytes(struct tkp_sealer *s);
/* Stop the threads (after the chunks they hold) and free everything. */
TKP_HIDDEN void tkp_sealer_free(struct tkp_sealer *s);

#endif
