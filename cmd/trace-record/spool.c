/* SPDX-License-Identifier: MIT */
/*
 * The spool directory and the spools being tailed.
 *
 * Each spool (one per process image that loaded the injection library)
 * is read as it grows and fed to a feed-mode reader that is one input
 * of the merge.  Its chunk headers are followed as the bytes go by
 * (tracekit-format(5)): their event counts say how many events the
 * spool holds, which the process's status page turns into the number
 * it lost if it dies before its last flush, and the end marker says
 * the spool is complete.  Bytes already fed are punched out of the
 * file, so a long recording does not fill the disk with spools.  A
 * process gone without its end marker left the rest of what it wrote
 * in its durable buffers: recover.c converts it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record.h"
#include "inject/protocol.h"
#include "support.h"

#define READ_PIECE (256u * 1024u)
#define PUNCH_AFTER (4u << 20)

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t
le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static const uint8_t file_magic[8] = { 0x89, 'T', 'K', 'T', '\r', '\n', 0x1a, '\n' };
static const uint8_t chunk_magic[4] = { 0x89, 'T', 'K', 'C' };

struct spool {
	char *file;              /* name in the directory */
	pid_t pid;
	int64_t t_init;          /* when the image started recording */
	int fd;
	uint64_t off;            /* bytes fed */
	uint64_t punched;
	struct tk_reader *r;     /* owned by the merge */
	const volatile struct tki_status *st;
	/* chunk headers, as the bytes go by */
	uint8_t h[64];
	size_t hlen;
	uint64_t skip;           /* bytes of the current chunk still to come */
	uint32_t chunk_events;   /* events of the chunk being skipped */
	int broken;              /* not the format: the reader will say */
	uint64_t events;         /* in complete chunks */
	int ended;               /* its end marker went by */
	int64_t last_wm;         /* watermark of the last complete chunk */
	/* its process */
	int gone;                /* exec'd or ended: nothing more will come */
	int gone_exec;           /* exec'd */
	int64_t gone_ts;
	int finished;
	int warned;
	int cuda_seen;           /* its CUDA state was told */
	int cuda_on;             /* it recorded GPU activity */
};

static char *dir;
static struct spool **spools;
static size_t nspools, spools_cap;

/* ---- the directory -------------------------------------------------------------- */

char *
rec_spool_create(void)
{
	const char *cands[] = { getenv("TMPDIR"), "/tmp", "/var/tmp", "/dev/shm" };
	int first_err = 0;
	const char *first = NULL;
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
		const char *base = cands[i];
		if (!base || !*base)
			continue;
		char path[PATH_MAX];
		if (snprintf(path, sizeof(path), "%s/tracekit-XXXXXX", base) >=
		    (int)sizeof(path))
			continue;
		if (mkdtemp(path)) {
			/* the library finds it from anywhere: absolute */
			char *real = realpath(path, NULL);
			if (!real) {
				rmdir(path); /* not ours to clean up yet */
				rec_die("out of memory");
			}
			if (first && i > 0 && cands[0] && *cands[0])
				cmd_warn("cannot create files in TMPDIR=%s (%s); "
				         "spooling in %s", first,
				         strerror(first_err), base);
			dir = real;
			return real;
		}
		if (!first) {
			first = base;
			first_err = errno;
		}
	}
	rec_die("cannot create a spool directory in %s: %s",
	        first ? first : "/tmp", strerror(first_err));
}

/* Read with getdents64 into a buffer of our own, not opendir: this
 * runs on the way out of every failure, out of memory included, and
 * opendir's allocation failing left the directory behind. */
void
rec_spool_remove(const char *d)
{
	int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		char buf[4096] __attribute__((aligned(8)));
		ssize_t n;
		while ((n = getdents64(fd, buf, sizeof(buf))) > 0) {
			for (ssize_t at = 0; at < n;) {
				const struct dirent64 *de = (const void *)(buf + at);
				at += de->d_reclen;
				if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
					unlinkat(fd, de->d_name, 0);
			}
		}
		close(fd);
	}
	rmdir(d);
}

