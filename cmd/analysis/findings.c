/* SPDX-License-Identifier: MIT */
/*
 * Findings: bottlenecks, high variance, warm-up, idle GPUs, lost data,
 * stragglers.  See findings.h.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "findings.h"
#include "common/short_name.h"
#include "common/util.h"
#include "support.h"

/* One computation: the options, the aggregation, the list it fills. */
struct ctx {
	const struct findings_options *o;
	struct agg *agg;
	struct findings *out;
};

char *
findings_fmt_time(const struct findings_options *o, char *buf, size_t n, double ns)
{
	if (o->unit > 0) {
		if (o->unit == 1)
			snprintf(buf, n, "%.0f", ns);
		else
			snprintf(buf, n, "%.3f", ns / o->unit);
		return buf;
	}
	double a = fabs(ns);
	if (a < 1e3)
		snprintf(buf, n, "%.0f ns", ns);
	else if (a < 1e6)
		snprintf(buf, n, "%.3f us", ns / 1e3);
	else if (a < 1e9)
		snprintf(buf, n, "%.3f ms", ns / 1e6);
	else
		snprintf(buf, n, "%.3f s", ns / 1e9);
	return buf;
}

char *
findings_fmt_span(const struct findings_options *o, char *buf, size_t n, double ns)
{
	findings_fmt_time(o, buf, n, ns);
	if (o->unit > 0) {
		size_t l = strlen(buf);
		snprintf(buf + l, n > l ? n - l : 0, " %s", o->unit_name);
	}
	return buf;
}

static double
pct(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0;
}

/* Names in the one-line findings: shortened and cut (common/short_name.h)
 * unless full_names.  Valid until the next call. */
static const char *
finding_name(const struct ctx *st, const char *name)
{
	return st->o->full_names ? name : cmd_short_name(name, 60);
}

static const char *
per_name(const struct ctx *st)
{
	const char *n = agg_per_name(st->agg);
	return n ? n : "(no steps found)";
}

static const char *const table_keys[AGG_NTABLES] = {
	"kernels", "memops", "api", "ranges",
};

static struct finding *
add_finding(struct ctx *st, const char *type, const char *report,
            const char *name, double value, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static struct finding *
add_finding(struct ctx *st, const char *type, const char *report,
            const char *name, double value, const char *fmt, ...)
{
	struct findings *l = st->out;
	struct finding *v = tkp_grow(l->v, &l->cap, l->n + 1, sizeof(*v));
	if (!v)
		cmd_die(EXIT_USAGE, "out of memory");
	l->v = v;
	struct finding *f = &v[l->n++];
	memset(f, 0, sizeof(*f));
	f->type = type;
	f->severity = strcmp(type, "dropped") == 0 || strcmp(type, "bottleneck") == 0 ||
	              strcmp(type, "straggler") == 0 ? FINDING_WARNING : FINDING_NOTE;
	f->report = report;
	f->name = strdup(name ? name : "");
	f->value = value;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&f->message, fmt, ap) < 0 || !f->name)
		cmd_die(EXIT_USAGE, "out of memory");
	va_end(ap);
	return f;
}

/* A figure of the finding's text, exact. */
static void
add_figure(struct finding *f, const char *key, int64_t v)
{
	if (f->nfig < FINDING_MAX_FIGURES)
		f->fig[f->nfig++] = (struct finding_figure){ key, v };
}

int
findings_cmp_total(const void *x, const void *y, void *arg)
{
	const struct agg_group *a = *(struct agg_group *const *)x;
	const struct agg_group *b = *(struct agg_group *const *)y;
	(void)arg;
	if (a->s.total != b->s.total)
		return a->s.total > b->s.total ? -1 : 1;
	int c = strcmp(a->name, b->name);
	if (c)
		return c;
	c = strcmp(a->domain, b->domain);
	return c ? c : (int)a->kind - (int)b->kind;
}

/* The groups of one table, in the options' order, and their time. */
struct rows {
	struct agg_group **v;
	size_t n;
	int64_t total;
};

