/* The workload gpu_workload.h describes. Every result is checked as it comes back (values the
 * iteration number and thread determine), so a tracer that changed what the driver does fails
 * the run, not just its checksum. */
#include "gpu_workload.h"

#include "fakecuda.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

const struct gpu_work_kernel gpu_work_kernels[GPU_WORK_KERNELS] = {
	{"fake_scale_add", 1, 1},
	{"fake_relu", 1, 1},
	{"_ZN4fake6fill32EPjjj", 1, 1},
	{"fake_matvec", 1, 0},
};

const char *const gpu_work_fn_names[GW_NFUNCS] = {
#define GPU_WORK_X(n) #n,
	GPU_WORK_FUNCS(GPU_WORK_X)
#undef GPU_WORK_X
};

static struct {
#define GPU_WORK_X(n) __typeof__(n) *n;
	GPU_WORK_FUNCS(GPU_WORK_X)
#undef GPU_WORK_X
} D;

static void (*runtime_enter)(struct fakecuda_api_call *);
static void (*runtime_exit)(struct fakecuda_api_call *);
static int through_runtime;

static CUcontext ctx;
static CUmodule module;
static CUfunction fn_scale_add, fn_relu, fn_fill, fn_matvec;
static uint64_t calls[GW_NFUNCS]; /* atomic */

