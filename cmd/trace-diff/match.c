/* SPDX-License-Identifier: MIT */
/*
 * trace-diff: the operations of the two traces matched by kind, domain
 * and name (normalized with --normalize, several groups of a trace then
 * merging into one row), compared instance by instance with the
 * Mann-Whitney U test and, with several runs on both sides, run by run
 * with Welch's t-test, and given a verdict.
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
			if (!s->runs)
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
	for (uint32_t i = 0; i < g->nrun_total && i < s->nruns; i++)
		s->runs[i] += (double)g->run_total[i];
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

static void
compare(struct diff *df, struct diff_row *r, int64_t *scratch)
{
	struct diff_side *b = &r->side[0], *a = &r->side[1];
	r->delta = (a->present ? a->s.total : 0) - (b->present ? b->s.total : 0);
	r->ratio = NAN;
	r->test.p = r->runs_test.p = 1;
	if (!a->present || !b->present) {
		r->verdict = diff_row_verdict(df, r, df->opt->threshold);
		return;
	}
	r->ratio = median_ratio(&b->s, &a->s);
	/* the summaries are taken: the values may be reordered */
	if (diff_mwu_any(b->d->v, b->d->count, a->d->v, a->d->count, scratch,
	                 &r->test) < 0)
		cmd_die(EXIT_USAGE, "out of memory");
	if (df->runs)
		diff_welch_values(b->runs, b->nruns, a->runs, a->nruns, &r->runs_test);
	r->verdict = diff_row_verdict(df, r, df->opt->threshold);
}

enum diff_verdict
diff_row_verdict(const struct diff *df, const struct diff_row *r, double threshold)
{
	if (!r->side[1].present)
		return V_GONE;
	if (!r->side[0].present)
		return V_NEW;
	return diff_decide(r->ratio, threshold, df->opt->alpha, r->test.p,
	                   r->test.direction,
	                   r->runs_test.test == TEST_WELCH ? r->runs_test.p : -1,
	                   r->runs_test.direction);
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
	for (size_t i = 0; i < df->nrows; i++) {
		struct diff_row *r = &df->rows[i];
		for (int s = 0; s < 2; s++)
			if (r->side[s].owned)
				dist_summary(&r->side[s].own, &r->side[s].s);
		compare(df, r, scratch);
	}
	free(scratch);
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
	for (int s = 0; s < 2; s++)
		agg_free(df->agg[s]);
	memset(df, 0, sizeof(*df));
}
