/* SPDX-License-Identifier: MIT */
/*
 * The event tables of an nsys export, each read in time order by one
 * SELECT built from the columns the table has (a column this release of
 * nsys did not write reads as NULL), and each row made a tracekit event.
 *
 * nsys's numbers are CUPTI's where tracekit's are too (copy kinds,
 * kernel launch configuration), except its memory kinds: nsys counts
 * them from 0 = pageable (CUDA_MEMOPR_MEMORY_KIND, the user guide's
 * "SQLite Schema Event Values"), CUPTI and tracekit from 0 = unknown.
 * NVTX event types: 34 mark, 59 push/pop range, 60 start/end range; the
 * others (33 category, 39 thread name, 75 domain name) are definitions
 * nsys_defs.c and nsys.c read.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsys.h"
#include "common/util.h"

struct nsys_spec {
	const char *table;
	const char *const *cols;   /* [0] start, [1] end */
	int ncols;
	const char *where;         /* rows this spec converts, or NULL */
	int need_end;              /* a row without an end is bad */
	/* fill ev from the row; 1: write it, 0: skip it (counted) */
	int (*row)(struct nsys *ns, sqlite3_stmt *st, struct tk_event *ev);
};

const char *
nsys_spec_table(const struct nsys_spec *spec)
{
	return spec->table;
}

/* ---- column values ------------------------------------------------------------ */

static int
is_null(sqlite3_stmt *st, int col)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL;
}

/* An integer column; 0 for NULL, text or a blob (nsys writes defaults
 * where values are missing, and a damaged row must not stop the rest). */
static int64_t
i64(sqlite3_stmt *st, int col)
{
	int t = sqlite3_column_type(st, col);
	if (t == SQLITE_INTEGER)
		return sqlite3_column_int64(st, col);
	if (t == SQLITE_FLOAT) {
		double d = sqlite3_column_double(st, col);
		return d > -9e18 && d < 9e18 ? (int64_t)d : 0;
	}
	return 0;
}

static uint32_t
u32(sqlite3_stmt *st, int col)
{
	int64_t v = i64(st, col);
	return v < 0 || v > UINT32_MAX ? 0 : (uint32_t)v;
}

static uint64_t
u64(sqlite3_stmt *st, int col)
{
	return (uint64_t)i64(st, col);
}

/* nsys memory kind (0 = pageable ... 6 = managed static, 7 = unknown)
 * to tracekit's (0 = unknown, 1 = pageable ...). */
static uint32_t
mem_kind(sqlite3_stmt *st, int col)
{
	if (is_null(st, col))
		return TK_MEM_UNKNOWN;
	int64_t k = i64(st, col);
	return k >= 0 && k <= 6 ? (uint32_t)k + 1 : TK_MEM_UNKNOWN;
}

static int
stream_of(struct nsys *ns, sqlite3_stmt *st, int pid, int dev, int ctx, int stream,
          struct tk_event *ev)
{
	ev->track = nsys_stream(ns, i64(st, pid), u32(st, dev), u64(st, ctx), u64(st, stream));
	return ev->track != 0;
}

/* ---- kernels ---------------------------------------------------------------------- */

enum { K_START, K_END, K_DEV, K_CTX, K_STREAM, K_CORR, K_PID, K_DEMANGLED, K_SHORT,
	K_MANGLED, K_GX, K_GY, K_GZ, K_BX, K_BY, K_BZ, K_REGS, K_SSMEM, K_DSMEM,
	K_GRAPH_NODE, K_GRAPH, K_NCOLS };
static const char *const kernel_cols[K_NCOLS] = { "start", "end", "deviceId",
	"contextId", "streamId", "correlationId", "globalPid", "demangledName",
	"shortName", "mangledName", "gridX", "gridY", "gridZ", "blockX", "blockY",
	"blockZ", "registersPerThread", "staticSharedMemory", "dynamicSharedMemory",
	"graphNodeId", "graphId" };

