/* SPDX-License-Identifier: MIT */
/*
 * An order queue of (time, sequence) keys: a few sorted runs and a heap
 * for the rest (see orderq.h for why).
 */
#include <stdlib.h>
#include <string.h>

#include "orderq.h"
#include "support.h"

/* A run's slack at its front is given back (moved over) once it is this
 * many items and at least half of the run. */
#define RUN_COMPACT 4096
/* A run that empties keeps its array for the next one, unless larger. */
#define RUN_KEEP (1u << 16)

static int
key_less(const struct tkp_okey *a, const struct tkp_okey *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	return a->seq < b->seq;
}

void
tkp_orderq_free(struct tkp_orderq *q)
{
	for (unsigned r = 0; r < TKP_ORDERQ_RUNS; r++)
		free(q->runs[r].v);
	free(q->heap);
	memset(q, 0, sizeof(*q));
}

static int
run_append(struct tkp_orun *run, const struct tkp_okey *k)
{
	struct tkp_okey *v = tkp_grow(run->v, &run->cap, run->len + 1, sizeof(*v));
	if (!v)
		return -1;
	run->v = v;
	v[run->len++] = *k;
	return 0;
}

static int
heap_push(struct tkp_orderq *q, const struct tkp_okey *k)
{
	struct tkp_okey *h = tkp_grow(q->heap, &q->heap_cap, q->nheap + 1,
	                              sizeof(*h));
	if (!h)
		return -1;
	q->heap = h;
	size_t i = q->nheap++;
	while (i > 0 && key_less(k, &h[(i - 1) / 2])) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = *k;
	return 0;
}

static void *
heap_pop(struct tkp_orderq *q)
{
	struct tkp_okey *h = q->heap;
	void *top = h[0].item;
	struct tkp_okey last = h[--q->nheap];
	size_t n = q->nheap, i = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, c = l;
		if (l >= n)
			break;
		if (r < n && key_less(&h[r], &h[l]))
			c = r;
		if (!key_less(&h[c], &last))
			break;
		h[i] = h[c];
		i = c;
	}
	if (n)
		h[i] = last;
	return top;
}

int
tkp_orderq_push(struct tkp_orderq *q, int64_t ts, uint64_t seq, void *item)
{
	struct tkp_okey k = { ts, seq, item };
	/* the run whose last key is the largest not above k (seq only grows,
	 * so a last time not above k's is a last key below k) */
	int best = -1;
	for (unsigned r = 0; r < q->nruns; r++) {
		const struct tkp_orun *run = &q->runs[r];
		int64_t tail = run->v[run->len - 1].ts;
		if (tail <= ts && (best < 0 || tail > q->runs[best].v[q->runs[best].len - 1].ts))
			best = (int)r;
	}
	int rc;
	if (best >= 0)
		rc = run_append(&q->runs[best], &k);
	else if (q->nruns < TKP_ORDERQ_RUNS) {
		rc = run_append(&q->runs[q->nruns], &k);
		if (!rc)
			q->nruns++;
	} else {
		rc = heap_push(q, &k);
	}
	if (!rc)
		q->n++;
	return rc;
}

/* Where the smallest key is: a run's index, or TKP_ORDERQ_RUNS for the
 * heap (the queue is not empty). */
static unsigned
min_source(const struct tkp_orderq *q)
{
	unsigned src = TKP_ORDERQ_RUNS;
	const struct tkp_okey *best = q->nheap ? &q->heap[0] : NULL;
	for (unsigned r = 0; r < q->nruns; r++) {
		const struct tkp_okey *k = &q->runs[r].v[q->runs[r].head];
		if (!best || key_less(k, best)) {
			best = k;
			src = r;
		}
	}
	return src;
}

const struct tkp_okey *
tkp_orderq_min(const struct tkp_orderq *q)
{
	if (!q->n)
		return NULL;
	unsigned src = min_source(q);
	return src == TKP_ORDERQ_RUNS ? &q->heap[0] : &q->runs[src].v[q->runs[src].head];
}

/* Run r has emptied: the last open run takes its place, and r's array
 * goes to the end, ready for the next run (or back, if large). */
static void
close_run(struct tkp_orderq *q, unsigned r)
{
	struct tkp_orun done = q->runs[r];
	q->runs[r] = q->runs[--q->nruns];
	done.head = done.len = 0;
	if (done.cap > RUN_KEEP) {
		free(done.v);
		done.v = NULL;
		done.cap = 0;
	}
	q->runs[q->nruns] = done;
}

void *
tkp_orderq_pop(struct tkp_orderq *q)
{
	unsigned src = min_source(q);
	q->n--;
	if (src == TKP_ORDERQ_RUNS)
		return heap_pop(q);
	struct tkp_orun *run = &q->runs[src];
	void *item = run->v[run->head++].item;
	if (run->head == run->len) {
		close_run(q, src);
	} else if (run->head >= RUN_COMPACT && run->head * 2 >= run->len) {
		memmove(run->v, run->v + run->head, (run->len - run->head) * sizeof(*run->v));
		run->len -= run->head;
		run->head = 0;
	}
	return item;
}

void
tkp_orderq_each(const struct tkp_orderq *q, void (*fn)(void *item))
{
	for (unsigned r = 0; r < q->nruns; r++)
		for (size_t i = q->runs[r].head; i < q->runs[r].len; i++)
			fn(q->runs[r].v[i].item);
	for (size_t i = 0; i < q->nheap; i++)
		fn(q->heap[i].item);
}
