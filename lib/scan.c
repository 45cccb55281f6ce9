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
	struct tk_scan_trace *t = tkp_grow(s->traces, &st->traces_cap,
	                                   s->ntraces + 1, sizeof(*t));
	if (!t)
		return TK_ENOMEM;
	s->traces = t;
	s->traces[s->ntraces++] = (struct tk_scan_trace){
		.offset = offset, .first = s->nchunks,
	};
	return TK_OK;
}

static int
add_chunk(struct scan_state *st, const struct tk_scan_chunk *c)
{
	struct tk_scan *s = st->s;
	struct tk_scan_chunk *p = tkp_grow(s->chunks, &st->chunks_cap,
	                                   s->nchunks + 1, sizeof(*p));
	if (!p)
		return TK_ENOMEM;
	s->chunks = p;
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
	struct tkp_file_header fh;
	if ((*err = pread_full(fd, h, TKP_HEADER_PREFIX, at, &got)) ||
	    got < TKP_HEADER_PREFIX || !tkp_is_file_magic(h, 8))
		return 0;
	tkp_file_header_decode(h, TKP_HEADER_PREFIX, &fh);
	uint32_t size = fh.size;
	if (!tkp_file_header_size_ok(size) || fh.major != TK_FORMAT_MAJOR)
		return 0;
	if ((*err = pread_full(fd, h + TKP_HEADER_PREFIX, size - TKP_HEADER_PREFIX,
	                       at + TKP_HEADER_PREFIX, &got)) ||
	    got < size - TKP_HEADER_PREFIX)
		return 0;
	tkp_file_header_decode(h, size, &fh);
#ifndef TK_FUZZING
	if (tkp_crc32(0, h, size - 4) != fh.crc)
		return 0;
#endif
	if (fh.incompat != 0) /* features this library lacks */
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
		uint8_t h[TKP_CHUNK_FIELDS];
		size_t got;
		if ((rc = pread_full(fd, h, 8, at, &got)))
			break;
		if (got == 8 && tkp_is_file_magic(h, 8)) {
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
		if (!s->ntraces || ended || got < 4 || !tkp_is_chunk_magic(h))
			break;
		if ((rc = pread_full(fd, h, TKP_CHUNK_FIELDS, at, &got)) ||
		    got < TKP_CHUNK_FIELDS)
			break;
		struct tkp_chunk_header ch;
		tkp_chunk_header_decode(h, TKP_CHUNK_FIELDS, &ch);
		if (!tkp_chunk_header_size_ok(ch.size) ||
		    !tkp_chunk_header_sizes_ok(&ch) ||
		    tkp_chunk_flags_unknown(ch.flags))
			break;
		if ((uint64_t)ch.size + ch.stored > size - at)
			break; /* truncated: the reader stops here */
		struct tk_scan_chunk c = {
			.offset = at,
			.flags = ch.flags,
			.events = ch.events,
			.t_min = ch.t_min,
			.t_max = ch.t_max,
			.watermark = ch.watermark,
		};
		if ((rc = add_chunk(&st, &c)))
			break;
		at += (uint64_t)ch.size + ch.stored;
		ended = (ch.flags & TK_CHUNK_END) != 0;
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
