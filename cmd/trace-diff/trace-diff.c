/* SPDX-License-Identifier: MIT */
/*
 * trace-diff: did a change make a program faster or slower, where, by
 * how much, and how sure is that?  Compares two traces, BEFORE and
 * AFTER: run-wide figures, then every operation (kernels, copies, API
 * calls, ranges) by its distribution of durations, with a statistical
 * test and a threshold deciding each verdict; the exit status says
 * whether there is a regression, for scripts and CI.  This file reads
 * the options and the inputs; diff.h lists the others.
 */
#include <getopt.h>
#include <pthread.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diff.h"
#include "common/util.h"

static void
usage(void)
{
	printf("Usage: %s [OPTIONS] BEFORE AFTER\n"
	       "       %s [OPTIONS] BEFORE... -- AFTER...\n"
	       "Compare two tracekit traces: what got faster or slower, by how much, and\n"
	       "how sure that is (- reads one of them from stdin; either may be a summary\n"
	       "written by trace-stats --baseline instead).  With several files on a\n"
	       "side, each is one run: the verdicts rest on the run-to-run spread\n"
	       "(with more runs on one side, on the means per run).\n"
	       "\n"
	       "Output:\n"
	       "  -c, --csv              CSV; times in integer ns\n"
	       "  -j, --json             one JSON object; times in integer ns\n"
	       "  -m, --markdown         Markdown, for pull-request comments\n"
	       "  -q, --quiet            print nothing: the exit status tells\n"
	       "      --html FILE        also write the comparison as a page of pictures\n"
	       "  -r, --report LIST      summary,explain,groups (default all; CSV: groups)\n"
	       "  -n, --top N            at most N rows per table\n"
	       "      --full-names       never shorten names in text and Markdown\n"
	       "Matching:\n"
	       "      --normalize        match names without template arguments,\n"
	       "                         addresses and numeric suffixes\n"
	       "      --name REGEX       compare operations whose name matches\n"
	       "      --exclude REGEX    leave out operations whose name matches\n"
	       "  -k, --kind LIST        kernel,memcpy,memset,api,range,async_range\n"
	       "      --from DURATION    events beginning this long after each trace's start\n"
	       "      --to DURATION      ... and before this\n"
	       "Verdicts:\n"
	       "  -t, --threshold PCT    smallest change called faster or slower (3%%)\n"
	       "  -a, --alpha P          family-wise significance level (0.01)\n"
	       "      --min-share PCT    smallest time one operation must add or save,\n"
	       "                         as a share of the wall time (1%%)\n"
	       "Exit status:\n"
	       "      --metric M         wall, gpu, kernel, copy, api or cpu (wall)\n"
	       "      --fail-if-slower PCT  1 when the metric, or each operation kept by\n"
	       "                         --name, is slower by more than PCT\n"
	       "      --expect-speedup X 1 unless AFTER is at least X times faster on\n"
	       "                         the metric\n"
	       "  -h, --help             show this help\n"
	       "  -V, --version          show the version\n"
	       "\n"
	       "Exit status: 0 no significant regression, 1 a regression (or a failed\n"
	       "--fail-if-slower or --expect-speedup), 2 an input could not be read,\n"
	       "usage or output error.\n",
	       cmd_name(), cmd_name());
}

/* ---- options ------------------------------------------------------------------------------ */

static void
compile_regex(regex_t *re, const char *pattern, const char *what)
{
	int rc = regcomp(re, pattern, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		char msg[256];
		regerror(rc, re, msg, sizeof(msg));
		cmd_usage_error("invalid --%s '%s': %s", what, pattern, msg);
	}
}

