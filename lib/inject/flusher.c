/* SPDX-License-Identifier: MIT */
/*
 * The flusher: a thread that turns the records of every thread into
 * events and writes them into the spool, every flush interval, when
 * buffers fill, and at exit.
 *
 * A range is written when it ends, so its begin may be older than what
 * a chunk has already promised.  Each chunk's watermark is
 *
 *     min(now - interval, max(open_since, now - lag))
 *
 * where open_since is the earliest begin of a range still open: ranges
 * that stay open less than `lag` (10 intervals) come out in order, and
 * longer ones (an epoch, a whole run) do not hold every other event
 * back; they are written late, and the status page's open_since lets
 * trace-record keep its own output's watermarks honest.  "now -
 * interval" leaves time for a record whose clock was read before the
 * round but published after it.
 *
 * Commits: after each chunk it flushes, the flusher writes a snapshot
 * of its state into the durable buffer file (where each thread's
 * reading stands, the ranges still open, the ends seen before their
 * starts) and only then frees the blocks it has read.  Chunks are
 * flushed only there (the writer's own chunk size is set out of reach,
 * spool.c), and within a long round every COMMIT_RECORDS records or
 * COMMIT_BYTES bytes, so that a process that dies at any instant
 * leaves a spool and a snapshot that agree: trace-record converts the
 * rest from the snapshot on, nothing twice and nothing lost.
 */
#include <errno.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "intern.h"
#include "support.h"
#include "tbuf.h"

#define LAG_INTERVALS 10
#define COMMIT_RECORDS 16384u
#define COMMIT_BYTES (1u << 20)

/* An open push range at one level of one domain. */
struct open_entry {
	int present;
	int has_attrs;
	int64_t ts;
	uint32_t name;           /* id in `names` */
	struct tki_attrs attrs;
};

struct tki_open {            /* a domain's levels on one thread */
	struct open_entry *e;
	size_t cap;
	uint32_t top;            /* no entry at or above */
};

/* An open start/end range. */
struct async_entry {
	uint64_t id;             /* 0 = free slot */
	int64_t ts;
	uint32_t name;
	uint16_t domain;
	int has_attrs;
	struct tki_attrs attrs;
	struct tki_thread *thread;
	uint32_t track;
	int64_t tid;             /* of `track`, once the thread is gone */
};

static pthread_t thread;
static int running;
static sem_t wake, done, started;
/* Held while the thread works (between waits).  fork() takes it, so a
 * child is never made while the flusher is inside malloc or anything
 * else whose lock the child would inherit held; glibc's malloc guards
 * itself around fork, but other allocators (AddressSanitizer's among
 * them) do not. */
static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stop, final_requested;

/* names of ranges, for the life of the process: the writer's ids are
 * per scope, and an open range may outlive a scope */
static struct tkp_intern names;
static uint32_t *name_wid;       /* by name id: writer string id */
static size_t name_wid_cap;
static uint32_t name_wid_scope;
static uint32_t *reg_name;       /* registered string id -> name id */
static size_t reg_name_cap;
static uint32_t *domain_wid;     /* domain id -> writer string id */
static size_t domain_wid_cap;

static struct async_entry *async;
static uint32_t async_cap, async_used;
struct pending_end {
	uint64_t id;
	int64_t ts;
	uint32_t track;          /* of the thread it ended on */
	int64_t tid;
};
static struct pending_end *pending;
static uint32_t npending;
static size_t pending_cap;

/* the threads of the round, for the commits within it */
static struct tki_thread **round_threads;
static size_t round_n;
static uint32_t since_commit, since_commit_bytes;

static size_t category_cursor;
static uint32_t cursor_scope;
static int window_closed;
static int64_t last_round;

struct hook {
	void (*fn)(void *arg, int final);
	void *arg;
};
#define MAX_HOOKS 8
static struct hook hooks[MAX_HOOKS];
static atomic_int nhooks;
#define MAX_HOLDS 16
static atomic_llong holds[MAX_HOLDS];
static atomic_int nholds;

