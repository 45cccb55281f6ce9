/* SPDX-License-Identifier: MIT */
/*
 * trace-dump: list the events of traces, one per line, for people (text)
 * or programs (--csv, --json); --info summarises a trace instead.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <csv.h>
#include <jansson.h>

#include "common/util.h"
#include "support.h"

enum format { FMT_TEXT, FMT_CSV, FMT_JSON };

struct options {
	enum format format;
	int info;
	uint32_t kinds;          /* bit per kind; 0 = all */
	uint64_t limit;          /* 0 = no limit */
};

/* One run: its options and the events printed so far, over all inputs. */
struct dump {
	struct options opt;
	uint64_t printed;
};

static void
usage(void)
{
	printf("Usage: %s [OPTIONS] [FILE...]\n"
	       "List the events of tracekit traces (stdin when no FILE or -).\n"
	       "\n"
	       "  -c, --csv          CSV with a header row; times in integer ns\n"
	       "  -j, --json         JSON Lines, one object per event\n"
	       "  -i, --info         summary: header, metadata, definitions, counts\n"
	       "  -k, --kind LIST    only these kinds (e.g. kernel,memcpy)\n"
	       "  -n, --limit N      stop after N events\n"
	       "  -h, --help         show this help\n"
	       "  -V, --version      show the version\n"
	       "\n"
	       "Exit status: 0 success, 1 an input could not be read completely,\n"
	       "2 usage or output error.\n",
	       cmd_name());
}

/* ---- fields shared by the formats ---------------------------------------- */

struct where {
	int64_t pid, tid;        /* -1 when not applicable */
	const char *thread;
	int64_t device;          /* index, -1 = none */
	int64_t stream;          /* -1 = none */
};

static struct where
locate(const struct tk_reader *r, const struct tk_track *t)
{
	struct where w = { -1, -1, "", -1, -1 };
	const struct tk_track *p = NULL;
	switch (t->type) {
	case TK_TRACK_PROCESS:
		w.pid = t->u.process.pid;
		break;
	case TK_TRACK_THREAD:
		w.tid = t->u.thread.tid;
		w.thread = t->u.thread.name;
		p = tk_reader_track(r, t->u.thread.process);
		break;
	case TK_TRACK_STREAM: {
		const struct tk_device *d = tk_reader_device(r, t->u.stream.device);
		w.device = d ? (int64_t)d->index : -1;
		w.stream = (int64_t)t->u.stream.stream;
		p = tk_reader_track(r, t->u.stream.process);
		break;
	}
	case TK_TRACK_COUNTER: {
		const struct tk_device *d = tk_reader_device(r, t->u.counter.device);
		w.device = d ? (int64_t)d->index : -1;
		p = tk_reader_track(r, t->u.counter.process);
		break;
	}
	default:
		break;
	}
	if (p && p->type == TK_TRACK_PROCESS)
		w.pid = p->u.process.pid;
	return w;
}

static const char *
exit_desc(char *buf, size_t n, unsigned how, int32_t code, uint32_t sig)
{
	if (how == TK_EXIT_NORMAL)
		snprintf(buf, n, "exit=%d", code);
	else if (how == TK_EXIT_SIGNAL)
		snprintf(buf, n, "signal=%u", sig);
	else
		snprintf(buf, n, "exit=unknown");
	return buf;
}

static int
is_range(unsigned kind)
{
	return kind == TK_RANGE || kind == TK_ASYNC_RANGE || kind == TK_MARK;
}

/* Payload value as text. */
static void
payload_text(char *buf, size_t n, const struct tk_range_attrs *a)
{
	switch (a->payload_type) {
	case TK_PAYLOAD_UINT: snprintf(buf, n, "%" PRIu64, a->payload.u); break;
	case TK_PAYLOAD_INT: snprintf(buf, n, "%" PRId64, a->payload.i); break;
	case TK_PAYLOAD_DOUBLE: snprintf(buf, n, "%.17g", a->payload.d); break;
	default: buf[0] = 0; break;
	}
}

/* ---- text ------------------------------------------------------------------ */

static void
text_range(FILE *f, const struct tk_range_attrs *a)
{
	char b[64];
	if (*a->domain)
		fprintf(f, " domain=%s", a->domain);
	if (a->category)
		fprintf(f, " category=%u", a->category);
	if (a->color)
		fprintf(f, " color=#%08x", a->color);
	if (a->payload_type) {
		payload_text(b, sizeof(b), a);
		fprintf(f, " payload=%s", b);
	}
	if (a->id)
		fprintf(f, " id=%" PRIu64, a->id);
	if (a->end_track)
		fprintf(f, " end_track=%u", a->end_track);
}

