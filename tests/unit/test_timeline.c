/* SPDX-License-Identifier: MIT */
/*
 * analysis/timeline.c and analysis/hist.c against brute force: the bins
 * of a TL_SUM timeline add up to what was added and hold, bin by bin,
 * the time of the intervals inside them, however far the span grows
 * (before or after the first interval); TL_MAX keeps each bin's highest;
 * the resampled picture spreads the same total; histogram bins have the
 * edges 10^(k/4).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "analysis/hist.h"
#include "analysis/timeline.h"

/* Time of [b, e) inside [s, s + w). */
static int64_t
overlap(int64_t b, int64_t e, int64_t s, int64_t w)
{
	int64_t lo = b > s ? b : s, hi = e < s + w ? e : s + w;
	return hi > lo ? hi - lo : 0;
}

TEST(sum_bins_hold_their_time)
{
	static struct timeline t;
	enum { N = 3000 };
	static int64_t b[N], e[N];
	uint64_t x = 12345;
	int64_t total = 0;
	timeline_init(&t, TL_SUM);
	for (int i = 0; i < N; i++) {
		/* disjoint intervals, some before the first one */
		x = x * 6364136223846793005u + 1442695040888963407u;
		int64_t at = (i % 3 == 0 ? -1 : 1) * (int64_t)i * 10000 + (int64_t)(x >> 60);
		b[i] = 1000000000 + at;
		e[i] = b[i] + 1 + (int64_t)((x >> 33) % 5000);
		timeline_add(&t, b[i], e[i]);
		total += e[i] - b[i];
	}
	CHECK_EQ_INT(timeline_total(&t), total);
	CHECK(t.n <= TIMELINE_BINS);
	CHECK(t.n >= TIMELINE_BINS / 4);   /* coarsened no more than needed */
	for (size_t k = 0; k < t.n; k += 37) {
		int64_t want = 0, s = timeline_bin_begin(&t, k);
		for (int i = 0; i < N; i++)
			want += overlap(b[i], e[i], s, t.width);
		CHECK_EQ_INT(t.v[k], want);
	}
	/* the picture spreads the same time */
	double col[500], sum = 0;
	int64_t t0 = timeline_bin_begin(&t, 0), t1 = timeline_bin_begin(&t, t.n - 1) + t.width;
	timeline_resample(&t, t0, t1, 500, col);
	for (int c = 0; c < 500; c++) {
		CHECK(col[c] >= 0 && col[c] <= 1);
		sum += col[c] * (double)(t1 - t0) / 500;
	}
	CHECK(fabs(sum - (double)total) < 1e-6 * (double)total + 1);
}

TEST(max_keeps_the_highest)
{
	static struct timeline t;
	timeline_init(&t, TL_MAX);
	for (int64_t i = 0; i < 20000; i++)
		timeline_max(&t, i * 1000, (i * 7919) % 20011);
	int64_t top = -1;
	for (size_t k = 0; k < t.n; k++) {
		int64_t want = -1, s = timeline_bin_begin(&t, k);
		for (int64_t i = 0; i < 20000; i++)
			if (i * 1000 >= s && i * 1000 < s + t.width && (i * 7919) % 20011 > want)
				want = (i * 7919) % 20011;
		if (want >= 0)
			CHECK_EQ_INT(t.v[k], want);
		CHECK_EQ_INT(t.has[k], want >= 0);
		if (t.v[k] > top)
			top = t.v[k];
	}
	CHECK_EQ_INT(top, 20010);
}

TEST(one_interval_and_extremes)
{
	static struct timeline t;
	timeline_init(&t, TL_SUM);
	timeline_add(&t, 5, 5);          /* empty: nothing */
	CHECK_EQ_INT(t.n, 0);
	timeline_add(&t, INT64_MIN + 10, INT64_MAX - 10);
	timeline_add(&t, 0, 1000);
	CHECK(t.n <= TIMELINE_BINS);
	CHECK(timeline_total(&t) >= 0);
}

TEST(hist_edges)
{
	CHECK_EQ_INT(hist_bin(0), 0);
	CHECK_EQ_INT(hist_bin(1), 0);
	CHECK_EQ_INT(hist_bin(9), 3);      /* 5.62 <= 9 < 10 */
	CHECK_EQ_INT(hist_bin(10), 4);
	CHECK_EQ_INT(hist_bin(17), 4);     /* < 17.78 */
	CHECK_EQ_INT(hist_bin(18), 5);
	CHECK_EQ_INT(hist_bin(1000000), 24);
	CHECK_EQ_INT(hist_bin(999999), 23);
	int64_t v[] = { 10, 11, 100000, 17 };
	struct hist h;
	hist_fill(&h, v, 4);
	CHECK_EQ_INT(h.first, 4);
	CHECK_EQ_INT(h.n, 17);
	CHECK_EQ_INT(h.count[0], 3);
	CHECK_EQ_INT(h.count[16], 1);
	CHECK_EQ_INT(h.total, 4);
}

int
main(void)
{
	RUN(sum_bins_hold_their_time);
	RUN(max_keeps_the_highest);
	RUN(one_interval_and_extremes);
	RUN(hist_edges);
	return tap_done();
}
