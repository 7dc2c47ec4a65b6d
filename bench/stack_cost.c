/* The cost of a stacked call (agent option stacks=), native frames only, beside the same call
 * recorded without a stack, side by side in one run (bench/run.sh):
 *   recorded:  the stand-in cuCtxGetCurrent (bench/standin.S), traced, called from a chain of
 *              --frames C functions under main
 *   stacked:   the same calls in a second session with stacks=cuCtxGetCurrent
 * Each call is timed alone (fenced TSC reads, the same on both sides) and the median is given,
 * in ns per call. The stack is the same at every call, as a program's call sites repeat: the
 * cost is the walk and the lookup of an interned stack, not the first interning. Apart: the
 * first call from the chain (one sample, "first"), whose pcs the walk has not met before in this
 * thread (libunwind's per-thread cache is made by the thread's first traced call, from main),
 * and whose stack is interned. */
#include "bench_agent.h"

#include <string.h>

int cuCtxGetCurrent(void **pctx);

static double ns_per_tick;
static unsigned long long *ticks;

static int cmp(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
	return x < y ? -1 : x > y;
}

/* n calls, each timed; the median in ns. */
static __attribute__((noinline)) double timed_calls(int n)
{
	void *c;
	unsigned aux;
	for (int i = 0; i < n; i++) {
		_mm_lfence();
		unsigned long long t0 = __rdtsc();
		_mm_lfence();
		cuCtxGetCurrent(&c);
		unsigned long long t1 = __rdtscp(&aux);
		_mm_lfence();
		ticks[i] = t1 - t0;
	}
	qsort(ticks, (size_t)n, sizeof(ticks[0]), cmp);
	return ticks[n / 2] * ns_per_tick;
}

/* The chain the calls come from: depth more frames of this program under the timed loop. */
static __attribute__((noinline)) double chain(int depth, int n)
{
	double r = depth > 0 ? chain(depth - 1, n) : timed_calls(n);
	__asm__ volatile("" ::: "memory"); /* no tail call: every level keeps its frame */
	return r;
}

static int run(const struct bench_agent *ag, const char *opts, int frames, int n, double *first, double *out)
{
	if (ag->start(opts, 0) != 0)
		return -1;
	void *c;
	cuCtxGetCurrent(&c); /* the thread's first traced call creates its ring */
	*first = chain(frames, 1);
	chain(frames, n / 10); /* libunwind's caches warm */
	*out = chain(frames, n);
	ag->stop(0);
	return 0;
}

int main(int argc, char **argv)
{
	int n = 20000, frames = 8;
	const char *agent = NULL, *out = "/tmp/cuhook-bench-stacks.bin";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--agent") && i + 1 < argc)
			agent = argv[++i];
		else if (!strcmp(argv[i], "--output") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--frames") && i + 1 < argc)
			frames = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: %s --agent libcuhook.so [--output trace.bin] [-n calls] [--frames N]\n", argv[0]);
			return 2;
		}
	}
	if (!agent || n < 10 || frames < 0 || frames > 200 || !(ticks = malloc(sizeof(*ticks) * (size_t)n))) {
		fprintf(stderr, "stack_cost: --agent is needed, -n at least 10, --frames 0 to 200\n");
		return 2;
	}
	ns_per_tick = bench_ns_per_tick();
	double plain = chain(frames, n);
	struct bench_agent ag;
	if (bench_agent_load(agent, &ag) != 0)
		return 1;
	/* Both sessions write the same scratch file: force=1 replaces it (never through a link). */
	char opts[1024];
	double recorded, stacked, first_recorded, first_stacked;
	snprintf(opts, sizeof(opts), "output=%s;force=1;lib=libbench_standin.so;funcs=cuCtxGetCurrent;stacks=", out);
	if (run(&ag, opts, frames, n, &first_recorded, &recorded) != 0) {
		fprintf(stderr, "agent start failed\n");
		return 1;
	}
	snprintf(opts, sizeof(opts), "output=%s;force=1;lib=libbench_standin.so;funcs=cuCtxGetCurrent;stacks=cuCtxGetCurrent", out);
	if (run(&ag, opts, frames, n, &first_stacked, &stacked) != 0) {
		fprintf(stderr, "agent start (stacks) failed\n");
		return 1;
	}
	printf("frames %d\n", frames + 3); /* the chain, timed_calls, main, libc's start: the walk's */
	printf("plain %.1f\nrecorded %.1f\nstacked %.1f\n", plain, recorded, stacked);
	printf("first_recorded %.1f\nfirst_stacked %.1f\n", first_recorded, first_stacked);
	return 0;
}
