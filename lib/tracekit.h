/* SPDX-License-Identifier: MIT */
/*
 * tracekit.h - read and write .tkt performance traces.
 *
 * A trace is a stream of definitions (strings, processes, threads, GPU
 * devices, streams, counters, metadata) and events (ranges, API calls,
 * kernels, copies, counters, ...).  The byte format is specified in
 * tracekit-format(5); this API is described in tracekit(3).
 *
 * Conventions:
 *  - Functions return TK_OK (0), TK_EOF (1) or a negative TK_E* code.
 *    The handle keeps a one-line message: tk_reader_error(), and the
 *    errno of a failed system call: tk_reader_errno().  Its first
 *    failure is the one it keeps.
 *  - Times are int64 nanoseconds.  Recorders use CLOCK_REALTIME, so
 *    traces of different processes and hosts share one time axis.
 *  - Pointers returned by a reader are borrowed: valid until the next
 *    call on the same reader unless stated otherwise.
 *  - No global state; a handle may be used by one thread at a time.
 */
#ifndef TRACEKIT_H
#define TRACEKIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(TK_BUILDING_LIBRARY)
#define TK_PUBLIC __attribute__((visibility("default")))
#else
#define TK_PUBLIC
#endif

#define TK_VERSION "0.1.0"
#define TK_FORMAT_MAJOR 1
#define TK_FORMAT_MINOR 1

/* Library version, e.g. "0.1.0". */
TK_PUBLIC const char *tk_version(void);

/* Return codes. */
enum {
	TK_OK = 0,
	TK_EOF = 1,
	TK_AGAIN = 2,    /* feed mode: more input is needed */
	TK_ENOMEM = -1,  /* out of memory */
	TK_EIO = -2,     /* read or write failed; see tk_*_errno() */
	TK_EFORMAT = -3, /* not a tracekit trace (bad magic, empty input) */
	TK_EVERSION = -4,/* a format version or feature this reader lacks */
	TK_ECORRUPT = -5,/* checksum mismatch or malformed content */
	TK_ETRUNC = -6,  /* the input ends inside a header or chunk */
	TK_EINVAL = -7,  /* invalid argument from the caller */
};

/* Short description of a return code, e.g. "truncated input". */
TK_PUBLIC const char *tk_strerror(int code);

/* ---- Event kinds (numbers are part of the file format) ---------------- */

enum tk_kind {
	TK_RANGE = 1,       /* nested range on a thread: NVTX push/pop,
	                       imported CPU operators and annotations */
	TK_ASYNC_RANGE = 2, /* range that need not nest: NVTX start/end */
	TK_MARK = 3,        /* instant: NVTX mark, imported instant */
	TK_API = 4,         /* CUDA runtime or driver API call */
	TK_KERNEL = 5,      /* GPU kernel execution */
	TK_MEMCPY = 6,      /* GPU memory copy */
	TK_MEMSET = 7,      /* GPU memory set */
	TK_SYNC = 8,        /* CUDA synchronisation (stream, event, device) */
	TK_OVERHEAD = 9,    /* time the tool itself cost (CUPTI overhead) */
	TK_COUNTER = 10,    /* one sample of a counter track */
	TK_MEMORY = 11,     /* device memory allocation or release */
	TK_PROCESS = 12,    /* life of a process: start, duration, rusage */
	TK_RUN = 13,        /* one run of a repeated recording */
	TK_DROPPED = 14,    /* events the recorder had to drop */
	TK_FLOW = 15,       /* one end of an imported flow arrow */
	TK_KIND_MAX = 15
};

/* "range", "kernel", ...; NULL for a kind this library does not know. */
TK_PUBLIC const char *tk_kind_name(unsigned kind);
/* Inverse of tk_kind_name(); 0 if unknown. */
TK_PUBLIC unsigned tk_kind_from_name(const char *name);

/* NVTX payload types (TK_RANGE, TK_ASYNC_RANGE, TK_MARK). */
enum tk_payload {
	TK_PAYLOAD_NONE = 0,
	TK_PAYLOAD_UINT = 1,   /* value.u */
	TK_PAYLOAD_INT = 2,    /* value.i */
	TK_PAYLOAD_DOUBLE = 3, /* value.d */
};

union tk_value {
	uint64_t u;
	int64_t i;
	double d;
};

/* API domains (TK_API). */
enum tk_api_domain {
	TK_API_RUNTIME = 1,
	TK_API_DRIVER = 2,
	TK_API_OTHER = 3,
};
/* "runtime", "driver"; "other" for TK_API_OTHER and values this library
 * does not know. */
TK_PUBLIC const char *tk_api_domain_name(unsigned domain);

