/* SPDX-License-Identifier: MIT */
/*
 * trace-stats: where does the time go?  Summary tables of traces: a run
 * header, GPU kernels, memory operations, CUDA API calls, ranges,
 * processes, GPU time per device, memory peaks, a per-instance view of
 * one range, and findings.  Text for people, --csv and --json (stable
 * names, integer nanoseconds) for programs.  The figures come from
 * aggregate.c; this file chooses, orders and prints them.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <jansson.h>

#include "aggregate.h"
#include "table.h"
#include "util.h"

enum format { FMT_TEXT, FMT_CSV, FMT_JSON };

enum report {
	R_RUN, R_KERNELS, R_MEMOPS, R_API, R_RANGES, R_PROCESSES, R_GPU,
	R_MEMORY, R_FINDINGS, R_NREPORTS
};

static const char *const report_names[R_NREPORTS] = {
	"run", "kernels", "memops", "api", "ranges", "processes", "gpu", "memory",
	"findings",
};

enum sort_key { S_TOTAL, S_COUNT, S_MEAN, S_MEDIAN, S_P95, S_MAX, S_NAME };

static const char *const sort_names[] = {
	"total", "count", "mean", "median", "p95", "max", "name",
};

struct options {
	enum format format;
	unsigned reports;        /* bit per report; 0 = every one with data */
	uint64_t top;            /* 0 = all rows */
	enum sort_key sort;
	double unit;             /* ns per unit; 0 = readable per value */
	const char *unit_name;
	int findings;
	int full_names;
	size_t line_width;       /* text tables are cut to this; 0 = never */
	struct agg_options agg;
};

static struct options opt;

static void
usage(void)
{
	printf("Usage: %s [OPTIONS] [FILE...]\n"
	       "Summarise tracekit traces: where the time goes (stdin when no FILE or -).\n"
	       "\n"
	       "Output:\n"
	       "  -c, --csv            CSV; times in integer ns\n"
	       "  -j, --json           one JSON object; times in integer ns\n"
	       "  -r, --report LIST    run,kernels,memops,api,ranges,processes,gpu,memory,\n"
	       "                       findings (default: every report that has data)\n"
	       "  -n, --top N          at most N rows per table\n"
	       "  -s, --sort KEY       total, count, mean, median, p95, max or name\n"
	       "      --units UNIT     ns, us, ms or s for every time in text\n"
	       "      --full-names     never shorten names in text\n"
	       "      --no-findings    leave out the findings\n"
	       "      --per NAME       per-instance view of range NAME\n"
	       "      --approx         constant memory; percentiles within 1%%\n"
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
	       "Exit status: 0 success, 1 an input could not be read completely,\n"
	       "2 usage or output error.\n",
	       cmd_name);
}

/* ---- formatting ------------------------------------------------------------- */

static char *
fmt_time(char *buf, size_t n, double ns)
{
	if (opt.unit > 0) {
		if (opt.unit == 1)
			snprintf(buf, n, "%.0f", ns);
		else
			snprintf(buf, n, "%.3f", ns / opt.unit);
		return buf;
	}
	double a = fabs(ns);
	if (a < 1e3)
		snprintf(buf, n, "%.0f ns", ns);
	else if (a < 1e6)
		snprintf(buf, n, "%.3f us", ns / 1e3);
	else if (a < 1e9)
		snprintf(buf, n, "%.3f ms", ns / 1e6);
	else
		snprintf(buf, n, "%.3f s", ns / 1e9);
	return buf;
}

/* Column title for a time: "Total" or "Total [ms]". */
static const char *
time_title(const char *title)
{
	static char bufs[16][32];
	static unsigned next;
	if (opt.unit == 0)
		return title;
	char *b = bufs[next++ % 16];
	snprintf(b, sizeof(bufs[0]), "%s [%s]", title, opt.unit_name);
	return b;
}

static json_int_t
ns_int(double ns)
{
	if (!(ns == ns))
		return 0;
	if (ns >= 9.2e18)
		return INT64_MAX;
	if (ns <= -9.2e18)
		return INT64_MIN;
	return (json_int_t)llround(ns);
}

static double
pct(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0;
}

/* A name for people: a kernel's return type and parameter list are
 * dropped when it is a template (the parameters repeat the template
 * arguments); tables then cut what does not fit the line.  `max` > 0
 * cuts here (findings).  Returns a buffer valid until the next call. */
static const char *
short_name(const char *name, size_t max)
{
	static char *buf;
	static size_t cap;
	if (opt.full_names)
		return name;
	size_t len = strlen(name);
	if (cap < len + 4) {
		cap = len + 4;
		buf = realloc(buf, cap);
		if (!buf)
			cmd_die(EXIT_USAGE, "out of memory");
	}
	const char *s = name;
	if (strncmp(s, "void ", 5) == 0 && strchr(s, '<'))
		s += 5;
	size_t n = strlen(s);
	if (n && s[n - 1] == ')') {
		/* find the '(' that opens the final parameter list */
		int depth = 0;
		size_t i = n;
		while (i-- > 0) {
			if (s[i] == ')')
				depth++;
			else if (s[i] == '(' && --depth == 0)
				break;
		}
		if (i < n && i > 0 && memchr(s, '<', i) && s[i - 1] == '>')
			n = i;
	}
	if (max && n > max) {
		size_t keep = max - 3;
		/* do not cut inside a UTF-8 sequence */
		while (keep > 0 && ((unsigned char)s[keep] & 0xc0) == 0x80)
			keep--;
		memcpy(buf, s, keep);
		memcpy(buf + keep, "...", 4);
		return buf;
	}
	memcpy(buf, s, n);
	buf[n] = 0;
	return buf;
}

static const char *
display_name(const char *name)
{
	return short_name(name, 0);
}

/* Names in the one-line findings. */
static const char *
finding_name(const char *name)
{
	return short_name(name, 60);
}

static const char *
exit_text(char *buf, size_t n, unsigned how, int32_t code, uint32_t sig)
{
	if (how == TK_EXIT_NORMAL)
		snprintf(buf, n, "%d", code);
	else if (how == TK_EXIT_SIGNAL)
		snprintf(buf, n, "signal %u", sig);
	else
		snprintf(buf, n, "unknown");
	return buf;
}

/* ---- rows of the operation tables ------------------------------------------ */

static const char *const table_titles[AGG_NTABLES] = {
	"GPU kernels", "Memory operations", "CUDA API calls",
	"Ranges (NVTX, CPU operators, annotations)",
};

static const char *const table_keys[AGG_NTABLES] = {
	"kernels", "memops", "api", "ranges",
};

static double
sort_value(const struct agg_group *g)
{
	switch (opt.sort) {
	case S_TOTAL: return (double)g->s.total;
	case S_COUNT: return (double)g->s.count;
	case S_MEAN: return g->s.mean;
	case S_MEDIAN: return g->s.p50;
	case S_P95: return g->s.p95;
	case S_MAX: return (double)g->s.max;
	case S_NAME: break;
	}
	return 0;
}

static int
cmp_rows(const void *x, const void *y)
{
	const struct agg_group *a = *(struct agg_group *const *)x;
	const struct agg_group *b = *(struct agg_group *const *)y;
	if (opt.sort != S_NAME) {
		double va = sort_value(a), vb = sort_value(b);
		if (va != vb)
			return va > vb ? -1 : 1;
	}
	int c = strcmp(a->name, b->name);
	if (c)
		return c;
	c = strcmp(a->domain, b->domain);
	return c ? c : (int)a->kind - (int)b->kind;
}

struct rows {
	struct agg_group **v;
	size_t n;                /* all rows */
	size_t shown;            /* after --top */
	int64_t total;           /* time of all rows */
	uint64_t count;
};

static struct rows
table_rows(struct agg *a, enum agg_table t)
{
	struct rows r = { 0 };
	r.v = calloc(agg_ngroups(a) + 1, sizeof(*r.v));
	if (!r.v)
		cmd_die(EXIT_USAGE, "out of memory");
	for (size_t i = 0; i < agg_ngroups(a); i++) {
		struct agg_group *g = agg_group(a, i);
		if (g->table != t || g->s.count == 0)
			continue;
		r.v[r.n++] = g;
		if (__builtin_add_overflow(r.total, g->s.total, &r.total))
			r.total = INT64_MAX;
		r.count += g->s.count;
	}
	qsort(r.v, r.n, sizeof(*r.v), cmp_rows);
	r.shown = opt.top && opt.top < r.n ? opt.top : r.n;
	return r;
}

static int
has_domains(const struct rows *r)
{
	for (size_t i = 0; i < r->n; i++)
		if (*r->v[i]->domain)
			return 1;
	return 0;
}

static int
has_async(const struct rows *r)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i]->kind == TK_ASYNC_RANGE)
			return 1;
	return 0;
}

static double
bandwidth(const struct agg_group *g)
{
	/* bytes per second over the time the operations took */
	return g->s.total > 0 ? (double)g->bytes * 1e9 / (double)g->s.total : 0;
}

static double
mean_bandwidth(const struct agg_group *g)
{
	return g->rate_n ? g->rate_sum / (double)g->rate_n * 1e9 : 0;
}

/* ---- per-instance children ---------------------------------------------------- */

struct child_desc {
	int rank;                /* display order: ranges, kernels, copies, API */
	const char *kind, *domain, *name;
};

