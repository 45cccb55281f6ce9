/* SPDX-License-Identifier: MIT */
/*
 * Compressing, framing and putting chunks (sealer.h).
 *
 * Deflate is most of the cost of writing, and it needs nothing of the
 * writer but the finished payload.  So a threaded sealer takes the
 * payload's buffer and does the rest while the writer fills the next
 * chunk; it holds one chunk at a time, which bounds the memory and keeps
 * the output in order.  The thread starts with every signal blocked, so
 * that signals keep going to the threads that expect them.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>

#include "sealer.h"

/* Compress, frame and put one chunk: 0 or an errno value; *put_bytes
 * the bytes put. */
static int
seal_now(struct tkp_sealer *s, const uint8_t *raw, size_t raw_len,
         const struct tkp_chunk_header *hd, size_t *put_bytes)
{
	size_t bound = s->comp ? libdeflate_zlib_compress_bound(s->comp, raw_len)
	                       : raw_len;
	s->out.len = 0;
	if (tkp_buf_reserve(&s->out, TKP_CHUNK_HEADER_SIZE + bound) < 0)
		return ENOMEM;
	uint8_t *h = s->out.p;
	uint8_t *body = h + TKP_CHUNK_HEADER_SIZE;
	uint32_t flags = hd->flags & ~(uint32_t)TK_CHUNK_DEFLATE;
	size_t stored = 0;
	if (s->comp)
		stored = libdeflate_zlib_compress(s->comp, raw, raw_len, body, bound);
	if (stored > 0 && stored < raw_len) {
		flags |= TK_CHUNK_DEFLATE;
	} else {
		memcpy(body, raw, raw_len);
		stored = raw_len;
	}
	struct tkp_chunk_header ch = *hd;
	ch.flags = flags;
	ch.stored = (uint32_t)stored;
	ch.raw = (uint32_t)raw_len;
	if (!ch.events)
		ch.t_min = ch.t_max = 0;
	tkp_chunk_header_encode(h, &ch, body);

	size_t total = TKP_CHUNK_HEADER_SIZE + stored;
	if (s->put(s->put_arg, h, total) < 0)
		return errno ? errno : EIO;
	*put_bytes = total;
	return 0;
}

static void *
run(void *arg)
{
	struct tkp_sealer *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->busy && !s->quit)
			pthread_cond_wait(&s->cv, &s->mu);
		if (!s->busy)
			break; /* quit, and nothing is left to put */
		/* after a failure, later chunks are dropped: the stream
		 * is broken at that point anyway */
		int failed = s->err_no;
		size_t n = 0;
		pthread_mutex_unlock(&s->mu);
		int e = failed ? 0 : seal_now(s, s->held.p + s->raw_off,
		                              s->raw_len, &s->head, &n);
		pthread_mutex_lock(&s->mu);
		s->bytes += n;
		if (e && !s->err_no)
			s->err_no = e;
		s->busy = 0;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int
tkp_sealer_init(struct tkp_sealer *s, int level, int threaded,
                tkp_put_fn put, void *put_arg)
{
	memset(s, 0, sizeof(*s));
	s->put = put;
	s->put_arg = put_arg;
	if (level > 0 && !(s->comp = libdeflate_alloc_compressor(level)))
		return TK_ENOMEM;
	if (!threaded)
		return TK_OK;
	if (pthread_mutex_init(&s->mu, NULL))
		return TK_OK;
	if (pthread_cond_init(&s->cv, NULL)) {
		pthread_mutex_destroy(&s->mu);
		return TK_OK;
	}
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&s->thread, NULL, run, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) { /* no thread: seal on the caller's */
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
		return TK_OK;
	}
	s->threaded = 1;
	return TK_OK;
}

/* Wait for the posted chunk, under mu. */
static void
wait_idle(struct tkp_sealer *s)
{
	while (s->busy)
		pthread_cond_wait(&s->cv, &s->mu);
}

int
tkp_sealer_seal(struct tkp_sealer *s, struct tkp_buf *buf,
                const uint8_t *raw, size_t raw_len,
                const struct tkp_chunk_header *head)
{
	if (!s->threaded) {
		size_t n = 0;
		int e = seal_now(s, raw, raw_len, head, &n);
		s->bytes += n;
		return e;
	}
	pthread_mutex_lock(&s->mu);
	wait_idle(s);
	int e = s->err_no;
	if (!e) {
		/* swap: the thread gets this payload, the caller the buffer
		 * of the chunk it has finished with */
		struct tkp_buf free_buf = s->held;
		s->held = *buf;
		*buf = free_buf;
		s->raw_off = (size_t)(raw - s->held.p);
		s->raw_len = raw_len;
		s->head = *head;
		s->busy = 1;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return e;
}

int
tkp_sealer_wait(struct tkp_sealer *s)
{
	if (!s->threaded)
		return 0;
	pthread_mutex_lock(&s->mu);
	wait_idle(s);
	int e = s->err_no;
	pthread_mutex_unlock(&s->mu);
	return e;
}

uint64_t
tkp_sealer_bytes(struct tkp_sealer *s)
{
	if (!s->threaded)
		return s->bytes;
	pthread_mutex_lock(&s->mu);
	uint64_t n = s->bytes;
	pthread_mutex_unlock(&s->mu);
	return n;
}

void
tkp_sealer_free(struct tkp_sealer *s)
{
	if (s->threaded) {
		pthread_mutex_lock(&s->mu);
		s->quit = 1;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->thread, NULL);
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
		s->threaded = 0;
	}
	if (s->comp)
		libdeflate_free_compressor(s->comp);
	tkp_buf_free(&s->out);
	tkp_buf_free(&s->held);
	memset(s, 0, sizeof(*s)); /* idle again */
}
