/* SPDX-License-Identifier: MIT */
/*
 * Recovery: what a process wrote before it died without its last flush
 * (_exit, SIGKILL, a crash, exec), read from its durable buffer file
 * (<pid>-<ns>.buf, protocol.h) and converted as its flusher would have.
 *
 * The flusher's last committed snapshot says where each thread's
 * reading stood when the spool's last chunk was written, which ranges
 * were open then and which ends had come before their starts; from
 * there every thread's records, up to what it published, are paired
 * and written into our own writer on the process's tracks (the merge
 * makes them one with the spool's).  The file was written by the
 * recorded program, which may have scribbled on it: every offset and
 * size is checked before use, and what does not hold is left out (and
 * counted as lost by the caller).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record.h"
#include "inject/protocol.h"
#include "support.h"
#include "tracekit.h"

struct rname {               /* a name of the names log */
	uint32_t kind;
	uint64_t a, b;
	const char *s;
	uint32_t len;
};

struct ropen {               /* an open range: push (level) or start (id) */
	int64_t tid;
	uint32_t domain, level;
	uint64_t id;
	int64_t ts;
	const char *name;
	uint32_t name_len;
	int has_attrs;
	struct tki_attrs attrs;
	int pending_end;         /* an end seen before its start */
	int64_t end_tid;
};

struct rtrack {
	int64_t tid;
	uint32_t id;
};

struct rec_recovery {
	const uint8_t *map;
	size_t size;
	const struct tki_buf_head *h;
	struct rname *names;
	size_t nnames, names_cap;
	struct ropen *open;      /* push ranges and async ones, one table */
	size_t nopen, open_cap;
	struct rtrack *tracks;
	size_t ntracks, tracks_cap;
	uint8_t *read_units;     /* a bit per unit of the file: block read */
	uint64_t file_units;     /* units the file holds past blocks_off */
	uint32_t proc_track;
	int64_t end;             /* when the process died */
	uint64_t events;         /* written that the process had counted */
	const char *full_why;    /* the reason of records dropped, or NULL */
};

static const char unfinished[] = "{\"unfinished\":true}";

static int
in_file(const struct rec_recovery *r, uint64_t off, uint64_t len)
{
	return off <= r->size && len <= r->size - off;
}

/* ---- names ------------------------------------------------------------------------ */

static void
read_names(struct rec_recovery *r)
{
	const struct tki_buf_head *h = r->h;
	uint64_t len = __atomic_load_n(&h->names_len, __ATOMIC_ACQUIRE);
	if (len > h->names_cap || !in_file(r, h->names_off, len))
		return;
	const uint8_t *p = r->map + h->names_off;
	for (uint64_t at = 0; at + sizeof(struct tki_buf_name) <= len;) {
		struct tki_buf_name n;
		memcpy(&n, p + at, sizeof(n));
		uint64_t next = at + sizeof(n) + tki_pad8(n.len);
		if (n.len > len || next > len)
			return;
		struct rname *a = tkp_grow(r->names, &r->names_cap, r->nnames + 1,
		                           sizeof(*a));
		if (!a)
			rec_die("out of memory");
		r->names = a;
		r->names[r->nnames++] = (struct rname){ n.kind, n.a, n.b,
		                                        (const char *)p + at + sizeof(n),
		                                        n.len };
		at = next;
	}
}

/* The last name of this kind and key; NULL if none. */
static const struct rname *
name_of(const struct rec_recovery *r, uint32_t kind, uint64_t a)
{
	for (size_t i = r->nnames; i-- > 0;)
		if (r->names[i].kind == kind && r->names[i].a == a)
			return &r->names[i];
	return NULL;
}

static uint32_t
string_id(const char *s, uint32_t len)
{
	return tk_writer_string(rec_self(), s ? s : "", s ? len : 0);
}

static uint32_t
domain_id(const struct rec_recovery *r, uint32_t domain)
{
	const struct rname *n = domain ? name_of(r, TKI_NAME_DOMAIN, domain) : NULL;
	return n ? string_id(n->s, n->len) : 0;
}

