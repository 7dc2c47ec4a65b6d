/* The stand-in libcupti (tests/fakecupti) against the stand-in libcuda, in-process: gpu_work's
 * workload (tests/targets/gpu_workload.h) run with the stand-in recording, then every record
 * checked against what the workload submitted. Exact counts per record kind and kernel name,
 * correlation (every work record has the API record of the call that submitted it, on the
 * thread that made it), graph ids, times from the timestamp callback and the simulated GPU
 * clock (fakecupti.h), the subscriber slot, dropped records, cuptiFinalize; and, in a process of
 * its own, which driver API records the enabling calls give before and after cuInit, as the real
 * CUPTI 13.0.1 does on driver 580 (case_driver_api_model).
 *
 * usage: test_fakecupti LIBCUDA_PATH records|driver-api
 *   records:    everything but the driver API model; the workload's session starts before cuInit
 *   driver-api: the driver API model (its first row needs a driver not yet initialised) */
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../unit/unit.h"
#include "fakecuda_profiler.h"
#include "fakecupti.h"
#include "gpu_workload.h"

static const char *libcuda_path;

/* ---- what the client side sees ------------------------------------------------------------- */

union rec {
	CUpti_Activity any;
	CUpti_ActivityKernel10 kernel;
	CUpti_ActivityMemcpy6 memcpy;
	CUpti_ActivityMemset4 memset;
	CUpti_ActivityAPI api;
};

static pthread_mutex_t got_lock = PTHREAD_MUTEX_INITIALIZER;
static union rec *got;
static size_t ngot, got_cap;
static unsigned requests, completions, completions_elsewhere, empty_completions;
static size_t buffer_size = 64 * 1024, max_records;
static pid_t main_tid;
static uint32_t workload_tids[GPU_WORK_MAX_THREADS];
static int nworkload_tids;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max)
{
	pthread_mutex_lock(&got_lock);
	requests++;
	pthread_mutex_unlock(&got_lock);
	*buffer = buffer_size ? aligned_alloc(8, (buffer_size + 7) & ~(size_t)7) : NULL;
	*size = buffer_size;
	*max = max_records;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	int elsewhere = tid != main_tid;
	for (int i = 0; i < nworkload_tids; i++)
		elsewhere &= (uint32_t)tid != workload_tids[i];
	pthread_mutex_lock(&got_lock);
	completions++;
	completions_elsewhere += elsewhere;
	empty_completions += valid == 0;
	CUpti_Activity *r = NULL;
	while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
		if (ngot == got_cap) {
			got_cap = got_cap ? 2 * got_cap : 4096;
			got = realloc(got, got_cap * sizeof(*got));
		}
		memset(&got[ngot], 0, sizeof(got[ngot]));
		size_t n = r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? sizeof(CUpti_ActivityKernel10)
		           : r->kind == CUPTI_ACTIVITY_KIND_MEMCPY            ? sizeof(CUpti_ActivityMemcpy6)
		           : r->kind == CUPTI_ACTIVITY_KIND_MEMSET            ? sizeof(CUpti_ActivityMemset4)
		                                                              : sizeof(CUpti_ActivityAPI);
		memcpy(&got[ngot++], r, n);
	}
	pthread_mutex_unlock(&got_lock);
	free(buffer);
}

static void forget_records(void)
{
	pthread_mutex_lock(&got_lock);
	ngot = 0;
	requests = completions = completions_elsewhere = empty_completions = 0;
	pthread_mutex_unlock(&got_lock);
}

/* A clock only the timestamp callback gives: 10^15 + 1000 k at its k-th call. Any time in a
 * record that is not of this form did not come from it. */
#define TS_BASE 1000000000000000ull
#define TS_STEP 1000ull
static uint64_t ts_calls;
static uint64_t CUPTIAPI test_clock(void)
{
	return TS_BASE + TS_STEP * __atomic_add_fetch(&ts_calls, 1, __ATOMIC_RELAXED);
}

static int is_callback_time(uint64_t t)
{
	return t > TS_BASE && (t - TS_BASE) % TS_STEP == 0 &&
	       (t - TS_BASE) / TS_STEP <= __atomic_load_n(&ts_calls, __ATOMIC_RELAXED);
}

/* The cbids the agent enables: driver functions named cuLaunch*, cuMemcpy*, cuMemset*,
 * cuGraphLaunch* (issue 16 decisions). */
static int submitting_name(const char *n)
{
	return !strncmp(n, "cuLaunch", 8) || !strncmp(n, "cuMemcpy", 8) || !strncmp(n, "cuMemset", 8) ||
	       !strncmp(n, "cuGraphLaunch", 13);
}

static CUptiResult enable_submitting_cbids(uint8_t on)
{
	for (uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; cbid++) {
		const char *name;
		if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) == CUPTI_SUCCESS &&
		    submitting_name(name)) {
			CUptiResult r = cuptiActivityEnableDriverApi(cbid, on);
			if (r != CUPTI_SUCCESS)
				return r;
		}
	}
	return CUPTI_SUCCESS;
}

/* One run; res->calls: the calls of this run only. */
static int run_workload(int threads, uint64_t iterations, struct gpu_work_result *res)
{
	static const volatile int never = 0;
	static uint64_t before[GW_NFUNCS];
	int rc = gpu_work_run(threads, iterations, 0, &never, NULL, res);
	for (int f = 0; f < GW_NFUNCS; f++) {
		uint64_t total = res->calls[f];
		res->calls[f] -= before[f];
		before[f] = total;
	}
	nworkload_tids = res->threads;
	memcpy(workload_tids, res->tids, sizeof(workload_tids));
	return rc;
}

