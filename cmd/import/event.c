/* SPDX-License-Identifier: MIT */
/*
 * Chrome Trace Event phases to tracekit events (the format's phases:
 * anchors §6; what each becomes: trace-import(1)).
 *
 *   X, B+E        range (or a GPU kind: kineto.c)
 *   i, I, R       mark; s:"p" on the process track
 *   C             one counter sample per numeric arg
 *   b+e, S+F      async_range; n, T, p are marks with the async id
 *   s, t, f       flow ends; correlation flows (ac2g) are not stored:
 *                 the ends carry the same correlation id
 *   M             names and labels of processes and threads
 *   anything else a mark with its phase in args
 *
 * ts and dur are microseconds whatever displayTimeUnit says; they are
 * read from their digits into integer nanoseconds.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "common/util.h"
#include "support.h"

/* An open B slice or async range, or an end held until the input is
 * read: 'E', 'e' or 'F' that came before its begin in the file (or
 * before a begin of its key that starts later than it). */
struct imp_open {
	struct imp_open *next;     /* hash chain; the newest comes first */
	char kind;                 /* 'B', 'b' (nestable async), 'S' (legacy);
	                              held ends: 'E', 'e', 'F' */
	uint64_t hash;
	char *key;                 /* async: category, scope and id */
	uint32_t track;            /* B and E: their track index; a held e or
	                              F: the end's own track */
	json_t *ev;                /* the event, kept alive */
	struct imp_x x;            /* its fields (point into ev) */
	uint64_t id;               /* async id */
	uint64_t offset;
	uint64_t seq;              /* its place in the input: ties of ts */
};

void
imp_init(struct imp *im, const char *name, struct imp_tracks *t,
         struct imp_sort *s, struct imp_summary *sum)
{
	memset(im, 0, sizeof(*im));
	im->name = name;
	im->tracks = t;
	im->sort = s;
	im->sum = sum;
	im->t_min = INT64_MAX;
	im->t_max = INT64_MIN;
	im->meta = json_object();
	im->categories = json_array();
	im->open_cap = 256;
	im->open = calloc(im->open_cap, sizeof(*im->open));
	if (!im->meta || !im->categories || !im->open)
		cmd_die(EXIT_USAGE, "out of memory");
}

static void
free_open(struct imp_open *o)
{
	json_decref(o->ev);
	free(o->key);
	free(o);
}

void
imp_free(struct imp *im)
{
	for (size_t i = 0; i < im->open_cap; i++)
		while (im->open && im->open[i]) {
			struct imp_open *o = im->open[i];
			im->open[i] = o->next;
			free_open(o);
		}
	free(im->open);
	free(im->args);
	json_decref(im->meta);
	json_decref(im->categories);
	imp_parser_free(&im->parse);
	memset(im, 0, sizeof(*im));
}

void
imp_event_warn(struct imp *im, const char *fmt, ...)
{
	im->warnings++;
	if (im->warnings > IMP_MAX_WARNINGS || im->quiet)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cmd_warn("%s: event at byte %" PRIu64 ": %s", im->name, im->offset, msg);
}

/* ---- args ------------------------------------------------------------------- */

/* Fewest significant digits (15 to 17) that read back every real in v
 * unchanged: 0.3 stays 0.3 instead of 0.29999999999999999. */
static int
real_digits(json_t *v, int have)
{
	if (have >= 17)
		return 17;
	if (json_is_real(v)) {
		double d = json_real_value(v);
		char b[40];
		for (int p = have; p < 17; p++) {
			snprintf(b, sizeof(b), "%.*g", p, d);
			if (strtod(b, NULL) == d)
				return p;
		}
		return 17;
	}
	if (json_is_object(v)) {
		const char *k;
		json_t *x;
		json_object_foreach(v, k, x)
			have = real_digits(x, have);
	} else if (json_is_array(v)) {
		size_t i;
		json_t *x;
		json_array_foreach(v, i, x)
			have = real_digits(x, have);
	}
	return have;
}

char *
imp_args_buf(struct imp *im, size_t n)
{
	char *p = tkp_grow(im->args, &im->args_cap, n, 1);
	if (!p)
		cmd_die(EXIT_USAGE, "out of memory");
	return im->args = p;
}

/* JSON text validated by jansson, without the white space between its
 * tokens: strings are copied byte for byte, numbers as written. */
size_t
imp_squeeze(char *dst, const char *src, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char c = src[i];
		if (c == ' ' || c == '\n' || c == '\t' || c == '\r')
			continue;
		dst[o++] = c;
		if (c != '"')
			continue;
		for (i++; i < n && src[i] != '"'; i++) {
			if (src[i] == '\\' && i + 1 < n)
				dst[o++] = src[i++];
			dst[o++] = src[i];
		}
		if (i < n)
			dst[o++] = '"';
	}
	return o;
}

static const char *
dump_args(struct imp *im, json_t *args, uint32_t *len)
{
	*len = 0;
	if (!args || !json_is_object(args) || json_object_size(args) == 0)
		return NULL;
	size_t flags = JSON_COMPACT | JSON_REAL_PRECISION(real_digits(args, 15));
	for (;;) {
		size_t n = json_dumpb(args, im->args, im->args_cap, flags);
		if (n == 0)
			return NULL;
		if (n <= im->args_cap) {
			if (n > UINT32_MAX)
				return NULL;
			*len = (uint32_t)n;
			return im->args;
		}
		imp_args_buf(im, n);
	}
}

