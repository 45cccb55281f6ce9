/* SPDX-License-Identifier: MIT */
/*
 * trace-diff: a side read from a summary instead of a trace.  A CI job
 * keeps `trace-stats --baseline run.tkt > base.json` (kilobytes) rather
 * than the trace; trace-diff knows it by its content (a JSON object
 * whose "schema" is tracekit-stats/1 and that has a "baseline" object)
 * and restores from it the aggregation trace-stats had made
 * (analysis/aggregate.h, agg_restore_*): each operation's count, total,
 * percentiles and time per run, the run-wide figures, GPUs, processes,
 * memory peaks, metadata and the clock tick.  What a summary cannot
 * give is each instance's duration: an operation whose verdict rests
 * on the instances' test is "unsure" (match.c); with several runs on
 * both sides the verdicts rest on the runs, and are those of the trace.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "diff.h"
#include "common/util.h"

/* How far into a file its schema is looked for: trace-stats writes it
 * as the first key. */
#define PEEK_BYTES 4096

int
diff_is_summary(const char *path)
{
	/* only a file can be looked into and then read: what a pipe
	 * gives is gone once looked at */
	struct stat st;
	if (strcmp(path, "-") == 0 || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return 0;
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	char buf[PEEK_BYTES + 1];
	ssize_t n = read(fd, buf, PEEK_BYTES);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* a trace (binary, or Chrome JSON, which may also open with "{")
	 * never has this schema; a NUL ends the look at binary data */
	size_t i = strspn(buf, " \t\r\n");
	return buf[i] == '{' && strstr(buf, "\"tracekit-stats/1\"") != NULL;
}

/* ---- reading the JSON ------------------------------------------------------------------- */

/* What a malformed summary says: the first thing found wrong. */
struct reading {
	const char *path;
	const char *error;       /* static; NULL while all is well */
};

static int64_t
get_int(struct reading *rd, const json_t *o, const char *key, int required)
{
	const json_t *v = json_object_get(o, key);
	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	if (json_is_real(v)) {
		/* a real out of range would not convert: clamp it */
		double x = json_real_value(v);
		return x >= 9.2e18 ? INT64_MAX : x <= -9.2e18 ? INT64_MIN : (int64_t)x;
	}
	if (required && !rd->error)
		rd->error = "a number is missing or not a number";
	return 0;
}

static double
get_real(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : 0;
}

static const char *
get_str(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static void
restore_run(struct reading *rd, struct agg *a, const json_t *run)
{
	struct agg_run *r = agg_restore_run(a);
	if (!json_is_object(run)) {
		rd->error = "it has no \"run\" object";
		return;
	}
	int64_t wall = get_int(rd, run, "wall_ns", 1);
	r->t_min = get_int(rd, run, "t_min", 1);
	r->t_max = get_int(rd, run, "t_max", 1);
	int64_t span;
	if (__builtin_sub_overflow(r->t_max, r->t_min, &span) || span != wall || wall < 0) {
		/* what agg_wall() gives is the wall time said */
		r->t_min = 0;
		r->t_max = wall > 0 ? wall : 0;
	}
	r->events = (uint64_t)get_int(rd, run, "events", 1);
	r->events_read = (uint64_t)get_int(rd, run, "events_read", 0);
	r->dropped = (uint64_t)get_int(rd, run, "dropped", 0);
	const json_t *meta = json_object_get(run, "metadata");
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)meta, key, v) {
		if (json_is_string(v)) {
			agg_restore_meta(a, key, json_string_value(v));
		} else if (json_is_array(v)) {
			size_t i;
			const json_t *x;
			json_array_foreach(v, i, x)
				if (json_is_string(x))
					agg_restore_meta(a, key, json_string_value(x));
		}
	}
	const json_t *runs = json_object_get(run, "runs");
	size_t n = json_array_size(runs);
	if (n > UINT32_MAX) {
		rd->error = "too many runs";
		return;
	}
	r->runs_seen = (uint32_t)n;
	r->run_wall = n ? cmd_xrealloc(NULL, n * sizeof(*r->run_wall)) : NULL;
	for (size_t i = 0; i < n; i++)
		r->run_wall[i] = get_int(rd, json_array_get(runs, i), "wall_ns", 1);
}

static void
restore_group(struct reading *rd, struct agg *a, enum agg_table t, const json_t *o,
              uint32_t nruns)
{
	const char *name = get_str(o, "name"), *kind_name = get_str(o, "kind");
	unsigned kind = kind_name ? cmd_kind_from_name(kind_name) : 0;
	if (!name || !kind || agg_table_of(kind) != (int)t) {
		rd->error = "an operation has no name or a kind not of its table";
		return;
	}
	struct agg_group *g = agg_restore_group(a, kind, get_str(o, "domain"), name, 0, 0, 0);
	if (!g)
		return;              /* --name or --exclude leaves it out */
	if (g->s.count) {
		rd->error = "an operation is listed twice";
		return;
	}
	struct summary *s = &g->s;
	int64_t count = get_int(rd, o, "count", 1);
	s->count = count > 0 ? (uint64_t)count : 0;
	s->total = get_int(rd, o, "total_ns", 1);
	if (s->total < 0 || count < 0) {
		/* a trace's are never negative (totals saturate); the deltas
		 * of the comparison could overflow */
		rd->error = "a count or a time is negative";
		return;
	}
	s->mean = get_real(o, "mean_ns");
	s->std = get_real(o, "std_ns");
	s->min = get_int(rd, o, "min_ns", 1);
	s->p50 = get_real(o, "median_ns");
	s->p95 = get_real(o, "p95_ns");
	s->p99 = get_real(o, "p99_ns");
	s->max = get_int(rd, o, "max_ns", 1);
	g->bytes = (uint64_t)get_int(rd, o, "bytes", 0);
	const json_t *runs = json_object_get(o, "runs_ns");
	const json_t *counts = json_object_get(o, "runs_count");
	size_t n = json_array_size(runs);
	if (n != nruns || json_array_size(counts) != nruns) {
		rd->error = "an operation's \"runs_ns\" or \"runs_count\" does not list every run";
		return;
	}
	if (n) {
		g->run_total = cmd_xrealloc(NULL, n * sizeof(*g->run_total));
		g->run_count = cmd_xrealloc(NULL, n * sizeof(*g->run_count));
		g->nrun_total = (uint32_t)n;
		for (size_t i = 0; i < n; i++) {
			const json_t *x = json_array_get(runs, i), *c = json_array_get(counts, i);
			g->run_total[i] = json_is_integer(x) && json_integer_value(x) > 0
			                ? (int64_t)json_integer_value(x) : 0;
			g->run_count[i] = json_is_integer(c) && json_integer_value(c) > 0
			                ? (uint64_t)json_integer_value(c) : 0;
		}
	}
}

