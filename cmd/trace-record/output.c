/* SPDX-License-Identifier: MIT */
/*
 * The output: every spool and trace-record's own events (processes,
 * counters, runs, drops, metadata) merged in begin order, written as the
 * inputs allow, so that `trace-record -- cmd | trace-stats` streams and
 * a killed trace-record leaves a readable prefix.
 *
 * Our own events are written like any process's: into a writer whose
 * stream (in a memfd) is fed to the merge as one more input.  Lifetimes
 * are written when they end, with their start as the begin, so the
 * output's watermarks are held at the earliest start still to come
 * (tk_merge_hold): events are not delayed, and no promise is broken.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "record.h"

#define SELF_NAME "(trace-record)"

static struct tk_writer *out, *self;
static int self_fd = -1;
static uint64_t self_off, self_punched;
static struct tk_reader *self_reader;
static struct tk_merge *merge;
static int gone;                  /* the reader of our output went away */
static int failed;
static char *out_path;
static const char *spool_dir;
/* --max-size: where the trace goes at the end (the merge writes into
 * the bound's file meanwhile) */
static int final_fd = -1;
static struct tk_writer *lives;
static int lives_fd = -1;

struct tk_writer *
rec_lifetimes(void)
{
	return lives ? lives : self;
}

struct tk_writer *
rec_self(void)
{
	return self;
}

int
rec_out_gone(void)
{
	return gone || failed;
}

/* A write failed: EPIPE ends the output quietly, anything else is said
 * once; the command runs on either way. */
static void
out_error(void)
{
	if (gone || failed)
		return;
	if (tk_writer_errno(out) == EPIPE) {
		gone = 1;
		return;
	}
	failed = 1;
	if (tk_writer_errno(out))
		cmd_warn("%s: write error: %s", out_path ? out_path : "(stdout)",
		         strerror(tk_writer_errno(out)));
	else
		cmd_warn("%s", tk_merge_error(merge));
}

/* What the merge says about an input.  Our own lifetimes come late by
 * design (rec_out_step): the output's watermarks are held for them, so
 * no promise of the output is broken, and there is nothing to say. */
static void
merge_warn(void *arg, const char *input, const char *message)
{
	if (strcmp(input, SELF_NAME) == 0 && strstr(message, "out of time order"))
		return;
	rec_spool_warn(arg, input, message);
}

/* The output cannot be opened: say why and stop, the writer freed (its
 * compressor would show as lost memory under valgrind). */
static void __attribute__((noreturn))
open_failed(const char *name)
{
	char why[256];
	snprintf(why, sizeof(why), "%s", tk_writer_error(out));
	tk_writer_free(out);
	out = NULL;
	rec_die("%s: %s", name, why);
}

/* --max-size: the output is opened now, so that a path that cannot be
 * written fails before the command runs; the merge writes into the
 * bound's file. */
static void
open_bounded(const struct rec_options *o, const char *spool)
{
	const char *path = o->output;
	if (!path || strcmp(path, "-") == 0) {
		if (isatty(STDOUT_FILENO))
			rec_die("refusing to write a binary trace to a terminal; "
			        "use -o FILE or a pipe");
		final_fd = STDOUT_FILENO;
	} else {
		final_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
		if (final_fd < 0)
			rec_die("%s: %s", path, strerror(errno));
	}
	out_path = strdup(path && strcmp(path, "-") ? path : "(stdout)");
	if (!out_path)
		rec_die("out of memory"); /* not the writer's "no error" */
	struct tk_writer_options wo = TK_WRITER_OPTIONS_INIT;
	int fd = rec_bound_open(o, spool);
	wo.chunk_bytes = rec_bound_chunk_bytes();
	if (tk_writer_open_fd(out, fd, out_path, &wo) != TK_OK)
		open_failed(out_path);
	struct tk_writer_options lo = TK_WRITER_OPTIONS_INIT;
	lo.level = 0;
	lives_fd = memfd_create("tracekit-lives", MFD_CLOEXEC);
	if (lives_fd < 0)
		rec_die("memfd_create: %s", strerror(errno));
	if (!(lives = tk_writer_new()) ||
	    tk_writer_open_fd(lives, lives_fd, "(lifetimes)", &lo) != TK_OK)
		rec_die("out of memory");
}

