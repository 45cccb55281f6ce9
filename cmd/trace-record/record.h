/* SPDX-License-Identifier: MIT */
/*
 * trace-record's parts (cmd/trace-record/), one job each:
 *
 *   exec.c       finding the command, its environment, starting it
 *   procs.c      the processes of the run: table, /proc, events
 *   ptrace.c     following every process with ptrace
 *   scan.c       following them without ptrace (scanning /proc)
 *   spool.c      the spool directory and the spools being tailed
 *   recover.c    what a process that died left in its durable buffers
 *   bound.c      --max-size: the output within a bound, newest or first
 *   output.c     trace-record's own events, the merge, the output
 *   meta.c       run metadata
 *   cuda.c       CUDA: the driver, --cuda, processes not recorded
 *   die.c        trace-record's own failure (exit 125)
 *
 * trace-record.c (main) owns one struct recorder: the options and the
 * state of the run.  It changes it; the parts get it as a const pointer
 * and never call back up into main's file.  What a part owns alone (the
 * process table, the spools, the output, the ptrace thread table) stays
 * behind its functions.
 *
 * Exit statuses: the command's own, 128+N when a signal N killed it,
 * 126/127 when it cannot be run, 125 when trace-record fails.
 */
#ifndef TK_CMD_RECORD_H
#define TK_CMD_RECORD_H

#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>

#include "common/util.h"

#define REC_EXIT_FAIL 125
#define REC_EXIT_NOEXEC 126
#define REC_EXIT_NOTFOUND 127

static inline int64_t
rec_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* trace-record's own failure: one line, exit 125 (die.c). */
_Noreturn void rec_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* realloc(p, n), or rec_die("out of memory"). */
void *rec_xrealloc(void *p, size_t n);

/* ---- options --------------------------------------------------------- */

struct rec_options {
	const char *output;       /* NULL = stdout */
	const char *label;
	const char **meta;        /* "KEY=VALUE" */
	size_t nmeta, meta_cap;
	uint64_t repeat;
	int64_t delay, duration;  /* ns; duration 0 = no limit */
	int64_t sample_ns;        /* 0 = no sampling */
	int64_t flush_ns;
	char *capture;            /* NVTX range name (malloc'd), NULL = none */
	const char *capture_domain;
	uint64_t skip, warmup, active, cycles;
	int no_ptrace;
	uint64_t max_size;        /* --max-size bytes, 0 = no bound */
	const char *max_size_text; /* as given, for the reason of drops */
	int max_size_keep_first;  /* --max-size-keep=first */
	unsigned cuda;            /* TKI_CUDA_* kinds, 0 = none */
	int cuda_given;           /* --cuda was given */
	char **argv;              /* the command */
	int argc;
};

/* ---- the recorder ---------------------------------------------------- */

struct rec_proc;

/* One recording: made and changed by main(), read by the parts. */
struct recorder {
	struct rec_options opt;
	char *spool;              /* spool directory */
	int64_t boot;             /* wall-clock time of boot, for /proc starts */
	int ptrace;               /* following with ptrace */
	char tracking[160];       /* how processes are followed, for metadata */
	uint32_t run;             /* current run, from 1 */
	struct rec_proc *root;    /* the current run's command */
	int64_t run_start;
	int64_t win_begin, win_end; /* the current run's recording window */
	int recording;            /* the output is still being written */
};

/* ---- metadata (meta.c) ----------------------------------------------- */

struct tk_writer;
/* Find the git state of the working directory (before the run). */
void rec_meta_collect(void);
/* Write the run metadata: command, cwd, host, kernel, cpu, start, label,
 * git.*, recorder, record.*, then the user's --meta. */
void rec_meta_write(struct tk_writer *w, const struct rec_options *o,
                    int64_t start, const char *tracking);
/* The command line as one shell-quoted string (malloc'd). */
char *rec_shell_quote(char *const *argv, int argc);
/* ISO 8601 UTC with nanoseconds. */
void rec_iso_time(char *buf, size_t n, int64_t ns);

/* ---- CUDA (cuda.c) --------------------------------------------------- */

/* Look for a CUDA driver (in a child process). */
void rec_cuda_probe(void);
/* Warn when --cuda was given and cannot be honoured. */
void rec_cuda_check(const struct rec_options *o);
/* Metadata: record.cuda, cuda.driver, and why not when known now. */
void rec_cuda_meta_start(struct tk_writer *w, const struct rec_options *o);
/* Metadata at the end: why not, when no process said anything. */
void rec_cuda_meta_end(struct tk_writer *w, const struct rec_options *o);
/* What a process's status page says about CUDA (TKI_CUDA_STATE_*). */
void rec_cuda_process(const struct recorder *rc, pid_t pid, int state,
                      const char *note);

