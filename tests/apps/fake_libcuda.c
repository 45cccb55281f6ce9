/* SPDX-License-Identifier: MIT */
/*
 * fakecuda/libcuda.so.1: a CUDA driver that only says its version, for
 * trace-record's driver probe on machines without one
 * (tests/cli/trace-record-cuda.bats puts its folder on LD_LIBRARY_PATH).
 *   FAKE_CUDA_VERSION=N     cuDriverGetVersion gives N (default 13000)
 *   FAKE_CUDA_VERSION=fail  it fails (CUDA_ERROR_UNKNOWN, 999)
 */
#include <stdlib.h>
#include <string.h>

int cuDriverGetVersion(int *version);

__attribute__((visibility("default"))) int
cuDriverGetVersion(int *version)
{
	const char *e = getenv("FAKE_CUDA_VERSION");
	if (e && strcmp(e, "fail") == 0)
		return 999;
	*version = e ? atoi(e) : 13000;
	return 0;
}