/* Memory copy kinds (TK_MEMCPY), as CUPTI counts them. */
enum tk_copy_kind {
	TK_COPY_UNKNOWN = 0,
	TK_COPY_HTOD = 1,
	TK_COPY_DTOH = 2,
	TK_COPY_HTOA = 3,
	TK_COPY_ATOH = 4,
	TK_COPY_ATOA = 5,
	TK_COPY_ATOD = 6,
	TK_COPY_DTOA = 7,
	TK_COPY_DTOD = 8,
	TK_COPY_HTOH = 9,
	TK_COPY_PTOP = 10,
};
/* "HtoD", "DtoH", ...  "Unknown" for out-of-range values. */
TK_PUBLIC const char *tk_copy_kind_name(unsigned kind);

/* Memory kinds (memcpy source/destination, memset, allocations). */
enum tk_mem_kind {
	TK_MEM_UNKNOWN = 0,
	TK_MEM_PAGEABLE = 1,
	TK_MEM_PINNED = 2,
	TK_MEM_DEVICE = 3,
	TK_MEM_ARRAY = 4,
	TK_MEM_MANAGED = 5,
	TK_MEM_DEVICE_STATIC = 6,
	TK_MEM_MANAGED_STATIC = 7,
};
TK_PUBLIC const char *tk_mem_kind_name(unsigned kind);

/* Memory operations (TK_MEMORY). */
enum tk_mem_op {
	TK_MEM_ALLOC = 1,
	TK_MEM_FREE = 2,
};

/* Synchronisation types (TK_SYNC). */
enum tk_sync_type {
	TK_SYNC_UNKNOWN = 0,
	TK_SYNC_EVENT = 1,        /* cudaEventSynchronize */
	TK_SYNC_STREAM_WAIT = 2,  /* cudaStreamWaitEvent */
	TK_SYNC_STREAM = 3,       /* cudaStreamSynchronize */
	TK_SYNC_CONTEXT = 4,      /* cudaDeviceSynchronize */
};
TK_PUBLIC const char *tk_sync_type_name(unsigned type);

/* How a process ended (TK_PROCESS, TK_RUN). */
enum tk_exit {
	TK_EXIT_UNKNOWN = 0,  /* not seen to end (e.g. recorder killed) */
	TK_EXIT_NORMAL = 1,   /* exit_code holds the status */
	TK_EXIT_SIGNAL = 2,   /* signal holds the signal number */
};

/* Memcpy and memset flags. */
#define TK_FLAG_ASYNC 0x1u

/* Flow phases (TK_FLOW). */
enum tk_flow_phase {
	TK_FLOW_START = 0,
	TK_FLOW_STEP = 1,
	TK_FLOW_END = 2,
};

/* ---- Definitions ------------------------------------------------------- */

/* Every event belongs to a track: a thread, a GPU stream, a process or a
 * counter.  Track ids are small integers shared by the four types. */
enum tk_track_type {
	TK_TRACK_UNKNOWN = 0, /* defined by a newer writer; not understood */
	TK_TRACK_PROCESS = 1,
	TK_TRACK_THREAD = 2,
	TK_TRACK_STREAM = 3,
	TK_TRACK_COUNTER = 4,
};

struct tk_process {
	const char *host;        /* host name */
	int64_t pid;
	int64_t ppid;
	int64_t start;           /* ns; 0 if unknown */
	uint32_t argc;
	const char *const *argv; /* argc strings */
	const char *label;       /* user label, e.g. "rank0"; "" if none */
};

struct tk_thread {
	uint32_t process;        /* track id of its process (0 = unknown) */
	int64_t tid;             /* kernel thread id */
	const char *name;        /* "" if unnamed */
};

struct tk_stream {
	uint32_t process;        /* track id of the owning process */
	uint32_t device;         /* device id (tk_device), 0 = unknown */
	uint64_t context;        /* CUDA context id */
	uint64_t stream;         /* CUDA stream id */
	const char *name;        /* "" if unnamed */
};

struct tk_counter {
	const char *name;        /* "rss", "cpu", "device memory", ... */
	const char *unit;        /* "bytes", "%", ... */
	uint32_t process;        /* track id of the process it measures, or 0 */
	uint32_t device;         /* device id it measures, or 0 */
};

struct tk_track {
	uint32_t id;
	enum tk_track_type type;
	union {
		struct tk_process process;
		struct tk_thread thread;
		struct tk_stream stream;
		struct tk_counter counter;
	} u;
};

struct tk_device {
	uint32_t id;             /* device id within this trace scope, >= 1 */
	const char *host;
	uint32_t index;          /* CUDA device ordinal */
	const char *name;        /* "NVIDIA H100 80GB HBM3" */
	uint8_t uuid[16];        /* all zero if unknown */
	uint32_t sm_count;
	uint64_t memory;         /* bytes of global memory */
	uint32_t cc_major, cc_minor;
};

