/* SPDX-License-Identifier: MIT */
/*
 * Compressing, framing and putting chunks (sealer.h).
 *
 * Deflate is most of the cost of writing, and it needs nothing of the
 * writer but the finished payload.  So a threaded sealer takes the
 * payload's buffer and does the rest while the writer fills the next
 * chunk.  With N threads it holds N chunks at most, one a thread, which
 * bounds the memory: each thread compresses the oldest chunk nobody has
 * begun, and whichever thread finishes puts every finished chunk that is
 * next in line, so that the output is in order (and the same bytes
 * whatever N: each chunk is compressed on its own).  The threads start
 * with every signal blocked, so that signals keep going to the threads
 * that expect them.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>

#include "sealer.h"

/* A chunk posted to the threads. */
struct tkp_seal_job {
	struct tkp_buf held;     /* the payload's buffer, owned */
	size_t raw_off, raw_len; /* where the payload lies in held */
	struct tkp_chunk_header head;
	struct tkp_buf out;      /* the framed chunk */
	size_t framed;           /* bytes of it to put */
	int done;                /* framed (or given up): to be put */
	int err;                 /* framing failed: ENOMEM */
};

/* A background thread's compressor. */
struct tkp_seal_thread {
	struct tkp_sealer *s;
	struct libdeflate_compressor *comp;
};

/* Compress and frame one chunk into out: 0 or ENOMEM; *total the
 * framed bytes. */
static int
frame(struct libdeflate_compressor *comp, const uint8_t *raw, size_t raw_len,
      const struct tkp_chunk_header *hd, struct tkp_buf *out, size_t *total)
{
	size_t bound = comp ? libdeflate_zlib_compress_bound(comp, raw_len) : raw_len;
	out->len = 0;
	if (tkp_buf_reserve(out, TKP_CHUNK_HEADER_SIZE + bound) < 0)
		return ENOMEM;
	uint8_t *h = out->p;
	uint8_t *body = h + TKP_CHUNK_HEADER_SIZE;
	uint32_t flags = hd->flags & ~(uint32_t)TK_CHUNK_DEFLATE;
	size_t stored = 0;
	if (comp)
		stored = libdeflate_zlib_compress(comp, raw, raw_len, body, bound);
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
	*total = TKP_CHUNK_HEADER_SIZE + stored;
	return 0;
}

/* Put out[0..n): 0 or an errno value. */
static int
put_framed(struct tkp_sealer *s, const struct tkp_buf *out, size_t n)
{
	if (s->put(s->put_arg, out->p, n) < 0)
		return errno ? errno : EIO;
	return 0;
}

/* Put the finished jobs that are next in line, in order, under mu (let
 * go while each is put).  One thread at a time does this. */
static void
put_in_order(struct tkp_sealer *s)
{
	if (s->putting)
		return; /* the thread at it will come to ours */
	s->putting = 1;
	for (;;) {
		struct tkp_seal_job *j = &s->jobs[s->put_done % s->nthreads];
		if (s->put_done == s->posted || !j->done)
			break;
		/* after a failure, later chunks are dropped: the stream is
		 * broken at that point anyway */
		if (!s->err_no && j->err)
			s->err_no = j->err;
		if (!s->err_no && j->framed) {
			pthread_mutex_unlock(&s->mu);
			int e = put_framed(s, &j->out, j->framed);
			pthread_mutex_lock(&s->mu);
			if (e)
				s->err_no = e;
			else
				s->bytes += j->framed;
		}
		j->done = 0;
		j->framed = 0;
		s->put_done++;
		pthread_cond_broadcast(&s->cv);
	}
	s->putting = 0;
}

static void *
run(void *arg)
{
	struct tkp_seal_thread *t = arg;
	struct tkp_sealer *s = t->s;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (s->started == s->posted && !s->quit)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->started == s->posted)
			break; /* quit, and nothing is left to begin */
		struct tkp_seal_job *j = &s->jobs[s->started % s->nthreads];
		s->started++;
		int skip = s->err_no != 0;
		pthread_mutex_unlock(&s->mu);
		int e = skip ? 0 : frame(t->comp, j->held.p + j->raw_off, j->raw_len,
		                         &j->head, &j->out, &j->framed);
		pthread_mutex_lock(&s->mu);
		j->err = e;
		j->done = 1;
		put_in_order(s);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* Free what the threads had (once they are gone). */