static struct rows
table_rows(const struct ctx *st, enum agg_table t)
{
	struct agg *a = st->agg;
	struct rows r = { 0 };
	r.v = calloc(agg_ngroups(a) + 1, sizeof(*r.v));
	if (!r.v)
		cmd_die(EXIT_USAGE, "out of memory");
	for (size_t i = 0; i < agg_ngroups(a); i++) {
		struct agg_group *g = agg_group(a, i);
		if (g->table != t || g->s.count == 0)
			continue;
		r.v[r.n++] = g;
		if (__builtin_add_overflow(r.total, g->s.total, &r.total))
			r.total = INT64_MAX;
	}
	qsort_r(r.v, r.n, sizeof(*r.v), st->o->cmp ? st->o->cmp : findings_cmp_total,
	        st->o->cmp_arg);
	return r;
}

static const char *const table_nouns[AGG_NTABLES] = {
	"GPU kernel time", "memory operation time", "CUDA API time", "range time",
};

/* How many findings of one kind to list per table: the largest (the rows
 * come by total time); the rest are left out, uncounted. */
#define FINDINGS_PER_TABLE 3

static void
table_findings(struct ctx *st, enum agg_table t)
{
	struct agg *a = st->agg;
	struct rows r = table_rows(st, t);
	char b1[32], b2[32];
	/* share of the table: nested ranges contain each other, so their
	 * shares say nothing (--per gives shares of an instance instead) */
	if (t != AGG_RANGES && r.n >= 2) {
		unsigned listed = 0;
		for (size_t i = 0; i < r.n; i++) {
			struct agg_group *g = r.v[i];
			double p = pct((double)g->s.total, (double)r.total);
			/* and only what costs the run something: 5 % of its wall
			 * time (90 % of 1 ms of copies is no bottleneck) */
			if (p < 20 || listed == FINDINGS_PER_TABLE ||
			    (double)g->s.total < 0.05 * (double)agg_wall(a))
				continue;
			listed++;
			struct finding *f = add_finding(
				st, p >= 50 ? "bottleneck" : "hotspot", table_keys[t],
				g->name, p, "%s takes %.1f%% of %s (%s)",
				finding_name(st, g->name), p, table_nouns[t],
				findings_fmt_span(st->o, b1, sizeof(b1), (double)g->s.total));
			add_figure(f, "total_ns", g->s.total);
			add_figure(f, "table_ns", r.total);
		}
	}
	/* copies and memsets of different sizes share a group: their
	 * durations vary by design, so no variance or warm-up findings */
	if (t == AGG_MEMOPS) {
		free(r.v);
		return;
	}
	/* high variance, among the groups that matter (>= 5 % of the time) */
	unsigned listed = 0;
	for (size_t i = 0; i < r.n; i++) {
		struct agg_group *g = r.v[i];
		if (g->s.count < 5 || pct((double)g->s.total, (double)r.total) < 5)
			continue;
		double ratio = g->s.min > 0 ? (double)g->s.max / (double)g->s.min
		                            : (g->s.max > 0 ? INFINITY : 1);
		double cv = g->s.mean > 0 ? g->s.std / g->s.mean : 0;
		if (!(ratio > 2 || cv > 0.5))
			continue;
		if (listed == FINDINGS_PER_TABLE)
			continue;
		listed++;
		struct finding *f = add_finding(st, "variance", table_keys[t], g->name, cv,
		            "%s varies: max/min %s, CV %.2f (min %s, max %s)",
		            finding_name(st, g->name),
		            isinf(ratio) ? "inf" : (snprintf(b2, sizeof(b2), "%.1f", ratio), b2),
		            cv, findings_fmt_span(st->o, b1, sizeof(b1), (double)g->s.min),
		            findings_fmt_span(st->o, (char[32]){ 0 }, 32, (double)g->s.max));
		add_figure(f, "min_ns", g->s.min);
		add_figure(f, "max_ns", g->s.max);
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
		if (wl == FINDINGS_PER_TABLE)
			continue;
		wl++;
		double x = (double)g->first_dur / g->s.p50;
		struct finding *f = add_finding(st, "warmup", table_keys[t], g->name, x,
		            "%s: the first instance took %s, %.1fx the median %s",
		            finding_name(st, g->name),
		            findings_fmt_span(st->o, b1, sizeof(b1), (double)g->first_dur), x,
		            findings_fmt_span(st->o, b2, sizeof(b2), g->s.p50));
		add_figure(f, "first_ns", g->first_dur);
	}
	free(r.v);
}

