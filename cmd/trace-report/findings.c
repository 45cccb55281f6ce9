/* SPDX-License-Identifier: MIT */
/*
 * The findings (analysis/findings.h, the list trace-stats prints), one
 * line each with its figures in data-* attributes, and the straggler
 * they name for the GPU strips (gpus.c).
 */
#include <string.h>

#include "report.h"
#include "common/svg.h"
#include "common/util.h"

void
report_compute_findings(struct report *r)
{
	/* trace-stats' defaults: readable times, short names, by total */
	static const struct findings_options o = { 0 };
	findings_compute(&r->findings, r->agg, &o);
}

/* " data-total-ns": a figure's key as an attribute name. */
static void
figure_attr(FILE *f, const struct finding_figure *x)
{
	char k[48];
	size_t i = 0;
	for (; x->key[i] && i + 1 < sizeof(k); i++)
		k[i] = x->key[i] == '_' ? '-' : x->key[i];
	k[i] = 0;
	report_data(f, k, x->v);
}

void
report_findings(struct report *r)
{
	FILE *f = r->out;
	fputs("<section id=\"findings\"><h2>Findings</h2>\n", f);
	if (!r->findings.n) {
		fputs("<p class=\"note\">Nothing stands out.</p></section>\n", f);
		return;
	}
	fputs("<ul class=\"findings\">\n", f);
	for (size_t i = 0; i < r->findings.n; i++) {
		const struct finding *x = &r->findings.v[i];
		const char *sev = x->severity == FINDING_WARNING ? "warning" : "note";
		char v[40];
		fprintf(f, "<li class=\"%s\"", sev);
		svg_attr(f, "data-finding", x->type);
		svg_attr(f, "data-severity", sev);
		svg_attr(f, "data-report", x->report);
		svg_attr(f, "data-name", x->name);
		/* the JSON's real, to its last digit */
		snprintf(v, sizeof(v), "%.17g", x->value);
		svg_attr(f, "data-value", v);
		for (size_t k = 0; k < x->nfig; k++)
			figure_attr(f, &x->fig[k]);
		fputs("><b>", f);
		svg_escape(f, x->type);
		fputs("</b> ", f);
		svg_escape(f, x->message);
		fputs("</li>\n", f);
	}
	fputs("</ul>\n<p class=\"note\">As <code>trace-stats</code> gives them (its "
	      "<code>--distributed</code> view for stragglers); warnings in red.</p>"
	      "</section>\n", f);
}

const struct finding *
report_straggler_finding(const struct report *r)
{
	/* the compute straggler first: in a synchronous job every rank's
	 * step ends with the slowest one's, so compute tells them apart */
	const struct finding *step = NULL;
	for (size_t i = 0; i < r->findings.n; i++) {
		const struct finding *x = &r->findings.v[i];
		if (strcmp(x->type, "straggler") != 0)
			continue;
		if (x->nfig && strcmp(x->fig[0].key, "compute_ns") == 0)
			return x;
		if (!step)
			step = x;
	}
	return step;
}
