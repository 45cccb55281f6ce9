/* SPDX-License-Identifier: MIT */
/*
 * trace-to-chrome -z: one gzip member whose deflate stream is made of
 * blocks of about a megabyte compressed independently, on worker
 * threads and on the caller's own when it would otherwise wait.
 *
 * Why one member and not a series of gzip members (which gzip(1) and
 * Python read as one file): Perfetto's trace processor, which
 * ui.perfetto.dev loads .json.gz files with, stops at the end of the
 * first member, and so would other single-member readers; the viewer
 * would show the first megabyte and say nothing.  A raw deflate block
 * ended by a sync flush (an empty stored block, byte-aligned, not
 * final) can be followed by any other deflate data, so the blocks join
 * into one stream; the CRC of the whole comes from the blocks' CRCs
 * (crc32_combine()).  Each block starts with an empty window, which
 * costs about 1 % of the size at 1 MiB.
 *
 * Output order is the input order: blocks are numbered, workers take
 * the lowest one not taken, and only the caller writes, the lowest
 * block not yet written, once it is compressed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "chrome.h"
#include "common/util.h"

/* level 1: JSON still shrinks about eightfold, at several times the
 * speed of the default level */
#define GZ_LEVEL 1
#define GZ_THREADS_MAX 8u

struct gz_slot {
	char *in;               /* the block, swapped with the caller's buffer */
	size_t in_len, in_cap;
	unsigned char *out;
	size_t out_len, out_cap;
	uint32_t crc;
	int last;               /* Z_FINISH: the stream's final block */
	int done;
	int failed;             /* zlib failed (out of memory) */
};

struct chrome_gz {
	int fd;
	void (*fail)(void *ctx, int err);  /* a write error: does not return */
	void *ctx;
	pthread_mutex_t mu;
	pthread_cond_t work;    /* a block to take, or stop */
	pthread_cond_t done;    /* a block compressed */
	struct gz_slot *slots;
	unsigned nslots;
	/* block numbers: filled >= taken >= written; slot = number % nslots */
	uint64_t filled, taken, written;
	int stop;
	pthread_t *threads;
	unsigned nthreads;
	z_stream z;             /* the caller's */
	uint32_t crc;           /* of everything written so far */
	uint64_t total;         /* bytes in, for the trailer (mod 2^32) */
};

/* TK_THREADS as the reader takes it, else the cores (at most 8). */
static unsigned
gz_threads(void)
{
	const char *env = getenv("TK_THREADS");
	if (env && *env) {
		char *end;
		unsigned long v = strtoul(env, &end, 10);
		if (!*end && v >= 1)
			return v > GZ_THREADS_MAX ? GZ_THREADS_MAX : (unsigned)v;
	}
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	if (cores <= 1)
		return 1;
	return (unsigned long)cores > GZ_THREADS_MAX ? GZ_THREADS_MAX : (unsigned)cores;
}

