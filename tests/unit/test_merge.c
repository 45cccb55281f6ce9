/* SPDX-License-Identifier: MIT */
/*
 * tk_merge: the output holds exactly the multiset of input events (each
 * described by its resolved strings, so remapping errors show), in begin
 * order, with definitions deduplicated by identity; spills, labels,
 * offsets, concatenated inputs, bad inputs and live (feed) inputs.
 */
#include <errno.h>
#include <signal.h>

#include "helpers.h"
#include "tap.h"

struct gen {
	const char *host;
	int64_t pid;
	int64_t start;
	int n;
	int sorted;
	uint64_t seed;
	int window;      /* > 0: sorted, then shuffled within windows of this
	                    many events, written with no watermark at all */
};

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* A trace of one process: ranges on two threads, kernels with mangled
 * names on a stream, some args; begin times sorted or shuffled. */
static void
gen_trace(struct mem_trace *m, const struct gen *g)
{
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.chunk_bytes = 2048;
	o.sorted = g->sorted;
	struct tk_writer *w = mem_open(m, &o);
	const char *argv[] = { "train", g->host };
	struct tk_process p = { g->host, g->pid, 1, g->start, 2, argv, "" };
	uint32_t pt = tk_writer_process(w, 0, &p);
	struct tk_thread th = { pt, g->pid, "main" };
	uint32_t t1 = tk_writer_thread(w, 0, &th);
	th = (struct tk_thread){ pt, g->pid + 1, "loader" };
	uint32_t t2 = tk_writer_thread(w, 0, &th);
	struct tk_device d = { 0, g->host, 0, "GPU", { 0 }, 1, 1, 9, 0 };
	uint32_t dev = tk_writer_device(w, 0, &d);
	struct tk_stream s = { pt, dev, 1, 7, "" };
	uint32_t st = tk_writer_stream(w, 0, &s);
	tk_writer_meta(w, "host", g->host);
	int64_t *ts = malloc(g->n * sizeof(*ts));
	uint64_t saved = test_rng;
	test_rng = g->seed * 7919 + 1;
	for (int i = 0; i < g->n; i++)
		ts[i] = g->start + (int64_t)rnd_below(1000000);
	if (g->sorted || g->window)
		qsort(ts, g->n, sizeof(*ts), cmp_i64);
	for (int i = 0; g->window && i < g->n; i++) {
		int lo = i - i % g->window;
		int j = lo + (int)rnd_below((uint64_t)(g->n - lo < g->window
		                                       ? g->n - lo : g->window));
		int64_t t = ts[i];
		ts[i] = ts[j];
		ts[j] = t;
	}
	static const char *names[] = { "step", "fwd", "bwd", "opt", "sgemm", "relu" };
	for (int i = 0; i < g->n; i++) {
		struct tk_event e = { 0 };
		e.ts = ts[i];
		e.dur = (int64_t)rnd_below(5000);
		e.name = names[rnd_below(6)];
		switch (rnd_below(3)) {
		case 0:
			e.kind = TK_RANGE;
			e.track = t1;
			e.u.range.domain = "dom";
			break;
		case 1:
			e.kind = TK_ASYNC_RANGE;
			e.track = t2;
			e.u.range.end_track = t1;
			e.args = "{\"x\":1}";
			e.args_len = 7;
			break;
		default:
			e.kind = TK_KERNEL;
			e.track = st;
			e.u.kernel.mangled = "_Z5sgemmv";
			e.u.kernel.grid[0] = (uint32_t)rnd_below(3) + 1;
			break;
		}
		if (tk_writer_event(w, &e))
			abort();
	}
	test_rng = saved;
	free(ts);
	mem_finish(m, 1);
}

static struct tk_reader *
reader_on(const struct mem_trace *m, const char *name)
{
	struct tk_reader *r = tk_reader_new();
	if (tk_reader_open_mem(r, m->buf, m->len, name))
		abort();
	return r;
}

/* One line per event with everything resolved. */
static char *
describe(struct tk_reader *r, const struct tk_event *e, int64_t shift)
{
	char buf[512];
	const struct tk_track *t = e->trk, *p = NULL;
	int64_t tid = -1;
	if (t->type == TK_TRACK_THREAD) {
		tid = t->u.thread.tid;
		p = tk_reader_track(r, t->u.thread.process);
	} else if (t->type == TK_TRACK_STREAM) {
		p = tk_reader_track(r, t->u.stream.process);
	}
	const char *host = p ? p->u.process.host : "?";
	const char *end = "";
	if (e->kind == TK_ASYNC_RANGE) {
		const struct tk_track *et = tk_reader_track(r, e->u.range.end_track);
		end = et ? et->u.thread.name : "?";
	}
	snprintf(buf, sizeof(buf), "%s %lld %s %lld %lld %s %s %s %u %.*s",
	         host, (long long)tid, tk_kind_name(e->kind),
	         (long long)(e->ts - shift), (long long)e->dur, e->name,
	         e->kind == TK_KERNEL ? e->u.kernel.mangled
	         : e->kind == TK_RANGE || e->kind == TK_ASYNC_RANGE ||
	                   e->kind == TK_MARK ? e->u.range.domain : "",
	         end, e->kind == TK_KERNEL ? e->u.kernel.grid[0] : 0,
	         (int)e->args_len, e->args ? e->args : "");
	return strdup(buf);
}

