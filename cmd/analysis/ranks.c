/* SPDX-License-Identifier: MIT */
/*
 * The distributed view: per rank and per step, computation,
 * communication, memory operations, exposed communication and idle
 * time as lengths of interval unions.  See ranks.h.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "busy.h"
#include "ranks.h"
#include "common/strmap.h"
#include "support.h"

struct step {
	char *name;
	int64_t b, e;
};

struct rank {
	char *name;
	struct pairbuf cls[RANK_NCLS];
	struct step *steps;
	size_t nsteps, capsteps;
	uint64_t ops;
};

struct ranks {
	struct rank *v;
	size_t n, cap;
	struct strmap map;
	struct rank_row *rows;
	size_t nrows;
	struct rank_step_row *srows;
	size_t nsrows;
};

struct ranks *
ranks_new(void)
{
	return calloc(1, sizeof(struct ranks));
}

void
ranks_free(struct ranks *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		free(r->v[i].name);
		for (int c = 0; c < RANK_NCLS; c++)
			pairbuf_free(&r->v[i].cls[c]);
		for (size_t s = 0; s < r->v[i].nsteps; s++)
			free(r->v[i].steps[s].name);
		free(r->v[i].steps);
	}
	free(r->v);
	strmap_free(&r->map);
	free(r->rows);
	free(r->srows);
	free(r);
}

int32_t
ranks_key(struct ranks *r, const char *name)
{
	size_t len = strlen(name);
	long i = strmap_get(&r->map, name, len);
	if (i >= 0)
		return (int32_t)i;
	struct rank *v = tkp_grow(r->v, &r->cap, r->n + 1, sizeof(*v));
	if (!v)
		return -1;
	r->v = v;
	struct rank *k = &r->v[r->n];
	memset(k, 0, sizeof(*k));
	if (!(k->name = strdup(name)) || strmap_put(&r->map, name, len, (long)r->n) < 0) {
		free(k->name);
		return -1;
	}
	return (int32_t)r->n++;
}

int
ranks_gpu(struct ranks *r, int32_t i, enum rank_cls c, int64_t begin, int64_t end)
{
	if (i < 0 || (size_t)i >= r->n)
		return 0;
	r->v[i].ops++;
	return pairbuf_push(&r->v[i].cls[c], begin, end < begin ? begin : end);
}

int
ranks_step(struct ranks *r, int32_t i, const char *name, int64_t begin, int64_t end)
{
	if (i < 0 || (size_t)i >= r->n)
		return 0;
	struct rank *k = &r->v[i];
	struct step *s = tkp_grow(k->steps, &k->capsteps, k->nsteps + 1, sizeof(*s));
	if (!s)
		return -1;
	k->steps = s;
	if (!(s[k->nsteps].name = strdup(name)))
		return -1;
	s[k->nsteps].b = begin;
	s[k->nsteps].e = end < begin ? begin : end;
	k->nsteps++;
	return 0;
}

const char *
ranks_name(const struct ranks *r, int32_t i)
{
	return i >= 0 && (size_t)i < r->n ? r->v[i].name : NULL;
}

int
ranks_is_comm(const char *k)
{
	static const char *const prefix[] = { "nccl", "rccl", "msccl", "nvshmem" };
	if (strncmp(k, "void ", 5) == 0)
		k += 5;
	for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (strncasecmp(k, prefix[i], strlen(prefix[i])) == 0)
			return 1;
	return 0;
}

/* ---- unions ------------------------------------------------------------------ */

/* A sorted list of disjoint intervals. */
struct ivl {
	struct pair *v;
	size_t n;
};

static int
cmp_pair(const void *x, const void *y)
{
	const struct pair *p = x, *q = y;
	return (p->a > q->a) - (p->a < q->a);
}

/* Sort v[0..n) by begin and merge the overlapping ones, in place. */
static size_t
unite(struct pair *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_pair);
	size_t o = 0;
	for (size_t i = 1; i < n; i++) {
		if (v[i].a <= v[o].b) {
			if (v[i].b > v[o].b)
				v[o].b = v[i].b;
		} else {
			v[++o] = v[i];
		}
	}
	return o + 1;
}

/* x minus y (both sorted and disjoint) into out (room for x.n + y.n). */
static size_t
subtract(struct ivl x, struct ivl y, struct pair *out)
{
	size_t n = 0, j = 0;
	for (size_t i = 0; i < x.n; i++) {
		int64_t b = x.v[i].a, e = x.v[i].b;
		while (j < y.n && y.v[j].b <= b)
			j++;
		for (size_t k = j; k < y.n && y.v[k].a < e; k++) {
			if (y.v[k].a > b)
				out[n++] = (struct pair){ b, y.v[k].a };
			if (y.v[k].b > b)
				b = y.v[k].b;
		}
		if (b < e)
			out[n++] = (struct pair){ b, e };
	}
	return n;
}