static unsigned
parse_reports(const char *s)
{
	unsigned mask = 0;
	char *copy = strdup(s), *save = NULL;
	if (!copy)
		cmd_die(EXIT_USAGE, "out of memory");
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (strcmp(t, "summary") == 0)
			mask |= DR_SUMMARY;
		else if (strcmp(t, "groups") == 0)
			mask |= DR_GROUPS;
		else if (strcmp(t, "explain") == 0)
			mask |= DR_EXPLAIN;
		else if (strcmp(t, "all") == 0)
			mask |= DR_SUMMARY | DR_EXPLAIN | DR_GROUPS;
		else {
			free(copy);
			cmd_usage_error("invalid --report '%s' (summary, explain, groups or all)", s);
		}
	}
	free(copy);
	if (!mask)
		cmd_usage_error("invalid --report '%s' (summary, explain, groups or all)", s);
	return mask;
}

static uint32_t
parse_kinds(const char *s)
{
	uint32_t mask = 0;
	char *copy = strdup(s), *save = NULL;
	if (!copy)
		cmd_die(EXIT_USAGE, "out of memory");
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		unsigned k = cmd_kind_from_name(t);
		if (!k || agg_table_of(k) < 0) {
			free(copy);
			cmd_usage_error("invalid --kind '%s' (kernel, memcpy, memset, api, "
			                "range or async_range)", s);
		}
		mask |= 1u << k;
	}
	free(copy);
	if (!mask)
		cmd_usage_error("invalid --kind '%s'", s);
	return mask;
}

static enum diff_metric
parse_metric(const char *s)
{
	for (int m = 0; m < DM_NGATE; m++)
		if (strcmp(s, diff_metric_keys[m]) == 0)
			return (enum diff_metric)m;
	cmd_usage_error("invalid --metric '%s' (wall, gpu, kernel, copy, api or cpu)", s);
}

/* Width of text lines: the terminal's, else $COLUMNS, else 200. */
static size_t
line_width(void)
{
	struct winsize ws;
	const char *c = getenv("COLUMNS");
	long cols = 0;
	if (isatty(1) && ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col)
		cols = ws.ws_col;
	else if (c && *c)
		cols = strtol(c, NULL, 10);
	return cols > 0 ? (size_t)cols : 200;
}

/* ---- inputs -------------------------------------------------------------------------------- */

/* Aggregate one trace as trace-stats does, with the options `base`;
 * NULL after the reader's message when it could not be read completely. */
static struct agg *
read_trace(const struct agg_options *base, const char *path, int by_run)
{
	struct agg_options o = *base;
	o.by_run = by_run;
	struct agg *a = agg_new(&o);
	if (!a)
		cmd_die(EXIT_USAGE, "out of memory");
	if (agg_read(a, path) != 0) {
		/* a comparison with part of a trace missing would be wrong:
		 * a truncated AFTER looks faster */
		agg_free(a);
		return NULL;
	}
	agg_finish(a);
	return a;
}

/* Several files of one side, each one run; NULL after the readers'
 * messages when any could not be read completely (each is read, so
 * that every damaged one is reported). */
static struct agg *
read_files(const struct agg_options *base, char *const *files, size_t n)
{
	struct agg_options o = *base;
	o.by_input = 1;
	struct agg *a = agg_new(&o);
	if (!a)
		cmd_die(EXIT_USAGE, "out of memory");
	int status = 0;
	for (size_t i = 0; i < n; i++)
		status |= agg_read(a, files[i]);
	if (status) {
		agg_free(a);
		return NULL;
	}
	agg_finish(a);
	return a;
}

/* Can the input be read again?  Files can; standard input, pipes
 * (as from <(zcat run.tkt.gz)) and devices cannot.  What cannot be
 * looked at counts as a file: reading it reports why. */
static int
rereadable(const char *path)
{
	struct stat st;
	if (strcmp(path, "-") == 0)
		return 0;
	return stat(path, &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode);
}

/* Does the trace look like a repeated recording?  Its first chunk says:
 * trace-record's "record.repeat" metadata, or a run event (generators
 * that write in order).  Only a guess, to read it split by run at once
 * rather than twice; read_both() checks. */
