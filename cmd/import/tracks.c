/* SPDX-License-Identifier: MIT */
/*
 * Chrome pids and tids to tracekit tracks.
 *
 * A Chrome pid is an OS process, or in GPU profilers a GPU lane whose
 * tids are CUDA streams (Kineto: pid = device index; trace-to-chrome: a
 * made-up pid named "GPU 0: NVIDIA H100").  GPU work says its device and
 * stream in its args, and goes to a stream track; the other events of a
 * lane known to be a GPU's go there too.  Everything else is a thread of
 * a process.
 *
 * A track's identity (pid, tid, device, stream) is fixed when it is
 * first used, because sorted runs written early carry it; its names can
 * come later (Kineto writes its metadata events last) and are applied
 * when the definitions are written.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "common/util.h"
#include "support.h"

/* Ids for pids and tids given as strings that are not numbers: above
 * any OS pid (2^22) and trace-to-chrome's made-up ids, so they cannot
 * collide with a real one. */
#define STRING_ID_BASE (INT64_C(1) << 32)

enum trk_type { T_PROCESS = 1, T_THREAD, T_STREAM, T_COUNTER };

struct imp_trk {
	uint8_t type;
	uint8_t used;
	uint8_t skip_repeats;    /* counters: a repeated value is not written */
	int64_t pid, tid;        /* Chrome ids: processes, threads; streams:
	                            where first seen (for the name) */
	uint32_t process;        /* index of the process track */
	uint32_t device;         /* device id: streams, counters */
	uint64_t stream, context;
	char *name, *unit;       /* counters */
};

/* Map keys: a tag and two integers. */
enum tag {
	K_PROCESS = 1,   /* pid -> track */
	K_THREAD,        /* pid, tid -> track */
	K_STREAM,        /* device index, stream -> track */
	K_LANE,          /* pid, tid -> stream track seen there */
	K_GPU_PID,       /* pid -> device index + 1 */
	K_DEVICE,        /* device index -> device id */
	K_PNAME,         /* pid -> name index */
	K_PLABEL,        /* pid -> name index */
	K_TNAME,         /* pid, tid -> name index */
	K_ALIAS,         /* pid, tid -> track */
	K_STRING,        /* string hash, n -> name index of a string id */
	K_STRID,         /* string id ordinal -> name index */
	K_COUNTER,       /* key hash, n -> track */
};

struct slot {
	uint64_t a, b;
	uint32_t tag;
	uint32_t val;        /* 0 = empty */
};

struct imp_tracks {
	struct imp_trk *trk;     /* index 0 unused */
	uint32_t ntrk;
	size_t captrk;
	struct tk_device *dev;   /* index 0 unused */
	uint32_t ndev;
	size_t capdev;
	struct slot *map;
	size_t mapcap, mapn;
	char **names;            /* index 0 unused */
	uint32_t nnames;
	size_t capnames;
	char *host;
	char *label;             /* of processes the trace labels not */
	uint32_t cpu_owner;      /* first process with a thread */
	uint32_t api_owner;      /* first process that called CUDA */
	uint32_t nstrids;        /* string ids handed out */
};

static void *
grow(void *items, size_t *cap, size_t need, size_t size)
{
	void *p = tkp_grow(items, cap, need, size);
	if (!p)
		cmd_die(EXIT_USAGE, "out of memory");
	return p;
}

struct imp_tracks *
imp_tracks_new(void)
{
	struct imp_tracks *t = calloc(1, sizeof(*t));
	if (!t)
		cmd_die(EXIT_USAGE, "out of memory");
	t->ntrk = t->ndev = t->nnames = 1;
	t->host = cmd_xstrdup("");
	return t;
}

void
imp_tracks_free(struct imp_tracks *t)
{
	if (!t)
		return;
	for (uint32_t i = 1; i < t->ntrk; i++) {
		free(t->trk[i].name);
		free(t->trk[i].unit);
	}
	for (uint32_t i = 1; i < t->ndev; i++) {
		free((char *)t->dev[i].name);
		free((char *)t->dev[i].host);
	}
	for (uint32_t i = 1; i < t->nnames; i++)
		free(t->names[i]);
	free(t->trk);
	free(t->dev);
	free(t->map);
	free(t->names);
	free(t->host);
	free(t->label);
	free(t);
}

