/* SPDX-License-Identifier: MIT */
/*
 * trace-to-chrome: convert traces to the Chrome Trace Event format
 * (JSON) for Perfetto, chrome://tracing and other viewers, laid out as
 * GPU profilers do.  The mapping of each event kind to Chrome phases is
 * in main()'s helpers below and in trace-to-chrome(1).
 *
 * One pass, bounded memory: instants, counters and async ranges are
 * written as they are read; complete slices wait in a reorder buffer
 * until the chunk watermarks let them out in begin order
 * (reorder.c), get a track where they nest (layout.c), and
 * start or end flow arrows (flows.c).
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "chrome.h"
#include "common/chrome_scope.h"
#include "common/util.h"
#include "import/autoread.h"

struct options {
	const char *output;       /* NULL = stdout */
	int gzip;
	int64_t from, to;         /* ns since the trace start; to < 0 = none */
	int has_from;
	regex_t name_re;
	int has_name;
	int flows, counters;
	size_t buffer;            /* reorder buffer limit, bytes */
};

/* One conversion: its options, its parts, what it has seen and its
 * counts.  It lives in main() and is passed down, so that the parts
 * share nothing through file-scope state; an output error that exits
 * early leaves it reachable on main's stack. */
struct conv {
	struct options opt;
	struct chrome_out out;
	struct chrome_strings str;
	struct chrome_layout lay;
	struct chrome_reorder ro;
	struct chrome_flows fl;
	struct sbuf ev;           /* one event being formatted */
	int first;                /* nothing written into traceEvents yet */
	int have_base;
	int64_t base;             /* trace start, ns; ts are relative to it */
	int64_t earliest_start;   /* process starts defined before the base */
	uint32_t scope;           /* scopes so far, over all inputs */
	uint8_t *name_ok;         /* --name by string id: 0 ?, 1 yes, 2 no */
	size_t nname_ok;
	struct tk_category *cats; /* NVTX category names of the scope */
	size_t ncats, capcats;
	uint64_t async_id;
	json_t *meta, *devices, *inputs, *errors;
	/* counts for otherData */
	uint64_t events_read, events_written, filtered, async_fallback;
	uint64_t released_early, flows, flow_events, dropped, nonfinite, bad_times;
};

static void
usage(void)
{
	printf("Usage: %s [OPTIONS] [FILE...]\n"
	       "Convert tracekit traces (stdin when no FILE or -) to Chrome Trace Event\n"
	       "JSON for Perfetto, chrome://tracing and other viewers.\n"
	       "\n"
	       "  -o, --output FILE    write FILE instead of standard output\n"
	       "  -z, --gzip           compress the output with gzip\n"
	       "      --from DURATION  only events that end at or after this time since\n"
	       "                       the trace start (e.g. 1.5s, 200ms)\n"
	       "      --to DURATION    only events that begin at or before this time\n"
	       "      --name REGEX     only events whose name matches REGEX (extended)\n"
	       "      --no-flows       no arrows from API calls to GPU work\n"
	       "      --no-counters    no counter tracks (memory, CPU use)\n"
	       "  -S, --buffer-size SIZE  memory for putting slices in order (default\n"
	       "                       64M; also --buffer)\n"
	       "  -h, --help           show this help\n"
	       "  -V, --version        show the version\n"
	       "\n"
	       "Exit status: 0 success, 1 an input could not be read completely (the\n"
	       "output is still valid JSON), 2 usage or output error.\n",
	       cmd_name());
}

/* ---- small formatting helpers --------------------------------------------- */

static void
sep(struct conv *cv, struct sbuf *o)
{
	if (!cv->first)
		sb_ch(o, ',');
	cv->first = 0;
	sb_ch(o, '\n');
}

/* A non-negative number with two decimals, trailing zeros trimmed. */
static void
sb_fixed2(struct sbuf *b, double v)
{
	if (!isfinite(v) || v < 0 || v > 9e15) {
		sb_dbl(b, v);
		return;
	}
	uint64_t c = (uint64_t)llround(v * 100);
	sb_u64(b, c / 100);
	unsigned f = (unsigned)(c % 100);
	if (f) {
		char d[3] = { '.', (char)('0' + f / 10), (char)('0' + f % 10) };
		sb_mem(b, d, d[2] == '0' ? 2 : 3);
	}
}

/* The "args" object of the event being written: opened, one key after
 * another, closed.  Our keys are remembered so that imported args do not
 * repeat them. */
struct args {
	struct sbuf *b;
	size_t opened_at;
	const char *keys[32];    /* our keys */
	unsigned nkeys;
	unsigned n;              /* all keys, imported ones too */
};

static void
args_open(struct args *a, struct sbuf *b)
{
	a->b = b;
	a->opened_at = b->len;
	a->n = a->nkeys = 0;
	sb_lit(b, "\"args\":{");
}

static void
key(struct args *a, const char *k)
{
	struct sbuf *b = a->b;
	if (a->n)
		sb_ch(b, ',');
	if (a->nkeys < sizeof(a->keys) / sizeof(a->keys[0]))
		a->keys[a->nkeys++] = k;
	a->n++;
	sb_ch(b, '"');
	sb_mem(b, k, strlen(k));
	sb_lit(b, "\":");
}

static void
key_u64(struct args *a, const char *k, uint64_t v)
{
	key(a, k);
	sb_u64(a->b, v);
}

static void
key_lit(struct args *a, const char *k, const char *plain)
{
	struct sbuf *b = a->b;
	key(a, k);
	sb_ch(b, '"');
	sb_mem(b, plain, strlen(plain));
	sb_ch(b, '"');
}

static void
key_dims(struct args *a, const char *k, const uint32_t v[3])
{
	struct sbuf *b = a->b;
	key(a, k);
	sb_ch(b, '[');
	sb_u64(b, v[0]);
	sb_ch(b, ',');
	sb_u64(b, v[1]);
	sb_ch(b, ',');
	sb_u64(b, v[2]);
	sb_ch(b, ']');
}

static int
key_seen(const struct args *a, const char *k)
{
	for (unsigned i = 0; i < a->nkeys; i++)
		if (strcmp(a->keys[i], k) == 0)
			return 1;
	return 0;
}

/* Imported extras (the event's `args` JSON object text) join ours;
 * they are parsed and written again by jansson, so bad text cannot break
 * the output. */