static int
looks_repeated(const char *path)
{
	struct tk_reader *r = cmd_new_reader(CMD_READ_NO_ARGS);
	int found = 0;
	if (rereadable(path) && tk_reader_open_path(r, path) == TK_OK) {
		struct tk_record rec;
		uint64_t first = UINT64_MAX;
		while (!found && tk_reader_next(r, &rec) == TK_OK) {
			uint64_t chunk = tk_reader_chunk(r)->offset;
			if (first == UINT64_MAX)
				first = chunk;
			else if (chunk != first)
				break;
			if (rec.type == TK_REC_META)
				found = strcmp(rec.u.meta->key, "record.repeat") == 0 &&
				        strtoul(rec.u.meta->value, NULL, 10) > 1;
			else if (rec.type == TK_REC_EVENT)
				found = rec.u.event->kind == TK_RUN;
		}
	}
	tk_reader_free(r);
	return found;
}

/* One trace to read, maybe in a thread of its own: what it reads is
 * its own, what it shares (the options) is only read. */
struct read_job {
	const struct agg_options *opt;
	const char *path;
	int by_run;
	int guess;               /* set by_run from the trace's first chunk */
	int summary;             /* the input is a summary, not a trace */
	char *const *files;      /* several files, each one run: read these */
	size_t nfiles;
	struct agg *agg;         /* NULL when it could not be read */
	FILE *messages;          /* where a thread's warnings wait */
	char *text;
	size_t len;
};

static void *
read_job(void *arg)
{
	struct read_job *j = arg;
	if (j->messages)
		cmd_warn_to(j->messages);
	if (j->nfiles > 1) {
		j->by_run = 1;
		j->agg = read_files(j->opt, j->files, j->nfiles);
		cmd_warn_to(NULL);
		return NULL;
	}
	if (j->summary) {
		/* split by run already, when it was of several */
		j->by_run = 1;
		j->agg = diff_read_summary(j->opt, j->path);
		cmd_warn_to(NULL);
		return NULL;
	}
	/* standard input and pipes can be read only once: split by run
	 * from the start (they are spooled to a file); so is a trace that
	 * looks like a repeated recording */
	if (j->guess)
		j->by_run = !rereadable(j->path) || looks_repeated(j->path);
	j->agg = read_trace(j->opt, j->path, j->by_run);
	cmd_warn_to(NULL);
	return NULL;
}

/* Run the jobs: two at once on two cores, the second in a thread whose
 * messages are printed after the first's, so that they come out in the
 * order of the inputs whatever the timing. */
static void
run_jobs(struct read_job *j, int n)
{
	pthread_t t;
	if (n == 2 && (j[1].messages = open_memstream(&j[1].text, &j[1].len)) != NULL) {
		if (pthread_create(&t, NULL, read_job, &j[1]) == 0) {
			read_job(&j[0]);
			pthread_join(t, NULL);
			fclose(j[1].messages);
			j[1].messages = NULL;
			fputs(j[1].text, stderr);
			free(j[1].text);
			j[1].text = NULL;
			return;
		}
		fclose(j[1].messages);
		j[1].messages = NULL;
		free(j[1].text);
		j[1].text = NULL;
	}
	for (int i = 0; i < n; i++)
		read_job(&j[i]);
}

