/* SPDX-License-Identifier: MIT */
/*
 * The two heaps of trace-to-perfetto.
 *
 * Events that come out of begin order (an unsorted input, chunk
 * watermarks that allow it) wait, copied with their strings into arena
 * blocks, until the watermarks say nothing earlier can come; past the
 * memory limit the earliest go anyway.  Sorted inputs pass by it.  They
 * wait as runs: each event that is not earlier than the one pushed
 * before it joins that one's run, and a heap of runs merges them (see
 * struct pf_slot).  The events come out in the order a heap of single
 * events would give, as the runs are each in that order.
 *
 * Slice ends wait in the other heap until the output reaches their
 * time, so that packets go out in time order (timestamps are deltas
 * from the packet before) and, on a tie, an inner slice ends before the
 * one around it.
 */
#include <stdlib.h>

#include "perfetto.h"
#include "common/util.h"

#define BLOCK_SIZE (256u << 10)

void
pf_reorder_init(struct pf_reorder *ro, size_t limit)
{
	memset(ro, 0, sizeof(*ro));
	ro->limit = limit;
}

/* Room for n bytes (a multiple of 16) in the current block, or a new one. */
static void *
arena_alloc(struct pf_reorder *ro, size_t n, struct pf_block **in)
{
	struct pf_block *b = ro->cur;
	if (b && !b->refs)
		b->used = 0;  /* all let out: start it again, still in cache */
	if (!b || b->cap - b->used < n) {
		if (b && !b->refs && b != ro->spare) {
			/* everything in it is let out: reuse it */
			if (!ro->spare)
				ro->spare = b;
			else
				free(b);
		}
		if (ro->spare && ro->spare->cap >= n) {
			b = ro->spare;
			ro->spare = NULL;
		} else {
			size_t cap = n > BLOCK_SIZE ? n : BLOCK_SIZE;
			b = cmd_xrealloc(NULL, sizeof(*b) + cap);
			b->cap = cap;
		}
		b->used = 0;
		b->refs = 0;
		ro->cur = b;
	}
	void *p = b->data + b->used;
	b->used += n;
	b->refs++;
	*in = b;
	return p;
}

void
pf_held_free(struct pf_reorder *ro, struct pf_held *h)
{
	if (!h)
		return;
	ro->held -= h->bytes;
	struct pf_block *b = h->block;
	if (--b->refs || b == ro->cur)
		return;
	if (!ro->spare)
		ro->spare = b;
	else
		free(b);
}

void
pf_reorder_free(struct pf_reorder *ro)
{
	struct pf_held *h;
	while ((h = pf_reorder_pop(ro, INT64_MAX)))
		pf_held_free(ro, h);
	free(ro->heap);
	free(ro->cur);
	if (ro->spare != ro->cur)
		free(ro->spare);
	memset(ro, 0, sizeof(*ro));
}

static int
earlier(const struct pf_slot *a, const struct pf_slot *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	/* the longer of two slices that begin together goes first, so the
	 * shorter can nest in it */
	if (a->dur != b->dur)
		return a->dur > b->dur;
	return a->seq < b->seq;
}

static struct pf_slot
slot_of(struct pf_held *h)
{
	struct pf_slot s = { h->ev.ts, h->ev.dur, h->seq, h };
	return s;
}

/* Copy string `s` into the arena at *at; returns the copy. */
static const char *
keep(char **at, const char *s, size_t n)
{
	char *d = *at;
	memcpy(d, s, n);
	d[n] = 0;
	*at += n + 1;
	return d;
}

static size_t
strings_size(const struct tk_event *e)
{
	size_t n = strlen(e->name) + 1 + (e->args ? e->args_len + 1 : 0);
	switch (e->kind) {
	case TK_RANGE: case TK_ASYNC_RANGE: case TK_MARK:
		n += strlen(e->u.range.domain) + 1;
		break;
	case TK_KERNEL: n += strlen(e->u.kernel.mangled) + 1; break;
	case TK_DROPPED: n += strlen(e->u.dropped.reason) + 1; break;
	case TK_FLOW: n += strlen(e->u.flow.category) + 1; break;
	}
	return n;
}

