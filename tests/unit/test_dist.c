/* SPDX-License-Identifier: MIT */
/*
 * Distributions (cmd/analysis/dist.c) and the relative-error sketch
 * (cmd/analysis/sketch.c): exact summaries against sorting, the sketch against
 * exact quantiles, on data shaped like durations and on adversarial
 * data for the selection algorithm.
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

/* Check a dist's exact summary against sorting and a two-pass std. */
static int
summary_matches(const int64_t *v, size_t n)
{
	struct dist d;
	dist_init(&d, 0);
	for (size_t i = 0; i < n; i++)
		if (dist_add(&d, v[i]) < 0)
			return 0;
	struct summary s;
	dist_summary(&d, &s);
	int ok = s.count == n;
	double sum = 0, mean, ss = 0;
	int64_t mn = INT64_MAX, mx = INT64_MIN;
	for (size_t i = 0; i < n; i++) {
		sum += (double)v[i];
		mn = v[i] < mn ? v[i] : mn;
		mx = v[i] > mx ? v[i] : mx;
	}
	mean = sum / (double)n;
	for (size_t i = 0; i < n; i++)
		ss += ((double)v[i] - mean) * ((double)v[i] - mean);
	double sd = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
	ok &= s.min == mn && s.max == mx;
	ok &= fabs(s.mean - mean) <= 1e-9 * fabs(mean) + 1e-9;
	ok &= fabs(s.std - sd) <= 1e-9 * sd + 1e-9;
	ok &= s.p50 == sorted_quantile(v, n, 0.50);
	ok &= s.p95 == sorted_quantile(v, n, 0.95);
	ok &= s.p99 == sorted_quantile(v, n, 0.99);
	if (!ok)
		fprintf(stderr, "# n=%zu p50 %.1f/%.1f p95 %.1f/%.1f p99 %.1f/%.1f\n", n,
		        s.p50, sorted_quantile(v, n, 0.5), s.p95,
		        sorted_quantile(v, n, 0.95), s.p99, sorted_quantile(v, n, 0.99));
	dist_free(&d);
	return ok;
}

TEST(exact_small_counts)
{
	int64_t one[] = { 42 };
	CHECK(summary_matches(one, 1));
	int64_t two[] = { 10, 20 };
	CHECK(summary_matches(two, 2));
	int64_t three[] = { 30, 10, 20 };
	CHECK(summary_matches(three, 3));
	struct dist d;
	dist_init(&d, 0);
	struct summary s;
	dist_summary(&d, &s);
	CHECK_EQ_INT(s.count, 0);
	CHECK(s.p50 == 0 && s.mean == 0);
	dist_add(&d, 10);
	dist_add(&d, 20);
	dist_summary(&d, &s);
	/* median of two interpolates; p95 is 95 % of the way */
	CHECK(s.p50 == 15);
	CHECK(fabs(s.p95 - 19.5) < 1e-12);
	CHECK(fabs(s.std - sqrt(50.0)) < 1e-12);
	dist_free(&d);
}

TEST(exact_random_sizes)
{
	/* every size from 1 to 700 crosses the insertion-sort and
	 * sampling thresholds of the selection */
	int64_t *v = malloc(5000 * sizeof(*v));
	int ok = 1;
	for (size_t n = 1; n <= 700 && ok; n += (n < 100 ? 1 : 37)) {
		for (size_t i = 0; i < n; i++)
			v[i] = (int64_t)rnd_below(1000000);
		ok &= summary_matches(v, n);
	}
	CHECK(ok);
	for (size_t i = 0; i < 5000; i++)
		v[i] = (int64_t)rnd_below(1u << 30);
	CHECK(summary_matches(v, 5000));
	free(v);
	/* large counts take the sampling pass: smooth, heavy-tailed,
	 * clustered on few values, and sizes around its threshold */
	size_t big[] = { 19999, 20000, 20001, 65536, 300007 };
	for (size_t t = 0; t < sizeof(big) / sizeof(big[0]); t++) {
		size_t n = big[t];
		int64_t *w = malloc(n * sizeof(*w));
		for (int shape = 0; shape < 4; shape++) {
			for (size_t i = 0; i < n; i++)
				w[i] = shape == 0 ? (int64_t)rnd_below(1000000)
				     : shape == 1 ? (int64_t)(1000 / (1e-6 + (double)rnd_below(1000000) / 1e6))
				     : shape == 2 ? (int64_t)rnd_below(7) * 100
				     : (rnd_below(100) < 97 ? 5000 : (int64_t)rnd_below(1u << 20));
			int r = summary_matches(w, n);
			if (!r)
				fprintf(stderr, "# n %zu shape %d\n", n, shape);
			CHECK(r);
		}
		free(w);
	}
}