/* ---- starting the command (exec.c) ----------------------------------- */

/* Full path of the command as execvp would find it; on failure prints
 * the shell's message and returns NULL with *status 126 or 127. */
char *rec_find_command(const char *name, int *status);
/* Path of libtracekit-inject.so, or NULL (with the path tried). */
char *rec_inject_path(char *tried, size_t n);

struct rec_spawn {
	char *path;               /* from rec_find_command */
	char **argv;
	char **envp;              /* built by rec_env() */
	int stdout_to_stderr;     /* the trace goes to stdout */
	sigset_t sigmask;         /* to restore in the child */
	struct sigaction sigpipe; /* its action when trace-record started */
	pid_t pid;
	int go_fd;                /* write a byte: the child may exec */
	int err_fd;               /* read: exec's errno, or EOF when it worked */
};

/* Environment for the command: ours plus the TRACEKIT_ variables (the
 * spool, the current run's window). */
char **rec_env(const struct recorder *rc, const char *inject);
void rec_env_free(char **envp);
/* Fork the child, stopped before exec until rec_spawn_go(). */
int rec_spawn_start(struct rec_spawn *s);
/* Let it exec; returns 0, or the errno of a failed exec (reported). */
int rec_spawn_go(struct rec_spawn *s);

/* ---- processes (procs.c) --------------------------------------------- */

struct rec_proc {
	pid_t pid, ppid;
	int64_t start;            /* its identity start, ns */
	int64_t end;              /* 0 while alive */
	uint64_t start_ticks;     /* /proc start time: tells a reused pid */
	int64_t win_begin, win_end; /* its run's recording window */
	uint32_t run;             /* run it belongs to, from 1 */
	int root;                 /* the run's command itself */
	char *name;               /* comm */
	char *cmdline;            /* argv, NUL-separated */
	size_t cmdline_len;
	uint32_t track;           /* in our own writer, 0 = not defined */
	int defined_argv;         /* the definition's argv is current */
	int64_t exec_ts;          /* last exec, 0 = none seen */
	int64_t last_signal_ts[65];
	/* last /proc sample: for CPU % and for processes we cannot wait for */
	int64_t sample_ts;
	uint64_t cpu_ticks;
	uint64_t minflt, majflt;
	uint64_t rss, max_rss;    /* bytes */
	uint64_t nvcsw, nivcsw;
	uint32_t rss_track, cpu_track;
	int exit_signal;          /* the signal that killed it, or 0 */
	int status;               /* its wait status, when has_status */
	int has_status;
	int written;              /* its process event is out */
	uint32_t life_track;      /* in rec_lifetimes() when not our own */
};

/* Table of processes by pid (those alive and those that ended). */
struct rec_proc *rec_proc_find(pid_t pid);
/* A process of the current run seen for the first time: `start` 0
 * derives it from /proc.  Writes the p<pid> file so the process's spool
 * names it the same. */
struct rec_proc *rec_proc_add(const struct recorder *rc, pid_t pid,
                              pid_t ppid, int64_t start);
/* Read argv and name again (after exec). */
void rec_proc_refresh(struct rec_proc *p);
/* Whether the process under its pid in /proc is still this one. */
int rec_proc_same(const struct rec_proc *p);
/* Update the /proc sample of a live process; 0, or -1 if it is gone. */
int rec_proc_sample(struct rec_proc *p, int64_t now);
/* The process ended: write its process event.  `status` and `ru` from
 * wait4, or NULL when only its disappearance is known. */
void rec_proc_ended(const struct recorder *rc, struct rec_proc *p,
                    int64_t when, const int *status, const struct rusage *ru);
/* Write the processes still running as such (exit unknown). */
void rec_procs_finish(const struct recorder *rc, int64_t now);
/* Counters of every live process (--sample-interval). */
void rec_procs_sample_counters(const struct recorder *rc, int64_t now);
/* Earliest start of a live process whose event is still to come. */
int64_t rec_procs_hold(void);
/* Iterate: index from 0; NULL past the end. */
struct rec_proc *rec_proc_at(size_t i);
/* The process track in our own writer (defined on first use). */
uint32_t rec_proc_track(const struct recorder *rc, struct rec_proc *p);
/* Its track for its process and run events, in rec_lifetimes(). */
uint32_t rec_proc_life_track(const struct recorder *rc, struct rec_proc *p);
/* Define the process in writer `w` (as track `id`, or a new one when 0);
 * its track id, 0 on failure. */
uint32_t rec_proc_define(const struct recorder *rc, const struct rec_proc *p,
                         struct tk_writer *w, uint32_t id);
void rec_procs_free(void);

/* ---- following processes (ptrace.c, scan.c) -------------------------- */

