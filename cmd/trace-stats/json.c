/* SPDX-License-Identifier: MIT */
/*
 * trace-stats JSON output: one object, schema "tracekit-stats/1"
 * (documented in trace-stats(1)), integer nanoseconds.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include <jansson.h>

#include "stats.h"
#include "analysis/dist.h"
#include "common/json_out.h"
#include "common/util.h"

/* ---- JSON ------------------------------------------------------------------------------ */


static json_t *
jint(double ns)
{
	return json_integer(cmd_ns_int(ns));
}


static void
jstats(json_t *o, const struct summary *s, const char *prefix)
{
	char k[64];
#define JS(name, v) (snprintf(k, sizeof(k), "%s" name, prefix), cmd_jset(o, k, jint(v)))
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
json_ops(const struct stats *st, enum agg_table t)
{
	struct stats_rows r = stats_table_rows(st, t);
	json_t *arr = json_array();
	for (size_t i = 0; i < r.shown; i++) {
		const struct agg_group *g = r.v[i];
		json_t *o = json_object();
		cmd_jset(o, "name", cmd_jstr(g->name));
		cmd_jset(o, "kind", json_string(tk_kind_name(g->kind)));
		if (t == AGG_RANGES)
			cmd_jset(o, "domain", cmd_jstr(g->domain));
		cmd_jset(o, "count", json_integer((json_int_t)g->s.count));
		cmd_jset(o, "total_ns", json_integer(g->s.total));
		cmd_jset(o, "time_pct", json_real(stats_pct((double)g->s.total, (double)r.total)));
		jstats(o, &g->s, "");
		if (st->opt.baseline) {
			/* its time in each run of a repeated recording, 0 in a
			 * run without it */
			json_t *runs = json_array();
			for (uint32_t k = 0; k < agg_run(st->agg)->runs_seen; k++)
				cmd_jappend(runs, json_integer(k < g->nrun_total ? g->run_total[k]
				                                                 : 0));
			cmd_jset(o, "runs_ns", runs);
			json_t *counts = json_array();
			for (uint32_t k = 0; k < agg_run(st->agg)->runs_seen; k++)
				cmd_jappend(counts, json_integer(k < g->nrun_total
				                                 ? (json_int_t)g->run_count[k] : 0));
			cmd_jset(o, "runs_count", counts);
		}
		if (t == AGG_MEMOPS) {
			if (g->kind == TK_MEMCPY && g->copy_kind) {
				cmd_jset(o, "copy_kind", json_string(tk_copy_kind_name(g->copy_kind)));
				cmd_jset(o, "src_kind", json_string(tk_mem_kind_name(g->src_kind)));
			}
			if (g->kind == TK_MEMSET || g->copy_kind)
				cmd_jset(o, "dst_kind", json_string(tk_mem_kind_name(g->dst_kind)));
			cmd_jset(o, "bytes", json_integer((json_int_t)g->bytes));
			cmd_jset(o, "bytes_per_s", json_real(round(stats_bandwidth(g))));
			cmd_jset(o, "mean_bytes_per_s", json_real(round(stats_mean_bandwidth(g))));
		}
		json_array_append_new(arr, o);
	}
	free(r.v);
	return arr;
}

/* What the text says on a table's title line and its "... N more"
 * line: groups, instances and time in all, and what --top left out. */
static json_t *
json_totals(const struct stats *st, unsigned reports)
{
	static const enum report rep[AGG_NTABLES] = {
		R_KERNELS, R_MEMOPS, R_API, R_RANGES };
	json_t *o = json_object();
	for (int t = 0; t < AGG_NTABLES; t++) {
		if (!(reports & 1u << rep[t]))
			continue;
		struct stats_rows r = stats_table_rows(st, (enum agg_table)t);
		struct stats_rest rest = stats_rows_rest(&r);
		cmd_jset(o, stats_table_keys[t], json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
			"groups", (json_int_t)r.n, "count", (json_int_t)r.count,
			"total_ns", (json_int_t)r.total, "shown", (json_int_t)r.shown,
			"more_groups", (json_int_t)(r.n - r.shown),
			"more_count", (json_int_t)rest.count, "more_ns", (json_int_t)rest.total));
		free(r.v);
	}
	return o;
}

