/* SPDX-License-Identifier: MIT */
/*
 * The building blocks: varints and zigzag at their edges, malformed
 * varints, the CRC32 against zlib's, byte buffers and string interning.
 */
#include <zlib.h>

#include "helpers.h"
#include "intern.h"
#include "rpool.h"
#include "tap.h"
#include "tk_private.h"

TEST(varint_roundtrip_edges)
{
	static const uint64_t values[] = {
		0, 1, 127, 128, 255, 256, 16383, 16384, (1ull << 21) - 1,
		1ull << 21, (1ull << 35) + 17, (1ull << 56) - 1, 1ull << 56,
		(1ull << 63) - 1, 1ull << 63, UINT64_MAX - 1, UINT64_MAX,
	};
	static const size_t lengths[] = {
		1, 1, 1, 2, 2, 2, 2, 3, 3, 4, 6, 8, 9, 9, 10, 10, 10,
	};
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		uint8_t buf[TKP_VARINT_MAX];
		size_t n = tkp_varint_store(buf, values[i]);
		CHECK_EQ_INT(n, lengths[i]);
		const uint8_t *p = buf;
		uint64_t v = 0;
		CHECK(tkp_varint_get(&p, buf + n, &v) == 0);
		CHECK(v == values[i]);
		CHECK(p == buf + n);
	}
	for (int i = 0; i < 100000; i++) {
		uint64_t x = rnd() >> rnd_below(64);
		uint8_t buf[TKP_VARINT_MAX];
		size_t n = tkp_varint_store(buf, x);
		const uint8_t *p = buf;
		uint64_t v;
		if (tkp_varint_get(&p, buf + n, &v) != 0 || v != x || p != buf + n) {
			CHECK(0);
			break;
		}
	}
}

TEST(varint_malformed)
{
	uint64_t v;
	const uint8_t *p;
	/* cut inside */
	static const uint8_t cut[] = { 0x80, 0x80 };
	p = cut;
	CHECK(tkp_varint_get(&p, cut + 2, &v) < 0);
	/* empty */
	p = cut;
	CHECK(tkp_varint_get(&p, cut, &v) < 0);
	/* eleven bytes */
	static const uint8_t eleven[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	                                  0x80, 0x80, 0x80, 0x80, 0x01 };
	p = eleven;
	CHECK(tkp_varint_get(&p, eleven + 11, &v) < 0);
	/* ten bytes whose last one overflows 64 bits */
	static const uint8_t over[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	                                0xff, 0xff, 0xff, 0x02 };
	p = over;
	CHECK(tkp_varint_get(&p, over + 10, &v) < 0);
	/* ten bytes that just fit */
	static const uint8_t max[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	                               0xff, 0xff, 0xff, 0x01 };
	p = max;
	CHECK(tkp_varint_get(&p, max + 10, &v) == 0 && v == UINT64_MAX);
}

TEST(zigzag)
{
	static const int64_t values[] = { 0, -1, 1, -2, 2, INT64_MAX, INT64_MIN,
	                                  INT64_MIN + 1, -1000000007 };
	static const uint64_t expect[] = { 0, 1, 2, 3, 4, UINT64_MAX - 1, UINT64_MAX,
	                                   UINT64_MAX - 2, 2000000013 };
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		CHECK(tkp_zigzag(values[i]) == expect[i]);
		CHECK(tkp_unzigzag(expect[i]) == values[i]);
	}
}

/* The library's CRC (libdeflate) is the CRC of zlib and gzip. */
TEST(crc32_matches_zlib)
{
	CHECK(tkp_crc32(0, "123456789", 9) == 0xcbf43926u);
	static uint8_t buf[70000];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	for (int i = 0; i < 200; i++) {
		size_t off = rnd_below(1000), len = rnd_below(sizeof(buf) - 1000);
		uint32_t a = tkp_crc32(0, buf + off, len);
		uLong b = crc32(0, buf + off, (uInt)len);
		if (a != (uint32_t)b) {
			CHECK(0);
			break;
		}
		/* chaining, as for a chunk's header then payload */
		size_t cut = len / 3;
		CHECK(tkp_crc32(tkp_crc32(0, buf + off, cut), buf + off + cut, len - cut) == a);
	}
}

