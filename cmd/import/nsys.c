/* SPDX-License-Identifier: MIT */
/*
 * An import of an Nsight Systems SQLite export from start to end: open
 * the database read-only (standard input is first copied to a temporary
 * file, as SQLite reads files), list its tables and their columns, write
 * the report's metadata and NVTX category names, then the events of
 * every table it knows merged in time order: each table is read with
 * ORDER BY start (SQLite sorts in bounded memory, spilling to temporary
 * files), and the earliest current row of all of them is written next.
 * Tables it does not know are skipped and counted (-v names them).
 *
 * Times stay as nsys wrote them: integer nanoseconds on the report's
 * session clock, one clock for every table.  The UTC time of the
 * session's start is kept in the metadata.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsys.h"
#include "common/util.h"
#include "support.h"

/* Tables read for definitions or metadata rather than events. */
static const char *const known_tables[] = { "StringIds", "ThreadNames", "PROCESSES",
	"TARGET_INFO_GPU", "TARGET_INFO_CUDA_DEVICE", "TARGET_INFO_CUDA_GPU",
	"TARGET_INFO_SYSTEM_ENV", "TARGET_INFO_SESSION_START_TIME", "META_DATA_EXPORT",
	"TARGET_INFO_NVTX_CUDA_STREAM", "TARGET_INFO_CUDA_NULL_STREAM",
	"EXPORT_META_DATA", "META_DATA_CAPTURE", "sqlite_sequence", NULL };

void
nsys_warn(struct nsys *ns, const char *fmt, ...)
{
	if (ns->warnings++ >= NSYS_MAX_WARNINGS || ns->quiet)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cmd_warn("%s: %s", ns->name, msg);
}

struct nsys_table *
nsys_table(struct nsys *ns, const char *name)
{
	for (size_t i = 0; i < ns->ntables; i++)
		if (strcmp(ns->tables[i].name, name) == 0)
			return &ns->tables[i];
	return NULL;
}

int
nsys_has(const struct nsys_table *t, const char *col)
{
	for (size_t i = 0; t && i < t->ncols; i++)
		if (strcmp(t->cols[i], col) == 0)
			return 1;
	return 0;
}

/* ---- opening ------------------------------------------------------------------ */

/* Copy what `in` has buffered and the rest of its descriptor to a new
 * temporary file; its path in ns->tmp_path. */
static int
spool(struct nsys *ns, struct imp_input *in, const char *tmpdir, char *msg, size_t msgsz)
{
	if (!tmpdir && !(tmpdir = getenv("TMPDIR")))
		tmpdir = "/tmp";
	size_t n = strlen(tmpdir) + 32;
	ns->tmp_path = malloc(n);
	if (!ns->tmp_path)
		cmd_die(EXIT_USAGE, "out of memory");
	snprintf(ns->tmp_path, n, "%s/trace-import-XXXXXX", tmpdir);
	int fd = mkstemp(ns->tmp_path);
	if (fd < 0) {
		snprintf(msg, msgsz, "%s: %s", tmpdir, strerror(errno));
		free(ns->tmp_path);
		ns->tmp_path = NULL;
		return -1;
	}
	char buf[1 << 16];
	long k;
	int rc = 0;
	while (rc == 0 && (k = imp_input_read(in, buf, sizeof(buf))) != 0) {
		if (k < 0 || write(fd, buf, (size_t)k) != k) {
			snprintf(msg, msgsz, "%s", k < 0 ? in->errmsg : strerror(errno));
			rc = -1;
		}
	}
	if (close(fd) != 0 && rc == 0) {
		snprintf(msg, msgsz, "%s: %s", ns->tmp_path, strerror(errno));
		rc = -1;
	}
	return rc;
}

/* "file:PATH?immutable=1": read-only, and no lock or journal files
 * (a report on a read-only disk still opens). */
static char *
file_uri(const char *path)
{
	size_t n = strlen(path);
	char *uri = malloc(n * 3 + 32), *p = uri;
	if (!uri)
		cmd_die(EXIT_USAGE, "out of memory");
	p += sprintf(p, "file:");
	for (const char *s = path; *s; s++)
		p += strchr("%?#", *s) ? sprintf(p, "%%%02X", (unsigned char)*s)
		                       : sprintf(p, "%c", *s);
	strcpy(p, "?immutable=1");
	return uri;
}

