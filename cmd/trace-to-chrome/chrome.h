/* SPDX-License-Identifier: MIT */
/*
 * The parts of trace-to-chrome, one job per file:
 *   buf.c      appendable byte buffers and number formatting
 *   out.c      the output file: plain or gzip, buffered
 *   strings.c  JSON string literals, escaped by jansson once per
 *                     string id
 *   layout.c   lanes (Chrome pids) and tracks (tids), their
 *                     metadata events, and the nesting check that moves
 *                     overlapping slices to extra tracks
 *   reorder.c  the bounded buffer that releases slices in begin
 *                     order as chunk watermarks allow
 *   flows.c    the bounded matcher of API calls and GPU work by
 *                     correlation id
 * trace-to-chrome.c maps each event kind to Chrome phases.
 */
#ifndef TK_CMD_CHROME_H
#define TK_CMD_CHROME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tracekit.h"

/* ---- buf.c ---------------------------------------------------------- */

struct sbuf {
	char *p;
	size_t len, cap;
};

/* Make room for `n` more bytes (dies when out of memory). */
void sb_grow(struct sbuf *b, size_t n);
/* tkp_grow() (support.h) for the arrays of trace-to-chrome: room for
 * `need` elements of `size` bytes, the new ones zeroed; dies when out
 * of memory. */
void *chrome_grow(void *items, size_t *cap, size_t need, size_t size);
void sb_free(struct sbuf *b);

