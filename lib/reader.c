/* SPDX-License-Identifier: MIT */
/*
 * The reader: one pass over a stream of headers and chunks.  Each chunk
 * is checked (sizes, CRC32), inflated, its definitions applied, and its
 * columns decoded into arrays; events are then handed out one by one.
 * Every input byte is untrusted: lengths and ids are checked before
 * use, and an error names the byte offset of the chunk it is in.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libdeflate.h>

#include "args_template.h"
#include "intern.h"
#include "reader_private.h"
#include "rpool.h"
#include "tk_private.h"

/* The buffer for reads from a descriptor: headers and small chunks go
 * through it, a chunk's bytes beyond it are read straight into place
 * (a chunk of the writer's default size stores ~100-200 KB), so that it
 * is neither a second copy of each chunk nor pages touched for little. */
#define IBUF_SIZE (64u * 1024u)
/* The default number of threads is the machine's cores, at most this. */
#define THREADS_DEFAULT_MAX 8u
/* Unless a count is asked for (TK_THREADS, tk_reader_options.threads),
 * an input smaller than this is read on the caller's thread alone.  The
 * workers can save at most the checking and inflating of the chunks
 * after the first (about a sixth of reading them, ~0.6 ms for a chunk of
 * ~45 k events), while starting them costs about as much as two chunks'
 * worth (two threads, and a fresh chunk buffer for each slot, paid in
 * page faults); below ~8 chunks of the writer's default size the gain
 * is a millisecond or two at best on idle cores, and on busy cores the
 * threads only add: trace-stats on a 179 k-event trace (0.56 MB, 4
 * chunks) took 1.07x the CPU and wall time of one thread on 2 busy
 * cores, where on 0.3 M and 1 M events (1.1 and 3.7 MB) threads made it
 * 1.14x faster. */
#define THREADS_MIN_INPUT (1u << 20)
/* A stream may use track ids that a newer writer defined in a way this
 * reader skipped; allow that many beyond the known ones. */
#define UNKNOWN_TRACKS_MAX 4096u
/* The event union at its largest: fill_event() copies this many bytes. */
#define UNION_SIZE sizeof(((struct tk_event *)0)->u)
_Static_assert(UNION_SIZE % 8 == 0, "fill_event() copies the union in words");
#define UNION_WORDS (UNION_SIZE / 8)

struct rstring {
	const char *s;
	uint32_t len;
};

struct config {
	uint32_t v[12];
};

struct pending {
	enum tk_record_type type;
	const void *ptr;
};

/* Where one column of the current chunk lies in the payload. */
struct colloc {
	const uint8_t *p;
	size_t len;
	int present;
};

/* The events of one kind in the current chunk: their attribute structs
 * (the kind's member of tk_event.u), filled column by column when the
 * chunk is decoded, so that handing out an event is one copy. */
struct kind_cols {
	uint32_t count;            /* events of this kind in the chunk */
	size_t cap;                /* events the arrays hold */
	uint8_t *attrs;            /* count structs of the kind's size */
	uint32_t *tracks;          /* the track of each, for per-track deltas */
	const uint8_t **args;      /* per event: JSON text or NULL */
	uint32_t *args_len;
	size_t args_cap;           /* events args and args_len hold */
	struct tkp_buf args_text;  /* args rebuilt from templates */
	uint32_t *config_ids;      /* a worker's decoder: the launch
	                              configuration of each (cap of them) */
	uint64_t unresolved;       /* a worker's decoder: the attributes (a
	                              bit each) whose string ids or launch
	                              configurations it left to
	                              resolve_refs() */
};

/* What a worker's decode of a chunk (decode_on_worker()) could not
 * check, being without the definitions, and how it went.  The reading
 * thread uses the result only where, with the definitions in hand, one
 * thread's decode would have come to the same: every id within its
 * bound, the same GPU streams among the tracks used, the same raw and
 * no_args; otherwise it decodes the chunk again itself.  Launch
 * configurations copied from a copy that has changed since are copied
 * again. */
struct unchecked {
	int columns_ok;           /* decode_columns() succeeded */
	int attrs_ok;             /* and decode_attrs() */
	int raw, no_args;         /* as they were for the decode */
	uint64_t track_hi;        /* the largest track id, of the values and
	                             of the column's first value and base */
	uint64_t name_hi;         /* the same for names */
	uint32_t track_max;       /* the largest track id of an event */
	uint64_t string_hi;       /* the largest string attribute */
	uint64_t config_hi;       /* the largest launch configuration */
	uint64_t config_gen;      /* configs_gen of the copied configurations */
};

struct tk_reader {
	/* input */
	int fd;
	int own_fd;
	const uint8_t *mem;
	size_t mem_len, mem_pos;
	char *name;
	uint8_t *ibuf;
	size_t ibuf_len, ibuf_pos;
	int range;               /* tk_reader_open_range(): pread() */
	uint64_t range_pos, range_end;
	int feed;                /* tk_reader_open_feed() */
	int feed_ended;
	int need_header;         /* feed mode: first header not read yet */
	struct tkp_buf fbuf;     /* fed bytes; fpos consumed */
	size_t fpos;
	uint64_t offset;
	int is_open;

	struct tkp_error error;   /* sticky: every later call returns it */
	unsigned major, minor;
	unsigned scope;
	int raw;
	int ended;               /* the current scope's end chunk was read */
	uint64_t last_chunk_end; /* offset after the last complete chunk */
	uint64_t skipped;
	struct libdeflate_decompressor *dec;

	/* definitions of the current scope */
	struct tkp_arena_block *arena;
	struct rstring *strings;
	uint32_t nstrings;
	size_t strings_cap;
	struct tk_track **tracks;
	uint32_t ntracks;
	size_t tracks_cap;
	uint8_t *stream_track;   /* by track id: 1 for GPU streams */
	size_t stream_track_cap;
	struct tk_device **devices;
	uint32_t ndevices;
	size_t devices_cap;
	struct config *configs;
	uint32_t nconfigs;
	size_t configs_cap;
	uint64_t configs_gen;    /* changes when a configuration does (a new
	                            scope, one redefined): a worker's copy of
	                            the same generation holds the same */
	struct tk_meta **meta;
	size_t nmeta, meta_cap;
	struct tk_category **cats;
	size_t ncats, cats_cap;

	/* the current chunk */
	struct tk_chunk_info chunk;
	struct tkp_buf stored;
	struct tkp_buf raw_buf;
	struct pending *pending;
	size_t npending, pending_pos, pending_cap;
	uint32_t nev, ev_pos;
	size_t ev_cap;
	uint8_t *kinds;
	uint32_t *trackv;
	int64_t *tsv;
	int64_t *durv;
	uint32_t *namev;
	/* grouped chunks (TK_CHUNK_GROUPED): columns come in stored order
	 * and are put back in time order through these */
	int grouped;
	uint32_t *order;         /* stored position -> event index */
	uint32_t *aux;           /* a grouped chunk's stored tracks, then
	                            each event's index among its kind's */
	int64_t *tsv_alt, *durv_alt;
	uint32_t *namev_alt;
	/* one decoded attribute column, of one kind at a time: shared by
	 * the kinds, so that its pages are those of the largest kind's
	 * count, not of every event of the chunk */
	uint64_t *scratch;
	const uint8_t *kind_col; /* the kind column as stored */
	struct kind_cols kc[TK_KIND_MAX + 1];
	/* per kind, per 8-byte word of the event's union: which bytes are
	 * the kind's struct (fill_event_at() keeps those, zeroes the rest) */
	uint64_t union_mask[TK_KIND_MAX + 1][UNION_WORDS];
	/* Where each kind's attribute columns lie in raw_buf; they are
	 * decoded when the chunk's first event is, so that a caller of
	 * tk_reader_next_columns() never pays for them. */
	struct colloc cols[TK_KIND_MAX + 1][TKP_ATTR_MAX + 1];
	int attrs_pending;
	int64_t *pred;           /* per track: the next begin time's prediction */
	size_t pred_cap;         /* of pred, dprev and tgroup */
	uint64_t *dprev;         /* per track, for D columns */
	uint32_t *tgroup;        /* per track: its group, UINT32_MAX if none */
	struct tkp_args_decoder args_dec; /* args stored as templates */
	/* A worker's decoder (a slot's, rpool.h) has no definitions: its
	 * ids go unchecked and strings unresolved, and stream_track and
	 * configs are copies of the reader's taken when the chunk was read
	 * ahead.  What it left unchecked, in unchecked. */
	int detached;
	int snapshot_ok;         /* detached: stream_track, configs, raw and
	                            no_args were copied for this chunk */
	struct unchecked unchecked;
	/* the reader: the current chunk's columns came from a worker, whose
	 * attributes are used if `adopted` allows at decode_attrs() */
	int attrs_adopted;
	struct unchecked adopted;
	/* the caller has asked for whole events (tk_reader_next() and the
	 * like), so workers decode each chunk's attributes too; a caller of
	 * tk_reader_next_columns() alone never needs them, and a worker's
	 * decode of them would only hold up the next chunk's columns.  In
	 * a worker's decoder, the reader's when the chunk was read ahead. */
	int attrs_wanted;

	/* options (tk_reader_set_options()) */
	unsigned threads;        /* 0: TK_THREADS, else the cores */
	int no_args;
	int chunk_no_args;       /* no_args as it was when the current
	                            chunk's attributes were decoded */
	/* the worker threads (rpool.h), started at the second unit of an
	 * input large enough (pool_wanted()); units are read ahead into
	 * their slots, the reader's input position and errors kept apart
	 * while it does */
	struct tkp_rpool *pool;
	int first_unit_read;     /* this input: its first unit was read */
	int pool_off;            /* this input is read on this thread */
	int input_unsized;       /* this input's size is not known (a pipe) */
	uint64_t open_offset;    /* r->offset where this input began */
	int ahead_stopped;       /* the read-ahead met an end or a fault */
	uint64_t ahead_offset;   /* the input offset of the read-ahead */
	struct tkp_rslot *cur;   /* the unit next_unit() goes through */
	size_t cur_pos;

	struct tk_event ev;
};

static const struct tk_track unknown_track = { 0, TK_TRACK_UNKNOWN, { { 0 } } };

/* A failure not caused by a system call (errno 0). */
#define fail(r, code, ...) tkp_error_set(&(r)->error, (code), 0, __VA_ARGS__)

static int
nomem(struct tk_reader *r)
{
	return tkp_error_set(&r->error, TK_ENOMEM, ENOMEM, "out of memory");
}

static int
corrupt(struct tk_reader *r, const char *what)
{
	return fail(r, TK_ECORRUPT, "corrupt chunk at byte %llu (%s)",
	            (unsigned long long)r->chunk.offset, what);
}

TK_PUBLIC struct tk_reader *
tk_reader_new(void)
{
	struct tk_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->fd = -1;
	for (unsigned k = 1; k <= TK_KIND_MAX; k++)
		for (unsigned b = 0; b < UNION_SIZE; b++)
			if (b < tkp_schema[k].size)
				r->union_mask[k][b / 8] |= UINT64_C(0xff) << (8 * (b % 8));
	r->dec = libdeflate_alloc_decompressor();
	if (!r->dec) {
		free(r);
		return NULL;
	}
	return r;
}

/* ---- definitions storage ---------------------------------------------------- */

static void
free_track(struct tk_track *t)
{
	if (t && t->type == TK_TRACK_PROCESS)
		free((void *)t->u.process.argv);
	free(t);
}

static void
clear_defs(struct tk_reader *r)
{
	for (uint32_t i = 1; i <= r->ntracks; i++) {
		free_track(r->tracks[i]);
		r->tracks[i] = NULL;
	}
	if (r->stream_track)
		memset(r->stream_track, 0, r->stream_track_cap);
	for (uint32_t i = 1; i <= r->ndevices; i++) {
		free(r->devices[i]);
		r->devices[i] = NULL;
	}
	for (size_t i = 0; i < r->nmeta; i++)
		free(r->meta[i]);
	for (size_t i = 0; i < r->ncats; i++)
		free(r->cats[i]);
	r->nstrings = r->ntracks = r->ndevices = r->nconfigs = 0;
	r->configs_gen++;
	r->nmeta = r->ncats = 0;
	tkp_arena_free(&r->arena);
}

