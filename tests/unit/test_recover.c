/* SPDX-License-Identifier: MIT */
/*
 * trace-record's recovery (cmd/trace-record/recover.c) on durable
 * buffer files written byte by byte here, as lib/inject/protocol.h lays
 * them out: what a process that died without its last flush left, whole
 * and damaged.  The recorded program owns that file and may scribble on
 * it; every damage must leave out what does not hold, write nothing
 * twice and neither crash nor hang.
 *
 * Each case runs the recovery in a child process (rec_die exits, and
 * the output module is opened once per process), into a trace file that
 * the parent reads back with the library's reader.  What is expected is
 * written out by hand from the bytes each case lays down.
 */
#include <fcntl.h>
#include <stdatomic.h>
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

#define NUNITS 4u
#define NAMES_CAP (64u << 10)
#define SNAP_CAP (64u << 10)
#define PID 4242
#define TID2 4243

static char dir[] = "/tmp/tk-test-recover-XXXXXX";

/* ---- a durable buffer file, built in memory ---------------------------------------- */

struct dbuf {
	uint8_t *m;
	size_t size;
	struct tki_buf_head *h;
	uint32_t used[NUNITS];   /* bytes written in each unit's block */
};

static void
dbuf_init(struct dbuf *b)
{
	uint64_t thread_off = 4096;
	uint64_t names_off = thread_off + TKI_BUF_THREADS * sizeof(struct tki_buf_thread);
	uint64_t snap0 = names_off + NAMES_CAP, snap1 = snap0 + SNAP_CAP;
	uint64_t blocks = (snap1 + SNAP_CAP + 4095) & ~(uint64_t)4095;
	memset(b, 0, sizeof(*b));
	b->size = blocks + (uint64_t)NUNITS * TKI_BUF_UNIT;
	b->m = calloc(1, b->size);
	if (!b->m)
		abort();
	struct tki_buf_head *h = b->h = (struct tki_buf_head *)b->m;
	h->magic = TKI_BUF_MAGIC;
	h->unit = TKI_BUF_UNIT;
	h->nunits = NUNITS;
	h->nthreads = TKI_BUF_THREADS;
	h->size = b->size;
	h->thread_off = thread_off;
	h->names_off = names_off;
	h->names_cap = NAMES_CAP;
	h->snap_off[0] = snap0;
	h->snap_off[1] = snap1;
	h->snap_cap = SNAP_CAP;
	h->snap_cur = 2;         /* none committed */
	h->blocks_off = blocks;
	h->win_end = INT64_MAX;
	for (uint32_t u = 0; u < NUNITS; u++) {
		struct tki_block *k = (struct tki_block *)(b->m + blocks + u * TKI_BUF_UNIT);
		k->cap = TKI_BUF_UNIT - sizeof(*k);
		k->units = 1;
	}
}

static struct tki_block *
dbuf_block(struct dbuf *b, uint32_t unit)
{
	return (struct tki_block *)(b->m + b->h->blocks_off + unit * TKI_BUF_UNIT);
}

static struct tki_buf_thread *
dbuf_slot(struct dbuf *b, uint32_t i)
{
	return (struct tki_buf_thread *)(b->m + b->h->thread_off) + i;
}

/* Slot i: a live thread `tid` whose records begin in unit `first` - 1. */
static void
dbuf_thread(struct dbuf *b, uint32_t i, int64_t tid, uint32_t first, const char *comm)
{
	struct tki_buf_thread *s = dbuf_slot(b, i);
	s->state = TKI_SLOT_LIVE;
	s->serial = 1;
	s->tid = tid;
	s->first = first;
	snprintf(s->name, sizeof(s->name), "%s", comm);
}

static void
dbuf_name(struct dbuf *b, uint32_t kind, uint64_t a, const char *s)
{
	struct tki_buf_name n = { kind, (uint32_t)strlen(s), a, 0 };
	uint8_t *p = b->m + b->h->names_off + b->h->names_len;
	memcpy(p, &n, sizeof(n));
	memcpy(p + sizeof(n), s, n.len);
	b->h->names_len += sizeof(n) + tki_pad8(n.len);
}

