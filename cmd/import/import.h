/* SPDX-License-Identifier: MIT */
/*
 * The parts of trace-import, one job per file:
 *   run.c        one import from start to end (trace-import.c has the
 *                options; the fuzz target calls this too)
 *   autoread.c   what the reading commands open: a .tkt as it is, or
 *                another trace imported on the way in (autoread.h)
 *   input.c      the input bytes: plain or gzip, told apart by content
 *   scan.c       the splitter: walks the top-level JSON and hands out
 *                each event's bytes (and each other top-level value)
 *                without parsing them; tracks strings, escapes and
 *                nesting only (on one thread, the events the fast
 *                path takes are read by flat.c as they are split)
 *   pipe.c       jansson parses batches of events in a second thread,
 *                its allocations in an arena per batch
 *   parse.c      one event's bytes to a jansson value, repairing what
 *                jansson refuses but a trace may hold (invalid UTF-8,
 *                integers above 64 bits)
 *   num.c        numbers from their decimal text: microseconds to
 *                integer nanoseconds, exact
 *   event.c      Chrome phases: complete, begin/end, instants,
 *                counters, async, flows, metadata
 *   kineto.c     PyTorch profiler (Kineto) and trace-to-chrome
 *                categories and args to tracekit kinds
 *   tracks.c     Chrome pids and tids to tracekit tracks and devices,
 *                their names, and their definitions in a writer
 *   meta.c       top-level keys: run metadata and device properties
 *   sort.c       time order in bounded memory: sorted runs in memory,
 *                spilled to temporary files and merged
 *   summary.c    what became of each kind of event, for -v
 */
#ifndef TK_CMD_IMPORT_H
#define TK_CMD_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <zlib.h>

#include "common/progress.h"

#include "tracekit.h"

/* Largest event (or other top-level value) held in memory at once. */
#define IMP_MAX_ITEM (64u << 20)
/* Warnings printed about single events; the rest are counted. */
#define IMP_MAX_WARNINGS 10

/* ---- run.c ----------------------------------------------------------- */

struct imp_input;
struct imp_options {
	size_t memory;             /* for sorting before temporary files */
	const char *tmpdir;        /* NULL: $TMPDIR or /tmp */
	int threads;               /* parse in a second thread */
	int slow;                  /* every event through jansson (no flat.c) */
	int verbose;               /* the summary on stderr */
	int quiet;                 /* no warnings on stderr (the fuzz target) */
};

/* Import `in` into `w` (open; the caller closes it).  Returns 0, 1 if
 * the input could not be read completely (warned; the rest is written),
 * or 2 if the output or a temporary file could not be written. */
int imp_run(struct imp_input *in, struct tk_writer *w, const struct imp_options *o);

/* ---- input.c --------------------------------------------------------- */

struct imp_input {
	int fd;
	int own_fd;
	const char *name;          /* for messages */
	int gz;                    /* gzip members are inflated */
	int sqlite;                /* a SQLite database (nsys.c reads it) */
	z_stream zs;
	int zs_live;
	unsigned char *raw;        /* bytes read from fd, not yet inflated */
	size_t raw_len, raw_pos, raw_cap;
	int raw_eof;
	uint64_t raw_total;        /* bytes read from the file */
	struct cmd_progress *progress; /* of the reading, or NULL; borrowed */
	char errmsg[256];
};

/* Open `path` ("-" = stdin) and look at its first bytes: gzip is
 * inflated, plain text passed on, anything else refused.  Returns 0, or
 * -1 with a message in in->errmsg. */
int imp_input_open(struct imp_input *in, const char *path);
/* Read `fd` (borrowed: not closed) from where it is; `name` (borrowed)
 * is for messages. */
int imp_input_open_fd(struct imp_input *in, int fd, const char *name);
/* Open a memory buffer (for tests and the fuzzer); borrowed. */
int imp_input_open_mem(struct imp_input *in, const void *buf, size_t len,
                       const char *name);
/* Up to n bytes of JSON text; 0 at the end, -1 on error (message). */
long imp_input_read(struct imp_input *in, void *buf, size_t n);
void imp_input_close(struct imp_input *in);

