/* SPDX-License-Identifier: MIT */
/*
 * schema: the attribute columns the library reads and writes for each
 * kind of event, one line each: kind number, attribute number and its
 * encoding as tracekit-format(5) names it (U, S, D, F, STR; a launch
 * configuration id is U there).  tests/cli/format-schema.bats checks the
 * lines against the man page, so that renumbering a column, which would
 * make every trace written before unreadable, cannot pass unseen.
 *
 *   schema
 */
#include <stdio.h>

#include "tk_private.h"

static const char *
enc_name(unsigned enc)
{
	switch (enc) {
	case TKP_ENC_U: case TKP_ENC_CONFIG: return "U";
	case TKP_ENC_S: return "S";
	case TKP_ENC_D: return "D";
	case TKP_ENC_F64: return "F";
	case TKP_ENC_STR: return "STR";
	}
	return "?";
}

int
main(void)
{
	for (unsigned k = 1; k <= TK_KIND_MAX; k++) {
		const struct tkp_kind_schema *s = &tkp_schema[k];
		for (unsigned i = 0; i < s->n; i++)
			printf("%u %u %s\n", k, s->attrs[i].attr, enc_name(s->attrs[i].enc));
	}
	return ferror(stdout) ? 2 : 0;
}
