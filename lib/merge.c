/* SPDX-License-Identifier: MIT */
/*
 * Merging traces into one stream ordered by begin time.
 *
 * Each input reads ahead a batch of events, already remapped into the
 * output's ids, each with a bound: no later event of the input begins
 * before it.  The bound comes from the input's chunks: a sorted chunk
 * bounds the rest of itself by the event, an unsorted one by its
 * earliest begin, and every chunk bounds the chunks after it by its
 * watermark (or, for a file scanned ahead, by the earliest begin of
 * the chunks still to come).  The merge always takes the next event of
 * the input with the lowest bound, and writes every waiting event that
 * begins no later than the lowest bound of all.  Sorted inputs so flow
 * straight through; unsorted ones wait in an order queue (orderq.h), and
 * when that outgrows the memory limit it is written, sorted, to an
 * unlinked temporary file that becomes one more (sorted) input.
 *
 * Reading ahead in batches matters for speed: consecutive output events
 * mostly come from different inputs, and decoding one event at a time
 * from each reader in turn keeps missing the cache.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "intern.h"
#include "orderq.h"
#include "reader_private.h"
#include "tk_private.h"

#define DEFAULT_LIMIT (256u << 20)
#define SLOT_BLOCK 4096
#define BATCH 64                 /* events read ahead per input */
#define SPILL_FANIN 8            /* spill files merged into one at a time */
#define SPILL_CHUNK (256u << 10) /* their chunks: a reader's buffers each */
#define STR_ATTRS_MAX 4          /* string attributes of one kind */

/* An event waiting in the order queue. */
struct slot {
	struct tk_event ev;      /* output ids; pointers cleared */
	uint32_t input;          /* where it came from, for reports */
	union {
		uint8_t *args;   /* owned copy of ev.args */
		struct slot *next_free;
	} u;
};

struct slot_block {
	struct slot_block *next;
	struct slot slots[SLOT_BLOCK];
};

/* An event read ahead. */
struct ahead {
	struct tk_event ev;      /* output ids and times */
	int64_t future;          /* no later event of the input begins earlier */
	uint32_t args_off;       /* ev.args in the input's args buffer */
};

struct input {
	struct tk_reader *r;
	char *label;
	int64_t offset;
	int raw;                 /* a spill file: ids are the output's */
	int spill_fd;
	unsigned level;          /* a spill file: how many merges made it */
	int eof;                 /* the reader has nothing more to give */
	int in_heap;
	unsigned scopes;         /* traces met after the first one */
	uint64_t late;           /* its events written out of order */
	/* events read ahead: buf[pos .. n) */
	struct ahead *buf;
	unsigned pos, n;
	struct tkp_buf args;
	int64_t future;          /* bound of what the reader has not delivered */
	/* chunks scanned ahead: offset, and the earliest begin after each */
	uint64_t *chunk_off;
	int64_t *chunk_later;
	size_t nchunks, chunk_pos;
	uint64_t cur_chunk;      /* offset of the chunk `later` is for */
	int64_t cur_later;
	int have_cur;
	/* id maps of the input's current scope: input id -> output id */
	uint32_t *smap, *tmap, *dmap;
	size_t smap_cap, tmap_cap, dmap_cap;
};

/* Inputs with events read ahead, as a min-heap on (bound, index). */
struct hent {
	int64_t bound;
	uint32_t idx;
};

struct tk_merge {
	struct tk_writer *out;
	struct tk_merge_options opt;
	struct tkp_error error;  /* sticky: the first failure */

	struct input **inputs;
	size_t ninputs, inputs_cap;
	struct hent *iheap;
	size_t niheap;

	/* waiting events, in order of (ts, seq): a recorder's spans come in
	 * end order, so whole chunks wait here (orderq.h) */
	struct tkp_orderq wait;
	struct slot_block *blocks;
	struct slot *free_slots;
	size_t held_bytes;
	uint64_t seq;
	uint32_t spills_open;    /* spill files not read to the end yet */

	/* identity of output definitions, for deduplication */
	struct tkp_intern idents;
	uint32_t *ident_out;     /* by identity id: output track or device id */
	size_t ident_cap;

	/* string attributes of each kind, from the schema */
	const struct tkp_attr *str_attrs[TK_KIND_MAX + 1][STR_ATTRS_MAX];
	unsigned nstr_attrs[TK_KIND_MAX + 1];

	struct tkp_buf scratch;  /* args of an event kept across a refill */
	int64_t last_written;
	int64_t watermark;       /* promised to the output so far */
	int64_t hold;            /* promises go no further (tk_merge_hold) */
	int reported;            /* late inputs named */
	struct tk_merge_stats stats;
	tk_merge_progress_fn progress; /* tk_merge_set_progress() */
	void *progress_arg;
	uint64_t events_read;    /* from the inputs, not from spill files */
};

/* A failure, with the errno that caused it (0 if none did). */
#define merge_fail(m, code, errnum, ...) \
	tkp_error_set(&(m)->error, (code), (errnum), __VA_ARGS__)

static int
nomem(struct tk_merge *m)
{
	return merge_fail(m, TK_ENOMEM, ENOMEM, "out of memory");
}

/* The output writer failed: its errno is the merge's, and the code is
 * TK_ENOMEM when the writer ran out of memory, as when the merge does. */