/* Attach to a spawned child before it execs; 0, or errno when ptrace is
 * not permitted (the caller falls back to scanning). */
int rec_ptrace_attach(pid_t pid);
/* Handle one wait status of a traced task. */
void rec_ptrace_event(const struct recorder *rc, pid_t pid, int status,
                      const struct rusage *ru);
void rec_ptrace_free(void);
/* Scanning: find new descendants and notice those gone. */
void rec_scan_tick(const struct recorder *rc, int64_t now);
/* Handle one wait status without ptrace (our children and orphans). */
void rec_scan_reaped(const struct recorder *rc, pid_t pid, int status,
                     const struct rusage *ru);

/* ---- spools (spool.c) ------------------------------------------------ */

/* Create the spool directory (TMPDIR, else /tmp, /var/tmp, /dev/shm). */
char *rec_spool_create(void);
void rec_spool_remove(const char *dir);
/* Write p<pid>: the start we give the process. */
void rec_spool_write_pid(pid_t pid, int64_t start);
void rec_spool_remove_pid(pid_t pid);
/* Find new spools, read what the spools have, finish those whose
 * process is gone.  `final`: finish every one. */
void rec_spools_pump(const struct recorder *rc, int final);
/* A process exec'd or ended: its spools up to `when` are complete. */
void rec_spools_process_gone(pid_t pid, int64_t when, int exec);
/* Earliest begin of a range open in a live spool. */
int64_t rec_spools_hold(void);
/* For the merge's warnings about a spool. */
void rec_spool_warn(void *arg, const char *input, const char *message);
void rec_spools_free(void);

/* ---- recovery (recover.c) --------------------------------------------- */

/* Convert what a process gone without its last flush left in its
 * durable buffer file `path` into our own writer, on the process's
 * track `proc_track` and its threads; what is open ends at `end`.
 * Returns the events written that the process had counted as produced.
 * The records it had to drop (full buffers) since its last flush are
 * reported at `from`, with `full_why` as their reason (NULL: recorded
 * faster than they could be written). */
uint64_t rec_recover(const char *path, uint32_t proc_track, int64_t end,
                     int64_t from, const char *full_why);
/* How much of its spool the committed snapshot of the durable buffer
 * file `path` agrees with: where reading the spool stops before
 * rec_recover (protocol.h).  UINT64_MAX when there is nothing to
 * recover (closed, absent or not ours): all of the spool. */
uint64_t rec_recover_spool_limit(const char *path);

/* ---- the size bound (bound.c) ---------------------------------------- */

/* --max-size: the merge writes into the descriptor this returns (a file
 * of the spool), in chunks of rec_bound_chunk_bytes(). */
int rec_bound_open(const struct rec_options *o, const char *spool);
int rec_bound_active(void);
uint32_t rec_bound_chunk_bytes(void);
/* Take the chunks the merge completed; discard what the bound leaves
 * out (counted). */
void rec_bound_take(void);
/* The merge is done: write the trace to `out_fd`, merged with `lives`
 * (the process and run events, kept apart from the bound, in a writer
 * on `lives_fd` still open), where a dropped event per kind discarded
 * goes on the track `track(arg)`.  0, or -1 when the output could not
 * be written (said, unless *epipe: its reader went away). */
int rec_bound_finish(int out_fd, const char *out_name, const char *spool,
                     struct tk_writer *lives, int lives_fd,
                     uint32_t (*track)(void *), void *arg, int *epipe);
void rec_bound_free(void);

/* ---- output (output.c) ----------------------------------------------- */

/* Open the output (before the command runs); exits 125 on failure. */
void rec_out_open(const struct rec_options *o, const char *spool);
/* Our own writer: process events, counters, runs, drops, metadata. */
struct tk_writer *rec_self(void);
/* The writer of process and run events: our own, or with --max-size
 * one that the bound leaves alone (a process's event begins at its
 * start: the oldest, for a flight recorder, but what says how it
 * ended). */
struct tk_writer *rec_lifetimes(void);
/* Add a spool as an input of the merge; returns its index. */
int rec_out_add_input(struct tk_reader *r);
/* Seal our own chunk with watermark `w`, feed it, and merge what can
 * be merged; the output's watermarks are held at `hold`. */
void rec_out_step(int64_t w, int64_t hold);
/* Make what was merged reach the output file now. */
void rec_out_flush(void);
/* Everything: close our writer, merge to the end, close the output
 * (with --max-size, `track` gives the track of the dropped events:
 * rec_bound_finish).  Returns 0, or -1 when the output could not be
 * written. */
int rec_out_finish(uint32_t (*track)(void *), void *arg);
/* The output reader went away (EPIPE), or writing failed: the command
 * runs on without output. */
int rec_out_gone(void);

#endif
