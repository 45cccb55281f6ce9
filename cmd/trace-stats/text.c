/* SPDX-License-Identifier: MIT */
/*
 * trace-stats text output: a run header and aligned tables for people.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "analysis/dist.h"
#include "stats.h"
#include "common/table.h"
#include "common/util.h"

/* ---- text ---------------------------------------------------------------------- */


/* A section title, after a blank line unless it comes first. */
static void
text_section(struct stats *st, const char *title)
{
	printf("%s%s\n", st->sections++ ? "\n" : "", title);
}

/* The other metadata as key=value, wrapped to the line width, long
 * values cut (--json has them whole), at most a few lines. */
static void
text_metadata(const struct stats *st, const struct agg_run *run)
{
	enum { MAX_VALUE = 40, MAX_LINES = 4 };
	size_t width = st->opt.line_width ? st->opt.line_width : SIZE_MAX;
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
		int cut = !st->opt.full_names && vlen > MAX_VALUE;
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

/* The commands, hosts and labels of the run: from its metadata, else
 * from its processes. */
static void
text_origin(struct agg *a, const struct agg_run *run)
{
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
		/* a few commands and hosts, every label (the ranks of a
		 * merged job), and how many more there are */
		int limit = k == 2 ? 16 : 4, more = 0;
		for (size_t i = 0; i < agg_nprocesses(a); i++) {
			const struct agg_process *p = agg_process(a, i);
			const char *v = k == 0 ? p->command : k == 1 ? p->host : p->label;
			if (!*v)
				continue;
			int dup = 0;
			for (size_t j = 0; j < i && !dup; j++) {
				const struct agg_process *q = agg_process(a, j);
				const char *w = k == 0 ? q->command : k == 1 ? q->host : q->label;
				dup |= strcmp(v, w) == 0;
			}
			if (dup)
				continue;
			if (n < limit)
				printf("  %-10s%s\n", n++ ? "" : titles[k], v);
			else
				more++;
		}
		if (more)
			printf("  %-10s(%d more)\n", "", more);
	}
}

/* The events kept, and their kinds by count, largest first. */
static void
text_events(const struct agg_run *run)
{
	printf("  %-10s%" PRIu64, "events", run->events);
	if (run->events != run->events_read)
		printf(" of %" PRIu64 " read", run->events_read);
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
}

static void
text_run(struct stats *st)
{
	struct agg *a = st->agg;
	const struct agg_run *run = agg_run(a);
	char b[64];
	text_section(st, "Run");
	printf("  %-10s", st->nfiles > 1 ? "inputs" : "input");
	for (int i = 0; i < st->nfiles; i++)
		printf("%s%s", i ? ", " : "", cmd_display_path(st->files[i]));
	if (run->scopes > (unsigned)st->nfiles)
		printf(" (%u traces)", run->scopes);
	putchar('\n');
	text_origin(a, run);
	printf("  %-10s%s", "wall", stats_fmt_span(st, b, sizeof(b), (double)agg_wall(a)));
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
	text_events(run);
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
			printf("%s %s", i ? "," : "", stats_fmt_span(st, b, sizeof(b), (double)run->run_wall[i]));
		printf("%s\n", run->runs_seen > 10 ? ", ..." : "");
	}
	if (run->run_missing)
		printf("  %-10sno run %u in some of the input\n", "note", st->opt.agg.run);
	if (run->exact.converted)
		printf("  %-10spercentiles of %zu rows within 1%%, not exact: exact ones "
		       "need more than -S %s\n", "note", run->exact.converted,
		       cmd_fmt_bytes(b, sizeof(b), (double)st->opt.agg.exact_budget));
	text_metadata(st, run);
}

enum {
	C_PCT, C_TOTAL, C_COUNT, C_MEAN, C_STD, C_MIN, C_MED, C_P95, C_P99,
	C_MAX, C_BYTES, C_BW, C_MBW, C_KIND, C_DOMAIN, C_NAME, C_NCOLS
};

