/* SPDX-License-Identifier: MIT */
#include <jansson.h>
#include <string.h>

#include "chrome_scope.h"

int
cmd_mark_is_global(const struct tk_event *e)
{
	if (e->kind != TK_MARK || !e->args || !e->args_len ||
	    !memmem(e->args, e->args_len, "\"chrome.s\"", 10))
		return 0;
	json_t *obj = json_loadb(e->args, e->args_len, 0, NULL);
	json_t *s = json_object_get(obj, "chrome.s");
	int global = json_is_string(s) && strcmp(json_string_value(s), "g") == 0;
	json_decref(obj);
	return global;
}
