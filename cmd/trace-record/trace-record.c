/* SPDX-License-Identifier: MIT */
/*
 * trace-record: run a command and record a trace of it -- every process
 * it starts (with exit status and resource use), the NVTX ranges of the
 * programs among them, and optionally their memory and CPU over time --
 * to standard output or a file, as it runs.
 *
 * The parts are listed in record.h.  This file holds the options and
 * the run: start the command, serve ptrace and signals, tail the spools
 * every tick, and write everything out at the end.  main() owns the
 * struct recorder and passes it down; no part calls back up here.
 *
 * Signals are blocked and read from a signalfd in the loop: no handler
 * runs, so no state here needs to be async-signal-safe.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record.h"
#include "inject/protocol.h"
#include "support.h"

/* The spool directory, for the atexit handler: a failure anywhere
 * (rec_die) removes it. */
static char *spool_dir;
/* The run, for the same handler: a failure while the command runs
 * stops it (stop_command); NULL outside the runs. */
static const struct recorder *running;

/* Signals for the command: received by trace-record, passed on. */
static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
                                 SIGUSR2 };
#define NFORWARDED (sizeof(forwarded) / sizeof(forwarded[0]))

static void
usage(void)
{
	printf("Usage: %s [OPTIONS] [--] COMMAND [ARG...]\n"
	       "Run COMMAND and write a trace of it (every process it starts, the\n"
	       "NVTX ranges of its programs, their resource use) to standard output.\n"
	       "\n"
	       "  -o, --output FILE          write the trace to FILE\n"
	       "  -l, --label TEXT           label the run (metadata and processes)\n"
	       "  -m, --meta KEY=VALUE       add run metadata (repeatable)\n"
	       "  -r, --repeat N             run the command N times, one trace\n"
	       "  -s, --sample-interval DUR  sample RSS and CPU of each process every DUR\n"
	       "      --delay DUR            start recording DUR after the command starts\n"
	       "      --duration DUR         stop recording DUR after it started\n"
	       "      --capture-range=nvtx:NAME[@DOMAIN]\n"
	       "                             record only during occurrences of the\n"
	       "                             NVTX range NAME, on this schedule:\n"
	       "      --skip N               skip the first N occurrences (0)\n"
	       "      --warmup N             then N not recorded (0)\n"
	       "      --active N             then record N (1)\n"
	       "      --repeat-cycles N      warmup+active cycles, 0 = no end (1)\n"
	       "      --flush-interval DUR   the programs flush their events (1s)\n"
	       "      --no-ptrace            follow processes by scanning /proc\n"
	       "      --max-size SIZE        keep the trace within SIZE (100M, 2G): the\n"
	       "                             newest data, the oldest discarded and counted\n"
	       "      --max-size-keep=WHICH  newest (the default) or first\n"
#ifdef TK_HAVE_CUPTI
	       "      --cuda=LIST            CUDA activity to record through CUPTI:\n"
	       "                             kernel,memcpy,memset,memory,runtime,driver,\n"
	       "                             sync,overhead (all, the default), or none\n"
#else
	       "      --cuda=LIST            CUDA activity (not built: no CUPTI 13.0)\n"
#endif
	       "  -h, --help                 show this help\n"
	       "  -V, --version              show the version\n"
	       "\n"
	       "DUR is a number with a unit: 10ms, 1.5s, 250us, 2m.  With the trace on\n"
	       "standard output, COMMAND's standard output goes to standard error.\n"
	       "\n"
	       "Exit status: COMMAND's, 128+N if signal N killed it, 126 or 127 if it\n"
	       "cannot be run, 125 if trace-record fails.\n",
	       cmd_name());
}

static _Noreturn void __attribute__((format(printf, 1, 2)))
usage_error(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	cmd_warn("%s", buf);
	fprintf(stderr, "Try '%s --help' for more information.\n", cmd_name());
	exit(REC_EXIT_FAIL);
}

