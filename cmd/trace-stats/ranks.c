/* SPDX-License-Identifier: MIT */
/*
 * trace-stats --distributed: the distributed view (analysis/ranks.h)
 * in text, CSV and JSON, one row per rank and one per step of each
 * rank, and the straggler finding.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "stats.h"
#include "common/json_out.h"
#include "common/table.h"
#include "common/util.h"

/* The figures' names, in the order of every format's columns. */
enum { F_BUSY, F_COMPUTE, F_COMM, F_EXPOSED, F_MEMOPS, F_IDLE, F_N };
static const char *const fig_keys[F_N] = {
	"busy_ns", "compute_ns", "comm_ns", "exposed_comm_ns", "memops_ns", "idle_ns",
};
static const char *const fig_titles[F_N] = {
	"Busy", "Compute", "Comm", "Exposed", "Memops", "Idle",
};

static int64_t
fig(const struct rank_figures *f, int i)
{
	const int64_t v[F_N] = { f->busy, f->compute, f->comm, f->exposed, f->memops,
	                         f->idle };
	return v[i];
}

/* ---- text ------------------------------------------------------------------ */

static void
text_rank_table(struct stats *st, const struct rank_row *v, size_t n)
{
	char b[64];
	struct table_col cols[4 + F_N + 2];
	size_t nc = 0;
	cols[nc++] = (struct table_col){ "Rank", 1 };
	cols[nc++] = (struct table_col){ stats_time_title(st, "Window"), 0 };
	cols[nc++] = (struct table_col){ "Busy %", 0 };
	for (int i = 0; i < F_N; i++)
		cols[nc++] = (struct table_col){ stats_time_title(st, fig_titles[i]), 0 };
	cols[nc++] = (struct table_col){ "Ops", 0 };
	cols[nc++] = (struct table_col){ "Steps", 0 };
	cols[nc++] = (struct table_col){ stats_time_title(st, "Step mean"), 0 };
	struct table tb;
	table_init(&tb, cols, nc);
	for (size_t r = 0; r < n; r++) {
		const struct rank_row *w = &v[r];
		size_t c = 0;
		table_row(&tb);
		table_set(&tb, c++, "%s", w->name);
		table_set(&tb, c++, "%s", stats_fmt_time(st, b, sizeof(b), (double)w->f.dur));
		table_set(&tb, c++, "%.1f", stats_pct((double)w->f.busy, (double)w->f.dur));
		for (int i = 0; i < F_N; i++)
			table_set(&tb, c++, "%s",
			          stats_fmt_time(st, b, sizeof(b), (double)fig(&w->f, i)));
		table_set(&tb, c++, "%" PRIu64, w->ops);
		table_set(&tb, c++, "%zu", w->nsteps);
		if (w->nsteps)
			table_set(&tb, c++, "%s", stats_fmt_time(st, b, sizeof(b),
			          (double)w->step_total / (double)w->nsteps));
		else
			table_set(&tb, c++, "-");
	}
	static const int drop[] = { 11, 10, 3, 2, 9, 7 };
	stats_fit_columns(&tb, st->opt.line_width, drop, sizeof(drop) / sizeof(drop[0]));
	table_print(&tb, stdout, "  ");
	table_free(&tb);
}

static void
text_step_table(struct stats *st, const struct rank_row *rows,
                const struct rank_step_row *v, size_t n)
{
	char b[64];
	struct table_col cols[3 + F_N];
	size_t nc = 0;
	cols[nc++] = (struct table_col){ "Step", 1 };
	cols[nc++] = (struct table_col){ "Rank", 1 };
	cols[nc++] = (struct table_col){ stats_time_title(st, "Duration"), 0 };
	for (int i = 0; i < F_N; i++)
		cols[nc++] = (struct table_col){ stats_time_title(st, fig_titles[i]), 0 };
	size_t shown = st->opt.top && st->opt.top < n ? (size_t)st->opt.top : n;
	struct table tb;
	table_init(&tb, cols, nc);
	for (size_t r = 0; r < shown; r++) {
		size_t c = 0;
		table_row(&tb);
		table_set(&tb, c++, "%s", stats_display_name(st, v[r].step));
		table_set(&tb, c++, "%s", rows[v[r].rank].name);
		table_set(&tb, c++, "%s", stats_fmt_time(st, b, sizeof(b), (double)v[r].f.dur));
		for (int i = 0; i < F_N; i++)
			table_set(&tb, c++, "%s",
			          stats_fmt_time(st, b, sizeof(b), (double)fig(&v[r].f, i)));
	}
	static const int drop[] = { 3, 7, 5 };
	stats_fit_columns(&tb, st->opt.line_width, drop, sizeof(drop) / sizeof(drop[0]));
	table_print(&tb, stdout, "  ");
	table_free(&tb);
	if (shown < n)
		printf("  ... %zu more steps (--top, --json or --csv show them)\n", n - shown);
}

