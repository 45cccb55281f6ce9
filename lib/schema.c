/* SPDX-License-Identifier: MIT */
/*
 * The attributes of each event kind: which column number holds which
 * field of struct tk_event, and how it is encoded.  The reader and the
 * writer are both driven by this table, so a field is added in one
 * place.  Column numbers are part of the file format: never reuse one.
 */
#include <stddef.h>
#include <string.h>

#include "tk_private.h"

#define F(field) offsetof(struct tk_event, u.field)

#define A(n, enc, ft, field) { n, TKP_ENC_##enc, TKP_##ft, F(field), 0 }
#define STR(n, id_field, ptr_field) \
	{ n, TKP_ENC_STR, TKP_U32, F(id_field), F(ptr_field) }

static const struct tkp_attr range_attrs[] = {
	STR(1, range.domain_id, range.domain),
	A(2, U, U32, range.category),
	A(3, U, U32, range.color),
	A(4, U, U32, range.payload_type),
	A(5, U, U64, range.payload.u),
	A(6, U, U64, range.id),
	A(7, U, U32, range.end_track),
};

static const struct tkp_attr api_attrs[] = {
	A(1, U, U32, api.domain),
	A(2, U, U32, api.cbid),
	A(3, D, U64, api.correlation),
	A(4, S, I32, api.result),
};

/* Attribute 2 of kernels is the launch configuration id; its fields
 * (grid, block, cluster, shared memory, registers) come from a
 * definition, so that a repeated configuration costs one small number.
 * Its offset points at the first of them, so that address arithmetic on
 * it stays inside the struct. */
static const struct tkp_attr kernel_attrs[] = {
	A(1, D, U64, kernel.correlation),
	{ 2, TKP_ENC_CONFIG, TKP_U32, F(kernel.grid), 0 },
	A(3, U, U32, kernel.graph_id),
	A(4, U, U64, kernel.graph_node),
	STR(5, kernel.mangled_id, kernel.mangled),
};

static const struct tkp_attr memcpy_attrs[] = {
	A(1, D, U64, memcpy.correlation),
	A(2, U, U64, memcpy.bytes),
	A(3, U, U32, memcpy.copy_kind),
	A(4, U, U32, memcpy.src_kind),
	A(5, U, U32, memcpy.dst_kind),
	A(6, U, U32, memcpy.src_device),
	A(7, U, U32, memcpy.dst_device),
	A(8, U, U32, memcpy.flags),
};

static const struct tkp_attr memset_attrs[] = {
	A(1, D, U64, memset.correlation),
	A(2, U, U64, memset.bytes),
	A(3, U, U32, memset.value),
	A(4, U, U32, memset.mem_kind),
	A(5, U, U32, memset.flags),
};

static const struct tkp_attr sync_attrs[] = {
	A(1, D, U64, sync.correlation),
	A(2, U, U32, sync.type),
};

static const struct tkp_attr overhead_attrs[] = {
	A(1, U, U32, overhead.type),
};

static const struct tkp_attr counter_attrs[] = {
	A(1, F64, F64, counter.value),
};

static const struct tkp_attr memory_attrs[] = {
	A(1, D, U64, memory.correlation),
	A(2, U, U32, memory.op),
	A(3, U, U32, memory.mem_kind),
	A(4, D, U64, memory.address),
	A(5, U, U64, memory.bytes),
};

static const struct tkp_attr process_attrs[] = {
	A(1, U, U32, process.exit),
	A(2, S, I32, process.exit_code),
	A(3, U, U32, process.signal),
	A(4, U, I64, process.utime),
	A(5, U, I64, process.stime),
	A(6, U, U64, process.max_rss),
	A(7, U, U64, process.minflt),
	A(8, U, U64, process.majflt),
	A(9, U, U64, process.nvcsw),
	A(10, U, U64, process.nivcsw),
};

