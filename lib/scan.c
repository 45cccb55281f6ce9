/* SPDX-License-Identifier: MIT */
/*
 * The layout of a trace file from its headers alone: each chunk's
 * header is read (56 bytes) and its payload skipped, so a file of
 * gigabytes is mapped in milliseconds.  It tells where each trace of a
 * concatenation (`cat a.tkt b.tkt`) begins and, for every chunk, its
 * event count, time range and watermark.
 *
 * The scan follows the framing the way the reader does and stops where
 * the reader would fail on the framing (a bad size, a bad magic, a
 * truncated chunk, an unknown version); payloads and their checksums
 * are not checked, which the reader does when it gets there.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tk_private.h"

#define CHUNK_FIELDS 48u /* the chunk header's bytes the scan reads */

struct scan_state {
	struct tk_scan *s;
	size_t traces_cap, chunks_cap;
};

static int
pread_full(int fd, uint8_t *buf, size_t n, uint64_t at, size_t *got)
{
	*got = 0;
	while (*got < n) {
		ssize_t k = pread(fd, buf + *got, n - *got, (off_t)(at + *got));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return TK_EIO;
		if (k == 0)
			break;
		*got += (size_t)k;
	}
	return TK_OK;
}

static int
add_trace(struct scan_state *st, uint64_t offset)
{
	struct tk_scan *s = st->s;
	if (s->ntraces == st->traces_cap) {
		size_t cap = st->traces_cap ? st->traces_cap * 2 : 4;
		struct tk_scan_trace *t = realloc(s->traces, cap * sizeof(*t));
		if (!t)
			return TK_ENOMEM;
		s->traces = t;
		st->traces_cap = cap;
	}
	s->traces[s->ntraces++] = (struct tk_scan_trace){
		.offset = offset, .first = s->nchunks,
	};
	return TK_OK;
}

static int
add_chunk(struct scan_state *st, const struct tk_scan_chunk *c)
{
	struct tk_scan *s = st->s;
	if (s->nchunks == st->chunks_cap) {
		size_t cap = st->chunks_cap ? st->chunks_cap * 2 : 64;
		struct tk_scan_chunk *p = realloc(s->chunks, cap * sizeof(*p));
		if (!p)
			return TK_ENOMEM;
		s->chunks = p;
		st->chunks_cap = cap;
	}
	s->chunks[s->nchunks++] = *c;
	s->traces[s->ntraces - 1].nchunks++;
	return TK_OK;
}

/* A valid file header at `at`: its size, else 0. */
static uint32_t
header_size(int fd, uint64_t at, int *err)
{
	uint8_t h[TKP_HEADER_MAX];
	size_t got;
	if ((*err = pread_full(fd, h, 16, at, &got)) || got < 16 ||
	    memcmp(h, TKP_MAGIC, 8) != 0)
		return 0;
	uint32_t size = tkp_get32(h + 12);
	if (size < TKP_HEADER_SIZE || size > TKP_HEADER_MAX ||
	    tkp_get16(h + 8) != TK_FORMAT_MAJOR)
		return 0;
	if ((*err = pread_full(fd, h + 16, size - 16, at + 16, &got)) ||
	    got < size - 16)
		return 0;
#ifndef TK_FUZZING
	if (tkp_crc32(0, h, size - 4) != tkp_get32(h + size - 4))
		return 0;
#endif
	if (tkp_get64(h + 16) != 0) /* features this library lacks */
		return 0;
	return size;
}

TK_PUBLIC int
tk_scan_fd(int fd, struct tk_scan **out)
{
	struct stat sb;
	if (!out)
		return TK_EINVAL;
	*out = NULL;
	if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode))
		return TK_EINVAL;
	struct tk_scan *s = calloc(1, sizeof(*s));
	if (!s)
		return TK_ENOMEM;
	struct scan_state st = { s, 0, 0 };
	uint64_t size = (uint64_t)sb.st_size, at = 0;
	int rc = TK_OK, ended = 1;
	s->size = size;
	while (at < size) {
		uint8_t h[CHUNK_FIELDS];
		size_t got;
		if ((rc = pread_full(fd, h, 8, at, &got)))
			break;
		if (got == 8 && memcmp(h, TKP_MAGIC, 8) == 0) {
			/* a new trace (where a chunk could begin) */
			uint32_t hs = header_size(fd, at, &rc);
			if (!hs)
				break;
			if ((rc = add_trace(&st, at)))
				break;
			at += hs;
			ended = 0;
			continue;
		}
		if (!s->ntraces || ended || got < 4 ||
		    memcmp(h, TKP_CHUNK_MAGIC, 4) != 0)
			break;
		if ((rc = pread_full(fd, h, CHUNK_FIELDS, at, &got)) ||
		    got < CHUNK_FIELDS)
			break;
		uint32_t hsize = tkp_get32(h + 4), flags = tkp_get32(h + 8);
		uint32_t stored = tkp_get32(h + 12), raw = tkp_get32(h + 16);
		uint32_t nev = tkp_get32(h + 20);
		if (hsize < TKP_CHUNK_HEADER_SIZE || hsize > TKP_HEADER_MAX ||
		    stored > TKP_CHUNK_STORED_MAX || raw > TKP_CHUNK_RAW_MAX ||
		    nev > raw || (!(flags & TK_CHUNK_DEFLATE) && stored != raw) ||
		    ((flags & TKP_CHUNK_INCOMPAT_MASK) & ~TKP_CHUNK_KNOWN))
			break;
		if ((uint64_t)hsize + stored > size - at)
			break; /* truncated: the reader stops here */
		struct tk_scan_chunk c = {
			.offset = at,
			.flags = flags,
			.events = nev,
			.t_min = (int64_t)tkp_get64(h + 24),
			.t_max = (int64_t)tkp_get64(h + 32),
			.watermark = (int64_t)tkp_get64(h + 40),
		};
		if ((rc = add_chunk(&st, &c)))
			break;
		at += (uint64_t)hsize + stored;
		ended = (flags & TK_CHUNK_END) != 0;
	}
	if (rc) {
		tk_scan_free(s);
		return rc;
	}
	s->end = at;
	/* each trace runs to the next one; the last to the end of the file,
	 * so that the reader reports whatever stopped the scan */
	for (size_t i = 0; i < s->ntraces; i++)
		s->traces[i].length = (i + 1 < s->ntraces ? s->traces[i + 1].offset
		                                          : size) -
		                      s->traces[i].offset;
	*out = s;
	return TK_OK;
}

TK_PUBLIC void
tk_scan_free(struct tk_scan *s)
{
	if (!s)
		return;
	free(s->traces);
	free(s->chunks);
	free(s);
}