/* ---- tracks ------------------------------------------------------------------------ */

/* The thread slots, or NULL when the file is too short to hold them. */
static const struct tki_buf_thread *
thread_slots(const struct rec_recovery *r)
{
	const struct tki_buf_head *h = r->h;
	if (!in_file(r, h->thread_off,
	             (uint64_t)TKI_BUF_THREADS * sizeof(struct tki_buf_thread)))
		return NULL;
	return (const struct tki_buf_thread *)(r->map + h->thread_off);
}

/* The kernel's name of thread `tid` when it attached, from its slot
 * (a slot it took); "" when none has it. */
static void
slot_comm(const struct rec_recovery *r, int64_t tid, char *buf, size_t n)
{
	buf[0] = 0;
	const struct tki_buf_thread *slots = thread_slots(r);
	if (!slots)
		return;
	for (uint32_t i = 0; i < TKI_BUF_THREADS; i++) {
		if (slots[i].tid != tid || !slots[i].serial)
			continue;
		size_t len = strnlen(slots[i].name, sizeof(slots[i].name));
		if (len >= n)
			len = n - 1;
		memcpy(buf, slots[i].name, len);
		buf[len] = 0;
	}
}

/* A thread's track, defined on first use.  A range still open at the
 * last commit may end (and so be written) before the thread's own
 * records are read: its name is looked up here, not passed in. */
static uint32_t
thread_track(struct rec_recovery *r, int64_t tid)
{
	for (size_t i = 0; i < r->ntracks; i++)
		if (r->tracks[i].tid == tid)
			return r->tracks[i].id;
	char name[64] = "";
	const struct rname *n = name_of(r, TKI_NAME_THREAD, (uint64_t)tid);
	if (n)
		snprintf(name, sizeof(name), "%.*s", (int)n->len, n->s);
	else
		slot_comm(r, tid, name, sizeof(name));
	struct tk_thread th = { r->proc_track, tid, name };
	uint32_t id = tk_writer_thread(rec_self(), 0, &th);
	struct rtrack *a = tkp_grow(r->tracks, &r->tracks_cap, r->ntracks + 1,
	                            sizeof(*a));
	if (!a)
		rec_die("out of memory");
	r->tracks = a;
	r->tracks[r->ntracks++] = (struct rtrack){ tid, id };
	return id;
}

/* ---- events ------------------------------------------------------------------------ */

static void
emit(struct rec_recovery *r, const struct ropen *o, int64_t end,
     int64_t end_tid, int is_unfinished, int async)
{
	if (end > r->h->win_end) {
		end = r->h->win_end;
		is_unfinished = 1;
		end_tid = 0;
	}
	struct tk_event e = { 0 };
	e.kind = async ? TK_ASYNC_RANGE : TK_RANGE;
	e.track = thread_track(r, o->tid);
	e.ts = o->ts;
	e.dur = end > o->ts ? end - o->ts : 0;
	e.name_id = string_id(o->name, o->name_len);
	e.u.range.domain_id = domain_id(r, o->domain);
	if (o->has_attrs) {
		e.u.range.category = o->attrs.category;
		e.u.range.color = o->attrs.color;
		e.u.range.payload_type = o->attrs.payload_type;
		e.u.range.payload.u = o->attrs.payload;
	}
	if (async) {
		e.u.range.id = o->id;
		uint32_t et = end_tid ? thread_track(r, end_tid) : 0;
		if (et != e.track)
			e.u.range.end_track = et;
	}
	if (is_unfinished) {
		e.args = unfinished;
		e.args_len = sizeof(unfinished) - 1;
	}
	if (tk_writer_event(rec_self(), &e) != TK_OK)
		rec_die("%s", tk_writer_error(rec_self()));
	r->events++;
}

