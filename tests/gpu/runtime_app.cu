// runtime_app: driver_app.c's computation on the CUDA runtime API, for issue 5's proof
// (tests/gpu/proof.sh).
//
//   runtime_app [LAUNCHES [ELEMENTS [SYNC_EVERY]]]      (defaults 500, 1048576, 100)
//
// cudaMalloc, cudaMemcpy in, LAUNCHES <<<>>> launches, cudaDeviceSynchronize every SYNC_EVERY
// launches and at the end, cudaMemcpy back, cudaFree. Prints a checksum of the result (the same
// bits as driver_app with the same arguments: y = 0.5 * y + x is exact in the product) and the
// exact number of runtime calls it made. Which driver calls the runtime makes for them is not
// ours to know: that is what CUPTI and cuda-gdb count, and what cuhook is compared with. The
// runtime (linked statically by nvcc's default) reaches libcuda through dlopen and
// cuGetProcAddress, so an LD_PRELOAD wrapper sees none of those calls.
#include <cuda_runtime.h>

#include "app_common.h"

__global__ void step(float *y, const float *x, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * y[i] + x[i];
}

static void check(cudaError_t r, const char *name)
{
	if (r != cudaSuccess) {
		fprintf(stderr, "runtime_app: %s failed: %s (%d)\n", name, cudaGetErrorName(r), (int)r);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	struct app app;
	app_setup(argc, argv, &app);
	int n = app.n;
	size_t bytes = app.bytes;

	float *dx, *dy;
	CALL(cudaMalloc, (void **)&dx, bytes);
	CALL(cudaMalloc, (void **)&dy, bytes);
	CALL(cudaMemcpy, dx, app.hx, bytes, cudaMemcpyHostToDevice);
	CALL(cudaMemcpy, dy, app.hy, bytes, cudaMemcpyHostToDevice);
	unsigned block = 256, grid = (unsigned)((n + block - 1) / block);
	for (int i = 0; i < app.launches; i++) {
		step<<<grid, block>>>(dy, dx, 0.5f, n);
		count("step<<<>>>");
		if ((i + 1) % app.sync_every == 0)
			CALL(cudaDeviceSynchronize);
	}
	CALL(cudaGetLastError);
	CALL(cudaDeviceSynchronize);
	CALL(cudaMemcpy, app.hy, dy, bytes, cudaMemcpyDeviceToHost);
	CALL(cudaFree, dx);
	CALL(cudaFree, dy);

	app_report(&app);
	return 0;
}
