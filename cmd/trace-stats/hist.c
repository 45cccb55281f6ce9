/* SPDX-License-Identifier: MIT */
/*
 * trace-stats --hist NAME: a text histogram of the durations of the
 * operations named NAME (each table's group of that name, one histogram
 * each), with log-scaled bins four to a decade (analysis/hist.h) and the
 * bins that hold the median, p95 and p99 marked.  Unicode blocks, with
 * eighths, when the locale says UTF-8; '#' otherwise.
 */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "analysis/hist.h"
#include "common/util.h"

#define BAR_COLS 40

/* Does the locale (LC_ALL, else LC_CTYPE, else LANG) say UTF-8? */
static int
utf8_locale(void)
{
	static const char *const vars[] = { "LC_ALL", "LC_CTYPE", "LANG" };
	for (size_t i = 0; i < 3; i++) {
		const char *v = getenv(vars[i]);
		if (!v || !*v)
			continue;
		char low[64];
		size_t n = 0;
		for (; v[n] && n + 1 < sizeof(low); n++)
			low[n] = (char)tolower((unsigned char)v[n]);
		low[n] = '\0';
		return strstr(low, "utf-8") || strstr(low, "utf8");
	}
	return 0;
}

/* A bar of `eighths` eighths of a column. */
static void
bar(FILE *f, long eighths, int utf8)
{
	static const char *const part[8] = {
		"", "\u258f", "\u258e", "\u258d", "\u258c", "\u258b", "\u258a", "\u2589",
	};
	long full = eighths / 8, cols = full;
	for (long i = 0; i < full; i++)
		fputs(utf8 ? "\u2588" : "#", f);
	if (utf8 && eighths % 8) {
		fputs(part[eighths % 8], f);
		cols++;
	}
	for (; cols < BAR_COLS; cols++)
		putc(' ', f);
}

static void
one_histogram(struct stats *st, struct agg_group *g, int utf8)
{
	size_t n;
	const int64_t *v = dist_values(&g->dur, &n);
	char b1[32], b2[32], b3[32];
	static const char *const kinds[AGG_NTABLES] = { "kernel", "memory operation",
	                                                "API call", "range" };
	printf("%s \"%s\"%s%s: %" PRIu64 " durations, p50 %s, p95 %s, p99 %s\n",
	       kinds[g->table], g->name, g->domain && *g->domain ? " in " : "",
	       g->domain ? g->domain : "", g->s.count,
	       stats_fmt_time(st, b1, sizeof(b1), g->s.p50),
	       stats_fmt_time(st, b2, sizeof(b2), g->s.p95),
	       stats_fmt_time(st, b3, sizeof(b3), g->s.p99));
	struct hist h;
	hist_fill(&h, v, n);
	uint64_t top = 1;
	for (size_t i = 0; i < h.n; i++)
		if (h.count[i] > top)
			top = h.count[i];
	const double q[3] = { g->s.p50, g->s.p95, g->s.p99 };
	static const char *const qn[3] = { "p50", "p95", "p99" };
	for (size_t i = 0; i < h.n; i++) {
		int k = h.first + (int)i;
		printf("  %12s %s ", stats_fmt_time(st, b1, sizeof(b1), (double)llround(hist_edge(k))),
		       utf8 ? "\u2502" : "|");
		bar(stdout, (long)(BAR_COLS * 8 * h.count[i] / top), utf8);
		printf(" %8" PRIu64, h.count[i]);
		const char *sep = utf8 ? "  \u25c0 " : "  <- ";
		for (int j = 0; j < 3; j++)
			if (hist_bin(llround(q[j])) == k) {
				printf("%s%s", sep, qn[j]);
				sep = " ";
			}
		putchar('\n');
	}
}

int
stats_hist(struct stats *st, const char *name)
{
	int utf8 = utf8_locale(), found = 0;
	for (size_t i = 0; i < agg_ngroups(st->agg); i++) {
		struct agg_group *g = agg_group(st->agg, i);
		if (!g->s.count || strcmp(g->name, name) != 0)
			continue;
		if (!dist_values(&g->dur, &(size_t){ 0 })) {
			cmd_warn("%s: its durations outgrew --buffer-size: no histogram", name);
			return 1;
		}
		if (found++)
			putchar('\n');
		one_histogram(st, g, utf8);
	}
	if (!found) {
		cmd_warn("no operation named '%s'", name);
		return 1;
	}
	return 0;
}
