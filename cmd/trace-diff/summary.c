/* SPDX-License-Identifier: MIT */
/*
 * trace-diff: the run-wide figures of both traces, as trace-stats
 * reports them: wall time, CPU time, GPU busy time, time in kernels,
 * copies and API calls, bytes copied, peaks of RSS and device memory.
 * When both traces hold several runs (trace-record --repeat), the times
 * that split by run (wall, kernels, copies, API) are compared per run:
 * the mean over the runs, tested with Welch's t-test over them.  When
 * the two have different numbers of runs, the figures that add up over
 * the runs but are not kept run by run (CPU time, GPU busy time, bytes
 * copied) are compared by their means per run too, untested; the peaks
 * of memory are the highest of any run, as they are.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "common/util.h"
#include "support.h"

const char *const diff_metric_keys[] = {
	"wall", "gpu", "kernel", "copy", "api", "cpu", "device", "bytes",
	"max_rss", "device_memory",
};

/* Per-run values of a trace with several runs, or NULL (caller frees). */
static double *
per_run(struct agg *a, enum diff_metric m, size_t *n)
{
	const struct agg_run *run = agg_run(a);
	*n = run->runs_seen;
	double *v = calloc(*n ? *n : 1, sizeof(*v));
	if (!v)
		cmd_die(EXIT_USAGE, "out of memory");
	if (m == DM_WALL) {
		for (size_t i = 0; i < *n; i++)
			v[i] = (double)run->run_wall[i];
		return v;
	}
	enum agg_table t = m == DM_KERNEL ? AGG_KERNELS : m == DM_COPY ? AGG_MEMOPS : AGG_API;
	for (size_t g = 0; g < agg_ngroups(a); g++) {
		const struct agg_group *gr = agg_group(a, g);
		if (gr->table != t)
			continue;
		for (uint32_t i = 0; i < gr->nrun_total && i < *n; i++)
			v[i] += (double)gr->run_total[i];
	}
	return v;
}

/* Whole-trace value of a metric; 0 when the trace has none. */
static int
whole(struct agg *a, enum diff_metric m, int64_t device, double *out)
{
	double v = 0;
	int has = 0;
	switch (m) {
	case DM_WALL:
		v = (double)agg_wall(a);
		has = agg_run(a)->events > 0;
		break;
	case DM_GPU:
	case DM_DEVICE:
		for (size_t i = 0; i < agg_ndevices(a); i++) {
			const struct agg_device *d = agg_device(a, i);
			if (!d->ops || (m == DM_DEVICE && d->index != device))
				continue;
			v += (double)d->busy;
			has = 1;
		}
		break;
	case DM_KERNEL:
	case DM_COPY:
	case DM_API:
	case DM_BYTES: {
		enum agg_table t = m == DM_KERNEL ? AGG_KERNELS : m == DM_API ? AGG_API
		                 : AGG_MEMOPS;
		for (size_t i = 0; i < agg_ngroups(a); i++) {
			const struct agg_group *g = agg_group(a, i);
			if (g->table != t || !g->s.count)
				continue;
			if (m == DM_BYTES && g->kind != TK_MEMCPY)
				continue;
			v += m == DM_BYTES ? (double)g->bytes : (double)g->s.total;
			has = 1;
		}
		break;
	}
	case DM_CPU:
		for (size_t i = 0; i < agg_nprocesses(a); i++) {
			const struct agg_process *p = agg_process(a, i);
			if (p->has_rusage) {
				v += (double)(p->utime + p->stime);
				has = 1;
			}
		}
		break;
	case DM_RSS:
		for (size_t i = 0; i < agg_nprocesses(a); i++) {
			const struct agg_process *p = agg_process(a, i);
			double x = p->has_rusage ? (double)p->max_rss : 0;
			if (p->has_rss && p->rss_max > x)
				x = p->rss_max;
			if ((p->has_rusage && p->max_rss) || p->has_rss) {
				v = x > v ? x : v;
				has = 1;
			}
		}
		break;
	case DM_DEVMEM:
		for (size_t i = 0; i < agg_ndevices(a); i++) {
			const struct agg_device *d = agg_device(a, i);
			double x = (double)d->peak;
			if (d->has_counter && d->counter_max > x)
				x = d->counter_max;
			if (d->has_counter || d->allocs) {
				v = x > v ? x : v;
				has = 1;
			}
		}
		break;
	default:
		break;
	}
	*out = v;
	return has;
}

static void
mean_sd(const double *v, size_t n, double *mean, double *sd)
{
	double s = 0, ss = 0;
	for (size_t i = 0; i < n; i++)
		s += v[i];
	*mean = n ? s / (double)n : 0;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - *mean) * (v[i] - *mean);
	*sd = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
}

