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
 * ended by a full flush (an empty stored block, byte-aligned, not
 * final) can be followed by any other deflate data, so the blocks join
 * into one stream; the CRC of the whole comes from the blocks' CRCs
 * (zlib's crc32_combine()).  Each block but the first is compressed
 * with the 32 KiB of input before it as its dictionary, as pigz does: a
 * back-reference into it reaches the end of the previous block, which
 * the decoder has just written, so the stream stays one stream and
 * compresses as if it had been one.
 *
 * The compressor is Intel's ISA-L (igzip, Debian libisal-dev) at its
 * level 1: on Chrome JSON it is several times as fast as zlib's level 1
 * and its output a little smaller (bench/chrome prints both sides);
 * zlib's level 1 made -z cost three times plain output's CPU.
 * libdeflate, faster still per block, cannot end a block without
 * marking the stream final, so its blocks cannot be joined.
 *
 * The first block is compressed at level 0 (a sixth larger) because
 * ISA-L's level 1 is not deterministic on an input with no history:
 * its level-1 body (igzip_icf_body_h1_gr_bt.asm, 2.30 and upstream
 * still) hashes the third byte of such an input from rcx, which there
 * holds the stream pointer, not the data, so that byte goes to a bucket
 * chosen by the address of the isal_zstream (which thread's stack,
 * where ASLR put it); about one address in 8192 makes it shadow the
 * first byte's entry, and a later repeat of the block's first bytes
 * misses its match (valid output, one byte longer).  Runs at 4 threads
 * wrote other bytes than one thread about once in a thousand.  A block
 * with a dictionary never takes that path, and level 0 hashes the data
 * there: with the stream at 20 000 addresses each, a block with no
 * history at level 1 came out other at 4 of them; at level 0, and at
 * level 1 with a dictionary, at none.
 *
 * Output order is the input order: the blocks are common/ordpool's
 * jobs, compressed by its workers (or the caller, rather than wait) and
 * written by the caller in order.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>
#include <zlib.h>

#include "chrome.h"
#include "common/ordpool.h"
#include "common/util.h"

/* ISA-L's level 1: JSON shrinks about ninefold (level 0 about
 * sevenfold, level 3 is three times as slow for 2 % less) */
#define GZ_LEVEL 1
#define GZ_LEVEL_BUF ISAL_DEF_LVL1_DEFAULT
/* deflate's window: the most of earlier input a block can refer to */
#define GZ_DICT ((size_t)IGZIP_HIST_SIZE)

struct gz_slot {
	unsigned char *level_buf; /* the compressor's tables: one thread at a time */
	unsigned char *dict;    /* the input just before the block (GZ_DICT) */
	size_t dict_len;        /* 0: the first block */
	char *in;               /* the block, swapped with the caller's buffer */
	size_t in_len, in_cap;
	unsigned char *out;
	size_t out_len, out_cap;
	uint32_t crc;
	int last;               /* Z_FINISH: the stream's final block */
	int failed;             /* the compressor failed (out of memory) */
};

struct chrome_gz {
	int fd;
	void (*fail)(void *ctx, int err);  /* a write error: does not return */
	void *ctx;
	struct ordpool *pool;
	struct gz_slot *slots;
	void **jobs;
	unsigned nslots;
	uint32_t crc;           /* of everything written so far */
	uint64_t total;         /* bytes in, for the trailer (mod 2^32) */
	unsigned char tail[GZ_DICT]; /* the last input handed over */
	size_t tail_len;
};

/* The most a block can take: ISA-L's output is never larger than the
 * input stored (5 bytes a stored block of up to 65535) plus the block
 * headers and the flush's empty stored block. */
static size_t
out_bound(size_t in_len)
{
	return in_len + 5 * (in_len / 65535 + 1) + 64;
}

/* Compress a block (ordpool's work: any thread). */
static void
compress_slot(void *job, void *ctx)
{
	struct gz_slot *s = job;
	(void)ctx;
	s->failed = 1;
	s->crc = crc32_gzip_refl(0, (const unsigned char *)s->in, s->in_len);
	size_t need = out_bound(s->in_len);
	if (need > s->out_cap) {
		free(s->out);
		s->out_cap = 0;
		if (!(s->out = malloc(need)))
			return;
		s->out_cap = need;
	}
	struct isal_zstream z;
	memset(&z, 0, sizeof(z)); /* _init leaves some of the state as it was */
	int first = !s->dict_len; /* no history: level 0 (above) */
	if (first) {
		isal_deflate_stateless_init(&z);
		z.level = 0;
	} else {
		if (!s->level_buf)
			return;
		isal_deflate_init(&z);
		z.level = GZ_LEVEL;
		z.level_buf = s->level_buf;
		z.level_buf_size = GZ_LEVEL_BUF;
	}
	z.gzip_flag = IGZIP_DEFLATE; /* raw: the gzip header and trailer are ours */
	z.next_in = (uint8_t *)s->in;
	z.avail_in = (uint32_t)s->in_len;
	z.next_out = s->out;
	z.avail_out = (uint32_t)s->out_cap;
	/* the last block ends the stream; the others end byte-aligned, to
	 * be followed by the next */
	z.end_of_stream = s->last;
	z.flush = s->last ? NO_FLUSH : FULL_FLUSH;
	if (first)
		s->failed = isal_deflate_stateless(&z) != COMP_OK || z.avail_in;
	else /* one call does it all when the output has room (out_bound):
	      * the input used up, the stream flushed or ended */
		s->failed = isal_deflate_set_dict(&z, s->dict, (uint32_t)s->dict_len) != COMP_OK ||
		            isal_deflate(&z) != COMP_OK || z.avail_in || !z.avail_out ||
		            z.internal_state.state != (s->last ? ZSTATE_END : ZSTATE_NEW_HDR);
	s->out_len = s->out_cap - z.avail_out;
}

/* Write it all: 0, or the errno of the failure. */
static int
put(struct chrome_gz *g, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(g->fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? errno : EIO;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Write a compressed block (ordpool's emit: the caller's thread, in
 * order), or say why not: -1 out of memory, or the write's errno.  The
 * command does not exit here, with the workers still running (check). */
static int
write_slot(void *job, void *ctx)
{
	struct gz_slot *s = job;
	struct chrome_gz *g = ctx;
	if (s->failed)
		return -1;
	g->crc = (uint32_t)crc32_combine(g->crc, s->crc, (z_off_t)s->in_len);
	return put(g, s->out, s->out_len);
}

/* After the pool wrote: on a failure, stop the workers (join them),
 * then say it and exit. */
static void
check(struct chrome_gz *g)
{
	int failed = ordpool_failed(g->pool);
	if (!failed)
		return;
	ordpool_free(g->pool); /* what is left is compressed, not written */
	g->pool = NULL;
	if (failed < 0)
		cmd_die(EXIT_USAGE, "gzip: out of memory");
	g->fail(g->ctx, failed);
}

struct chrome_gz *
chrome_gz_open(int fd, void (*fail)(void *, int), void *ctx)
{
	struct chrome_gz *g = calloc(1, sizeof(*g));
	if (!g)
		cmd_die(EXIT_USAGE, "out of memory");
	g->fd = fd;
	g->fail = fail;
	g->ctx = ctx;
	g->crc = (uint32_t)crc32(0, NULL, 0);
	/* the member's header: deflate, no name, no time, Unix; written
	 * before there are workers to stop */
	static const unsigned char head[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3 };
	int e = put(g, head, sizeof(head));
	if (e)
		g->fail(g->ctx, e);
	unsigned threads = ordpool_threads();
	/* two blocks per party, so that nobody waits for a slot to be
	 * written */
	g->nslots = 2 * threads;
	g->slots = calloc(g->nslots, sizeof(*g->slots));
	g->jobs = calloc(g->nslots, sizeof(*g->jobs));
	if (!g->slots || !g->jobs)
		cmd_die(EXIT_USAGE, "out of memory");
	for (unsigned i = 0; i < g->nslots; i++) {
		/* NULL (out of memory) fails the block that needs it */
		g->slots[i].level_buf = malloc(GZ_LEVEL_BUF);
		g->slots[i].dict = malloc(GZ_DICT);
		g->jobs[i] = &g->slots[i];
	}
	if (!(g->pool = ordpool_new(threads, g->nslots, g->jobs, compress_slot,
	                            write_slot, g)))
		cmd_die(EXIT_USAGE, "out of memory");
	return g;
}

/* Keep the last GZ_DICT bytes of the input handed over, with n more. */
static void
keep_tail(struct chrome_gz *g, const unsigned char *p, size_t n)
{
	if (n >= GZ_DICT) {
		memcpy(g->tail, p + n - GZ_DICT, GZ_DICT);
		g->tail_len = GZ_DICT;
		return;
	}
	size_t keep = g->tail_len + n > GZ_DICT ? GZ_DICT - n : g->tail_len;
	memmove(g->tail, g->tail + g->tail_len - keep, keep);
	memcpy(g->tail + keep, p, n);
	g->tail_len = keep + n;
}

/* Hand over a block: b's bytes go to a slot (the buffers are swapped,
 * not copied); b comes back empty. */
static void
submit(struct chrome_gz *g, struct sbuf *b, int last)
{
	struct gz_slot *s = ordpool_next(g->pool);
	check(g);
	/* with no room for a dictionary (out of memory at the start) the
	 * block goes without, as the first one does */
	s->dict_len = 0;
	if (g->tail_len && s->dict) {
		memcpy(s->dict, g->tail, g->tail_len);
		s->dict_len = g->tail_len;
	}
	keep_tail(g, (const unsigned char *)b->p, b->len);
	char *p = s->in;
	size_t cap = s->in_cap;
	s->in = b->p;
	s->in_cap = b->cap;
	s->in_len = b->len;
	b->p = p;
	b->cap = cap;
	b->len = 0;
	s->last = last;
	s->failed = 0;
	g->total += s->in_len;
	ordpool_post(g->pool);
	check(g);
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
	ordpool_drain(g->pool); /* every block written */
	check(g);
	ordpool_free(g->pool);
	g->pool = NULL;
	unsigned char tail[8];
	uint32_t v[2] = { g->crc, (uint32_t)g->total };
	for (int i = 0; i < 8; i++)
		tail[i] = (unsigned char)(v[i / 4] >> (8 * (i % 4)));
	int e = put(g, tail, sizeof(tail));
	if (e)
		g->fail(g->ctx, e);
	for (unsigned i = 0; i < g->nslots; i++) {
		free(g->slots[i].level_buf);
		free(g->slots[i].dict);
		free(g->slots[i].in);
		free(g->slots[i].out);
	}
	free(g->slots);
	free(g->jobs);
	free(g);
}
