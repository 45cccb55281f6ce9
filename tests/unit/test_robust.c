/* SPDX-License-Identifier: MIT */
/*
 * The reader against damaged and unusual input: truncation at every byte
 * offset, every single-bit flip, concatenated traces, records and
 * columns it does not know, newer versions; the writer against bad calls
 * and failing output.  Byte layouts here are written from
 * tracekit-format(5), and checksums come from zlib rather than the
 * library's own CRC code.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <zlib.h>

#include "helpers.h"
#include "reader_private.h"
#include "tap.h"

static void
small_trace(struct mem_trace *m, int events, uint32_t chunk_bytes)
{
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.chunk_bytes = chunk_bytes;
	struct tk_writer *w = mem_open(m, &o);
	struct tk_thread th = { 0, 7, "main" };
	uint32_t t = tk_writer_thread(w, 0, &th);
	tk_writer_meta(w, "k", "v");
	for (int i = 0; i < events; i++) {
		struct tk_event e = { .kind = i % 3 ? TK_API : TK_RANGE, .track = t,
		                      .ts = 1000 + i * 37, .dur = i % 11,
		                      .name = i % 2 ? "cudaLaunchKernel" : "step" };
		if (e.kind == TK_API)
			e.u.api.correlation = (uint64_t)i;
		if (tk_writer_event(w, &e) != TK_OK)
			abort();
	}
	mem_finish(m, 1);
}

static uint32_t le32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

/* Cut at every byte: exactly the events of the complete chunks before
 * the cut come out, then a "truncated" error; only the whole input
 * ends cleanly. */
TEST(truncation_every_offset)
{
	struct mem_trace m;
	small_trace(&m, 1200, 1024);
	/* walk the chunks by the spec: 36-byte header, then chunks */
	size_t ends[256];
	uint64_t counts[256];
	int nchunks = 0;
	uint64_t total = 0;
	for (size_t pos = 36; pos < m.len; nchunks++) {
		CHECK(memcmp(m.buf + pos, "\x89TKC", 4) == 0);
		uint32_t hs = le32(m.buf + pos + 4), stored = le32(m.buf + pos + 12);
		total += le32(m.buf + pos + 20);
		pos += hs + stored;
		ends[nchunks] = pos;
		counts[nchunks] = total;
	}
	CHECK(nchunks >= 4);
	CHECK_EQ_INT(total, 1200);
	int bad = 0;
	for (size_t cut = 0; cut <= m.len; cut++) {
		uint64_t n, want = 0;
		for (int c = 0; c < nchunks; c++)
			if (ends[c] <= cut)
				want = counts[c];
		int rc = count_events(m.buf, cut, &n);
		int want_rc = cut == m.len ? TK_EOF : cut == 0 ? TK_EFORMAT : TK_ETRUNC;
		/* reading by columns sees the same */
		uint64_t cn;
		int crc = count_columns(m.buf, cut, &cn);
		if (n != want || rc != want_rc || cn != want || crc != want_rc) {
			if (bad++ < 5)
				fprintf(stderr, "# cut %zu: %llu events rc %d, by columns "
				        "%llu rc %d, want %llu rc %d\n",
				        cut, (unsigned long long)n, rc,
				        (unsigned long long)cn, crc,
				        (unsigned long long)want, want_rc);
		}
	}
	CHECK_EQ_INT(bad, 0);
	mem_free(&m);
}

/* The message names the chunk's offset. */
TEST(truncation_message)
{
	struct mem_trace m;
	small_trace(&m, 400, 1024);
	struct tk_reader *r = tk_reader_new();
	const struct tk_event *e;
	CHECK(tk_reader_open_mem(r, m.buf, m.len - 10, "t") == TK_OK);
	int rc;
	while ((rc = tk_reader_next_event(r, &e)) == TK_OK)
		;
	CHECK_EQ_INT(rc, TK_ETRUNC);
	CHECK(strncmp(tk_reader_error(r), "truncated chunk at byte ", 24) == 0);
	/* the error sticks */
	CHECK_EQ_INT(tk_reader_next_event(r, &e), TK_ETRUNC);
	tk_reader_free(r);
	mem_free(&m);
}

/* Any single flipped bit is an error, never a clean end. */
TEST(every_bit_flip_detected)
{
	struct mem_trace m;
	small_trace(&m, 120, 1024);
	int undetected = 0;
	for (size_t i = 0; i < m.len * 8; i++) {
		m.buf[i / 8] ^= (uint8_t)(1u << (i % 8));
		uint64_t n;
		int rc = count_events(m.buf, m.len, &n);
		if (rc >= 0)
			rc = count_columns(m.buf, m.len, &n);
		if (rc >= 0 && undetected++ < 5)
			fprintf(stderr, "# flip of bit %zu not detected\n", i);
		m.buf[i / 8] ^= (uint8_t)(1u << (i % 8));
	}
	CHECK_EQ_INT(undetected, 0);
	mem_free(&m);
}

