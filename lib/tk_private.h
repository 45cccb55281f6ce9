/* SPDX-License-Identifier: MIT */
/*
 * Internal to libtracekit: byte buffers, varints, little-endian fields,
 * the per-kind attribute schema and constants of the format.  Functions
 * shared between library files are named tkp_*.
 */
#ifndef TK_PRIVATE_H
#define TK_PRIVATE_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "support.h"
#include "tracekit.h"

#define TKP_HIDDEN __attribute__((visibility("hidden")))

/* ---- Format constants (tracekit-format(5)) ----------------------------- */

#define TKP_MAGIC "\x89TKT\r\n\x1a\n"       /* file header, 8 bytes */
#define TKP_CHUNK_MAGIC "\x89TKC"           /* chunk header, 4 bytes */
#define TKP_HEADER_SIZE 36u                 /* v1.0 file header */
#define TKP_HEADER_MAX 4096u                /* larger = corrupt */
#define TKP_CHUNK_HEADER_SIZE 56u           /* v1.0 chunk header */
#define TKP_CHUNK_STORED_MAX (64u << 20)    /* sanity limits */
#define TKP_CHUNK_RAW_MAX (256u << 20)

/* Chunk flags: the low 16 bits are features a reader must understand
 * to decode the chunk, the high 16 bits may be ignored. */
#define TKP_CHUNK_INCOMPAT_MASK 0xffffu
#define TKP_CHUNK_KNOWN (TK_CHUNK_DEFLATE | TK_CHUNK_SORTED | TK_CHUNK_END | \
                         TK_CHUNK_GROUPED | TK_CHUNK_ARGS_TEMPLATES)

/* ---- File and chunk headers (header.c) ------------------------------------ */

/* A file header: the first TKP_HEADER_PREFIX bytes (magic, versions,
 * size) are the same in every version; the rest runs to `size`, which
 * ends with the CRC32 of the bytes before it. */
#define TKP_HEADER_PREFIX 16u
struct tkp_file_header {
	uint16_t major, minor;
	uint32_t size;           /* bytes, the CRC included */
	uint64_t incompat;       /* features a reader must know */
	uint64_t compat;         /* features a reader may ignore */
	uint32_t crc;            /* as stored */
};

/* A chunk header: magic, then the fields below in their first
 * TKP_CHUNK_FIELDS bytes, a reserved word, and a CRC32 at size - 4 that
 * also covers the stored payload. */
#define TKP_CHUNK_FIELDS 48u
struct tkp_chunk_header {
	uint32_t size;           /* header bytes, the CRC included */
	uint32_t flags;          /* TK_CHUNK_* */
	uint32_t stored;         /* payload bytes as stored */
	uint32_t raw;            /* payload bytes once inflated */
	uint32_t events;
	int64_t t_min, t_max;    /* of the chunk's events; 0 if none */
	int64_t watermark;
	uint32_t crc;            /* as stored */
};

/* Does p begin a file header (n bytes of it at hand, up to 8 compared),
 * or a chunk (4 bytes)? */
static inline int
tkp_is_file_magic(const uint8_t *p, size_t n)
{
	return memcmp(p, TKP_MAGIC, n < 8 ? n : 8) == 0;
}

static inline int
tkp_is_chunk_magic(const uint8_t *p)
{
	return memcmp(p, TKP_CHUNK_MAGIC, 4) == 0;
}

/* Header sizes a reader accepts. */
static inline int
tkp_file_header_size_ok(uint32_t size)
{
	return size >= TKP_HEADER_SIZE && size <= TKP_HEADER_MAX;
}

static inline int
tkp_chunk_header_size_ok(uint32_t size)
{
	return size >= TKP_CHUNK_HEADER_SIZE && size <= TKP_HEADER_MAX;
}

/* Chunk flags that need a feature this library lacks. */
static inline uint32_t
tkp_chunk_flags_unknown(uint32_t flags)
{
	return (flags & TKP_CHUNK_INCOMPAT_MASK) & ~(uint32_t)TKP_CHUNK_KNOWN;
}

/* Decode the fields held by the first n bytes of p; the others are
 * zero.  The magic is not checked. */
TKP_HIDDEN void tkp_file_header_decode(const uint8_t *p, size_t n,
                                       struct tkp_file_header *h);
TKP_HIDDEN void tkp_chunk_header_decode(const uint8_t *p, size_t n,
                                        struct tkp_chunk_header *h);
/* Encode a header of this version (its size is ours, not h->size) with
 * its CRC; a chunk's CRC also covers body[0 .. h->stored). */
TKP_HIDDEN size_t tkp_file_header_encode(uint8_t p[TKP_HEADER_SIZE],
                                         const struct tkp_file_header *h);
TKP_HIDDEN void tkp_chunk_header_encode(uint8_t p[TKP_CHUNK_HEADER_SIZE],
                                        const struct tkp_chunk_header *h,
                                        const void *body);