TEST(little_endian_fields)
{
	uint8_t b[8];
	tkp_le64(b, 0x0102030405060708ull);
	CHECK(b[0] == 8 && b[7] == 1);
	CHECK(tkp_get64(b) == 0x0102030405060708ull);
	tkp_le32(b, 0xdeadbeef);
	CHECK(b[0] == 0xef && tkp_get32(b) == 0xdeadbeef);
	tkp_le16(b, 0xabcd);
	CHECK(b[0] == 0xcd && tkp_get16(b) == 0xabcd);
}

/* The header codec against the bytes tracekit-format(5) lays out. */
TEST(headers)
{
	struct tkp_file_header fh = { .major = 1, .minor = 1 }, fd;
	uint8_t h[TKP_HEADER_SIZE];
	CHECK_EQ_INT(tkp_file_header_encode(h, &fh), 36);
	static const uint8_t want[32] = {
		0x89, 'T', 'K', 'T', '\r', '\n', 0x1a, '\n', 1, 0, 1, 0, 36, 0, 0, 0,
	};
	CHECK(memcmp(h, want, 32) == 0);
	CHECK(tkp_get32(h + 32) == (uint32_t)crc32(0, h, 32));
	CHECK(tkp_is_file_magic(h, 8) && tkp_is_file_magic(h, 3) &&
	      !tkp_is_chunk_magic(h));
	tkp_file_header_decode(h, TKP_HEADER_PREFIX, &fd); /* the prefix only */
	CHECK(fd.major == 1 && fd.minor == 1 && fd.size == 36 && fd.crc == 0);
	fh.incompat = 0x0102030405060708ull;
	fh.compat = 9;
	tkp_file_header_encode(h, &fh);
	tkp_file_header_decode(h, sizeof(h), &fd);
	CHECK(fd.incompat == fh.incompat && fd.compat == 9 &&
	      fd.crc == (uint32_t)crc32(0, h, 32));
	CHECK(tkp_file_header_size_ok(36) && !tkp_file_header_size_ok(35) &&
	      tkp_file_header_size_ok(TKP_HEADER_MAX) &&
	      !tkp_file_header_size_ok(TKP_HEADER_MAX + 1));

	const uint8_t body[5] = "abcde";
	struct tkp_chunk_header ch = {
		.flags = TK_CHUNK_SORTED | TK_CHUNK_END, .stored = 5, .raw = 5,
		.events = 2, .t_min = -3, .t_max = 1ll << 40, .watermark = INT64_MAX,
	}, cd;
	uint8_t c[TKP_CHUNK_HEADER_SIZE];
	tkp_chunk_header_encode(c, &ch, body);
	CHECK(tkp_is_chunk_magic(c) && !tkp_is_file_magic(c, 4));
	CHECK(tkp_get32(c + 4) == 56 && tkp_get32(c + 8) == ch.flags &&
	      tkp_get32(c + 12) == 5 && tkp_get32(c + 16) == 5 &&
	      tkp_get32(c + 20) == 2 && (int64_t)tkp_get64(c + 24) == -3 &&
	      tkp_get64(c + 32) == 1ull << 40 &&
	      tkp_get64(c + 40) == (uint64_t)INT64_MAX && tkp_get32(c + 48) == 0);
	uint32_t crc = (uint32_t)crc32(crc32(0, c, 52), body, 5);
	CHECK(tkp_get32(c + 52) == crc);
	tkp_chunk_header_decode(c, sizeof(c), &cd);
	CHECK(cd.size == 56 && cd.flags == ch.flags && cd.stored == 5 &&
	      cd.raw == 5 && cd.events == 2 && cd.t_min == -3 &&
	      cd.t_max == ch.t_max && cd.watermark == INT64_MAX && cd.crc == crc);
	tkp_chunk_header_decode(c, 16, &cd); /* what a feed reader peeks at */
	CHECK(cd.size == 56 && cd.stored == 5 && cd.raw == 0 && cd.crc == 0);
	tkp_chunk_header_decode(c, TKP_CHUNK_FIELDS, &cd); /* the scan's */
	CHECK(cd.events == 2 && cd.watermark == INT64_MAX && cd.crc == 0);
	CHECK(tkp_chunk_header_sizes_ok(&ch));
	ch.events = 6; /* more events than bytes */
	CHECK(!tkp_chunk_header_sizes_ok(&ch));
	ch.events = 2;
	ch.stored = 4; /* stored, yet smaller */
	CHECK(!tkp_chunk_header_sizes_ok(&ch));
	ch.flags |= TK_CHUNK_DEFLATE;
	CHECK(tkp_chunk_header_sizes_ok(&ch));
	CHECK(!tkp_chunk_flags_unknown(ch.flags | 0x10000u));
	CHECK(tkp_chunk_flags_unknown(0x8000u));
}

