/* SPDX-License-Identifier: MIT */
/*
 * trace-stats findings: bottlenecks, high variance, warm-up, idle
 * GPUs, lost data.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "common/util.h"
#include "support.h"

/* ---- findings ------------------------------------------------------------------ */

static void
add_finding(struct stats *st, const char *type, const char *report,
            const char *name, double value, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static void
add_finding(struct stats *st, const char *type, const char *report,
            const char *name, double value, const char *fmt, ...)
{
	struct stats_finding *v = tkp_grow(st->findings, &st->capfindings,
	                                   st->nfindings + 1, sizeof(*v));
	if (!v)
		cmd_die(EXIT_USAGE, "out of memory");
	st->findings = v;
	struct stats_finding *f = &v[st->nfindings++];
	f->type = type;
	f->report = report;
	f->name = strdup(name ? name : "");
	f->value = value;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&f->message, fmt, ap) < 0 || !f->name)
		cmd_die(EXIT_USAGE, "out of memory");
	va_end(ap);
}

static void straggler_findings(struct stats *st);

static const char *const table_nouns[AGG_NTABLES] = {
	"GPU kernel time", "memory operation time", "CUDA API time", "range time",
};

/* How many findings of one kind to list per table before saying "N more". */
#define FINDINGS_PER_TABLE 3

static void
table_findings(struct stats *st, enum agg_table t)
{
	struct agg *a = st->agg;
	struct stats_rows r = stats_table_rows(st, t);
	char b1[32], b2[32];
	/* share of the table: nested ranges contain each other, so their
	 * shares say nothing (--per gives shares of an instance instead) */
	if (t != AGG_RANGES && r.n >= 2) {
		unsigned listed = 0;
		for (size_t i = 0; i < r.n; i++) {
			struct agg_group *g = r.v[i];
			double p = stats_pct((double)g->s.total, (double)r.total);
			/* and only what costs the run something: 5 % of its wall
			 * time (90 % of 1 ms of copies is no bottleneck) */
			if (p < 20 || listed == FINDINGS_PER_TABLE ||
			    (double)g->s.total < 0.05 * (double)agg_wall(a))
				continue;
			listed++;
			add_finding(st, p >= 50 ? "bottleneck" : "hotspot", stats_table_keys[t],
			            g->name, p, "%s takes %.1f%% of %s (%s)",
			            stats_finding_name(st, g->name), p, table_nouns[t],
			            stats_fmt_span(st, b1, sizeof(b1), (double)g->s.total));
		}
	}
	/* copies and memsets of different sizes share a group: their
	 * durations vary by design, so no variance or warm-up findings */
	if (t == AGG_MEMOPS) {
		free(r.v);
		return;
	}
	/* high variance, among the groups that matter (>= 5 % of the time) */
	unsigned listed = 0, more = 0;
	for (size_t i = 0; i < r.n; i++) {
		struct agg_group *g = r.v[i];
		if (g->s.count < 5 || stats_pct((double)g->s.total, (double)r.total) < 5)
			continue;
		double ratio = g->s.min > 0 ? (double)g->s.max / (double)g->s.min
		                            : (g->s.max > 0 ? INFINITY : 1);
		double cv = g->s.mean > 0 ? g->s.std / g->s.mean : 0;
		if (!(ratio > 2 || cv > 0.5))
			continue;
		if (listed == FINDINGS_PER_TABLE) {
			more++;
			continue;
		}
		listed++;
		add_finding(st, "variance", stats_table_keys[t], g->name, cv,
		            "%s varies: max/min %s, CV %.2f (min %s, max %s)",
		            stats_finding_name(st, g->name),
		            isinf(ratio) ? "inf" : (snprintf(b2, sizeof(b2), "%.1f", ratio), b2),
		            cv, stats_fmt_span(st, b1, sizeof(b1), (double)g->s.min),
		            stats_fmt_span(st, (char[32]){ 0 }, 32, (double)g->s.max));
	}
	/* warm-up: the first instance much slower than the median */
	unsigned wl = 0;
	for (size_t i = 0; i < r.n; i++) {
		struct agg_group *g = r.v[i];
		/* and worth the time: the excess is 1 % of the table's */
		if (g->s.count < 3 || g->s.p50 <= 0 ||
		    (double)g->first_dur < 2 * g->s.p50 ||
		    (double)g->first_dur - g->s.p50 < 0.01 * (double)r.total)
			continue;
		if (wl == FINDINGS_PER_TABLE) {
			more++;
			continue;
		}
		wl++;
		double x = (double)g->first_dur / g->s.p50;
		add_finding(st, "warmup", stats_table_keys[t], g->name, x,
		            "%s: the first instance took %s, %.1fx the median %s",
		            stats_finding_name(st, g->name),
		            stats_fmt_span(st, b1, sizeof(b1), (double)g->first_dur), x,
		            stats_fmt_span(st, b2, sizeof(b2), g->s.p50));
	}
	free(r.v);
}