static struct ropen *
open_add(struct rec_recovery *r)
{
	struct ropen *a = tkp_grow(r->open, &r->open_cap, r->nopen + 1, sizeof(*a));
	if (!a)
		rec_die("out of memory");
	r->open = a;
	struct ropen *o = &r->open[r->nopen++];
	memset(o, 0, sizeof(*o));
	return o;
}

static void
open_remove(struct rec_recovery *r, struct ropen *o)
{
	*o = r->open[--r->nopen];
}

static struct ropen *
find_push(struct rec_recovery *r, int64_t tid, uint32_t domain, uint32_t level)
{
	for (size_t i = 0; i < r->nopen; i++) {
		struct ropen *o = &r->open[i];
		if (!o->id && !o->pending_end && o->tid == tid &&
		    o->domain == domain && o->level == level)
			return o;
	}
	return NULL;
}

static struct ropen *
find_async(struct rec_recovery *r, uint64_t id, int pending_end)
{
	for (size_t i = 0; i < r->nopen; i++)
		if (r->open[i].id == id && r->open[i].pending_end == pending_end)
			return &r->open[i];
	return NULL;
}

/* The name of a push, mark or start record. */
static void
message_name(const struct rec_recovery *r, const struct tki_msg *m,
             const char **s, uint32_t *len)
{
	*s = "";
	*len = 0;
	if (!m->string) {
		*s = (const char *)(m + 1);
		*len = m->len;
		return;
	}
	const struct rname *n = name_of(r, TKI_NAME_STRING, m->string);
	if (n) {
		*s = n->s;
		*len = n->len;
	}
}

static void
on_push(struct rec_recovery *r, struct ropen *x)
{
	struct ropen *o = find_push(r, x->tid, x->domain, x->level);
	if (o) {             /* its pop was lost to full buffers */
		emit(r, o, x->ts, 0, 1, 0);
		*o = *x;
		return;
	}
	*open_add(r) = *x;
}

static void
on_pop(struct rec_recovery *r, int64_t tid, uint32_t domain, uint32_t level,
       int64_t ts)
{
	for (size_t i = 0; i < r->nopen;) {
		struct ropen *o = &r->open[i];
		if (o->id || o->pending_end || o->tid != tid || o->domain != domain ||
		    o->level < level) {
			i++;
			continue;
		}
		emit(r, o, ts, 0, o->level != level, 0);
		open_remove(r, o);
	}
}

static void
on_start(struct rec_recovery *r, struct ropen *x)
{
	struct ropen *p = find_async(r, x->id, 1);
	if (p) {
		emit(r, x, p->ts, p->end_tid, 0, 1);
		open_remove(r, p);
		return;
	}
	*open_add(r) = *x;
}

static void
on_end(struct rec_recovery *r, uint64_t id, int64_t tid, int64_t ts)
{
	struct ropen *o = find_async(r, id, 0);
	if (o) {
		emit(r, o, ts, tid, 0, 1);
		open_remove(r, o);
		return;
	}
	struct ropen *p = open_add(r);
	p->id = id;
	p->pending_end = 1;
	p->end_tid = tid;
	p->ts = ts;
}

