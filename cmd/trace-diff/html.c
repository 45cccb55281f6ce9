/* SPDX-License-Identifier: MIT */
/*
 * trace-diff --html FILE: the comparison as a page in trace-report's
 * style (common/svg.h): the run-wide verdicts; per table, a waterfall
 * from the time before to the time after through the operations that
 * moved it most (the rest in one bar); the before and after duration
 * histograms of the operations found faster or slower; the verdict
 * table.  The figures are struct diff's, as the other formats print
 * them (means per run with different numbers of runs on the two sides);
 * each is also in a data-* attribute (integer ns).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "analysis/hist.h"
#include "common/short_name.h"
#include "common/svg.h"
#include "common/util.h"
#include "tracekit.h"

#define WF_STEPS 10            /* contributors drawn; the rest are one bar */
#define NAME_W 250
#define BAR_W 360
#define ROW_H 18
#define HIST_W 300
#define HIST_H 100
#define NDIST 6                /* distributions drawn per table */
#define HIST_Y 16              /* room for the legend above the bars */

static void
data(FILE *f, const char *name, long long v)
{
	fprintf(f, " data-%s=\"%lld\"", name, v);
}

static void
summary_table(struct diff *df, FILE *f)
{
	char b[64], c[64];
	fputs("<section id=\"summary\"><h2>Run-wide figures</h2>\n<table class=\"nums\">"
	      "<tr><th class=\"l\">Figure</th><th>Before</th><th>After</th><th>Change</th>"
	      "<th>p</th><th class=\"l\">Verdict</th></tr>\n", f);
	for (size_t i = 0; i < df->nsummary; i++) {
		const struct diff_summary_row *r = &df->summary[i];
		const char *v = r->has_verdict ? diff_verdict_names[r->verdict] : "";
		fprintf(f, "<tr class=\"%s\" data-metric=\"%s\"", v, diff_metric_keys[r->metric]);
		if (r->metric == DM_DEVICE)
			data(f, "device", r->device);
		for (int s = 0; s < 2; s++)
			if (r->has[s])
				data(f, s ? "after" : "before", cmd_ns_int(r->v[s]));
		fputs(">", f);
		fputs("<td class=\"l\">", f);
		svg_escape(f, diff_metric_label(b, sizeof(b), r));
		fputs("</td>", f);
		for (int s = 0; s < 2; s++) {
			fputs("<td>", f);
			if (r->has[s])
				svg_escape(f, r->time ? diff_fmt_time(b, sizeof(b), r->v[s], 0)
				                      : cmd_fmt_bytes(b, sizeof(b), r->v[s]));
			fputs("</td>", f);
		}
		fputs("<td class=\"v\">", f);
		if (r->has[0] && r->has[1])
			svg_escape(f, diff_fmt_change(c, sizeof(c), diff_summary_ratio(r)));
		fputs("</td><td>", f);
		svg_escape(f, diff_fmt_p(b, sizeof(b), &r->test));
		fprintf(f, "</td><td class=\"l v\">%s</td></tr>\n", v);
	}
	fputs("</table></section>\n", f);
}

/* The waterfall of a table: total before, the largest deltas, the rest,
 * total after, as horizontal bars on a scale that spans them. */