/* Every table and its columns.  A database SQLite cannot read fails here. */
static int
catalogue(struct nsys *ns, char *msg, size_t msgsz)
{
	sqlite3_stmt *st = NULL, *cols = NULL;
	size_t cap = 0;
	int rc = sqlite3_prepare_v2(ns->db, "SELECT name FROM sqlite_master WHERE "
	                            "type = 'table' ORDER BY name", -1, &st, NULL);
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		rc = SQLITE_OK;
		const char *name = (const char *)sqlite3_column_text(st, 0);
		if (!name)
			continue;
		struct nsys_table *t = tkp_grow(ns->tables, &cap, ns->ntables + 1, sizeof(*t));
		if (!t)
			cmd_die(EXIT_USAGE, "out of memory");
		ns->tables = t;
		t = &ns->tables[ns->ntables++];
		memset(t, 0, sizeof(*t));
		t->name = cmd_xstrdup(name);
		size_t ccap = 0;
		rc = sqlite3_prepare_v2(ns->db, "SELECT name FROM pragma_table_info(?1)", -1,
		                        &cols, NULL);
		if (rc == SQLITE_OK)
			sqlite3_bind_text(cols, 1, t->name, -1, SQLITE_STATIC);
		while (rc == SQLITE_OK && (rc = sqlite3_step(cols)) == SQLITE_ROW) {
			rc = SQLITE_OK;
			const char *c = (const char *)sqlite3_column_text(cols, 0);
			char **cs = tkp_grow(t->cols, &ccap, t->ncols + 1, sizeof(*cs));
			if (!cs)
				cmd_die(EXIT_USAGE, "out of memory");
			t->cols = cs;
			t->cols[t->ncols++] = cmd_xstrdup(c ? c : "");
		}
		sqlite3_finalize(cols);
		cols = NULL;
		if (rc == SQLITE_DONE)
			rc = SQLITE_OK;
	}
	if (rc != SQLITE_DONE && rc != SQLITE_OK)
		snprintf(msg, msgsz, "not a readable SQLite database (truncated or damaged): %s",
		         sqlite3_errmsg(ns->db));
	sqlite3_finalize(st);
	return rc == SQLITE_DONE || rc == SQLITE_OK ? 0 : -1;
}

/* An nsys export has StringIds or one of the event tables. */
static int
is_nsys(struct nsys *ns)
{
	if (nsys_table(ns, "StringIds"))
		return 1;
	for (size_t i = 0; nsys_specs[i]; i++)
		if (nsys_table(ns, nsys_spec_table(nsys_specs[i])))
			return 1;
	return 0;
}

struct imp_nsys *
imp_nsys_open(struct imp_input *in, const char *path, const char *tmpdir, char *msg,
              size_t msgsz)
{
	struct nsys *ns = calloc(1, sizeof(*ns));
	if (!ns)
		cmd_die(EXIT_USAGE, "out of memory");
	ns->name = in->name;
	struct stat sb;
	int plain = strcmp(path, "-") != 0 && fstat(in->fd, &sb) == 0 && S_ISREG(sb.st_mode);
	if (!plain && spool(ns, in, tmpdir, msg, msgsz) < 0) {
		imp_nsys_close((struct imp_nsys *)ns);
		return NULL;
	}
	char *uri = file_uri(plain ? path : ns->tmp_path);
	int rc = sqlite3_open_v2(uri, &ns->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
	free(uri);
	if (rc != SQLITE_OK) {
		snprintf(msg, msgsz, "cannot open the SQLite database: %s",
		         ns->db ? sqlite3_errmsg(ns->db) : sqlite3_errstr(rc));
	} else if (catalogue(ns, msg, msgsz) == 0) {
		if (is_nsys(ns))
			return (struct imp_nsys *)ns;
		snprintf(msg, msgsz, "a SQLite database without Nsight Systems tables "
		         "(StringIds, CUPTI_ACTIVITY_KIND_*, NVTX_EVENTS)");
	}
	imp_nsys_close((struct imp_nsys *)ns);
	return NULL;
}

void
imp_nsys_close(struct imp_nsys *handle)
{
	struct nsys *ns = (struct nsys *)handle;
	if (!ns)
		return;
	nsys_defs_free(ns);
	sqlite3_close(ns->db);
	for (size_t i = 0; i < ns->ntables; i++) {
		for (size_t j = 0; j < ns->tables[i].ncols; j++)
			free(ns->tables[i].cols[j]);
		free(ns->tables[i].cols);
		free(ns->tables[i].name);
	}
	free(ns->tables);
	if (ns->tmp_path)
		unlink(ns->tmp_path);
	free(ns->tmp_path);
	free(ns);
}

/* ---- metadata ------------------------------------------------------------------ */

static int
meta(struct nsys *ns, const char *key, const char *value)
{
	size_t n;
	const char *ok = cmd_utf8(value, strlen(value), &n);
	char *copy = malloc(n + 1);
	if (!copy)
		cmd_die(EXIT_USAGE, "out of memory");
	memcpy(copy, ok, n);
	copy[n] = 0;
	int rc = tk_writer_meta(ns->w, key, copy);
	free(copy);
	if (rc != TK_OK)
		ns->output_failed = 1;
	return rc == TK_OK ? 0 : -1;
}

/* The name/value rows of nsys's metadata tables, as "nsys.NAME". */
static void
meta_table(struct nsys *ns, const char *table)
{
	struct nsys_table *t = nsys_table(ns, table);
	if (!t || !nsys_has(t, "name") || !nsys_has(t, "value"))
		return;
	char sql[128];
	snprintf(sql, sizeof(sql), "SELECT name, value FROM \"%s\"", table);
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(ns->db, sql, -1, &st, NULL) == SQLITE_OK) {
		t->used = 1;
		while (sqlite3_step(st) == SQLITE_ROW && !ns->output_failed) {
			const char *k = (const char *)sqlite3_column_text(st, 0);
			const char *v = (const char *)sqlite3_column_text(st, 1);
			char key[160];
			snprintf(key, sizeof(key), "nsys.%s", k ? k : "");
			meta(ns, key, v ? v : "");
		}
	}
	sqlite3_finalize(st);
}

