/* SPDX-License-Identifier: MIT */
/*
 * One event's bytes to a jansson value.  jansson refuses two things real
 * traces hold, and we repair them rather than lose the event:
 *  - invalid UTF-8 in strings: each bad byte becomes U+FFFD;
 *  - integers beyond 64 bits (uint64 ids above INT64_MAX) and reals
 *    beyond a double: the number is kept as a string of its digits.
 * Anything else jansson refuses is an error for this event alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "common/util.h"
#include "support.h"

void
imp_parser_free(struct imp_parser *ps)
{
	free(ps->scratch);
	ps->scratch = NULL;
	ps->scratch_cap = 0;
}

/* Room for n bytes of text in ps->scratch; NULL when memory runs out. */
static char *
reserve(struct imp_parser *ps, size_t n)
{
	char *p = tkp_grow(ps->scratch, &ps->scratch_cap, n, 1);
	if (p)
		ps->scratch = p;
	return p;
}

static int
num_char(char c)
{
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' ||
	       c == 'e' || c == 'E';
}

/* Quote the number that ends at `end` in ps->scratch[0, *len). */
static int
quote_number(struct imp_parser *ps, size_t *len, size_t end)
{
	size_t start = end;
	while (start > 0 && num_char(ps->scratch[start - 1]))
		start--;
	if (start == end || end > *len)
		return -1;
	char *b = reserve(ps, *len + 3);
	if (!b)
		return -1;
	memmove(b + end + 2, b + end, *len - end);
	memmove(b + start + 1, b + start, end - start);
	b[start] = '"';
	b[end + 1] = '"';
	*len += 2;
	return 0;
}

json_t *
imp_parse(const char *text, size_t len, struct imp_parser *ps,
          char *msg, size_t msgsz, size_t *err_at)
{
	json_error_t err;
	/* events are objects, but top-level values may be anything */
	const size_t flags = JSON_ALLOW_NUL | JSON_DECODE_ANY;
	json_t *v = json_loadb(text, len, flags, &err);
	ps->repaired = 0;
	if (v)
		return v;
	const char *cur = text;
	size_t cur_len = len;
	int repaired_utf8 = 0, quoted = 0;
	/* each retry fixes one thing; a bound keeps a hostile event cheap */
	for (int tries = 0; tries < 64; tries++) {
		enum json_error_code code = json_error_code(&err);
		if (code == json_error_invalid_utf8 && !repaired_utf8) {
			size_t n;
			const char *ok = cmd_utf8(cur, cur_len, &n);
			char *b = reserve(ps, n);
			if (!b)
				break;
			memmove(b, ok, n);
			cur = b;
			cur_len = n;
			repaired_utf8 = 1;
		} else if (code == json_error_numeric_overflow) {
			if (cur != ps->scratch) {
				char *b = reserve(ps, cur_len);
				if (!b)
					break;
				memcpy(b, cur, cur_len);
				cur = b;
			}
			if (quote_number(ps, &cur_len, (size_t)err.position) < 0)
				break;
			cur = ps->scratch;   /* quoting may have moved it */
			quoted++;
		} else {
			break;
		}
		v = json_loadb(cur, cur_len, flags, &err);
		if (v) {
			ps->utf8_repaired += repaired_utf8;
			ps->big_numbers += (uint64_t)quoted;
			ps->repaired = 1;
			return v;
		}
	}
	/* positions after a repair are close enough: within the event */
	size_t at = err.position > 0 ? (size_t)err.position - 1 : 0;
	*err_at = at < len ? at : len;
	snprintf(msg, msgsz, "%s", err.text);
	return NULL;
}
