/* SPDX-License-Identifier: MIT */
/*
 * Step times: a bar per step (the series trace-stats --steps finds),
 * stacked by the categories of TensorBoard's overview (breakdown.h);
 * beside it, each category's total over the steps.
 */
#include <inttypes.h>

#include "report.h"
#include "common/svg.h"
#include "common/util.h"

#define PLOT_X 76
#define PLOT_Y 10             /* room for the top label */
#define PLOT_W 560
#define PLOT_H 220
#define MAX_BARS 400           /* steps drawn; the totals count all */

/* The JSON keys of trace-stats --json, and titles. */
static const char *const cat_keys[BD_NCATS] = {
	"kernel", "memcpy", "memset", "runtime", "dataloader", "cpu", "other",
};
static const char *const cat_titles[BD_NCATS] = {
	"Kernel", "Memcpy", "Memset", "Runtime (API)", "Data loading", "CPU",
	"Other (idle)",
};

static void
step_bar(FILE *f, const struct perinst_instance *in, size_t i, double x,
         double w, double scale)
{
	char attrs[512], title[160], b[32];
	int k = snprintf(attrs, sizeof(attrs), " data-step=\"%zu\" data-begin-ns=\"%" PRId64
	                 "\" data-dur-ns=\"%" PRId64 "\"", i, in->begin, in->dur);
	for (int c = 0; c < BD_NCATS && k > 0 && (size_t)k < sizeof(attrs); c++)
		k += snprintf(attrs + k, sizeof(attrs) - (size_t)k, " data-%s=\"%" PRId64 "\"",
		              cat_keys[c], in->cat[c]);
	svg_group(f, NULL, attrs);
	double y = PLOT_Y + PLOT_H;
	for (int c = 0; c < BD_NCATS; c++) {
		if (!in->cat[c])
			continue;
		double h = (double)in->cat[c] * scale;
		char cls[4] = { 'c', (char)('0' + c), '\0' };
		snprintf(title, sizeof(title), "step %zu: %s %s", i, cat_titles[c],
		         report_time(b, in->cat[c]));
		svg_rect(f, x, y - h, w, h, cls, NULL, title);
		y -= h;
	}
	svg_group_end(f);
}

static void
steps_picture(struct report *r, const struct perinst_result *p, size_t shown)
{
	FILE *f = r->out;
	char b[32];
	int64_t top = 1;
	for (size_t i = 0; i < shown; i++)
		if (p->inst[i].dur > top)
			top = p->inst[i].dur;
	double scale = PLOT_H / (double)top;
	double slot = (double)PLOT_W / (double)shown;
	double w = slot > 2 ? slot * 0.8 : slot;
	svg_begin(f, PLOT_X + PLOT_W + 10, PLOT_Y + PLOT_H + 30, NULL,
	          "Step times, stacked by category");
	for (int g = 0; g <= 4; g++) {
		double y = PLOT_Y + PLOT_H - PLOT_H * g / 4.0;
		svg_line(f, PLOT_X, y, PLOT_X + PLOT_W, y, g ? "grid" : "axis");
		svg_text(f, PLOT_X - 4, y + 4, "end", NULL,
		         report_time(b, (int64_t)((double)top * g / 4)));
	}
	for (size_t i = 0; i < shown; i++)
		step_bar(f, &p->inst[i], i, PLOT_X + slot * (double)i + (slot - w) / 2, w, scale);
	svg_text(f, PLOT_X, PLOT_Y + PLOT_H + 16, "start", NULL, "step 0");
	snprintf(b, sizeof(b), "step %zu", shown - 1);
	svg_text(f, PLOT_X + PLOT_W, PLOT_Y + PLOT_H + 16, "end", NULL, b);
	svg_end(f);
}

static void
steps_table(struct report *r, const struct perinst_result *p)
{
	FILE *f = r->out;
	char b[32], pct[32];
	int64_t sum[BD_NCATS] = { 0 }, all = 0;
	/* sums saturate: a damaged trace's durations must not overflow */
	for (size_t i = 0; i < p->ninst; i++) {
		for (int c = 0; c < BD_NCATS; c++)
			if (__builtin_add_overflow(sum[c], p->inst[i].cat[c], &sum[c]))
				sum[c] = INT64_MAX;
		if (__builtin_add_overflow(all, p->inst[i].dur, &all))
			all = INT64_MAX;
	}
	fputs("<table class=\"nums\" id=\"steps\"><tr><th class=\"l\">Category</th>"
	      "<th>Total</th><th>Per step</th><th>Share</th></tr>\n", f);
	for (int c = 0; c < BD_NCATS; c++) {
		fprintf(f, "<tr data-cat=\"%s\"", cat_keys[c]);
		report_data(f, "total-ns", sum[c]);
		fprintf(f, "><td class=\"l\"><span class=\"key\"><span class=\"k%d\"></span></span>%s</td>",
		        c, cat_titles[c]);
		report_td(f, NULL, report_time(b, sum[c]));
		report_td(f, NULL, report_time(b, sum[c] / (int64_t)p->ninst));
		snprintf(pct, sizeof(pct), "%.1f%%", all ? 100.0 * (double)sum[c] / (double)all : 0);
		report_td(f, NULL, pct);
		fputs("</tr>\n", f);
	}
	fputs("<tr data-cat=\"all\"", f);
	report_data(f, "total-ns", all);
	fputs("><td class=\"l\">All steps</td>", f);
	report_td(f, NULL, report_time(b, all));
	report_td(f, NULL, report_time(b, all / (int64_t)p->ninst));
	fputs("<td>100%</td></tr>\n</table>\n", f);
}

void
report_steps(struct report *r)
{
	FILE *f = r->out;
	const struct perinst_result *p = agg_per(r->agg);
	const char *name = agg_per_name(r->agg);
	fputs("<section id=\"stepsec\"><h2>Step times</h2>\n", f);
	if (!p || !name || !p->ninst) {
		fputs("<p class=\"note\">No steps found (ProfilerStep#N, or ranges named step "
		      "or iteration).</p></section>\n", f);
		return;
	}
	size_t shown = p->ninst < MAX_BARS ? p->ninst : MAX_BARS;
	int whole = agg_per_whole_input(r->agg);
	fprintf(f, "<p class=\"note\" data-steps=\"%zu\" data-whole-input=\"%d\">%zu instances of ",
	        p->ninst, whole, p->ninst);
	svg_escape(f, name);
	if (whole)
		fputs(" (no ProfilerStep#N or step ranges: the profiler's capture range is one "
		      "step over all the work of its input)", f);
	fputs(", each split by what ran during it (the first category that had work "
	      "at each moment: kernel, memcpy, memset, runtime, data loading, CPU, else "
	      "other).</p>\n<div class=\"fig\">\n", f);
	steps_picture(r, p, shown);
	steps_table(r, p);
	fputs("</div>\n", f);
	if (shown < p->ninst)
		fprintf(f, "<p class=\"note\">Bars of the first %zu steps; the totals count all "
		        "%zu.</p>\n", shown, p->ninst);
	fputs("</section>\n", f);
}
