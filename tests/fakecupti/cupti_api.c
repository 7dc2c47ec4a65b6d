/* The CUPTI functions the stand-in libcupti.so.13 exports (README.md: exactly those cuhook's
 * agent may call, issue 16), with CUPTI 13.0's signatures from the toolkit's cupti.h, and the
 * settings they make. The stand-in attaches to the stand-in libcuda when the first activity kind
 * or driver cbid is enabled, and detaches at cuptiFinalize. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fakecupti_internal.h"

static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER; /* settings, attach, finalize */

FC_HIDDEN uint8_t fc_work_on[FC_WORK_KINDS];
FC_HIDDEN uint8_t fc_cbid_on[CUPTI_DRIVER_TRACE_CBID_SIZE];
/* Per-cbid driver records, as CUPTI 13.0.1 on driver 580 does them (measured on an H100,
 * docs/validation.md "the GPU side"): cuptiActivityEnableDriverApi takes effect only while the
 * driver is not yet initialised (cuInit); called later it still answers CUPTI_SUCCESS, changes
 * nothing, and yet puts the driver records in per-cbid mode, so that with
 * CUPTI_ACTIVITY_KIND_DRIVER enabled before it, none come any more. Enabling
 * CUPTI_ACTIVITY_KIND_DRIVER after it leaves per-cbid mode (cupti_activity.h: the kind
 * overrides the API's settings made before it). */
FC_HIDDEN uint8_t fc_cbid_applied[CUPTI_DRIVER_TRACE_CBID_SIZE];
FC_HIDDEN uint8_t fc_per_cbid;
FC_HIDDEN uint8_t fc_driver_kind_late;
FC_HIDDEN uint8_t fc_runtime_on;
static CUpti_TimestampCallbackFunc timestamp_fn;                    /* atomic */
static int thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT; /* atomic */

/* under api_lock: the stand-in libcuda while attached to it */
static void *libcuda;
static int (*profiler_attach)(const struct fakecuda_profiler *);

/* The one subscriber slot (cuptiSubscribe) */
struct CUpti_Subscriber_st {
	int taken;
	CUpti_CallbackFunc callback; /* never called: the stand-in has no callback API */
	void *userdata;
};
static struct CUpti_Subscriber_st subscriber;

FC_HIDDEN uint64_t fc_now(void)
{
	CUpti_TimestampCallbackFunc f = __atomic_load_n(&timestamp_fn, __ATOMIC_ACQUIRE);
	if (f)
		return f();
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

FC_HIDDEN uint32_t fc_thread_id(void)
{
	if (__atomic_load_n(&thread_id_type, __ATOMIC_RELAXED) == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
		return (uint32_t)syscall(SYS_gettid);
	return (uint32_t)(uintptr_t)pthread_self(); /* CUPTI's default on Linux: pthread_self() */
}

/* Under api_lock. The stand-in libcuda must already be loaded: the stand-in never loads a
 * driver itself. */
static CUptiResult attach_to_driver(void)
{
	if (libcuda)
		return CUPTI_SUCCESS;
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return CUPTI_ERROR_NOT_INITIALIZED;
	int (*attach)(const struct fakecuda_profiler *) =
	    (int (*)(const struct fakecuda_profiler *))dlsym(h, "fakecuda_profiler_attach");
	if (!attach || attach(&fc_driver_profiler) != 0) { /* not the stand-in, or another profiler */
		dlclose(h);
		return CUPTI_ERROR_NOT_INITIALIZED;
	}
	fc_gpu_reset();
	if (!fc_records_open()) {
		attach(NULL);
		dlclose(h);
		return CUPTI_ERROR_OUT_OF_MEMORY;
	}
	libcuda = h;
	profiler_attach = attach;
	return CUPTI_SUCCESS;
}

/* Whether the stand-in libcuda has seen cuInit (not loaded: not initialised). */
static int driver_initialized(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return 0;
	int (*initialized)(void) = (int (*)(void))dlsym(h, "fakecuda_initialized");
	int r = initialized ? initialized() : 0;
	dlclose(h);
	return r;
}

FC_EXPORT CUptiResult cuptiGetVersion(uint32_t *version)
{
	if (!version)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*version = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

FC_EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
	const char *name = fc_result_name(result);
	if (!str || !name)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*str = name;
	return CUPTI_SUCCESS;
}

FC_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *handle, CUpti_CallbackFunc callback, void *userdata)
{
	if (!handle)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&api_lock);
	CUptiResult r = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	if (!subscriber.taken) {
		subscriber = (struct CUpti_Subscriber_st){1, callback, userdata};
		*handle = &subscriber;
		r = CUPTI_SUCCESS;
	}
	pthread_mutex_unlock(&api_lock);
	return r;
}

