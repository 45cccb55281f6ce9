/* SPDX-License-Identifier: MIT */
/*
 * A streaming writer of Apache Parquet files: the subset a flat table of
 * numbers and strings needs, written from the format's specification
 * (apache/parquet-format: README, Encodings.md, parquet.thrift).
 *
 *  - flat schema; each column REQUIRED or OPTIONAL (nulls), of INT64,
 *    INT32, DOUBLE or BYTE_ARRAY annotated STRING (UTF-8);
 *  - data pages v1: definition levels in the RLE/bit-packed hybrid
 *    (4-byte length first), values PLAIN, or for strings RLE_DICTIONARY
 *    after a PLAIN dictionary page when a row group's strings repeat;
 *  - pages compressed with GZIP (libdeflate) or not at all;
 *  - the footer (FileMetaData) in Thrift's compact protocol; no column
 *    statistics, no page index.
 *
 * Rows are given a value at a time, in column order, and held in memory
 * only until their row group is full (options.group_rows rows or about
 * options.group_bytes bytes), which is then written: memory stays
 * bounded whatever the number of rows.
 */
#ifndef TK_CMD_PARQUET_H
#define TK_CMD_PARQUET_H

#include <stddef.h>
#include <stdint.h>

#include "thrift.h"

enum pq_type { PQ_INT64 = 1, PQ_INT32, PQ_DOUBLE, PQ_STRING };

struct pq_column {
	const char *name;
	unsigned type;          /* enum pq_type */
	int optional;           /* 1: may hold nulls */
};

struct pq_options {
	size_t group_rows;      /* rows per row group at most */
	size_t group_bytes;     /* about this many bytes of values at most */
	size_t page_rows;       /* rows per data page at most */
	int level;              /* GZIP level 1-12; 0: pages uncompressed */
};
#define PQ_OPTIONS_INIT { 131072, 64u << 20, 16384, 6 }

struct pq_writer;

/* A new file at `path` (created or truncated) with these columns
 * (borrowed until pq_free).  NULL with errno set on failure. */
struct pq_writer *pq_open(const char *path, const struct pq_column *cols,
                          size_t ncols, const struct pq_options *o);

/* The value of the next column of the current row. */
void pq_i64(struct pq_writer *w, int64_t v);
void pq_f64(struct pq_writer *w, double v);
void pq_str(struct pq_writer *w, const char *s, size_t n);
void pq_null(struct pq_writer *w);   /* an optional column only */
/* The row is complete (every column given).  0, or -1 on failure
 * (write error, out of memory, a row of the wrong shape). */
int pq_end_row(struct pq_writer *w);

/* Writes what is left and the footer, closes the file.  0 or -1. */
int pq_close(struct pq_writer *w);
/* What went wrong, once a call failed. */
const char *pq_error(const struct pq_writer *w);
uint64_t pq_rows(const struct pq_writer *w);
void pq_free(struct pq_writer *w);

/* The pieces, for the unit tests. */
/* n values of bw bits (0 to 32) in the RLE/bit-packed hybrid: runs of
 * 8 or more equal values as RLE runs, the rest bit-packed in groups of
 * 8 (the last group padded with zeros). */
void pq_rle_hybrid(struct bytebuf *b, const uint32_t *v, size_t n, int bw);
/* Bits needed for values up to max: 0 for 0. */
int pq_bit_width(uint32_t max);

#endif