static const struct tkp_attr run_attrs[] = {
	A(1, U, U32, run.index),
	A(2, U, U32, run.exit),
	A(3, S, I32, run.exit_code),
	A(4, U, U32, run.signal),
};

static const struct tkp_attr dropped_attrs[] = {
	A(1, U, U64, dropped.count),
	STR(2, dropped.reason_id, dropped.reason),
};

static const struct tkp_attr flow_attrs[] = {
	A(1, U, U64, flow.id),
	A(2, U, U32, flow.phase),
	STR(3, flow.category_id, flow.category),
};

/* S(..., i): the kind's string attribute is arr[i] (one at most). */
#define K(arr, member) \
	{ arr, sizeof(arr) / sizeof(arr[0]), \
	  sizeof(((struct tk_event *)0)->u.member), NULL }
#define S(arr, member, i) \
	{ arr, sizeof(arr) / sizeof(arr[0]), \
	  sizeof(((struct tk_event *)0)->u.member), &arr[i] }

const struct tkp_kind_schema tkp_schema[TK_KIND_MAX + 1] = {
	[TK_RANGE] = S(range_attrs, range, 0),
	[TK_ASYNC_RANGE] = S(range_attrs, range, 0),
	[TK_MARK] = S(range_attrs, range, 0),
	[TK_API] = K(api_attrs, api),
	[TK_KERNEL] = S(kernel_attrs, kernel, 4),
	[TK_MEMCPY] = K(memcpy_attrs, memcpy),
	[TK_MEMSET] = K(memset_attrs, memset),
	[TK_SYNC] = K(sync_attrs, sync),
	[TK_OVERHEAD] = K(overhead_attrs, overhead),
	[TK_COUNTER] = K(counter_attrs, counter),
	[TK_MEMORY] = K(memory_attrs, memory),
	[TK_PROCESS] = K(process_attrs, process),
	[TK_RUN] = K(run_attrs, run),
	[TK_DROPPED] = S(dropped_attrs, dropped, 1),
	[TK_FLOW] = S(flow_attrs, flow, 2),
};

/*
 * The same kinds as the public sees them (tk_kind_field()): the members
 * of each kind's struct, named, in struct order, with what a generic
 * program needs to print them.  The table above is the file's view
 * (columns and encodings; the launch configuration is one column), this
 * one the struct's: tests/unit/test_schema.c checks that every column
 * lands in a listed field.
 */
#define FLD(field, name, type, count, flags, namer) \
	{ name, TK_FIELD_##type, count, F(field), flags, namer }
#define OPT TK_FIELD_OPTIONAL
#define CORR(field) FLD(field, "correlation", U64, 1, \
                        TK_FIELD_OPTIONAL | TK_FIELD_CORRELATION, NULL)

static const struct tk_field range_fields[] = {
	FLD(range.domain, "domain", STRING, 1, OPT, NULL),
	FLD(range.category, "category", U32, 1, OPT, NULL),
	FLD(range.color, "color", U32, 1, OPT, NULL),
	FLD(range.payload_type, "payload_type", U32, 1, OPT, NULL),
	FLD(range.payload, "payload", PAYLOAD, 1, 0, NULL),
	FLD(range.id, "id", U64, 1, OPT, NULL),
	FLD(range.end_track, "end_track", U32, 1, OPT, NULL),
};

static const struct tk_field api_fields[] = {
	FLD(api.domain, "domain", U32, 1, 0, tk_api_domain_name),
	FLD(api.cbid, "cbid", U32, 1, OPT, NULL),
	CORR(api.correlation),
	FLD(api.result, "result", I32, 1, 0, NULL),
};

