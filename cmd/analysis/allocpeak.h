/* SPDX-License-Identifier: MIT */
/*
 * The PyTorch allocator's peaks per step, and the operation at a peak
 * (trace-stats -r memory with --steps or --per; issue 19).
 *
 * Kineto's [memory] instants become, in a trace, an allocation or free
 * (TK_MEMORY) on the CPU thread that made it and samples of the "Total
 * Allocated" and "Total Reserved" counters of its device (or of its
 * process, for host memory), at the same time.  The operation at a
 * peak is the innermost range on that thread enclosing the allocation
 * that took the counter to its peak: the sample and the allocation are
 * joined by their time (and, for host memory, their process); when
 * several allocations share that time, the first read wins.
 *
 * The caller feeds, per trace scope:
 *   allocpeak_range()     every range on a CPU thread, in begin order
 *                         per thread (ranges enclosing an allocation
 *                         begin before it);
 *   allocpeak_event()     every allocation or free, in time order per
 *                         thread;
 *   allocpeak_sample()    every sample of an allocator counter;
 * then allocpeak_scope_end() with the scope's step instances, which
 * gives each its peaks (perinst_instance.mem_first, mem_n) and forgets
 * the scope.  Memory: per scope, 24 bytes per allocation event and 32
 * per sample when steps are wanted (else only the stacks of open
 * ranges); the names of operations, once each, for the whole run.
 */
#ifndef TK_CMD_ALLOCPEAK_H
#define TK_CMD_ALLOCPEAK_H

#include <stddef.h>
#include <stdint.h>

#include "perinst.h"

/* Which total: Kineto's "Total Allocated", "Total Reserved". */
enum { ALLOC_ALLOCATED, ALLOC_RESERVED };

/* One device (or one process's host memory) in one step. */
struct allocpeak_step {
	int is_host;             /* host memory of process `where` */
	int32_t where;           /* device or process: the caller's index */
	int has[2];              /* by ALLOC_ALLOCATED, ALLOC_RESERVED */
	double peak[2];          /* bytes: the highest sample in the step */
	int64_t peak_ts[2];      /* the first sample at it */
	const char *op[2];       /* the operation at it; NULL = none found */
};

struct allocpeak;

/* NULL when out of memory.  Without `steps`, samples are not kept
 * (only allocpeak_op_at() is wanted). */
struct allocpeak *allocpeak_new(int steps);
void allocpeak_free(struct allocpeak *ap);

/* Each returns -1 when out of memory. */
/* A range [begin, end) on CPU thread `thread` (a track id of the
 * scope), named by string id `name_id`. */
int allocpeak_range(struct allocpeak *ap, uint32_t thread, int64_t begin,
                    int64_t end, uint32_t name_id);
/* The string id of the innermost range on `thread` enclosing ts
 * (begin <= ts < end); 0 = none. */
uint32_t allocpeak_innermost(struct allocpeak *ap, uint32_t thread, int64_t ts);
/* An allocation or free at ts of host memory (is_host) or device memory,
 * by process `proc` (the caller's index; -1 unknown) whose label is
 * `key` (0 = none; as perinst_instance.key), inside operation `op` (a
 * name, copied; NULL = none) of string id op_id in the scope (0 = none;
 * the same id, the same name). */
int allocpeak_event(struct allocpeak *ap, int is_host, int32_t proc,
                    uint32_t key, int64_t ts, uint32_t op_id, const char *op);
/* A sample of total `which` of device `where` (or of process `where`'s
 * host memory). */
int allocpeak_sample(struct allocpeak *ap, int is_host, int32_t where,
                     int which, int64_t ts, double value);
/* The operation of the first allocation event of this scope at ts (of
 * process proc for host memory); NULL = none.  Valid until
 * allocpeak_free(). */
const char *allocpeak_op_at(const struct allocpeak *ap, int is_host,
                            int32_t proc, int64_t ts);
/* End of a trace scope: the peaks of each of its n step instances
 * (those of v[i].key's samples: a sample counts for the steps of the
 * label of the process whose allocation it follows; one with no label
 * counts for all), then forget the scope (allocpeak_op_at() answers
 * for the current scope only: ask it before). */
int allocpeak_scope_end(struct allocpeak *ap, struct perinst_instance *v,
                        size_t n);
/* The peaks of every step so far: v[i].mem_first .. + mem_n index it. */
const struct allocpeak_step *allocpeak_steps(const struct allocpeak *ap,
                                             size_t *n);

#endif