static void
close_input(struct tk_reader *r)
{
	tkp_rpool_free(r->pool);
	r->pool = NULL;
	r->cur = NULL;
	r->ahead_stopped = 0;
	r->first_unit_read = 0;
	r->pool_off = 0;
	r->input_unsized = 0;
	if (r->own_fd && r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	r->own_fd = 0;
	r->mem = NULL;
}

TK_PUBLIC void
tk_reader_free(struct tk_reader *r)
{
	if (!r)
		return;
	close_input(r);
	clear_defs(r);
	free(r->name);
	free(r->ibuf);
	libdeflate_free_decompressor(r->dec);
	free(r->strings);
	free(r->tracks);
	free(r->devices);
	free(r->configs);
	free(r->meta);
	free(r->cats);
	tkp_buf_free(&r->stored);
	tkp_buf_free(&r->raw_buf);
	tkp_buf_free(&r->fbuf);
	free(r->pending);
	free(r->kinds);
	free(r->trackv);
	free(r->tsv);
	free(r->durv);
	free(r->namev);
	for (unsigned k = 0; k <= TK_KIND_MAX; k++) {
		free(r->kc[k].attrs);
		free(r->kc[k].tracks);
		free(r->kc[k].args);
		free(r->kc[k].args_len);
		free(r->kc[k].config_ids);
		tkp_buf_free(&r->kc[k].args_text);
	}
	tkp_args_decoder_free(&r->args_dec);
	free(r->stream_track);
	free(r->pred);
	free(r->dprev);
	free(r->tgroup);
	free(r->order);
	free(r->aux);
	free(r->tsv_alt);
	free(r->durv_alt);
	free(r->namev_alt);
	free(r->scratch);
	free(r);
}

/* Grow *arr (of elem-sized items) so that index `need` fits; new
 * items are zero. */
static int
grow(void **arr, size_t *cap, size_t elem, size_t need)
{
	size_t old = *cap;
	void *p = tkp_grow(*arr, cap, need + 1, elem);
	if (!p)
		return -1;
	memset((char *)p + old * elem, 0, (*cap - old) * elem);
	*arr = p;
	return 0;
}

static int
push_ptr(void ***arr, size_t *n, size_t *cap, void *p)
{
	void **a = tkp_grow(*arr, cap, *n + 1, sizeof(*a));
	if (!a)
		return -1;
	*arr = a;
	a[(*n)++] = p;
	return 0;
}

static int
add_pending(struct tk_reader *r, enum tk_record_type type, const void *ptr)
{
	struct pending *p = tkp_grow(r->pending, &r->pending_cap,
	                             r->npending + 1, sizeof(*p));
	if (!p)
		return nomem(r);
	r->pending = p;
	r->pending[r->npending++] = (struct pending){ type, ptr };
	return TK_OK;
}

/* ---- input -------------------------------------------------------------------- */

/* read(2), or pread(2) within the range of tk_reader_open_range(). */
static ssize_t
fd_read(struct tk_reader *r, void *dst, size_t n)
{
	if (!r->range)
		return read(r->fd, dst, n);
	uint64_t left = r->range_end - r->range_pos;
	if (n > left)
		n = (size_t)left;
	if (n == 0)
		return 0;
	ssize_t k = pread(r->fd, dst, n, (off_t)r->range_pos);
	if (k > 0)
		r->range_pos += (uint64_t)k;
	return k;
}

/* Read up to n bytes into dst; fewer only at the end of the input.
 * Not inlined: gcc -O3 would otherwise warn that the large-read branch
 * could overflow the small header buffers it is never used for. */
/* Read from the unit read ahead (rpool.h) as from the input: where
 * its bytes end, the read error met after them, if any. */
static int
unit_read(struct tk_reader *r, uint8_t *dst, size_t n, size_t *got)
{
	struct tkp_rslot *s = r->cur;
	size_t left = s->len - r->cur_pos;
	size_t k = n < left ? n : left;
	if (k)
		memcpy(dst, s->bytes + r->cur_pos, k);
	r->cur_pos += k;
	r->offset += k;
	*got = k;
	if (k < n && s->read_err.code && !r->error.code) {
		r->error = s->read_err;
		return r->error.code;
	}
	return TK_OK;
}

static __attribute__((noinline)) int
input_read(struct tk_reader *r, void *dst, size_t n, size_t *got)
{
	uint8_t *d = dst;
	*got = 0;
	if (r->cur)
		return unit_read(r, d, n, got);
	if (r->feed) {
		size_t left = r->fbuf.len - r->fpos;
		size_t k = n < left ? n : left;
		if (k)
			memcpy(d, r->fbuf.p + r->fpos, k);
		r->fpos += k;
		*got = k;
		r->offset += k;
		return TK_OK;
	}
	if (r->mem) {
		size_t left = r->mem_len - r->mem_pos;
		size_t k = n < left ? n : left;
		memcpy(d, r->mem + r->mem_pos, k);
		r->mem_pos += k;
		*got = k;
		r->offset += k;
		return TK_OK;
	}
	while (*got < n) {
		if (r->ibuf_pos < r->ibuf_len) {
			size_t k = r->ibuf_len - r->ibuf_pos;
			if (k > n - *got)
				k = n - *got;
			memcpy(d + *got, r->ibuf + r->ibuf_pos, k);
			r->ibuf_pos += k;
			*got += k;
			continue;
		}
		ssize_t k;
		if (n - *got >= IBUF_SIZE) {
			/* big reads go straight to the destination */
			k = fd_read(r, d + *got, n - *got);
			if (k > 0)
				*got += (size_t)k;
		} else {
			k = fd_read(r, r->ibuf, IBUF_SIZE);
			if (k > 0) {
				r->ibuf_len = (size_t)k;
				r->ibuf_pos = 0;
			}
		}
		if (k == 0)
			break;
		if (k < 0) {
			int e = errno;
			if (e == EINTR)
				continue;
			r->offset += *got;
			return tkp_error_set(&r->error, TK_EIO, e,
			                     "read error at byte %llu: %s",
			                     (unsigned long long)r->offset, strerror(e));
		}
	}
	r->offset += *got;
	return TK_OK;
}

/* Point *p at the next n bytes of input (copied into `buf` unless the
 * input is in memory). */
static int
input_take(struct tk_reader *r, size_t n, struct tkp_buf *buf,
           const uint8_t **p, size_t *got)
{
	if (r->cur) {
		size_t left = r->cur->len - r->cur_pos;
		if (n <= left) { /* no copy */
			*p = r->cur->bytes + r->cur_pos;
			*got = n;
			r->cur_pos += n;
			r->offset += n;
			return TK_OK;
		}
	} else if (r->mem) {
		size_t left = r->mem_len - r->mem_pos;
		*got = n < left ? n : left;
		*p = r->mem + r->mem_pos;
		r->mem_pos += *got;
		r->offset += *got;
		return TK_OK;
	}
	buf->len = 0;
	if (tkp_buf_reserve(buf, n ? n : 1) < 0)
		return nomem(r);
	*p = buf->p;
	return input_read(r, buf->p, n, got);
}

static void
reset_input(struct tk_reader *r)
{
	close_input(r);
	clear_defs(r);
	tkp_error_clear(&r->error);
	r->offset = r->open_offset = 0;
	r->scope = 0;
	r->skipped = 0;
	r->ibuf_len = r->ibuf_pos = 0;
	r->mem_len = r->mem_pos = 0;
	r->feed = r->feed_ended = r->need_header = 0;
	r->range = 0;
	r->range_pos = r->range_end = 0;
	r->fbuf.len = 0;
	r->fpos = 0;
	r->npending = r->pending_pos = 0;
	r->nev = r->ev_pos = 0;
	r->attrs_pending = 0;
	r->attrs_adopted = 0;
	r->is_open = 0;
	memset(&r->chunk, 0, sizeof(r->chunk));
	r->chunk.watermark = INT64_MIN;
}

static int read_header(struct tk_reader *r, const uint8_t *first4, size_t have);
static void snapshot_defs(struct tk_reader *r, struct tk_reader *w);
static void decode_on_worker(struct tkp_rslot *s);

static int
set_name(struct tk_reader *r, const char *name)
{
	free(r->name);
	r->name = strdup(name ? name : "(input)");
	return r->name ? TK_OK : nomem(r);
}

static int
open_common(struct tk_reader *r)
{
	int rc = read_header(r, NULL, 0);
	if (rc == TK_OK)
		r->is_open = 1;
	return rc;
}

TK_PUBLIC int
tk_reader_open_fd(struct tk_reader *r, int fd, const char *name)
{
	if (!r || fd < 0)
		return TK_EINVAL;
	reset_input(r);
	if (set_name(r, name))
		return r->error.code;
	if (!r->ibuf && !(r->ibuf = malloc(IBUF_SIZE)))
		return nomem(r);
	r->fd = fd;
	return open_common(r);
}

TK_PUBLIC int
tk_reader_open_range(struct tk_reader *r, int fd, uint64_t offset,
                     uint64_t length, const char *name)
{
	if (!r || fd < 0 || offset > INT64_MAX || length > INT64_MAX - offset)
		return TK_EINVAL;
	reset_input(r);
	if (set_name(r, name))
		return r->error.code;
	if (!r->ibuf && !(r->ibuf = malloc(IBUF_SIZE)))
		return nomem(r);
	r->fd = fd;
	r->range = 1;
	r->range_pos = offset;
	r->range_end = offset + length;
	r->offset = r->open_offset = offset; /* messages give offsets in the file */
	return open_common(r);
}

TK_PUBLIC int
tk_reader_open_path(struct tk_reader *r, const char *path)
{
	if (!r || !path)
		return TK_EINVAL;
	if (strcmp(path, "-") == 0)
		return tk_reader_open_fd(r, STDIN_FILENO, "(stdin)");
	reset_input(r);
	if (set_name(r, path))
		return r->error.code;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		return tkp_error_set(&r->error, TK_EIO, e, "%s", strerror(e));
	}
	int rc = tk_reader_open_fd(r, fd, path);
	r->own_fd = 1;
	return rc;
}

TK_PUBLIC int
tk_reader_open_mem(struct tk_reader *r, const void *buf, size_t len,
                   const char *name)
{
	if (!r || (!buf && len))
		return TK_EINVAL;
	reset_input(r);
	if (set_name(r, name))
		return r->error.code;
	static const uint8_t empty[1];
	r->mem = buf ? buf : empty;
	r->mem_len = len;
	return open_common(r);
}

TK_PUBLIC int
tk_reader_open_feed(struct tk_reader *r, const char *name)
{
	if (!r)
		return TK_EINVAL;
	reset_input(r);
	if (set_name(r, name))
		return r->error.code;
	r->feed = 1;
	r->need_header = 1;
	r->is_open = 1;
	return TK_OK;
}

TK_PUBLIC int
tk_reader_feed(struct tk_reader *r, const void *buf, size_t len)
{
	if (!r || !r->feed || r->feed_ended || (!buf && len))
		return TK_EINVAL;
	/* drop what was consumed once it is most of the buffer */
	if (r->fpos > 0 && r->fpos >= r->fbuf.len / 2) {
		memmove(r->fbuf.p, r->fbuf.p + r->fpos, r->fbuf.len - r->fpos);
		r->fbuf.len -= r->fpos;
		r->fpos = 0;
	}
	if (tkp_buf_put(&r->fbuf, buf, len) < 0)
		return nomem(r);
	return TK_OK;
}

TK_PUBLIC void
tk_reader_feed_end(struct tk_reader *r)
{
	if (r && r->feed)
		r->feed_ended = 1;
}

/* Feed mode: is the next header or chunk here in full?  Nothing is
 * consumed; malformed sizes are left for the normal path to report. */
static int
feed_ready(const struct tk_reader *r)
{
	if (r->feed_ended)
		return 1;
	const uint8_t *p = r->fbuf.p + r->fpos;
	size_t avail = r->fbuf.len - r->fpos;
	if (avail < 16)
		return 0;
	if (tkp_is_file_magic(p, 8)) {
		struct tkp_file_header fh;
		tkp_file_header_decode(p, 16, &fh);
		return fh.size > TKP_HEADER_MAX || avail >= fh.size;
	}
	if (tkp_is_chunk_magic(p)) {
		struct tkp_chunk_header ch;
		tkp_chunk_header_decode(p, 16, &ch);
		if (ch.size < 16 || ch.size > TKP_HEADER_MAX)
			return 1;
		if (ch.stored > TKP_CHUNK_STORED_MAX)
			return 1;
		return avail >= (size_t)ch.size + ch.stored;
	}
	return 1;
}