struct tk_meta {
	const char *key;
	const char *value;
};

/* Name of NVTX category number `category` in `domain`. */
struct tk_category {
	const char *domain;
	uint32_t category;
	const char *name;
};

/* ---- Events ------------------------------------------------------------ */

struct tk_range_attrs {      /* TK_RANGE, TK_ASYNC_RANGE, TK_MARK */
	uint32_t domain_id;
	const char *domain;      /* NVTX domain, or the importer's category
	                            ("cpu_op"); "" for the default domain */
	uint32_t category;       /* NVTX category number */
	uint32_t color;          /* ARGB, 0 = none */
	uint32_t payload_type;   /* enum tk_payload */
	union tk_value payload;
	uint64_t id;             /* async range id */
	uint32_t end_track;      /* async: track it ended on, 0 = same */
};

struct tk_api_attrs {        /* TK_API */
	uint32_t domain;         /* enum tk_api_domain */
	uint32_t cbid;           /* CUPTI callback id, 0 if unknown */
	uint64_t correlation;
	int32_t result;          /* return code */
};

struct tk_kernel_attrs {     /* TK_KERNEL */
	uint64_t correlation;
	uint32_t grid[3];
	uint32_t block[3];
	uint32_t cluster[3];
	uint32_t static_smem;    /* bytes */
	uint32_t dynamic_smem;   /* bytes */
	uint32_t registers;      /* per thread */
	uint32_t graph_id;
	uint64_t graph_node;
	uint32_t mangled_id;
	const char *mangled;     /* mangled name, "" if unknown or same */
};

struct tk_memcpy_attrs {     /* TK_MEMCPY */
	uint64_t correlation;
	uint64_t bytes;
	uint32_t copy_kind;      /* enum tk_copy_kind */
	uint32_t src_kind;       /* enum tk_mem_kind */
	uint32_t dst_kind;
	uint32_t src_device;     /* device indices, for peer copies */
	uint32_t dst_device;
	uint32_t flags;          /* TK_FLAG_ASYNC */
};

struct tk_memset_attrs {     /* TK_MEMSET */
	uint64_t correlation;
	uint64_t bytes;
	uint32_t value;
	uint32_t mem_kind;
	uint32_t flags;
};

struct tk_sync_attrs {       /* TK_SYNC */
	uint64_t correlation;
	uint32_t type;           /* enum tk_sync_type */
};

struct tk_overhead_attrs {   /* TK_OVERHEAD */
	uint32_t type;           /* CUPTI overhead kind */
};

struct tk_counter_attrs {    /* TK_COUNTER */
	double value;
};

struct tk_memory_attrs {     /* TK_MEMORY */
	uint64_t correlation;
	uint32_t op;             /* enum tk_mem_op */
	uint32_t mem_kind;
	uint64_t address;
	uint64_t bytes;
};

struct tk_process_attrs {    /* TK_PROCESS; also in TK_RUN */
	uint32_t exit;           /* enum tk_exit */
	int32_t exit_code;
	uint32_t signal;
	int64_t utime;           /* ns of user CPU */
	int64_t stime;           /* ns of system CPU */
	uint64_t max_rss;        /* bytes */
	uint64_t minflt, majflt; /* page faults */
	uint64_t nvcsw, nivcsw;  /* context switches */
};

struct tk_run_attrs {        /* TK_RUN */
	uint32_t index;          /* 1, 2, ... */
	uint32_t exit;           /* enum tk_exit */
	int32_t exit_code;
	uint32_t signal;
};

struct tk_dropped_attrs {    /* TK_DROPPED */
	uint64_t count;
	uint32_t reason_id;
	const char *reason;
};

struct tk_flow_attrs {       /* TK_FLOW */
	uint64_t id;
	uint32_t phase;          /* enum tk_flow_phase */
	uint32_t category_id;
	const char *category;
};

struct tk_event {
	uint32_t kind;           /* enum tk_kind */
	uint32_t track;          /* track id */
	int64_t ts;              /* begin, ns */
	int64_t dur;             /* ns, >= 0; 0 for instants */
	uint32_t name_id;        /* string id; writer: 0 = intern `name` */
	const char *name;        /* "" if none */
	const struct tk_track *trk; /* reader: resolved track, never NULL */
	const char *args;        /* extra attributes as a JSON object, or NULL */
	uint32_t args_len;
	/* the member of `kind`; from the reader, the bytes past it are zero */
	union {
		struct tk_range_attrs range;
		struct tk_api_attrs api;
		struct tk_kernel_attrs kernel;
		struct tk_memcpy_attrs memcpy;
		struct tk_memset_attrs memset;
		struct tk_sync_attrs sync;
		struct tk_overhead_attrs overhead;
		struct tk_counter_attrs counter;
		struct tk_memory_attrs memory;
		struct tk_process_attrs process;
		struct tk_run_attrs run;
		struct tk_dropped_attrs dropped;
		struct tk_flow_attrs flow;
	} u;
};