static void
text_ops(struct stats *st, enum agg_table t, int force)
{
	struct stats_rows r = stats_table_rows(st, t);
	char b[64];
	char title[160];
	if (!r.n) {
		if (force) {
			snprintf(title, sizeof(title), "%s: none", stats_table_titles[t]);
			text_section(st, title);
		}
		free(r.v);
		return;
	}
	snprintf(title, sizeof(title), "%s: %" PRIu64 " in %zu group%s, %s in all",
	         stats_table_titles[t], r.count, r.n, r.n == 1 ? "" : "s",
	         stats_fmt_span(st, b, sizeof(b), (double)r.total));
	text_section(st, title);
	struct table_col cols[C_NCOLS] = {
		{ "Time %", 0 }, { stats_time_title(st, "Total"), 0 }, { "Count", 0 },
		{ stats_time_title(st, "Mean"), 0 }, { stats_time_title(st, "StdDev"), 0 },
		{ stats_time_title(st, "Min"), 0 }, { stats_time_title(st, "Median"), 0 },
		{ stats_time_title(st, "P95"), 0 }, { stats_time_title(st, "P99"), 0 },
		{ stats_time_title(st, "Max"), 0 }, { "Bytes", 0 }, { "Bandwidth", 0 },
		{ "Mean BW", 0 }, { "Kind", 1 }, { "Domain", 1 }, { "Name", 1 },
	};
	struct table tb;
	table_init(&tb, cols, C_NCOLS);
	int domains = t == AGG_RANGES && stats_has_domains(&r);
	int kinds = t == AGG_RANGES && stats_has_async(&r);
	for (size_t i = 0; i < r.shown; i++) {
		const struct agg_group *g = r.v[i];
		const struct summary *s = &g->s;
		table_row(&tb);
		table_set(&tb, C_PCT, "%.1f", stats_pct((double)s->total, (double)r.total));
		table_set(&tb, C_TOTAL, "%s", stats_fmt_time(st, b, sizeof(b), (double)s->total));
		table_set(&tb, C_COUNT, "%" PRIu64, s->count);
		table_set(&tb, C_MEAN, "%s", stats_fmt_time(st, b, sizeof(b), s->mean));
		table_set(&tb, C_STD, "%s", stats_fmt_time(st, b, sizeof(b), s->std));
		table_set(&tb, C_MIN, "%s", stats_fmt_time(st, b, sizeof(b), (double)s->min));
		table_set(&tb, C_MED, "%s", stats_fmt_time(st, b, sizeof(b), s->p50));
		table_set(&tb, C_P95, "%s", stats_fmt_time(st, b, sizeof(b), s->p95));
		table_set(&tb, C_P99, "%s", stats_fmt_time(st, b, sizeof(b), s->p99));
		table_set(&tb, C_MAX, "%s", stats_fmt_time(st, b, sizeof(b), (double)s->max));
		if (t == AGG_MEMOPS) {
			table_set(&tb, C_BYTES, "%s", cmd_fmt_bytes(b, sizeof(b), (double)g->bytes));
			table_set(&tb, C_BW, "%s", cmd_fmt_rate(b, sizeof(b), stats_bandwidth(g)));
			table_set(&tb, C_MBW, "%s", cmd_fmt_rate(b, sizeof(b), stats_mean_bandwidth(g)));
		}
		if (kinds)
			table_set(&tb, C_KIND, "%s", g->kind == TK_ASYNC_RANGE ? "async" : "push/pop");
		if (domains)
			table_set(&tb, C_DOMAIN, "%s", *g->domain ? g->domain : "-");
		table_set(&tb, C_NAME, "%s", stats_display_name(st, g->name));
	}
	static const int drop[] = { C_P99, C_STD, C_MBW, C_P95, C_MIN, C_BW,
	                            C_MEAN, C_BYTES, C_MAX };
	stats_fit_columns(&tb, st->opt.line_width, drop, sizeof(drop) / sizeof(drop[0]));
	table_print(&tb, stdout, "  ");
	table_free(&tb);
	if (r.shown < r.n) {
		struct stats_rest rest = stats_rows_rest(&r);
		printf("  ... %zu more (%" PRIu64 " instances, %s, %.1f%% of the time)\n",
		       r.n - r.shown, rest.count,
		       stats_fmt_span(st, b, sizeof(b), (double)rest.total),
		       stats_pct((double)rest.total, (double)r.total));
	}
	free(r.v);
	cmd_check_output(stdout);
}