void
stats_compute_findings(struct stats *st)
{
	struct agg *a = st->agg;
	const struct agg_run *run = agg_run(a);
	char b1[32], b2[32];
	if (run->dropped)
		add_finding(st, "dropped", "run", "", (double)run->dropped,
		            "the recorder dropped %" PRIu64 " events: figures "
		            "undercount what ran", run->dropped);
	if (run->skipped)
		add_finding(st, "dropped", "run", "", (double)run->skipped,
		            "%" PRIu64 " events of kinds this version does not "
		            "know were skipped", run->skipped);
	for (int t = 0; t < AGG_NTABLES; t++)
		table_findings(st, (enum agg_table)t);
	int64_t wall = agg_wall(a);
	for (size_t i = 0; i < agg_ndevices(a); i++) {
		const struct agg_device *d = agg_device(a, i);
		if (!d->ops || wall <= 0)
			continue;
		double idle = stats_pct((double)(wall - d->busy), (double)wall);
		if (idle > 25) {
			char name[64], b3[32], b4[32];
			snprintf(name, sizeof(name), "GPU %" PRId64, d->index);
			/* a run's start-up (imports, CUDA's set-up) can be most
			 * of its wall time: say also how idle the GPU is once it
			 * has work, which is what a training loop can change */
			int64_t span = d->last - d->first;
			int64_t gaps = span > d->busy ? span - d->busy : 0;
			add_finding(st, "gpu_idle", "gpu", name, idle,
			            "%s is idle %.1f%% of the run (%s of %s); "
			            "%.1f%% from its first operation to its last (%s of %s)",
			            d->index >= 0 ? name : "an unknown GPU", idle,
			            stats_fmt_span(st, b1, sizeof(b1), (double)(wall - d->busy)),
			            stats_fmt_span(st, b2, sizeof(b2), (double)wall),
			            stats_pct((double)gaps, (double)span),
			            stats_fmt_span(st, b3, sizeof(b3), (double)gaps),
			            stats_fmt_span(st, b4, sizeof(b4), (double)span));
		}
	}
	const struct perinst_result *p = agg_per(a);
	if (p && p->dur.count) {
		double inst_total = (double)p->dur.total;
		unsigned listed = 0;
		size_t *order = stats_children_order(a, p);
		for (size_t i = 0; i < p->nchildren && listed < FINDINGS_PER_TABLE; i++) {
			const struct perinst_child *c = &p->children[order[i]];
			struct stats_child d = stats_child(a, c);
			/* ranges and API calls: what the thread spends each
			 * instance on (GPU work runs beside it) */
			if (d.rank != 0 && d.rank != 5)
				continue;
			double share = stats_pct((double)c->time.total, inst_total);
			if (share < 20 || share > 99.5)
				continue;
			listed++;
			add_finding(st, share >= 50 ? "bottleneck" : "hotspot", "per",
			            d.name, share, "%s takes %.1f%% of each %s",
			            stats_finding_name(st, d.name), share, stats_per_name(st));
		}
		free(order);
	}
	if (agg_ranks(a))
		straggler_findings(st);
}

static int
cmp_double(const void *x, const void *y)
{
	double p = *(const double *)x, q = *(const double *)y;
	return (p > q) - (p < q);
}

/* A straggler sticks out this much above the median of the other ranks. */
#define STRAGGLER_RATIO 1.2

/* The rank whose value is highest, when it is STRAGGLER_RATIO times the
 * median of the others or more: its index, the median in *med; else -1. */
static long
straggler(const double *v, size_t n, double *med)
{
	if (n < 2)
		return -1;
	size_t top = 0;
	for (size_t i = 1; i < n; i++)
		if (v[i] > v[top])
			top = i;
	double *o = malloc((n - 1) * sizeof(*o));
	if (!o)
		cmd_die(EXIT_USAGE, "out of memory");
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (i != top)
			o[k++] = v[i];
	qsort(o, k, sizeof(*o), cmp_double);
	*med = k % 2 ? o[k / 2] : (o[k / 2 - 1] + o[k / 2]) / 2;
	free(o);
	return *med > 0 && v[top] >= STRAGGLER_RATIO * *med ? (long)top : -1;
}

/* --distributed: the rank whose compute time, or whose mean step, sticks
 * out.  In a synchronous job every rank's step ends at the slowest
 * one's collective, so the compute time names the straggler when the
 * step times agree. */
static void
straggler_findings(struct stats *st)
{
	size_t n;
	const struct rank_row *v = ranks_rows(agg_ranks(st->agg), &n);
	double *x = malloc((n + 1) * sizeof(*x)), med;
	const char **who = malloc((n + 1) * sizeof(*who));
	char b1[32], b2[32];
	if (!x || !who)
		cmd_die(EXIT_USAGE, "out of memory");
	for (int pass = 0; pass < 2; pass++) {
		size_t k = 0;
		for (size_t i = 0; i < n; i++) {
			if (pass == 0 && v[i].ops) {
				x[k] = (double)v[i].f.compute;
				who[k++] = v[i].name;
			} else if (pass == 1 && v[i].nsteps) {
				x[k] = (double)v[i].step_total / (double)v[i].nsteps;
				who[k++] = v[i].name;
			}
		}
		long s = straggler(x, k, &med);
		if (s < 0)
			continue;
		char others[64] = "the other rank";
		if (k > 2)
			snprintf(others, sizeof(others), "the median of the other %zu ranks", k - 1);
		add_finding(st, "straggler", "ranks", who[s], x[s] / med,
		            "%s %s %s, %.2fx %s (%s)",
		            who[s], pass ? "takes on average per step" : "computes",
		            stats_fmt_span(st, b1, sizeof(b1), x[s]), x[s] / med, others,
		            stats_fmt_span(st, b2, sizeof(b2), med));
	}
	free(x);
	free(who);
}

void
stats_free_findings(struct stats *st)
{
	for (size_t i = 0; i < st->nfindings; i++) {
		free(st->findings[i].name);
		free(st->findings[i].message);
	}
	free(st->findings);
	st->findings = NULL;
	st->nfindings = st->capfindings = 0;
}