/* ---- scan.c ---------------------------------------------------------- */

enum imp_span_key { IMP_SPAN_TS, IMP_SPAN_DUR, IMP_SPAN_PH, IMP_SPAN_CAT,
	IMP_SPAN_ARGS, IMP_SPAN_MAX };

enum imp_item_type {
	IMP_EVENT = 1,     /* one element of traceEvents (or of a bare array) */
	IMP_TOPKEY,        /* another key of the top-level object */
};

struct imp_item {
	enum imp_item_type type;
	const char *text;          /* the value's bytes, borrowed */
	size_t len;
	uint64_t offset;           /* byte offset of text in the JSON */
	const char *key;           /* IMP_TOPKEY: the key, NUL-terminated */
	/* IMP_EVENT objects: where the values of some top-level keys are
	 * within text (len 0 = not seen): ts and dur, whose digits are read
	 * exactly; ph and cat, to know correlation flows without parsing
	 * them; args, copied as they are when nothing in them changes */
	struct imp_span {
		uint32_t off, len;
	} span[IMP_SPAN_MAX];
	int is_object;             /* the value starts with '{' */
	int flat;                  /* an event the fast path read (into the
	                              splitter's imp_flat; no spans) */
};

struct imp_flat;

struct imp_scan {
	struct imp_input *in;
	char *buf;
	size_t cap, pos, end;      /* unread bytes are buf[pos, end) */
	uint64_t base;             /* offset of buf[0] in the JSON */
	int eof;
	int state;
	int top_array;             /* the top level is a bare array */
	int events_arrays;         /* traceEvents arrays seen */
	uint64_t events;
	int unclosed_array;        /* a bare array cut short (allowed) */
	char *key;                 /* current top-level key */
	size_t key_cap;
	struct imp_flat *flat;     /* the fast path's reading, or NULL */
	char errmsg[512];
};

/* With `flat` (borrowed), events the fast path takes are read into it
 * as they are split (imp_flat_read), which ends their strings in place:
 * the item's flat is set, and *flat holds the reading until the next
 * item.  NULL: every event is only delimited. */
void imp_scan_init(struct imp_scan *s, struct imp_input *in, struct imp_flat *flat);
void imp_scan_free(struct imp_scan *s);
/* The next item: 1, 0 at the clean end, -1 on an error that stops the
 * import ("expected ',' or ']' at byte 1234" in s->errmsg). */
int imp_scan_next(struct imp_scan *s, struct imp_item *it);

/* ---- num.c ----------------------------------------------------------- */

/* A JSON number of microseconds (fractional, exponent allowed) as
 * nanoseconds, rounded half away from zero.  0, or -1 if it is not a
 * number or does not fit in int64 (INT64_MIN, no time, excluded). */
int imp_us_to_ns(const char *s, size_t len, int64_t *ns);
/* A decimal integer (optional sign) that fits in int64. */
int imp_parse_i64(const char *s, size_t len, int64_t *v);
/* A non-negative decimal integer that fits in uint64 ("0x" hex too). */
int imp_parse_u64(const char *s, size_t len, uint64_t *v);

/* ---- parse.c --------------------------------------------------------- */

/* One import's parser: what it repaired, and the buffer it repairs in.
 * Only the converting thread uses it (pipe.c's thread calls
 * json_loadb() alone); zero it to start. */
struct imp_parser {
	uint64_t utf8_repaired;    /* events with invalid UTF-8 made valid */
	uint64_t big_numbers;      /* numbers beyond 64 bits kept as text */
	int repaired;              /* the last value parsed was repaired */
	char *scratch;             /* the text being repaired */
	size_t scratch_cap;
};

/* Parse one event's bytes.  Returns the value, or NULL with a message
 * and the error's byte offset within text in *err_at. */
json_t *imp_parse(const char *text, size_t len, struct imp_parser *ps,
                  char *msg, size_t msgsz, size_t *err_at);
/* Free the scratch buffer (the counts stay). */
void imp_parser_free(struct imp_parser *ps);

