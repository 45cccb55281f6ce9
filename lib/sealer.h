/* SPDX-License-Identifier: MIT */
/*
 * The last step of writing a chunk: compress its payload, frame it with
 * a header and checksum, and hand the bytes on -- on the caller's
 * thread, or on a background one so that the caller goes on building
 * the next chunk meanwhile (tk_writer_options.threads).
 */
#ifndef TK_SEALER_H
#define TK_SEALER_H

#include <pthread.h>
#include <stdint.h>

#include "tk_private.h"

struct libdeflate_compressor;

/* Where the framed bytes go: 0, or -1 with errno set. */
typedef int (*tkp_put_fn)(void *arg, const void *p, size_t n);

/* A zeroed sealer is an idle one: wait, bytes and free work on it. */
struct tkp_sealer {
	struct libdeflate_compressor *comp; /* NULL: chunks are stored */
	struct tkp_buf out;      /* the framed chunk */
	tkp_put_fn put;
	void *put_arg;
	uint64_t bytes;          /* framed bytes put so far */

	/* the background thread, when there is one; everything below is
	 * shared with it under mu */
	int threaded;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int busy;                /* a chunk is posted and not yet put */
	int quit;
	int err_no;              /* the first failed put, sticky */
	struct tkp_buf held;     /* the posted chunk's payload, owned */
	size_t raw_off, raw_len; /* where the payload lies in held */
	struct tkp_chunk_header head;
};

/* Level 0 stores chunks.  With `threaded`, a thread is started (if that
 * fails, chunks are sealed on the caller's thread).  0, or a TK_ error
 * (TK_ENOMEM). */
TKP_HIDDEN int tkp_sealer_init(struct tkp_sealer *s, int level, int threaded,
                               tkp_put_fn put, void *put_arg);
/* Seal the payload raw[0..raw_len), which lies in *buf, under a header
 * that says what `head` does (its flags, events, times and watermark;
 * the sizes and TK_CHUNK_DEFLATE are decided here).  Threaded, *buf
 * is taken for the background thread and replaced by a free buffer (the
 * one of the chunk before), after waiting for the chunk before to be
 * put.  0, or an errno value from a failed put (this chunk's or, when
 * threaded, an earlier one's). */
TKP_HIDDEN int tkp_sealer_seal(struct tkp_sealer *s, struct tkp_buf *buf,
                               const uint8_t *raw, size_t raw_len,
                               const struct tkp_chunk_header *head);
/* Wait until every sealed chunk is put: 0, or the errno of a failure. */
TKP_HIDDEN int tkp_sealer_wait(struct tkp_sealer *s);
/* Framed bytes put so far. */
TKP_HIDDEN uint64_t tkp_sealer_bytes(struct tkp_sealer *s);
/* Stop the thread (after the chunk it holds) and free everything. */
TKP_HIDDEN void tkp_sealer_free(struct tkp_sealer *s);

#endif