static void
text_kernel(FILE *f, const struct tk_kernel_attrs *k)
{
	fprintf(f, " grid=%ux%ux%u block=%ux%ux%u", k->grid[0], k->grid[1],
	        k->grid[2], k->block[0], k->block[1], k->block[2]);
	if (k->cluster[0] || k->cluster[1] || k->cluster[2])
		fprintf(f, " cluster=%ux%ux%u", k->cluster[0], k->cluster[1],
		        k->cluster[2]);
	fprintf(f, " regs=%u smem=%u+%u", k->registers, k->static_smem,
	        k->dynamic_smem);
	if (k->graph_id)
		fprintf(f, " graph=%u node=%" PRIu64, k->graph_id, k->graph_node);
}

static void
text_memcpy(FILE *f, const struct tk_memcpy_attrs *m)
{
	fprintf(f, " %s %s->%s bytes=%" PRIu64, tk_copy_kind_name(m->copy_kind),
	        tk_mem_kind_name(m->src_kind), tk_mem_kind_name(m->dst_kind),
	        m->bytes);
	if (m->copy_kind == TK_COPY_PTOP)
		fprintf(f, " devices=%u->%u", m->src_device, m->dst_device);
	if (m->flags & TK_FLAG_ASYNC)
		fputs(" async", f);
}

static void
text_process(FILE *f, const struct tk_process_attrs *p)
{
	char b[64];
	fprintf(f, " %s", exit_desc(b, sizeof(b), p->exit, p->exit_code,
	        p->signal));
	fprintf(f, " user=%s", cmd_fmt_duration(b, sizeof(b), p->utime));
	fprintf(f, " sys=%s maxrss=%" PRIu64 " minflt=%" PRIu64
	        " majflt=%" PRIu64 " nvcsw=%" PRIu64 " nivcsw=%" PRIu64,
	        cmd_fmt_duration(b, sizeof(b), p->stime), p->max_rss,
	        p->minflt, p->majflt, p->nvcsw, p->nivcsw);
}

static void
text_attrs(FILE *f, const struct tk_event *e)
{
	char b[64];
	uint64_t corr = tk_event_correlation(e);
	switch (e->kind) {
	case TK_RANGE:
	case TK_ASYNC_RANGE:
	case TK_MARK:
		text_range(f, &e->u.range);
		break;
	case TK_API:
		fprintf(f, " %s", tk_api_domain_name(e->u.api.domain));
		if (e->u.api.cbid)
			fprintf(f, " cbid=%u", e->u.api.cbid);
		if (e->u.api.result)
			fprintf(f, " result=%d", e->u.api.result);
		break;
	case TK_KERNEL:
		text_kernel(f, &e->u.kernel);
		break;
	case TK_MEMCPY:
		text_memcpy(f, &e->u.memcpy);
		break;
	case TK_MEMSET:
		fprintf(f, " %s bytes=%" PRIu64 " value=%u",
		        tk_mem_kind_name(e->u.memset.mem_kind), e->u.memset.bytes,
		        e->u.memset.value);
		break;
	case TK_SYNC:
		fprintf(f, " %s", tk_sync_type_name(e->u.sync.type));
		break;
	case TK_OVERHEAD:
		fprintf(f, " type=%u", e->u.overhead.type);
		break;
	case TK_COUNTER:
		fprintf(f, " value=%.17g", e->u.counter.value);
		if (e->trk->type == TK_TRACK_COUNTER && *e->trk->u.counter.unit)
			fprintf(f, " %s", e->trk->u.counter.unit);
		break;
	case TK_MEMORY:
		fprintf(f, " %s %s addr=0x%" PRIx64 " bytes=%" PRIu64,
		        e->u.memory.op == TK_MEM_FREE ? "free" : "alloc",
		        tk_mem_kind_name(e->u.memory.mem_kind), e->u.memory.address,
		        e->u.memory.bytes);
		break;
	case TK_PROCESS:
		text_process(f, &e->u.process);
		break;
	case TK_RUN:
		fprintf(f, " run=%u %s", e->u.run.index, exit_desc(b, sizeof(b),
		        e->u.run.exit, e->u.run.exit_code, e->u.run.signal));
		break;
	case TK_DROPPED:
		fprintf(f, " count=%" PRIu64 " reason=%s", e->u.dropped.count,
		        e->u.dropped.reason);
		break;
	case TK_FLOW:
		fprintf(f, " id=%" PRIu64 " phase=%s", e->u.flow.id,
		        e->u.flow.phase == TK_FLOW_START ? "start"
		        : e->u.flow.phase == TK_FLOW_END ? "end" : "step");
		if (*e->u.flow.category)
			fprintf(f, " category=%s", e->u.flow.category);
		break;
	}
	if (corr)
		fprintf(f, " corr=%" PRIu64, corr);
	if (e->kind == TK_KERNEL && *e->u.kernel.mangled)
		fprintf(f, " mangled=%s", e->u.kernel.mangled);
	if (e->args)
		fprintf(f, " args=%.*s", (int)e->args_len, e->args);
}

