/* SPDX-License-Identifier: MIT */
/*
 * trace-dump's batches (dump.h): formatting text is most of the time of
 * --csv and --json (libcsv's quoting, jansson, number formatting), and
 * each event's text depends on that event alone, so batches of events
 * are formatted on worker threads (common/ordpool.h) and written in
 * order.  The reader's pointers are not valid for long (args live as
 * long as their chunk, names as long as their trace), so each event is
 * copied with its strings; the copying is cheap beside the formatting.
 */
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"

/* a block holds the strings of a few hundred events */
#define BLOCK_SIZE (64u * 1024u)

void
dump_batch_reset(struct dump_batch *b, dump_render_fn *render)
{
	b->n = 0;
	b->block = 0;
	b->used = 0;
	b->render = render;
	b->failed = 0;
	b->text_len = 0;
	dump_batch_new_scope(b);
}

void
dump_batch_new_scope(struct dump_batch *b)
{
	memset(b->cache_src, 0, sizeof(b->cache_src));
}

/* Room for n bytes in the store, or NULL. */
static char *
store_alloc(struct dump_batch *b, size_t n)
{
	while (b->block < b->nblocks) {
		struct copy_block *k = &b->blocks[b->block];
		if (k->size - b->used >= n) {
			char *p = k->p + b->used;
			b->used += n;
			return p;
		}
		b->block++;
		b->used = 0;
	}
	/* a new block, as large as the string when that is larger */
	struct copy_block *blocks = realloc(b->blocks,
	                                    (b->nblocks + 1) * sizeof(*blocks));
	if (!blocks)
		return NULL;
	b->blocks = blocks;
	size_t size = n > BLOCK_SIZE ? n : BLOCK_SIZE;
	char *p = malloc(size);
	if (!p)
		return NULL;
	b->blocks[b->nblocks++] = (struct copy_block){ p, size };
	b->block = b->nblocks - 1;
	b->used = n;
	return p;
}

/* A copy of the string s of len bytes, with a NUL after it. */
static const char *
copy_bytes(struct dump_batch *b, const char *s, size_t len)
{
	char *p = store_alloc(b, len + 1);
	if (!p) {
		b->failed = 1;
		return "";
	}
	memcpy(p, s, len);
	p[len] = 0;
	return p;
}

/* A copy of the NUL-terminated s, shared with earlier copies of the
 * same pointer in this batch and trace. */
static const char *
copy_string(struct dump_batch *b, const char *s)
{
	if (!s)
		return NULL;
	if (!*s)
		return "";
	size_t h = ((uintptr_t)s >> 3) % (sizeof(b->cache_src) / sizeof(b->cache_src[0]));
	if (b->cache_src[h] == s)
		return b->cache_copy[h];
	const char *c = copy_bytes(b, s, strlen(s));
	b->cache_src[h] = s;
	b->cache_copy[h] = c;
	return c;
}

void
dump_batch_add(struct dump_batch *b, const struct tk_event *e,
               const struct where *w)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 1024;
		struct tk_event *ev = realloc(b->ev, cap * sizeof(*ev));
		if (ev)
			b->ev = ev;
		struct where *wh = realloc(b->where, cap * sizeof(*wh));
		if (wh)
			b->where = wh;
		if (!ev || !wh) {
			b->failed = 1;
			return;
		}
		b->cap = cap;
	}
	struct tk_event *c = &b->ev[b->n];
	struct where *cw = &b->where[b->n];
	*c = *e;
	c->trk = NULL; /* the reader's: the formats use *w instead */
	c->name = copy_string(b, e->name);
	/* the kind's string fields, found through the library's schema */
	const struct tk_field *f;
	for (size_t i = 0; (f = tk_kind_field(e->kind, i)); i++) {
		if (f->type != TK_FIELD_STRING)
			continue;
		const char *s;
		memcpy(&s, (const char *)e + f->offset, sizeof(s));
		s = copy_string(b, s);
		memcpy((char *)c + f->offset, &s, sizeof(s));
	}
	if (e->args)
		c->args = copy_bytes(b, e->args, e->args_len);
	*cw = *w;
	cw->thread = copy_string(b, w->thread);
	cw->unit = copy_string(b, w->unit);
	b->n++;
}

/* The batch's text stream writes here: into a buffer kept from batch
 * to batch (open_memstream() made a new one for each, and its pages
 * were faulted in anew: 80 times the page faults of one thread). */
static ssize_t
text_write(void *cookie, const char *buf, size_t n)
{
	struct dump_batch *b = cookie;
	if (n > b->text_cap - b->text_len) {
		size_t cap = b->text_cap ? b->text_cap : 64 * 1024;
		while (cap - b->text_len < n)
			cap *= 2;
		char *p = realloc(b->text, cap);
		if (!p) {
			b->failed = 1;
			return -1;
		}
		b->text = p;
		b->text_cap = cap;
	}
	memcpy(b->text + b->text_len, buf, n);
	b->text_len += n;
	return (ssize_t)n;
}

void
dump_batch_render(struct dump_batch *b)
{
	b->text_len = 0;
	if (b->failed)
		return;
	cookie_io_functions_t io = { .write = text_write };
	FILE *out = fopencookie(b, "w", io);
	if (!out) {
		b->failed = 1;
		return;
	}
	/* this thread alone writes to it: no lock per character */
	__fsetlocking(out, FSETLOCKING_BYCALLER);
	for (size_t i = 0; i < b->n; i++)
		b->render(out, &b->where[i], &b->ev[i]);
	if (ferror(out))
		b->failed = 1;
	if (fclose(out) != 0)
		b->failed = 1;
}

void
dump_batch_free(struct dump_batch *b)
{
	free(b->ev);
	free(b->where);
	for (size_t i = 0; i < b->nblocks; i++)
		free(b->blocks[i].p);
	free(b->blocks);
	free(b->text);
	memset(b, 0, sizeof(*b));
}
