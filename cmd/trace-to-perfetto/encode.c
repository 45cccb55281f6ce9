/* SPDX-License-Identifier: MIT */
/*
 * One event as a TrackEvent: its type, track, interned name and
 * category, flow ids, and its attributes as debug annotations with
 * interned keys.  Launch configurations ("264x1x1") and other short
 * strings that repeat are interned values; imported args go to args.c.
 * The category of each kind is trace-to-chrome's ("kernel",
 * "cuda_runtime", ...).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "perfetto.h"
#include "common/util.h"

#define INTERN_VALUE_MAX 96  /* longer string values are written inline */

size_t
pf_ann_open(struct pf_enc *x, struct pbuf *b, unsigned field, const char *key)
{
	size_t at = pb_open(b, field);
	if (!key)
		return at;
	uint64_t iid = pf_intern(x->in, PF_T_KEY, key, strlen(key));
	if (iid)
		pb_uint(b, DA_NAME_IID, iid);
	else
		pb_str(b, DA_NAME, key);
	return at;
}

static void
ann_uint(struct pf_enc *x, struct pbuf *b, const char *key, uint64_t v)
{
	size_t at = pf_ann_open(x, b, TE_DEBUG, key);
	pb_uint(b, DA_UINT, v);
	pb_close(b, at);
}

static void
ann_int(struct pf_enc *x, struct pbuf *b, const char *key, int64_t v)
{
	size_t at = pf_ann_open(x, b, TE_DEBUG, key);
	pb_int(b, DA_INT, v);
	pb_close(b, at);
}

void
pf_value_str(struct pf_enc *x, struct pbuf *b, const char *s, size_t n)
{
	uint64_t iid = n <= INTERN_VALUE_MAX ? pf_intern(x->in, PF_T_VALUE, s, n) : 0;
	if (iid)
		pb_uint(b, DA_STRING_IID, iid);
	else
		pb_bytes(b, DA_STRING, s, n);
}

static void
ann_str(struct pf_enc *x, struct pbuf *b, const char *key, const char *s)
{
	size_t at = pf_ann_open(x, b, TE_DEBUG, key);
	pf_value_str(x, b, s, strlen(s));
	pb_close(b, at);
}

/* ---- per kind ------------------------------------------------------------------ */

static void
range_args(struct pf_enc *x, struct pbuf *b, const struct tk_range_attrs *a, int with_id)
{
	if (a->category)
		ann_uint(x, b, "category", a->category);
	if (a->color) {
		char c[8];
		snprintf(c, sizeof(c), "#%06x", a->color & 0xffffff);
		ann_str(x, b, "color", c);
	}
	switch (a->payload_type) {
	case TK_PAYLOAD_UINT: ann_uint(x, b, "payload", a->payload.u); break;
	case TK_PAYLOAD_INT: ann_int(x, b, "payload", a->payload.i); break;
	case TK_PAYLOAD_DOUBLE: {
		size_t at = pf_ann_open(x, b, TE_DEBUG, "payload");
		pb_double(b, DA_DOUBLE, a->payload.d);
		pb_close(b, at);
		break;
	}
	}
	if (with_id && a->id)
		ann_uint(x, b, "id", a->id);
}

/* The launch configuration as one interned string: a kernel is launched
 * with few configurations, so each costs a few bytes after the first. */
static void
kernel_args(struct pf_enc *x, struct pbuf *b, const struct tk_kernel_attrs *k)
{
	char s[256];
	int n = snprintf(s, sizeof(s), "grid %" PRIu32 "x%" PRIu32 "x%" PRIu32
	                 ", block %" PRIu32 "x%" PRIu32 "x%" PRIu32
	                 ", %" PRIu32 " registers, shared memory %" PRIu32 "+%" PRIu32,
	                 k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1],
	                 k->block[2], k->registers, k->static_smem, k->dynamic_smem);
	if (k->cluster[0] || k->cluster[1] || k->cluster[2])
		snprintf(s + n, sizeof(s) - (size_t)n, ", cluster %" PRIu32 "x%" PRIu32
		         "x%" PRIu32, k->cluster[0], k->cluster[1], k->cluster[2]);
	ann_uint(x, b, "correlation", k->correlation);
	ann_str(x, b, "launch", s);
	if (k->graph_id) {
		ann_uint(x, b, "graph id", k->graph_id);
		ann_uint(x, b, "graph node id", k->graph_node);
	}
	if (*k->mangled)
		ann_str(x, b, "mangled name", k->mangled);
}

static void
ann_async(struct pf_enc *x, struct pbuf *b, uint32_t flags)
{
	size_t at = pf_ann_open(x, b, TE_DEBUG, "async");
	pb_uint(b, DA_BOOL, (flags & TK_FLAG_ASYNC) != 0);
	pb_close(b, at);
}