static void
text_event(const struct tk_reader *r, const struct tk_event *e, int64_t origin)
{
	char track[160], dur[32];
	int64_t rel = e->ts - origin;
	int64_t sec = rel / 1000000000, frac = rel % 1000000000;
	if (rel < 0) {
		printf("-%" PRId64 ".%09" PRId64, -sec, -frac);
	} else {
		printf("%" PRId64 ".%09" PRId64, sec, frac);
	}
	printf("  %-11s %-12s %-28s %s",
	       e->dur || !(e->kind == TK_MARK || e->kind == TK_COUNTER ||
	                   e->kind == TK_FLOW)
	               ? cmd_fmt_duration(dur, sizeof(dur), e->dur) : "-",
	       tk_kind_name(e->kind), cmd_track_desc(track, sizeof(track), r, e->trk),
	       e->name);
	text_attrs(stdout, e);
	putchar('\n');
}

/* ---- CSV ------------------------------------------------------------------- */

static const char *const csv_columns[] = {
	"kind", "ts", "dur", "name", "pid", "tid", "thread", "device", "stream",
	"correlation", "grid", "block", "registers", "shared_static",
	"shared_dynamic", "bytes", "copy_kind", "src_kind", "dst_kind", "value",
	"domain", "category", "payload", "exit_code", "signal", "count",
	"detail", "args",
};
#define NCSV (sizeof(csv_columns) / sizeof(csv_columns[0]))

static void
csv_field(FILE *f, const char *s, size_t len, int first)
{
	if (!first)
		fputc(',', f);
	/* quote only what needs it; libcsv does the quoting */
	if (strcspn(s, ",\"\r\n") >= len && len > 0 && s[0] != ' ')
		fwrite(s, 1, len, f);
	else if (len > 0)
		csv_fwrite(f, s, len);
}

static void
csv_row(char *fields[NCSV])
{
	for (size_t i = 0; i < NCSV; i++) {
		const char *s = fields[i] ? fields[i] : "";
		csv_field(stdout, s, strlen(s), i == 0);
	}
	fputc('\n', stdout);
}

static void
csv_event(const struct tk_reader *r, const struct tk_event *e)
{
	char num[NCSV][48];
	char *fld[NCSV] = { 0 };
	struct where w = locate(r, e->trk);
#define SETF(i, ...) (snprintf(num[i], sizeof(num[i]), __VA_ARGS__), fld[i] = num[i])
	fld[0] = (char *)tk_kind_name(e->kind);
	SETF(1, "%" PRId64, e->ts);
	SETF(2, "%" PRId64, e->dur);
	fld[3] = (char *)e->name;
	if (w.pid >= 0) SETF(4, "%" PRId64, w.pid);
	if (w.tid >= 0) SETF(5, "%" PRId64, w.tid);
	fld[6] = (char *)w.thread;
	if (w.device >= 0) SETF(7, "%" PRId64, w.device);
	if (w.stream >= 0) SETF(8, "%" PRId64, w.stream);
	uint64_t corr = tk_event_correlation(e);
	if (corr) SETF(9, "%" PRIu64, corr);
	switch (e->kind) {
	case TK_KERNEL: {
		const struct tk_kernel_attrs *k = &e->u.kernel;
		SETF(10, "%ux%ux%u", k->grid[0], k->grid[1], k->grid[2]);
		SETF(11, "%ux%ux%u", k->block[0], k->block[1], k->block[2]);
		SETF(12, "%u", k->registers);
		SETF(13, "%u", k->static_smem);
		SETF(14, "%u", k->dynamic_smem);
		fld[26] = (char *)k->mangled;
		break;
	}
	case TK_MEMCPY:
		SETF(15, "%" PRIu64, e->u.memcpy.bytes);
		fld[16] = (char *)tk_copy_kind_name(e->u.memcpy.copy_kind);
		fld[17] = (char *)tk_mem_kind_name(e->u.memcpy.src_kind);
		fld[18] = (char *)tk_mem_kind_name(e->u.memcpy.dst_kind);
		break;
	case TK_MEMSET:
		SETF(15, "%" PRIu64, e->u.memset.bytes);
		fld[17] = (char *)tk_mem_kind_name(e->u.memset.mem_kind);
		break;
	case TK_MEMORY:
		SETF(15, "%" PRIu64, e->u.memory.bytes);
		fld[17] = (char *)tk_mem_kind_name(e->u.memory.mem_kind);
		fld[26] = e->u.memory.op == TK_MEM_FREE ? "free" : "alloc";
		break;
	case TK_COUNTER:
		SETF(19, "%.17g", e->u.counter.value);
		break;
	case TK_API:
		fld[26] = (char *)tk_api_domain_name(e->u.api.domain);
		break;
	case TK_SYNC:
		fld[26] = (char *)tk_sync_type_name(e->u.sync.type);
		break;
	case TK_PROCESS:
	case TK_RUN: {
		unsigned how = e->kind == TK_RUN ? e->u.run.exit : e->u.process.exit;
		if (how == TK_EXIT_NORMAL)
			SETF(23, "%d", e->kind == TK_RUN ? e->u.run.exit_code
			                                 : e->u.process.exit_code);
		if (how == TK_EXIT_SIGNAL)
			SETF(24, "%u", e->kind == TK_RUN ? e->u.run.signal
			                                 : e->u.process.signal);
		if (e->kind == TK_RUN)
			SETF(25, "%u", e->u.run.index);
		break;
	}
	case TK_DROPPED:
		SETF(25, "%" PRIu64, e->u.dropped.count);
		fld[26] = (char *)e->u.dropped.reason;
		break;
	case TK_FLOW:
		SETF(25, "%" PRIu64, e->u.flow.id);
		fld[20] = (char *)e->u.flow.category;
		break;
	default:
		if (is_range(e->kind)) {
			fld[20] = (char *)e->u.range.domain;
			if (e->u.range.category)
				SETF(21, "%u", e->u.range.category);
			payload_text(num[22], sizeof(num[22]), &e->u.range);
			fld[22] = num[22];
		}
		break;
	}
#undef SETF
	char *args = NULL;
	if (e->args) {
		args = strndup(e->args, e->args_len);
		fld[27] = args;
	}
	csv_row(fld);
	free(args);
}

