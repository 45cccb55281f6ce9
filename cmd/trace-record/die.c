/* SPDX-License-Identifier: MIT */
/*
 * trace-record's own failure, for every part: one line on stderr and
 * exit 125, the status that tells it from the command's own.  The spool
 * directory goes with it, and the command if it runs (main's atexit
 * handler kills and waits for it).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "record.h"

void
rec_die(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	cmd_warn("%s", buf);
	exit(REC_EXIT_FAIL);
}

/* realloc or die as above: 125, where cmd_xrealloc's usage status (2)
 * would pass for the command's own. */
void *
rec_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		rec_die("out of memory");
	return q;
}
