/* SPDX-License-Identifier: MIT */
/*
 * The operator view of trace-stats --operators, as TensorBoard's
 * operator view and PyTorch's key_averages() give it: for every range
 * on a CPU thread (CPU operators, annotations, NVTX ranges; the caller
 * leaves out Kineto's capture range), grouped by the caller's group,
 *
 *  - self time: its duration less the durations of the ranges directly
 *    inside it on the same thread (ranges nest by time; of two with the
 *    same begin and end, the one whose name sorts first encloses);
 *  - GPU self time: the GPU work (kernels, copies, memsets) launched by
 *    an API call whose innermost enclosing range is this one (same
 *    correlation id, same process), and GPU total time: launched from
 *    inside it, its descendants included.
 *
 * Each trace scope is resolved at its end: the view keeps 32 bytes per
 * range and 24 per API call and GPU operation of a scope until then.
 */
#ifndef TK_CMD_OPVIEW_H
#define TK_CMD_OPVIEW_H

#include <stddef.h>
#include <stdint.h>

struct opview;

struct opview_row {
	uint32_t group;          /* the caller's group index */
	uint64_t count;
	int64_t total, self;     /* ns */
	int64_t gpu_self, gpu_total;
};

/* NULL when out of memory.  Each call below returns -1 when out of
 * memory.  `name` is borrowed until opview_free(). */
struct opview *opview_new(void);
void opview_free(struct opview *v);
int opview_range(struct opview *v, uint32_t group, const char *name,
                 uint32_t thread, int64_t ts, int64_t dur);
int opview_launch(struct opview *v, uint32_t process, uint64_t correlation,
                  uint32_t thread, int64_t ts);
int opview_gpu(struct opview *v, uint32_t process, uint64_t correlation,
               int64_t dur);
int opview_scope_end(struct opview *v);
/* The rows, one per group seen, by group index. */
const struct opview_row *opview_rows(const struct opview *v, size_t *n);

#endif