/* ---- JSON ------------------------------------------------------------------ */

static json_t *
jstr(const char *s, size_t len)
{
	size_t n;
	const char *v = cmd_utf8(s, len, &n);
	return json_stringn_nocheck(v, n);
}

static json_t *
jcstr(const char *s)
{
	return jstr(s, strlen(s));
}

static json_t *
jdims(const uint32_t v[3])
{
	return json_pack("[III]", (json_int_t)v[0], (json_int_t)v[1],
	                 (json_int_t)v[2]);
}

static void
json_range(json_t *o, const struct tk_range_attrs *a)
{
	if (*a->domain) json_object_set_new(o, "domain", jcstr(a->domain));
	if (a->category) json_object_set_new(o, "category", json_integer(a->category));
	if (a->color) json_object_set_new(o, "color", json_integer(a->color));
	if (a->payload_type == TK_PAYLOAD_DOUBLE)
		json_object_set_new(o, "payload", json_real(a->payload.d));
	else if (a->payload_type == TK_PAYLOAD_INT)
		json_object_set_new(o, "payload", json_integer(a->payload.i));
	else if (a->payload_type == TK_PAYLOAD_UINT)
		json_object_set_new(o, "payload", json_integer((json_int_t)a->payload.u));
	if (a->id) json_object_set_new(o, "id", json_integer((json_int_t)a->id));
}

static void
json_kernel(json_t *o, const struct tk_kernel_attrs *k)
{
	json_object_set_new(o, "grid", jdims(k->grid));
	json_object_set_new(o, "block", jdims(k->block));
	if (k->cluster[0]) json_object_set_new(o, "cluster", jdims(k->cluster));
	json_object_set_new(o, "registers", json_integer(k->registers));
	json_object_set_new(o, "shared_static", json_integer(k->static_smem));
	json_object_set_new(o, "shared_dynamic", json_integer(k->dynamic_smem));
	if (k->graph_id) {
		json_object_set_new(o, "graph", json_integer(k->graph_id));
		json_object_set_new(o, "graph_node", json_integer((json_int_t)k->graph_node));
	}
	if (*k->mangled) json_object_set_new(o, "mangled", jcstr(k->mangled));
}

static void
json_memcpy(json_t *o, const struct tk_memcpy_attrs *m)
{
	json_object_set_new(o, "bytes", json_integer((json_int_t)m->bytes));
	json_object_set_new(o, "copy_kind", json_string(tk_copy_kind_name(m->copy_kind)));
	json_object_set_new(o, "src_kind", json_string(tk_mem_kind_name(m->src_kind)));
	json_object_set_new(o, "dst_kind", json_string(tk_mem_kind_name(m->dst_kind)));
	if (m->copy_kind == TK_COPY_PTOP) {
		json_object_set_new(o, "src_device", json_integer(m->src_device));
		json_object_set_new(o, "dst_device", json_integer(m->dst_device));
	}
	json_object_set_new(o, "async", json_boolean(m->flags & TK_FLAG_ASYNC));
}

