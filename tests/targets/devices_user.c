/* devices_user: work on the stand-in's two devices from two threads, for the report's Devices
 * section (tests/engine/check_devices.py). Each call is labelled with the device it works on as
 * the program means it (0, 1, "unknown" where a trace cannot tell, "none" for calls that concern
 * no device), and the program prints per label what the report must find:
 *   expect LABEL calls N launches L H2D B D2H B D2D B memset B allocs A peak P threads T
 * (bytes of copies and memsets by direction, allocation calls, device memory in use at once, the
 * threads that made its calls).
 *
 *   devices_user LIBCUDA --agent AGENT   dlopen the agent first (CUHOOK_* set by the caller):
 *                                        every call traced
 *   devices_user LIBCUDA --wait          the contexts chosen first (both primary contexts
 *                                        retained, each thread's set), then "ready" and a line on
 *                                        stdin (the caller attaches meanwhile), the traced work,
 *                                        "done" and another line
 *
 * --agent, main thread: cuInit, cuDriverGetVersion, cuDeviceGetCount (none); cuDeviceGet,
 * cuDeviceGetAttribute and cuDevicePrimaryCtxRetain for devices 0 and 1; then thread A runs, then
 * thread B (one after the other, so that the peaks are exact); then each primary context released.
 * Thread A: sets device 0's context, loads a module, allocates, copies H2D, launches, copies D2H,
 * creates stream S; switches to device 1's context mid-thread: allocates, sets memory, copies H2D
 * asynchronously on S (device 0: S's context), synchronizes, frees; back to device 0, frees.
 * Thread B: sets device 1's context, loads a module, allocates, copies, launches; creates a
 * context on device 0 (cuCtxCreate pushes it): allocates, copies D2D, frees, pops it; copies D2H
 * on device 1; synchronizes S (device 0); pushes the created context again, synchronizes, pops,
 * destroys it; frees on device 1.
 *
 * --wait: before tracing, both primary contexts retained, A sets device 0's, B device 1's.
 * Traced: A allocates, copies, launches and frees (unknown: its context was set before), then
 * retains device 1's primary context (1), sets it (1), allocates, sets memory and frees (1);
 * B synchronizes (unknown), pushes device 0's context (unknown: retained before tracing) and
 * synchronizes (unknown), pops it (unknown). Exit status 0 only when every call succeeded. */
#include "fakecuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUNCS(X)                                                                                   \
	X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetAttribute)     \
	X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease_v2) X(cuCtxSetCurrent)                 \
	X(cuCtxPushCurrent_v2) X(cuCtxPopCurrent_v2) X(cuCtxCreate_v2) X(cuCtxDestroy_v2)              \
	X(cuCtxSynchronize) X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemcpyHtoD_v2) X(cuMemcpyDtoH_v2)     \
	X(cuMemcpyDtoD_v2) X(cuMemcpyHtoDAsync_v2) X(cuMemsetD32_v2) X(cuStreamCreate)                 \
	X(cuStreamDestroy_v2) X(cuStreamSynchronize) X(cuModuleLoadData) X(cuModuleGetFunction)        \
	X(cuLaunchKernel)

static struct {
#define X(n) __typeof__(n) *n;
	FUNCS(X)
#undef X
} D;

/* The labels: devices 0 and 1, unknown, none. */
enum { L0, L1, LU, LN, NLABELS };
static const char *const label_names[NLABELS] = {"0", "1", "unknown", "none"};

enum { K_H2D, K_D2H, K_D2D, K_MEMSET, NKINDS };
static const char *const kind_names[NKINDS] = {"H2D", "D2H", "D2D", "memset"};

/* What the report must find per label: the threads run one after the other, so no lock. */
static struct expect {
	unsigned long calls, launches, allocs;
	unsigned long long bytes[NKINDS], in_use, peak;
	unsigned threads;         /* bit 0: main, 1: thread A, 2: thread B */
} want[NLABELS];
static __thread unsigned me = 1; /* this thread's bit */

static int failures;

static void ok(CUresult r, const char *what)
{
	if (r != FAKE_SUCCESS) {
		fprintf(stderr, "devices_user: %s failed: %d\n", what, r);
		failures++;
	}
}

/* One call on label l. */
#define CALL(l, fn, ...) (want[l].calls++, want[l].threads |= me, ok(D.fn(__VA_ARGS__), #fn))

static void copied(int l, int kind, size_t bytes)
{
	want[l].bytes[kind] += bytes;
}

static CUdeviceptr alloc(int l, size_t bytes)
{
	CUdeviceptr p = 0;
	CALL(l, cuMemAlloc_v2, &p, bytes);
	want[l].allocs++;
	want[l].in_use += bytes;
	if (want[l].in_use > want[l].peak)
		want[l].peak = want[l].in_use;
	return p;
}

