/* SPDX-License-Identifier: MIT */
/*
 * trace-diff Markdown output, for pull-request comments (GitHub
 * Flavored Markdown tables): the result first, the summary, then per
 * kind of operation the changed ones in a table and the unchanged ones
 * folded away in a <details> block.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "common/util.h"

/* A table cell: '|' escaped, line breaks as spaces. */
static void
cell(const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputs("\\|", stdout);
		else if (*s == '\n' || *s == '\r')
			putchar(' ');
		else
			putchar(*s);
	}
}

/* A name as code: fenced with more backticks than it holds in a row. */
static void
code(const char *s)
{
	int run = 0, most = 0;
	for (const char *p = s; *p; p++) {
		run = *p == '`' ? run + 1 : 0;
		most = run > most ? run : most;
	}
	for (int i = 0; i <= most; i++)
		putchar('`');
	if (most || *s == '`')
		putchar(' ');
	cell(s);
	if (most || (*s && s[strlen(s) - 1] == '`'))
		putchar(' ');
	for (int i = 0; i <= most; i++)
		putchar('`');
}

static void
md_result(struct diff *df)
{
	char b[64];
	if (!df->nchecks) {
		printf("**No significant regression** (threshold %g %%, p < %g)\n\n",
		       df->opt->threshold * 100, df->opt->alpha);
		return;
	}
	size_t failed = 0;
	for (size_t i = 0; i < df->nchecks; i++)
		failed += !df->checks[i].pass;
	if (failed)
		printf("**%zu check%s failed**\n\n", failed, failed == 1 ? "" : "s");
	else
		printf("**All checks passed**\n\n");
	size_t regressions = 0;
	for (size_t i = 0; i < df->nchecks; i++) {
		const struct diff_check *c = &df->checks[i];
		/* the tables show them all: the largest ten are enough here */
		if (strcmp(c->type, "regression") == 0 && regressions++ == 10) {
			printf("- … %zu more\n", failed - 10);
			break;
		}
		printf("- %s ", c->pass ? "pass" : "**FAIL**");
		if (strcmp(c->type, "expect-speedup") == 0)
			printf("expected %gx faster on %s: %s", c->limit, c->subject,
			       diff_fmt_change(b, sizeof(b), 1 / c->value));
		else {
			printf("%s %g %% on %s ", strcmp(c->type, "regression") == 0
			       ? "slower beyond" : "at most slower by",
			       (c->limit - 1) * 100, c->kind ? c->kind : "metric");
			code(c->kind ? diff_line_name(df, c->subject) : c->subject);
			printf(": %s", c->row ? diff_fmt_row_change(b, sizeof(b), c->row)
			                      : diff_fmt_change(b, sizeof(b), c->value));
		}
		putchar('\n');
	}
	putchar('\n');
}

static void
md_summary(struct diff *df)
{
	char b[96], v[64], sd[64];
	printf("| Metric | Before | After | Change | p | Verdict |\n");
	printf("|:--|--:|--:|--:|--:|:--|\n");
	for (size_t i = 0; i < df->nsummary; i++) {
		const struct diff_summary_row *r = &df->summary[i];
		printf("| %s |", diff_metric_label(b, sizeof(b), r));
		for (int s = 0; s < 2; s++) {
			if (!r->has[s])
				printf(" - |");
			else if (!r->time)
				printf(" %s |", cmd_fmt_bytes(v, sizeof(v), r->v[s]));
			else if (r->nruns[s] > 1 && !isnan(r->sd[s]))
				printf(" %s ± %s |", diff_fmt_time(v, sizeof(v), r->v[s], 0),
				       diff_fmt_time(sd, sizeof(sd), r->sd[s], 0));
			else
				printf(" %s |", diff_fmt_time(v, sizeof(v), r->v[s], 0));
		}
		if (r->has[0] && r->has[1] && r->time)
			printf(" %s |", diff_fmt_change(b, sizeof(b), diff_summary_ratio(r)));
		else if (r->has[0] && r->has[1] && r->v[0] > 0)
			printf(" %+.1f %% |", (r->v[1] / r->v[0] - 1) * 100);
		else
			printf(" |");
		printf(" %s |", diff_fmt_p(b, sizeof(b), &r->test));
		if (r->has_verdict && (r->verdict == V_SLOWER || r->verdict == V_FASTER))
			printf(" **%s** |\n", diff_verdict_names[r->verdict]);
		else
			printf(" %s |\n", r->has_verdict ? diff_verdict_names[r->verdict] : "");
	}
	putchar('\n');
}

