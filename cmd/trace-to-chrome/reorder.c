/* SPDX-License-Identifier: MIT */
/*
 * The reorder buffer of trace-to-chrome.  A .tkt stream need not be
 * sorted (spans are written when they end), but the nesting check of
 * layout.c must see each track's slices in begin order.  Slices
 * wait here, already formatted, in a min-heap keyed by begin time (ties:
 * longer first, so a parent comes before the children that begin with
 * it).  Each chunk's watermark promises that no later chunk has an event
 * beginning before it; once a chunk is read, every slice beginning
 * before its watermark can go.  A sorted writer makes that nearly all of
 * them, so the buffer holds about one chunk.
 *
 * Without watermarks nothing would ever be safe to release before the
 * end, so the buffer has a memory limit: past it, the earliest slices
 * go early.  A slice that then arrives too late for its track is placed
 * on an extra track (layout.c), never out of nesting.
 *
 * Entries that arrive in order (each not before the previous one) need
 * no heap: they queue in a ring, and the heap holds only the others.
 * Sorted input never touches the heap.
 *
 * Text lives in slabs of 1 MiB, each counting the entries that use it,
 * so that memory comes back as soon as a slab's entries are written.
 */
#include <stdlib.h>

#include "chrome.h"
#include "common/util.h"

#define SLAB_SIZE (1u << 20)
#define NO_SLAB UINT32_MAX

void
chrome_reorder_init(struct chrome_reorder *ro, size_t limit)
{
	memset(ro, 0, sizeof(*ro));
	ro->limit = limit;
	ro->cur = NO_SLAB;
}

void
chrome_reorder_free(struct chrome_reorder *ro)
{
	for (uint32_t i = 0; i < ro->nslabs; i++)
		free(ro->slabs[i].mem);
	free(ro->slabs);
	free(ro->free_slabs);
	free(ro->heap);
	free(ro->fifo);
	memset(ro, 0, sizeof(*ro));
}

static int
before(const struct chrome_entry *a, const struct chrome_entry *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	if (a->end != b->end)
		return a->end > b->end;   /* parents first */
	if (a->cls != b->cls)
		return a->cls < b->cls;   /* slices before the flows bound to them */
	return a->seq < b->seq;
}

static uint32_t
take_slab(struct chrome_reorder *ro, size_t size)
{
	uint32_t i;
	if (size == SLAB_SIZE && ro->nfree) {
		i = ro->free_slabs[--ro->nfree];
		if (!ro->slabs[i].mem) {
			ro->slabs[i].mem = malloc(size);
			if (!ro->slabs[i].mem)
				cmd_die(EXIT_USAGE, "out of memory");
			ro->slabs[i].size = size;
		}
	} else {
		/* every slab may come back to the free list */
		ro->slabs = chrome_grow(ro->slabs, &ro->capslabs,
		                        (size_t)ro->nslabs + 1, sizeof(*ro->slabs));
		ro->free_slabs = chrome_grow(ro->free_slabs, &ro->capfree,
		                             ro->capslabs, sizeof(*ro->free_slabs));
		i = ro->nslabs++;
		ro->slabs[i].mem = malloc(size);
		if (!ro->slabs[i].mem)
			cmd_die(EXIT_USAGE, "out of memory");
		ro->slabs[i].size = size;
	}
	ro->slabs[i].used = 0;
	ro->slabs[i].live = 0;
	ro->held += ro->slabs[i].size;
	if (ro->held > ro->peak)
		ro->peak = ro->held;
	return i;
}

/* A slab nobody uses any more: keep a few for reuse, free the rest. */
static void
drop_slab(struct chrome_reorder *ro, uint32_t i)
{
	struct chrome_slab *s = &ro->slabs[i];
	ro->held -= s->size;
	if (s->size == SLAB_SIZE && ro->nfree < 32) {
		ro->free_slabs[ro->nfree++] = i;
		return;
	}
	/* the slot stays, empty; a later big slab may take its place */
	free(s->mem);
	s->mem = NULL;
	s->size = 0;
	if (i + 1 == ro->nslabs)
		ro->nslabs--;
	else
		ro->free_slabs[ro->nfree++] = i;
}

void
chrome_reorder_push(struct chrome_reorder *ro, struct chrome_entry *e,
                    const char *text, size_t len)
{
	uint32_t s;
	if (len > SLAB_SIZE / 4) {
		s = take_slab(ro, len);
	} else {
		if (ro->cur == NO_SLAB || ro->slabs[ro->cur].size - ro->slabs[ro->cur].used < len) {
			if (ro->cur != NO_SLAB && ro->slabs[ro->cur].live == 0)
				drop_slab(ro, ro->cur);
			ro->cur = take_slab(ro, SLAB_SIZE);
		}
		s = ro->cur;
	}
	struct chrome_slab *sl = &ro->slabs[s];
	memcpy(sl->mem + sl->used, text, len);
	e->slab = s;
	e->off = (uint32_t)sl->used;
	sl->used += len;
	sl->live++;
	e->seq = ro->seq++;

	if (!ro->flen || !before(e, &ro->fifo[(ro->fhead + ro->flen - 1) % ro->fcap])) {
		if (ro->flen == ro->fcap) {
			size_t n = ro->fcap ? ro->fcap * 2 : 4096;
			struct chrome_entry *f = malloc(n * sizeof(*f));
			if (!f)
				cmd_die(EXIT_USAGE, "out of memory");
			for (size_t k = 0; k < ro->flen; k++)
				f[k] = ro->fifo[(ro->fhead + k) % ro->fcap];
			free(ro->fifo);
			ro->fifo = f;
			ro->fcap = n;
			ro->fhead = 0;
		}
		ro->fifo[(ro->fhead + ro->flen++) % ro->fcap] = *e;
		return;
	}
	if (ro->n == ro->cap)
		ro->heap = chrome_grow(ro->heap, &ro->cap, ro->n + 1, sizeof(*ro->heap));
	size_t i = ro->n++;
	while (i) {
		size_t p = (i - 1) / 2;
		if (!before(e, &ro->heap[p]))
			break;
		ro->heap[i] = ro->heap[p];
		i = p;
	}
	ro->heap[i] = *e;
}

int
chrome_reorder_pop(struct chrome_reorder *ro, int64_t bound,
                   struct chrome_entry *e, const char **text)
{
	const struct chrome_entry *f = ro->flen ? &ro->fifo[ro->fhead] : NULL;
	if (f && (!ro->n || before(f, &ro->heap[0]))) {
		if (f->ts >= bound)
			return 0;
		*e = *f;
		ro->fhead = (ro->fhead + 1) % ro->fcap;
		ro->flen--;
		*text = ro->slabs[e->slab].mem + e->off;
		return 1;
	}
	if (!ro->n || ro->heap[0].ts >= bound)
		return 0;
	*e = ro->heap[0];
	struct chrome_entry last = ro->heap[--ro->n];
	size_t i = 0, n = ro->n;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && before(&ro->heap[c + 1], &ro->heap[c]))
			c++;
		if (!before(&ro->heap[c], &last))
			break;
		ro->heap[i] = ro->heap[c];
		i = c;
	}
	if (n)
		ro->heap[i] = last;
	*text = ro->slabs[e->slab].mem + e->off;
	return 1;
}

void
chrome_reorder_done(struct chrome_reorder *ro, const struct chrome_entry *e)
{
	struct chrome_slab *s = &ro->slabs[e->slab];
	if (--s->live == 0 && e->slab != ro->cur)
		drop_slab(ro, e->slab);
}