/* ---- flat.c, fast.c -------------------------------------------------- */

enum { IMP_FLAT_INT = 1, IMP_FLAT_REAL, IMP_FLAT_STR, IMP_FLAT_BOOL, IMP_FLAT_NULL,
	IMP_FLAT_ARRAY, IMP_FLAT_OBJECT };
enum { IMP_FLAT_RANGE = 1, IMP_FLAT_KERNEL, IMP_FLAT_MEMCPY, IMP_FLAT_MEMSET,
	IMP_FLAT_RUNTIME, IMP_FLAT_DRIVER, IMP_FLAT_API_OTHER, IMP_FLAT_MEMORY };
#define IMP_FLAT_MAX_ARGS 24

/* An event read without jansson: its fields, and its args' keys and
 * values as spans of its text. */
struct imp_flat {
	const char *ph, *name, *cat;   /* NUL-terminated within the text */
	int64_t pid, tid, ts, dur;     /* ts and dur in ns */
	struct imp_span args_span;     /* the args object (len 0: none) */
	uint8_t kind;                  /* IMP_FLAT_RANGE ... */
	char scope;                    /* instants: 't' or 'p' */
	uint8_t has_args;
	uint8_t nargs;
	struct imp_flat_arg {
		struct imp_span key;       /* without the quotes */
		struct imp_span val;       /* the value as written */
		int64_t i;                 /* IMP_FLAT_INT: its value */
		uint8_t type;
		uint8_t canon;             /* jansson would write it back as is */
		uint8_t rule;              /* flat.c's rule for it, + 1 */
	} args[IMP_FLAT_MAX_ARGS];
};

struct imp;
/* Read an event the fast path knows (an X event of the usual shapes, see
 * flat.c): 1, with its strings ended in place in text; 0 to leave it to
 * jansson (text unchanged). */
int imp_flat_scan(char *text, size_t len, struct imp_flat *f);
/* The same for the event that begins at text, whose end is not known
 * yet: its length, or 0 (for jansson, or not complete in avail bytes). */
size_t imp_flat_read(char *text, size_t avail, struct imp_flat *f);
/* Convert an event read by imp_flat_scan() or imp_flat_read(): 0, or 1
 * if it could not be queued (writing failed: im->fatal). */
int imp_fast_event(struct imp *im, const struct imp_item *it, const struct imp_flat *f);

/* ---- pipe.c ---------------------------------------------------------- */

struct arena_block;

/* jansson's allocations through pipe.c: call before any other
 * jansson call. */
void imp_alloc_init(void);

/* Items with their parsed values, in input order.  The values live in
 * the batch's arena: what is kept after the batch is given back must be
 * copied. */
struct imp_batch {
	struct imp_arena {
		struct arena_block *blocks;
	} arena;
	size_t n;
	struct imp_item *items;    /* text and key point into the batch */
	json_t **vals;             /* NULL: parse again with imp_parse() */
	struct imp_flat *flats;    /* read by the fast path if flat_ok */
	unsigned char *flat_ok;
	size_t flats_cap, flat_ok_cap;
	char *text;                /* the items' bytes, copied */
	size_t len, text_cap, items_cap, vals_cap, off_cap, keys_cap;
	size_t *off, *keys;
};

struct imp_pipe;
/* threaded: parse in a second thread (else in imp_pipe_put's caller). */
struct imp_pipe *imp_pipe_new(int threaded, int fast);
void imp_pipe_free(struct imp_pipe *p);
/* Queue an item (its bytes are copied). */
int imp_pipe_put(struct imp_pipe *p, const struct imp_item *it);
/* Enough is queued: take batches (blocking) before putting more. */
int imp_pipe_full(const struct imp_pipe *p);
/* No more items: queue what is left. */
void imp_pipe_end(struct imp_pipe *p);
/* The next batch in order, parsed; NULL if none is ready (or, with
 * block, none is left). */
struct imp_batch *imp_pipe_get(struct imp_pipe *p, int block);
/* Give a batch back (its values are released). */
void imp_pipe_done(struct imp_pipe *p, struct imp_batch *b);