struct lines {
	char **v;
	size_t n, cap;
};

static void
add_line(struct lines *l, char *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1024;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = s;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
collect(const struct mem_trace *m, struct lines *l, int64_t shift)
{
	struct tk_reader *r = reader_on(m, "in");
	const struct tk_event *e;
	while (tk_reader_next_event(r, &e) == TK_OK)
		add_line(l, describe(r, e, shift));
	tk_reader_free(r);
}

static void
free_lines(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* Same multiset of lines? */
static int
same_lines(struct lines *a, struct lines *b)
{
	if (a->n != b->n) {
		fprintf(stderr, "# %zu lines against %zu\n", a->n, b->n);
		return 0;
	}
	qsort(a->v, a->n, sizeof(char *), cmp_str);
	qsort(b->v, b->n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i], b->v[i]) != 0) {
			fprintf(stderr, "# differs: '%s' vs '%s'\n", a->v[i], b->v[i]);
			return 0;
		}
	return 1;
}

struct result {
	struct mem_trace out;
	int rc;
	struct tk_merge_stats stats;
	int processes, sorted;
	char warning[512];
};

static void
on_warn(void *arg, const char *input, const char *msg)
{
	struct result *res = arg;
	snprintf(res->warning, sizeof(res->warning), "%s: %s", input, msg);
}

/* Output chunk size for merge(); 0 = the writer's default. */
static uint32_t merge_chunk_bytes;

static void
merge(struct mem_trace *ins, int n, const char **labels, const int64_t *offsets,
      size_t limit, int keep_going, struct result *res)
{
	memset(res, 0, sizeof(*res));
	struct tk_writer_options wo = TK_WRITER_OPTIONS_INIT;
	if (merge_chunk_bytes)
		wo.chunk_bytes = merge_chunk_bytes;
	struct tk_writer *w = mem_open(&res->out, &wo);
	struct tk_merge_options o = { limit, NULL, keep_going, on_warn, res };
	struct tk_merge *mg = tk_merge_new(w, &o);
	for (int i = 0; i < n; i++)
		CHECK(tk_merge_add(mg, reader_on(&ins[i], "input"),
		                   labels ? labels[i] : NULL,
		                   offsets ? offsets[i] : 0) == i);
	res->rc = tk_merge_run(mg);
	tk_merge_stats(mg, &res->stats);
	tk_merge_free(mg);
	mem_finish(&res->out, 1);
	/* count processes and check order */
	struct tk_reader *r = reader_on(&res->out, "out");
	struct tk_record rec;
	int64_t prev = INT64_MIN;
	res->sorted = 1;
	while (tk_reader_next(r, &rec) == TK_OK) {
		if (rec.type == TK_REC_TRACK && rec.u.track->type == TK_TRACK_PROCESS)
			res->processes++;
		if (rec.type == TK_REC_EVENT) {
			if (rec.u.event->ts < prev)
				res->sorted = 0;
			prev = rec.u.event->ts;
		}
	}
	tk_reader_free(r);
}

static void
check_same_events(struct mem_trace *ins, int n, struct result *res)
{
	struct lines a = { 0 }, b = { 0 };
	for (int i = 0; i < n; i++)
		collect(&ins[i], &a, 0);
	collect(&res->out, &b, 0);
	CHECK(same_lines(&a, &b));
	free_lines(&a);
	free_lines(&b);
}

TEST(sorted_inputs_interleave)
{
	struct mem_trace in[3];
	for (int i = 0; i < 3; i++) {
		struct gen g = { i == 1 ? "b" : "a", 100 + i, 1000000, 3000, 1, (uint64_t)i };
		gen_trace(&in[i], &g);
	}
	struct result res;
	merge(in, 3, NULL, NULL, 0, 0, &res);
	CHECK_EQ_INT(res.rc, TK_OK);
	CHECK(res.sorted);
	CHECK_EQ_INT(res.stats.events, 9000);
	CHECK_EQ_INT(res.stats.spilled, 0);
	CHECK_EQ_INT(res.stats.late, 0);
	CHECK_EQ_INT(res.processes, 3);
	check_same_events(in, 3, &res);
	for (int i = 0; i < 3; i++)
		mem_free(&in[i]);
	mem_free(&res.out);
}

/* Many spills: they are merged eight at a time, so that the files open
 * at once (each a descriptor and a reader's buffers) stay few. */
TEST(many_spills_stay_few_open)
{
	struct mem_trace in[4];
	for (int i = 0; i < 4; i++) {
		struct gen g = { "h", 10 + i, 5000000, 30000, 0, (uint64_t)i + 20 };
		gen_trace(&in[i], &g);
	}
	struct result res;
	merge(in, 4, NULL, NULL, 16 * 1024, 0, &res);
	CHECK_EQ_INT(res.rc, TK_OK);
	CHECK(res.sorted);
	CHECK_EQ_INT(res.stats.events, 120000);
	CHECK(res.stats.spill_files > 64);
	CHECK(res.stats.spill_open_max >= 8);
	CHECK(res.stats.spill_open_max <= 8 * 4);
	check_same_events(in, 4, &res);
	for (int i = 0; i < 4; i++)
		mem_free(&in[i]);
	mem_free(&res.out);
}