static struct child_desc
child_desc(struct agg *a, const struct perinst_child *c)
{
	struct child_desc d = { 0, "gpu", "", "" };
	if (c->group == PERINST_ALL_KERNELS) {
		d.rank = 1;
		d.name = "all kernels";
		return d;
	}
	if (c->group == PERINST_ALL_COPIES) {
		d.rank = 3;
		d.name = "all copies and memsets";
		return d;
	}
	const struct agg_group *g = agg_group(a, c->group);
	static const int rank[AGG_NTABLES] = { 2, 4, 5, 0 };
	d.rank = rank[g->table];
	d.kind = tk_kind_name(g->kind);
	d.domain = g->domain;
	d.name = g->name;
	return d;
}

static struct agg *sort_agg;
static const struct perinst_result *sort_per;

static int
cmp_children(const void *x, const void *y)
{
	const struct perinst_child *a = &sort_per->children[*(const size_t *)x];
	const struct perinst_child *b = &sort_per->children[*(const size_t *)y];
	struct child_desc da = child_desc(sort_agg, a), db = child_desc(sort_agg, b);
	if (da.rank != db.rank)
		return da.rank - db.rank;
	if (a->time.total != b->time.total)
		return a->time.total > b->time.total ? -1 : 1;
	return strcmp(da.name, db.name);
}

/* Indices of the children in display order (caller frees). */
static size_t *
children_order(struct agg *a, const struct perinst_result *p)
{
	size_t *order = calloc(p->nchildren + 1, sizeof(*order));
	if (!order)
		cmd_die(EXIT_USAGE, "out of memory");
	for (size_t i = 0; i < p->nchildren; i++)
		order[i] = i;
	sort_agg = a;
	sort_per = p;
	qsort(order, p->nchildren, sizeof(*order), cmp_children);
	return order;
}

/* ---- findings ------------------------------------------------------------------ */

struct finding {
	const char *type;        /* bottleneck, hotspot, variance, warmup,
	                            gpu_idle, dropped */
	const char *report;
	char *name;
	double value;
	char *message;
};

static struct finding *findings;
static size_t nfindings;

static void
add_finding(const char *type, const char *report, const char *name,
            double value, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void
add_finding(const char *type, const char *report, const char *name,
            double value, const char *fmt, ...)
{
	findings = realloc(findings, (nfindings + 1) * sizeof(*findings));
	if (!findings)
		cmd_die(EXIT_USAGE, "out of memory");
	struct finding *f = &findings[nfindings++];
	f->type = type;
	f->report = report;
	f->name = strdup(name ? name : "");
	f->value = value;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&f->message, fmt, ap) < 0 || !f->name)
		cmd_die(EXIT_USAGE, "out of memory");
	va_end(ap);
}

static const char *const table_nouns[AGG_NTABLES] = {
	"GPU kernel time", "memory operation time", "CUDA API time", "range time",
};

/* How many findings of one kind to list per table before saying "N more". */
#define FINDINGS_PER_TABLE 3

static void
table_findings(struct agg *a, enum agg_table t)
{
	struct rows r = table_rows(a, t);
	char b1[32], b2[32];
	/* share of the table: nested ranges contain each other, so their
	 * shares say nothing (--per gives shares of an instance instead) */
	if (t != AGG_RANGES && r.n >= 2) {
		unsigned listed = 0;
		for (size_t i = 0; i < r.n; i++) {
			struct agg_group *g = r.v[i];
			double p = pct((double)g->s.total, (double)r.total);
			/* and only what costs the run something: 5 % of its wall
			 * time (90 % of 1 ms of copies is no bottleneck) */
			if (p < 20 || listed == FINDINGS_PER_TABLE ||
			    (double)g->s.total < 0.05 * (double)agg_wall(a))
				continue;
			listed++;
			add_finding(p >= 50 ? "bottleneck" : "hotspot", table_keys[t],
			            g->name, p, "%s takes %.1f%% of %s (%s)",
			            finding_name(g->name), p, table_nouns[t],
			            fmt_time(b1, sizeof(b1), (double)g->s.total));
		}
	}
	/* copies and memsets of different sizes share a group: their
	 * durations vary by design, so no variance or warm-up findings */
	if (t == AGG_MEMOPS) {
		free(r.v);
		return;
	}
	/* high variance, among the groups that matter (>= 5 % of the time) */
	unsigned listed = 0, more = 0;
	for (size_t i = 0; i < r.n; i++) {
		struct agg_group *g = r.v[i];
		if (g->s.count < 5 || pct((double)g->s.total, (double)r.total) < 5)
			continue;
		double ratio = g->s.min > 0 ? (double)g->s.max / (double)g->s.min
		                            : (g->s.max > 0 ? INFINITY : 1);
		double cv = g->s.mean > 0 ? g->s.std / g->s.mean : 0;
		if (!(ratio > 2 || cv > 0.5))
			continue;
		if (listed == FINDINGS_PER_TABLE) {
			more++;
			continue;
		}
		listed++;
		add_finding("variance", table_keys[t], g->name, cv,
		            "%s varies: max/min %s, CV %.2f (min %s, max %s)",
		            finding_name(g->name),
		            isinf(ratio) ? "inf" : (snprintf(b2, sizeof(b2), "%.1f", ratio), b2),
		            cv, fmt_time(b1, sizeof(b1), (double)g->s.min),
		            fmt_time((char[32]){ 0 }, 32, (double)g->s.max));
	}
	/* warm-up: the first instance much slower than the median */
	unsigned wl = 0;
	for (size_t i = 0; i < r.n; i++) {
		struct agg_group *g = r.v[i];
		/* and worth the time: the excess is 1 % of the table's */
		if (g->s.count < 3 || g->s.p50 <= 0 ||
		    (double)g->first_dur < 2 * g->s.p50 ||
		    (double)g->first_dur - g->s.p50 < 0.01 * (double)r.total)
			continue;
		if (wl == FINDINGS_PER_TABLE) {
			more++;
			continue;
		}
		wl++;
		double x = (double)g->first_dur / g->s.p50;
		add_finding("warmup", table_keys[t], g->name, x,
		            "%s: the first instance took %s, %.1fx the median %s",
		            finding_name(g->name),
		            fmt_time(b1, sizeof(b1), (double)g->first_dur), x,
		            fmt_time(b2, sizeof(b2), g->s.p50));
	}
	free(r.v);
}

static void
compute_findings(struct agg *a)
{
	const struct agg_run *run = agg_run(a);
	char b1[32], b2[32];
	if (run->dropped)
		add_finding("dropped", "run", "", (double)run->dropped,
		            "the recorder dropped %" PRIu64 " events: figures "
		            "undercount what ran", run->dropped);
	if (run->skipped)
		add_finding("dropped", "run", "", (double)run->skipped,
		            "%" PRIu64 " events of kinds this version does not "
		            "know were skipped", run->skipped);
	for (int t = 0; t < AGG_NTABLES; t++)
		table_findings(a, (enum agg_table)t);
	int64_t wall = agg_wall(a);
	for (size_t i = 0; i < agg_ndevices(a); i++) {
		const struct agg_device *d = agg_device(a, i);
		if (!d->ops || wall <= 0)
			continue;
		double idle = pct((double)(wall - d->busy), (double)wall);
		if (idle > 25) {
			char name[64];
			snprintf(name, sizeof(name), "GPU %" PRId64, d->index);
			add_finding("gpu_idle", "gpu", name, idle,
			            "%s is idle %.1f%% of the run (%s of %s)",
			            d->index >= 0 ? name : "an unknown GPU", idle,
			            fmt_time(b1, sizeof(b1), (double)(wall - d->busy)),
			            fmt_time(b2, sizeof(b2), (double)wall));
		}
	}
	const struct perinst_result *p = agg_per(a);
	if (p && p->dur.count) {
		double inst_total = (double)p->dur.total;
		unsigned listed = 0;
		size_t *order = children_order(a, p);
		for (size_t i = 0; i < p->nchildren && listed < FINDINGS_PER_TABLE; i++) {
			const struct perinst_child *c = &p->children[order[i]];
			struct child_desc d = child_desc(a, c);
			/* ranges and API calls: what the thread spends each
			 * instance on (GPU work runs beside it) */
			if (d.rank != 0 && d.rank != 5)
				continue;
			double share = pct((double)c->time.total, inst_total);
			if (share < 20 || share > 99.5)
				continue;
			listed++;
			add_finding(share >= 50 ? "bottleneck" : "hotspot", "per",
			            d.name, share, "%s takes %.1f%% of each %s",
			            finding_name(d.name), share, opt.agg.per);
		}
		free(order);
	}
}

/* ---- text ---------------------------------------------------------------------- */

static int printed_section;

/* A section title, after a blank line unless it comes first. */
static void
text_section(const char *title)
{
	printf("%s%s\n", printed_section++ ? "\n" : "", title);
}

/* The other metadata as key=value, wrapped to the line width, long
 * values cut (--json has them whole), at most a few lines. */
static void
text_metadata(const struct agg_run *run)
{
	enum { MAX_VALUE = 40, MAX_LINES = 4 };
	size_t width = opt.line_width ? opt.line_width : SIZE_MAX;
	size_t col = 0, lines = 0, shown = 0, total = 0;
	for (size_t i = 0; i < run->nmeta; i++) {
		const char *k = run->meta[i].key, *v = run->meta[i].value;
		if (!strcmp(k, "command") || !strcmp(k, "host") ||
		    !strcmp(k, "label") || !strcmp(k, "labels"))
			continue;
		total++;
		if (lines == MAX_LINES)
			continue;
		char item[MAX_VALUE + 256];
		int vlen = (int)strlen(v);
		int cut = !opt.full_names && vlen > MAX_VALUE;
		snprintf(item, sizeof(item), "%.200s=%.*s%s", k,
		         cut ? MAX_VALUE - 3 : vlen, v, cut ? "..." : "");
		size_t len = strlen(item);
		if (col && col + 1 + len > width) {
			putchar('\n');
			col = 0;
			if (++lines == MAX_LINES)
				continue;
		}
		if (col == 0)
			col = (size_t)printf("  %-10s", lines ? "" : "metadata");
		else
			col += (size_t)printf(" ");
		col += (size_t)printf("%s", item);
		shown++;
	}
	if (col)
		putchar('\n');
	if (shown < total)
		printf("  %-10s(%zu more in --json)\n", "", total - shown);
}