const char *
imp_args_text(struct imp *im, const struct imp_x *x, uint32_t *len)
{
	*len = 0;
	if (x->flat) {             /* the fast path wrote them (fast.c) */
		*len = x->flat_args_len;
		return x->flat_args;
	}
	if (!x->args || json_object_size(x->args) == 0)
		return NULL;
	if (!x->args_text || x->args_changed ||
	    json_object_size(x->args) != x->args_keys)
		return dump_args(im, x->args, len);
	char *b = imp_args_buf(im, x->args_len);
	*len = (uint32_t)imp_squeeze(b, x->args_text, x->args_len);
	return b;
}

/* ---- emitting ------------------------------------------------------------------ */

int
imp_emit(struct imp *im, struct tk_event *ev, const struct imp_x *x)
{
	ev->args = imp_args_text(im, x, &ev->args_len);
	if (ev->dur < 0)
		ev->dur = 0;
	if (ev->ts > INT64_MAX - ev->dur)
		ev->dur = INT64_MAX - ev->ts;
	if (ev->ts < im->t_min)
		im->t_min = ev->ts;
	if (ev->ts + ev->dur > im->t_max)
		im->t_max = ev->ts + ev->dur;
	if (!x->more)
		imp_summary_add(im->sum, x->phs, x->cat, ev->kind);
	else
		imp_summary_note(im->sum, ev->kind == TK_COUNTER
		                 ? "counter samples besides the first of an event"
		                 : "events made besides the first of an event", 1);
	if (imp_sort_add(im->sort, ev) < 0) {
		im->fatal = 1;     /* imp_run() says why */
		return -1;
	}
	return 0;
}

uint32_t
imp_x_track(struct imp *im, const struct imp_x *x)
{
	return imp_lane_track(im->tracks, &x->pid, &x->tid);
}

void
imp_add_category(struct imp *im, const char *domain, uint32_t category,
                 const char *name)
{
	size_t i;
	json_t *c;
	json_array_foreach(im->categories, i, c) {
		if (json_integer_value(json_array_get(c, 1)) == category &&
		    strcmp(json_string_value(json_array_get(c, 0)), domain) == 0)
			return;
	}
	if (json_array_size(im->categories) < 4096)
		json_array_append_new(im->categories,
		                      json_pack("[s,I,s]", domain, (json_int_t)category, name));
}

/* Range attributes that trace-to-chrome writes into args. */
static void
range_attrs(struct imp *im, struct imp_x *x, struct tk_range_attrs *a)
{
	if (!x->args)
		return;
	json_t *v = json_object_get(x->args, "category");
	if (json_is_integer(v) && json_integer_value(v) > 0 &&
	    json_integer_value(v) <= UINT32_MAX) {
		a->category = (uint32_t)json_integer_value(v);
		json_object_del(x->args, "category");
		json_t *n = json_object_get(x->args, "category name");
		if (json_is_string(n)) {
			imp_add_category(im, a->domain, a->category, json_string_value(n));
			json_object_del(x->args, "category name");
		}
	}
	v = json_object_get(x->args, "color");
	if (json_is_string(v)) {
		const char *c = json_string_value(v);
		char *end;
		if (c[0] == '#' && strlen(c) == 7) {
			unsigned long rgb = strtoul(c + 1, &end, 16);
			if (!*end) {
				a->color = 0xff000000u | (uint32_t)rgb;
				json_object_del(x->args, "color");
			}
		}
	}
	v = json_object_get(x->args, "payload");
	if (json_is_integer(v)) {
		json_int_t p = json_integer_value(v);
		a->payload_type = p < 0 ? TK_PAYLOAD_INT : TK_PAYLOAD_UINT;
		a->payload.i = p;
		json_object_del(x->args, "payload");
	} else if (json_is_real(v)) {
		a->payload_type = TK_PAYLOAD_DOUBLE;
		a->payload.d = json_real_value(v);
		json_object_del(x->args, "payload");
	}
}

/* The default NVTX domain has no name; trace-to-chrome calls it "nvtx". */
static const char *
domain_of(const char *cat)
{
	return strcmp(cat, "nvtx") == 0 ? "" : cat;
}

/* A complete slice or an instant: GPU kinds first, else a range or mark. */
static int
complete(struct imp *im, struct imp_x *x)
{
	int rc = imp_kineto(im, x);
	if (rc)
		return rc < 0 ? -1 : 0;
	struct tk_event ev = { 0 };
	if (x->ph == 'X') {
		ev.kind = TK_RANGE;
		ev.dur = x->dur;
	} else {
		ev.kind = TK_MARK;
	}
	ev.ts = x->ts;
	ev.name = x->name;
	if (x->ph != 'X' && x->scope == 'p' && imp_lane_device(im->tracks, &x->pid) < 0)
		ev.track = imp_process(im->tracks, &x->pid);
	else
		ev.track = imp_x_track(im, x);
	ev.u.range.domain = domain_of(x->cat);
	range_attrs(im, x, &ev.u.range);
	return imp_emit(im, &ev, x);
}

/* ---- ids and keys ---------------------------------------------------------------- */

/* FNV-1a, not tkp_hash(): what it gives is written.  A string id's
 * number is this hash of it, and the open slices' table, walked by
 * imp_event_finish(), orders the unclosed ones of equal begin time. */
static uint64_t
hash_bytes(const char *p, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
	return h;
}

/* An id (number, "0x1f", "42", or any string) as a number. */
static uint64_t
id_value(json_t *v)
{
	if (json_is_integer(v))
		return (uint64_t)json_integer_value(v);
	if (json_is_real(v)) {
		double d = json_real_value(v);
		return d > -9.2e18 && d < 9.2e18 ? (uint64_t)(int64_t)d : 0;
	}
	if (json_is_string(v)) {
		uint64_t u;
		const char *s = json_string_value(v);
		size_t n = json_string_length(v);
		if (imp_parse_u64(s, n, &u) == 0)
			return u;
		return hash_bytes(s, n, 1469598103934665603ull) >> 1;
	}
	if (json_is_object(v)) {     /* id2: {"local": x} or {"global": x} */
		json_t *l = json_object_get(v, "local");
		if (l)
			return id_value(l);
		return id_value(json_object_get(v, "global"));
	}
	return 0;
}

