/* SPDX-License-Identifier: MIT */
/*
 * The allocator's peaks per step and the operation at each peak.  See
 * allocpeak.h.
 */
#include <stdlib.h>
#include <string.h>

#include "allocpeak.h"
#include "common/strmap.h"
#include "support.h"

/* A range still open on a thread. */
struct open_range {
	int64_t begin, end;
	uint32_t name_id;
};

struct stack {
	struct open_range *v;
	size_t n, cap;
};

/* An allocation or free of the current scope. */
struct alloc_event {
	int64_t ts;
	int32_t proc;
	uint32_t key;
	uint32_t op;             /* index in ap->names + 1; 0 = none */
	uint8_t is_host;
	uint32_t order;          /* arrival: the first of equal times wins */
};

/* A sample of an allocator total of the current scope. */
struct sample {
	int64_t ts;
	double value;
	int32_t where;
	uint8_t is_host, which;
	uint32_t order;
};

struct allocpeak {
	int steps;
	struct stack *stacks;    /* by thread track id */
	size_t nstacks;
	struct alloc_event *ev;
	size_t nev, capev;
	int ev_sorted;           /* ev is sorted by time (and arrival): they
	                            come in time order, as a rule */
	uint32_t *op_index;      /* by string id of the scope: the index + 1
	                            of the operation in names, 0 = not yet
	                            looked up (one hash of the name per
	                            operation, not per allocation) */
	size_t nop_index;
	struct sample *smp;
	size_t nsmp, capsmp;
	char **names;            /* operations, interned */
	size_t nnames, capnames;
	struct strmap name_map;
	struct allocpeak_step *out;
	size_t nout, capout;
};

struct allocpeak *
allocpeak_new(int steps)
{
	struct allocpeak *ap = calloc(1, sizeof(*ap));
	if (ap) {
		ap->steps = steps;
		ap->ev_sorted = 1;
	}
	return ap;
}

static void
forget_scope(struct allocpeak *ap)
{
	for (size_t i = 0; i < ap->nstacks; i++)
		free(ap->stacks[i].v);
	free(ap->stacks);
	ap->stacks = NULL;
	ap->nstacks = 0;
	ap->nev = 0;
	ap->nsmp = 0;
	ap->ev_sorted = 1;
	/* string ids name other strings in the next scope */
	free(ap->op_index);
	ap->op_index = NULL;
	ap->nop_index = 0;
}

void
allocpeak_free(struct allocpeak *ap)
{
	if (!ap)
		return;
	forget_scope(ap);
	free(ap->ev);
	free(ap->smp);
	for (size_t i = 0; i < ap->nnames; i++)
		free(ap->names[i]);
	free(ap->names);
	strmap_free(&ap->name_map);
	free(ap->out);
	free(ap);
}

static struct stack *
stack_of(struct allocpeak *ap, uint32_t thread)
{
	if (thread >= ap->nstacks) {
		size_t n = ap->nstacks;
		struct stack *s = tkp_grow(ap->stacks, &n, (size_t)thread + 1, sizeof(*s));
		if (!s)
			return NULL;
		memset(s + ap->nstacks, 0, (n - ap->nstacks) * sizeof(*s));
		ap->stacks = s;
		ap->nstacks = n;
	}
	return &ap->stacks[thread];
}

int
allocpeak_range(struct allocpeak *ap, uint32_t thread, int64_t begin,
                int64_t end, uint32_t name_id)
{
	struct stack *s = stack_of(ap, thread);
	if (!s)
		return -1;
	/* ranges come in begin order: those ended by now enclose nothing
	 * that comes later */
	size_t k = 0;
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].end > begin)
			s->v[k++] = s->v[i];
	s->n = k;
	struct open_range *v = tkp_grow(s->v, &s->cap, s->n + 1, sizeof(*v));
	if (!v)
		return -1;
	s->v = v;
	s->v[s->n++] = (struct open_range){ begin, end, name_id };
	return 0;
}

