/* SPDX-License-Identifier: MIT */
/*
 * libcupti_null.so: CUPTI collecting what trace-record collects by
 * default, with the records thrown away: the reference that tells
 * CUPTI's own cost from trace-record's in tests/bench/record-cuda.
 * Loaded by the CUDA driver through CUDA_INJECTION64_PATH, as
 * trace-record's library is; the same activity kinds, the same
 * CLOCK_REALTIME timestamp callback, buffers of the same size.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cupti.h>

#define BUFFER_BYTES (8u << 20)

int InitializeInjection(void); /* the driver's entry point */

static uint64_t CUPTIAPI
realtime_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void CUPTIAPI
requested(uint8_t **buf, size_t *size, size_t *max_records)
{
	*buf = aligned_alloc(8, BUFFER_BYTES);
	*size = *buf ? BUFFER_BYTES : 0;
	*max_records = 0;
}

static void CUPTIAPI
completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
	(void)ctx;
	(void)stream;
	(void)size;
	(void)valid;
	free(buf);
}

static void
at_exit(void)
{
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

int
InitializeInjection(void)
{
	static const CUpti_ActivityKind kinds[] = {
		CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT,
		CUPTI_ACTIVITY_KIND_STREAM, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
		CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
		CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_MEMORY2,
		CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
		CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API,
		CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_OVERHEAD,
	};
	cuptiActivityRegisterTimestampCallback(realtime_ns);
	cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	if (cuptiActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS)
		return 0;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		cuptiActivityEnable(kinds[i]);
	atexit(at_exit);
	return 1;
}
