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

static char *scratch;
static size_t scratch_cap;

void
imp_parse_free(void)
{
	free(scratch);
	scratch = NULL;
	scratch_cap = 0;
}

static char *
reserve(size_t n)
{
	if (n > scratch_cap) {
		size_t cap = scratch_cap ? scratch_cap : 4096;
		while (cap < n)
			cap *= 2;
		char *p = realloc(scratch, cap);
		if (!p)
			return NULL;
		scratch = p;
		scratch_cap = cap;
	}
	return scratch;
}

static int
num_char(char c)
{
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' ||
	       c == 'e' || c == 'E';
}

/* Quote the number that ends at `end` in scratch[0, *len). */
static int
quote_number(size_t *len, size_t end)
{
	size_t start = end;
	while (start > 0 && num_char(scratch[start - 1]))
		start--;
	if (start == end || end > *len)
		return -1;
	if (!reserve(*len + 3))
		return -1;
	memmove(scratch + end + 2, scratch + end, *len - end);
	memmove(scratch + start + 1, scratch + start, end - start);
	scratch[start] = '"';
	scratch[end + 1] = '"';
	*len += 2;
	return 0;
}

json_t *
imp_parse(const char *text, size_t len, struct imp_parse_stats *st,
          char *msg, size_t msgsz, size_t *err_at)
{
	json_error_t err;
	/* events are objects, but top-level values may be anything */
	const size_t flags = JSON_ALLOW_NUL | JSON_DECODE_ANY;
	json_t *v = json_loadb(text, len, flags, &err);
	st->repaired = 0;
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
			if (!reserve(n))
				break;
			memmove(scratch, ok, n);
			cur = scratch;
			cur_len = n;
			repaired_utf8 = 1;
		} else if (code == json_error_numeric_overflow) {
			if (cur != scratch) {
				if (!reserve(cur_len))
					break;
				memcpy(scratch, cur, cur_len);
				cur = scratch;
			}
			if (quote_number(&cur_len, (size_t)err.position) < 0)
				break;
			quoted++;
		} else {
			break;
		}
		v = json_loadb(cur, cur_len, flags, &err);
		if (v) {
			st->utf8_repaired += repaired_utf8;
			st->big_numbers += (uint64_t)quoted;
			st->repaired = 1;
			return v;
		}
	}
	/* positions after a repair are close enough: within the event */
	size_t at = err.position > 0 ? (size_t)err.position - 1 : 0;
	*err_at = at < len ? at : len;
	snprintf(msg, msgsz, "%s", err.text);
	return NULL;
}
