/* SPDX-License-Identifier: MIT */
/*
 * The distributed view (trace-stats --distributed): for each rank of a
 * job, and for each of its steps, where its GPU time goes, as HTA's
 * temporal breakdown and TensorBoard's distributed view give it:
 * computation, communication, memory operations, idle, and the
 * communication that no computation overlaps (exposed).
 *
 * The caller says which rank each piece of GPU work and each step is
 * of (aggregate.c: a process's label, else the trace's
 * distributedInfo.rank, else the input); this keeps every interval
 * (16 bytes per GPU operation) until ranks_finish(), because the ranks
 * of several inputs are only complete at the end.
 *
 * Each figure is the length of a union of intervals within the window:
 * a rank's window is its first GPU operation's begin to its last one's
 * end; a step's, the step's range.  A rank's GPUs count together.
 *   compute   kernels that are no communication
 *   comm      communication kernels (ranks_is_comm())
 *   memops    memcpys and memsets
 *   exposed   comm time when no compute kernel runs
 *   busy      any of them;  idle = window - busy
 */
#ifndef TK_CMD_RANKS_H
#define TK_CMD_RANKS_H

#include <stddef.h>
#include <stdint.h>

enum rank_cls { RANK_COMPUTE, RANK_COMM, RANK_MEMOPS, RANK_NCLS };

/* The figures of one window. */
struct rank_figures {
	int64_t begin, dur;      /* the window */
	int64_t busy, compute, comm, memops, exposed, idle;
};

struct rank_row {
	const char *name;        /* "rank 3", a label, or the input */
	struct rank_figures f;
	uint64_t ops;            /* GPU operations */
	size_t nsteps;
	int64_t step_total;      /* the steps' durations added up */
};

struct rank_step_row {
	const char *step;        /* the step's range name */
	size_t rank;             /* index in the rank rows */
	struct rank_figures f;
};

struct ranks;

/* NULL when out of memory. */
struct ranks *ranks_new(void);
void ranks_free(struct ranks *r);

/* The rank of this name, created on first use: its index, or -1 when
 * out of memory. */
int32_t ranks_key(struct ranks *r, const char *name);
/* GPU work of class c, or a step, of rank i in [begin, end); -1 when
 * out of memory. */
int ranks_gpu(struct ranks *r, int32_t i, enum rank_cls c, int64_t begin,
              int64_t end);
int ranks_step(struct ranks *r, int32_t i, const char *name, int64_t begin,
               int64_t end);

/* Compute the rows (ranks in natural name order, those without GPU work
 * or steps left out; steps by begin time); -1 when out of memory.  The
 * rows stay valid until ranks_free(). */
int ranks_finish(struct ranks *r);
const struct rank_row *ranks_rows(const struct ranks *r, size_t *n);
const struct rank_step_row *ranks_step_rows(const struct ranks *r, size_t *n);

/* Is a kernel of this name communication?  The name table of
 * trace-stats(1): names beginning (after "void ") with nccl, rccl,
 * msccl or nvshmem, in any case. */
int ranks_is_comm(const char *kernel);

/* The name of rank i (ranks_key()'s index), valid until ranks_free(). */
const char *ranks_name(const struct ranks *r, int32_t i);

#endif
