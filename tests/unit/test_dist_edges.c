/* SPDX-License-Identifier: MIT */
/*
 * The edges of distributions and sketches (cmd/analysis/dist.c,
 * sketch.c) that test_dist does not reach: quantile_exact() itself,
 * merges across modes (exact into approximate and back) and of empty
 * distributions, and the sketch's ranks and quantiles past its ends.
 * Expected values come from sorting and two-pass sums in this file.
 */
#include <math.h>

#include "tap.h"
#include "helpers.h"
#include "analysis/dist.h"
#include "analysis/sketch.h"

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Quantile by sorting a copy: rank q*(n-1), linear interpolation. */
static double
sorted_quantile(const int64_t *v, size_t n, double q)
{
	int64_t *c = malloc(n * sizeof(*c));
	memcpy(c, v, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_i64);
	double r = q * (double)(n - 1);
	size_t lo = (size_t)floor(r);
	double f = r - (double)lo;
	double x = (double)c[lo];
	if (f > 0 && lo + 1 < n)
		x += f * ((double)c[lo + 1] - x);
	free(c);
	return x;
}

TEST(quantile_exact_against_sorting)
{
	CHECK(quantile_exact(NULL, 0, 0.5) == 0);
	static const double qs[] = { 0, 0.1, 0.25, 0.5, 0.9, 0.95, 0.999, 1 };
	static const size_t sizes[] = { 1, 2, 3, 17, 100, 1001, 5000 };
	int ok = 1;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		int64_t *v = malloc(n * sizeof(*v)), *w = malloc(n * sizeof(*w));
		for (size_t i = 0; i < n; i++)
			v[i] = (int64_t)rnd_below(1000000) - 1000;
		for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
			memcpy(w, v, n * sizeof(*v)); /* it reorders what it gets */
			double got = quantile_exact(w, n, qs[k]);
			double want = sorted_quantile(v, n, qs[k]);
			if (got != want) {
				fprintf(stderr, "# n=%zu q=%g: %.3f != %.3f\n", n,
				        qs[k], got, want);
				ok = 0;
			}
		}
		/* a quantile past 1 is the largest value, not past the end */
		memcpy(w, v, n * sizeof(*v));
		ok &= quantile_exact(w, n, 1.5) == sorted_quantile(v, n, 1);
		free(v);
		free(w);
	}
	CHECK(ok);
}

/* Fill an exact or approximate distribution with v[0..n-1]. */
static void
fill(struct dist *d, int approx, const int64_t *v, size_t n)
{
	dist_init(d, approx);
	for (size_t i = 0; i < n; i++)
		if (dist_add(d, v[i]) < 0)
			abort();
}

/* The summary of a merge of a and b, against the union sorted: exact
 * count, total, min, max; mean and std to rounding; percentiles within
 * the sketch's relative error. */
static int
matches_union(const struct summary *s, const int64_t *a, size_t na,
              const int64_t *b, size_t nb)
{
	size_t n = na + nb;
	int64_t *u = malloc(n * sizeof(*u));
	memcpy(u, a, na * sizeof(*a));
	memcpy(u + na, b, nb * sizeof(*b));
	double sum = 0, ss = 0;
	int64_t total = 0, mn = INT64_MAX, mx = INT64_MIN;
	for (size_t i = 0; i < n; i++) {
		sum += (double)u[i];
		total += u[i];
		mn = u[i] < mn ? u[i] : mn;
		mx = u[i] > mx ? u[i] : mx;
	}
	double mean = sum / (double)n;
	for (size_t i = 0; i < n; i++)
		ss += ((double)u[i] - mean) * ((double)u[i] - mean);
	double sd = sqrt(ss / (double)(n - 1));
	int ok = s->count == n && s->total == total && s->min == mn &&
	         s->max == mx;
	ok &= fabs(s->mean - mean) <= 1e-9 * fabs(mean);
	ok &= fabs(s->std - sd) <= 1e-9 * sd;
	const double qs[3] = { 0.5, 0.95, 0.99 };
	const double got[3] = { s->p50, s->p95, s->p99 };
	for (int j = 0; j < 3; j++) {
		double want = sorted_quantile(u, n, qs[j]);
		if (fabs(got[j] - want) > SKETCH_ALPHA * want) {
			fprintf(stderr, "# q=%g: %.1f, sorted %.1f\n", qs[j],
			        got[j], want);
			ok = 0;
		}
	}
	if (!ok)
		fprintf(stderr, "# count %llu total %lld min %lld max %lld "
		        "mean %.3f/%.3f std %.3f/%.3f\n",
		        (unsigned long long)s->count, (long long)s->total,
		        (long long)s->min, (long long)s->max, s->mean, mean,
		        s->std, sd);
	free(u);
	return ok;
}

