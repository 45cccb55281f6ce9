/* SPDX-License-Identifier: MIT */
/*
 * The processes of the run: a table by pid, what /proc says about them,
 * and the events trace-record writes about them (process lifetimes with
 * resource use, RSS and CPU counters).
 *
 * Resource use comes from wait4 when we get a process's status (every
 * process under ptrace, our children and orphans otherwise): like
 * time(1), it includes the children the process waited for.  A process
 * whose status we cannot get is described by its last /proc sample.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record.h"
#include "inject/protocol.h"
#include "support.h"

static struct rec_proc **procs;
static size_t nprocs, procs_cap;
/* pid -> index + 1 of its latest process, open addressing */
static uint32_t *slots;
static pid_t *slot_pid;
static size_t nslots;
static long tick_ns, page_size;
static char host[256];

static size_t
hash_pid(pid_t pid)
{
	return (size_t)tkp_hash_u64((uint64_t)(uint32_t)pid) & (nslots - 1);
}

static void
map_put(pid_t pid, uint32_t index)
{
	if ((nprocs + 1) * 2 > nslots) {
		size_t n = nslots ? nslots * 2 : 1024;
		uint32_t *s = calloc(n, sizeof(*s));
		pid_t *k = calloc(n, sizeof(*k));
		if (!s || !k)
			rec_die("out of memory");
		uint32_t *os = slots;
		pid_t *ok = slot_pid;
		size_t on = nslots;
		slots = s;
		slot_pid = k;
		nslots = n;
		for (size_t i = 0; i < on; i++)
			if (os[i])
				map_put(ok[i], os[i]);
		free(os);
		free(ok);
	}
	size_t h = hash_pid(pid);
	while (slots[h] && slot_pid[h] != pid)
		h = (h + 1) & (nslots - 1);
	slots[h] = index;
	slot_pid[h] = pid;
}

struct rec_proc *
rec_proc_find(pid_t pid)
{
	if (!nslots)
		return NULL;
	for (size_t h = hash_pid(pid); slots[h]; h = (h + 1) & (nslots - 1))
		if (slot_pid[h] == pid)
			return procs[slots[h] - 1];
	return NULL;
}

struct rec_proc *
rec_proc_at(size_t i)
{
	return i < nprocs ? procs[i] : NULL;
}

/* ---- /proc ------------------------------------------------------------------------ */

struct stat_fields {
	char state;
	pid_t ppid;
	uint64_t minflt, majflt, utime, stime, start_ticks, rss_pages;
};

static int
read_file(const char *path, char *buf, size_t n, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	for (;;) {
		ssize_t k = read(fd, buf + got, n - 1 - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
		if (got == n - 1)
			break;
	}
	close(fd);
	buf[got] = 0;
	if (len)
		*len = got;
	return 0;
}

static int
read_stat(pid_t pid, struct stat_fields *f)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_file(path, buf, sizeof(buf), NULL) < 0)
		return -1;
	char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	unsigned long long v[22];
	int ppid;
	/* fields 3 (state) to 24 (rss) */
	if (sscanf(p + 2, "%c %d %llu %llu %llu %llu %llu %llu %llu %llu %llu "
	           "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
	           &f->state, &ppid, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
	           &v[6], &v[7], &v[8], &v[9], &v[10], &v[11], &v[12], &v[13],
	           &v[14], &v[15], &v[16], &v[17], &v[18], &v[19]) != 22)
		return -1;
	f->ppid = ppid;
	f->minflt = v[5];
	f->majflt = v[7];
	f->utime = v[9];
	f->stime = v[10];
	f->start_ticks = v[17];
	f->rss_pages = v[19];
	return 0;
}

static void
read_name(struct rec_proc *p)
{
	char path[64], buf[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)p->pid);
	if (read_file(path, buf, sizeof(buf), NULL) < 0)
		return;
	buf[strcspn(buf, "\n")] = 0;
	/* a process without its name would be recorded as "" */
	char *name = strdup(buf);
	if (!name)
		rec_die("out of memory");
	free(p->name);
	p->name = name;
}