void
rec_spool_write_pid(pid_t pid, int64_t start)
{
	char tmp[PATH_MAX], path[PATH_MAX], buf[32];
	snprintf(tmp, sizeof(tmp), "%s/.p%d", dir, (int)pid);
	snprintf(path, sizeof(path), "%s/p%d", dir, (int)pid);
	int n = snprintf(buf, sizeof(buf), "%" PRId64 "\n", start);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	/* renamed into place: a process reading it sees all or nothing */
	int ok = write(fd, buf, (size_t)n) == n;
	close(fd);
	if (!ok || rename(tmp, path) < 0)
		unlink(tmp);
}

void
rec_spool_remove_pid(pid_t pid)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/p%d", dir, (int)pid);
	unlink(path);
}

/* ---- following the chunks ---------------------------------------------------------- */

static void
follow(struct spool *s, const uint8_t *p, size_t n)
{
	while (n && !s->broken) {
		if (s->skip) {
			size_t k = n < s->skip ? n : (size_t)s->skip;
			s->skip -= k;
			p += k;
			n -= k;
			if (!s->skip)
				s->events += s->chunk_events;
			continue;
		}
		size_t need = 16;
		if (s->hlen >= 4 && memcmp(s->h, chunk_magic, 4) == 0)
			need = 56;
		size_t k = need - s->hlen;
		if (k > n)
			k = n;
		memcpy(s->h + s->hlen, p, k);
		s->hlen += k;
		p += k;
		n -= k;
		if (s->hlen < need)
			continue;
		const uint8_t *h = s->h;
		if (memcmp(h, file_magic, 8) == 0) {
			/* a header: the first, or a new scope */
			uint32_t hs = le32(h + 12);
			if (hs < 16 || hs > 4096) {
				s->broken = 1;
				break;
			}
			s->skip = hs - 16;
			s->chunk_events = 0;
			s->hlen = 0;
			s->ended = 0;
		} else if (need == 56) {
			uint32_t hs = le32(h + 4);
			uint32_t flags = le32(h + 8);
			if (hs < 56 || hs > 4096) {
				s->broken = 1;
				break;
			}
			s->chunk_events = le32(h + 20);
			s->skip = (uint64_t)(hs - 56) + le32(h + 12);
			if (flags & TK_CHUNK_END) {
				/* its watermark says "nothing follows" (the
				 * largest time); what it covers ends with its
				 * last event */
				int64_t t_max = (int64_t)le64(h + 32);
				if (s->chunk_events && t_max > s->last_wm)
					s->last_wm = t_max;
				s->ended = 1;
			} else {
				s->last_wm = (int64_t)le64(h + 40);
			}
			s->hlen = 0;
			if (!s->skip)
				s->events += s->chunk_events;
		} else if (memcmp(h, chunk_magic, 4) != 0) {
			s->broken = 1;
		}
	}
}

/* ---- spools ------------------------------------------------------------------------- */

static void
add_spool(const char *name)
{
	long pid;
	long long t;
	char tail[8];
	if (sscanf(name, "%ld-%lld.%7s", &pid, &t, tail) != 3 ||
	    strcmp(tail, "tkt") != 0)
		return;
	for (size_t i = 0; i < nspools; i++)
		if (strcmp(spools[i]->file, name) == 0)
			return;
	struct spool *s = calloc(1, sizeof(*s));
	if (!s || !(s->file = strdup(name)))
		rec_die("out of memory");
	s->pid = (pid_t)pid;
	s->t_init = t;
	s->last_wm = t;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	s->fd = open(path, O_RDWR | O_CLOEXEC);
	if (s->fd < 0)
		s->fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "%s/%ld-%lld.st", dir, pid, t);
	int sfd = open(path, O_RDONLY | O_CLOEXEC);
	if (sfd >= 0) {
		void *m = mmap(NULL, sizeof(struct tki_status), PROT_READ,
		               MAP_SHARED, sfd, 0);
		close(sfd);
		if (m != MAP_FAILED) {
			s->st = m;
			if (s->st->magic != TKI_STATUS_MAGIC) {
				munmap(m, sizeof(struct tki_status));
				s->st = NULL;
			}
		}
	}
	s->r = tk_reader_new();
	if (!s->r || tk_reader_open_feed(s->r, s->file) != TK_OK)
		rec_die("out of memory");
	if (rec_out_add_input(s->r) < 0)
		rec_die("out of memory");
	/* a process that exec'd or ended before we saw its spool */
	struct rec_proc *p = rec_proc_find(s->pid);
	if (!p || p->end || (p->exec_ts && p->exec_ts > s->t_init)) {
		s->gone = 1;
		s->gone_ts = p && p->end ? p->end : rec_now();
		if (p && p->exec_ts > s->t_init) {
			s->gone_ts = p->exec_ts;
			s->gone_exec = 1;
		}
	}
	struct spool **a = tkp_grow(spools, &spools_cap, nspools + 1, sizeof(*a));
	if (!a)
		rec_die("out of memory");
	spools = a;
	spools[nspools++] = s;
}

