/* SPDX-License-Identifier: MIT */
/*
 * Setting up recording in a process: the options trace-record passed,
 * the spool and flusher, fork(), exit and fatal signals.
 *
 * The library is linked with -z nodelete: once loaded it stays, so the
 * atfork and signal handlers it registers never point into unmapped
 * code, even when an NVTX instance unloads it after a failed init.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support.h"
#include "tbuf.h"

struct tki_config tki_cfg = {
	.flush_ns = 1000000000,
	.win_begin = INT64_MIN,
	.win_end = INT64_MAX,
	.buffer_limit = 64u << 20,
};
atomic_int tki_on;

enum state {
	ST_FRESH,                /* nothing tried yet */
	ST_READY,                /* recording */
	ST_OFF,                  /* not recording (no recorder, or failed) */
	ST_FORKED,               /* a child of a recording process: its
	                            own spool comes with its first record */
};

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int state = ST_FRESH;
static int handlers_installed;

/* ---- options --------------------------------------------------------------- */

static int
env_i64(const char *name, int64_t *v)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return 0;
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*v = x;
	return 1;
}

static char *
env_dup(const char *name)
{
	const char *s = getenv(name);
	return s ? strdup(s) : NULL;
}

static int
read_config(void)
{
	struct tki_config *c = &tki_cfg;
	const char *spool = getenv(TKI_ENV_SPOOL);
	if (!spool || spool[0] != '/')
		return -1;      /* not started by trace-record */
	if (!(c->spool = strdup(spool)))
		return -1;
	int64_t v;
	if (env_i64(TKI_ENV_RECORDER, &v) > 0)
		c->recorder = (long)v;
	if (env_i64(TKI_ENV_FLUSH, &v) > 0 && v > 0)
		c->flush_ns = v;
	if (env_i64(TKI_ENV_BUFFER, &v) > 0 && v >= 2 * TKI_BLOCK_BYTES)
		c->buffer_limit = (size_t)v;
	c->boot = env_i64(TKI_ENV_BOOT, &v) > 0 ? v : tki_boot_ns();
	const char *w = getenv(TKI_ENV_WINDOW);
	long long b, e;
	if (w && sscanf(w, "%lld:%lld", &b, &e) == 2 && b <= e) {
		c->win_begin = b;
		c->win_end = e;
	}
	c->label = env_dup(TKI_ENV_LABEL);
	c->capture = env_dup(TKI_ENV_CAPTURE);
	c->capture_domain = env_dup(TKI_ENV_CAPTURE_DOMAIN);
	const char *s = getenv(TKI_ENV_SCHEDULE);
	unsigned long long skip = 0, warmup = 0, active = 1, cycles = 1;
	if (s)
		sscanf(s, "%llu,%llu,%llu,%llu", &skip, &warmup, &active, &cycles);
	c->skip = skip;
	c->warmup = warmup;
	c->active = active ? active : 1;
	c->cycles = cycles;
	return 0;
}

/* trace-record gone (killed): stop, and remove what we wrote. */
static int
recorder_alive(void)
{
	return tki_cfg.recorder <= 0 || kill((pid_t)tki_cfg.recorder, 0) == 0 ||
	       errno != ESRCH;
}

/* ---- exit and signals ------------------------------------------------------------ */

#ifdef TK_COVERAGE
/* make coverage only: a test program that ends with _exit calls this
 * first (found with dlsym), or what the library ran there is not
 * counted (lib/support.h). */
__attribute__((visibility("default"))) void tki_coverage_dump(void);
void
tki_coverage_dump(void)
{
	tkp_coverage_dump();
}
#endif

/* The library's destructor runs after the program's atexit handlers and
 * C++ static destructors (it was loaded after them), so it sees their
 * ranges too. */
static void __attribute__((destructor))
at_exit(void)
{
	if (atomic_load(&state) == ST_READY)
		tki_flusher_finish();
}

static const int fatal_signals[] = {
	SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGSEGV, SIGBUS, SIGFPE, SIGILL,
	SIGABRT,
};
#define NFATAL (sizeof(fatal_signals) / sizeof(fatal_signals[0]))

