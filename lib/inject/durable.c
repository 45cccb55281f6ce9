/* SPDX-License-Identifier: MIT */
/*
 * The durable buffers: <pid>-<ns>.buf in the spool directory, mapped
 * shared (layout: protocol.h, "The durable buffers").  The thread
 * buffers' blocks, the thread slots, the names log and the flusher's
 * snapshots live there, so that what a process wrote survives it:
 * trace-record converts what the flusher had not when the process dies
 * without its last flush.
 *
 * Blocks are whole units of the file.  Freed single units go on a free
 * list (a stack of indices, under the caller's pool lock); larger
 * blocks come from the never-used part, and are split into single
 * units when freed.  The file is sparse: twice the buffer limit costs
 * only the pages written.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "support.h"
#include "tbuf.h"

static uint8_t *map;             /* NULL when not recording */
static size_t map_size;
static char path[PATH_MAX];
static uint32_t bump;            /* units never handed out start here */
static uint32_t *free_units;     /* single units freed */
static size_t nfree, free_cap;
/* the snapshot being written (the one not committed) */
static uint32_t snap_half;
static uint64_t snap_len, snap_lost;
/* bytes of the names log and of each snapshot whose pages are
 * allocated (populate()) */
static uint64_t names_ready, snap_ready[2];

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  /* Linux 5.14 */
#endif
#define POPULATE_STEP (64u * 1024u)

/*
 * The file is sparse (ftruncate): a page gets its storage when first
 * touched, and on a full file system (a full /tmp, a full tmpfs) that
 * touch is a SIGBUS in the recorded program -- and in trace-record when
 * it reads the page.  So pages are allocated before their first use
 * (MADV_POPULATE_WRITE allocates as a write would, but fails with an
 * error instead of a signal), and what cannot get a page is dropped and
 * counted like records that found the buffers full.  A kernel without
 * it (before 5.14) says EINVAL: touch as before.
 */
static int
populate_in(uint8_t *base, uint64_t size, uint64_t off, uint64_t len)
{
	uint64_t page = 4096;
	uint64_t from = off & ~(page - 1), to = (off + len + page - 1) & ~(page - 1);
	if (to > size)
		to = size;
	if (to <= from)
		return 0;
	if (madvise(base + from, (size_t)(to - from), MADV_POPULATE_WRITE) == 0 ||
	    errno == EINVAL)
		return 0;
	return -1;
}

static int
populate(uint64_t off, uint64_t len)
{
	return populate_in(map, map_size, off, len);
}

/* Pages for [0, need) of a region at `off` whose first `*ready` bytes
 * have theirs; in steps, so that a log growing by a few bytes asks
 * rarely. */
static int
ready_upto(uint64_t off, uint64_t *ready, uint64_t need, uint64_t cap)
{
	if (need <= *ready)
		return 0;
	uint64_t to = (need + POPULATE_STEP - 1) / POPULATE_STEP * POPULATE_STEP;
	if (to > cap)
		to = cap;
	if (populate(off + *ready, to - *ready) < 0)
		return -1;
	*ready = to;
	return 0;
}

static struct tki_buf_head *
head(void)
{
	return (struct tki_buf_head *)map;
}

int
tki_buf_open(const char *file, size_t buffer_limit, int64_t win_end)
{
	uint64_t units = buffer_limit / TKI_BUF_UNIT * 2 + 64;
	if (units > UINT32_MAX / 2)
		units = UINT32_MAX / 2;
	uint64_t thread_off = 4096;
	uint64_t names_off = thread_off +
	                     TKI_BUF_THREADS * sizeof(struct tki_buf_thread);
	uint64_t snap_off = names_off + TKI_BUF_NAMES_BYTES;
	uint64_t blocks_off = snap_off + 2ull * TKI_BUF_SNAP_BYTES;
	uint64_t size = blocks_off + units * TKI_BUF_UNIT;
	snprintf(path, sizeof(path), "%s", file);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)size) < 0) {
		close(fd);
		unlink(path);
		return -1;
	}
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		unlink(path);
		return -1;
	}
	map_size = size;
	bump = 0;
	nfree = 0;
	/* the head and the thread slots, which trace-record reads whole,
	 * and the first pages of the names log and of both snapshots: on a
	 * full disk a commit then still says which ranges are open */
	names_ready = snap_ready[0] = snap_ready[1] = POPULATE_STEP;
	if (populate_in(p, size, 0, names_off) < 0 ||
	    populate_in(p, size, names_off, POPULATE_STEP) < 0 ||
	    populate_in(p, size, snap_off, POPULATE_STEP) < 0 ||
	    populate_in(p, size, snap_off + TKI_BUF_SNAP_BYTES, POPULATE_STEP) < 0) {
		munmap(p, size);
		unlink(path);
		return -1;
	}
	struct tki_buf_head *h = p;
	h->unit = TKI_BUF_UNIT;
	h->nunits = (uint32_t)units;
	h->nthreads = TKI_BUF_THREADS;
	h->size = size;
	h->thread_off = thread_off;
	h->names_off = names_off;
	h->names_cap = TKI_BUF_NAMES_BYTES;
	h->snap_off[0] = snap_off;
	h->snap_off[1] = snap_off + TKI_BUF_SNAP_BYTES;
	h->snap_cap = TKI_BUF_SNAP_BYTES;
	h->snap_cur = 2;
	h->blocks_off = blocks_off;
	h->win_end = win_end;
	snap_half = 0;
	__atomic_store_n(&h->magic, TKI_BUF_MAGIC, __ATOMIC_RELEASE);
	/* the registry logs names from any thread once it sees the map */
	__atomic_store_n(&map, (uint8_t *)p, __ATOMIC_RELEASE);
	return 0;
}