static void
text_processes(struct stats *st)
{
	struct agg *a = st->agg;
	static const struct table_col cols[] = {
		{ "PID", 0 }, { "PPID", 0 }, { "Wall", 0 }, { "User", 0 },
		{ "System", 0 }, { "CPU %", 0 }, { "Max RSS", 0 }, { "Exit", 1 },
		{ "Host", 1 }, { "Label", 1 }, { "Command", 1 },
	};
	char b[64];
	struct table tb;
	struct table_col tc[11];
	memcpy(tc, cols, sizeof(tc));
	tc[2].title = stats_time_title(st, "Wall");
	tc[3].title = stats_time_title(st, "User");
	tc[4].title = stats_time_title(st, "System");
	table_init(&tb, tc, 11);
	for (size_t i = 0; i < agg_nprocesses(a); i++) {
		const struct agg_process *p = agg_process(a, i);
		table_row(&tb);
		table_set(&tb, 0, "%" PRId64, p->pid);
		table_set(&tb, 1, "%" PRId64, p->ppid);
		if (p->has_rusage) {
			table_set(&tb, 2, "%s", stats_fmt_time(st, b, sizeof(b), (double)p->wall));
			table_set(&tb, 3, "%s", stats_fmt_time(st, b, sizeof(b), (double)p->utime));
			table_set(&tb, 4, "%s", stats_fmt_time(st, b, sizeof(b), (double)p->stime));
			table_set(&tb, 5, "%.1f", stats_pct((double)(p->utime + p->stime),
			                             (double)p->wall));
			table_set(&tb, 6, "%s", cmd_fmt_bytes(b, sizeof(b), (double)p->max_rss));
			table_set(&tb, 7, "%s", stats_exit_text(b, sizeof(b), p->exit,
			                                  p->exit_code, p->signal));
		} else {
			table_set(&tb, 2, "-");
			table_set(&tb, 7, "-");
		}
		table_set(&tb, 8, "%s", p->host);
		table_set(&tb, 9, "%s", p->label);
		table_set(&tb, 10, "%s", *p->command ? p->command : p->name);
	}
	text_section(st, "Processes");
	static const int drop[] = { 1, 3, 4, 8, 6, 5 };
	stats_fit_columns(&tb, st->opt.line_width, drop, sizeof(drop) / sizeof(drop[0]));
	table_print(&tb, stdout, "  ");
	table_free(&tb);
}

static void
text_gpus(struct stats *st)
{
	struct agg *a = st->agg;
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
			tc[c].title = stats_time_title(st, cols[c].title);
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
		table_set(&tb, 1, "%s%s", stats_fmt_time(st, b, sizeof(b), (double)d->busy),
		          d->overlap ? "*" : "");
		inexact |= d->overlap;
		table_set(&tb, 2, "%.1f", stats_pct((double)d->busy, (double)wall));
		table_set(&tb, 3, "%s", stats_fmt_time(st, b, sizeof(b), (double)d->kernel));
		table_set(&tb, 4, "%s", stats_fmt_time(st, b, sizeof(b), (double)d->copy));
		table_set(&tb, 5, "%s", stats_fmt_time(st, b, sizeof(b),
		          (double)(d->kernel + d->copy - d->busy)));
		table_set(&tb, 6, "%s", stats_fmt_time(st, b, sizeof(b), (double)(wall - d->busy)));
		table_set(&tb, 7, "%.1f", stats_pct((double)(wall - d->busy), (double)wall));
		table_set(&tb, 8, "%" PRIu64, d->ops);
		table_set(&tb, 9, "%s%s%s", d->name, *d->host ? " on " : "", d->host);
	}
	if (!tb.nrows) {
		table_free(&tb);
		return;
	}
	text_section(st, "GPU time (busy: the union of the intervals with work on the GPU)");
	static const int drop[] = { 5, 8, 4, 3 };
	stats_fit_columns(&tb, st->opt.line_width, drop, sizeof(drop) / sizeof(drop[0]));
	table_print(&tb, stdout, "  ");
	if (inexact)
		printf("  * several traces overlap in time on this GPU: their busy "
		       "times were added\n    and may count concurrent work twice "
		       "(merge the traces with trace-merge)\n");
	table_free(&tb);
}

/* The allocator's peaks of one device or host: a row each. */
static void
allocator_rows(struct table *tb, const char *where, const struct agg_allocator *m,
               int64_t t0)
{
	static const char *const what[] = { "allocated", "reserved" };
	static const char *const counter[] = { "Total Allocated", "Total Reserved" };
	char b[64], t[64];
	for (int w = 0; w < 2; w++) {
		if (!m->has[w])
			continue;
		table_row(tb);
		table_set(tb, 0, "%s", where);
		table_set(tb, 1, "%s", cmd_fmt_bytes(b, sizeof(b), m->peak[w]));
		table_set(tb, 2, "%s by the PyTorch allocator (%s), at %s%s%s", what[w],
		          counter[w], cmd_fmt_duration(t, sizeof(t), m->peak_ts[w] - t0),
		          m->op[w] ? ", in " : "", m->op[w] ? m->op[w] : "");
	}
}

