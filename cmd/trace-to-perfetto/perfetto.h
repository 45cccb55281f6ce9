/* SPDX-License-Identifier: MIT */
/*
 * The parts of trace-to-perfetto, one job per file:
 *   pb.c       protobuf encoding: varints, tags, nested messages
 *   out.c      the output files: one, or a series under --split SIZE
 *   intern.c   interned names, categories, annotation keys and values
 *              of the current packet sequence
 *   tracks.c   Perfetto tracks for processes, threads, GPUs, streams,
 *              counters and async ranges; their descriptors; the
 *              nesting check that moves overlapping slices to extra
 *              tracks
 *   order.c    the heap that puts out-of-order events back in begin
 *              order, and the heap of slice ends still to write
 *   encode.c   one event as TrackEvent fields and debug annotations
 *   args.c     imported args as debug annotations
 *   packet.c   packets on the sequence: timestamps (incremental),
 *              flags, interned data, the preamble of each file
 * trace-to-perfetto.c reads the inputs, filters, and drives the rest.
 *
 * The output is `message Trace { repeated TracePacket packet = 1; }`
 * as in Perfetto's perfetto_trace.proto; the field numbers below are
 * that schema's.
 */
#ifndef TK_CMD_PERFETTO_H
#define TK_CMD_PERFETTO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tracekit.h"

/* ---- pb.c: protobuf encoding ------------------------------------------ */

struct pbuf {
	uint8_t *p;
	size_t len, cap;
};

enum { PB_VARINT = 0, PB_FIXED64 = 1, PB_LEN = 2 };

/* Make room for `n` more bytes (dies when out of memory). */
void pb_grow(struct pbuf *b, size_t n);
void pb_free(struct pbuf *b);

