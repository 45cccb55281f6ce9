/* SPDX-License-Identifier: MIT */
/*
 * Kernel names for people, shared by trace-stats and trace-diff:
 * "(anonymous namespace)::" and a template's return type and parameter
 * list are dropped (the parameters repeat the template arguments); a
 * name still long loses its plain namespace qualifiers, then its
 * innermost template arguments ("<...>"), until it fits; then, with a
 * maximum, the end is cut to "...".  CSV and JSON keep names whole.
 */
#ifndef TK_CMD_SHORT_NAME_H
#define TK_CMD_SHORT_NAME_H

#include <stddef.h>

/* The shortened name, at most `max` columns when max > 0; a buffer
 * valid until the next call. */
const char *cmd_short_name(const char *name, size_t max);

#endif
