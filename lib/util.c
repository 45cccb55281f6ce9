/* SPDX-License-Identifier: MIT */
/* Small pieces the reader and writer share. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
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

/* One setter for the three kinds of handle, so that they keep their
 * errors by one rule: the first failure stays; a rejected call is told
 * until the next one, and does not hide a failure. */
static void __attribute__((format(printf, 4, 0)))
error_vset(struct tkp_error *e, int code, int errnum, const char *fmt,
           va_list ap)
{
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	e->code = code;
	e->errnum = errnum;
}

int
tkp_error_set(struct tkp_error *e, int code, int errnum, const char *fmt, ...)
{
	if (e->code)
		return e->code;
	va_list ap;
	va_start(ap, fmt);
	error_vset(e, code, errnum, fmt, ap);
	va_end(ap);
	return code;
}

int
tkp_error_reject(struct tkp_error *e, int code, int errnum, const char *fmt,
                 ...)
{
	if (e->code)
		return code;
	va_list ap;
	va_start(ap, fmt);
	error_vset(e, 0, errnum, fmt, ap);
	va_end(ap);
	return code;
}

int
tkp_buf_grow(struct tkp_buf *b, size_t need)
{
	if (need > SIZE_MAX - b->len)
		return -1;
	uint8_t *p = tkp_grow(b->p, &b->cap, b->len + need, 1);
	if (!p)
		return -1;
	b->p = p;
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
