/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "support.h"

/* Exact values over the budget: this distribution, the one that grows,
 * keeps a sketch of them instead (the largest ones grow most often). */
static int
to_sketch(struct dist *d)
{
	struct sketch sk;
	sketch_init(&sk);
	double mean = 0, m2 = 0;
	for (size_t i = 0; i < d->count; i++) {
		if (sketch_add(&sk, d->v[i]) < 0) {
			sketch_free(&sk);
			return -1;
		}
		double delta = (double)d->v[i] - mean;
		mean += delta / (double)(i + 1);
		m2 += delta * ((double)d->v[i] - mean);
	}
	sketch_free(&d->sk);
	d->sk = sk;
	d->mean = mean;
	d->m2 = m2;
	if (d->budget) {
		d->budget->used -= d->cap * sizeof(*d->v);
		d->budget->converted++;
	}
	free(d->v);
	d->v = NULL;
	d->cap = 0;
	d->approx = 1;
	return 0;
}

void
dist_init_budget(struct dist *d, int approx, struct dist_budget *b)
{
	memset(d, 0, sizeof(*d));
	d->approx = approx;
	d->min = INT64_MAX;
	d->max = INT64_MIN;
	d->budget = b;
	sketch_init(&d->sk);
}

void
dist_init(struct dist *d, int approx)
{
	dist_init_budget(d, approx, NULL);
}

void
dist_free(struct dist *d)
{
	if (d->budget)
		d->budget->used -= d->cap * sizeof(*d->v);
	free(d->v);
	sketch_free(&d->sk);
	dist_init_budget(d, d->approx, d->budget);
}

int
dist_add_slow(struct dist *d, int64_t v)
{
	if (d->approx) {
		if (sketch_add(&d->sk, v) < 0)
			return -1;
		d->count++;
		double delta = (double)v - d->mean;
		d->mean += delta / (double)d->count;
		d->m2 += delta * ((double)v - d->mean);
	} else {
		if (d->count == d->cap) {
			/* the budget counts capacity: 16 values, then doubled */
			struct dist_budget *b = d->budget;
			size_t cap = d->cap ? d->cap * 2 : 16;
			size_t more = (cap - d->cap) * sizeof(*d->v);
			if (b && b->used + more > b->limit)
				return to_sketch(d) < 0 ? -1 : dist_add_slow(d, v);
			int64_t *nv = tkp_grow(d->v, &d->cap, cap, sizeof(*nv));
			if (!nv)
				return -1;
			d->v = nv;
			if (b)
				b->used += more;
		}
		d->v[d->count++] = v;
	}
	if (__builtin_add_overflow(d->total, v, &d->total))
		d->total = INT64_MAX;
	if (v < d->min)
		d->min = v;
	if (v > d->max)
		d->max = v;
	return 0;
}

int
dist_merge(struct dist *dst, const struct dist *src)
{
	if (src->count == 0)
		return 0;
	if (!dst->approx && src->approx && to_sketch(dst) < 0)
		return -1;
	if (dst->approx && !src->approx) {
		for (size_t i = 0; i < src->count; i++)
			if (dist_add_slow(dst, src->v[i]) < 0)
				return -1;
		return 0;
	}
	if (dst->approx) {
		if (sketch_merge(&dst->sk, &src->sk) < 0)
			return -1;
		/* Chan et al.: combine means and squared deviations */
		double n1 = (double)dst->count, n2 = (double)src->count;
		double delta = src->mean - dst->mean;
		dst->mean += delta * n2 / (n1 + n2);
		dst->m2 += src->m2 + delta * delta * n1 * n2 / (n1 + n2);
		dst->count += src->count;
		if (__builtin_add_overflow(dst->total, src->total, &dst->total))
			dst->total = INT64_MAX;
	} else {
		for (size_t i = 0; i < src->count; i++)
			if (dist_add(dst, src->v[i]) < 0)
				return -1;
		return 0;
	}
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	return 0;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* ---- exact order statistics ------------------------------------------------ */

static void
swap(int64_t *a, size_t i, size_t j)
{
	int64_t t = a[i];
	a[i] = a[j];
	a[j] = t;
}

static void
insertion_sort(int64_t *a, size_t lo, size_t hi)
{
	for (size_t i = lo + 1; i <= hi; i++) {
		int64_t x = a[i];
		size_t j = i;
		while (j > lo && a[j - 1] > x) {
			a[j] = a[j - 1];
			j--;
		}
		a[j] = x;
	}
}

static void
sift_down(int64_t *a, size_t n, size_t i)
{
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			return;
		if (c + 1 < n && a[c + 1] > a[c])
			c++;
		if (a[i] >= a[c])
			return;
		swap(a, i, c);
		i = c;
	}
}

