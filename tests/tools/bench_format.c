/* SPDX-License-Identifier: MIT */
/*
 * bench_format FILE: times the library on one trace against the codec's
 * own limits, all in this process:
 *   read   reading every event (tk_reader on the file in memory)
 *   read_columns  the same by tk_reader_next_columns(): common fields only
 *   inflate  inflating the same chunk payloads alone (libdeflate)
 *   write  writing the same events, args included (decoded beforehand,
 *          a batch at a time, so only the writer is timed) to /dev/null
 *   write_threaded  the same with two of the writer's compressing
 *          threads (deflate beside the encoding, as trace-merge and
 *          trace-import write on a machine of two cores or more)
 *   deflate  deflating the same uncompressed payloads alone, same level
 * The six run in turn, REPEAT times, so that a change of load on a
 * shared machine falls on each side of a ratio alike.  Prints "key value"
 * lines: each time as the median of its runs, and each ratio (read,
 * read_columns against inflate; write against deflate) as the median of
 * the runs' own ratios, so that a ratio pairs the two sides measured
 * next to each other.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libdeflate.h>

#include "tracekit.h"

static double
now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

struct chunk {
	const uint8_t *stored;
	uint32_t stored_len, raw_len;
	int deflated;
};

static volatile uint64_t sink;

static int
by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of n values (sorts them in place). */
static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Read every event, one by one (tk_reader_next_event) or by columns
 * (tk_reader_next_columns), summing the same fields of each. */
static double
time_read(const uint8_t *buf, size_t len, int by_columns, uint64_t *events)
{
	struct tk_reader *r = tk_reader_new();
	const struct tk_event *e;
	struct tk_columns c;
	double t0 = now();
	uint64_t n = 0, acc = 0;
	if (tk_reader_open_mem(r, buf, len, "bench"))
		exit(2);
	int rc;
	if (by_columns) {
		while ((rc = tk_reader_next_columns(r, &c)) == TK_OK) {
			for (size_t i = 0; i < c.n; i++)
				acc += (uint64_t)c.ts[i] + (uint64_t)c.dur[i] + c.name_id[i];
			n += c.n;
		}
	} else {
		while ((rc = tk_reader_next_event(r, &e)) == TK_OK) {
			acc += (uint64_t)e->ts + (uint64_t)e->dur + e->name_id;
			n++;
		}
	}
	double t = now() - t0;
	if (rc != TK_EOF) {
		fprintf(stderr, "bench_format: %s\n", tk_reader_error(r));
		exit(1);
	}
	tk_reader_free(r);
	sink += acc;
	*events = n;
	return t;
}

static double
time_inflate(const struct chunk *c, size_t n, uint8_t *out)
{
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	double t0 = now();
	for (size_t i = 0; i < n; i++) {
		if (!c[i].deflated)
			continue;
		size_t actual;
		if (libdeflate_zlib_decompress(d, c[i].stored, c[i].stored_len, out,
		                               c[i].raw_len, &actual))
			exit(2);
		sink += out[0];
	}
	double t = now() - t0;
	libdeflate_free_decompressor(d);
	return t;
}

static double
time_deflate(const struct chunk *c, size_t n, int level, uint8_t *raw,
             uint8_t *out, size_t out_cap)
{
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	struct libdeflate_compressor *z = libdeflate_alloc_compressor(level);
	double total = 0;
	for (size_t i = 0; i < n; i++) {
		size_t actual;
		const uint8_t *src = c[i].stored;
		if (c[i].deflated) {
			if (libdeflate_zlib_decompress(d, c[i].stored, c[i].stored_len,
			                               raw, c[i].raw_len, &actual))
				exit(2);
			src = raw;
		}
		double t0 = now();
		sink += libdeflate_zlib_compress(z, src, c[i].raw_len, out, out_cap);
		total += now() - t0;
	}
	libdeflate_free_compressor(z);
	libdeflate_free_decompressor(d);
	return total;
}

/* Decode events into copies, a batch at a time, then time only the
 * writer on them.  Definitions are written untimed.  The batch is small
 * enough to stay in cache (1024 events, 152 KiB), as the event a real
 * caller has just filled in is: with a larger one the timed loop waited
 * on memory for the batch itself, a cost of this harness, not of the
 * writer. */