static void
read_cmdline(struct rec_proc *p)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)p->pid);
	size_t cap = 1 << 16;
	char *buf = malloc(cap);
	size_t len;
	if (!buf)
		rec_die("out of memory"); /* not a process without arguments */
	if (read_file(path, buf, cap, &len) < 0 || len == 0) {
		free(buf);
		return;
	}
	if (buf[len - 1] != 0)
		buf[len++] = 0;
	free(p->cmdline);
	p->cmdline = buf;
	p->cmdline_len = len;
}

/* Peak RSS and context switches of a live process, summed over its
 * threads. */
static void
read_status_totals(struct rec_proc *p)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)p->pid);
	if (read_file(path, buf, sizeof(buf), NULL) == 0) {
		char *s = strstr(buf, "VmHWM:");
		unsigned long long kb;
		if (s && sscanf(s + 6, "%llu", &kb) == 1 && kb * 1024 > p->max_rss)
			p->max_rss = kb * 1024;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", (int)p->pid);
	DIR *d = opendir(path);
	if (!d)
		return;
	uint64_t vol = 0, invol = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char tp[400];
		snprintf(tp, sizeof(tp), "%s/%s/status", path, de->d_name);
		if (read_file(tp, buf, sizeof(buf), NULL) < 0)
			continue;
		unsigned long long a = 0, b = 0;
		char *s = strstr(buf, "voluntary_ctxt_switches:");
		char *t = strstr(buf, "nonvoluntary_ctxt_switches:");
		if (s && s != t + 3)
			sscanf(s + 24, "%llu", &a);
		if (t)
			sscanf(t + 27, "%llu", &b);
		vol += a;
		invol += b;
	}
	closedir(d);
	if (vol > p->nvcsw)
		p->nvcsw = vol;
	if (invol > p->nivcsw)
		p->nivcsw = invol;
}

int
rec_proc_sample(struct rec_proc *p, int64_t now)
{
	struct stat_fields f;
	if (p->end || read_stat(p->pid, &f) < 0 ||
	    (p->start_ticks && f.start_ticks != p->start_ticks) || f.state == 'Z')
		return -1;
	p->sample_ts = now;
	p->cpu_ticks = f.utime + f.stime;
	p->minflt = f.minflt;
	p->majflt = f.majflt;
	p->rss = f.rss_pages * (uint64_t)page_size;
	if (p->rss > p->max_rss)
		p->max_rss = p->rss;
	return 0;
}

int
rec_proc_same(const struct rec_proc *p)
{
	struct stat_fields f;
	return read_stat(p->pid, &f) == 0 && f.start_ticks == p->start_ticks;
}

/* ---- the table ------------------------------------------------------------------------ */

struct rec_proc *
rec_proc_add(const struct recorder *rc, pid_t pid, pid_t ppid, int64_t start)
{
	if (!tick_ns) {
		long hz = sysconf(_SC_CLK_TCK);
		tick_ns = 1000000000L / (hz > 0 ? hz : 100);
		page_size = sysconf(_SC_PAGESIZE);
		if (gethostname(host, sizeof(host)) < 0)
			snprintf(host, sizeof(host), "localhost");
		host[sizeof(host) - 1] = 0;
	}
	struct rec_proc *p = calloc(1, sizeof(*p));
	if (!p)
		rec_die("out of memory");
	p->pid = pid;
	p->ppid = ppid;
	p->run = rc->run;
	p->win_begin = rc->win_begin;
	p->win_end = rc->win_end;
	struct stat_fields f;
	if (read_stat(pid, &f) == 0) {
		p->start_ticks = f.start_ticks;
		if (!ppid)
			p->ppid = f.ppid;
	}
	p->start = start ? start : tki_proc_start(pid, rc->boot);
	if (!p->start)
		p->start = rec_now();
	read_name(p);
	read_cmdline(p);
	struct rec_proc **a = tkp_grow(procs, &procs_cap, nprocs + 1, sizeof(*a));
	if (!a)
		rec_die("out of memory");
	procs = a;
	procs[nprocs++] = p;
	map_put(pid, (uint32_t)nprocs);
	rec_spool_write_pid(pid, p->start);
	return p;
}

