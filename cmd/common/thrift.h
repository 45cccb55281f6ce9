/* SPDX-License-Identifier: MIT */
/*
 * Apache Thrift's compact protocol, the writing half only, as Parquet
 * uses it for its page headers and file footer: varints, zigzag
 * integers, field headers by delta, binaries, lists and nested structs.
 * Written from the protocol's published specification
 * (thrift/doc/specs/thrift-compact-protocol.md).
 *
 * Output goes to a growable byte buffer; a failed allocation is kept
 * in it (oom) and every later write is a no-op, so callers check once
 * at the end.
 */
#ifndef TK_CMD_THRIFT_H
#define TK_CMD_THRIFT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct bytebuf {
	uint8_t *p;
	size_t n, cap;
	int oom;
};

void bytebuf_free(struct bytebuf *b);
/* Grows the buffer for n more bytes and appends them (the slow path). */
void bytebuf_put_slow(struct bytebuf *b, const void *p, size_t n);

/* Appends n bytes: inline when they fit, as they nearly always do (the
 * writer appends every value of every row). */
static inline void
bytebuf_put(struct bytebuf *b, const void *p, size_t n)
{
	if (b->n + n <= b->cap && !b->oom) {
		if (n)
			memcpy(b->p + b->n, p, n);
		b->n += n;
		return;
	}
	bytebuf_put_slow(b, p, n);
}

void bytebuf_byte(struct bytebuf *b, uint8_t v);
/* Little-endian fixed widths. */
void bytebuf_le32(struct bytebuf *b, uint32_t v);
void bytebuf_le64(struct bytebuf *b, uint64_t v);
/* ULEB128, as Parquet's RLE run headers and Thrift's varints. */
void bytebuf_uvarint(struct bytebuf *b, uint64_t v);

static inline uint64_t
zigzag64(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

/* Compact protocol type codes. */
enum {
	TC_STOP = 0, TC_TRUE = 1, TC_FALSE = 2, TC_BYTE = 3, TC_I16 = 4,
	TC_I32 = 5, TC_I64 = 6, TC_DOUBLE = 7, TC_BINARY = 8, TC_LIST = 9,
	TC_SET = 10, TC_MAP = 11, TC_STRUCT = 12
};

#define THRIFT_DEPTH 16

/* A writer keeps the last field id of each open struct: fields are
 * given in increasing id order, as the generated code writes them. */
struct thrift {
	struct bytebuf *b;
	int depth;
	int16_t last[THRIFT_DEPTH];
};

void thrift_init(struct thrift *t, struct bytebuf *b);
/* A field header of type `type` (TC_*); then its value below. */
void thrift_field(struct thrift *t, int16_t id, int type);
void thrift_i32(struct thrift *t, int16_t id, int32_t v);
void thrift_i64(struct thrift *t, int16_t id, int64_t v);
void thrift_bool(struct thrift *t, int16_t id, int v);
void thrift_binary(struct thrift *t, int16_t id, const void *p, size_t n);
void thrift_string(struct thrift *t, int16_t id, const char *s);
/* A struct: as a field (`id` > 0) or as a list element (`id` 0, after
 * thrift_list_begin with TC_STRUCT), closed by thrift_struct_end. */
void thrift_struct_begin(struct thrift *t, int16_t id);
void thrift_struct_end(struct thrift *t);
/* A list field of n elements of type `elem`; elements then follow as
 * values: thrift_elem_i32, thrift_elem_string, or structs (id 0). */
void thrift_list_begin(struct thrift *t, int16_t id, int elem, size_t n);
void thrift_elem_i32(struct thrift *t, int32_t v);
void thrift_elem_string(struct thrift *t, const char *s);

#endif
