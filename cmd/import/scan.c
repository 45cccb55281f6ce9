/* SPDX-License-Identifier: MIT */
/*
 * The splitter of trace-import: it walks the top level of the JSON text,
 * `{"traceEvents": [...], "key": value, ...}` or a bare `[...]`, and
 * hands out the bytes of each event (and of each other top-level value)
 * for jansson to parse.  It does not parse: it only follows strings,
 * escapes and nesting to find where a value ends, so memory holds one
 * event at a time however large the file.
 *
 * While it passes over an event it also notes where the values of its
 * "ts" and "dur" keys are, so their digits can be read exactly (a
 * double cannot hold the nanoseconds of an epoch time in microseconds).
 *
 * Given an imp_flat (one thread), it first tries the fast path's reader
 * (flat.c) on each event, which finds the event's end as it reads it:
 * the events it takes are looked at once, not split and then read.
 *
 * Errors of structure stop the import with the byte offset (0-based, in
 * the JSON text after any decompression); errors inside an event are
 * left to jansson, which reports them for that event alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "support.h"

#define READ_SIZE (1u << 20)

enum state {
	S_START,
	S_OBJ_FIRST,     /* after '{': a key or '}' */
	S_OBJ_KEY,       /* after ',': a key */
	S_OBJ_COLON,     /* after a key */
	S_OBJ_NEXT,      /* after a value: ',' or '}' */
	S_ARR_FIRST,     /* after '[': an element or ']' */
	S_ARR_ELEM,      /* after ',': an element */
	S_ARR_NEXT,      /* after an element: ',' or ']' */
	S_END,           /* after the top-level value: nothing more */
	S_DONE,
	S_FAILED,
};

/* Characters that matter inside a value; the rest are skipped fast. */
static const unsigned char special[256] = {
	['"'] = 1, ['\\'] = 1, ['{'] = 1, ['}'] = 1, ['['] = 1, [']'] = 1,
	[','] = 1, [':'] = 1,
};

