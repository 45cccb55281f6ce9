/* SPDX-License-Identifier: MIT */
/*
 * trace-export: write traces as tables for DuckDB, Spark, Trino, polars
 * and the like (tracekit-tables(5)), Parquet or CSV, one folder per run
 * in Hive's layout: DIR/run=ID/kernels.parquet, ...
 *
 * Each TRACE is a run.  Its id is given (--run-id) or derived from the
 * trace file's bytes, so exporting the same trace again finds its
 * folder and leaves it alone.  A run is written into a hidden folder,
 * DIR/.tmp/run-PID-N, and renamed into place when complete: a reader
 * of DIR globbing its folders (engines' globs match hidden names too) never
 * sees half a run, and adding a run never touches another.
 *
 * Two passes over each trace: trace-stats' aggregation for the summaries
 * and the steps (summary.c), then the rows, streamed, every table's
 * writer holding at most one row group.  Standard input and pipes are
 * spooled to a file in the hidden folder for that, and another tool's
 * trace (PyTorch/Chrome JSON, an Nsight Systems export) is imported
 * there once.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export.h"
#include "common/util.h"
#include "import/autoread.h"
#include "support.h"

struct options {
	const char *dir;
	int format;
	const char *run_id;
	struct pq_options pq;
};

static void
usage(void)
{
	printf("Usage: %s [OPTIONS] [TRACE...]\n"
	       "Write traces (stdin when no TRACE or -) as tables for DuckDB, Spark,\n"
	       "Trino or polars: DIR/run=ID/TABLE.parquet, one folder per trace (see\n"
	       "tracekit-tables(5) for the tables and their columns).  A TRACE is a\n"
	       "tracekit trace, or PyTorch/Chrome JSON or an Nsight Systems SQLite\n"
	       "export, imported as trace-import does.\n"
	       "\n"
	       "  -o, --output DIR     the folder of runs (default: the current one)\n"
	       "  -f, --format FORMAT  parquet (default) or csv\n"
	       "      --run-id ID      the run's id (one TRACE only; default: derived\n"
	       "                       from the trace's content)\n"
	       "      --row-group ROWS rows per Parquet row group (default 131072)\n"
	       "  -h, --help           show this help\n"
	       "  -V, --version        show the version\n"
	       "\n"
	       "Exit status: 0 success, 1 a trace could not be read completely (what\n"
	       "could be read is exported), 2 usage or output error.\n",
	       cmd_name());
}

static void
parse_options(struct options *o, int argc, char **argv)
{
	enum { OPT_RUN_ID = 256, OPT_ROW_GROUP };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "run-id", required_argument, NULL, OPT_RUN_ID },
		{ "row-group", required_argument, NULL, OPT_ROW_GROUP },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	uint64_t v;
	while ((c = getopt_long(argc, argv, ":o:f:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': o->dir = optarg; break;
		case 'f':
			if (!strcmp(optarg, "parquet"))
				o->format = FMT_PARQUET;
			else if (!strcmp(optarg, "csv"))
				o->format = FMT_CSV;
			else
				cmd_usage_error("invalid --format '%s' (parquet or csv)", optarg);
			break;
		case OPT_RUN_ID: {
			size_t n;
			/* shown as text: bytes that are not UTF-8 as U+FFFD */
			const char *shown = cmd_utf8(optarg, strlen(optarg), &n);
			if (!*optarg || *optarg == '.' || strpbrk(optarg, "/=\n") || shown != optarg)
				cmd_usage_error("invalid --run-id '%.*s' (a folder name in UTF-8: "
				                "no '/', '=', newline or leading '.')", (int)n, shown);
			o->run_id = optarg;
			break;
		}
		case OPT_ROW_GROUP:
			if (cmd_parse_uint(optarg, &v) < 0 || v == 0 || v > (1u << 30))
				cmd_usage_error("invalid --row-group '%s' (rows, 1 to %u)", optarg,
				                1u << 30);
			o->pq.group_rows = v;
			if (o->pq.page_rows > v)
				o->pq.page_rows = v;
			break;
		case 'h': usage(); exit(cmd_finish(0));
		case 'V': cmd_version();
		default: cmd_bad_option(c, argv);
		}
	}
}

