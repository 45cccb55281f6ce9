/* SPDX-License-Identifier: MIT */
/*
 * Allocation failures, API misuse and I/O errors through the public API.
 *
 * This program is linked with -Wl,--wrap for malloc, calloc, realloc,
 * strdup, libdeflate's allocators and pthread_create (Makefile): every
 * call from the library's objects (a static archive) goes through the
 * __wrap_ functions below, which can make the Nth one fail.  Production
 * code is not changed.  Only calls made on the thread that armed the
 * harness are counted, so that a run is the same every time even where
 * the library works on threads of its own (reader threads, the writer's
 * sealer); the sequences run with those threads off, but for one reader
 * run that starts the reader's pool (whose workers' own allocations are
 * then never failed).
 *
 * The analysis layer's allocations (cmd/analysis, also linked
 * statically) go through the same functions: distributions, sketches
 * and step names are run the same way.
 *
 * Each sequence is run with the 1st, 2nd, ... allocation failing until
 * one run never reaches the failing call: every run must stop with
 * TK_ENOMEM (or a NULL handle, where that is the documented answer) and
 * free cleanly (ASan/LSan and valgrind see leaks), or, where the library
 * can do without the memory, give the same result as a run without
 * failures.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libdeflate.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include "analysis/dist.h"
#include "analysis/opview.h"
#include "analysis/steps.h"
#include "helpers.h"
#include "tap.h"

/* ---- the harness --------------------------------------------------------- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
struct libdeflate_compressor *__real_libdeflate_alloc_compressor(int level);
struct libdeflate_decompressor *__real_libdeflate_alloc_decompressor(void);
int __real_pthread_create(pthread_t *t, const pthread_attr_t *a,
                          void *(*fn)(void *), void *arg);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
struct libdeflate_compressor *__wrap_libdeflate_alloc_compressor(int level);
struct libdeflate_decompressor *__wrap_libdeflate_alloc_decompressor(void);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a,
                          void *(*fn)(void *), void *arg);

static int armed;
static pthread_t armed_thread;
static long alloc_calls, fail_at;
static int failed_one; /* the failing call was reached */
/* the sequence running: for a debugger's breakpoint conditions */
static const char *volatile running;

static void
arm(long n)
{
	alloc_calls = 0;
	fail_at = n;
	failed_one = 0;
	armed_thread = pthread_self();
	armed = 1;
}

static void
disarm(void)
{
	armed = 0;
}

static int
should_fail(void)
{
	if (!armed || !pthread_equal(pthread_self(), armed_thread))
		return 0;
	if (++alloc_calls != fail_at)
		return 0;
	failed_one = 1;
	return 1;
}

