/* SPDX-License-Identifier: MIT */
/*
 * badtrace: damaged and unusual traces for the reliability tests, and
 * what a reader must still deliver from each.
 *
 *   badtrace chunks FILE
 *       the layout of FILE, read from its headers as tracekit-format(5)
 *       describes them (not through the library, so that the tests check
 *       the reader against the specification): "header OFFSET SIZE" and
 *       "chunk OFFSET SIZE EVENTS FLAGS" lines.
 *   badtrace cuts FILE DIR
 *       FILE cut short at offsets chosen around every header and chunk
 *       boundary, written as DIR/cut-OFFSET.tkt; one line each on stdout:
 *       "PATH OFFSET EVENTS WHAT AT": the EVENTS of the complete chunks
 *       before the cut, and the error a reader must give: WHAT is empty,
 *       header, end (the cut falls between chunks: no end marker) or
 *       chunk, AT the byte offset the message names.
 *   badtrace flips FILE DIR
 *       one bit flipped in each field of the file header and of the chunk
 *       headers, and in payloads: DIR/flip-OFFSET-BIT.tkt, with lines
 *       "PATH OFFSET EVENTS AT" (the damaged header or chunk begins AT).
 *   badtrace version MAJOR MINOR [EXTRA [INCOMPAT]] IN OUT
 *       IN with its file header replaced by one of that version, EXTRA
 *       unknown bytes longer and INCOMPAT incompatible feature flags, its
 *       checksum valid.
 *   badtrace huge [-s BYTES] OUT
 *       a small valid trace whose every kind of string (event, thread,
 *       stream, counter, device, host, argv, label, domain, category,
 *       metadata, args) is BYTES long (default 1 MiB).
 *   badtrace utf8 OUT
 *       the same with invalid UTF-8 in every string: lone continuation
 *       and 0xff bytes, overlong forms, surrogates, code points beyond
 *       U+10FFFF, sequences cut short at the end, control characters.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "tracekit.h"
#include "common/util.h"

#define FILE_HEADER 36
#define CHUNK_HEADER 56
#define MAX_CHUNKS 4096

static const unsigned char file_magic[8] = { 0x89, 'T', 'K', 'T', '\r', '\n', 0x1a, '\n' };
static const unsigned char chunk_magic[4] = { 0x89, 'T', 'K', 'C' };

struct bytes {
	unsigned char *p;
	size_t n;
};

/* One header of the layout: the file header (events == -1) or a chunk. */
struct piece {
	size_t offset, size;
	long events;
	uint32_t flags;
};

static struct piece pieces[MAX_CHUNKS];
static size_t npieces;

static uint32_t
get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void
put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static struct bytes
slurp(const char *path)
{
	struct bytes b = { NULL, 0 };
	FILE *f = fopen(path, "rb");
	if (!f)
		cmd_die(2, "%s: %s", path, strerror(errno));
	size_t cap = 0;
	for (;;) {
		if (b.n == cap) {
			cap = cap ? cap * 2 : 1 << 16;
			b.p = realloc(b.p, cap);
			if (!b.p)
				cmd_die(2, "out of memory");
		}
		size_t got = fread(b.p + b.n, 1, cap - b.n, f);
		if (!got)
			break;
		b.n += got;
	}
	if (ferror(f))
		cmd_die(2, "%s: read error", path);
	fclose(f);
	return b;
}

static void
spill(const char *path, const unsigned char *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0)
		cmd_die(2, "%s: %s", path, strerror(errno));
}

/* Follow the headers of a valid trace (any number of concatenated ones). */
static void
layout(const struct bytes *b, const char *path)
{
	size_t off = 0;
	npieces = 0;
	while (off < b->n) {
		if (npieces == MAX_CHUNKS)
			cmd_die(2, "%s: more than %d chunks", path, MAX_CHUNKS);
		struct piece *pc = &pieces[npieces++];
		pc->offset = off;
		if (b->n - off >= FILE_HEADER && memcmp(b->p + off, file_magic, 8) == 0) {
			pc->size = get32(b->p + off + 12);
			pc->events = -1;
			pc->flags = 0;
		} else if (b->n - off >= CHUNK_HEADER &&
		           memcmp(b->p + off, chunk_magic, 4) == 0) {
			pc->size = get32(b->p + off + 4) + (size_t)get32(b->p + off + 12);
			pc->flags = get32(b->p + off + 8);
			pc->events = (long)get32(b->p + off + 20);
		} else {
			cmd_die(2, "%s: no header or chunk at byte %zu", path, off);
		}
		if (pc->size > b->n - off)
			cmd_die(2, "%s: piece at byte %zu runs past the end", path, off);
		off += pc->size;
	}
}

