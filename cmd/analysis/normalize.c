/* SPDX-License-Identifier: MIT */
/*
 * Names normalized for matching across builds; the rules are in
 * normalize.h.
 */
#include <stdlib.h>
#include <string.h>

#include "normalize.h"

static int
is_word(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_';
}

static int
is_alnum(char c)
{
	return is_word(c) && c != '_';
}

static int
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int
is_hex(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Rule 1: the index of the '>' matching the '<' at s[i], or 0. */
static size_t
template_end(const char *s, size_t i)
{
	if (i == 0 || !is_word(s[i - 1]))
		return 0;
	/* operator<, operator<<, operator<=, operator<=> */
	if (i >= 8 && strncmp(s + i - 8, "operator", 8) == 0)
		return 0;
	int depth = 0;
	for (size_t j = i; s[j]; j++) {
		if (s[j] == '<') {
			depth++;
		} else if (s[j] == '>' && s[j - 1] != '-') {
			if (--depth == 0)
				return j;
		}
	}
	return 0;
}

/* Rule 3: the length of the numeric suffix (or hex hash) at s[i], or 0. */
static size_t
suffix_len(const char *s, size_t i)
{
	if (i < 2 || !memchr("_.#-", s[i - 1], 4) || s[i - 2] == ' ' ||
	    !is_hex(s[i]))
		return 0;
	size_t j = i;
	while (is_digit(s[j]))
		j++;
	if (j > i && !is_word(s[j]))
		return j - i;
	/* a hex hash: 8 or more hex digits, one of them decimal */
	int digit = 0;
	for (j = i; is_hex(s[j]); j++)
		digit |= is_digit(s[j]);
	if (digit && j - i >= 8 && !is_word(s[j]))
		return j - i;
	return 0;
}

char *
diff_normalize(const char *name)
{
	size_t n = strlen(name);
	/* the longest growth is "a<>" -> "a<...>": twice the input */
	char *out = malloc(2 * n + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		size_t e, k;
		if (name[i] == '<' && (e = template_end(name, i)) != 0) {
			memcpy(out + o, "<...>", 5);
			o += 5;
			i = e + 1;
		} else if (name[i] == '0' && (name[i + 1] == 'x' || name[i + 1] == 'X') &&
		           is_hex(name[i + 2]) && (i == 0 || !is_alnum(name[i - 1]))) {
			memcpy(out + o, "0x...", 5);
			o += 5;
			for (i += 2; is_hex(name[i]); i++)
				;
		} else if ((k = suffix_len(name, i)) != 0) {
			out[o++] = 'N';
			i += k;
		} else {
			out[o++] = name[i++];
		}
	}
	out[o] = 0;
	return out;
}
