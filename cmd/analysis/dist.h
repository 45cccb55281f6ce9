/* SPDX-License-Identifier: MIT */
/*
 * A distribution of integer values (durations in ns, bytes): count,
 * total, min, max, and either every value (exact: 8 bytes each) or a
 * relative-error sketch (approximate: constant memory).  Summaries give
 * mean, sample standard deviation and percentiles; trace-stats prints
 * them, trace-diff also takes the raw values for its tests.
 *
 * Percentiles interpolate linearly between the two nearest ranks, at
 * rank q*(n-1): numpy's and pandas' default, so figures match what a
 * notebook computes from the same events.
 */
#ifndef TK_CMD_DIST_H
#define TK_CMD_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "sketch.h"

struct dist {
	uint64_t count;
	int64_t total;           /* saturates at INT64_MAX */
	int64_t min, max;        /* valid when count > 0 */
	int approx;
	/* exact: every value in arrival order (reordered by summaries) */
	int64_t *v;
	size_t cap;
	/* approx: sketch plus running moments (Welford) */
	struct sketch sk;
	double mean, m2;
};

struct summary {
	uint64_t count;
	int64_t total, min, max;
	double mean;
	double std;              /* sample standard deviation (n - 1); 0 if n < 2 */
	double p50, p95, p99;
};

void dist_init(struct dist *d, int approx);
/* At most `bytes` of exact values in all distributions together (the
 * default: no limit); past it, a distribution that grows turns into a
 * sketch, as with approx.  How many did: dist_converted(). */
void dist_set_exact_budget(size_t bytes);
size_t dist_converted(void);
void dist_free(struct dist *d);
/* Add a value; -1 when out of memory. */
int dist_add_slow(struct dist *d, int64_t v);

static inline int
dist_add(struct dist *d, int64_t v)
{
	if (!d->approx && d->count < d->cap) {
		/* the common case, kept inline: one store and a few compares */
		d->v[d->count++] = v;
		if (__builtin_add_overflow(d->total, v, &d->total))
			d->total = INT64_MAX;
		if (v < d->min)
			d->min = v;
		if (v > d->max)
			d->max = v;
		return 0;
	}
	return dist_add_slow(d, v);
}

/* Add every value of `src` (same mode) to `dst`; -1 when out of memory. */
int dist_merge(struct dist *dst, const struct dist *src);

/* Summarise.  Exact mode reorders the values (selection, O(n)). */
void dist_summary(struct dist *d, struct summary *s);

/* Exact mode: the values, in an unspecified order; NULL in approx mode. */
const int64_t *dist_values(const struct dist *d, size_t *n);
/* Exact mode: sort the values ascending (for rank tests). */
void dist_sort(struct dist *d);

/* Exact percentile of n values (reorders them); 0 when n == 0. */
double quantile_exact(int64_t *v, size_t n, double q);

#endif
