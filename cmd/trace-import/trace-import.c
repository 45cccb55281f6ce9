/* SPDX-License-Identifier: MIT */
/*
 * trace-import: convert a Chrome Trace Event JSON file (the PyTorch
 * profiler's, or any other tool's) into a .tkt trace.
 *
 * One pass over the JSON, one event in memory at a time: the splitter
 * (scan.c) finds each event's bytes, jansson parses them
 * (pipe.c, parse.c), the phase and category decide what
 * tracekit event it becomes (event.c, kineto.c), and the
 * events are put in time order in bounded memory (sort.c) before
 * they are written (run.c drives it all).  -v tells what became
 * of every kind of input event.
 *
 * An Nsight Systems SQLite export, told by its first bytes (input.c), is
 * read with SQLite instead (nsys.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import/import.h"
#include "import/nsys.h"
#include "common/util.h"

#define DEFAULT_MEMORY (16u << 20)

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
	       "chrome://tracing, trace-to-chrome) or an Nsight Systems report exported\n"
	       "to SQLite by nsys export, to a tracekit trace.  FILE may be\n"
	       "gzip-compressed; standard input is read when there is no FILE or -.\n"
	       "\n"
	       "  -o, --output FILE    write FILE instead of standard output\n"
	       "  -v, --verbose        say on stderr what became of each kind of event\n"
	       "  -S, --buffer-size SIZE  memory for putting events in time order\n"
	       "                       before using temporary files (default 16M;\n"
	       "                       also -m, --memory)\n"
	       "  -T, --temporary-directory DIR  directory for temporary files (default\n"
	       "                       $TMPDIR or /tmp; also --tmpdir)\n"
	       "  -h, --help           show this help\n"
	       "  -V, --version        show the version\n"
	       "\n"
	       "Exit status: 0 success, 1 the input could not be read completely (what\n"
	       "could be read is still written), 2 usage or output error.\n",
	       cmd_name());
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "buffer-size", required_argument, NULL, 'S' },
		{ "memory", required_argument, NULL, 'm' },  /* the old name */
		{ "temporary-directory", required_argument, NULL, 'T' },
		{ "tmpdir", required_argument, NULL, 'T' },  /* the old name */
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct options opt = { NULL, 0, DEFAULT_MEMORY, NULL };
	cmd_init("trace-import");
	imp_alloc_init();
	int c;
	while ((c = getopt_long(argc, argv, ":o:vm:S:T:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': opt.output = optarg; break;
		case 'v': opt.verbose = 1; break;
		case 'm':
		case 'S':
			if (cmd_parse_size(optarg, &opt.memory) < 0 || opt.memory < (64u << 10))
				cmd_usage_error("invalid --%s '%s' (at least 64k; bytes, "
				                "or with k, M, G)", c == 'm' ? "memory" : "buffer-size",
				                optarg);
			break;
		case 'T': opt.tmpdir = optarg; break;
		case 'h': usage(); return cmd_finish(0);
		case 'V': cmd_version();
		default: cmd_bad_option(c, argv);
		}
	}
	if (argc - optind > 1)
		cmd_usage_error("one input file at a time (trace-merge joins traces)");
	cmd_no_input_tty(argc - optind, "[OPTIONS] [FILE]");
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
	/* a big JSON takes a while: say how far it got, on a terminal */
	struct cmd_progress progress;
	struct stat sb;
	cmd_progress_start(&progress, cmd_display_path(path),
	                   fstat(in.fd, &sb) == 0 && S_ISREG(sb.st_mode) ? (uint64_t)sb.st_size : 0);
	in.progress = &progress;
	/* an nsys export: opened and checked before the output is made */
	struct imp_nsys *ns = NULL;
	if (in.sqlite) {
		char msg[512];
		if (!(ns = imp_nsys_open(&in, path, opt.tmpdir, msg, sizeof(msg)))) {
			cmd_warn("%s: %s", cmd_display_path(path), msg);
			imp_input_close(&in);
			return EXIT_BADINPUT;
		}
	}
	struct tk_writer *w = tk_writer_new();
	if (!w)
		cmd_die(EXIT_USAGE, "out of memory");
	/* an import is written once and read many times: chunks larger
	 * than a recorder's compress better (a Kineto trace: 1.5 MiB gives
	 * 12 % fewer bytes than 256 KiB, for about 4 MB more memory) */
	struct tk_writer_options wo = TK_WRITER_OPTIONS_INIT;
	wo.chunk_bytes = 1536u << 10;
	/* compressing the output goes to the writer's own threads too (a
	 * tenth of an import's time); TK_IMPORT_THREADS=0 keeps everything
	 * on one */
	const char *th = getenv("TK_IMPORT_THREADS");
	int compressing = cmd_writer_threads("TK_IMPORT_THREADS");
	int threads = !(th && *th) || compressing > 0;
	/* one processor: still one, the parse thread's partner */
	wo.threads = threads && !compressing ? 1 : compressing;
	int rc = to_stdout ? tk_writer_open_fd(w, STDOUT_FILENO, "(stdout)", &wo)
	                   : tk_writer_open_path(w, opt.output, &wo);
	if (rc != TK_OK) {
		/* EPIPE: the reader left before the header, quietly too */
		int quiet = tk_writer_errno(w) == EPIPE;
		if (!quiet)
			cmd_warn("%s: %s", to_stdout ? "(stdout)" : opt.output,
			         tk_writer_error(w));
		tk_writer_free(w);
		imp_nsys_close(ns);
		imp_input_close(&in);
		return quiet ? 0 : EXIT_USAGE;
	}

	/* a second thread parses while this one converts */
	struct imp_options io = {
		.memory = opt.memory, .tmpdir = opt.tmpdir, .threads = threads,
		.verbose = opt.verbose,
	};
	/* every event through jansson, the way before the fast path (to
	 * compare the two): TK_IMPORT_FAST=0 */
	const char *fast = getenv("TK_IMPORT_FAST");
	if (fast && strcmp(fast, "0") == 0)
		io.slow = 1;
	int status = ns ? imp_nsys_run(ns, w, &io) : imp_run(&in, w, &io);
	imp_nsys_close(ns);
	int out_status = 0;
	if (status == EXIT_USAGE) {
		out_status = EXIT_USAGE;
	} else if (tk_writer_errno(w) == EPIPE) {
		status = 0;    /* the reader went away (| head): quietly */
	} else if (tk_writer_close(w) != TK_OK) {
		if (tk_writer_errno(w) != EPIPE) {   /* EPIPE: the reader left */
			cmd_warn("%s: %s", to_stdout ? "(stdout)" : opt.output,
			         tk_writer_error(w));
			out_status = EXIT_USAGE;
		}
	}
	tk_writer_free(w);
	cmd_progress_end(&progress);
	imp_input_close(&in);
	if (out_status)
		return out_status;
	return cmd_finish(status);
}