uint32_t
allocpeak_innermost(struct allocpeak *ap, uint32_t thread, int64_t ts)
{
	if (thread >= ap->nstacks)
		return 0;
	const struct stack *s = &ap->stacks[thread];
	/* the enclosing range that begins last, the shorter of two that
	 * begin together (ranges of equal begin may come in either order) */
	const struct open_range *best = NULL;
	for (size_t i = 0; i < s->n; i++) {
		const struct open_range *r = &s->v[i];
		if (r->begin > ts || r->end <= ts)
			continue;
		if (!best || r->begin > best->begin ||
		    (r->begin == best->begin && r->end < best->end))
			best = r;
	}
	return best ? best->name_id : 0;
}

/* Index + 1 of op in ap->names, added on first sight; 0 for none, -1
 * when out of memory. */
static long
intern(struct allocpeak *ap, const char *op)
{
	if (!op)
		return 0;
	size_t len = strlen(op);
	long i = strmap_get(&ap->name_map, op, len);
	if (i >= 0)
		return i + 1;
	char **v = tkp_grow(ap->names, &ap->capnames, ap->nnames + 1, sizeof(*v));
	if (!v)
		return -1;
	ap->names = v;
	char *c = strdup(op);
	if (!c || strmap_put(&ap->name_map, op, len, (long)ap->nnames) < 0) {
		free(c);
		return -1;
	}
	ap->names[ap->nnames++] = c;
	return (long)ap->nnames;
}

int
allocpeak_event(struct allocpeak *ap, int is_host, int32_t proc,
                uint32_t key, int64_t ts, uint32_t op_id, const char *op)
{
	long name;
	if (!op_id) {
		name = intern(ap, op);
	} else {
		uint32_t *v = tkp_grow_zeroed(ap->op_index, &ap->nop_index,
		                              (size_t)op_id + 1, sizeof(*v));
		if (!v)
			return -1;
		ap->op_index = v;
		name = ap->op_index[op_id];
		if (!name) {
			if ((name = intern(ap, op)) < 0)
				return -1;
			ap->op_index[op_id] = (uint32_t)name;
		}
	}
	if (name < 0)
		return -1;
	struct alloc_event *v = tkp_grow(ap->ev, &ap->capev, ap->nev + 1, sizeof(*v));
	if (!v)
		return -1;
	ap->ev = v;
	ap->ev[ap->nev] = (struct alloc_event){ ts, proc, key, (uint32_t)name,
	                                        (uint8_t)!!is_host, (uint32_t)ap->nev };
	if (ap->nev && ts < ap->ev[ap->nev - 1].ts)
		ap->ev_sorted = 0;
	ap->nev++;
	return 0;
}

int
allocpeak_sample(struct allocpeak *ap, int is_host, int32_t where, int which,
                 int64_t ts, double value)
{
	if (!ap->steps)
		return 0;
	struct sample *v = tkp_grow(ap->smp, &ap->capsmp, ap->nsmp + 1, sizeof(*v));
	if (!v)
		return -1;
	ap->smp = v;
	ap->smp[ap->nsmp] = (struct sample){ ts, value, where, (uint8_t)!!is_host,
	                                     (uint8_t)which, (uint32_t)ap->nsmp };
	ap->nsmp++;
	return 0;
}

static int
cmp_event(const void *x, const void *y)
{
	const struct alloc_event *p = x, *q = y;
	if (p->ts != q->ts)
		return (p->ts > q->ts) - (p->ts < q->ts);
	return (p->order > q->order) - (p->order < q->order);
}

/* The first event at ts of the memory wanted, NULL for none (ev sorted). */
static const struct alloc_event *
event_at(const struct allocpeak *ap, int is_host, int32_t proc, int64_t ts)
{
	size_t lo = 0, hi = ap->nev;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ap->ev[mid].ts < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < ap->nev && ap->ev[i].ts == ts; i++) {
		const struct alloc_event *e = &ap->ev[i];
		/* a device's totals have no process: any device allocation */
		if (e->is_host == !!is_host && (!is_host || e->proc == proc))
			return e;
	}
	return NULL;
}

static void
sort_events(const struct allocpeak *ap)
{
	/* sorting in place changes no answer: a const interface for
	 * allocpeak_op_at(), a sorted array behind it */
	struct allocpeak *w = (struct allocpeak *)ap;
	if (!w->ev_sorted && w->nev > 1)
		qsort(w->ev, w->nev, sizeof(*w->ev), cmp_event);
	w->ev_sorted = 1;
}

