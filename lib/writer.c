/* SPDX-License-Identifier: MIT */
/*
 * The writer: events go into per-field columns; when a chunk is big
 * enough it is sealed (definitions first, then columns) and handed to
 * the sealer (sealer.c), which compresses it whole with libdeflate into
 * a zlib stream, checksums and writes it.  The writer never seeks, so it
 * works on pipes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "args_template.h"
#include "intern.h"
#include "sealer.h"
#include "tk_private.h"

/* One column of the chunk being built.  The common columns keep 64-bit
 * values, already transformed (zigzag, differences), encoded as byte
 * planes when the chunk is sealed.  The args column keeps
 * length-prefixed bytes; its leading empty values are only counted, so
 * that it costs nothing when no event has args. */
struct column {
	uint64_t *v;
	uint32_t n, cap;
	uint64_t lo, hi;         /* of the values after the first */
	uint32_t zeros;
	uint8_t nonzero;
	struct tkp_buf bytes;
};

/* The events of one kind in the chunk being built: copies of their
 * attribute structs (the kind's member of tk_event.u), turned into
 * columns only when the chunk is sealed, column by column. */
struct per_kind {
	uint8_t *attrs;
	uint32_t *tracks;        /* the track of each, for per-track deltas */
	uint32_t cap;
	uint64_t *scratch;       /* one column at seal time */
	uint32_t scratch_cap;
	struct column args;
};

/* Recently seen launch configurations, so that most kernels need no
 * hashing. */
#define CONFIG_CACHE 64
struct config_cache {
	uint32_t v[12];
	uint32_t id;
};

#define CHUNK_EVENTS_MAX (1u << 20)
/* More compressing threads than this are not started (tk_writer_options). */
#define WRITER_THREADS_MAX 64u
#define UNION_SIZE sizeof(((struct tk_event *)0)->u)

struct tk_writer {
	int fd;
	int own_fd;
	/* where the bytes go instead of fd, when set (tkp_writer_set_sink) */
	int (*sink)(void *arg, const void *p, size_t n);
	void *sink_arg;
	char *name;
	struct tk_writer_options opt;
	int open;
	struct tkp_error error;  /* failures are sticky, rejected calls not */
	uint64_t header_bytes;   /* put before the chunks: the header */
	uint64_t events;
	struct tkp_sealer sealer; /* zeroed (idle) until the first open */

	struct tkp_intern strings;
	struct tkp_intern configs;
	uint32_t ntracks;
	uint8_t *track_type;     /* by track id */
	uint32_t *track_proc;    /* by track id: its process's track id, or 0 */
	size_t track_cap;
	uint32_t ndevices;

	/* the chunk being built */
	struct tkp_buf defs;
	struct tkp_buf kinds;
	struct column common[TKP_COL_NAME + 1];
	struct per_kind per_kind[TK_KIND_MAX + 1];
	uint32_t kind_count[TK_KIND_MAX + 1];
	struct config_cache config_cache[CONFIG_CACHE];
	/* the chunk's payload is built here (see build_payload) */
	struct tkp_buf columns;
	uint32_t nev;
	size_t raw_bytes;
	int64_t t_min, t_max, first_ts, prev_ts;
	int chunk_sorted;
	/* per track: time the next event on it is predicted from */
	int64_t *pred;
	uint32_t *pred_gen;
	size_t pred_cap;
	uint32_t gen;
	/* per track: previous value of the D column being built */
	uint64_t *dprev;
	uint32_t *dprev_gen;
	size_t dprev_cap;
	uint32_t dgen;

	int64_t watermark;
	int64_t sealed_watermark; /* of the last chunk written */
	int64_t last_ts;         /* sorted writers: last begin written */
	struct tkp_buf payload;
	struct tkp_buf scratch;

	/* args as templates and numbers (see put_args) */
	struct tkp_args_encoder args_enc;
	struct tkp_buf args_templates, args_numbers;
	int args_templated;      /* some kind's are, in this chunk */

	/* a chunk of several processes, stored grouped (see plan_groups) */
	int grouped;
	uint32_t *order;         /* stored position -> event index */
	uint32_t *kperm;         /* per kind, from kind_start: stored -> kind index */
	uint32_t *kidx;          /* by event: its index among its kind's */
	uint64_t *pvals;         /* a numeric column in stored order */
	size_t order_cap;
	uint32_t kind_start[TK_KIND_MAX + 1];
	uint32_t *seen_track;    /* by track id: stamped when seen in the chunk */
	uint32_t *seen_proc;     /* by process track id: stamped when seen */
	uint32_t *group;         /* by process track id: its group, once stamped */
	uint32_t *group_count;   /* by group: its events */
	size_t seen_cap;
	uint32_t seen_gen;
	struct tkp_buf groups;   /* the chunk's GROUPS column */
	struct tkp_buf permuted; /* a byte column in stored order */
	struct tkp_buf pattrs;   /* a kind's attribute structs in stored order */
	uint32_t *ptracks;       /* and their tracks */
};

/* A failure: the writer is unusable until reopened. */
#define fail(w, code, errnum, ...) \
	tkp_error_set(&(w)->error, (code), (errnum), __VA_ARGS__)

/* A bad call: say why, but the writer stays usable. */
#define reject(w, ...) \
	tkp_error_reject(&(w)->error, TK_EINVAL, EINVAL, __VA_ARGS__)

static int
nomem(struct tk_writer *w)
{
	return fail(w, TK_ENOMEM, ENOMEM, "out of memory");
}

/* The sealer's failure, an errno value: ENOMEM is its own buffer that
 * could not grow, told as every other allocation failure is; anything
 * else is the output's. */
static int
sealer_fail(struct tk_writer *w, int e)
{
	if (e == ENOMEM)
		return nomem(w);
	return fail(w, TK_EIO, e, "%s", strerror(e));
}

TK_PUBLIC struct tk_writer *
tk_writer_new(void)
{
	struct tk_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->fd = -1;
	return w;
}

static void
reset_scope(struct tk_writer *w)
{
	tkp_intern_clear(&w->strings);
	tkp_intern_clear(&w->configs);
	memset(w->config_cache, 0, sizeof(w->config_cache));
	w->ntracks = 0;
	w->ndevices = 0;
}