TEST(unsorted_inputs_spill)
{
	struct mem_trace in[4];
	for (int i = 0; i < 4; i++) {
		struct gen g = { "h", 10 + i, 5000000, 5000, 0, (uint64_t)i + 10 };
		gen_trace(&in[i], &g);
	}
	struct result res;
	merge(in, 4, NULL, NULL, 200 * 1024, 0, &res);
	CHECK_EQ_INT(res.rc, TK_OK);
	CHECK(res.sorted);
	CHECK_EQ_INT(res.stats.events, 20000);
	CHECK(res.stats.spill_files >= 3);
	CHECK(res.stats.spilled > 0);
	check_same_events(in, 4, &res);
	for (int i = 0; i < 4; i++)
		mem_free(&in[i]);
	mem_free(&res.out);
}

/* tk_merge_set_progress(): what the callback is told. */
struct progress_log {
	int calls;
	int monotonic;           /* no count ever went back */
	int written_le_read;     /* never more written than read */
	uint64_t bytes, read, written;
};

static void
on_progress(void *arg, uint64_t bytes, uint64_t read, uint64_t written)
{
	struct progress_log *p = arg;
	if (bytes < p->bytes || read < p->read || written < p->written)
		p->monotonic = 0;
	if (written > read)
		p->written_le_read = 0;
	p->calls++;
	p->bytes = bytes;
	p->read = read;
	p->written = written;
}

/* The counts of the progress callback: every event of the inputs read
 * once (events read back from spill files are not counted again), the
 * bytes within the inputs' size, nothing going back. */
TEST(progress_counts)
{
	struct mem_trace in[3];
	uint64_t size = 0;
	for (int i = 0; i < 3; i++) {
		struct gen g = { "h", 40 + i, 5000000, 7000, 0, (uint64_t)i + 30 };
		gen_trace(&in[i], &g);
		size += in[i].len;
	}
	struct tk_writer_options wo = TK_WRITER_OPTIONS_INIT;
	struct mem_trace out;
	struct tk_writer *w = mem_open(&out, &wo);
	/* little memory: the unsorted inputs spill */
	struct tk_merge_options o = { 64 * 1024, NULL, 0, NULL, NULL };
	struct tk_merge *mg = tk_merge_new(w, &o);
	struct progress_log log = { 0, 1, 1, 0, 0, 0 };
	tk_merge_set_progress(mg, on_progress, &log);
	for (int i = 0; i < 3; i++)
		CHECK(tk_merge_add(mg, reader_on(&in[i], "input"), NULL, 0) == i);
	CHECK_EQ_INT(tk_merge_run(mg), TK_OK);
	struct tk_merge_stats st;
	tk_merge_stats(mg, &st);
	CHECK(st.spilled > 0);
	CHECK(log.calls >= 3);
	CHECK(log.monotonic);
	CHECK(log.written_le_read);
	CHECK_EQ_INT(log.read, 21000);
	CHECK(log.written <= st.events);
	CHECK(log.bytes > 0 && log.bytes < size);
	/* NULL stops it */
	tk_merge_set_progress(mg, NULL, NULL);
	tk_merge_set_progress(NULL, on_progress, &log);
	tk_merge_free(mg);
	mem_finish(&out, 1);
	mem_free(&out);
	for (int i = 0; i < 3; i++)
		mem_free(&in[i]);
}

TEST(identical_processes_deduplicated)
{
	struct mem_trace in[2];
	struct gen g = { "h", 42, 1000, 500, 1, 3 };
	gen_trace(&in[0], &g);
	gen_trace(&in[1], &g);
	struct result res;
	merge(in, 2, NULL, NULL, 0, 0, &res);
	CHECK_EQ_INT(res.processes, 1);
	CHECK_EQ_INT(res.stats.events, 1000);
	check_same_events(in, 2, &res);
	/* same pid on another host, or started at another time: distinct */
	mem_free(&in[1]);
	mem_free(&res.out);
	struct gen g2 = { "other", 42, 1000, 500, 1, 3 };
	gen_trace(&in[1], &g2);
	merge(in, 2, NULL, NULL, 0, 0, &res);
	CHECK_EQ_INT(res.processes, 2);
	mem_free(&in[1]);
	mem_free(&res.out);
	struct gen g3 = { "h", 42, 1077, 500, 1, 3 };
	gen_trace(&in[1], &g3);
	merge(in, 2, NULL, NULL, 0, 0, &res);
	CHECK_EQ_INT(res.processes, 2);
	mem_free(&in[0]);
	mem_free(&in[1]);
	mem_free(&res.out);
}