static int
z_open(z_stream *z)
{
	memset(z, 0, sizeof(*z));
	/* raw deflate (-15): the gzip header and trailer are ours */
	return deflateInit2(z, GZ_LEVEL, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
}

/* Compress slot s with z (no lock held: the slot is the caller's alone
 * between being taken and being marked done). */
static void
compress_slot(z_stream *z, struct gz_slot *s)
{
	s->crc = (uint32_t)crc32(0, (const Bytef *)s->in, (uInt)s->in_len);
	/* the bound of a raw stream, and room for the sync flush's marker */
	size_t need = deflateBound(z, (uLong)s->in_len) + 16;
	if (need > s->out_cap) {
		free(s->out);
		s->out_cap = 0;
		if (!(s->out = malloc(need))) {
			s->failed = 1;
			return;
		}
		s->out_cap = need;
	}
	if (deflateReset(z) != Z_OK) {
		s->failed = 1;
		return;
	}
	z->next_in = (Bytef *)s->in;
	z->avail_in = (uInt)s->in_len;
	z->next_out = s->out;
	z->avail_out = (uInt)s->out_cap;
	int rc = deflate(z, s->last ? Z_FINISH : Z_SYNC_FLUSH);
	if (s->last ? rc != Z_STREAM_END
	            : rc != Z_OK || z->avail_in || !z->avail_out)
		s->failed = 1;
	s->out_len = s->out_cap - z->avail_out;
}

static void *
worker(void *arg)
{
	struct chrome_gz *g = arg;
	z_stream z;
	int ok = z_open(&z) == Z_OK;
	pthread_mutex_lock(&g->mu);
	for (;;) {
		while (!g->stop && g->taken == g->filled)
			pthread_cond_wait(&g->work, &g->mu);
		if (g->taken == g->filled)
			break; /* stop, and nothing left */
		struct gz_slot *s = &g->slots[g->taken++ % g->nslots];
		pthread_mutex_unlock(&g->mu);
		if (ok)
			compress_slot(&z, s);
		else
			s->failed = 1;
		pthread_mutex_lock(&g->mu);
		s->done = 1;
		pthread_cond_broadcast(&g->done);
	}
	pthread_mutex_unlock(&g->mu);
	if (ok)
		deflateEnd(&z);
	return NULL;
}

static void
put(struct chrome_gz *g, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(g->fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			g->fail(g->ctx, w < 0 ? errno : EIO);
		c += w;
		n -= (size_t)w;
	}
}

/* With the lock held: write the oldest block if it is compressed,
 * compress one waiting block here, or else wait for a worker.  Returns
 * with the lock held. */
static void
make_progress(struct chrome_gz *g)
{
	struct gz_slot *s = &g->slots[g->written % g->nslots];
	if (g->written < g->filled && s->done) {
		pthread_mutex_unlock(&g->mu);
		if (s->failed)
			cmd_die(EXIT_USAGE, "gzip: out of memory");
		put(g, s->out, s->out_len);
		g->crc = (uint32_t)crc32_combine(g->crc, s->crc, (z_off_t)s->in_len);
		pthread_mutex_lock(&g->mu);
		s->done = 0;
		g->written++;
	} else if (g->taken < g->filled) {
		struct gz_slot *t = &g->slots[g->taken++ % g->nslots];
		pthread_mutex_unlock(&g->mu);
		compress_slot(&g->z, t);
		pthread_mutex_lock(&g->mu);
		t->done = 1;
	} else {
		pthread_cond_wait(&g->done, &g->mu);
	}
}

struct chrome_gz *
chrome_gz_open(int fd, void (*fail)(void *, int), void *ctx)
{
	struct chrome_gz *g = calloc(1, sizeof(*g));
	if (!g || z_open(&g->z) != Z_OK)
		cmd_die(EXIT_USAGE, "out of memory");
	g->fd = fd;
	g->fail = fail;
	g->ctx = ctx;
	g->crc = (uint32_t)crc32(0, NULL, 0);
	unsigned threads = gz_threads();
	/* the caller compresses too: threads - 1 workers; two blocks per
	 * party, so that nobody waits for a slot to be written */
	g->nslots = 2 * threads;
	g->slots = calloc(g->nslots, sizeof(*g->slots));
	g->threads = calloc(threads, sizeof(*g->threads));
	if (!g->slots || !g->threads)
		cmd_die(EXIT_USAGE, "out of memory");
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->work, NULL);
	pthread_cond_init(&g->done, NULL);
	for (unsigned i = 0; i + 1 < threads; i++) {
		if (pthread_create(&g->threads[g->nthreads], NULL, worker, g) != 0)
			break; /* fewer helpers; the caller does the rest */
		g->nthreads++;
	}
	/* the member's header: deflate, no name, no time, Unix */
	static const unsigned char head[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3 };
	put(g, head, sizeof(head));
	return g;
}

/* Hand over a block: b's bytes go to a slot (the buffers are swapped,
 * not copied); b comes back empty. */
static void
submit(struct chrome_gz *g, struct sbuf *b, int last)
{
	pthread_mutex_lock(&g->mu);
	while (g->filled - g->written == g->nslots)
		make_progress(g);
	struct gz_slot *s = &g->slots[g->filled % g->nslots];
	char *p = s->in;
	size_t cap = s->in_cap;
	s->in = b->p;
	s->in_cap = b->cap;
	s->in_len = b->len;
	b->p = p;
	b->cap = cap;
	b->len = 0;
	s->last = last;
	s->done = 0;
	s->failed = 0;
	g->total += s->in_len;
	g->filled++;
	pthread_cond_signal(&g->work);
	/* write what is ready, without waiting */
	while (g->written < g->filled && g->slots[g->written % g->nslots].done)
		make_progress(g);
	pthread_mutex_unlock(&g->mu);
}

void
chrome_gz_write(struct chrome_gz *g, struct sbuf *b)
{
	if (b->len)
		submit(g, b, 0);
}

void
chrome_gz_close(struct chrome_gz *g, struct sbuf *b)
{
	submit(g, b, 1);
	pthread_mutex_lock(&g->mu);
	while (g->written < g->filled)
		make_progress(g);
	g->stop = 1;
	pthread_cond_broadcast(&g->work);
	pthread_mutex_unlock(&g->mu);
	for (unsigned i = 0; i < g->nthreads; i++)
		pthread_join(g->threads[i], NULL);
	unsigned char tail[8];
	uint32_t v[2] = { g->crc, (uint32_t)g->total };
	for (int i = 0; i < 8; i++)
		tail[i] = (unsigned char)(v[i / 4] >> (8 * (i % 4)));
	put(g, tail, sizeof(tail));
	deflateEnd(&g->z);
	for (unsigned i = 0; i < g->nslots; i++) {
		free(g->slots[i].in);
		free(g->slots[i].out);
	}
	pthread_mutex_destroy(&g->mu);
	pthread_cond_destroy(&g->work);
	pthread_cond_destroy(&g->done);
	free(g->slots);
	free(g->threads);
	free(g);
}
