/* SPDX-License-Identifier: MIT */
/*
 * The fast path's converter: an event that flat.c read without jansson
 * becomes the same tracekit event that event.c and kineto.c make of its
 * jansson tree, by the same steps in the same order (tracks are defined,
 * and the summary counted, as they would be).  flat.c let through only
 * the shapes handled here, with args of the types taken; so this never
 * has to go back, and every rule below is the rule of the file it
 * mirrors (named in each function).
 *
 * Args that stay are written from their text: as they were, without
 * white space, when none left (as imp_args_text() does); else the ones
 * left, each as its text without white space, which flat.c checked is
 * what jansson's compact dump would write.
 */
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "common/util.h"
#include "support.h"

/* An event being converted: its flat reading and what left its args. */
struct fast {
	struct imp *im;
	const struct imp_flat *f;
	const char *text;
	uint32_t removed;          /* bit i: args[i] left args */
};

static const struct imp_flat_arg *
arg(const struct fast *e, const char *key)
{
	size_t n = strlen(key);
	for (unsigned i = 0; i < e->f->nargs; i++) {
		const struct imp_flat_arg *a = &e->f->args[i];
		if (!(e->removed >> i & 1) && a->key.len == n &&
		    memcmp(e->text + a->key.off, key, n) == 0)
			return a;
	}
	return NULL;
}

static void
take(struct fast *e, const struct imp_flat_arg *a)
{
	e->removed |= 1u << (a - e->f->args);
}

/* kineto.c's take_u64, take_u32, take_i64 on integers (flat.c refused
 * other types for the keys taken). */
static int
take_u64(struct fast *e, const char *key, uint64_t *out)
{
	const struct imp_flat_arg *a = arg(e, key);
	if (!a || a->type != IMP_FLAT_INT)
		return 0;
	*out = (uint64_t)a->i;
	take(e, a);
	return 1;
}

static int
take_u32(struct fast *e, const char *key, uint32_t *out)
{
	const struct imp_flat_arg *a = arg(e, key);
	if (!a || a->type != IMP_FLAT_INT || a->i < 0 || a->i > UINT32_MAX)
		return 0;
	*out = (uint32_t)a->i;
	take(e, a);
	return 1;
}