/* ---- the map ---------------------------------------------------------------- */

/* Not tkp_hash_u64() nor tkp_hash() (hash_str): the slots' order is
 * seen outside.  imp_name_thread() walks the map for the base of an
 * overlap track, and when two threads of a process share its name the
 * first slot wins; other hashes would move some such tracks. */
static uint64_t
mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static size_t
slot_of(const struct imp_tracks *t, uint32_t tag, uint64_t a, uint64_t b)
{
	size_t mask = t->mapcap - 1;
	size_t i = (size_t)mix(a * 31 + mix(b) + tag) & mask;
	while (t->map[i].val &&
	       !(t->map[i].tag == tag && t->map[i].a == a && t->map[i].b == b))
		i = (i + 1) & mask;
	return i;
}

static uint32_t
get(const struct imp_tracks *t, uint32_t tag, uint64_t a, uint64_t b)
{
	if (!t->mapcap)
		return 0;
	return t->map[slot_of(t, tag, a, b)].val;
}

static void
put(struct imp_tracks *t, uint32_t tag, uint64_t a, uint64_t b, uint32_t val)
{
	if ((t->mapn + 1) * 2 > t->mapcap) {
		struct slot *old = t->map;
		size_t oldcap = t->mapcap;
		t->mapcap = oldcap ? oldcap * 2 : 256;
		t->map = calloc(t->mapcap, sizeof(*t->map));
		if (!t->map)
			cmd_die(EXIT_USAGE, "out of memory");
		for (size_t i = 0; i < oldcap; i++)
			if (old[i].val)
				t->map[slot_of(t, old[i].tag, old[i].a, old[i].b)] = old[i];
		free(old);
	}
	struct slot *s = &t->map[slot_of(t, tag, a, b)];
	if (!s->val)
		t->mapn++;
	*s = (struct slot){ a, b, tag, val };
}

static uint32_t
add_name(struct imp_tracks *t, const char *s)
{
	t->names = grow(t->names, &t->capnames, t->nnames + 1, sizeof(*t->names));
	t->names[t->nnames] = cmd_xstrdup(s);
	return t->nnames++;
}

static uint64_t
hash_str(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;   /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

/* Index of string s in names[] (added if new), found by its hash. */
static uint32_t
intern(struct imp_tracks *t, uint32_t tag, const char *s)
{
	size_t n = strlen(s);
	uint64_t h = hash_str(s, n);
	for (uint64_t k = 0;; k++) {
		uint32_t i = get(t, tag, h, k);
		if (!i)
			break;
		if (strcmp(t->names[i], s) == 0)
			return i;
	}
	uint32_t i = add_name(t, s);
	uint64_t k = 0;
	while (get(t, tag, h, k))
		k++;
	put(t, tag, h, k, i);
	return i;
}

/* ---- ids -------------------------------------------------------------------- */

int
imp_tracks_id(struct imp_tracks *t, json_t *v, struct imp_id *id, char *msg,
              size_t msgsz)
{
	id->str = NULL;
	id->v = 0;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v)) {
		id->v = json_integer_value(v);
		return 0;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);
		if (d > -9e18 && d < 9e18 && d == (double)(int64_t)d) {
			id->v = (int64_t)d;
			return 0;
		}
		snprintf(msg, msgsz, "is not an integer");
		return -1;
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		size_t n = json_string_length(v);
		if (imp_parse_i64(s, n, &id->v) == 0)
			return 0;   /* "25738": older Kineto writes tids as text */
		uint32_t i = intern(t, K_STRING, s);
		uint32_t ord = get(t, K_STRID, UINT64_MAX, i);
		if (!ord) {
			ord = ++t->nstrids;
			put(t, K_STRID, UINT64_MAX, i, ord);
			put(t, K_STRID, ord, 0, i);
		}
		id->v = STRING_ID_BASE + ord;
		id->str = t->names[i];
		return 0;
	}
	snprintf(msg, msgsz, "is not a number or a string");
	return -1;
}

void
imp_tracks_default_host(struct imp_tracks *t, const char *host)
{
	if (*t->host)
		return;
	free(t->host);
	t->host = cmd_xstrdup(host);
}