/* Waits (10 s at most) until the stand-in's worker thread has handed back a buffer. */
static void wait_for_worker_delivery(void)
{
	for (int i = 0; i < 1000; i++) {
		pthread_mutex_lock(&got_lock);
		unsigned n = completions_elsewhere;
		pthread_mutex_unlock(&got_lock);
		if (n)
			return;
		usleep(10000);
	}
}

static size_t count_kind(CUpti_ActivityKind kind)
{
	size_t n = 0;
	for (size_t i = 0; i < ngot; i++)
		n += got[i].any.kind == kind;
	return n;
}

static const CUpti_ActivityAPI *api_of(uint32_t correlation)
{
	const CUpti_ActivityAPI *found = NULL;
	for (size_t i = 0; i < ngot; i++)
		if (got[i].any.kind == CUPTI_ACTIVITY_KIND_DRIVER && got[i].api.correlationId == correlation) {
			if (found)
				return NULL; /* two API records of one correlation id: wrong */
			found = &got[i].api;
		}
	return found;
}

static int workload_thread(uint32_t tid)
{
	for (int i = 0; i < nworkload_tids; i++)
		if (workload_tids[i] == tid)
			return 1;
	return 0;
}

static size_t api_count(uint32_t cbid)
{
	size_t n = 0;
	for (size_t i = 0; i < ngot; i++)
		n += got[i].any.kind == CUPTI_ACTIVITY_KIND_DRIVER && got[i].api.cbid == cbid;
	return n;
}

/* One API record per call of each submitting function gpu_work calls, and no other: what
 * CUPTI_ACTIVITY_KIND_DRIVER gives with the stand-in driver too, as it reports only its
 * submitting calls. */
static const struct {
	uint32_t cbid;
	enum gpu_work_fn fn;
} submitting_fns[] = {
	{CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, GW_cuLaunchKernel},
	{CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, GW_cuLaunchKernelEx},
	{CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, GW_cuMemcpyHtoD_v2},
	{CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, GW_cuMemcpyHtoDAsync_v2},
	{CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, GW_cuMemcpyDtoH_v2},
	{CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, GW_cuMemcpyDtoHAsync_v2},
	{CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, GW_cuMemcpyAsync},
	{CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, GW_cuMemsetD8_v2},
	{CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async, GW_cuMemsetD32Async},
	{CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, GW_cuGraphLaunch},
};

static void check_api_records_per_cbid(const char *session, const struct gpu_work_result *res)
{
	size_t apis = 0;
	for (size_t i = 0; i < sizeof(submitting_fns) / sizeof(submitting_fns[0]); i++) {
		size_t c = api_count(submitting_fns[i].cbid);
		CHECK(c == res->calls[submitting_fns[i].fn] && c > 0, "%s: %s: %zu API records, %llu calls", session,
		      gpu_work_fn_names[submitting_fns[i].fn], c, (unsigned long long)res->calls[submitting_fns[i].fn]);
		apis += c;
	}
	CHECK(count_kind(CUPTI_ACTIVITY_KIND_DRIVER) == apis, "%s: %zu API records, %zu of submitting calls", session,
	      count_kind(CUPTI_ACTIVITY_KIND_DRIVER), apis);
}

/* ---- cases ----------------------------------------------------------------------------------- */

/* Before the stand-in libcuda is loaded: nothing to attach to, a clear error, no crash; what
 * needs no driver works. */
static void case_without_driver(void)
{
	CHECK(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) == NULL, "libcuda.so.1 is loaded already");
	CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_ERROR_NOT_INITIALIZED, "enable");
	CHECK(cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1) == CUPTI_ERROR_NOT_INITIALIZED,
	      "enable a cbid");
	CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_ERROR_INVALID_OPERATION,
	      "flush without buffer callbacks");
	CHECK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS, "disable");
	CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_OPENACC_DATA) == CUPTI_ERROR_INVALID_KIND, "a kind not modelled");
	CHECK(cuptiFinalize() == CUPTI_SUCCESS, "finalize with nothing started");

	uint32_t version = 0;
	CHECK(cuptiGetVersion(&version) == CUPTI_SUCCESS && version == CUPTI_API_VERSION, "version %u", version);
	CHECK(cuptiGetVersion(NULL) == CUPTI_ERROR_INVALID_PARAMETER, "version NULL");
	const char *s = NULL;
	CHECK(cuptiGetResultString(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, &s) == CUPTI_SUCCESS && s &&
	          !strcmp(s, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"), "result string %s", s ? s : "-");
	CHECK(cuptiGetResultString((CUptiResult)12345, &s) == CUPTI_ERROR_INVALID_PARAMETER, "unknown result");

	const char *name = NULL;
	CHECK(cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &name) ==
	          CUPTI_SUCCESS && name && !strcmp(name, "cuLaunchKernel"), "cuLaunchKernel: %s", name ? name : "-");
	CHECK(cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, &name) ==
	          CUPTI_SUCCESS && name && !strcmp(name, "cuMemcpyHtoD_v2"), "cuMemcpyHtoD_v2: %s", name ? name : "-");
	CHECK(cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, &name) ==
	          CUPTI_ERROR_INVALID_PARAMETER && name == NULL, "cbid out of range");
	CHECK(cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, 0, &name) == CUPTI_ERROR_INVALID_PARAMETER, "cbid 0");
	CHECK(cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, 1, NULL) == CUPTI_ERROR_INVALID_PARAMETER, "name NULL");
	unsigned named = 0, submitting = 0;
	for (uint32_t cbid = 0; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; cbid++)
		if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) == CUPTI_SUCCESS) {
			named++;
			submitting += submitting_name(name);
		}
	CHECK(named > 700, "%u driver cbids have names", named);
