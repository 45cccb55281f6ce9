/* SPDX-License-Identifier: MIT */
/*
 * trace-record's ptrace events (cmd/trace-record/ptrace.c) in an order
 * the kernel may give them but a test cannot force through a real
 * tracee: a child's own stops and its exit reported before its
 * parent's fork event, which names it once more while it is a zombie.
 * The statuses are made here (the child is real, not traced: resuming
 * it fails harmlessly); what is checked is the process table.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "tracekit.h"
#include "trace-record/record.h"

static char dir[] = "/tmp/tk-test-ptrace-XXXXXX";

/* The wait status of a ptrace event stop (PTRACE_EVENT_STOP). */
static int
event_stop(void)
{
	return (PTRACE_EVENT_STOP << 16) | (SIGTRAP << 8) | 0x7f;
}

static size_t
entries_of(pid_t pid)
{
	size_t n = 0;
	const struct rec_proc *p;
	for (size_t i = 0; (p = rec_proc_at(i)); i++)
		n += p->pid == pid;
	return n;
}

/* A child seen (its first stop), exited (its status), then named again
 * while a zombie: one process, ended once.  A new process under a
 * reused pid is another one: not tested here (pids cannot be chosen). */
TEST(ptrace_zombie_named_again)
{
	struct recorder rc = { 0 };
	rc.recording = 1;
	rc.run = 1;
	rc.win_begin = INT64_MIN;
	rc.win_end = INT64_MAX;
	rc.opt.output = "/dev/null";
	pid_t child = fork();
	if (child == 0)
		_exit(3);
	/* a zombie until waited for with WNOWAIT: it stays one */
	siginfo_t si;
	waitid(P_PID, (id_t)child, &si, WEXITED | WNOWAIT);
	rec_ptrace_event(&rc, child, event_stop(), NULL);
	CHECK_EQ_INT(entries_of(child), 1);
	struct rusage ru = { 0 };
	rec_ptrace_event(&rc, child, 3 << 8, &ru);     /* exited 3 */
	struct rec_proc *p = rec_proc_find(child);
	CHECK(p && p->end && p->has_status && WEXITSTATUS(p->status) == 3);
	/* its parent's fork event, late: the same stop path */
	rec_ptrace_event(&rc, child, event_stop(), NULL);
	CHECK_EQ_INT(entries_of(child), 1);
	p = rec_proc_find(child);
	CHECK(p && p->end && WEXITSTATUS(p->status) == 3);
	waitpid(child, NULL, 0);
}

/* ---- threads ----------------------------------------------------------------------- */

#define NTHREADS 300

static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int started, release;
static pid_t tids[NTHREADS];

static void *
waiter(void *arg)
{
	pthread_mutex_lock(&gate);
	tids[(size_t)arg] = (pid_t)syscall(SYS_gettid);
	started++;
	pthread_cond_broadcast(&gate_cv);
	/* the even ones go first */
	while (release < ((size_t)arg % 2 ? 2 : 1))
		pthread_cond_wait(&gate_cv, &gate);
	pthread_mutex_unlock(&gate);
	return NULL;
}

/* A signal on its way to a thread (a signal-delivery stop). */
static int
signal_stop(int sig)
{
	return (sig << 8) | 0x7f;
}

/* Threads of a process we follow, seen as they start (their first
 * stops: the table grows past 256 and 512), each a thread of that
 * process: a signal stop of any of them is the process's.  Every other
 * one ends (really: gone from /proc, so that nothing finds it again
 * there), in an order that moves the table's entries about: none of
 * them is found any more, the others still are.  A thread of a process
 * that ended is nobody's; the exit of a task never seen changes
 * nothing. */
TEST(ptrace_threads)
{
	struct recorder rc = { 0 };
	rc.recording = 1;
	rc.run = 1;
	rc.win_begin = INT64_MIN;
	rc.win_end = INT64_MAX;
	/* an exit before any thread was seen: nothing to remove */
	rec_ptrace_event(&rc, 999999, 0, NULL);
	pid_t self = getpid();
	struct rec_proc *me = rec_proc_add(&rc, self, getppid(), 0);
	pthread_t th[NTHREADS];
	for (size_t i = 0; i < NTHREADS; i++)
		if (pthread_create(&th[i], NULL, waiter, (void *)i) != 0)
			abort();
	pthread_mutex_lock(&gate);
	while (started < NTHREADS)
		pthread_cond_wait(&gate_cv, &gate);
	pthread_mutex_unlock(&gate);
	for (size_t i = 0; i < NTHREADS; i++)
		rec_ptrace_event(&rc, tids[i], event_stop(), NULL);
	CHECK_EQ_INT(entries_of(tids[0]), 0);        /* threads: no process */
	int ok = 1;
	for (size_t i = 0; i < NTHREADS; i += 7) {
		me->last_signal_ts[SIGUSR1] = 0;
		rec_ptrace_event(&rc, tids[i], signal_stop(SIGUSR1), NULL);
		ok &= me->last_signal_ts[SIGUSR1] != 0;
	}
	CHECK(ok);
	/* the even ones end (the exit of a thread: status 0) */
	pthread_mutex_lock(&gate);
	release = 1;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate);
	for (size_t i = 0; i < NTHREADS; i += 2) {
		pthread_join(th[i], NULL);
		rec_ptrace_event(&rc, tids[i], 0, NULL);
	}
	rec_ptrace_event(&rc, 999999, 0, NULL);      /* never seen */
	ok = 1;
	for (size_t i = 0; i < NTHREADS; i += 2) {
		me->last_signal_ts[SIGUSR2] = 0;
		rec_ptrace_event(&rc, tids[i], signal_stop(SIGUSR2), NULL);
		ok &= me->last_signal_ts[SIGUSR2] == 0;
	}
	CHECK(ok);
	ok = 1;
	for (size_t i = 1; i < NTHREADS; i += 2) {
		me->last_signal_ts[SIGUSR2] = 0;
		rec_ptrace_event(&rc, tids[i], signal_stop(SIGUSR2), NULL);
		ok &= me->last_signal_ts[SIGUSR2] != 0;
	}
	CHECK(ok);
	CHECK_EQ_INT(entries_of(tids[1]), 0);
	/* the process ended: its threads' signals are nobody's */
	me->end = 1;
	me->last_signal_ts[SIGUSR1] = 0;
	rec_ptrace_event(&rc, tids[1], signal_stop(SIGUSR1), NULL);
	CHECK_EQ_INT(me->last_signal_ts[SIGUSR1], 0);
	me->end = 0;
	pthread_mutex_lock(&gate);
	release = 2;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate);
	for (size_t i = 1; i < NTHREADS; i += 2)
		pthread_join(th[i], NULL);
}

int
main(void)
{
	if (!mkdtemp(dir))
		return 1;
	setenv("TMPDIR", dir, 1);
	cmd_init("test_ptrace");
	pid_t pid = fork();
	if (pid == 0) {
		/* the spool and output modules, once, in a child */
		char *spool = rec_spool_create();
		char out[200];
		snprintf(out, sizeof(out), "%s/out.tkt", dir);
		struct rec_options o = { 0 };
		o.output = out;
		rec_out_open(&o, spool);
		RUN(ptrace_zombie_named_again);
		RUN(ptrace_threads);
		rec_spool_remove(spool);
		unlink(out);
		exit(tap_done());
	}
	int st;
	waitpid(pid, &st, 0);
	rmdir(dir);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