/* `cat a.tkt b.tkt`: both traces, each with its own definitions. */
TEST(concatenation)
{
	struct mem_trace a, b;
	small_trace(&a, 50, 1024);
	struct tk_writer *w = mem_open(&b, NULL);
	struct tk_process p = { "h", 5, 1, 0, 0, NULL, "" };
	uint32_t pt = tk_writer_process(w, 0, &p);
	struct tk_event e = { .kind = TK_MARK, .track = pt, .ts = 5, .name = "other" };
	tk_writer_event(w, &e);
	tk_writer_meta(w, "k", "second");
	mem_finish(&b, 1);
	size_t len = a.len + b.len;
	uint8_t *buf = malloc(len);
	memcpy(buf, a.buf, a.len);
	memcpy(buf + a.len, b.buf, b.len);
	struct tk_reader *r = tk_reader_new();
	struct tk_record rec;
	CHECK(tk_reader_open_mem(r, buf, len, "cat") == TK_OK);
	int events = 0, scopes = 0, rc;
	const char *last_name = NULL;
	while ((rc = tk_reader_next(r, &rec)) == TK_OK) {
		if (rec.type == TK_REC_SCOPE) {
			scopes++;
			CHECK_EQ_INT(events, 50);
			CHECK(tk_reader_meta_get(r, "k") == NULL); /* definitions reset */
		}
		if (rec.type == TK_REC_EVENT) {
			events++;
			last_name = rec.u.event->name;
			if (events == 51) {
				CHECK_STR(last_name, "other");
				CHECK(rec.u.event->trk->type == TK_TRACK_PROCESS);
			}
		}
	}
	CHECK_EQ_INT(rc, TK_EOF);
	CHECK_EQ_INT(scopes, 1);
	CHECK_EQ_INT(events, 51);
	CHECK_EQ_INT(tk_reader_scope(r), 2);
	CHECK_STR(tk_reader_meta_get(r, "k"), "second");
	tk_reader_free(r);
	free(buf);
	mem_free(&a);
	mem_free(&b);
}

/* A trace cut short, then another one: the cut is reported where the
 * second trace starts, after every complete chunk of the first. */
TEST(concatenation_after_a_cut)
{
	struct mem_trace a, b;
	small_trace(&a, 1200, 1024);
	small_trace(&b, 10, 1024);
	size_t cut = a.len - 60; /* inside the last chunk */
	/* the complete chunks of a, by the spec's framing */
	size_t pos = 36, keep = 36;
	uint64_t want = 0;
	while (pos + 56 <= cut) {
		uint32_t hs = le32(a.buf + pos + 4), stored = le32(a.buf + pos + 12);
		if (pos + hs + stored > cut)
			break;
		want += le32(a.buf + pos + 20);
		pos += hs + stored;
		keep = pos;
	}
	uint8_t *buf = malloc(keep + b.len);
	memcpy(buf, a.buf, keep);
	memcpy(buf + keep, b.buf, b.len);
	struct tk_reader *r = tk_reader_new();
	const struct tk_event *e;
	uint64_t n = 0;
	int rc = tk_reader_open_mem(r, buf, keep + b.len, "cut");
	while (rc == TK_OK && (rc = tk_reader_next_event(r, &e)) == TK_OK)
		n++;
	CHECK_EQ_INT(rc, TK_ETRUNC);
	CHECK_EQ_INT(n, want);
	char msg[128];
	snprintf(msg, sizeof(msg), "truncated at byte %zu (a new trace starts there "
	         "before the end of the previous one)", keep);
	CHECK_STR(tk_reader_error(r), msg);
	tk_reader_free(r);
	free(buf);
	mem_free(&a);
	mem_free(&b);
}

/* ---- hand-made streams ------------------------------------------------------ */

struct bytes {
	uint8_t p[4096];
	size_t n;
};

