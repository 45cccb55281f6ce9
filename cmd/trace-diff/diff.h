/* SPDX-License-Identifier: MIT */
/*
 * trace-diff, shared by its files: trace-diff.c (options, inputs, exit
 * status), baseline.c (a side read from a trace-stats --baseline
 * summary), match.c (operations of the two traces matched and
 * tested), summary.c (the run-wide figures), explain.c (the wall's
 * change split over kernels, copies, API, idle), guard.c (differences of
 * setup worth a warning), gate.c (what
 * decides the exit status), common.c (units, names, order), and
 * one file per output format.  Both traces are aggregated by
 * analysis/aggregate.h exactly as trace-stats does, so every figure agrees with
 * trace-stats to the nanosecond (or is its mean per run, when the sides
 * have different numbers of runs); the statistics are in
 * analysis/stattest.h.
 *
 * The files share no state: each part takes the one context, struct
 * diff, which holds the options (read-only once parsed) and the results
 * as they are computed.
 */
#ifndef TK_CMD_DIFF_H
#define TK_CMD_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/aggregate.h"
#include "analysis/stattest.h"

enum diff_format { DF_TEXT, DF_CSV, DF_JSON, DF_MARKDOWN };

/* Reports (bits). */
#define DR_SUMMARY 1u
#define DR_GROUPS 2u
#define DR_EXPLAIN 4u

/* Run-wide figures.  The first DM_NGATE are times: --metric chooses one
 * for --fail-if-slower and --expect-speedup. */
enum diff_metric {
	DM_WALL, DM_GPU, DM_KERNEL, DM_COPY, DM_API, DM_CPU, DM_NGATE,
	DM_DEVICE = DM_NGATE,    /* busy time of one GPU (with several) */
	DM_BYTES, DM_RSS, DM_DEVMEM,
};
extern const char *const diff_metric_keys[];

struct diff_options {
	enum diff_format format;
	int quiet;
	unsigned reports;        /* DR_*; 0 = the format's default */
	uint64_t top;            /* rows per table; 0 = all */
	int full_names;
	size_t line_width;       /* text tables are cut to this; 0 = never */
	int normalize;
	uint32_t kinds;          /* bit per event kind; 0 = every one */
	double threshold;        /* smallest change called one (fraction) */
	double alpha;
	double min_share;        /* smallest added time of one operation
	                            that matters, as a share of the wall */
	enum diff_metric metric;
	int metric_given;
	double fail_if_slower;   /* fraction; < 0 = not given */
	double expect_speedup;   /* factor; 0 = not given */
	int name_given;          /* --name: the groups it keeps are gated */
	struct agg_options agg;
	const char *paths[2];    /* BEFORE, AFTER (the first file of each) */
	char *const *files[2];   /* every file of each side: with several,
	                            each is one run (BEFORE... -- AFTER...) */
	size_t nfiles[2];
	const char *html;        /* --html FILE, else NULL */
};

/* ---- operations matched across the traces (match.c) ---- */

struct diff_side {
	int present;
	struct summary s;        /* as trace-stats computes it */
	struct dist *d;          /* the durations: the group's, or `own`
	                            when --normalize merged several (set
	                            once every row exists: rows move) */
	struct dist own;
	int owned;
	uint64_t bytes;          /* memory operations */
	double count, total;     /* what is compared: s.count and s.total,
	                            or their means per run (struct diff,
	                            per_run) */
	double *runs;            /* time per run (several runs on both
	                            sides), nruns of them */
	double *run_counts;      /* instances per run, as many */
	size_t nruns;
	char **names;            /* --normalize: the names merged here */
	size_t nnames, capnames;
};

struct diff_row {
	enum agg_table table;
	unsigned kind;
	char *domain, *name;     /* name normalized with --normalize */
	struct diff_side side[2];
	double delta;            /* ns, after - before: of the totals, or of
	                            the means per run (struct diff, per_run) */
	double ratio;            /* median after / median before */
	struct diff_test_result test;      /* over the instances */
	struct diff_test_result runs_test; /* over the runs' totals */
	struct diff_test_result count_test; /* over the runs' counts: what
	                            decides when the count changed */
	double p_holm;           /* the deciding test's p, Holm-adjusted over
	                            every operation tested; NAN: none */
	int calls;               /* the count changed beyond the threshold:
	                            +1 more calls, -1 fewer, else 0 */
	enum diff_verdict verdict;
	const char *why;         /* a static sentence: why not faster or
	                            slower, or what decided; NULL: the rule */
};