void
tkp_reader_set_raw(struct tk_reader *r, int raw)
{
	r->raw = raw;
}

/* ---- reading ahead (rpool.h) ------------------------------------------------------ */

/* The thread count asked for: the threads option, else TK_THREADS;
 * 0 when neither asks. */
static unsigned
asked_threads(const struct tk_reader *r)
{
	if (r->threads)
		return r->threads;
	const char *env = getenv("TK_THREADS");
	if (env && *env) {
		char *end;
		unsigned long v = strtoul(env, &end, 10);
		if (!*end && v >= 1)
			return v > 64 ? 64 : (unsigned)v;
	}
	return 0;
}

/* The machine's cores, at most THREADS_DEFAULT_MAX. */
static unsigned
default_threads(void)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	if (cores <= 1)
		return 1;
	return (unsigned long)cores > THREADS_DEFAULT_MAX ? THREADS_DEFAULT_MAX
	                                                 : (unsigned)cores;
}

/* The input's bytes not yet consumed, where its size is known (memory,
 * a range, a regular file): 1 and *left; 0 for a pipe or a terminal. */
static int
input_left(const struct tk_reader *r, uint64_t *left)
{
	if (r->mem) {
		*left = r->mem_len - r->mem_pos;
		return 1;
	}
	uint64_t buffered = r->ibuf_len - r->ibuf_pos;
	if (r->range) {
		*left = r->range_end - r->range_pos + buffered;
		return 1;
	}
	struct stat st;
	off_t pos;
	if (fstat(r->fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (pos = lseek(r->fd, 0, SEEK_CUR)) < 0)
		return 0;
	*left = (st.st_size > pos ? (uint64_t)(st.st_size - pos) : 0) + buffered;
	return 1;
}

/* Whether to start the workers now, at a unit after the first, and how
 * many: the count asked for whatever the input's size; otherwise one a
 * core for an input of THREADS_MIN_INPUT bytes or more, by its size
 * where known (decided at once), else once that much has been read (a
 * pipe: asked again at each unit).  Sets pool_off when the answer is
 * no for good. */
static int
pool_wanted(struct tk_reader *r, unsigned *threads)
{
	if ((*threads = asked_threads(r))) {
		r->pool_off = *threads <= 1;
		return !r->pool_off;
	}
	uint64_t size = r->offset - r->open_offset, left;
	if (!r->input_unsized) {
		if (input_left(r, &left)) {
			if (size + left < THREADS_MIN_INPUT) {
				r->pool_off = 1;
				return 0;
			}
		} else {
			r->input_unsized = 1;
		}
	}
	if (r->input_unsized && size < THREADS_MIN_INPUT)
		return 0;
	*threads = default_threads();
	r->pool_off = *threads <= 1;
	return !r->pool_off;
}

/* Append up to n more input bytes to the unit in s: 1 if all came. */
static int
ahead_take(struct tk_reader *r, struct tkp_rslot *s, size_t n)
{
	size_t got;
	if (r->mem) { /* the unit is the caller's memory */
		size_t left = r->mem_len - r->mem_pos;
		got = n < left ? n : left;
		if (!s->len)
			s->bytes = r->mem + r->mem_pos;
		r->mem_pos += got;
		r->offset += got;
		s->len += got;
		return got == n;
	}
	if (tkp_buf_reserve(&s->in, n) < 0) {
		nomem(r);
		return 0;
	}
	input_read(r, s->in.p + s->in.len, n, &got);
	s->in.len += got;
	s->bytes = s->in.p;
	s->len = s->in.len;
	return got == n && !r->error.code;
}

/* Read the bytes of the next unit into s as next_unit() will go
 * through them: a whole chunk, a whole header, or, where the framing
 * stops (an end, a short read, a bad size or magic), what was read;
 * nothing is read ahead after that. */
static void
read_unit(struct tk_reader *r, struct tkp_rslot *s)
{
	uint64_t offset = r->offset;
	r->offset = r->ahead_offset;
	s->in.len = s->len = 0;
	s->bytes = NULL;
	s->chunk = 0;
	s->last = 1;
	tkp_error_clear(&s->read_err);
	if (!ahead_take(r, s, 4))
		goto out;
	if (tkp_is_chunk_magic(s->bytes)) {
		struct tkp_chunk_header ch;
		if (!ahead_take(r, s, 4))
			goto out;
		tkp_chunk_header_decode(s->bytes, 8, &ch);
		if (!tkp_chunk_header_size_ok(ch.size) ||
		    !ahead_take(r, s, ch.size - 8))
			goto out;
		tkp_chunk_header_decode(s->bytes, ch.size, &ch);
		if (!tkp_chunk_header_sizes_ok(&ch) || !ahead_take(r, s, ch.stored))
			goto out;
		s->chunk = 1;
		s->last = 0;
	} else if (tkp_is_file_magic(s->bytes, 4)) {
		struct tkp_file_header fh;
		if (!ahead_take(r, s, TKP_HEADER_PREFIX - 4))
			goto out;
		tkp_file_header_decode(s->bytes, TKP_HEADER_PREFIX, &fh);
		if (!tkp_file_header_size_ok(fh.size) ||
		    !ahead_take(r, s, fh.size - TKP_HEADER_PREFIX))
			goto out;
		s->last = 0;
	}
out:
	if (r->error.code) { /* told when the reader gets there */
		s->read_err = r->error;
		tkp_error_clear(&r->error);
	}
	r->ahead_offset = r->offset;
	r->offset = offset;
	if (s->last)
		r->ahead_stopped = 1;
}

/* Make the next unit read ahead r->cur, once its worker is done with
 * it; r->cur stays NULL when nothing is read ahead (one thread, a small
 * input, or the read-ahead stopped and its last unit was gone through:
 * the input goes on from where it stopped). */
static void
pool_next(struct tk_reader *r)
{
	if (r->cur) {
		tkp_rpool_release(r->pool, r->cur);
		r->cur = NULL;
	}
	if (!r->pool) {
		/* the first unit on this thread (a trace of one chunk never
		 * starts the workers), the pool from a later one */
		unsigned threads;
		if (r->pool_off || !r->first_unit_read) {
			r->first_unit_read = 1;
			return;
		}
		if (!pool_wanted(r, &threads))
			return;
		/* tried once: out of memory, read on this thread */
		r->pool_off = 1;
		if (!(r->pool = tkp_rpool_new(threads)))
			return;
		/* a decoder a slot, for its chunks' columns (none: the
		 * columns are decoded on this thread) */
		for (unsigned i = 0; i < r->pool->nslots; i++)
			if ((r->pool->slots[i].decoder = tk_reader_new()))
				r->pool->slots[i].decoder->detached = 1;
		r->pool->decode = decode_on_worker;
		r->ahead_offset = r->offset;
	}
	struct tkp_rslot *s;
	while (!r->ahead_stopped && (s = tkp_rpool_free_slot(r->pool))) {
		read_unit(r, s);
		if (s->chunk && s->decoder)
			snapshot_defs(r, s->decoder);
		tkp_rpool_post(r->pool, s);
	}
	r->cur = tkp_rpool_take(r->pool);
	r->cur_pos = 0;
}

/* ---- headers -------------------------------------------------------------------- */

static int
check_crc(const uint8_t *p, size_t n, uint32_t stored, uint32_t init,
          uint32_t *out)
{
	uint32_t crc = tkp_crc32(init, p, n);
	if (out)
		*out = crc;
#ifdef TK_FUZZING
	(void)stored;
	return 1; /* let fuzzers past the checksum */
#else
	return crc == stored;
#endif
}

/* Read a file header.  `first4` holds bytes already read (a header met
 * where a chunk was expected). */
static int
read_header(struct tk_reader *r, const uint8_t *first4, size_t have)
{
	uint8_t h[TKP_HEADER_MAX];
	uint64_t at = r->offset - have;
	size_t got;
	if (have)
		memcpy(h, first4, have);
	int rc = input_read(r, h + have, TKP_HEADER_PREFIX - have, &got);
	if (rc)
		return rc;
	got += have;
	if (got == 0 && r->scope == 0)
		return fail(r, TK_EFORMAT, "empty input (not a trace)");
	if (!tkp_is_file_magic(h, got))
		return fail(r, TK_EFORMAT, "not a tracekit trace (bad magic at byte %llu)",
		            (unsigned long long)at);
	if (got < TKP_HEADER_PREFIX)
		return fail(r, TK_ETRUNC, "truncated header at byte %llu",
		            (unsigned long long)at);
	struct tkp_file_header fh;
	tkp_file_header_decode(h, TKP_HEADER_PREFIX, &fh);
	if (!tkp_file_header_size_ok(fh.size))
		return fail(r, TK_ECORRUPT, "corrupt header at byte %llu (size %u)",
		            (unsigned long long)at, fh.size);
	rc = input_read(r, h + TKP_HEADER_PREFIX, fh.size - TKP_HEADER_PREFIX, &got);
	if (rc)
		return rc;
	if (got < fh.size - TKP_HEADER_PREFIX)
		return fail(r, TK_ETRUNC, "truncated header at byte %llu",
		            (unsigned long long)at);
	tkp_file_header_decode(h, fh.size, &fh);
	/* every version ends its header with a CRC32 of the rest, so a
	 * damaged version number is told apart from a newer one */
	if (!check_crc(h, fh.size - 4, fh.crc, 0, NULL))
		return fail(r, TK_ECORRUPT,
		            "corrupt header at byte %llu (checksum mismatch)",
		            (unsigned long long)at);
	if (fh.major != TK_FORMAT_MAJOR)
		return fail(r, TK_EVERSION,
		            "unsupported format version %u.%u at byte %llu "
		            "(this reader reads %u.x)",
		            fh.major, fh.minor, (unsigned long long)at,
		            TK_FORMAT_MAJOR);
	if (fh.incompat)
		return fail(r, TK_EVERSION,
		            "unsupported format features 0x%llx at byte %llu",
		            (unsigned long long)fh.incompat, (unsigned long long)at);
	clear_defs(r);
	r->major = fh.major;
	r->minor = fh.minor;
	r->scope++;
	r->ended = 0;
	r->last_chunk_end = r->offset;
	r->chunk.watermark = INT64_MIN;
	return TK_OK;
}

/* ---- definitions ----------------------------------------------------------------- */

/* A cursor over one definition record: fields past its end read as 0,
 * so that records from older minor versions decode too. */
struct cursor {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t
cur_u(struct cursor *c)
{
	uint64_t v = 0;
	if (c->p < c->end && tkp_varint_get(&c->p, c->end, &v) < 0)
		c->bad = 1;
	return v;
}

static int64_t
cur_s(struct cursor *c)
{
	return tkp_unzigzag(cur_u(c));
}

static uint32_t
cur_u32(struct cursor *c)
{
	uint64_t v = cur_u(c);
	if (v > UINT32_MAX)
		c->bad = 1;
	return (uint32_t)v;
}

/* A string id from a definition, resolved. */
static const char *
cur_str(struct tk_reader *r, struct cursor *c)
{
	uint64_t id = cur_u(c);
	if (id == 0)
		return "";
	if (id > r->nstrings) {
		c->bad = 1;
		return "";
	}
	return r->strings[id].s;
}

static int
def_string(struct tk_reader *r, struct cursor *c)
{
	uint64_t id = cur_u(c);
	if (c->bad || id == 0 || id > (uint64_t)r->nstrings + 1 ||
	    id >= TKP_ID_MAX)
		return corrupt(r, "bad string definition");
	if (grow((void **)&r->strings, &r->strings_cap, sizeof(*r->strings), id))
		return nomem(r);
	size_t len = (size_t)(c->end - c->p);
	const char *s = tkp_arena_copy(&r->arena, c->p, len);
	if (!s)
		return nomem(r);
	r->strings[id] = (struct rstring){ s, (uint32_t)len };
	if (id > r->nstrings)
		r->nstrings = (uint32_t)id;
	return TK_OK;
}

/* The track to fill for a definition of `id` and `type`: a new one, or
 * the existing one when redefined (same type only). */
static struct tk_track *
track_slot(struct tk_reader *r, uint64_t id, enum tk_track_type type)
{
	if (id == 0 || id > (uint64_t)r->ntracks + 1 || id >= TKP_ID_MAX) {
		corrupt(r, "bad track id");
		return NULL;
	}
	if (id <= r->ntracks) {
		struct tk_track *t = r->tracks[id];
		if (t->type != type) {
			corrupt(r, "track redefined with another type");
			return NULL;
		}
		return t;
	}
	if (grow((void **)&r->tracks, &r->tracks_cap, sizeof(*r->tracks), id)) {
		nomem(r);
		return NULL;
	}
	struct tk_track *t = calloc(1, sizeof(*t));
	if (!t) {
		nomem(r);
		return NULL;
	}
	t->id = (uint32_t)id;
	t->type = type;
	r->tracks[id] = t;
	r->ntracks = (uint32_t)id;
	if (grow((void **)&r->stream_track, &r->stream_track_cap, 1, id)) {
		nomem(r);
		return NULL;
	}
	r->stream_track[id] = type == TK_TRACK_STREAM;
	return t;
}

static int
def_process(struct tk_reader *r, struct cursor *c)
{
	uint64_t id = cur_u(c);
	struct tk_process p = { 0 };
	p.host = cur_str(r, c);
	p.pid = cur_s(c);
	p.ppid = cur_s(c);
	p.start = cur_s(c);
	p.label = cur_str(r, c);
	uint64_t argc = cur_u(c);
	if (c->bad || argc > (uint64_t)(c->end - c->p))
		return corrupt(r, "bad process definition");
	const char **argv = calloc(argc + 1, sizeof(*argv));
	if (!argv)
		return nomem(r);
	for (uint64_t i = 0; i < argc; i++)
		argv[i] = cur_str(r, c);
	if (c->bad) {
		free(argv);
		return corrupt(r, "bad process definition");
	}
	p.argc = (uint32_t)argc;
	p.argv = argv;
	struct tk_track *t = track_slot(r, id, TK_TRACK_PROCESS);
	if (!t) {
		free(argv);
		return r->error.code;
	}
	free((void *)t->u.process.argv);
	t->u.process = p;
	return add_pending(r, TK_REC_TRACK, t);
}

static int
def_thread(struct tk_reader *r, struct cursor *c)
{
	uint64_t id = cur_u(c);
	struct tk_thread th = { 0 };
	th.process = cur_u32(c);
	th.tid = cur_s(c);
	th.name = cur_str(r, c);
	if (c->bad)
		return corrupt(r, "bad thread definition");
	struct tk_track *t = track_slot(r, id, TK_TRACK_THREAD);
	if (!t)
		return r->error.code;
	t->u.thread = th;
	return add_pending(r, TK_REC_TRACK, t);
}

static int
def_stream(struct tk_reader *r, struct cursor *c)
{
	uint64_t id = cur_u(c);
	struct tk_stream s = { 0 };
	s.process = cur_u32(c);
	s.device = cur_u32(c);
	s.context = cur_u(c);
	s.stream = cur_u(c);
	s.name = cur_str(r, c);
	if (c->bad)
		return corrupt(r, "bad stream definition");
	struct tk_track *t = track_slot(r, id, TK_TRACK_STREAM);
	if (!t)
		return r->error.code;
	t->u.stream = s;
	return add_pending(r, TK_REC_TRACK, t);
}

static int
def_counter(struct tk_reader *r, struct cursor *c)
{
	uint64_t id = cur_u(c);
	struct tk_counter k = { 0 };
	k.name = cur_str(r, c);
	k.unit = cur_str(r, c);
	k.process = cur_u32(c);
	k.device = cur_u32(c);
	if (c->bad)
		return corrupt(r, "bad counter definition");
	struct tk_track *t = track_slot(r, id, TK_TRACK_COUNTER);
	if (!t)
		return r->error.code;
	t->u.counter = k;
	return add_pending(r, TK_REC_TRACK, t);
}

static int
def_device(struct tk_reader *r, struct cursor *c)
{
	uint64_t id = cur_u(c);
	if (id == 0 || id > (uint64_t)r->ndevices + 1 || id >= TKP_ID_MAX)
		return corrupt(r, "bad device id");
	struct tk_device d = { 0 };
	d.id = (uint32_t)id;
	d.host = cur_str(r, c);
	d.index = cur_u32(c);
	d.name = cur_str(r, c);
	d.sm_count = cur_u32(c);
	d.memory = cur_u(c);
	d.cc_major = cur_u32(c);
	d.cc_minor = cur_u32(c);
	if (c->end - c->p >= 16) {
		memcpy(d.uuid, c->p, 16);
		c->p += 16;
	}
	if (c->bad)
		return corrupt(r, "bad device definition");
	if (grow((void **)&r->devices, &r->devices_cap, sizeof(*r->devices), id))
		return nomem(r);
	struct tk_device *dp = r->devices[id];
	if (!dp && !(dp = malloc(sizeof(*dp))))
		return nomem(r);
	*dp = d;
	r->devices[id] = dp;
	if (id > r->ndevices)
		r->ndevices = (uint32_t)id;
	return add_pending(r, TK_REC_DEVICE, dp);
}

static int
def_config(struct tk_reader *r, struct cursor *c)
{
	uint64_t id = cur_u(c);
	if (id == 0 || id > (uint64_t)r->nconfigs + 1 || id >= TKP_ID_MAX)
		return corrupt(r, "bad launch configuration id");
	struct config cfg;
	for (int i = 0; i < 12; i++)
		cfg.v[i] = cur_u32(c);
	if (c->bad)
		return corrupt(r, "bad launch configuration");
	if (grow((void **)&r->configs, &r->configs_cap, sizeof(*r->configs), id))
		return nomem(r);
	if (id <= r->nconfigs)
		r->configs_gen++;
	r->configs[id] = cfg;
	if (id > r->nconfigs)
		r->nconfigs = (uint32_t)id;
	return TK_OK;
}

static int
def_meta(struct tk_reader *r, struct cursor *c)
{
	struct tk_meta m;
	m.key = cur_str(r, c);
	m.value = cur_str(r, c);
	if (c->bad)
		return corrupt(r, "bad metadata definition");
	struct tk_meta *mp = malloc(sizeof(*mp));
	if (!mp)
		return nomem(r);
	*mp = m;
	if (push_ptr((void ***)&r->meta, &r->nmeta, &r->meta_cap, mp)) {
		free(mp);
		return nomem(r);
	}
	return add_pending(r, TK_REC_META, mp);
}

static int
def_category(struct tk_reader *r, struct cursor *c)
{
	struct tk_category k;
	k.domain = cur_str(r, c);
	k.category = cur_u32(c);
	k.name = cur_str(r, c);
	if (c->bad)
		return corrupt(r, "bad category definition");
	struct tk_category *kp = malloc(sizeof(*kp));
	if (!kp)
		return nomem(r);
	*kp = k;
	if (push_ptr((void ***)&r->cats, &r->ncats, &r->cats_cap, kp)) {
		free(kp);
		return nomem(r);
	}
	return add_pending(r, TK_REC_CATEGORY, kp);
}

static int
parse_defs(struct tk_reader *r, const uint8_t *p, const uint8_t *end)
{
	while (p < end) {
		uint64_t type, len;
		if (tkp_varint_get(&p, end, &type) < 0 ||
		    tkp_varint_get(&p, end, &len) < 0 ||
		    len > (uint64_t)(end - p))
			return corrupt(r, "bad definition record");
		struct cursor c = { p, p + len, 0 };
		p += len;
		int rc = TK_OK;
		if (r->raw && type != TKP_DEF_CONFIG)
			continue;
		switch (type) {
		case TKP_DEF_STRING: rc = def_string(r, &c); break;
		case TKP_DEF_PROCESS: rc = def_process(r, &c); break;
		case TKP_DEF_THREAD: rc = def_thread(r, &c); break;
		case TKP_DEF_STREAM: rc = def_stream(r, &c); break;
		case TKP_DEF_COUNTER: rc = def_counter(r, &c); break;
		case TKP_DEF_DEVICE: rc = def_device(r, &c); break;
		case TKP_DEF_CONFIG: rc = def_config(r, &c); break;
		case TKP_DEF_META: rc = def_meta(r, &c); break;
		case TKP_DEF_CATEGORY: rc = def_category(r, &c); break;
		default: break; /* newer record type: skip */
		}
		if (rc)
			return rc;
	}
	return TK_OK;
}

/* ---- columns ----------------------------------------------------------------------- */

static int
ensure_event_arrays(struct tk_reader *r, uint32_t n)
{
	if (n <= r->ev_cap)
		return TK_OK;
	size_t old = r->ev_cap, cap = old;
#define GROW(a) tkp_grow_shared(&(a), old, n, sizeof(*(a)), &cap)
	if (GROW(r->kinds) || GROW(r->trackv) || GROW(r->tsv) ||
	    GROW(r->durv) || GROW(r->namev) || GROW(r->scratch) ||
	    /* for grouped chunks; the _alt arrays the same size as the
	     * others, as restore_order() swaps them */
	    GROW(r->order) || GROW(r->aux) || GROW(r->tsv_alt) ||
	    GROW(r->durv_alt) || GROW(r->namev_alt))
		return nomem(r);
#undef GROW
	r->ev_cap = cap;
	return TK_OK;
}

static int
ensure_kind_arrays(struct tk_reader *r, struct kind_cols *k, unsigned size)
{
	/* without args (no_args) their arrays are neither made nor
	 * touched: 12 bytes an event that the chunk never needs */
	if (!r->chunk_no_args && k->count > k->args_cap) {
		size_t old = k->args_cap, cap = old;
		if (tkp_grow_shared(&k->args, old, k->count, sizeof(*k->args), &cap) ||
		    tkp_grow_shared(&k->args_len, old, k->count,
		                    sizeof(*k->args_len), &cap))
			return nomem(r);
		k->args_cap = cap;
	}
	if (k->count <= k->cap)
		return TK_OK;
	size_t old = k->cap, cap = old;
#define GROW(a) tkp_grow_shared(&(a), old, k->count, sizeof(*(a)), &cap)
	/* config_ids by both sides: a worker's decoder and the reader
	 * swap these arrays (adopt()); only the former touches it */
	if (GROW(k->tracks) || GROW(k->config_ids))
		return nomem(r);
#undef GROW
	/* the structs, with a union's worth of zeros after the last one
	 * (fill_event_at() reads whole unions) */
	void *p = realloc(k->attrs, cap * size + UNION_SIZE);
	if (!p)
		return nomem(r);
	k->attrs = p;
	memset(k->attrs + cap * size, 0, UNION_SIZE);
	k->cap = cap;
	return TK_OK;
}

/* A numeric column's head (see put_planes() in writer.c and
 * tracekit-format(5)): width, first value, base, then `width` planes of
 * the other values' low bytes, each plane `rest` bytes long. */
struct planes {
	const uint8_t *p;
	size_t rest;
	unsigned width;
	uint64_t first, base;
};

static int
planes_open(struct tk_reader *r, const struct colloc *c, uint32_t n,
            struct planes *pl)
{
	const uint8_t *p = c->p, *end = c->p + c->len;
	if (p >= end || *p > 8)
		return corrupt(r, "bad column width");
	pl->width = *p++;
	pl->rest = n ? n - 1 : 0;
	if (tkp_varint_get(&p, end, &pl->first) < 0 ||
	    tkp_varint_get(&p, end, &pl->base) < 0 ||
	    (size_t)(end - p) != (size_t)pl->width * pl->rest || n == 0)
		return corrupt(r, "bad column length");
	pl->p = p;
	return TK_OK;
}

/* The value of byte planes at index i; always inlined with a constant
 * width, so that the loop around it is unrolled and vectorised. */
static inline __attribute__((always_inline)) uint64_t
plane_value(const uint8_t *p, size_t rest, size_t i, unsigned width)
{
	uint64_t v = 0;
	for (unsigned b = 0; b < width; b++)
		v |= (uint64_t)p[(size_t)b * rest + i] << (8 * b);
	return v;
}

/* The largest value the column can hold, from its head alone. */
static uint64_t
planes_bound(const struct planes *pl)
{
	uint64_t span = pl->width >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * pl->width)) - 1;
	uint64_t top = pl->base > UINT64_MAX - span ? UINT64_MAX : pl->base + span;
	return pl->first > top ? pl->first : top;
}