static int
do_chunks(const char *path)
{
	struct bytes b = slurp(path);
	layout(&b, path);
	for (size_t i = 0; i < npieces; i++) {
		const struct piece *pc = &pieces[i];
		if (pc->events < 0)
			printf("header %zu %zu\n", pc->offset, pc->size);
		else
			printf("chunk %zu %zu %ld 0x%" PRIx32 "\n", pc->offset,
			       pc->size, pc->events, pc->flags);
	}
	free(b.p);
	return cmd_finish(0);
}

/* Events of the complete chunks before piece i. */
static long
events_before(size_t i)
{
	long n = 0;
	for (size_t k = 0; k < i; k++)
		if (pieces[k].events > 0)
			n += pieces[k].events;
	return n;
}

static void
cut_at(const struct bytes *b, const char *dir, size_t off)
{
	static size_t done[4 * MAX_CHUNKS];
	static size_t ndone;
	if (off >= b->n)
		return;
	for (size_t i = 0; i < ndone; i++)
		if (done[i] == off)
			return;
	if (ndone < sizeof(done) / sizeof(done[0]))
		done[ndone++] = off;

	/* the piece the cut falls in, or the one it falls just before */
	size_t i = 0;
	while (i < npieces && pieces[i].offset + pieces[i].size <= off)
		i++;
	const char *what;
	size_t at = pieces[i].offset;
	if (off == 0)
		what = "empty";
	else if (pieces[i].offset == off)
		what = "end", at = off;
	else if (pieces[i].events < 0)
		what = "header";
	else
		what = "chunk";
	char path[4096];
	snprintf(path, sizeof(path), "%s/cut-%zu.tkt", dir, off);
	spill(path, b->p, off);
	printf("%s %zu %ld %s %zu\n", path, off, events_before(i), what, at);
}

static int
do_cuts(const char *path, const char *dir)
{
	struct bytes b = slurp(path);
	layout(&b, path);
	/* at most this many chunks are cut into, spread over the file */
	const size_t want = 8;
	size_t step = npieces > want ? npieces / want : 1;
	cut_at(&b, dir, 0);
	for (size_t i = 0; i < npieces; i++) {
		const struct piece *pc = &pieces[i];
		if (i % step && i + 1 != npieces)
			continue;
		size_t o = pc->offset;
		cut_at(&b, dir, o);         /* between two pieces */
		cut_at(&b, dir, o + 1);
		cut_at(&b, dir, o + 7);     /* inside the magic */
		cut_at(&b, dir, o + 20);
		if (pc->events >= 0) {
			cut_at(&b, dir, o + CHUNK_HEADER - 1);
			cut_at(&b, dir, o + CHUNK_HEADER);  /* header, no payload */
			cut_at(&b, dir, o + CHUNK_HEADER + (pc->size - CHUNK_HEADER) / 2);
		} else {
			cut_at(&b, dir, o + pc->size - 1);
		}
		cut_at(&b, dir, o + pc->size - 1);  /* its last byte missing */
	}
	free(b.p);
	return cmd_finish(0);
}

static void
flip_at(const struct bytes *b, const char *dir, size_t i, size_t off, unsigned bit)
{
	if (off >= b->n)
		return;
	char path[4096];
	snprintf(path, sizeof(path), "%s/flip-%zu-%u.tkt", dir, off, bit);
	b->p[off] ^= (unsigned char)(1u << bit);
	spill(path, b->p, b->n);
	b->p[off] ^= (unsigned char)(1u << bit);
	printf("%s %zu %ld %zu\n", path, off, events_before(i), pieces[i].offset);
}

