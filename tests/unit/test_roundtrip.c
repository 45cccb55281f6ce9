/* SPDX-License-Identifier: MIT */
/*
 * Write → read equality: every event kind with every attribute set to
 * random values (extremes included), every definition type, at several
 * compression levels and chunk sizes.  Fields are compared one by one,
 * written out here rather than taken from the library's schema table, so
 * that a wrong table entry is caught.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>

#include "helpers.h"
#include "reader_private.h"
#include "tap.h"

#define NAMES 40
#define EVENTS 6000

static char *names[NAMES];

static void
make_names(void)
{
	for (int i = 0; i < NAMES; i++) {
		size_t len = i == 0 ? 0 : i == 1 ? 3000 : 1 + rnd_below(60);
		names[i] = malloc(len + 1);
		for (size_t j = 0; j < len; j++)
			names[i][j] = (char)(' ' + rnd_below(95));
		names[i][len] = 0;
	}
	free(names[2]);
	names[2] = strdup("void at::native::kernel<float, 4>(int, float*)");
	free(names[3]);
	names[3] = strdup("\xe2\x9c\x93 unicode \xce\xbb");
}

struct tracks {
	uint32_t proc[2], thread[3], stream[3], counter[2];
	uint32_t dev[2];
};

static struct tracks
define_all(struct tk_writer *w)
{
	struct tracks t;
	const char *argv0[] = { "python3", "train.py", "--lr", "3e-4", "" };
	const char *argv1[] = { "bash" };
	struct tk_process p = { "node-a", 1234, 1, 1700000000000000000ll, 5, argv0, "rank0" };
	t.proc[0] = tk_writer_process(w, 0, &p);
	p = (struct tk_process){ "node-b", 99, 1234, -5, 1, argv1, "" };
	t.proc[1] = tk_writer_process(w, 0, &p);
	struct tk_thread th = { t.proc[0], 1234, "main" };
	t.thread[0] = tk_writer_thread(w, 0, &th);
	th = (struct tk_thread){ t.proc[0], 1240, "" };
	t.thread[1] = tk_writer_thread(w, 0, &th);
	th = (struct tk_thread){ t.proc[1], 99, "worker" };
	t.thread[2] = tk_writer_thread(w, 0, &th);
	struct tk_device d = { 0, "node-a", 0, "NVIDIA H100 80GB HBM3", { 1, 2, 3 },
	                       132, 85520809984ull, 9, 0 };
	t.dev[0] = tk_writer_device(w, 0, &d);
	d.index = 1;
	d.uuid[15] = 0xff;
	d.name = "NVIDIA A100-SXM4-40GB";
	t.dev[1] = tk_writer_device(w, 0, &d);
	for (int i = 0; i < 3; i++) {
		struct tk_stream s = { t.proc[0], t.dev[i % 2], 77, (uint64_t)7 + i, i ? "" : "compute" };
		t.stream[i] = tk_writer_stream(w, 0, &s);
	}
	struct tk_counter c = { "rss", "bytes", t.proc[0], 0 };
	t.counter[0] = tk_writer_counter(w, 0, &c);
	c = (struct tk_counter){ "device memory", "bytes", 0, t.dev[1] };
	t.counter[1] = tk_writer_counter(w, 0, &c);
	tk_writer_meta(w, "command", "python3 train.py");
	tk_writer_meta(w, "label", "before");
	tk_writer_meta(w, "label", "after");
	tk_writer_category(w, "my_domain", 3, "io");
	return t;
}

static uint32_t
pick_track(const struct tracks *t, unsigned kind)
{
	switch (kind) {
	case TK_KERNEL: case TK_MEMCPY: case TK_MEMSET: case TK_MEMORY:
		return t->stream[rnd_below(3)];
	case TK_COUNTER:
		return t->counter[rnd_below(2)];
	case TK_PROCESS: case TK_RUN:
		return t->proc[rnd_below(2)];
	default:
		return t->thread[rnd_below(3)];
	}
}

static uint64_t
rnd_value(void)
{
	switch (rnd_below(4)) {
	case 0: return 0;
	case 1: return rnd_below(10);
	case 2: return UINT64_MAX - rnd_below(3);
	default: return rnd();
	}
}

static uint32_t rnd_u32(void) { return (uint32_t)rnd_value(); }

/* Args text of random bytes, rich in what the args templates must
 * give back as they were: numbers, runs with leading zeros, runs too
 * long for a number, the largest number, bytes 0 and 255.  In `pool`,
 * which lives as long as the test. */
#define ARGS_POOL 64
static struct { char text[64]; uint32_t len; } args_pool[ARGS_POOL];

static void
fill_args_pool(void)
{
	static const char *const pieces[] = {
		"{\"External id\":", "1", "42", "0", "007", "00",
		"999999999999999999", "1000000000000000000", "12345678901234567890123",
		",\"x\":[", "]", "}", "-", ".", "e5", "\xff", "a",
	};
	const size_t npieces = sizeof(pieces) / sizeof(pieces[0]);
	for (int i = 0; i < ARGS_POOL; i++) {
		uint32_t len = 0;
		while (len < 40) {
			const char *pc = pieces[rnd_below(npieces)];
			size_t n = strlen(pc);
			if (len + n > sizeof(args_pool[i].text))
				break;
			memcpy(args_pool[i].text + len, pc, n);
			len += (uint32_t)n;
		}
		if (i % 16 == 15) /* a byte 0: stored as is, not templated */
			args_pool[i].text[rnd_below(len)] = 0;
		args_pool[i].len = len;
	}
}

