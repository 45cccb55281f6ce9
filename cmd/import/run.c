/* SPDX-License-Identifier: MIT */
/*
 * One import from start to end, for trace-import and the fuzz target:
 * split the input, parse the pieces (beside, in a second thread), convert
 * them, close what was left open, and write the trace in time order with
 * its definitions and run metadata.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "import.h"
#include "common/util.h"

struct run {
	struct imp im;
	struct imp_tracks *tracks;
	struct imp_sort *sort;
	struct imp_summary *sum;
	char *error;             /* what stopped the reading, if anything */
};

static void
warn(const struct run *r, const char *what)
{
	if (!r->im.quiet)
		cmd_warn("%s: %s", r->im.name, what);
}

static int
write_meta(void *arg, struct tk_writer *w)
{
	return imp_write_meta(arg, w);
}

/* Wall-clock ISO 8601 UTC with nanoseconds. */
static void
iso_time(char *buf, size_t n, int64_t ns)
{
	time_t sec = (time_t)(ns / 1000000000);
	struct tm tm;
	size_t k = gmtime_r(&sec, &tm) ? strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm) : 0;
	snprintf(buf + k, n - k, ".%09" PRId64 "Z", ns % 1000000000);
}

/* What the import itself adds to the run metadata. */
static void
import_meta(struct run *r, const char *name)
{
	struct imp *im = &r->im;
	char v[128];
	snprintf(v, sizeof(v), "trace-import %s", tk_version());
	imp_meta_own(im, "importer", v);
	imp_meta_own(im, "import.source", name);
	if (r->error)
		imp_meta_own(im, "import.error", r->error);
	json_t *host = json_object_get(im->meta, "host");
	if (json_array_size(host) == 1)
		imp_tracks_default_host(r->tracks, json_string_value(json_array_get(host, 0)));
	/* a rank of a distributed job (Kineto's distributedInfo) is who its
	 * processes are, as trace-merge -l would label them */
	json_t *rank = json_object_get(im->meta, "distributedInfo.rank");
	if (json_array_size(rank) == 1) {
		char label[96];
		snprintf(label, sizeof(label), "rank %s",
		         json_string_value(json_array_get(rank, 0)));
		imp_tracks_default_label(r->tracks, label);
	}
	/* times that look like the wall clock give the start */
	int64_t start = im->t_min;
	if (im->has_base && start != INT64_MAX) {
		if ((im->base_ns > 0 && start > INT64_MAX - im->base_ns) ||
		    (im->base_ns < 0 && start < INT64_MIN - im->base_ns))
			start = INT64_MAX;
		else
			start += im->base_ns;
	}
	const int64_t y2000 = INT64_C(946684800) * 1000000000;
	const int64_t y2100 = INT64_C(4102444800) * 1000000000;
	if (start != INT64_MAX && start >= y2000 && start < y2100 &&
	    !json_object_get(im->meta, "start")) {
		iso_time(v, sizeof(v), start);
		imp_meta_own(im, "start", v);
	}
}

/* Convert one item and its parsed value (NULL: parse it here, which
 * repairs or reports). */
static int
convert(struct run *r, const struct imp_item *it, json_t *v)
{
	struct imp *im = &r->im;
	int status = 0;
	if (!v) {
		char msg[256];
		size_t at = 0;
		v = imp_parse(it->text, it->len, &im->parse, msg, sizeof(msg), &at);
		if (!v) {
			im->offset = it->offset;
			if (it->type == IMP_EVENT) {
				im->bad_events++;
				imp_summary_add(im->sum, "?", "(invalid JSON)", IMP_OUT_BAD);
				imp_event_warn(im, "invalid JSON at byte %" PRIu64 ": %s",
				               it->offset + at, msg);
			} else if (!im->quiet) {
				cmd_warn("%s: invalid JSON at byte %" PRIu64 " (top-level "
				         "key '%s'): %s", im->name, it->offset + at, it->key, msg);
			}
			return 1;
		}
	} else {
		im->parse.repaired = 0;
		json_incref(v);
	}
	if (it->type == IMP_EVENT) {
		if (imp_event(im, v, it) < 0)
			status = 1;
	} else {
		imp_topkey(im, it->key, v);
	}
	json_decref(v);
	return status;
}

static int
convert_batch(struct run *r, struct imp_pipe *p, struct imp_batch *b)
{
	int status = 0;
	for (size_t i = 0; i < b->n; i++)
		status |= b->flat_ok[i] ? imp_fast_event(&r->im, &b->items[i], &b->flats[i])
		                        : convert(r, &b->items[i], b->vals[i]);
	imp_pipe_done(p, b);
	return status;
}

/* Read every item of the input; 0, or 1 if something could not be read
 * (said on stderr). */