static void
imported_args(struct args *a, const struct tk_event *e)
{
	struct sbuf *b = a->b;
	if (!e->args || !e->args_len)
		return;
	size_t n;
	const char *text = cmd_utf8(e->args, e->args_len, &n);
	json_t *obj = json_loadb(text, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (!obj || !json_is_object(obj)) {
		if (!key_seen(a, "args")) {
			key(a, "args");
			chrome_escape(b, e->args, e->args_len);
		}
		json_decref(obj);
		return;
	}
	/* ours win: theirs of the same name are dropped; the rest are
	 * written as jansson writes the object, in their order, straight
	 * into the output (a dump of each value on its own cost an
	 * allocation each, a third of the time on a PyTorch trace) */
	const char *k;
	json_t *v;
	void *next;
	json_object_foreach_safe(obj, next, k, v) {
		if (key_seen(a, k))
			json_object_del(obj, k);
	}
	size_t nkeys = json_object_size(obj);
	if (nkeys == 0) {
		json_decref(obj);
		return;
	}
	size_t room = 2 * n + 64, w;
	for (;;) {
		if (b->cap - b->len < room)
			sb_grow(b, room);
		w = json_dumpb(obj, b->p + b->len, room, JSON_COMPACT); /* {...} */
		if (w == 0) { /* not expected of what jansson parsed */
			json_decref(obj);
			return;
		}
		if (w <= room)
			break;
		room = w;
	}
	json_decref(obj);
	/* the members without their braces, after ours */
	if (a->n) {
		b->p[b->len] = ',';
		b->len += w - 1;
	} else {
		memmove(b->p + b->len, b->p + b->len + 1, w - 2);
		b->len += w - 2;
	}
	a->n += (unsigned)nkeys;
}

/* Close "args"; with no key at all, take the opening back. */
static void
args_close(struct args *a)
{
	if (a->n)
		sb_ch(a->b, '}');
	else
		a->b->len = a->opened_at;
}

/* ---- per-scope lookups ------------------------------------------------------ */

static const char *
category_name(struct conv *cv, const struct tk_range_attrs *a)
{
	for (size_t i = 0; i < cv->ncats; i++)
		if (cv->cats[i].category == a->category &&
		    strcmp(cv->cats[i].domain, a->domain) == 0)
			return cv->cats[i].name;
	return NULL;
}

static void
add_category(struct conv *cv, const struct tk_category *c)
{
	struct tk_category *n = chrome_grow(cv->cats, &cv->capcats, cv->ncats + 1,
	                                    sizeof(*n));
	cv->cats = n;
	n[cv->ncats].domain = strdup(c->domain);
	n[cv->ncats].name = strdup(c->name);
	n[cv->ncats].category = c->category;
	if (!n[cv->ncats].domain || !n[cv->ncats].name)
		cmd_die(EXIT_USAGE, "out of memory");
	cv->ncats++;
}

static void
new_scope(struct conv *cv)
{
	cv->scope++;
	chrome_layout_scope(&cv->lay);
	chrome_strings_reset(&cv->str);
	if (cv->nname_ok)
		memset(cv->name_ok, 0, cv->nname_ok);
	for (size_t i = 0; i < cv->ncats; i++) {
		free((char *)cv->cats[i].domain);
		free((char *)cv->cats[i].name);
	}
	cv->ncats = 0;
}

static int
name_selected(struct conv *cv, const struct tk_event *e)
{
	if (!e->name_id)
		return regexec(&cv->opt.name_re, e->name, 0, NULL, 0) == 0;
	if (e->name_id >= cv->nname_ok)
		cv->name_ok = chrome_grow(cv->name_ok, &cv->nname_ok,
		                          (size_t)e->name_id + 1, 1);
	uint8_t *ok = &cv->name_ok[e->name_id];
	if (!*ok)
		*ok = regexec(&cv->opt.name_re, e->name, 0, NULL, 0) == 0 ? 1 : 2;
	return *ok == 1;
}

/* ---- metadata for the top-level object -------------------------------------- */

static json_t *
jstr(const char *s)
{
	size_t n;
	const char *ok = cmd_utf8(s, strlen(s), &n);
	return json_stringn(ok, n);
}

static void
add_meta(struct conv *cv, const struct tk_meta *m)
{
	json_t *v = jstr(m->value);
	/* the key as it is in the JSON: every lookup must use it */
	size_t n;
	const char *k = cmd_utf8(m->key, strlen(m->key), &n);
	char *key = strndup(k, n);
	if (!key)
		cmd_die(EXIT_USAGE, "out of memory");
	json_t *old = json_object_get(cv->meta, key);
	if (!old) {
		json_object_set_new(cv->meta, key, v);
		free(key);
		return;
	}
	/* merged traces repeat keys: keep each distinct value */
	if (json_equal(old, v)) {
		json_decref(v);
		free(key);
		return;
	}
	if (!json_is_array(old)) {
		json_t *arr = json_array();
		json_array_append(arr, old);
		json_object_set_new(cv->meta, key, arr);
		old = arr;
	}
	free(key);
	size_t i;
	json_t *x;
	json_array_foreach(old, i, x)
		if (json_equal(x, v)) {
			json_decref(v);
			return;
		}
	json_array_append_new(old, v);
}

static void
add_device(struct conv *cv, const struct tk_device *d)
{
	char uuid[40];
	for (int i = 0; i < 16; i++)
		snprintf(uuid + 2 * i, 3, "%02x", d->uuid[i]);
	json_array_append_new(cv->devices, json_pack("{s:I,s:o,s:I,s:I,s:I,s:I,s:s,s:o}",
		"id", (json_int_t)d->index, "name", jstr(d->name),
		"totalGlobalMem", (json_int_t)d->memory,
		"computeMajor", (json_int_t)d->cc_major,
		"computeMinor", (json_int_t)d->cc_minor,
		"numSms", (json_int_t)d->sm_count, "uuid", uuid, "host", jstr(d->host)));
}

/* ---- writing slices after their placement ----------------------------------- */

static void
emit_flow(void *ctx, uint64_t id, uint32_t at, int64_t ats, uint32_t gt,
          int64_t gts)
{
	struct conv *cv = ctx;
	struct sbuf *o = &cv->out.b;
	const struct chrome_track *a = &cv->lay.tracks[at], *g = &cv->lay.tracks[gt];
	sep(cv, o);
	sb_lit(o, "{\"ph\":\"s\",\"id\":");
	sb_u64(o, id);
	sb_lit(o, ",\"pid\":");
	sb_i64(o, cv->lay.lanes[a->lane].pid);
	sb_lit(o, ",\"tid\":");
	sb_i64(o, a->tid);
	sb_lit(o, ",\"ts\":");
	sb_us(o, ats - cv->base);
	sb_lit(o, ",\"cat\":\"ac2g\",\"name\":\"ac2g\"}");
	sep(cv, o);
	sb_lit(o, "{\"ph\":\"f\",\"id\":");
	sb_u64(o, id);
	sb_lit(o, ",\"pid\":");
	sb_i64(o, cv->lay.lanes[g->lane].pid);
	sb_lit(o, ",\"tid\":");
	sb_i64(o, g->tid);
	sb_lit(o, ",\"ts\":");
	sb_us(o, gts - cv->base);
	sb_lit(o, ",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}");
	cv->flows++;
}

static void
tid_ts(struct conv *cv, struct sbuf *o, const struct chrome_track *t,
       int64_t ts)
{
	sb_lit(o, "\"tid\":");
	sb_i64(o, t->tid);
	sb_lit(o, ",\"ts\":");
	sb_us(o, ts - cv->base);
}

/* The duration of a slice.  Exact decimals are what Perfetto reads (it
 * rounds ts * 1000 to integer ns), but JavaScript viewers (DevTools,
 * chrome://tracing) add ts + dur as doubles, and 0.1 + 0.2 > 0.3: a
 * child that ends with its parent, or a slice that begins when the one
 * before ends, would seem to overlap and be dropped.  So when the double
 * sum misses the double of the exact end, dur is written as the double
 * that makes it hit (still the same nanoseconds once rounded). */
static void
write_dur(struct sbuf *o, int64_t rel_ts, int64_t dur)
{
	double ts = (double)rel_ts / 1000, end = (double)(rel_ts + dur) / 1000;
	double d = (double)dur / 1000;
	if (ts + d == end) {
		sb_us(o, dur);
		return;
	}
	d = end - ts;
	for (int i = 0; i < 4 && ts + d != end; i++)
		d = nextafter(d, ts + d < end ? INFINITY : 0);
	if (ts + d != end || llround(d * 1000) != dur) {
		sb_us(o, dur);
		return;
	}
	sb_dbl_exact(o, d);
}

static void
write_slice(struct conv *cv, const struct chrome_entry *e, const char *text)
{
	struct sbuf *o = &cv->out.b;
	const char *head = text, *args = text + e->head_len;
	uint32_t t = chrome_layout_place(&cv->lay, e->ctrack, e->ts, e->end);
	if (!t) {
		/* every extra track is taken: an async slice needs no nesting */
		const struct chrome_track *tr = &cv->lay.tracks[e->ctrack];
		uint64_t id = ++cv->async_id;
		chrome_layout_announce(&cv->lay, o, e->ctrack, &cv->first);
		sep(cv, o);
		sb_lit(o, "{\"ph\":\"b\",");
		sb_mem(o, head, e->head_len);
		tid_ts(cv, o, tr, e->ts);
		sb_lit(o, ",\"id\":");
		sb_u64(o, id);
		if (e->args_len) {
			sb_ch(o, ',');
			sb_mem(o, args, e->args_len);
		}
		sb_lit(o, "}");
		sep(cv, o);
		sb_lit(o, "{\"ph\":\"e\",");
		sb_mem(o, head, e->head_len);
		tid_ts(cv, o, tr, e->end);
		sb_lit(o, ",\"id\":");
		sb_u64(o, id);
		sb_ch(o, '}');
		cv->async_fallback++;
		cv->events_written++;
		return;
	}
	const struct chrome_track *tr = &cv->lay.tracks[t];
	chrome_layout_announce(&cv->lay, o, t, &cv->first);
	sep(cv, o);
	sb_lit(o, "{\"ph\":\"X\",");
	sb_mem(o, head, e->head_len);
	tid_ts(cv, o, tr, e->ts);
	sb_lit(o, ",\"dur\":");
	write_dur(o, e->ts - cv->base, e->end - e->ts);
	if (e->args_len) {
		sb_ch(o, ',');
		sb_mem(o, args, e->args_len);
	}
	sb_ch(o, '}');
	cv->events_written++;
	if (cv->opt.flows && e->role != CF_NONE)
		chrome_flows_add(&cv->fl, e->role, e->scope, e->corr, t, e->ts);
}

/* An imported flow end binds to the slice that encloses it: on whichever
 * of its track and the track's extra tracks that slice went. */
static void
write_flow(struct conv *cv, const struct chrome_entry *e, const char *text)
{
	struct sbuf *o = &cv->out.b;
	uint32_t t = chrome_layout_enclosing(&cv->lay, e->ctrack, e->ts);
	chrome_layout_announce(&cv->lay, o, t, &cv->first);
	sep(cv, o);
	sb_lit(o, "{\"ph\":\"");
	sb_ch(o, e->role == TK_FLOW_START ? 's' : e->role == TK_FLOW_END ? 'f' : 't');
	sb_lit(o, "\",\"id\":");
	sb_u64(o, e->corr);
	sb_ch(o, ',');
	sb_mem(o, text, e->head_len);
	tid_ts(cv, o, &cv->lay.tracks[t], e->ts);
	if (e->role == TK_FLOW_END)
		sb_lit(o, ",\"bp\":\"e\"");
	sb_ch(o, '}');
	cv->flow_events++;
	cv->events_written++;
}

/* Write the earliest waiting entry if it begins before `bound`; 0 when
 * there is none. */
static int
release_one(struct conv *cv, int64_t bound)
{
	struct chrome_entry e;
	const char *text;
	if (!chrome_reorder_pop(&cv->ro, bound, &e, &text))
		return 0;
	if (e.cls == CE_SLICE)
		write_slice(cv, &e, text);
	else
		write_flow(cv, &e, text);
	chrome_reorder_done(&cv->ro, &e);
	chrome_out_maybe_flush(&cv->out);
	return 1;
}

static void
release(struct conv *cv, int64_t bound)
{
	while (release_one(cv, bound))
		;
}

/* ---- events ------------------------------------------------------------------- */

/* "name":..,"cat":..,"pid":.., (with the trailing comma) into cv->ev. */
static void
head(struct conv *cv, const struct tk_event *e, const char *cat_plain,
     uint32_t cat_id, const char *cat, uint32_t lane, const char *fallback_name)
{
	struct sbuf *b = &cv->ev;
	sb_lit(b, "\"name\":");
	if (*e->name || !fallback_name)
		chrome_str(&cv->str, b, e->name_id, e->name);
	else
		chrome_escape(b, fallback_name, strlen(fallback_name));
	sb_lit(b, ",\"cat\":");
	if (cat_plain) {
		sb_ch(b, '"');
		sb_mem(b, cat_plain, strlen(cat_plain));
		sb_ch(b, '"');
	} else {
		chrome_str(&cv->str, b, cat_id, cat);
	}
	sb_lit(b, ",\"pid\":");
	sb_i64(b, cv->lay.lanes[lane].pid);
	sb_ch(b, ',');
}

static void
range_args(struct conv *cv, struct args *a, const struct tk_range_attrs *ra,
	   int with_id)
{
	if (ra->category) {
		key_u64(a, "category", ra->category);
		const char *n = category_name(cv, ra);
		if (n) {
			key(a, "category name");
			chrome_escape(a->b, n, strlen(n));
		}
	}
	if (ra->color) {
		char c[8];
		snprintf(c, sizeof(c), "#%06x", ra->color & 0xffffff);
		key_lit(a, "color", c);
	}
	switch (ra->payload_type) {
	case TK_PAYLOAD_UINT: key_u64(a, "payload", ra->payload.u); break;
	case TK_PAYLOAD_INT: key(a, "payload"); sb_i64(a->b, ra->payload.i); break;
	case TK_PAYLOAD_DOUBLE: key(a, "payload"); sb_dbl(a->b, ra->payload.d); break;
	}
	if (with_id && ra->id)
		key_u64(a, "id", ra->id);
}

static const struct tk_device *
stream_device(const struct tk_reader *r, const struct tk_event *e)
{
	if (e->trk->type != TK_TRACK_STREAM)
		return NULL;
	return tk_reader_device(r, e->trk->u.stream.device);
}

static void
stream_args(struct args *a, const struct tk_reader *r, const struct tk_event *e)
{
	if (e->trk->type != TK_TRACK_STREAM)
		return;
	const struct tk_device *d = stream_device(r, e);
	if (d)
		key_u64(a, "device", d->index);
	key_u64(a, "context", e->trk->u.stream.context);
	key_u64(a, "stream", e->trk->u.stream.stream);
}

/* The correlation id, and the same as "External id" unless the event
 * brought its own: HTA and TensorBoard link an API call to its GPU work
 * by it, and trace-import does not store it when it equals the
 * correlation id (older PyTorch profilers). */
static void
correlation_args(struct args *a, const struct tk_event *e, uint64_t corr)
{
	key_u64(a, "correlation", corr);
	if (corr && !(e->args && memmem(e->args, e->args_len, "\"External id\"", 13)))
		key_u64(a, "External id", corr);
}

static void
bandwidth(struct args *a, uint64_t bytes, int64_t dur)
{
	if (dur > 0) {
		key(a, "memory bandwidth (GB/s)");
		sb_fixed2(a->b, (double)bytes / (double)dur);  /* bytes/ns = GB/s */
	}
}

static void
kernel_args(struct conv *cv, struct args *a, const struct tk_reader *r,
	    const struct tk_event *e)
{
	const struct tk_kernel_attrs *k = &e->u.kernel;
	stream_args(a, r, e);
	correlation_args(a, e, k->correlation);
	key_u64(a, "registers per thread", k->registers);
	key_u64(a, "shared memory", (uint64_t)k->static_smem + k->dynamic_smem);
	key_u64(a, "static shared memory", k->static_smem);
	key_u64(a, "dynamic shared memory", k->dynamic_smem);
	const struct tk_device *d = stream_device(r, e);
	if (d && d->sm_count) {
		double blocks = (double)k->grid[0] * k->grid[1] * k->grid[2];
		double threads = (double)k->block[0] * k->block[1] * k->block[2];
		key(a, "blocks per SM");
		sb_fixed2(a->b, blocks / d->sm_count);
		key(a, "warps per SM");
		sb_fixed2(a->b, blocks * ceil(threads / 32) / d->sm_count);
	}
	key_dims(a, "grid", k->grid);
	key_dims(a, "block", k->block);
	if (k->cluster[0] || k->cluster[1] || k->cluster[2])
		key_dims(a, "cluster", k->cluster);
	if (k->graph_id) {
		key_u64(a, "graph id", k->graph_id);
		key_u64(a, "graph node id", k->graph_node);
	}
	if (*k->mangled) {
		key(a, "mangled name");
		chrome_str(&cv->str, a->b, k->mangled_id, k->mangled);
	}
}

static void
exit_args(struct args *a, unsigned how, int32_t code, uint32_t sig)
{
	if (how == TK_EXIT_NORMAL) {
		key(a, "exit code");
		sb_i64(a->b, code);
	} else if (how == TK_EXIT_SIGNAL) {
		key_u64(a, "signal", sig);
	} else {
		key_lit(a, "exit", "unknown");
	}
}

/* Nanoseconds as milliseconds with microsecond precision. */
static void
key_ms(struct args *a, const char *k, int64_t ns)
{
	key(a, k);
	sb_us(a->b, ns / 1000);
}

/* Queue a complete event for placement.  cv->ev holds head then args. */
static void
queue(struct conv *cv, const struct tk_event *e, uint32_t ctrack,
      size_t head_len, int role, uint64_t corr, int cls)
{
	struct chrome_entry en = { 0 };
	en.ts = e->ts;
	en.end = e->ts + e->dur;
	en.ctrack = ctrack;
	en.scope = cv->scope;
	en.head_len = (uint32_t)head_len;
	en.args_len = (uint32_t)(cv->ev.len - head_len);
	en.cls = (uint8_t)cls;
	en.role = (uint8_t)role;
	en.corr = corr;
	chrome_reorder_push(&cv->ro, &en, cv->ev.p, cv->ev.len);
}

/* An API call's category: "cuda_" and the library's name of its domain
 * ("cuda_runtime", "cuda_driver"), "cuda_api" for any other domain. */
static const char *
api_category(char buf[16], unsigned domain)
{
	if (domain != TK_API_RUNTIME && domain != TK_API_DRIVER)
		return "cuda_api";
	const char *d = tk_api_domain_name(domain);
	size_t n = strlen(d);
	if (n > 10)
		return "cuda_api";
	memcpy(buf, "cuda_", 5);
	memcpy(buf + 5, d, n + 1);
	return buf;
}

/* How a complete event is named and filed: its category (plain text, or
 * a string of the trace by id), the name for an event that has none,
 * and its end of a flow arrow. */
struct slice_head {
	const char *cat;         /* plain */
	uint32_t cat_id;         /* or a string of the trace */
	const char *cat_text;
	const char *fallback;
	int role;                /* enum chrome_flow_role */
	char buf[16];
};

static void
slice_head(struct slice_head *h, const struct tk_event *e)
{
	switch (e->kind) {
	case TK_RANGE:
		if (*e->u.range.domain) {
			h->cat_id = e->u.range.domain_id;
			h->cat_text = e->u.range.domain;
		} else {
			h->cat = "nvtx";
		}
		break;
	case TK_API:
		h->cat = api_category(h->buf, e->u.api.domain);
		h->role = CF_API;
		break;
	case TK_KERNEL: h->cat = "kernel"; h->role = CF_GPU; break;
	case TK_MEMCPY: h->cat = "gpu_memcpy"; h->role = CF_GPU; break;
	case TK_MEMSET: h->cat = "gpu_memset"; h->role = CF_GPU; break;
	case TK_SYNC: h->cat = "cuda_sync"; break;
	case TK_OVERHEAD: h->cat = "overhead"; h->fallback = "profiler overhead"; break;
	case TK_PROCESS: h->cat = "process"; h->fallback = "process"; break;
	case TK_RUN: h->cat = "run"; h->fallback = "run"; break;
	}
}

static void
key_async(struct args *a, uint32_t flags)
{
	key(a, "async");
	if (flags & TK_FLAG_ASYNC)
		sb_lit(a->b, "true");
	else
		sb_lit(a->b, "false");
}

static void
memcpy_args(struct args *a, const struct tk_reader *r, const struct tk_event *e)
{
	const struct tk_memcpy_attrs *c = &e->u.memcpy;
	stream_args(a, r, e);
	correlation_args(a, e, c->correlation);
	key_u64(a, "bytes", c->bytes);
	bandwidth(a, c->bytes, e->dur);
	key_lit(a, "copy kind", tk_copy_kind_name(c->copy_kind));
	key_lit(a, "src kind", tk_mem_kind_name(c->src_kind));
	key_lit(a, "dst kind", tk_mem_kind_name(c->dst_kind));
	if (c->copy_kind == TK_COPY_PTOP) {
		key_u64(a, "src device", c->src_device);
		key_u64(a, "dst device", c->dst_device);
	}
	key_async(a, c->flags);
}

static void
process_args(struct args *a, const struct tk_process_attrs *p)
{
	exit_args(a, p->exit, p->exit_code, p->signal);
	key_ms(a, "user CPU (ms)", p->utime);
	key_ms(a, "system CPU (ms)", p->stime);
	key_u64(a, "max RSS (bytes)", p->max_rss);
	key_u64(a, "minor faults", p->minflt);
	key_u64(a, "major faults", p->majflt);
	key_u64(a, "voluntary context switches", p->nvcsw);
	key_u64(a, "involuntary context switches", p->nivcsw);
}

/* The args of a complete event, by kind. */
static void
slice_args(struct conv *cv, struct args *a, const struct tk_reader *r,
	   const struct tk_event *e)
{
	switch (e->kind) {
	case TK_RANGE:
		range_args(cv, a, &e->u.range, 0);
		break;
	case TK_API:
		correlation_args(a, e, e->u.api.correlation);
		if (e->u.api.cbid)
			key_u64(a, "cbid", e->u.api.cbid);
		if (e->u.api.result) {
			key(a, "result");
			sb_i64(a->b, e->u.api.result);
		}
		break;
	case TK_KERNEL:
		kernel_args(cv, a, r, e);
		break;
	case TK_MEMCPY:
		memcpy_args(a, r, e);
		break;
	case TK_MEMSET: {
		const struct tk_memset_attrs *s = &e->u.memset;
		stream_args(a, r, e);
		correlation_args(a, e, s->correlation);
		key_u64(a, "bytes", s->bytes);
		bandwidth(a, s->bytes, e->dur);
		key_u64(a, "value", s->value);
		key_lit(a, "memory kind", tk_mem_kind_name(s->mem_kind));
		key_async(a, s->flags);
		break;
	}
	case TK_SYNC:
		key_lit(a, "sync type", tk_sync_type_name(e->u.sync.type));
		if (e->u.sync.correlation)
			correlation_args(a, e, e->u.sync.correlation);
		break;
	case TK_OVERHEAD:
		key_u64(a, "overhead kind", e->u.overhead.type);
		break;
	case TK_PROCESS:
		process_args(a, &e->u.process);
		break;
	case TK_RUN:
		key_u64(a, "run", e->u.run.index);
		exit_args(a, e->u.run.exit, e->u.run.exit_code, e->u.run.signal);
		break;
	}
}

/* A complete event: head, args by kind, then the queue.  An API call
 * and the GPU work it started are the ends of a flow arrow, joined by
 * their correlation id. */
static void
slice(struct conv *cv, const struct tk_reader *r, const struct tk_event *e,
      const struct chrome_tkmap *m)
{
	struct sbuf *b = &cv->ev;
	struct slice_head h = { .role = CF_NONE };
	slice_head(&h, e);
	uint64_t corr = tk_event_correlation(e);
	if (!corr)
		h.role = CF_NONE;
	b->len = 0;
	head(cv, e, h.cat, h.cat_id, h.cat_text, m->lane, h.fallback);
	size_t head_len = b->len;
	struct args args;
	args_open(&args, b);
	slice_args(cv, &args, r, e);
	imported_args(&args, e);
	args_close(&args);
	queue(cv, e, m->ctrack, head_len, h.role, corr, CE_SLICE);
}

/* Instants: marks, memory operations, dropped-event notices. */
static void
instant(struct conv *cv, const struct tk_event *e, const struct chrome_tkmap *m)
{
	struct sbuf *o = &cv->out.b;
	const struct chrome_track *t = &cv->lay.tracks[m->ctrack];
	chrome_layout_announce(&cv->lay, o, m->ctrack, &cv->first);
	sep(cv, o);
	char scope = 't';
	int global = cmd_mark_is_global(e);
	if (e->kind == TK_DROPPED || global)
		scope = 'g';  /* lost data shows across the whole timeline */
	else if (t->kind == CT_PROCESS)
		scope = 'p';
	sb_lit(o, "{\"ph\":\"i\",\"s\":\"");
	sb_ch(o, scope);
	sb_lit(o, "\",");
	cv->ev.len = 0;
	switch (e->kind) {
	case TK_MARK:
		if (*e->u.range.domain)
			head(cv, e, NULL, e->u.range.domain_id, e->u.range.domain, t->lane, NULL);
		else
			head(cv, e, "nvtx", 0, NULL, t->lane, NULL);
		break;
	case TK_MEMORY:
		head(cv, e, "cuda_memory", 0, NULL, t->lane,
		     e->u.memory.op == TK_MEM_FREE ? "free" : "alloc");
		break;
	default:
		head(cv, e, "dropped", 0, NULL, t->lane, "dropped events");
		break;
	}
	sb_mem(o, cv->ev.p, cv->ev.len);
	tid_ts(cv, o, t, e->ts);
	sb_ch(o, ',');
	struct args args;
	args_open(&args, o);
	switch (e->kind) {
	case TK_MARK:
		range_args(cv, &args, &e->u.range, 0);
		/* the scope says it: not an argument too */
		if (global && args.nkeys < sizeof(args.keys) / sizeof(args.keys[0]))
			args.keys[args.nkeys++] = "chrome.s";
		break;
	case TK_MEMORY: {
		const struct tk_memory_attrs *a = &e->u.memory;
		char addr[24];
		snprintf(addr, sizeof(addr), "0x%" PRIx64, a->address);
		key_lit(&args, "operation", a->op == TK_MEM_FREE ? "free" : "alloc");
		key_u64(&args, "bytes", a->bytes);
		key_lit(&args, "address", addr);
		key_lit(&args, "memory kind", tk_mem_kind_name(a->mem_kind));
		if (a->correlation)
			key_u64(&args, "correlation", a->correlation);
		break;
	}
	default:
		key_u64(&args, "count", e->u.dropped.count);
		key(&args, "reason");
		chrome_str(&cv->str, o, e->u.dropped.reason_id, e->u.dropped.reason);
		break;
	}
	imported_args(&args, e);
	args_close(&args);
	if (o->p[o->len - 1] == ',')
		o->len--;
	sb_ch(o, '}');
	cv->events_written++;
}

/* Start/end ranges need not nest: async b/e pairs, matched by a fresh id. */
static void
async_range(struct conv *cv, const struct tk_reader *r,
	    const struct tk_event *e, const struct chrome_tkmap *m)
{
	struct sbuf *o = &cv->out.b;
	const struct tk_range_attrs *a = &e->u.range;
	uint32_t end_ctrack = m->ctrack;
	if (a->end_track && a->end_track != e->track) {
		const struct tk_track *et = tk_reader_track(r, a->end_track);
		if (et) {
			const struct chrome_tkmap *em = chrome_layout_map(&cv->lay, r, et);
			if (em->ctrack && em->lane == m->lane)
				end_ctrack = em->ctrack;
		}
	}
	chrome_layout_announce(&cv->lay, o, m->ctrack, &cv->first);
	chrome_layout_announce(&cv->lay, o, end_ctrack, &cv->first);
	cv->ev.len = 0;
	if (*a->domain)
		head(cv, e, NULL, a->domain_id, a->domain, m->lane, NULL);
	else
		head(cv, e, "nvtx", 0, NULL, m->lane, NULL);
	uint64_t id = ++cv->async_id;
	sep(cv, o);
	sb_lit(o, "{\"ph\":\"b\",");
	sb_mem(o, cv->ev.p, cv->ev.len);
	tid_ts(cv, o, &cv->lay.tracks[m->ctrack], e->ts);
	sb_lit(o, ",\"id\":");
	sb_u64(o, id);
	sb_ch(o, ',');
	struct args args;
	args_open(&args, o);
	range_args(cv, &args, a, 1);
	imported_args(&args, e);
	args_close(&args);
	if (o->p[o->len - 1] == ',')
		o->len--;
	sb_ch(o, '}');
	sep(cv, o);
	sb_lit(o, "{\"ph\":\"e\",");
	sb_mem(o, cv->ev.p, cv->ev.len);
	tid_ts(cv, o, &cv->lay.tracks[end_ctrack], e->ts + e->dur);
	sb_lit(o, ",\"id\":");
	sb_u64(o, id);
	sb_ch(o, '}');
	cv->events_written++;
}

static void
counter(struct conv *cv, const struct tk_event *e, const struct chrome_tkmap *m)
{
	struct sbuf *o = &cv->out.b;
	if (!isfinite(e->u.counter.value)) {
		cv->nonfinite++;
		return;
	}
	/* a lane may hold only counters: it still needs its name */
	chrome_layout_announce_lane(&cv->lay, o, m->lane, &cv->first);
	const struct chrome_lane *ln = &cv->lay.lanes[m->lane];
	sep(cv, o);
	sb_lit(o, "{\"ph\":\"C\",\"name\":");
	if (m->counter_name)
		sb_mem(o, m->counter_name, strlen(m->counter_name));
	else
		chrome_str(&cv->str, o, e->name_id, e->name);
	sb_lit(o, ",\"pid\":");
	sb_i64(o, ln->pid);
	sb_lit(o, ",\"tid\":0,\"ts\":");
	sb_us(o, e->ts - cv->base);
	sb_lit(o, ",\"args\":{");
	if (m->counter_key)
		sb_mem(o, m->counter_key, strlen(m->counter_key));
	else
		sb_lit(o, "\"value\"");
	sb_ch(o, ':');
	sb_dbl(o, e->u.counter.value);
	sb_lit(o, "}}");
	cv->events_written++;
}

static void
flow(struct conv *cv, const struct tk_event *e, const struct chrome_tkmap *m)
{
	struct sbuf *b = &cv->ev;
	const struct tk_flow_attrs *f = &e->u.flow;
	b->len = 0;
	sb_lit(b, "\"name\":");
	if (*e->name)
		chrome_str(&cv->str, b, e->name_id, e->name);
	else if (*f->category)
		chrome_str(&cv->str, b, f->category_id, f->category);
	else
		sb_lit(b, "\"flow\"");
	sb_lit(b, ",\"cat\":");
	if (*f->category)
		chrome_str(&cv->str, b, f->category_id, f->category);
	else
		sb_lit(b, "\"flow\"");
	sb_lit(b, ",\"pid\":");
	sb_i64(b, cv->lay.lanes[m->lane].pid);
	sb_ch(b, ',');
	/* ids of different traces must not meet: the scope goes above bit
	 * 40, below bit 52 (arrows made here start at 2^52, flows.c) */
	uint64_t id = ((uint64_t)((cv->scope - 1) & 0xfff) << 40) |
	              (f->id & ((1ull << 40) - 1));
	struct tk_event z = *e;
	z.dur = 0;
	queue(cv, &z, m->ctrack, b->len, (int)f->phase, id, CE_FLOW);
}

static void
set_base(struct conv *cv, const struct tk_reader *r)
{
	int64_t t = tk_reader_chunk(r)->t_min;
	if (cv->earliest_start && cv->earliest_start < t)
		t = cv->earliest_start;
	cv->base = t;
	cv->have_base = 1;
}

static void
convert_event(struct conv *cv, const struct tk_reader *r,
	      const struct tk_event *e)
{
	if (!cv->have_base)
		set_base(cv, r);
	cv->events_read++;
	/* times that cannot be shown relative to the start (a damaged or
	 * hostile file can hold any int64) are counted, not written */
	int64_t end, rel, rel_end;
	if (__builtin_add_overflow(e->ts, e->dur, &end) ||
	    __builtin_sub_overflow(e->ts, cv->base, &rel) ||
	    __builtin_sub_overflow(end, cv->base, &rel_end) ||
	    rel < -(INT64_C(1) << 62) || rel_end > (INT64_C(1) << 62)) {
		cv->bad_times++;
		goto skip;
	}
	if (e->kind == TK_DROPPED)
		cv->dropped += e->u.dropped.count;
	if (e->kind == TK_COUNTER && !cv->opt.counters)
		goto skip;
	if (e->kind == TK_FLOW && !cv->opt.flows)
		goto skip;
	if (cv->opt.has_name && e->kind != TK_COUNTER && e->kind != TK_DROPPED &&
	    !name_selected(cv, e))
		goto skip;
	if (cv->opt.has_from && rel_end < cv->opt.from)
		goto skip;
	if (cv->opt.to >= 0 && rel > cv->opt.to)
		goto skip;
	const struct chrome_tkmap *m = chrome_layout_map(&cv->lay, r, e->trk);
	switch (e->kind) {
	case TK_RANGE:
	case TK_API:
	case TK_KERNEL:
	case TK_MEMCPY:
	case TK_MEMSET:
	case TK_SYNC:
	case TK_OVERHEAD:
	case TK_PROCESS:
	case TK_RUN:
		slice(cv, r, e, m);
		break;
	case TK_ASYNC_RANGE:
		async_range(cv, r, e, m);
		break;
	case TK_MARK:
	case TK_MEMORY:
	case TK_DROPPED:
		instant(cv, e, m);
		break;
	case TK_COUNTER:
		counter(cv, e, m);
		break;
	case TK_FLOW:
		flow(cv, e, m);
		break;
	default:
		goto skip;
	}
	chrome_out_maybe_flush(&cv->out);
	return;
skip:
	cv->filtered++;
}

/* ---- inputs --------------------------------------------------------------------- */

static int
convert_file(struct conv *cv, const char *path)
{
	struct autoread in;
	int status;
	struct tk_reader *r = autoread_open_reader(&in, path, &status);
	json_array_append_new(cv->inputs, jstr(cmd_display_path(path)));
	if (!r) {
		json_array_append_new(cv->errors, jstr(cmd_display_path(path)));
		return status;
	}
	new_scope(cv);
	struct tk_record rec;
	uint64_t chunk = UINT64_MAX;
	int64_t watermark = INT64_MIN;
	int rc;
	while ((rc = tk_reader_next(r, &rec)) == TK_OK) {
		const struct tk_chunk_info *ci = tk_reader_chunk(r);
		if (ci->offset != chunk) {
			/* the last chunk is all read: what begins before its
			 * watermark has everything it will ever have */
			release(cv, watermark);
			chunk = ci->offset;
			watermark = ci->watermark;
		}
		switch (rec.type) {
		case TK_REC_EVENT:
			convert_event(cv, r, rec.u.event);
			break;
		case TK_REC_SCOPE:
			release(cv, INT64_MAX);
			new_scope(cv);
			watermark = INT64_MIN;
			break;
		case TK_REC_TRACK: {
			const struct tk_track *t = rec.u.track;
			chrome_layout_redefine(&cv->lay, t->id);
			if (t->type == TK_TRACK_PROCESS && t->u.process.start > 0 &&
			    (!cv->earliest_start || t->u.process.start < cv->earliest_start))
				cv->earliest_start = t->u.process.start;
			break;
		}
		case TK_REC_DEVICE:
			add_device(cv, rec.u.device);
			break;
		case TK_REC_META:
			add_meta(cv, rec.u.meta);
			break;
		case TK_REC_CATEGORY:
			add_category(cv, rec.u.category);
			break;
		}
		/* no watermark lets them out in time: the earliest go now */
		while (chrome_reorder_full(&cv->ro) && release_one(cv, INT64_MAX))
			cv->released_early++;
	}
	release(cv, INT64_MAX);
	if (rc != TK_EOF) {
		cmd_reader_error(path, r);
		char msg[512];
		snprintf(msg, sizeof(msg), "%s: %s", cmd_display_path(path),
		         tk_reader_error(r));
		json_array_append_new(cv->errors, jstr(msg));
		status = EXIT_BADINPUT;
	}
	tk_reader_free(r);
	autoread_close(&in);
	return status;
}

/* ---- the top-level object ---------------------------------------------------------- */

static void
finish_output(struct conv *cv)
{
	struct sbuf *o = &cv->out.b;
	chrome_flows_finish(&cv->fl);
	sb_lit(o, "\n]");
	if (cv->have_base) {
		sb_lit(o, ",\n\"baseTimeNanoseconds\":");
		sb_i64(o, cv->base);
	}
	json_t *tk = json_object();
	json_object_set_new(tk, "version", json_string(tk_version()));
	if (cv->have_base) {
		char ns[24], utc[64];
		snprintf(ns, sizeof(ns), "%" PRId64, cv->base);
		time_t sec = (time_t)(cv->base / 1000000000);
		int64_t frac = cv->base % 1000000000;
		if (frac < 0) {
			sec--;
			frac += 1000000000;
		}
		struct tm tm;
		size_t n = gmtime_r(&sec, &tm) ? strftime(utc, 40, "%Y-%m-%dT%H:%M:%S", &tm) : 0;
		snprintf(utc + n, sizeof(utc) - n, ".%09" PRId64 "Z", frac);
		json_object_set_new(tk, "trace_start_ns", json_string(ns));
		json_object_set_new(tk, "trace_start_utc", json_string(utc));
	} else {
		json_object_set_new(tk, "trace_start_ns", json_null());
	}
	json_object_set_new(tk, "time_unit", json_string(
		"ts and dur are microseconds since trace_start_ns (baseTimeNanoseconds)"));
	json_object_set_new(tk, "inputs", cv->inputs);
	json_object_set_new(tk, "events_read", json_integer((json_int_t)cv->events_read));
	json_object_set_new(tk, "events_written", json_integer((json_int_t)cv->events_written));
	json_object_set_new(tk, "events_filtered_out", json_integer((json_int_t)cv->filtered));
	json_object_set_new(tk, "flows", json_integer((json_int_t)cv->flows));
	json_object_set_new(tk, "gpu_work_without_launch_call",
	                    json_integer((json_int_t)cv->fl.unmatched_gpu));
	json_object_set_new(tk, "slices_moved_to_overlap_tracks",
	                    json_integer((json_int_t)cv->lay.moved));
	json_object_set_new(tk, "overlap_tracks", json_integer((json_int_t)cv->lay.overflow_tracks));
	json_object_set_new(tk, "slices_written_async",
	                    json_integer((json_int_t)cv->async_fallback));
	json_object_set_new(tk, "slices_released_early",
	                    json_integer((json_int_t)cv->released_early));
	json_object_set_new(tk, "dropped_by_recorder", json_integer((json_int_t)cv->dropped));
	if (cv->nonfinite)
		json_object_set_new(tk, "nonfinite_counter_samples_skipped",
		                    json_integer((json_int_t)cv->nonfinite));
	if (cv->bad_times)
		json_object_set_new(tk, "events_with_impossible_times_skipped",
		                    json_integer((json_int_t)cv->bad_times));
	json_object_set_new(tk, "errors", cv->errors);
	cv->inputs = cv->errors = NULL;
	json_object_set_new(cv->meta, "tracekit", tk);

	char *dev = json_dumps(cv->devices, JSON_COMPACT);
	char *other = json_dumps(cv->meta, JSON_COMPACT);
	if (!dev || !other)
		cmd_die(EXIT_USAGE, "out of memory");
	sb_lit(o, ",\n\"deviceProperties\":");
	sb_mem(o, dev, strlen(dev));
	sb_lit(o, ",\n\"otherData\":");
	sb_mem(o, other, strlen(other));
	sb_lit(o, "}\n");
	free(dev);
	free(other);
}

/* ---- main ---------------------------------------------------------------------------- */

static void
cleanup(struct conv *cv)
{
	chrome_reorder_free(&cv->ro);
	chrome_flows_free(&cv->fl);
	chrome_layout_free(&cv->lay);
	chrome_strings_free(&cv->str);
	sb_free(&cv->ev);
	free(cv->name_ok);
	for (size_t i = 0; i < cv->ncats; i++) {
		free((char *)cv->cats[i].domain);
		free((char *)cv->cats[i].name);
	}
	free(cv->cats);
	json_decref(cv->meta);
	json_decref(cv->devices);
	json_decref(cv->inputs);
	json_decref(cv->errors);
	if (cv->opt.has_name)
		regfree(&cv->opt.name_re);
}

int
main(int argc, char **argv)
{
	enum { OPT_FROM = 256, OPT_TO, OPT_NAME, OPT_NO_FLOWS, OPT_NO_COUNTERS,
	       OPT_BUFFER };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "gzip", no_argument, NULL, 'z' },
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
	cmd_init("trace-to-chrome");
	struct conv conv = { 0 }, *cv = &conv;
	struct options *opt = &cv->opt;
	opt->to = -1;
	opt->flows = opt->counters = 1;
	opt->buffer = 64u << 20;
	int c;
	while ((c = getopt_long(argc, argv, ":o:zS:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': opt->output = optarg; break;
		case 'z': opt->gzip = 1; break;
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
		case 'h': usage(); return cmd_finish(0);
		case 'V': cmd_version();
		default: cmd_bad_option(c, argv);
		}
	}
	if (opt->has_from && opt->to >= 0 && opt->to < opt->from)
		cmd_usage_error("--to must not be before --from");
	if (opt->gzip && !opt->output && isatty(STDOUT_FILENO))
		cmd_usage_error("refusing to write compressed data to a terminal (use -o FILE)");

	cmd_no_input_tty(argc - optind, "[OPTIONS] [FILE...]");
	static char *stdin_only[] = { "-", NULL };
	char **files = optind < argc ? argv + optind : stdin_only;
	int nfiles = optind < argc ? argc - optind : 1;

	cv->first = 1;
	cv->meta = json_object();
	cv->devices = json_array();
	cv->inputs = json_array();
	cv->errors = json_array();
	chrome_layout_init(&cv->lay);
	chrome_reorder_init(&cv->ro, opt->buffer);
	chrome_flows_init(&cv->fl, 1u << 18, emit_flow, cv);
	chrome_out_open(&cv->out, opt->output, opt->gzip);

	sb_lit(&cv->out.b, "{\"traceEvents\":[");
	int status = 0;
	for (int i = 0; i < nfiles; i++)
		status |= convert_file(cv, files[i]);
	finish_output(cv);
	chrome_out_close(&cv->out);
	cleanup(cv);
	return cmd_finish(status);
}