/* trace-record failed (rec_die, exit 125) while the command runs: kill
 * it and the processes of the run that are still there, and wait for
 * the command.  Left running it would go on unrecorded, detached from
 * a trace-record whose exit status says the run is over; under ptrace
 * its tasks would be let go mid-stop. */
static void
stop_command(void)
{
	const struct rec_proc *root = running ? running->root : NULL;
	if (!root || root->end)
		return;
	kill(root->pid, SIGKILL);        /* our child: its pid is still its */
	const struct rec_proc *p;
	for (size_t i = 0; (p = rec_proc_at(i)); i++)
		if (p != root && !p->end && rec_proc_same(p))
			kill(p->pid, SIGKILL);
	for (;;) {
		int st;
		pid_t pid = waitpid(root->pid, &st, __WALL);
		if (pid < 0 && errno != EINTR)
			break;
		if (pid == root->pid && (WIFEXITED(st) || WIFSIGNALED(st)))
			break;
	}
}

static void
cleanup(void)
{
	stop_command();
	if (spool_dir)
		rec_spool_remove(spool_dir);
}

/* ---- options ---------------------------------------------------------------------- */

enum {
	OPT_DELAY = 256, OPT_DURATION, OPT_CAPTURE, OPT_SKIP, OPT_WARMUP,
	OPT_ACTIVE, OPT_CYCLES, OPT_FLUSH, OPT_NO_PTRACE, OPT_CUDA, OPT_MAX_SIZE,
	OPT_MAX_SIZE_KEEP,
};

static const struct option longopts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "label", required_argument, NULL, 'l' },
	{ "meta", required_argument, NULL, 'm' },
	{ "repeat", required_argument, NULL, 'r' },
	{ "sample-interval", required_argument, NULL, 's' },
	{ "delay", required_argument, NULL, OPT_DELAY },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "capture-range", required_argument, NULL, OPT_CAPTURE },
	{ "skip", required_argument, NULL, OPT_SKIP },
	{ "warmup", required_argument, NULL, OPT_WARMUP },
	{ "active", required_argument, NULL, OPT_ACTIVE },
	{ "repeat-cycles", required_argument, NULL, OPT_CYCLES },
	{ "flush-interval", required_argument, NULL, OPT_FLUSH },
	{ "no-ptrace", no_argument, NULL, OPT_NO_PTRACE },
	{ "cuda", required_argument, NULL, OPT_CUDA },
	{ "max-size", required_argument, NULL, OPT_MAX_SIZE },
	{ "max-size-keep", required_argument, NULL, OPT_MAX_SIZE_KEEP },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static int64_t
duration_arg(const char *name, const char *v, int64_t min)
{
	int64_t ns;
	if (cmd_parse_duration(v, &ns) < 0)
		usage_error("%s: invalid duration '%s' (e.g. 10ms, 1.5s)", name, v);
	if (ns < min)
		usage_error("%s: '%s' is too short", name, v);
	return ns;
}

static uint64_t
count_arg(const char *name, const char *v)
{
	uint64_t n;
	if (cmd_parse_uint(v, &n) < 0 || n > UINT32_MAX)
		usage_error("%s: invalid count '%s'", name, v);
	return n;
}

/* --cuda=LIST: the kinds (protocol.h); refused when the injection
 * library records no CUDA (built without CUPTI 13.0). */
static void
cuda_arg(struct rec_options *opt, const char *list)
{
	const char *bad;
	size_t len;
	if (tki_cuda_parse(list, &opt->cuda, &bad, &len) < 0)
		usage_error("--cuda: unknown activity '%.*s' (kernel, memcpy, "
		            "memset, memory, runtime, driver, api, sync, "
		            "overhead, all, none)", (int)len, bad);
	opt->cuda_given = 1;
#ifndef TK_HAVE_CUPTI
	if (opt->cuda)
		rec_die("--cuda: GPU recording is not built into this trace-record "
		        "(no CUPTI 13.0 under CUDA_HOME when it was built); record "
		        "without --cuda");
#endif
}