/* A call through the table, counted (whatever its result). */
#define CALL(name, ...) (__atomic_add_fetch(&calls[GW_##name], 1, __ATOMIC_RELAXED), D.name(__VA_ARGS__))
#define MUST(name, ...)                                                                            \
	do {                                                                                           \
		CUresult r_ = CALL(name, __VA_ARGS__);                                                     \
		if (r_ != FAKE_SUCCESS) {                                                                  \
			fprintf(stderr, "gpu_work: %s returned %d (line %d)\n", #name, r_, __LINE__);          \
			return -1;                                                                             \
		}                                                                                          \
	} while (0)

int gpu_work_open(const char *libcuda)
{
	void *h = dlopen(libcuda, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "gpu_work: cannot load %s: %s\n", libcuda, dlerror());
		return -1;
	}
#define GPU_WORK_X(n)                                                                              \
	if (!(D.n = (__typeof__(n) *)dlsym(h, #n))) {                                                  \
		fprintf(stderr, "gpu_work: %s has no %s\n", libcuda, #n);                                  \
		return -1;                                                                                 \
	}
	GPU_WORK_FUNCS(GPU_WORK_X)
#undef GPU_WORK_X
	runtime_enter = (void (*)(struct fakecuda_api_call *))dlsym(h, "fakecuda_runtime_enter");
	runtime_exit = (void (*)(struct fakecuda_api_call *))dlsym(h, "fakecuda_runtime_exit");
	if (through_runtime && (!runtime_enter || !runtime_exit)) {
		fprintf(stderr, "gpu_work: %s has no stand-in runtime (fakecuda_runtime_enter)\n", libcuda);
		return -1;
	}
	static const char image[] = FAKE_IMAGE_MAGIC "\0fake_scale_add\0fake_relu\0_ZN4fake6fill32EPjjj\0"
	                                             "fake_matvec\0";
	CUdevice dev;
	MUST(cuInit, 0);
	MUST(cuDeviceGet, &dev, 0);
	MUST(cuDevicePrimaryCtxRetain, &ctx, dev);
	MUST(cuCtxSetCurrent, ctx);
	MUST(cuModuleLoadData, &module, image);
	MUST(cuModuleGetFunction, &fn_scale_add, module, "fake_scale_add");
	MUST(cuModuleGetFunction, &fn_relu, module, "fake_relu");
	MUST(cuModuleGetFunction, &fn_fill, module, "_ZN4fake6fill32EPjjj");
	MUST(cuModuleGetFunction, &fn_matvec, module, "fake_matvec");
	return 0;
}

#define ELEMS (GPU_WORK_COPY_BYTES / 4)

struct worker {
	pthread_t thread;
	unsigned index;
	uint64_t iterations;
	unsigned pause_us;
	const volatile int *stop;
	uint64_t *progress;
	uint64_t done, checksum;
	uint32_t tid, pthread_id;
	int failed;
	/* the thread's own */
	CUstream stream;
	CUdeviceptr a, b, c;
	CUgraph graph;
	CUgraphExec exec;
};

static uint64_t mix64(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static int setup(struct worker *w)
{
	MUST(cuCtxSetCurrent, ctx);
	MUST(cuStreamCreate, &w->stream, 0);
	MUST(cuMemAlloc_v2, &w->a, GPU_WORK_COPY_BYTES);
	MUST(cuMemAlloc_v2, &w->b, GPU_WORK_COPY_BYTES);
	MUST(cuMemAlloc_v2, &w->c, GPU_WORK_COPY_BYTES);
	/* the graph: b = b*5 + 7 (first 32), relu(b) (first 32), c[0..32) = 0xabc; values copied
	 * into the nodes when added */
	MUST(cuGraphCreate, &w->graph, 0);
	uint32_t n32 = 32, mul = 5, add = 7, fill = 0xabc;
	void *p_scale[] = {&w->b, &n32, &mul, &add};
	void *p_relu[] = {&w->b, &n32};
	void *p_fill[] = {&w->c, &n32, &fill};
	void **params[GPU_WORK_GRAPH_NODES] = {p_scale, p_relu, p_fill};
	CUfunction funcs[GPU_WORK_GRAPH_NODES] = {fn_scale_add, fn_relu, fn_fill};
	CUgraphNode prev = NULL;
	for (int i = 0; i < GPU_WORK_GRAPH_NODES; i++) {
		CUDA_KERNEL_NODE_PARAMS np = {funcs[i], 1, 1, 1, 32, 1, 1, 0, params[i], NULL, NULL, NULL};
		CUgraphNode node;
		MUST(cuGraphAddKernelNode_v2, &node, w->graph, prev ? &prev : NULL, prev ? 1 : 0, &np);
		prev = node;
	}
	MUST(cuGraphInstantiateWithFlags, &w->exec, w->graph, 0);
	return 0;
}

static int teardown(struct worker *w)
{
	MUST(cuGraphExecDestroy, w->exec);
	MUST(cuGraphDestroy, w->graph);
	MUST(cuMemFree_v2, w->a);
	MUST(cuMemFree_v2, w->b);
	MUST(cuMemFree_v2, w->c);
	MUST(cuStreamDestroy_v2, w->stream);
	return 0;
}

/* What one iteration leaves in b (then c) and the expected values, computed on the host. */
void gpu_work_through_runtime(int on)
{
	through_runtime = on;
}

/* MUST inside a runtime call of runtime function `rt` (a GPU_WORK_RT_ id) when through_runtime. */
#define SUBMIT(rt, name, ...)                                                                      \
	do {                                                                                           \
		struct fakecuda_api_call rc_ = {.cbid = (rt)};                                             \
		if (through_runtime)                                                                       \
			runtime_enter(&rc_);                                                                   \
		CUresult r_ = CALL(name, __VA_ARGS__);                                                     \
		rc_.result = r_;                                                                           \
		if (through_runtime)                                                                       \
			runtime_exit(&rc_);                                                                    \
		if (r_ != FAKE_SUCCESS) {                                                                  \
			fprintf(stderr, "gpu_work: %s returned %d (line %d)\n", #name, r_, __LINE__);          \
			return -1;                                                                             \
		}                                                                                          \
	} while (0)

static int iteration(struct worker *w, uint32_t it)
{
	uint32_t in[ELEMS], out_b[ELEMS], out_c[ELEMS], want_b[ELEMS], want_c[ELEMS];
	uint32_t t = w->index;
	for (uint32_t i = 0; i < ELEMS; i++)
		in[i] = (i * 2654435761u) ^ (it << 8) ^ t;

	SUBMIT(GPU_WORK_RT_cudaMemcpy, cuMemcpyHtoD_v2, w->a, in, GPU_WORK_COPY_BYTES);
	SUBMIT(GPU_WORK_RT_cudaMemcpyAsync, cuMemcpyHtoDAsync_v2, w->b, in, GPU_WORK_COPY_BYTES, w->stream);
	/* a = a*3 + (t+1); relu(a) */
	uint32_t n = ELEMS, mul = 3, add = t + 1;
	void *p_scale[] = {&w->a, &n, &mul, &add};
	SUBMIT(GPU_WORK_RT_cudaLaunchKernel, cuLaunchKernel, fn_scale_add, 2, 1, 1, 128, 1, 1, 0, w->stream, p_scale, NULL);
	void *p_relu[] = {&w->a, &n};
	CUlaunchConfig cfg = {1, 1, 1, 256, 1, 1, 512, w->stream, NULL, 0};
	SUBMIT(GPU_WORK_RT_cudaLaunchKernelExC, cuLaunchKernelEx, &cfg, fn_relu, p_relu, NULL);
	/* c = it (all of it); then b[0..16) = matvec(W = a as 16x16, x = c) */
	void *p_fill[] = {&w->c, &n, &it};
	SUBMIT(GPU_WORK_RT_cudaLaunchKernel, cuLaunchKernel, fn_fill, 4, 1, 1, 64, 1, 1, 0, NULL, p_fill, NULL);
	uint32_t rows = 16, cols = 16;
	void *p_matvec[] = {&w->a, &w->c, &w->b, &rows, &cols};
	CUlaunchConfig cfg_mv = {1, 1, 1, 16, 1, 1, 0, w->stream, NULL, 0};
	SUBMIT(GPU_WORK_RT_cudaLaunchKernelExC, cuLaunchKernelEx, &cfg_mv, fn_matvec, p_matvec, NULL);
	/* c = 0x01020304 (all), c's first 512 bytes = 0x5a; then a = c */
	SUBMIT(GPU_WORK_RT_cudaMemsetAsync, cuMemsetD32Async, w->c, GPU_WORK_MEMSET32_VALUE, GPU_WORK_MEMSET32_BYTES / 4, w->stream);
	SUBMIT(GPU_WORK_RT_cudaMemset, cuMemsetD8_v2, w->c, (unsigned char)GPU_WORK_MEMSET8_VALUE, GPU_WORK_MEMSET8_BYTES);
	SUBMIT(GPU_WORK_RT_cudaMemcpyAsync, cuMemcpyAsync, w->a, w->c, GPU_WORK_COPY_BYTES, w->stream);
	/* the graph: b[0..32) = relu(b*5 + 7), c[0..32) = 0xabc */
	SUBMIT(GPU_WORK_RT_cudaGraphLaunch, cuGraphLaunch, w->exec, w->stream);
	SUBMIT(GPU_WORK_RT_cudaMemcpyAsync, cuMemcpyDtoHAsync_v2, out_b, w->b, GPU_WORK_COPY_BYTES, w->stream);
	SUBMIT(GPU_WORK_RT_cudaMemcpy, cuMemcpyDtoH_v2, out_c, w->a, GPU_WORK_COPY_BYTES);
	MUST(cuStreamSynchronize, w->stream);

	/* the same on the host */
	uint32_t a[ELEMS];
	for (uint32_t i = 0; i < ELEMS; i++) {
		a[i] = in[i] * 3 + t + 1;
		if ((int32_t)a[i] < 0)
			a[i] = 0;
	}
	memcpy(want_b, in, sizeof(in));
	for (uint32_t r = 0; r < 16; r++) {
		uint32_t acc = 0;
		for (uint32_t k = 0; k < 16; k++)
			acc += a[r * 16 + k] * it;
		want_b[r] = acc;
	}
	for (uint32_t i = 0; i < 32; i++) {
		want_b[i] = want_b[i] * 5 + 7;
		if ((int32_t)want_b[i] < 0)
			want_b[i] = 0;
	}
	for (uint32_t i = 0; i < ELEMS; i++)
		want_c[i] = i < GPU_WORK_MEMSET8_BYTES / 4 ? 0x5a5a5a5au : GPU_WORK_MEMSET32_VALUE;
	if (memcmp(out_b, want_b, sizeof(want_b)) || memcmp(out_c, want_c, sizeof(want_c))) {
		fprintf(stderr, "gpu_work: thread %u iteration %u: wrong values copied back\n", t, it);
		return -1;
	}
	for (uint32_t i = 0; i < ELEMS; i++)
		w->checksum += mix64(mix64(t, it), (uint64_t)out_b[i] << 32 | out_c[i]);
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	w->tid = (uint32_t)syscall(SYS_gettid);
	w->pthread_id = (uint32_t)(uintptr_t)pthread_self();
	if (setup(w) != 0) {
		w->failed = 1;
		return NULL;
	}
	while (w->iterations ? w->done < w->iterations : !*w->stop) {
		if (iteration(w, (uint32_t)w->done) != 0) {
			w->failed = 1;
			break;
		}
		w->done++;
		if (w->progress)
			__atomic_add_fetch(w->progress, 1, __ATOMIC_RELAXED);
		if (w->pause_us)
			usleep(w->pause_us);
	}
	if (teardown(w) != 0)
		w->failed = 1;
	return NULL;
}

int gpu_work_run(int threads, uint64_t iterations, unsigned pause_us, const volatile int *stop,
                 uint64_t *progress, struct gpu_work_result *out)
{
	if (threads < 1 || threads > GPU_WORK_MAX_THREADS)
		return -1;
	struct worker *ws = calloc((size_t)threads, sizeof(*ws));
	if (!ws)
		return -1;
	int failed = 0, started = 0;
	for (int i = 0; i < threads; i++) {
		ws[i] = (struct worker){.index = (unsigned)i, .iterations = iterations, .pause_us = pause_us, .stop = stop, .progress = progress};
		if (pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]) != 0) {
			fprintf(stderr, "gpu_work: cannot start thread %d\n", i);
			failed = 1;
			break;
		}
		started++;
	}
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < started; i++) {
		pthread_join(ws[i].thread, NULL);
		failed |= ws[i].failed;
		out->iterations += ws[i].done;
		out->checksum += ws[i].checksum;
		out->tids[out->threads] = ws[i].tid;
		out->pthread_ids[out->threads++] = ws[i].pthread_id;
	}
	free(ws);
	for (int f = 0; f < GW_NFUNCS; f++)
		out->calls[f] = __atomic_load_n(&calls[f], __ATOMIC_RELAXED);
	return failed ? -1 : 0;
}

void gpu_work_close(struct gpu_work_result *out)
{
	CALL(cuModuleUnload, module);
	CALL(cuDevicePrimaryCtxRelease_v2, 0);
	out->calls[GW_cuModuleUnload]++;
	out->calls[GW_cuDevicePrimaryCtxRelease_v2]++;
}

void gpu_work_print(FILE *f, const struct gpu_work_result *r)
{
	uint64_t n = r->iterations;
	fprintf(f, "iterations %" PRIu64 "\n", n);
	fprintf(f, "checksum 0x%016" PRIx64 "\n", r->checksum);
	for (int i = 0; i < GW_NFUNCS; i++)
		if (r->calls[i])
			fprintf(f, "expect %s %" PRIu64 "\n", gpu_work_fn_names[i], r->calls[i]);
	fprintf(f, "gpu {\"kernels\":{");
	for (int k = 0; k < GPU_WORK_KERNELS; k++)
		fprintf(f, "%s\"%s\":%" PRIu64, k ? "," : "", gpu_work_kernels[k].name, n * gpu_work_kernels[k].direct);
	fprintf(f, "},\"graph_kernels\":{");
	int first = 1;
	for (int k = 0; k < GPU_WORK_KERNELS; k++)
		if (gpu_work_kernels[k].in_graph) {
			fprintf(f, "%s\"%s\":%" PRIu64, first ? "" : ",", gpu_work_kernels[k].name,
			        n * gpu_work_kernels[k].in_graph);
			first = 0;
		}
	fprintf(f, "},\"memcpy\":{\"HtoD\":{\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 "},"
	           "\"DtoH\":{\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 "},"
	           "\"DtoD\":{\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 "}},",
	        n * GPU_WORK_HTOD, n * GPU_WORK_HTOD * GPU_WORK_COPY_BYTES, n * GPU_WORK_DTOH,
	        n * GPU_WORK_DTOH * GPU_WORK_COPY_BYTES, n * GPU_WORK_DTOD, n * GPU_WORK_DTOD * GPU_WORK_COPY_BYTES);
	fprintf(f, "\"memset\":{\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 "},",
	        n * GPU_WORK_MEMSETS, n * (GPU_WORK_MEMSET32_BYTES + GPU_WORK_MEMSET8_BYTES));
	fprintf(f, "\"graph_launches\":%" PRIu64 ",\"graph_nodes\":%d}\n", r->calls[GW_cuGraphLaunch],
	        GPU_WORK_GRAPH_NODES);
}