static void
heap_sort(int64_t *a, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sift_down(a, n, i);
	for (size_t end = n; end-- > 1;) {
		swap(a, 0, end);
		sift_down(a, end, 0);
	}
}

/* Put the k-th smallest of a[lo..hi] at a[k], smaller or equal ones
 * before it and larger or equal ones after: Floyd and Rivest's SELECT
 * (CACM 1975, algorithm 489), which picks its pivot from a small sample
 * so that each pass discards nearly everything, with a heap sort when
 * passes stop shrinking the range (adversarial input). */
static void
select_k(int64_t *a, size_t lo, size_t hi, size_t k)
{
	unsigned budget = 200;
	while (hi > lo) {
		if (budget-- == 0) {
			heap_sort(a + lo, hi - lo + 1);
			return;
		}
		if (hi - lo < 16) {
			insertion_sort(a, lo, hi);
			return;
		}
		if (hi - lo > 600) {
			/* narrow to a sample around where the k-th must be */
			double n = (double)(hi - lo + 1);
			double i = (double)(k - lo + 1);
			double z = log(n);
			double s = 0.5 * exp(2 * z / 3);
			double sd = 0.5 * sqrt(z * s * (n - s) / n) * (i < n / 2 ? -1 : 1);
			double l = (double)k - i * s / n + sd;
			double r = (double)k + (n - i) * s / n + sd;
			size_t nl = l > (double)lo ? (size_t)l : lo;
			size_t nr = r < (double)hi ? (size_t)r : hi;
			if (nl <= k && k <= nr && (nl > lo || nr < hi))
				select_k(a, nl, nr, k);
		}
		int64_t t = a[k];
		size_t i = lo, j = hi;
		swap(a, lo, k);
		if (a[hi] > t)
			swap(a, hi, lo);
		while (i < j) {
			swap(a, i, j);
			i++;
			j--;
			while (a[i] < t)
				i++;
			while (a[j] > t)
				j--;
		}
		if (a[lo] == t) {
			swap(a, lo, j);
		} else {
			j++;
			swap(a, j, hi);
		}
		if (j == k)
			return;
		if (j < k)
			lo = j + 1;
		else
			hi = j - 1;
	}
}

static int64_t
min_of(const int64_t *a, size_t lo, size_t hi)
{
	int64_t m = a[lo];
	for (size_t i = lo + 1; i <= hi; i++)
		if (a[i] < m)
			m = a[i];
	return m;
}

/* Percentiles q[0..nq-1] (ascending) of v[0..n-1], interpolated at rank
 * q*(n-1).  Each rank is selected in what lies right of the previous
 * one; the value just above a rank, which interpolation needs, is the
 * smallest of what lies between that rank and the next selected one. */
static void
quantiles(int64_t *v, size_t n, const double *q, double *out, int nq)
{
	size_t lo[8];
	double f[8];
	size_t start = 0;
	for (int i = 0; i < nq; i++) {
		double r = q[i] * (double)(n - 1);
		lo[i] = (size_t)floor(r);
		if (lo[i] > n - 1)
			lo[i] = n - 1;
		f[i] = r - (double)lo[i];
		if (lo[i] >= start)
			select_k(v, start, n - 1, lo[i]);
		start = lo[i] + 1;
	}
	for (int i = 0; i < nq; i++) {
		double a = (double)v[lo[i]];
		if (f[i] == 0 || lo[i] + 1 >= n) {
			out[i] = a;
			continue;
		}
		/* right of lo[i], everything up to the next selected rank is
		 * no larger than that rank's value, and everything past it no
		 * smaller */
		size_t end = n - 1;
		for (int j = i + 1; j < nq; j++)
			if (lo[j] > lo[i]) {
				end = lo[j];
				break;
			}
		double b = (double)min_of(v, lo[i] + 1, end);
		out[i] = a + f[i] * (b - a);
	}
}