void *
__wrap_malloc(size_t n)
{
	if (should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_malloc(n);
}

void *
__wrap_calloc(size_t n, size_t size)
{
	if (should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, size);
}

void *
__wrap_realloc(void *p, size_t n)
{
	if (should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_realloc(p, n);
}

char *
__wrap_strdup(const char *s)
{
	if (should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_strdup(s);
}

struct libdeflate_compressor *
__wrap_libdeflate_alloc_compressor(int level)
{
	return should_fail() ? NULL : __real_libdeflate_alloc_compressor(level);
}

struct libdeflate_decompressor *
__wrap_libdeflate_alloc_decompressor(void)
{
	return should_fail() ? NULL : __real_libdeflate_alloc_decompressor();
}

int
__wrap_pthread_create(pthread_t *t, const pthread_attr_t *a,
                      void *(*fn)(void *), void *arg)
{
	return should_fail() ? EAGAIN : __real_pthread_create(t, a, fn, arg);
}

/* Nothing leaked so far (under LeakSanitizer; elsewhere valgrind
 * tells).  Checked in the test, not at exit: a report at exit comes
 * after the TAP plan, where tests/run-tests.sh does not look. */
static int
no_leaks(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return __lsan_do_recoverable_leak_check() == 0;
#else
	return 1;
#endif
}

/* A run of a sequence: its return code, and whether what it produced
 * matched (for runs that say they succeeded). */
typedef int (*sequence_fn)(void *arg);

/* Run `seq` with the 1st, 2nd, ... counted call failing, until a run
 * never reaches the failing call; that last run must succeed.  Every
 * other run must return TK_ENOMEM, unless `ok_anyway` (the sequence
 * itself then checked that its output is complete).  Returns the number
 * of counted calls of the run without failures. */
static long
each_failure(const char *what, sequence_fn seq, void *arg, int ok_anyway)
{
	running = what;
	for (long n = 1; n < 100000; n++) {
		arm(n);
		int rc = seq(arg);
		disarm();
		if (!failed_one) {
			/* once for all the runs: a leak stays unreachable */
			CHECK(no_leaks());
			if (rc != TK_OK)
				fprintf(stderr, "# %s: %d without failures\n", what, rc);
			CHECK_EQ_INT(rc, TK_OK);
			/* a sequence that allocates nothing tests nothing */
			CHECK(n > 1);
			printf("# %s: %ld allocations\n", what, n - 1);
			return n - 1;
		}
		if (rc == TK_OK && ok_anyway)
			continue;
		if (rc != TK_ENOMEM)
			fprintf(stderr, "# %s: allocation %ld failed: got %d\n",
			        what, n, rc);
		CHECK_EQ_INT(rc, TK_ENOMEM);
		if (rc != TK_ENOMEM)
			return -1;
	}
	CHECK(!"each_failure: no end");
	return -1;
}

/* ---- what the sequences write -------------------------------------------- */

/* Every kind, with args of numbers (stored as templates) and strings
 * given by pointer (interned by the event call). */
#define NEV 300

static int64_t
ev_ts(int i)
{
	/* not in order: the writer must not be told `sorted` */
	return 1000000 + (int64_t)((i * 7919) % NEV) * 1000;
}

static int64_t
ev_dur(int i)
{
	return (int64_t)(i % 13) * 10;
}

static unsigned
ev_kind(int i)
{
	return 1 + (unsigned)(i % TK_KIND_MAX);
}

/* The sums a reader must see: independent of the library. */
struct digest {
	uint64_t n;
	int64_t ts, dur;
	uint64_t kinds; /* sum of kind * (i + 1)-free: sum of kinds */
	uint64_t args;  /* events with args */
};

static void
expected_digest(struct digest *d, int copies)
{
	memset(d, 0, sizeof(*d));
	for (int c = 0; c < copies; c++)
		for (int i = 0; i < NEV; i++) {
			d->n++;
			d->ts += ev_ts(i);
			d->dur += ev_dur(i);
			d->kinds += ev_kind(i);
			d->args += i % 3 != 0;
		}
}

/* A handle's message says what went wrong ("no error" when nothing
 * did). */
static int
said(const char *msg)
{
	return msg && msg[0] && strcmp(msg, "no error") != 0;
}

/* id 0 from a definition: the writer's error, as a code. */
static int
def_rc(struct tk_writer *w, uint32_t id)
{
	if (id)
		return TK_OK;
	return tk_writer_errno(w) == ENOMEM ? TK_ENOMEM : TK_EINVAL;
}

struct write_arg {
	int fd;             /* where to write (truncated first) */
	int threads;        /* writer option */
	int level;
};

static int
write_trace(void *argp)
{
	struct write_arg *a = argp;
	if (ftruncate(a->fd, 0) < 0 || lseek(a->fd, 0, SEEK_SET) < 0)
		abort();
	struct tk_writer *w = tk_writer_new();
	if (!w)
		return TK_ENOMEM;
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.threads = a->threads;
	o.level = a->level;
	o.chunk_bytes = 2048; /* several chunks, several scopes of tables */
	int rc = tk_writer_open_fd(w, a->fd, "nomem", &o);
	if (rc)
		goto out;
	const char *argv[] = { "./train", "--epochs", "2" };
	struct tk_process p = { .host = "node1", .pid = 42, .ppid = 1,
		.start = 999, .argc = 3, .argv = argv, .label = "rank0" };
	uint32_t proc = tk_writer_process(w, 0, &p);
	if ((rc = def_rc(w, proc)))
		goto out;
	struct tk_thread t = { .process = proc, .tid = 43, .name = "main" };
	uint32_t thr = tk_writer_thread(w, 0, &t);
	if ((rc = def_rc(w, thr)))
		goto out;
	struct tk_device d = { .host = "node1", .index = 0, .name = "GPU",
		.uuid = { 1, 2, 3 }, .sm_count = 132, .memory = 1u << 30,
		.cc_major = 9 };
	uint32_t dev = tk_writer_device(w, 0, &d);
	if ((rc = def_rc(w, dev)))
		goto out;
	struct tk_stream s = { .process = proc, .device = dev, .context = 1,
		.stream = 7, .name = "s7" };
	uint32_t str = tk_writer_stream(w, 0, &s);
	if ((rc = def_rc(w, str)))
		goto out;
	struct tk_counter c = { .name = "rss", .unit = "bytes",
		.process = proc };
	uint32_t cnt = tk_writer_counter(w, 0, &c);
	if ((rc = def_rc(w, cnt)))
		goto out;
	if ((rc = tk_writer_meta(w, "command", "./train")) ||
	    (rc = tk_writer_category(w, "dom", 3, "cat three")))
		goto out;
	char args[96], name[32];
	for (int i = 0; i < NEV; i++) {
		struct tk_event e;
		memset(&e, 0, sizeof(e));
		e.kind = ev_kind(i);
		e.ts = ev_ts(i);
		e.dur = ev_dur(i);
		/* names repeat, and new ones keep coming in later chunks */
		snprintf(name, sizeof(name), "op%d", i % 40 + i / 100 * 40);
		e.name = name;
		e.track = e.kind == TK_COUNTER ? cnt
		        : e.kind == TK_PROCESS || e.kind == TK_RUN ? proc
		        : e.kind >= TK_KERNEL && e.kind <= TK_SYNC ? str
		        : e.kind == TK_MEMORY ? str : thr;
		if (i % 3) {
			snprintf(args, sizeof(args),
			         "{\"External id\": %d, \"Ev Idx\": %d}",
			         1000 + i, i);
			e.args = args;
			e.args_len = (uint32_t)strlen(args);
		}
		switch (e.kind) {
		case TK_RANGE: case TK_ASYNC_RANGE: case TK_MARK:
			e.u.range.domain = "dom";
			e.u.range.category = 3;
			e.u.range.payload_type = TK_PAYLOAD_INT;
			e.u.range.payload.i = -i;
			break;
		case TK_KERNEL:
			e.u.kernel.grid[0] = (uint32_t)i;
			e.u.kernel.mangled = i % 2 ? "_Z1kv" : "";
			break;
		case TK_COUNTER:
			e.u.counter.value = i * 0.5;
			break;
		case TK_DROPPED:
			e.u.dropped.count = (uint64_t)i;
			e.u.dropped.reason = "full";
			break;
		case TK_FLOW:
			e.u.flow.id = (uint64_t)i;
			e.u.flow.category = "fwd";
			break;
		}
		if ((rc = tk_writer_event(w, &e)))
			goto out;
		if (i == NEV / 2 && (rc = tk_writer_flush(w)))
			goto out;
	}
	rc = tk_writer_close(w);
out:
	if (rc != TK_OK && !said(tk_writer_error(w)))
		rc = 99; /* an error must say what it is */
	if (rc != TK_OK && rc != TK_ENOMEM)
		fprintf(stderr, "# write: %s\n", tk_writer_error(w));
	tk_writer_free(w);
	return rc;
}

static uint8_t *
load_fd(int fd, size_t *len)
{
	off_t n = lseek(fd, 0, SEEK_END);
	uint8_t *buf = malloc((size_t)n + 1);
	if (!buf || pread(fd, buf, (size_t)n, 0) != n)
		abort();
	*len = (size_t)n;
	return buf;
}

static int
fold_events(struct tk_reader *r, struct digest *d)
{
	const struct tk_event *e;
	int rc;
	memset(d, 0, sizeof(*d));
	while ((rc = tk_reader_next_event(r, &e)) == TK_OK) {
		d->n++;
		d->ts += e->ts;
		d->dur += e->dur;
		d->kinds += e->kind;
		d->args += e->args != NULL;
	}
	return rc;
}

struct read_arg {
	const uint8_t *buf;
	size_t len;
	int threads;
	int columns;
	int copies;         /* traces (a merge's output holds two) */
	int mismatches;
};

static int
read_trace(void *argp)
{
	struct read_arg *a = argp;
	struct tk_reader *r = tk_reader_new();
	if (!r)
		return TK_ENOMEM;
	struct tk_reader_options o = TK_READER_OPTIONS_INIT;
	o.threads = a->threads;
	int rc = tk_reader_set_options(r, &o);
	if (rc == TK_OK)
		rc = tk_reader_open_mem(r, a->buf, a->len, "mem");
	struct digest d, want;
	memset(&d, 0, sizeof(d));
	if (rc == TK_OK && a->columns) {
		struct tk_columns c;
		while ((rc = tk_reader_next_columns(r, &c)) == TK_OK)
			for (size_t i = 0; i < c.n; i++) {
				d.n++;
				d.ts += c.ts[i];
				d.dur += c.dur[i];
				d.kinds += c.kind[i];
				/* names resolve in the columns' scope */
				if (!tk_reader_string(r, c.name_id[i])[0])
					a->mismatches++;
			}
	} else if (rc == TK_OK) {
		rc = fold_events(r, &d);
	}
	if (rc == TK_EOF) {
		rc = TK_OK;
		expected_digest(&want, a->copies);
		if (a->columns)
			want.args = 0;
		if (memcmp(&d, &want, sizeof(d)) != 0)
			a->mismatches++;
	} else if (rc != TK_OK && !said(tk_reader_error(r))) {
		rc = 99;
	}
	tk_reader_free(r);
	return rc;
}

/* ---- the sequences ---------------------------------------------------------- */

static int
scratch_fd(void)
{
	FILE *f = tmpfile();
	if (!f)
		abort();
	int fd = dup(fileno(f));
	fclose(f);
	return fd;
}

TEST(nomem_write_every_kind)
{
	struct write_arg a = { scratch_fd(), 0, 6 };
	long calls = each_failure("write", write_trace, &a, 0);
	CHECK(calls > 20);
	/* the bytes of the last run are a whole trace */
	size_t len;
	uint8_t *buf = load_fd(a.fd, &len);
	struct read_arg ra = { buf, len, 1, 0, 1, 0 };
	CHECK_EQ_INT(read_trace(&ra), TK_OK);
	CHECK_EQ_INT(ra.mismatches, 0);
	free(buf);
	close(a.fd);
}

TEST(nomem_write_stored)
{
	/* level 0 stores chunks: no compressor, other buffers */
	struct write_arg a = { scratch_fd(), 0, 0 };
	CHECK(each_failure("write stored", write_trace, &a, 0) > 20);
	close(a.fd);
}

static uint8_t *
good_trace(size_t *len)
{
	struct write_arg a = { scratch_fd(), 0, 6 };
	if (write_trace(&a) != TK_OK)
		abort();
	uint8_t *buf = load_fd(a.fd, len);
	close(a.fd);
	return buf;
}

TEST(nomem_read_events)
{
	size_t len;
	uint8_t *buf = good_trace(&len);
	struct read_arg a = { buf, len, 1, 0, 1, 0 };
	CHECK(each_failure("read events", read_trace, &a, 0) > 10);
	CHECK_EQ_INT(a.mismatches, 0);
	free(buf);
}

TEST(nomem_read_columns)
{
	size_t len;
	uint8_t *buf = good_trace(&len);
	struct read_arg a = { buf, len, 1, 1, 1, 0 };
	CHECK(each_failure("read columns", read_trace, &a, 0) > 10);
	CHECK_EQ_INT(a.mismatches, 0);
	free(buf);
}

TEST(nomem_read_pool)
{
	/* With reader threads, memory the pool cannot get (its threads, a
	 * worker's buffer) only costs speed: the reader then works on the
	 * caller's thread, and what it reads must be the same. */
	size_t len;
	uint8_t *buf = good_trace(&len);
	struct read_arg a = { buf, len, 3, 0, 1, 0 };
	CHECK(each_failure("read pool", read_trace, &a, 1) > 10);
	CHECK_EQ_INT(a.mismatches, 0);
	free(buf);
}

struct merge_arg {
	const uint8_t *buf;
	size_t len;
	int out_fd;
	size_t memory_limit;
	const char *tmpdir;
	uint64_t spilled;   /* events that went through spill files */
};

static int
merge_traces(void *argp)
{
	struct merge_arg *a = argp;
	if (ftruncate(a->out_fd, 0) < 0 || lseek(a->out_fd, 0, SEEK_SET) < 0)
		abort();
	struct tk_writer *w = tk_writer_new();
	struct tk_merge *m = NULL;
	int rc = TK_ENOMEM, told = 0;
	if (!w)
		return rc;
	if ((rc = tk_writer_open_fd(w, a->out_fd, "out", NULL)))
		goto out;
	struct tk_merge_options o = { .memory_limit = a->memory_limit,
		.tmpdir = a->tmpdir };
	if (!(m = tk_merge_new(w, &o))) {
		rc = TK_ENOMEM;
		told = 1;
		goto out;
	}
	for (int i = 0; i < 2; i++) {
		struct tk_reader *r = tk_reader_new();
		if (!r) {
			rc = TK_ENOMEM;
			told = 1;
			goto out;
		}
		struct tk_reader_options ro = { .threads = 1 };
		tk_reader_set_options(r, &ro);
		if ((rc = tk_reader_open_mem(r, a->buf, a->len, "in"))) {
			told = said(tk_reader_error(r));
			tk_reader_free(r);
			goto out;
		}
		if ((rc = tk_merge_add(m, r, i ? "b" : "a", 0)) < 0)
			goto out;
	}
	if ((rc = tk_merge_run(m)))
		goto out;
	struct tk_merge_stats st;
	tk_merge_stats(m, &st);
	a->spilled = st.spilled;
	rc = tk_writer_close(w);
out:
	/* a NULL handle is the whole answer; any other failure is told
	 * by the handle that failed */
	if (rc != TK_OK && !told && !said(tk_merge_error(m)) &&
	    !said(tk_writer_error(w)))
		rc = 99;
	if (rc != TK_OK && rc != TK_ENOMEM)
		fprintf(stderr, "# merge: %s / %s\n", m ? tk_merge_error(m) : "",
		        tk_writer_error(w));
	tk_merge_free(m);
	tk_writer_free(w);
	return rc;
}

static void
check_merged(int fd)
{
	size_t len;
	uint8_t *buf = load_fd(fd, &len);
	struct read_arg ra = { buf, len, 1, 0, 2, 0 };
	CHECK_EQ_INT(read_trace(&ra), TK_OK);
	CHECK_EQ_INT(ra.mismatches, 0);
	free(buf);
}

TEST(nomem_merge)
{
	size_t len;
	uint8_t *buf = good_trace(&len);
	struct merge_arg a = { buf, len, scratch_fd(), 0, NULL };
	CHECK(each_failure("merge", merge_traces, &a, 0) > 20);
	CHECK_EQ_INT(a.spilled, 0);
	check_merged(a.out_fd);
	close(a.out_fd);
	free(buf);
}

TEST(nomem_merge_spill)
{
	/* unsorted inputs and a small limit: events go through spill files */
	size_t len;
	uint8_t *buf = good_trace(&len);
	char dir[] = "/tmp/tk-nomem-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	struct merge_arg a = { buf, len, scratch_fd(), 32768, dir };
	CHECK(each_failure("merge spill", merge_traces, &a, 0) > 20);
	CHECK(a.spilled > 0);
	check_merged(a.out_fd);
	CHECK(rmdir(dir) == 0); /* every spill file removed, even on failure */
	close(a.out_fd);
	free(buf);
}

/* ---- errors of a bad call --------------------------------------------------- */

TEST(strerror_every_code)
{
	/* each code has its own message, and unknown codes one more */
	static const int codes[] = { TK_OK, TK_EOF, TK_ENOMEM, TK_EIO,
		TK_EFORMAT, TK_EVERSION, TK_ECORRUPT, TK_ETRUNC, TK_EINVAL };
	const size_t n = sizeof(codes) / sizeof(codes[0]);
	const char *unknown = tk_strerror(-100);
	CHECK_STR(unknown, "unknown error");
	CHECK_STR(tk_strerror(TK_ENOMEM), "out of memory");
	CHECK_STR(tk_strerror(TK_EINVAL), "invalid argument");
	CHECK_STR(tk_strerror(TK_ETRUNC), "truncated trace");
	for (size_t i = 0; i < n; i++) {
		CHECK(tk_strerror(codes[i]) && tk_strerror(codes[i])[0]);
		CHECK(strcmp(tk_strerror(codes[i]), unknown) != 0);
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(tk_strerror(codes[i]),
			             tk_strerror(codes[j])) != 0);
	}
	CHECK_STR(tk_version(), TK_VERSION);
}

TEST(einval_null_arguments)
{
	struct tk_event e;
	memset(&e, 0, sizeof(e));
	e.kind = TK_MARK;
	CHECK_EQ_INT(tk_writer_open_fd(NULL, 1, "x", NULL), TK_EINVAL);
	CHECK_EQ_INT(tk_writer_open_path(NULL, "x", NULL), TK_EINVAL);
	CHECK_EQ_INT(tk_writer_event(NULL, &e), TK_EINVAL);
	CHECK_EQ_INT(tk_writer_flush(NULL), TK_EINVAL);
	CHECK_EQ_INT(tk_writer_close(NULL), TK_EINVAL);
	CHECK_EQ_INT(tk_writer_meta(NULL, "k", "v"), TK_EINVAL);
	CHECK_EQ_INT(tk_writer_category(NULL, "d", 1, "n"), TK_EINVAL);
	tk_writer_free(NULL);
	struct tk_writer *w = tk_writer_new();
	CHECK_EQ_INT(tk_writer_open_fd(w, -1, "x", NULL), TK_EINVAL);
	CHECK_EQ_INT(tk_writer_open_path(w, NULL, NULL), TK_EINVAL);
	CHECK_EQ_INT(tk_writer_event(w, NULL), TK_EINVAL);
	CHECK_EQ_INT(tk_writer_meta(w, NULL, "v"), TK_EINVAL);
	CHECK_EQ_INT(tk_writer_category(w, NULL, 1, "n"), TK_EINVAL);
	tk_writer_free(w);

	CHECK_EQ_INT(tk_reader_set_options(NULL, NULL), TK_EINVAL);
	CHECK_EQ_INT(tk_reader_open_mem(NULL, "", 0, "x"), TK_EINVAL);
	struct tk_reader *r = tk_reader_new();
	CHECK_EQ_INT(tk_reader_open_mem(r, NULL, 5, "x"), TK_EINVAL);
	struct tk_reader_options ro = { .threads = -1 };
	CHECK_EQ_INT(tk_reader_set_options(r, &ro), TK_EINVAL);
	ro = (struct tk_reader_options){ .no_args = 2 };
	CHECK_EQ_INT(tk_reader_set_options(r, &ro), TK_EINVAL);
	ro = (struct tk_reader_options){ .no_args = -1 };
	CHECK_EQ_INT(tk_reader_set_options(r, &ro), TK_EINVAL);
	CHECK_EQ_INT(tk_reader_set_options(r, NULL), TK_OK);

	CHECK(tk_merge_new(NULL, NULL) == NULL);
	CHECK_EQ_INT(tk_merge_add(NULL, r, "x", 0), TK_EINVAL);
	struct tk_writer *out = tk_writer_new();
	struct tk_merge *m = tk_merge_new(out, NULL);
	CHECK_EQ_INT(tk_merge_add(m, NULL, "x", 0), TK_EINVAL);
	struct tk_scan_chunk ch = { 0 };
	CHECK_EQ_INT(tk_merge_set_chunks(NULL, 0, &ch, 1), TK_EINVAL);
	CHECK_EQ_INT(tk_merge_set_chunks(m, 0, &ch, 1), TK_EINVAL); /* no input */
	CHECK_EQ_INT(tk_merge_set_chunks(m, -1, &ch, 1), TK_EINVAL);
	CHECK_EQ_INT(tk_merge_step(NULL), TK_EINVAL);
	tk_merge_free(m);
	tk_merge_free(NULL);
	tk_writer_free(out);
	tk_reader_free(r);
}

TEST(einval_bad_writer_use)
{
	struct tk_writer *w = tk_writer_new();
	struct tk_event e;
	memset(&e, 0, sizeof(e));
	e.kind = TK_MARK;
	/* not open: every call says so and writes nothing */
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_EINVAL);
	CHECK(strstr(tk_writer_error(w), "not open") != NULL);
	CHECK_EQ_INT(tk_writer_flush(w), TK_EINVAL);
	CHECK_EQ_INT(tk_writer_meta(w, "k", "v"), TK_EINVAL);
	CHECK_EQ_INT(tk_writer_category(w, "d", 1, "n"), TK_EINVAL);
	struct tk_thread t = { .tid = 1, .name = "" };
	CHECK_EQ_INT(tk_writer_thread(w, 0, &t), 0);
	CHECK_EQ_INT(tk_writer_cstring(w, "s"), 0);
	tk_writer_free(w);

	/* a bad level fails the open; a new open starts over */
	w = tk_writer_new();
	int fd = scratch_fd();
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.level = 13;
	CHECK_EQ_INT(tk_writer_open_fd(w, fd, "x", &o), TK_EINVAL);
	CHECK(strstr(tk_writer_error(w), "level") != NULL);
	o.level = -1;
	CHECK_EQ_INT(tk_writer_open_fd(w, fd, "x", &o), TK_EINVAL);
	o = (struct tk_writer_options)TK_WRITER_OPTIONS_INIT;
	o.threads = -1;
	CHECK_EQ_INT(tk_writer_open_fd(w, fd, "x", &o), TK_EINVAL);
	CHECK(strstr(tk_writer_error(w), "thread") != NULL);
	/* a path opened for an open refused for its options is closed: the
	 * next descriptor is the same number */
	{
		int probe = dup(0);
		CHECK(probe >= 0);
		close(probe);
		char path[] = "/tmp/tk-nomem-XXXXXX";
		int keep = mkstemp(path);
		CHECK(keep >= 0);
		close(keep);
		CHECK_EQ_INT(tk_writer_open_path(w, path, &o), TK_EINVAL);
		int next = dup(0);
		CHECK_EQ_INT(next, probe);
		close(next);
		unlink(path);
	}
	CHECK_EQ_INT(tk_writer_open_fd(w, fd, "x", NULL), TK_OK);
	CHECK(!said(tk_writer_error(w)));

	/* rejected events leave the writer usable */
	e.kind = 0;
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_EINVAL);
	e.kind = TK_KIND_MAX + 1;
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_EINVAL);
	e.kind = TK_MARK;
	e.dur = -1;
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_EINVAL);
	e.dur = 10;
	e.ts = INT64_MAX - 5;
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_EINVAL);
	e.ts = 0;
	e.track = 5; /* never defined */
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_EINVAL);
	CHECK(strstr(tk_writer_error(w), "track") != NULL);
	CHECK_EQ_INT(tk_writer_string(w, NULL, 3), 0);
	CHECK(strstr(tk_writer_error(w), "string") != NULL);
	CHECK(tk_writer_string(w, NULL, 0) != 0); /* "" */
	uint32_t thr = tk_writer_thread(w, 0, &t);
	CHECK(thr != 0);
	/* redefining as another type, or a track not there */
	struct tk_counter c = { .name = "c", .unit = "" };
	CHECK_EQ_INT(tk_writer_counter(w, thr, &c), 0);
	CHECK_EQ_INT(tk_writer_thread(w, thr + 10, &t), 0);
	e.track = thr;
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_OK);
	CHECK_EQ_INT(tk_writer_events(w), 1);
	CHECK_EQ_INT(tk_writer_close(w), TK_OK);
	/* closed: like never opened */
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_EINVAL);
	CHECK_EQ_INT(tk_writer_events(w), 1);
	tk_writer_free(w);

	/* a sorted writer refuses an event that goes back */
	w = tk_writer_new();
	o = (struct tk_writer_options)TK_WRITER_OPTIONS_INIT;
	o.sorted = 1;
	CHECK_EQ_INT(tk_writer_open_fd(w, fd, "x", &o), TK_OK);
	thr = tk_writer_thread(w, 0, &t);
	e.track = thr;
	e.ts = 100;
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_OK);
	e.ts = 99;
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_EINVAL);
	CHECK(strstr(tk_writer_error(w), "order") != NULL);
	CHECK_EQ_INT(tk_writer_close(w), TK_OK);
	tk_writer_free(w);

	/* a raw-id writer has no definitions, and bounds its ids */
	w = tk_writer_new();
	o = (struct tk_writer_options)TK_WRITER_OPTIONS_INIT;
	o.raw_ids = 1;
	CHECK_EQ_INT(tk_writer_open_fd(w, fd, "x", &o), TK_OK);
	CHECK_EQ_INT(tk_writer_thread(w, 0, &t), 0);
	CHECK(strstr(tk_writer_error(w), "raw-id") != NULL);
	CHECK_EQ_INT(tk_writer_cstring(w, "s"), 0);
	CHECK(strstr(tk_writer_error(w), "raw-id") != NULL);
	e.track = 1u << 30;
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_EINVAL);
	e.track = 3;
	CHECK_EQ_INT(tk_writer_event(w, &e), TK_OK);
	CHECK_EQ_INT(tk_writer_close(w), TK_OK);
	tk_writer_free(w);
	close(fd);
}

