/* SPDX-License-Identifier: MIT */
/*
 * Every reading command's inputs: a .tkt, or a Chrome/PyTorch JSON
 * (plain or gzip) or Nsight Systems SQLite export imported on the way
 * in, so that `trace-stats rank0.pt.trace.json.gz` is
 * `trace-import rank0.pt.trace.json.gz | trace-stats`.
 *
 * Why an import into an unlinked temporary file, in-process, rather than
 * an importer thread feeding a pipe: the importer puts events in time
 * order before it writes the first one (sort.c), so a pipe would gain
 * nothing but the overlap of its last phase, while a file keeps what
 * the commands do with files: trace-merge scans it for its chunks,
 * trace-stats and trace-diff read it twice (--run, --steps) or in
 * threads, and the import's warnings and exit status come before any
 * output, in the order of the inputs.  Memory stays bounded as in
 * trace-import (its sort spills to temporary files); the disk holds the
 * imported trace (a fiftieth of the JSON or less on PyTorch traces)
 * until the input is closed.
 *
 * What an input holds is told from its first bytes, never its name, and
 * without consuming them: pread(2) on a file, tee(2) on a pipe (so that
 * `trace-record | trace-stats` still streams); other streams (a
 * terminal, a socket) are copied to a temporary file first.
 *
 * jansson keeps its usual allocator here: trace-import parses with
 * pipe.c's arenas (imp_alloc_init()), but the reading commands free
 * what jansson gives them (json_dumps()) with free(), which those
 * arenas' blocks do not allow.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "autoread.h"
#include "import.h"
#include "nsys.h"
#include "common/util.h"

#define SNIFF 4096               /* bytes looked at */
#define IMPORT_MEMORY (8u << 20) /* trace-import's default --memory */

static const char *
tmp_dir(const char *tmpdir)
{
	const char *d = tmpdir ? tmpdir : getenv("TMPDIR");
	return d && *d ? d : "/tmp";
}

/* An unlinked temporary file, or -1 after reporting. */
static int
tmp_file(const char *tmpdir)
{
	const char *dir = tmp_dir(tmpdir);
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s-XXXXXX", dir, cmd_name());
	if ((fd = mkstemp(path)) < 0) {
		cmd_warn("cannot create a temporary file in %s: %s", dir, strerror(errno));
		return -1;
	}
	unlink(path);
	return fd;
}

/* Copy a stream that can be neither peeked at nor read twice (a
 * terminal, a socket) to a temporary file.  0, or the exit status. */
static int
spool(struct autoread *a, const char *path, const char *tmpdir)
{
	int tmp = tmp_file(tmpdir);
	if (tmp < 0)
		return EXIT_USAGE;
	char buf[1 << 16];
	for (;;) {
		ssize_t n = read(a->fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			cmd_warn("%s: %s", cmd_display_path(path), strerror(errno));
			close(tmp);
			return EXIT_BADINPUT;
		}
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(tmp, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				cmd_warn("temporary file in %s: %s", tmp_dir(tmpdir),
				         strerror(errno));
				close(tmp);
				return EXIT_USAGE;
			}
			off += w;
		}
	}
	autoread_close(a);
	lseek(tmp, 0, SEEK_SET);
	a->fd = tmp;
	a->own_fd = 1;
	return 0;
}

/* The first bytes of a pipe, left in it: tee(2) copies without
 * consuming.  Waits until there are 16 or the writer is gone. */
static ssize_t
peek_pipe(int fd, unsigned char *buf, size_t cap)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	ssize_t n;
	int hup = 0;
	for (;;) {
		n = tee(fd, p[1], cap, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || n >= 16 || hup)
			break;
		/* a few bytes only: wait a little for more, or the end (a
		 * pipe with no writer left says POLLHUP), then copy again */
		struct pollfd pf = { .fd = fd, .events = 0 };
		hup = poll(&pf, 1, 10) > 0 && (pf.revents & POLLHUP);
		/* drain the copy: the next tee copies from the start again */
		unsigned char junk[16];
		if (read(p[0], junk, (size_t)n) != n) {
			n = -1;
			break;
		}
	}
	ssize_t got = 0;
	while (n > 0 && got < n) {
		ssize_t k = read(p[0], buf + got, (size_t)(n - got));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += k;
	}
	int e = errno;
	close(p[0]);
	close(p[1]);
	errno = e;
	return n < 0 ? -1 : got;
}