/* The allocator's peaks of each step (-r memory with --steps/--per): a
 * row per step, device or host, and total; at most --top steps (20
 * without). */
static void
text_step_memory(struct stats *st)
{
	struct agg *a = st->agg;
	const struct perinst_result *p = agg_per(a);
	size_t n;
	const struct allocpeak_step *v = agg_step_memory(a, &n);
	if (!p || !v || !n)
		return;
	static const char *const what[] = { "allocated", "reserved" };
	struct table_col cols[] = {
		{ "Step", 0 }, { "Where", 1 }, { "Total", 1 }, { "Peak", 0 },
		{ stats_time_title(st, "At"), 0 }, { "Operation at the peak", 1 },
	};
	struct table tb;
	table_init(&tb, cols, 6);
	size_t max = st->opt.top ? (size_t)st->opt.top : 20;
	int64_t t0 = agg_run(a)->t_min;
	char b[64];
	for (size_t i = 0; i < p->ninst && i < max; i++) {
		const struct perinst_instance *in = &p->inst[i];
		for (uint32_t k = in->mem_first; k < n && k < in->mem_first + in->mem_n; k++) {
			const struct allocpeak_step *m = &v[k];
			char where[96];
			if (m->is_host) {
				const struct agg_process *pr = agg_process(a, (size_t)m->where);
				snprintf(where, sizeof(where), "pid %" PRId64 " (host)", pr->pid);
			} else if (agg_device(a, (size_t)m->where)->index >= 0) {
				snprintf(where, sizeof(where), "GPU %" PRId64,
				         agg_device(a, (size_t)m->where)->index);
			} else {
				snprintf(where, sizeof(where), "GPU ?");
			}
			for (int w = 0; w < 2; w++) {
				if (!m->has[w])
					continue;
				table_row(&tb);
				table_set(&tb, 0, "%zu", i + 1);
				table_set(&tb, 1, "%s", where);
				table_set(&tb, 2, "%s", what[w]);
				table_set(&tb, 3, "%s", cmd_fmt_bytes(b, sizeof(b), m->peak[w]));
				table_set(&tb, 4, "%s", stats_fmt_time(st, b, sizeof(b),
				                                       (double)(m->peak_ts[w] - t0)));
				table_set(&tb, 5, "%s", m->op[w] ? stats_display_name(st, m->op[w])
				                                 : "(none found)");
			}
		}
	}
	printf("\n  per step (steps numbered as in the steps table): the highest level\n"
	       "  of each total in the step, counting the level it entered with\n");
	tb.max_width = st->opt.line_width;
	table_print(&tb, stdout, "  ");
	table_free(&tb);
	if (p->ninst > max)
		printf("  ... %zu more steps (--top, --json or --csv show them)\n", p->ninst - max);
}

static void
text_memory(struct stats *st)
{
	struct agg *a = st->agg;
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
		char where[96];
		snprintf(where, sizeof(where), "pid %" PRId64 " %s (host)", p->pid, p->name);
		allocator_rows(&tb, where, &p->allocator, agg_run(a)->t_min);
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
		allocator_rows(&tb, where, &d->allocator, agg_run(a)->t_min);
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
		text_section(st, "Memory peaks");
		tb.max_width = st->opt.line_width;
		table_print(&tb, stdout, "  ");
		text_step_memory(st);
	}
	table_free(&tb);
}

static void text_steps(struct stats *st, const struct perinst_result *p);

