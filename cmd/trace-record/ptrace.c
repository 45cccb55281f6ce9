/* SPDX-License-Identifier: MIT */
/*
 * Following every process of the run with ptrace.
 *
 * Why ptrace: it is the only unprivileged way to learn, exactly and for
 * every process, when it starts (fork, vfork, clone), what it runs
 * (exec), and how it ends, with its exit status or signal and its
 * resource use from wait4 -- statically linked programs included, and
 * the grandchildren whose status only their parent would otherwise
 * see.  Preloading a library into every process
 * instead misses static binaries, cannot see a signal death, and breaks
 * AddressSanitizer programs (whose runtime must come first).
 *
 * It costs a stop and a wake-up of trace-record for each fork, exec,
 * thread creation and signal (tests/bench/record-procs measures it on
 * a fork-heavy loop); nothing at all between them.  The tracee is
 * attached with PTRACE_SEIZE, so no SIGSTOP is injected; signals are
 * passed on unchanged, group-stops are kept with PTRACE_LISTEN (so a
 * stopped job stays stopped until SIGCONT), and exit and exec need no
 * extra stop.  A program that traces itself (a debugger, strace,
 * LeakSanitizer's check at exit) cannot run under ptrace: --no-ptrace
 * follows processes by scanning /proc instead, as trace-record does on
 * its own when ptrace is denied.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record.h"
#include "support.h"

#define OPTIONS (PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | \
                 PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC)

/* Threads we trace that are not a process's first thread: tid -> tgid. */
static pid_t *thread_tid, *thread_tgid;
static size_t nthreads, threads_cap;

static size_t
thread_home(pid_t tid)
{
	return (size_t)tkp_hash_u64((uint64_t)(uint32_t)tid) & (threads_cap - 1);
}

static void
thread_add(pid_t tid, pid_t tgid)
{
	if ((nthreads + 1) * 2 > threads_cap) {
		size_t n = threads_cap ? threads_cap * 2 : 256;
		pid_t *a = calloc(n, sizeof(*a)), *b = calloc(n, sizeof(*b));
		if (!a || !b)
			rec_die("out of memory");
		pid_t *oa = thread_tid, *ob = thread_tgid;
		size_t on = threads_cap;
		thread_tid = a;
		thread_tgid = b;
		threads_cap = n;
		nthreads = 0;
		for (size_t i = 0; i < on; i++)
			if (oa[i])
				thread_add(oa[i], ob[i]);
		free(oa);
		free(ob);
	}
	size_t h = thread_home(tid);
	while (thread_tid[h] && thread_tid[h] != tid)
		h = (h + 1) & (threads_cap - 1);
	if (!thread_tid[h])
		nthreads++;
	thread_tid[h] = tid;
	thread_tgid[h] = tgid;
}

static pid_t
thread_group(pid_t tid)
{
	if (!threads_cap)
		return 0;
	for (size_t h = thread_home(tid); thread_tid[h];
	     h = (h + 1) & (threads_cap - 1))
		if (thread_tid[h] == tid)
			return thread_tgid[h];
	return 0;
}

static void
thread_remove(pid_t tid)
{
	if (!threads_cap)
		return;
	size_t mask = threads_cap - 1, i = thread_home(tid);
	while (thread_tid[i] && thread_tid[i] != tid)
		i = (i + 1) & mask;
	if (!thread_tid[i])
		return;
	thread_tid[i] = 0;
	nthreads--;
	/* backward-shift deletion */
	for (size_t j = (i + 1) & mask; thread_tid[j]; j = (j + 1) & mask) {
		size_t h = thread_home(thread_tid[j]);
		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			thread_tid[i] = thread_tid[j];
			thread_tgid[i] = thread_tgid[j];
			thread_tid[j] = 0;
			i = j;
		}
	}
}

int
rec_ptrace_attach(pid_t pid)
{
	if (ptrace(PTRACE_SEIZE, pid, 0, (void *)(long)OPTIONS) < 0)
		return errno;
	return 0;
}

