/* preload_wrapper: the "seeds' kind" of CUDA tracer, run beside cuhook as a peer in issue 5's
 * proof (tests/gpu/proof.sh). Not part of cuhook.
 *
 *   LD_PRELOAD=/abs/libpreload_wrapper.so PRELOAD_WRAPPER_OUT=/tmp/w.%p.json PROG ARGS
 *
 * It defines a few driver functions itself, so that the dynamic linker binds the program's
 * references to them instead of libcuda's (symbol interposition), and forwards each call to the
 * real one, found with dlsym(RTLD_NEXT). Wrapped: cuInit, cuGetProcAddress_v2, cuMemAlloc_v2,
 * cuMemcpyHtoD_v2, cuLaunchKernel, cuLaunchKernelEx (the list such shims usually start with),
 * and cuCtxGetCurrent, so that ctx_get_current_bench.c can measure its cost per call.
 *
 * Per call it does what cuhook does at the least: an atomic count, and a record (function,
 * entry and exit rdtsc, return value) in a ring of the thread (never written out).
 *
 * What it cannot see, by construction: calls that do not go through the global symbol lookup.
 * The CUDA runtime dlopens libcuda and asks cuGetProcAddress for every entry point, then calls
 * through those pointers, so a program on the runtime (PyTorch, runtime_app) is invisible to it.
 * A shim could answer cuGetProcAddress with pointers to its own wrappers, but only for functions
 * whose prototypes it carries (this one does not try: it shows what plain interposition sees).
 *
 * At exit: PRELOAD_WRAPPER_OUT ("%p": the pid; unset: stderr) gets a JSON object
 * {"function name": count} of every wrapped function, zeros included. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <x86intrin.h>

enum { F_cuInit, F_cuGetProcAddress_v2, F_cuMemAlloc_v2, F_cuMemcpyHtoD_v2, F_cuLaunchKernel,
       F_cuLaunchKernelEx, F_cuCtxGetCurrent, NFUNC };
static const char *const names[NFUNC] = {"cuInit", "cuGetProcAddress_v2", "cuMemAlloc_v2", "cuMemcpyHtoD_v2",
                                         "cuLaunchKernel", "cuLaunchKernelEx", "cuCtxGetCurrent"};

struct rec {
	uint64_t t0, t1, ret;
	uint32_t func;
};
#define RING (1u << 16) /* per thread, a power of two */

static uint64_t counts[NFUNC];
static __thread struct rec *ring;
static __thread uint32_t ring_pos;

/* The next definition after ours: libcuda's, when the program is linked to it. A program that
 * dlopens libcuda itself (RTLD_LOCAL) is not in the global scope; then ask the library. */
static void *resolve(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);
	if (!p) {
		void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
		if (!h)
			h = dlopen("libcuda.so.1", RTLD_NOW);
		p = h ? dlsym(h, name) : NULL;
	}
	if (!p) {
		fprintf(stderr, "preload_wrapper: cannot find the real %s\n", name);
		abort();
	}
	return p;
}

static inline struct rec *enter(int f)
{
	__atomic_fetch_add(&counts[f], 1, __ATOMIC_RELAXED);
	if (__builtin_expect(!ring, 0)) {
		ring = calloc(RING, sizeof(*ring));
		if (!ring)
			return NULL;
	}
	struct rec *r = &ring[ring_pos++ & (RING - 1)];
	r->func = (uint32_t)f;
	r->t0 = __rdtsc();
	return r;
}

static inline void leave(struct rec *r, CUresult ret)
{
	if (r) {
		r->t1 = __rdtsc();
		r->ret = (uint64_t)ret;
	}
}

/* Defines NAME(PARAMS) with the prototype cuda.h declares for it (the compiler checks that they
 * agree), forwarding to the real NAME. The pointer is looked up on the first call: the wrapper
 * is loaded before libcuda is. */
#define WRAP(NAME, PARAMS, ARGS)                                                                   \
	__attribute__((visibility("default"))) CUresult CUDAAPI NAME PARAMS                       \
	{                                                                                          \
		static CUresult(CUDAAPI * real) PARAMS;                                            \
		if (__builtin_expect(!real, 0))                                                    \
			real = (CUresult(CUDAAPI *) PARAMS)resolve(#NAME);                         \
		struct rec *r = enter(F_##NAME);                                                   \
		CUresult ret = real ARGS;                                                          \
		leave(r, ret);                                                                     \
		return ret;                                                                        \
	}

WRAP(cuInit, (unsigned int flags), (flags))
WRAP(cuGetProcAddress_v2,
     (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags, CUdriverProcAddressQueryResult *status),
     (symbol, pfn, cudaVersion, flags, status))
WRAP(cuMemAlloc_v2, (CUdeviceptr *dptr, size_t bytesize), (dptr, bytesize))
WRAP(cuMemcpyHtoD_v2, (CUdeviceptr dst, const void *src, size_t bytes), (dst, src, bytes))
WRAP(cuLaunchKernel,
     (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by,
      unsigned int bz, unsigned int shmem, CUstream stream, void **params, void **extra),
     (f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra))
WRAP(cuLaunchKernelEx, (const CUlaunchConfig *config, CUfunction f, void **params, void **extra),
     (config, f, params, extra))
WRAP(cuCtxGetCurrent, (CUcontext *pctx), (pctx))

__attribute__((destructor)) static void write_counts(void)
{
	const char *tmpl = getenv("PRELOAD_WRAPPER_OUT");
	char path[4096] = "stderr";
	FILE *f = stderr;
	if (tmpl && *tmpl) {
		size_t o = 0;
		for (const char *p = tmpl; *p && o + 24 < sizeof(path); p++) {
			if (p[0] == '%' && p[1] == 'p') {
				o += (size_t)snprintf(path + o, sizeof(path) - o, "%d", (int)getpid());
				p++;
			} else {
				path[o++] = *p;
			}
		}
		path[o] = 0;
		if (!(f = fopen(path, "w"))) {
			fprintf(stderr, "preload_wrapper: cannot write %s\n", path);
			return;
		}
	}
	fputc('{', f);
	for (int i = 0; i < NFUNC; i++)
		fprintf(f, "%s\n  \"%s\": %llu", i ? "," : "", names[i],
		        (unsigned long long)__atomic_load_n(&counts[i], __ATOMIC_RELAXED));
	fputs("\n}\n", f);
	if (f != stderr)
		fclose(f);
}