void
imp_tracks_set_host(struct imp_tracks *t, const char *host)
{
	if (t->ntrk > 1 || t->ndev > 1)
		return;  /* identities already written stay as they were */
	free(t->host);
	t->host = cmd_xstrdup(host);
}

void
imp_tracks_default_label(struct imp_tracks *t, const char *label)
{
	free(t->label);
	t->label = cmd_xstrdup(label);
}

/* ---- tracks ------------------------------------------------------------------- */

static uint32_t
new_track(struct imp_tracks *t, uint8_t type)
{
	t->trk = grow(t->trk, &t->captrk, (size_t)t->ntrk + 1, sizeof(*t->trk));
	uint32_t i = t->ntrk++;
	memset(&t->trk[i], 0, sizeof(t->trk[i]));
	t->trk[i].type = type;
	return i;
}

uint32_t
imp_process(struct imp_tracks *t, const struct imp_id *pid)
{
	uint32_t i = get(t, K_PROCESS, (uint64_t)pid->v, 0);
	if (i)
		return i;
	i = new_track(t, T_PROCESS);
	t->trk[i].pid = pid->v;
	put(t, K_PROCESS, (uint64_t)pid->v, 0, i);
	return i;
}

uint32_t
imp_thread(struct imp_tracks *t, const struct imp_id *pid, const struct imp_id *tid)
{
	uint32_t i = get(t, K_THREAD, (uint64_t)pid->v, (uint64_t)tid->v);
	if (i)
		return i;
	uint32_t p = imp_process(t, pid);
	if (!t->cpu_owner && !pid->str && !get(t, K_GPU_PID, (uint64_t)pid->v, 0))
		t->cpu_owner = p;
	i = new_track(t, T_THREAD);
	t->trk[i].pid = pid->v;
	t->trk[i].tid = tid->v;
	t->trk[i].process = p;
	put(t, K_THREAD, (uint64_t)pid->v, (uint64_t)tid->v, i);
	return i;
}

uint32_t
imp_device(struct imp_tracks *t, uint32_t index)
{
	uint32_t d = get(t, K_DEVICE, index, 0);
	if (d)
		return d;
	t->dev = grow(t->dev, &t->capdev, (size_t)t->ndev + 1, sizeof(*t->dev));
	d = t->ndev++;
	memset(&t->dev[d], 0, sizeof(t->dev[d]));
	t->dev[d].id = d;
	t->dev[d].index = index;
	t->dev[d].name = cmd_xstrdup("");
	t->dev[d].host = cmd_xstrdup(t->host);
	put(t, K_DEVICE, index, 0, d);
	return d;
}

struct tk_device *
imp_device_info(struct imp_tracks *t, uint32_t id)
{
	return id && id < t->ndev ? &t->dev[id] : NULL;
}

uint32_t
imp_stream(struct imp_tracks *t, uint32_t device_index, uint64_t stream,
           uint64_t context, const struct imp_id *pid, const struct imp_id *tid)
{
	uint32_t i = get(t, K_STREAM, device_index, stream);
	if (!i) {
		uint32_t d = imp_device(t, device_index);
		i = new_track(t, T_STREAM);
		struct imp_trk *k = &t->trk[i];
		k->device = d;
		k->stream = stream;
		k->context = context;
		k->pid = pid->v;
		k->tid = tid->v;
		put(t, K_STREAM, device_index, stream, i);
	}
	/* other events on this Chrome lane go to the stream as well */
	if (!get(t, K_LANE, (uint64_t)pid->v, (uint64_t)tid->v))
		put(t, K_LANE, (uint64_t)pid->v, (uint64_t)tid->v, i);
	if (!get(t, K_GPU_PID, (uint64_t)pid->v, 0) &&
	    !get(t, K_PROCESS, (uint64_t)pid->v, 0))
		put(t, K_GPU_PID, (uint64_t)pid->v, 0, device_index + 1);
	return i;
}

