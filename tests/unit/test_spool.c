/* SPDX-License-Identifier: MIT */
/*
 * trace-record's spools (cmd/trace-record/spool.c) on spool directories
 * filled here by hand: spools written with the library's writer, status
 * pages laid out as lib/inject/protocol.h says, names that are not
 * spools, headers that do not hold.  What the programs would have left
 * in odd moments: a process still running at the end, one that exec'd,
 * a status page of another format, a damaged spool.
 *
 * Each case runs in a child (the spool and output modules are opened
 * once per process, rec_die exits); the parent reads its trace and its
 * stderr.  The process of the spools is the child itself (its /proc
 * entry is real).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "tracekit.h"
#include "inject/protocol.h"
#include "trace-record/record.h"

#define T_INIT 1000

static char dir[] = "/tmp/tk-test-spool-XXXXXX";
static char trace[100];

enum { SPOOL_CLOSED, SPOOL_OPEN, SPOOL_BAD_HEADER, SPOOL_BAD_CHUNK };

struct spool_case {
	int spool;               /* SPOOL_*, or -1: none */
	int status;              /* 0 none, 1 ours, 2 another magic */
	uint64_t produced;       /* the status page's count */
	uint64_t nomem;          /* of them, lost for want of memory */
	int exec;                /* the process exec'd after the spool began */
	int late_start;          /* the process began after the spool's events */
	int junk;                /* files that are not spools */
	const char *tmpdir;      /* TMPDIR for the spool directory */
};

struct result {
	int status;
	char err[1024];
	char list[2048];         /* "M name ts" and "D name count reason" */
};

/* The spool of `pid`: three marks at 100, 200, 300, as its library
 * writes it (a process, a thread), closed (an end marker) or not. */
static void
write_spool(const char *path, pid_t pid, int kind)
{
	struct tk_writer *w = tk_writer_new();
	if (!w || tk_writer_open_path(w, path, NULL) != TK_OK)
		abort();
	struct tk_process p = { "host", pid, 1, T_INIT, 0, NULL, "" };
	struct tk_thread th = { tk_writer_process(w, 0, &p), pid, "main" };
	uint32_t track = tk_writer_thread(w, 0, &th);
	for (int i = 1; i <= 3; i++) {
		struct tk_event e = { 0 };
		e.kind = TK_MARK;
		e.track = track;
		e.ts = 100 * i;
		e.name = "mark";
		tk_writer_event(w, &e);
	}
	tk_writer_watermark(w, 300);
	if (kind == SPOOL_CLOSED ? tk_writer_close(w) : tk_writer_flush(w))
		abort();
	tk_writer_free(w);
	if (kind == SPOOL_BAD_HEADER || kind == SPOOL_BAD_CHUNK) {
		/* the file header's length, or the first chunk's header length */
		int fd = open(path, O_RDWR);
		uint8_t h[16];
		if (fd < 0 || pread(fd, h, 16, 0) != 16)
			abort();
		uint32_t hs = (uint32_t)h[12] | (uint32_t)h[13] << 8;
		uint8_t bad[4] = { 8, 0, 0, 0 };
		if (pwrite(fd, bad, 4, kind == SPOOL_BAD_HEADER ? 12 : hs + 4) != 4)
			abort();
		close(fd);
	}
}

static void
write_status(const char *path, pid_t pid, int kind, uint64_t produced, uint64_t nomem)
{
	struct tki_status *st = calloc(1, sizeof(*st));
	if (!st)
		abort();
	st->magic = kind == 1 ? TKI_STATUS_MAGIC : TKI_STATUS_MAGIC + 1;
	st->slots = TKI_STATUS_SLOTS;
	st->pid = pid;
	st->open_since = INT64_MAX;
	st->committed = UINT64_MAX;
	st->slot[0].produced = produced - nomem;
	st->direct = nomem;      /* the library counts them as its own */
	st->nomem = nomem;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, st, sizeof(*st)) != (ssize_t)sizeof(*st))
		abort();
	close(fd);
	free(st);
}

static uint32_t
no_track(void *arg)
{
	(void)arg;
	return 0;
}