/* The smallest bound: a few chunks of the smallest size (bound.c). */
#define MAX_SIZE_MIN (64u << 10)

static void
max_size_arg(struct rec_options *opt, const char *v)
{
	size_t n;
	if (cmd_parse_size(v, &n) < 0)
		usage_error("--max-size: invalid size '%s' (e.g. 100M, 2G)", v);
	if (n < MAX_SIZE_MIN)
		usage_error("--max-size: '%s' is too small (at least 64K)", v);
	opt->max_size = n;
	opt->max_size_text = v;
}

static void
capture_arg(struct rec_options *opt, const char *v)
{
	if (strncmp(v, "nvtx:", 5) != 0 || !v[5])
		usage_error("--capture-range: expected nvtx:NAME[@DOMAIN], not '%s'", v);
	char *name = strdup(v + 5);
	if (!name)
		rec_die("out of memory");
	char *at = strrchr(name, '@');
	if (at) {
		*at = 0;
		opt->capture_domain = at[1] ? at + 1 : NULL;
	}
	if (!*name)
		usage_error("--capture-range: the range has no name");
	opt->capture = name;
}

static void
parse_options(struct rec_options *opt, int argc, char **argv)
{
	int schedule = 0, keep = 0, c;
	opt->repeat = 1;
	opt->flush_ns = 1000000000;
	opt->active = 1;
	opt->cycles = 1;
#ifdef TK_HAVE_CUPTI
	opt->cuda = TKI_CUDA_ALL;
#endif
	while ((c = getopt_long(argc, argv, "+:o:l:m:r:s:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': opt->output = optarg; break;
		case 'l': opt->label = optarg; break;
		case 'm': {
			const char *eq = strchr(optarg, '=');
			if (!eq || eq == optarg)
				usage_error("--meta: expected KEY=VALUE, not '%s'", optarg);
			const char **m = tkp_grow(opt->meta, &opt->meta_cap,
			                          opt->nmeta + 1, sizeof(*m));
			if (!m)
				rec_die("out of memory");
			m[opt->nmeta++] = optarg;
			opt->meta = m;
			break;
		}
		case 'r':
			opt->repeat = count_arg("--repeat", optarg);
			if (!opt->repeat)
				usage_error("--repeat: at least 1");
			break;
		case 's': opt->sample_ns = duration_arg("--sample-interval", optarg, 1000000); break;
		case OPT_DELAY: opt->delay = duration_arg("--delay", optarg, 0); break;
		case OPT_DURATION: opt->duration = duration_arg("--duration", optarg, 1); break;
		case OPT_CAPTURE: capture_arg(opt, optarg); break;
		case OPT_SKIP: opt->skip = count_arg("--skip", optarg); schedule = 1; break;
		case OPT_WARMUP: opt->warmup = count_arg("--warmup", optarg); schedule = 1; break;
		case OPT_ACTIVE:
			opt->active = count_arg("--active", optarg);
			if (!opt->active)
				usage_error("--active: at least 1");
			schedule = 1;
			break;
		case OPT_CYCLES: opt->cycles = count_arg("--repeat-cycles", optarg); schedule = 1; break;
		case OPT_FLUSH: opt->flush_ns = duration_arg("--flush-interval", optarg, 1000000); break;
		case OPT_NO_PTRACE: opt->no_ptrace = 1; break;
		case OPT_CUDA: cuda_arg(opt, optarg); break;
		case OPT_MAX_SIZE: max_size_arg(opt, optarg); break;
		case OPT_MAX_SIZE_KEEP:
			if (strcmp(optarg, "newest") == 0)
				opt->max_size_keep_first = 0;
			else if (strcmp(optarg, "first") == 0)
				opt->max_size_keep_first = 1;
			else
				usage_error("--max-size-keep: expected newest or first, "
				            "not '%s'", optarg);
			keep = 1;
			break;
		case 'h': usage(); exit(cmd_finish(0));
		case 'V': cmd_version();
		case ':':
			usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			if (optopt)
				usage_error("unknown option '-%c'", optopt);
			usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (schedule && !opt->capture)
		usage_error("--skip, --warmup, --active and --repeat-cycles need "
		            "--capture-range");
	if (keep && !opt->max_size)
		usage_error("--max-size-keep needs --max-size");
	if (optind >= argc)
		usage_error("no command to record");
	opt->argv = argv + optind;
	opt->argc = argc - optind;
#ifndef TK_HAVE_NVTX
	if (opt->capture)
		rec_die("--capture-range: this trace-record was built without the "
		        "NVTX headers");
#endif
}

static void
free_options(struct rec_options *opt)
{
	free(opt->meta);
	free(opt->capture);
}

/* ---- signals --------------------------------------------------------------------- */

/* Whether a process has `sig` pending (it got a signal sent to its group). */
static int
pending(pid_t pid, int sig)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	int found = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long mask;
		if ((sscanf(line, "SigPnd: %llx", &mask) == 1 ||
		     sscanf(line, "ShdPnd: %llx", &mask) == 1) &&
		    (mask >> (sig - 1)) & 1)
			found = 1;
	}
	fclose(f);
	return found;
}

/* The signals of the run: the signalfd, and the signals received that
 * are to be passed on to the command, each once its grace period is
 * over. */
#define FORWARD_GRACE 30000000
struct signals {
	int fd;
	struct {
		int sig;
		int64_t at;
	} queued[32];
	size_t nqueued;
};

/* Pass a signal on to the command, unless it got it already: a
 * terminal's ^C goes to the whole foreground group, and so does
 * `kill -INT -PGID`.  Under ptrace we see the command receive it: we
 * give it a moment to arrive before deciding. */
static void
queue_forward(struct signals *sg, const struct rec_proc *r,
              const struct signalfd_siginfo *si)
{
	if (!r || r->end || si->ssi_code == SI_KERNEL || sg->nqueued == 32)
		return;
	sg->queued[sg->nqueued].sig = (int)si->ssi_signo;
	sg->queued[sg->nqueued].at = rec_now();
	sg->nqueued++;
}

static int64_t
forward_deadline(const struct signals *sg)
{
	int64_t t = INT64_MAX;
	for (size_t i = 0; i < sg->nqueued; i++)
		if (sg->queued[i].at + FORWARD_GRACE < t)
			t = sg->queued[i].at + FORWARD_GRACE;
	return t;
}

static void
forward_due(struct signals *sg, const struct rec_proc *r, int64_t now)
{
	size_t k = 0;
	for (size_t i = 0; i < sg->nqueued; i++) {
		int sig = sg->queued[i].sig;
		int64_t at = sg->queued[i].at;
		if (!r || r->end || r->last_signal_ts[sig] >= at - FORWARD_GRACE)
			continue; /* it got it */
		if (now < at + FORWARD_GRACE) {
			sg->queued[k++] = sg->queued[i];
			continue;
		}
		if (!pending(r->pid, sig))
			kill(r->pid, sig);
	}
	sg->nqueued = k;
}

static void
reap(const struct recorder *rc)
{
	for (;;) {
		int st;
		struct rusage ru;
		pid_t pid = wait4(-1, &st, WNOHANG | __WALL, &ru);
		if (pid <= 0)
			break;
		if (rc->ptrace)
			rec_ptrace_event(rc, pid, st, &ru);
		else
			rec_scan_reaped(rc, pid, st, &ru);
	}
}

static void
serve_signals(const struct recorder *rc, struct signals *sg)
{
	struct signalfd_siginfo si[32];
	struct signalfd_siginfo fwd[32];
	size_t nfwd = 0;
	ssize_t k;
	while ((k = read(sg->fd, si, sizeof(si))) > 0) {
		for (size_t i = 0; i < (size_t)k / sizeof(si[0]); i++)
			if (si[i].ssi_signo != SIGCHLD && nfwd < 32)
				fwd[nfwd++] = si[i];
	}
	/* first what the processes did: a signal they got shows there */
	reap(rc);
	for (size_t i = 0; i < nfwd; i++)
		queue_forward(sg, rc->root, &fwd[i]);
	forward_due(sg, rc->root, rec_now());
}

/* The signals are blocked and read from a signalfd in the loop (no
 * handler runs); `old` is the mask to give back to the command. */
static void
setup_signals(struct signals *sg, sigset_t *old)
{
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaddset(&mask, forwarded[i]);
	sigprocmask(SIG_BLOCK, &mask, old);
	sg->fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sg->fd < 0)
		rec_die("signalfd: %s", strerror(errno));
}

