/* SPDX-License-Identifier: MIT */
/* Kernel names for people; see short_name.h. */
#include <stdlib.h>
#include <string.h>

#include "short_name.h"
#include "support.h"
#include "util.h"

/* Past this many bytes a name loses namespaces, then inner template
 * arguments: what is left of a PyTorch kernel's name then fits the name
 * column of a 200-column table, with what tells it from its siblings. */
#define COMPACT_ABOVE 90

static const char ANON[] = "(anonymous namespace)::";

static int
ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_';
}

/* Whether the angle brackets of s pair up (no "operator<" and the like),
 * so that depths mean something. */
static int
brackets_pair(const char *s)
{
	long depth = 0;
	for (; *s; s++) {
		if (*s == '<')
			depth++;
		else if (*s == '>' && --depth < 0)
			return 0;
	}
	return depth == 0;
}

/* Drop plain qualifiers: "at::native::Sqrt<float>" -> "Sqrt<float>".  A
 * qualifier with template arguments or a parameter list before its "::"
 * ("sum_functor<float>::operator()", "f()::{lambda()#1}") stays, and so
 * does one not followed by a name ("() const::{lambda()#1}"). */
static size_t
drop_qualifiers(char *s, size_t n)
{
	size_t out = 0;
	for (size_t i = 0; i < n;) {
		char prev = out ? s[out - 1] : 0;
		if (!ident_char(s[i]) || ident_char(prev) || prev == ':') {
			s[out++] = s[i++];
			continue;
		}
		size_t j = i;
		while (j < n && ident_char(s[j]))
			j++;
		if (j + 2 < n && s[j] == ':' && s[j + 1] == ':' && ident_char(s[j + 2])) {
			i = j + 2; /* the qualifier goes */
			continue;
		}
		memmove(s + out, s + i, j - i);
		out += j - i;
		i = j;
	}
	s[out] = 0;
	return out;
}

/* Replace the contents of one template argument list below the outermost
 * with "...": the deepest first and, at one depth, the longest.  Returns
 * the new length, 0 when no list would get shorter. */
static size_t
collapse_one(char *s, size_t n)
{
	enum { DEEPEST = 64 }; /* lists deeper than this are not candidates */
	size_t open[DEEPEST];
	size_t best_at = 0, best_len = 0, depth = 0, best_depth = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '<') {
			if (depth < DEEPEST)
				open[depth] = i;
			depth++;
		} else if (s[i] == '>' && depth > 0) {
			depth--;
			if (depth >= DEEPEST)
				continue;
			size_t at = open[depth] + 1, len = i - at;
			/* depth + 1: this list's depth, the outermost being 1 */
			if (depth + 1 >= 2 && len > 3 &&
			    (depth + 1 > best_depth || (depth + 1 == best_depth && len > best_len))) {
				best_at = at;
				best_len = len;
				best_depth = depth + 1;
			}
		}
	}
	if (!best_len)
		return 0;
	memcpy(s + best_at, "...", 3);
	memmove(s + best_at + 3, s + best_at + best_len, n - best_at - best_len + 1);
	return n - best_len + 3;
}

const char *
cmd_short_name(const char *name, size_t max)
{
	static char *buf;
	static size_t cap;
	size_t len = strlen(name);
	char *b = tkp_grow(buf, &cap, len + 4, 1);
	if (!b)
		cmd_die(EXIT_USAGE, "out of memory");
	buf = b;
	const char *s = name;
	if (strncmp(s, "void ", 5) == 0 && strchr(s, '<'))
		s += 5;
	size_t n = strlen(s);
	if (n && s[n - 1] == ')') {
		/* find the '(' that opens the final parameter list */
		int depth = 0;
		size_t i = n;
		while (i-- > 0) {
			if (s[i] == ')')
				depth++;
			else if (s[i] == '(' && --depth == 0)
				break;
		}
		if (i < n && i > 0 && memchr(s, '<', i) && s[i - 1] == '>')
			n = i;
	}

	/* "(anonymous namespace)::" tells a reader nothing */
	size_t m = 0;
	for (size_t i = 0; i < n;) {
		if (strncmp(s + i, ANON, sizeof(ANON) - 1) == 0) {
			i += sizeof(ANON) - 1;
			continue;
		}
		buf[m++] = s[i++];
	}
	buf[m] = 0;
	if (m > COMPACT_ABOVE && brackets_pair(buf)) {
		m = drop_qualifiers(buf, m);
		size_t shorter;
		while (m > COMPACT_ABOVE && (shorter = collapse_one(buf, m)))
			m = shorter;
	}

	if (max && m > max) {
		size_t keep = max - 3;
		/* do not cut inside a UTF-8 sequence */
		while (keep > 0 && ((unsigned char)buf[keep] & 0xc0) == 0x80)
			keep--;
		memcpy(buf + keep, "...", 4);
	}
	return buf;
}
