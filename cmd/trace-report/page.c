/* SPDX-License-Identifier: MIT */
/*
 * The page: its head (common/svg.c: the style of the reports, inline),
 * the run header, then the sections in order.
 */
#include <inttypes.h>
#include <string.h>

#include "report.h"
#include "common/svg.h"
#include "common/util.h"
#include "tracekit.h"

char *
report_time(char *buf, int64_t ns)
{
	return cmd_fmt_duration(buf, 32, ns);
}

void
report_td(FILE *f, const char *cls, const char *text)
{
	fputs(cls ? "<td class=\"l\">" : "<td>", f);
	svg_escape(f, text);
	fputs("</td>", f);
}

void
report_data(FILE *f, const char *name, long long v)
{
	fprintf(f, " data-%s=\"%lld\"", name, v);
}

/* A row of the run header: name and value. */
static void
meta_row(FILE *f, const char *k, const char *v)
{
	fputs("<dt>", f);
	svg_escape(f, k);
	fputs("</dt><dd>", f);
	/* metadata can be long (device properties as JSON): cut */
	char cut[200];
	size_t n = strlen(v);
	if (n >= sizeof(cut)) {
		memcpy(cut, v, sizeof(cut) - 4);
		memcpy(cut + sizeof(cut) - 4, "...", 4);
		v = cut;
	}
	svg_escape(f, v);
	fputs("</dd>\n", f);
}

static void
run_header(struct report *r)
{
	FILE *f = r->out;
	const struct agg_run *run = agg_run(r->agg);
	char b[32], n[64];
	size_t ngpus = 0;
	for (size_t i = 0; i < agg_ndevices(r->agg); i++)
		ngpus += agg_device(r->agg, i)->ops > 0;
	fputs("<header><h1>Trace report</h1>\n<dl class=\"meta\" id=\"run\"", f);
	report_data(f, "wall-ns", agg_wall(r->agg));
	report_data(f, "events", (long long)run->events);
	report_data(f, "gpus", (long long)ngpus);
	fputs(">\n", f);
	for (int i = 0; i < r->nfiles && i < 32; i++)
		meta_row(f, i ? "" : (r->nfiles > 1 ? "inputs" : "input"),
		         cmd_display_path(r->files[i]));
	if (r->nfiles > 32) {
		snprintf(n, sizeof(n), "and %d more", r->nfiles - 32);
		meta_row(f, "", n);
	}
	meta_row(f, "wall time", report_time(b, agg_wall(r->agg)));
	snprintf(n, sizeof(n), "%" PRIu64, run->events);
	meta_row(f, "events", n);
	snprintf(n, sizeof(n), "%zu GPU%s, %zu process%s", ngpus, ngpus == 1 ? "" : "s",
	         agg_nprocesses(r->agg), agg_nprocesses(r->agg) == 1 ? "" : "es");
	meta_row(f, "devices", n);
	if (run->dropped) {
		snprintf(n, sizeof(n), "%" PRIu64 " events lost by the recorder", run->dropped);
		meta_row(f, "dropped", n);
	}
	/* the first few keys: the start time, ranks, the recorder */
	for (size_t i = 0; i < run->nmeta && i < 16; i++)
		meta_row(f, run->meta[i].key, run->meta[i].value);
	fputs("</dl></header>\n", f);
}

void
report_page(struct report *r)
{
	FILE *f = r->out;
	const struct agg_run *run = agg_run(r->agg);
	r->t0 = run->t_min;
	r->t1 = run->t_max > run->t_min ? run->t_max
	      : run->t_min < INT64_MAX ? run->t_min + 1 : run->t_min;
	char title[512];
	snprintf(title, sizeof(title), "Trace report: %s", cmd_display_path(r->files[0]));
	svg_html_begin(f, title, "trace-report", tk_version());
	run_header(r);
	report_gpus(r);
	report_steps(r);
	report_ops(r);
	report_memory(r);
	report_processes(r);
	report_findings(r);
	svg_html_end(f);
}
