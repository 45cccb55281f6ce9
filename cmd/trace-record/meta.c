/* SPDX-License-Identifier: MIT */
/*
 * Run metadata: the keys every tool agrees on (command, cwd, host,
 * kernel, cpu, start, label, git.commit, git.branch, git.dirty,
 * recorder), how the recording was made (record.*), and the user's
 * --meta KEY=VALUE, stored as given.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record.h"

extern char **environ;

char *
rec_shell_quote(char *const *argv, int argc)
{
	size_t cap = 1;
	for (int i = 0; i < argc; i++)
		cap += strlen(argv[i]) * 4 + 3;
	char *s = malloc(cap), *o = s;
	if (!s)
		rec_die("out of memory");
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (i)
			*o++ = ' ';
		int plain = *a != 0;
		for (const char *c = a; *c; c++)
			if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			            "0123456789_@%+=:,./-", *c))
				plain = 0;
		if (plain) {
			o = stpcpy(o, a);
			continue;
		}
		*o++ = '\'';
		for (const char *c = a; *c; c++) {
			if (*c == '\'')
				o = stpcpy(o, "'\\''");
			else
				*o++ = *c;
		}
		*o++ = '\'';
	}
	*o = 0;
	return s;
}

void
rec_iso_time(char *buf, size_t n, int64_t ns)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	gmtime_r(&t, &tm);
	char date[32];
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, n, "%s.%09" PRId64 "Z", date, ns % 1000000000);
}

/* First line a command prints, or "" (and its exit status). */
static int
command_line(char *out, size_t n, char *const argv[])
{
	out[0] = 0;
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	posix_spawn_file_actions_t fa;
	pid_t pid;
	/* each action allocates: one not recorded would leave the child
	 * writing to our stdout, the trace itself */
	int rc = posix_spawn_file_actions_init(&fa);
	if (rc == 0) {
		if ((rc = posix_spawn_file_actions_adddup2(&fa, pfd[1], 1)) == 0 &&
		    (rc = posix_spawn_file_actions_addopen(&fa, 2, "/dev/null",
		                                           O_WRONLY, 0)) == 0 &&
		    (rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null",
		                                           O_RDONLY, 0)) == 0)
			rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
		posix_spawn_file_actions_destroy(&fa);
	}
	close(pfd[1]);
	if (rc != 0) {
		close(pfd[0]);
		return -1;
	}
	size_t len = 0;
	char buf[4096];
	for (;;) {
		ssize_t k = read(pfd[0], buf, sizeof(buf));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		for (ssize_t i = 0; i < k && len + 1 < n; i++)
			out[len++] = buf[i];
	}
	close(pfd[0]);
	out[len] = 0;
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Git state of the working directory, found before the command runs
 * (git's own processes are not part of the run). */
static char git_commit[64], git_branch[256], git_dirty[2];

void
rec_meta_collect(void)
{
	char cwd[PATH_MAX], out[4096];
	if (!getcwd(cwd, sizeof(cwd)))
		return;
	char *rev[] = { "git", "-C", cwd, "rev-parse", "HEAD", "--abbrev-ref",
	                "HEAD", NULL };
	if (command_line(out, sizeof(out), rev) != 0)
		return;
	char *branch = strchr(out, '\n');
	if (!branch)
		return;
	*branch++ = 0;
	branch[strcspn(branch, "\n")] = 0;
	snprintf(git_commit, sizeof(git_commit), "%.63s", out);
	if (strcmp(branch, "HEAD") != 0)
		snprintf(git_branch, sizeof(git_branch), "%.255s", branch);
	/* no lock on the index: a build may be running git too */
	setenv("GIT_OPTIONAL_LOCKS", "0", 1);
	char *status[] = { "git", "-C", cwd, "status", "--porcelain",
	                   "--untracked-files=no", NULL };
	int rc = command_line(out, sizeof(out), status);
	unsetenv("GIT_OPTIONAL_LOCKS");
	if (rc == 0)
		snprintf(git_dirty, sizeof(git_dirty), "%s", out[0] ? "1" : "0");
}

static void
cpu_model(char *buf, size_t n)
{
	buf[0] = 0;
	FILE *f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return;
	char line[1024];
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "model name", 10) != 0)
			continue;
		char *v = strchr(line, ':');
		if (!v)
			continue;
		v++;
		while (*v == ' ' || *v == '\t')
			v++;
		v[strcspn(v, "\n")] = 0;
		snprintf(buf, n, "%s", v);
		break;
	}
	fclose(f);
}

