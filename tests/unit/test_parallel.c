/* SPDX-License-Identifier: MIT */
/*
 * The reader's worker threads (tk_reader_options.threads) against the
 * reader on one thread: the same events with every field, the same
 * final code, message and byte offset on damaged input (flipped bytes,
 * truncation anywhere, garbage, a header where a chunk should be), from
 * memory, a descriptor and a range; a reader that goes on in a child
 * after fork(); no_args; no threads for an input under 1 MiB unless
 * asked for.  The reference is the one-thread reader, whose
 * own tests (test_robust, test_roundtrip) check it against the writer.
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>

#include <zlib.h>

#include "helpers.h"
#include "tap.h"

/* A trace of many chunks (over 1 MiB for 100 000 events: the reader
 * starts threads by default only for such inputs): args of random hex,
 * so that they do not shrink. */
static void
big_trace(struct mem_trace *m, int events)
{
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.chunk_bytes = 64 * 1024;
	o.level = 1;
	struct tk_writer *w = mem_open(m, &o);
	struct tk_thread th = { 0, 7, "main" };
	uint32_t t = tk_writer_thread(w, 0, &th);
	char args[64];
	for (int i = 0; i < events; i++) {
		struct tk_event e = { .kind = i % 3 ? TK_API : TK_RANGE, .track = t,
		                      .ts = 1000 + i * 37, .dur = i % 11,
		                      .name = i % 2 ? "cudaLaunchKernel" : "step" };
		if (e.kind == TK_API)
			e.u.api.correlation = (uint64_t)i;
		int n = snprintf(args, sizeof(args), "{\"x\": \"%016llx\"}",
		                 (unsigned long long)rnd());
		e.args = args;
		e.args_len = (uint32_t)n;
		if (tk_writer_event(w, &e) != TK_OK)
			abort();
	}
	mem_finish(m, 1);
}

/* What a reading produced: events, a hash of all their fields, the
 * final code, message and offset. */
struct outcome {
	uint64_t events, hash;
	int rc;
	char msg[512];
	uint64_t offset;
};