double
diff_summary_ratio(const struct diff_summary_row *r)
{
	return r->v[0] > 0 ? r->v[1] / r->v[0] : r->v[1] > 0 ? INFINITY : 1;
}

enum diff_verdict
diff_summary_verdict(const struct diff *df, const struct diff_summary_row *r,
                     double threshold)
{
	double ratio = diff_summary_ratio(r);
	if (r->test.test == TEST_WELCH)
		return diff_decide(ratio, threshold, df->opt->alpha, r->test.p,
		                   r->test.direction, -1, 0);
	/* one value each: the threshold alone decides */
	int dir = r->v[1] > r->v[0] ? 1 : r->v[1] < r->v[0] ? -1 : 0;
	return diff_decide(ratio, threshold, df->opt->alpha, 0, dir, -1, 0);
}

static void
add_row(struct diff *df, enum diff_metric m, int64_t device)
{
	struct diff_summary_row r;
	memset(&r, 0, sizeof(r));
	r.metric = m;
	r.device = device;
	r.time = m < DM_BYTES;
	r.test.p = 1;
	for (int s = 0; s < 2; s++)
		r.has[s] = whole(df->agg[s], m, device, &r.v[s]);
	if (!r.has[0] && !r.has[1])
		return;
	int splits = m == DM_WALL || m == DM_KERNEL || m == DM_COPY || m == DM_API;
	if (df->runs && splits && r.has[0] && r.has[1]) {
		double *v[2];
		for (int s = 0; s < 2; s++) {
			v[s] = per_run(df->agg[s], m, &r.nruns[s]);
			mean_sd(v[s], r.nruns[s], &r.v[s], &r.sd[s]);
		}
		diff_welch_values(v[0], r.nruns[0], v[1], r.nruns[1], &r.test);
		free(v[0]);
		free(v[1]);
	} else if (df->per_run && m != DM_RSS && m != DM_DEVMEM) {
		/* a total over 5 runs against one over 3: their means per run
		 * compare, with no spread known to test them */
		for (int s = 0; s < 2; s++) {
			r.v[s] = diff_per_run(df, s, r.v[s]);
			r.nruns[s] = (size_t)df->divisor[s];
			r.sd[s] = NAN;
		}
	}
	if (r.time && r.has[0] && r.has[1]) {
		r.has_verdict = 1;
		r.verdict = diff_summary_verdict(df, &r, df->opt->threshold);
		/* one value each: beyond the threshold, but nothing tells it
		 * from the run-to-run noise (--fail-if-slower still judges it) */
		if (r.test.test == TEST_NONE && (r.verdict == V_SLOWER || r.verdict == V_FASTER))
			r.verdict = V_UNSURE;
	}
	struct diff_summary_row *rows = tkp_grow(df->summary, &df->capsummary,
	                                         df->nsummary + 1, sizeof(*rows));
	if (!rows)
		cmd_die(EXIT_USAGE, "out of memory");
	df->summary = rows;
	df->summary[df->nsummary++] = r;
}

static int
cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
	return (a > b) - (a < b);
}

void
diff_summarise(struct diff *df)
{
	add_row(df, DM_WALL, -1);
	add_row(df, DM_CPU, -1);
	add_row(df, DM_GPU, -1);
	/* when a trace has more than one GPU, each by its ordinal too */
	int64_t idx[64];
	size_t n = 0, most = 0;
	for (int s = 0; s < 2; s++) {
		size_t here = 0;
		for (size_t i = 0; i < agg_ndevices(df->agg[s]); i++) {
			const struct agg_device *d = agg_device(df->agg[s], i);
			if (!d->ops)
				continue;
			here++;
			int seen = 0;
			for (size_t k = 0; k < n; k++)
				seen |= idx[k] == d->index;
			if (!seen && n < 64)
				idx[n++] = d->index;
		}
		most = here > most ? here : most;
	}
	qsort(idx, n, sizeof(*idx), cmp_i64);
	for (size_t k = 0; most > 1 && k < n; k++)
		add_row(df, DM_DEVICE, idx[k]);
	add_row(df, DM_KERNEL, -1);
	add_row(df, DM_COPY, -1);
	add_row(df, DM_API, -1);
	add_row(df, DM_BYTES, -1);
	add_row(df, DM_RSS, -1);
	add_row(df, DM_DEVMEM, -1);
}

const struct diff_summary_row *
diff_summary_find(const struct diff *df, enum diff_metric m)
{
	for (size_t i = 0; i < df->nsummary; i++)
		if (df->summary[i].metric == m)
			return &df->summary[i];
	return NULL;
}