static void
text_run(struct agg *a, char **files, int nfiles)
{
	const struct agg_run *run = agg_run(a);
	char b[64];
	text_section("Run");
	printf("  %-10s", nfiles > 1 ? "inputs" : "input");
	for (int i = 0; i < nfiles; i++)
		printf("%s%s", i ? ", " : "", cmd_display_path(files[i]));
	if (run->scopes > (unsigned)nfiles)
		printf(" (%u traces)", run->scopes);
	putchar('\n');
	/* commands, hosts and labels: from metadata, else from processes */
	static const char *const keys[] = { "command", "host", "label" };
	static const char *const titles[] = { "command", "host", "labels" };
	for (int k = 0; k < 3; k++) {
		int n = 0;
		for (size_t i = 0; i < run->nmeta; i++) {
			if (strcmp(run->meta[i].key, keys[k]) != 0 &&
			    !(k == 2 && strcmp(run->meta[i].key, "labels") == 0))
				continue;
			printf("  %-10s%s\n", n++ ? "" : titles[k], run->meta[i].value);
		}
		if (n)
			continue;
		for (size_t i = 0; i < agg_nprocesses(a) && n < 4; i++) {
			const struct agg_process *p = agg_process(a, i);
			const char *v = k == 0 ? p->command : k == 1 ? p->host : p->label;
			if (!*v)
				continue;
			int dup = 0;
			for (size_t j = 0; j < i; j++) {
				const struct agg_process *q = agg_process(a, j);
				const char *w = k == 0 ? q->command : k == 1 ? q->host : q->label;
				dup |= strcmp(v, w) == 0;
			}
			if (!dup)
				printf("  %-10s%s\n", n++ ? "" : titles[k], v);
		}
	}
	printf("  %-10s%s", "wall", fmt_time(b, sizeof(b), (double)agg_wall(a)));
	putchar('\n');
	printf("  %-10s%zu", "processes", agg_nprocesses(a));
	for (size_t i = 0; i < agg_nprocesses(a) && i < 8; i++)
		printf("%s%" PRId64, i ? ", " : " (pid ", agg_process(a, i)->pid);
	if (agg_nprocesses(a) > 8)
		printf(", ...");
	printf("%s\n", agg_nprocesses(a) ? ")" : "");
	size_t ngpus = 0;
	for (size_t i = 0; i < agg_ndevices(a); i++)
		ngpus += agg_device(a, i)->index >= 0;
	printf("  %-10s%zu", "GPUs", ngpus);
	for (size_t i = 0, n = 0; i < agg_ndevices(a); i++) {
		const struct agg_device *d = agg_device(a, i);
		if (d->index < 0)
			continue;
		printf("%s%" PRId64 " %s%s%s", n++ ? ", " : ": GPU ", d->index, d->name,
		       *d->host ? " on " : "", d->host);
	}
	putchar('\n');
	printf("  %-10s%" PRIu64, "events", run->events);
	if (run->events != run->events_read)
		printf(" of %" PRIu64 " read", run->events_read);
	/* kinds by count, largest first */
	unsigned order[16];
	int n = 0;
	for (unsigned k = 1; k <= TK_KIND_MAX; k++)
		if (run->kind[k])
			order[n++] = k;
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && run->kind[order[j]] > run->kind[order[j - 1]]; j--) {
			unsigned t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (int i = 0; i < n; i++)
		printf("%s%s %" PRIu64, i ? ", " : ": ", tk_kind_name(order[i]),
		       run->kind[order[i]]);
	putchar('\n');
	if (!run->dropped && !run->skipped) {
		printf("  %-10snone\n", "dropped");
	} else {
		printf("  %-10s%" PRIu64 " events", "dropped", run->dropped);
		for (size_t i = 0; i < run->ndrops; i++)
			printf("%s%" PRIu64 " %s", i ? ", " : " (", run->drops[i].count,
			       *run->drops[i].reason ? run->drops[i].reason : "no reason given");
		if (run->ndrops)
			putchar(')');
		if (run->skipped)
			printf("; %" PRIu64 " of unknown kinds skipped", run->skipped);
		putchar('\n');
	}
	if (run->runs_seen) {
		/* a repeated recording: the wall time of each run */
		printf("  %-10s%u:", "runs", run->runs_seen);
		for (uint32_t i = 0; i < run->runs_seen && i < 10; i++)
			printf("%s %s", i ? "," : "", fmt_time(b, sizeof(b), (double)run->run_wall[i]));
		printf("%s\n", run->runs_seen > 10 ? ", ..." : "");
	}
	if (run->run_missing)
		printf("  %-10sno run %u in some of the input\n", "note", opt.agg.run);
	text_metadata(run);
}

enum {
	C_PCT, C_TOTAL, C_COUNT, C_MEAN, C_STD, C_MIN, C_MED, C_P95, C_P99,
	C_MAX, C_BYTES, C_BW, C_MBW, C_KIND, C_DOMAIN, C_NAME, C_NCOLS
};

static void
text_ops(struct agg *a, enum agg_table t, int force)
{
	struct rows r = table_rows(a, t);
	char b[64];
	char title[160];
	if (!r.n) {
		if (force) {
			snprintf(title, sizeof(title), "%s: none", table_titles[t]);
			text_section(title);
		}
		free(r.v);
		return;
	}
	snprintf(title, sizeof(title), "%s: %" PRIu64 " in %zu group%s, %s in all",
	         table_titles[t], r.count, r.n, r.n == 1 ? "" : "s",
	         fmt_time(b, sizeof(b), (double)r.total));
	text_section(title);
	struct table_col cols[C_NCOLS] = {
		{ "Time %", 0 }, { time_title("Total"), 0 }, { "Count", 0 },
		{ time_title("Mean"), 0 }, { time_title("StdDev"), 0 },
		{ time_title("Min"), 0 }, { time_title("Median"), 0 },
		{ time_title("P95"), 0 }, { time_title("P99"), 0 },
		{ time_title("Max"), 0 }, { "Bytes", 0 }, { "Bandwidth", 0 },
		{ "Mean BW", 0 }, { "Kind", 1 }, { "Domain", 1 }, { "Name", 1 },
	};
	struct table tb;
	table_init(&tb, cols, C_NCOLS);
	int domains = t == AGG_RANGES && has_domains(&r);
	int kinds = t == AGG_RANGES && has_async(&r);
	for (size_t i = 0; i < r.shown; i++) {
		const struct agg_group *g = r.v[i];
		const struct summary *s = &g->s;
		table_row(&tb);
		table_set(&tb, C_PCT, "%.1f", pct((double)s->total, (double)r.total));
		table_set(&tb, C_TOTAL, "%s", fmt_time(b, sizeof(b), (double)s->total));
		table_set(&tb, C_COUNT, "%" PRIu64, s->count);
		table_set(&tb, C_MEAN, "%s", fmt_time(b, sizeof(b), s->mean));
		table_set(&tb, C_STD, "%s", fmt_time(b, sizeof(b), s->std));
		table_set(&tb, C_MIN, "%s", fmt_time(b, sizeof(b), (double)s->min));
		table_set(&tb, C_MED, "%s", fmt_time(b, sizeof(b), s->p50));
		table_set(&tb, C_P95, "%s", fmt_time(b, sizeof(b), s->p95));
		table_set(&tb, C_P99, "%s", fmt_time(b, sizeof(b), s->p99));
		table_set(&tb, C_MAX, "%s", fmt_time(b, sizeof(b), (double)s->max));
		if (t == AGG_MEMOPS) {
			table_set(&tb, C_BYTES, "%s", cmd_fmt_bytes(b, sizeof(b), (double)g->bytes));
			table_set(&tb, C_BW, "%s", cmd_fmt_rate(b, sizeof(b), bandwidth(g)));
			table_set(&tb, C_MBW, "%s", cmd_fmt_rate(b, sizeof(b), mean_bandwidth(g)));
		}
		if (kinds)
			table_set(&tb, C_KIND, "%s", g->kind == TK_ASYNC_RANGE ? "async" : "push/pop");
		if (domains)
			table_set(&tb, C_DOMAIN, "%s", *g->domain ? g->domain : "-");
		table_set(&tb, C_NAME, "%s", display_name(g->name));
	}
	tb.max_width = opt.line_width;
	table_print(&tb, stdout, "  ");
	table_free(&tb);
	if (r.shown < r.n) {
		int64_t rest = 0;
		uint64_t cnt = 0;
		for (size_t i = r.shown; i < r.n; i++) {
			rest += r.v[i]->s.total;
			cnt += r.v[i]->s.count;
		}
		printf("  ... %zu more (%" PRIu64 " instances, %s, %.1f%% of the time)\n",
		       r.n - r.shown, cnt, fmt_time(b, sizeof(b), (double)rest),
		       pct((double)rest, (double)r.total));
	}
	free(r.v);
	cmd_check_output(stdout);
}

