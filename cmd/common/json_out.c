/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "json_out.h"
#include "util.h"

json_t *
cmd_jstr(const char *s)
{
	size_t n;
	const char *u = cmd_utf8(s, strlen(s), &n);
	return json_stringn_nocheck(u, n);
}

void
cmd_jset(json_t *o, const char *k, json_t *v)
{
	if (!v || json_object_set_new(o, k, v) < 0)
		cmd_die(EXIT_USAGE, "out of memory");
}

void
cmd_jappend(json_t *a, json_t *v)
{
	if (!v || json_array_append_new(a, v) < 0)
		cmd_die(EXIT_USAGE, "out of memory");
}

void
cmd_jadd_value(json_t *o, const char *k, const char *value)
{
	json_t *v = cmd_jstr(value);
	/* keys too must be UTF-8 (jansson refuses others); taken after the
	 * value, as both share cmd_utf8()'s buffer */
	size_t n;
	const char *key = cmd_utf8(k, strlen(k), &n);
	json_t *old = json_object_get(o, key);
	if (!old) {
		cmd_jset(o, key, v);
	} else if (json_is_array(old)) {
		cmd_jappend(old, v);
	} else {
		json_t *arr = json_array();
		if (!arr || json_array_append(arr, old) < 0)
			cmd_die(EXIT_USAGE, "out of memory");
		cmd_jappend(arr, v);
		cmd_jset(o, key, arr);
	}
}
