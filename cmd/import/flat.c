/* SPDX-License-Identifier: MIT */
/*
 * The fast path's reader: one pass over an event's bytes that finds its
 * top-level fields and the keys and values of its args, and checks them
 * as jansson would, without building a tree.  jansson's tree per event
 * was half of an import's time (perf: 54 % in libjansson); most events
 * of a PyTorch profiler trace are a handful of shapes that need none of
 * it.
 *
 * It accepts only what it is sure jansson would read the same way and
 * the converter would treat without a tree (fast.c): an object whose
 * keys are the usual ones, each once; strings without escapes or control
 * characters, in valid UTF-8; integers that fit int64; pid and tid
 * integers; ts and dur numbers whose digits give nanoseconds; an X
 * event whose category is a plain range, an API call, a kernel, a copy
 * or a memset, with args of the types the conversion takes.  Anything
 * else (escapes, invalid UTF-8, big numbers, other phases, other keys)
 * returns 0 and goes the old way, through jansson: the fast path is a
 * shortcut for the common case, never a second meaning of the input.
 *
 * A pure function of the bytes, so the parser thread runs it (pipe.c).
 * On success it ends the name, category and phase strings with a NUL in
 * place (their closing quotes), for the converter.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"

#define MAX_DEPTH 64

struct cur {
	const char *p, *e;
};

static void
ws(struct cur *c)
{
	while (c->p < c->e && (*c->p == ' ' || *c->p == '\n' || *c->p == '\t' ||
	                       *c->p == '\r'))
		c->p++;
}

/* One UTF-8 sequence starting at a byte >= 0x80: its length, or 0 if it
 * is not valid (overlong, a surrogate, beyond U+10FFFF, cut short). */
