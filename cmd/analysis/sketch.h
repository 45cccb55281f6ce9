/* SPDX-License-Identifier: MIT */
/*
 * A relative-error quantile sketch for non-negative integers (durations
 * in ns), in the manner of DDSketch (Masson, Rim, Lee, VLDB 2019): each
 * value is counted in a bucket whose bounds are within a fixed ratio of
 * each other, so every quantile it returns is within SKETCH_ALPHA of the
 * exact one, relative to it, in memory that depends on the range of the
 * values (64 buckets per power of two), never on how many there are.
 *
 * The buckets are log-linear: each power of two [2^e, 2^(e+1)) is cut
 * into 64 equal parts, found from the value's bits without a logarithm
 * (like HdrHistogram's), so adding a value costs a few instructions.
 * Values below 64 each get a bucket of their own and come back exact.
 */
#ifndef TK_CMD_SKETCH_H
#define TK_CMD_SKETCH_H

#include <stddef.h>
#include <stdint.h>

/* Buckets per power of two, and the relative error that gives: a bucket
 * [lo, hi) has hi/lo <= 1 + 1/64, and its representative
 * 2 lo hi / (lo + hi) is within (hi - lo)/(hi + lo) <= 1/129 of any
 * value in it. */
#define SKETCH_SUB_BITS 6
#define SKETCH_ALPHA (1.0 / 129)

struct sketch {
	uint64_t *counts;   /* counts[i] is bucket offset + i */
	int32_t offset;     /* bucket index of counts[0] */
	uint32_t nbuckets;
	uint64_t zeros;     /* values equal to 0 */
	uint64_t n;         /* values added */
};

void sketch_init(struct sketch *s);
void sketch_free(struct sketch *s);
/* Add a value (negative values count as 0).  -1 when out of memory. */
int sketch_add(struct sketch *s, int64_t v);
/* Add every value of `src` to `dst`.  -1 when out of memory. */
int sketch_merge(struct sketch *dst, const struct sketch *src);
/* The value of 0-based rank k (0 <= k < n) in ascending order, within
 * SKETCH_ALPHA of the exact one. */
double sketch_rank(const struct sketch *s, uint64_t k);
/* Quantile q in [0, 1], interpolated between ranks like numpy's default
 * (rank q*(n-1)); 0 when empty. */
double sketch_quantile(const struct sketch *s, double q);
/* Bytes held, for memory accounting in tests. */
size_t sketch_bytes(const struct sketch *s);

#endif
