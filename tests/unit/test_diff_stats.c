/* SPDX-License-Identifier: MIT */
/*
 * trace-diff's statistics (cmd/analysis/stattest.c, cmd/analysis/sort.c): p-values
 * against scipy 1.10 (the values below were computed once with
 * scipy.stats.mannwhitneyu, ttest_ind(equal_var=False), t.sf and
 * special.betainc on the same samples; the script is in the comments),
 * the exact distributions against brute-force counts over every
 * arrangement, the verdict rule, and the rate of false verdicts on pure
 * noise.
 */
#include <math.h>

#include "tap.h"
#include "helpers.h"
#include "analysis/stattest.h"

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static void
sort(int64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_i64);
}

/* |a - b| within a relative tolerance (or absolute, near 0). */
static int
close_to(double a, double b, double rel)
{
	return fabs(a - b) <= rel * fabs(b) || fabs(a - b) < 1e-300;
}

#define CHECK_CLOSE(a, b, rel)                                                \
	do {                                                                  \
		double a_ = (a), b_ = (b);                                    \
		if (!close_to(a_, b_, rel)) {                                 \
			fprintf(stderr, "# %s:%d: %s = %.17g, want %.17g\n",  \
			        __FILE__, __LINE__, #a, a_, b_);              \
			tap_current_failed = 1;                               \
		}                                                             \
	} while (0)

/* The generators of the scipy script:
 *   odd(n, a, c, m, off)  = [2*((a*i + c) % m) + 1 + off for i in range(n)]
 *   even(n, a, c, m, off) = [2*((a*i + c) % m) + off for i in range(n)]
 *   gen(n, a, c, m, off)  = [(a*i + c) % m + off for i in range(n)]
 * (odd and even samples never tie with each other). */
static int64_t *
gen(size_t n, int64_t a, int64_t c, int64_t m, int64_t off, int kind)
{
	int64_t *v = malloc((n ? n : 1) * sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		int64_t r = (a * (int64_t)i + c) % m;
		v[i] = kind == 0 ? r + off : kind == 1 ? 2 * r + 1 + off : 2 * r + off;
	}
	sort(v, n);
	return v;
}
enum { PLAIN, ODD, EVEN };

/* ---- sorting ------------------------------------------------------------------------ */

TEST(radix_sort_matches_qsort)
{
	static const size_t sizes[] = { 0, 1, 2, 63, 64, 65, 1000, 100000 };
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		for (int shape = 0; shape < 4; shape++) {
			int64_t *a = malloc((n + 1) * sizeof(*a));
			int64_t *b = malloc((n + 1) * sizeof(*b));
			for (size_t i = 0; i < n; i++) {
				uint64_t r = rnd();
				a[i] = shape == 0 ? (int64_t)(r % 1000000)        /* durations */
				     : shape == 1 ? (int64_t)r                    /* any, negative too */
				     : shape == 2 ? (int64_t)(r % 7) - 3          /* many ties */
				     : (int64_t)(n - i) << 20;                    /* descending */
				b[i] = a[i];
			}
			/* with the caller's scratch space, or its own */
			int64_t *scratch = shape % 2 ? malloc((n + 1) * sizeof(*scratch)) : NULL;
			CHECK(diff_sort_i64(a, n, scratch) == 0);
			free(scratch);
			sort(b, n);
			CHECK(n == 0 || memcmp(a, b, n * sizeof(*a)) == 0);
			free(a);
			free(b);
		}
	}
	int64_t ext[70];
	for (int i = 0; i < 70; i++)
		ext[i] = i % 2 ? INT64_MIN + i : INT64_MAX - i;
	CHECK(diff_sort_i64(ext, 70, NULL) == 0);
	int ok = 1;
	for (int i = 1; i < 70; i++)
		ok &= ext[i - 1] <= ext[i];
	CHECK(ok);
}

/* ---- Mann-Whitney U against scipy -------------------------------------------------------- */

struct mwu_ref {
	const char *what;
	int64_t *x, *y;
	size_t nx, ny;
	double u, p;
	enum diff_test test;
};

