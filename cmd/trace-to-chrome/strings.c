/* SPDX-License-Identifier: MIT */
/*
 * JSON string literals for trace-to-chrome.  jansson does the escaping;
 * names are interned string ids, so each distinct name of a scope is
 * escaped once and its literal copied from then on.
 */
#include <stdlib.h>

#include <jansson.h>

#include "chrome.h"
#include "common/util.h"

void
chrome_escape(struct sbuf *dst, const char *s, size_t n)
{
	size_t len;
	const char *ok = cmd_utf8(s, n, &len);
	json_t *j = json_stringn_nocheck(ok, len);
	if (!j)
		cmd_die(EXIT_USAGE, "out of memory");
	/* an escaped character takes at most 6 bytes (\u001f) */
	size_t room = len * 6 + 3;
	if (dst->cap - dst->len < room)
		sb_grow(dst, room);
	size_t w = json_dumpb(j, dst->p + dst->len, room, JSON_ENCODE_ANY);
	json_decref(j);
	if (w == 0 || w > room)
		cmd_die(EXIT_USAGE, "cannot encode a string as JSON");
	dst->len += w;
}

void
chrome_str(struct chrome_strings *c, struct sbuf *dst, uint32_t id,
           const char *s)
{
	if (id == 0) {
		chrome_escape(dst, s, strlen(s));
		return;
	}
	if (id >= c->nids) {
		/* off and len grow together: len's capacity follows nids */
		size_t n = c->nids;
		c->len = chrome_grow(c->len, &n, (size_t)id + 1, sizeof(*c->len));
		c->off = chrome_grow(c->off, &c->nids, n, sizeof(*c->off));
	}
	if (!c->off[id]) {
		size_t at = c->arena.len;
		chrome_escape(&c->arena, s, strlen(s));
		if (c->arena.len >= UINT32_MAX)
			cmd_die(EXIT_USAGE, "too many distinct strings");
		c->off[id] = (uint32_t)at + 1;
		c->len[id] = (uint32_t)(c->arena.len - at);
	}
	sb_mem(dst, c->arena.p + c->off[id] - 1, c->len[id]);
}

void
chrome_strings_reset(struct chrome_strings *c)
{
	if (c->nids)
		memset(c->off, 0, c->nids * sizeof(*c->off));
	c->arena.len = 0;
}

void
chrome_strings_free(struct chrome_strings *c)
{
	free(c->off);
	free(c->len);
	sb_free(&c->arena);
	memset(c, 0, sizeof(*c));
}
