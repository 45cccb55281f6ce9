/* SPDX-License-Identifier: MIT */
/*
 * trace-to-perfetto: convert traces to Perfetto's native protobuf trace
 * format, a stream of TracePackets with TrackEvents, interned names and
 * incremental timestamps: about a tenth of the Chrome JSON's size, and
 * read by the Perfetto UI and trace processor without the JSON
 * importer's quirks.  The mapping of each event kind is in
 * trace-to-perfetto(1).
 *
 * One pass, bounded memory.  Events go out in begin order: those of a
 * sorted input as they are read, the others after a wait in a heap
 * until the chunk watermarks let them out (order.c).  A slice gets a
 * track where it nests (tracks.c) and its begin is written at once, its
 * end when the output reaches that time.  With --split the output is a
 * series of files, each starting a new packet sequence with its own
 * descriptors and interned strings, so that each loads on its own.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "perfetto.h"
#include "common/chrome_scope.h"
#include "common/util.h"
#include "import/autoread.h"

#define END_PACKET_MAX 32     /* bytes of one slice-end packet, at most */
#define FINAL_RESERVE 1024    /* the closing attributes packet */
#define SPLIT_MIN 4096
#define FLUSH_AT (256u << 10)

struct options {
	const char *output;       /* NULL = stdout */
	uint64_t split;           /* bytes per file, 0 = one file */
	int64_t from, to;         /* ns since the trace start; to < 0 = none */
	int has_from;
	regex_t name_re;
	int has_name;
	int flows, counters;
	size_t buffer;            /* reorder buffer limit, bytes */
};

struct conv {
	struct options opt;
	struct pf_out out;
	struct pf_seq seq;
	struct pf_intern in;
	struct pf_tracks tr;
	struct pf_reorder ro;
	struct pf_ends ends;
	struct pf_enc enc;
	struct pbuf te;           /* the TrackEvent being encoded */
	int started;              /* the first file's preamble is written */
	int have_base;
	int64_t base;             /* trace start, ns: --from/--to count from it */
	int64_t earliest_start;
	int64_t last_ts;          /* latest begin written */
	uint32_t scope;
	uint8_t *name_ok;         /* --name by string id: 0 ?, 1 yes, 2 no */
	size_t nname_ok;
	char **meta;              /* key, value pairs for every file */
	size_t nmeta, capmeta;
	int oversize_warned;
	uint64_t file_units;       /* packets of events in the current file */
	/* counts, for the closing attributes */
	uint64_t events_read, events_written, filtered, released_early;
	uint64_t nonfinite, bad_times, lost_overflow, on_counter_tracks, dropped;
};

static void
usage(void)
{
	printf("Usage: %s [OPTIONS] [FILE...]\n"
	       "Convert tracekit traces (stdin when no FILE or -) to Perfetto's protobuf\n"
	       "trace format for the Perfetto UI and trace processor.\n"
	       "\n"
	       "  -o, --output FILE    write FILE instead of standard output\n"
	       "      --split SIZE     write files of at most SIZE bytes (e.g. 500M), each\n"
	       "                       loadable on its own: FILE-001.ext, FILE-002.ext, ...\n"
	       "      --from DURATION  only events that end at or after this time since\n"
	       "                       the trace start (e.g. 1.5s, 200ms)\n"
	       "      --to DURATION    only events that begin at or before this time\n"
	       "      --name REGEX     only events whose name matches REGEX (extended)\n"
	       "      --no-flows       no arrows from API calls to GPU work\n"
	       "      --no-counters    no counter tracks (memory, CPU use)\n"
	       "  -S, --buffer-size SIZE  memory for putting events in order (default\n"
	       "                       64M; also --buffer)\n"
	       "  -h, --help           show this help\n"
	       "  -V, --version        show the version\n"
	       "\n"
	       "Exit status: 0 success, 1 an input could not be read completely (the\n"
	       "output is still a valid trace), 2 usage or output error.\n",
	       cmd_name());
}

/* ---- metadata ------------------------------------------------------------------ */

