/* SPDX-License-Identifier: MIT */
/*
 * The contract between trace-record and libtracekit-inject.so, the
 * library it loads into the processes it records.  Both sides include
 * this header; nothing here is installed or public.
 *
 * trace-record creates a private spool directory and passes it, with
 * the recording options, in TRACEKIT_* environment variables.  Every
 * process image that loads the library writes there:
 *
 *   <pid>-<ns>.tkt   its spool: a .tkt stream, flushed every interval.
 *                    Created under a dot name and renamed once its
 *                    header and first chunk are written, so a spool
 *                    that is visible can be read.
 *   <pid>-<ns>.st    its status page (struct tki_status), mapped
 *                    shared: what the process produced, so that the
 *                    recorder can count what a killed process lost.
 *
 *   <pid>-<ns>.buf   its durable buffers (struct tki_buf_head, below),
 *                    mapped shared: the records its threads wrote and
 *                    the names they refer to, so that what a process
 *                    wrote before it died (_exit, SIGKILL, a crash) can
 *                    be converted by trace-record.
 *
 * (<ns> is the time the image started recording: a process that
 * execs gets a new spool under the same pid.)  trace-record writes
 *
 *   p<pid>           the start time it gives the process, "<ns>\n",
 *                    written before the process runs when it can; the
 *                    library uses it for its process definition, so
 *                    that both sides name the same process.  Without
 *                    it both derive the start from /proc and the boot
 *                    time in TRACEKIT_BOOT_NS (below).
 */
#ifndef TK_INJECT_PROTOCOL_H
#define TK_INJECT_PROTOCOL_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Environment of a recorded command. */
#define TKI_ENV_SPOOL "TRACEKIT_SPOOL"          /* spool directory */
#define TKI_ENV_RECORDER "TRACEKIT_RECORDER"    /* pid of trace-record */
#define TKI_ENV_FLUSH "TRACEKIT_FLUSH_NS"       /* flush interval, ns */
#define TKI_ENV_WINDOW "TRACEKIT_WINDOW"        /* "<begin ns>:<end ns>" */
#define TKI_ENV_LABEL "TRACEKIT_LABEL"          /* process label */
#define TKI_ENV_CAPTURE "TRACEKIT_CAPTURE"      /* range name (exact) */
#define TKI_ENV_CAPTURE_DOMAIN "TRACEKIT_CAPTURE_DOMAIN" /* "*" = any */
#define TKI_ENV_SCHEDULE "TRACEKIT_SCHEDULE"    /* "skip,warmup,active,cycles" */
#define TKI_ENV_BUFFER "TRACEKIT_BUFFER_BYTES"  /* per-process buffer limit */
#define TKI_ENV_BOOT "TRACEKIT_BOOT_NS"        /* wall-clock time of boot */
#define TKI_ENV_CUDA "TRACEKIT_CUDA"            /* activity kinds, tki_cuda_parse() */
#define TKI_ENV_CUPTI "TRACEKIT_CUPTI"          /* libcupti to load (user's) */
#define TKI_ENV_CUDA_BUFFER "TRACEKIT_CUDA_BUFFER_BYTES" /* per buffer (user's) */

#define TKI_STATUS_MAGIC 0x31535454u            /* "TTS1" */
#define TKI_STATUS_SLOTS 1024

/*
 * Counts a process publishes while it records.  Each thread owns one
 * slot and is its only writer (slot 0 is shared, with atomic adds, by
 * threads beyond the last slot); `produced` counts the NVTX records
 * that will each become one event (a push, a mark, a start).  `direct`
 * counts events the library writes itself.  When the process is gone,
 * the sum of both minus the events in its spool is what it lost.
 */
struct tki_status_slot {
	uint64_t produced;
	uint64_t pad[7];         /* one cache line per thread */
};

