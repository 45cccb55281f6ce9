/* SPDX-License-Identifier: MIT */
/*
 * tk_merge: the output holds exactly the multiset of input events (each
 * described by its resolved strings, so remapping errors show), in begin
 * order, with definitions deduplicated by identity; spills, labels,
 * offsets, concatenated inputs, bad inputs and live (feed) inputs.
 */
#include "helpers.h"
#include "tap.h"

struct gen {
	const char *host;
	int64_t pid;
	int64_t start;
	int n;
	int sorted;
	uint64_t seed;
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
	if (g->sorted)
		qsort(ts, g->n, sizeof(*ts), cmp_i64);
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
	         e->kind == TK_KERNEL ? e->u.kernel.mangled : e->u.range.domain,
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

static void
merge(struct mem_trace *ins, int n, const char **labels, const int64_t *offsets,
      size_t limit, int keep_going, struct result *res)
{
	memset(res, 0, sizeof(*res));
	struct tk_writer *w = mem_open(&res->out, NULL);
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

TEST(identical_processes_deduplicated)
{
	struct mem_trace in[2];
	struct gen g = { "h", 42, 0, 500, 1, 3 };
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
	struct gen g2 = { "other", 42, 0, 500, 1, 3 };
	gen_trace(&in[1], &g2);
	merge(in, 2, NULL, NULL, 0, 0, &res);
	CHECK_EQ_INT(res.processes, 2);
	mem_free(&in[1]);
	mem_free(&res.out);
	struct gen g3 = { "h", 42, 77, 500, 1, 3 };
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

int
main(void)
{
	RUN(sorted_inputs_interleave);
	RUN(unsorted_inputs_spill);
	RUN(identical_processes_deduplicated);
	RUN(labels_and_offsets);
	RUN(concatenated_input);
	RUN(bad_input);
	RUN(live_feed);
	return tap_done();
}
