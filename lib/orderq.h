/* SPDX-License-Identifier: MIT */
/*
 * An order queue: items keyed by (time, sequence number), taken out
 * smallest first, for the merge's waiting events.
 *
 * Why not only a heap: a recorder writes a span when it ends, so the
 * events that wait in a merge mostly come in long ascending runs (the
 * short spans, in end order, which is nearly begin order) broken by the
 * few spans that enclose them.  Such items are kept in a few sorted
 * runs ("piles", as in patience sorting): an item joins the run whose
 * last key is the largest not above its own, and the smallest item is
 * the least of the runs' first ones, so both ends stay in the cache.
 * Items that fit no run once TKP_ORDERQ_RUNS are open go to a binary
 * heap, which is also what arbitrary orders (a shuffled trace) get.
 * Keys are kept beside the items, so comparing never follows a pointer.
 * The order out is exactly (time, sequence) whatever the order in.
 */
#ifndef TK_ORDERQ_H
#define TK_ORDERQ_H

#include <stddef.h>
#include <stdint.h>

#define TKP_ORDERQ_RUNS 8

struct tkp_okey {
	int64_t ts;
	uint64_t seq;            /* distinct and, per run, ascending */
	void *item;
};

struct tkp_orun {
	struct tkp_okey *v;      /* v[head .. len) wait, ascending */
	size_t head, len, cap;
};

struct tkp_orderq {
	struct tkp_orun runs[TKP_ORDERQ_RUNS];
	unsigned nruns;
	struct tkp_okey *heap;   /* the rest: a min-heap */
	size_t nheap, heap_cap;
	size_t n;                /* items in all */
};

/* An empty queue is all zeros. */
void tkp_orderq_free(struct tkp_orderq *q);

/* Add an item; seq must be larger than any added before.  0, or -1
 * when memory runs out (the queue is unchanged). */
int tkp_orderq_push(struct tkp_orderq *q, int64_t ts, uint64_t seq, void *item);

/* The smallest key, or NULL when empty. */
const struct tkp_okey *tkp_orderq_min(const struct tkp_orderq *q);

/* Take the smallest item out (the queue must not be empty). */
void *tkp_orderq_pop(struct tkp_orderq *q);

/* Call fn on every item still in the queue, in no particular order. */
void tkp_orderq_each(const struct tkp_orderq *q, void (*fn)(void *item));

#endif