static void put(struct bytes *b, const void *s, size_t n) { memcpy(b->p + b->n, s, n); b->n += n; }
static void put8(struct bytes *b, unsigned v) { b->p[b->n++] = (uint8_t)v; }
static void put16(struct bytes *b, unsigned v) { put8(b, v & 0xff); put8(b, v >> 8); }
static void put32(struct bytes *b, uint32_t v) { for (int i = 0; i < 4; i++) put8(b, (v >> (8 * i)) & 0xff); }
static void put64(struct bytes *b, uint64_t v) { for (int i = 0; i < 8; i++) put8(b, (unsigned)(v >> (8 * i)) & 0xff); }
static void putv(struct bytes *b, uint64_t v) { while (v >= 0x80) { put8(b, (unsigned)(v & 0x7f) | 0x80); v >>= 7; } put8(b, (unsigned)v); }
static uint64_t zz(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

/* File header per the spec; extra bytes before the CRC if hsize > 36. */
static void
file_header(struct bytes *b, unsigned major, unsigned minor, uint32_t hsize,
            uint64_t incompat)
{
	size_t start = b->n;
	put(b, "\x89TKT\r\n\x1a\n", 8);
	put16(b, major);
	put16(b, minor);
	put32(b, hsize);
	put64(b, incompat);
	put64(b, 0);
	while (b->n - start < hsize - 4)
		put8(b, 0xab);
	put32(b, (uint32_t)crc32(0, b->p + start, (uInt)(hsize - 4)));
}

static void
chunk(struct bytes *b, uint32_t flags, uint32_t nev, const struct bytes *payload)
{
	size_t start = b->n;
	put(b, "\x89TKC", 4);
	put32(b, 56);
	put32(b, flags);
	put32(b, (uint32_t)payload->n);
	put32(b, (uint32_t)payload->n);
	put32(b, nev);
	put64(b, 0);
	put64(b, 0);
	put64(b, (uint64_t)INT64_MIN);
	put32(b, 0);
	uLong crc = crc32(0, b->p + start, 52);
	crc = crc32(crc, payload->p, (uInt)payload->n);
	put32(b, (uint32_t)crc);
	put(b, payload->p, payload->n);
}

/* A numeric column per the spec: width byte, the first value, the base
 * (minimum of the others), then `width` planes of the bytes of the
 * others less the base. */
static void
planes(struct bytes *col, const uint64_t *v, int n)
{
	uint64_t lo = n > 1 ? v[1] : 0, hi = lo;
	for (int i = 2; i < n; i++) {
		if (v[i] < lo) lo = v[i];
		if (v[i] > hi) hi = v[i];
	}
	unsigned w = 0;
	while (w < 8 && (hi - lo) >> (8 * w))
		w++;
	col->n = 0;
	put8(col, w);
	putv(col, v[0]);
	putv(col, lo);
	for (unsigned p = 0; p < w; p++)
		for (int i = 1; i < n; i++)
			put8(col, (unsigned)((v[i] - lo) >> (8 * p)) & 0xff);
}

static void
column(struct bytes *b, unsigned kind, unsigned attr, const struct bytes *data)
{
	putv(b, kind);
	putv(b, attr);
	putv(b, data->n);
	put(b, data->p, data->n);
}

/* A chunk a newer writer could produce: an unknown definition type, an
 * event of an unknown kind, unknown columns. */
static void
future_chunk(struct bytes *out, uint32_t flags)
{
	struct bytes defs = { .n = 0 }, rec = { .n = 0 }, pl = { .n = 0 }, col;
	putv(&rec, 1); put(&rec, "foo", 3);                    /* string 1 */
	putv(&defs, 1); putv(&defs, rec.n); put(&defs, rec.p, rec.n);
	rec.n = 0; put(&rec, "\x01\x02\x03", 3);                 /* unknown def */
	putv(&defs, 99); putv(&defs, rec.n); put(&defs, rec.p, rec.n);
	rec.n = 0; putv(&rec, 1); putv(&rec, 0); putv(&rec, zz(5)); putv(&rec, 1);
	putv(&rec, 12345);                                        /* extra field */
	putv(&defs, 3); putv(&defs, rec.n); put(&defs, rec.p, rec.n); /* thread 1 */
	putv(&pl, defs.n);
	put(&pl, defs.p, defs.n);
	col.n = 0; put8(&col, 200); put8(&col, 5); put8(&col, 5);    /* kinds */
	column(&pl, 0, 1, &col);
	uint64_t tracks[] = { 1, 1, 1 };
	planes(&col, tracks, 3);
	column(&pl, 0, 2, &col);
	uint64_t ts[] = { zz(1000), zz(10), zz(-4) };
	planes(&col, ts, 3);
	column(&pl, 0, 3, &col);
	uint64_t dur[] = { 7, 5, 6 };
	planes(&col, dur, 3);
	column(&pl, 0, 4, &col);
	uint64_t names[] = { 1, 1, 0 };
	planes(&col, names, 3);
	column(&pl, 0, 5, &col);
	uint64_t corr[] = { zz(42), zz(1) };
	planes(&col, corr, 2);
	column(&pl, 5, 1, &col);                   /* kernel correlation */
	col.n = 0; put(&col, "xyz", 3);
	column(&pl, 5, 40, &col);                  /* unknown kernel attribute */
	col.n = 0; put(&col, "\x09\x09", 2);
	column(&pl, 200, 1, &col);                 /* column of the unknown kind */
	col.n = 0; putv(&col, 7); putv(&col, 7); putv(&col, 7);
	column(&pl, 0, 9, &col);                   /* unknown common column */
	chunk(out, flags, 3, &pl);
}

static void
end_chunk(struct bytes *out)
{
	struct bytes pl = { .n = 0 };
	putv(&pl, 0);
	chunk(out, 0x4, 0, &pl);
}

TEST(unknown_records_skipped)
{
	struct bytes b = { .n = 0 };
	file_header(&b, 1, 9, 44, 0);      /* newer minor, longer header */
	future_chunk(&b, 0x10000);         /* unknown compatible flag */
	end_chunk(&b);
	struct tk_reader *r = tk_reader_new();
	const struct tk_event *e;
	CHECK_EQ_INT(tk_reader_open_mem(r, b.p, b.n, "future"), TK_OK);
	unsigned major, minor;
	tk_reader_version(r, &major, &minor);
	CHECK(major == 1 && minor == 9);
	int rc = tk_reader_next_event(r, &e);
	CHECK_EQ_INT(rc, TK_OK);
	if (rc != TK_OK) {
		fprintf(stderr, "# %s\n", tk_reader_error(r));
		tk_reader_free(r);
		return;
	}
	CHECK_EQ_INT(e->kind, TK_KERNEL);
	CHECK_STR(e->name, "foo");
	/* the unknown event came first at 1000; this one is 10 after it */
	CHECK_EQ_INT(e->ts, 1010);
	CHECK_EQ_INT(e->dur, 5);
	CHECK_EQ_INT(e->u.kernel.correlation, 42);
	CHECK(e->trk->type == TK_TRACK_THREAD && e->trk->u.thread.tid == 5);
	CHECK_EQ_INT(tk_reader_next_event(r, &e), TK_OK);
	CHECK_EQ_INT(e->ts, 1006);
	CHECK_EQ_INT(e->dur, 6);
	CHECK_STR(e->name, "");
	CHECK_EQ_INT(e->u.kernel.correlation, 43);
	CHECK_EQ_INT(tk_reader_next_event(r, &e), TK_EOF);
	CHECK_EQ_INT(tk_reader_skipped(r), 1);
	tk_reader_free(r);
}

/* Columns deliver every event, of kinds known or not, with the times
 * and ids the events have. */
TEST(columns_of_unknown_kinds)
{
	struct bytes b = { .n = 0 };
	file_header(&b, 1, 9, 44, 0);
	future_chunk(&b, 0x10000);
	end_chunk(&b);
	struct tk_reader *r = tk_reader_new();
	struct tk_columns c;
	CHECK_EQ_INT(tk_reader_open_mem(r, b.p, b.n, "future"), TK_OK);
	int rc = tk_reader_next_columns(r, &c);
	CHECK_EQ_INT(rc, TK_OK);
	if (rc != TK_OK) {
		fprintf(stderr, "# %s\n", tk_reader_error(r));
		tk_reader_free(r);
		return;
	}
	CHECK_EQ_INT(c.n, 3);
	CHECK_EQ_INT(c.scope, 1);
	CHECK(c.kind[0] == 200 && c.kind[1] == TK_KERNEL && c.kind[2] == TK_KERNEL);
	CHECK(c.ts[0] == 1000 && c.ts[1] == 1010 && c.ts[2] == 1006);
	CHECK(c.dur[0] == 7 && c.dur[1] == 5 && c.dur[2] == 6);
	CHECK_STR(tk_reader_string(r, c.name_id[1]), "foo");
	CHECK_STR(tk_reader_string(r, c.name_id[2]), "");
	const struct tk_track *t = tk_reader_track(r, c.track[1]);
	CHECK(t && t->type == TK_TRACK_THREAD && t->u.thread.tid == 5);
	CHECK_EQ_INT(tk_reader_next_columns(r, &c), TK_EOF);
	CHECK_EQ_INT(tk_reader_skipped(r), 0);
	tk_reader_free(r);
}

/* The merge's batch read stops at a kind it does not know, which
 * tk_reader_next() then skips. */
TEST(take_events_stops_at_unknown_kinds)
{
	struct bytes b = { .n = 0 };
	file_header(&b, 1, 9, 44, 0);
	future_chunk(&b, 0x10000);
	end_chunk(&b);
	struct tk_reader *r = tk_reader_new();
	CHECK_EQ_INT(tk_reader_open_mem(r, b.p, b.n, "future"), TK_OK);
	struct tk_event batch[4];
	int kernels = 0, rc = TK_OK;
	while (rc == TK_OK) {
		uint32_t k = tkp_reader_take_events(r, batch, sizeof(batch[0]), 4);
		for (uint32_t j = 0; j < k; j++)
			kernels += batch[j].kind == TK_KERNEL;
		if (k)
			continue;
		struct tk_record rec;
		rc = tk_reader_next(r, &rec);
		if (rc == TK_OK && rec.type == TK_REC_EVENT)
			kernels += rec.u.event->kind == TK_KERNEL;
	}
	CHECK_EQ_INT(rc, TK_EOF);
	CHECK_EQ_INT(kernels, 2);
	CHECK_EQ_INT(tk_reader_skipped(r), 1);
	tk_reader_free(r);
}

/* The payload of a chunk of two kernels named "k" on thread 1, at 100
 * and 103, up to their kind's columns. */
static void
two_kernels(struct bytes *pl)
{
	struct bytes defs = { .n = 0 }, rec = { .n = 0 }, col = { .n = 0 };
	putv(&rec, 1); put(&rec, "k", 1);                      /* string 1 */
	putv(&defs, 1); putv(&defs, rec.n); put(&defs, rec.p, rec.n);
	rec.n = 0; putv(&rec, 1); putv(&rec, 0); putv(&rec, zz(5)); putv(&rec, 1);
	putv(&defs, 3); putv(&defs, rec.n); put(&defs, rec.p, rec.n); /* thread 1 */
	pl->n = 0;
	putv(pl, defs.n);
	put(pl, defs.p, defs.n);
	put8(&col, TK_KERNEL); put8(&col, TK_KERNEL);
	column(pl, 0, 1, &col);
	uint64_t tracks[] = { 1, 1 }, ts[] = { zz(100), zz(3) }, dur[] = { 2, 2 };
	uint64_t names[] = { 1, 1 };
	planes(&col, tracks, 2);
	column(pl, 0, 2, &col);
	planes(&col, ts, 2);
	column(pl, 0, 3, &col);
	planes(&col, dur, 2);
	column(pl, 0, 4, &col);
	planes(&col, names, 2);
	column(pl, 0, 5, &col);
}

/* Two kernels whose correlation column is one value too long. */
static void
bad_attribute_chunk(struct bytes *out)
{
	struct bytes pl, col;
	two_kernels(&pl);
	uint64_t corr[] = { zz(1), zz(5), zz(9) };
	planes(&col, corr, 3);
	column(&pl, TK_KERNEL, 1, &col);
	chunk(out, 0, 2, &pl);
}

/* Attribute columns are decoded only when events are asked for: then a
 * bad one fails the chunk before any of its events comes out; columns
 * never look at it. */
TEST(bad_attribute_column)
{
	struct bytes b = { .n = 0 };
	file_header(&b, 1, 0, 36, 0);
	bad_attribute_chunk(&b);
	end_chunk(&b);
	struct tk_reader *r = tk_reader_new();
	const struct tk_event *e;
	CHECK_EQ_INT(tk_reader_open_mem(r, b.p, b.n, "bad"), TK_OK);
	CHECK_EQ_INT(tk_reader_next_event(r, &e), TK_ECORRUPT);
	CHECK_STR(tk_reader_error(r), "corrupt chunk at byte 36 (bad column length)");
	tk_reader_free(r);

	r = tk_reader_new();
	struct tk_columns c;
	CHECK_EQ_INT(tk_reader_open_mem(r, b.p, b.n, "bad"), TK_OK);
	CHECK_EQ_INT(tk_reader_next_columns(r, &c), TK_OK);
	CHECK(c.n == 2 && c.ts[0] == 100 && c.ts[1] == 103);
	CHECK_EQ_INT(tk_reader_next_columns(r, &c), TK_EOF);
	tk_reader_free(r);
}

static int open_bytes(const struct bytes *b, char *msg, size_t n);

/* Two kernels whose args are stored as templates by the spec: the
 * template list, each event's template and the numbers as given; with
 * `also_b`, an args column of encoding B as well. */
static void
args_chunk(struct bytes *out, const char *const *templates,
           const uint64_t *ids, const uint64_t *nums, int nnums, int also_b)
{
	struct bytes pl, col = { .n = 0 };
	two_kernels(&pl);
	for (const char *const *t = templates; *t; t++) {
		/* '#' stands for the place byte 0 */
		size_t len = strlen(*t);
		putv(&col, len);
		for (size_t i = 0; i < len; i++)
			put8(&col, (*t)[i] == '#' ? 0 : (unsigned char)(*t)[i]);
	}
	column(&pl, TK_KERNEL, 60, &col);
	planes(&col, ids, 2);
	column(&pl, TK_KERNEL, 61, &col);
	col.n = 0;
	for (int i = 0; i < nnums; i++)
		putv(&col, nums[i]);
	column(&pl, TK_KERNEL, 62, &col);
	if (also_b) {
		col.n = 0;
		putv(&col, 2); put(&col, "{}", 2);
		putv(&col, 0);
		column(&pl, TK_KERNEL, 63, &col);
	}
	chunk(out, TK_CHUNK_ARGS_TEMPLATES, 2, &pl);
}

/* The args of args_chunk()'s two events, or the reader's error. */
static void
read_args(const char *const *templates, const uint64_t *ids,
          const uint64_t *nums, int nnums, int also_b, char *got, size_t size)
{
	struct bytes b = { .n = 0 };
	file_header(&b, 1, 0, 36, 0);
	args_chunk(&b, templates, ids, nums, nnums, also_b);
	end_chunk(&b);
	struct tk_reader *r = tk_reader_new();
	const struct tk_event *e;
	int rc = tk_reader_open_mem(r, b.p, b.n, "args");
	got[0] = 0;
	while (rc == TK_OK && (rc = tk_reader_next_event(r, &e)) == TK_OK)
		snprintf(got + strlen(got), size - strlen(got), "[%.*s]",
		         (int)e->args_len, e->args ? e->args : "");
	if (rc != TK_EOF)
		snprintf(got, size, "%s", tk_reader_error(r));
	tk_reader_free(r);
}

TEST(args_templates_by_the_spec)
{
	char got[512];
	const char *const one[] = { "{\"id\":#,\"n\":#}", NULL };
	const char *const two[] = { "x#", "#y#", NULL };
	uint64_t both[] = { 1, 1 }, first[] = { 1, 0 }, second[] = { 2, 1 };
	uint64_t nums[] = { zz(7), zz(3), zz(1), zz(0) };
	read_args(one, both, nums, 4, 0, got, sizeof(got));
	CHECK_STR(got, "[{\"id\":7,\"n\":3}][{\"id\":8,\"n\":3}]");
	read_args(one, first, nums, 2, 0, got, sizeof(got));
	CHECK_STR(got, "[{\"id\":7,\"n\":3}][]");
	/* places count within each event: the number of "x#" follows the
	 * first of "#y#" */
	uint64_t places[] = { zz(10), zz(5), zz(12) };
	read_args(two, second, places, 3, 0, got, sizeof(got));
	CHECK_STR(got, "[10y5][x22]");

	read_args(one, second, nums, 4, 0, got, sizeof(got));
	CHECK_STR(got, "corrupt chunk at byte 36 (bad args template)");
	read_args(one, both, nums, 3, 0, got, sizeof(got));
	CHECK_STR(got, "corrupt chunk at byte 36 (bad args numbers)");
	uint64_t more[] = { zz(7), zz(3), zz(1), zz(0), zz(1) };
	read_args(one, both, more, 5, 0, got, sizeof(got));
	CHECK_STR(got, "corrupt chunk at byte 36 (long column)");
	uint64_t big[] = { zz(999999999999999999), zz(0), zz(1), zz(0) };
	read_args(one, both, big, 4, 0, got, sizeof(got));
	CHECK_STR(got, "corrupt chunk at byte 36 (args number out of range)");
	uint64_t max[] = { zz(999999999999999999), zz(0), zz(0), zz(0) };
	read_args(one, both, max, 4, 0, got, sizeof(got));
	CHECK_STR(got, "[{\"id\":999999999999999999,\"n\":0}]"
	               "[{\"id\":999999999999999999,\"n\":0}]");
	read_args(one, both, nums, 4, 1, got, sizeof(got));
	CHECK_STR(got, "corrupt chunk at byte 36 (args stored twice)");
}

#define NO_GROUPS_COLUMN 0xffffffffu /* npairs: leave the column out */

/* A GROUPED chunk by the spec: four events on tracks 1, 2, 1, 2 (in
 * time order) of two groups, stored 0, 2 | 1, 3.  `groups` is the
 * GROUPS column's pairs after their count; begin times are predicted
 * per track along the stored order. */
static void
grouped_chunk(struct bytes *out, const uint64_t *groups, unsigned npairs)
{
	struct bytes defs = { .n = 0 }, rec = { .n = 0 }, pl = { .n = 0 }, col;
	putv(&rec, 1); put(&rec, "a", 1);                      /* string 1 */
	putv(&defs, 1); putv(&defs, rec.n); put(&defs, rec.p, rec.n);
	rec.n = 0; putv(&rec, 2); put(&rec, "b", 1);           /* string 2 */
	putv(&defs, 1); putv(&defs, rec.n); put(&defs, rec.p, rec.n);
	for (unsigned t = 1; t <= 2; t++) {                     /* threads 1, 2 */
		rec.n = 0; putv(&rec, t); putv(&rec, 0); putv(&rec, zz(t)); putv(&rec, 0);
		putv(&defs, 3); putv(&defs, rec.n); put(&defs, rec.p, rec.n);
	}
	putv(&pl, defs.n);
	put(&pl, defs.p, defs.n);
	/* events in time order: (track, begin, dur, name, correlation)
	 * 0: 1, 100, 5, a, 10   1: 2, 150, 6, b, 20
	 * 2: 1, 200, 7, a, 11   3: 2, 260, 8, b, 22
	 * stored: 0, 2, 1, 3 */
	col.n = 0; put8(&col, TK_API); put8(&col, TK_API); put8(&col, TK_API); put8(&col, TK_API);
	column(&pl, 0, 1, &col);
	uint64_t tracks[] = { 1, 2, 1, 2 };                     /* time order */
	planes(&col, tracks, 4);
	column(&pl, 0, 2, &col);
	/* stored: 100 absolute; 200 after 100 on track 1; 150 first on
	 * track 2, predicted by the chunk's first begin, 100; 260 after 150 */
	uint64_t ts[] = { zz(100), zz(100), zz(50), zz(110) };
	planes(&col, ts, 4);
	column(&pl, 0, 3, &col);
	uint64_t dur[] = { 5, 7, 6, 8 };
	planes(&col, dur, 4);
	column(&pl, 0, 4, &col);
	uint64_t names[] = { 1, 1, 2, 2 };
	planes(&col, names, 4);
	column(&pl, 0, 5, &col);
	if (npairs != NO_GROUPS_COLUMN) {
		col.n = 0;
		putv(&col, npairs);
		for (unsigned i = 0; i < 2 * npairs; i++)
			putv(&col, groups[i]);
		column(&pl, 0, 6, &col);
	}
	uint64_t corr[] = { zz(10), zz(1), zz(20), zz(2) };    /* D per track */
	planes(&col, corr, 4);
	column(&pl, TK_API, 3, &col);
	chunk(out, 0x8, 4, &pl);
}

static void
grouped_trace(struct bytes *b, const uint64_t *groups, unsigned npairs)
{
	b->n = 0;
	file_header(b, 1, 0, 36, 0);
	grouped_chunk(b, groups, npairs);
	end_chunk(b);
}

/* The reader gives a grouped chunk's events back in time order, one by
 * one and by columns. */
TEST(grouped_chunk_in_time_order)
{
	static const uint64_t groups[] = { 1, 0, 2, 1 };
	static const int64_t ts[] = { 100, 150, 200, 260 }, dur[] = { 5, 6, 7, 8 };
	static const uint64_t corr[] = { 10, 20, 11, 22 };
	static const char *const names[] = { "a", "b", "a", "b" };
	struct bytes b;
	grouped_trace(&b, groups, 2);
	struct tk_reader *r = tk_reader_new();
	const struct tk_event *e;
	CHECK_EQ_INT(tk_reader_open_mem(r, b.p, b.n, "grouped"), TK_OK);
	for (int i = 0; i < 4; i++) {
		int rc = tk_reader_next_event(r, &e);
		CHECK_EQ_INT(rc, TK_OK);
		if (rc != TK_OK) {
			fprintf(stderr, "# %s\n", tk_reader_error(r));
			break;
		}
		CHECK_EQ_INT(e->track, 1 + i % 2);
		CHECK_EQ_INT(e->ts, ts[i]);
		CHECK_EQ_INT(e->dur, dur[i]);
		CHECK_STR(e->name, names[i]);
		CHECK_EQ_INT(e->u.api.correlation, corr[i]);
		CHECK(tk_reader_chunk(r)->flags & TK_CHUNK_GROUPED);
	}
	CHECK_EQ_INT(tk_reader_next_event(r, &e), TK_EOF);
	tk_reader_free(r);

	r = tk_reader_new();
	struct tk_columns c;
	CHECK_EQ_INT(tk_reader_open_mem(r, b.p, b.n, "grouped"), TK_OK);
	CHECK_EQ_INT(tk_reader_next_columns(r, &c), TK_OK);
	CHECK_EQ_INT(c.n, 4);
	for (size_t i = 0; i < c.n && i < 4; i++) {
		CHECK_EQ_INT(c.track[i], 1 + i % 2);
		CHECK_EQ_INT(c.ts[i], ts[i]);
		CHECK_EQ_INT(c.dur[i], dur[i]);
		CHECK_STR(tk_reader_string(r, c.name_id[i]), names[i]);
	}
	CHECK_EQ_INT(tk_reader_next_columns(r, &c), TK_EOF);
	tk_reader_free(r);
}

/* Bad GROUPS columns: each one error, naming what is wrong. */
TEST(bad_groups_column)
{
	static const struct {
		uint64_t pairs[6];
		unsigned n;
		const char *why;
	} cases[] = {
		{ { 1, 0 }, 1, "track missing from groups" },
		{ { 1, 0, 2, 2 }, 2, "bad groups column" },            /* group >= m */
		{ { 1, 0, 1, 1 }, 2, "bad groups column" },            /* listed twice */
		{ { 1, 1, 2, 0 }, 2, "first event not stored first" },
		{ { 1, 0, 2, 1, 3, 0 }, 3, NULL }, /* a track with no event: allowed */
	};
	char msg[512], want[128];
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct bytes b;
		grouped_trace(&b, cases[k].pairs, cases[k].n);
		int rc = open_bytes(&b, msg, sizeof(msg));
		if (!cases[k].why) {
			CHECK_EQ_INT(rc, TK_EOF);
			continue;
		}
		snprintf(want, sizeof(want), "corrupt chunk at byte 36 (%s)", cases[k].why);
		CHECK_EQ_INT(rc, TK_ECORRUPT);
		CHECK_STR(msg, want);
	}
	/* an empty list */
	struct bytes b;
	grouped_trace(&b, NULL, 0);
	CHECK_EQ_INT(open_bytes(&b, msg, sizeof(msg)), TK_ECORRUPT);
	CHECK_STR(msg, "corrupt chunk at byte 36 (bad groups column)");
	/* none at all (found by fuzzing: no pointer arithmetic on it) */
	grouped_trace(&b, NULL, NO_GROUPS_COLUMN);
	CHECK_EQ_INT(open_bytes(&b, msg, sizeof(msg)), TK_ECORRUPT);
	CHECK_STR(msg, "corrupt chunk at byte 36 (bad groups column)");
}

