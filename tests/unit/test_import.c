/* SPDX-License-Identifier: MIT */
/* Unit tests of trace-import's parts: numbers from their digits, the
 * splitter, the parser's repairs, the input's gzip handling. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "tap.h"
#include "import/import.h"

/* ---- numbers --------------------------------------------------------------- */

TEST(us_to_ns_exact)
{
	static const struct {
		const char *s;
		int64_t ns;
	} ok[] = {
		{ "0", 0 }, { "1", 1000 }, { "-1", -1000 }, { "0.5", 500 },
		{ "1.5", 1500 }, { "100", 100000 },
		/* a double holds this one only to a quarter of a microsecond */
		{ "1712195496004644.183", INT64_C(1712195496004644183) },
		{ "4458676522709.059", INT64_C(4458676522709059) },
		{ "1.2345", 1235 },            /* half away from zero */
		{ "-1.2345", -1235 },
		{ "1.2344", 1234 },
		{ "0.0005", 1 }, { "0.0004", 0 }, { "0.00004", 0 },
		{ "1e3", 1000000 }, { "1E-3", 1 }, { "2.5e+2", 250000 },
		{ "1682725898237042", INT64_C(1682725898237042000) },
		{ "9223372036854775.807", INT64_MAX },
		{ "-9223372036854775.807", -INT64_MAX },
		{ "0.000000000000000000000000000000000000000000001", 0 },
		{ "1.00000000000000000000000000000000000000000000009", 1000 },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int64_t ns = 42;
		int rc = imp_us_to_ns(ok[i].s, strlen(ok[i].s), &ns);
		if (rc != 0 || ns != ok[i].ns)
			fprintf(stderr, "# %s -> rc %d, %lld\n", ok[i].s, rc, (long long)ns);
		CHECK(rc == 0 && ns == ok[i].ns);
	}
}

TEST(us_to_ns_refuses)
{
	static const char *const bad[] = {
		"", "-", ".", "e5", "1e", "1e+", "abc", "1x", "\"1\"", "1 ",
		"9223372036854775.808",       /* one past INT64_MAX ns */
		"-9223372036854775.808",      /* INT64_MIN: readers refuse it */
		"1e30", "1e400", "99999999999999999999",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t ns;
		CHECK(imp_us_to_ns(bad[i], strlen(bad[i]), &ns) == -1);
	}
}

TEST(integers)
{
	uint64_t u;
	int64_t i;
	CHECK(imp_parse_u64("18446744073709551615", 20, &u) == 0 && u == UINT64_MAX);
	CHECK(imp_parse_u64("18446744073709551616", 20, &u) == -1);
	CHECK(imp_parse_u64("0x1f", 4, &u) == 0 && u == 31);
	CHECK(imp_parse_u64("0xffffffffffffffff", 18, &u) == 0 && u == UINT64_MAX);
	CHECK(imp_parse_u64("0x10000000000000000", 19, &u) == -1);
	CHECK(imp_parse_u64("8780d402", 8, &u) == -1);
	CHECK(imp_parse_u64("", 0, &u) == -1);
	CHECK(imp_parse_i64("-9223372036854775808", 20, &i) == 0 && i == INT64_MIN);
	CHECK(imp_parse_i64("9223372036854775808", 19, &i) == -1);
	CHECK(imp_parse_i64("25738", 5, &i) == 0 && i == 25738);
	CHECK(imp_parse_i64("stream 7", 8, &i) == -1);
	CHECK(imp_parse_i64("0x10", 4, &i) == -1);
}

/* ---- the splitter ------------------------------------------------------------- */

struct split {
	int n, err;
	char errmsg[512];
	char *items[64];
	uint64_t offsets[64];
	char ts[64][32];
	char keys[64][32];
};

