/* SPDX-License-Identifier: MIT */
/*
 * The output of trace-to-chrome: standard output or a file, plain or
 * gzip (gz.c: compressed in blocks on several threads).  Events are
 * formatted into one buffer that is written in large pieces.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chrome.h"
#include "common/util.h"

#define FLUSH_AT (1u << 20)

static _Noreturn void
fail(struct chrome_out *o, int err)
{
	if (err == EPIPE)
		exit(0);  /* the reader went away, as with `| head` */
	cmd_warn("%s: write error: %s", o->path ? o->path : "(stdout)",
	         strerror(err ? err : EIO));
	if (o->regular)
		unlink(o->path);  /* no half-written file left behind */
	exit(EXIT_USAGE);
}

static _Noreturn void
gz_fail(void *ctx, int err)
{
	fail(ctx, err);
}

void
chrome_out_open(struct chrome_out *o, const char *path, int gzip)
{
	memset(o, 0, sizeof(*o));
	o->path = path;
	int fd = STDOUT_FILENO;
	if (path) {
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
		if (fd < 0)
			cmd_die(EXIT_USAGE, "%s: %s", path, strerror(errno));
		/* only a regular file is removed after a failure: never a
		 * device such as /dev/full, nor a named pipe */
		struct stat st;
		o->regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	}
	if (gzip) {
		o->fd = fd;
		o->gz = chrome_gz_open(fd, gz_fail, o);
	} else {
		o->f = path ? fdopen(fd, "w") : stdout;
		if (!o->f)
			cmd_die(EXIT_USAGE, "%s: %s", path, strerror(errno));
	}
	sb_grow(&o->b, FLUSH_AT + 4096);
}

static void
write_out(struct chrome_out *o)
{
	if (!o->b.len)
		return;
	o->bytes += o->b.len;
	if (o->gz) {
		/* takes the buffer and gives back another */
		chrome_gz_write(o->gz, &o->b);
		sb_grow(&o->b, FLUSH_AT + 4096);
		return;
	}
	errno = 0;
	if (fwrite(o->b.p, 1, o->b.len, o->f) != o->b.len)
		fail(o, errno);
	o->b.len = 0;
}

void
chrome_out_maybe_flush(struct chrome_out *o)
{
	if (o->b.len >= FLUSH_AT)
		write_out(o);
}

void
chrome_out_close(struct chrome_out *o)
{
	if (o->gz) {
		o->bytes += o->b.len;
		chrome_gz_close(o->gz, &o->b);
		o->gz = NULL;
		/* standard output is left open, as fclose() of stdout is
		 * not done either */
		if (o->path && close(o->fd) != 0)
			fail(o, errno);
	} else if (write_out(o), o->f != stdout) {
		errno = 0;
		if (fclose(o->f) != 0)
			fail(o, errno);
	} else {
		errno = 0;
		if (fflush(stdout) != 0 || ferror(stdout))
			fail(o, errno);
	}
	o->f = NULL;
	sb_free(&o->b);
}
