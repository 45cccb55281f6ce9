/* SPDX-License-Identifier: MIT */
/*
 * Per-instance attribution for `trace-stats --per NAME`: every instance
 * of range NAME (a step, an epoch, a generated trajectory) is one unit,
 * and each child range, API call, kernel or copy is charged to the
 * instance it belongs to:
 *
 *  - host-side work (ranges, API calls) to the innermost instance on the
 *    same thread that contains its begin time; for steps, on a thread
 *    with none, its process's (perinst_process_wide()); in a process
 *    with none, its input's (perinst_input_instance());
 *  - GPU work to the instance that contains the API call that launched
 *    it (same correlation id, same process), on that call's thread.  Not
 *    to whatever instance overlaps it in time: GPU work runs later than
 *    its launch, often during the next step.
 *
 * Events arrive in any order.  A child waits until the watermark passes
 * its begin time (then every range beginning before it, and the launch
 * call of a GPU operation, which precedes it, have been seen).
 * Memory: the instances, the pending children between watermarks, and
 * one 24-byte entry per API call with a correlation id.
 *
 * Ids passed in (threads, processes) are track ids of the current trace
 * scope; perinst_scope_end() resolves everything and forgets them.
 */
#ifndef TK_CMD_PERINST_H
#define TK_CMD_PERINST_H

#include <stddef.h>
#include <stdint.h>

#include "dist.h"

struct perinst;

/* TensorBoard's overview categories of a step's time (breakdown.h). */
enum bd_cat {
	BD_KERNEL, BD_MEMCPY, BD_MEMSET, BD_RUNTIME, BD_DATALOADER, BD_CPU,
	BD_OTHER, BD_NCATS
};

/* One instance: its window, the work charged to it (as the children
 * are: GPU work by its launch call, API calls by their begin), and the
 * breakdown of its window by category. */
struct perinst_instance {
	int64_t begin, dur;
	int64_t kernel, copy;    /* kernels; memcpys and memsets */
	int64_t api;             /* API calls on its thread */
	int64_t cat[BD_NCATS];   /* ns of its window per category */
	uint32_t key;            /* its process's label, for the breakdown
	                            (breakdown.h; 0 = none) */
	uint32_t mem_first, mem_n; /* its allocator peaks, by device and host:
	                            allocpeak_steps()[mem_first ..] */
};

/* Groups standing for all GPU work of a class, charged besides each
 * operation's own group: GPU time per instance. */
#define PERINST_ALL_KERNELS 0xfffffff0u
#define PERINST_ALL_COPIES 0xfffffff1u

struct perinst_child {
	uint32_t group;          /* the caller's group index, or PERINST_ALL_* */
	struct dist count;       /* per instance, 0 where absent */
	struct dist time;        /* per instance, ns */
	uint64_t instances_with; /* instances where it occurs */
};

struct perinst_result {
	struct dist dur;         /* instance durations */
	int64_t first, last;     /* earliest begin, latest end of instances */
	struct perinst_child *children;
	size_t nchildren;
	struct perinst_instance *inst; /* by begin time */
	size_t ninst;
	uint64_t gpu_outside, gpu_no_launch; /* GPU operations not attributed */
	int64_t gpu_outside_ns, gpu_no_launch_ns;
};

/* NULL when out of memory.  The result's distributions hold their
 * exact values within `budget` (borrowed until perinst_free(); NULL =
 * no limit). */
struct perinst *perinst_new(int approx, struct dist_budget *budget);
void perinst_free(struct perinst *p);

/* Each returns -1 when out of memory. */
/* The instances are a program's steps: what happens on a thread with
 * no instance of its own is charged to its process's instances (off by
 * default: a data loader's ranges own nothing of the main thread's). */
void perinst_process_wide(struct perinst *p, int on); /* before any instance */
/* An instance on `thread` of `process`.  What happens on a thread is
 * charged to the innermost of its instances containing it; see
 * perinst_process_wide() for the other threads. */
int perinst_instance(struct perinst *p, uint32_t process, uint32_t thread,
                     int64_t begin, int64_t end);
/* The same, with its key in the breakdown (breakdown.h). */
int perinst_instance_keyed(struct perinst *p, uint32_t process, uint32_t thread,
                           uint32_t key, int64_t begin, int64_t end);
/* An instance that stands for a whole input, the processes of one key
 * (Kineto's capture range, alone on a placeholder process): what
 * happens on a thread of that key with no instance of its own, in a
 * process with none (perinst_process_wide()), is charged to the
 * innermost of these containing it. */
int perinst_input_instance(struct perinst *p, uint32_t key, int64_t begin,
                           int64_t end);
/* The key of a thread (its process's label; 0 = none is a key too), for
 * perinst_input_instance(); before the thread's events.  A thread never
 * given one belongs to no input. */
int perinst_thread_key(struct perinst *p, uint32_t thread, uint32_t key);
int perinst_launch(struct perinst *p, uint32_t process, uint64_t correlation,
                   uint32_t thread, int64_t ts);
int perinst_cpu(struct perinst *p, uint32_t group, int is_api,
                uint32_t process, uint32_t thread, int64_t ts, int64_t dur);
int perinst_gpu(struct perinst *p, uint32_t group, int is_copy,
                uint32_t process, uint64_t correlation, int64_t ts,
                int64_t dur);
/* Resolve the children that begin before w. */
int perinst_release(struct perinst *p, int64_t w);
/* The instances of the current scope (their windows, for the
 * breakdown), n of them. */
struct perinst_instance *perinst_scope_instances(struct perinst *p, size_t *n);
/* End of a trace scope: resolve all, forget the scope's ids. */
int perinst_scope_end(struct perinst *p);

/* After the last scope: per-instance distributions, children ordered by
 * group index.  The result belongs to p. */
const struct perinst_result *perinst_finish(struct perinst *p);

#endif