static int
open_bytes(const struct bytes *b, char *msg, size_t n)
{
	struct tk_reader *r = tk_reader_new();
	const struct tk_event *e;
	int rc = tk_reader_open_mem(r, b->p, b->n, "x");
	while (rc == TK_OK)
		rc = tk_reader_next_event(r, &e);
	snprintf(msg, n, "%s", tk_reader_error(r));
	tk_reader_free(r);
	return rc;
}

TEST(versions_and_features)
{
	char msg[512];
	struct bytes b = { .n = 0 };
	file_header(&b, 2, 0, 36, 0);
	CHECK_EQ_INT(open_bytes(&b, msg, sizeof(msg)), TK_EVERSION);
	CHECK_STR(msg, "unsupported format version 2.0 at byte 0 (this reader reads 1.x)");

	b.n = 0;
	file_header(&b, 1, 0, 36, 1);
	CHECK_EQ_INT(open_bytes(&b, msg, sizeof(msg)), TK_EVERSION);

	b.n = 0;
	file_header(&b, 1, 0, 36, 0);
	future_chunk(&b, 0x20); /* unknown incompatible chunk flag */
	CHECK_EQ_INT(open_bytes(&b, msg, sizeof(msg)), TK_EVERSION);
	CHECK(strstr(msg, "at byte 36") != NULL);

	b.n = 0;
	file_header(&b, 1, 0, 36, 0);
	end_chunk(&b);
	future_chunk(&b, 0);
	CHECK_EQ_INT(open_bytes(&b, msg, sizeof(msg)), TK_ECORRUPT);

	b.n = 0;
	file_header(&b, 1, 0, 36, 0);
	CHECK_EQ_INT(open_bytes(&b, msg, sizeof(msg)), TK_ETRUNC); /* no end */
	end_chunk(&b);
	CHECK_EQ_INT(open_bytes(&b, msg, sizeof(msg)), TK_EOF);    /* empty trace */

	b.n = 0;
	put(&b, "{\"traceEvents\":[]}", 18);
	CHECK_EQ_INT(open_bytes(&b, msg, sizeof(msg)), TK_EFORMAT);
	CHECK_STR(msg, "not a tracekit trace (bad magic at byte 0)");

	b.n = 0;
	CHECK_EQ_INT(open_bytes(&b, msg, sizeof(msg)), TK_EFORMAT);
	CHECK_STR(msg, "empty input (not a trace)");
}