static uint64_t
mix(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static void
take_event(struct outcome *o, const struct tk_event *e, int with_args)
{
	uint64_t h = o->hash;
	h = mix(h, &e->kind, sizeof(e->kind));
	h = mix(h, &e->ts, sizeof(e->ts));
	h = mix(h, &e->dur, sizeof(e->dur));
	h = mix(h, e->name, strlen(e->name));
	h = mix(h, &e->trk->id, sizeof(e->trk->id));
	h = mix(h, &e->trk->type, sizeof(e->trk->type));
	/* the union with its strings by their bytes (two readers keep
	 * them at different addresses) */
	struct tk_event copy = *e;
	const char **str = NULL;
	if (e->kind == TK_KERNEL)
		str = &copy.u.kernel.mangled;
	else if (e->kind == TK_RANGE || e->kind == TK_ASYNC_RANGE || e->kind == TK_MARK)
		str = &copy.u.range.domain;
	if (str) {
		h = mix(h, *str, strlen(*str) + 1);
		*str = NULL;
	}
	h = mix(h, &copy.u, sizeof(copy.u));
	if (with_args) {
		h = mix(h, &e->args_len, sizeof(e->args_len));
		if (e->args_len)
			h = mix(h, e->args, e->args_len);
	}
	o->hash = h;
	o->events++;
}

/* BY_MIXED: the first chunks by columns, then by event (the workers
 * decode no attributes until events are asked for: the reading thread
 * then decodes those of the chunks already read ahead) */
enum how { BY_EVENT, BY_COLUMNS, BY_MIXED };
#define MIXED_COLUMN_CALLS 5

/* Read until the end or an error with `threads`; `rd` already open. */
static void
drain(struct tk_reader *r, int rc, enum how how, int with_args,
      struct outcome *o)
{
	const struct tk_event *e;
	struct tk_columns c;
	int column_calls = 0;
	while (rc == TK_OK) {
		if (how == BY_EVENT ||
		    (how == BY_MIXED && column_calls++ >= MIXED_COLUMN_CALLS)) {
			if ((rc = tk_reader_next_event(r, &e)) == TK_OK)
				take_event(o, e, with_args);
		} else if ((rc = tk_reader_next_columns(r, &c)) == TK_OK) {
			o->hash = mix(o->hash, c.ts, c.n * sizeof(*c.ts));
			o->hash = mix(o->hash, c.dur, c.n * sizeof(*c.dur));
			o->hash = mix(o->hash, c.kind, c.n);
			o->events += c.n;
		}
	}
	o->rc = rc;
	snprintf(o->msg, sizeof(o->msg), "%s", tk_reader_error(r));
	o->offset = tk_reader_offset(r);
}

enum input { FROM_MEM, FROM_FD, FROM_RANGE };

/* A descriptor of an unlinked file holding buf, at its start. */
static int
file_of(const uint8_t *buf, size_t len)
{
	FILE *f = tmpfile();
	if (!f || (len && fwrite(buf, 1, len, f) != len) || fflush(f))
		abort();
	int fd = dup(fileno(f));
	fclose(f);
	if (fd < 0)
		abort();
	lseek(fd, 0, SEEK_SET);
	return fd;
}

static struct outcome
read_with(const uint8_t *buf, size_t len, int threads, enum input in,
          enum how how, int no_args)
{
	struct outcome o = { 0, 14695981039346656037ull, 0, "", 0 };
	struct tk_reader *r = tk_reader_new();
	struct tk_reader_options opt = TK_READER_OPTIONS_INIT;
	opt.threads = threads;
	opt.no_args = no_args;
	if (!r || tk_reader_set_options(r, &opt) != TK_OK)
		abort();
	int rc, fd = -1;
	if (in == FROM_MEM) {
		rc = tk_reader_open_mem(r, buf, len, "mem");
	} else {
		fd = file_of(buf, len);
		rc = in == FROM_FD ? tk_reader_open_fd(r, fd, "mem")
		                   : tk_reader_open_range(r, fd, 0, len, "mem");
	}
	drain(r, rc, how, !no_args, &o);
	tk_reader_free(r);
	if (fd >= 0)
		close(fd);
	return o;
}

static int
same(const struct outcome *a, const struct outcome *b)
{
	int ok = a->events == b->events && a->hash == b->hash && a->rc == b->rc &&
	         strcmp(a->msg, b->msg) == 0 && a->offset == b->offset;
	if (!ok)
		fprintf(stderr, "# %llu events rc %d \"%s\" @%llu vs %llu events rc %d "
		        "\"%s\" @%llu\n", (unsigned long long)a->events, a->rc, a->msg,
		        (unsigned long long)a->offset, (unsigned long long)b->events,
		        b->rc, b->msg, (unsigned long long)b->offset);
	return ok;
}

static struct mem_trace big;

/* Every way in, every thread count: what one thread reads. */
TEST(threads_read_what_one_thread_reads)
{
	CHECK(big.len > (1u << 20));
	for (int in = FROM_MEM; in <= FROM_RANGE; in++)
		for (int how = BY_EVENT; how <= BY_MIXED; how++) {
			struct outcome one = read_with(big.buf, big.len, 1, in, how, 0);
			CHECK_EQ_INT(one.rc, TK_EOF);
			CHECK_EQ_INT(one.events, 100000);
			for (int t = 2; t <= 5; t += 3) {
				struct outcome many = read_with(big.buf, big.len, t, in, how, 0);
				CHECK(same(&one, &many));
			}
		}
}

/* The chunk offsets of the big trace, from its scan. */
static size_t
chunk_offsets(uint64_t *at, size_t max)
{
	FILE *f = tmpfile();
	if (!f || fwrite(big.buf, 1, big.len, f) != big.len || fflush(f))
		abort();
	struct tk_scan *s;
	if (tk_scan_fd(fileno(f), &s) != TK_OK)
		abort();
	size_t n = s->nchunks < max ? s->nchunks : max;
	for (size_t i = 0; i < n; i++)
		at[i] = s->chunks[i].offset;
	tk_scan_free(s);
	fclose(f);
	return n;
}

static void
check_damaged(const uint8_t *buf, size_t len, const char *what)
{
	for (int in = FROM_MEM; in <= FROM_RANGE; in++) {
		struct outcome one = read_with(buf, len, 1, in, BY_EVENT, 0);
		struct outcome many = read_with(buf, len, 3, in, BY_EVENT, 0);
		if (!same(&one, &many))
			fprintf(stderr, "# damage: %s (input %d)\n", what, in);
		CHECK(same(&one, &many));
		CHECK(one.rc != TK_EOF || strcmp(what, "clean") == 0);
	}
}

/* Flipped bytes, cuts and garbage at many places: the same events
 * before the damage, the same error at the same byte. */
TEST(threads_report_damage_as_one_thread)
{
	uint64_t at[512];
	size_t n = chunk_offsets(at, 512);
	CHECK(n > 10);
	uint8_t *copy = malloc(big.len + 64);
	size_t picks[] = { 1, n / 2, n - 1 };
	for (size_t p = 0; p < sizeof(picks) / sizeof(*picks); p++) {
		uint64_t c = at[picks[p]];
		/* a byte of the payload: checksum mismatch */
		memcpy(copy, big.buf, big.len);
		copy[c + 70] ^= 0x40;
		check_damaged(copy, big.len, "payload byte");
		/* a byte of the header's sizes */
		memcpy(copy, big.buf, big.len);
		copy[c + 9] ^= 0x7f;
		check_damaged(copy, big.len, "header byte");
		/* the magic */
		memcpy(copy, big.buf, big.len);
		copy[c] ^= 1;
		check_damaged(copy, big.len, "magic");
		/* cut in the header, in the payload, at the chunk's start */
		check_damaged(big.buf, c + 5, "cut in header");
		check_damaged(big.buf, c + 100, "cut in payload");
		check_damaged(big.buf, c, "cut at chunk");
		/* a second header where a chunk is due */
		memcpy(copy, big.buf, big.len);
		memcpy(copy + c, big.buf, 64);
		check_damaged(copy, big.len, "header for chunk");
	}
	/* garbage after the end */
	memcpy(copy, big.buf, big.len);
	memset(copy + big.len, 0xa5, 64);
	check_damaged(copy, big.len + 64, "garbage after end");
	/* two traces back to back: read through, as one thread does */
	uint8_t *two = malloc(2 * big.len);
	memcpy(two, big.buf, big.len);
	memcpy(two + big.len, big.buf, big.len);
	struct outcome one = read_with(two, 2 * big.len, 1, FROM_FD, BY_EVENT, 0);
	struct outcome many = read_with(two, 2 * big.len, 4, FROM_FD, BY_EVENT, 0);
	CHECK_EQ_INT(one.events, 200000);
	CHECK(same(&one, &many));
	free(two);
	free(copy);
}

/* A trace whose chunks depend on the definitions of earlier ones, as
 * the workers' decode must check (reader.c, struct unchecked): two
 * processes in its first half (grouped chunks), one in the second (a
 * track out of bounds is not also missing from a GROUPS column), track
 * ids of two bytes, GPU streams and threads defined as the
 * trace goes on (a stream's begin times are predicted from the previous
 * end), kernels whose mangled names and launch configurations are new
 * strings and configurations now and then, memcpys, ranges of a domain,
 * args on some events.  Small chunks, so that there are many. */
static void
rich_trace(struct mem_trace *m, int events)
{
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.chunk_bytes = 8 * 1024;
	o.level = 1;
	struct tk_writer *w = mem_open(m, &o);
	uint32_t procs[2], tracks[64], track_proc[64], many[300];
	int ntracks = 0;
	for (int p = 0; p < 2; p++) {
		struct tk_process pr = { "host", 100 + p, 1, 0, 0, NULL, "" };
		procs[p] = tk_writer_process(w, 0, &pr);
	}
	char text[64];
	/* threads enough for ids of two bytes, defined at the start */
	for (int t = 0; t < 300; t++) {
		struct tk_thread th = { procs[0], 5000 + t, "worker" };
		many[t] = tk_writer_thread(w, 0, &th);
	}
	for (int i = 0; i < events; i++) {
		/* a new track every 1500 events, a stream one time in two */
		if (i % 1500 == 0 && ntracks < 64) {
			uint32_t proc = procs[ntracks % 4 < 2 ? 0 : 1];
			track_proc[ntracks] = proc;
			snprintf(text, sizeof(text), "track%d", ntracks);
			if (ntracks % 2) {
				struct tk_stream st = { proc, 0, 1, (uint64_t)ntracks, "" };
				st.name = text;
				tracks[ntracks] = tk_writer_stream(w, 0, &st);
			} else {
				struct tk_thread th = { proc, 1000 + ntracks, "" };
				th.name = text;
				tracks[ntracks] = tk_writer_thread(w, 0, &th);
			}
			ntracks++;
		}
		uint32_t t = many[rnd_below(300)];
		if (rnd_below(2)) {
			uint32_t k = (uint32_t)rnd_below((uint64_t)ntracks);
			if (i < events / 2 || track_proc[k] == procs[0])
				t = tracks[k];
		}
		struct tk_event e = { .track = t, .ts = 1000 + i * 50,
		                      .dur = (int64_t)rnd_below(80) };
		snprintf(text, sizeof(text), "op%d", (int)rnd_below((uint64_t)(i / 200 + 2)));
		e.name = text;
		char mangled[64];
		switch (rnd_below(4)) {
		case 0:
			e.kind = TK_KERNEL;
			e.u.kernel.correlation = (uint64_t)i;
			e.u.kernel.grid[0] = 1 + (uint32_t)rnd_below((uint64_t)(i / 500 + 1));
			e.u.kernel.block[0] = 128;
			e.u.kernel.registers = 32;
			snprintf(mangled, sizeof(mangled), "_Z%dk", (int)rnd_below((uint64_t)(i / 300 + 1)));
			e.u.kernel.mangled = rnd_below(3) ? mangled : "";
			break;
		case 1:
			e.kind = TK_MEMCPY;
			e.u.memcpy.bytes = rnd_below(1u << 20);
			e.u.memcpy.copy_kind = 1;
			break;
		case 2:
			e.kind = TK_RANGE;
			snprintf(mangled, sizeof(mangled), "dom%d", (int)rnd_below(5));
			e.u.range.domain = mangled;
			break;
		default:
			e.kind = TK_API;
			e.u.api.correlation = (uint64_t)i;
			break;
		}
		if (i % 5 == 0) {
			snprintf(text + 32, 32, "{\"i\": %d}", i);
			e.args = text + 32;
			e.args_len = (uint32_t)strlen(text + 32);
		}
		if (tk_writer_event(w, &e) != TK_OK)
			abort();
	}
	mem_finish(m, 1);
}

static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static void set32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }

