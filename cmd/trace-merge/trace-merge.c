/* SPDX-License-Identifier: MIT */
/*
 * trace-merge: merge traces into one, ordered by begin time: the ranks of
 * a distributed job, the processes of a pipeline, repeated runs.
 *
 * The library's merge engine does the ordering, remapping and
 * deduplication.  This command prepares its inputs (files are scanned
 * and split at the traces they hold; streams are copied to a file when
 * they must be read twice), labels and shifts them (--label, --offset,
 * --align), and merges in passes when there are more inputs than open
 * files allowed: groups of inputs into temporary files, then those.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "source.h"
#include "common/progress.h"
#include "common/util.h"

#define FANIN_MAX 64            /* inputs of one merge: ~5 MB of buffers each */
#define FD_RESERVE 8            /* for spill files, the output, stdio */
#define TEMP_NAME "(temporary file)"

enum align { ALIGN_NONE, ALIGN_START, ALIGN_RANGE };

struct options {
	const char *output;      /* "-" = standard output */
	char **labels;
	size_t nlabels;
	int label_from_filename;
	enum align align;
	const char *align_range;
	int64_t *offsets;
	size_t noffsets;
	int keep_going;
	size_t buffer_size;
	const char *tmpdir;
};

/* What one merge reads: a trace of an input, or the temporary file of
 * an earlier pass. */
struct item {
	struct merge_source *src; /* NULL: a temporary file */
	size_t trace;
	int fd;
	uint64_t size;
};

/* Everything, reachable from one place (valgrind counts no leak when a
 * message ends the command). */
static struct {
	struct options opt;
	struct merge_source *src;
	size_t nsrc;
	struct item *items;
	size_t nitems;
	struct tk_writer *out;
	int status;
} run;

static void
usage(void)
{
	printf("Usage: %s [OPTIONS] [FILE...]\n"
	       "Merge tracekit traces into one, ordered by begin time (stdin when no\n"
	       "FILE or -): the ranks of a distributed job, the processes of a\n"
	       "pipeline, repeated runs.\n"
	       "\n"
	       "  -o, --output FILE         write to FILE instead of standard output\n"
	       "  -l, --label LABEL         label the processes of an input (once per\n"
	       "                            input, in input order)\n"
	       "  -L, --label-from-filename label each input's processes with its file\n"
	       "                            name (rank0.tkt: rank0)\n"
	       "  -a, --align MODE          none (default), start, or nvtx:NAME: shift\n"
	       "                            each input so that its start, or its first\n"
	       "                            range NAME, lines up with the first input's\n"
	       "  -t, --offset TIME         shift an input by TIME, e.g. -1.5ms (once per\n"
	       "                            input, in input order)\n"
	       "  -k, --keep-going          merge what can be read of bad inputs\n"
	       "  -S, --buffer-size SIZE    memory for reordering unsorted input before\n"
	       "                            it spills to temporary files (default 256M)\n"
	       "  -T, --temporary-directory DIR\n"
	       "                            for temporary files (default $TMPDIR or /tmp)\n"
	       "  -h, --help                show this help\n"
	       "  -V, --version             show the version\n"
	       "\n"
	       "Exit status: 0 success, 1 an input could not be read completely,\n"
	       "2 usage or output error.\n",
	       cmd_name());
}

/* ---- option values ------------------------------------------------------------ */

static void
parse_align(const char *s, struct options *o)
{
	if (strcmp(s, "none") == 0)
		o->align = ALIGN_NONE;
	else if (strcmp(s, "start") == 0)
		o->align = ALIGN_START;
	else if (strncmp(s, "nvtx:", 5) == 0 && s[5]) {
		o->align = ALIGN_RANGE;
		o->align_range = s + 5;
	} else
		cmd_usage_error("invalid --align '%s' (none, start or nvtx:NAME)", s);
}