/* ---- I/O errors ------------------------------------------------------------- */

/* Write events until the writer fails (or `limit` of them). */
static int
write_until_error(struct tk_writer *w, int limit)
{
	struct tk_thread t = { .tid = 1, .name = "t" };
	uint32_t thr = tk_writer_thread(w, 0, &t);
	if (!thr)
		return TK_EINVAL;
	for (int i = 0; i < limit; i++) {
		struct tk_event e;
		memset(&e, 0, sizeof(e));
		e.kind = TK_RANGE;
		e.track = thr;
		e.ts = (int64_t)rnd_below(1u << 30);
		e.dur = (int64_t)rnd_below(1000);
		e.name = "x";
		int rc = tk_writer_event(w, &e);
		if (rc)
			return rc;
	}
	return tk_writer_close(w);
}

TEST(eio_dev_full)
{
	struct tk_writer *w = tk_writer_new();
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.chunk_bytes = 1024;
	/* the header is written at open: the full disk is seen there */
	int rc = tk_writer_open_path(w, "/dev/full", &o);
	if (rc == TK_OK)
		rc = write_until_error(w, 100000);
	CHECK_EQ_INT(rc, TK_EIO);
	CHECK_EQ_INT(tk_writer_errno(w), ENOSPC);
	CHECK(strstr(tk_writer_error(w), strerror(ENOSPC)) != NULL);
	/* the first failure stays */
	CHECK_EQ_INT(tk_writer_close(w), TK_EIO);
	tk_writer_free(w);

	/* a path that cannot be opened */
	w = tk_writer_new();
	CHECK_EQ_INT(tk_writer_open_path(w, "/nonexistent/dir/x.tkt", NULL),
	             TK_EIO);
	CHECK_EQ_INT(tk_writer_errno(w), ENOENT);
	tk_writer_free(w);
}