/* ---- names ------------------------------------------------------------------ */

static uint32_t
name_id(const char *s, size_t len)
{
	int added;
	return tkp_intern(&names, s, len, &added);
}

/* Makes index `i` of a table of ids valid; 0 when out of memory. */
static int
grow_u32(uint32_t **a, size_t *cap, uint32_t i)
{
	uint32_t *p = tkp_grow_zeroed(*a, cap, (size_t)i + 1, sizeof(*p));
	if (!p)
		return 0;
	*a = p;
	return 1;
}

/* Writer id of a name, in the current scope. */
static uint32_t
name_writer_id(uint32_t name)
{
	if (name_wid_scope != tki_scope) {
		if (name_wid)
			memset(name_wid, 0, name_wid_cap * sizeof(*name_wid));
		if (domain_wid)
			memset(domain_wid, 0, domain_wid_cap * sizeof(*domain_wid));
		name_wid_scope = tki_scope;
	}
	if (!name)
		return 0;
	if (!grow_u32(&name_wid, &name_wid_cap, name))
		return 0;
	if (!name_wid[name]) {
		uint32_t len;
		const char *s = tkp_intern_get(&names, name, &len);
		name_wid[name] = s ? tki_spool_string(s, len) : 0;
	}
	return name_wid[name];
}

static uint32_t
domain_writer_id(uint32_t domain)
{
	name_writer_id(0); /* resets the caches on a new scope */
	if (domain == 0 || !grow_u32(&domain_wid, &domain_wid_cap, domain))
		return 0;
	if (!domain_wid[domain]) {
		struct tki_domain *d = tki_domain_by_id(domain);
		if (d)
			domain_wid[domain] = tki_spool_string(d->name, strlen(d->name));
	}
	return domain_wid[domain];
}

/* Name id of a record's message. */
static uint32_t
message_name(const struct tki_msg *m)
{
	if (!m->string)
		return name_id((const char *)(m + 1), m->len);
	if (!grow_u32(&reg_name, &reg_name_cap, m->string))
		return 0;
	if (!reg_name[m->string]) {
		struct tki_string *s = tki_string_by_id(m->string);
		if (s)
			reg_name[m->string] = name_id(s->s, s->len);
	}
	return reg_name[m->string];
}

/* ---- events ----------------------------------------------------------------- */

static uint32_t
thread_track(struct tki_thread *t)
{
	if (!t->track || t->track_scope != tki_scope) {
		t->track = tki_spool_thread(t->tid, 0);
		t->track_scope = tki_scope;
	}
	return t->track;
}

static void
fill_attrs(struct tk_event *e, uint32_t domain, int has_attrs,
           const struct tki_attrs *a)
{
	e->u.range.domain_id = domain_writer_id(domain);
	if (!has_attrs)
		return;
	e->u.range.category = a->category;
	e->u.range.color = a->color;
	e->u.range.payload_type = a->payload_type;
	e->u.range.payload.u = a->payload;
}

static const char unfinished[] = "{\"unfinished\":true}";

static void
write_event(struct tk_event *e, int is_unfinished)
{
	if (is_unfinished) {
		e->args = unfinished;
		e->args_len = sizeof(unfinished) - 1;
	}
	if (tki_writer)
		tk_writer_event(tki_writer, e);
}

static void
emit_range(struct tki_thread *t, uint32_t domain, const struct open_entry *o,
           int64_t end, int is_unfinished)
{
	/* the recording window cuts what is still open at its end */
	if (end > tki_cfg.win_end) {
		end = tki_cfg.win_end;
		is_unfinished = 1;
	}
	struct tk_event e = { 0 };
	e.kind = TK_RANGE;
	e.track = thread_track(t);
	e.ts = o->ts;
	e.dur = end > o->ts ? end - o->ts : 0;
	e.name_id = name_writer_id(o->name);
	fill_attrs(&e, domain, o->has_attrs, &o->attrs);
	write_event(&e, is_unfinished);
}

