/* SPDX-License-Identifier: MIT */
/*
 * trace-diff: what explains the change of the wall time.  The run-wide
 * time splits over the parts a performance engineer acts on: compute
 * kernels, communication kernels (NCCL, RCCL), copies and memsets,
 * CUDA API calls on the CPU, and GPU idle time (wall minus busy, per
 * GPU that did work); each part's before, after and change, largest
 * change first, with its share of the wall's change.  The parts
 * overlap (a kernel runs while the CPU waits in an API call), so they
 * explain rather than add up.  With different numbers of runs on the
 * two sides (struct diff, per_run), each is a mean per run.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"

const char *const diff_part_keys[DP_NPARTS] = {
	"kernels", "communication", "copies", "api", "gpu_idle",
};
const char *const diff_part_labels[DP_NPARTS] = {
	"compute kernels", "communication", "copies and memsets", "CUDA API calls",
	"GPU idle",
};

/* A collective of NCCL or RCCL: its kernels say so in their names. */
static int
communication(const char *name)
{
	for (const char *p = name; *p; p++)
		if ((tolower((unsigned char)p[0]) == 'n' || tolower((unsigned char)p[0]) == 'r') &&
		    strncasecmp(p + 1, "ccl", 3) == 0)
			return 1;
	return 0;
}

/* The parts of side s (per run with per_run). */
static void
measure(const struct diff *df, int side, double v[DP_NPARTS], int has[DP_NPARTS])
{
	struct agg *a = df->agg[side];
	for (size_t i = 0; i < agg_ngroups(a); i++) {
		const struct agg_group *g = agg_group(a, i);
		if (!g->s.count)
			continue;
		int p = g->table == AGG_KERNELS ? (communication(g->name) ? DP_COMM : DP_KERNELS)
		      : g->table == AGG_MEMOPS ? DP_COPIES : g->table == AGG_API ? DP_API : -1;
		if (p < 0)
			continue;
		v[p] += (double)g->s.total;
		has[p] = 1;
	}
	for (int p = 0; p < DP_NPARTS; p++)
		v[p] = diff_per_run(df, side, v[p]);
	double busy = 0;
	size_t gpus = 0;
	for (size_t i = 0; i < agg_ndevices(a); i++) {
		const struct agg_device *d = agg_device(a, i);
		if (d->ops) {
			busy += (double)d->busy;
			gpus++;
		}
	}
	if (gpus) {
		double idle = diff_wall(df, side) - diff_per_run(df, side, busy) / (double)gpus;
		v[DP_IDLE] = idle > 0 ? idle : 0;
		has[DP_IDLE] = 1;
	}
}

static int
cmp_parts(const void *x, const void *y)
{
	const struct diff_part *a = x, *b = y;
	double da = fabs(a->v[1] - a->v[0]), db = fabs(b->v[1] - b->v[0]);
	if (da != db)
		return da > db ? -1 : 1;
	return (int)a->part - (int)b->part;
}

void
diff_explain(struct diff *df)
{
	double v[2][DP_NPARTS];
	int has[2][DP_NPARTS];
	memset(v, 0, sizeof(v));
	memset(has, 0, sizeof(has));
	for (int s = 0; s < 2; s++)
		measure(df, s, v[s], has[s]);
	df->wall_delta = diff_wall(df, 1) - diff_wall(df, 0);
	df->nparts = 0;
	for (int p = 0; p < DP_NPARTS; p++) {
		if (!has[0][p] && !has[1][p])
			continue;
		df->parts[df->nparts++] = (struct diff_part){
			(enum diff_part_kind)p, { v[0][p], v[1][p] },
		};
	}
	qsort(df->parts, df->nparts, sizeof(df->parts[0]), cmp_parts);
}

double
diff_part_share(const struct diff *df, const struct diff_part *p)
{
	return df->wall_delta != 0 ? (p->v[1] - p->v[0]) / df->wall_delta * 100 : NAN;
}
