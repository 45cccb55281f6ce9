/* SPDX-License-Identifier: MIT */
/*
 * trace-report's parts, shared by its files: trace-report.c (options,
 * inputs), page.c (the document and the run header; the style is
 * common/svg.c's), gpus.c (busy strips, memory over time), steps.c (step
 * times by category), ops.c (top operations, their histograms),
 * procs.c (processes), findings.c (the findings, the straggler).  Every
 * figure comes from one aggregation (analysis/aggregate.h), the one
 * trace-stats prints, so that the report and `trace-stats --json` agree
 * to the nanosecond.  Each figure is also written, exactly, in data-*
 * attributes (integer ns, bytes, counts) for programs and the tests.
 * The files share no variable: main() owns one struct report.
 */
#ifndef TK_CMD_REPORT_H
#define TK_CMD_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "analysis/aggregate.h"
#include "analysis/findings.h"

/* The width of a picture (px); numbers go beside it. */
#define REPORT_FIG_W 640

struct report {
	FILE *out;
	struct agg *agg;
	char **files;            /* the operands ("-" = stdin) */
	int nfiles;
	uint64_t top;            /* rows of the operation tables */
	uint64_t nhist;          /* histograms per table */
	int64_t t0, t1;          /* the time axis: the trace's span */
	struct findings findings; /* report_compute_findings() */
};

/* page.c */
void report_page(struct report *r);
/* A time for people into buf (32 bytes). */
char *report_time(char *buf, int64_t ns);
/* <td> cells and data attributes, escaped. */
void report_td(FILE *f, const char *cls, const char *text);
void report_data(FILE *f, const char *name, long long v);

/* findings.c: the findings of the aggregation, as trace-stats computes
 * them; the section; the straggler finding (compute first), or NULL */
void report_compute_findings(struct report *r);
void report_findings(struct report *r);
const struct finding *report_straggler_finding(const struct report *r);
/* gpus.c: the index of the device of the straggler rank (its strip and
 * row highlighted), or -1 */
long report_straggler(const struct report *r);
void report_gpus(struct report *r);
void report_memory(struct report *r);
/* steps.c */
void report_steps(struct report *r);
/* ops.c */
void report_ops(struct report *r);
/* procs.c: the recorded processes' lifetimes (none when imported) */
void report_processes(struct report *r);

#endif
