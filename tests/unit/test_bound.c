/* SPDX-License-Identifier: MIT */
/*
 * trace-record's size bound (cmd/trace-record/bound.c): the merge's
 * output, written here by a writer of our own into the bound's file in
 * pieces of any size (as merge steps leave it: a header or a chunk half
 * written), taken, bounded and finished into a trace that the library's
 * reader reads back.  What is expected is known from what was written:
 * how many events, in which order, under which names.  Then the file
 * damaged under the bound (it is a file of the spool: only a bug or
 * another process could change it) and outputs that cannot be written.
 *
 * Each case runs in a child (the bound is opened once per process and
 * rec_die exits); the parent reads its exit status, its stderr and its
 * trace.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "tracekit.h"
#include "trace-record/record.h"

#define NEVENTS 40000
#define BOUND (64u << 10)

static char dir[] = "/tmp/tk-test-bound-XXXXXX";
static char spool[100], out_path[100];

/* ---- the merge's output, made in memory ---------------------------------------------- */

/* NEVENTS ranges named "common" on one thread, ts 1000 + 10 i, written
 * as the merge writes into the bound's file (its chunk size), at
 * deflate `level`; the bytes in *len. */
static uint8_t *
merge_output(int level, size_t *len)
{
	char path[200];
	snprintf(path, sizeof(path), "%s/made.tkt", dir);
	struct tk_writer *w = tk_writer_new();
	struct tk_writer_options wo = TK_WRITER_OPTIONS_INIT;
	wo.level = level;
	wo.chunk_bytes = 16u << 10;  /* rec_bound_chunk_bytes() of BOUND */
	if (!w || tk_writer_open_path(w, path, &wo) != TK_OK)
		abort();
	struct tk_process p = { "host", 77, 1, 1, 0, NULL, "" };
	uint32_t pt = tk_writer_process(w, 0, &p);
	struct tk_thread t = { pt, 77, "main" };
	uint32_t tt = tk_writer_thread(w, 0, &t);
	for (int i = 0; i < NEVENTS; i++) {
		struct tk_event e = { 0 };
		e.kind = TK_RANGE;
		e.track = tt;
		e.ts = 1000 + 10 * (int64_t)i;
		/* durations that do not compress away */
		uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15u;
		x ^= x >> 29;
		e.dur = (int64_t)((x * 0xbf58476d1ce4e5b9u) >> 34);
		e.name = "common";
		if (tk_writer_event(w, &e) != TK_OK)
			abort();
	}
	if (tk_writer_close(w) != TK_OK)
		abort();
	tk_writer_free(w);
	FILE *f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) < 0)
		abort();
	*len = (size_t)ftell(f);
	uint8_t *buf = malloc(*len);
	rewind(f);
	if (!buf || fread(buf, 1, *len, f) != *len)
		abort();
	fclose(f);
	unlink(path);
	return buf;
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

/* Offset of chunk `n` (0 = the first) in a trace, from the headers
 * (tracekit-format(5): file header length at byte 12; a chunk's header
 * length at 4 and stored payload length at 12). */
static size_t
chunk_at(const uint8_t *buf, size_t n)
{
	size_t off = get32(buf + 12);
	while (n--)
		off += get32(buf + off + 4) + get32(buf + off + 12);
	return off;
}

/* ---- a case, in a child -------------------------------------------------------------- */

struct bound_case {
	int keep_first;
	const uint8_t *bytes;    /* the merge's output */
	size_t len;
	size_t piece;            /* written and taken in pieces of this */
	int out;                 /* 0 the file, 1 a closed pipe, 2 /dev/full */
	int no_track;            /* the command's track unknown */
};

struct result {
	int status;              /* the child's exit status */
	int finish;              /* rec_bound_finish's return, + 10 * epipe */
	char err[1024];          /* its stderr */
	uint64_t ranges, dropped, first_kept, last_kept, bad_names;
	char reason[256];
};