TEST(exact_adversarial_orders)
{
	size_t n = 100003;
	int64_t *v = malloc(n * sizeof(*v));
	int ok = 1;
	for (int pattern = 0; pattern < 7; pattern++) {
		for (size_t i = 0; i < n; i++) {
			switch (pattern) {
			case 0: v[i] = (int64_t)i; break;                 /* sorted */
			case 1: v[i] = (int64_t)(n - i); break;           /* reversed */
			case 2: v[i] = 7; break;                          /* all equal */
			case 3: v[i] = (int64_t)(i % 3); break;           /* few values */
			case 4: v[i] = i < n / 2 ? (int64_t)i : (int64_t)(n - i); break; /* organ pipe */
			case 5: v[i] = i % 2 ? 1 : INT64_MAX / 4; break;  /* two extremes */
			case 6: v[i] = (int64_t)(rnd_below(4)) * 1000 + (int64_t)rnd_below(2); break;
			}
		}
		int r = summary_matches(v, n);
		if (!r)
			fprintf(stderr, "# pattern %d\n", pattern);
		ok &= r;
	}
	CHECK(ok);
	free(v);
}

TEST(exact_values_exposed)
{
	/* trace-diff takes the raw values: all there, in any order */
	struct dist d;
	dist_init(&d, 0);
	int64_t sum = 0;
	/* added out of order (7919 is prime to 1000: each of 0..999 once),
	 * so that dist_sort has something to do */
	for (int i = 0; i < 1000; i++) {
		dist_add(&d, (i * 7919 % 1000) * 3);
		sum += i * 3;
	}
	struct summary s;
	dist_summary(&d, &s);
	size_t n;
	const int64_t *v = dist_values(&d, &n);
	CHECK_EQ_INT(n, 1000);
	int64_t t = 0;
	for (size_t i = 0; i < n; i++)
		t += v[i];
	CHECK_EQ_INT(t, sum);
	dist_sort(&d);
	v = dist_values(&d, &n);
	int sorted = 1;
	for (size_t i = 1; i < n; i++)
		sorted &= v[i - 1] <= v[i];
	CHECK(sorted);
	CHECK_EQ_INT(s.total, sum);
	dist_free(&d);
}

TEST(exact_merge_and_saturation)
{
	struct dist a, b;
	dist_init(&a, 0);
	dist_init(&b, 0);
	for (int i = 0; i < 10; i++) {
		dist_add(&a, i);
		dist_add(&b, 100 + i);
	}
	CHECK(dist_merge(&a, &b) == 0);
	struct summary s;
	dist_summary(&a, &s);
	CHECK_EQ_INT(s.count, 20);
	CHECK_EQ_INT(s.min, 0);
	CHECK_EQ_INT(s.max, 109);
	CHECK(s.p50 == 54.5);
	dist_free(&a);
	dist_free(&b);
	/* a total past INT64_MAX saturates; the mean still comes out */
	dist_init(&a, 0);
	dist_add(&a, INT64_MAX - 1);
	dist_add(&a, INT64_MAX - 1);
	dist_summary(&a, &s);
	CHECK(s.total == INT64_MAX);
	CHECK(fabs(s.mean - (double)(INT64_MAX - 1)) < 1e4);
	dist_free(&a);
}

/* ---- sketch -------------------------------------------------------------------- */

static double
rel_err(double est, double exact)
{
	if (exact == 0)
		return est == 0 ? 0 : INFINITY;
	return fabs(est - exact) / fabs(exact);
}

/* Worst relative error of the sketch over many quantiles. */
static double
sketch_worst(const int64_t *v, size_t n)
{
	struct sketch sk;
	sketch_init(&sk);
	for (size_t i = 0; i < n; i++)
		sketch_add(&sk, v[i]);
	int64_t *c = malloc(n * sizeof(*c));
	memcpy(c, v, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_i64);
	double worst = 0;
	for (int k = 0; k <= 1000; k++) {
		double q = k / 1000.0;
		double r = q * (double)(n - 1);
		size_t lo = (size_t)floor(r);
		double f = r - (double)lo;
		double x = (double)c[lo];
		if (f > 0 && lo + 1 < n)
			x += f * ((double)c[lo + 1] - x);
		double e = rel_err(sketch_quantile(&sk, q), x);
		if (e > worst)
			worst = e;
	}
	free(c);
	sketch_free(&sk);
	return worst;
}

