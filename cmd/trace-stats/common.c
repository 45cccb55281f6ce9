/* SPDX-License-Identifier: MIT */
/*
 * trace-stats: units, names and the order of rows, shared by its
 * output formats.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/short_name.h"
#include "common/table.h"
#include "stats.h"
#include "common/util.h"

/* ---- formatting ------------------------------------------------------------- */

char *
stats_fmt_time(const struct stats *st, char *buf, size_t n, double ns)
{
	return findings_fmt_time(&st->fo, buf, n, ns);
}

char *
stats_fmt_span(const struct stats *st, char *buf, size_t n, double ns)
{
	return findings_fmt_span(&st->fo, buf, n, ns);
}

/* Column title for a time: "Total" or "Total [ms]". */
const char *
stats_time_title(struct stats *st, const char *title)
{
	if (st->opt.unit == 0)
		return title;
	char *b = st->titles[st->ntitles++ % 16];
	snprintf(b, sizeof(st->titles[0]), "%s [%s]", title, st->opt.unit_name);
	return b;
}


double
stats_pct(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0;
}

/* A name for people (common/short_name.h) unless --full-names; `max` > 0 cuts
 * here (findings). */
static const char *
short_name(const struct stats *st, const char *name, size_t max)
{
	if (st->opt.full_names)
		return name;
	return cmd_short_name(name, max);
}

const char *
stats_display_name(const struct stats *st, const char *name)
{
	return short_name(st, name, 0);
}

/* Names in the one-line findings. */
const char *
stats_finding_name(const struct stats *st, const char *name)
{
	return short_name(st, name, 60);
}

const char *
stats_exit_text(char *buf, size_t n, unsigned how, int32_t code, uint32_t sig)
{
	if (how == TK_EXIT_NORMAL)
		snprintf(buf, n, "%d", code);
	else if (how == TK_EXIT_SIGNAL)
		snprintf(buf, n, "signal %u", sig);
	else
		snprintf(buf, n, "unknown");
	return buf;
}

const char *
stats_per_name(const struct stats *st)
{
	const char *n = agg_per_name(st->agg);
	return n ? n : "(no steps found)";
}

const char *const stats_bd_titles[BD_NCATS] = {
	"Kernel", "Memcpy", "Memset", "Runtime", "DataLoader", "CPU exec", "Other",
};
const char *const stats_bd_keys[BD_NCATS] = {
	"kernel", "memcpy", "memset", "runtime", "dataloader", "cpu", "other",
};

int64_t
stats_step_busy(const struct perinst_instance *in)
{
	return in->cat[BD_KERNEL] + in->cat[BD_MEMCPY] + in->cat[BD_MEMSET];
}

/* Display width of a cell, as table_print() counts it. */
static size_t
cell_width(const char *s)
{
	size_t w = 0;
	for (; s && *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

/* Width of the table as table_print() would print it with `indent`,
 * its last text column cut to 30 (table_print() never cuts further). */
static size_t
table_width(const struct table *tb, size_t indent)
{
	size_t total = indent, n = 0, lastw = 0;
	int last_left = 0;
	for (size_t c = 0; c < tb->ncols; c++) {
		size_t w = cell_width(tb->cols[c].title);
		int used = 0;
		for (size_t r = 0; r < tb->nrows; r++) {
			const char *s = tb->cells[r * tb->ncols + c];
			if (s && *s) {
				used = 1;
				if (cell_width(s) > w)
					w = cell_width(s);
			}
		}
		if (!used)
			continue;
		total += w + (n++ ? 2 : 0);
		lastw = w;
		last_left = tb->cols[c].left;
	}
	if (last_left && lastw > 30)
		total -= lastw - 30;
	return total;
}

/* A table wider than the line loses columns, least telling first
 * (`drop`, in that order), until it fits; then table_print() cuts the
 * names at its end.  Without a width (--full-names) nothing goes. */
void
stats_fit_columns(struct table *tb, size_t width, const int *drop, size_t ndrop)
{
	tb->max_width = width;
	for (size_t i = 0; width && i < ndrop && table_width(tb, 2) > width; i++)
		for (size_t r = 0; r < tb->nrows; r++) {
			char **cell = &tb->cells[r * tb->ncols + (size_t)drop[i]];
			free(*cell);
			*cell = NULL;
		}
}

/* ---- rows of the operation tables ------------------------------------------ */

const char *const stats_table_titles[AGG_NTABLES] = {
	"GPU kernels", "Memory operations", "CUDA API calls",
	"Ranges (NVTX, CPU operators, annotations)",
};

const char *const stats_table_keys[AGG_NTABLES] = {
	"kernels", "memops", "api", "ranges",
};

static double
sort_value(enum sort_key sort, const struct agg_group *g)
{
	switch (sort) {
	case S_TOTAL: return (double)g->s.total;
	case S_COUNT: return (double)g->s.count;
	case S_MEAN: return g->s.mean;
	case S_MEDIAN: return g->s.p50;
	case S_P95: return g->s.p95;
	case S_MAX: return (double)g->s.max;
	case S_NAME: break;
	}
	return 0;
}

/* qsort_r: `key` points to the enum sort_key. */
int
stats_cmp_rows(const void *x, const void *y, void *key)
{
	const struct agg_group *a = *(struct agg_group *const *)x;
	const struct agg_group *b = *(struct agg_group *const *)y;
	enum sort_key sort = *(const enum sort_key *)key;
	if (sort != S_NAME) {
		double va = sort_value(sort, a), vb = sort_value(sort, b);
		if (va != vb)
			return va > vb ? -1 : 1;
	}
	int c = strcmp(a->name, b->name);
	if (c)
		return c;
	c = strcmp(a->domain, b->domain);
	return c ? c : (int)a->kind - (int)b->kind;
}


struct stats_rows
stats_table_rows(const struct stats *st, enum agg_table t)
{
	struct agg *a = st->agg;
	struct stats_rows r = { 0 };
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
		r.count += g->s.count;
	}
	enum sort_key sort = st->opt.sort;
	qsort_r(r.v, r.n, sizeof(*r.v), stats_cmp_rows, &sort);
	r.shown = st->opt.top && st->opt.top < r.n ? st->opt.top : r.n;
	return r;
}

struct stats_rest
stats_rows_rest(const struct stats_rows *r)
{
	struct stats_rest rest = { 0, 0 };
	for (size_t i = r->shown; i < r->n; i++) {
		rest.total += r->v[i]->s.total;
		rest.count += r->v[i]->s.count;
	}
	return rest;
}

int
stats_has_domains(const struct stats_rows *r)
{
	for (size_t i = 0; i < r->n; i++)
		if (*r->v[i]->domain)
			return 1;
	return 0;
}

int
stats_has_async(const struct stats_rows *r)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i]->kind == TK_ASYNC_RANGE)
			return 1;
	return 0;
}

double
stats_bandwidth(const struct agg_group *g)
{
	/* bytes per second over the time the operations took */
	return g->s.total > 0 ? (double)g->bytes * 1e9 / (double)g->s.total : 0;
}

double
stats_mean_bandwidth(const struct agg_group *g)
{
	return g->rate_n ? g->rate_sum / (double)g->rate_n * 1e9 : 0;
}