static void *
push(void *arr, size_t *n, size_t size)
{
	char *p = realloc(arr, (*n + 1) * size);
	if (!p)
		cmd_die(EXIT_USAGE, "out of memory");
	(*n)++;
	return p;
}

/* "runs/rank0.tkt" -> "rank0"; "-" -> "stdin". */
static char *
label_of(const char *path)
{
	if (!path || strcmp(path, "-") == 0)
		return strdup("stdin");
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	const char *dot = strrchr(base, '.');
	size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
	return strndup(base, n);
}

/* ---- open files ------------------------------------------------------------------ */

/* Let the merge use every descriptor the hard limit allows. */
static void
raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Descriptors that inputs of one merge may still open. */
static size_t
fd_budget(void)
{
	struct rlimit rl;
	size_t limit = 1024, open_now = 0;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		limit = rl.rlim_cur;
	else if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		limit = 1u << 20;
	DIR *d = opendir("/proc/self/fd");
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				open_now++;
		closedir(d);
		open_now--; /* the directory itself */
	} else {
		open_now = 3;
	}
	return limit > open_now + FD_RESERVE ? limit - open_now - FD_RESERVE : 0;
}

/* ---- one merge ---------------------------------------------------------------------- */

/* Is `message` about input `name` the damage its --align failure
 * reported already?  Then it is not said again (once). */
static int
said_with_align(const char *name, const char *message)
{
	for (size_t i = 0; i < run.nsrc; i++) {
		struct merge_source *s = &run.src[i];
		if (s->align_error && strcmp(s->name, name) == 0 &&
		    strcmp(s->align_error, message) == 0) {
			free(s->align_error);
			s->align_error = NULL;
			return 1;
		}
	}
	return 0;
}

static void
on_warn(void *arg, const char *input, const char *message)
{
	(void)arg;
	/* a pass file's problems were reported with its own inputs */
	if (strcmp(input, TEMP_NAME) != 0 && !said_with_align(input, message))
		cmd_warn("%s: %s", input, message);
}

/* Report a failed write: quietly for a closed pipe; else naming the
 * output as the other commands do ("out.tkt: write error: ...",
 * "(stdout): write error: ..."). */
static _Noreturn void
output_failed(struct tk_writer *w, const char *what)
{
	int e = tk_writer_errno(w);
	if (w == run.out && e == EPIPE)
		exit(run.status);
	if (w == run.out)
		cmd_die(EXIT_USAGE, "%s: write error: %s",
		        strcmp(run.opt.output, "-") == 0 ? "(stdout)" : run.opt.output,
		        e ? strerror(e) : what);
	cmd_die(EXIT_USAGE, "temporary file: %s", e ? strerror(e) : what);
}

/* Stop at a bad input: what was merged is written, with no end marker,
 * so that readers of the output see it cut short. */
static _Noreturn void
stop(void)
{
	tk_writer_flush(run.out);
	tk_writer_free(run.out);
	run.out = NULL;
	exit(EXIT_BADINPUT);
}

/* Add item `it` to the merge.  0, or 1 for an input that cannot be
 * read (reported). */
static int
add_item(struct tk_merge *m, const struct item *it)
{
	struct tk_reader *r;
	int rc;
	if (!it->src) {
		if (!(r = tk_reader_new()))
			cmd_die(EXIT_USAGE, "out of memory");
		if (tk_reader_open_range(r, it->fd, 0, it->size, TEMP_NAME))
			cmd_die(EXIT_USAGE, "temporary file: %s", tk_reader_error(r));
		if (tk_merge_add(m, r, NULL, 0) < 0)
			cmd_die(EXIT_USAGE, "%s", tk_merge_error(m));
		return 0;
	}
	struct merge_source *s = it->src;
	if (s->failed || merge_source_unpark(s)) {
		s->failed = 1;
		return EXIT_BADINPUT;
	}
	if ((rc = merge_source_reader(s, it->trace, &r))) {
		if (rc == TK_ENOMEM)
			cmd_die(EXIT_USAGE, "out of memory");
		if (!said_with_align(s->name, tk_reader_error(r)))
			cmd_warn("%s: %s", s->name, tk_reader_error(r));
		tk_reader_free(r);
		return EXIT_BADINPUT;
	}
	int idx = tk_merge_add(m, r, s->label, s->offset);
	if (idx < 0)
		cmd_die(EXIT_USAGE, "%s", tk_merge_error(m));
	if (s->scan && s->scan->ntraces) {
		const struct tk_scan_trace *t = &s->scan->traces[it->trace];
		if (tk_merge_set_chunks(m, idx, s->scan->chunks + t->first,
		                        t->nchunks))
			cmd_die(EXIT_USAGE, "%s", tk_merge_error(m));
	}
	return 0;
}

