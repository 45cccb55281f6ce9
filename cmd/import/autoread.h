/* SPDX-License-Identifier: MIT */
/*
 * What every reading command opens: a tracekit trace, or a trace of
 * another tool (Chrome/PyTorch profiler JSON, plain or gzip; an Nsight
 * Systems SQLite export) imported on the way in.  Told apart by content,
 * never by name.  Never installed.
 */
#ifndef TK_CMD_AUTOREAD_H
#define TK_CMD_AUTOREAD_H

#include "tracekit.h"

struct autoread {
	int fd;                  /* the tracekit bytes, from the start */
	int own_fd;              /* closed by autoread_close() */
	int imported;            /* fd is an import, in a temporary file */
	int partial;             /* the import could not read everything
	                            (said on stderr); what it could is there */
};

/* Open `path` ("-" = standard input).  A .tkt is left as it is (a
 * stream too: nothing of it is consumed to look at it); another trace is
 * imported into an unlinked temporary file in `tmpdir` (NULL: $TMPDIR or
 * /tmp), which is then a regular file.  Anything else gets one line,
 * "cmd: path: what it looks like and what to do".  Returns 0; 1 after
 * reporting an input that cannot be read; 2 after reporting a system
 * error (a temporary file). */
int autoread_open(struct autoread *a, const char *path, const char *tmpdir);
/* A reader on what autoread_open() opened; NULL after reporting. */
struct tk_reader *autoread_reader(struct autoread *a, const char *path);
/* The same with cmd_new_reader()'s flags (CMD_READ_NO_ARGS). */
struct tk_reader *autoread_reader_flags(struct autoread *a, const char *path,
                                        unsigned flags);
void autoread_close(struct autoread *a);

/* autoread_open() then autoread_reader(), as cmd_open_reader() was:
 * NULL after reporting, with the exit status in *status.  *status is 1
 * also when a reader is returned on an import that was partial. */
struct tk_reader *autoread_open_reader(struct autoread *a, const char *path,
                                       int *status);
struct tk_reader *autoread_open_reader_flags(struct autoread *a, const char *path,
                                             unsigned flags, int *status);

#endif