/* One record of a thread; 0 when it does not hold together. */
static int
on_record(struct rec_recovery *r, int64_t tid, const uint8_t *p, uint32_t size)
{
	struct tki_rec h;
	memcpy(&h, p, sizeof(h));
	const uint8_t *q = p + sizeof(h), *lim = p + size;
	uint64_t id = 0;
	if (h.type == TKI_REC_START || h.type == TKI_REC_END) {
		if (lim - q < 8)
			return 0;
		memcpy(&id, q, 8);
		q += 8;
	}
	if (h.type == TKI_REC_END) {
		on_end(r, id, tid, h.ts);
		return 1;
	}
	if (h.type == TKI_REC_POP) {
		struct tki_pop pop;
		if (lim - q < (long)sizeof(pop))
			return 0;
		memcpy(&pop, q, sizeof(pop));
		on_pop(r, tid, h.domain, pop.level, h.ts);
		return 1;
	}
	struct ropen x = { 0 };
	x.tid = tid;
	x.domain = h.domain;
	x.ts = h.ts;
	x.id = id;
	if (h.flags & TKI_F_ATTRS) {
		if (lim - q < (long)sizeof(x.attrs))
			return 0;
		memcpy(&x.attrs, q, sizeof(x.attrs));
		x.has_attrs = 1;
		q += sizeof(x.attrs);
	}
	struct tki_msg m;
	if (lim - q < (long)sizeof(m))
		return 0;
	memcpy(&m, q, sizeof(m));
	if (!m.string && m.len > (uint64_t)(lim - q) - sizeof(m))
		return 0;
	message_name(r, (const struct tki_msg *)q, &x.name, &x.name_len);
	x.level = m.level;
	switch (h.type) {
	case TKI_REC_PUSH:
		on_push(r, &x);
		return 1;
	case TKI_REC_START:
		on_start(r, &x);
		return 1;
	case TKI_REC_MARK: {
		struct tk_event e = { 0 };
		e.kind = TK_MARK;
		e.track = thread_track(r, tid);
		e.ts = x.ts;
		e.name_id = string_id(x.name, x.name_len);
		e.u.range.domain_id = domain_id(r, x.domain);
		if (x.has_attrs) {
			e.u.range.category = x.attrs.category;
			e.u.range.color = x.attrs.color;
			e.u.range.payload_type = x.attrs.payload_type;
			e.u.range.payload.u = x.attrs.payload;
		}
		if (tk_writer_event(rec_self(), &e) != TK_OK)
			rec_die("%s", tk_writer_error(rec_self()));
		r->events++;
		return 1;
	}
	}
	return 0;
}

/* ---- blocks ------------------------------------------------------------------------ */

static const struct tki_block *
block_at(const struct rec_recovery *r, uint32_t index)
{
	const struct tki_buf_head *h = r->h;
	if (index >= h->nunits)
		return NULL;
	uint64_t off = h->blocks_off + (uint64_t)index * TKI_BUF_UNIT;
	if (!in_file(r, off, TKI_BUF_UNIT))
		return NULL;
	const struct tki_block *b = (const struct tki_block *)(r->map + off);
	uint64_t units = b->units ? b->units : 1;
	if (index + units > h->nunits ||
	    (uint64_t)b->cap + sizeof(*b) > units * TKI_BUF_UNIT)
		return NULL;
	return b;
}

/* Whether block `index` was read before, marking it read: a `next`
 * scribbled into a cycle, or into another thread's chain, would
 * otherwise write the same records again. */
static int
read_before(struct rec_recovery *r, uint32_t index)
{
	if (!r->read_units) {
		r->read_units = calloc(r->file_units / 8 + 1, 1);
		if (!r->read_units)
			rec_die("out of memory");
	}
	uint8_t bit = (uint8_t)(1u << (index % 8));
	if (r->read_units[index / 8] & bit)
		return 1;
	r->read_units[index / 8] |= bit;
	return 0;
}

/* A thread's records from block `index` (+1), offset `pos`, on. */
static void
read_thread(struct rec_recovery *r, int64_t tid, uint32_t index, uint32_t pos)
{
	thread_track(r, tid);
	while (index) {
		const struct tki_block *b = block_at(r, index - 1);
		/* block_at: index - 1 < file_units */
		if (!b || read_before(r, index - 1))
			return;
		uint32_t next = atomic_load_explicit(&((struct tki_block *)b)->next,
		                                     memory_order_acquire);
		uint32_t used = atomic_load_explicit(&((struct tki_block *)b)->used,
		                                     memory_order_acquire);
		if (used > b->cap)
			return;
		while (pos + sizeof(struct tki_rec) <= used) {
			struct tki_rec h;
			memcpy(&h, b->data + pos, sizeof(h));
			if (h.size < sizeof(h) || h.size > used - pos || h.size % 8 ||
			    !on_record(r, tid, b->data + pos, h.size))
				return;
			pos += h.size;
		}
		index = next;
		pos = 0;
	}
}