static void
meta_ns(struct tk_writer *w, const char *key, int64_t ns)
{
	char b[32];
	tk_writer_meta(w, key, cmd_fmt_duration(b, sizeof(b), ns));
}

void
rec_meta_write(struct tk_writer *w, const struct rec_options *o, int64_t start,
               const char *tracking)
{
	char *cmd = rec_shell_quote(o->argv, o->argc);
	tk_writer_meta(w, "command", cmd);
	free(cmd);
	char cwd[PATH_MAX];
	if (getcwd(cwd, sizeof(cwd)))
		tk_writer_meta(w, "cwd", cwd);
	else
		cwd[0] = 0;
	char host[256];
	if (gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = 0;
		tk_writer_meta(w, "host", host);
	}
	struct utsname u;
	if (uname(&u) == 0) {
		char k[3 * sizeof(u.release)];
		snprintf(k, sizeof(k), "%s %s %s", u.sysname, u.release, u.machine);
		tk_writer_meta(w, "kernel", k);
	}
	char cpu[256];
	cpu_model(cpu, sizeof(cpu));
	if (cpu[0])
		tk_writer_meta(w, "cpu", cpu);
	char iso[64];
	rec_iso_time(iso, sizeof(iso), start);
	tk_writer_meta(w, "start", iso);
	if (o->label)
		tk_writer_meta(w, "label", o->label);
	if (git_commit[0])
		tk_writer_meta(w, "git.commit", git_commit);
	if (git_branch[0])
		tk_writer_meta(w, "git.branch", git_branch);
	if (git_dirty[0])
		tk_writer_meta(w, "git.dirty", git_dirty);
	char rv[64];
	snprintf(rv, sizeof(rv), "trace-record %s", tk_version());
	tk_writer_meta(w, "recorder", rv);

	tk_writer_meta(w, "record.processes", tracking);
	meta_ns(w, "record.flush_interval", o->flush_ns);
	if (o->sample_ns)
		meta_ns(w, "record.sample_interval", o->sample_ns);
	if (o->repeat > 1) {
		char b[32];
		snprintf(b, sizeof(b), "%" PRIu64, o->repeat);
		tk_writer_meta(w, "record.repeat", b);
	}
	if (o->delay)
		meta_ns(w, "record.delay", o->delay);
	if (o->duration)
		meta_ns(w, "record.duration", o->duration);
	if (o->max_size) {
		char b[160];
		snprintf(b, sizeof(b), "%s keep=%s", o->max_size_text,
		         o->max_size_keep_first ? "first" : "newest");
		tk_writer_meta(w, "record.max_size", b);
	}
	if (o->capture) {
		char b[1024];
		snprintf(b, sizeof(b),
		         "nvtx:%s%s%s skip=%" PRIu64 " warmup=%" PRIu64
		         " active=%" PRIu64 " repeat-cycles=%" PRIu64,
		         o->capture, o->capture_domain ? "@" : "",
		         o->capture_domain ? o->capture_domain : "", o->skip,
		         o->warmup, o->active, o->cycles);
		tk_writer_meta(w, "record.capture", b);
	}
	rec_cuda_meta_start(w, o);
	for (size_t i = 0; i < o->nmeta; i++) {
		char *kv = strdup(o->meta[i]);
		if (!kv)
			rec_die("out of memory");
		char *eq = strchr(kv, '=');
		*eq = 0;
		tk_writer_meta(w, kv, eq + 1);
		free(kv);
	}
}
