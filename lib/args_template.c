/* SPDX-License-Identifier: MIT */
/*
 * Args as templates and numbers (args_template.h).
 *
 * A number is a maximal run of ASCII digits of at most 18 (so that it
 * and any difference of two fit in 64 bits), without a leading zero
 * unless it is "0"; its place in the template is a NUL byte, which is
 * why args holding a NUL are stored as they are.  Written back in
 * decimal, each number is the very run it came from: the text comes
 * back byte for byte.
 */
#include <stdlib.h>
#include <string.h>

#include "args_template.h"

#define DIGITS_MAX 18
#define NUMBER_LIMIT 1000000000000000000ull /* 10^18 */
#define PLACE 0

static int
is_digit(uint8_t c)
{
	return c >= '0' && c <= '9';
}

/* Room for n entries of *a, the new ones zero. */
static int
grow_u64(uint64_t **a, size_t *cap, uint64_t n)
{
	if (n <= *cap)
		return 0;
	if (n > UINT32_MAX / 2)
		return -1;
	size_t old = *cap;
	uint64_t *p = tkp_grow(*a, cap, (size_t)n, sizeof(*p));
	if (!p)
		return -1;
	memset(p + old, 0, (*cap - old) * sizeof(*p));
	*a = p;
	return 0;
}

/* Cut one args text into e->text (the template) and e->nums; the count
 * of numbers in *k.  -1 when out of memory. */
static int
cut(struct tkp_args_encoder *e, const uint8_t *a, size_t len, uint32_t *k)
{
	struct tkp_buf *t = &e->text;
	t->len = 0;
	*k = 0;
	size_t j = 0;
	while (j < len) {
		size_t s = j;
		if (!is_digit(a[j])) {
			while (j < len && !is_digit(a[j]))
				j++;
			if (tkp_buf_put(t, a + s, j - s) < 0)
				return -1;
			continue;
		}
		while (j < len && is_digit(a[j]))
			j++;
		size_t d = j - s;
		if (d > DIGITS_MAX || (d > 1 && a[s] == '0')) {
			if (tkp_buf_put(t, a + s, d) < 0) /* kept as text */
				return -1;
			continue;
		}
		uint64_t v = 0;
		for (size_t q = s; q < j; q++)
			v = v * 10 + (uint64_t)(a[q] - '0');
		if (grow_u64(&e->nums, &e->nums_cap, (uint64_t)*k + 1) < 0)
			return -1;
		e->nums[(*k)++] = v;
		uint8_t place = PLACE;
		if (tkp_buf_put(t, &place, 1) < 0)
			return -1;
	}
	return 0;
}

int
tkp_args_encode(struct tkp_args_encoder *e, const uint8_t *col, size_t len,
                uint32_t n, struct tkp_buf *templates, uint64_t *ids,
                struct tkp_buf *numbers)
{
	tkp_intern_clear(&e->templates);
	templates->len = 0;
	numbers->len = 0;
	if (e->prev)
		memset(e->prev, 0, e->prev_cap * sizeof(*e->prev));
	const uint8_t *p = col, *end = col + len;
	uint64_t bound = 0; /* as the reader bounds the text it makes */
	for (uint32_t i = 0; i < n; i++) {
		uint64_t alen;
		if (tkp_varint_get(&p, end, &alen) < 0 || alen > (uint64_t)(end - p))
			return 0;
		const uint8_t *a = p;
		p += alen;
		ids[i] = 0;
		if (alen == 0)
			continue;
		if (memchr(a, PLACE, alen))
			return 0;
		uint32_t k;
		if (cut(e, a, alen, &k) < 0)
			return -1;
		int added;
		uint32_t id = tkp_intern(&e->templates, (const char *)e->text.p,
		                         e->text.len, &added);
		if (!id)
			return -1;
		if (added && (tkp_buf_varint(templates, e->text.len) < 0 ||
		              tkp_buf_put(templates, e->text.p, e->text.len) < 0))
			return -1;
		ids[i] = id;
		bound += e->text.len + (uint64_t)k * (DIGITS_MAX - 1);
		if (bound > TKP_CHUNK_RAW_MAX)
			return 0;
		if (grow_u64(&e->prev, &e->prev_cap, k) < 0)
			return -1;
		for (uint32_t q = 0; q < k; q++) {
			int64_t diff = (int64_t)e->nums[q] - (int64_t)e->prev[q];
			if (tkp_buf_varint(numbers, tkp_zigzag(diff)) < 0)
				return -1;
			e->prev[q] = e->nums[q];
		}
	}
	return p == end;
}

void
tkp_args_encoder_free(struct tkp_args_encoder *e)
{
	tkp_intern_free(&e->templates);
	tkp_buf_free(&e->text);
	free(e->nums);
	free(e->prev);
	memset(e, 0, sizeof(*e));
}