static void
add_pair(struct conv *C, const char *key, const char *value)
{
	for (size_t i = 0; i < C->nmeta; i++)
		if (!strcmp(C->meta[2 * i], key) && !strcmp(C->meta[2 * i + 1], value))
			return;  /* merged traces repeat their metadata */
	if (C->nmeta == C->capmeta) {
		C->capmeta = C->capmeta ? C->capmeta * 2 : 32;
		C->meta = cmd_xrealloc(C->meta, C->capmeta * 2 * sizeof(char *));
	}
	size_t n;
	const char *k = cmd_utf8(key, strlen(key), &n);
	C->meta[2 * C->nmeta] = cmd_xstrdup(k);
	const char *v = cmd_utf8(value, strlen(value), &n);
	C->meta[2 * C->nmeta + 1] = cmd_xstrdup(v);
	C->nmeta++;
	if (C->started)  /* files to come get it in their preamble */
		pf_seq_attributes(&C->seq, (const char *const *)C->meta + 2 * (C->nmeta - 1), 1);
}

static void
add_device(struct conv *C, const struct tk_device *d)
{
	char key[64], value[512], uuid[33];
	for (int i = 0; i < 16; i++)
		snprintf(uuid + 2 * i, 3, "%02x", d->uuid[i]);
	snprintf(key, sizeof(key), "gpu %u", d->index);
	snprintf(value, sizeof(value), "%s; compute capability %u.%u; %u SMs; %" PRIu64
	         " bytes; uuid %s; host %s", d->name, d->cc_major, d->cc_minor,
	         d->sm_count, d->memory, uuid, d->host);
	add_pair(C, key, value);
}

/* ---- writing packets ------------------------------------------------------------ */

static void
start_file(struct conv *C, int64_t t0)
{
	add_pair(C, "tracekit.version", tk_version());
	pf_seq_start(&C->seq, t0, (const char *const *)C->meta, C->nmeta);
	C->started = 1;
}

static int
fits(const struct conv *C)
{
	return C->out.bytes + C->seq.pkt.len + C->ends.n * END_PACKET_MAX +
	       FINAL_RESERVE <= C->opt.split;
}

static void
write_end_packet(struct conv *C, const struct pf_end *e)
{
	struct pbuf *te = &C->te;
	te->len = 0;
	pb_uint(te, TE_TYPE, TE_SLICE_END);
	pb_uint(te, TE_TRACK_UUID, C->tr.t[e->track].uuid);
	pf_seq_event(&C->seq, e->ts, te);
}

/* The next file of a --split series: the ends of the slices still open
 * go in this one (each file holds whole slices), then a new sequence. */
static void
roll(struct conv *C, int64_t ts)
{
	struct pf_end e;
	while (pf_ends_pop(&C->ends, INT64_MAX, &e))
		write_end_packet(C, &e);
	pf_seq_flush(&C->seq);
	pf_out_next(&C->out);
	pf_intern_clear(&C->in);
	C->file_units = 0;
	start_file(C, ts);
}

/* Write one packet (with the descriptors of its track if this file has
 * not had them): a slice end when e is NULL. */
static void
write_unit(struct conv *C, uint32_t track, int64_t ts, const struct tk_event *e,
           int type, const struct pf_end *end)
{
	if (!C->started)
		start_file(C, C->base < ts ? C->base : ts);
	for (int attempt = 0;; attempt++) {
		size_t mark = C->seq.pkt.len;
		struct pf_clocks clock = C->seq.clock;
		pf_tracks_announce(&C->tr, track, C->out.index, &C->seq.pkt, PF_SEQ_ID);
		if (end)
			write_end_packet(C, end);
		else {
			pf_encode_event(&C->enc, &C->te, e, C->tr.t[track].uuid, type);
			pf_seq_event(&C->seq, ts, &C->te);
		}
		/* an end goes in the file of its begin: the room for it was
		 * kept when the begin was written */
		if (!C->opt.split || end || fits(C))
			break;
		if (attempt || !C->file_units) {
			if (!C->oversize_warned++)
				cmd_warn("%s: a packet does not fit in --split %" PRIu64
				         " bytes with what a file must hold; written anyway",
				         C->out.cur_path, C->opt.split);
			break;
		}
		C->seq.pkt.len = mark;
		C->seq.clock = clock;
		roll(C, ts);
	}
	C->file_units++;
	if (C->seq.pkt.len >= FLUSH_AT)
		pf_seq_flush(&C->seq);
}

/* Slice ends up to time t go out first. */
static void
ends_until(struct conv *C, int64_t t)
{
	struct pf_end e;
	while (pf_ends_pop(&C->ends, t, &e))
		write_unit(C, e.track, e.ts, NULL, 0, &e);
}

/* ---- events ---------------------------------------------------------------------- */