static void
child(const struct spool_case *c)
{
	if (c->tmpdir)
		setenv("TMPDIR", c->tmpdir, 1);
	else
		setenv("TMPDIR", dir, 1);
	struct recorder rc = { 0 };
	rc.recording = 1;
	rc.opt.flush_ns = 1000000000;
	rc.opt.output = trace;
	rc.win_begin = INT64_MIN;
	rc.win_end = INT64_MAX;
	rc.run = 1;
	rc.spool = rec_spool_create();
	rec_out_open(&rc.opt, rc.spool);
	pid_t pid = getpid();
	struct rec_proc *p = rec_proc_add(&rc, pid, getppid(),
	                                  c->late_start ? 350 : 50);
	if (c->exec)
		p->exec_ts = T_INIT + 1;
	char path[600];
	if (c->junk) {
		const char *junk[] = { "9junk", "12-34.tkx", "12-abc.tkt", "7-8" };
		for (size_t i = 0; i < 4; i++) {
			snprintf(path, sizeof(path), "%s/%s", rc.spool, junk[i]);
			close(open(path, O_WRONLY | O_CREAT, 0600));
		}
	}
	if (c->status) {
		snprintf(path, sizeof(path), "%s/%d-%d.st", rc.spool, (int)pid, T_INIT);
		write_status(path, pid, c->status, c->produced, c->nomem);
	}
	if (c->spool >= 0) {
		snprintf(path, sizeof(path), "%s/%d-%d.tkt", rc.spool, (int)pid, T_INIT);
		write_spool(path, pid, c->spool);
	}
	rec_spools_pump(&rc, 0);
	rec_spools_pump(&rc, 1);
	int r = rec_out_finish(no_track, NULL);
	rec_spool_remove(rc.spool);
	rec_spools_free();
	rec_procs_free();
	exit(r < 0 ? 4 : 0);
}

static int
cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of `s` in order (the merge orders events of equal times
 * as it likes). */
static void
sort_lines(char *s)
{
	char *copy = strdup(s), *lines[64], *save = NULL;
	size_t n = 0;
	for (char *l = strtok_r(copy, "\n", &save); l && n < 64; l = strtok_r(NULL, "\n", &save))
		lines[n++] = l;
	qsort(lines, n, sizeof(lines[0]), cmp_lines);
	s[0] = 0;
	for (size_t i = 0; i < n; i++) {
		strcat(s, lines[i]);
		strcat(s, "\n");
	}
	free(copy);
}

static void
run_case(const struct spool_case *c, struct result *res)
{
	memset(res, 0, sizeof(*res));
	unlink(trace);
	int errp[2];
	if (pipe(errp) < 0)
		abort();
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(errp[1], 2);
		close(errp[0]);
		child(c);
	}
	close(errp[1]);
	size_t n = 0;
	ssize_t k;
	while ((k = read(errp[0], res->err + n, sizeof(res->err) - 1 - n)) > 0)
		n += (size_t)k;
	res->err[n] = 0;
	close(errp[0]);
	int st;
	waitpid(pid, &st, 0);
	res->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	struct tk_reader *r = tk_reader_new();
	const struct tk_event *e;
	if (tk_reader_open_path(r, trace) != TK_OK) {
		tk_reader_free(r);
		return;
	}
	size_t at = 0;
	while (tk_reader_next_event(r, &e) == TK_OK && at < sizeof(res->list) - 200) {
		if (e->kind == TK_MARK)
			at += (size_t)snprintf(res->list + at, sizeof(res->list) - at,
			                       "M %s %lld\n", e->name, (long long)e->ts);
		else if (e->kind == TK_DROPPED)
			at += (size_t)snprintf(res->list + at, sizeof(res->list) - at,
			                       "D %s %llu %lld %s\n", e->name,
			                       (unsigned long long)e->u.dropped.count,
			                       (long long)e->ts, e->u.dropped.reason);
	}
	tk_reader_free(r);
	sort_lines(res->list);
}

static const char marks[] = "M mark 100\nM mark 200\nM mark 300\n";

/* A closed spool among files that are not spools, its status page of
 * another format (not read): its events, nothing dropped. */
TEST(spool_closed_among_junk)
{
	struct spool_case c = { .spool = SPOOL_CLOSED, .status = 2, .produced = 9,
	                        .junk = 1 };
	struct result r;
	run_case(&c, &r);
	CHECK_EQ_INT(r.status, 0);
	CHECK_STR(r.err, "");
	CHECK_STR(r.list, marks);
}

/* The process still runs when the recording ends, its spool not
 * closed: what it counted and the spool lacks is dropped, from its
 * start when that is after the spool's last watermark. */