static void
emit_async(const struct async_entry *a, uint32_t end_track, int64_t end,
           int is_unfinished)
{
	if (end > tki_cfg.win_end) {
		end = tki_cfg.win_end;
		is_unfinished = 1;
		end_track = 0;
	}
	struct tk_event e = { 0 };
	e.kind = TK_ASYNC_RANGE;
	e.track = a->thread ? thread_track(a->thread) : a->track;
	e.ts = a->ts;
	e.dur = end > a->ts ? end - a->ts : 0;
	e.name_id = name_writer_id(a->name);
	fill_attrs(&e, a->domain, a->has_attrs, &a->attrs);
	e.u.range.id = a->id;
	if (end_track != e.track)
		e.u.range.end_track = end_track;
	write_event(&e, is_unfinished);
}

/* ---- push/pop pairing ------------------------------------------------------------ */

static struct tki_open *
open_of(struct tki_thread *t, uint32_t domain)
{
	struct tki_open *a = tkp_grow_zeroed(t->open, &t->nopen, (size_t)domain + 1,
	                                     sizeof(*a));
	if (!a)
		return NULL;
	t->open = a;
	return &t->open[domain];
}

static void
on_push(struct tki_thread *t, const struct tki_rec *r, uint32_t level,
        const struct tki_attrs *a, uint32_t name)
{
	struct tki_open *o = open_of(t, r->domain);
	if (!o)
		return;
	struct open_entry *e = tkp_grow_zeroed(o->e, &o->cap, (size_t)level + 1,
	                                       sizeof(*e));
	if (!e)
		return;
	o->e = e;
	e = &o->e[level];
	/* a range still open at this level lost its pop (buffers were
	 * full): it ended before this one began */
	if (e->present)
		emit_range(t, r->domain, e, r->ts, 1);
	e->present = 1;
	e->ts = r->ts;
	e->name = name;
	e->has_attrs = a != NULL;
	if (a)
		e->attrs = *a;
	if (level + 1 > o->top)
		o->top = level + 1;
}

static void
on_pop(struct tki_thread *t, const struct tki_rec *r, uint32_t level)
{
	if (r->domain >= t->nopen)
		return;
	struct tki_open *o = &t->open[r->domain];
	/* levels above lost their pops */
	for (uint32_t l = o->top; l-- > level + 1;) {
		if (o->e[l].present) {
			emit_range(t, r->domain, &o->e[l], r->ts, 1);
			o->e[l].present = 0;
		}
	}
	if (level < o->top && o->e[level].present) {
		emit_range(t, r->domain, &o->e[level], r->ts, 0);
		o->e[level].present = 0;
	}
	if (o->top > level)
		o->top = level;
}

/* ---- start/end pairing: a hash table on the id --------------------------------- */

static uint32_t
async_home(uint64_t id)
{
	return (uint32_t)tkp_hash_u64(id);
}

static struct async_entry *
async_find(uint64_t id, int insert)
{
	if (insert && (async_used + 1) * 2 > async_cap) {
		uint32_t n = async_cap ? async_cap * 2 : 256;
		struct async_entry *a = calloc(n, sizeof(*a));
		if (!a)
			return NULL;
		for (uint32_t i = 0; i < async_cap; i++) {
			if (!async[i].id)
				continue;
			uint32_t h = async_home(async[i].id);
			while (a[h & (n - 1)].id)
				h++;
			a[h & (n - 1)] = async[i];
		}
		free(async);
		async = a;
		async_cap = n;
	}
	if (!async_cap)
		return NULL;
	uint32_t h = async_home(id);
	for (;; h++) {
		struct async_entry *e = &async[h & (async_cap - 1)];
		if (e->id == id)
			return e;
		if (!e->id) {
			if (!insert)
				return NULL;
			async_used++;
			e->id = id;
			return e;
		}
	}
}