#if CUPTI_API_VERSION == 130001
	/* what CUPTI 13.0.1 itself answered on the H100 (issue 16 decisions) */
	CHECK(submitting == 119, "%u submitting cbids, CUPTI 13.0.1 has 119", submitting);
#endif
}

/* The stand-in's profiler is attached to the driver exactly while a session runs: a second
 * profiler is refused then, accepted after cuptiFinalize. */
/* gpu_workload.h names the stand-in runtime's functions by CUPTI's runtime callback ids */
_Static_assert(GPU_WORK_RT_cudaMemcpy == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, "runtime cbid");
_Static_assert(GPU_WORK_RT_cudaMemcpyAsync == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "runtime cbid");
_Static_assert(GPU_WORK_RT_cudaMemset == CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, "runtime cbid");
_Static_assert(GPU_WORK_RT_cudaMemsetAsync == CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, "runtime cbid");
_Static_assert(GPU_WORK_RT_cudaLaunchKernel == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "runtime cbid");
_Static_assert(GPU_WORK_RT_cudaGraphLaunch == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, "runtime cbid");
_Static_assert(GPU_WORK_RT_cudaLaunchKernelExC == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, "runtime cbid");

static int (*driver_attach)(const struct fakecuda_profiler *);
static int (*driver_initialized)(void);
static void noop_call(struct fakecuda_api_call *c) { (void)c; }
static int noop_kernel(struct fakecuda_api_call *c, const struct fakecuda_kernel_work *w) { (void)c, (void)w; return 0; }
static void noop_memcpy(struct fakecuda_api_call *c, const struct fakecuda_memcpy_work *w) { (void)c, (void)w; }
static void noop_memset(struct fakecuda_api_call *c, const struct fakecuda_memset_work *w) { (void)c, (void)w; }
static const struct fakecuda_profiler other = {noop_call, noop_kernel, noop_memcpy, noop_memset, noop_call, noop_call,
                                              noop_call};

static int driver_has_profiler(void)
{
	if (driver_attach(&other) != 0)
		return 1;
	driver_attach(NULL);
	return 0;
}

/* How a session asks for driver API records. Per cbid works only before cuInit (CUPTI 13.0.1
 * on driver 580, case_driver_api_model); after it, only the whole kind gives any. */
enum api_records { API_BY_CBID, API_BY_KIND };

static void start_session(enum api_records how)
{
	CHECK(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) == CUPTI_SUCCESS, "thread id type");
	CHECK(cuptiActivityRegisterTimestampCallback(test_clock) == CUPTI_SUCCESS, "timestamp callback");
	CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS, "callbacks");
	CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS, "kernels");
	CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) == CUPTI_SUCCESS, "memcpy");
	CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET) == CUPTI_SUCCESS, "memset");
	if (how == API_BY_CBID)
		CHECK(enable_submitting_cbids(1) == CUPTI_SUCCESS, "cbids");
	else
		CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER) == CUPTI_SUCCESS, "driver API kind");
}

static void end_session(void)
{
	CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS, "flush");
	CHECK(cuptiFinalize() == CUPTI_SUCCESS, "finalize");
}

/* The expected submitting function of a work record. */
static int submitted_by(const union rec *r, uint32_t cbid)
{
	switch (r->any.kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		if (r->kernel.graphId)
			return cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch;
		return cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx;
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		int async = r->memcpy.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
		switch (r->memcpy.copyKind) {
		case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
			return cbid == (async ? CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2 : CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2);
		case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
			return cbid == (async ? CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2 : CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2);
		case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
			return async && cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync;
		default:
			return 0;
		}
	}
	case CUPTI_ACTIVITY_KIND_MEMSET:
		if (r->memset.value == GPU_WORK_MEMSET32_VALUE)
			return (r->memset.flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) && cbid == CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async;
		return r->memset.value == GPU_WORK_MEMSET8_VALUE && !(r->memset.flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) &&
		       cbid == CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2;
	default:
		return 0;
	}
}

static uint64_t work_start(const union rec *r, uint64_t *end, uint32_t *stream)
{
	switch (r->any.kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: *end = r->kernel.end, *stream = r->kernel.streamId; return r->kernel.start;
	case CUPTI_ACTIVITY_KIND_MEMCPY: *end = r->memcpy.end, *stream = r->memcpy.streamId; return r->memcpy.start;
	default: *end = r->memset.end, *stream = r->memset.streamId; return r->memset.start;
	}
}

static uint64_t model_duration(const union rec *r)
{
	switch (r->any.kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return FAKECUPTI_KERNEL_NS((uint64_t)r->kernel.gridX * r->kernel.gridY * r->kernel.gridZ);
	case CUPTI_ACTIVITY_KIND_MEMCPY: return FAKECUPTI_MEMCPY_NS(r->memcpy.bytes);
	default: return FAKECUPTI_MEMSET_NS(r->memset.bytes);
	}
}

static int by_start(const void *a, const void *b)
{
	const union rec *x = *(const union rec *const *)a, *y = *(const union rec *const *)b;
	uint64_t e;
	uint32_t s;
	uint64_t xs = work_start(x, &e, &s), ys = work_start(y, &e, &s);
	return xs < ys ? -1 : xs > ys;
}