static int
out_fail(struct tk_merge *m)
{
	int e = tk_writer_errno(m->out);
	return merge_fail(m, e == ENOMEM ? TK_ENOMEM : TK_EIO, e, "output: %s",
	                  tk_writer_error(m->out));
}

static int64_t
sat_add(int64_t t, int64_t d)
{
	if (d > 0 && t > INT64_MAX - d)
		return INT64_MAX;
	if (d < 0 && t < INT64_MIN - d)
		return INT64_MIN;
	return t + d;
}

/* A time of an input in output time; "no promise" and "nothing more"
 * stay what they are. */
static int64_t
shift(int64_t t, int64_t offset)
{
	return t == INT64_MIN || t == INT64_MAX ? t : sat_add(t, offset);
}

static int64_t
min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

TK_PUBLIC struct tk_merge *
tk_merge_new(struct tk_writer *out, const struct tk_merge_options *o)
{
	if (!out)
		return NULL;
	struct tk_merge *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->out = out;
	if (o)
		m->opt = *o;
	if (!m->opt.memory_limit)
		m->opt.memory_limit = DEFAULT_LIMIT;
	m->last_written = INT64_MIN;
	m->watermark = INT64_MIN;
	m->hold = INT64_MAX;
	for (unsigned k = 1; k <= TK_KIND_MAX; k++) {
		const struct tkp_kind_schema *ks = &tkp_schema[k];
		for (unsigned i = 0; i < ks->n; i++)
			if (ks->attrs[i].enc == TKP_ENC_STR &&
			    m->nstr_attrs[k] < STR_ATTRS_MAX)
				m->str_attrs[k][m->nstr_attrs[k]++] = &ks->attrs[i];
	}
	return m;
}

static void
free_input(struct input *in)
{
	tk_reader_free(in->r);
	if (in->spill_fd >= 0)
		close(in->spill_fd);
	free(in->label);
	free(in->buf);
	tkp_buf_free(&in->args);
	free(in->chunk_off);
	free(in->chunk_later);
	free(in->smap);
	free(in->tmap);
	free(in->dmap);
	free(in);
}

static void
free_slot_args(void *item)
{
	struct slot *s = item;
	free(s->u.args);
}

TK_PUBLIC void
tk_merge_free(struct tk_merge *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->ninputs; i++)
		free_input(m->inputs[i]);
	free(m->inputs);
	free(m->iheap);
	tkp_orderq_each(&m->wait, free_slot_args);
	tkp_orderq_free(&m->wait);
	while (m->blocks) {
		struct slot_block *b = m->blocks->next;
		free(m->blocks);
		m->blocks = b;
	}
	tkp_intern_free(&m->idents);
	free(m->ident_out);
	tkp_buf_free(&m->scratch);
	free(m);
}

static struct input *
new_input(struct tk_merge *m, struct tk_reader *r, const char *label,
          int64_t offset)
{
	if (m->ninputs == m->inputs_cap) {
		size_t old = m->inputs_cap, cap = old;
		if (tkp_grow_shared(&m->inputs, old, m->ninputs + 1,
		                    sizeof(*m->inputs), &cap) ||
		    tkp_grow_shared(&m->iheap, old, m->ninputs + 1,
		                    sizeof(*m->iheap), &cap))
			return NULL;
		m->inputs_cap = cap;
	}
	struct input *in = calloc(1, sizeof(*in));
	if (!in)
		return NULL;
	in->label = strdup(label ? label : "");
	in->buf = malloc(BATCH * sizeof(*in->buf));
	if (!in->label || !in->buf) {
		free(in->label);
		free(in->buf);
		free(in);
		return NULL;
	}
	in->r = r;
	in->offset = offset;
	in->spill_fd = -1;
	in->future = INT64_MIN;
	m->inputs[m->ninputs++] = in;
	return in;
}

TK_PUBLIC int
tk_merge_add(struct tk_merge *m, struct tk_reader *r, const char *label,
             int64_t offset)
{
	if (!m || !r)
		return TK_EINVAL;
	if (m->ninputs >= INT32_MAX || !new_input(m, r, label, offset)) {
		tk_reader_free(r);
		return nomem(m);
	}
	return (int)(m->ninputs - 1);
}

TK_PUBLIC int
tk_merge_set_chunks(struct tk_merge *m, int input,
                    const struct tk_scan_chunk *chunks, size_t n)
{
	if (!m || input < 0 || (size_t)input >= m->ninputs || (!chunks && n))
		return TK_EINVAL;
	struct input *in = m->inputs[input];
	free(in->chunk_off);
	free(in->chunk_later);
	in->chunk_off = malloc((n ? n : 1) * sizeof(*in->chunk_off));
	in->chunk_later = malloc((n ? n : 1) * sizeof(*in->chunk_later));
	if (!in->chunk_off || !in->chunk_later) {
		in->nchunks = 0;
		return nomem(m);
	}
	/* after chunk i come chunks i+1 ...: the earliest of their begins */
	int64_t later = INT64_MAX;
	for (size_t i = n; i-- > 0;) {
		in->chunk_off[i] = chunks[i].offset;
		in->chunk_later[i] = shift(later, in->offset);
		if (chunks[i].events && chunks[i].t_min < later)
			later = chunks[i].t_min;
	}
	in->nchunks = n;
	in->chunk_pos = 0;
	in->have_cur = 0;
	return TK_OK;
}

