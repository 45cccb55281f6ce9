/* SPDX-License-Identifier: MIT */
/*
 * Step time by category (breakdown.h).  At a scope's end each
 * category's intervals become their union (sorted, merged); a window is
 * then cut at every boundary of those unions inside it, and each piece
 * goes to the first category whose union covers it.
 */
#include <stdlib.h>
#include <string.h>

#include "breakdown.h"
#include "support.h"

struct span {
	int64_t b, e;
	uint32_t key;
};

struct spans {
	struct span *v;
	size_t n, cap;
};

struct breakdown {
	struct spans cat[BD_OTHER];
	int64_t *cuts;           /* boundaries inside the current window */
	size_t ncuts, capcuts;
};

struct breakdown *
breakdown_new(void)
{
	return calloc(1, sizeof(struct breakdown));
}

void
breakdown_free(struct breakdown *b)
{
	if (!b)
		return;
	for (int c = 0; c < BD_OTHER; c++)
		free(b->cat[c].v);
	free(b->cuts);
	free(b);
}

int
breakdown_add(struct breakdown *b, enum bd_cat c, int64_t begin, int64_t end)
{
	return breakdown_add_keyed(b, c, 0, begin, end);
}

int
breakdown_add_keyed(struct breakdown *b, enum bd_cat c, uint32_t key,
                    int64_t begin, int64_t end)
{
	if (c >= BD_OTHER || end <= begin)
		return 0;        /* an empty interval covers nothing */
	struct spans *s = &b->cat[c];
	struct span *v = tkp_grow(s->v, &s->cap, s->n + 1, sizeof(*v));
	if (!v)
		return -1;
	s->v = v;
	s->v[s->n++] = (struct span){ begin, end, key };
	return 0;
}

static int
cmp_span(const void *x, const void *y)
{
	const struct span *p = x, *q = y;
	if (p->key != q->key)
		return p->key < q->key ? -1 : 1;
	return (p->b > q->b) - (p->b < q->b);
}

static int
cmp_i64(const void *x, const void *y)
{
	int64_t p = *(const int64_t *)x, q = *(const int64_t *)y;
	return (p > q) - (p < q);
}

/* Sort and merge in place: the union of each key, as disjoint spans by
 * key, then begin. */
static void
make_union(struct spans *s)
{
	if (s->n > 1)
		qsort(s->v, s->n, sizeof(*s->v), cmp_span);
	size_t k = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (k && s->v[i].key == s->v[k - 1].key && s->v[i].b <= s->v[k - 1].e) {
			if (s->v[i].e > s->v[k - 1].e)
				s->v[k - 1].e = s->v[i].e;
		} else {
			s->v[k++] = s->v[i];
		}
	}
	s->n = k;
}

/* The spans of one key: [lo, hi) of the sorted union. */
struct keyed {
	const struct span *v;
	size_t n;
};

static struct keyed
of_key(const struct spans *s, uint32_t key)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->v[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t end = lo;
	while (end < s->n && s->v[end].key == key)
		end++;
	return (struct keyed){ s->v + lo, end - lo };
}

/* Index of the first span ending after t. */
static size_t
first_after(struct keyed s, int64_t t)
{
	size_t lo = 0, hi = s.n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s.v[mid].e <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int
push_cut(struct breakdown *b, int64_t t)
{
	int64_t *v = tkp_grow(b->cuts, &b->capcuts, b->ncuts + 1, sizeof(*v));
	if (!v)
		return -1;
	b->cuts = v;
	b->cuts[b->ncuts++] = t;
	return 0;
}

/* Does the union cover [x, y)?  (Its spans are disjoint: one must hold
 * the whole piece, since pieces are cut at every boundary.) */
static int
covers(struct keyed s, int64_t x, int64_t y)
{
	size_t i = first_after(s, x);
	return i < s.n && s.v[i].b <= x && s.v[i].e >= y;
}

static int
split_window(struct breakdown *b, struct perinst_instance *in)
{
	int64_t wb = in->begin, we = in->begin + in->dur;
	memset(in->cat, 0, sizeof(in->cat));
	b->ncuts = 0;
	if (push_cut(b, wb) < 0 || push_cut(b, we) < 0)
		return -1;
	/* the instance's own process's work, and work of no known process */
	struct keyed k[BD_OTHER][2];
	for (int c = 0; c < BD_OTHER; c++) {
		k[c][0] = of_key(&b->cat[c], in->key);
		k[c][1] = in->key ? of_key(&b->cat[c], 0) : (struct keyed){ NULL, 0 };
		for (int j = 0; j < 2; j++) {
			struct keyed s = k[c][j];
			for (size_t i = first_after(s, wb); i < s.n && s.v[i].b < we; i++)
				if ((s.v[i].b > wb && push_cut(b, s.v[i].b) < 0) ||
				    (s.v[i].e < we && push_cut(b, s.v[i].e) < 0))
					return -1;
		}
	}
	qsort(b->cuts, b->ncuts, sizeof(*b->cuts), cmp_i64);
	for (size_t i = 0; i + 1 < b->ncuts; i++) {
		int64_t x = b->cuts[i], y = b->cuts[i + 1];
		if (y <= x)
			continue;
		int c = 0;
		while (c < BD_OTHER && !covers(k[c][0], x, y) && !covers(k[c][1], x, y))
			c++;
		in->cat[c] += y - x;
	}
	return 0;
}

int
breakdown_scope_end(struct breakdown *b, struct perinst_instance *v, size_t n)
{
	for (int c = 0; c < BD_OTHER; c++)
		make_union(&b->cat[c]);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = split_window(b, &v[i]);
	for (int c = 0; c < BD_OTHER; c++)
		b->cat[c].n = 0;
	return rc;
}