/* The kernels gpu_work launches, with their launch shapes (gpu_workload.h). */
static const struct {
	const char *name;
	int in_graph;
	int32_t grid, block, dynamic_shared, static_shared;
	uint16_t registers;
} shapes[] = {
	{"fake_scale_add", 0, 2, 128, 0, 0, 16},   {"fake_relu", 0, 1, 256, 512, 0, 8},
	{"_ZN4fake6fill32EPjjj", 0, 4, 64, 0, 256, 12}, {"fake_matvec", 0, 1, 16, 0, 1024, 32},
	{"fake_scale_add", 1, 1, 32, 0, 0, 16},    {"fake_relu", 1, 1, 32, 0, 0, 8},
	{"_ZN4fake6fill32EPjjj", 1, 1, 32, 0, 256, 12},
};

static void check_kernel_shape(const CUpti_ActivityKernel10 *k)
{
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		if (!strcmp(k->name, shapes[i].name) && shapes[i].in_graph == (k->graphId != 0)) {
			CHECK(k->gridX == shapes[i].grid && k->gridY == 1 && k->gridZ == 1 && k->blockX == shapes[i].block &&
			          k->blockY == 1 && k->blockZ == 1 && k->dynamicSharedMemory == shapes[i].dynamic_shared &&
			          k->staticSharedMemory == shapes[i].static_shared && k->registersPerThread == shapes[i].registers,
			      "%s%s: grid %d block %d shared %d+%d registers %u", k->name, k->graphId ? " (graph)" : "",
			      k->gridX, k->blockX, k->staticSharedMemory, k->dynamicSharedMemory, k->registersPerThread);
			return;
		}
	CHECK(0, "kernel %s not launched by the workload", k->name);
}

/* gpu_work_open: cuInit and the workload's module. */
static int open_workload(void)
{
	CHECK(!driver_initialized(), "the driver is initialised before gpu_work_open");
	int rc = gpu_work_open(libcuda_path);
	CHECK(rc == 0 && driver_initialized(), "gpu_work_open failed (%d) or did not initialise the driver", rc);
	return rc;
}

/* Everything gpu_work's workload submits on 2 threads, recorded, and every record checked. The
 * session starts before cuInit, the one time the submitting cbids alone can be enabled. */