/* ---- Schema: the fields of each kind ----------------------------------- */

/* The attributes of each event kind, described for programs that handle
 * every kind alike (a dumper, a converter, a binding): one struct
 * tk_field per member of the kind's struct in tk_event.u, in that
 * order.  String ids (domain_id, ...) are not listed: the string is. */
enum tk_field_type {
	TK_FIELD_U32 = 1,
	TK_FIELD_I32 = 2,
	TK_FIELD_U64 = 3,
	TK_FIELD_I64 = 4,
	TK_FIELD_F64 = 5,
	TK_FIELD_STRING = 6,  /* const char *, never NULL from a reader */
	TK_FIELD_PAYLOAD = 7, /* union tk_value, typed by the kind's
	                         payload_type (enum tk_payload) */
};

#define TK_FIELD_OPTIONAL 0x1u    /* 0 (or "") means none or unknown */
#define TK_FIELD_CORRELATION 0x2u /* the correlation id: equal in an API
                                     call and in the GPU work it started */

/* Made only by the library: members may be added at the end, so step
 * through the fields with tk_kind_field(), never by pointer arithmetic. */
struct tk_field {
	const char *name;      /* the member's name: "bytes", "copy_kind" */
	unsigned type;         /* enum tk_field_type */
	unsigned count;        /* values: 3 for grid, block and cluster, else 1 */
	size_t offset;         /* of the (first) value in struct tk_event */
	unsigned flags;        /* TK_FIELD_* */
	/* names of an enumeration's values (tk_copy_kind_name, ...), or
	 * NULL when the field is a number */
	const char *(*value_name)(unsigned value);
};

/* Field `i` (0, 1, ...) of `kind`: borrowed, static, valid forever.
 * NULL past the last field and for a kind this library does not know. */
TK_PUBLIC const struct tk_field *tk_kind_field(unsigned kind, size_t i);
/* The field of `kind` called `name`, or NULL. */
TK_PUBLIC const struct tk_field *tk_kind_field_named(unsigned kind,
                                                     const char *name);
/* Value `i` (< f->count) of field `f` of `e`, a field of e->kind: .u
 * for TK_FIELD_U32 and U64, .i for I32 and I64, .d for F64, the union
 * as it is for TK_FIELD_PAYLOAD; zero for a string or a bad `i`. */
TK_PUBLIC union tk_value tk_field_value(const struct tk_event *e,
                                        const struct tk_field *f, unsigned i);
/* The text of string field `f` of `e` ("" for a field of another type
 * or a NULL pointer); borrowed from the event. */
TK_PUBLIC const char *tk_field_string(const struct tk_event *e,
                                      const struct tk_field *f);
/* The correlation id of `e` (the field flagged TK_FIELD_CORRELATION),
 * which links a CUDA API call (TK_API) to the GPU work it started
 * (TK_KERNEL, TK_MEMCPY, TK_MEMSET) and to the synchronisations and
 * allocations it made (TK_SYNC, TK_MEMORY); 0 for none, and for kinds
 * that have none. */
TK_PUBLIC uint64_t tk_event_correlation(const struct tk_event *e);

/* ---- Reading ----------------------------------------------------------- */

struct tk_reader;

/* What tk_reader_next() delivers, in stream order.  Definitions come
 * before the events that use them.  TK_REC_SCOPE starts a new trace
 * (a new header, e.g. after `cat a.tkt b.tkt`): all earlier definitions
 * and ids are void from then on. */
enum tk_record_type {
	TK_REC_EVENT = 1,
	TK_REC_SCOPE = 2,
	TK_REC_TRACK = 3,     /* a process, thread, stream or counter */
	TK_REC_DEVICE = 4,
	TK_REC_META = 5,
	TK_REC_CATEGORY = 6,
};

struct tk_record {
	enum tk_record_type type;
	union {
		const struct tk_event *event;
		const struct tk_track *track;
		const struct tk_device *device;
		const struct tk_meta *meta;
		const struct tk_category *category;
	} u;
};

/* Facts about the chunk the last record came from. */
struct tk_chunk_info {
	uint64_t offset;       /* byte offset of the chunk header */
	uint32_t events;
	uint32_t flags;        /* TK_CHUNK_* */
	int64_t t_min;         /* earliest begin in the chunk */
	int64_t t_max;         /* latest end in the chunk */
	int64_t watermark;     /* no later chunk has an event beginning
	                          before this; INT64_MIN = no promise */
};
#define TK_CHUNK_DEFLATE 0x1u  /* payload is a zlib stream */
#define TK_CHUNK_SORTED 0x2u   /* events within are ordered by begin */
#define TK_CHUNK_END 0x4u      /* last chunk of a trace: written by
                                  tk_writer_close(); a stream without it
                                  was cut short */