static void
text_processes(struct agg *a)
{
	static const struct table_col cols[] = {
		{ "PID", 0 }, { "PPID", 0 }, { "Wall", 0 }, { "User", 0 },
		{ "System", 0 }, { "CPU %", 0 }, { "Max RSS", 0 }, { "Exit", 1 },
		{ "Host", 1 }, { "Label", 1 }, { "Command", 1 },
	};
	char b[64];
	struct table tb;
	struct table_col tc[11];
	memcpy(tc, cols, sizeof(tc));
	tc[2].title = time_title("Wall");
	tc[3].title = time_title("User");
	tc[4].title = time_title("System");
	table_init(&tb, tc, 11);
	for (size_t i = 0; i < agg_nprocesses(a); i++) {
		const struct agg_process *p = agg_process(a, i);
		table_row(&tb);
		table_set(&tb, 0, "%" PRId64, p->pid);
		table_set(&tb, 1, "%" PRId64, p->ppid);
		if (p->has_rusage) {
			table_set(&tb, 2, "%s", fmt_time(b, sizeof(b), (double)p->wall));
			table_set(&tb, 3, "%s", fmt_time(b, sizeof(b), (double)p->utime));
			table_set(&tb, 4, "%s", fmt_time(b, sizeof(b), (double)p->stime));
			table_set(&tb, 5, "%.1f", pct((double)(p->utime + p->stime),
			                             (double)p->wall));
			table_set(&tb, 6, "%s", cmd_fmt_bytes(b, sizeof(b), (double)p->max_rss));
			table_set(&tb, 7, "%s", exit_text(b, sizeof(b), p->exit,
			                                  p->exit_code, p->signal));
		} else {
			table_set(&tb, 2, "-");
			table_set(&tb, 7, "-");
		}
		table_set(&tb, 8, "%s", p->host);
		table_set(&tb, 9, "%s", p->label);
		table_set(&tb, 10, "%s", *p->command ? p->command : p->name);
	}
	text_section("Processes");
	tb.max_width = opt.line_width;
	table_print(&tb, stdout, "  ");
	table_free(&tb);
}

static void
text_gpus(struct agg *a)
{
	int64_t wall = agg_wall(a);
	char b[64];
	static const struct table_col cols[] = {
		{ "GPU", 0 }, { "Busy", 0 }, { "Busy %", 0 }, { "Kernels", 0 },
		{ "Copies", 0 }, { "Overlap", 0 }, { "Idle", 0 }, { "Idle %", 0 },
		{ "Ops", 0 }, { "Device", 1 },
	};
	struct table_col tc[10];
	memcpy(tc, cols, sizeof(tc));
	for (int c = 1; c <= 6; c++)
		if (c != 2)
			tc[c].title = time_title(cols[c].title);
	struct table tb;
	table_init(&tb, tc, 10);
	int inexact = 0;
	for (size_t i = 0; i < agg_ndevices(a); i++) {
		const struct agg_device *d = agg_device(a, i);
		if (!d->ops)
			continue;
		table_row(&tb);
		if (d->index >= 0)
			table_set(&tb, 0, "%" PRId64, d->index);
		else
			table_set(&tb, 0, "?");
		table_set(&tb, 1, "%s%s", fmt_time(b, sizeof(b), (double)d->busy),
		          d->overlap ? "*" : "");
		inexact |= d->overlap;
		table_set(&tb, 2, "%.1f", pct((double)d->busy, (double)wall));
		table_set(&tb, 3, "%s", fmt_time(b, sizeof(b), (double)d->kernel));
		table_set(&tb, 4, "%s", fmt_time(b, sizeof(b), (double)d->copy));
		table_set(&tb, 5, "%s", fmt_time(b, sizeof(b),
		          (double)(d->kernel + d->copy - d->busy)));
		table_set(&tb, 6, "%s", fmt_time(b, sizeof(b), (double)(wall - d->busy)));
		table_set(&tb, 7, "%.1f", pct((double)(wall - d->busy), (double)wall));
		table_set(&tb, 8, "%" PRIu64, d->ops);
		table_set(&tb, 9, "%s%s%s", d->name, *d->host ? " on " : "", d->host);
	}
	if (!tb.nrows) {
		table_free(&tb);
		return;
	}
	text_section("GPU time (busy: the union of the intervals with work on the GPU)");
	tb.max_width = opt.line_width;
	table_print(&tb, stdout, "  ");
	if (inexact)
		printf("  * several traces overlap in time on this GPU: their busy "
		       "times were added\n    and may count concurrent work twice "
		       "(merge the traces with trace-merge)\n");
	table_free(&tb);
}

static void
text_memory(struct agg *a)
{
	char b[64], c[64];
	struct table_col cols[] = {
		{ "Where", 1 }, { "Peak", 0 }, { "Source", 1 },
	};
	struct table tb;
	table_init(&tb, cols, 3);
	for (size_t i = 0; i < agg_nprocesses(a); i++) {
		const struct agg_process *p = agg_process(a, i);
		if (p->has_rusage && p->max_rss) {
			table_row(&tb);
			table_set(&tb, 0, "pid %" PRId64 " %s", p->pid, p->name);
			table_set(&tb, 1, "%s", cmd_fmt_bytes(b, sizeof(b), (double)p->max_rss));
			table_set(&tb, 2, "max RSS (rusage)");
		}
		if (p->has_rss) {
			table_row(&tb);
			table_set(&tb, 0, "pid %" PRId64 " %s", p->pid, p->name);
			table_set(&tb, 1, "%s", cmd_fmt_bytes(b, sizeof(b), p->rss_max));
			table_set(&tb, 2, "rss counter (sampled)");
		}
	}
	for (size_t i = 0; i < agg_ndevices(a); i++) {
		const struct agg_device *d = agg_device(a, i);
		char where[64];
		if (d->index >= 0)
			snprintf(where, sizeof(where), "GPU %" PRId64, d->index);
		else
			snprintf(where, sizeof(where), "GPU ?");
		if (d->has_counter) {
			table_row(&tb);
			table_set(&tb, 0, "%s", where);
			table_set(&tb, 1, "%s", cmd_fmt_bytes(b, sizeof(b), d->counter_max));
			table_set(&tb, 2, "device memory counter");
		}
		if (d->allocs || d->frees) {
			table_row(&tb);
			table_set(&tb, 0, "%s", where);
			table_set(&tb, 1, "%s", cmd_fmt_bytes(b, sizeof(b), (double)d->peak));
			table_set(&tb, 2, "in use by allocations (%" PRIu64 " allocs of %s, "
			          "%" PRIu64 " frees; %s not freed)", d->allocs,
			          cmd_fmt_bytes(c, sizeof(c), (double)d->alloc_bytes),
			          d->frees, cmd_fmt_bytes((char[64]){ 0 }, 64,
			          (double)d->in_use));
		}
	}
	if (tb.nrows) {
		text_section("Memory peaks");
		tb.max_width = opt.line_width;
	table_print(&tb, stdout, "  ");
	}
	table_free(&tb);
}

static void
text_per(struct agg *a)
{
	const struct perinst_result *p = agg_per(a);
	char b[64], c[64];
	if (!p)
		return;
	struct dist dur = p->dur;     /* summaries reorder; work on the copy */
	struct summary s;
	dist_summary(&dur, &s);
	int64_t span = p->last > p->first ? p->last - p->first : 0;
	char title[512];
	int n = snprintf(title, sizeof(title), "Per instance of range \"%s\": %" PRIu64
	                 " instance%s", opt.agg.per, s.count, s.count == 1 ? "" : "s");
	if (span > 0 && s.count && n > 0 && (size_t)n < sizeof(title))
		snprintf(title + n, sizeof(title) - (size_t)n, ", %.3f per second",
		         (double)s.count * 1e9 / (double)span);
	text_section(title);
	if (!s.count) {
		printf("  (no such range)\n");
		return;
	}
	printf("  duration  mean %s", fmt_time(b, sizeof(b), s.mean));
	printf("  std %s", fmt_time(b, sizeof(b), s.std));
	printf("  min %s", fmt_time(b, sizeof(b), (double)s.min));
	printf("  median %s", fmt_time(b, sizeof(b), s.p50));
	printf("  p95 %s", fmt_time(b, sizeof(b), s.p95));
	printf("  p99 %s", fmt_time(b, sizeof(b), s.p99));
	printf("  max %s\n", fmt_time(b, sizeof(b), (double)s.max));
	struct table_col cols[] = {
		{ "Count/inst", 0 }, { "Min-Max", 0 }, { time_title("Time/inst"), 0 },
		{ time_title("StdDev"), 0 }, { time_title("Min"), 0 },
		{ time_title("Median"), 0 }, { time_title("P95"), 0 },
		{ time_title("Max"), 0 }, { "Share %", 0 }, { "Kind", 1 },
		{ "Name", 1 },
	};
	struct table tb;
	table_init(&tb, cols, 11);
	size_t *order = children_order(a, p);
	int last_rank = -1;
	uint64_t in_rank = 0;
	for (size_t i = 0; i < p->nchildren; i++) {
		const struct perinst_child *ch = &p->children[order[i]];
		struct child_desc d = child_desc(a, ch);
		if (d.rank != last_rank) {
			last_rank = d.rank;
			in_rank = 0;
		}
		if (opt.top && in_rank++ >= opt.top)
			continue;
		struct dist cd = ch->count, td = ch->time;
		struct summary cs, ts;
		dist_summary(&cd, &cs);
		dist_summary(&td, &ts);
		table_row(&tb);
		table_set(&tb, 0, cs.mean == floor(cs.mean) ? "%.0f" : "%.2f", cs.mean);
		table_set(&tb, 1, "%" PRId64 "-%" PRId64, cs.min, cs.max);
		table_set(&tb, 2, "%s", fmt_time(b, sizeof(b), ts.mean));
		table_set(&tb, 3, "%s", fmt_time(b, sizeof(b), ts.std));
		table_set(&tb, 4, "%s", fmt_time(b, sizeof(b), (double)ts.min));
		table_set(&tb, 5, "%s", fmt_time(b, sizeof(b), ts.p50));
		table_set(&tb, 6, "%s", fmt_time(b, sizeof(b), ts.p95));
		table_set(&tb, 7, "%s", fmt_time(b, sizeof(b), (double)ts.max));
		table_set(&tb, 8, "%.1f", pct((double)ts.total, (double)s.total));
		table_set(&tb, 9, "%s", d.kind);
		table_set(&tb, 10, "%s", *d.domain ? d.domain : "");
		if (*d.domain)
			table_set(&tb, 10, "%s:%s", d.domain, display_name(d.name));
		else
			table_set(&tb, 10, "%s", display_name(d.name));
	}
	if (tb.nrows)
		tb.max_width = opt.line_width;
	table_print(&tb, stdout, "  ");
	table_free(&tb);
	free(order);
	if (p->gpu_outside)
		printf("  GPU work launched outside any instance: %" PRIu64 " operations, %s\n",
		       p->gpu_outside, fmt_time(b, sizeof(b), (double)p->gpu_outside_ns));
	if (p->gpu_no_launch)
		printf("  GPU work whose launch call is not in the trace: %" PRIu64
		       " operations, %s\n", p->gpu_no_launch,
		       fmt_time(c, sizeof(c), (double)p->gpu_no_launch_ns));
}

