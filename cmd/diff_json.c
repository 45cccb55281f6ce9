/* SPDX-License-Identifier: MIT */
/*
 * trace-diff JSON output: one object, schema "tracekit-diff/1"
 * (documented in trace-diff(1)), integer nanoseconds; a figure that
 * does not exist (no test, a side without the operation) is null.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "diff.h"
#include "util.h"

static json_t *
jstr(const char *s)
{
	size_t n;
	const char *u = cmd_utf8(s, strlen(s), &n);
	return json_stringn_nocheck(u, n);
}

static json_t *
jns(double ns)
{
	return json_integer(diff_ns_int(ns));
}

/* A real, or null when it is not a number (JSON has no NaN). */
static json_t *
jreal(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static void
jset(json_t *o, const char *k, json_t *v)
{
	if (!v || json_object_set_new(o, k, v) < 0)
		cmd_die(EXIT_USAGE, "out of memory");
}

static void
jappend(json_t *a, json_t *v)
{
	if (!v || json_array_append_new(a, v) < 0)
		cmd_die(EXIT_USAGE, "out of memory");
}

static json_t *
json_input(struct diff *df, int side)
{
	struct agg *a = df->agg[side];
	const struct agg_run *run = agg_run(a);
	json_t *o = json_object();
	jset(o, "input", jstr(cmd_display_path(diff_opt.paths[side])));
	jset(o, "wall_ns", json_integer(agg_wall(a)));
	jset(o, "events", json_integer((json_int_t)run->events));
	jset(o, "dropped", json_integer((json_int_t)run->dropped));
	jset(o, "processes", json_integer((json_int_t)agg_nprocesses(a)));
	json_t *runs = json_array();
	for (uint32_t i = 0; i < run->runs_seen; i++)
		jappend(runs, json_integer(run->run_wall[i]));
	jset(o, "run_wall_ns", runs);
	json_t *meta = json_object();
	for (size_t i = 0; i < run->nmeta; i++) {
		/* a key with several values (merged traces) becomes an array */
		json_t *old = json_object_get(meta, run->meta[i].key);
		json_t *v = jstr(run->meta[i].value);
		if (!old) {
			jset(meta, run->meta[i].key, v);
		} else if (json_is_array(old)) {
			jappend(old, v);
		} else {
			json_t *arr = json_array();
			json_array_append(arr, old);
			jappend(arr, v);
			jset(meta, run->meta[i].key, arr);
		}
	}
	jset(o, "metadata", meta);
	return o;
}

static json_t *
json_test(const struct diff_test_result *t)
{
	const char *name = diff_test_name(t->test);
	return name ? json_string(name) : json_null();
}

static json_t *
json_p(const struct diff_test_result *t)
{
	return t->test == TEST_NONE ? json_null() : json_real(t->p);
}

static json_t *
json_summary(struct diff *df)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < df->nsummary; i++) {
		const struct diff_summary_row *r = &df->summary[i];
		json_t *o = json_object();
		jset(o, "metric", json_string(diff_metric_keys[r->metric]));
		jset(o, "device", r->metric == DM_DEVICE ? json_integer(r->device) : json_null());
		jset(o, "unit", json_string(r->time ? "ns" : "bytes"));
		int both = r->has[0] && r->has[1];
		jset(o, "before", r->has[0] ? jns(r->v[0]) : json_null());
		jset(o, "after", r->has[1] ? jns(r->v[1]) : json_null());
		jset(o, "delta", both ? jns(r->v[1] - r->v[0]) : json_null());
		double ratio = both ? diff_summary_ratio(r) : NAN;
		jset(o, "ratio", jreal(ratio));
		jset(o, "speedup", r->time ? jreal(1 / ratio) : json_null());
		jset(o, "per_run", json_boolean(r->nruns[0] > 0));
		jset(o, "runs_before", json_integer((json_int_t)r->nruns[0]));
		jset(o, "runs_after", json_integer((json_int_t)r->nruns[1]));
		jset(o, "sd_before", r->nruns[0] ? jns(r->sd[0]) : json_null());
		jset(o, "sd_after", r->nruns[1] ? jns(r->sd[1]) : json_null());
		jset(o, "test", json_test(&r->test));
		jset(o, "p_value", json_p(&r->test));
		jset(o, "verdict", r->has_verdict ? json_string(diff_verdict_names[r->verdict])
		                                  : json_null());
		jappend(arr, o);
	}
	return arr;
}

