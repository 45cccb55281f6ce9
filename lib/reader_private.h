/* SPDX-License-Identifier: MIT */
/* Reader functions for other parts of the library only. */
#ifndef TK_READER_PRIVATE_H
#define TK_READER_PRIVATE_H

#include "tk_private.h"

/* Read a stream written with tk_writer_options.raw_ids: ids are handed
 * out as they are, unresolved (names "", tracks unknown). */
TKP_HIDDEN void tkp_reader_set_raw(struct tk_reader *r, int raw);

/* Up to `max` events of the chunk at hand, filled as by
 * tk_reader_next_event() into out, out + stride, ...; returns how many.
 * 0 when tk_reader_next() must be called: for a definition, a new
 * chunk, an event of an unknown kind, the end or an error.  Their
 * pointers are the reader's until it reads the next chunk. */
TKP_HIDDEN uint32_t tkp_reader_take_events(struct tk_reader *r, void *out,
                                           size_t stride, uint32_t max);

#endif
