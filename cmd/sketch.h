/* SPDX-License-Identifier: MIT */
/*
 * A relative-error quantile sketch for non-negative integers (durations
 * in ns), after DDSketch (Masson, Rim, Lee, VLDB 2019): values fall in
 * logarithmic buckets (gamma^(i-1), gamma^i], so every quantile it
 * returns is within SKETCH_ALPHA of the exact one, relative to it, with
 * memory that depends on the range of the values (at most ~3000
 * buckets for 1 ns .. 2^63 ns), never on how many there are.
 */
#ifndef TK_CMD_SKETCH_H
#define TK_CMD_SKETCH_H

#include <stddef.h>
#include <stdint.h>

/* Relative accuracy.  Kept under the documented 1 % so that rounding
 * in the bucket index never takes an estimate past it. */
#define SKETCH_ALPHA 0.0075

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
