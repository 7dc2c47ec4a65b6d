/* The profiler the stand-in libcupti attaches to the stand-in libcuda (fakecuda_profiler.h): each
 * submitting call becomes a correlation id, work records (kernel, memcpy, memset) with simulated
 * GPU times, and an API record (CUPTI_ACTIVITY_KIND_DRIVER) when its cbid is enabled. All of it
 * runs on the application's thread inside the driver call; records are only queued here
 * (records.c delivers them). */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "fakecupti.h"
#include "fakecupti_internal.h"

/* call->profiler[] between api_enter and api_exit. P_SESSION's bit 32: a driver call the
 * stand-in runtime made (RUNTIME_MADE). */
enum { P_SESSION, P_CORRELATION, P_START, P_THREAD };
#define RUNTIME_MADE (1ull << 32)

/* The runtime call (fakecuda_runtime_enter) the calling thread is in, NULL if none. */
static __thread struct fakecuda_api_call *in_runtime;

static uint32_t next_correlation; /* atomic; CUPTI's ids count on across sessions */
static int64_t next_grid_id;      /* atomic */

/* ---- the simulated GPU: when each stream's last work ends ---------------------------------- */

#define STREAM_SLOTS 64
static struct { uint32_t id; uint64_t busy_until; } streams[STREAM_SLOTS];
static unsigned nstreams;
static pthread_mutex_t gpu_lock = PTHREAD_MUTEX_INITIALIZER;

FC_HIDDEN void fc_gpu_reset(void)
{
	pthread_mutex_lock(&gpu_lock);
	nstreams = 0;
	pthread_mutex_unlock(&gpu_lock);
}

/* [*start, *end) of work of `duration` ns on a stream, reported now (fakecupti.h). */
static void gpu_schedule(uint32_t stream, uint64_t duration, uint64_t *start, uint64_t *end)
{
	uint64_t earliest = fc_now() + FAKECUPTI_LAUNCH_NS;
	pthread_mutex_lock(&gpu_lock);
	unsigned i;
	for (i = 0; i < nstreams && streams[i].id != stream; i++)
		;
	if (i == nstreams) {
		if (nstreams == STREAM_SLOTS)
			i = stream % STREAM_SLOTS; /* more streams than slots: some share a queue */
		else
			streams[nstreams++] = (__typeof__(streams[0])){stream, 0};
	}
	*start = streams[i].busy_until > earliest ? streams[i].busy_until : earliest;
	*end = *start + duration;
	streams[i].busy_until = *end;
	pthread_mutex_unlock(&gpu_lock);
}

/* ---- the profiler -------------------------------------------------------------------------- */

/* The call's session if it is being recorded (it began in the current session), else 0. */
static uint32_t recording(const struct fakecuda_api_call *call)
{
	uint32_t s = (uint32_t)call->profiler[P_SESSION];
	return s && s == fc_session_now() ? s : 0;
}

static void api_enter(struct fakecuda_api_call *call)
{
	uint32_t s = fc_session_now();
	if (!s)
		return;
	call->profiler[P_SESSION] = s;
	/* a driver call inside a runtime call carries the runtime call's correlation id */
	if (in_runtime && recording(in_runtime)) {
		call->profiler[P_SESSION] |= RUNTIME_MADE;
		call->profiler[P_CORRELATION] = in_runtime->profiler[P_CORRELATION];
	} else
		call->profiler[P_CORRELATION] = __atomic_add_fetch(&next_correlation, 1, __ATOMIC_RELAXED);
	call->profiler[P_THREAD] = fc_thread_id();
	call->profiler[P_START] = fc_now();
}

/* The API record of a driver call (kind DRIVER) or of a runtime call (kind RUNTIME). */
static void api_record(uint32_t s, CUpti_ActivityKind kind, const struct fakecuda_api_call *call)
{
	CUpti_ActivityAPI r;
	memset(&r, 0, sizeof(r));
	r.kind = kind;
	r.cbid = call->cbid;
	r.start = call->profiler[P_START];
	r.end = fc_now();
	r.processId = (uint32_t)getpid();
	r.threadId = (uint32_t)call->profiler[P_THREAD];
	r.correlationId = (uint32_t)call->profiler[P_CORRELATION];
	r.returnValue = (uint32_t)call->result;
	fc_push(s, &r, sizeof(r));
}

static void api_exit(struct fakecuda_api_call *call)
{
	uint32_t s = recording(call);
	/* KIND_DRIVER enabled after cuInit: CUPTI 13.0.1 does not record the driver calls the CUDA
	 * runtime makes (README.md) */
	if (s && (call->profiler[P_SESSION] & RUNTIME_MADE) && __atomic_load_n(&fc_driver_kind_late, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&fc_per_cbid, __ATOMIC_RELAXED))
		return;
	if (!s || call->cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE ||
	    !__atomic_load_n(__atomic_load_n(&fc_per_cbid, __ATOMIC_RELAXED) ? &fc_cbid_applied[call->cbid]
	                                                                     : &fc_cbid_on[call->cbid],
	                     __ATOMIC_RELAXED))
		return;
	api_record(s, CUPTI_ACTIVITY_KIND_DRIVER, call);
}