TEST(eio_closed_pipe)
{
	int p[2];
	CHECK(pipe(p) == 0);
	close(p[0]);
	signal(SIGPIPE, SIG_IGN);
	for (int threads = 0; threads <= 1; threads++) {
		struct tk_writer *w = tk_writer_new();
		struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
		o.chunk_bytes = 1024;
		o.threads = threads;
		int rc = tk_writer_open_fd(w, p[1], "pipe", &o);
		if (rc == TK_OK)
			rc = write_until_error(w, 100000);
		/* with the sealer thread the error is told by a later call */
		if (rc == TK_OK)
			rc = tk_writer_close(w);
		CHECK_EQ_INT(rc, TK_EIO);
		CHECK_EQ_INT(tk_writer_errno(w), EPIPE);
		tk_writer_free(w);
	}
	close(p[1]);
	signal(SIGPIPE, SIG_DFL);
}

TEST(etrunc_truncated_file)
{
	size_t len;
	uint8_t *buf = good_trace(&len);
	char path[] = "/tmp/tk-nomem-trunc-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	/* cut in the middle of the last chunk: every event before it reads */
	CHECK(write(fd, buf, len - 7) == (ssize_t)(len - 7));
	close(fd);
	struct tk_reader *r = tk_reader_new();
	CHECK_EQ_INT(tk_reader_open_path(r, path), TK_OK);
	struct digest d;
	CHECK_EQ_INT(fold_events(r, &d), TK_ETRUNC);
	CHECK(d.n < NEV);
	CHECK(strstr(tk_reader_error(r), "trunc") != NULL);
	/* after an error every later call says the same */
	const struct tk_event *e;
	CHECK_EQ_INT(tk_reader_next_event(r, &e), TK_ETRUNC);
	tk_reader_free(r);
	/* a path that is not there */
	r = tk_reader_new();
	CHECK_EQ_INT(tk_reader_open_path(r, "/nonexistent/x.tkt"), TK_EIO);
	CHECK_EQ_INT(tk_reader_errno(r), ENOENT);
	tk_reader_free(r);
	unlink(path);
	free(buf);
}


