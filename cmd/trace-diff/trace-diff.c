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

struct diff_options diff_opt;

static void
usage(void)
{
	printf("Usage: %s [OPTIONS] BEFORE AFTER\n"
	       "Compare two tracekit traces: what got faster or slower, by how much, and\n"
	       "how sure that is (- reads one of them from stdin).\n"
	       "\n"
	       "Output:\n"
	       "  -c, --csv              CSV; times in integer ns\n"
	       "  -j, --json             one JSON object; times in integer ns\n"
	       "  -m, --markdown         Markdown, for pull-request comments\n"
	       "  -q, --quiet            print nothing: the exit status tells\n"
	       "  -r, --report LIST      summary,groups (default both; CSV: groups)\n"
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
	       "  -t, --threshold PCT    smallest change called faster or slower (5%%)\n"
	       "  -a, --alpha P          significance level of the tests (0.01)\n"
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
	       cmd_name());
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
		else if (strcmp(t, "all") == 0)
			mask |= DR_SUMMARY | DR_GROUPS;
		else {
			free(copy);
			cmd_usage_error("invalid --report '%s' (summary, groups or all)", s);
		}
	}
	free(copy);
	if (!mask)
		cmd_usage_error("invalid --report '%s' (summary, groups or all)", s);
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
		unsigned k = tk_kind_from_name(t);
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

/* Aggregate one trace as trace-stats does; NULL after the reader's
 * message when it could not be read completely. */
static struct agg *
read_trace(const char *path, int by_run)
{
	struct agg_options o = diff_opt.agg;
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
	struct tk_reader *r = tk_reader_new();
	if (!r)
		cmd_die(EXIT_USAGE, "out of memory");
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

/* One trace to read, maybe in a thread of its own. */
struct read_job {
	const char *path;
	int by_run;
	int guess;               /* set by_run from the trace's first chunk */
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
	/* standard input and pipes can be read only once: split by run
	 * from the start (they are spooled to a file); so is a trace that
	 * looks like a repeated recording */
	if (j->guess)
		j->by_run = !rereadable(j->path) || looks_repeated(j->path);
	j->agg = read_trace(j->path, j->by_run);
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
		jobs[s].path = diff_opt.paths[s];
		jobs[s].guess = 1;
	}
	/* both are read, so that every damaged input is reported */
	run_jobs(jobs, 2);
	df->agg[0] = jobs[0].agg;
	df->agg[1] = jobs[1].agg;
	if (!df->agg[0] || !df->agg[1])
		return -1;
	df->runs = agg_run(df->agg[0])->runs_seen >= 2 &&
	           agg_run(df->agg[1])->runs_seen >= 2;
	if (!df->runs)
		return 0;
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
		again[n].path = diff_opt.paths[s];
		again[n].by_run = 1;
		side[n++] = s;
	}
	run_jobs(again, n);
	for (int i = 0; i < n; i++)
		df->agg[side[i]] = again[i].agg;
	return df->agg[0] && df->agg[1] ? 0 : -1;
}

