/* SPDX-License-Identifier: MIT */
/*
 * What trace-import keeps of a Chrome instant's scope: a tracekit track
 * belongs to a process, so an instant of global scope ("s":"g") keeps
 * it as the argument chrome.s, which the writers of Chrome JSON and
 * Perfetto give back as the instant's scope.
 */
#ifndef TK_CMD_CHROME_SCOPE_H
#define TK_CMD_CHROME_SCOPE_H

#include "tracekit.h"

/* Is e an imported instant of global scope? */
int cmd_mark_is_global(const struct tk_event *e);

#endif