/* ---- the analysis layer ------------------------------------------------------ */

#define NDIST 2000

static int64_t
dist_value(size_t i)
{
	/* durations over several powers of two: the sketch keeps growing */
	return (int64_t)((i * 2654435761u) % 1000003) * (int64_t)(1 + i % 7);
}

/* Distributions of every mode, merged every way: -1 from any call is
 * out of memory, after which each must still free to nothing. */
static int
dist_sequence(void *arg)
{
	(void)arg;
	/* 512 exact values fit: the distribution turns into a sketch */
	struct dist_budget b = DIST_BUDGET_INIT(4096);
	struct dist d, x, y, e;
	dist_init_budget(&d, 0, &b);
	dist_init(&x, 1);
	dist_init(&y, 0);
	dist_init(&e, 0);
	int rc = TK_ENOMEM;
	for (size_t i = 0; i < NDIST; i++)
		if (dist_add(&d, dist_value(i)) < 0 ||
		    dist_add(&x, dist_value(i)) < 0 ||
		    dist_add(&y, dist_value(i)) < 0)
			goto out;
	if (dist_add(&e, 5) < 0 ||
	    dist_merge(&e, &y) < 0 ||  /* exact into exact: it grows */
	    dist_merge(&e, &x) < 0 ||  /* approximate into exact */
	    dist_merge(&d, &x) < 0 ||  /* approximate into approximate */
	    dist_merge(&d, &y) < 0)    /* exact into approximate */
		goto out;
	rc = TK_OK;
	int64_t mn = INT64_MAX, mx = INT64_MIN;
	for (size_t i = 0; i < NDIST; i++) {
		mn = dist_value(i) < mn ? dist_value(i) : mn;
		mx = dist_value(i) > mx ? dist_value(i) : mx;
	}
	if (d.count != 3 * NDIST || e.count != 2 * NDIST + 1 || !d.approx ||
	    !e.approx || d.min != mn || d.max != mx || e.min != (mn < 5 ? mn : 5) ||
	    b.converted != 1) {
		fprintf(stderr, "# dist: counts %llu %llu, min %lld, converted %zu\n",
		        (unsigned long long)d.count, (unsigned long long)e.count,
		        (long long)d.min, b.converted);
		rc = 98;
	}
out:
	dist_free(&d);
	dist_free(&x);
	dist_free(&y);
	dist_free(&e);
	/* what a failure left behind is given back to the budget too */
	if (b.used != 0)
		rc = 97;
	return rc;
}

