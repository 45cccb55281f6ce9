/* SPDX-License-Identifier: MIT */
/*
 * Threads that push NVTX ranges as fast as they can for a while, and say
 * exactly how many each pushed, so that a recording of them can be
 * checked for loss: every range is in the trace or counted as dropped.
 *
 *   flood [--threads N] [--seconds S]
 *
 * Prints one line per thread, "tid=T ranges=N", then "total=N".
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

#define MAX_THREADS 256

static atomic_int stop;

struct worker {
	pthread_t thread;
	long tid;
	uint64_t ranges;
};

static void *
run(void *arg)
{
	struct worker *w = arg;
	w->tid = (long)syscall(SYS_gettid);
	uint64_t n = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int i = 0; i < 64; i++) {
			nvtxRangePushA("flood");
			nvtxRangePop();
		}
		n += 64;
	}
	w->ranges = n;
	return NULL;
}

int
main(int argc, char **argv)
{
	int threads = 16;
	double seconds = 10;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else {
			fprintf(stderr, "usage: flood [--threads N] [--seconds S]\n");
			return 2;
		}
	}
	if (threads < 1 || threads > MAX_THREADS || !(seconds > 0))
		return 2;
	nvtxMarkA("start");  /* loads the tool before the clock starts */
	static struct worker w[MAX_THREADS];
	for (int i = 0; i < threads; i++)
		if (pthread_create(&w[i].thread, NULL, run, &w[i]) != 0)
			return 1;
	struct timespec t = { (time_t)seconds,
	                      (long)((seconds - (double)(time_t)seconds) * 1e9) };
	while (nanosleep(&t, &t) < 0)
		;
	atomic_store(&stop, 1);
	uint64_t total = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(w[i].thread, NULL);
		printf("tid=%ld ranges=%llu\n", w[i].tid, (unsigned long long)w[i].ranges);
		total += w[i].ranges;
	}
	printf("total=%llu\n", (unsigned long long)total);
	return 0;
}
