/* SPDX-License-Identifier: MIT */
/*
 * The processes of a recording: a bar per process over its lifetime on
 * the trace's time axis (its start to start + wall), with its wall,
 * CPU and peak memory beside.  Processes without their end (no rusage
 * event: imported traces) are left out of the picture.
 */
#include <inttypes.h>

#include "report.h"
#include "common/svg.h"
#include "common/util.h"

#define LABEL_W 150
#define PLOT_W 480
#define ROW_H 18
#define MAX_ROWS 64

static int
drawn(const struct agg_process *p)
{
	return p->has_rusage && p->wall > 0;
}

static void
bars(struct report *r, size_t shown)
{
	FILE *f = r->out;
	char label[160], b[32];
	double span = (double)r->t1 - (double)r->t0;
	svg_begin(f, LABEL_W + PLOT_W + 20, (double)shown * ROW_H + 4, NULL,
	          "processes over time, from start to end");
	size_t k = 0;
	for (size_t i = 0; i < agg_nprocesses(r->agg) && k < shown; i++) {
		const struct agg_process *p = agg_process(r->agg, i);
		if (!drawn(p))
			continue;
		double y = (double)k++ * ROW_H;
		snprintf(label, sizeof(label), "%s %" PRId64, p->name, p->pid);
		svg_text(f, LABEL_W - 6, y + 13, "end", NULL, label);
		double x = ((double)p->start - (double)r->t0) / span * PLOT_W;
		double w = (double)p->wall / span * PLOT_W;
		x = x < 0 ? 0 : x > PLOT_W ? PLOT_W : x;
		w = w < 1 ? 1 : x + w > PLOT_W ? PLOT_W - x : w;
		snprintf(label, sizeof(label), "%s: %s", p->command, report_time(b, p->wall));
		svg_rect(f, LABEL_W + x, y + 2, w, ROW_H - 4, "bar", NULL, label);
	}
	svg_end(f);
}

static void
table(struct report *r, size_t shown)
{
	FILE *f = r->out;
	char b[32];
	fputs("<table class=\"nums\" id=\"procs\"><tr><th class=\"l\">Process</th><th>PID</th>"
	      "<th>Wall</th><th>User</th><th>System</th><th>Max RSS</th></tr>\n", f);
	size_t k = 0;
	for (size_t i = 0; i < agg_nprocesses(r->agg) && k < shown; i++) {
		const struct agg_process *p = agg_process(r->agg, i);
		if (!drawn(p))
			continue;
		k++;
		fputs("<tr", f);
		report_data(f, "pid", p->pid);
		report_data(f, "wall-ns", p->wall);
		report_data(f, "user-ns", p->utime);
		report_data(f, "system-ns", p->stime);
		report_data(f, "max-rss-bytes", (long long)p->max_rss);
		fputs("><td class=\"l\"", f);
		svg_attr(f, "title", p->command);
		fputs(">", f);
		svg_escape(f, p->name);
		fprintf(f, "</td><td>%" PRId64 "</td>", p->pid);
		report_td(f, NULL, report_time(b, p->wall));
		report_td(f, NULL, report_time(b, p->utime));
		report_td(f, NULL, report_time(b, p->stime));
		report_td(f, NULL, cmd_fmt_bytes(b, sizeof(b), (double)p->max_rss));
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}

void
report_processes(struct report *r)
{
	size_t n = 0;
	for (size_t i = 0; i < agg_nprocesses(r->agg); i++)
		n += drawn(agg_process(r->agg, i));
	if (!n)
		return;  /* imported traces: the run header counts them */
	size_t shown = n < MAX_ROWS ? n : MAX_ROWS;
	FILE *f = r->out;
	fputs("<section id=\"procsec\"><h2>Processes</h2>\n<div class=\"fig\">\n", f);
	bars(r, shown);
	table(r, shown);
	fputs("</div>\n", f);
	if (shown < n)
		fprintf(f, "<p class=\"note\">The first %zu of %zu processes.</p>\n", shown, n);
	fputs("</section>\n", f);
}