/* A snapshot entry appended to snapshot `cur`, which is committed. */
static struct tki_snap *
dbuf_snap(struct dbuf *b, uint32_t cur, uint32_t kind, const char *name)
{
	uint8_t *p = b->m + b->h->snap_off[cur] + b->h->snap_len[cur];
	struct tki_snap *e = (struct tki_snap *)p;
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->len = (uint32_t)strlen(name);
	memcpy(p + sizeof(*e), name, e->len);
	b->h->snap_len[cur] += sizeof(*e) + tki_pad8(e->len);
	b->h->snap_cur = cur;
	return e;
}

/* A record appended to the block of unit `unit`: header, the id of a
 * start or end, attributes when `attrs`, then a message or a pop. */
struct rec_spec {
	uint8_t type;
	int64_t ts;
	uint64_t id;
	uint32_t level;          /* push: opens; pop: closes */
	const char *name;        /* inline message */
	uint32_t string;         /* registered string id instead */
	int attrs;
	uint32_t size;           /* 0: the right size; else this one */
};

static uint32_t
dbuf_rec(struct dbuf *b, uint32_t unit, const struct rec_spec *s)
{
	struct tki_block *k = dbuf_block(b, unit);
	uint8_t *start = k->data + b->used[unit], *p = start + sizeof(struct tki_rec);
	if (s->type == TKI_REC_START || s->type == TKI_REC_END) {
		memcpy(p, &s->id, 8);
		p += 8;
	}
	if (s->type == TKI_REC_POP) {
		struct tki_pop pop = { s->level, 0 };
		memcpy(p, &pop, sizeof(pop));
		p += sizeof(pop);
	} else if (s->type != TKI_REC_END) {
		if (s->attrs) {
			struct tki_attrs a = { 7, 0xff00ff00u, TK_PAYLOAD_UINT, 0, 99 };
			memcpy(p, &a, sizeof(a));
			p += sizeof(a);
		}
		const char *name = s->name ? s->name : "";
		struct tki_msg m = { s->string ? 0 : (uint32_t)strlen(name), s->string,
		                     s->level, 0 };
		memcpy(p, &m, sizeof(m));
		p += sizeof(m);
		memcpy(p, name, m.len);
		p += tki_pad8(m.len);
	}
	struct tki_rec h = { s->type, s->attrs ? TKI_F_ATTRS : 0, 0,
	                     s->size ? s->size : (uint32_t)(p - start), s->ts };
	memcpy(start, &h, sizeof(h));
	b->used[unit] += (uint32_t)(p - start);
	atomic_store(&k->used, b->used[unit]);
	return (uint32_t)(p - start);
}

static void
push(struct dbuf *b, uint32_t unit, int64_t ts, uint32_t level, const char *name)
{
	dbuf_rec(b, unit, &(struct rec_spec){ .type = TKI_REC_PUSH, .ts = ts,
	                                      .level = level, .name = name });
}

static void
pop(struct dbuf *b, uint32_t unit, int64_t ts, uint32_t level)
{
	dbuf_rec(b, unit, &(struct rec_spec){ .type = TKI_REC_POP, .ts = ts,
	                                      .level = level });
}

static void
dbuf_write(const struct dbuf *b, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, b->m, b->size) != (ssize_t)b->size || close(fd) < 0)
		abort();
}

/* ---- running the recovery ---------------------------------------------------------- */

struct outcome {
	int status;              /* the child's exit status */
	uint64_t events;         /* rec_recover's count */
	char list[8192];         /* the trace's events, one a line, sorted */
};

static uint32_t
no_track(void *arg)
{
	(void)arg;
	return 0;
}

static int
cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static const char *
tid_of(const struct tk_reader *r, uint32_t track, char *buf, size_t n)
{
	const struct tk_track *t = tk_reader_track(r, track);
	if (!t || t->type != TK_TRACK_THREAD)
		snprintf(buf, n, "proc");
	else if (t->u.thread.name[0])
		snprintf(buf, n, "%lld:%s", (long long)t->u.thread.tid, t->u.thread.name);
	else
		snprintf(buf, n, "%lld", (long long)t->u.thread.tid);
	return buf;
}

/* The events of the trace at `path` as sorted lines:
 * "R name ts dur tid[ u]" ranges, "A name ts dur tid>endtid id[ u]" async
 * ranges, "M name ts tid" marks, "D name count ts dur tid" drops. */
