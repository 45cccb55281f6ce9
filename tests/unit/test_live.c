/* SPDX-License-Identifier: MIT */
/*
 * What a live recording needs from the library (trace-record tails the
 * spools of running programs): a writer's heartbeat chunk, an idle live
 * input that lets the merge go on by its heartbeats, and an output
 * whose watermarks are held for events still to come (tk_merge_hold).
 */
#include "helpers.h"
#include "tap.h"

/* Bytes written to `m` since `*seen`, fed to `r`. */
static void
feed_new(struct mem_trace *m, struct tk_reader *r, long *seen)
{
	long end = lseek(fileno(m->f), 0, SEEK_END);
	if (end > *seen) {
		uint8_t *b = malloc((size_t)(end - *seen));
		if (pread(fileno(m->f), b, (size_t)(end - *seen), *seen) != end - *seen)
			abort();
		tk_reader_feed(r, b, (size_t)(end - *seen));
		free(b);
		*seen = end;
	}
}

static uint32_t
thread_of(struct tk_writer *w, int64_t pid)
{
	const char *argv[] = { "p" };
	struct tk_process p = { "h", pid, 1, 1000, 1, argv, "" };
	struct tk_thread t = { tk_writer_process(w, 0, &p), pid, "main" };
	return tk_writer_thread(w, 0, &t);
}

static void
range(struct tk_writer *w, uint32_t track, int64_t ts, const char *name)
{
	struct tk_event e = { 0 };
	e.kind = TK_RANGE;
	e.track = track;
	e.ts = ts;
	e.dur = 5;
	e.name = name;
	if (tk_writer_event(w, &e) != TK_OK)
		abort();
}

TEST(flush_writes_a_heartbeat_when_only_the_watermark_moved)
{
	struct mem_trace m;
	struct tk_writer *w = mem_open(&m, NULL);
	uint64_t start = tk_writer_offset(w);
	CHECK_EQ_INT(tk_writer_flush(w), TK_OK);
	CHECK_EQ_INT(tk_writer_offset(w), start); /* nothing at all: nothing */
	tk_writer_watermark(w, 500);
	CHECK_EQ_INT(tk_writer_flush(w), TK_OK);
	uint64_t one = tk_writer_offset(w);
	CHECK(one > start);
	CHECK_EQ_INT(tk_writer_flush(w), TK_OK);
	CHECK_EQ_INT(tk_writer_offset(w), one); /* the same promise again */
	tk_writer_watermark(w, 900);
	CHECK_EQ_INT(tk_writer_flush(w), TK_OK);
	CHECK(tk_writer_offset(w) > one);
	mem_finish(&m, 1);

	struct tk_reader *r = tk_reader_new();
	struct tk_record rec;
	CHECK_EQ_INT(tk_reader_open_mem(r, m.buf, m.len, "mem"), TK_OK);
	CHECK_EQ_INT(tk_reader_next(r, &rec), TK_EOF);
	tk_reader_free(r);
	mem_free(&m);
}

TEST(an_idle_live_input_lets_the_merge_go_on)
{
	struct mem_trace a, b, out;
	struct tk_writer *wa = mem_open(&a, NULL), *wb = mem_open(&b, NULL);
	struct tk_writer *wo = mem_open(&out, NULL);
	struct tk_reader *ra = tk_reader_new(), *rb = tk_reader_new();
	tk_reader_open_feed(ra, "a");
	tk_reader_open_feed(rb, "b");
	struct tk_merge *mg = tk_merge_new(wo, NULL);
	tk_merge_add(mg, ra, NULL, 0);
	tk_merge_add(mg, rb, NULL, 0);
	long sa = 0, sb = 0;
	struct tk_merge_stats st;

	uint32_t ta = thread_of(wa, 1), tb = thread_of(wb, 2);
	range(wa, ta, 10, "a1");
	tk_writer_watermark(wa, 10);
	tk_writer_flush(wa);
	range(wb, tb, 20, "b1");
	tk_writer_watermark(wb, 20);
	tk_writer_flush(wb);
	feed_new(&a, ra, &sa);
	feed_new(&b, rb, &sb);
	CHECK_EQ_INT(tk_merge_step(mg), TK_OK);
	tk_merge_stats(mg, &st);
	CHECK_EQ_INT(st.events, 1); /* a1; b1 waits for a */

	/* a has nothing new, but time went on: a heartbeat */
	tk_writer_watermark(wa, 30);
	tk_writer_flush(wa);
	feed_new(&a, ra, &sa);
	CHECK_EQ_INT(tk_merge_step(mg), TK_OK);
	tk_merge_stats(mg, &st);
	CHECK_EQ_INT(st.events, 2);

	tk_writer_close(wa);
	tk_writer_close(wb);
	feed_new(&a, ra, &sa);
	feed_new(&b, rb, &sb);
	tk_reader_feed_end(ra);
	tk_reader_feed_end(rb);
	CHECK_EQ_INT(tk_merge_run(mg), TK_OK);
	tk_merge_stats(mg, &st);
	CHECK_EQ_INT(st.events, 2);
	CHECK_EQ_INT(st.late, 0);
	tk_merge_free(mg);
	mem_finish(&a, 0);
	mem_finish(&b, 0);
	mem_finish(&out, 1);
	uint64_t n;
	CHECK_EQ_INT(count_events(out.buf, out.len, &n), TK_EOF);
	CHECK_EQ_INT(n, 2);
	mem_free(&a);
	mem_free(&b);
	mem_free(&out);
}