/* The progress line of a merge (on a terminal, after a second). */
struct merge_progress {
	struct cmd_progress line;
	uint64_t total;          /* bytes of the inputs; 0 = unknown */
	char what[64];
};

static void
on_progress(void *arg, uint64_t bytes, uint64_t events_read,
            uint64_t events_written)
{
	struct merge_progress *p = arg;
	(void)events_read;
	(void)events_written;
	/* the readers' offsets of several traces of one file add up past
	 * its size */
	cmd_progress(&p->line, p->total && bytes > p->total ? p->total : bytes);
}

/* Bytes the items hold: a file's once however many traces it holds;
 * 0 (unknown) when one is a stream. */
static uint64_t
items_size(const struct item *items, size_t n)
{
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		const struct merge_source *s = items[i].src;
		if (!s)
			total += items[i].size;
		else if (s->stream || !s->scan)
			return 0;
		else if (i == 0 || items[i - 1].src != s)
			total += s->scan->size;
	}
	return total;
}

/* Merge items[0..n) into `w` (not closed). */
static void
merge_items(const struct item *items, size_t n, struct tk_writer *w)
{
	const struct options *o = &run.opt;
	int sources = n && items[0].src;
	struct tk_merge_options mo = {
		.memory_limit = o->buffer_size,
		.tmpdir = o->tmpdir,
		/* a pass file is ours: damage there is no input's fault */
		.keep_going = sources && o->keep_going,
		.warn = on_warn,
	};
	struct tk_merge *m = tk_merge_new(w, &mo);
	if (!m)
		cmd_die(EXIT_USAGE, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (add_item(m, &items[i]) == 0)
			continue;
		run.status = EXIT_BADINPUT;
		if (!o->keep_going) {
			tk_merge_free(m);
			stop();
		}
	}
	struct merge_progress progress = { .total = items_size(items, n) };
	snprintf(progress.what, sizeof(progress.what), "merging %zu input%s", n,
	         n == 1 ? "" : "s");
	cmd_progress_start(&progress.line, progress.what, progress.total);
	tk_merge_set_progress(m, on_progress, &progress);
	int rc = tk_merge_run(m);
	cmd_progress_end(&progress.line);
	struct tk_merge_stats st;
	tk_merge_stats(m, &st);
	for (size_t i = 0; i < n; i++)
		if (items[i].src)
			merge_source_park(items[i].src);
	if (st.bad_inputs)
		run.status = EXIT_BADINPUT;
	if (rc < 0) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", tk_merge_error(m));
		/* the merge stops at the output's failure with the writer's
		 * errno, which no other failure leaves on the writer */
		int out_failed = tk_merge_errno(m) && tk_writer_errno(w);
		tk_merge_free(m);
		if (st.bad_inputs && !mo.keep_going)
			stop(); /* reported by on_warn */
		if (out_failed)
			output_failed(w, tk_writer_error(w));
		cmd_die(EXIT_USAGE, "%s", msg);
	}
	tk_merge_free(m);
}

/* Merge items[0..n) into a new temporary file: the item that stands for
 * them in the next pass. */
