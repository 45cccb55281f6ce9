/* SPDX-License-Identifier: MIT */
/*
 * The tracks of trace-to-perfetto and their TrackDescriptors: a process
 * track per OS process with a thread track per thread under it, a track
 * per GPU ("GPU 0: NVIDIA H100 80GB HBM3") with a track per CUDA stream
 * under it, counter tracks under the process or GPU they measure, and a
 * track per process for its async ranges.  A descriptor is written the
 * first time a file uses its track (its parents first), so each file of
 * a --split series describes what it holds.
 *
 * A TrackEvent slice is a begin and an end on one track, and Perfetto
 * pairs them as a stack: slices on a track must nest.  Slices are placed
 * here in begin order (order.c sees to that); each track keeps the stack
 * of slices still open, and a slice that would overlap one of them
 * without nesting goes to an extra track beside it, "stream 7 (overlap
 * 1)", made when first needed: overlapping work is shown, never lost.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>

#include "perfetto.h"
#include "common/util.h"

/* Linux pids stay below 2^22: a process whose pid is taken by another
 * one (two hosts, or pid reuse) gets a made-up pid from there up. */
#define SYNTHETIC_PID (INT64_C(1) << 22)

enum {
	TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5,
	TD_COUNTER = 8, TD_CHILD_ORDERING = 11, TD_RANK = 12, TD_DESCRIPTION = 14,
};
#define ORDER_EXPLICIT 3

static char *
fmtstr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
fmtstr(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *s = cmd_xrealloc(NULL, (size_t)(n < 0 ? 0 : n) + 1);
	va_start(ap, fmt);
	vsnprintf(s, (size_t)(n < 0 ? 0 : n) + 1, fmt, ap);
	va_end(ap);
	return s;
}

void
pf_tracks_init(struct pf_tracks *tr)
{
	memset(tr, 0, sizeof(*tr));
	tr->n = 1;
	tr->next_pid = SYNTHETIC_PID;
	tr->max_overflow = 64;
}

void
pf_tracks_free(struct pf_tracks *tr)
{
	for (uint32_t i = 1; i < tr->n; i++) {
		struct pf_track *t = &tr->t[i];
		free(t->name);
		free(t->host);
		free(t->label);
		free(t->unit);
		free(t->stack);
		for (uint32_t k = 0; k < t->argc; k++)
			free(t->argv[k]);
		free(t->argv);
	}
	free(tr->t);
	free(tr->map);
	memset(tr, 0, sizeof(*tr));
}

void
pf_tracks_scope(struct pf_tracks *tr)
{
	if (tr->nmap)
		memset(tr->map, 0, tr->nmap * sizeof(*tr->map));
}

void
pf_tracks_redefine(struct pf_tracks *tr, uint32_t tk_id)
{
	if (tk_id < tr->nmap)
		tr->map[tk_id].resolved = 0;
}

static uint32_t
new_track(struct pf_tracks *tr, int kind, uint32_t parent, char *name)
{
	if (tr->n >= tr->cap) {
		uint32_t cap = tr->cap ? tr->cap * 2 : 64;
		tr->t = cmd_xrealloc(tr->t, (size_t)cap * sizeof(*tr->t));
		tr->cap = cap;
	}
	uint32_t i = tr->n++;
	struct pf_track *t = &tr->t[i];
	memset(t, 0, sizeof(*t));
	t->uuid = i;
	t->kind = kind;
	t->parent = parent;
	t->name = name;
	t->last_begin = INT64_MIN;
	return i;
}

static int
pid_taken(const struct pf_tracks *tr, int64_t pid)
{
	for (uint32_t i = 1; i < tr->n; i++)
		if (tr->t[i].kind == PT_PROCESS && tr->t[i].pid == pid)
			return 1;
	return 0;
}

static const char *
base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

static uint32_t
process_track(struct pf_tracks *tr, const struct tk_process *p)
{
	for (uint32_t i = 1; i < tr->n; i++) {
		const struct pf_track *t = &tr->t[i];
		if (t->kind == PT_PROCESS && t->os_pid == p->pid &&
		    strcmp(t->host, p->host) == 0 && strcmp(t->label, p->label) == 0 &&
		    (t->start == p->start || !t->start || !p->start))
			return i;
	}
	uint32_t i = new_track(tr, PT_PROCESS, 0,
	                       cmd_xstrdup(p->argc ? base_name(p->argv[0]) : "process"));
	struct pf_track *t = &tr->t[i];
	t->os_pid = p->pid;
	t->pid = p->pid >= 0 && p->pid < SYNTHETIC_PID && !pid_taken(tr, p->pid)
	         ? p->pid : tr->next_pid++;
	t->host = cmd_xstrdup(p->host);
	t->label = cmd_xstrdup(p->label);
	t->start = p->start;
	t->argc = p->argc;
	t->argv = cmd_xrealloc(NULL, (p->argc + 1) * sizeof(char *));
	for (uint32_t k = 0; k < p->argc; k++)
		t->argv[k] = cmd_xstrdup(p->argv[k]);
	return i;
}