/* ---- definitions ---------------------------------------------------------- */

static int
map_set(uint32_t **map, size_t *cap, uint32_t id, uint32_t out)
{
	if (id >= *cap) {
		size_t old = *cap;
		uint32_t *p = tkp_grow(*map, cap, (size_t)id + 1, sizeof(*p));
		if (!p)
			return -1;
		memset(p + old, 0, (*cap - old) * sizeof(*p));
		*map = p;
	}
	(*map)[id] = out;
	return 0;
}

static uint32_t
map_get(const uint32_t *map, size_t cap, uint32_t id)
{
	return id < cap ? map[id] : 0;
}

/* Output string id of input string `id` (resolved text `s`). */
static uint32_t
map_string(struct tk_merge *m, struct input *in, uint32_t id, const char *s)
{
	if (id == 0)
		return 0;
	uint32_t out = map_get(in->smap, in->smap_cap, id);
	if (out)
		return out;
	out = tk_writer_cstring(m->out, s);
	if (!out)
		return 0;
	if (map_set(&in->smap, &in->smap_cap, id, out) < 0) {
		/* the merge's own memory: said here, as the output's
		 * failure would be said by the caller */
		nomem(m);
		return 0;
	}
	return out;
}

/* The output id already given to a definition with this identity, and
 * the slot where a new one is to be recorded. */
static uint32_t *
identity(struct tk_merge *m, const void *key, size_t len)
{
	int added;
	uint32_t id = tkp_intern(&m->idents, key, len, &added);
	if (!id)
		return NULL;
	if (id >= m->ident_cap) {
		size_t old = m->ident_cap;
		uint32_t *p = tkp_grow(m->ident_out, &m->ident_cap, (size_t)id + 1,
		                       sizeof(*p));
		if (!p)
			return NULL;
		memset(p + old, 0, (m->ident_cap - old) * sizeof(*p));
		m->ident_out = p;
	}
	return &m->ident_out[id];
}

/* Keys are packed little-endian so equal definitions compare equal. */
struct key {
	uint8_t b[64];
	size_t n;
	int unique;              /* identity incomplete: never shared */
};

static void
key_u64(struct key *k, uint64_t v)
{
	tkp_le64(k->b + k->n, v);
	k->n += 8;
}

static void
key_str(struct tk_merge *m, struct key *k, const char *s)
{
	key_u64(k, tk_writer_cstring(m->out, s));
}

/* Define track `t` of `in` in the output, or find it there. */
static int
remap_track(struct tk_merge *m, struct input *in, const struct tk_track *t)
{
	struct key k = { .n = 1 };
	/* an input redefining its own track (a thread renamed) is passed
	 * on; the same track seen again in another input is not */
	uint32_t mine = map_get(in->tmap, in->tmap_cap, t->id);
	uint32_t out = 0;
	enum tk_track_type type = t->type;
	struct tk_process p;
	struct tk_thread th;
	struct tk_stream s;
	struct tk_counter c;
	switch (type) {
	case TK_TRACK_PROCESS:
		p = t->u.process;
		if (in->label[0])
			p.label = in->label;
		p.start = p.start ? sat_add(p.start, in->offset) : 0;
		k.b[0] = 'P';
		key_str(m, &k, p.host);
		key_u64(&k, (uint64_t)p.pid);
		key_u64(&k, (uint64_t)p.start);
		key_str(m, &k, p.label);
		k.unique = p.start == 0;
		break;
	case TK_TRACK_THREAD:
		th = t->u.thread;
		th.process = map_get(in->tmap, in->tmap_cap, th.process);
		k.b[0] = 'T';
		key_u64(&k, th.process);
		key_u64(&k, (uint64_t)th.tid);
		k.unique = th.process == 0;
		break;
	case TK_TRACK_STREAM:
		s = t->u.stream;
		s.process = map_get(in->tmap, in->tmap_cap, s.process);
		s.device = map_get(in->dmap, in->dmap_cap, s.device);
		k.b[0] = 'S';
		key_u64(&k, s.process);
		key_u64(&k, s.device);
		key_u64(&k, s.context);
		key_u64(&k, s.stream);
		k.unique = s.process == 0;
		break;
	case TK_TRACK_COUNTER:
		c = t->u.counter;
		c.process = map_get(in->tmap, in->tmap_cap, c.process);
		c.device = map_get(in->dmap, in->dmap_cap, c.device);
		k.b[0] = 'C';
		key_str(m, &k, c.name);
		key_str(m, &k, c.unit);
		key_u64(&k, c.process);
		key_u64(&k, c.device);
		k.unique = c.process == 0 && c.device == 0;
		break;
	default:
		return TK_OK; /* a kind of track this library does not know */
	}
	uint32_t *slot = NULL;
	if (!k.unique && !(slot = identity(m, k.b, k.n)))
		return nomem(m);
	if (slot && *slot && *slot != mine) {
		out = *slot; /* the same thing, defined by another input */
	} else {
		/* new, or redefined by its own input */
		uint32_t id = slot && *slot ? *slot : k.unique ? mine : 0;
		switch (type) {
		case TK_TRACK_PROCESS: out = tk_writer_process(m->out, id, &p); break;
		case TK_TRACK_THREAD: out = tk_writer_thread(m->out, id, &th); break;
		case TK_TRACK_STREAM: out = tk_writer_stream(m->out, id, &s); break;
		default: out = tk_writer_counter(m->out, id, &c); break;
		}
		if (!out)
			return out_fail(m);
		if (slot)
			*slot = out;
	}
	if (map_set(&in->tmap, &in->tmap_cap, t->id, out) < 0)
		return nomem(m);
	return TK_OK;
}