static void
waterfall(FILE *f, struct diff_row **v, size_t n, enum agg_table t)
{
	double before = 0, after = 0, rest = 0;
	for (size_t i = 0; i < n; i++) {
		before += v[i]->side[0].present ? v[i]->side[0].total : 0;
		after += v[i]->side[1].present ? v[i]->side[1].total : 0;
		if (i >= WF_STEPS)
			rest += v[i]->delta;
	}
	size_t steps = n < WF_STEPS ? n : WF_STEPS;
	/* the scale: every running total, with room on both sides */
	double lo = before < after ? before : after, hi = before > after ? before : after;
	double run = before;
	for (size_t i = 0; i <= steps; i++) {
		run += i < steps ? v[i]->delta : rest;
		lo = run < lo ? run : lo;
		hi = run > hi ? run : hi;
	}
	double pad = (hi - lo) * 0.1 + 1, x0 = lo - pad;
	if (x0 < 0 || lo < 3 * (hi - lo))
		x0 = 0;  /* from zero when the change is a large part */
	double scale = BAR_W / (hi + pad - x0);
	char b[64], title[600];
	size_t rows = steps + 2 + (n > WF_STEPS);
	fprintf(f, "<figure class=\"waterfall\" data-table=\"%s\"", diff_table_keys[t]);
	data(f, "before-ns", cmd_ns_int(before));
	data(f, "after-ns", cmd_ns_int(after));
	fputs(">\n", f);
	svg_begin(f, NAME_W + BAR_W + 100, (double)rows * ROW_H + 4, NULL,
	          "waterfall: the time before, what changed it, the time after");
	run = before;
	for (size_t i = 0; i < rows; i++) {
		double y = (double)i * ROW_H;
		const char *label, *cls;
		double from, to;
		if (i == 0 || i == rows - 1) {
			label = i ? "after" : "before";
			from = 0;
			to = i ? after : before;
			cls = "total";
		} else {
			double d = i - 1 < steps ? v[i - 1]->delta : rest;
			label = i - 1 < steps ? cmd_short_name(v[i - 1]->name, 36) : "all the others";
			from = run;
			to = run + d;
			run = to;
			cls = d > 0 ? "slower" : "faster";
		}
		char attrs[96];
		snprintf(attrs, sizeof(attrs), " data-step=\"%zu\" data-delta-ns=\"%lld\"", i,
		         cmd_ns_int(cls[0] == 't' ? to : to - from));
		svg_text(f, NAME_W - 6, y + 13, "end", NULL, label);
		double a = ((from < to ? from : to) - x0) * scale;
		double w = fabs(to - from) * scale;
		if (cls[0] == 't')
			a = 0, w = (to - x0) * scale;
		snprintf(title, sizeof(title), "%s: %s", i > 0 && i - 1 < steps && i != rows - 1
		         ? v[i - 1]->name : label,
		         diff_fmt_time(b, sizeof(b), cls[0] == 't' ? to : to - from,
		                       cls[0] != 't'));
		svg_rect(f, NAME_W + (a < 0 ? 0 : a), y + 2, w < 1 ? 1 : w, ROW_H - 4, cls,
		         attrs, title);
		svg_text(f, NAME_W + (a < 0 ? 0 : a) + (w < 1 ? 1 : w) + 4, y + 13, "start", NULL, b);
	}
	svg_end(f);
	if (x0 > 0)
		fprintf(f, "<p class=\"note\">The scale starts at %s.</p>\n",
		        diff_fmt_time(b, sizeof(b), x0, 0));
	fputs("</figure>\n", f);
}

/* Before and after on the same log bins, side by side in each bin; the
 * heights per run with per_run, so that 5 runs do not tower over 3. */
static void
distributions(const struct diff *df, FILE *f, struct diff_row *r, enum agg_table t)
{
	struct hist h[2];
	for (int s = 0; s < 2; s++) {
		size_t n = 0;
		const int64_t *v = r->side[s].d ? dist_values(r->side[s].d, &n) : NULL;
		if (!v)
			return;
		hist_fill(&h[s], v, n);
	}
	int first = h[0].first < h[1].first ? h[0].first : h[1].first;
	int last = h[0].first + (int)h[0].n > h[1].first + (int)h[1].n
	         ? h[0].first + (int)h[0].n : h[1].first + (int)h[1].n;
	/* two decades at least, so that a bin is not the whole width */
	if (last - first < 2 * HIST_PER_DECADE) {
		int pad = 2 * HIST_PER_DECADE - (last - first);
		first = first - pad / 2 < 0 ? 0 : first - pad / 2;
		last = first + 2 * HIST_PER_DECADE > last ? first + 2 * HIST_PER_DECADE : last;
	}
	double top = 1;
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < h[s].n; i++) {
			double height = diff_per_run(df, s, (double)h[s].count[i]);
			top = height > top ? height : top;
		}
	char b[32], attrs[96];
	fprintf(f, "<figure class=\"dist\" data-table=\"%s\"", diff_table_keys[t]);
	svg_attr(f, "data-name", r->name);
	data(f, "before-count", (long long)h[0].total);
	data(f, "after-count", (long long)h[1].total);
	fputs("><h3>", f);
	svg_escape(f, cmd_short_name(r->name, 48));
	fputs("</h3>\n", f);
	svg_begin(f, HIST_W + 20, HIST_Y + HIST_H + 30, NULL, "durations before (grey) and after (blue)");
	double bw = (double)HIST_W / (double)(last - first);
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < h[s].n; i++) {
			if (!h[s].count[i])
				continue;
			int k = h[s].first + (int)i;
			double bh = HIST_H * diff_per_run(df, s, (double)h[s].count[i]) / top;
			snprintf(attrs, sizeof(attrs), " data-side=\"%d\" data-bin=\"%d\" data-n=\"%" PRIu64
			         "\"", s, k, h[s].count[i]);
			svg_rect(f, 10 + bw * (k - first) + (s ? bw / 2 : 0), HIST_Y + HIST_H - bh, bw / 2, bh,
			         s ? "after" : "before", attrs, NULL);
		}
	svg_line(f, 10, HIST_Y + HIST_H, 10 + HIST_W, HIST_Y + HIST_H, "axis");
	svg_rect(f, HIST_W - 90, 2, 8, 8, "before", NULL, NULL);
	svg_text(f, HIST_W - 78, 10, "start", NULL, "before");
	svg_rect(f, HIST_W - 36, 2, 8, 8, "after", NULL, NULL);
	svg_text(f, HIST_W - 24, 10, "start", NULL, "after");
	svg_text(f, 10, HIST_Y + HIST_H + 14, "start", NULL,
	         cmd_fmt_duration(b, sizeof(b), llround(hist_edge(first))));
	svg_text(f, 10 + HIST_W, HIST_Y + HIST_H + 14, "end", NULL,
	         cmd_fmt_duration(b, sizeof(b), llround(hist_edge(last))));
	svg_end(f);
	fputs("</figure>\n", f);
}