/* ---- the writer's contract ---------------------------------------------------- */

TEST(writer_rejects_bad_events)
{
	struct mem_trace m;
	struct tk_writer *w = mem_open(&m, NULL);
	struct tk_thread th = { 0, 1, "" };
	uint32_t t = tk_writer_thread(w, 0, &th);
	struct tk_event e = { .kind = TK_RANGE, .track = t, .ts = 1, .dur = -1 };
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_EINVAL);
	e.dur = 5;
	e.ts = INT64_MAX - 2;
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_EINVAL);
	tk_writer_free(w);
	m.w = NULL;
	fclose(m.f);

	w = mem_open(&m, NULL);
	e = (struct tk_event){ .kind = TK_RANGE, .track = 3, .ts = 1 };
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_EINVAL);
	CHECK(strstr(tk_writer_error(w), "undefined track") != NULL);
	tk_writer_free(w);
	fclose(m.f);

	w = mem_open(&m, NULL);
	e = (struct tk_event){ .kind = 99, .ts = 1 };
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_EINVAL);
	tk_writer_free(w);
	fclose(m.f);

	/* a name too long to intern: refused, and said so */
	w = mem_open(&m, NULL);
	th = (struct tk_thread){ 0, 1, "" };
	t = tk_writer_thread(w, 0, &th);
	size_t huge = 40u << 20;
	char *big = malloc(huge + 1);
	memset(big, 'k', huge);
	big[huge] = 0;
	e = (struct tk_event){ .kind = TK_RANGE, .track = t, .ts = 1, .name = big };
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_EINVAL);
	CHECK(strstr(tk_writer_error(w), "too long") != NULL);
	e = (struct tk_event){ .kind = TK_KERNEL, .track = t, .ts = 1, .name = "k" };
	e.u.kernel.mangled = big;
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_EINVAL);
	e.u.kernel.mangled = "";
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_OK); /* still usable */
	CHECK_EQ_INT(tk_writer_events(w), 1);
	free(big);
	tk_writer_free(w);
	fclose(m.f);

	w = mem_open(&m, NULL);
	struct tk_thread bad = { 0, 1, "" };
	CHECK(tk_writer_thread(w, 5, &bad) == 0); /* redefine a missing one */
	tk_writer_free(w);
	fclose(m.f);

	tk_writer_free(NULL);
	tk_reader_free(NULL);
}

