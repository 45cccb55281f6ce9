/* SPDX-License-Identifier: MIT */
/*
 * Nsight Systems SQLite exports (nsys export --type sqlite), read with
 * libsqlite3.  The parts, one job per file:
 *   nsys.c         open and check the database, then the import from
 *                  start to end: its event tables merged in time order,
 *                  its metadata, -v's summary
 *   nsys_tables.c  the event tables nsys writes (kernels, copies,
 *                  memsets, allocations, CUDA API calls, NVTX): the
 *                  SELECT each gets, built from the columns the
 *                  database has, and each row as a tracekit event
 *   nsys_defs.c    what events refer to: StringIds, processes, threads,
 *                  CUDA devices and streams, NVTX domains, as writer
 *                  definitions made on first use
 *
 * Columns are found by name, never by position: nsys releases add,
 * rename and drop columns (schema versions 2.x and 3.x differ), so every
 * SELECT is built from what PRAGMA table_info says is there, with NULL
 * for what is not.  A database that cannot be read gets one message and
 * exit status 1, never a crash.
 */
#ifndef TK_CMD_IMPORT_NSYS_H
#define TK_CMD_IMPORT_NSYS_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "import.h"

/* ---- entry points (trace-import.c) ---------------------------------- */

struct imp_nsys;
/* Open the database whose first bytes `in` has read (in->sqlite): the
 * file at `path`, or what standard input holds, copied to a temporary
 * file in tmpdir (NULL: $TMPDIR or /tmp).  Checks that it is a SQLite
 * database with nsys's tables.  NULL with a message in msg. */
struct imp_nsys *imp_nsys_open(struct imp_input *in, const char *path,
                               const char *tmpdir, char *msg, size_t msgsz);
/* Import into `w`.  Returns 0, 1 if some rows or tables could not be
 * read (warned; the rest is written), 2 if the output failed. */
int imp_nsys_run(struct imp_nsys *ns, struct tk_writer *w, const struct imp_options *o);
void imp_nsys_close(struct imp_nsys *ns);

/* ---- shared by nsys*.c ----------------------------------------------- */

#define NSYS_MAX_WARNINGS 10

/* A table's columns, from PRAGMA table_info. */
struct nsys_table {
	char *name;
	char **cols;
	size_t ncols;
	int used;                  /* read by the import */
};

struct nsys_map;               /* nsys_defs.c: keys to writer ids */

struct nsys {
	sqlite3 *db;
	const char *name;          /* for messages */
	char *tmp_path;            /* the copy of standard input, unlinked at close */
	struct tk_writer *w;
	int quiet, verbose;
	struct nsys_table *tables;
	size_t ntables;

	/* nsys_defs.c */
	struct nsys_map *map;
	sqlite3_stmt *string_stmt; /* SELECT value FROM StringIds WHERE id = ? */
	char *host;                /* the target's host name, "" if unknown */

	/* what happened, for -v and the exit status */
	uint64_t warnings;
	uint64_t bad_rows;         /* rows with no usable time: skipped */
	uint64_t open_ranges;      /* NVTX ranges with no end: zero length */
	uint64_t nvtx_other;       /* NVTX event types not converted */
	int output_failed;
};

/* nsys.c: a warning about the database (counted; the first few are
 * printed). */
void nsys_warn(struct nsys *ns, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The table, or NULL if the database lacks it. */
struct nsys_table *nsys_table(struct nsys *ns, const char *name);
/* Whether table t has column col. */
int nsys_has(const struct nsys_table *t, const char *col);

/* ---- nsys_tables.c --------------------------------------------------- */

/* One event table being read in time order. */
struct nsys_source {
	const struct nsys_spec *spec;
	struct nsys_table *table;
	sqlite3_stmt *stmt;
	int live;                  /* a row is current */
	int64_t start;             /* the current row's start */
	uint64_t rows, written;
};

/* The event tables the import knows, in a NULL-terminated list. */
extern const struct nsys_spec *const nsys_specs[];
/* The table a spec reads. */
const char *nsys_spec_table(const struct nsys_spec *spec);
/* Prepare src's SELECT for table t.  0, or -1 (warned: the table is
 * skipped). */
int nsys_source_open(struct nsys *ns, struct nsys_source *src,
                     const struct nsys_spec *spec, struct nsys_table *t);
/* Step to the next row with a start time.  1, 0 at the end, -1 on an
 * error (warned). */
int nsys_source_next(struct nsys *ns, struct nsys_source *src);
/* Write the current row's event.  0, or -1 if the output failed. */
int nsys_source_emit(struct nsys *ns, struct nsys_source *src);
void nsys_source_close(struct nsys_source *src);

/* ---- nsys_defs.c ----------------------------------------------------- */

int nsys_defs_init(struct nsys *ns);
void nsys_defs_free(struct nsys *ns);
/* The writer's string id of StringIds row `id` (a NULL value: 0). */
uint32_t nsys_string(struct nsys *ns, sqlite3_stmt *st, int col);
/* The same for a CUDA runtime call's name, without its "_v7000". */
uint32_t nsys_runtime_name(struct nsys *ns, sqlite3_stmt *st, int col);
/* Text of column col as valid UTF-8 ("" for NULL), valid until the
 * next call. */
const char *nsys_text(sqlite3_stmt *st, int col);
/* Writer track ids (0 if the output failed). */
uint32_t nsys_thread(struct nsys *ns, int64_t global_tid);
uint32_t nsys_process(struct nsys *ns, int64_t global_pid);
uint32_t nsys_stream(struct nsys *ns, int64_t global_pid, uint32_t device,
                     uint64_t context, uint64_t stream);
/* The name of NVTX domain `domain` of the process of global_tid ("" for
 * the default domain), and the writer's id of that string. */
uint32_t nsys_domain(struct nsys *ns, int64_t global_tid, int64_t domain,
                     const char **name);

#endif
