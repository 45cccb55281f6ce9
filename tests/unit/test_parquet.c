/* SPDX-License-Identifier: MIT */
/*
 * The pieces of the Parquet writer against bytes worked out by hand from
 * the specifications: ULEB128 varints and zigzag (Thrift's compact
 * protocol), the RLE/bit-packed hybrid (parquet-format Encodings.md,
 * whose bit-packing example is the second test), Thrift compact field
 * headers, structs and lists.  Whole files are read back by DuckDB in
 * tests/cli/trace-export.bats.
 */
#include <string.h>

#include "tap.h"
#include "common/parquet.h"
#include "common/thrift.h"

static int
bytes_are(const struct bytebuf *b, const uint8_t *want, size_t n)
{
	if (b->n != n || memcmp(b->p, want, n) != 0) {
		fprintf(stderr, "# got");
		for (size_t i = 0; i < b->n; i++)
			fprintf(stderr, " %02x", b->p[i]);
		fprintf(stderr, "\n");
		return 0;
	}
	return 1;
}

TEST(varints_and_zigzag)
{
	struct bytebuf b = { 0 };
	bytebuf_uvarint(&b, 0);
	bytebuf_uvarint(&b, 127);
	bytebuf_uvarint(&b, 128);
	bytebuf_uvarint(&b, 300);
	bytebuf_uvarint(&b, UINT64_MAX);
	static const uint8_t want[] = { 0x00, 0x7f, 0x80, 0x01, 0xac, 0x02,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	CHECK(bytes_are(&b, want, sizeof(want)));
	CHECK(zigzag64(0) == 0);
	CHECK(zigzag64(-1) == 1);
	CHECK(zigzag64(1) == 2);
	CHECK(zigzag64(-2) == 3);
	CHECK(zigzag64(INT64_MAX) == UINT64_MAX - 1);
	CHECK(zigzag64(INT64_MIN) == UINT64_MAX);
	bytebuf_free(&b);
}

TEST(rle_hybrid)
{
	struct bytebuf b = { 0 };
	/* Encodings.md: 0..7 on 3 bits bit-packed, one group */
	const uint32_t seq[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	pq_rle_hybrid(&b, seq, 8, 3);
	static const uint8_t packed[] = { 0x03, 0x88, 0xc6, 0xfa };
	CHECK(bytes_are(&b, packed, sizeof(packed)));
	/* ten 5s: one RLE run, header 10 << 1, the value in one byte */
	b.n = 0;
	const uint32_t fives[10] = { 5, 5, 5, 5, 5, 5, 5, 5, 5, 5 };
	pq_rle_hybrid(&b, fives, 10, 3);
	static const uint8_t run[] = { 0x14, 0x05 };
	CHECK(bytes_are(&b, run, sizeof(run)));
	/* 1 0 1, then the group padded with zeros */
	b.n = 0;
	const uint32_t few[3] = { 1, 0, 1 };
	pq_rle_hybrid(&b, few, 3, 1);
	static const uint8_t pad[] = { 0x03, 0x05 };
	CHECK(bytes_are(&b, pad, sizeof(pad)));
	/* a literal group, then a run of twelve 1s, on 9 bits (2-byte value) */
	b.n = 0;
	uint32_t mix[20] = { 0, 1, 0, 1, 0, 1, 0, 1 };
	for (int i = 8; i < 20; i++)
		mix[i] = 300;
	pq_rle_hybrid(&b, mix, 20, 9);
	CHECK(b.n == 1 + 9 + 1 + 2);
	CHECK(b.n > 12 && b.p[0] == 0x03 && b.p[10] == 24 && b.p[11] == 0x2c &&
	      b.p[12] == 0x01);
	CHECK(pq_bit_width(0) == 0);
	CHECK(pq_bit_width(1) == 1);
	CHECK(pq_bit_width(7) == 3);
	CHECK(pq_bit_width(8) == 4);
	CHECK(pq_bit_width(UINT32_MAX) == 32);
	bytebuf_free(&b);
}

TEST(thrift_compact)
{
	struct bytebuf b = { 0 };
	struct thrift t;
	thrift_init(&t, &b);
	thrift_i32(&t, 1, 3);           /* delta 1, i32: 0x15, zigzag 6 */
	thrift_struct_begin(&t, 5);     /* delta 4, struct: 0x4c */
	thrift_bool(&t, 1, 1);          /* delta 1, true: 0x11 */
	thrift_struct_end(&t);          /* stop */
	thrift_i64(&t, 20, -1);         /* delta 15 fits: 0xf6, zigzag 1 */
	thrift_i64(&t, 40, 2);          /* delta 20: long form 0x06, id 80 */
	thrift_list_begin(&t, 41, TC_I32, 2); /* 0x19, 2 << 4 | 5 */
	thrift_elem_i32(&t, -3);
	thrift_elem_i32(&t, 64);        /* zigzag 128: 0x80 0x01 */
	thrift_string(&t, 42, "ab");    /* 0x18, length, bytes */
	thrift_struct_end(&t);
	static const uint8_t want[] = { 0x15, 0x06, 0x4c, 0x11, 0x00, 0xf6,
		0x01, 0x06, 0x50, 0x04, 0x19, 0x25, 0x05, 0x80, 0x01, 0x18,
		0x02, 'a', 'b', 0x00 };
	CHECK(bytes_are(&b, want, sizeof(want)));
	/* 15 elements and more: size in a varint after 0xf_ */
	b.n = 0;
	thrift_init(&t, &b);
	thrift_list_begin(&t, 1, TC_STRUCT, 20);
	static const uint8_t longlist[] = { 0x19, 0xfc, 0x14 };
	CHECK(bytes_are(&b, longlist, sizeof(longlist)));
	bytebuf_free(&b);
}

int
main(void)
{
	RUN(varints_and_zigzag);
	RUN(rle_hybrid);
	RUN(thrift_compact);
	return tap_done();
}