static void
close_fd(struct tk_writer *w)
{
	if (w->own_fd && w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	w->own_fd = 0;
}

TK_PUBLIC void
tk_writer_free(struct tk_writer *w)
{
	if (!w)
		return;
	/* the sealer first: its thread may still be putting a chunk */
	tkp_sealer_free(&w->sealer);
	close_fd(w);
	free(w->name);
	tkp_intern_free(&w->strings);
	tkp_intern_free(&w->configs);
	free(w->track_type);
	free(w->track_proc);
	free(w->order);
	free(w->kperm);
	free(w->kidx);
	free(w->pvals);
	free(w->seen_track);
	free(w->seen_proc);
	free(w->group);
	free(w->group_count);
	tkp_buf_free(&w->groups);
	tkp_buf_free(&w->permuted);
	tkp_buf_free(&w->pattrs);
	free(w->ptracks);
	tkp_buf_free(&w->defs);
	tkp_buf_free(&w->kinds);
	for (unsigned i = 0; i <= TKP_COL_NAME; i++)
		free(w->common[i].v);
	for (unsigned k = 0; k <= TK_KIND_MAX; k++) {
		free(w->per_kind[k].attrs);
		free(w->per_kind[k].tracks);
		free(w->per_kind[k].scratch);
		tkp_buf_free(&w->per_kind[k].args.bytes);
	}
	tkp_buf_free(&w->columns);
	free(w->pred);
	free(w->pred_gen);
	free(w->dprev);
	free(w->dprev_gen);
	tkp_buf_free(&w->payload);
	tkp_args_encoder_free(&w->args_enc);
	tkp_buf_free(&w->args_templates);
	tkp_buf_free(&w->args_numbers);
	tkp_buf_free(&w->scratch);
	free(w);
}

static void
reset_chunk(struct tk_writer *w)
{
	w->defs.len = 0;
	w->kinds.len = 0;
	for (unsigned i = 0; i <= TKP_COL_NAME; i++) {
		w->common[i].n = 0;
		w->common[i].lo = UINT64_MAX;
		w->common[i].hi = 0;
	}
	for (unsigned k = 1; k <= TK_KIND_MAX; k++) {
		struct column *c = &w->per_kind[k].args;
		c->bytes.len = 0;
		c->zeros = 0;
		c->nonzero = 0;
		w->kind_count[k] = 0;
	}
	w->nev = 0;
	w->grouped = 0;
	w->args_templated = 0;
	w->raw_bytes = 0;
	w->t_min = INT64_MAX;
	w->t_max = INT64_MIN;
	w->chunk_sorted = 1;
	w->gen++;
	if (w->gen == 0) { /* wrapped: forget every stamp */
		if (w->pred_gen)
			memset(w->pred_gen, 0, w->pred_cap * sizeof(*w->pred_gen));
		w->gen = 1;
	}
}

/* Where the bytes go; a threaded sealer calls it from its thread. */
static int
put(void *arg, const void *p, size_t n)
{
	struct tk_writer *w = arg;
	return w->sink ? w->sink(w->sink_arg, p, n) : tkp_write_all(w->fd, p, n);
}

static int
write_header(struct tk_writer *w)
{
	/* no feature flags yet, compatible or not */
	const struct tkp_file_header fh = {
		.major = TK_FORMAT_MAJOR, .minor = TK_FORMAT_MINOR,
	};
	uint8_t h[TKP_HEADER_SIZE];
	tkp_file_header_encode(h, &fh);
	if (put(w, h, sizeof(h)) < 0)
		return fail(w, TK_EIO, errno, "%s", strerror(errno));
	w->header_bytes += sizeof(h);
	return TK_OK;
}

TK_PUBLIC int
tk_writer_open_fd(struct tk_writer *w, int fd, const char *name,
                  const struct tk_writer_options *opts)
{
	static const struct tk_writer_options defaults = TK_WRITER_OPTIONS_INIT;
	if (!w || fd < 0)
		return TK_EINVAL;
	if (w->open)
		tk_writer_close(w);
	tkp_error_clear(&w->error);
	close_fd(w);
	free(w->name);
	w->name = strdup(name ? name : "(output)");
	if (!w->name)
		return nomem(w);
	w->opt = opts ? *opts : defaults;
	if (w->opt.level < 0 || w->opt.level > 12)
		return fail(w, TK_EINVAL, EINVAL, "invalid compression level %d",
		            w->opt.level);
	if (w->opt.chunk_bytes < 1024)
		w->opt.chunk_bytes = 1024;
	if (w->opt.chunk_bytes > TKP_CHUNK_RAW_MAX / 4)
		w->opt.chunk_bytes = TKP_CHUNK_RAW_MAX / 4;
	if (w->opt.threads < 0)
		return fail(w, TK_EINVAL, EINVAL, "invalid thread count %d",
		            w->opt.threads);
	/* each thread holds a chunk and a compressor: a few MiB */
	unsigned threads = (unsigned)w->opt.threads > WRITER_THREADS_MAX ? WRITER_THREADS_MAX
	                                                      : (unsigned)w->opt.threads;
	tkp_sealer_free(&w->sealer);
	if (tkp_sealer_init(&w->sealer, w->opt.level, threads, put, w))
		return nomem(w);
	w->fd = fd;
	w->sink = NULL;
	w->sink_arg = NULL;
	w->header_bytes = 0;
	w->events = 0;
	w->watermark = INT64_MIN;
	w->sealed_watermark = INT64_MIN;
	w->last_ts = INT64_MIN;
	reset_scope(w);
	reset_chunk(w);
	int rc = write_header(w);
	if (rc == TK_OK)
		w->open = 1;
	return rc;
}

TK_PUBLIC int
tk_writer_open_path(struct tk_writer *w, const char *path,
                    const struct tk_writer_options *opts)
{
	if (!w || !path)
		return TK_EINVAL;
	if (strcmp(path, "-") == 0)
		return tk_writer_open_fd(w, STDOUT_FILENO, "(stdout)", opts);
	tkp_error_clear(&w->error);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		int e = errno;
		return fail(w, TK_EIO, e, "%s", strerror(e));
	}
	int rc = tk_writer_open_fd(w, fd, path, opts);
	if (rc != TK_OK && w->fd != fd) {
		close(fd); /* refused before taking it (a bad option) */
		return rc;
	}
	w->own_fd = 1;
	if (rc != TK_OK)
		close_fd(w);
	return rc;
}

/* ---- definitions ----------------------------------------------------------- */

static int
check_open(struct tk_writer *w)
{
	if (!w->open && !w->error.code)
		return fail(w, TK_EINVAL, EINVAL, "writer is not open");
	return w->error.code;
}

/* Append a definition record (type, length, body) to the chunk. */
static int
put_def(struct tk_writer *w, unsigned type, const struct tkp_buf *body)
{
	if (tkp_buf_varint(&w->defs, type) < 0 ||
	    tkp_buf_varint(&w->defs, body->len) < 0 ||
	    tkp_buf_put(&w->defs, body->p, body->len) < 0)
		return nomem(w);
	w->raw_bytes += body->len + 4;
	return TK_OK;
}

static int seal(struct tk_writer *w);

/* Definitions alone may fill a chunk (a trace of many unique names). */
static int
maybe_seal(struct tk_writer *w)
{
	if (w->raw_bytes >= w->opt.chunk_bytes)
		return seal(w);
	return TK_OK;
}

/* Intern without sealing: inside tk_writer_event() a seal would split
 * one event across two chunks. */