static void
random_event(struct tk_event *e, const struct tracks *t)
{
	memset(e, 0, sizeof(*e));
	e->kind = 1 + (uint32_t)rnd_below(TK_KIND_MAX);
	e->track = pick_track(t, e->kind);
	switch (rnd_below(5)) {
	case 0: e->ts = (int64_t)(rnd() >> 2) - (INT64_MAX >> 2); break;
	case 1: e->ts = INT64_MIN + 1; break;
	default: e->ts = 1700000000000000000ll + (int64_t)rnd_below(1000000000000ll); break;
	}
	e->dur = rnd_below(3) ? (int64_t)rnd_below(1ull << 40) : 0;
	if (rnd_below(50) == 0) {
		e->dur = INT64_MAX / 2;
		e->ts = INT64_MAX - e->dur;
	}
	e->name = names[rnd_below(NAMES)];
	if (rnd_below(8) == 0) {
		static const char *args[] = { "{\"a\":1}", "{\"External id\":123,\"x\":[1,2]}", "{}" };
		e->args = args[rnd_below(3)];
		e->args_len = (uint32_t)strlen(e->args);
	} else if (rnd_below(4) == 0) {
		unsigned i = (unsigned)rnd_below(ARGS_POOL);
		/* no byte 0 in most chunks: a rare pick of those */
		if (i % 16 == 15 && rnd_below(64))
			i--;
		e->args = args_pool[i].text;
		e->args_len = args_pool[i].len;
	}
	switch (e->kind) {
	case TK_RANGE: case TK_ASYNC_RANGE: case TK_MARK:
		e->u.range.domain = names[rnd_below(NAMES)];
		e->u.range.category = rnd_u32();
		e->u.range.color = rnd_u32();
		e->u.range.payload_type = (uint32_t)rnd_below(4);
		e->u.range.payload.u = rnd_value();
		e->u.range.id = rnd_value();
		e->u.range.end_track = t->thread[rnd_below(3)];
		break;
	case TK_API:
		e->u.api.domain = (uint32_t)rnd_below(4);
		e->u.api.cbid = rnd_u32();
		e->u.api.correlation = rnd_value();
		e->u.api.result = (int32_t)rnd_u32();
		break;
	case TK_KERNEL:
		e->u.kernel.correlation = rnd_value();
		for (int i = 0; i < 3; i++) {
			/* few configurations, as in real runs */
			e->u.kernel.grid[i] = (uint32_t)(rnd_below(3) ? rnd_below(4) : rnd_value());
			e->u.kernel.block[i] = (uint32_t)rnd_below(3);
			e->u.kernel.cluster[i] = (uint32_t)rnd_below(2);
		}
		e->u.kernel.static_smem = rnd_u32();
		e->u.kernel.dynamic_smem = (uint32_t)rnd_below(2);
		e->u.kernel.registers = (uint32_t)rnd_below(256);
		e->u.kernel.graph_id = rnd_u32();
		e->u.kernel.graph_node = rnd_value();
		e->u.kernel.mangled = rnd_below(2) ? names[rnd_below(NAMES)] : "";
		break;
	case TK_MEMCPY:
		e->u.memcpy.correlation = rnd_value();
		e->u.memcpy.bytes = rnd_value();
		e->u.memcpy.copy_kind = (uint32_t)rnd_below(11);
		e->u.memcpy.src_kind = (uint32_t)rnd_below(8);
		e->u.memcpy.dst_kind = (uint32_t)rnd_below(8);
		e->u.memcpy.src_device = rnd_u32();
		e->u.memcpy.dst_device = rnd_u32();
		e->u.memcpy.flags = rnd_u32();
		break;
	case TK_MEMSET:
		e->u.memset.correlation = rnd_value();
		e->u.memset.bytes = rnd_value();
		e->u.memset.value = rnd_u32();
		e->u.memset.mem_kind = rnd_u32();
		e->u.memset.flags = rnd_u32();
		break;
	case TK_SYNC:
		e->u.sync.correlation = rnd_value();
		e->u.sync.type = rnd_u32();
		break;
	case TK_OVERHEAD:
		e->u.overhead.type = rnd_u32();
		break;
	case TK_COUNTER: {
		uint64_t bits = rnd_value();
		memcpy(&e->u.counter.value, &bits, 8);
		if (rnd_below(2))
			e->u.counter.value = (double)rnd_below(1ull << 40);
		break;
	}
	case TK_MEMORY:
		e->u.memory.correlation = rnd_value();
		e->u.memory.op = rnd_u32();
		e->u.memory.mem_kind = rnd_u32();
		e->u.memory.address = rnd_value();
		e->u.memory.bytes = rnd_value();
		break;
	case TK_PROCESS:
		e->u.process.exit = rnd_u32();
		e->u.process.exit_code = (int32_t)rnd_u32();
		e->u.process.signal = rnd_u32();
		e->u.process.utime = (int64_t)rnd_value();
		e->u.process.stime = (int64_t)rnd_value();
		e->u.process.max_rss = rnd_value();
		e->u.process.minflt = rnd_value();
		e->u.process.majflt = rnd_value();
		e->u.process.nvcsw = rnd_value();
		e->u.process.nivcsw = rnd_value();
		break;
	case TK_RUN:
		e->u.run.index = rnd_u32();
		e->u.run.exit = rnd_u32();
		e->u.run.exit_code = (int32_t)rnd_u32();
		e->u.run.signal = rnd_u32();
		break;
	case TK_DROPPED:
		e->u.dropped.count = rnd_value();
		e->u.dropped.reason = names[rnd_below(NAMES)];
		break;
	case TK_FLOW:
		e->u.flow.id = rnd_value();
		e->u.flow.phase = rnd_u32();
		e->u.flow.category = names[rnd_below(NAMES)];
		break;
	}
}