TEST(labels_and_offsets)
{
	struct mem_trace in[2];
	struct gen g = { "h", 1, 1000, 200, 1, 5 };
	gen_trace(&in[0], &g);
	g.pid = 2;
	gen_trace(&in[1], &g);
	const char *labels[] = { "rank0", "rank1" };
	const int64_t offsets[] = { 0, 500 };
	struct result res;
	merge(in, 2, labels, offsets, 0, 0, &res);
	CHECK_EQ_INT(res.rc, TK_OK);
	struct tk_reader *r = reader_on(&res.out, "out");
	const struct tk_event *e;
	int seen = 0;
	while (tk_reader_next_event(r, &e) == TK_OK) {
		const struct tk_track *t = e->trk;
		if (t->type != TK_TRACK_THREAD)
			continue;
		const struct tk_track *p = tk_reader_track(r, t->u.thread.process);
		CHECK_STR(p->u.process.label, p->u.process.pid == 1 ? "rank0" : "rank1");
		CHECK_EQ_INT(p->u.process.start, p->u.process.pid == 1 ? 1000 : 1500);
		seen++;
	}
	CHECK(seen > 0);
	tk_reader_free(r);
	/* the shifted input's events moved by exactly the offset */
	struct lines a = { 0 }, b = { 0 };
	collect(&in[1], &a, 0);
	struct tk_reader *ro = reader_on(&res.out, "out");
	while (tk_reader_next_event(ro, &e) == TK_OK) {
		const struct tk_track *t = e->trk;
		const struct tk_track *p = tk_reader_track(ro, t->type == TK_TRACK_THREAD
		                                                   ? t->u.thread.process
		                                                   : t->u.stream.process);
		if (p && p->u.process.pid == 2)
			add_line(&b, describe(ro, e, 500));
	}
	tk_reader_free(ro);
	CHECK(same_lines(&a, &b));
	free_lines(&a);
	free_lines(&b);
	mem_free(&in[0]);
	mem_free(&in[1]);
	mem_free(&res.out);
}

TEST(concatenated_input)
{
	struct mem_trace a, b, cat;
	struct gen g = { "x", 7, 100, 300, 1, 8 };
	gen_trace(&a, &g);
	struct gen g2 = { "y", 8, 50, 300, 0, 9 };
	gen_trace(&b, &g2);
	cat.len = a.len + b.len;
	cat.buf = malloc(cat.len);
	memcpy(cat.buf, a.buf, a.len);
	memcpy(cat.buf + a.len, b.buf, b.len);
	struct result res;
	merge(&cat, 1, NULL, NULL, 0, 0, &res);
	CHECK_EQ_INT(res.rc, TK_OK);
	/* watermarks hold within one trace: the second trace's earlier
	 * events come late, and are counted so */
	CHECK(res.stats.late > 0);
	CHECK(!res.sorted);
	CHECK(strstr(res.warning, "events out of time order (it holds "
	                          "concatenated traces") != NULL);
	CHECK_EQ_INT(res.processes, 2);
	struct mem_trace both[2] = { a, b };
	check_same_events(both, 2, &res);
	mem_free(&a);
	mem_free(&b);
	mem_free(&cat);
	mem_free(&res.out);
}

TEST(bad_input)
{
	struct mem_trace in[2];
	struct gen g = { "h", 1, 0, 4000, 1, 11 };
	gen_trace(&in[0], &g);
	g.pid = 2;
	gen_trace(&in[1], &g);
	in[1].len /= 2; /* truncated */
	uint64_t good;
	count_events(in[1].buf, in[1].len, &good);
	struct result res;
	merge(in, 2, NULL, NULL, 0, 0, &res);
	CHECK(res.rc == TK_ETRUNC);
	CHECK(strstr(res.warning, "truncated chunk at byte") != NULL);
	mem_free(&res.out);
	merge(in, 2, NULL, NULL, 0, 1, &res);
	CHECK_EQ_INT(res.rc, TK_OK);
	CHECK_EQ_INT(res.stats.bad_inputs, 1);
	CHECK_EQ_INT(res.stats.events, 4000 + good);
	mem_free(&res.out);
	mem_free(&in[0]);
	mem_free(&in[1]);
}

/* tk_merge_errno(): 0 for a damaged input (no system call failed),
 * ENOMEM, EINVAL for a bad call, and the output writer's errno when the
 * output fails (the merge's message then starts with "output: "). */
TEST(merge_errno)
{
	struct mem_trace in[2];
	struct gen g = { "h", 1, 0, 4000, 1, 11 };
	gen_trace(&in[0], &g);
	gen_trace(&in[1], &g);
	in[1].len /= 2;
	CHECK_EQ_INT(tk_merge_errno(NULL), 0);

	struct mem_trace out;
	struct tk_writer *w = mem_open(&out, NULL);
	struct tk_merge *mg = tk_merge_new(w, NULL);
	CHECK_EQ_INT(tk_merge_errno(mg), 0);
	CHECK(strcmp(tk_merge_error(mg), "no error") == 0);
	CHECK(tk_merge_add(mg, reader_on(&in[1], "bad"), NULL, 0) == 0);
	CHECK_EQ_INT(tk_merge_run(mg), TK_ETRUNC);
	CHECK_EQ_INT(tk_merge_errno(mg), 0);
	CHECK(strncmp(tk_merge_error(mg), "bad: truncated", 14) == 0);
	tk_merge_free(mg);
	mem_finish(&out, 0);
	mem_free(&out);

	/* the output is a pipe whose reader has gone */
	int fds[2];
	CHECK(pipe(fds) == 0);
	signal(SIGPIPE, SIG_IGN);
	struct tk_writer_options wo = TK_WRITER_OPTIONS_INIT;
	wo.chunk_bytes = 1024; /* chunks go out during the merge */
	w = tk_writer_new();
	CHECK_EQ_INT(tk_writer_open_fd(w, fds[1], "pipe", &wo), TK_OK);
	close(fds[0]);
	mg = tk_merge_new(w, NULL);
	CHECK(tk_merge_add(mg, reader_on(&in[0], "good"), NULL, 0) == 0);
	CHECK_EQ_INT(tk_merge_run(mg), TK_EIO);
	CHECK_EQ_INT(tk_writer_errno(w), EPIPE);
	CHECK_EQ_INT(tk_merge_errno(mg), EPIPE);
	CHECK(strncmp(tk_merge_error(mg), "output: ", 8) == 0);
	CHECK(strcmp(tk_merge_error(mg) + 8, tk_writer_error(w)) == 0);
	tk_merge_free(mg);
	tk_writer_free(w);
	close(fds[1]);
	signal(SIGPIPE, SIG_DFL);
	mem_free(&in[0]);
	mem_free(&in[1]);
}