static void
slice(struct conv *C, const struct tk_event *e, uint32_t track)
{
	uint32_t depth = 0;
	int64_t end = e->ts + e->dur;
	uint32_t t = pf_tracks_place(&C->tr, track, e->ts, end, &depth);
	if (!t) {
		/* every extra track is taken: the begin as an instant */
		C->lost_overflow++;
		write_unit(C, track, e->ts, e, TE_INSTANT, NULL);
		return;
	}
	write_unit(C, t, e->ts, e, TE_SLICE_BEGIN, NULL);
	pf_ends_push(&C->ends, end, t, depth);
}

static void
emit(struct conv *C, const struct tk_event *e, uint32_t track)
{
	if (cmd_mark_is_global(e))
		track = pf_tracks_global(&C->tr);
	ends_until(C, e->ts);
	if (e->ts > C->last_ts)
		C->last_ts = e->ts;
	int counter_track = C->tr.t[track].kind == PT_COUNTER;
	if (counter_track != (e->kind == TK_COUNTER)) {
		C->on_counter_tracks++;  /* a sample off a counter track, or the reverse */
		return;
	}
	switch (e->kind) {
	case TK_RANGE: case TK_API: case TK_KERNEL: case TK_MEMCPY: case TK_MEMSET:
	case TK_SYNC: case TK_OVERHEAD: case TK_PROCESS: case TK_RUN:
	case TK_ASYNC_RANGE:
		slice(C, e, track);
		break;
	case TK_MARK: case TK_MEMORY: case TK_DROPPED: case TK_FLOW:
		write_unit(C, track, e->ts, e, TE_INSTANT, NULL);
		break;
	case TK_COUNTER:
		write_unit(C, track, e->ts, e, TE_COUNTER, NULL);
		break;
	}
	C->events_written++;
}

static void
release(struct conv *C, int64_t bound)
{
	struct pf_held *h;
	while ((h = pf_reorder_pop(&C->ro, bound))) {
		emit(C, &h->ev, h->map_track);
		pf_held_free(&C->ro, h);
	}
}

static int
name_selected(struct conv *C, const struct tk_event *e)
{
	if (!e->name_id)
		return regexec(&C->opt.name_re, e->name, 0, NULL, 0) == 0;
	if (e->name_id >= C->nname_ok) {
		size_t n = C->nname_ok ? C->nname_ok : 1024;
		while (n <= e->name_id)
			n *= 2;
		C->name_ok = cmd_xrealloc(C->name_ok, n);
		memset(C->name_ok + C->nname_ok, 0, n - C->nname_ok);
		C->nname_ok = n;
	}
	uint8_t *ok = &C->name_ok[e->name_id];
	if (!*ok)
		*ok = regexec(&C->opt.name_re, e->name, 0, NULL, 0) == 0 ? 1 : 2;
	return *ok == 1;
}

/* Whether the options keep event e; counts impossible times. */
static int
selected(struct conv *C, const struct tk_event *e)
{
	int64_t end, rel, rel_end;
	if (e->ts < 0 || __builtin_add_overflow(e->ts, e->dur, &end) ||
	    __builtin_sub_overflow(e->ts, C->base, &rel) ||
	    __builtin_sub_overflow(end, C->base, &rel_end) ||
	    rel < -(INT64_C(1) << 62) || rel_end > (INT64_C(1) << 62)) {
		C->bad_times++;
		return 0;
	}
	if (e->kind == TK_COUNTER && (!C->opt.counters || !isfinite(e->u.counter.value))) {
		C->nonfinite += C->opt.counters;
		return 0;
	}
	if (e->kind == TK_FLOW && !C->opt.flows)
		return 0;
	if (e->kind > TK_KIND_MAX)
		return 0;
	if (C->opt.has_name && e->kind != TK_COUNTER && e->kind != TK_DROPPED &&
	    !name_selected(C, e))
		return 0;
	if (C->opt.has_from && rel_end < C->opt.from)
		return 0;
	if (C->opt.to >= 0 && rel > C->opt.to)
		return 0;
	return 1;
}

static void
convert_event(struct conv *C, const struct tk_reader *r, const struct tk_event *e)
{
	const struct tk_chunk_info *ci = tk_reader_chunk(r);
	if (!C->have_base) {
		C->base = ci->t_min;
		if (C->earliest_start && C->earliest_start < C->base)
			C->base = C->earliest_start;
		C->have_base = 1;
	}
	C->events_read++;
	if (e->kind == TK_DROPPED)
		C->dropped += e->u.dropped.count;
	if (!selected(C, e)) {
		C->filtered++;
		return;
	}
	uint32_t track = e->kind == TK_ASYNC_RANGE ? pf_tracks_async(&C->tr, r, e->trk)
	                                           : pf_tracks_map(&C->tr, r, e->trk)->track;
	if (C->ro.n == 0 && (ci->flags & TK_CHUNK_SORTED) && e->ts >= C->last_ts &&
	    e->ts <= ci->watermark) {
		emit(C, e, track);  /* nothing can come before it any more */
		return;
	}
	pf_reorder_push(&C->ro, e, track, C->scope);
	while (C->ro.held > C->ro.limit) {
		/* no watermark lets them out in time: the earliest go now */
		struct pf_held *h = pf_reorder_pop(&C->ro, INT64_MAX);
		emit(C, &h->ev, h->map_track);
		pf_held_free(&C->ro, h);
		C->released_early++;
	}
}

