/* SPDX-License-Identifier: MIT */
/*
 * Progress of long work on standard error, for people: only when
 * standard error is a terminal, only once the work has taken a second
 * (TK_PROGRESS_AFTER, in seconds, changes it), redrawn at most four
 * times a second on one line that is erased at the end, so that what
 * the command prints after it, and anything redirected, stays clean.
 *
 *   struct cmd_progress p;
 *   cmd_progress_start(&p, "run.json", size);   (size 0: unknown)
 *   ... cmd_progress(&p, bytes_done); ...
 *   cmd_progress_end(&p);
 *
 * One struct per piece of work, touched by one thread.
 */
#ifndef TK_CMD_PROGRESS_H
#define TK_CMD_PROGRESS_H

#include <stdint.h>

struct cmd_progress {
	int on;                  /* standard error is a terminal */
	int shown;               /* a line is on the screen */
	const char *what;        /* borrowed */
	uint64_t total;          /* bytes expected; 0 = unknown */
	int64_t start, next;     /* monotonic ns: begin, next redraw */
};

void cmd_progress_start(struct cmd_progress *p, const char *what, uint64_t total);
void cmd_progress(struct cmd_progress *p, uint64_t done);
void cmd_progress_end(struct cmd_progress *p);

#endif