static int
read_both(struct diff *df)
{
	struct read_job jobs[2];
	memset(jobs, 0, sizeof(jobs));
	for (int s = 0; s < 2; s++) {
		jobs[s].opt = &df->opt->agg;
		jobs[s].path = df->opt->paths[s];
		jobs[s].files = df->opt->files[s];
		jobs[s].nfiles = df->opt->nfiles[s];
		jobs[s].guess = 1;
		for (size_t i = 0; i < jobs[s].nfiles; i++)
			if (diff_is_summary(jobs[s].files[i]) && jobs[s].nfiles > 1)
				cmd_usage_error("%s is a summary: it is a side on its own, "
				                "not one run of several",
				                cmd_display_path(jobs[s].files[i]));
		jobs[s].summary = df->from_summary[s] = diff_is_summary(jobs[s].path);
	}
	if (df->from_summary[0] && df->from_summary[1])
		cmd_usage_error("compares a trace with a summary, or two traces: "
		                "both %s and %s are summaries",
		                cmd_display_path(jobs[0].path), cmd_display_path(jobs[1].path));
	if ((df->from_summary[0] || df->from_summary[1]) &&
	    (df->opt->normalize || df->opt->agg.from || df->opt->agg.to != INT64_MAX))
		cmd_usage_error("--normalize, --from and --to need every instance: "
		                "not with a summary (%s)",
		                cmd_display_path(jobs[df->from_summary[1]].path));
	/* both are read, so that every damaged input is reported */
	run_jobs(jobs, 2);
	df->agg[0] = jobs[0].agg;
	df->agg[1] = jobs[1].agg;
	if (!df->agg[0] || !df->agg[1])
		return -1;
	uint32_t n0 = agg_run(df->agg[0])->runs_seen, n1 = agg_run(df->agg[1])->runs_seen;
	df->runs = n0 >= 2 && n1 >= 2;
	df->divisor[0] = df->divisor[1] = 1;
	if ((n0 >= 2) != (n1 >= 2)) {
		/* runs on one side only: the verdicts would rest on the spread
		 * of one side, and nothing says what one run of the other is
		 * worth against it */
		if (df->opt->nfiles[0] > 1 || df->opt->nfiles[1] > 1)
			cmd_warn("several files on one side are runs: the other side needs "
			         "several runs too (files, or a trace-record --repeat recording)");
		else
			cmd_warn("BEFORE has %u run%s and AFTER %u: comparing run by run needs "
			         "several runs on each side (trace-record --repeat N)",
			         n0 > 1 ? n0 : 1, n0 > 1 ? "s" : "", n1 > 1 ? n1 : 1);
		return -1;
	}
	if (!df->runs)
		return 0;
	if (n0 != n1) {
		/* each operation's count and time add up over the runs: 5 runs
		 * compare with 3 by their means per run */
		df->per_run = 1;
		df->divisor[0] = n0;
		df->divisor[1] = n1;
	}
	/* repeated recordings on both sides: read again what was not split
	 * by run (only then, as that costs a second pass) */
	struct read_job again[2];
	int n = 0, side[2];
	memset(again, 0, sizeof(again));
	for (int s = 0; s < 2; s++) {
		if (jobs[s].by_run)
			continue;
		agg_free(df->agg[s]);
		df->agg[s] = NULL;
		again[n].opt = &df->opt->agg;
		again[n].path = df->opt->paths[s];
		again[n].by_run = 1;
		side[n++] = s;
	}
	run_jobs(again, n);
	for (int i = 0; i < n; i++)
		df->agg[side[i]] = again[i].agg;
	return df->agg[0] && df->agg[1] ? 0 : -1;
}

/* ---- main ---------------------------------------------------------------------------------- */

enum {
	O_FULL = 256, O_NORMALIZE, O_NAME, O_EXCLUDE, O_FROM, O_TO, O_METRIC,
	O_FAIL, O_EXPECT, O_HTML, O_MIN_SHARE,
};

