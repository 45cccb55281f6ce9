/* SPDX-License-Identifier: MIT */
/* Shared by the unit tests: traces in memory, a seeded generator. */
#ifndef TK_TEST_HELPERS_H
#define TK_TEST_HELPERS_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracekit.h"

static uint64_t test_rng = 88172645463325252ull;

static inline uint64_t
rnd(void)
{
	/* xorshift64* */
	test_rng ^= test_rng >> 12;
	test_rng ^= test_rng << 25;
	test_rng ^= test_rng >> 27;
	return test_rng * 2685821657736338717ull;
}

static inline uint64_t
rnd_below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

/* A writer on an anonymous temporary file. */
struct mem_trace {
	FILE *f;
	struct tk_writer *w;
	uint8_t *buf;
	size_t len;
};

static inline struct tk_writer *
mem_open(struct mem_trace *m, const struct tk_writer_options *o)
{
	memset(m, 0, sizeof(*m));
	m->f = tmpfile();
	m->w = tk_writer_new();
	if (!m->f || !m->w || tk_writer_open_fd(m->w, fileno(m->f), "mem", o))
		abort();
	return m->w;
}

/* Close the writer (unless `keep_open`) and load the bytes. */
static inline void
mem_finish(struct mem_trace *m, int close_writer)
{
	if (close_writer && tk_writer_close(m->w) != TK_OK) {
		fprintf(stderr, "# close: %s\n", tk_writer_error(m->w));
		abort();
	}
	tk_writer_free(m->w);
	m->w = NULL;
	long n = lseek(fileno(m->f), 0, SEEK_END);
	m->buf = malloc((size_t)n + 1);
	if (!m->buf || pread(fileno(m->f), m->buf, (size_t)n, 0) != n)
		abort();
	m->len = (size_t)n;
	fclose(m->f);
	m->f = NULL;
}

static inline void
mem_free(struct mem_trace *m)
{
	free(m->buf);
	m->buf = NULL;
}

/* Count events until the end; returns the final reader code. */
static inline int
count_events(const uint8_t *buf, size_t len, uint64_t *n)
{
	struct tk_reader *r = tk_reader_new();
	const struct tk_event *e;
	int rc = tk_reader_open_mem(r, buf, len, "mem");
	*n = 0;
	while (rc == TK_OK && (rc = tk_reader_next_event(r, &e)) == TK_OK)
		(*n)++;
	tk_reader_free(r);
	return rc;
}

/* The same through tk_reader_next_columns(). */
static inline int
count_columns(const uint8_t *buf, size_t len, uint64_t *n)
{
	struct tk_reader *r = tk_reader_new();
	struct tk_columns c;
	int rc = tk_reader_open_mem(r, buf, len, "mem");
	*n = 0;
	while (rc == TK_OK && (rc = tk_reader_next_columns(r, &c)) == TK_OK)
		*n += c.n;
	tk_reader_free(r);
	return rc;
}

/* The path of the latest spool of process `pid` in the injection
 * library's spool directory `dir` ("PID-START.tkt"); -1 when none. */
static inline int
latest_spool(const char *dir, long pid, char *path, size_t n)
{
	DIR *d = opendir(dir);
	char best[512] = "", prefix[32];
	struct dirent *de;
	snprintf(prefix, sizeof(prefix), "%ld-", pid);
	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0 && len > 4 &&
		    strcmp(de->d_name + len - 4, ".tkt") == 0 &&
		    strcmp(de->d_name, best) > 0)
			snprintf(best, sizeof(best), "%s", de->d_name);
	}
	if (d)
		closedir(d);
	if (!best[0])
		return -1;
	snprintf(path, n, "%s/%s", dir, best);
	return 0;
}

#endif