static uint32_t
intern_string(struct tk_writer *w, const char *s, size_t len)
{
	/* a rejected call says why, as every other one does */
	if (w->opt.raw_ids) {
		reject(w, "no strings in a raw-id writer");
		return 0;
	}
	if (!s && len) {
		reject(w, "no bytes for a string of %zu", len);
		return 0;
	}
	if (len > TKP_CHUNK_RAW_MAX / 8) {
		reject(w, "string of %zu bytes is too long", len);
		return 0;
	}
	int added = 0;
	uint32_t id = tkp_intern(&w->strings, s ? s : "", len, &added);
	if (!id) {
		nomem(w);
		return 0;
	}
	if (added) {
		w->scratch.len = 0;
		if (tkp_buf_varint(&w->scratch, id) < 0 ||
		    tkp_buf_put(&w->scratch, s, len) < 0) {
			nomem(w);
			return 0;
		}
		if (put_def(w, TKP_DEF_STRING, &w->scratch))
			return 0;
	}
	return id;
}

TK_PUBLIC uint32_t
tk_writer_string(struct tk_writer *w, const char *s, size_t len)
{
	if (!w || check_open(w))
		return 0;
	uint32_t id = intern_string(w, s, len);
	if (id && maybe_seal(w))
		return 0;
	return id;
}

TK_PUBLIC uint32_t
tk_writer_cstring(struct tk_writer *w, const char *s)
{
	return tk_writer_string(w, s ? s : "", s ? strlen(s) : 0);
}

/* String id of an optional C string; "" and NULL are id of "". */
static int
str_id(struct tk_writer *w, const char *s, uint32_t *id)
{
	*id = tk_writer_cstring(w, s);
	return *id ? TK_OK : (w->error.code ? w->error.code : TK_EINVAL);
}

/* A new track (id 0) or a redefinition; `process` is the track id of
 * the process it belongs to (for a process, 0: itself). */
static uint32_t
new_track(struct tk_writer *w, uint32_t id, enum tk_track_type type,
          uint32_t process)
{
	if (check_open(w))
		return 0;
	if (w->opt.raw_ids) {
		reject(w, "no definitions in a raw-id writer");
		return 0;
	}
	if (id) {
		if (id > w->ntracks || w->track_type[id] != type) {
			reject(w, "no track %u of that type", id);
			return 0;
		}
		w->track_proc[id] = type == TK_TRACK_PROCESS ? id : process;
		return id;
	}
	if (w->ntracks + 1 >= TKP_ID_MAX) {
		fail(w, TK_EINVAL, EINVAL, "too many tracks");
		return 0;
	}
	id = ++w->ntracks;
	if (id >= w->track_cap) {
		size_t old = w->track_cap, cap = old;
		if (tkp_grow_shared(&w->track_type, old, (size_t)id + 1,
		                    sizeof(*w->track_type), &cap) ||
		    tkp_grow_shared(&w->track_proc, old, (size_t)id + 1,
		                    sizeof(*w->track_proc), &cap)) {
			nomem(w);
			return 0;
		}
		w->track_cap = cap;
	}
	w->track_type[id] = (uint8_t)type;
	w->track_proc[id] = type == TK_TRACK_PROCESS ? id : process;
	return id;
}

#define PUT(v) do { if (tkp_buf_varint(b, (v)) < 0) goto oom; } while (0)

TK_PUBLIC uint32_t
tk_writer_process(struct tk_writer *w, uint32_t id, const struct tk_process *p)
{
	if (!w || !p)
		return 0;
	uint32_t host, label;
	if (str_id(w, p->host, &host) || str_id(w, p->label, &label))
		return 0;
	/* argv strings first: the reader resolves ids as it goes */
	uint32_t small[16], *args = small;
	if (p->argc > 16 && !(args = malloc(p->argc * sizeof(*args)))) {
		nomem(w);
		return 0;
	}
	for (uint32_t i = 0; i < p->argc; i++)
		if (str_id(w, p->argv[i], &args[i]))
			goto out;
	if (!(id = new_track(w, id, TK_TRACK_PROCESS, 0)))
		goto out;
	struct tkp_buf *b = &w->scratch;
	b->len = 0;
	PUT(id);
	PUT(host);
	PUT(tkp_zigzag(p->pid));
	PUT(tkp_zigzag(p->ppid));
	PUT(tkp_zigzag(p->start));
	PUT(label);
	PUT(p->argc);
	for (uint32_t i = 0; i < p->argc; i++)
		PUT(args[i]);
	if (put_def(w, TKP_DEF_PROCESS, b) || maybe_seal(w))
		id = 0;
	goto out;
oom:
	nomem(w);
	id = 0;
out:
	if (args != small)
		free(args);
	return id;
}

TK_PUBLIC uint32_t
tk_writer_thread(struct tk_writer *w, uint32_t id, const struct tk_thread *t)
{
	uint32_t name;
	if (!w || !t || str_id(w, t->name, &name))
		return 0;
	if (!(id = new_track(w, id, TK_TRACK_THREAD, t->process)))
		return 0;
	struct tkp_buf *b = &w->scratch;
	b->len = 0;
	PUT(id);
	PUT(t->process);
	PUT(tkp_zigzag(t->tid));
	PUT(name);
	return put_def(w, TKP_DEF_THREAD, b) || maybe_seal(w) ? 0 : id;
oom:
	nomem(w);
	return 0;
}

TK_PUBLIC uint32_t
tk_writer_stream(struct tk_writer *w, uint32_t id, const struct tk_stream *s)
{
	uint32_t name;
	if (!w || !s || str_id(w, s->name, &name))
		return 0;
	if (!(id = new_track(w, id, TK_TRACK_STREAM, s->process)))
		return 0;
	struct tkp_buf *b = &w->scratch;
	b->len = 0;
	PUT(id);
	PUT(s->process);
	PUT(s->device);
	PUT(s->context);
	PUT(s->stream);
	PUT(name);
	return put_def(w, TKP_DEF_STREAM, b) || maybe_seal(w) ? 0 : id;
oom:
	nomem(w);
	return 0;
}

TK_PUBLIC uint32_t
tk_writer_counter(struct tk_writer *w, uint32_t id, const struct tk_counter *c)
{
	uint32_t name, unit;
	if (!w || !c || str_id(w, c->name, &name) || str_id(w, c->unit, &unit))
		return 0;
	if (!(id = new_track(w, id, TK_TRACK_COUNTER, c->process)))
		return 0;
	struct tkp_buf *b = &w->scratch;
	b->len = 0;
	PUT(id);
	PUT(name);
	PUT(unit);
	PUT(c->process);
	PUT(c->device);
	return put_def(w, TKP_DEF_COUNTER, b) || maybe_seal(w) ? 0 : id;
oom:
	nomem(w);
	return 0;
}

TK_PUBLIC uint32_t
tk_writer_device(struct tk_writer *w, uint32_t id, const struct tk_device *d)
{
	uint32_t host, name;
	if (!w || !d || str_id(w, d->host, &host) || str_id(w, d->name, &name))
		return 0;
	if (id > w->ndevices) {
		reject(w, "no device %u", id);
		return 0;
	}
	if (!id)
		id = ++w->ndevices;
	struct tkp_buf *b = &w->scratch;
	b->len = 0;
	PUT(id);
	PUT(host);
	PUT(d->index);
	PUT(name);
	PUT(d->sm_count);
	PUT(d->memory);
	PUT(d->cc_major);
	PUT(d->cc_minor);
	if (tkp_buf_put(b, d->uuid, 16) < 0)
		goto oom;
	return put_def(w, TKP_DEF_DEVICE, b) || maybe_seal(w) ? 0 : id;
oom:
	nomem(w);
	return 0;
}

