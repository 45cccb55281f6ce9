/* SPDX-License-Identifier: MIT */
/*
 * Parsing beside converting.  jansson's parse is most of the work of an
 * import, so events go in batches to a second thread that parses them
 * while this one converts the batch before; batches come back in order,
 * so the result is the same as parsing in place.
 *
 * The parser thread only calls json_loadb().  An event it cannot parse
 * comes back as NULL and is parsed again by the caller with
 * imp_parse(), which repairs what can be repaired and words the error:
 * that is rare, and keeps every shared buffer on one thread.
 *
 * jansson allocates a lot of small blocks per event; while a batch is
 * parsed they come from the batch's arena, freeing them does nothing,
 * and the arena is emptied when the batch is given back.  So a value
 * from a batch must not outlive it: what is kept is copied (open
 * slices are deep copies), and everything jansson allocates outside
 * parsing comes from malloc as usual.  A header on each block says
 * which it is.
 *
 * Events that flat.c can read are read by it instead of jansson (in
 * the same thread): they come back with flat_ok set and no value.
 *
 * Memory: a few batches of about 64 KiB of text and their trees (or
 * flat readings, about 1 KiB an event).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "common/util.h"
#include "support.h"

#define BATCH_TEXT (64u * 1024u)
#define ARENA_BLOCK (128u * 1024u)
#define HDR 16                   /* keeps the blocks 16-byte aligned */
#define TAG_HEAP 0x68656170u
#define TAG_ARENA 0x6172656eu

struct arena_block {
	struct arena_block *next;
	size_t used, size;
	_Alignas(16) unsigned char data[];
};

/* The arena jansson allocates from on this thread, if any. */
static _Thread_local struct imp_arena *current;

static void *
pool_malloc(size_t n)
{
	struct imp_arena *a = current;
	unsigned char *p;
	/* Blocks too big for the arena (a long string) come from the heap
	 * too: failing them is no way out, as jansson's lexer drops the
	 * bytes it cannot store and then reads past what it kept. */
	if (!a || n > ARENA_BLOCK - HDR) {
		if (n > SIZE_MAX - HDR || !(p = malloc(n + HDR)))
			return NULL;
		*(uint32_t *)p = TAG_HEAP;
		return p + HDR;
	}
	n = (n + HDR + 15) & ~(size_t)15;  /* still <= ARENA_BLOCK */
	struct arena_block *b = a->blocks;
	if (!b || b->size - b->used < n) {
		/* the next block may be a spare one from an earlier batch */
		if (b && b->next && b->next->used == 0 && b->next->size >= n) {
			struct arena_block *spare = b->next;
			b->next = spare->next;
			spare->next = b;
			a->blocks = b = spare;
		} else {
			struct arena_block *nb = malloc(sizeof(*nb) + ARENA_BLOCK);
			if (!nb)
				return NULL;
			nb->size = ARENA_BLOCK;
			nb->used = 0;
			nb->next = b;
			a->blocks = b = nb;
		}
	}
	p = b->data + b->used;
	b->used += n;
	*(uint32_t *)p = TAG_ARENA;
	return p + HDR;
}

static void
pool_free(void *ptr)
{
	if (!ptr)
		return;
	unsigned char *p = (unsigned char *)ptr - HDR;
	if (*(uint32_t *)p == TAG_HEAP)
		free(p);
}

void
imp_alloc_init(void)
{
	json_set_alloc_funcs(pool_malloc, pool_free);
}

/* Empty an arena, keeping its blocks for the next batch. */
static void
arena_reset(struct imp_arena *a)
{
	struct arena_block *b = a->blocks, *keep = NULL, *n;
	unsigned kept = 0;
	for (; b; b = n) {
		n = b->next;
		if (kept < 4) {
			b->used = 0;
			b->next = keep;
			keep = b;
			kept++;
		} else {
			free(b);
		}
	}
	/* an empty block first, then the spares */
	a->blocks = keep;
}

static void
arena_free(struct imp_arena *a)
{
	struct arena_block *b = a->blocks, *n;
	for (; b; b = n) {
		n = b->next;
		free(b);
	}
	a->blocks = NULL;
}
#define BATCH_ITEMS 1024u
#define IN_FLIGHT 3              /* batches queued or being parsed */

struct imp_pipe {
	int threaded;
	int fast;                    /* events flat.c knows skip jansson */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	/* batches in order: [0, nparsed) parsed, then queued ones */
	struct imp_batch *queue[IN_FLIGHT + 1];
	unsigned nqueue, nparsed;
	struct imp_batch *fill;      /* being filled by imp_pipe_put */
	struct imp_batch *spare[IN_FLIGHT + 2];
	unsigned nspare;
};

static struct imp_batch *
new_batch(struct imp_pipe *p)
{
	if (p->nspare)
		return p->spare[--p->nspare];
	struct imp_batch *b = calloc(1, sizeof(*b));
	if (!b)
		cmd_die(EXIT_USAGE, "out of memory");
	return b;
}

static void
free_batch(struct imp_batch *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++)
		json_decref(b->vals[i]);
	arena_free(&b->arena);
	free(b->text);
	free(b->items);
	free(b->vals);
	free(b->flats);
	free(b->flat_ok);
	free(b->keys);
	free(b->off);
	free(b);
}