/* A free on label l of memory allocated on label on. */
static void release(int l, int on, CUdeviceptr p, size_t bytes)
{
	CALL(l, cuMemFree_v2, p);
	want[on].in_use -= bytes;
}

static const char image[] = FAKE_IMAGE_MAGIC "\0fake_scale_add\0";
static unsigned char host[16384];
static CUcontext primary[2];
static CUstream stream_s;
static int waiting; /* --wait */

static CUfunction load(int l)
{
	CUmodule mod;
	CUfunction f;
	CALL(l, cuModuleLoadData, &mod, image);
	CALL(l, cuModuleGetFunction, &f, mod, "fake_scale_add");
	return f;
}

static void launch(int l, CUfunction f, CUdeviceptr buf, CUstream s)
{
	unsigned n = 16, mul = 3, add = 1;
	void *params[] = {&buf, &n, &mul, &add};
	CALL(l, cuLaunchKernel, f, 1, 1, 1, 16, 1, 1, 0, s, params, NULL);
	want[l].launches++;
}

/* How both threads begin on label l: set ctx, load the module, allocate, copy there, launch. */
static CUdeviceptr begin_on(int l, CUcontext ctx, size_t bytes, int launches)
{
	CALL(l, cuCtxSetCurrent, ctx);
	CUfunction f = load(l);
	CUdeviceptr p = alloc(l, bytes);
	CALL(l, cuMemcpyHtoD_v2, p, host, bytes);
	copied(l, K_H2D, bytes);
	for (int i = 0; i < launches; i++)
		launch(l, f, p, NULL);
	return p;
}

static void thread_a_traced(void)
{
	CUdeviceptr a = begin_on(L0, primary[0], 4096, 3);
	CALL(L0, cuMemcpyDtoH_v2, host, a, 1024);
	copied(L0, K_D2H, 1024);
	CALL(L0, cuStreamCreate, &stream_s, 0);
	/* the switch: device 1 from here */
	CALL(L1, cuCtxSetCurrent, primary[1]);
	CUdeviceptr b = alloc(L1, 8192);
	CALL(L1, cuMemsetD32_v2, b, 0, 2048);
	copied(L1, K_MEMSET, 8192);
	CALL(L0, cuMemcpyHtoDAsync_v2, a, host, 512, stream_s); /* S was created on device 0 */
	copied(L0, K_H2D, 512);
	CALL(L1, cuCtxSynchronize);
	release(L1, L1, b, 8192);
	CALL(L0, cuCtxSetCurrent, primary[0]);
	release(L0, L0, a, 4096);
}

static void thread_b_traced(void)
{
	CUdeviceptr c = begin_on(L1, primary[1], 16384, 4);
	CUcontext made = NULL, popped = NULL;
	CALL(L0, cuCtxCreate_v2, &made, 0, 0); /* pushed: device 0 from here */
	CUdeviceptr e = alloc(L0, 2048);
	CALL(L0, cuMemcpyDtoD_v2, e + 1024, e, 1024);
	copied(L0, K_D2D, 1024);
	release(L0, L0, e, 2048);
	CALL(L0, cuCtxPopCurrent_v2, &popped); /* device 1 again */
	if (popped != made) {
		fprintf(stderr, "devices_user: cuCtxPopCurrent popped another context\n");
		failures++;
	}
	CALL(L1, cuMemcpyDtoH_v2, host, c, 16384);
	copied(L1, K_D2H, 16384);
	CALL(L0, cuStreamSynchronize, stream_s); /* created by thread A on device 0 */
	CALL(L0, cuCtxPushCurrent_v2, made);
	CALL(L0, cuCtxSynchronize);
	CALL(L0, cuCtxPopCurrent_v2, &popped);
	CALL(L0, cuCtxDestroy_v2, made);
	release(L1, L1, c, 16384);
}

/* --wait: the threads set their contexts, wait for the traced part, do it in turn. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int stage; /* 1: A's context set, 2: B's too; 3: A's turn (traced), 4: B's turn, 5: done */

static void wait_stage(int s)
{
	pthread_mutex_lock(&lock);
	while (stage < s)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
}