static void
memcpy_args(struct pf_enc *x, struct pbuf *b, const struct tk_memcpy_attrs *c)
{
	ann_uint(x, b, "correlation", c->correlation);
	ann_uint(x, b, "bytes", c->bytes);
	ann_str(x, b, "copy kind", tk_copy_kind_name(c->copy_kind));
	ann_str(x, b, "src kind", tk_mem_kind_name(c->src_kind));
	ann_str(x, b, "dst kind", tk_mem_kind_name(c->dst_kind));
	if (c->copy_kind == TK_COPY_PTOP) {
		ann_uint(x, b, "src device", c->src_device);
		ann_uint(x, b, "dst device", c->dst_device);
	}
	ann_async(x, b, c->flags);
}

static void
exit_args(struct pf_enc *x, struct pbuf *b, unsigned how, int32_t code, uint32_t sig)
{
	if (how == TK_EXIT_NORMAL)
		ann_int(x, b, "exit code", code);
	else if (how == TK_EXIT_SIGNAL)
		ann_uint(x, b, "signal", sig);
	else
		ann_str(x, b, "exit", "unknown");
}

static void
process_args(struct pf_enc *x, struct pbuf *b, const struct tk_process_attrs *p)
{
	exit_args(x, b, p->exit, p->exit_code, p->signal);
	ann_int(x, b, "user CPU (ns)", p->utime);
	ann_int(x, b, "system CPU (ns)", p->stime);
	ann_uint(x, b, "max RSS (bytes)", p->max_rss);
	ann_uint(x, b, "minor faults", p->minflt);
	ann_uint(x, b, "major faults", p->majflt);
	ann_uint(x, b, "voluntary context switches", p->nvcsw);
	ann_uint(x, b, "involuntary context switches", p->nivcsw);
}

static void
memory_args(struct pf_enc *x, struct pbuf *b, const struct tk_memory_attrs *a)
{
	ann_str(x, b, "operation", a->op == TK_MEM_FREE ? "free" : "alloc");
	ann_uint(x, b, "bytes", a->bytes);
	size_t at = pf_ann_open(x, b, TE_DEBUG, "address");
	pb_uint(b, DA_POINTER, a->address);
	pb_close(b, at);
	ann_str(x, b, "memory kind", tk_mem_kind_name(a->mem_kind));
	if (a->correlation)
		ann_uint(x, b, "correlation", a->correlation);
}

static void
kind_args(struct pf_enc *x, struct pbuf *b, const struct tk_event *e)
{
	switch (e->kind) {
	case TK_RANGE: case TK_MARK: range_args(x, b, &e->u.range, 0); break;
	case TK_ASYNC_RANGE: range_args(x, b, &e->u.range, 1); break;
	case TK_API:
		/* with flows, the call's correlation is its flow id's low bits
		 * (and an annotation of the GPU work it launched) */
		if (!x->flows || !e->u.api.correlation)
			ann_uint(x, b, "correlation", e->u.api.correlation);
		if (e->u.api.result)
			ann_int(x, b, "result", e->u.api.result);
		break;
	case TK_KERNEL: kernel_args(x, b, &e->u.kernel); break;
	case TK_MEMCPY: memcpy_args(x, b, &e->u.memcpy); break;
	case TK_MEMSET:
		ann_uint(x, b, "correlation", e->u.memset.correlation);
		ann_uint(x, b, "bytes", e->u.memset.bytes);
		ann_uint(x, b, "value", e->u.memset.value);
		ann_str(x, b, "memory kind", tk_mem_kind_name(e->u.memset.mem_kind));
		ann_async(x, b, e->u.memset.flags);
		break;
	case TK_SYNC:
		ann_str(x, b, "sync type", tk_sync_type_name(e->u.sync.type));
		if (e->u.sync.correlation)
			ann_uint(x, b, "correlation", e->u.sync.correlation);
		break;
	case TK_OVERHEAD: ann_uint(x, b, "overhead kind", e->u.overhead.type); break;
	case TK_PROCESS: process_args(x, b, &e->u.process); break;
	case TK_RUN:
		ann_uint(x, b, "run", e->u.run.index);
		exit_args(x, b, e->u.run.exit, e->u.run.exit_code, e->u.run.signal);
		break;
	case TK_MEMORY: memory_args(x, b, &e->u.memory); break;
	case TK_DROPPED:
		ann_uint(x, b, "count", e->u.dropped.count);
		ann_str(x, b, "reason", e->u.dropped.reason);
		break;
	}
}