TK_PUBLIC int
tk_writer_meta(struct tk_writer *w, const char *key, const char *value)
{
	uint32_t k, v;
	if (!w || !key)
		return TK_EINVAL;
	if (str_id(w, key, &k) || str_id(w, value, &v))
		return w->error.code ? w->error.code : TK_EINVAL;
	struct tkp_buf *b = &w->scratch;
	b->len = 0;
	PUT(k);
	PUT(v);
	if (put_def(w, TKP_DEF_META, b))
		return w->error.code;
	return maybe_seal(w);
oom:
	return nomem(w);
}

TK_PUBLIC int
tk_writer_category(struct tk_writer *w, const char *domain, uint32_t category,
                   const char *name)
{
	uint32_t d, n;
	if (!w)
		return TK_EINVAL;
	if (str_id(w, domain, &d) || str_id(w, name, &n))
		return w->error.code ? w->error.code : TK_EINVAL;
	struct tkp_buf *b = &w->scratch;
	b->len = 0;
	PUT(d);
	PUT(category);
	PUT(n);
	if (put_def(w, TKP_DEF_CATEGORY, b))
		return w->error.code;
	return maybe_seal(w);
oom:
	return nomem(w);
}

/* Launch configurations are interned like strings: the key is the 12
 * numbers, stored little-endian so that equal configurations compare
 * equal byte for byte. */
static uint32_t
config_id(struct tk_writer *w, const uint32_t v[12])
{
	/* the cache slot: six independent multiplications, not a chain of
	 * twelve (this runs once per kernel) */
	uint64_t x[6];
	memcpy(x, v, sizeof(x));
	if (!(x[0] | x[1] | x[2] | x[3] | x[4] | x[5]))
		return 0;
	uint64_t h = (x[0] * 0x9e3779b97f4a7c15ull) ^ (x[1] * 0xc2b2ae3d27d4eb4full) ^
	             (x[2] * 0x165667b19e3779f9ull) ^ (x[3] * 0xd6e8feb86659fd93ull) ^
	             (x[4] * 0xff51afd7ed558ccdull) ^ (x[5] * 0xc4ceb9fe1a85ec53ull);
	h ^= h >> 32;
	struct config_cache *c = &w->config_cache[(h ^ (h >> 16)) % CONFIG_CACHE];
	if (c->id && memcmp(c->v, v, sizeof(c->v)) == 0)
		return c->id;
	uint8_t key[48];
	for (int i = 0; i < 12; i++)
		tkp_le32(key + 4 * i, v[i]);
	int added = 0;
	uint32_t id = tkp_intern(&w->configs, (const char *)key, 48, &added);
	if (!id) {
		nomem(w);
		return 0;
	}
	if (added) {
		struct tkp_buf *b = &w->scratch;
		b->len = 0;
		PUT(id);
		for (int i = 0; i < 12; i++)
			PUT(v[i]);
		if (put_def(w, TKP_DEF_CONFIG, b))
			return 0;
	}
	memcpy(c->v, v, sizeof(c->v));
	c->id = id;
	return id;
oom:
	nomem(w);
	return 0;
}

#undef PUT

/* ---- events ------------------------------------------------------------- */

/* Bytes needed for x: 0 for 0, 1 for 1..255, ... */
static inline unsigned
bytelen(uint64_t x)
{
	return x ? (unsigned)(71 - __builtin_clzll(x)) / 8 : 0;
}

static int
col_grow(struct tk_writer *w, struct column *c, uint32_t need)
{
	size_t cap = c->cap;
	uint64_t *v = tkp_grow(c->v, &cap, need, sizeof(*v));
	if (!v)
		return nomem(w);
	c->v = v;
	c->cap = (uint32_t)cap; /* need <= CHUNK_EVENTS_MAX */
	return TK_OK;
}

static inline int
col_append(struct tk_writer *w, struct column *c, uint64_t v)
{
	if (c->n == c->cap && col_grow(w, c, c->n + 1))
		return w->error.code;
	if (c->n) { /* the range put_planes needs, while v is at hand */
		c->lo = v < c->lo ? v : c->lo;
		c->hi = v > c->hi ? v : c->hi;
	}
	c->v[c->n++] = v;
	w->raw_bytes += bytelen(v);
	return TK_OK;
}

static int
col_put_bytes(struct tk_writer *w, struct column *c, const char *p, uint32_t n)
{
	if (n == 0 && !c->nonzero) {
		c->zeros++;
		return TK_OK;
	}
	struct tkp_buf *b = &c->bytes;
	if (!c->nonzero) {
		if (tkp_buf_reserve(b, (size_t)c->zeros + n + TKP_VARINT_MAX) < 0)
			return nomem(w);
		memset(b->p + b->len, 0, c->zeros);
		b->len += c->zeros;
		w->raw_bytes += c->zeros;
		c->nonzero = 1;
	}
	if (tkp_buf_varint(b, n) < 0 || tkp_buf_put(b, p, n) < 0)
		return nomem(w);
	w->raw_bytes += n + 1;
	return TK_OK;
}

static int
grow_pred(struct tk_writer *w, uint32_t track)
{
	size_t old = w->pred_cap, cap = old, need = (size_t)track + 1;
	if (tkp_grow_shared(&w->pred, old, need, sizeof(*w->pred), &cap) ||
	    tkp_grow_shared(&w->pred_gen, old, need, sizeof(*w->pred_gen), &cap))
		return nomem(w);
	memset(w->pred_gen + old, 0, (cap - old) * sizeof(*w->pred_gen));
	w->pred_cap = cap;
	return TK_OK;
}

/* Work on one GPU stream runs back to back: its next start is best
 * predicted from the previous end.  Elsewhere ranges nest, and the
 * previous begin predicts better. */
static inline int
predict_from_end(const uint8_t *types, uint32_t ntracks, uint32_t track)
{
	return types && track <= ntracks && types[track] == TK_TRACK_STREAM;
}

