/* Semantics of the stand-in libcuda.so.1: deterministic, thread-safe, small. The exported entry
 * points are in fake_entry.S (their first bytes matter); they jump to the impl_* functions here,
 * which are hidden. fakecuda.h documents what every function returns. */
#include "fakecuda.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

#include <cupti_driver_cbid.h> /* the cbid a profiler is told of: CUPTI's number for each name */

#define HIDDEN __attribute__((visibility("hidden")))
#define EXPORT __attribute__((visibility("default")))

/* Read by the assembly (cuDeviceGetCount, cuFakeRipCmp): set by cuInit. */
HIDDEN int fake_initialized;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- the profiler (fakecuda_profiler.h) ------------------------------------------------------ */

static const struct fakecuda_profiler *profiler; /* atomic */

/* For the stand-in CUPTI, which models what CUPTI allows only before cuInit. Not a cu* name,
 * so cuhook never hooks it. */
EXPORT int fakecuda_initialized(void)
{
	return __atomic_load_n(&fake_initialized, __ATOMIC_ACQUIRE);
}

static unsigned long profiler_kernels;

/* The kernels profilers recorded (tests/targets/names_user.c and gpu_work.c watch cuhook's
 * sessions with it). */
EXPORT unsigned long fakecuda_profiler_kernels(void)
{
	return __atomic_load_n(&profiler_kernels, __ATOMIC_RELAXED);
}

EXPORT int fakecuda_profiler_attach(const struct fakecuda_profiler *ops)
{
	if (!ops) {
		__atomic_store_n(&profiler, NULL, __ATOMIC_RELEASE);
		return 0;
	}
	if (!ops->api_enter || !ops->kernel || !ops->memcpy || !ops->memset || !ops->api_exit || !ops->runtime_enter ||
	    !ops->runtime_exit)
		return -1;
	const struct fakecuda_profiler *none = NULL;
	return __atomic_compare_exchange_n(&profiler, &none, ops, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)
	           ? 0 : -1;
}

/* The profiler read at the runtime call's start is the one told of its end (rcall->driver_
 * keeps it, as prof does for driver calls). */
EXPORT void fakecuda_runtime_enter(struct fakecuda_api_call *rcall)
{
	const struct fakecuda_profiler *ops = __atomic_load_n(&profiler, __ATOMIC_ACQUIRE);
	memset(rcall->profiler, 0, sizeof(rcall->profiler));
	rcall->driver_ = ops;
	if (ops)
		ops->runtime_enter(rcall);
}

EXPORT void fakecuda_runtime_exit(struct fakecuda_api_call *rcall)
{
	const struct fakecuda_profiler *ops = rcall->driver_;
	if (ops)
		ops->runtime_exit(rcall);
}

/* One submitting call as its profiler sees it. ops is read once, at entry: the whole call then
 * reports to the profiler that was attached when it began (or to none). */
struct prof {
	const struct fakecuda_profiler *ops;
	struct fakecuda_api_call call;
};

#define CBID(name) CUPTI_DRIVER_TRACE_CBID_##name

static inline void prof_enter(struct prof *pf, uint32_t cbid)
{
	pf->ops = __atomic_load_n(&profiler, __ATOMIC_ACQUIRE);
	if (__builtin_expect(pf->ops != NULL, 0)) {
		memset(&pf->call, 0, sizeof(pf->call));
		pf->call.cbid = cbid;
		pf->ops->api_enter(&pf->call);
	}
}

static inline CUresult prof_exit(struct prof *pf, CUresult r)
{
	if (__builtin_expect(pf->ops != NULL, 0)) {
		pf->call.result = r;
		pf->ops->api_exit(&pf->call);
	}
	return r;
}

/* ---- init, device, context ------------------------------------------------------------------ */

/* FAKECUDA_DEVICES devices, each with its primary context; cuCtxCreate makes more. A thread's
 * contexts are a stack (cuCtxPushCurrent/cuCtxPopCurrent), its top the current one. */
struct fake_ctx { unsigned magic; CUdevice device; };
#define CTX_MAGIC 0xc0c0c0c0u
static struct fake_ctx primary_ctx[FAKECUDA_DEVICES] = {{CTX_MAGIC, 0}, {CTX_MAGIC, 1}};
static unsigned primary_refs[FAKECUDA_DEVICES];
#define CTX_STACK 8
static __thread CUcontext ctx_stack[CTX_STACK];
static __thread unsigned ctx_depth;

static CUcontext current_ctx(void)
{
	return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
}

static int bad_device(CUdevice dev)
{
	return dev < 0 || dev >= FAKECUDA_DEVICES;
}

HIDDEN CUresult impl_cuInit(unsigned flags)
{
	if (flags != 0)
		return FAKE_ERROR_INVALID_VALUE;
	__atomic_store_n(&fake_initialized, 1, __ATOMIC_RELEASE);
	return FAKE_SUCCESS;
}

static CUresult need_init(void)
{
	return __atomic_load_n(&fake_initialized, __ATOMIC_ACQUIRE) ? FAKE_SUCCESS : FAKE_ERROR_NOT_INITIALIZED;
}