/* ---- open slices and async ranges -------------------------------------------------- */

static size_t
bucket(const struct imp *im, uint64_t hash)
{
	return (size_t)(hash ^ (hash >> 29)) & (im->open_cap - 1);
}

static void
grow_open(struct imp *im)
{
	size_t cap = im->open_cap * 2;
	struct imp_open **t = calloc(cap, sizeof(*t));
	if (!t)
		cmd_die(EXIT_USAGE, "out of memory");
	size_t old = im->open_cap;
	im->open_cap = cap;
	/* keep each chain's order: newest first */
	for (size_t i = 0; i < old; i++) {
		struct imp_open *o = im->open[i], *rev = NULL;
		while (o) {
			struct imp_open *n = o->next;
			o->next = rev;
			rev = o;
			o = n;
		}
		while (rev) {
			struct imp_open *n = rev->next;
			size_t b = bucket(im, rev->hash);
			rev->next = t[b];
			t[b] = rev;
			rev = n;
		}
	}
	free(im->open);
	im->open = t;
}

static void
push_open(struct imp *im, struct imp_open *o)
{
	if (im->nopen + 1 > im->open_cap)
		grow_open(im);
	size_t b = bucket(im, o->hash);
	o->next = im->open[b];
	im->open[b] = o;
	im->nopen++;
}

/* Whether o is of this kind and key. */
static int
same_key(const struct imp_open *o, char kind, uint64_t hash, uint32_t track,
         const char *key)
{
	if (o->kind != kind || o->hash != hash)
		return 0;
	return kind == 'B' || kind == 'E' ? o->track == track : strcmp(o->key, key) == 0;
}

/* The newest open entry of this kind and key, or NULL. */
static struct imp_open *
find_open(struct imp *im, char kind, uint64_t hash, uint32_t track, const char *key)
{
	for (struct imp_open *o = im->open[bucket(im, hash)]; o; o = o->next)
		if (same_key(o, kind, hash, track, key))
			return o;
	return NULL;
}

/* Take the newest open entry of this kind and key. */
static struct imp_open *
pop_open(struct imp *im, char kind, uint64_t hash, uint32_t track, const char *key)
{
	struct imp_open **pp = &im->open[bucket(im, hash)];
	for (; *pp; pp = &(*pp)->next) {
		struct imp_open *o = *pp;
		if (!same_key(o, kind, hash, track, key))
			continue;
		*pp = o->next;
		im->nopen--;
		return o;
	}
	return NULL;
}

/* An open slice or range keeps a copy of its begin event: the parsed
 * event lives only as long as its batch (pipe.c). */
static struct imp_open *
new_open(json_t *ev, const struct imp_x *x, char kind)
{
	struct imp_open *o = calloc(1, sizeof(*o));
	if (!o || !(o->ev = json_deep_copy(ev)))
		cmd_die(EXIT_USAGE, "out of memory");
	o->kind = kind;
	o->x = *x;
	o->x.args_text = NULL;     /* the input buffer moves on */
	/* the copy's strings and args */
	json_t *v;
	o->x.name = json_is_string(v = json_object_get(o->ev, "name")) ? json_string_value(v) : "";
	o->x.cat = json_is_string(v = json_object_get(o->ev, "cat")) ? json_string_value(v) : "";
	o->x.phs = json_is_string(v = json_object_get(o->ev, "ph")) ? json_string_value(v) : "?";
	v = json_object_get(o->ev, "args");
	o->x.args = json_is_object(v) ? v : NULL;
	return o;   /* pid.str and tid.str point into the track table */
}

/* Async ranges match on category, id, and pid for local ids (the spec:
 * id2.local is per process). */
static char *
async_key(const struct imp_x *x, json_t *id, json_t *id2, json_t *scope,
          uint64_t *idv, uint64_t *hash)
{
	json_t *use = id ? id : id2;
	*idv = id_value(use);
	int local = id2 && json_object_get(id2, "local");
	const char *sc = json_is_string(scope) ? json_string_value(scope) : "";
	char buf[64];
	snprintf(buf, sizeof(buf), "%" PRIu64 "/%" PRId64, *idv,
	         local ? x->pid.v : (int64_t)0);
	size_t n = strlen(x->cat) + strlen(sc) + strlen(buf) + 3;
	char *k = malloc(n);
	if (!k)
		cmd_die(EXIT_USAGE, "out of memory");
	snprintf(k, n, "%s\x1f%s\x1f%s", x->cat, sc, buf);
	*hash = hash_bytes(k, strlen(k), 1469598103934665603ull) | 1;
	return k;
}

/* end - begin without overflow (an end is never paired with a begin
 * after it: begin_of_end(), pair_held()). */
static int64_t
span_ns(int64_t begin, int64_t end)
{
	if (end <= begin)
		return 0;
	uint64_t d = (uint64_t)end - (uint64_t)begin;
	return d > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)d;
}

/* E's args join B's (the spec merges them). */
static json_t *
merged_args(json_t *b, json_t *e)
{
	if (!e || !json_is_object(e) || json_object_size(e) == 0)
		return b;
	if (!b || !json_is_object(b))
		return e;
	json_object_update(b, e);
	return b;
}

static int
end_slice(struct imp *im, struct imp_open *o, int64_t end, json_t *end_args,
          const char *end_name)
{
	struct imp_x x = o->x;
	x.ph = 'X';
	x.phs = "B";
	x.dur = span_ns(x.ts, end);
	if (!*x.name && end_name)
		x.name = end_name;
	x.args = merged_args(x.args, end_args);
	x.args_changed = 1;
	return complete(im, &x);
}

