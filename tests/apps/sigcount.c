/* SPDX-License-Identifier: MIT */
/*
 * Count the SIGINTs it gets in a while: `sigcount SECONDS FILE` writes
 * the count to FILE and exits 3 if it got any.  Unlike a shell's trap,
 * which runs once for signals that arrive together, it counts each.
 * FILE.ready exists once its handler is in place (the SECONDS count
 * from then): a test signals it then, however slowly it started.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t count;

static void
on_int(int sig)
{
	(void)sig;
	count++;
}

int
main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: sigcount SECONDS FILE\n");
		return 2;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_int;
	sigaction(SIGINT, &sa, NULL);
	char ready[4096];
	snprintf(ready, sizeof(ready), "%s.ready", argv[2]);
	FILE *r = fopen(ready, "w");
	if (!r)
		return 2;
	fclose(r);
	struct timespec left = { atoi(argv[1]), 0 };
	while (nanosleep(&left, &left) < 0)
		;
	FILE *f = fopen(argv[2], "w");
	if (!f)
		return 2;
	fprintf(f, "%d\n", (int)count);
	fclose(f);
	return count ? 3 : 0;
}