/* ---- the run ------------------------------------------------------------------------ */

/* How long events may wait for a range or process that began before
 * them, in flush intervals: the injection library uses the same. */
#define LAG_INTERVALS 10

static int64_t
min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* Tail the spools and merge what can be merged. */
static void
tick(const struct recorder *rc)
{
	if (!rc->recording)
		return;
	/* before looking for spools: one made later begins later */
	int64_t t = rec_now();
	if (!rc->ptrace)
		rec_scan_tick(rc, t);
	if (rec_out_gone())
		return;
	rec_spools_pump(rc, 0);
	int64_t hold = min64(rec_spools_hold(), rec_procs_hold());
	if (rc->opt.repeat > 1 && rc->root && !rc->root->end)
		hold = min64(hold, rc->run_start);
	/* What begins before `hold` is still to come (lifetimes of live
	 * processes, ranges still open).  Wait for it a while, so that a
	 * short run comes out in begin order; past that, write on and let
	 * it come late (the output's watermarks stay held). */
	int64_t w = t - LAG_INTERVALS * rc->opt.flush_ns;
	rec_out_step(min64(t, hold > w ? hold : w), hold);
}

static void
write_run(const struct recorder *rc, struct rec_proc *root, int64_t end)
{
	if (rc->opt.repeat <= 1 || !rc->recording)
		return;
	struct tk_event e = { 0 };
	e.kind = TK_RUN;
	e.track = rec_proc_life_track(rc, root);
	e.ts = rc->run_start;
	e.dur = end > rc->run_start ? end - rc->run_start : 0;
	e.name = "run";
	e.u.run.index = rc->run;
	if (root->has_status && WIFEXITED(root->status)) {
		e.u.run.exit = TK_EXIT_NORMAL;
		e.u.run.exit_code = WEXITSTATUS(root->status);
	} else if (root->has_status && WIFSIGNALED(root->status)) {
		e.u.run.exit = TK_EXIT_SIGNAL;
		e.u.run.signal = (uint32_t)WTERMSIG(root->status);
	}
	tk_writer_event(rec_lifetimes(), &e);
}