/* ---- inputs ------------------------------------------------------------------------ */

static void
new_scope(struct conv *C)
{
	C->scope++;
	C->enc.scope = C->scope;
	pf_tracks_scope(&C->tr);
	pf_intern_scope(&C->in);
	if (C->nname_ok)
		memset(C->name_ok, 0, C->nname_ok);
}

static void
definition(struct conv *C, const struct tk_record *rec)
{
	switch (rec->type) {
	case TK_REC_TRACK: {
		const struct tk_track *t = rec->u.track;
		pf_tracks_redefine(&C->tr, t->id);
		if (t->type == TK_TRACK_PROCESS && t->u.process.start > 0 &&
		    (!C->earliest_start || t->u.process.start < C->earliest_start))
			C->earliest_start = t->u.process.start;
		break;
	}
	case TK_REC_DEVICE:
		add_device(C, rec->u.device);
		break;
	case TK_REC_META:
		add_pair(C, rec->u.meta->key, rec->u.meta->value);
		break;
	default:
		break;
	}
}

static int
convert_file(struct conv *C, const char *path)
{
	struct autoread in;
	int status;
	struct tk_reader *r = autoread_open_reader(&in, path, &status);
	if (!r)
		return status;
	new_scope(C);
	struct tk_record rec;
	uint64_t chunk = UINT64_MAX;
	int64_t watermark = INT64_MIN;
	int rc;
	while ((rc = tk_reader_next(r, &rec)) == TK_OK) {
		const struct tk_chunk_info *ci = tk_reader_chunk(r);
		if (ci->offset != chunk) {
			/* the last chunk is all read: what begins before its
			 * watermark has everything it will ever have */
			release(C, watermark);
			chunk = ci->offset;
			watermark = ci->watermark;
		}
		if (rec.type == TK_REC_EVENT) {
			convert_event(C, r, rec.u.event);
		} else if (rec.type == TK_REC_SCOPE) {
			release(C, INT64_MAX);
			new_scope(C);
			watermark = INT64_MIN;
		} else {
			definition(C, &rec);
		}
	}
	release(C, INT64_MAX);
	if (rc != TK_EOF) {
		cmd_reader_error(path, r);
		status = EXIT_BADINPUT;
	}
	tk_reader_free(r);
	autoread_close(&in);
	return status;
}

/* ---- the end ---------------------------------------------------------------------- */

static void
finish(struct conv *C)
{
	ends_until(C, INT64_MAX);
	if (!C->started)
		start_file(C, C->have_base ? C->base : 0);
	char v[10][32];
	const char *kv[20];
	size_t n = 0;
#define STAT(key, val) do { snprintf(v[n], sizeof(v[n]), "%" PRIu64, (uint64_t)(val)); \
		kv[2 * n] = key; kv[2 * n + 1] = v[n]; n++; } while (0)
	STAT("tracekit.events_read", C->events_read);
	STAT("tracekit.events_written", C->events_written);
	STAT("tracekit.events_filtered_out", C->filtered);
	STAT("tracekit.trace_start_ns", C->have_base ? C->base : 0);
	STAT("tracekit.slices_moved_to_overlap_tracks", C->tr.moved);
	STAT("tracekit.events_released_early", C->released_early);
	STAT("tracekit.dropped_by_recorder", C->dropped);
	STAT("tracekit.events_with_impossible_times_skipped", C->bad_times);
	STAT("tracekit.nonfinite_counter_samples_skipped", C->nonfinite);
	STAT("tracekit.events_off_their_track_type_skipped", C->on_counter_tracks);
#undef STAT
	pf_seq_attributes(&C->seq, kv, n);
	pf_seq_flush(&C->seq);
	pf_out_close(&C->out);
}