static void
text_per(struct stats *st)
{
	struct agg *a = st->agg;
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
	                 " instance%s", stats_per_name(st), s.count, s.count == 1 ? "" : "s");
	if (span > 0 && s.count && n > 0 && (size_t)n < sizeof(title))
		snprintf(title + n, sizeof(title) - (size_t)n, ", %.3f per second",
		         (double)s.count * 1e9 / (double)span);
	text_section(st, title);
	if (!s.count) {
		printf("  (no such range)\n");
		return;
	}
	if (agg_per_whole_input(a) && st->opt.agg.per)
		printf("  the profiler's capture range: each instance holds all the work of "
		       "its input\n");
	else if (agg_per_whole_input(a))
		printf("  no ProfilerStep#N or step ranges: the profiler's capture range is "
		       "one step\n  over all the work of its input\n");
	printf("  duration  mean %s", stats_fmt_span(st, b, sizeof(b), s.mean));
	printf("  std %s", stats_fmt_span(st, b, sizeof(b), s.std));
	printf("  min %s", stats_fmt_span(st, b, sizeof(b), (double)s.min));
	printf("  median %s", stats_fmt_span(st, b, sizeof(b), s.p50));
	if (st->opt.line_width && st->opt.line_width < 120)
		printf("\n          ");   /* the line is some 115 columns */
	printf("  p95 %s", stats_fmt_span(st, b, sizeof(b), s.p95));
	printf("  p99 %s", stats_fmt_span(st, b, sizeof(b), s.p99));
	printf("  max %s\n", stats_fmt_span(st, b, sizeof(b), (double)s.max));
	struct table_col cols[] = {
		{ "Count/inst", 0 }, { "Min-Max", 0 }, { stats_time_title(st, "Time/inst"), 0 },
		{ stats_time_title(st, "StdDev"), 0 }, { stats_time_title(st, "Min"), 0 },
		{ stats_time_title(st, "Median"), 0 }, { stats_time_title(st, "P95"), 0 },
		{ stats_time_title(st, "Max"), 0 }, { "Share %", 0 }, { "Kind", 1 },
		{ "Name", 1 },
	};
	struct table tb;
	table_init(&tb, cols, 11);
	size_t *order = per_children_order(a, p);
	int last_rank = -1;
	uint64_t in_rank = 0;
	for (size_t i = 0; i < p->nchildren; i++) {
		const struct perinst_child *ch = &p->children[order[i]];
		struct per_child d = per_child(a, ch);
		if (d.rank != last_rank) {
			last_rank = d.rank;
			in_rank = 0;
		}
		if (st->opt.top && in_rank++ >= st->opt.top)
			continue;
		struct dist cd = ch->count, td = ch->time;
		struct summary cs, ts;
		dist_summary(&cd, &cs);
		dist_summary(&td, &ts);
		table_row(&tb);
		table_set(&tb, 0, cs.mean == floor(cs.mean) ? "%.0f" : "%.2f", cs.mean);
		table_set(&tb, 1, "%" PRId64 "-%" PRId64, cs.min, cs.max);
		table_set(&tb, 2, "%s", stats_fmt_time(st, b, sizeof(b), ts.mean));
		table_set(&tb, 3, "%s", stats_fmt_time(st, b, sizeof(b), ts.std));
		table_set(&tb, 4, "%s", stats_fmt_time(st, b, sizeof(b), (double)ts.min));
		table_set(&tb, 5, "%s", stats_fmt_time(st, b, sizeof(b), ts.p50));
		table_set(&tb, 6, "%s", stats_fmt_time(st, b, sizeof(b), ts.p95));
		table_set(&tb, 7, "%s", stats_fmt_time(st, b, sizeof(b), (double)ts.max));
		table_set(&tb, 8, "%.1f", stats_pct((double)ts.total, (double)s.total));
		table_set(&tb, 9, "%s", d.kind);
		table_set(&tb, 10, "%s", *d.domain ? d.domain : "");
		if (*d.domain)
			table_set(&tb, 10, "%s:%s", d.domain, stats_display_name(st, d.name));
		else
			table_set(&tb, 10, "%s", stats_display_name(st, d.name));
	}
	static const int drop[] = { 3, 6, 4, 1, 7, 5 };
	stats_fit_columns(&tb, st->opt.line_width, drop, sizeof(drop) / sizeof(drop[0]));
	table_print(&tb, stdout, "  ");
	table_free(&tb);
	free(order);
	if (p->gpu_outside)
		printf("  GPU work launched outside any instance: %" PRIu64 " operations, %s\n",
		       p->gpu_outside, stats_fmt_span(st, b, sizeof(b), (double)p->gpu_outside_ns));
	if (p->gpu_no_launch)
		printf("  GPU work whose launch call is not in the trace: %" PRIu64
		       " operations, %s\n", p->gpu_no_launch,
		       stats_fmt_span(st, c, sizeof(c), (double)p->gpu_no_launch_ns));
	text_steps(st, p);
}

/* One row per instance (step): its window, the work charged to it,
 * and its breakdown; at most --top rows (20 without). */
