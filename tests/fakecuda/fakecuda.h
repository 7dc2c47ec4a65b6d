/* The stand-in libcuda.so.1 used by cuhook's tests and sample: the API it exports and the
 * conventions its callers need (image format, kernel parameters, magic values).
 *
 * Programs never link against it: they dlopen it and call through pointers, as the CUDA runtime
 * does; they use these declarations only through __typeof__ to get pointer types. The types
 * mirror cuda.h (CUresult is an int, handles are opaque pointers, CUdeviceptr is 64-bit) so that
 * the argument registers look the same as with the real driver, without needing cuda.h. */
#ifndef FAKECUDA_H
#define FAKECUDA_H

#include <stddef.h>
#include <stdint.h>

#include "fakecuda_profiler.h" /* fakecuda_profiler_attach: what the functions marked "submits
                                  work" below tell an attached profiler */

#ifdef __cplusplus
extern "C" {
#endif

typedef int CUresult;
typedef int CUdevice;
typedef uint64_t CUdeviceptr;
typedef struct fake_ctx *CUcontext;
typedef struct fake_module *CUmodule;
typedef struct fake_function *CUfunction;
typedef struct fake_stream *CUstream;
typedef struct fake_graph *CUgraph;
typedef struct fake_graph_node *CUgraphNode;
typedef struct fake_graph_exec *CUgraphExec;
typedef struct { unsigned char bytes[16]; } CUuuid;

/* Same layout as cuda.h's CUlaunchConfig (attributes are accepted and ignored). */
typedef struct {
	unsigned gridDimX, gridDimY, gridDimZ;
	unsigned blockDimX, blockDimY, blockDimZ;
	unsigned sharedMemBytes;
	CUstream hStream;
	void *attrs;
	unsigned numAttrs;
} CUlaunchConfig;

/* Same layout as cuda.h's CUDA_KERNEL_NODE_PARAMS_v2 (extra, kern and ctx must be NULL). */
typedef struct {
	CUfunction func;
	unsigned gridDimX, gridDimY, gridDimZ;
	unsigned blockDimX, blockDimY, blockDimZ;
	unsigned sharedMemBytes;
	void **kernelParams;
	void **extra;
	void *kern;
	CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS;

/* The error codes the stand-in returns (values as in cuda.h). */
enum {
	FAKE_SUCCESS = 0,
	FAKE_ERROR_INVALID_VALUE = 1,
	FAKE_ERROR_OUT_OF_MEMORY = 2,
	FAKE_ERROR_NOT_INITIALIZED = 3,
	FAKE_ERROR_STUB_LIBRARY = 34,
	FAKE_ERROR_INVALID_DEVICE = 101,
	FAKE_ERROR_INVALID_IMAGE = 200,
	FAKE_ERROR_INVALID_CONTEXT = 201,
	FAKE_ERROR_INVALID_HANDLE = 400,
	FAKE_ERROR_NOT_FOUND = 500,
	FAKE_ERROR_ILLEGAL_ADDRESS = 700,
};

#define FAKE_DRIVER_VERSION 13000

/* Device memory: allocation k (0, 1, 2... in the order the driver saw the calls, over all
 * threads) gets FAKE_DPTR_BASE + k * FAKE_DPTR_STRIDE, so the set of pointers a run receives
 * depends only on how many allocations it made, never on thread interleaving. */
#define FAKE_DPTR_BASE 0x100000000000ull
#define FAKE_DPTR_STRIDE 0x1000000ull /* also the largest allocation */

/* A module image: FAKE_IMAGE_MAGIC, then NUL-terminated kernel names, then an empty name.
 * Only the kernels below exist; the image says which of them the module contains. */
#define FAKE_IMAGE_MAGIC "FAKECUBIN1"

/* Kernels, by name, with their kernelParams (each entry points to the value, as in CUDA).
 * Elements are 32-bit, arithmetic wraps. */
/* "fake_scale_add": {CUdeviceptr buf, uint32 n, uint32 mul, uint32 add}: buf[i] = buf[i]*mul+add */
/* "fake_matvec": {CUdeviceptr W, CUdeviceptr x, CUdeviceptr y, uint32 rows, uint32 cols}:
 *                y[r] = sum_c W[r*cols+c] * x[c] */
/* "fake_relu": {CUdeviceptr buf, uint32 n}: buf[i] = max((int32)buf[i], 0) */
/* "_ZN4fake6fill32EPjjj" (fake::fill32(unsigned*, unsigned, unsigned), a C++ name as most real
 *                kernels have): {CUdeviceptr buf, uint32 n, uint32 v}: buf[i] = v */
/* What a profiler is told of them (fakecuda_profiler.h): registers per thread and static shared
 * memory per block, in the order above. */
#define FAKE_KERNEL_REGISTERS {16, 32, 8, 12}
#define FAKE_KERNEL_STATIC_SHARED {0, 1024, 0, 256}

/* Launch limits the stand-in checks (CUDA_ERROR_INVALID_VALUE otherwise). */
#define FAKE_MAX_SHARED_MEM 0xc000u

/* cuLaunchKernel's `extra`: {FAKE_LAUNCH_ECHO, NULL} makes the launch return
 * FAKE_ECHO_RESULT(h) instead of 0, h being a hash of the launch's value arguments (grid, block,
 * shared memory, kernel, whether a stream was given), so that return values differ from call to
 * call and depend on all arguments, the stack-passed ones included. */
#define FAKE_LAUNCH_ECHO ((void *)(uintptr_t)0xec40)
#define FAKE_ECHO_RESULT(h) ((CUresult)(0x40000000u | ((h) & 0x00ffffffu)))

/* cuGetExportTable: two tables (others: FAKE_ERROR_NOT_FOUND), shaped as the real driver's:
 * functions internal to the driver (no symbol), begun like its exports, each with an unwind
 * entry but fake_et_nocfi. The first is size-prefixed; the second is not (its functions start at
 * word 0 and end at a NULL word), as some of the real driver's are. A function shared by both,
 * a slot pointing at data, an empty slot and a slot pointing at an export (cuDriverGetVersion)
 * are what an agent reading them must handle. */
#define FAKE_EXPORT_TABLE_UUID {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, \
                                 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9}}
