/* SPDX-License-Identifier: MIT */
/*
 * Thread buffers: blocks, the list of threads, and what fork() leaves.
 *
 * A thread that fills a block takes another one (from the durable
 * buffer file, durable.c) and links it; the flusher frees blocks once
 * what it made of them is committed.  The process's buffers are
 * bounded (TRACEKIT_BUFFER_BYTES): at the bound a thread wakes the
 * flusher and waits for it a little, and only drops the record
 * (counting it) when the flusher cannot keep up.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tbuf.h"

__thread struct tki_thread *tki_self __attribute__((tls_model("initial-exec")));
static __thread int attaching __attribute__((tls_model("initial-exec")));

static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tki_thread *threads;
static uint32_t thread_count;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_size_t block_bytes;          /* in blocks handed out */

#define WAIT_FOR_ROOM_NS (200 * 1000000LL)

size_t
tki_buffer_bytes(void)
{
	return atomic_load_explicit(&block_bytes, memory_order_relaxed);
}

static struct tki_block *
block_new(uint32_t cap)
{
	uint32_t units = (uint32_t)((cap + sizeof(struct tki_block) +
	                             TKI_BUF_UNIT - 1) / TKI_BUF_UNIT);
	pthread_mutex_lock(&pool_lock);
	struct tki_block *b = tki_buf_alloc(units);
	pthread_mutex_unlock(&pool_lock);
	if (!b)
		return NULL;
	atomic_store_explicit(&b->next, 0, memory_order_relaxed);
	atomic_store_explicit(&b->used, 0, memory_order_relaxed);
	atomic_store_explicit(&b->read, 0, memory_order_relaxed);
	b->cap = units * TKI_BUF_UNIT - (uint32_t)sizeof(*b);
	atomic_fetch_add_explicit(&block_bytes, b->cap, memory_order_relaxed);
	return b;
}

void
tki_block_release(struct tki_block *b)
{
	atomic_fetch_sub_explicit(&block_bytes, b->cap, memory_order_relaxed);
	pthread_mutex_lock(&pool_lock);
	tki_buf_free(b);
	pthread_mutex_unlock(&pool_lock);
}

struct tki_block *
tki_block_next(const struct tki_block *b)
{
	uint32_t n = atomic_load_explicit(&((struct tki_block *)b)->next,
	                                  memory_order_acquire);
	return n ? tki_buf_block(n - 1) : NULL;
}

/* A block of at least n bytes, within the process's limit: wait for
 * the flusher at the limit rather than drop.  A thread whose block the
 * flusher has read to the end may always move on (that block is freed
 * at once), so every thread can make progress. */
static struct tki_block *
block_within_limit(struct tki_thread *t, uint32_t n)
{
	uint32_t cap = n > TKI_BLOCK_BYTES ? tki_align8(n) : TKI_BLOCK_BYTES;
	if (n > UINT32_MAX / 2)
		return NULL;
	size_t limit = tki_cfg.buffer_limit;
	int64_t waited = 0;
	while (atomic_load_explicit(&block_bytes, memory_order_relaxed) + cap >
	       limit) {
		if (atomic_load_explicit(&t->cur->read, memory_order_acquire) ==
		    t->wpos)
			break;
		tki_flusher_wake();
		/* waiting for each record would stall the program for good */
		if (!atomic_load_explicit(&tki_on, memory_order_relaxed) ||
		    t->dropping || waited >= WAIT_FOR_ROOM_NS) {
			t->dropping = 1;
			return NULL;
		}
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
		waited += 1000000;
	}
	t->dropping = 0;
	if (atomic_load_explicit(&block_bytes, memory_order_relaxed) > limit / 4)
		tki_flusher_wake();
	return block_new(cap);
}

void *
tki_reserve_slow(struct tki_thread *t, uint32_t n)
{
	struct tki_block *b = block_within_limit(t, n);
	if (!b)
		return NULL;
	/* the flusher reads `next` before `used`: once it sees the link,
	 * the old block's length is final */
	atomic_store_explicit(&t->cur->next, tki_buf_index(b) + 1,
	                      memory_order_release);
	t->cur = b;
	t->wpos = 0;
	return b->data;
}

struct tki_levels *
tki_levels_slow(struct tki_thread *t, uint32_t domain)
{
	if (domain >= t->nlevels) {
		uint32_t n = t->nlevels ? t->nlevels : 4;
		while (n <= domain)
			n *= 2;
		struct tki_levels **a = realloc(t->levels, n * sizeof(*a));
		if (!a)
			return NULL;
		memset(a + t->nlevels, 0, (n - t->nlevels) * sizeof(*a));
		t->levels = a;
		t->nlevels = n;
	}
	if (!t->levels[domain])
		t->levels[domain] = calloc(1, sizeof(struct tki_levels));
	return t->levels[domain];
}