/* Length of the part of x inside [b, e). */
static int64_t
measure(struct ivl x, int64_t b, int64_t e)
{
	size_t lo = 0, hi = x.n;
	while (lo < hi) {       /* the first interval ending after b */
		size_t mid = lo + (hi - lo) / 2;
		if (x.v[mid].b <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	int64_t t = 0;
	for (size_t i = lo; i < x.n && x.v[i].a < e; i++) {
		int64_t s = x.v[i].a > b ? x.v[i].a : b;
		int64_t f = x.v[i].b < e ? x.v[i].b : e;
		if (f > s)
			t += f - s;
	}
	return t;
}

/* The unions of one rank: by class, all together, exposed comm. */
struct unions {
	struct ivl cls[RANK_NCLS], all, exposed;
	struct pair *buf;        /* all and exposed live here */
};

static int
rank_unions(struct rank *k, struct unions *u)
{
	size_t total = 0;
	for (int c = 0; c < RANK_NCLS; c++) {
		u->cls[c].v = k->cls[c].v;
		u->cls[c].n = k->cls[c].n = unite(k->cls[c].v, k->cls[c].n);
		total += u->cls[c].n;
	}
	u->buf = malloc((2 * total + 1) * sizeof(*u->buf));
	if (!u->buf)
		return -1;
	u->all.v = u->buf;
	u->all.n = 0;
	for (int c = 0; c < RANK_NCLS; c++) {
		if (u->cls[c].n)
			memcpy(u->buf + u->all.n, u->cls[c].v, u->cls[c].n * sizeof(*u->buf));
		u->all.n += u->cls[c].n;
	}
	u->all.n = unite(u->all.v, u->all.n);
	u->exposed.v = u->buf + total;
	u->exposed.n = subtract(u->cls[RANK_COMM], u->cls[RANK_COMPUTE], u->exposed.v);
	return 0;
}

static struct rank_figures
figures(const struct unions *u, int64_t b, int64_t e)
{
	struct rank_figures f = { .begin = b, .dur = e - b };
	f.compute = measure(u->cls[RANK_COMPUTE], b, e);
	f.comm = measure(u->cls[RANK_COMM], b, e);
	f.memops = measure(u->cls[RANK_MEMOPS], b, e);
	f.exposed = measure(u->exposed, b, e);
	f.busy = measure(u->all, b, e);
	f.idle = f.dur - f.busy;
	return f;
}

/* ---- rows -------------------------------------------------------------------- */

static int
cmp_rank_name(const void *x, const void *y, void *arg)
{
	const struct rank *v = arg;
	return strverscmp(v[*(const size_t *)x].name, v[*(const size_t *)y].name);
}

static int
cmp_step_row(const void *x, const void *y)
{
	const struct rank_step_row *p = x, *q = y;
	if (p->f.begin != q->f.begin)
		return p->f.begin < q->f.begin ? -1 : 1;
	return (p->rank > q->rank) - (p->rank < q->rank);
}

int
ranks_finish(struct ranks *r)
{
	size_t *order = malloc((r->n + 1) * sizeof(*order));
	size_t nsteps = 0;
	if (!order)
		return -1;
	for (size_t i = 0; i < r->n; i++) {
		order[i] = i;
		nsteps += r->v[i].nsteps;
	}
	qsort_r(order, r->n, sizeof(*order), cmp_rank_name, r->v);
	r->rows = calloc(r->n + 1, sizeof(*r->rows));
	r->srows = calloc(nsteps + 1, sizeof(*r->srows));
	if (!r->rows || !r->srows) {
		free(order);
		return -1;
	}
	for (size_t o = 0; o < r->n; o++) {
		struct rank *k = &r->v[order[o]];
		if (!k->ops && !k->nsteps)
			continue;
		struct unions u;
		if (rank_unions(k, &u) < 0) {
			free(order);
			return -1;
		}
		struct rank_row *row = &r->rows[r->nrows];
		row->name = k->name;
		row->ops = k->ops;
		if (u.all.n)
			row->f = figures(&u, u.all.v[0].a, u.all.v[u.all.n - 1].b);
		for (size_t s = 0; s < k->nsteps; s++) {
			struct rank_step_row *sr = &r->srows[r->nsrows++];
			sr->step = k->steps[s].name;
			sr->rank = r->nrows;
			sr->f = figures(&u, k->steps[s].b, k->steps[s].e);
			row->step_total += sr->f.dur;
		}
		row->nsteps = k->nsteps;
		r->nrows++;
		free(u.buf);
	}
	free(order);
	qsort(r->srows, r->nsrows, sizeof(*r->srows), cmp_step_row);
	return 0;
}

const struct rank_row *
ranks_rows(const struct ranks *r, size_t *n)
{
	*n = r->nrows;
	return r->rows;
}

const struct rank_step_row *
ranks_step_rows(const struct ranks *r, size_t *n)
{
	*n = r->nsrows;
	return r->srows;
}