static void
scan_directory(void)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
			add_spool(de->d_name);
	closedir(d);
}

/* The process attached to CUDA, or said why it could not. */
static void
cuda_state(const struct recorder *rc, struct spool *s)
{
	if (!s->st || s->cuda_seen)
		return;
	uint32_t c = __atomic_load_n(&s->st->cuda, __ATOMIC_ACQUIRE);
	if (c == TKI_CUDA_STATE_NONE)
		return;
	char note[sizeof(s->st->cuda_note)];
	for (size_t i = 0; i < sizeof(note); i++)
		note[i] = s->st->cuda_note[i];
	note[sizeof(note) - 1] = 0;
	s->cuda_seen = 1;
	s->cuda_on = c == TKI_CUDA_STATE_ON;
	rec_cuda_process(rc, s->pid, (int)c, note);
}

/* Feed the spool's new bytes, up to `limit`. */
static void
pump(const struct recorder *rc, struct spool *s, uint64_t limit)
{
	static uint8_t buf[READ_PIECE];
	cuda_state(rc, s);
	if (s->fd < 0)
		return;
	for (int i = 0; i < 256 && s->off < limit; i++) {
		size_t want = sizeof(buf);
		if (limit - s->off < want)
			want = (size_t)(limit - s->off);
		ssize_t k = pread(s->fd, buf, want, (off_t)s->off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		follow(s, buf, (size_t)k);
		if (tk_reader_feed(s->r, buf, (size_t)k) != TK_OK)
			rec_die("out of memory");
		s->off += (uint64_t)k;
	}
	/* the reader has its own copy now */
	uint64_t upto = s->off & ~(uint64_t)4095;
	if (upto - s->punched >= PUNCH_AFTER) {
		fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		          (off_t)s->punched, (off_t)(upto - s->punched));
		s->punched = upto;
	}
}

/* What of a running process's spool is committed (protocol.h): a chunk
 * after it may yet be converted again from the durable buffers. */
static uint64_t
committed(const struct spool *s)
{
	return s->st ? __atomic_load_n(&s->st->committed, __ATOMIC_ACQUIRE)
	             : UINT64_MAX;
}

/* Why a process's last events did not reach its spool. */
static void
loss_reason(char *b, size_t n, const struct spool *s, const struct rec_proc *p)
{
	if (s->gone_exec)
		snprintf(b, n, "the process exec'd before its last flush");
	else if (!p || !p->end)
		snprintf(b, n, "the process was still running when the "
		         "recording ended");
	else if (p->exit_signal)
		snprintf(b, n, "the process was killed by signal %d (%s) "
		         "before its last flush", p->exit_signal,
		         strsignal(p->exit_signal));
	else if (s->ended)
		snprintf(b, n, "recorded after the process's last flush");
	else
		snprintf(b, n, "the process ended without its last flush "
		         "(_exit, or a crash)");
}

/* `count` events of the process lost before its spool, for `why`:
 * after the spool's last watermark, to `end`. */
static void
write_loss(const struct recorder *rc, const struct spool *s, struct rec_proc *p,
           int64_t end, uint64_t count, const char *why)
{
	if (!count || !p)
		return;
	struct tk_event e = { 0 };
	e.kind = TK_DROPPED;
	e.track = rec_proc_track(rc, p);
	e.ts = s->last_wm;
	if (e.ts < p->start)
		e.ts = p->start;
	e.dur = end > e.ts ? end - e.ts : 0;
	e.name = s->cuda_on ? "nvtx+cuda" : "nvtx";
	e.u.dropped.count = count;
	e.u.dropped.reason = why;
	if (e.track)
		tk_writer_event(rec_self(), &e);
}