/* Decode the values of opened planes into out[]. */
static void
decode_planes(const struct planes *pl, uint64_t *out)
{
	const uint8_t *p = pl->p;
	size_t rest = pl->rest;
	uint64_t base = pl->base;
	out[0] = pl->first;
	out++;
#define PLANES(W)                                                             \
	for (size_t i = 0; i < rest; i++)                                     \
		out[i] = base + plane_value(p, rest, i, W);                   \
	break
	switch (pl->width) {
	case 0: PLANES(0);
	case 1: PLANES(1);
	case 2: PLANES(2);
	case 3: PLANES(3);
	case 4: PLANES(4);
	case 5: PLANES(5);
	case 6: PLANES(6);
	case 7: PLANES(7);
	default: PLANES(8);
	}
#undef PLANES
}

/* Decode a numeric column of exactly n values into out[]. */
static int
decode_column(struct tk_reader *r, const struct colloc *c, uint32_t n,
              uint64_t *out)
{
	struct planes pl;
	int rc = planes_open(r, c, n, &pl);
	if (rc)
		return rc;
	decode_planes(&pl, out);
	return TK_OK;
}

/* A column of ids, decoded straight to 32 bits, each checked against
 * limit (below TKP_ID_MAX).  *hi: the largest of the values, the first
 * and the base, so that a check of *hi against a lower limit is the
 * check this one would have made with it. */
