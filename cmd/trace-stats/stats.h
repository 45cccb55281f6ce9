/* SPDX-License-Identifier: MIT */
/*
 * trace-stats' reports, shared by its files: trace-stats.c (options),
 * common.c (units, names, rows), and one file per
 * output format (text.c, csv.c, json.c).  The figures
 * come from analysis/aggregate.h, the findings from analysis/findings.h;
 * these files choose, order and print them.
 * They share no variable: main() owns one struct stats (the options, the
 * aggregation, the findings) and hands it to each part.
 */
#ifndef TK_CMD_STATS_H
#define TK_CMD_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/aggregate.h"
#include "analysis/findings.h"

enum format { FMT_TEXT, FMT_CSV, FMT_JSON };

enum report {
	R_RUN, R_KERNELS, R_MEMOPS, R_API, R_RANGES, R_PROCESSES, R_GPU,
	R_MEMORY, R_FINDINGS, R_NREPORTS
};

/* The operation tables, which CSV prints as one. */
#define STATS_OPS ((1u << R_KERNELS) | (1u << R_MEMOPS) | (1u << R_API) | \
                   (1u << R_RANGES))

enum sort_key { S_TOTAL, S_COUNT, S_MEAN, S_MEDIAN, S_P95, S_MAX, S_NAME };

struct stats_options {
	enum format format;
	unsigned reports;        /* bit per report; 0 = every one with data */
	uint64_t top;            /* 0 = all rows */
	enum sort_key sort;
	double unit;             /* ns per unit; 0 = readable per value */
	const char *unit_name;
	int findings;
	int full_names;
	size_t line_width;       /* text tables are cut to this; 0 = never */
	const char *hist;        /* --hist NAME, else NULL */
	int baseline;            /* --baseline: JSON that trace-diff reads as
	                            a side (every row, per-run totals, the
	                            clock tick) */
	struct agg_options agg;  /* agg.exact_budget: -S */
};

/* One run of trace-stats. */
struct stats {
	struct stats_options opt;
	char **files;            /* the operands ("-" = stdin) */
	int nfiles;
	struct agg *agg;         /* the figures */
	struct findings_options fo; /* the options as the findings' text needs them */
	struct findings findings;  /* findings_compute() */
	/* text output */
	unsigned sections;       /* sections printed so far */
	char titles[16][32];     /* stats_time_title()'s, reused in turn */
	unsigned ntitles;
};

/* ---- units and names (common.c) ---- */

/* A time for text: readable units, or --units. */
char *stats_fmt_time(const struct stats *st, char *buf, size_t n, double ns);
/* A time in a line of prose (titles, the run header, findings): with its
 * unit, also with --units, whose tables put it in the column titles. */
char *stats_fmt_span(const struct stats *st, char *buf, size_t n, double ns);
/* A column title for times: "Total", or "Total [ms]" with --units (valid
 * for the next 15 calls). */
const char *stats_time_title(struct stats *st, const char *title);
/* A text table wider than `width` loses columns, least telling first
 * (`drop`, in that order), until it fits; then table_print() cuts the
 * names at its end.  Width 0 (--full-names): nothing goes. */
struct table;
void stats_fit_columns(struct table *tb, size_t width, const int *drop,
                       size_t ndrop);
/* 100 * part / whole, 0 when whole is 0. */
double stats_pct(double part, double whole);
/* Names for text (template kernels shortened unless --full-names), and
 * for the one-line findings (also cut).  Buffers valid until the next
 * call. */
const char *stats_display_name(const struct stats *st, const char *name);
const char *stats_finding_name(const struct stats *st, const char *name);
const char *stats_exit_text(char *buf, size_t n, unsigned how, int32_t code,
                            uint32_t sig);

extern const char *const stats_table_titles[AGG_NTABLES];
extern const char *const stats_table_keys[AGG_NTABLES];

/* The rows of one operation table in --sort order. */
struct stats_rows {
	struct agg_group **v;
	size_t n;                /* all stats_rows */
	size_t shown;            /* after --top */
	int64_t total;           /* time of all stats_rows */
	uint64_t count;
};
/* The --sort order of groups (qsort_r; arg: the enum sort_key). */
int stats_cmp_rows(const void *x, const void *y, void *arg);
/* Caller frees rows.v. */
struct stats_rows stats_table_rows(const struct stats *st, enum agg_table t);
/* The rows past --top, added up (the "... N more" line). */
struct stats_rest {
	int64_t total;
	uint64_t count;
};
struct stats_rest stats_rows_rest(const struct stats_rows *r);
int stats_has_domains(const struct stats_rows *r);
int stats_has_async(const struct stats_rows *r);
/* Memory operations: bytes per second over their time, and the mean of
 * the single operations' rates. */
double stats_bandwidth(const struct agg_group *g);
double stats_mean_bandwidth(const struct agg_group *g);

/* The range of the per-instance view, for titles. */
const char *stats_per_name(const struct stats *st);
/* The names of the step breakdown's categories, for titles and keys. */
extern const char *const stats_bd_titles[BD_NCATS];
extern const char *const stats_bd_keys[BD_NCATS];
/* GPU busy in a step's window: kernel, memcpy and memset time. */
int64_t stats_step_busy(const struct perinst_instance *in);

/* ---- the operator view (operators.c) ---- */

void stats_text_operators(struct stats *st);
void stats_csv_operators(struct stats *st);
/* A JSON array (json_t *), as void * to keep jansson out of here. */
void *stats_json_operators(struct stats *st);

/* ---- --hist NAME (hist.c) ---- */

/* Text histograms of the durations of the groups named `name`; 1 after
 * a message when there is none. */
int stats_hist(struct stats *st, const char *name);

/* ---- the distributed view (ranks.c) ---- */

void stats_text_ranks(struct stats *st);
void stats_csv_ranks(struct stats *st);
/* A JSON object (json_t *): "ranks" and "steps" arrays. */
void *stats_json_ranks(struct stats *st);

/* ---- output formats ---- */

void stats_text(struct stats *st, unsigned reports);
void stats_csv(struct stats *st, unsigned reports);
void stats_json(struct stats *st, unsigned reports);

#endif
