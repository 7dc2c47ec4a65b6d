/* driver_app: a CUDA program on the driver API alone, for issue 5's proof (tests/gpu/proof.sh).
 *
 *   driver_app [LAUNCHES [ELEMENTS [SYNC_EVERY]]]      (defaults 500, 1048576, 100)
 *
 * Loads a kernel from PTX (cuModuleLoadData: the PTX below is JIT-compiled by the driver), copies
 * two vectors in, launches the kernel LAUNCHES times on its own stream (even launches through
 * cuLaunchKernel, odd ones through cuLaunchKernelEx, so both entry points are exercised),
 * synchronizes the stream every SYNC_EVERY launches and the context at the end, copies the
 * result back and frees everything.
 *
 * It prints a checksum of the result and the exact number of calls it made of each driver
 * function, by the name of the symbol it called: cuda.h maps cuMemAlloc to cuMemAlloc_v2,
 * cuMemcpyHtoD to cuMemcpyHtoD_v2 and so on, and the CU() macro below takes the name after that
 * expansion, so the names are those of the exported entry points, the names cuhook and CUPTI
 * report. Those counts are the ground truth cuhook's are compared with.
 *
 * The kernel computes y = 0.5 * y + x: the product by 0.5 is exact, so the result does not
 * depend on whether the compiler fuses it into an FMA, and runtime_app.cu gets the same bits. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* step(float *y, const float *x, float a, int n): y[i] = a * y[i] + x[i] for i < n.
 * PTX ISA 7.0 for sm_70: the driver JIT-compiles it for whatever GPU is there. */
static const char ptx[] =
	".version 7.0\n"
	".target sm_70\n"
	".address_size 64\n"
	"\n"
	".visible .entry step(\n"
	"	.param .u64 step_y,\n"
	"	.param .u64 step_x,\n"
	"	.param .f32 step_a,\n"
	"	.param .u32 step_n\n"
	")\n"
	"{\n"
	"	.reg .pred %p<2>;\n"
	"	.reg .f32 %f<5>;\n"
	"	.reg .b32 %r<6>;\n"
	"	.reg .b64 %rd<8>;\n"
	"\n"
	"	ld.param.u64 %rd1, [step_y];\n"
	"	ld.param.u64 %rd2, [step_x];\n"
	"	ld.param.f32 %f1, [step_a];\n"
	"	ld.param.u32 %r1, [step_n];\n"
	"	mov.u32 %r2, %ctaid.x;\n"
	"	mov.u32 %r3, %ntid.x;\n"
	"	mov.u32 %r4, %tid.x;\n"
	"	mad.lo.s32 %r5, %r2, %r3, %r4;\n"
	"	setp.ge.s32 %p1, %r5, %r1;\n"
	"	@%p1 bra DONE;\n"
	"	cvta.to.global.u64 %rd3, %rd1;\n"
	"	cvta.to.global.u64 %rd4, %rd2;\n"
	"	mul.wide.s32 %rd5, %r5, 4;\n"
	"	add.s64 %rd6, %rd3, %rd5;\n"
	"	add.s64 %rd7, %rd4, %rd5;\n"
	"	ld.global.f32 %f2, [%rd6];\n"
	"	ld.global.f32 %f3, [%rd7];\n"
	"	fma.rn.f32 %f4, %f1, %f2, %f3;\n"
	"	st.global.f32 [%rd6], %f4;\n"
	"DONE:\n"
	"	ret;\n"
	"}\n";

/* Calls made, by symbol name, in order of first call. */
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
	if (ncalls < (int)(sizeof(calls) / sizeof(calls[0])))
		calls[ncalls++] = (typeof(calls[0])){name, 1};
}

static void check(CUresult r, const char *name)
{
	if (r != CUDA_SUCCESS) {
		/* Error path only: this call is not counted, the counts no longer matter. */
		const char *s = "?";
		cuGetErrorString(r, &s);
		fprintf(stderr, "driver_app: %s failed: %s (%d)\n", name, s, (int)r);
		exit(1);
	}
}

#define STR_(x) #x
#define STR(x) STR_(x)
/* fn is macro-expanded before STR_ stringizes it: "cuMemAlloc_v2", not "cuMemAlloc". */
#define CU(fn, ...)                                                                                \
	do {                                                                                       \
		count(STR(fn));                                                                    \
		check(fn(__VA_ARGS__), STR(fn));                                                   \
	} while (0)

static uint64_t fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
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
	float *hx = malloc(bytes), *hy = malloc(bytes);
	if (!hx || !hy)
		return 1;
	for (int i = 0; i < n; i++) {
		hx[i] = (float)(i % 97) * 0.25f;
		hy[i] = (float)(i % 13);
	}

	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUstream stream;
	CUdeviceptr dx, dy;
	CU(cuInit, 0);
	CU(cuDeviceGet, &dev, 0);
	CU(cuDevicePrimaryCtxRetain, &ctx, dev);
	CU(cuCtxSetCurrent, ctx);
	CU(cuModuleLoadData, &mod, ptx);
	CU(cuModuleGetFunction, &fn, mod, "step");
	CU(cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
	CU(cuMemAlloc, &dx, bytes);
	CU(cuMemAlloc, &dy, bytes);
	CU(cuMemcpyHtoD, dx, hx, bytes);
	CU(cuMemcpyHtoD, dy, hy, bytes);

	float a = 0.5f;
	void *params[] = {&dy, &dx, &a, &n};
	unsigned block = 256, grid = (unsigned)((n + block - 1) / block);
	CUlaunchConfig cfg = {.gridDimX = grid, .gridDimY = 1, .gridDimZ = 1,
	                      .blockDimX = block, .blockDimY = 1, .blockDimZ = 1,
	                      .sharedMemBytes = 0, .hStream = stream, .attrs = NULL, .numAttrs = 0};
	for (int i = 0; i < launches; i++) {
		if (i % 2 == 0)
			CU(cuLaunchKernel, fn, grid, 1, 1, block, 1, 1, 0, stream, params, NULL);
		else
			CU(cuLaunchKernelEx, &cfg, fn, params, NULL);
		if ((i + 1) % sync_every == 0)
			CU(cuStreamSynchronize, stream);
	}
	CU(cuCtxSynchronize);
	CU(cuMemcpyDtoH, hy, dy, bytes);
	CU(cuMemFree, dx);
	CU(cuMemFree, dy);
	CU(cuStreamDestroy, stream);
	CU(cuModuleUnload, mod);
	CU(cuDevicePrimaryCtxRelease, dev);

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
