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
	uint64_t pad[4];
	uint32_t cuda;           /* TKI_CUDA_STATE_*, written after cuda_note */
	uint32_t pad2;
	char cuda_note[248];     /* why CUDA is not recorded, NUL-terminated */
	struct tki_status_slot slot[TKI_STATUS_SLOTS];
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
