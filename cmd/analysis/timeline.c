/* SPDX-License-Identifier: MIT */
/* Bins that double in width as the span grows (timeline.h). */
#include <string.h>

#include "timeline.h"

void
timeline_init(struct timeline *t, enum tl_mode mode)
{
	memset(t, 0, sizeof(*t));
	t->mode = mode;
	t->width = 1;
}

/* Floor division for bins before the origin. */
static int64_t
floordiv(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The bin of ts; 0 when ts is too far from the origin to say (the
 * caller then leaves the sample out of the picture). */
static int
bin_of(const struct timeline *t, int64_t ts, int64_t *k)
{
	int64_t d;
	if (__builtin_sub_overflow(ts, t->origin, &d))
		return 0;
	*k = floordiv(d, t->width);
	return 1;
}

/* Twice as wide: bin k goes into k / 2. */
static void
coarsen(struct timeline *t)
{
	int64_t nlo = floordiv(t->lo, 2);
	size_t nn = t->n ? (size_t)(floordiv(t->lo + (int64_t)t->n - 1, 2) - nlo + 1) : 0;
	int64_t v[TIMELINE_BINS] = { 0 };
	uint8_t has[TIMELINE_BINS] = { 0 };
	for (size_t i = 0; i < t->n; i++) {
		size_t j = (size_t)(floordiv(t->lo + (int64_t)i, 2) - nlo);
		if (t->mode == TL_SUM)
			v[j] += t->v[i];
		else if (t->has[i] && (!has[j] || t->v[i] > v[j]))
			v[j] = t->v[i], has[j] = 1;
	}
	memcpy(t->v, v, sizeof(v));
	memcpy(t->has, has, sizeof(has));
	t->lo = nlo;
	t->n = nn;
	if (t->width > INT64_MAX / 2)
		return;
	t->width *= 2;
}

/* Make room for [b, e] (times); 0 when they cannot be placed. */
static int
make_room(struct timeline *t, int64_t b, int64_t e, int64_t *kb, int64_t *ke)
{
	if (!t->started) {
		t->started = 1;
		t->origin = b;
	}
	for (;;) {
		if (!bin_of(t, b, kb) || !bin_of(t, e, ke))
			return 0;
		int64_t lo = t->n && t->lo < *kb ? t->lo : *kb;
		int64_t hi = t->n && t->lo + (int64_t)t->n - 1 > *ke ? t->lo + (int64_t)t->n - 1 : *ke;
		if (hi - lo < TIMELINE_BINS)
			break;
		if (t->width > INT64_MAX / 2)
			return 0;
		coarsen(t);
	}
	if (!t->n) {
		t->lo = *kb;
		t->n = 1;
	}
	if (*kb < t->lo) {
		size_t shift = (size_t)(t->lo - *kb);
		memmove(t->v + shift, t->v, t->n * sizeof(*t->v));
		memmove(t->has + shift, t->has, t->n);
		memset(t->v, 0, shift * sizeof(*t->v));
		memset(t->has, 0, shift);
		t->lo = *kb;
		t->n += shift;
	}
	if (*ke >= t->lo + (int64_t)t->n)
		t->n = (size_t)(*ke - t->lo + 1);
	return 1;
}

void
timeline_add(struct timeline *t, int64_t begin, int64_t end)
{
	int64_t kb, ke;
	if (end <= begin || !make_room(t, begin, end - 1, &kb, &ke))
		return;
	for (int64_t k = kb; k <= ke; k++) {
		int64_t s = t->origin + k * t->width;
		int64_t a = begin > s ? begin : s;
		int64_t z = end - s < t->width ? end : s + t->width;
		t->v[k - t->lo] += z - a;
	}
}

void
timeline_max(struct timeline *t, int64_t ts, int64_t v)
{
	int64_t k, unused;
	if (!make_room(t, ts, ts, &k, &unused))
		return;
	size_t i = (size_t)(k - t->lo);
	if (!t->has[i] || v > t->v[i])
		t->v[i] = v;
	t->has[i] = 1;
}

int64_t
timeline_bin_begin(const struct timeline *t, size_t i)
{
	return t->origin + (t->lo + (int64_t)i) * t->width;
}

int64_t
timeline_total(const struct timeline *t)
{
	int64_t s = 0;
	for (size_t i = 0; i < t->n; i++)
		s += t->v[i];
	return s;
}

static void
resample_sum(const struct timeline *t, int64_t t0, double span, size_t ncols,
             double *out)
{
	double colw = span / (double)ncols;
	for (size_t i = 0; i < t->n; i++) {
		if (!t->v[i])
			continue;
		/* the bin's time, spread evenly over its width */
		double b = (double)timeline_bin_begin(t, i) - (double)t0;
		double e = b + (double)t->width;
		double dens = (double)t->v[i] / (double)t->width;
		long c0 = (long)(b / colw), c1 = (long)(e / colw);
		for (long c = c0 < 0 ? 0 : c0; c <= c1 && c < (long)ncols; c++) {
			double cb = (double)c * colw, ce = cb + colw;
			double ov = (e < ce ? e : ce) - (b > cb ? b : cb);
			if (ov > 0)
				out[c] += dens * ov / colw;
		}
	}
	for (size_t c = 0; c < ncols; c++)
		out[c] = out[c] > 1 ? 1 : out[c];
}

static void
resample_max(const struct timeline *t, int64_t t0, double span, size_t ncols,
             double *out)
{
	double colw = span / (double)ncols, last = -1;
	size_t i = 0;
	for (size_t c = 0; c < ncols; c++) {
		double ce = (double)(c + 1) * colw;
		double m = -1;
		/* the bins that begin within the column, and the level before */
		while (i < t->n && (double)timeline_bin_begin(t, i) - (double)t0 < ce) {
			if (t->has[i] && (double)t->v[i] > m)
				m = (double)t->v[i];
			if (t->has[i])
				last = (double)t->v[i];
			i++;
		}
		out[c] = m >= 0 ? m : last;
	}
}

void
timeline_resample(const struct timeline *t, int64_t t0, int64_t t1,
                  size_t ncols, double *out)
{
	for (size_t c = 0; c < ncols; c++)
		out[c] = t->mode == TL_SUM ? 0 : -1;
	if (!ncols || t1 <= t0 || !t->n)
		return;
	double span = (double)t1 - (double)t0;
	if (t->mode == TL_SUM)
		resample_sum(t, t0, span, ncols, out);
	else
		resample_max(t, t0, span, ncols, out);
}