void
stats_text_ranks(struct stats *st)
{
	size_t n, ns;
	const struct rank_row *v = ranks_rows(agg_ranks(st->agg), &n);
	const struct rank_step_row *s = ranks_step_rows(agg_ranks(st->agg), &ns);
	printf("%sRanks: %zu (GPU time from each one's first operation to its last)\n",
	       st->sections++ ? "\n" : "", n);
	if (!n) {
		printf("  none\n");
		return;
	}
	text_rank_table(st, v, n);
	printf("  Exposed: communication while no computation runs on the rank\n");
	if (ns) {
		printf("\nSteps by rank: %zu\n", ns);
		text_step_table(st, v, s, ns);
	}
}

/* ---- CSV ------------------------------------------------------------------ */

static void
csv_figs(char n[][32], const struct rank_figures *f)
{
	snprintf(n[0], 32, "%" PRId64, f->begin);
	snprintf(n[1], 32, "%" PRId64, f->dur);
	for (int i = 0; i < F_N; i++)
		snprintf(n[2 + i], 32, "%" PRId64, fig(f, i));
}

void
stats_csv_ranks(struct stats *st)
{
	size_t n, ns;
	const struct rank_row *v = ranks_rows(agg_ranks(st->agg), &n);
	const struct rank_step_row *s = ranks_step_rows(agg_ranks(st->agg), &ns);
	enum { NC = 4 + 2 + F_N + 5 };
	const char *cols[NC] = { "report", "rank", "step", "begin_ns", "dur_ns" };
	for (int i = 0; i < F_N; i++)
		cols[5 + i] = fig_keys[i];
	cols[5 + F_N] = "ops";
	cols[6 + F_N] = "steps";
	cols[7 + F_N] = "step_total_ns";
	cols[8 + F_N] = "busy_pct";
	cols[9 + F_N] = "step_mean_ns";
	csv_record(stdout, cols, 10 + F_N);
	char num[2 + F_N + 5][32];
	for (size_t r = 0; r < n; r++) {
		const char *f[10 + F_N] = { "ranks", v[r].name, "" };
		csv_figs(num, &v[r].f);
		for (int i = 0; i < 2 + F_N; i++)
			f[3 + i] = num[i];
		snprintf(num[2 + F_N], 32, "%" PRIu64, v[r].ops);
		snprintf(num[3 + F_N], 32, "%zu", v[r].nsteps);
		snprintf(num[4 + F_N], 32, "%" PRId64, v[r].step_total);
		snprintf(num[5 + F_N], 32, "%.4f",
		         stats_pct((double)v[r].f.busy, (double)v[r].f.dur));
		snprintf(num[6 + F_N], 32, "%.1f", v[r].nsteps ? (double)v[r].step_total /
		         (double)v[r].nsteps : 0);
		for (int i = 0; i < 5; i++)
			f[5 + F_N + i] = num[2 + F_N + i];
		csv_record(stdout, f, 10 + F_N);
	}
	for (size_t r = 0; r < ns; r++) {
		const char *f[10 + F_N] = { "rank_steps", v[s[r].rank].name, s[r].step };
		csv_figs(num, &s[r].f);
		for (int i = 0; i < 2 + F_N; i++)
			f[3 + i] = num[i];
		for (int i = 0; i < 5; i++)
			f[5 + F_N + i] = "";
		csv_record(stdout, f, 10 + F_N);
	}
}

/* ---- JSON ------------------------------------------------------------------ */

static json_t *
json_figs(const struct rank_figures *f)
{
	json_t *o = json_object();
	cmd_jset(o, "begin_ns", json_integer(f->begin));
	cmd_jset(o, "dur_ns", json_integer(f->dur));
	for (int i = 0; i < F_N; i++)
		cmd_jset(o, fig_keys[i], json_integer(fig(f, i)));
	return o;
}

void *
stats_json_ranks(struct stats *st)
{
	size_t n, ns;
	const struct rank_row *v = ranks_rows(agg_ranks(st->agg), &n);
	const struct rank_step_row *s = ranks_step_rows(agg_ranks(st->agg), &ns);
	json_t *o = json_object(), *ra = json_array(), *sa = json_array();
	for (size_t r = 0; r < n; r++) {
		json_t *x = json_figs(&v[r].f);
		cmd_jset(x, "rank", cmd_jstr(v[r].name));
		cmd_jset(x, "ops", json_integer((json_int_t)v[r].ops));
		cmd_jset(x, "steps", json_integer((json_int_t)v[r].nsteps));
		cmd_jset(x, "step_total_ns", json_integer(v[r].step_total));
		/* the text's derived columns */
		cmd_jset(x, "busy_pct", json_real(stats_pct((double)v[r].f.busy, (double)v[r].f.dur)));
		cmd_jset(x, "step_mean_ns", json_real(v[r].nsteps ? (double)v[r].step_total /
		                                      (double)v[r].nsteps : 0));
		json_array_append_new(ra, x);
	}
	for (size_t r = 0; r < ns; r++) {
		json_t *x = json_figs(&s[r].f);
		cmd_jset(x, "rank", cmd_jstr(v[s[r].rank].name));
		cmd_jset(x, "step", cmd_jstr(s[r].step));
		json_array_append_new(sa, x);
	}
	cmd_jset(o, "ranks", ra);
	cmd_jset(o, "steps", sa);
	return o;
}
