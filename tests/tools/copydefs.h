/* SPDX-License-Identifier: MIT */
/*
 * For test tools that rewrite traces: definitions copied from a reader to
 * a writer, ids mapped through plain arrays.  Not a merge: nothing is
 * deduplicated, every input track becomes a new output track.
 */
#ifndef TK_TOOLS_COPYDEFS_H
#define TK_TOOLS_COPYDEFS_H

#include <stdlib.h>
#include <string.h>

#include "tracekit.h"
#include "common/util.h"

struct idmap {
	uint32_t *v;
	uint32_t cap;
};

static uint32_t *
idmap_slot(struct idmap *m, uint32_t id)
{
	if (id >= m->cap) {
		uint32_t n = m->cap ? m->cap : 256;
		while (n <= id)
			n *= 2;
		uint32_t *p = realloc(m->v, n * sizeof(*p));
		if (!p)
			cmd_die(2, "out of memory");
		memset(p + m->cap, 0, (n - m->cap) * sizeof(*p));
		m->v = p;
		m->cap = n;
	}
	return &m->v[id];
}

static void
idmap_clear(struct idmap *m)
{
	if (m->v)
		memset(m->v, 0, m->cap * sizeof(*m->v));
}

/* The maps of one input scope. */
struct copymaps {
	struct idmap strings, tracks, devices;
	const char *host;        /* replaces every host when not NULL */
};

static void
copymaps_clear(struct copymaps *c)
{
	idmap_clear(&c->strings);
	idmap_clear(&c->tracks);
	idmap_clear(&c->devices);
}

static void
copymaps_free(struct copymaps *c)
{
	free(c->strings.v);
	free(c->tracks.v);
	free(c->devices.v);
}

/* Output id of input string `id` whose text is `s`. */
static uint32_t
copy_string(struct tk_writer *w, struct copymaps *c, uint32_t id, const char *s)
{
	if (!id)
		return 0;
	uint32_t *slot = idmap_slot(&c->strings, id);
	if (!*slot && !(*slot = tk_writer_cstring(w, s)))
		cmd_die(2, "%s", tk_writer_error(w));
	return *slot;
}

/* Map the ids and strings of event `e` into `out`. */
static void
copy_event(struct tk_writer *w, struct copymaps *c, const struct tk_event *e,
           struct tk_event *out)
{
	*out = *e;
	out->track = *idmap_slot(&c->tracks, e->track);
	out->name_id = copy_string(w, c, e->name_id, e->name);
	switch (e->kind) {
	case TK_RANGE:
	case TK_ASYNC_RANGE:
	case TK_MARK:
		out->u.range.domain_id = copy_string(w, c, e->u.range.domain_id,
		                                     e->u.range.domain);
		out->u.range.end_track = *idmap_slot(&c->tracks, e->u.range.end_track);
		break;
	case TK_KERNEL:
		out->u.kernel.mangled_id = copy_string(w, c, e->u.kernel.mangled_id,
		                                       e->u.kernel.mangled);
		break;
	case TK_DROPPED:
		out->u.dropped.reason_id = copy_string(w, c, e->u.dropped.reason_id,
		                                       e->u.dropped.reason);
		break;
	case TK_FLOW:
		out->u.flow.category_id = copy_string(w, c, e->u.flow.category_id,
		                                      e->u.flow.category);
		break;
	}
}

/* Copy a definition record (not an event); TK_REC_SCOPE clears the maps. */
static void
copy_definition(struct tk_writer *w, struct copymaps *c,
                const struct tk_record *rec)
{
	uint32_t out = 0;
	switch (rec->type) {
	case TK_REC_SCOPE:
		copymaps_clear(c);
		return;
	case TK_REC_TRACK: {
		const struct tk_track *t = rec->u.track;
		switch (t->type) {
		case TK_TRACK_PROCESS: {
			struct tk_process p = t->u.process;
			if (c->host)
				p.host = c->host;
			out = tk_writer_process(w, 0, &p);
			break;
		}
		case TK_TRACK_THREAD: {
			struct tk_thread th = t->u.thread;
			th.process = *idmap_slot(&c->tracks, th.process);
			out = tk_writer_thread(w, 0, &th);
			break;
		}
		case TK_TRACK_STREAM: {
			struct tk_stream s = t->u.stream;
			s.process = *idmap_slot(&c->tracks, s.process);
			s.device = *idmap_slot(&c->devices, s.device);
			out = tk_writer_stream(w, 0, &s);
			break;
		}
		case TK_TRACK_COUNTER: {
			struct tk_counter k = t->u.counter;
			k.process = *idmap_slot(&c->tracks, k.process);
			k.device = *idmap_slot(&c->devices, k.device);
			out = tk_writer_counter(w, 0, &k);
			break;
		}
		default:
			return;
		}
		if (!out)
			cmd_die(2, "%s", tk_writer_error(w));
		*idmap_slot(&c->tracks, t->id) = out;
		return;
	}
	case TK_REC_DEVICE: {
		struct tk_device d = *rec->u.device;
		if (c->host)
			d.host = c->host;
		if (!(out = tk_writer_device(w, 0, &d)))
			cmd_die(2, "%s", tk_writer_error(w));
		*idmap_slot(&c->devices, rec->u.device->id) = out;
		return;
	}
	case TK_REC_META:
		if (tk_writer_meta(w, rec->u.meta->key, c->host &&
		                   strcmp(rec->u.meta->key, "host") == 0
		                   ? c->host : rec->u.meta->value))
			cmd_die(2, "%s", tk_writer_error(w));
		return;
	case TK_REC_CATEGORY:
		if (tk_writer_category(w, rec->u.category->domain,
		                       rec->u.category->category,
		                       rec->u.category->name))
			cmd_die(2, "%s", tk_writer_error(w));
		return;
	default:
		return;
	}
}

#endif