static void
async_remove(struct async_entry *e)
{
	/* backward-shift deletion keeps probe chains whole */
	uint32_t mask = async_cap - 1;
	uint32_t i = (uint32_t)(e - async);
	e->id = 0;
	async_used--;
	for (uint32_t j = (i + 1) & mask; async[j].id; j = (j + 1) & mask) {
		uint32_t h = async_home(async[j].id) & mask;
		/* move j back to i if its home is not in (i, j] */
		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			async[i] = async[j];
			async[j].id = 0;
			i = j;
		}
	}
}

static void
on_start(struct tki_thread *t, const struct tki_rec *r, uint64_t id,
         const struct tki_attrs *a, uint32_t name)
{
	/* an end already seen (it was read first, from another thread) */
	for (uint32_t i = 0; i < npending; i++) {
		if (pending[i].id != id)
			continue;
		struct async_entry x = { id, r->ts, name, r->domain, a != NULL,
		                         { 0 }, t, 0, 0 };
		if (a)
			x.attrs = *a;
		emit_async(&x, pending[i].track, pending[i].ts, 0);
		pending[i] = pending[--npending];
		return;
	}
	struct async_entry *e = async_find(id, 1);
	if (!e)
		return;
	e->ts = r->ts;
	e->name = name;
	e->domain = r->domain;
	e->has_attrs = a != NULL;
	if (a)
		e->attrs = *a;
	e->thread = t;
	e->track = 0;
}

static void
on_end(struct tki_thread *t, const struct tki_rec *r, uint64_t id)
{
	struct async_entry *e = async_find(id, 0);
	if (e) {
		emit_async(e, thread_track(t), r->ts, 0);
		async_remove(e);
		return;
	}
	struct pending_end *p = tkp_grow(pending, &pending_cap,
	                                 (size_t)npending + 1, sizeof(*p));
	if (!p)
		return;
	pending = p;
	pending[npending++] = (struct pending_end){ id, r->ts, thread_track(t),
	                                            t->tid };
}

/* ---- draining a thread ---------------------------------------------------------- */

static void
on_record(struct tki_thread *t, const struct tki_rec *r)
{
	const uint8_t *p = (const uint8_t *)(r + 1);
	uint64_t id = 0;
	if (r->type == TKI_REC_START || r->type == TKI_REC_END) {
		memcpy(&id, p, 8);
		p += 8;
	}
	if (r->ts > t->last_ts)
		t->last_ts = r->ts;
	if (r->type == TKI_REC_END) {
		on_end(t, r, id);
		return;
	}
	uint32_t level;
	if (r->type == TKI_REC_POP) {
		memcpy(&level, p, 4);
		on_pop(t, r, level);
		return;
	}
	const struct tki_attrs *a = NULL;
	if (r->flags & TKI_F_ATTRS) {
		a = (const struct tki_attrs *)p;
		p += sizeof(*a);
	}
	const struct tki_msg *m = (const struct tki_msg *)p;
	uint32_t name = message_name(m);
	switch (r->type) {
	case TKI_REC_PUSH:
		on_push(t, r, m->level, a, name);
		break;
	case TKI_REC_START:
		on_start(t, r, id, a, name);
		break;
	case TKI_REC_MARK: {
		struct tk_event e = { 0 };
		e.kind = TK_MARK;
		e.track = thread_track(t);
		e.ts = r->ts;
		e.name_id = name_writer_id(name);
		fill_attrs(&e, r->domain, a != NULL, a);
		write_event(&e, 0);
		break;
	}
	}
}

static void commit_within_round(void);

/* Read what the thread published.  The blocks it has left are freed
 * at the next commit. */