static int
end_async(struct imp *im, struct imp_open *o, int64_t end, uint32_t end_track,
          json_t *end_args)
{
	struct imp_x x = o->x;
	x.args = merged_args(x.args, end_args);
	x.args_changed = 1;
	struct tk_event ev = { 0 };
	ev.kind = TK_ASYNC_RANGE;
	ev.ts = x.ts;
	ev.dur = span_ns(x.ts, end);
	ev.name = x.name;
	ev.track = imp_x_track(im, &x);
	ev.u.range.domain = domain_of(x.cat);
	ev.u.range.id = o->id;
	if (end_track && end_track != ev.track)
		ev.u.range.end_track = end_track;
	range_attrs(im, &x, &ev.u.range);
	if (x.args) {
		/* trace-to-chrome keeps the range's own id here */
		json_t *id = json_object_get(x.args, "id");
		if (json_is_integer(id) && json_integer_value(id) > 0) {
			ev.u.range.id = (uint64_t)json_integer_value(id);
			json_object_del(x.args, "id");
		}
	}
	return imp_emit(im, &ev, &x);
}

static int close_open(struct imp *im, struct imp_open *o, const struct imp_x *end,
                      uint32_t end_track);

/* What never ended lasts to `end`, the end of the trace. */
static void
close_unclosed(struct imp *im, struct imp_open *o, int64_t end, uint64_t *slices,
               uint64_t *asyncs)
{
	im->offset = o->offset;
	json_t *mark = json_pack("{s:b}", "chrome.unclosed", 1);
	int64_t e = end > o->x.ts ? end : o->x.ts;
	if (o->kind == 'B') {
		end_slice(im, o, e, mark, NULL);
		(*slices)++;
	} else {
		end_async(im, o, e, 0, mark);
		(*asyncs)++;
	}
	json_decref(mark);
	free_open(o);
}

static int
is_held_end(char kind)
{
	return kind == 'E' || kind == 'e' || kind == 'F';
}

/* The begin an end's kind closes: B for E, b for e, S for F. */
static char
begin_kind_of(char end_kind)
{
	return end_kind == 'E' ? 'B' : end_kind == 'e' ? 'b' : 'S';
}

/* Time order; at equal times, input order (as Chrome's trace viewer
 * sorts its async events), so an end written before a begin of the same
 * time does not close it. */
static int
by_time(const void *a, const void *b)
{
	const struct imp_open *x = *(struct imp_open *const *)a;
	const struct imp_open *y = *(struct imp_open *const *)b;
	if (x->x.ts != y->x.ts)
		return x->x.ts < y->x.ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The keys with held ends: all their waiting begins and ends, in time
 * order, paired as a stack (an end closes the newest begin before it),
 * as Perfetto and Chrome's trace viewer pair them after sorting. */
static void
pair_held(struct imp *im, int64_t end, uint64_t *slices, uint64_t *asyncs)
{
	struct imp_open **group = NULL, **stack = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < im->open_cap && im->nheld; i++) {
		for (;;) {
			struct imp_open *held = im->open[i];
			while (held && !is_held_end(held->kind))
				held = held->next;
			if (!held)
				break;
			char end_kind = held->kind;
			char begin_kind = begin_kind_of(end_kind);
			/* take the key's entries out of the chain */
			size_t n = 0;
			for (struct imp_open **pp = &im->open[i]; *pp;) {
				struct imp_open *o = *pp;
				if (!same_key(o, end_kind, held->hash, held->track, held->key) &&
				    !same_key(o, begin_kind, held->hash, held->track, held->key)) {
					pp = &o->next;
					continue;
				}
				if (n == cap) {
					cap = cap ? cap * 2 : 64;
					group = realloc(group, cap * sizeof(*group));
					stack = realloc(stack, cap * sizeof(*stack));
					if (!group || !stack)
						cmd_die(EXIT_USAGE, "out of memory");
				}
				group[n++] = o;
				*pp = o->next;
				im->nopen--;
			}
			qsort(group, n, sizeof(*group), by_time);
			size_t depth = 0;
			for (size_t j = 0; j < n; j++) {
				struct imp_open *o = group[j];
				if (!is_held_end(o->kind)) {
					stack[depth++] = o;
					continue;
				}
				im->nheld--;
				if (depth) {
					struct imp_open *b = stack[--depth];
					close_open(im, b, &o->x, o->kind == 'E' ? 0 : o->track);
				} else {
					imp_summary_add(im->sum, o->x.phs, o->x.cat,
					                IMP_OUT_UNMATCHED_END);
				}
				free_open(o);
			}
			for (size_t j = 0; j < depth; j++)
				close_unclosed(im, stack[j], end, slices, asyncs);
		}
	}
	free(group);
	free(stack);
}

void
imp_event_finish(struct imp *im)
{
	/* what never ended lasts to the end of the trace */
	int64_t end = im->t_max;
	uint64_t slices = 0, asyncs = 0;
	pair_held(im, end, &slices, &asyncs);
	for (size_t i = 0; i < im->open_cap; i++) {
		/* oldest first, as they were opened */
		struct imp_open *o = im->open[i], *rev = NULL;
		im->open[i] = NULL;
		while (o) {
			struct imp_open *n = o->next;
			o->next = rev;
			rev = o;
			o = n;
		}
		while (rev) {
			struct imp_open *n = rev->next;
			close_unclosed(im, rev, end, &slices, &asyncs);
			rev = n;
		}
	}
	im->nopen = 0;
	im->unclosed = slices + asyncs;
	imp_summary_note(im->sum, "B without E: ended at the end of the trace "
	                 "(args chrome.unclosed)", slices);
	imp_summary_note(im->sum, "async begin without end: ended at the end of "
	                 "the trace (args chrome.unclosed)", asyncs);
}

