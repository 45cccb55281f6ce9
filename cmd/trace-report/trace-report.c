/* SPDX-License-Identifier: MIT */
/*
 * trace-report: one self-contained HTML page of pictures of traces (run
 * header, GPU busy over time, step times by category, top kernels and
 * ranges, their duration histograms, memory over time, findings), with
 * the figures beside each.  This file reads the options and the inputs;
 * report.h lists the others.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report.h"
#include "common/util.h"

static void
usage(FILE *f)
{
	fprintf(f, "Usage: %s [OPTIONS] [FILE...]\n"
	       "Write one self-contained HTML page of pictures of traces (stdin when no\n"
	       "FILE or -): GPU busy over time, step times, top kernels and ranges, their\n"
	       "duration histograms, memory over time, the findings (the straggler rank\n"
	       "in red when the ranks of a job are read together).\n"
	       "\n"
	       "  -o, --output FILE    write FILE instead of standard output\n"
	       "  -n, --top N          operations per table (default 10)\n"
	       "      --hist N         histograms per table (default 4)\n"
	       "  -h, --help           show this help\n"
	       "  -V, --version        show the version\n"
	       "\n"
	       "Exit status: 0 success, 1 an input could not be read completely,\n"
	       "2 usage or output error.\n",
	       cmd_name());
}

enum { O_HIST = 256 };

static const struct option longopts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "top", required_argument, NULL, 'n' },
	{ "hist", required_argument, NULL, O_HIST },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* Returns the index of the first operand; *output: -o's file or NULL. */
static int
parse_options(int argc, char **argv, struct report *r, const char **output)
{
	int c;
	r->top = 10;
	r->nhist = 4;
	while ((c = getopt_long(argc, argv, ":o:n:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!*optarg)
				cmd_usage_error("invalid --output ''");
			*output = optarg;
			break;
		case 'n':
			if (cmd_parse_uint(optarg, &r->top) < 0 || r->top == 0 || r->top > 1000)
				cmd_usage_error("invalid --top '%s' (1 to 1000)", optarg);
			break;
		case O_HIST:
			if (cmd_parse_uint(optarg, &r->nhist) < 0 || r->nhist > 100)
				cmd_usage_error("invalid --hist '%s' (0 to 100)", optarg);
			break;
		case 'h':
			usage(stdout);
			exit(cmd_finish(0));
		case 'V': cmd_version();
		default: cmd_bad_option(c, argv);
		}
	}
	return optind;
}

int
main(int argc, char **argv)
{
	cmd_init("trace-report");
	struct report r = { 0 };
	const char *output = NULL;
	int first = parse_options(argc, argv, &r, &output);
	static char *stdin_only[] = { "-", NULL };
	if (first == argc && isatty(0)) {
		usage(stderr);
		cmd_usage_error("no input: give a FILE, or pipe a trace into standard input");
	}
	r.files = first < argc ? argv + first : stdin_only;
	r.nfiles = first < argc ? argc - first : 1;

	struct agg_options o = AGG_OPTIONS_INIT;
	o.steps = 1;
	o.timeline = 1;
	/* the ranks, for the straggler finding and its highlight */
	o.distributed = 1;
	o.exact_budget = (size_t)1 << 30;
	if (!(r.agg = agg_new(&o)))
		cmd_die(EXIT_USAGE, "out of memory");
	int status = 0;
	for (int i = 0; i < r.nfiles; i++)
		status |= agg_read(r.agg, r.files[i]);
	agg_finish(r.agg);
	if (!status || agg_run(r.agg)->events_read) {
		/* written beside the target and renamed: a failed run never
		 * leaves half a page where a good one was */
		char *tmp = NULL;
		r.out = stdout;
		if (output && strcmp(output, "-") != 0) {
			size_t n = strlen(output) + 16;
			tmp = cmd_xrealloc(NULL, n);
			snprintf(tmp, n, "%s.tmpXXXXXX", output);
			int fd = mkstemp(tmp);
			mode_t mask = umask(0);
			umask(mask);
			/* mkstemp's 0600 would not be what the file gets from cp */
			if (fd >= 0)
				(void)fchmod(fd, 0666 & ~mask);
			if (fd < 0 || !(r.out = fdopen(fd, "w")))
				cmd_die(EXIT_USAGE, "%s: %s", output, strerror(errno));
		}
		report_compute_findings(&r);
		report_page(&r);
		if (tmp) {
			int bad = ferror(r.out) | fclose(r.out);
			if (bad || rename(tmp, output) < 0) {
				int e = errno;
				unlink(tmp);
				cmd_die(EXIT_USAGE, "%s: %s", output, strerror(e ? e : EIO));
			}
			free(tmp);
		} else {
			cmd_check_output(stdout);
		}
	}
	findings_free(&r.findings);
	agg_free(r.agg);
	return cmd_finish(status);
}
