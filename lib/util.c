/* SPDX-License-Identifier: MIT */
/* Small pieces the reader and writer share. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <libdeflate.h>

#include "tk_private.h"

TK_PUBLIC const char *
tk_version(void)
{
	return TK_VERSION;
}

TK_PUBLIC const char *
tk_strerror(int code)
{
	switch (code) {
	case TK_OK: return "success";
	case TK_EOF: return "end of input";
	case TK_ENOMEM: return "out of memory";
	case TK_EIO: return "input/output error";
	case TK_EFORMAT: return "not a tracekit trace";
	case TK_EVERSION: return "unsupported format version";
	case TK_ECORRUPT: return "corrupt trace";
	case TK_ETRUNC: return "truncated trace";
	case TK_EINVAL: return "invalid argument";
	}
	return "unknown error";
}

int
tkp_buf_grow(struct tkp_buf *b, size_t need)
{
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->len < need) {
		if (cap > SIZE_MAX / 2)
			return -1;
		cap *= 2;
	}
	uint8_t *p = realloc(b->p, cap);
	if (!p)
		return -1;
	b->p = p;
	b->cap = cap;
	return 0;
}

void
tkp_buf_free(struct tkp_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

uint32_t
tkp_crc32(uint32_t crc, const void *p, size_t n)
{
	return libdeflate_crc32(crc, p, n);
}

/* 64-bit hash for interning (names are short; quality over speed is not
 * needed, but a full 64-bit mix keeps probe chains short). */
uint64_t
tkp_hash(const void *p, size_t n)
{
	const uint8_t *s = p;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (n * 0xff51afd7ed558ccdull);
	while (n >= 8) {
		uint64_t k;
		memcpy(&k, s, 8);
		h = (h ^ (k * 0x87c37b91114253d5ull)) * 0x4cf5ad432745937full;
		h ^= h >> 31;
		s += 8;
		n -= 8;
	}
	uint64_t k = 0;
	memcpy(&k, s, n);
	h = (h ^ (k * 0x87c37b91114253d5ull)) * 0x4cf5ad432745937full;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return h;
}

int
tkp_write_all(int fd, const void *p, size_t n)
{
	const uint8_t *s = p;
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		s += w;
		n -= (size_t)w;
	}
	return 0;
}