/* ---- the phases ---------------------------------------------------------------------- */

/* The fields of an event, found in one pass over its keys. */
struct fields {
	json_t *ph, *name, *cat, *pid, *tid, *ts, *dur, *args, *id, *id2;
	json_t *s, *bp, *scope;
	json_t *extra;           /* other keys, for args as chrome.<key> */
};

static int
time_of(struct imp *im, const struct imp_item *it, int span, json_t *v,
        const char *what, int64_t *ns)
{
	uint32_t off = it->span[span].off, len = it->span[span].len;
	if (len) {
		if (imp_us_to_ns(it->text + off, len, ns) == 0)
			return 0;
		char c = it->text[off];
		if ((c >= '0' && c <= '9') || c == '-') {
			imp_event_warn(im, "'%s' does not fit in 64-bit nanoseconds", what);
			return -1;
		}
	} else if (json_is_integer(v)) {
		json_int_t us = json_integer_value(v);
		if (us < INT64_MAX / 1000 && us > INT64_MIN / 1000) {
			*ns = us * 1000;
			return 0;
		}
	} else if (json_is_real(v)) {
		/* a key written with escapes: the digits were not seen */
		double d = json_real_value(v) * 1000.0;
		if (d > -9.2e18 && d < 9.2e18) {
			*ns = (int64_t)(d < 0 ? d - 0.5 : d + 0.5);
			return 0;
		}
	}
	if (json_is_number(v))
		imp_event_warn(im, "'%s' does not fit in 64-bit nanoseconds", what);
	else
		imp_event_warn(im, "'%s' is not a number", what);
	return -1;
}

static const char *
str_or(json_t *v, const char *dflt)
{
	return json_is_string(v) ? json_string_value(v) : dflt;
}

/* x's args, created in the event (which owns them) if it had none. */
static json_t *
ensure_args(json_t *ev, struct imp_x *x)
{
	x->args_changed = 1;
	if (!x->args) {
		x->args = json_object();
		if (!x->args || json_object_set_new(ev, "args", x->args) < 0)
			cmd_die(EXIT_USAGE, "out of memory");
	}
	return x->args;
}

static int
bad(struct imp *im, const char *ph, const char *cat)
{
	im->bad_events++;
	imp_summary_add(im->sum, ph, cat, IMP_OUT_BAD);
	return -1;
}

/* Flows that only repeat a correlation: Kineto's ac2g (also spelled
 * async_cpu_to_gpu), older Kineto's "async"/"launch", trace-to-chrome's. */
static int
correlation_flow(const char *cat, const char *name)
{
	return strcmp(cat, "ac2g") == 0 || strcmp(cat, "async_cpu_to_gpu") == 0 ||
	       (strcmp(cat, "async") == 0 && strcmp(name, "launch") == 0);
}

int
imp_skip_flow(struct imp *im, const struct imp_item *it)
{
	const struct imp_span *ph = &it->span[IMP_SPAN_PH];
	const struct imp_span *cat = &it->span[IMP_SPAN_CAT];
	if (ph->len != 3 || cat->len < 6)
		return 0;
	char p = it->text[ph->off + 1];
	if (p != 's' && p != 'f' && p != 't')
		return 0;
	const char *c = it->text + cat->off;
	char cs[32];
	if (cat->len >= sizeof(cs) || c[0] != '"' || c[cat->len - 1] != '"')
		return 0;
	memcpy(cs, c + 1, cat->len - 2);
	cs[cat->len - 2] = 0;
	if (strcmp(cs, "ac2g") != 0 && strcmp(cs, "async_cpu_to_gpu") != 0)
		return 0;
	char phs[2] = { p, 0 };
	imp_summary_add(im->sum, phs, cs, IMP_OUT_CORRELATED);
	return 1;
}

static int
metadata(struct imp *im, struct imp_x *x)
{
	const char *what = x->name;
	json_t *a = x->args;
	const char *v;
	if (strcmp(what, "process_name") == 0 && (v = str_or(json_object_get(a, "name"), NULL))) {
		imp_name_process(im->tracks, &x->pid, v);
	} else if (strcmp(what, "process_labels") == 0 &&
	           (v = str_or(json_object_get(a, "labels"), NULL))) {
		imp_label_process(im->tracks, &x->pid, v);
	} else if (strcmp(what, "thread_name") == 0 &&
	           (v = str_or(json_object_get(a, "name"), NULL))) {
		imp_name_thread(im->tracks, &x->pid, &x->tid, v);
	} else if (strcmp(what, "process_sort_index") == 0 ||
	           strcmp(what, "thread_sort_index") == 0) {
		imp_summary_add(im->sum, x->phs, what, IMP_OUT_IGNORED);
		imp_summary_note(im->sum, "sort indexes not kept (tools order tracks "
		                 "themselves)", 1);
		return 0;
	} else {
		/* keep what we do not know as run metadata */
		uint32_t n;
		const char *t = dump_args(im, a, &n);
		char key[256];
		snprintf(key, sizeof(key), "chrome.M.%s", what);
		json_t *s = json_stringn(t ? t : "", t ? n : 0);
		imp_topkey(im, key, s);
		json_decref(s);
	}
	/* metadata rows of the summary go by the metadata's name */
	imp_summary_add(im->sum, x->phs, what, IMP_OUT_METADATA);
	return 0;
}

