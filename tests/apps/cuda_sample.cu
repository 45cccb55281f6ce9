// SPDX-License-Identifier: MIT
//
// cuda_sample: a small CUDA program whose GPU work is known exactly, for
// the live tests of trace-record (tests/gpu/run.sh).
//
//   cuda_sample [ITERATIONS]   (1 to 200, default 3)
//   cuda_sample --query        exit 0 if a CUDA device can be used, else 1
//
// Work, in NVTX ranges "setup", "iteration" (one per iteration) and
// "teardown":
//   setup:      2 x cudaMalloc (device), 1 x cudaMemcpy HtoD, 1 x cudaMemset,
//               2 streams created (blocking: ordered with the default one)
//   each iteration:
//     fill_kernel(float*, float, int)                       x1  stream A
//     void saxpy_kernel<float>(float, float const*, float*, int)  x2  stream A
//     sample::scale_kernel(float*, float, int)              x3  stream B
//     cudaStreamSynchronize(B), cudaStreamSynchronize(A)
//     void reduce_kernel<256>(float const*, float*, int)    x1  default stream
//   teardown:   plain_c_kernel (extern "C", not mangled)    x1  default stream
//               1 x cudaMemcpy DtoH, cudaDeviceSynchronize, 2 x cudaFree
// It checks its own result and exits 1 if the GPU computed something else,
// 2 on a CUDA error.  A mark "done" ends it.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define CHECK(call)                                                         \
	do {                                                                \
		cudaError_t err_ = (call);                                  \
		if (err_ != cudaSuccess) {                                  \
			fprintf(stderr, "cuda_sample: %s: %s\n", #call,     \
			        cudaGetErrorString(err_));                  \
			exit(2);                                            \
		}                                                           \
	} while (0)

static const int N = 1 << 16;

__global__ void
fill_kernel(float *x, float v, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = v;
}

template <typename T>
__global__ void
saxpy_kernel(T a, const T *x, T *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

namespace sample {
__global__ void
scale_kernel(float *x, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= a;
}
} // namespace sample

// One block sums n values into out[0] (exact for the small integers used).
template <int BLOCK>
__global__ void
reduce_kernel(const float *x, float *out, int n)
{
	__shared__ float part[BLOCK];
	float s = 0;
	for (int i = threadIdx.x; i < n; i += BLOCK)
		s += x[i];
	part[threadIdx.x] = s;
	__syncthreads();
	for (int w = BLOCK / 2; w > 0; w /= 2) {
		if (threadIdx.x < w)
			part[threadIdx.x] += part[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		out[0] = part[0];
}

extern "C" __global__ void
plain_c_kernel(float *out)
{
	if (threadIdx.x == 0)
		out[1] = out[0] + 1.0f;
}

static int
query(void)
{
	int n = 0;
	cudaError_t err = cudaGetDeviceCount(&n);
	if (err != cudaSuccess || n < 1) {
		printf("no CUDA device: %s\n",
		       err != cudaSuccess ? cudaGetErrorString(err) : "none found");
		return 1;
	}
	cudaDeviceProp p;
	if (cudaGetDeviceProperties(&p, 0) == cudaSuccess)
		printf("%d CUDA device(s); device 0: %s\n", n, p.name);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--query") == 0)
		return query();
	int iterations = argc > 1 ? atoi(argv[1]) : 3;
	// sums stay exact in float up to 2^24 = N * 256
	if (iterations < 1 || iterations > 200) {
		fprintf(stderr, "usage: cuda_sample [ITERATIONS] | --query\n");
		return 2;
	}
	const int threads = 256, blocks = (N + threads - 1) / threads;

	nvtxRangePushA("setup");
	float *x, *y, *host;
	CHECK(cudaMalloc(&x, N * sizeof(float)));
	CHECK(cudaMalloc(&y, N * sizeof(float)));
	host = static_cast<float *>(malloc(N * sizeof(float)));
	if (!host)
		return 2;
	for (int i = 0; i < N; i++)
		host[i] = 1.0f;
	CHECK(cudaMemcpy(y, host, N * sizeof(float), cudaMemcpyHostToDevice));
	CHECK(cudaMemset(x, 0, N * sizeof(float)));
	cudaStream_t a, b;
	// Blocking streams: the legacy default stream waits for them and they
	// for it, so the next iteration's fill_kernel and saxpy_kernel wait
	// for the reduce_kernel that reads y and writes x.
	CHECK(cudaStreamCreateWithFlags(&a, cudaStreamDefault));
	CHECK(cudaStreamCreateWithFlags(&b, cudaStreamDefault));
	nvtxRangePop();

	// each iteration adds 2 * 0.5 * 1 to every y[i]
	float expect = 1.0f;
	for (int it = 0; it < iterations; it++) {
		nvtxRangePushA("iteration");
		fill_kernel<<<blocks, threads, 0, a>>>(x, 1.0f, N);
		saxpy_kernel<float><<<blocks, threads, 0, a>>>(0.5f, x, y, N);
		saxpy_kernel<float><<<blocks, threads, 0, a>>>(0.5f, x, y, N);
		CHECK(cudaStreamSynchronize(a));
		for (int k = 0; k < 3; k++)
			sample::scale_kernel<<<blocks, threads, 0, b>>>(x, 2.0f, N);
		CHECK(cudaStreamSynchronize(b));
		reduce_kernel<256><<<1, 256>>>(y, x, N);
		CHECK(cudaGetLastError());
		expect += 1.0f;
		nvtxRangePop();
	}

	nvtxRangePushA("teardown");
	plain_c_kernel<<<1, 32>>>(x);
	CHECK(cudaGetLastError());
	float out[2];
	CHECK(cudaMemcpy(out, x, sizeof(out), cudaMemcpyDeviceToHost));
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaStreamDestroy(a));
	CHECK(cudaStreamDestroy(b));
	CHECK(cudaFree(x));
	CHECK(cudaFree(y));
	free(host);
	nvtxRangePop();
	nvtxMarkA("done");

	// every y[i] is `expect`; reduce summed them into out[0]
	double want = (double)expect * N;
	if (fabs(out[0] - want) > 0.5 || fabs(out[1] - (want + 1)) > 0.5) {
		fprintf(stderr, "cuda_sample: wrong result %.1f (want %.1f)\n", out[0], want);
		return 1;
	}
	return 0;
}
