/* SPDX-License-Identifier: MIT */
/*
 * trace-diff CSV output (through libcsv): the operations, one row each;
 * with --report, the summary as its own table first.  Integer
 * nanoseconds, no thousands separators; a side without the operation
 * has empty fields.  With different numbers of runs on the two sides,
 * the groups' and the explanation's records end with per_run,
 * runs_before and runs_after: their counts, times and bytes are means
 * per run.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "common/table.h"
#include "common/util.h"

/* The fields of one record, formatted into a buffer each (one per
 * column); the record lives on diff_csv()'s stack. */
#define MAXF 40
struct fields {
	char buf[MAXF][64];
	const char *fld[MAXF];   /* NULL = empty */
};

static void
setf(struct fields *f, size_t i, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
setf(struct fields *f, size_t i, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->buf[i], sizeof(f->buf[i]), fmt, ap);
	va_end(ap);
	f->fld[i] = f->buf[i];
}

static void
set_real(struct fields *f, size_t i, double v)
{
	if (isfinite(v))
		setf(f, i, "%.6g", v);
	else
		f->fld[i] = NULL;
}

static void
set_p(struct fields *f, size_t i, const struct diff_test_result *t)
{
	if (t->test == TEST_NONE)
		f->fld[i] = NULL;
	else
		setf(f, i, "%.6g", t->p);
}

static const char *const summary_header[] = {
	"report", "metric", "device", "unit", "before", "after", "delta", "ratio",
	"speedup", "change_pct", "verdict", "runs_before", "runs_after", "sd_before",
	"sd_after", "test", "p_value",
};
#define NSUMMARY (sizeof(summary_header) / sizeof(summary_header[0]))

static void
csv_summary(struct diff *df, struct fields *f)
{
	csv_record(stdout, summary_header, NSUMMARY);
	for (size_t i = 0; i < df->nsummary; i++) {
		const struct diff_summary_row *r = &df->summary[i];
		memset(f->fld, 0, sizeof(f->fld));
		f->fld[0] = "summary";
		f->fld[1] = diff_metric_keys[r->metric];
		if (r->metric == DM_DEVICE)
			setf(f, 2, "%" PRId64, r->device);
		f->fld[3] = r->time ? "ns" : "bytes";
		for (int s = 0; s < 2; s++)
			if (r->has[s])
				setf(f, 4 + (size_t)s, "%lld", cmd_ns_int(r->v[s]));
		if (r->has[0] && r->has[1]) {
			double ratio = diff_summary_ratio(r);
			setf(f, 6, "%lld", cmd_ns_int(r->v[1] - r->v[0]));
			set_real(f, 7, ratio);
			if (r->time)
				set_real(f, 8, 1 / ratio);
			set_real(f, 9, (ratio - 1) * 100);
		}
		if (r->has_verdict)
			f->fld[10] = diff_verdict_names[r->verdict];
		if (r->nruns[0]) {
			setf(f, 11, "%zu", r->nruns[0]);
			setf(f, 12, "%zu", r->nruns[1]);
			/* a mean per run of a figure not kept run by run has no sd */
			for (size_t s = 0; s < 2; s++)
				if (!isnan(r->sd[s]))
					setf(f, 13 + s, "%lld", cmd_ns_int(r->sd[s]));
		}
		f->fld[15] = diff_test_name(r->test.test);
		set_p(f, 16, &r->test);
		csv_record(stdout, f->fld, NSUMMARY);
	}
}

/* The last fields of a record with per_run: "true", the runs of each
 * side; how many fields that is (none without per_run). */
static size_t
set_per_run(const struct diff *df, struct fields *f, size_t at)
{
	if (!df->per_run)
		return 0;
	f->fld[at] = "true";
	setf(f, at + 1, "%.0f", df->divisor[0]);
	setf(f, at + 2, "%.0f", df->divisor[1]);
	return 3;
}

/* A header: `n` names, then with per_run the names of its fields. */
static void
header(const struct diff *df, const char *const *names, size_t n)
{
	const char *h[MAXF];
	memcpy(h, names, n * sizeof(*h));
	if (df->per_run) {
		h[n++] = "per_run";
		h[n++] = "runs_before";
		h[n++] = "runs_after";
	}
	csv_record(stdout, h, n);
}