#define TK_CHUNK_GROUPED 0x8u  /* events of several processes, stored
                                  grouped by process (the reader gives
                                  them back in order) */
#define TK_CHUNK_ARGS_TEMPLATES 0x10u /* args stored as templates and
                                  numbers (the reader gives them back
                                  as they were) */

/* New reader; NULL only when out of memory. */
TK_PUBLIC struct tk_reader *tk_reader_new(void);
TK_PUBLIC void tk_reader_free(struct tk_reader *r);

/* How a reader works; set before opening (an open input keeps going
 * as it was).  Without a call: the defaults, TK_READER_OPTIONS_INIT. */
struct tk_reader_options {
	int threads;          /* threads that check, inflate and decode
	                         chunks ahead of the caller, while it goes
	                         through the chunk before (at most threads + 1
	                         chunks in memory); 0: the TK_THREADS environment
	                         variable, else the machine's cores (at most
	                         8) for an input of 1 MiB or more (by its
	                         size if known, else once 1 MiB was read)
	                         and none for a smaller one; 1: none.
	                         Records, errors and their byte offsets are
	                         the same either way.
	                         The threads start at a trace's second
	                         chunk; feed mode reads on the caller's
	                         thread.  After fork() the child goes on
	                         reading on its own thread. */
	int no_args;          /* 1: tk_event.args is NULL and args_len 0:
	                         the args are not decoded at all (faster for
	                         callers that never read them; damage in
	                         their columns is then not seen) */
};
#define TK_READER_OPTIONS_INIT { 0, 0 }

/* 0, or TK_EINVAL for a value out of range.  `o` NULL: the defaults. */
TK_PUBLIC int tk_reader_set_options(struct tk_reader *r,
                                    const struct tk_reader_options *o);

/* Read from a path ("-" = standard input), a file descriptor (not
 * closed by the reader) or a memory buffer (borrowed).  `name` is used
 * in messages.  Opening reads and checks the first header. */
TK_PUBLIC int tk_reader_open_path(struct tk_reader *r, const char *path);
TK_PUBLIC int tk_reader_open_fd(struct tk_reader *r, int fd, const char *name);
TK_PUBLIC int tk_reader_open_mem(struct tk_reader *r, const void *buf,
                              size_t len, const char *name);

/* Read `length` bytes of `fd` from byte `offset` with pread(2): the
 * descriptor's file position is neither used nor moved, so several
 * readers can share one descriptor (one per trace of a file holding
 * concatenated traces, found with tk_scan_fd()).  Offsets in messages,
 * tk_reader_offset() and tk_reader_chunk() are those of the file.  The
 * descriptor is not closed by the reader. */
TK_PUBLIC int tk_reader_open_range(struct tk_reader *r, int fd,
                                   uint64_t offset, uint64_t length,
                                   const char *name);

/* Feed mode, for a stream that is still being written (a recorder
 * tailing a growing file): bytes are pushed with tk_reader_feed(), and
 * tk_reader_next() returns TK_AGAIN when it needs more of them.  Only
 * complete chunks are decoded.  tk_reader_feed_end() says no more bytes
 * will come; from then on a missing end is reported as truncation.
 * Feeding invalidates pointers returned before. */
TK_PUBLIC int tk_reader_open_feed(struct tk_reader *r, const char *name);
TK_PUBLIC int tk_reader_feed(struct tk_reader *r, const void *buf, size_t len);
TK_PUBLIC void tk_reader_feed_end(struct tk_reader *r);

/* Next record; TK_OK, TK_EOF at the clean end of the input, or an error.
 * After an error every later call returns the same error. */
TK_PUBLIC int tk_reader_next(struct tk_reader *r, struct tk_record *rec);
/* Next event, skipping definitions. */
TK_PUBLIC int tk_reader_next_event(struct tk_reader *r,
                                const struct tk_event **ev);

/* The common fields of the events of one chunk, as arrays of n.  For
 * programs that need only these (totals by name, kind or track): the
 * kinds' own attributes are not decoded at all, which makes this the
 * fastest way through a trace.  Ids resolve with tk_reader_string()
 * and tk_reader_track() until the next call; `scope` is
 * tk_reader_scope() for them, so a change says that a new trace began.
 * `kind` may hold kinds newer than this library: skip those. */