static void
split(const char *json, size_t len, struct split *out)
{
	memset(out, 0, sizeof(*out));
	struct imp_input in;
	struct imp_scan sc;
	struct imp_item it;
	int rc;
	if (imp_input_open_mem(&in, json, len, "t") < 0) {
		out->err = 1;
		snprintf(out->errmsg, sizeof(out->errmsg), "%s", in.errmsg);
		return;
	}
	imp_scan_init(&sc, &in, NULL);
	while ((rc = imp_scan_next(&sc, &it)) > 0 && out->n < 64) {
		out->items[out->n] = strndup(it.text, it.len);
		out->offsets[out->n] = it.offset;
		snprintf(out->ts[out->n], 32, "%.*s", (int)it.span[IMP_SPAN_TS].len,
		         it.text + it.span[IMP_SPAN_TS].off);
		snprintf(out->keys[out->n], 32, "%s", it.key ? it.key : "");
		out->n++;
	}
	if (rc < 0) {
		out->err = 1;
		snprintf(out->errmsg, sizeof(out->errmsg), "%s", sc.errmsg);
	}
	imp_scan_free(&sc);
	imp_input_close(&in);
}

static void
split_free(struct split *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->items[i]);
}

TEST(splitter_finds_events)
{
	/* strings full of what would end an event, escapes, nesting */
	const char *j = "{\"a\": [1, {\"x\": \"]}\"}], \"traceEvents\" : [\n"
	                " {\"name\": \"q\\\"}]{\", \"ts\" : 12.5 ,\"args\":{\"ts\":1}},"
	                "{\"ts\":7,\"name\":\"\\\\\"}\n ], \"b\": \"s\", \"c\": null}";
	struct split s;
	split(j, strlen(j), &s);
	CHECK(!s.err);
	CHECK_EQ_INT(s.n, 5);
	CHECK_STR(s.keys[0], "a");
	CHECK_STR(s.items[0], "[1, {\"x\": \"]}\"}]");
	CHECK_STR(s.items[1], "{\"name\": \"q\\\"}]{\", \"ts\" : 12.5 ,\"args\":{\"ts\":1}}");
	CHECK_STR(s.ts[1], "12.5");           /* the top-level ts, not args' */
	CHECK_STR(s.items[2], "{\"ts\":7,\"name\":\"\\\\\"}");
	CHECK_STR(s.ts[2], "7");
	CHECK_STR(s.keys[3], "b");
	CHECK_STR(s.items[3], "\"s\"");
	CHECK_STR(s.items[4], "null");
	CHECK_EQ_INT(s.offsets[1], strstr(j, "{\"name\"") - j);
	split_free(&s);
}

TEST(splitter_bare_arrays)
{
	struct split s;
	const char *a = "\xef\xbb\xbf[{\"ts\":1},{\"ts\":2}]";
	split(a, strlen(a), &s);
	CHECK(!s.err && s.n == 2);
	split_free(&s);
	/* the closing bracket may be missing, after a comma or not */
	const char *b = "[{\"ts\":1},\n{\"ts\":2},\n";
	split(b, strlen(b), &s);
	CHECK(!s.err && s.n == 2);
	split_free(&s);
	const char *c = "[{\"ts\":1}";
	split(c, strlen(c), &s);
	CHECK(!s.err && s.n == 1);
	split_free(&s);
}