static void
write_meta(struct nsys *ns)
{
	char v[128];
	snprintf(v, sizeof(v), "trace-import %s", tk_version());
	meta(ns, "importer", v);
	meta(ns, "import.source", ns->name);
	meta(ns, "import.format", "Nsight Systems SQLite export");
	meta(ns, "clock", "nsys session clock (ns)");
	if (*ns->host)
		meta(ns, "host", ns->host);
	meta_table(ns, "META_DATA_EXPORT");
	meta_table(ns, "EXPORT_META_DATA");    /* its name before nsys 2023 */
	meta_table(ns, "META_DATA_CAPTURE");
	struct nsys_table *t = nsys_table(ns, "TARGET_INFO_SESSION_START_TIME");
	sqlite3_stmt *st = NULL;
	if (t && nsys_has(t, "utcEpochNs") &&
	    sqlite3_prepare_v2(ns->db, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME",
	                       -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER) {
		snprintf(v, sizeof(v), "%" PRId64, (int64_t)sqlite3_column_int64(st, 0));
		meta(ns, "nsys.session_start_utc_ns", v);
	}
	sqlite3_finalize(st);
}

/* Schema versions 2 and 3 are those this import was written for; others
 * are read too (columns by name), with a warning. */
static void
check_version(struct nsys *ns)
{
	static const char *const tables[] = { "META_DATA_EXPORT", "EXPORT_META_DATA" };
	for (int i = 0; i < 2; i++) {
		struct nsys_table *t = nsys_table(ns, tables[i]);
		sqlite3_stmt *st = NULL;
		char sql[128];
		snprintf(sql, sizeof(sql), "SELECT value FROM %s WHERE name = "
		         "'EXPORT_SCHEMA_VERSION' AND value IS NOT NULL", tables[i]);
		if (nsys_has(t, "name") && nsys_has(t, "value") &&
		    sqlite3_prepare_v2(ns->db, sql, -1, &st, NULL) == SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW) {
			const char *v = (const char *)sqlite3_column_text(st, 0);
			if (v && strncmp(v, "2.", 2) != 0 && strncmp(v, "3.", 2) != 0) {
				size_t n;
				nsys_warn(ns, "export schema version %s is not one this importer "
				          "knows (2.x, 3.x): reading the columns it knows by name",
				          cmd_utf8(v, strlen(v), &n));
			}
		}
		sqlite3_finalize(st);
	}
}

/* NVTX category names (event type 33), in their domains. */
static void
write_categories(struct nsys *ns)
{
	struct nsys_table *t = nsys_table(ns, "NVTX_EVENTS");
	static const char *const need[] = { "eventType", "category", "text", "domainId",
		"globalTid" };
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (!nsys_has(t, need[i]))
			return;
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(ns->db, "SELECT category, text, domainId, globalTid FROM "
	                       "NVTX_EVENTS WHERE eventType = 33 AND text IS NOT NULL",
	                       -1, &st, NULL) == SQLITE_OK) {
		while (sqlite3_step(st) == SQLITE_ROW && !ns->output_failed) {
			const char *domain;
			nsys_domain(ns, sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 2),
			            &domain);
			size_t n;
			const char *name = cmd_utf8((const char *)sqlite3_column_text(st, 1),
			                            (size_t)sqlite3_column_bytes(st, 1), &n);
			int64_t c = sqlite3_column_int64(st, 0);
			if (c >= 0 && c <= UINT32_MAX &&
			    tk_writer_category(ns->w, domain, (uint32_t)c, name) != TK_OK)
				ns->output_failed = 1;
		}
	}
	sqlite3_finalize(st);
}