/* The percentiles at q (three, ascending) in one pass for large n,
 * leaving v as it is: a sorted sample of the values gives, for each
 * wanted rank, two values that bracket it with near certainty (three
 * standard deviations of a sample rank); one pass counts the values
 * below each bracket and copies those inside it (a few percent), where
 * the rank is then selected.  The pass also sums the squared deviations
 * from `mean`, for the standard deviation, which it returns.  A bracket
 * that missed its rank, or that more equal values than expected
 * overflow, falls back to selection over all the values. */
#define SAMPLE_MIN_N 20000
static double
quantiles_sampled(int64_t *v, size_t n, const double q[3], double out[3],
                  double mean)
{
	double m_ = 4 * sqrt((double)n);
	size_t m = m_ < 256 ? 256 : m_ > 16384 ? 16384 : (size_t)m_;
	int64_t *sample = malloc(m * sizeof(*sample));
	int64_t *buf[3] = { 0 };
	size_t len[3] = { 0 }, below[3] = { 0 }, cap[3], lo[3];
	int64_t a[3], b[3];
	double f[3];
	int ok[3] = { 0 };
	double ss = 0;
	if (sample) {
		/* a deterministic spread of positions: the result is exact
		 * anyway, the sample only decides how fast */
		uint64_t x = 0x9e3779b97f4a7c15ull ^ n;
		for (size_t i = 0; i < m; i++) {
			x ^= x >> 12;
			x ^= x << 25;
			x ^= x >> 27;
			sample[i] = v[(x * 2685821657736338717ull) % n];
		}
		qsort(sample, m, sizeof(*sample), cmp_i64);
		double d = 3 * sqrt((double)m) + 2;
		for (int j = 0; j < 3; j++) {
			double r = q[j] * (double)(n - 1);
			lo[j] = (size_t)floor(r);
			f[j] = r - (double)lo[j];
			double p = q[j] * (double)(m - 1);
			size_t pa = p - d <= 0 ? 0 : (size_t)(p - d);
			size_t pb = p + d + 1 >= (double)(m - 1) ? m - 1 : (size_t)(p + d + 1);
			a[j] = pa == 0 ? INT64_MIN : sample[pa];
			b[j] = pb == m - 1 ? INT64_MAX : sample[pb];
			/* room for the share of values the sample puts inside */
			cap[j] = (size_t)((double)n * (double)(pb - pa + 1) / (double)m * 1.25) + 64;
			buf[j] = malloc((cap[j] + 1) * sizeof(*buf[j]));
			ok[j] = buf[j] != NULL;
		}
	}
	if (!ok[0] || !ok[1] || !ok[2]) {
		for (size_t i = 0; i < n; i++)
			ss += ((double)v[i] - mean) * ((double)v[i] - mean);
		ok[0] = ok[1] = ok[2] = 0;
		goto fallback;
	}
	const int64_t a0 = a[0], a1 = a[1], a2 = a[2];
	const int64_t b0 = b[0], b1 = b[1], b2 = b[2];
	const size_t k0 = cap[0], k1 = cap[1], k2 = cap[2];
	int64_t *const u0 = buf[0], *const u1 = buf[1], *const u2 = buf[2];
	size_t c0 = 0, c1 = 0, c2 = 0, l0 = 0, l1 = 0, l2 = 0;
	double ss0 = 0, ss1 = 0;
	/* no branches: each value is stored at the end of every buffer and
	 * kept there only if it is in the bracket; a full buffer stops
	 * growing (its last slot is scratch) and means fall back */
#define VISIT(y, acc) do { \
		double dev_ = (double)(y) - mean; \
		acc += dev_ * dev_; \
		c0 += (y) < a0; \
		c1 += (y) < a1; \
		c2 += (y) < a2; \
		u0[l0] = (y); \
		l0 += ((y) >= a0) & ((y) <= b0) & (l0 < k0); \
		u1[l1] = (y); \
		l1 += ((y) >= a1) & ((y) <= b1) & (l1 < k1); \
		u2[l2] = (y); \
		l2 += ((y) >= a2) & ((y) <= b2) & (l2 < k2); \
	} while (0)
	size_t i = 0;
	for (; i + 1 < n; i += 2) {
		int64_t y = v[i], z = v[i + 1];
		VISIT(y, ss0);
		VISIT(z, ss1);
	}
	if (i < n)
		VISIT(v[i], ss0);
