/* SPDX-License-Identifier: MIT */
/*
 * A simulated training loop with NVTX ranges, for trace-record's tests
 * and `make demo`.  Everything it records is fixed by its options, so a
 * test can count the events exactly:
 *
 *   main thread, per step s (from 0):
 *     step       push/pop, payload s (uint64), colour 0xff76b900, category 1
 *       forward      push/pop
 *         layer.N    push/pop for each layer (message from a stack buffer)
 *       backward     push/pop
 *       loss         mark, payload 1/(s+1) (double)
 *       optimizer    push/pop
 *   each loader thread (named "loader-N"), per step:
 *     load       push/pop
 *   --domain: once, "io" in domain "sample" (a registered string),
 *             category 2 named "disk"; category 1 is named "compute"
 *   --async:  "prefetch", started by the main thread before the first
 *             step and ended by loader thread 0 after its first load
 *   --fork:   a child after the steps: child.work push/pop, child.done mark
 *   --wide:   a mark with a wide-character message "wide-ü"
 *   --mark-until-exit: a thread marking "until.exit" without end, from
 *             before the first step until the process exits
 *
 *   --fork-first N: before any NVTX call the process forks N deep; only
 *             the last child records (and ends as told below), the
 *             others wait for their child and exit with its status
 *   --async-open N: after the steps, N async ranges "open" started,
 *             payload i (uint64) for the i-th, all open for --sleep MS,
 *             then ended in reverse order; prints "async-open: N"
 *   --flood N: N "flood" push/pop ranges on the main thread after the
 *             steps, payload i (uint64) for the i-th from 0, then prints
 *             "flood: N ranges written"; with --count-file FILE the process writes its pid
 *             and, after each pop, the ranges done into FILE (two
 *             int64, shared), for a test that kills it from outside
 *
 * --scribble OFF=VALUE: before it ends, the 64-bit VALUE written at byte
 *             OFF of its durable buffer (TRACEKIT_SPOOL/<pid>-*.buf), as a
 *             program that writes through a stray pointer would
 *             (repeatable, up to 8); prints "scribbled: N" (files written)
 *
 * Then it exits with --exit CODE (with _exit with --quick-exit), kills
 * itself with --signal SIG, crashes with --crash abort|segv (a real
 * fault), takes memory until the OOM killer ends it with --crash oom,
 * or with --wait-kill FILE writes its pid into FILE and waits to be
 * killed.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include <nvtx3/nvToolsExt.h>

/* make coverage: gcov writes counters at exit(), not at _exit, and each
 * module only its own; the injection library of that build has a
 * function that writes its counters (lib/inject/init.c).  NVTX loaded
 * it with RTLD_LOCAL: found by its soname. */
#ifdef TK_COVERAGE
#include <dlfcn.h>
static void
coverage_dump(void)
{
	void *h = dlopen("libtracekit-inject.so", RTLD_LAZY | RTLD_NOLOAD);
	void *f = h ? dlsym(h, "tki_coverage_dump") : NULL;
	void (*dump)(void);
	memcpy(&dump, &f, sizeof(f));
	if (dump)
		dump();
	if (h)
		dlclose(h);
}
#else
#define coverage_dump() ((void)0)
#endif

static int steps = 3, layers = 2, threads = 2, work_us = 200, sleep_ms;
static int do_fork, do_domain, do_async, do_wide, close_fds, hold_open, late_mark;
static const char *chdir_to, *crash, *wait_kill, *count_file;
static int fork_first, end_with_exit, flood, async_open;
static const char *scribbles[8];
static int nscribbles;
static void scribble(void);
static nvtxRangeId_t prefetch;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t started = PTHREAD_COND_INITIALIZER;
static int prefetch_started;
static volatile double sink;

static void
work(int us)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	double x = 1;
	do {
		for (int i = 0; i < 1000; i++)
			x = sqrt(x + i);
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000 < us);
	sink = x;
}