#define SAME(f) same &= (a->f == b->f)
#define SAME_STR(f) same &= (strcmp(a->f, b->f) == 0)

/* Compare what was written (a) with what was read (b). */
static int
same_event(const struct tk_event *a, const struct tk_event *b)
{
	int same = 1;
	SAME(kind); SAME(track); SAME(ts); SAME(dur);
	SAME_STR(name);
	same &= (a->args_len == b->args_len);
	if (a->args_len && b->args)
		same &= memcmp(a->args, b->args, a->args_len) == 0;
	same &= (a->args_len == 0) == (b->args == NULL);
	switch (a->kind) {
	case TK_RANGE: case TK_ASYNC_RANGE: case TK_MARK:
		SAME_STR(u.range.domain); SAME(u.range.category); SAME(u.range.color);
		SAME(u.range.payload_type); SAME(u.range.payload.u); SAME(u.range.id);
		SAME(u.range.end_track);
		break;
	case TK_API:
		SAME(u.api.domain); SAME(u.api.cbid); SAME(u.api.correlation);
		SAME(u.api.result);
		break;
	case TK_KERNEL:
		SAME(u.kernel.correlation);
		for (int i = 0; i < 3; i++) {
			SAME(u.kernel.grid[i]); SAME(u.kernel.block[i]);
			SAME(u.kernel.cluster[i]);
		}
		SAME(u.kernel.static_smem); SAME(u.kernel.dynamic_smem);
		SAME(u.kernel.registers); SAME(u.kernel.graph_id);
		SAME(u.kernel.graph_node); SAME_STR(u.kernel.mangled);
		break;
	case TK_MEMCPY:
		SAME(u.memcpy.correlation); SAME(u.memcpy.bytes);
		SAME(u.memcpy.copy_kind); SAME(u.memcpy.src_kind);
		SAME(u.memcpy.dst_kind); SAME(u.memcpy.src_device);
		SAME(u.memcpy.dst_device); SAME(u.memcpy.flags);
		break;
	case TK_MEMSET:
		SAME(u.memset.correlation); SAME(u.memset.bytes); SAME(u.memset.value);
		SAME(u.memset.mem_kind); SAME(u.memset.flags);
		break;
	case TK_SYNC:
		SAME(u.sync.correlation); SAME(u.sync.type);
		break;
	case TK_OVERHEAD:
		SAME(u.overhead.type);
		break;
	case TK_COUNTER:
		same &= memcmp(&a->u.counter.value, &b->u.counter.value, 8) == 0;
		break;
	case TK_MEMORY:
		SAME(u.memory.correlation); SAME(u.memory.op); SAME(u.memory.mem_kind);
		SAME(u.memory.address); SAME(u.memory.bytes);
		break;
	case TK_PROCESS:
		SAME(u.process.exit); SAME(u.process.exit_code); SAME(u.process.signal);
		SAME(u.process.utime); SAME(u.process.stime); SAME(u.process.max_rss);
		SAME(u.process.minflt); SAME(u.process.majflt); SAME(u.process.nvcsw);
		SAME(u.process.nivcsw);
		break;
	case TK_RUN:
		SAME(u.run.index); SAME(u.run.exit); SAME(u.run.exit_code);
		SAME(u.run.signal);
		break;
	case TK_DROPPED:
		SAME(u.dropped.count); SAME_STR(u.dropped.reason);
		break;
	case TK_FLOW:
		SAME(u.flow.id); SAME(u.flow.phase); SAME_STR(u.flow.category);
		break;
	}
	return same;
}