static const struct tk_field kernel_fields[] = {
	CORR(kernel.correlation),
	FLD(kernel.grid, "grid", U32, 3, 0, NULL),
	FLD(kernel.block, "block", U32, 3, 0, NULL),
	FLD(kernel.cluster, "cluster", U32, 3, OPT, NULL),
	FLD(kernel.static_smem, "static_smem", U32, 1, 0, NULL),
	FLD(kernel.dynamic_smem, "dynamic_smem", U32, 1, 0, NULL),
	FLD(kernel.registers, "registers", U32, 1, 0, NULL),
	FLD(kernel.graph_id, "graph_id", U32, 1, OPT, NULL),
	FLD(kernel.graph_node, "graph_node", U64, 1, 0, NULL),
	FLD(kernel.mangled, "mangled", STRING, 1, OPT, NULL),
};

static const struct tk_field memcpy_fields[] = {
	CORR(memcpy.correlation),
	FLD(memcpy.bytes, "bytes", U64, 1, 0, NULL),
	FLD(memcpy.copy_kind, "copy_kind", U32, 1, 0, tk_copy_kind_name),
	FLD(memcpy.src_kind, "src_kind", U32, 1, 0, tk_mem_kind_name),
	FLD(memcpy.dst_kind, "dst_kind", U32, 1, 0, tk_mem_kind_name),
	FLD(memcpy.src_device, "src_device", U32, 1, 0, NULL),
	FLD(memcpy.dst_device, "dst_device", U32, 1, 0, NULL),
	FLD(memcpy.flags, "flags", U32, 1, 0, NULL),
};

static const struct tk_field memset_fields[] = {
	CORR(memset.correlation),
	FLD(memset.bytes, "bytes", U64, 1, 0, NULL),
	FLD(memset.value, "value", U32, 1, 0, NULL),
	FLD(memset.mem_kind, "mem_kind", U32, 1, 0, tk_mem_kind_name),
	FLD(memset.flags, "flags", U32, 1, 0, NULL),
};

static const struct tk_field sync_fields[] = {
	CORR(sync.correlation),
	FLD(sync.type, "type", U32, 1, 0, tk_sync_type_name),
};

static const struct tk_field overhead_fields[] = {
	FLD(overhead.type, "type", U32, 1, 0, NULL),
};

static const struct tk_field counter_fields[] = {
	FLD(counter.value, "value", F64, 1, 0, NULL),
};

static const struct tk_field memory_fields[] = {
	CORR(memory.correlation),
	FLD(memory.op, "op", U32, 1, 0, NULL),
	FLD(memory.mem_kind, "mem_kind", U32, 1, 0, tk_mem_kind_name),
	FLD(memory.address, "address", U64, 1, 0, NULL),
	FLD(memory.bytes, "bytes", U64, 1, 0, NULL),
};

static const struct tk_field process_fields[] = {
	FLD(process.exit, "exit", U32, 1, 0, NULL),
	FLD(process.exit_code, "exit_code", I32, 1, 0, NULL),
	FLD(process.signal, "signal", U32, 1, 0, NULL),
	FLD(process.utime, "utime", I64, 1, 0, NULL),
	FLD(process.stime, "stime", I64, 1, 0, NULL),
	FLD(process.max_rss, "max_rss", U64, 1, 0, NULL),
	FLD(process.minflt, "minflt", U64, 1, 0, NULL),
	FLD(process.majflt, "majflt", U64, 1, 0, NULL),
	FLD(process.nvcsw, "nvcsw", U64, 1, 0, NULL),
	FLD(process.nivcsw, "nivcsw", U64, 1, 0, NULL),
};

static const struct tk_field run_fields[] = {
	FLD(run.index, "index", U32, 1, 0, NULL),
	FLD(run.exit, "exit", U32, 1, 0, NULL),
	FLD(run.exit_code, "exit_code", I32, 1, 0, NULL),
	FLD(run.signal, "signal", U32, 1, 0, NULL),
};

static const struct tk_field dropped_fields[] = {
	FLD(dropped.count, "count", U64, 1, 0, NULL),
	FLD(dropped.reason, "reason", STRING, 1, 0, NULL),
};

