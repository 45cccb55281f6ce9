/* SPDX-License-Identifier: MIT */
/*
 * --max-size: the output held within a size bound, keeping the newest
 * chunks (a flight recorder, the default) or the first ones.
 *
 * The merge writes its output, compressed as usual, into a file of the
 * spool directory ("bounded"); after every merge step the chunks it
 * completed there are taken, read by their headers (tracekit-format(5)).
 * A chunk that the bound leaves out is discarded whole, its disk space
 * given back (a hole punched), but two things of it are kept:
 *
 *   - its definitions (strings, processes, threads, metadata, ...),
 *     because a definition holds from its chunk to the end of the
 *     trace, and the chunks kept may use it: they are copied into a
 *     chunk of definitions alone (no events), written where the chunk
 *     was in the stream;
 *   - the count of its events by kind, with their time span (a reader
 *     fed the discarded chunks in stream order decodes them).
 *
 * With the newest kept, what is discarded is always a prefix of the
 * stream; with the first kept, a suffix: either way the kept chunks
 * and the chunks of definitions stay in stream order, so they form a
 * valid trace.  At the end that trace and a small one are merged into
 * the output: the small one holds the process and run events, kept
 * apart from the bound (rec_lifetimes), and a `dropped` event per kind
 * discarded (on the command's process, with the bound as the reason).
 * The output is therefore written when the recording ends, not as it
 * goes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "record.h"

#define CHUNK_HEAD 56             /* tracekit-format(5), Chunks */
#define CHUNK_END_FLAG 0x4u
#define CHUNK_DEFLATE_FLAG 0x1u
#define FILE_HEAD_MAX 4096

struct kept {
	uint64_t off, len;
};

struct kind_loss {
	uint64_t count;
	int64_t t_min, t_max;
};

static struct {
	uint64_t max;             /* the bound, bytes */
	int keep_first;
	char reason[160];
	int fd;                   /* the merge's output */
	int defs_fd;              /* chunks of definitions of discarded chunks */
	uint64_t defs_bytes;
	uint8_t head[FILE_HEAD_MAX]; /* the file header */
	uint32_t head_len;
	uint64_t off;             /* next chunk to take */
	uint64_t punched;         /* holes punched up to here */
	struct kept *kept;        /* in stream order */
	size_t nkept, kept_at, kept_cap;
	uint64_t kept_bytes;
	int full;                 /* first kept: the bound is reached */
	struct tk_reader *count;  /* decodes what is discarded, to count it */
	int count_failed;
	struct kind_loss loss[256];
	uint64_t lost;
	char *path, *defs_path;
} b = { .fd = -1, .defs_fd = -1 };

int
rec_bound_active(void)
{
	return b.max != 0;
}

uint32_t
rec_bound_chunk_bytes(void)
{
	/* chunks small against the bound, so that it is kept closely */
	uint64_t c = b.max / 8;
	return c < (16u << 10) ? 16u << 10 : c > (512u << 10) ? 512u << 10 : (uint32_t)c;
}

static int
spool_file(const char *spool, const char *name, char **path)
{
	if (asprintf(path, "%s/%s", spool, name) < 0)
		rec_die("out of memory");
	int fd = open(*path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		rec_die("%s: %s", *path, strerror(errno));
	return fd;
}

int
rec_bound_open(const struct rec_options *o, const char *spool)
{
	b.max = o->max_size;
	b.keep_first = o->max_size_keep_first;
	snprintf(b.reason, sizeof(b.reason),
	         b.keep_first ? "--max-size %s: later events discarded, the first kept"
	                      : "--max-size %s: older events discarded, the newest kept",
	         o->max_size_text);
	b.fd = spool_file(spool, "bounded", &b.path);
	b.defs_fd = spool_file(spool, "bounded-defs", &b.defs_path);
	if (!(b.count = tk_reader_new()) ||
	    tk_reader_open_feed(b.count, "(discarded)") != TK_OK)
		rec_die("out of memory");
	return b.fd;
}

static void
full_pread(int fd, void *buf, size_t n, uint64_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t k = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			rec_die("%s: read error: %s", b.path, k < 0 ? strerror(errno)
			                                            : "cut short");
		got += (size_t)k;
	}
}

