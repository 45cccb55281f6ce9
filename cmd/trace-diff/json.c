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
#include "common/json_out.h"
#include "common/util.h"

static json_t *
jns(double ns)
{
	return json_integer(cmd_ns_int(ns));
}

/* A real, or null when it is not a number (JSON has no NaN). */
static json_t *
jreal(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *
json_input(struct diff *df, int side)
{
	struct agg *a = df->agg[side];
	const struct agg_run *run = agg_run(a);
	json_t *o = json_object();
	cmd_jset(o, "input", cmd_jstr(cmd_display_path(df->opt->paths[side])));
	json_t *files = json_array();
	for (size_t i = 0; i < df->opt->nfiles[side]; i++)
		cmd_jappend(files, cmd_jstr(cmd_display_path(df->opt->files[side][i])));
	cmd_jset(o, "files", files);
	cmd_jset(o, "summary", json_boolean(df->from_summary[side]));
	cmd_jset(o, "wall_ns", json_integer(agg_wall(a)));
	cmd_jset(o, "events", json_integer((json_int_t)run->events));
	cmd_jset(o, "dropped", json_integer((json_int_t)run->dropped));
	cmd_jset(o, "processes", json_integer((json_int_t)agg_nprocesses(a)));
	json_t *runs = json_array();
	for (uint32_t i = 0; i < run->runs_seen; i++)
		cmd_jappend(runs, json_integer(run->run_wall[i]));
	cmd_jset(o, "run_wall_ns", runs);
	json_t *meta = json_object();
	if (!meta)
		cmd_die(EXIT_USAGE, "out of memory");
	for (size_t i = 0; i < run->nmeta; i++)
		cmd_jadd_value(meta, run->meta[i].key, run->meta[i].value);
	cmd_jset(o, "metadata", meta);
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
		cmd_jset(o, "metric", json_string(diff_metric_keys[r->metric]));
		cmd_jset(o, "device", r->metric == DM_DEVICE ? json_integer(r->device) : json_null());
		cmd_jset(o, "unit", json_string(r->time ? "ns" : "bytes"));
		int both = r->has[0] && r->has[1];
		cmd_jset(o, "before", r->has[0] ? jns(r->v[0]) : json_null());
		cmd_jset(o, "after", r->has[1] ? jns(r->v[1]) : json_null());
		cmd_jset(o, "delta", both ? jns(r->v[1] - r->v[0]) : json_null());
		double ratio = both ? diff_summary_ratio(r) : NAN;
		cmd_jset(o, "ratio", jreal(ratio));
		cmd_jset(o, "speedup", r->time ? jreal(1 / ratio) : json_null());
		cmd_jset(o, "per_run", json_boolean(r->nruns[0] > 0));
		cmd_jset(o, "runs_before", json_integer((json_int_t)r->nruns[0]));
		cmd_jset(o, "runs_after", json_integer((json_int_t)r->nruns[1]));
		/* a mean per run of a figure not kept run by run has no sd */
		cmd_jset(o, "sd_before", r->nruns[0] && !isnan(r->sd[0]) ? jns(r->sd[0])
		                                                        : json_null());
		cmd_jset(o, "sd_after", r->nruns[1] && !isnan(r->sd[1]) ? jns(r->sd[1])
		                                                       : json_null());
		cmd_jset(o, "test", json_test(&r->test));
		cmd_jset(o, "p_value", json_p(&r->test));
		cmd_jset(o, "verdict", r->has_verdict ? json_string(diff_verdict_names[r->verdict])
		                                  : json_null());
		cmd_jappend(arr, o);
	}
	return arr;
}

static json_t *
json_explain(struct diff *df)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < df->nparts; i++) {
		const struct diff_part *p = &df->parts[i];
		json_t *o = json_object();
		cmd_jset(o, "part", json_string(diff_part_keys[p->part]));
		cmd_jset(o, "before_ns", jns(p->v[0]));
		cmd_jset(o, "after_ns", jns(p->v[1]));
		cmd_jset(o, "delta_ns", jns(p->v[1] - p->v[0]));
		cmd_jset(o, "share_pct", jreal(diff_part_share(df, p)));
		cmd_jappend(arr, o);
	}
	return arr;
}