void
tki_buf_forget(int remove)
{
	/* after fork the mapping is the parent's: not one byte written */
	if (map)
		munmap(map, map_size);
	map = NULL;
	free(free_units);
	free_units = NULL;
	nfree = free_cap = 0;
	if (remove && path[0])
		unlink(path);
	path[0] = 0;
}

void
tki_buf_unlink(void)
{
	/* threads may still write into the mapping: it stays */
	if (path[0])
		unlink(path);
}

void
tki_buf_closed(void)
{
	if (map)
		__atomic_store_n(&head()->closed, 1, __ATOMIC_RELEASE);
}

/* ---- blocks ----------------------------------------------------------------------- */

struct tki_block *
tki_buf_block(uint32_t index)
{
	return (struct tki_block *)(map + head()->blocks_off +
	                            (uint64_t)index * TKI_BUF_UNIT);
}

uint32_t
tki_buf_index(const struct tki_block *b)
{
	return (uint32_t)(((const uint8_t *)b - map - head()->blocks_off) /
	                  TKI_BUF_UNIT);
}

struct tki_block *
tki_buf_alloc(uint32_t units)
{
	if (!map)
		return NULL;
	uint32_t i;
	if (units == 1 && nfree) {
		i = free_units[--nfree];
	} else {
		if (bump + (uint64_t)units > head()->nunits ||
		    populate(head()->blocks_off + (uint64_t)bump * TKI_BUF_UNIT,
		             (uint64_t)units * TKI_BUF_UNIT) < 0)
			return NULL;
		i = bump;
		bump += units;
	}
	struct tki_block *b = tki_buf_block(i);
	b->units = units;
	return b;
}

void
tki_buf_free(struct tki_block *b)
{
	if (!map)
		return;
	uint32_t first = tki_buf_index(b), n = b->units ? b->units : 1;
	uint32_t *a = tkp_grow(free_units, &free_cap, nfree + n, sizeof(*a));
	if (!a)
		return;          /* the units are lost, not the records */
	free_units = a;
	for (uint32_t k = n; k-- > 0;)
		free_units[nfree++] = first + k;
}

/* ---- thread slots ------------------------------------------------------------------- */

static struct tki_buf_thread *
slot_at(uint32_t i)
{
	return (struct tki_buf_thread *)(map + head()->thread_off) + i;
}

int
tki_buf_slot_take(int64_t tid, const char *name, struct tki_block *first)
{
	if (!map)
		return -1;
	for (uint32_t i = 0; i < TKI_BUF_THREADS; i++) {
		struct tki_buf_thread *s = slot_at(i);
		if (s->state != TKI_SLOT_FREE)
			continue;
		s->serial++;
		s->tid = tid;
		s->first = tki_buf_index(first) + 1;
		s->dropped = 0;
		snprintf(s->name, sizeof(s->name), "%s", name);
		__atomic_store_n(&s->state, TKI_SLOT_LIVE, __ATOMIC_RELEASE);
		return (int)i;
	}
	return -1;
}

void
tki_buf_slot_free(int slot)
{
	if (map && slot >= 0)
		__atomic_store_n(&slot_at((uint32_t)slot)->state, TKI_SLOT_FREE,
		                 __ATOMIC_RELEASE);
}

uint32_t
tki_buf_slot_serial(int slot)
{
	return map && slot >= 0 ? slot_at((uint32_t)slot)->serial : 0;
}

