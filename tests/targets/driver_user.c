/* driver_user: drives the stand-in libcuda.so.1 (tests/fakecuda) the way the CUDA runtime drives
 * the real driver, from many threads, and prints what a test needs to check a trace of it:
 *
 *   checksum 0x...          of everything the driver returned (return values, out-parameters,
 *                           memory copied back): identical traced or not, whatever the thread
 *                           interleaving (a sum of per-value hashes, so order does not matter)
 *   calls N                 driver calls made by this program (nested ones not included)
 *   expect NAME COUNT       calls of each exported function a trace must show, nested included
 *
 * usage: driver_user [--agent PATH] [--agent-after | --agent-during] [--threads N] [--iters M]
 *                    [--log FILE] LIBCUDA_PATH
 *
 *   --agent PATH     dlopen the agent (constructor mode, as ctypes.CDLL would) before libcuda,
 *                    so the agent must patch libcuda when it is dlopened later
 *   --agent-after    ... after libcuda is open and set up instead (the agent must find it
 *                    already loaded); expect counts then only cover calls made after that
 *   --agent-during   ... while the worker threads are calling into libcuda (live patching):
 *                    workers half way through wait for it, making calls whose results they
 *                    check themselves (exit 3 if one is wrong); the expect counts are then
 *                    upper bounds
 *   --log FILE       write every call this program made (per thread, in order) with its return
 *                    value, and every cuLaunchKernel's 11 arguments, for the trace checker
 *
 * Entry points come from cuGetProcAddress_v2 (itself found with dlsym, as the runtime does) into
 * a table, except a few taken straight from dlsym. */
#include "fakecuda.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define REQUESTED_VERSION 12080 /* what a CUDA 12.8 runtime asks cuGetProcAddress for */

#define FUNCS(X)                                                                                   \
	X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetAttribute)     \
	X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease_v2) X(cuCtxSetCurrent)                 \
	X(cuCtxGetCurrent) X(cuCtxGetDevice_v2) X(cuDevicePrimaryCtxGetState) X(cuCtxSynchronize)      \
	X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemcpyHtoD_v2)                                            \
	X(cuMemcpyDtoH_v2) X(cuModuleLoadData) X(cuModuleGetFunction) X(cuModuleUnload)               \
	X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuStreamCreate) X(cuStreamDestroy_v2)                  \
	X(cuStreamSynchronize) X(cuGetProcAddress_v2) X(cuGetExportTable) X(cuGetErrorString)          \
	X(cuFakeConstA) X(cuFakeConstB) X(cuFakeConstC) X(cuFakeNextSerial) X(cuFakeSwitch)            \
	X(cuFakeRipCmp) X(cuFakeLoopBack) X(cuFakeLoopToStart) X(cuFakeShort) X(cuFakeAlEcho)          \
	X(cuFakeVarSum) X(cuFakeScale) X(cuFakeMulD) X(cuFakeOuter) X(cuFakeInner) X(cuFakeAlias)      \
	X(cuFakeAlias_v2) X(cuFakeCallFirst) X(cuFakeThunk)

enum fn_id {
#define X(n) F_##n,
	FUNCS(X)
#undef X
	NFUNCS
};
static const char *const fn_names[NFUNCS] = {
#define X(n) #n,
	FUNCS(X)
#undef X
};

/* The entry point table, typed from fakecuda.h's declarations. */
static struct {
#define X(n) __typeof__(n) *n;
	FUNCS(X)
#undef X
} D;

/* Taken with dlsym on the library handle instead of cuGetProcAddress_v2. */
static const enum fn_id from_dlsym[] = {F_cuGetProcAddress_v2, F_cuInit, F_cuDriverGetVersion,
                                        F_cuDeviceGetCount, F_cuFakeAlias_v2, F_cuFakeShort,
                                        F_cuFakeLoopBack};

/* ---- per-thread bookkeeping ---------------------------------------------------------------- */

struct call_rec { uint16_t fn; uint8_t has_ret; uint32_t ret; };
struct launch_rec { uint64_t arg[11]; uint32_t ret; };