struct tk_columns {
	size_t n;
	const uint8_t *kind;      /* enum tk_kind */
	const uint32_t *track;
	const int64_t *ts;
	const int64_t *dur;
	const uint32_t *name_id;
	unsigned scope;
};

/* The events of the current chunk not yet delivered, or else of the
 * next chunk, as columns, skipping definition records.  TK_OK, TK_EOF
 * at the clean end, or an error as tk_reader_next().  The arrays stay
 * valid until the next call on the reader.  Calls may be mixed with
 * tk_reader_next() and tk_reader_next_event(). */
TK_PUBLIC int tk_reader_next_columns(struct tk_reader *r, struct tk_columns *c);

/* The name given at open ("(stdin)" for "-"). */
TK_PUBLIC const char *tk_reader_name(const struct tk_reader *r);
/* One line describing the last error: "truncated chunk at byte 1234". */
TK_PUBLIC const char *tk_reader_error(const struct tk_reader *r);
/* errno of the last TK_EIO. */
TK_PUBLIC int tk_reader_errno(const struct tk_reader *r);
/* Bytes consumed so far. */
TK_PUBLIC uint64_t tk_reader_offset(const struct tk_reader *r);
/* The chunk the last record came from. */
TK_PUBLIC const struct tk_chunk_info *tk_reader_chunk(const struct tk_reader *r);
/* Format version of the current scope's header. */
TK_PUBLIC void tk_reader_version(const struct tk_reader *r, unsigned *major,
                              unsigned *minor);
/* Number of the current scope: 1 for the first header, 2 after a
 * concatenated second trace, ... */
TK_PUBLIC unsigned tk_reader_scope(const struct tk_reader *r);
/* Events of kinds this reader does not know, skipped so far. */
TK_PUBLIC uint64_t tk_reader_skipped(const struct tk_reader *r);

/* Lookups in the current scope (NULL / "" when not defined). */
TK_PUBLIC const char *tk_reader_string(const struct tk_reader *r, uint32_t id);
TK_PUBLIC const struct tk_track *tk_reader_track(const struct tk_reader *r,
                                              uint32_t id);
TK_PUBLIC const struct tk_device *tk_reader_device(const struct tk_reader *r,
                                                uint32_t id);
/* Metadata of the current scope in definition order; NULL past the end.
 * A key may occur more than once (merged traces). */
TK_PUBLIC const struct tk_meta *tk_reader_meta(const struct tk_reader *r,
                                            size_t i);
/* Last value of `key` in the current scope, or NULL. */
TK_PUBLIC const char *tk_reader_meta_get(const struct tk_reader *r,
                                      const char *key);

/* ---- Scanning ---------------------------------------------------------- */

/* The layout of a trace file read from its headers alone: payloads are
 * skipped, not read or checked, so this is cheap even for huge files.
 * It finds where each trace of a concatenation (`cat a.tkt b.tkt`)
 * begins, and each chunk's event count, time range and watermark.  The
 * scan stops where the framing cannot be followed (where a reader would
 * fail on it); a reader still reports damage when it gets there. */
struct tk_scan_chunk {
	uint64_t offset;       /* byte offset of the chunk header */
	uint32_t flags;        /* TK_CHUNK_* */
	uint32_t events;
	int64_t t_min;         /* earliest begin (meaningful if events > 0) */
	int64_t t_max;         /* latest end */
	int64_t watermark;
};

struct tk_scan_trace {
	uint64_t offset;       /* byte offset of its file header */
	uint64_t length;       /* bytes up to the next trace, or to the end
	                          of the file for the last one */
	size_t first;          /* its chunks: chunks[first .. first+nchunks) */
	size_t nchunks;
};

struct tk_scan {
	struct tk_scan_trace *traces;
	size_t ntraces;        /* 0: not a trace (the reader says why) */
	struct tk_scan_chunk *chunks;
	size_t nchunks;
	uint64_t size;         /* bytes in the file */
	uint64_t end;          /* where the scan stopped: == size when every
	                          header was followed to the end */
};

/* Scan a regular file with pread(2) (the file position is not moved).
 * TK_OK with *out to free with tk_scan_free(); TK_EINVAL if `fd` is not
 * a regular file, TK_EIO (errno set) or TK_ENOMEM. */
TK_PUBLIC int tk_scan_fd(int fd, struct tk_scan **out);
TK_PUBLIC void tk_scan_free(struct tk_scan *s);

/* ---- Writing ----------------------------------------------------------- */

struct tk_writer;

