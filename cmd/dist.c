/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"

void
dist_init(struct dist *d, int approx)
{
	memset(d, 0, sizeof(*d));
	d->approx = approx;
	d->min = INT64_MAX;
	d->max = INT64_MIN;
	sketch_init(&d->sk);
}

void
dist_free(struct dist *d)
{
	free(d->v);
	sketch_free(&d->sk);
	dist_init(d, d->approx);
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
			size_t cap = d->cap ? d->cap * 2 : 16;
			int64_t *nv = realloc(d->v, cap * sizeof(*nv));
			if (!nv)
				return -1;
			d->v = nv;
			d->cap = cap;
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
	if (d->count > 1) {
		double ss = 0;
		for (size_t i = 0; i < d->count; i++) {
			double x = (double)d->v[i] - s->mean;
			ss += x * x;
		}
		s->std = sqrt(ss / (double)(d->count - 1));
	}
	static const double q[3] = { 0.50, 0.95, 0.99 };
	double out[3];
	quantiles(d->v, d->count, q, out, 3);
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

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

void
dist_sort(struct dist *d)
{
	if (!d->approx && d->count > 1)
		qsort(d->v, d->count, sizeof(*d->v), cmp_i64);
}