/* The inflated payload of the chunk at `at` (malloc'd), its size in *raw. */
static uint8_t *
inflate_chunk(const uint8_t *buf, size_t at, uLongf *raw)
{
	uint32_t hsize = get32(buf + at + 4), stored = get32(buf + at + 12);
	*raw = get32(buf + at + 16);
	uint8_t *payload = malloc(*raw);
	if (!payload || uncompress(payload, raw, buf + at + hsize, stored) != Z_OK)
		abort();
	return payload;
}

static uint64_t
varint(const uint8_t **p)
{
	uint64_t v = 0;
	for (unsigned sh = 0; sh < 64; sh += 7) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80))
			break;
	}
	return v;
}

/* Damage to do to a payload: a bit of a byte of the definitions, and
 * of each column a bit of its head (width, first value and base, where
 * a bound is checked) and the high bit of a byte of its values (an id
 * 128 or 32768 higher: beyond its bound).  Returns
 * how many, at most max. */
static size_t
damage_places(const uint8_t *pl, size_t raw, size_t *pos, uint8_t *x, size_t max)
{
	const uint8_t *p = pl, *end = pl + raw;
	size_t n = 0;
	uint64_t defs = varint(&p);
	for (int i = 0; i < 8 && n < max && defs; i++) {
		x[n] = (uint8_t)(1u << rnd_below(8));
		pos[n++] = (size_t)(p - pl) + rnd_below(defs);
	}
	p += defs;
	while (p < end && n + 3 <= max) {
		varint(&p); /* kind */
		varint(&p); /* attribute */
		uint64_t len = varint(&p);
		size_t start = (size_t)(p - pl);
		if (len) {
			x[n] = (uint8_t)(1u << (4 + rnd_below(3)));
			pos[n++] = start;
			x[n] = (uint8_t)(1u << (4 + rnd_below(3)));
			pos[n++] = start + (len > 1 ? 1 + rnd_below(len < 4 ? len - 1 : 3) : 0);
			/* in the last half: the top plane of a width-2 column */
			x[n] = 0x80;
			pos[n++] = start + len - 1 - rnd_below((len + 1) / 2);
		}
		p += len;
	}
	return n;
}