static double
time_write(const uint8_t *buf, size_t len, int level, int threads)
{
	struct tk_reader *r = tk_reader_new();
	struct tk_writer *w = tk_writer_new();
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.level = level;
	o.threads = threads;
	int fd = open("/dev/null", O_WRONLY);
	if (tk_reader_open_mem(r, buf, len, "bench") || tk_writer_open_fd(w, fd, "null", &o))
		exit(2);
	size_t cap = 1 << 10, n = 0;
	struct tk_event *batch = malloc(cap * sizeof(*batch));
	size_t *args_off = malloc(cap * sizeof(*args_off));
	struct { char *p; size_t len, cap; } args = { NULL, 0, 0 };
	uint32_t *tmap = calloc(1u << 20, sizeof(*tmap));
	double total = 0;
	struct tk_record rec;
	int rc;
	for (;;) {
		rc = tk_reader_next(r, &rec);
		int flush = rc != TK_OK || n == cap;
		if (rc == TK_OK && rec.type == TK_REC_TRACK) {
			const struct tk_track *t = rec.u.track;
			uint32_t id = 0;
			struct tk_thread th = t->u.thread;
			struct tk_stream s = t->u.stream;
			switch (t->type) {
			case TK_TRACK_PROCESS: id = tk_writer_process(w, 0, &t->u.process); break;
			case TK_TRACK_THREAD:
				th.process = tmap[th.process];
				id = tk_writer_thread(w, 0, &th);
				break;
			case TK_TRACK_STREAM:
				s.process = tmap[s.process];
				id = tk_writer_stream(w, 0, &s);
				break;
			case TK_TRACK_COUNTER: id = tk_writer_counter(w, 0, &t->u.counter); break;
			default: break;
			}
			if (t->id < (1u << 20))
				tmap[t->id] = id;
			continue;
		}
		if (rc == TK_OK && rec.type == TK_REC_DEVICE) {
			tk_writer_device(w, 0, rec.u.device);
			continue;
		}
		if (rc == TK_OK && rec.type == TK_REC_EVENT) {
			struct tk_event e = *rec.u.event;
			e.track = e.track < (1u << 20) ? tmap[e.track] : 0;
			e.name_id = tk_writer_cstring(w, e.name); /* untimed interning */
			e.name = NULL;
			/* the args go with the event: a copy, since the reader's
			 * text lasts only until its next chunk (pointers set
			 * before the timed loop, as the copies may move) */
			args_off[n] = args.len;
			if (e.args && e.args_len) {
				if (args.len + e.args_len > args.cap) {
					args.cap = (args.len + e.args_len) * 2;
					if (!(args.p = realloc(args.p, args.cap)))
						exit(2);
				}
				memcpy(args.p + args.len, e.args, e.args_len);
				args.len += e.args_len;
			}
			e.args = NULL;
			if (e.kind == TK_RANGE || e.kind == TK_ASYNC_RANGE || e.kind == TK_MARK) {
				e.u.range.domain_id = tk_writer_cstring(w, e.u.range.domain);
				e.u.range.domain = NULL;
				e.u.range.end_track = 0;
			}
			if (e.kind == TK_KERNEL) {
				e.u.kernel.mangled_id = tk_writer_cstring(w, e.u.kernel.mangled);
				e.u.kernel.mangled = NULL;
			}
			if (e.kind == TK_DROPPED) {
				e.u.dropped.reason_id = tk_writer_cstring(w, e.u.dropped.reason);
				e.u.dropped.reason = NULL;
			}
			if (e.kind == TK_FLOW) {
				e.u.flow.category_id = tk_writer_cstring(w, e.u.flow.category);
				e.u.flow.category = NULL;
			}
			batch[n++] = e;
		}
		if (flush || n == cap) {
			for (size_t i = 0; i < n; i++)
				if (batch[i].args_len)
					batch[i].args = args.p + args_off[i];
			args.len = 0;
			double t0 = now();
			for (size_t i = 0; i < n; i++)
				if (tk_writer_event(w, &batch[i])) {
					fprintf(stderr, "bench_format: %s\n", tk_writer_error(w));
					exit(2);
				}
			total += now() - t0;
			n = 0;
		}
		if (rc != TK_OK)
			break;
	}
	double t0 = now();
	tk_writer_close(w);
	total += now() - t0;
	tk_writer_free(w);
	tk_reader_free(r);
	close(fd);
	free(batch);
	free(args_off);
	free(args.p);
	free(tmap);
	return total;
}

