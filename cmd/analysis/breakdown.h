/* SPDX-License-Identifier: MIT */
/*
 * The time of each step (an instance of --per/--steps) by category, as
 * TensorBoard's profiler overview splits it: every nanosecond of the
 * step's window goes to the first of kernel, memcpy, memset, runtime
 * (API calls), data loading, CPU execution that has work then, else to
 * other.  The caller says which events are of which category; this
 * keeps their intervals for the current trace scope (16 bytes each),
 * and at the scope's end splits the windows of that scope's instances.
 */
#ifndef TK_CMD_BREAKDOWN_H
#define TK_CMD_BREAKDOWN_H

#include <stddef.h>
#include <stdint.h>

#include "perinst.h"

struct breakdown;

/* NULL when out of memory. */
struct breakdown *breakdown_new(void);
void breakdown_free(struct breakdown *b);
/* Work of category c (not BD_OTHER) in [begin, end); -1 when out of
 * memory.  With a key (the label of the process that did the work:
 * trace-merge -l gives each rank its own; 0 = none), it counts only in
 * the windows of instances of the same key, so that a rank's step is
 * split by that rank's work, not by its neighbours' in a merged trace
 * (TensorBoard splits each worker's trace alone); key 0 counts in every
 * window.  breakdown_add() is key 0. */
int breakdown_add(struct breakdown *b, enum bd_cat c, int64_t begin,
                  int64_t end);
int breakdown_add_keyed(struct breakdown *b, enum bd_cat c, uint32_t key,
                        int64_t begin, int64_t end);
/* Fill v[i].cat (by v[i].key) of the scope's n instances, then forget the
 * intervals; -1 when out of memory. */
int breakdown_scope_end(struct breakdown *b, struct perinst_instance *v,
                        size_t n);

#endif
