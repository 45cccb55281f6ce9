/* SPDX-License-Identifier: MIT */
/*
 * Pictures over time, one strip per device (small multiples: one per
 * rank when the ranks' traces are read together): the share of each
 * moment a GPU is busy, and its memory in use.  The strips come from
 * the aggregation's timelines, whose bins add up to the busy time the
 * numbers beside them give.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "common/svg.h"
#include "common/util.h"

#define LABEL_W 150
#define STRIP_H 22
#define STRIP_GAP 8
#define NCOLS 480              /* columns of a strip: one per 1 px */
#define MAX_STRIPS 64          /* devices drawn; the table lists all */

long
report_straggler(const struct report *r)
{
	/* the rank the distributed view names, found by the rank of each
	 * device's work: the first of its devices is highlighted */
	const struct finding *x = report_straggler_finding(r);
	for (size_t i = 0; x && i < agg_ndevices(r->agg); i++) {
		const struct agg_device *d = agg_device(r->agg, i);
		if (d->ops && d->rank && strcmp(d->rank, x->name) == 0)
			return (long)i;
	}
	return -1;
}

/* The straggler's line under the strips: its rank, ratio and figures. */
static void
straggler_note(struct report *r, long lag)
{
	FILE *f = r->out;
	const struct finding *x = report_straggler_finding(r);
	char v[40];
	if (!x)
		return;
	fputs("<p class=\"straggler\"", f);
	svg_attr(f, "data-straggler", x->name);
	snprintf(v, sizeof(v), "%.17g", x->value);
	svg_attr(f, "data-ratio", v);
	if (lag >= 0)
		report_data(f, "straggler-gpu", agg_device(r->agg, (size_t)lag)->index);
	fprintf(f, "><b>Straggler: %s, %.2fx.</b> ", lag >= 0 ? "in red" : "not drawn",
	        x->value);
	svg_escape(f, x->message);
	fputs("</p>\n", f);
}

static void
device_label(char *buf, size_t n, const struct agg_device *d)
{
	if (d->index >= 0)
		snprintf(buf, n, "%s%sGPU %" PRId64, d->host, *d->host ? " " : "", d->index);
	else
		snprintf(buf, n, "%s%sGPU ?", d->host, *d->host ? " " : "");
}

/* The time axis under strips of total height y. */
static void
time_axis(struct report *r, double y)
{
	FILE *f = r->out;
	char b[32];
	svg_line(f, LABEL_W, y, LABEL_W + NCOLS, y, "axis");
	for (int i = 0; i <= 4; i++) {
		double x = LABEL_W + NCOLS * i / 4.0;
		svg_line(f, x, y, x, y + 4, "axis");
		svg_text(f, x, y + 15, i == 0 ? "start" : i == 4 ? "end" : "middle", NULL,
		         report_time(b, (int64_t)(((double)r->t1 - (double)r->t0) * i / 4)));
	}
}

/* One strip: the busy share per column as a filled area. */
static void
busy_strip(struct report *r, const struct agg_device *d, double y, int lag)
{
	FILE *f = r->out;
	double *col = calloc(NCOLS, sizeof(*col));
	char label[160], attrs[96];
	if (!col)
		cmd_die(EXIT_USAGE, "out of memory");
	timeline_resample(d->busy_tl, r->t0, r->t1, NCOLS, col);
	device_label(label, sizeof(label), d);
	/* what the strip draws: the timeline's bins, which add up to busy */
	snprintf(attrs, sizeof(attrs), " data-strip=\"%" PRId64 "\" data-bins-ns=\"%" PRId64 "\"",
	         d->index, timeline_total(d->busy_tl));
	svg_group(f, lag ? "lag" : NULL, attrs);
	svg_text(f, LABEL_W - 6, y + STRIP_H / 2.0 + 4, "end", NULL, label);
	svg_rect(f, LABEL_W, y, NCOLS, STRIP_H, "bg", NULL, NULL);
	struct svg_path p;
	svg_path_begin(&p, f, "busy");
	svg_path_point(&p, LABEL_W, y + STRIP_H);
	for (size_t c = 0; c < NCOLS; c++) {
		double h = STRIP_H * col[c];
		svg_path_point(&p, LABEL_W + (double)c, y + STRIP_H - h);
		svg_path_point(&p, LABEL_W + (double)c + 1, y + STRIP_H - h);
	}
	svg_path_point(&p, LABEL_W + NCOLS, y + STRIP_H);
	svg_path_end(&p, 1);
	svg_group_end(f);
	free(col);
}