TK_PUBLIC int
tk_writer_event(struct tk_writer *w, const struct tk_event *ev)
{
	if (!w || !ev)
		return TK_EINVAL;
	if (check_open(w))
		return w->error.code;
	unsigned kind = ev->kind;
	if (kind < 1 || kind > TK_KIND_MAX)
		return reject(w, "unknown event kind %u", kind);
	if (ev->dur < 0 || ev->ts > INT64_MAX - ev->dur)
		return reject(w, "invalid duration %lld",
		            (long long)ev->dur);
	if (!w->opt.raw_ids && ev->track > w->ntracks)
		return reject(w, "undefined track %u", ev->track);
	if (w->opt.raw_ids && ev->track >= TKP_ID_MAX)
		return reject(w, "track id %u too large", ev->track);
	if (w->opt.sorted && ev->ts < w->last_ts)
		return reject(w, "event out of order in a sorted writer");

	/* Resolve every id first, so that a failure leaves nothing half
	 * written. */
	uint32_t name = ev->name_id;
	if (!name && ev->name && ev->name[0] && !w->opt.raw_ids &&
	    !(name = intern_string(w, ev->name, strlen(ev->name))))
		return w->error.code ? w->error.code : TK_EINVAL; /* a rejected string */
	const struct tkp_kind_schema *ks = &tkp_schema[kind];
	struct per_kind *pk = &w->per_kind[kind];
	uint32_t j = w->kind_count[kind];
	if (j == pk->cap) {
		size_t cap = pk->cap;
		uint32_t *t = tkp_grow(pk->tracks, &cap, (size_t)j + 1, sizeof(*t));
		if (!t)
			return nomem(w);
		pk->tracks = t;
		/* the structs, with slack after the last: see the copy below */
		uint8_t *p = realloc(pk->attrs, cap * ks->size + UNION_SIZE);
		if (!p)
			return nomem(w);
		pk->attrs = p;
		pk->cap = (uint32_t)cap; /* <= CHUNK_EVENTS_MAX */
	}
	pk->tracks[j] = ev->track;
	uint8_t *attrs = pk->attrs + (size_t)j * ks->size;
	/* the whole union, a copy of fixed size the compiler inlines; what
	 * lies past this kind's struct lands in the next slot (or the
	 * slack), which the next event of the kind overwrites */
	memcpy(attrs, (const char *)ev + TKP_UNION_OFF, UNION_SIZE);
	/* strings given by pointer are interned now: the pointer is the
	 * caller's only until this call returns */
	const struct tkp_attr *a = ks->str;
	if (a && !w->opt.raw_ids) {
		uint32_t id = (uint32_t)tkp_field_get(ev, a);
		const char *s = tkp_field_str(ev, a);
		if (!id && s && s[0] && !(id = intern_string(w, s, strlen(s))))
			return w->error.code ? w->error.code : TK_EINVAL;
		memcpy(attrs + (a->off - TKP_UNION_OFF), &id, 4);
	}

	uint32_t track = ev->track;
	if (track >= w->pred_cap && grow_pred(w, track))
		return w->error.code;
	int64_t pred;
	if (w->nev == 0) {
		pred = 0;
		w->first_ts = ev->ts;
	} else if (w->pred_gen[track] == w->gen) {
		pred = w->pred[track];
	} else {
		pred = w->first_ts;
	}
	w->pred_gen[track] = w->gen;
	w->pred[track] = ev->ts;
	if (predict_from_end(w->opt.raw_ids ? NULL : w->track_type, w->ntracks,
	                     track))
		w->pred[track] = ev->ts + ev->dur;

	struct column *c = w->common;
	uint8_t k8 = (uint8_t)kind;
	if (tkp_buf_put(&w->kinds, &k8, 1) < 0)
		return nomem(w);
	/* a rough size: the chunk only needs to be about the target size */
	w->raw_bytes += 1 + ks->n;
	if (col_append(w, &c[TKP_COL_TRACK], track) ||
	    col_append(w, &c[TKP_COL_TS],
	               tkp_zigzag((int64_t)((uint64_t)ev->ts - (uint64_t)pred))) ||
	    col_append(w, &c[TKP_COL_DUR], (uint64_t)ev->dur) ||
	    col_append(w, &c[TKP_COL_NAME], name))
		return w->error.code;
	if (col_put_bytes(w, &pk->args, ev->args, ev->args ? ev->args_len : 0))
		return w->error.code;

	w->kind_count[kind]++;
	if (w->nev > 0 && ev->ts < w->prev_ts)
		w->chunk_sorted = 0;
	w->prev_ts = ev->ts;
	if (ev->ts < w->t_min)
		w->t_min = ev->ts;
	if (ev->ts + ev->dur > w->t_max)
		w->t_max = ev->ts + ev->dur;
	if (w->opt.sorted)
		w->last_ts = ev->ts;
	w->nev++;
	w->events++;
	if (w->raw_bytes >= w->opt.chunk_bytes || w->nev >= CHUNK_EVENTS_MAX)
		return seal(w);
	return TK_OK;
}

TK_PUBLIC void
tk_writer_watermark(struct tk_writer *w, int64_t t)
{
	if (w)
		w->watermark = t;
}

/* ---- chunks ---------------------------------------------------------------- */

static int
put_bytes_column(struct tkp_buf *b, unsigned kind, unsigned attr,
                 const uint8_t *data, size_t len)
{
	if (tkp_buf_varint(b, kind) < 0 || tkp_buf_varint(b, attr) < 0 ||
	    tkp_buf_varint(b, len) < 0 || tkp_buf_put(b, data, len) < 0)
		return -1;
	return 0;
}

/* A numeric column: one byte of width w, the first value as a varint,
 * the smallest of the others as a varint (the base), then w planes of
 * n-1 bytes: the lowest byte of every other value less the base, then
 * the next byte, ...  Planes put alike bytes together, which deflate
 * compresses well, and decode with plain loops.  The first value is
 * apart because it is often the outlier: an absolute time or id where
 * the others are differences.  lo and hi: the smallest and largest of
 * v[1..n-1], found by the caller as the values were made. */
static int
put_planes(struct tkp_buf *b, unsigned kind, unsigned attr,
           const uint64_t *v, uint32_t n, uint64_t lo, uint64_t hi)
{
	if (n <= 1)
		lo = hi = 0;
	unsigned width = bytelen(hi - lo);
	uint8_t head[1 + 2 * TKP_VARINT_MAX];
	size_t head_len = 1;
	head[0] = (uint8_t)width;
	head_len += tkp_varint_store(head + head_len, n ? v[0] : 0);
	head_len += tkp_varint_store(head + head_len, lo);
	size_t rest = n ? n - 1 : 0;
	size_t len = head_len + (size_t)width * rest;
	if (tkp_buf_varint(b, kind) < 0 || tkp_buf_varint(b, attr) < 0 ||
	    tkp_buf_varint(b, len) < 0 || tkp_buf_reserve(b, len) < 0)
		return -1;
	uint8_t *p = b->p + b->len;
	memcpy(p, head, head_len);
	p += head_len;
	for (unsigned plane = 0; plane < width; plane++) {
		unsigned shift = 8 * plane;
		for (size_t i = 0; i < rest; i++)
			p[i] = (uint8_t)((v[i + 1] - lo) >> shift);
		p += rest;
	}
	b->len += len;
	return 0;
}

static int
grow_dprev(struct tk_writer *w, uint32_t track)
{
	size_t old = w->dprev_cap, cap = old, need = (size_t)track + 1;
	if (tkp_grow_shared(&w->dprev, old, need, sizeof(*w->dprev), &cap) ||
	    tkp_grow_shared(&w->dprev_gen, old, need, sizeof(*w->dprev_gen), &cap))
		return nomem(w);
	memset(w->dprev_gen + old, 0, (cap - old) * sizeof(*w->dprev_gen));
	w->dprev_cap = cap;
	return TK_OK;
}