#define FAKE_EXPORT_TABLE2_UUID {{0xc0, 0xff, 0xee, 0x00, 0x11, 0x22, 0x43, 0x44, \
                                  0x85, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc}}
struct fake_export_table {
	size_t size;                       /* sizeof(struct fake_export_table) */
	unsigned (*mix)(unsigned x);       /* [1] x * 2654435761 ^ 0x5bd1e995 */
	unsigned (*add3)(unsigned a, unsigned b, unsigned c); /* [2] */
	unsigned (*shared)(unsigned x);    /* [3] x + 0x9e37: also table 2's [1] */
	const void *data;                  /* [4] not a function: an agent must skip it */
	const void *empty;                 /* [5] NULL */
	CUresult (*driver_version)(int *version); /* [6] cuDriverGetVersion, an export */
};
struct fake_export_table2 {
	unsigned (*first)(unsigned x);     /* [0] x ^ 0xa5a5 */
	unsigned (*shared)(unsigned x);    /* [1] the first table's [3] */
	unsigned (*nocfi)(unsigned x);     /* [2] x * 3; no unwind entry: its extent is unknown */
	const void *end;                   /* NULL */
};

/* cuGetProcAddress_v2 status values (as in cuda.h). */
enum { FAKE_PROC_SUCCESS = 0, FAKE_PROC_SYMBOL_NOT_FOUND = 1, FAKE_PROC_VERSION_NOT_SUFFICIENT = 2 };

/* Devices 0..FAKECUDA_DEVICES-1 (also in fake_entry.S), each with its primary context. */
#define FAKECUDA_DEVICES 2

/* ---- driver-like entry points (the usual libcuda prologue unless noted) ----------------- */
CUresult cuInit(unsigned flags);
CUresult cuDriverGetVersion(int *version);
CUresult cuDeviceGetCount(int *count); /* FAKECUDA_DEVICES; lea rax,[rip+N]; cmp; jne rel32 */
CUresult cuDeviceGet(CUdevice *dev, int ordinal); /* *dev = ordinal */
CUresult cuDeviceGetAttribute(int *value, int attrib, CUdevice dev); /* value = attrib*10 + dev */
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxGetCurrent(CUcontext *ctx);
/* A thread's contexts are a stack: cuCtxSetCurrent replaces its top (NULL: pops it), push and
 * pop as in cuda.h; cuCtxCreate_v2 (flags 0) pushes a new context, cuCtxDestroy_v2 destroys one
 * it made (popped when on the calling thread's top). */