struct worker {
	int idx;                  /* -1: the main thread */
	pid_t tid;
	pthread_t thread;
	uint64_t sum;
	uint64_t counts[NFUNCS];
	uint64_t ncalls;
	struct call_rec *calls;
	size_t ncall_recs, call_cap;
	struct launch_rec *launches;
	size_t nlaunches, launch_cap;
};

static __thread struct worker *me;
static int logging;
static atomic_int counting = 1;   /* 0 until the agent is loaded in --agent-after mode */
static atomic_long progress;      /* iterations done by all workers (--agent-during) */
static int wait_for_agent;        /* --agent-during: workers reaching half way wait for it */

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		perror("driver_user: realloc");
		exit(2);
	}
	return p;
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Adds a value the driver produced to the checksum, tagged with the function it came from. */
static void fold(enum fn_id fn, uint64_t value)
{
	me->sum += mix64(((uint64_t)(fn + 1) << 48) ^ mix64(value));
}

static void fold_bytes(enum fn_id fn, const void *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ull;
	fold(fn, h);
}

static uint32_t note_call(enum fn_id fn, int has_ret, uint32_t ret)
{
	struct worker *w = me;
	w->ncalls++;
	if (atomic_load_explicit(&counting, memory_order_relaxed))
		w->counts[fn]++;
	if (has_ret)
		fold(fn, ret);
	if (logging) {
		if (w->ncall_recs == w->call_cap) {
			w->call_cap = w->call_cap ? 2 * w->call_cap : 1024;
			w->calls = xrealloc(w->calls, w->call_cap * sizeof(*w->calls));
		}
		w->calls[w->ncall_recs++] = (struct call_rec){fn, (uint8_t)has_ret, ret};
	}
	return ret;
}

/* Every driver call goes through here: counted, logged, its return value folded. */
#define CALL(fn, ...) ((int)note_call(F_##fn, 1, (uint32_t)D.fn(__VA_ARGS__)))

/* ---- the program's state ---------------------------------------------------------------- */

static CUcontext ctx;
static CUfunction k_scale, k_relu;
static const struct fake_export_table *etable;
static void *echo_extra[2] = {FAKE_LAUNCH_ECHO, NULL};
static int iters = 1000;