static void case_workload(void)
{
	CHECK(!driver_has_profiler(), "a profiler is attached before any session");
	forget_records();
	uint64_t ts_before = __atomic_load_n(&ts_calls, __ATOMIC_RELAXED);
	start_session(API_BY_CBID);
	CHECK(driver_has_profiler(), "the stand-in is not attached to the driver after enabling");
	if (open_workload() != 0) {
		end_session();
		return;
	}
	struct gpu_work_result res;
	const uint64_t iters = 40;
	CHECK(run_workload(2, iters, &res) == 0, "the workload failed");
	wait_for_worker_delivery();
	end_session();
	CHECK(!driver_has_profiler(), "still attached to the driver after cuptiFinalize");
	uint64_t n = res.iterations;
	CHECK(n == 2 * iters, "%llu iterations", (unsigned long long)n);

	/* exact counts per kind and kernel name */
	size_t kernels = 0;
	for (int k = 0; k < GPU_WORK_KERNELS; k++) {
		size_t direct = 0, graph = 0;
		for (size_t i = 0; i < ngot; i++)
			if (got[i].any.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && !strcmp(got[i].kernel.name, gpu_work_kernels[k].name))
				*(got[i].kernel.graphId ? &graph : &direct) += 1;
		CHECK(direct == n * gpu_work_kernels[k].direct && graph == n * gpu_work_kernels[k].in_graph,
		      "%s: %zu launched, %zu by graphs; expected %llu, %llu", gpu_work_kernels[k].name, direct, graph,
		      (unsigned long long)(n * gpu_work_kernels[k].direct), (unsigned long long)(n * gpu_work_kernels[k].in_graph));
		kernels += direct + graph;
	}
	CHECK(count_kind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == kernels, "kernel records of unknown names");
	size_t copies[16] = {0}, async_copies[16] = {0};
	for (size_t i = 0; i < ngot; i++)
		if (got[i].any.kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
			const CUpti_ActivityMemcpy6 *m = &got[i].memcpy;
			copies[m->copyKind & 15]++;
			async_copies[m->copyKind & 15] += (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0;
			CHECK(m->bytes == GPU_WORK_COPY_BYTES && m->copyCount == 1, "copy of %llu bytes", (unsigned long long)m->bytes);
			CHECK(m->srcKind == (m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD ? CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE
			                                                                    : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) &&
			          m->dstKind == (m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH ? CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE
			                                                                        : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE),
			      "copy kind %u: memory kinds %u -> %u", m->copyKind, m->srcKind, m->dstKind);
		}
	CHECK(copies[CUPTI_ACTIVITY_MEMCPY_KIND_HTOD] == n * GPU_WORK_HTOD && async_copies[CUPTI_ACTIVITY_MEMCPY_KIND_HTOD] == n,
	      "HtoD %zu (%zu async)", copies[CUPTI_ACTIVITY_MEMCPY_KIND_HTOD], async_copies[CUPTI_ACTIVITY_MEMCPY_KIND_HTOD]);
	CHECK(copies[CUPTI_ACTIVITY_MEMCPY_KIND_DTOH] == n * GPU_WORK_DTOH && async_copies[CUPTI_ACTIVITY_MEMCPY_KIND_DTOH] == n,
	      "DtoH %zu (%zu async)", copies[CUPTI_ACTIVITY_MEMCPY_KIND_DTOH], async_copies[CUPTI_ACTIVITY_MEMCPY_KIND_DTOH]);
	CHECK(copies[CUPTI_ACTIVITY_MEMCPY_KIND_DTOD] == n * GPU_WORK_DTOD && async_copies[CUPTI_ACTIVITY_MEMCPY_KIND_DTOD] == n,
	      "DtoD %zu (%zu async)", copies[CUPTI_ACTIVITY_MEMCPY_KIND_DTOD], async_copies[CUPTI_ACTIVITY_MEMCPY_KIND_DTOD]);
	CHECK(count_kind(CUPTI_ACTIVITY_KIND_MEMCPY) == n * (GPU_WORK_HTOD + GPU_WORK_DTOH + GPU_WORK_DTOD), "other copies");
	size_t memsets32 = 0, memsets8 = 0;
	for (size_t i = 0; i < ngot; i++)
		if (got[i].any.kind == CUPTI_ACTIVITY_KIND_MEMSET) {
			const CUpti_ActivityMemset4 *m = &got[i].memset;
			memsets32 += m->value == GPU_WORK_MEMSET32_VALUE && m->bytes == GPU_WORK_MEMSET32_BYTES;
			memsets8 += m->value == GPU_WORK_MEMSET8_VALUE && m->bytes == GPU_WORK_MEMSET8_BYTES;
			CHECK(m->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, "memset memory kind %u", m->memoryKind);
		}
	CHECK(memsets32 == n && memsets8 == n && count_kind(CUPTI_ACTIVITY_KIND_MEMSET) == n * GPU_WORK_MEMSETS,
	      "memsets: %zu D32, %zu D8 of %zu", memsets32, memsets8, count_kind(CUPTI_ACTIVITY_KIND_MEMSET));

	/* one API record per call of each submitting function, none of the others */
	check_api_records_per_cbid("workload", &res);
	CHECK(ngot == count_kind(CUPTI_ACTIVITY_KIND_DRIVER) + kernels + count_kind(CUPTI_ACTIVITY_KIND_MEMCPY) +
	                  count_kind(CUPTI_ACTIVITY_KIND_MEMSET), "records of other kinds");

	/* API records: the callback's clock, the workload's threads, success, this process */
	uint64_t last_ts = __atomic_load_n(&ts_calls, __ATOMIC_RELAXED);
	int bad_api = 0;
	for (size_t i = 0; i < ngot; i++)
		if (got[i].any.kind == CUPTI_ACTIVITY_KIND_DRIVER) {
			const CUpti_ActivityAPI *a = &got[i].api;
			if (!is_callback_time(a->start) || !is_callback_time(a->end) || a->start >= a->end ||
			    a->start <= TS_BASE + TS_STEP * ts_before || a->end > TS_BASE + TS_STEP * last_ts ||
			    !workload_thread(a->threadId) || a->returnValue != 0 || a->processId != (uint32_t)getpid())
				bad_api++;
		}
	CHECK(bad_api == 0, "%d API records with times not from the callback, another thread or a failure", bad_api);

	/* every work record: its call's API record (one), of the right function; GPU times after the
	 * call's start, the model's durations, in order per stream */
	int unlinked = 0, wrong_fn = 0, early = 0, wrong_duration = 0;
	const union rec **work = malloc(ngot * sizeof(*work));
	size_t nwork = 0;
	for (size_t i = 0; i < ngot; i++) {
		if (got[i].any.kind == CUPTI_ACTIVITY_KIND_DRIVER)
			continue;
		const union rec *r = &got[i];
		work[nwork++] = r;
		uint32_t corr = r->any.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? r->kernel.correlationId
		                : r->any.kind == CUPTI_ACTIVITY_KIND_MEMCPY            ? r->memcpy.correlationId
		                                                                       : r->memset.correlationId;
		const CUpti_ActivityAPI *a = api_of(corr);
		if (!a) {
			unlinked++;
			continue;
		}
		wrong_fn += !submitted_by(r, a->cbid);
		uint64_t end;
		uint32_t stream;
		uint64_t start = work_start(r, &end, &stream);
		early += start < a->start + FAKECUPTI_LAUNCH_NS;
		wrong_duration += end - start != model_duration(r);
		if (r->any.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
			check_kernel_shape(&r->kernel);
	}
	CHECK(unlinked == 0, "%d work records without exactly one API record of their correlation id", unlinked);
	CHECK(wrong_fn == 0, "%d work records linked to the wrong function", wrong_fn);
	CHECK(early == 0, "%d work records start before their call's API start + %llu ns", early, FAKECUPTI_LAUNCH_NS);
	CHECK(wrong_duration == 0, "%d work records last other than the model says", wrong_duration);
	qsort(work, nwork, sizeof(*work), by_start);
	int overlaps = 0;
	uint32_t streams_seen[8];
	uint64_t stream_end[8];
	int nstreams = 0;
	for (size_t i = 0; i < nwork; i++) {
		uint64_t end;
		uint32_t stream;
		uint64_t start = work_start(work[i], &end, &stream);
		int s;
		for (s = 0; s < nstreams && streams_seen[s] != stream; s++)
			;
		if (s == nstreams) {
			if (nstreams == 8)
				break;
			streams_seen[nstreams] = stream;
			stream_end[nstreams++] = 0;
		}
		overlaps += start < stream_end[s];
		stream_end[s] = end;
	}
	free(work);
	CHECK(overlaps == 0, "%d work records overlap the previous one of their stream", overlaps);
	/* the NULL stream and the two threads' streams */
	CHECK(nstreams == 3, "%d streams", nstreams);
	for (int s = 0; s < nstreams; s++)
		CHECK(streams_seen[s] == FAKECUDA_NULL_STREAM_ID || (streams_seen[s] >= FAKECUDA_FIRST_STREAM_ID &&
		                                                     streams_seen[s] < FAKECUDA_FIRST_STREAM_ID + 64),
		      "stream id %u", streams_seen[s]);

	/* graph launches: the launch's correlation id on each of its 3 kernels, distinct nodes,
	 * one graph per thread */
	uint32_t graph_ids[4];
	uint64_t node_ids[8];
	int ngraphs = 0, nnodes = 0, bad_graph = 0;
	for (size_t i = 0; i < ngot; i++) {
		if (got[i].any.kind != CUPTI_ACTIVITY_KIND_DRIVER || got[i].api.cbid != CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch)
			continue;
		int kernels_of_launch = 0;
		uint32_t gid = 0;
		uint64_t nodes_seen[GPU_WORK_GRAPH_NODES] = {0};
		for (size_t j = 0; j < ngot; j++) {
			if (got[j].any.kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || got[j].kernel.correlationId != got[i].api.correlationId)
				continue;
			const CUpti_ActivityKernel10 *k = &got[j].kernel;
			if (!k->graphId || !k->graphNodeId || (gid && k->graphId != gid) || kernels_of_launch == GPU_WORK_GRAPH_NODES) {
				bad_graph++;
				continue;
			}
			gid = k->graphId;
			for (int m = 0; m < kernels_of_launch; m++)
				bad_graph += nodes_seen[m] == k->graphNodeId;
			nodes_seen[kernels_of_launch++] = k->graphNodeId;
			int seen = 0;
			for (int m = 0; m < nnodes; m++)
				seen |= node_ids[m] == k->graphNodeId;
			if (!seen && nnodes < 8)
				node_ids[nnodes++] = k->graphNodeId;
		}
		bad_graph += kernels_of_launch != GPU_WORK_GRAPH_NODES;
		int seen = 0;
		for (int m = 0; m < ngraphs; m++)
			seen |= graph_ids[m] == gid;
		if (!seen && ngraphs < 4)
			graph_ids[ngraphs++] = gid;
	}
	CHECK(bad_graph == 0, "%d graph launches without their 3 kernels of one graph, distinct nodes", bad_graph);
	CHECK(ngraphs == 2 && nnodes == 2 * GPU_WORK_GRAPH_NODES, "%d graphs, %d nodes", ngraphs, nnodes);

	/* correlation ids: one per call */
	int dup = 0;
	for (size_t i = 0; i < ngot; i++)
		if (got[i].any.kind == CUPTI_ACTIVITY_KIND_DRIVER && api_of(got[i].api.correlationId) == NULL)
			dup++;
	CHECK(dup == 0, "%d correlation ids on two API records", dup);

	/* delivery: buffers filled on the stand-in's own thread, the rest at the flush */
	CHECK(completions_elsewhere > 0, "no buffer handed back by the stand-in's worker thread");
	CHECK(completions_elsewhere < completions, "the flush handed back nothing (%u of %u elsewhere)",
	      completions_elsewhere, completions);
	CHECK(requests == completions, "%u buffers requested, %u handed back", requests, completions);
	size_t dropped = 1;
	CHECK(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped == 0, "%zu dropped", dropped);
	printf("    %zu records (%zu kernels), %u buffers, %u from the worker thread\n", ngot, kernels, completions,
	       completions_elsewhere);
}

/* One session of 5 workload iterations whose driver API records enable_api asks for; before
 * cuInit when open is set (gpu_work_open follows the enabling). Kernel records on, memset records
 * switched on and off again, memcpy records never on: the work records show that the session
 * recorded and that the API settings leave them alone. */
static int api_session(void (*enable_api)(void), int open, struct gpu_work_result *res)
{
	forget_records();
	CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS, "callbacks");
	CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS, "kernels");
	CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET) == CUPTI_SUCCESS, "memsets");
	CHECK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET) == CUPTI_SUCCESS, "memsets off");
	enable_api();
	if (open && open_workload() != 0) {
		end_session();
		return -1;
	}
	CHECK(run_workload(1, 5, res) == 0, "workload");
	end_session();
	CHECK(count_kind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 5 * 7 && count_kind(CUPTI_ACTIVITY_KIND_MEMCPY) == 0 &&
	          count_kind(CUPTI_ACTIVITY_KIND_MEMSET) == 0,
	      "%zu kernels, %zu copies, %zu memsets", count_kind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
	      count_kind(CUPTI_ACTIVITY_KIND_MEMCPY), count_kind(CUPTI_ACTIVITY_KIND_MEMSET));
	return 0;
}

