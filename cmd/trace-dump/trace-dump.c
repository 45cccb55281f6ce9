/* SPDX-License-Identifier: MIT */
/*
 * trace-dump: list the events of traces, one per line, for people (text)
 * or programs (--csv, --json); --info summarises a trace instead.
 *
 * The attributes of each kind are read through the library's schema
 * (tk_kind_field_named(), tk_event_correlation()): where a field is, its
 * type and how its values are named are the library's to say; each
 * format says which fields it shows, in what order and under what name.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio_ext.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include <csv.h>
#include <jansson.h>

#include "common/ordpool.h"
#include "common/util.h"
#include "dump.h"
#include "import/autoread.h"
#include "support.h"

enum format { FMT_TEXT, FMT_CSV, FMT_JSON };

struct options {
	enum format format;
	int info;
	uint32_t kinds;          /* bit per kind; 0 = all */
	uint64_t limit;          /* 0 = no limit */
	const regex_t *name;     /* --name: keep events whose name matches */
	int64_t from, to;        /* keep events beginning in [from, to) ns
	                            after the start of their trace, as
	                            trace-stats does */
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
	       "      --name REGEX   only events whose name matches (extended regex)\n"
	       "      --from DURATION  only events beginning this long after the\n"
	       "                     trace start (e.g. 1.5s, 200ms)\n"
	       "      --to DURATION  ... and before this\n"
	       "  -h, --help         show this help\n"
	       "  -V, --version      show the version\n"
	       "\n"
	       "Exit status: 0 success, 1 an input could not be read completely,\n"
	       "2 usage or output error.\n",
	       cmd_name());
}

/* ---- fields shared by the formats ---------------------------------------- */