CUresult cuCtxPushCurrent_v2(CUcontext ctx);
CUresult cuCtxPopCurrent_v2(CUcontext *ctx);
CUresult cuCtxCreate_v2(CUcontext *ctx, unsigned flags, CUdevice dev);
CUresult cuCtxDestroy_v2(CUcontext ctx);
/* The runtime's per-launch queries, counted by the agent's default (CUHOOK_COUNT_DEFAULT). */
CUresult cuCtxGetDevice(CUdevice *dev);
CUresult cuCtxGetDevice_v2(CUdevice *dev, CUcontext ctx); /* ctx NULL: the current one */
CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned *flags, int *active);
CUresult cuCtxSynchronize(void);
/* Profiler control: nothing to do here but the check of the context (as the real ones). */
CUresult cuProfilerStart(void);
CUresult cuProfilerStop(void);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes);
CUresult cuMemFree_v2(CUdeviceptr dptr);
/* Functions marked "submits work" tell an attached profiler of their call and of the work they
 * submit (fakecuda_profiler.h). All work runs at once, on the calling thread: streams only
 * number it. Copies and memsets need their device range inside one live allocation. */
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes);  /* submits work */
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes);        /* submits work */
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes);  /* submits work */
/* unified addressing: each side is device memory when it lies in a live allocation, else host
 * memory (the copy kind follows) */
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream); /* submits work */
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes, CUstream stream); /* submits work */
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes, CUstream stream); /* submits work */
CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n);     /* submits work */
CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned value, size_t n);         /* submits work */
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned value, size_t n, CUstream stream); /* submits work */
CUresult cuModuleLoadData(CUmodule *module, const void *image);
CUresult cuModuleGetFunction(CUfunction *f, CUmodule module, const char *name);
CUresult cuModuleUnload(CUmodule module);
CUresult cuLaunchKernel(CUfunction f, unsigned gridDimX, unsigned gridDimY, unsigned gridDimZ,
                        unsigned blockDimX, unsigned blockDimY, unsigned blockDimZ,
                        unsigned sharedMemBytes, CUstream stream, void **kernelParams, void **extra);
                                                                        /* submits work */
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra);
                                                                        /* submits work */
/* Graphs of kernel nodes only. Nodes run in the order they were added (dependencies are
 * accepted and not checked); a node copies its kernel's parameter values when added, and an
 * executable graph copies the graph's nodes when instantiated, as CUDA does. Graph ids and node
 * ids (what a profiler is told) count from 1 in the order graphs and nodes were created. */
CUresult cuGraphCreate(CUgraph *graph, unsigned flags);
CUresult cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                                 size_t ndeps, const CUDA_KERNEL_NODE_PARAMS *params);
CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long flags);
CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream);             /* submits work */
CUresult cuGraphExecDestroy(CUgraphExec exec);
CUresult cuGraphDestroy(CUgraph graph);
/* The nodes of a graph, in the order they were added: with nodes NULL, *count = how many;
 * else up to *count of them, and *count = how many the graph has. */
CUresult cuGraphGetNodes(CUgraph graph, CUgraphNode *nodes, size_t *count);
CUresult cuGraphNodeGetType(CUgraphNode node, int *type); /* 0: kernel (the only kind here) */
/* The node's parameters as added (func, dims, shared memory; kernelParams NULL, kern and ctx
 * NULL). */
CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS *params);
/* A function's kernel name (fakecuda.h's kernel list); FAKE_ERROR_INVALID_HANDLE for anything
 * else (an unloaded module's functions included). */
CUresult cuFuncGetName(const char **name, CUfunction f);
/* The stand-in has no CUkernel: always FAKE_ERROR_INVALID_HANDLE (or INVALID_VALUE without
 * name). */
CUresult cuKernelGetName(const char **name, void *kernel);
CUresult cuStreamCreate(CUstream *stream, unsigned flags);
CUresult cuStreamDestroy_v2(CUstream stream);
CUresult cuStreamSynchronize(CUstream stream);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, uint64_t flags, int *status);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, uint64_t flags);
CUresult cuGetExportTable(const void **table, const CUuuid *id);
CUresult cuGetErrorString(CUresult error, const char **str);

/* ---- awkward shapes for the patching engine (tests/fakecuda/fake_entry.S says why) ------- */
int cuFakeConstA(void);            /* mov eax,0; ret (6 bytes, 16 apart) */
int cuFakeConstB(void);            /* mov eax,0x5a; ret */
int cuFakeConstC(void);            /* mov eax,999; ret */
int cuFakeNextSerial(void);        /* mov eax,[rip+N]; add eax,1; mov [rip+N],eax; ret: 42, 43...
                                      not thread-safe on purpose (as measured in libcuda) */
int cuFakeSwitch(int sel, int v);  /* cmp edi,1; je rel8; cmp edi,2; je rel32:
                                      sel 1: 3v, sel 2: v ^ 0x5a5a, else v + 1000 */