static void
nap(int ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000 };
	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

static void *
loader(void *arg)
{
	int n = (int)(long)arg;
	char name[32];
	snprintf(name, sizeof(name), "loader-%d", n);
	nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), name);
	for (int s = 0; s < steps; s++) {
		nvtxRangePushA("load");
		work(work_us);
		nvtxRangePop();
		if (do_async && n == 0 && s == 0) {
			pthread_mutex_lock(&lock);
			while (!prefetch_started)
				pthread_cond_wait(&started, &lock);
			pthread_mutex_unlock(&lock);
			nvtxRangeEnd(prefetch);
		}
		if (sleep_ms)
			nap(sleep_ms);
	}
	return NULL;
}

static void
step(int s)
{
	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.category = 1;
	a.colorType = NVTX_COLOR_ARGB;
	a.color = 0xff76b900;
	a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
	a.payload.ullValue = (uint64_t)s;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "step";
	nvtxRangePushEx(&a);

	nvtxRangePushA("forward");
	for (int l = 0; l < layers; l++) {
		char name[32];  /* gone when the push returns: it must be copied */
		snprintf(name, sizeof(name), "layer.%d", l);
		nvtxRangePushA(name);
		memset(name, 'X', sizeof(name) - 1);
		work(work_us);
		nvtxRangePop();
	}
	nvtxRangePop();

	nvtxRangePushA("backward");
	work(2 * work_us);
	nvtxRangePop();

	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
	a.payload.dValue = 1.0 / (s + 1);
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "loss";
	nvtxMarkEx(&a);

	nvtxRangePushA("optimizer");
	work(work_us / 2);
	nvtxRangePop();

	nvtxRangePop();
}

static void
domain_range(void)
{
	nvtxDomainHandle_t d = nvtxDomainCreateA("sample");
	nvtxStringHandle_t io = nvtxDomainRegisterStringA(d, "io");
	nvtxDomainNameCategoryA(d, 2, "disk");
	nvtxNameCategoryA(1, "compute");
	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.category = 2;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = io;
	nvtxDomainRangePushEx(d, &a);
	work(work_us);
	nvtxDomainRangePop(d);
}

/* A thread that never stops recording: what it records after the
 * process's last flush, as exit() runs, is lost and counted. */
static int marker_started;

static void *
marker(void *arg)
{
	(void)arg;
	nvtxMarkA("until.exit");
	pthread_mutex_lock(&lock);
	marker_started = 1;
	pthread_cond_broadcast(&started);
	pthread_mutex_unlock(&lock);
	for (;;)
		nvtxMarkA("until.exit");
	return NULL;
}

static void
close_all_fds(void)
{
	/* what a daemon does: every descriptor but the standard ones */
	DIR *d = opendir("/proc/self/fd");
	int fds[1024], n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)) && n < 1024) {
		int fd = atoi(de->d_name);
		if (fd > 2 && fd != dirfd(d))
			fds[n++] = fd;
	}
	if (d)
		closedir(d);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	/* and reuses the numbers for files of its own */
	for (int i = 0; i < 4; i++)
		if (!fopen("/dev/null", "w"))
			break;
}

/* Fork `depth` deep before any NVTX call; returns in the last child,
 * exits in the others with their child's status. */
static void
fork_deep(int depth)
{
	for (int d = 0; d < depth; d++) {
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			exit(1);
		}
		if (pid == 0)
			continue;
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
}

/* A range's attributes: an ASCII message and a 64-bit payload, which
 * the loops set to the range's index. */
static nvtxEventAttributes_t
counted_attrs(const char *message)
{
	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = message;
	return a;
}