/* The first bytes of the input, without consuming them. */
static ssize_t
peek(struct autoread *a, const char *path, const char *tmpdir,
     unsigned char *buf, size_t cap, int *status)
{
	struct stat st;
	if (fstat(a->fd, &st) < 0)
		goto fail;
	if (S_ISFIFO(st.st_mode)) {
		ssize_t n = peek_pipe(a->fd, buf, cap);
		if (n >= 0)
			return n;
		if (errno != EINVAL)   /* EINVAL: not a pipe after all */
			goto fail;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) &&
	    (*status = spool(a, path, tmpdir)))
		return -1;
	off_t at = lseek(a->fd, 0, SEEK_CUR);
	for (;;) {
		ssize_t n = pread(a->fd, buf, cap, at < 0 ? 0 : at);
		if (n >= 0)
			return n;
		if (errno != EINTR) {
			/* as the reader says it (a directory: EISDIR) */
			cmd_warn("%s: read error at byte 0: %s", cmd_display_path(path),
			         strerror(errno));
			*status = EXIT_BADINPUT;
			return -1;
		}
	}
fail:
	cmd_warn("%s: %s", cmd_display_path(path), strerror(errno));
	*status = EXIT_BADINPUT;
	return -1;
}

/* ---- what the bytes are ------------------------------------------------------------ */

enum kind { K_TKT, K_IMPORT, K_BAD };

static int
starts(const unsigned char *p, size_t n, const char *magic, size_t len)
{
	return n >= len && memcmp(p, magic, len) == 0;
}

/* Text: printable ASCII, white space and UTF-8 lead and continuation
 * bytes only. */
static int
is_text(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 && !strchr("\t\n\r\f", p[i]))
			return 0;
	return 1;
}

/* A tracekit trace cut inside its magic, or with a byte of it changed:
 * the reader's message says what is wrong, at which byte. */
static int
near_magic(const unsigned char *p, size_t n)
{
	static const char magic[8] = "\x89TKT\r\n\x1a\n";
	size_t same = 0, k = n < 8 ? n : 8;
	for (size_t i = 0; i < k; i++)
		same += p[i] == (unsigned char)magic[i];
	return n < 8 ? same == n : same >= 7;
}

/* The bytes of a gzip member, inflated as far as `in` goes. */
static size_t
gunzip_head(const unsigned char *in, size_t n, unsigned char *out, size_t cap)
{
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return 0;
	zs.next_in = (unsigned char *)(uintptr_t)in;
	zs.avail_in = (uInt)n;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	inflate(&zs, Z_SYNC_FLUSH);
	size_t got = cap - zs.avail_out;
	inflateEnd(&zs);
	return got;
}

/* What `p` holds, with a message (into msg) for what cannot be read.
 * `gz`: these bytes came out of a gzip file. */