static void
list_events(const char *path, char *out, size_t n)
{
	struct tk_reader *r = tk_reader_new();
	const struct tk_event *e;
	char *lines[256];
	size_t nl = 0;
	out[0] = 0;
	if (tk_reader_open_path(r, path) != TK_OK) {
		snprintf(out, n, "(unreadable: %s)", tk_reader_error(r));
		tk_reader_free(r);
		return;
	}
	while (nl < 256 && tk_reader_next_event(r, &e) == TK_OK) {
		char line[512], t1[96], t2[96];
		int u = e->args && strstr(e->args, "\"unfinished\":true");
		tid_of(r, e->track, t1, sizeof(t1));
		switch (e->kind) {
		case TK_RANGE:
			snprintf(line, sizeof(line), "R %s %lld %lld %s%s", e->name,
			         (long long)e->ts, (long long)e->dur, t1, u ? " u" : "");
			break;
		case TK_ASYNC_RANGE:
			snprintf(line, sizeof(line), "A %s %lld %lld %s>%s %llu%s", e->name,
			         (long long)e->ts, (long long)e->dur, t1,
			         e->u.range.end_track
			         ? tid_of(r, e->u.range.end_track, t2, sizeof(t2)) : "=",
			         (unsigned long long)e->u.range.id, u ? " u" : "");
			break;
		case TK_MARK:
			snprintf(line, sizeof(line), "M %s %lld %s", e->name,
			         (long long)e->ts, t1);
			break;
		case TK_DROPPED:
			snprintf(line, sizeof(line), "D %s %llu %lld %lld %s", e->name,
			         (unsigned long long)e->u.dropped.count, (long long)e->ts,
			         (long long)e->dur, t1);
			break;
		default:
			snprintf(line, sizeof(line), "? kind %u", e->kind);
		}
		lines[nl++] = strdup(line);
	}
	qsort(lines, nl, sizeof(lines[0]), cmp_lines);
	size_t at = 0;
	for (size_t i = 0; i < nl; i++) {
		at += (size_t)snprintf(out + at, at < n ? n - at : 0, "%s\n", lines[i]);
		free(lines[i]);
	}
	tk_reader_free(r);
}

/* Recover the file `b` as process PID that died at `end`, what it had
 * dropped reported from `from` with `why`. */
static void
recover(const struct dbuf *b, int64_t end, int64_t from, const char *why,
        struct outcome *o)
{
	char buf[512], trace[512], spool[512];
	snprintf(buf, sizeof(buf), "%s/p.buf", dir);
	snprintf(trace, sizeof(trace), "%s/out.tkt", dir);
	snprintf(spool, sizeof(spool), "%s/spool", dir);
	if (b)
		dbuf_write(b, buf);
	else
		unlink(buf);
	unlink(trace);
	mkdir(spool, 0700);
	int fds[2];
	if (pipe(fds) < 0)
		abort();
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		struct rec_options opt = { 0 };
		opt.output = trace;
		rec_out_open(&opt, spool);
		struct tk_process p = { "host", PID, 1, 1, 0, NULL, "" };
		uint32_t track = tk_writer_process(rec_self(), 0, &p);
		uint64_t n = rec_recover(buf, track, end, from, why);
		if (write(fds[1], &n, sizeof(n)) != sizeof(n))
			_exit(3);
		exit(rec_out_finish(no_track, NULL) < 0 ? 4 : 0);
	}
	close(fds[1]);
	o->events = UINT64_MAX;
	if (read(fds[0], &o->events, sizeof(o->events)) != sizeof(o->events))
		o->events = UINT64_MAX;
	close(fds[0]);
	int st;
	waitpid(pid, &st, 0);
	o->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	list_events(trace, o->list, sizeof(o->list));
	rmdir(spool);
}

#define CHECK_LIST(o, expect)                                                \
	do {                                                                 \
		CHECK_EQ_INT((o).status, 0);                                 \
		CHECK_STR((o).list, expect);                                 \
	} while (0)

/* ---- whole files -------------------------------------------------------------------- */

/* No snapshot yet: every thread from its first block; pairs of every
 * kind, a mark, names of every source, what is open ends at death. */