/* The trace in buf with its chunk at `at` rewritten: its payload with
 * byte `pos` XORed with x, deflated again, the sizes and checksum made
 * right, so that the damage reaches the decoders.  Into *out (malloc'd);
 * 0 if pos is past the payload. */
static int
damage_payload(const uint8_t *buf, size_t len, size_t at, size_t pos,
               uint8_t x, uint8_t **out, size_t *out_len)
{
	uint32_t hsize = get32(buf + at + 4), stored = get32(buf + at + 12);
	uLongf raw;
	uint8_t *payload = inflate_chunk(buf, at, &raw);
	if (pos >= raw) {
		free(payload);
		return 0;
	}
	payload[pos] ^= x;
	uLongf zlen = compressBound(raw);
	*out = malloc(len + zlen);
	if (!*out)
		abort();
	memcpy(*out, buf, at + hsize);
	if (compress2(*out + at + hsize, &zlen, payload, raw, 1) != Z_OK)
		abort();
	free(payload);
	uint8_t *h = *out + at;
	set32(h + 12, (uint32_t)zlen);
	uLong crc = crc32(0, h, hsize - 4);
	set32(h + hsize - 4, (uint32_t)crc32(crc, h + hsize, (uInt)zlen));
	size_t rest = at + hsize + stored;
	memcpy(*out + at + hsize + zlen, buf + rest, len - rest);
	*out_len = at + hsize + zlen + (len - rest);
	return 1;
}