static int
kernel_row(struct nsys *ns, sqlite3_stmt *st, struct tk_event *ev)
{
	struct tk_kernel_attrs *k = &ev->u.kernel;
	ev->kind = TK_KERNEL;
	if (!stream_of(ns, st, K_PID, K_DEV, K_CTX, K_STREAM, ev))
		return 0;
	ev->name_id = nsys_string(ns, st, K_DEMANGLED);
	if (!ev->name_id)
		ev->name_id = nsys_string(ns, st, K_SHORT);
	k->mangled_id = nsys_string(ns, st, K_MANGLED);
	if (k->mangled_id == ev->name_id)
		k->mangled_id = 0;
	k->correlation = u64(st, K_CORR);
	for (int i = 0; i < 3; i++) {
		k->grid[i] = u32(st, K_GX + i);
		k->block[i] = u32(st, K_BX + i);
	}
	k->registers = u32(st, K_REGS);
	k->static_smem = u32(st, K_SSMEM);
	k->dynamic_smem = u32(st, K_DSMEM);
	k->graph_node = u64(st, K_GRAPH_NODE);
	k->graph_id = u32(st, K_GRAPH);
	return 1;
}

/* ---- memory copies, memsets, allocations ------------------------------------------ */

enum { C_START, C_END, C_DEV, C_CTX, C_STREAM, C_CORR, C_PID, C_BYTES, C_KIND,
	C_SRC, C_DST, C_SRC_DEV, C_DST_DEV, C_NCOLS };
static const char *const memcpy_cols[C_NCOLS] = { "start", "end", "deviceId",
	"contextId", "streamId", "correlationId", "globalPid", "bytes", "copyKind",
	"srcKind", "dstKind", "srcDeviceId", "dstDeviceId" };

static int
memcpy_row(struct nsys *ns, sqlite3_stmt *st, struct tk_event *ev)
{
	struct tk_memcpy_attrs *m = &ev->u.memcpy;
	ev->kind = TK_MEMCPY;
	if (!stream_of(ns, st, C_PID, C_DEV, C_CTX, C_STREAM, ev))
		return 0;
	int64_t kind = i64(st, C_KIND);
	/* 11-13: unified memory migrations, host to device, device to host,
	 * device to device; tracekit has no kinds of their own for them */
	static const uint32_t uvm[3] = { TK_COPY_HTOD, TK_COPY_DTOH, TK_COPY_DTOD };
	m->copy_kind = kind >= 0 && kind <= TK_COPY_PTOP ? (uint32_t)kind
	             : kind >= 11 && kind <= 13 ? uvm[kind - 11] : TK_COPY_UNKNOWN;
	if (kind >= 11 && kind <= 13) {
		ev->args = "{\"uvm\":true}";
		ev->args_len = (uint32_t)strlen(ev->args);
	}
	m->correlation = u64(st, C_CORR);
	m->bytes = u64(st, C_BYTES);
	m->src_kind = mem_kind(st, C_SRC);
	m->dst_kind = mem_kind(st, C_DST);
	m->src_device = u32(st, C_SRC_DEV);
	m->dst_device = u32(st, C_DST_DEV);
	char name[96];
	snprintf(name, sizeof(name), "Memcpy %s (%s -> %s)", tk_copy_kind_name(m->copy_kind),
	         tk_mem_kind_name(m->src_kind), tk_mem_kind_name(m->dst_kind));
	ev->name_id = tk_writer_cstring(ns->w, name);
	return 1;
}

enum { S_START, S_END, S_DEV, S_CTX, S_STREAM, S_CORR, S_PID, S_BYTES, S_VALUE,
	S_KIND, S_NCOLS };
static const char *const memset_cols[S_NCOLS] = { "start", "end", "deviceId",
	"contextId", "streamId", "correlationId", "globalPid", "bytes", "value", "memKind" };

static int
memset_row(struct nsys *ns, sqlite3_stmt *st, struct tk_event *ev)
{
	struct tk_memset_attrs *m = &ev->u.memset;
	ev->kind = TK_MEMSET;
	if (!stream_of(ns, st, S_PID, S_DEV, S_CTX, S_STREAM, ev))
		return 0;
	m->correlation = u64(st, S_CORR);
	m->bytes = u64(st, S_BYTES);
	m->value = u32(st, S_VALUE);
	m->mem_kind = mem_kind(st, S_KIND);
	char name[64];
	snprintf(name, sizeof(name), "Memset (%s)", tk_mem_kind_name(m->mem_kind));
	ev->name_id = tk_writer_cstring(ns->w, name);
	return 1;
}

