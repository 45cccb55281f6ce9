/* SPDX-License-Identifier: MIT */
/*
 * Starting the command: finding it like a shell would, its environment,
 * the injection library, and a child that waits before exec so that it
 * can be traced (and its identity written down) before it runs a single
 * instruction of the command.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record.h"
#include "inject/protocol.h"
#include "support.h"

extern char **environ;

#ifndef TK_INJECT_DIR
#define TK_INJECT_DIR "/usr/local/lib/tracekit"
#endif
#define INJECT_NAME "libtracekit-inject.so"

static int
executable(const char *path, int *err)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		*err = errno;
		return 0;
	}
	if (S_ISDIR(st.st_mode)) {
		*err = EISDIR;
		return 0;
	}
	if (access(path, X_OK) < 0) {
		*err = errno;
		return 0;
	}
	return 1;
}

/* A copy of the path found: NULL from here would read as not found. */
static char *
found(const char *path)
{
	char *copy = strdup(path);
	if (!copy)
		rec_die("out of memory");
	return copy;
}

char *
rec_find_command(const char *name, int *status)
{
	int err = ENOENT;
	if (strchr(name, '/')) {
		if (executable(name, &err))
			return found(name);
		cmd_warn("%s: %s", name, strerror(err));
		*status = err == ENOENT || err == ENOTDIR ? REC_EXIT_NOTFOUND
		                                          : REC_EXIT_NOEXEC;
		return NULL;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	int denied = 0;
	for (;;) {
		size_t n = strcspn(path, ":");
		char full[PATH_MAX];
		if (snprintf(full, sizeof(full), "%.*s%s%s", (int)n, path,
		             n ? "/" : "", name) < (int)sizeof(full)) {
			if (executable(full, &err))
				return found(full);
			if (err == EACCES)
				denied = 1;
		}
		if (!path[n])
			break;
		path += n + 1;
	}
	if (denied) {
		cmd_warn("%s: %s", name, strerror(EACCES));
		*status = REC_EXIT_NOEXEC;
	} else {
		cmd_warn("%s: command not found", name);
		*status = REC_EXIT_NOTFOUND;
	}
	return NULL;
}

char *
rec_inject_path(char *tried, size_t n)
{
	/* next to our binary: <prefix>/bin/.. /lib/tracekit, which is the
	 * build tree ($(O)/bin, $(O)/lib/tracekit) and the usual install */
	char exe[PATH_MAX], path[PATH_MAX + 64];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (k > 0) {
		exe[k] = 0;
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			snprintf(path, sizeof(path), "%s/../lib/tracekit/" INJECT_NAME,
			         exe);
			char *real = realpath(path, NULL);
			if (!real && errno == ENOMEM)
				rec_die("out of memory"); /* not "not found" */
			if (real && access(real, R_OK) == 0)
				return real;
			free(real);
		}
	}
	snprintf(path, sizeof(path), "%s/" INJECT_NAME, TK_INJECT_DIR);
	snprintf(tried, n, "%s", path);
	if (access(path, R_OK) == 0)
		return found(path);
	return NULL;
}

/* ---- environment --------------------------------------------------------------------- */

static void
push_env(char ***env, size_t *n, size_t *cap, char *s)
{
	if (!s)
		rec_die("out of memory");
	char **e = tkp_grow(*env, cap, *n + 2, sizeof(*e));
	if (!e)
		rec_die("out of memory");
	*env = e;
	(*env)[(*n)++] = s;
	(*env)[*n] = NULL;
}

static char *
env_pair(const char *key, const char *value)
{
	char *s;
	if (asprintf(&s, "%s=%s", key, value) < 0)
		return NULL;
	return s;
}

static char *
env_i64(const char *key, int64_t v)
{
	char b[32];
	snprintf(b, sizeof(b), "%" PRId64, v);
	return env_pair(key, b);
}

