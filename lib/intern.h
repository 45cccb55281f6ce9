/* SPDX-License-Identifier: MIT */
/*
 * Interning of byte strings: equal strings get equal dense ids 1, 2, ...
 * Copies are kept in an arena, NUL-terminated, so the pointers returned
 * stay valid until the table is cleared.
 */
#ifndef TK_INTERN_H
#define TK_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "tk_private.h"

struct tkp_arena_block;

struct tkp_intern_item {
	const char *s;
	uint32_t len;
	uint64_t hash;
};

struct tkp_intern {
	uint32_t *slots;              /* id per slot, 0 = empty */
	uint32_t mask;                /* slot count - 1 */
	uint32_t count;               /* ids in use */
	struct tkp_intern_item *items;/* by id; items[0] unused */
	size_t items_cap;
	struct tkp_arena_block *arena;
};

/* Id of s[0..len), added when new (*added = 1); 0 when out of memory. */
TKP_HIDDEN uint32_t tkp_intern(struct tkp_intern *t, const char *s,
                               size_t len, int *added);
/* Id of s, 0 if absent. */
TKP_HIDDEN uint32_t tkp_intern_find(const struct tkp_intern *t, const char *s,
                                    size_t len);
/* The string of id, NULL if out of range. */
TKP_HIDDEN const char *tkp_intern_get(const struct tkp_intern *t, uint32_t id,
                                      uint32_t *len);
/* Forget every string (ids restart at 1), keeping allocations. */
TKP_HIDDEN void tkp_intern_clear(struct tkp_intern *t);
TKP_HIDDEN void tkp_intern_free(struct tkp_intern *t);

/* Arena of NUL-terminated copies, freed all at once. */
TKP_HIDDEN char *tkp_arena_copy(struct tkp_arena_block **arena, const void *s,
                                size_t len);
TKP_HIDDEN void tkp_arena_free(struct tkp_arena_block **arena);

#endif