/* ---- names, categories, flows ------------------------------------------------ */

static const char *
category(const struct tk_event *e)
{
	switch (e->kind) {
	case TK_RANGE: case TK_ASYNC_RANGE: case TK_MARK:
		return *e->u.range.domain ? e->u.range.domain : "nvtx";
	case TK_API:
		return e->u.api.domain == TK_API_RUNTIME ? "cuda_runtime"
		     : e->u.api.domain == TK_API_DRIVER ? "cuda_driver" : "cuda_api";
	case TK_KERNEL: return "kernel";
	case TK_MEMCPY: return "gpu_memcpy";
	case TK_MEMSET: return "gpu_memset";
	case TK_SYNC: return "cuda_sync";
	case TK_OVERHEAD: return "overhead";
	case TK_PROCESS: return "process";
	case TK_RUN: return "run";
	case TK_MEMORY: return "cuda_memory";
	case TK_DROPPED: return "dropped";
	case TK_FLOW: return *e->u.flow.category ? e->u.flow.category : "flow";
	}
	return "other";
}

static const char *
fallback_name(const struct tk_event *e)
{
	switch (e->kind) {
	case TK_OVERHEAD: return "profiler overhead";
	case TK_PROCESS: return "process";
	case TK_RUN: return "run";
	case TK_MEMORY: return e->u.memory.op == TK_MEM_FREE ? "free" : "alloc";
	case TK_DROPPED: return "dropped events";
	case TK_FLOW: return *e->u.flow.category ? e->u.flow.category : "flow";
	}
	return "";
}

static void
name_and_category(struct pf_enc *x, struct pbuf *b, const struct tk_event *e)
{
	const char *cat = category(e);
	uint64_t iid = pf_intern(x->in, PF_T_CATEGORY, cat, strlen(cat));
	if (iid)
		pb_uint(b, TE_CATEGORY_IIDS, iid);
	else
		pb_str(b, TE_CATEGORIES, cat);
	const char *name = *e->name ? e->name : fallback_name(e);
	iid = *e->name ? pf_intern_name(x->in, e->name_id, name)
	               : pf_intern(x->in, PF_T_NAME, name, strlen(name));
	if (iid)
		pb_uint(b, TE_NAME_IID, iid);
	else
		pb_str(b, TE_NAME, name);
}

/* Flow ids: the scope above bit 48 keeps the traces of several inputs
 * apart; correlations below it, imported flow ids with bit 47 set. */
static uint64_t
flow_id(uint32_t scope, uint64_t id, int imported)
{
	uint64_t low = imported ? (1ull << 47) | (id & ((1ull << 47) - 1))
	                        : id & ((1ull << 47) - 1);
	return ((uint64_t)(scope & 0xffff) << 48) | low;
}

static void
flows(struct pf_enc *x, struct pbuf *b, const struct tk_event *e)
{
	uint64_t corr = 0;
	switch (e->kind) {
	case TK_API:
		if (e->u.api.correlation && x->flows)
			pb_fixed64(b, TE_FLOW_IDS, flow_id(x->scope, e->u.api.correlation, 0));
		return;
	case TK_KERNEL: corr = e->u.kernel.correlation; break;
	case TK_MEMCPY: corr = e->u.memcpy.correlation; break;
	case TK_MEMSET: corr = e->u.memset.correlation; break;
	case TK_FLOW:
		pb_fixed64(b, e->u.flow.phase == TK_FLOW_END ? TE_TERMINATING_FLOW_IDS
		                                              : TE_FLOW_IDS,
		           flow_id(x->scope, e->u.flow.id, 1));
		return;
	default:
		return;
	}
	if (corr && x->flows)
		pb_fixed64(b, TE_TERMINATING_FLOW_IDS, flow_id(x->scope, corr, 0));
}

void
pf_encode_event(struct pf_enc *x, struct pbuf *te, const struct tk_event *e,
                uint64_t uuid, int type)
{
	te->len = 0;
	pb_uint(te, TE_TYPE, (uint64_t)type);
	pb_uint(te, TE_TRACK_UUID, uuid);
	if (type == TE_COUNTER) {
		/* a whole number (bytes, counts: most samples) as a varint,
		 * 5 bytes or so where a double takes 9 */
		double v = e->u.counter.value;
		if (v == trunc(v) && fabs(v) < 0x1p62)
			pb_int(te, TE_COUNTER_VALUE, (int64_t)v);
		else
			pb_double(te, TE_DOUBLE_COUNTER, v);
		return;
	}
	name_and_category(x, te, e);
	flows(x, te, e);
	kind_args(x, te, e);
	pf_args_annotate(x, te, e);
}