static int
remap_device(struct tk_merge *m, struct input *in, const struct tk_device *d)
{
	static const uint8_t zero[16];
	struct key k = { .n = 1 };
	int has_uuid = memcmp(d->uuid, zero, 16) != 0;
	uint32_t mine = map_get(in->dmap, in->dmap_cap, d->id);
	uint32_t *slot = NULL, out;
	k.b[0] = 'D';
	key_str(m, &k, d->host);
	if (has_uuid) {
		memcpy(k.b + k.n, d->uuid, 16);
		k.n += 16;
	} else {
		key_u64(&k, d->index);
	}
	if ((has_uuid || d->host[0]) && !(slot = identity(m, k.b, k.n)))
		return nomem(m);
	if (slot && *slot && *slot != mine) {
		out = *slot;
	} else {
		out = tk_writer_device(m->out, slot && *slot ? *slot : mine, d);
		if (!out)
			return out_fail(m);
		if (slot)
			*slot = out;
	}
	if (map_set(&in->dmap, &in->dmap_cap, d->id, out) < 0)
		return nomem(m);
	return TK_OK;
}

static int
remap_category(struct tk_merge *m, const struct tk_category *c)
{
	struct key k = { .n = 1 };
	k.b[0] = 'K';
	key_str(m, &k, c->domain);
	key_u64(&k, c->category);
	key_str(m, &k, c->name);
	uint32_t *slot = identity(m, k.b, k.n);
	if (!slot)
		return nomem(m);
	if (*slot)
		return TK_OK; /* said already */
	if (tk_writer_category(m->out, c->domain, c->category, c->name))
		return out_fail(m);
	*slot = 1;
	return TK_OK;
}

/* Turn an event of `in`, in place, into one in output ids and output
 * time, with no pointer left into the input's reader but args. */
static int
remap_event(struct tk_merge *m, struct input *in, struct tk_event *ev)
{
	const char *name = ev->name;
	ev->trk = NULL;
	ev->name = NULL;
	if (!in->raw) {
		uint32_t name_id = ev->name_id;
		ev->track = map_get(in->tmap, in->tmap_cap, ev->track);
		ev->name_id = map_string(m, in, name_id, name);
		if (name_id && !ev->name_id)
			return out_fail(m);
		unsigned kind = ev->kind;
		for (unsigned i = 0; i < m->nstr_attrs[kind]; i++) {
			const struct tkp_attr *a = m->str_attrs[kind][i];
			const char *s = tkp_field_str(ev, a);
			uint32_t id = (uint32_t)tkp_field_get(ev, a);
			uint32_t out = map_string(m, in, id, s);
			if (id && !out)
				return out_fail(m);
			tkp_field_set(ev, a, out);
			tkp_field_set_str(ev, a, NULL);
		}
		/* the one attribute that names a track */
		if (kind == TK_RANGE || kind == TK_ASYNC_RANGE || kind == TK_MARK)
			ev->u.range.end_track = map_get(in->tmap, in->tmap_cap,
			                                ev->u.range.end_track);
	}
	if (in->offset) {
		ev->ts = sat_add(ev->ts, in->offset);
		if (ev->ts > INT64_MAX - ev->dur)
			ev->ts = INT64_MAX - ev->dur;
	}
	return TK_OK;
}

/* ---- inputs ------------------------------------------------------------------ */

static void
report(struct tk_merge *m, struct input *in, const char *msg)
{
	if (m->opt.warn)
		m->opt.warn(m->opt.warn_arg, tk_reader_name(in->r), msg);
}

static void
clear_maps(struct input *in)
{
	if (in->smap)
		memset(in->smap, 0, in->smap_cap * sizeof(*in->smap));
	if (in->tmap)
		memset(in->tmap, 0, in->tmap_cap * sizeof(*in->tmap));
	if (in->dmap)
		memset(in->dmap, 0, in->dmap_cap * sizeof(*in->dmap));
}

/* How far the chunks after the current one can go back, in output time:
 * from the scan when there is one, else the chunk's watermark. */
static int64_t
later_chunks(struct input *in, const struct tk_chunk_info *ci)
{
	if (in->have_cur && in->cur_chunk == ci->offset)
		return in->cur_later;
	int64_t later = shift(ci->watermark, in->offset);
	while (in->chunk_pos < in->nchunks &&
	       in->chunk_off[in->chunk_pos] < ci->offset)
		in->chunk_pos++;
	if (in->chunk_pos < in->nchunks &&
	    in->chunk_off[in->chunk_pos] == ci->offset)
		later = in->chunk_later[in->chunk_pos];
	in->cur_chunk = ci->offset;
	in->cur_later = later;
	in->have_cur = 1;
	return later;
}