static json_t *
json_run(const struct stats *st)
{
	struct agg *a = st->agg;
	const struct agg_run *run = agg_run(a);
	json_t *o = json_object();
	json_t *in = json_array();
	for (int i = 0; i < st->nfiles; i++)
		json_array_append_new(in, cmd_jstr(cmd_display_path(st->files[i])));
	cmd_jset(o, "inputs", in);
	cmd_jset(o, "scopes", json_integer(run->scopes));
	json_t *meta = json_object();
	if (!meta)
		cmd_die(EXIT_USAGE, "out of memory");
	for (size_t i = 0; i < run->nmeta; i++)
		cmd_jadd_value(meta, run->meta[i].key, run->meta[i].value);
	cmd_jset(o, "metadata", meta);
	cmd_jset(o, "wall_ns", json_integer(agg_wall(a)));
	cmd_jset(o, "t_min", json_integer(run->events ? run->t_min : 0));
	cmd_jset(o, "t_max", json_integer(run->events ? run->t_max : 0));
	cmd_jset(o, "events", json_integer((json_int_t)run->events));
	cmd_jset(o, "events_read", json_integer((json_int_t)run->events_read));
	json_t *kinds = json_object();
	for (unsigned k = 1; k <= TK_KIND_MAX; k++)
		if (run->kind[k])
			cmd_jset(kinds, tk_kind_name(k), json_integer((json_int_t)run->kind[k]));
	cmd_jset(o, "kinds", kinds);
	cmd_jset(o, "dropped", json_integer((json_int_t)run->dropped));
	json_t *drops = json_array();
	for (size_t i = 0; i < run->ndrops; i++)
		json_array_append_new(drops, json_pack("{s:o,s:I}",
			"reason", cmd_jstr(run->drops[i].reason),
			"count", (json_int_t)run->drops[i].count));
	cmd_jset(o, "drops", drops);
	cmd_jset(o, "skipped_unknown", json_integer((json_int_t)run->skipped));
	cmd_jset(o, "processes", json_integer((json_int_t)agg_nprocesses(a)));
	size_t ngpus = 0;
	for (size_t i = 0; i < agg_ndevices(a); i++)
		ngpus += agg_device(a, i)->index >= 0;
	cmd_jset(o, "gpus", json_integer((json_int_t)ngpus));
	if (st->opt.agg.run) {
		cmd_jset(o, "run", json_integer(st->opt.agg.run));
		cmd_jset(o, "run_missing", json_boolean(run->run_missing));
	}
	json_t *runs = json_array();
	for (uint32_t i = 0; i < run->runs_seen; i++)
		json_array_append_new(runs, json_pack("{s:I,s:I}", "run", (json_int_t)i + 1,
		                                      "wall_ns", (json_int_t)run->run_wall[i]));
	cmd_jset(o, "runs", runs);
	return o;
}

static json_t *
json_processes(struct agg *a)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < agg_nprocesses(a); i++) {
		const struct agg_process *p = agg_process(a, i);
		json_t *o = json_object();
		cmd_jset(o, "pid", json_integer(p->pid));
		cmd_jset(o, "ppid", json_integer(p->ppid));
		cmd_jset(o, "host", cmd_jstr(p->host));
		cmd_jset(o, "name", cmd_jstr(p->name));
		cmd_jset(o, "label", cmd_jstr(p->label));
		cmd_jset(o, "command", cmd_jstr(p->command));
		if (p->has_rusage) {
			cmd_jset(o, "wall_ns", json_integer(p->wall));
			cmd_jset(o, "user_ns", json_integer(p->utime));
			cmd_jset(o, "system_ns", json_integer(p->stime));
			cmd_jset(o, "cpu_pct", json_real(stats_pct((double)(p->utime + p->stime),
			                                 (double)p->wall)));
			cmd_jset(o, "max_rss_bytes", json_integer((json_int_t)p->max_rss));
			cmd_jset(o, "exit", json_string(p->exit == TK_EXIT_NORMAL ? "normal"
			                 : p->exit == TK_EXIT_SIGNAL ? "signal" : "unknown"));
			if (p->exit == TK_EXIT_NORMAL)
				cmd_jset(o, "exit_code", json_integer(p->exit_code));
			if (p->exit == TK_EXIT_SIGNAL)
				cmd_jset(o, "signal", json_integer(p->signal));
		}
		if (p->has_rss)
			cmd_jset(o, "rss_peak_bytes", jint(p->rss_max));
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
		cmd_jset(o, "device", d->index >= 0 ? json_integer(d->index) : json_null());
		cmd_jset(o, "name", cmd_jstr(d->name));
		cmd_jset(o, "host", cmd_jstr(d->host));
		cmd_jset(o, "busy_ns", json_integer(d->busy));
		cmd_jset(o, "busy_pct", json_real(stats_pct((double)d->busy, (double)wall)));
		cmd_jset(o, "kernel_ns", json_integer(d->kernel));
		cmd_jset(o, "copy_ns", json_integer(d->copy));
		cmd_jset(o, "overlap_ns", json_integer(d->kernel + d->copy - d->busy));
		cmd_jset(o, "idle_ns", json_integer(wall - d->busy));
		cmd_jset(o, "idle_pct", json_real(stats_pct((double)(wall - d->busy), (double)wall)));
		cmd_jset(o, "ops", json_integer((json_int_t)d->ops));
		cmd_jset(o, "first_ns", json_integer(d->first));
		cmd_jset(o, "last_ns", json_integer(d->last));
		cmd_jset(o, "exact", json_boolean(!d->overlap));
		json_array_append_new(arr, o);
	}
	return arr;
}