int
main(int argc, char **argv)
{
	int repeat = 3, level = 6;
	if (argc < 2) {
		fprintf(stderr, "usage: bench_format FILE [REPEAT]\n");
		return 2;
	}
	if (argc > 2)
		repeat = atoi(argv[2]);
	int fd = open(argv[1], O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		perror(argv[1]);
		return 1;
	}
	size_t len = (size_t)st.st_size;
	uint8_t *buf = malloc(len);
	if (!buf || read(fd, buf, len) != (ssize_t)len) {
		perror(argv[1]);
		return 1;
	}
	close(fd);

	/* the chunks, by the format spec */
	size_t nch = 0, cap = 1024, max_raw = 0;
	struct chunk *ch = malloc(cap * sizeof(*ch));
	uint64_t raw_total = 0;
	for (size_t pos = 36; pos + 56 <= len;) {
		const uint8_t *h = buf + pos;
		if (memcmp(h, "\x89TKC", 4) != 0)
			break;
		uint32_t hs = le32(h + 4);
		if (nch == cap)
			ch = realloc(ch, (cap *= 2) * sizeof(*ch));
		ch[nch].stored = h + hs;
		ch[nch].stored_len = le32(h + 12);
		ch[nch].raw_len = le32(h + 16);
		ch[nch].deflated = le32(h + 8) & 1;
		if (ch[nch].raw_len > max_raw)
			max_raw = ch[nch].raw_len;
		raw_total += ch[nch].raw_len;
		pos += hs + ch[nch].stored_len;
		nch++;
	}
	uint8_t *raw = malloc(max_raw + 1), *out = malloc(max_raw * 2 + 1024);

	if (repeat < 1)
		repeat = 1;
	enum { READ, COLUMNS, INFLATE, WRITE, DEFLATE, WRITE_T, READ_X, COLUMNS_X, WRITE_X, WRITE_T_X,
	       NSERIES };
	double *series[NSERIES];
	for (int k = 0; k < NSERIES; k++)
		if (!(series[k] = malloc((size_t)repeat * sizeof(double)))) {
			perror("bench_format");
			return 1;
		}
	uint64_t events = 0;
	for (int i = 0; i < repeat; i++) {
		series[READ][i] = time_read(buf, len, 0, &events);
		uint64_t column_events;
		series[COLUMNS][i] = time_read(buf, len, 1, &column_events);
		if (column_events != events) {
			fprintf(stderr, "bench_format: %" PRIu64 " events by columns, %" PRIu64 " one by one\n",
			        column_events, events);
			exit(1);
		}
		series[INFLATE][i] = time_inflate(ch, nch, raw);
		series[WRITE][i] = time_write(buf, len, level, 0);
		series[DEFLATE][i] = time_deflate(ch, nch, level, raw, out, max_raw * 2 + 1024);
		series[READ_X][i] = series[INFLATE][i] / series[READ][i];
		series[COLUMNS_X][i] = series[INFLATE][i] / series[COLUMNS][i];
		series[WRITE_X][i] = series[DEFLATE][i] / series[WRITE][i];
		series[WRITE_T][i] = time_write(buf, len, level, 2);
		series[WRITE_T_X][i] = series[DEFLATE][i] / series[WRITE_T][i];
	}
	printf("events %" PRIu64 "\n", events);
	printf("bytes %zu\n", len);
	printf("raw_bytes %" PRIu64 "\n", raw_total);
	printf("chunks %zu\n", nch);
	printf("runs %d\n", repeat);
	printf("read_columns_s %.6f\n", median(series[COLUMNS], repeat));
	printf("read_s %.6f\ninflate_s %.6f\nwrite_s %.6f\ndeflate_s %.6f\n",
	       median(series[READ], repeat), median(series[INFLATE], repeat),
	       median(series[WRITE], repeat), median(series[DEFLATE], repeat));
	printf("write_threaded_s %.6f\n", median(series[WRITE_T], repeat));
	printf("read_x %.3f\nread_columns_x %.3f\nwrite_x %.3f\nwrite_threaded_x %.3f\n",
	       median(series[READ_X], repeat), median(series[COLUMNS_X], repeat),
	       median(series[WRITE_X], repeat), median(series[WRITE_T_X], repeat));
	for (int k = 0; k < NSERIES; k++)
		free(series[k]);
	free(buf);
	free(ch);
	free(raw);
	free(out);
	return 0;
}