static void
check_defs(struct tk_reader *r, const struct tracks *t)
{
	const struct tk_track *p = tk_reader_track(r, t->proc[0]);
	CHECK(p && p->type == TK_TRACK_PROCESS);
	if (p && p->type == TK_TRACK_PROCESS) {
		CHECK_STR(p->u.process.host, "node-a");
		CHECK_EQ_INT(p->u.process.pid, 1234);
		CHECK_EQ_INT(p->u.process.ppid, 1);
		CHECK_EQ_INT(p->u.process.start, 1700000000000000000ll);
		CHECK_EQ_INT(p->u.process.argc, 5);
		CHECK_STR(p->u.process.argv[3], "3e-4");
		CHECK_STR(p->u.process.argv[4], "");
		CHECK_STR(p->u.process.label, "rank0");
	}
	p = tk_reader_track(r, t->proc[1]);
	CHECK(p && p->u.process.start == -5 && p->u.process.argc == 1);
	const struct tk_track *th = tk_reader_track(r, t->thread[2]);
	CHECK(th && th->type == TK_TRACK_THREAD && th->u.thread.tid == 99 &&
	      th->u.thread.process == t->proc[1]);
	const struct tk_track *s = tk_reader_track(r, t->stream[0]);
	CHECK(s && s->type == TK_TRACK_STREAM && s->u.stream.stream == 7 &&
	      s->u.stream.context == 77 && s->u.stream.device == t->dev[0]);
	if (s)
		CHECK_STR(s->u.stream.name, "compute");
	const struct tk_track *c = tk_reader_track(r, t->counter[1]);
	CHECK(c && c->type == TK_TRACK_COUNTER && c->u.counter.device == t->dev[1]);
	const struct tk_device *d = tk_reader_device(r, t->dev[1]);
	CHECK(d && d->index == 1 && d->sm_count == 132 &&
	      d->memory == 85520809984ull && d->cc_major == 9 && d->uuid[0] == 1 &&
	      d->uuid[15] == 0xff);
	if (d)
		CHECK_STR(d->name, "NVIDIA A100-SXM4-40GB");
	CHECK_STR(tk_reader_meta_get(r, "label"), "after");
	CHECK_STR(tk_reader_meta(r, 1)->value, "before");
	CHECK(tk_reader_meta(r, 3) == NULL);
}

static void
roundtrip(int level, uint32_t chunk_bytes, int threads)
{
	static struct tk_event events[EVENTS];
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.level = level;
	o.chunk_bytes = chunk_bytes;
	o.threads = threads;
	struct mem_trace m;
	struct tk_writer *w = mem_open(&m, &o);
	struct tracks t = define_all(w);
	for (int i = 0; i < EVENTS; i++) {
		random_event(&events[i], &t);
		if (tk_writer_event(w, &events[i]) != TK_OK) {
			fprintf(stderr, "# event %d: %s\n", i, tk_writer_error(w));
			CHECK(0);
			return;
		}
		if (i == EVENTS / 2) {
			/* rename a thread midway */
			struct tk_thread th = { t.proc[0], 1240, "renamed" };
			CHECK(tk_writer_thread(w, t.thread[1], &th) == t.thread[1]);
		}
	}
	CHECK_EQ_INT(tk_writer_events(w), EVENTS);
	mem_finish(&m, 1);

	struct tk_reader *r = tk_reader_new();
	CHECK(tk_reader_open_mem(r, m.buf, m.len, "mem") == TK_OK);
	struct tk_record rec;
	int rc, i = 0, mismatches = 0, tracks = 0, devices = 0, metas = 0, cats = 0;
	int grouped = 0, templated = 0;
	while ((rc = tk_reader_next(r, &rec)) == TK_OK) {
		switch (rec.type) {
		case TK_REC_EVENT:
			grouped += (tk_reader_chunk(r)->flags & TK_CHUNK_GROUPED) != 0;
			templated += (tk_reader_chunk(r)->flags & TK_CHUNK_ARGS_TEMPLATES) != 0;
			if (i < EVENTS && !same_event(&events[i], rec.u.event)) {
				if (mismatches++ < 3)
					fprintf(stderr, "# event %d (%s) differs\n", i,
					        tk_kind_name(events[i].kind));
			}
			if (i == 0)
				check_defs(r, &t);
			i++;
			break;
		case TK_REC_TRACK: tracks++; break;
		case TK_REC_DEVICE: devices++; break;
		case TK_REC_META: metas++; break;
		case TK_REC_CATEGORY:
			cats++;
			CHECK_STR(rec.u.category->domain, "my_domain");
			CHECK_STR(rec.u.category->name, "io");
			CHECK_EQ_INT(rec.u.category->category, 3);
			break;
		default: CHECK(0);
		}
	}
	CHECK_EQ_INT(rc, TK_EOF);
	CHECK_EQ_INT(i, EVENTS);
	CHECK_EQ_INT(mismatches, 0);
	/* events of two processes interleave: the chunks are stored grouped */
	CHECK(grouped > EVENTS / 2);
	/* args are stored as templates, except with a byte 0 */
	CHECK(templated > EVENTS / 2);
	CHECK_EQ_INT(tracks, 2 + 3 + 3 + 2 + 1); /* + the rename */
	CHECK_EQ_INT(devices, 2);
	CHECK_EQ_INT(metas, 3);
	CHECK_EQ_INT(cats, 1);
	const struct tk_track *th = tk_reader_track(r, t.thread[1]);
	CHECK(th && strcmp(th->u.thread.name, "renamed") == 0);
	tk_reader_free(r);
	mem_free(&m);
}

