/* SPDX-License-Identifier: MIT */
/*
 * Flow arrows of trace-to-chrome: from each CUDA API call to the GPU
 * work it launched, matched by correlation id.  An arrow is written only
 * when both ends are known, so no viewer sees half a flow.
 *
 * Memory stays bounded: the ends still waiting for their partner live in
 * a ring of fixed size with a hash index.  A call stays after matching
 * (a graph launch runs many kernels under one correlation id); the
 * oldest entry gives way when the ring is full.  Slices reach this file
 * in begin order (reorder.c), and a kernel begins after its
 * launch, so the call is nearly always here first and its GPU work,
 * queued behind at most a few thousand launches, finds it.  GPU work
 * that never found its call is counted (otherData.tracekit).
 */
#include <stdlib.h>

#include "chrome.h"
#include "common/util.h"
#include "support.h"

void
chrome_flows_init(struct chrome_flows *f, uint32_t cap, chrome_flow_emit *emit,
                  void *ctx)
{
	memset(f, 0, sizeof(*f));
	f->cap = cap;
	f->head = 1;
	f->nbuckets = 1;
	while (f->nbuckets < 2 * cap)
		f->nbuckets *= 2;
	f->slot = calloc((size_t)cap + 1, sizeof(*f->slot));
	f->bucket = calloc(f->nbuckets, sizeof(*f->bucket));
	if (!f->slot || !f->bucket)
		cmd_die(EXIT_USAGE, "out of memory");
	/* above the ids of imported flows (below 2^52, trace-to-chrome.c),
	 * below 2^53 for JavaScript: an imported "ac2g" flow cannot take
	 * one of these arrows' ids */
	f->next_id = UINT64_C(1) << 52;
	f->emit = emit;
	f->ctx = ctx;
}

void
chrome_flows_free(struct chrome_flows *f)
{
	free(f->slot);
	free(f->bucket);
	memset(f, 0, sizeof(*f));
}

/* The bucket of a correlation id of a scope.  Which hash does not
 * change the output: the ends of one id share a bucket whatever it is,
 * and a chain keeps them in the order they came. */
static uint32_t
bucket_of(const struct chrome_flows *f, uint32_t scope, uint64_t corr)
{
	uint64_t h = tkp_hash_u64(corr ^ ((uint64_t)scope << 48));
	return (uint32_t)h & (f->nbuckets - 1);
}

static void
unlink_slot(struct chrome_flows *f, uint32_t i)
{
	struct chrome_flow_end *s = &f->slot[i];
	uint32_t *p = &f->bucket[bucket_of(f, s->scope, s->corr)];
	while (*p && *p != i)
		p = &f->slot[*p].next;
	if (*p)
		*p = s->next;
	s->role = 0;
}

static void
insert(struct chrome_flows *f, int role, uint32_t scope, uint64_t corr,
       uint32_t ctrack, int64_t ts)
{
	uint32_t i = f->head;
	f->head = f->head % f->cap + 1;
	if (f->slot[i].role) {
		if (f->slot[i].role == CF_GPU)
			f->unmatched_gpu++;
		unlink_slot(f, i);
	}
	uint32_t b = bucket_of(f, scope, corr);
	f->slot[i] = (struct chrome_flow_end){ corr, ts, ctrack, scope, f->bucket[b],
	                                       (uint8_t)role };
	f->bucket[b] = i;
}

void
chrome_flows_add(struct chrome_flows *f, int role, uint32_t scope, uint64_t corr,
                 uint32_t ctrack, int64_t ts)
{
	uint32_t i = f->bucket[bucket_of(f, scope, corr)];
	if (role == CF_GPU) {
		for (; i; i = f->slot[i].next) {
			const struct chrome_flow_end *s = &f->slot[i];
			if (s->role == CF_API && s->corr == corr && s->scope == scope) {
				f->emit(f->ctx, f->next_id++, s->ctrack, s->ts, ctrack, ts);
				return;
			}
		}
		insert(f, CF_GPU, scope, corr, ctrack, ts);
		return;
	}
	/* a call: first the GPU work that came before it (rare) */
	while (i) {
		uint32_t next = f->slot[i].next;
		const struct chrome_flow_end *s = &f->slot[i];
		if (s->role == CF_GPU && s->corr == corr && s->scope == scope) {
			f->emit(f->ctx, f->next_id++, ctrack, ts, s->ctrack, s->ts);
			unlink_slot(f, i);
		}
		i = next;
	}
	insert(f, CF_API, scope, corr, ctrack, ts);
}

void
chrome_flows_finish(struct chrome_flows *f)
{
	for (uint32_t i = 1; i <= f->cap; i++)
		if (f->slot[i].role == CF_GPU)
			f->unmatched_gpu++;
}
