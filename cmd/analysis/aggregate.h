/* SPDX-License-Identifier: MIT */
/*
 * Aggregation of traces into the figures trace-stats prints and
 * trace-diff compares: operations grouped by kind and name with their
 * duration distributions, GPU busy time per device, processes, memory
 * peaks, what the recorder dropped, and optionally a per-instance view
 * of one range (perinst.h).
 *
 *   struct agg_options o = AGG_OPTIONS_INIT;
 *   struct agg *a = agg_new(&o);
 *   status |= agg_read(a, "run.tkt");      (any number of inputs)
 *   agg_finish(a);
 *   for (size_t i = 0; i < agg_ngroups(a); i++) ... agg_group(a, i)
 *   agg_free(a);
 *
 * Input is streamed: the trace is never held (--run and by_run read
 * it twice: a first pass finds the runs; stdin is spooled to a file).  Exact mode keeps every
 * duration (8 bytes per operation), within options.exact_budget;
 * approximate mode keeps a sketch per group instead (quantiles within
 * 1 %, constant memory).  An aggregation shares nothing with another:
 * two can be filled in two threads.
 */
#ifndef TK_CMD_AGGREGATE_H
#define TK_CMD_AGGREGATE_H

#include "tracekit.h"
#include <regex.h>
#include <stddef.h>
#include <stdint.h>

#include "allocpeak.h"
#include "dist.h"
#include "opview.h"
#include "perinst.h"
#include "timeline.h"
#include "ranks.h"

/* Tables of operations, in the order trace-stats prints them. */
enum agg_table {
	AGG_KERNELS,   /* TK_KERNEL, by name */
	AGG_MEMOPS,    /* TK_MEMCPY by copy and memory kinds, TK_MEMSET by memory kind */
	AGG_API,       /* TK_API, by name */
	AGG_RANGES,    /* TK_RANGE and TK_ASYNC_RANGE, by domain and name */
	AGG_NTABLES
};

struct agg_group {
	enum agg_table table;
	unsigned kind;           /* TK_KERNEL, TK_MEMCPY, TK_MEMSET, TK_API,
	                            TK_RANGE or TK_ASYNC_RANGE */
	char *name;              /* kernel, API call or range name; for
	                            copies "Memcpy HtoD (Pinned -> Device)" */
	char *domain;            /* ranges: NVTX domain or importer category */
	unsigned copy_kind;      /* memcpy: enum tk_copy_kind */
	unsigned src_kind, dst_kind; /* memcpy: enum tk_mem_kind; memset: dst */
	struct dist dur;         /* durations, ns */
	uint64_t bytes;          /* memops: bytes moved or set */
	double rate_sum;         /* memops: sum of bytes/ns over ops with dur > 0 */
	uint64_t rate_n;
	int64_t first_ts, first_dur; /* the earliest instance */
	int64_t *run_total;      /* options.by_run: time in run i + 1 */
	uint64_t *run_count;     /* ... and instances in run i + 1 */
	uint32_t nrun_total;     /* of each */
	struct summary s;        /* filled by agg_finish() */
};

/* The PyTorch allocator's own totals, Kineto's "Total Allocated" and
 * "Total Reserved" counters (profile_memory=True): the highest sample of
 * each and when it was taken. */
enum { AGG_ALLOCATED, AGG_RESERVED };
struct agg_allocator {
	int has[2];
	double peak[2];          /* bytes, by AGG_ALLOCATED, AGG_RESERVED */
	int64_t peak_ts[2];      /* the first sample at the peak */
	const char *op[2];       /* the operation at the peak (allocpeak.h):
	                            the innermost range enclosing the
	                            allocation that reached it; NULL = none */
	int op_pending[2];       /* (the peak moved in the current scope: its
	                            operation is looked up at the scope's end) */
};

struct agg_device {
	char *host, *name;
	int64_t index;           /* CUDA ordinal; -1 = GPU work on no known device */
	uint32_t sm_count;
	uint64_t memory;         /* bytes of global memory */
	uint64_t ops;            /* kernels, copies and memsets */
	/* busy: length of the union of its work; kernel and copy: of each */
	int64_t busy, kernel, copy;
	int64_t first, last;     /* first begin, last end of its work */
	int overlap;             /* several traces hold it and overlap in time:
	                            their busy times were added, so busy may
	                            count concurrent work twice */
	/* device memory: the "device memory" counter and TK_MEMORY events */
	int has_counter;
	double counter_max;
	uint64_t allocs, frees, alloc_bytes;
	int64_t in_use;          /* bytes allocated and not freed at the end
	                            of each trace, added up (negative when the
	                            window holds frees of earlier allocations) */
	int64_t peak;            /* highest allocated-and-not-freed, counting
	                            from 0 at the start of each trace */
	/* options.timeline: busy time (its bins add up to busy) and memory
	 * in use (allocations, else the "device memory" counter) over
	 * time; NULL otherwise */
	struct timeline *busy_tl, *mem_tl;
	struct agg_allocator allocator;
	/* options.distributed: the rank (ranks.h's name) whose GPU work
	 * came first on it, so that a view by device can point at a rank
	 * the distributed view names; NULL without GPU work or ranks */
	const char *rank;
};

