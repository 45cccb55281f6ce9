/* SPDX-License-Identifier: MIT */
/*
 * Building the JSON outputs of trace-stats and trace-diff with jansson:
 * strings made valid UTF-8, and running out of memory is fatal.
 */
#ifndef JSON_OUT_H
#define JSON_OUT_H

#include <jansson.h>

/* A JSON string of s, its bytes made UTF-8 (cmd_utf8). */
json_t *cmd_jstr(const char *s);
/* o[k] = v, taking v; exits (status 2) when memory runs out. */
void cmd_jset(json_t *o, const char *k, json_t *v);
/* a += v, taking v; likewise. */
void cmd_jappend(json_t *a, json_t *v);
/* o[k] = value as a string; a key given several values (metadata of
 * merged traces) holds an array of them, in order. */
void cmd_jadd_value(json_t *o, const char *k, const char *value);

#endif
