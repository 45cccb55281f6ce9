/* SPDX-License-Identifier: MIT */
/*
 * The cost of an NVTX push+pop pair: batches of pairs timed with
 * CLOCK_MONOTONIC, the median over batches (and threads).  Run bare (no
 * tool: NVTX calls return at once) and under trace-record to compare.
 *
 *   nvtx_bench [--pairs N] [--batch N] [--threads N] [--registered]
 *
 * Prints: "median_ns=X p10_ns=Y p90_ns=Z pairs=N".
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nvtx3/nvToolsExt.h>

static long pairs = 2000000, batch = 1000;
static int threads = 1, registered;
static nvtxDomainHandle_t domain;
static nvtxStringHandle_t name;
static double *samples;
static long nsamples;

static int64_t
mono(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void *
run(void *arg)
{
	long first = (long)arg, n = pairs / batch;
	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = name;
	for (long b = 0; b < n; b++) {
		int64_t t0 = mono();
		if (registered) {
			for (long i = 0; i < batch; i++) {
				nvtxDomainRangePushEx(domain, &a);
				nvtxDomainRangePop(domain);
			}
		} else {
			for (long i = 0; i < batch; i++) {
				nvtxRangePushA("layer.forward");
				nvtxRangePop();
			}
		}
		samples[first + b] = (double)(mono() - t0) / (double)batch;
	}
	return NULL;
}

static int
cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

int
main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pairs") && i + 1 < argc)
			pairs = atol(argv[++i]);
		else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
			batch = atol(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--registered"))
			registered = 1;
		else {
			fprintf(stderr, "usage: nvtx_bench [--pairs N] [--batch N] "
			        "[--threads N] [--registered]\n");
			return 2;
		}
	}
	if (threads < 1 || threads > 64 || batch < 1 || pairs < batch)
		return 2;
	/* the first call loads the tool: not part of the measurement */
	nvtxMarkA("start");
	domain = nvtxDomainCreateA("bench");
	name = nvtxDomainRegisterStringA(domain, "layer.forward");
	long per = pairs / batch;
	nsamples = per * threads;
	samples = calloc((size_t)nsamples, sizeof(*samples));
	pthread_t t[64];
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, run, (void *)(long)(i * per));
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	qsort(samples, (size_t)nsamples, sizeof(*samples), cmp);
	printf("median_ns=%.1f p10_ns=%.1f p90_ns=%.1f pairs=%ld\n",
	       samples[nsamples / 2], samples[nsamples / 10],
	       samples[nsamples * 9 / 10], per * batch * threads);
	free(samples);
	return 0;
}