struct agg_process {
	char *host, *name, *command, *label;
	int64_t pid, ppid, start;
	int has_rusage;          /* a TK_PROCESS event was seen */
	unsigned rusage_input;   /* options.by_input: the input whose
	                            TK_PROCESS event was the last seen */
	int64_t wall, utime, stime; /* with by_input, added up over the
	                            inputs: a pid ending in several files is
	                            as many processes (one per run) */
	uint64_t max_rss;        /* bytes, from rusage (the highest) */
	unsigned exit;           /* enum tk_exit */
	int32_t exit_code;
	uint32_t signal;
	int has_rss;             /* an "rss" counter was seen */
	double rss_max;
	struct agg_allocator allocator;  /* host memory (Kineto's CPU totals) */
	uint64_t events;
};

struct agg_meta {
	char *key, *value;       /* distinct pairs, in order of appearance */
};

struct agg_drop {
	char *reason;
	uint64_t count;
};

/* What was read and what the filters kept. */
struct agg_run {
	uint64_t events_read;    /* every event of every input */
	uint64_t events;         /* those the filters kept */
	uint64_t kind[16];       /* kept, by kind (index = enum tk_kind) */
	int64_t t_min, t_max;    /* earliest begin, latest end of kept events */
	uint64_t skipped;        /* events of kinds this reader does not know */
	uint64_t dropped;        /* events the recorders dropped */
	struct agg_drop *drops;
	size_t ndrops;
	struct agg_meta *meta;
	size_t nmeta;
	unsigned inputs, scopes;
	uint32_t runs_seen;      /* highest TK_RUN index kept */
	int64_t *run_wall;       /* duration of run i + 1 (added up over
	                            inputs), from its TK_RUN event */
	int run_missing;         /* --run N: some scope had no run N */
	struct dist_budget exact; /* the exact values of every distribution
	                            (groups, per-instance) against
	                            options.exact_budget; exact.converted:
	                            how many outgrew it and keep a sketch */
};

struct agg_options {
	int approx;              /* sketches instead of every value */
	const char *per;         /* range name for the per-instance view */
	const regex_t *name;     /* keep operations whose name matches */
	const regex_t *exclude;  /* drop operations whose name matches */
	const int64_t *pids;     /* keep events of these processes */
	size_t npids;
	const int64_t *devices;  /* keep GPU work on these device ordinals */
	size_t ndevices;
	const int64_t *streams;  /* keep GPU work on these CUDA streams */
	size_t nstreams;
	int64_t from, to;        /* keep events beginning in [from, to), ns
	                            after the start of each trace (or run) */
	uint32_t run;            /* keep the events of TK_RUN number run; 0 = all */
	int by_run;              /* split each group's total by run (for
	                            comparing --repeat recordings run by run) */
	int by_input;            /* each input (agg_read()) is one run, as
	                            by_run splits them: several recordings of
	                            one program, each in its own file; the
	                            inputs' TK_RUN events are then not runs,
	                            and the wall is the sum of the inputs'
	                            walls (they ran at different times) */
	unsigned skip;           /* work not wanted: AGG_SKIP_* (events are
	                            still read and counted by kind) */
	size_t exact_budget;     /* bytes of exact values at most (-S), in all
	                            the distributions together; past it, those
	                            that grow keep a sketch; 0 = no limit */
	int steps;               /* find the steps (steps.h) for the
	                            per-instance view, when per is NULL */
	int operators;           /* the operator view (opview.h) */
	int timeline;            /* agg_device.busy_tl and mem_tl */
	int distributed;         /* the distributed view (ranks.h) */
};
#define AGG_OPTIONS_INIT { 0, NULL, NULL, NULL, NULL, 0, NULL, 0, NULL, 0, \
                           0, INT64_MAX, 0, 0, 0, 0, 0, 0, 0, 0 }