static void launch_scale(int t, int i, CUstream s, CUdeviceptr *d, uint32_t *n)
{
	uint32_t mul = 3 + i % 5, add = (uint32_t)t;
	void *params[] = {d, n, &mul, &add};
	/* All 11 arguments distinct from each other and depending on thread and iteration, so the
	 * trace checker notices any argument lost, swapped or shifted, the 5 on the stack included. */
	unsigned gx = 1 + t, gy = 20 + i % 7, gz = 30 + i % 3, bx = 64 + t, by = 100 + i % 4,
	         bz = 110 + t % 3;
	unsigned shmem = i % 11 == 10 ? FAKE_MAX_SHARED_MEM + 1 + t /* refused: error 1 */
	                              : 1024u * (1 + i % 8) + (unsigned)t;
	void **extra = i % 4 == 3 ? echo_extra : NULL;
	int r = CALL(cuLaunchKernel, k_scale, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
	if (logging) {
		struct worker *w = me;
		if (w->nlaunches == w->launch_cap) {
			w->launch_cap = w->launch_cap ? 2 * w->launch_cap : 256;
			w->launches = xrealloc(w->launches, w->launch_cap * sizeof(*w->launches));
		}
		w->launches[w->nlaunches++] = (struct launch_rec){
			{(uintptr_t)k_scale, gx, gy, gz, bx, by, bz, shmem, (uintptr_t)s, (uintptr_t)params,
			 (uintptr_t)extra},
			(uint32_t)r};
	}
}

/* One iteration of a worker: a fixed mix of calls whose arguments depend on (t, i). */
static void iteration(int t, int i, CUstream s)
{
	CUcontext c = NULL;
	CALL(cuCtxGetCurrent, &c);
	fold(F_cuCtxGetCurrent, c == ctx);
	/* the two queries the CUDA runtime makes around every launch (the agent counts them by
	 * default) */
	CUdevice dev = -1;
	CALL(cuCtxGetDevice_v2, &dev, NULL);
	fold(F_cuCtxGetDevice_v2, (uint64_t)dev);
	unsigned pflags = 7;
	int active = -1;
	CALL(cuDevicePrimaryCtxGetState, dev, &pflags, &active);
	fold(F_cuDevicePrimaryCtxGetState, pflags * 4u + (unsigned)active);

	uint32_t n = 16 + (t * 7 + i) % 48, host[64], out[64];
	CUdeviceptr d = 0;
	CALL(cuMemAlloc_v2, &d, n * 4);
	fold(F_cuMemAlloc_v2, d);
	for (uint32_t k = 0; k < n; k++)
		host[k] = t * 1000003u + i * 7919u + k - 40u;
	CALL(cuMemcpyHtoD_v2, d, host, n * 4);
	launch_scale(t, i, s, &d, &n);
	if (i % 2 == 0) {
		CUlaunchConfig cfg = {2 + t, 3, 4, 32, 2, 1, 256u * t, s, NULL, 0};
		void *params[] = {&d, &n};
		CALL(cuLaunchKernelEx, &cfg, k_relu, params, NULL);
	}
	CALL(cuStreamSynchronize, s);
	memset(out, 0, sizeof(out));
	CALL(cuMemcpyDtoH_v2, out, d, n * 4);
	fold_bytes(F_cuMemcpyDtoH_v2, out, n * 4);
	CALL(cuMemFree_v2, d);
	if (i % 16 == 15)
		CALL(cuMemFree_v2, d); /* freed twice: error 1 */
	CALL(cuCtxSynchronize);

	CALL(cuFakeScale, (float)t + 0.25f * (float)i, 1.5 + i);
	double m = D.cuFakeMulD(t + 0.5, i + 0.125);
	note_call(F_cuFakeMulD, 0, 0); /* a double: rax means nothing, xmm0 is folded */
	uint64_t mbits;
	memcpy(&mbits, &m, sizeof(mbits));
	fold(F_cuFakeMulD, mbits);
	CALL(cuFakeOuter, i + t);
	CALL(cuFakeInner, i);
	CALL(cuFakeLoopBack, 1 + i % 10, (unsigned)t);
	CALL(cuFakeLoopToStart, 1 + i % 6, (unsigned)t);
	CALL(cuFakeShort);
	CALL(cuFakeSwitch, i % 4, t + i);
	CALL(cuFakeRipCmp, i);
	CALL(cuFakeCallFirst, i);
	CALL(cuFakeThunk, i ^ t);
	if (i % 2)
		CALL(cuFakeAlEcho, t, 1.0); /* al = 1 */
	else
		CALL(cuFakeAlEcho, t, 1.0, 2.0, 3.0); /* al = 3 */
	CALL(cuFakeVarSum, 3, i * 0.5, t * 1.0, 2.0);
	CALL(cuFakeConstA);
	CALL(cuFakeConstB);
	CALL(cuFakeConstC);
	CALL(cuFakeAlias, i);
	CALL(cuFakeAlias_v2, t);
	int count = 0;
	CALL(cuDeviceGetCount, &count);
	fold(F_cuDeviceGetCount, (uint64_t)count);
	/* internal functions: never traced, not counted */
	fold(F_cuGetExportTable, etable->mix((unsigned)(i + t)) + etable->add3(i, t, 7));
	if (i % 8 == 0) {
		const char *str = NULL;
		CALL(cuGetErrorString, FAKE_ERROR_ILLEGAL_ADDRESS, &str);
		fold_bytes(F_cuGetErrorString, str ? str : "", str ? strlen(str) : 0);
	}
}

/* --agent-during: calls made while waiting for the agent to finish loading. Their number
 * depends on timing, so they stay out of the checksum; each result is checked here instead,
 * which makes them a test of calls racing with the patching. */
static atomic_int agent_loaded;

static void filler_check(int ok, const char *what, int t, int k)
{
	if (!ok) {
		fprintf(stderr, "driver_user: wrong result from %s (thread %d, call %d) during patching\n",
		        what, t, k);
		exit(3);
	}
}

#define FILL(fn, ...) ((int)note_call(F_##fn, 0, (uint32_t)D.fn(__VA_ARGS__)))

static void filler(int t, int k)
{
	filler_check(FILL(cuFakeAlias, k) == k * 5 + 1, "cuFakeAlias", t, k);
	filler_check(FILL(cuFakeSwitch, k % 3, t) == (k % 3 == 1 ? 3 * t : k % 3 == 2 ? t ^ 0x5a5a : t + 1000),
	             "cuFakeSwitch", t, k);
	float a = (float)t + 0.25f * (float)k;
	double b = 1.5 + k;
	filler_check(FILL(cuFakeScale, a, b) == (int)(a * b), "cuFakeScale", t, k);
	double m = D.cuFakeMulD(b, a);
	note_call(F_cuFakeMulD, 0, 0);
	filler_check(m == b * a + 0.5, "cuFakeMulD", t, k);
	filler_check(FILL(cuFakeAlEcho, t, 1.0) == t + 1, "cuFakeAlEcho", t, k);
	filler_check(FILL(cuFakeVarSum, 2, 0.5, (double)k) == (int)((0.5 + k) * 1000), "cuFakeVarSum", t, k);
	filler_check(FILL(cuFakeCallFirst, k) == 0x700 + k, "cuFakeCallFirst", t, k);
	filler_check(FILL(cuFakeThunk, k) == k * 7 - 3, "cuFakeThunk", t, k);
	filler_check(FILL(cuFakeRipCmp, k) == 2 * k + 1, "cuFakeRipCmp", t, k);
	filler_check(FILL(cuFakeConstB) == 0x5a, "cuFakeConstB", t, k);
	filler_check(FILL(cuFakeOuter, k) == ((3 * k) ^ 0x1234) + 7, "cuFakeOuter", t, k);
	filler_check((unsigned)FILL(cuFakeLoopBack, 4, (unsigned)k) == (unsigned)k + 10, "cuFakeLoopBack", t, k);
	CUcontext c = NULL;
	filler_check(FILL(cuCtxGetCurrent, &c) == 0 && c == ctx, "cuCtxGetCurrent", t, k);
}

static pthread_barrier_t start_barrier;

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	me = w;
	w->tid = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&start_barrier);
	int t = w->idx;

	/* The thread's first call: with --count, a counted function reached before the thread has
	 * any state (its count thunk finds no ring and goes through the entry stub, which makes it). */
	int ndev = 0;
	CALL(cuDeviceGetCount, &ndev);
	fold(F_cuDeviceGetCount, (uint64_t)ndev);
	CALL(cuCtxSetCurrent, ctx);
	CUstream s = NULL;
	CALL(cuStreamCreate, &s, 0);
	void *pfn = (void *)1;
	int status = -1;
	CALL(cuGetProcAddress_v2, "cuNotAFunction", &pfn, REQUESTED_VERSION, 0, &status);
	fold(F_cuGetProcAddress_v2, (uint64_t)status * 2 + (pfn == NULL));

	for (int i = 0; i < iters; i++) {
		if (wait_for_agent && i == iters / 2)
			for (int k = 0; !atomic_load_explicit(&agent_loaded, memory_order_acquire); k++)
				filler(t, k);
		iteration(t, i, s);
		atomic_fetch_add_explicit(&progress, 1, memory_order_relaxed);
	}
	CALL(cuStreamDestroy_v2, s);
	return NULL;
}