/* The device of this ordinal (with memory figures but no GPU work in
 * the "gpus" list: one of its own). */
static struct agg_device *
device_of(struct agg *a, int64_t index)
{
	for (size_t i = 0; i < agg_ndevices(a); i++)
		if (agg_device(a, i)->index == index)
			return (struct agg_device *)agg_device(a, i);
	return agg_restore_device(a, "", index, "");
}

static void
restore_gpus(struct reading *rd, struct agg *a, const json_t *gpus, const json_t *memory)
{
	size_t i;
	const json_t *o;
	json_array_foreach(gpus, i, o) {
		const json_t *dev = json_object_get(o, "device");
		struct agg_device *d = agg_restore_device(a, get_str(o, "host"),
			json_is_integer(dev) ? (int64_t)json_integer_value(dev) : -1,
			get_str(o, "name"));
		d->busy = get_int(rd, o, "busy_ns", 1);
		d->kernel = get_int(rd, o, "kernel_ns", 0);
		d->copy = get_int(rd, o, "copy_ns", 0);
		d->ops = (uint64_t)get_int(rd, o, "ops", 1);
	}
	json_array_foreach(json_object_get(memory, "devices"), i, o) {
		const json_t *dev = json_object_get(o, "device");
		struct agg_device *d = device_of(a, json_is_integer(dev)
		                                    ? (int64_t)json_integer_value(dev) : -1);
		if (json_object_get(o, "counter_peak_bytes")) {
			d->has_counter = 1;
			d->counter_max = get_real(o, "counter_peak_bytes");
		}
		d->peak = get_int(rd, o, "allocated_peak_bytes", 0);
		d->allocs = (uint64_t)get_int(rd, o, "allocs", 0);
		d->frees = (uint64_t)get_int(rd, o, "frees", 0);
	}
}

static void
restore_processes(struct reading *rd, struct agg *a, const json_t *procs)
{
	size_t i;
	const json_t *o;
	json_array_foreach(procs, i, o) {
		struct agg_process *p = agg_restore_process(a, get_str(o, "host"),
			get_int(rd, o, "pid", 0), get_str(o, "name"), get_str(o, "command"),
			get_str(o, "label"));
		p->ppid = get_int(rd, o, "ppid", 0);
		if (json_object_get(o, "wall_ns")) {
			p->has_rusage = 1;
			p->wall = get_int(rd, o, "wall_ns", 0);
			p->utime = get_int(rd, o, "user_ns", 0);
			p->stime = get_int(rd, o, "system_ns", 0);
			p->max_rss = (uint64_t)get_int(rd, o, "max_rss_bytes", 0);
		}
		if (json_object_get(o, "rss_peak_bytes")) {
			p->has_rss = 1;
			p->rss_max = get_real(o, "rss_peak_bytes");
		}
	}
}

struct agg *
diff_read_summary(const struct agg_options *o, const char *path)
{
	json_error_t err;
	json_t *root = json_load_file(path, 0, &err);
	if (!root) {
		cmd_warn("%s: not a readable summary: %s (line %d)", cmd_display_path(path),
		         err.text, err.line);
		return NULL;
	}
	struct reading rd = { path, NULL };
	const json_t *base = json_object_get(root, "baseline");
	if (!json_is_object(root) || !json_is_object(base)) {
		cmd_warn("%s: a trace-stats summary without what trace-diff needs: "
		         "make it with trace-stats --baseline", cmd_display_path(path));
		json_decref(root);
		return NULL;
	}
	struct agg *a = agg_new(o);
	if (!a)
		cmd_die(EXIT_USAGE, "out of memory");
	int64_t tick = get_int(&rd, base, "resolution_ns", 1);
	agg_restore_resolution(a, tick > 0 ? tick : 1);
	restore_run(&rd, a, json_object_get(root, "run"));
	uint32_t nruns = agg_run(a)->runs_seen;
	for (int t = 0; t < AGG_NTABLES && !rd.error; t++) {
		const json_t *rows = json_object_get(root, diff_table_keys[t]);
		if (!json_is_array(rows)) {
			rd.error = "a table of operations is missing";
			break;
		}
		size_t i;
		const json_t *row;
		json_array_foreach(rows, i, row)
			if (!rd.error)
				restore_group(&rd, a, (enum agg_table)t, row, nruns);
	}
	restore_gpus(&rd, a, json_object_get(root, "gpus"), json_object_get(root, "memory"));
	restore_processes(&rd, a, json_object_get(root, "processes"));
	json_decref(root);
	if (rd.error) {
		cmd_warn("%s: not a trace-stats --baseline summary: %s", cmd_display_path(path),
		         rd.error);
		agg_free(a);
		return NULL;
	}
	agg_finish(a);
	return a;
}
