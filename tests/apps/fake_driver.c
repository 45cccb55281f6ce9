/* SPDX-License-Identifier: MIT */
/*
 * fake_driver: what the CUDA driver does with an injection library,
 * without a driver: cuInit() loads $CUDA_INJECTION64_PATH and calls its
 * InitializeInjection().  For trace-record's tests on machines without
 * a GPU (tests/cli/trace-record-cuda.bats).
 *
 *   fake_driver [STEPS [term | wait FILE]]
 *
 * Prints what InitializeInjection returned (or why it could not be
 * called).  Then, STEPS times, an NVTX range "step" around a kernel
 * launch, when the CUPTI in use is tests/apps/fake_cupti.c (loaded
 * through TRACEKIT_CUPTI): it records the launch and the kernel as CUPTI
 * would.  "term": end by SIGTERM, as a killed program does.  "wait
 * FILE": write the pid into FILE once the launches are made, then wait
 * to be killed (SIGKILL, from the test).
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef TK_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#else
#define nvtxRangePushA(s) ((void)(s))
#define nvtxRangePop() ((void)0)
#endif

int
main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 0;
	const char *path = getenv("CUDA_INJECTION64_PATH");
	if (!path || !*path) {
		printf("no CUDA_INJECTION64_PATH\n");
		return 0;
	}
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("cannot load %s: %s\n", path, dlerror());
		return 1;
	}
	int (*init)(void) = NULL;
	void *f = dlsym(h, "InitializeInjection");
	memcpy(&init, &f, sizeof(f));
	if (!init) {
		/* what the driver does not say: the entry point is hidden */
		printf("no InitializeInjection in %s\n", path);
		return 1;
	}
	printf("InitializeInjection: %d\n", init());
	fflush(stdout);

	void (*launch)(const char *) = NULL;
	const char *cupti = getenv("TRACEKIT_CUPTI");
	void *c = cupti ? dlopen(cupti, RTLD_NOW | RTLD_NOLOAD) : NULL;
	if (c) {
		f = dlsym(c, "fake_launch");
		memcpy(&launch, &f, sizeof(f));
	}
	for (int i = 0; i < steps; i++) {
		nvtxRangePushA("step");
		if (launch)
			launch("_Z6kernelPfi");
		nvtxRangePop();
	}
	if (argc > 2 && strcmp(argv[2], "term") == 0)
		raise(SIGTERM);
	if (argc > 3 && strcmp(argv[2], "wait") == 0) {
		/* whole or not at all: the test reads it as soon as it exists */
		char tmp[4096];
		snprintf(tmp, sizeof(tmp), "%s.tmp", argv[3]);
		FILE *out = fopen(tmp, "w");
		if (!out || fprintf(out, "%ld\n", (long)getpid()) < 0 || fclose(out) != 0 ||
		    rename(tmp, argv[3]) != 0)
			return 1;
		for (;;)
			pause();
	}
	return 0;
}
