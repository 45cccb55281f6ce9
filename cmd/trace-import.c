/* SPDX-License-Identifier: MIT */
/*
 * trace-import: convert a Chrome Trace Event JSON file (the PyTorch
 * profiler's, or any other tool's) into a .tkt trace.
 *
 * One pass over the JSON, one event in memory at a time: the splitter
 * (import_scan.c) finds each event's bytes, jansson parses them
 * (import_parse.c), the phase and category decide what tracekit event
 * it becomes (import_event.c, import_kineto.c), and the events are put
 * in time order in bounded memory (import_sort.c) before they are
 * written.  -v tells what became of every kind of input event.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "import.h"
#include "util.h"

#define DEFAULT_MEMORY (8u << 20)

struct options {
	const char *output;      /* NULL or "-" = stdout */
	int verbose;
	size_t memory;
	const char *tmpdir;
};

static void
usage(void)
{
	printf("Usage: %s [OPTIONS] [FILE]\n"
	       "Convert a Chrome Trace Event JSON file (PyTorch profiler, Perfetto,\n"
	       "chrome://tracing, trace-to-chrome) to a tracekit trace.  FILE may be\n"
	       "gzip-compressed; standard input is read when there is no FILE or -.\n"
	       "\n"
	       "  -o, --output FILE    write FILE instead of standard output\n"
	       "  -v, --verbose        say on stderr what became of each kind of event\n"
	       "  -m, --memory SIZE    memory for putting events in time order before\n"
	       "                       using temporary files (default 8M)\n"
	       "  -T, --tmpdir DIR     directory for temporary files (default $TMPDIR\n"
	       "                       or /tmp)\n"
	       "  -h, --help           show this help\n"
	       "  -V, --version        show the version\n"
	       "\n"
	       "Exit status: 0 success, 1 the input could not be read completely (what\n"
	       "could be read is still written), 2 usage or output error.\n",
	       cmd_name);
}

/* "64M", "512k", "1G" or bytes. */
static int
parse_size(const char *s, size_t *out)
{
	char *end;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned long long mul = 1;
	switch (*end) {
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	}
	if (*end == 'i' && mul > 1)
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (errno || *end || v > (1ull << 44) / mul)
		return -1;
	*out = (size_t)(v * mul);
	return 0;
}

/* ---- the import ---------------------------------------------------------------- */

struct run {
	struct imp im;
	struct imp_tracks *tracks;
	struct imp_sort *sort;
	struct imp_summary *sum;
	char *error;             /* what stopped the reading, if anything */
};

static int
write_meta(void *arg, struct tk_writer *w)
{
	return imp_write_meta(arg, w);
}

/* Wall-clock ISO 8601 UTC with nanoseconds. */
static void
iso_time(char *buf, size_t n, int64_t ns)
{
	time_t sec = (time_t)(ns / 1000000000);
	struct tm tm;
	size_t k = gmtime_r(&sec, &tm) ? strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm) : 0;
	snprintf(buf + k, n - k, ".%09" PRId64 "Z", ns % 1000000000);
}

static void
import_meta(struct run *r, const char *name)
{
	struct imp *im = &r->im;
	char v[128];
	snprintf(v, sizeof(v), "trace-import %s", tk_version());
	json_t *s = json_string(v);
	imp_topkey(im, "importer", s);
	json_decref(s);
	s = json_string(name);
	if (s) {
		imp_topkey(im, "import.source", s);
		json_decref(s);
	}
	if (r->error) {
		s = json_string(r->error);
		imp_topkey(im, "import.error", s);
		json_decref(s);
	}
	/* times that look like the wall clock give the start */
	int64_t start = im->t_min;
	if (im->has_base && start != INT64_MAX) {
		if ((im->base_ns > 0 && start > INT64_MAX - im->base_ns) ||
		    (im->base_ns < 0 && start < INT64_MIN - im->base_ns))
			start = INT64_MAX;
		else
			start += im->base_ns;
	}
	const int64_t y2000 = INT64_C(946684800) * 1000000000;
	const int64_t y2100 = INT64_C(4102444800) * 1000000000;
	if (start != INT64_MAX && start >= y2000 && start < y2100 &&
	    !json_object_get(im->meta, "start")) {
		iso_time(v, sizeof(v), start);
		s = json_string(v);
		imp_topkey(im, "start", s);
		json_decref(s);
	}
}

