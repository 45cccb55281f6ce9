/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "thrift.h"
#include "support.h"

void
bytebuf_free(struct bytebuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void
bytebuf_put_slow(struct bytebuf *b, const void *p, size_t n)
{
	if (b->oom || n == 0)
		return;
	if (b->n + n > b->cap) {
		uint8_t *q = tkp_grow(b->p, &b->cap, b->n + n, 1);
		if (!q) {
			b->oom = 1;
			return;
		}
		b->p = q;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

void
bytebuf_byte(struct bytebuf *b, uint8_t v)
{
	bytebuf_put(b, &v, 1);
}

void
bytebuf_le32(struct bytebuf *b, uint32_t v)
{
	uint8_t x[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
	                 (uint8_t)(v >> 24) };
	bytebuf_put(b, x, 4);
}

void
bytebuf_le64(struct bytebuf *b, uint64_t v)
{
	bytebuf_le32(b, (uint32_t)v);
	bytebuf_le32(b, (uint32_t)(v >> 32));
}

void
bytebuf_uvarint(struct bytebuf *b, uint64_t v)
{
	uint8_t x[10];
	size_t n = 0;
	while (v >= 0x80) {
		x[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	x[n++] = (uint8_t)v;
	bytebuf_put(b, x, n);
}

void
thrift_init(struct thrift *t, struct bytebuf *b)
{
	memset(t, 0, sizeof(*t));
	t->b = b;
}

void
thrift_field(struct thrift *t, int16_t id, int type)
{
	int16_t *last = &t->last[t->depth];
	int delta = id - *last;
	if (delta > 0 && delta <= 15) {
		bytebuf_byte(t->b, (uint8_t)(delta << 4 | type));
	} else {
		/* the long form: type alone, then the id as a zigzag i16 */
		bytebuf_byte(t->b, (uint8_t)type);
		bytebuf_uvarint(t->b, zigzag64(id));
	}
	*last = id;
}

void
thrift_i32(struct thrift *t, int16_t id, int32_t v)
{
	thrift_field(t, id, TC_I32);
	bytebuf_uvarint(t->b, zigzag64(v));
}

void
thrift_i64(struct thrift *t, int16_t id, int64_t v)
{
	thrift_field(t, id, TC_I64);
	bytebuf_uvarint(t->b, zigzag64(v));
}

void
thrift_bool(struct thrift *t, int16_t id, int v)
{
	/* a boolean field's value is its type code */
	thrift_field(t, id, v ? TC_TRUE : TC_FALSE);
}

void
thrift_binary(struct thrift *t, int16_t id, const void *p, size_t n)
{
	thrift_field(t, id, TC_BINARY);
	bytebuf_uvarint(t->b, n);
	bytebuf_put(t->b, p, n);
}

void
thrift_string(struct thrift *t, int16_t id, const char *s)
{
	thrift_binary(t, id, s, strlen(s));
}

void
thrift_struct_begin(struct thrift *t, int16_t id)
{
	if (id > 0)
		thrift_field(t, id, TC_STRUCT);
	if (t->depth + 1 >= THRIFT_DEPTH) {
		t->b->oom = 1; /* deeper than any Parquet structure */
		return;
	}
	t->last[++t->depth] = 0;
}

void
thrift_struct_end(struct thrift *t)
{
	bytebuf_byte(t->b, TC_STOP);
	if (t->depth > 0)
		t->depth--;
}

void
thrift_list_begin(struct thrift *t, int16_t id, int elem, size_t n)
{
	thrift_field(t, id, TC_LIST);
	if (n < 15) {
		bytebuf_byte(t->b, (uint8_t)(n << 4 | (size_t)elem));
	} else {
		bytebuf_byte(t->b, (uint8_t)(0xf0 | elem));
		bytebuf_uvarint(t->b, n);
	}
}

void
thrift_elem_i32(struct thrift *t, int32_t v)
{
	bytebuf_uvarint(t->b, zigzag64(v));
}

void
thrift_elem_string(struct thrift *t, const char *s)
{
	size_t n = strlen(s);
	bytebuf_uvarint(t->b, n);
	bytebuf_put(t->b, s, n);
}