/* A peak of the PyTorch allocator into o: "<what>_peak_bytes",
 * "<what>_peak_ns", "<what>_peak_op" (the operation at it, null when
 * none was found). */
static void
peak_json(json_t *o, const char *what, double bytes, int64_t ts, const char *op)
{
	char k[48];
	snprintf(k, sizeof(k), "%s_peak_bytes", what);
	cmd_jset(o, k, jint(bytes));
	snprintf(k, sizeof(k), "%s_peak_ns", what);
	cmd_jset(o, k, json_integer(ts));
	snprintf(k, sizeof(k), "%s_peak_op", what);
	cmd_jset(o, k, op ? cmd_jstr(op) : json_null());
}

static const char *const peak_what[2] = { "allocated", "reserved" };

/* The PyTorch allocator's peaks: "allocator": {"allocated_peak_bytes",
 * "allocated_peak_ns", "allocated_peak_op", and the same of "reserved"}. */
static void
allocator_json(json_t *x, const struct agg_allocator *m)
{
	if (!m->has[0] && !m->has[1])
		return;
	json_t *o = json_object();
	for (int w = 0; w < 2; w++)
		if (m->has[w])
			peak_json(o, peak_what[w], m->peak[w], m->peak_ts[w], m->op[w]);
	cmd_jset(x, "allocator", o);
}

/* A step's allocator peaks: one object per device ("device") and per
 * process's host memory ("pid"), as allocator_json() words them. */
static json_t *
step_memory_json(struct agg *a, const struct perinst_instance *in)
{
	size_t n;
	const struct allocpeak_step *v = agg_step_memory(a, &n);
	json_t *arr = json_array();
	for (uint32_t i = in->mem_first; v && i < n && i < in->mem_first + in->mem_n; i++) {
		const struct allocpeak_step *m = &v[i];
		json_t *o = json_object();
		if (m->is_host) {
			cmd_jset(o, "pid", json_integer(agg_process(a, (size_t)m->where)->pid));
		} else {
			int64_t d = agg_device(a, (size_t)m->where)->index;
			cmd_jset(o, "device", d >= 0 ? json_integer(d) : json_null());
		}
		for (int w = 0; w < 2; w++)
			if (m->has[w])
				peak_json(o, peak_what[w], m->peak[w], m->peak_ts[w], m->op[w]);
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
		if (!(p->has_rusage && p->max_rss) && !p->has_rss &&
		    !p->allocator.has[0] && !p->allocator.has[1])
			continue;
		json_t *x = json_object();
		cmd_jset(x, "pid", json_integer(p->pid));
		cmd_jset(x, "name", cmd_jstr(p->name));
		if (p->has_rusage)
			cmd_jset(x, "max_rss_bytes", json_integer((json_int_t)p->max_rss));
		if (p->has_rss)
			cmd_jset(x, "rss_peak_bytes", jint(p->rss_max));
		allocator_json(x, &p->allocator);
		json_array_append_new(procs, x);
	}
	for (size_t i = 0; i < agg_ndevices(a); i++) {
		const struct agg_device *d = agg_device(a, i);
		if (!d->has_counter && !d->allocs && !d->frees &&
		    !d->allocator.has[0] && !d->allocator.has[1])
			continue;
		json_t *x = json_object();
		cmd_jset(x, "device", d->index >= 0 ? json_integer(d->index) : json_null());
		if (d->has_counter)
			cmd_jset(x, "counter_peak_bytes", jint(d->counter_max));
		if (d->allocs || d->frees) {
			cmd_jset(x, "allocated_peak_bytes", json_integer(d->peak));
			cmd_jset(x, "allocs", json_integer((json_int_t)d->allocs));
			cmd_jset(x, "frees", json_integer((json_int_t)d->frees));
			cmd_jset(x, "alloc_bytes", json_integer((json_int_t)d->alloc_bytes));
			cmd_jset(x, "not_freed_bytes", json_integer(d->in_use));
		}
		allocator_json(x, &d->allocator);
		json_array_append_new(devs, x);
	}
	cmd_jset(o, "processes", procs);
	cmd_jset(o, "devices", devs);
	return o;
}