static enum kind
classify(const unsigned char *p, size_t n, int gz, char *msg, size_t msgsz)
{
	const char *cmd = cmd_name();
	const char *z = gz ? "gzip-compressed " : "";
	if (n == 0) {
		snprintf(msg, msgsz, gz ? "a gzip file with nothing in it" :
		         "empty input (not a trace)");
		return K_BAD;
	}
	if (starts(p, n, "\x89TKT\r\n\x1a\n", 8)) {
		if (!gz)
			return K_TKT;
		snprintf(msg, msgsz, "a gzip-compressed tracekit trace: decompress it "
		         "first (gzip -dc FILE | %s)", cmd);
		return K_BAD;
	}
	if (!gz && near_magic(p, n))
		return K_TKT;   /* a damaged trace: the reader says where */
	if (starts(p, n, "\x1f\x8b", 2)) {
		if (!gz) {
			unsigned char in[256];
			size_t k = gunzip_head(p, n, in, sizeof(in));
			if (k == 0)
				return K_IMPORT;   /* corrupt or cut short: the importer says */
			return classify(in, k, 1, msg, msgsz);
		}
		snprintf(msg, msgsz, "gzip inside gzip: decompress it once first "
		         "(gzip -dc FILE | %s)", cmd);
		return K_BAD;
	}
	if (starts(p, n, "SQLite format 3", 16)) {
		if (!gz)
			return K_IMPORT;   /* nsys.c checks it is an nsys export */
		snprintf(msg, msgsz, "a gzip-compressed SQLite database: decompress "
		         "it first (gzip -dc FILE > x.sqlite)");
		return K_BAD;
	}
	static const struct { const char *magic; size_t len; const char *tool; } packed[] = {
		{ "\xfd" "7zXZ", 5, "xz" },
		{ "\x28\xb5\x2f\xfd", 4, "zstd" },
		{ "BZh", 3, "bzip2" },
	};
	for (size_t k = 0; k < sizeof(packed) / sizeof(packed[0]); k++)
		if (starts(p, n, packed[k].magic, packed[k].len)) {
			snprintf(msg, msgsz, "%s%s-compressed: decompress it first "
			         "(%s -dc FILE | %s)", z, packed[k].tool, packed[k].tool, cmd);
			return K_BAD;
		}
	if (starts(p, n, "PK\x03\x04", 4)) {
		snprintf(msg, msgsz, "%sa zip archive: extract the trace first "
		         "(unzip FILE)", z);
		return K_BAD;
	}
	if (starts(p, n, "\x7f" "ELF", 4)) {
		snprintf(msg, msgsz, "%sa program (ELF), not a trace", z);
		return K_BAD;
	}
	size_t i = starts(p, n, "\xef\xbb\xbf", 3) ? 3 : 0;   /* a UTF-8 BOM */
	while (i < n && strchr(" \t\r\n", p[i]))
		i++;
	if (i < n && (p[i] == '{' || p[i] == '['))
		return K_IMPORT;
	/* Nsight Systems names itself in its reports' first bytes ("QuadD"
	 * is its internal name, as in .qdrep and .qdstrm) */
	size_t m = n > 4096 ? 4096 : n;
	if (memmem(p, m, "QuadD", 5) || memmem(p, m, "Nsight Systems", 14) ||
	    memmem(p, m, "nsys-rep", 8)) {
		snprintf(msg, msgsz, "%san Nsight Systems report: export it first "
		         "(nsys export --type sqlite FILE), then read the .sqlite", z);
		return K_BAD;
	}
	if (i == n) {
		snprintf(msg, msgsz, "%sonly white space: not a trace", z);
		return K_BAD;
	}
	if (p[i] == '<') {
		char head[16] = { 0 };
		for (size_t k = 0; k + 1 < sizeof(head) && i + k < n; k++)
			head[k] = (char)tolower(p[i + k]);
		if (strncmp(head, "<!doctype html", 14) == 0 || strncmp(head, "<html", 5) == 0)
			snprintf(msg, msgsz, "%san HTML page, not a trace (a web page saved "
			         "instead of the file?)", z);
		else
			snprintf(msg, msgsz, "%sXML or HTML, not a trace", z);
		return K_BAD;
	}
	if (is_text(p + i, m - i < 256 ? m - i : 256))
		snprintf(msg, msgsz, "%stext that is not JSON: not a tracekit trace, "
		         "Chrome JSON or Nsight Systems SQLite export", z);
	else
		snprintf(msg, msgsz, "%snot a tracekit trace, Chrome JSON or Nsight "
		         "Systems SQLite export (first bytes %02x %02x %02x %02x)", z,
		         p[0], n > 1 ? p[1] : 0, n > 2 ? p[2] : 0, n > 3 ? p[3] : 0);
	return K_BAD;
}

/* ---- the import ---------------------------------------------------------------------- */

/* Import the input into an unlinked temporary file, which replaces it.
 * 0, or the exit status after reporting. */