/* The stored and raw sizes and the event count are within the limits
 * and agree with each other. */
TKP_HIDDEN int tkp_chunk_header_sizes_ok(const struct tkp_chunk_header *h);

/* Definition record types. */
enum {
	TKP_DEF_STRING = 1,
	TKP_DEF_PROCESS = 2,
	TKP_DEF_THREAD = 3,
	TKP_DEF_STREAM = 4,
	TKP_DEF_COUNTER = 5,
	TKP_DEF_DEVICE = 6,
	TKP_DEF_CONFIG = 7,
	TKP_DEF_META = 8,
	TKP_DEF_CATEGORY = 9,
};

/* Column ids: (kind, attr).  Kind 0 holds the columns every event has. */
enum {
	TKP_COL_KIND = 1,
	TKP_COL_TRACK = 2,
	TKP_COL_TS = 3,
	TKP_COL_DUR = 4,
	TKP_COL_NAME = 5,
	TKP_COL_GROUPS = 6, /* grouped chunks: each track's group */
};
#define TKP_ATTR_ARGS 63u   /* every kind: JSON object text */
/* or the same as templates and numbers (args_template.h) */
#define TKP_ATTR_ARGS_TEMPLATES 60u
#define TKP_ATTR_ARGS_TEMPLATE 61u
#define TKP_ATTR_ARGS_NUMBERS 62u
#define TKP_ATTR_MAX 63u

/* Ids are dense; these bound what a reader accepts from one stream. */
#define TKP_ID_MAX (1u << 26)

/* ---- Attribute schema ---------------------------------------------------- */

enum tkp_enc {
	TKP_ENC_U,      /* unsigned varint */
	TKP_ENC_S,      /* zigzag varint */
	TKP_ENC_D,      /* zigzag varint of the difference to the previous
	                   value in the column (ids that grow) */
	TKP_ENC_F64,    /* 8 bytes little-endian IEEE double */
	TKP_ENC_STR,    /* string id, unsigned varint */
	TKP_ENC_CONFIG, /* kernel launch configuration id, unsigned varint */
};

enum tkp_ftype { TKP_U32, TKP_I32, TKP_U64, TKP_I64, TKP_F64 };

struct tkp_attr {
	uint8_t attr;       /* column attribute number */
	uint8_t enc;        /* enum tkp_enc */
	uint8_t ftype;      /* enum tkp_ftype of the event field */
	uint16_t off;       /* offset of the field in struct tk_event */
	uint16_t str_off;   /* TKP_ENC_STR: offset of the const char * */
};

struct tkp_kind_schema {
	const struct tkp_attr *attrs;
	unsigned n;
	unsigned size;      /* of the kind's member of tk_event.u */
	const struct tkp_attr *str; /* its one TKP_ENC_STR attribute, or NULL */
};

/* Offset of tk_event.u, to turn attribute offsets into offsets within
 * one kind's attribute struct. */
#define TKP_UNION_OFF offsetof(struct tk_event, u)

TKP_HIDDEN extern const struct tkp_kind_schema tkp_schema[TK_KIND_MAX + 1];

/* ---- Byte buffers -------------------------------------------------------- */

struct tkp_buf {
	uint8_t *p;
	size_t len, cap;
};

TKP_HIDDEN int tkp_buf_grow(struct tkp_buf *b, size_t need);
TKP_HIDDEN void tkp_buf_free(struct tkp_buf *b);

static inline int
tkp_buf_reserve(struct tkp_buf *b, size_t n)
{
	if (b->cap - b->len >= n)
		return 0;
	return tkp_buf_grow(b, n);
}

static inline int
tkp_buf_put(struct tkp_buf *b, const void *src, size_t n)
{
	if (tkp_buf_reserve(b, n) < 0)
		return -1;
	if (n)
		memcpy(b->p + b->len, src, n);
	b->len += n;
	return 0;
}

/* Grow one of several arrays that share a capacity, `cap`, so that it
 * holds `need` items (tkp_grow()): *new_cap is the capacity they all
 * grow to, for the caller to store once every one has.  0 or -1. */
static inline int
tkp_grow_shared(void *arrp, size_t cap, size_t need, size_t elem,
                size_t *new_cap)
{
	void **arr = arrp;
	void *p = tkp_grow(*arr, &cap, need, elem);
	if (!p)
		return -1;
	*arr = p;
	*new_cap = cap;
	return 0;
}

/* ---- Varints (LEB128) and zigzag ----------------------------------------- */

#define TKP_VARINT_MAX 10

