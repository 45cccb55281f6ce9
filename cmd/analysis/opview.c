/* SPDX-License-Identifier: MIT */
/*
 * The operator view (opview.h).  At a scope's end: each thread's ranges
 * sorted (begin, longer first, name) and nested with a stack of those
 * still open; each launch call finds its innermost range by binary
 * search and the parent chain; each GPU operation finds its launch call
 * by (process, correlation) in a hash table.
 */
#include <stdlib.h>
#include <string.h>

#include "opview.h"
#include "support.h"

struct orange {
	int64_t b, e;
	const char *name;
	uint32_t group, thread;
	int32_t parent;          /* index in the sorted ranges, -1 */
};

struct olaunch {
	uint64_t corr;           /* 0 = empty slot */
	uint32_t process, thread;
	int64_t ts;
	int32_t range;           /* innermost range, -1 */
};

struct ogpu {
	uint64_t corr;
	uint32_t process;
	int64_t dur;
};

struct opview {
	struct orange *r;
	size_t nr, capr;
	struct olaunch *l;       /* in order of arrival */
	size_t nl, capl;
	struct ogpu *g;
	size_t ng, capg;
	struct opview_row *rows; /* by group */
	size_t nrows, caprows;
};

struct opview *
opview_new(void)
{
	return calloc(1, sizeof(struct opview));
}

void
opview_free(struct opview *v)
{
	if (!v)
		return;
	free(v->r);
	free(v->l);
	free(v->g);
	free(v->rows);
	free(v);
}

static struct opview_row *
row(struct opview *v, uint32_t group)
{
	if (group >= v->nrows) {
		struct opview_row *x = tkp_grow(v->rows, &v->caprows, (size_t)group + 1,
		                                sizeof(*x));
		if (!x)
			return NULL;
		for (size_t i = v->nrows; i <= group; i++)
			x[i] = (struct opview_row){ (uint32_t)i, 0, 0, 0, 0, 0 };
		v->rows = x;
		v->nrows = (size_t)group + 1;
	}
	return &v->rows[group];
}

int
opview_range(struct opview *v, uint32_t group, const char *name,
             uint32_t thread, int64_t ts, int64_t dur)
{
	struct orange *x = tkp_grow(v->r, &v->capr, v->nr + 1, sizeof(*x));
	if (!x)
		return -1;
	v->r = x;               /* before row(): the old block may be freed */
	if (!row(v, group))
		return -1;
	if (dur < 0)
		dur = 0;
	v->r[v->nr++] = (struct orange){ ts, ts + dur, name, group, thread, -1 };
	return 0;
}

int
opview_launch(struct opview *v, uint32_t process, uint64_t corr,
              uint32_t thread, int64_t ts)
{
	if (corr == 0)
		return 0;
	struct olaunch *x = tkp_grow(v->l, &v->capl, v->nl + 1, sizeof(*x));
	if (!x)
		return -1;
	v->l = x;
	v->l[v->nl++] = (struct olaunch){ corr, process, thread, ts, -1 };
	return 0;
}

int
opview_gpu(struct opview *v, uint32_t process, uint64_t corr, int64_t dur)
{
	struct ogpu *x = tkp_grow(v->g, &v->capg, v->ng + 1, sizeof(*x));
	if (!x)
		return -1;
	v->g = x;
	v->g[v->ng++] = (struct ogpu){ corr, process, dur };
	return 0;
}

static int
cmp_range(const void *x, const void *y)
{
	const struct orange *p = x, *q = y;
	if (p->thread != q->thread)
		return p->thread < q->thread ? -1 : 1;
	if (p->b != q->b)
		return p->b < q->b ? -1 : 1;
	if (p->e != q->e)
		return p->e > q->e ? -1 : 1;
	return strcmp(p->name, q->name);
}

/* Does open range p hold r, which begins at or after it? */
static int
holds(const struct orange *p, const struct orange *r)
{
	return p->e >= r->e && (p->e > r->b || (p->b == p->e && r->b == r->e));
}

/* Parents and self times; the ranges are sorted. */
static void
nest(struct opview *v)
{
	int32_t top = -1;
	for (size_t i = 0; i < v->nr; i++) {
		struct orange *r = &v->r[i];
		if (i && r->thread != v->r[i - 1].thread)
			top = -1;
		while (top >= 0 && !holds(&v->r[top], r))
			top = v->r[top].parent;
		r->parent = top;
		struct opview_row *w = &v->rows[r->group];
		w->count++;
		w->total += r->e - r->b;
		w->self += r->e - r->b;
		if (top >= 0)
			v->rows[v->r[top].group].self -= r->e - r->b;
		top = (int32_t)i;
	}
}

/* The innermost range of `thread` open at t, -1. */
static int32_t
innermost(const struct opview *v, uint32_t thread, int64_t t)
{
	size_t lo = 0, hi = v->nr;
	while (lo < hi) {       /* the last range with (thread, b) <= (thread, t) */
		size_t mid = lo + (hi - lo) / 2;
		const struct orange *m = &v->r[mid];
		if (m->thread < thread || (m->thread == thread && m->b <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (int32_t j = (int32_t)lo - 1; j >= 0 && v->r[j].thread == thread;
	     j = v->r[j].parent) {
		const struct orange *r = &v->r[j];
		if ((r->b <= t && t < r->e) || (r->b == r->e && r->b == t))
			return j;
	}
	return -1;
}

static struct olaunch *
launch_slot(struct olaunch *tab, size_t cap, uint32_t process, uint64_t corr)
{
	size_t mask = cap - 1;
	for (size_t i = tkp_hash_u64(corr ^ (uint64_t)process << 40) & mask;;
	     i = (i + 1) & mask)
		if (tab[i].corr == 0 || (tab[i].corr == corr && tab[i].process == process))
			return &tab[i];
}

/* GPU time to the range of its launch and that range's ancestors. */
static int
charge_gpu(struct opview *v)
{
	size_t cap = 16;
	while (cap < v->nl * 2)
		cap *= 2;
	struct olaunch *tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return -1;
	for (size_t i = 0; i < v->nl; i++) {
		v->l[i].range = innermost(v, v->l[i].thread, v->l[i].ts);
		*launch_slot(tab, cap, v->l[i].process, v->l[i].corr) = v->l[i];
	}
	for (size_t i = 0; i < v->ng; i++) {
		const struct olaunch *l = launch_slot(tab, cap, v->g[i].process, v->g[i].corr);
		if (!l->corr)
			continue;
		for (int32_t j = l->range; j >= 0; j = v->r[j].parent) {
			struct opview_row *w = &v->rows[v->r[j].group];
			if (j == l->range)
				w->gpu_self += v->g[i].dur;
			w->gpu_total += v->g[i].dur;
		}
	}
	free(tab);
	return 0;
}

int
opview_scope_end(struct opview *v)
{
	if (v->nr > 1)
		qsort(v->r, v->nr, sizeof(*v->r), cmp_range);
	nest(v);
	int rc = charge_gpu(v);
	v->nr = v->nl = v->ng = 0;
	return rc;
}

const struct opview_row *
opview_rows(const struct opview *v, size_t *n)
{
	*n = v->nrows;
	return v->rows;
}