static int
counter(struct imp *im, struct imp_x *x, json_t *id)
{
	if (!x->args || !json_is_object(x->args) || json_object_size(x->args) == 0) {
		imp_event_warn(im, "counter without values in args");
		return bad(im, x->phs, x->cat);
	}
	uint32_t process = 0, device = 0;
	int64_t gpu = imp_lane_device(im->tracks, &x->pid);
	if (gpu >= 0)
		device = imp_device(im->tracks, (uint32_t)gpu);
	else
		process = imp_process(im->tracks, &x->pid);
	char base[512];
	const char *nm = *x->name ? x->name : *x->cat ? x->cat : "counter";
	if (id) {
		char idb[64];
		if (json_is_string(id))
			snprintf(base, sizeof(base), "%s[%s]", nm, json_string_value(id));
		else
			snprintf(idb, sizeof(idb), "%" PRIu64, id_value(id)),
			snprintf(base, sizeof(base), "%s[%s]", nm, idb);
	} else {
		snprintf(base, sizeof(base), "%s", nm);
	}
	size_t nkeys = json_object_size(x->args);
	const char *k;
	json_t *v;
	int wrote = 0;
	json_object_foreach(x->args, k, v) {
		double d;
		if (json_is_number(v)) {
			d = json_number_value(v);
		} else if (json_is_string(v)) {
			char *end;
			d = strtod(json_string_value(v), &end);
			if (end == json_string_value(v) || *end) {
				imp_summary_note(im->sum, "counter values that are not numbers "
				                 "(not kept)", 1);
				continue;
			}
		} else {
			imp_summary_note(im->sum, "counter values that are not numbers "
			                 "(not kept)", 1);
			continue;
		}
		/* one series: the counter is the event's name and the key its
		 * unit (trace-to-chrome writes {"bytes": n}); several: one
		 * counter per key */
		char name[1024];
		const char *unit = "";
		if (nkeys == 1) {
			snprintf(name, sizeof(name), "%s", base);
			if (strcmp(k, "value") != 0 && strcmp(k, base) != 0)
				unit = k;
		} else {
			snprintf(name, sizeof(name), "%s.%s", base, k);
		}
		struct tk_event ev = { 0 };
		ev.kind = TK_COUNTER;
		ev.ts = x->ts;
		ev.track = imp_counter(im->tracks, name, unit, process, device);
		ev.u.counter.value = d;
		struct imp_x nx = *x;
		nx.args = NULL;
		nx.more = wrote;
		if (imp_emit(im, &ev, &nx) < 0)
			return -1;
		wrote = 1;
	}
	if (!wrote)
		imp_summary_add(im->sum, x->phs, x->cat, IMP_OUT_IGNORED);
	return 0;
}

static int
flow(struct imp *im, struct imp_x *x, json_t *id, json_t *bp)
{
	if (correlation_flow(x->cat, x->name)) {
		imp_summary_add(im->sum, x->phs, x->cat, IMP_OUT_CORRELATED);
		return 0;
	}
	struct tk_event ev = { 0 };
	ev.kind = TK_FLOW;
	ev.ts = x->ts;
	ev.name = x->name;
	ev.track = imp_x_track(im, x);
	ev.u.flow.id = id_value(id);
	ev.u.flow.phase = x->ph == 's' ? TK_FLOW_START
	                : x->ph == 'f' ? TK_FLOW_END : TK_FLOW_STEP;
	ev.u.flow.category = x->cat;
	/* an end bound to the enclosing slice is how tracekit reads flows */
	if (bp && !(x->ph == 'f' && json_is_string(bp) &&
	            strcmp(json_string_value(bp), "e") == 0)) {
		if (!x->args)
			x->args = json_object();
		else
			json_incref(x->args);
		x->args_changed = 1;
		json_object_set(x->args, "chrome.bp", bp);
		int rc = imp_emit(im, &ev, x);
		json_decref(x->args);
		return rc;
	}
	return imp_emit(im, &ev, x);
}

/* Where the value of top-level key `key` goes, or NULL for an extra.
 * (Called for every key of every event: by length, then bytes.) */
static json_t **
field_slot(struct fields *f, const char *k)
{
	switch (strlen(k)) {
	case 1:
		return k[0] == 's' ? &f->s : NULL;
	case 2:
		if (k[0] == 'p' && k[1] == 'h') return &f->ph;
		if (k[0] == 't' && k[1] == 's') return &f->ts;
		if (k[0] == 'i' && k[1] == 'd') return &f->id;
		if (k[0] == 'b' && k[1] == 'p') return &f->bp;
		return NULL;
	case 3:
		if (memcmp(k, "pid", 3) == 0) return &f->pid;
		if (memcmp(k, "tid", 3) == 0) return &f->tid;
		if (memcmp(k, "cat", 3) == 0) return &f->cat;
		if (memcmp(k, "dur", 3) == 0) return &f->dur;
		if (memcmp(k, "id2", 3) == 0) return &f->id2;
		return NULL;
	case 4:
		if (memcmp(k, "name", 4) == 0) return &f->name;
		if (memcmp(k, "args", 4) == 0) return &f->args;
		return NULL;
	case 5:
		return memcmp(k, "scope", 5) == 0 ? &f->scope : NULL;
	}
	return NULL;
}

/* A Chrome event being converted: the parsed value (which owns what x
 * points to), its bytes, its fields, and what they say. */
struct chrome_event {
	json_t *v;
	const struct imp_item *it;
	struct fields f;
	struct imp_x x;
};

/* Every top-level key into its field; the others, as chrome.<key>, into
 * f->extra (the caller releases it). */
static void
read_fields(json_t *ev, struct fields *f)
{
	const char *key;
	json_t *v;
	json_object_foreach(ev, key, v) {
		json_t **slot = field_slot(f, key);
		if (slot) {
			*slot = v;
			continue;
		}
		if (!f->extra && !(f->extra = json_object()))
			cmd_die(EXIT_USAGE, "out of memory");
		size_t kn = strlen(key) + 8;
		char *k = malloc(kn);
		if (!k)
			cmd_die(EXIT_USAGE, "out of memory");
		snprintf(k, kn, "chrome.%s", key);
		json_object_set(f->extra, k, v);
		free(k);
	}
}