/* kineto.c's take_dims: [x, y, z], 1 to 3 integers that fit 32 bits. */
static void
take_dims(struct fast *e, const char *key, uint32_t d[3])
{
	const struct imp_flat_arg *a = arg(e, key);
	if (!a || a->type != IMP_FLAT_ARRAY)
		return;
	const char *p = e->text + a->val.off + 1, *end = e->text + a->val.off + a->val.len - 1;
	uint32_t t[3] = { 1, 1, 1 };
	unsigned n = 0;
	while (p < end) {
		while (p < end && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r' || *p == ','))
			p++;
		if (p >= end)
			break;
		const char *s = p;
		while (p < end && ((*p >= '0' && *p <= '9') || *p == '-'))
			p++;
		int64_t v;
		if (n == 3 || imp_parse_i64(s, (size_t)(p - s), &v) < 0 || v < 0 ||
		    v > UINT32_MAX)
			return;
		if (p < end && *p != ' ' && *p != '\n' && *p != '\t' && *p != '\r' && *p != ',')
			return;    /* a real or another type: it stays */
		t[n++] = (uint32_t)v;
	}
	if (n < 1)
		return;
	memcpy(d, t, sizeof(t));
	take(e, a);
}

/* kineto.c's drop_derived. */
static void
drop_derived(struct fast *e, const char *key, int which)
{
	const struct imp_flat_arg *a = arg(e, key);
	if (a) {
		take(e, a);
		e->im->derived[which]++;
	}
}

/* kineto.c's take_correlation. */
static void
take_correlation(struct fast *e, uint64_t *corr)
{
	if (!take_u64(e, "correlation", corr))
		return;
	const struct imp_flat_arg *ext = arg(e, "External id");
	if (ext && ext->type == IMP_FLAT_INT && (uint64_t)ext->i == *corr)
		drop_derived(e, "External id", 3);
}

/* kineto.c's gpu_track. */
static uint32_t
gpu_track(struct fast *e, const struct imp_x *x)
{
	struct imp *im = e->im;
	uint64_t dev, stream = 0, ctx = 0;
	int has_dev = take_u64(e, "device", &dev);
	int has_stream = take_u64(e, "stream", &stream);
	take_u64(e, "context", &ctx);
	if (!has_dev) {
		int64_t lane = imp_lane_device(im->tracks, &x->pid);
		if (lane >= 0) {
			dev = (uint64_t)lane;
		} else if (x->pid.v >= 0 && x->pid.v < 4096) {
			dev = (uint64_t)x->pid.v;
		} else {
			dev = 0;
			imp_summary_note(im->sum, "GPU work on an unknown device (device 0 assumed)", 1);
		}
	}
	if (dev > UINT32_MAX)
		dev = UINT32_MAX;
	if (!has_stream)
		stream = (uint64_t)x->tid.v;
	return imp_stream(im->tracks, (uint32_t)dev, stream, ctx, &x->pid, &x->tid);
}

/* The args that stay, as imp_args_text() would write them. */
static void
args_text(struct fast *e, struct imp_x *x)
{
	struct imp *im = e->im;
	const struct imp_flat *f = e->f;
	x->flat = 1;
	x->flat_args = NULL;
	x->flat_args_len = 0;
	unsigned left = 0;
	for (unsigned i = 0; i < f->nargs; i++)
		left += !(e->removed >> i & 1);
	if (!left)
		return;
	char *b = imp_args_buf(im, f->args_span.len + 2);
	if (!e->removed) {
		x->flat_args_len = (uint32_t)imp_squeeze(b, e->text + f->args_span.off,
		                                         f->args_span.len);
	} else {
		size_t o = 0;
		b[o++] = '{';
		for (unsigned i = 0; i < f->nargs; i++) {
			const struct imp_flat_arg *a = &f->args[i];
			if (e->removed >> i & 1)
				continue;
			if (o > 1)
				b[o++] = ',';
			b[o++] = '"';
			memcpy(b + o, e->text + a->key.off, a->key.len);
			o += a->key.len;
			b[o++] = '"';
			b[o++] = ':';
			o += imp_squeeze(b + o, e->text + a->val.off, a->val.len);
		}
		b[o++] = '}';
		x->flat_args_len = (uint32_t)o;
	}
	x->flat_args = b;
}

/* kineto.c's kernel. */
static void
kernel(struct fast *e, struct imp_x *x, struct tk_event *ev, char **mangled)
{
	struct tk_kernel_attrs *k = &ev->u.kernel;
	ev->kind = TK_KERNEL;
	ev->track = gpu_track(e, x);
	take_correlation(e, &k->correlation);
	take_u32(e, "registers per thread", &k->registers);
	uint32_t total = 0;
	int has_static = take_u32(e, "static shared memory", &k->static_smem);
	int has_dynamic = take_u32(e, "dynamic shared memory", &k->dynamic_smem);
	if (take_u32(e, "shared memory", &total) && !has_static && !has_dynamic)
		k->static_smem = total;
	take_dims(e, "grid", k->grid);
	take_dims(e, "block", k->block);
	take_dims(e, "cluster", k->cluster);
	take_u32(e, "graph id", &k->graph_id);
	take_u64(e, "graph node id", &k->graph_node);
	k->mangled = "";
	const struct imp_flat_arg *m = arg(e, "mangled name");
	if (m) {
		/* a string without escapes: its bytes between the quotes */
		*mangled = strndup(e->text + m->val.off + 1, m->val.len - 2);
		if (!*mangled)
			cmd_die(EXIT_USAGE, "out of memory");
		k->mangled = *mangled;
		take(e, m);
	}
	drop_derived(e, "blocks per SM", 1);
	drop_derived(e, "warps per SM", 2);
}

/* kineto.c's kineto_memory: the allocation, and the totals as counters
 * of the device (or of the process, for CPU memory).  Returns 0 or -1. */
static int
memory(struct fast *e, struct imp_x *x, struct tk_event *ev)
{
	static const char *const totals[] = { "Total Allocated", "Total Reserved" };
	struct imp *im = e->im;
	const struct imp_flat_arg *bytes = arg(e, "Bytes");
	const struct imp_flat_arg *type = arg(e, "Device Type");
	const struct imp_flat_arg *devid = arg(e, "Device Id");
	int64_t b = bytes->i;
	int is_gpu = type && type->type == IMP_FLAT_INT && type->i == 1;
	uint32_t device = 0, process = imp_process(im->tracks, &x->pid);
	if (is_gpu && devid && devid->type == IMP_FLAT_INT && devid->i >= 0 &&
	    devid->i <= UINT32_MAX)
		device = imp_device(im->tracks, (uint32_t)devid->i);
	for (int i = 0; i < 2; i++) {
		const struct imp_flat_arg *v = arg(e, totals[i]);
		if (!v)
			continue;
		struct tk_event c = { 0 };
		c.kind = TK_COUNTER;
		c.ts = x->ts;
		c.name = totals[i];
		c.track = imp_counter(im->tracks, totals[i], "bytes",
		                      device ? 0 : process, device);
		imp_counter_skip_repeats(im->tracks, c.track);
		c.u.counter.value = (double)v->i;
		struct imp_x cx = *x;
		cx.more = 1;
		cx.flat = 1;
		cx.flat_args = NULL;
		cx.flat_args_len = 0;
		if (imp_emit(im, &c, &cx) < 0)
			return -1;
		take(e, v);
	}
	struct tk_memory_attrs *m = &ev->u.memory;
	ev->kind = TK_MEMORY;
	ev->track = imp_x_track(im, x);
	m->op = b < 0 ? TK_MEM_FREE : TK_MEM_ALLOC;
	m->bytes = b < 0 ? (uint64_t)0 - (uint64_t)b : (uint64_t)b;
	m->mem_kind = is_gpu ? TK_MEM_DEVICE
	            : type && type->type == IMP_FLAT_INT && type->i == 0
	            ? TK_MEM_PAGEABLE : TK_MEM_UNKNOWN;
	take(e, bytes);
	if (m->mem_kind != TK_MEM_UNKNOWN)
		take(e, type);
	take_u64(e, "Addr", &m->address);
	return 0;
}

/* Convert one event read by imp_flat_scan(): 0, or 1 if it could not be
 * written (imp_run() says why). */
int
imp_fast_event(struct imp *im, const struct imp_item *it, const struct imp_flat *f)
{
	if (im->fatal)
		return 1;
	im->offset = it->offset;
	im->parse.repaired = 0;
	struct fast e = { .im = im, .f = f, .text = it->text };
	struct imp_x x = { 0 };
	x.phs = f->ph;
	x.cat = f->cat;
	x.name = f->name;
	x.pid.v = f->pid;
	x.tid.v = f->tid;
	x.ph = f->kind == IMP_FLAT_MEMORY ? 'i' : 'X';
	x.scope = f->scope;
	x.ts = f->ts;
	x.dur = f->dur;
	/* event.c's phase_complete */
	if (x.ph == 'X' && x.dur < 0) {
		imp_summary_note(im->sum, "negative 'dur' set to 0", 1);
		x.dur = 0;
	}
	struct tk_event ev = { 0 };
	ev.ts = x.ts;
	ev.name = x.name;
	ev.dur = x.ph == 'X' ? x.dur : 0;
	char *mangled = NULL;
	switch (f->kind) {
	case IMP_FLAT_MEMORY:
		if (memory(&e, &x, &ev) < 0)
			return 1;
		break;
	case IMP_FLAT_RANGE:       /* event.c's complete */
		ev.kind = TK_RANGE;
		ev.track = imp_x_track(im, &x);
		ev.u.range.domain = strcmp(x.cat, "nvtx") == 0 ? "" : x.cat;
		break;
	case IMP_FLAT_KERNEL:
		kernel(&e, &x, &ev, &mangled);
		break;
	case IMP_FLAT_MEMCPY:      /* kineto.c's gpu_memcpy */
		ev.kind = TK_MEMCPY;
		ev.track = gpu_track(&e, &x);
		take_correlation(&e, &ev.u.memcpy.correlation);
		take_u64(&e, "bytes", &ev.u.memcpy.bytes);
		imp_memcpy_name(x.name, &ev.u.memcpy);
		drop_derived(&e, "memory bandwidth (GB/s)", 0);
		break;
	case IMP_FLAT_MEMSET:      /* kineto.c's gpu_memset */
		ev.kind = TK_MEMSET;
		ev.track = gpu_track(&e, &x);
		take_correlation(&e, &ev.u.memset.correlation);
		take_u64(&e, "bytes", &ev.u.memset.bytes);
		take_u32(&e, "value", &ev.u.memset.value);
		ev.u.memset.mem_kind = imp_memset_kind(x.name);
		drop_derived(&e, "memory bandwidth (GB/s)", 0);
		break;
	default: {                 /* kineto.c's api */
		const struct imp_flat_arg *r;
		ev.kind = TK_API;
		ev.track = imp_x_track(im, &x);
		imp_cpu_process(im->tracks, &x.pid);
		ev.u.api.domain = f->kind == IMP_FLAT_RUNTIME ? TK_API_RUNTIME
		                : f->kind == IMP_FLAT_DRIVER ? TK_API_DRIVER : TK_API_OTHER;
		take_correlation(&e, &ev.u.api.correlation);
		take_u32(&e, "cbid", &ev.u.api.cbid);
		if ((r = arg(&e, "result")) && r->type == IMP_FLAT_INT) {
			ev.u.api.result = (int32_t)r->i;
			take(&e, r);
		}
		break;
	}
	}
	args_text(&e, &x);
	int rc = imp_emit(im, &ev, &x);
	free(mangled);
	return rc < 0;
}