/* Damage behind a good checksum, in the definitions and in the columns
 * of chunks at the start, the middle and the end: what the workers
 * decode is checked against the definitions as one thread checks it,
 * and redone where they differ, so that the events, the error and its
 * offset are one thread's, by event and by columns. */
TEST(threads_decode_damaged_columns_as_one_thread)
{
	struct mem_trace rich = { 0 };
	rich_trace(&rich, 12000);
	uint64_t at[512];
	size_t n = 0;
	for (size_t off = 0; off + 8 <= rich.len && n < 512;) {
		if (memcmp(rich.buf + off, "\x89TKC", 4) == 0) {
			at[n++] = off;
			off += get32(rich.buf + off + 4) + get32(rich.buf + off + 12);
		} else {
			off += get32(rich.buf + off + 8 + 4); /* the file header */
		}
	}
	CHECK(n > 20);
	struct outcome clean1 = read_with(rich.buf, rich.len, 1, FROM_MEM, BY_EVENT, 0);
	struct outcome clean3 = read_with(rich.buf, rich.len, 3, FROM_MEM, BY_EVENT, 0);
	CHECK_EQ_INT(clean1.rc, TK_EOF);
	CHECK_EQ_INT(clean1.events, 12000);
	CHECK(same(&clean1, &clean3));
	size_t picks[] = { 1, 3, n / 2 + 2, n - 2 };
	int damaged = 0, tried = 0;
	for (size_t p = 0; p < sizeof(picks) / sizeof(*picks); p++) {
		uLongf raw;
		uint8_t *payload = inflate_chunk(rich.buf, at[picks[p]], &raw);
		size_t places[128];
		uint8_t xors[128];
		size_t nplaces = damage_places(payload, raw, places, xors, 128);
		free(payload);
		for (size_t k = 0; k < nplaces; k++) {
			size_t pos = places[k];
			uint8_t x = xors[k];
			uint8_t *bad;
			size_t bad_len;
			if (!damage_payload(rich.buf, rich.len, at[picks[p]], pos, x, &bad, &bad_len))
				continue;
			for (int how = BY_EVENT; how <= BY_COLUMNS; how++) {
				struct outcome one = read_with(bad, bad_len, 1, FROM_MEM, how, 0);
				struct outcome many = read_with(bad, bad_len, 3, FROM_MEM, how, 0);
				if (!same(&one, &many))
					fprintf(stderr, "# chunk %zu byte %zu ^%u how %d\n",
					        picks[p], pos, x, how);
				CHECK(same(&one, &many));
				damaged += how == BY_EVENT && one.rc != TK_EOF;
			}
			tried++;
			free(bad);
		}
	}
	/* most damage is found (some bytes, in args or a time, are only
	 * other values) */
	CHECK(tried > 100);
	CHECK(damaged > tried / 4);
	mem_free(&rich);
}