static int
import(struct autoread *a, const char *path, const char *tmpdir)
{
	struct imp_input in;
	const char *shown = cmd_display_path(path);
	if (imp_input_open_fd(&in, a->fd, shown) < 0) {
		cmd_warn("%s: %s", shown, in.errmsg);
		imp_input_close(&in);
		return EXIT_BADINPUT;
	}
	struct imp_nsys *ns = NULL;
	if (in.sqlite) {
		char msg[512];
		if (!(ns = imp_nsys_open(&in, path, tmpdir, msg, sizeof(msg)))) {
			cmd_warn("%s: %s", shown, msg);
			imp_input_close(&in);
			return EXIT_BADINPUT;
		}
	}
	int tmp = tmp_file(tmpdir);
	struct tk_writer *w = tk_writer_new();
	if (!w)
		cmd_die(EXIT_USAGE, "out of memory");
	/* as trace-import writes it, so that the figures are the same */
	struct tk_writer_options wo = TK_WRITER_OPTIONS_INIT;
	wo.chunk_bytes = 1536u << 10;
	int status = EXIT_USAGE;
	if (tmp >= 0 && tk_writer_open_fd(w, tmp, "(temporary file)", &wo) == TK_OK) {
		struct imp_options io = {
			.memory = IMPORT_MEMORY, .tmpdir = tmpdir, .threads = 1,
		};
		const char *th = getenv("TK_IMPORT_THREADS");
		if (th && strcmp(th, "0") == 0)
			io.threads = 0;
		status = ns ? imp_nsys_run(ns, w, &io) : imp_run(&in, w, &io);
		if (status != EXIT_USAGE && tk_writer_close(w) != TK_OK) {
			cmd_warn("temporary file in %s: %s", tmp_dir(tmpdir), tk_writer_error(w));
			status = EXIT_USAGE;
		}
	} else if (tmp >= 0) {
		cmd_warn("temporary file in %s: %s", tmp_dir(tmpdir), tk_writer_error(w));
	}
	tk_writer_free(w);
	imp_nsys_close(ns);
	imp_input_close(&in);
	if (status == EXIT_USAGE) {
		if (tmp >= 0)
			close(tmp);
		return EXIT_USAGE;
	}
	autoread_close(a);
	lseek(tmp, 0, SEEK_SET);
	a->fd = tmp;
	a->own_fd = 1;
	a->imported = 1;
	a->partial = status != 0;
	return 0;
}

/* ---- entry points ---------------------------------------------------------------------- */

int
autoread_open(struct autoread *a, const char *path, const char *tmpdir)
{
	memset(a, 0, sizeof(*a));
	if (strcmp(path, "-") == 0) {
		a->fd = STDIN_FILENO;
	} else if ((a->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		cmd_warn("%s: %s", path, strerror(errno));
		return EXIT_BADINPUT;
	} else {
		a->own_fd = 1;
	}
	unsigned char buf[SNIFF];
	char msg[512];
	int status = 0;
	ssize_t n = peek(a, path, tmpdir, buf, sizeof(buf), &status);
	if (n < 0) {
		autoread_close(a);
		return status;
	}
	switch (classify(buf, (size_t)n, 0, msg, sizeof(msg))) {
	case K_TKT:
		return 0;
	case K_IMPORT:
		if ((status = import(a, path, tmpdir)))
			autoread_close(a);
		return status;
	default:
		cmd_warn("%s: %s", cmd_display_path(path), msg);
		autoread_close(a);
		return EXIT_BADINPUT;
	}
}

struct tk_reader *
autoread_reader(struct autoread *a, const char *path)
{
	return autoread_reader_flags(a, path, 0);
}

struct tk_reader *
autoread_reader_flags(struct autoread *a, const char *path, unsigned flags)
{
	struct tk_reader *r = cmd_new_reader(flags);
	if (tk_reader_open_fd(r, a->fd, cmd_display_path(path)) != TK_OK) {
		cmd_reader_error(path, r);
		tk_reader_free(r);
		return NULL;
	}
	return r;
}

struct tk_reader *
autoread_open_reader(struct autoread *a, const char *path, int *status)
{
	return autoread_open_reader_flags(a, path, 0, status);
}

struct tk_reader *
autoread_open_reader_flags(struct autoread *a, const char *path, unsigned flags,
                           int *status)
{
	*status = autoread_open(a, path, NULL);
	if (*status)
		return NULL;
	struct tk_reader *r = autoread_reader_flags(a, path, flags);
	if (!r) {
		autoread_close(a);
		*status = EXIT_BADINPUT;
		return NULL;
	}
	*status = a->partial ? EXIT_BADINPUT : 0;
	return r;
}

void
autoread_close(struct autoread *a)
{
	if (a->own_fd && a->fd >= 0)
		close(a->fd);
	a->fd = -1;
	a->own_fd = 0;
}