static uint32_t
track_77(void *arg)
{
	return *(uint32_t *)arg;
}

static void
child(const struct bound_case *c, int report)
{
	struct rec_options o = { 0 };
	o.max_size = BOUND;
	o.max_size_text = "64K";
	o.max_size_keep_first = c->keep_first;
	int fd = rec_bound_open(&o, spool);
	for (size_t at = 0; at < c->len; at += c->piece) {
		size_t n = c->len - at < c->piece ? c->len - at : c->piece;
		if (write(fd, c->bytes + at, n) != (ssize_t)n)
			_exit(3);
		rec_bound_take();
	}
	/* the process and run events: the command's process alone */
	int lives_fd = memfd_create("lives", MFD_CLOEXEC);
	struct tk_writer *lives = tk_writer_new();
	struct tk_writer_options lo = TK_WRITER_OPTIONS_INIT;
	lo.level = 0;
	if (lives_fd < 0 || !lives || tk_writer_open_fd(lives, lives_fd, "(lifetimes)", &lo))
		_exit(3);
	struct tk_process p = { "host", 77, 1, 1, 0, NULL, "" };
	uint32_t track = c->no_track ? 0 : tk_writer_process(lives, 0, &p);
	int out;
	if (c->out == 1) {
		int fds[2];
		if (pipe(fds) < 0)
			_exit(3);
		close(fds[0]);
		out = fds[1];
	} else {
		out = open(c->out == 2 ? "/dev/full" : out_path,
		           O_WRONLY | O_CREAT | O_TRUNC, 0600);
	}
	int epipe = 0;
	int r = rec_bound_finish(out, "OUT", spool, lives, lives_fd, track_77, &track,
	                         &epipe);
	r = r + 10 * epipe;
	if (write(report, &r, sizeof(r)) != sizeof(r))
		_exit(3);
	tk_writer_free(lives);
	rec_bound_free();
	exit(0);
}

static void
run_case(const struct bound_case *c, struct result *res)
{
	memset(res, 0, sizeof(*res));
	res->finish = -99;
	res->first_kept = UINT64_MAX;
	unlink(out_path);
	mkdir(spool, 0700);
	int errp[2], rep[2];
	if (pipe(errp) < 0 || pipe(rep) < 0)
		abort();
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGPIPE, SIG_IGN);
		dup2(errp[1], 2);
		close(errp[0]);
		close(rep[0]);
		child(c, rep[1]);
	}
	close(errp[1]);
	close(rep[1]);
	size_t n = 0;
	ssize_t k;
	while ((k = read(errp[0], res->err + n, sizeof(res->err) - 1 - n)) > 0)
		n += (size_t)k;
	res->err[n] = 0;
	close(errp[0]);
	if (read(rep[0], &res->finish, sizeof(res->finish)) != sizeof(res->finish))
		res->finish = -99;
	close(rep[0]);
	int st;
	waitpid(pid, &st, 0);
	res->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	/* the spool's files of the bound, left by a child that died */
	char path[200];
	const char *files[] = { "bounded", "bounded-defs", "bounded-kept" };
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", spool, files[i]);
		unlink(path);
	}
	rmdir(spool);
	if (res->status || c->out)
		return;
	struct tk_reader *r = tk_reader_new();
	const struct tk_event *e;
	if (tk_reader_open_path(r, out_path) != TK_OK)
		abort();
	while (tk_reader_next_event(r, &e) == TK_OK) {
		if (e->kind == TK_RANGE) {
			uint64_t i = (uint64_t)(e->ts - 1000) / 10;
			res->ranges++;
			if (i < res->first_kept)
				res->first_kept = i;
			if (i > res->last_kept)
				res->last_kept = i;
			if (strcmp(e->name, "common") != 0 ||
			    e->trk->type != TK_TRACK_THREAD || e->trk->u.thread.tid != 77)
				res->bad_names++;
		} else if (e->kind == TK_DROPPED) {
			res->dropped += e->u.dropped.count;
			snprintf(res->reason, sizeof(res->reason), "%s %s", e->name,
			         e->u.dropped.reason);
		}
	}
	tk_reader_free(r);
}