static void
busy_table(struct report *r, long lag)
{
	FILE *f = r->out;
	int64_t wall = agg_wall(r->agg);
	char b[32], label[160];
	size_t rows = 0;
	fputs("<table class=\"nums\" id=\"gpus\"><tr><th class=\"l\">Device</th><th>Busy</th>"
	      "<th>Busy %</th><th>Idle</th><th>Kernels</th><th>Copies</th><th>Ops</th></tr>\n", f);
	/* as many rows as strips: the page stays small with any number */
	for (size_t i = 0; i < agg_ndevices(r->agg) && rows < MAX_STRIPS; i++) {
		const struct agg_device *d = agg_device(r->agg, i);
		if (!d->ops)
			continue;
		rows++;
		fputs(lag == (long)i ? "<tr class=\"lag\"" : "<tr", f);
		report_data(f, "gpu", d->index);
		report_data(f, "busy-ns", d->busy);
		report_data(f, "idle-ns", wall - d->busy);
		report_data(f, "kernel-ns", d->kernel);
		report_data(f, "copy-ns", d->copy);
		report_data(f, "ops", (long long)d->ops);
		fputs(">", f);
		device_label(label, sizeof(label), d);
		report_td(f, "l", label);
		report_td(f, NULL, report_time(b, d->busy));
		snprintf(label, sizeof(label), "%.1f%%", wall ? 100.0 * (double)d->busy / (double)wall : 0);
		report_td(f, NULL, label);
		report_td(f, NULL, report_time(b, wall - d->busy));
		report_td(f, NULL, report_time(b, d->kernel));
		report_td(f, NULL, report_time(b, d->copy));
		snprintf(label, sizeof(label), "%" PRIu64, d->ops);
		report_td(f, NULL, label);
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}

void
report_gpus(struct report *r)
{
	FILE *f = r->out;
	size_t n = 0;
	long lag = report_straggler(r);
	for (size_t i = 0; i < agg_ndevices(r->agg); i++)
		n += agg_device(r->agg, i)->ops > 0;
	fputs("<section id=\"gpu\"><h2>GPU busy over time</h2>\n", f);
	if (!n) {
		fputs("<p class=\"note\">No GPU work in this trace.</p></section>\n", f);
		return;
	}
	size_t shown = n < MAX_STRIPS ? n : MAX_STRIPS;
	double h = (double)shown * (STRIP_H + STRIP_GAP) + 24;
	fputs("<div class=\"fig\">\n", f);
	svg_begin(f, LABEL_W + NCOLS + 20, h, NULL,
	          "GPU busy share over time, one strip per device");
	size_t k = 0;
	for (size_t i = 0; i < agg_ndevices(r->agg) && k < shown; i++) {
		const struct agg_device *d = agg_device(r->agg, i);
		if (!d->ops)
			continue;
		busy_strip(r, d, (double)k * (STRIP_H + STRIP_GAP), lag == (long)i);
		k++;
	}
	time_axis(r, (double)shown * (STRIP_H + STRIP_GAP));
	svg_end(f);
	busy_table(r, lag);
	fputs("</div>\n", f);
	straggler_note(r, lag);
	if (shown < n)
		fprintf(f, "<p class=\"note\">The first %zu of %zu devices.</p>\n",
		        shown, n);
	fputs("<p class=\"note\">Height: the share of each moment in which the device ran "
	      "a kernel or a copy. Idle: wall time of the trace less busy time.</p>\n"
	      "</section>\n", f);
}

/* ---- memory -------------------------------------------------------------------- */

static int
has_memory(const struct agg_device *d)
{
	/* the PyTorch allocator's counters too: trace-stats lists such a
	 * device in its memory report, so the page has its row */
	return d->has_counter || d->allocs || d->frees ||
	       d->allocator.has[AGG_ALLOCATED] || d->allocator.has[AGG_RESERVED];
}

static void
memory_strip(struct report *r, const struct agg_device *d, double y, double h)
{
	FILE *f = r->out;
	double *col = calloc(NCOLS, sizeof(*col)), top = 0;
	char label[160], b[32];
	if (!col)
		cmd_die(EXIT_USAGE, "out of memory");
	timeline_resample(d->mem_tl, r->t0, r->t1, NCOLS, col);
	for (size_t c = 0; c < NCOLS; c++)
		if (col[c] > top)
			top = col[c];
	device_label(label, sizeof(label), d);
	svg_text(f, LABEL_W - 6, y + 14, "end", NULL, label);
	svg_text(f, LABEL_W - 6, y + 28, "end", NULL, cmd_fmt_bytes(b, sizeof(b), top));
	svg_rect(f, LABEL_W, y, NCOLS, h, "bg", NULL, NULL);
	struct svg_path p;
	svg_path_begin(&p, f, "mem");
	for (size_t c = 0; c < NCOLS; c++) {
		if (col[c] < 0)
			continue;
		double v = top > 0 ? h * col[c] / top : 0;
		svg_path_point(&p, LABEL_W + (double)c, y + h - v);
		svg_path_point(&p, LABEL_W + (double)c + 1, y + h - v);
	}
	svg_path_end(&p, 0);
	free(col);
}

static void
memory_table(struct report *r)
{
	FILE *f = r->out;
	char b[32], label[160];
	fputs("<table class=\"nums\" id=\"memory\"><tr><th class=\"l\">Device</th>"
	      "<th>Peak allocated</th><th>Peak counter</th><th>Allocs</th><th>Frees</th>"
	      "<th>Not freed</th></tr>\n", f);
	size_t rows = 0;
	for (size_t i = 0; i < agg_ndevices(r->agg) && rows < MAX_STRIPS; i++) {
		const struct agg_device *d = agg_device(r->agg, i);
		if (!has_memory(d))
			continue;
		rows++;
		fputs("<tr", f);
		report_data(f, "mem-gpu", d->index);
		if (d->has_counter)
			report_data(f, "counter-peak-bytes", cmd_ns_int(d->counter_max));
		if (d->allocs || d->frees) {
			report_data(f, "allocated-peak-bytes", d->peak);
			report_data(f, "allocs", (long long)d->allocs);
			report_data(f, "frees", (long long)d->frees);
		}
		if (d->allocator.has[AGG_ALLOCATED])
			report_data(f, "allocator-allocated-peak-bytes",
			            cmd_ns_int(d->allocator.peak[AGG_ALLOCATED]));
		if (d->allocator.has[AGG_RESERVED])
			report_data(f, "allocator-reserved-peak-bytes",
			            cmd_ns_int(d->allocator.peak[AGG_RESERVED]));
		fputs(">", f);
		device_label(label, sizeof(label), d);
		report_td(f, "l", label);
		report_td(f, NULL, d->allocs || d->frees ? cmd_fmt_bytes(b, sizeof(b), (double)d->peak) : "");
		report_td(f, NULL, d->has_counter ? cmd_fmt_bytes(b, sizeof(b), d->counter_max) : "");
		snprintf(label, sizeof(label), "%" PRIu64, d->allocs);
		report_td(f, NULL, label);
		snprintf(label, sizeof(label), "%" PRIu64, d->frees);
		report_td(f, NULL, label);
		report_td(f, NULL, cmd_fmt_bytes(b, sizeof(b), (double)d->in_use));
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}

void
report_memory(struct report *r)
{
	FILE *f = r->out;
	size_t n = 0;
	for (size_t i = 0; i < agg_ndevices(r->agg); i++)
		n += has_memory(agg_device(r->agg, i));
	fputs("<section id=\"mem\"><h2>GPU memory over time</h2>\n", f);
	if (!n) {
		fputs("<p class=\"note\">No device memory events or counters in this trace.</p>"
		      "</section>\n", f);
		return;
	}
	size_t shown = n < MAX_STRIPS ? n : MAX_STRIPS;
	double sh = 48;
	fputs("<div class=\"fig\">\n", f);
	svg_begin(f, LABEL_W + NCOLS + 20, (double)shown * (sh + STRIP_GAP) + 24, NULL,
	          "GPU memory in use over time, one strip per device");
	size_t k = 0;
	for (size_t i = 0; i < agg_ndevices(r->agg) && k < shown; i++) {
		const struct agg_device *d = agg_device(r->agg, i);
		if (!has_memory(d))
			continue;
		memory_strip(r, d, (double)k * (sh + STRIP_GAP), sh);
		k++;
	}
	time_axis(r, (double)shown * (sh + STRIP_GAP));
	svg_end(f);
	memory_table(r);
	fputs("</div>\n<p class=\"note\">Memory allocated and not yet freed (from the "
	      "allocations, else the device memory counter); each strip is scaled to its "
	      "own highest value, written under its name.</p></section>\n", f);
}
