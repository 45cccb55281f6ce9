/* SPDX-License-Identifier: MIT */
/*
 * The output of trace-to-perfetto: standard output or a file, or with
 * --split a series of files (run-001.pftrace, run-002.pftrace, ...)
 * that packet.c and the main loop fill so that each stays within the
 * size and loads on its own.  Binary output is refused on a terminal.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfetto.h"
#include "common/util.h"

static _Noreturn void
fail(struct pf_out *o, int err)
{
	if (err == EPIPE)
		exit(0);  /* the reader went away, as with `| head` */
	cmd_warn("%s: write error: %s", o->cur_path ? o->cur_path : "(stdout)",
	         strerror(err));
	if (o->cur_path && o->regular)
		unlink(o->cur_path);  /* no half-written file left behind */
	exit(EXIT_USAGE);
}

char *
pf_split_path(const char *path, unsigned index)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	const char *dot = strrchr(base, '.');
	if (!dot || dot == base)
		dot = base + strlen(base);
	size_t stem = (size_t)(dot - path), n = strlen(path) + 32;
	char *p = cmd_xrealloc(NULL, n);
	snprintf(p, n, "%.*s-%03u%s", (int)stem, path, index, dot);
	return p;
}

static void
open_current(struct pf_out *o)
{
	free(o->cur_path);
	o->cur_path = NULL;
	o->bytes = 0;
	if (!o->path) {
		o->f = stdout;
		return;
	}
	o->cur_path = o->split ? pf_split_path(o->path, o->index)
	                       : cmd_xstrdup(o->path);
	o->f = fopen(o->cur_path, "wb");
	if (!o->f)
		cmd_die(EXIT_USAGE, "%s: %s", o->cur_path, strerror(errno));
	struct stat st;
	o->regular = fstat(fileno(o->f), &st) == 0 && S_ISREG(st.st_mode);
	o->files++;
}

void
pf_out_open(struct pf_out *o, const char *path, uint64_t split)
{
	memset(o, 0, sizeof(*o));
	o->path = path && strcmp(path, "-") ? path : NULL;
	o->split = split;
	o->index = 1;
	if (!o->path && isatty(STDOUT_FILENO))
		cmd_usage_error("refusing to write a binary trace to a terminal "
		                "(use -o FILE or a redirection)");
	if (!o->path && split)
		cmd_usage_error("--split needs -o FILE (the files are named after it)");
	open_current(o);
	if (!o->path)
		o->files = 1;
}

void
pf_out_write(struct pf_out *o, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, o->f) != n)
		fail(o, errno ? errno : EIO);
	o->bytes += n;
	o->total += n;
}

static void
close_current(struct pf_out *o)
{
	if (o->f == stdout) {
		if (fflush(stdout) != 0 || ferror(stdout))
			fail(o, errno ? errno : EIO);
		return;
	}
	if (fclose(o->f) != 0) {
		o->f = NULL;
		fail(o, errno ? errno : EIO);
	}
	o->f = NULL;
}

void
pf_out_next(struct pf_out *o)
{
	close_current(o);
	o->index++;
	open_current(o);
}

void
pf_out_close(struct pf_out *o)
{
	if (o->f)
		close_current(o);
	free(o->cur_path);
	o->cur_path = NULL;
}