TEST(merge_across_modes)
{
	enum { NA = 3000, NB = 2000 };
	int64_t *a = malloc(NA * sizeof(*a)), *b = malloc(NB * sizeof(*b));
	for (size_t i = 0; i < NA; i++)
		a[i] = 1000 + (int64_t)rnd_below(100000);
	/* b reaches below and above a: the merged extremes are b's */
	for (size_t i = 0; i < NB; i++)
		b[i] = i % 2 ? 10 + (int64_t)rnd_below(900)
		             : 200000 + (int64_t)rnd_below(1000000);
	for (int dst_approx = 0; dst_approx <= 1; dst_approx++)
		for (int src_approx = 0; src_approx <= 1; src_approx++) {
			struct dist d, s;
			fill(&d, dst_approx, a, NA);
			fill(&s, src_approx, b, NB);
			CHECK_EQ_INT(dist_merge(&d, &s), 0);
			/* one approximate side makes the result approximate */
			CHECK_EQ_INT(d.approx, dst_approx || src_approx);
			struct summary sum;
			dist_summary(&d, &sum);
			if (!matches_union(&sum, a, NA, b, NB)) {
				fprintf(stderr, "# dst approx %d, src approx %d\n",
				        dst_approx, src_approx);
				CHECK(0);
			}
			dist_free(&d);
			dist_free(&s);
		}
	free(a);
	free(b);
}

TEST(merge_empty)
{
	/* an empty distribution changes nothing, whatever its mode: an
	 * exact one stays exact, an empty approximate one gets no NaN mean */
	for (int dst_approx = 0; dst_approx <= 1; dst_approx++) {
		struct dist d, e;
		dist_init(&d, dst_approx);
		dist_init(&e, 1);
		CHECK_EQ_INT(dist_merge(&d, &e), 0);
		CHECK_EQ_INT(d.approx, dst_approx);
		CHECK_EQ_INT(d.count, 0);
		CHECK(d.mean == 0 && d.m2 == 0);
		CHECK_EQ_INT(d.min, INT64_MAX);
		CHECK_EQ_INT(d.max, INT64_MIN);
		dist_free(&d);
		dist_free(&e);
	}
}

TEST(merge_approx_total_saturates)
{
	/* the total of two approximate halves saturates, as dist_add's */
	struct dist d, s;
	dist_init(&d, 1);
	dist_init(&s, 1);
	CHECK_EQ_INT(dist_add(&d, INT64_MAX / 2 + 10), 0);
	CHECK_EQ_INT(dist_add(&s, INT64_MAX / 2 + 10), 0);
	CHECK_EQ_INT(dist_merge(&d, &s), 0);
	CHECK_EQ_INT(d.total, INT64_MAX);
	CHECK_EQ_INT(d.count, 2);
	dist_free(&d);
	dist_free(&s);
}

TEST(sketch_past_the_ends)
{
	struct sketch s;
	sketch_init(&s);
	CHECK(sketch_quantile(&s, 0.5) == 0); /* empty */
	/* values below 64 have buckets of their own: exact answers */
	static const int64_t v[] = { 17, 3, 42, 9, 30, 5 };
	const size_t n = sizeof(v) / sizeof(v[0]);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ_INT(sketch_add(&s, v[i]), 0);
	double mn = sorted_quantile(v, n, 0), mx = sorted_quantile(v, n, 1);
	CHECK(sketch_quantile(&s, -0.5) == mn);
	CHECK(sketch_quantile(&s, 1.5) == mx);
	CHECK(sketch_quantile(&s, 1e30) == mx); /* no rank out of range */
	CHECK(sketch_quantile(&s, 0.5) == sorted_quantile(v, n, 0.5));
	/* a rank past the last is the largest value */
	CHECK(sketch_rank(&s, n) == mx);
	CHECK(sketch_rank(&s, n + 100) == mx);
	CHECK(sketch_rank(&s, n - 1) == mx);
	CHECK(sketch_rank(&s, 0) == mn);
	sketch_free(&s);

	/* zeros only: every rank, past the end too, is 0 */
	sketch_init(&s);
	CHECK_EQ_INT(sketch_add(&s, 0), 0);
	CHECK_EQ_INT(sketch_add(&s, -5), 0);
	CHECK(sketch_rank(&s, 5) == 0);
	CHECK(sketch_quantile(&s, 1) == 0);
	/* merging an empty sketch changes nothing */
	struct sketch e;
	sketch_init(&e);
	CHECK_EQ_INT(sketch_merge(&s, &e), 0);
	CHECK_EQ_INT(s.n, 2);
	sketch_free(&e);
	sketch_free(&s);
}

int
main(void)
{
	RUN(quantile_exact_against_sorting);
	RUN(merge_across_modes);
	RUN(merge_empty);
	RUN(merge_approx_total_saturates);
	RUN(sketch_past_the_ends);
	return tap_done();
}