TEST(writer_reports_output_errors)
{
	int fd = open("/dev/full", O_WRONLY);
	CHECK(fd >= 0);
	struct tk_writer *w = tk_writer_new();
	if (write(fd, "x", 1) < 0) { /* some sandboxes' /dev/full accepts writes */
		CHECK_EQ_INT(tk_writer_open_fd(w, fd, "/dev/full", NULL), TK_EIO);
		CHECK_EQ_INT(tk_writer_errno(w), ENOSPC);
	} else {
		fprintf(stderr, "# /dev/full accepts writes here: ENOSPC not tested\n");
	}
	close(fd);

	int p[2];
	CHECK(pipe(p) == 0);
	signal(SIGPIPE, SIG_IGN);
	CHECK_EQ_INT(tk_writer_open_fd(w, p[1], "pipe", NULL), TK_OK);
	close(p[0]);
	struct tk_thread th = { 0, 1, "" };
	uint32_t t = tk_writer_thread(w, 0, &th);
	struct tk_event e = { .kind = TK_MARK, .track = t, .ts = 1, .name = "x" };
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_OK);
	CHECK_EQ_INT(tk_writer_flush(w), TK_EIO);
	CHECK_EQ_INT(tk_writer_errno(w), EPIPE);
	close(p[1]);
	tk_writer_free(w);
}

