/* SPDX-License-Identifier: MIT */
/*
 * trace-diff: what decides the exit status.  Without --fail-if-slower
 * and --expect-speedup, any significant regression beyond --threshold:
 * an operation "slower", or the wall time (the --metric) "slower".
 * --fail-if-slower PCT narrows that to one figure, the --metric, or to
 * each operation kept by --name when no --metric is given, judged with
 * PCT as the threshold; --expect-speedup X asks AFTER to be at least X
 * times faster on the --metric.  With one run per side the wall time is
 * one value each, not tested: it fails the default check only when
 * --fail-if-slower asks for it.  Each check is kept for the report.
 */
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "common/util.h"
#include "support.h"

/* What a check on an operation compares with its limit: the ratio of
 * its counts (per run) when the count decided, else of its medians. */
static double
diff_row_value(const struct diff_row *r)
{
	if (r->calls)
		return diff_row_calls(r);
	return r->ratio;
}

static void
add_check(struct diff *df, const char *type, const char *subject,
          const char *kind, double value, double limit, int pass, int tested,
          const struct diff_row *row)
{
	struct diff_check *checks = tkp_grow(df->checks, &df->capchecks, df->nchecks + 1,
	                                     sizeof(*checks));
	char *s = strdup(subject);
	if (!checks || !s)
		cmd_die(EXIT_USAGE, "out of memory");
	df->checks = checks;
	df->checks[df->nchecks++] = (struct diff_check){ type, s, kind, value, limit, pass,
	                                                 tested, row };
	if (!pass)
		df->regression = 1;
}

/* The row of the chosen metric, present in both traces, or NULL after
 * a message. */
static const struct diff_summary_row *
metric_row(const struct diff *df, const char *option)
{
	const struct diff_options *o = df->opt;
	const struct diff_summary_row *r = diff_summary_find(df, o->metric);
	if (r && r->has[0] && r->has[1])
		return r;
	cmd_warn("%s: no %s time in %s", option, diff_metric_keys[o->metric],
	         r && r->has[0] ? cmd_display_path(o->paths[1])
	         : r && r->has[1] ? cmd_display_path(o->paths[0]) : "either trace");
	return NULL;
}

int
diff_gate(struct diff *df)
{
	const struct diff_options *o = df->opt;
	const char *metric = diff_metric_keys[o->metric];
	int chosen = o->fail_if_slower >= 0 || o->expect_speedup > 0;
	if (o->fail_if_slower >= 0) {
		double limit = 1 + o->fail_if_slower;
		if (o->name_given && !o->metric_given) {
			for (int t = 0; t < AGG_NTABLES; t++) {
				size_t shown, all;
				struct diff_row **v = diff_table_rows(df, (enum agg_table)t, &shown,
				                                      &all);
				for (size_t i = 0; i < all; i++) {
					const struct diff_row *r = v[i];
					if (!r->side[0].present || !r->side[1].present)
						continue;
					enum diff_verdict vd = diff_row_verdict(df, r, o->fail_if_slower, NULL);
					add_check(df, "fail-if-slower", r->name, tk_kind_name(r->kind),
					          diff_row_value(r), limit, vd != V_SLOWER, 1, r);
				}
				free(v);
			}
		} else {
			const struct diff_summary_row *r = metric_row(df, "--fail-if-slower");
			if (!r)
				return -1;
			enum diff_verdict v = diff_summary_verdict(df, r, o->fail_if_slower);
			add_check(df, "fail-if-slower", metric, NULL, diff_summary_ratio(r),
			          limit, v != V_SLOWER, r->test.test != TEST_NONE, NULL);
		}
	}
	if (o->expect_speedup > 0) {
		const struct diff_summary_row *r = metric_row(df, "--expect-speedup");
		if (!r)
			return -1;
		double speedup = 1 / diff_summary_ratio(r);
		add_check(df, "expect-speedup", metric, NULL, speedup,
		          o->expect_speedup, speedup >= o->expect_speedup, 0, NULL);
	}
	if (chosen)
		return 0;
	const struct diff_summary_row *w = diff_summary_find(df, o->metric);
	if (w && w->has_verdict && w->verdict == V_SLOWER)
		add_check(df, "regression", metric, NULL, diff_summary_ratio(w),
		          1 + o->threshold, 0, w->test.test != TEST_NONE, NULL);
	/* in the order of the report: by table, largest change first */
	for (int t = 0; t < AGG_NTABLES; t++) {
		size_t shown, all;
		struct diff_row **v = diff_table_rows(df, (enum agg_table)t, &shown, &all);
		for (size_t i = 0; i < all; i++)
			if (v[i]->verdict == V_SLOWER)
				add_check(df, "regression", v[i]->name, tk_kind_name(v[i]->kind),
				          diff_row_value(v[i]), 1 + o->threshold, 0,
				          diff_row_evidence(df, v[i]) != EV_COUNT, v[i]);
		free(v);
	}
	return 0;
}