/* The process track of .tkt track `id`, or 0. */
static uint32_t
owner(struct pf_tracks *tr, const struct tk_reader *r, uint32_t id)
{
	const struct tk_track *p = id ? tk_reader_track(r, id) : NULL;
	if (!p || p->type != TK_TRACK_PROCESS)
		return 0;
	return process_track(tr, &p->u.process);
}

static uint32_t
thread_track(struct pf_tracks *tr, uint32_t proc, const struct tk_thread *th)
{
	char *name = *th->name ? cmd_xstrdup(th->name) : fmtstr("thread %" PRId64, th->tid);
	for (uint32_t i = 1; i < tr->n; i++) {
		struct pf_track *t = &tr->t[i];
		if (t->kind == PT_THREAD && t->parent == proc && t->tid == th->tid) {
			if (*th->name) {
				free(t->name);
				t->name = name;
				t->announced = 0;  /* renamed: describe it again */
			} else {
				free(name);
			}
			return i;
		}
	}
	uint32_t i = new_track(tr, PT_THREAD, proc, name);
	tr->t[i].tid = th->tid;
	tr->t[i].pid = proc ? tr->t[proc].pid : 0;
	return i;
}

static uint32_t
gpu_track(struct pf_tracks *tr, const struct tk_device *d, const char *host)
{
	static const uint8_t zero[16];
	if (d && *d->host)
		host = d->host;
	uint32_t index = d ? d->index : UINT32_MAX;
	int has_uuid = d && memcmp(d->uuid, zero, 16) != 0;
	for (uint32_t i = 1; i < tr->n; i++) {
		const struct pf_track *t = &tr->t[i];
		if (t->kind == PT_GPU && t->dev_index == index && strcmp(t->host, host) == 0 &&
		    (!has_uuid || memcmp(t->uuid16, zero, 16) == 0 ||
		     memcmp(t->uuid16, d->uuid, 16) == 0))
			return i;
	}
	char *name = d ? fmtstr("GPU %u: %s", d->index, *d->name ? d->name : "unknown")
	               : cmd_xstrdup("GPU (unknown device)");
	char *h = cmd_xstrdup(host);  /* host may point into the array */
	uint32_t i = new_track(tr, PT_GPU, 0, name);
	struct pf_track *t = &tr->t[i];
	t->host = h;
	t->dev_index = index;
	if (d) {
		memcpy(t->uuid16, d->uuid, 16);
		t->unit = fmtstr("%s%scompute capability %u.%u, %u SMs, %" PRIu64 " bytes",
		                 h, *h ? ", " : "", d->cc_major, d->cc_minor,
		                 d->sm_count, d->memory);
	}
	return i;
}

static uint32_t
stream_track(struct pf_tracks *tr, uint32_t gpu, uint32_t proc, const struct tk_stream *s)
{
	for (uint32_t i = 1; i < tr->n; i++) {
		const struct pf_track *t = &tr->t[i];
		if (t->kind == PT_STREAM && t->parent == gpu && t->owner == proc &&
		    t->tid == (int64_t)s->stream && t->context == s->context)
			return i;
	}
	uint32_t others = 0;  /* streams of another process on this GPU */
	for (uint32_t i = 1; i < tr->n; i++)
		others += tr->t[i].kind == PT_STREAM && tr->t[i].parent == gpu &&
		          tr->t[i].owner != proc;
	char *name;
	if (others && proc)
		name = fmtstr("stream %" PRIu64 "%s%s%s pid %" PRId64, s->stream,
		              *s->name ? " (" : "", s->name, *s->name ? ")" : "",
		              tr->t[proc].os_pid);
	else
		name = fmtstr("stream %" PRIu64 "%s%s%s", s->stream,
		              *s->name ? " (" : "", s->name, *s->name ? ")" : "");
	uint32_t i = new_track(tr, PT_STREAM, gpu, name);
	struct pf_track *t = &tr->t[i];
	t->tid = (int64_t)s->stream;
	t->context = s->context;
	t->owner = proc;
	t->rank = s->stream > (1u << 30) ? (1 << 30) : (int64_t)s->stream;
	return i;
}