TEST(splitter_errors_say_where)
{
	static const struct {
		const char *json, *msg;
	} bad[] = {
		{ "", "the input is empty" },
		{ "  x", "not JSON: expected '{' or '[' at byte 2" },
		{ "[{\"ts\":1} {\"ts\":2}]", "expected ',' or ']' at byte 10" },
		{ "{\"traceEvents\":[{\"ts\":1}", "unexpected end of input: expected ',' or ']' at byte 24" },
		{ "{\"traceEvents\":[{\"ts\":1", "unexpected end of input in the event that begins at byte 16" },
		{ "{\"traceEvents\":[]} {}", "unexpected data after the end of the JSON at byte 19" },
		{ "{\"traceEvents\":[],}", "expected a key at byte 18" },
		{ "{\"traceEvents\" 1}", "expected ':' at byte 15" },
		{ "{\"traceEvents\":5}", "'traceEvents' is not an array at byte 15" },
		{ "[{\"ts\":1},]", "expected an event at byte 10" },
		{ "{\"a\":\"b", "unexpected end of input in the value that begins at byte 5" },
		{ "{\"a", "unexpected end of input in a key that begins at byte 1" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct split s;
		split(bad[i].json, strlen(bad[i].json), &s);
		CHECK(s.err);
		CHECK_STR(s.errmsg, bad[i].msg);
		split_free(&s);
	}
}

/* Events across many buffer refills, some larger than the buffer. */
TEST(splitter_large_input)
{
	size_t cap = 12u << 20, len = 0;
	char *j = malloc(cap);
	CHECK(j != NULL);
	if (!j)
		return;
	len += (size_t)sprintf(j, "{\"traceEvents\":[");
	int n = 0;
	while (len < cap - (3u << 20)) {
		size_t pad = n % 1000 == 999 ? (1u << 20) + 77 : (size_t)(n % 300);
		if (n)
			j[len++] = ',';
		len += (size_t)sprintf(j + len, "{\"ts\":%d,\"name\":\"e\\\"}{[%d\",\"s\":\"", n, n);
		memset(j + len, n % 2 ? 'x' : '}', pad);
		len += pad;
		len += (size_t)sprintf(j + len, "\"}");
		n++;
	}
	len += (size_t)sprintf(j + len, "]}");
	struct imp_input in;
	struct imp_scan sc;
	struct imp_item it;
	CHECK(imp_input_open_mem(&in, j, len, "big") == 0);
	imp_scan_init(&sc, &in, NULL);
	int got = 0, ok = 1, rc;
	while ((rc = imp_scan_next(&sc, &it)) > 0) {
		char want[32];
		int w = snprintf(want, sizeof(want), "%d", got);
		ok &= it.span[IMP_SPAN_TS].len == (uint32_t)w &&
		      memcmp(it.text + it.span[IMP_SPAN_TS].off, want, (size_t)w) == 0 &&
		      it.text[0] == '{' && it.text[it.len - 1] == '}';
		got++;
	}
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(got, n);
	CHECK(ok);
	imp_scan_free(&sc);
	imp_input_close(&in);
	free(j);
}

/* The fast path's reader finds an event's end itself: no prefix of an
 * event is taken for the event, and the whole one reads as imp_flat_scan
 * reads it delimited. */
TEST(flat_read_needs_the_whole_event)
{
	const char *ev = "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k<1>\", "
	                 "\"pid\": 0, \"tid\": 7, \"ts\": 1712195496004644.183, "
	                 "\"dur\": 12.5, \"args\": {\"correlation\": 99, \"grid\": [2, 1, 1], "
	                 "\"stream\": 7, \"l\": [1, [2, \"x\"]]}}";
	size_t len = strlen(ev);
	char *buf = malloc(len + 8);
	CHECK(buf != NULL);
	if (!buf)
		return;
	struct imp_flat whole, f;
	memcpy(buf, ev, len);
	CHECK(imp_flat_scan(buf, len, &whole) == 1);
	int cut_ok = 1;
	for (size_t k = 0; k < len; k++) {
		memcpy(buf, ev, len);
		cut_ok &= imp_flat_read(buf, k, &f) == 0 && memcmp(buf, ev, len) == 0;
	}
	CHECK(cut_ok);
	/* what follows the event is not read */
	memcpy(buf, ev, len);
	memcpy(buf + len, ",{\"x", 5);
	CHECK_EQ_INT(imp_flat_read(buf, len + 5, &f), len);
	CHECK(f.ts == whole.ts && f.dur == whole.dur && f.nargs == whole.nargs &&
	      f.kind == whole.kind && f.pid == whole.pid && f.tid == whole.tid);
	CHECK_STR(f.name, "k<1>");
	CHECK_EQ_INT(f.ts, INT64_C(1712195496004644183));
	free(buf);
}

/* Times read in the pass that checks them are the nanoseconds that
 * imp_us_to_ns() reads from the same digits, in every form. */
TEST(flat_times_as_us_to_ns)
{
	static const struct {
		const char *t;
		int taken;             /* the fast path takes the event */
	} times[] = {
		{ "0", 1 }, { "1", 1 }, { "-1", 1 }, { "0.5", 1 }, { "-0.5", 1 },
		{ "12.0", 1 }, { "100.10", 1 }, { "7.123", 1 }, { "-0.0", 1 },
		{ "1712195496004644.183", 1 }, { "9223372036854774.999", 1 },
		{ "9223372036854775.807", 1 }, { "-9223372036854775.807", 1 },
		{ "1.2345", 1 }, { "1.99999", 1 }, { "1e3", 1 }, { "2.5E-1", 1 },
		{ "99999999999999999", 0 }, { "9223372036854775.808", 0 },
		{ "-0", 0 }, { "01", 0 }, { "1.", 0 }, { ".5", 0 }, { "-", 0 },
	};
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		char ev[256];
		int n = snprintf(ev, sizeof(ev), "{\"ph\":\"X\",\"cat\":\"c\",\"name\":\"n\","
		                 "\"pid\":1,\"tid\":2,\"ts\":%s,\"dur\":%s}", times[i].t, times[i].t);
		struct imp_flat f;
		int64_t want = 42;
		int rc = imp_flat_scan(ev, (size_t)n, &f);
		int ok = rc == times[i].taken &&
		         (!rc || (imp_us_to_ns(times[i].t, strlen(times[i].t), &want) == 0 &&
		                  f.ts == want && f.dur == want));
		if (!ok)
			fprintf(stderr, "# %s: rc %d, ts %lld, want %lld\n", times[i].t, rc,
			        rc ? (long long)f.ts : 0, (long long)want);
		CHECK(ok);
	}
}