/* Convert one item and its parsed value (NULL: parse it here, which
 * repairs or reports). */
static int
convert(struct run *r, const struct imp_item *it, json_t *v)
{
	struct imp *im = &r->im;
	int status = 0;
	if (!v) {
		char msg[256];
		size_t at = 0;
		v = imp_parse(it->text, it->len, &im->parse, msg, sizeof(msg), &at);
		if (!v) {
			im->offset = it->offset;
			if (it->type == IMP_EVENT) {
				im->bad_events++;
				imp_summary_add(im->sum, "?", "(invalid JSON)", IMP_OUT_BAD);
				imp_event_warn(im, "invalid JSON at byte %" PRIu64 ": %s",
				               it->offset + at, msg);
			} else {
				cmd_warn("%s: invalid JSON at byte %" PRIu64 " (top-level "
				         "key '%s'): %s", im->name, it->offset + at, it->key, msg);
			}
			return 1;
		}
	} else {
		im->parse.repaired = 0;
		json_incref(v);
	}
	if (it->type == IMP_EVENT) {
		if (imp_event(im, v, it) < 0)
			status = 1;
	} else {
		imp_topkey(im, it->key, v);
	}
	json_decref(v);
	return status;
}

static int
convert_batch(struct run *r, struct imp_pipe *p, struct imp_batch *b)
{
	int status = 0;
	for (size_t i = 0; i < b->n; i++)
		status |= convert(r, &b->items[i], b->vals[i]);
	imp_pipe_done(p, b);
	return status;
}

/* Read every item of the input; returns 0, or 1 if something could not
 * be read (said on stderr). */