FC_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle handle)
{
	pthread_mutex_lock(&api_lock);
	CUptiResult r = CUPTI_ERROR_INVALID_PARAMETER;
	if (handle == &subscriber && subscriber.taken) {
		memset(&subscriber, 0, sizeof(subscriber));
		r = CUPTI_SUCCESS;
	}
	pthread_mutex_unlock(&api_lock);
	return r;
}

FC_EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char **name)
{
	if (!name)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
		*name = cbid < CUPTI_DRIVER_TRACE_CBID_SIZE ? fc_driver_cbid_names[cbid] : NULL;
	else
		*name = domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE
		            ? fc_runtime_cbid_names[cbid] : NULL;
	return *name ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

FC_EXPORT CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType type)
{
	if (type != CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT && type != CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
		return CUPTI_ERROR_NOT_SUPPORTED;
	__atomic_store_n(&thread_id_type, (int)type, __ATOMIC_RELAXED);
	return CUPTI_SUCCESS;
}

FC_EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f)
{
	if (!f)
		return CUPTI_ERROR_INVALID_PARAMETER;
	__atomic_store_n(&timestamp_fn, f, __ATOMIC_RELEASE);
	return CUPTI_SUCCESS;
}

FC_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                     CUpti_BuffersCallbackCompleteFunc completed)
{
	if (!requested || !completed)
		return CUPTI_ERROR_INVALID_PARAMETER;
	fc_set_buffer_callbacks(requested, completed);
	return CUPTI_SUCCESS;
}

/* The flags a kind sets: one work kind, or (DRIVER) every driver cbid. */
static CUptiResult set_kind(CUpti_ActivityKind kind, int on)
{
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		__atomic_store_n(&fc_work_on[FC_KERNEL], (uint8_t)on, __ATOMIC_RELAXED);
		return CUPTI_SUCCESS;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		__atomic_store_n(&fc_work_on[FC_MEMCPY], (uint8_t)on, __ATOMIC_RELAXED);
		return CUPTI_SUCCESS;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		__atomic_store_n(&fc_work_on[FC_MEMSET], (uint8_t)on, __ATOMIC_RELAXED);
		return CUPTI_SUCCESS;
	case CUPTI_ACTIVITY_KIND_DRIVER:
		/* whether the runtime's driver calls are left out is settled before any cbid is on: a
		 * call ending in between must not be recorded by the rule of an earlier session */
		__atomic_store_n(&fc_driver_kind_late, (uint8_t)(on && driver_initialized()), __ATOMIC_SEQ_CST);
		for (unsigned i = 0; i < CUPTI_DRIVER_TRACE_CBID_SIZE; i++)
			__atomic_store_n(&fc_cbid_on[i], (uint8_t)on, __ATOMIC_SEQ_CST);
		__atomic_store_n(&fc_per_cbid, 0, __ATOMIC_SEQ_CST);
		return CUPTI_SUCCESS;
	case CUPTI_ACTIVITY_KIND_RUNTIME:
		__atomic_store_n(&fc_runtime_on, (uint8_t)on, __ATOMIC_RELAXED);
		return CUPTI_SUCCESS;
	default:
		return CUPTI_ERROR_INVALID_KIND; /* a kind the stand-in does not model */
	}
}

static int kind_modelled(CUpti_ActivityKind kind)
{
	return kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_MEMCPY ||
	       kind == CUPTI_ACTIVITY_KIND_MEMSET || kind == CUPTI_ACTIVITY_KIND_DRIVER ||
	       kind == CUPTI_ACTIVITY_KIND_RUNTIME;
}

