/* SPDX-License-Identifier: MIT */
/* common/ordpool: jobs worked on any thread, emitted in posting order,
 * each exactly once, at several thread and slot counts. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "common/ordpool.h"

struct job {
	uint64_t in, out;      /* out: work's result */
	int worked;            /* times work ran on this filling */
	pthread_t by;          /* the thread that did the work */
};

struct run {
	uint64_t emitted;      /* jobs emitted so far */
	uint64_t bad;          /* emitted out of order, or worked != 1 */
	pthread_t caller;
	uint64_t off_caller;   /* jobs worked on another thread */
};

/* A result that takes a little time and that the test can check: an
 * xorshift hash iterated. */
static uint64_t
slow_hash(uint64_t x)
{
	for (int i = 0; i < 2000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

static void
work(void *p, void *ctx)
{
	struct job *j = p;
	(void)ctx;
	j->out = slow_hash(j->in);
	j->by = pthread_self();
	j->worked++;
}

static int
emit(void *p, void *ctx)
{
	struct job *j = p;
	struct run *r = ctx;
	if (!pthread_equal(pthread_self(), r->caller))
		r->bad++;
	if (j->in != r->emitted + 1 || j->worked != 1 || j->out != slow_hash(j->in))
		r->bad++;
	if (!pthread_equal(j->by, r->caller))
		r->off_caller++;
	r->emitted++;
	return 0;
}

/* n jobs through a pool of `threads` and `nslots`, drained every
 * `drain_every` posts (0: never before the end). */
static void
one_run(unsigned threads, unsigned nslots, uint64_t n, uint64_t drain_every,
        uint64_t *off_caller)
{
	struct job *jobs = calloc(nslots, sizeof(*jobs));
	void **ptrs = calloc(nslots, sizeof(*ptrs));
	CHECK(jobs && ptrs);
	if (!jobs || !ptrs)
		return;
	for (unsigned i = 0; i < nslots; i++)
		ptrs[i] = &jobs[i];
	struct run r = { 0, 0, pthread_self(), 0 };
	struct ordpool *p = ordpool_new(threads, nslots, ptrs, work, emit, &r);
	CHECK(p != NULL);
	for (uint64_t i = 1; p && i <= n; i++) {
		struct job *j = ordpool_next(p);
		/* a free slot: its last job was emitted */
		CHECK(j->worked == 0 || j->in + nslots <= i);
		j->in = i;
		j->worked = 0;
		ordpool_post(p);
		if (drain_every && i % drain_every == 0) {
			ordpool_drain(p);
			CHECK_EQ_INT(r.emitted, i);
		}
	}
	ordpool_free(p);
	CHECK_EQ_INT(r.emitted, n);
	CHECK_EQ_INT(r.bad, 0);
	if (off_caller)
		*off_caller = r.off_caller;
	free(jobs);
	free(ptrs);
}

TEST(order_and_results)
{
	static const unsigned counts[][2] = { { 1, 1 }, { 1, 3 }, { 2, 1 },
	                                      { 2, 4 }, { 4, 8 }, { 8, 3 } };
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		one_run(counts[i][0], counts[i][1], 500, 0, NULL);
		one_run(counts[i][0], counts[i][1], 100, 7, NULL);
	}
	one_run(3, 6, 0, 0, NULL); /* nothing posted */
}

TEST(workers_do_work)
{
	/* with 4 parties and many jobs, some are done off the caller's
	 * thread; on a busy machine the workers may not get a core before
	 * the caller is done, so a few tries */
	uint64_t off = 0;
	for (int i = 0; i < 20 && !off; i++)
		one_run(4, 8, 2000, 0, &off);
	CHECK(off > 0);
	/* with one party, none */
	one_run(1, 2, 200, 0, &off);
	CHECK_EQ_INT(off, 0);
}

/* An emit that fails at job 40 (say a full disk): its value is kept,
 * no later job is emitted, and the pool still drains and frees. */
struct failing {
	uint64_t emitted;
	uint64_t fail_at;
};

static int
emit_failing(void *p, void *ctx)
{
	struct job *j = p;
	struct failing *f = ctx;
	f->emitted++;
	return j->in == f->fail_at ? 28 : 0;
}

static void
work_failing(void *p, void *ctx)
{
	(void)ctx;
	((struct job *)p)->worked++;
}

TEST(a_failed_emit_is_the_last)
{
	for (unsigned threads = 1; threads <= 4; threads += 3) {
		struct job jobs[4] = { 0 };
		void *ptrs[4] = { &jobs[0], &jobs[1], &jobs[2], &jobs[3] };
		struct failing f = { 0, 40 };
		struct ordpool *p = ordpool_new(threads, 4, ptrs, work_failing,
		                                emit_failing, &f);
		CHECK(p != NULL);
		if (!p)
			return;
		for (uint64_t i = 1; i <= 100; i++) {
			struct job *j = ordpool_next(p);
			j->in = i;
			ordpool_post(p);
			CHECK_EQ_INT(ordpool_failed(p), (f.emitted >= 40 ? 28 : 0));
		}
		ordpool_drain(p);
		CHECK_EQ_INT(f.emitted, 40);
		CHECK_EQ_INT(ordpool_failed(p), 28);
		ordpool_free(p);
	}
}

TEST(threads_from_environment)
{
	setenv("TK_THREADS", "3", 1);
	CHECK_EQ_INT(ordpool_threads(), 3);
	setenv("TK_THREADS", "1", 1);
	CHECK_EQ_INT(ordpool_threads(), 1);
	setenv("TK_THREADS", "1000", 1);
	CHECK_EQ_INT(ordpool_threads(), 8);
	setenv("TK_THREADS", "x", 1);
	CHECK(ordpool_threads() >= 1 && ordpool_threads() <= 8);
	unsetenv("TK_THREADS");
}

int
main(void)
{
	RUN(order_and_results);
	RUN(workers_do_work);
	RUN(a_failed_emit_is_the_last);
	RUN(threads_from_environment);
	return tap_done();
}