/* CUDA in a process (tki_status.cuda): set once InitializeInjection ran. */
#define TKI_CUDA_STATE_NONE 0        /* the process did not initialise CUDA */
#define TKI_CUDA_STATE_ON 1          /* activity recorded through CUPTI */
#define TKI_CUDA_STATE_FAILED 2      /* not recorded: cuda_note says why */

struct tki_status {
	uint32_t magic;
	uint32_t slots;          /* TKI_STATUS_SLOTS */
	int64_t pid;
	int64_t open_since;      /* earliest begin of a range still open,
	                            INT64_MAX = none; set before each chunk */
	uint64_t direct;
	uint64_t committed;      /* the spool's bytes the durable buffer's
	                            committed snapshot agrees with (stored,
	                            release, after the snapshot); UINT64_MAX
	                            once the spool is closed.  trace-record
	                            reads no further while the process runs:
	                            a chunk written but not yet committed is
	                            converted again by recovery if the
	                            process dies before the commit */
	int32_t spool_errno;     /* why its spool could not be written (a
	                            full disk), 0 = it could; records then
	                            stay in the durable buffers until full */
	uint32_t pad1;
	uint64_t nomem;          /* of the counts above, the records lost
	                            for want of memory (a thread's buffers
	                            or a domain's levels could not be
	                            made): never written */
	uint64_t pad[1];
	uint32_t cuda;           /* TKI_CUDA_STATE_*, written after cuda_note */
	uint32_t pad2;
	char cuda_note[248];     /* why CUDA is not recorded, NUL-terminated */
	struct tki_status_slot slot[TKI_STATUS_SLOTS];
};

/*
 * The durable buffers: <pid>-<ns>.buf.  Created with the status page,
 * before the spool is visible; mapped MAP_SHARED by the process, read
 * by trace-record once the process is gone (ended, killed or exec'd)
 * without closing its spool.  All offsets are from the file's start,
 * all integers native-endian (the file never leaves the machine).
 *
 *   [0, 4096)          struct tki_buf_head
 *   thread_off         TKI_BUF_THREADS struct tki_buf_thread
 *   names_off          the names log: struct tki_buf_name entries, each
 *                      followed by its bytes (8-aligned), appended under
 *                      the registry's lock; names_len is published
 *                      (release) after each entry is complete.
 *   snap_off[0], [1]   two snapshots of the flusher's state (below)
 *   blocks_off         nunits blocks of TKI_BUF_UNIT bytes.  A thread's
 *                      records go into a chain of blocks (struct
 *                      tki_block, lib/inject/tbuf.h: `next` is a unit
 *                      index + 1, `used` the bytes published with a
 *                      release store after each record); a block may
 *                      span several units (a record over 64 KiB).
 *
 * The flusher converts records into events in the spool.  After each
 * chunk it flushes (a commit), it writes the other snapshot -- where
 * each thread's conversion stands (block and offset), the ranges still
 * open (push/pop and start/end, names inline) and the ends seen before
 * their starts, and the spool's length with that chunk (snap_spool) --
 * then publishes snap_cur with a release store: one store commits
 * everything, so a process killed at any instant leaves a snapshot that
 * agrees with the first snap_spool bytes of its spool.  A chunk written
 * after them is left unread: recovery converts its records again.  Blocks before a thread's
 * committed position are freed only after the commit.  Recovery starts
 * from the committed snapshot and converts every thread's records from
 * its committed position to its published end, exactly as the flusher
 * would have; a thread slot whose serial no snapshot entry names
 * (attached after the commit) is read from its first block.
 */
#define TKI_BUF_MAGIC 0x31425454u      /* "TTB1" */

/*
 * CUDA activity a process asked CUPTI for and what CUPTI gave back, by
 * kind (tki_buf_head.cuda_issued, cuda_delivered): CUPTI keeps records
 * in buffers that reach the library only when complete or flushed, and
 * a process killed by SIGKILL never flushes them.  `issued` is counted
 * as each API call begins, in CUPTI's API callback, while the kind is
 * collected: one RUNTIME or DRIVER record per call, one kernel, memcpy
 * or memset per launch, copy or set call (a driver call made by a
 * runtime call is not counted a second time as work); `delivered` is
 * the records of the kind in the buffers CUPTI completed, stored after
 * each is converted.  Both only grow (relaxed atomic stores and adds).
 * When the process died without its last flush, trace-record writes
 * issued - delivered of each kind as dropped (recover.c); what was
 * delivered but not yet in the spool is counted by the status page.
 */