static void
finish(const struct recorder *rc, struct spool *s)
{
	if (s->finished)
		return;
	struct rec_proc *p = rec_proc_find(s->pid);
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%d-%lld.buf", dir, (int)s->pid,
	         (long long)s->t_init);
	/* gone without its last flush: the spool as far as the durable
	 * snapshot knows it, and the rest from the buffers; else all */
	int recover = s->gone && rc->recording && p;
	pump(rc, s, recover ? rec_recover_spool_limit(path) : UINT64_MAX);
	recover = recover && !s->ended;
	tk_reader_feed_end(s->r);
	s->finished = 1;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	cuda_state(rc, s);
	uint64_t produced = s->st ? tki_status_produced(s->st) : 0;
	uint64_t nomem = s->st ? __atomic_load_n(&s->st->nomem, __ATOMIC_RELAXED) : 0;
	int spool_errno = s->st ? __atomic_load_n(&s->st->spool_errno,
	                                          __ATOMIC_ACQUIRE) : 0;
	char full_why[256] = "";
	if (spool_errno > 0)
		snprintf(full_why, sizeof(full_why), "buffers full: the process "
		         "could not write its spool in %s (%s)", dir,
		         strerror(spool_errno));
	int64_t end = s->gone ? s->gone_ts : rec_now();
	uint64_t recovered = 0;
	if (recover) {
		/* its status page is read first: nothing it counted after
		 * that is in the buffers we convert */
		recovered = rec_recover(path, rec_proc_track(rc, p), end,
		                        s->last_wm, *full_why ? full_why : NULL);
	}
	if (s->st)
		munmap((void *)s->st, sizeof(struct tki_status));
	s->st = NULL;
	if (produced <= s->events + recovered || !rc->recording)
		return;
	uint64_t lost = produced - s->events - recovered;
	/* what memory took was never written: its own reason; the rest
	 * is whatever kept it from the spool */
	uint64_t by_memory = nomem < lost ? nomem : lost;
	write_loss(rc, s, p, end, by_memory, "the process ran out of memory "
	           "recording them (no buffers for a thread, or for its "
	           "nesting levels)");
	char why[256];
	if (*full_why)
		snprintf(why, sizeof(why), "%s", full_why + strlen("buffers full: "));
	else
		loss_reason(why, sizeof(why), s, p);
	write_loss(rc, s, p, end, lost - by_memory, why);
}

void
rec_spools_process_gone(pid_t pid, int64_t when, int exec)
{
	for (size_t i = 0; i < nspools; i++) {
		struct spool *s = spools[i];
		if (s->pid == pid && !s->gone && s->t_init <= when) {
			s->gone = 1;
			s->gone_ts = when;
			s->gone_exec = exec;
		}
	}
}

void
rec_spools_pump(const struct recorder *rc, int final)
{
	scan_directory();
	for (size_t i = 0; i < nspools; i++) {
		struct spool *s = spools[i];
		if (s->finished)
			continue;
		pump(rc, s, committed(s));
		if (final || s->gone || s->ended)
			finish(rc, s);
	}
}

int64_t
rec_spools_hold(void)
{
	int64_t m = INT64_MAX;
	for (size_t i = 0; i < nspools; i++) {
		const struct spool *s = spools[i];
		if (s->finished || !s->st)
			continue;
		int64_t t = __atomic_load_n(&s->st->open_since, __ATOMIC_ACQUIRE);
		if (t < m)
			m = t;
	}
	return m;
}

/* The merge's word on a spool it could not read to the end: expected
 * when the process died before closing it, worth a warning otherwise. */
void
rec_spool_warn(void *arg, const char *input, const char *message)
{
	(void)arg;
	for (size_t i = 0; i < nspools; i++) {
		struct spool *s = spools[i];
		if (strcmp(s->file, input) != 0)
			continue;
		if ((s->gone || !s->ended) && !s->broken &&
		    strstr(message, "no end marker"))
			return;
		if (!s->warned)
			cmd_warn("spool of pid %d: %s", (int)s->pid, message);
		s->warned = 1;
		return;
	}
	cmd_warn("%s: %s", input, message);
}

void
rec_spools_free(void)
{
	for (size_t i = 0; i < nspools; i++) {
		if (spools[i]->fd >= 0)
			close(spools[i]->fd);
		if (spools[i]->st)
			munmap((void *)spools[i]->st, sizeof(struct tki_status));
		free(spools[i]->file);
		free(spools[i]);
	}
	free(spools);
	spools = NULL;
	nspools = spools_cap = 0;
	free(dir);
	dir = NULL;
}