/* ---- the snapshot ------------------------------------------------------------------ */

struct rthread {             /* a thread's committed position */
	uint32_t slot, serial, block, pos;
	uint64_t dropped_seen;
};

/* The committed snapshot's threads into *out, their count in *n; -1
 * when there is one but it cannot be read (offsets, a length or an
 * entry scribbled on): then where each thread's reading stood is
 * unknown, and reading from the start would write again what the
 * spool already has. */
static int
read_snapshot(struct rec_recovery *r, struct rthread **out, size_t *count)
{
	const struct tki_buf_head *h = r->h;
	*out = NULL;
	*count = 0;
	uint32_t cur = __atomic_load_n(&h->snap_cur, __ATOMIC_ACQUIRE);
	if (cur > 1)
		return 0;        /* none committed yet: the spool has nothing */
	uint64_t len = h->snap_len[cur];
	if (len > h->snap_cap || !in_file(r, h->snap_off[cur], len))
		return -1;
	const uint8_t *p = r->map + h->snap_off[cur];
	struct rthread *ts = NULL;
	size_t n = 0, cap = 0;
	for (uint64_t at = 0; at + sizeof(struct tki_snap) <= len;) {
		struct tki_snap e;
		memcpy(&e, p + at, sizeof(e));
		uint64_t next = at + sizeof(e) + tki_pad8(e.len);
		if (e.len > len || next > len) {
			/* as unreadable as a scribbled length: a thread
			 * whose entry is lost would be read from its first
			 * record */
			free(ts);
			return -1;
		}
		struct ropen x = { 0 };
		x.tid = e.tid;
		x.ts = e.ts;
		x.domain = e.domain;
		x.level = e.level;
		x.name = (const char *)p + at + sizeof(e);
		x.name_len = e.len;
		x.has_attrs = e.has_attrs != 0;
		x.attrs = (struct tki_attrs){ e.category, e.color, e.payload_type,
		                              0, e.payload };
		if (e.kind == TKI_SNAP_THREAD) {
			struct rthread *a = tkp_grow(ts, &cap, n + 1, sizeof(*a));
			if (!a)
				rec_die("out of memory");
			ts = a;
			ts[n++] = (struct rthread){ e.slot, e.serial, e.block, e.pos,
			                            e.dropped_seen };
		} else if (e.kind == TKI_SNAP_PUSH) {
			*open_add(r) = x;
		} else if (e.kind == TKI_SNAP_ASYNC && e.id) {
			x.id = e.id;
			*open_add(r) = x;
		} else if (e.kind == TKI_SNAP_PENDING && e.id) {
			on_end(r, e.id, e.tid, e.ts);
		}
		at = next;
	}
	*out = ts;
	*count = n;
	return 0;
}

/* ---- the process -------------------------------------------------------------------- */

static void
write_dropped(struct rec_recovery *r, int64_t tid, uint64_t count, int64_t from)
{
	if (!count)
		return;
	struct tk_event e = { 0 };
	e.kind = TK_DROPPED;
	e.track = thread_track(r, tid);
	e.ts = from;
	e.dur = r->end > from ? r->end - from : 0;
	e.name = "nvtx";
	e.u.dropped.count = count;
	e.u.dropped.reason = r->full_why ? r->full_why :
	                     "buffers full: the program recorded NVTX "
	                     "events faster than they could be written";
	if (tk_writer_event(rec_self(), &e) != TK_OK)
		rec_die("%s", tk_writer_error(rec_self()));
}

/* The CUDA activity CUPTI had not delivered when the process died
 * (protocol.h): counted in its callbacks as it was issued, never seen
 * since.  Nothing when CUPTI was not active: both counts stay 0. */