void
rec_proc_refresh(struct rec_proc *p)
{
	read_name(p);
	read_cmdline(p);
	p->defined_argv = 0;
	struct stat_fields f;
	if (read_stat(p->pid, &f) == 0)
		p->start_ticks = f.start_ticks;
}

uint32_t
rec_proc_define(const struct recorder *rc, const struct rec_proc *p,
                struct tk_writer *w, uint32_t id)
{
	const char *argv[4096];
	uint32_t argc = 0;
	for (size_t at = 0; p->cmdline && at < p->cmdline_len &&
	                    argc < sizeof(argv) / sizeof(argv[0]);) {
		argv[argc++] = p->cmdline + at;
		at += strlen(p->cmdline + at) + 1;
	}
	if (!argc && p->name)
		argv[argc++] = p->name;
	struct tk_process d = { host, p->pid, p->ppid, p->start, argc, argv,
	                        rc->opt.label ? rc->opt.label : "" };
	return tk_writer_process(w, id, &d);
}

uint32_t
rec_proc_track(const struct recorder *rc, struct rec_proc *p)
{
	if (p->track && p->defined_argv)
		return p->track;
	uint32_t id = rec_proc_define(rc, p, rec_self(), p->track);
	if (id) {
		p->track = id;
		p->defined_argv = 1;
	}
	return p->track;
}

uint32_t
rec_proc_life_track(const struct recorder *rc, struct rec_proc *p)
{
	struct tk_writer *w = rec_lifetimes();
	if (w == rec_self())
		return rec_proc_track(rc, p);
	/* written at its end, after any exec: defined once */
	if (!p->life_track)
		p->life_track = rec_proc_define(rc, p, w, 0);
	return p->life_track;
}

static int
in_window(const struct rec_proc *p, int64_t end)
{
	return p->start < p->win_end && end > p->win_begin;
}

static int64_t
tv_ns(struct timeval tv)
{
	return (int64_t)tv.tv_sec * 1000000000 + (int64_t)tv.tv_usec * 1000;
}

/* The process event: its life from start to `end`. */
static void
write_process(const struct recorder *rc, struct rec_proc *p, int64_t end,
              const int *status, const struct rusage *ru)
{
	p->written = 1;
	if (!rc->recording || !in_window(p, end))
		return;
	struct tk_event e = { 0 };
	e.kind = TK_PROCESS;
	e.track = rec_proc_life_track(rc, p);
	e.ts = p->start;
	e.dur = end > p->start ? end - p->start : 0;
	e.name = p->name ? p->name : "";
	struct tk_process_attrs *a = &e.u.process;
	if (status && WIFEXITED(*status)) {
		a->exit = TK_EXIT_NORMAL;
		a->exit_code = WEXITSTATUS(*status);
	} else if (status && WIFSIGNALED(*status)) {
		a->exit = TK_EXIT_SIGNAL;
		a->signal = (uint32_t)WTERMSIG(*status);
	}
	if (ru) {
		a->utime = tv_ns(ru->ru_utime);
		a->stime = tv_ns(ru->ru_stime);
		a->max_rss = (uint64_t)ru->ru_maxrss * 1024;
		a->minflt = (uint64_t)ru->ru_minflt;
		a->majflt = (uint64_t)ru->ru_majflt;
		a->nvcsw = (uint64_t)ru->ru_nvcsw;
		a->nivcsw = (uint64_t)ru->ru_nivcsw;
	} else {
		/* the last we saw of it; user and system time are not told
		 * apart by the sample, so all of it counts as user time */
		a->utime = (int64_t)p->cpu_ticks * tick_ns;
		a->max_rss = p->max_rss;
		a->minflt = p->minflt;
		a->majflt = p->majflt;
		a->nvcsw = p->nvcsw;
		a->nivcsw = p->nivcsw;
	}
	if (tk_writer_event(rec_lifetimes(), &e) != TK_OK)
		rec_die("%s", tk_writer_error(rec_lifetimes()));
}