/* no_args: args NULL, every other field as with args. */
TEST(no_args_skips_args_only)
{
	struct outcome with = read_with(big.buf, big.len, 1, FROM_MEM, BY_EVENT, 0);
	struct outcome without = { 0, 14695981039346656037ull, 0, "", 0 };
	struct tk_reader *r = tk_reader_new();
	struct tk_reader_options opt = { .threads = 2, .no_args = 1 };
	CHECK_EQ_INT(tk_reader_set_options(r, &opt), TK_OK);
	int rc = tk_reader_open_mem(r, big.buf, big.len, "mem");
	const struct tk_event *e;
	uint64_t with_args = 0;
	struct outcome ref = { 0, 14695981039346656037ull, 0, "", 0 };
	while (rc == TK_OK && (rc = tk_reader_next_event(r, &e)) == TK_OK) {
		with_args += e->args != NULL || e->args_len != 0;
		take_event(&without, e, 0);
	}
	tk_reader_free(r);
	CHECK_EQ_INT(rc, TK_EOF);
	CHECK_EQ_INT(with_args, 0);
	CHECK_EQ_INT(without.events, with.events);
	/* the same fields, args aside, as the reader with args */
	r = tk_reader_new();
	rc = tk_reader_open_mem(r, big.buf, big.len, "mem");
	while (rc == TK_OK && (rc = tk_reader_next_event(r, &e)) == TK_OK) {
		CHECK(e->args != NULL);
		take_event(&ref, e, 0);
	}
	tk_reader_free(r);
	CHECK(ref.hash == without.hash);
}

/* no_args set or cleared while a trace is read: a chunk keeps the
 * setting its first event was decoded with, the next chunk takes the
 * new one, and args come back whole once they are wanted again (the
 * reader grows their arrays then: under ASan an overrun fails).  With
 * threads, chunks decoded ahead with the setting of their time are
 * decoded again where it changed. */
static void
no_args_switched(int threads)
{
	struct tk_reader *ref = tk_reader_new(), *r = tk_reader_new();
	int rc = tk_reader_open_mem(ref, big.buf, big.len, "mem");
	CHECK_EQ_INT(rc, TK_OK);
	/* off from the start, so that args are first wanted when the
	 * other arrays are already grown */
	struct tk_reader_options opt = { .threads = threads, .no_args = 1 };
	CHECK_EQ_INT(tk_reader_set_options(r, &opt), TK_OK);
	CHECK_EQ_INT(tk_reader_open_mem(r, big.buf, big.len, "mem"), TK_OK);
	const struct tk_event *a, *b;
	uint64_t chunk = UINT64_MAX, chunks = 0, off = 0, on = 0, bad = 0;
	while ((rc = tk_reader_next_event(ref, &a)) == TK_OK) {
		if (tk_reader_next_event(r, &b) != TK_OK) {
			bad++;
			break;
		}
		if (tk_reader_chunk(r)->offset != chunk) {
			chunk = tk_reader_chunk(r)->offset;
			/* the setting for the chunk after this one */
			opt.no_args = (int)(++chunks % 2);
			CHECK_EQ_INT(tk_reader_set_options(r, &opt), TK_OK);
		}
		if (b->args) {
			on++;
			bad += b->args_len != a->args_len ||
			       memcmp(b->args, a->args, a->args_len) != 0;
		} else {
			off++;
			bad += b->args_len != 0;
		}
		bad += b->ts != a->ts || strcmp(b->name, a->name) != 0;
	}
	CHECK_EQ_INT(rc, TK_EOF);
	CHECK(chunks > 4);
	CHECK(off > 0 && on > 0);
	CHECK_EQ_INT(bad, 0);
	tk_reader_free(ref);
	tk_reader_free(r);
}

TEST(no_args_switched_between_chunks)
{
	no_args_switched(1);
	no_args_switched(3);
}

/* Which thread decodes a chunk depends on timing; what comes out may
 * not.  This program links rpool.c built with TK_RPOOL_SCHEDULE (the
 * Makefile), which says so here, so that each way is taken every run:
 * the reading thread always waiting for a worker, the reading thread
 * doing every chunk itself (with the definitions copied when the chunk
 * was read ahead, as a worker would), and every party sleeping at
 * random before and after its part.  On the rich trace, whose streams,
 * strings and configurations come as it goes (copies taken ahead are
 * stale), whole and damaged behind a good checksum, by events and by
 * columns, and on the big trace with no_args switched between chunks. */
int tkp_rpool_schedules(void);