/* ---- setup ---------------------------------------------------------------------------------- */

static void load_agent(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "driver_user: cannot load the agent: %s\n", dlerror());
		exit(2);
	}
	int (*active)(void) = (int (*)(void))dlsym(h, "cuhook_agent_active");
	fprintf(stderr, "driver_user: agent %s loaded, tracing %s\n", path,
	        !active ? "unknown" : active() ? "on" : "OFF");
}

static void die(const char *what, int r)
{
	fprintf(stderr, "driver_user: %s failed (%d)\n", what, r);
	exit(2);
}

/* The name the runtime asks cuGetProcAddress for: without the _v2 suffix, which the driver
 * picks from the requested version. */
static void query_name(enum fn_id fn, char *buf, size_t len)
{
	snprintf(buf, len, "%s", fn_names[fn]);
	size_t n = strlen(buf);
	if (n > 3 && strcmp(buf + n - 3, "_v2") == 0)
		buf[n - 3] = 0;
}

static void get_entry_points(void *lib)
{
	void **slots = (void **)&D;
	for (unsigned i = 0; i < sizeof(from_dlsym) / sizeof(from_dlsym[0]); i++) {
		enum fn_id fn = from_dlsym[i];
		slots[fn] = dlsym(lib, fn_names[fn]);
		if (!slots[fn]) {
			fprintf(stderr, "driver_user: dlsym %s: %s\n", fn_names[fn], dlerror());
			exit(2);
		}
	}
}

