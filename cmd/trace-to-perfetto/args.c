/* SPDX-License-Identifier: MIT */
/*
 * Imported args (the JSON object an importer kept with an event) as
 * debug annotations, nested as they were.
 *
 * jansson parses them; but profiler args are mostly one text with
 * counters in it ({"External id": 1234, "Ev Idx": 17}), and building a
 * jansson object per event was a third of the conversion.  So each args
 * text is first cut into its shape (the text with its digit runs taken
 * out) and those runs.  The first event of a shape is parsed with
 * jansson, as any other; when the parse shows that the digit runs are
 * exactly the object's integer members, in order (a flat object of
 * integers, strings, booleans and nulls, nothing else with a digit in
 * it), the shape keeps that list of members, and later events of the
 * same shape are annotated from it and their own digit runs, without
 * jansson.  The annotations are the same bytes either way.
 */
#include <stdlib.h>

#include <jansson.h>

#include "perfetto.h"
#include "common/util.h"
#include "support.h"

#define SHAPE_TEXT_MAX 1024   /* longer args always go to jansson */
#define SHAPE_RUNS_MAX 64     /* digit runs in one shape */
#define SHAPES_MAX 4096       /* shapes kept; later ones go to jansson */
#define RUN_DIGITS_MAX 18     /* below 10^18: fits an int64 */
#define HOLE 0                /* a digit run's place in a shape's text */

enum member_type { M_INT, M_STRING, M_TRUE, M_FALSE, M_NULL };

struct member {
	char *key;
	int type;                 /* enum member_type */
	char *str;                /* M_STRING: the value */
	size_t len;
};

struct shape {
	uint64_t hash;
	char *text;               /* NULL: a free slot */
	size_t len;
	int fast;                 /* annotated from `m` without jansson */
	struct member *m;
	uint32_t nm;
};

/* One args text cut into its shape and digit runs. */
struct cut {
	uint64_t num[SHAPE_RUNS_MAX];
	uint8_t negative[SHAPE_RUNS_MAX];  /* a '-' before the run */
	uint32_t runs;
};

struct pf_args {
	struct shape *slot;
	size_t nslots, used;
	char text[SHAPE_TEXT_MAX];
	size_t text_len;
};

/* ---- jansson ------------------------------------------------------------------ */

static void
json_value(struct pf_enc *x, struct pbuf *b, unsigned field, const char *key,
           json_t *v, int depth)
{
	size_t at = pf_ann_open(x, b, field, key);
	switch (json_typeof(v)) {
	case JSON_STRING:
		pf_value_str(x, b, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		pb_int(b, DA_INT, json_integer_value(v));
		break;
	case JSON_REAL:
		pb_double(b, DA_DOUBLE, json_real_value(v));
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		pb_uint(b, DA_BOOL, json_is_true(v));
		break;
	case JSON_NULL:
		pf_value_str(x, b, "null", 4);
		break;
	case JSON_ARRAY: {
		size_t i;
		json_t *e;
		if (depth > 8 || !json_array_size(v)) {
			pf_value_str(x, b, "[]", depth > 8 ? 5 : 2);
			break;
		}
		json_array_foreach(v, i, e)
			json_value(x, b, DA_ARRAY, NULL, e, depth + 1);
		break;
	}
	case JSON_OBJECT: {
		const char *k;
		json_t *e;
		if (depth > 8 || !json_object_size(v)) {
			pf_value_str(x, b, "{}", 2);
			break;
		}
		json_object_foreach(v, k, e)
			json_value(x, b, DA_DICT, k, e, depth + 1);
		break;
	}
	}
	pb_close(b, at);
}

/* ---- shapes ---------------------------------------------------------------------- */

/* Cut args text s into A->text and c; 0 when it is not to be cut (too
 * long, too many runs, a run too long, a NUL byte). */
static int
cut_text(struct pf_args *A, const char *s, size_t n, struct cut *c)
{
	c->runs = 0;
	if (n > SHAPE_TEXT_MAX)
		return 0;
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == HOLE)
			return 0;
		if (ch < '0' || ch > '9') {
			A->text[o++] = (char)ch;
			i++;
			continue;
		}
		size_t start = i;
		uint64_t v = 0;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			v = v * 10 + (uint64_t)(s[i++] - '0');
		if (i - start > RUN_DIGITS_MAX || c->runs == SHAPE_RUNS_MAX)
			return 0;
		c->negative[c->runs] = start > 0 && s[start - 1] == '-';
		c->num[c->runs++] = v;
		A->text[o++] = HOLE;
	}
	A->text_len = o;
	return 1;
}

static struct shape *
find_shape(struct pf_args *A, uint64_t h)
{
	if (!A->nslots)
		return NULL;
	for (size_t j = h & (A->nslots - 1); A->slot[j].text; j = (j + 1) & (A->nslots - 1)) {
		struct shape *s = &A->slot[j];
		if (s->hash == h && s->len == A->text_len && !memcmp(s->text, A->text, s->len))
			return s;
	}
	return NULL;
}