static void
parse_batch(struct imp_batch *b, int fast)
{
	current = &b->arena;
	for (size_t i = 0; i < b->n; i++) {
		b->flat_ok[i] = fast && b->items[i].type == IMP_EVENT &&
		                imp_flat_scan(b->text + b->off[i], b->items[i].len,
		                              &b->flats[i]);
		if (!b->flat_ok[i])
			b->vals[i] = json_loadb(b->text + b->off[i], b->items[i].len,
			                        JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
	}
	current = NULL;
}

static void *
parser(void *arg)
{
	struct imp_pipe *p = arg;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->stop && p->nparsed == p->nqueue)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->stop)
			break;
		struct imp_batch *b = p->queue[p->nparsed];
		pthread_mutex_unlock(&p->mu);
		parse_batch(b, p->fast);
		pthread_mutex_lock(&p->mu);
		p->nparsed++;
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct imp_pipe *
imp_pipe_new(int threaded, int fast)
{
	struct imp_pipe *p = calloc(1, sizeof(*p));
	if (!p)
		cmd_die(EXIT_USAGE, "out of memory");
	p->fast = fast;
	if (threaded) {
		/* jansson seeds its hash function once: before threads */
		json_object_seed(0);
		pthread_mutex_init(&p->mu, NULL);
		pthread_cond_init(&p->cv, NULL);
		p->threaded = pthread_create(&p->thread, NULL, parser, p) == 0;
		if (!p->threaded) {
			pthread_mutex_destroy(&p->mu);
			pthread_cond_destroy(&p->cv);
		}
	}
	return p;
}

void
imp_pipe_free(struct imp_pipe *p)
{
	if (!p)
		return;
	if (p->threaded) {
		pthread_mutex_lock(&p->mu);
		p->stop = 1;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->thread, NULL);
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
	}
	for (unsigned i = 0; i < p->nqueue; i++)
		free_batch(p->queue[i]);
	for (unsigned i = 0; i < p->nspare; i++)
		free_batch(p->spare[i]);
	free_batch(p->fill);
	free(p);
}

static void
submit(struct imp_pipe *p)
{
	struct imp_batch *b = p->fill;
	p->fill = NULL;
	if (!b || !b->n) {
		if (b)
			p->spare[p->nspare++] = b;
		return;
	}
	if (!p->threaded) {
		parse_batch(b, p->fast);
		p->queue[p->nqueue++] = b;
		p->nparsed++;
		return;
	}
	pthread_mutex_lock(&p->mu);
	p->queue[p->nqueue++] = b;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

static void *
grow(void *ptr, size_t *cap, size_t need, size_t size)
{
	void *q = tkp_grow(ptr, cap, need, size);
	if (!q)
		cmd_die(EXIT_USAGE, "out of memory");
	return q;
}

int
imp_pipe_put(struct imp_pipe *p, const struct imp_item *it)
{
	if (!p->fill)
		p->fill = new_batch(p);
	struct imp_batch *b = p->fill;
	size_t keylen = it->key ? strlen(it->key) + 1 : 0;
	b->text = grow(b->text, &b->text_cap, b->len + it->len + keylen, 1);
	b->items = grow(b->items, &b->items_cap, b->n + 1, sizeof(*b->items));
	b->vals = grow(b->vals, &b->vals_cap, b->n + 1, sizeof(*b->vals));
	b->flats = grow(b->flats, &b->flats_cap, b->n + 1, sizeof(*b->flats));
	b->flat_ok = grow(b->flat_ok, &b->flat_ok_cap, b->n + 1, 1);
	b->off = grow(b->off, &b->off_cap, b->n + 1, sizeof(*b->off));
	b->keys = grow(b->keys, &b->keys_cap, b->n + 1, sizeof(*b->keys));
	memcpy(b->text + b->len, it->text, it->len);
	b->items[b->n] = *it;
	b->off[b->n] = b->len;
	b->vals[b->n] = NULL;
	b->flat_ok[b->n] = 0;
	b->len += it->len;
	b->keys[b->n] = 0;
	if (keylen) {
		memcpy(b->text + b->len, it->key, keylen);
		b->keys[b->n] = b->len + 1;   /* + 1: 0 means none */
		b->len += keylen;
	}
	b->n++;
	if (b->len >= BATCH_TEXT || b->n >= BATCH_ITEMS)
		submit(p);
	return 0;
}

void
imp_pipe_end(struct imp_pipe *p)
{
	submit(p);
}

int
imp_pipe_full(const struct imp_pipe *p)
{
	return p->nqueue >= IN_FLIGHT;
}

struct imp_batch *
imp_pipe_get(struct imp_pipe *p, int block)
{
	if (!p->nqueue)
		return NULL;
	if (p->threaded) {
		pthread_mutex_lock(&p->mu);
		while (block && p->nparsed == 0)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->nparsed == 0) {
			pthread_mutex_unlock(&p->mu);
			return NULL;
		}
	}
	struct imp_batch *b = p->queue[0];
	memmove(p->queue, p->queue + 1, (p->nqueue - 1) * sizeof(*p->queue));
	p->nqueue--;
	p->nparsed--;
	if (p->threaded)
		pthread_mutex_unlock(&p->mu);
	/* the item pointers point into the copied text now */
	for (size_t i = 0; i < b->n; i++) {
		b->items[i].text = b->text + b->off[i];
		b->items[i].key = b->keys[i] ? b->text + b->keys[i] - 1 : NULL;
	}
	return b;
}

void
imp_pipe_done(struct imp_pipe *p, struct imp_batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		json_decref(b->vals[i]);
		b->vals[i] = NULL;
	}
	arena_reset(&b->arena);
	b->n = 0;
	b->len = 0;
	if (p->nspare < sizeof(p->spare) / sizeof(p->spare[0]))
		p->spare[p->nspare++] = b;
	else
		free_batch(b);
}
