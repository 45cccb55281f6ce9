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
#include "util.h"

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
	return json_integer(stats_ns_int(ns));
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
	struct stats_rows r = stats_table_rows(a, t);
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
		jset(o, "time_pct", json_real(stats_pct((double)g->s.total, (double)r.total)));
		jstats(o, &g->s, "");
		if (t == AGG_MEMOPS) {
			if (g->kind == TK_MEMCPY && g->copy_kind) {
				jset(o, "copy_kind", json_string(tk_copy_kind_name(g->copy_kind)));
				jset(o, "src_kind", json_string(tk_mem_kind_name(g->src_kind)));
			}
			if (g->kind == TK_MEMSET || g->copy_kind)
				jset(o, "dst_kind", json_string(tk_mem_kind_name(g->dst_kind)));
			jset(o, "bytes", json_integer((json_int_t)g->bytes));
			jset(o, "bytes_per_s", json_real(round(stats_bandwidth(g))));
			jset(o, "mean_bytes_per_s", json_real(round(stats_mean_bandwidth(g))));
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
	if (stats_opt.agg.run) {
		jset(o, "run", json_integer(stats_opt.agg.run));
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
			jset(o, "cpu_pct", json_real(stats_pct((double)(p->utime + p->stime),
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
		jset(o, "busy_pct", json_real(stats_pct((double)d->busy, (double)wall)));
		jset(o, "kernel_ns", json_integer(d->kernel));
		jset(o, "copy_ns", json_integer(d->copy));
		jset(o, "overlap_ns", json_integer(d->kernel + d->copy - d->busy));
		jset(o, "idle_ns", json_integer(wall - d->busy));
		jset(o, "idle_pct", json_real(stats_pct((double)(wall - d->busy), (double)wall)));
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
	jset(o, "range", jstr(stats_opt.agg.per));
	jset(o, "instances", json_integer((json_int_t)s.count));
	jset(o, "per_second", json_real(span > 0 ? (double)s.count * 1e9 / (double)span : 0));
	json_t *d = json_object();
	jset(d, "total_ns", json_integer(s.total));
	jstats(d, &s, "");
	jset(o, "duration", d);
	json_t *arr = json_array();
	size_t *order = stats_children_order(a, p);
	for (size_t i = 0; i < p->nchildren; i++) {
		const struct perinst_child *ch = &p->children[order[i]];
		struct stats_child dd = stats_child(a, ch);
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
		jset(c, "share_pct", json_real(stats_pct((double)ts.total, (double)s.total)));
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
	for (size_t i = 0; i < stats_nfindings; i++) {
		json_t *o = json_object();
		jset(o, "type", json_string(stats_findings[i].type));
		jset(o, "report", json_string(stats_findings[i].report));
		jset(o, "name", jstr(stats_findings[i].name));
		jset(o, "value", json_real(stats_findings[i].value));
		jset(o, "message", jstr(stats_findings[i].message));
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
stats_json(struct agg *a, unsigned reports, char **files, int nfiles)
{
	json_t *o = json_object();
	jset(o, "schema", json_string("tracekit-stats/1"));
	jset(o, "approx", json_boolean(stats_opt.agg.approx));
	if (reports & 1u << R_RUN) jset(o, "run", json_run(a, files, nfiles));
	for (int t = 0; t < AGG_NTABLES; t++) {
		static const enum report rep[AGG_NTABLES] = {
			R_KERNELS, R_MEMOPS, R_API, R_RANGES };
		if (reports & 1u << rep[t])
			jset(o, stats_table_keys[t], json_ops(a, (enum agg_table)t));
	}
	if (reports & 1u << R_PROCESSES) jset(o, "processes", json_processes(a));
	if (reports & 1u << R_GPU) jset(o, "gpus", json_gpus(a));
	if (reports & 1u << R_MEMORY) jset(o, "memory", json_memory(a));
	if (agg_per(a)) jset(o, "per", json_per(a));
	if (reports & 1u << R_FINDINGS) jset(o, "findings", json_findings());
	char *text = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	if (!text)
		cmd_die(EXIT_USAGE, "out of memory");
	stats_emit(text, strlen(text));
	stats_emit("\n", 1);
	free(text);
	json_decref(o);
}
