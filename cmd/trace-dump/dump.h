/* SPDX-License-Identifier: MIT */
/* trace-dump's parts: what the formats and the batches share. */
#ifndef TRACE_DUMP_H
#define TRACE_DUMP_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "tracekit.h"

/* Where an event happened, from its track (the formats' pid, tid,
 * thread, device and stream columns). */
struct where {
	int64_t pid, tid;        /* -1 when not applicable */
	const char *thread;
	int64_t device;          /* index, -1 = none */
	int64_t stream;          /* -1 = none */
	const char *unit;        /* a counter track's unit, else NULL */
};

/* One event in a format (--csv, --json), written to out. */
typedef void dump_render_fn(FILE *out, const struct where *w,
                            const struct tk_event *e);

/* Blocks of memory for copied strings: what is copied stays where it
 * is until the store is emptied (dump_batch_reset()). */
struct copy_block {
	char *p;
	size_t size;
};

/* Events copied out of a reader, to be formatted on another thread: the
 * events with every string they point to (name, string fields, args,
 * the thread's name) copied, so that nothing refers to the reader, whose
 * next chunk or next trace would free it. */
struct dump_batch {
	struct tk_event *ev;
	struct where *where;
	size_t n, cap;
	struct copy_block *blocks;
	size_t nblocks, block, used;    /* filling blocks[block] at used */
	/* copies already made in this batch, by source pointer (a direct-
	 * mapped cache: names repeat), for the current trace only */
	const char *cache_src[256];
	const char *cache_copy[256];
	dump_render_fn *render;
	char *text;                     /* the formatted events */
	size_t text_len, text_cap;
	int failed;                     /* out of memory */
};

/* Empty the batch (its memory is kept) for events formatted by render. */
void dump_batch_reset(struct dump_batch *b, dump_render_fn *render);
/* Forget the copies cache: the reader began another trace, so a string
 * of the last one may have the address of another string now. */
void dump_batch_new_scope(struct dump_batch *b);
/* Copy e (and w) into the batch; failed is set when out of memory. */
void dump_batch_add(struct dump_batch *b, const struct tk_event *e,
                    const struct where *w);
/* Format the batch's events into b->text (any thread). */
void dump_batch_render(struct dump_batch *b);
void dump_batch_free(struct dump_batch *b);

#endif