static void
full_write(int fd, const void *buf, size_t n, const char *name)
{
	size_t done = 0;
	while (done < n) {
		ssize_t k = write(fd, (const char *)buf + done, n - done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			rec_die("%s: write error: %s", name, strerror(errno));
		done += (size_t)k;
	}
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void
put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Count the events of a chunk fed to the counting reader (when
 * `discarded`); the reader sees every chunk before it, or every
 * discarded one when they are a prefix. */
static void
count_chunk(const uint8_t *chunk, size_t len, int discarded)
{
	if (b.count_failed)
		return;
	if (tk_reader_feed(b.count, chunk, len) != TK_OK)
		rec_die("out of memory");
	struct tk_columns c;
	int rc;
	while ((rc = tk_reader_next_columns(b.count, &c)) == TK_OK) {
		for (size_t i = 0; discarded && i < c.n; i++) {
			struct kind_loss *k = &b.loss[c.kind[i]];
			int64_t end = c.ts[i] + c.dur[i];
			if (!k->count || c.ts[i] < k->t_min)
				k->t_min = c.ts[i];
			if (!k->count || end > k->t_max)
				k->t_max = end;
			k->count++;
			b.lost++;
		}
	}
	if (rc != TK_AGAIN && rc != TK_EOF) {
		/* our own writer's output: cannot happen but by a bug */
		cmd_warn("%s: %s; the count of discarded events stops here",
		         b.path, tk_reader_error(b.count));
		b.count_failed = 1;
	}
}

/* The definitions of a discarded chunk, at byte `off` of the file, as
 * a chunk of their own (its END flag and watermark kept), appended to
 * the definitions file. */
static void
keep_definitions(const uint8_t *chunk, size_t len, uint64_t off)
{
	uint32_t hsz = get32(chunk + 4), flags = get32(chunk + 8);
	uint32_t stored = get32(chunk + 12), raw = get32(chunk + 16);
	const uint8_t *payload = chunk + hsz;
	uint8_t *inflated = NULL;
	if (hsz < CHUNK_HEAD || (uint64_t)hsz + stored > len)
		rec_die("%s: damaged chunk at byte %llu", b.path,
		        (unsigned long long)off);
	if (flags & CHUNK_DEFLATE_FLAG) {
		uLongf n = raw;
		inflated = rec_xrealloc(NULL, raw ? raw : 1);
		if (uncompress(inflated, &n, payload, stored) != Z_OK || n != raw)
			rec_die("%s: damaged chunk at byte %llu", b.path,
			        (unsigned long long)off);
		payload = inflated;
	} else {
		raw = stored;
	}
	/* payload = varint(size of definitions) definition* column* */
	uint64_t dsz = 0;
	uint32_t at = 0;
	for (unsigned shift = 0; at < raw && at < 10; shift += 7) {
		uint8_t x = payload[at++];
		dsz |= (uint64_t)(x & 0x7f) << shift;
		if (!(x & 0x80))
			break;
	}
	if (dsz > raw - at)
		rec_die("%s: damaged chunk at byte %llu", b.path,
		        (unsigned long long)off);
	if (dsz || (flags & CHUNK_END_FLAG)) {
		uint8_t h[CHUNK_HEAD] = { 0x89, 'T', 'K', 'C' };
		uint32_t plen = at + (uint32_t)dsz;
		put32(h + 4, CHUNK_HEAD);
		put32(h + 8, flags & CHUNK_END_FLAG);
		put32(h + 12, plen);
		put32(h + 16, plen);
		memcpy(h + 40, chunk + 40, 8);            /* the watermark */
		uLong crc = crc32(crc32(0, h, CHUNK_HEAD - 4), payload, plen);
		put32(h + CHUNK_HEAD - 4, (uint32_t)crc);
		full_write(b.defs_fd, h, sizeof(h), b.defs_path);
		full_write(b.defs_fd, payload, plen, b.defs_path);
		b.defs_bytes += sizeof(h) + plen;
	}
	free(inflated);
}

/* Give the disk space of [from, to) back, in whole pages. */
static void
punch(uint64_t from, uint64_t to)
{
	if (from < b.punched)
		from = b.punched;
	from = (from + 4095) & ~(uint64_t)4095;
	to &= ~(uint64_t)4095;
	if (to <= from)
		return;
	fallocate(b.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)from,
	          (off_t)(to - from));
	b.punched = to;
}

static void
discard(uint64_t off, uint64_t len, uint8_t *buf)
{
	if (!buf) {
		buf = rec_xrealloc(NULL, len);
		full_pread(b.fd, buf, len, off);
		count_chunk(buf, len, 1);
		keep_definitions(buf, len, off);
		free(buf);
	} else {
		keep_definitions(buf, len, off);
	}
	punch(off, off + len);
}

/* One chunk more, at [off, off + len): keep it, or discard it or the
 * oldest ones, as the bound says. */
static void
take_chunk(uint64_t off, uint64_t len)
{
	if (b.keep_first) {
		/* every chunk goes through the counting reader, in order */
		uint8_t *buf = rec_xrealloc(NULL, len);
		full_pread(b.fd, buf, len, off);
		b.full = b.full || b.head_len + b.kept_bytes + len > b.max;
		count_chunk(buf, len, b.full);
		if (b.full)
			discard(off, len, buf);
		free(buf);
		if (b.full)
			return;
	}
	if (b.nkept == b.kept_cap) {
		if (b.kept_at) {
			memmove(b.kept, b.kept + b.kept_at,
			        (b.nkept - b.kept_at) * sizeof(*b.kept));
			b.nkept -= b.kept_at;
			b.kept_at = 0;
		}
		if (b.nkept == b.kept_cap) {
			b.kept_cap = b.kept_cap ? 2 * b.kept_cap : 64;
			b.kept = rec_xrealloc(b.kept, b.kept_cap * sizeof(*b.kept));
		}
	}
	b.kept[b.nkept++] = (struct kept){ off, len };
	b.kept_bytes += len;
	/* the newest kept: the oldest go, the last one always stays */
	while (!b.keep_first && b.nkept - b.kept_at > 1 &&
	       b.head_len + b.defs_bytes + b.kept_bytes > b.max) {
		struct kept *k = &b.kept[b.kept_at++];
		b.kept_bytes -= k->len;
		discard(k->off, k->len, NULL);
	}
}

void
rec_bound_take(void)
{
	struct stat st;
	if (!b.max || fstat(b.fd, &st) < 0)
		return;
	uint64_t size = (uint64_t)st.st_size;
	if (!b.head_len) {
		uint8_t h[16];
		if (size < sizeof(h))
			return;
		full_pread(b.fd, h, sizeof(h), 0);
		uint32_t n = get32(h + 12);
		if (n < 16 || n > FILE_HEAD_MAX)
			rec_die("%s: bad file header", b.path);
		if (size < n)
			return;
		full_pread(b.fd, b.head, n, 0);
		b.head_len = n;
		b.off = n;
		if (tk_reader_feed(b.count, b.head, n) != TK_OK)
			rec_die("out of memory");
	}
	while (b.off + CHUNK_HEAD <= size) {
		uint8_t h[CHUNK_HEAD];
		full_pread(b.fd, h, sizeof(h), b.off);
		if (memcmp(h, "\x89TKC", 4) != 0 || get32(h + 4) < CHUNK_HEAD)
			rec_die("%s: bad chunk at byte %llu", b.path,
			        (unsigned long long)b.off);
		uint64_t len = (uint64_t)get32(h + 4) + get32(h + 12);
		if (b.off + len > size)
			break;
		take_chunk(b.off, len);
		b.off += len;
	}
}

/* Copy [off, off + len) of `from` to `to`. */
static int
copy_range(int from, uint64_t off, uint64_t len, int to)
{
	static uint8_t buf[256 * 1024];
	while (len) {
		size_t n = len < sizeof(buf) ? (size_t)len : sizeof(buf);
		full_pread(from, buf, n, off);
		size_t done = 0;
		while (done < n) {
			ssize_t k = write(to, buf + done, n - done);
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0)
				return -1;
			done += (size_t)k;
		}
		off += n;
		len -= n;
	}
	return 0;
}

