/* SPDX-License-Identifier: MIT */
/*
 * trace-diff's statistical tests.  See stattest.h; the reasons for
 * the choices are in trace-diff(1), VERDICTS.
 *
 * Mann-Whitney U.  The pooled ranks come from merging the two sorted
 * samples; values equal in the pool share their mean rank.  The exact
 * null distribution of U without ties is the coefficient list of the
 * Gaussian binomial [m+n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) /
 * (1 - q^i), built factor by factor in exact integers.  With ties it is
 * counted by choosing, tie block by tie block, how many of the block's
 * values the smaller sample takes (C(t, a) ways each), tracking the sum
 * of its doubled mean ranks.  Otherwise the normal approximation, with
 * the variance corrected for ties and a continuity correction of 1/2,
 * as scipy.stats.mannwhitneyu(method="asymptotic") computes it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stattest.h"

const char *const diff_verdict_names[V_NVERDICTS] = {
	"same", "faster", "slower", "unsure", "new", "gone",
};

/* ---- distributions ---------------------------------------------------------------- */

double
diff_normal_sf2(double z)
{
	return erfc(fabs(z) / sqrt(2.0));
}

/* The continued fraction of the incomplete beta function, evaluated by
 * the modified Lentz method; converges fast for x < (a+1)/(a+b+2). */
static double
beta_cf(double a, double b, double x)
{
	const double tiny = 1e-300, eps = 1e-16;
	double c = 1, d = 1 - (a + b) * x / (a + 1);
	if (fabs(d) < tiny)
		d = tiny;
	d = 1 / d;
	double f = d;
	for (int m = 1; m <= 10000; m++) {
		/* even step: m(b - m)x / ((a + 2m - 1)(a + 2m)) */
		double num = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
		d = 1 + num * d;
		c = 1 + num / c;
		if (fabs(d) < tiny)
			d = tiny;
		if (fabs(c) < tiny)
			c = tiny;
		d = 1 / d;
		f *= d * c;
		/* odd step: -(a + m)(a + b + m)x / ((a + 2m)(a + 2m + 1)) */
		num = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
		d = 1 + num * d;
		c = 1 + num / c;
		if (fabs(d) < tiny)
			d = tiny;
		if (fabs(c) < tiny)
			c = tiny;
		d = 1 / d;
		double step = d * c;
		f *= step;
		if (fabs(step - 1) < eps)
			break;
	}
	return f;
}

double
diff_betainc(double a, double b, double x)
{
	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	double lfront = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) +
	                b * log1p(-x);
	if (x < (a + 1) / (a + b + 2))
		return exp(lfront) * beta_cf(a, b, x) / a;
	return 1 - exp(lfront) * beta_cf(b, a, 1 - x) / b;
}

double
diff_t_sf2(double t, double df)
{
	if (!(df > 0))
		return 1;
	if (isinf(t))
		return 0;
	return diff_betainc(df / 2, 0.5, df / (df + t * t));
}

/* ---- Welch's t-test ------------------------------------------------------------------ */

void
diff_welch(double mx, double vx, size_t nx, double my, double vy, size_t ny,
           struct diff_test_result *r)
{
	memset(r, 0, sizeof(*r));
	r->p = 1;
	if (nx < 2 || ny < 2)
		return;
	r->test = TEST_WELCH;
	r->direction = my > mx ? 1 : my < mx ? -1 : 0;
	double sx = vx / (double)nx, sy = vy / (double)ny, se2 = sx + sy;
	if (!(se2 > 0)) {
		/* no spread at all: any difference is certain */
		r->p = mx == my ? 1 : 0;
		r->z = mx == my ? 0 : r->direction * INFINITY;
		r->df = (double)(nx + ny - 2);
		return;
	}
	r->z = (my - mx) / sqrt(se2);
	r->df = se2 * se2 / (sx * sx / (double)(nx - 1) + sy * sy / (double)(ny - 1));
	r->p = diff_t_sf2(r->z, r->df);
}