static void
thread_exit(void *arg)
{
	struct tki_thread *t = arg;
	t->exit_ts = tki_now();
	atomic_store_explicit(&t->exited, 1, memory_order_release);
	if (tki_self == t)
		tki_self = NULL;
	tki_flusher_wake();
}

/* The kernel's name of a thread, for recovery. */
static void
thread_comm(int64_t tid, char *buf, size_t n)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%lld/comm", (long long)tid);
	buf[0] = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t k = read(fd, buf, n - 1);
	close(fd);
	if (k < 0)
		k = 0;
	buf[k] = 0;
	if (k > 0 && buf[k - 1] == '\n')
		buf[k - 1] = 0;
}

static void
make_key(void)
{
	pthread_key_create(&exit_key, thread_exit);
}

struct tki_thread *
tki_thread_attach(void)
{
	/* a malloc that records NVTX ranges would come back here */
	if (attaching || tki_ensure_process() != 0)
		return NULL;
	attaching = 1;
	struct tki_thread *t = calloc(1, sizeof(*t));
	struct tki_block *b = t ? block_new(TKI_BLOCK_BYTES) : NULL;
	if (!b) {
		/* no memory for the thread's buffers: the call that came
		 * here is lost, and counted with the process's (its status
		 * page exists: tki_ensure_process succeeded) */
		free(t);
		tki_spool_count_nomem(1);
		attaching = 0;
		return NULL;
	}
	t->cur = t->head = t->keep = b;
	t->tid = syscall(SYS_gettid);
	pthread_once(&key_once, make_key);
	pthread_setspecific(exit_key, t);
	char comm[64];
	thread_comm(t->tid, comm, sizeof(comm));

	pthread_mutex_lock(&threads_lock);
	t->slot = tki_buf_slot_take(t->tid, comm, b);
	t->dropped = t->slot >= 0 ? tki_buf_slot_dropped(t->slot)
	                          : &t->dropped_private;
	t->index = ++thread_count;
	if (t->index < TKI_STATUS_SLOTS) {
		t->produced = (uint64_t *)&tki_status->slot[t->index].produced;
	} else {
		t->produced = (uint64_t *)&tki_status->slot[0].produced;
		t->shared_slot = 1;
	}
	t->next = threads;
	threads = t;
	pthread_mutex_unlock(&threads_lock);

	/* start/end range ids: thread index above bit 40 keeps them unique
	 * without a shared counter */
	t->next_range_id = ((uint64_t)t->index << 40) + 1;
	tki_self = t;
	attaching = 0;
	return t;
}

size_t
tki_threads_snapshot(struct tki_thread ***out)
{
	pthread_mutex_lock(&threads_lock);
	size_t n = 0;
	for (struct tki_thread *t = threads; t; t = t->next)
		n++;
	struct tki_thread **a = malloc((n ? n : 1) * sizeof(*a));
	if (!a) {
		pthread_mutex_unlock(&threads_lock);
		*out = NULL;
		return 0;
	}
	n = 0;
	for (struct tki_thread *t = threads; t; t = t->next)
		a[n++] = t;
	pthread_mutex_unlock(&threads_lock);
	*out = a;
	return n;
}

static void
free_thread_memory(struct tki_thread *t, int blocks)
{
	struct tki_block *b = blocks ? t->keep : NULL;
	while (b) {
		struct tki_block *next = tki_block_next(b);
		tki_block_release(b);
		b = next;
	}
	if (blocks)
		tki_buf_slot_free(t->slot);
	for (uint32_t i = 0; i < t->nlevels; i++)
		free(t->levels[i]);
	free(t->levels);
	tki_open_free(t);
	free(t);
}

void
tki_thread_free(struct tki_thread *t)
{
	pthread_mutex_lock(&threads_lock);
	for (struct tki_thread **p = &threads; *p; p = &(*p)->next) {
		if (*p == t) {
			*p = t->next;
			break;
		}
	}
	pthread_mutex_unlock(&threads_lock);
	free_thread_memory(t, 1);
}

void
tki_threads_after_fork(void)
{
	/* only the forking thread lives on; its records, like those of
	 * every other thread, belong to the parent */
	pthread_mutex_init(&threads_lock, NULL);
	pthread_mutex_init(&pool_lock, NULL);
	struct tki_thread *t = threads;
	threads = NULL;
	thread_count = 0;
	while (t) {
		struct tki_thread *next = t->next;
		free_thread_memory(t, 0); /* the blocks are the parent's */
		t = next;
	}
	tki_buf_forget(0);
	atomic_store(&block_bytes, 0);
	tki_self = NULL;
	attaching = 0;
}

void
tki_tbuf_lock(void)
{
	pthread_mutex_lock(&threads_lock);
	pthread_mutex_lock(&pool_lock);
}

void
tki_tbuf_unlock(void)
{
	pthread_mutex_unlock(&pool_lock);
	pthread_mutex_unlock(&threads_lock);
}
