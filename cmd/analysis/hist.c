/* SPDX-License-Identifier: MIT */
/* Log-scaled duration bins (hist.h). */
#include <math.h>
#include <string.h>

#include "hist.h"

double
hist_edge(int k)
{
	return pow(10.0, (double)k / HIST_PER_DECADE);
}

int
hist_bin(int64_t v)
{
	if (v <= 1)
		return 0;
	int k = (int)floor(log10((double)v) * HIST_PER_DECADE);
	/* log10 rounds: settle the edges by comparison */
	while (k > 0 && (double)v < hist_edge(k))
		k--;
	while (k + 1 < HIST_MAX_BINS && (double)v >= hist_edge(k + 1))
		k++;
	return k < HIST_MAX_BINS ? k : HIST_MAX_BINS - 1;
}

void
hist_fill(struct hist *h, const int64_t *v, size_t n)
{
	uint64_t all[HIST_MAX_BINS] = { 0 };
	int lo = HIST_MAX_BINS, hi = -1;
	for (size_t i = 0; i < n; i++) {
		int k = hist_bin(v[i]);
		all[k]++;
		if (k < lo)
			lo = k;
		if (k > hi)
			hi = k;
	}
	memset(h, 0, sizeof(*h));
	h->total = n;
	if (hi < 0)
		return;
	h->first = lo;
	h->n = (size_t)(hi - lo + 1);
	memcpy(h->count, all + lo, h->n * sizeof(*all));
}