enum { A_START, A_END, A_PID, A_ADDR, A_BYTES, A_KIND, A_OP, A_CORR, A_NCOLS };
static const char *const memory_cols[A_NCOLS] = { "start", "end", "globalPid",
	"address", "bytes", "memKind", "memoryOperationType", "correlationId" };

static int
memory_row(struct nsys *ns, sqlite3_stmt *st, struct tk_event *ev)
{
	struct tk_memory_attrs *m = &ev->u.memory;
	ev->kind = TK_MEMORY;
	ev->dur = 0;
	/* no stream in the row: the process's track */
	if (!(ev->track = nsys_process(ns, i64(st, A_PID))))
		return 0;
	m->op = i64(st, A_OP) == 1 ? TK_MEM_FREE : TK_MEM_ALLOC;
	m->mem_kind = mem_kind(st, A_KIND);
	m->address = u64(st, A_ADDR);
	m->bytes = u64(st, A_BYTES);
	m->correlation = u64(st, A_CORR);
	char name[64];
	snprintf(name, sizeof(name), "%s (%s)", m->op == TK_MEM_FREE ? "Free" : "Alloc",
	         tk_mem_kind_name(m->mem_kind));
	ev->name_id = tk_writer_cstring(ns->w, name);
	return 1;
}

/* ---- CUDA API calls ---------------------------------------------------------------- */

enum { R_START, R_END, R_TID, R_CORR, R_NAME, R_RESULT, R_CLASS, R_NCOLS };
static const char *const api_cols[R_NCOLS] = { "start", "end", "globalTid",
	"correlationId", "nameId", "returnValue", "eventClass" };

static int
api_row(struct nsys *ns, sqlite3_stmt *st, struct tk_event *ev, uint32_t domain)
{
	struct tk_api_attrs *a = &ev->u.api;
	ev->kind = TK_API;
	if (is_null(st, R_TID) || !(ev->track = nsys_thread(ns, i64(st, R_TID))))
		return 0;
	/* eventClass: 0 runtime, 1 driver, 67 a backtrace, others are
	 * libraries (cuDNN, cuBLAS) nsys traces alike */
	if (!is_null(st, R_CLASS)) {
		int64_t c = i64(st, R_CLASS);
		if (c == 67)
			return 0;    /* the call's backtrace: the call has a row too */
		domain = c == 0 ? TK_API_RUNTIME : c == 1 ? TK_API_DRIVER : TK_API_OTHER;
	}
	a->domain = domain;
	a->correlation = u64(st, R_CORR);
	a->result = (int32_t)i64(st, R_RESULT);
	/* runtime names lose the CUDA version that introduced them, as
	 * the recorder writes them */
	uint32_t id = domain == TK_API_RUNTIME ? nsys_runtime_name(ns, st, R_NAME)
	                                       : nsys_string(ns, st, R_NAME);
	ev->name_id = id;
	return 1;
}

static int
runtime_row(struct nsys *ns, sqlite3_stmt *st, struct tk_event *ev)
{
	return api_row(ns, st, ev, TK_API_RUNTIME);
}

static int
driver_row(struct nsys *ns, sqlite3_stmt *st, struct tk_event *ev)
{
	return api_row(ns, st, ev, TK_API_DRIVER);
}

/* ---- NVTX ----------------------------------------------------------------------------- */

enum { N_START, N_END, N_TYPE, N_RANGE, N_CATEGORY, N_COLOR, N_TEXT, N_TID,
	N_END_TID, N_TEXT_ID, N_DOMAIN, N_U64, N_I64, N_DOUBLE, N_U32, N_I32, N_FLOAT,
	N_NCOLS };
static const char *const nvtx_cols[N_NCOLS] = { "start", "end", "eventType",
	"rangeId", "category", "color", "text", "globalTid", "endGlobalTid", "textId",
	"domainId", "uint64Value", "int64Value", "doubleValue", "uint32Value",
	"int32Value", "floatValue" };