TEST(roundtrip_default) { roundtrip(6, 256 * 1024, 0); }
TEST(roundtrip_stored) { roundtrip(0, 256 * 1024, 0); }
TEST(roundtrip_small_chunks_level1) { roundtrip(1, 2048, 0); }
TEST(roundtrip_level12) { roundtrip(12, 64 * 1024, 0); }
TEST(roundtrip_threaded) { roundtrip(1, 2048, 1); }
TEST(roundtrip_threaded_stored) { roundtrip(0, 4096, 1); }
TEST(roundtrip_four_threads) { roundtrip(6, 2048, 4); }

/* The same events, without writer threads and with 1 to 8: the same
 * bytes, and the offset counts every one of them. */
static void
write_random(struct mem_trace *m, int threads, uint64_t seed)
{
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.chunk_bytes = 4096;
	o.threads = threads;
	struct tk_writer *w = mem_open(m, &o);
	struct tracks t = define_all(w);
	test_rng = seed;
	struct tk_event e;
	for (int i = 0; i < EVENTS; i++) {
		random_event(&e, &t);
		if (tk_writer_event(w, &e) != TK_OK)
			abort();
	}
	CHECK_EQ_INT(tk_writer_close(w), TK_OK);
	CHECK_EQ_INT(tk_writer_offset(w), lseek(fileno(m->f), 0, SEEK_END));
	mem_finish(m, 0);
}

TEST(threaded_writer_same_bytes)
{
	struct mem_trace one, two;
	write_random(&one, 0, 12345);
	CHECK(one.len > 40000); /* many chunks */
	const int counts[] = { 1, 2, 3, 8 };
	for (size_t i = 0; i < sizeof(counts) / sizeof(*counts); i++) {
		write_random(&two, counts[i], 12345);
		CHECK_EQ_INT(one.len, two.len);
		CHECK(one.len == two.len && memcmp(one.buf, two.buf, one.len) == 0);
		mem_free(&two);
	}
	mem_free(&one);
}

/* An output that fails (here a pipe whose reader has gone) with writer
 * threads: a later event says so, with the errno, soon after (not only
 * at close); nothing hangs. */
TEST(threaded_writer_failed_output)
{
	const int counts[] = { 0, 1, 3 };
	for (size_t i = 0; i < sizeof(counts) / sizeof(*counts); i++) {
		int fds[2];
		CHECK(pipe(fds) == 0);
		signal(SIGPIPE, SIG_IGN);
		struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
		o.chunk_bytes = 2048;
		o.threads = counts[i];
		struct tk_writer *w = tk_writer_new();
		CHECK_EQ_INT(tk_writer_open_fd(w, fds[1], "pipe", &o), TK_OK);
		close(fds[0]);
		struct tracks t = define_all(w);
		struct tk_event e;
		int rc = TK_OK, k = 0;
		for (; k < 5000 && rc == TK_OK; k++) {
			random_event(&e, &t);
			rc = tk_writer_event(w, &e);
		}
		if (rc == TK_OK)
			rc = tk_writer_close(w);
		CHECK_EQ_INT(rc, TK_EIO);
		CHECK_EQ_INT(tk_writer_errno(w), EPIPE);
		CHECK(k < 5000); /* told by a call soon after, not only at close */
		tk_writer_free(w);
		close(fds[1]);
		signal(SIGPIPE, SIG_DFL);
	}
}

/* The merge's batch read (tkp_reader_take_events) gives the events
 * tk_reader_next() gives, across chunks and definitions. */
TEST(take_events_in_batches)
{
	static struct tk_event events[EVENTS];
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.chunk_bytes = 2048;
	struct mem_trace m;
	struct tk_writer *w = mem_open(&m, &o);
	struct tracks t = define_all(w);
	for (int i = 0; i < EVENTS; i++) {
		random_event(&events[i], &t);
		CHECK_EQ_INT(tk_writer_event(w, &events[i]), TK_OK);
		if (i % 1000 == 999) { /* definitions between events */
			char name[32];
			snprintf(name, sizeof(name), "thread %d", i);
			struct tk_thread th = { t.proc[0], 5000 + i, name };
			CHECK(tk_writer_thread(w, 0, &th) != 0);
		}
	}
	mem_finish(&m, 1);

	struct tk_reader *r = tk_reader_new();
	CHECK_EQ_INT(tk_reader_open_mem(r, m.buf, m.len, "mem"), TK_OK);
	static struct tk_event batch[7];
	int n = 0, mismatches = 0, batches = 0, rc = TK_OK;
	while (rc == TK_OK) {
		uint32_t k = tkp_reader_take_events(r, batch, sizeof(batch[0]), 7);
		batches += k > 0;
		for (uint32_t j = 0; j < k; j++, n++)
			mismatches += n >= EVENTS || !same_event(&events[n], &batch[j]);
		if (k)
			continue;
		struct tk_record rec;
		rc = tk_reader_next(r, &rec);
		if (rc == TK_OK && rec.type == TK_REC_EVENT)
			mismatches += n >= EVENTS || !same_event(&events[n++], rec.u.event);
	}
	CHECK_EQ_INT(rc, TK_EOF);
	CHECK_EQ_INT(n, EVENTS);
	CHECK_EQ_INT(mismatches, 0);
	CHECK(batches > EVENTS / 7 / 2); /* most came in batches */
	tk_reader_free(r);
	mem_free(&m);
}