/* ---- tracks.c -------------------------------------------------------- */

/* Chrome pids and tids are numbers or strings; strings that are not
 * numbers get made-up negative ids, one per distinct string. */
struct imp_id {
	int64_t v;
	const char *str;           /* the original string, or NULL */
};

struct imp_tracks;

struct imp_tracks *imp_tracks_new(void);
void imp_tracks_free(struct imp_tracks *t);
/* A pid or tid value (number, string, null, missing) as an id.  Returns
 * 0, or -1 for a type that cannot be one (message in msg). */
int imp_tracks_id(struct imp_tracks *t, json_t *v, struct imp_id *id,
                  char *msg, size_t msgsz);
/* Host name stored with processes and devices; set before any track. */
void imp_tracks_set_host(struct imp_tracks *t, const char *host);
/* At the end: the host of processes that have none (the trace's "host"
 * metadata, as trace-to-chrome keeps it). */
void imp_tracks_default_host(struct imp_tracks *t, const char *host);
/* At the end: the label of processes that have none (process_labels):
 * "rank N" from the trace's distributedInfo.rank, so that the ranks of
 * a job, imported one by one and merged, stay apart and are named. */
void imp_tracks_default_label(struct imp_tracks *t, const char *label);

/* Track indexes (>= 1) for events. */
uint32_t imp_process(struct imp_tracks *t, const struct imp_id *pid);
uint32_t imp_thread(struct imp_tracks *t, const struct imp_id *pid,
                    const struct imp_id *tid);
/* The stream (device index, stream id) of GPU work seen on Chrome
 * (pid, tid); the owner process is the first CPU process seen. */
uint32_t imp_stream(struct imp_tracks *t, uint32_t device_index,
                    uint64_t stream, uint64_t context,
                    const struct imp_id *pid, const struct imp_id *tid);
uint32_t imp_counter(struct imp_tracks *t, const char *name,
                     const char *unit, uint32_t process, uint32_t device);
/* Device id (>= 1) of CUDA device `index`, defined on first use. */
uint32_t imp_device(struct imp_tracks *t, uint32_t index);
/* Fill in a device's properties (deviceProperties, "GPU 0: name"). */
struct tk_device *imp_device_info(struct imp_tracks *t, uint32_t id);

/* Where a Chrome (pid, tid) goes when the event itself does not say:
 * a GPU lane's thread is a stream, an alias goes to its base track, a
 * thread otherwise.  Returns the track index. */
uint32_t imp_lane_track(struct imp_tracks *t, const struct imp_id *pid,
                        const struct imp_id *tid);
/* GPU device index of a Chrome pid known to be a GPU lane, or -1. */
int64_t imp_lane_device(struct imp_tracks *t, const struct imp_id *pid);
/* A process that calls the CUDA API: the first one owns the streams
 * (else the first process with a thread does). */
void imp_cpu_process(struct imp_tracks *t, const struct imp_id *pid);

/* Metadata events. */
void imp_name_process(struct imp_tracks *t, const struct imp_id *pid,
                      const char *name);
void imp_label_process(struct imp_tracks *t, const struct imp_id *pid,
                       const char *labels);
void imp_name_thread(struct imp_tracks *t, const struct imp_id *pid,
                     const struct imp_id *tid, const char *name);

/* Write the definition of track `idx` (and of the process and device it
 * refers to) into `w` unless map[] has it already; map is indexed by
 * track index, dmap by device id, both zeroed by the caller.  Returns
 * the writer's id, 0 on a writer error. */
uint32_t imp_define_track(struct imp_tracks *t, struct tk_writer *w,
                          uint32_t idx, uint32_t *map, uint32_t *dmap);
uint32_t imp_define_device(struct imp_tracks *t, struct tk_writer *w,
                           uint32_t id, uint32_t *dmap);
