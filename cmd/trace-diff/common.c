/* SPDX-License-Identifier: MIT */
/*
 * trace-diff: units, names and the order of rows, shared by its output
 * formats.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "common/short_name.h"
#include "common/util.h"

const char *const diff_table_titles[AGG_NTABLES] = {
	"GPU kernels", "Memory operations", "CUDA API calls",
	"Ranges (NVTX, CPU operators, annotations)",
};

const char *const diff_table_keys[AGG_NTABLES] = {
	"kernels", "memops", "api", "ranges",
};

char *
diff_fmt_time(char *buf, size_t n, double ns, int sign)
{
	const char *plus = sign && ns > 0 ? "+" : "";
	double a = fabs(ns);
	if (a < 1e3)
		snprintf(buf, n, "%s%.0f ns", plus, ns);
	else if (a < 1e6)
		snprintf(buf, n, "%s%.3f us", plus, ns / 1e3);
	else if (a < 1e9)
		snprintf(buf, n, "%s%.3f ms", plus, ns / 1e6);
	else
		snprintf(buf, n, "%s%.3f s", plus, ns / 1e9);
	return buf;
}

char *
diff_fmt_count(char *buf, size_t n, double count)
{
	if (count == floor(count))
		snprintf(buf, n, "%.0f", count);
	else
		snprintf(buf, n, "%.2f", count);
	return buf;
}

char *
diff_fmt_change(char *buf, size_t n, double ratio)
{
	if (isnan(ratio))
		snprintf(buf, n, "%s", "");
	else if (ratio == 1)
		snprintf(buf, n, "%s", "no change");
	else if (isinf(ratio))
		snprintf(buf, n, "%s", "from 0");
	else if (ratio == 0)
		snprintf(buf, n, "%s", "to 0");
	else if (fabs(ratio - 1) < 0.1)
		/* small changes read better as percentages */
		snprintf(buf, n, "%+.1f%%", (ratio - 1) * 100);
	else if (ratio > 1)
		snprintf(buf, n, "%.2fx slower", ratio);
	else
		snprintf(buf, n, "%.2fx faster", 1 / ratio);
	return buf;
}

char *
diff_fmt_row_change(char *buf, size_t n, const struct diff_row *r)
{
	if (!r->calls)
		return diff_fmt_change(buf, n, r->ratio);
	/* the count decides: say so, so that Change and Delta agree */
	double calls = diff_row_calls(r);
	if (fabs(calls - 1) < 0.1)
		snprintf(buf, n, "%+.1f%% calls", (calls - 1) * 100);
	else
		snprintf(buf, n, "%.2fx %s calls", calls > 1 ? calls : 1 / calls,
		         calls > 1 ? "more" : "fewer");
	return buf;
}

char *
diff_fmt_p(char *buf, size_t n, const struct diff_test_result *t)
{
	if (t->test == TEST_NONE)
		snprintf(buf, n, "%s", "");
	else if (t->p < 1e-4)
		snprintf(buf, n, "%s", "<1e-4");
	else
		snprintf(buf, n, "%.2g", t->p);
	return buf;
}

char *
diff_metric_label(char *buf, size_t n, const struct diff_summary_row *r)
{
	static const char *const labels[] = {
		"wall", "GPU busy", "kernels", "copies and memsets", "API calls",
		"CPU time", "GPU busy", "bytes copied", "max RSS",
		"device memory peak",
	};
	if (r->metric == DM_DEVICE && r->device >= 0)
		snprintf(buf, n, "GPU %" PRId64 " busy%s", r->device,
		         r->nruns[0] ? " per run" : "");
	else if (r->metric == DM_DEVICE)
		snprintf(buf, n, "%s", "unknown GPU busy");
	else
		snprintf(buf, n, "%s%s", labels[r->metric], r->nruns[0] ? " per run" : "");
	return buf;
}

const char *
diff_display_name(const struct diff *df, const char *name)
{
	return df->opt->full_names ? name : cmd_short_name(name, 0);
}

const char *
diff_line_name(const struct diff *df, const char *name)
{
	return df->opt->full_names ? name : cmd_short_name(name, 70);
}

const char *
diff_test_name(enum diff_test t)
{
	switch (t) {
	case TEST_MWU_EXACT: return "mann-whitney-exact";
	case TEST_MWU_NORMAL: return "mann-whitney-normal";
	case TEST_WELCH: return "welch";
	default: return NULL;
	}
}


static int
cmp_rows(const void *x, const void *y)
{
	const struct diff_row *a = *(const struct diff_row *const *)x;
	const struct diff_row *b = *(const struct diff_row *const *)y;
	double da = fabs(a->delta), db = fabs(b->delta);
	if (da != db)
		return da > db ? -1 : 1;
	int c = strcmp(a->name, b->name);
	return c ? c : strcmp(a->domain, b->domain);
}

struct diff_row **
diff_table_rows(struct diff *df, enum agg_table t, size_t *shown, size_t *all)
{
	struct diff_row **v = malloc((df->nrows ? df->nrows : 1) * sizeof(*v));
	if (!v)
		cmd_die(EXIT_USAGE, "out of memory");
	size_t n = 0;
	for (size_t i = 0; i < df->nrows; i++)
		if (df->rows[i].table == t)
			v[n++] = &df->rows[i];
	qsort(v, n, sizeof(*v), cmp_rows);
	*all = n;
	uint64_t top = df->opt->top;
	*shown = top && top < n ? (size_t)top : n;
	return v;
}

void
diff_table_counts(const struct diff *df, enum agg_table t, size_t counts[V_NVERDICTS])
{
	memset(counts, 0, V_NVERDICTS * sizeof(*counts));
	for (size_t i = 0; i < df->nrows; i++)
		if (df->rows[i].table == t)
			counts[df->rows[i].verdict]++;
}
