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

/* How much memory exact values may take, shared by the distributions
 * of one owner (one aggregation: the -S budget), and what it cost.  The
 * owner keeps it; each distribution points to it (dist_init_budget()),
 * so owners in different threads share nothing. */
struct dist_budget {
	size_t limit;            /* bytes of exact values at most; SIZE_MAX = none */
	size_t used;             /* bytes the distributions hold now */
	size_t converted;        /* distributions that outgrew it (sketches now) */
};
#define DIST_BUDGET_INIT(limit) { (limit), 0, 0 }

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
	struct dist_budget *budget; /* borrowed; NULL = no limit, not counted */
};

struct summary {
	uint64_t count;
	int64_t total, min, max;
	double mean;
	double std;              /* sample standard deviation (n - 1); 0 if n < 2 */
	double p50, p95, p99;
};

/* An empty distribution with no budget: exact values without limit. */
void dist_init(struct dist *d, int approx);
/* The same within budget `b` (borrowed until dist_free(); NULL = none):
 * the exact values of all the distributions on `b` take at most
 * b->limit bytes; past it, a distribution that grows turns into a
 * sketch, as with approx, and b->converted counts it. */
void dist_init_budget(struct dist *d, int approx, struct dist_budget *b);
/* Frees the values and empties d (on the same budget). */
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
