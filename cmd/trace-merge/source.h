/* SPDX-License-Identifier: MIT */
/*
 * The inputs of trace-merge: opened, scanned (files), copied to a
 * temporary file when a stream must be read twice, and measured for
 * alignment.  Never installed.
 */
#ifndef TK_CMD_MERGE_SOURCE_H
#define TK_CMD_MERGE_SOURCE_H

#include <stdint.h>
#include <sys/stat.h>

#include "tracekit.h"

struct merge_source {
	const char *path;        /* as given; "-" = standard input */
	const char *name;        /* in messages: "(stdin)" for "-" */
	char *label;             /* NULL: the processes keep their own */
	int64_t offset;          /* ns added to its times (--offset, --align) */
	int fd;                  /* -1 while closed */
	int own_fd;              /* opened here (closed between passes) */
	int stream;              /* not seekable: read once, as it comes */
	struct stat st;          /* the file, to notice it replaced */
	struct tk_scan *scan;    /* files: their traces and chunks */
	int failed;              /* reported already; skipped */
	int partial;             /* imported, but not all of it could be read
	                            (reported); merged, exit status 1 */
	char *align_error;       /* the damage that stopped --align, reported
	                            with it: with -k the merge meets it again
	                            and does not say it twice */
};

/* Open `s` and scan it when it is a file.  Another tool's trace (Chrome
 * JSON, an nsys export) is imported into an unlinked file first.  A
 * stream (pipe, terminal)
 * is copied to an unlinked file in `tmpdir` first when `need_file` (it
 * must be read twice).  Errors are reported ("trace-merge: path:
 * message"); returns 0, 1 for an input that cannot be read, 2 for a
 * system error (temporary file). */
int merge_source_open(struct merge_source *s, int need_file,
                      const char *tmpdir);
/* Close a file's descriptor to save it for later passes. */
void merge_source_park(struct merge_source *s);
/* Open a parked file again; 0, or 1 after reporting. */
int merge_source_unpark(struct merge_source *s);
void merge_source_free(struct merge_source *s);

/* The earliest begin of any event: from the chunk headers alone.  0
 * found, -1 none, 1 the input broke before any (said by `why`). */
int merge_source_start(const struct merge_source *s, int64_t *t,
                       const char **why);
/* The earliest begin of a range or mark named `name`; reads as little as
 * the chunks' time ranges allow.  0 found, -1 not found, 1 the input
 * broke before it was found (reported with `why`). */
int merge_source_first_range(const struct merge_source *s, const char *name,
                             int64_t *t, const char **why);

/* Open a reader on trace `i` of a scanned file (the whole file when the
 * scan found none, so that the reader says why), or on a stream. */
int merge_source_reader(const struct merge_source *s, size_t i,
                        struct tk_reader **out);
/* Traces to merge: those of the scan, at least one. */
size_t merge_source_traces(const struct merge_source *s);

#endif