TEST(recover_whole_file)
{
	struct dbuf b;
	struct outcome o;
	dbuf_init(&b);
	dbuf_thread(&b, 0, PID, 1, "main");
	dbuf_thread(&b, 1, TID2, 2, "worker-kernel-name");
	dbuf_name(&b, TKI_NAME_THREAD, TID2, "loader");
	dbuf_name(&b, TKI_NAME_STRING, 5, "registered");
	push(&b, 0, 100, 1, "A");
	dbuf_rec(&b, 0, &(struct rec_spec){ .type = TKI_REC_MARK, .ts = 150,
	                                    .name = "m", .attrs = 1 });
	pop(&b, 0, 200, 1);
	dbuf_rec(&b, 0, &(struct rec_spec){ .type = TKI_REC_START, .ts = 120, .id = 7,
	                                    .string = 5 });
	dbuf_rec(&b, 1, &(struct rec_spec){ .type = TKI_REC_END, .ts = 300, .id = 7 });
	push(&b, 1, 400, 1, "open");
	/* an unknown registered string: no name */
	dbuf_rec(&b, 1, &(struct rec_spec){ .type = TKI_REC_MARK, .ts = 410,
	                                    .string = 6 });
	recover(&b, 1000, 900, NULL, &o);
	CHECK_LIST(o, "A registered 120 180 4242:main>4243:loader 7\n"
	              "M  410 4243:loader\n"
	              "M m 150 4242:main\n"
	              "R A 100 100 4242:main\n"
	              "R open 400 600 4243:loader u\n");
	CHECK_EQ_INT(o.events, 5);
	free(b.m);
}

/* The snapshot says where each thread stood: ranges open then end in
 * the records after it, an end seen before its start pairs with the
 * start read now, a thread that ended is not read, a slot it does not
 * name (a thread attached since) is read from its first block. */
TEST(recover_from_snapshot)
{
	struct dbuf b;
	struct outcome o;
	dbuf_init(&b);
	dbuf_thread(&b, 0, PID, 1, "main");
	dbuf_thread(&b, 1, TID2, 2, "t2");
	dbuf_thread(&b, 2, 4244, 3, "done");
	dbuf_thread(&b, 3, 4245, 4, "new");
	push(&b, 0, 10, 1, "written");      /* in the spool already */
	pop(&b, 0, 20, 1);
	uint32_t pos = b.used[0];
	pop(&b, 0, 500, 1);                  /* ends the snapshot's open push */
	dbuf_rec(&b, 1, &(struct rec_spec){ .type = TKI_REC_START, .ts = 50, .id = 9,
	                                    .name = "late" });
	push(&b, 2, 30, 1, "never read");
	push(&b, 3, 600, 1, "fresh");
	pop(&b, 3, 650, 1);
	struct tki_snap *e = dbuf_snap(&b, 1, TKI_SNAP_THREAD, "");
	e->slot = 0, e->serial = 1, e->block = 1, e->pos = pos;
	e = dbuf_snap(&b, 1, TKI_SNAP_THREAD, "");
	e->slot = 1, e->serial = 1, e->block = 2, e->pos = 0;
	e = dbuf_snap(&b, 1, TKI_SNAP_THREAD, "");
	e->slot = 2, e->serial = 1, e->block = 0;   /* ended, all written */
	e = dbuf_snap(&b, 1, TKI_SNAP_PUSH, "outer");
	e->tid = PID, e->ts = 300, e->level = 1;
	e = dbuf_snap(&b, 1, TKI_SNAP_PENDING, "");
	e->tid = PID, e->ts = 80, e->id = 9;
	e = dbuf_snap(&b, 1, TKI_SNAP_ASYNC, "async-open");
	e->tid = TID2, e->ts = 40, e->id = 11;
	recover(&b, 1000, 900, NULL, &o);
	CHECK_LIST(o, "A async-open 40 960 4243:t2>= 11 u\n"
	              "A late 50 30 4243:t2>4242:main 9\n"
	              "R fresh 600 50 4245:new\n"
	              "R outer 300 200 4242:main\n");
	CHECK_EQ_INT(o.events, 4);
	free(b.m);
}

/* A pop or push lost to full buffers: a push at a level still open ends
 * the one before it (unfinished), a pop of an outer level ends the inner
 * ones too; the drops counted are written with the reason given. */