/* v in decimal at p; returns the digits written (at most 18). */
static size_t
put_decimal(uint8_t *p, uint64_t v)
{
	uint8_t tmp[DIGITS_MAX + 2];
	size_t n = 0;
	do {
		tmp[n++] = (uint8_t)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		p[i] = tmp[n - 1 - i];
	return n;
}

/* The templates list: d->tp[1..*m], with each one's places in holes. */
static const char *
parse_templates(struct tkp_args_decoder *d, const uint8_t *p, size_t len,
                uint32_t *m, uint32_t *max_holes, int *nomem)
{
	const uint8_t *end = p + len;
	*m = 0;
	*max_holes = 0;
	while (p < end) {
		uint64_t l;
		if (tkp_varint_get(&p, end, &l) < 0 || l > (uint64_t)(end - p))
			return "bad args templates";
		if (*m + 2 > d->tcap) {
			size_t old = d->tcap, cap = old, need = (size_t)*m + 2;
			if (tkp_grow_shared(&d->tp, old, need, sizeof(*d->tp), &cap) ||
			    tkp_grow_shared(&d->tlen, old, need, sizeof(*d->tlen), &cap) ||
			    tkp_grow_shared(&d->tholes, old, need, sizeof(*d->tholes),
			                    &cap)) {
				*nomem = 1;
				return "out of memory";
			}
			d->tcap = cap;
		}
		uint32_t holes = 0;
		for (const uint8_t *h = p; (h = memchr(h, PLACE, (size_t)(p + l - h))); h++)
			holes++;
		*max_holes = holes > *max_holes ? holes : *max_holes;
		++*m;
		d->tp[*m] = p;
		d->tlen[*m] = (uint32_t)l;
		d->tholes[*m] = holes;
		p += l;
	}
	return NULL;
}

const char *
tkp_args_decode(struct tkp_args_decoder *d, const uint8_t *templates,
                size_t tlen, const uint64_t *ids, uint32_t n,
                const uint8_t *numbers, size_t nlen, struct tkp_buf *out,
                const uint8_t **args, uint32_t *args_len, int *nomem)
{
	*nomem = 0;
	uint32_t m, max_holes;
	const char *why = parse_templates(d, templates, tlen, &m, &max_holes, nomem);
	if (why)
		return why;
	/* each place widens to at most DIGITS_MAX bytes: bound the text
	 * first, so that it is made in one buffer that does not move, and
	 * refuse a chunk that would make more than a writer can put in one */
	uint64_t bound = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (ids[i] > m)
			return "bad args template";
		if (ids[i])
			bound += d->tlen[ids[i]] + (uint64_t)d->tholes[ids[i]] * (DIGITS_MAX - 1);
		if (bound > TKP_CHUNK_RAW_MAX)
			return "args too large";
	}
	out->len = 0;
	if (tkp_buf_reserve(out, (size_t)bound + 1) < 0 ||
	    grow_u64(&d->prev, &d->prev_cap, max_holes) < 0) {
		*nomem = 1;
		return "out of memory";
	}
	if (d->prev)
		memset(d->prev, 0, d->prev_cap * sizeof(*d->prev));
	const uint8_t *q = numbers, *qend = numbers + nlen;
	uint8_t *o = out->p;
	for (uint32_t i = 0; i < n; i++) {
		if (!ids[i]) {
			args[i] = NULL;
			args_len[i] = 0;
			continue;
		}
		const uint8_t *t = d->tp[ids[i]], *tend = t + d->tlen[ids[i]];
		uint8_t *start = o;
		uint32_t place = 0;
		while (t < tend) {
			const uint8_t *h = memchr(t, PLACE, (size_t)(tend - t));
			size_t lit = (size_t)((h ? h : tend) - t);
			memcpy(o, t, lit);
			o += lit;
			t += lit;
			if (!h)
				break;
			uint64_t z;
			if (tkp_varint_get(&q, qend, &z) < 0)
				return "bad args numbers";
			uint64_t v = d->prev[place] + (uint64_t)tkp_unzigzag(z);
			if (v >= NUMBER_LIMIT)
				return "args number out of range";
			d->prev[place++] = v;
			o += put_decimal(o, v);
			t++;
		}
		args[i] = start;
		args_len[i] = (uint32_t)(o - start);
	}
	if (q != qend)
		return "long column";
	out->len = (size_t)(o - out->p);
	return NULL;
}

void
tkp_args_decoder_free(struct tkp_args_decoder *d)
{
	free(d->tp);
	free(d->tlen);
	free(d->tholes);
	free(d->prev);
	memset(d, 0, sizeof(*d));
}