/* What every phase needs: the phase, category, name, pid and tid into
 * e->x.  0, or -1 for an event that cannot be read (warned, counted). */
static int
read_identity(struct imp *im, struct chrome_event *e)
{
	const struct fields *f = &e->f;
	struct imp_x *x = &e->x;
	x->phs = str_or(f->ph, NULL);
	x->cat = str_or(f->cat, "");
	x->name = str_or(f->name, "");
	if (!x->phs || !*x->phs) {
		imp_event_warn(im, f->ph ? "'ph' is not a phase" : "no 'ph'");
		return bad(im, "?", x->cat);
	}
	if (f->cat && !json_is_string(f->cat) && !json_is_null(f->cat)) {
		imp_event_warn(im, "'cat' is not a string");
		return bad(im, x->phs, "");
	}
	if (f->name && !json_is_string(f->name) && !json_is_null(f->name)) {
		imp_event_warn(im, "'name' is not a string");
		return bad(im, x->phs, x->cat);
	}
	char msg[128];
	if (imp_tracks_id(im->tracks, f->pid, &x->pid, msg, sizeof(msg)) < 0) {
		imp_event_warn(im, "'pid' %s", msg);
		return bad(im, x->phs, x->cat);
	}
	if (imp_tracks_id(im->tracks, f->tid, &x->tid, msg, sizeof(msg)) < 0) {
		imp_event_warn(im, "'tid' %s", msg);
		return bad(im, x->phs, x->cat);
	}
	x->ph = x->phs[1] ? '?' : x->phs[0];
	return 0;
}

/* Then its time (metadata has none) and args, extra keys included.
 * 0, or -1 for an event that cannot be read (warned, counted). */
static int
read_time_args(struct imp *im, struct chrome_event *e)
{
	const struct fields *f = &e->f;
	const struct imp_item *it = e->it;
	struct imp_x *x = &e->x;
	if (x->ph != 'M') {
		if (!f->ts && !it->span[IMP_SPAN_TS].len) {
			imp_event_warn(im, "no 'ts'");
			return bad(im, x->phs, x->cat);
		}
		if (time_of(im, it, IMP_SPAN_TS, f->ts, "ts", &x->ts) < 0)
			return bad(im, x->phs, x->cat);
	}
	if (f->args && !json_is_null(f->args) && !json_is_object(f->args)) {
		imp_event_warn(im, "'args' is not an object");
		return bad(im, x->phs, x->cat);
	}
	x->args = json_is_object(f->args) ? f->args : NULL;
	if (x->args && it->span[IMP_SPAN_ARGS].len && !im->parse.repaired) {
		x->args_text = it->text + it->span[IMP_SPAN_ARGS].off;
		x->args_len = it->span[IMP_SPAN_ARGS].len;
		x->args_keys = json_object_size(x->args);
	}
	if (f->extra)
		json_object_update(ensure_args(e->v, x), f->extra);
	x->scope = 't';
	return 0;
}

/* X: a complete slice. */
static int
phase_complete(struct imp *im, struct chrome_event *e)
{
	struct imp_x *x = &e->x;
	x->dur = 0;
	if (e->f.dur || e->it->span[IMP_SPAN_DUR].len) {
		if (time_of(im, e->it, IMP_SPAN_DUR, e->f.dur, "dur", &x->dur) < 0)
			return bad(im, x->phs, x->cat);
		if (x->dur < 0) {
			imp_summary_note(im->sum, "negative 'dur' set to 0", 1);
			x->dur = 0;
		}
	} else {
		imp_summary_note(im->sum, "X without 'dur': duration 0", 1);
	}
	return complete(im, x);
}

/* B and E pair on their track: the open slices' hash (its order is seen,
 * as hash_bytes() says). */
static uint64_t
slice_hash(uint32_t track)
{
	return track * 0x9e3779b97f4a7c15ull | 1;
}

/* B: a slice open until its E. */
static int
phase_begin(struct imp *im, struct chrome_event *e)
{
	struct imp_open *o = new_open(e->v, &e->x, 'B');
	o->track = imp_x_track(im, &e->x);
	o->hash = slice_hash(o->track);
	o->offset = e->it->offset;
	o->seq = im->begin_end_seq++;
	push_open(im, o);
	return 0;
}

/* An end that found its begin o: the range is written as of the begin
 * (warnings name the begin's byte offset), and o is done. */
static int
close_open(struct imp *im, struct imp_open *o, const struct imp_x *end,
           uint32_t end_track)
{
	imp_summary_add(im->sum, end->phs, end->cat, IMP_OUT_PAIRED);
	uint64_t off = im->offset;
	im->offset = o->offset;
	int rc = o->kind == 'B' ? end_slice(im, o, end->ts, end->args, end->name)
	                        : end_async(im, o, end->ts, end_track, end->args);
	im->offset = off;
	free_open(o);
	return rc;
}

/* The begin an end of this kind and key closes now, taken from the open
 * table, or NULL when the end must wait for the whole input: no begin of
 * its key is open, the newest one begins after it (a file not in time
 * order), or ends of its key already wait (once one waits, its key's
 * ends are paired in time order at the end: imp_event_finish()). */
static struct imp_open *
begin_of_end(struct imp *im, char end_kind, int64_t ts, uint64_t hash,
             uint32_t track, const char *key)
{
	char begin_kind = begin_kind_of(end_kind);
	if (find_open(im, end_kind, hash, track, key))
		return NULL;
	struct imp_open *o = find_open(im, begin_kind, hash, track, key);
	if (!o || o->x.ts > ts)
		return NULL;
	return pop_open(im, begin_kind, hash, track, key);
}

