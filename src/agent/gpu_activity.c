/* The CUPTI session (gpu_activity.h). */
#include "gpu_activity.h"
#include "cuhook_agent.h"
#include "clock_read.h"

#include "agent_log.h"
#include "cupti_abi.h"
#include "cupti_load.h"
#include "gpu_cbids.h"
#include "gpu_clock.h"
#include "gpu_queue.h"
#include "gpu_records.h"
#include "gpu_submit.h"
#include "hook_table.h"
#include "kernel_names_hot.h"
#include "own_threads.h"
#include "record.h"
#include "thread_state.h"
#include "trace_format.h"
#include "to_writer.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define GPU_PREPARE_WAIT_MS 1000 /* below the injector's call timeout (3 s by default) */
#define GPU_STOP_WAIT_MS 2000
#define GPU_STOP_CALLS_MS 500    /* a submitting call still running at the stop (disable()) */
#define GPU_CALIBRATE_MS 10      /* ns per tick to some 10^-5 */
#define GPU_BUFFER_BYTES (4u << 20)
#define GPU_POOL_MAX 8           /* CUPTI buffers kept for reuse */
#define GPU_CHUNK (1u << 20)     /* bytes of GPU records per queued block, at most */

/* ---- CUPTI, loaded once per process --------------------------------------------------------- */

static struct cupti_lib lib;

/* Kinds of GPU work recorded; CONCURRENT_KERNEL covers the kernels of graph launches too. */
static const int kinds[] = {CUPTI_KIND_CONCURRENT_KERNEL, CUPTI_KIND_MEMCPY, CUPTI_KIND_MEMSET};
static const char *const kind_names[] = {"CONCURRENT_KERNEL", "MEMCPY", "MEMSET"};

/* ---- the session ------------------------------------------------------------------------------ */

static pthread_mutex_t gpu_lock = PTHREAD_MUTEX_INITIALIZER; /* serialises load, start, stop */
static void (*rescan)(void); /* gpu_prepare's scan of the loaded libraries */

static struct {
	/* the preparation's outcome, for the start */
	uint32_t status;        /* enum cuhook_gpu_status: STARTED when CUPTI is ready */
	uint32_t result;
	char message[512];      /* why not, for the NOTE, stderr and the start's message */
	char tried[4096];       /* the GPU_SESSION block's path: CUPTI's, or what was tried */
	char want_cupti[PATH_MAX];
	bool monotonic;         /* clock=monotonic: the trace's clock is CLOCK_MONOTONIC */
	/* the running session */
	bool on;                /* activity recording enabled */
	bool driver_fresh;      /* the start comes right after the program loaded its driver
	                           (atomic: set by gpu_start / gpu_driver_loaded, read by the start) */
	bool all_driver;        /* this session enabled every driver API's records (enable_driver_records) */
	bool runtime;           /* ... and the CUDA runtime API's records */
	uint32_t gen;           /* the running session's ticket: its blocks are marked so */
	uint32_t file_gen;      /* the ticket of the trace file being written (gpu_session_gen) */
	bool known;             /* the outcome of the current ticket's preparation is in */
	pid_t pid;
	uint64_t dropped;       /* CUPTI's drop counts this session */
	int flushing_tid;       /* the thread flushing CUPTI now: not one of CUPTI's */
	bool accepting;         /* buffers are converted and queued */
	uint64_t graph_launches; /* kn_graph_launches when the session started */
} S;

static pthread_mutex_t conv_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gpu_conv conv;

/* The timestamp callback's map (gpu_clock.h), fixed before the callback is registered. */
static struct gpu_clock ts_clock;

static uint64_t timestamp_cb(void)
{
	if (ts_clock.identity)
		return monotonic_ns();
	return gpu_clock_ns(&ts_clock, __builtin_ia32_rdtsc());
}

static const char *result_string(cupti_result r)
{
	const char *s = NULL;
	if (!lib.f.GetResultString || lib.f.GetResultString(r, &s) != CUPTI_OK || !s)
		return "unknown CUPTI result";
	return s;
}

/* ---- CUPTI's buffers ---------------------------------------------------------------------------- */

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static void *pool[GPU_POOL_MAX];
static unsigned pooled;

/* Mapped, not malloc'd: CUPTI may ask on any of its threads, and the buffers are big. */
static void buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	void *b = NULL;
	pthread_mutex_lock(&pool_lock);
	if (pooled)
		b = pool[--pooled];
	pthread_mutex_unlock(&pool_lock);
	if (!b) {
		b = mmap(NULL, GPU_BUFFER_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b == MAP_FAILED)
			b = NULL;
	}
	*buffer = b;
	*size = b ? GPU_BUFFER_BYTES : 0;
	*max_records = 0; /* as many as fit */
}