uint32_t
imp_counter(struct imp_tracks *t, const char *name, const char *unit,
            uint32_t process, uint32_t device)
{
	char key[64];
	snprintf(key, sizeof(key), "%u/%u/", process, device);
	size_t kn = strlen(key), nn = strlen(name), un = strlen(unit);
	uint64_t h = hash_str(key, kn) ^ mix(hash_str(name, nn)) ^
	             mix(hash_str(unit, un) + 1);
	for (uint64_t k = 0;; k++) {
		uint32_t i = get(t, K_COUNTER, h, k);
		if (!i)
			break;
		struct imp_trk *c = &t->trk[i];
		if (c->process == process && c->device == device &&
		    strcmp(c->name, name) == 0 && strcmp(c->unit, unit) == 0)
			return i;
	}
	uint32_t i = new_track(t, T_COUNTER);
	struct imp_trk *c = &t->trk[i];
	c->name = cmd_xstrdup(name);
	c->unit = cmd_xstrdup(unit);
	c->process = process;
	c->device = device;
	uint64_t k = 0;
	while (get(t, K_COUNTER, h, k))
		k++;
	put(t, K_COUNTER, h, k, i);
	return i;
}

uint32_t
imp_lane_track(struct imp_tracks *t, const struct imp_id *pid,
               const struct imp_id *tid)
{
	uint32_t i = get(t, K_THREAD, (uint64_t)pid->v, (uint64_t)tid->v);
	if (i)
		return i;
	if ((i = get(t, K_ALIAS, (uint64_t)pid->v, (uint64_t)tid->v)))
		return i;
	if ((i = get(t, K_LANE, (uint64_t)pid->v, (uint64_t)tid->v)))
		return i;
	uint32_t gpu = get(t, K_GPU_PID, (uint64_t)pid->v, 0);
	if (gpu) {
		/* a GPU lane's tids are streams; trace-to-chrome gives a
		 * stream id that is too large a made-up tid, and says the
		 * stream in the track's name */
		uint64_t stream = (uint64_t)tid->v;
		uint32_t n = get(t, K_TNAME, (uint64_t)pid->v, (uint64_t)tid->v);
		if (n && strncmp(t->names[n], "stream ", 7) == 0) {
			const char *d = t->names[n] + 7;
			uint64_t v;
			if (imp_parse_u64(d, strspn(d, "0123456789"), &v) == 0)
				stream = v;
		}
		return imp_stream(t, gpu - 1, stream, 0, pid, tid);
	}
	return imp_thread(t, pid, tid);
}

int64_t
imp_lane_device(struct imp_tracks *t, const struct imp_id *pid)
{
	uint32_t gpu = get(t, K_GPU_PID, (uint64_t)pid->v, 0);
	return gpu ? (int64_t)gpu - 1 : -1;
}

void
imp_cpu_process(struct imp_tracks *t, const struct imp_id *pid)
{
	if (!t->api_owner && !get(t, K_GPU_PID, (uint64_t)pid->v, 0) && !pid->str)
		t->api_owner = imp_process(t, pid);
}

void
imp_counter_skip_repeats(struct imp_tracks *t, uint32_t idx)
{
	if (idx && idx < t->ntrk)
		t->trk[idx].skip_repeats = 1;
}

int
imp_counter_skips_repeats(const struct imp_tracks *t, uint32_t idx)
{
	return idx && idx < t->ntrk && t->trk[idx].skip_repeats;
}

void
imp_track_used(struct imp_tracks *t, uint32_t idx)
{
	if (idx && idx < t->ntrk)
		t->trk[idx].used = 1;
}

int
imp_track_is_used(const struct imp_tracks *t, uint32_t idx)
{
	return idx && idx < t->ntrk && t->trk[idx].used;
}

uint32_t
imp_ntracks(const struct imp_tracks *t)
{
	return t->ntrk;
}

uint32_t
imp_ndevices(const struct imp_tracks *t)
{
	return t->ndev;
}

/* ---- metadata events ---------------------------------------------------------- */

/* Name `tag` (a, b): a metadata event repeated replaces the old name. */
static void
set_name(struct imp_tracks *t, uint32_t tag, int64_t a, int64_t b, const char *name)
{
	uint32_t i = get(t, tag, (uint64_t)a, (uint64_t)b);
	if (i) {
		if (strcmp(t->names[i], name) != 0) {
			free(t->names[i]);
			t->names[i] = cmd_xstrdup(name);
		}
		return;
	}
	put(t, tag, (uint64_t)a, (uint64_t)b, add_name(t, name));
}