static void launch_kernel_cbid(void)
{
	CHECK(cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1) == CUPTI_SUCCESS, "cuLaunchKernel on");
}

static void driver_kind(void)
{
	CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER) == CUPTI_SUCCESS, "driver API kind");
}

static void driver_kind_then_other_cbids_off(void)
{
	driver_kind();
	CHECK(cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, 0) == CUPTI_SUCCESS, "cuMemcpyAsync off");
	CHECK(cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, 0) == CUPTI_SUCCESS, "cuMemsetD8_v2 off");
}

static void launch_kernel_cbid_then_driver_kind(void)
{
	launch_kernel_cbid();
	driver_kind();
}

/* The driver API records the enabling calls give, as CUPTI 13.0.1 gives them on driver 580
 * (measured on an H100, docs/validation.md), one session per row:
 *   1. EnableDriverApi(cuLaunchKernel, 1) before cuInit: cuLaunchKernel's records, no other.
 *   2. EnableDriverApi(cuLaunchKernel, 1) after cuInit: CUPTI_SUCCESS, and no record.
 *   3. Enable(KIND_DRIVER) after cuInit: every driver call's (of the stand-in driver: every
 *      submitting call, the only ones it reports).
 *   4. Enable(KIND_DRIVER), then EnableDriverApi(other cbids, 0), after cuInit: no record at
 *      all, cuLaunchKernel's neither.
 *   5. EnableDriverApi(cuLaunchKernel, 1), then Enable(KIND_DRIVER), after cuInit: every driver
 *      call's (the kind overrides).
 * Row 1 needs a driver not yet initialised: this case runs in a process of its own. */