int cuFakeRipCmp(int x);           /* cmp dword [rip+N],0 first: 3 before cuInit, else 2x+1 */
unsigned cuFakeLoopBack(int n, unsigned acc);    /* acc + n + ... + 1; loops into its first
                                                    5 bytes: must be REFUSED, still works */
unsigned cuFakeLoopToStart(int n, unsigned acc); /* acc + 2(n + ... + 1); loops to its own
                                                    first byte: must be REFUSED */
int cuFakeShort(void);             /* 7; 4 bytes long: must be REFUSED (too small) */
int cuFakeAlEcho(int base, ...);   /* base + al (the caller's count of vector registers) */
int cuFakeVarSum(int n, ...);      /* C varargs: (int)(1000 * sum of n doubles) */
int cuFakeScale(float a, double b);       /* (int)(a * b): xmm0/xmm1 must survive */
double cuFakeMulD(double a, double b);    /* a * b + 0.5 in xmm0: xmm0 must survive the exit */
int cuFakeOuter(int x);            /* cuFakeInner(3x) + 7: the inner call is traced at depth 1 */
int cuFakeInner(int x);            /* x ^ 0x1234 */
/* The first export table's mix(x) + 1, called through the table: nested at depth 1 */
unsigned cuFakeExportCall(unsigned x);
int cuFakeAlias(int x);            /* x * 5 + 1; cuFakeAlias_v2 is the same address */
int cuFakeAlias_v2(int x);
int cuFakeCallFirst(int x);        /* starts with call rel32: 0x700 + x */
int cuFakeThunk(int x);            /* the whole function is jmp rel32: x * 7 - 3 */

#ifdef __cplusplus
}
#endif

/* ==== robustness tests (tests/robust) ==========================================================
 * Entry points added for tests/robust (the usual libcuda prologue, fake_entry.S). */
#ifdef __cplusplus
extern "C" {
#endif
/* n nested calls through its own exported entry (n, n-1, ..., 1). Result, as a reference:
 *   R(1, acc) = acc*31 + 1;  R(n, acc) = R(n-1, acc*31 + n) * 3 + n   (unsigned, wrapping) */
unsigned cuFakeRecurse(unsigned n, unsigned acc);
/* cb(x, arg) + 1 (-1 if cb is NULL); cb may longjmp out of the call. */
int cuFakeCallback(int (*cb)(int, void *), int x, void *arg);
#ifdef __cplusplus
}
#endif

#endif

/* ==== flight recorder tests (tests/engine/check_flight.py) ======================================
 * The usual libcuda prologue (fake_entry.S). */
#ifdef __cplusplus
extern "C" {
#endif
/* FAKE_SUCCESS, or FAKE_ERROR_ILLEGAL_ADDRESS when seq is FAKE_STEP_FAIL: one argument (a
 * caller's sequence number), an error exactly where the caller chooses. */
#define FAKE_STEP_FAIL 0xffffffffu
CUresult cuFakeStep(unsigned seq);
/* Sleeps ms milliseconds (nanosleep), then FAKE_SUCCESS. */
CUresult cuFakeSleep(unsigned ms);
#ifdef __cplusplus
}
#endif

/* ==== ioctl tests (tests/ioctl) =================================================================
 * Entry points that talk to "NVIDIA device files" as libcuda does: through libc's ioctl, with
 * request numbers encoded the NVIDIA way (facts from open-gpu-kernel-modules: frontend requests
 * 'F' 200 + n, resource manager escapes 'F' 0x27.., nvidia-uvm's raw numbers). The files are
 * regular files named nvidiactl, nvidia0 and nvidia-uvm in a directory the caller gives; the
 * tests point the agent's ioctl_paths at them, and tests/ioctl/ioctl_user.c can answer the
 * requests the way the kernel driver would (a seccomp trap). Without it every request fails with
 * ENOTTY, as ioctls on regular files do; every function then returns FAKE_ERROR_ILLEGAL_ADDRESS
 * (a failed ioctl) or the RM status it got, and never crashes. */