/* A runtime call: a correlation id of its own, which the driver calls it makes share. */
static void runtime_enter(struct fakecuda_api_call *rcall)
{
	api_enter(rcall);
	in_runtime = rcall;
}

static void runtime_exit(struct fakecuda_api_call *rcall)
{
	in_runtime = NULL;
	uint32_t s = recording(rcall);
	if (s && __atomic_load_n(&fc_runtime_on, __ATOMIC_RELAXED))
		api_record(s, CUPTI_ACTIVITY_KIND_RUNTIME, rcall);
}

/* The fields every work record has, by the same names: where it ran, which call submitted it. */
#define SET_WHERE(r, where, call)                                                                  \
	((r).deviceId = (where).device_id, (r).contextId = (where).context_id,                         \
	 (r).streamId = (where).stream_id, (r).correlationId = (uint32_t)(call)->profiler[P_CORRELATION], \
	 (r).graphNodeId = (where).graph_node_id, (r).graphId = (where).graph_id)

static int work_on(enum fc_work_kind k)
{
	return __atomic_load_n(&fc_work_on[k], __ATOMIC_RELAXED);
}

static int kernel(struct fakecuda_api_call *call, const struct fakecuda_kernel_work *w)
{
	uint32_t s = recording(call);
	if (!s || !work_on(FC_KERNEL))
		return 0;
	CUpti_ActivityKernel10 r;
	memset(&r, 0, sizeof(r));
	r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	r.registersPerThread = (uint16_t)w->registers;
	uint64_t blocks = (uint64_t)w->grid[0] * w->grid[1] * w->grid[2];
	gpu_schedule(w->where.stream_id, FAKECUPTI_KERNEL_NS(blocks), &r.start, &r.end);
	SET_WHERE(r, w->where, call);
	r.completed = r.end;
	r.gridX = (int32_t)w->grid[0];
	r.gridY = (int32_t)w->grid[1];
	r.gridZ = (int32_t)w->grid[2];
	r.blockX = (int32_t)w->block[0];
	r.blockY = (int32_t)w->block[1];
	r.blockZ = (int32_t)w->block[2];
	r.staticSharedMemory = (int32_t)w->static_shared;
	r.dynamicSharedMemory = (int32_t)w->dynamic_shared;
	r.sharedMemoryExecuted = w->static_shared + w->dynamic_shared;
	r.gridId = __atomic_add_fetch(&next_grid_id, 1, __ATOMIC_RELAXED);
	r.name = w->name;
	r.launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
	fc_push(s, &r, sizeof(r));
	return 1;
}

static void memcpy_work(struct fakecuda_api_call *call, const struct fakecuda_memcpy_work *w)
{
	uint32_t s = recording(call);
	if (!s || !work_on(FC_MEMCPY))
		return;
	CUpti_ActivityMemcpy6 r;
	memset(&r, 0, sizeof(r));
	r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	r.copyKind = w->copy_kind;
	r.srcKind = w->src_kind;
	r.dstKind = w->dst_kind;
	r.flags = w->async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
	r.bytes = w->bytes;
	gpu_schedule(w->where.stream_id, FAKECUPTI_MEMCPY_NS(w->bytes), &r.start, &r.end);
	SET_WHERE(r, w->where, call);
	r.copyCount = 1;
	fc_push(s, &r, sizeof(r));
}

static void memset_work(struct fakecuda_api_call *call, const struct fakecuda_memset_work *w)
{
	uint32_t s = recording(call);
	if (!s || !work_on(FC_MEMSET))
		return;
	CUpti_ActivityMemset4 r;
	memset(&r, 0, sizeof(r));
	r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	r.value = w->value;
	r.bytes = w->bytes;
	gpu_schedule(w->where.stream_id, FAKECUPTI_MEMSET_NS(w->bytes), &r.start, &r.end);
	SET_WHERE(r, w->where, call);
	r.flags = w->async ? CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC : 0;
	r.memoryKind = w->memory_kind;
	fc_push(s, &r, sizeof(r));
}

FC_HIDDEN const struct fakecuda_profiler fc_driver_profiler = {
	.api_enter = api_enter,
	.kernel = kernel,
	.memcpy = memcpy_work,
	.memset = memset_work,
	.api_exit = api_exit,
	.runtime_enter = runtime_enter,
	.runtime_exit = runtime_exit,
};

/* The driver's values are CUPTI's (fakecuda_profiler.h says so); keep them so. */
_Static_assert((int)FAKECUDA_COPY_HTOD == (int)CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, "copy kind");
_Static_assert((int)FAKECUDA_COPY_DTOH == (int)CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, "copy kind");
_Static_assert((int)FAKECUDA_COPY_DTOD == (int)CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, "copy kind");
_Static_assert((int)FAKECUDA_COPY_HTOH == (int)CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, "copy kind");
_Static_assert((int)FAKECUDA_MEMORY_PAGEABLE == (int)CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, "memory kind");
_Static_assert((int)FAKECUDA_MEMORY_DEVICE == (int)CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, "memory kind");