static void get_proc_addresses(void *lib)
{
	void **slots = (void **)&D;
	for (int fn = 0; fn < NFUNCS; fn++) {
		if (slots[fn])
			continue;
		char name[64];
		query_name(fn, name, sizeof(name));
		int status = -1;
		int r = CALL(cuGetProcAddress_v2, name, &slots[fn], REQUESTED_VERSION, 0, &status);
		if (r != 0 || !slots[fn] || status != FAKE_PROC_SUCCESS)
			die(name, r);
		/* pointers from both ways must agree, patched or not */
		if (slots[fn] != dlsym(lib, fn_names[fn])) {
			fprintf(stderr, "driver_user: cuGetProcAddress_v2(%s) != dlsym(%s)\n", name, fn_names[fn]);
			exit(2);
		}
	}
	/* asked with a version older than the _v2 functions: not found, status "version" */
	void *p = (void *)1;
	int status = -1;
	CALL(cuGetProcAddress_v2, "cuMemAlloc", &p, 3000, 0, &status);
	fold(F_cuGetProcAddress_v2, (uint64_t)status * 2 + (p == NULL));
}

static const char image[] = FAKE_IMAGE_MAGIC "\0fake_scale_add\0fake_relu\0";

static void setup(void *lib, CUmodule *mod)
{
	get_entry_points(lib);
	int r, v = 0;
	CALL(cuDeviceGetCount, &v); /* before cuInit: error 3 */
	r = CALL(cuDriverGetVersion, &v);
	fold(F_cuDriverGetVersion, (uint64_t)v);
	if ((r = CALL(cuInit, 0)))
		die("cuInit", r);
	get_proc_addresses(lib);

	CUdevice dev = -1;
	CALL(cuDeviceGetCount, &v);
	fold(F_cuDeviceGetCount, (uint64_t)v);
	if ((r = CALL(cuDeviceGet, &dev, 0)))
		die("cuDeviceGet", r);
	CALL(cuDeviceGet, &dev, FAKECUDA_DEVICES); /* error 101 */
	CALL(cuDeviceGetAttribute, &v, 75, dev);
	fold(F_cuDeviceGetAttribute, (uint64_t)v);
	if ((r = CALL(cuDevicePrimaryCtxRetain, &ctx, dev)))
		die("cuDevicePrimaryCtxRetain", r);
	CALL(cuCtxSetCurrent, ctx);
	if ((r = CALL(cuModuleLoadData, mod, image)))
		die("cuModuleLoadData", r);
	if ((r = CALL(cuModuleGetFunction, &k_scale, *mod, "fake_scale_add")))
		die("cuModuleGetFunction", r);
	if ((r = CALL(cuModuleGetFunction, &k_relu, *mod, "fake_relu")))
		die("cuModuleGetFunction", r);
	CUfunction none = NULL;
	CALL(cuModuleGetFunction, &none, *mod, "fake_matvec"); /* not in this image: 500 */
	const CUuuid id = FAKE_EXPORT_TABLE_UUID, bad = {{1, 2, 3}};
	const void *t = NULL;
	if ((r = CALL(cuGetExportTable, &t, &id)))
		die("cuGetExportTable", r);
	etable = t;
	CALL(cuGetExportTable, &t, &bad); /* 500 */
	for (int i = 0; i < 3; i++)
		CALL(cuFakeNextSerial); /* not thread-safe: main thread only */
}

/* ---- output --------------------------------------------------------------------------------- */