static int
read_input(struct run *r, struct imp_input *in, int threads)
{
	struct imp *im = &r->im;
	struct imp_scan sc;
	struct imp_item it;
	struct imp_batch *b;
	int rc, status = 0;
	struct imp_pipe *p = imp_pipe_new(threads);
	imp_scan_init(&sc, in);
	while ((rc = imp_scan_next(&sc, &it)) > 0) {
		if (it.type == IMP_EVENT && imp_skip_flow(im, &it))
			continue;
		imp_pipe_put(p, &it);
		while ((b = imp_pipe_get(p, imp_pipe_full(p))))
			status |= convert_batch(r, p, b);
	}
	imp_pipe_end(p);
	while ((b = imp_pipe_get(p, 1)))
		status |= convert_batch(r, p, b);
	imp_pipe_free(p);
	if (rc < 0) {
		cmd_warn("%s: %s", in->name, sc.errmsg);
		r->error = strdup(sc.errmsg);
		status = 1;
	} else if (!sc.events_arrays) {
		cmd_warn("%s: no traceEvents array: not a Chrome trace", in->name);
		r->error = strdup("no traceEvents array");
		status = 1;
	}
	if (sc.unclosed_array)
		imp_summary_note(im->sum, "JSON array not closed (the Chrome format "
		                 "allows it)", 1);
	imp_scan_free(&sc);
	return status;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "memory", required_argument, NULL, 'm' },
		{ "tmpdir", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct options opt = { NULL, 0, DEFAULT_MEMORY, NULL };
	cmd_init("trace-import");
	imp_alloc_init();
	int c;
	while ((c = getopt_long(argc, argv, ":o:vm:T:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': opt.output = optarg; break;
		case 'v': opt.verbose = 1; break;
		case 'm':
			if (parse_size(optarg, &opt.memory) < 0 || opt.memory < (1u << 20))
				cmd_usage_error("invalid --memory '%s' (at least 1M; bytes, or "
				                "with k, M, G)", optarg);
			break;
		case 'T': opt.tmpdir = optarg; break;
		case 'h': usage(); return cmd_finish(0);
		case 'V': cmd_version();
		default: cmd_bad_option(c, argv);
		}
	}
	if (argc - optind > 1)
		cmd_usage_error("one input file at a time (trace-merge joins traces)");
	const char *path = optind < argc ? argv[optind] : "-";
	int to_stdout = !opt.output || strcmp(opt.output, "-") == 0;
	if (to_stdout && isatty(STDOUT_FILENO))
		cmd_usage_error("refusing to write a binary trace to a terminal "
		                "(use -o FILE or a redirection)");

	struct imp_input in;
	if (imp_input_open(&in, path) < 0) {
		cmd_warn("%s: %s", cmd_display_path(path), in.errmsg);
		imp_input_close(&in);
		return EXIT_BADINPUT;
	}
	struct tk_writer *w = tk_writer_new();
	if (!w)
		cmd_die(EXIT_USAGE, "out of memory");
	/* an import is written once and read many times: chunks larger
	 * than a recorder's compress better (deflate sees more alike) */
	struct tk_writer_options wo = TK_WRITER_OPTIONS_INIT;
	wo.chunk_bytes = 1u << 20;
	int rc = to_stdout ? tk_writer_open_fd(w, STDOUT_FILENO, "(stdout)", &wo)
	                   : tk_writer_open_path(w, opt.output, &wo);
	if (rc != TK_OK) {
		cmd_warn("%s: %s", to_stdout ? "(stdout)" : opt.output, tk_writer_error(w));
		tk_writer_free(w);
		imp_input_close(&in);
		return EXIT_USAGE;
	}

	struct run r = { 0 };
	r.tracks = imp_tracks_new();
	r.sort = imp_sort_new(r.tracks, opt.memory, opt.tmpdir);
	r.sum = imp_summary_new();
	imp_init(&r.im, in.name, r.tracks, r.sort, r.sum);
	/* a second thread parses while this one converts: on by default,
	 * TK_IMPORT_THREADS=0 turns it off */
	const char *th = getenv("TK_IMPORT_THREADS");
	int status = read_input(&r, &in, !(th && strcmp(th, "0") == 0));
	imp_event_finish(&r.im);
	imp_kineto_finish(&r.im);
	import_meta(&r, in.name);
	if (r.im.has_base)
		imp_summary_note(r.sum, "baseTimeNanoseconds added to every time", 1);
	imp_summary_note(r.sum, "events with invalid UTF-8 (bad bytes became U+FFFD)",
	                 r.im.parse.utf8_repaired);
	imp_summary_note(r.sum, "numbers beyond 64 bits (kept in args as text)",
	                 r.im.parse.big_numbers);
	imp_summary_note(r.sum, "sorted runs in temporary files", imp_sort_runs(r.sort));

	int out_status = 0;
	if (imp_sort_finish(r.sort, w, r.im.has_base ? r.im.base_ns : 0, write_meta,
	                    &r.im) < 0) {
		cmd_warn("%s", imp_sort_error(r.sort));
		out_status = EXIT_USAGE;
	} else if (tk_writer_close(w) != TK_OK) {
		if (tk_writer_errno(w) == EPIPE)
			out_status = 0;  /* the reader went away: quietly */
		else {
			cmd_warn("%s: %s", to_stdout ? "(stdout)" : opt.output,
			         tk_writer_error(w));
			out_status = EXIT_USAGE;
		}
	}
	imp_summary_note(r.sum, "samples of Kineto's memory totals that repeat "
	                 "the value before (not written)", imp_sort_repeats(r.sort));
	if (r.im.warnings > 10)
		cmd_warn("%s: %" PRIu64 " more events could not be read", in.name,
		         r.im.warnings - 10);
	if (opt.verbose)
		imp_summary_print(r.sum, stderr, in.name);

	imp_free(&r.im);
	imp_summary_free(r.sum);
	imp_sort_free(r.sort);
	imp_tracks_free(r.tracks);
	tk_writer_free(w);
	imp_input_close(&in);
	imp_parse_free();
	free(r.error);
	if (out_status)
		return out_status;
	return cmd_finish(status);
}