static int
drain(struct tki_thread *t)
{
	int any = 0;
	for (;;) {
		struct tki_block *b = t->head;
		/* `next` first: once set, `used` is final */
		struct tki_block *next = tki_block_next(b);
		uint32_t used = atomic_load_explicit(&b->used, memory_order_acquire);
		while (t->rpos + sizeof(struct tki_rec) <= used) {
			const struct tki_rec *r = (const struct tki_rec *)(b->data + t->rpos);
			if (r->size < sizeof(*r) || t->rpos + r->size > used)
				break;
			on_record(t, r);
			t->rpos += r->size;
			any = 1;
			since_commit_bytes += r->size;
			if (++since_commit >= COMMIT_RECORDS ||
			    since_commit_bytes >= COMMIT_BYTES) {
				atomic_store_explicit(&b->read, t->rpos,
				                      memory_order_release);
				commit_within_round();
			}
		}
		atomic_store_explicit(&b->read, t->rpos, memory_order_release);
		if (!next || t->rpos < used)
			break;
		t->head = next;
		t->rpos = 0;
	}
	return any;
}

/* Earliest begin of a range still open. */
static int64_t
open_since(void)
{
	int64_t m = INT64_MAX;
	struct tki_thread **ts;
	size_t n = tki_threads_snapshot(&ts);
	for (size_t i = 0; i < n; i++) {
		struct tki_thread *t = ts[i];
		for (uint32_t d = 0; d < t->nopen; d++)
			for (uint32_t l = 0; l < t->open[d].top; l++)
				if (t->open[d].e[l].present && t->open[d].e[l].ts < m)
					m = t->open[d].e[l].ts;
	}
	free(ts);
	for (uint32_t i = 0; i < async_cap; i++)
		if (async[i].id && async[i].ts < m)
			m = async[i].ts;
	return m;
}

/* Write every range of a thread still open, as unfinished at `end`. */
static void
close_thread(struct tki_thread *t, int64_t end)
{
	for (uint32_t d = 0; d < t->nopen; d++) {
		struct tki_open *o = &t->open[d];
		for (uint32_t l = 0; l < o->top; l++) {
			if (!o->e[l].present)
				continue;
			emit_range(t, d, &o->e[l], end, 1);
			o->e[l].present = 0;
		}
		o->top = 0;
	}
}

static void
close_async(int64_t end, struct tki_thread *only)
{
	for (uint32_t i = 0; i < async_cap; i++) {
		struct async_entry *e = &async[i];
		if (!e->id || (only && e->thread != only))
			continue;
		if (only) {
			/* the thread goes away: the range may still end on
			 * another one; keep its track, not the thread */
			e->track = thread_track(only);
			e->tid = only->tid;
			e->thread = NULL;
			continue;
		}
		emit_async(e, 0, end, 1);
	}
	if (!only && async) {
		memset(async, 0, async_cap * sizeof(*async));
		async_used = 0;
		npending = 0;
	}
}

static void
write_category(void *arg, const char *domain, uint32_t category,
               const char *name)
{
	(void)arg;
	if (tki_writer)
		tk_writer_category(tki_writer, domain, category, name);
}

static void
write_dropped(struct tki_thread *t, int64_t from, int64_t to)
{
	uint64_t d = __atomic_load_n(t->dropped, __ATOMIC_RELAXED);
	if (d == t->dropped_seen || !tki_writer)
		return;
	struct tk_event e = { 0 };
	e.kind = TK_DROPPED;
	e.track = thread_track(t);
	e.ts = from;
	e.dur = to > from ? to - from : 0;
	e.name = "nvtx";
	e.u.dropped.count = d - t->dropped_seen;
	e.u.dropped.reason = "buffers full: the program recorded NVTX "
	                     "events faster than they could be written";
	t->dropped_seen = d;
	tki_spool_count_direct(1);
	tk_writer_event(tki_writer, &e);
}