static void straggler_findings(struct ctx *st);

static void
compute(struct ctx *st)
{
	struct agg *a = st->agg;
	const struct agg_run *run = agg_run(a);
	char b1[32], b2[32];
	if (run->dropped)
		add_figure(add_finding(st, "dropped", "run", "", (double)run->dropped,
		                       "the recorder dropped %" PRIu64 " events: figures "
		                       "undercount what ran", run->dropped),
		           "events", (int64_t)run->dropped);
	if (run->skipped)
		add_figure(add_finding(st, "dropped", "run", "", (double)run->skipped,
		                       "%" PRIu64 " events of kinds this version does not "
		                       "know were skipped", run->skipped),
		           "events", (int64_t)run->skipped);
	for (int t = 0; t < AGG_NTABLES; t++)
		table_findings(st, (enum agg_table)t);
	int64_t wall = agg_wall(a);
	for (size_t i = 0; i < agg_ndevices(a); i++) {
		const struct agg_device *d = agg_device(a, i);
		if (!d->ops || wall <= 0)
			continue;
		double idle = pct((double)(wall - d->busy), (double)wall);
		if (idle > 25) {
			char name[64], b3[32], b4[32];
			snprintf(name, sizeof(name), "GPU %" PRId64, d->index);
			/* a run's start-up (imports, CUDA's set-up) can be most
			 * of its wall time: say also how idle the GPU is once it
			 * has work, which is what a training loop can change */
			int64_t span = d->last - d->first;
			int64_t gaps = span > d->busy ? span - d->busy : 0;
			struct finding *f = add_finding(st, "gpu_idle", "gpu", name, idle,
			            "%s is idle %.1f%% of the run (%s of %s); "
			            "%.1f%% from its first operation to its last (%s of %s)",
			            d->index >= 0 ? name : "an unknown GPU", idle,
			            findings_fmt_span(st->o, b1, sizeof(b1), (double)(wall - d->busy)),
			            findings_fmt_span(st->o, b2, sizeof(b2), (double)wall),
			            pct((double)gaps, (double)span),
			            findings_fmt_span(st->o, b3, sizeof(b3), (double)gaps),
			            findings_fmt_span(st->o, b4, sizeof(b4), (double)span));
			add_figure(f, "idle_ns", wall - d->busy);
			add_figure(f, "wall_ns", wall);
			add_figure(f, "gaps_ns", gaps);
			add_figure(f, "span_ns", span);
		}
	}
	const struct perinst_result *p = agg_per(a);
	if (p && p->dur.count) {
		double inst_total = (double)p->dur.total;
		unsigned listed = 0;
		size_t *order = per_children_order(a, p);
		for (size_t i = 0; i < p->nchildren && listed < FINDINGS_PER_TABLE; i++) {
			const struct perinst_child *c = &p->children[order[i]];
			struct per_child d = per_child(a, c);
			/* ranges and API calls: what the thread spends each
			 * instance on (GPU work runs beside it) */
			if (d.rank != 0 && d.rank != 5)
				continue;
			double share = pct((double)c->time.total, inst_total);
			if (share < 20 || share > 99.5)
				continue;
			listed++;
			struct finding *f = add_finding(
				st, share >= 50 ? "bottleneck" : "hotspot", "per",
				d.name, share, "%s takes %.1f%% of each %s",
				finding_name(st, d.name), share, per_name(st));
			add_figure(f, "total_ns", c->time.total);
			add_figure(f, "instances_ns", p->dur.total);
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
straggler_findings(struct ctx *st)
{
	size_t n;
	const struct rank_row *v = ranks_rows(agg_ranks(st->agg), &n);
	double *x = malloc((n + 1) * sizeof(*x)), med;
	size_t *who = malloc((n + 1) * sizeof(*who));
	char b1[32], b2[32];
	if (!x || !who)
		cmd_die(EXIT_USAGE, "out of memory");
	for (int pass = 0; pass < 2; pass++) {
		size_t k = 0;
		for (size_t i = 0; i < n; i++) {
			if (pass == 0 && v[i].ops) {
				x[k] = (double)v[i].f.compute;
				who[k++] = i;
			} else if (pass == 1 && v[i].nsteps) {
				x[k] = (double)v[i].step_total / (double)v[i].nsteps;
				who[k++] = i;
			}
		}
		long s = straggler(x, k, &med);
		if (s < 0)
			continue;
		char others[64] = "the other rank";
		if (k > 2)
			snprintf(others, sizeof(others), "the median of the other %zu ranks", k - 1);
		const struct rank_row *w = &v[who[s]];
		struct finding *f = add_finding(st, "straggler", "ranks", w->name, x[s] / med,
		            "%s %s %s, %.2fx %s (%s)",
		            w->name, pass ? "takes on average per step" : "computes",
		            findings_fmt_span(st->o, b1, sizeof(b1), x[s]), x[s] / med, others,
		            findings_fmt_span(st->o, b2, sizeof(b2), med));
		if (pass == 0) {
			add_figure(f, "compute_ns", w->f.compute);
		} else {
			add_figure(f, "step_total_ns", w->step_total);
			add_figure(f, "steps", (int64_t)w->nsteps);
		}
	}
	free(x);
	free(who);
}

void
findings_compute(struct findings *f, struct agg *a, const struct findings_options *o)
{
	struct ctx st = { o, a, f };
	compute(&st);
}

void
findings_free(struct findings *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].name);
		free(f->v[i].message);
	}
	free(f->v);
	f->v = NULL;
	f->n = f->cap = 0;
}

