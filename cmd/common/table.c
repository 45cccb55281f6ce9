/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <csv.h>

#include "support.h"
#include "table.h"
#include "util.h"

void
table_init(struct table *t, const struct table_col *cols, size_t ncols)
{
	memset(t, 0, sizeof(*t));
	t->cols = cols;
	t->ncols = ncols;
}

void
table_row(struct table *t)
{
	char **cells = tkp_grow(t->cells, &t->capcells, (t->nrows + 1) * t->ncols,
	                        sizeof(*cells));
	if (!cells)
		cmd_die(EXIT_USAGE, "out of memory");
	t->cells = cells;
	memset(t->cells + t->nrows * t->ncols, 0, t->ncols * sizeof(*t->cells));
	t->nrows++;
}

void
table_set(struct table *t, size_t col, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		cmd_die(EXIT_USAGE, "out of memory");
	va_end(ap);
	char **cell = &t->cells[(t->nrows - 1) * t->ncols + col];
	free(*cell);
	*cell = s;
}

/* Display width: bytes, counting a UTF-8 sequence as one column. */
static size_t
width(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

static void
pad(FILE *f, size_t n)
{
	while (n--)
		fputc(' ', f);
}

void
table_print(const struct table *t, FILE *f, const char *indent)
{
	size_t *w = calloc(t->ncols, sizeof(*w));
	int *used = calloc(t->ncols, sizeof(*used));
	if (!w || !used)
		cmd_die(EXIT_USAGE, "out of memory");
	for (size_t c = 0; c < t->ncols; c++) {
		w[c] = width(t->cols[c].title);
		for (size_t r = 0; r < t->nrows; r++) {
			const char *s = t->cells[r * t->ncols + c];
			if (s && *s) {
				used[c] = 1;
				if (width(s) > w[c])
					w[c] = width(s);
			}
		}
	}
	size_t last = 0;
	for (size_t c = 0; c < t->ncols; c++)
		if (used[c])
			last = c;
	/* room left for the last column */
	size_t room = SIZE_MAX;
	if (t->max_width && t->cols[last].left) {
		size_t before = width(indent);
		for (size_t c = 0; c < last; c++)
			if (used[c])
				before += w[c] + 2;
		room = t->max_width > before + 30 ? t->max_width - before : 30;
	}
	for (size_t r = 0; r <= t->nrows; r++) {
		fputs(indent, f);
		int first = 1;
		for (size_t c = 0; c < t->ncols; c++) {
			if (!used[c])
				continue;
			const char *s = r == 0 ? t->cols[c].title
			                       : t->cells[(r - 1) * t->ncols + c];
			if (!s)
				s = "";
			if (!first)
				fputs("  ", f);
			first = 0;
			size_t sw = width(s);
			if (c == last && sw > room) {
				/* cut at a character boundary */
				size_t cols = 0, i = 0;
				for (; s[i]; i++) {
					if (((unsigned char)s[i] & 0xc0) != 0x80 && cols++ == room - 3)
						break;
				}
				fwrite(s, 1, i, f);
				fputs("...", f);
				continue;
			}
			if (t->cols[c].left) {
				fputs(s, f);
				if (c != last)
					pad(f, w[c] - sw);
			} else {
				pad(f, w[c] - sw);
				fputs(s, f);
			}
		}
		fputc('\n', f);
	}
	free(w);
	free(used);
}

void
table_free(struct table *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

void
csv_record(FILE *f, const char *const *fields, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *s = fields[i] ? fields[i] : "";
		size_t len = strlen(s);
		if (i)
			fputc(',', f);
		/* quote only what needs it, as trace-dump does */
		if (len && strcspn(s, ",\"\r\n") >= len && s[0] != ' ')
			fwrite(s, 1, len, f);
		else if (len)
			csv_fwrite(f, s, len);
	}
	fputc('\n', f);
}
