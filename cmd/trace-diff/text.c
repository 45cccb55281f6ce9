/* SPDX-License-Identifier: MIT */
/*
 * trace-diff text output: the two traces, the run-wide summary, one
 * table per kind of operation (largest change in time first), and the
 * result that decides the exit status.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "common/table.h"
#include "common/util.h"

/* A section's title; every section follows the header, after a blank
 * line. */
static void
section(const char *title)
{
	printf("\n%s\n", title);
}

static void
text_input(struct diff *df, int side)
{
	struct agg *a = df->agg[side];
	const struct agg_run *run = agg_run(a);
	char b[64];
	printf("%-8s%s", side ? "After" : "Before", cmd_display_path(df->opt->paths[side]));
	if (df->opt->nfiles[side] > 1)
		printf(" and %zu more file%s", df->opt->nfiles[side] - 1,
		       df->opt->nfiles[side] > 2 ? "s" : "");
	printf(": wall %s, %" PRIu64 " events",
	       diff_fmt_time(b, sizeof(b), (double)agg_wall(a), 0), run->events);
	if (run->runs_seen)
		printf(", %u runs", run->runs_seen);
	const char *label = diff_meta(a, "label");
	if (label)
		printf(", label %s", label);
	const char *commit = diff_meta(a, "git.commit"), *branch = diff_meta(a, "git.branch");
	if (commit || branch) {
		const char *dirty = diff_meta(a, "git.dirty");
		printf(", git %s%s%.12s%s", branch ? branch : "", branch && commit ? "@" : "",
		       commit ? commit : "", dirty && strcmp(dirty, "1") == 0 ? " (dirty)" : "");
	}
	putchar('\n');
	if (run->dropped)
		printf("%-8sthe recorder dropped %" PRIu64 " events: these figures are low\n",
		       "", run->dropped);
}

static void
text_header(struct diff *df)
{
	text_input(df, 0);
	text_input(df, 1);
	const char *c0 = diff_command(df->agg[0]), *c1 = diff_command(df->agg[1]);
	if (strcmp(c0, c1) == 0) {
		if (*c0)
			printf("%-8s%s\n", "Command", c0);
	} else {
		printf("%-8sbefore: %s\n", "Command", *c0 ? c0 : "(none)");
		printf("%-8safter:  %s\n", "", *c1 ? c1 : "(none)");
	}
	printf("%-8sfaster or slower: the median (the time in all when the count changes) "
	       "moves by more than %g%%, by at least %g%% of its kind's time, and ",
	       "Rule", df->opt->threshold * 100, df->opt->min_share * 100);
	if (df->runs)
		printf("Welch's t over the %u and %u runs gives p < %g", agg_run(df->agg[0])->runs_seen,
		       agg_run(df->agg[1])->runs_seen, df->opt->alpha);
	else
		printf("Mann-Whitney U over the instances gives p < %g", df->opt->alpha);
	printf(", Holm-adjusted over the %zu operations tested\n", df->family);
	if (df->per_run)
		printf("%-8s%.0f before, %.0f after: counts, times in all and deltas are means per "
		       "run; medians and percentiles pool the instances of every run\n", "Per run",
		       df->divisor[0], df->divisor[1]);
	if (df->resolution > 1)
		printf("%-8sdurations in whole %s: a median must move by more than one tick\n",
		       "Clock", df->resolution == 1000 ? "microseconds" : df->resolution == 100
		       ? "100 ns" : "10 ns");
	for (size_t i = 0; i < df->nwarnings; i++) {
		const struct diff_warning *w = &df->warnings[i];
		printf("%-8sthe traces differ in %s: %s vs %s\n", "Warning", w->what, w->before,
		       w->after);
	}
	if (!df->runs && (df->from_summary[0] || df->from_summary[1]))
		printf("%-8s%s is a summary of one run: it has no instances to test, so only "
		       "changes of count are found; a summary of several runs (trace-record "
		       "-r N) compares run by run\n", "Summary",
		       cmd_display_path(df->opt->paths[df->from_summary[1]]));
	else if (!df->runs)
		printf("%-8sone run per side: instances of one run do not show the run-to-run "
		       "spread, and the wall time is not tested; more runs "
		       "(trace-record -r N) would tell\n", "Runs");
}