#define TKI_CUDA_COUNT_KERNEL 0
#define TKI_CUDA_COUNT_MEMCPY 1
#define TKI_CUDA_COUNT_MEMSET 2
#define TKI_CUDA_COUNT_RUNTIME 3
#define TKI_CUDA_COUNT_DRIVER 4
#define TKI_CUDA_COUNTED 5
/* their names in `dropped` events: the --cuda words */
static const char *const tki_cuda_counted_names[TKI_CUDA_COUNTED] = {
	"kernel", "memcpy", "memset", "runtime", "driver",
};
#define TKI_BUF_UNIT (64u * 1024u)
#define TKI_BUF_THREADS 1024u
#define TKI_BUF_NAMES_BYTES (4u << 20)
#define TKI_BUF_SNAP_BYTES (2u << 20)

struct tki_buf_head {
	uint32_t magic;
	uint32_t unit;           /* TKI_BUF_UNIT */
	uint32_t nunits;
	uint32_t nthreads;       /* TKI_BUF_THREADS */
	uint64_t size;           /* of the file */
	uint64_t thread_off;
	uint64_t names_off, names_cap;
	uint64_t names_len;      /* published */
	uint64_t snap_off[2];
	uint64_t snap_cap;
	uint64_t snap_len[2];
	uint64_t snap_spool[2];  /* the spool's bytes each snapshot agrees
	                            with; [0] also before the first commit */
	uint32_t snap_cur;       /* committed snapshot, 0/1; 2 = none yet */
	uint32_t closed;         /* last flush done: nothing to recover */
	uint64_t blocks_off;
	int64_t win_end;         /* the recording window cuts ranges there */
	uint64_t snap_lost;      /* open ranges the snapshot had no room for */
	/* CUDA activity: what CUPTI was asked to record and what it has
	 * handed back (below); zero when CUPTI is not active */
	uint64_t cuda_issued[TKI_CUDA_COUNTED];
	uint64_t cuda_delivered[TKI_CUDA_COUNTED];
};

#define TKI_SLOT_FREE 0
#define TKI_SLOT_LIVE 1

struct tki_buf_thread {
	uint32_t state;          /* TKI_SLOT_*, published last (release) */
	uint32_t serial;         /* bumped each time the slot is taken */
	int64_t tid;
	uint32_t first;          /* its first block: unit index + 1 */
	uint32_t pad;
	uint64_t dropped;        /* records it could not keep (full buffers) */
	char name[64];           /* the kernel's name of the thread at attach */
	uint64_t pad2[3];
};

/* Names log entries. */
#define TKI_NAME_DOMAIN 1        /* a = domain id */
#define TKI_NAME_STRING 2        /* a = string id, b = its domain id */
#define TKI_NAME_THREAD 3        /* a = tid (nvtxNameOsThread) */
#define TKI_NAME_CATEGORY 4      /* a = domain id, b = category */

struct tki_buf_name {
	uint32_t kind;
	uint32_t len;            /* bytes that follow (then padding to 8) */
	uint64_t a, b;
};

/* Snapshot entries, each followed by `len` name bytes (padded to 8). */
#define TKI_SNAP_THREAD 1        /* slot, serial: at block/pos; dropped_seen */
#define TKI_SNAP_PUSH 2          /* an open push range: tid, domain, level */
#define TKI_SNAP_ASYNC 3         /* an open start/end range: id, tid */
#define TKI_SNAP_PENDING 4       /* an end seen first: id, tid, ts */