/* --max-size: the dropped events go on the command's process. */
static uint32_t
root_track(void *arg)
{
	const struct recorder *rc = arg;
	return rc->root ? rec_proc_life_track(rc, rc->root) : 0;
}

/* Write out everything recorded; the command may still run.  Returns
 * -1 when the output could not be written. */
static int
finish_output(struct recorder *rc, int64_t now)
{
	if (!rc->recording)
		return 0;
	rec_spools_pump(rc, 0);
	rec_procs_finish(rc, now);
	rec_spools_pump(rc, 1);
	if (rc->root && !rc->root->end)
		write_run(rc, rc->root, now);
	rec_cuda_meta_end(rec_self(), &rc->opt);
	rc->recording = 0;
	return rec_out_finish(root_track, (void *)rc);
}

static int64_t
tick_ns(const struct rec_options *o)
{
	int64_t t = o->flush_ns / 4;
	return t < 10000000 ? 10000000 : t > 100000000 ? 100000000 : t;
}

/* Until the run's command exits. */
static int
serve(struct recorder *rc, struct signals *sg)
{
	const struct rec_options *o = &rc->opt;
	int out_failed = 0;
	int64_t now = rec_now();
	int64_t next_tick = now + tick_ns(o), next_flush = now + o->flush_ns;
	int64_t next_sample = o->sample_ns ? now + o->sample_ns : INT64_MAX;
	int last_run = rc->run == o->repeat;
	while (!rc->root->end) {
		int64_t next = min64(next_tick, min64(next_flush, next_sample));
		next = min64(next, forward_deadline(sg));
		if (o->duration && rc->recording && last_run)
			next = min64(next, rc->win_end + 2 * o->flush_ns);
		int64_t wait = next - rec_now();
		int ms = wait <= 0 ? 0 : (int)((wait + 999999) / 1000000);
		struct pollfd pfd = { sg->fd, POLLIN, 0 };
		if (poll(&pfd, 1, ms) < 0 && errno != EINTR)
			rec_die("poll: %s", strerror(errno));
		serve_signals(rc, sg);
		now = rec_now();
		if (rc->recording && now >= next_sample) {
			rec_procs_sample_counters(rc, now);
			next_sample += o->sample_ns;
			if (next_sample <= now)
				next_sample = now + o->sample_ns;
		}
		if (now >= next_tick) {
			tick(rc);
			next_tick = now + tick_ns(o);
		}
		if (now >= next_flush) {
			if (rc->recording)
				rec_out_flush();
			next_flush = now + o->flush_ns;
		}
		/* --duration: the trace is complete once the programs have
		 * flushed what they recorded before the end */
		if (o->duration && rc->recording && last_run &&
		    now >= rc->win_end + 2 * o->flush_ns &&
		    finish_output(rc, now) < 0)
			out_failed = 1;
	}
	return out_failed;
}

