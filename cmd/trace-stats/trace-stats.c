/* SPDX-License-Identifier: MIT */
/*
 * trace-stats: where does the time go?  Summary tables of traces: a run
 * header, GPU kernels, memory operations, CUDA API calls, ranges,
 * processes, GPU time per device, memory peaks, a per-instance view of
 * one range, and findings.  Text for people, --csv and --json (stable
 * names, integer nanoseconds) for programs.  This file reads the
 * options and the inputs; stats.h lists the others.
 */
#include <getopt.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "stats.h"
#include "common/util.h"
#include "support.h"

static const char *const report_names[R_NREPORTS] = {
	"run", "kernels", "memops", "api", "ranges", "processes", "gpu", "memory",
	"findings",
};

static const char *const sort_names[] = {
	"total", "count", "mean", "median", "p95", "max", "name",
};

/* What the selection options allocate; the aggregation's options point
 * at them. */
struct selection {
	regex_t name_re, exclude_re;
	int64_t *pids, *devices, *streams;
};

static void
free_selection(struct selection *sel, const struct agg_options *o)
{
	free(sel->pids);
	free(sel->devices);
	free(sel->streams);
	if (o->name)
		regfree(&sel->name_re);
	if (o->exclude)
		regfree(&sel->exclude_re);
}

static void
usage(FILE *f)
{
	fprintf(f, "Usage: %s [OPTIONS] [FILE...]\n"
	       "Summarise tracekit traces: where the time goes (stdin when no FILE or -).\n"
	       "\n"
	       "Output:\n"
	       "  -c, --csv            CSV; times in integer ns\n"
	       "  -j, --json           one JSON object; times in integer ns\n"
	       "      --baseline       JSON that trace-diff takes in place of this trace\n"
	       "                       (every row, each run's time, the clock tick)\n"
	       "  -r, --report LIST    run,kernels,memops,api,ranges,processes,gpu,memory,\n"
	       "                       findings (default: every report that has data)\n"
	       "  -n, --top N          at most N rows per table\n"
	       "  -s, --sort KEY       total, count, mean, median, p95, max or name\n"
	       "      --units UNIT     ns, us, ms or s for every time in text\n"
	       "      --full-names     never shorten names in text\n"
	       "      --no-findings    leave out the findings\n"
	       "      --per NAME       per-instance view of range NAME (ProfilerStep:\n"
	       "                       every ProfilerStep#N), with a table of steps\n"
	       "      --steps          the same for the steps found in the trace\n"
	       "      --operators      operator view: self time of CPU ranges, GPU time\n"
	       "                       of the work they launched\n"
	       "      --hist NAME      a histogram of the durations of NAME (log-scaled,\n"
	       "                       percentiles marked) instead of the tables\n"
	       "      --distributed    per rank and step: computation, communication,\n"
	       "                       memory operations, idle, exposed communication\n"
	       "      --approx         constant memory; percentiles within 1%%\n"
	       "  -S, --buffer-size SIZE  memory for exact percentiles (1G); past it,\n"
	       "                       the rows that grow are kept as with --approx\n"
	       "Selection:\n"
	       "      --name REGEX     operations whose name matches (extended regex)\n"
	       "      --exclude REGEX  leave out operations whose name matches\n"
	       "      --pid LIST       events of these processes\n"
	       "      --device LIST    GPU work on these devices\n"
	       "      --stream LIST    GPU work on these CUDA streams\n"
	       "      --from DURATION  events beginning this long after the trace start\n"
	       "      --to DURATION    ... and before this\n"
	       "      --run N          run N of a trace-record --repeat recording\n"
	       "  -h, --help           show this help\n"
	       "  -V, --version        show the version\n"
	       "\n"
	       "Exit status: 0 success, 1 an input could not be read completely\n"
	       "(or --hist NAME found nothing), 2 usage or output error.\n",
	       cmd_name());
}

/* ---- options ------------------------------------------------------------------------------ */

static size_t
parse_list(const char *what, const char *s, int64_t **out)
{
	size_t n = 0, cap = 0;
	int64_t *v = NULL;
	char *copy = strdup(s), *save = NULL;
	if (!copy)
		cmd_die(EXIT_USAGE, "out of memory");
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		uint64_t x;
		if (cmd_parse_uint(t, &x) < 0 || x > INT64_MAX)
			cmd_usage_error("invalid --%s '%s'", what, s);
		int64_t *nv = tkp_grow(v, &cap, n + 1, sizeof(*nv));
		if (!nv)
			cmd_die(EXIT_USAGE, "out of memory");
		v = nv;
		v[n++] = (int64_t)x;
	}
	free(copy);
	if (!n)
		cmd_usage_error("invalid --%s '%s'", what, s);
	*out = v;
	return n;
}

