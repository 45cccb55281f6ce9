/* SPDX-License-Identifier: MIT */
/*
 * trace-stats CSV output: the operation tables as one table, other
 * reports as their own (libcsv quoting), integer nanoseconds.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <stdio.h>

#include "stats.h"
#include "common/table.h"
#include "common/util.h"

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
csv_ops(struct stats *st, unsigned reports)
{
	csv_record(stdout, ops_columns, NOPS);
	static const enum report rep[AGG_NTABLES] = { R_KERNELS, R_MEMOPS, R_API, R_RANGES };
	for (int t = 0; t < AGG_NTABLES; t++) {
		if (!(reports & 1u << rep[t]))
			continue;
		struct stats_rows r = stats_table_rows(st, (enum agg_table)t);
		for (size_t i = 0; i < r.shown; i++) {
			const struct agg_group *g = r.v[i];
			const struct summary *s = &g->s;
			struct csv_line l = { 0 };
			l.f[0] = stats_table_keys[t];
			l.f[1] = tk_kind_name(g->kind);
			l.f[2] = g->domain;
			l.f[3] = g->name;
			csv_num(&l, 4, "%" PRIu64, s->count);
			csv_num(&l, 5, "%" PRId64, s->total);
			csv_num(&l, 6, "%.4f", stats_pct((double)s->total, (double)r.total));
			csv_num(&l, 7, "%lld", (long long)cmd_ns_int(s->mean));
			csv_num(&l, 8, "%lld", (long long)cmd_ns_int(s->std));
			csv_num(&l, 9, "%" PRId64, s->min);
			csv_num(&l, 10, "%lld", (long long)cmd_ns_int(s->p50));
			csv_num(&l, 11, "%lld", (long long)cmd_ns_int(s->p95));
			csv_num(&l, 12, "%lld", (long long)cmd_ns_int(s->p99));
			csv_num(&l, 13, "%" PRId64, s->max);
			if (t == AGG_MEMOPS) {
				csv_num(&l, 14, "%" PRIu64, g->bytes);
				csv_num(&l, 15, "%.0f", stats_bandwidth(g));
				csv_num(&l, 16, "%.0f", stats_mean_bandwidth(g));
			}
			csv_record(stdout, l.f, NOPS);
		}
		free(r.v);
		cmd_check_output(stdout);
	}
}

/* The totals of the tables printed (their title and "... N more"
 * lines in text), as keys of the run table. */
static void
csv_totals(struct stats *st, unsigned reports)
{
	static const enum report rep[AGG_NTABLES] = { R_KERNELS, R_MEMOPS, R_API, R_RANGES };
	for (int t = 0; t < AGG_NTABLES; t++) {
		if (!(reports & 1u << rep[t]))
			continue;
		struct stats_rows r = stats_table_rows(st, (enum agg_table)t);
		struct stats_rest rest = stats_rows_rest(&r);
		const struct { const char *k; int64_t v; } kv[] = {
			{ "groups", (int64_t)r.n }, { "count", (int64_t)r.count },
			{ "total_ns", r.total }, { "shown", (int64_t)r.shown },
			{ "more_groups", (int64_t)(r.n - r.shown) },
			{ "more_count", (int64_t)rest.count }, { "more_ns", rest.total },
		};
		for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
			char key[64], v[32];
			snprintf(key, sizeof(key), "totals.%s.%s", stats_table_keys[t], kv[i].k);
			snprintf(v, sizeof(v), "%" PRId64, kv[i].v);
			const char *f[3] = { "run", key, v };
			csv_record(stdout, f, 3);
		}
		free(r.v);
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
			csv_num(&l, 10, "%.2f", stats_pct((double)(p->utime + p->stime), (double)p->wall));
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
		csv_num(&l, 5, "%.4f", stats_pct((double)d->busy, (double)wall));
		csv_num(&l, 6, "%" PRId64, d->kernel);
		csv_num(&l, 7, "%" PRId64, d->copy);
		csv_num(&l, 8, "%" PRId64, d->kernel + d->copy - d->busy);
		csv_num(&l, 9, "%" PRId64, wall - d->busy);
		csv_num(&l, 10, "%.4f", stats_pct((double)(wall - d->busy), (double)wall));
		csv_num(&l, 11, "%" PRIu64, d->ops);
		csv_num(&l, 12, "%" PRId64, d->first);
		csv_num(&l, 13, "%" PRId64, d->last);
		l.f[14] = d->overlap ? "false" : "true";
		csv_record(stdout, l.f, 15);
	}
}

