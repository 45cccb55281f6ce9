/* SPDX-License-Identifier: MIT */
/*
 * Merging traces into one stream ordered by begin time.
 *
 * Each input keeps its next event (the head, already remapped into the
 * output's ids) and a bound: no event it has not handed over yet begins
 * before it.  The bound comes from the input's chunks: a sorted chunk
 * bounds the rest of itself by the head, an unsorted one by its earliest
 * begin, and every chunk bounds the chunks after it by its watermark.
 * The merge always takes the head of the input with the lowest bound,
 * and writes every waiting event that begins no later than the lowest
 * bound of all.  Sorted inputs so flow straight through; unsorted ones
 * wait in a heap, and when that outgrows the memory limit it is written,
 * sorted, to an unlinked temporary file that becomes one more (sorted)
 * input.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "intern.h"
#include "reader_private.h"
#include "tk_private.h"

#define DEFAULT_LIMIT (256u << 20)
#define SLOT_BLOCK 4096

/* An event waiting in the heap. */
struct slot {
	struct tk_event ev;      /* output ids; pointers cleared */
	uint64_t seq;            /* arrival order, for ties */
	union {
		uint8_t *args;   /* owned copy of ev.args */
		struct slot *next_free;
	} u;
};

struct slot_block {
	struct slot_block *next;
	struct slot slots[SLOT_BLOCK];
};

struct input {
	struct tk_reader *r;
	char *label;
	int64_t offset;
	int raw;                 /* a spill file: ids are the output's */
	int spill_fd;
	int done;
	int waiting;             /* feed mode: no complete chunk to read */
	int has_head;
	struct tk_event head;
	struct tkp_buf head_args;
	int64_t bound;           /* no unwritten event of this input begins earlier */
	int64_t future;          /* the same, for the events after the head */
	int heap_pos;            /* in the input heap, -1 if not there */
	/* id maps of the input's current scope: input id -> output id */
	uint32_t *smap, *tmap, *dmap;
	uint32_t smap_cap, tmap_cap, dmap_cap;
};

struct tk_merge {
	struct tk_writer *out;
	struct tk_merge_options opt;
	char errmsg[512];
	int err;

	struct input **inputs;
	size_t ninputs, inputs_cap;
	/* inputs that have a head, as a min-heap on (bound, index) */
	size_t *iheap;
	size_t niheap;

	/* waiting events: a min-heap on (ts, seq) */
	struct slot **heap;
	size_t nheap, heap_cap;
	struct slot_block *blocks;
	struct slot *free_slots;
	size_t held_bytes;
	uint64_t seq;

	/* identity of output definitions, for deduplication */
	struct tkp_intern idents;
	uint32_t *ident_out;     /* by identity id: output track or device id */
	uint32_t ident_cap;

	int64_t last_written;
	int64_t hold;            /* watermarks promised go no further */
	struct tk_merge_stats stats;
};

static int merge_fail(struct tk_merge *m, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int
merge_fail(struct tk_merge *m, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->errmsg, sizeof(m->errmsg), fmt, ap);
	va_end(ap);
	m->err = code;
	return code;
}

static int
out_fail(struct tk_merge *m)
{
	return merge_fail(m, TK_EIO, "output: %s", tk_writer_error(m->out));
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
	m->hold = INT64_MAX;
	return m;
}

static void
free_input(struct input *in)
{
	tk_reader_free(in->r);
	if (in->spill_fd >= 0)
		close(in->spill_fd);
	free(in->label);
	tkp_buf_free(&in->head_args);
	free(in->smap);
	free(in->tmap);
	free(in->dmap);
	free(in);
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
	for (size_t i = 0; i < m->nheap; i++)
		free(m->heap[i]->u.args);
	free(m->heap);
	while (m->blocks) {
		struct slot_block *b = m->blocks->next;
		free(m->blocks);
		m->blocks = b;
	}
	tkp_intern_free(&m->idents);
	free(m->ident_out);
	free(m);
}