static inline uint64_t
tkp_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t
tkp_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Store v at p (room for TKP_VARINT_MAX bytes); returns bytes used. */
static inline size_t
tkp_varint_store(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static inline int
tkp_buf_varint(struct tkp_buf *b, uint64_t v)
{
	if (tkp_buf_reserve(b, TKP_VARINT_MAX) < 0)
		return -1;
	b->len += tkp_varint_store(b->p + b->len, v);
	return 0;
}

/* Decode a varint from [*p, end); advances *p.  Returns 0, or -1 when
 * the input ends inside it or it is longer than 64 bits. */
static inline int
tkp_varint_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	const uint8_t *s = *p;
	if (s < end && *s < 0x80) {
		*v = *s;
		*p = s + 1;
		return 0;
	}
	uint64_t r = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (s >= end)
			return -1;
		uint8_t c = *s++;
		if (shift == 63 && c > 1)
			return -1;
		r |= (uint64_t)(c & 0x7f) << shift;
		if (c < 0x80) {
			*v = r;
			*p = s;
			return 0;
		}
	}
	return -1;
}

/* ---- Little-endian fixed-width fields ------------------------------------ */

static inline void
tkp_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void
tkp_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void
tkp_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t
tkp_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t
tkp_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t
tkp_get64(const uint8_t *p)
{
	return (uint64_t)tkp_get32(p) | (uint64_t)tkp_get32(p + 4) << 32;
}

/* ---- Event field access by schema ---------------------------------------- */

/* Attributes lie in the union: addressed from it, so that compilers see
 * the union as the object written (not the event's first member). */
static inline uint64_t
tkp_field_get(const struct tk_event *ev, const struct tkp_attr *a)
{
	const char *f = (const char *)&ev->u + (a->off - TKP_UNION_OFF);
	uint32_t u32;
	int32_t i32;
	uint64_t u64;
	int64_t i64;
	switch (a->ftype) {
	case TKP_U32: memcpy(&u32, f, 4); return u32;
	case TKP_I32: memcpy(&i32, f, 4); return (uint64_t)(int64_t)i32;
	case TKP_I64: memcpy(&i64, f, 8); return (uint64_t)i64;
	default: memcpy(&u64, f, 8); return u64; /* U64 and F64 bits */
	}
}

static inline void
tkp_field_set(struct tk_event *ev, const struct tkp_attr *a, uint64_t v)
{
	char *f = (char *)&ev->u + (a->off - TKP_UNION_OFF);
	uint32_t u32 = (uint32_t)v;
	switch (a->ftype) {
	case TKP_U32:
	case TKP_I32: memcpy(f, &u32, 4); break;
	default: memcpy(f, &v, 8); break;
	}
}

/* The string pointer of a STR attribute. */
static inline const char *
tkp_field_str(const struct tk_event *ev, const struct tkp_attr *a)
{
	const char *s;
	memcpy(&s, (const char *)&ev->u + (a->str_off - TKP_UNION_OFF), sizeof(s));
	return s;
}

static inline void
tkp_field_set_str(struct tk_event *ev, const struct tkp_attr *a, const char *s)
{
	memcpy((char *)&ev->u + (a->str_off - TKP_UNION_OFF), &s, sizeof(s));
}

/* ---- Errors ---------------------------------------------------------------- */

/* The last error of a handle (reader, writer, merge): one line of text,
 * its TK_E* code and the errno that caused it (0 when none did). */
struct tkp_error {
	int code;                /* 0 while the handle is usable */
	int errnum;
	char msg[512];
};

/* Record a failure: the handle is unusable from then on, and its first
 * failure is the one it reports (later calls change nothing).  Returns
 * the code recorded. */
TKP_HIDDEN int tkp_error_set(struct tkp_error *e, int code, int errnum,
                             const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Record a rejected call: message and errno, but the handle stays
 * usable (code stays 0); ignored after a failure.  Returns `code`. */
TKP_HIDDEN int tkp_error_reject(struct tkp_error *e, int code, int errnum,
                                const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static inline void
tkp_error_clear(struct tkp_error *e)
{
	e->code = 0;
	e->errnum = 0;
	e->msg[0] = 0;
}

/* The message for tk_*_error(). */
static inline const char *
tkp_error_msg(const struct tkp_error *e)
{
	return e->msg[0] ? e->msg : "no error";
}

/* ---- Misc ------------------------------------------------------------------ */

TKP_HIDDEN uint32_t tkp_crc32(uint32_t crc, const void *p, size_t n);
/* write(2) all of it, retrying on EINTR; 0 or -1 with errno. */
TKP_HIDDEN int tkp_write_all(int fd, const void *p, size_t n);
/* Go on writing a trace through `sink` rather than a descriptor: it gets
 * every piece of the stream in order and returns 0, or -1 with errno.
 * The injection library opens its spool for each write, so that the
 * recorded program, which may close any descriptor, never has ours. */
TKP_HIDDEN void tkp_writer_set_sink(struct tk_writer *w,
                                    int (*sink)(void *arg, const void *p,
                                                size_t n),
                                    void *arg);

#endif /* TK_PRIVATE_H */
