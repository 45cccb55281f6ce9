/* SPDX-License-Identifier: MIT */
/*
 * reorder: rewrite a trace with its events in another order, to test
 * that readers do not depend on sorted input.
 *
 *   reorder --by-end IN OUT    by end time, as recorders write spans when
 *                              they end, with exact watermarks
 *   reorder --shuffle N IN OUT random order (seed N), no watermarks
 *   reorder --reverse IN OUT   last event first, no watermarks
 *
 * The whole trace is held in memory: a test tool for small traces.
 * One trace scope only.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tracekit.h"
#include "common/util.h"

struct item {
	struct tk_event e;
	int64_t key;
	uint64_t seq;
};

static struct item *items;
static size_t nitems, capitems;

static char *
keep(const char *s)
{
	char *d = strdup(s ? s : "");
	if (!d)
		cmd_die(2, "out of memory");
	return d;
}

static uint32_t *track_map, *dev_map;
static size_t ntrack_map, ndev_map;

static void
set_map(uint32_t **m, size_t *n, uint32_t from, uint32_t to)
{
	if (from >= *n) {
		size_t k = (size_t)from + 16;
		*m = realloc(*m, k * sizeof(**m));
		if (!*m)
			cmd_die(2, "out of memory");
		memset(*m + *n, 0, (k - *n) * sizeof(**m));
		*n = k;
	}
	(*m)[from] = to;
}

static uint32_t
get_map(const uint32_t *m, size_t n, uint32_t from)
{
	return from < n ? m[from] : 0;
}

static int
cmp_items(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t
next_rand(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

int
main(int argc, char **argv)
{
	enum { BY_END, SHUFFLE, REVERSE } mode = BY_END;
	static const struct option longopts[] = {
		{ "by-end", no_argument, NULL, 'e' },
		{ "shuffle", required_argument, NULL, 's' },
		{ "reverse", no_argument, NULL, 'r' },
		{ "chunk-bytes", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	uint32_t chunk = 0;
	uint64_t v;
	int c;
	cmd_init("reorder");
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'e': mode = BY_END; break;
		case 's':
			mode = SHUFFLE;
			if (cmd_parse_uint(optarg, &v))
				cmd_usage_error("bad seed");
			rng ^= v * 0x9e3779b97f4a7c15ull + 1;
			break;
		case 'r': mode = REVERSE; break;
		case 'c':
			if (cmd_parse_uint(optarg, &v))
				cmd_usage_error("bad chunk size");
			chunk = (uint32_t)v;
			break;
		default: cmd_usage_error("usage: reorder [--by-end|--shuffle N|--reverse] IN OUT");
		}
	}
	if (argc - optind != 2)
		cmd_usage_error("usage: reorder [--by-end|--shuffle N|--reverse] IN OUT");
	struct tk_reader *r = cmd_open_reader(argv[optind]);
	if (!r)
		return 1;
	struct tk_writer_options wo = TK_WRITER_OPTIONS_INIT;
	if (chunk)
		wo.chunk_bytes = chunk;
	struct tk_writer *w = tk_writer_new();
	if (!w || tk_writer_open_path(w, argv[optind + 1], &wo) != TK_OK)
		cmd_die(2, "%s: cannot write", argv[optind + 1]);
	struct tk_record rec;
	int rc;
	while ((rc = tk_reader_next(r, &rec)) == TK_OK) {
		switch (rec.type) {
		case TK_REC_SCOPE:
			cmd_die(2, "one trace scope only");
		case TK_REC_DEVICE: {
			struct tk_device d = *rec.u.device;
			set_map(&dev_map, &ndev_map, d.id, tk_writer_device(w, 0, &d));
			break;
		}
		case TK_REC_TRACK: {
			struct tk_track t = *rec.u.track;
			uint32_t old = get_map(track_map, ntrack_map, t.id), id = 0;
			switch (t.type) {
			case TK_TRACK_PROCESS:
				id = tk_writer_process(w, old, &t.u.process);
				break;
			case TK_TRACK_THREAD:
				t.u.thread.process = get_map(track_map, ntrack_map, t.u.thread.process);
				id = tk_writer_thread(w, old, &t.u.thread);
				break;
			case TK_TRACK_STREAM:
				t.u.stream.process = get_map(track_map, ntrack_map, t.u.stream.process);
				t.u.stream.device = get_map(dev_map, ndev_map, t.u.stream.device);
				id = tk_writer_stream(w, old, &t.u.stream);
				break;
			case TK_TRACK_COUNTER:
				t.u.counter.process = get_map(track_map, ntrack_map, t.u.counter.process);
				t.u.counter.device = get_map(dev_map, ndev_map, t.u.counter.device);
				id = tk_writer_counter(w, old, &t.u.counter);
				break;
			default:
				break;
			}
			set_map(&track_map, &ntrack_map, rec.u.track->id, id);
			break;
		}
		case TK_REC_META:
			tk_writer_meta(w, rec.u.meta->key, rec.u.meta->value);
			break;
		case TK_REC_CATEGORY:
			tk_writer_category(w, rec.u.category->domain,
			                   rec.u.category->category, rec.u.category->name);
			break;
		case TK_REC_EVENT: {
			if (nitems == capitems) {
				capitems = capitems ? capitems * 2 : 1024;
				items = realloc(items, capitems * sizeof(*items));
				if (!items)
					cmd_die(2, "out of memory");
			}
			struct item *it = &items[nitems];
			struct tk_event *e = &it->e;
			*e = *rec.u.event;
			e->track = get_map(track_map, ntrack_map, e->track);
			e->name_id = 0;
			e->name = keep(e->name);
			if (e->args) {
				char *a = malloc(e->args_len + 1);
				if (!a)
					cmd_die(2, "out of memory");
				memcpy(a, e->args, e->args_len);
				a[e->args_len] = 0;
				e->args = a;
			}
			switch (e->kind) {
			case TK_RANGE: case TK_ASYNC_RANGE: case TK_MARK:
				e->u.range.domain_id = 0;
				e->u.range.domain = keep(e->u.range.domain);
				if (e->u.range.end_track)
					e->u.range.end_track = get_map(track_map, ntrack_map,
					                               e->u.range.end_track);
				break;
			case TK_KERNEL:
				e->u.kernel.mangled_id = 0;
				e->u.kernel.mangled = keep(e->u.kernel.mangled);
				break;
			case TK_DROPPED:
				e->u.dropped.reason_id = 0;
				e->u.dropped.reason = keep(e->u.dropped.reason);
				break;
			case TK_FLOW:
				e->u.flow.category_id = 0;
				e->u.flow.category = keep(e->u.flow.category);
				break;
			}
			it->seq = nitems;
			it->key = mode == BY_END ? e->ts + e->dur
			        : mode == REVERSE ? -(int64_t)nitems
			        : (int64_t)(next_rand() >> 1);
			nitems++;
			break;
		}
		}
	}
	if (rc != TK_EOF) {
		cmd_reader_error(argv[optind], r);
		return 1;
	}
	qsort(items, nitems, sizeof(*items), cmp_items);
	/* exact watermarks for --by-end: the earliest begin still to come */
	int64_t *suffix_min = calloc(nitems + 1, sizeof(*suffix_min));
	if (!suffix_min)
		cmd_die(2, "out of memory");
	suffix_min[nitems] = INT64_MAX;
	for (size_t i = nitems; i-- > 0;)
		suffix_min[i] = items[i].e.ts < suffix_min[i + 1] ? items[i].e.ts
		                                                 : suffix_min[i + 1];
	for (size_t i = 0; i < nitems; i++) {
		if (tk_writer_event(w, &items[i].e) != TK_OK)
			cmd_die(2, "%s", tk_writer_error(w));
		if (mode == BY_END)
			tk_writer_watermark(w, suffix_min[i + 1]);
	}
	if (tk_writer_close(w) != TK_OK)
		cmd_die(2, "%s", tk_writer_error(w));
	tk_writer_free(w);
	tk_reader_free(r);
	for (size_t i = 0; i < nitems; i++) {
		struct tk_event *e = &items[i].e;
		free((char *)e->name);
		free((char *)e->args);
		switch (e->kind) {
		case TK_RANGE: case TK_ASYNC_RANGE: case TK_MARK:
			free((char *)e->u.range.domain);
			break;
		case TK_KERNEL: free((char *)e->u.kernel.mangled); break;
		case TK_DROPPED: free((char *)e->u.dropped.reason); break;
		case TK_FLOW: free((char *)e->u.flow.category); break;
		}
	}
	free(items);
	free(suffix_min);
	free(track_map);
	free(dev_map);
	return 0;
}
