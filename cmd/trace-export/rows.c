/* SPDX-License-Identifier: MIT */
/*
 * Rows of the events: one table per kind of work (kernels; memops for
 * copies and sets; api; ranges for ranges, async ranges and marks;
 * memory for allocations and frees; counters).  Process lives, runs,
 * synchronisations, flows and drops have no table yet.
 *
 * A range's depth is its nesting on its track (a thread; a GPU stream
 * for imported GPU annotations): the ranges still open there when it
 * begins, kept per track as a stack of end times.  That
 * needs the events of a track in begin order, as every recorder and
 * importer writes them.
 */
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "common/util.h"

struct depth_stack {
	int64_t *end;
	size_t n, cap;
};

/* pid (and tid for a thread) of the event's track: nulls when none. */
static void
put_owner(struct ex *x, struct sink *s, const struct tk_track *t, int tid)
{
	uint32_t proc = 0;
	if (t->type == TK_TRACK_THREAD)
		proc = t->u.thread.process;
	else if (t->type == TK_TRACK_STREAM)
		proc = t->u.stream.process;
	else if (t->type == TK_TRACK_COUNTER)
		proc = t->u.counter.process;
	else if (t->type == TK_TRACK_PROCESS)
		proc = t->id;
	const struct tk_track *p = proc ? tk_reader_track(x->r, proc) : NULL;
	if (p && p->type == TK_TRACK_PROCESS)
		sink_i64(s, p->u.process.pid);
	else
		sink_null(s);
	if (!tid)
		return;
	if (t->type == TK_TRACK_THREAD)
		sink_i64(s, t->u.thread.tid);
	else
		sink_null(s);
}

/* device_id of GPU work or of a counter, and with `ids` the
 * context_id and stream_id of a stream's work (0 off a stream). */
static void
put_stream(struct ex *x, struct sink *s, const struct tk_track *t, int ids)
{
	uint32_t dev = t->type == TK_TRACK_STREAM ? t->u.stream.device :
	               t->type == TK_TRACK_COUNTER ? t->u.counter.device : 0;
	const struct tk_device *d = dev ? tk_reader_device(x->r, dev) : NULL;
	if (d)
		sink_i64(s, d->index);
	else
		sink_null(s);
	if (!ids)
		return;
	sink_u64(s, t->type == TK_TRACK_STREAM ? t->u.stream.context : 0);
	sink_u64(s, t->type == TK_TRACK_STREAM ? t->u.stream.stream : 0);
}

static void
put_span(struct ex *x, struct sink *s, const struct tk_event *e)
{
	sink_run(s, x);
	sink_i64(s, e->ts);
	sink_i64(s, e->ts + e->dur);
	sink_i64(s, e->dur);
}

/* The step the event begins in, its time added to the step's `sum`
 * (kernel, copy or api); a null when none. */
static void
put_step(struct ex *x, struct sink *s, const struct tk_event *e, int sum)
{
	uint32_t step = xsteps_at(x->steps, e->ts);
	if (step) {
		int64_t *t = sum == 0 ? x->steps->kernel :
		             sum == 1 ? x->steps->copy : x->steps->api;
		t[step - 1] += e->dur;
	}
	if (!s)
		return;
	if (step)
		sink_i64(s, step);
	else
		sink_null(s);
}

static void
kernel_row(struct ex *x, const struct tk_event *e)
{
	struct sink *s = &x->t[XT_KERNELS];
	const struct tk_kernel_attrs *k = &e->u.kernel;
	put_span(x, s, e);
	put_owner(x, s, e->trk, 0);
	put_stream(x, s, e->trk, 1);
	sink_u64(s, k->correlation);
	sink_str(s, e->name);
	sink_str(s, k->mangled);
	for (int i = 0; i < 3; i++)
		sink_i64(s, k->grid[i]);
	for (int i = 0; i < 3; i++)
		sink_i64(s, k->block[i]);
	for (int i = 0; i < 3; i++)
		sink_i64(s, k->cluster[i]);
	sink_i64(s, k->static_smem);
	sink_i64(s, k->dynamic_smem);
	sink_i64(s, k->registers);
	sink_i64(s, k->graph_id);
	sink_u64(s, k->graph_node);
	put_step(x, s, e, 0);
	sink_end_row(s);
}

static void
memop_row(struct ex *x, const struct tk_event *e)
{
	struct sink *s = &x->t[XT_MEMOPS];
	int copy = e->kind == TK_MEMCPY;
	put_span(x, s, e);
	put_owner(x, s, e->trk, 0);
	put_stream(x, s, e->trk, 1);
	sink_u64(s, copy ? e->u.memcpy.correlation : e->u.memset.correlation);
	sink_str(s, copy ? "memcpy" : "memset");
	sink_str(s, e->name);
	sink_u64(s, copy ? e->u.memcpy.bytes : e->u.memset.bytes);
	if (copy) {
		sink_str(s, tk_copy_kind_name(e->u.memcpy.copy_kind));
		sink_str(s, tk_mem_kind_name(e->u.memcpy.src_kind));
		sink_str(s, tk_mem_kind_name(e->u.memcpy.dst_kind));
		sink_null(s);
	} else {
		sink_null(s);
		sink_null(s);
		sink_str(s, tk_mem_kind_name(e->u.memset.mem_kind));
		sink_i64(s, e->u.memset.value);
	}
	unsigned flags = copy ? e->u.memcpy.flags : e->u.memset.flags;
	sink_i64(s, (flags & TK_FLAG_ASYNC) != 0);
	put_step(x, s, e, 1);
	sink_end_row(s);
}

