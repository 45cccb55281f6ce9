/* SPDX-License-Identifier: MIT */
/*
 * A system call failure injector, loaded with LD_PRELOAD into a command
 * under test (tests/cli/trace-record-faults.bats): the calls that create
 * things (pipes, processes, memory files, signal descriptors, threads)
 * and poll(2), failing as they do when a process runs out of descriptors
 * or processes.  A sibling of faultio.c, which fails I/O on files; this
 * one fails the Nth call of one function, whatever it is called on.
 * Production code is not changed; only calls through the dynamic
 * symbols are seen.
 *
 * Everything is chosen by the environment; nothing happens without it:
 *   FAULTSYS_PROG=NAME  only in a process whose program is NAME (its
 *                       argv[0] without the directory), and not in the
 *                       children it forks: the command under test, not
 *                       the commands it runs
 *   FAULTSYS_FAIL=CALL:N:ERRNO  its Nth call of CALL (1 = the first)
 *                       fails with ERRNO (a name: EMFILE, EAGAIN,
 *                       ENOMEM, ENOSYS, EINVAL, ENFILE, EPERM, EIO), and
 *                       only that one.  CALL is one of pipe, pipe2,
 *                       fork, memfd_create, signalfd, poll,
 *                       posix_spawnp, posix_spawn, pthread_create
 *   FAULTSYS_AFTER=FILE  calls are counted only once FILE exists: a
 *                       failure at a point the command under test
 *                       reaches (its child makes FILE), not at a count
 *                       that depends on timing
 *   FAULTSYS_HIDE=STR   dlopen(3) of a name that contains STR fails as
 *                       for a file that does not exist (the name asked
 *                       for under /nonexistent-faultsys/, so that
 *                       dlerror says so): a library not installed
 *   FAULTSYS_BACKTRACE=1  the failed call's stack on stderr
 *   FAULTSYS_LOG=FILE   at exit, one line "PID CALL N" appended for
 *                       each call failed, so that a test knows that its
 *                       fault happened; with N 0 (FAULTSYS_FAIL=CALL:0:
 *                       ERRNO), "PID CALL count M": how many calls of
 *                       CALL it made, none failed
 *
 * Built a second time with -DFAULTSYS_ALLOC (libfaultalloc.so), it also
 * answers CALL alloc: malloc, calloc and realloc counted together, the
 * Nth failing with ENOMEM as when memory runs out.  That build replaces
 * the allocator's entry points, so it cannot go with a sanitizer's.
 */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <unistd.h>

/* The failure asked for, read once. */
static struct {
	int ready, on;
	int prog;     /* this is FAULTSYS_PROG */
	char call[32];
	unsigned long nth;
	int err;
	const char *after;       /* FAULTSYS_AFTER, or NULL */
} want;
static unsigned long calls;       /* calls of want.call so far */
static unsigned long failed_at;   /* the call that was failed, or 0 */
static int forked_child;          /* a child of fork(): no faults */
static int exiting;               /* exit() is past our handler: none */
static unsigned long hidden;      /* dlopen calls failed (FAULTSYS_HIDE) */

static const struct {
	const char *name;
	int value;
} errnos[] = { { "EMFILE", EMFILE }, { "EAGAIN", EAGAIN }, { "ENOMEM", ENOMEM },
	       { "ENOSYS", ENOSYS }, { "EINVAL", EINVAL }, { "ENFILE", ENFILE },
	       { "EPERM", EPERM },   { "EIO", EIO } };

static void
read_want(void)
{
	want.ready = 1;
	const char *prog = getenv("FAULTSYS_PROG");
	const char *fail = getenv("FAULTSYS_FAIL");
	if (!prog || strcmp(prog, program_invocation_short_name) != 0)
		return;
	want.prog = 1;
	if (!fail)
		return;
	char err[32];
	if (sscanf(fail, "%31[a-z_0-9]:%lu:%31[A-Z]", want.call, &want.nth, err) != 3)
		abort(); /* a mistake in the test */
	for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
		if (strcmp(errnos[i].name, err) == 0)
			want.err = errnos[i].value;
	if (!want.err)
		abort();
	want.after = getenv("FAULTSYS_AFTER");
	want.on = 1;
}

/* Should this call of `call` fail?  Then errno is set. */
static int
failing(const char *call)
{
	if (!want.ready)
		read_want();
	if (!want.on || forked_child || exiting || strcmp(call, want.call) != 0)
		return 0;
	if (want.after) {
		int saved = errno, absent = access(want.after, F_OK) != 0;
		errno = saved;
		if (absent)
			return 0;
	}
	if (__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED) != want.nth)
		return 0;
	failed_at = calls;
	if (getenv("FAULTSYS_BACKTRACE")) {
		/* where, for whoever writes a test (-rdynamic helps) */
		void *at[32];
		int n = backtrace(at, 32);
		backtrace_symbols_fd(at, n, 2);
	}
	errno = want.err;
	return 1;
}

static void *
real(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);
	if (!f)
		abort();
	return f;
}