static void
flood_ranges(void)
{
	volatile int64_t *c = NULL;
	if (count_file) {
		int fd = open(count_file, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || ftruncate(fd, 16) < 0) {
			perror(count_file);
			exit(1);
		}
		void *m = mmap(NULL, 16, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (m == MAP_FAILED)
			exit(1);
		c = m;
		c[0] = getpid();
	}
	nvtxEventAttributes_t a = counted_attrs("flood");
	for (int i = 0; i < flood; i++) {
		a.payload.ullValue = (uint64_t)i;
		nvtxRangePushEx(&a);
		nvtxRangePop();
		if (c)
			c[1] = i + 1;
	}
	if (flood)
		printf("flood: %d ranges written\n", flood);
}

/* --async-open: many async ranges open at once, across flushes. */
static void
open_async_ranges(void)
{
	if (async_open <= 0)
		return;
	nvtxRangeId_t *ids = calloc((size_t)async_open, sizeof(*ids));
	if (!ids)
		exit(1);
	nvtxEventAttributes_t a = counted_attrs("open");
	for (int i = 0; i < async_open; i++) {
		a.payload.ullValue = (uint64_t)i;
		ids[i] = nvtxRangeStartEx(&a);
	}
	nap(sleep_ms);
	for (int i = async_open - 1; i >= 0; i--)
		nvtxRangeEnd(ids[i]);
	free(ids);
	printf("async-open: %d\n", async_open);
}

/* How the process ends, after its work. */
static int
end_as_told(int code, int sig)
{
	fflush(NULL);
	if (crash && !strcmp(crash, "abort"))
		abort();
	for (size_t mb = 0; crash && !strcmp(crash, "oom"); mb++) {
		char *p = malloc(1 << 20);
		if (!p)
			break;
		memset(p, (int)mb, 1 << 20);
	}
	if (crash && !strcmp(crash, "segv")) {
		volatile uintptr_t bad = 8;   /* a real fault, not raise() */
		*(volatile int *)bad = 1;
	}
	if (wait_kill) {
		/* its pid, for the killer; renamed: all or nothing */
		char tmp[4096], line[32];
		snprintf(tmp, sizeof(tmp), "%s.tmp", wait_kill);
		int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int n = snprintf(line, sizeof(line), "%d\n", (int)getpid());
		if (fd < 0 || write(fd, line, (size_t)n) != n || rename(tmp, wait_kill))
			perror(wait_kill);
		if (fd >= 0)
			close(fd);
		for (;;)
			pause();
	}
	if (sig) {
		/* the events of the last flush interval go with it (SIGKILL) */
		kill(getpid(), sig);
		nap(1000);
	}
	if (nscribbles)
		scribble();
	if (end_with_exit) {
		coverage_dump(); /* the injection library's counters */
		_exit(code);
	}
	return code;
}

/* --scribble: write each OFF=VALUE into our durable buffer file. */
static void
scribble(void)
{
	const char *dir = getenv("TRACEKIT_SPOOL");
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *de;
	char prefix[32];
	int files = 0;
	snprintf(prefix, sizeof(prefix), "%d-", (int)getpid());
	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0 || n < 4 ||
		    strcmp(de->d_name + n - 4, ".buf") != 0)
			continue;
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		int fd = open(path, O_WRONLY);
		for (int i = 0; fd >= 0 && i < nscribbles; i++) {
			unsigned long long off = 0, v = 0;
			if (sscanf(scribbles[i], "%llu=%llu", &off, &v) != 2)
				continue;
			uint8_t b[8];
			for (int k = 0; k < 8; k++)
				b[k] = (uint8_t)(v >> (8 * k)); /* the file is little-endian */
			if (pwrite(fd, b, 8, (off_t)off) != 8)
				perror(path);
		}
		if (fd >= 0) {
			close(fd);
			files++;
		}
	}
	if (d)
		closedir(d);
	printf("scribbled: %d\n", files);
	fflush(stdout);
}

