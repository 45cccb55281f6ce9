/* SPDX-License-Identifier: MIT */
/*
 * The statistics of trace-diff: the Mann-Whitney U test over the
 * instances of an operation, Welch's t-test over the totals of the runs
 * of repeated recordings, and the rule that turns a change and a
 * p-value into a verdict.  No state, no output: unit-tested against
 * scipy and against brute-force permutation counts
 * (tests/unit/test_diff_stats.c).
 */
#ifndef TK_CMD_DIFF_STATS_H
#define TK_CMD_DIFF_STATS_H

#include <stddef.h>
#include <stdint.h>

/* How a p-value was computed. */
enum diff_test {
	TEST_NONE,               /* no test possible (too few values) */
	TEST_MWU_EXACT,          /* Mann-Whitney U, exact null distribution */
	TEST_MWU_NORMAL,         /* Mann-Whitney U, normal approximation with
	                            tie and continuity corrections */
	TEST_WELCH,              /* Welch's unequal-variances t-test */
};

struct diff_test_result {
	enum diff_test test;
	double p;                /* two-sided; 1 when test == TEST_NONE */
	double u;                /* MWU: U of the first sample (pairs with
	                            x > y, ties counting one half) */
	double z;                /* MWU normal: the standardised U; Welch: t */
	double df;               /* Welch: degrees of freedom */
	int direction;           /* +1: y tends to be larger than x, -1:
	                            smaller, 0: neither */
};

/* Mann-Whitney U test, two-sided, of x[0..nx-1] against y[0..ny-1],
 * both sorted ascending.  Exact when there are no ties and every
 * arrangement count fits in 63 bits with at most DIFF_EXACT_CELLS
 * values of U, or with ties when nx + ny <= DIFF_EXACT_TIED_N; else the
 * normal approximation with tie correction and continuity correction.
 * Returns 0, or -1 when out of memory. */
#define DIFF_EXACT_CELLS (1u << 21)
#define DIFF_EXACT_TIED_N 64
int diff_mwu(const int64_t *x, size_t nx, const int64_t *y, size_t ny,
             struct diff_test_result *r);
/* The same test of values in any order, which may be reordered: when
 * there are more values than integers in their range (durations of
 * many instances), the ranks come from counting each value; otherwise
 * both samples are sorted in place (diff_sort_i64, with `scratch` room
 * for max(nx, ny) values, or NULL).  Same result either way. */
int diff_mwu_any(int64_t *x, size_t nx, int64_t *y, size_t ny, int64_t *scratch,
                 struct diff_test_result *r);

/* Welch's t-test, two-sided, from the means, sample variances and
 * sizes (each n >= 2, else TEST_NONE). */
void diff_welch(double mx, double vx, size_t nx, double my, double vy,
                size_t ny, struct diff_test_result *r);
/* The same from raw values (the totals of the runs). */
void diff_welch_values(const double *x, size_t nx, const double *y,
                       size_t ny, struct diff_test_result *r);

/* Distributions. */
double diff_normal_sf2(double z);   /* two-sided tail: P(|Z| >= z) */
double diff_betainc(double a, double b, double x); /* regularized I_x(a, b) */
double diff_t_sf2(double t, double df);            /* P(|T_df| >= |t|) */

/* Verdicts, as printed and in CSV and JSON. */
enum diff_verdict {
	V_SAME, V_FASTER, V_SLOWER, V_UNSURE, V_NEW, V_GONE, V_NVERDICTS
};
extern const char *const diff_verdict_names[V_NVERDICTS];

/*
 * The rule: `ratio` is after / before of the per-instance measure (the
 * median), `p` the p-value of the instances' test and `p_runs` that of
 * the runs' test (negative: none).  Within the threshold the verdict
 * is "same", whatever the tests say: with thousands of instances they
 * find differences too small to matter.  Beyond it, "faster" or
 * "slower" needs p < alpha (and p_runs < alpha when there is a runs'
 * test) with the tests pointing the same way as the ratio; otherwise
 * "unsure": the change is large, but the data cannot tell it from
 * noise.  Direction: +1 when the tests say AFTER is larger, -1 smaller.
 */
enum diff_verdict diff_decide(double ratio, double threshold, double alpha,
                              double p, int direction, double p_runs,
                              int runs_direction);

/* Holm's step-down adjustment of m p-values, in place: p[i] becomes
 * the smallest family-wise level at which hypothesis i is rejected,
 * max over j <= rank(i) of min(1, (m - j + 1) * p_(j)).  Rejecting
 * where the adjusted p < alpha keeps the chance of any false rejection
 * at most alpha, whatever the dependence between the tests.  -1 when
 * out of memory. */
int diff_holm(double *p, size_t m);

/* Sort n int64 values ascending (least-significant-digit radix sort,
 * O(n)).  `scratch` has room for n values, or is NULL to allocate it.
 * -1 when out of memory. */
int diff_sort_i64(int64_t *v, size_t n, int64_t *scratch);

#endif
