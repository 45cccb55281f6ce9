/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "intern.h"
#include "support.h"

struct tkp_arena_block {
	struct tkp_arena_block *next;
	size_t used, size;
	char data[];
};

#define ARENA_BLOCK (64u * 1024u)

char *
tkp_arena_copy(struct tkp_arena_block **arena, const void *s, size_t len)
{
	struct tkp_arena_block *b = *arena;
	size_t need = len + 1;
	if (!b || b->size - b->used < need) {
		size_t size = need > ARENA_BLOCK / 4 ? need : ARENA_BLOCK;
		struct tkp_arena_block *nb = malloc(sizeof(*nb) + size);
		if (!nb)
			return NULL;
		nb->used = 0;
		nb->size = size;
		if (b && size != ARENA_BLOCK) {
			/* a big string: keep filling the current block */
			nb->next = b->next;
			b->next = nb;
		} else {
			nb->next = b;
			*arena = nb;
		}
		b = nb;
	}
	char *p = b->data + b->used;
	if (len)
		memcpy(p, s, len);
	p[len] = 0;
	b->used += need;
	return p;
}

void
tkp_arena_free(struct tkp_arena_block **arena)
{
	struct tkp_arena_block *b = *arena;
	while (b) {
		struct tkp_arena_block *next = b->next;
		free(b);
		b = next;
	}
	*arena = NULL;
}

static int
rehash(struct tkp_intern *t, uint32_t nslots)
{
	uint32_t *slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return -1;
	uint32_t mask = nslots - 1;
	for (uint32_t id = 1; id <= t->count; id++) {
		uint32_t i = (uint32_t)t->items[id].hash & mask;
		while (slots[i])
			i = (i + 1) & mask;
		slots[i] = id;
	}
	free(t->slots);
	t->slots = slots;
	t->mask = mask;
	return 0;
}

static uint32_t
lookup(const struct tkp_intern *t, const char *s, size_t len, uint64_t h,
       uint32_t *slot)
{
	uint32_t i = (uint32_t)h & t->mask;
	for (;;) {
		uint32_t id = t->slots[i];
		if (!id)
			break;
		const struct tkp_intern_item *it = &t->items[id];
		if (it->hash == h && it->len == len && memcmp(it->s, s, len) == 0)
			return id;
		i = (i + 1) & t->mask;
	}
	*slot = i;
	return 0;
}

uint32_t
tkp_intern(struct tkp_intern *t, const char *s, size_t len, int *added)
{
	*added = 0;
	if (len > UINT32_MAX)
		return 0;
	if (!t->slots && rehash(t, 256) < 0)
		return 0;
	uint64_t h = tkp_hash(s, len, 0);
	uint32_t slot;
	uint32_t id = lookup(t, s, len, h, &slot);
	if (id)
		return id;
	/* items[0] is unused: ids start at 1 */
	struct tkp_intern_item *items = tkp_grow(t->items, &t->items_cap,
	                                         (size_t)t->count + 2,
	                                         sizeof(*items));
	if (!items)
		return 0;
	t->items = items;
	char *copy = tkp_arena_copy(&t->arena, s, len);
	if (!copy)
		return 0;
	id = ++t->count;
	t->items[id] = (struct tkp_intern_item){ copy, (uint32_t)len, h };
	t->slots[slot] = id;
	/* keep the load under one half */
	if (t->count * 2 > t->mask && rehash(t, (t->mask + 1) * 2) < 0) {
		t->count--;
		t->slots[slot] = 0;
		return 0;
	}
	*added = 1;
	return id;
}

uint32_t
tkp_intern_find(const struct tkp_intern *t, const char *s, size_t len)
{
	if (!t->slots)
		return 0;
	uint32_t slot;
	return lookup(t, s, len, tkp_hash(s, len, 0), &slot);
}

const char *
tkp_intern_get(const struct tkp_intern *t, uint32_t id, uint32_t *len)
{
	if (id == 0 || id > t->count)
		return NULL;
	if (len)
		*len = t->items[id].len;
	return t->items[id].s;
}

void
tkp_intern_clear(struct tkp_intern *t)
{
	if (t->slots)
		memset(t->slots, 0, ((size_t)t->mask + 1) * sizeof(*t->slots));
	t->count = 0;
	tkp_arena_free(&t->arena);
}

void
tkp_intern_free(struct tkp_intern *t)
{
	free(t->slots);
	free(t->items);
	tkp_arena_free(&t->arena);
	memset(t, 0, sizeof(*t));
}
