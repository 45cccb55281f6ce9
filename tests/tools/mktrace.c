/* SPDX-License-Identifier: MIT */
/*
 * mktrace: write a .tkt trace described line by line in JSON, for tests
 * that need events synth does not make (overlaps, unsorted input,
 * async ranges, marks, flows, odd bytes in names).
 *
 * Each input line is one object:
 *   {"def":"process","ref":"p","pid":100,"host":"h","argv":["python3"],
 *    "label":"rank0","start":NS}
 *   {"def":"thread","ref":"t","process":"p","tid":101,"name":"main"}
 *   {"def":"device","ref":"d","index":0,"name":"NVIDIA H100","sm_count":132}
 *   {"def":"stream","ref":"s","process":"p","device":"d","stream":7,"context":1}
 *   {"def":"counter","ref":"c","name":"rss","unit":"bytes","process":"p"}
 *   {"meta":"key","value":"text"}
 *   {"kind":"kernel","track":"s","ts":NS,"dur":NS,"name":"k", ...}
 *   {"flush":true}          end the chunk here
 *   {"watermark":NS}        promise no later chunk begins before NS
 * Event attributes by key: correlation, id, end_track, domain, category,
 * color, payload (number), value, bytes, count, reason, phase, copy_kind,
 * op, grid/block ([x,y,z]), registers, args (object), and name_hex (raw
 * bytes of the name, to write invalid UTF-8).  Refs may be redefined
 * (a thread renamed).
 *
 * Usage: mktrace [-c CHUNK_BYTES] < description > trace.tkt
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tracekit.h"
#include "common/util.h"

#define MAX_REFS 256

static struct ref {
	char *name;
	uint32_t id;
} refs[MAX_REFS];
static unsigned nrefs;

static uint32_t
ref_get(json_t *o, const char *key, long line)
{
	const char *n = json_string_value(json_object_get(o, key));
	if (!n)
		return 0;
	for (unsigned i = 0; i < nrefs; i++)
		if (strcmp(refs[i].name, n) == 0)
			return refs[i].id;
	cmd_die(2, "line %ld: unknown ref '%s'", line, n);
}

static uint32_t
ref_old(const char *n)
{
	for (unsigned i = 0; i < nrefs; i++)
		if (strcmp(refs[i].name, n) == 0)
			return refs[i].id;
	return 0;
}

static void
ref_set(const char *n, uint32_t id)
{
	for (unsigned i = 0; i < nrefs; i++)
		if (strcmp(refs[i].name, n) == 0) {
			refs[i].id = id;
			return;
		}
	if (nrefs == MAX_REFS)
		cmd_die(2, "too many refs");
	refs[nrefs].name = strdup(n);
	refs[nrefs++].id = id;
}

static int64_t
num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? (int64_t)json_integer_value(v)
	                          : (int64_t)json_number_value(v);
}

static const char *
str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static void
dims(json_t *o, const char *key, uint32_t d[3])
{
	json_t *a = json_object_get(o, key);
	for (size_t i = 0; i < 3; i++)
		d[i] = json_is_array(a) && i < json_array_size(a)
		     ? (uint32_t)json_integer_value(json_array_get(a, i)) : 1;
}

static void
define(struct tk_writer *w, json_t *o, long line)
{
	const char *type = str(o, "def"), *ref = str(o, "ref");
	uint32_t id = 0, old = ref_old(ref);
	if (strcmp(type, "process") == 0) {
		json_t *argv = json_object_get(o, "argv");
		const char *args[16];
		size_t n = 0;
		for (; argv && n < json_array_size(argv) && n < 16; n++)
			args[n] = json_string_value(json_array_get(argv, n));
		struct tk_process p = { str(o, "host"), num(o, "pid"), 1, num(o, "start"),
		                        (uint32_t)n, args, str(o, "label") };
		id = tk_writer_process(w, old, &p);
	} else if (strcmp(type, "thread") == 0) {
		struct tk_thread t = { ref_get(o, "process", line), num(o, "tid"),
		                       str(o, "name") };
		id = tk_writer_thread(w, old, &t);
	} else if (strcmp(type, "device") == 0) {
		struct tk_device d = { 0 };
		d.host = str(o, "host");
		d.index = (uint32_t)num(o, "index");
		d.name = str(o, "name");
		d.sm_count = (uint32_t)num(o, "sm_count");
		id = tk_writer_device(w, old, &d);
	} else if (strcmp(type, "stream") == 0) {
		struct tk_stream s = { ref_get(o, "process", line), ref_get(o, "device", line),
		                       (uint64_t)num(o, "context"), (uint64_t)num(o, "stream"),
		                       str(o, "name") };
		id = tk_writer_stream(w, old, &s);
	} else if (strcmp(type, "counter") == 0) {
		struct tk_counter c = { str(o, "name"), str(o, "unit"),
		                        ref_get(o, "process", line), ref_get(o, "device", line) };
		id = tk_writer_counter(w, old, &c);
	} else {
		cmd_die(2, "line %ld: unknown def '%s'", line, type);
	}
	if (!id)
		cmd_die(2, "line %ld: %s", line, tk_writer_error(w));
	ref_set(ref, id);
}

static void
event(struct tk_writer *w, json_t *o, long line)
{
	struct tk_event e = { 0 };
	e.kind = tk_kind_from_name(str(o, "kind"));
	if (!e.kind)
		cmd_die(2, "line %ld: unknown kind '%s'", line, str(o, "kind"));
	e.track = ref_get(o, "track", line);
	e.ts = num(o, "ts");
	e.dur = num(o, "dur");
	e.name = str(o, "name");
	const char *hex = json_string_value(json_object_get(o, "name_hex"));
	if (hex) {
		char raw[256];
		size_t n = 0;
		for (; hex[2 * n] && hex[2 * n + 1] && n < sizeof(raw); n++) {
			char two[3] = { hex[2 * n], hex[2 * n + 1], 0 };
			raw[n] = (char)strtol(two, NULL, 16);
		}
		e.name_id = tk_writer_string(w, raw, n);
	}
	json_t *args = json_object_get(o, "args");
	char *args_text = NULL;
	if (args) {
		args_text = json_is_string(args) ? strdup(json_string_value(args))
		                                 : json_dumps(args, JSON_COMPACT);
		e.args = args_text;
		e.args_len = (uint32_t)strlen(args_text);
	}
	uint64_t corr = (uint64_t)num(o, "correlation");
	switch (e.kind) {
	case TK_RANGE:
	case TK_ASYNC_RANGE:
	case TK_MARK:
		e.u.range.domain = str(o, "domain");
		e.u.range.category = (uint32_t)num(o, "category");
		e.u.range.color = (uint32_t)num(o, "color");
		if (json_object_get(o, "payload")) {
			e.u.range.payload_type = TK_PAYLOAD_DOUBLE;
			e.u.range.payload.d = json_number_value(json_object_get(o, "payload"));
		}
		e.u.range.id = (uint64_t)num(o, "id");
		e.u.range.end_track = ref_get(o, "end_track", line);
		break;
	case TK_API:
		e.u.api.domain = TK_API_RUNTIME;
		e.u.api.correlation = corr;
		break;
	case TK_KERNEL:
		e.u.kernel.correlation = corr;
		dims(o, "grid", e.u.kernel.grid);
		dims(o, "block", e.u.kernel.block);
		e.u.kernel.registers = (uint32_t)num(o, "registers");
		e.u.kernel.mangled = "";
		break;
	case TK_MEMCPY:
		e.u.memcpy.correlation = corr;
		e.u.memcpy.bytes = (uint64_t)num(o, "bytes");
		e.u.memcpy.copy_kind = (uint32_t)num(o, "copy_kind");
		break;
	case TK_MEMSET:
		e.u.memset.correlation = corr;
		e.u.memset.bytes = (uint64_t)num(o, "bytes");
		break;
	case TK_SYNC:
		e.u.sync.correlation = corr;
		break;
	case TK_COUNTER:
		e.u.counter.value = json_number_value(json_object_get(o, "value"));
		break;
	case TK_MEMORY:
		e.u.memory.op = (uint32_t)num(o, "op");
		e.u.memory.bytes = (uint64_t)num(o, "bytes");
		break;
	case TK_DROPPED:
		e.u.dropped.count = (uint64_t)num(o, "count");
		e.u.dropped.reason = str(o, "reason");
		break;
	case TK_FLOW:
		e.u.flow.id = (uint64_t)num(o, "id");
		e.u.flow.phase = (uint32_t)num(o, "phase");
		e.u.flow.category = str(o, "category");
		break;
	case TK_RUN:
		e.u.run.index = (uint32_t)num(o, "index");
		break;
	}
	if (tk_writer_event(w, &e) != TK_OK)
		cmd_die(2, "line %ld: %s", line, tk_writer_error(w));
	free(args_text);
}

int
main(int argc, char **argv)
{
	cmd_init("mktrace");
	struct tk_writer_options wo = TK_WRITER_OPTIONS_INIT;
	if (argc == 3 && strcmp(argv[1], "-c") == 0)
		wo.chunk_bytes = (uint32_t)atoi(argv[2]);
	else if (argc != 1)
		cmd_usage_error("usage: mktrace [-c CHUNK_BYTES] < description > trace.tkt");
	struct tk_writer *w = tk_writer_new();
	if (!w || tk_writer_open_path(w, "-", &wo) != TK_OK)
		cmd_die(2, "cannot write the trace");
	char *lbuf = NULL;
	size_t cap = 0;
	long line = 0;
	while (getline(&lbuf, &cap, stdin) > 0) {
		line++;
		json_error_t err;
		json_t *o = json_loads(lbuf, 0, &err);
		if (!o) {
			if (strspn(lbuf, " \t\r\n") == strlen(lbuf))
				continue;
			cmd_die(2, "line %ld: %s", line, err.text);
		}
		if (json_object_get(o, "def"))
			define(w, o, line);
		else if (json_object_get(o, "meta"))
			tk_writer_meta(w, str(o, "meta"), str(o, "value"));
		else if (json_object_get(o, "flush"))
			tk_writer_flush(w);
		else if (json_object_get(o, "watermark"))
			tk_writer_watermark(w, num(o, "watermark"));
		else
			event(w, o, line);
		json_decref(o);
	}
	free(lbuf);
	if (tk_writer_close(w) != TK_OK)
		cmd_die(2, "%s", tk_writer_error(w));
	tk_writer_free(w);
	for (unsigned i = 0; i < nrefs; i++)
		free(refs[i].name);
	return 0;
}