/* The memory table's columns: where, the peak and its source; for
 * allocations their counts; for the PyTorch allocator's peaks when and
 * in which operation. */
#define MEMORY_COLS 12

/* The PyTorch allocator's peaks of a process (host) or device: rows
 * with source allocator_allocated, allocator_reserved. */
static void
csv_allocator(const char *where, int64_t pid, int64_t device,
              const struct agg_allocator *m)
{
	static const char *const src[] = { "allocator_allocated", "allocator_reserved" };
	for (int w = 0; w < 2; w++) {
		if (!m->has[w])
			continue;
		struct csv_line l = { 0 };
		l.f[0] = "memory";
		l.f[1] = where;
		if (pid >= 0)
			csv_num(&l, 2, "%" PRId64, pid);
		if (device >= 0)
			csv_num(&l, 3, "%" PRId64, device);
		l.f[4] = src[w];
		csv_num(&l, 5, "%.0f", m->peak[w]);
		csv_num(&l, 10, "%" PRId64, m->peak_ts[w]);
		l.f[11] = m->op[w];
		csv_record(stdout, l.f, MEMORY_COLS);
	}
}

static void
csv_memory(struct agg *a)
{
	static const char *const cols[] = {
		"report", "where", "pid", "device", "source", "peak_bytes",
		"allocs", "frees", "alloc_bytes", "not_freed_bytes", "peak_ns",
		"operation",
	};
	csv_record(stdout, cols, MEMORY_COLS);
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
			csv_record(stdout, l.f, MEMORY_COLS);
		}
		csv_allocator("process", p->pid, -1, &p->allocator);
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
			csv_record(stdout, l.f, MEMORY_COLS);
		}
		csv_allocator("device", -1, d->index, &d->allocator);
	}
}

static void
csv_per(struct stats *st)
{
	struct agg *a = st->agg;
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
	l.f[3] = stats_per_name(st);
	csv_num(&l, 4, "%" PRIu64, s.count);
	csv_num(&l, 5, "%" PRIu64, s.count);
	csv_num(&l, 9, "%lld", (long long)cmd_ns_int(s.mean));
	csv_num(&l, 10, "%lld", (long long)cmd_ns_int(s.std));
	csv_num(&l, 11, "%" PRId64, s.min);
	csv_num(&l, 12, "%lld", (long long)cmd_ns_int(s.p50));
	csv_num(&l, 13, "%lld", (long long)cmd_ns_int(s.p95));
	csv_num(&l, 14, "%lld", (long long)cmd_ns_int(s.p99));
	csv_num(&l, 15, "%" PRId64, s.max);
	csv_num(&l, 16, "100");
	csv_record(stdout, l.f, 17);
	size_t *order = per_children_order(a, p);
	for (size_t i = 0; i < p->nchildren; i++) {
		const struct perinst_child *ch = &p->children[order[i]];
		struct per_child d = per_child(a, ch);
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
		csv_num(&m, 9, "%lld", (long long)cmd_ns_int(ts.mean));
		csv_num(&m, 10, "%lld", (long long)cmd_ns_int(ts.std));
		csv_num(&m, 11, "%" PRId64, ts.min);
		csv_num(&m, 12, "%lld", (long long)cmd_ns_int(ts.p50));
		csv_num(&m, 13, "%lld", (long long)cmd_ns_int(ts.p95));
		csv_num(&m, 14, "%lld", (long long)cmd_ns_int(ts.p99));
		csv_num(&m, 15, "%" PRId64, ts.max);
		csv_num(&m, 16, "%.4f", stats_pct((double)ts.total, (double)s.total));
		csv_record(stdout, m.f, 17);
	}
	free(order);
}