static void
verdict_table(struct diff *df, FILE *f, struct diff_row **v, size_t shown)
{
	char b[64];
	fprintf(f, "<table class=\"nums\"><tr><th class=\"l\">Name</th><th>Median before</th>"
	        "<th>Median after</th><th>%s</th><th>Change</th><th>p</th>"
	        "<th class=\"l\">Verdict</th></tr>\n", df->per_run ? "Delta per run" : "Delta");
	for (size_t i = 0; i < shown; i++) {
		const struct diff_row *r = v[i];
		fprintf(f, "<tr class=\"%s\" data-report=\"%s\"", diff_verdict_names[r->verdict],
		        diff_table_keys[r->table]);
		svg_attr(f, "data-name", r->name);
		svg_attr(f, "data-verdict", diff_verdict_names[r->verdict]);
		data(f, "delta-ns", cmd_ns_int(r->delta));
		fputs("><td class=\"l\"", f);
		svg_attr(f, "title", r->name);
		fputs(">", f);
		svg_escape(f, diff_display_name(df, r->name));
		fputs("</td>", f);
		for (int s = 0; s < 2; s++) {
			fputs("<td>", f);
			if (r->side[s].present)
				svg_escape(f, diff_fmt_time(b, sizeof(b), r->side[s].s.p50, 0));
			fputs("</td>", f);
		}
		fprintf(f, "<td>%s</td>", diff_fmt_time(b, sizeof(b), r->delta, 1));
		fputs("<td class=\"v\">", f);
		if (r->side[0].present && r->side[1].present)
			svg_escape(f, diff_fmt_change(b, sizeof(b), r->ratio));
		fprintf(f, "</td><td>%s</td><td class=\"l v\">%s</td></tr>\n",
		        diff_fmt_p(b, sizeof(b), &r->test), diff_verdict_names[r->verdict]);
	}
	fputs("</table>\n", f);
}

static void
table_section(struct diff *df, FILE *f, enum agg_table t)
{
	size_t shown, all;
	struct diff_row **v = diff_table_rows(df, t, &shown, &all);
	if (!all) {
		free(v);
		return;
	}
	fprintf(f, "<section id=\"diff-%s\"><h2>", diff_table_keys[t]);
	svg_escape(f, diff_table_titles[t]);
	fputs("</h2>\n<div class=\"fig\">\n", f);
	waterfall(f, v, all, t);
	verdict_table(df, f, v, shown < 20 ? shown : 20);
	fputs("</div>\n<div class=\"fig\">\n", f);
	size_t nd = 0;
	for (size_t i = 0; i < all && nd < NDIST; i++)
		if (v[i]->verdict == V_FASTER || v[i]->verdict == V_SLOWER) {
			distributions(df, f, v[i], t);
			nd++;
		}
	fputs("</div></section>\n", f);
	free(v);
}

int
diff_html(struct diff *df, const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		cmd_warn("%s: %s", path, strerror(errno));
		return -1;
	}
	char title[512];
	snprintf(title, sizeof(title), "trace-diff: %s vs %s",
	         cmd_display_path(df->opt->paths[0]), cmd_display_path(df->opt->paths[1]));
	svg_html_begin(f, title, "trace-diff", tk_version());
	fputs("<header><h1>", f);
	svg_escape(f, title);
	fputs("</h1><p class=\"note\">Before: ", f);
	svg_escape(f, cmd_display_path(df->opt->paths[0]));
	fputs("; after: ", f);
	svg_escape(f, cmd_display_path(df->opt->paths[1]));
	fputs(". Waterfalls go from the time before to the time after through the "
	      "operations that moved it most (red: slower, green: faster).", f);
	if (df->per_run)
		fprintf(f, " %.0f runs before, %.0f after: times, counts and deltas are means per "
		        "run, and so are the histograms' heights.", df->divisor[0], df->divisor[1]);
	fputs("</p></header>\n", f);
	summary_table(df, f);
	static const enum agg_table order[] = { AGG_KERNELS, AGG_MEMOPS, AGG_API, AGG_RANGES };
	for (size_t i = 0; i < 4; i++)
		table_section(df, f, order[i]);
	svg_html_end(f);
	int bad = ferror(f);
	if (fclose(f) || bad) {
		cmd_warn("%s: write error", path);
		remove(path);
		return -1;
	}
	return 0;
}
