/* SPDX-License-Identifier: MIT */
/*
 * Which ranges are the steps of a training or inference loop, for
 * trace-stats --per and --steps.
 *
 * --per NAME takes a range as an instance when its name, normalized as
 * trace-diff --normalize does (normalize.h), equals NAME normalized, or
 * is NAME followed by a numeric suffix: "ProfilerStep" and
 * "ProfilerStep#1009" both select ProfilerStep#1009, #1010, ...
 *
 * --steps finds the series itself, in a first pass over the input, by
 * these kinds, the first one present winning:
 *  1. PyTorch's ProfilerStep#N;
 *  2. ranges named step or iteration (any case; "iter", "train_step"
 *     and "training_step" too), with or without a numeric suffix;
 *  3. the profiler's capture range (Kineto's "PyTorch Profiler (0)",
 *     domain "Trace"), the whole active part of the schedule.
 */
#ifndef TK_CMD_STEPS_H
#define TK_CMD_STEPS_H

/* A --per matcher. */
struct step_match {
	char *name;              /* as given, or the series found */
	char *norm;              /* name normalized */
};

/* 0, or -1 when out of memory. */
int step_match_init(struct step_match *m, const char *name);
void step_match_free(struct step_match *m);
/* Is a range of this name an instance?  -1 when out of memory. */
int step_match(const struct step_match *m, const char *name);

/* Is a range of this domain the profiler's capture range (kind 3)? */
int step_is_capture(const char *domain);
/* The kind (1 to 3 above) of a range as a step candidate, 0 for none;
 * -1 when out of memory. */
int step_kind(const char *domain, const char *name);

/* --steps: the name of the first range of the best kind in the trace
 * read from fd (malloc'd), or NULL when there is none.  Read errors are
 * left to the main pass, which meets them too. */
char *steps_find(int fd, const char *path);

#endif