TEST(recover_lost_records)
{
	struct dbuf b;
	struct outcome o;
	dbuf_init(&b);
	dbuf_thread(&b, 0, PID, 1, "main");
	dbuf_slot(&b, 0)->dropped = 3;
	push(&b, 0, 100, 1, "first");
	push(&b, 0, 200, 1, "second");      /* first's pop was lost */
	push(&b, 0, 250, 2, "inner");
	pop(&b, 0, 400, 1);                  /* inner's pop was lost */
	recover(&b, 1000, 900, "the reason", &o);
	CHECK_LIST(o, "D nvtx 3 900 100 4242:main\n"
	              "R first 100 100 4242:main u\n"
	              "R inner 250 150 4242:main u\n"
	              "R second 200 200 4242:main\n");
	CHECK_EQ_INT(o.events, 3);
	/* the drops the last snapshot had seen are not counted again */
	struct tki_snap *e = dbuf_snap(&b, 0, TKI_SNAP_THREAD, "");
	e->slot = 0, e->serial = 1, e->block = 1, e->pos = b.used[0];
	e->dropped_seen = 1;
	recover(&b, 1000, 900, NULL, &o);
	CHECK_LIST(o, "D nvtx 2 900 100 4242:main\n");
	CHECK_EQ_INT(o.events, 0);
	/* more drops seen than the slot counts (scribbled on): none */
	e->dropped_seen = 5;
	recover(&b, 1000, 900, NULL, &o);
	CHECK_LIST(o, "");
	free(b.m);
}

/* The recording window cuts ranges at its end; CUDA activity issued
 * and never delivered is counted per kind on the process. */
TEST(recover_window_and_cuda)
{
	struct dbuf b;
	struct outcome o;
	dbuf_init(&b);
	dbuf_thread(&b, 0, PID, 1, "main");
	b.h->win_end = 500;
	push(&b, 0, 100, 1, "cut");
	pop(&b, 0, 800, 1);
	push(&b, 0, 200, 1, "inside");
	pop(&b, 0, 300, 1);
	b.h->cuda_issued[TKI_CUDA_COUNT_KERNEL] = 10;
	b.h->cuda_delivered[TKI_CUDA_COUNT_KERNEL] = 4;
	b.h->cuda_issued[TKI_CUDA_COUNT_MEMCPY] = 2;
	b.h->cuda_delivered[TKI_CUDA_COUNT_MEMCPY] = 2;
	recover(&b, 1000, 700, NULL, &o);
	CHECK_LIST(o, "D kernel 6 700 300 proc\n"
	              "R cut 100 400 4242:main u\n"
	              "R inside 200 100 4242:main\n");
	free(b.m);
}

/* Nothing to recover: no file, a file shorter than its header, another
 * magic, a closed buffer (its last flush was done). */
TEST(recover_nothing)
{
	struct dbuf b;
	struct outcome o;
	recover(NULL, 1000, 900, NULL, &o);
	CHECK_LIST(o, "");
	CHECK_EQ_INT(o.events, 0);
	dbuf_init(&b);
	dbuf_thread(&b, 0, PID, 1, "main");
	push(&b, 0, 100, 1, "A");
	size_t size = b.size;
	b.size = 100;
	recover(&b, 1000, 900, NULL, &o);
	CHECK_LIST(o, "");
	b.size = size;
	b.h->magic ^= 1;
	recover(&b, 1000, 900, NULL, &o);
	CHECK_LIST(o, "");
	b.h->magic ^= 1;
	b.h->closed = 1;
	recover(&b, 1000, 900, NULL, &o);
	CHECK_LIST(o, "");
	b.h->closed = 0;
	recover(&b, 1000, 900, NULL, &o);
	CHECK_LIST(o, "R A 100 900 4242:main u\n");
	free(b.m);
}



/* Entries that are not what they look like: a freed slot of the same
 * tid (serial 0) does not name the thread, snapshot entries without an
 * id are nothing, an end pending with no start is not written, a pop
 * passes over async and pending entries of its thread, an async range
 * that ends on its own thread has no end track, a name entry cut by the
 * log's end is not read, drops reported after the death last 0 ns; a
 * header of another unit size is not a buffer of ours. */
