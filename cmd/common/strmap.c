/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "strmap.h"
#include "support.h"

struct strmap_slot {
	char *key;             /* NULL = empty */
	size_t len;
	uint64_t hash;
	long value;
};

static struct strmap_slot *
find(const struct strmap *m, const void *key, size_t len, uint64_t h)
{
	size_t mask = m->cap - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct strmap_slot *s = &m->slots[i];
		if (!s->key || (s->hash == h && s->len == len &&
		                memcmp(s->key, key, len) == 0))
			return s;
	}
}

long
strmap_get(const struct strmap *m, const void *key, size_t len)
{
	if (!m->cap)
		return -1;
	struct strmap_slot *s = find(m, key, len, tkp_hash(key, len, 0));
	return s->key ? s->value : -1;
}

static int
grow(struct strmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct strmap_slot *old = m->slots;
	size_t old_cap = m->cap;
	m->slots = calloc(cap, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return -1;
	}
	m->cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].key)
			*find(m, old[i].key, old[i].len, old[i].hash) = old[i];
	free(old);
	return 0;
}

int
strmap_put(struct strmap *m, const void *key, size_t len, long value)
{
	if ((m->n + 1) * 4 > m->cap * 3 && grow(m) < 0)
		return -1;
	uint64_t h = tkp_hash(key, len, 0);
	struct strmap_slot *s = find(m, key, len, h);
	if (!s->key) {
		char *k = malloc(len + 1);
		if (!k)
			return -1;
		memcpy(k, key, len);
		k[len] = 0;
		s->key = k;
		s->len = len;
		s->hash = h;
		m->n++;
	}
	s->value = value;
	return 0;
}

void
strmap_free(struct strmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->slots[i].key);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}