static void
nvtx_payload(sqlite3_stmt *st, struct tk_range_attrs *r)
{
	static const struct { int col; uint32_t type; } p[] = {
		{ N_U64, TK_PAYLOAD_UINT }, { N_I64, TK_PAYLOAD_INT },
		{ N_DOUBLE, TK_PAYLOAD_DOUBLE }, { N_U32, TK_PAYLOAD_UINT },
		{ N_I32, TK_PAYLOAD_INT }, { N_FLOAT, TK_PAYLOAD_DOUBLE },
	};
	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++) {
		if (is_null(st, p[i].col))
			continue;
		r->payload_type = p[i].type;
		if (p[i].type == TK_PAYLOAD_DOUBLE)
			r->payload.d = sqlite3_column_double(st, p[i].col);
		else
			r->payload.i = i64(st, p[i].col);
		return;
	}
}

static int
nvtx_row(struct nsys *ns, sqlite3_stmt *st, struct tk_event *ev)
{
	struct tk_range_attrs *r = &ev->u.range;
	int64_t type = i64(st, N_TYPE);
	ev->kind = type == 34 ? TK_MARK : type == 59 ? TK_RANGE : TK_ASYNC_RANGE;
	if (is_null(st, N_TID) || !(ev->track = nsys_thread(ns, i64(st, N_TID))))
		return 0;
	if (ev->kind == TK_MARK) {
		ev->dur = 0;
	} else if (is_null(st, N_END) || i64(st, N_END) < ev->ts) {
		ns->open_ranges++;   /* never ended in the report */
		ev->dur = 0;
	}
	r->domain_id = nsys_domain(ns, i64(st, N_TID), i64(st, N_DOMAIN), &r->domain);
	r->category = u32(st, N_CATEGORY);
	r->color = u32(st, N_COLOR);
	nvtx_payload(st, r);
	if (ev->kind == TK_ASYNC_RANGE) {
		r->id = u64(st, N_RANGE);
		if (!is_null(st, N_END_TID) && i64(st, N_END_TID) != i64(st, N_TID))
			r->end_track = nsys_thread(ns, i64(st, N_END_TID));
	}
	/* last: the text is only valid until the next lookup */
	if (!is_null(st, N_TEXT))
		ev->name = nsys_text(st, N_TEXT);
	else
		ev->name_id = nsys_string(ns, st, N_TEXT_ID);
	return 1;
}

/* ---- the list ---------------------------------------------------------------------------- */

#define SPEC(name, table, cols, where, need_end, fn) \
	static const struct nsys_spec name = { table, cols, \
		(int)(sizeof(cols) / sizeof(cols[0])), where, need_end, fn }
SPEC(kernel_spec, "CUPTI_ACTIVITY_KIND_KERNEL", kernel_cols, NULL, 1, kernel_row);
SPEC(memcpy_spec, "CUPTI_ACTIVITY_KIND_MEMCPY", memcpy_cols, NULL, 1, memcpy_row);
SPEC(memset_spec, "CUPTI_ACTIVITY_KIND_MEMSET", memset_cols, NULL, 1, memset_row);
SPEC(memory_spec, "CUDA_GPU_MEMORY_USAGE_EVENTS", memory_cols, NULL, 0, memory_row);
SPEC(runtime_spec, "CUPTI_ACTIVITY_KIND_RUNTIME", api_cols, NULL, 1, runtime_row);
SPEC(driver_spec, "CUPTI_ACTIVITY_KIND_DRIVER", api_cols, NULL, 1, driver_row);
SPEC(nvtx_spec, "NVTX_EVENTS", nvtx_cols, "\"eventType\" IN (34, 59, 60)", 0, nvtx_row);

/* API calls first: at equal times a launch is written before its kernel */
const struct nsys_spec *const nsys_specs[] = { &runtime_spec, &driver_spec,
	&nvtx_spec, &kernel_spec, &memcpy_spec, &memset_spec, &memory_spec, NULL };

/* ---- reading ------------------------------------------------------------------------------- */