/* A session's first buffers, mapped before CUPTI asks (n of them), or every pooled one
 * unmapped (n = 0: the session is over, its buffers all handed back by the forced flush). */
static void pool_fill(unsigned n)
{
	pthread_mutex_lock(&pool_lock);
	while (pooled > n)
		munmap(pool[--pooled], GPU_BUFFER_BYTES);
	while (pooled < n) {
		void *b = mmap(NULL, GPU_BUFFER_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b == MAP_FAILED)
			break;
		pool[pooled++] = b;
	}
	pthread_mutex_unlock(&pool_lock);
}

static void buffer_give_back(void *b)
{
	pthread_mutex_lock(&pool_lock);
	if (pooled < GPU_POOL_MAX) {
		pool[pooled++] = b;
		b = NULL;
	}
	pthread_mutex_unlock(&pool_lock);
	if (b)
		munmap(b, GPU_BUFFER_BYTES);
}

/* Convert a full buffer's records and queue them for the writer, in blocks of GPU_CHUNK. */
static void convert_buffer(uint8_t *buffer, size_t valid)
{
	struct gpu_qblock *b = NULL;
	void *rec = NULL;
	uint64_t lost = 0;
	while (lib.f.ActivityGetNextRecord(buffer, valid, &rec) == CUPTI_OK) {
		for (;;) {
			if (!b && !(b = gpu_qblock_new(GPU_Q_RECORDS, S.gen, GPU_CHUNK))) {
				lost++;
				break;
			}
			size_t len = b->len;
			int n = gpu_conv_record(&conv, rec, b->data, b->cap, &len);
			if (n >= 0) {
				b->len = (uint32_t)len;
				b->nrecords += (uint32_t)n;
				break;
			}
			if (!b->len) { /* cannot fit even alone (GPU_NAME_MAX keeps this from happening) */
				lost++;
				break;
			}
			gpu_queue_push(b);
			b = NULL;
		}
	}
	if (b && b->len)
		gpu_queue_push(b);
	else if (b)
		gpu_qblock_free(b);
	if (lost)
		gpu_queue_count_lost(lost);
}

/* On one of CUPTI's threads, or on the thread that flushes it (S.flushing_tid). */
static void buffer_completed(void *ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
	(void)size;
	int saved_errno = errno;
	int tid = (int)gettid();
	/* One of CUPTI's own threads: what it calls in the driver is CUPTI's doing, not the
	 * program's, and must not be counted as the program's calls (docs/agent.md). Known by
	 * elimination: not the thread flushing CUPTI, not the main thread (which CUPTI may use at
	 * exit), not a thread inside a traced call (CUPTI hands buffers over inside cuCtxDestroy). */
	struct thread_state *ts = cuhook_tls;
	if (tid != __atomic_load_n(&S.flushing_tid, __ATOMIC_ACQUIRE) && tid != getpid() &&
	    !(ts && (ts->no_record || ts->depth)))
		thread_state_mark_internal();
	pthread_mutex_lock(&conv_lock);
	if (S.accepting && getpid() == S.pid && buffer) {
		if (valid)
			convert_buffer(buffer, valid);
		size_t dropped = 0;
		if (lib.f.ActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_OK)
			S.dropped += dropped;
	}
	pthread_mutex_unlock(&conv_lock);
	if (buffer)
		buffer_give_back(buffer);
	errno = saved_errno;
}

/* ---- loading CUPTI -------------------------------------------------------------------------- */

