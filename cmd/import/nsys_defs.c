/* SPDX-License-Identifier: MIT */
/*
 * What the events of an nsys export refer to, as writer definitions made
 * the first time an event needs them, so that only the processes,
 * threads, devices and streams that hold events are defined (an export
 * lists every process of the machine in PROCESSES).
 *
 * nsys names threads and processes by a serialized global id: bits 0-23
 * the thread id, 24-47 the process id, 48-55 the VM id, 56-63 the
 * hardware id (the Nsight Systems user guide, "Serialized Process and
 * Thread Identifiers").  A globalPid is a globalTid with the thread bits
 * zero.  Strings are ids into StringIds; each is looked up once.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsys.h"
#include "common/util.h"
#include "support.h"

#define TID_MASK INT64_C(0xFFFFFF)

enum tag { K_STRING = 1, K_RUNTIME_NAME, K_PROCESS, K_THREAD, K_STREAM, K_DEVICE, K_DOMAIN,
	K_TNAME };

struct slot {
	uint64_t k[4];
	uint32_t tag;
	uint32_t val;              /* 0 = empty */
};

struct nsys_map {
	struct slot *slots;
	size_t cap, n;
	char **names;              /* NVTX domain and thread names, by the
	                              K_DOMAIN and K_TNAME values */
	size_t nnames, names_cap;
};

static uint64_t
hash_key(uint32_t tag, const uint64_t k[4])
{
	uint64_t h = tkp_hash_u64(tag);
	for (int i = 0; i < 4; i++)
		h = tkp_hash_u64(h ^ k[i]);
	return h;
}

static struct slot *
find(const struct nsys_map *m, uint32_t tag, const uint64_t k[4])
{
	size_t mask = m->cap - 1;
	size_t i = (size_t)hash_key(tag, k) & mask;
	while (m->slots[i].val && !(m->slots[i].tag == tag &&
	                            memcmp(m->slots[i].k, k, sizeof(m->slots[i].k)) == 0))
		i = (i + 1) & mask;
	return &m->slots[i];
}

static uint32_t
get(const struct nsys_map *m, uint32_t tag, uint64_t a, uint64_t b, uint64_t c,
    uint64_t d)
{
	uint64_t k[4] = { a, b, c, d };
	return m->cap ? find(m, tag, k)->val : 0;
}

static void
put(struct nsys_map *m, uint32_t tag, uint64_t a, uint64_t b, uint64_t c,
    uint64_t d, uint32_t val)
{
	if ((m->n + 1) * 2 > m->cap) {
		struct slot *old = m->slots;
		size_t oldcap = m->cap;
		m->cap = oldcap ? oldcap * 2 : 256;
		if (!(m->slots = calloc(m->cap, sizeof(*m->slots))))
			cmd_die(EXIT_USAGE, "out of memory");
		for (size_t i = 0; i < oldcap; i++)
			if (old[i].val)
				*find(m, old[i].tag, old[i].k) = old[i];
		free(old);
	}
	uint64_t k[4] = { a, b, c, d };
	struct slot *s = find(m, tag, k);
	if (!s->val)
		m->n++;
	*s = (struct slot){ { a, b, c, d }, tag, val };
}

/* ---- queries ---------------------------------------------------------------- */

/* Prepare sql and bind ?1 = key; the statement is stepped to its first
 * row.  NULL if there is none (or the SQL fails: a damaged table only
 * costs the names it would have given). */
static sqlite3_stmt *
lookup2(struct nsys *ns, const char *sql, int64_t key, int64_t key2)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(ns->db, sql, -1, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return NULL;
	}
	sqlite3_bind_int64(st, 1, key);
	if (sqlite3_bind_parameter_count(st) >= 2)
		sqlite3_bind_int64(st, 2, key2);
	if (sqlite3_step(st) != SQLITE_ROW) {
		sqlite3_finalize(st);
		return NULL;
	}
	return st;
}