/* "kernel" for "kernels", "process" for "processes": the kinds of
 * trace-dump and trace-diff -k name reports too. */
static int
is_singular(const char *t, const char *report)
{
	size_t n = strlen(t), m = strlen(report);
	return (m == n + 1 && strncmp(t, report, n) == 0 && report[n] == 's') ||
	       (m == n + 2 && strncmp(t, report, n) == 0 && strcmp(report + n, "es") == 0);
}

static unsigned
parse_reports(const char *s)
{
	unsigned mask = 0;
	char *copy = strdup(s), *save = NULL;
	if (!copy)
		cmd_die(EXIT_USAGE, "out of memory");
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int found = 0;
		if (strcmp(t, "all") == 0) {
			mask |= (1u << R_NREPORTS) - 1;
			continue;
		}
		for (int r = 0; r < R_NREPORTS; r++)
			if (strcmp(t, report_names[r]) == 0 || is_singular(t, report_names[r])) {
				mask |= 1u << r;
				found = 1;
			}
		if (!found) {
			cmd_warn("unknown report '%s'", t);
			free(copy);
			cmd_usage_error("reports are: run, kernels, memops, api, ranges, "
			                "processes, gpu, memory, findings, all");
		}
	}
	free(copy);
	if (!mask)
		cmd_usage_error("invalid --report '%s'", s);
	return mask;
}

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

/* Which reports have something to show. */
static unsigned
reports_with_data(struct agg *a)
{
	unsigned m = 1u << R_RUN;
	static const enum report rep[AGG_NTABLES] = { R_KERNELS, R_MEMOPS, R_API, R_RANGES };
	for (size_t i = 0; i < agg_ngroups(a); i++) {
		const struct agg_group *g = agg_group(a, i);
		if (g->s.count)
			m |= 1u << rep[g->table];
	}
	if (agg_nprocesses(a))
		m |= 1u << R_PROCESSES;
	for (size_t i = 0; i < agg_ndevices(a); i++) {
		const struct agg_device *d = agg_device(a, i);
		if (d->ops)
			m |= 1u << R_GPU;
		if (d->has_counter || d->allocs || d->frees)
			m |= 1u << R_MEMORY;
	}
	for (size_t i = 0; i < agg_nprocesses(a); i++) {
		const struct agg_process *p = agg_process(a, i);
		if ((p->has_rusage && p->max_rss) || p->has_rss)
			m |= 1u << R_MEMORY;
	}
	return m;
}

enum {
	O_UNITS = 256, O_FULL, O_NOFIND, O_PER, O_APPROX, O_NAME, O_EXCLUDE,
	O_PID, O_DEVICE, O_STREAM, O_FROM, O_TO, O_RUN, O_STEPS, O_OPERATORS,
	O_HIST,
	O_DISTRIBUTED, O_BASELINE,
};