/* ---- summary -------------------------------------------------------------------- */

enum { S_METRIC, S_BEFORE, S_AFTER, S_DELTA, S_CHANGE, S_P, S_VERDICT, S_NCOLS };

static void
fmt_value(char *buf, size_t n, const struct diff_summary_row *r, int side)
{
	char v[48], sd[48];
	if (!r->has[side]) {
		snprintf(buf, n, "-");
		return;
	}
	if (!r->time) {
		cmd_fmt_bytes(buf, n, r->v[side]);
		return;
	}
	diff_fmt_time(v, sizeof(v), r->v[side], 0);
	if (r->nruns[side] > 1 && !isnan(r->sd[side]))
		snprintf(buf, n, "%s +- %s", v, diff_fmt_time(sd, sizeof(sd), r->sd[side], 0));
	else
		snprintf(buf, n, "%s", v);
}

static void
text_summary(struct diff *df)
{
	static const struct table_col cols[S_NCOLS] = {
		{ "Metric", 1 }, { "Before", 0 }, { "After", 0 }, { "Delta", 0 },
		{ "Change", 0 }, { "p", 0 }, { "Verdict", 1 },
	};
	struct table t;
	table_init(&t, cols, S_NCOLS);
	char b[96];
	for (size_t i = 0; i < df->nsummary; i++) {
		const struct diff_summary_row *r = &df->summary[i];
		table_row(&t);
		table_set(&t, S_METRIC, "%s", diff_metric_label(b, sizeof(b), r));
		fmt_value(b, sizeof(b), r, 0);
		table_set(&t, S_BEFORE, "%s", b);
		fmt_value(b, sizeof(b), r, 1);
		table_set(&t, S_AFTER, "%s", b);
		if (!r->has[0] || !r->has[1])
			continue;
		double d = r->v[1] - r->v[0];
		if (r->time) {
			table_set(&t, S_DELTA, "%s", diff_fmt_time(b, sizeof(b), d, 1));
			table_set(&t, S_CHANGE, "%s", diff_fmt_change(b, sizeof(b),
			                                              diff_summary_ratio(r)));
		} else {
			cmd_fmt_bytes(b, sizeof(b), fabs(d));
			table_set(&t, S_DELTA, "%s%s", d > 0 ? "+" : d < 0 ? "-" : "", b);
			if (r->v[0] > 0)
				table_set(&t, S_CHANGE, "%+.1f%%", (r->v[1] / r->v[0] - 1) * 100);
		}
		table_set(&t, S_P, "%s", diff_fmt_p(b, sizeof(b), &r->test));
		if (r->has_verdict)
			table_set(&t, S_VERDICT, "%s", diff_verdict_names[r->verdict]);
	}
	section("Summary");
	table_print(&t, stdout, "  ");
	table_free(&t);
}

/* ---- explanation --------------------------------------------------------------- */

static void
text_explain(struct diff *df)
{
	static const struct table_col cols[] = {
		{ "Part", 1 }, { "Before", 0 }, { "After", 0 }, { "Delta", 0 },
		{ "Of wall delta", 0 },
	};
	if (!df->nparts)
		return;
	struct table t;
	table_init(&t, cols, 5);
	char b[64];
	for (size_t i = 0; i < df->nparts; i++) {
		const struct diff_part *p = &df->parts[i];
		table_row(&t);
		table_set(&t, 0, "%s", diff_part_labels[p->part]);
		table_set(&t, 1, "%s", diff_fmt_time(b, sizeof(b), p->v[0], 0));
		table_set(&t, 2, "%s", diff_fmt_time(b, sizeof(b), p->v[1], 0));
		table_set(&t, 3, "%s", diff_fmt_time(b, sizeof(b), p->v[1] - p->v[0], 1));
		double share = diff_part_share(df, p);
		if (isfinite(share))
			table_set(&t, 4, "%+.1f%%", share);
	}
	char title[160];
	snprintf(title, sizeof(title), "Explanation: wall %s%s, largest part first (parts overlap: "
	         "they explain the change, they need not add up to it)",
	         diff_fmt_time(b, sizeof(b), df->wall_delta, 1), df->per_run ? " per run" : "");
	section(title);
	table_print(&t, stdout, "  ");
	table_free(&t);
}