struct tki_snap {
	uint32_t kind;
	uint32_t len;
	uint32_t slot, serial;   /* THREAD */
	uint32_t block, pos;     /* THREAD: unit index + 1 (0 = done), offset */
	uint64_t dropped_seen;   /* THREAD */
	int64_t tid;             /* the thread (ASYNC: 0 = `track_tid` only) */
	int64_t ts;
	uint64_t id;             /* ASYNC, PENDING */
	uint32_t domain, level;
	uint32_t has_attrs, pad;
	uint32_t category, color, payload_type, pad2;
	uint64_t payload;
};

static inline uint32_t
tki_pad8(uint32_t n)
{
	return (n + 7u) & ~7u;
}

/* A block of the durable buffer file: written by one thread, read by
 * the flusher, and by trace-record after the process died. */
struct tki_block {
	atomic_uint next;                 /* unit index + 1, set when the
	                                     writer moved on; 0 = none */
	atomic_uint used;                 /* bytes published */
	atomic_uint read;                 /* bytes the flusher has read */
	uint32_t cap;
	uint32_t units;                   /* units of the file it spans */
	uint32_t pad;
	_Alignas(8) uint8_t data[];       /* records, 8-byte aligned */
};

/* ---- records of the thread buffers ------------------------------------------------------------------ */

enum tki_rec_type {
	TKI_REC_PUSH = 1,        /* a push/pop range begins: tki_rec_msg */
	TKI_REC_POP = 2,         /* it ends: tki_pop */
	TKI_REC_MARK = 3,        /* an instant: tki_rec_msg */
	TKI_REC_START = 4,       /* a start/end range begins: id, tki_rec_msg */
	TKI_REC_END = 5,         /* it ends: id */
};

#define TKI_F_ATTRS 0x1      /* struct tki_attrs follows the header (+id) */
#define TKI_F_REGISTERED 0x2 /* the message is a registered string id */
#define TKI_F_CAPTURE 0x4    /* push/start of the capture range */

struct tki_rec {
	uint8_t type;
	uint8_t flags;
	uint16_t domain;         /* domain id, 0 = default */
	uint32_t size;           /* whole record, a multiple of 8 */
	int64_t ts;
};

struct tki_attrs {
	uint32_t category;
	uint32_t color;          /* ARGB, 0 = none */
	uint32_t payload_type;   /* enum tk_payload */
	uint32_t pad;
	uint64_t payload;
};

struct tki_msg {
	uint32_t len;            /* bytes that follow */
	uint32_t string;         /* registered string id, or 0 */
	uint32_t level;          /* push: the nesting level it opens */
	uint32_t pad;
};

/* A pop: the level it closes, so that a pop or push lost to full
 * buffers cannot pair the wrong ranges. */
struct tki_pop {
	uint32_t level;
	uint32_t pad;
};

/* Sum of what the status page says was produced. */
static inline uint64_t
tki_status_produced(const volatile struct tki_status *s)
{
	uint64_t n = __atomic_load_n(&s->direct, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < TKI_STATUS_SLOTS; i++)
		n += __atomic_load_n(&s->slot[i].produced, __ATOMIC_RELAXED);
	return n;
}

/*
 * --cuda=LIST: the CUDA activity kinds to record, as bits.  trace-record
 * checks the list and passes the canonical one in TRACEKIT_CUDA; the
 * library enables the CUPTI activity kinds of each bit (cuda.c).
 */
#define TKI_CUDA_KERNEL   0x01u  /* CONCURRENT_KERNEL */
#define TKI_CUDA_MEMCPY   0x02u  /* MEMCPY, MEMCPY2 (peer to peer) */
#define TKI_CUDA_MEMSET   0x04u  /* MEMSET */
#define TKI_CUDA_MEMORY   0x08u  /* MEMORY2 */
#define TKI_CUDA_RUNTIME  0x10u  /* RUNTIME */
#define TKI_CUDA_DRIVER   0x20u  /* DRIVER */
#define TKI_CUDA_SYNC     0x40u  /* SYNCHRONIZATION */
#define TKI_CUDA_OVERHEAD 0x80u  /* OVERHEAD */
#define TKI_CUDA_ALL      0xffu