static const struct option longopts[] = {
	{ "csv", no_argument, NULL, 'c' },
	{ "json", no_argument, NULL, 'j' },
	{ "baseline", no_argument, NULL, O_BASELINE },
	{ "report", required_argument, NULL, 'r' },
	{ "top", required_argument, NULL, 'n' },
	{ "sort", required_argument, NULL, 's' },
	{ "units", required_argument, NULL, O_UNITS },
	{ "full-names", no_argument, NULL, O_FULL },
	{ "no-findings", no_argument, NULL, O_NOFIND },
	{ "per", required_argument, NULL, O_PER },
	{ "steps", no_argument, NULL, O_STEPS },
	{ "operators", no_argument, NULL, O_OPERATORS },
	{ "distributed", no_argument, NULL, O_DISTRIBUTED },
	{ "approx", no_argument, NULL, O_APPROX },
	{ "hist", required_argument, NULL, O_HIST },
	{ "buffer-size", required_argument, NULL, 'S' },
	{ "name", required_argument, NULL, O_NAME },
	{ "exclude", required_argument, NULL, O_EXCLUDE },
	{ "pid", required_argument, NULL, O_PID },
	{ "device", required_argument, NULL, O_DEVICE },
	{ "stream", required_argument, NULL, O_STREAM },
	{ "from", required_argument, NULL, O_FROM },
	{ "to", required_argument, NULL, O_TO },
	{ "run", required_argument, NULL, O_RUN },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static enum sort_key
parse_sort(const char *s)
{
	size_t k;
	for (k = 0; k < sizeof(sort_names) / sizeof(sort_names[0]); k++)
		if (strcmp(s, sort_names[k]) == 0)
			return (enum sort_key)k;
	cmd_usage_error("invalid --sort '%s' (total, count, mean, "
	                "median, p95, max or name)", s);
}

static void
parse_units(struct stats_options *o, const char *s)
{
	static const struct { const char *n; double ns; } u[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
	};
	size_t k;
	for (k = 0; k < 4; k++)
		if (strcmp(s, u[k].n) == 0)
			break;
	if (k == 4)
		cmd_usage_error("invalid --units '%s' (ns, us, ms or s)", s);
	o->unit = u[k].ns;
	o->unit_name = u[k].n;
}

/* The selection options: what the aggregation keeps. */
static void
parse_selection(struct agg_options *ao, struct selection *sel, int c,
                const char *arg)
{
	uint64_t v;
	switch (c) {
	case O_NAME:
		if (ao->name)
			regfree(&sel->name_re);
		compile_regex(&sel->name_re, arg, "name");
		ao->name = &sel->name_re;
		break;
	case O_EXCLUDE:
		if (ao->exclude)
			regfree(&sel->exclude_re);
		compile_regex(&sel->exclude_re, arg, "exclude");
		ao->exclude = &sel->exclude_re;
		break;
	case O_PID:
		free(sel->pids);
		ao->npids = parse_list("pid", arg, &sel->pids);
		ao->pids = sel->pids;
		break;
	case O_DEVICE:
		free(sel->devices);
		ao->ndevices = parse_list("device", arg, &sel->devices);
		ao->devices = sel->devices;
		break;
	case O_STREAM:
		free(sel->streams);
		ao->nstreams = parse_list("stream", arg, &sel->streams);
		ao->streams = sel->streams;
		break;
	case O_FROM:
		if (cmd_parse_duration(arg, &ao->from) < 0)
			cmd_usage_error("invalid --from '%s'", arg);
		break;
	case O_TO:
		if (cmd_parse_duration(arg, &ao->to) < 0)
			cmd_usage_error("invalid --to '%s'", arg);
		break;
	case O_RUN:
		if (cmd_parse_uint(arg, &v) < 0 || v == 0 || v > UINT32_MAX)
			cmd_usage_error("invalid --run '%s'", arg);
		ao->run = (uint32_t)v;
		break;
	}
}

/* The command line into o and sel; returns the index of the first
 * operand.  Exits after --help, --version and usage errors. */
static int
parse_options(int argc, char **argv, struct stats_options *o,
              struct selection *sel)
{
	struct agg_options ao = AGG_OPTIONS_INIT;
	o->agg = ao;
	o->findings = 1;
	o->agg.exact_budget = (size_t)1 << 30;
	int c;
	while ((c = getopt_long(argc, argv, ":cjr:n:s:S:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': o->format = FMT_CSV; break;
		case 'j': o->format = FMT_JSON; break;
		case O_BASELINE: o->baseline = 1; break;
		case 'r': o->reports |= parse_reports(optarg); break;
		case 'n':
			if (cmd_parse_uint(optarg, &o->top) < 0 || o->top == 0)
				cmd_usage_error("invalid --top '%s'", optarg);
			break;
		case 's': o->sort = parse_sort(optarg); break;
		case O_UNITS: parse_units(o, optarg); break;
		case O_FULL: o->full_names = 1; break;
		case O_NOFIND: o->findings = 0; break;
		case O_PER:
			if (!*optarg)
				cmd_usage_error("invalid --per ''");
			o->agg.per = optarg;
			break;
		case O_STEPS: o->agg.steps = 1; break;
		case O_OPERATORS: o->agg.operators = 1; break;
		case O_DISTRIBUTED:
			/* per step too, as TensorBoard's distributed view */
			o->agg.distributed = 1;
			o->agg.steps = 1;
			break;
		case O_APPROX: o->agg.approx = 1; break;
		case O_HIST:
			if (!*optarg)
				cmd_usage_error("invalid --hist ''");
			o->hist = optarg;
			break;
		case 'S':
			/* exact percentiles keep every duration: within -S,
			 * then a sketch */
			if (cmd_parse_size(optarg, &o->agg.exact_budget) < 0 ||
			    o->agg.exact_budget == 0)
				cmd_usage_error("invalid --buffer-size '%s'", optarg);
			break;
		case O_NAME: case O_EXCLUDE: case O_PID: case O_DEVICE:
		case O_STREAM: case O_FROM: case O_TO: case O_RUN:
			parse_selection(&o->agg, sel, c, optarg);
			break;
		case 'h':
			usage(stdout);
			free_selection(sel, &o->agg);
			exit(cmd_finish(0));
		case 'V': cmd_version();
		default: cmd_bad_option(c, argv);
		}
	}
	if (o->agg.to <= o->agg.from)
		cmd_usage_error("--to must be later than --from");
	if (o->baseline) {
		/* what trace-diff compares: every operation, split by run
		 * (a recording with --repeat is then compared run by run) */
		if (o->top || o->reports || o->format == FMT_CSV || o->hist || o->agg.per ||
		    o->agg.steps || o->agg.operators || o->agg.distributed)
			cmd_usage_error("--baseline writes its own JSON: not with --top, "
			                "--report, --csv, --hist, --per, --steps, --operators "
			                "or --distributed");
		o->format = FMT_JSON;
		o->findings = 0;
		o->reports = (1u << R_NREPORTS) - 1;
		o->reports &= ~(1u << R_FINDINGS);
		o->agg.by_run = 1;
	}
	if (o->hist && (o->agg.approx || o->format != FMT_TEXT))
		cmd_usage_error("--hist draws text from every duration: not with "
		                "--approx, --csv or --json");
	o->line_width = o->full_names ? 0 : line_width();
	return optind;
}

/* What the chosen reports do not need is not computed: a script asking
 * for the kernel table does not pay for the rest. */
static void
skip_unwanted(struct stats_options *o)
{
	if (!o->reports && o->format != FMT_CSV)
		return;
	unsigned want = o->reports ? o->reports : STATS_OPS;
	if (!o->findings)
		want &= ~(1u << R_FINDINGS);
	if ((want & 1u << R_FINDINGS) || o->agg.per || o->agg.steps)
		want |= STATS_OPS;
	if (o->agg.operators)
		want |= 1u << R_RANGES;  /* the view's rows are range groups */
	static const enum report rep[AGG_NTABLES] = {
		R_KERNELS, R_MEMOPS, R_API, R_RANGES };
	for (int t = 0; t < AGG_NTABLES; t++)
		if (!(want & 1u << rep[t]))
			o->agg.skip |= AGG_SKIP_TABLE(t);
	if (!(want & ((1u << R_GPU) | (1u << R_FINDINGS))))
		o->agg.skip |= AGG_SKIP_GPU;
	if (!(want & 1u << R_MEMORY))
		o->agg.skip |= AGG_SKIP_MEMORY;
}

/* The reports to print: those asked for, else every one with data and
 * the findings but in CSV, which is then the one table of the
 * operations. */
static unsigned
chosen_reports(const struct stats *st)
{
	unsigned reports = st->opt.reports ? st->opt.reports
	                 : st->opt.format == FMT_CSV ? STATS_OPS
	                 : reports_with_data(st->agg) | 1u << R_FINDINGS;
	if (!st->opt.findings)
		reports &= ~(1u << R_FINDINGS);
	return reports;
}

int
main(int argc, char **argv)
{
	cmd_init("trace-stats");
	struct stats st = { 0 };
	struct selection sel = { 0 };
	int first = parse_options(argc, argv, &st.opt, &sel);
	static char *stdin_only[] = { "-", NULL };
	if (first == argc && isatty(0)) {
		/* a first try, not a pipe: waiting for binary input on the
		 * terminal would look like a hang */
		usage(stderr);
		free_selection(&sel, &st.opt.agg);
		cmd_usage_error("no input: give a FILE, or pipe a trace into standard input");
	}
	/* the findings write times and names as the tables do */
	st.fo = (struct findings_options){ .unit = st.opt.unit, .unit_name = st.opt.unit_name,
	                                   .full_names = st.opt.full_names,
	                                   .cmp = stats_cmp_rows, .cmp_arg = &st.opt.sort };
	st.files = first < argc ? argv + first : stdin_only;
	st.nfiles = first < argc ? argc - first : 1;
	skip_unwanted(&st.opt);
	if (st.opt.baseline && st.nfiles > 1) {
		/* several recordings: each is one run, as trace-diff takes
		 * several files of a side */
		st.opt.agg.by_run = 0;
		st.opt.agg.by_input = 1;
	}

	if (!(st.agg = agg_new(&st.opt.agg)))
		cmd_die(EXIT_USAGE, "out of memory");
	int status = 0;
	for (int i = 0; i < st.nfiles; i++)
		status |= agg_read(st.agg, st.files[i]);
	agg_finish(st.agg);
	/* when nothing could be read, the messages say it all */
	if (st.opt.hist && (!status || agg_run(st.agg)->events_read)) {
		status |= stats_hist(&st, st.opt.hist);
		cmd_check_output(stdout);
	} else if (!status || agg_run(st.agg)->events_read) {
		unsigned reports = chosen_reports(&st);
		if (reports & 1u << R_FINDINGS)
			findings_compute(&st.findings, st.agg, &st.fo);
		switch (st.opt.format) {
		case FMT_TEXT: stats_text(&st, reports); break;
		case FMT_CSV: stats_csv(&st, reports); break;
		case FMT_JSON: stats_json(&st, reports); break;
		}
		cmd_check_output(stdout);
		findings_free(&st.findings);
	}
	agg_free(st.agg);
	free_selection(&sel, &st.opt.agg);
	return cmd_finish(status);
}
