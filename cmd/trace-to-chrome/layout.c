/* SPDX-License-Identifier: MIT */
/*
 * Lanes and tracks of trace-to-chrome, as GPU profilers lay them out:
 * one lane (Chrome pid) per OS process with its threads as tracks, one
 * lane per GPU device ("GPU 0: NVIDIA H100 80GB HBM3") with one track
 * per CUDA stream; CPU lanes sort first, GPU lanes after.
 *
 * Viewers require the complete events of one track to nest strictly:
 * Perfetto misplaces or hides overlapping ones, DevTools drops them.
 * Slices are placed here in begin order (reorder.c sees to
 * that); each track keeps the stack of slices still open.  A slice that
 * would overlap one of them without nesting goes to an extra track of
 * the same lane, "stream 7 (overlap 1)", created when first needed.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>

#include "chrome.h"
#include "common/util.h"

/* Linux pids and tids stay below 2^22: lanes and tracks that need a
 * made-up id get one from there up, so it cannot collide with a real
 * process or thread. */
#define SYNTHETIC_ID (INT64_C(1) << 22)

static char *
dupstr(const char *s)
{
	char *d = strdup(s ? s : "");
	if (!d)
		cmd_die(EXIT_USAGE, "out of memory");
	return d;
}

static char *
fmtstr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
fmtstr(const char *fmt, ...)
{
	struct sbuf b = { 0 };
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	sb_grow(&b, (size_t)(n > 0 ? n : 0) + 1);
	va_start(ap, fmt);
	vsnprintf(b.p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return b.p;
}

void
chrome_layout_init(struct chrome_layout *l)
{
	memset(l, 0, sizeof(*l));
	l->nlanes = l->ntracks = 1;  /* index 0 means "none" */
	l->lanes = chrome_grow(NULL, &l->caplanes, 1, sizeof(*l->lanes));
	l->tracks = chrome_grow(NULL, &l->captracks, 1, sizeof(*l->tracks));
	l->next_pid = SYNTHETIC_ID;
	l->max_overflow = 32;
}

static void
free_map(struct chrome_layout *l)
{
	for (uint32_t i = 0; i < l->nmap; i++) {
		free(l->map[i].counter_name);
		free(l->map[i].counter_key);
	}
	free(l->map);
	l->map = NULL;
	l->nmap = 0;
}

void
chrome_layout_free(struct chrome_layout *l)
{
	for (uint32_t i = 1; i < l->nlanes; i++) {
		free(l->lanes[i].name);
		free(l->lanes[i].labels);
		free(l->lanes[i].host);
		free(l->lanes[i].label);
		free(l->lanes[i].tracks);
	}
	for (uint32_t i = 1; i < l->ntracks; i++) {
		free(l->tracks[i].name);
		free(l->tracks[i].stack);
	}
	free(l->lanes);
	free(l->tracks);
	free_map(l);
	memset(l, 0, sizeof(*l));
}

void
chrome_layout_scope(struct chrome_layout *l)
{
	free_map(l);
	l->scope++;
}

void
chrome_layout_redefine(struct chrome_layout *l, uint32_t tk_id)
{
	if (tk_id < l->nmap)
		l->map[tk_id].resolved = 0;
}

/* ---- lanes ------------------------------------------------------------------ */

static int
pid_taken(const struct chrome_layout *l, int64_t pid)
{
	for (uint32_t i = 1; i < l->nlanes; i++)
		if (l->lanes[i].pid == pid)
			return 1;
	return 0;
}

static uint32_t
new_lane(struct chrome_layout *l, int kind, const char *host, int64_t want_pid)
{
	char *h = dupstr(host);  /* before the array moves: host may be in it */
	l->lanes = chrome_grow(l->lanes, &l->caplanes, (size_t)l->nlanes + 1,
	                       sizeof(*l->lanes));
	uint32_t i = l->nlanes++;
	struct chrome_lane *ln = &l->lanes[i];
	memset(ln, 0, sizeof(*ln));
	ln->kind = kind;
	ln->host = h;
	ln->labels = dupstr("");
	if (want_pid > 0 && want_pid < SYNTHETIC_ID && !pid_taken(l, want_pid)) {
		ln->pid = want_pid;
	} else {
		while (pid_taken(l, l->next_pid))
			l->next_pid++;
		ln->pid = l->next_pid++;
	}
	ln->next_tid = SYNTHETIC_ID;
	return i;
}

static const char *
base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

static uint32_t
process_lane(struct chrome_layout *l, const struct tk_process *p, uint32_t id)
{
	/* the same process in two inputs only when that is sure: same host,
	 * pid, start (and trace-merge's label) */
	int sure = *p->host && p->start;
	for (uint32_t i = 1; i < l->nlanes; i++) {
		struct chrome_lane *ln = &l->lanes[i];
		if (ln->kind == CL_PROCESS && ln->os_pid == p->pid &&
		    strcmp(ln->host, p->host) == 0 && strcmp(ln->label, p->label) == 0 &&
		    (sure ? !ln->only_scope : ln->only_scope == l->scope && ln->only_id == id))
			return i;
	}
	uint32_t i = new_lane(l, CL_PROCESS, p->host, p->pid);
	struct chrome_lane *ln = &l->lanes[i];
	ln->label = dupstr(p->label);
	if (!sure) {
		ln->only_scope = l->scope;
		ln->only_id = id;
	}
	ln->os_pid = p->pid;
	ln->name = dupstr(p->argc ? base_name(p->argv[0]) : "process");
	free(ln->labels);
	ln->labels = fmtstr("%s%s%s", p->label, *p->label && *p->host ? ", " : "",
	                    p->host);
	uint32_t ordinal = 0;
	for (uint32_t k = 1; k < i; k++)
		ordinal += l->lanes[k].kind == CL_PROCESS;
	ln->sort = ordinal;
	return i;
}

static uint32_t
gpu_lane(struct chrome_layout *l, const struct tk_device *d, const char *host)
{
	static const uint8_t zero[16];
	if (d && *d->host)
		host = d->host;
	char *h = dupstr(host);  /* host may point into the lanes array */
	host = h;
	uint32_t index = d ? d->index : UINT32_MAX;
	int has_uuid = d && memcmp(d->uuid, zero, 16) != 0;
	/* no UUID and no host: nothing proves it is a GPU of another input
	 * (GPU 0 of every imported rank): a lane of its own */
	int only = d && !has_uuid && !*host;
	uint32_t same_index = 0;
	for (uint32_t i = 1; i < l->nlanes; i++) {
		struct chrome_lane *ln = &l->lanes[i];
		if (ln->kind != CL_GPU || ln->dev_index != index)
			continue;
		same_index++;
		if (strcmp(ln->host, host) != 0)
			continue;
		if (only ? ln->only_scope != l->scope || ln->only_id != d->id
		         : ln->only_scope != 0)
			continue;
		if (!has_uuid || memcmp(ln->uuid, zero, 16) == 0 ||
		    memcmp(ln->uuid, d->uuid, 16) == 0) {
			free(h);
			return i;
		}
	}
	uint32_t i = new_lane(l, CL_GPU, host, 0);
	struct chrome_lane *ln = &l->lanes[i];
	ln->gpu = 1;
	ln->dev_index = index;
	if (only) {
		ln->only_scope = l->scope;
		ln->only_id = d->id;
	}
	if (d) {
		memcpy(ln->uuid, d->uuid, 16);
		ln->name = fmtstr("GPU %u: %s", d->index, *d->name ? d->name : "unknown");
	} else {
		ln->name = dupstr("GPU (unknown device)");
	}
	free(ln->labels);
	ln->labels = h;
	ln->sort = 1000000 + (int64_t)(index == UINT32_MAX ? 999 : index) * 100 +
	           same_index;
	return i;
}

static uint32_t
other_lane(struct chrome_layout *l)
{
	for (uint32_t i = 1; i < l->nlanes; i++)
		if (l->lanes[i].kind == CL_OTHER)
			return i;
	uint32_t i = new_lane(l, CL_OTHER, "", 0);
	l->lanes[i].name = dupstr("other tracks");
	l->lanes[i].sort = 2000000;
	return i;
}

/* ---- tracks ----------------------------------------------------------------- */

static int
tid_taken(const struct chrome_layout *l, const struct chrome_lane *ln, int64_t tid)
{
	for (uint32_t k = 0; k < ln->ntracks; k++)
		if (l->tracks[ln->tracks[k]].tid == tid)
			return 1;
	return 0;
}

static uint32_t
new_track(struct chrome_layout *l, uint32_t lane, int kind, int64_t want_tid,
          char *name, int64_t sort)
{
	l->tracks = chrome_grow(l->tracks, &l->captracks, (size_t)l->ntracks + 1,
	                        sizeof(*l->tracks));
	uint32_t i = l->ntracks++;
	struct chrome_lane *ln = &l->lanes[lane];
	struct chrome_track *t = &l->tracks[i];
	memset(t, 0, sizeof(*t));
	t->lane = lane;
	t->kind = kind;
	t->name = name;
	t->sort = sort;
	t->last_begin = INT64_MIN;
	if (want_tid >= 0 && want_tid < SYNTHETIC_ID && !tid_taken(l, ln, want_tid)) {
		t->tid = want_tid;
	} else {
		while (tid_taken(l, ln, ln->next_tid))
			ln->next_tid++;
		t->tid = ln->next_tid++;
	}
	ln->tracks = chrome_grow(ln->tracks, &ln->captracks,
	                         (size_t)ln->ntracks + 1, sizeof(*ln->tracks));
	ln->tracks[ln->ntracks++] = i;
	return i;
}

static uint32_t
process_track(struct chrome_layout *l, uint32_t lane)
{
	struct chrome_lane *ln = &l->lanes[lane];
	if (!ln->process_track)
		ln->process_track = new_track(l, lane, CT_PROCESS, -1,
		                              dupstr("process"), 0);
	return l->lanes[lane].process_track;
}

static void
rename_track(struct chrome_track *t, char *name)
{
	if (strcmp(t->name, name) == 0) {
		free(name);
		return;
	}
	free(t->name);
	t->name = name;
	t->announced = 0;  /* say the new name */
}

static uint32_t
thread_track(struct chrome_layout *l, uint32_t lane, const struct tk_thread *th)
{
	struct chrome_lane *ln = &l->lanes[lane];
	char *name = *th->name ? dupstr(th->name)
	                       : fmtstr("thread %" PRId64, th->tid);
	for (uint32_t k = 0; k < ln->ntracks; k++) {
		struct chrome_track *t = &l->tracks[ln->tracks[k]];
		if (t->kind == CT_THREAD && t->os_tid == th->tid) {
			rename_track(t, name);
			return ln->tracks[k];
		}
	}
	uint32_t threads = 0;
	for (uint32_t k = 0; k < ln->ntracks; k++)
		threads += l->tracks[ln->tracks[k]].kind == CT_THREAD;
	/* the main thread (tid == pid) first, then in order of appearance */
	int64_t sort = th->tid == ln->os_pid ? 256 : 512 + (int64_t)threads * 256;
	uint32_t i = new_track(l, lane, CT_THREAD, th->tid, name, sort);
	l->tracks[i].os_tid = th->tid;
	return i;
}

static uint32_t
stream_track(struct chrome_layout *l, uint32_t lane, uint32_t owner,
             const struct tk_stream *s)
{
	struct chrome_lane *ln = &l->lanes[lane];
	if (!ln->first_owner)
		ln->first_owner = owner;
	char *name;
	if (owner && owner != ln->first_owner)
		name = fmtstr("stream %" PRIu64 "%s%s%s pid %" PRId64, s->stream,
		              *s->name ? " (" : "", s->name, *s->name ? ")" : "",
		              l->lanes[owner].os_pid);
	else
		name = fmtstr("stream %" PRIu64 "%s%s%s", s->stream,
		              *s->name ? " (" : "", s->name, *s->name ? ")" : "");
	for (uint32_t k = 0; k < ln->ntracks; k++) {
		struct chrome_track *t = &l->tracks[ln->tracks[k]];
		if (t->kind == CT_STREAM && t->os_tid == (int64_t)s->stream &&
		    t->owner_lane == owner && t->context == s->context) {
			rename_track(t, name);
			return ln->tracks[k];
		}
	}
	int64_t sort = (int64_t)(s->stream > (1u << 30) ? (1u << 30) : s->stream) * 256;
	uint32_t i = new_track(l, lane, CT_STREAM, (int64_t)s->stream, name, sort);
	struct chrome_track *t = &l->tracks[i];
	t->os_tid = (int64_t)s->stream;
	t->owner_lane = owner;
	t->context = s->context;
	return i;
}

static uint32_t
other_track(struct chrome_layout *l, uint32_t tk_id)
{
	uint32_t lane = other_lane(l);
	struct chrome_lane *ln = &l->lanes[lane];
	for (uint32_t k = 0; k < ln->ntracks; k++) {
		struct chrome_track *t = &l->tracks[ln->tracks[k]];
		if (t->kind == CT_OTHER && t->os_tid == tk_id)
			return ln->tracks[k];
	}
	uint32_t i = new_track(l, lane, CT_OTHER, -1, fmtstr("track %u", tk_id),
	                       (int64_t)tk_id * 256);
	l->tracks[i].os_tid = tk_id;
	return i;
}

/* The lane of the process that track `id` names, or 0. */
static uint32_t
owner_lane(struct chrome_layout *l, const struct tk_reader *r, uint32_t id)
{
	const struct tk_track *p = id ? tk_reader_track(r, id) : NULL;
	if (!p || p->type != TK_TRACK_PROCESS)
		return 0;
	return process_lane(l, &p->u.process, p->id);
}

static void
resolve(struct chrome_layout *l, const struct tk_reader *r,
        const struct tk_track *t, struct chrome_tkmap *m)
{
	free(m->counter_name);
	free(m->counter_key);
	memset(m, 0, sizeof(*m));
	switch (t->type) {
	case TK_TRACK_PROCESS:
		m->lane = process_lane(l, &t->u.process, t->id);
		m->ctrack = process_track(l, m->lane);
		break;
	case TK_TRACK_THREAD: {
		uint32_t lane = owner_lane(l, r, t->u.thread.process);
		if (!lane)
			lane = other_lane(l);
		m->lane = lane;
		m->ctrack = thread_track(l, lane, &t->u.thread);
		break;
	}
	case TK_TRACK_STREAM: {
		const struct tk_stream *s = &t->u.stream;
		uint32_t owner = owner_lane(l, r, s->process);
		const struct tk_device *d = s->device ? tk_reader_device(r, s->device) : NULL;
		m->lane = gpu_lane(l, d, owner ? l->lanes[owner].host : "");
		m->ctrack = stream_track(l, m->lane, owner, s);
		break;
	}
	case TK_TRACK_COUNTER: {
		const struct tk_counter *c = &t->u.counter;
		uint32_t lane = owner_lane(l, r, c->process);
		if (!lane && c->device) {
			const struct tk_device *d = tk_reader_device(r, c->device);
			if (d)
				lane = gpu_lane(l, d, "");
		}
		m->lane = lane ? lane : other_lane(l);
		struct sbuf b = { 0 };
		chrome_escape(&b, c->name, strlen(c->name));
		sb_ch(&b, 0);
		m->counter_name = b.p;
		b = (struct sbuf){ 0 };
		const char *key = *c->unit ? c->unit : "value";
		chrome_escape(&b, key, strlen(key));
		sb_ch(&b, 0);
		m->counter_key = b.p;
		/* other events on a counter track (not samples) go here; a
		 * track is only shown once something is written on it */
		m->ctrack = other_track(l, t->id);
		break;
	}
	default:
		m->ctrack = other_track(l, t->id);
		m->lane = l->tracks[m->ctrack].lane;
		break;
	}
	m->resolved = 1;
}

const struct chrome_tkmap *
chrome_layout_map(struct chrome_layout *l, const struct tk_reader *r,
                  const struct tk_track *t)
{
	if (t->id >= l->nmap)
		l->map = chrome_grow(l->map, &l->nmap, (size_t)t->id + 1,
		                     sizeof(*l->map));
	struct chrome_tkmap *m = &l->map[t->id];
	if (!m->resolved)
		resolve(l, r, t, m);
	return m;
}

/* ---- metadata events ---------------------------------------------------------- */

static void
meta_head(struct sbuf *out, int *first, const char *what, int64_t pid, int64_t tid)
{
	if (!*first)
		sb_ch(out, ',');
	*first = 0;
	sb_lit(out, "\n{\"ph\":\"M\",\"name\":\"");
	sb_mem(out, what, strlen(what));
	sb_lit(out, "\",\"pid\":");
	sb_i64(out, pid);
	sb_lit(out, ",\"tid\":");
	sb_i64(out, tid);
	sb_lit(out, ",\"args\":{");
}

void
chrome_layout_announce_lane(struct chrome_layout *l, struct sbuf *out,
                            uint32_t lane, int *first)
{
	struct chrome_lane *ln = &l->lanes[lane];
	if (!ln->announced) {
		ln->announced = 1;
		meta_head(out, first, "process_name", ln->pid, 0);
		sb_lit(out, "\"name\":");
		chrome_escape(out, ln->name, strlen(ln->name));
		sb_lit(out, "}}");
		meta_head(out, first, "process_sort_index", ln->pid, 0);
		sb_lit(out, "\"sort_index\":");
		sb_i64(out, ln->sort);
		sb_lit(out, "}}");
		if (*ln->labels) {
			meta_head(out, first, "process_labels", ln->pid, 0);
			sb_lit(out, "\"labels\":");
			chrome_escape(out, ln->labels, strlen(ln->labels));
			sb_lit(out, "}}");
		}
	}
}

void
chrome_layout_announce(struct chrome_layout *l, struct sbuf *out,
                       uint32_t ctrack, int *first)
{
	struct chrome_track *t = &l->tracks[ctrack];
	struct chrome_lane *ln = &l->lanes[t->lane];
	chrome_layout_announce_lane(l, out, t->lane, first);
	if (!t->announced) {
		t->announced = 1;
		meta_head(out, first, "thread_name", ln->pid, t->tid);
		sb_lit(out, "\"name\":");
		chrome_escape(out, t->name, strlen(t->name));
		sb_lit(out, "}}");
		meta_head(out, first, "thread_sort_index", ln->pid, t->tid);
		sb_lit(out, "\"sort_index\":");
		sb_i64(out, t->sort);
		sb_lit(out, "}}");
	}
}

/* ---- nesting -------------------------------------------------------------------- */

/* How many open slices of `t` stay under [b, e] if it goes there, or -1
 * when it cannot: it would overlap an open slice without nesting in it,
 * or it begins before the last slice placed, so that slices it may
 * overlap are already forgotten. */
static int64_t
fit(const struct chrome_track *t, int64_t b, int64_t e)
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
push(struct chrome_track *t, uint32_t depth, int64_t b, int64_t e)
{
	if (depth == t->cap)
		t->stack = chrome_grow(t->stack, &t->cap, (size_t)depth + 1,
		                       sizeof(*t->stack));
	t->stack[depth] = (struct chrome_span){ b, e };
	t->depth = depth + 1;
	t->last_begin = b;
}

uint32_t
chrome_layout_place(struct chrome_layout *l, uint32_t ctrack, int64_t b,
                    int64_t e)
{
	uint32_t last = ctrack;
	for (uint32_t i = ctrack; i; i = l->tracks[i].next_overflow) {
		int64_t d = fit(&l->tracks[i], b, e);
		if (d >= 0) {
			push(&l->tracks[i], (uint32_t)d, b, e);
			if (i != ctrack)
				l->moved++;
			return i;
		}
		last = i;
	}
	struct chrome_track *base = &l->tracks[ctrack];
	if (base->noverflow >= l->max_overflow)
		return 0;
	uint32_t k = ++base->noverflow;
	char *name = fmtstr("%s (overlap %u)", base->name, k);
	uint32_t i = new_track(l, base->lane, CT_OVERFLOW, -1, name, base->sort + k);
	/* new_track may have moved the array */
	l->tracks[i].base = ctrack;
	l->tracks[last].next_overflow = i;
	l->overflow_tracks++;
	l->moved++;
	push(&l->tracks[i], 0, b, e);
	return i;
}

uint32_t
chrome_layout_enclosing(struct chrome_layout *l, uint32_t ctrack, int64_t ts)
{
	for (uint32_t i = ctrack; i; i = l->tracks[i].next_overflow) {
		const struct chrome_track *t = &l->tracks[i];
		for (uint32_t d = t->depth; d; d--)
			if (t->stack[d - 1].begin <= ts && ts <= t->stack[d - 1].end)
				return i;
	}
	return ctrack;
}