static inline void
sb_mem(struct sbuf *b, const void *p, size_t n)
{
	if (b->cap - b->len < n)
		sb_grow(b, n);
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static inline void
sb_ch(struct sbuf *b, char c)
{
	if (b->cap == b->len)
		sb_grow(b, 1);
	b->p[b->len++] = c;
}

/* Append a string literal. */
#define sb_lit(b, s) sb_mem((b), (s), sizeof(s) - 1)

void sb_u64(struct sbuf *b, uint64_t v);
void sb_i64(struct sbuf *b, int64_t v);
/* Nanoseconds as decimal microseconds, exact: 1234567 -> "1234.567",
 * 5000 -> "5", 1500 -> "1.5". */
void sb_us(struct sbuf *b, int64_t ns);
/* A finite double, shortest of %.15g/%.17g that reads back equal. */
void sb_dbl(struct sbuf *b, double v);
/* A double as the first of %.15g, %.16g and %.17g that reads back
 * equal (byte for byte what printf writes), at about a third of the cost
 * of asking printf each time. */
void sb_dbl_exact(struct sbuf *b, double v);
void sb_printf(struct sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- out.c ---------------------------------------------------------- */

struct chrome_out {
	struct sbuf b;
	FILE *f;                 /* plain output */
	struct chrome_gz *gz;    /* when compressing */
	int fd;                  /* of gz */
	const char *path;        /* NULL = standard output */
	int regular;             /* path is a regular file (removed on errors) */
	uint64_t bytes;          /* uncompressed bytes written */
};

/* Open `path` (NULL = stdout) for writing, gzip-compressed if asked.
 * Dies with exit status 2 when it cannot. */
void chrome_out_open(struct chrome_out *o, const char *path, int gzip);
/* Write what is buffered: call after each event; it writes only past a
 * threshold.  Exits quietly on EPIPE, with status 2 on other errors. */
void chrome_out_maybe_flush(struct chrome_out *o);
/* Flush and close; exits like chrome_out_maybe_flush on errors. */
void chrome_out_close(struct chrome_out *o);

/* ---- gz.c ----------------------------------------------------------- */

/* A gzip stream on `fd` (not closed), compressed on the threads that
 * TK_THREADS or the cores allow; `fail` is called with errno on a write
 * error and must not return.  Dies when out of memory. */
struct chrome_gz *chrome_gz_open(int fd, void (*fail)(void *ctx, int err),
                                 void *ctx);
/* Compress and write `b`'s bytes, in order: b's buffer is taken and b
 * gets another (maybe none: grow it before use), empty. */
void chrome_gz_write(struct chrome_gz *g, struct sbuf *b);
/* The last bytes (b, emptied as by chrome_gz_write()), the trailer;
 * frees g. */
void chrome_gz_close(struct chrome_gz *g, struct sbuf *b);

/* ---- strings.c ------------------------------------------------------ */

/* Escaped JSON literals ("...") of interned strings, cached by id for
 * the current scope: a name used by a million kernels is escaped once. */
struct chrome_strings {
	uint32_t *off;           /* per id: offset + 1 in arena, 0 = not yet */
	uint32_t *len;
	size_t nids;
	struct sbuf arena;
};

/* Append the JSON literal of string `id` (text `s`, NUL-terminated)
 * to `dst`.  id 0 means "not interned": escaped every time. */
void chrome_str(struct chrome_strings *c, struct sbuf *dst, uint32_t id,
                const char *s);
/* Append the JSON literal of `n` bytes at `s` (any bytes: invalid
 * UTF-8 becomes U+FFFD). */
void chrome_escape(struct sbuf *dst, const char *s, size_t n);
/* Forget every cached id (a new scope reuses ids). */
void chrome_strings_reset(struct chrome_strings *c);
void chrome_strings_free(struct chrome_strings *c);

/* ---- layout.c ------------------------------------------------------- */

/* A lane is a Chrome process (pid): an OS process, a GPU device, or a
 * lane for counters that belong to neither.  A track is a Chrome thread
 * (pid, tid) in a lane: an OS thread, a CUDA stream, a synthetic track
 * (process lifetime, runs), or an extra track that holds slices which
 * overlapped the ones on their base track. */
struct chrome_span {
	int64_t begin, end;
};

struct chrome_track {
	uint32_t lane;
	int64_t tid;
	char *name;              /* raw text; escaped when announced */
	int64_t sort;
	int announced;
	/* key */
	int kind;                /* enum chrome_track_kind */
	int64_t os_tid;          /* thread id or stream id */
	uint64_t context;
	uint32_t owner_lane;     /* streams: lane of the owning process */
	/* nesting state: the slices still open at the last placement */
	struct chrome_span *stack;
	uint32_t depth;
	size_t cap;
	int64_t last_begin;      /* begin of the last slice placed */
	uint32_t base;           /* overflow tracks: their base track */
	uint32_t next_overflow;  /* next extra track of the same base */
	uint32_t noverflow;      /* base tracks: extra tracks made */
};

enum chrome_track_kind {
	CT_THREAD = 1,
	CT_STREAM,
	CT_PROCESS,              /* process lifetime and runs */
	CT_OTHER,                /* events on tracks of unknown type */
	CT_OVERFLOW,
};

struct chrome_lane {
	int64_t pid;
	int gpu;
	char *name;
	char *labels;            /* "" if none */
	int64_t sort;
	int announced;
	/* key */
	char *host;
	int64_t os_pid;          /* processes */
	uint32_t dev_index;      /* GPUs */
	uint8_t uuid[16];
	char *label;             /* processes: trace-merge's label */
	/* what has no host (and no UUID, or no start) is itself only: the
	 * scope and the .tkt id of its definition */
	uint32_t only_scope, only_id;
	int kind;                /* enum chrome_lane_kind */
	uint32_t *tracks;        /* its tracks, for tid uniqueness */
	uint32_t ntracks;
	size_t captracks;
	uint32_t first_owner;    /* GPUs: the first process lane seen */
	uint32_t process_track;  /* CT_PROCESS track, 0 = none yet */
	int64_t next_tid;        /* synthetic tids come from here */
};

enum chrome_lane_kind {
	CL_PROCESS = 1,
	CL_GPU,
	CL_OTHER,                /* counters and tracks of no process */
};

/* What a .tkt track id of the current scope maps to. */
struct chrome_tkmap {
	uint32_t ctrack;         /* counters: a track for non-samples */
	uint32_t lane;
	int resolved;
	char *counter_name;      /* counters: escaped literals */
	char *counter_key;
};

struct chrome_layout {
	struct chrome_lane *lanes;      /* index 0 unused */
	uint32_t nlanes;
	size_t caplanes;
	struct chrome_track *tracks;    /* index 0 unused */
	uint32_t ntracks;
	size_t captracks;
	struct chrome_tkmap *map;       /* by .tkt track id */
	size_t nmap;                    /* entries, all zeroed when made */
	int64_t next_pid;
	uint32_t scope;                 /* scopes begun so far */
	uint32_t max_overflow;          /* extra tracks per base track */
	uint64_t moved;                 /* slices placed on extra tracks */
	uint64_t overflow_tracks;
};

void chrome_layout_init(struct chrome_layout *l);
void chrome_layout_free(struct chrome_layout *l);
/* A new scope: .tkt track ids are void. */
void chrome_layout_scope(struct chrome_layout *l);
/* A track (re)definition: forget its mapping so the next use redoes it. */
void chrome_layout_redefine(struct chrome_layout *l, uint32_t tk_id);
/* The mapping of an event's track, made on first use. */
const struct chrome_tkmap *chrome_layout_map(struct chrome_layout *l,
                                             const struct tk_reader *r,
                                             const struct tk_track *t);
/* Write the metadata events (names, sort order) of a track and its lane
 * the first time they are used. */
void chrome_layout_announce(struct chrome_layout *l, struct sbuf *out,
                            uint32_t ctrack, int *first);
/* The same for a lane alone (counters). */
void chrome_layout_announce_lane(struct chrome_layout *l, struct sbuf *out,
                                 uint32_t lane, int *first);
/* Place slice [begin, end] on base track `ctrack` or one of its extra
 * tracks, keeping every track strictly nested.  Returns the track used,
 * or 0 when all max_overflow extra tracks are taken. */
uint32_t chrome_layout_place(struct chrome_layout *l, uint32_t ctrack,
                             int64_t begin, int64_t end);
/* The track among `ctrack` and its extra tracks with a placed slice that
 * encloses `ts`, else `ctrack` itself. */
uint32_t chrome_layout_enclosing(struct chrome_layout *l, uint32_t ctrack,
                                 int64_t ts);

/* ---- reorder.c ------------------------------------------------------ */

enum chrome_entry_class {
	CE_SLICE = 0,            /* a complete event to place */
	CE_FLOW = 1,             /* an imported flow end, bound after slices */
};

enum chrome_flow_role {
	CF_NONE = 0,
	CF_API,                  /* a CUDA API call: flows start here */
	CF_GPU,                  /* GPU work: flows end here */
};

struct chrome_entry {
	int64_t ts, end;
	uint64_t seq;
	uint64_t corr;           /* correlation id (role != CF_NONE), flow id */
	uint32_t ctrack;
	uint32_t scope;
	uint32_t slab, off;      /* text: head then args */
	uint32_t head_len, args_len;
	uint8_t cls;             /* enum chrome_entry_class */
	uint8_t role;            /* enum chrome_flow_role; flow phase for CE_FLOW */
};

struct chrome_slab {
	char *mem;
	size_t size, used;
	uint32_t live;           /* entries whose text is here */
};

struct chrome_reorder {
	struct chrome_entry *heap;       /* entries that came out of order */
	size_t n, cap;
	struct chrome_entry *fifo;       /* a ring of entries that came in order */
	size_t fhead, flen, fcap;
	struct chrome_slab *slabs;
	uint32_t nslabs, cur;
	size_t capslabs;
	uint32_t *free_slabs;
	uint32_t nfree;
	size_t capfree;
	size_t held;             /* bytes of slabs in use */
	size_t limit;            /* release early past this */
	size_t peak;
	uint64_t seq;
};

void chrome_reorder_init(struct chrome_reorder *ro, size_t limit);
void chrome_reorder_free(struct chrome_reorder *ro);
/* Queue an entry whose text is `len` bytes at `text`. */
void chrome_reorder_push(struct chrome_reorder *ro, struct chrome_entry *e,
                         const char *text, size_t len);
/* Take the earliest entry if it begins before `bound`; its text stays
 * valid until chrome_reorder_done(). */
int chrome_reorder_pop(struct chrome_reorder *ro, int64_t bound,
                       struct chrome_entry *e, const char **text);
void chrome_reorder_done(struct chrome_reorder *ro, const struct chrome_entry *e);
/* Over the memory limit? */
static inline int
chrome_reorder_full(const struct chrome_reorder *ro)
{
	return ro->held > ro->limit;
}

/* ---- flows.c -------------------------------------------------------- */

struct chrome_flow_end {
	uint64_t corr;
	int64_t ts;
	uint32_t ctrack;
	uint32_t scope;
	uint32_t next;           /* hash chain, 0 = end */
	uint8_t role;            /* 0 = free slot */
};

typedef void chrome_flow_emit(void *ctx, uint64_t id,
                              uint32_t api_track, int64_t api_ts,
                              uint32_t gpu_track, int64_t gpu_ts);

struct chrome_flows {
	struct chrome_flow_end *slot;   /* ring, index 0 unused */
	uint32_t cap, head;
	uint32_t *bucket;
	uint32_t nbuckets;
	uint64_t next_id;
	uint64_t unmatched_gpu;         /* GPU work whose call never came */
	chrome_flow_emit *emit;
	void *ctx;
};

void chrome_flows_init(struct chrome_flows *f, uint32_t cap,
                       chrome_flow_emit *emit, void *ctx);
void chrome_flows_free(struct chrome_flows *f);
/* A placed API call, or placed GPU work, with correlation id `corr`. */
void chrome_flows_add(struct chrome_flows *f, int role, uint32_t scope,
                      uint64_t corr, uint32_t ctrack, int64_t ts);
/* Count GPU work still waiting (at the end). */
void chrome_flows_finish(struct chrome_flows *f);

#endif