/* Each wrapper: the real function, found on first use. */
#define NEXT(type, name)                                                      \
	static type next;                                                     \
	if (!next) {                                                          \
		void *f_ = real(name);                                        \
		memcpy(&next, &f_, sizeof(next));                             \
	}

int
pipe(int fd[2])
{
	typedef int (*fn)(int *);
	NEXT(fn, "pipe");
	return failing("pipe") ? -1 : next(fd);
}

int
pipe2(int fd[2], int flags)
{
	typedef int (*fn)(int *, int);
	NEXT(fn, "pipe2");
	return failing("pipe2") ? -1 : next(fd, flags);
}

pid_t
fork(void)
{
	typedef pid_t (*fn)(void);
	NEXT(fn, "fork");
	if (failing("fork"))
		return -1;
	pid_t pid = next();
	if (pid == 0)
		forked_child = 1;
	return pid;
}

int
memfd_create(const char *name, unsigned flags)
{
	typedef int (*fn)(const char *, unsigned);
	NEXT(fn, "memfd_create");
	return failing("memfd_create") ? -1 : next(name, flags);
}

int
signalfd(int fd, const sigset_t *mask, int flags)
{
	typedef int (*fn)(int, const sigset_t *, int);
	NEXT(fn, "signalfd");
	return failing("signalfd") ? -1 : next(fd, mask, flags);
}

int
poll(struct pollfd *fds, nfds_t n, int ms)
{
	typedef int (*fn)(struct pollfd *, nfds_t, int);
	NEXT(fn, "poll");
	return failing("poll") ? -1 : next(fds, n, ms);
}

/* posix_spawn reports its error as its result, not in errno. */
int
posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
             const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	typedef int (*fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
	                  const posix_spawnattr_t *, char *const[], char *const[]);
	NEXT(fn, "posix_spawnp");
	return failing("posix_spawnp") ? errno : next(pid, file, fa, attr, argv, envp);
}

int
posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
            const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	typedef int (*fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
	                  const posix_spawnattr_t *, char *const[], char *const[]);
	NEXT(fn, "posix_spawn");
	return failing("posix_spawn") ? errno : next(pid, path, fa, attr, argv, envp);
}

void *
dlopen(const char *name, int flags)
{
	typedef void *(*fn)(const char *, int);
	NEXT(fn, "dlopen");
	if (!want.ready)
		read_want();
	const char *hide = getenv("FAULTSYS_HIDE");
	if (!forked_child && want.prog && hide && *hide && name && strstr(name, hide)) {
		const char *base = strrchr(name, '/');
		char path[4096];
		snprintf(path, sizeof(path), "/nonexistent-faultsys/%s", base ? base + 1 : name);
		hidden++;
		return next(path, flags);
	}
	return next(name, flags);
}

/* Like posix_spawn, the error is the result. */
int
pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*start)(void *), void *arg)
{
	typedef int (*fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	NEXT(fn, "pthread_create");
	return failing("pthread_create") ? errno : next(t, attr, start, arg);
}

#ifdef FAULTSYS_ALLOC
/* glibc's own entry points: no dlsym, which itself allocates. */
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);

void *
malloc(size_t n)
{
	return failing("alloc") ? NULL : __libc_malloc(n);
}

void *
calloc(size_t k, size_t n)
{
	return failing("alloc") ? NULL : __libc_calloc(k, n);
}

void *
realloc(void *p, size_t n)
{
	return n && failing("alloc") ? NULL : __libc_realloc(p, n);
}
#endif

/* Nothing fails once exit() has begun to run what it runs last: the
 * handlers registered before main and the libraries' destructors, make
 * coverage's counters among them (gcov's writer needs memory, and its
 * crash would be no finding).  The handler is registered as main
 * begins, after the loader's own (which runs the destructors): the
 * handlers the command registers later run first and still see the
 * faults. */
static void
exit_begun(void)
{
	exiting = 1;
}

typedef int (*main_fn)(int, char **, char **);
static main_fn real_main;

static int
main_watched(int argc, char **argv, char **envp)
{
	atexit(exit_begun);
	return real_main(argc, argv, envp);
}

int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
                      void (*fini)(void), void (*rtld_fini)(void), void *stack_end);
int
__libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
                  void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
	typedef int (*fn)(main_fn, int, char **, void (*)(void), void (*)(void),
	                  void (*)(void), void *);
	NEXT(fn, "__libc_start_main");
	real_main = main;
	return next(main_watched, argc, argv, init, fini, rtld_fini, stack_end);
}

__attribute__((destructor)) static void
report(void)
{
	const char *log = getenv("FAULTSYS_LOG");
	if ((!failed_at && !hidden && !(want.on && want.nth == 0)) || forked_child ||
	    !log || !*log)
		return;
	FILE *f = fopen(log, "a");
	if (!f)
		return;
	if (hidden)
		fprintf(f, "%d dlopen hidden %lu\n", (int)getpid(), hidden);
	if (failed_at)
		fprintf(f, "%d %s %lu\n", (int)getpid(), want.call, failed_at);
	else if (want.on)
		fprintf(f, "%d %s count %lu\n", (int)getpid(), want.call, calls);
	fclose(f);
}