/* Field j of a kind's attribute structs, widened as the column keeps it. */
static inline uint64_t
field_at(const uint8_t *f, size_t j, size_t size, unsigned ftype)
{
	if (ftype == TKP_U32 || ftype == TKP_I32) {
		uint32_t x;
		memcpy(&x, f + j * size, 4);
		return ftype == TKP_I32 ? (uint64_t)(int64_t)(int32_t)x : x;
	}
	uint64_t x;
	memcpy(&x, f + j * size, 8);
	return x;
}

/* One attribute of every event of a kind, as a column: transformed as
 * its encoding says, in pk->scratch, with the smallest and largest of
 * its values after the first (put_planes' base and width) in *lo and
 * *hi, found in the same pass.  Returns 1 if any value is not 0. */
static int
gather(struct tk_writer *w, const struct tkp_kind_schema *ks,
       const struct tkp_attr *a, struct per_kind *pk, uint32_t n,
       uint64_t *lo, uint64_t *hi)
{
	uint64_t *v = pk->scratch, l = UINT64_MAX, h = 0;
	const uint8_t *f = pk->attrs + (a->off - TKP_UNION_OFF);
	size_t size = ks->size;
	unsigned ftype = a->ftype;
#define KEEP(j, x) do {                                                       \
		uint64_t x_ = (x);                                            \
		v[j] = x_;                                                    \
		if (j) {                                                      \
			l = x_ < l ? x_ : l;                                  \
			h = x_ > h ? x_ : h;                                  \
		}                                                             \
	} while (0)
	switch (a->enc) {
	case TKP_ENC_CONFIG:
		for (uint32_t j = 0; j < n; j++) {
			const struct tk_kernel_attrs *k =
				(const void *)(pk->attrs + (size_t)j * size);
			uint32_t cfg[12] = {
				k->grid[0], k->grid[1], k->grid[2],
				k->block[0], k->block[1], k->block[2],
				k->cluster[0], k->cluster[1], k->cluster[2],
				k->static_smem, k->dynamic_smem, k->registers,
			};
			uint32_t id = config_id(w, cfg);
			if (w->error.code)
				return -1;
			KEEP(j, id);
		}
		break;
	case TKP_ENC_S:
		for (uint32_t j = 0; j < n; j++)
			KEEP(j, tkp_zigzag((int64_t)field_at(f, j, size, ftype)));
		break;
	case TKP_ENC_D:
		/* differences on each track: ids grow per thread and per
		 * stream, however the tracks interleave */
		if (++w->dgen == 0) {
			memset(w->dprev_gen, 0, w->dprev_cap * sizeof(*w->dprev_gen));
			w->dgen = 1;
		}
		{
			/* room for every track first, so that the loop keeps
			 * the arrays and the generation in registers: stores
			 * through w's arrays would otherwise make the compiler
			 * load them from w again for each event */
			uint32_t tmax = 0;
			for (uint32_t j = 0; j < n; j++)
				tmax = pk->tracks[j] > tmax ? pk->tracks[j] : tmax;
			if (tmax >= w->dprev_cap && grow_dprev(w, tmax))
				return -1;
			uint64_t *restrict dprev = w->dprev;
			uint32_t *restrict dprev_gen = w->dprev_gen;
			const uint32_t *restrict tracks = pk->tracks;
			uint32_t dgen = w->dgen;
			for (uint32_t j = 0; j < n; j++) {
				uint32_t t = tracks[j];
				uint64_t prev = dprev_gen[t] == dgen ? dprev[t] : 0;
				uint64_t x = field_at(f, j, size, ftype);
				KEEP(j, tkp_zigzag((int64_t)(x - prev)));
				dprev[t] = x;
				dprev_gen[t] = dgen;
			}
		}
		break;
	default:
		for (uint32_t j = 0; j < n; j++)
			KEEP(j, field_at(f, j, size, ftype));
		break;
	}
#undef KEEP
	*lo = l;
	*hi = h;
	return n > 0 && (v[0] | h) != 0;
}

/* Room for the grouping arrays of n events and of every track id. */
static int
grow_group_arrays(struct tk_writer *w, uint32_t n)
{
	if (n > w->order_cap) {
		size_t old = w->order_cap, cap = old;
#define GROW(a) tkp_grow_shared(&(a), old, n, sizeof(*(a)), &cap)
		if (GROW(w->order) || GROW(w->kperm) || GROW(w->kidx) ||
		    GROW(w->pvals) || GROW(w->ptracks))
			return nomem(w);
#undef GROW
		w->order_cap = cap;
	}
	if (w->seen_cap < w->track_cap) {
		size_t cap = w->track_cap, old = w->seen_cap;
		uint32_t *st = realloc(w->seen_track, cap * sizeof(*st));
		if (st) w->seen_track = st;
		uint32_t *sp = realloc(w->seen_proc, cap * sizeof(*sp));
		if (sp) w->seen_proc = sp;
		uint32_t *g = realloc(w->group, cap * sizeof(*g));
		if (g) w->group = g;
		uint32_t *gc = realloc(w->group_count, cap * sizeof(*gc));
		if (gc) w->group_count = gc;
		if (!st || !sp || !g || !gc)
			return nomem(w);
		memset(st + old, 0, (cap - old) * sizeof(*st));
		memset(sp + old, 0, (cap - old) * sizeof(*sp));
		w->seen_cap = cap;
	}
	return TK_OK;
}

/* The process track of track t, 0 if none. */
static inline uint32_t
process_of(const struct tk_writer *w, uint64_t t)
{
	uint32_t p = t && t <= w->ntracks ? w->track_proc[t] : 0;
	return p <= w->ntracks ? p : 0;
}

/* Events of several processes in one chunk (ranks merged into one
 * timeline) interleave event by event, which hides from deflate the
 * repeats that each process's columns have on their own.  Such a chunk
 * is stored grouped: the events of the process seen first, in time
 * order, then those of the next, and so on; the track column stays in
 * time order and the GROUPS column gives each track's group, so that a
 * reader restores the order (tracekit-format(5)).  Sets w->grouped,
 * and when set w->order, w->kind_start, w->kperm and w->groups. */