static void
text_findings(void)
{
	text_section("Findings");
	if (!nfindings) {
		printf("  none\n");
		return;
	}
	for (size_t i = 0; i < nfindings; i++) {
		const char *t = findings[i].type;
		const char *label = !strcmp(t, "hotspot") ? "worth a look"
		                  : !strcmp(t, "warmup") ? "warm-up"
		                  : !strcmp(t, "gpu_idle") ? "GPU idle"
		                  : !strcmp(t, "variance") ? "high variance"
		                  : !strcmp(t, "dropped") ? "data loss" : t;
		printf("  %-13s %s\n", label, findings[i].message);
	}
}

/* ---- CSV ----------------------------------------------------------------------------- */

static const char *const ops_columns[] = {
	"report", "kind", "domain", "name", "count", "total_ns", "time_pct",
	"mean_ns", "std_ns", "min_ns", "median_ns", "p95_ns", "p99_ns", "max_ns",
	"bytes", "bytes_per_s", "mean_bytes_per_s",
};
#define NOPS (sizeof(ops_columns) / sizeof(ops_columns[0]))

#define MAXF 20
struct csv_line {
	char buf[MAXF][48];
	const char *f[MAXF];
};

static void
csv_num(struct csv_line *l, size_t i, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
csv_num(struct csv_line *l, size_t i, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(l->buf[i], sizeof(l->buf[i]), fmt, ap);
	va_end(ap);
	l->f[i] = l->buf[i];
}

static void
csv_ops(struct agg *a, unsigned reports)
{
	csv_record(stdout, ops_columns, NOPS);
	static const enum report rep[AGG_NTABLES] = { R_KERNELS, R_MEMOPS, R_API, R_RANGES };
	for (int t = 0; t < AGG_NTABLES; t++) {
		if (!(reports & 1u << rep[t]))
			continue;
		struct rows r = table_rows(a, (enum agg_table)t);
		for (size_t i = 0; i < r.shown; i++) {
			const struct agg_group *g = r.v[i];
			const struct summary *s = &g->s;
			struct csv_line l = { 0 };
			l.f[0] = table_keys[t];
			l.f[1] = tk_kind_name(g->kind);
			l.f[2] = g->domain;
			l.f[3] = g->name;
			csv_num(&l, 4, "%" PRIu64, s->count);
			csv_num(&l, 5, "%" PRId64, s->total);
			csv_num(&l, 6, "%.4f", pct((double)s->total, (double)r.total));
			csv_num(&l, 7, "%lld", (long long)ns_int(s->mean));
			csv_num(&l, 8, "%lld", (long long)ns_int(s->std));
			csv_num(&l, 9, "%" PRId64, s->min);
			csv_num(&l, 10, "%lld", (long long)ns_int(s->p50));
			csv_num(&l, 11, "%lld", (long long)ns_int(s->p95));
			csv_num(&l, 12, "%lld", (long long)ns_int(s->p99));
			csv_num(&l, 13, "%" PRId64, s->max);
			if (t == AGG_MEMOPS) {
				csv_num(&l, 14, "%" PRIu64, g->bytes);
				csv_num(&l, 15, "%.0f", bandwidth(g));
				csv_num(&l, 16, "%.0f", mean_bandwidth(g));
			}
			csv_record(stdout, l.f, NOPS);
		}
		free(r.v);
		cmd_check_output(stdout);
	}
}

static void
csv_run(struct agg *a)
{
	static const char *const cols[] = { "report", "key", "value" };
	const struct agg_run *run = agg_run(a);
	csv_record(stdout, cols, 3);
	char v[64];
#define KV(k, ...) do { snprintf(v, sizeof(v), __VA_ARGS__); \
	const char *f_[3] = { "run", k, v }; csv_record(stdout, f_, 3); } while (0)
	KV("wall_ns", "%" PRId64, agg_wall(a));
	KV("t_min", "%" PRId64, run->events ? run->t_min : 0);
	KV("t_max", "%" PRId64, run->events ? run->t_max : 0);
	KV("events", "%" PRIu64, run->events);
	KV("events_read", "%" PRIu64, run->events_read);
	KV("dropped", "%" PRIu64, run->dropped);
	KV("skipped_unknown", "%" PRIu64, run->skipped);
	KV("processes", "%zu", agg_nprocesses(a));
	KV("scopes", "%u", run->scopes);
	for (unsigned k = 1; k <= TK_KIND_MAX; k++) {
		char key[48];
		snprintf(key, sizeof(key), "events.%s", tk_kind_name(k));
		if (run->kind[k])
			KV(key, "%" PRIu64, run->kind[k]);
	}
	for (uint32_t i = 0; i < run->runs_seen; i++) {
		char key[48];
		snprintf(key, sizeof(key), "run_wall_ns.%u", i + 1);
		KV(key, "%" PRId64, run->run_wall[i]);
	}
#undef KV
	for (size_t i = 0; i < run->nmeta; i++) {
		char key[256];
		snprintf(key, sizeof(key), "meta.%s", run->meta[i].key);
		const char *f[3] = { "run", key, run->meta[i].value };
		csv_record(stdout, f, 3);
	}
}

static void
csv_processes(struct agg *a)
{
	static const char *const cols[] = {
		"report", "pid", "ppid", "host", "name", "label", "command",
		"wall_ns", "user_ns", "system_ns", "cpu_pct", "max_rss_bytes",
		"exit", "exit_code", "signal", "rss_peak_bytes",
	};
	csv_record(stdout, cols, 16);
	for (size_t i = 0; i < agg_nprocesses(a); i++) {
		const struct agg_process *p = agg_process(a, i);
		struct csv_line l = { 0 };
		l.f[0] = "processes";
		csv_num(&l, 1, "%" PRId64, p->pid);
		csv_num(&l, 2, "%" PRId64, p->ppid);
		l.f[3] = p->host;
		l.f[4] = p->name;
		l.f[5] = p->label;
		l.f[6] = p->command;
		if (p->has_rusage) {
			csv_num(&l, 7, "%" PRId64, p->wall);
			csv_num(&l, 8, "%" PRId64, p->utime);
			csv_num(&l, 9, "%" PRId64, p->stime);
			csv_num(&l, 10, "%.2f", pct((double)(p->utime + p->stime), (double)p->wall));
			csv_num(&l, 11, "%" PRIu64, p->max_rss);
			l.f[12] = p->exit == TK_EXIT_NORMAL ? "normal"
			        : p->exit == TK_EXIT_SIGNAL ? "signal" : "unknown";
			if (p->exit == TK_EXIT_NORMAL)
				csv_num(&l, 13, "%d", p->exit_code);
			if (p->exit == TK_EXIT_SIGNAL)
				csv_num(&l, 14, "%u", p->signal);
		}
		if (p->has_rss)
			csv_num(&l, 15, "%.0f", p->rss_max);
		csv_record(stdout, l.f, 16);
	}
}

static void
csv_gpus(struct agg *a)
{
	static const char *const cols[] = {
		"report", "device", "name", "host", "busy_ns", "busy_pct",
		"kernel_ns", "copy_ns", "overlap_ns", "idle_ns", "idle_pct", "ops",
		"first_ns", "last_ns", "exact",
	};
	int64_t wall = agg_wall(a);
	csv_record(stdout, cols, 15);
	for (size_t i = 0; i < agg_ndevices(a); i++) {
		const struct agg_device *d = agg_device(a, i);
		if (!d->ops)
			continue;
		struct csv_line l = { 0 };
		l.f[0] = "gpu";
		if (d->index >= 0)
			csv_num(&l, 1, "%" PRId64, d->index);
		l.f[2] = d->name;
		l.f[3] = d->host;
		csv_num(&l, 4, "%" PRId64, d->busy);
		csv_num(&l, 5, "%.4f", pct((double)d->busy, (double)wall));
		csv_num(&l, 6, "%" PRId64, d->kernel);
		csv_num(&l, 7, "%" PRId64, d->copy);
		csv_num(&l, 8, "%" PRId64, d->kernel + d->copy - d->busy);
		csv_num(&l, 9, "%" PRId64, wall - d->busy);
		csv_num(&l, 10, "%.4f", pct((double)(wall - d->busy), (double)wall));
		csv_num(&l, 11, "%" PRIu64, d->ops);
		csv_num(&l, 12, "%" PRId64, d->first);
		csv_num(&l, 13, "%" PRId64, d->last);
		l.f[14] = d->overlap ? "false" : "true";
		csv_record(stdout, l.f, 15);
	}
}