const char *
allocpeak_op_at(const struct allocpeak *ap, int is_host, int32_t proc,
                int64_t ts)
{
	sort_events(ap);
	const struct alloc_event *e = event_at(ap, is_host, proc, ts);
	return e && e->op ? ap->names[e->op - 1] : NULL;
}

/* Samples by series (host or device, where, which total), then time
 * and arrival. */
static int
cmp_sample(const void *x, const void *y)
{
	const struct sample *p = x, *q = y;
	if (p->is_host != q->is_host)
		return p->is_host - q->is_host;
	if (p->where != q->where)
		return (p->where > q->where) - (p->where < q->where);
	if (p->which != q->which)
		return p->which - q->which;
	if (p->ts != q->ts)
		return (p->ts > q->ts) - (p->ts < q->ts);
	return (p->order > q->order) - (p->order < q->order);
}

/* Is sample s (the allocation event it follows: e) one of the memory
 * of instance `in`?  A labelled rank's memory counts in its own steps
 * only. */
static int
counts_in(const struct alloc_event *e, const struct perinst_instance *in)
{
	return !(e && e->key && in->key && e->key != in->key);
}

/* Into st, the peak in instance `in` of one total: samples smp[from,
 * to) of one series, by time.  A total holds its value until the next
 * sample (the importer writes no sample that repeats the last), so the
 * level entering the window counts too: at the peak, the sample that
 * set it, before the window. */
static void
total_peak(const struct allocpeak *ap, const struct perinst_instance *in,
           size_t from, size_t to, struct allocpeak_step *st)
{
	int64_t end = in->begin + in->dur < in->begin ? INT64_MAX : in->begin + in->dur;
	size_t lo = from, hi = to;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ap->smp[mid].ts < in->begin)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo > from ? lo - 1 : lo; i < to && ap->smp[i].ts < end; i++) {
		const struct sample *s = &ap->smp[i];
		const struct alloc_event *e = event_at(ap, s->is_host, s->where, s->ts);
		if (!counts_in(e, in))
			continue;
		int w = s->which;
		if (!st->has[w] || s->value > st->peak[w]) {
			st->has[w] = 1;
			st->peak[w] = s->value;
			st->peak_ts[w] = s->ts;
			st->op[w] = e && e->op ? ap->names[e->op - 1] : NULL;
		}
	}
}

/* The peaks in instance `in` of the series smp[from, to) (one device,
 * or one process's host memory: both totals). */
static int
series_peaks(struct allocpeak *ap, struct perinst_instance *in, size_t from,
             size_t to)
{
	struct allocpeak_step st = { .is_host = ap->smp[from].is_host,
	                             .where = ap->smp[from].where };
	for (size_t a = from; a < to;) {
		size_t b = a + 1;
		while (b < to && ap->smp[b].which == ap->smp[a].which)
			b++;
		total_peak(ap, in, a, b, &st);
		a = b;
	}
	if (!st.has[0] && !st.has[1])
		return 0;
	struct allocpeak_step *v = tkp_grow(ap->out, &ap->capout, ap->nout + 1, sizeof(*v));
	if (!v)
		return -1;
	ap->out = v;
	ap->out[ap->nout++] = st;
	in->mem_n++;
	return 0;
}

int
allocpeak_scope_end(struct allocpeak *ap, struct perinst_instance *v, size_t n)
{
	if (ap->steps && ap->nsmp) {
		sort_events(ap);
		qsort(ap->smp, ap->nsmp, sizeof(*ap->smp), cmp_sample);
		for (size_t i = 0; i < n; i++) {
			v[i].mem_first = (uint32_t)ap->nout;
			v[i].mem_n = 0;
			for (size_t from = 0; from < ap->nsmp;) {
				size_t to = from + 1;
				while (to < ap->nsmp && ap->smp[to].is_host == ap->smp[from].is_host &&
				       ap->smp[to].where == ap->smp[from].where)
					to++;
				if (series_peaks(ap, &v[i], from, to) < 0)
					return -1;
				from = to;
			}
		}
	}
	forget_scope(ap);
	return 0;
}

const struct allocpeak_step *
allocpeak_steps(const struct allocpeak *ap, size_t *n)
{
	*n = ap->nout;
	return ap->out;
}