static void
on_fatal(int sig, siginfo_t *si, void *ctx)
{
	(void)ctx;
	int saved = errno;
	if (atomic_load(&state) == ST_READY)
		tki_flusher_finish_async(1000000000);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
	errno = saved;
	/* a fault happens again when we return; anything else is raised
	 * again, to be delivered with its default action on return */
	int fault = (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE ||
	             sig == SIGILL) && si && si->si_code > 0;
	tkp_coverage_dump();
	if (!fault)
		raise(sig);
}

/* Only where the program left the default action (which would kill it
 * without running atexit): a program's own handlers are left alone. */
static void
install_signal_handlers(void)
{
	for (size_t i = 0; i < NFATAL; i++) {
		struct sigaction old, sa;
		if (sigaction(fatal_signals[i], NULL, &old) < 0 ||
		    (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_fatal;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(fatal_signals[i], &sa, NULL);
	}
}

/* ---- fork -------------------------------------------------------------------- */

static void
before_fork(void)
{
	pthread_mutex_lock(&init_lock);
	tki_flusher_fork_prepare();
	pthread_mutex_lock(&tki_lock);
	tki_tbuf_lock();
	tki_registry_lock();
}

static void
after_fork_parent(void)
{
	tki_registry_unlock();
	tki_tbuf_unlock();
	pthread_mutex_unlock(&tki_lock);
	tki_flusher_fork_release();
	pthread_mutex_unlock(&init_lock);
}

static void
after_fork_child(void)
{
	pthread_mutex_init(&init_lock, NULL);
	tki_registry_after_fork();
	if (atomic_load(&state) != ST_READY && atomic_load(&state) != ST_FORKED) {
		tki_tbuf_unlock();
		pthread_mutex_unlock(&tki_lock);
		tki_flusher_fork_release();
		return;
	}
	atomic_store(&tki_on, 0);
	tki_flusher_after_fork();
	tki_threads_after_fork();
	tki_spool_abandon(0);
	tki_capture_init();
	atomic_store(&state, ST_FORKED);
}

/* ---- setting up ------------------------------------------------------------------- */

/* Spool and flusher for this process; init_lock held. */
static int
start_process(void)
{
	pthread_mutex_lock(&tki_lock);
	int rc = tki_spool_open();
	pthread_mutex_unlock(&tki_lock);
	if (rc < 0)
		return -1;
	if (tki_flusher_start() < 0) {
		/* no thread to flush (a limit on threads or processes): the
		 * process is not recorded, and its spool, closed at once,
		 * says so, or the trace would lose its NVTX ranges silently */
		char why[256];
		snprintf(why, sizeof(why), "not recorded (pid %ld): no flusher thread: %s",
		         (long)getpid(), strerror(errno));
		pthread_mutex_lock(&tki_lock);
		tk_writer_meta(tki_writer, "nvtx", why);
		tki_spool_close();
		pthread_mutex_unlock(&tki_lock);
		return -1;
	}
	atomic_store(&tki_on, 1);
	return 0;
}

int
tki_init(void)
{
	int s = atomic_load(&state);
	if (s == ST_READY)
		return 0;
	if (s == ST_FORKED)
		return tki_ensure_process();
	pthread_mutex_lock(&init_lock);
	if (atomic_load(&state) == ST_FRESH) {
		int ok = read_config() == 0 && recorder_alive();
		if (ok) {
			tki_capture_init();
			ok = start_process() == 0;
		}
		if (ok) {
			pthread_atfork(before_fork, after_fork_parent,
			               after_fork_child);
			if (!handlers_installed)
				install_signal_handlers();
			handlers_installed = 1;
		}
		atomic_store(&state, ok ? ST_READY : ST_OFF);
	}
	pthread_mutex_unlock(&init_lock);
	return atomic_load(&state) == ST_READY ? 0 : -1;
}

int
tki_ensure_process(void)
{
	int s = atomic_load(&state);
	if (s == ST_READY)
		return 0;
	if (s != ST_FORKED)
		return -1;
	pthread_mutex_lock(&init_lock);
	if (atomic_load(&state) == ST_FORKED) {
		int ok = recorder_alive() && start_process() == 0;
		atomic_store(&state, ok ? ST_READY : ST_OFF);
	}
	pthread_mutex_unlock(&init_lock);
	return atomic_load(&state) == ST_READY ? 0 : -1;
}

void
tki_stop_orphaned(void)
{
	atomic_store(&tki_on, 0);
	atomic_store(&state, ST_OFF);
}

int
tki_recorder_alive(void)
{
	return recorder_alive();
}