static void case_driver_api_model(void)
{
	CHECK(cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_SIZE, 1) == CUPTI_ERROR_INVALID_PARAMETER, "bad cbid");
	struct gpu_work_result res;
	if (api_session(launch_kernel_cbid, 1, &res) != 0)
		return;
	CHECK(api_count(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) == res.calls[GW_cuLaunchKernel] &&
	          count_kind(CUPTI_ACTIVITY_KIND_DRIVER) == res.calls[GW_cuLaunchKernel] && res.calls[GW_cuLaunchKernel] > 0,
	      "row 1: %zu API records, %zu of cuLaunchKernel, %llu cuLaunchKernel calls",
	      count_kind(CUPTI_ACTIVITY_KIND_DRIVER), api_count(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel),
	      (unsigned long long)res.calls[GW_cuLaunchKernel]);

	api_session(launch_kernel_cbid, 0, &res);
	CHECK(count_kind(CUPTI_ACTIVITY_KIND_DRIVER) == 0, "row 2: %zu API records", count_kind(CUPTI_ACTIVITY_KIND_DRIVER));

	api_session(driver_kind, 0, &res);
	check_api_records_per_cbid("row 3", &res);

	api_session(driver_kind_then_other_cbids_off, 0, &res);
	CHECK(count_kind(CUPTI_ACTIVITY_KIND_DRIVER) == 0, "row 4: %zu API records", count_kind(CUPTI_ACTIVITY_KIND_DRIVER));

	api_session(launch_kernel_cbid_then_driver_kind, 0, &res);
	check_api_records_per_cbid("row 5", &res);
}

/* A buffer too small for any record, or none: every record dropped and counted; each buffer
 * given back. maxNumRecords 1: one record per buffer. After cuInit, so the API records come of
 * CUPTI_ACTIVITY_KIND_DRIVER: those of the 12 submitting calls per iteration, the only calls
 * the stand-in driver reports. */
static void case_drops(void)
{
	forget_records();
	buffer_size = 16;
	start_session(API_BY_KIND);
	struct gpu_work_result res;
	CHECK(run_workload(1, 3, &res) == 0, "workload");
	CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS, "flush");
	size_t per_iteration = 7 + 5 + 2 + 12; /* kernels, copies, memsets, submitting calls */
	size_t dropped = 0;
	CHECK(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped == 3 * per_iteration,
	      "%zu dropped, expected %zu", dropped, 3 * per_iteration);
	CHECK(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped == 0, "not reset: %zu", dropped);
	CHECK(ngot == 0 && requests >= 1 && requests == completions && empty_completions == completions,
	      "%zu records, %u requests, %u completions (%u empty)", ngot, requests, completions, empty_completions);

	forget_records();
	buffer_size = 0; /* the client declines */
	CHECK(run_workload(1, 2, &res) == 0, "workload");
	CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS, "flush");
	CHECK(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped == 2 * per_iteration,
	      "%zu dropped, expected %zu", dropped, 2 * per_iteration);
	CHECK(ngot == 0 && completions == 0, "%zu records, %u completions", ngot, completions);

	forget_records();
	buffer_size = 64 * 1024;
	max_records = 1;
	CHECK(run_workload(1, 2, &res) == 0, "workload");
	CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS, "flush");
	CHECK(ngot == 2 * per_iteration && completions == ngot && empty_completions == 0,
	      "maxNumRecords 1: %zu records in %u buffers", ngot, completions);
	max_records = 0;
	end_session();
}

/* After cuptiFinalize: no record, no callback, the driver free of the stand-in; enabling again
 * starts a new session whose correlation ids go on from the last. After cuInit: API records of
 * CUPTI_ACTIVITY_KIND_DRIVER. */
static void case_finalize(void)
{
	forget_records();
	start_session(API_BY_KIND);
	struct gpu_work_result res;
	CHECK(run_workload(1, 2, &res) == 0, "workload");
	end_session();
	uint32_t last_corr = 0;
	for (size_t i = 0; i < ngot; i++)
		if (got[i].any.kind == CUPTI_ACTIVITY_KIND_DRIVER && got[i].api.correlationId > last_corr)
			last_corr = got[i].api.correlationId;
	CHECK(last_corr > 0, "no API records");

	forget_records();
	uint64_t ts_before = __atomic_load_n(&ts_calls, __ATOMIC_RELAXED);
	CHECK(run_workload(2, 5, &res) == 0, "workload");
	CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_ERROR_INVALID_OPERATION,
	      "flush after finalize: callbacks still registered");
	CHECK(ngot == 0 && requests == 0 && completions == 0, "after finalize: %zu records, %u requests", ngot, requests);
	CHECK(__atomic_load_n(&ts_calls, __ATOMIC_RELAXED) == ts_before, "the timestamp callback ran after finalize");
	CHECK(!driver_has_profiler(), "still attached");

	/* a second session: the default clock (CLOCK_REALTIME) and thread ids (pthread_self) */
	CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS, "callbacks");
	CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER) == CUPTI_SUCCESS, "driver API kind");
	struct timespec t0, t1;
	clock_gettime(CLOCK_REALTIME, &t0);
	CHECK(run_workload(1, 2, &res) == 0, "workload");
	clock_gettime(CLOCK_REALTIME, &t1);
	CHECK(cuptiActivityFlushAll(0) == CUPTI_SUCCESS, "flush");
	uint64_t lo = (uint64_t)t0.tv_sec * 1000000000u + (uint64_t)t0.tv_nsec;
	uint64_t hi = (uint64_t)t1.tv_sec * 1000000000u + (uint64_t)t1.tv_nsec;
	int bad = 0;
	for (size_t i = 0; i < ngot; i++) {
		const CUpti_ActivityAPI *a = &got[i].api;
		bad += got[i].any.kind != CUPTI_ACTIVITY_KIND_DRIVER || a->correlationId <= last_corr || a->start < lo ||
		       a->end > hi || a->threadId != res.pthread_ids[0];
	}
	CHECK(ngot == 2 * 12 && bad == 0, "%zu records, %d with ids, times or thread ids wrong", ngot, bad);
	check_api_records_per_cbid("second session", &res);
	end_session();
}