/* NVTX events of types this import does not convert. */
static void
count_nvtx_other(struct nsys *ns)
{
	if (!nsys_has(nsys_table(ns, "NVTX_EVENTS"), "eventType"))
		return;
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(ns->db, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType "
	                       "NOT IN (33, 34, 39, 59, 60, 75, 76)", -1, &st, NULL) ==
	    SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		ns->nvtx_other = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
}

/* ---- the events, merged in time order ------------------------------------------------ */

/* Open a source per event table present; returns how many. */
static size_t
open_sources(struct nsys *ns, struct nsys_source *src, int *status)
{
	size_t n = 0;
	for (size_t i = 0; nsys_specs[i]; i++) {
		struct nsys_table *t = nsys_table(ns, nsys_spec_table(nsys_specs[i]));
		if (!t)
			continue;
		if (nsys_source_open(ns, &src[n], nsys_specs[i], t) < 0) {
			t->used = 1;   /* known, but it could not be read: warned */
			*status = 1;
			continue;
		}
		if (nsys_source_next(ns, &src[n]) < 0)
			*status = 1;
		n++;
	}
	return n;
}

static int
merge(struct nsys *ns, struct nsys_source *src, size_t n)
{
	int status = 0;
	for (;;) {
		struct nsys_source *first = NULL;
		for (size_t i = 0; i < n; i++)
			if (src[i].live && (!first || src[i].start < first->start))
				first = &src[i];
		if (!first)
			break;
		if (nsys_source_emit(ns, first) < 0)
			return 2;
		if (nsys_source_next(ns, first) < 0)
			status = 1;
	}
	return status;
}

static void
summary(struct nsys *ns, const struct nsys_source *src, size_t n)
{
	FILE *f = stderr;
	fprintf(f, "trace-import: %s: what became of the Nsight Systems tables "
	        "(table: rows -> events)\n", ns->name);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  %s: %" PRIu64 " -> %" PRIu64 "\n", src[i].table->name,
		        src[i].rows, src[i].written);
	size_t skipped = 0;
	for (size_t i = 0; i < ns->ntables; i++)
		skipped += !ns->tables[i].used;
	fprintf(f, "  tables not read: %zu", skipped);
	for (size_t i = 0, k = 0; i < ns->ntables; i++)
		if (!ns->tables[i].used)
			fprintf(f, "%s%s", k++ ? ", " : " (", ns->tables[i].name);
	fprintf(f, "%s\n", skipped ? ")" : "");
	if (ns->bad_rows)
		fprintf(f, "  rows without valid times (skipped): %" PRIu64 "\n", ns->bad_rows);
	if (ns->open_ranges)
		fprintf(f, "  NVTX ranges that never ended (zero length): %" PRIu64 "\n",
		        ns->open_ranges);
	if (ns->nvtx_other)
		fprintf(f, "  NVTX events of other types (not converted): %" PRIu64 "\n",
		        ns->nvtx_other);
}

int
imp_nsys_run(struct imp_nsys *handle, struct tk_writer *w, const struct imp_options *o)
{
	struct nsys *ns = (struct nsys *)handle;
	ns->w = w;
	ns->quiet = o->quiet;
	ns->verbose = o->verbose;
	for (size_t i = 0; known_tables[i]; i++) {
		struct nsys_table *t = nsys_table(ns, known_tables[i]);
		if (t)
			t->used = 1;
	}
	nsys_defs_init(ns);
	check_version(ns);
	write_meta(ns);
	write_categories(ns);
	count_nvtx_other(ns);
	struct nsys_source src[16];
	int status = 0;
	size_t n = open_sources(ns, src, &status);
	if (!ns->output_failed) {
		int rc = merge(ns, src, n);
		status = rc > status ? rc : status;
	}
	if (ns->bad_rows)
		status = status ? status : 1;
	if (ns->warnings > NSYS_MAX_WARNINGS && !ns->quiet)
		cmd_warn("%s: %" PRIu64 " more warnings", ns->name,
		         ns->warnings - NSYS_MAX_WARNINGS);
	if (o->verbose)
		summary(ns, src, n);
	for (size_t i = 0; i < n; i++)
		nsys_source_close(&src[i]);
	if (ns->output_failed) {
		/* the reader of the output went away (| head): quietly */
		if (tk_writer_errno(w) == EPIPE)
			return 0;
		cmd_warn("writing the trace: %s", tk_writer_error(w));
		status = 2;
	}
	return status;
}