static void
resume(pid_t pid, int sig)
{
	/* ESRCH: killed meanwhile (SIGKILL does not wait for us) */
	ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig);
}

/* Tgid and parent of a task, from /proc. */
static int
task_ids(pid_t tid, pid_t *tgid, pid_t *ppid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int got = 0;
	while (fgets(buf, sizeof(buf), f) && got < 2) {
		int v;
		if (sscanf(buf, "Tgid: %d", &v) == 1) {
			*tgid = v;
			got++;
		} else if (sscanf(buf, "PPid: %d", &v) == 1) {
			*ppid = v;
			got++;
		}
	}
	fclose(f);
	return got == 2 ? 0 : -1;
}

/* A task we have not seen: a new process or a new thread. */
static void
new_task(const struct recorder *rc, pid_t tid)
{
	struct rec_proc *p = rec_proc_find(tid);
	/* an ended process is still seen while a zombie: a child can run,
	 * exit and be reported before its parent's fork event is, and
	 * that event must not add it a second time */
	if ((p && (!p->end || rec_proc_same(p))) || thread_group(tid))
		return;
	pid_t tgid = tid, ppid = 0;
	if (task_ids(tid, &tgid, &ppid) < 0)
		return;
	if (tgid != tid) {
		thread_add(tid, tgid);
		return;
	}
	/* it has not run yet: its start is now, and its spool will say
	 * the same (rec_proc_add writes it down before we resume it) */
	rec_proc_add(rc, tid, ppid, rec_now());
}

static struct rec_proc *
process_of(pid_t tid)
{
	struct rec_proc *p = rec_proc_find(tid);
	if (p && !p->end)
		return p;
	pid_t g = thread_group(tid);
	p = g ? rec_proc_find(g) : NULL;
	return p && !p->end ? p : NULL;
}

void
rec_ptrace_event(const struct recorder *rc, pid_t pid, int status,
                 const struct rusage *ru)
{
	int64_t now = rec_now();
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		struct rec_proc *p = rec_proc_find(pid);
		if (p && !p->end) {
			rec_proc_ended(rc, p, now, &status, ru);
			rec_spools_process_gone(pid, now, 0);
			rec_spool_remove_pid(pid);
		} else {
			thread_remove(pid);
		}
		return;
	}
	if (!WIFSTOPPED(status))
		return;
	new_task(rc, pid);
	int sig = WSTOPSIG(status);
	unsigned event = (unsigned)status >> 16;
	unsigned long msg = 0;
	switch (event) {
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
	case PTRACE_EVENT_CLONE:
		if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg) == 0)
			new_task(rc, (pid_t)msg);
		resume(pid, 0);
		break;
	case PTRACE_EVENT_EXEC: {
		/* a thread that execs takes over the first thread's id */
		if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg) == 0 &&
		    (pid_t)msg != pid)
			thread_remove((pid_t)msg);
		struct rec_proc *p = rec_proc_find(pid);
		if (p && !p->end) {
			rec_spools_process_gone(pid, now, 1);
			rec_proc_refresh(p);
			p->exec_ts = now;
		}
		resume(pid, 0);
		break;
	}
	case PTRACE_EVENT_STOP:
		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
		    sig == SIGTTOU)
			ptrace(PTRACE_LISTEN, pid, 0, 0); /* a group-stop */
		else
			resume(pid, 0); /* a new task's first stop */
		break;
	default: {
		/* a signal on its way: pass it on */
		struct rec_proc *p = process_of(pid);
		if (p && sig > 0 && sig < 65)
			p->last_signal_ts[sig] = now;
		resume(pid, sig);
		break;
	}
	}
}

void
rec_ptrace_free(void)
{
	free(thread_tid);
	free(thread_tgid);
	thread_tid = thread_tgid = NULL;
	nthreads = threads_cap = 0;
}
