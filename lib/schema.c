/* SPDX-License-Identifier: MIT */
/*
 * The attributes of each event kind: which column number holds which
 * field of struct tk_event, and how it is encoded.  The reader and the
 * writer are both driven by this table, so a field is added in one
 * place.  Column numbers are part of the file format: never reuse one.
 */
#include <stddef.h>

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
