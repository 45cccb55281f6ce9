/* SPDX-License-Identifier: MIT */
/*
 * trace-diff: the operations of the two traces matched by kind, domain
 * and name (normalized with --normalize, several groups of a trace then
 * merging into one row), compared instance by instance with the
 * Mann-Whitney U test and, with several runs on both sides, run by run
 * with Welch's t-test, the p-values adjusted by Holm over all of them,
 * and given a verdict (the rule is in trace-diff(1), VERDICTS).  With
 * different numbers of runs on the two sides, the counts and times in
 * all that the rule weighs are means per run (diff_per_run()); the
 * instances' percentiles pool every run as they are.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "analysis/normalize.h"
#include "common/strmap.h"
#include "common/util.h"
#include "support.h"

/* The row of this identity, created on first use. */
static struct diff_row *
row_for(struct diff *df, struct strmap *map, const struct agg_group *g,
        const char *name)
{
	size_t ld = strlen(g->domain), ln = strlen(name);
	char *key = cmd_xrealloc(NULL, ld + ln + 2);
	key[0] = (char)g->kind;
	memcpy(key + 1, g->domain, ld);
	key[1 + ld] = '\x1f';
	memcpy(key + 2 + ld, name, ln);
	long i = strmap_get(map, key, ld + ln + 2);
	if (i < 0) {
		i = (long)df->nrows;
		struct diff_row *rows = tkp_grow(df->rows, &df->caprows, df->nrows + 1,
		                                 sizeof(*rows));
		if (!rows)
			cmd_die(EXIT_USAGE, "out of memory");
		df->rows = rows;
		struct diff_row *r = &df->rows[df->nrows++];
		memset(r, 0, sizeof(*r));
		r->table = g->table;
		r->kind = g->kind;
		r->domain = cmd_xstrdup(g->domain);
		r->name = cmd_xstrdup(name);
		if (strmap_put(map, key, ld + ln + 2, i) < 0)
			cmd_die(EXIT_USAGE, "out of memory");
	}
	free(key);
	return &df->rows[i];
}

/* Add group g of a trace with `nruns` runs to one side of a row;
 * with --normalize (`names`), keep its name. */
static void
attach(struct diff_side *s, struct agg_group *g, uint32_t nruns, int names)
{
	if (!s->present) {
		s->present = 1;
		s->d = &g->dur;
		s->s = g->s;
		if (nruns >= 2) {
			s->nruns = nruns;
			s->runs = calloc(nruns, sizeof(*s->runs));
			s->run_counts = calloc(nruns, sizeof(*s->run_counts));
			if (!s->runs || !s->run_counts)
				cmd_die(EXIT_USAGE, "out of memory");
		}
	} else {
		/* --normalize: a second name of this trace lands here */
		if (!s->owned) {
			/* s->d points to `own` once the rows stop moving */
			dist_init(&s->own, 0);
			if (dist_merge(&s->own, s->d) < 0)
				cmd_die(EXIT_USAGE, "out of memory");
			s->owned = 1;
		}
		if (dist_merge(&s->own, &g->dur) < 0)
			cmd_die(EXIT_USAGE, "out of memory");
	}
	s->bytes += g->bytes;
	for (uint32_t i = 0; i < g->nrun_total && i < s->nruns; i++) {
		s->runs[i] += (double)g->run_total[i];
		s->run_counts[i] += (double)g->run_count[i];
	}
	if (names) {
		char **v = tkp_grow(s->names, &s->capnames, s->nnames + 1, sizeof(*v));
		if (!v)
			cmd_die(EXIT_USAGE, "out of memory");
		s->names = v;
		s->names[s->nnames++] = cmd_xstrdup(g->name);
	}
}

static double
median_ratio(const struct summary *b, const struct summary *a)
{
	if (b->p50 > 0)
		return a->p50 / b->p50;
	return a->p50 > 0 ? INFINITY : 1;
}

double
diff_per_run(const struct diff *df, int side, double total)
{
	/* a divisor of 1 leaves the totals exactly as they are */
	return total / df->divisor[side];
}

