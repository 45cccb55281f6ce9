/* SPDX-License-Identifier: MIT */
/*
 * trace-record's ptrace events (cmd/trace-record/ptrace.c) in an order
 * the kernel may give them but a test cannot force through a real
 * tracee: a child's own stops and its exit reported before its
 * parent's fork event, which names it once more while it is a zombie.
 * The statuses are made here (the child is real, not traced: resuming
 * it fails harmlessly); what is checked is the process table.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
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
		rec_spool_remove(spool);
		unlink(out);
		exit(tap_done());
	}
	int st;
	waitpid(pid, &st, 0);
	rmdir(dir);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
