/* SPDX-License-Identifier: MIT */
/*
 * One table's file.  Parquet through cmd/common/parquet.h; CSV with a
 * header line, strings always quoted (libcsv), a null as an empty
 * unquoted field, so that an empty string ("") and a null differ.
 */
#include <csv.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "common/util.h"

int
sink_open(struct sink *s, const struct xt_def *d, const char *dir,
          int format, const struct pq_options *o)
{
	memset(s, 0, sizeof(*s));
	s->def = d;
	s->format = format;
	size_t n = strlen(dir) + strlen(d->name) + 16;
	s->path = cmd_xrealloc(NULL, n);
	snprintf(s->path, n, "%s/%s.%s", dir, d->name,
	         format == FMT_CSV ? "csv" : "parquet");
	if (format == FMT_PARQUET) {
		s->pq = pq_open(s->path, d->cols, d->ncols, o);
		if (!s->pq) {
			cmd_warn("%s: %s", s->path, strerror(errno));
			return -1;
		}
		return 0;
	}
	s->csv = fopen(s->path, "w");
	if (!s->csv) {
		cmd_warn("%s: %s", s->path, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < d->ncols; i++)
		fprintf(s->csv, "%s%s", i ? "," : "", d->cols[i].name);
	fputc('\n', s->csv);
	return 0;
}

static void
csv_sep(struct sink *s)
{
	if (s->col++)
		putc(',', s->csv);
}

void
sink_i64(struct sink *s, int64_t v)
{
	if (s->pq) {
		pq_i64(s->pq, v);
		return;
	}
	csv_sep(s);
	fprintf(s->csv, "%" PRId64, v);
}

void
sink_u64(struct sink *s, uint64_t v)
{
	sink_i64(s, (int64_t)v);
}

void
sink_f64(struct sink *s, double v)
{
	if (s->pq) {
		pq_f64(s->pq, v);
		return;
	}
	csv_sep(s);
	fprintf(s->csv, "%.17g", v);
}

void
sink_str(struct sink *s, const char *v)
{
	if (!v)
		v = "";
	/* readers refuse a STRING column that is not UTF-8: recorded names
	 * are bytes, so invalid sequences become U+FFFD */
	size_t n;
	v = cmd_utf8(v, strlen(v), &n);
	sink_text(s, v, n);
}

void
sink_text(struct sink *s, const char *v, size_t n)
{
	if (s->pq) {
		pq_str(s->pq, v, n);
		return;
	}
	csv_sep(s);
	csv_fwrite(s->csv, v, n);
}

void
sink_null(struct sink *s)
{
	if (s->pq)
		pq_null(s->pq);
	else
		csv_sep(s);
}

/* Keep what went wrong, once: the caller says it (sink_error), in one
 * line for the whole run, not one per table. */
static void
fail(struct sink *s, const char *what)
{
	if (s->failed)
		return;
	s->failed = 1;
	snprintf(s->err, sizeof(s->err), "%s", what);
}

/* The Parquet writer's message without the path it begins with. */
static const char *
pq_what(const struct sink *s)
{
	const char *e = pq_error(s->pq);
	size_t n = strlen(s->path);
	return strncmp(e, s->path, n) == 0 && strncmp(e + n, ": ", 2) == 0 ? e + n + 2 : e;
}

int
sink_end_row(struct sink *s)
{
	if (s->failed)
		return -1;
	if (s->pq) {
		if (pq_end_row(s->pq) < 0) {
			fail(s, pq_what(s));
			return -1;
		}
		return 0;
	}
	putc('\n', s->csv);
	s->col = 0;
	if (ferror(s->csv)) {
		fail(s, strerror(errno ? errno : EIO));
		return -1;
	}
	return 0;
}

int
sink_close(struct sink *s)
{
	if (s->pq) {
		if (!s->failed && pq_close(s->pq) < 0)
			fail(s, pq_what(s));
	} else if (s->csv) {
		FILE *f = s->csv;
		s->csv = NULL;
		if (fclose(f) != 0)
			fail(s, strerror(errno));
	}
	return s->failed ? -1 : 0;
}

const char *
sink_error(const struct sink *s)
{
	return s->failed ? s->err : NULL;
}

void
sink_free(struct sink *s)
{
	pq_free(s->pq);
	if (s->csv)
		fclose(s->csv);
	free(s->path);
	memset(s, 0, sizeof(*s));
}
