/* SPDX-License-Identifier: MIT */
/*
 * pqrand: random tables through the Parquet writer (cmd/common/parquet.h),
 * for a property test that reads them back with another engine.
 *
 *   pqrand SEED ROWS OUT.parquet OUT.jsonl [GROUP_ROWS PAGE_ROWS LEVEL]
 *
 * writes ROWS rows of random values, the same seed giving the same rows,
 * and the same rows as JSON lines beside it, one array per row with
 * every value as text (null for null), as tests/cli/duckdb/query.mjs
 * prints a query's rows: what went in, to compare with what a reader
 * gets out.  Columns: i (row number), a (any int64, extremes included),
 * b (int64, nulls), c (int32, nulls), d (double, nulls), s (strings of
 * any length and script, empty ones included), t (few distinct strings,
 * nulls: the dictionary path), z (always null).
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parquet.h"

static uint64_t
rnd(uint64_t *s)
{
	uint64_t x = (*s += 0x9e3779b97f4a7c15ull);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static int64_t
rnd_i64(uint64_t *s)
{
	switch (rnd(s) % 8) {
	case 0: return INT64_MIN;
	case 1: return INT64_MAX;
	case 2: return (int64_t)(rnd(s) % 100) - 50;
	default: return (int64_t)rnd(s);
	}
}

/* A random UTF-8 string: ASCII, Latin, CJK and emoji, quotes, commas,
 * newlines; empty one time in ten. */
static size_t
rnd_str(uint64_t *s, char *buf)
{
	static const char *const pieces[] = { "a", "Z", "0", " ", ",", "\"",
		"\n", "\\", "é", "ß", "Ж", "中", "文", "😀", "🚀", "\t" };
	size_t n = 0, len = rnd(s) % 10 ? rnd(s) % 24 : 0;
	for (size_t i = 0; i < len; i++) {
		const char *p = pieces[rnd(s) % (sizeof(pieces) / sizeof(*pieces))];
		memcpy(buf + n, p, strlen(p));
		n += strlen(p);
	}
	buf[n] = 0;
	return n;
}

static const struct pq_column cols[] = {
	{ "i", PQ_INT64, 0 }, { "a", PQ_INT64, 0 }, { "b", PQ_INT64, 1 },
	{ "c", PQ_INT32, 1 }, { "d", PQ_DOUBLE, 1 }, { "s", PQ_STRING, 0 },
	{ "t", PQ_STRING, 1 }, { "z", PQ_STRING, 1 },
};

static void
text_i64(json_t *row, int64_t v)
{
	char b[32];
	snprintf(b, sizeof(b), "%" PRId64, v);
	json_array_append_new(row, json_string(b));
}

static void
one_row(struct pq_writer *w, uint64_t *s, uint64_t i, json_t *row)
{
	static const char *const few[] = { "", "kernel_a", "κ", "🚀 launch",
	                                   "x,y" };
	char buf[24 * 4 + 1];
	pq_i64(w, (int64_t)i);
	text_i64(row, (int64_t)i);
	int64_t a = rnd_i64(s);
	pq_i64(w, a);
	text_i64(row, a);
	if (rnd(s) % 3 == 0) {
		pq_null(w);
		json_array_append_new(row, json_null());
	} else {
		int64_t b = rnd_i64(s);
		pq_i64(w, b);
		text_i64(row, b);
	}
	if (rnd(s) % 4 == 0) {
		pq_null(w);
		json_array_append_new(row, json_null());
	} else {
		int32_t c = (int32_t)rnd(s);
		pq_i64(w, c);
		text_i64(row, c);
	}
	if (rnd(s) % 5 == 0) {
		pq_null(w);
		json_array_append_new(row, json_null());
	} else {
		double d = ((double)(int64_t)rnd(s)) / 1e6;
		pq_f64(w, d);
		snprintf(buf, sizeof(buf), "%.17g", d);
		json_array_append_new(row, json_string(buf));
	}
	size_t n = rnd_str(s, buf);
	pq_str(w, buf, n);
	json_array_append_new(row, json_stringn(buf, n));
	if (rnd(s) % 6 == 0) {
		pq_null(w);
		json_array_append_new(row, json_null());
	} else {
		const char *t = few[rnd(s) % 5];
		pq_str(w, t, strlen(t));
		json_array_append_new(row, json_string(t));
	}
	pq_null(w);
	json_array_append_new(row, json_null());
}

int
main(int argc, char **argv)
{
	if (argc != 5 && argc != 8) {
		fprintf(stderr, "usage: pqrand SEED ROWS OUT.parquet OUT.jsonl "
		        "[GROUP_ROWS PAGE_ROWS LEVEL]\n");
		return 2;
	}
	uint64_t seed = strtoull(argv[1], NULL, 10);
	uint64_t rows = strtoull(argv[2], NULL, 10);
	struct pq_options o = PQ_OPTIONS_INIT;
	if (argc == 8) {
		o.group_rows = strtoull(argv[5], NULL, 10);
		o.page_rows = strtoull(argv[6], NULL, 10);
		o.level = atoi(argv[7]);
	}
	struct pq_writer *w = pq_open(argv[3], cols, sizeof(cols) / sizeof(*cols), &o);
	FILE *js = fopen(argv[4], "w");
	if (!w || !js) {
		perror("pqrand");
		return 1;
	}
	for (uint64_t i = 0; i < rows; i++) {
		json_t *row = json_array();
		one_row(w, &seed, i, row);
		char *line = json_dumps(row, JSON_COMPACT);
		fprintf(js, "%s\n", line);
		free(line);
		json_decref(row);
		if (pq_end_row(w) < 0)
			break;
	}
	int rc = pq_close(w);
	if (rc < 0)
		fprintf(stderr, "pqrand: %s\n", pq_error(w));
	pq_free(w);
	if (fclose(js) != 0)
		rc = -1;
	return rc < 0 ? 1 : 0;
}
