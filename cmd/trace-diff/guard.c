/* SPDX-License-Identifier: MIT */
/*
 * trace-diff: guard rails.  A comparison of runs on different machines
 * or setups says more about the setups than about the change: when
 * the two traces differ in GPU model, GPU count, world size, CUDA
 * driver or runtime version or command line, each difference becomes a
 * warning, printed with the report and kept in JSON.  Only what both
 * traces record is compared: a trace that does not say is no evidence
 * of a difference.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "common/util.h"
#include "support.h"

const char *
diff_meta(struct agg *a, const char *key)
{
	const struct agg_run *run = agg_run(a);
	for (size_t i = 0; i < run->nmeta; i++)
		if (strcmp(run->meta[i].key, key) == 0)
			return run->meta[i].value;
	return NULL;
}

const char *
diff_command(struct agg *a)
{
	const char *c = diff_meta(a, "command");
	if (c)
		return c;
	for (size_t i = 0; i < agg_nprocesses(a); i++)
		if (*agg_process(a, i)->command)
			return agg_process(a, i)->command;
	return "";
}

static int
cmp_str(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The GPUs that did work (else every GPU the trace names): their
 * distinct models, sorted, joined by ", "; *count gets how many GPUs.
 * NULL when the trace names none.  Caller frees. */
static char *
gpu_models(struct agg *a, size_t *count)
{
	size_t n = agg_ndevices(a), busy = 0, k = 0;
	for (size_t i = 0; i < n; i++)
		busy += agg_device(a, i)->ops > 0;
	const char **names = cmd_xrealloc(NULL, (n ? n : 1) * sizeof(*names));
	for (size_t i = 0; i < n; i++) {
		const struct agg_device *d = agg_device(a, i);
		if ((!busy || d->ops) && d->name && *d->name)
			names[k++] = d->name;
	}
	*count = busy ? busy : n;
	qsort(names, k, sizeof(*names), cmp_str);
	size_t len = 1;
	for (size_t i = 0; i < k; i++)
		len += strlen(names[i]) + 2;
	char *out = k ? cmd_xrealloc(NULL, len) : NULL;
	size_t o = 0;
	for (size_t i = 0; i < k; i++) {
		if (i && strcmp(names[i], names[i - 1]) == 0)
			continue;
		o += (size_t)snprintf(out + o, len - o, "%s%s", o ? ", " : "", names[i]);
	}
	free(names);
	return out;
}

static void
warn_if(struct diff *df, const char *field, const char *what, const char *b,
        const char *a)
{
	if (!b || !a || !*b || !*a || strcmp(b, a) == 0)
		return;
	struct diff_warning *w = tkp_grow(df->warnings, &df->capwarnings, df->nwarnings + 1,
	                                  sizeof(*w));
	if (!w)
		cmd_die(EXIT_USAGE, "out of memory");
	df->warnings = w;
	df->warnings[df->nwarnings++] = (struct diff_warning){
		field, what, cmd_xstrdup(b), cmd_xstrdup(a),
	};
}

/* The first of these keys a trace has (trace-record's, Kineto's). */
static const char *
meta_any(struct agg *a, const char *const *keys)
{
	for (; *keys; keys++) {
		const char *v = diff_meta(a, *keys);
		if (v)
			return v;
	}
	return NULL;
}

void
diff_guard(struct diff *df)
{
	static const char *const world[] = { "distributedInfo.world_size", "world_size", NULL };
	static const char *const driver[] = { "cuda.driver", "cuda_driver_version", NULL };
	static const char *const runtime[] = { "cuda.runtime", "cuda_runtime_version", NULL };
	size_t n[2];
	char *models[2], count[2][32];
	for (int s = 0; s < 2; s++) {
		models[s] = gpu_models(df->agg[s], &n[s]);
		snprintf(count[s], sizeof(count[s]), "%zu", n[s]);
	}
	warn_if(df, "gpu_model", "GPU model", models[0], models[1]);
	warn_if(df, "gpu_count", "GPU count", n[0] ? count[0] : NULL, n[1] ? count[1] : NULL);
	free(models[0]);
	free(models[1]);
	warn_if(df, "world_size", "world size", meta_any(df->agg[0], world),
	        meta_any(df->agg[1], world));
	warn_if(df, "cuda_driver", "CUDA driver", meta_any(df->agg[0], driver),
	        meta_any(df->agg[1], driver));
	warn_if(df, "cuda_runtime", "CUDA runtime", meta_any(df->agg[0], runtime),
	        meta_any(df->agg[1], runtime));
	warn_if(df, "command", "command line", diff_command(df->agg[0]),
	        diff_command(df->agg[1]));
}
