/* SPDX-License-Identifier: MIT */
/*
 * Sorting durations for the rank test: a least-significant-digit radix
 * sort, 11 bits a pass.  Durations in nanoseconds rarely use more than
 * 40 bits, and only the digits of the range of the values are sorted
 * on, so a sort is typically a counting pass and two or three moves:
 * several times faster than qsort() on the millions of instances of a
 * long trace.
 */
#include <stdlib.h>
#include <string.h>

#include "stattest.h"

#define BITS 11
#define BUCKETS (1u << BITS)
#define PASSES ((64 + BITS - 1) / BITS)

static void
insertion_sort(int64_t *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		int64_t x = v[i];
		size_t j = i;
		while (j > 0 && v[j - 1] > x) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = x;
	}
}

int
diff_sort_i64(int64_t *v, size_t n, int64_t *scratch)
{
	if (n < 64) {
		insertion_sort(v, n);
		return 0;
	}
	/* keys relative to the smallest value: only the digits of the
	 * range are sorted on (durations of one operation span a few
	 * decades of nanoseconds: two or three passes) */
	int64_t lo = v[0], hi = v[0];
	for (size_t i = 1; i < n; i++) {
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
	}
	uint64_t range = (uint64_t)hi - (uint64_t)lo;
	unsigned passes = 0;
	while (passes < PASSES && (passes == 0 || range >> (passes * BITS)))
		passes++;
	size_t (*count)[BUCKETS] = calloc(passes, sizeof(*count));
	int64_t *tmp = scratch ? scratch : malloc(n * sizeof(*tmp));
	if (!count || !tmp) {
		free(count);
		if (!scratch)
			free(tmp);
		return -1;
	}
	/* one counting pass for every digit */
	for (size_t i = 0; i < n; i++) {
		uint64_t k = (uint64_t)v[i] - (uint64_t)lo;
		for (unsigned p = 0; p < passes; p++)
			count[p][(k >> (p * BITS)) & (BUCKETS - 1)]++;
	}
	int64_t *src = v, *dst = tmp;
	for (unsigned p = 0; p < passes; p++) {
		size_t *c = count[p];
		unsigned shift = p * BITS;
		/* every value has the same digit here: nothing to move */
		if (c[(((uint64_t)src[0] - (uint64_t)lo) >> shift) & (BUCKETS - 1)] == n)
			continue;
		size_t sum = 0;
		for (unsigned b = 0; b < BUCKETS; b++) {
			size_t t = c[b];
			c[b] = sum;
			sum += t;
		}
		for (size_t i = 0; i < n; i++) {
			uint64_t k = (uint64_t)src[i] - (uint64_t)lo;
			dst[c[(k >> shift) & (BUCKETS - 1)]++] = src[i];
		}
		int64_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	if (!scratch)
		free(tmp);
	free(count);
	return 0;
}