static const struct {
	const char *name;
	unsigned bits;
} tki_cuda_words[] = {
	{ "kernel", TKI_CUDA_KERNEL }, { "memcpy", TKI_CUDA_MEMCPY },
	{ "memset", TKI_CUDA_MEMSET }, { "memory", TKI_CUDA_MEMORY },
	{ "runtime", TKI_CUDA_RUNTIME }, { "driver", TKI_CUDA_DRIVER },
	{ "sync", TKI_CUDA_SYNC }, { "overhead", TKI_CUDA_OVERHEAD },
	{ "api", TKI_CUDA_RUNTIME | TKI_CUDA_DRIVER },
	{ "all", TKI_CUDA_ALL }, { "none", 0 },
};
#define TKI_CUDA_NWORDS (sizeof(tki_cuda_words) / sizeof(tki_cuda_words[0]))
#define TKI_CUDA_NKINDS 8        /* the first words: one bit each */

/* The bits of a comma-separated list; 0 and *kinds set, or -1 and
 * *bad (when not NULL) pointing at the first word it does not know in
 * `list`, with *bad_len its length.  "none" anywhere means none. */
static inline int
tki_cuda_parse(const char *list, unsigned *kinds, const char **bad,
               size_t *bad_len)
{
	unsigned k = 0;
	int none = 0;
	for (const char *p = list;; p++) {
		size_t n = strcspn(p, ",");
		size_t i;
		for (i = 0; i < TKI_CUDA_NWORDS; i++)
			if (strlen(tki_cuda_words[i].name) == n &&
			    strncmp(tki_cuda_words[i].name, p, n) == 0)
				break;
		if (i == TKI_CUDA_NWORDS) {
			if (bad)
				*bad = p;
			if (bad_len)
				*bad_len = n;
			return -1;
		}
		k |= tki_cuda_words[i].bits;
		none |= tki_cuda_words[i].bits == 0;
		p += n;
		if (!*p)
			break;
	}
	*kinds = none ? 0 : k;
	return 0;
}

/* The canonical list of `kinds`: "kernel,memcpy,sync", or "none". */
static inline void
tki_cuda_format(unsigned kinds, char *buf, size_t n)
{
	size_t at = 0;
	if (n)
		buf[0] = 0;
	for (size_t i = 0; i < TKI_CUDA_NKINDS; i++)
		if (kinds & tki_cuda_words[i].bits && at < n)
			at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? "," : "",
			                       tki_cuda_words[i].name);
	if (!kinds)
		snprintf(buf, n, "none");
}

/* Wall-clock time of the boot, to the microsecond: what /proc's start
 * times count from.  trace-record measures it once and passes it on in
 * TRACEKIT_BOOT_NS, so that both sides derive the same start times. */
static inline int64_t
tki_boot_ns(void)
{
	struct timespec r, b;
	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_BOOTTIME, &b);
	return ((int64_t)r.tv_sec - b.tv_sec) * 1000000000 +
	       ((int64_t)r.tv_nsec - b.tv_nsec);
}

/*
 * Start time of a process derived from /proc: the boot time plus the
 * process's start in clock ticks.  Only 10 ms precise, but the same on
 * both sides for the same `boot`, which is what a process identity
 * needs.  0 if unknown.
 */
static inline int64_t
tki_proc_start(long pid, int64_t boot)
{
	char path[64], buf[1024];
	unsigned long long ticks = 0;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* the name in parentheses may hold anything: skip to its end */
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* fields 3.. follow, one space before each; 22 is the start time */
	for (int field = 3; field <= 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &ticks) != 1)
		return 0;
	long hz = sysconf(_SC_CLK_TCK);
	if (hz <= 0)
		hz = 100;
	return boot + (int64_t)(ticks * (1000000000ull / (unsigned long long)hz));
}

#endif