double
diff_wall(const struct diff *df, int side)
{
	struct agg *a = df->agg[side];
	if (!df->per_run)
		return (double)agg_wall(a);
	/* not the trace's wall over the number of runs: a repeated
	 * recording's wall holds its start-up and the gaps between runs */
	const struct agg_run *run = agg_run(a);
	double sum = 0;
	for (uint32_t i = 0; i < run->runs_seen; i++)
		sum += (double)run->run_wall[i];
	return sum / df->divisor[side];
}

double
diff_row_calls(const struct diff_row *r)
{
	return r->side[1].count / r->side[0].count;
}

/* The tests of a row; its verdict comes once every row is tested. */
static void
compare(struct diff *df, struct diff_row *r, int64_t *scratch)
{
	struct diff_side *b = &r->side[0], *a = &r->side[1];
	for (int s = 0; s < 2; s++)
		if (r->side[s].present) {
			r->side[s].count = diff_per_run(df, s, (double)r->side[s].s.count);
			r->side[s].total = diff_per_run(df, s, (double)r->side[s].s.total);
		}
	r->delta = (a->present ? a->total : 0) - (b->present ? b->total : 0);
	r->ratio = NAN;
	r->p_holm = NAN;
	r->test.p = r->runs_test.p = r->count_test.p = 1;
	if (!a->present || !b->present)
		return;
	r->ratio = median_ratio(&b->s, &a->s);
	double calls = diff_row_calls(r);
	r->calls = calls - 1 > df->opt->threshold ? 1 : 1 - calls > df->opt->threshold ? -1 : 0;
	/* the summaries are taken: the values may be reordered */
	if (diff_mwu_any(b->d->v, b->d->count, a->d->v, a->d->count, scratch,
	                 &r->test) < 0)
		cmd_die(EXIT_USAGE, "out of memory");
	if (df->runs) {
		diff_welch_values(b->runs, b->nruns, a->runs, a->nruns, &r->runs_test);
		diff_welch_values(b->run_counts, b->nruns, a->run_counts, a->nruns,
		                  &r->count_test);
	}
}

/* The test a row's verdict rests on, NULL when none: with runs, that of
 * the runs' counts when the count changed (the same number of calls in
 * every run, another in every run after, is a certain change, however
 * little time it adds), else that of the runs' times; with one run
 * each, that of the instances (a count changed in one run each is an
 * observation: no test). */
static const struct diff_test_result *
deciding_test(const struct diff *df, const struct diff_row *r)
{
	switch (diff_row_evidence(df, r)) {
	case EV_RUNS: return r->calls ? &r->count_test : &r->runs_test;
	case EV_INSTANCES: return &r->test;
	default: return NULL;
	}
}

enum diff_evidence
diff_row_evidence(const struct diff *df, const struct diff_row *r)
{
	if (!r->side[0].present || !r->side[1].present)
		return EV_NONE;
	/* runs: the run-to-run spread of its time per run decides, be it
	 * in calls or in durations */
	if (df->runs)
		return r->runs_test.test == TEST_WELCH ? EV_RUNS : EV_NONE;
	/* one run each: a count is observed, not sampled */
	if (r->calls)
		return EV_COUNT;
	return r->test.test != TEST_NONE ? EV_INSTANCES : EV_NONE;
}

const char *
diff_evidence_name(enum diff_evidence e)
{
	static const char *const names[] = { NULL, "instances", "runs", "count" };
	return names[e];
}

/* Holm over every row tested: the verdicts of the whole comparison err
 * with probability at most alpha, however many operations there are. */