static json_t *
json_side(const struct diff *df, const struct diff_row *r, int side)
{
	const struct diff_side *d = &r->side[side];
	if (!d->present)
		return json_null();
	json_t *o = json_object();
	/* per run (the root's "per_run"): a count need not be whole */
	cmd_jset(o, "count", df->per_run ? json_real(d->count)
	                                 : json_integer((json_int_t)d->s.count));
	cmd_jset(o, "total_ns", df->per_run ? jns(d->total) : json_integer(d->s.total));
	cmd_jset(o, "mean_ns", jns(d->s.mean));
	cmd_jset(o, "std_ns", jns(d->s.std));
	cmd_jset(o, "min_ns", json_integer(d->s.min));
	cmd_jset(o, "median_ns", jns(d->s.p50));
	cmd_jset(o, "p95_ns", jns(d->s.p95));
	cmd_jset(o, "p99_ns", jns(d->s.p99));
	cmd_jset(o, "max_ns", json_integer(d->s.max));
	if (r->table == AGG_MEMOPS)
		cmd_jset(o, "bytes", df->per_run ? jns(diff_per_run(df, side, (double)d->bytes))
		                                 : json_integer((json_int_t)d->bytes));
	if (d->nruns) {
		json_t *runs = json_array();
		for (size_t i = 0; i < d->nruns; i++)
			cmd_jappend(runs, jns(d->runs[i]));
		cmd_jset(o, "run_total_ns", runs);
	}
	if (df->opt->normalize) {
		json_t *names = json_array();
		for (size_t i = 0; i < d->nnames; i++)
			cmd_jappend(names, cmd_jstr(d->names[i]));
		cmd_jset(o, "names", names);
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
			cmd_jset(o, "report", json_string(diff_table_keys[t]));
			cmd_jset(o, "kind", json_string(tk_kind_name(r->kind)));
			cmd_jset(o, "domain", cmd_jstr(r->domain));
			cmd_jset(o, "name", cmd_jstr(r->name));
			cmd_jset(o, "verdict", json_string(diff_verdict_names[r->verdict]));
			cmd_jset(o, "before", json_side(df, r, 0));
			cmd_jset(o, "after", json_side(df, r, 1));
			cmd_jset(o, "delta_ns", jns(r->delta));
			cmd_jset(o, "ratio", jreal(r->ratio));
			cmd_jset(o, "speedup", jreal(1 / r->ratio));
			cmd_jset(o, "change_pct", jreal((r->ratio - 1) * 100));
			cmd_jset(o, "test", json_test(&r->test));
			cmd_jset(o, "p_value", json_p(&r->test));
			cmd_jset(o, "runs_test", json_test(&r->runs_test));
			cmd_jset(o, "runs_p_value", json_p(&r->runs_test));
			cmd_jset(o, "runs_count_p_value", json_p(&r->count_test));
			cmd_jset(o, "p_holm", jreal(r->p_holm));
			const char *ev = diff_evidence_name(diff_row_evidence(df, r));
			cmd_jset(o, "evidence", ev ? json_string(ev) : json_null());
			cmd_jset(o, "calls", r->calls ? json_string(r->calls > 0 ? "more" : "fewer")
			                              : json_null());
			cmd_jset(o, "why", r->why ? json_string(r->why) : json_null());
			cmd_jappend(arr, o);
		}
		free(v);
	}
	return arr;
}

static json_t *
json_result(struct diff *df)
{
	json_t *o = json_object();
	cmd_jset(o, "status", json_integer(df->regression ? 1 : 0));
	json_t *checks = json_array();
	for (size_t i = 0; i < df->nchecks; i++) {
		const struct diff_check *c = &df->checks[i];
		json_t *k = json_object();
		cmd_jset(k, "type", json_string(c->type));
		cmd_jset(k, "subject", cmd_jstr(c->subject));
		cmd_jset(k, "kind", c->kind ? json_string(c->kind) : json_null());
		cmd_jset(k, "value", jreal(c->value));
		cmd_jset(k, "limit", jreal(c->limit));
		cmd_jset(k, "pass", json_boolean(c->pass));
		cmd_jappend(checks, k);
	}
	cmd_jset(o, "checks", checks);
	return o;
}

void
diff_json(struct diff *df)
{
	const struct diff_options *opt = df->opt;
	unsigned reports = opt->reports ? opt->reports : DR_SUMMARY | DR_EXPLAIN | DR_GROUPS;
	json_t *root = json_object();
	cmd_jset(root, "schema", json_string("tracekit-diff/1"));
	cmd_jset(root, "before", json_input(df, 0));
	cmd_jset(root, "after", json_input(df, 1));
	cmd_jset(root, "threshold", json_real(opt->threshold));
	cmd_jset(root, "alpha", json_real(opt->alpha));
	cmd_jset(root, "min_share", json_real(opt->min_share));
	cmd_jset(root, "normalize", json_boolean(opt->normalize));
	cmd_jset(root, "metric", json_string(diff_metric_keys[opt->metric]));
	cmd_jset(root, "runs", json_boolean(df->runs));
	if (df->per_run) {
		/* only then, so that the output of as many runs on each side
		 * stays as it was */
		cmd_jset(root, "per_run", json_true());
		cmd_jset(root, "runs_before", json_integer((json_int_t)df->divisor[0]));
		cmd_jset(root, "runs_after", json_integer((json_int_t)df->divisor[1]));
	}
	cmd_jset(root, "resolution_ns", json_integer(df->resolution));
	cmd_jset(root, "tested", json_integer((json_int_t)df->family));
	json_t *warnings = json_array();
	for (size_t i = 0; i < df->nwarnings; i++) {
		const struct diff_warning *w = &df->warnings[i];
		json_t *o = json_object();
		cmd_jset(o, "field", json_string(w->field));
		cmd_jset(o, "before", cmd_jstr(w->before));
		cmd_jset(o, "after", cmd_jstr(w->after));
		cmd_jappend(warnings, o);
	}
	cmd_jset(root, "warnings", warnings);
	if (reports & DR_SUMMARY)
		cmd_jset(root, "summary", json_summary(df));
	if (reports & DR_EXPLAIN)
		cmd_jset(root, "explain", json_explain(df));
	if (reports & DR_GROUPS)
		cmd_jset(root, "groups", json_groups(df));
	cmd_jset(root, "result", json_result(df));
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