static void set_outcome(uint32_t status, uint32_t result, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_outcome(uint32_t status, uint32_t result, const char *fmt, ...)
{
	S.status = status;
	S.result = result;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(S.message, sizeof(S.message), fmt, ap);
	va_end(ap);
}

static void find_cupti(void)
{
	uint32_t status;
	char msg[sizeof(S.message)];
	if (cupti_load(S.want_cupti, &lib, &status, msg, sizeof(msg), S.tried, sizeof(S.tried)) != 0)
		set_outcome(status, 0, "%s", msg);
}

static void probe_cb(void *userdata, int domain, uint32_t cbid, const void *cbdata)
{
	(void)userdata, (void)domain, (void)cbid, (void)cbdata;
}

/* Another CUPTI user injected into the process (Nsight Systems, a CUDA_INJECTION64_PATH tool):
 * whatever CUPTI is loaded is that tool's. */
static const char *injected_tool(void)
{
	const char *inj = getenv("CUDA_INJECTION64_PATH");
	return inj && inj[0] ? inj : NULL;
}

/* Is CUPTI free for cuhook? A subscriber it refuses to add (another one is there: a profiler,
 * torch.profiler) says no; one it accepts is given up at once. */
static cupti_result subscribe_probe(void)
{
	cupti_subscriber sub;
	cupti_result r = lib.f.Subscribe(&sub, probe_cb, NULL);
	if (r == CUPTI_OK)
		lib.f.Unsubscribe(sub);
	return r;
}

/* Is CUPTI free for cuhook now? Else the outcome says why not. final: at the start; at a
 * preparation only another user's presence counts (CUPTI may answer otherwise before the
 * program has loaded its driver). */
static bool cupti_free(bool final)
{
	cupti_result r = subscribe_probe();
	if (r == CUPTI_MULTIPLE_SUBSCRIBERS)
		set_outcome(CUHOOK_GPU_OTHER_USER, (uint32_t)r, "GPU: another CUPTI user owns this process "
		            "(a profiler: cuptiSubscribe says %s)", result_string(r));
	else if (r != CUPTI_OK && final)
		set_outcome(CUHOOK_GPU_FAILED, (uint32_t)r, "GPU: CUPTI refused: cuptiSubscribe: %s", result_string(r));
	return r == CUPTI_OK || (r != CUPTI_MULTIPLE_SUBSCRIBERS && !final);
}

static void load_step(void)
{
	set_outcome(CUHOOK_GPU_STARTED, 0, "%s", "");
	S.tried[0] = 0;
	const char *inj = injected_tool();
	if (inj) {
		set_outcome(CUHOOK_GPU_OTHER_USER, 0, "GPU: another CUPTI user owns this process "
		            "(CUDA_INJECTION64_PATH=%.200s)", inj);
		return;
	}
	if (!lib.handle) {
		find_cupti();
	} else if (S.want_cupti[0]) {
		/* one CUPTI per process: a second would fight the first over the driver */
		char a[PATH_MAX], b[PATH_MAX];
		if (!realpath(S.want_cupti, a) || !realpath(lib.path, b) || strcmp(a, b) != 0)
			agent_log(1, "GPU: CUPTI %s is loaded in this process already (an earlier session); %s is "
			          "not loaded beside it", lib.path, S.want_cupti);
	}
	if (!lib.handle)
		return;
	snprintf(S.tried, sizeof(S.tried), "%s", lib.path);
	cupti_free(false);
}

/* ---- start and stop ------------------------------------------------------------------------- */

/* tsc: when (on the trace's clock); 0: now */
static void push_session(uint32_t status, uint32_t result, const char *path, uint64_t tsc)
{
	size_t plen = strlen(path);
	struct gpu_qblock *b = gpu_qblock_new(GPU_Q_SESSION, S.gen, sizeof(struct cuhook_gpu_session_block) + plen);
	if (!b)
		return;
	struct cuhook_gpu_session_block *s = (struct cuhook_gpu_session_block *)b->data;
	s->status = status;
	s->cupti_version = lib.handle ? lib.version : 0;
	s->result = result;
	s->path_len = (uint32_t)plen;
	s->tsc = tsc ? tsc : trace_clock_now();
	s->dropped = status == CUHOOK_GPU_STOPPED ? S.dropped : 0;
	memcpy(s + 1, path, plen);
	b->len = (uint32_t)(sizeof(*s) + plen);
	gpu_queue_push(b);
}

/* Disable what a start enabled (kinds[0, nkinds), the driver records of submit[0, ncbids), or
 * every driver API's records when S.all_driver): the kinds first, as the start enables them
 * last, so that no work is recorded without the driver record of its call (a call in between
 * has its driver record and no work: harmless). */
static bool submitting_hook(uint32_t id)
{
	if (id >= patch_count || !patch_sites[id].name)
		return false;
	return cuhook_driver_submits(patch_sites[id].name);
}

static void disable(unsigned nkinds, unsigned ncbids)
{
	for (unsigned i = 0; i < nkinds; i++)
		lib.f.ActivityDisable(kinds[i]);
	/* A call already submitting when the kinds went off may still record its work; its own
	 * driver record comes at its end: keep those on until such calls are over (while the
	 * program's threads run; a stopped one is waited for GPU_STOP_CALLS_MS at most, and its
	 * work is then unlinked, which the report counts). */
	if (nkinds && S.on)
		thread_calls_wait_left(submitting_hook, GPU_STOP_CALLS_MS);
	if (S.all_driver) {
		if (S.runtime)
			lib.f.ActivityDisable(CUPTI_KIND_RUNTIME);
		lib.f.ActivityDisable(CUPTI_KIND_DRIVER);
		return;
	}
	for (unsigned i = 0; i < ncbids; i++)
		lib.f.ActivityEnableDriverApi(gpu_cbid(i), 0);
}

/* The driver records of the submitting functions alone (cuptiActivityEnableDriverApi), which
 * CUPTI 13.0 honours only before the driver is initialised: measured on an H100 (docs/agent.md,
 * "The GPU side"), the same calls made after cuInit answer CUPTI_SUCCESS and record nothing.
 * So a session that starts before the program ran (cuhook run at the entry point, constructor
 * mode) or when it has just loaded its driver (the dlopen watch, before it can call cuInit)
 * asks for those alone. Any other start (an attach) enables every driver API's records and
 * keeps the submitting ones when converting, at CUPTI's cost on every driver call while the
 * session lasts; CUPTI 13.0.1 then records only the calls made through the driver's exported
 * entry points (a program calling the driver itself, or through cuGetProcAddress), not those
 * the CUDA runtime makes through its internal ones. For those the session also enables the
 * runtime API's records: the work of a runtime call carries the runtime record's correlation id
 * (measured on an H200, docs/validation.md), and the reader links the work to the submitting
 * driver call that cuhook traced inside that record (report/gpu_link.c). Without them (CUPTI
 * refused the kind) that work is recorded, unlinked. */
static cupti_result enable_driver_records(unsigned *nc)
{
	cupti_result r = CUPTI_OK;
	gpu_cbids_learn(&lib.f);
	if (S.all_driver) {
		pthread_mutex_lock(&conv_lock);
		conv.keep_cbid = gpu_cbids_bitmap(&conv.keep_ncbids);
		conv.keep_runtime = gpu_runtime_cbids_bitmap(&conv.keep_nruntime);
		pthread_mutex_unlock(&conv_lock);
		if ((r = lib.f.ActivityEnable(CUPTI_KIND_DRIVER)) != CUPTI_OK)
			return r;
		S.runtime = lib.f.ActivityEnable(CUPTI_KIND_RUNTIME) == CUPTI_OK;
		return CUPTI_OK;
	}
	for (; *nc < gpu_cbids_count(); ++*nc)
		if ((r = lib.f.ActivityEnableDriverApi(gpu_cbid(*nc), 1)) != CUPTI_OK)
			return r;
	return CUPTI_OK;
}

/* CUPTI is ours alone: no other tool came meanwhile (one that did keeps it: never finalized). */
static bool sole_user(void)
{
	return !injected_tool() && subscribe_probe() == CUPTI_OK;
}

static void at_exit(void)
{
	gpu_stop();
}

static void refuse(const char *what, cupti_result r, unsigned nkinds, unsigned ncbids)
{
	disable(nkinds, ncbids);
	__atomic_store_n(&S.accepting, false, __ATOMIC_RELEASE);
	set_outcome(CUHOOK_GPU_FAILED, (uint32_t)r, "GPU: CUPTI refused: %s: %s", what, result_string(r));
	pool_fill(0); /* CUPTI stays loaded: finalizing now could break the program's graphs (stop_step) */
}

/* Begin recording session t, or say why not. */
static void start_step(uint32_t t)
{
	S.gen = t;
	S.pid = getpid();
	if (S.status == CUHOOK_GPU_STARTED && !lib.handle)
		set_outcome(CUHOOK_GPU_NO_CUPTI, 0, "GPU: CUPTI was not found in time");
	if (S.status == CUHOOK_GPU_STARTED && cupti_free(true)) {
		struct gpu_clock clock;
		cupti_result r;
		unsigned nk = 0, nc = 0;
		if (gpu_clock_calibrate(&clock, S.monotonic, GPU_CALIBRATE_MS) != 0) {
			set_outcome(CUHOOK_GPU_FAILED, 0, "GPU: the time stamp counter does not advance");
			goto out;
		}
		ts_clock = clock;
		pool_fill(2);
		pthread_mutex_lock(&conv_lock);
		gpu_conv_reset(&conv, &clock);
		S.dropped = 0;
		__atomic_store_n(&S.accepting, true, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&conv_lock);
		if ((r = lib.f.ActivityRegisterCallbacks(buffer_requested, buffer_completed)) != CUPTI_OK) {
			refuse("cuptiActivityRegisterCallbacks", r, 0, 0);
			goto out;
		}
		if ((r = lib.f.SetThreadIdType(CUPTI_THREAD_ID_SYSTEM)) != CUPTI_OK) {
			refuse("cuptiSetThreadIdType(SYSTEM)", r, 0, 0);
			goto out;
		}
		if ((r = lib.f.ActivityRegisterTimestampCallback(timestamp_cb)) != CUPTI_OK) {
			refuse("cuptiActivityRegisterTimestampCallback", r, 0, 0);
			goto out;
		}
		/* The driver records before the work's kinds: no work is recorded without the record
		 * of the call that submitted it (its link) while the session is being started. */
		S.all_driver = !__atomic_load_n(&S.driver_fresh, __ATOMIC_ACQUIRE);
		S.runtime = false;
		if ((r = enable_driver_records(&nc)) != CUPTI_OK) {
			char what[96];
			if (S.all_driver)
				snprintf(what, sizeof(what), "cuptiActivityEnable(DRIVER)");
			else
				snprintf(what, sizeof(what), "cuptiActivityEnableDriverApi(%s)", gpu_cbid_name(nc));
			refuse(what, r, 0, nc);
			goto out;
		}
		for (; nk < sizeof(kinds) / sizeof(kinds[0]); nk++) {
			if ((r = lib.f.ActivityEnable(kinds[nk])) != CUPTI_OK) {
				char what[64];
				snprintf(what, sizeof(what), "cuptiActivityEnable(%s)", kind_names[nk]);
				refuse(what, r, nk, nc);
				goto out;
			}
		}
		S.on = true;
		S.graph_launches = __atomic_load_n(&kn_graph_launches, __ATOMIC_RELAXED);
	}
out:
	push_session(S.status, S.result, S.tried, 0); /* STARTED: after the enabling */
	if (S.on) {
		static bool exit_hooked;
		/* After CUPTI's own start: an exit runs this before CUPTI's handlers and
		 * destructors, while it can still flush. */
		if (!exit_hooked)
			exit_hooked = atexit(at_exit) == 0;
		agent_log(1, "GPU: recording the GPU's work with CUPTI %u (%s): kernels, copies, memsets, "
		          "and the driver records of %u submitting functions%s",
		          lib.version, lib.path, gpu_cbids_count(),
		          !S.all_driver ? ""
		          : S.runtime ? " (kept from every driver API's records: the driver was initialised), and the CUDA "
		                        "runtime's submitting calls"
		                      : " (kept from every driver API's records: the driver was initialised); CUPTI refused the "
		                        "runtime's records: work the CUDA runtime submits stays unlinked");
	} else {
		char line[sizeof(S.message) + 64];
		snprintf(line, sizeof(line), "%s; the GPU's work is not recorded, API tracing goes on", S.message);
		agent_log(2, "%s", line);
	}
}

CUHOOK_API volatile uint64_t cuhook_agent_gpu_stop_ns[CUHOOK_GPU_STOP_STEPS];

static void gpu_stop_figures_clear(void)
{
	for (int i = 0; i < CUHOOK_GPU_STOP_STEPS; i++)
		cuhook_agent_gpu_stop_ns[i] = 0;
}


static void stop_step(void)
{
	if (!S.on)
		return;
	gpu_stop_figures_clear();
	uint64_t t = monotonic_ns();
	__atomic_store_n(&S.flushing_tid, (int)gettid(), __ATOMIC_RELEASE);
	/* Flushed again once disabled: what was under way at the first flush comes too. */
	lib.f.ActivityFlushAll(CUPTI_FLUSH_FORCED);
	monotonic_step(&cuhook_agent_gpu_stop_ns[CUHOOK_GPU_STOP_FLUSH], &t);
	uint64_t stopped = trace_clock_now(); /* before the disabling: a call that returned before is in */
	disable(sizeof(kinds) / sizeof(kinds[0]), gpu_cbids_count());
	monotonic_step(&cuhook_agent_gpu_stop_ns[CUHOOK_GPU_STOP_DISABLE], &t);
	lib.f.ActivityFlushAll(CUPTI_FLUSH_FORCED);
	monotonic_step(&cuhook_agent_gpu_stop_ns[CUHOOK_GPU_STOP_FLUSH2], &t);
	__atomic_store_n(&S.flushing_tid, 0, __ATOMIC_RELEASE);
	pthread_mutex_lock(&conv_lock);
	__atomic_store_n(&S.accepting, false, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&conv_lock);
	/* cuptiFinalize takes CUPTI out of the driver (and the cost it adds to every launch), but
	 * not after CUDA graphs were launched while it recorded: on an H200 (driver 580) a JAX
	 * program then failed its next graph launch (CUDA_ERROR_LAUNCH_FAILED) right after
	 * cuptiFinalize, in 4 of 4 attaches; with the kinds disabled and CUPTI left loaded it ran
	 * on (docs/validation.md). */
	bool graphs = __atomic_load_n(&kn_graph_launches, __ATOMIC_RELAXED) != S.graph_launches;
	bool sole = sole_user();
	bool finalized = sole && !graphs && lib.f.Finalize() == CUPTI_OK;
	if (sole && !graphs)
		monotonic_step(&cuhook_agent_gpu_stop_ns[CUHOOK_GPU_STOP_FINALIZE], &t);
	pool_fill(0); /* the program keeps none of the session's memory */
	S.on = false;
	push_session(CUHOOK_GPU_STOPPED, 0, "", stopped);
	agent_log(1, "GPU: recording stopped; CUPTI %s", finalized ? "finalized"
	          : !sole ? "left to its other user"
	                  : "left loaded with nothing enabled, not finalized: CUDA graphs were launched while it "
	                    "recorded, and finalizing then breaks their next launch");
}

/* ---- the GPU thread ---------------------------------------------------------------------------- */

/* What is asked of the GPU thread, and what it has done: (session ticket << 2) | WANT_*. A
 * request is one atomic store, so that even a caller whose process is stopped around it (a
 * start, an abandon) can make one. The thread brings the session to the latest request: a
 * preparation loads and checks, a start also starts (after stopping an older session), a stop
 * stops. */
enum { WANT_LOADED = 1, WANT_ON = 2, WANT_OFF = 3 };
static uint32_t want, have;
CUHOOK_API volatile uint32_t cuhook_agent_gpu_done; /* `have`, for an injector reading memory */
static uint32_t ticket;       /* the current session's: the injector's calls come one at a time */
static bool thread_made;
static int thread_tid;

static void *gpu_thread(void *unused)
{
	(void)unused;
	own_thread_enter();
	thread_state_mark_internal();
	__atomic_store_n(&thread_tid, (int)gettid(), __ATOMIC_RELEASE);
	uint32_t loaded_for = 0, started_for = 0;
	for (;;) {
		uint32_t w = __atomic_load_n(&want, __ATOMIC_ACQUIRE);
		if (w == __atomic_load_n(&have, __ATOMIC_ACQUIRE)) {
			syscall(SYS_futex, &want, FUTEX_WAIT_PRIVATE, w, NULL, NULL, 0);
			continue;
		}
		uint32_t t = w >> 2, what = w & 3;
		pthread_mutex_lock(&gpu_lock);
		if (S.on && (what == WANT_OFF || t != S.gen))
			stop_step();
		if (what != WANT_OFF && loaded_for != t) {
			load_step();
			loaded_for = t;
			__atomic_store_n(&S.known, true, __ATOMIC_RELEASE);
		}
		if (what == WANT_ON && started_for != t) {
			start_step(t);
			started_for = t;
		}
		pthread_mutex_unlock(&gpu_lock);
		/* CUPTI may have loaded a libcuda while starting, which the dlopen watch does not see
		 * on an agent thread. */
		void (*scan)(void) = __atomic_load_n(&rescan, __ATOMIC_ACQUIRE);
		if (what == WANT_ON && scan)
			scan();
		__atomic_store_n(&have, w, __ATOMIC_RELEASE);
		__atomic_store_n(&cuhook_agent_gpu_done, w, __ATOMIC_RELEASE);
		syscall(SYS_futex, &have, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	}
	return NULL;
}

static bool make_thread(void)
{
	pthread_t t;
	if (!thread_made && own_thread_create(&t, gpu_thread, NULL, "cuhook-gpu") == 0)
		thread_made = true;
	return thread_made;
}

static void ask(uint32_t t, uint32_t what)
{
	__atomic_store_n(&want, t << 2 | what, __ATOMIC_RELEASE);
	syscall(SYS_futex, &want, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Wait at most ms for the GPU thread to have done request r (or a later session's). */
static bool wait_done(uint32_t r, int ms)
{
	uint64_t deadline = monotonic_ns() + (uint64_t)ms * 1000000u;
	for (;;) {
		uint32_t h = __atomic_load_n(&have, __ATOMIC_ACQUIRE);
		if (h == r || h >> 2 > r >> 2)
			return true;
		uint64_t now = monotonic_ns();
		if (now >= deadline)
			return false;
		uint64_t left = deadline - now;
		struct timespec d = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
		syscall(SYS_futex, &have, FUTEX_WAIT_PRIVATE, h, &d, NULL, 0);
	}
}

/* ---- the agent's side ------------------------------------------------------------------------ */

/* A new session's ticket, with what its preparation reads (the GPU thread reads them once it
 * sees the request, after the store that makes it): a preparation's, or a names window's. */
static uint32_t new_ticket(const struct cuhook_config *c)
{
	snprintf(S.want_cupti, sizeof(S.want_cupti), "%s", c->cupti);
	S.monotonic = c->monotonic;
	__atomic_store_n(&S.known, false, __ATOMIC_RELEASE);
	uint32_t t = __atomic_add_fetch(&ticket, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&S.file_gen, t, __ATOMIC_RELEASE);
	return t;
}

void gpu_prepare(const struct cuhook_config *c, enum gpu_how how, void (*scan_libraries)(void))
{
	__atomic_store_n(&rescan, scan_libraries, __ATOMIC_RELEASE);
	new_ticket(c);
	if (how != GPU_HERE && make_thread()) {
		ask(ticket, WANT_LOADED);
		if (how == GPU_BESIDE_WAIT)
			wait_done(ticket << 2 | WANT_LOADED, GPU_PREPARE_WAIT_MS);
		return;
	}
	pthread_mutex_lock(&gpu_lock);
	load_step();
	__atomic_store_n(&S.known, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&gpu_lock);
}

/* A start that waits for the program to load its driver (gpu_driver_loaded): the ticket. */
static uint32_t pending;

void gpu_start(enum gpu_how how, bool driver_loaded)
{
	/* CUPTI records the work of a driver that is there: until the program loads it, the start
	 * waits (what keeps CUPTI out is said at once) */
	bool known_bad = __atomic_load_n(&S.known, __ATOMIC_ACQUIRE) && S.status != CUHOOK_GPU_STARTED;
	/* GPU_HERE: constructor mode or cuhook run at the entry point, before the program ran: its
	 * driver is not initialised yet, even if loading CUPTI loaded it */
	__atomic_store_n(&S.driver_fresh, how == GPU_HERE, __ATOMIC_RELEASE);
	if (!driver_loaded && !known_bad) {
		__atomic_store_n(&pending, ticket, __ATOMIC_RELEASE);
		agent_log(0, "GPU: recording starts when the program loads its CUDA driver");
		return;
	}
	if (how != GPU_HERE && thread_made) {
		ask(ticket, WANT_ON); /* the threads may be stopped: no wait */
		return;
	}
	pthread_mutex_lock(&gpu_lock);
	start_step(ticket);
	pthread_mutex_unlock(&gpu_lock);
}

void gpu_driver_loaded(void)
{
	uint32_t t = __atomic_exchange_n(&pending, 0, __ATOMIC_ACQ_REL);
	if (!t || t != ticket)
		return;
	__atomic_store_n(&S.driver_fresh, true, __ATOMIC_RELEASE); /* not initialised yet */
	/* On the thread that loaded it, right after its dlopen returned (it holds no lock of the
	 * loader's or the driver's), before the program can call the driver: nothing is missed. */
	if (thread_made && (int)gettid() != __atomic_load_n(&thread_tid, __ATOMIC_ACQUIRE)) {
		ask(t, WANT_ON);
		wait_done(t << 2 | WANT_ON, GPU_STOP_WAIT_MS);
		return;
	}
	pthread_mutex_lock(&gpu_lock);
	start_step(t);
	pthread_mutex_unlock(&gpu_lock);
}

/* ---- the names window (kernel_names.h) -------------------------------------------------------- */

/* The trace's session is ending (gpu_stop, gpu_abandon): no window opens from now on. A window
 * being opened meanwhile sees it after its request and takes the request back, so the last
 * request the GPU thread gets is always a stop. */
static bool windows_closed;
static bool window_on;           /* the names thread's (under its lock) */

void gpu_window_allow(void)
{
	window_on = false; /* the last session's stop closed it */
	__atomic_store_n(&windows_closed, false, __ATOMIC_SEQ_CST);
}

bool gpu_window_open(const struct cuhook_config *c)
{
	if (window_on)
		return true;
	if (__atomic_load_n(&windows_closed, __ATOMIC_SEQ_CST) || !make_thread())
		return false;
	/* the driver is initialised: CUPTI keeps its driver records from every API's */
	__atomic_store_n(&S.driver_fresh, false, __ATOMIC_RELEASE);
	uint32_t t = new_ticket(c);
	ask(t, WANT_ON); /* the GPU thread loads CUPTI for the new ticket, then starts */
	window_on = true;
	if (__atomic_load_n(&windows_closed, __ATOMIC_SEQ_CST)) {
		gpu_window_close();
		return false;
	}
	wait_done(t << 2 | WANT_ON, GPU_STOP_WAIT_MS);
	return __atomic_load_n(&S.on, __ATOMIC_ACQUIRE);
}

void gpu_window_close(void)
{
	if (!window_on)
		return;
	window_on = false;
	uint32_t t = __atomic_load_n(&ticket, __ATOMIC_SEQ_CST);
	ask(t, WANT_OFF);
	wait_done(t << 2 | WANT_OFF, GPU_STOP_WAIT_MS);
}

/* What every end does first: no window opens any more, a start still waiting for a driver is
 * dropped, and the last stop's figures go (an end with no session running leaves them 0, not
 * an earlier session's). */
static void stop_begin(void)
{
	gpu_stop_figures_clear();
	__atomic_store_n(&windows_closed, true, __ATOMIC_SEQ_CST);
	if (__atomic_exchange_n(&pending, 0, __ATOMIC_ACQ_REL))
		agent_log(1, "GPU: no CUDA driver was loaded while tracing: no GPU work to record");
}

uint32_t gpu_stop_begin(void)
{
	stop_begin();
	if (!thread_made || (int)gettid() == __atomic_load_n(&thread_tid, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&gpu_lock);
		stop_step();
		pthread_mutex_unlock(&gpu_lock);
		return 0;
	}
	uint32_t r = ticket << 2 | WANT_OFF;
	if (__atomic_load_n(&have, __ATOMIC_ACQUIRE) == r)
		return 0;
	ask(ticket, WANT_OFF);
	return r;
}

void gpu_stop(void)
{
	stop_begin();
	if (thread_made && (int)gettid() != __atomic_load_n(&thread_tid, __ATOMIC_ACQUIRE)) {
		uint32_t r = ticket << 2 | WANT_OFF;
		if (__atomic_load_n(&have, __ATOMIC_ACQUIRE) != r)
			ask(ticket, WANT_OFF);
		if (!wait_done(r, GPU_STOP_WAIT_MS))
			agent_log(1, "GPU: CUPTI did not stop within %d ms; GPU records after this are not in "
			          "the trace", GPU_STOP_WAIT_MS);
		return;
	}
	pthread_mutex_lock(&gpu_lock);
	stop_step();
	pthread_mutex_unlock(&gpu_lock);
}

void gpu_abandon(void)
{
	__atomic_store_n(&windows_closed, true, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&S.accepting, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&S.accepting, false, __ATOMIC_RELEASE);
	/* noted without waiting for the notes' lock: a stopped thread may hold it */
	writer_note(1, "GPU: the trace was closed with the program's threads stopped, before CUPTI was "
	               "flushed (a stop without its preparation: cuhook attach --stop without --gpu?): "
	               "GPU records not yet delivered are not in the trace; the agent disables CUPTI "
	               "once the threads run",
	            false);
	if (thread_made)
		ask(ticket, WANT_OFF);
}

void gpu_after_fork_child(void)
{
	/* Not the parent's session, nor its thread: nothing of it exists here, and what the
	 * parent had queued for its writer is the parent's file's. */
	S.on = false;
	S.accepting = false;
	S.file_gen = 0;
	for (struct gpu_qblock *b = gpu_queue_take(), *next; b; b = next) {
		next = b->next;
		gpu_qblock_free(b);
	}
	gpu_queue_lost_take();
	thread_made = false;
	thread_tid = 0;
	window_on = false;
	want = have = 0;
	cuhook_agent_gpu_done = 0;
	pthread_mutex_init(&gpu_lock, NULL);
	pthread_mutex_init(&conv_lock, NULL);
	pthread_mutex_init(&pool_lock, NULL);
}

const char *gpu_problem(void)
{
	if (!__atomic_load_n(&S.known, __ATOMIC_ACQUIRE) || S.status == CUHOOK_GPU_STARTED)
		return "";
	return S.message;
}

uint32_t gpu_session_gen(void)
{
	return __atomic_load_n(&S.file_gen, __ATOMIC_ACQUIRE);
}