/* "GPU 3" (Kineto's labels) or "GPU 3: NVIDIA A100" (trace-to-chrome's
 * names): the device index, or -1. */
static long
gpu_index(const char *s, const char **rest)
{
	if (strncmp(s, "GPU ", 4) != 0 || s[4] < '0' || s[4] > '9')
		return -1;
	char *end;
	long i = strtol(s + 4, &end, 10);
	if (i < 0 || i > 1 << 20)
		return -1;
	if (*end == 0) {
		*rest = end;
		return i;
	}
	if (end[0] == ':' && end[1] == ' ') {
		*rest = end + 2;
		return i;
	}
	return -1;
}

static void
mark_gpu_lane(struct imp_tracks *t, const struct imp_id *pid, long index)
{
	if (!get(t, K_GPU_PID, (uint64_t)pid->v, 0))
		put(t, K_GPU_PID, (uint64_t)pid->v, 0, (uint32_t)index + 1);
}

void
imp_name_process(struct imp_tracks *t, const struct imp_id *pid, const char *name)
{
	const char *rest;
	long gi = gpu_index(name, &rest);
	if (gi >= 0 && *rest) {
		/* trace-to-chrome names GPU lanes after their device */
		mark_gpu_lane(t, pid, gi);
		struct tk_device *d = imp_device_info(t, imp_device(t, (uint32_t)gi));
		if (!*d->name && strcmp(rest, "unknown") != 0) {
			free((char *)d->name);
			d->name = cmd_xstrdup(rest);
		}
		return;
	}
	set_name(t, K_PNAME, pid->v, 0, name);
}

void
imp_label_process(struct imp_tracks *t, const struct imp_id *pid, const char *labels)
{
	const char *rest;
	long gi = gpu_index(labels, &rest);
	if (gi >= 0 && !*rest) {
		mark_gpu_lane(t, pid, gi);   /* Kineto: "GPU 0" */
		return;
	}
	if (get(t, K_GPU_PID, (uint64_t)pid->v, 0))
		return;   /* trace-to-chrome: a GPU lane's labels are its host */
	if (strcmp(labels, "CPU") == 0)
		return;                      /* Kineto's, says nothing more */
	set_name(t, K_PLABEL, pid->v, 0, labels);
}

/* "base (overlap 2)": trace-to-chrome's extra track for slices that
 * overlapped those of `base`. */
static int
overlap_base(const char *name, size_t *base_len)
{
	const char *p = strstr(name, " (overlap ");
	if (!p)
		return 0;
	const char *q = p + 10;
	if (*q < '0' || *q > '9')
		return 0;
	while (*q >= '0' && *q <= '9')
		q++;
	if (strcmp(q, ")") != 0)
		return 0;
	*base_len = (size_t)(p - name);
	return 1;
}

void
imp_name_thread(struct imp_tracks *t, const struct imp_id *pid,
                const struct imp_id *tid, const char *name)
{
	size_t bl;
	if (overlap_base(name, &bl)) {
		/* find the base among the named threads of this pid */
		for (size_t i = 0; i < t->mapcap; i++) {
			const struct slot *s = &t->map[i];
			if (!s->val || s->tag != K_TNAME || s->a != (uint64_t)pid->v)
				continue;
			const char *n = t->names[s->val];
			if (strlen(n) == bl && strncmp(n, name, bl) == 0) {
				struct imp_id base = { (int64_t)s->b, NULL };
				put(t, K_ALIAS, (uint64_t)pid->v, (uint64_t)tid->v,
				    imp_lane_track(t, pid, &base));
				return;
			}
		}
	}
	if (strcmp(name, "process") == 0 && tid->v >= (INT64_C(1) << 22)) {
		/* trace-to-chrome's track for process-wide events */
		put(t, K_ALIAS, (uint64_t)pid->v, (uint64_t)tid->v, imp_process(t, pid));
		return;
	}
	set_name(t, K_TNAME, pid->v, tid->v, name);
}

/* ---- definitions ---------------------------------------------------------------- */

static const char *
name_of(const struct imp_tracks *t, uint32_t tag, int64_t a, int64_t b)
{
	uint32_t i = get(t, tag, (uint64_t)a, (uint64_t)b);
	return i ? t->names[i] : NULL;
}