/* A flush of a threaded writer returns once the bytes are out: what was
 * written before it reads back while the writer is still open. */
TEST(threaded_writer_flush)
{
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.threads = 3;
	o.chunk_bytes = 4096; /* chunks in flight on every thread */
	struct mem_trace m;
	struct tk_writer *w = mem_open(&m, &o);
	struct tracks t = define_all(w);
	struct tk_event e;
	for (int round = 1; round <= 3; round++) {
		for (int i = 0; i < 1000; i++) {
			random_event(&e, &t);
			CHECK_EQ_INT(tk_writer_event(w, &e), TK_OK);
		}
		CHECK_EQ_INT(tk_writer_flush(w), TK_OK);
		long n = lseek(fileno(m.f), 0, SEEK_END);
		CHECK_EQ_INT(tk_writer_offset(w), n);
		uint8_t *b = malloc((size_t)n);
		CHECK(b && pread(fileno(m.f), b, (size_t)n, 0) == n);
		uint64_t got = 0;
		/* no end chunk yet: every event, then "truncated" */
		CHECK_EQ_INT(count_events(b, (size_t)n, &got), TK_ETRUNC);
		CHECK_EQ_INT(got, round * 1000);
		free(b);
	}
	mem_finish(&m, 1);
	mem_free(&m);
}

/* A sorted writer checks order and promises it in each watermark. */
TEST(sorted_writer)
{
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.sorted = 1;
	o.chunk_bytes = 1024;
	struct mem_trace m;
	struct tk_writer *w = mem_open(&m, &o);
	struct tk_thread th = { 0, 1, "t" };
	uint32_t t = tk_writer_thread(w, 0, &th);
	struct tk_event e = { .kind = TK_MARK, .track = t, .name = "m" };
	for (int i = 0; i < 2000; i++) {
		e.ts = 1000 + i * 10;
		CHECK(tk_writer_event(w, &e) == TK_OK);
	}
	e.ts = 5;
	CHECK(tk_writer_event(w, &e) == TK_EINVAL);
	mem_finish(&m, 1);
	struct tk_reader *r = tk_reader_new();
	const struct tk_event *ev;
	/* every event begins at or after the previous chunk's watermark */
	int64_t bound = INT64_MIN, this_watermark = INT64_MIN;
	uint64_t chunk = UINT64_MAX;
	int n = 0, chunks = 0;
	CHECK(tk_reader_open_mem(r, m.buf, m.len, "mem") == TK_OK);
	while (tk_reader_next_event(r, &ev) == TK_OK) {
		const struct tk_chunk_info *ci = tk_reader_chunk(r);
		if (ci->offset != chunk) {
			bound = this_watermark;
			this_watermark = ci->watermark;
			chunk = ci->offset;
			chunks++;
		}
		CHECK(ci->flags & TK_CHUNK_SORTED);
		CHECK(ev->ts >= bound);
		n++;
	}
	CHECK_EQ_INT(n, 2000);
	CHECK(chunks > 3);
	tk_reader_free(r);
	mem_free(&m);
}

/* Many distinct strings and launch configurations: definitions alone
 * fill chunks, and ids stay right across them. */
TEST(many_definitions)
{
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.chunk_bytes = 4096;
	struct mem_trace m;
	struct tk_writer *w = mem_open(&m, &o);
	struct tk_thread th = { 0, 1, "t" };
	uint32_t t = tk_writer_thread(w, 0, &th);
	char name[64];
	for (int i = 0; i < 30000; i++) {
		snprintf(name, sizeof(name), "kernel_%d_%d", i, i * 7919);
		struct tk_event e = { .kind = TK_KERNEL, .track = t, .ts = i, .dur = 1,
		                      .name = name };
		e.u.kernel.grid[0] = (uint32_t)i;
		CHECK(tk_writer_event(w, &e) == TK_OK);
	}
	mem_finish(&m, 1);
	struct tk_reader *r = tk_reader_new();
	const struct tk_event *ev;
	int i = 0, bad = 0;
	CHECK(tk_reader_open_mem(r, m.buf, m.len, "mem") == TK_OK);
	while (tk_reader_next_event(r, &ev) == TK_OK) {
		/* one thread: nothing to group */
		bad += (tk_reader_chunk(r)->flags & TK_CHUNK_GROUPED) != 0;
		snprintf(name, sizeof(name), "kernel_%d_%d", i, i * 7919);
		bad += strcmp(ev->name, name) != 0 || ev->u.kernel.grid[0] != (uint32_t)i ||
		       ev->ts != i;
		i++;
	}
	CHECK_EQ_INT(i, 30000);
	CHECK_EQ_INT(bad, 0);
	tk_reader_free(r);
	mem_free(&m);
}

/* One event read by columns against the event written. */
static int
same_columns(struct tk_reader *r, const struct tk_columns *c, size_t j,
             const struct tk_event *want)
{
	return c->kind[j] == want->kind && c->track[j] == want->track &&
	       c->ts[j] == want->ts && c->dur[j] == want->dur &&
	       strcmp(tk_reader_string(r, c->name_id[j]), want->name) == 0;
}

/* Reading by columns gives every event's common fields, in order, across
 * chunks and definitions; mixed with reading events one by one, each
 * event comes out once. */