void
tki_open_free(struct tki_thread *t)
{
	for (uint32_t d = 0; d < t->nopen; d++)
		free(t->open[d].e);
	free(t->open);
	t->open = NULL;
	t->nopen = 0;
}

/* ---- commits --------------------------------------------------------------------- */

static void
snap_name(struct tki_snap *e, uint32_t name, const char **s, uint32_t *len)
{
	(void)e;
	*len = 0;
	*s = name ? tkp_intern_get(&names, name, len) : NULL;
	if (!*s)
		*len = 0;
}

static void
snap_attrs(struct tki_snap *e, int has_attrs, const struct tki_attrs *a)
{
	e->has_attrs = (uint32_t)has_attrs;
	if (!has_attrs)
		return;
	e->category = a->category;
	e->color = a->color;
	e->payload_type = a->payload_type;
	e->payload = a->payload;
}

static void
snap_thread(struct tki_thread *t)
{
	if (t->slot < 0)
		return;
	struct tki_snap e = { 0 };
	e.kind = TKI_SNAP_THREAD;
	e.slot = (uint32_t)t->slot;
	e.serial = tki_buf_slot_serial(t->slot);
	e.block = t->retired ? 0 : tki_buf_index(t->head) + 1;
	e.pos = t->rpos;
	e.dropped_seen = t->dropped_seen;
	e.tid = t->tid;
	tki_buf_snap_add(&e, NULL, 0);
	for (uint32_t d = 0; d < t->nopen; d++) {
		for (uint32_t l = 0; l < t->open[d].top; l++) {
			const struct open_entry *o = &t->open[d].e[l];
			if (!o->present)
				continue;
			struct tki_snap p = { 0 };
			p.kind = TKI_SNAP_PUSH;
			p.tid = t->tid;
			p.ts = o->ts;
			p.domain = d;
			p.level = l;
			snap_attrs(&p, o->has_attrs, &o->attrs);
			const char *s;
			uint32_t len;
			snap_name(&p, o->name, &s, &len);
			tki_buf_snap_add(&p, s, len);
		}
	}
}

static void
snap_async(void)
{
	for (uint32_t i = 0; i < async_cap; i++) {
		const struct async_entry *a = &async[i];
		if (!a->id)
			continue;
		struct tki_snap e = { 0 };
		e.kind = TKI_SNAP_ASYNC;
		e.tid = a->thread ? a->thread->tid : a->tid;
		e.ts = a->ts;
		e.id = a->id;
		e.domain = a->domain;
		snap_attrs(&e, a->has_attrs, &a->attrs);
		const char *s;
		uint32_t len;
		snap_name(&e, a->name, &s, &len);
		tki_buf_snap_add(&e, s, len);
	}
	for (uint32_t i = 0; i < npending; i++) {
		struct tki_snap e = { 0 };
		e.kind = TKI_SNAP_PENDING;
		e.tid = pending[i].tid;
		e.ts = pending[i].ts;
		e.id = pending[i].id;
		tki_buf_snap_add(&e, NULL, 0);
	}
}

/* What the spool now holds is committed: say where every thread's
 * reading stands, then free the blocks read.  Lock held. */
static void
commit_state(void)
{
	tki_buf_snap_begin();
	for (size_t i = 0; i < round_n; i++)
		snap_thread(round_threads[i]);
	snap_async();
	tki_spool_commit();
	for (size_t i = 0; i < round_n; i++) {
		struct tki_thread *t = round_threads[i];
		while (t->keep != t->head) {
			struct tki_block *b = t->keep;
			t->keep = tki_block_next(b);
			tki_block_release(b);
		}
	}
	since_commit = since_commit_bytes = 0;
}

static void
commit_within_round(void)
{
	if (tki_writer && tk_writer_flush(tki_writer) == TK_OK)
		commit_state();
}