static void
csv_memory(struct agg *a)
{
	static const char *const cols[] = {
		"report", "where", "pid", "device", "source", "peak_bytes",
		"allocs", "frees", "alloc_bytes", "not_freed_bytes",
	};
	csv_record(stdout, cols, 10);
	for (size_t i = 0; i < agg_nprocesses(a); i++) {
		const struct agg_process *p = agg_process(a, i);
		for (int src = 0; src < 2; src++) {
			if (src == 0 ? !(p->has_rusage && p->max_rss) : !p->has_rss)
				continue;
			struct csv_line l = { 0 };
			l.f[0] = "memory";
			l.f[1] = "process";
			csv_num(&l, 2, "%" PRId64, p->pid);
			l.f[4] = src == 0 ? "rusage" : "rss_counter";
			csv_num(&l, 5, "%.0f", src == 0 ? (double)p->max_rss : p->rss_max);
			csv_record(stdout, l.f, 10);
		}
	}
	for (size_t i = 0; i < agg_ndevices(a); i++) {
		const struct agg_device *d = agg_device(a, i);
		for (int src = 0; src < 2; src++) {
			if (src == 0 ? !d->has_counter : !(d->allocs || d->frees))
				continue;
			struct csv_line l = { 0 };
			l.f[0] = "memory";
			l.f[1] = "device";
			if (d->index >= 0)
				csv_num(&l, 3, "%" PRId64, d->index);
			l.f[4] = src == 0 ? "device_memory_counter" : "allocations";
			csv_num(&l, 5, "%.0f", src == 0 ? d->counter_max : (double)d->peak);
			if (src == 1) {
				csv_num(&l, 6, "%" PRIu64, d->allocs);
				csv_num(&l, 7, "%" PRIu64, d->frees);
				csv_num(&l, 8, "%" PRIu64, d->alloc_bytes);
				csv_num(&l, 9, "%" PRId64, d->in_use);
			}
			csv_record(stdout, l.f, 10);
		}
	}
}

static void
csv_per(struct agg *a)
{
	static const char *const cols[] = {
		"report", "kind", "domain", "name", "instances", "instances_with",
		"count_mean", "count_min", "count_max", "time_mean_ns", "time_std_ns",
		"time_min_ns", "time_median_ns", "time_p95_ns", "time_p99_ns",
		"time_max_ns", "share_pct",
	};
	const struct perinst_result *p = agg_per(a);
	if (!p)
		return;
	csv_record(stdout, cols, 17);
	struct dist dur = p->dur;
	struct summary s;
	dist_summary(&dur, &s);
	struct csv_line l = { 0 };
	l.f[0] = "per";
	l.f[1] = "instance";
	l.f[3] = opt.agg.per;
	csv_num(&l, 4, "%" PRIu64, s.count);
	csv_num(&l, 5, "%" PRIu64, s.count);
	csv_num(&l, 9, "%lld", (long long)ns_int(s.mean));
	csv_num(&l, 10, "%lld", (long long)ns_int(s.std));
	csv_num(&l, 11, "%" PRId64, s.min);
	csv_num(&l, 12, "%lld", (long long)ns_int(s.p50));
	csv_num(&l, 13, "%lld", (long long)ns_int(s.p95));
	csv_num(&l, 14, "%lld", (long long)ns_int(s.p99));
	csv_num(&l, 15, "%" PRId64, s.max);
	csv_num(&l, 16, "100");
	csv_record(stdout, l.f, 17);
	size_t *order = children_order(a, p);
	for (size_t i = 0; i < p->nchildren; i++) {
		const struct perinst_child *ch = &p->children[order[i]];
		struct child_desc d = child_desc(a, ch);
		struct dist cd = ch->count, td = ch->time;
		struct summary cs, ts;
		dist_summary(&cd, &cs);
		dist_summary(&td, &ts);
		struct csv_line m = { 0 };
		m.f[0] = "per";
		m.f[1] = d.kind;
		m.f[2] = d.domain;
		m.f[3] = d.name;
		csv_num(&m, 4, "%" PRIu64, s.count);
		csv_num(&m, 5, "%" PRIu64, ch->instances_with);
		csv_num(&m, 6, "%.4f", cs.mean);
		csv_num(&m, 7, "%" PRId64, cs.min);
		csv_num(&m, 8, "%" PRId64, cs.max);
		csv_num(&m, 9, "%lld", (long long)ns_int(ts.mean));
		csv_num(&m, 10, "%lld", (long long)ns_int(ts.std));
		csv_num(&m, 11, "%" PRId64, ts.min);
		csv_num(&m, 12, "%lld", (long long)ns_int(ts.p50));
		csv_num(&m, 13, "%lld", (long long)ns_int(ts.p95));
		csv_num(&m, 14, "%lld", (long long)ns_int(ts.p99));
		csv_num(&m, 15, "%" PRId64, ts.max);
		csv_num(&m, 16, "%.4f", pct((double)ts.total, (double)s.total));
		csv_record(stdout, m.f, 17);
	}
	free(order);
}

static void
csv_findings(void)
{
	static const char *const cols[] = { "report", "type", "table", "name", "value", "message" };
	csv_record(stdout, cols, 6);
	for (size_t i = 0; i < nfindings; i++) {
		char v[48];
		snprintf(v, sizeof(v), "%.4f", findings[i].value);
		const char *f[6] = { "findings", findings[i].type, findings[i].report,
		                     findings[i].name, v, findings[i].message };
		csv_record(stdout, f, 6);
	}
}

/* ---- JSON ------------------------------------------------------------------------------ */

static json_t *
jstr(const char *s)
{
	size_t n;
	const char *u = cmd_utf8(s, strlen(s), &n);
	return json_stringn_nocheck(u, n);
}

static json_t *
jint(double ns)
{
	return json_integer(ns_int(ns));
}

static void
jset(json_t *o, const char *k, json_t *v)
{
	if (!v || json_object_set_new(o, k, v) < 0)
		cmd_die(EXIT_USAGE, "out of memory");
}

static void
jstats(json_t *o, const struct summary *s, const char *prefix)
{
	char k[64];
#define JS(name, v) (snprintf(k, sizeof(k), "%s" name, prefix), jset(o, k, jint(v)))
	JS("mean_ns", s->mean);
	JS("std_ns", s->std);
	JS("min_ns", (double)s->min);
	JS("median_ns", s->p50);
	JS("p95_ns", s->p95);
	JS("p99_ns", s->p99);
	JS("max_ns", (double)s->max);
#undef JS
}

static json_t *
json_ops(struct agg *a, enum agg_table t)
{
	struct rows r = table_rows(a, t);
	json_t *arr = json_array();
	for (size_t i = 0; i < r.shown; i++) {
		const struct agg_group *g = r.v[i];
		json_t *o = json_object();
		jset(o, "name", jstr(g->name));
		jset(o, "kind", json_string(tk_kind_name(g->kind)));
		if (t == AGG_RANGES)
			jset(o, "domain", jstr(g->domain));
		jset(o, "count", json_integer((json_int_t)g->s.count));
		jset(o, "total_ns", json_integer(g->s.total));
		jset(o, "time_pct", json_real(pct((double)g->s.total, (double)r.total)));
		jstats(o, &g->s, "");
		if (t == AGG_MEMOPS) {
			if (g->kind == TK_MEMCPY && g->copy_kind) {
				jset(o, "copy_kind", json_string(tk_copy_kind_name(g->copy_kind)));
				jset(o, "src_kind", json_string(tk_mem_kind_name(g->src_kind)));
			}
			if (g->kind == TK_MEMSET || g->copy_kind)
				jset(o, "dst_kind", json_string(tk_mem_kind_name(g->dst_kind)));
			jset(o, "bytes", json_integer((json_int_t)g->bytes));
			jset(o, "bytes_per_s", json_real(round(bandwidth(g))));
			jset(o, "mean_bytes_per_s", json_real(round(mean_bandwidth(g))));
		}
		json_array_append_new(arr, o);
	}
	free(r.v);
	return arr;
}