/* Strings are gone through 8 bytes at a time: what ends or refuses
 * one is seen at every place in a word. */
TEST(flat_strings_every_place)
{
	static const struct {
		const char *what;
		int taken;
	} mid[] = {
		{ "\\\"", 0 }, { "\\n", 0 }, { "\\\\", 0 }, { "\t", 0 }, { "\x1f", 0 },
		{ "\xff", 0 }, { "\xc3", 0 },
		{ "\xc3\xa9", 1 }, { "\xf0\x9d\x84\x9e", 1 }, { " ", 1 }, { "~", 1 },
		{ "!", 1 }, { "#", 1 }, { "[", 1 }, { "]", 1 }, { "\x7f", 1 },
	};
	int ok = 1;
	for (size_t m = 0; m < sizeof(mid) / sizeof(mid[0]); m++) {
		for (int pos = 0; pos < 20; pos++) {
			char name[64], ev[256];
			snprintf(name, sizeof(name), "%.*s%s%.*s", pos, "aaaaaaaaaaaaaaaaaaaa",
			         mid[m].what, 19 - pos, "bbbbbbbbbbbbbbbbbbbb");
			int n = snprintf(ev, sizeof(ev), "{\"ph\":\"X\",\"cat\":\"c\",\"name\":\"%s\","
			                 "\"pid\":1,\"tid\":2,\"ts\":1,\"dur\":1}", name);
			struct imp_flat f;
			int rc = imp_flat_scan(ev, (size_t)n, &f);
			if (rc != mid[m].taken || (rc && strcmp(f.name, name) != 0)) {
				fprintf(stderr, "# %zu at %d: rc %d\n", m, pos, rc);
				ok = 0;
			}
		}
	}
	CHECK(ok);
}

/* Events the fast path takes, read by the splitter as it splits them,
 * across many buffer refills (an event cut by each), some larger than
 * the buffer; and one it leaves to jansson among them. */
TEST(splitter_reads_fast_events)
{
	size_t cap = 8u << 20, len = 0;
	char *j = malloc(cap);
	CHECK(j != NULL);
	if (!j)
		return;
	len += (size_t)sprintf(j, "{\"traceEvents\":[");
	int n = 0;
	while (len < cap - (3u << 20)) {
		size_t pad = n % 2000 == 1999 ? (1u << 20) + 77 : (size_t)(n % 300);
		if (n)
			j[len++] = ',';
		if (n == 5)
			len += (size_t)sprintf(j + len, "{\"ph\":\"B\",\"ts\":5,\"name\":\"b\"}");
		else
			len += (size_t)sprintf(j + len, "\n {\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"e\", "
			                       "\"pid\":1,\"tid\":%d,\"ts\":%d.5,\"dur\":1,\"args\":{\"s\":\"",
			                       n % 7, n);
		if (n != 5) {
			memset(j + len, n % 2 ? 'x' : '}', pad);
			len += pad;
			len += (size_t)sprintf(j + len, "\"}}");
		}
		n++;
	}
	len += (size_t)sprintf(j + len, "]}");
	struct imp_input in;
	struct imp_scan sc;
	struct imp_item it;
	struct imp_flat f;
	CHECK(imp_input_open_mem(&in, j, len, "big") == 0);
	imp_scan_init(&sc, &in, &f);
	int got = 0, flat = 0, ok = 1, rc;
	while ((rc = imp_scan_next(&sc, &it)) > 0) {
		if (it.flat) {
			flat++;
			ok &= f.ts == (int64_t)got * 1000 + 500 && f.tid == got % 7 &&
			      it.text[0] == '{' && it.text[it.len - 1] == '}' &&
			      it.offset == (uint64_t)(it.text - sc.buf) + sc.base;
		} else {
			ok &= got == 5 && it.len == strlen("{\"ph\":\"B\",\"ts\":5,\"name\":\"b\"}");
		}
		got++;
	}
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(got, n);
	CHECK_EQ_INT(flat, n - 1);
	CHECK(ok);
	imp_scan_free(&sc);
	imp_input_close(&in);
	free(j);
}

