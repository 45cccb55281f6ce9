/* SPDX-License-Identifier: MIT */
/*
 * Jobs done on worker threads, their results used in the order the jobs
 * were made: a command fills a job (a batch of events, a block of text),
 * hands it over, and goes on filling the next; workers do the work of
 * whichever job is the oldest not yet taken; the caller's own thread
 * takes results in order through `emit` (say, writes them), and does a
 * job's work itself rather than wait.  Memory: `slots` jobs at most.
 */
#ifndef CMD_ORDPOOL_H
#define CMD_ORDPOOL_H

struct ordpool;

/* The threads a command uses to do work in parallel: TK_THREADS as the
 * library's reader takes it (1 = none), else the machine's cores, at
 * most 8. */
unsigned ordpool_threads(void);

/* `threads` parties (the caller and threads - 1 workers) share `nslots`
 * jobs, jobs[i] being the caller's memory for slot i.  work(job, ctx)
 * runs on any thread, emit(job, ctx) on the caller's, in job order; an
 * emit that returns nonzero (a write that failed) is the last: later
 * jobs are worked but not emitted, and ordpool_failed() says it, so
 * that the caller stops its workers before it reports and exits.  A
 * failed thread start means fewer workers.  NULL: no memory. */
struct ordpool *ordpool_new(unsigned threads, unsigned nslots, void **jobs,
                            void (*work)(void *job, void *ctx),
                            int (*emit)(void *job, void *ctx), void *ctx);
/* The next job to fill: emitted (and so free) before it is returned. */
void *ordpool_next(struct ordpool *p);
/* The job from ordpool_next(), filled: hand it to the workers. */
void ordpool_post(struct ordpool *p);
/* Emit every posted job, in order. */
void ordpool_drain(struct ordpool *p);
/* The nonzero value an emit returned, or 0 (the caller's thread). */
int ordpool_failed(const struct ordpool *p);
/* Drain, stop the workers and free the pool (not the jobs). */
void ordpool_free(struct ordpool *p);

#endif