/* A threaded writer puts chunks on its own thread: a failed write is
 * told at a later call, and at the latest by close. */
TEST(threaded_writer_reports_output_errors)
{
	int p[2];
	CHECK(pipe(p) == 0);
	signal(SIGPIPE, SIG_IGN);
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.threads = 1;
	o.chunk_bytes = 1024;
	struct tk_writer *w = tk_writer_new();
	CHECK_EQ_INT(tk_writer_open_fd(w, p[1], "pipe", &o), TK_OK);
	close(p[0]); /* the reader leaves after the header */
	struct tk_thread th = { 0, 1, "" };
	uint32_t t = tk_writer_thread(w, 0, &th);
	int rc = TK_OK;
	for (int i = 0; i < 10000 && rc == TK_OK; i++) {
		struct tk_event e = { .kind = TK_MARK, .track = t, .ts = i, .name = "x" };
		rc = tk_writer_event(w, &e);
	}
	CHECK_EQ_INT(rc, TK_EIO); /* many chunks: an event call hears of it */
	CHECK_EQ_INT(tk_writer_errno(w), EPIPE);
	CHECK_EQ_INT(tk_writer_close(w), TK_EIO);
	close(p[1]);

	/* one chunk only: close reports it */
	CHECK(pipe(p) == 0);
	CHECK_EQ_INT(tk_writer_open_fd(w, p[1], "pipe", &o), TK_OK);
	close(p[0]);
	t = tk_writer_thread(w, 0, &th);
	struct tk_event e = { .kind = TK_MARK, .track = t, .ts = 1, .name = "x" };
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_OK);
	CHECK_EQ_INT(tk_writer_close(w), TK_EIO);
	CHECK_EQ_INT(tk_writer_errno(w), EPIPE);
	close(p[1]);
	tk_writer_free(w);
}