/* The last k events of the batch, just filled from the reader's chunk
 * at hand: remapped, their args copied, their bounds set. */
static int
take_batch(struct tk_merge *m, struct input *in, uint32_t k)
{
	const struct tk_chunk_info *ci = tk_reader_chunk(in->r);
	int sorted = (ci->flags & TK_CHUNK_SORTED) != 0;
	int64_t t_min = shift(ci->t_min, in->offset);
	int64_t later = later_chunks(in, ci);
	for (unsigned i = in->n - k; i < in->n; i++) {
		struct ahead *a = &in->buf[i];
		int rc = remap_event(m, in, &a->ev);
		if (rc)
			return rc;
		a->args_off = (uint32_t)in->args.len;
		if (a->ev.args_len &&
		    tkp_buf_put(&in->args, a->ev.args, a->ev.args_len) < 0)
			return nomem(m);
		/* a sorted chunk bounds the rest of itself by the event, an
		 * unsorted one by its earliest begin */
		in->future = a->future = min64(sorted ? a->ev.ts : t_min, later);
	}
	return TK_OK;
}

/* Read ahead: fill the input's batch with its next events.  Stops early
 * at the end of the input, or when a feed reader needs more bytes. */
/* Tell the caller's progress function how far the inputs have been
 * read: after each batch of an input (not of a spill file). */
static void
report_progress(struct tk_merge *m, const struct input *in)
{
	if (!m->progress || in->raw)
		return;
	m->events_read += in->n;
	uint64_t bytes = 0;
	for (size_t i = 0; i < m->ninputs; i++)
		if (!m->inputs[i]->raw)
			bytes += tk_reader_chunk(m->inputs[i]->r)->offset;
	m->progress(m->progress_arg, bytes, m->events_read, m->stats.events);
}

static int
refill(struct tk_merge *m, struct input *in)
{
	struct tk_record rec;
	int rc;
	in->pos = in->n = 0;
	in->args.len = 0;
	while (in->n < BATCH && !in->eof) {
		/* the events of a decoded chunk straight into the batch */
		uint32_t k = tkp_reader_take_events(in->r, &in->buf[in->n].ev,
		                                    sizeof(struct ahead), BATCH - in->n);
		if (k) {
			in->n += k;
			if ((rc = take_batch(m, in, k)))
				return rc;
			continue;
		}
		rc = tk_reader_next(in->r, &rec);
		if (rc == TK_AGAIN) {
			/* every event of the chunks read is out: the last chunk's
			 * promise bounds the rest, even when that chunk held no
			 * event (a live writer's heartbeat) */
			int64_t later = later_chunks(in, tk_reader_chunk(in->r));
			if (later > in->future)
				in->future = later;
			break;
		}
		if (rc == TK_EOF) {
			in->eof = 1;
			break;
		}
		/* memory running out is not the input's fault: keep_going
		 * would drop the rest of a good input, and the caller would
		 * take the shorter output for a whole one */
		if (rc == TK_ENOMEM)
			return nomem(m);
		if (rc < 0) {
			m->stats.bad_inputs++;
			report(m, in, tk_reader_error(in->r));
			in->eof = 1;
			if (!m->opt.keep_going)
				return merge_fail(m, rc, tk_reader_errno(in->r), "%s: %s",
				                  tk_reader_name(in->r),
				                  tk_reader_error(in->r));
			break;
		}
		switch (rec.type) {
		case TK_REC_EVENT:
			in->buf[in->n++].ev = *rec.u.event;
			if ((rc = take_batch(m, in, 1)))
				return rc;
			break;
		case TK_REC_SCOPE:
			clear_maps(in);
			in->scopes++;
			in->future = INT64_MIN;
			in->have_cur = 0;
			break;
		case TK_REC_TRACK:
			if ((rc = remap_track(m, in, rec.u.track)))
				return rc;
			break;
		case TK_REC_DEVICE:
			if ((rc = remap_device(m, in, rec.u.device)))
				return rc;
			break;
		case TK_REC_META:
			if (tk_writer_meta(m->out, rec.u.meta->key, rec.u.meta->value))
				return out_fail(m);
			break;
		case TK_REC_CATEGORY:
			if ((rc = remap_category(m, rec.u.category)))
				return rc;
			break;
		}
	}
	/* Each bound must also cover the events read ahead after it (a
	 * concatenated trace, or a broken promise, may go back), and the
	 * args buffer has stopped moving. */
	int64_t after = INT64_MAX;
	for (unsigned i = in->n; i-- > 0;) {
		struct ahead *a = &in->buf[i];
		if (after < a->future)
			a->future = after;
		if (a->ev.ts < after)
			after = a->ev.ts;
		if (a->ev.args_len)
			a->ev.args = (const char *)in->args.p + a->args_off;
	}
	report_progress(m, in);
	return TK_OK;
}

/* No unwritten event of `in` begins before this. */
static int64_t
input_bound(const struct input *in)
{
	if (in->pos < in->n) {
		const struct ahead *a = &in->buf[in->pos];
		return min64(a->ev.ts, a->future);
	}
	return in->eof ? INT64_MAX : in->future;
}

/* ---- the input heap: inputs with events read ahead, by (bound, index) ---- */

static int
hent_less(const struct hent *a, const struct hent *b)
{
	return a->bound < b->bound || (a->bound == b->bound && a->idx < b->idx);
}