/* Keep an end until the input is read (the key becomes the entry's). */
static int
hold_end(struct imp *im, struct chrome_event *e, uint64_t hash, uint32_t track,
         char *key)
{
	struct imp_open *o = new_open(e->v, &e->x, e->x.ph);
	o->key = key;
	o->hash = hash;
	o->track = track;
	o->offset = e->it->offset;
	o->seq = im->begin_end_seq++;
	push_open(im, o);
	im->nheld++;
	return 0;
}

/* E: ends the newest open B on its track. */
static int
phase_end(struct imp *im, struct chrome_event *e)
{
	struct imp_x *x = &e->x;
	uint32_t track = imp_x_track(im, x);
	uint64_t h = slice_hash(track);
	struct imp_open *o = begin_of_end(im, 'E', x->ts, h, track, NULL);
	if (!o)
		return hold_end(im, e, h, track, NULL);
	return close_open(im, o, x, 0);
}

/* i, I, R: an instant; its scope s says thread, process or global. */
static int
phase_instant(struct imp *im, struct chrome_event *e)
{
	struct imp_x *x = &e->x;
	if (json_is_string(e->f.s)) {
		const char *s = json_string_value(e->f.s);
		if (strcmp(s, "t") == 0 || strcmp(s, "p") == 0) {
			x->scope = s[0];
		} else {
			json_object_set(ensure_args(e->v, x), "chrome.s", e->f.s);
			x->scope = s[0] == 'g' ? 'g' : 't';
		}
	}
	x->ph = 'i';
	return complete(im, x);
}

/* b, S: an async range open until its end with the same key. */
static int
phase_async_begin(struct imp *im, struct chrome_event *e)
{
	uint64_t idv, h;
	char *k = async_key(&e->x, e->f.id, e->f.id2, e->f.scope, &idv, &h);
	struct imp_open *o = new_open(e->v, &e->x, e->x.ph);
	o->key = k;
	o->hash = h;
	o->id = idv;
	o->offset = e->it->offset;
	o->seq = im->begin_end_seq++;
	push_open(im, o);
	return 0;
}

/* e, F: ends the newest open b (or S) with the same key. */
static int
phase_async_end(struct imp *im, struct chrome_event *e)
{
	struct imp_x *x = &e->x;
	uint64_t idv, h;
	char *k = async_key(x, e->f.id, e->f.id2, e->f.scope, &idv, &h);
	uint32_t end_track = imp_x_track(im, x);
	struct imp_open *o = begin_of_end(im, x->ph, x->ts, h, 0, k);
	if (!o)
		return hold_end(im, e, h, end_track, k);
	free(k);
	return close_open(im, o, x, end_track);
}

/* n, T, p: an instant of an async operation, a mark with its id. */
static int
phase_async_instant(struct imp *im, struct chrome_event *e)
{
	struct imp_x *x = &e->x;
	struct tk_event ev = { 0 };
	ev.kind = TK_MARK;
	ev.ts = x->ts;
	ev.name = x->name;
	ev.track = imp_x_track(im, x);
	ev.u.range.domain = domain_of(x->cat);
	ev.u.range.id = id_value(e->f.id ? e->f.id : e->f.id2);
	if (x->ph != 'n')
		json_object_set_new(ensure_args(e->v, x), "chrome.ph", json_string(x->phs));
	range_attrs(im, x, &ev.u.range);
	return imp_emit(im, &ev, x);
}

/* s, t, f: one end of a flow arrow. */
static int
phase_flow(struct imp *im, struct chrome_event *e)
{
	if (!e->f.id && !e->f.id2) {
		imp_event_warn(im, "flow event without 'id'");
		return bad(im, e->x.phs, e->x.cat);
	}
	return flow(im, &e->x, e->f.id ? e->f.id : e->f.id2, e->f.bp);
}

/* Samples, object snapshots, memory dumps, clock syncs, ...: kept as
 * marks with their phase. */
static int
phase_other(struct imp *im, struct chrome_event *e)
{
	struct imp_x *x = &e->x;
	struct tk_event ev = { 0 };
	ev.kind = TK_MARK;
	ev.ts = x->ts;
	ev.name = x->name;
	ev.track = imp_x_track(im, x);
	ev.u.range.domain = domain_of(x->cat);
	json_object_set_new(ensure_args(e->v, x), "chrome.ph", json_string(x->phs));
	if (e->f.id)
		json_object_set(x->args, "chrome.id", e->f.id);
	return imp_emit(im, &ev, x);
}

int
imp_event(struct imp *im, json_t *ev, const struct imp_item *it)
{
	if (im->fatal)
		return -1;
	im->offset = it->offset;
	if (!json_is_object(ev)) {
		imp_event_warn(im, "not an object");
		return bad(im, "?", "");
	}
	struct chrome_event e = { .v = ev, .it = it };
	read_fields(ev, &e.f);
	int rc = read_identity(im, &e);
	if (rc == 0)
		rc = read_time_args(im, &e);
	if (rc == 0) {
		switch (e.x.ph) {
		case 'X': rc = phase_complete(im, &e); break;
		case 'B': rc = phase_begin(im, &e); break;
		case 'E': rc = phase_end(im, &e); break;
		case 'i': case 'I': case 'R': rc = phase_instant(im, &e); break;
		case 'C': rc = counter(im, &e.x, e.f.id); break;
		case 'b': case 'S': rc = phase_async_begin(im, &e); break;
		case 'e': case 'F': rc = phase_async_end(im, &e); break;
		case 'n': case 'T': case 'p': rc = phase_async_instant(im, &e); break;
		case 's': case 't': case 'f': rc = phase_flow(im, &e); break;
		case 'M': rc = metadata(im, &e.x); break;
		default: rc = phase_other(im, &e); break;
		}
	}
	json_decref(e.f.extra);
	return rc;
}
