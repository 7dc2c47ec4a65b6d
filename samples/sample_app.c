/* sample_app: a tiny "inference" on the stand-in CUDA driver (tests/fakecuda), reaching it the
 * way the CUDA runtime does (dlopen, then cuGetProcAddress_v2 for every entry point), so there is
 * something to trace without a GPU:
 *
 *   cuhook run -o trace.bin -- build/samples/sample_app && cuhook report trace.bin
 *
 * A small integer MLP: per batch, the input is copied to the device, then each layer launches
 * matvec, bias add and relu kernels, the stream is synchronized, and the output is copied back.
 *
 * usage: sample_app [--layers L] [--batches B] [LIBCUDA_PATH]
 * LIBCUDA_PATH defaults to the stand-in in the build tree, then to "libcuda.so.1". */
#include "fakecuda.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FAKECUDA_DEFAULT_PATH
#define FAKECUDA_DEFAULT_PATH "libcuda.so.1"
#endif

#define DIM 64
#define MAX_LAYERS 64

static struct {
	__typeof__(cuGetProcAddress_v2) *getProc;
	__typeof__(cuInit) *init;
	__typeof__(cuDeviceGet) *deviceGet;
	__typeof__(cuDevicePrimaryCtxRetain) *ctxRetain;
	__typeof__(cuDevicePrimaryCtxRelease_v2) *ctxRelease;
	__typeof__(cuCtxSetCurrent) *ctxSetCurrent;
	__typeof__(cuModuleLoadData) *moduleLoad;
	__typeof__(cuModuleGetFunction) *moduleGetFunction;
	__typeof__(cuModuleUnload) *moduleUnload;
	__typeof__(cuStreamCreate) *streamCreate;
	__typeof__(cuStreamDestroy_v2) *streamDestroy;
	__typeof__(cuStreamSynchronize) *streamSync;
	__typeof__(cuMemAlloc_v2) *memAlloc;
	__typeof__(cuMemFree_v2) *memFree;
	__typeof__(cuMemcpyHtoD_v2) *htod;
	__typeof__(cuMemcpyDtoH_v2) *dtoh;
	__typeof__(cuLaunchKernel) *launch;
	__typeof__(cuGetErrorString) *errorString;
} cu;

static void check(CUresult r, const char *what)
{
	if (r == FAKE_SUCCESS)
		return;
	const char *msg = NULL;
	if (cu.errorString)
		cu.errorString(r, &msg);
	fprintf(stderr, "sample_app: %s failed: %d (%s)\n", what, r, msg ? msg : "?");
	exit(1);
}

/* Entry points by the names the runtime asks for; the driver picks the _v2 versions. */
static void get_entry_points(void *lib)
{
	static const struct { const char *name; size_t offset; } table[] = {
#define E(field, name) {name, offsetof(__typeof__(cu), field)}
		E(init, "cuInit"), E(deviceGet, "cuDeviceGet"),
		E(ctxRetain, "cuDevicePrimaryCtxRetain"), E(ctxRelease, "cuDevicePrimaryCtxRelease"),
		E(ctxSetCurrent, "cuCtxSetCurrent"), E(moduleLoad, "cuModuleLoadData"),
		E(moduleGetFunction, "cuModuleGetFunction"), E(moduleUnload, "cuModuleUnload"),
		E(streamCreate, "cuStreamCreate"), E(streamDestroy, "cuStreamDestroy"),
		E(streamSync, "cuStreamSynchronize"), E(memAlloc, "cuMemAlloc"), E(memFree, "cuMemFree"),
		E(htod, "cuMemcpyHtoD"), E(dtoh, "cuMemcpyDtoH"), E(launch, "cuLaunchKernel"),
		E(errorString, "cuGetErrorString"),
#undef E
	};
	cu.getProc = (__typeof__(cu.getProc))dlsym(lib, "cuGetProcAddress_v2");
	if (!cu.getProc) {
		fprintf(stderr, "sample_app: no cuGetProcAddress_v2: %s\n", dlerror());
		exit(1);
	}
	for (unsigned i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		void **slot = (void **)((char *)&cu + table[i].offset);
		int status = -1;
		if (cu.getProc(table[i].name, slot, 12080, 0, &status) != FAKE_SUCCESS || !*slot) {
			fprintf(stderr, "sample_app: driver has no %s\n", table[i].name);
			exit(1);
		}
	}
}

static const char image[] = FAKE_IMAGE_MAGIC "\0fake_matvec\0fake_scale_add\0fake_relu\0";