static sqlite3_stmt *
lookup(struct nsys *ns, const char *sql, int64_t key)
{
	return lookup2(ns, sql, key, 0);
}

/* A column's text, valid UTF-8, copied ("" for NULL). */
static char *
column_text(sqlite3_stmt *st, int col)
{
	const char *s = (const char *)sqlite3_column_text(st, col);
	size_t n = (size_t)sqlite3_column_bytes(st, col), ok_len;
	if (!s)
		return cmd_xstrdup("");
	const char *ok = cmd_utf8(s, n, &ok_len);
	char *copy = malloc(ok_len + 1);
	if (!copy)
		cmd_die(EXIT_USAGE, "out of memory");
	memcpy(copy, ok, ok_len);
	copy[ok_len] = 0;
	return copy;
}

/* The text a one-column query gives for ?1 = key (and ?2 = key2), or
 * NULL. */
static char *
query_text2(struct nsys *ns, const char *sql, int64_t key, int64_t key2)
{
	sqlite3_stmt *st = lookup2(ns, sql, key, key2);
	char *s = st && sqlite3_column_type(st, 0) != SQLITE_NULL ? column_text(st, 0) : NULL;
	sqlite3_finalize(st);
	return s;
}

static char *
query_text(struct nsys *ns, const char *sql, int64_t key)
{
	return query_text2(ns, sql, key, 0);
}

/* Keep s (taken) in the map's names; its number for the map. */
static uint32_t
add_name(struct nsys_map *m, char *s)
{
	char **names = tkp_grow(m->names, &m->names_cap, m->nnames + 1, sizeof(*names));
	if (!names)
		cmd_die(EXIT_USAGE, "out of memory");
	m->names = names;
	m->names[m->nnames++] = s;
	return (uint32_t)m->nnames;
}

/* The names nvtxNameOsThread gave threads (NVTX event type 39), read
 * once rather than a scan of NVTX_EVENTS per thread; the last wins. */