static int
do_flips(const char *path, const char *dir)
{
	struct bytes b = slurp(path);
	layout(&b, path);
	/* each field of a header, by its offset */
	static const size_t file_fields[] = { 0, 5, 8, 9, 10, 12, 13, 16, 23, 24, 31, 32, 35 };
	static const size_t chunk_fields[] = { 0, 3, 4, 5, 8, 9, 12, 14, 16, 18, 20,
	                                       21, 24, 31, 32, 39, 40, 47, 48, 52, 55 };
	unsigned bit = 0;
	for (size_t i = 0; i < npieces; i++) {
		const struct piece *pc = &pieces[i];
		if (pc->events < 0) {
			for (size_t k = 0; k < sizeof(file_fields) / sizeof(file_fields[0]); k++)
				flip_at(&b, dir, i, pc->offset + file_fields[k], bit++ % 8);
			continue;
		}
		/* every field of the first, second and last chunk headers */
		if (i <= 2 || i + 1 == npieces)
			for (size_t k = 0; k < sizeof(chunk_fields) / sizeof(chunk_fields[0]); k++)
				flip_at(&b, dir, i, pc->offset + chunk_fields[k], bit++ % 8);
		/* the payload: first, middle and last byte */
		size_t payload = pc->size - CHUNK_HEADER;
		if (payload) {
			size_t p0 = pc->offset + CHUNK_HEADER;
			flip_at(&b, dir, i, p0, bit++ % 8);
			flip_at(&b, dir, i, p0 + payload / 2, bit++ % 8);
			flip_at(&b, dir, i, p0 + payload - 1, bit++ % 8);
		}
	}
	free(b.p);
	return cmd_finish(0);
}

static int
do_version(unsigned major, unsigned minor, unsigned extra, uint64_t incompat,
            const char *in, const char *out)
{
	struct bytes b = slurp(in);
	if (b.n < FILE_HEADER || memcmp(b.p, file_magic, 8) != 0)
		cmd_die(2, "%s: not a trace", in);
	size_t old = get32(b.p + 12);
	size_t size = FILE_HEADER + extra;
	unsigned char *h = calloc(1, size);
	if (!h)
		cmd_die(2, "out of memory");
	memcpy(h, file_magic, 8);
	h[8] = (unsigned char)major;
	h[9] = (unsigned char)(major >> 8);
	h[10] = (unsigned char)minor;
	h[11] = (unsigned char)(minor >> 8);
	put32(h + 12, (uint32_t)size);
	for (int i = 0; i < 8; i++)
		h[16 + i] = (unsigned char)(incompat >> (8 * i));
	for (unsigned i = 0; i < extra; i++)
		h[32 + i] = (unsigned char)(0xa5 ^ i);  /* fields of a later minor */
	put32(h + size - 4, (uint32_t)crc32(0, h, (uInt)(size - 4)));
	FILE *f = fopen(out, "wb");
	if (!f || fwrite(h, 1, size, f) != size ||
	    fwrite(b.p + old, 1, b.n - old, f) != b.n - old || fclose(f) != 0)
		cmd_die(2, "%s: %s", out, strerror(errno));
	free(h);
	free(b.p);
	return 0;
}

/* ---- traces with odd strings ------------------------------------------------ */

/* The strings of a trace, one per place a string can go. */
enum slot {
	S_HOST, S_ARGV, S_LABEL, S_THREAD, S_STREAM, S_COUNTER, S_UNIT,
	S_DEVICE, S_META_KEY, S_META_VALUE, S_DOMAIN, S_CATEGORY, S_RANGE,
	S_MARK, S_API, S_KERNEL, S_MANGLED, S_MEMCPY, S_DROPPED, S_FLOW,
	S_ARGS, S_NSLOTS
};

static char *strs[S_NSLOTS];