void
rec_out_open(const struct rec_options *o, const char *spool)
{
	const char *path = o->output;
	struct tk_writer_options wo = TK_WRITER_OPTIONS_INIT;
	out = tk_writer_new();
	self = tk_writer_new();
	self_reader = tk_reader_new();
	spool_dir = spool;
	if (!out || !self || !self_reader)
		rec_die("out of memory");
	if (o->max_size) {
		open_bounded(o, spool);
	} else if (!path) {
		if (isatty(STDOUT_FILENO))
			rec_die("refusing to write a binary trace to a terminal; "
			        "use -o FILE or a pipe");
		if (tk_writer_open_fd(out, STDOUT_FILENO, "(stdout)", &wo) != TK_OK)
			open_failed("(stdout)");
	} else {
		/* without it a write error would name "(stdout)" */
		if (!(out_path = strdup(path)))
			rec_die("out of memory");
		if (tk_writer_open_path(out, path, &wo) != TK_OK)
			open_failed(path);
	}
	/* read back at once: no compression */
	struct tk_writer_options so = TK_WRITER_OPTIONS_INIT;
	so.level = 0;
	self_fd = memfd_create("tracekit-self", MFD_CLOEXEC);
	if (self_fd < 0)
		rec_die("memfd_create: %s", strerror(errno));
	/* the header is written now: a memfd can be full (its memory) */
	if (tk_writer_open_fd(self, self_fd, SELF_NAME, &so) != TK_OK)
		rec_die("memfd: %s", tk_writer_error(self));
	if (tk_reader_open_feed(self_reader, SELF_NAME) != TK_OK)
		rec_die("out of memory");
	struct tk_merge_options mo = { 0 };
	mo.tmpdir = spool;
	mo.keep_going = 1;
	mo.warn = merge_warn;
	if (!(merge = tk_merge_new(out, &mo)) ||
	    tk_merge_add(merge, self_reader, NULL, 0) < 0)
		rec_die("out of memory");
}

int
rec_out_add_input(struct tk_reader *r)
{
	return tk_merge_add(merge, r, NULL, 0);
}

/* Feed what our own writer wrote since the last time. */
static void
feed_self(void)
{
	static uint8_t buf[256 * 1024];
	for (;;) {
		ssize_t k = pread(self_fd, buf, sizeof(buf), (off_t)self_off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		if (tk_reader_feed(self_reader, buf, (size_t)k) != TK_OK)
			rec_die("out of memory");
		self_off += (uint64_t)k;
	}
	uint64_t upto = self_off & ~(uint64_t)4095;
	if (upto - self_punched >= (1u << 20)) {
		fallocate(self_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		          (off_t)self_punched, (off_t)(upto - self_punched));
		self_punched = upto;
	}
}

void
rec_out_step(int64_t w, int64_t hold)
{
	tk_writer_watermark(self, w);
	if (tk_writer_flush(self) != TK_OK)
		rec_die("%s", tk_writer_error(self));
	feed_self();
	if (gone || failed)
		return;
	tk_merge_hold(merge, hold);
	if (tk_merge_step(merge) != TK_OK)
		out_error();
	rec_bound_take();
}

void
rec_out_flush(void)
{
	if (!gone && !failed && tk_writer_flush(out) != TK_OK)
		out_error();
	rec_bound_take();
}

int
rec_out_finish(uint32_t (*track)(void *), void *arg)
{
	if (tk_writer_close(self) != TK_OK)
		rec_die("%s", tk_writer_error(self));
	feed_self();
	tk_reader_feed_end(self_reader);
	if (!gone && !failed) {
		tk_merge_hold(merge, INT64_MAX);
		if (tk_merge_run(merge) != TK_OK || tk_writer_close(out) != TK_OK)
			out_error();
	}
	if (final_fd >= 0 && !gone && !failed) {
		int epipe;
		if (rec_bound_finish(final_fd, out_path, spool_dir, lives,
		                     lives_fd, track, arg, &epipe) < 0) {
			gone = epipe;
			failed = !epipe;
		}
	}
	if (final_fd > STDOUT_FILENO && close(final_fd) < 0 && !failed) {
		cmd_warn("%s: write error: %s", out_path, strerror(errno));
		failed = 1;
	}
	final_fd = -1;
	rec_bound_free();
	tk_writer_free(lives);
	if (lives_fd >= 0)
		close(lives_fd);
	lives = NULL;
	lives_fd = -1;
	tk_merge_free(merge);
	tk_writer_free(self);
	tk_writer_free(out);
	close(self_fd);
	free(out_path);
	merge = NULL;
	self = out = NULL;
	return failed ? -1 : 0;
}