static void
json_process(json_t *o, const struct tk_process_attrs *p)
{
	if (p->exit == TK_EXIT_NORMAL)
		json_object_set_new(o, "exit_code", json_integer(p->exit_code));
	if (p->exit == TK_EXIT_SIGNAL)
		json_object_set_new(o, "signal", json_integer(p->signal));
	json_object_set_new(o, "utime", json_integer(p->utime));
	json_object_set_new(o, "stime", json_integer(p->stime));
	json_object_set_new(o, "max_rss", json_integer((json_int_t)p->max_rss));
	json_object_set_new(o, "minflt", json_integer((json_int_t)p->minflt));
	json_object_set_new(o, "majflt", json_integer((json_int_t)p->majflt));
	json_object_set_new(o, "nvcsw", json_integer((json_int_t)p->nvcsw));
	json_object_set_new(o, "nivcsw", json_integer((json_int_t)p->nivcsw));
}

/* The attributes of the event's kind into `o`. */
static void
json_attrs(json_t *o, const struct tk_event *e)
{
	switch (e->kind) {
	case TK_RANGE:
	case TK_ASYNC_RANGE:
	case TK_MARK:
		json_range(o, &e->u.range);
		break;
	case TK_API:
		json_object_set_new(o, "api", json_string(tk_api_domain_name(e->u.api.domain)));
		json_object_set_new(o, "result", json_integer(e->u.api.result));
		if (e->u.api.cbid) json_object_set_new(o, "cbid", json_integer(e->u.api.cbid));
		break;
	case TK_KERNEL:
		json_kernel(o, &e->u.kernel);
		break;
	case TK_MEMCPY:
		json_memcpy(o, &e->u.memcpy);
		break;
	case TK_MEMSET:
		json_object_set_new(o, "bytes", json_integer((json_int_t)e->u.memset.bytes));
		json_object_set_new(o, "mem_kind", json_string(tk_mem_kind_name(e->u.memset.mem_kind)));
		json_object_set_new(o, "value", json_integer(e->u.memset.value));
		break;
	case TK_SYNC:
		json_object_set_new(o, "sync", json_string(tk_sync_type_name(e->u.sync.type)));
		break;
	case TK_OVERHEAD:
		json_object_set_new(o, "overhead", json_integer(e->u.overhead.type));
		break;
	case TK_COUNTER:
		json_object_set_new(o, "value", json_real(e->u.counter.value));
		if (e->trk->type == TK_TRACK_COUNTER)
			json_object_set_new(o, "unit", jcstr(e->trk->u.counter.unit));
		break;
	case TK_MEMORY:
		json_object_set_new(o, "op", json_string(e->u.memory.op == TK_MEM_FREE ? "free" : "alloc"));
		json_object_set_new(o, "address", json_integer((json_int_t)e->u.memory.address));
		json_object_set_new(o, "bytes", json_integer((json_int_t)e->u.memory.bytes));
		json_object_set_new(o, "mem_kind", json_string(tk_mem_kind_name(e->u.memory.mem_kind)));
		break;
	case TK_PROCESS:
		json_process(o, &e->u.process);
		break;
	case TK_RUN:
		json_object_set_new(o, "run", json_integer(e->u.run.index));
		if (e->u.run.exit == TK_EXIT_NORMAL)
			json_object_set_new(o, "exit_code", json_integer(e->u.run.exit_code));
		if (e->u.run.exit == TK_EXIT_SIGNAL)
			json_object_set_new(o, "signal", json_integer(e->u.run.signal));
		break;
	case TK_DROPPED:
		json_object_set_new(o, "count", json_integer((json_int_t)e->u.dropped.count));
		json_object_set_new(o, "reason", jcstr(e->u.dropped.reason));
		break;
	case TK_FLOW:
		json_object_set_new(o, "id", json_integer((json_int_t)e->u.flow.id));
		json_object_set_new(o, "phase", json_integer(e->u.flow.phase));
		if (*e->u.flow.category)
			json_object_set_new(o, "category", jcstr(e->u.flow.category));
		break;
	}
}