void
tki_flusher_round(int final)
{
	int64_t t0 = tki_now();
	pthread_mutex_lock(&tki_lock);
	if (!tki_writer) {
		if (!tki_spool_failed())
			atomic_store(&tki_on, 0);
		pthread_mutex_unlock(&tki_lock);
		return;
	}
	if (cursor_scope != tki_scope) {
		category_cursor = 0;
		cursor_scope = tki_scope;
	}
	tki_category_each(&category_cursor, write_category, NULL);

	struct tki_thread **ts;
	size_t n = tki_threads_snapshot(&ts);
	round_threads = ts;
	round_n = n;
	int64_t from = last_round ? last_round : t0;
	for (size_t i = 0; i < n; i++) {
		struct tki_thread *t = ts[i];
		int exited = atomic_load_explicit(&t->exited, memory_order_acquire);
		if (drain(t) && !exited) /* it may have renamed itself */
			t->track = tki_spool_thread(t->tid, 1);
		write_dropped(t, from, t0);
		if (exited) {
			close_thread(t, t->exit_ts ? t->exit_ts : t0);
			close_async(t0, t);
			t->retired = 1;  /* freed once this is committed */
		}
	}

	/* the end of the recording window: what is open ends there */
	if (!window_closed && t0 >= tki_cfg.win_end) {
		for (size_t i = 0; i < n; i++)
			close_thread(ts[i], tki_cfg.win_end);
		close_async(tki_cfg.win_end, NULL);
		window_closed = 1;
	}
	int written;     /* the spool holds the round: its threads' blocks can go */
	if (final) {
		for (size_t i = 0; i < n; i++)
			close_thread(ts[i], t0);
		close_async(t0, NULL);
		written = tki_spool_close() == 0;
		if (written)
			tki_buf_closed();
	} else {
		int64_t open = open_since();
		int64_t lag = LAG_INTERVALS * tki_cfg.flush_ns;
		int64_t w = open > t0 - lag ? open : t0 - lag;
		if (w > t0 - tki_cfg.flush_ns)
			w = t0 - tki_cfg.flush_ns;
		int64_t h = tki_holds_min();
		if (h < w)
			w = h;
		if (open > h)
			open = h;
		written = tki_spool_flush(w, open) == 0;
		if (written)
			commit_state();
	}
	/* a thread that ended is forgotten only once the spool has all of
	 * it; else its slot stays, and recovery reads it from the last
	 * commit */
	for (size_t i = 0; i < n; i++)
		if (ts[i]->retired && written)
			tki_thread_free(ts[i]);
	free(ts);
	round_threads = NULL;
	round_n = 0;
	last_round = t0;
	pthread_mutex_unlock(&tki_lock);
}

/* ---- the thread ----------------------------------------------------------------- */

/* One wake-up's work; 0 when the thread should end. */
static int
flusher_turn(void)
{
	if (atomic_load(&final_requested)) {
		tki_run_flush_hooks(1);
		tki_flusher_round(1);
		atomic_store(&tki_on, 0);
		sem_post(&done);
		return 0;
	}
	if (atomic_load(&stop))
		return 0;
	tki_run_flush_hooks(0);
	tki_flusher_round(0);
	if (!tki_recorder_alive()) {
		/* trace-record was killed: nobody reads the spool */
		tki_stop_orphaned();
		pthread_mutex_lock(&tki_lock);
		tki_spool_abandon(1);
		pthread_mutex_unlock(&tki_lock);
		return 0;
	}
	return 1;
}

static void *
flusher_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "tracekit-flush");
	sem_post(&started);
	for (;;) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		int64_t ns = (int64_t)until.tv_nsec + tki_cfg.flush_ns;
		until.tv_sec += ns / 1000000000;
		until.tv_nsec = ns % 1000000000;
		while (sem_timedwait(&wake, &until) < 0 && errno == EINTR)
			;
		pthread_mutex_lock(&busy);
		int go_on = flusher_turn();
		pthread_mutex_unlock(&busy);
		if (!go_on)
			break;
	}
	return NULL;
}