static void
md_rows(const struct diff *df, struct diff_row **v, size_t n, int changed)
{
	char b[64], c[64];
	printf("| Verdict | Change | %s | %s | Median before | Median after | p | Why | Name |\n",
	       df->per_run ? "Δ per run" : "Δ total", df->per_run ? "Count per run" : "Count");
	printf("|:--|--:|--:|--:|--:|--:|--:|:--|:--|\n");
	for (size_t i = 0; i < n; i++) {
		const struct diff_row *r = v[i];
		int is_changed = r->verdict != V_SAME;
		if (is_changed != changed)
			continue;
		const struct diff_side *s0 = &r->side[0], *s1 = &r->side[1];
		if (r->verdict == V_SLOWER || r->verdict == V_FASTER)
			printf("| **%s** |", diff_verdict_names[r->verdict]);
		else
			printf("| %s |", diff_verdict_names[r->verdict]);
		printf(" %s | %s |", diff_fmt_row_change(b, sizeof(b), r),
		       diff_fmt_time(c, sizeof(c), r->delta, 1));
		double c0 = s0->present ? s0->count : 0, c1 = s1->present ? s1->count : 0;
		if (c0 == c1)
			printf(" %s |", diff_fmt_count(b, sizeof(b), c0));
		else
			printf(" %s → %s |", diff_fmt_count(b, sizeof(b), c0),
			       diff_fmt_count(c, sizeof(c), c1));
		printf(" %s |", s0->present ? diff_fmt_time(b, sizeof(b), s0->s.p50, 0) : "-");
		printf(" %s |", s1->present ? diff_fmt_time(b, sizeof(b), s1->s.p50, 0) : "-");
		printf(" %s | %s | ", diff_fmt_p(b, sizeof(b), &r->test), r->why ? r->why : "");
		if (*r->domain) {
			cell(r->domain);
			putchar(' ');
		}
		code(diff_display_name(df, r->name));
		printf(" |\n");
	}
}

static void
md_explain(struct diff *df)
{
	char b[64];
	if (!df->nparts)
		return;
	printf("What explains the wall's change (%s%s; the parts overlap):\n\n",
	       diff_fmt_time(b, sizeof(b), df->wall_delta, 1), df->per_run ? " per run" : "");
	printf("| Part | Before | After | Δ | Of wall Δ |\n");
	printf("|:--|--:|--:|--:|--:|\n");
	for (size_t i = 0; i < df->nparts; i++) {
		const struct diff_part *p = &df->parts[i];
		printf("| %s |", diff_part_labels[p->part]);
		printf(" %s |", diff_fmt_time(b, sizeof(b), p->v[0], 0));
		printf(" %s |", diff_fmt_time(b, sizeof(b), p->v[1], 0));
		printf(" %s |", diff_fmt_time(b, sizeof(b), p->v[1] - p->v[0], 1));
		double share = diff_part_share(df, p);
		if (isfinite(share))
			printf(" %+.1f %% |\n", share);
		else
			printf("  |\n");
	}
	putchar('\n');
}

static void
md_table(struct diff *df, enum agg_table t)
{
	size_t shown, all;
	struct diff_row **v = diff_table_rows(df, t, &shown, &all);
	if (!all) {
		free(v);
		return;
	}
	size_t counts[V_NVERDICTS], same = 0, changed = 0;
	diff_table_counts(df, t, counts);
	for (size_t i = 0; i < shown; i++) {
		same += v[i]->verdict == V_SAME;
		changed += v[i]->verdict != V_SAME;
	}
	printf("#### %s:", diff_table_titles[t]);
	static const enum diff_verdict order[] = { V_SLOWER, V_FASTER, V_UNSURE, V_SAME,
	                                          V_NEW, V_GONE };
	for (size_t k = 0, n = 0; k < sizeof(order) / sizeof(order[0]); k++)
		if (counts[order[k]])
			printf("%s %zu %s", n++ ? "," : "", counts[order[k]],
			       diff_verdict_names[order[k]]);
	printf("\n\n");
	if (changed) {
		md_rows(df, v, shown, 1);
		putchar('\n');
	}
	if (same) {
		printf("<details><summary>%zu the same</summary>\n\n", same);
		md_rows(df, v, shown, 0);
		printf("\n</details>\n\n");
	}
	if (shown < all)
		printf("… %zu more\n\n", all - shown);
	free(v);
}

void
diff_markdown(struct diff *df)
{
	unsigned reports = df->opt->reports ? df->opt->reports
	                                    : DR_SUMMARY | DR_EXPLAIN | DR_GROUPS;
	printf("### trace-diff: ");
	code(cmd_display_path(df->opt->paths[0]));
	printf(" → ");
	code(cmd_display_path(df->opt->paths[1]));
	printf("\n\n");
	md_result(df);
	if (df->per_run)
		printf("%.0f runs before, %.0f after: counts, times and Δ are means per run.\n\n",
		       df->divisor[0], df->divisor[1]);
	for (size_t i = 0; i < df->nwarnings; i++) {
		const struct diff_warning *w = &df->warnings[i];
		printf("> **Warning:** the traces differ in %s: ", w->what);
		code(w->before);
		printf(" vs ");
		code(w->after);
		printf("\n%s", i + 1 == df->nwarnings ? "\n" : ">\n");
	}
	if (reports & DR_SUMMARY)
		md_summary(df);
	if (reports & DR_EXPLAIN)
		md_explain(df);
	if (reports & DR_GROUPS)
		for (int t = 0; t < AGG_NTABLES; t++)
			md_table(df, (enum agg_table)t);
}