/* ---- cases ------------------------------------------------------------------------------ */

/* The newest kept, the file taken in pieces that cut its header and its
 * chunks anywhere: the kept ranges are the last ones, each under the
 * name and thread defined in the first (discarded) chunk; kept and
 * dropped add up to what was written, the output within the bound. */
TEST(bound_newest_in_pieces)
{
	size_t len;
	uint8_t *bytes = merge_output(0, &len);
	size_t pieces[] = { 5, 4093, 16411, len };
	for (size_t i = 0; i < 4; i++) {
		struct bound_case c = { .bytes = bytes, .len = len, .piece = pieces[i] };
		struct result r;
		run_case(&c, &r);
		CHECK_EQ_INT(r.status, 0);
		CHECK_EQ_INT(r.finish, 0);
		CHECK_STR(r.err, "");
		CHECK(r.ranges > 1000 && r.ranges < NEVENTS / 2);
		CHECK_EQ_INT(r.ranges + r.dropped, NEVENTS);
		CHECK_EQ_INT(r.last_kept, NEVENTS - 1);
		CHECK_EQ_INT(r.last_kept - r.first_kept + 1, r.ranges);
		CHECK_EQ_INT(r.bad_names, 0);
		CHECK_STR(r.reason, "range --max-size 64K: older events discarded, "
		                    "the newest kept");
		struct stat st;
		CHECK(stat(out_path, &st) == 0 && (uint64_t)st.st_size <= 2 * BOUND);
	}
	free(bytes);
}

/* The first kept: the kept ranges are the first ones. */
TEST(bound_first)
{
	size_t len;
	uint8_t *bytes = merge_output(6, &len);
	struct bound_case c = { .keep_first = 1, .bytes = bytes, .len = len,
	                        .piece = 30000 };
	struct result r;
	run_case(&c, &r);
	CHECK_EQ_INT(r.status, 0);
	CHECK_STR(r.err, "");
	CHECK(r.ranges > 1000 && r.ranges < NEVENTS);
	CHECK_EQ_INT(r.ranges + r.dropped, NEVENTS);
	CHECK_EQ_INT(r.first_kept, 0);
	CHECK_EQ_INT(r.last_kept + 1, r.ranges);
	CHECK_EQ_INT(r.bad_names, 0);
	CHECK_STR(r.reason, "range --max-size 64K: later events discarded, "
	                    "the first kept");
	/* without the command's track the drops have nowhere to go */
	c.no_track = 1;
	run_case(&c, &r);
	CHECK_EQ_INT(r.status, 0);
	CHECK(r.ranges > 1000 && r.ranges < NEVENTS);
	CHECK_EQ_INT(r.dropped, 0);
	free(bytes);
}

/* The output cannot be written: a reader gone is no message (EPIPE
 * said to the caller), a full disk is one. */
TEST(bound_output_fails)
{
	size_t len;
	uint8_t *bytes = merge_output(6, &len);
	struct bound_case c = { .bytes = bytes, .len = len, .piece = len, .out = 1 };
	struct result r;
	run_case(&c, &r);
	CHECK_EQ_INT(r.status, 0);
	CHECK_EQ_INT(r.finish, -1 + 10);
	CHECK_STR(r.err, "");
	c.out = 2;
	run_case(&c, &r);
	CHECK_EQ_INT(r.status, 0);
	CHECK_EQ_INT(r.finish, -1);
	CHECK_STR(r.err, "test_bound: OUT: No space left on device\n");
	free(bytes);
}

/* The bound's file damaged under it: one line, exit 125 (a damaged
 * chunk names its byte); a checksum alone damaged in a chunk discarded
 * stops the count with a warning, the rest goes on. */