static int
usage(void)
{
	fprintf(stderr, "usage: nvtx_sample [--steps N] [--layers N] [--threads N] "
	        "[--work US] [--sleep MS] [--fork] [--domain] [--async] [--wide] "
	        "[--close-fds] [--chdir DIR] [--hold-open] [--mark-until-exit] [--exit CODE] "
	        "[--signal SIG] [--fork-first N] [--quick-exit] [--crash abort|segv|oom] "
	        "[--wait-kill FILE] [--flood N] [--count-file FILE] [--async-open N] "
	        "[--scribble OFF=VALUE]\n");
	return 2;
}

int
main(int argc, char **argv)
{
	int code = 0, sig = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--steps") && v) steps = atoi(argv[++i]);
		else if (!strcmp(a, "--layers") && v) layers = atoi(argv[++i]);
		else if (!strcmp(a, "--threads") && v) threads = atoi(argv[++i]);
		else if (!strcmp(a, "--work") && v) work_us = atoi(argv[++i]);
		else if (!strcmp(a, "--sleep") && v) sleep_ms = atoi(argv[++i]);
		else if (!strcmp(a, "--exit") && v) code = atoi(argv[++i]);
		else if (!strcmp(a, "--signal") && v) sig = atoi(argv[++i]);
		else if (!strcmp(a, "--chdir") && v) chdir_to = argv[++i];
		else if (!strcmp(a, "--fork-first") && v) fork_first = atoi(argv[++i]);
		else if (!strcmp(a, "--crash") && v) crash = argv[++i];
		else if (!strcmp(a, "--wait-kill") && v) wait_kill = argv[++i];
		else if (!strcmp(a, "--flood") && v) flood = atoi(argv[++i]);
		else if (!strcmp(a, "--async-open") && v) async_open = atoi(argv[++i]);
		else if (!strcmp(a, "--count-file") && v) count_file = argv[++i];
		else if (!strcmp(a, "--scribble") && v && nscribbles < 8) scribbles[nscribbles++] = argv[++i];
		else if (!strcmp(a, "--quick-exit")) end_with_exit = 1;
		else if (!strcmp(a, "--fork")) do_fork = 1;
		else if (!strcmp(a, "--domain")) do_domain = 1;
		else if (!strcmp(a, "--async")) do_async = 1;
		else if (!strcmp(a, "--wide")) do_wide = 1;
		else if (!strcmp(a, "--close-fds")) close_fds = 1;
		else if (!strcmp(a, "--hold-open")) hold_open = 1;
		else if (!strcmp(a, "--mark-until-exit")) late_mark = 1;
		else return usage();
	}
	if (threads > 64)
		threads = 64;
	fork_deep(fork_first);

	pthread_t t[64];
	if (late_mark) {
		pthread_t m;
		pthread_create(&m, NULL, marker, NULL);
		pthread_detach(m);
		/* it records before the program goes on (a tracer may hold
		 * a new thread back a while) */
		pthread_mutex_lock(&lock);
		while (!marker_started)
			pthread_cond_wait(&started, &lock);
		pthread_mutex_unlock(&lock);
	}
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, loader, (void *)(long)i);
	if (do_async) {
		prefetch = nvtxRangeStartA("prefetch");
		pthread_mutex_lock(&lock);
		prefetch_started = 1;
		pthread_cond_broadcast(&started);
		pthread_mutex_unlock(&lock);
	}
	if (do_domain)
		domain_range();
	for (int s = 0; s < steps; s++) {
		step(s);
		if (s == 0 && close_fds)
			close_all_fds();
		if (s == 0 && chdir_to && chdir(chdir_to) < 0)
			perror(chdir_to);
		if (sleep_ms)
			nap(sleep_ms);
	}
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	if (do_wide)
		nvtxMarkW(L"wide-\u00fc");
	if (do_fork) {
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0) {
			nvtxRangePushA("child.work");
			work(work_us);
			nvtxRangePop();
			nvtxMarkA("child.done");
			exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
	}
	flood_ranges();
	open_async_ranges();
	if (hold_open)
		nvtxRangePushA("never.closed");
	return end_as_told(code, sig);
}