#define AGG_SKIP_TABLE(t) (1u << (t))  /* no groups for this table */
#define AGG_SKIP_GPU (1u << 8)         /* no busy time */
#define AGG_SKIP_MEMORY (1u << 9)      /* no allocation peaks */
#define AGG_SKIP_ALLOC_OPS (1u << 10)  /* the allocator's peaks, but not per
                                          step nor the operation at each
                                          (no range tracking for them) */

struct agg;

/* NULL when out of memory.  `o` is copied; what it points to is borrowed
 * until agg_free(). */
struct agg *agg_new(const struct agg_options *o);
void agg_free(struct agg *a);

/* Read one input ("-" = stdin) to its end.  Returns 0, or 1 after
 * reporting an unreadable input with cmd_reader_error() (what could be
 * read still counts).  Dies (exit 2) only when out of memory. */
int agg_read(struct agg *a, const char *path);

/* Compute the summaries; call once, after the last agg_read(). */
void agg_finish(struct agg *a);

/* Results, valid until agg_free(). */
size_t agg_ngroups(const struct agg *a);
struct agg_group *agg_group(struct agg *a, size_t i);
/* The group of kind and name (and domain, for ranges; NULL = ""), or NULL.
 * Memops are found by their name. */
struct agg_group *agg_find(struct agg *a, unsigned kind, const char *domain,
                           const char *name);
size_t agg_ndevices(const struct agg *a);
const struct agg_device *agg_device(const struct agg *a, size_t i);
size_t agg_nprocesses(const struct agg *a);
/* A process definition that stands for no process: the PyTorch
 * profiler's "Spans", "Traces" and "" pids.  Not counted as a process. */
int agg_placeholder_process(const struct tk_process *p);
const struct agg_process *agg_process(const struct agg *a, size_t i);
const struct agg_run *agg_run(const struct agg *a);
/* The per-instance view (options.per or .steps), or NULL. */
const struct perinst_result *agg_per(const struct agg *a);
/* The allocator's peaks of the steps (-r memory with --steps or --per):
 * agg_per()'s inst[i].mem_first .. + mem_n index them (is_host, where:
 * agg_process() or agg_device() index); NULL, *n = 0 without. */
const struct allocpeak_step *agg_step_memory(const struct agg *a, size_t *n);
/* The range the view is of: options.per, the series --steps found
 * (normalized: "ProfilerStep#N"), or NULL when it found none. */
const char *agg_per_name(const struct agg *a);
/* Are the instances Kineto's capture range, each one over every process
 * of its input (--steps in a trace with no ProfilerStep#N, or --per
 * naming it)? */
int agg_per_whole_input(const struct agg *a);
/* The operator view (options.operators): rows by group index, n of
 * them; NULL without the option. */
const struct opview_row *agg_operators(const struct agg *a, size_t *n);
/* The distributed view (options.distributed), or NULL. */
const struct ranks *agg_ranks(const struct agg *a);
/* Wall time of the kept events: t_max - t_min, 0 when none; with
 * options.by_input, the sum of each input's. */
int64_t agg_wall(const struct agg *a);

/* Which table an event kind goes to; -1 for none. */
int agg_table_of(unsigned kind);

/* The coarsest clock tick, in ns, that divides every duration kept: 1000
 * for imports in whole microseconds, 1 for nanosecond recordings (and
 * for approximate distributions, whose values are not kept). */
int64_t agg_resolution(struct agg *a);

/*
 * An aggregation restored from a summary of one (trace-stats
 * --baseline; cmd/trace-diff/baseline.c reads it): each call creates
 * one item, empty, and returns it for the caller to fill in; the
 * groups' distributions stay empty, their `s` is the caller's, and
 * agg_finish() leaves it.  Memory the caller gives a group's run_total,
 * run_count
 * or the run's run_wall (cmd_xrealloc) is freed by agg_free().  A group
 * whose name --name or --exclude drops, or of a kind with no table,
 * is not created: NULL.
 */
struct agg_group *agg_restore_group(struct agg *a, unsigned kind, const char *domain,
                                    const char *name, unsigned copy_kind,
                                    unsigned src, unsigned dst);
struct agg_device *agg_restore_device(struct agg *a, const char *host, int64_t index,
                                      const char *name);
struct agg_process *agg_restore_process(struct agg *a, const char *host, int64_t pid,
                                        const char *name, const char *command,
                                        const char *label);
struct agg_run *agg_restore_run(struct agg *a);
void agg_restore_meta(struct agg *a, const char *key, const char *value);
/* What agg_resolution() then returns. */
void agg_restore_resolution(struct agg *a, int64_t tick);

#endif