TEST(every_schedule_reads_what_one_thread_reads)
{
	CHECK_EQ_INT(tkp_rpool_schedules(), 1);
	struct mem_trace rich = { 0 };
	rich_trace(&rich, 12000);
	/* damage in a chunk near the start and one in the middle: the
	 * first places of each (definitions, then column heads) */
	uint8_t *bad[8];
	size_t bad_len[8], nbad = 0;
	for (size_t off = 0, chunk = 0; off + 8 <= rich.len && nbad < 8;) {
		if (memcmp(rich.buf + off, "\x89TKC", 4) != 0) {
			off += get32(rich.buf + off + 8 + 4); /* the file header */
			continue;
		}
		if (chunk == 3 || chunk == 12) {
			uLongf raw;
			uint8_t *payload = inflate_chunk(rich.buf, off, &raw);
			size_t places[16];
			uint8_t xors[16];
			size_t np = damage_places(payload, raw, places, xors, 16);
			free(payload);
			for (size_t k = 8; k < np && nbad < (chunk == 3 ? 4 : 8); k += 2)
				nbad += (size_t)damage_payload(rich.buf, rich.len, off, places[k],
				                               xors[k], &bad[nbad], &bad_len[nbad]);
		}
		off += get32(rich.buf + off + 4) + get32(rich.buf + off + 12);
		chunk++;
	}
	CHECK(nbad >= 6);
	const char *schedules[] = { "workers", "reader", "jitter" };
	for (size_t i = 0; i < sizeof(schedules) / sizeof(*schedules); i++) {
		setenv("TK_RPOOL_SCHEDULE", schedules[i], 1);
		for (int how = BY_EVENT; how <= BY_MIXED; how++) {
			struct outcome one = read_with(rich.buf, rich.len, 1, FROM_MEM, how, 0);
			CHECK_EQ_INT(one.rc, TK_EOF);
			for (int t = 2; t <= 4; t += 2) {
				struct outcome many = read_with(rich.buf, rich.len, t,
				                                t == 2 ? FROM_MEM : FROM_FD, how, 0);
				if (!same(&one, &many))
					fprintf(stderr, "# schedule %s, %d threads\n", schedules[i], t);
				CHECK(same(&one, &many));
			}
		}
		for (size_t k = 0; k < nbad; k++) {
			struct outcome one = read_with(bad[k], bad_len[k], 1, FROM_MEM, BY_EVENT, 0);
			struct outcome many = read_with(bad[k], bad_len[k], 3, FROM_MEM, BY_EVENT, 0);
			if (!same(&one, &many))
				fprintf(stderr, "# schedule %s, damage %zu\n", schedules[i], k);
			CHECK(same(&one, &many));
		}
		no_args_switched(3);
	}
	unsetenv("TK_RPOOL_SCHEDULE");
	for (size_t k = 0; k < nbad; k++)
		free(bad[k]);
	mem_free(&rich);
}

TEST(options_checked)
{
	struct tk_reader *r = tk_reader_new();
	struct tk_reader_options bad = { .threads = -1 };
	CHECK_EQ_INT(tk_reader_set_options(r, &bad), TK_EINVAL);
	bad = (struct tk_reader_options){ .no_args = 2 };
	CHECK_EQ_INT(tk_reader_set_options(r, &bad), TK_EINVAL);
	CHECK_EQ_INT(tk_reader_set_options(r, NULL), TK_OK);
	CHECK_EQ_INT(tk_reader_set_options(NULL, NULL), TK_EINVAL);
	tk_reader_free(r);
}

/* A reader with threads, part read, then fork(): the child reads the
 * rest on its own and gets what the parent gets.  A range, read with
 * pread(2): a descriptor's shared position would mix the two reads. */
TEST(fork_child_reads_on)
{
	struct outcome whole = read_with(big.buf, big.len, 1, FROM_RANGE, BY_EVENT, 0);
	struct tk_reader *r = tk_reader_new();
	struct tk_reader_options opt = { .threads = 4 };
	tk_reader_set_options(r, &opt);
	FILE *f = tmpfile();
	if (!f || fwrite(big.buf, 1, big.len, f) != big.len || fflush(f))
		abort();
	int rc = tk_reader_open_range(r, fileno(f), 0, big.len, "mem");
	struct outcome o = { 0, 14695981039346656037ull, 0, "", 0 };
	const struct tk_event *e;
	while (rc == TK_OK && o.events < 37777 &&
	       (rc = tk_reader_next_event(r, &e)) == TK_OK)
		take_event(&o, e, 1);
	CHECK_EQ_INT(rc, TK_OK);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		drain(r, rc, BY_EVENT, 1, &o);
		_exit(same(&whole, &o) ? 0 : 1);
	}
	drain(r, rc, BY_EVENT, 1, &o);
	CHECK(same(&whole, &o));
	int status = 0;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	tk_reader_free(r);
	fclose(f);
}