static void
csv_steps(struct stats *st)
{
	static const char *const cols[] = {
		"report", "step", "begin_ns", "dur_ns", "gpu_busy_ns", "kernel_ns",
		"copy_ns", "api_ns", "kernel", "memcpy", "memset", "runtime",
		"dataloader", "cpu", "other", "whole_input",
	};
	const struct perinst_result *p = agg_per(st->agg);
	/* JSON's steps.whole_input, on every row: each step is then all the
	 * work of its input (the profiler's capture range) */
	const char *whole = agg_per_whole_input(st->agg) ? "1" : "0";
	csv_record(stdout, cols, 16);
	for (size_t i = 0; i < p->ninst; i++) {
		const struct perinst_instance *in = &p->inst[i];
		struct csv_line l = { 0 };
		l.f[0] = "steps";
		csv_num(&l, 1, "%zu", i + 1);
		csv_num(&l, 2, "%" PRId64, in->begin);
		csv_num(&l, 3, "%" PRId64, in->dur);
		csv_num(&l, 4, "%" PRId64, stats_step_busy(in));
		csv_num(&l, 5, "%" PRId64, in->kernel);
		csv_num(&l, 6, "%" PRId64, in->copy);
		csv_num(&l, 7, "%" PRId64, in->api);
		for (int c = 0; c < BD_NCATS; c++)
			csv_num(&l, 8 + (size_t)c, "%" PRId64, in->cat[c]);
		l.f[15] = whole;
		csv_record(stdout, l.f, 16);
	}
}

/* The allocator's peaks of each step: a row per step, device or host,
 * and total (-r memory with --steps/--per). */
static void
csv_step_memory(struct stats *st)
{
	static const char *const cols[] = {
		"report", "step", "where", "pid", "device", "source", "peak_bytes",
		"peak_ns", "operation",
	};
	static const char *const src[] = { "allocator_allocated", "allocator_reserved" };
	struct agg *a = st->agg;
	const struct perinst_result *p = agg_per(a);
	size_t n;
	const struct allocpeak_step *v = agg_step_memory(a, &n);
	csv_record(stdout, cols, 9);
	for (size_t i = 0; i < p->ninst; i++) {
		const struct perinst_instance *in = &p->inst[i];
		for (uint32_t k = in->mem_first; k < n && k < in->mem_first + in->mem_n; k++) {
			const struct allocpeak_step *m = &v[k];
			for (int w = 0; w < 2; w++) {
				if (!m->has[w])
					continue;
				struct csv_line l = { 0 };
				l.f[0] = "step_memory";
				csv_num(&l, 1, "%zu", i + 1);
				if (m->is_host) {
					l.f[2] = "process";
					csv_num(&l, 3, "%" PRId64, agg_process(a, (size_t)m->where)->pid);
				} else {
					int64_t d = agg_device(a, (size_t)m->where)->index;
					l.f[2] = "device";
					if (d >= 0)
						csv_num(&l, 4, "%" PRId64, d);
				}
				l.f[5] = src[w];
				csv_num(&l, 6, "%.0f", m->peak[w]);
				csv_num(&l, 7, "%" PRId64, m->peak_ts[w]);
				l.f[8] = m->op[w];
				csv_record(stdout, l.f, 9);
			}
		}
	}
}

static void
csv_findings(const struct stats *st)
{
	static const char *const cols[] = { "report", "type", "table", "name", "value", "message" };
	csv_record(stdout, cols, 6);
	for (size_t i = 0; i < st->findings.n; i++) {
		char v[48];
		snprintf(v, sizeof(v), "%.4f", st->findings.v[i].value);
		const char *f[6] = { "findings", st->findings.v[i].type, st->findings.v[i].report,
		                     st->findings.v[i].name, v, st->findings.v[i].message };
		csv_record(stdout, f, 6);
	}
}

void
stats_csv(struct stats *st, unsigned reports)
{
	struct agg *a = st->agg;
	/* the operation tables share one header; other reports follow as
	 * their own tables after a blank line */
	int sections = 0;
#define SECTION() do { if (sections++) putchar('\n'); } while (0)
	if (reports & STATS_OPS) { SECTION(); csv_ops(st, reports); }
	if (reports & 1u << R_RUN) {
		SECTION();
		csv_run(a);
		csv_totals(st, reports);
	}
	if (reports & 1u << R_PROCESSES) { SECTION(); csv_processes(a); }
	if (reports & 1u << R_GPU) { SECTION(); csv_gpus(a); }
	if (reports & 1u << R_MEMORY) { SECTION(); csv_memory(a); }
	if (agg_per(a)) {
		SECTION();
		csv_per(st);
		SECTION();
		csv_steps(st);
		size_t nmem;
		if ((reports & 1u << R_MEMORY) && agg_step_memory(a, &nmem) && nmem) {
			SECTION();
			csv_step_memory(st);
		}
	}
	if (st->opt.agg.operators) { SECTION(); stats_csv_operators(st); }
	if (st->opt.agg.distributed) { SECTION(); stats_csv_ranks(st); }
	if (reports & 1u << R_FINDINGS) { SECTION(); csv_findings(st); }
#undef SECTION
}