static void
load_thread_names(struct nsys *ns)
{
	struct nsys_table *t = nsys_table(ns, "NVTX_EVENTS");
	sqlite3_stmt *st = NULL;
	if (!nsys_has(t, "eventType") || !nsys_has(t, "text") || !nsys_has(t, "globalTid") ||
	    sqlite3_prepare_v2(ns->db, "SELECT globalTid, text FROM NVTX_EVENTS WHERE "
	                       "eventType = 39 AND text IS NOT NULL AND globalTid IS NOT "
	                       "NULL ORDER BY start", -1, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return;
	}
	while (sqlite3_step(st) == SQLITE_ROW)
		put(ns->map, K_TNAME, (uint64_t)sqlite3_column_int64(st, 0), 0, 0, 0,
		    add_name(ns->map, column_text(st, 1)));
	sqlite3_finalize(st);
}

static void
load_host(struct nsys *ns)
{
	struct nsys_table *t = nsys_table(ns, "TARGET_INFO_SYSTEM_ENV");
	if (t && nsys_has(t, "name") && nsys_has(t, "value"))
		ns->host = query_text(ns, "SELECT value FROM TARGET_INFO_SYSTEM_ENV "
		                      "WHERE name = 'Hostname' AND ?1 = ?1", 0);
	if (!ns->host)
		ns->host = cmd_xstrdup("");
}

int
nsys_defs_init(struct nsys *ns)
{
	if (!(ns->map = calloc(1, sizeof(*ns->map))))
		cmd_die(EXIT_USAGE, "out of memory");
	struct nsys_table *t = nsys_table(ns, "StringIds");
	if (t && nsys_has(t, "id") && nsys_has(t, "value") &&
	    sqlite3_prepare_v2(ns->db, "SELECT value FROM StringIds WHERE id = ?1", -1,
	                       &ns->string_stmt, NULL) != SQLITE_OK) {
		nsys_warn(ns, "StringIds cannot be read: %s", sqlite3_errmsg(ns->db));
		sqlite3_finalize(ns->string_stmt);
		ns->string_stmt = NULL;
	}
	load_host(ns);
	load_thread_names(ns);
	return 0;
}

void
nsys_defs_free(struct nsys *ns)
{
	if (ns->map) {
		for (size_t i = 0; i < ns->map->nnames; i++)
			free(ns->map->names[i]);
		free(ns->map->names);
		free(ns->map->slots);
		free(ns->map);
	}
	sqlite3_finalize(ns->string_stmt);
	free(ns->host);
}

/* ---- strings ------------------------------------------------------------------ */

static uint32_t
intern(struct nsys *ns, const char *s, size_t n)
{
	size_t ok_len;
	const char *ok = cmd_utf8(s, n, &ok_len);
	uint32_t id = tk_writer_string(ns->w, ok, ok_len);
	if (!id)
		ns->output_failed = 1;
	return id;
}

/* "cudaLaunchKernel_v7000" -> "cudaLaunchKernel": runtime names carry
 * the CUDA version that introduced them (the recorder drops it too). */
static size_t
runtime_name_len(const char *s, size_t n)
{
	size_t i = n;
	while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')
		i--;
	if (i >= 2 && i < n && n - i >= 4 && s[i - 1] == 'v' && s[i - 2] == '_')
		return i - 2;
	return n;
}

/* StringIds row `col` names, interned (shortened as a runtime call's
 * name when tag is K_RUNTIME_NAME) and cached under tag. */
static uint32_t
string_of(struct nsys *ns, sqlite3_stmt *st, int col, uint32_t tag)
{
	if (col < 0 || sqlite3_column_type(st, col) == SQLITE_NULL || !ns->string_stmt)
		return 0;
	int64_t id = sqlite3_column_int64(st, col);
	uint32_t wid = get(ns->map, tag, (uint64_t)id, 0, 0, 0);
	if (wid)
		return wid;
	sqlite3_stmt *q = ns->string_stmt;
	sqlite3_reset(q);
	sqlite3_bind_int64(q, 1, id);
	if (sqlite3_step(q) != SQLITE_ROW || sqlite3_column_type(q, 0) == SQLITE_NULL)
		return 0;
	const char *s = (const char *)sqlite3_column_text(q, 0);
	size_t n = s ? (size_t)sqlite3_column_bytes(q, 0) : 0;
	if (tag == K_RUNTIME_NAME)
		n = runtime_name_len(s, n);
	wid = intern(ns, s ? s : "", n);
	sqlite3_reset(q);
	if (wid)
		put(ns->map, tag, (uint64_t)id, 0, 0, 0, wid);
	return wid;
}

uint32_t
nsys_string(struct nsys *ns, sqlite3_stmt *st, int col)
{
	return string_of(ns, st, col, K_STRING);
}

uint32_t
nsys_runtime_name(struct nsys *ns, sqlite3_stmt *st, int col)
{
	return string_of(ns, st, col, K_RUNTIME_NAME);
}

const char *
nsys_text(sqlite3_stmt *st, int col)
{
	if (col >= 0 && sqlite3_column_type(st, col) != SQLITE_NULL) {
		const char *s = (const char *)sqlite3_column_text(st, col);
		size_t ok_len;
		return s ? cmd_utf8(s, (size_t)sqlite3_column_bytes(st, col), &ok_len) : "";
	}
	return "";
}

/* ---- processes and threads ----------------------------------------------------- */

uint32_t
nsys_process(struct nsys *ns, int64_t global_pid)
{
	global_pid &= ~TID_MASK;
	uint32_t id = get(ns->map, K_PROCESS, (uint64_t)global_pid, 0, 0, 0);
	if (id)
		return id;
	char *name = NULL;
	struct nsys_table *t = nsys_table(ns, "PROCESSES");
	if (t && nsys_has(t, "globalPid") && nsys_has(t, "name"))
		name = query_text(ns, "SELECT name FROM PROCESSES WHERE globalPid = ?1 "
		                  "AND name IS NOT NULL", global_pid);
	const char *argv[1] = { name };
	struct tk_process p = {
		.host = ns->host, .pid = (global_pid >> 24) & TID_MASK,
		.argc = name && *name ? 1 : 0, .argv = argv, .label = "",
	};
	id = tk_writer_process(ns->w, 0, &p);
	free(name);
	if (!id)
		ns->output_failed = 1;
	else
		put(ns->map, K_PROCESS, (uint64_t)global_pid, 0, 0, 0, id);
	return id;
}

/* A thread's name: the one NVTX gave it (nvtxNameOsThread, event type
 * 39), else the one nsys saw (ThreadNames), else NULL. */
static char *
thread_name(struct nsys *ns, int64_t global_tid)
{
	char *name = NULL;
	uint32_t i = get(ns->map, K_TNAME, (uint64_t)global_tid, 0, 0, 0);
	if (i)
		name = cmd_xstrdup(ns->map->names[i - 1]);
	struct nsys_table *t = nsys_table(ns, "ThreadNames");
	if (!name && t && nsys_has(t, "nameId") && nsys_has(t, "globalTid") &&
	    nsys_table(ns, "StringIds"))
		name = query_text(ns, "SELECT s.value FROM ThreadNames AS t JOIN StringIds "
		                  "AS s ON s.id = t.nameId WHERE t.globalTid = ?1", global_tid);
	return name;
}

uint32_t
nsys_thread(struct nsys *ns, int64_t global_tid)
{
	uint32_t id = get(ns->map, K_THREAD, (uint64_t)global_tid, 0, 0, 0);
	if (id)
		return id;
	uint32_t proc = nsys_process(ns, global_tid);
	if (!proc)
		return 0;
	char *name = thread_name(ns, global_tid);
	struct tk_thread th = { proc, global_tid & TID_MASK, name ? name : "" };
	id = tk_writer_thread(ns->w, 0, &th);
	free(name);
	if (!id)
		ns->output_failed = 1;
	else
		put(ns->map, K_THREAD, (uint64_t)global_tid, 0, 0, 0, id);
	return id;
}

/* ---- devices and streams ---------------------------------------------------------- */

/* "cd91cda4-52e0-faf6-6639-ae3dd5a2e798" (or with a "GPU-" prefix) to
 * 16 bytes; left zero unless it is 32 hex digits. */
static void
parse_uuid(const char *s, uint8_t out[16])
{
	uint8_t b[16];
	int n = 0;
	if (strncmp(s, "GPU-", 4) == 0)
		s += 4;
	for (; *s && n < 32; s++) {
		int v = *s >= '0' && *s <= '9' ? *s - '0'
		      : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
		      : *s >= 'A' && *s <= 'F' ? *s - 'A' + 10 : *s == '-' ? -2 : -1;
		if (v == -2)
			continue;
		if (v < 0)
			return;
		b[n / 2] = (uint8_t)(n % 2 ? b[n / 2] | v : v << 4);
		n++;
	}
	if (n == 32 && !*s)
		memcpy(out, b, 16);
}

/* SELECT the columns of `cols` that table has (NULL for the others)
 * from its row where keycol = key. */
static sqlite3_stmt *
device_row(struct nsys *ns, const char *table, const char *keycol, int64_t key,
           const char *const cols[], int ncols)
{
	struct nsys_table *t = nsys_table(ns, table);
	if (!t || !nsys_has(t, keycol))
		return NULL;
	char sql[1024];
	size_t k = (size_t)snprintf(sql, sizeof(sql), "SELECT ");
	for (int i = 0; i < ncols && k < sizeof(sql); i++)
		k += (size_t)snprintf(sql + k, sizeof(sql) - k, "%s%s%s%s", i ? ", " : "",
		                      nsys_has(t, cols[i]) ? "\"" : "",
		                      nsys_has(t, cols[i]) ? cols[i] : "NULL",
		                      nsys_has(t, cols[i]) ? "\"" : "");
	if (k < sizeof(sql))
		snprintf(sql + k, sizeof(sql) - k, " FROM \"%s\" WHERE \"%s\" = ?1 LIMIT 1",
		         table, keycol);
	return lookup(ns, sql, key);
}

static void
set_u64(sqlite3_stmt *st, int col, uint64_t *v)
{
	if (!*v && sqlite3_column_type(st, col) == SQLITE_INTEGER &&
	    sqlite3_column_int64(st, col) > 0)
		*v = (uint64_t)sqlite3_column_int64(st, col);
}

static void
set_u32(sqlite3_stmt *st, int col, uint32_t *v)
{
	uint64_t u = *v;
	set_u64(st, col, &u);
	if (u <= UINT32_MAX)
		*v = (uint32_t)u;
}

/* Fill d from one of the tables nsys has described GPUs in: a row of
 * name, memory, SMs, compute capability and UUID columns. */
static void
device_fill(struct tk_device *d, char **name, sqlite3_stmt *st)
{
	if (!st)
		return;
	if (!*name && sqlite3_column_type(st, 0) == SQLITE_TEXT)
		*name = column_text(st, 0);
	set_u64(st, 1, &d->memory);
	set_u32(st, 2, &d->sm_count);
	set_u32(st, 3, &d->cc_major);
	set_u32(st, 4, &d->cc_minor);
	uint8_t zero[16] = { 0 };
	if (memcmp(d->uuid, zero, 16) == 0 && sqlite3_column_type(st, 5) == SQLITE_TEXT)
		parse_uuid((const char *)sqlite3_column_text(st, 5), d->uuid);
	sqlite3_finalize(st);
}

/* CUDA device `index`: TARGET_INFO_CUDA_DEVICE maps it to a GPU of
 * TARGET_INFO_GPU (nsys 2023 and later); before, TARGET_INFO_GPU and
 * TARGET_INFO_CUDA_GPU were keyed by the CUDA device id. */
static uint32_t
nsys_device(struct nsys *ns, uint32_t index)
{
	uint32_t id = get(ns->map, K_DEVICE, index, 0, 0, 0);
	if (id)
		return id;
	struct tk_device d = { .host = ns->host, .index = index };
	char *name = NULL;
	int64_t gpu = index;
	static const char *const cuda_dev[] = { "gpuId", "uuid", "numMultiprocessors" };
	sqlite3_stmt *st = device_row(ns, "TARGET_INFO_CUDA_DEVICE", "cudaId", index, cuda_dev, 3);
	const char *gpu_key = nsys_table(ns, "TARGET_INFO_CUDA_DEVICE") ? "id" : "cuDevice";
	if (st) {
		if (sqlite3_column_type(st, 0) == SQLITE_INTEGER)
			gpu = sqlite3_column_int64(st, 0);
		if (sqlite3_column_type(st, 1) == SQLITE_TEXT)
			parse_uuid((const char *)sqlite3_column_text(st, 1), d.uuid);
		set_u32(st, 2, &d.sm_count);
		sqlite3_finalize(st);
	}
	static const char *const gpu_cols[] = { "name", "totalMemory", "smCount",
		"computeMajor", "computeMinor", "uuid" };
	struct nsys_table *tg = nsys_table(ns, "TARGET_INFO_GPU");
	if (tg && !nsys_has(tg, gpu_key))
		gpu_key = nsys_has(tg, "deviceId") ? "deviceId" : "id";
	device_fill(&d, &name, device_row(ns, "TARGET_INFO_GPU", gpu_key, gpu, gpu_cols, 6));
	static const char *const old_cols[] = { "name", "globalMemorySize",
		"numMultiprocessors", "computeCapabilityMajor", "computeCapabilityMinor", "uuid" };
	device_fill(&d, &name, device_row(ns, "TARGET_INFO_CUDA_GPU", "deviceId", index,
	                                  old_cols, 6));
	d.name = name ? name : "";
	id = tk_writer_device(ns->w, 0, &d);
	free(name);
	if (!id)
		ns->output_failed = 1;
	else
		put(ns->map, K_DEVICE, index, 0, 0, 0, id);
	return id;
}

/* The name nvtxNameCudaStream gave a stream, or "default" for a
 * context's null stream; NULL if neither. */
static char *
stream_name(struct nsys *ns, int64_t global_pid, uint32_t device, uint64_t context,
            uint64_t stream)
{
	int64_t pid = (global_pid >> 24) & TID_MASK;
	char sql[256];
	static const char *const need[] = { "processId", "contextId", "streamId" };
	static const char *const tables[] = { "TARGET_INFO_NVTX_CUDA_STREAM",
		"TARGET_INFO_CUDA_NULL_STREAM" };
	for (int i = 0; i < 2; i++) {
		struct nsys_table *t = nsys_table(ns, tables[i]);
		int ok = t && (i == 1 || nsys_has(t, "name"));
		for (int k = 0; ok && k < 3; k++)
			ok = nsys_has(t, need[k]);
		if (!ok)
			continue;
		snprintf(sql, sizeof(sql), "SELECT %s FROM %s WHERE processId = ?1 AND "
		         "contextId = %" PRIu64 " AND streamId = %" PRIu64 "%s LIMIT 1",
		         i ? "'default'" : "name", tables[i], context, stream,
		         nsys_has(t, "deviceId") ? " AND deviceId = ?2" : "");
		char *name = query_text2(ns, sql, pid, device);
		if (name)
			return name;
	}
	return NULL;
}

uint32_t
nsys_stream(struct nsys *ns, int64_t global_pid, uint32_t device, uint64_t context,
            uint64_t stream)
{
	global_pid &= ~TID_MASK;
	uint32_t id = get(ns->map, K_STREAM, (uint64_t)global_pid, device, context, stream);
	if (id)
		return id;
	uint32_t proc = nsys_process(ns, global_pid);
	uint32_t dev = proc ? nsys_device(ns, device) : 0;
	if (!dev)
		return 0;
	char *name = stream_name(ns, global_pid, device, context, stream);
	struct tk_stream s = { proc, dev, context, stream, name ? name : "" };
	id = tk_writer_stream(ns->w, 0, &s);
	free(name);
	if (!id)
		ns->output_failed = 1;
	else
		put(ns->map, K_STREAM, (uint64_t)global_pid, device, context, stream, id);
	return id;
}

/* ---- NVTX domains ------------------------------------------------------------------ */

uint32_t
nsys_domain(struct nsys *ns, int64_t global_tid, int64_t domain, const char **name)
{
	*name = "";
	if (domain == 0)
		return 0;
	int64_t pid = global_tid & ~TID_MASK;
	struct nsys_map *m = ns->map;
	uint32_t i = get(m, K_DOMAIN, (uint64_t)pid, (uint64_t)domain, 0, 0);
	if (!i) {
		/* nvtxDomainCreate (event type 75) names it, in the process */
		char *s = query_text2(ns, "SELECT text FROM NVTX_EVENTS WHERE eventType = 75 "
		                      "AND domainId = ?1 AND (globalTid IS NULL OR "
		                      "globalTid / 16777216 = ?2 / 16777216) "
		                      "AND text IS NOT NULL LIMIT 1", domain, pid);
		if (!s) {
			char buf[48];
			snprintf(buf, sizeof(buf), "domain %" PRId64, domain);
			s = cmd_xstrdup(buf);
		}
		i = add_name(m, s);
		put(m, K_DOMAIN, (uint64_t)pid, (uint64_t)domain, 0, 0, i);
	}
	*name = m->names[i - 1];
	uint32_t id = tk_writer_cstring(ns->w, *name);
	if (!id)
		ns->output_failed = 1;
	return id;
}
