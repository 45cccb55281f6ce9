/* SPDX-License-Identifier: MIT */
/*
 * Runs a libFuzzer target over saved inputs without libFuzzer, so that
 * `make check` replays every corpus file with any compiler (and under
 * the sanitizers with SAN=...).  Prints TAP: one test per file, each
 * run in a child process, so that a target's failed check (an abort, as
 * libFuzzer wants it) or a crash fails that file alone, by name.
 * Usage: fuzz_x-replay DIR|FILE...
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count;

static void
run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		printf("not ok %d - %s: cannot open\n", ++count, path);
		return;
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
	size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
	fclose(f);
	if (!buf || got != (size_t)n) {
		printf("not ok %d - %s: cannot read\n", ++count, path);
		free(buf);
		return;
	}
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		LLVMFuzzerTestOneInput(buf, got);
		/* exit, not _exit: what runs at exit must run (a --coverage
		 * build writes its counts then, LeakSanitizer checks) */
		exit(0);
	}
	free(buf);
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		printf("not ok %d - %s: cannot run it\n", ++count, path);
	else if (WIFSIGNALED(st))
		printf("not ok %d - %s: killed by signal %d\n", ++count, path, WTERMSIG(st));
	else if (WEXITSTATUS(st) != 0)
		printf("not ok %d - %s: exit %d\n", ++count, path, WEXITSTATUS(st));
	else
		printf("ok %d - %s\n", ++count, path);
	fflush(stdout);
}

static int
cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
run_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			names = realloc(names, cap * sizeof(*names));
		}
		size_t len = strlen(dir) + strlen(e->d_name) + 2;
		names[n] = malloc(len);
		snprintf(names[n++], len, "%s/%s", dir, e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp); /* same order every run */
	for (size_t i = 0; i < n; i++) {
		run_file(names[i]);
		free(names[i]);
	}
	free(names);
}

int
main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
			run_dir(argv[i]);
		else
			run_file(argv[i]);
	}
	printf("1..%d\n", count);
	return 0;
}