static int
is_ws(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

void
imp_scan_init(struct imp_scan *s, struct imp_input *in, struct imp_flat *flat)
{
	memset(s, 0, sizeof(*s));
	s->in = in;
	s->flat = flat;
	s->state = S_START;
}

void
imp_scan_free(struct imp_scan *s)
{
	free(s->buf);
	free(s->key);
	s->buf = s->key = NULL;
}

static int
fail(struct imp_scan *s, const char *what, size_t at)
{
	snprintf(s->errmsg, sizeof(s->errmsg), "%s at byte %llu", what,
	         (unsigned long long)(s->base + at));
	s->state = S_FAILED;
	return -1;
}

/* Read more input, keeping the bytes from s->pos on (they move to the
 * front).  Returns 1, 0 at the end of the input, -1 on an error. */
static int
more(struct imp_scan *s)
{
	if (s->eof)
		return 0;
	if (s->pos > 0) {
		memmove(s->buf, s->buf + s->pos, s->end - s->pos);
		s->base += s->pos;
		s->end -= s->pos;
		s->pos = 0;
	}
	if (s->cap - s->end < READ_SIZE / 4) {
		/* the value being scanned fills the buffer: make room */
		if (s->end > IMP_MAX_ITEM)
			return fail(s, "an event or value larger than 64 MiB begins", 0);
		size_t cap = s->cap ? s->cap * 2 : READ_SIZE;
		char *b = realloc(s->buf, cap + 1);
		if (!b)
			return fail(s, "out of memory reading the value that begins", 0);
		s->buf = b;
		s->cap = cap;
	}
	long n = imp_input_read(s->in, s->buf + s->end, s->cap - s->end);
	if (n < 0) {
		snprintf(s->errmsg, sizeof(s->errmsg), "%s after byte %llu of the JSON",
		         s->in->errmsg, (unsigned long long)(s->base + s->end));
		s->state = S_FAILED;
		return -1;
	}
	if (n == 0) {
		s->eof = 1;
		return 0;
	}
	s->end += (size_t)n;
	return 1;
}

/* The next byte that is not white space, without taking it; -1 at the
 * end of the input, -2 on an error. */
static int
peek(struct imp_scan *s)
{
	for (;;) {
		while (s->pos < s->end && is_ws((unsigned char)s->buf[s->pos]))
			s->pos++;
		if (s->pos < s->end)
			return (unsigned char)s->buf[s->pos];
		int rc = more(s);
		if (rc < 0)
			return -2;
		if (rc == 0)
			return -1;
	}
}

/* End of the string whose opening quote is at p: the closing quote, or
 * NULL if the buffer ends first. */
static const char *
string_end(const char *p, const char *e)
{
	p++;
	for (;;) {
		const char *q = memchr(p, '"', (size_t)(e - p));
		if (!q)
			return NULL;
		/* escaped when preceded by an odd number of backslashes */
		const char *b = q;
		while (b > p && b[-1] == '\\')
			b--;
		if (((q - b) & 1) == 0)
			return q;
		p = q + 1;
	}
}

/* Where the primitive value (number, true, false, null) at p ends. */
static const char *
primitive_end(const char *p, const char *e)
{
	while (p < e && !is_ws((unsigned char)*p) && *p != ',' && *p != ']' &&
	       *p != '}' && *p != ':' && *p != '"' && *p != '[' && *p != '{')
		p++;
	return p;
}

/* The keys whose values' places are noted, by length and text. */
static int
span_key(const char *k, size_t n)
{
	switch (n) {
	case 2:
		if (k[0] == 't' && k[1] == 's') return IMP_SPAN_TS + 1;
		if (k[0] == 'p' && k[1] == 'h') return IMP_SPAN_PH + 1;
		return 0;
	case 3:
		if (memcmp(k, "dur", 3) == 0) return IMP_SPAN_DUR + 1;
		if (memcmp(k, "cat", 3) == 0) return IMP_SPAN_CAT + 1;
		return 0;
	case 4:
		return memcmp(k, "args", 4) == 0 ? IMP_SPAN_ARGS + 1 : 0;
	}
	return 0;
}

static void
note_span(struct imp_span *sp, int which, const char *base, const char *v,
          const char *end)
{
	while (v < end && is_ws((unsigned char)*v))
		v++;
	while (end > v && is_ws((unsigned char)end[-1]))
		end--;
	sp[which - 1].off = (uint32_t)(v - base);
	sp[which - 1].len = (uint32_t)(end - v);
}

/*
 * Length of the JSON value at b, 0 if the buffer ends before it does
 * (and the input may have more), -1 if no value starts here.  Objects
 * and arrays are followed by nesting only: jansson checks the rest.
 */
static long
value_len(const char *b, const char *e, int eof, struct imp_span *sp)
{
	const char *p = b;
	int c = (unsigned char)*p;
	if (c == '"') {
		const char *q = string_end(p, e);
		return q ? q + 1 - b : 0;
	}
	if (c != '{' && c != '[') {
		if (!(c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' ||
		      c == 'n' || c == 'N' || c == 'I'))
			return -1;
		p = primitive_end(p, e);
		if (p == e && !eof)
			return 0;
		return p - b;
	}
	/* depth-1 keys of an object: which = span_key() of the last key */
	long depth = 0;
	int expect_key = 0, which = 0;
	const char *vstart = NULL;
	while (p < e) {
		while (p < e && !special[(unsigned char)*p])
			p++;
		if (p == e)
			break;
		switch (*p) {
		case '"': {
			const char *q = string_end(p, e);
			if (!q)
				return 0;
			if (depth == 1 && expect_key) {
				which = span_key(p + 1, (size_t)(q - p - 1));
				expect_key = 0;
			}
			p = q + 1;
			continue;
		}
		case '{':
		case '[':
			depth++;
			if (depth == 1)
				expect_key = *p == '{';
			break;
		case '}':
		case ']':
			if (depth == 1 && vstart) {
				note_span(sp, which, b, vstart, p);
				vstart = NULL;
			}
			if (--depth == 0)
				return p + 1 - b;
			break;
		case ',':
			if (depth == 1) {
				if (vstart) {
					note_span(sp, which, b, vstart, p);
					vstart = NULL;
				}
				expect_key = *b == '{';
				which = 0;
			}
			break;
		case ':':
			if (depth == 1 && which)
				vstart = p + 1;
			break;
		default:   /* a backslash outside a string: jansson will say */
			break;
		}
		p++;
	}
	return 0;
}

/* Read a key (the string at s->pos) into s->key. */
static int
read_key(struct imp_scan *s)
{
	const char *q;
	for (;;) {
		q = string_end(s->buf + s->pos, s->buf + s->end);
		if (q)
			break;
		int rc = more(s);
		if (rc < 0)
			return -1;
		if (rc == 0)
			return fail(s, "unexpected end of input in a key that begins", s->pos);
	}
	const char *k = s->buf + s->pos + 1;
	size_t n = (size_t)(q - k);
	json_t *dec = NULL;
	if (memchr(k, '\\', n)) {
		/* escapes: jansson decodes them */
		dec = json_loadb(k - 1, n + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		if (!dec || !json_is_string(dec)) {
			json_decref(dec);
			return fail(s, "invalid key", s->pos);
		}
		k = json_string_value(dec);
		n = strlen(k);
	}
	char *p = tkp_grow(s->key, &s->key_cap, n + 1, 1);
	if (!p) {
		json_decref(dec);
		return fail(s, "out of memory", s->pos);
	}
	s->key = p;
	memcpy(s->key, k, n);
	s->key[n] = 0;
	json_decref(dec);
	s->pos = (size_t)(q + 1 - s->buf);
	return 0;
}

/* Scan the value at s->pos into *it. */
static int
read_value(struct imp_scan *s, struct imp_item *it, enum imp_item_type type)
{
	struct imp_span sp[IMP_SPAN_MAX];
	long n;
	for (;;) {
		/* the fast path's events are read here, in the same pass that
		 * finds their end (one cut by the end of the buffer is tried
		 * again with more); others are only delimited, for jansson */
		size_t flat;
		if (s->flat && type == IMP_EVENT &&
		    (flat = imp_flat_read(s->buf + s->pos, s->end - s->pos, s->flat))) {
			memset(it, 0, sizeof(*it));
			it->type = type;
			it->text = s->buf + s->pos;
			it->len = flat;
			it->offset = s->base + s->pos;
			it->is_object = 1;
			it->flat = 1;
			s->pos += flat;
			return 0;
		}
		memset(sp, 0, sizeof(sp));
		n = value_len(s->buf + s->pos, s->buf + s->end, s->eof, sp);
		if (n < 0)
			return fail(s, type == IMP_EVENT ? "expected an event"
			                                 : "expected a value", s->pos);
		if (n > 0)
			break;
		int rc = more(s);
		if (rc < 0)
			return -1;
		if (rc == 0) {
			char what[96];
			snprintf(what, sizeof(what), "unexpected end of input in the %s that begins",
			         type == IMP_EVENT ? "event" : "value");
			return fail(s, what, s->pos);
		}
	}
	memset(it, 0, sizeof(*it));
	it->type = type;
	it->text = s->buf + s->pos;
	it->len = (size_t)n;
	it->offset = s->base + s->pos;
	it->is_object = s->buf[s->pos] == '{';
	it->key = type == IMP_TOPKEY ? s->key : NULL;
	memcpy(it->span, sp, sizeof(sp));
	s->pos += (size_t)n;
	return 0;
}

static int
expected(struct imp_scan *s, int c, const char *what)
{
	if (c == -2)
		return -1;
	if (c == -1) {
		char m[128];
		snprintf(m, sizeof(m), "unexpected end of input: %s", what);
		return fail(s, m, s->pos);
	}
	return fail(s, what, s->pos);
}

/* The steps of imp_scan_next(), one per state: each returns 1 with an
 * item, 0 at the clean end, -1 on an error, or NEXT when it only moved
 * on to another state. */
#define NEXT 2

/* The start: '{' or '[', after a UTF-8 byte order mark if any. */
static int
scan_start(struct imp_scan *s)
{
	int c = peek(s);
	/* a UTF-8 byte order mark is allowed before the text */
	if (c == 0xef && s->base == 0 && s->pos == 0) {
		while (s->end < 3 && !s->eof && more(s) > 0)
			;
		if (s->end >= 3 && memcmp(s->buf, "\xef\xbb\xbf", 3) == 0) {
			s->pos = 3;
			return NEXT;
		}
	}
	if (c == '{') {
		s->pos++;
		s->state = S_OBJ_FIRST;
	} else if (c == '[') {
		s->pos++;
		s->top_array = 1;
		s->events_arrays++;
		s->state = S_ARR_FIRST;
	} else if (c == -1) {
		snprintf(s->errmsg, sizeof(s->errmsg), "the input is empty");
		s->state = S_FAILED;
		return -1;
	} else {
		return expected(s, c, "not JSON: expected '{' or '['");
	}
	return NEXT;
}

/* In the top-level object: a key, or the end of an empty object. */
static int
scan_key(struct imp_scan *s)
{
	int c = peek(s);
	if (c == '}' && s->state == S_OBJ_FIRST) {
		s->pos++;
		s->state = S_END;
		return NEXT;
	}
	if (c != '"')
		return expected(s, c, s->state == S_OBJ_FIRST
		                ? "expected a key or '}'" : "expected a key");
	if (read_key(s) < 0)
		return -1;
	s->state = S_OBJ_COLON;
	return NEXT;
}

/* After a key: its value, an item, or for traceEvents the array whose
 * elements are the events. */
static int
scan_key_value(struct imp_scan *s, struct imp_item *it)
{
	int c = peek(s);
	if (c != ':')
		return expected(s, c, "expected ':'");
	s->pos++;
	c = peek(s);
	if (c < 0)
		return expected(s, c, "expected a value");
	if (strcmp(s->key, "traceEvents") == 0) {
		if (c != '[')
			return fail(s, "'traceEvents' is not an array", s->pos);
		s->pos++;
		s->events_arrays++;
		s->state = S_ARR_FIRST;
		return NEXT;
	}
	if (read_value(s, it, IMP_TOPKEY) < 0)
		return -1;
	s->state = S_OBJ_NEXT;
	return 1;
}

/* After a top-level value: ',' and another key, or the end. */
static int
scan_after_value(struct imp_scan *s)
{
	int c = peek(s);
	if (c == ',') {
		s->pos++;
		s->state = S_OBJ_KEY;
	} else if (c == '}') {
		s->pos++;
		s->state = S_END;
	} else {
		return expected(s, c, "expected ',' or '}'");
	}
	return NEXT;
}

/* In an events array: an event, or the end of an empty array. */
static int
scan_event(struct imp_scan *s, struct imp_item *it)
{
	int c = peek(s);
	if (c == -1 && s->top_array) {
		/* the Chrome format lets a bare array stop anywhere
		 * between events, as a crashed program leaves it */
		s->unclosed_array = 1;
		s->state = S_DONE;
		return 0;
	}
	if (c == ']' && s->state == S_ARR_FIRST) {
		s->pos++;
		s->state = s->top_array ? S_END : S_OBJ_NEXT;
		return NEXT;
	}
	if (c < 0)
		return expected(s, c, "expected an event");
	if (read_value(s, it, IMP_EVENT) < 0)
		return -1;
	s->events++;
	s->state = S_ARR_NEXT;
	return 1;
}

/* After an event: ',' and another, or the end of the array. */
static int
scan_after_event(struct imp_scan *s)
{
	int c = peek(s);
	if (c == ',') {
		s->pos++;
		s->state = S_ARR_ELEM;
	} else if (c == ']') {
		s->pos++;
		s->state = s->top_array ? S_END : S_OBJ_NEXT;
	} else if (c == -1 && s->top_array) {
		s->unclosed_array = 1;
		s->state = S_DONE;
		return 0;
	} else {
		return expected(s, c, "expected ',' or ']'");
	}
	return NEXT;
}

/* After the top-level value: only white space. */
static int
scan_end(struct imp_scan *s)
{
	int c = peek(s);
	if (c == -2)
		return -1;
	if (c != -1)
		return fail(s, "unexpected data after the end of the JSON", s->pos);
	s->state = S_DONE;
	return 0;
}

int
imp_scan_next(struct imp_scan *s, struct imp_item *it)
{
	int rc;
	do {
		switch (s->state) {
		case S_START: rc = scan_start(s); break;
		case S_OBJ_FIRST: case S_OBJ_KEY: rc = scan_key(s); break;
		case S_OBJ_COLON: rc = scan_key_value(s, it); break;
		case S_OBJ_NEXT: rc = scan_after_value(s); break;
		case S_ARR_FIRST: case S_ARR_ELEM: rc = scan_event(s, it); break;
		case S_ARR_NEXT: rc = scan_after_event(s); break;
		case S_END: rc = scan_end(s); break;
		case S_DONE: return 0;
		default: return -1;
		}
	} while (rc == NEXT);
	return rc;
}