HIDDEN CUresult impl_cuDriverGetVersion(int *version)
{
	if (!version)
		return FAKE_ERROR_INVALID_VALUE;
	*version = FAKE_DRIVER_VERSION; /* works before cuInit, as the real one does */
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuDeviceGet(CUdevice *dev, int ordinal)
{
	if (need_init())
		return FAKE_ERROR_NOT_INITIALIZED;
	if (!dev)
		return FAKE_ERROR_INVALID_VALUE;
	if (bad_device(ordinal))
		return FAKE_ERROR_INVALID_DEVICE;
	*dev = ordinal;
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuDeviceGetAttribute(int *value, int attrib, CUdevice dev)
{
	if (need_init())
		return FAKE_ERROR_NOT_INITIALIZED;
	if (!value)
		return FAKE_ERROR_INVALID_VALUE;
	if (bad_device(dev))
		return FAKE_ERROR_INVALID_DEVICE;
	*value = attrib * 10 + dev;
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
	if (need_init())
		return FAKE_ERROR_NOT_INITIALIZED;
	if (!ctx)
		return FAKE_ERROR_INVALID_VALUE;
	if (bad_device(dev))
		return FAKE_ERROR_INVALID_DEVICE;
	__atomic_add_fetch(&primary_refs[dev], 1, __ATOMIC_RELAXED);
	*ctx = &primary_ctx[dev];
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	if (bad_device(dev))
		return FAKE_ERROR_INVALID_DEVICE;
	unsigned refs = __atomic_load_n(&primary_refs[dev], __ATOMIC_RELAXED);
	do {
		if (refs == 0)
			return FAKE_ERROR_INVALID_CONTEXT;
	} while (!__atomic_compare_exchange_n(&primary_refs[dev], &refs, refs - 1, 0, __ATOMIC_RELAXED,
	                                      __ATOMIC_RELAXED));
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuCtxSetCurrent(CUcontext ctx)
{
	if (ctx && ctx->magic != CTX_MAGIC)
		return FAKE_ERROR_INVALID_CONTEXT;
	if (!ctx) { /* as the real driver: pops the top, if any */
		if (ctx_depth)
			ctx_depth--;
	} else if (ctx_depth) {
		ctx_stack[ctx_depth - 1] = ctx;
	} else {
		ctx_stack[ctx_depth++] = ctx;
	}
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuCtxPushCurrent_v2(CUcontext ctx)
{
	if (!ctx || ctx->magic != CTX_MAGIC)
		return FAKE_ERROR_INVALID_CONTEXT;
	if (ctx_depth == CTX_STACK)
		return FAKE_ERROR_OUT_OF_MEMORY;
	ctx_stack[ctx_depth++] = ctx;
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuCtxPopCurrent_v2(CUcontext *ctx)
{
	if (!ctx_depth)
		return FAKE_ERROR_INVALID_CONTEXT;
	CUcontext top = ctx_stack[--ctx_depth];
	if (ctx)
		*ctx = top;
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuCtxCreate_v2(CUcontext *ctx, unsigned flags, CUdevice dev)
{
	if (need_init())
		return FAKE_ERROR_NOT_INITIALIZED;
	if (!ctx || flags != 0)
		return FAKE_ERROR_INVALID_VALUE;
	if (bad_device(dev))
		return FAKE_ERROR_INVALID_DEVICE;
	if (ctx_depth == CTX_STACK)
		return FAKE_ERROR_OUT_OF_MEMORY;
	struct fake_ctx *c = malloc(sizeof(*c));
	if (!c)
		return FAKE_ERROR_OUT_OF_MEMORY;
	*c = (struct fake_ctx){CTX_MAGIC, dev};
	ctx_stack[ctx_depth++] = c;
	*ctx = c;
	return FAKE_SUCCESS;
}

/* Only a context cuCtxCreate made; popped from the calling thread's stack when on top. */
HIDDEN CUresult impl_cuCtxDestroy_v2(CUcontext ctx)
{
	if (!ctx || ctx->magic != CTX_MAGIC)
		return FAKE_ERROR_INVALID_CONTEXT;
	for (unsigned d = 0; d < FAKECUDA_DEVICES; d++)
		if (ctx == &primary_ctx[d])
			return FAKE_ERROR_INVALID_CONTEXT;
	if (ctx_depth && ctx_stack[ctx_depth - 1] == ctx)
		ctx_depth--;
	ctx->magic = 0;
	free(ctx);
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuCtxGetCurrent(CUcontext *ctx)
{
	if (!ctx)
		return FAKE_ERROR_INVALID_VALUE;
	*ctx = current_ctx();
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuCtxGetDevice_v2(CUdevice *dev, CUcontext ctx)
{
	if (!ctx)
		ctx = current_ctx();
	if (!ctx)
		return FAKE_ERROR_INVALID_CONTEXT;
	if (ctx->magic != CTX_MAGIC)
		return FAKE_ERROR_INVALID_CONTEXT;
	if (!dev)
		return FAKE_ERROR_INVALID_VALUE;
	*dev = ctx->device;
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuCtxGetDevice(CUdevice *dev)
{
	return impl_cuCtxGetDevice_v2(dev, NULL);
}

HIDDEN CUresult impl_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned *flags, int *active)
{
	if (need_init())
		return FAKE_ERROR_NOT_INITIALIZED;
	if (bad_device(dev))
		return FAKE_ERROR_INVALID_DEVICE;
	if (!flags || !active)
		return FAKE_ERROR_INVALID_VALUE;
	*flags = 0;
	*active = __atomic_load_n(&primary_refs[dev], __ATOMIC_RELAXED) != 0;
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuCtxSynchronize(void)
{
	return current_ctx() ? FAKE_SUCCESS : FAKE_ERROR_INVALID_CONTEXT;
}

/* ---- profiler control: a tool's capture range (cuhook's capture_range=cudaProfilerApi) ------- */

HIDDEN CUresult impl_cuProfilerStart(void)
{
	return current_ctx() ? FAKE_SUCCESS : FAKE_ERROR_INVALID_CONTEXT;
}

HIDDEN CUresult impl_cuProfilerStop(void)
{
	return current_ctx() ? FAKE_SUCCESS : FAKE_ERROR_INVALID_CONTEXT;
}

/* ---- streams -------------------------------------------------------------------------------- */

#define STREAM_MAGIC 0x5757aaaau
struct fake_stream { unsigned magic; unsigned flags; uint32_t id; };
static uint32_t streams_created; /* atomic */

HIDDEN CUresult impl_cuStreamCreate(CUstream *stream, unsigned flags)
{
	if (!current_ctx())
		return FAKE_ERROR_INVALID_CONTEXT;
	if (!stream || flags > 1)
		return FAKE_ERROR_INVALID_VALUE;
	struct fake_stream *s = malloc(sizeof(*s));
	if (!s)
		return FAKE_ERROR_OUT_OF_MEMORY;
	*s = (struct fake_stream){STREAM_MAGIC, flags,
	                          FAKECUDA_FIRST_STREAM_ID + __atomic_fetch_add(&streams_created, 1, __ATOMIC_RELAXED)};
	*stream = s;
	return FAKE_SUCCESS;
}

static int bad_stream(CUstream s)
{
	return s && s->magic != STREAM_MAGIC;
}

static uint32_t stream_id(CUstream s)
{
	return s ? s->id : FAKECUDA_NULL_STREAM_ID;
}

static struct fakecuda_where where_on(CUstream s)
{
	return (struct fakecuda_where){FAKECUDA_DEVICE_ID, FAKECUDA_CONTEXT_ID, stream_id(s), 0, 0};
}

HIDDEN CUresult impl_cuStreamDestroy_v2(CUstream s)
{
	if (!s || bad_stream(s))
		return FAKE_ERROR_INVALID_HANDLE;
	s->magic = 0;
	free(s);
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuStreamSynchronize(CUstream s)
{
	if (bad_stream(s))
		return FAKE_ERROR_INVALID_HANDLE;
	return current_ctx() ? FAKE_SUCCESS : FAKE_ERROR_INVALID_CONTEXT;
}

/* ---- memory: fake device pointers backed by host shadows ------------------------------------ */

struct alloc {
	CUdeviceptr base;
	size_t size;
	unsigned char *shadow;
	struct alloc *next;
};
static struct alloc *allocs; /* under lock */
static uint64_t alloc_count;  /* under lock */

/* The shadow of [p, p+bytes), or NULL if that range is not inside one live allocation.
 * Called with lock held. */
static unsigned char *shadow_of(CUdeviceptr p, size_t bytes)
{
	for (struct alloc *a = allocs; a; a = a->next)
		if (p >= a->base && p - a->base <= a->size && bytes <= a->size - (p - a->base))
			return a->shadow + (p - a->base);
	return NULL;
}

HIDDEN CUresult impl_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes)
{
	if (!current_ctx())
		return FAKE_ERROR_INVALID_CONTEXT;
	if (!dptr || bytes == 0)
		return FAKE_ERROR_INVALID_VALUE;
	if (bytes > FAKE_DPTR_STRIDE)
		return FAKE_ERROR_OUT_OF_MEMORY;
	struct alloc *a = malloc(sizeof(*a));
	unsigned char *shadow = calloc(1, bytes);
	if (!a || !shadow) {
		free(a);
		free(shadow);
		return FAKE_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&lock);
	a->base = FAKE_DPTR_BASE + alloc_count++ * FAKE_DPTR_STRIDE;
	a->size = bytes;
	a->shadow = shadow;
	a->next = allocs;
	allocs = a;
	pthread_mutex_unlock(&lock);
	*dptr = a->base;
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuMemFree_v2(CUdeviceptr dptr)
{
	pthread_mutex_lock(&lock);
	for (struct alloc **pp = &allocs; *pp; pp = &(*pp)->next) {
		struct alloc *a = *pp;
		if (a->base == dptr) {
			*pp = a->next;
			pthread_mutex_unlock(&lock);
			free(a->shadow);
			free(a);
			return FAKE_SUCCESS;
		}
	}
	pthread_mutex_unlock(&lock);
	return FAKE_ERROR_INVALID_VALUE;
}

/* Copies. Each side is host memory or device memory; `unified` (cuMemcpyAsync) tells device
 * memory from host memory by whether the address lies in a live allocation, as UVA does. */
enum side { HOST, DEVICE, UNIFIED };

static void report_copy(struct prof *pf, size_t bytes, int dst_dev, int src_dev, int async, CUstream s)
{
	if (__builtin_expect(pf->ops == NULL, 1) || bytes == 0)
		return;
	static const uint8_t kinds[2][2] = {{FAKECUDA_COPY_HTOH, FAKECUDA_COPY_DTOH},
	                                    {FAKECUDA_COPY_HTOD, FAKECUDA_COPY_DTOD}}; /* [dst][src] */
	struct fakecuda_memcpy_work w = {
		.bytes = bytes,
		.copy_kind = kinds[dst_dev][src_dev],
		.src_kind = src_dev ? FAKECUDA_MEMORY_DEVICE : FAKECUDA_MEMORY_PAGEABLE,
		.dst_kind = dst_dev ? FAKECUDA_MEMORY_DEVICE : FAKECUDA_MEMORY_PAGEABLE,
		.async = (uint8_t)async,
		.where = where_on(s),
	};
	pf->ops->memcpy(&pf->call, &w);
}

static CUresult copy(struct prof *pf, uint64_t dst, enum side dst_side, uint64_t src, enum side src_side,
                     size_t bytes, int async, CUstream stream)
{
	if (async && bad_stream(stream))
		return FAKE_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&lock);
	unsigned char *d = dst_side == HOST ? NULL : shadow_of(dst, bytes);
	const unsigned char *s = src_side == HOST ? NULL : shadow_of(src, bytes);
	int dst_dev = dst_side == DEVICE || (dst_side == UNIFIED && d);
	int src_dev = src_side == DEVICE || (src_side == UNIFIED && s);
	CUresult r = FAKE_SUCCESS;
	if ((dst_dev && !d) || (src_dev && !s) || (!dst_dev && !dst && bytes) || (!src_dev && !src && bytes))
		r = FAKE_ERROR_INVALID_VALUE;
	else if (bytes)
		memmove(dst_dev ? d : (unsigned char *)(uintptr_t)dst,
		        src_dev ? s : (const unsigned char *)(uintptr_t)src, bytes);
	pthread_mutex_unlock(&lock);
	if (r == FAKE_SUCCESS)
		report_copy(pf, bytes, dst_dev, src_dev, async, stream);
	return r;
}

HIDDEN CUresult impl_cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes)
{
	struct prof pf;
	prof_enter(&pf, CBID(cuMemcpyHtoD_v2));
	return prof_exit(&pf, copy(&pf, dst, DEVICE, (uintptr_t)src, HOST, bytes, 0, NULL));
}

HIDDEN CUresult impl_cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes)
{
	struct prof pf;
	prof_enter(&pf, CBID(cuMemcpyDtoH_v2));
	return prof_exit(&pf, copy(&pf, (uintptr_t)dst, HOST, src, DEVICE, bytes, 0, NULL));
}

HIDDEN CUresult impl_cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
	struct prof pf;
	prof_enter(&pf, CBID(cuMemcpyDtoD_v2));
	return prof_exit(&pf, copy(&pf, dst, DEVICE, src, DEVICE, bytes, 0, NULL));
}

HIDDEN CUresult impl_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
	struct prof pf;
	prof_enter(&pf, CBID(cuMemcpyAsync));
	return prof_exit(&pf, copy(&pf, dst, UNIFIED, src, UNIFIED, bytes, 1, stream));
}

HIDDEN CUresult impl_cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes, CUstream stream)
{
	struct prof pf;
	prof_enter(&pf, CBID(cuMemcpyHtoDAsync_v2));
	return prof_exit(&pf, copy(&pf, dst, DEVICE, (uintptr_t)src, HOST, bytes, 1, stream));
}

HIDDEN CUresult impl_cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
	struct prof pf;
	prof_enter(&pf, CBID(cuMemcpyDtoHAsync_v2));
	return prof_exit(&pf, copy(&pf, (uintptr_t)dst, HOST, src, DEVICE, bytes, 1, stream));
}

/* Memsets: n elements of elem_size bytes (1 or 4) set to value. */
static CUresult memset_device(struct prof *pf, CUdeviceptr dst, uint32_t value, size_t n, unsigned elem_size,
                              int async, CUstream stream)
{
	if (!current_ctx())
		return FAKE_ERROR_INVALID_CONTEXT;
	if (async && bad_stream(stream))
		return FAKE_ERROR_INVALID_HANDLE;
	if (n > FAKE_DPTR_STRIDE)
		return FAKE_ERROR_INVALID_VALUE;
	size_t bytes = n * elem_size;
	pthread_mutex_lock(&lock);
	unsigned char *d = shadow_of(dst, bytes);
	if (d) {
		if (elem_size == 1)
			memset(d, (int)(value & 0xff), bytes);
		else
			for (size_t i = 0; i < n; i++)
				memcpy(d + 4 * i, &value, 4);
	}
	pthread_mutex_unlock(&lock);
	if (!d)
		return FAKE_ERROR_INVALID_VALUE;
	if (__builtin_expect(pf->ops != NULL, 0) && bytes) {
		struct fakecuda_memset_work w = {bytes, value, FAKECUDA_MEMORY_DEVICE, (uint8_t)async, where_on(stream)};
		pf->ops->memset(&pf->call, &w);
	}
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n)
{
	struct prof pf;
	prof_enter(&pf, CBID(cuMemsetD8_v2));
	return prof_exit(&pf, memset_device(&pf, dst, value, n, 1, 0, NULL));
}

HIDDEN CUresult impl_cuMemsetD32_v2(CUdeviceptr dst, unsigned value, size_t n)
{
	struct prof pf;
	prof_enter(&pf, CBID(cuMemsetD32_v2));
	return prof_exit(&pf, memset_device(&pf, dst, value, n, 4, 0, NULL));
}

HIDDEN CUresult impl_cuMemsetD32Async(CUdeviceptr dst, unsigned value, size_t n, CUstream stream)
{
	struct prof pf;
	prof_enter(&pf, CBID(cuMemsetD32Async));
	return prof_exit(&pf, memset_device(&pf, dst, value, n, 4, 1, stream));
}

/* ---- modules and kernels -------------------------------------------------------------------- */

enum { K_SCALE_ADD = 1, K_MATVEC, K_RELU, K_FILL, K_COUNT };
#define MAX_PARAMS 5
/* fakecuda.h: names, parameters (bytes of each value, for graph nodes to copy) */
static const struct kernel_info {
	const char *name;
	unsigned nparams;
	uint8_t param_bytes[MAX_PARAMS];
} kernels[K_COUNT] = {
	[K_SCALE_ADD] = {"fake_scale_add", 4, {8, 4, 4, 4}},
	[K_MATVEC] = {"fake_matvec", 5, {8, 8, 8, 4, 4}},
	[K_RELU] = {"fake_relu", 2, {8, 4}},
	[K_FILL] = {"_ZN4fake6fill32EPjjj", 3, {8, 4, 4}},
};
static const uint32_t kernel_registers[K_COUNT - 1] = FAKE_KERNEL_REGISTERS;
static const uint32_t kernel_static_shared[K_COUNT - 1] = FAKE_KERNEL_STATIC_SHARED;

#define FUNC_MAGIC 0xf00df00du
struct fake_function { unsigned magic; unsigned kernel; };
struct fake_module {
	unsigned magic;
	struct fake_function funcs[K_COUNT]; /* funcs[k].magic != 0: the module has kernel k */
};
#define MODULE_MAGIC 0x30d30d30u

HIDDEN CUresult impl_cuModuleLoadData(CUmodule *module, const void *image)
{
	if (!current_ctx())
		return FAKE_ERROR_INVALID_CONTEXT;
	if (!module || !image)
		return FAKE_ERROR_INVALID_VALUE;
	const char *p = image;
	if (strcmp(p, FAKE_IMAGE_MAGIC) != 0)
		return FAKE_ERROR_INVALID_IMAGE;
	struct fake_module *m = calloc(1, sizeof(*m));
	if (!m)
		return FAKE_ERROR_OUT_OF_MEMORY;
	m->magic = MODULE_MAGIC;
	for (p += strlen(p) + 1; *p; p += strlen(p) + 1) {
		unsigned k;
		for (k = 1; k < K_COUNT && strcmp(p, kernels[k].name); k++)
			;
		if (k == K_COUNT) {
			free(m);
			return FAKE_ERROR_INVALID_IMAGE;
		}
		m->funcs[k] = (struct fake_function){FUNC_MAGIC, k};
	}
	*module = m;
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	if (!f || !name)
		return FAKE_ERROR_INVALID_VALUE;
	if (!m || m->magic != MODULE_MAGIC)
		return FAKE_ERROR_INVALID_HANDLE;
	for (unsigned k = 1; k < K_COUNT; k++)
		if (m->funcs[k].magic == FUNC_MAGIC && strcmp(name, kernels[k].name) == 0) {
			*f = &m->funcs[k];
			return FAKE_SUCCESS;
		}
	return FAKE_ERROR_NOT_FOUND;
}

HIDDEN CUresult impl_cuModuleUnload(CUmodule m)
{
	if (!m || m->magic != MODULE_MAGIC)
		return FAKE_ERROR_INVALID_HANDLE;
	m->magic = 0;
	for (unsigned k = 0; k < K_COUNT; k++)
		m->funcs[k].magic = 0; /* its functions are gone with it */
	free(m);
	return FAKE_SUCCESS;
}

/* ---- launches ------------------------------------------------------------------------------- */

static uint32_t param_u32(void **params, int i)
{
	return *(const uint32_t *)params[i];
}

static CUdeviceptr param_ptr(void **params, int i)
{
	return *(const CUdeviceptr *)params[i];
}

/* Runs kernel k on the shadows, synchronously (every stream is the null stream, in effect).
 * Called with lock held. */
static CUresult run_kernel(unsigned k, void **p)
{
	if (!p)
		return FAKE_ERROR_INVALID_VALUE;
	if (k == K_SCALE_ADD || k == K_RELU || k == K_FILL) {
		uint32_t n = param_u32(p, 1);
		uint32_t *buf = (uint32_t *)shadow_of(param_ptr(p, 0), (size_t)n * 4);
		if (!buf)
			return FAKE_ERROR_ILLEGAL_ADDRESS;
		for (uint32_t i = 0; i < n; i++)
			if (k == K_SCALE_ADD)
				buf[i] = buf[i] * param_u32(p, 2) + param_u32(p, 3);
			else if (k == K_FILL)
				buf[i] = param_u32(p, 2);
			else if ((int32_t)buf[i] < 0)
				buf[i] = 0;
		return FAKE_SUCCESS;
	}
	/* K_MATVEC */
	uint32_t rows = param_u32(p, 3), cols = param_u32(p, 4);
	const uint32_t *w = (const uint32_t *)shadow_of(param_ptr(p, 0), (size_t)rows * cols * 4);
	const uint32_t *x = (const uint32_t *)shadow_of(param_ptr(p, 1), (size_t)cols * 4);
	uint32_t *y = (uint32_t *)shadow_of(param_ptr(p, 2), (size_t)rows * 4);
	if (!w || !x || !y)
		return FAKE_ERROR_ILLEGAL_ADDRESS;
	for (uint32_t r = 0; r < rows; r++) {
		uint32_t acc = 0;
		for (uint32_t c = 0; c < cols; c++)
			acc += w[(size_t)r * cols + c] * x[c];
		y[r] = acc;
	}
	return FAKE_SUCCESS;
}

static uint32_t hash_u32(uint32_t h, uint32_t v)
{
	h ^= v;
	h *= 0x01000193u; /* FNV-1a step */
	return h ^ (h >> 15);
}

/* grid x3, block x3, dynamic shared memory */
static CUresult check_launch(CUfunction f, const unsigned dims[7])
{
	if (!f || f->magic != FUNC_MAGIC)
		return FAKE_ERROR_INVALID_HANDLE;
	for (int i = 0; i < 6; i++)
		if (dims[i] == 0)
			return FAKE_ERROR_INVALID_VALUE;
	if (dims[6] > FAKE_MAX_SHARED_MEM)
		return FAKE_ERROR_INVALID_VALUE;
	return FAKE_SUCCESS;
}

static void report_kernel(struct prof *pf, unsigned k, const unsigned dims[7], struct fakecuda_where where)
{
	if (__builtin_expect(pf->ops == NULL, 1))
		return;
	struct fakecuda_kernel_work w = {
		.name = kernels[k].name,
		.grid = {dims[0], dims[1], dims[2]},
		.block = {dims[3], dims[4], dims[5]},
		.dynamic_shared = dims[6],
		.static_shared = kernel_static_shared[k - 1],
		.registers = kernel_registers[k - 1],
		.where = where,
	};
	if (pf->ops->kernel(&pf->call, &w))
		__atomic_add_fetch(&profiler_kernels, 1, __ATOMIC_RELAXED);
}

static CUresult launch(struct prof *pf, CUfunction f, const unsigned dims[7], CUstream stream, void **params,
                       void **extra)
{
	if (!current_ctx())
		return FAKE_ERROR_INVALID_CONTEXT;
	CUresult r = check_launch(f, dims);
	if (r != FAKE_SUCCESS)
		return r;
	if (bad_stream(stream))
		return FAKE_ERROR_INVALID_HANDLE;
	int echo = 0;
	if (extra) {
		if (extra[0] != FAKE_LAUNCH_ECHO || extra[1] != NULL)
			return FAKE_ERROR_INVALID_VALUE;
		echo = 1;
	}
	pthread_mutex_lock(&lock);
	r = run_kernel(f->kernel, params);
	pthread_mutex_unlock(&lock);
	if (r == FAKE_SUCCESS)
		report_kernel(pf, f->kernel, dims, where_on(stream));
	if (r != FAKE_SUCCESS || !echo)
		return r;
	uint32_t h = 0x811c9dc5u;
	for (int i = 0; i < 7; i++)
		h = hash_u32(h, dims[i]);
	h = hash_u32(h, f->kernel);
	h = hash_u32(h, stream != NULL);
	return FAKE_ECHO_RESULT(h);
}

HIDDEN CUresult impl_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                    unsigned by, unsigned bz, unsigned shmem, CUstream stream,
                                    void **params, void **extra)
{
	struct prof pf;
	prof_enter(&pf, CBID(cuLaunchKernel));
	const unsigned dims[7] = {gx, gy, gz, bx, by, bz, shmem};
	return prof_exit(&pf, launch(&pf, f, dims, stream, params, extra));
}

HIDDEN CUresult impl_cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
	struct prof pf;
	prof_enter(&pf, CBID(cuLaunchKernelEx));
	if (!c)
		return prof_exit(&pf, FAKE_ERROR_INVALID_VALUE);
	const unsigned dims[7] = {c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX,
	                          c->blockDimY, c->blockDimZ, c->sharedMemBytes};
	return prof_exit(&pf, launch(&pf, f, dims, c->hStream, params, extra));
}

/* ---- graphs of kernel nodes ----------------------------------------------------------------- */

struct kernel_node {
	uint64_t id;
	CUfunction func; /* as added (cuGraphKernelNodeGetParams_v2 gives it back) */
	unsigned kernel;
	unsigned dims[7];
	uint64_t values[MAX_PARAMS]; /* the parameters' values, copied when the node was added */
};

#define GRAPH_MAGIC 0x96a9f000u
#define NODE_MAGIC 0x96a9f001u
#define EXEC_MAGIC 0x96a9f002u
struct fake_graph_node { unsigned magic; CUgraph graph; struct kernel_node k; struct fake_graph_node *next; };
struct fake_graph { unsigned magic; uint32_t id; unsigned count; struct fake_graph_node *first, *last; };
struct fake_graph_exec { unsigned magic; uint32_t graph_id; unsigned count; struct kernel_node nodes[]; };
static uint32_t graphs_created;     /* atomic */
static uint64_t graph_nodes_created; /* atomic */

HIDDEN CUresult impl_cuGraphCreate(CUgraph *graph, unsigned flags)
{
	if (!graph || flags != 0)
		return FAKE_ERROR_INVALID_VALUE;
	struct fake_graph *g = calloc(1, sizeof(*g));
	if (!g)
		return FAKE_ERROR_OUT_OF_MEMORY;
	g->magic = GRAPH_MAGIC;
	g->id = __atomic_add_fetch(&graphs_created, 1, __ATOMIC_RELAXED);
	*graph = g;
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                             const CUDA_KERNEL_NODE_PARAMS *p)
{
	if (!g || g->magic != GRAPH_MAGIC)
		return FAKE_ERROR_INVALID_HANDLE;
	if (!node || !p || (ndeps && !deps) || p->extra || p->kern || p->ctx || !p->kernelParams)
		return FAKE_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < ndeps; i++)
		if (!deps[i] || deps[i]->magic != NODE_MAGIC || deps[i]->graph != g)
			return FAKE_ERROR_INVALID_VALUE;
	struct kernel_node k = {.dims = {p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
	                                 p->blockDimZ, p->sharedMemBytes}};
	CUresult r = check_launch(p->func, k.dims);
	if (r != FAKE_SUCCESS)
		return r;
	k.kernel = p->func->kernel;
	k.func = p->func;
	for (unsigned i = 0; i < kernels[k.kernel].nparams; i++) {
		if (!p->kernelParams[i])
			return FAKE_ERROR_INVALID_VALUE;
		memcpy(&k.values[i], p->kernelParams[i], kernels[k.kernel].param_bytes[i]);
	}
	struct fake_graph_node *n = calloc(1, sizeof(*n));
	if (!n)
		return FAKE_ERROR_OUT_OF_MEMORY;
	k.id = __atomic_add_fetch(&graph_nodes_created, 1, __ATOMIC_RELAXED);
	*n = (struct fake_graph_node){NODE_MAGIC, g, k, NULL};
	if (g->last)
		g->last->next = n;
	else
		g->first = n;
	g->last = n;
	g->count++;
	*node = n;
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph g, unsigned long long flags)
{
	if (!current_ctx())
		return FAKE_ERROR_INVALID_CONTEXT;
	if (!g || g->magic != GRAPH_MAGIC)
		return FAKE_ERROR_INVALID_HANDLE;
	if (!exec)
		return FAKE_ERROR_INVALID_VALUE;
	struct fake_graph_exec *e = malloc(sizeof(*e) + g->count * sizeof(e->nodes[0]));
	if (!e)
		return FAKE_ERROR_OUT_OF_MEMORY;
	e->magic = EXEC_MAGIC;
	e->graph_id = g->id;
	e->count = 0;
	for (struct fake_graph_node *n = g->first; n; n = n->next)
		e->nodes[e->count++] = n->k;
	*exec = e;
	return FAKE_SUCCESS;
}