/* The run id derived from a trace: 16 hex digits of a hash of the
 * file's bytes, so that the same trace gets the same id wherever it is
 * exported, and another trace (almost surely) another. */
static int
content_id(const char *path, char id[17])
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	static const size_t block = 1 << 16;
	uint8_t *buf = cmd_xrealloc(NULL, block);
	uint64_t h = 0x7472616365ull;
	ssize_t n;
	while ((n = read(fd, buf, block)) > 0)
		h = tkp_hash(buf, (size_t)n, h);
	free(buf);
	close(fd);
	if (n < 0)
		return -1;
	snprintf(id, 17, "%016" PRIx64, h);
	return 0;
}

/* Copy `in` (standard input, a pipe) to `path`, so that it can be read
 * twice.  `name` for messages. */
static int
spool(int in, const char *name, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0) {
		cmd_warn("%s: %s", path, strerror(errno));
		return -1;
	}
	char buf[1 << 16];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));
			if (w < 0) {
				cmd_warn("%s: write error: %s", path, strerror(errno));
				close(fd);
				return -1;
			}
			off += w;
		}
	if (n < 0) {
		cmd_warn("%s: %s", name, strerror(errno));
		close(fd);
		return -1;
	}
	if (close(fd) != 0) {
		cmd_warn("%s: write error: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* A reader of `path`, or NULL after a message that names `name`. */
static struct tk_reader *
open_trace(const char *path, const char *name)
{
	struct tk_reader *r = tk_reader_new();
	if (!r)
		cmd_die(EXIT_USAGE, "out of memory");
	if (tk_reader_open_path(r, path) != TK_OK) {
		cmd_reader_error(name, r);
		tk_reader_free(r);
		return NULL;
	}
	return r;
}

/* The rows of the trace.  0, or 1 when it could not be read whole
 * (reported). */
static int
export_rows(struct ex *x, const char *path, const char *name)
{
	struct tk_reader *r = open_trace(path, name);
	if (!r)
		return 1;
	x->r = r;
	struct tk_record rec;
	int rc;
	while ((rc = tk_reader_next(r, &rec)) == TK_OK) {
		switch (rec.type) {
		case TK_REC_EVENT: ex_event(x, rec.u.event); break;
		case TK_REC_SCOPE:
			ex_scope(x);
			ex_rows_scope(x);
			break;
		case TK_REC_TRACK: ex_track(x, rec.u.track); break;
		case TK_REC_DEVICE: ex_device(x, rec.u.device); break;
		default: break;
		}
	}
	ex_run_row(x, cmd_display_path(name));
	int status = 0;
	if (rc != TK_EOF) {
		cmd_reader_error(name, r);
		status = 1;
	}
	tk_reader_free(r);
	x->r = NULL;
	return status;
}

/* Does the trace at `path` hold an event? */
static int
has_events(const char *path)
{
	struct tk_reader *r = tk_reader_new();
	if (!r || tk_reader_open_path(r, path) != TK_OK) {
		tk_reader_free(r);
		return 0;
	}
	struct tk_record rec;
	int found = 0;
	while (!found && tk_reader_next(r, &rec) == TK_OK)
		found = rec.type == TK_REC_EVENT;
	tk_reader_free(r);
	return found;
}

/* Make *src (a regular file) a tracekit trace that can be read again
 * and again: left as it is when it is one, else imported into
 * `import_path` and *src pointed there (*partial set when the import
 * could not read everything: said, and what it could is there).  0, or
 * -1 after a message. */
static int
as_tracekit(const char **src, const char *path, const char *tmp,
            const char *import_path, int *partial)
{
	struct autoread a;
	if (autoread_open(&a, *src, tmp) != 0)
		return -1;
	int rc = 0;
	if (a.imported) {
		*partial = a.partial;
		if (spool(a.fd, cmd_display_path(path), import_path) < 0)
			rc = -1;
		else
			*src = import_path;
		/* an import that failed before its first event (JSON that is
		 * no trace): said, and no run of nothing */
		if (rc == 0 && a.partial && !has_events(import_path))
			rc = -1;
	} else {
		/* a damaged header: the reader's own words */
		struct tk_reader *r = open_trace(*src, path);
		rc = r ? 0 : -1;
		tk_reader_free(r);
	}
	autoread_close(&a);
	return rc;
}

/* Remove DIR/.tmp, the parent of run folder `tmp`, once empty (another
 * trace-export may still be writing there: then it stays). */
static void
remove_aside(const char *tmp)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s", tmp);
	char *slash = strrchr(p, '/');
	if (slash) {
		*slash = 0;
		rmdir(p);
	}
}

/* Remove a hidden run folder and what is in it (only files we wrote). */
static void
remove_tmp(const char *tmp)
{
	char p[4096];
	for (int t = 0; t < XT_NTABLES; t++)
		for (int f = 0; f < 2; f++) {
			snprintf(p, sizeof(p), "%s/%s.%s", tmp, xt_def(t)->name,
			         f ? "csv" : "parquet");
			unlink(p);
		}
	snprintf(p, sizeof(p), "%s/stdin.tkt", tmp);
	unlink(p);
	snprintf(p, sizeof(p), "%s/import.tkt", tmp);
	unlink(p);
	rmdir(tmp);
	remove_aside(tmp);
}

/* Write the tables of one run into tmp; 0, 1 (input incomplete), or -1
 * (output failed, reported). */
static int
write_run(const struct options *o, const char *path, const char *name,
          const char *tmp, const char *run_id)
{
	struct ex x;
	memset(&x, 0, sizeof(x));
	x.run_id = run_id;
	x.run_id_len = strlen(run_id);
	int out = 0;
	for (int t = 0; t < XT_NTABLES; t++)
		if (sink_open(&x.t[t], xt_def(t), tmp, o->format, &o->pq) < 0)
			out = -1;
	int status = 0;
	struct xsteps steps;
	memset(&steps, 0, sizeof(steps));
	if (out == 0) {
		/* damage is told once, by the last pass, in its words */
		FILE *quiet = fopen("/dev/null", "w");
		cmd_warn_to(quiet);
		ex_summaries(&x, path);
		char *step_name = ex_find_steps(path, &steps);
		cmd_warn_to(NULL);
		if (quiet)
			fclose(quiet);
		x.steps = &steps;
		status |= export_rows(&x, path, name);
		ex_steps_rows(&x, step_name);
		free(step_name);
	}
	int told = 0;
	for (int t = 0; t < XT_NTABLES; t++) {
		if (x.t[t].def && sink_close(&x.t[t]) < 0) {
			out = -1;
			/* one line for the run, naming the file where it was
			 * going, as the other commands' "write error:" */
			const char *table = strrchr(x.t[t].path, '/');
			if (!told++)
				cmd_warn("%s/run=%s%s: write error: %s", o->dir, run_id,
				         table ? table : "", sink_error(&x.t[t]));
		}
		sink_free(&x.t[t]);
	}
	xsteps_free(&steps);
	ex_rows_free(&x);
	ex_defs_free(&x);
	return out < 0 ? -1 : status;
}

/* Export one trace as a run: 0, 1 (input incomplete) or 2 (output). */
static int
export_trace(const struct options *o, const char *path, unsigned n)
{
	char tmp[4096], final[4200], spool_path[4200], import_path[4200], id[17],
	     aside[4096];
	/* two levels down, where a glob of the runs does not reach */
	snprintf(aside, sizeof(aside), "%s/.tmp", o->dir);
	snprintf(tmp, sizeof(tmp), "%s/.tmp/run-%ld-%u", o->dir, (long)getpid(), n);
	if ((mkdir(aside, 0777) != 0 && errno != EEXIST) || mkdir(tmp, 0777) != 0) {
		cmd_warn("%s: %s", tmp, strerror(errno));
		return EXIT_USAGE;
	}
	snprintf(import_path, sizeof(import_path), "%s/import.tkt", tmp);
	/* what cannot be read twice (stdin, a pipe) is copied first */
	const char *src = path;
	struct stat st;
	int in = !strcmp(path, "-") ? 0 : -1;
	if (in < 0 && stat(path, &st) == 0 && !S_ISREG(st.st_mode) &&
	    !S_ISDIR(st.st_mode) && (in = open(path, O_RDONLY)) < 0) {
		cmd_warn("%s: %s", path, strerror(errno));
		remove_tmp(tmp);
		return EXIT_BADINPUT;
	}
	if (in >= 0) {
		snprintf(spool_path, sizeof(spool_path), "%s/stdin.tkt", tmp);
		int rc = spool(in, cmd_display_path(path), spool_path);
		if (in > 0)
			close(in);
		if (rc < 0) {
			unlink(spool_path);
			remove_tmp(tmp);
			return EXIT_USAGE;
		}
		src = spool_path;
	}
	/* the run's id comes from the bytes given, JSON or .tkt */
	const char *run_id = o->run_id;
	int ok = 1;
	if (!run_id && content_id(src, id) < 0) {
		cmd_warn("%s: %s", cmd_display_path(path), strerror(errno));
		ok = 0;
	}
	/* another tool's trace (PyTorch/Chrome JSON, an Nsight Systems
	 * export) is imported once, as every reading command does, into a
	 * file of the hidden folder that the passes read; not a trace at
	 * all: no run */
	int partial = 0;
	const char *spooled = src != path ? src : NULL;
	if (ok)
		ok = as_tracekit(&src, path, tmp, import_path, &partial) == 0;
	if (spooled && (!ok || src != spooled))
		unlink(spooled);   /* imported, or no run */
	if (!ok) {
		unlink(import_path);
		remove_tmp(tmp);
		return EXIT_BADINPUT;
	}
	if (!run_id)
		run_id = id;
	snprintf(final, sizeof(final), "%s/run=%s", o->dir, run_id);
	if (stat(final, &st) == 0) {
		cmd_warn("%s: run %s is in %s already; left as it is",
		         cmd_display_path(path), run_id, o->dir);
		remove_tmp(tmp);
		return 0;
	}
	int rc = write_run(o, src, path, tmp, run_id);
	if (src != path)
		unlink(src);
	if (rc >= 0 && partial)
		rc = EXIT_BADINPUT;
	if (rc < 0) {
		remove_tmp(tmp);
		return EXIT_USAGE;
	}
	if (rename(tmp, final) != 0) {
		cmd_warn("%s: %s", final, strerror(errno));
		remove_tmp(tmp);
		return EXIT_USAGE;
	}
	remove_aside(tmp);
	return rc;
}

int
main(int argc, char **argv)
{
	cmd_init("trace-export");
	struct options o = { ".", FMT_PARQUET, NULL, PQ_OPTIONS_INIT };
	parse_options(&o, argc, argv);
	char *stdin_only[] = { "-", NULL };
	char **files = optind < argc ? argv + optind : stdin_only;
	int nfiles = optind < argc ? argc - optind : 1;
	if (o.run_id && nfiles > 1)
		cmd_usage_error("--run-id names one run: give one TRACE");
	struct stat st;
	if (stat(o.dir, &st) != 0 && mkdir(o.dir, 0777) != 0)
		cmd_die(EXIT_USAGE, "%s: %s", o.dir, strerror(errno));
	/* said of the folder given, not of the hidden one made in it */
	if (stat(o.dir, &st) == 0 && !S_ISDIR(st.st_mode))
		cmd_die(EXIT_USAGE, "%s: %s", o.dir, strerror(ENOTDIR));
	int status = 0;
	for (int i = 0; i < nfiles; i++) {
		int rc = export_trace(&o, files[i], (unsigned)i);
		if (rc == EXIT_USAGE)
			return cmd_finish(EXIT_USAGE);
		status |= rc;
	}
	return cmd_finish(status);
}
