/* SPDX-License-Identifier: MIT */
/*
 * trace-stats --operators: the operator view (analysis/opview.h) in
 * text, CSV and JSON.  Rows by self time, largest first (--sort count
 * or name order them so; the other keys by self time too).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "stats.h"
#include "common/json_out.h"
#include "common/table.h"
#include "common/util.h"

struct op_rows {
	const struct opview_row **v;
	size_t n;
	int64_t self;            /* all the rows' self time */
};

static int
cmp_ops(const void *x, const void *y, void *arg)
{
	const struct opview_row *p = *(const struct opview_row *const *)x;
	const struct opview_row *q = *(const struct opview_row *const *)y;
	const struct stats *st = arg;
	if (st->opt.sort == S_NAME)
		return strcmp(agg_group(st->agg, p->group)->name,
		              agg_group(st->agg, q->group)->name);
	if (st->opt.sort == S_COUNT && p->count != q->count)
		return p->count > q->count ? -1 : 1;
	if (p->self != q->self)
		return p->self > q->self ? -1 : 1;
	return (p->group > q->group) - (p->group < q->group);
}

/* The rows seen (count > 0), in order; caller frees r.v. */
static struct op_rows
op_rows(struct stats *st)
{
	struct op_rows r = { NULL, 0, 0 };
	size_t n;
	const struct opview_row *v = agg_operators(st->agg, &n);
	r.v = cmd_xrealloc(NULL, (n ? n : 1) * sizeof(*r.v));
	for (size_t i = 0; i < n; i++)
		if (v[i].count) {
			r.v[r.n++] = &v[i];
			r.self += v[i].self;
		}
	qsort_r(r.v, r.n, sizeof(*r.v), cmp_ops, st);
	return r;
}

void
stats_text_operators(struct stats *st)
{
	struct op_rows r = op_rows(st);
	char b[64];
	size_t shown = st->opt.top && st->opt.top < r.n ? (size_t)st->opt.top : r.n;
	printf("%sOperators (ranges on CPU threads): %zu, %s of self time\n",
	       st->sections++ ? "\n" : "", r.n, stats_fmt_span(st, b, sizeof(b), (double)r.self));
	struct table_col cols[] = {
		{ "Self %", 0 }, { stats_time_title(st, "Self"), 0 },
		{ stats_time_title(st, "Total"), 0 }, { "Count", 0 },
		{ stats_time_title(st, "GPU self"), 0 }, { stats_time_title(st, "GPU total"), 0 },
		{ "Domain", 1 }, { "Name", 1 },
	};
	struct table tb;
	table_init(&tb, cols, 8);
	for (size_t i = 0; i < shown; i++) {
		const struct opview_row *w = r.v[i];
		const struct agg_group *g = agg_group(st->agg, w->group);
		table_row(&tb);
		table_set(&tb, 0, "%.1f", stats_pct((double)w->self, (double)r.self));
		table_set(&tb, 1, "%s", stats_fmt_time(st, b, sizeof(b), (double)w->self));
		table_set(&tb, 2, "%s", stats_fmt_time(st, b, sizeof(b), (double)w->total));
		table_set(&tb, 3, "%" PRIu64, w->count);
		table_set(&tb, 4, "%s", stats_fmt_time(st, b, sizeof(b), (double)w->gpu_self));
		table_set(&tb, 5, "%s", stats_fmt_time(st, b, sizeof(b), (double)w->gpu_total));
		table_set(&tb, 6, "%s", *g->domain ? g->domain : "-");
		table_set(&tb, 7, "%s", stats_display_name(st, g->name));
	}
	static const int drop[] = { 2, 5, 0 };
	stats_fit_columns(&tb, st->opt.line_width, drop, sizeof(drop) / sizeof(drop[0]));
	if (r.n)
		table_print(&tb, stdout, "  ");
	else
		printf("  none\n");
	table_free(&tb);
	if (shown < r.n)
		printf("  ... %zu more\n", r.n - shown);
	free(r.v);
}

void
stats_csv_operators(struct stats *st)
{
	static const char *const cols[] = {
		"report", "domain", "name", "count", "total_ns", "self_ns",
		"self_pct", "gpu_self_ns", "gpu_total_ns",
	};
	struct op_rows r = op_rows(st);
	size_t shown = st->opt.top && st->opt.top < r.n ? (size_t)st->opt.top : r.n;
	csv_record(stdout, cols, 9);
	for (size_t i = 0; i < shown; i++) {
		const struct opview_row *w = r.v[i];
		const struct agg_group *g = agg_group(st->agg, w->group);
		char n[6][32];
		snprintf(n[0], 32, "%" PRIu64, w->count);
		snprintf(n[1], 32, "%" PRId64, w->total);
		snprintf(n[2], 32, "%" PRId64, w->self);
		snprintf(n[3], 32, "%.4f", stats_pct((double)w->self, (double)r.self));
		snprintf(n[4], 32, "%" PRId64, w->gpu_self);
		snprintf(n[5], 32, "%" PRId64, w->gpu_total);
		const char *f[9] = { "operators", g->domain, g->name, n[0], n[1], n[2],
		                     n[3], n[4], n[5] };
		csv_record(stdout, f, 9);
	}
	free(r.v);
}

void *
stats_json_operators(struct stats *st)
{
	struct op_rows r = op_rows(st);
	size_t shown = st->opt.top && st->opt.top < r.n ? (size_t)st->opt.top : r.n;
	json_t *arr = json_array();
	for (size_t i = 0; i < shown; i++) {
		const struct opview_row *w = r.v[i];
		const struct agg_group *g = agg_group(st->agg, w->group);
		json_t *o = json_object();
		cmd_jset(o, "domain", cmd_jstr(g->domain));
		cmd_jset(o, "name", cmd_jstr(g->name));
		cmd_jset(o, "count", json_integer((json_int_t)w->count));
		cmd_jset(o, "total_ns", json_integer(w->total));
		cmd_jset(o, "self_ns", json_integer(w->self));
		cmd_jset(o, "self_pct", json_real(stats_pct((double)w->self, (double)r.self)));
		cmd_jset(o, "gpu_self_ns", json_integer(w->gpu_self));
		cmd_jset(o, "gpu_total_ns", json_integer(w->gpu_total));
		json_array_append_new(arr, o);
	}
	free(r.v);
	return arr;
}