uint64_t *
tki_buf_slot_dropped(int slot)
{
	return map && slot >= 0 ? &slot_at((uint32_t)slot)->dropped : NULL;
}

/* ---- the names log ------------------------------------------------------------------- */

void
tki_buf_name(uint32_t kind, uint64_t a, uint64_t b, const char *s, size_t len)
{
	if (!__atomic_load_n(&map, __ATOMIC_ACQUIRE))
		return;
	struct tki_buf_head *h = head();
	uint64_t at = h->names_len;
	uint64_t need = sizeof(struct tki_buf_name) + tki_pad8((uint32_t)len);
	if (len > UINT32_MAX / 2 || at + need > h->names_cap ||
	    ready_upto(h->names_off, &names_ready, at + need, h->names_cap) < 0)
		return;          /* recovery names it by its id */
	uint8_t *p = map + h->names_off + at;
	struct tki_buf_name n = { kind, (uint32_t)len, a, b };
	memcpy(p, &n, sizeof(n));
	memcpy(p + sizeof(n), s, len);
	__atomic_store_n(&h->names_len, at + need, __ATOMIC_RELEASE);
}

/* ---- snapshots ---------------------------------------------------------------------- */

void
tki_buf_snap_begin(void)
{
	if (!map)
		return;
	uint32_t cur = __atomic_load_n(&head()->snap_cur, __ATOMIC_RELAXED);
	snap_half = cur == 0 ? 1 : 0;
	snap_len = 0;
	snap_lost = 0;
}

void
tki_buf_snap_add(const struct tki_snap *e, const char *name, uint32_t len)
{
	if (!map)
		return;
	struct tki_buf_head *h = head();
	uint64_t need = sizeof(*e) + tki_pad8(len);
	if (snap_len + need > h->snap_cap ||
	    ready_upto(h->snap_off[snap_half], &snap_ready[snap_half],
	               snap_len + need, h->snap_cap) < 0) {
		snap_lost++;
		return;
	}
	uint8_t *p = map + h->snap_off[snap_half] + snap_len;
	struct tki_snap c = *e;
	c.len = len;
	memcpy(p, &c, sizeof(c));
	if (len)
		memcpy(p + sizeof(c), name, len);
	snap_len += need;
}

void
tki_buf_spool_start(uint64_t spool_bytes)
{
	if (!map)
		return;
	head()->snap_spool[0] = head()->snap_spool[1] = spool_bytes;
}

void
tki_buf_snap_commit(uint64_t spool_bytes)
{
	if (!map)
		return;
	struct tki_buf_head *h = head();
	h->snap_len[snap_half] = snap_len;
	h->snap_spool[snap_half] = spool_bytes;
	h->snap_lost = snap_lost;
	/* the one store that makes the snapshot the current one */
	__atomic_store_n(&h->snap_cur, snap_half, __ATOMIC_RELEASE);
}

/* ---- CUDA activity counts ---------------------------------------------------------- */

void
tki_buf_cuda_issued(unsigned k)
{
	/* any thread, inside CUPTI's callback: no lock, one relaxed add */
	uint8_t *m = __atomic_load_n(&map, __ATOMIC_ACQUIRE);
	if (m && k < TKI_CUDA_COUNTED)
		__atomic_fetch_add(&((struct tki_buf_head *)m)->cuda_issued[k], 1,
		                   __ATOMIC_RELAXED);
}

void
tki_buf_cuda_delivered(const uint64_t n[TKI_CUDA_COUNTED])
{
	uint8_t *m = __atomic_load_n(&map, __ATOMIC_ACQUIRE);
	if (!m)
		return;
	struct tki_buf_head *h = (struct tki_buf_head *)m;
	for (unsigned k = 0; k < TKI_CUDA_COUNTED; k++)
		__atomic_store_n(&h->cuda_delivered[k], n[k], __ATOMIC_RELAXED);
}

int
tki_buf_cuda_counts(uint64_t issued[TKI_CUDA_COUNTED], uint64_t delivered[TKI_CUDA_COUNTED])
{
	uint8_t *m = __atomic_load_n(&map, __ATOMIC_ACQUIRE);
	if (!m)
		return -1;
	const struct tki_buf_head *h = (const struct tki_buf_head *)m;
	for (unsigned k = 0; k < TKI_CUDA_COUNTED; k++) {
		issued[k] = __atomic_load_n(&h->cuda_issued[k], __ATOMIC_RELAXED);
		delivered[k] = __atomic_load_n(&h->cuda_delivered[k], __ATOMIC_RELAXED);
	}
	return 0;
}