int main(int argc, char **argv)
{
	int layers = 4, batches = 8;
	const char *path = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--layers") && i + 1 < argc)
			layers = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--batches") && i + 1 < argc)
			batches = atoi(argv[++i]);
		else if (argv[i][0] != '-' && !path)
			path = argv[i];
		else {
			fprintf(stderr, "usage: sample_app [--layers L] [--batches B] [LIBCUDA_PATH]\n");
			return 2;
		}
	}
	if (layers < 1 || layers > MAX_LAYERS || batches < 0) {
		fprintf(stderr, "sample_app: layers must be 1..%d, batches >= 0\n", MAX_LAYERS);
		return 2;
	}
	if (!path)
		path = access(FAKECUDA_DEFAULT_PATH, R_OK) == 0 ? FAKECUDA_DEFAULT_PATH : "libcuda.so.1";
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "sample_app: %s\n", dlerror());
		return 1;
	}
	get_entry_points(lib);

	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction k_matvec, k_bias, k_relu;
	CUstream stream;
	check(cu.init(0), "cuInit");
	check(cu.deviceGet(&dev, 0), "cuDeviceGet");
	check(cu.ctxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
	check(cu.ctxSetCurrent(ctx), "cuCtxSetCurrent");
	check(cu.moduleLoad(&mod, image), "cuModuleLoadData");
	check(cu.moduleGetFunction(&k_matvec, mod, "fake_matvec"), "cuModuleGetFunction");
	check(cu.moduleGetFunction(&k_bias, mod, "fake_scale_add"), "cuModuleGetFunction");
	check(cu.moduleGetFunction(&k_relu, mod, "fake_relu"), "cuModuleGetFunction");
	check(cu.streamCreate(&stream, 0), "cuStreamCreate");

	/* weights: small deterministic integers in -3..3 */
	static uint32_t w[DIM * DIM];
	CUdeviceptr weights[MAX_LAYERS], act[2];
	for (int l = 0; l < layers; l++) {
		for (int i = 0; i < DIM * DIM; i++)
			w[i] = (uint32_t)((int)((i * 2654435761u + l * 40503u) >> 13) % 7 - 3);
		check(cu.memAlloc(&weights[l], sizeof(w)), "cuMemAlloc");
		check(cu.htod(weights[l], w, sizeof(w)), "cuMemcpyHtoD");
	}
	check(cu.memAlloc(&act[0], DIM * 4), "cuMemAlloc");
	check(cu.memAlloc(&act[1], DIM * 4), "cuMemAlloc");

	uint64_t result = 0;
	uint32_t n = DIM, one = 1;
	for (int b = 0; b < batches; b++) {
		uint32_t x[DIM];
		for (int i = 0; i < DIM; i++)
			x[i] = (uint32_t)((b * 31 + i * 17) % 23);
		check(cu.htod(act[0], x, sizeof(x)), "cuMemcpyHtoD");
		int cur = 0;
		for (int l = 0; l < layers; l++) {
			uint32_t bias = (uint32_t)(l + 1);
			void *mv[] = {&weights[l], &act[cur], &act[1 - cur], &n, &n};
			check(cu.launch(k_matvec, 1, 1, 1, DIM, 1, 1, 0, stream, mv, NULL), "cuLaunchKernel");
			void *ba[] = {&act[1 - cur], &n, &one, &bias};
			check(cu.launch(k_bias, 1, 1, 1, DIM, 1, 1, 0, stream, ba, NULL), "cuLaunchKernel");
			void *re[] = {&act[1 - cur], &n};
			check(cu.launch(k_relu, 1, 1, 1, DIM, 1, 1, 0, stream, re, NULL), "cuLaunchKernel");
			cur = 1 - cur;
		}
		check(cu.streamSync(stream), "cuStreamSynchronize");
		uint32_t y[DIM];
		check(cu.dtoh(y, act[cur], sizeof(y)), "cuMemcpyDtoH");
		for (int i = 0; i < DIM; i++)
			result = (result ^ y[i]) * 0x100000001b3ull;
	}

	for (int l = 0; l < layers; l++)
		check(cu.memFree(weights[l]), "cuMemFree");
	check(cu.memFree(act[0]), "cuMemFree");
	check(cu.memFree(act[1]), "cuMemFree");
	check(cu.streamDestroy(stream), "cuStreamDestroy");
	check(cu.moduleUnload(mod), "cuModuleUnload");
	check(cu.ctxRelease(dev), "cuDevicePrimaryCtxRelease");
	printf("sample_app: %d batches x %d layers, %d kernel launches, result 0x%016" PRIx64 "\n",
	       batches, layers, batches * layers * 3, result);
	return 0;
}
