/* SPDX-License-Identifier: MIT */
/*
 * trace-export: traces as tables (tracekit-tables(5)) in Parquet or CSV,
 * one folder per run.  Shared by the files of the command:
 *
 *   schema.c   the tables and their columns
 *   sink.c     one table's file, Parquet or CSV, row by row
 *   defs.c     rows of the definitions: processes, threads, devices,
 *              streams, strings; the run's own row
 *   rows.c     rows of the events: kernels, memops, api, ranges,
 *              memory, counters
 *   summary.c  the steps and the per-name summaries, by trace-stats'
 *              aggregation (cmd/analysis)
 */
#ifndef TK_EXPORT_H
#define TK_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "tracekit.h"
#include "common/parquet.h"

enum xt {
	XT_RUNS, XT_PROCESSES, XT_THREADS, XT_DEVICES, XT_STREAMS, XT_STRINGS,
	XT_KERNELS, XT_MEMOPS, XT_API, XT_RANGES, XT_MEMORY, XT_COUNTERS,
	XT_STEPS, XT_SUMMARIES, XT_NTABLES
};

struct xt_def {
	const char *name;
	const struct pq_column *cols;
	size_t ncols;
};

/* The table `t`'s name and columns. */
const struct xt_def *xt_def(enum xt t);

enum { FMT_PARQUET = 1, FMT_CSV = 2 };

/* One table's output file. */
struct sink {
	const struct xt_def *def;
	int format;
	struct pq_writer *pq;
	FILE *csv;
	size_t col;              /* CSV: the column the next value goes to */
	char *path;
	int failed;
	char err[256];           /* what failed first, when failed */
};

/* Opens DIR/NAME.parquet (or .csv).  0, or -1 after a message. */
int sink_open(struct sink *s, const struct xt_def *d, const char *dir,
              int format, const struct pq_options *o);
void sink_i64(struct sink *s, int64_t v);
/* Unsigned values: their bits, as INT64 (addresses past 2^63 negative). */
void sink_u64(struct sink *s, uint64_t v);
void sink_f64(struct sink *s, double v);
void sink_str(struct sink *s, const char *v);
/* Text known to be UTF-8 already (the run id, enumeration names). */
void sink_text(struct sink *s, const char *v, size_t n);
void sink_null(struct sink *s);
/* 0, or -1 when the file could not be written (sink_error says why;
 * no message: the caller gives one for the run). */
int sink_end_row(struct sink *s);
int sink_close(struct sink *s);
/* NULL, or what made writing fail. */
const char *sink_error(const struct sink *s);
void sink_free(struct sink *s);

/* The steps: windows by begin time, and the time of the kernels,
 * copies and sets, and API calls that begin in each. */
struct xsteps {
	int64_t *begin, *end;
	int64_t *kernel, *copy, *api;
	size_t n;
};

/* One run being exported. */
struct ex {
	const char *run_id;      /* UTF-8 (checked once) */
	size_t run_id_len;
	struct sink t[XT_NTABLES];
	const struct tk_reader *r;
	uint8_t *seen_string;    /* strings of this scope with a row */
	size_t nseen;
	struct depth_stack *stacks; /* per track id: ends of open ranges */
	size_t nstacks;
	struct xsteps *steps;
	/* for the runs table */
	uint64_t events;
	int64_t t_min, t_max;
	char *host, *command, *gpu;
};

/* The run id, first column of every row. */
static inline void
sink_run(struct sink *s, const struct ex *x)
{
	sink_text(s, x->run_id, x->run_id_len);
}

/* defs.c */
void ex_track(struct ex *x, const struct tk_track *t);
void ex_device(struct ex *x, const struct tk_device *d);
void ex_scope(struct ex *x);
void ex_string(struct ex *x, uint32_t id, const char *s);
void ex_run_row(struct ex *x, const char *source);
void ex_defs_free(struct ex *x);

/* rows.c */
void ex_event(struct ex *x, const struct tk_event *e);
/* A new trace scope: forget the open ranges of the last. */
void ex_rows_scope(struct ex *x);
void ex_rows_free(struct ex *x);

/* summary.c: the summaries of `path` as trace-stats makes them,
 * written to x's tables.  0, or 1 when the input could not be read
 * whole (reported). */
int ex_summaries(struct ex *x, const char *path);
/* The steps of `path` (to free with xsteps_free): their name, malloc'd,
 * or NULL when there are none. */
char *ex_find_steps(const char *path, struct xsteps *st);
/* The steps table, once the rows have added up their times. */
void ex_steps_rows(struct ex *x, const char *name);
void xsteps_free(struct xsteps *s);
/* The step (1, 2, ...) whose window holds ts, or 0. */
uint32_t xsteps_at(const struct xsteps *s, int64_t ts);

#endif
