/* SPDX-License-Identifier: MIT */
/*
 * Findings: what stands out in an aggregation (analysis/aggregate.h),
 * each as a struct: its kind, how much it matters, the group or device
 * it is about, its headline figure, its other figures, and one line of
 * text.  trace-stats prints them (text, CSV, JSON), trace-report shows
 * them; both get the same list from findings_compute(), so that the
 * page and `trace-stats --json` say the same.
 *
 * The text depends on how times and names are written (--units,
 * --full-names) and which groups come first (--sort): the caller says
 * so in struct findings_options; zero values give trace-stats' defaults.
 */
#ifndef TK_CMD_FINDINGS_H
#define TK_CMD_FINDINGS_H

#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"

/* How much a finding matters: a warning puts figures in doubt or names
 * what costs the run most (dropped data, a bottleneck, a straggler); a
 * note is worth a look. */
enum finding_severity { FINDING_NOTE, FINDING_WARNING };

/* The figures behind a finding's text, exact: integer ns or counts. */
#define FINDING_MAX_FIGURES 4
struct finding_figure {
	const char *key;         /* "total_ns", "min_ns", ... */
	int64_t v;
};

struct finding {
	const char *type;        /* bottleneck, hotspot, variance, warmup,
	                            gpu_idle, dropped, straggler */
	enum finding_severity severity;
	const char *report;      /* the table or view it is about */
	char *name;              /* the group, device or rank; "" for the run */
	double value;            /* the headline figure (share, CV, ratio) */
	char *message;
	struct finding_figure fig[FINDING_MAX_FIGURES];
	size_t nfig;
};

struct findings_options {
	double unit;             /* ns per --units unit; 0 = readable per value */
	const char *unit_name;   /* with unit > 0 */
	int full_names;          /* names uncut in the text */
	/* the order of each table's groups (qsort_r over struct agg_group
	 * pointers): which come first is which get listed; NULL = by total
	 * time, then name, domain, kind */
	int (*cmp)(const void *, const void *, void *);
	void *cmp_arg;
};

struct findings {
	struct finding *v;
	size_t n, cap;
};

/* Fill f (zeroed by the caller) from a finished aggregation. */
void findings_compute(struct findings *f, struct agg *a,
                      const struct findings_options *o);
void findings_free(struct findings *f);

/* A time as the findings and trace-stats' tables write it: readable
 * units ("1.234 ms"), or a number of o->unit. */
char *findings_fmt_time(const struct findings_options *o, char *buf, size_t n,
                        double ns);
/* The same with its unit also under --units (prose). */
char *findings_fmt_span(const struct findings_options *o, char *buf, size_t n,
                        double ns);
/* Group order by total time, then name, domain and kind (qsort_r). */
int findings_cmp_total(const void *x, const void *y, void *arg);

/* A child of the per-instance view, described for printing. */
struct per_child {
	int rank;                /* display order: ranges, kernels, copies, API */
	const char *kind, *domain, *name;
};
struct per_child per_child(struct agg *a, const struct perinst_child *c);
/* Indices of the children in display order (caller frees). */
size_t *per_children_order(struct agg *a, const struct perinst_result *p);

#endif
