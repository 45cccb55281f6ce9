/* SPDX-License-Identifier: MIT */
/*
 * A syscall fault injector, loaded with LD_PRELOAD into a command under
 * test (tests/cli/faults.bats): the failures that no file system gives
 * on demand, so that the error paths of the library and the commands
 * run for real.  Production code is not changed; only calls that go
 * through the dynamic symbols (the library's write, read, close and
 * access; not stdio's internal ones) are seen.
 *
 * Everything is chosen by the environment; nothing happens without it:
 *   FAULTIO_MATCH=STR   descriptors whose path (/proc/self/fd/N)
 *                       contains STR get the faults below
 *   FAULTIO_WRITE=eintr every other write(2) to them fails with EINTR
 *                       before writing anything
 *   FAULTIO_WRITE=short each write(2) writes at most 7 bytes
 *   FAULTIO_WRITE=enospc:N  writes past N bytes in all fail with ENOSPC
 *   FAULTIO_WRITE=zero  write(2) returns 0 (wrote nothing, no error)
 *   FAULTIO_WRITE=exit:N  the process ends with _exit(97) as soon as
 *                       its Nth write(2) to them is complete: a death
 *                       between two steps the code under test takes
 *                       one after the other (FAULTIO_LOG says nothing)
 *   FAULTIO_READ=eintr  every other read(2)/pread(2) fails with EINTR
 *   FAULTIO_READ=short  each read(2)/pread(2) reads at most 7 bytes
 *   FAULTIO_READ=eio:N  reads past N bytes in all fail with EIO
 *   FAULTIO_CLOSE=eio   close(2) closes, then says EIO
 *   FAULTIO_HIDE=STR    access(2) of a path that contains STR fails
 *                       with ENOENT
 *   FAULTIO_LOG=FILE    at exit, one line "PID N" appended: how many
 *                       calls were changed, so that a test knows that
 *                       its faults happened
 *   FAULTIO_THREADS=FILE  at exit, one line "PID NAME" appended for
 *                       each thread but the exiting one still running
 *                       (its /proc/self/task/T/comm): threads a command
 *                       should have stopped before it exits
 * Children inherit LD_PRELOAD and the variables: a recorded command is
 * affected only where its own files match.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* make coverage: the counters that _exit would not write (lib/support.h
 * says why): those of the libraries loaded with this one (the injection
 * library), which share one list of modules; not the executable's. */
#ifdef TK_COVERAGE
void __gcov_dump(void);
#define coverage_dump() __gcov_dump()
#else
#define coverage_dump() ((void)0)
#endif

typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*read_fn)(int, void *, size_t);
typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef int (*close_fn)(int);
typedef int (*access_fn)(const char *, int);

/* The byte counts of enospc:N and eio:N, over every matching call of
 * the process (the commands under test write and read on one thread at
 * a time where it matters; a race would only move the failing call). */
static unsigned long long written, read_bytes;
static unsigned write_calls, read_calls;
static unsigned long changed; /* calls whose result was changed */

static void *
real(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);
	if (!f)
		abort();
	return f;
}

