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
 * cuMemcpyHtoD to cuMemcpyHtoD_v2 and so on, and the CALL() macro (app_common.h) takes the name after that
 * expansion, so the names are those of the exported entry points, the names cuhook and CUPTI
 * report. Those counts are the ground truth cuhook's are compared with.
 *
 * The kernel computes y = 0.5 * y + x: the product by 0.5 is exact, so the result does not
 * depend on whether the compiler fuses it into an FMA, and runtime_app.cu gets the same bits. */
#include <cuda.h>

#include "app_common.h"

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

int main(int argc, char **argv)
{
	struct app app;
	app_setup(argc, argv, &app);
	int n = app.n;
	size_t bytes = app.bytes;

	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUstream stream;
	CUdeviceptr dx, dy;
	CALL(cuInit, 0);
	CALL(cuDeviceGet, &dev, 0);
	CALL(cuDevicePrimaryCtxRetain, &ctx, dev);
	CALL(cuCtxSetCurrent, ctx);
	CALL(cuModuleLoadData, &mod, ptx);
	CALL(cuModuleGetFunction, &fn, mod, "step");
	CALL(cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
	CALL(cuMemAlloc, &dx, bytes);
	CALL(cuMemAlloc, &dy, bytes);
	CALL(cuMemcpyHtoD, dx, app.hx, bytes);
	CALL(cuMemcpyHtoD, dy, app.hy, bytes);

	float a = 0.5f;
	void *params[] = {&dy, &dx, &a, &n};
	unsigned block = 256, grid = (unsigned)((n + block - 1) / block);
	CUlaunchConfig cfg = {.gridDimX = grid, .gridDimY = 1, .gridDimZ = 1,
	                      .blockDimX = block, .blockDimY = 1, .blockDimZ = 1,
	                      .sharedMemBytes = 0, .hStream = stream, .attrs = NULL, .numAttrs = 0};
	for (int i = 0; i < app.launches; i++) {
		if (i % 2 == 0)
			CALL(cuLaunchKernel, fn, grid, 1, 1, block, 1, 1, 0, stream, params, NULL);
		else
			CALL(cuLaunchKernelEx, &cfg, fn, params, NULL);
		if ((i + 1) % app.sync_every == 0)
			CALL(cuStreamSynchronize, stream);
	}
	CALL(cuCtxSynchronize);
	CALL(cuMemcpyDtoH, app.hy, dy, bytes);
	CALL(cuMemFree, dx);
	CALL(cuMemFree, dy);
	CALL(cuStreamDestroy, stream);
	CALL(cuModuleUnload, mod);
	CALL(cuDevicePrimaryCtxRelease, dev);

	app_report(&app);
	return 0;
}
