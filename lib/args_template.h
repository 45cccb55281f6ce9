/* SPDX-License-Identifier: MIT */
/*
 * The args of a kind's events in a chunk, stored as templates and
 * numbers (tracekit-format(5), "Args templates"): each args text with
 * its numbers cut out is a template, kept once per chunk; the numbers
 * go apart, each as the difference to the number in the same place of
 * the event before.  Profiler args ("External id": 1234, "Ev Idx": 17,
 * ...) are mostly the same text with counters that go up by one, which
 * deflate alone cannot see.
 */
#ifndef TK_ARGS_TEMPLATE_H
#define TK_ARGS_TEMPLATE_H

#include "intern.h"
#include "tk_private.h"

/* What a writer keeps between chunks, to reuse its allocations. */
struct tkp_args_encoder {
	struct tkp_intern templates;
	struct tkp_buf text;     /* one template being cut */
	uint64_t *nums;          /* one event's numbers */
	uint64_t *prev;          /* by place: the number before */
	size_t nums_cap, prev_cap;
};

/* Cut the n args of a B column (varint length, bytes; for each event)
 * into templates (B list: the distinct templates in order of first
 * use), ids (n values: template index from 1, 0 for no args) and
 * numbers (zigzag varints).  1 when done, 0 when the args cannot be
 * templated (a NUL byte in them, or a bad column), -1 when out of
 * memory. */
TKP_HIDDEN int tkp_args_encode(struct tkp_args_encoder *e, const uint8_t *col,
                               size_t len, uint32_t n, struct tkp_buf *templates,
                               uint64_t *ids, struct tkp_buf *numbers);
TKP_HIDDEN void tkp_args_encoder_free(struct tkp_args_encoder *e);

/* What a reader keeps between chunks. */
struct tkp_args_decoder {
	const uint8_t **tp;      /* by template index from 1: its bytes */
	uint32_t *tlen;
	uint32_t *tholes;        /* its places */
	size_t tcap;
	uint64_t *prev;
	size_t prev_cap;
};

/* Rebuild n args from a kind's three columns (ids already decoded, one
 * per event) into out, which then holds them all; args[i] and
 * args_len[i] are set (NULL and 0 for none).  NULL on success, else
 * what is wrong with the columns; *nomem set when out of memory. */
TKP_HIDDEN const char *tkp_args_decode(struct tkp_args_decoder *d,
                                       const uint8_t *templates, size_t tlen,
                                       const uint64_t *ids, uint32_t n,
                                       const uint8_t *numbers, size_t nlen,
                                       struct tkp_buf *out,
                                       const uint8_t **args, uint32_t *args_len,
                                       int *nomem);
TKP_HIDDEN void tkp_args_decoder_free(struct tkp_args_decoder *d);

#endif