static void
json_event(const struct tk_reader *r, const struct tk_event *e)
{
	json_t *o = json_object();
	struct where w = locate(r, e->trk);
	json_object_set_new(o, "kind", json_string(tk_kind_name(e->kind)));
	json_object_set_new(o, "ts", json_integer(e->ts));
	json_object_set_new(o, "dur", json_integer(e->dur));
	json_object_set_new(o, "name", jcstr(e->name));
	if (w.pid >= 0) json_object_set_new(o, "pid", json_integer(w.pid));
	if (w.tid >= 0) json_object_set_new(o, "tid", json_integer(w.tid));
	if (*w.thread) json_object_set_new(o, "thread", jcstr(w.thread));
	if (w.device >= 0) json_object_set_new(o, "device", json_integer(w.device));
	if (w.stream >= 0) json_object_set_new(o, "stream", json_integer(w.stream));
	uint64_t corr = tk_event_correlation(e);
	if (corr)
		json_object_set_new(o, "correlation", json_integer((json_int_t)corr));
	json_attrs(o, e);
	if (e->args) {
		json_t *a = json_loadb(e->args, e->args_len, JSON_DECODE_ANY, NULL);
		json_object_set_new(o, "args", a ? a : jstr(e->args, e->args_len));
	}
	json_dumpf(o, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(o);
}

/* ---- --info ----------------------------------------------------------------- */

struct info {
	uint64_t kind_count[TK_KIND_MAX + 1];
	uint64_t events, chunks, scopes, dropped;
	int64_t t_min, t_max;
	uint64_t last_chunk;
};

/* Where each id's entry is in a JSON array of --info (index + 1, 0 for
 * none): a definition that comes again (a thread renamed) replaces the
 * entry, so that there is one per id. */
struct id_slots {
	size_t *at;
	size_t cap;
};

static void
put_by_id(json_t *arr, struct id_slots *s, uint32_t id, json_t *o)
{
	if (id >= s->cap) {
		size_t old = s->cap;
		size_t *at = tkp_grow(s->at, &s->cap, (size_t)id + 1, sizeof(*at));
		if (!at)
			cmd_die(EXIT_USAGE, "out of memory");
		memset(at + old, 0, (s->cap - old) * sizeof(*at));
		s->at = at;
	}
	if (s->at[id]) {
		json_array_set_new(arr, s->at[id] - 1, o);
		return;
	}
	json_array_append_new(arr, o);
	s->at[id] = json_array_size(arr);
}

static void
info_track(json_t *arr, struct id_slots *slots, FILE *f, const struct tk_reader *r,
           const struct tk_track *t)
{
	char d[160];
	if (f) {
		printf("  track %u: %s", t->id, cmd_track_desc(d, sizeof(d), r, t));
		if (t->type == TK_TRACK_PROCESS) {
			const struct tk_process *p = &t->u.process;
			printf(" ppid %" PRId64 " host %s", p->ppid, p->host);
			if (*p->label)
				printf(" label %s", p->label);
			for (uint32_t i = 0; i < p->argc; i++)
				printf("%s%s", i ? " " : " argv: ", p->argv[i]);
		}
		putchar('\n');
		return;
	}
	json_t *o = json_object();
	static const char *const types[] = { "unknown", "process", "thread", "stream", "counter" };
	json_object_set_new(o, "id", json_integer(t->id));
	json_object_set_new(o, "type", json_string(types[t->type <= 4 ? t->type : 0]));
	json_object_set_new(o, "desc", jcstr(cmd_track_desc(d, sizeof(d), r, t)));
	if (t->type == TK_TRACK_PROCESS) {
		const struct tk_process *p = &t->u.process;
		json_t *argv = json_array();
		for (uint32_t i = 0; i < p->argc; i++)
			json_array_append_new(argv, jcstr(p->argv[i]));
		json_object_set_new(o, "pid", json_integer(p->pid));
		json_object_set_new(o, "ppid", json_integer(p->ppid));
		json_object_set_new(o, "host", jcstr(p->host));
		json_object_set_new(o, "label", jcstr(p->label));
		json_object_set_new(o, "argv", argv);
	}
	put_by_id(arr, slots, t->id, o);
}

/* A metadata entry into the object of --info --json: keys too must be
 * UTF-8, or jansson refuses them and the entry would vanish. */
static void
info_meta(json_t *meta, const struct tk_meta *m)
{
	json_t *v = jcstr(m->value);
	size_t n;
	const char *key = cmd_utf8(m->key, strlen(m->key), &n);
	json_object_set_new(meta, key, v);
}

/* What --info gathers from one trace file as it reads it: the counts,
 * and for --json the entries of its arrays and of its metadata object. */
struct info_run {
	struct info in;
	int text;
	json_t *tracks, *devices, *meta;
	struct id_slots track_slots, device_slots;
};

static void
info_event(struct info *in, const struct tk_event *e)
{
	in->events++;
	in->kind_count[e->kind]++;
	if (e->ts < in->t_min) in->t_min = e->ts;
	if (e->ts + e->dur > in->t_max) in->t_max = e->ts + e->dur;
	if (e->kind == TK_DROPPED) in->dropped += e->u.dropped.count;
}

static void
info_device(struct info_run *ir, const struct tk_device *d)
{
	if (ir->text) {
		printf("  device %u: GPU %u %s, %u SMs, %" PRIu64 " bytes, "
		       "compute %u.%u, host %s\n", d->id, d->index, d->name,
		       d->sm_count, d->memory, d->cc_major, d->cc_minor, d->host);
		return;
	}
	put_by_id(ir->devices, &ir->device_slots, d->id,
	          json_pack("{s:I,s:I,s:o,s:I,s:I}",
		"id", (json_int_t)d->id, "index", (json_int_t)d->index,
		"name", jcstr(d->name), "sm_count", (json_int_t)d->sm_count,
		"memory", (json_int_t)d->memory));
}

static void
info_record(struct info_run *ir, const struct tk_reader *r,
            const struct tk_record *rec)
{
	struct info *in = &ir->in;
	const struct tk_chunk_info *ci = tk_reader_chunk(r);
	if (ci->offset != in->last_chunk && rec->type != TK_REC_SCOPE) {
		in->chunks++;
		in->last_chunk = ci->offset;
	}
	switch (rec->type) {
	case TK_REC_EVENT:
		info_event(in, rec->u.event);
		break;
	case TK_REC_SCOPE:
		in->scopes++;
		/* a new scope's ids are new tracks and devices */
		if (ir->track_slots.at)
			memset(ir->track_slots.at, 0, ir->track_slots.cap * sizeof(size_t));
		if (ir->device_slots.at)
			memset(ir->device_slots.at, 0, ir->device_slots.cap * sizeof(size_t));
		if (ir->text)
			printf("-- concatenated trace %" PRIu64 " --\n", in->scopes);
		break;
	case TK_REC_META:
		if (ir->text)
			printf("  meta %s = %s\n", rec->u.meta->key, rec->u.meta->value);
		else
			info_meta(ir->meta, rec->u.meta);
		break;
	case TK_REC_TRACK:
		info_track(ir->tracks, &ir->track_slots, ir->text ? stdout : NULL, r,
		           rec->u.track);
		break;
	case TK_REC_DEVICE:
		info_device(ir, rec->u.device);
		break;
	case TK_REC_CATEGORY:
		if (ir->text)
			printf("  category %s/%u = %s\n", rec->u.category->domain,
			       rec->u.category->category, rec->u.category->name);
		break;
	}
}

static void
info_text_summary(const struct info *in, const struct tk_reader *r)
{
	uint64_t bytes = tk_reader_offset(r);
	printf("bytes: %" PRIu64 " in %" PRIu64 " chunks\n", bytes, in->chunks);
	printf("events: %" PRIu64, in->events);
	if (in->events)
		printf(" (%.2f bytes/event)", (double)bytes / (double)in->events);
	putchar('\n');
	for (unsigned k = 1; k <= TK_KIND_MAX; k++)
		if (in->kind_count[k])
			printf("  %-12s %" PRIu64 "\n", tk_kind_name(k), in->kind_count[k]);
	if (tk_reader_skipped(r))
		printf("  %-12s %" PRIu64 "\n", "unknown", tk_reader_skipped(r));
	if (in->events) {
		char d[32];
		printf("span: %s\n", cmd_fmt_duration(d, sizeof(d), in->t_max - in->t_min));
	}
	if (in->dropped)
		printf("dropped by the recorder: %" PRIu64 " events\n", in->dropped);
}

/* The one JSON object of --info --json; takes the arrays and the
 * metadata object of `ir`. */
static void
info_json_summary(struct info_run *ir, const char *path,
                  const struct tk_reader *r, unsigned major)
{
	const struct info *in = &ir->in;
	uint64_t bytes = tk_reader_offset(r);
	json_t *kinds = json_object();
	for (unsigned k = 1; k <= TK_KIND_MAX; k++)
		if (in->kind_count[k])
			json_object_set_new(kinds, tk_kind_name(k),
			                    json_integer((json_int_t)in->kind_count[k]));
	json_t *o = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:I}",
		"file", cmd_display_path(path),
		"format", major == 1 ? "1" : "?",
		"bytes", (json_int_t)bytes, "chunks", (json_int_t)in->chunks,
		"scopes", (json_int_t)in->scopes, "events", (json_int_t)in->events,
		"kinds", kinds, "metadata", ir->meta, "tracks", ir->tracks,
		"devices", ir->devices, "dropped", (json_int_t)in->dropped);
	json_object_set_new(o, "t_min", json_integer(in->events ? in->t_min : 0));
	json_object_set_new(o, "t_max", json_integer(in->events ? in->t_max : 0));
	json_dumpf(o, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(o);
	ir->tracks = ir->devices = ir->meta = NULL;
}