static struct shape *
add_shape(struct pf_args *A, uint64_t h)
{
	if (A->used >= SHAPES_MAX)
		return NULL;
	if ((A->used + 1) * 2 > A->nslots) {
		size_t n = A->nslots ? A->nslots * 2 : 256;
		struct shape *s = calloc(n, sizeof(*s));
		if (!s)
			cmd_die(EXIT_USAGE, "out of memory");
		for (size_t k = 0; k < A->nslots; k++) {
			if (!A->slot[k].text)
				continue;
			size_t j = A->slot[k].hash & (n - 1);
			while (s[j].text)
				j = (j + 1) & (n - 1);
			s[j] = A->slot[k];
		}
		free(A->slot);
		A->slot = s;
		A->nslots = n;
	}
	size_t j = h & (A->nslots - 1);
	while (A->slot[j].text)
		j = (j + 1) & (A->nslots - 1);
	struct shape *s = &A->slot[j];
	s->hash = h;
	s->len = A->text_len;
	s->text = cmd_xrealloc(NULL, s->len + 1);
	memcpy(s->text, A->text, s->len);
	A->used++;
	return s;
}

/* The member list of object `a`, whose text was cut into c, when its
 * digit runs are its integer members in order; else s->fast stays 0. */
static void
learn_shape(struct shape *s, json_t *a, const struct cut *c)
{
	size_t n = json_object_size(a);
	struct member *m = calloc(n ? n : 1, sizeof(*m));
	if (!m)
		cmd_die(EXIT_USAGE, "out of memory");
	uint32_t run = 0, k = 0;
	const char *key;
	json_t *v;
	int ok = 1;
	json_object_foreach(a, key, v) {
		struct member *e = &m[k++];
		e->key = cmd_xstrdup(key);
		switch (json_typeof(v)) {
		case JSON_INTEGER: {
			json_int_t i = json_integer_value(v);
			if (run >= c->runs ||
			    i != (c->negative[run] ? -(json_int_t)c->num[run] : (json_int_t)c->num[run]))
				ok = 0;
			run++;
			e->type = M_INT;
			break;
		}
		case JSON_STRING:
			e->type = M_STRING;
			e->len = json_string_length(v);
			e->str = cmd_xrealloc(NULL, e->len + 1);
			memcpy(e->str, json_string_value(v), e->len + 1);
			break;
		case JSON_TRUE: e->type = M_TRUE; break;
		case JSON_FALSE: e->type = M_FALSE; break;
		case JSON_NULL: e->type = M_NULL; break;
		default: ok = 0; break;  /* nested, or a real: jansson each time */
		}
	}
	/* a digit anywhere else (a key, a string, a real) is a run too many */
	s->fast = ok && run == c->runs && n > 0;
	s->m = m;
	s->nm = k;
}

static void
from_shape(struct pf_enc *x, struct pbuf *b, const struct shape *s, const struct cut *c)
{
	uint32_t run = 0;
	for (uint32_t k = 0; k < s->nm; k++) {
		const struct member *e = &s->m[k];
		size_t at = pf_ann_open(x, b, TE_DEBUG, e->key);
		switch (e->type) {
		case M_INT: {
			int64_t v = (int64_t)c->num[run];
			pb_int(b, DA_INT, c->negative[run] ? -v : v);
			run++;
			break;
		}
		case M_STRING: pf_value_str(x, b, e->str, e->len); break;
		case M_TRUE: pb_uint(b, DA_BOOL, 1); break;
		case M_FALSE: pb_uint(b, DA_BOOL, 0); break;
		case M_NULL: pf_value_str(x, b, "null", 4); break;
		}
		pb_close(b, at);
	}
}

/* ---- the args of one event ------------------------------------------------------ */

void
pf_args_annotate(struct pf_enc *x, struct pbuf *b, const struct tk_event *e)
{
	if (!e->args || !e->args_len)
		return;
	if (!x->args) {
		x->args = calloc(1, sizeof(*x->args));
		if (!x->args)
			cmd_die(EXIT_USAGE, "out of memory");
	}
	struct pf_args *A = x->args;
	struct cut c;
	struct shape *s = NULL;
	uint64_t h = 0;
	int cut = cut_text(A, e->args, e->args_len, &c);
	if (cut) {
		h = tkp_hash(A->text, A->text_len, 0);
		s = find_shape(A, h);
		if (s && s->fast) {
			from_shape(x, b, s, &c);
			return;
		}
	}
	size_t n;
	const char *text = cmd_utf8(e->args, e->args_len, &n);
	json_t *a = json_loadb(text, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (!a || !json_is_object(a)) {
		size_t at = pf_ann_open(x, b, TE_DEBUG, "args");
		pb_bytes(b, DA_STRING, text, n);
		pb_close(b, at);
		x->bad_args++;
		json_decref(a);
		return;
	}
	/* a shape is learnt from valid UTF-8 only: its events then need no
	 * repair, as their other bytes are the same and digits are ASCII */
	if (cut && !s && text == e->args && (s = add_shape(A, h)))
		learn_shape(s, a, &c);
	const char *k;
	json_t *v;
	json_object_foreach(a, k, v)
		json_value(x, b, TE_DEBUG, k, v, 0);
	json_decref(a);
}

void
pf_args_free(struct pf_args *A)
{
	if (!A)
		return;
	for (size_t j = 0; j < A->nslots; j++) {
		struct shape *s = &A->slot[j];
		if (!s->text)
			continue;
		for (uint32_t k = 0; k < s->nm; k++) {
			free(s->m[k].key);
			free(s->m[k].str);
		}
		free(s->m);
		free(s->text);
	}
	free(A->slot);
	free(A);
}