static void
check_ref(const struct mwu_ref *c)
{
	struct diff_test_result r;
	CHECK(diff_mwu(c->x, c->nx, c->y, c->ny, &r) == 0);
	if (r.test != c->test || !close_to(r.u, c->u, 1e-15) ||
	    !close_to(r.p, c->p, r.test == TEST_MWU_EXACT ? 1e-12 : 1e-9)) {
		fprintf(stderr, "# %s: test %d U %.1f p %.17g; want test %d U %.1f p %.17g\n",
		        c->what, r.test, r.u, r.p, c->test, c->u, c->p);
		tap_current_failed = 1;
	}
}

TEST(mwu_matches_scipy)
{
	/* scipy.stats.mannwhitneyu(x, y, alternative="two-sided",
	 * method="exact" or "asymptotic", use_continuity=True) */
	int64_t sx[] = { 9, 12, 15, 20, 31 }, sy[] = { 19, 22, 28, 33, 35, 40 };
	struct mwu_ref cases[] = {
		{ "small", sx, sy, 5, 6, 4.0, 0.051948051948051951, TEST_MWU_EXACT },
		{ "exact_10_40", gen(10, 7919, 13, 1009, 2000, ODD),
		  gen(40, 104729, 7, 1013, 2100, EVEN), 10, 40, 207.0,
		  0.87669476400092483, TEST_MWU_EXACT },
		/* 3 against 500: the normal approximation says 0.0041 */
		{ "exact_3_500", gen(3, 17, 5, 1000, 3400, ODD),
		  gen(500, 7919, 3, 100003, 0, EVEN), 3, 500, 30.0,
		  9.874669012430176e-05, TEST_MWU_EXACT },
		{ "exact_25_30", gen(25, 7919, 13, 1009, 0, ODD),
		  gen(30, 104729, 7, 1013, 300, EVEN), 25, 30, 315.0,
		  0.31725592173528394, TEST_MWU_EXACT },
		{ "normal_2000_2500", gen(2000, 7919, 1, 1000003, 0, ODD),
		  gen(2500, 104729, 5, 999983, 30000, EVEN), 2000, 2500, 2405637.0,
		  0.029334157154094025, TEST_MWU_NORMAL },
		/* heavy ties: 50 and 53 distinct values among 700 */
		{ "normal_300_400_ties", gen(300, 37, 11, 50, 100, PLAIN),
		  gen(400, 41, 3, 53, 102, PLAIN), 300, 400, 52020.0,
		  0.0025753046592280893, TEST_MWU_NORMAL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		check_ref(&cases[i]);
		if (i > 0) {
			free(cases[i].x);
			free(cases[i].y);
		}
	}
}

TEST(mwu_direction_and_degenerate_cases)
{
	int64_t lo[] = { 1, 2, 3, 4, 5, 6 }, hi[] = { 10, 11, 12, 13, 14, 15 };
	struct diff_test_result r;
	CHECK(diff_mwu(lo, 6, hi, 6, &r) == 0);
	CHECK(r.direction == 1);          /* the second sample is larger */
	CHECK(r.u == 0);
	CHECK_CLOSE(r.p, 2.0 / 924, 1e-12); /* one arrangement of C(12, 6) each way */
	CHECK(diff_mwu(hi, 6, lo, 6, &r) == 0);
	CHECK(r.direction == -1 && r.u == 36);
	/* all equal: nothing to tell apart, exact and normal alike */
	int64_t same[200];
	for (int i = 0; i < 200; i++)
		same[i] = 7;
	CHECK(diff_mwu(same, 20, same, 20, &r) == 0);
	CHECK(r.p == 1 && r.direction == 0);
	CHECK(diff_mwu(same, 100, same, 100, &r) == 0);
	CHECK(r.p == 1 && r.direction == 0 && r.test == TEST_MWU_NORMAL);
	/* empty and single samples */
	CHECK(diff_mwu(lo, 0, hi, 6, &r) == 0);
	CHECK(r.test == TEST_NONE && r.p == 1);
	CHECK(diff_mwu(lo, 1, hi, 1, &r) == 0);
	CHECK(r.test == TEST_MWU_EXACT && r.p == 1);
}

/* ---- exact distributions against brute force ------------------------------------------ */

/* The two-sided p of the exact test counted over every way of choosing
 * which nx of the pooled values are the first sample, U from pairwise
 * comparisons (no ranks): twice the smaller tail, at most 1. */
static double
brute_p(const int64_t *x, size_t nx, const int64_t *y, size_t ny)
{
	size_t n = nx + ny;
	int64_t pool[32];
	memcpy(pool, x, nx * sizeof(*x));
	memcpy(pool + nx, y, ny * sizeof(*y));
	double u_obs = 0;
	for (size_t i = 0; i < nx; i++)
		for (size_t j = 0; j < ny; j++)
			u_obs += x[i] > y[j] ? 1 : x[i] == y[j] ? 0.5 : 0;
	uint64_t lo = 0, hi = 0, all = 0;
	for (uint32_t mask = 0; mask < (1u << n); mask++) {
		if ((size_t)__builtin_popcount(mask) != nx)
			continue;
		double u = 0;
		for (size_t i = 0; i < n; i++) {
			if (!(mask >> i & 1))
				continue;
			for (size_t j = 0; j < n; j++)
				if (!(mask >> j & 1))
					u += pool[i] > pool[j] ? 1 : pool[i] == pool[j] ? 0.5 : 0;
		}
		all++;
		lo += u <= u_obs + 1e-9;
		hi += u >= u_obs - 1e-9;
	}
	double p = 2.0 * (double)(lo < hi ? lo : hi) / (double)all;
	return p < 1 ? p : 1;
}

TEST(mwu_exact_matches_brute_force)
{
	int bad = 0, tied_cases = 0, untied_cases = 0;
	for (int trial = 0; trial < 400; trial++) {
		size_t nx = 1 + rnd_below(8), ny = 1 + rnd_below(8);
		int64_t x[8], y[8];
		/* half the trials draw from a few values: ties */
		uint64_t range = trial % 2 ? 6 : 1000000;
		uint64_t shift = rnd_below(3) * (range / 4);
		for (size_t i = 0; i < nx; i++)
			x[i] = (int64_t)rnd_below(range);
		for (size_t j = 0; j < ny; j++)
			y[j] = (int64_t)(rnd_below(range) + shift);
		sort(x, nx);
		sort(y, ny);
		struct diff_test_result r;
		CHECK(diff_mwu(x, nx, y, ny, &r) == 0);
		CHECK(r.test == TEST_MWU_EXACT);
		double want = brute_p(x, nx, y, ny);
		if (!close_to(r.p, want, 1e-12)) {
			if (bad++ < 5)
				fprintf(stderr, "# nx %zu ny %zu: p %.17g, brute force %.17g\n",
				        nx, ny, r.p, want);
		}
		int tied = 0;
		for (size_t i = 0; i < nx; i++)
			for (size_t j = 0; j < ny; j++)
				tied |= x[i] == y[j];
		tied_cases += tied;
		untied_cases += !tied;
	}
	CHECK(bad == 0);
	/* both exact algorithms were exercised */
	CHECK(tied_cases > 50 && untied_cases > 50);
}

TEST(mwu_exact_and_normal_agree_in_between)
{
	/* 30 against 34 values: exact (64 values); the normal approximation
	 * of the same samples must be close, the check that both compute
	 * the same statistic the same way round */
	int64_t x[30], y[34];
	for (int trial = 0; trial < 20; trial++) {
		for (int i = 0; i < 30; i++)
			x[i] = (int64_t)rnd_below(1000000);
		for (int j = 0; j < 34; j++)
			y[j] = (int64_t)rnd_below(1000000) + (int64_t)(trial * 15000);
		sort(x, 30);
		sort(y, 34);
		struct diff_test_result r;
		CHECK(diff_mwu(x, 30, y, 34, &r) == 0);
		CHECK(r.test == TEST_MWU_EXACT);
		double mu = 30.0 * 34 / 2, sd = sqrt(30.0 * 34 * 65 / 12);
		double d = fabs(r.u - mu) - 0.5;
		double approx = diff_normal_sf2((d > 0 ? d : 0) / sd);
		CHECK(fabs(r.p - approx) < 0.01 + 0.05 * approx);
	}
}

TEST(mwu_counted_matches_sorted)
{
	/* dense values (fewer integers in their range than values) are
	 * counted, sparse ones sorted: the same U, p and test either way */
	int counted = 0;
	for (int trial = 0; trial < 60; trial++) {
		size_t nx = 1 + rnd_below(3000), ny = 1 + rnd_below(3000);
		uint64_t range = trial % 3 == 0 ? 50 : trial % 3 == 1 ? 2 * (nx + ny) : nx + ny;
		int64_t base = (int64_t)rnd_below(1000000) - 500000;
		int64_t *x = malloc(nx * sizeof(*x)), *y = malloc(ny * sizeof(*y));
		int64_t *xs = malloc(nx * sizeof(*x)), *ys = malloc(ny * sizeof(*y));
		for (size_t i = 0; i < nx; i++)
			xs[i] = x[i] = base + (int64_t)rnd_below(range);
		for (size_t j = 0; j < ny; j++)
			ys[j] = y[j] = base + (int64_t)rnd_below(range) + (int64_t)(trial % 5);
		sort(xs, nx);
		sort(ys, ny);
		struct diff_test_result a, b;
		CHECK(diff_mwu_any(x, nx, y, ny, NULL, &a) == 0);
		CHECK(diff_mwu(xs, nx, ys, ny, &b) == 0);
		CHECK(a.test == b.test && a.u == b.u && a.p == b.p && a.direction == b.direction);
		uint64_t lo = UINT64_MAX, hi = 0;
		for (size_t i = 0; i < nx; i++) {
			lo = (uint64_t)(xs[i] - base) < lo ? (uint64_t)(xs[i] - base) : lo;
			hi = (uint64_t)(xs[i] - base) > hi ? (uint64_t)(xs[i] - base) : hi;
		}
		for (size_t j = 0; j < ny; j++) {
			lo = (uint64_t)(ys[j] - base) < lo ? (uint64_t)(ys[j] - base) : lo;
			hi = (uint64_t)(ys[j] - base) > hi ? (uint64_t)(ys[j] - base) : hi;
		}
		counted += nx + ny > DIFF_EXACT_TIED_N && hi - lo < nx + ny;
		free(x);
		free(y);
		free(xs);
		free(ys);
	}
	/* both ways were taken */
	CHECK(counted > 10 && counted < 55);
}

/* ---- Welch's t-test and the distributions against scipy ------------------------------------- */

TEST(welch_matches_scipy)
{
	/* scipy.stats.ttest_ind(x, y, equal_var=False); our t is y - x */
	double x1[] = { 1.0, 2.1, 2.9, 4.2 }, y1[] = { 3.1, 4.4, 5.0, 6.2, 7.9 };
	double x2[] = { 1021.5e6, 1019.2e6, 1025.0e6 };
	double y2[] = { 340.1e6, 341.7e6, 339.0e6, 342.2e6 };
	double x3[] = { 10.0, 10.5, 9.8, 10.1, 10.2, 9.9 };
	double y3[] = { 10.3, 10.1, 10.6, 10.2, 10.4, 10.0 };
	struct diff_test_result r;
	diff_welch_values(x1, 4, y1, 5, &r);
	CHECK(r.test == TEST_WELCH && r.direction == 1);
	CHECK_CLOSE(r.z, 2.6179104655971774, 1e-12);
	CHECK_CLOSE(r.p, 0.034579410143173096, 1e-9);
	diff_welch_values(x2, 3, y2, 4, &r);
	CHECK(r.direction == -1);
	CHECK_CLOSE(r.z, -370.26860445953514, 1e-12);
	CHECK_CLOSE(r.p, 1.4061215265538487e-07, 1e-8);
	diff_welch_values(x3, 6, y3, 6, &r);
	CHECK_CLOSE(r.p, 0.20292024120546939, 1e-9);
	/* too few runs: no test */
	diff_welch_values(x1, 1, y1, 5, &r);
	CHECK(r.test == TEST_NONE && r.p == 1);
	/* no spread: a difference is certain, none is not */
	double c1[] = { 5, 5, 5 }, c2[] = { 6, 6 };
	diff_welch_values(c1, 3, c2, 2, &r);
	CHECK(r.p == 0 && r.direction == 1);
	diff_welch_values(c1, 3, c1, 2, &r);
	CHECK(r.p == 1 && r.direction == 0);
}

TEST(distributions_match_scipy)
{
	/* scipy.special.betainc(a, b, x) */
	CHECK_CLOSE(diff_betainc(0.5, 0.5, 0.3), 0.36901011956554541, 1e-12);
	CHECK_CLOSE(diff_betainc(2, 3, 0.4), 0.52479999999999993, 1e-12);
	CHECK_CLOSE(diff_betainc(10, 0.5, 0.9), 0.15164090963470997, 1e-12);
	CHECK_CLOSE(diff_betainc(50, 0.5, 0.99), 0.31730439787419623, 1e-11);
	CHECK_CLOSE(diff_betainc(1.5, 0.5, 0.001), 1.342515172319684e-05, 1e-11);
	/* 2 * scipy.stats.t.sf(t, df) */
	CHECK_CLOSE(diff_t_sf2(2.0, 3.0), 0.13932596855884311, 1e-11);
	CHECK_CLOSE(diff_t_sf2(4.6, 4.0), 0.010030893170196245, 1e-11);
	CHECK_CLOSE(diff_t_sf2(1.0, 100.0), 0.31972415578412361, 1e-11);
	CHECK_CLOSE(diff_t_sf2(10.0, 2.5), 0.0044414957673074218, 1e-11);
	/* 2 * scipy.stats.norm.sf(z) */
	CHECK_CLOSE(diff_normal_sf2(1.959963984540054), 0.05, 1e-12);
	CHECK_CLOSE(diff_normal_sf2(-2.5758293035489004), 0.01, 1e-12);
	CHECK_CLOSE(diff_normal_sf2(10), 1.5239706048320995e-23, 1e-9);
}

/* ---- the verdict rule ---------------------------------------------------------------------- */

TEST(verdict_rule)
{
	const double th = 0.05, a = 0.01;
	/* within the threshold: same, however significant */
	CHECK(diff_decide(1.04, th, a, 1e-30, 1, -1, 0) == V_SAME);
	CHECK(diff_decide(0.96, th, a, 1e-30, -1, -1, 0) == V_SAME);
	CHECK(diff_decide(1.0, th, a, 1, 0, -1, 0) == V_SAME);
	/* beyond it and significant, the same way round */
	CHECK(diff_decide(1.30, th, a, 1e-6, 1, -1, 0) == V_SLOWER);
	CHECK(diff_decide(0.33, th, a, 1e-6, -1, -1, 0) == V_FASTER);
	/* beyond it but not significant, or the test pointing the other way */
	CHECK(diff_decide(1.30, th, a, 0.02, 1, -1, 0) == V_UNSURE);
	CHECK(diff_decide(1.30, th, a, 0.01, 1, -1, 0) == V_UNSURE);
	CHECK(diff_decide(1.30, th, a, 1e-6, -1, -1, 0) == V_UNSURE);
	/* the level is alpha's (the run-wide figures of repeated runs) */
	CHECK(diff_decide(1.30, th, 0.05, 0.02, 1, -1, 0) == V_SLOWER);
	/* a runs' test must agree too */
	CHECK(diff_decide(1.30, th, a, 1e-6, 1, 1e-4, 1) == V_SLOWER);
	CHECK(diff_decide(1.30, th, a, 1e-6, 1, 0.2, 1) == V_UNSURE);
	CHECK(diff_decide(1.30, th, a, 1e-6, 1, 1e-4, -1) == V_UNSURE);
	/* an infinite ratio (a median of 0 before) is beyond any threshold */
	CHECK(diff_decide(INFINITY, th, a, 1e-6, 1, -1, 0) == V_SLOWER);
	/* threshold 0: the test alone */
	CHECK(diff_decide(1.001, 0, a, 1e-6, 1, -1, 0) == V_SLOWER);
	CHECK(diff_decide(1.0, 0, a, 1e-6, 1, -1, 0) == V_SAME);
	CHECK_STR(diff_verdict_names[V_UNSURE], "unsure");
	CHECK_STR(diff_verdict_names[V_GONE], "gone");
}

/* ---- false verdicts on pure noise, and power on real changes ------------------------------- */

static double
normal_draw(void)
{
	double u1 = ((double)(rnd() >> 11) + 0.5) * 0x1.0p-53;
	double u2 = (double)(rnd() >> 11) * 0x1.0p-53;
	return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

/* A duration like synth's: around base, multiplicative jitter, and
 * with `outliers` a 1-in-50 chance of a 3x hiccup (preemption). */
static int64_t
duration(double base, double noise, int outliers)
{
	double v = base * exp(noise * normal_draw());
	if (outliers && rnd_below(50) == 0)
		v *= 3;
	return (int64_t)v;
}

static double
median_of(const int64_t *v, size_t n)
{
	return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
}

struct rates {
	int trials, p_below, changes;
};

/* `trials` comparisons of samples of random sizes from the same
 * distribution, times `factor` for the second. */
static struct rates
simulate(int trials, double factor, double noise, int outliers, double threshold,
         double alpha)
{
	static const size_t sizes[] = { 2, 3, 5, 8, 12, 20, 30, 50, 100, 400, 2000 };
	struct rates r = { trials, 0, 0 };
	int64_t *x = malloc(2000 * sizeof(*x)), *y = malloc(2000 * sizeof(*y));
	for (int t = 0; t < trials; t++) {
		size_t nx = sizes[rnd_below(11)], ny = sizes[rnd_below(11)];
		double base = 1000 + (double)rnd_below(1000000);
		for (size_t i = 0; i < nx; i++)
			x[i] = duration(base, noise, outliers);
		for (size_t j = 0; j < ny; j++)
			y[j] = duration(base * factor, noise, outliers);
		diff_sort_i64(x, nx, NULL);
		diff_sort_i64(y, ny, NULL);
		struct diff_test_result res;
		diff_mwu(x, nx, y, ny, &res);
		r.p_below += res.p < alpha;
		double ratio = median_of(y, ny) / median_of(x, nx);
		enum diff_verdict v = diff_decide(ratio, threshold, alpha, res.p,
		                                  res.direction, -1, 0);
		r.changes += v == V_FASTER || v == V_SLOWER;
	}
	free(x);
	free(y);
	return r;
}

TEST(noise_is_rarely_called_a_change)
{
	const double alpha = 0.01;
	const int n = 6000;
	/* the test alone is calibrated: p < alpha in about alpha of the
	 * trials (exact tests a little less), never far more.  With 6000
	 * trials the binomial standard deviation is 0.0013: 0.0165 is more
	 * than five of them above alpha. */
	struct rates raw = simulate(n, 1.0, 0.05, 0, 0, alpha);
	double raw_rate = (double)raw.p_below / raw.trials;
	fprintf(stderr, "# noise 5%%: p < alpha in %d of %d (%.4f)\n",
	        raw.p_below, raw.trials, raw_rate);
	CHECK(raw_rate <= 0.0165);
	CHECK(raw_rate >= 0.003);            /* and it is a real test */
	/* with the threshold, noise is almost never a change: at most
	 * alpha, and in practice far below */
	struct rates v = simulate(n, 1.0, 0.05, 0, 0.05, alpha);
	double rate = (double)v.changes / v.trials;
	fprintf(stderr, "# noise 5%%, threshold 5%%: %d false changes in %d (%.4f)\n",
	        v.changes, v.trials, rate);
	CHECK(rate <= alpha);
	/* wilder noise with outliers: the same */
	struct rates w = simulate(n, 1.0, 0.15, 1, 0.05, alpha);
	rate = (double)w.changes / w.trials;
	fprintf(stderr, "# noise 15%% + outliers: %d false changes in %d (%.4f)\n",
	        w.changes, w.trials, rate);
	CHECK(rate <= alpha);
}

TEST(real_changes_are_found)
{
	/* 30 % slower with 5 % noise: found whenever the sizes allow it
	 * (both samples of at least 10, an outlier or two among them); 2 against 2 never can be at 0.01 */
	int64_t x[2000], y[2000];
	int found = 0, tries = 0;
	for (int t = 0; t < 500; t++) {
		size_t nx = 10 + rnd_below(200), ny = 10 + rnd_below(200);
		for (size_t i = 0; i < nx; i++)
			x[i] = duration(50000, 0.05, 1);
		for (size_t j = 0; j < ny; j++)
			y[j] = duration(65000, 0.05, 1);
		diff_sort_i64(x, nx, NULL);
		diff_sort_i64(y, ny, NULL);
		struct diff_test_result r;
		diff_mwu(x, nx, y, ny, &r);
		tries++;
		found += diff_decide(median_of(y, ny) / median_of(x, nx), 0.05, 0.01,
		                     r.p, r.direction, -1, 0) == V_SLOWER;
	}
	fprintf(stderr, "# 30%% slower: found in %d of %d\n", found, tries);
	CHECK(found == tries);
	for (int i = 0; i < 2; i++)
		x[i] = 1000 + i, y[i] = 3000 + i;
	struct diff_test_result r;
	diff_mwu(x, 2, y, 2, &r);
	CHECK(r.p > 0.01);
	CHECK(diff_decide(3.0, 0.05, 0.01, r.p, r.direction, -1, 0) == V_UNSURE);
}

/* Holm's adjustment, worked by hand: sorted 0.005, 0.01, 0.03, 0.04 of
 * m = 4 give 4 * 0.005 = 0.02, 3 * 0.01 = 0.03, 2 * 0.03 = 0.06, then
 * 1 * 0.04 = 0.04 raised to 0.06 (step-down: never below a smaller
 * one's); products above 1 are 1; equal p-values are adjusted alike. */
TEST(holm_adjusts_step_down)
{
	double p[] = { 0.01, 0.04, 0.03, 0.005 };
	CHECK(diff_holm(p, 4) == 0);
	CHECK(fabs(p[0] - 0.03) < 1e-15 && fabs(p[1] - 0.06) < 1e-15);
	CHECK(fabs(p[2] - 0.06) < 1e-15 && fabs(p[3] - 0.02) < 1e-15);
	/* 3 * 0.2, 2 * 0.2 raised to 0.6, 1 * 0.5 raised to 0.6 */
	double q[] = { 0.5, 0.2, 0.2 };
	CHECK(diff_holm(q, 3) == 0);
	for (int i = 0; i < 3; i++)
		CHECK(fabs(q[i] - 0.6) < 1e-15);
	double cap[] = { 0.6, 0.9 };
	CHECK(diff_holm(cap, 2) == 0 && cap[0] == 1 && cap[1] == 1);
	double one[] = { 0.003 };
	CHECK(diff_holm(one, 1) == 0 && one[0] == 0.003);
	CHECK(diff_holm(NULL, 0) == 0);
}

int
main(void)
{
	RUN(radix_sort_matches_qsort);
	RUN(mwu_matches_scipy);
	RUN(mwu_direction_and_degenerate_cases);
	RUN(mwu_exact_matches_brute_force);
	RUN(mwu_exact_and_normal_agree_in_between);
	RUN(mwu_counted_matches_sorted);
	RUN(welch_matches_scipy);
	RUN(distributions_match_scipy);
	RUN(verdict_rule);
	RUN(noise_is_rarely_called_a_change);
	RUN(real_changes_are_found);
	RUN(holm_adjusts_step_down);
	return tap_done();
}