int
tki_flusher_start(void)
{
	atomic_store(&stop, 0);
	atomic_store(&final_requested, 0);
	window_closed = 0;
	last_round = 0;
	if (sem_init(&wake, 0, 0) < 0 || sem_init(&done, 0, 0) < 0 ||
	    sem_init(&started, 0, 0) < 0)
		return -1;
	/* the program's signals are not for this thread */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&thread, NULL, flusher_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	/* until the thread runs its own code, it may be inside the
	 * allocator (thread start-up): no fork before that */
	while (sem_wait(&started) < 0 && errno == EINTR)
		;
	running = 1;
	return 0;
}

void
tki_flusher_fork_prepare(void)
{
	pthread_mutex_lock(&busy);
}

void
tki_flusher_fork_release(void)
{
	pthread_mutex_unlock(&busy);
}

void
tki_flusher_wake(void)
{
	int v;
	if (running && sem_getvalue(&wake, &v) == 0 && v == 0)
		sem_post(&wake);
}

void
tki_flusher_finish(void)
{
	atomic_store(&tki_on, 0);
	if (running) {
		atomic_store(&stop, 1);
		sem_post(&wake);
		/* a flusher stuck on a full disk must not hang the exit */
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 5;
		if (pthread_timedjoin_np(thread, NULL, &until) != 0)
			return;
		running = 0;
	}
	tki_run_flush_hooks(1);
	tki_flusher_round(1);
}

void
tki_flusher_finish_async(int64_t timeout_ns)
{
	if (!running || atomic_exchange(&final_requested, 1))
		return;
	sem_post(&wake);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	int64_t ns = (int64_t)until.tv_nsec + timeout_ns;
	until.tv_sec += ns / 1000000000;
	until.tv_nsec = ns % 1000000000;
	while (sem_timedwait(&done, &until) < 0 && errno == EINTR)
		;
}

void
tki_flusher_after_fork(void)
{
	pthread_mutex_init(&busy, NULL);
	running = 0;
	tkp_intern_free(&names);
	memset(&names, 0, sizeof(names));
	free(name_wid);
	free(reg_name);
	free(domain_wid);
	name_wid = reg_name = domain_wid = NULL;
	name_wid_cap = reg_name_cap = domain_wid_cap = 0;
	free(async);
	async = NULL;
	async_cap = async_used = 0;
	free(pending);
	pending = NULL;
	npending = pending_cap = 0;
	category_cursor = 0;
	cursor_scope = 0;
}

/* ---- hooks and holds, for other event sources ------------------------------------ */

void
tki_on_flush(void (*fn)(void *arg, int final), void *arg)
{
	int i = atomic_fetch_add(&nhooks, 1);
	if (i >= MAX_HOOKS) {
		atomic_fetch_sub(&nhooks, 1);
		return;
	}
	hooks[i].arg = arg;
	hooks[i].fn = fn;
}

void
tki_run_flush_hooks(int final)
{
	int n = atomic_load(&nhooks);
	for (int i = 0; i < n && i < MAX_HOOKS; i++)
		if (hooks[i].fn)
			hooks[i].fn(hooks[i].arg, final);
}

int
tki_hold_new(void)
{
	int i = atomic_fetch_add(&nholds, 1);
	if (i >= MAX_HOLDS) {
		atomic_fetch_sub(&nholds, 1);
		return -1;
	}
	atomic_store(&holds[i], INT64_MAX);
	return i;
}

void
tki_hold_set(int h, int64_t t)
{
	if (h >= 0 && h < MAX_HOLDS)
		atomic_store(&holds[h], t);
}

int64_t
tki_holds_min(void)
{
	int64_t m = INT64_MAX;
	int n = atomic_load(&nholds);
	for (int i = 0; i < n && i < MAX_HOLDS; i++) {
		int64_t v = atomic_load(&holds[i]);
		if (v < m)
			m = v;
	}
	return m;
}