static struct item
merge_to_temp(const struct item *items, size_t n)
{
	const char *dir = run.opt.tmpdir;
	char path[4096];
	snprintf(path, sizeof(path), "%s/trace-merge-XXXXXX", dir);
	int fd = mkstemp(path);
	if (fd < 0)
		cmd_die(EXIT_USAGE, "cannot create a temporary file in %s: %s", dir,
		        strerror(errno));
	unlink(path);
	struct tk_writer_options wo = TK_WRITER_OPTIONS_INIT;
	wo.level = 1; /* read once more, soon */
	wo.chunk_bytes = 1u << 20;
	struct tk_writer *w = tk_writer_new();
	if (!w || tk_writer_open_fd(w, fd, TEMP_NAME, &wo))
		output_failed(w, "cannot write");
	merge_items(items, n, w);
	if (tk_writer_close(w))
		output_failed(w, tk_writer_error(w));
	struct item it = { .fd = fd, .size = tk_writer_offset(w) };
	tk_writer_free(w);
	for (size_t i = 0; i < n; i++)
		if (!items[i].src)
			close(items[i].fd);
	return it;
}

/* Descriptors the items need that are not open for good already. */
static size_t
fd_cost(const struct item *items, size_t n)
{
	size_t cost = 0;
	for (size_t i = 0; i < n; i++) {
		const struct merge_source *s = items[i].src;
		if (s && s->path && s->own_fd && !s->stream &&
		    (i == 0 || items[i - 1].src != s))
			cost++;
	}
	return cost;
}

/* Merge every item into the output; in passes when they are too many
 * to be open at once.  Groups of inputs go to temporary files, which
 * stay open: a group and the files of the groups before it share the
 * descriptors, half and half, and when the files fill their half they
 * are merged into one. */
static void
merge_all(void)
{
	struct item *items = run.items;
	size_t n = run.nitems, budget = fd_budget();
	if (n <= FANIN_MAX && fd_cost(items, n) <= budget) {
		merge_items(items, n, run.out);
		return;
	}
	size_t half = budget / 2 < FANIN_MAX ? budget / 2 : FANIN_MAX;
	if (half < 2)
		cmd_die(EXIT_USAGE, "too few file descriptors to merge "
		        "(raise the limit: ulimit -n)");
	struct item *temps = NULL;
	size_t ntemps = 0, i = 0;
	while (i < n) {
		if (ntemps >= half) {
			struct item t = merge_to_temp(temps, ntemps);
			ntemps = 0;
			temps = push(temps, &ntemps, sizeof(*temps));
			temps[0] = t;
		}
		size_t k = 1;
		while (i + k < n && k < half && fd_cost(items + i, k + 1) <= half)
			k++;
		struct item t = merge_to_temp(items + i, k);
		i += k;
		temps = push(temps, &ntemps, sizeof(*temps));
		temps[ntemps - 1] = t;
	}
	merge_items(temps, ntemps, run.out);
	for (size_t t = 0; t < ntemps; t++)
		close(temps[t].fd);
	free(temps);
}

/* ---- inputs ------------------------------------------------------------------------ */

/* Shift the inputs so that their anchors line up with the first one's. */
static void
align(void)
{
	const struct options *o = &run.opt;
	int have_ref = 0;
	int64_t ref = 0;
	for (size_t i = 0; i < run.nsrc; i++) {
		struct merge_source *s = &run.src[i];
		if (s->failed)
			continue;
		int64_t t = 0;
		const char *why = NULL;
		int rc;
		if (merge_source_unpark(s)) {
			s->failed = 1;
			run.status = EXIT_BADINPUT;
			if (!o->keep_going)
				stop();
			continue;
		}
		if (o->align == ALIGN_START)
			rc = merge_source_start(s, &t, &why);
		else
			rc = merge_source_first_range(s, o->align_range, &t, &why);
		merge_source_park(s);
		if (rc != 0) {
			/* one line: with -k the input is merged where it is, and
			 * the merge that meets the damage again stays quiet */
			if (why && o->keep_going && !(s->align_error = strdup(why)))
				cmd_die(EXIT_USAGE, "out of memory");
			if (why)
				cmd_warn("%s: cannot align: %s", s->name, why);
			else if (o->align == ALIGN_START)
				cmd_warn("%s: cannot align: no events", s->name);
			else
				cmd_warn("%s: cannot align: no range named '%s'",
				         s->name, o->align_range);
			run.status = EXIT_BADINPUT;
			if (!o->keep_going)
				stop();
			continue;
		}
		if (!have_ref) {
			ref = t;
			have_ref = 1;
		}
		s->offset += ref - t;
	}
}

