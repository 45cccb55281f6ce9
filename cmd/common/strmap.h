/* SPDX-License-Identifier: MIT */
/*
 * A map from byte strings to non-negative integers (indices into the
 * caller's arrays), open addressing with support.h's tkp_hash().  The
 * map keeps its own copies of the keys.  It cannot be walked, so the
 * hash decides no output order: callers keep their own arrays in the
 * order of insertion.
 */
#ifndef TK_CMD_STRMAP_H
#define TK_CMD_STRMAP_H

#include <stddef.h>
#include <stdint.h>

struct strmap {
	struct strmap_slot *slots;
	size_t cap, n;
};

/* The value of key, or -1. */
long strmap_get(const struct strmap *m, const void *key, size_t len);
/* Set key to value (>= 0); -1 when out of memory. */
int strmap_put(struct strmap *m, const void *key, size_t len, long value);
void strmap_free(struct strmap *m);

#endif
