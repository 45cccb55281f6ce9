/* SPDX-License-Identifier: MIT */
/*
 * The summaries and steps of a run, from the aggregation trace-stats
 * makes (cmd/analysis/aggregate.h, with its default 1 GiB for exact
 * percentiles, past which a group keeps a sketch as trace-stats does):
 * so the figures are trace-stats' own, percentiles interpolated at rank
 * q(n-1) (dist.h).  Steps are those of trace-stats --steps.
 */
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "analysis/aggregate.h"
#include "common/util.h"

static const char *const table_names[AGG_NTABLES] = {
	"kernels", "memops", "api", "ranges"
};

static void
summary_row(struct ex *x, const struct agg_group *g)
{
	struct sink *s = &x->t[XT_SUMMARIES];
	const struct summary *m = &g->s;
	sink_run(s, x);
	sink_str(s, table_names[g->table]);
	sink_str(s, tk_kind_name(g->kind));
	sink_str(s, g->domain);
	sink_str(s, g->name);
	sink_u64(s, m->count);
	sink_i64(s, m->total);
	sink_f64(s, m->mean);
	sink_f64(s, m->std);
	sink_i64(s, m->min);
	sink_f64(s, m->p50);
	sink_f64(s, m->p95);
	sink_f64(s, m->p99);
	sink_i64(s, m->max);
	sink_end_row(s);
}

static void
steps_rows(struct ex *x, const struct agg *a, struct xsteps *st)
{
	const struct perinst_result *p = agg_per(a);
	const char *name = agg_per_name(a);
	if (!p || !name || p->ninst == 0)
		return;
	st->begin = cmd_xrealloc(NULL, p->ninst * sizeof(*st->begin));
	st->end = cmd_xrealloc(NULL, p->ninst * sizeof(*st->end));
	st->n = p->ninst;
	struct sink *s = &x->t[XT_STEPS];
	for (size_t i = 0; i < p->ninst; i++) {
		const struct perinst_instance *in = &p->inst[i];
		st->begin[i] = in->begin;
		st->end[i] = in->begin + in->dur;
		sink_run(s, x);
		sink_i64(s, (int64_t)i + 1);
		sink_str(s, name);
		sink_i64(s, in->begin);
		sink_i64(s, in->begin + in->dur);
		sink_i64(s, in->dur);
		sink_i64(s, in->kernel);
		sink_i64(s, in->copy);
		sink_i64(s, in->api);
		sink_end_row(s);
	}
}

int
ex_summaries(struct ex *x, const char *path, struct xsteps *steps)
{
	struct agg_options o = AGG_OPTIONS_INIT;
	o.exact_budget = (size_t)1 << 30;  /* trace-stats' default -S */
	o.steps = 1;
	memset(steps, 0, sizeof(*steps));
	struct agg *a = agg_new(&o);
	if (!a)
		cmd_die(EXIT_USAGE, "out of memory");
	int status = agg_read(a, path);
	agg_finish(a);
	for (size_t i = 0; i < agg_ngroups(a); i++)
		summary_row(x, agg_group(a, i));
	steps_rows(x, a, steps);
	agg_free(a);
	return status;
}

void
xsteps_free(struct xsteps *s)
{
	free(s->begin);
	free(s->end);
	memset(s, 0, sizeof(*s));
}

uint32_t
xsteps_at(const struct xsteps *s, int64_t ts)
{
	if (!s || s->n == 0)
		return 0;
	/* the last step beginning at or before ts */
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->begin[mid] <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || ts >= s->end[lo - 1])
		return 0;
	return (uint32_t)lo;
}