/* What a row's verdict rests on. */
enum diff_evidence { EV_NONE, EV_INSTANCES, EV_RUNS, EV_COUNT };

/* ---- run-wide figures (summary.c) ---- */

struct diff_summary_row {
	enum diff_metric metric;
	int64_t device;          /* DM_DEVICE: its CUDA ordinal */
	int time;                /* a time (else bytes) */
	int has[2];
	double v[2];             /* value, or the mean over the runs */
	double sd[2];            /* standard deviation over the runs; NAN
	                            for a mean of a figure not kept per run
	                            (struct diff, per_run) */
	size_t nruns[2];         /* per run: how many; 0 = whole trace */
	struct diff_test_result test;
	int has_verdict;
	enum diff_verdict verdict;
};

/* ---- what decides the exit status (gate.c) ---- */

struct diff_check {
	const char *type;        /* "regression", "fail-if-slower",
	                            "expect-speedup" */
	char *subject;           /* the metric or the group's name */
	const char *kind;        /* the group's kind, NULL for a metric */
	double value;            /* the ratio after/before, or the speedup */
	double limit;
	int pass;
	int tested;              /* a statistical test took part (else the
	                            threshold alone decided) */
	const struct diff_row *row; /* the operation's, NULL for a metric */
};

/* ---- guard rails (guard.c) ---- */

/* The two traces differ in what makes a comparison fair. */
struct diff_warning {
	const char *field;       /* JSON key: "gpu_model", "gpu_count",
	                            "world_size", "cuda_driver",
	                            "cuda_runtime", "command" */
	const char *what;        /* for people: "GPU model" */
	char *before, *after;
};

/* ---- what explains the change (explain.c) ---- */

enum diff_part_kind { DP_KERNELS, DP_COMM, DP_COPIES, DP_API, DP_IDLE, DP_NPARTS };
extern const char *const diff_part_keys[DP_NPARTS];   /* JSON, CSV */
extern const char *const diff_part_labels[DP_NPARTS]; /* people */

struct diff_part {
	enum diff_part_kind part;
	double v[2];             /* ns, before and after */
};

/* The context of a comparison: its options, and its results. */
struct diff {
	const struct diff_options *opt;  /* borrowed; the caller sets it first */
	struct agg *agg[2];
	int from_summary[2];     /* the side is a summary (baseline.c): no
	                            instances to test */
	int runs;                /* both traces have several runs */
	int per_run;             /* ... and not as many: every figure that
	                            adds up over a side's runs (a count, a
	                            time in all, bytes, the wall) is its
	                            mean per run, so that 5 runs compare
	                            with 3.  With as many runs on each side
	                            they stay totals over the runs, which
	                            compare alike. */
	double divisor[2];       /* what each side's totals are divided by:
	                            its number of runs when per_run, else 1 */
	int64_t resolution;      /* ns: the coarser clock quantum of the two
	                            traces (1000 for whole microseconds) */
	size_t family;           /* operations tested: Holm's m */
	double reference[AGG_NTABLES]; /* ns: what --min-share is a share
	                            of, per table (match.c) */
	struct diff_row *rows;
	size_t nrows, caprows;
	struct diff_summary_row *summary;
	size_t nsummary, capsummary;
	struct diff_check *checks;
	size_t nchecks, capchecks;
	struct diff_warning *warnings;
	size_t nwarnings, capwarnings;
	struct diff_part parts[DP_NPARTS]; /* largest change first */
	size_t nparts;
	double wall_delta;       /* ns, after - before */
	int regression;          /* the exit status is 1 */
};

/* match.c: a total of side s (over its runs) as it is compared: its
 * mean per run when df->per_run, else itself. */
double diff_per_run(const struct diff *df, int side, double total);
/* The wall time of side s: the trace's, or with df->per_run the mean of
 * its runs' walls. */
