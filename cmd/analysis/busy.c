/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "busy.h"
#include "support.h"

int
pairbuf_push(struct pairbuf *p, int64_t a, int64_t b)
{
	struct pair *v = tkp_grow(p->v, &p->cap, p->n + 1, sizeof(*v));
	if (!v)
		return -1;
	p->v = v;
	if (p->n && a < p->v[p->n - 1].a)
		p->unsorted = 1;
	p->v[p->n].a = a;
	p->v[p->n].b = b;
	p->n++;
	return 0;
}

static int
cmp_pair(const void *x, const void *y)
{
	const struct pair *p = x, *q = y;
	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	return (p->b > q->b) - (p->b < q->b);
}

size_t
pairbuf_ready(struct pairbuf *p, int64_t w)
{
	if (p->unsorted) {
		qsort(p->v, p->n, sizeof(*p->v), cmp_pair);
		p->unsorted = 0;
	}
	if (w == INT64_MAX)
		return p->n;
	/* first index with a >= w */
	size_t lo = 0, hi = p->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->v[mid].a < w)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void
pairbuf_drop(struct pairbuf *p, size_t k)
{
	if (k >= p->n) {
		p->n = 0;
		return;
	}
	memmove(p->v, p->v + k, (p->n - k) * sizeof(*p->v));
	p->n -= k;
}

void
pairbuf_free(struct pairbuf *p)
{
	free(p->v);
	memset(p, 0, sizeof(*p));
}

int64_t
sweep_total(const struct sweep *s)
{
	return s->total + (s->open ? s->ce - s->cs : 0);
}

void
sweep_flush(struct sweep *s)
{
	if (s->tl && s->open)
		timeline_add(s->tl, s->cs, s->ce);
}

void
busy_init(struct busy *b)
{
	memset(b, 0, sizeof(*b));
	b->first = INT64_MAX;
	b->last = INT64_MIN;
}

void
busy_free(struct busy *b)
{
	for (int c = 0; c < BUSY_NCLASS; c++)
		pairbuf_free(&b->pending[c]);
	busy_init(b);
}

void
busy_release(struct busy *b, int64_t w)
{
	struct pairbuf *k = &b->pending[BUSY_KERNEL], *c = &b->pending[BUSY_COPY];
	size_t nk = pairbuf_ready(k, w), nc = pairbuf_ready(c, w);
	size_t i = 0, j = 0;
	/* merge the two sorted runs so the union of all sees begin order */
	while (i < nk || j < nc) {
		const struct pair *p;
		if (j >= nc || (i < nk && k->v[i].a <= c->v[j].a)) {
			p = &k->v[i++];
			sweep_add(&b->cls[BUSY_KERNEL], p->a, p->b);
		} else {
			p = &c->v[j++];
			sweep_add(&b->cls[BUSY_COPY], p->a, p->b);
		}
		sweep_add(&b->all, p->a, p->b);
	}
	pairbuf_drop(k, nk);
	pairbuf_drop(c, nc);
}

int64_t
busy_total(const struct busy *b)
{
	return sweep_total(&b->all);
}

int64_t
busy_class_total(const struct busy *b, int cls)
{
	return sweep_total(&b->cls[cls]);
}
