/* SPDX-License-Identifier: MIT */
/* Reader functions for other parts of the library only. */
#ifndef TK_READER_PRIVATE_H
#define TK_READER_PRIVATE_H

#include "tk_private.h"

/* Read a stream written with tk_writer_options.raw_ids: ids are handed
 * out as they are, unresolved (names "", tracks unknown). */
TKP_HIDDEN void tkp_reader_set_raw(struct tk_reader *r, int raw);

#endif