/* The name a string id stood for, or NULL. */
static const char *
string_of(const struct imp_tracks *t, int64_t v)
{
	if (v <= STRING_ID_BASE || v - STRING_ID_BASE > t->nstrids)
		return NULL;
	return t->names[get(t, K_STRID, (uint64_t)(v - STRING_ID_BASE), 0)];
}

/* "stream 7", "stream 7 " (Kineto), "stream 7 (name)" (trace-to-chrome):
 * the part worth keeping as the stream's name. */
static const char *
stream_name(const char *n, uint64_t stream, char *buf, size_t bufsz)
{
	char pre[40];
	snprintf(pre, sizeof(pre), "stream %" PRIu64, stream);
	size_t pl = strlen(pre);
	if (strncmp(n, pre, pl) != 0)
		return n;
	const char *r = n + pl;
	while (*r == ' ')
		r++;
	if (!*r)
		return "";
	size_t rl = strlen(r);
	if (r[0] == '(' && r[rl - 1] == ')' && rl - 2 < bufsz) {
		memcpy(buf, r + 1, rl - 2);
		buf[rl - 2] = 0;
		return buf;
	}
	return n;
}

uint32_t
imp_define_device(struct imp_tracks *t, struct tk_writer *w, uint32_t id,
                  uint32_t *dmap)
{
	if (!id || id >= t->ndev)
		return 0;
	if (dmap[id])
		return dmap[id];
	struct tk_device d = t->dev[id];
	d.id = 0;
	return dmap[id] = tk_writer_device(w, 0, &d);
}

uint32_t
imp_define_track(struct imp_tracks *t, struct tk_writer *w, uint32_t idx,
                 uint32_t *map, uint32_t *dmap)
{
	if (!idx || idx >= t->ntrk)
		return 0;
	if (map[idx])
		return map[idx];
	struct imp_trk *k = &t->trk[idx];
	uint32_t proc = 0, id = 0;
	/* a stream belongs to the process that did CPU work: known by now
	 * (a Chrome trace does not say which process owns a GPU lane) */
	uint32_t owner = k->process;
	if (k->type == T_STREAM && !owner)
		owner = t->api_owner ? t->api_owner : t->cpu_owner;
	if (owner && !(proc = imp_define_track(t, w, owner, map, dmap)))
		return 0;
	switch (k->type) {
	case T_PROCESS: {
		const char *name = name_of(t, K_PNAME, k->pid, 0);
		if (!name)
			name = string_of(t, k->pid);
		const char *label = name_of(t, K_PLABEL, k->pid, 0);
		if (!label)
			label = t->label;
		const char *argv[1] = { name };
		struct tk_process p = {
			.host = t->host, .pid = k->pid, .argc = name ? 1 : 0,
			.argv = argv, .label = label ? label : "",
		};
		id = tk_writer_process(w, 0, &p);
		break;
	}
	case T_THREAD: {
		const char *name = name_of(t, K_TNAME, k->pid, k->tid);
		char dflt[40];
		snprintf(dflt, sizeof(dflt), "thread %" PRId64, k->tid);
		if (name && strcmp(name, dflt) == 0)
			name = NULL;   /* trace-to-chrome's name for no name */
		if (!name)
			name = string_of(t, k->tid);
		struct tk_thread th = { proc, k->tid, name ? name : "" };
		id = tk_writer_thread(w, 0, &th);
		break;
	}
	case T_STREAM: {
		uint32_t dev = imp_define_device(t, w, k->device, dmap);
		if (!dev)
			return 0;
		const char *name = name_of(t, K_TNAME, k->pid, k->tid);
		char buf[256];
		struct tk_stream s = {
			.process = proc, .device = dev, .context = k->context,
			.stream = k->stream,
			.name = name ? stream_name(name, k->stream, buf, sizeof(buf)) : "",
		};
		id = tk_writer_stream(w, 0, &s);
		break;
	}
	case T_COUNTER: {
		uint32_t dev = 0;
		if (k->device && !(dev = imp_define_device(t, w, k->device, dmap)))
			return 0;
		struct tk_counter c = { k->name, k->unit, proc, dev };
		id = tk_writer_counter(w, 0, &c);
		break;
	}
	}
	return map[idx] = id;
}
