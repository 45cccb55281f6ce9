/* SPDX-License-Identifier: MIT */
/*
 * A quantity over time in a bounded number of bins, for pictures: a
 * device's busy time (TL_SUM: nanoseconds of work in each bin) or its
 * memory in use (TL_MAX: the highest sample in each bin).  The span of
 * a trace is not known while it streams past, so the bins start 1 ns
 * wide and double in width (neighbours merged) whenever what comes no
 * longer fits in TIMELINE_BINS of them; a TL_SUM series therefore adds
 * up exactly to what was added, whatever the span.
 */
#ifndef TK_CMD_TIMELINE_H
#define TK_CMD_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#define TIMELINE_BINS 1024

enum tl_mode { TL_SUM, TL_MAX };

struct timeline {
	enum tl_mode mode;
	int started;
	int64_t origin;          /* bin k begins at origin + k * width */
	int64_t width;           /* ns, a power of two */
	int64_t lo;              /* the bin of v[0] */
	size_t n;                /* bins from lo that may hold something */
	int64_t v[TIMELINE_BINS];
	uint8_t has[TIMELINE_BINS]; /* TL_MAX: a sample fell in the bin */
};

void timeline_init(struct timeline *t, enum tl_mode mode);
/* TL_SUM: the interval [begin, end), split over the bins it covers. */
void timeline_add(struct timeline *t, int64_t begin, int64_t end);
/* TL_MAX: a sample of value v at ts. */
void timeline_max(struct timeline *t, int64_t ts, int64_t v);
/* Begin of bin i (0 <= i < t->n). */
int64_t timeline_bin_begin(const struct timeline *t, size_t i);
/* The sum (TL_SUM) of the bins. */
int64_t timeline_total(const struct timeline *t);

/* Resampling for a picture of `ncols` columns over [t0, t1): out[c] is,
 * for TL_SUM, the fraction of column c's time spent in the series
 * (bins spread evenly over their width); for TL_MAX, the highest sample
 * of the bins overlapping c, or the last one before it (a level holds
 * until it changes), or -1 before the first. */
void timeline_resample(const struct timeline *t, int64_t t0, int64_t t1,
                       size_t ncols, double *out);

#endif
