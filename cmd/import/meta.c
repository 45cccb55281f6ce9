/* SPDX-License-Identifier: MIT */
/*
 * The top-level keys besides traceEvents: run metadata, and the GPUs.
 *
 *   deviceProperties      device definitions (name, memory, SMs, compute
 *                         capability); other properties as metadata
 *                         "deviceProperties.<id>"
 *   baseTimeNanoseconds   added to every time (Kineto writes times
 *                         relative to it, often after the events)
 *   otherData             run metadata under its own keys (where
 *                         trace-to-chrome puts a trace's metadata)
 *   anything else         run metadata, objects flattened with dotted
 *                         keys: distributedInfo.rank = 3
 *
 * Values are kept as text; a value longer than 4 KiB is replaced by a
 * short description of it, and the metadata as a whole is bounded.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "common/util.h"

#define MAX_VALUE 4096
#define MAX_KEYS 4096
#define MAX_BYTES (1u << 20)
#define MAX_DEPTH 8

/* `bounded`: the input's own values count against the bound; the few
 * the import adds (imp_meta_own) do not, so that a trace with too much
 * metadata still says where it came from. */
static void
add(struct imp *im, const char *key, const char *value, int bounded)
{
	size_t n = strlen(key) + strlen(value);
	if (bounded && (im->meta_keys >= MAX_KEYS || im->meta_bytes + n > MAX_BYTES)) {
		imp_summary_note(im->sum, "metadata values not kept (over 4096 keys "
		                 "or 1 MiB)", 1);
		return;
	}
	/* keys were read as bytes (the splitter's): make them text */
	size_t kn;
	const char *k = cmd_utf8(key, strlen(key), &kn);
	char *kc = strndup(k, kn);
	if (!kc)
		cmd_die(EXIT_USAGE, "out of memory");
	json_t *arr = json_object_get(im->meta, kc);
	if (!arr) {
		arr = json_array();
		if (!arr)
			cmd_die(EXIT_USAGE, "out of memory");
		if (json_object_set_new(im->meta, kc, arr) < 0) {
			free(kc);
			imp_summary_note(im->sum, "metadata keys that cannot be kept", 1);
			return;
		}
	}
	free(kc);
	json_array_append_new(arr, json_string(value));
	im->meta_keys++;
	im->meta_bytes += n;
}

/* add() of text that may not be UTF-8: bytes that are not become
 * U+FFFD. */
static void
add_text(struct imp *im, const char *key, const char *text, int bounded)
{
	size_t n;
	const char *ok = cmd_utf8(text, strlen(text), &n);
	char *c = strndup(ok, n);
	if (!c)
		cmd_die(EXIT_USAGE, "out of memory");
	add(im, key, c, bounded);
	free(c);
}

/* A scalar or a compact JSON text, bounded. */
static void
add_value(struct imp *im, const char *key, json_t *v)
{
	char num[64];
	const char *text = NULL;
	char *dump = NULL;
	switch (json_typeof(v)) {
	case JSON_STRING:
		text = json_string_value(v);
		break;
	case JSON_INTEGER:
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		text = num;
		break;
	case JSON_REAL: {
		double d = json_real_value(v);
		for (int p = 15; p <= 17; p++) {
			snprintf(num, sizeof(num), "%.*g", p, d);
			if (strtod(num, NULL) == d)
				break;
		}
		text = num;
		break;
	}
	case JSON_TRUE: text = "true"; break;
	case JSON_FALSE: text = "false"; break;
	case JSON_NULL: text = ""; break;
	default: {
		/* json_dumpb: what json_dumps returns is jansson's to free */
		size_t n = json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!(dump = malloc(n + 1)))
			cmd_die(EXIT_USAGE, "out of memory");
		json_dumpb(v, dump, n, JSON_COMPACT | JSON_ENCODE_ANY);
		dump[n] = 0;
		text = dump;
		break;
	}
	}
	if (strlen(text) > MAX_VALUE) {
		if (json_is_array(v))
			snprintf(num, sizeof(num), "(array of %zu items, not kept)",
			         json_array_size(v));
		else if (json_is_object(v))
			snprintf(num, sizeof(num), "(object of %zu keys, not kept)",
			         json_object_size(v));
		else
			snprintf(num, sizeof(num), "(%zu bytes, not kept)", strlen(text));
		imp_summary_note(im->sum, "metadata values longer than 4 KiB "
		                 "replaced by their size", 1);
		text = num;
	}
	add_text(im, key, text, 1);
	free(dump);
}