int
nsys_source_open(struct nsys *ns, struct nsys_source *src, const struct nsys_spec *spec,
                 struct nsys_table *t)
{
	memset(src, 0, sizeof(*src));
	src->spec = spec;
	src->table = t;
	if (!nsys_has(t, "start")) {
		nsys_warn(ns, "table %s has no column 'start' (a schema this importer does "
		          "not know): skipped", t->name);
		return -1;
	}
	if (spec->where && !nsys_has(t, "eventType")) {
		nsys_warn(ns, "table %s has no column 'eventType': skipped", t->name);
		return -1;
	}
	size_t cap = 256, k = 0;
	for (int i = 0; i < spec->ncols; i++)
		cap += strlen(spec->cols[i]) + 8;
	char *sql = malloc(cap + strlen(t->name) + (spec->where ? strlen(spec->where) : 0));
	if (!sql)
		cmd_die(EXIT_USAGE, "out of memory");
	k += (size_t)sprintf(sql, "SELECT ");
	for (int i = 0; i < spec->ncols; i++)
		k += (size_t)(nsys_has(t, spec->cols[i])
		              ? sprintf(sql + k, "%s\"%s\"", i ? ", " : "", spec->cols[i])
		              : sprintf(sql + k, "%sNULL", i ? ", " : ""));
	k += (size_t)sprintf(sql + k, " FROM \"%s\"", t->name);
	if (spec->where)
		k += (size_t)sprintf(sql + k, " WHERE %s", spec->where);
	sprintf(sql + k, " ORDER BY \"start\"");
	int rc = sqlite3_prepare_v2(ns->db, sql, -1, &src->stmt, NULL);
	free(sql);
	if (rc != SQLITE_OK) {
		nsys_warn(ns, "table %s cannot be read: %s", t->name, sqlite3_errmsg(ns->db));
		sqlite3_finalize(src->stmt);
		src->stmt = NULL;
		return -1;
	}
	t->used = 1;
	return 0;
}

/* A row is bad when its times are missing or not integers, or (for
 * spans) it ends before it starts. */
static int
row_ok(const struct nsys_source *src)
{
	sqlite3_stmt *st = src->stmt;
	/* INT64_MIN is no time: tracekit readers refuse it */
	if (sqlite3_column_type(st, 0) != SQLITE_INTEGER ||
	    sqlite3_column_int64(st, 0) == INT64_MIN)
		return 0;
	if (!src->spec->need_end)
		return 1;
	return sqlite3_column_type(st, 1) == SQLITE_INTEGER &&
	       sqlite3_column_int64(st, 1) >= sqlite3_column_int64(st, 0);
}

int
nsys_source_next(struct nsys *ns, struct nsys_source *src)
{
	src->live = 0;
	for (;;) {
		int rc = sqlite3_step(src->stmt);
		if (rc == SQLITE_DONE)
			return 0;
		if (rc != SQLITE_ROW) {
			nsys_warn(ns, "table %s: %s (after %" PRIu64 " rows)", src->table->name,
			          sqlite3_errmsg(ns->db), src->rows);
			return -1;
		}
		src->rows++;
		if (row_ok(src))
			break;
		ns->bad_rows++;
		nsys_warn(ns, "table %s: row %" PRIu64 " has no valid start and end time: "
		          "skipped", src->table->name, src->rows);
	}
	src->start = sqlite3_column_int64(src->stmt, 0);
	src->live = 1;
	return 1;
}

int
nsys_source_emit(struct nsys *ns, struct nsys_source *src)
{
	sqlite3_stmt *st = src->stmt;
	struct tk_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.ts = src->start;
	ev.name = "";
	if (!is_null(st, 1) && sqlite3_column_type(st, 1) == SQLITE_INTEGER &&
	    sqlite3_column_int64(st, 1) >= ev.ts) {
		/* a damaged row may span more than int64 holds (a start
		 * near INT64_MIN): the difference is taken unsigned, capped */
		uint64_t d = (uint64_t)sqlite3_column_int64(st, 1) - (uint64_t)ev.ts;
		ev.dur = d > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)d;
	}
	int keep = src->spec->row(ns, st, &ev);
	if (ns->output_failed)
		return -1;
	if (!keep)
		return 0;
	if (tk_writer_event(ns->w, &ev) != TK_OK) {
		ns->output_failed = 1;
		return -1;
	}
	src->written++;
	return 0;
}

void
nsys_source_close(struct nsys_source *src)
{
	sqlite3_finalize(src->stmt);
	src->stmt = NULL;
}