static double
normal(void)
{
	double u1 = ((double)(rnd() >> 11) + 1) * 0x1.0p-53;
	double u2 = (double)(rnd() >> 11) * 0x1.0p-53;
	return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

TEST(sketch_within_one_percent)
{
	size_t n = 200000;
	int64_t *v = malloc(n * sizeof(*v));
	double worst = 0, w;
	/* log-normal, like kernel durations */
	for (size_t i = 0; i < n; i++)
		v[i] = (int64_t)(50000 * exp(0.6 * normal())) + 1;
	worst = fmax(worst, w = sketch_worst(v, n));
	CHECK(w <= 0.01);
	/* uniform over six decades */
	for (size_t i = 0; i < n; i++)
		v[i] = (int64_t)exp((double)rnd_below(1000000) / 1000000.0 * 13.8) + 1;
	worst = fmax(worst, w = sketch_worst(v, n));
	CHECK(w <= 0.01);
	/* bimodal: cache hits and misses */
	for (size_t i = 0; i < n; i++)
		v[i] = rnd_below(10) < 9 ? 800 + (int64_t)rnd_below(50)
		                         : 2000000 + (int64_t)rnd_below(900000);
	worst = fmax(worst, w = sketch_worst(v, n));
	CHECK(w <= 0.01);
	/* small integers, zeros and huge values */
	for (size_t i = 0; i < n; i++)
		v[i] = i % 7 == 0 ? 0 : i % 5 == 0 ? (int64_t)rnd_below(5) + 1
		     : i % 11 == 0 ? (INT64_MAX / 2 - (int64_t)rnd_below(1000)) : 3000;
	worst = fmax(worst, w = sketch_worst(v, n));
	CHECK(w <= 0.01);
	fprintf(stderr, "# worst relative error %.5f (bound %.4f)\n", worst,
	        (double)SKETCH_ALPHA);
	free(v);
}

TEST(sketch_constant_memory)
{
	struct sketch sk;
	sketch_init(&sk);
	int64_t mn = INT64_MAX, mx = 0;
	for (int i = 0; i < 4000000; i++) {
		int64_t x = (int64_t)(1000 * exp(0.5 * normal())) + 1;
		mn = x < mn ? x : mn;
		mx = x > mx ? x : mx;
		sketch_add(&sk, x);
	}
	/* memory follows the range of the values, not their number: at
	 * most the buckets between min and max, plus the growth margin */
	double need = log2((double)mx / (double)mn) * (1 << SKETCH_SUB_BITS) + 2;
	CHECK(sk.nbuckets <= 1.5 * need + 32);
	fprintf(stderr, "# 4M values over [%lld, %lld]: %u buckets, %zu bytes\n",
	        (long long)mn, (long long)mx, sk.nbuckets, sketch_bytes(&sk));
	/* and whatever the values, it stays under 1 ns..2^63 ns buckets */
	for (int i = 0; i < 63; i++)
		sketch_add(&sk, (int64_t)1 << i);
	sketch_add(&sk, INT64_MAX);
	CHECK(sketch_bytes(&sk) < 64 * 64 * 8 + 1024);
	CHECK_EQ_INT(sk.n, 4000064);
	sketch_free(&sk);
}

TEST(sketch_merge_equals_union)
{
	struct sketch a, b, u;
	sketch_init(&a);
	sketch_init(&b);
	sketch_init(&u);
	for (int i = 0; i < 10000; i++) {
		int64_t x = (int64_t)rnd_below(100000), y = (int64_t)rnd_below(1000) * 1000;
		sketch_add(&a, x);
		sketch_add(&b, y);
		sketch_add(&u, x);
		sketch_add(&u, y);
	}
	CHECK(sketch_merge(&a, &b) == 0);
	int same = a.n == u.n;
	for (int k = 0; k <= 100; k++)
		same &= sketch_quantile(&a, k / 100.0) == sketch_quantile(&u, k / 100.0);
	CHECK(same);
	sketch_free(&a);
	sketch_free(&b);
	sketch_free(&u);
}

TEST(approx_summary)
{
	struct dist d, e;
	dist_init(&d, 1);
	dist_init(&e, 0);
	for (int i = 0; i < 100000; i++) {
		int64_t x = (int64_t)(20000 * exp(0.3 * normal())) + 1;
		dist_add(&d, x);
		dist_add(&e, x);
	}
	struct summary s, t;
	dist_summary(&d, &s);
	dist_summary(&e, &t);
	CHECK(s.count == t.count && s.total == t.total);
	CHECK(s.min == t.min && s.max == t.max);
	CHECK(rel_err(s.mean, t.mean) < 1e-9);
	CHECK(rel_err(s.std, t.std) < 1e-6);
	CHECK(rel_err(s.p50, t.p50) <= 0.01);
	CHECK(rel_err(s.p95, t.p95) <= 0.01);
	CHECK(rel_err(s.p99, t.p99) <= 0.01);
	size_t n;
	CHECK(dist_values(&d, &n) == NULL && n == 0);
	/* merging approximate distributions combines the moments exactly */
	struct dist f;
	dist_init(&f, 1);
	dist_add(&f, 5);
	dist_add(&f, 15);
	struct dist g;
	dist_init(&g, 1);
	dist_add(&g, 25);
	CHECK(dist_merge(&f, &g) == 0);
	dist_summary(&f, &s);
	CHECK(s.count == 3 && s.total == 45 && s.min == 5 && s.max == 25);
	CHECK(fabs(s.mean - 15) < 1e-12 && fabs(s.std - 10) < 1e-12);
	dist_free(&d);
	dist_free(&e);
	dist_free(&f);
	dist_free(&g);
}

/* Past the exact budget, the distribution that grows becomes a sketch:
 * counts, totals, extremes and moments unchanged, percentiles within 1 %,
 * and the others stay exact. */
TEST(exact_budget_turns_growers_into_sketches)
{
	struct dist_budget b = DIST_BUDGET_INIT(64 * 1024);
	struct dist small, big, ref;
	dist_init_budget(&small, 0, &b);
	dist_init_budget(&big, 0, &b);
	dist_init(&ref, 0);      /* no budget: the reference stays exact */
	for (int i = 0; i < 10; i++)
		dist_add(&small, i);
	for (int i = 0; i < 100000; i++) {
		int64_t x = (int64_t)(20000 * exp(0.3 * normal())) + 1;
		dist_add(&big, x);
		dist_add(&ref, x);
	}
	CHECK_EQ_INT(b.converted, 1);
	CHECK(b.used <= b.limit);
	CHECK(big.approx && !small.approx && !ref.approx);
	struct summary s, t;
	dist_summary(&big, &s);
	dist_summary(&ref, &t);
	CHECK(s.count == t.count && s.total == t.total);
	CHECK(s.min == t.min && s.max == t.max);
	CHECK(rel_err(s.mean, t.mean) < 1e-9);
	CHECK(rel_err(s.std, t.std) < 1e-6);
	CHECK(rel_err(s.p50, t.p50) <= 0.01);
	CHECK(rel_err(s.p99, t.p99) <= 0.01);
	dist_summary(&small, &s);
	CHECK(s.count == 10 && s.p50 == 4.5);
	/* an exact one merged with a sketch becomes one */
	CHECK(dist_merge(&small, &big) == 0);
	CHECK(small.approx && small.count == 100010);
	CHECK_EQ_INT(b.converted, 2);
	dist_free(&small);
	dist_free(&big);
	CHECK_EQ_INT(b.used, 0);
	dist_free(&ref);
}

/* Two budgets share nothing: what one spends the other does not see
 * (trace-diff fills two aggregations in two threads). */
TEST(budgets_are_separate)
{
	struct dist_budget b1 = DIST_BUDGET_INIT(4096), b2 = DIST_BUDGET_INIT(SIZE_MAX);
	struct dist d1, d2;
	dist_init_budget(&d1, 0, &b1);
	dist_init_budget(&d2, 0, &b2);
	for (int i = 0; i < 10000; i++) {
		dist_add(&d1, i);
		dist_add(&d2, i);
	}
	CHECK(d1.approx && !d2.approx);
	CHECK_EQ_INT(b1.converted, 1);
	CHECK_EQ_INT(b1.used, 0);
	CHECK_EQ_INT(b2.converted, 0);
	CHECK(b2.used >= 10000 * sizeof(int64_t));
	dist_free(&d1);
	dist_free(&d2);
	CHECK_EQ_INT(b2.used, 0);
}

int
main(void)
{
	RUN(exact_small_counts);
	RUN(exact_random_sizes);
	RUN(exact_adversarial_orders);
	RUN(exact_values_exposed);
	RUN(exact_merge_and_saturation);
	RUN(sketch_within_one_percent);
	RUN(sketch_constant_memory);
	RUN(sketch_merge_equals_union);
	RUN(approx_summary);
	RUN(exact_budget_turns_growers_into_sketches);
	RUN(budgets_are_separate);
	return tap_done();
}