TEST(reader_misuse)
{
	struct tk_reader *r = tk_reader_new();
	struct tk_record rec;
	CHECK_EQ_INT(tk_reader_next(r, &rec), TK_EINVAL);
	CHECK_EQ_INT(tk_reader_open_path(r, "/nonexistent/trace.tkt"), TK_EIO);
	CHECK_EQ_INT(tk_reader_errno(r), ENOENT);
	CHECK_STR(tk_reader_error(r), "No such file or directory");
	CHECK_EQ_INT(tk_reader_open_path(r, "/"), TK_EIO);
	CHECK_EQ_INT(tk_reader_errno(r), EISDIR);
	CHECK(tk_reader_track(r, 1) == NULL);
	CHECK_STR(tk_reader_string(r, 0), "");
	tk_reader_free(r);
	CHECK_STR(tk_strerror(TK_ETRUNC), "truncated trace");
	CHECK_STR(tk_kind_name(TK_KERNEL), "kernel");
	CHECK(tk_kind_name(99) == NULL);
	CHECK_EQ_INT(tk_kind_from_name("memcpy"), TK_MEMCPY);
	CHECK_STR(tk_copy_kind_name(TK_COPY_DTOD), "DtoD");
	CHECK_STR(tk_copy_kind_name(1000), "Unknown");
}

int
main(void)
{
	RUN(truncation_every_offset);
	RUN(truncation_message);
	RUN(every_bit_flip_detected);
	RUN(concatenation);
	RUN(threaded_writer_reports_output_errors);
	RUN(concatenation_after_a_cut);
	RUN(unknown_records_skipped);
	RUN(columns_of_unknown_kinds);
	RUN(take_events_stops_at_unknown_kinds);
	RUN(bad_attribute_column);
	RUN(args_templates_by_the_spec);
	RUN(grouped_chunk_in_time_order);
	RUN(bad_groups_column);
	RUN(versions_and_features);
	RUN(writer_rejects_bad_events);
	RUN(writer_reports_output_errors);
	RUN(reader_misuse);
	return tap_done();
}