TEST(bound_damaged_file)
{
	size_t len;
	uint8_t *stored = merge_output(0, &len), *deflated;
	size_t dlen;
	deflated = merge_output(6, &dlen);
	uint8_t *b = malloc(len > dlen ? len : dlen);
	char expect[1024];
	struct result r;
	struct bound_case c = { .bytes = b, .len = len, .piece = len };
	uint32_t head = get32(stored + 12);

	/* a file header length under its own size, or over 4096 */
	memcpy(b, stored, len);
	put32(b + 12, 8);
	run_case(&c, &r);
	CHECK_EQ_INT(r.status, 125);
	snprintf(expect, sizeof(expect), "test_bound: %s/bounded: bad file header\n", spool);
	CHECK_STR(r.err, expect);
	put32(b + 12, 5000);
	run_case(&c, &r);
	CHECK_EQ_INT(r.status, 125);
	CHECK_STR(r.err, expect);

	/* a chunk's magic, or a chunk header length under 56 */
	size_t at = chunk_at(stored, 3);
	snprintf(expect, sizeof(expect), "test_bound: %s/bounded: bad chunk at byte %zu\n",
	         spool, at);
	memcpy(b, stored, len);
	b[at + 1] ^= 0x20;
	run_case(&c, &r);
	CHECK_EQ_INT(r.status, 125);
	CHECK_STR(r.err, expect);
	memcpy(b, stored, len);
	put32(b + at + 4, 40);
	run_case(&c, &r);
	CHECK_EQ_INT(r.status, 125);
	CHECK_STR(r.err, expect);

	/* a stored chunk whose definitions are longer than its payload,
	 * and a deflated one whose payload does not inflate: both
	 * discarded, the counting reader sees the damage first */
	for (int d = 0; d < 2; d++) {
		const uint8_t *src = d ? deflated : stored;
		c.len = d ? dlen : len;
		memcpy(b, src, c.len);
		at = chunk_at(src, 1);
		uint32_t hsz = get32(src + at + 4);
		if (d)
			memset(b + at + hsz + 2, 0x55, 16);
		else
			memcpy(b + at + hsz, "\xff\xff\x0f", 3);
		run_case(&c, &r);
		CHECK_EQ_INT(r.status, 125);
		snprintf(expect, sizeof(expect), "%s/bounded: damaged chunk at byte %zu\n",
		         spool, at);
		size_t el = strlen(expect), rl = strlen(r.err);
		if (rl < el || strcmp(r.err + rl - el, expect) != 0)
			fprintf(stderr, "# %s", r.err);
		CHECK(rl >= el && strcmp(r.err + rl - el, expect) == 0);
		CHECK(strstr(r.err, "the count of discarded events stops here"));
	}

	/* a checksum alone: counted up to there, definitions kept */
	c.len = len;
	memcpy(b, stored, len);
	at = chunk_at(stored, 2);
	b[at + 52] ^= 1;
	run_case(&c, &r);
	CHECK_EQ_INT(r.status, 0);
	CHECK(strstr(r.err, "the count of discarded events stops here") != NULL);
	CHECK(strchr(r.err, '\n') == r.err + strlen(r.err) - 1);    /* one line */
	CHECK_EQ_INT(r.bad_names, 0);
	CHECK_EQ_INT(r.last_kept, NEVENTS - 1);
	CHECK(r.dropped > 0 && r.ranges + r.dropped < NEVENTS);
	(void)head;
	free(b);
	free(stored);
	free(deflated);
}

int
main(void)
{
	if (!mkdtemp(dir))
		return 1;
	snprintf(spool, sizeof(spool), "%s/spool", dir);
	snprintf(out_path, sizeof(out_path), "%s/out.tkt", dir);
	cmd_init("test_bound");
	RUN(bound_newest_in_pieces);
	RUN(bound_first);
	RUN(bound_output_fails);
	RUN(bound_damaged_file);
	unlink(out_path);
	rmdir(dir);
	return tap_done();
}