/* ---- operations ------------------------------------------------------------------ */

enum {
	C_VERDICT, C_CHANGE, C_DELTA, C_COUNT, C_TOTAL0, C_TOTAL1, C_MED0, C_MED1,
	C_P950, C_P951, C_P, C_WHY, C_KIND, C_DOMAIN, C_NAME, C_NCOLS
};

static void
cell_time(struct table *t, size_t col, const struct diff_side *s, double v)
{
	char b[48];
	if (s->present)
		table_set(t, col, "%s", diff_fmt_time(b, sizeof(b), v, 0));
	else
		table_set(t, col, "-");
}

static void
text_table(struct diff *df, enum agg_table tb)
{
	struct table_col cols[C_NCOLS] = {
		{ "Verdict", 1 }, { "Change", 0 }, { "Delta", 0 }, { "Count", 0 },
		{ "Total before", 0 }, { "Total after", 0 }, { "Median before", 0 },
		{ "Median after", 0 }, { "P95 before", 0 }, { "P95 after", 0 },
		{ "p", 0 }, { "Why", 1 }, { "Kind", 1 }, { "Domain", 1 }, { "Name", 1 },
	};
	if (df->per_run) {
		cols[C_DELTA].title = "Delta per run";
		cols[C_COUNT].title = "Count per run";
		cols[C_TOTAL0].title = "Per run before";
		cols[C_TOTAL1].title = "Per run after";
	}
	size_t shown, all;
	struct diff_row **v = diff_table_rows(df, tb, &shown, &all);
	if (!all) {
		free(v);
		return;
	}
	size_t counts[V_NVERDICTS];
	diff_table_counts(df, tb, counts);
	char title[256], b[64], c[64];
	double total = 0;
	for (size_t i = 0; i < all; i++)
		total += v[i]->delta;
	int o = snprintf(title, sizeof(title), "%s:", diff_table_titles[tb]);
	static const enum diff_verdict order[] = { V_SLOWER, V_FASTER, V_UNSURE, V_SAME,
	                                          V_NEW, V_GONE };
	for (size_t k = 0, n = 0; k < sizeof(order) / sizeof(order[0]); k++)
		if (counts[order[k]] && o < (int)sizeof(title))
			o += snprintf(title + o, sizeof(title) - (size_t)o, "%s %zu %s",
			              n++ ? "," : "", counts[order[k]],
			              diff_verdict_names[order[k]]);
	if (o < (int)sizeof(title))
		snprintf(title + o, sizeof(title) - (size_t)o, " (%zu groups, %s%s in all)",
		         all, diff_fmt_time(b, sizeof(b), total, 1), df->per_run ? " per run" : "");
	section(title);

	struct table t;
	table_init(&t, cols, C_NCOLS);
	t.max_width = df->opt->line_width;
	for (size_t i = 0; i < shown; i++) {
		const struct diff_row *r = v[i];
		const struct diff_side *s0 = &r->side[0], *s1 = &r->side[1];
		table_row(&t);
		table_set(&t, C_VERDICT, "%s", diff_verdict_names[r->verdict]);
		table_set(&t, C_CHANGE, "%s", diff_fmt_row_change(b, sizeof(b), r));
		table_set(&t, C_DELTA, "%s", diff_fmt_time(b, sizeof(b), r->delta, 1));
		double c0 = s0->present ? s0->count : 0, c1 = s1->present ? s1->count : 0;
		if (c0 == c1)
			table_set(&t, C_COUNT, "%s", diff_fmt_count(b, sizeof(b), c0));
		else
			table_set(&t, C_COUNT, "%s -> %s", diff_fmt_count(b, sizeof(b), c0),
			          diff_fmt_count(c, sizeof(c), c1));
		cell_time(&t, C_TOTAL0, s0, s0->total);
		cell_time(&t, C_TOTAL1, s1, s1->total);
		cell_time(&t, C_MED0, s0, s0->s.p50);
		cell_time(&t, C_MED1, s1, s1->s.p50);
		cell_time(&t, C_P950, s0, s0->s.p95);
		cell_time(&t, C_P951, s1, s1->s.p95);
		table_set(&t, C_P, "%s", diff_fmt_p(b, sizeof(b), &r->test));
		if (r->why)
			table_set(&t, C_WHY, "%s", r->why);
		if (r->kind == TK_ASYNC_RANGE)
			table_set(&t, C_KIND, "async");
		if (*r->domain)
			table_set(&t, C_DOMAIN, "%s", r->domain);
		table_set(&t, C_NAME, "%s", diff_display_name(df, r->name));
	}
	table_print(&t, stdout, "  ");
	table_free(&t);
	if (shown < all)
		printf("  ... %zu more\n", all - shown);
	free(v);
}