void
rec_proc_ended(const struct recorder *rc, struct rec_proc *p, int64_t when,
               const int *status, const struct rusage *ru)
{
	if (p->end)
		return;
	p->end = when > p->start ? when : p->start;
	if (status) {
		p->status = *status;
		p->has_status = 1;
		if (WIFSIGNALED(*status))
			p->exit_signal = WTERMSIG(*status);
	}
	if (!p->written)
		write_process(rc, p, p->end, status, ru);
}

/* A process still running when the recording ends. */
static void
still_running(const struct recorder *rc, struct rec_proc *p, int64_t now)
{
	struct stat_fields f;
	if (read_stat(p->pid, &f) == 0 && f.start_ticks == p->start_ticks) {
		p->cpu_ticks = f.utime + f.stime;
		p->minflt = f.minflt;
		p->majflt = f.majflt;
		read_status_totals(p);
	}
	write_process(rc, p, now, NULL, NULL);
}

void
rec_procs_finish(const struct recorder *rc, int64_t now)
{
	for (size_t i = 0; i < nprocs; i++)
		if (!procs[i]->written && !procs[i]->end)
			still_running(rc, procs[i], now);
}

/* ---- counters ----------------------------------------------------------------------- */

static void
counter(const struct recorder *rc, uint32_t *track, struct rec_proc *p,
        const char *name, const char *unit, int64_t ts, double v)
{
	struct tk_writer *w = rec_self();
	if (!*track) {
		struct tk_counter c = { name, unit, rec_proc_track(rc, p), 0 };
		*track = tk_writer_counter(w, 0, &c);
		if (!*track)
			return;
	}
	struct tk_event e = { 0 };
	e.kind = TK_COUNTER;
	e.track = *track;
	e.ts = ts;
	e.name = name;
	e.u.counter.value = v;
	tk_writer_event(w, &e);
}

void
rec_procs_sample_counters(const struct recorder *rc, int64_t now)
{
	for (size_t i = 0; i < nprocs; i++) {
		struct rec_proc *p = procs[i];
		uint64_t before = p->cpu_ticks;
		int64_t since = p->sample_ts ? p->sample_ts : p->start;
		int fresh = !p->sample_ts;
		/* no address space: caught exiting, or in the middle of exec */
		if (rec_proc_sample(p, now) < 0 || p->rss == 0 ||
		    now < p->win_begin || now >= p->win_end)
			continue;
		counter(rc, &p->rss_track, p, "rss", "bytes", now, (double)p->rss);
		if (now > since) {
			/* the first sample covers the process's life so far */
			uint64_t used = p->cpu_ticks - (fresh ? 0 : before);
			double pct = 100.0 * (double)used * (double)tick_ns /
			             (double)(now - since);
			counter(rc, &p->cpu_track, p, "cpu", "%", now, pct);
		}
	}
}

int64_t
rec_procs_hold(void)
{
	int64_t m = INT64_MAX;
	for (size_t i = 0; i < nprocs; i++)
		if (!procs[i]->written && procs[i]->start < m)
			m = procs[i]->start;
	return m;
}

void
rec_procs_free(void)
{
	for (size_t i = 0; i < nprocs; i++) {
		free(procs[i]->name);
		free(procs[i]->cmdline);
		free(procs[i]);
	}
	free(procs);
	free(slots);
	free(slot_pid);
	procs = NULL;
	slots = NULL;
	slot_pid = NULL;
	nprocs = procs_cap = nslots = 0;
}