static const struct option longopts[] = {
	{ "csv", no_argument, NULL, 'c' },
	{ "json", no_argument, NULL, 'j' },
	{ "markdown", no_argument, NULL, 'm' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "html", required_argument, NULL, O_HTML },
	{ "report", required_argument, NULL, 'r' },
	{ "top", required_argument, NULL, 'n' },
	{ "full-names", no_argument, NULL, O_FULL },
	{ "normalize", no_argument, NULL, O_NORMALIZE },
	{ "name", required_argument, NULL, O_NAME },
	{ "exclude", required_argument, NULL, O_EXCLUDE },
	{ "kind", required_argument, NULL, 'k' },
	{ "from", required_argument, NULL, O_FROM },
	{ "to", required_argument, NULL, O_TO },
	{ "threshold", required_argument, NULL, 't' },
	{ "alpha", required_argument, NULL, 'a' },
	{ "min-share", required_argument, NULL, O_MIN_SHARE },
	{ "metric", required_argument, NULL, O_METRIC },
	{ "fail-if-slower", required_argument, NULL, O_FAIL },
	{ "expect-speedup", required_argument, NULL, O_EXPECT },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* The regular expressions of --name and --exclude: o->agg points to
 * them once given, so they live as long as the options. */
struct regexes {
	regex_t name, exclude;
};

/* The options into *o; exits on a usage error, --help or --version. */
static void
parse_options(int argc, char **argv, struct diff_options *o, struct regexes *re)
{
	struct agg_options ao = AGG_OPTIONS_INIT;
	/* the peaks are compared, never the operation at them */
	ao.skip = AGG_SKIP_ALLOC_OPS;
	memset(o, 0, sizeof(*o));
	o->agg = ao;
	o->threshold = 0.03;
	o->alpha = 0.01;
	o->min_share = 0.01;
	o->fail_if_slower = -1;
	int c;
	while ((c = getopt_long(argc, argv, ":cjmqr:n:k:t:a:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': o->format = DF_CSV; break;
		case 'j': o->format = DF_JSON; break;
		case 'm': o->format = DF_MARKDOWN; break;
		case 'q': o->quiet = 1; break;
		case O_HTML: o->html = optarg; break;
		case 'r': o->reports |= parse_reports(optarg); break;
		case 'n':
			if (cmd_parse_uint(optarg, &o->top) < 0 || o->top == 0)
				cmd_usage_error("invalid --top '%s'", optarg);
			break;
		case O_FULL: o->full_names = 1; break;
		case O_NORMALIZE: o->normalize = 1; break;
		case O_NAME:
			if (o->agg.name)
				regfree(&re->name);
			compile_regex(&re->name, optarg, "name");
			o->agg.name = &re->name;
			o->name_given = 1;
			break;
		case O_EXCLUDE:
			if (o->agg.exclude)
				regfree(&re->exclude);
			compile_regex(&re->exclude, optarg, "exclude");
			o->agg.exclude = &re->exclude;
			break;
		case 'k': o->kinds |= parse_kinds(optarg); break;
		case O_FROM:
			if (cmd_parse_duration(optarg, &o->agg.from) < 0)
				cmd_usage_error("invalid --from '%s'", optarg);
			break;
		case O_TO:
			if (cmd_parse_duration(optarg, &o->agg.to) < 0)
				cmd_usage_error("invalid --to '%s'", optarg);
			break;
		case 't':
			if (cmd_parse_percent(optarg, &o->threshold) < 0)
				cmd_usage_error("invalid --threshold '%s'", optarg);
			break;
		case 'a': {
			char *end;
			o->alpha = strtod(optarg, &end);
			if (end == optarg || *end || !(o->alpha > 0 && o->alpha < 1))
				cmd_usage_error("invalid --alpha '%s' (between 0 and 1)", optarg);
			break;
		}
		case O_MIN_SHARE:
			if (cmd_parse_percent(optarg, &o->min_share) < 0)
				cmd_usage_error("invalid --min-share '%s'", optarg);
			break;
		case O_METRIC:
			o->metric = parse_metric(optarg);
			o->metric_given = 1;
			break;
		case O_FAIL:
			if (cmd_parse_percent(optarg, &o->fail_if_slower) < 0)
				cmd_usage_error("invalid --fail-if-slower '%s'", optarg);
			break;
		case O_EXPECT:
			if (cmd_parse_factor(optarg, &o->expect_speedup) < 0)
				cmd_usage_error("invalid --expect-speedup '%s'", optarg);
			break;
		case 'h': usage(); exit(cmd_finish(0));
		case 'V': cmd_version();
		default: cmd_bad_option(c, argv);
		}
	}
}

/* BEFORE and AFTER: the two operands, or the files before a "--" and
 * those after it (`before` of them before it, -1 when no "--" parts
 * the sides); and what depends on all the options together. */
static void
take_operands(int argc, char **argv, int before, struct diff_options *o)
{
	if (before < 0) {
		if (argc != 2)
			cmd_usage_error("%s two traces: BEFORE AFTER (or BEFORE... -- AFTER...)",
			                argc < 2 ? "needs" : "compares exactly");
		before = 1;
	} else if (before == 0 || argc - before == 0) {
		cmd_usage_error("needs files on both sides of --: BEFORE... -- AFTER...");
	}
	o->files[0] = argv;
	o->nfiles[0] = (size_t)before;
	o->files[1] = argv + before;
	o->nfiles[1] = (size_t)(argc - before);
	o->paths[0] = argv[0];
	o->paths[1] = argv[before];
	for (int i = 0; i < argc; i++)
		if (strcmp(argv[i], "-") == 0 && argc > 2)
			cmd_usage_error("standard input is one side of two: "
			                "not with several files");
	if (strcmp(o->paths[0], "-") == 0 && strcmp(o->paths[1], "-") == 0)
		cmd_usage_error("only one of BEFORE and AFTER can be standard input");
	if (o->agg.to <= o->agg.from)
		cmd_usage_error("--to must be later than --from");
	o->line_width = o->full_names ? 0 : line_width();
}

/* The options and the files.  BEFORE... -- AFTER...: options end at
 * the "--"; files before it are BEFORE's runs, every word after it
 * AFTER's.  A "--" with no file before it only ends the options, as
 * usual.  Exits on a usage error. */
static void
read_command_line(int argc, char **argv, struct diff_options *o, struct regexes *re)
{
	int sep = argc;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			sep = i;
			break;
		}
	parse_options(sep, argv, o, re);
	int nbefore = sep - optind, split = sep < argc && nbefore > 0;
	/* the files of both sides in one list: BEFORE's move up over the
	 * "--" (getopt has put them just before it) */
	char **operands = argv + (sep < argc ? sep + 1 : optind);
	if (split) {
		for (int i = sep; i > optind; i--)
			argv[i] = argv[i - 1];
		operands = argv + optind + 1;
	}
	take_operands((int)(argv + argc - operands), operands, split ? nbefore : -1, o);
}

/* Read, match, summarise and judge: the exit status, 0 or 1 (a
 * regression), or -1 after a message when a trace could not be read
 * or lacks the figure to judge. */
static int
compare(struct diff *df)
{
	if (read_both(df) < 0)
		return -1;
	diff_match(df);
	diff_summarise(df);
	diff_explain(df);
	diff_guard(df);
	if (diff_gate(df) < 0)
		return -1;
	return df->regression ? 1 : 0;
}

static void
report(struct diff *df)
{
	switch (df->opt->format) {
	case DF_TEXT: diff_text(df); break;
	case DF_CSV: diff_csv(df); break;
	case DF_JSON: diff_json(df); break;
	case DF_MARKDOWN: diff_markdown(df); break;
	}
}

int
main(int argc, char **argv)
{
	struct diff_options opt;
	struct regexes re;
	cmd_init("trace-diff");
	read_command_line(argc, argv, &opt, &re);

	struct diff df;
	memset(&df, 0, sizeof(df));
	df.opt = &opt;
	int status = compare(&df);
	if (status < 0)
		status = EXIT_USAGE;
	else if (!opt.quiet)
		report(&df);
	if (status != EXIT_USAGE && opt.html && diff_html(&df, opt.html) < 0)
		status = EXIT_USAGE;
	diff_free(&df);
	if (opt.agg.name)
		regfree(&re.name);
	if (opt.agg.exclude)
		regfree(&re.exclude);
	return cmd_finish(status);
}