/* ---- per-instance children ---------------------------------------------------- */

struct per_child
per_child(struct agg *a, const struct perinst_child *c)
{
	struct per_child d = { 0, "gpu", "", "" };
	if (c->group == PERINST_ALL_KERNELS) {
		d.rank = 1;
		d.name = "all kernels";
		return d;
	}
	if (c->group == PERINST_ALL_COPIES) {
		d.rank = 3;
		d.name = "all copies and memsets";
		return d;
	}
	const struct agg_group *g = agg_group(a, c->group);
	static const int rank[AGG_NTABLES] = { 2, 4, 5, 0 };
	d.rank = rank[g->table];
	d.kind = tk_kind_name(g->kind);
	d.domain = g->domain;
	d.name = g->name;
	return d;
}

/* What cmp_children() compares the indices of. */
struct children_sort {
	struct agg *a;
	const struct perinst_result *p;
};

static int
cmp_children(const void *x, const void *y, void *ctx)
{
	const struct children_sort *cs = ctx;
	const struct perinst_child *a = &cs->p->children[*(const size_t *)x];
	const struct perinst_child *b = &cs->p->children[*(const size_t *)y];
	struct per_child da = per_child(cs->a, a), db = per_child(cs->a, b);
	if (da.rank != db.rank)
		return da.rank - db.rank;
	if (a->time.total != b->time.total)
		return a->time.total > b->time.total ? -1 : 1;
	return strcmp(da.name, db.name);
}

size_t *
per_children_order(struct agg *a, const struct perinst_result *p)
{
	size_t *order = calloc(p->nchildren + 1, sizeof(*order));
	if (!order)
		cmd_die(EXIT_USAGE, "out of memory");
	for (size_t i = 0; i < p->nchildren; i++)
		order[i] = i;
	struct children_sort cs = { a, p };
	qsort_r(order, p->nchildren, sizeof(*order), cmp_children, &cs);
	return order;
}
