/* SPDX-License-Identifier: MIT */
/*
 * CUDA on trace-record's side: which activity kinds (--cuda), whether
 * the machine has a CUDA driver at all, and telling the user and the
 * trace when a process's GPU activity was not recorded.
 *
 * The recording itself happens in the programs (the injection library,
 * lib/inject/cuda.c), which the driver loads only if it is there: a
 * machine without libcuda.so.1 never calls the library, so trace-record
 * looks for the driver itself -- in a child, so that the driver is never
 * loaded into trace-record.  What the processes say (attached, or not and
 * why) comes through their status pages (spool.c).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record.h"
#include "support.h"
#include "inject/protocol.h"

static char driver[320];          /* "13.0", or empty */
static char no_driver[320];       /* why there is none, or empty */
static int processes_said;        /* a process attached, or said why not */
static int warned;

/* Look for the driver in a child: dlopen libcuda.so.1 and ask its
 * version (cuDriverGetVersion needs no cuInit). */
void
rec_cuda_probe(void)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return;
	}
	if (pid == 0) {
		char b[300];
		void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
		int v = 0;
		if (!h) {
			const char *e = dlerror();
			snprintf(b, sizeof(b), "-%s", e ? e : "libcuda.so.1: cannot be loaded");
		} else {
			int (*get)(int *) = NULL;
			void *f = dlsym(h, "cuDriverGetVersion");
			memcpy(&get, &f, sizeof(f));
			if (get && get(&v) == 0 && v > 0)
				snprintf(b, sizeof(b), "+%d.%d", v / 1000, v % 1000 / 10);
			else
				snprintf(b, sizeof(b), "+unknown version");
		}
		ssize_t k = write(p[1], b, strlen(b));
		tkp_coverage_dump();
		_exit(k < 0);
	}
	close(p[1]);
	char b[320];
	size_t n = 0;
	ssize_t k;
	while (n < sizeof(b) - 1 &&
	       ((k = read(p[0], b + n, sizeof(b) - 1 - n)) > 0 || (k < 0 && errno == EINTR)))
		if (k > 0)
			n += (size_t)k;
	close(p[0]);
	b[n] = 0;
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (b[0] == '+')
		snprintf(driver, sizeof(driver), "%s", b + 1);
	else if (b[0] == '-')
		snprintf(no_driver, sizeof(no_driver), "%s", b + 1);
}

/* Explicitly asked for, and impossible here: say so now.  Another
 * tool's CUDA injection library is replaced: say so too. */
void
rec_cuda_check(const struct rec_options *o)
{
	if (o->cuda && o->cuda_given && no_driver[0])
		cmd_warn("--cuda: no CUDA driver (%s): GPU activity cannot be recorded",
		         no_driver);
	const char *other = getenv("CUDA_INJECTION64_PATH");
	const char *base = other ? strrchr(other, '/') : NULL;
	base = base ? base + 1 : other;
	if (o->cuda && other && *other && strcmp(base, "libtracekit-inject.so") != 0)
		cmd_warn("CUDA_INJECTION64_PATH=%s is replaced for the command "
		         "(--cuda=none keeps it)", other);
}

void
rec_cuda_meta_start(struct tk_writer *w, const struct rec_options *o)
{
	char list[128];
	tki_cuda_format(o->cuda, list, sizeof(list));
	tk_writer_meta(w, "record.cuda", list);
	if (driver[0])
		tk_writer_meta(w, "cuda.driver", driver);
#ifndef TK_HAVE_CUPTI
	tk_writer_meta(w, "cuda", "not recorded: trace-record was built without CUPTI");
#else
	if (!o->cuda)
		tk_writer_meta(w, "cuda", "not recorded: --cuda=none");
#endif
}

/* At the end: when no process had a word to say about CUDA, why. */
void
rec_cuda_meta_end(struct tk_writer *w, const struct rec_options *o)
{
#ifdef TK_HAVE_CUPTI
	if (!o->cuda || processes_said)
		return;
	char b[400];
	if (no_driver[0])
		snprintf(b, sizeof(b), "not recorded: no CUDA driver (%s)", no_driver);
	else
		snprintf(b, sizeof(b), "not recorded: no process of the run initialised CUDA");
	tk_writer_meta(w, "cuda", b);
#else
	(void)w;
	(void)o;
#endif
}

/* A process's status page says something about CUDA: the first process
 * whose GPU activity could not be recorded is worth a line on stderr
 * (the trace has the rest). */
void
rec_cuda_process(const struct recorder *rc, pid_t pid, int state,
                 const char *note)
{
	if (state == TKI_CUDA_STATE_NONE || !rc->opt.cuda)
		return;
	processes_said = 1;
	if (state != TKI_CUDA_STATE_FAILED || warned || !rc->recording)
		return;
	warned = 1;
	struct rec_proc *p = rec_proc_find(pid);
	cmd_warn("pid %d (%s): GPU activity not recorded: %s", (int)pid,
	         p && p->name ? p->name : "?", note);
}