double diff_wall(const struct diff *df, int side);
/* The ratio of the counts, after / before (per run when df->per_run). */
double diff_row_calls(const struct diff_row *r);

/* baseline.c: is the file a summary (by its content)?  Then the
 * aggregation restored from it, or NULL after a message. */
int diff_is_summary(const char *path);
struct agg *diff_read_summary(const struct agg_options *o, const char *path);
/* match.c */
void diff_match(struct diff *df);
/* The verdict of a row at this threshold (and --alpha, --min-share);
 * *why (may be NULL) gets the reason when it is not the plain rule. */
enum diff_verdict diff_row_verdict(const struct diff *df, const struct diff_row *r,
                                   double threshold, const char **why);
enum diff_evidence diff_row_evidence(const struct diff *df, const struct diff_row *r);
const char *diff_evidence_name(enum diff_evidence e);
/* explain.c: fills parts; a part's change as a percentage of the
 * wall's (NAN when the wall did not change) */
void diff_explain(struct diff *df);
double diff_part_share(const struct diff *df, const struct diff_part *p);
/* guard.c: fills warnings */
void diff_guard(struct diff *df);
/* A trace's metadata value, or NULL; its command (metadata, else its
 * first process's; "" when none). */
const char *diff_meta(struct agg *a, const char *key);
const char *diff_command(struct agg *a);
/* summary.c */
void diff_summarise(struct diff *df);
const struct diff_summary_row *diff_summary_find(const struct diff *df,
                                                 enum diff_metric m);
/* after / before (the means over the runs, when per run) */
double diff_summary_ratio(const struct diff_summary_row *r);
enum diff_verdict diff_summary_verdict(const struct diff *df,
                                       const struct diff_summary_row *r,
                                       double threshold);
/* gate.c: fills checks and regression; 0, or -1 after a message
 * when the metric to judge is missing from a trace */
int diff_gate(struct diff *df);
void diff_free(struct diff *df);

/* ---- shared by the output formats (common.c) ---- */

/* "1.234 ms", signed with `sign` ("+1.234 ms"). */
char *diff_fmt_time(char *buf, size_t n, double ns, int sign);
/* A count: "12", or "12.33" for a mean per run that is not whole. */
char *diff_fmt_count(char *buf, size_t n, double count);
/* "3.00x faster", "1.30x slower", "same" (ratio = after / before). */
char *diff_fmt_change(char *buf, size_t n, double ratio);
/* A row's change: its median's, or its count's when that changed
 * ("2.00x more calls"), as the verdict is decided. */
char *diff_fmt_row_change(char *buf, size_t n, const struct diff_row *r);
/* "0.0031", "<1e-4", "" for no test. */
char *diff_fmt_p(char *buf, size_t n, const struct diff_test_result *t);
/* A metric for people: "wall", "GPU 1 busy", "kernels". */
char *diff_metric_label(char *buf, size_t n, const struct diff_summary_row *r);
/* A name for people: templates without their return type and
 * parameters unless --full-names (buffer valid until the next call). */
const char *diff_display_name(const struct diff *df, const char *name);
/* The same, also cut to 70 columns, for one-line messages. */
const char *diff_line_name(const struct diff *df, const char *name);
const char *diff_test_name(enum diff_test t);
extern const char *const diff_table_titles[AGG_NTABLES];
extern const char *const diff_table_keys[AGG_NTABLES];
/* Rows of one table in display order (|delta| largest first), after
 * --top; *all gets how many there are before it.  Caller frees. */
struct diff_row **diff_table_rows(struct diff *df, enum agg_table t, size_t *shown,
                                  size_t *all);
/* Counts of verdicts in a table. */
void diff_table_counts(const struct diff *df, enum agg_table t,
                       size_t counts[V_NVERDICTS]);

/* ---- output formats ---- */

void diff_text(struct diff *df);
void diff_csv(struct diff *df);
void diff_json(struct diff *df);
void diff_markdown(struct diff *df);
/* html.c: the page of --html; 0, or -1 after a message. */
int diff_html(struct diff *df, const char *path);

#endif