uint32_t imp_ntracks(const struct imp_tracks *t);
uint32_t imp_ndevices(const struct imp_tracks *t);
/* Counter samples equal to the one before (in time) are not written. */
void imp_counter_skip_repeats(struct imp_tracks *t, uint32_t idx);
int imp_counter_skips_repeats(const struct imp_tracks *t, uint32_t idx);
/* Mark a track as holding events (only those are defined). */
void imp_track_used(struct imp_tracks *t, uint32_t idx);
int imp_track_is_used(const struct imp_tracks *t, uint32_t idx);

/* ---- summary.c ------------------------------------------------------- */

/* What happened to the input's events, by (phase, category): counts
 * per outcome.  Outcomes are tracekit kinds, or the reasons below. */
enum imp_outcome {
	IMP_OUT_NONE = 0,
	/* 1..TK_KIND_MAX: written as that kind */
	IMP_OUT_METADATA = TK_KIND_MAX + 1, /* became track names, metadata */
	IMP_OUT_PAIRED,            /* an E, e or F: completed its begin */
	IMP_OUT_CORRELATED,        /* a flow of linked ends: correlation ids
	                              already link them */
	IMP_OUT_UNMATCHED_END,     /* an end without a begin: dropped */
	IMP_OUT_BAD,               /* could not be read: dropped, warned */
	IMP_OUT_IGNORED,           /* not kept, and said why in notes */
	IMP_OUT_MAX
};

struct imp_summary;
struct imp_summary *imp_summary_new(void);
void imp_summary_free(struct imp_summary *s);
void imp_summary_add(struct imp_summary *s, const char *ph, const char *cat,
                     unsigned outcome);
/* A free-form count: "unclosed B slices closed at the trace end". */
void imp_summary_note(struct imp_summary *s, const char *what, uint64_t n);
void imp_summary_print(struct imp_summary *s, FILE *f, const char *name);

/* ---- sort.c ---------------------------------------------------------- */

struct imp_sort;
struct imp_sort *imp_sort_new(struct imp_tracks *t, size_t memory,
                              const char *tmpdir);
void imp_sort_free(struct imp_sort *s);
/* Queue an event; its track is a track index, and its strings and args
 * are copied.  Returns 0, or -1 (message). */
int imp_sort_add(struct imp_sort *s, const struct tk_event *ev);
/* Write every event, in begin order, with `offset` ns added, after the
 * definitions and metadata (meta_fn writes them into a writer).
 * Returns 0, or -1 (message). */
int imp_sort_finish(struct imp_sort *s, struct tk_writer *out, int64_t offset,
                    int (*meta_fn)(void *arg, struct tk_writer *w),
                    void *meta_arg);
const char *imp_sort_error(const struct imp_sort *s);
/* Runs spilled to temporary files so far. */
uint32_t imp_sort_runs(const struct imp_sort *s);
/* Counter samples not written because they repeated the last value. */
uint64_t imp_sort_repeats(const struct imp_sort *s);
/* Events left out of the output: their time plus the offset of
 * imp_sort_finish does not fit in 64 bits. */
uint64_t imp_sort_beyond(const struct imp_sort *s);

/* ---- event.c, kineto.c, meta.c --------------------------------------- */

struct imp_open;               /* an open B slice or async range */

/* Everything one conversion needs. */
struct imp {
	const char *name;          /* input name for messages */
	struct imp_tracks *tracks;
	struct imp_sort *sort;
	struct imp_summary *sum;
	struct imp_parser parse;
	int verbose;
	int quiet;                 /* no warnings on stderr */

	/* B/E stacks and open async ranges, and the ends that came before
	 * their begins, held until the input is read (event.c) */
	struct imp_open **open;    /* hash table of open lists */
	size_t open_cap, nopen;
	uint64_t nheld;            /* held ends among them */
	uint64_t begin_end_seq;    /* begins and ends seen: their input order */

	/* the event being converted */
	uint64_t offset;           /* its byte offset, for messages */
	char *args;                /* remaining args as compact JSON */
	size_t args_cap;

	int64_t t_min, t_max;      /* over all events, before the base */
	int64_t base_ns;           /* baseTimeNanoseconds */
	int has_base;
	int kineto;                /* looks like a PyTorch profiler trace */