static int
plan_groups(struct tk_writer *w)
{
	uint32_t n = w->nev;
	w->grouped = 0;
	if (w->opt.raw_ids || n < 2)
		return TK_OK;
	int rc = grow_group_arrays(w, n);
	if (rc)
		return rc;
	if (w->seen_gen >= UINT32_MAX - 1) { /* about to wrap: forget stamps */
		memset(w->seen_track, 0, w->seen_cap * sizeof(*w->seen_track));
		memset(w->seen_proc, 0, w->seen_cap * sizeof(*w->seen_proc));
		w->seen_gen = 0;
	}
	uint32_t gen = ++w->seen_gen;
	const uint64_t *tracks = w->common[TKP_COL_TRACK].v;
	/* groups numbered as their processes first appear; tracks of no
	 * process (a device's counters) join group 0.  The chunk's first
	 * event is then stored first. */
	uint32_t ngroups = 0, ntracks = 0;
	w->seen_proc[0] = gen;
	w->group[0] = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t p = process_of(w, tracks[i]);
		if (w->seen_proc[p] != gen) {
			w->seen_proc[p] = gen;
			w->group[p] = ngroups++;
		}
	}
	if (ngroups < 2)
		return TK_OK;
	memset(w->group_count, 0, ngroups * sizeof(*w->group_count));
	struct tkp_buf *pairs = &w->permuted;
	pairs->len = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t t = (uint32_t)tracks[i], p = process_of(w, t);
		w->group_count[w->group[p]]++;
		if (w->seen_track[t] != gen) {
			w->seen_track[t] = gen;
			ntracks++;
			if (tkp_buf_varint(pairs, t) < 0 ||
			    tkp_buf_varint(pairs, w->group[p]) < 0)
				return nomem(w);
		}
	}
	w->groups.len = 0;
	if (tkp_buf_varint(&w->groups, ntracks) < 0 ||
	    tkp_buf_put(&w->groups, pairs->p, pairs->len) < 0)
		return nomem(w);
	/* a stable counting sort by group */
	uint32_t at = 0;
	for (uint32_t g = 0; g < ngroups; g++) {
		uint32_t c = w->group_count[g];
		w->group_count[g] = at;
		at += c;
	}
	for (uint32_t i = 0; i < n; i++)
		w->order[w->group_count[w->group[process_of(w, tracks[i])]]++] = i;
	/* and within each kind, the same order */
	uint32_t count[TK_KIND_MAX + 1] = { 0 };
	const uint8_t *kinds = w->kinds.p;
	for (uint32_t i = 0; i < n; i++)
		w->kidx[i] = count[kinds[i]]++;
	at = 0;
	for (unsigned k = 0; k <= TK_KIND_MAX; k++) {
		w->kind_start[k] = at;
		at += count[k];
		count[k] = 0;
	}
	for (uint32_t q = 0; q < n; q++) {
		uint32_t i = w->order[q];
		unsigned k = kinds[i];
		w->kperm[w->kind_start[k] + count[k]++] = w->kidx[i];
	}
	w->grouped = 1;
	return TK_OK;
}

/* Common column i in stored order, with put_planes' range, in pvals. */
static void
permute_common(struct tk_writer *w, unsigned i, uint64_t *lo, uint64_t *hi)
{
	const uint64_t *v = w->common[i].v;
	uint64_t l = UINT64_MAX, h = 0;
	w->pvals[0] = v[w->order[0]];
	for (uint32_t q = 1; q < w->nev; q++) {
		uint64_t x = v[w->order[q]];
		w->pvals[q] = x;
		l = x < l ? x : l;
		h = x > h ? x : h;
	}
	*lo = l;
	*hi = h;
}

/* A kind's args column in stored order, in w->permuted.  Each event's
 * entry is a varint length and that many bytes. */
static int
permute_args(struct tk_writer *w, const struct per_kind *pk, uint32_t n,
             const uint32_t *perm)
{
	const uint8_t *p = pk->args.bytes.p, *end = p + pk->args.bytes.len;
	uint32_t *start = w->kidx; /* free now: entry j's offset */
	for (uint32_t j = 0; j < n; j++) {
		uint64_t len;
		start[j] = (uint32_t)(p - pk->args.bytes.p);
		if (tkp_varint_get(&p, end, &len) < 0 || len > (uint64_t)(end - p))
			return fail(w, TK_EINVAL, EINVAL, "bad args column");
		p += len;
	}
	struct tkp_buf *b = &w->permuted;
	b->len = 0;
	for (uint32_t j = 0; j < n; j++) {
		uint32_t e = perm[j];
		uint32_t to = e + 1 < n ? start[e + 1] : (uint32_t)pk->args.bytes.len;
		if (tkp_buf_put(b, pk->args.bytes.p + start[e], to - start[e]) < 0)
			return nomem(w);
	}
	return TK_OK;
}

/* A kind's args (a B column of n), as templates and numbers when they
 * can be, else as they are.  ids: room for n values. */
static int
put_args(struct tk_writer *w, struct tkp_buf *cb, unsigned kind,
         const struct tkp_buf *args, uint32_t n, uint64_t *ids)
{
	int t = tkp_args_encode(&w->args_enc, args->p, args->len, n,
	                        &w->args_templates, ids, &w->args_numbers);
	if (t < 0)
		return nomem(w);
	if (!t)
		return put_bytes_column(cb, kind, TKP_ATTR_ARGS, args->p,
		                        args->len) < 0 ? nomem(w) : TK_OK;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (uint32_t j = 1; j < n; j++) {
		lo = ids[j] < lo ? ids[j] : lo;
		hi = ids[j] > hi ? ids[j] : hi;
	}
	if (put_bytes_column(cb, kind, TKP_ATTR_ARGS_TEMPLATES, w->args_templates.p,
	                     w->args_templates.len) < 0 ||
	    put_planes(cb, kind, TKP_ATTR_ARGS_TEMPLATE, ids, n, lo, hi) < 0 ||
	    put_bytes_column(cb, kind, TKP_ATTR_ARGS_NUMBERS, w->args_numbers.p,
	                     w->args_numbers.len) < 0)
		return nomem(w);
	w->args_templated = 1;
	return TK_OK;
}

/* The chunk's payload, in *raw, which lies in *buf: the encoded columns
 * are built in w->columns after room for the definitions, which are then
 * put in front of them if they fit, so that the columns need not be
 * copied. */