static int
decode_u32s(struct tk_reader *r, const struct colloc *c, uint32_t n,
            uint32_t *out, uint32_t limit, const char *what, uint64_t *hi)
{
	*hi = 0;
	if (!c->present) {
		memset(out, 0, n * sizeof(*out));
		return TK_OK;
	}
	struct planes pl;
	int rc = planes_open(r, c, n, &pl);
	if (rc)
		return rc;
	if (pl.width > 4 || pl.first > limit || pl.base > limit)
		return corrupt(r, what);
	const uint8_t *p = pl.p;
	size_t rest = pl.rest;
	uint32_t base = (uint32_t)pl.base, top = base;
	out[0] = (uint32_t)pl.first;
	out++;
	/* base < 2^26: up to three bytes added, no sum overflows 32 bits */
#define IDS(W)                                                                \
	for (size_t i = 0; i < rest; i++) {                                   \
		uint32_t x = base + (uint32_t)plane_value(p, rest, i, W);     \
		top = x > top ? x : top;                                      \
		out[i] = x;                                                   \
	}                                                                     \
	break
	uint64_t top64 = 0;
	switch (pl.width) {
	case 0: IDS(0);
	case 1: IDS(1);
	case 2: IDS(2);
	case 3: IDS(3);
	default:
		for (size_t i = 0; i < rest; i++) {
			uint64_t x = base + plane_value(p, rest, i, 4);
			top64 = x > top64 ? x : top64;
			out[i] = (uint32_t)x;
		}
		break;
	}
#undef IDS
	*hi = top64 > top ? top64 : top;
	if (pl.first > *hi)
		*hi = pl.first;
	return *hi > limit ? corrupt(r, what) : TK_OK;
}

/* Room for per-track state of tracks 0..max_track. */
static int
ensure_track_state(struct tk_reader *r, uint32_t max_track)
{
	if (max_track >= r->pred_cap) {
		size_t old = r->pred_cap, cap = old, need = (size_t)max_track + 1;
		if (tkp_grow_shared(&r->pred, old, need, sizeof(*r->pred), &cap) ||
		    tkp_grow_shared(&r->dprev, old, need, sizeof(*r->dprev), &cap) ||
		    tkp_grow_shared(&r->tgroup, old, need, sizeof(*r->tgroup), &cap))
			return nomem(r);
		for (size_t t = old; t < cap; t++)
			r->tgroup[t] = UINT32_MAX;
		r->pred_cap = cap;
	}
	/* 1 for a GPU stream, whose begin times follow the previous end */
	if (grow((void **)&r->stream_track, &r->stream_track_cap, 1, max_track))
		return nomem(r);
	return TK_OK;
}

/* D columns: differences per track (see the writer's gather()). */
static void
undelta(struct tk_reader *r, const uint32_t *restrict tracks, uint32_t n,
        uint64_t *restrict v)
{
	uint64_t *restrict prev = r->dprev;
	if (n == 0)
		return;
	for (uint32_t i = 0; i < n; i++)
		prev[tracks[i]] = 0;
	/* the running track's value in a register, as in decode_times() */
	uint32_t cur_t = tracks[0];
	uint64_t cur = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t t = tracks[i];
		if (t != cur_t) {
			prev[cur_t] = cur;
			cur_t = t;
			cur = prev[t];
		}
		cur += (uint64_t)tkp_unzigzag(v[i]);
		v[i] = cur;
	}
}

/* Begin times and durations; tracks[] are the events' tracks in the
 * order the columns are stored, none above max_track. */
static int
decode_times(struct tk_reader *r, const struct colloc *tsc,
             const struct colloc *durc, const uint32_t *tracks,
             uint32_t max_track)
{
	uint32_t n = r->nev;
	/* durations first: the stream predictor needs them */
	if (durc->present) {
		struct planes pl;
		int rc = planes_open(r, durc, n, &pl);
		if (rc)
			return rc;
		decode_planes(&pl, (uint64_t *)r->durv);
		/* look for negative ones only where the column can hold any */
		uint64_t neg = 0;
		if (planes_bound(&pl) > INT64_MAX)
			for (uint32_t i = 0; i < n; i++)
				neg |= (uint64_t)r->durv[i];
		if (neg >> 63)
			return corrupt(r, "bad duration");
	} else {
		memset(r->durv, 0, n * sizeof(*r->durv));
	}
	if (!tsc->present)
		return corrupt(r, "no timestamps");
	int rc = decode_column(r, tsc, n, (uint64_t *)r->tsv);
	if (rc)
		return rc;
	/* Locals, so the loop does not reload reader fields through the
	 * stores into pred[]. */
	int64_t *restrict pred = r->pred;
	int64_t *restrict tsv = r->tsv;
	const int64_t *restrict durv = r->durv;
	const uint32_t *restrict trackv = tracks;
	/* stream[] covers every track of the chunk (ensure_track_state());
	 * raw ids say nothing of which tracks are streams */
	const uint8_t *restrict stream = r->stream_track;
	int64_t stream_mask = r->raw ? 0 : -1;
	int64_t first = (int64_t)tkp_unzigzag((uint64_t)tsv[0]);
	/* a track's first event is predicted by the chunk's first time:
	 * set for every track id the chunk may use, or for those it does */
	if (max_track < n)
		for (uint32_t t = 0; t <= max_track; t++)
			pred[t] = first;
	else
		for (uint32_t i = 0; i < n; i++)
			pred[trackv[i]] = first;
	/* the first event's time is the chunk's: predicted by itself */
	tsv[0] = (int64_t)tkp_zigzag(0);
	uint64_t bad = first == INT64_MIN;
	/* The prediction of the track of the last event is kept in a
	 * register, and goes back to pred[] when the track changes: events
	 * come in runs on one track, and a chain of stores and loads of
	 * pred[t] through memory was most of this loop's time. */
	uint32_t cur_t = trackv[0];
	int64_t cur = pred[cur_t], cur_mask = -(int64_t)stream[cur_t] & stream_mask;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t t = trackv[i];
		if (t != cur_t) {
			pred[cur_t] = cur;
			cur_t = t;
			cur = pred[t];
			cur_mask = -(int64_t)stream[t] & stream_mask;
		}
		int64_t ts = (int64_t)((uint64_t)cur +
		                       (uint64_t)tkp_unzigzag((uint64_t)tsv[i]));
		int64_t dur = durv[i];
		bad |= (ts > INT64_MAX - dur) | (ts == INT64_MIN);
		tsv[i] = ts;
		cur = ts + (dur & cur_mask);
	}
	pred[cur_t] = cur;
	if (bad)
		return corrupt(r, "time out of range");
	return TK_OK;
}

/* A kernel's launch configuration, from its definition, into its struct. */
static void
put_config(struct tk_kernel_attrs *kk, const struct config *cf)
{
	memcpy(kk->grid, cf->v, 3 * sizeof(uint32_t));
	memcpy(kk->block, cf->v + 3, 3 * sizeof(uint32_t));
	memcpy(kk->cluster, cf->v + 6, 3 * sizeof(uint32_t));
	kk->static_smem = cf->v[9];
	kk->dynamic_smem = cf->v[10];
	kk->registers = cf->v[11];
}

/* Decode one attribute column of kind k into its structs: the values
 * are made in r->scratch, then checked and stored in one pass. */
static int
decode_attr(struct tk_reader *r, const struct tkp_attr *a,
            const struct colloc *c, struct kind_cols *k, unsigned size)
{
	uint64_t *restrict v = r->scratch;
	uint32_t n = k->count;
	int rc = decode_column(r, c, n, v);
	if (rc)
		return rc;
	uint8_t *base = k->attrs + (a->off - TKP_UNION_OFF);
	uint64_t bad = 0;
	switch (a->enc) {
	case TKP_ENC_STR: {
		uint8_t *sp = k->attrs + (a->str_off - TKP_UNION_OFF);
		if (r->detached) { /* the ids, resolved by resolve_refs() */
			uint64_t hi = 0;
			const char *empty = "";
			for (uint32_t j = 0; j < n; j++) {
				hi = v[j] > hi ? v[j] : hi;
				uint32_t id = (uint32_t)v[j];
				memcpy(base + (size_t)j * size, &id, 4);
				memcpy(sp + (size_t)j * size, &empty, sizeof(empty));
			}
			if (hi > r->unchecked.string_hi)
				r->unchecked.string_hi = hi;
			if (hi)
				k->unresolved |= UINT64_C(1) << a->attr;
			return TK_OK;
		}
		for (uint32_t j = 0; j < n; j++) {
			bad |= v[j] > r->nstrings;
			uint32_t id = (uint32_t)v[j];
			const char *s = r->raw || bad || !id ? "" : r->strings[id].s;
			memcpy(base + (size_t)j * size, &id, 4);
			memcpy(sp + (size_t)j * size, &s, sizeof(s));
		}
		if (bad && !r->raw)
			return corrupt(r, "undefined string");
		return TK_OK;
	}
	case TKP_ENC_CONFIG:
		if (r->detached) {
			/* from the copy of the configurations where it has
			 * them (resolve_refs() again if they changed since),
			 * otherwise by resolve_refs() */
			uint64_t hi = r->unchecked.config_hi;
			for (uint32_t j = 0; j < n; j++) {
				hi = v[j] > hi ? v[j] : hi;
				k->config_ids[j] = (uint32_t)v[j];
				if (!v[j])
					continue;
				if (v[j] > r->nconfigs) {
					k->unresolved |= UINT64_C(1) << a->attr;
					continue;
				}
				put_config((struct tk_kernel_attrs *)(k->attrs + (size_t)j * size),
				           &r->configs[v[j]]);
			}
			r->unchecked.config_hi = hi;
			return TK_OK;
		}
		for (uint32_t j = 0; j < n; j++)
			bad |= v[j] > r->nconfigs;
		if (bad)
			return corrupt(r, "undefined launch configuration");
		for (uint32_t j = 0; j < n; j++) {
			if (v[j])
				put_config((struct tk_kernel_attrs *)(k->attrs + (size_t)j * size),
				           &r->configs[v[j]]);
		}
		return TK_OK;
	case TKP_ENC_S:
		for (uint32_t j = 0; j < n; j++)
			v[j] = (uint64_t)tkp_unzigzag(v[j]);
		break;
	case TKP_ENC_D:
		undelta(r, k->tracks, n, v);
		break;
	default:
		break;
	}
	switch (a->ftype) {
	case TKP_U32:
		for (uint32_t j = 0; j < n; j++) {
			uint32_t x = (uint32_t)v[j];
			bad |= v[j] >> 32;
			memcpy(base + (size_t)j * size, &x, 4);
		}
		break;
	case TKP_I32:
		for (uint32_t j = 0; j < n; j++) {
			int32_t x = (int32_t)v[j];
			bad |= (int64_t)v[j] != x;
			memcpy(base + (size_t)j * size, &x, 4);
		}
		break;
	default:
		for (uint32_t j = 0; j < n; j++)
			memcpy(base + (size_t)j * size, &v[j], 8);
		break;
	}
	return bad ? corrupt(r, "value out of range") : TK_OK;
}