char **
rec_env(const struct recorder *rc, const char *inject)
{
	const struct rec_options *o = &rc->opt;
	char **env = NULL;
	size_t n = 0, cap = 0;
	for (char **e = environ; *e; e++) {
		/* ours replace those of an outer recording */
		if (strncmp(*e, "TRACEKIT_", 9) == 0 ||
		    (inject && strncmp(*e, "NVTX_INJECTION64_PATH=", 22) == 0) ||
		    (inject && o->cuda && strncmp(*e, "CUDA_INJECTION64_PATH=", 22) == 0))
			continue;
		push_env(&env, &n, &cap, strdup(*e));
	}
	if (inject)
		push_env(&env, &n, &cap, env_pair("NVTX_INJECTION64_PATH", inject));
	/* the CUDA driver loads the same library (lib/inject/cuda.c) */
	if (inject && o->cuda)
		push_env(&env, &n, &cap, env_pair("CUDA_INJECTION64_PATH", inject));
	char kinds[128];
	tki_cuda_format(o->cuda, kinds, sizeof(kinds));
	push_env(&env, &n, &cap, env_pair(TKI_ENV_CUDA, kinds));
	push_env(&env, &n, &cap, env_pair(TKI_ENV_SPOOL, rc->spool));
	push_env(&env, &n, &cap, env_i64(TKI_ENV_RECORDER, getpid()));
	push_env(&env, &n, &cap, env_i64(TKI_ENV_FLUSH, o->flush_ns));
	push_env(&env, &n, &cap, env_i64(TKI_ENV_BOOT, rc->boot));
	if (rc->win_begin != INT64_MIN || rc->win_end != INT64_MAX) {
		char b[64];
		snprintf(b, sizeof(b), "%" PRId64 ":%" PRId64, rc->win_begin,
		         rc->win_end);
		push_env(&env, &n, &cap, env_pair(TKI_ENV_WINDOW, b));
	}
	if (o->label)
		push_env(&env, &n, &cap, env_pair(TKI_ENV_LABEL, o->label));
	if (o->capture) {
		char b[128];
		push_env(&env, &n, &cap, env_pair(TKI_ENV_CAPTURE, o->capture));
		if (o->capture_domain)
			push_env(&env, &n, &cap,
			         env_pair(TKI_ENV_CAPTURE_DOMAIN, o->capture_domain));
		snprintf(b, sizeof(b), "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64,
		         o->skip, o->warmup, o->active, o->cycles);
		push_env(&env, &n, &cap, env_pair(TKI_ENV_SCHEDULE, b));
	}
	/* the user's settings */
	const char *const kept[] = { TKI_ENV_BUFFER, TKI_ENV_CUDA_BUFFER, TKI_ENV_CUPTI };
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		const char *v = getenv(kept[i]);
		if (v)
			push_env(&env, &n, &cap, env_pair(kept[i], v));
	}
	return env;
}

void
rec_env_free(char **envp)
{
	if (!envp)
		return;
	for (char **e = envp; *e; e++)
		free(*e);
	free(envp);
}

/* ---- the child ----------------------------------------------------------------------- */

static void
write_errno(int fd, int err)
{
	while (write(fd, &err, sizeof(err)) < 0 && errno == EINTR)
		;
}

int
rec_spawn_start(struct rec_spawn *s)
{
	int go[2], errp[2];
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0)
		rec_die("pipe: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		rec_die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(go[1]);
		close(errp[0]);
		/* what we changed for ourselves is not the command's (an
		 * ignored SIGHUP under nohup stays ignored) */
		sigaction(SIGPIPE, &s->sigpipe, NULL);
		sigprocmask(SIG_SETMASK, &s->sigmask, NULL);
		if (s->stdout_to_stderr && dup2(2, 1) < 0) {
			write_errno(errp[1], errno);
			tkp_coverage_dump();
			_exit(REC_EXIT_FAIL);
		}
		char c;
		ssize_t k;
		while ((k = read(go[0], &c, 1)) < 0 && errno == EINTR)
			;
		if (k != 1) {
			tkp_coverage_dump();
			_exit(REC_EXIT_FAIL); /* trace-record gave up */
		}
		tkp_coverage_dump();
		execve(s->path, s->argv, s->envp);
		int err = errno;
		tkp_coverage_undump();
		if (err == ENOEXEC) {
			/* a script without #!: a shell runs it, as execvp does */
			int argc = 0;
			while (s->argv[argc])
				argc++;
			char **v = calloc((size_t)argc + 2, sizeof(*v));
			if (v) {
				v[0] = "/bin/sh";
				v[1] = s->path;
				for (int i = 1; i < argc; i++)
					v[i + 1] = s->argv[i];
				tkp_coverage_dump();
				execve("/bin/sh", v, s->envp);
				tkp_coverage_undump();
			}
		}
		write_errno(errp[1], err);
		tkp_coverage_dump();
		_exit(err == ENOENT ? REC_EXIT_NOTFOUND : REC_EXIT_NOEXEC);
	}
	close(go[0]);
	close(errp[1]);
	s->pid = pid;
	s->go_fd = go[1];
	s->err_fd = errp[0];
	return 0;
}

int
rec_spawn_go(struct rec_spawn *s)
{
	char c = 'x';
	while (write(s->go_fd, &c, 1) < 0 && errno == EINTR)
		;
	close(s->go_fd);
	int err = 0;
	ssize_t k;
	while ((k = read(s->err_fd, &err, sizeof(err))) < 0 && errno == EINTR)
		;
	close(s->err_fd);
	if (k == (ssize_t)sizeof(err)) {
		cmd_warn("%s: %s", s->argv[0], strerror(err));
		return err;
	}
	return 0;
}