#ifdef __cplusplus
extern "C" {
#endif
/* _IOWR('F', nr, size) */
#define FAKE_NV_IOWR(nr, size) ((3u << 30) | ((unsigned)(size) << 16) | (0x46u << 8) | (unsigned)(nr))
#define FAKE_NV_REGISTER_FD FAKE_NV_IOWR(201, 4)      /* {int ctl_fd} */
#define FAKE_NV_CHECK_VERSION FAKE_NV_IOWR(210, 72)   /* {u32 cmd, reply; char version[64]} */
#define FAKE_NV_XFER FAKE_NV_IOWR(211, 16)            /* {u32 cmd, size; u64 ptr} */
#define FAKE_NV_RM_FREE FAKE_NV_IOWR(0x29, 16)        /* NVOS00 */
#define FAKE_NV_RM_CONTROL FAKE_NV_IOWR(0x2a, 32)     /* NVOS54 */
#define FAKE_NV_RM_ALLOC FAKE_NV_IOWR(0x2b, 32)       /* NVOS21 */
#define FAKE_NV_UNKNOWN_F FAKE_NV_IOWR(0x99, 8)       /* 'F', no such escape */
#define FAKE_NV_UNKNOWN_RAW 0x00012345u               /* nobody's request */
#define FAKE_UVM_INITIALIZE 0x30000001u               /* {u64 flags; u32 rmStatus} */
#define FAKE_UVM_REGISTER_GPU 37u                     /* {uuid[16]; bool; s32 node; s32 fd;
                                                         u32 hClient, hSmcPartRef; u32 rmStatus} */
#define FAKE_NV_VERSION "580.159.04"
#define FAKE_NV_BAD_CLASS 0xdeadu                     /* RM_ALLOC of it: NV_ERR_INVALID_CLASS */
#define FAKE_NV_BAD_CMD 0xbad0bad0u                   /* RM_CONTROL of it: NV_ERR_NOT_SUPPORTED */
#define FAKE_NV_HANDLE_BASE 0xcaf00000u               /* the n-th new handle is BASE + n */

/* nvos.h layouts the stand-in and its "kernel" share */
struct fake_nvos21 { uint32_t hRoot, hObjectParent, hObjectNew, hClass; uint64_t pAllocParms;
                     uint32_t paramsSize, status; };
struct fake_nvos54 { uint32_t hClient, hObject, cmd, flags; uint64_t params; uint32_t paramsSize, status; };
struct fake_nvos00 { uint32_t hRoot, hObjectParent, hObjectOld, status; };
struct fake_nv_version { uint32_t cmd, reply; char version[64]; };
struct fake_nv_xfer { uint32_t cmd, size; uint64_t ptr; };

/* Open dir/nvidiactl, dir/nvidia0, dir/nvidia-uvm (created if needed), check the version string
 * on nvidiactl and register nvidiactl's fd on nvidia0: 2 ioctls (both made whatever the first
 * one's result, as in every function here that makes several). 0, or FAKE_ERROR_* */
CUresult cuFakeNvOpen(const char *dir);
/* The fd of nvidiactl (0), nvidia0 (1), nvidia-uvm (2), -1 when closed. */
int cuFakeNvFd(int which);
/* RM_ALLOC of hClass under hParent (client hClient): *hNew gets the driver's new handle. Returns
 * the RM status (FAKE_ERROR_ILLEGAL_ADDRESS when the ioctl itself failed). 1 ioctl. */
CUresult cuFakeNvAlloc(unsigned hClient, unsigned hParent, unsigned hClass, unsigned *hNew);
/* RM_CONTROL cmd on hObject with params (size bytes): the RM status. 1 ioctl. */
CUresult cuFakeNvControl(unsigned hClient, unsigned hObject, unsigned cmd, void *params, unsigned size);
/* The same control passed through XFER_CMD. 1 ioctl. */
CUresult cuFakeNvControlXfer(unsigned hClient, unsigned hObject, unsigned cmd, void *params, unsigned size);
/* RM_FREE of hObject. 1 ioctl. */
CUresult cuFakeNvFree(unsigned hClient, unsigned hParent, unsigned hObject);
/* UVM_INITIALIZE, then UVM_REGISTER_GPU on nvidia-uvm: 2 ioctls. */
CUresult cuFakeNvUvm(unsigned hClient);
/* cuFakeNvControl(cmd) twice through its exported entry: ioctls at depth 2. */
CUresult cuFakeNvNested(unsigned hClient, unsigned hObject, unsigned cmd);
/* A request no table knows ('F' 0x99) and a raw one (0x12345) on nvidiactl: both fail with
 * ENOTTY; returns how many failed (2). 2 ioctls. */
CUresult cuFakeNvUnknown(void);
/* ioctls on files that are not devices: FIONREAD on a pipe (returns its count, 0) and an RM
 * request on dir/other.dat (fails). None is an NVIDIA ioctl. Returns 0. */
CUresult cuFakeNvNotDevice(const char *dir);
/* Close the three files (libc's close). */
CUresult cuFakeNvClose(void);
#ifdef __cplusplus
}
#endif