TEST(spool_still_running)
{
	struct spool_case c = { .spool = SPOOL_OPEN, .status = 1, .produced = 5,
	                        .late_start = 1 };
	struct result r;
	run_case(&c, &r);
	CHECK_EQ_INT(r.status, 0);
	CHECK_STR(r.err, "");
	CHECK_STR(r.list, "D nvtx 2 350 the process was still running when the "
	                  "recording ended\n"
	                  "M mark 100\nM mark 200\nM mark 300\n");
	c.late_start = 0;
	c.produced = 3;          /* all of them in the spool */
	run_case(&c, &r);
	CHECK_STR(r.list, marks);
}

/* Records lost for want of memory say so, apart from the rest; no more
 * of them than are missing. */
TEST(spool_nomem)
{
	struct spool_case c = { .spool = SPOOL_CLOSED, .status = 1, .produced = 6,
	                        .nomem = 2 };
	struct result r;
	run_case(&c, &r);
	CHECK_EQ_INT(r.status, 0);
	CHECK_STR(r.list, "D nvtx 1 1000 the process was still running when the "
	                  "recording ended\n"
	                  "D nvtx 2 1000 the process ran out of memory recording them "
	                  "(no buffers for a thread, or for its nesting levels)\n"
	                  "M mark 100\nM mark 200\nM mark 300\n");
	c.produced = 4;
	c.nomem = 3;
	run_case(&c, &r);
	CHECK_STR(r.list, "D nvtx 1 1000 the process ran out of memory recording them "
	                  "(no buffers for a thread, or for its nesting levels)\n"
	                  "M mark 100\nM mark 200\nM mark 300\n");
}

/* The process exec'd after its spool began, before its last flush. */
TEST(spool_exec)
{
	struct spool_case c = { .spool = SPOOL_OPEN, .status = 1, .produced = 4,
	                        .exec = 1 };
	struct result r;
	run_case(&c, &r);
	CHECK_EQ_INT(r.status, 0);
	CHECK_STR(r.err, "");
	CHECK_STR(r.list, "D nvtx 1 300 the process exec'd before its last flush\n"
	                  "M mark 100\nM mark 200\nM mark 300\n");
}

/* A spool whose file header or first chunk header does not hold: said
 * once, naming the process; its events are counted as lost (its status
 * page counted them); trace-record goes on. */
TEST(spool_damaged)
{
	static const char *const said[] = { "corrupt header at byte 0 (size 8)\n",
	                                    "corrupt chunk at byte " };
	for (int kind = SPOOL_BAD_HEADER; kind <= SPOOL_BAD_CHUNK; kind++) {
		struct spool_case c = { .spool = kind, .status = 1, .produced = 3 };
		struct result r;
		run_case(&c, &r);
		CHECK_EQ_INT(r.status, 0);
		CHECK(strncmp(r.err, "test_spool: spool of pid ", 25) == 0);
		CHECK(strstr(r.err, said[kind - SPOOL_BAD_HEADER]) != NULL);
		CHECK(strchr(r.err, '\n') == r.err + strlen(r.err) - 1);
		CHECK(strncmp(r.list, "D nvtx 3 ", 9) == 0 && !strstr(r.list, "M mark"));
	}
}

/* TMPDIR empty is no TMPDIR; one that cannot hold the spool directory
 * is said, and /tmp is used. */
TEST(spool_directory)
{
	struct spool_case c = { .spool = SPOOL_CLOSED, .status = 1, .produced = 3,
	                        .tmpdir = "" };
	struct result r;
	run_case(&c, &r);
	CHECK_EQ_INT(r.status, 0);
	CHECK_STR(r.err, "");
	CHECK_STR(r.list, marks);
	c.tmpdir = "/nonexistent-tk-test";
	run_case(&c, &r);
	CHECK_EQ_INT(r.status, 0);
	CHECK_STR(r.err, "test_spool: cannot create files in TMPDIR=/nonexistent-tk-test "
	                 "(No such file or directory); spooling in /tmp\n");
	CHECK_STR(r.list, marks);
}

int
main(void)
{
	if (!mkdtemp(dir))
		return 1;
	snprintf(trace, sizeof(trace), "%s/out.tkt", dir);
	cmd_init("test_spool");
	RUN(spool_closed_among_junk);
	RUN(spool_still_running);
	RUN(spool_exec);
	RUN(spool_nomem);
	RUN(spool_damaged);
	RUN(spool_directory);
	unlink(trace);
	rmdir(dir);
	return tap_done();
}