static CUresult graph_launch(struct prof *pf, CUgraphExec e, CUstream stream)
{
	if (!current_ctx())
		return FAKE_ERROR_INVALID_CONTEXT;
	if (!e || e->magic != EXEC_MAGIC || bad_stream(stream))
		return FAKE_ERROR_INVALID_HANDLE;
	for (unsigned i = 0; i < e->count; i++) {
		const struct kernel_node *k = &e->nodes[i];
		void *params[MAX_PARAMS];
		for (unsigned j = 0; j < MAX_PARAMS; j++)
			params[j] = (void *)&k->values[j]; /* little-endian: a 4-byte value is its slot's start */
		pthread_mutex_lock(&lock);
		CUresult r = run_kernel(k->kernel, params);
		pthread_mutex_unlock(&lock);
		if (r != FAKE_SUCCESS)
			return r;
		struct fakecuda_where where = where_on(stream);
		where.graph_id = e->graph_id;
		where.graph_node_id = k->id;
		report_kernel(pf, k->kernel, k->dims, where);
	}
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuGraphLaunch(CUgraphExec e, CUstream stream)
{
	struct prof pf;
	prof_enter(&pf, CBID(cuGraphLaunch));
	return prof_exit(&pf, graph_launch(&pf, e, stream));
}

HIDDEN CUresult impl_cuGraphExecDestroy(CUgraphExec e)
{
	if (!e || e->magic != EXEC_MAGIC)
		return FAKE_ERROR_INVALID_HANDLE;
	e->magic = 0;
	free(e);
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuGraphDestroy(CUgraph g)
{
	if (!g || g->magic != GRAPH_MAGIC)
		return FAKE_ERROR_INVALID_HANDLE;
	for (struct fake_graph_node *n = g->first, *next; n; n = next) {
		next = n->next;
		n->magic = 0;
		free(n);
	}
	g->magic = 0;
	free(g);
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *count)
{
	if (!g || g->magic != GRAPH_MAGIC)
		return FAKE_ERROR_INVALID_HANDLE;
	if (!count)
		return FAKE_ERROR_INVALID_VALUE;
	if (nodes) {
		size_t i = 0;
		for (struct fake_graph_node *n = g->first; n && i < *count; n = n->next)
			nodes[i++] = n;
	}
	*count = g->count;
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuGraphNodeGetType(CUgraphNode n, int *type)
{
	if (!n || n->magic != NODE_MAGIC)
		return FAKE_ERROR_INVALID_HANDLE;
	if (!type)
		return FAKE_ERROR_INVALID_VALUE;
	*type = 0; /* CU_GRAPH_NODE_TYPE_KERNEL */
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuGraphKernelNodeGetParams_v2(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS *p)
{
	if (!n || n->magic != NODE_MAGIC)
		return FAKE_ERROR_INVALID_HANDLE;
	if (!p)
		return FAKE_ERROR_INVALID_VALUE;
	memset(p, 0, sizeof(*p));
	p->func = n->k.func;
	p->gridDimX = n->k.dims[0];
	p->gridDimY = n->k.dims[1];
	p->gridDimZ = n->k.dims[2];
	p->blockDimX = n->k.dims[3];
	p->blockDimY = n->k.dims[4];
	p->blockDimZ = n->k.dims[5];
	p->sharedMemBytes = n->k.dims[6];
	return FAKE_SUCCESS;
}

/* ---- names of functions ------------------------------------------------------------------- */

HIDDEN CUresult impl_cuFuncGetName(const char **name, CUfunction f)
{
	if (!name)
		return FAKE_ERROR_INVALID_VALUE;
	if (!f || f->magic != FUNC_MAGIC || f->kernel == 0 || f->kernel >= K_COUNT)
		return FAKE_ERROR_INVALID_HANDLE;
	*name = kernels[f->kernel].name;
	return FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuKernelGetName(const char **name, void *kernel)
{
	(void)kernel;
	return name ? FAKE_ERROR_INVALID_HANDLE : FAKE_ERROR_INVALID_VALUE;
}

/* ---- errors --------------------------------------------------------------------------------- */

HIDDEN CUresult impl_cuGetErrorString(CUresult error, const char **str)
{
	static const struct { CUresult code; const char *text; } msgs[] = {
		{FAKE_SUCCESS, "no error"},
		{FAKE_ERROR_INVALID_VALUE, "invalid argument"},
		{FAKE_ERROR_OUT_OF_MEMORY, "out of memory"},
		{FAKE_ERROR_NOT_INITIALIZED, "initialization error"},
		{FAKE_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"},
		{FAKE_ERROR_INVALID_DEVICE, "invalid device ordinal"},
		{FAKE_ERROR_INVALID_IMAGE, "device kernel image is invalid"},
		{FAKE_ERROR_INVALID_CONTEXT, "invalid device context"},
		{FAKE_ERROR_INVALID_HANDLE, "invalid resource handle"},
		{FAKE_ERROR_NOT_FOUND, "named symbol not found"},
		{FAKE_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"},
	};
	if (!str)
		return FAKE_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++)
		if (msgs[i].code == error) {
			*str = msgs[i].text;
			return FAKE_SUCCESS;
		}
	*str = NULL;
	return FAKE_ERROR_INVALID_VALUE;
}

/* ---- flight recorder tests --------------------------------------------------------------- */

HIDDEN CUresult impl_cuFakeStep(unsigned seq)
{
	return seq == FAKE_STEP_FAIL ? FAKE_ERROR_ILLEGAL_ADDRESS : FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuFakeSleep(unsigned ms)
{
	struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&t, &t) != 0)
		; /* EINTR: the rest of it */
	return FAKE_SUCCESS;
}

/* ---- the shapes' C bodies ------------------------------------------------------------------- */

HIDDEN int impl_cuFakeScale(float a, double b) { return (int)(a * b); }
HIDDEN double impl_cuFakeMulD(double a, double b) { return a * b + 0.5; }
HIDDEN int impl_cuFakeInner(int x) { return x ^ 0x1234; }
/* Through the exported symbol (a PLT call into the patched entry), not impl_cuFakeInner. */
HIDDEN int impl_cuFakeOuter(int x) { return cuFakeInner(3 * x) + 7; }
HIDDEN int impl_cuFakeAlias(int x) { return x * 5 + 1; }
HIDDEN int impl_cuFakeThunk(int x) { return x * 7 - 3; }

/* An ordinary C varargs function (gcc's prologue: test al,al before saving xmm registers). */
EXPORT int cuFakeVarSum(int n, ...)
{
	va_list ap;
	double sum = 0;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		sum += va_arg(ap, double);
	va_end(ap);
	return (int)(sum * 1000);
}

/* ---- the export tables ---------------------------------------------------------------------- */

HIDDEN unsigned impl_et_mix(unsigned x) { return x * 2654435761u ^ 0x5bd1e995u; }
HIDDEN unsigned impl_et_add3(unsigned a, unsigned b, unsigned c) { return a + b + c; }
HIDDEN unsigned impl_et_shared(unsigned x) { return x + 0x9e37u; }
HIDDEN unsigned impl_et2_first(unsigned x) { return x ^ 0xa5a5u; }
HIDDEN unsigned impl_et_nocfi(unsigned x) { return x * 3u; }
unsigned fake_et_mix(unsigned x);
unsigned fake_et_add3(unsigned a, unsigned b, unsigned c);
unsigned fake_et_shared(unsigned x);
unsigned fake_et2_first(unsigned x);
unsigned fake_et_nocfi(unsigned x);

static const char export_data[16] = "not a function";
static const struct fake_export_table export_table = {
    sizeof(export_table), fake_et_mix, fake_et_add3, fake_et_shared, export_data, NULL, cuDriverGetVersion,
};
static const struct fake_export_table2 export_table2 = {fake_et2_first, fake_et_shared, fake_et_nocfi, NULL};

HIDDEN unsigned impl_cuFakeExportCall(unsigned x) { return export_table.mix(x) + 1; }

HIDDEN CUresult impl_cuGetExportTable(const void **table, const CUuuid *id)
{
	static const CUuuid known = FAKE_EXPORT_TABLE_UUID, known2 = FAKE_EXPORT_TABLE2_UUID;
	if (!table || !id)
		return FAKE_ERROR_INVALID_VALUE;
	if (!memcmp(id, &known, sizeof(known))) {
		*table = &export_table;
		return FAKE_SUCCESS;
	}
	if (!memcmp(id, &known2, sizeof(known2))) {
		*table = &export_table2;
		return FAKE_SUCCESS;
	}
	*table = NULL;
	return FAKE_ERROR_NOT_FOUND;
}

/* ---- cuGetProcAddress: how the runtime finds entry points ----------------------------------- */

/* A name resolves to the entry with the highest min_version <= the caller's version, as in the
 * real driver ("cuMemAlloc" asked with 12000 gives cuMemAlloc_v2). Addresses are those of the
 * exported symbols (through the GOT), i.e. the entries the agent patches. */
#define P(name) {#name, 0, (void *)name}
#define V(name, ver, fn) {#name, ver, (void *)fn}
static const struct proc { const char *name; int min_version; void *fn; } procs[] = {
	P(cuInit), P(cuDriverGetVersion), P(cuDeviceGetCount), P(cuDeviceGet), P(cuDeviceGetAttribute),
	P(cuDevicePrimaryCtxRetain), V(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2),
	P(cuCtxSetCurrent), P(cuCtxGetCurrent), V(cuCtxPushCurrent, 4000, cuCtxPushCurrent_v2),
	V(cuCtxPopCurrent, 4000, cuCtxPopCurrent_v2), V(cuCtxCreate, 3020, cuCtxCreate_v2),
	V(cuCtxDestroy, 4000, cuCtxDestroy_v2), P(cuCtxSynchronize), P(cuProfilerStart), P(cuProfilerStop),
	P(cuCtxGetDevice), V(cuCtxGetDevice, 12080, cuCtxGetDevice_v2), P(cuDevicePrimaryCtxGetState),
	V(cuMemAlloc, 3020, cuMemAlloc_v2), V(cuMemFree, 3020, cuMemFree_v2),
	V(cuMemcpyHtoD, 3020, cuMemcpyHtoD_v2), V(cuMemcpyDtoH, 3020, cuMemcpyDtoH_v2),
	V(cuMemcpyDtoD, 3020, cuMemcpyDtoD_v2), P(cuMemcpyAsync),
	V(cuMemcpyHtoDAsync, 3020, cuMemcpyHtoDAsync_v2), V(cuMemcpyDtoHAsync, 3020, cuMemcpyDtoHAsync_v2),
	V(cuMemsetD8, 3020, cuMemsetD8_v2), V(cuMemsetD32, 3020, cuMemsetD32_v2), P(cuMemsetD32Async),
	P(cuGraphCreate), V(cuGraphAddKernelNode, 12000, cuGraphAddKernelNode_v2),
	P(cuGraphInstantiateWithFlags), P(cuGraphLaunch), P(cuGraphExecDestroy), P(cuGraphDestroy),
	P(cuGraphGetNodes), V(cuGraphKernelNodeGetParams, 12000, cuGraphKernelNodeGetParams_v2), P(cuGraphNodeGetType),
	P(cuFuncGetName), P(cuKernelGetName),
	P(cuModuleLoadData), P(cuModuleGetFunction), P(cuModuleUnload),
	P(cuLaunchKernel), V(cuLaunchKernelEx, 11080, cuLaunchKernelEx),
	P(cuStreamCreate), V(cuStreamDestroy, 4000, cuStreamDestroy_v2), P(cuStreamSynchronize),
	P(cuGetProcAddress), V(cuGetProcAddress, 12000, cuGetProcAddress_v2),
	P(cuGetExportTable), P(cuGetErrorString),
	P(cuFakeConstA), P(cuFakeConstB), P(cuFakeConstC), P(cuFakeNextSerial), P(cuFakeSwitch),
	P(cuFakeRipCmp), P(cuFakeLoopBack), P(cuFakeLoopToStart), P(cuFakeShort), P(cuFakeAlEcho),
	P(cuFakeVarSum), P(cuFakeScale), P(cuFakeMulD), P(cuFakeOuter), P(cuFakeInner),
	P(cuFakeAlias), P(cuFakeAlias_v2), P(cuFakeCallFirst), P(cuFakeThunk),
};

static CUresult proc_lookup(const char *symbol, void **pfn, int version, int *status)
{
	const struct proc *best = NULL;
	int found_name = 0;
	for (unsigned i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		if (strcmp(procs[i].name, symbol) != 0)
			continue;
		found_name = 1;
		if (procs[i].min_version <= version && (!best || procs[i].min_version > best->min_version))
			best = &procs[i];
	}
	*pfn = best ? best->fn : NULL;
	if (status)
		*status = best ? FAKE_PROC_SUCCESS
		               : found_name ? FAKE_PROC_VERSION_NOT_SUFFICIENT : FAKE_PROC_SYMBOL_NOT_FOUND;
	return best ? FAKE_SUCCESS : FAKE_ERROR_NOT_FOUND;
}

HIDDEN CUresult impl_cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags,
                                         int *status)
{
	if (!symbol || !pfn)
		return FAKE_ERROR_INVALID_VALUE;
	return proc_lookup(symbol, pfn, version, status);
}

HIDDEN CUresult impl_cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags)
{
	if (!symbol || !pfn)
		return FAKE_ERROR_INVALID_VALUE;
	return proc_lookup(symbol, pfn, version, NULL);
}

/* ==== robustness tests (tests/robust) ============================================================
 * Bodies of the entry points that fake_entry.S's "robustness tests" block adds. */

/* n calls in all (n, n-1, ..., 1), each a real (non-tail) call through the exported entry, so
 * that with the agent every level is a traced call nested in the previous one. */
HIDDEN unsigned impl_cuFakeRecurse(unsigned n, unsigned acc)
{
	static unsigned (*volatile self)(unsigned, unsigned) = cuFakeRecurse;
	if (n <= 1)
		return acc * 31u + 1u;
	unsigned r = self(n - 1, acc * 31u + n);
	return r * 3u + n;
}

/* cb(x, arg) + 1: the callback runs inside this (traced) call and may longjmp out of it. */
HIDDEN int impl_cuFakeCallback(int (*cb)(int, void *), int x, void *arg)
{
	if (!cb)
		return -1;
	int r = cb(x, arg);
	return r + 1;
}

/* ==== ioctl tests (tests/ioctl) ==================================================================
 * Bodies of the entry points that fake_entry.S's "ioctl tests" block adds: libcuda-like traffic
 * on files named like NVIDIA's device files (fakecuda.h). Every ioctl goes through libc's ioctl,
 * as libcuda's do. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

static int nv_fds[3] = {-1, -1, -1};
static const char *const nv_names[3] = {"nvidiactl", "nvidia0", "nvidia-uvm"};

HIDDEN CUresult impl_cuFakeNvOpen(const char *dir)
{
	if (!dir)
		return FAKE_ERROR_INVALID_VALUE;
	for (int i = 0; i < 3; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, nv_names[i]);
		nv_fds[i] = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (nv_fds[i] < 0)
			return FAKE_ERROR_NOT_FOUND;
	}
	/* both requests are made whatever the first one's result (the same ioctls either way) */
	struct fake_nv_version v;
	memset(&v, 0, sizeof(v));
	snprintf(v.version, sizeof(v.version), "%s", FAKE_NV_VERSION);
	int a = ioctl(nv_fds[0], FAKE_NV_CHECK_VERSION, &v);
	int ctl = nv_fds[0];
	int b = ioctl(nv_fds[1], FAKE_NV_REGISTER_FD, &ctl);
	return a || b || v.reply != 1 ? FAKE_ERROR_ILLEGAL_ADDRESS : FAKE_SUCCESS;
}

HIDDEN int impl_cuFakeNvFd(int which)
{
	return which >= 0 && which < 3 ? nv_fds[which] : -1;
}

HIDDEN CUresult impl_cuFakeNvAlloc(unsigned hClient, unsigned hParent, unsigned hClass, unsigned *hNew)
{
	struct fake_nvos21 p;
	memset(&p, 0, sizeof(p));
	p.hRoot = hClient;
	p.hObjectParent = hParent;
	p.hClass = hClass;
	if (ioctl(nv_fds[0], FAKE_NV_RM_ALLOC, &p) != 0)
		return FAKE_ERROR_ILLEGAL_ADDRESS;
	if (hNew)
		*hNew = p.hObjectNew;
	return (CUresult)p.status;
}

static CUresult nv_control(unsigned hClient, unsigned hObject, unsigned cmd, void *params, unsigned size, int xfer)
{
	struct fake_nvos54 p;
	memset(&p, 0, sizeof(p));
	p.hClient = hClient;
	p.hObject = hObject;
	p.cmd = cmd;
	p.params = (uint64_t)(uintptr_t)params;
	p.paramsSize = size;
	int rc;
	if (xfer) {
		struct fake_nv_xfer x = {0x2a, sizeof(p), (uint64_t)(uintptr_t)&p};
		rc = ioctl(nv_fds[0], FAKE_NV_XFER, &x);
	} else {
		rc = ioctl(nv_fds[0], FAKE_NV_RM_CONTROL, &p);
	}
	return rc != 0 ? FAKE_ERROR_ILLEGAL_ADDRESS : (CUresult)p.status;
}

HIDDEN CUresult impl_cuFakeNvControl(unsigned hClient, unsigned hObject, unsigned cmd, void *params, unsigned size)
{
	return nv_control(hClient, hObject, cmd, params, size, 0);
}

HIDDEN CUresult impl_cuFakeNvControlXfer(unsigned hClient, unsigned hObject, unsigned cmd, void *params, unsigned size)
{
	return nv_control(hClient, hObject, cmd, params, size, 1);
}

HIDDEN CUresult impl_cuFakeNvFree(unsigned hClient, unsigned hParent, unsigned hObject)
{
	struct fake_nvos00 p = {hClient, hParent, hObject, 0};
	if (ioctl(nv_fds[0], FAKE_NV_RM_FREE, &p) != 0)
		return FAKE_ERROR_ILLEGAL_ADDRESS;
	return (CUresult)p.status;
}

HIDDEN CUresult impl_cuFakeNvUvm(unsigned hClient)
{
	/* 64-byte aligned: the agent copies up to 64 bytes of a UVM argument but never past its
	 * page (the size is not in the request), and the test expects all 64; a stack struct near
	 * a page end would give fewer, depending on where the stack happens to lie. */
	_Alignas(64) struct { uint64_t flags; uint32_t rmStatus, pad; } init = {0, 0xffffffffu, 0};
	int a = ioctl(nv_fds[2], FAKE_UVM_INITIALIZE, &init);
	_Alignas(64) struct { uint8_t uuid[16]; uint8_t numa; uint8_t pad[3]; int32_t node, fd; uint32_t hClient, hSmc, rmStatus; }
	    reg;
	memset(&reg, 0, sizeof(reg));
	for (int i = 0; i < 16; i++)
		reg.uuid[i] = (uint8_t)(0xa0 + i);
	reg.fd = nv_fds[0];
	reg.hClient = hClient;
	reg.rmStatus = 0xffffffffu;
	int b = ioctl(nv_fds[2], FAKE_UVM_REGISTER_GPU, &reg);
	if (a || b)
		return FAKE_ERROR_ILLEGAL_ADDRESS;
	return (CUresult)(init.rmStatus | reg.rmStatus);
}

HIDDEN CUresult impl_cuFakeNvNested(unsigned hClient, unsigned hObject, unsigned cmd)
{
	/* through the exported (patched) entry, so that each is a traced call with its ioctl inside */
	static CUresult (*volatile control)(unsigned, unsigned, unsigned, void *, unsigned) = cuFakeNvControl;
	uint32_t params[4] = {0};
	CUresult a = control(hClient, hObject, cmd, params, sizeof(params));
	CUresult b = control(hClient, hObject, cmd, params, sizeof(params));
	return a | b;
}

HIDDEN CUresult impl_cuFakeNvUnknown(void)
{
	uint64_t buf[8] = {0};
	int failed = 0;
	failed += ioctl(nv_fds[0], FAKE_NV_UNKNOWN_F, buf) != 0;
	failed += ioctl(nv_fds[0], FAKE_NV_UNKNOWN_RAW, buf) != 0;
	return (CUresult)failed;
}

HIDDEN CUresult impl_cuFakeNvNotDevice(const char *dir)
{
	int p[2];
	if (pipe(p) != 0)
		return FAKE_ERROR_OUT_OF_MEMORY;
	int n = -1;
	int rc = ioctl(p[0], FIONREAD, &n);
	close(p[0]);
	close(p[1]);
	if (rc != 0 || n != 0)
		return FAKE_ERROR_INVALID_VALUE;
	char path[4096];
	snprintf(path, sizeof(path), "%s/other.dat", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return FAKE_ERROR_NOT_FOUND;
	struct fake_nvos54 c;
	memset(&c, 0, sizeof(c));
	rc = ioctl(fd, FAKE_NV_RM_CONTROL, &c); /* not a device: fails, and is not NVIDIA's */
	close(fd);
	return rc == 0 ? FAKE_ERROR_INVALID_VALUE : FAKE_SUCCESS;
}

HIDDEN CUresult impl_cuFakeNvClose(void)
{
	for (int i = 0; i < 3; i++) {
		if (nv_fds[i] >= 0)
			close(nv_fds[i]);
		nv_fds[i] = -1;
	}
	return FAKE_SUCCESS;
}