/* Live inputs: bytes arrive in pieces; what no input can precede any
 * more is written at each step; the end result is complete and sorted. */
TEST(live_feed)
{
	struct mem_trace in[2];
	for (int i = 0; i < 2; i++) {
		struct gen g = { "h", 1 + i, 0, 4000, 1, (uint64_t)i + 20 };
		gen_trace(&in[i], &g);
	}
	struct mem_trace out;
	struct tk_writer *w = mem_open(&out, NULL);
	struct tk_merge *mg = tk_merge_new(w, NULL);
	struct tk_reader *r[2];
	for (int i = 0; i < 2; i++) {
		r[i] = tk_reader_new();
		CHECK(tk_reader_open_feed(r[i], "live") == TK_OK);
		CHECK(tk_merge_add(mg, r[i], NULL, 0) == i);
	}
	size_t pos[2] = { 0, 0 };
	uint64_t written[8];
	int steps = 0;
	while (pos[0] < in[0].len || pos[1] < in[1].len) {
		for (int i = 0; i < 2; i++) {
			size_t k = in[i].len - pos[i] < 1500 ? in[i].len - pos[i] : 1500;
			CHECK(tk_reader_feed(r[i], in[i].buf + pos[i], k) == TK_OK);
			pos[i] += k;
		}
		CHECK_EQ_INT(tk_merge_step(mg), TK_OK);
		struct tk_merge_stats s;
		tk_merge_stats(mg, &s);
		if (steps < 8)
			written[steps] = s.events;
		steps++;
	}
	CHECK(steps >= 4);
	CHECK(written[1] > 0 && written[1] < 8000); /* progress before the end */
	for (int i = 0; i < 2; i++)
		tk_reader_feed_end(r[i]);
	CHECK_EQ_INT(tk_merge_run(mg), TK_OK);
	struct tk_merge_stats s;
	tk_merge_stats(mg, &s);
	CHECK_EQ_INT(s.events, 8000);
	CHECK_EQ_INT(s.late, 0);
	tk_merge_free(mg);
	mem_finish(&out, 1);
	struct result res = { .out = out };
	check_same_events(in, 2, &res);
	mem_free(&out);
	mem_free(&in[0]);
	mem_free(&in[1]);
}

/* A bare file descriptor holding `len` bytes (unlinked). */
static int
temp_fd(const void *buf, size_t len)
{
	char path[] = "/tmp/tk-test-merge-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		abort();
	unlink(path);
	if (write(fd, buf, len) != (ssize_t)len)
		abort();
	return fd;
}

/* A process, a thread, a device, a stream and a counter, one event on
 * each; host, start and uuid as given. */
static void
tiny_trace(struct mem_trace *m, const char *host, int64_t start, int uuid)
{
	struct tk_writer *w = mem_open(m, NULL);
	struct tk_process p = { host, 1, 0, start, 0, NULL, "" };
	uint32_t pt = tk_writer_process(w, 0, &p);
	struct tk_thread th = { pt, 1, "main" };
	uint32_t t = tk_writer_thread(w, 0, &th);
	struct tk_device d = { 0, host, 0, "GPU", { 0 }, 1, 1, 9, 0 };
	d.uuid[0] = (uint8_t)uuid;
	uint32_t dev = tk_writer_device(w, 0, &d);
	struct tk_stream st = { pt, dev, 1, 7, "" };
	uint32_t s = tk_writer_stream(w, 0, &st);
	struct tk_counter c = { "load", "%", 0, 0 };
	uint32_t k = tk_writer_counter(w, 0, &c);
	tk_writer_category(w, "dom", 3, "io");
	struct tk_event e = { 0 };
	e.kind = TK_RANGE;
	e.track = t;
	e.ts = 10;
	e.name = "step";
	tk_writer_event(w, &e);
	e = (struct tk_event){ 0 };
	e.kind = TK_KERNEL;
	e.track = s;
	e.ts = 11;
	e.name = "sgemm";
	tk_writer_event(w, &e);
	e = (struct tk_event){ 0 };
	e.kind = TK_COUNTER;
	e.track = k;
	e.ts = 12;
	e.name = "load";
	e.u.counter.value = 1;
	if (tk_writer_event(w, &e))
		abort();
	mem_finish(m, 1);
}