static void
adjust(struct diff *df)
{
	double *p = malloc((df->nrows ? df->nrows : 1) * sizeof(*p));
	size_t *at = malloc((df->nrows ? df->nrows : 1) * sizeof(*at));
	if (!p || !at)
		cmd_die(EXIT_USAGE, "out of memory");
	size_t m = 0;
	for (size_t i = 0; i < df->nrows; i++) {
		struct diff_row *r = &df->rows[i];
		enum diff_evidence e = diff_row_evidence(df, r);
		if (e != EV_INSTANCES && e != EV_RUNS)
			continue;
		/* a row whose time in all, both sides together, is below
		 * --min-share can never change by that much: it can never be
		 * called faster or slower, so it is no hypothesis of the
		 * family.  (The pooled time is fixed under any rearrangement
		 * of the pooled values, so choosing by it keeps each test's
		 * null distribution as it was.  With per_run, that time is
		 * twice the mean over the runs of both sides together, which
		 * is as fixed: the sum of the two sides' means would not be,
		 * as a run weighs 1/3 on one side and 1/5 on the other.) */
		double runs = (df->divisor[0] + df->divisor[1]) / 2;
		double pooled = ((double)r->side[0].s.total + (double)r->side[1].s.total) / runs;
		if (pooled < df->opt->min_share * df->reference[r->table])
			continue;
		p[m] = deciding_test(df, r)->p;
		at[m++] = i;
	}
	if (diff_holm(p, m) < 0)
		cmd_die(EXIT_USAGE, "out of memory");
	for (size_t k = 0; k < m; k++)
		df->rows[at[k]].p_holm = p[k];
	df->family = m;
	free(p);
	free(at);
}

/* What a row's change is measured against, per table: the time of its
 * kind on the larger side, or the wall time when that is smaller, so
 * that a kernel's change counts among kernels even in a run that
 * spends most of its time on the CPU (per run, as the rows' changes,
 * with per_run). */
static void
references(struct diff *df)
{
	double side[AGG_NTABLES][2];
	memset(side, 0, sizeof(side));
	for (size_t i = 0; i < df->nrows; i++)
		for (int s = 0; s < 2; s++)
			if (df->rows[i].side[s].present)
				side[df->rows[i].table][s] += df->rows[i].side[s].total;
	double w0 = diff_wall(df, 0), w1 = diff_wall(df, 1);
	double wall = w0 > w1 ? w0 : w1;
	for (int t = 0; t < AGG_NTABLES; t++) {
		double kind = side[t][0] > side[t][1] ? side[t][0] : side[t][1];
		df->reference[t] = kind < wall ? kind : wall;
	}
}

/* Which way the row moved, or 0 after setting *why (and *conflict when
 * its median and its time in all disagree): by its time in all when
 * its count changed, else by its median. */
static int
direction(const struct diff *df, const struct diff_row *r, double threshold,
          const char **why, int *conflict)
{
	const struct diff_side *b = &r->side[0], *a = &r->side[1];
	int sign = r->delta > 0 ? 1 : r->delta < 0 ? -1 : 0;
	double calls = diff_row_calls(r);
	if (calls - 1 > threshold || 1 - calls > threshold) {
		if (!sign)
			*why = "more or fewer calls, same time";
		return sign;
	}
	int dir = r->ratio - 1 > threshold ? 1 : 1 - r->ratio > threshold ? -1 : 0;
	if (!dir) {
		*why = "within the threshold";
		return 0;
	}
	if (fabs(a->s.p50 - b->s.p50) <= (double)df->resolution) {
		*why = "within one clock tick";
		return 0;
	}
	if (sign != dir) {
		*conflict = 1;
		*why = dir > 0 ? "median longer, total shorter"
		               : "median shorter, total longer";
		return 0;
	}
	return dir;
}

enum diff_verdict
diff_row_verdict(const struct diff *df, const struct diff_row *r, double threshold,
                 const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	*why = NULL;
	if (!r->side[1].present)
		return V_GONE;
	if (!r->side[0].present)
		return V_NEW;
	int conflict = 0;
	int dir = direction(df, r, threshold, why, &conflict);
	if (!dir)
		return conflict ? V_UNSURE : V_SAME;
	if (fabs(r->delta) < df->opt->min_share * df->reference[r->table]) {
		*why = "immaterial";
		return V_SAME;
	}
	enum diff_evidence e = diff_row_evidence(df, r);
	if (e == EV_COUNT) {
		*why = dir > 0 ? "more calls" : "fewer calls";
		return dir > 0 ? V_SLOWER : V_FASTER;
	}
	const struct diff_test_result *t = deciding_test(df, r);
	if (e == EV_NONE && !df->runs && (df->from_summary[0] || df->from_summary[1])) {
		/* the instances' test needs every duration */
		*why = "a summary has no instances";
		return V_UNSURE;
	}
	/* the count's test points the way of the count, the others the
	 * way of the time */
	int expect = t == &r->count_test ? r->calls : dir;
	if (e == EV_NONE || !(r->p_holm < df->opt->alpha) || t->direction != expect) {
		*why = "not significant (Holm)";
		return V_UNSURE;
	}
	if (r->calls)
		*why = dir > 0 ? "more calls" : "fewer calls";
	return dir > 0 ? V_SLOWER : V_FASTER;
}