static json_t *
json_run(struct agg *a, char **files, int nfiles)
{
	const struct agg_run *run = agg_run(a);
	json_t *o = json_object();
	json_t *in = json_array();
	for (int i = 0; i < nfiles; i++)
		json_array_append_new(in, jstr(cmd_display_path(files[i])));
	jset(o, "inputs", in);
	jset(o, "scopes", json_integer(run->scopes));
	json_t *meta = json_object();
	for (size_t i = 0; i < run->nmeta; i++) {
		/* a key with several values (merged traces) becomes an array */
		json_t *old = json_object_get(meta, run->meta[i].key);
		json_t *v = jstr(run->meta[i].value);
		if (!old) {
			jset(meta, run->meta[i].key, v);
		} else if (json_is_array(old)) {
			json_array_append_new(old, v);
		} else {
			json_t *arr = json_array();
			json_array_append(arr, old);
			json_array_append_new(arr, v);
			jset(meta, run->meta[i].key, arr);
		}
	}
	jset(o, "metadata", meta);
	jset(o, "wall_ns", json_integer(agg_wall(a)));
	jset(o, "t_min", json_integer(run->events ? run->t_min : 0));
	jset(o, "t_max", json_integer(run->events ? run->t_max : 0));
	jset(o, "events", json_integer((json_int_t)run->events));
	jset(o, "events_read", json_integer((json_int_t)run->events_read));
	json_t *kinds = json_object();
	for (unsigned k = 1; k <= TK_KIND_MAX; k++)
		if (run->kind[k])
			jset(kinds, tk_kind_name(k), json_integer((json_int_t)run->kind[k]));
	jset(o, "kinds", kinds);
	jset(o, "dropped", json_integer((json_int_t)run->dropped));
	json_t *drops = json_array();
	for (size_t i = 0; i < run->ndrops; i++)
		json_array_append_new(drops, json_pack("{s:o,s:I}",
			"reason", jstr(run->drops[i].reason),
			"count", (json_int_t)run->drops[i].count));
	jset(o, "drops", drops);
	jset(o, "skipped_unknown", json_integer((json_int_t)run->skipped));
	jset(o, "processes", json_integer((json_int_t)agg_nprocesses(a)));
	size_t ngpus = 0;
	for (size_t i = 0; i < agg_ndevices(a); i++)
		ngpus += agg_device(a, i)->index >= 0;
	jset(o, "gpus", json_integer((json_int_t)ngpus));
	if (opt.agg.run) {
		jset(o, "run", json_integer(opt.agg.run));
		jset(o, "run_missing", json_boolean(run->run_missing));
	}
	json_t *runs = json_array();
	for (uint32_t i = 0; i < run->runs_seen; i++)
		json_array_append_new(runs, json_pack("{s:I,s:I}", "run", (json_int_t)i + 1,
		                                      "wall_ns", (json_int_t)run->run_wall[i]));
	jset(o, "runs", runs);
	return o;
}

static json_t *
json_processes(struct agg *a)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < agg_nprocesses(a); i++) {
		const struct agg_process *p = agg_process(a, i);
		json_t *o = json_object();
		jset(o, "pid", json_integer(p->pid));
		jset(o, "ppid", json_integer(p->ppid));
		jset(o, "host", jstr(p->host));
		jset(o, "name", jstr(p->name));
		jset(o, "label", jstr(p->label));
		jset(o, "command", jstr(p->command));
		if (p->has_rusage) {
			jset(o, "wall_ns", json_integer(p->wall));
			jset(o, "user_ns", json_integer(p->utime));
			jset(o, "system_ns", json_integer(p->stime));
			jset(o, "cpu_pct", json_real(pct((double)(p->utime + p->stime),
			                                 (double)p->wall)));
			jset(o, "max_rss_bytes", json_integer((json_int_t)p->max_rss));
			jset(o, "exit", json_string(p->exit == TK_EXIT_NORMAL ? "normal"
			                 : p->exit == TK_EXIT_SIGNAL ? "signal" : "unknown"));
			if (p->exit == TK_EXIT_NORMAL)
				jset(o, "exit_code", json_integer(p->exit_code));
			if (p->exit == TK_EXIT_SIGNAL)
				jset(o, "signal", json_integer(p->signal));
		}
		if (p->has_rss)
			jset(o, "rss_peak_bytes", jint(p->rss_max));
		json_array_append_new(arr, o);
	}
	return arr;
}

static json_t *
json_gpus(struct agg *a)
{
	int64_t wall = agg_wall(a);
	json_t *arr = json_array();
	for (size_t i = 0; i < agg_ndevices(a); i++) {
		const struct agg_device *d = agg_device(a, i);
		if (!d->ops)
			continue;
		json_t *o = json_object();
		jset(o, "device", d->index >= 0 ? json_integer(d->index) : json_null());
		jset(o, "name", jstr(d->name));
		jset(o, "host", jstr(d->host));
		jset(o, "busy_ns", json_integer(d->busy));
		jset(o, "busy_pct", json_real(pct((double)d->busy, (double)wall)));
		jset(o, "kernel_ns", json_integer(d->kernel));
		jset(o, "copy_ns", json_integer(d->copy));
		jset(o, "overlap_ns", json_integer(d->kernel + d->copy - d->busy));
		jset(o, "idle_ns", json_integer(wall - d->busy));
		jset(o, "idle_pct", json_real(pct((double)(wall - d->busy), (double)wall)));
		jset(o, "ops", json_integer((json_int_t)d->ops));
		jset(o, "first_ns", json_integer(d->first));
		jset(o, "last_ns", json_integer(d->last));
		jset(o, "exact", json_boolean(!d->overlap));
		json_array_append_new(arr, o);
	}
	return arr;
}

static json_t *
json_memory(struct agg *a)
{
	json_t *o = json_object(), *procs = json_array(), *devs = json_array();
	for (size_t i = 0; i < agg_nprocesses(a); i++) {
		const struct agg_process *p = agg_process(a, i);
		if (!(p->has_rusage && p->max_rss) && !p->has_rss)
			continue;
		json_t *x = json_object();
		jset(x, "pid", json_integer(p->pid));
		jset(x, "name", jstr(p->name));
		if (p->has_rusage)
			jset(x, "max_rss_bytes", json_integer((json_int_t)p->max_rss));
		if (p->has_rss)
			jset(x, "rss_peak_bytes", jint(p->rss_max));
		json_array_append_new(procs, x);
	}
	for (size_t i = 0; i < agg_ndevices(a); i++) {
		const struct agg_device *d = agg_device(a, i);
		if (!d->has_counter && !d->allocs && !d->frees)
			continue;
		json_t *x = json_object();
		jset(x, "device", d->index >= 0 ? json_integer(d->index) : json_null());
		if (d->has_counter)
			jset(x, "counter_peak_bytes", jint(d->counter_max));
		if (d->allocs || d->frees) {
			jset(x, "allocated_peak_bytes", json_integer(d->peak));
			jset(x, "allocs", json_integer((json_int_t)d->allocs));
			jset(x, "frees", json_integer((json_int_t)d->frees));
			jset(x, "alloc_bytes", json_integer((json_int_t)d->alloc_bytes));
			jset(x, "not_freed_bytes", json_integer(d->in_use));
		}
		json_array_append_new(devs, x);
	}
	jset(o, "processes", procs);
	jset(o, "devices", devs);
	return o;
}

static json_t *
json_per(struct agg *a)
{
	const struct perinst_result *p = agg_per(a);
	json_t *o = json_object();
	struct dist dur = p->dur;
	struct summary s;
	dist_summary(&dur, &s);
	int64_t span = p->last > p->first ? p->last - p->first : 0;
	jset(o, "range", jstr(opt.agg.per));
	jset(o, "instances", json_integer((json_int_t)s.count));
	jset(o, "per_second", json_real(span > 0 ? (double)s.count * 1e9 / (double)span : 0));
	json_t *d = json_object();
	jset(d, "total_ns", json_integer(s.total));
	jstats(d, &s, "");
	jset(o, "duration", d);
	json_t *arr = json_array();
	size_t *order = children_order(a, p);
	for (size_t i = 0; i < p->nchildren; i++) {
		const struct perinst_child *ch = &p->children[order[i]];
		struct child_desc dd = child_desc(a, ch);
		struct dist cd = ch->count, td = ch->time;
		struct summary cs, ts;
		dist_summary(&cd, &cs);
		dist_summary(&td, &ts);
		json_t *c = json_object();
		jset(c, "kind", json_string(dd.kind));
		jset(c, "domain", jstr(dd.domain));
		jset(c, "name", jstr(dd.name));
		jset(c, "instances_with", json_integer((json_int_t)ch->instances_with));
		json_t *cnt = json_object();
		jset(cnt, "mean", json_real(cs.mean));
		jset(cnt, "min", json_integer(cs.min));
		jset(cnt, "median", json_real(cs.p50));
		jset(cnt, "max", json_integer(cs.max));
		jset(cnt, "total", json_integer(cs.total));
		jset(c, "count_per_instance", cnt);
		json_t *tm = json_object();
		jset(tm, "total_ns", json_integer(ts.total));
		jstats(tm, &ts, "");
		jset(c, "time_per_instance", tm);
		jset(c, "share_pct", json_real(pct((double)ts.total, (double)s.total)));
		json_array_append_new(arr, c);
	}
	free(order);
	jset(o, "children", arr);
	jset(o, "gpu_outside", json_pack("{s:I,s:I}", "count", (json_int_t)p->gpu_outside,
	                                 "total_ns", (json_int_t)p->gpu_outside_ns));
	jset(o, "gpu_no_launch", json_pack("{s:I,s:I}", "count", (json_int_t)p->gpu_no_launch,
	                                   "total_ns", (json_int_t)p->gpu_no_launch_ns));
	return o;
}

static json_t *
json_findings(void)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < nfindings; i++) {
		json_t *o = json_object();
		jset(o, "type", json_string(findings[i].type));
		jset(o, "report", json_string(findings[i].report));
		jset(o, "name", jstr(findings[i].name));
		jset(o, "value", json_real(findings[i].value));
		jset(o, "message", jstr(findings[i].message));
		json_array_append_new(arr, o);
	}
	return arr;
}

/* Write and flush, reporting a failure by the errno of the write itself
 * (a large fwrite bypasses the buffer, so flushing again later would
 * not tell why it failed). */
static void
emit(const char *s, size_t n)
{
	errno = 0;
	if (fwrite(s, 1, n, stdout) == n && fflush(stdout) == 0)
		return;
	int e = errno;
	if (e == EPIPE)
		exit(0);
	cmd_die(EXIT_USAGE, "write error: %s", strerror(e ? e : EIO));
}

/* ---- options ------------------------------------------------------------------------------ */