static int
dump_info(const char *path, struct tk_reader *r, const struct options *opt)
{
	struct info_run ir = {
		.in = { .t_min = INT64_MAX, .t_max = INT64_MIN, .scopes = 1,
		        .last_chunk = UINT64_MAX },
		.text = opt->format != FMT_JSON,
		.tracks = json_array(), .devices = json_array(), .meta = json_object(),
	};
	unsigned major, minor;
	tk_reader_version(r, &major, &minor);
	if (ir.text)
		printf("%s: tracekit format %u.%u\n", cmd_display_path(path), major, minor);
	struct tk_record rec;
	int rc;
	while ((rc = tk_reader_next(r, &rec)) == TK_OK) {
		info_record(&ir, r, &rec);
		cmd_check_output(stdout);
	}
	if (ir.text)
		info_text_summary(&ir.in, r);
	else
		info_json_summary(&ir, path, r, major);
	json_decref(ir.tracks);
	json_decref(ir.devices);
	free(ir.track_slots.at);
	free(ir.device_slots.at);
	json_decref(ir.meta);
	if (rc != TK_EOF) {
		cmd_reader_error(path, r);
		return EXIT_BADINPUT;
	}
	return 0;
}

/* ---- main ------------------------------------------------------------------- */

static int
dump_events(const char *path, struct tk_reader *r, struct dump *d)
{
	const struct options *opt = &d->opt;
	const struct tk_event *e;
	int64_t origin = INT64_MIN;
	int rc;
	while ((rc = tk_reader_next_event(r, &e)) == TK_OK) {
		if (opt->kinds && !(opt->kinds & (1u << e->kind)))
			continue;
		if (opt->limit && d->printed >= opt->limit)
			return 0;
		d->printed++;
		switch (opt->format) {
		case FMT_TEXT:
			if (origin == INT64_MIN)
				origin = tk_reader_chunk(r)->t_min;
			text_event(r, e, origin);
			break;
		case FMT_CSV: csv_event(r, e); break;
		case FMT_JSON: json_event(r, e); break;
		}
		cmd_check_output(stdout);
	}
	if (rc != TK_EOF) {
		cmd_reader_error(path, r);
		return EXIT_BADINPUT;
	}
	return 0;
}