TEST(columns)
{
	static struct tk_event events[EVENTS];
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.chunk_bytes = 2048;
	struct mem_trace m;
	struct tk_writer *w = mem_open(&m, &o);
	struct tracks t = define_all(w);
	for (int i = 0; i < EVENTS; i++) {
		random_event(&events[i], &t);
		CHECK(tk_writer_event(w, &events[i]) == TK_OK);
	}
	mem_finish(&m, 1);

	struct tk_reader *r = tk_reader_new();
	struct tk_columns c;
	CHECK(tk_reader_open_mem(r, m.buf, m.len, "mem") == TK_OK);
	int rc, batches = 0, bad = 0;
	size_t i = 0;
	while ((rc = tk_reader_next_columns(r, &c)) == TK_OK) {
		batches++;
		for (size_t j = 0; j < c.n && i < EVENTS; j++, i++)
			bad += !same_columns(r, &c, j, &events[i]);
	}
	CHECK_EQ_INT(rc, TK_EOF);
	CHECK_EQ_INT(i, EVENTS);
	CHECK_EQ_INT(bad, 0);
	CHECK(batches > 10);
	tk_reader_free(r);

	/* three events one by one, then the rest of their chunk by columns */
	r = tk_reader_new();
	CHECK(tk_reader_open_mem(r, m.buf, m.len, "mem") == TK_OK);
	const struct tk_event *e;
	i = 0;
	bad = 0;
	for (;;) {
		int k;
		for (k = 0; k < 3 && (rc = tk_reader_next_event(r, &e)) == TK_OK; k++, i++)
			bad += i >= EVENTS || e->ts != events[i].ts ||
			       strcmp(e->name, events[i].name) != 0 ||
			       (e->kind == TK_API &&
			        e->u.api.correlation != events[i].u.api.correlation);
		if (k < 3 || (rc = tk_reader_next_columns(r, &c)) != TK_OK)
			break;
		for (size_t j = 0; j < c.n && i < EVENTS; j++, i++)
			bad += !same_columns(r, &c, j, &events[i]);
	}
	CHECK_EQ_INT(rc, TK_EOF);
	CHECK_EQ_INT(i, EVENTS);
	CHECK_EQ_INT(bad, 0);
	tk_reader_free(r);
	mem_free(&m);
}

/* `cat a.tkt b.tkt` by columns: the scope changes, and ids resolve in
 * the trace they came from. */
TEST(columns_scope)
{
	struct mem_trace a, b;
	const char *first[] = { "alpha", "beta" }, *second[] = { "gamma", "delta" };
	const char **names_of[] = { first, second };
	struct mem_trace *traces[] = { &a, &b };
	for (int k = 0; k < 2; k++) {
		struct tk_writer *w = mem_open(traces[k], NULL);
		if (k == 1) /* so that ids differ between the two */
			tk_writer_cstring(w, "unused");
		struct tk_thread th = { 0, 10 + k, "t" };
		uint32_t t = tk_writer_thread(w, 0, &th);
		for (int i = 0; i < 100; i++) {
			struct tk_event e = { .kind = TK_RANGE, .track = t, .ts = i,
			                      .name = names_of[k][i % 2] };
			CHECK(tk_writer_event(w, &e) == TK_OK);
		}
		mem_finish(traces[k], 1);
	}
	uint8_t *buf = malloc(a.len + b.len);
	memcpy(buf, a.buf, a.len);
	memcpy(buf + a.len, b.buf, b.len);
	struct tk_reader *r = tk_reader_new();
	struct tk_columns c;
	CHECK(tk_reader_open_mem(r, buf, a.len + b.len, "cat") == TK_OK);
	int rc, n[3] = { 0 }, bad = 0;
	while ((rc = tk_reader_next_columns(r, &c)) == TK_OK) {
		if (c.scope < 1 || c.scope > 2) {
			bad++;
			continue;
		}
		const struct tk_track *t = tk_reader_track(r, c.track[0]);
		bad += !t || t->u.thread.tid != (int64_t)(9 + c.scope);
		for (size_t j = 0; j < c.n; j++, n[c.scope]++)
			bad += strcmp(tk_reader_string(r, c.name_id[j]),
			              names_of[c.scope - 1][n[c.scope] % 2]) != 0;
	}
	CHECK_EQ_INT(rc, TK_EOF);
	CHECK(n[1] == 100 && n[2] == 100);
	CHECK_EQ_INT(bad, 0);
	tk_reader_free(r);
	free(buf);
	mem_free(&a);
	mem_free(&b);
}

/* Grouping is by process: one process with a device's counter (no
 * process) stays in time order; a second process makes the chunk
 * grouped, and its events still come back in time order. */
