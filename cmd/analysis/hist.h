/* SPDX-License-Identifier: MIT */
/*
 * Log-scaled histograms of durations, for trace-stats --hist and
 * trace-report: bins four to a decade, their edges at 10^(k/4) ns
 * (1, 1.78, 3.16, 5.62, 10, ...), so that every histogram of every
 * trace has the same edges and two can be laid side by side.
 */
#ifndef TK_CMD_HIST_H
#define TK_CMD_HIST_H

#include <stddef.h>
#include <stdint.h>

#define HIST_PER_DECADE 4
#define HIST_MAX_BINS (19 * HIST_PER_DECADE)  /* 1 ns to 10^19 ns */

struct hist {
	int first;               /* the first bin is [10^(first/4), ...) */
	size_t n;                /* bins from the first to the last nonempty */
	uint64_t count[HIST_MAX_BINS];
	uint64_t total;          /* values counted (all of them) */
};

/* The bin index k (edges 10^(k/4) and 10^((k+1)/4)) of a value; values
 * below 1 ns go to bin 0. */
int hist_bin(int64_t v);
/* Lower edge of bin k, ns. */
double hist_edge(int k);
/* Count n values into h. */
void hist_fill(struct hist *h, const int64_t *v, size_t n);

#endif
