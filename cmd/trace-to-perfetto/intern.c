/* SPDX-License-Identifier: MIT */
/*
 * Interning for trace-to-perfetto.  Perfetto lets a packet sequence
 * define a string once (InternedData: event names, categories, debug
 * annotation names and string values) and refer to it by a small
 * number, its iid, from then on.  Each table here maps a text to its
 * iid in the current sequence; a new sequence (the next file of a
 * --split series) voids them all by bumping a generation, so the texts
 * are kept but defined again when next used.  Event names are looked up
 * by their .tkt string id first, which spares hashing a kernel name a
 * million times.  A table stops taking new texts at a limit (a trace
 * with endless distinct values stays in bounded memory): those are then
 * written inline.
 */
#include <stdlib.h>

#include "perfetto.h"
#include "common/util.h"
#include "support.h"

void
pf_intern_init(struct pf_intern *in)
{
	memset(in, 0, sizeof(*in));
	in->gen = 1;
	in->scope_gen = 1;
	in->limit = 1u << 20;
	for (int i = 0; i < PF_I_NTABLES; i++)
		in->t[i].next_iid = 1;
}

void
pf_intern_free(struct pf_intern *in)
{
	for (int i = 0; i < PF_I_NTABLES; i++) {
		struct pf_itable *t = &in->t[i];
		for (size_t k = 0; k < t->nslots; k++)
			free(t->slot[k].s);
		free(t->slot);
		free(t->by_id_iid);
		free(t->by_id_gen);
	}
	pb_free(&in->pending);
}

void
pf_intern_clear(struct pf_intern *in)
{
	in->gen++;
	in->scope_gen++;
	for (int i = 0; i < PF_I_NTABLES; i++)
		in->t[i].next_iid = 1;
	in->pending.len = 0;
}

void
pf_intern_scope(struct pf_intern *in)
{
	in->scope_gen++;
}

static int
table_field(int which)
{
	static const int field[PF_I_NTABLES] = { 1, 2, 3, 29 };
	return field[which];
}

static void
rehash(struct pf_itable *t)
{
	size_t n = t->nslots ? t->nslots * 2 : 1024;
	struct pf_ientry *s = calloc(n, sizeof(*s));
	if (!s)
		cmd_die(EXIT_USAGE, "out of memory");
	for (size_t k = 0; k < t->nslots; k++) {
		struct pf_ientry *e = &t->slot[k];
		if (!e->s)
			continue;
		size_t j = e->hash & (n - 1);
		while (s[j].s)
			j = (j + 1) & (n - 1);
		s[j] = *e;
	}
	free(t->slot);
	t->slot = s;
	t->nslots = n;
}

/* Add the definition { iid, text } to the packet's InternedData. */
static void
define(struct pf_intern *in, int which, uint64_t iid, const char *s, size_t n)
{
	size_t at = pb_open(&in->pending, (unsigned)table_field(which));
	pb_uint(&in->pending, 1, iid);
	pb_bytes(&in->pending, 2, s, n);
	pb_close(&in->pending, at);
}

uint64_t
pf_intern(struct pf_intern *in, int which, const char *s, size_t n)
{
	struct pf_itable *t = &in->t[which];
	uint64_t h = tkp_hash(s, n, (uint64_t)which);
	if (t->nslots) {
		for (size_t j = h & (t->nslots - 1); t->slot[j].s;
		     j = (j + 1) & (t->nslots - 1)) {
			struct pf_ientry *e = &t->slot[j];
			if (e->hash != h || e->len != n || memcmp(e->s, s, n) != 0)
				continue;
			if (e->gen != in->gen) {
				e->gen = in->gen;
				e->iid = t->next_iid++;
				define(in, which, e->iid, s, n);
			}
			return e->iid;
		}
	}
	size_t limit = which == PF_T_VALUE ? in->limit / 16 : in->limit;
	if (t->used >= limit || n > UINT32_MAX)
		return 0;
	if ((t->used + 1) * 2 > t->nslots)
		rehash(t);
	size_t j = h & (t->nslots - 1);
	while (t->slot[j].s)
		j = (j + 1) & (t->nslots - 1);
	struct pf_ientry *e = &t->slot[j];
	e->s = cmd_xrealloc(NULL, n + 1);
	memcpy(e->s, s, n);
	e->s[n] = 0;
	e->len = (uint32_t)n;
	e->hash = h;
	e->gen = in->gen;
	e->iid = t->next_iid++;
	t->used++;
	define(in, which, e->iid, s, n);
	return e->iid;
}

uint64_t
pf_intern_name(struct pf_intern *in, uint32_t id, const char *s)
{
	struct pf_itable *t = &in->t[PF_T_NAME];
	if (!id)
		return pf_intern(in, PF_T_NAME, s, strlen(s));
	if (id < t->nby_id && t->by_id_gen[id] == in->scope_gen)
		return t->by_id_iid[id];
	if (id >= t->nby_id) {
		size_t n = t->nby_id ? t->nby_id : 1024;
		while (n <= id)
			n *= 2;
		t->by_id_iid = cmd_xrealloc(t->by_id_iid, n * sizeof(uint32_t));
		t->by_id_gen = cmd_xrealloc(t->by_id_gen, n * sizeof(uint32_t));
		memset(t->by_id_gen + t->nby_id, 0, (n - t->nby_id) * sizeof(uint32_t));
		t->nby_id = n;
	}
	uint64_t iid = pf_intern(in, PF_T_NAME, s, strlen(s));
	if (iid && iid <= UINT32_MAX) {
		t->by_id_iid[id] = (uint32_t)iid;
		t->by_id_gen[id] = in->scope_gen;
	}
	return iid;
}
