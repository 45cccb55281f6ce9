/* SPDX-License-Identifier: MIT */
/*
 * The input bytes of trace-import.  What a file holds is told by its
 * first bytes, never by its name: gzip is inflated (every member, as
 * gzip -d does), JSON text passes through, and other things we know
 * (a .tkt trace, xz, zstd, bzip2) are refused with a message that says
 * what they are.  A SQLite database (its 16-byte header "SQLite format
 * 3\0") is marked for nsys.c; an Nsight Systems report (.nsys-rep) is
 * refused with the command that exports it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "import.h"

#define RAW_SIZE (256u * 1024u)

static int
fail(struct imp_input *in, const char *msg)
{
	snprintf(in->errmsg, sizeof(in->errmsg), "%s", msg);
	return -1;
}

/* Read more raw bytes after what is buffered. */
static int
fill_raw(struct imp_input *in)
{
	if (in->raw_eof)
		return 0;
	if (in->fd < 0) {          /* memory input: everything is there */
		in->raw_eof = 1;
		return 0;
	}
	if (in->raw_pos == in->raw_len)
		in->raw_pos = in->raw_len = 0;
	if (in->raw_len == in->raw_cap) {
		memmove(in->raw, in->raw + in->raw_pos, in->raw_len - in->raw_pos);
		in->raw_len -= in->raw_pos;
		in->raw_pos = 0;
	}
	for (;;) {
		ssize_t n = read(in->fd, in->raw + in->raw_len, in->raw_cap - in->raw_len);
		if (n > 0) {
			in->raw_len += (size_t)n;
			in->raw_total += (uint64_t)n;
			if (in->progress)
				cmd_progress(in->progress, in->raw_total);
			return 1;
		}
		if (n == 0) {
			/* the line goes before what is said at the end (-v) */
			if (in->progress)
				cmd_progress_end(in->progress);
			in->raw_eof = 1;
			return 0;
		}
		if (errno != EINTR)
			return fail(in, strerror(errno));
	}
}

static const struct {
	const char *magic;
	size_t len;
	const char *what;
} refused[] = {
	{ "\x89TKT\r\n\x1a\n", 8, "already a tracekit trace" },
	{ "\xfd" "7zXZ", 5, "xz-compressed: decompress it first (xz -dc FILE | trace-import -)" },
	{ "\x28\xb5\x2f\xfd", 4, "zstd-compressed: decompress it first (zstd -dc FILE | trace-import -)" },
	{ "BZh", 3, "bzip2-compressed: decompress it first (bzip2 -dc FILE | trace-import -)" },
	{ "PK\x03\x04", 4, "a zip archive: extract the JSON first" },
};

/* Not JSON (which starts with white space, '{' or '[') and, in its
 * first 4 KiB, a name Nsight Systems writes into its reports ("QuadD"
 * is its internal name, as in .qdrep and .qdstrm).  Random bytes do not
 * hold them, so other non-JSON input keeps its message. */
static int
nsys_report(const unsigned char *p, size_t n)
{
	static const char *const marks[] = { "QuadD", "Nsight Systems", "nsys-rep" };
	if (!n || (p[0] && strchr("{[ \t\r\n", p[0])))
		return 0;
	if (n > 4096)
		n = 4096;
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
		if (memmem(p, n, marks[i], strlen(marks[i])))
			return 1;
	return 0;
}

static int
detect(struct imp_input *in)
{
	/* enough bytes to tell: a short read is not the end of a pipe */
	while (in->raw_len - in->raw_pos < 16 && !in->raw_eof)
		if (fill_raw(in) < 0)
			return -1;
	const unsigned char *p = in->raw + in->raw_pos;
	size_t n = in->raw_len - in->raw_pos;
	if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b) {
		/* 15 + 16: a gzip wrapper only */
		if (inflateInit2(&in->zs, 15 + 16) != Z_OK)
			return fail(in, "out of memory");
		in->zs_live = 1;
		in->gz = 1;
		return 0;
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (n >= refused[i].len && memcmp(p, refused[i].magic, refused[i].len) == 0)
			return fail(in, refused[i].what);
	if (n >= 16 && memcmp(p, "SQLite format 3", 16) == 0) {
		in->sqlite = 1;
		return 0;
	}
	if (nsys_report(p, n))
		return fail(in, "an Nsight Systems report: export it first "
		            "(nsys export --type sqlite FILE), then import the .sqlite");
	return 0;
}