static size_t
utf8_seq(const unsigned char *s, const unsigned char *e)
{
	unsigned c = s[0];
	size_t n;
	unsigned min, cp;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, min = 0x80, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, min = 0x800, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, min = 0x10000, cp = c & 0x07;
	else
		return 0;
	if ((size_t)(e - s) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* Bytes that end a run of plain string characters: the quote, the
 * backslash, control characters and the start of UTF-8 sequences. */
static const unsigned char stop[256] = {
	[0 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1, [0x80 ... 0xff] = 1,
};

/* Whether any of 8 bytes would stop the run (a control character, the
 * quote, the backslash, or a byte >= 0x80).  It may say so of a word
 * without any (never the other way): the caller then goes byte by byte. */
static int
stop8(const unsigned char *p)
{
	const uint64_t ones = UINT64_C(0x0101010101010101), high = ones * 0x80;
	uint64_t x;
	memcpy(&x, p, 8);
	if (x & high)
		return 1;
	/* with no byte >= 0x80: a byte below 0x20 borrows in x - 0x20..,
	 * and a quote or backslash is a zero byte of the XOR, which
	 * borrows in its - 0x01.. (the lowest such byte sets its bit) */
	uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
	return (((x - ones * 0x20) | (q - ones) | (b - ones)) & high) != 0;
}

/* A string without escapes: its contents' span (c->p after the closing
 * quote).  0, or -1 to leave the event to jansson.  Names of kernels
 * run to hundreds of bytes: they are gone through 8 at a time. */
static int
string(struct cur *c, struct imp_span *sp, const char *base)
{
	if (c->p >= c->e || *c->p != '"')
		return -1;
	const unsigned char *p = (const unsigned char *)c->p + 1;
	const unsigned char *e = (const unsigned char *)c->e;
	const unsigned char *start = p;
	for (;;) {
		while (e - p >= 8 && !stop8(p))
			p += 8;
		while (p < e && !stop[*p])
			p++;
		if (p >= e || *p < 0x20 || *p == '\\')
			return -1;
		if (*p == '"')
			break;
		size_t n = utf8_seq(p, e);
		if (!n)
			return -1;
		p += n;
	}
	sp->off = (uint32_t)((const char *)start - base);
	sp->len = (uint32_t)(p - start);
	c->p = (const char *)p + 1;
	return 0;
}

/* A JSON number, strictly by the grammar.  Sets *is_int and, for
 * integers that fit int64, *v; -1 for what jansson would refuse or
 * repair (integers beyond 64 bits, reals beyond a double) and "-0",
 * which jansson writes back as 0. */
static int
number(struct cur *c, int *is_int, int64_t *v)
{
	const char *s = c->p, *p = c->p, *e = c->e;
	if (p < e && *p == '-')
		p++;
	if (p >= e || *p < '0' || *p > '9')
		return -1;
	if (*p == '0')
		p++;
	else
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	size_t int_digits = (size_t)(p - s);
	*is_int = 1;
	if (p < e && *p == '.') {
		*is_int = 0;
		p++;
		if (p >= e || *p < '0' || *p > '9')
			return -1;
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	}
	int has_exp = 0;
	if (p < e && (*p == 'e' || *p == 'E')) {
		*is_int = 0;
		has_exp = 1;
		p++;
		if (p < e && (*p == '+' || *p == '-'))
			p++;
		if (p >= e || *p < '0' || *p > '9')
			return -1;
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	}
	c->p = p;
	if (*is_int) {
		/* 18 digits always fit; longer ones are checked the slow way */
		const char *d = *s == '-' ? s + 1 : s;
		if (p - d <= 18) {
			int64_t x = 0;
			for (; d < p; d++)
				x = x * 10 + (*d - '0');
			*v = *s == '-' ? -x : x;
		} else if (imp_parse_i64(s, (size_t)(p - s), v) < 0) {
			return -1;
		}
		return *v == 0 && *s == '-' ? -1 : 0;
	}
	/* a real that might not fit a double: let jansson say */
	if (has_exp || int_digits > 300) {
		char buf[400];
		size_t n = (size_t)(p - s);
		if (n >= sizeof(buf))
			return -1;
		memcpy(buf, s, n);
		buf[n] = 0;
		if (isinf(strtod(buf, NULL)))
			return -1;
	}
	return 0;
}

static int
literal(struct cur *c, const char *w, size_t n)
{
	if ((size_t)(c->e - c->p) < n || memcmp(c->p, w, n) != 0)
		return -1;
	c->p += n;
	return 0;
}

/* Any value, checked and skipped.  *canon: jansson's compact dump of it
 * is its own text without white space (no reals, no objects, no
 * escapes); an array keeps it if its elements do. */
static int
value(struct cur *c, const char *base, int depth, int *type, int64_t *iv, int *canon)
{
	struct imp_span sp;
	int is_int;
	if (c->p >= c->e || depth > MAX_DEPTH)
		return -1;
	switch (*c->p) {
	case '"':
		*type = IMP_FLAT_STR;
		return string(c, &sp, base);
	case 't':
		*type = IMP_FLAT_BOOL;
		return literal(c, "true", 4);
	case 'f':
		*type = IMP_FLAT_BOOL;
		return literal(c, "false", 5);
	case 'n':
		*type = IMP_FLAT_NULL;
		return literal(c, "null", 4);
	case '[':
	case '{': {
		int obj = *c->p == '{';
		*type = obj ? IMP_FLAT_OBJECT : IMP_FLAT_ARRAY;
		if (obj)
			*canon = 0;
		c->p++;
		ws(c);
		if (c->p < c->e && *c->p == (obj ? '}' : ']')) {
			c->p++;
			return 0;
		}
		for (;;) {
			int t;
			int64_t v;
			if (obj) {
				if (string(c, &sp, base) < 0)
					return -1;
				ws(c);
				if (c->p >= c->e || *c->p++ != ':')
					return -1;
				ws(c);
			}
			if (value(c, base, depth + 1, &t, &v, canon) < 0)
				return -1;
			ws(c);
			if (c->p >= c->e)
				return -1;
			if (*c->p == ',') {
				c->p++;
				ws(c);
				continue;
			}
			if (*c->p++ != (obj ? '}' : ']'))
				return -1;
			return 0;
		}
	}
	default:
		if (number(c, &is_int, iv) < 0)
			return -1;
		*type = is_int ? IMP_FLAT_INT : IMP_FLAT_REAL;
		if (!is_int)
			*canon = 0;
		return 0;
	}
}

/* The args object: each key once, its value's span and type. */
static int
args(struct cur *c, const char *base, struct imp_flat *f)
{
	c->p++;       /* '{' */
	ws(c);
	if (c->p < c->e && *c->p == '}') {
		c->p++;
		return 0;
	}
	for (;;) {
		if (f->nargs == IMP_FLAT_MAX_ARGS)
			return -1;
		struct imp_flat_arg *a = &f->args[f->nargs];
		if (string(c, &a->key, base) < 0)
			return -1;
		for (unsigned i = 0; i < f->nargs; i++)
			if (f->args[i].key.len == a->key.len &&
			    memcmp(base + f->args[i].key.off, base + a->key.off, a->key.len) == 0)
				return -1;  /* jansson keeps the last: not ours to guess */
		ws(c);
		if (c->p >= c->e || *c->p++ != ':')
			return -1;
		ws(c);
		int t, canon = 1;
		a->val.off = (uint32_t)(c->p - base);
		if (value(c, base, 1, &t, &a->i, &canon) < 0)
			return -1;
		a->val.len = (uint32_t)(c->p - base) - a->val.off;
		a->type = (uint8_t)t;
		a->canon = (uint8_t)canon;
		f->nargs++;
		ws(c);
		if (c->p >= c->e)
			return -1;
		if (*c->p == ',') {
			c->p++;
			ws(c);
			continue;
		}
		if (*c->p++ != '}')
			return -1;
		return 0;
	}
}

enum top { T_PH, T_NAME, T_CAT, T_PID, T_TID, T_TS, T_DUR, T_ARGS, T_S, T_N };

/*
 * A time in microseconds written the usual way, [-]digits[.digits] with
 * at most 3 decimals (Kineto: 1712195496004644.183), read straight into
 * nanoseconds in the pass that checks it: 1, with c->p after it.  0 for
 * any other form, c->p unmoved: number() and imp_us_to_ns() read it
 * (they give the same for these, which need no rounding).
 */
static int
simple_time(struct cur *c, int *type, int64_t *ns)
{
	const char *p = c->p, *e = c->e;
	int neg = p < e && *p == '-';
	p += neg;
	const char *d = p;
	uint64_t us = 0;
	while (p < e && *p >= '0' && *p <= '9')
		us = us * 10 + (uint64_t)(*p++ - '0');
	/* 1 to 16 digits, no leading zero, and room for the 3 decimals */
	if (p == d || p - d > 16 || (*d == '0' && p - d > 1) ||
	    us > UINT64_C(9223372036854774))
		return 0;
	uint64_t frac = 0;
	int decimals = 0;
	if (p < e && *p == '.') {
		p++;
		while (p < e && *p >= '0' && *p <= '9' && decimals < 4)
			frac = frac * 10 + (uint64_t)(*p++ - '0'), decimals++;
		if (decimals == 0 || decimals > 3)
			return 0;
	}
	if (p < e && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E'))
		return 0;
	if (!decimals && neg && us == 0)
		return 0;                   /* "-0": number() refuses it */
	static const uint64_t scale[4] = { 1000, 100, 10, 1 };
	uint64_t v = us * 1000 + frac * scale[decimals];
	*ns = neg ? -(int64_t)v : (int64_t)v;
	*type = decimals ? IMP_FLAT_REAL : IMP_FLAT_INT;
	c->p = p;
	return 1;
}

/* Every key of every event comes here: by length, then bytes. */
static int
top_key(const char *k, size_t n)
{
	switch (n) {
	case 1:
		return k[0] == 's' ? T_S : -1;
	case 2:
		return k[0] == 'p' && k[1] == 'h' ? T_PH
		     : k[0] == 't' && k[1] == 's' ? T_TS : -1;
	case 3:
		return memcmp(k, "cat", 3) == 0 ? T_CAT : memcmp(k, "pid", 3) == 0 ? T_PID
		     : memcmp(k, "tid", 3) == 0 ? T_TID : memcmp(k, "dur", 3) == 0 ? T_DUR : -1;
	case 4:
		return memcmp(k, "name", 4) == 0 ? T_NAME : memcmp(k, "args", 4) == 0 ? T_ARGS : -1;
	}
	return -1;
}

static int
str_is(const char *base, const struct imp_span *s, const char *w)
{
	size_t n = strlen(w);
	return s->len == n && memcmp(base + s->off, w, n) == 0;
}

/* The kind by category; 0 for those left to the old way. */
static int
kind_of(const char *base, const struct imp_span *cat)
{
	static const struct {
		const char *cat;
		int kind;
		size_t len;
	} cats[] = {
		{ "kernel", IMP_FLAT_KERNEL, 6 }, { "Kernel", IMP_FLAT_KERNEL, 6 },
		{ "gpu_memcpy", IMP_FLAT_MEMCPY, 10 }, { "Memcpy", IMP_FLAT_MEMCPY, 6 },
		{ "gpu_memset", IMP_FLAT_MEMSET, 10 }, { "Memset", IMP_FLAT_MEMSET, 6 },
		{ "cuda_runtime", IMP_FLAT_RUNTIME, 12 }, { "Runtime", IMP_FLAT_RUNTIME, 7 },
		{ "cuda_driver", IMP_FLAT_DRIVER, 11 }, { "Driver", IMP_FLAT_DRIVER, 6 },
		{ "cuda_api", IMP_FLAT_API_OTHER, 8 },
		/* kinds with rules of their own (kineto.c) */
		{ "cuda_sync", 0, 9 }, { "overhead", 0, 8 }, { "Overhead", 0, 8 },
		{ "gpu_user_annotation", 0, 19 }, { "process", 0, 7 }, { "run", 0, 3 },
	};
	for (size_t i = 0; i < sizeof(cats) / sizeof(cats[0]); i++)
		if (cat->len == cats[i].len && memcmp(base + cat->off, cats[i].cat, cats[i].len) == 0)
			return cats[i].kind;
	return IMP_FLAT_RANGE;
}

/* What a kind does with an arg: T take (an integer, or the named type),
 * D drop (any value), R refuse the fast path, 0 leave. */
struct rule {
	const char *key;
	char what;
	int type;
	size_t len;                /* of key */
};
#define R(key, what, type) { key, what, type, sizeof(key) - 1 }

static const struct rule range_rules[] = {
	/* range attributes (event.c's range_attrs) */
	R("category", 'R', 0), R("color", 'R', 0), R("payload", 'R', 0),
	{ NULL, 0, 0, 0 } };
static const struct rule api_rules[] = {
	R("correlation", 'T', IMP_FLAT_INT), R("External id", 'T', 0),
	R("cbid", 'T', IMP_FLAT_INT), R("result", 'T', IMP_FLAT_INT),
	{ NULL, 0, 0, 0 } };
#define GPU_RULES \
	R("device", 'T', IMP_FLAT_INT), R("stream", 'T', IMP_FLAT_INT), \
	R("context", 'T', IMP_FLAT_INT), R("correlation", 'T', IMP_FLAT_INT), \
	R("External id", 'T', 0)
static const struct rule kernel_rules[] = { GPU_RULES,
	R("registers per thread", 'T', IMP_FLAT_INT),
	R("static shared memory", 'T', IMP_FLAT_INT),
	R("dynamic shared memory", 'T', IMP_FLAT_INT),
	R("shared memory", 'T', IMP_FLAT_INT), R("grid", 'T', IMP_FLAT_ARRAY),
	R("block", 'T', IMP_FLAT_ARRAY), R("cluster", 'T', IMP_FLAT_ARRAY),
	R("graph id", 'T', IMP_FLAT_INT), R("graph node id", 'T', IMP_FLAT_INT),
	R("mangled name", 'T', IMP_FLAT_STR), R("blocks per SM", 'D', 0),
	R("warps per SM", 'D', 0), { NULL, 0, 0, 0 } };
static const struct rule memcpy_rules[] = { GPU_RULES,
	R("bytes", 'T', IMP_FLAT_INT), R("memory bandwidth (GB/s)", 'D', 0),
	R("copy kind", 'R', 0), R("kind", 'R', 0), R("src kind", 'R', 0),
	R("dst kind", 'R', 0), R("src device", 'R', 0), R("dst device", 'R', 0),
	R("async", 'R', 0), { NULL, 0, 0, 0 } };
/* kineto.c's kineto_memory: Bytes is needed (flat_scan checks) */
static const struct rule memory_rules[] = {
	R("Bytes", 'T', IMP_FLAT_INT), R("Device Type", 'T', 0),
	R("Device Id", 'T', 0), R("Total Allocated", 'T', IMP_FLAT_INT),
	R("Total Reserved", 'T', IMP_FLAT_INT), R("Addr", 'T', IMP_FLAT_INT),
	{ NULL, 0, 0, 0 } };
static const struct rule memset_rules[] = { GPU_RULES,
	R("bytes", 'T', IMP_FLAT_INT), R("value", 'T', IMP_FLAT_INT),
	R("memory bandwidth (GB/s)", 'D', 0), R("memory kind", 'R', 0),
	{ NULL, 0, 0, 0 } };

static const struct rule *
rules_of(int kind)
{
	switch (kind) {
	case IMP_FLAT_RANGE: return range_rules;
	case IMP_FLAT_KERNEL: return kernel_rules;
	case IMP_FLAT_MEMCPY: return memcpy_rules;
	case IMP_FLAT_MEMSET: return memset_rules;
	case IMP_FLAT_MEMORY: return memory_rules;
	default: return api_rules;
	}
}

/* Every arg against the kind's rules.  If any may leave args, what stays
 * is written by jansson in the old way, so it must be canonical. */
static int
check_args(const char *base, struct imp_flat *f)
{
	const struct rule *rules = rules_of(f->kind);
	int changes = 0;
	for (unsigned i = 0; i < f->nargs; i++) {
		struct imp_flat_arg *a = &f->args[i];
		a->rule = 0;
		for (const struct rule *r = rules; r->key; r++) {
			if (a->key.len != r->len ||
			    memcmp(base + a->key.off, r->key, r->len) != 0)
				continue;
			if (r->what == 'R' || (r->type && a->type != r->type))
				return -1;
			a->rule = (uint8_t)(r - rules) + 1;
			changes = 1;
			break;
		}
	}
	if (!changes)
		return 0;
	for (unsigned i = 0; i < f->nargs; i++) {
		const struct imp_flat_arg *a = &f->args[i];
		if (!a->canon && !(a->rule && rules[a->rule - 1].what == 'D'))
			return -1;
	}
	return 0;
}

/* The event object at text (no white space before it), reading at most
 * avail bytes: its length, or 0 to leave it to jansson (or if it does
 * not end within avail bytes). */
static size_t
flat_object(char *text, size_t avail, struct imp_flat *f)
{
	struct cur c = { text, text + avail };
	struct imp_span sp[T_N];
	int type[T_N] = { 0 };
	int64_t iv[T_N];
	int64_t ts_ns = 0, dur_ns = 0;
	int has_ns[2] = { 0, 0 };      /* ts, dur read by simple_time() */
	f->nargs = 0;
	f->has_args = 0;
	if (c.p >= c.e || *c.p++ != '{')
		return 0;
	ws(&c);
	for (int first = 1;; first = 0) {
		if (first && c.p < c.e && *c.p == '}')
			return 0;
		struct imp_span k;
		if (string(&c, &k, text) < 0)
			return 0;
		int t = top_key(text + k.off, k.len);
		if (t < 0 || type[t])
			return 0;
		ws(&c);
		if (c.p >= c.e || *c.p++ != ':')
			return 0;
		ws(&c);
		sp[t].off = (uint32_t)(c.p - text);
		if (t == T_ARGS && c.p < c.e && *c.p == '{') {
			if (args(&c, text, f) < 0)
				return 0;
			type[t] = IMP_FLAT_OBJECT;
			f->has_args = 1;
		} else if ((t == T_TS || t == T_DUR) &&
		           simple_time(&c, &type[t], t == T_TS ? &ts_ns : &dur_ns)) {
			has_ns[t == T_DUR] = 1;
		} else {
			int canon = 1;
			if (value(&c, text, 1, &type[t], &iv[t], &canon) < 0)
				return 0;
		}
		sp[t].len = (uint32_t)(c.p - text) - sp[t].off;
		ws(&c);
		if (c.p >= c.e)
			return 0;
		if (*c.p == ',') {
			c.p++;
			ws(&c);
			continue;
		}
		if (*c.p++ != '}')
			return 0;
		break;
	}
	size_t len = (size_t)(c.p - text);
	/* every field the conversion needs, as numbers and strings; args an
	 * object or absent */
	if (type[T_PH] != IMP_FLAT_STR || type[T_NAME] != IMP_FLAT_STR ||
	    type[T_CAT] != IMP_FLAT_STR || type[T_PID] != IMP_FLAT_INT ||
	    type[T_TID] != IMP_FLAT_INT || !type[T_TS] ||
	    (type[T_ARGS] && type[T_ARGS] != IMP_FLAT_OBJECT) ||
	    (type[T_TS] != IMP_FLAT_INT && type[T_TS] != IMP_FLAT_REAL) ||
	    (has_ns[0] ? (f->ts = ts_ns, 0)
	               : imp_us_to_ns(text + sp[T_TS].off, sp[T_TS].len, &f->ts)) < 0 ||
	    sp[T_PH].len != 3)
		return 0;
	char ph = text[sp[T_PH].off + 1];
	struct imp_span cat = { sp[T_CAT].off + 1, sp[T_CAT].len - 2 };
	struct imp_span name = { sp[T_NAME].off + 1, sp[T_NAME].len - 2 };
	f->scope = 't';
	if (ph == 'X' && !type[T_S] && type[T_DUR]) {
		/* X: a slice, its dur a number */
		if ((type[T_DUR] != IMP_FLAT_INT && type[T_DUR] != IMP_FLAT_REAL) ||
		    (has_ns[1] ? (f->dur = dur_ns, 0)
		               : imp_us_to_ns(text + sp[T_DUR].off, sp[T_DUR].len, &f->dur)) < 0)
			return 0;
		f->kind = (uint8_t)kind_of(text, &cat);
	} else if (ph == 'i' && str_is(text, &name, "[memory]") && !type[T_DUR]) {
		/* the PyTorch allocator's instants, in thread or process scope */
		struct imp_span sc = { sp[T_S].off + 1, sp[T_S].len - 2 };
		if (type[T_S] && (type[T_S] != IMP_FLAT_STR ||
		                  !(str_is(text, &sc, "t") || str_is(text, &sc, "p"))))
			return 0;
		if (type[T_S])
			f->scope = text[sc.off];
		f->dur = 0;
		f->kind = IMP_FLAT_MEMORY;
	} else {
		return 0;
	}
	if (!f->kind || check_args(text, f) < 0)
		return 0;
	if (f->kind == IMP_FLAT_MEMORY) {
		int bytes = 0;
		for (unsigned i = 0; i < f->nargs; i++)
			bytes |= str_is(text, &f->args[i].key, "Bytes");
		if (!bytes)
			return 0;
	}
	f->pid = iv[T_PID];
	f->tid = iv[T_TID];
	f->args_span = type[T_ARGS] ? sp[T_ARGS] : (struct imp_span){ 0, 0 };
	/* the strings, NUL-terminated in place of their closing quotes */
	const int strs[3] = { T_PH, T_NAME, T_CAT };
	const char **out[3] = { &f->ph, &f->name, &f->cat };
	for (int i = 0; i < 3; i++) {
		char *s = text + sp[strs[i]].off;
		s[sp[strs[i]].len - 1] = 0;
		*out[i] = s + 1;
	}
	return len;
}

int
imp_flat_scan(char *text, size_t len, struct imp_flat *f)
{
	/* the splitter hands out values without white space around them */
	return len > 0 && flat_object(text, len, f) == len;
}

size_t
imp_flat_read(char *text, size_t avail, struct imp_flat *f)
{
	return flat_object(text, avail, f);
}