static void
text_steps(struct stats *st, const struct perinst_result *p)
{
	char b[64];
	struct table_col cols[8 + BD_NCATS] = {
		{ "#", 0 }, { stats_time_title(st, "Begin"), 0 },
		{ stats_time_title(st, "Duration"), 0 }, { stats_time_title(st, "GPU busy"), 0 },
		{ "Busy %", 0 }, { stats_time_title(st, "Kernels"), 0 },
		{ stats_time_title(st, "Copies"), 0 }, { stats_time_title(st, "API"), 0 },
	};
	for (int c = 0; c < BD_NCATS; c++)
		cols[8 + c] = (struct table_col){ stats_time_title(st, stats_bd_titles[c]), 0 };
	struct table tb;
	table_init(&tb, cols, 8 + BD_NCATS);
	size_t max = st->opt.top ? (size_t)st->opt.top : 20;
	int64_t t0 = agg_run(st->agg)->t_min;
	for (size_t i = 0; i < p->ninst && i < max; i++) {
		const struct perinst_instance *in = &p->inst[i];
		table_row(&tb);
		table_set(&tb, 0, "%zu", i + 1);
		table_set(&tb, 1, "%s", stats_fmt_time(st, b, sizeof(b), (double)(in->begin - t0)));
		table_set(&tb, 2, "%s", stats_fmt_time(st, b, sizeof(b), (double)in->dur));
		table_set(&tb, 3, "%s", stats_fmt_time(st, b, sizeof(b), (double)stats_step_busy(in)));
		table_set(&tb, 4, "%.1f", stats_pct((double)stats_step_busy(in), (double)in->dur));
		table_set(&tb, 5, "%s", stats_fmt_time(st, b, sizeof(b), (double)in->kernel));
		table_set(&tb, 6, "%s", stats_fmt_time(st, b, sizeof(b), (double)in->copy));
		table_set(&tb, 7, "%s", stats_fmt_time(st, b, sizeof(b), (double)in->api));
		for (int c = 0; c < BD_NCATS; c++)
			table_set(&tb, 8 + (size_t)c, "%s",
			          stats_fmt_time(st, b, sizeof(b), (double)in->cat[c]));
	}
	printf("  steps: Kernels, Copies, API: the work launched or called in the step;\n"
	       "         Kernel to Other: its window split as TensorBoard's overview does\n");
	static const int drop[] = { 1, 4, 14, 13, 12, 11, 10, 9, 8 };
	stats_fit_columns(&tb, st->opt.line_width, drop, sizeof(drop) / sizeof(drop[0]));
	if (tb.nrows && !tb.cells[8 + BD_OTHER]) {
		/* a breakdown is whole or not at all */
		static const int all[] = { 8, 9, 10, 11, 12, 13 };
		stats_fit_columns(&tb, 1, all, sizeof(all) / sizeof(all[0]));
		tb.max_width = st->opt.line_width;
	}
	table_print(&tb, stdout, "  ");
	table_free(&tb);
	if (p->ninst > max)
		printf("  ... %zu more steps (--top, --json or --csv show them)\n", p->ninst - max);
}

static void
text_findings(struct stats *st)
{
	text_section(st, "Findings");
	if (!st->findings.n) {
		printf("  none\n");
		return;
	}
	for (size_t i = 0; i < st->findings.n; i++) {
		const char *t = st->findings.v[i].type;
		const char *label = !strcmp(t, "hotspot") ? "worth a look"
		                  : !strcmp(t, "warmup") ? "warm-up"
		                  : !strcmp(t, "gpu_idle") ? "GPU idle"
		                  : !strcmp(t, "variance") ? "high variance"
		                  : !strcmp(t, "dropped") ? "data loss" : t;
		printf("  %-13s %s\n", label, st->findings.v[i].message);
	}
}

void
stats_text(struct stats *st, unsigned reports)
{
	int force = st->opt.reports != 0;
	if (reports & 1u << R_RUN)
		text_run(st);
	if (reports & 1u << R_KERNELS) text_ops(st, AGG_KERNELS, force);
	if (reports & 1u << R_MEMOPS) text_ops(st, AGG_MEMOPS, force);
	if (reports & 1u << R_API) text_ops(st, AGG_API, force);
	if (reports & 1u << R_RANGES) text_ops(st, AGG_RANGES, force);
	if (reports & 1u << R_PROCESSES) text_processes(st);
	if (reports & 1u << R_GPU) text_gpus(st);
	if (reports & 1u << R_MEMORY) text_memory(st);
	text_per(st);
	if (st->opt.agg.operators)
		stats_text_operators(st);
	if (st->opt.agg.distributed)
		stats_text_ranks(st);
	if (reports & 1u << R_FINDINGS)
		text_findings(st);
}