	/* top-level metadata, written with the definitions */
	json_t *meta;              /* key -> array of string values */
	json_t *categories;        /* [domain, category, name] */
	uint32_t meta_keys;
	size_t meta_bytes;

	int fatal;                 /* writing failed: stop reading */
	uint64_t bad_events;
	uint64_t warnings;
	uint64_t unclosed;
#define IMP_DERIVED 4
	uint64_t derived[IMP_DERIVED]; /* args not stored: tools derive them */
};

void imp_init(struct imp *im, const char *name, struct imp_tracks *t,
              struct imp_sort *s, struct imp_summary *sum);
void imp_free(struct imp *im);
/* Convert one parsed event.  Returns 0, or -1 after warning about an
 * event that cannot be converted (it is skipped). */
int imp_event(struct imp *im, json_t *ev, const struct imp_item *it);
/* Close what is still open at the end of the input. */
void imp_event_finish(struct imp *im);
/* A warning about the event at im->offset (counted; the first few are
 * printed). */
void imp_event_warn(struct imp *im, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A complete slice (X, or B and its E) or an instant being converted. */
struct imp_x {
	char ph;                   /* 'X' for slices, 'i' for instants */
	const char *phs;           /* the phase as written, for the summary */
	const char *name;
	const char *cat;
	json_t *args;              /* object or NULL; mapped keys are removed */
	struct imp_id pid, tid;
	int64_t ts, dur;
	int scope;                 /* instants: 't', 'p' or 'g' */
	int more;                  /* another event from the same input
	                              event: not counted again */
	/* the args as written, used (without white space) unless changed */
	const char *args_text;
	uint32_t args_len;
	size_t args_keys;          /* keys args had when parsed */
	int args_changed;          /* keys added or values replaced */
	/* the fast path's args, written already (fast.c) */
	int flat;
	const char *flat_args;
	uint32_t flat_args_len;
};

/* Kineto and tracekit categories: returns 1 when the event was mapped
 * and queued, 0 when it is not one of those (generic handling follows),
 * -1 after a warning. */
int imp_kineto(struct imp *im, struct imp_x *x);
/* Add what the mapping counted to the summary. */
void imp_kineto_finish(struct imp *im);

/* Queue ev (its track a track index) with x's remaining args; counts it
 * in the summary under x's phase and category.  Returns 0 or -1. */
int imp_emit(struct imp *im, struct tk_event *ev, const struct imp_x *x);
/* The track of thread-level work on x's pid and tid. */
uint32_t imp_x_track(struct imp *im, const struct imp_x *x);
/* Category names of NVTX ranges seen in args ("category name"). */
void imp_add_category(struct imp *im, const char *domain, uint32_t category,
                      const char *name);

/* A top-level key other than traceEvents. */
void imp_topkey(struct imp *im, const char *key, json_t *v);
/* A value the import itself adds (importer, import.source, ...): kept
 * even when the input's metadata is over its bound. */
void imp_meta_own(struct imp *im, const char *key, const char *value);
/* Write the run metadata into w. */
int imp_write_meta(struct imp *im, struct tk_writer *w);

/* Args left after mapping, as compact JSON in im->args; NULL if none.
 * Args left as they were are copied from the input, without white space;
 * others are written by jansson, reals with the fewest digits that read
 * back the same. */
const char *imp_args_text(struct imp *im, const struct imp_x *x, uint32_t *len);
/* The args buffer of im, room for n bytes. */
char *imp_args_buf(struct imp *im, size_t n);
/* JSON text checked already, without the white space between its tokens;
 * returns the length written to dst (at most n). */
size_t imp_squeeze(char *dst, const char *src, size_t n);
/* kineto.c: the kinds a copy's or a memset's name says. */
void imp_memcpy_name(const char *name, struct tk_memcpy_attrs *m);
unsigned imp_memset_kind(const char *name);

/* Count a correlation flow without parsing it (its ph and cat tell);
 * returns 1 if it was one. */
int imp_skip_flow(struct imp *im, const struct imp_item *it);

#endif