static void
init(struct imp_input *in, const char *name)
{
	memset(in, 0, sizeof(*in));
	in->fd = -1;
	in->name = name;
}

static int
start(struct imp_input *in)
{
	in->raw_cap = RAW_SIZE;
	if (!(in->raw = malloc(in->raw_cap)))
		return fail(in, "out of memory");
	return detect(in);
}

int
imp_input_open(struct imp_input *in, const char *path)
{
	init(in, strcmp(path, "-") == 0 ? "(stdin)" : path);
	if (strcmp(path, "-") == 0) {
		in->fd = 0;
	} else {
		in->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (in->fd < 0)
			return fail(in, strerror(errno));
		in->own_fd = 1;
	}
	return start(in);
}

int
imp_input_open_fd(struct imp_input *in, int fd, const char *name)
{
	init(in, name);
	in->fd = fd;
	return start(in);
}

int
imp_input_open_mem(struct imp_input *in, const void *buf, size_t len,
                   const char *name)
{
	init(in, name);
	/* borrowed: the buffer is only read */
	in->raw = (unsigned char *)(uintptr_t)buf;
	in->raw_len = in->raw_cap = len;
	in->raw_total = len;
	in->raw_eof = 1;
	return detect(in);
}

long
imp_input_read(struct imp_input *in, void *buf, size_t n)
{
	if (!in->gz) {
		if (in->raw_pos == in->raw_len) {
			int rc = fill_raw(in);
			if (rc <= 0)
				return rc;
		}
		size_t k = in->raw_len - in->raw_pos;
		if (k > n)
			k = n;
		memcpy(buf, in->raw + in->raw_pos, k);
		in->raw_pos += k;
		return (long)k;
	}
	size_t want = n > (1u << 30) ? 1u << 30 : n;
	in->zs.next_out = buf;
	in->zs.avail_out = (uInt)want;
	while (in->zs.avail_out > 0) {
		if (in->raw_pos == in->raw_len) {
			int rc = fill_raw(in);
			if (rc < 0)
				return -1;
			if (rc == 0) {
				if (in->zs_live == 2)  /* between members: the end */
					break;
				if (want - in->zs.avail_out > 0)
					break;  /* hand out what came; fail next time */
				return fail(in, "truncated gzip data");
			}
		}
		if (in->zs_live == 2) {
			/* another gzip member follows (cat a.gz b.gz) */
			if (inflateReset(&in->zs) != Z_OK)
				return fail(in, "corrupt gzip data");
			in->zs_live = 1;
		}
		in->zs.next_in = in->raw + in->raw_pos;
		in->zs.avail_in = (uInt)(in->raw_len - in->raw_pos);
		int rc = inflate(&in->zs, Z_NO_FLUSH);
		in->raw_pos = in->raw_len - in->zs.avail_in;
		if (rc == Z_STREAM_END) {
			in->zs_live = 2;
			continue;
		}
		if (rc == Z_BUF_ERROR && in->zs.avail_in == 0)
			continue;  /* needs more input */
		if (rc != Z_OK) {
			snprintf(in->errmsg, sizeof(in->errmsg),
			         "corrupt gzip data at byte %llu of the file%s%s",
			         (unsigned long long)(in->raw_total -
			                              (in->raw_len - in->raw_pos)),
			         in->zs.msg ? ": " : "", in->zs.msg ? in->zs.msg : "");
			return -1;
		}
	}
	return (long)(want - in->zs.avail_out);
}

void
imp_input_close(struct imp_input *in)
{
	if (in->zs_live)
		inflateEnd(&in->zs);
	if (in->own_fd)
		close(in->fd);
	if (in->fd >= 0 || in->own_fd)
		free(in->raw);
	in->raw = NULL;
	in->zs_live = 0;
	in->own_fd = 0;
}
