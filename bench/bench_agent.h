/* What the benchmarks share: the TSC's rate, the timed loop, and the agent started through its
 * API. */
#ifndef CUHOOK_BENCH_AGENT_H
#define CUHOOK_BENCH_AGENT_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

static double bench_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

/* Nanoseconds per TSC tick, measured over 20 ms. */
static double bench_ns_per_tick(void)
{
	double c0 = bench_now_ns();
	unsigned long long k0 = __rdtsc();
	while (bench_now_ns() - c0 < 20e6)
		;
	return (bench_now_ns() - c0) / (double)(__rdtsc() - k0);
}

int cuCtxGetCurrent(void **pctx); /* the stand-in (bench/standin.S) */

/* Best of `reps` tight loops of n calls of cuCtxGetCurrent, in ns per call; with pause_ms, a
 * pause before each loop (a writer drains the ring meanwhile). */
static inline double bench_best_loop(int n, int reps, unsigned pause_ms)
{
	void *c;
	double best = 1e30;
	for (int r = 0; r < reps; r++) {
		if (pause_ms)
			usleep(pause_ms * 1000);
		double t0 = bench_now_ns();
		for (int i = 0; i < n; i++)
			cuCtxGetCurrent(&c);
		double dt = (bench_now_ns() - t0) / n;
		if (dt < best)
			best = dt;
	}
	return best;
}

struct bench_agent {
	int (*start)(const char *, unsigned);
	int (*stop)(unsigned);
};

/* Load the agent, to be started through its API (not by its constructor). 0, or -1 said. */
static int bench_agent_load(const char *path, struct bench_agent *ag)
{
	setenv("CUHOOK_DISABLE", "1", 1);
	void *a = dlopen(path, RTLD_NOW);
	ag->start = a ? (int (*)(const char *, unsigned))dlsym(a, "cuhook_agent_start") : NULL;
	ag->stop = a ? (int (*)(unsigned))dlsym(a, "cuhook_agent_stop") : NULL;
	if (!ag->start || !ag->stop) {
		fprintf(stderr, "cannot load the agent %s\n", path);
		return -1;
	}
	return 0;
}

#endif
