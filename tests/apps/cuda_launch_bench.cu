// SPDX-License-Identifier: MIT
//
// cuda_launch_bench: what a kernel launch costs the launching thread, for
// tests/bench/record-cuda (trace-record's overhead on a GPU).
//
//   cuda_launch_bench [--launches N] [--batch B]
//
// Launches an empty kernel N times (default 200000) on one stream, in
// batches of B (default 1000): each batch's launch loop is timed with
// CLOCK_MONOTONIC, then the stream is synchronised (untimed), so that the
// GPU never falls behind and the queue never fills.  Prints
//   launches=N batches=K median_ns=X min_ns=Y
// where X and Y are per launch: the median and the fastest batch.
// Exit 1 on a CUDA error.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include <cuda_runtime.h>

__global__ void
empty_kernel(int)
{
}

static double
now_ns()
{
	timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static bool
ok(cudaError_t err, const char *what)
{
	if (err == cudaSuccess)
		return true;
	fprintf(stderr, "cuda_launch_bench: %s: %s\n", what, cudaGetErrorString(err));
	return false;
}

int
main(int argc, char **argv)
{
	long launches = 200000, batch = 1000;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--launches") == 0)
			launches = atol(argv[i + 1]);
		else if (strcmp(argv[i], "--batch") == 0)
			batch = atol(argv[i + 1]);
	}
	if (launches < 1 || batch < 1 || batch > launches) {
		fprintf(stderr, "usage: cuda_launch_bench [--launches N] [--batch B]\n");
		return 2;
	}
	cudaStream_t s;
	if (!ok(cudaStreamCreate(&s), "cudaStreamCreate"))
		return 1;
	// CUDA's lazy set-up and the module load happen here, untimed
	empty_kernel<<<1, 32, 0, s>>>(0);
	if (!ok(cudaStreamSynchronize(s), "warm-up"))
		return 1;
	std::vector<double> per_launch;
	for (long done = 0; done + batch <= launches; done += batch) {
		double t0 = now_ns();
		for (long i = 0; i < batch; i++)
			empty_kernel<<<1, 32, 0, s>>>(static_cast<int>(i));
		double t1 = now_ns();
		if (!ok(cudaGetLastError(), "launch") ||
		    !ok(cudaStreamSynchronize(s), "cudaStreamSynchronize"))
			return 1;
		per_launch.push_back((t1 - t0) / batch);
	}
	std::sort(per_launch.begin(), per_launch.end());
	printf("launches=%ld batches=%zu median_ns=%.1f min_ns=%.1f\n",
	       static_cast<long>(per_launch.size()) * batch, per_launch.size(),
	       per_launch[per_launch.size() / 2], per_launch[0]);
	return 0;
}
