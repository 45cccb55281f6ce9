/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sketch.h"

#define SKETCH_MAX_BUCKET ((63 << SKETCH_SUB_BITS) - 1)

/* Bucket of v >= 1: the power of two e, then the next SKETCH_SUB_BITS
 * bits below its leading one. */
static int32_t
bucket_of(int64_t v)
{
	uint64_t u = (uint64_t)v;
	int e = 63 - __builtin_clzll(u);
	uint64_t sub = e >= SKETCH_SUB_BITS ? u >> (e - SKETCH_SUB_BITS)
	                                    : u << (SKETCH_SUB_BITS - e);
	return (int32_t)(e << SKETCH_SUB_BITS) +
	       (int32_t)(sub & ((1u << SKETCH_SUB_BITS) - 1));
}

/* The value standing for bucket i: exact when the bucket holds a single
 * integer, else the point whose relative distance to both ends is
 * equal. */
static double
bucket_value(int32_t i)
{
	int e = i >> SKETCH_SUB_BITS;
	double sub = (double)(i & ((1 << SKETCH_SUB_BITS) - 1));
	double scale = ldexp(1.0, e - SKETCH_SUB_BITS);
	double lo = ldexp(1.0, e) + sub * scale, hi = lo + scale;
	if (hi - lo <= 1)
		return lo;
	return 2 * lo * hi / (lo + hi);
}

void
sketch_init(struct sketch *s)
{
	memset(s, 0, sizeof(*s));
}

void
sketch_free(struct sketch *s)
{
	free(s->counts);
	sketch_init(s);
}

/* Make buckets lo..hi addressable. */
static int
cover(struct sketch *s, int32_t lo, int32_t hi)
{
	if (s->nbuckets && lo >= s->offset &&
	    hi < s->offset + (int32_t)s->nbuckets)
		return 0;
	int32_t old_lo = s->offset, old_hi = s->offset + (int32_t)s->nbuckets - 1;
	int32_t new_lo = s->nbuckets && old_lo < lo ? old_lo : lo;
	int32_t new_hi = s->nbuckets && old_hi > hi ? old_hi : hi;
	/* grow the side that grows by a margin, so that a slowly widening
	 * range does not reallocate for every new bucket */
	int32_t margin = (new_hi - new_lo + 1) / 4 + 8;
	if (!s->nbuckets || new_lo < old_lo)
		new_lo = new_lo - margin < 0 ? 0 : new_lo - margin;
	if (!s->nbuckets || new_hi > old_hi)
		new_hi += margin;
	/* no value has a bucket past that of INT64_MAX */
	if (new_hi > SKETCH_MAX_BUCKET)
		new_hi = SKETCH_MAX_BUCKET;
	size_t n = (size_t)(new_hi - new_lo + 1);
	uint64_t *c = calloc(n, sizeof(*c));
	if (!c)
		return -1;
	if (s->nbuckets)
		memcpy(c + (s->offset - new_lo), s->counts,
		       s->nbuckets * sizeof(*c));
	free(s->counts);
	s->counts = c;
	s->offset = new_lo;
	s->nbuckets = (uint32_t)n;
	return 0;
}

int
sketch_add(struct sketch *s, int64_t v)
{
	if (v <= 0) {
		s->zeros++;
		s->n++;
		return 0;
	}
	int32_t i = bucket_of(v);
	if (cover(s, i, i) < 0)
		return -1;
	s->counts[i - s->offset]++;
	s->n++;
	return 0;
}

int
sketch_merge(struct sketch *dst, const struct sketch *src)
{
	if (src->nbuckets) {
		if (cover(dst, src->offset,
		          src->offset + (int32_t)src->nbuckets - 1) < 0)
			return -1;
		for (uint32_t i = 0; i < src->nbuckets; i++)
			dst->counts[src->offset - dst->offset + (int32_t)i] +=
				src->counts[i];
	}
	dst->zeros += src->zeros;
	dst->n += src->n;
	return 0;
}

double
sketch_rank(const struct sketch *s, uint64_t k)
{
	if (k < s->zeros)
		return 0;
	uint64_t seen = s->zeros;
	for (uint32_t i = 0; i < s->nbuckets; i++) {
		seen += s->counts[i];
		if (k < seen)
			return bucket_value(s->offset + (int32_t)i);
	}
	/* k >= n: the largest value */
	for (uint32_t i = s->nbuckets; i-- > 0;)
		if (s->counts[i])
			return bucket_value(s->offset + (int32_t)i);
	return 0;
}

double
sketch_quantile(const struct sketch *s, double q)
{
	if (s->n == 0)
		return 0;
	if (q < 0)
		q = 0;
	if (q > 1)
		q = 1;
	double r = q * (double)(s->n - 1);
	uint64_t lo = (uint64_t)floor(r);
	double f = r - (double)lo;
	double a = sketch_rank(s, lo);
	if (f == 0 || lo + 1 >= s->n)
		return a;
	/* each end is within alpha, so is any point between them */
	return a + f * (sketch_rank(s, lo + 1) - a);
}

size_t
sketch_bytes(const struct sketch *s)
{
	return sizeof(*s) + s->nbuckets * sizeof(*s->counts);
}