static size_t
parse_list(const char *what, const char *s, int64_t **out)
{
	size_t n = 0;
	int64_t *v = NULL;
	char *copy = strdup(s), *save = NULL;
	if (!copy)
		cmd_die(EXIT_USAGE, "out of memory");
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		uint64_t x;
		if (cmd_parse_uint(t, &x) < 0 || x > INT64_MAX)
			cmd_usage_error("invalid --%s '%s'", what, s);
		v = realloc(v, (n + 1) * sizeof(*v));
		if (!v)
			cmd_die(EXIT_USAGE, "out of memory");
		v[n++] = (int64_t)x;
	}
	free(copy);
	if (!n)
		cmd_usage_error("invalid --%s '%s'", what, s);
	*out = v;
	return n;
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
			if (strcmp(t, report_names[r]) == 0) {
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
	O_PID, O_DEVICE, O_STREAM, O_FROM, O_TO, O_RUN,
};

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "csv", no_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "report", required_argument, NULL, 'r' },
		{ "top", required_argument, NULL, 'n' },
		{ "sort", required_argument, NULL, 's' },
		{ "units", required_argument, NULL, O_UNITS },
		{ "full-names", no_argument, NULL, O_FULL },
		{ "no-findings", no_argument, NULL, O_NOFIND },
		{ "per", required_argument, NULL, O_PER },
		{ "approx", no_argument, NULL, O_APPROX },
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
	cmd_init("trace-stats");
	struct agg_options ao = AGG_OPTIONS_INIT;
	opt.agg = ao;
	opt.findings = 1;
	regex_t name_re, exclude_re;
	int64_t *pids = NULL, *devices = NULL, *streams = NULL;
	int c;
	uint64_t v;
	while ((c = getopt_long(argc, argv, ":cjr:n:s:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': opt.format = FMT_CSV; break;
		case 'j': opt.format = FMT_JSON; break;
		case 'r': opt.reports |= parse_reports(optarg); break;
		case 'n':
			if (cmd_parse_uint(optarg, &opt.top) < 0 || opt.top == 0)
				cmd_usage_error("invalid --top '%s'", optarg);
			break;
		case 's': {
			size_t k;
			for (k = 0; k < sizeof(sort_names) / sizeof(sort_names[0]); k++)
				if (strcmp(optarg, sort_names[k]) == 0)
					break;
			if (k == sizeof(sort_names) / sizeof(sort_names[0]))
				cmd_usage_error("invalid --sort '%s' (total, count, mean, "
				                "median, p95, max or name)", optarg);
			opt.sort = (enum sort_key)k;
			break;
		}
		case O_UNITS: {
			static const struct { const char *n; double ns; } u[] = {
				{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
			};
			size_t k;
			for (k = 0; k < 4; k++)
				if (strcmp(optarg, u[k].n) == 0)
					break;
			if (k == 4)
				cmd_usage_error("invalid --units '%s' (ns, us, ms or s)", optarg);
			opt.unit = u[k].ns;
			opt.unit_name = u[k].n;
			break;
		}
		case O_FULL: opt.full_names = 1; break;
		case O_NOFIND: opt.findings = 0; break;
		case O_PER:
			if (!*optarg)
				cmd_usage_error("invalid --per ''");
			opt.agg.per = optarg;
			break;
		case O_APPROX: opt.agg.approx = 1; break;
		case O_NAME:
			if (opt.agg.name)
				regfree(&name_re);
			compile_regex(&name_re, optarg, "name");
			opt.agg.name = &name_re;
			break;
		case O_EXCLUDE:
			if (opt.agg.exclude)
				regfree(&exclude_re);
			compile_regex(&exclude_re, optarg, "exclude");
			opt.agg.exclude = &exclude_re;
			break;
		case O_PID:
			free(pids);
			opt.agg.npids = parse_list("pid", optarg, &pids);
			opt.agg.pids = pids;
			break;
		case O_DEVICE:
			free(devices);
			opt.agg.ndevices = parse_list("device", optarg, &devices);
			opt.agg.devices = devices;
			break;
		case O_STREAM:
			free(streams);
			opt.agg.nstreams = parse_list("stream", optarg, &streams);
			opt.agg.streams = streams;
			break;
		case O_FROM:
			if (cmd_parse_duration(optarg, &opt.agg.from) < 0)
				cmd_usage_error("invalid --from '%s'", optarg);
			break;
		case O_TO:
			if (cmd_parse_duration(optarg, &opt.agg.to) < 0)
				cmd_usage_error("invalid --to '%s'", optarg);
			break;
		case O_RUN:
			if (cmd_parse_uint(optarg, &v) < 0 || v == 0 || v > UINT32_MAX)
				cmd_usage_error("invalid --run '%s'", optarg);
			opt.agg.run = (uint32_t)v;
			break;
		case 'h': usage(); return cmd_finish(0);
		case 'V': cmd_version();
		default: cmd_bad_option(c, argv);
		}
	}
	if (opt.agg.to <= opt.agg.from)
		cmd_usage_error("--to must be later than --from");
	opt.line_width = opt.full_names ? 0 : line_width();

	static char *stdin_only[] = { "-", NULL };
	char **files = optind < argc ? argv + optind : stdin_only;
	int nfiles = optind < argc ? argc - optind : 1;
	struct agg *a = agg_new(&opt.agg);
	if (!a)
		cmd_die(EXIT_USAGE, "out of memory");
	int status = 0;
	for (int i = 0; i < nfiles; i++)
		status |= agg_read(a, files[i]);
	agg_finish(a);
	if (status && agg_run(a)->events_read == 0) {
		/* nothing could be read: the messages say it all */
		agg_free(a);
		free(pids);
		free(devices);
		free(streams);
		if (opt.agg.name)
			regfree(&name_re);
		if (opt.agg.exclude)
			regfree(&exclude_re);
		return cmd_finish(status);
	}

	/* the default: every report with data, and the findings but in CSV,
	 * which is then the one table of the operations */
	unsigned ops = (1u << R_KERNELS) | (1u << R_MEMOPS) | (1u << R_API) |
	               (1u << R_RANGES);
	unsigned reports = opt.reports ? opt.reports
	                 : opt.format == FMT_CSV ? ops
	                 : reports_with_data(a) | 1u << R_FINDINGS;
	if (!opt.findings)
		reports &= ~(1u << R_FINDINGS);
	if (reports & 1u << R_FINDINGS)
		compute_findings(a);

	switch (opt.format) {
	case FMT_TEXT:
		if (reports & 1u << R_RUN)
			text_run(a, files, nfiles);
		if (reports & 1u << R_KERNELS) text_ops(a, AGG_KERNELS, opt.reports != 0);
		if (reports & 1u << R_MEMOPS) text_ops(a, AGG_MEMOPS, opt.reports != 0);
		if (reports & 1u << R_API) text_ops(a, AGG_API, opt.reports != 0);
		if (reports & 1u << R_RANGES) text_ops(a, AGG_RANGES, opt.reports != 0);
		if (reports & 1u << R_PROCESSES) text_processes(a);
		if (reports & 1u << R_GPU) text_gpus(a);
		if (reports & 1u << R_MEMORY) text_memory(a);
		text_per(a);
		if (reports & 1u << R_FINDINGS)
			text_findings();
		break;
	case FMT_CSV: {
		/* the operation tables share one header; other reports follow
		 * as their own tables after a blank line */
		int sections = 0;
#define SECTION() do { if (sections++) putchar('\n'); } while (0)
		if (reports & ops) { SECTION(); csv_ops(a, reports); }
		if (reports & 1u << R_RUN) { SECTION(); csv_run(a); }
		if (reports & 1u << R_PROCESSES) { SECTION(); csv_processes(a); }
		if (reports & 1u << R_GPU) { SECTION(); csv_gpus(a); }
		if (reports & 1u << R_MEMORY) { SECTION(); csv_memory(a); }
		if (agg_per(a)) { SECTION(); csv_per(a); }
		if (reports & 1u << R_FINDINGS) { SECTION(); csv_findings(); }
#undef SECTION
		break;
	}
	case FMT_JSON: {
		json_t *o = json_object();
		jset(o, "schema", json_string("tracekit-stats/1"));
		jset(o, "approx", json_boolean(opt.agg.approx));
		if (reports & 1u << R_RUN) jset(o, "run", json_run(a, files, nfiles));
		for (int t = 0; t < AGG_NTABLES; t++) {
			static const enum report rep[AGG_NTABLES] = {
				R_KERNELS, R_MEMOPS, R_API, R_RANGES };
			if (reports & 1u << rep[t])
				jset(o, table_keys[t], json_ops(a, (enum agg_table)t));
		}
		if (reports & 1u << R_PROCESSES) jset(o, "processes", json_processes(a));
		if (reports & 1u << R_GPU) jset(o, "gpus", json_gpus(a));
		if (reports & 1u << R_MEMORY) jset(o, "memory", json_memory(a));
		if (agg_per(a)) jset(o, "per", json_per(a));
		if (reports & 1u << R_FINDINGS) jset(o, "findings", json_findings());
		char *text = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
		if (!text)
			cmd_die(EXIT_USAGE, "out of memory");
		emit(text, strlen(text));
		emit("\n", 1);
		free(text);
		json_decref(o);
		break;
	}
	}
	cmd_check_output(stdout);
	for (size_t i = 0; i < nfindings; i++) {
		free(findings[i].name);
		free(findings[i].message);
	}
	free(findings);
	agg_free(a);
	free(pids);
	free(devices);
	free(streams);
	if (opt.agg.name)
		regfree(&name_re);
	if (opt.agg.exclude)
		regfree(&exclude_re);
	return cmd_finish(status);
}
