/* SPDX-License-Identifier: MIT */
/*
 * The process's spool: a .tkt stream in trace-record's spool directory,
 * its status page, and the definitions of the process and its threads.
 *
 * The spool is created under a dot name and renamed once its header and
 * first chunk (the process definition and a watermark) are written, so
 * that a spool trace-record sees is readable and nothing in it begins
 * before trace-record could have seen it.  Its status page and durable
 * buffer file (durable.c) exist before that.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inject.h"
#include "tbuf.h"
#include "support.h"
#include "tk_private.h"

pthread_mutex_t tki_lock = PTHREAD_MUTEX_INITIALIZER;
struct tk_writer *tki_writer;
volatile struct tki_status *tki_status;
uint32_t tki_scope;

/* The status page used before the process records (and after fork,
 * until the child has its own): counts go nowhere. */
static struct tki_status dummy_status;

static int64_t last_watermark;  /* a promise made stands: never lower */
static dev_t spool_dev;
static ino_t spool_ino;
static uint64_t spool_bytes;     /* the spool's length: what we wrote */
static int spool_failed;         /* a flush failed: no writer from then on */
static char spool_path[PATH_MAX], status_path[PATH_MAX], buf_path[PATH_MAX];
static uint32_t process_track;
static struct tk_process process_def;
static char *cmdline;            /* argv strings, NUL-separated */
static const char **argv_ptrs;
static char host[256];

/* thread tracks of this scope, by kernel tid */
struct thread_track {
	int64_t tid;
	uint32_t track;
	char name[64];
};
static struct thread_track *tracks;
static uint32_t ntracks;
static size_t tracks_cap;

static void __attribute__((constructor))
status_init(void)
{
	tki_status = &dummy_status;
}

/* The process start trace-record gave this pid, or the one both sides
 * derive from /proc. */
static int64_t
process_start(long pid, int64_t fallback)
{
	char path[PATH_MAX], buf[64];
	snprintf(path, sizeof(path), "%s/p%ld", tki_cfg.spool, pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		long long v;
		if (n > 0) {
			buf[n] = 0;
			if (sscanf(buf, "%lld", &v) == 1 && v > 0)
				return v;
		}
	}
	int64_t t = tki_proc_start(pid, tki_cfg.boot);
	return t ? t : fallback;
}

/* argv from /proc/self/cmdline (the program may have changed it). */
static void
read_cmdline(void)
{
	free(cmdline);
	free(argv_ptrs);
	cmdline = NULL;
	argv_ptrs = NULL;
	process_def.argc = 0;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	size_t cap = 4096, len = 0;
	char *b = malloc(cap + 1);
	for (ssize_t k; b; len += (size_t)k) {
		if (len == cap) {
			char *nb = cap < (1u << 24) ? realloc(b, cap * 2 + 1) : NULL;
			if (!nb)
				break;
			b = nb;
			cap *= 2;
		}
		k = read(fd, b + len, cap - len);
		if (k <= 0)
			break;
	}
	close(fd);
	if (!b)
		return;
	b[len] = 0;
	uint32_t argc = 0;
	for (size_t i = 0; i < len; i++)
		if (b[i] == 0)
			argc++;
	if (len && b[len - 1] != 0)
		argc++;
	const char **v = calloc(argc ? argc : 1, sizeof(*v));
	if (!v) {
		free(b);
		return;
	}
	size_t at = 0;
	for (uint32_t i = 0; i < argc; i++) {
		v[i] = b + at;
		at += strlen(b + at) + 1;
	}
	cmdline = b;
	argv_ptrs = v;
	process_def.argc = argc;
	process_def.argv = v;
}

static int
define_process(void)
{
	process_track = tk_writer_process(tki_writer, 0, &process_def);
	ntracks = 0;
	return process_track ? 0 : -1;
}

/*
 * Everything after the spool's first chunk goes through a descriptor
 * opened for that one write and closed right after it.  The program may
 * close any descriptor it did not open (daemons do, closefrom() does),
 * even while its other threads run, and reuse the number for a file of
 * its own: a descriptor we held for the whole run would then lose our
 * events, or write them into the program's file.  An open and a close
 * per chunk cost nothing next to compressing it.
 */
static int
spool_append(void *arg, const void *p, size_t n)
{
	(void)arg;
	for (int tries = 0; tries < 3; tries++) {
		int fd = open(spool_path, O_WRONLY | O_APPEND | O_CLOEXEC);
		if (fd < 0)
			return -1;
		int rc = tkp_write_all(fd, p, n), err = errno;
		/* closed and reused in the microseconds between: the number
		 * is the program's now, and so is closing it */
		struct stat st;
		int ours = fstat(fd, &st) == 0 && st.st_dev == spool_dev &&
		           st.st_ino == spool_ino;
		if (ours)
			close(fd);
		if (ours && rc == 0) {
			spool_bytes += n;
			return 0;
		}
		if (rc < 0 && err != EBADF) {
			errno = err;
			return -1;
		}
	}
	errno = EBADF;
	return -1;
}

