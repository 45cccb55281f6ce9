/* SPDX-License-Identifier: MIT */
/*
 * The output of trace-to-chrome: standard output or a file, plain or
 * gzip (zlib's gz* stream).  Events are formatted into one buffer that
 * is written in large pieces.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "chrome.h"
#include "common/util.h"

#define FLUSH_AT (1u << 20)

static void
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
		/* level 1: JSON still shrinks about tenfold, at several
		 * times the speed of the default level */
		int dfd = path ? fd : dup(fd);
		if (dfd < 0)  /* standard output closed */
			fail(o, errno);
		o->gz = gzdopen(dfd, "wb1");
		if (!o->gz)
			cmd_die(EXIT_USAGE, "%s: cannot start gzip stream",
			        path ? path : "(stdout)");
		gzbuffer(o->gz, 256u << 10);
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
		errno = 0;
		if (gzwrite(o->gz, o->b.p, (unsigned)o->b.len) != (int)o->b.len) {
			int err = errno;
			int zerr;
			gzerror(o->gz, &zerr);
			fail(o, zerr == Z_ERRNO ? err : EIO);
		}
	} else {
		errno = 0;
		if (fwrite(o->b.p, 1, o->b.len, o->f) != o->b.len)
			fail(o, errno);
	}
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
	write_out(o);
	if (o->gz) {
		errno = 0;
		int rc = gzclose(o->gz);
		o->gz = NULL;
		if (rc != Z_OK)
			fail(o, rc == Z_ERRNO ? errno : EIO);
	} else if (o->f != stdout) {
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