static void
cleanup(struct conv *C)
{
	pf_reorder_free(&C->ro);
	pf_ends_free(&C->ends);
	pf_tracks_free(&C->tr);
	pf_intern_free(&C->in);
	pf_args_free(C->enc.args);
	pb_free(&C->te);
	pb_free(&C->seq.pkt);
	free(C->name_ok);
	for (size_t i = 0; i < 2 * C->nmeta; i++)
		free(C->meta[i]);
	free(C->meta);
	if (C->opt.has_name)
		regfree(&C->opt.name_re);
}

static void
parse_options(struct options *opt, int argc, char **argv)
{
	enum { OPT_FROM = 256, OPT_TO, OPT_NAME, OPT_NO_FLOWS, OPT_NO_COUNTERS,
	       OPT_BUFFER, OPT_SPLIT };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "split", required_argument, NULL, OPT_SPLIT },
		{ "from", required_argument, NULL, OPT_FROM },
		{ "to", required_argument, NULL, OPT_TO },
		{ "name", required_argument, NULL, OPT_NAME },
		{ "no-flows", no_argument, NULL, OPT_NO_FLOWS },
		{ "no-counters", no_argument, NULL, OPT_NO_COUNTERS },
		{ "buffer-size", required_argument, NULL, 'S' },
		{ "buffer", required_argument, NULL, OPT_BUFFER },  /* the old name */
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	size_t size;
	while ((c = getopt_long(argc, argv, ":o:S:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': opt->output = optarg; break;
		case OPT_SPLIT:
			if (cmd_parse_size(optarg, &size) < 0 || size < SPLIT_MIN)
				cmd_usage_error("invalid --split '%s' (bytes, at least 4k; "
				                "or with k, M, G)", optarg);
			opt->split = size;
			break;
		case OPT_FROM:
			if (cmd_parse_duration(optarg, &opt->from) < 0)
				cmd_usage_error("invalid --from '%s' (a duration such as 1.5s or 200ms)", optarg);
			opt->has_from = 1;
			break;
		case OPT_TO:
			if (cmd_parse_duration(optarg, &opt->to) < 0)
				cmd_usage_error("invalid --to '%s' (a duration such as 1.5s or 200ms)", optarg);
			break;
		case OPT_NAME: {
			if (opt->has_name)
				regfree(&opt->name_re);
			int rc = regcomp(&opt->name_re, optarg, REG_EXTENDED | REG_NOSUB);
			if (rc) {
				char msg[128];
				regerror(rc, &opt->name_re, msg, sizeof(msg));
				cmd_usage_error("invalid --name '%s': %s", optarg, msg);
			}
			opt->has_name = 1;
			break;
		}
		case OPT_NO_FLOWS: opt->flows = 0; break;
		case OPT_NO_COUNTERS: opt->counters = 0; break;
		case OPT_BUFFER:
		case 'S':
			if (cmd_parse_size(optarg, &opt->buffer) < 0)
				cmd_usage_error("invalid --%s '%s' (bytes, or with k, M, G)",
				                c == 'S' ? "buffer-size" : "buffer", optarg);
			break;
		case 'h': usage(); exit(cmd_finish(0));
		case 'V': cmd_version();
		default: cmd_bad_option(c, argv);
		}
	}
	if (opt->has_from && opt->to >= 0 && opt->to < opt->from)
		cmd_usage_error("--to must not be before --from");
}

int
main(int argc, char **argv)
{
	cmd_init("trace-to-perfetto");
	struct conv *C = calloc(1, sizeof(*C));
	if (!C)
		cmd_die(EXIT_USAGE, "out of memory");
	C->opt.to = -1;
	C->opt.flows = C->opt.counters = 1;
	C->opt.buffer = 64u << 20;
	parse_options(&C->opt, argc, argv);

	cmd_no_input_tty(argc - optind, "[OPTIONS] [FILE...]");
	char *stdin_only[] = { "-", NULL };
	char **files = optind < argc ? argv + optind : stdin_only;
	int nfiles = optind < argc ? argc - optind : 1;

	pf_out_open(&C->out, C->opt.output, C->opt.split);
	pf_intern_init(&C->in);
	pf_tracks_init(&C->tr);
	pf_reorder_init(&C->ro, C->opt.buffer);
	C->seq.out = &C->out;
	C->seq.in = &C->in;
	C->enc.in = &C->in;
	C->enc.flows = C->opt.flows;
	C->last_ts = INT64_MIN;
	int status = 0;
	for (int i = 0; i < nfiles; i++)
		status |= convert_file(C, files[i]);
	finish(C);
	cleanup(C);
	free(C);
	return cmd_finish(status);
}