static void
write_odd_trace(const char *out)
{
	struct tk_writer *w = tk_writer_new();
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	if (!w || tk_writer_open_path(w, out, &o) != TK_OK)
		cmd_die(2, "%s: %s", out, w ? tk_writer_error(w) : "out of memory");
	const int64_t t0 = 1700000000000000000;
	const char *argv[] = { "python3", strs[S_ARGV] };
	struct tk_process p = { strs[S_HOST], 77, 1, t0, 2, argv, strs[S_LABEL] };
	uint32_t proc = tk_writer_process(w, 0, &p);
	struct tk_thread th = { proc, 78, strs[S_THREAD] };
	uint32_t thr = tk_writer_thread(w, 0, &th);
	struct tk_device d = { .host = strs[S_HOST], .index = 0, .name = strs[S_DEVICE],
	                       .sm_count = 132, .memory = 80ull << 30, .cc_major = 9 };
	uint32_t dev = tk_writer_device(w, 0, &d);
	struct tk_stream st = { proc, dev, 1, 7, strs[S_STREAM] };
	uint32_t str = tk_writer_stream(w, 0, &st);
	struct tk_counter c = { strs[S_COUNTER], strs[S_UNIT], proc, 0 };
	uint32_t ctr = tk_writer_counter(w, 0, &c);
	if (!proc || !thr || !dev || !str || !ctr ||
	    tk_writer_meta(w, strs[S_META_KEY], strs[S_META_VALUE]) != TK_OK ||
	    tk_writer_meta(w, strs[S_META_KEY], "second value") != TK_OK ||
	    tk_writer_meta(w, "command", strs[S_ARGV]) != TK_OK ||
	    tk_writer_category(w, strs[S_DOMAIN], 3, strs[S_CATEGORY]) != TK_OK)
		cmd_die(2, "%s: %s", out, tk_writer_error(w));

	struct tk_event e;
	int rc = 0;
	for (int i = 0; i < 3; i++) {
		int64_t t = t0 + 1000000 * (i + 1);
		memset(&e, 0, sizeof(e));
		e.kind = TK_RANGE; e.track = thr; e.ts = t; e.dur = 500000;
		e.name = strs[S_RANGE];
		e.u.range.domain = strs[S_DOMAIN];
		e.u.range.category = 3;
		e.args = strs[S_ARGS];
		e.args_len = (uint32_t)strlen(strs[S_ARGS]);
		rc |= tk_writer_event(w, &e);

		memset(&e, 0, sizeof(e));
		e.kind = TK_API; e.track = thr; e.ts = t + 1000; e.dur = 5000;
		e.name = strs[S_API];
		e.u.api.domain = TK_API_RUNTIME;
		e.u.api.correlation = (uint64_t)i + 1;
		rc |= tk_writer_event(w, &e);

		memset(&e, 0, sizeof(e));
		e.kind = TK_MARK; e.track = thr; e.ts = t + 2000;
		e.name = strs[S_MARK];
		e.u.range.domain = strs[S_DOMAIN];
		rc |= tk_writer_event(w, &e);

		memset(&e, 0, sizeof(e));
		e.kind = TK_KERNEL; e.track = str; e.ts = t + 10000; e.dur = 200000;
		e.name = strs[S_KERNEL];
		e.u.kernel.correlation = (uint64_t)i + 1;
		e.u.kernel.grid[0] = e.u.kernel.block[0] = 128;
		e.u.kernel.grid[1] = e.u.kernel.grid[2] = 1;
		e.u.kernel.block[1] = e.u.kernel.block[2] = 1;
		e.u.kernel.mangled = strs[S_MANGLED];
		rc |= tk_writer_event(w, &e);

		memset(&e, 0, sizeof(e));
		e.kind = TK_MEMCPY; e.track = str; e.ts = t + 300000; e.dur = 1000;
		e.name = strs[S_MEMCPY];
		e.u.memcpy.bytes = 1 << 20;
		e.u.memcpy.copy_kind = TK_COPY_HTOD;
		rc |= tk_writer_event(w, &e);

		memset(&e, 0, sizeof(e));
		e.kind = TK_COUNTER; e.track = ctr; e.ts = t;
		e.u.counter.value = 1e9 + i;
		rc |= tk_writer_event(w, &e);

		memset(&e, 0, sizeof(e));
		e.kind = TK_FLOW; e.track = thr; e.ts = t + 1000;
		e.name = strs[S_FLOW];
		e.u.flow.id = (uint64_t)i + 1;
		e.u.flow.phase = TK_FLOW_START;
		e.u.flow.category = strs[S_FLOW];
		rc |= tk_writer_event(w, &e);
	}
	memset(&e, 0, sizeof(e));
	e.kind = TK_DROPPED; e.track = thr; e.ts = t0 + 4000000;
	e.u.dropped.count = 5;
	e.u.dropped.reason = strs[S_DROPPED];
	rc |= tk_writer_event(w, &e);
	memset(&e, 0, sizeof(e));
	e.kind = TK_PROCESS; e.track = proc; e.ts = t0; e.dur = 5000000;
	e.name = strs[S_ARGV];
	rc |= tk_writer_event(w, &e);
	if (rc != TK_OK || tk_writer_close(w) != TK_OK)
		cmd_die(2, "%s: %s", out, tk_writer_error(w));
	tk_writer_free(w);
}