/* One subscriber at a time, as CUPTI: the second gets MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED. */
static void case_subscriber(void)
{
	CUpti_SubscriberHandle a = NULL, b = NULL;
	CHECK(cuptiSubscribe(&a, NULL, NULL) == CUPTI_SUCCESS && a, "first subscriber");
	CHECK(cuptiSubscribe(&b, NULL, NULL) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "second subscriber");
	CHECK(cuptiSubscribe(NULL, NULL, NULL) == CUPTI_ERROR_INVALID_PARAMETER, "NULL handle");
	CHECK(cuptiUnsubscribe((CUpti_SubscriberHandle)&b) == CUPTI_ERROR_INVALID_PARAMETER, "a bogus handle");
	CHECK(cuptiUnsubscribe(a) == CUPTI_SUCCESS, "unsubscribe");
	CHECK(cuptiUnsubscribe(a) == CUPTI_ERROR_INVALID_PARAMETER, "unsubscribe twice");
	CHECK(cuptiSubscribe(&b, NULL, NULL) == CUPTI_SUCCESS, "subscribe after unsubscribe");
	CHECK(cuptiFinalize() == CUPTI_SUCCESS, "finalize");
	CHECK(cuptiSubscribe(&a, NULL, NULL) == CUPTI_SUCCESS, "finalize frees the slot");
	CHECK(cuptiUnsubscribe(a) == CUPTI_SUCCESS, "unsubscribe");
}

/* cuptiActivityGetNextRecord on what the client may hand it. */
static void case_next_record(void)
{
	_Alignas(8) uint8_t buf[64] = {0};
	CUpti_Activity *r = NULL;
	CHECK(cuptiActivityGetNextRecord(NULL, 8, &r) == CUPTI_ERROR_INVALID_PARAMETER, "NULL buffer");
	CHECK(cuptiActivityGetNextRecord(buf, 0, &r) == CUPTI_ERROR_MAX_LIMIT_REACHED, "empty buffer");
	CHECK(cuptiActivityGetNextRecord(buf, sizeof(buf), &r) == CUPTI_ERROR_INVALID_KIND, "kind 0");
	CUpti_ActivityAPI api = {.kind = CUPTI_ACTIVITY_KIND_DRIVER};
	memcpy(buf, &api, sizeof(api));
	CHECK(cuptiActivityGetNextRecord(buf, sizeof(api) - 1, &r) == CUPTI_ERROR_INVALID_KIND, "a cut record");
	r = NULL;
	CHECK(cuptiActivityGetNextRecord(buf, sizeof(api), &r) == CUPTI_SUCCESS && r == (CUpti_Activity *)buf, "one record");
	CHECK(cuptiActivityGetNextRecord(buf, sizeof(api), &r) == CUPTI_ERROR_MAX_LIMIT_REACHED, "the end");
}

/* Loads the stand-in libcuda by path, as gpu_work_open does later: loaded under its soname
 * libcuda.so.1 (where the stand-in CUPTI finds it), not yet initialised, so that a session can
 * start before cuInit. */
static int load_driver(void)
{
	void *h = dlopen(libcuda_path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("cannot load %s: %s\n", libcuda_path, dlerror());
		return -1;
	}
	driver_attach = (int (*)(const struct fakecuda_profiler *))dlsym(h, "fakecuda_profiler_attach");
	driver_initialized = (int (*)(void))dlsym(h, "fakecuda_initialized");
	if (!driver_attach || !driver_initialized) {
		printf("the stand-in libcuda at %s has no fakecuda_profiler_attach or fakecuda_initialized\n", libcuda_path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int records = argc == 3 && !strcmp(argv[2], "records");
	if (argc != 3 || (!records && strcmp(argv[2], "driver-api"))) {
		fprintf(stderr, "usage: test_fakecupti LIBCUDA_PATH records|driver-api\n");
		return 2;
	}
	libcuda_path = argv[1];
	main_tid = (pid_t)syscall(SYS_gettid);
	if (!records) {
		if (load_driver() != 0)
			return 1;
		RUN(case_driver_api_model);
		UNIT_EXIT();
	}
	RUN(case_without_driver);
	RUN(case_next_record);
	if (load_driver() != 0)
		return 1;
	RUN(case_workload);
	if (!driver_initialized()) /* gpu_work_open failed: nothing more can run */
		UNIT_EXIT();
	RUN(case_drops);
	RUN(case_finalize);
	RUN(case_subscriber);
	UNIT_EXIT();
}