static void
mean_var(const double *v, size_t n, double *mean, double *var)
{
	double s = 0, ss = 0;
	for (size_t i = 0; i < n; i++)
		s += v[i];
	*mean = n ? s / (double)n : 0;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - *mean) * (v[i] - *mean);
	*var = n > 1 ? ss / (double)(n - 1) : 0;
}

void
diff_welch_values(const double *x, size_t nx, const double *y, size_t ny,
                  struct diff_test_result *r)
{
	double mx, vx, my, vy;
	mean_var(x, nx, &mx, &vx);
	mean_var(y, ny, &my, &vy);
	diff_welch(mx, vx, nx, my, vy, ny, r);
}

/* ---- Mann-Whitney U ---------------------------------------------------------------- */

/* log C(n, k) */
static double
log_choose(size_t n, size_t k)
{
	return lgamma((double)n + 1) - lgamma((double)k + 1) - lgamma((double)(n - k) + 1);
}

/* Counts fit comfortably in 63 bits (every intermediate of the exact
 * computations is at most twice a final count). */
static int
counts_fit(size_t n, size_t k)
{
	return log_choose(n, k) < log(2e18);
}

/* Two-sided p from the counts c[0..top] of a statistic and the index
 * of the observed value: twice the smaller tail, at most 1. */
static double
two_sided(const uint64_t *c, size_t top, size_t obs)
{
	uint64_t lo = 0, hi = 0, all = 0;
	for (size_t i = 0; i <= top; i++) {
		all += c[i];
		if (i <= obs)
			lo += c[i];
		if (i >= obs)
			hi += c[i];
	}
	double p = 2 * (double)(lo < hi ? lo : hi) / (double)all;
	return p < 1 ? p : 1;
}

/* Exact p without ties: U1 = u1 of samples of m and n values.  The
 * distribution of U is the same for (m, n) and (n, m). */
static int
exact_untied(size_t m, size_t n, uint64_t u1, double *p)
{
	if (m > n) {
		size_t t = m;
		m = n;
		n = t;
	}
	size_t top = m * n;
	/* a factor (1 - q^(n+i)) first raises the degree past m*n by i */
	int64_t *c = calloc(top + m + 1, sizeof(*c));
	if (!c)
		return -1;
	c[0] = 1;
	size_t deg = 0;
	for (size_t i = 1; i <= m; i++) {
		/* multiply by (1 - q^(n+i)) */
		size_t k = n + i;
		for (size_t j = deg + k; j >= k; j--)
			c[j] -= c[j - k];
		deg += k;
		/* divide by (1 - q^i): exact, the quotient is a polynomial */
		for (size_t j = i; j <= deg; j++)
			c[j] += c[j - i];
		deg -= i;
	}
	/* every count is now a non-negative integer */
	*p = two_sided((const uint64_t *)c, top, (size_t)u1);
	free(c);
	return 0;
}

struct block {
	size_t t, a;             /* values in the block; of them, in the
	                            tracked sample */
	uint64_t score;          /* doubled mean rank */
};

/* Exact p with ties: the distribution of the sum of doubled mean ranks
 * of a sample of m values drawn from the blocks, all C(N, m) subsets
 * alike.  obs is the observed sum. */
static int
exact_tied(const struct block *b, size_t nb, size_t m, uint64_t obs, double *p)
{
	size_t smax = 0;
	for (size_t i = 0; i < nb; i++)
		smax += b[i].t * b[i].score;  /* bound: sum of all scores */
	size_t width = smax + 1;
	uint64_t *dp = calloc((m + 1) * width, sizeof(*dp));
	uint64_t binom[DIFF_EXACT_TIED_N + 1];
	if (!dp)
		return -1;
	dp[0] = 1;
	size_t reach = 0;            /* highest sum reachable so far */
	for (size_t i = 0; i < nb; i++) {
		size_t t = b[i].t;
		/* C(t, a) for a = 0..t: Pascal's rule, no overflow for t <= 64 */
		binom[0] = 1;
		for (size_t row = 1; row <= t; row++) {
			binom[row] = 1;
			for (size_t a = row - 1; a >= 1; a--)
				binom[a] += binom[a - 1];
		}
		/* descending k: dp[k - a] still holds the counts before
		 * this block */
		for (size_t k = m; k >= 1; k--) {
			size_t amax = t < k ? t : k;
			uint64_t *row = dp + k * width;
			for (size_t a = 1; a <= amax; a++) {
				uint64_t add = a * b[i].score;
				const uint64_t *from = dp + (k - a) * width;
				for (size_t s = 0; s <= reach; s++)
					if (from[s])
						row[s + add] += from[s] * binom[a];
			}
		}
		reach += (t < m ? t : m) * b[i].score;
		if (reach > smax)
			reach = smax;
	}
	*p = two_sided(dp + m * width, smax, (size_t)obs);
	free(dp);
	return 0;
}