enum {
	O_FULL = 256, O_NORMALIZE, O_NAME, O_EXCLUDE, O_FROM, O_TO, O_METRIC,
	O_FAIL, O_EXPECT,
};

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "csv", no_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "markdown", no_argument, NULL, 'm' },
		{ "quiet", no_argument, NULL, 'q' },
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
		{ "metric", required_argument, NULL, O_METRIC },
		{ "fail-if-slower", required_argument, NULL, O_FAIL },
		{ "expect-speedup", required_argument, NULL, O_EXPECT },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	cmd_init("trace-diff");
	struct agg_options ao = AGG_OPTIONS_INIT;
	diff_opt.agg = ao;
	diff_opt.threshold = 0.05;
	diff_opt.alpha = 0.01;
	diff_opt.fail_if_slower = -1;
	regex_t name_re, exclude_re;
	int c;
	while ((c = getopt_long(argc, argv, ":cjmqr:n:k:t:a:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': diff_opt.format = DF_CSV; break;
		case 'j': diff_opt.format = DF_JSON; break;
		case 'm': diff_opt.format = DF_MARKDOWN; break;
		case 'q': diff_opt.quiet = 1; break;
		case 'r': diff_opt.reports |= parse_reports(optarg); break;
		case 'n':
			if (cmd_parse_uint(optarg, &diff_opt.top) < 0 || diff_opt.top == 0)
				cmd_usage_error("invalid --top '%s'", optarg);
			break;
		case O_FULL: diff_opt.full_names = 1; break;
		case O_NORMALIZE: diff_opt.normalize = 1; break;
		case O_NAME:
			if (diff_opt.agg.name)
				regfree(&name_re);
			compile_regex(&name_re, optarg, "name");
			diff_opt.agg.name = &name_re;
			diff_opt.name_given = 1;
			break;
		case O_EXCLUDE:
			if (diff_opt.agg.exclude)
				regfree(&exclude_re);
			compile_regex(&exclude_re, optarg, "exclude");
			diff_opt.agg.exclude = &exclude_re;
			break;
		case 'k': diff_opt.kinds |= parse_kinds(optarg); break;
		case O_FROM:
			if (cmd_parse_duration(optarg, &diff_opt.agg.from) < 0)
				cmd_usage_error("invalid --from '%s'", optarg);
			break;
		case O_TO:
			if (cmd_parse_duration(optarg, &diff_opt.agg.to) < 0)
				cmd_usage_error("invalid --to '%s'", optarg);
			break;
		case 't':
			if (cmd_parse_percent(optarg, &diff_opt.threshold) < 0)
				cmd_usage_error("invalid --threshold '%s'", optarg);
			break;
		case 'a': {
			char *end;
			diff_opt.alpha = strtod(optarg, &end);
			if (end == optarg || *end || !(diff_opt.alpha > 0 && diff_opt.alpha < 1))
				cmd_usage_error("invalid --alpha '%s' (between 0 and 1)", optarg);
			break;
		}
		case O_METRIC:
			diff_opt.metric = parse_metric(optarg);
			diff_opt.metric_given = 1;
			break;
		case O_FAIL:
			if (cmd_parse_percent(optarg, &diff_opt.fail_if_slower) < 0)
				cmd_usage_error("invalid --fail-if-slower '%s'", optarg);
			break;
		case O_EXPECT:
			if (cmd_parse_factor(optarg, &diff_opt.expect_speedup) < 0)
				cmd_usage_error("invalid --expect-speedup '%s'", optarg);
			break;
		case 'h': usage(); return cmd_finish(0);
		case 'V': cmd_version();
		default: cmd_bad_option(c, argv);
		}
	}
	if (argc - optind != 2)
		cmd_usage_error("%s two traces: BEFORE AFTER",
		                argc - optind < 2 ? "needs" : "compares exactly");
	diff_opt.paths[0] = argv[optind];
	diff_opt.paths[1] = argv[optind + 1];
	if (strcmp(diff_opt.paths[0], "-") == 0 && strcmp(diff_opt.paths[1], "-") == 0)
		cmd_usage_error("only one of BEFORE and AFTER can be standard input");
	if (diff_opt.agg.to <= diff_opt.agg.from)
		cmd_usage_error("--to must be later than --from");
	diff_opt.line_width = diff_opt.full_names ? 0 : line_width();

	struct diff df;
	memset(&df, 0, sizeof(df));
	int status = 0;
	if (read_both(&df) < 0) {
		status = EXIT_USAGE;
	} else {
		diff_match(&df);
		diff_summarise(&df);
		if (diff_gate(&df) < 0) {
			status = EXIT_USAGE;
		} else {
			status = df.regression ? 1 : 0;
			if (!diff_opt.quiet) {
				switch (diff_opt.format) {
				case DF_TEXT: diff_text(&df); break;
				case DF_CSV: diff_csv(&df); break;
				case DF_JSON: diff_json(&df); break;
				case DF_MARKDOWN: diff_markdown(&df); break;
				}
			}
		}
	}
	diff_free(&df);
	if (diff_opt.agg.name)
		regfree(&name_re);
	if (diff_opt.agg.exclude)
		regfree(&exclude_re);
	return cmd_finish(status);
}
