/* SPDX-License-Identifier: MIT */
/*
 * Aligned text tables for people, and CSV rows (through libcsv) for
 * programs.  A table is built row by row from formatted cells, then
 * printed with each column as wide as its widest cell: numbers right,
 * text left; the last column is never padded, so a long name at the
 * end of a row does not push the others about.
 */
#ifndef TK_CMD_TABLE_H
#define TK_CMD_TABLE_H

#include <stddef.h>
#include <stdio.h>

struct table_col {
	const char *title;
	int left;                /* left-aligned (text) */
};

struct table {
	const struct table_col *cols;
	size_t ncols;
	size_t max_width;        /* cut the last column to fit; 0 = never */
	char **cells;            /* row-major; NULL = empty */
	size_t nrows, capcells;
};

void table_init(struct table *t, const struct table_col *cols, size_t ncols);
/* Start a new row. */
void table_row(struct table *t);
/* Set a cell of the last row (printf-style). */
void table_set(struct table *t, size_t col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Print: a title row, then the rows, each line starting with `indent`.
 * Columns whose cells are all empty are left out.  With max_width, a
 * last text column too long for the line is cut, ending in "...", but
 * never to fewer than 30 columns. */
void table_print(const struct table *t, FILE *f, const char *indent);
void table_free(struct table *t);

/* One CSV record: fields quoted by libcsv where needed, then a newline.
 * NULL fields are empty. */
void csv_record(FILE *f, const char *const *fields, size_t n);

#endif