static void
api_row(struct ex *x, const struct tk_event *e)
{
	struct sink *s = &x->t[XT_API];
	put_span(x, s, e);
	put_owner(x, s, e->trk, 1);
	sink_u64(s, e->u.api.correlation);
	sink_str(s, tk_api_domain_name(e->u.api.domain));
	sink_str(s, e->name);
	sink_i64(s, e->u.api.cbid);
	sink_i64(s, e->u.api.result);
	sink_end_row(s);
	put_step(x, NULL, e, 2);
}

/* The nesting depth of a range beginning at ts on track t (0 outermost),
 * the range itself then open until end. */
static int64_t
depth_of(struct ex *x, uint32_t t, int64_t ts, int64_t end)
{
	if (t >= x->nstacks) {
		size_t n = x->nstacks ? x->nstacks : 16;
		while (t >= n)
			n *= 2;
		x->stacks = cmd_xrealloc(x->stacks, n * sizeof(*x->stacks));
		memset(x->stacks + x->nstacks, 0,
		       (n - x->nstacks) * sizeof(*x->stacks));
		x->nstacks = n;
	}
	struct depth_stack *st = &x->stacks[t];
	while (st->n && st->end[st->n - 1] <= ts)
		st->n--;
	int64_t depth = (int64_t)st->n;
	if (st->n == st->cap) {
		st->cap = st->cap ? st->cap * 2 : 16;
		st->end = cmd_xrealloc(st->end, st->cap * sizeof(*st->end));
	}
	st->end[st->n++] = end;
	return depth;
}

static void
range_row(struct ex *x, const struct tk_event *e)
{
	struct sink *s = &x->t[XT_RANGES];
	const struct tk_range_attrs *a = &e->u.range;
	put_span(x, s, e);
	put_owner(x, s, e->trk, 1);
	sink_str(s, tk_kind_name(e->kind));
	sink_str(s, a->domain);
	sink_str(s, e->name);
	if (e->kind == TK_RANGE)
		sink_i64(s, depth_of(x, e->track, e->ts, e->ts + e->dur));
	else
		sink_null(s);
	sink_i64(s, a->category);
	sink_i64(s, a->color);
	if (e->kind == TK_ASYNC_RANGE)
		sink_u64(s, a->id);
	else
		sink_null(s);
	sink_end_row(s);
}

static void
memory_row(struct ex *x, const struct tk_event *e)
{
	struct sink *s = &x->t[XT_MEMORY];
	const struct tk_memory_attrs *m = &e->u.memory;
	sink_run(s, x);
	sink_i64(s, e->ts);
	put_owner(x, s, e->trk, 0);
	put_stream(x, s, e->trk, 0);
	sink_u64(s, m->correlation);
	sink_str(s, m->op == TK_MEM_FREE ? "free" : "alloc");
	sink_str(s, tk_mem_kind_name(m->mem_kind));
	sink_u64(s, m->address);
	sink_u64(s, m->bytes);
	sink_end_row(s);
}

static void
counter_row(struct ex *x, const struct tk_event *e)
{
	struct sink *s = &x->t[XT_COUNTERS];
	const struct tk_track *t = e->trk;
	int is_counter = t->type == TK_TRACK_COUNTER;
	sink_run(s, x);
	sink_i64(s, e->ts);
	put_owner(x, s, t, 0);
	put_stream(x, s, t, 0);
	sink_str(s, is_counter ? t->u.counter.name : e->name);
	sink_str(s, is_counter ? t->u.counter.unit : "");
	sink_f64(s, e->u.counter.value);
	sink_end_row(s);
}

void
ex_event(struct ex *x, const struct tk_event *e)
{
	if (x->events == 0 || e->ts < x->t_min)
		x->t_min = e->ts;
	if (x->events == 0 || e->ts + e->dur > x->t_max)
		x->t_max = e->ts + e->dur;
	x->events++;
	ex_string(x, e->name_id, e->name);
	switch (e->kind) {
	case TK_KERNEL: kernel_row(x, e); break;
	case TK_MEMCPY:
	case TK_MEMSET: memop_row(x, e); break;
	case TK_API: api_row(x, e); break;
	case TK_RANGE:
	case TK_ASYNC_RANGE:
	case TK_MARK: range_row(x, e); break;
	case TK_MEMORY: memory_row(x, e); break;
	case TK_COUNTER: counter_row(x, e); break;
	default: break;
	}
}

void
ex_rows_scope(struct ex *x)
{
	for (size_t i = 0; i < x->nstacks; i++)
		x->stacks[i].n = 0;   /* track ids start again */
}

void
ex_rows_free(struct ex *x)
{
	for (size_t i = 0; i < x->nstacks; i++)
		free(x->stacks[i].end);
	free(x->stacks);
	x->stacks = NULL;
	x->nstacks = 0;
}
