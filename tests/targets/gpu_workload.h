/* A GPU workload on the stand-in libcuda (tests/fakecuda) with known numbers: every thread runs
 * the same iteration, on its own stream, so the GPU work a run submits is the iteration's times
 * the iterations done. Used by gpu_work (tests/targets/gpu_work.c: a program to trace) and by
 * tests/fakecupti's self-test (in-process, against the stand-in libcupti).
 *
 * One iteration of one thread, in this order (S: the thread's stream, 0: the NULL stream):
 *   cuMemcpyHtoD_v2        HtoD  1024 bytes                      0
 *   cuMemcpyHtoDAsync_v2   HtoD  1024 bytes                      S
 *   cuLaunchKernel         fake_scale_add       grid 2x1x1  block 128x1x1  shared 0    S
 *   cuLaunchKernelEx       fake_relu            grid 1x1x1  block 256x1x1  shared 512  S
 *   cuLaunchKernel         _ZN4fake6fill32EPjjj grid 4x1x1  block 64x1x1   shared 0    0
 *   cuLaunchKernelEx       fake_matvec          grid 1x1x1  block 16x1x1   shared 0    S
 *   cuMemsetD32Async       1024 bytes of 0x01020304                      S
 *   cuMemsetD8_v2          512 bytes of 0x5a                             0
 *   cuMemcpyAsync          DtoD  1024 bytes                      S
 *   cuGraphLaunch          the thread's graph: fake_scale_add, fake_relu, _ZN4fake6fill32EPjjj
 *                          (grid 1x1x1 block 32x1x1 shared 0 each)        S
 *   cuMemcpyDtoHAsync_v2   DtoH  1024 bytes                      S
 *   cuMemcpyDtoH_v2        DtoH  1024 bytes                      0
 *   cuStreamSynchronize(S)
 * Before its first iteration a thread creates its stream, 3 allocations and its graph (3
 * cuGraphAddKernelNode_v2 and a cuGraphInstantiateWithFlags); after its last, destroys them. */
#ifndef GPU_WORKLOAD_H
#define GPU_WORKLOAD_H

#include <stdint.h>
#include <stdio.h>

#define GPU_WORK_COPY_BYTES 1024u
#define GPU_WORK_MEMSET32_BYTES 1024u
#define GPU_WORK_MEMSET32_VALUE 0x01020304u
#define GPU_WORK_MEMSET8_BYTES 512u
#define GPU_WORK_MEMSET8_VALUE 0x5au

/* Per iteration: kernels by name, launched directly and by the graph launch. */
struct gpu_work_kernel { const char *name; unsigned direct, in_graph; };
#define GPU_WORK_KERNELS 4
extern const struct gpu_work_kernel gpu_work_kernels[GPU_WORK_KERNELS];
#define GPU_WORK_GRAPH_NODES 3
/* Per iteration: copies by kind (CUPTI's numbers: 1 HtoD, 2 DtoH, 8 DtoD), memsets. */
#define GPU_WORK_HTOD 2u
#define GPU_WORK_DTOH 2u
#define GPU_WORK_DTOD 1u
#define GPU_WORK_MEMSETS 2u

/* The functions the workload calls (entry points found with dlsym). */
#define GPU_WORK_FUNCS(X)                                                                          \
	X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease_v2)           \
	X(cuCtxSetCurrent) X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuModuleLoadData) X(cuModuleGetFunction) \
	X(cuModuleUnload) X(cuStreamCreate) X(cuStreamDestroy_v2) X(cuStreamSynchronize)               \
	X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuMemcpyHtoD_v2) X(cuMemcpyHtoDAsync_v2)               \
	X(cuMemcpyDtoH_v2) X(cuMemcpyDtoHAsync_v2) X(cuMemcpyAsync) X(cuMemsetD8_v2)                   \
	X(cuMemsetD32Async) X(cuGraphCreate) X(cuGraphAddKernelNode_v2) X(cuGraphInstantiateWithFlags) \
	X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy)

enum gpu_work_fn {
#define GPU_WORK_X(n) GW_##n,
	GPU_WORK_FUNCS(GPU_WORK_X)
#undef GPU_WORK_X
	GW_NFUNCS
};
extern const char *const gpu_work_fn_names[GW_NFUNCS];

#define GPU_WORK_MAX_THREADS 64

struct gpu_work_result {
	uint64_t iterations;       /* over all threads */
	int threads;               /* that ran */
	uint32_t tids[GPU_WORK_MAX_THREADS];        /* each thread's gettid() */
	uint32_t pthread_ids[GPU_WORK_MAX_THREADS]; /* and its pthread_self(), cut to 32 bits */
	uint64_t calls[GW_NFUNCS]; /* calls made of each function since gpu_work_open, by every
	                              run, setup and teardown included */
	uint64_t checksum;         /* of the memory copied back: the same for the same iterations */
};

/* The submitting calls as the CUDA runtime makes them (a program calling cudaLaunchKernel,
 * cudaMemcpy...): each inside a stand-in runtime call (fakecuda_runtime_enter/exit,
 * fakecuda_profiler.h) of the runtime function named here, by its CUPTI runtime callback id
 * (cupti_runtime_cbid.h; test_fakecupti.c checks the values). Per iteration: 4 launches, 5
 * copies, 2 memsets, 1 graph launch = GPU_WORK_RUNTIME_CALLS runtime calls. */
#define GPU_WORK_RT_cudaMemcpy 31u
#define GPU_WORK_RT_cudaMemcpyAsync 41u
#define GPU_WORK_RT_cudaMemset 49u
#define GPU_WORK_RT_cudaMemsetAsync 51u
#define GPU_WORK_RT_cudaLaunchKernel 211u
#define GPU_WORK_RT_cudaGraphLaunch 311u
#define GPU_WORK_RT_cudaLaunchKernelExC 430u
#define GPU_WORK_RUNTIME_CALLS 12u
/* Before gpu_work_run: make the submitting calls through the stand-in runtime (1) or straight
 * (0, the default). */
void gpu_work_through_runtime(int on);

/* Opens the stand-in libcuda at `libcuda` (dlopen), initializes it and loads the kernels'
 * module. 0, or -1 with a message on stderr. */
int gpu_work_open(const char *libcuda);
/* Runs `threads` threads of `iterations` iterations each (0: until *stop becomes non-zero; each
 * thread then ends after its current iteration), sleeping pause_us microseconds after each.
 * `progress`, if not NULL, counts iterations done as they end. 0, or -1 with a message on
 * stderr (a driver call failed or returned wrong values). */
int gpu_work_run(int threads, uint64_t iterations, unsigned pause_us, const volatile int *stop,
                 uint64_t *progress, struct gpu_work_result *out);
/* Unloads the module and releases the context (2 calls, added to out->calls). */
void gpu_work_close(struct gpu_work_result *out);

/* Prints what a checker needs: "expect NAME N" per function called, and one line
 * "gpu {json}" with the GPU work submitted: kernels (direct launches, by name), graph_kernels
 * (by name), memcpy (by kind: count and bytes), memset (count and bytes), graph_launches. */
void gpu_work_print(FILE *f, const struct gpu_work_result *r);

#endif