/* What the test needs of the pooled ranks. */
struct ranks {
	uint64_t rank2_x;        /* sum of the doubled mean ranks of x */
	double ties;             /* sum of t^3 - t over the tie blocks */
	int tied;
};

/* One block of t equal values, a of them from x, at ranks first..
 * first+t-1 (from 1): the doubled mean rank is 2*first + t - 1. */
static inline uint64_t
add_block(struct ranks *k, size_t first, size_t t, size_t a)
{
	uint64_t score = 2 * (uint64_t)first + t - 1;
	k->rank2_x += a * score;
	if (t > 1) {
		k->tied = 1;
		k->ties += (double)t * (double)t * (double)t - (double)t;
	}
	return score;
}

/* U and p from the ranks; blocks (for exact tied p) when nx + ny is
 * small, else NULL. */
static int
mwu_finish(size_t nx, size_t ny, const struct ranks *k, struct block *blocks,
           size_t nb, struct diff_test_result *r)
{
	size_t n = nx + ny;
	/* U1 = R1 - nx(nx + 1)/2; doubled: */
	uint64_t u2 = k->rank2_x - (uint64_t)nx * (nx + 1);
	r->u = (double)u2 / 2;
	double mu = (double)nx * (double)ny / 2;
	r->direction = r->u < mu ? 1 : r->u > mu ? -1 : 0;
	if (!k->tied && (double)nx * (double)ny <= DIFF_EXACT_CELLS &&
	    counts_fit(n, nx < ny ? nx : ny)) {
		r->test = TEST_MWU_EXACT;
		return exact_untied(nx, ny, u2 / 2, &r->p);
	}
	if (k->tied && blocks && counts_fit(n, nx < ny ? nx : ny)) {
		/* track the smaller sample; its rank sum mirrors the other's */
		size_t m = nx <= ny ? nx : ny;
		uint64_t obs = 0;
		for (size_t i = 0; i < nb; i++) {
			if (nx > ny)
				blocks[i].a = blocks[i].t - blocks[i].a;
			obs += blocks[i].a * blocks[i].score;
		}
		r->test = TEST_MWU_EXACT;
		return exact_tied(blocks, nb, m, obs, &r->p);
	}
	r->test = TEST_MWU_NORMAL;
	double N = (double)n;
	double var = (double)nx * (double)ny / 12 * ((N + 1) - k->ties / (N * (N - 1)));
	if (!(var > 0)) {
		/* every value equal: nothing to tell apart */
		r->p = 1;
		r->direction = 0;
		return 0;
	}
	double d = fabs(r->u - mu) - 0.5;
	r->z = (d > 0 ? d : 0) / sqrt(var) * (r->u < mu ? 1 : -1);
	r->p = diff_normal_sf2(r->z);
	return 0;
}

int
diff_mwu(const int64_t *x, size_t nx, const int64_t *y, size_t ny,
         struct diff_test_result *r)
{
	memset(r, 0, sizeof(*r));
	r->p = 1;
	if (nx == 0 || ny == 0)
		return 0;
	size_t n = nx + ny;
	struct block *blocks = n <= DIFF_EXACT_TIED_N ? malloc(n * sizeof(*blocks)) : NULL;
	if (n <= DIFF_EXACT_TIED_N && !blocks)
		return -1;
	/* merge the two sorted samples, a block of equal values at a time */
	struct ranks k = { 0, 0, 0 };
	size_t i = 0, j = 0, nb = 0;
	while (i < nx || j < ny) {
		int64_t v = j >= ny || (i < nx && x[i] <= y[j]) ? x[i] : y[j];
		size_t a = 0, c = 0;
		while (i < nx && x[i] == v)
			i++, a++;
		while (j < ny && y[j] == v)
			j++, c++;
		uint64_t score = add_block(&k, i + j - a - c + 1, a + c, a);
		if (blocks)
			blocks[nb++] = (struct block){ a + c, a, score };
	}
	int rc = mwu_finish(nx, ny, &k, blocks, nb, r);
	free(blocks);
	return rc;
}