/* The watermark of each chunk of a trace with events, in order. */
static size_t
watermarks(const uint8_t *buf, size_t len, int64_t *wm, size_t max)
{
	struct tk_reader *r = tk_reader_new();
	const struct tk_event *e;
	size_t n = 0;
	uint64_t last = UINT64_MAX;
	tk_reader_open_mem(r, buf, len, "mem");
	while (tk_reader_next_event(r, &e) == TK_OK) {
		const struct tk_chunk_info *c = tk_reader_chunk(r);
		if (c->offset != last && n < max) {
			wm[n++] = c->watermark;
			last = c->offset;
		}
	}
	tk_reader_free(r);
	return n;
}

TEST(hold_caps_the_promise_not_the_events)
{
	struct mem_trace a, out;
	struct tk_writer *wa = mem_open(&a, NULL);
	struct tk_writer *wo = mem_open(&out, NULL);
	struct tk_reader *ra = tk_reader_new();
	tk_reader_open_feed(ra, "a");
	struct tk_merge *mg = tk_merge_new(wo, NULL);
	tk_merge_add(mg, ra, NULL, 0);
	long sa = 0;
	struct tk_merge_stats st;

	uint32_t ta = thread_of(wa, 1);
	range(wa, ta, 100, "early");
	range(wa, ta, 200, "later");
	tk_writer_watermark(wa, 300);
	tk_writer_flush(wa);
	feed_new(&a, ra, &sa);
	/* an event beginning at 150 is still to come (a process that ends
	 * later): written events go out, the promise stays at 150 */
	tk_merge_hold(mg, 150);
	CHECK_EQ_INT(tk_merge_step(mg), TK_OK);
	tk_merge_stats(mg, &st);
	CHECK_EQ_INT(st.events, 2);
	tk_writer_flush(wo);

	range(wa, ta, 150, "lifetime");
	range(wa, ta, 400, "last");
	tk_writer_watermark(wa, 400);
	tk_writer_close(wa);
	feed_new(&a, ra, &sa);
	tk_reader_feed_end(ra);
	tk_merge_hold(mg, INT64_MAX);
	CHECK_EQ_INT(tk_merge_run(mg), TK_OK);
	tk_merge_stats(mg, &st);
	CHECK_EQ_INT(st.events, 4);
	CHECK_EQ_INT(st.late, 1);
	tk_merge_free(mg);
	mem_finish(&a, 0);
	mem_finish(&out, 1);

	/* the late event came after a chunk that promised no more than 150 */
	int64_t wm[8];
	size_t n = watermarks(out.buf, out.len, wm, 8);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(wm[0], 150);
	mem_free(&a);
	mem_free(&out);
}

/* Input a is live and has promised nothing beyond 10; input b, a file,
 * holds 50000 events from 1000 on.  None of b's can go out before a
 * moves on.  Returns the merge's stats at that point in *mid. */
static void
wait_for_live(int sorted, struct tk_merge_stats *mid, struct tk_merge_stats *end)
{
	struct mem_trace a, b, out;
	struct tk_writer_options bo = TK_WRITER_OPTIONS_INIT;
	bo.sorted = sorted;
	struct tk_writer *wa = mem_open(&a, NULL), *wb = mem_open(&b, &bo);
	struct tk_writer *wo = mem_open(&out, NULL);
	uint32_t tb = thread_of(wb, 2);
	for (int i = 0; i < 50000; i++)
		range(wb, tb, 1000 + i, "b");
	mem_finish(&b, 1);
	struct tk_reader *ra = tk_reader_new(), *rb = tk_reader_new();
	tk_reader_open_feed(ra, "a");
	tk_reader_open_mem(rb, b.buf, b.len, "b");
	struct tk_merge_options o = { 0 };
	o.memory_limit = 64 * 1024;
	struct tk_merge *mg = tk_merge_new(wo, &o);
	tk_merge_add(mg, ra, NULL, 0);
	tk_merge_add(mg, rb, NULL, 0);
	long sa = 0;
	uint32_t ta = thread_of(wa, 1);
	range(wa, ta, 10, "a");
	tk_writer_watermark(wa, 10);
	tk_writer_flush(wa);
	feed_new(&a, ra, &sa);
	alarm(20);
	CHECK_EQ_INT(tk_merge_step(mg), TK_OK);
	tk_merge_stats(mg, mid);
	tk_writer_close(wa);
	feed_new(&a, ra, &sa);
	tk_reader_feed_end(ra);
	CHECK_EQ_INT(tk_merge_run(mg), TK_OK);
	alarm(0);
	tk_merge_stats(mg, end);
	tk_merge_free(mg);
	mem_finish(&a, 0);
	mem_finish(&out, 1);
	mem_free(&a);
	mem_free(&b);
	mem_free(&out);
}

TEST(a_waiting_input_leaves_the_others_unread)
{
	/* b promises order: it is left unread while a waits */
	struct tk_merge_stats mid, end;
	wait_for_live(1, &mid, &end);
	CHECK_EQ_INT(mid.events, 1);
	CHECK_EQ_INT(mid.spilled, 0);
	CHECK_EQ_INT(end.events, 50001);
	CHECK_EQ_INT(end.late, 0);
	/* b promises nothing: it must be read (and spilled) once, not read
	 * back and spilled again and again until a moves on */
	wait_for_live(0, &mid, &end);
	CHECK_EQ_INT(mid.events, 1);
	CHECK(mid.spilled > 0 && mid.spilled <= 50000);
	CHECK_EQ_INT(end.events, 50001);
	CHECK_EQ_INT(end.late, 0);
}

int
main(void)
{
	RUN(flush_writes_a_heartbeat_when_only_the_watermark_moved);
	RUN(an_idle_live_input_lets_the_merge_go_on);
	RUN(hold_caps_the_promise_not_the_events);
	RUN(a_waiting_input_leaves_the_others_unread);
	return tap_done();
}