/* Objects become dotted keys; `repeat` turns arrays of scalars into one
 * entry per element (trace-to-chrome's form of a repeated key).  An
 * empty array has no element to give: it is kept as "[]", as elsewhere,
 * not dropped. */
static void
flatten(struct imp *im, const char *key, json_t *v, int depth, int repeat)
{
	if (json_is_object(v) && depth < MAX_DEPTH && json_object_size(v) > 0) {
		const char *k;
		json_t *x;
		json_object_foreach(v, k, x) {
			size_t n = strlen(key) + strlen(k) + 2;
			char *sub = malloc(n);
			if (!sub)
				cmd_die(EXIT_USAGE, "out of memory");
			snprintf(sub, n, "%s%s%s", key, *key ? "." : "", k);
			flatten(im, sub, x, depth + 1, repeat);
			free(sub);
		}
		return;
	}
	if (repeat && json_is_array(v) && json_array_size(v) > 0) {
		size_t i;
		json_t *x;
		int scalars = 1;
		json_array_foreach(v, i, x)
			scalars &= !json_is_object(x) && !json_is_array(x);
		if (scalars) {
			json_array_foreach(v, i, x)
				add_value(im, key, x);
			return;
		}
	}
	add_value(im, key, v);
}

static const char *
str_field(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static int
uint_field(json_t *o, const char *k, uint64_t *out)
{
	json_t *v = json_object_get(o, k);
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return 0;
	*out = (uint64_t)json_integer_value(v);
	return 1;
}

static void
set_str(const char **dst, const char *s)
{
	size_t n;
	const char *ok = cmd_utf8(s, strlen(s), &n);
	char *c = strndup(ok, n);
	if (!c)
		cmd_die(EXIT_USAGE, "out of memory");
	free((char *)*dst);
	*dst = c;
}

static void
device_properties(struct imp *im, json_t *v)
{
	if (!json_is_array(v)) {
		flatten(im, "deviceProperties", v, 0, 0);
		return;
	}
	/* what tracekit has no field for, by device id; the same for all
	 * devices (one kind of GPU in a node) is kept once */
	json_t *extras = json_object();
	if (!extras)
		cmd_die(EXIT_USAGE, "out of memory");
	size_t i;
	json_t *d;
	json_array_foreach(v, i, d) {
		uint64_t index, x;
		if (!json_is_object(d) || !uint_field(d, "id", &index) || index > UINT32_MAX) {
			imp_summary_note(im->sum, "deviceProperties entries without an "
			                 "id (kept as metadata)", 1);
			char key[64];
			snprintf(key, sizeof(key), "deviceProperties.%zu", i);
			add_value(im, key, d);
			continue;
		}
		struct tk_device *dev = imp_device_info(im->tracks,
		                                        imp_device(im->tracks, (uint32_t)index));
		json_t *rest = json_deep_copy(d);
		if (!rest)
			cmd_die(EXIT_USAGE, "out of memory");
		json_object_del(rest, "id");
		const char *s;
		if ((s = str_field(d, "name"))) {
			set_str(&dev->name, s);
			json_object_del(rest, "name");
		}
		if ((s = str_field(d, "host"))) {
			set_str(&dev->host, s);
			json_object_del(rest, "host");
		}
		if (uint_field(d, "totalGlobalMem", &x)) {
			dev->memory = x;
			json_object_del(rest, "totalGlobalMem");
		}
		if (uint_field(d, "numSms", &x) && x <= UINT32_MAX) {
			dev->sm_count = (uint32_t)x;
			json_object_del(rest, "numSms");
		}
		if (uint_field(d, "computeMajor", &x) && x <= UINT32_MAX) {
			dev->cc_major = (uint32_t)x;
			json_object_del(rest, "computeMajor");
		}
		if (uint_field(d, "computeMinor", &x) && x <= UINT32_MAX) {
			dev->cc_minor = (uint32_t)x;
			json_object_del(rest, "computeMinor");
		}
		if ((s = str_field(d, "uuid")) && strlen(s) == 32) {
			uint8_t u[16];
			int ok = 1;
			for (int k = 0; k < 16 && ok; k++) {
				unsigned b;
				ok = sscanf(s + 2 * k, "%2x", &b) == 1;
				u[k] = (uint8_t)b;
			}
			if (ok) {
				memcpy(dev->uuid, u, 16);
				json_object_del(rest, "uuid");
			}
		}
		char key[64];
		snprintf(key, sizeof(key), "deviceProperties.%" PRIu64, index);
		if (json_object_size(rest))
			json_object_set(extras, key, rest);
		json_decref(rest);
	}
	const char *k;
	json_t *x, *first = NULL;
	int same = json_object_size(extras) > 1;
	json_object_foreach(extras, k, x) {
		if (!first)
			first = x;
		else if (!json_equal(first, x))
			same = 0;
	}
	if (same && json_object_size(extras) == json_array_size(v)) {
		add_value(im, "deviceProperties", first);
	} else {
		json_object_foreach(extras, k, x)
			add_value(im, k, x);
	}
	json_decref(extras);
}

void
imp_topkey(struct imp *im, const char *key, json_t *v)
{
	if (strcmp(key, "deviceProperties") == 0) {
		device_properties(im, v);
		return;
	}
	if (strcmp(key, "baseTimeNanoseconds") == 0) {
		int64_t b;
		if (json_is_integer(v)) {
			im->base_ns = json_integer_value(v);
			im->has_base = 1;
			return;
		}
		if (json_is_string(v) &&
		    imp_parse_i64(json_string_value(v), json_string_length(v), &b) == 0) {
			im->base_ns = b;
			im->has_base = 1;
			return;
		}
		imp_summary_note(im->sum, "baseTimeNanoseconds that is not an "
		                 "integer (kept as metadata, not applied)", 1);
	}
	if (strcmp(key, "otherData") == 0 && json_is_object(v)) {
		/* trace-to-chrome's own report of the export is not the trace's */
		json_t *tk = json_object_get(v, "tracekit");
		if (json_is_object(tk)) {
			json_incref(tk);
			json_object_del(v, "tracekit");
			imp_summary_note(im->sum, "otherData.tracekit (the exporter's "
			                 "report) not kept", 1);
		}
		flatten(im, "", v, 0, 1);
		json_decref(tk);
		return;
	}
	if (strcmp(key, "systemTraceEvents") == 0) {
		imp_summary_note(im->sum, "systemTraceEvents (ftrace text) not "
		                 "imported", 1);
		return;
	}
	if ((strcmp(key, "host_name") == 0 || strcmp(key, "hostname") == 0) &&
	    json_is_string(v))
		imp_tracks_set_host(im->tracks, json_string_value(v));
	flatten(im, key, v, 0, 0);
}

void
imp_meta_own(struct imp *im, const char *key, const char *value)
{
	add_text(im, key, value, 0);
}

int
imp_write_meta(struct imp *im, struct tk_writer *w)
{
	const char *k;
	json_t *arr;
	json_object_foreach(im->meta, k, arr) {
		size_t i;
		json_t *v;
		json_array_foreach(arr, i, v)
			if (tk_writer_meta(w, k, json_string_value(v)) != TK_OK)
				return -1;
	}
	size_t i;
	json_t *c;
	json_array_foreach(im->categories, i, c) {
		if (tk_writer_category(w, json_string_value(json_array_get(c, 0)),
		                       (uint32_t)json_integer_value(json_array_get(c, 1)),
		                       json_string_value(json_array_get(c, 2))) != TK_OK)
			return -1;
	}
	return 0;
}