static uint32_t
counter_track(struct pf_tracks *tr, uint32_t parent, const struct tk_counter *c)
{
	for (uint32_t i = 1; i < tr->n; i++) {
		const struct pf_track *t = &tr->t[i];
		if (t->kind == PT_COUNTER && t->parent == parent &&
		    strcmp(t->name, c->name) == 0 && strcmp(t->unit, c->unit) == 0)
			return i;
	}
	uint32_t i = new_track(tr, PT_COUNTER, parent, cmd_xstrdup(c->name));
	tr->t[i].unit = cmd_xstrdup(c->unit);
	return i;
}

static uint32_t
other_track(struct pf_tracks *tr, uint32_t tk_id)
{
	return new_track(tr, PT_OTHER, 0, fmtstr("track %u", tk_id));
}

static void
resolve(struct pf_tracks *tr, const struct tk_reader *r, const struct tk_track *t,
        struct pf_tkmap *m)
{
	memset(m, 0, sizeof(*m));
	switch (t->type) {
	case TK_TRACK_PROCESS:
		m->track = m->process = process_track(tr, &t->u.process);
		break;
	case TK_TRACK_THREAD:
		m->process = owner(tr, r, t->u.thread.process);
		m->track = thread_track(tr, m->process, &t->u.thread);
		break;
	case TK_TRACK_STREAM: {
		const struct tk_stream *s = &t->u.stream;
		m->process = owner(tr, r, s->process);
		const struct tk_device *d = s->device ? tk_reader_device(r, s->device) : NULL;
		uint32_t gpu = gpu_track(tr, d, m->process ? tr->t[m->process].host : "");
		m->track = stream_track(tr, gpu, m->process, s);
		break;
	}
	case TK_TRACK_COUNTER: {
		const struct tk_counter *c = &t->u.counter;
		uint32_t parent = owner(tr, r, c->process);
		if (!parent && c->device) {
			const struct tk_device *d = tk_reader_device(r, c->device);
			if (d)
				parent = gpu_track(tr, d, "");
		}
		m->process = parent;
		m->track = counter_track(tr, parent, c);
		break;
	}
	default:
		m->track = other_track(tr, t->id);
		break;
	}
	m->resolved = 1;
}

const struct pf_tkmap *
pf_tracks_map(struct pf_tracks *tr, const struct tk_reader *r, const struct tk_track *t)
{
	if (t->id >= tr->nmap) {
		uint32_t n = tr->nmap ? tr->nmap : 64;
		while (n <= t->id)
			n *= 2;
		tr->map = cmd_xrealloc(tr->map, (size_t)n * sizeof(*tr->map));
		memset(tr->map + tr->nmap, 0, (size_t)(n - tr->nmap) * sizeof(*tr->map));
		tr->nmap = n;
	}
	struct pf_tkmap *m = &tr->map[t->id];
	if (!m->resolved)
		resolve(tr, r, t, m);
	return m;
}

uint32_t
pf_tracks_async(struct pf_tracks *tr, const struct tk_reader *r, const struct tk_track *t)
{
	pf_tracks_map(tr, r, t);
	struct pf_tkmap *m = &tr->map[t->id];
	if (m->async)
		return m->async;
	uint32_t proc = m->process;
	for (uint32_t i = 1; i < tr->n; i++)
		if (tr->t[i].kind == PT_ASYNC && tr->t[i].owner == proc && proc) {
			m->async = i;
			return i;
		}
	m->async = new_track(tr, PT_ASYNC, proc, cmd_xstrdup("async ranges"));
	tr->t[m->async].owner = proc;
	tr->t[m->async].rank = -1;
	return m->async;
}

uint32_t
pf_tracks_global(struct pf_tracks *tr)
{
	if (!tr->global)
		tr->global = new_track(tr, PT_OTHER, 0, cmd_xstrdup("global instants"));
	return tr->global;
}

/* ---- descriptors ----------------------------------------------------------- */

static void
process_fields(struct pbuf *b, const struct pf_track *t)
{
	size_t at = pb_open(b, TD_PROCESS);
	pb_int(b, 1, t->pid);
	for (uint32_t k = 0; k < t->argc; k++)
		pb_str(b, 2, t->argv[k]);
	if (t->pid != t->os_pid) {
		char *n = fmtstr("%s (pid %" PRId64 ")", t->name, t->os_pid);
		pb_str(b, 6, n);
		free(n);
	} else {
		pb_str(b, 6, t->name);
	}
	if (*t->label)
		pb_str(b, 8, t->label);
	if (*t->host)
		pb_str(b, 8, t->host);
	pb_close(b, at);
}