struct defs {
	int processes, threads, streams, counters, devices, categories;
};

static void
count_defs(const struct mem_trace *m, struct defs *d)
{
	struct tk_reader *r = reader_on(m, "out");
	struct tk_record rec;
	memset(d, 0, sizeof(*d));
	while (tk_reader_next(r, &rec) == TK_OK) {
		if (rec.type == TK_REC_DEVICE)
			d->devices++;
		if (rec.type == TK_REC_CATEGORY)
			d->categories++;
		if (rec.type != TK_REC_TRACK)
			continue;
		switch (rec.u.track->type) {
		case TK_TRACK_PROCESS: d->processes++; break;
		case TK_TRACK_THREAD: d->threads++; break;
		case TK_TRACK_STREAM: d->streams++; break;
		case TK_TRACK_COUNTER: d->counters++; break;
		default: break;
		}
	}
	tk_reader_free(r);
}

/* What cannot be told apart is not merged: a process of unknown start,
 * a device with neither host nor uuid, a counter of no process or
 * device.  Known identities are merged, and NVTX categories said once. */
TEST(incomplete_identities_stay_apart)
{
	struct mem_trace in[2];
	struct result res;
	struct defs d;
	tiny_trace(&in[0], "", 0, 0);
	tiny_trace(&in[1], "", 0, 0);
	merge(in, 2, NULL, NULL, 0, 0, &res);
	CHECK_EQ_INT(res.rc, TK_OK);
	count_defs(&res.out, &d);
	CHECK_EQ_INT(d.processes, 2);
	CHECK_EQ_INT(d.threads, 2);
	CHECK_EQ_INT(d.devices, 2);
	CHECK_EQ_INT(d.streams, 2);
	CHECK_EQ_INT(d.counters, 2);
	CHECK_EQ_INT(d.categories, 1);
	check_same_events(in, 2, &res);
	mem_free(&res.out);
	mem_free(&in[0]);
	mem_free(&in[1]);

	tiny_trace(&in[0], "node1", 5, 1);
	tiny_trace(&in[1], "node1", 5, 1);
	merge(in, 2, NULL, NULL, 0, 0, &res);
	count_defs(&res.out, &d);
	CHECK_EQ_INT(d.processes, 1);
	CHECK_EQ_INT(d.threads, 1);
	CHECK_EQ_INT(d.devices, 1);
	CHECK_EQ_INT(d.streams, 1);
	CHECK_EQ_INT(d.counters, 2);
	CHECK_EQ_INT(res.stats.events, 6);
	mem_free(&res.out);
	mem_free(&in[0]);
	mem_free(&in[1]);
}

/* Labels are part of a process's identity: the same trace given twice
 * under two labels is two processes, under one label one. */
TEST(labels_keep_processes_apart)
{
	struct mem_trace in[2];
	struct gen g = { "h", 9, 1000, 300, 1, 4 };
	gen_trace(&in[0], &g);
	gen_trace(&in[1], &g);
	const char *two[] = { "run1", "run2" }, *one[] = { "run1", "run1" };
	struct result res;
	merge(in, 2, two, NULL, 0, 0, &res);
	CHECK_EQ_INT(res.processes, 2);
	struct tk_reader *r = reader_on(&res.out, "out");
	const struct tk_event *e;
	int per_label[2] = { 0, 0 };
	while (tk_reader_next_event(r, &e) == TK_OK) {
		if (e->trk->type != TK_TRACK_THREAD)
			continue;
		const struct tk_track *p = tk_reader_track(r, e->trk->u.thread.process);
		per_label[strcmp(p->u.process.label, "run1") == 0 ? 0 : 1]++;
	}
	tk_reader_free(r);
	CHECK(per_label[0] > 0);
	CHECK_EQ_INT(per_label[0], per_label[1]);
	mem_free(&res.out);
	merge(in, 2, one, NULL, 0, 0, &res);
	CHECK_EQ_INT(res.processes, 1);
	mem_free(&res.out);
	mem_free(&in[0]);
	mem_free(&in[1]);
}

/* The merged output promises, chunk by chunk, how far later chunks can
 * go back, and keeps its promises; merged again it streams through a
 * tiny memory limit without spilling. */
TEST(output_watermarks_hold)
{
	struct mem_trace in[3];
	for (int i = 0; i < 3; i++) {
		/* sorted inputs flow straight through, not via the heap */
		struct gen g = { "h", 30 + i, 100000, 4000, 1, (uint64_t)i + 40 };
		gen_trace(&in[i], &g);
	}
	struct result res;
	merge_chunk_bytes = 4096;
	merge(in, 3, NULL, NULL, 0, 0, &res);
	merge_chunk_bytes = 0;
	CHECK_EQ_INT(res.rc, TK_OK);
	CHECK(res.sorted);
	int fd = temp_fd(res.out.buf, res.out.len);
	struct tk_scan *sc;
	CHECK_EQ_INT(tk_scan_fd(fd, &sc), TK_OK);
	CHECK_EQ_INT(sc->ntraces, 1);
	CHECK(sc->nchunks > 10);
	int kept = 1, promised = 0;
	for (size_t i = 0; i < sc->nchunks; i++) {
		if (sc->chunks[i].events && sc->chunks[i].watermark > INT64_MIN)
			promised++;
		for (size_t j = i + 1; j < sc->nchunks; j++)
			if (sc->chunks[j].events &&
			    sc->chunks[j].t_min < sc->chunks[i].watermark)
				kept = 0;
	}
	CHECK(kept);
	CHECK(promised >= (int)sc->nchunks - 2);
	tk_scan_free(sc);
	close(fd);
	struct result again;
	merge(&res.out, 1, NULL, NULL, 4096, 0, &again);
	CHECK_EQ_INT(again.rc, TK_OK);
	CHECK_EQ_INT(again.stats.spilled, 0);
	CHECK_EQ_INT(again.stats.events, 12000);
	mem_free(&again.out);
	mem_free(&res.out);
	for (int i = 0; i < 3; i++)
		mem_free(&in[i]);
}