static int
do_huge(size_t size, const char *out)
{
	for (int s = 0; s < S_NSLOTS; s++) {
		/* a different string in each slot, so none is shared */
		strs[s] = malloc(size + 1);
		if (!strs[s])
			cmd_die(2, "out of memory");
		for (size_t i = 0; i < size; i++)
			strs[s][i] = (char)('a' + (i + (size_t)s) % 26);
		strs[s][size] = 0;
		if (s == S_ARGS && size >= 8) {
			/* a valid JSON object all the same */
			memcpy(strs[s], "{\"k\":\"", 6);
			memcpy(strs[s] + size - 2, "\"}", 2);
		}
	}
	write_odd_trace(out);
	for (int s = 0; s < S_NSLOTS; s++)
		free(strs[s]);
	return 0;
}

static int
do_utf8(const char *out)
{
	/* a different defect in each slot, then all of them together */
	static const char *const bad[] = {
		"lone\x80" "continuation", "ff\xff\xfe" " bytes", "overlong \xc0\xaf" " slash",
		"overlong \xe0\x80\xaf", "surrogate \xed\xa0\x80" " half",
		"beyond \xf4\x90\x80\x80 U+10FFFF", "quote \" backslash \\ tab\t",
		"control \x01\x1f\x7f", "cut at the end \xe2\x82",
		"Latin-1 caf\xe9",
	};
	const size_t nbad = sizeof(bad) / sizeof(bad[0]);
	for (int s = 0; s < S_NSLOTS; s++) {
		const char *b = bad[(size_t)s % nbad];
		strs[s] = malloc(strlen(b) + 16);
		if (!strs[s])
			cmd_die(2, "out of memory");
		snprintf(strs[s], strlen(b) + 16, "%d:%s", s, b);
	}
	/* args must stay a JSON object: invalid bytes inside a string */
	free(strs[S_ARGS]);
	strs[S_ARGS] = strdup("{\"k\":\"\xff\xc0\xaf\xed\xa0\x80\"}");
	write_odd_trace(out);
	for (int s = 0; s < S_NSLOTS; s++)
		free(strs[s]);
	return 0;
}

static _Noreturn void
usage(void)
{
	fprintf(stderr,
	        "usage: badtrace chunks FILE\n"
	        "       badtrace cuts FILE DIR\n"
	        "       badtrace flips FILE DIR\n"
	        "       badtrace version MAJOR MINOR [EXTRA [INCOMPAT]] IN OUT\n"
	        "       badtrace huge [-s BYTES] OUT\n"
	        "       badtrace utf8 OUT\n");
	exit(2);
}

static unsigned long long
number(const char *s)
{
	uint64_t v;
	if (cmd_parse_uint(s, &v) < 0)
		usage();
	return v;
}

int
main(int argc, char **argv)
{
	cmd_init("badtrace");
	if (argc < 2)
		usage();
	const char *verb = argv[1];
	if (strcmp(verb, "chunks") == 0 && argc == 3)
		return do_chunks(argv[2]);
	if (strcmp(verb, "cuts") == 0 && argc == 4)
		return do_cuts(argv[2], argv[3]);
	if (strcmp(verb, "flips") == 0 && argc == 4)
		return do_flips(argv[2], argv[3]);
	if (strcmp(verb, "version") == 0 && argc >= 6 && argc <= 8) {
		unsigned extra = argc >= 7 ? (unsigned)number(argv[4]) : 0;
		uint64_t incompat = argc == 8 ? number(argv[5]) : 0;
		return do_version((unsigned)number(argv[2]), (unsigned)number(argv[3]),
		                   extra, incompat, argv[argc - 2], argv[argc - 1]);
	}
	if (strcmp(verb, "huge") == 0 && argc == 3)
		return do_huge(1u << 20, argv[2]);
	if (strcmp(verb, "huge") == 0 && argc == 5 && strcmp(argv[2], "-s") == 0)
		return do_huge((size_t)number(argv[3]), argv[4]);
	if (strcmp(verb, "utf8") == 0 && argc == 3)
		return do_utf8(argv[2]);
	usage();
}
