/* SPDX-License-Identifier: MIT */
/*
 * Busy time of a device: the length of the union of the intervals in
 * which it runs something, so that work on concurrent streams counts
 * once.  Kernels and copies are also united separately ("of it, in
 * kernels", "in copies").
 *
 * Traces need not be sorted, so intervals wait in a buffer until the
 * reader's watermark says no earlier one can come ("no later chunk
 * holds an event beginning before W"); then they are swept in begin
 * order and forgotten.  Memory is bounded by the events between
 * watermarks (16 bytes each), or by the whole trace when its writer
 * gave no watermarks.
 *
 * A pairbuf (pairs of int64 ordered by the first) is the reorder buffer;
 * aggregate.c uses it for device memory events as well.
 */
#ifndef TK_CMD_BUSY_H
#define TK_CMD_BUSY_H

#include <stddef.h>
#include <stdint.h>

#include "timeline.h"

struct pair {
	int64_t a, b;
};

struct pairbuf {
	struct pair *v;
	size_t n, cap;
	int unsorted;          /* some pair came before an earlier one */
};

/* -1 when out of memory. */
int pairbuf_push(struct pairbuf *p, int64_t a, int64_t b);
/* Sort if needed; return how many leading pairs have a < w. */
size_t pairbuf_ready(struct pairbuf *p, int64_t w);
/* Forget the first k pairs. */
void pairbuf_drop(struct pairbuf *p, size_t k);
void pairbuf_free(struct pairbuf *p);

/* Running union of intervals given in begin order. */
struct sweep {
	int64_t cs, ce;        /* the open merged interval */
	int open;
	int64_t total;         /* length of the closed ones */
	struct timeline *tl;   /* NULL, or where closed intervals also go
	                          (sweep_flush() adds the open one) */
};

/* An interval before the open one can only come from a writer whose
 * watermark lied; clamping it never counts time twice. */
static inline void
sweep_add(struct sweep *s, int64_t b, int64_t e)
{
	if (e < b)
		e = b;
	if (!s->open) {
		s->cs = b;
		s->ce = e;
		s->open = 1;
		return;
	}
	if (b < s->cs)
		b = s->cs;
	if (e < b)
		return;
	if (b <= s->ce) {
		if (e > s->ce)
			s->ce = e;
		return;
	}
	s->total += s->ce - s->cs;
	if (s->tl)
		timeline_add(s->tl, s->cs, s->ce);
	s->cs = b;
	s->ce = e;
}
/* Total including the open interval. */
int64_t sweep_total(const struct sweep *s);
/* Add the open interval to s->tl (at the end of the input). */
void sweep_flush(struct sweep *s);

enum { BUSY_KERNEL, BUSY_COPY, BUSY_NCLASS };

struct busy {
	struct pairbuf pending[BUSY_NCLASS];
	struct sweep all, cls[BUSY_NCLASS];
	int64_t first, last;   /* earliest begin, latest end seen */
	uint64_t n;            /* intervals added */
};

void busy_init(struct busy *b);
void busy_free(struct busy *b);
/* An interval [begin, end) of class BUSY_KERNEL or BUSY_COPY.  `settled`
 * says no interval still to come begins before this one (a sorted chunk
 * whose watermark is at or after it): then, with nothing pending, it is
 * swept at once instead of buffered. */
static inline int
busy_add(struct busy *b, int cls, int64_t begin, int64_t end, int settled)
{
	if (end < begin)
		end = begin;
	if (begin < b->first)
		b->first = begin;
	if (end > b->last)
		b->last = end;
	b->n++;
	if (settled && !b->pending[BUSY_KERNEL].n && !b->pending[BUSY_COPY].n) {
		sweep_add(&b->cls[cls], begin, end);
		sweep_add(&b->all, begin, end);
		return 0;
	}
	return pairbuf_push(&b->pending[cls], begin, end);
}
/* Sweep every pending interval that begins before w (INT64_MAX: all). */
void busy_release(struct busy *b, int64_t w);
/* Union lengths so far (call busy_release(b, INT64_MAX) first). */
int64_t busy_total(const struct busy *b);
int64_t busy_class_total(const struct busy *b, int cls);

#endif