static void
csv_explain(struct diff *df, struct fields *f)
{
	static const char *const names[] = {
		"report", "part", "before_ns", "after_ns", "delta_ns", "share_pct",
	};
	header(df, names, 6);
	for (size_t i = 0; i < df->nparts; i++) {
		const struct diff_part *p = &df->parts[i];
		memset(f->fld, 0, sizeof(f->fld));
		f->fld[0] = "explain";
		f->fld[1] = diff_part_keys[p->part];
		setf(f, 2, "%lld", cmd_ns_int(p->v[0]));
		setf(f, 3, "%lld", cmd_ns_int(p->v[1]));
		setf(f, 4, "%lld", cmd_ns_int(p->v[1] - p->v[0]));
		set_real(f, 5, diff_part_share(df, p));
		csv_record(stdout, f->fld, 6 + set_per_run(df, f, 6));
	}
}

static const char *const group_header[] = {
	"report", "kind", "domain", "name", "verdict", "count_before", "count_after",
	"total_before_ns", "total_after_ns", "delta_ns", "mean_before_ns",
	"mean_after_ns", "std_before_ns", "std_after_ns", "min_before_ns",
	"min_after_ns", "median_before_ns", "median_after_ns", "p95_before_ns",
	"p95_after_ns", "p99_before_ns", "p99_after_ns", "max_before_ns",
	"max_after_ns", "ratio", "speedup", "change_pct", "test", "p_value",
	"runs_p_value", "bytes_before", "bytes_after", "p_holm", "evidence", "calls",
	"why", "runs_count_p_value",
};
#define NGROUP (sizeof(group_header) / sizeof(group_header[0]))
_Static_assert(NGROUP + 3 <= MAXF, "a record of the groups, per_run fields included, fits");

static void
csv_groups(struct diff *df, struct fields *f)
{
	header(df, group_header, NGROUP);
	for (int t = 0; t < AGG_NTABLES; t++) {
		size_t shown, all;
		struct diff_row **v = diff_table_rows(df, (enum agg_table)t, &shown, &all);
		for (size_t i = 0; i < shown; i++) {
			const struct diff_row *r = v[i];
			memset(f->fld, 0, sizeof(f->fld));
			f->fld[0] = diff_table_keys[t];
			f->fld[1] = tk_kind_name(r->kind);
			f->fld[2] = r->domain;
			f->fld[3] = r->name;
			f->fld[4] = diff_verdict_names[r->verdict];
			for (size_t s = 0; s < 2; s++) {
				const struct diff_side *d = &r->side[s];
				if (!d->present)
					continue;
				if (df->per_run) {
					/* a mean per run need not be whole */
					setf(f, 5 + s, "%.10g", d->count);
					setf(f, 7 + s, "%lld", cmd_ns_int(d->total));
				} else {
					setf(f, 5 + s, "%" PRIu64, d->s.count);
					setf(f, 7 + s, "%" PRId64, d->s.total);
				}
				setf(f, 10 + s, "%lld", cmd_ns_int(d->s.mean));
				setf(f, 12 + s, "%lld", cmd_ns_int(d->s.std));
				setf(f, 14 + s, "%" PRId64, d->s.min);
				setf(f, 16 + s, "%lld", cmd_ns_int(d->s.p50));
				setf(f, 18 + s, "%lld", cmd_ns_int(d->s.p95));
				setf(f, 20 + s, "%lld", cmd_ns_int(d->s.p99));
				setf(f, 22 + s, "%" PRId64, d->s.max);
				if (r->table == AGG_MEMOPS)
					setf(f, 30 + s, "%lld", cmd_ns_int(diff_per_run(df, (int)s,
					                                               (double)d->bytes)));
			}
			setf(f, 9, "%lld", cmd_ns_int(r->delta));
			set_real(f, 24, r->ratio);
			set_real(f, 25, 1 / r->ratio);
			set_real(f, 26, (r->ratio - 1) * 100);
			f->fld[27] = diff_test_name(r->test.test);
			set_p(f, 28, &r->test);
			set_p(f, 29, &r->runs_test);
			set_real(f, 32, r->p_holm);
			f->fld[33] = diff_evidence_name(diff_row_evidence(df, r));
			f->fld[34] = r->calls > 0 ? "more" : r->calls < 0 ? "fewer" : NULL;
			f->fld[35] = r->why;
			set_p(f, 36, &r->count_test);
			csv_record(stdout, f->fld, NGROUP + set_per_run(df, f, NGROUP));
		}
		free(v);
	}
}

void
diff_csv(struct diff *df)
{
	unsigned reports = df->opt->reports ? df->opt->reports : DR_GROUPS;
	struct fields f;
	/* one table per report, an empty line between two */
	int first = 1;
	if (reports & DR_SUMMARY) {
		csv_summary(df, &f);
		first = 0;
	}
	if (reports & DR_EXPLAIN) {
		if (!first)
			putchar('\n');
		csv_explain(df, &f);
		first = 0;
	}
	if (reports & DR_GROUPS) {
		if (!first)
			putchar('\n');
		csv_groups(df, &f);
	}
}