static void
descriptor(const struct pf_tracks *tr, const struct pf_track *t, struct pbuf *b)
{
	pb_uint(b, TD_UUID, t->uuid);
	if (t->parent)
		pb_uint(b, TD_PARENT, tr->t[t->parent].uuid);
	switch (t->kind) {
	case PT_PROCESS:
		process_fields(b, t);
		break;
	case PT_THREAD: {
		if (!t->parent) {  /* a thread of no known process */
			pb_str(b, TD_NAME, t->name);
			break;
		}
		size_t at = pb_open(b, TD_THREAD);
		pb_int(b, 1, t->pid);
		pb_int(b, 2, t->tid);
		pb_str(b, 5, t->name);
		pb_close(b, at);
		break;
	}
	case PT_GPU:
		pb_str(b, TD_NAME, t->name);
		if (t->unit)
			pb_str(b, TD_DESCRIPTION, t->unit);
		pb_uint(b, TD_CHILD_ORDERING, ORDER_EXPLICIT);
		break;
	case PT_COUNTER: {
		pb_str(b, TD_NAME, t->name);
		size_t at = pb_open(b, TD_COUNTER);
		if (strcmp(t->unit, "bytes") == 0)
			pb_uint(b, 3, 3);  /* UNIT_SIZE_BYTES */
		else if (*t->unit)
			pb_str(b, 6, t->unit);
		pb_close(b, at);
		break;
	}
	default:
		pb_str(b, TD_NAME, t->name);
		break;
	}
	if (t->kind == PT_STREAM || t->kind == PT_OVERFLOW || t->kind == PT_ASYNC)
		pb_int(b, TD_RANK, t->rank);
}

void
pf_tracks_announce(struct pf_tracks *tr, uint32_t i, unsigned file,
                   struct pbuf *out, uint32_t seq_id)
{
	struct pf_track *t = &tr->t[i];
	if (t->announced == file)
		return;
	if (t->parent)
		pf_tracks_announce(tr, t->parent, file, out, seq_id);
	t = &tr->t[i];
	t->announced = file;
	size_t pkt = pb_open(out, 1);
	pb_uint(out, 10, seq_id);  /* trusted_packet_sequence_id */
	size_t at = pb_open(out, 60);  /* track_descriptor */
	descriptor(tr, t, out);
	pb_close(out, at);
	pb_close(out, pkt);
}

/* ---- nesting ----------------------------------------------------------------- */

/* How many open slices of `t` stay under [b, e] if it goes there, or -1
 * when it cannot: it would overlap an open slice without nesting in it,
 * or it begins before the last slice placed. */
static int64_t
fit(const struct pf_track *t, int64_t b, int64_t e)
{
	if (b < t->last_begin)
		return -1;
	uint32_t d = t->depth;
	while (d && t->stack[d - 1].end <= b)
		d--;
	if (d && t->stack[d - 1].end < e)
		return -1;
	return d;
}

static void
push(struct pf_track *t, uint32_t depth, int64_t b, int64_t e)
{
	if (depth == t->cap) {
		uint32_t n = t->cap ? t->cap * 2 : 8;
		t->stack = cmd_xrealloc(t->stack, n * sizeof(*t->stack));
		t->cap = n;
	}
	t->stack[depth] = (struct pf_span){ b, e };
	t->depth = depth + 1;
	t->last_begin = b;
}

uint32_t
pf_tracks_place(struct pf_tracks *tr, uint32_t i, int64_t b, int64_t e,
                uint32_t *depth)
{
	uint32_t last = i;
	for (uint32_t k = i; k; k = tr->t[k].next_overflow) {
		int64_t d = fit(&tr->t[k], b, e);
		if (d >= 0) {
			push(&tr->t[k], (uint32_t)d, b, e);
			*depth = (uint32_t)d;
			tr->moved += k != i;
			return k;
		}
		last = k;
	}
	if (tr->t[i].noverflow >= tr->max_overflow)
		return 0;
	uint32_t n = ++tr->t[i].noverflow;
	char *name = fmtstr("%s (overlap %u)", tr->t[i].name, n);
	uint32_t parent = tr->t[i].parent ? tr->t[i].parent
	                : tr->t[i].kind == PT_PROCESS ? i : 0;
	uint32_t k = new_track(tr, PT_OVERFLOW, parent, name);
	tr->t[k].base = i;
	tr->t[k].rank = tr->t[i].rank;
	tr->t[last].next_overflow = k;
	tr->overflow_tracks++;
	tr->moved++;
	push(&tr->t[k], 0, b, e);
	*depth = 0;
	return k;
}