struct tk_writer_options {
	int level;            /* deflate level 0-12; 0 = store; default 6 */
	uint32_t chunk_bytes; /* target uncompressed chunk size; default 512 KiB */
	int sorted;           /* 1: caller writes events in begin order; the
	                         writer checks it and promises it to readers
	                         in each chunk's watermark */
	int raw_ids;          /* 1: ids are used as given and no definitions
	                         are written (for temporary spill files) */
	int threads;          /* N >= 1: chunks are compressed and written by
	                         N threads of the writer's own while the
	                         caller fills the next one (N chunks being
	                         compressed at once, written in order, the
	                         same bytes as with one; an output error is
	                         then told by a later call; not across
	                         fork()); 0: by the caller */
};
#define TK_WRITER_OPTIONS_INIT { 6, 512u * 1024u, 0, 0, 0 }

TK_PUBLIC struct tk_writer *tk_writer_new(void);
TK_PUBLIC void tk_writer_free(struct tk_writer *w);

/* Write to a path ("-" = standard output), or to a file descriptor that
 * the writer does not close.  Opening writes the header.  `opts` may be
 * NULL for defaults. */
TK_PUBLIC int tk_writer_open_path(struct tk_writer *w, const char *path,
                               const struct tk_writer_options *opts);
TK_PUBLIC int tk_writer_open_fd(struct tk_writer *w, int fd, const char *name,
                             const struct tk_writer_options *opts);

/* Intern a string (bytes, may contain anything but are usually UTF-8);
 * returns its id (>= 1), 0 on failure.  Equal strings get equal ids. */
TK_PUBLIC uint32_t tk_writer_string(struct tk_writer *w, const char *s,
                                 size_t len);
TK_PUBLIC uint32_t tk_writer_cstring(struct tk_writer *w, const char *s);

/* Define a track; returns its id (>= 1), 0 on failure.  Passing the id
 * of an existing track of the same type as `id` redefines it (a thread
 * renamed, say); otherwise pass 0. */
TK_PUBLIC uint32_t tk_writer_process(struct tk_writer *w, uint32_t id,
                                  const struct tk_process *p);
TK_PUBLIC uint32_t tk_writer_thread(struct tk_writer *w, uint32_t id,
                                 const struct tk_thread *t);
TK_PUBLIC uint32_t tk_writer_stream(struct tk_writer *w, uint32_t id,
                                 const struct tk_stream *s);
TK_PUBLIC uint32_t tk_writer_counter(struct tk_writer *w, uint32_t id,
                                  const struct tk_counter *c);
/* Define a device; returns its id (>= 1), 0 on failure. */
TK_PUBLIC uint32_t tk_writer_device(struct tk_writer *w, uint32_t id,
                                 const struct tk_device *d);
TK_PUBLIC int tk_writer_meta(struct tk_writer *w, const char *key,
                          const char *value);
TK_PUBLIC int tk_writer_category(struct tk_writer *w, const char *domain,
                              uint32_t category, const char *name);

/* Append an event.  String attributes are given by id, or by pointer
 * with id 0 (then interned).  `trk` is ignored. */
TK_PUBLIC int tk_writer_event(struct tk_writer *w, const struct tk_event *ev);

/* Promise that no later event begins before `t` (written with the next
 * chunk).  Sorted writers do this by themselves. */
TK_PUBLIC void tk_writer_watermark(struct tk_writer *w, int64_t t);

/* End the current chunk now and write it (even if it only holds
 * definitions).  Data written before a flush survives a crash.  When
 * there is nothing to write but the watermark moved since the last
 * chunk, an empty chunk carries it: a heartbeat that lets a reader of a
 * live stream (tk_merge_step) go on while the writer is idle. */
TK_PUBLIC int tk_writer_flush(struct tk_writer *w);

/* Flush and finish.  The writer may be freed or reopened afterwards. */
TK_PUBLIC int tk_writer_close(struct tk_writer *w);

TK_PUBLIC const char *tk_writer_error(const struct tk_writer *w);
TK_PUBLIC int tk_writer_errno(const struct tk_writer *w);
/* Bytes written so far (header and complete chunks). */
TK_PUBLIC uint64_t tk_writer_offset(const struct tk_writer *w);
/* Events accepted so far. */
TK_PUBLIC uint64_t tk_writer_events(const struct tk_writer *w);

/* ---- Merging -------------------------------------------------------------- */

/* Merge traces into one, ordered by begin time.  Definitions are
 * remapped into the output's ids, and merged when their identity says
 * they are the same thing: a process by host, pid, start time and label;
 * a thread by process and tid; a stream by process, device, context and
 * stream id; a counter by name, unit, process and device; a device by
 * host and UUID (index when it has none); an NVTX category by domain,
 * number and name.  A definition whose identity is incomplete (a process
 * with no start time, a device with neither host nor UUID, a thread or
 * stream of no process, a counter of neither process nor device) is
 * never merged with one from another input: two ranks' "pid 1" of
 * unknown start stay apart.
 *
 * Inputs need not be sorted: chunk watermarks (or the chunks scanned
 * ahead, tk_merge_set_chunks()) tell how far each input can still go
 * back, events wait in memory until no input can precede them, and when
 * that memory fills they are spilled, sorted, to temporary files.
 * Memory is bounded by the limit plus the definitions plus a small
 * read-ahead buffer per input.
 *
 * The output writer is the caller's; it should not be opened `sorted`
 * (an input that breaks its own watermark promise is still written,
 * late; the merge counts such events and names the input through the
 * warn callback when it finishes).  The merge stamps its own watermarks,
 * so that its output merges again as a stream. */

