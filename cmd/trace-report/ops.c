/* SPDX-License-Identifier: MIT */
/*
 * The operations that take the time: per table (kernels, ranges,
 * copies, API calls), the top rows by total time as bars, with count,
 * median and p95 beside; then the log-scaled duration histograms of the
 * first few, their percentiles marked.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "analysis/hist.h"
#include "common/short_name.h"
#include "common/svg.h"
#include "common/util.h"

#define NAME_W 250
#define BAR_W 300
#define ROW_H 18
#define HIST_W 300
#define HIST_H 110

static const char *const table_keys[AGG_NTABLES] = {
	"kernels", "memops", "api", "ranges",
};
static const char *const table_titles[AGG_NTABLES] = {
	"Top kernels", "Top memory operations", "Top API calls", "Top ranges",
};

static int
by_total(const void *x, const void *y)
{
	const struct agg_group *a = *(const struct agg_group *const *)x;
	const struct agg_group *b = *(const struct agg_group *const *)y;
	if (a->s.total != b->s.total)
		return a->s.total < b->s.total ? 1 : -1;
	return strcmp(a->name, b->name);
}

/* The groups of table t with something in them, by total time. */
static struct agg_group **
table_rows(struct report *r, enum agg_table t, size_t *n)
{
	struct agg_group **v = cmd_xrealloc(NULL, (agg_ngroups(r->agg) + 1) * sizeof(*v));
	*n = 0;
	for (size_t i = 0; i < agg_ngroups(r->agg); i++) {
		struct agg_group *g = agg_group(r->agg, i);
		if (g->table == t && g->s.count)
			v[(*n)++] = g;
	}
	qsort(v, *n, sizeof(*v), by_total);
	return v;
}

static void
bars(struct report *r, struct agg_group **v, size_t shown, enum agg_table t)
{
	FILE *f = r->out;
	char b[32];
	double top = v[0]->s.total > 0 ? (double)v[0]->s.total : 1;
	svg_begin(f, NAME_W + BAR_W + 90, (double)shown * ROW_H + 4, NULL, table_titles[t]);
	for (size_t i = 0; i < shown; i++) {
		const struct agg_group *g = v[i];
		double y = (double)i * ROW_H;
		svg_text(f, NAME_W - 6, y + 13, "end", NULL, cmd_short_name(g->name, 36));
		double w = BAR_W * (double)g->s.total / top;
		svg_rect(f, NAME_W, y + 2, w < 1 ? 1 : w, ROW_H - 4, "bar", NULL, g->name);
		svg_text(f, NAME_W + w + 4, y + 13, "start", NULL, report_time(b, g->s.total));
	}
	svg_end(f);
}