static json_t *
json_side(const struct diff_row *r, int side)
{
	const struct diff_side *d = &r->side[side];
	if (!d->present)
		return json_null();
	json_t *o = json_object();
	jset(o, "count", json_integer((json_int_t)d->s.count));
	jset(o, "total_ns", json_integer(d->s.total));
	jset(o, "mean_ns", jns(d->s.mean));
	jset(o, "std_ns", jns(d->s.std));
	jset(o, "min_ns", json_integer(d->s.min));
	jset(o, "median_ns", jns(d->s.p50));
	jset(o, "p95_ns", jns(d->s.p95));
	jset(o, "p99_ns", jns(d->s.p99));
	jset(o, "max_ns", json_integer(d->s.max));
	if (r->table == AGG_MEMOPS)
		jset(o, "bytes", json_integer((json_int_t)d->bytes));
	if (d->nruns) {
		json_t *runs = json_array();
		for (size_t i = 0; i < d->nruns; i++)
			jappend(runs, jns(d->runs[i]));
		jset(o, "run_total_ns", runs);
	}
	if (diff_opt.normalize) {
		json_t *names = json_array();
		for (size_t i = 0; i < d->nnames; i++)
			jappend(names, jstr(d->names[i]));
		jset(o, "names", names);
	}
	return o;
}

static json_t *
json_groups(struct diff *df)
{
	json_t *arr = json_array();
	for (int t = 0; t < AGG_NTABLES; t++) {
		size_t shown, all;
		struct diff_row **v = diff_table_rows(df, (enum agg_table)t, &shown, &all);
		for (size_t i = 0; i < shown; i++) {
			const struct diff_row *r = v[i];
			json_t *o = json_object();
			jset(o, "report", json_string(diff_table_keys[t]));
			jset(o, "kind", json_string(tk_kind_name(r->kind)));
			jset(o, "domain", jstr(r->domain));
			jset(o, "name", jstr(r->name));
			jset(o, "verdict", json_string(diff_verdict_names[r->verdict]));
			jset(o, "before", json_side(r, 0));
			jset(o, "after", json_side(r, 1));
			jset(o, "delta_ns", json_integer(r->delta));
			jset(o, "ratio", jreal(r->ratio));
			jset(o, "speedup", jreal(1 / r->ratio));
			jset(o, "change_pct", jreal((r->ratio - 1) * 100));
			jset(o, "test", json_test(&r->test));
			jset(o, "p_value", json_p(&r->test));
			jset(o, "runs_test", json_test(&r->runs_test));
			jset(o, "runs_p_value", json_p(&r->runs_test));
			jappend(arr, o);
		}
		free(v);
	}
	return arr;
}

static json_t *
json_result(struct diff *df)
{
	json_t *o = json_object();
	jset(o, "status", json_integer(df->regression ? 1 : 0));
	json_t *checks = json_array();
	for (size_t i = 0; i < df->nchecks; i++) {
		const struct diff_check *c = &df->checks[i];
		json_t *k = json_object();
		jset(k, "type", json_string(c->type));
		jset(k, "subject", jstr(c->subject));
		jset(k, "kind", c->kind ? json_string(c->kind) : json_null());
		jset(k, "value", jreal(c->value));
		jset(k, "limit", jreal(c->limit));
		jset(k, "pass", json_boolean(c->pass));
		jappend(checks, k);
	}
	jset(o, "checks", checks);
	return o;
}

void
diff_json(struct diff *df)
{
	unsigned reports = diff_opt.reports ? diff_opt.reports : DR_SUMMARY | DR_GROUPS;
	json_t *root = json_object();
	jset(root, "schema", json_string("tracekit-diff/1"));
	jset(root, "before", json_input(df, 0));
	jset(root, "after", json_input(df, 1));
	jset(root, "threshold", json_real(diff_opt.threshold));
	jset(root, "alpha", json_real(diff_opt.alpha));
	jset(root, "normalize", json_boolean(diff_opt.normalize));
	jset(root, "metric", json_string(diff_metric_keys[diff_opt.metric]));
	jset(root, "runs", json_boolean(df->runs));
	if (reports & DR_SUMMARY)
		jset(root, "summary", json_summary(df));
	if (reports & DR_GROUPS)
		jset(root, "groups", json_groups(df));
	jset(root, "result", json_result(df));
	/* insertion order: the schema's order, stable between runs */
	char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
	                        JSON_REAL_PRECISION(10));
	if (!text)
		cmd_die(EXIT_USAGE, "out of memory");
	fputs(text, stdout);
	putchar('\n');
	free(text);
	json_decref(root);
}