static void write_log(const char *path, struct worker *ws, int n)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(2);
	}
	fprintf(f, "# C tid function ret(hex, '-' for none): every call, in order per thread\n"
	           "# L tid ret a0..a10 (hex): every cuLaunchKernel, in order per thread\n");
	for (int k = 0; k < n; k++) {
		struct worker *w = &ws[k];
		for (size_t i = 0; i < w->ncall_recs; i++) {
			const struct call_rec *c = &w->calls[i];
			if (c->has_ret)
				fprintf(f, "C %d %s %" PRIx32 "\n", w->tid, fn_names[c->fn], c->ret);
			else
				fprintf(f, "C %d %s -\n", w->tid, fn_names[c->fn]);
		}
		for (size_t i = 0; i < w->nlaunches; i++) {
			const struct launch_rec *l = &w->launches[i];
			fprintf(f, "L %d %" PRIx32, w->tid, l->ret);
			for (int a = 0; a < 11; a++)
				fprintf(f, " %" PRIx64, l->arg[a]);
			fputc('\n', f);
		}
	}
	if (fclose(f)) {
		perror(path);
		exit(2);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: driver_user [--agent PATH] [--agent-after | --agent-during] "
	                "[--threads N] [--iters M] [--log FILE] LIBCUDA_PATH\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *agent = NULL, *libpath = NULL, *log_path = NULL, *mode = "before";
	int nthreads = 16;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--agent") && i + 1 < argc)
			agent = argv[++i];
		else if (!strcmp(a, "--agent-after"))
			mode = "after";
		else if (!strcmp(a, "--agent-during"))
			mode = "during";
		else if (!strcmp(a, "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(a, "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(a, "--log") && i + 1 < argc)
			log_path = argv[++i];
		else if (a[0] == '-' || libpath)
			usage();
		else
			libpath = a;
	}
	if (!libpath || nthreads < 1 || iters < 0)
		usage();
	if (!agent)
		mode = "none";
	wait_for_agent = !strcmp(mode, "during");
	logging = log_path != NULL;

	struct worker *ws = calloc(nthreads + 1, sizeof(*ws));
	if (!ws)
		return 2;
	struct worker *main_w = &ws[nthreads];
	main_w->idx = -1;
	main_w->tid = (pid_t)syscall(SYS_gettid);
	me = main_w;

	if (agent && !strcmp(mode, "before"))
		load_agent(agent);
	if (agent && !strcmp(mode, "after"))
		atomic_store(&counting, 0); /* what happens before the agent is not expected in a trace */
	void *lib = dlopen(libpath, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "driver_user: %s\n", dlerror());
		return 2;
	}
	CUmodule mod = NULL;
	setup(lib, &mod);
	if (agent && !strcmp(mode, "after")) {
		load_agent(agent);
		atomic_store(&counting, 1);
	}

	pthread_barrier_init(&start_barrier, NULL, (unsigned)nthreads + 1);
	for (int k = 0; k < nthreads; k++) {
		ws[k].idx = k;
		if (pthread_create(&ws[k].thread, NULL, worker_main, &ws[k])) {
			perror("driver_user: pthread_create");
			return 2;
		}
	}
	pthread_barrier_wait(&start_barrier);
	if (agent && !strcmp(mode, "during")) {
		/* patch while every worker is busy calling into the library */
		while (atomic_load(&progress) < (long)nthreads * (iters / 4)) /* <= where workers wait */
			sched_yield();
		load_agent(agent);
		atomic_store_explicit(&agent_loaded, 1, memory_order_release);
	}
	for (int k = 0; k < nthreads; k++)
		pthread_join(ws[k].thread, NULL);

	CALL(cuModuleUnload, mod);
	CALL(cuDevicePrimaryCtxRelease_v2, 0);
	CALL(cuFakeNextSerial);

	uint64_t sum = 0, ncalls = 0, counts[NFUNCS] = {0};
	for (int k = 0; k <= nthreads; k++) {
		sum += ws[k].sum;
		ncalls += ws[k].ncalls;
		for (int fn = 0; fn < NFUNCS; fn++)
			counts[fn] += ws[k].counts[fn];
	}
	counts[F_cuFakeInner] += counts[F_cuFakeOuter]; /* each outer call makes one inner call */
	printf("checksum 0x%016" PRIx64 "\n", sum);
	printf("calls %" PRIu64 "\n", ncalls);
	printf("mode %s\n", mode);
	for (int fn = 0; fn < NFUNCS; fn++)
		printf("expect %s %" PRIu64 "\n", fn_names[fn], counts[fn]);
	if (log_path)
		write_log(log_path, ws, nthreads + 1);
	return 0;
}