/* ---- time order in bounded memory ----------------------------------------------- */

/* File descriptors open in this process now. */
static int
open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	int n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

struct order_key {
	int64_t ts;
	int i;
};

static int
cmp_order(const void *a, const void *b)
{
	const struct order_key *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/* Runs of 24 events: a thousand of them, merged a level up when many,
 * some twice.  The output is the events sorted by time, ties in the
 * order they came (checked against qsort here), and the files open at
 * once stay few whatever the number of runs. */
TEST(sort_merges_runs_by_levels)
{
	enum { N = 24000 };
	struct order_key *keys = malloc(N * sizeof(*keys));
	CHECK(keys != NULL);
	if (!keys)
		return;
	struct imp_tracks *t = imp_tracks_new();
	struct imp_sort *s = imp_sort_new(t, 8192, NULL);
	struct imp_id pid = { 1, NULL }, tid = { 2, NULL };
	uint32_t track = imp_thread(t, &pid, &tid);
	int fds0 = open_fds(), fds_max = fds0, added = 0;
	uint64_t x = 42;
	for (int i = 0; i < N; i++) {
		x = x * 6364136223846793005u + 1442695040888963407u;
		/* few distinct times: many ties, which must keep their order */
		keys[i].ts = (int64_t)(x >> 33) % 3000;
		keys[i].i = i;
		struct tk_event ev = { 0 };
		char name[16];
		snprintf(name, sizeof(name), "e%d", i);
		ev.kind = TK_RANGE;
		ev.track = track;
		ev.ts = keys[i].ts;
		ev.dur = i;            /* says which event it is */
		ev.name = name;
		if (imp_sort_add(s, &ev) < 0)
			break;
		added++;
		int fds = i % 16 == 15 ? open_fds() : 0;
		if (fds > fds_max)
			fds_max = fds;
	}
	CHECK_EQ_INT(added, N);
	/* at most 48 runs (sort.c's FAN_IN) and the one being written (2:
	 * its directory) */
	CHECK(fds_max - fds0 <= 50);
	/* two levels: 48 runs merged, then 47, 46 ... 24 of level 0, then
	 * all: 923 */
	CHECK(imp_sort_runs(s) > 923);
	char path[] = "/tmp/test_import_sort_XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	struct tk_writer *w = tk_writer_new();
	CHECK(tk_writer_open_fd(w, fd, "sorted", NULL) == TK_OK);
	CHECK_EQ_INT(imp_sort_finish(s, w, 0, NULL, NULL), 0);
	CHECK(tk_writer_close(w) == TK_OK);
	tk_writer_free(w);
	qsort(keys, N, sizeof(*keys), cmp_order);
	struct tk_reader *r = tk_reader_new();
	CHECK(lseek(fd, 0, SEEK_SET) == 0 && tk_reader_open_fd(r, fd, "sorted") == TK_OK);
	const struct tk_event *ev;
	int n = 0, ok = 1;
	while (tk_reader_next_event(r, &ev) == TK_OK) {
		ok &= n < N && ev->ts == keys[n].ts && ev->dur == keys[n].i;
		n++;
	}
	CHECK_EQ_INT(n, N);
	CHECK(ok);
	tk_reader_free(r);
	close(fd);
	unlink(path);
	imp_sort_free(s);
	imp_tracks_free(t);
	free(keys);
}

/* ---- the parser's repairs ---------------------------------------------------------- */

TEST(parse_repairs)
{
	struct imp_parser st = { 0 };
	char msg[256];
	size_t at;
	const char *bad = "{\"name\":\"a\xff\",\"id\":18446744073709551615,"
	                  "\"r\":1e400,\"n\":-9223372036854775809,\"ok\":1}";
	json_t *v = imp_parse(bad, strlen(bad), &st, msg, sizeof(msg), &at);
	CHECK(v != NULL);
	CHECK(st.repaired);
	CHECK_EQ_INT(st.utf8_repaired, 1);
	CHECK_EQ_INT(st.big_numbers, 3);
	CHECK_STR(json_string_value(json_object_get(v, "name")), "a\xef\xbf\xbd");
	CHECK_STR(json_string_value(json_object_get(v, "id")), "18446744073709551615");
	CHECK_STR(json_string_value(json_object_get(v, "r")), "1e400");
	CHECK_STR(json_string_value(json_object_get(v, "n")), "-9223372036854775809");
	CHECK_EQ_INT(json_integer_value(json_object_get(v, "ok")), 1);
	json_decref(v);
	const char *broken = "{\"a\": 1,, \"b\": 2}";
	v = imp_parse(broken, strlen(broken), &st, msg, sizeof(msg), &at);
	CHECK(v == NULL);
	CHECK_EQ_INT(at, 8);
	CHECK_STR(msg, "string or '}' expected near ','");
	imp_parser_free(&st);
}

/* ---- the input ---------------------------------------------------------------------- */

static size_t
gz(const char *s, unsigned char *out, size_t cap)
{
	z_stream z = { 0 };
	deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
	z.next_in = (unsigned char *)(uintptr_t)s;
	z.avail_in = (uInt)strlen(s);
	z.next_out = out;
	z.avail_out = (uInt)cap;
	deflate(&z, Z_FINISH);
	size_t n = cap - z.avail_out;
	deflateEnd(&z);
	return n;
}

static int
read_all(struct imp_input *in, char *buf, size_t cap)
{
	size_t len = 0;
	long n;
	while ((n = imp_input_read(in, buf + len, cap - len - 1)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	return n < 0 ? -1 : (int)len;
}

TEST(input_gzip_members_and_truncation)
{
	unsigned char z[512];
	size_t a = gz("[{\"ts\":1},", z, sizeof(z));
	size_t b = gz("{\"ts\":2}]", z + a, sizeof(z) - a);
	struct imp_input in;
	char out[256];
	CHECK(imp_input_open_mem(&in, z, a + b, "gz") == 0);
	CHECK(in.gz);
	CHECK_EQ_INT(read_all(&in, out, sizeof(out)), 19);
	CHECK_STR(out, "[{\"ts\":1},{\"ts\":2}]");
	imp_input_close(&in);
	/* cut short: what came is handed out, then an error */
	CHECK(imp_input_open_mem(&in, z, a - 4, "gz") == 0);
	CHECK_EQ_INT(read_all(&in, out, sizeof(out)), -1);
	CHECK_STR(in.errmsg, "truncated gzip data");
	imp_input_close(&in);
	/* plain text passes through; a .tkt is refused */
	CHECK(imp_input_open_mem(&in, "[]", 2, "p") == 0 && !in.gz);
	imp_input_close(&in);
	CHECK(imp_input_open_mem(&in, "\x89TKT\r\n\x1a\n", 8, "t") == -1);
	CHECK_STR(in.errmsg, "already a tracekit trace");
	imp_input_close(&in);
}

int
main(void)
{
	imp_alloc_init();
	RUN(us_to_ns_exact);
	RUN(us_to_ns_refuses);
	RUN(integers);
	RUN(splitter_finds_events);
	RUN(splitter_bare_arrays);
	RUN(splitter_errors_say_where);
	RUN(splitter_large_input);
	RUN(flat_read_needs_the_whole_event);
	RUN(flat_times_as_us_to_ns);
	RUN(flat_strings_every_place);
	RUN(splitter_reads_fast_events);
	RUN(sort_merges_runs_by_levels);
	RUN(parse_repairs);
	RUN(input_gzip_members_and_truncation);
	return tap_done();
}