/* The kept chunks and the definitions of the discarded ones, in stream
 * order, as a trace of its own in the spool; its descriptor. */
static int
assemble(const char *spool)
{
	char *path;
	int fd = spool_file(spool, "bounded-kept", &path);
	int err = 0;
	struct stat st;
	full_write(fd, b.head, b.head_len, path);
	if (!b.keep_first)
		err |= copy_range(b.defs_fd, 0, b.defs_bytes, fd);
	for (size_t i = b.kept_at; i < b.nkept; i++)
		err |= copy_range(b.fd, b.kept[i].off, b.kept[i].len, fd);
	if (b.keep_first)
		err |= copy_range(b.defs_fd, 0, b.defs_bytes, fd);
	if (err || fstat(fd, &st) < 0)
		rec_die("%s: write error: %s", path, strerror(errno));
	unlink(path);
	free(path);
	return fd;
}

/* A dropped event per kind discarded, on `track`, into `w`. */
static void
write_losses(struct tk_writer *w, uint32_t track)
{
	for (unsigned k = 0; k < 256 && track; k++) {
		if (!b.loss[k].count)
			continue;
		struct tk_event e = { 0 };
		e.kind = TK_DROPPED;
		e.track = track;
		e.ts = b.loss[k].t_min;
		e.dur = b.loss[k].t_max - b.loss[k].t_min;
		e.name = tk_kind_name(k) ? tk_kind_name(k) : "unknown";
		e.u.dropped.count = b.loss[k].count;
		e.u.dropped.reason = b.reason;
		tk_writer_event(w, &e);
	}
}