/* One error rule for every handle: the first failure stays; a rejected
 * call is told but does not hide a failure. */
TEST(errors)
{
	struct tkp_error e = { 0 };
	CHECK(strcmp(tkp_error_msg(&e), "no error") == 0);
	CHECK_EQ_INT(tkp_error_reject(&e, TK_EINVAL, 22, "bad %d", 1), TK_EINVAL);
	CHECK(e.code == 0 && e.errnum == 22 && strcmp(e.msg, "bad 1") == 0);
	CHECK_EQ_INT(tkp_error_set(&e, TK_EIO, 5, "io %s", "x"), TK_EIO);
	CHECK(e.code == TK_EIO && e.errnum == 5 && strcmp(e.msg, "io x") == 0);
	CHECK_EQ_INT(tkp_error_set(&e, TK_ENOMEM, 12, "later"), TK_EIO);
	CHECK_EQ_INT(tkp_error_reject(&e, TK_EINVAL, 22, "later"), TK_EINVAL);
	CHECK(e.code == TK_EIO && e.errnum == 5 && strcmp(e.msg, "io x") == 0);
	tkp_error_clear(&e);
	CHECK(e.code == 0 && e.errnum == 0 && strcmp(tkp_error_msg(&e), "no error") == 0);
}

TEST(buffers)
{
	struct tkp_buf b = { 0 };
	for (int i = 0; i < 100000; i++)
		CHECK(tkp_buf_varint(&b, (uint64_t)i) == 0);
	const uint8_t *p = b.p, *end = b.p + b.len;
	int bad = 0;
	for (int i = 0; i < 100000; i++) {
		uint64_t v;
		bad += tkp_varint_get(&p, end, &v) != 0 || v != (uint64_t)i;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK(p == end);
	tkp_buf_free(&b);
	CHECK(b.p == NULL && b.len == 0);
}

/* The writer interns a kind's string attribute through schema.str: it
 * must be the kind's one TKP_ENC_STR attribute, and every kind that has
 * one must name it; the union copy of fixed size must cover every kind. */
TEST(schema_string_attributes)
{
	for (unsigned k = 1; k <= TK_KIND_MAX; k++) {
		const struct tkp_kind_schema *ks = &tkp_schema[k];
		const struct tkp_attr *found = NULL;
		unsigned n = 0;
		for (unsigned i = 0; i < ks->n; i++)
			if (ks->attrs[i].enc == TKP_ENC_STR) {
				found = &ks->attrs[i];
				n++;
			}
		CHECK(n <= 1);
		CHECK(ks->str == found);
		CHECK(ks->size <= sizeof(((struct tk_event *)0)->u));
	}
	CHECK(tkp_schema[TK_KERNEL].str != NULL);
	CHECK(tkp_schema[TK_API].str == NULL);
}

TEST(interning)
{
	struct tkp_intern t = { 0 };
	int added;
	char s[32];
	/* many strings: ids are dense, equal strings equal ids, across rehashes */
	for (int i = 0; i < 50000; i++) {
		snprintf(s, sizeof(s), "name-%d", i);
		uint32_t id = tkp_intern(&t, s, strlen(s), &added);
		if (id != (uint32_t)i + 1 || !added) {
			CHECK(0);
			break;
		}
	}
	for (int i = 0; i < 50000; i += 7) {
		snprintf(s, sizeof(s), "name-%d", i);
		uint32_t id = tkp_intern(&t, s, strlen(s), &added);
		CHECK(id == (uint32_t)i + 1 && !added);
		uint32_t len;
		const char *back = tkp_intern_get(&t, id, &len);
		CHECK(back && len == strlen(s) && strcmp(back, s) == 0);
	}
	CHECK(tkp_intern_find(&t, "name-49999", 10) == 50000);
	CHECK(tkp_intern_find(&t, "name-50000", 10) == 0);
	/* bytes with NULs are strings too; "" has an id */
	CHECK(tkp_intern(&t, "a\0b", 3, &added) != tkp_intern(&t, "a\0c", 3, &added));
	CHECK(tkp_intern(&t, "", 0, &added) != 0);
	/* a long string */
	static char big[100000];
	memset(big, 'x', sizeof(big) - 1);
	uint32_t id = tkp_intern(&t, big, sizeof(big) - 1, &added);
	CHECK(id && added && strlen(tkp_intern_get(&t, id, NULL)) == sizeof(big) - 1);
	tkp_intern_clear(&t);
	CHECK(tkp_intern(&t, "name-5", 6, &added) == 1 && added);
	tkp_intern_free(&t);
}

/* The read-ahead pool hands each posted slot to the taker once, oldest
 * first, and never a slot still held: with every slot taken, a take
 * finds none posted; a slot released is filled and taken again.  With
 * workers (2) and without (0: the taker does the work). */
TEST(rpool_slots_taken_once)
{
	static const unsigned threads[] = { 0, 2 };
	for (size_t t = 0; t < 2; t++) {
		struct tkp_rpool *p = tkp_rpool_new(threads[t]);
		CHECK(p != NULL);
		if (!p)
			return;
		unsigned n = p->nslots;
		CHECK_EQ_INT(n, threads[t] + 1);
		for (unsigned i = 0; i < n; i++) {
			struct tkp_rslot *s = tkp_rpool_free_slot(p);
			CHECK(s == &p->slots[i]);
			if (!s)
				break;
			s->chunk = 0;
			tkp_rpool_post(p, s);
		}
		CHECK(tkp_rpool_free_slot(p) == NULL);      /* every slot in use */
		for (unsigned i = 0; i < n; i++)
			CHECK(tkp_rpool_take(p) == &p->slots[i]);
		CHECK(tkp_rpool_take(p) == NULL);           /* all held: none posted */
		tkp_rpool_release(p, &p->slots[0]);
		CHECK(tkp_rpool_take(p) == NULL);           /* released, not posted */
		struct tkp_rslot *s = tkp_rpool_free_slot(p);
		CHECK(s == &p->slots[0]);
		if (s) {
			tkp_rpool_post(p, s);
			CHECK(tkp_rpool_take(p) == s);
		}
		CHECK(tkp_rpool_take(p) == NULL);
		for (unsigned i = 0; i < n; i++)
			tkp_rpool_release(p, &p->slots[i]);
		tkp_rpool_free(p);
	}
}

int
main(void)
{
	RUN(varint_roundtrip_edges);
	RUN(varint_malformed);
	RUN(zigzag);
	RUN(crc32_matches_zlib);
	RUN(little_endian_fields);
	RUN(headers);
	RUN(errors);
	RUN(buffers);
	RUN(interning);
	RUN(schema_string_attributes);
	RUN(rpool_slots_taken_once);
	return tap_done();
}