void
diff_match(struct diff *df)
{
	const struct diff_options *o = df->opt;
	struct strmap map = { 0 };
	for (int side = 0; side < 2; side++) {
		struct agg *a = df->agg[side];
		uint32_t nruns = df->runs ? agg_run(a)->runs_seen : 0;
		for (size_t i = 0; i < agg_ngroups(a); i++) {
			struct agg_group *g = agg_group(a, i);
			if (!g->s.count)
				continue;
			if (o->kinds && !(o->kinds & 1u << g->kind))
				continue;
			/* copies and memsets are named by their kinds: nothing
			 * to normalize */
			char *norm = o->normalize && g->table != AGG_MEMOPS
			           ? diff_normalize(g->name) : NULL;
			if (o->normalize && g->table != AGG_MEMOPS && !norm)
				cmd_die(EXIT_USAGE, "out of memory");
			struct diff_row *r = row_for(df, &map, g, norm ? norm : g->name);
			attach(&r->side[side], g, nruns, o->normalize);
			free(norm);
		}
	}
	strmap_free(&map);
	/* one scratch space for every sort: fresh memory for each would
	 * cost a page fault every 4 KiB */
	size_t most = 0;
	for (size_t i = 0; i < df->nrows; i++)
		for (int s = 0; s < 2; s++) {
			struct diff_side *d = &df->rows[i].side[s];
			if (d->owned)
				d->d = &d->own;
			if (d->present && d->d->count > most)
				most = d->d->count;
		}
	int64_t *scratch = malloc((most ? most : 1) * sizeof(*scratch));
	if (!scratch)
		cmd_die(EXIT_USAGE, "out of memory");
	int64_t r0 = agg_resolution(df->agg[0]), r1 = agg_resolution(df->agg[1]);
	df->resolution = r0 > r1 ? r0 : r1;
	for (size_t i = 0; i < df->nrows; i++) {
		struct diff_row *r = &df->rows[i];
		for (int s = 0; s < 2; s++)
			if (r->side[s].owned)
				dist_summary(&r->side[s].own, &r->side[s].s);
		compare(df, r, scratch);
	}
	free(scratch);
	references(df);
	adjust(df);
	for (size_t i = 0; i < df->nrows; i++)
		df->rows[i].verdict = diff_row_verdict(df, &df->rows[i], df->opt->threshold,
		                                       &df->rows[i].why);
}

void
diff_free(struct diff *df)
{
	for (size_t i = 0; i < df->nrows; i++) {
		struct diff_row *r = &df->rows[i];
		for (int s = 0; s < 2; s++) {
			struct diff_side *d = &r->side[s];
			if (d->owned)
				dist_free(&d->own);
			free(d->runs);
			free(d->run_counts);
			for (size_t k = 0; k < d->nnames; k++)
				free(d->names[k]);
			free(d->names);
		}
		free(r->domain);
		free(r->name);
	}
	free(df->rows);
	free(df->summary);
	for (size_t i = 0; i < df->nchecks; i++)
		free(df->checks[i].subject);
	free(df->checks);
	for (size_t i = 0; i < df->nwarnings; i++) {
		free(df->warnings[i].before);
		free(df->warnings[i].after);
	}
	free(df->warnings);
	for (int s = 0; s < 2; s++)
		agg_free(df->agg[s]);
	memset(df, 0, sizeof(*df));
}
