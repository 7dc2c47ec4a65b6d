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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__global__ void step(float *y, const float *x, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * y[i] + x[i];
}

// Calls made, by name, in order of first call.
static struct {
	const char *name;
	long n;
} calls[32];
static int ncalls;

static void count(const char *name)
{
	for (int i = 0; i < ncalls; i++)
		if (!strcmp(calls[i].name, name)) {
			calls[i].n++;
			return;
		}
	if (ncalls < (int)(sizeof(calls) / sizeof(calls[0]))) {
		calls[ncalls].name = name;
		calls[ncalls++].n = 1;
	}
}

static void check(cudaError_t r, const char *name)
{
	if (r != cudaSuccess) {
		fprintf(stderr, "runtime_app: %s failed: %s (%d)\n", name, cudaGetErrorName(r), (int)r);
		exit(1);
	}
}

#define STR_(x) #x
#define STR(x) STR_(x)
// Same scheme as driver_app: the name after macro expansion (cudaMemcpy_ptds with per-thread
// default streams, cudaMemcpy here).
#define RT(fn, ...)                                                                                \
	do {                                                                                       \
		count(STR(fn));                                                                    \
		check(fn(__VA_ARGS__), STR(fn));                                                   \
	} while (0)

static uint64_t fnv1a(const void *p, size_t n)
{
	const unsigned char *b = (const unsigned char *)p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

int main(int argc, char **argv)
{
	int launches = argc > 1 ? atoi(argv[1]) : 500;
	int n = argc > 2 ? atoi(argv[2]) : 1 << 20;
	int sync_every = argc > 3 ? atoi(argv[3]) : 100;
	if (launches < 1 || n < 1 || sync_every < 1) {
		fprintf(stderr, "usage: %s [LAUNCHES [ELEMENTS [SYNC_EVERY]]]\n", argv[0]);
		return 2;
	}
	size_t bytes = (size_t)n * sizeof(float);
	float *hx = (float *)malloc(bytes), *hy = (float *)malloc(bytes);
	if (!hx || !hy)
		return 1;
	for (int i = 0; i < n; i++) {
		hx[i] = (float)(i % 97) * 0.25f;
		hy[i] = (float)(i % 13);
	}

	float *dx, *dy;
	RT(cudaMalloc, (void **)&dx, bytes);
	RT(cudaMalloc, (void **)&dy, bytes);
	RT(cudaMemcpy, dx, hx, bytes, cudaMemcpyHostToDevice);
	RT(cudaMemcpy, dy, hy, bytes, cudaMemcpyHostToDevice);
	unsigned block = 256, grid = (unsigned)((n + block - 1) / block);
	for (int i = 0; i < launches; i++) {
		step<<<grid, block>>>(dy, dx, 0.5f, n);
		count("step<<<>>>");
		if ((i + 1) % sync_every == 0)
			RT(cudaDeviceSynchronize);
	}
	RT(cudaGetLastError);
	RT(cudaDeviceSynchronize);
	RT(cudaMemcpy, hy, dy, bytes, cudaMemcpyDeviceToHost);
	RT(cudaFree, dx);
	RT(cudaFree, dy);

	printf("launches %d elements %d sync_every %d\n", launches, n, sync_every);
	printf("checksum %016llx\n", (unsigned long long)fnv1a(hy, bytes));
	printf("calls {");
	for (int i = 0; i < ncalls; i++)
		printf("%s\"%s\": %ld", i ? ", " : "", calls[i].name, calls[i].n);
	printf("}\n");
	free(hx);
	free(hy);
	return 0;
}
