/* SPDX-License-Identifier: MIT */
/*
 * The page: its head and style (inline: nothing is fetched, and it reads
 * the same without scripts), the run header, the sections in order, and
 * the findings.
 */
#include <inttypes.h>
#include <string.h>

#include "report.h"
#include "common/svg.h"
#include "common/util.h"
#include "tracekit.h"

/* Colours: categories c0-c6 (kernel, memcpy, memset, runtime, data
 * loading, CPU, other), chosen apart for colour-blind readers. */
static const char style[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1280px;"
	"padding:16px 24px;color:#222;background:#fff}\n"
	"h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;"
	"border-bottom:1px solid #ccc}h3{font-size:14px;margin:12px 0 4px}\n"
	".fig{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}\n"
	".fig svg{flex:none;max-width:100%;height:auto}\n"
	"table.nums{border-collapse:collapse;font-size:12px}\n"
	"table.nums td,table.nums th{padding:2px 6px;text-align:right;"
	"border-bottom:1px solid #eee;white-space:nowrap}\n"
	"table.nums td.l,table.nums th.l{text-align:left;max-width:360px;"
	"overflow:hidden;text-overflow:ellipsis}\n"
	"tr.lag td{background:#fde0dc}\n"
	"dl.meta{display:grid;grid-template-columns:max-content auto;gap:0 12px;"
	"font-size:12px}dl.meta dt{color:#666}dl.meta dd{margin:0;"
	"overflow-wrap:anywhere}\n"
	".note{color:#666;font-size:12px}\n"
	"svg text{font:11px system-ui,sans-serif;fill:#333}\n"
	"svg .axis{stroke:#999;stroke-width:1}svg .grid{stroke:#eee;stroke-width:1}\n"
	"svg .bg{fill:#f3f3f3}svg .busy{fill:#2b6cb0}svg .lag .busy{fill:#c53030}\n"
	"svg .mem{fill:none;stroke:#6b46c1;stroke-width:1.5}\n"
	"svg .bar{fill:#2b6cb0}svg .hbar{fill:#4a90c2}\n"
	"svg .pct{stroke:#c05621;stroke-width:1.5;stroke-dasharray:3 2}\n"
	"svg .c0{fill:#2b6cb0}svg .c1{fill:#dd8452}svg .c2{fill:#e7b27a}"
	"svg .c3{fill:#55a868}svg .c4{fill:#c44e52}svg .c5{fill:#8172b3}"
	"svg .c6{fill:#cfcfcf}\n"
	".key span{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px}\n"
	".k0{background:#2b6cb0}.k1{background:#dd8452}.k2{background:#e7b27a}"
	".k3{background:#55a868}.k4{background:#c44e52}.k5{background:#8172b3}"
	".k6{background:#cfcfcf}\n"
	"ul.findings li{margin:2px 0}\n";

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
	for (int i = 0; i < r->nfiles; i++)
		meta_row(f, i ? "" : (r->nfiles > 1 ? "inputs" : "input"),
		         cmd_display_path(r->files[i]));
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
	r->t1 = run->t_max > run->t_min ? run->t_max : run->t_min + 1;
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width\">\n"
	      "<meta name=\"generator\" content=\"trace-report ", f);
	svg_escape(f, tk_version());
	fputs("\">\n<title>Trace report: ", f);
	svg_escape(f, cmd_display_path(r->files[0]));
	fprintf(f, "</title>\n<style>\n%s</style></head><body>\n", style);
	run_header(r);
	report_gpus(r);
	report_steps(r);
	report_ops(r);
	report_memory(r);
	fputs("</body></html>\n", f);
}
