/* Added cost per traced call, side by side in one run (bench/run.sh):
 *   untraced:  a tight loop calling the stand-in cuCtxGetCurrent (bench/standin.S)
 *   cuhook:    the same loop after the agent patched the stand-in (started through its API)
 *   (run.sh runs this program a second time under LD_PRELOAD of preload_wrapper.so)
 * Best of several repetitions, in ns per call. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

int cuCtxGetCurrent(void **pctx);

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static double loop(int n, int reps)
{
	void *c;
	double best = 1e30;
	for (int r = 0; r < reps; r++) {
		double t0 = now_ns();
		for (int i = 0; i < n; i++)
			cuCtxGetCurrent(&c);
		double dt = (now_ns() - t0) / n;
		if (dt < best)
			best = dt;
	}
	return best;
}

int main(int argc, char **argv)
{
	int n = 200000, reps = 7;
	const char *agent = NULL, *out = "/tmp/cuhook-bench.bin";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--agent") && i + 1 < argc)
			agent = argv[++i];
		else if (!strcmp(argv[i], "--output") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n = atoi(argv[++i]);
	}
	volatile unsigned long long s = 0;
	double t0 = now_ns();
	for (int i = 0; i < n; i++)
		s += __rdtsc();
	double t_rdtsc = (now_ns() - t0) / n;
	double plain = loop(n, reps);
	printf("rdtsc %.2f\n", t_rdtsc);
	printf("plain %.2f\n", plain);
	if (!agent)
		return 0;
	/* Started below through the API, not by the constructor. */
	setenv("CUHOOK_DISABLE", "1", 1);
	void *a = dlopen(agent, RTLD_NOW);
	int (*start)(const char *, unsigned) = a ? (int (*)(const char *, unsigned))dlsym(a, "cuhook_agent_start") : NULL;
	int (*stop)(unsigned) = a ? (int (*)(unsigned))dlsym(a, "cuhook_agent_stop") : NULL;
	if (!start || !stop) {
		fprintf(stderr, "cannot load the agent %s\n", agent);
		return 1;
	}
	/* Ring big enough for every timed call: the hook's cost, not the disk's, is measured. */
	char opts[1024];
	unsigned kb = 1024;
	while ((double)kb * 1024 < (double)n * reps * 160)
		kb *= 2;
	snprintf(opts, sizeof(opts), "output=%s;lib=libbench_standin.so;funcs=cuCtxGetCurrent;buffer_kb=%u;flush_ms=60000", out, kb);
	if (start(opts, 0) != 0) {
		fprintf(stderr, "agent start failed\n");
		return 1;
	}
	void *c;
	cuCtxGetCurrent(&c); /* the thread's first traced call creates its ring */
	double traced = loop(n, reps);
	stop(0);
	printf("cuhook %.2f\n", traced);
	return 0;
}