static int
build_payload(struct tk_writer *w, struct tkp_buf **buf, const uint8_t **raw,
              size_t *raw_len)
{
	/* columns first: launch configurations they intern add
	 * definitions, which go before them */
	struct tkp_buf *cb = &w->columns;
	/* room for the definitions so far and some that gather() adds */
	size_t headroom = TKP_VARINT_MAX + w->defs.len + 4096;
	cb->len = 0;
	if (tkp_buf_reserve(cb, headroom) < 0)
		return nomem(w);
	cb->len = headroom;
	if (w->nev) {
		int rc = plan_groups(w);
		if (rc)
			return rc;
		const uint8_t *kinds = w->kinds.p;
		if (w->grouped) {
			struct tkp_buf *b = &w->permuted;
			b->len = 0;
			if (tkp_buf_reserve(b, w->nev) < 0)
				return nomem(w);
			for (uint32_t q = 0; q < w->nev; q++)
				b->p[q] = w->kinds.p[w->order[q]];
			kinds = b->p;
		}
		if (put_bytes_column(cb, 0, TKP_COL_KIND, kinds, w->nev) < 0)
			return nomem(w);
		for (unsigned i = TKP_COL_TRACK; i <= TKP_COL_NAME; i++) {
			const uint64_t *v = w->common[i].v;
			uint64_t lo = w->common[i].lo, hi = w->common[i].hi;
			/* the track column stays in time order */
			if (w->grouped && i != TKP_COL_TRACK) {
				permute_common(w, i, &lo, &hi);
				v = w->pvals;
			}
			if (put_planes(cb, 0, i, v, w->nev, lo, hi) < 0)
				return nomem(w);
		}
		if (w->grouped &&
		    put_bytes_column(cb, 0, TKP_COL_GROUPS, w->groups.p, w->groups.len) < 0)
			return nomem(w);
	}
	for (unsigned k = 1; k <= TK_KIND_MAX; k++) {
		uint32_t n = w->kind_count[k];
		if (!n)
			continue;
		const struct tkp_kind_schema *ks = &tkp_schema[k];
		struct per_kind *pk = &w->per_kind[k];
		if (n > pk->scratch_cap) {
			uint64_t *s = realloc(pk->scratch, (size_t)pk->cap * sizeof(*s));
			if (!s)
				return nomem(w);
			pk->scratch = s;
			pk->scratch_cap = pk->cap;
		}
		const uint32_t *perm = w->grouped ? w->kperm + w->kind_start[k] : NULL;
		/* grouped: the structs in stored order first, so that each
		 * column is gathered in one sequential pass */
		struct per_kind stored = *pk;
		if (perm) {
			size_t size = ks->size;
			w->pattrs.len = 0;
			if (tkp_buf_reserve(&w->pattrs, (size_t)n * size + UNION_SIZE) < 0)
				return nomem(w);
			for (uint32_t j = 0; j < n; j++) {
				memcpy(w->pattrs.p + (size_t)j * size,
				       pk->attrs + (size_t)perm[j] * size, size);
				w->ptracks[j] = pk->tracks[perm[j]];
			}
			stored.attrs = w->pattrs.p;
			stored.tracks = w->ptracks;
		}
		for (unsigned i = 0; i < ks->n; i++) {
			const struct tkp_attr *a = &ks->attrs[i];
			uint64_t lo, hi;
			int any = gather(w, ks, a, &stored, n, &lo, &hi);
			if (any < 0)
				return w->error.code;
			if (any && put_planes(cb, k, a->attr, pk->scratch, n, lo, hi) < 0)
				return nomem(w);
		}
		if (pk->args.nonzero) {
			const struct tkp_buf *args = &pk->args.bytes;
			if (perm) {
				int rc = permute_args(w, pk, n, perm);
				if (rc)
					return rc;
				args = &w->permuted;
			}
			int rc = put_args(w, cb, k, args, n, pk->scratch);
			if (rc)
				return rc;
		}
	}
	uint8_t len_varint[TKP_VARINT_MAX];
	size_t vlen = tkp_varint_store(len_varint, w->defs.len);
	size_t front = vlen + w->defs.len;
	if (front <= headroom) {
		uint8_t *p = cb->p + headroom - front;
		memcpy(p, len_varint, vlen);
		if (w->defs.len)
			memcpy(p + vlen, w->defs.p, w->defs.len);
		*buf = cb;
		*raw = p;
		*raw_len = front + cb->len - headroom;
		return TK_OK;
	}
	struct tkp_buf *b = &w->payload; /* definitions outgrew the room */
	b->len = 0;
	if (tkp_buf_put(b, len_varint, vlen) < 0 ||
	    tkp_buf_put(b, w->defs.p, w->defs.len) < 0 ||
	    tkp_buf_put(b, cb->p + headroom, cb->len - headroom) < 0)
		return nomem(w);
	*buf = b;
	*raw = b->p;
	*raw_len = b->len;
	return TK_OK;
}

/* `heartbeat`: write the chunk even if it holds nothing, when only its
 * watermark would be news (a live reader then knows time went on). */
static int
seal_chunk(struct tk_writer *w, uint32_t extra_flags, int heartbeat)
{
	int64_t watermark = w->opt.sorted ? w->last_ts : w->watermark;
	if (w->nev == 0 && w->defs.len == 0 && !extra_flags &&
	    !(heartbeat && watermark != w->sealed_watermark))
		return TK_OK;
	struct tkp_buf *buf = NULL;
	const uint8_t *raw = NULL;
	size_t raw_len = 0;
	int rc = build_payload(w, &buf, &raw, &raw_len);
	if (rc)
		return rc;
	if (raw_len > TKP_CHUNK_RAW_MAX)
		return fail(w, TK_EINVAL, EINVAL, "chunk too large");

	struct tkp_chunk_header head = {
		.events = w->nev, .t_min = w->t_min, .t_max = w->t_max,
		.watermark = watermark,
	};
	if (w->nev > 0 && w->chunk_sorted)
		head.flags |= TK_CHUNK_SORTED;
	if (w->grouped)
		head.flags |= TK_CHUNK_GROUPED;
	if (w->args_templated)
		head.flags |= TK_CHUNK_ARGS_TEMPLATES;
	head.flags |= extra_flags;
	if (head.flags & TK_CHUNK_END)
		head.watermark = watermark = INT64_MAX; /* nothing follows */
	int e = tkp_sealer_seal(&w->sealer, buf, raw, raw_len, &head);
	if (e)
		return sealer_fail(w, e);
	w->sealed_watermark = watermark;
	reset_chunk(w);
	return TK_OK;
}

/* Every sealed chunk put, or the error of the one that failed. */
static int
wait_sealed(struct tk_writer *w)
{
	int e = tkp_sealer_wait(&w->sealer);
	return e ? sealer_fail(w, e) : TK_OK;
}

static int
seal(struct tk_writer *w)
{
	return seal_chunk(w, 0, 0);
}

TK_PUBLIC int
tk_writer_flush(struct tk_writer *w)
{
	if (!w)
		return TK_EINVAL;
	if (check_open(w))
		return w->error.code;
	int rc = seal_chunk(w, 0, 1);
	return rc ? rc : wait_sealed(w);
}

TK_PUBLIC int
tk_writer_close(struct tk_writer *w)
{
	if (!w)
		return TK_EINVAL;
	int rc = w->error.code;
	if (w->open && !rc)
		rc = seal_chunk(w, TK_CHUNK_END, 0);
	/* every chunk put before the descriptor closes, even after an error */
	int e = tkp_sealer_wait(&w->sealer);
	if (e && !rc)
		rc = sealer_fail(w, e);
	w->open = 0;
	if (w->own_fd && w->fd >= 0 && close(w->fd) < 0 && rc == TK_OK)
		rc = fail(w, TK_EIO, errno, "%s", strerror(errno));
	if (w->own_fd)
		w->fd = -1;
	w->own_fd = 0;
	return rc;
}

TK_PUBLIC const char *
tk_writer_error(const struct tk_writer *w)
{
	return w ? tkp_error_msg(&w->error) : "no error";
}

TK_PUBLIC int
tk_writer_errno(const struct tk_writer *w)
{
	return w ? w->error.errnum : 0;
}

void
tkp_writer_set_sink(struct tk_writer *w,
                    int (*sink)(void *arg, const void *p, size_t n), void *arg)
{
	close_fd(w);
	w->sink = sink;
	w->sink_arg = arg;
}

TK_PUBLIC uint64_t
tk_writer_offset(const struct tk_writer *w)
{
	if (!w)
		return 0;
	return w->header_bytes +
	       tkp_sealer_bytes(&((struct tk_writer *)w)->sealer);
}

TK_PUBLIC uint64_t
tk_writer_events(const struct tk_writer *w)
{
	return w ? w->events : 0;
}