static void
iheap_down(struct tk_merge *m, size_t i)
{
	struct hent *h = m->iheap, e = h[i];
	size_t n = m->niheap;
	for (;;) {
		size_t l = 2 * i + 1, s = l;
		if (l >= n)
			break;
		if (l + 1 < n && hent_less(&h[l + 1], &h[l]))
			s = l + 1;
		if (!hent_less(&h[s], &e))
			break;
		h[i] = h[s];
		i = s;
	}
	h[i] = e;
}

static void
iheap_push(struct tk_merge *m, size_t idx)
{
	struct hent e = { input_bound(m->inputs[idx]), (uint32_t)idx };
	size_t i = m->niheap++;
	while (i > 0 && hent_less(&e, &m->iheap[(i - 1) / 2])) {
		m->iheap[i] = m->iheap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	m->iheap[i] = e;
	m->inputs[idx]->in_heap = 1;
}

static void
iheap_pop(struct tk_merge *m)
{
	m->inputs[m->iheap[0].idx]->in_heap = 0;
	if (--m->niheap) {
		m->iheap[0] = m->iheap[m->niheap];
		iheap_down(m, 0);
	}
}

/* ---- waiting events, by (ts, seq) ----------------------------------------------- */

static struct slot *
slot_alloc(struct tk_merge *m)
{
	if (!m->free_slots) {
		struct slot_block *b = malloc(sizeof(*b));
		if (!b)
			return NULL;
		b->next = m->blocks;
		m->blocks = b;
		for (size_t i = 0; i < SLOT_BLOCK; i++) {
			b->slots[i].u.next_free = m->free_slots;
			m->free_slots = &b->slots[i];
		}
	}
	struct slot *s = m->free_slots;
	m->free_slots = s->u.next_free;
	return s;
}

static void
slot_release(struct tk_merge *m, struct slot *s)
{
	m->held_bytes -= sizeof(*s) + sizeof(struct tkp_okey) + s->ev.args_len;
	free(s->u.args);
	s->u.next_free = m->free_slots;
	m->free_slots = s;
}

static int
wait_push(struct tk_merge *m, const struct tk_event *ev, uint32_t input)
{
	struct slot *s = slot_alloc(m);
	if (!s)
		return nomem(m);
	s->ev = *ev;
	s->input = input;
	s->u.args = NULL;
	m->held_bytes += sizeof(*s) + sizeof(struct tkp_okey) + ev->args_len;
	if (ev->args_len) {
		if (!(s->u.args = malloc(ev->args_len))) {
			slot_release(m, s);
			return nomem(m);
		}
		memcpy(s->u.args, ev->args, ev->args_len);
		s->ev.args = (const char *)s->u.args;
	}
	/* the arrival order breaks ties of ts: the queue keeps it */
	if (tkp_orderq_push(&m->wait, s->ev.ts, m->seq++, s) != 0) {
		slot_release(m, s);
		return nomem(m);
	}
	return TK_OK;
}

/* Promise the output's readers that nothing later begins before `t`. */
static void
promise(struct tk_merge *m, int64_t t)
{
	if (t > m->hold)
		t = m->hold;
	if (t > m->watermark) {
		m->watermark = t;
		tk_writer_watermark(m->out, t);
	}
}

static int
emit(struct tk_merge *m, const struct tk_event *ev, uint32_t input)
{
	if (ev->ts < m->last_written) {
		m->stats.late++;
		m->inputs[input]->late++;
	} else {
		m->last_written = ev->ts;
		promise(m, ev->ts);
	}
	if (tk_writer_event(m->out, ev) != TK_OK)
		return out_fail(m);
	m->stats.events++;
	return TK_OK;
}

/* Write every waiting event that begins no later than `upto`. */
static int
release(struct tk_merge *m, int64_t upto)
{
	const struct tkp_okey *k;
	while ((k = tkp_orderq_min(&m->wait)) && k->ts <= upto) {
		struct slot *s = tkp_orderq_pop(&m->wait);
		int rc = emit(m, &s->ev, s->input);
		slot_release(m, s);
		if (rc)
			return rc;
	}
	promise(m, upto);
	return TK_OK;
}

static int
open_spill_file(struct tk_merge *m)
{
	const char *dir = m->opt.tmpdir;
	if (!dir || !*dir)
		dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	char path[4096];
	snprintf(path, sizeof(path), "%s/tracekit-merge-XXXXXX", dir);
	int fd = mkstemp(path);
	if (fd < 0) {
		int e = errno;
		return merge_fail(m, TK_EIO, e,
		                  "cannot create a temporary file in %s: %s", dir,
		                  strerror(e));
	}
	unlink(path); /* nothing is left behind, even if we are killed */
	return fd;
}

/* A spill file that cannot be finished: reported (the writer's error,
 * unless something else failed first) and dropped. */
static int
spill_abandon(struct tk_merge *m, struct tk_writer *w, int fd, int rc)
{
	merge_fail(m, rc, tk_writer_errno(w), "temporary file: %s",
	           tk_writer_error(w));
	tk_writer_free(w);
	close(fd);
	return m->error.code;
}

/* A new spill file (*fd) and its writer: sorted, raw ids, fast; NULL
 * after reporting why not. */
static struct tk_writer *
spill_writer(struct tk_merge *m, int *fd)
{
	if ((*fd = open_spill_file(m)) < 0)
		return NULL;
	struct tk_writer_options wo = TK_WRITER_OPTIONS_INIT;
	wo.level = 1;
	wo.sorted = 1;
	wo.raw_ids = 1;
	wo.chunk_bytes = SPILL_CHUNK;
	struct tk_writer *w = tk_writer_new();
	int rc = w ? tk_writer_open_fd(w, *fd, "(spill)", &wo) : nomem(m);
	if (rc) {
		spill_abandon(m, w, *fd, rc);
		return NULL;
	}
	return w;
}

static void retire_spill(struct tk_merge *m, struct input *in);

/* Close the spill file's writer and make the file an input. */
static int
spill_input(struct tk_merge *m, struct tk_writer *w, int fd, unsigned level,
            uint64_t n)
{
	int rc = tk_writer_close(w);
	if (rc)
		return spill_abandon(m, w, fd, rc);
	tk_writer_free(w);
	struct tk_reader *r = tk_reader_new();
	if (!r) {
		rc = nomem(m);
	} else if (lseek(fd, 0, SEEK_SET) < 0) {
		int e = errno;
		rc = merge_fail(m, TK_EIO, e, "temporary file: %s", strerror(e));
	} else if ((rc = tk_reader_open_fd(r, fd, "(spill)"))) {
		/* the reader's own code: out of memory is not an I/O error */
		rc = merge_fail(m, rc, tk_reader_errno(r), "temporary file: %s",
		                tk_reader_error(r));
	}
	if (rc) {
		tk_reader_free(r);
		close(fd);
		return rc;
	}
	tkp_reader_set_raw(r, 1);
	struct input *in = new_input(m, r, "", 0);
	if (!in) {
		tk_reader_free(r);
		close(fd);
		return nomem(m);
	}
	in->raw = 1;
	in->spill_fd = fd;
	in->level = level;
	if (level == 0) {
		m->stats.spilled += n;
		m->stats.spill_files++;
	}
	if (++m->spills_open > m->stats.spill_open_max)
		m->stats.spill_open_max = m->spills_open;
	if ((rc = refill(m, in)))
		return rc;
	if (in->n)
		iheap_push(m, m->ninputs - 1);
	else
		retire_spill(m, in);
	return TK_OK;
}

/* A spill file read to the end: its reader's buffers and descriptor go
 * now, not at the end of the merge. */
static void
retire_spill(struct tk_merge *m, struct input *in)
{
	tk_reader_free(in->r);
	in->r = NULL;
	close(in->spill_fd);
	in->spill_fd = -1;
	free(in->buf);
	in->buf = NULL;
	tkp_buf_free(&in->args);
	in->pos = in->n = 0;
	in->eof = 1;
	in->in_heap = 0;
	m->spills_open--;
}

/* Merge the spill files of one level into one of the next, when there
 * are SPILL_FANIN of them: the files open (each a descriptor and a
 * reader's buffers) then grow with the logarithm of what was spilled,
 * not with it, and so does memory. */
static int
compact_spills(struct tk_merge *m, unsigned level)
{
	struct input *src[SPILL_FANIN];
	size_t ns = 0;
	for (size_t i = 0; i < m->ninputs && ns < SPILL_FANIN; i++) {
		struct input *in = m->inputs[i];
		if (in->raw && in->r && in->level == level)
			src[ns++] = in;
	}
	if (ns < SPILL_FANIN)
		return TK_OK;
	int fd;
	struct tk_writer *w = spill_writer(m, &fd);
	if (!w)
		return m->error.code;
	int rc;
	uint64_t n = 0;
	for (;;) {
		/* earliest first; ties in the order the files were made */
		struct input *first = NULL;
		for (size_t i = 0; i < ns; i++)
			if (src[i]->pos < src[i]->n &&
			    (!first || src[i]->buf[src[i]->pos].ev.ts <
			                       first->buf[first->pos].ev.ts))
				first = src[i];
		if (!first)
			break;
		if ((rc = tk_writer_event(w, &first->buf[first->pos++].ev)))
			return spill_abandon(m, w, fd, rc);
		n++;
		if (first->pos == first->n && !first->eof && (rc = refill(m, first)))
			return spill_abandon(m, w, fd, rc);
	}
	for (size_t i = 0; i < ns; i++)
		retire_spill(m, src[i]);
	/* the input heap loses the files merged */
	size_t k = 0;
	for (size_t i = 0; i < m->niheap; i++)
		if (m->inputs[m->iheap[i].idx]->r)
			m->iheap[k++] = m->iheap[i];
	m->niheap = k;
	for (size_t i = m->niheap / 2; i-- > 0;)
		iheap_down(m, i);
	if ((rc = spill_input(m, w, fd, level + 1, n)))
		return rc;
	return compact_spills(m, level + 1);
}

/* Move every waiting event, sorted, into a temporary file that becomes
 * an input. */
static int
spill(struct tk_merge *m)
{
	int fd;
	struct tk_writer *w = spill_writer(m, &fd);
	if (!w)
		return m->error.code;
	uint64_t n = 0;
	while (m->wait.n) {
		struct slot *s = tkp_orderq_pop(&m->wait);
		int rc = tk_writer_event(w, &s->ev);
		slot_release(m, s);
		if (rc)
			return spill_abandon(m, w, fd, rc);
		n++;
	}
	int rc = spill_input(m, w, fd, 0, n);
	return rc ? rc : compact_spills(m, 0);
}

/* ---- the loop ------------------------------------------------------------------ */

/* Lowest bound of the inputs that wait for bytes (not in the heap). */
static int64_t
waiting_bound(const struct tk_merge *m)
{
	int64_t t = INT64_MAX;
	for (size_t i = 0; i < m->ninputs; i++) {
		const struct input *in = m->inputs[i];
		if (!in->eof && !in->in_heap && in->future < t)
			t = in->future;
	}
	return t;
}

/* Take events until every input has run dry (or waits for bytes). */
static int
drain(struct tk_merge *m)
{
	int64_t waiting = waiting_bound(m);
	while (m->niheap) {
		/* nothing an input here holds can go out before a waiting
		 * input moves on: leave it where it is (in its reader, compact)
		 * rather than in memory, or spilled and read back again */
		if (m->iheap[0].bound > waiting)
			break;
		uint32_t idx = m->iheap[0].idx;
		struct input *in = m->inputs[idx];
		const struct tk_event *ev = &in->buf[in->pos++].ev;
		struct tk_event kept;
		int rc;
		if (in->pos == in->n) {
			/* the batch is used up: keep this event while the
			 * next ones are read over it */
			kept = *ev;
			if (kept.args_len) {
				m->scratch.len = 0;
				if (tkp_buf_put(&m->scratch, kept.args, kept.args_len) < 0)
					return nomem(m);
				kept.args = (const char *)m->scratch.p;
			}
			ev = &kept;
			if ((rc = refill(m, in)))
				return rc;
		}
		if (in->pos < in->n) {
			m->iheap[0].bound = input_bound(in);
			iheap_down(m, 0);
		} else {
			iheap_pop(m);
			if (!in->eof && in->future < waiting)
				waiting = in->future;
			if (in->raw && in->eof)
				retire_spill(m, in); /* read to the end; ev is a copy */
		}
		int64_t t = m->niheap ? m->iheap[0].bound : INT64_MAX;
		if (waiting < t)
			t = waiting;
		if (!m->wait.n && ev->ts <= t)
			rc = emit(m, ev, idx); /* in order already: straight out */
		else if (!(rc = wait_push(m, ev, idx)))
			rc = release(m, t);
		if (rc)
			return rc;
		if (m->held_bytes > m->opt.memory_limit && (rc = spill(m)))
			return rc;
	}
	return TK_OK;
}

TK_PUBLIC int
tk_merge_step(struct tk_merge *m)
{
	if (!m)
		return TK_EINVAL;
	if (m->error.code)
		return m->error.code;
	/* inputs with nothing read ahead: new, or waiting for bytes that
	 * may have been fed since */
	for (size_t i = 0; i < m->ninputs; i++) {
		struct input *in = m->inputs[i];
		if (in->eof || in->in_heap)
			continue;
		int rc = refill(m, in);
		if (rc)
			return rc;
		if (in->n)
			iheap_push(m, i);
	}
	int rc = drain(m);
	if (rc)
		return rc;
	return release(m, waiting_bound(m));
}

/* Name the inputs whose events came out of time order. */
static void
report_late(struct tk_merge *m)
{
	char msg[256];
	if (m->reported)
		return;
	m->reported = 1;
	for (size_t i = 0; i < m->ninputs; i++) {
		struct input *in = m->inputs[i];
		if (!in->late || in->raw)
			continue;
		snprintf(msg, sizeof(msg),
		         "%llu events out of time order (%s)",
		         (unsigned long long)in->late,
		         in->scopes ? "it holds concatenated traces, "
		                          "which can only be ordered when "
		                          "read from a file"
		                        : "it broke its watermark promises");
		report(m, in, msg);
	}
}

TK_PUBLIC int
tk_merge_run(struct tk_merge *m)
{
	int rc = tk_merge_step(m);
	if (rc)
		return rc;
	for (size_t i = 0; i < m->ninputs; i++)
		if (!m->inputs[i]->eof)
			return merge_fail(m, TK_EINVAL, EINVAL,
			                  "%s: input still waiting for data",
			                  tk_reader_name(m->inputs[i]->r));
	if ((rc = release(m, INT64_MAX)))
		return rc;
	report_late(m);
	return TK_OK;
}

TK_PUBLIC void
tk_merge_set_progress(struct tk_merge *m, tk_merge_progress_fn fn, void *arg)
{
	if (!m)
		return;
	m->progress = fn;
	m->progress_arg = arg;
}

TK_PUBLIC void
tk_merge_hold(struct tk_merge *m, int64_t t)
{
	if (m)
		m->hold = t;
}

TK_PUBLIC void
tk_merge_stats(const struct tk_merge *m, struct tk_merge_stats *s)
{
	if (m && s)
		*s = m->stats;
}

TK_PUBLIC const char *
tk_merge_error(const struct tk_merge *m)
{
	return m ? tkp_error_msg(&m->error) : "no error";
}

TK_PUBLIC int
tk_merge_errno(const struct tk_merge *m)
{
	return m ? m->error.errnum : 0;
}