static int
decode_args(struct tk_reader *r, const struct colloc *c, struct kind_cols *k)
{
	const uint8_t *p = c->p, *end = c->p + c->len;
	for (uint32_t i = 0; i < k->count; i++) {
		uint64_t len;
		if (tkp_varint_get(&p, end, &len) < 0 || len > (uint64_t)(end - p))
			return corrupt(r, "bad args column");
		k->args[i] = len ? p : NULL;
		k->args_len[i] = (uint32_t)len;
		p += len;
	}
	if (p != end)
		return corrupt(r, "long column");
	return TK_OK;
}

/* Args stored as templates and numbers (args_template.h). */
static int
decode_args_templated(struct tk_reader *r, const struct colloc *cols,
                      struct kind_cols *k)
{
	static const uint8_t none[1];
	uint64_t *ids = r->scratch;
	const struct colloc *ic = &cols[TKP_ATTR_ARGS_TEMPLATE];
	if (ic->present) {
		int rc = decode_column(r, ic, k->count, ids);
		if (rc)
			return rc;
	} else {
		memset(ids, 0, k->count * sizeof(*ids));
	}
	const struct colloc *tc = &cols[TKP_ATTR_ARGS_TEMPLATES];
	const struct colloc *nc = &cols[TKP_ATTR_ARGS_NUMBERS];
	int out_of_memory;
	const char *why = tkp_args_decode(&r->args_dec, tc->present ? tc->p : none,
	                                  tc->len, ids, k->count,
	                                  nc->present ? nc->p : none, nc->len,
	                                  &k->args_text, k->args, k->args_len,
	                                  &out_of_memory);
	if (why)
		return out_of_memory ? nomem(r) : corrupt(r, why);
	return TK_OK;
}

/* Decode the attribute columns of kind k into its structs. */
static int
decode_kind(struct tk_reader *r, unsigned kind, struct kind_cols *k,
            const struct colloc *cols)
{
	const struct tkp_kind_schema *ks = &tkp_schema[kind];
	memset(k->attrs, 0, (size_t)k->count * ks->size);
	for (unsigned a = 0; a < ks->n; a++) {
		const struct tkp_attr *at = &ks->attrs[a];
		const struct colloc *c = &cols[at->attr];
		int rc;
		if (c->present) {
			if ((rc = decode_attr(r, at, c, k, ks->size)))
				return rc;
		} else if (at->enc == TKP_ENC_STR) {
			/* the string pointer is "", not NULL */
			uint8_t *sp = k->attrs + (at->str_off - TKP_UNION_OFF);
			const char *empty = "";
			for (uint32_t j = 0; j < k->count; j++)
				memcpy(sp + (size_t)j * ks->size, &empty, sizeof(empty));
		}
	}
	const struct colloc *ac = &cols[TKP_ATTR_ARGS];
	if (r->chunk_no_args)
		return TK_OK; /* not wanted (tk_reader_options.no_args) */
	if (cols[TKP_ATTR_ARGS_TEMPLATES].present ||
	    cols[TKP_ATTR_ARGS_TEMPLATE].present ||
	    cols[TKP_ATTR_ARGS_NUMBERS].present)
		return ac->present ? corrupt(r, "args stored twice")
		                   : decode_args_templated(r, cols, k);
	else if (ac->present)
		return decode_args(r, ac, k);
	memset(k->args, 0, k->count * sizeof(*k->args));
	memset(k->args_len, 0, k->count * sizeof(*k->args_len));
	return TK_OK;
}

/* A grouped chunk: its GROUPS column gives each track's group, and the
 * events are stored group by group, each in time order, the chunk's
 * first event first (tracekit-format(5)).  Makes r->order (stored
 * position -> event) and, in r->aux, the tracks in stored order.  A
 * listed track above max_track (decode_columns()) is an error: a bound
 * that does not depend on how large the per-track arrays happen to be,
 * so that a worker's decode and the reading thread's agree. */
static int
plan_order(struct tk_reader *r, const struct colloc *gc, uint32_t max_track)
{
	uint32_t n = r->nev;
	if (!gc->present)
		return corrupt(r, "bad groups column");
	const uint8_t *p = gc->p, *end = gc->p + gc->len;
	uint64_t m;
	if (tkp_varint_get(&p, end, &m) < 0 || m == 0 || m > n)
		return corrupt(r, "bad groups column");
	/* each listed track's group; a track listed twice or a group
	 * beyond the list's length is an error */
	uint32_t *counts = r->aux;
	memset(counts, 0, m * sizeof(*counts));
	const uint8_t *pairs = p;
	int rc = TK_OK;
	for (uint64_t i = 0; i < m; i++) {
		uint64_t t, g;
		if (tkp_varint_get(&p, end, &t) < 0 || tkp_varint_get(&p, end, &g) < 0 ||
		    t > max_track || g >= m || r->tgroup[t] != UINT32_MAX) {
			m = i; /* what to undo */
			rc = corrupt(r, "bad groups column");
			break;
		}
		r->tgroup[t] = (uint32_t)g;
	}
	if (!rc && p != end)
		rc = corrupt(r, "bad groups column");
	for (uint32_t i = 0; !rc && i < n; i++) {
		uint32_t g = r->tgroup[r->trackv[i]];
		if (g == UINT32_MAX)
			rc = corrupt(r, "track missing from groups");
		else
			counts[g]++;
	}
	if (!rc) { /* a stable counting sort by group */
		uint32_t at = 0;
		for (uint64_t g = 0; g < m; g++) {
			uint32_t c = counts[g];
			counts[g] = at;
			at += c;
		}
		for (uint32_t i = 0; i < n; i++)
			r->order[counts[r->tgroup[r->trackv[i]]]++] = i;
		if (r->order[0] != 0)
			rc = corrupt(r, "first event not stored first");
	}
	/* the table is all UINT32_MAX between chunks */
	for (uint64_t i = 0; i < m; i++) {
		uint64_t t = 0, g = 0;
		tkp_varint_get(&pairs, end, &t);
		tkp_varint_get(&pairs, end, &g);
		r->tgroup[t] = UINT32_MAX;
	}
	if (rc)
		return rc;
	for (uint32_t q = 0; q < n; q++)
		r->aux[q] = r->trackv[r->order[q]];
	return TK_OK;
}

/* The columns decoded in stored order, put in time order. */
static void
restore_order(struct tk_reader *r)
{
	const uint32_t *restrict order = r->order;
	for (uint32_t q = 0; q < r->nev; q++) {
		uint32_t i = order[q];
		r->tsv_alt[i] = r->tsv[q];
		r->durv_alt[i] = r->durv[q];
		r->namev[i] = r->namev_alt[q];
	}
	int64_t *t = r->tsv;
	r->tsv = r->tsv_alt;
	r->tsv_alt = t;
	t = r->durv;
	r->durv = r->durv_alt;
	r->durv_alt = t;
	/* the kinds from the column, stored order, straight into place */
	for (uint32_t q = 0; q < r->nev; q++)
		r->kinds[order[q]] = r->kind_col[q];
}

static int
decode_columns(struct tk_reader *r, const uint8_t *p, const uint8_t *end)
{
	struct colloc common[TKP_COL_GROUPS + 1] = { { 0 } };
	struct colloc (*cols)[TKP_ATTR_MAX + 1] = r->cols;
	memset(r->cols, 0, sizeof(r->cols));

	while (p < end) {
		uint64_t kind, attr, len;
		if (tkp_varint_get(&p, end, &kind) < 0 ||
		    tkp_varint_get(&p, end, &attr) < 0 ||
		    tkp_varint_get(&p, end, &len) < 0 || len > (uint64_t)(end - p))
			return corrupt(r, "bad column header");
		struct colloc *c = NULL;
		if (kind == 0 && attr >= TKP_COL_KIND && attr <= TKP_COL_GROUPS)
			c = &common[attr];
		else if (kind >= 1 && kind <= TK_KIND_MAX && attr <= TKP_ATTR_MAX)
			c = &cols[kind][attr];
		if (c) { /* otherwise a newer column: skip */
			if (c->present)
				return corrupt(r, "duplicate column");
			*c = (struct colloc){ p, (size_t)len, 1 };
		}
		p += len;
	}

	uint32_t n = r->nev;
	if (n == 0)
		return TK_OK;
	int rc = ensure_event_arrays(r, n);
	if (rc)
		return rc;
	const struct colloc *kc = &common[TKP_COL_KIND];
	if (!kc->present || kc->len != n)
		return corrupt(r, "bad kind column");
	r->kind_col = kc->p;
	if (memchr(kc->p, 0, n))
		return corrupt(r, "event kind 0");
	/* a grouped chunk's kinds go in place in restore_order() */
	r->grouped = (r->chunk.flags & TK_CHUNK_GROUPED) != 0;
	if (!r->grouped)
		memcpy(r->kinds, kc->p, n);

	/* a worker's decoder checks ids against nothing and keeps the
	 * largest (struct unchecked) */
	int unbounded = r->raw || r->detached;
	uint32_t track_limit = unbounded ? TKP_ID_MAX - 1 : r->ntracks + UNKNOWN_TRACKS_MAX;
	uint32_t name_limit = unbounded ? TKP_ID_MAX - 1 : r->nstrings;
	if ((rc = decode_u32s(r, &common[TKP_COL_TRACK], n, r->trackv, track_limit,
	                      "bad track id", &r->unchecked.track_hi)) ||
	    (rc = decode_u32s(r, &common[TKP_COL_NAME], n,
	                      r->grouped ? r->namev_alt : r->namev, name_limit,
	                      "undefined string", &r->unchecked.name_hi)))
		return rc;
	/* per-track state for every id the chunk may use; unbounded ids
	 * have no useful limit, so there the largest one is looked for */
	uint32_t max_track = track_limit;
	if (unbounded) {
		max_track = 0;
		for (uint32_t i = 0; i < n; i++)
			max_track = r->trackv[i] > max_track ? r->trackv[i] : max_track;
	}
	r->unchecked.track_max = max_track;
	if ((rc = ensure_track_state(r, max_track)))
		return rc;
	if (r->grouped) {
		if ((rc = plan_order(r, &common[TKP_COL_GROUPS], max_track)) ||
		    (rc = decode_times(r, &common[TKP_COL_TS], &common[TKP_COL_DUR],
		                       r->aux, max_track)))
			return rc;
		restore_order(r);
	} else if ((rc = decode_times(r, &common[TKP_COL_TS], &common[TKP_COL_DUR],
	                              r->trackv, max_track))) {
		return rc;
	}
	r->attrs_pending = 1;
	return TK_OK;
}

/* Each kind's tracks, in the order the kind's columns are stored (for
 * per-track differences), and each event's index among its kind's in
 * r->aux (for fill_event_at()).  order[] maps stored positions to events
 * in a grouped chunk, NULL otherwise; inlined for each case.  The
 * position of the last event's kind stays in a register: kinds come in
 * runs, and a count kept in memory chained each event to the last. */
static inline __attribute__((always_inline)) void
index_kinds(struct tk_reader *r, const uint32_t *restrict order)
{
	uint32_t pos[TK_KIND_MAX + 1] = { 0 };
	uint32_t *tracks[TK_KIND_MAX + 1];
	for (unsigned k = 0; k <= TK_KIND_MAX; k++)
		tracks[k] = r->kc[k].tracks;
	const uint8_t *restrict kinds = r->kinds;
	const uint32_t *restrict trackv = r->trackv;
	uint32_t *restrict aux = r->aux;
	unsigned cur_kind = 0; /* no event is of kind 0 */
	uint32_t cur_pos = 0;
	uint32_t *cur_tracks = NULL;
	for (uint32_t s = 0; s < r->nev; s++) {
		uint32_t i = order ? order[s] : s;
		unsigned k = kinds[i];
		if (k > TK_KIND_MAX)
			continue; /* a newer kind: passed through, no attributes */
		if (k != cur_kind) {
			pos[cur_kind] = cur_pos;
			cur_kind = k;
			cur_pos = pos[k];
			cur_tracks = tracks[k];
		}
		aux[i] = cur_pos;
		cur_tracks[cur_pos++] = trackv[i];
	}
}