TEST(recover_odd_entries)
{
	struct dbuf b;
	struct outcome o;
	dbuf_init(&b);
	dbuf_thread(&b, 0, PID, 1, "main");
	dbuf_thread(&b, 1, PID, 0, "stale");
	dbuf_slot(&b, 1)->state = TKI_SLOT_FREE;
	dbuf_slot(&b, 1)->serial = 0;
	dbuf_slot(&b, 0)->dropped = 2;
	dbuf_name(&b, TKI_NAME_DOMAIN, 3, "dom-name");
	b.h->names_len -= 4;                 /* its bytes cut */
	/* (at the level the pop closes: only its id tells it apart) */
	dbuf_rec(&b, 0, &(struct rec_spec){ .type = TKI_REC_START, .ts = 100, .id = 5,
	                                    .name = "as", .level = 1 });
	push(&b, 0, 110, 1, "p");
	pop(&b, 0, 120, 1);
	dbuf_rec(&b, 0, &(struct rec_spec){ .type = TKI_REC_END, .ts = 130, .id = 5 });
	push(&b, 0, 140, 1, "q");
	struct tki_snap *e = dbuf_snap(&b, 0, TKI_SNAP_THREAD, "");
	e->slot = 0, e->serial = 1, e->block = 1, e->pos = 0;
	e = dbuf_snap(&b, 0, TKI_SNAP_ASYNC, "no id");
	e->tid = PID, e->ts = 10;
	e = dbuf_snap(&b, 0, TKI_SNAP_PENDING, "");
	e->tid = PID, e->ts = 20;
	e = dbuf_snap(&b, 0, TKI_SNAP_PENDING, "");
	e->tid = PID, e->ts = 50, e->id = 21, e->level = 1;
	recover(&b, 1000, 2000, NULL, &o);
	CHECK_LIST(o, "A as 100 30 4242:main>= 5\n"
	              "D nvtx 2 2000 0 4242:main\n"
	              "R p 110 10 4242:main\n"
	              "R q 140 860 4242:main u\n");
	CHECK_EQ_INT(o.events, 3);
	b.h->unit = 4096;
	recover(&b, 1000, 2000, NULL, &o);
	CHECK_LIST(o, "");
	char path[600];
	snprintf(path, sizeof(path), "%s/p.buf", dir);
	dbuf_write(&b, path);
	CHECK(rec_recover_spool_limit(path) == UINT64_MAX);
	free(b.m);
}

/* ---- damage inside the file ---------------------------------------------------------- */

/* A thread whose block holds A, then what `bad` lays down, then B: the
 * reading stops at what does not hold, A is kept, B left out (the
 * caller counts it lost), and nothing is written twice. */
static void
around(struct dbuf *b, const struct rec_spec *bad)
{
	dbuf_init(b);
	dbuf_thread(b, 0, PID, 1, "main");
	push(b, 0, 100, 1, "A");
	pop(b, 0, 200, 1);
	if (bad)
		dbuf_rec(b, 0, bad);
	push(b, 0, 300, 1, "B");
	pop(b, 0, 400, 1);
}

static const char only_a[] = "R A 100 100 4242:main\n";

TEST(recover_bad_records)
{
	static const struct rec_spec bad[] = {
		/* a size that is not a multiple of 8, or too small */
		{ .type = TKI_REC_PUSH, .ts = 250, .level = 1, .name = "x", .size = 44 },
		{ .type = TKI_REC_PUSH, .ts = 250, .level = 1, .name = "x", .size = 8 },
		/* a start or end cut before its id */
		{ .type = TKI_REC_START, .ts = 250, .id = 3, .name = "x", .size = 16 },
		{ .type = TKI_REC_END, .ts = 250, .id = 3, .size = 16 },
		/* a pop cut before its level */
		{ .type = TKI_REC_POP, .ts = 250, .level = 1, .size = 16 },
		/* attributes announced, not there */
		{ .type = TKI_REC_MARK, .ts = 250, .attrs = 1, .size = 32 },
		/* no message */
		{ .type = TKI_REC_MARK, .ts = 250, .size = 24 },
		/* a message longer than its record */
		{ .type = TKI_REC_MARK, .ts = 250, .name = "0123456789abcdef", .size = 40 },
		/* an unknown type */
		{ .type = 9, .ts = 250, .name = "x" },
	};
	struct dbuf b;
	struct outcome o;
	around(&b, NULL);
	recover(&b, 1000, 900, NULL, &o);
	CHECK_LIST(o, "R A 100 100 4242:main\nR B 300 100 4242:main\n");
	free(b.m);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		around(&b, &bad[i]);
		recover(&b, 1000, 900, NULL, &o);
		if (strcmp(o.list, only_a) != 0)
			fprintf(stderr, "# bad record %zu\n", i);
		CHECK_LIST(o, only_a);
		CHECK_EQ_INT(o.events, 1);
		free(b.m);
	}
	/* a record longer than what its thread published */
	around(&b, NULL);
	struct tki_block *k = dbuf_block(&b, 0);
	atomic_store(&k->used, 40 + 16);     /* A's push (40 bytes), 16 of its pop's 24 */
	recover(&b, 1000, 900, NULL, &o);
	CHECK_LIST(o, "R A 100 900 4242:main u\n");
	free(b.m);
}