static void next_stage(void)
{
	pthread_mutex_lock(&lock);
	stage++;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

static void thread_a_attached(void)
{
	CUfunction f = load(LU);
	CUdeviceptr a = alloc(LU, 4096);
	CALL(LU, cuMemcpyHtoD_v2, a, host, 4096);
	copied(LU, K_H2D, 4096);
	for (int i = 0; i < 2; i++)
		launch(LU, f, a, NULL);
	release(LU, LU, a, 4096);
	CUcontext p = NULL;
	CALL(L1, cuDevicePrimaryCtxRetain, &p, 1);
	CALL(L1, cuCtxSetCurrent, p);
	CUdeviceptr b = alloc(L1, 8192);
	CALL(L1, cuMemsetD32_v2, b, 0, 2048);
	copied(L1, K_MEMSET, 8192);
	release(L1, L1, b, 8192);
}

static void thread_b_attached(void)
{
	CUcontext popped = NULL;
	CALL(LU, cuCtxSynchronize);
	CALL(LU, cuCtxPushCurrent_v2, primary[0]);
	CALL(LU, cuCtxSynchronize);
	CALL(LU, cuCtxPopCurrent_v2, &popped);
}

static void *thread_a(void *arg)
{
	me = 2;
	if (waiting) {
		ok(D.cuCtxSetCurrent(primary[0]), "cuCtxSetCurrent before tracing");
		next_stage();
		wait_stage(3);
		thread_a_attached();
		next_stage();
	} else {
		thread_a_traced();
	}
	return arg;
}

static void *thread_b(void *arg)
{
	me = 4;
	if (waiting) {
		ok(D.cuCtxSetCurrent(primary[1]), "cuCtxSetCurrent before tracing");
		wait_stage(1);
		next_stage();
		wait_stage(4);
		thread_b_attached();
		next_stage();
	} else {
		thread_b_traced();
	}
	return arg;
}

static int run_thread(pthread_t *t, void *(*fn)(void *))
{
	if (pthread_create(t, NULL, fn, NULL) != 0) {
		fprintf(stderr, "devices_user: pthread_create failed\n");
		return -1;
	}
	return 0;
}

static void print_expectations(void)
{
	for (int l = 0; l < NLABELS; l++) {
		printf("expect %s calls %lu launches %lu", label_names[l], want[l].calls, want[l].launches);
		for (int k = 0; k < NKINDS; k++)
			printf(" %s %llu", kind_names[k], want[l].bytes[k]);
		printf(" allocs %lu peak %llu threads %d\n", want[l].allocs, want[l].peak,
		       __builtin_popcount(want[l].threads));
	}
}

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[2], "--wait") && (strcmp(argv[2], "--agent") || argc < 4))) {
		fprintf(stderr, "usage: devices_user LIBCUDA --agent AGENT | --wait\n");
		return 2;
	}
	waiting = !strcmp(argv[2], "--wait");
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "devices_user: %s\n", dlerror());
		return 2;
	}
#define X(n)                                                                                       \
	if (!(D.n = (__typeof__(n) *)dlsym(lib, #n))) {                                                \
		fprintf(stderr, "devices_user: no %s\n", #n);                                              \
		return 2;                                                                                  \
	}
	FUNCS(X)
#undef X
	pthread_t ta, tb;
	if (waiting) {
		ok(D.cuInit(0), "cuInit");
		ok(D.cuDevicePrimaryCtxRetain(&primary[0], 0), "cuDevicePrimaryCtxRetain 0");
		ok(D.cuDevicePrimaryCtxRetain(&primary[1], 1), "cuDevicePrimaryCtxRetain 1");
		if (failures || run_thread(&ta, thread_a) || run_thread(&tb, thread_b))
			return 1;
		wait_stage(2); /* both contexts set */
		char line[64];
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 2;
		next_stage(); /* A's turn, then B's */
		wait_stage(5);
		pthread_join(ta, NULL);
		pthread_join(tb, NULL);
		print_expectations();
		printf("done\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 2;
		return failures ? 1 : 0;
	}
	if (!dlopen(argv[3], RTLD_NOW | RTLD_LOCAL)) {
		fprintf(stderr, "devices_user: %s\n", dlerror());
		return 2;
	}
	int version = 0, count = 0;
	CALL(LN, cuInit, 0);
	CALL(LN, cuDriverGetVersion, &version);
	CALL(LN, cuDeviceGetCount, &count);
	if (count != 2) {
		fprintf(stderr, "devices_user: %d devices, not 2\n", count);
		return 1;
	}
	for (int d = 0; d < 2; d++) {
		CUdevice dev = -1;
		int v = 0;
		CALL(d, cuDeviceGet, &dev, d);
		CALL(d, cuDeviceGetAttribute, &v, 75, dev);
		CALL(d, cuDevicePrimaryCtxRetain, &primary[d], dev);
	}
	if (failures || run_thread(&ta, thread_a))
		return 1;
	pthread_join(ta, NULL);
	if (run_thread(&tb, thread_b))
		return 1;
	pthread_join(tb, NULL);
	CALL(L0, cuStreamDestroy_v2, stream_s); /* the main thread has no context: S names device 0 */
	for (int d = 0; d < 2; d++)
		CALL(d, cuDevicePrimaryCtxRelease_v2, d);
	print_expectations();
	return failures ? 1 : 0;
}