static struct input *
new_input(struct tk_merge *m, struct tk_reader *r, const char *label,
          int64_t offset)
{
	if (m->ninputs == m->inputs_cap) {
		size_t cap = m->inputs_cap ? m->inputs_cap * 2 : 16;
		struct input **a = realloc(m->inputs, cap * sizeof(*a));
		size_t *h = realloc(m->iheap, cap * sizeof(*h));
		if (a)
			m->inputs = a;
		if (h)
			m->iheap = h;
		if (!a || !h)
			return NULL;
		m->inputs_cap = cap;
	}
	struct input *in = calloc(1, sizeof(*in));
	if (!in || !(in->label = strdup(label ? label : ""))) {
		free(in);
		return NULL;
	}
	in->r = r;
	in->offset = offset;
	in->spill_fd = -1;
	in->bound = in->future = INT64_MIN;
	in->heap_pos = -1;
	m->inputs[m->ninputs++] = in;
	return in;
}

TK_PUBLIC int
tk_merge_add(struct tk_merge *m, struct tk_reader *r, const char *label,
             int64_t offset)
{
	if (!m || !r)
		return TK_EINVAL;
	if (!new_input(m, r, label, offset)) {
		tk_reader_free(r);
		return merge_fail(m, TK_ENOMEM, "out of memory");
	}
	return (int)(m->ninputs - 1);
}

/* ---- definitions ---------------------------------------------------------- */

static int
map_set(uint32_t **map, uint32_t *cap, uint32_t id, uint32_t out)
{
	if (id >= *cap) {
		uint32_t n = *cap ? *cap : 64;
		while (n <= id)
			n *= 2;
		uint32_t *p = realloc(*map, n * sizeof(*p));
		if (!p)
			return -1;
		memset(p + *cap, 0, (n - *cap) * sizeof(*p));
		*map = p;
		*cap = n;
	}
	(*map)[id] = out;
	return 0;
}

static uint32_t
map_get(const uint32_t *map, uint32_t cap, uint32_t id)
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
	if (!out || map_set(&in->smap, &in->smap_cap, id, out) < 0)
		return 0;
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
		uint32_t n = m->ident_cap ? m->ident_cap * 2 : 256;
		while (n <= id)
			n *= 2;
		uint32_t *p = realloc(m->ident_out, n * sizeof(*p));
		if (!p)
			return NULL;
		memset(p + m->ident_cap, 0, (n - m->ident_cap) * sizeof(*p));
		m->ident_out = p;
		m->ident_cap = n;
	}
	return &m->ident_out[id];
}

/* Keys are packed little-endian so equal definitions compare equal. */
struct key {
	uint8_t b[64];
	size_t n;
};

static void
key_u64(struct key *k, uint64_t v)
{
	tkp_le64(k->b + k->n, v);
	k->n += 8;
}

static int
remap_track(struct tk_merge *m, struct input *in, const struct tk_track *t)
{
	struct key k = { .n = 1 };
	uint32_t out = 0, *slot;
	/* an input redefining its own track (a thread renamed) is passed
	 * on; the same track seen again in another input is not */
	int redefined = map_get(in->tmap, in->tmap_cap, t->id) != 0;
	switch (t->type) {
	case TK_TRACK_PROCESS: {
		struct tk_process p = t->u.process;
		if (in->label[0])
			p.label = in->label;
		p.start = p.start ? sat_add(p.start, in->offset) : 0;
		k.b[0] = 'P';
		key_u64(&k, tk_writer_cstring(m->out, p.host));
		key_u64(&k, (uint64_t)p.pid);
		key_u64(&k, (uint64_t)p.start);
		if (!(slot = identity(m, k.b, k.n)))
			return merge_fail(m, TK_ENOMEM, "out of memory");
		if (*slot && !redefined && !in->label[0]) {
			out = *slot; /* the same process from another input */
			break;
		}
		out = tk_writer_process(m->out, *slot, &p);
		break;
	}
	case TK_TRACK_THREAD: {
		struct tk_thread th = t->u.thread;
		th.process = map_get(in->tmap, in->tmap_cap, th.process);
		k.b[0] = 'T';
		key_u64(&k, th.process);
		key_u64(&k, (uint64_t)th.tid);
		if (!(slot = identity(m, k.b, k.n)))
			return merge_fail(m, TK_ENOMEM, "out of memory");
		if (*slot && !redefined) {
			out = *slot;
			break;
		}
		out = tk_writer_thread(m->out, *slot, &th);
		break;
	}
	case TK_TRACK_STREAM: {
		struct tk_stream s = t->u.stream;
		s.process = map_get(in->tmap, in->tmap_cap, s.process);
		s.device = map_get(in->dmap, in->dmap_cap, s.device);
		k.b[0] = 'S';
		key_u64(&k, s.process);
		key_u64(&k, s.device);
		key_u64(&k, s.context);
		key_u64(&k, s.stream);
		if (!(slot = identity(m, k.b, k.n)))
			return merge_fail(m, TK_ENOMEM, "out of memory");
		if (*slot && !redefined) {
			out = *slot;
			break;
		}
		out = tk_writer_stream(m->out, *slot, &s);
		break;
	}
	case TK_TRACK_COUNTER: {
		struct tk_counter c = t->u.counter;
		c.process = map_get(in->tmap, in->tmap_cap, c.process);
		c.device = map_get(in->dmap, in->dmap_cap, c.device);
		k.b[0] = 'C';
		key_u64(&k, tk_writer_cstring(m->out, c.name));
		key_u64(&k, tk_writer_cstring(m->out, c.unit));
		key_u64(&k, c.process);
		key_u64(&k, c.device);
		if (!(slot = identity(m, k.b, k.n)))
			return merge_fail(m, TK_ENOMEM, "out of memory");
		if (*slot && !redefined) {
			out = *slot;
			break;
		}
		out = tk_writer_counter(m->out, *slot, &c);
		break;
	}
	default:
		return TK_OK; /* a kind of track this library does not know */
	}
	if (!out)
		return out_fail(m);
	*slot = out;
	if (map_set(&in->tmap, &in->tmap_cap, t->id, out) < 0)
		return merge_fail(m, TK_ENOMEM, "out of memory");
	return TK_OK;
}