static void
copy_strings(struct pf_held *h, const struct tk_event *e)
{
	char *at = h->strings;
	struct tk_event *c = &h->ev;
	c->name = keep(&at, e->name, strlen(e->name));
	if (e->args)
		c->args = keep(&at, e->args, e->args_len);
	switch (e->kind) {
	case TK_RANGE: case TK_ASYNC_RANGE: case TK_MARK:
		c->u.range.domain = keep(&at, e->u.range.domain, strlen(e->u.range.domain));
		break;
	case TK_KERNEL:
		c->u.kernel.mangled = keep(&at, e->u.kernel.mangled, strlen(e->u.kernel.mangled));
		break;
	case TK_DROPPED:
		c->u.dropped.reason = keep(&at, e->u.dropped.reason, strlen(e->u.dropped.reason));
		break;
	case TK_FLOW:
		c->u.flow.category = keep(&at, e->u.flow.category, strlen(e->u.flow.category));
		break;
	}
}

void
pf_reorder_push(struct pf_reorder *ro, const struct tk_event *e, uint32_t track,
                uint32_t scope)
{
	size_t ns = strings_size(e);
	size_t size = (sizeof(struct pf_held) + ns + 15) & ~(size_t)15;
	struct pf_block *block;
	struct pf_held *h = arena_alloc(ro, size, &block);
	h->ev = *e;
	h->strings = (char *)(h + 1);
	copy_strings(h, e);
	h->seq = ro->seq++;
	h->map_track = track;
	h->scope = scope;
	h->bytes = sizeof(*h) + ns + sizeof(struct pf_slot);
	h->next = NULL;
	h->block = block;
	ro->held += h->bytes;
	if (ro->held > ro->peak)
		ro->peak = ro->held;
	struct pf_slot slot = slot_of(h);
	if (ro->tail) {
		struct pf_slot last = slot_of(ro->tail);
		if (!earlier(&slot, &last)) {
			/* in order after the last one: its run goes on */
			ro->tail->next = h;
			ro->tail = h;
			return;
		}
	}
	if (ro->n == ro->cap) {
		ro->cap = ro->cap ? ro->cap * 2 : 1024;
		ro->heap = cmd_xrealloc(ro->heap, ro->cap * sizeof(*ro->heap));
	}
	size_t i = ro->n++;
	while (i && earlier(&slot, &ro->heap[(i - 1) / 2])) {
		ro->heap[i] = ro->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	ro->heap[i] = slot;
	ro->tail = h;
}

struct pf_held *
pf_reorder_pop(struct pf_reorder *ro, int64_t bound)
{
	if (!ro->n || ro->heap[0].ts >= bound)
		return NULL;
	struct pf_held *top = ro->heap[0].held;
	struct pf_slot moved;
	if (top->next) {
		moved = slot_of(top->next);   /* the run's next takes its place */
	} else {
		moved = ro->heap[--ro->n];    /* the run is done */
		if (top == ro->tail)
			ro->tail = NULL;
	}
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= ro->n)
			break;
		if (c + 1 < ro->n && earlier(&ro->heap[c + 1], &ro->heap[c]))
			c++;
		if (!earlier(&ro->heap[c], &moved))
			break;
		ro->heap[i] = ro->heap[c];
		i = c;
	}
	if (ro->n)
		ro->heap[i] = moved;
	return top;
}

/* ---- slice ends ---------------------------------------------------------------- */

static int
end_first(const struct pf_end *a, const struct pf_end *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	if (a->depth != b->depth)
		return a->depth > b->depth;  /* inner slices end first */
	return a->seq > b->seq;              /* then the latest begun */
}

void
pf_ends_push(struct pf_ends *h, int64_t ts, uint32_t track, uint32_t depth)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 256;
		h->heap = cmd_xrealloc(h->heap, h->cap * sizeof(*h->heap));
	}
	struct pf_end e = { ts, depth, track, h->seq++ };
	size_t i = h->n++;
	while (i && end_first(&e, &h->heap[(i - 1) / 2])) {
		h->heap[i] = h->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->heap[i] = e;
}

int
pf_ends_pop(struct pf_ends *h, int64_t bound, struct pf_end *out)
{
	if (!h->n || h->heap[0].ts > bound)
		return 0;
	*out = h->heap[0];
	struct pf_end last = h->heap[--h->n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && end_first(&h->heap[c + 1], &h->heap[c]))
			c++;
		if (!end_first(&h->heap[c], &last))
			break;
		h->heap[i] = h->heap[c];
		i = c;
	}
	if (h->n)
		h->heap[i] = last;
	return 1;
}

void
pf_ends_free(struct pf_ends *h)
{
	free(h->heap);
	memset(h, 0, sizeof(*h));
}
