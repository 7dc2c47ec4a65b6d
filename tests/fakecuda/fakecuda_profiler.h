/* The stand-in libcuda.so.1's profiler interface: how a profiler inside the process (the stand-in
 * libcupti, tests/fakecupti) learns of every driver call that submits GPU work and of the work
 * it submits, as the real CUPTI learns of it from inside the real libcuda.
 *
 * Its own header, included by fakecuda.h, so that a file that includes the toolkit's cupti.h
 * (and so cuda.h, whose types clash with fakecuda.h's) can use it too: it needs only
 * <stdint.h>. Values of the enums are those of cupti_activity.h.
 *
 * A profiler attaches with fakecuda_profiler_attach(ops) (exported by the stand-in libcuda; not a
 * cu* name, so cuhook never hooks it; find it with dlopen("libcuda.so.1", RTLD_NOLOAD) + dlsym).
 * From then on every submitting function (fakecuda.h marks them "submits work") calls, on the
 * calling thread and inside the exported function's body (so a hook on the function sees them
 * between its entry and its exit):
 *
 *   ops->api_enter(&call)                      call.cbid = CUPTI_DRIVER_TRACE_CBID_<its name>
 *   ops->kernel/memcpy/memset(&call, &work)    per piece of GPU work it submitted, in order
 *                                              (a graph launch: one kernel per node); none when
 *                                              it fails before submitting anything
 *   ops->api_exit(&call)                       call.result = the CUresult it returns
 *
 * The stand-in CUDA runtime: a test program calling the driver "through the runtime" (the CUDA
 * runtime's cudaLaunchKernel, cudaMemcpy... call the driver's entry points for the work)
 * brackets those driver calls with fakecuda_runtime_enter(&rcall) / fakecuda_runtime_exit(&rcall),
 * rcall.cbid a CUPTI_RUNTIME_TRACE_CBID_*; the driver passes them on:
 *
 *   ops->runtime_enter(&rcall)                 before the driver calls it makes
 *   ops->runtime_exit(&rcall)                  after them, rcall.result set by the caller
 *
 * `call` lives on the caller's stack from api_enter to api_exit; call.profiler is the
 * profiler's own (a correlation id, a start time). A call that read the pointer before a detach
 * finishes with the old ops: a profiler's functions must stay callable (and ignore such calls)
 * after it detaches. With no profiler attached, a submitting function pays one load and one
 * predictable test of a pointer, no call. */
#ifndef FAKECUDA_PROFILER_H
#define FAKECUDA_PROFILER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Ids the stand-in driver gives its profiler: all work on one device and one context, whichever
 * of its FAKECUDA_DEVICES devices and contexts the host side used. Streams: the NULL stream is
 * FAKECUDA_NULL_STREAM_ID (as CUPTI numbers the legacy default stream); the n-th stream created
 * (n = 0, 1, ...) is FAKECUDA_FIRST_STREAM_ID + n. */
#define FAKECUDA_DEVICE_ID 0u
#define FAKECUDA_CONTEXT_ID 1u
#define FAKECUDA_NULL_STREAM_ID 7u
#define FAKECUDA_FIRST_STREAM_ID 13u

/* CUpti_ActivityMemcpyKind */
enum fakecuda_copy_kind { FAKECUDA_COPY_HTOD = 1, FAKECUDA_COPY_DTOH = 2, FAKECUDA_COPY_DTOD = 8,
                          FAKECUDA_COPY_HTOH = 9 };
/* CUpti_ActivityMemoryKind (host memory of the stand-in is always pageable) */
enum fakecuda_memory_kind { FAKECUDA_MEMORY_PAGEABLE = 1, FAKECUDA_MEMORY_DEVICE = 3 };

struct fakecuda_api_call {
	uint32_t cbid;        /* CUPTI_DRIVER_TRACE_CBID_* of the exported function's name */
	int32_t result;       /* the CUresult returned; set before api_exit */
	uint64_t profiler[4]; /* the profiler's, from api_enter to api_exit */
	const void *driver_;  /* the stand-in driver's (a runtime call: the profiler told of it) */
};

/* Where a piece of work runs. graph_id and graph_node_id are 0 unless a graph launch ran it;
 * then they are the CUgraph's id and its node's id (both unique in the process, from 1). */
struct fakecuda_where {
	uint32_t device_id, context_id, stream_id;
	uint32_t graph_id;
	uint64_t graph_node_id;
};

struct fakecuda_kernel_work {
	const char *name; /* the kernel's (mangled) name; static, valid while libcuda is loaded */
	uint32_t grid[3], block[3];
	uint32_t dynamic_shared, static_shared; /* bytes per block */
	uint32_t registers;                     /* per thread */
	struct fakecuda_where where;
};

struct fakecuda_memcpy_work {
	uint64_t bytes;
	uint8_t copy_kind;          /* enum fakecuda_copy_kind */
	uint8_t src_kind, dst_kind; /* enum fakecuda_memory_kind */
	uint8_t async;              /* an *Async function (CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) */
	struct fakecuda_where where;
};

struct fakecuda_memset_work {
	uint64_t bytes;
	uint32_t value;       /* the value stored (a byte for cuMemsetD8*, a word for cuMemsetD32*) */
	uint8_t memory_kind;  /* enum fakecuda_memory_kind */
	uint8_t async;        /* an *Async function (CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) */
	struct fakecuda_where where;
};

struct fakecuda_profiler {
	void (*api_enter)(struct fakecuda_api_call *call);
	/* 1 when the profiler recorded the kernel (the driver counts them: fakecuda_profiler_kernels) */
	int (*kernel)(struct fakecuda_api_call *call, const struct fakecuda_kernel_work *work);
	void (*memcpy)(struct fakecuda_api_call *call, const struct fakecuda_memcpy_work *work);
	void (*memset)(struct fakecuda_api_call *call, const struct fakecuda_memset_work *work);
	void (*api_exit)(struct fakecuda_api_call *call);
	void (*runtime_enter)(struct fakecuda_api_call *rcall);
	void (*runtime_exit)(struct fakecuda_api_call *rcall);
};

/* Attach ops (every member set; ops must stay valid while the library is loaded), or detach
 * with NULL. 0, or -1 when another profiler is attached (detach it first) or a member is NULL. */
int fakecuda_profiler_attach(const struct fakecuda_profiler *ops);
/* The stand-in runtime's bracket around the driver calls of one runtime call (above); nothing
 * when no profiler is attached. */
void fakecuda_runtime_enter(struct fakecuda_api_call *rcall);
void fakecuda_runtime_exit(struct fakecuda_api_call *rcall);
/* The kernels profilers have recorded (ops->kernel returned 1): a test program watches them. */
unsigned long fakecuda_profiler_kernels(void);

/* 1 once cuInit has been called (the stand-in CUPTI models what CUPTI allows only before). */
int fakecuda_initialized(void);

#ifdef __cplusplus
}
#endif

#endif