TEST(grouped_by_process)
{
	for (int procs = 1; procs <= 2; procs++) {
		struct mem_trace m;
		struct tk_writer *w = mem_open(&m, NULL);
		uint32_t thread[2], counter;
		for (int p = 0; p < procs; p++) {
			struct tk_process pr = { "h", 100 + p, 1, 0, 0, NULL, "" };
			uint32_t pt = tk_writer_process(w, 0, &pr);
			struct tk_thread th = { pt, 100 + p, "main" };
			thread[p] = tk_writer_thread(w, 0, &th);
		}
		struct tk_counter dc = { "device memory", "bytes", 0, 0 };
		counter = tk_writer_counter(w, 0, &dc);
		for (int i = 0; i < 300; i++) {
			struct tk_event e = { .kind = i % 3 ? TK_RANGE : TK_COUNTER,
			                      .track = i % 3 ? thread[i % procs] : counter,
			                      .ts = 1000 + i, .dur = i % 7, .name = "x" };
			e.u.counter.value = i;
			CHECK(tk_writer_event(w, &e) == TK_OK);
		}
		mem_finish(&m, 1);
		struct tk_reader *r = tk_reader_new();
		const struct tk_event *e;
		int n = 0, grouped = 0, bad = 0;
		CHECK(tk_reader_open_mem(r, m.buf, m.len, "mem") == TK_OK);
		while (tk_reader_next_event(r, &e) == TK_OK) {
			grouped += (tk_reader_chunk(r)->flags & TK_CHUNK_GROUPED) != 0;
			bad += e->ts != 1000 + n ||
			       e->track != (n % 3 ? thread[n % procs] : counter);
			n++;
		}
		CHECK_EQ_INT(n, 300);
		CHECK_EQ_INT(bad, 0);
		CHECK_EQ_INT(grouped, procs == 2 ? 300 : 0);
		tk_reader_free(r);
		mem_free(&m);
	}
}

/* Interning: equal strings, equal ids; the empty string is an id too. */
TEST(string_ids)
{
	struct mem_trace m;
	struct tk_writer *w = mem_open(&m, NULL);
	uint32_t a = tk_writer_cstring(w, "abc");
	uint32_t b = tk_writer_string(w, "abcdef", 3);
	uint32_t c = tk_writer_cstring(w, "abd");
	uint32_t e = tk_writer_cstring(w, "");
	CHECK(a && a == b && c != a && e && e != a);
	CHECK(tk_writer_string(w, "x\0y", 3) != tk_writer_string(w, "x\0z", 3));
	mem_finish(&m, 1);
	mem_free(&m);
}

/* The reader's promise in tracekit.h: the bytes of the union past the
 * event's kind's struct are zero.  Overhead events have a 4-byte struct,
 * shorter than a word; they come between kernels, whose struct fills
 * the union, and next to each other, with values in every byte. */
TEST(union_zero_past_kind)
{
	struct mem_trace m;
	struct tk_writer *w = mem_open(&m, NULL);
	struct tk_process pr = { "h", 100, 1, 0, 0, NULL, "" };
	uint32_t pt = tk_writer_process(w, 0, &pr);
	struct tk_thread th = { pt, 100, "main" };
	uint32_t thread = tk_writer_thread(w, 0, &th);
	for (int i = 0; i < 40; i++) {
		struct tk_event e = { .kind = i % 4 == 3 ? TK_KERNEL : TK_OVERHEAD,
		                      .track = thread, .ts = 1000 + i, .dur = 1,
		                      .name = "x" };
		if (e.kind == TK_KERNEL) {
			memset(&e.u.kernel, 0xa5, sizeof(e.u.kernel));
			e.u.kernel.mangled = NULL;
			e.u.kernel.mangled_id = 0;
		} else {
			e.u.overhead.type = 0xf1f2f3f4u - (uint32_t)i;
		}
		CHECK(tk_writer_event(w, &e) == TK_OK);
	}
	mem_finish(&m, 1);
	struct tk_reader *r = tk_reader_new();
	const struct tk_event *e;
	int n = 0, dirty = 0;
	CHECK(tk_reader_open_mem(r, m.buf, m.len, "mem") == TK_OK);
	while (tk_reader_next_event(r, &e) == TK_OK) {
		if (e->kind != TK_OVERHEAD)
			continue;
		CHECK_EQ_INT(e->u.overhead.type, 0xf1f2f3f4u - (uint32_t)(e->ts - 1000));
		const uint8_t *u = (const uint8_t *)&e->u;
		for (size_t b = sizeof(e->u.overhead); b < sizeof(e->u); b++)
			dirty += u[b] != 0;
		n++;
	}
	CHECK_EQ_INT(n, 30);
	CHECK_EQ_INT(dirty, 0);
	tk_reader_free(r);
	mem_free(&m);
}

int
main(void)
{
	make_names();
	fill_args_pool();
	RUN(roundtrip_default);
	RUN(roundtrip_stored);
	RUN(roundtrip_small_chunks_level1);
	RUN(roundtrip_four_threads);
	RUN(roundtrip_level12);
	RUN(roundtrip_threaded);
	RUN(roundtrip_threaded_stored);
	RUN(threaded_writer_same_bytes);
	RUN(threaded_writer_failed_output);
	RUN(threaded_writer_flush);
	RUN(take_events_in_batches);
	RUN(sorted_writer);
	RUN(many_definitions);
	RUN(string_ids);
	RUN(columns);
	RUN(columns_scope);
	RUN(grouped_by_process);
	RUN(union_zero_past_kind);
	for (int i = 0; i < NAMES; i++)
		free(names[i]);
	return tap_done();
}