/* String attributes and launch configurations a worker left as ids
 * (decode_attr() of a detached decoder), resolved as decode_attr()
 * does, once their bounds are known to hold; and every configuration
 * where those the worker copied have changed since (configs_now 0). */
static void
resolve_refs(struct tk_reader *r, int configs_now)
{
	for (unsigned kind = 1; kind <= TK_KIND_MAX; kind++) {
		struct kind_cols *k = &r->kc[kind];
		const struct tkp_kind_schema *ks = &tkp_schema[kind];
		if (!k->count)
			continue;
		for (unsigned a = 0; a < ks->n; a++) {
			const struct tkp_attr *at = &ks->attrs[a];
			int left = (k->unresolved >> at->attr) & 1;
			if (!r->cols[kind][at->attr].present)
				continue;
			if (at->enc == TKP_ENC_STR && !r->raw && left) {
				const uint8_t *ip = k->attrs + (at->off - TKP_UNION_OFF);
				uint8_t *sp = k->attrs + (at->str_off - TKP_UNION_OFF);
				for (uint32_t j = 0; j < k->count; j++) {
					uint32_t id;
					memcpy(&id, ip + (size_t)j * ks->size, 4);
					const char *str = id ? r->strings[id].s : "";
					memcpy(sp + (size_t)j * ks->size, &str, sizeof(str));
				}
			} else if (at->enc == TKP_ENC_CONFIG && (left || !configs_now)) {
				for (uint32_t j = 0; j < k->count; j++) {
					uint32_t id = k->config_ids[j];
					if (!id)
						continue;
					put_config((struct tk_kernel_attrs *)(k->attrs +
					                                       (size_t)j * ks->size),
					           &r->configs[id]);
				}
			}
		}
	}
}

/* The attributes a worker decoded for the current chunk, where one
 * thread would have decoded the same: 1 when used. */
static int
use_adopted_attrs(struct tk_reader *r)
{
	const struct unchecked *u = &r->adopted;
	r->attrs_adopted = 0;
	if (!u->attrs_ok || u->no_args != r->no_args ||
	    u->config_hi > r->nconfigs || (!r->raw && u->string_hi > r->nstrings))
		return 0;
	r->attrs_pending = 0;
	r->chunk_no_args = r->no_args;
	resolve_refs(r, u->config_gen == r->configs_gen);
	return 1;
}

/* The attribute columns of the current chunk, into each kind's structs. */
static int
decode_attrs(struct tk_reader *r)
{
	uint32_t n = r->nev;
	int rc;
	if (r->attrs_adopted && use_adopted_attrs(r))
		return TK_OK;
	r->attrs_pending = 0;
	r->chunk_no_args = r->no_args;
	/* four histograms, so that runs of one kind do not wait on the
	 * previous increment */
	uint32_t counts[4][256] = { { 0 } };
	uint32_t q = 0;
	for (; q + 4 <= n; q += 4) {
		counts[0][r->kinds[q]]++;
		counts[1][r->kinds[q + 1]]++;
		counts[2][r->kinds[q + 2]]++;
		counts[3][r->kinds[q + 3]]++;
	}
	for (; q < n; q++)
		counts[0][r->kinds[q]]++;
	for (unsigned k = 0; k <= TK_KIND_MAX; k++)
		r->kc[k].count = counts[0][k] + counts[1][k] + counts[2][k] + counts[3][k];

	for (unsigned k = 1; k <= TK_KIND_MAX; k++)
		if (r->kc[k].count &&
		    (rc = ensure_kind_arrays(r, &r->kc[k], tkp_schema[k].size)))
			return rc;
	if (r->grouped)
		index_kinds(r, r->order);
	else
		index_kinds(r, NULL);
	for (unsigned k = 1; k <= TK_KIND_MAX; k++) {
		struct kind_cols *kcol = &r->kc[k];
		kcol->unresolved = 0;
		if (kcol->count && (rc = decode_kind(r, k, kcol, r->cols[k])))
			return rc;
	}
	return TK_OK;
}

/* ---- decoding on the workers ------------------------------------------------------- */

/* Before a chunk is read ahead, what its worker's decoder needs of the
 * reader (struct unchecked): the GPU streams and launch configurations
 * known so far, raw and no_args.  Later definitions may change them:
 * adopt() and use_adopted_attrs() compare. */
static void
snapshot_defs(struct tk_reader *r, struct tk_reader *w)
{
	w->snapshot_ok = 0;
	if (w->stream_track_cap < r->stream_track_cap &&
	    grow((void **)&w->stream_track, &w->stream_track_cap, 1,
	         r->stream_track_cap - 1))
		return; /* out of memory: decoded on the reading thread */
	if (r->stream_track_cap)
		memcpy(w->stream_track, r->stream_track, r->stream_track_cap);
	if (w->stream_track_cap > r->stream_track_cap)
		memset(w->stream_track + r->stream_track_cap, 0,
		       w->stream_track_cap - r->stream_track_cap);
	/* the configurations too (a few dozen bytes each, few of them):
	 * the worker copies them into kernels' structs */
	if (w->configs_cap < (size_t)r->nconfigs + 1 &&
	    grow((void **)&w->configs, &w->configs_cap, sizeof(*w->configs),
	         r->nconfigs))
		return;
	if (r->nconfigs)
		memcpy(w->configs, r->configs, ((size_t)r->nconfigs + 1) * sizeof(*w->configs));
	w->nconfigs = r->nconfigs;
	w->configs_gen = r->configs_gen;
	w->raw = r->raw;
	w->no_args = r->no_args;
	w->attrs_wanted = r->attrs_wanted;
	w->snapshot_ok = 1;
}

/* The pool's decode hook (rpool.h), on a worker: decode the inflated
 * chunk of s with the slot's decoder, as read_chunk() and decode_attrs()
 * would without definitions.  Touches nothing but the slot. */
static void
decode_on_worker(struct tkp_rslot *s)
{
	struct tk_reader *w = s->decoder;
	if (!w || !w->snapshot_ok)
		return;
	w->unchecked = (struct unchecked){ .raw = w->raw, .no_args = w->no_args,
	                                   .config_gen = w->configs_gen };
	tkp_error_clear(&w->error);
	struct tkp_chunk_header ch;
	uint32_t hsize = (uint32_t)s->bytes[4] | (uint32_t)s->bytes[5] << 8 |
	                 (uint32_t)s->bytes[6] << 16 | (uint32_t)s->bytes[7] << 24;
	tkp_chunk_header_decode(s->bytes, hsize, &ch);
	const uint8_t *p = s->out.p, *end = s->out.p + ch.raw;
	uint64_t defs_len;
	if (tkp_varint_get(&p, end, &defs_len) < 0 ||
	    defs_len > (uint64_t)(end - p))
		return;
	w->chunk.flags = ch.flags;
	w->nev = ch.events;
	if (decode_columns(w, p + defs_len, end))
		return;
	w->unchecked.columns_ok = 1;
	/* attrs_ok stays 0 where not wanted: should the caller ask for
	 * this chunk's events after all, the reading thread decodes them */
	if (!w->attrs_wanted || (w->nev && decode_attrs(w)))
		return;
	w->unchecked.attrs_ok = 1;
}

/* A GPU stream flag as one thread's decode would read it. */
static int
stream_flag(const struct tk_reader *r, uint32_t t)
{
	return t < r->stream_track_cap && r->stream_track[t];
}

/* Take the columns the worker's decoder w made of the current chunk,
 * where one thread would have decoded the same with the definitions
 * now in hand: 1 when taken.  The arrays are swapped, not copied: w
 * gets the reader's for its next chunk. */
static int
adopt(struct tk_reader *r, struct tk_reader *w)
{
	const struct unchecked *u = &w->unchecked;
	if (!w->snapshot_ok || !u->columns_ok || u->raw != r->raw)
		return 0;
	if (!r->raw) {
		if (u->track_hi > (uint64_t)r->ntracks + UNKNOWN_TRACKS_MAX ||
		    u->name_hi > r->nstrings)
			return 0;
		/* decode_times() read the flags of the tracks used */
		for (uint32_t t = 0; t <= u->track_max && r->nev; t++)
			if (stream_flag(r, t) != stream_flag(w, t))
				return 0;
	}
#define SWAP(type, f)                                                         \
	do {                                                                  \
		type tmp_ = r->f;                                             \
		r->f = w->f;                                                  \
		w->f = tmp_;                                                  \
	} while (0)
	SWAP(uint8_t *, kinds);
	SWAP(uint32_t *, trackv);
	SWAP(int64_t *, tsv);
	SWAP(int64_t *, durv);
	SWAP(uint32_t *, namev);
	SWAP(uint32_t *, order);
	SWAP(uint32_t *, aux);
	SWAP(int64_t *, tsv_alt);
	SWAP(int64_t *, durv_alt);
	SWAP(uint32_t *, namev_alt);
	SWAP(uint64_t *, scratch);
	SWAP(size_t, ev_cap);
	SWAP(int64_t *, pred);
	SWAP(uint64_t *, dprev);
	SWAP(uint32_t *, tgroup);
	SWAP(size_t, pred_cap);
	for (unsigned k = 0; k <= TK_KIND_MAX; k++)
		SWAP(struct kind_cols, kc[k]);
#undef SWAP
	memcpy(r->cols, w->cols, sizeof(r->cols));
	r->kind_col = w->kind_col;
	r->grouped = w->grouped;
	r->attrs_pending = 1;
	r->adopted = *u;
	r->attrs_adopted = 1;
	return 1;
}

/* ---- chunks ----------------------------------------------------------------------- */

static int
read_chunk(struct tk_reader *r, const uint8_t *magic)
{
	uint8_t h[TKP_HEADER_MAX];
	uint64_t at = r->offset - 4;
	size_t got;
	memcpy(h, magic, 4);
	r->chunk.offset = at;
	int rc = input_read(r, h + 4, 4, &got);
	if (rc)
		return rc;
	if (got < 4)
		return fail(r, TK_ETRUNC, "truncated chunk at byte %llu",
		            (unsigned long long)at);
	struct tkp_chunk_header ch;
	tkp_chunk_header_decode(h, 8, &ch);
	uint32_t hsize = ch.size;
	if (!tkp_chunk_header_size_ok(hsize))
		return corrupt(r, "bad header size");
	rc = input_read(r, h + 8, hsize - 8, &got);
	if (rc)
		return rc;
	if (got < hsize - 8)
		return fail(r, TK_ETRUNC, "truncated chunk at byte %llu",
		            (unsigned long long)at);
	tkp_chunk_header_decode(h, hsize, &ch);
	uint32_t flags = ch.flags, stored = ch.stored, raw = ch.raw;
	if (!tkp_chunk_header_sizes_ok(&ch))
		return corrupt(r, "bad sizes");

	const uint8_t *body = NULL;
	rc = input_take(r, stored, &r->stored, &body, &got);
	if (rc)
		return rc;
	if (got < stored)
		return fail(r, TK_ETRUNC, "truncated chunk at byte %llu",
		            (unsigned long long)at);
	/* a unit read ahead: a worker has checked and inflated it */
	const struct tkp_rslot *pre = r->cur && r->cur->chunk ? r->cur : NULL;
	uint32_t crc;
	if (!pre)
		check_crc(h, hsize - 4, 0, 0, &crc);
	if (pre ? !pre->crc_ok : !check_crc(body, stored, ch.crc, crc, NULL))
		return fail(r, TK_ECORRUPT,
		            "corrupt chunk at byte %llu (checksum mismatch)",
		            (unsigned long long)at);
	if (tkp_chunk_flags_unknown(flags))
		return fail(r, TK_EVERSION,
		            "chunk at byte %llu uses unsupported features (flags 0x%x)",
		            (unsigned long long)at, flags);

	const uint8_t *payload = body;
	if (pre && pre->inflated) {
		if (pre->inflated < 0)
			return corrupt(r, "bad compressed data");
		payload = pre->out.p;
	} else if (flags & TK_CHUNK_DEFLATE) {
		r->raw_buf.len = 0;
		if (tkp_buf_reserve(&r->raw_buf, raw ? raw : 1) < 0)
			return nomem(r);
		size_t actual = 0;
		enum libdeflate_result res = libdeflate_zlib_decompress(
			r->dec, body, stored, r->raw_buf.p, raw, &actual);
		if (res != LIBDEFLATE_SUCCESS || actual != raw)
			return corrupt(r, "bad compressed data");
		payload = r->raw_buf.p;
	}

	if (r->ended)
		return corrupt(r, "chunk after the end of the trace");
	r->chunk.events = ch.events;
	r->chunk.flags = flags;
	r->chunk.t_min = ch.t_min;
	r->chunk.t_max = ch.t_max;
	r->chunk.watermark = ch.watermark;
	r->npending = r->pending_pos = 0;
	r->nev = r->ev_pos = 0;
	r->attrs_pending = 0;
	r->attrs_adopted = 0;

	const uint8_t *p = payload, *end = payload + raw;
	uint64_t defs_len;
	if (tkp_varint_get(&p, end, &defs_len) < 0 ||
	    defs_len > (uint64_t)(end - p))
		return corrupt(r, "bad definitions length");
	if ((rc = parse_defs(r, p, p + defs_len)))
		return rc;
	r->nev = ch.events;
	if (pre && pre->inflated > 0 && pre->decoder && adopt(r, pre->decoder)) {
		/* decoded on a worker */
	} else if ((rc = decode_columns(r, p + defs_len, end))) {
		r->nev = 0;
		return rc;
	}
	r->ended = (flags & TK_CHUNK_END) != 0;
	r->last_chunk_end = r->offset;
	return TK_OK;
}