static void
prepare(char **paths, size_t n)
{
	const struct options *o = &run.opt;
	run.src = calloc(n, sizeof(*run.src));
	if (!run.src)
		cmd_die(EXIT_USAGE, "out of memory");
	run.nsrc = n;
	for (size_t i = 0; i < n; i++) {
		struct merge_source *s = &run.src[i];
		s->path = paths[i];
		s->name = cmd_display_path(paths[i]);
		s->fd = -1;
		if (o->nlabels)
			s->label = strdup(o->labels[i]);
		else if (o->label_from_filename)
			s->label = label_of(paths[i]);
		if ((o->nlabels || o->label_from_filename) && !s->label)
			cmd_die(EXIT_USAGE, "out of memory");
		s->offset = o->noffsets ? o->offsets[i] : 0;
	}
	for (size_t i = 0; i < n; i++) {
		struct merge_source *s = &run.src[i];
		int rc = merge_source_open(s, o->align != ALIGN_NONE, o->tmpdir);
		merge_source_park(s);
		/* what went wrong (a temporary file) was said where it
		 * happened: one line, not a second that adds nothing */
		if (rc == EXIT_USAGE)
			exit(EXIT_USAGE);
		if (s->partial)
			run.status = EXIT_BADINPUT;
		if (rc) {
			s->failed = 1;
			run.status = EXIT_BADINPUT;
			if (!o->keep_going)
				stop();
		}
	}
	if (o->align != ALIGN_NONE)
		align();
	for (size_t i = 0; i < n; i++) {
		struct merge_source *s = &run.src[i];
		if (s->failed)
			continue;
		for (size_t t = 0; t < merge_source_traces(s); t++) {
			run.items = push(run.items, &run.nitems, sizeof(*run.items));
			run.items[run.nitems - 1] = (struct item){ .src = s, .trace = t };
		}
	}
}

/* Refuse an output that is also an input: it would be emptied first. */
static void
check_output(char **paths, size_t n)
{
	const char *out = run.opt.output;
	struct stat so, si;
	if (strcmp(out, "-") == 0) {
		if (isatty(STDOUT_FILENO))
			cmd_usage_error("standard output is a terminal: write to a "
			                "file (-o FILE) or a pipe");
		if (fstat(STDOUT_FILENO, &so) < 0)
			return;
	} else if (stat(out, &so) < 0) {
		return;
	}
	if (!S_ISREG(so.st_mode))
		return;
	for (size_t i = 0; i < n; i++) {
		int rc = strcmp(paths[i], "-") == 0 ? fstat(STDIN_FILENO, &si)
		                                    : stat(paths[i], &si);
		if (rc == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino)
			cmd_usage_error("%s: the output is also an input",
			                cmd_display_path(paths[i]));
	}
}