static const struct tk_field flow_fields[] = {
	FLD(flow.id, "id", U64, 1, 0, NULL),
	FLD(flow.phase, "phase", U32, 1, 0, NULL),
	FLD(flow.category, "category", STRING, 1, OPT, NULL),
};

/* Each kind's fields, and the offset of its correlation (0: none), so
 * that tk_event_correlation() is one load. */
struct kind_fields {
	const struct tk_field *f;
	size_t n;
	size_t corr;
};

#define KF(arr) { arr, sizeof(arr) / sizeof(arr[0]), 0 }
#define KFC(arr, member) \
	{ arr, sizeof(arr) / sizeof(arr[0]), F(member.correlation) }

static const struct kind_fields kind_fields[TK_KIND_MAX + 1] = {
	[TK_RANGE] = KF(range_fields),
	[TK_ASYNC_RANGE] = KF(range_fields),
	[TK_MARK] = KF(range_fields),
	[TK_API] = KFC(api_fields, api),
	[TK_KERNEL] = KFC(kernel_fields, kernel),
	[TK_MEMCPY] = KFC(memcpy_fields, memcpy),
	[TK_MEMSET] = KFC(memset_fields, memset),
	[TK_SYNC] = KFC(sync_fields, sync),
	[TK_OVERHEAD] = KF(overhead_fields),
	[TK_COUNTER] = KF(counter_fields),
	[TK_MEMORY] = KFC(memory_fields, memory),
	[TK_PROCESS] = KF(process_fields),
	[TK_RUN] = KF(run_fields),
	[TK_DROPPED] = KF(dropped_fields),
	[TK_FLOW] = KF(flow_fields),
};

TK_PUBLIC const struct tk_field *
tk_kind_field(unsigned kind, size_t i)
{
	if (kind > TK_KIND_MAX || i >= kind_fields[kind].n)
		return NULL;
	return &kind_fields[kind].f[i];
}

TK_PUBLIC const struct tk_field *
tk_kind_field_named(unsigned kind, const char *name)
{
	const struct tk_field *f;
	for (size_t i = 0; name && (f = tk_kind_field(kind, i)); i++)
		if (strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

TK_PUBLIC union tk_value
tk_field_value(const struct tk_event *e, const struct tk_field *f, unsigned i)
{
	union tk_value v = { 0 };
	if (!e || !f || i >= f->count)
		return v;
	const char *p = (const char *)e + f->offset;
	switch (f->type) {
	case TK_FIELD_U32: {
		uint32_t x;
		memcpy(&x, p + (size_t)i * sizeof(x), sizeof(x));
		v.u = x;
		break;
	}
	case TK_FIELD_I32: {
		int32_t x;
		memcpy(&x, p + (size_t)i * sizeof(x), sizeof(x));
		v.i = x;
		break;
	}
	case TK_FIELD_U64:
		memcpy(&v.u, p + (size_t)i * sizeof(v.u), sizeof(v.u));
		break;
	case TK_FIELD_I64:
		memcpy(&v.i, p + (size_t)i * sizeof(v.i), sizeof(v.i));
		break;
	case TK_FIELD_F64:
		memcpy(&v.d, p + (size_t)i * sizeof(v.d), sizeof(v.d));
		break;
	case TK_FIELD_PAYLOAD:
		memcpy(&v, p, sizeof(v));
		break;
	}
	return v;
}

TK_PUBLIC const char *
tk_field_string(const struct tk_event *e, const struct tk_field *f)
{
	const char *s = NULL;
	if (e && f && f->type == TK_FIELD_STRING)
		memcpy(&s, (const char *)e + f->offset, sizeof(s));
	return s ? s : "";
}

TK_PUBLIC uint64_t
tk_event_correlation(const struct tk_event *e)
{
	if (e->kind > TK_KIND_MAX || !kind_fields[e->kind].corr)
		return 0;
	uint64_t c;
	memcpy(&c, (const char *)e + kind_fields[e->kind].corr, sizeof(c));
	return c;
}