static uint32_t
parse_kinds(const char *list)
{
	uint32_t mask = 0;
	char *copy = strdup(list), *save = NULL;
	if (!copy)
		cmd_die(EXIT_USAGE, "out of memory");
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		unsigned k = tk_kind_from_name(t);
		if (!k) {
			cmd_warn("unknown kind '%s'", t);
			free(copy);
			char known[256];
			size_t n = 0;
			for (unsigned i = 1; i <= TK_KIND_MAX && n < sizeof(known); i++)
				n += (size_t)snprintf(known + n, sizeof(known) - n, "%s%s",
				                      i > 1 ? ", " : "", tk_kind_name(i));
			cmd_usage_error("kinds are: %s", known);
		}
		mask |= 1u << k;
	}
	free(copy);
	return mask;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "csv", no_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "info", no_argument, NULL, 'i' },
		{ "kind", required_argument, NULL, 'k' },
		{ "limit", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct dump d = { { FMT_TEXT, 0, 0, 0 }, 0 };
	struct options *opt = &d.opt;
	cmd_init("trace-dump");
	int c;
	while ((c = getopt_long(argc, argv, ":cjik:n:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': opt->format = FMT_CSV; break;
		case 'j': opt->format = FMT_JSON; break;
		case 'i': opt->info = 1; break;
		case 'k': opt->kinds = parse_kinds(optarg); break;
		case 'n':
			if (cmd_parse_uint(optarg, &opt->limit) < 0)
				cmd_usage_error("invalid --limit '%s'", optarg);
			break;
		case 'h': usage(); return cmd_finish(0);
		case 'V': cmd_version();
		default: cmd_bad_option(c, argv);
		}
	}
	if (opt->info && opt->format == FMT_CSV)
		cmd_usage_error("--info is text or --json, not --csv");

	static char *stdin_only[] = { "-", NULL };
	char **files = optind < argc ? argv + optind : stdin_only;
	int nfiles = optind < argc ? argc - optind : 1;
	if (opt->format == FMT_CSV && !opt->info) {
		char *hdr[NCSV];
		for (size_t i = 0; i < NCSV; i++)
			hdr[i] = (char *)csv_columns[i];
		csv_row(hdr);
	}
	int status = 0;
	for (int i = 0; i < nfiles; i++) {
		struct tk_reader *r = cmd_open_reader(files[i]);
		if (!r) {
			status |= EXIT_BADINPUT;
			continue;
		}
		status |= opt->info ? dump_info(files[i], r, opt)
		                    : dump_events(files[i], r, &d);
		tk_reader_free(r);
		if (opt->limit && d.printed >= opt->limit)
			break;
	}
	return cmd_finish(status);
}