/* Does descriptor fd name a path that contains FAULTIO_MATCH? */
static int
matches(int fd)
{
	const char *want = getenv("FAULTIO_MATCH");
	if (!want || !*want || fd < 0)
		return 0;
	char link[64], path[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = 0;
	return strstr(path, want) != NULL;
}

/* The fault of FAULTIO_<what> when it starts with `name`; its number
 * after ':' in *arg. */
static int
fault(const char *what, const char *name, unsigned long long *arg)
{
	const char *v = getenv(what);
	size_t n = strlen(name);
	if (!v || strncmp(v, name, n) != 0 || (v[n] && v[n] != ':'))
		return 0;
	if (arg)
		*arg = v[n] == ':' ? strtoull(v + n + 1, NULL, 10) : 0;
	return 1;
}

ssize_t
write(int fd, const void *buf, size_t n)
{
	static write_fn next;
	if (!next)
		next = (write_fn)real("write");
	unsigned long long limit;
	if (n == 0 || !matches(fd))
		return next(fd, buf, n);
	if (fault("FAULTIO_WRITE", "eintr", NULL) && write_calls++ % 2 == 0) {
		changed++;
		errno = EINTR;
		return -1;
	}
	if (fault("FAULTIO_WRITE", "zero", NULL)) {
		changed++;
		return 0;
	}
	if (fault("FAULTIO_WRITE", "short", NULL) && n > 7) {
		changed++;
		n = 7;
	}
	if (fault("FAULTIO_WRITE", "enospc", &limit)) {
		if (written >= limit) {
			changed++;
			errno = ENOSPC;
			return -1;
		}
		if (n > limit - written) {
			changed++;
			n = (size_t)(limit - written);
		}
	}
	ssize_t k = next(fd, buf, n);
	if (k > 0)
		written += (unsigned long long)k;
	if (fault("FAULTIO_WRITE", "exit", &limit) && ++write_calls >= limit) {
		coverage_dump();
		_exit(97);
	}
	return k;
}

/* The common part of read and pread: 1 with *ret set when the call is
 * answered here, else the length to ask for in *n. */
static int
read_fault(int fd, size_t *n, ssize_t *ret)
{
	unsigned long long limit;
	if (*n == 0 || !matches(fd))
		return 0;
	if (fault("FAULTIO_READ", "eintr", NULL) && read_calls++ % 2 == 0) {
		changed++;
		errno = EINTR;
		*ret = -1;
		return 1;
	}
	if (fault("FAULTIO_READ", "short", NULL) && *n > 7) {
		changed++;
		*n = 7;
	}
	if (fault("FAULTIO_READ", "eio", &limit)) {
		if (read_bytes >= limit) {
			changed++;
			errno = EIO;
			*ret = -1;
			return 1;
		}
		if (*n > limit - read_bytes) {
			changed++;
			*n = (size_t)(limit - read_bytes);
		}
	}
	return 0;
}

ssize_t
read(int fd, void *buf, size_t n)
{
	static read_fn next;
	if (!next)
		next = (read_fn)real("read");
	ssize_t ret;
	if (read_fault(fd, &n, &ret))
		return ret;
	ssize_t k = next(fd, buf, n);
	if (k > 0)
		read_bytes += (unsigned long long)k;
	return k;
}

ssize_t
pread(int fd, void *buf, size_t n, off_t at)
{
	static pread_fn next;
	if (!next)
		next = (pread_fn)real("pread");
	ssize_t ret;
	if (read_fault(fd, &n, &ret))
		return ret;
	ssize_t k = next(fd, buf, n, at);
	if (k > 0)
		read_bytes += (unsigned long long)k;
	return k;
}

/* glibc's pread is pread64 with 64-bit off_t: the same function. */
ssize_t pread64(int fd, void *buf, size_t n, off_t at);
ssize_t
pread64(int fd, void *buf, size_t n, off_t at)
{
	return pread(fd, buf, n, at);
}

int
close(int fd)
{
	static close_fn next;
	if (!next)
		next = (close_fn)real("close");
	int hit = fault("FAULTIO_CLOSE", "eio", NULL) && matches(fd);
	int rc = next(fd);
	if (hit && rc == 0) {
		changed++;
		errno = EIO;
		return -1;
	}
	return rc;
}

int
access(const char *path, int mode)
{
	static access_fn next;
	if (!next)
		next = (access_fn)real("access");
	const char *hide = getenv("FAULTIO_HIDE");
	if (hide && *hide && strstr(path, hide)) {
		changed++;
		errno = ENOENT;
		return -1;
	}
	return next(path, mode);
}

/* The names of the threads still running beside the exiting one, for
 * FAULTIO_THREADS.  A destructor runs in exit(), before the kernel ends
 * the other threads: those a command did not join are still listed. */
static void
report_threads(void)
{
	const char *log = getenv("FAULTIO_THREADS");
	if (!log || !*log)
		return;
	DIR *tasks = opendir("/proc/self/task");
	FILE *f = tasks ? fopen(log, "a") : NULL;
	if (!f) {
		if (tasks)
			closedir(tasks);
		return;
	}
	long self = (long)gettid();
	struct dirent *t;
	while ((t = readdir(tasks))) {
		char path[300], name[64] = "?";
		if (t->d_name[0] == '.' || strtol(t->d_name, NULL, 10) == self)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", t->d_name);
		FILE *comm = fopen(path, "r");
		if (!comm)
			continue; /* it ended meanwhile */
		if (fgets(name, sizeof(name), comm))
			name[strcspn(name, "\n")] = 0;
		fclose(comm);
		fprintf(f, "%d %s\n", (int)getpid(), name);
	}
	fclose(f);
	closedir(tasks);
}

/* How many calls were changed, for FAULTIO_LOG; stdio, since write(2)
 * here is the one above. */
__attribute__((destructor)) static void
report(void)
{
	report_threads();
	const char *log = getenv("FAULTIO_LOG");
	if (!log || !*log)
		return;
	FILE *f = fopen(log, "a");
	if (!f)
		return;
	fprintf(f, "%d %lu\n", (int)getpid(), changed);
	fclose(f);
}