int
rec_bound_finish(int out_fd, const char *out_name, const char *spool,
                 struct tk_writer *lives, int lives_fd,
                 uint32_t (*track)(void *), void *arg, int *epipe)
{
	rec_bound_take();
	int ret = 0;
	*epipe = 0;
	write_losses(lives, track(arg));
	if (tk_writer_close(lives) != TK_OK)
		rec_die("%s", tk_writer_error(lives));
	int kept_fd = assemble(spool);
	struct tk_writer *out = tk_writer_new();
	struct tk_reader *rk = tk_reader_new(), *rl = tk_reader_new();
	struct tk_writer_options wo = TK_WRITER_OPTIONS_INIT;
	wo.chunk_bytes = rec_bound_chunk_bytes();
	struct tk_merge_options mo = { 0 };
	mo.tmpdir = spool;
	if (!out || !rk || !rl)
		rec_die("out of memory");
	if (tk_writer_open_fd(out, out_fd, out_name, &wo) != TK_OK) {
		/* the header is written now: the reader may be gone, the
		 * disk full, as for any later write (and the command may
		 * still run, with --duration) */
		if (tk_writer_errno(out) == EPIPE)
			*epipe = 1;
		else
			cmd_warn("%s: %s", out_name, tk_writer_errno(out)
			         ? strerror(tk_writer_errno(out)) : tk_writer_error(out));
		tk_writer_free(out);
		tk_reader_free(rk);
		tk_reader_free(rl);
		close(kept_fd);
		return -1;
	}
	if (tk_reader_open_range(rk, kept_fd, 0, (uint64_t)lseek(kept_fd, 0, SEEK_END),
	                         "(kept)") != TK_OK)
		rec_die("%s", tk_reader_error(rk));
	if (tk_reader_open_range(rl, lives_fd, 0, (uint64_t)lseek(lives_fd, 0, SEEK_END),
	                         "(lifetimes)") != TK_OK)
		rec_die("%s", tk_reader_error(rl));
	/* the merge owns the readers from here */
	struct tk_merge *m = tk_merge_new(out, &mo);
	if (!m || tk_merge_add(m, rk, NULL, 0) < 0 || tk_merge_add(m, rl, NULL, 0) < 0)
		rec_die("out of memory");
	if (tk_merge_run(m) != TK_OK || tk_writer_close(out) != TK_OK) {
		ret = -1;
		if (tk_writer_errno(out) == EPIPE)
			*epipe = 1;
		else
			cmd_warn("%s: %s", out_name, tk_writer_errno(out)
			         ? strerror(tk_writer_errno(out)) : tk_merge_error(m));
	}
	tk_merge_free(m);
	tk_writer_free(out);
	close(kept_fd);
	return ret;
}

void
rec_bound_free(void)
{
	if (b.fd >= 0)
		close(b.fd);
	if (b.defs_fd >= 0)
		close(b.defs_fd);
	tk_reader_free(b.count);
	free(b.kept);
	free(b.path);
	free(b.defs_path);
	b.fd = b.defs_fd = -1;
	b.count = NULL;
	b.kept = NULL;
	b.path = b.defs_path = NULL;
}