static json_t *
json_per(const struct stats *st)
{
	struct agg *a = st->agg;
	const struct perinst_result *p = agg_per(a);
	json_t *o = json_object();
	struct dist dur = p->dur;
	struct summary s;
	dist_summary(&dur, &s);
	int64_t span = p->last > p->first ? p->last - p->first : 0;
	cmd_jset(o, "range", cmd_jstr(stats_per_name(st)));
	cmd_jset(o, "instances", json_integer((json_int_t)s.count));
	cmd_jset(o, "per_second", json_real(span > 0 ? (double)s.count * 1e9 / (double)span : 0));
	json_t *d = json_object();
	cmd_jset(d, "total_ns", json_integer(s.total));
	jstats(d, &s, "");
	cmd_jset(o, "duration", d);
	json_t *arr = json_array();
	size_t *order = per_children_order(a, p);
	for (size_t i = 0; i < p->nchildren; i++) {
		const struct perinst_child *ch = &p->children[order[i]];
		struct per_child dd = per_child(a, ch);
		struct dist cd = ch->count, td = ch->time;
		struct summary cs, ts;
		dist_summary(&cd, &cs);
		dist_summary(&td, &ts);
		json_t *c = json_object();
		cmd_jset(c, "kind", json_string(dd.kind));
		cmd_jset(c, "domain", cmd_jstr(dd.domain));
		cmd_jset(c, "name", cmd_jstr(dd.name));
		cmd_jset(c, "instances_with", json_integer((json_int_t)ch->instances_with));
		json_t *cnt = json_object();
		cmd_jset(cnt, "mean", json_real(cs.mean));
		cmd_jset(cnt, "min", json_integer(cs.min));
		cmd_jset(cnt, "median", json_real(cs.p50));
		cmd_jset(cnt, "max", json_integer(cs.max));
		cmd_jset(cnt, "total", json_integer(cs.total));
		cmd_jset(c, "count_per_instance", cnt);
		json_t *tm = json_object();
		cmd_jset(tm, "total_ns", json_integer(ts.total));
		jstats(tm, &ts, "");
		cmd_jset(c, "time_per_instance", tm);
		cmd_jset(c, "share_pct", json_real(stats_pct((double)ts.total, (double)s.total)));
		json_array_append_new(arr, c);
	}
	free(order);
	cmd_jset(o, "children", arr);
	cmd_jset(o, "gpu_outside", json_pack("{s:I,s:I}", "count", (json_int_t)p->gpu_outside,
	                                 "total_ns", (json_int_t)p->gpu_outside_ns));
	cmd_jset(o, "gpu_no_launch", json_pack("{s:I,s:I}", "count", (json_int_t)p->gpu_no_launch,
	                                   "total_ns", (json_int_t)p->gpu_no_launch_ns));
	return o;
}

