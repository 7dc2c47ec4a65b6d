/* Added cost per call on the real driver: a tight loop of cuCtxGetCurrent (7-8 ns untraced on
 * the H200), untraced, then traced by the agent started in-process through its API, in one
 * run. Also prints what a timestamp read costs here.
 *
 * With an LD_PRELOAD wrapper of cuCtxGetCurrent preloaded (tests/gpu/preload_wrapper.c), the
 * program's calls reach the wrapper, and a pointer from libcuda's own handle reaches the driver
 * directly. The bench then also compares the two tracers inside this one process, loops
 * interleaved: direct (plain driver) against wrapped (the wrapper) before the agent starts,
 * direct (cuhook) against wrapped (both) after. It prints that line first ("same process: ...")
 * and the usual line last, whose "untraced" is then the wrapped call. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static double loop(int n)
{
	CUcontext c;
	double best = 1e30;
	for (int rep = 0; rep < 5; rep++) {
		double t0 = now_ns();
		for (int i = 0; i < n; i++)
			cuCtxGetCurrent(&c);
		double dt = (now_ns() - t0) / n;
		if (dt < best)
			best = dt;
	}
	return best;
}

typedef CUresult (*get_current_fn)(CUcontext *);

/* Best of 5 loops through `direct` (libcuda's own entry point) and through the program's
 * cuCtxGetCurrent (the wrapper's), alternating. */
static void loop_pair(get_current_fn direct, int n, double *t_direct, double *t_wrapped)
{
	CUcontext c;
	*t_direct = *t_wrapped = 1e30;
	for (int rep = 0; rep < 5; rep++) {
		double t0 = now_ns();
		for (int i = 0; i < n; i++)
			direct(&c);
		double t1 = now_ns();
		for (int i = 0; i < n; i++)
			cuCtxGetCurrent(&c);
		double t2 = now_ns();
		if ((t1 - t0) / n < *t_direct)
			*t_direct = (t1 - t0) / n;
		if ((t2 - t1) / n < *t_wrapped)
			*t_wrapped = (t2 - t1) / n;
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s AGENT.so OUTPUT.bin [N]\n", argv[0]);
		return 2;
	}
	int n = argc > 3 ? atoi(argv[3]) : 200000;
	CUdevice dev;
	CUcontext ctx;
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) {
		fprintf(stderr, "no CUDA device\n");
		return 1;
	}
	double t_rdtsc;
	{
		volatile unsigned long long s = 0;
		double t0 = now_ns();
		for (int i = 0; i < n; i++)
			s += __rdtsc();
		t_rdtsc = (now_ns() - t0) / n;
	}
	/* A wrapper preloaded: the program's cuCtxGetCurrent is not libcuda's. */
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	get_current_fn direct = lib ? (get_current_fn)dlsym(lib, "cuCtxGetCurrent") : NULL;
	int wrapped = direct && direct != (get_current_fn)dlsym(RTLD_DEFAULT, "cuCtxGetCurrent");
	double plain = 0, wrapper = 0;
	if (wrapped)
		loop_pair(direct, n, &plain, &wrapper);
	double untraced = loop(n);
	/* Started below through the API, not by the constructor. */
	setenv("CUHOOK_DISABLE", "1", 1);
	void *a = dlopen(argv[1], RTLD_NOW);
	int (*start)(const char *, unsigned) = a ? (int (*)(const char *, unsigned))dlsym(a, "cuhook_agent_start") : NULL;
	int (*stop)(unsigned) = a ? (int (*)(unsigned))dlsym(a, "cuhook_agent_stop") : NULL;
	if (!start || !stop) {
		fprintf(stderr, "cannot load agent %s\n", argv[1]);
		return 1;
	}
	char opts[4096];
	/* The trace file is this bench's scratch: a previous run's goes (an agent creates a new file
	 * only; unlinking works with agents older than that too, for A/B runs). */
	unlink(argv[2]);
	/* A ring large enough for every call of the timed loops: the cost measured is the hook's,
	 * not the disk's. */
	snprintf(opts, sizeof(opts), "output=%s;funcs=cuCtxGetCurrent;buffer_kb=524288;flush_ms=10000", argv[2]);
	if (start(opts, 0) != 0) {
		fprintf(stderr, "agent start failed\n");
		return 1;
	}
	CUcontext c;
	cuCtxGetCurrent(&c); /* first call of the thread: creates its ring */
	double traced = loop(n);
	double cuhook = 0, both = 0;
	if (wrapped)
		loop_pair(direct, n, &cuhook, &both);
	stop(0);
	if (wrapped)
		printf("same process: plain %.2f ns/call, wrapper %.2f (added %.2f), cuhook %.2f (added %.2f), "
		       "wrapper + cuhook %.2f\n", plain, wrapper, wrapper - plain, cuhook, cuhook - plain, both);
	printf("cuCtxGetCurrent untraced %.2f ns/call, traced %.2f ns/call, added %.2f ns; "
	       "rdtsc %.2f ns; goal <= 2*rdtsc+5 = %.2f ns\n",
	       untraced, traced, traced - untraced, t_rdtsc, 2 * t_rdtsc + 5);
	return 0;
}