static void
free_all(void)
{
	for (size_t i = 0; i < run.nsrc; i++)
		merge_source_free(&run.src[i]);
	free(run.src);
	free(run.items);
	free(run.opt.labels);
	free(run.opt.offsets);
	tk_writer_free(run.out);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "label", required_argument, NULL, 'l' },
		{ "label-from-filename", no_argument, NULL, 'L' },
		{ "align", required_argument, NULL, 'a' },
		{ "offset", required_argument, NULL, 't' },
		{ "keep-going", no_argument, NULL, 'k' },
		{ "buffer-size", required_argument, NULL, 'S' },
		{ "temporary-directory", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct options *o = &run.opt;
	o->output = "-";
	cmd_init("trace-merge");
	atexit(free_all);
	int c;
	while ((c = getopt_long(argc, argv, ":o:l:La:t:kS:T:hV", longopts,
	                        NULL)) != -1) {
		switch (c) {
		case 'o': o->output = optarg; break;
		case 'l':
			o->labels = push(o->labels, &o->nlabels, sizeof(*o->labels));
			o->labels[o->nlabels - 1] = optarg;
			break;
		case 'L': o->label_from_filename = 1; break;
		case 'a': parse_align(optarg, o); break;
		case 't':
			o->offsets = push(o->offsets, &o->noffsets, sizeof(*o->offsets));
			if (cmd_parse_offset(optarg, &o->offsets[o->noffsets - 1]) < 0)
				cmd_usage_error("invalid --offset '%s'", optarg);
			break;
		case 'k': o->keep_going = 1; break;
		case 'S':
			if (cmd_parse_size(optarg, &o->buffer_size) < 0 || o->buffer_size == 0)
				cmd_usage_error("invalid --buffer-size '%s'", optarg);
			break;
		case 'T': o->tmpdir = optarg; break;
		case 'h': usage(); return cmd_finish(0);
		case 'V': cmd_version();
		default: cmd_bad_option(c, argv);
		}
	}
	cmd_no_input_tty(argc - optind, "[OPTIONS] [FILE...]");
	static char *stdin_only[] = { "-", NULL };
	char **paths = optind < argc ? argv + optind : stdin_only;
	size_t n = optind < argc ? (size_t)(argc - optind) : 1;
	if (o->nlabels && o->label_from_filename)
		cmd_usage_error("--label and --label-from-filename exclude each other");
	if (o->nlabels && o->nlabels != n)
		cmd_usage_error("%zu labels for %zu inputs (give one per input)",
		                o->nlabels, n);
	if (o->noffsets && o->noffsets != n)
		cmd_usage_error("%zu offsets for %zu inputs (give one per input)",
		                o->noffsets, n);
	for (size_t i = 0, stdin_seen = 0; i < n; i++)
		if (strcmp(paths[i], "-") == 0 && stdin_seen++)
			cmd_usage_error("standard input can be read only once");
	if (!o->tmpdir || !*o->tmpdir)
		o->tmpdir = getenv("TMPDIR");
	if (!o->tmpdir || !*o->tmpdir)
		o->tmpdir = "/tmp";
	check_output(paths, n);
	raise_nofile();

	if (!(run.out = tk_writer_new()))
		cmd_die(EXIT_USAGE, "out of memory");
	/* with more cores, the output is compressed there while this
	 * thread merges (TK_MERGE_THREADS: how many threads; 0 none) */
	struct tk_writer_options wo = TK_WRITER_OPTIONS_INIT;
	wo.threads = cmd_writer_threads("TK_MERGE_THREADS");
	/* the file is opened here, not by tk_writer_open_path, so that an
	 * open that fails (no such folder) and a first write that fails
	 * (the header, on a full disk) are told apart */
	int out_fd = STDOUT_FILENO;
	if (strcmp(o->output, "-") != 0 &&
	    (out_fd = open(o->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)) < 0)
		cmd_die(EXIT_USAGE, "%s: %s", o->output, strerror(errno));
	if (tk_writer_open_fd(run.out, out_fd, out_fd == STDOUT_FILENO ? "(stdout)" : o->output,
	                      &wo))
		output_failed(run.out, tk_writer_error(run.out));
	prepare(paths, n);
	merge_all();
	if (tk_writer_close(run.out))
		output_failed(run.out, tk_writer_error(run.out));
	if (out_fd != STDOUT_FILENO && close(out_fd) != 0)
		cmd_die(EXIT_USAGE, "%s: write error: %s", o->output, strerror(errno));
	return run.status;
}