static int
exit_status(const struct rec_proc *p)
{
	if (!p->has_status)
		return REC_EXIT_FAIL;
	if (WIFEXITED(p->status))
		return WEXITSTATUS(p->status);
	if (WIFSIGNALED(p->status))
		return 128 + WTERMSIG(p->status);
	return REC_EXIT_FAIL;
}

/* The first run decides how processes are followed: with ptrace when
 * it is permitted; and the run's metadata is written then. */
static void
choose_tracking(struct recorder *rc, pid_t pid)
{
	int err = rc->opt.no_ptrace ? -1 : rec_ptrace_attach(pid);
	rc->ptrace = err == 0;
	if (rc->opt.no_ptrace) {
		snprintf(rc->tracking, sizeof(rc->tracking), "scan (--no-ptrace)");
	} else if (err) {
		cmd_warn("cannot trace processes (ptrace: %s); following them "
		         "through /proc: the exit status of their children is "
		         "not recorded", strerror(err));
		snprintf(rc->tracking, sizeof(rc->tracking),
		         "scan (ptrace not permitted: %s)", strerror(err));
	} else {
		snprintf(rc->tracking, sizeof(rc->tracking), "ptrace");
	}
	rec_meta_write(rec_self(), &rc->opt, rc->run_start, rc->tracking);
}

/* The child could not exec the command (error `err`): nothing of it to
 * record; wait for it to go.  Returns the shell's status, 126 or 127. */
static int
exec_failed(struct rec_proc *root, int err)
{
	root->written = 1;
	while (!root->end) {
		int st;
		pid_t pid = waitpid(root->pid, &st, __WALL);
		if (pid == root->pid && (WIFEXITED(st) || WIFSIGNALED(st)))
			root->end = rec_now();
		else if (pid == root->pid && WIFSTOPPED(st))
			ptrace(PTRACE_CONT, root->pid, 0, 0);
		else if (pid < 0 && errno != EINTR)
			break;
	}
	return err == ENOENT ? REC_EXIT_NOTFOUND : REC_EXIT_NOEXEC;
}