FC_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	if (!kind_modelled(kind))
		return CUPTI_ERROR_INVALID_KIND;
	pthread_mutex_lock(&api_lock);
	CUptiResult r = attach_to_driver();
	if (r == CUPTI_SUCCESS)
		r = set_kind(kind, 1);
	pthread_mutex_unlock(&api_lock);
	return r;
}

FC_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
	pthread_mutex_lock(&api_lock);
	CUptiResult r = set_kind(kind, 0);
	pthread_mutex_unlock(&api_lock);
	return r;
}

FC_EXPORT CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable)
{
	if (cbid == CUPTI_DRIVER_TRACE_CBID_INVALID || cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&api_lock);
	CUptiResult r = enable ? attach_to_driver() : CUPTI_SUCCESS;
	if (r == CUPTI_SUCCESS) {
		if (!driver_initialized())
			__atomic_store_n(&fc_cbid_applied[cbid], (uint8_t)(enable != 0), __ATOMIC_RELAXED);
		__atomic_store_n(&fc_per_cbid, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&api_lock);
	return r;
}

/* FAKECUPTI_FLUSH_DELAY_MS=N: each flush takes N ms more, as CUPTI's can with a busy GPU (a
 * test of what the flush at a detach holds up). */
static void flush_delay(void)
{
	const char *e = getenv("FAKECUPTI_FLUSH_DELAY_MS");
	long ms = e ? strtol(e, NULL, 10) : 0;
	if (ms > 0 && ms <= 10000) {
		struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
		while (nanosleep(&d, &d) != 0)
			;
	}
}

FC_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	(void)flag;
	flush_delay();
	return fc_flush(); /* every record is complete when queued: forced or not, the same */
}

FC_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
	if (!buffer || !record)
		return CUPTI_ERROR_INVALID_PARAMETER;
	size_t off;
	if (*record) {
		size_t size = fc_record_size((*record)->kind);
		if (!size)
			return CUPTI_ERROR_INVALID_KIND;
		off = (size_t)((uint8_t *)*record - buffer) + ((size + 7) & ~(size_t)7);
	} else {
		off = (size_t)((((uintptr_t)buffer + 7) & ~(uintptr_t)7) - (uintptr_t)buffer);
	}
	if (off >= valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	CUpti_Activity *next = (CUpti_Activity *)(buffer + off);
	size_t size = valid - off >= sizeof(next->kind) ? fc_record_size(next->kind) : 0;
	if (!size || size > valid - off)
		return CUPTI_ERROR_INVALID_KIND;
	*record = next;
	return CUPTI_SUCCESS;
}

FC_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId, size_t *dropped)
{
	if (!dropped)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*dropped = context ? 0 : fc_take_dropped(); /* every buffer is global (CUDA >= 6) */
	return CUPTI_SUCCESS;
}

FC_EXPORT CUptiResult cuptiFinalize(void)
{
	pthread_mutex_lock(&api_lock);
	if (libcuda) {
		profiler_attach(NULL); /* from here on the driver calls nothing of ours */
		fc_records_close();    /* hands back what was recorded before */
		dlclose(libcuda);
		libcuda = NULL;
		profiler_attach = NULL;
	}
	for (unsigned k = 0; k < FC_WORK_KINDS; k++)
		__atomic_store_n(&fc_work_on[k], 0, __ATOMIC_RELAXED);
	set_kind(CUPTI_ACTIVITY_KIND_DRIVER, 0);
	set_kind(CUPTI_ACTIVITY_KIND_RUNTIME, 0);
	memset(fc_cbid_applied, 0, sizeof(fc_cbid_applied));
	fc_set_buffer_callbacks(NULL, NULL);
	__atomic_store_n(&timestamp_fn, NULL, __ATOMIC_RELEASE);
	__atomic_store_n(&thread_id_type, CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT, __ATOMIC_RELAXED);
	memset(&subscriber, 0, sizeof(subscriber));
	pthread_mutex_unlock(&api_lock);
	return CUPTI_SUCCESS;
}
