/* SPDX-License-Identifier: MIT */
/*
 * Support for every layer of the tree: one growable array and one hash.
 * Header-only (static inline), with no state, so the library, the
 * injection library and the commands can all include it without linking
 * each other; it is the only lib/ header besides tracekit.h that cmd/
 * may include (tests/tools/check-layers.sh).
 */
#ifndef TK_SUPPORT_H
#define TK_SUPPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * Grows an array of elements of `size` bytes so that it holds at least
 * `need` of them: returns `items` itself when *cap is enough, otherwise
 * the reallocated block (capacity doubled, at least `need`, at least 8),
 * with *cap updated.  On overflow or when memory runs out: NULL, and
 * `items` and *cap are untouched (the caller still owns `items`).
 *
 *	struct row *rows = tkp_grow(t->rows, &t->cap, t->n + 1, sizeof *rows);
 *	if (!rows)
 *		return -1;
 *	t->rows = rows;
 */
static inline void *
tkp_grow(void *items, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return items;
	size_t ncap = *cap < 8 ? 8 : *cap;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return NULL;
		ncap *= 2;
	}
	if (size && ncap > SIZE_MAX / size)
		return NULL;
	void *p = realloc(items, ncap * size);
	if (!p)
		return NULL;
	*cap = ncap;
	return p;
}

/* tkp_grow() for arrays indexed by id, where an entry not yet set must
 * read as zero: the entries the growth adds are zeroed. */
static inline void *
tkp_grow_zeroed(void *items, size_t *cap, size_t need, size_t size)
{
	size_t old = *cap;
	char *p = tkp_grow(items, cap, need, size);
	if (p && *cap > old)
		memset(p + old * size, 0, (*cap - old) * size);
	return p;
}

/* Mixes a 64-bit key to 64 well-spread bits (the splitmix64 finaliser):
 * for hash tables keyed by integers (ids, correlations, pids). */
static inline uint64_t
tkp_hash_u64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* A 64-bit hash of n bytes, 8 at a time, for hash tables keyed by
 * strings (names are short; a full 64-bit mix keeps probe chains short).
 * `seed` starts a chain: tkp_hash(b, nb, tkp_hash(a, na, 0)) hashes a
 * then b. */
static inline uint64_t
tkp_hash(const void *p, size_t n, uint64_t seed)
{
	const uint8_t *s = p;
	uint64_t h = (0x9e3779b97f4a7c15ull ^ seed) ^ (n * 0xff51afd7ed558ccdull);
	while (n >= 8) {
		uint64_t k;
		memcpy(&k, s, 8);
		h = (h ^ (k * 0x87c37b91114253d5ull)) * 0x4cf5ad432745937full;
		h ^= h >> 31;
		s += 8;
		n -= 8;
	}
	uint64_t k = 0;
	if (n)
		memcpy(&k, s, n);
	h = (h ^ (k * 0x87c37b91114253d5ull)) * 0x4cf5ad432745937full;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return h;
}

/*
 * Coverage builds only (make coverage defines TK_COVERAGE): gcov writes a
 * process's counters at exit(), so a process that ends another way (a
 * forked child's exec or _exit, a fatal signal raised again) writes them
 * first with tkp_coverage_dump(), or what it ran is never counted (a
 * dump is once only: tkp_coverage_undump() zeroes the counters written
 * and allows the next one).
 * Nothing at all in other builds.
 */
#ifdef TK_COVERAGE
void __gcov_dump(void);
void __gcov_reset(void);
#define tkp_coverage_dump() __gcov_dump()
#define tkp_coverage_undump() __gcov_reset() /* exec failed: count on */
#else
#define tkp_coverage_dump() ((void)0)
#define tkp_coverage_undump() ((void)0)
#endif

#endif