struct tk_merge;

struct tk_merge_options {
	size_t memory_limit;  /* bytes of waiting events; 0 = 256 MiB */
	const char *tmpdir;   /* for spill files; NULL = $TMPDIR or /tmp */
	int keep_going;       /* a bad input is reported, the events read from
	                         it so far are kept, and the merge goes on
	                         (memory running out is no bad input: it
	                         fails the merge all the same) */
	/* Called for each problem with an input (may be NULL). */
	void (*warn)(void *arg, const char *input, const char *message);
	void *warn_arg;
};

TK_PUBLIC struct tk_merge *tk_merge_new(struct tk_writer *out,
                                        const struct tk_merge_options *o);
/* Frees the merge and the readers it was given. */
TK_PUBLIC void tk_merge_free(struct tk_merge *m);

/* Add an input; the merge owns `r` from now on.  `label` (may be NULL or
 * "") is stored with every process of the input; `offset` ns is added
 * to all its times.  Returns the input's index (>= 0) or an error. */
TK_PUBLIC int tk_merge_add(struct tk_merge *m, struct tk_reader *r,
                           const char *label, int64_t offset);

/* The chunks of input `input` as scanned ahead (tk_scan_fd(); pass the
 * chunks of the trace the input's reader reads).  The merge then knows
 * how far the input can still go back from the time ranges of the
 * chunks still to come, instead of trusting their watermarks, which a
 * writer may have left weak or unset: such an input then streams
 * instead of waiting in memory.  The list is copied. */
TK_PUBLIC int tk_merge_set_chunks(struct tk_merge *m, int input,
                                  const struct tk_scan_chunk *chunks,
                                  size_t n);

/* Read every input to its end and write everything.  Returns TK_OK, or
 * the error of the first bad input (without keep_going). */
TK_PUBLIC int tk_merge_run(struct tk_merge *m);

/* For live inputs (readers in feed mode): take what the inputs have now
 * and write every event no input can precede any more.  Returns TK_OK
 * or an error; call again after feeding more bytes. */
TK_PUBLIC int tk_merge_step(struct tk_merge *m);

/* Progress of a long merge, for people (a progress line): after each
 * batch of events the merge reads from an input (up to a few thousand),
 * `fn` is called on the caller's thread with the bytes read from the
 * inputs so far (the offsets of the chunks their readers are in, added
 * up: it grows towards the inputs' size without reaching it), the
 * events read from them and the events written so far.  Temporary
 * spill files count in none of these.  NULL (the default) calls
 * nothing. */
typedef void (*tk_merge_progress_fn)(void *arg, uint64_t bytes_read,
                                     uint64_t events_read,
                                     uint64_t events_written);
TK_PUBLIC void tk_merge_set_progress(struct tk_merge *m,
                                     tk_merge_progress_fn fn, void *arg);

/* For a caller that will still add events beginning at `t` or later
 * through an input that has promised more (a recorder writing a process
 * when it ends, with its start as the begin): events are still written
 * as soon as the inputs allow, but the output's watermarks promise no
 * more than `t` until called again.  INT64_MAX (the default) lifts it. */
TK_PUBLIC void tk_merge_hold(struct tk_merge *m, int64_t t);

/* Counts, for reports. */
struct tk_merge_stats {
	uint64_t events;      /* events written */
	uint64_t late;        /* written after a later one (broken promises) */
	uint64_t spilled;     /* events that went through temporary files */
	uint32_t spill_files;
	uint32_t spill_open_max; /* most temporary files open at once */
	uint32_t bad_inputs;  /* inputs dropped or cut short by an error */
};
TK_PUBLIC void tk_merge_stats(const struct tk_merge *m,
                              struct tk_merge_stats *s);
TK_PUBLIC const char *tk_merge_error(const struct tk_merge *m);
/* errno of the failure: ENOMEM, EINVAL for a bad call, the errno of the
 * failed read or write (of an input, a temporary file, or the output:
 * then tk_writer_errno() of the output says the same); 0 if none. */
TK_PUBLIC int tk_merge_errno(const struct tk_merge *m);

#ifdef __cplusplus
}
#endif

#endif /* TRACEKIT_H */