/* The threads of this process, from /proc/self/task; 0 if unknown. */
static int
count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return 0;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

enum { FROM_PIPE = FROM_RANGE + 1 };

/* The threads this process has once a reader with the default options
 * (threads 0) has read `buf` to its end from `in`, before it is freed
 * (the workers live until then); what it read must be what one thread
 * reads from memory. */
static int
threads_after_reading(const uint8_t *buf, size_t len, int in)
{
	struct tk_reader *r = tk_reader_new();
	int rc, fd = -1;
	pid_t writer = -1;
	if (in == FROM_MEM) {
		rc = tk_reader_open_mem(r, buf, len, "mem");
	} else if (in == FROM_PIPE) {
		int p[2];
		if (pipe(p) < 0)
			abort();
		fflush(stderr);
		if ((writer = fork()) == 0) {
			close(p[0]);
			_exit(write(p[1], buf, len) == (ssize_t)len ? 0 : 1);
		}
		close(p[1]);
		fd = p[0];
		rc = tk_reader_open_fd(r, fd, "pipe");
	} else {
		fd = file_of(buf, len);
		rc = in == FROM_FD ? tk_reader_open_fd(r, fd, "file")
		                   : tk_reader_open_range(r, fd, 0, len, "file");
	}
	struct outcome o = { 0, 14695981039346656037ull, 0, "", 0 };
	drain(r, rc, BY_EVENT, 1, &o);
	struct outcome one = read_with(buf, len, 1, FROM_MEM, BY_EVENT, 0);
	CHECK_EQ_INT(o.rc, TK_EOF);
	CHECK(same(&one, &o));
	int n = count_threads();
	tk_reader_free(r);
	if (fd >= 0)
		close(fd);
	if (writer > 0)
		waitpid(writer, NULL, 0);
	return n;
}

/* By default (no TK_THREADS, threads 0) an input under 1 MiB is read on
 * the caller's thread, its size known (memory, a file, a range) or
 * not (a pipe: not until 1 MiB has come); a larger one gets a worker
 * per core; TK_THREADS asks for workers whatever the size. */
TEST(threads_only_for_large_inputs)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	/* the threads before (1, or 2 with ThreadSanitizer's own) */
	int base = count_threads();
	if (base < 1 || cores < 2) {
		printf("# needs /proc/self/task and 2 cores: test skipped\n");
		return;
	}
	unsigned workers = cores > 8 ? 8 : (unsigned)cores;
	struct mem_trace small;
	big_trace(&small, 6000);
	FILE *f = tmpfile();
	struct tk_scan *s;
	if (!f || fwrite(small.buf, 1, small.len, f) != small.len || fflush(f) ||
	    tk_scan_fd(fileno(f), &s) != TK_OK)
		abort();
	CHECK(s->nchunks >= 3); /* more than one: the old rule started threads */
	tk_scan_free(s);
	fclose(f);
	CHECK(small.len < (1u << 20));
	char *saved = getenv("TK_THREADS") ? strdup(getenv("TK_THREADS")) : NULL;
	unsetenv("TK_THREADS");
	for (int in = FROM_MEM; in <= FROM_PIPE; in++) {
		CHECK_EQ_INT(threads_after_reading(small.buf, small.len, in), base);
		CHECK_EQ_INT(threads_after_reading(big.buf, big.len, in), base + workers);
	}
	setenv("TK_THREADS", "2", 1);
	for (int in = FROM_MEM; in <= FROM_PIPE; in++)
		CHECK_EQ_INT(threads_after_reading(small.buf, small.len, in), base + 2);
	if (saved)
		setenv("TK_THREADS", saved, 1);
	else
		unsetenv("TK_THREADS");
	free(saved);
	mem_free(&small);
}

int
main(void)
{
	big_trace(&big, 100000);
	RUN(threads_read_what_one_thread_reads);
	RUN(threads_report_damage_as_one_thread);
	RUN(threads_decode_damaged_columns_as_one_thread);
	RUN(no_args_skips_args_only);
	RUN(no_args_switched_between_chunks);
	RUN(every_schedule_reads_what_one_thread_reads);
	RUN(options_checked);
	RUN(fork_child_reads_on);
	RUN(threads_only_for_large_inputs);
	mem_free(&big);
	return tap_done();
}