static int
read_input(struct run *r, struct imp_input *in, int threads, int fast)
{
	struct imp *im = &r->im;
	struct imp_scan sc;
	struct imp_item it;
	struct imp_batch *b;
	int rc = 0, status = 0;
	/* On one thread, an event the fast path reads is converted where
	 * the splitter left it, without a copy into a batch (after the
	 * events queued before it) */
	int direct = fast && !threads;
	struct imp_flat *flat = direct ? malloc(sizeof(*flat)) : NULL;
	if (direct && !flat)
		cmd_die(EXIT_USAGE, "out of memory");
	struct imp_pipe *p = imp_pipe_new(threads, fast && !direct);
	imp_scan_init(&sc, in, flat);
	while (!im->fatal && (rc = imp_scan_next(&sc, &it)) > 0) {
		/* the splitter read it already: converted where it lies */
		if (it.flat) {
			imp_pipe_end(p);
			while ((b = imp_pipe_get(p, 1)))
				status |= convert_batch(r, p, b);
			status |= imp_fast_event(im, &it, flat);
			continue;
		}
		if (it.type == IMP_EVENT && imp_skip_flow(im, &it))
			continue;
		imp_pipe_put(p, &it);
		while ((b = imp_pipe_get(p, imp_pipe_full(p))))
			status |= convert_batch(r, p, b);
	}
	imp_pipe_end(p);
	while ((b = imp_pipe_get(p, 1)))
		status |= convert_batch(r, p, b);
	imp_pipe_free(p);
	free(flat);
	if (im->fatal) {
		rc = 0;    /* the writing failed, not the reading: imp_run says */
	} else if (rc < 0) {
		warn(r, sc.errmsg);
		r->error = strdup(sc.errmsg);
		status = 1;
	} else if (!sc.events_arrays) {
		warn(r, "no traceEvents array: not a Chrome trace");
		r->error = strdup("no traceEvents array");
		status = 1;
	}
	if (sc.unclosed_array)
		imp_summary_note(im->sum, "JSON array not closed (the Chrome format "
		                 "allows it)", 1);
	imp_scan_free(&sc);
	return status;
}

int
imp_run(struct imp_input *in, struct tk_writer *w, const struct imp_options *o)
{
	struct run r = { 0 };
	r.tracks = imp_tracks_new();
	r.sort = imp_sort_new(r.tracks, o->memory, o->tmpdir);
	r.sum = imp_summary_new();
	imp_init(&r.im, in->name, r.tracks, r.sort, r.sum);
	r.im.quiet = o->quiet;
	int status = read_input(&r, in, o->threads, !o->slow);
	if (r.im.fatal) {
		warn(&r, imp_sort_error(r.sort));
		status = EXIT_USAGE;
		goto out;
	}
	imp_event_finish(&r.im);
	imp_kineto_finish(&r.im);
	import_meta(&r, in->name);
	if (r.im.has_base)
		imp_summary_note(r.sum, "baseTimeNanoseconds added to every time", 1);
	imp_summary_note(r.sum, "events with invalid UTF-8 (bad bytes became U+FFFD)",
	                 r.im.parse.utf8_repaired);
	imp_summary_note(r.sum, "numbers beyond 64 bits (kept in args as text)",
	                 r.im.parse.big_numbers);
	imp_summary_note(r.sum, "sorted runs in temporary files", imp_sort_runs(r.sort));
	if (imp_sort_finish(r.sort, w, r.im.has_base ? r.im.base_ns : 0, write_meta,
	                    &r.im) < 0) {
		/* the reader of the output went away (| head): quietly */
		if (tk_writer_errno(w) == EPIPE)
			goto out;
		warn(&r, imp_sort_error(r.sort));
		status = EXIT_USAGE;
	}
	imp_summary_note(r.sum, "samples of Kineto's memory totals that repeat "
	                 "the value before (not written)", imp_sort_repeats(r.sort));
	uint64_t beyond = imp_sort_beyond(r.sort);
	if (beyond && status != EXIT_USAGE) {
		if (!r.im.quiet)
			cmd_warn("%s: %" PRIu64 " event%s whose time plus baseTimeNanoseconds "
			         "does not fit in 64-bit nanoseconds: skipped", in->name,
			         beyond, beyond == 1 ? "" : "s");
		status |= EXIT_BADINPUT;
	}
	if (r.im.warnings > IMP_MAX_WARNINGS && !r.im.quiet)
		cmd_warn("%s: %" PRIu64 " more events could not be read", in->name,
		         r.im.warnings - IMP_MAX_WARNINGS);
	if (o->verbose)
		imp_summary_print(r.sum, stderr, in->name);
out:
	imp_free(&r.im);
	imp_summary_free(r.sum);
	imp_sort_free(r.sort);
	imp_tracks_free(r.tracks);
	free(r.error);
	return status;
}