/* ---- result ----------------------------------------------------------------------- */

#define RESULT_LINES 10

static void
text_result(struct diff *df)
{
	const struct diff_options *o = df->opt;
	char b[64], c0[32], c1[32];
	section("Result");
	if (!df->nchecks) {
		printf("  no significant regression beyond %g%% (p < %g)\n",
		       o->threshold * 100, o->alpha);
		return;
	}
	size_t regressions = 0;
	for (size_t i = 0; i < df->nchecks; i++) {
		const struct diff_check *c = &df->checks[i];
		/* the tables show them all: the largest ten are enough here */
		if (strcmp(c->type, "regression") == 0 && regressions++ == RESULT_LINES) {
			size_t left = 0;
			for (size_t k = i; k < df->nchecks; k++)
				left += strcmp(df->checks[k].type, "regression") == 0;
			printf("  ... %zu more slower beyond %g%%\n", left,
			       o->threshold * 100);
			break;
		}
		const char *what = c->kind ? diff_line_name(df, c->subject) : c->subject;
		if (strcmp(c->type, "expect-speedup") == 0) {
			printf("  %s  expected %gx faster on %s: %s\n",
			       c->pass ? "pass" : "FAIL", c->limit, what,
			       diff_fmt_change(b, sizeof(b), 1 / c->value));
		} else if (strcmp(c->type, "fail-if-slower") == 0) {
			printf("  %s  at most %g%% slower on %s%s%s: %s\n",
			       c->pass ? "pass" : "FAIL", (c->limit - 1) * 100,
			       c->kind ? c->kind : "", c->kind ? " " : "", what,
			       diff_fmt_change(b, sizeof(b), c->value));
		} else if (c->row && c->row->calls) {
			const struct diff_row *r = c->row;
			printf("  FAIL  %s calls: %s %s %s -> %s%s (%s)\n",
			       r->calls > 0 ? "more" : "fewer", c->kind, what,
			       diff_fmt_count(c0, sizeof(c0), r->side[0].count),
			       diff_fmt_count(c1, sizeof(c1), r->side[1].count),
			       df->per_run ? " per run" : "", diff_fmt_time(b, sizeof(b), r->delta, 1));
		} else {
			char p[32] = "";
			if (c->tested)
				snprintf(p, sizeof(p), " (p < %g)", o->alpha);
			printf("  FAIL  slower beyond %g%%%s: %s%s%s %s\n",
			       (c->limit - 1) * 100, p, c->kind ? c->kind : "",
			       c->kind ? " " : "", what, diff_fmt_change(b, sizeof(b), c->value));
		}
	}
}

void
diff_text(struct diff *df)
{
	unsigned reports = df->opt->reports ? df->opt->reports
	                                    : DR_SUMMARY | DR_EXPLAIN | DR_GROUPS;
	text_header(df);
	if (reports & DR_SUMMARY)
		text_summary(df);
	if (reports & DR_EXPLAIN)
		text_explain(df);
	if (reports & DR_GROUPS)
		for (int t = 0; t < AGG_NTABLES; t++)
			text_table(df, (enum agg_table)t);
	text_result(df);
}