static void
free_threads(struct tkp_sealer *s)
{
	for (unsigned i = 0; i < s->nalloc; i++) {
		if (s->ts && s->ts[i].comp)
			libdeflate_free_compressor(s->ts[i].comp);
		if (s->jobs) {
			tkp_buf_free(&s->jobs[i].held);
			tkp_buf_free(&s->jobs[i].out);
		}
	}
	free(s->ts);
	free(s->jobs);
	free(s->threads);
	s->ts = NULL;
	s->jobs = NULL;
	s->threads = NULL;
	s->nalloc = 0;
	s->nthreads = 0;
}

int
tkp_sealer_init(struct tkp_sealer *s, int level, unsigned threads,
                tkp_put_fn put, void *put_arg)
{
	memset(s, 0, sizeof(*s));
	s->put = put;
	s->put_arg = put_arg;
	if (level > 0 && !(s->comp = libdeflate_alloc_compressor(level)))
		return TK_ENOMEM;
	if (!threads)
		return TK_OK;
	s->nalloc = threads;
	s->threads = calloc(threads, sizeof(*s->threads));
	s->ts = calloc(threads, sizeof(*s->ts));
	s->jobs = calloc(threads, sizeof(*s->jobs));
	if (!s->threads || !s->ts || !s->jobs)
		goto nomem;
	for (unsigned i = 0; i < threads; i++) {
		s->ts[i].s = s;
		if (level > 0 && !(s->ts[i].comp = libdeflate_alloc_compressor(level)))
			goto nomem;
	}
	if (pthread_mutex_init(&s->mu, NULL))
		goto unthreaded;
	if (pthread_cond_init(&s->cv, NULL)) {
		pthread_mutex_destroy(&s->mu);
		goto unthreaded;
	}
	/* no thread takes a job before the caller posts one, after this
	 * returns: the ring is then as large as the threads that started */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	unsigned started = 0;
	while (started < threads &&
	       pthread_create(&s->threads[started], NULL, run, &s->ts[started]) == 0)
		started++;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (started == 0) {
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
		goto unthreaded;
	}
	pthread_mutex_lock(&s->mu);
	s->nthreads = started;
	pthread_mutex_unlock(&s->mu);
	return TK_OK;
unthreaded: /* no thread: seal on the caller's */
	free_threads(s);
	return TK_OK;
nomem:
	free_threads(s);
	libdeflate_free_compressor(s->comp);
	s->comp = NULL;
	return TK_ENOMEM;
}

int
tkp_sealer_seal(struct tkp_sealer *s, struct tkp_buf *buf,
                const uint8_t *raw, size_t raw_len,
                const struct tkp_chunk_header *head)
{
	if (!s->nthreads) {
		size_t n = 0;
		int e = frame(s->comp, raw, raw_len, head, &s->out, &n);
		if (!e && !(e = put_framed(s, &s->out, n)))
			s->bytes += n;
		return e;
	}
	pthread_mutex_lock(&s->mu);
	/* a job free: every thread's chunk put */
	while (s->posted - s->put_done >= s->nthreads)
		pthread_cond_wait(&s->cv, &s->mu);
	int e = s->err_no;
	if (!e) {
		/* swap: the job gets this payload, the caller the buffer of
		 * the chunk the job held before */
		struct tkp_seal_job *j = &s->jobs[s->posted % s->nthreads];
		struct tkp_buf free_buf = j->held;
		j->held = *buf;
		*buf = free_buf;
		j->raw_off = (size_t)(raw - j->held.p);
		j->raw_len = raw_len;
		j->head = *head; /* done, framed: reset when it was put */
		s->posted++;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return e;
}

int
tkp_sealer_wait(struct tkp_sealer *s)
{
	if (!s->nthreads)
		return 0;
	pthread_mutex_lock(&s->mu);
	while (s->put_done < s->posted)
		pthread_cond_wait(&s->cv, &s->mu);
	int e = s->err_no;
	pthread_mutex_unlock(&s->mu);
	return e;
}

uint64_t
tkp_sealer_bytes(struct tkp_sealer *s)
{
	if (!s->nthreads)
		return s->bytes;
	pthread_mutex_lock(&s->mu);
	uint64_t n = s->bytes;
	pthread_mutex_unlock(&s->mu);
	return n;
}

void
tkp_sealer_free(struct tkp_sealer *s)
{
	if (s->nthreads) {
		pthread_mutex_lock(&s->mu);
		s->quit = 1;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		for (unsigned i = 0; i < s->nthreads; i++)
			pthread_join(s->threads[i], NULL);
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
		free_threads(s);
	}
	if (s->comp)
		libdeflate_free_compressor(s->comp);
	tkp_buf_free(&s->out);
	memset(s, 0, sizeof(*s)); /* idle again */
}