/* ---- iteration ---------------------------------------------------------------------- */

static inline void
fill_event_at(struct tk_reader *r, uint32_t i, struct tk_event *ev)
{
	unsigned k = r->kinds[i];
	struct kind_cols *kc = &r->kc[k];
	uint32_t j = r->aux[i];
	ev->kind = k;
	ev->track = r->trackv[i];
	ev->ts = r->tsv[i];
	ev->dur = r->durv[i];
	ev->name_id = r->namev[i];
	ev->name = r->raw || !ev->name_id ? "" : r->strings[ev->name_id].s;
	ev->trk = !r->raw && ev->track && ev->track <= r->ntracks
	                  ? r->tracks[ev->track]
	                  : &unknown_track;
	ev->args = r->chunk_no_args ? NULL : (const char *)kc->args[j];
	ev->args_len = r->chunk_no_args ? 0 : kc->args_len[j];
	/* The kind's struct, the rest of the union zero (no stale pointers
	 * of another kind, nor bytes of the next struct).  Word by word over
	 * the whole union through the kind's masks, with no call and no
	 * branch: the struct array has UNION_SIZE bytes of slack to read. */
	const uint8_t *src = kc->attrs + (size_t)j * tkp_schema[k].size;
	const uint64_t *mask = r->union_mask[k];
	uint8_t *dst = (uint8_t *)ev + TKP_UNION_OFF;
	for (unsigned b = 0; b < UNION_WORDS; b++) {
		uint64_t w;
		memcpy(&w, src + 8 * b, 8);
		w &= mask[b];
		memcpy(dst + 8 * b, &w, 8);
	}
}

static inline void
fill_event(struct tk_reader *r, uint32_t i)
{
	fill_event_at(r, i, &r->ev);
}

/* Read what follows the current chunk: the next chunk, or a header.
 * *scope is 1 when a header started a new trace the caller must hear
 * of. */
static int
next_unit(struct tk_reader *r, int *scope)
{
	*scope = 0;
	if (r->feed && !feed_ready(r))
		return TK_AGAIN;
	if (r->need_header) {
		int rc = read_header(r, NULL, 0);
		if (rc)
			return rc;
		r->need_header = 0;
		return TK_OK;
	}
	if (!r->feed)
		pool_next(r);
	uint8_t magic[4];
	size_t got;
	int rc = input_read(r, magic, 4, &got);
	if (rc)
		return rc;
	if (got == 0) {
		if (r->ended)
			return TK_EOF;
		return fail(r, TK_ETRUNC,
		            "truncated at byte %llu (the trace has no end "
		            "marker: its writer did not finish)",
		            (unsigned long long)r->offset);
	}
	if (got < 4)
		return fail(r, TK_ETRUNC, "truncated chunk at byte %llu",
		            (unsigned long long)(r->offset - got));
	if (tkp_is_chunk_magic(magic))
		return read_chunk(r, magic);
	if (tkp_is_file_magic(magic, 4)) {
		if (!r->ended)
			return fail(r, TK_ETRUNC,
			            "truncated at byte %llu (a new trace starts "
			            "there before the end of the previous one)",
			            (unsigned long long)(r->offset - 4));
		if ((rc = read_header(r, magic, 4)))
			return rc;
		*scope = 1;
		return TK_OK;
	}
	return fail(r, TK_ECORRUPT, "bad chunk magic at byte %llu",
	            (unsigned long long)(r->offset - 4));
}

/* The sticky error, or an error if the reader was never opened. */
static int
check_ready(struct tk_reader *r)
{
	if (r->error.code)
		return r->error.code;
	if (!r->is_open)
		return fail(r, TK_EINVAL, "reader is not open");
	return TK_OK;
}

TK_PUBLIC int
tk_reader_next(struct tk_reader *r, struct tk_record *rec)
{
	if (!r || !rec)
		return TK_EINVAL;
	int ready = check_ready(r);
	if (ready)
		return ready;
	r->attrs_wanted = 1;
	for (;;) {
		if (r->pending_pos < r->npending) {
			const struct pending *p = &r->pending[r->pending_pos++];
			rec->type = p->type;
			switch (p->type) {
			case TK_REC_TRACK: rec->u.track = p->ptr; break;
			case TK_REC_DEVICE: rec->u.device = p->ptr; break;
			case TK_REC_META: rec->u.meta = p->ptr; break;
			case TK_REC_CATEGORY: rec->u.category = p->ptr; break;
			default: rec->u.event = NULL; break;
			}
			return TK_OK;
		}
		if (r->ev_pos < r->nev && r->attrs_pending) {
			int rc = decode_attrs(r);
			if (rc) {
				r->nev = 0;
				return rc;
			}
		}
		while (r->ev_pos < r->nev) {
			uint32_t i = r->ev_pos++;
			if (r->kinds[i] > TK_KIND_MAX) {
				r->skipped++;
				continue;
			}
			fill_event(r, i);
			rec->type = TK_REC_EVENT;
			rec->u.event = &r->ev;
			return TK_OK;
		}
		int scope;
		int rc = next_unit(r, &scope);
		if (rc)
			return rc;
		if (scope) {
			rec->type = TK_REC_SCOPE;
			rec->u.event = NULL;
			return TK_OK;
		}
	}
}

TK_PUBLIC int
tk_reader_next_event(struct tk_reader *r, const struct tk_event **ev)
{
	/* the common case: the next event of a decoded chunk */
	if (r && !r->error.code && r->pending_pos >= r->npending && r->ev_pos < r->nev &&
	    !r->attrs_pending && r->kinds[r->ev_pos] <= TK_KIND_MAX) {
		fill_event(r, r->ev_pos++);
		*ev = &r->ev;
		return TK_OK;
	}
	struct tk_record rec;
	for (;;) {
		int rc = tk_reader_next(r, &rec);
		if (rc)
			return rc;
		if (rec.type == TK_REC_EVENT) {
			*ev = rec.u.event;
			return TK_OK;
		}
	}
}

uint32_t
tkp_reader_take_events(struct tk_reader *r, void *out, size_t stride,
                       uint32_t max)
{
	if (r->error.code || r->pending_pos < r->npending || r->ev_pos >= r->nev)
		return 0;
	r->attrs_wanted = 1;
	if (r->attrs_pending && decode_attrs(r)) {
		r->nev = 0; /* the error stays for tk_reader_next() */
		return 0;
	}
	uint32_t k = 0;
	while (k < max && r->ev_pos < r->nev && r->kinds[r->ev_pos] <= TK_KIND_MAX) {
		fill_event_at(r, r->ev_pos++, (struct tk_event *)((char *)out + k * stride));
		k++;
	}
	return k;
}

TK_PUBLIC int
tk_reader_next_columns(struct tk_reader *r, struct tk_columns *c)
{
	if (!r || !c)
		return TK_EINVAL;
	int ready = check_ready(r);
	if (ready)
		return ready;
	for (;;) {
		/* definitions are in the reader already: skip their records */
		r->pending_pos = r->npending;
		if (r->ev_pos < r->nev) {
			uint32_t i = r->ev_pos;
			c->n = r->nev - i;
			c->kind = r->kinds + i;
			c->track = r->trackv + i;
			c->ts = r->tsv + i;
			c->dur = r->durv + i;
			c->name_id = r->namev + i;
			c->scope = r->scope;
			r->ev_pos = r->nev;
			return TK_OK;
		}
		int scope;
		int rc = next_unit(r, &scope);
		if (rc)
			return rc;
	}
}

/* ---- options ------------------------------------------------------------------------ */

TK_PUBLIC int
tk_reader_set_options(struct tk_reader *r, const struct tk_reader_options *o)
{
	static const struct tk_reader_options defaults = TK_READER_OPTIONS_INIT;
	if (!r)
		return TK_EINVAL;
	if (!o)
		o = &defaults;
	if (o->threads < 0 || o->no_args < 0 || o->no_args > 1)
		return TK_EINVAL;
	r->threads = (unsigned)o->threads;
	r->no_args = o->no_args;
	return TK_OK;
}

/* ---- accessors ------------------------------------------------------------------------ */

TK_PUBLIC const char *
tk_reader_name(const struct tk_reader *r)
{
	return r && r->name ? r->name : "";
}

TK_PUBLIC const char *
tk_reader_error(const struct tk_reader *r)
{
	return r ? tkp_error_msg(&r->error) : "no error";
}

TK_PUBLIC int
tk_reader_errno(const struct tk_reader *r)
{
	return r ? r->error.errnum : 0;
}

TK_PUBLIC uint64_t
tk_reader_offset(const struct tk_reader *r)
{
	return r ? r->offset : 0;
}

TK_PUBLIC const struct tk_chunk_info *
tk_reader_chunk(const struct tk_reader *r)
{
	return r ? &r->chunk : NULL;
}

TK_PUBLIC void
tk_reader_version(const struct tk_reader *r, unsigned *major, unsigned *minor)
{
	if (major)
		*major = r ? r->major : 0;
	if (minor)
		*minor = r ? r->minor : 0;
}

TK_PUBLIC unsigned
tk_reader_scope(const struct tk_reader *r)
{
	return r ? r->scope : 0;
}

TK_PUBLIC uint64_t
tk_reader_skipped(const struct tk_reader *r)
{
	return r ? r->skipped : 0;
}

TK_PUBLIC const char *
tk_reader_string(const struct tk_reader *r, uint32_t id)
{
	if (!r || id == 0 || id > r->nstrings)
		return id == 0 ? "" : NULL;
	return r->strings[id].s;
}

TK_PUBLIC const struct tk_track *
tk_reader_track(const struct tk_reader *r, uint32_t id)
{
	if (!r || id == 0 || id > r->ntracks)
		return NULL;
	return r->tracks[id];
}

TK_PUBLIC const struct tk_device *
tk_reader_device(const struct tk_reader *r, uint32_t id)
{
	if (!r || id == 0 || id > r->ndevices)
		return NULL;
	return r->devices[id];
}

TK_PUBLIC const struct tk_meta *
tk_reader_meta(const struct tk_reader *r, size_t i)
{
	if (!r || i >= r->nmeta)
		return NULL;
	return r->meta[i];
}

TK_PUBLIC const char *
tk_reader_meta_get(const struct tk_reader *r, const char *key)
{
	if (!r || !key)
		return NULL;
	for (size_t i = r->nmeta; i-- > 0;)
		if (strcmp(r->meta[i]->key, key) == 0)
			return r->meta[i]->value;
	return NULL;
}