static void
numbers(struct report *r, struct agg_group **v, size_t shown, enum agg_table t)
{
	FILE *f = r->out;
	char b[32];
	fprintf(f, "<table class=\"nums\" id=\"top-%s\"><tr><th class=\"l\">Name</th>"
	        "<th>Count</th><th>Total</th><th>Median</th><th>p95</th></tr>\n", table_keys[t]);
	for (size_t i = 0; i < shown; i++) {
		const struct agg_group *g = v[i];
		fprintf(f, "<tr data-table=\"%s\"", table_keys[t]);
		svg_attr(f, "data-name", g->name);
		if (g->domain && *g->domain)
			svg_attr(f, "data-domain", g->domain);
		report_data(f, "count", (long long)g->s.count);
		report_data(f, "total-ns", g->s.total);
		report_data(f, "median-ns", cmd_ns_int(g->s.p50));
		report_data(f, "p95-ns", cmd_ns_int(g->s.p95));
		fputs("><td class=\"l\"", f);
		svg_attr(f, "title", g->name);
		fputs(">", f);
		svg_escape(f, cmd_short_name(g->name, 36));
		fprintf(f, "</td><td>%" PRIu64 "</td>", g->s.count);
		report_td(f, NULL, report_time(b, g->s.total));
		report_td(f, NULL, report_time(b, cmd_ns_int(g->s.p50)));
		report_td(f, NULL, report_time(b, cmd_ns_int(g->s.p95)));
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}

/* x of a duration on a histogram of bins [first, first + n). */
static double
hist_x(const struct hist *h, double ns)
{
	double k = ns > 1 ? log10(ns) * HIST_PER_DECADE : 0;
	double x = (k - h->first) / (double)h->n * HIST_W;
	return x < 0 ? 0 : x > HIST_W ? HIST_W : x;
}

static void
histogram(struct report *r, struct agg_group *g, enum agg_table t)
{
	FILE *f = r->out;
	size_t n;
	const int64_t *v = dist_values(&g->dur, &n);
	char attr[96], b[32], title[96];
	if (!v)
		return;  /* a sketch (over -S): no values to count */
	struct hist h;
	hist_fill(&h, v, n);
	/* a narrow distribution still gets a readable axis: at least two
	 * decades, around its bins */
	if (h.n < 2 * HIST_PER_DECADE) {
		size_t pad = 2 * HIST_PER_DECADE - h.n, left = pad / 2;
		if ((size_t)h.first < left)
			left = (size_t)h.first;
		memmove(h.count + left, h.count, h.n * sizeof(*h.count));
		memset(h.count, 0, left * sizeof(*h.count));
		h.first -= (int)left;
		h.n = 2 * HIST_PER_DECADE;
	}
	uint64_t top = 1;
	for (size_t i = 0; i < h.n; i++)
		if (h.count[i] > top)
			top = h.count[i];
	fprintf(f, "<figure class=\"hist\" data-hist=\"%s\"", table_keys[t]);
	svg_attr(f, "data-name", g->name);
	if (g->domain && *g->domain)
		svg_attr(f, "data-domain", g->domain);
	report_data(f, "count", (long long)h.total);
	fputs("><h3>", f);
	svg_escape(f, cmd_short_name(g->name, 48));
	fputs("</h3>\n", f);
	svg_begin(f, HIST_W + 20, HIST_H + 34, NULL, "duration histogram, log scale");
	double bw = (double)HIST_W / (double)h.n;
	for (size_t i = 0; i < h.n; i++) {
		if (!h.count[i])
			continue;
		int k = h.first + (int)i;
		double bh = HIST_H * (double)h.count[i] / (double)top;
		snprintf(attr, sizeof(attr), " data-bin=\"%d\" data-n=\"%" PRIu64 "\"", k, h.count[i]);
		snprintf(title, sizeof(title), "%" PRIu64 " from %s", h.count[i],
		         report_time(b, llround(hist_edge(k))));
		svg_rect(f, 10 + bw * (double)i + 0.5, 12 + HIST_H - bh, bw > 2 ? bw - 1 : bw, bh,
		         "hbar", attr, title);
	}
	svg_line(f, 10, 12 + HIST_H, 10 + HIST_W, 12 + HIST_H, "axis");
	const double q[3] = { g->s.p50, g->s.p95, g->s.p99 };
	static const char *const qn[3] = { "p50", "p95", "p99" };
	for (int i = 0; i < 3; i++) {
		double x = 10 + hist_x(&h, q[i]);
		svg_line(f, x, 10, x, 12 + HIST_H, "pct");
		svg_text(f, x + 2, 9 + 10.0 * i, "start", NULL, qn[i]);
	}
	svg_text(f, 10, HIST_H + 28, "start", NULL,
	         report_time(b, llround(hist_edge(h.first))));
	svg_text(f, 10 + HIST_W, HIST_H + 28, "end", NULL,
	         report_time(b, llround(hist_edge(h.first + (int)h.n))));
	svg_end(f);
	fputs("</figure>\n", f);
}

static void
table_section(struct report *r, enum agg_table t)
{
	FILE *f = r->out;
	size_t n;
	struct agg_group **v = table_rows(r, t, &n);
	if (!n) {
		free(v);
		return;
	}
	size_t shown = n < r->top ? n : (size_t)r->top;
	fprintf(f, "<section id=\"sec-%s\"><h2>%s</h2>\n<div class=\"fig\">\n",
	        table_keys[t], table_titles[t]);
	bars(r, v, shown, t);
	numbers(r, v, shown, t);
	fputs("</div>\n", f);
	if (shown < n)
		fprintf(f, "<p class=\"note\">The first %zu of %zu, by total time.</p>\n", shown, n);
	size_t nh = shown < r->nhist ? shown : (size_t)r->nhist;
	if (nh) {
		fputs("<h3>Duration histograms (log scale; p50, p95, p99 marked)</h3>\n"
		      "<div class=\"fig\">\n", f);
		for (size_t i = 0; i < nh; i++)
			histogram(r, v[i], t);
		fputs("</div>\n", f);
	}
	fputs("</section>\n", f);
	free(v);
}

void
report_ops(struct report *r)
{
	static const enum agg_table order[] = { AGG_KERNELS, AGG_RANGES, AGG_MEMOPS, AGG_API };
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		table_section(r, order[i]);
}