#undef VISIT
	ss = ss0 + ss1;
	below[0] = c0, below[1] = c1, below[2] = c2;
	len[0] = l0, len[1] = l1, len[2] = l2;
	for (int j = 0; j < 3; j++) {
		size_t need = f[j] > 0 && lo[j] + 1 < n ? lo[j] + 1 : lo[j];
		if (len[j] >= cap[j] || lo[j] < below[j] || need >= below[j] + len[j]) {
			ok[j] = 0;
			continue;
		}
		size_t k = lo[j] - below[j];
		select_k(buf[j], 0, len[j] - 1, k);
		double lov = (double)buf[j][k];
		out[j] = need == lo[j] ? lov
		       : lov + f[j] * ((double)min_of(buf[j], k + 1, len[j] - 1) - lov);
	}
fallback:
	free(sample);
	for (int j = 0; j < 3; j++) {
		if (!ok[j])
			quantiles(v, n, &q[j], &out[j], 1);
		free(buf[j]);
	}
	return ss;
}

double
quantile_exact(int64_t *v, size_t n, double q)
{
	if (n == 0)
		return 0;
	double out;
	quantiles(v, n, &q, &out, 1);
	return out;
}

void
dist_summary(struct dist *d, struct summary *s)
{
	memset(s, 0, sizeof(*s));
	s->count = d->count;
	if (d->count == 0)
		return;
	s->total = d->total;
	s->min = d->min;
	s->max = d->max;
	if (d->approx) {
		s->mean = d->mean;
		s->std = d->count > 1 ? sqrt(d->m2 / (double)(d->count - 1)) : 0;
		s->p50 = sketch_quantile(&d->sk, 0.50);
		s->p95 = sketch_quantile(&d->sk, 0.95);
		s->p99 = sketch_quantile(&d->sk, 0.99);
		/* the exact extremes bound every estimate */
		double *p[3] = { &s->p50, &s->p95, &s->p99 };
		for (int i = 0; i < 3; i++) {
			if (*p[i] < (double)d->min) *p[i] = (double)d->min;
			if (*p[i] > (double)d->max) *p[i] = (double)d->max;
		}
		return;
	}
	/* the mean from the exact total, then squared deviations from it */
	if (d->total != INT64_MAX) {
		s->mean = (double)d->total / (double)d->count;
	} else {
		double sum = 0;
		for (size_t i = 0; i < d->count; i++)
			sum += (double)d->v[i];
		s->mean = sum / (double)d->count;
	}
	static const double q[3] = { 0.50, 0.95, 0.99 };
	double out[3], ss = 0;
	if (d->count >= SAMPLE_MIN_N) {
		ss = quantiles_sampled(d->v, d->count, q, out, s->mean);
	} else {
		for (size_t i = 0; i < d->count; i++) {
			double x = (double)d->v[i] - s->mean;
			ss += x * x;
		}
		quantiles(d->v, d->count, q, out, 3);
	}
	if (d->count > 1)
		s->std = sqrt(ss / (double)(d->count - 1));
	s->p50 = out[0];
	s->p95 = out[1];
	s->p99 = out[2];
}

const int64_t *
dist_values(const struct dist *d, size_t *n)
{
	if (d->approx) {
		*n = 0;
		return NULL;
	}
	*n = d->count;
	return d->v;
}


void
dist_sort(struct dist *d)
{
	if (!d->approx && d->count > 1)
		qsort(d->v, d->count, sizeof(*d->v), cmp_i64);
}