static void
cuda_undelivered(struct rec_recovery *r, int64_t from)
{
	for (unsigned k = 0; k < TKI_CUDA_COUNTED; k++) {
		uint64_t issued = __atomic_load_n(&r->h->cuda_issued[k], __ATOMIC_RELAXED);
		uint64_t delivered = __atomic_load_n(&r->h->cuda_delivered[k],
		                                     __ATOMIC_RELAXED);
		if (issued <= delivered)
			continue;
		struct tk_event e = { 0 };
		e.kind = TK_DROPPED;
		e.track = r->proc_track;
		e.ts = from;
		e.dur = r->end > from ? r->end - from : 0;
		e.name = tki_cuda_counted_names[k];
		e.u.dropped.count = issued - delivered;
		e.u.dropped.reason = "CUDA activity CUPTI had not delivered when the "
		                     "process died without its last flush (SIGKILL, "
		                     "_exit, a crash, exec)";
		if (tk_writer_event(rec_self(), &e) != TK_OK)
			rec_die("%s", tk_writer_error(rec_self()));
	}
}

static void
read_threads(struct rec_recovery *r, const struct rthread *ts, size_t n,
             int64_t from)
{
	const struct tki_buf_thread *slots = thread_slots(r);
	if (!slots)
		return;
	for (uint32_t i = 0; i < TKI_BUF_THREADS; i++) {
		const struct tki_buf_thread *s = &slots[i];
		uint32_t state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		const struct rthread *c = NULL;
		for (size_t k = 0; k < n; k++)
			if (ts[k].slot == i && ts[k].serial == s->serial)
				c = &ts[k];
		if (!c && state != TKI_SLOT_LIVE)
			continue;
		if (c && !c->block)
			continue;        /* it ended, all written */
		if (c)
			read_thread(r, s->tid, c->block, c->pos);
		else
			read_thread(r, s->tid, s->first, 0);
		uint64_t d = __atomic_load_n(&s->dropped, __ATOMIC_RELAXED);
		uint64_t seen = c ? c->dropped_seen : 0;
		if (d > seen)
			write_dropped(r, s->tid, d - seen, from);
	}
}

uint64_t
rec_recover_spool_limit(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return UINT64_MAX;
	struct tki_buf_head h;
	ssize_t k = pread(fd, &h, sizeof(h), 0);
	close(fd);
	if (k != (ssize_t)sizeof(h) || h.magic != TKI_BUF_MAGIC || h.closed ||
	    h.unit != TKI_BUF_UNIT || h.nthreads != TKI_BUF_THREADS)
		return UINT64_MAX;
	return h.snap_spool[h.snap_cur == 1 ? 1 : 0];
}

uint64_t
rec_recover(const char *path, uint32_t proc_track, int64_t end, int64_t from,
            const char *full_why)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat st;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size < sizeof(struct tki_buf_head)) {
		close(fd);
		return 0;
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return 0;
	struct rec_recovery r = { 0 };
	r.map = m;
	r.size = (size_t)st.st_size;
	r.h = m;
	r.proc_track = proc_track;
	r.end = end;
	r.full_why = full_why;
	if (r.h->blocks_off < r.size)
		r.file_units = (r.size - r.h->blocks_off) / TKI_BUF_UNIT;
	if (r.h->magic == TKI_BUF_MAGIC && !r.h->closed &&
	    r.h->unit == TKI_BUF_UNIT && r.h->nthreads == TKI_BUF_THREADS) {
		read_names(&r);
		struct rthread *ts;
		size_t n;
		/* without its snapshot, nothing of the threads: the caller
		 * counts what the spool lacks as lost */
		int snapshot = read_snapshot(&r, &ts, &n);
		if (snapshot == 0)
			read_threads(&r, ts, n, from);
		free(ts);
		cuda_undelivered(&r, from);
		/* what is still open ended with the process */
		for (size_t i = 0; snapshot == 0 && i < r.nopen; i++)
			if (!r.open[i].pending_end)
				emit(&r, &r.open[i], end, 0, 1, r.open[i].id != 0);
	}
	free(r.names);
	free(r.open);
	free(r.tracks);
	free(r.read_units);
	munmap(m, r.size);
	return r.events;
}
