/* SPDX-License-Identifier: MIT */
/*
 * Ordered jobs on worker threads (ordpool.h).
 *
 * Jobs are numbered as they are posted: filled >= taken >= emitted.
 * Workers take the lowest number not taken; the caller emits the lowest
 * number not emitted once its work is done.  When the caller must wait
 * (every slot in use, or draining), it first does the work of a job no
 * worker has taken: on two cores, one worker and the caller then share
 * the work instead of the caller idling while the worker is behind.
 * Workers start with every signal blocked, so that signals go to the
 * caller's thread, as before there were workers.  They are named
 * "tk-ordpool" (top -H, gdb, and the tests that check that none is left
 * running when a command exits).
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "ordpool.h"

#define THREADS_MAX 8u

struct ordpool {
	void **jobs;
	unsigned char *done;      /* per slot: its work is done */
	unsigned nslots;
	uint64_t filled, taken, emitted;
	int stop;
	int failed;               /* what an emit returned: no more emits */
	void (*work)(void *, void *);
	int (*emit)(void *, void *);
	void *ctx;
	pthread_mutex_t mu;
	pthread_cond_t more;      /* a job posted, or stop */
	pthread_cond_t finished;  /* a job's work done */
	pthread_t *threads;
	unsigned nthreads;
};

unsigned
ordpool_threads(void)
{
	const char *env = getenv("TK_THREADS");
	if (env && *env) {
		char *end;
		unsigned long v = strtoul(env, &end, 10);
		if (!*end && v >= 1)
			return v > THREADS_MAX ? THREADS_MAX : (unsigned)v;
	}
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	if (cores <= 1)
		return 1;
	return (unsigned long)cores > THREADS_MAX ? THREADS_MAX : (unsigned)cores;
}

static void *
worker(void *arg)
{
	struct ordpool *p = arg;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->stop && p->taken == p->filled)
			pthread_cond_wait(&p->more, &p->mu);
		if (p->taken == p->filled)
			break; /* stopped, nothing left */
		unsigned slot = (unsigned)(p->taken++ % p->nslots);
		pthread_mutex_unlock(&p->mu);
		p->work(p->jobs[slot], p->ctx);
		pthread_mutex_lock(&p->mu);
		p->done[slot] = 1;
		pthread_cond_broadcast(&p->finished);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct ordpool *
ordpool_new(unsigned threads, unsigned nslots, void **jobs,
            void (*work)(void *, void *), int (*emit)(void *, void *),
            void *ctx)
{
	struct ordpool *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->jobs = jobs;
	p->nslots = nslots ? nslots : 1;
	p->work = work;
	p->emit = emit;
	p->ctx = ctx;
	p->done = calloc(p->nslots, 1);
	p->threads = calloc(threads ? threads : 1, sizeof(*p->threads));
	if (!p->done || !p->threads) {
		free(p->done);
		free(p->threads);
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->more, NULL);
	pthread_cond_init(&p->finished, NULL);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned i = 0; i + 1 < threads; i++) {
		if (pthread_create(&p->threads[p->nthreads], NULL, worker, p) != 0)
			break; /* fewer workers: the caller does the rest */
		pthread_setname_np(p->threads[p->nthreads], "tk-ordpool");
		p->nthreads++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return p;
}

/* With the lock held: emit the oldest job if its work is done, else do
 * the work of a job no worker took, else wait for a worker.  Returns
 * with the lock held. */
static void
make_progress(struct ordpool *p)
{
	unsigned oldest = (unsigned)(p->emitted % p->nslots);
	if (p->emitted < p->filled && p->done[oldest]) {
		pthread_mutex_unlock(&p->mu);
		if (!p->failed)
			p->failed = p->emit(p->jobs[oldest], p->ctx);
		pthread_mutex_lock(&p->mu);
		p->done[oldest] = 0;
		p->emitted++;
	} else if (p->taken < p->filled) {
		unsigned slot = (unsigned)(p->taken++ % p->nslots);
		pthread_mutex_unlock(&p->mu);
		p->work(p->jobs[slot], p->ctx);
		pthread_mutex_lock(&p->mu);
		p->done[slot] = 1;
	} else {
		pthread_cond_wait(&p->finished, &p->mu);
	}
}

void *
ordpool_next(struct ordpool *p)
{
	pthread_mutex_lock(&p->mu);
	while (p->filled - p->emitted == p->nslots)
		make_progress(p);
	void *job = p->jobs[p->filled % p->nslots];
	pthread_mutex_unlock(&p->mu);
	return job;
}

void
ordpool_post(struct ordpool *p)
{
	pthread_mutex_lock(&p->mu);
	p->done[p->filled % p->nslots] = 0;
	p->filled++;
	pthread_cond_signal(&p->more);
	/* emit what is ready, without waiting */
	while (p->emitted < p->filled && p->done[p->emitted % p->nslots])
		make_progress(p);
	pthread_mutex_unlock(&p->mu);
}

void
ordpool_drain(struct ordpool *p)
{
	pthread_mutex_lock(&p->mu);
	while (p->emitted < p->filled)
		make_progress(p);
	pthread_mutex_unlock(&p->mu);
}

void
ordpool_free(struct ordpool *p)
{
	if (!p)
		return;
	ordpool_drain(p);
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->more);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->more);
	pthread_cond_destroy(&p->finished);
	pthread_mutex_destroy(&p->mu);
	free(p->done);
	free(p->threads);
	free(p);
}

int
ordpool_failed(const struct ordpool *p)
{
	return p->failed;
}
