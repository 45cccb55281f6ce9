/* SPDX-License-Identifier: MIT */
/*
 * Protobuf encoding for trace-to-perfetto: the handful of wire types a
 * trace needs (varint, fixed64, length-delimited), written into growable
 * buffers.  Nested messages are written in place: a one-byte length is
 * reserved and the body moved in the rare case it is 128 bytes or more.
 */
#include <stdlib.h>

#include "perfetto.h"
#include "common/util.h"

void
pb_grow(struct pbuf *b, size_t n)
{
	size_t need = b->len + n;
	if (need <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	b->p = cmd_xrealloc(b->p, cap);
	b->cap = cap;
}

void
pb_free(struct pbuf *b)
{
	free(b->p);
	*b = (struct pbuf){ 0 };
}

void
pb_fixed64(struct pbuf *b, unsigned field, uint64_t v)
{
	pb_tag(b, field, PB_FIXED64);
	pb_grow(b, 8);
	for (int i = 0; i < 8; i++)
		b->p[b->len++] = (uint8_t)(v >> (8 * i));
}

void
pb_double(struct pbuf *b, unsigned field, double v)
{
	uint64_t u;
	memcpy(&u, &v, sizeof(u));
	pb_fixed64(b, field, u);
}

void
pb_bytes(struct pbuf *b, unsigned field, const void *p, size_t n)
{
	pb_tag(b, field, PB_LEN);
	pb_varint(b, n);
	pb_grow(b, n);
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

void
pb_str(struct pbuf *b, unsigned field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

void
pb_msg(struct pbuf *b, unsigned field, const struct pbuf *m)
{
	pb_bytes(b, field, m->p, m->len);
}

size_t
pb_open(struct pbuf *b, unsigned field)
{
	pb_tag(b, field, PB_LEN);
	pb_grow(b, 1);
	b->p[b->len++] = 0;
	return b->len - 1;
}

void
pb_close(struct pbuf *b, size_t at)
{
	size_t body = b->len - at - 1;
	if (body < 0x80) {
		b->p[at] = (uint8_t)body;
		return;
	}
	uint8_t v[10];
	size_t n = 0;
	for (uint64_t x = body; ; x >>= 7) {
		v[n++] = (uint8_t)(x < 0x80 ? x : (x & 0x7f) | 0x80);
		if (x < 0x80)
			break;
	}
	pb_grow(b, n - 1);
	memmove(b->p + at + n, b->p + at + 1, body);
	memcpy(b->p + at, v, n);
	b->len += n - 1;
}