int
diff_mwu_any(int64_t *x, size_t nx, int64_t *y, size_t ny, int64_t *scratch,
             struct diff_test_result *r)
{
	memset(r, 0, sizeof(*r));
	r->p = 1;
	if (nx == 0 || ny == 0)
		return 0;
	size_t n = nx + ny;
	int64_t lo = x[0], hi = x[0];
	for (size_t i = 0; i < nx; i++) {
		lo = x[i] < lo ? x[i] : lo;
		hi = x[i] > hi ? x[i] : hi;
	}
	for (size_t j = 0; j < ny; j++) {
		lo = y[j] < lo ? y[j] : lo;
		hi = y[j] > hi ? y[j] : hi;
	}
	uint64_t range = (uint64_t)hi - (uint64_t)lo;
	if (n <= DIFF_EXACT_TIED_N || range >= n || nx > UINT32_MAX || ny > UINT32_MAX) {
		if (diff_sort_i64(x, nx, scratch) < 0 || diff_sort_i64(y, ny, scratch) < 0)
			return -1;
		return diff_mwu(x, nx, y, ny, r);
	}
	/* dense values: count each one, then sweep the counts in order
	 * (no sort, and less memory than the values) */
	size_t slots = (size_t)range + 1;
	uint32_t *cx = calloc(2 * slots, sizeof(*cx)), *cy = cx + slots;
	if (!cx)
		return -1;
	for (size_t i = 0; i < nx; i++)
		cx[x[i] - lo]++;
	for (size_t j = 0; j < ny; j++)
		cy[y[j] - lo]++;
	struct ranks k = { 0, 0, 0 };
	size_t pos = 0;
	for (size_t v = 0; v < slots; v++) {
		size_t t = (size_t)cx[v] + cy[v];
		if (!t)
			continue;
		add_block(&k, pos + 1, t, cx[v]);
		pos += t;
	}
	free(cx);
	return mwu_finish(nx, ny, &k, NULL, 0, r);
}

/* ---- Holm ------------------------------------------------------------------------ */

struct ranked {
	double p;
	size_t i;
};

static int
cmp_ranked(const void *x, const void *y)
{
	const struct ranked *a = x, *b = y;
	if (a->p != b->p)
		return a->p < b->p ? -1 : 1;
	return a->i < b->i ? -1 : a->i > b->i;
}

int
diff_holm(double *p, size_t m)
{
	if (m == 0)
		return 0;
	struct ranked *r = malloc(m * sizeof(*r));
	if (!r)
		return -1;
	for (size_t i = 0; i < m; i++)
		r[i] = (struct ranked){ p[i], i };
	qsort(r, m, sizeof(*r), cmp_ranked);
	double run = 0;
	for (size_t j = 0; j < m; j++) {
		double q = (double)(m - j) * r[j].p;
		q = q < 1 ? q : 1;
		/* step-down: never below the adjusted p of a smaller one */
		run = q > run ? q : run;
		p[r[j].i] = run;
	}
	free(r);
	return 0;
}

/* ---- verdicts --------------------------------------------------------------------- */

enum diff_verdict
diff_decide(double ratio, double threshold, double alpha, double p,
            int direction, double p_runs, int runs_direction)
{
	int dir;
	if (ratio - 1 > threshold)
		dir = 1;
	else if (1 - ratio > threshold)
		dir = -1;
	else
		return V_SAME;
	int sure = p < alpha && direction == dir;
	if (p_runs >= 0)
		sure = sure && p_runs < alpha && runs_direction == dir;
	if (!sure)
		return V_UNSURE;
	return dir > 0 ? V_SLOWER : V_FASTER;
}
