/* SPDX-License-Identifier: MIT */
/* Kernel names for people; see short_name.h. */
#include <stdlib.h>
#include <string.h>

#include "short_name.h"
#include "util.h"

const char *
cmd_short_name(const char *name, size_t max)
{
	static char *buf;
	static size_t cap;
	size_t len = strlen(name);
	if (cap < len + 4) {
		cap = len + 4;
		buf = realloc(buf, cap);
		if (!buf)
			cmd_die(EXIT_USAGE, "out of memory");
	}
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
	if (max && n > max) {
		size_t keep = max - 3;
		/* do not cut inside a UTF-8 sequence */
		while (keep > 0 && ((unsigned char)s[keep] & 0xc0) == 0x80)
			keep--;
		memcpy(buf, s, keep);
		memcpy(buf + keep, "...", 4);
		return buf;
	}
	memcpy(buf, s, n);
	buf[n] = 0;
	return buf;
}