static int
open_writer(int fd, const char *name)
{
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	/* a spool is read once, right away: compress little.  Chunks are
	 * sealed by the flusher's commits only (flusher.c): a chunk sealed
	 * on its own would hold events the durable snapshot does not know
	 * are written */
	o.level = 1;
	o.chunk_bytes = UINT32_MAX;
	struct tk_writer *w = tk_writer_new();
	if (!w)
		return -1;
	if (tk_writer_open_fd(w, fd, name, &o) != TK_OK) {
		tk_writer_free(w);
		return -1;
	}
	tki_writer = w;
	tki_scope++;
	return define_process();
}

static int
map_status(void)
{
	int fd = open(status_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	/* every byte allocated now: trace-record reads all of it, and a
	 * page first touched on a full file system is a SIGBUS */
	if (ftruncate(fd, sizeof(struct tki_status)) < 0 ||
	    posix_fallocate(fd, 0, sizeof(struct tki_status)) != 0) {
		close(fd);
		unlink(status_path);
		return -1;
	}
	void *p = mmap(NULL, sizeof(struct tki_status), PROT_READ | PROT_WRITE,
	               MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		unlink(status_path);
		return -1;
	}
	struct tki_status *s = p;
	s->slots = TKI_STATUS_SLOTS;
	s->pid = getpid();
	s->open_since = INT64_MAX;
	__atomic_store_n(&s->magic, TKI_STATUS_MAGIC, __ATOMIC_RELEASE);
	tki_status = s;
	return 0;
}

int
tki_spool_open(void)
{
	long pid = getpid();
	int64_t t0 = tki_now();
	char tmp[PATH_MAX];
	if (snprintf(spool_path, sizeof(spool_path), "%s/%ld-%lld.tkt",
	             tki_cfg.spool, pid, (long long)t0) >= (int)sizeof(spool_path) ||
	    snprintf(status_path, sizeof(status_path), "%s/%ld-%lld.st",
	             tki_cfg.spool, pid, (long long)t0) >= (int)sizeof(status_path) ||
	    snprintf(buf_path, sizeof(buf_path), "%s/%ld-%lld.buf",
	             tki_cfg.spool, pid, (long long)t0) >= (int)sizeof(buf_path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%ld-%lld.tkt", tki_cfg.spool, pid,
	             (long long)t0) >= (int)sizeof(tmp))
		return -1;
	if (map_status() < 0)
		return -1;
	if (tki_buf_open(buf_path, tki_cfg.buffer_limit, tki_cfg.win_end) < 0)
		goto fail;
	tki_registry_log_all();
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = 0;
	read_cmdline();
	process_def.host = host;
	process_def.pid = pid;
	process_def.ppid = getppid();
	process_def.start = process_start(pid, t0);
	process_def.label = tki_cfg.label ? tki_cfg.label : "";
	if (open_writer(fd, spool_path) < 0)
		goto fail_fd;
	last_watermark = t0;
	tk_writer_watermark(tki_writer, t0);
	if (tk_writer_flush(tki_writer) != TK_OK || rename(tmp, spool_path) < 0)
		goto fail_writer;
	struct stat st;
	if (fstat(fd, &st) < 0)
		goto fail_writer;
	spool_dev = st.st_dev;
	spool_ino = st.st_ino;
	spool_bytes = (uint64_t)st.st_size;
	spool_failed = 0;
	tki_buf_spool_start(spool_bytes);
	__atomic_store_n(&tki_status->committed, spool_bytes, __ATOMIC_RELEASE);
	tkp_writer_set_sink(tki_writer, spool_append, NULL);
	close(fd);
	return 0;
fail_writer:
	tk_writer_free(tki_writer);
	tki_writer = NULL;
fail_fd:
	close(fd);
	unlink(tmp);
fail:
	tki_buf_forget(1);
	unlink(status_path);
	munmap((void *)tki_status, sizeof(struct tki_status));
	tki_status = &dummy_status;
	return -1;
}

int
tki_spool_flush(int64_t w, int64_t open_since)
{
	if (!tki_writer)
		return -1;
	__atomic_store_n(&tki_status->open_since, open_since, __ATOMIC_RELEASE);
	if (w < last_watermark)
		w = last_watermark;
	last_watermark = w;
	tk_writer_watermark(tki_writer, w);
	if (tk_writer_flush(tki_writer) != TK_OK) {
		/* a full disk, say.  Recording goes on into the durable
		 * buffers, which nothing empties now: trace-record recovers
		 * them when the process is gone, from the last commit, and
		 * counts what found them full, with this as the reason */
		int err = errno ? errno : EIO;
		__atomic_store_n(&tki_status->spool_errno, err, __ATOMIC_RELEASE);
		spool_failed = 1;
		tk_writer_free(tki_writer);
		tki_writer = NULL;
		return -1;
	}
	return 0;
}

int
tki_spool_close(void)
{
	if (!tki_writer)
		return -1;
	__atomic_store_n(&tki_status->open_since, INT64_MAX, __ATOMIC_RELEASE);
	int ok = tk_writer_close(tki_writer) == TK_OK;
	if (!ok)
		__atomic_store_n(&tki_status->spool_errno, errno ? errno : EIO,
		                 __ATOMIC_RELEASE);
	tk_writer_free(tki_writer);
	tki_writer = NULL;
	if (!ok)
		return -1;     /* recovery converts what the last commit left */
	/* complete, with its end marker: all of it is the process's word */
	__atomic_store_n(&tki_status->committed, UINT64_MAX, __ATOMIC_RELEASE);
	return 0;
}

int
tki_spool_failed(void)
{
	return spool_failed;
}

void
tki_spool_commit(void)
{
	tki_buf_snap_commit(spool_bytes);
	__atomic_store_n(&tki_status->committed, spool_bytes, __ATOMIC_RELEASE);
}

void
tki_spool_abandon(int remove)
{
	/* after fork the writer is the parent's: drop our copy without
	 * writing a byte */
	if (tki_writer)
		tk_writer_free(tki_writer);
	tki_writer = NULL;
	if (tki_status != &dummy_status)
		munmap((void *)tki_status, sizeof(struct tki_status));
	tki_status = &dummy_status;
	if (remove) {
		char path[PATH_MAX];
		unlink(spool_path);
		unlink(status_path);
		tki_buf_unlink();
		snprintf(path, sizeof(path), "%s/p%ld", tki_cfg.spool, (long)getpid());
		unlink(path);
		rmdir(tki_cfg.spool);
	}
	ntracks = 0;
	pthread_mutex_init(&tki_lock, NULL);
}

void
tki_spool_count_direct(uint64_t n)
{
	__atomic_fetch_add(&tki_status->direct, n, __ATOMIC_RELAXED);
}

void
tki_spool_count_nomem(uint64_t n)
{
	__atomic_fetch_add(&tki_status->nomem, n, __ATOMIC_RELAXED);
	__atomic_fetch_add(&tki_status->direct, n, __ATOMIC_RELAXED);
}

uint32_t
tki_spool_string(const char *s, size_t len)
{
	return tki_writer ? tk_writer_string(tki_writer, s, len) : 0;
}

uint32_t
tki_spool_process(void)
{
	return tki_writer ? process_track : 0;
}

/* Name of a thread: its NVTX name, else the kernel's. */
static void
thread_name(int64_t tid, char *buf, size_t n)
{
	if (tki_thread_name_get(tid, buf, n))
		return;
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%lld/comm", (long long)tid);
	buf[0] = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t k = read(fd, buf, n - 1);
	close(fd);
	if (k < 0)
		k = 0;
	buf[k] = 0;
	if (k > 0 && buf[k - 1] == '\n')
		buf[k - 1] = 0;
}

uint32_t
tki_spool_thread(int64_t tid, int refresh)
{
	if (!tki_writer)
		return 0;
	struct thread_track *tt = NULL;
	for (uint32_t i = 0; i < ntracks; i++)
		if (tracks[i].tid == tid)
			tt = &tracks[i];
	if (tt && !refresh)
		return tt->track;
	char name[64];
	thread_name(tid, name, sizeof(name));
	if (tt && (strcmp(name, tt->name) == 0 || !name[0]))
		return tt->track;
	if (!tt) {
		struct thread_track *a = tkp_grow(tracks, &tracks_cap,
		                                  (size_t)ntracks + 1, sizeof(*a));
		if (!a)
			return 0;
		tracks = a;
		tt = &tracks[ntracks];
		tt->tid = tid;
		tt->track = 0;
	}
	struct tk_thread th = { process_track, tid, name };
	uint32_t id = tk_writer_thread(tki_writer, tt->track, &th);
	if (!id)
		return tt->track;
	if (!tt->track)
		ntracks++;
	tt->track = id;
	snprintf(tt->name, sizeof(tt->name), "%s", name);
	return id;
}