TEST(nomem_dist)
{
	CHECK(each_failure("dist", dist_sequence, NULL, 0) > 5);
}

struct summary_arg {
	struct dist d;
	double want[3];
	int mismatches;
};

/* A summary needs no memory: without its buffers it selects in place,
 * and must give the same figures. */
static int
summary_sequence(void *argp)
{
	struct summary_arg *a = argp;
	struct summary s;
	dist_summary(&a->d, &s);
	if (s.p50 != a->want[0] || s.p95 != a->want[1] || s.p99 != a->want[2])
		a->mismatches++;
	/* one allocation at least, so that each_failure sees the calls */
	void *p = malloc(1);
	if (!p)
		return TK_ENOMEM;
	free(p);
	return TK_OK;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

TEST(nomem_summary)
{
	/* enough values for the sampled selection, with its buffers */
	enum { N = 30000 };
	static int64_t sorted[N];
	struct summary_arg a = { .mismatches = 0 };
	dist_init(&a.d, 0);
	for (size_t i = 0; i < N; i++) {
		sorted[i] = dist_value(i);
		CHECK_EQ_INT(dist_add(&a.d, sorted[i]), 0);
	}
	qsort(sorted, N, sizeof(sorted[0]), cmp_i64);
	static const double q[3] = { 0.50, 0.95, 0.99 };
	for (int j = 0; j < 3; j++) {
		double r = q[j] * (N - 1);
		size_t lo = (size_t)r;
		double f = r - (double)lo;
		a.want[j] = (double)sorted[lo] +
		            f * (double)(sorted[lo + 1] - sorted[lo]);
	}
	CHECK(each_failure("summary", summary_sequence, &a, 1) > 1);
	CHECK_EQ_INT(a.mismatches, 0);
	dist_free(&a.d);
}

static int
steps_sequence(void *arg)
{
	(void)arg;
	struct step_match m;
	if (step_match_init(&m, "ProfilerStep") < 0)
		return TK_ENOMEM;
	int rc = TK_OK;
	int yes = step_match(&m, "ProfilerStep#12");
	int no = step_match(&m, "optimizer.step");
	int k1 = step_kind("", "ProfilerStep#7");
	int k2 = step_kind("", "iteration");
	if (yes < 0 || no < 0 || k1 < 0 || k2 < 0)
		rc = TK_ENOMEM;
	else if (yes != 1 || no != 0 || k1 != 1 || k2 != 2)
		rc = 98;
	step_match_free(&m);
	return rc;
}

TEST(nomem_steps)
{
	CHECK(each_failure("steps", steps_sequence, NULL, 0) > 3);
}

/* The operator view: every array it grows (ranges, launches, GPU
 * operations, rows, the scope's hash table) must answer -1 when out of
 * memory, never drop what it could not store and go on with wrong self
 * times.  Thread 1: a [0,100) holds b [10,50) holding c [20,30); ten
 * ranges g [1000+10i, +5) on thread 3 (past the first capacity of 8),
 * each launching a 1 ns kernel. */
static int
opview_sequence(void *arg)
{
	(void)arg;
	static const char *const names[] = { "a", "b", "c", "", "", "g" };
	struct opview *v = opview_new();
	if (!v)
		return TK_ENOMEM;
	int bad = 0;
	bad |= opview_range(v, 2, names[2], 1, 20, 10);
	bad |= opview_range(v, 0, names[0], 1, 0, 100);
	bad |= opview_range(v, 1, names[1], 1, 10, 40);
	bad |= opview_launch(v, 7, 100, 1, 25);          /* inside c */
	bad |= opview_launch(v, 7, 101, 1, 55);          /* inside a only */
	bad |= opview_gpu(v, 7, 100, 3);
	bad |= opview_gpu(v, 7, 101, 4);
	for (int i = 0; i < 10; i++) {
		bad |= opview_range(v, 5, names[5], 3, 1000 + 10 * i, 5);
		bad |= opview_launch(v, 7, 200 + (uint64_t)i, 3, 1001 + 10 * i);
		bad |= opview_gpu(v, 7, 200 + (uint64_t)i, 1);
	}
	if (!bad)
		bad = opview_scope_end(v);
	int rc = TK_OK;
	size_t n;
	const struct opview_row *w = opview_rows(v, &n);
	if (bad)
		rc = TK_ENOMEM;
	else if (n != 6 || w[0].self != 60 || w[1].self != 30 || w[2].self != 10 ||
	         w[2].gpu_self != 3 || w[1].gpu_total != 3 || w[0].gpu_self != 4 ||
	         w[0].gpu_total != 7 || w[5].count != 10 || w[5].self != 50 ||
	         w[5].gpu_self != 10)
		rc = 98;
	opview_free(v);
	return rc;
}

TEST(nomem_opview)
{
	CHECK(each_failure("opview", opview_sequence, NULL, 0) > 5);
}

TEST(nomem_steps_find)
{
	/* steps_find() ends the command when out of memory (cmd_die with
	 * status 2); a reader's failure is left to the main pass.  Each
	 * failure runs in a child. */
	int fd = scratch_fd();
	struct tk_writer *w = tk_writer_new();
	CHECK_EQ_INT(tk_writer_open_fd(w, fd, "steps", NULL), TK_OK);
	struct tk_thread t = { .tid = 1, .name = "" };
	uint32_t thr = tk_writer_thread(w, 0, &t);
	static const char *const names[] = { "iteration", "fwd",
		"ProfilerStep#1", "iteration" };
	for (int i = 0; i < 4; i++) {
		struct tk_event e;
		memset(&e, 0, sizeof(e));
		e.kind = TK_RANGE;
		e.track = thr;
		e.ts = 100 * i;
		e.dur = 50;
		e.name = names[i];
		CHECK_EQ_INT(tk_writer_event(w, &e), TK_OK);
	}
	CHECK_EQ_INT(tk_writer_close(w), TK_OK);
	tk_writer_free(w);
	int died = 0, done = 0;
	fflush(NULL);
	for (long n = 1; n < 2000 && !done; n++) {
		pid_t pid = fork();
		if (pid == 0) {
			/* the children share the descriptor's position */
			if (lseek(fd, 0, SEEK_SET) < 0)
				_exit(5);
			arm(n);
			char *best = steps_find(fd, "steps");
			disarm();
			/* 0: no failure reached, and the right answer */
			int st = failed_one ? 3 :
			         best && strcmp(best, "ProfilerStep#1") == 0 ? 0 : 4;
			free(best);
			_exit(st);
		}
		int status;
		CHECK(waitpid(pid, &status, 0) == pid);
		CHECK(WIFEXITED(status));
		int st = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		if (!(st == 0 || st == 2 || st == 3))
			fprintf(stderr, "# allocation %ld: status %d\n", n, st);
		CHECK(st == 0 || st == 2 || st == 3);
		/* the first allocation is the reader's own: nothing to read
		 * with, the command cannot go on */
		if (n == 1)
			CHECK_EQ_INT(st, 2);
		died += st == 2;
		done = st == 0 || !(st == 2 || st == 3);
	}
	CHECK(done);
	CHECK(died > 0);
	close(fd);
}

int
main(void)
{
	/* readers the library makes itself (a merge's spill files) read
	 * on the caller's thread, as every sequence here does */
	setenv("TK_THREADS", "1", 1);
	RUN(strerror_every_code);
	RUN(einval_null_arguments);
	RUN(einval_bad_writer_use);
	RUN(eio_dev_full);
	RUN(eio_closed_pipe);
	RUN(etrunc_truncated_file);
	RUN(nomem_write_every_kind);
	RUN(nomem_write_stored);
	RUN(nomem_read_events);
	RUN(nomem_read_columns);
	RUN(nomem_read_pool);
	RUN(nomem_merge);
	RUN(nomem_merge_spill);
	RUN(nomem_dist);
	RUN(nomem_summary);
	RUN(nomem_steps);
	RUN(nomem_opview);
	RUN(nomem_steps_find);
	return tap_done();
}