static int
remap_device(struct tk_merge *m, struct input *in, const struct tk_device *d)
{
	static const uint8_t zero[16];
	struct key k = { .n = 1 };
	k.b[0] = 'D';
	key_u64(&k, tk_writer_cstring(m->out, d->host));
	if (memcmp(d->uuid, zero, 16) != 0) {
		memcpy(k.b + k.n, d->uuid, 16);
		k.n += 16;
	} else {
		key_u64(&k, d->index);
	}
	uint32_t *slot = identity(m, k.b, k.n);
	if (!slot)
		return merge_fail(m, TK_ENOMEM, "out of memory");
	uint32_t out = tk_writer_device(m->out, *slot, d);
	if (!out)
		return out_fail(m);
	*slot = out;
	if (map_set(&in->dmap, &in->dmap_cap, d->id, out) < 0)
		return merge_fail(m, TK_ENOMEM, "out of memory");
	return TK_OK;
}

/* Turn an event of `in` into one in output ids and output time. */
static int
remap_event(struct tk_merge *m, struct input *in, const struct tk_event *src,
            struct tk_event *dst)
{
	*dst = *src;
	dst->trk = NULL;
	if (in->raw) {
		dst->name = NULL;
	} else {
		dst->track = map_get(in->tmap, in->tmap_cap, src->track);
		dst->name_id = map_string(m, in, src->name_id, src->name);
		dst->name = NULL;
		if (src->name_id && !dst->name_id)
			return out_fail(m);
		const struct tkp_kind_schema *ks = &tkp_schema[src->kind];
		for (unsigned i = 0; i < ks->n; i++) {
			const struct tkp_attr *a = &ks->attrs[i];
			if (a->enc != TKP_ENC_STR)
				continue;
			const char *s;
			memcpy(&s, (const char *)src + a->str_off, sizeof(s));
			uint32_t id = (uint32_t)tkp_field_get(src, a);
			uint32_t out = map_string(m, in, id, s);
			if (id && !out)
				return out_fail(m);
			tkp_field_set(dst, a, out);
			s = NULL;
			memcpy((char *)dst + a->str_off, &s, sizeof(s));
		}
		/* the one attribute that names a track */
		if (src->kind == TK_RANGE || src->kind == TK_ASYNC_RANGE ||
		    src->kind == TK_MARK)
			dst->u.range.end_track = map_get(in->tmap, in->tmap_cap,
			                                 src->u.range.end_track);
	}
	dst->ts = sat_add(src->ts, in->offset);
	if (dst->ts > INT64_MAX - dst->dur)
		dst->ts = INT64_MAX - dst->dur;
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

/* Read the next event of `in` into its head.  TK_OK, TK_EOF (the input
 * is done), TK_AGAIN (feed input waiting), or an error. */
static int
pull(struct tk_merge *m, struct input *in)
{
	struct tk_record rec;
	in->has_head = 0;
	for (;;) {
		int rc = tk_reader_next(in->r, &rec);
		if (rc == TK_AGAIN) {
			/* every event of the chunks read is out: the last chunk's
			 * watermark bounds the rest, even when that chunk held
			 * no event (a live writer's heartbeat) */
			int64_t w = sat_add(tk_reader_chunk(in->r)->watermark,
			                    in->offset);
			if (w > in->future)
				in->future = w;
			in->waiting = 1;
			in->bound = in->future;
			return TK_AGAIN;
		}
		if (rc == TK_EOF) {
			in->done = 1;
			in->bound = in->future = INT64_MAX;
			return TK_EOF;
		}
		if (rc < 0) {
			m->stats.bad_inputs++;
			report(m, in, tk_reader_error(in->r));
			in->done = 1;
			in->bound = in->future = INT64_MAX;
			if (m->opt.keep_going)
				return TK_EOF;
			return merge_fail(m, rc, "%s: %s", tk_reader_name(in->r),
			                  tk_reader_error(in->r));
		}
		in->waiting = 0;
		switch (rec.type) {
		case TK_REC_EVENT: {
			const struct tk_event *e = rec.u.event;
			if ((rc = remap_event(m, in, e, &in->head)))
				return rc;
			if (e->args) {
				in->head_args.len = 0;
				if (tkp_buf_put(&in->head_args, e->args, e->args_len) < 0)
					return merge_fail(m, TK_ENOMEM, "out of memory");
				in->head.args = (const char *)in->head_args.p;
			}
			const struct tk_chunk_info *ci = tk_reader_chunk(in->r);
			int64_t rest = (ci->flags & TK_CHUNK_SORTED) ? e->ts : ci->t_min;
			int64_t future = rest < ci->watermark ? rest : ci->watermark;
			in->future = sat_add(future, in->offset);
			in->bound = in->head.ts < in->future ? in->head.ts : in->future;
			in->has_head = 1;
			return TK_OK;
		}
		case TK_REC_SCOPE:
			clear_maps(in);
			in->future = INT64_MIN;
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
			if (tk_writer_category(m->out, rec.u.category->domain,
			                       rec.u.category->category,
			                       rec.u.category->name))
				return out_fail(m);
			break;
		}
	}
}

/* ---- the input heap: inputs with a head, by (bound, index) ------------------ */

static int
input_less(struct tk_merge *m, size_t a, size_t b)
{
	const struct input *x = m->inputs[a], *y = m->inputs[b];
	if (x->bound != y->bound)
		return x->bound < y->bound;
	return a < b;
}

static void
iheap_swap(struct tk_merge *m, size_t i, size_t j)
{
	size_t t = m->iheap[i];
	m->iheap[i] = m->iheap[j];
	m->iheap[j] = t;
	m->inputs[m->iheap[i]]->heap_pos = (int)i;
	m->inputs[m->iheap[j]]->heap_pos = (int)j;
}

static void
iheap_fix(struct tk_merge *m, size_t i)
{
	while (i > 0 && input_less(m, m->iheap[i], m->iheap[(i - 1) / 2])) {
		iheap_swap(m, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, s = i;
		if (l < m->niheap && input_less(m, m->iheap[l], m->iheap[s]))
			s = l;
		if (r < m->niheap && input_less(m, m->iheap[r], m->iheap[s]))
			s = r;
		if (s == i)
			break;
		iheap_swap(m, i, s);
		i = s;
	}
}

static void
iheap_push(struct tk_merge *m, size_t idx)
{
	m->iheap[m->niheap] = idx;
	m->inputs[idx]->heap_pos = (int)m->niheap;
	m->niheap++;
	iheap_fix(m, m->niheap - 1);
}

static void
iheap_remove_top(struct tk_merge *m)
{
	m->inputs[m->iheap[0]]->heap_pos = -1;
	m->niheap--;
	if (m->niheap) {
		m->iheap[0] = m->iheap[m->niheap];
		m->inputs[m->iheap[0]]->heap_pos = 0;
		iheap_fix(m, 0);
	}
}

/* ---- waiting events: a heap on (ts, seq) ------------------------------------- */

static int
slot_less(const struct slot *a, const struct slot *b)
{
	if (a->ev.ts != b->ev.ts)
		return a->ev.ts < b->ev.ts;
	return a->seq < b->seq;
}

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
	m->held_bytes -= sizeof(*s) + s->ev.args_len;
	free(s->u.args);
	s->u.next_free = m->free_slots;
	m->free_slots = s;
}

static int
heap_push(struct tk_merge *m, const struct tk_event *ev)
{
	if (m->nheap == m->heap_cap) {
		size_t cap = m->heap_cap ? m->heap_cap * 2 : 1024;
		struct slot **h = realloc(m->heap, cap * sizeof(*h));
		if (!h)
			return merge_fail(m, TK_ENOMEM, "out of memory");
		m->heap = h;
		m->heap_cap = cap;
	}
	struct slot *s = slot_alloc(m);
	if (!s)
		return merge_fail(m, TK_ENOMEM, "out of memory");
	s->ev = *ev;
	s->seq = m->seq++;
	s->u.args = NULL;
	if (ev->args_len) {
		if (!(s->u.args = malloc(ev->args_len))) {
			s->u.next_free = m->free_slots;
			m->free_slots = s;
			return merge_fail(m, TK_ENOMEM, "out of memory");
		}
		memcpy(s->u.args, ev->args, ev->args_len);
		s->ev.args = (const char *)s->u.args;
	}
	m->held_bytes += sizeof(*s) + ev->args_len;
	size_t i = m->nheap++;
	while (i > 0 && slot_less(s, m->heap[(i - 1) / 2])) {
		m->heap[i] = m->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	m->heap[i] = s;
	return TK_OK;
}

static struct slot *
heap_pop(struct tk_merge *m)
{
	struct slot *top = m->heap[0];
	struct slot *last = m->heap[--m->nheap];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, s = l;
		if (l >= m->nheap)
			break;
		if (r < m->nheap && slot_less(m->heap[r], m->heap[l]))
			s = r;
		if (!slot_less(m->heap[s], last))
			break;
		m->heap[i] = m->heap[s];
		i = s;
	}
	if (m->nheap)
		m->heap[i] = last;
	return top;
}

static int
emit(struct tk_merge *m, const struct tk_event *ev)
{
	if (ev->ts < m->last_written)
		m->stats.late++;
	else
		m->last_written = ev->ts;
	if (tk_writer_event(m->out, ev) != TK_OK)
		return out_fail(m);
	m->stats.events++;
	return TK_OK;
}

/* Write every waiting event that begins no later than `upto`. */
static int
release(struct tk_merge *m, int64_t upto)
{
	while (m->nheap && m->heap[0]->ev.ts <= upto) {
		struct slot *s = heap_pop(m);
		int rc = emit(m, &s->ev);
		slot_release(m, s);
		if (rc)
			return rc;
	}
	tk_writer_watermark(m->out, upto < m->hold ? upto : m->hold);
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
	if (fd < 0)
		return merge_fail(m, TK_EIO, "cannot create a temporary file in %s: %s",
		                  dir, strerror(errno));
	unlink(path); /* nothing is left behind, even if we are killed */
	return fd;
}

/* Move every waiting event, sorted, into a temporary file that becomes
 * an input. */
static int
spill(struct tk_merge *m)
{
	int fd = open_spill_file(m);
	if (fd < 0)
		return m->err;
	struct tk_writer_options wo = TK_WRITER_OPTIONS_INIT;
	wo.level = 1;
	wo.sorted = 1;
	wo.raw_ids = 1;
	wo.chunk_bytes = 1u << 20;
	struct tk_writer *w = tk_writer_new();
	struct tk_reader *r = tk_reader_new();
	int rc = TK_ENOMEM;
	if (!w || !r)
		goto fail;
	if ((rc = tk_writer_open_fd(w, fd, "(spill)", &wo)))
		goto fail_write;
	uint64_t n = 0;
	while (m->nheap) {
		struct slot *s = heap_pop(m);
		rc = tk_writer_event(w, &s->ev);
		slot_release(m, s);
		if (rc)
			goto fail_write;
		n++;
	}
	if ((rc = tk_writer_close(w)))
		goto fail_write;
	tk_writer_free(w);
	w = NULL;
	if (lseek(fd, 0, SEEK_SET) < 0 || tk_reader_open_fd(r, fd, "(spill)")) {
		rc = merge_fail(m, TK_EIO, "temporary file: %s", strerror(errno));
		goto fail;
	}
	tkp_reader_set_raw(r, 1);
	struct input *in = new_input(m, r, "", 0);
	if (!in) {
		rc = merge_fail(m, TK_ENOMEM, "out of memory");
		goto fail;
	}
	in->raw = 1;
	in->spill_fd = fd;
	m->stats.spilled += n;
	m->stats.spill_files++;
	rc = pull(m, in);
	if (rc == TK_OK)
		iheap_push(m, m->ninputs - 1);
	return rc < 0 ? rc : TK_OK;
fail_write:
	merge_fail(m, rc, "temporary file: %s", tk_writer_error(w));
fail:
	tk_writer_free(w);
	tk_reader_free(r);
	close(fd);
	return m->err ? m->err : rc;
}

/* ---- the loop ------------------------------------------------------------------ */

/* Lowest bound of the inputs still going: nothing earlier can come. */
static int64_t
threshold(struct tk_merge *m)
{
	int64_t t = m->niheap ? m->inputs[m->iheap[0]]->bound : INT64_MAX;
	for (size_t i = 0; i < m->ninputs; i++) {
		const struct input *in = m->inputs[i];
		if (!in->done && in->waiting && in->bound < t)
			t = in->bound;
	}
	return t;
}

static int
start_inputs(struct tk_merge *m)
{
	for (size_t i = 0; i < m->ninputs; i++) {
		struct input *in = m->inputs[i];
		if (in->done || in->has_head || in->heap_pos >= 0)
			continue;
		int rc = pull(m, in);
		if (rc < 0)
			return rc;
		if (rc == TK_OK)
			iheap_push(m, i);
	}
	return TK_OK;
}

/* Take heads until every input with one has run dry (or waits). */
static int
drain(struct tk_merge *m)
{
	int64_t waiting_bound = INT64_MAX;
	for (size_t i = 0; i < m->ninputs; i++) {
		const struct input *in = m->inputs[i];
		if (!in->done && in->waiting && in->bound < waiting_bound)
			waiting_bound = in->bound;
	}
	struct tk_event ev;
	while (m->niheap) {
		size_t idx = m->iheap[0];
		struct input *in = m->inputs[idx];
		/* nothing an input here holds can go out before a waiting
		 * input moves on: leave it where it is (in its reader, compact)
		 * rather than in memory, or spilled and read back again */
		if (in->bound > waiting_bound)
			break;
		ev = in->head;
		/* the head's args live in the input's buffer: keep them */
		uint8_t small[256], *args = NULL;
		if (ev.args_len) {
			args = ev.args_len <= sizeof(small) ? small : malloc(ev.args_len);
			if (!args)
				return merge_fail(m, TK_ENOMEM, "out of memory");
			memcpy(args, ev.args, ev.args_len);
			ev.args = (const char *)args;
		}
		int rc = pull(m, in);
		if (rc == TK_OK)
			iheap_fix(m, (size_t)in->heap_pos);
		else
			iheap_remove_top(m);
		if (rc == TK_AGAIN && in->bound < waiting_bound)
			waiting_bound = in->bound;
		int64_t t = m->niheap ? m->inputs[m->iheap[0]]->bound : INT64_MAX;
		if (waiting_bound < t)
			t = waiting_bound;
		if (rc >= 0) {
			if (!m->nheap && ev.ts <= t)
				rc = emit(m, &ev); /* in order already: straight out */
			else if (!(rc = heap_push(m, &ev)))
				rc = release(m, t);
		}
		if (args && args != small)
			free(args);
		if (rc < 0)
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
	if (m->err)
		return m->err;
	/* waiting inputs may have been fed */
	for (size_t i = 0; i < m->ninputs; i++)
		if (m->inputs[i]->waiting)
			m->inputs[i]->has_head = 0;
	int rc = start_inputs(m);
	if (rc)
		return rc;
	if ((rc = drain(m)))
		return rc;
	return release(m, threshold(m));
}

TK_PUBLIC int
tk_merge_run(struct tk_merge *m)
{
	int rc = tk_merge_step(m);
	if (rc)
		return rc;
	for (size_t i = 0; i < m->ninputs; i++)
		if (!m->inputs[i]->done)
			return merge_fail(m, TK_EINVAL,
			                  "%s: input still waiting for data",
			                  tk_reader_name(m->inputs[i]->r));
	return release(m, INT64_MAX);
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
	return m && m->errmsg[0] ? m->errmsg : "no error";
}