/* Blocks whose header was scribbled on: more published than they hold,
 * a capacity over their units, units past the file's, a next block out
 * of range or back to one already read. */
TEST(recover_bad_blocks)
{
	struct dbuf b;
	struct outcome o;
	/* two blocks: A in the first, B in the second */
	for (int c = 0; c < 7; c++) {
		dbuf_init(&b);
		dbuf_thread(&b, 0, PID, 1, "main");
		push(&b, 0, 100, 1, "A");
		pop(&b, 0, 200, 1);
		push(&b, 1, 300, 1, "B");
		pop(&b, 1, 400, 1);
		struct tki_block *k0 = dbuf_block(&b, 0), *k1 = dbuf_block(&b, 1);
		atomic_store(&k0->next, 2);
		const char *expect = "R A 100 100 4242:main\nR B 300 100 4242:main\n";
		switch (c) {
		case 1:
			atomic_store(&k1->used, k1->cap + 8);
			expect = only_a;
			break;
		case 2:
			k1->cap = TKI_BUF_UNIT;          /* over its one unit */
			expect = only_a;
			break;
		case 3:
			k1->units = NUNITS;              /* past the last unit */
			expect = only_a;
			break;
		case 4:
			atomic_store(&k0->next, NUNITS + 1);
			expect = only_a;
			break;
		case 5:
			/* the second block leads back to the first: each once */
			atomic_store(&k1->next, 1);
			break;
		case 6:
			/* the first leads to itself */
			atomic_store(&k0->next, 1);
			expect = only_a;
			break;
		}
		recover(&b, 1000, 900, NULL, &o);
		if (strcmp(o.list, expect) != 0)
			fprintf(stderr, "# case %d\n", c);
		CHECK_LIST(o, expect);
		free(b.m);
	}
	/* the blocks' offset past the end of the file: no records at all */
	dbuf_init(&b);
	dbuf_thread(&b, 0, PID, 1, "main");
	push(&b, 0, 100, 1, "A");
	b.h->blocks_off = b.size;
	recover(&b, 1000, 900, NULL, &o);
	CHECK_LIST(o, "");
	free(b.m);
}

/* The names log and the thread slots scribbled on: names that do not
 * hold are not used (the records keep what they carry inline), slots
 * past the file's end are not read, a slot's name is cut to its size. */
TEST(recover_bad_names_and_slots)
{
	struct dbuf b;
	struct outcome o;
	dbuf_init(&b);
	dbuf_thread(&b, 0, PID, 1, "");
	memset(dbuf_slot(&b, 0)->name, 'n', sizeof(dbuf_slot(&b, 0)->name));
	dbuf_name(&b, TKI_NAME_STRING, 5, "kept");
	uint64_t first = b.h->names_len;
	dbuf_name(&b, TKI_NAME_STRING, 6, "cut");
	dbuf_rec(&b, 0, &(struct rec_spec){ .type = TKI_REC_MARK, .ts = 10, .string = 5 });
	dbuf_rec(&b, 0, &(struct rec_spec){ .type = TKI_REC_MARK, .ts = 20, .string = 6 });
	/* the second entry's length runs past the log */
	((struct tki_buf_name *)(b.m + b.h->names_off + first))->len = 1u << 20;
	recover(&b, 1000, 900, NULL, &o);
	char expect[256], comm[64];
	memset(comm, 'n', 63);             /* the slot's 64 bytes, cut to 63 */
	comm[63] = 0;
	snprintf(expect, sizeof(expect), "M  20 4242:%s\nM kept 10 4242:%s\n", comm, comm);
	CHECK_LIST(o, expect);
	/* a length whose padding wraps around 32 bits */
	((struct tki_buf_name *)(b.m + b.h->names_off + first))->len = 0xfffffffcu;
	recover(&b, 1000, 900, NULL, &o);
	CHECK_LIST(o, expect);
	/* a published length over the log's capacity: no names at all */
	b.h->names_len = NAMES_CAP + 8;
	recover(&b, 1000, 900, NULL, &o);
	CHECK(strstr(o.list, "M  10 ") && strstr(o.list, "M  20 "));
	free(b.m);
	/* the slots past the end of the file: no thread is read, what the
	 * snapshot had open still ends with the process */
	dbuf_init(&b);
	dbuf_thread(&b, 0, PID, 1, "main");
	push(&b, 0, 100, 1, "A");
	struct tki_snap *e = dbuf_snap(&b, 0, TKI_SNAP_PUSH, "open");
	e->tid = PID, e->ts = 50, e->level = 1;
	b.h->thread_off = b.size - 64;
	recover(&b, 1000, 900, NULL, &o);
	CHECK_LIST(o, "R open 50 950 4242 u\n");
	free(b.m);
}