/* An unsorted input that promises nothing has to wait in memory (and
 * spill); scanned ahead, its chunks' time ranges let it stream. */
TEST(scanned_chunks_stream)
{
	struct mem_trace in;
	struct gen g = { "h", 5, 0, 6000, 0, 77, 50 };
	gen_trace(&in, &g);
	struct result res;
	merge(&in, 1, NULL, NULL, 64 * 1024, 0, &res);
	CHECK_EQ_INT(res.rc, TK_OK);
	CHECK(res.stats.spilled > 0);
	CHECK(res.sorted);
	mem_free(&res.out);

	int fd = temp_fd(in.buf, in.len);
	struct tk_scan *sc;
	CHECK_EQ_INT(tk_scan_fd(fd, &sc), TK_OK);
	memset(&res, 0, sizeof(res));
	struct tk_writer *w = mem_open(&res.out, NULL);
	struct tk_merge_options o = { 64 * 1024, NULL, 0, on_warn, &res };
	struct tk_merge *mg = tk_merge_new(w, &o);
	struct tk_reader *r = tk_reader_new();
	CHECK_EQ_INT(tk_reader_open_range(r, fd, sc->traces[0].offset,
	                                  sc->traces[0].length, "scanned"), TK_OK);
	int idx = tk_merge_add(mg, r, NULL, 250);
	CHECK_EQ_INT(tk_merge_set_chunks(mg, idx, sc->chunks + sc->traces[0].first,
	                                 sc->traces[0].nchunks), TK_OK);
	CHECK_EQ_INT(tk_merge_run(mg), TK_OK);
	tk_merge_stats(mg, &res.stats);
	tk_merge_free(mg);
	mem_finish(&res.out, 1);
	CHECK_EQ_INT(res.stats.spilled, 0);
	CHECK_EQ_INT(res.stats.late, 0);
	CHECK_EQ_INT(res.stats.events, 6000);
	/* the same events, each moved by the offset */
	struct lines a = { 0 }, b = { 0 };
	collect(&in, &a, 0);
	collect(&res.out, &b, 250);
	CHECK(same_lines(&a, &b));
	free_lines(&a);
	free_lines(&b);
	tk_scan_free(sc);
	close(fd);
	mem_free(&res.out);
	mem_free(&in);
}

/* The scan finds each trace of a concatenation and every chunk the
 * reader meets, and stops where the framing breaks. */
TEST(scan_finds_traces_and_chunks)
{
	struct mem_trace a, b;
	struct gen ga = { "x", 1, 100, 2000, 1, 1 }, gb = { "y", 2, 50, 1500, 0, 2 };
	gen_trace(&a, &ga);
	gen_trace(&b, &gb);
	size_t len = 2 * a.len + b.len;
	uint8_t *buf = malloc(len);
	memcpy(buf, a.buf, a.len);
	memcpy(buf + a.len, b.buf, b.len);
	memcpy(buf + a.len + b.len, a.buf, a.len);
	int fd = temp_fd(buf, len);
	struct tk_scan *sc;
	CHECK_EQ_INT(tk_scan_fd(fd, &sc), TK_OK);
	CHECK_EQ_INT(sc->ntraces, 3);
	CHECK_EQ_INT(sc->size, len);
	CHECK_EQ_INT(sc->end, len);
	CHECK_EQ_INT(sc->traces[1].offset, a.len);
	CHECK_EQ_INT(sc->traces[1].length, b.len);
	CHECK_EQ_INT(sc->traces[2].offset, a.len + b.len);
	/* the reader meets the same chunks, with the same facts */
	struct tk_reader *r = reader_on(&(struct mem_trace){ .buf = buf, .len = len }, "cat");
	const struct tk_event *e;
	size_t seen = 0, chunk_events = 0;
	uint64_t last = UINT64_MAX, events = 0;
	int same = 1;
	while (tk_reader_next_event(r, &e) == TK_OK) {
		const struct tk_chunk_info *ci = tk_reader_chunk(r);
		events++;
		if (ci->offset == last)
			continue;
		while (seen < sc->nchunks && sc->chunks[seen].offset < ci->offset)
			seen++;
		if (seen == sc->nchunks || sc->chunks[seen].offset != ci->offset ||
		    sc->chunks[seen].events != ci->events ||
		    sc->chunks[seen].t_min != ci->t_min ||
		    sc->chunks[seen].watermark != ci->watermark)
			same = 0;
		chunk_events += ci->events;
		last = ci->offset;
	}
	tk_reader_free(r);
	CHECK(same);
	CHECK_EQ_INT(chunk_events, events);
	CHECK_EQ_INT(events, 5500);
	size_t total = 0;
	for (size_t i = 0; i < sc->ntraces; i++)
		total += sc->traces[i].nchunks;
	CHECK_EQ_INT(total, sc->nchunks);
	tk_scan_free(sc);
	close(fd);

	/* cut inside the second trace: two traces, the scan stops short */
	size_t cut = a.len + b.len / 2;
	fd = temp_fd(buf, cut);
	CHECK_EQ_INT(tk_scan_fd(fd, &sc), TK_OK);
	CHECK_EQ_INT(sc->ntraces, 2);
	CHECK(sc->end < cut && sc->end > a.len);
	CHECK_EQ_INT(sc->traces[1].length, cut - a.len);
	tk_scan_free(sc);
	close(fd);

	/* not a trace; not a file */
	fd = temp_fd("{\"traceEvents\": []}", 19);
	CHECK_EQ_INT(tk_scan_fd(fd, &sc), TK_OK);
	CHECK_EQ_INT(sc->ntraces, 0);
	CHECK_EQ_INT(sc->end, 0);
	tk_scan_free(sc);
	close(fd);
	int p[2];
	CHECK(pipe(p) == 0);
	CHECK_EQ_INT(tk_scan_fd(p[0], &sc), TK_EINVAL);
	close(p[0]);
	close(p[1]);
	free(buf);
	mem_free(&a);
	mem_free(&b);
}