/* The table of steps: each instance of the per-instance view. */
static json_t *
json_steps(const struct stats *st)
{
	const struct perinst_result *p = agg_per(st->agg);
	json_t *o = json_object(), *arr = json_array();
	cmd_jset(o, "range", cmd_jstr(stats_per_name(st)));
	cmd_jset(o, "whole_input", json_boolean(agg_per_whole_input(st->agg)));
	for (size_t i = 0; i < p->ninst; i++) {
		const struct perinst_instance *in = &p->inst[i];
		json_t *x = json_object(), *bd = json_object();
		cmd_jset(x, "begin_ns", json_integer(in->begin));
		cmd_jset(x, "dur_ns", json_integer(in->dur));
		cmd_jset(x, "gpu_busy_ns", json_integer(stats_step_busy(in)));
		cmd_jset(x, "kernel_ns", json_integer(in->kernel));
		cmd_jset(x, "copy_ns", json_integer(in->copy));
		cmd_jset(x, "api_ns", json_integer(in->api));
		for (int c = 0; c < BD_NCATS; c++)
			cmd_jset(bd, stats_bd_keys[c], json_integer(in->cat[c]));
		cmd_jset(x, "breakdown", bd);
		size_t nmem;
		if (agg_step_memory(st->agg, &nmem) && nmem)
			cmd_jset(x, "memory", step_memory_json(st->agg, in));
		json_array_append_new(arr, x);
	}
	cmd_jset(o, "instances", arr);
	return o;
}

static json_t *
json_findings(const struct stats *st)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < st->findings.n; i++) {
		json_t *o = json_object();
		cmd_jset(o, "type", json_string(st->findings.v[i].type));
		cmd_jset(o, "report", json_string(st->findings.v[i].report));
		cmd_jset(o, "name", cmd_jstr(st->findings.v[i].name));
		cmd_jset(o, "value", json_real(st->findings.v[i].value));
		cmd_jset(o, "message", cmd_jstr(st->findings.v[i].message));
		json_array_append_new(arr, o);
	}
	return arr;
}

/* Write and flush, reporting a failure by the errno of the write itself
 * (a large fwrite bypasses the buffer, so flushing again later would
 * not tell why it failed). */
static void
stats_emit(const char *s, size_t n)
{
	errno = 0;
	if (fwrite(s, 1, n, stdout) == n && fflush(stdout) == 0)
		return;
	int e = errno;
	if (e == EPIPE)
		exit(0);
	cmd_die(EXIT_USAGE, "write error: %s", strerror(e ? e : EIO));
}

void
stats_json(struct stats *st, unsigned reports)
{
	struct agg *a = st->agg;
	size_t converted = agg_run(a)->exact.converted;
	json_t *o = json_object();
	cmd_jset(o, "schema", json_string("tracekit-stats/1"));
	cmd_jset(o, "approx", json_boolean(st->opt.agg.approx || converted));
	cmd_jset(o, "approx_rows", json_integer((json_int_t)converted));
	if (st->opt.baseline)
		cmd_jset(o, "baseline", json_pack("{s:I}", "resolution_ns",
		                                  (json_int_t)agg_resolution(a)));
	if (reports & 1u << R_RUN) {
		cmd_jset(o, "run", json_run(st));
		cmd_jset(o, "totals", json_totals(st, reports));
	}
	for (int t = 0; t < AGG_NTABLES; t++) {
		static const enum report rep[AGG_NTABLES] = {
			R_KERNELS, R_MEMOPS, R_API, R_RANGES };
		if (reports & 1u << rep[t])
			cmd_jset(o, stats_table_keys[t], json_ops(st, (enum agg_table)t));
	}
	if (reports & 1u << R_PROCESSES) cmd_jset(o, "processes", json_processes(a));
	if (reports & 1u << R_GPU) cmd_jset(o, "gpus", json_gpus(a));
	if (reports & 1u << R_MEMORY) cmd_jset(o, "memory", json_memory(a));
	if (agg_per(a)) {
		cmd_jset(o, "per", json_per(st));
		cmd_jset(o, "steps", json_steps(st));
	}
	if (st->opt.agg.operators)
		cmd_jset(o, "operators", stats_json_operators(st));
	if (st->opt.agg.distributed)
		cmd_jset(o, "distributed", stats_json_ranks(st));
	if (reports & 1u << R_FINDINGS) cmd_jset(o, "findings", json_findings(st));
	char *text = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	if (!text)
		cmd_die(EXIT_USAGE, "out of memory");
	stats_emit(text, strlen(text));
	stats_emit("\n", 1);
	free(text);
	json_decref(o);
}
