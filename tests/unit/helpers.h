/* SPDX-License-Identifier: MIT */
/* Shared by the unit tests: traces in memory, a seeded generator. */
#ifndef TK_TEST_HELPERS_H
#define TK_TEST_HELPERS_H

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

#endif