static struct where
locate(const struct tk_reader *r, const struct tk_track *t)
{
	struct where w = { -1, -1, "", -1, -1, NULL };
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
		w.unit = t->u.counter.unit;
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

/* ---- the fields of a kind, through the library's schema ------------------- */

/* Where a field is, its type and how its values are named come from the
 * library (tk_kind_field_named()); each format below only chooses which
 * fields it shows, in what order and under which names. */
static const struct tk_field *
field(const struct tk_event *e, const char *name)
{
	const struct tk_field *f = tk_kind_field_named(e->kind, name);
	if (!f)
		cmd_die(EXIT_USAGE, "internal error: %s events have no field %s",
		        tk_kind_name(e->kind), name);
	return f;
}

/* An optional field holding 0 or "": the format leaves it out. */
static int
field_none(const struct tk_event *e, const struct tk_field *f)
{
	if (!(f->flags & TK_FIELD_OPTIONAL))
		return 0;
	if (f->type == TK_FIELD_STRING)
		return !*tk_field_string(e, f);
	for (unsigned i = 0; i < f->count; i++)
		if (tk_field_value(e, f, i).u)
			return 0;
	return 1;
}

/* v in decimal at p (room for 20 bytes): printf would be most of the
 * time of a dump.  Returns the bytes written. */
static size_t
put_u64(char *p, uint64_t v)
{
	char t[20];
	size_t n = 0;
	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		p[i] = t[n - 1 - i];
	return n;
}

/* A field as text: the string, the name of an enumeration's value, a
 * number (%.17g for doubles), or the values of an array joined by 'x'
 * (a grid of 4x1x1).  `buf` has room for 48 bytes at least. */
static const char *
field_text(char *buf, size_t n, const struct tk_event *e,
           const struct tk_field *f)
{
	if (f->type == TK_FIELD_STRING)
		return tk_field_string(e, f);
	if (f->value_name)
		return f->value_name((unsigned)tk_field_value(e, f, 0).u);
	size_t at = 0;
	for (unsigned i = 0; i < f->count && at + 24 < n; i++) {
		union tk_value v = tk_field_value(e, f, i);
		if (i)
			buf[at++] = 'x';
		switch (f->type) {
		case TK_FIELD_I32:
		case TK_FIELD_I64:
			if (v.i < 0) {
				buf[at++] = '-';
				at += put_u64(buf + at, (uint64_t)0 - (uint64_t)v.i);
			} else {
				at += put_u64(buf + at, (uint64_t)v.i);
			}
			break;
		case TK_FIELD_F64:
			at += (size_t)snprintf(buf + at, n - at, "%.17g", v.d);
			break;
		default:
			at += put_u64(buf + at, v.u);
			break;
		}
	}
	buf[at < n ? at : n - 1] = 0;
	return buf;
}

/* ---- text ------------------------------------------------------------------ */

/* " key=value" of field `name` (key NULL: the field's own name), unless
 * it is optional and none. */
static void
text_field(FILE *f, const struct tk_event *e, const char *name, const char *key)
{
	char b[64];
	const struct tk_field *fd = field(e, name);
	if (field_none(e, fd))
		return;
	putc(' ', f);
	fputs(key ? key : fd->name, f);
	putc('=', f);
	fputs(field_text(b, sizeof(b), e, fd), f);
}

/* " value" of field `name`: what the text shows without a key. */
static void
text_value(FILE *f, const struct tk_event *e, const char *name)
{
	char b[64];
	putc(' ', f);
	fputs(field_text(b, sizeof(b), e, field(e, name)), f);
}

static void
text_range(FILE *f, const struct tk_event *e)
{
	const struct tk_range_attrs *a = &e->u.range;
	char b[64];
	text_field(f, e, "domain", NULL);
	text_field(f, e, "category", NULL);
	if (a->color)
		fprintf(f, " color=#%08x", a->color);
	if (a->payload_type) {
		payload_text(b, sizeof(b), a);
		fprintf(f, " payload=%s", b);
	}
	text_field(f, e, "id", NULL);
	text_field(f, e, "end_track", NULL);
}

static void
text_kernel(FILE *f, const struct tk_event *e)
{
	const struct tk_kernel_attrs *k = &e->u.kernel;
	text_field(f, e, "grid", NULL);
	text_field(f, e, "block", NULL);
	text_field(f, e, "cluster", NULL);
	fprintf(f, " regs=%u smem=%u+%u", k->registers, k->static_smem,
	        k->dynamic_smem);
	if (k->graph_id)
		fprintf(f, " graph=%u node=%" PRIu64, k->graph_id, k->graph_node);
}

static void
text_memcpy(FILE *f, const struct tk_event *e)
{
	const struct tk_memcpy_attrs *m = &e->u.memcpy;
	char b[64];
	text_value(f, e, "copy_kind");
	text_value(f, e, "src_kind");
	fprintf(f, "->%s", field_text(b, sizeof(b), e, field(e, "dst_kind")));
	text_field(f, e, "bytes", NULL);
	if (m->copy_kind == TK_COPY_PTOP)
		fprintf(f, " devices=%u->%u", m->src_device, m->dst_device);
	if (m->flags & TK_FLAG_ASYNC)
		fputs(" async", f);
}

static void
text_memory(FILE *f, const struct tk_event *e)
{
	fprintf(f, " %s", e->u.memory.op == TK_MEM_FREE ? "free" : "alloc");
	text_value(f, e, "mem_kind");
	fprintf(f, " addr=0x%" PRIx64, e->u.memory.address);
	text_field(f, e, "bytes", NULL);
}

static void
text_process(FILE *f, const struct tk_event *e)
{
	const struct tk_process_attrs *p = &e->u.process;
	char b[64];
	fprintf(f, " %s", exit_desc(b, sizeof(b), p->exit, p->exit_code,
	        p->signal));
	fprintf(f, " user=%s", cmd_fmt_duration(b, sizeof(b), p->utime));
	fprintf(f, " sys=%s", cmd_fmt_duration(b, sizeof(b), p->stime));
	text_field(f, e, "max_rss", "maxrss");
	text_field(f, e, "minflt", NULL);
	text_field(f, e, "majflt", NULL);
	text_field(f, e, "nvcsw", NULL);
	text_field(f, e, "nivcsw", NULL);
}

static void
text_attrs(FILE *f, const struct tk_event *e)
{
	char b[64];
	switch (e->kind) {
	case TK_RANGE:
	case TK_ASYNC_RANGE:
	case TK_MARK:
		text_range(f, e);
		break;
	case TK_API:
		text_value(f, e, "domain");
		text_field(f, e, "cbid", NULL);
		if (e->u.api.result)
			fprintf(f, " result=%d", e->u.api.result);
		break;
	case TK_KERNEL:
		text_kernel(f, e);
		break;
	case TK_MEMCPY:
		text_memcpy(f, e);
		break;
	case TK_MEMSET:
		text_value(f, e, "mem_kind");
		text_field(f, e, "bytes", NULL);
		text_field(f, e, "value", NULL);
		if (e->u.memset.flags & TK_FLAG_ASYNC)
			fputs(" async", f);
		break;
	case TK_SYNC:
		text_value(f, e, "type");
		break;
	case TK_OVERHEAD:
		text_field(f, e, "type", NULL);
		break;
	case TK_COUNTER:
		text_field(f, e, "value", NULL);
		if (e->trk->type == TK_TRACK_COUNTER && *e->trk->u.counter.unit)
			fprintf(f, " %s", e->trk->u.counter.unit);
		break;
	case TK_MEMORY:
		text_memory(f, e);
		break;
	case TK_PROCESS:
		text_process(f, e);
		break;
	case TK_RUN:
		text_field(f, e, "index", "run");
		fprintf(f, " %s", exit_desc(b, sizeof(b), e->u.run.exit,
		        e->u.run.exit_code, e->u.run.signal));
		break;
	case TK_DROPPED:
		text_field(f, e, "count", NULL);
		text_field(f, e, "reason", NULL);
		break;
	case TK_FLOW:
		text_field(f, e, "id", NULL);
		fprintf(f, " phase=%s", e->u.flow.phase == TK_FLOW_START ? "start"
		        : e->u.flow.phase == TK_FLOW_END ? "end" : "step");
		text_field(f, e, "category", NULL);
		break;
	}
	uint64_t corr = tk_event_correlation(e);
	if (corr)
		fprintf(f, " corr=%" PRIu64, corr);
	if (e->kind == TK_KERNEL)
		text_field(f, e, "mangled", NULL);
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

enum csv_col {
	COL_KIND, COL_TS, COL_DUR, COL_NAME, COL_PID, COL_TID, COL_THREAD,
	COL_DEVICE, COL_STREAM, COL_CORRELATION, COL_GRID, COL_BLOCK,
	COL_REGISTERS, COL_SHARED_STATIC, COL_SHARED_DYNAMIC, COL_BYTES,
	COL_COPY_KIND, COL_SRC_KIND, COL_DST_KIND, COL_VALUE, COL_DOMAIN,
	COL_CATEGORY, COL_PAYLOAD, COL_EXIT_CODE, COL_SIGNAL, COL_COUNT,
	COL_DETAIL, COL_ARGS, NCSV
};

static const char *const csv_columns[NCSV] = {
	"kind", "ts", "dur", "name", "pid", "tid", "thread", "device", "stream",
	"correlation", "grid", "block", "registers", "shared_static",
	"shared_dynamic", "bytes", "copy_kind", "src_kind", "dst_kind", "value",
	"domain", "category", "payload", "exit_code", "signal", "count",
	"detail", "args",
};

/* The column of each field a kind shows (ranges, async ranges and marks
 * as TK_RANGE); the text is field_text()'s, empty for an optional field
 * that is none. */
static const struct csv_map {
	uint8_t kind;
	uint8_t col;
	const char *field;
} csv_map[] = {
	{ TK_RANGE, COL_DOMAIN, "domain" },
	{ TK_RANGE, COL_CATEGORY, "category" },
	{ TK_API, COL_DETAIL, "domain" },
	{ TK_KERNEL, COL_GRID, "grid" },
	{ TK_KERNEL, COL_BLOCK, "block" },
	{ TK_KERNEL, COL_REGISTERS, "registers" },
	{ TK_KERNEL, COL_SHARED_STATIC, "static_smem" },
	{ TK_KERNEL, COL_SHARED_DYNAMIC, "dynamic_smem" },
	{ TK_KERNEL, COL_DETAIL, "mangled" },
	{ TK_MEMCPY, COL_BYTES, "bytes" },
	{ TK_MEMCPY, COL_COPY_KIND, "copy_kind" },
	{ TK_MEMCPY, COL_SRC_KIND, "src_kind" },
	{ TK_MEMCPY, COL_DST_KIND, "dst_kind" },
	{ TK_MEMSET, COL_BYTES, "bytes" },
	{ TK_MEMSET, COL_SRC_KIND, "mem_kind" },
	{ TK_SYNC, COL_DETAIL, "type" },
	{ TK_COUNTER, COL_VALUE, "value" },
	{ TK_MEMORY, COL_BYTES, "bytes" },
	{ TK_MEMORY, COL_SRC_KIND, "mem_kind" },
	{ TK_RUN, COL_COUNT, "index" },
	{ TK_DROPPED, COL_COUNT, "count" },
	{ TK_DROPPED, COL_DETAIL, "reason" },
	{ TK_FLOW, COL_COUNT, "id" },
	{ TK_FLOW, COL_DOMAIN, "category" },
};

/* One row being made: each column's text, NULL for empty. */
struct csv_line {
	char num[NCSV][48];
	char *fld[NCSV];
};

static void
csv_put(struct csv_line *l, enum csv_col col, const struct tk_event *e,
        const char *name)
{
	const struct tk_field *f = field(e, name);
	if (!field_none(e, f))
		l->fld[col] = (char *)field_text(l->num[col], sizeof(l->num[col]),
		                                 e, f);
}

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
csv_row(FILE *out, char *fields[NCSV])
{
	for (size_t i = 0; i < NCSV; i++) {
		const char *s = fields[i] ? fields[i] : "";
		csv_field(out, s, strlen(s), i == 0);
	}
	fputc('\n', out);
}

/* The columns of the event's own attributes. */
static void
csv_attrs(struct csv_line *l, const struct tk_event *e)
{
	unsigned kind = is_range(e->kind) ? TK_RANGE : e->kind;
	for (size_t i = 0; i < sizeof(csv_map) / sizeof(csv_map[0]); i++)
		if (csv_map[i].kind == kind)
			csv_put(l, csv_map[i].col, e, csv_map[i].field);
	switch (kind) {
	case TK_RANGE:
		payload_text(l->num[COL_PAYLOAD], sizeof(l->num[COL_PAYLOAD]),
		             &e->u.range);
		l->fld[COL_PAYLOAD] = l->num[COL_PAYLOAD];
		break;
	case TK_MEMORY:
		l->fld[COL_DETAIL] = e->u.memory.op == TK_MEM_FREE ? "free" : "alloc";
		break;
	case TK_PROCESS:
	case TK_RUN: {
		uint64_t how = tk_field_value(e, field(e, "exit"), 0).u;
		if (how == TK_EXIT_NORMAL)
			csv_put(l, COL_EXIT_CODE, e, "exit_code");
		if (how == TK_EXIT_SIGNAL)
			csv_put(l, COL_SIGNAL, e, "signal");
		break;
	}
	}
}

static void
csv_event(FILE *out, const struct where *wp, const struct tk_event *e)
{
	struct csv_line l;
	memset(l.fld, 0, sizeof(l.fld));
	struct where w = *wp;
#define SETF(i, ...) (snprintf(l.num[i], sizeof(l.num[i]), __VA_ARGS__), \
                      l.fld[i] = l.num[i])
	l.fld[COL_KIND] = (char *)tk_kind_name(e->kind);
	SETF(COL_TS, "%" PRId64, e->ts);
	SETF(COL_DUR, "%" PRId64, e->dur);
	l.fld[COL_NAME] = (char *)e->name;
	if (w.pid >= 0) SETF(COL_PID, "%" PRId64, w.pid);
	if (w.tid >= 0) SETF(COL_TID, "%" PRId64, w.tid);
	l.fld[COL_THREAD] = (char *)w.thread;
	if (w.device >= 0) SETF(COL_DEVICE, "%" PRId64, w.device);
	if (w.stream >= 0) SETF(COL_STREAM, "%" PRId64, w.stream);
	uint64_t corr = tk_event_correlation(e);
	if (corr) SETF(COL_CORRELATION, "%" PRIu64, corr);
#undef SETF
	csv_attrs(&l, e);
	char *args = NULL;
	if (e->args) {
		args = strndup(e->args, e->args_len);
		l.fld[COL_ARGS] = args;
	}
	csv_row(out, l.fld);
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

/* A field as JSON: a string, the name of an enumeration's value, a
 * number, or an array of numbers (a grid). */
static json_t *
field_json(const struct tk_event *e, const struct tk_field *f)
{
	if (f->type == TK_FIELD_STRING)
		return jcstr(tk_field_string(e, f));
	if (f->value_name)
		return json_string(f->value_name((unsigned)tk_field_value(e, f, 0).u));
	if (f->count > 1) {
		json_t *a = json_array();
		for (unsigned i = 0; i < f->count; i++)
			json_array_append_new(a, json_integer(
				(json_int_t)tk_field_value(e, f, i).u));
		return a;
	}
	union tk_value v = tk_field_value(e, f, 0);
	switch (f->type) {
	case TK_FIELD_I32:
	case TK_FIELD_I64:
		return json_integer(v.i);
	case TK_FIELD_F64:
		return json_real(v.d);
	default:
		return json_integer((json_int_t)v.u);
	}
}

/* Field `name` into `o` under `key` (NULL: the field's own name), unless
 * it is optional and none. */
static void
json_field(json_t *o, const struct tk_event *e, const char *name,
           const char *key)
{
	const struct tk_field *f = field(e, name);
	if (!field_none(e, f))
		json_object_set_new(o, key ? key : f->name, field_json(e, f));
}

static void
json_range(json_t *o, const struct tk_event *e)
{
	const struct tk_range_attrs *a = &e->u.range;
	json_field(o, e, "domain", NULL);
	json_field(o, e, "category", NULL);
	json_field(o, e, "color", NULL);
	if (a->payload_type == TK_PAYLOAD_DOUBLE)
		json_object_set_new(o, "payload", json_real(a->payload.d));
	else if (a->payload_type == TK_PAYLOAD_INT)
		json_object_set_new(o, "payload", json_integer(a->payload.i));
	else if (a->payload_type == TK_PAYLOAD_UINT)
		json_object_set_new(o, "payload", json_integer((json_int_t)a->payload.u));
	json_field(o, e, "id", NULL);
}

static void
json_kernel(json_t *o, const struct tk_event *e)
{
	json_field(o, e, "grid", NULL);
	json_field(o, e, "block", NULL);
	if (e->u.kernel.cluster[0])
		json_field(o, e, "cluster", NULL);
	json_field(o, e, "registers", NULL);
	json_field(o, e, "static_smem", "shared_static");
	json_field(o, e, "dynamic_smem", "shared_dynamic");
	if (e->u.kernel.graph_id) {
		json_field(o, e, "graph_id", "graph");
		json_field(o, e, "graph_node", NULL);
	}
	json_field(o, e, "mangled", NULL);
}

static void
json_memcpy(json_t *o, const struct tk_event *e)
{
	const struct tk_memcpy_attrs *m = &e->u.memcpy;
	json_field(o, e, "bytes", NULL);
	json_field(o, e, "copy_kind", NULL);
	json_field(o, e, "src_kind", NULL);
	json_field(o, e, "dst_kind", NULL);
	if (m->copy_kind == TK_COPY_PTOP) {
		json_field(o, e, "src_device", NULL);
		json_field(o, e, "dst_device", NULL);
	}
	json_object_set_new(o, "async", json_boolean(m->flags & TK_FLAG_ASYNC));
}

/* How a process or a run ended: its exit code or its signal. */
static void
json_exit(json_t *o, const struct tk_event *e)
{
	uint64_t how = tk_field_value(e, field(e, "exit"), 0).u;
	if (how == TK_EXIT_NORMAL)
		json_field(o, e, "exit_code", NULL);
	if (how == TK_EXIT_SIGNAL)
		json_field(o, e, "signal", NULL);
}

static void
json_process(json_t *o, const struct tk_event *e)
{
	static const char *const usage[] = {
		"utime", "stime", "max_rss", "minflt", "majflt", "nvcsw", "nivcsw",
	};
	json_exit(o, e);
	for (size_t i = 0; i < sizeof(usage) / sizeof(usage[0]); i++)
		json_field(o, e, usage[i], NULL);
}

/* The attributes of the event's kind into `o`. */
static void
json_attrs(json_t *o, const struct where *w, const struct tk_event *e)
{
	switch (e->kind) {
	case TK_RANGE:
	case TK_ASYNC_RANGE:
	case TK_MARK:
		json_range(o, e);
		break;
	case TK_API:
		json_field(o, e, "domain", "api");
		json_field(o, e, "result", NULL);
		json_field(o, e, "cbid", NULL);
		break;
	case TK_KERNEL:
		json_kernel(o, e);
		break;
	case TK_MEMCPY:
		json_memcpy(o, e);
		break;
	case TK_MEMSET:
		json_field(o, e, "bytes", NULL);
		json_field(o, e, "mem_kind", NULL);
		json_field(o, e, "value", NULL);
		json_object_set_new(o, "async", json_boolean(e->u.memset.flags & TK_FLAG_ASYNC));
		break;
	case TK_SYNC:
		json_field(o, e, "type", "sync");
		break;
	case TK_OVERHEAD:
		json_field(o, e, "type", "overhead");
		break;
	case TK_COUNTER:
		json_field(o, e, "value", NULL);
		if (w->unit)
			json_object_set_new(o, "unit", jcstr(w->unit));
		break;
	case TK_MEMORY:
		json_object_set_new(o, "op", json_string(
			e->u.memory.op == TK_MEM_FREE ? "free" : "alloc"));
		json_field(o, e, "address", NULL);
		json_field(o, e, "bytes", NULL);
		json_field(o, e, "mem_kind", NULL);
		break;
	case TK_PROCESS:
		json_process(o, e);
		break;
	case TK_RUN:
		json_field(o, e, "index", "run");
		json_exit(o, e);
		break;
	case TK_DROPPED:
		json_field(o, e, "count", NULL);
		json_field(o, e, "reason", NULL);
		break;
	case TK_FLOW:
		json_field(o, e, "id", NULL);
		json_field(o, e, "phase", NULL);
		json_field(o, e, "category", NULL);
		break;
	}
}

static void
json_event(FILE *out, const struct where *wp, const struct tk_event *e)
{
	json_t *o = json_object();
	struct where w = *wp;
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
	json_attrs(o, wp, e);
	if (e->args) {
		json_t *a = json_loadb(e->args, e->args_len, JSON_DECODE_ANY, NULL);
		json_object_set_new(o, "args", a ? a : jstr(e->args, e->args_len));
	}
	json_dumpf(o, out, JSON_COMPACT);
	fputc('\n', out);
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

/* --csv and --json on worker threads (batch.c): batches of events
 * copied from the reader, formatted by the pool, written in order. */
struct parallel {
	struct ordpool *pool;
	struct dump_batch *batches;
	void **jobs;
	unsigned nslots;
};

/* events per batch: a few hundred kilobytes of text, so that handing
 * over a batch costs little beside formatting it */
#define BATCH_EVENTS 4096

static void
batch_work(void *job, void *ctx)
{
	(void)ctx;
	dump_batch_render(job);
}

/* Write a batch (the pool's emit), or say why not: -1 out of memory, or
 * the write's errno.  The command does not exit here, with the workers
 * still running (parallel_check). */
static int
batch_emit(void *job, void *ctx)
{
	struct dump_batch *b = job;
	(void)ctx;
	if (b->failed)
		return -1;
	fwrite(b->text, 1, b->text_len, stdout);
	return cmd_output_error(stdout);
}

/* After the pool emitted: on a failure, stop the workers (join them),
 * then say it and exit as cmd_check_output() does. */
static void
parallel_check(struct parallel *par)
{
	int failed = ordpool_failed(par->pool);
	if (!failed)
		return;
	ordpool_free(par->pool); /* what is left is formatted, not written */
	par->pool = NULL;
	if (failed < 0)
		cmd_die(EXIT_USAGE, "out of memory");
	cmd_output_failed(failed);
}

/* A pool for --csv and --json when there are threads to use, else NULL
 * (events are then formatted as they are read). */
static struct parallel *
parallel_new(void)
{
	unsigned threads = ordpool_threads();
	if (threads <= 1)
		return NULL;
	struct parallel *par = calloc(1, sizeof(*par));
	if (!par)
		cmd_die(EXIT_USAGE, "out of memory");
	/* two batches per party: one being formatted, one waiting */
	par->nslots = 2 * threads;
	par->batches = calloc(par->nslots, sizeof(*par->batches));
	par->jobs = calloc(par->nslots, sizeof(*par->jobs));
	if (!par->batches || !par->jobs)
		cmd_die(EXIT_USAGE, "out of memory");
	for (unsigned i = 0; i < par->nslots; i++)
		par->jobs[i] = &par->batches[i];
	/* jansson seeds its hash function once, on first use: before the
	 * threads, so that they never race to do it */
	json_object_seed(0);
	if (!(par->pool = ordpool_new(threads, par->nslots, par->jobs,
	                              batch_work, batch_emit, NULL)))
		cmd_die(EXIT_USAGE, "out of memory");
	return par;
}

static void
parallel_free(struct parallel *par)
{
	if (!par)
		return;
	ordpool_free(par->pool);
	for (unsigned i = 0; i < par->nslots; i++)
		dump_batch_free(&par->batches[i]);
	free(par->batches);
	free(par->jobs);
	free(par);
}

static int
dump_events(const char *path, struct tk_reader *r, struct dump *d,
            struct parallel *par)
{
	const struct options *opt = &d->opt;
	const struct tk_event *e;
	int64_t origin = INT64_MIN, start = 0;
	unsigned scope = 0;
	int rc;
	dump_render_fn *render = opt->format == FMT_CSV ? csv_event : json_event;
	struct dump_batch *batch = NULL;  /* being filled */
	if (opt->format == FMT_TEXT)
		par = NULL;
	while ((rc = tk_reader_next_event(r, &e)) == TK_OK) {
		if (tk_reader_scope(r) != scope) {
			/* the window of --from and --to starts with each trace */
			scope = tk_reader_scope(r);
			start = tk_reader_chunk(r)->t_min;
			if (batch)
				dump_batch_new_scope(batch);
		}
		if (opt->kinds && !(opt->kinds & (1u << e->kind)))
			continue;
		if ((opt->from > 0 || opt->to != INT64_MAX) &&
		    (e->ts - start < opt->from || e->ts - start >= opt->to))
			continue;
		if (opt->name && regexec(opt->name, e->name, 0, NULL, 0) != 0)
			continue;
		if (opt->limit && d->printed >= opt->limit) {
			rc = TK_EOF;
			break;
		}
		d->printed++;
		struct where w = locate(r, e->trk);
		if (par) {
			if (!batch) {
				batch = ordpool_next(par->pool);
				parallel_check(par);
				dump_batch_reset(batch, render);
			}
			dump_batch_add(batch, e, &w);
			if (batch->n == BATCH_EVENTS) {
				ordpool_post(par->pool);
				parallel_check(par);
				batch = NULL;
			}
			continue;
		}
		if (opt->format == FMT_TEXT) {
			if (origin == INT64_MIN)
				origin = tk_reader_chunk(r)->t_min;
			text_event(r, e, origin);
		} else {
			render(stdout, &w, e);
		}
		cmd_check_output(stdout);
	}
	if (par) {
		/* everything read is written before a message about the
		 * input, as without threads */
		if (batch)
			ordpool_post(par->pool);
		ordpool_drain(par->pool);
		parallel_check(par);
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
		unsigned k = cmd_kind_from_name(t);
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

enum { O_NAME = 256, O_FROM, O_TO };

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "csv", no_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "info", no_argument, NULL, 'i' },
		{ "kind", required_argument, NULL, 'k' },
		{ "limit", required_argument, NULL, 'n' },
		{ "name", required_argument, NULL, O_NAME },
		{ "from", required_argument, NULL, O_FROM },
		{ "to", required_argument, NULL, O_TO },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct dump d = { { FMT_TEXT, 0, 0, 0, NULL, 0, INT64_MAX }, 0 };
	struct options *opt = &d.opt;
	regex_t name_re;
	int rc;
	cmd_init("trace-dump");
	/* Once the reader's worker threads exist, glibc locks stdout for
	 * every call, and libcsv writes a character at a time: with 2
	 * threads --csv took 2.7 times the CPU of one thread, 65 % of it in
	 * fputc's locking.  Only this thread writes to stdout. */
	__fsetlocking(stdout, FSETLOCKING_BYCALLER);
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
		case O_NAME:
			if (opt->name)
				regfree(&name_re);
			if ((rc = regcomp(&name_re, optarg, REG_EXTENDED | REG_NOSUB))) {
				char msg[256];
				regerror(rc, &name_re, msg, sizeof(msg));
				cmd_usage_error("invalid --name '%s': %s", optarg, msg);
			}
			opt->name = &name_re;
			break;
		case O_FROM:
			if (cmd_parse_duration(optarg, &opt->from) < 0)
				cmd_usage_error("invalid --from '%s'", optarg);
			break;
		case O_TO:
			if (cmd_parse_duration(optarg, &opt->to) < 0)
				cmd_usage_error("invalid --to '%s'", optarg);
			break;
		case 'h': usage(); return cmd_finish(0);
		case 'V': cmd_version();
		default: cmd_bad_option(c, argv);
		}
	}
	if (opt->info && opt->format == FMT_CSV)
		cmd_usage_error("--info is text or --json, not --csv");
	if (opt->to <= opt->from)
		cmd_usage_error("--to must be later than --from");

	cmd_no_input_tty(argc - optind, "[OPTIONS] [FILE...]");
	static char *stdin_only[] = { "-", NULL };
	char **files = optind < argc ? argv + optind : stdin_only;
	int nfiles = optind < argc ? argc - optind : 1;
	if (opt->format == FMT_CSV && !opt->info) {
		char *hdr[NCSV];
		for (size_t i = 0; i < NCSV; i++)
			hdr[i] = (char *)csv_columns[i];
		csv_row(stdout, hdr);
	}
	struct parallel *par = opt->info || opt->format == FMT_TEXT ? NULL
	                                                            : parallel_new();
	int status = 0;
	for (int i = 0; i < nfiles; i++) {
		/* --info counts events, it never shows their args */
		struct autoread in;
		int st;
		struct tk_reader *r = autoread_open_reader_flags(&in, files[i],
			opt->info ? CMD_READ_NO_ARGS : 0, &st);
		status |= st;
		if (!r)
			continue;
		status |= opt->info ? dump_info(files[i], r, opt)
		                    : dump_events(files[i], r, &d, par);
		tk_reader_free(r);
		autoread_close(&in);
		if (opt->limit && d.printed >= opt->limit)
			break;
	}
	parallel_free(par);
	if (opt->name)
		regfree(&name_re);
	return cmd_finish(status);
}