/* Readers on ranges of one descriptor read their own trace, side by
 * side, and give offsets in the file. */
TEST(range_readers_share_a_descriptor)
{
	struct mem_trace a, b;
	struct gen ga = { "x", 1, 100, 3000, 1, 5 }, gb = { "y", 2, 50, 3000, 1, 6 };
	gen_trace(&a, &ga);
	gen_trace(&b, &gb);
	uint8_t *buf = malloc(a.len + b.len);
	memcpy(buf, a.buf, a.len);
	memcpy(buf + a.len, b.buf, b.len);
	int fd = temp_fd(buf, a.len + b.len);
	struct tk_reader *ra = tk_reader_new(), *rb = tk_reader_new();
	CHECK_EQ_INT(tk_reader_open_range(ra, fd, 0, a.len, "cat"), TK_OK);
	CHECK_EQ_INT(tk_reader_open_range(rb, fd, a.len, b.len, "cat"), TK_OK);
	struct lines la = { 0 }, lb = { 0 }, xa = { 0 }, xb = { 0 };
	const struct tk_event *e;
	int rca = TK_OK, rcb = TK_OK;
	while (rca == TK_OK || rcb == TK_OK) {
		if (rca == TK_OK && (rca = tk_reader_next_event(ra, &e)) == TK_OK)
			add_line(&la, describe(ra, e, 0));
		if (rcb == TK_OK && (rcb = tk_reader_next_event(rb, &e)) == TK_OK)
			add_line(&lb, describe(rb, e, 0));
	}
	CHECK_EQ_INT(rca, TK_EOF);
	CHECK_EQ_INT(rcb, TK_EOF);
	CHECK_EQ_INT(tk_reader_scope(rb), 1);
	CHECK_EQ_INT(tk_reader_offset(rb), a.len + b.len);
	collect(&a, &xa, 0);
	collect(&b, &xb, 0);
	CHECK(same_lines(&la, &xa));
	CHECK(same_lines(&lb, &xb));
	free_lines(&la);
	free_lines(&lb);
	free_lines(&xa);
	free_lines(&xb);
	/* damage in the second trace is reported at its offset in the file */
	close(fd);
	fd = temp_fd(buf, a.len + b.len - 100);
	CHECK_EQ_INT(tk_reader_open_range(rb, fd, a.len, b.len - 100, "cut"), TK_OK);
	while ((rcb = tk_reader_next_event(rb, &e)) == TK_OK)
		;
	CHECK_EQ_INT(rcb, TK_ETRUNC);
	unsigned long long at = 0;
	CHECK(sscanf(tk_reader_error(rb), "truncated chunk at byte %llu", &at) == 1);
	CHECK(at > a.len && at < a.len + b.len);
	tk_reader_free(ra);
	tk_reader_free(rb);
	close(fd);
	free(buf);
	mem_free(&a);
	mem_free(&b);
}

int
main(void)
{
	RUN(sorted_inputs_interleave);
	RUN(merge_errno);
	RUN(unsorted_inputs_spill);
	RUN(many_spills_stay_few_open);
	RUN(progress_counts);
	RUN(identical_processes_deduplicated);
	RUN(labels_and_offsets);
	RUN(concatenated_input);
	RUN(bad_input);
	RUN(live_feed);
	RUN(incomplete_identities_stay_apart);
	RUN(labels_keep_processes_apart);
	RUN(output_watermarks_hold);
	RUN(scanned_chunks_stream);
	RUN(scan_finds_traces_and_chunks);
	RUN(range_readers_share_a_descriptor);
	return tap_done();
}