/* Run number rc->run of the command, from its start to its exit, as `sp`
 * says; returns its exit status.  *out_failed is set when the output
 * could not be written. */
static int
run_once(struct recorder *rc, struct signals *sg, struct rec_spawn *sp,
         const char *inject, int *out_failed)
{
	const struct rec_options *o = &rc->opt;
	rc->run_start = rec_now();
	rc->win_begin = o->delay ? rc->run_start + o->delay : INT64_MIN;
	rc->win_end = o->duration
	              ? (o->delay ? rc->win_begin : rc->run_start) + o->duration
	              : INT64_MAX;
	sp->envp = rec_env(rc, inject);
	rec_spawn_start(sp);
	if (rc->run == 1)
		choose_tracking(rc, sp->pid);
	else if (rc->ptrace && rec_ptrace_attach(sp->pid) != 0)
		rec_die("ptrace: %s", strerror(errno));
	rc->root = rec_proc_add(rc, sp->pid, getpid(), rec_now());
	rc->root->root = 1;
	int err = rec_spawn_go(sp);
	rec_env_free(sp->envp);
	sp->envp = NULL;
	if (err)
		return exec_failed(rc->root, err);
	/* it runs the command now (ptrace saw the exec already) */
	if (!rc->ptrace)
		rec_proc_refresh(rc->root);
	*out_failed |= serve(rc, sg);
	write_run(rc, rc->root, rc->root->end);
	return exit_status(rc->root);
}

/* The injection library for the programs; NULL when built without the
 * NVTX headers (there is none). */
static char *
inject_library(void)
{
#ifdef TK_HAVE_NVTX
	char tried[PATH_MAX];
	char *inject = rec_inject_path(tried, sizeof(tried));
	if (!inject)
		rec_die("injection library not found: %s (run 'make', or "
		        "'make install')", tried);
	return inject;
#else
	return NULL;
#endif
}

int
main(int argc, char **argv)
{
	/* cmd_init ignores SIGPIPE for us, not for the command */
	struct sigaction sigpipe;
	sigaction(SIGPIPE, NULL, &sigpipe);
	cmd_init("trace-record");
	struct recorder rc = { 0 };
	parse_options(&rc.opt, argc, argv);
	rc.recording = 1;
	rc.boot = tki_boot_ns();

	int status;
	char *path = rec_find_command(rc.opt.argv[0], &status);
	if (!path) {
		free_options(&rc.opt);
		return status;
	}
	char *inject = inject_library();
	rec_meta_collect();
	if (rc.opt.cuda) {
		rec_cuda_probe();
		rec_cuda_check(&rc.opt);
	}
	spool_dir = rc.spool = rec_spool_create();
	atexit(cleanup);
	rec_out_open(&rc.opt, rc.spool);

	struct signals sg = { .fd = -1 };
	struct rec_spawn sp = { 0 };
	sp.path = path;
	sp.argv = rc.opt.argv;
	sp.stdout_to_stderr = !rc.opt.output;
	sp.sigpipe = sigpipe;
	setup_signals(&sg, &sp.sigmask);
	/* orphans come back to us: their status and resource use too */
	prctl(PR_SET_CHILD_SUBREAPER, 1);

	int out_failed = 0;
	status = 0;
	running = &rc;
	for (rc.run = 1; rc.run <= rc.opt.repeat; rc.run++) {
		status = run_once(&rc, &sg, &sp, inject, &out_failed);
		if (status != 0)
			break; /* like a benchmark tool: a failed run ends the series */
	}
	if (finish_output(&rc, rec_now()) < 0 || out_failed)
		status = REC_EXIT_FAIL;
	cleanup();
	spool_dir = NULL;
	running = NULL;
	rec_procs_free();
	rec_spools_free();
	rec_ptrace_free();
	free_options(&rc.opt);
	free(path);
	free(inject);
	return cmd_finish(status);
}
