/* SPDX-License-Identifier: MIT */
/*
 * The summaries and steps of a run, from the aggregation trace-stats
 * makes (cmd/analysis/aggregate.h, with its default 1 GiB for exact
 * percentiles, past which a group keeps a sketch as trace-stats does):
 * so the figures are trace-stats' own, percentiles interpolated at rank
 * q(n-1) (dist.h).  Steps are the ranges trace-stats --steps finds
 * (steps.h), found in a pass of their own over the common columns, so
 * that memory stays bounded: their windows, the work that begins in
 * each added up as the rows go by.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export.h"
#include "analysis/aggregate.h"
#include "analysis/steps.h"
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

void
ex_steps_rows(struct ex *x, const char *name)
{
	const struct xsteps *st = x->steps;
	struct sink *s = &x->t[XT_STEPS];
	for (size_t i = 0; st && i < st->n; i++) {
		sink_run(s, x);
		sink_i64(s, (int64_t)i + 1);
		sink_str(s, name);
		sink_i64(s, st->begin[i]);
		sink_i64(s, st->end[i]);
		sink_i64(s, st->end[i] - st->begin[i]);
		sink_i64(s, st->kernel[i]);
		sink_i64(s, st->copy[i]);
		sink_i64(s, st->api[i]);
		sink_end_row(s);
	}
}

static int
cmp_begin(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	return (x[0] > y[0]) - (x[0] < y[0]);
}

/* The windows of the steps trace-stats --steps finds, by a pass over
 * the common columns only; their name (malloc'd), or NULL for none. */
char *
ex_find_steps(const char *path, struct xsteps *st)
{
	memset(st, 0, sizeof(*st));
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	char *name = steps_find(fd, path);
	close(fd);
	struct step_match m;
	if (!name || step_match_init(&m, name) < 0)
		return name;
	struct tk_reader *r = tk_reader_new();
	if (!r || tk_reader_open_path(r, path) != TK_OK) {
		tk_reader_free(r);
		step_match_free(&m);
		return name;
	}
	int64_t *w = NULL;      /* begin, end pairs */
	size_t n = 0, cap = 0;
	struct tk_columns c;
	while (tk_reader_next_columns(r, &c) == TK_OK)
		for (size_t i = 0; i < c.n; i++) {
			if (c.kind[i] != TK_RANGE ||
			    step_match(&m, tk_reader_string(r, c.name_id[i])) != 1)
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				w = cmd_xrealloc(w, cap * 2 * sizeof(*w));
			}
			w[2 * n] = c.ts[i];
			w[2 * n + 1] = c.ts[i] + c.dur[i];
			n++;
		}
	tk_reader_free(r);
	step_match_free(&m);
	qsort(w, n, 2 * sizeof(*w), cmp_begin);
	st->n = n;
	st->begin = cmd_xrealloc(NULL, (n ? n : 1) * sizeof(int64_t));
	st->end = cmd_xrealloc(NULL, (n ? n : 1) * sizeof(int64_t));
	st->kernel = calloc(n ? n : 1, sizeof(int64_t));
	st->copy = calloc(n ? n : 1, sizeof(int64_t));
	st->api = calloc(n ? n : 1, sizeof(int64_t));
	if (!st->kernel || !st->copy || !st->api)
		cmd_die(EXIT_USAGE, "out of memory");
	for (size_t i = 0; i < n; i++) {
		st->begin[i] = w[2 * i];
		st->end[i] = w[2 * i + 1];
	}
	free(w);
	return name;
}

int
ex_summaries(struct ex *x, const char *path)
{
	struct agg_options o = AGG_OPTIONS_INIT;
	o.exact_budget = (size_t)1 << 30;  /* trace-stats' default -S */
	struct agg *a = agg_new(&o);
	if (!a)
		cmd_die(EXIT_USAGE, "out of memory");
	int status = agg_read(a, path);
	agg_finish(a);
	for (size_t i = 0; i < agg_ngroups(a); i++)
		summary_row(x, agg_group(a, i));
	agg_free(a);
	return status;
}

void
xsteps_free(struct xsteps *s)
{
	free(s->begin);
	free(s->end);
	free(s->kernel);
	free(s->copy);
	free(s->api);
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