static inline void
pb_varint(struct pbuf *b, uint64_t v)
{
	if (b->cap - b->len < 10)
		pb_grow(b, 10);
	uint8_t *q = b->p + b->len;
	while (v >= 0x80) {
		*q++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*q++ = (uint8_t)v;
	b->len = (size_t)(q - b->p);
}

static inline void
pb_tag(struct pbuf *b, unsigned field, unsigned wire)
{
	pb_varint(b, ((uint64_t)field << 3) | wire);
}

static inline void
pb_uint(struct pbuf *b, unsigned field, uint64_t v)
{
	pb_tag(b, field, PB_VARINT);
	pb_varint(b, v);
}

/* int32/int64 fields: two's complement, as protobuf does. */
static inline void
pb_int(struct pbuf *b, unsigned field, int64_t v)
{
	pb_uint(b, field, (uint64_t)v);
}

void pb_fixed64(struct pbuf *b, unsigned field, uint64_t v);
void pb_double(struct pbuf *b, unsigned field, double v);
void pb_bytes(struct pbuf *b, unsigned field, const void *p, size_t n);
void pb_str(struct pbuf *b, unsigned field, const char *s);
/* Append the bytes of another buffer as a nested message. */
void pb_msg(struct pbuf *b, unsigned field, const struct pbuf *m);

/* Nested message of unknown length: pb_open() writes the tag and a
 * one-byte length placeholder and returns its position; pb_close()
 * fills it in, moving the body when the length needs more bytes. */
size_t pb_open(struct pbuf *b, unsigned field);
void pb_close(struct pbuf *b, size_t at);

/* ---- out.c: output files ------------------------------------------------- */

struct pf_out {
	FILE *f;
	const char *path;        /* NULL = standard output */
	char *cur_path;          /* the file being written (split series) */
	uint64_t split;          /* bytes per file, 0 = one file */
	unsigned index;          /* split series: number of the file, from 1 */
	uint64_t bytes;          /* bytes in the current file */
	uint64_t total;          /* bytes in all files */
	unsigned files;
	int regular;             /* the current file is a regular file */
};

/* Open the first file.  Dies with status 2 when it cannot, or when
 * standard output is a terminal. */
void pf_out_open(struct pf_out *o, const char *path, uint64_t split);
/* Append bytes; exits quietly on EPIPE, with status 2 on other errors. */
void pf_out_write(struct pf_out *o, const void *p, size_t n);
/* Close the current file and open the next of the series. */
void pf_out_next(struct pf_out *o);
void pf_out_close(struct pf_out *o);
/* Path of file `index` of a series for `path`: "run.pftrace" gives
 * "run-001.pftrace".  Caller frees. */
char *pf_split_path(const char *path, unsigned index);

/* ---- intern.c: interned strings of the sequence ---------------------------- */

/* The tables, each written to its InternedData field. */
enum {
	PF_T_CATEGORY = 0,       /* event_categories (field 1) */
	PF_T_NAME = 1,           /* event_names (2) */
	PF_T_KEY = 2,            /* debug_annotation_names (3) */
	PF_T_VALUE = 3,          /* debug_annotation_string_values (29) */
	PF_I_NTABLES = 4
};

struct pf_itable {
	/* by text: open addressing on a hash */
	struct pf_ientry *slot;
	size_t nslots, used;
	uint64_t next_iid;
	/* by .tkt string id (names only): iid, valid when gen matches */
	uint32_t *by_id_iid;
	uint32_t *by_id_gen;
	size_t nby_id;
};

struct pf_ientry {
	char *s;
	uint32_t len;
	uint32_t gen;
	uint64_t iid;
	uint64_t hash;
};

struct pf_intern {
	struct pf_itable t[PF_I_NTABLES];
	uint32_t gen;            /* bumped when the sequence is cleared */
	uint32_t scope_gen;      /* bumped when .tkt string ids are void */
	struct pbuf pending;     /* InternedData body for the next packet */
	size_t limit;            /* entries per table before texts go inline
	                            (a sixteenth of it for string values) */
};

void pf_intern_init(struct pf_intern *in);
void pf_intern_free(struct pf_intern *in);
/* A new sequence (a new file): every iid is void. */
void pf_intern_clear(struct pf_intern *in);
/* A new .tkt scope: string ids are void. */
void pf_intern_scope(struct pf_intern *in);
/* The iid of `s` (n bytes) in table `which`, adding its definition to
 * in->pending when new.  0 when the table is full (write it inline). */
uint64_t pf_intern(struct pf_intern *in, int which, const char *s, size_t n);
/* The same for an event name by its .tkt string id (0 = not interned). */
uint64_t pf_intern_name(struct pf_intern *in, uint32_t id, const char *s);

/* ---- tracks.c: Perfetto tracks ---------------------------------------------- */

enum pf_track_kind {
	PT_PROCESS = 1,
	PT_THREAD,
	PT_GPU,
	PT_STREAM,
	PT_COUNTER,
	PT_ASYNC,                /* async ranges of a process */
	PT_OTHER,
	PT_OVERFLOW,
};

struct pf_span {
	int64_t begin, end;
};

struct pf_track {
	uint64_t uuid;
	int kind;                /* enum pf_track_kind */
	uint32_t parent;         /* index of the parent track, 0 = none */
	char *name;
	char *host;
	int64_t pid;             /* processes and threads: pid as written */
	int64_t os_pid;          /* processes: the real pid */
	int64_t tid;             /* threads: tid; streams: stream id */
	uint64_t context;        /* streams */
	uint32_t owner;          /* streams: process track; async: process */
	uint32_t dev_index;      /* GPUs */
	uint8_t uuid16[16];      /* GPUs */
	int64_t start;           /* processes: start time */
	char **argv;             /* processes */
	uint32_t argc;
	char *label;
	char *unit;              /* counters */
	int64_t rank;            /* sibling order */
	uint32_t announced;      /* file number whose descriptor holds it */
	/* nesting state */
	struct pf_span *stack;
	uint32_t depth, cap;
	int64_t last_begin;
	uint32_t next_overflow;
	uint32_t noverflow;
	uint32_t base;
};

struct pf_tkmap {
	uint32_t track;          /* Perfetto track for slices and instants */
	uint32_t async;          /* async-range track, made on first use */
	uint32_t process;        /* process track of the owner, 0 = none */
	int resolved;
};

struct pf_tracks {
	struct pf_track *t;      /* index 0 unused */
	uint32_t n, cap;
	struct pf_tkmap *map;    /* by .tkt track id of the current scope */
	uint32_t nmap;
	int64_t next_pid;        /* made-up pids for colliding processes */
	uint32_t max_overflow;
	uint64_t moved;          /* slices placed on extra tracks */
	uint64_t overflow_tracks;
	uint32_t global;         /* the track of global instants, 0 = none yet */
};

void pf_tracks_init(struct pf_tracks *tr);
void pf_tracks_free(struct pf_tracks *tr);
void pf_tracks_scope(struct pf_tracks *tr);
void pf_tracks_redefine(struct pf_tracks *tr, uint32_t tk_id);
const struct pf_tkmap *pf_tracks_map(struct pf_tracks *tr,
                                     const struct tk_reader *r,
                                     const struct tk_track *t);
/* The async-range track of a .tkt track's process (made when needed). */
uint32_t pf_tracks_async(struct pf_tracks *tr, const struct tk_reader *r,
                         const struct tk_track *t);
/* The track of instants of global scope: of no process or thread (made
 * on first use). */
uint32_t pf_tracks_global(struct pf_tracks *tr);
/* Encode the TrackDescriptor of track i (and of its parents first) into
 * packets appended to `out` when file `file` has not had them yet. */
void pf_tracks_announce(struct pf_tracks *tr, uint32_t i, unsigned file,
                        struct pbuf *out, uint32_t seq_id);
/* Place slice [b, e] on track i or one of its extra tracks so that every
 * track nests; returns the track used and its depth there, 0 when all
 * extra tracks are taken. */
uint32_t pf_tracks_place(struct pf_tracks *tr, uint32_t i, int64_t b,
                         int64_t e, uint32_t *depth);

/* ---- order.c: heaps ---------------------------------------------------------- */

/* An event copied out of the reader to wait for its turn, in an arena
 * block; the next event of its run follows `next`. */
struct pf_held {
	struct tk_event ev;      /* pointers into `strings` */
	uint64_t seq;
	uint32_t map_track;      /* Perfetto track for it */
	uint32_t scope;
	char *strings;           /* its texts, after it in the block */
	size_t bytes;
	struct pf_held *next;    /* the next of its run, NULL = none yet */
	struct pf_block *block;
};

/* Arena block of held events: freed when the last of them is let out. */
struct pf_block {
	size_t refs;             /* held events in it not yet let out */
	size_t used, cap;        /* bytes of data[] */
	_Alignas(16) unsigned char data[];
};

/* The heap holds runs, not events: a run is a series of held events
 * already in order (an unsorted import is sorted chunks whose times
 * overlap, each chunk one run), and the heap orders runs by their first
 * event.  Merging a few runs costs a comparison or two per event where
 * a heap of every event cost a sift through cache misses.  Each entry
 * keeps its run's first sort keys beside the pointer. */
struct pf_slot {
	int64_t ts, dur;
	uint64_t seq;
	struct pf_held *held;    /* first event of the run */
};

struct pf_reorder {
	struct pf_slot *heap;
	size_t n, cap;
	size_t held;             /* bytes */
	size_t limit;
	size_t peak;
	uint64_t seq;
	struct pf_held *tail;    /* last event pushed while its run waits */
	struct pf_block *cur;    /* block that takes new events */
	struct pf_block *spare;  /* an emptied block kept for reuse */
};

void pf_reorder_init(struct pf_reorder *ro, size_t limit);
void pf_reorder_free(struct pf_reorder *ro);
/* Copy `e` (its strings too) into the heap. */
void pf_reorder_push(struct pf_reorder *ro, const struct tk_event *e,
                     uint32_t track, uint32_t scope);
/* The earliest held event if it begins before `bound`, else NULL; the
 * caller frees it with pf_held_free(). */
struct pf_held *pf_reorder_pop(struct pf_reorder *ro, int64_t bound);
void pf_held_free(struct pf_reorder *ro, struct pf_held *h);

struct pf_end {
	int64_t ts;
	uint32_t depth;
	uint32_t track;
	uint64_t seq;
};

struct pf_ends {
	struct pf_end *heap;
	size_t n, cap;
	uint64_t seq;
};

void pf_ends_push(struct pf_ends *h, int64_t ts, uint32_t track, uint32_t depth);
/* The next end at or before `bound` (innermost first on a tie), or 0. */
int pf_ends_pop(struct pf_ends *h, int64_t bound, struct pf_end *out);
void pf_ends_free(struct pf_ends *h);

/* ---- packet.c: the sequence -------------------------------------------------- */

#define PF_SEQ_ID 1u
#define PF_CLOCK_INCR 64u        /* our incremental clock, ns */
#define PF_CLOCK_INCR_US 65u     /* the same in microseconds */
#define PF_CLOCK_BOOTTIME 6u     /* the trace clock */

/* The incremental clocks' state: the time of the last packet on each,
 * which one packets use by default, and the score that picks it. */
struct pf_clocks {
	int64_t ns, us;          /* ns since the epoch, both */
	int micro;               /* the default is PF_CLOCK_INCR_US */
	int score;               /* +1 a whole microsecond, -4 not */
};

struct pf_seq {
	struct pf_out *out;
	struct pf_intern *in;
	struct pbuf pkt;         /* packets being assembled */
	struct pf_clocks clock;
	uint64_t packets;
	uint64_t absolute;       /* packets written with absolute times */
};

/* The first packets of a file: incremental state cleared, the clock
 * snapshot, packet defaults, and metadata as trace attributes (`meta`:
 * key, value pairs, n of them). */
void pf_seq_start(struct pf_seq *s, int64_t t0, const char *const *meta,
                  size_t nmeta);
/* A TraceAttributes packet: n key, value pairs (the Overview page of the
 * Perfetto UI; `trace_attribute.KEY` in trace processor's metadata). */
void pf_seq_attributes(struct pf_seq *s, const char *const *kv, size_t n);
/* Append one packet with a TrackEvent body `te` at time `ts` to s->pkt,
 * with the interned data it introduced. */
void pf_seq_event(struct pf_seq *s, int64_t ts, const struct pbuf *te);
/* Write s->pkt out and empty it. */
void pf_seq_flush(struct pf_seq *s);

/* ---- encode.c: event bodies -------------------------------------------------- */

/* TrackEvent fields. */
enum {
	TE_CATEGORY_IIDS = 3,
	TE_DEBUG = 4,
	TE_TYPE = 9,
	TE_NAME_IID = 10,
	TE_TRACK_UUID = 11,
	TE_CATEGORIES = 22,
	TE_COUNTER_VALUE = 30,
	TE_NAME = 23,
	TE_DOUBLE_COUNTER = 44,
	TE_FLOW_IDS = 47,
	TE_TERMINATING_FLOW_IDS = 48,
};

enum { TE_SLICE_BEGIN = 1, TE_SLICE_END = 2, TE_INSTANT = 3, TE_COUNTER = 4 };

struct pf_args;                  /* args.c: shapes of args texts seen */

struct pf_enc {
	struct pf_intern *in;
	struct pf_args *args;    /* made on first use */
	uint32_t scope;
	int flows;               /* flow ids from launches to GPU work */
	uint64_t bad_args;       /* imported args that were not an object */
};

/* The TrackEvent of event `e` (begin of a slice, instant or counter
 * sample) on track `uuid`: name, category, annotations, flows. */
void pf_encode_event(struct pf_enc *x, struct pbuf *te, const struct tk_event *e,
                     uint64_t uuid, int type);

/* DebugAnnotation fields. */
enum {
	DA_NAME_IID = 1, DA_BOOL = 2, DA_UINT = 3, DA_INT = 4, DA_DOUBLE = 5,
	DA_STRING = 6, DA_POINTER = 7, DA_NAME = 10, DA_DICT = 11, DA_ARRAY = 12,
	DA_STRING_IID = 17,
};

/* Open annotation `field` (TE_DEBUG, DA_DICT, DA_ARRAY) named `key`
 * (interned; NULL = no name); close it with pb_close(). */
size_t pf_ann_open(struct pf_enc *x, struct pbuf *b, unsigned field, const char *key);
/* A string value, interned when short. */
void pf_value_str(struct pf_enc *x, struct pbuf *b, const char *s, size_t n);

/* ---- args.c: imported args ----------------------------------------------------- */

/* The event's imported args (a JSON object) as annotations. */
void pf_args_annotate(struct pf_enc *x, struct pbuf *b, const struct tk_event *e);
void pf_args_free(struct pf_args *A);

#endif