/* A snapshot scribbled on: its length over its capacity or past the
 * file, or an entry running past the snapshot, leaves every thread out
 * (where they stood is unknown: reading from their first records would
 * write again what the spool has). */
TEST(recover_bad_snapshot)
{
	struct dbuf b;
	struct outcome o;
	for (int c = 0; c < 4; c++) {
		dbuf_init(&b);
		dbuf_thread(&b, 0, PID, 1, "main");
		push(&b, 0, 10, 1, "written");
		pop(&b, 0, 20, 1);
		uint32_t pos = b.used[0];
		pop(&b, 0, 500, 1);
		push(&b, 0, 600, 1, "after");
		pop(&b, 0, 700, 1);
		b.h->cuda_issued[TKI_CUDA_COUNT_DRIVER] = 1;
		struct tki_snap *e = dbuf_snap(&b, 0, TKI_SNAP_PUSH, "outer");
		e->tid = PID, e->ts = 300, e->level = 1;
		e = dbuf_snap(&b, 0, TKI_SNAP_THREAD, "");
		e->slot = 0, e->serial = 1, e->block = 1, e->pos = pos;
		const char *expect;
		if (c == 0) {
			b.h->snap_len[0] = SNAP_CAP + 8;
			expect = "D driver 1 900 100 proc\n";
		} else if (c == 1) {
			b.h->snap_off[0] = b.size - 8;
			expect = "D driver 1 900 100 proc\n";
		} else {
			/* the thread's entry runs past the snapshot, or its
			 * padded length wraps around: where it stood is
			 * unknown, as above */
			e->len = c == 2 ? 1u << 20 : 0xfffffffcu;
			expect = "D driver 1 900 100 proc\n";
		}
		recover(&b, 1000, 900, NULL, &o);
		if (strcmp(o.list, expect) != 0)
			fprintf(stderr, "# case %d\n", c);
		CHECK_LIST(o, expect);
		free(b.m);
	}
}

/* Where reading the spool stops: the committed snapshot's length of
 * it; all of it when there is nothing to recover. */
TEST(recover_spool_limit)
{
	struct dbuf b;
	char path[600];
	snprintf(path, sizeof(path), "%s/limit.buf", dir);
	unlink(path);
	CHECK(rec_recover_spool_limit(path) == UINT64_MAX);
	dbuf_init(&b);
	b.h->snap_spool[0] = 111;
	b.h->snap_spool[1] = 222;
	dbuf_write(&b, path);
	CHECK_EQ_INT(rec_recover_spool_limit(path), 111);    /* none committed */
	b.h->snap_cur = 1;
	dbuf_write(&b, path);
	CHECK_EQ_INT(rec_recover_spool_limit(path), 222);
	b.h->snap_cur = 0;
	dbuf_write(&b, path);
	CHECK_EQ_INT(rec_recover_spool_limit(path), 111);
	b.h->closed = 1;
	dbuf_write(&b, path);
	CHECK(rec_recover_spool_limit(path) == UINT64_MAX);
	b.h->closed = 0;
	b.h->nthreads = 8;
	dbuf_write(&b, path);
	CHECK(rec_recover_spool_limit(path) == UINT64_MAX);
	b.h->nthreads = TKI_BUF_THREADS;
	b.size = 64;
	dbuf_write(&b, path);
	CHECK(rec_recover_spool_limit(path) == UINT64_MAX);
	unlink(path);
	free(b.m);
}

int
main(void)
{
	if (!mkdtemp(dir))
		return 1;
	RUN(recover_whole_file);
	RUN(recover_from_snapshot);
	RUN(recover_lost_records);
	RUN(recover_window_and_cuda);
	RUN(recover_nothing);
	RUN(recover_odd_entries);
	RUN(recover_bad_records);
	RUN(recover_bad_blocks);
	RUN(recover_bad_names_and_slots);
	RUN(recover_bad_snapshot);
	RUN(recover_spool_limit);
	char path[600];
	snprintf(path, sizeof(path), "%s/p.buf", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/out.tkt", dir);
	unlink(path);
	rmdir(dir);
	return tap_done();
}
