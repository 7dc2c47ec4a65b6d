/* Added cost per traced call, side by side in one run (bench/run.sh):
 *   untraced:  a tight loop calling the stand-in cuCtxGetCurrent (bench/standin.S)
 *   cuhook:    the same loop after the agent patched the stand-in (started through its API)
 *   counted:   the same again in a second session that counts the function (count=) instead
 *   (run.sh runs this program a second time under LD_PRELOAD of preload_wrapper.so)
 * Best of several repetitions, in ns per call.
 *
 * --pollute KB: between two calls, touch one byte in each cache line of a KB-sized buffer, in
 * the untraced and the traced loop alike. A real program runs its own code between driver calls
 * (PyTorch's dispatcher, the interpreter), which evicts the tracer's state from the nearer
 * caches; this measures the call as such a program sees it. The time of the touching itself is
 * the same on both sides and cancels out of "added". */
#include "bench_agent.h"

#include <string.h>


#define now_ns bench_now_ns

static volatile unsigned char *pollute_buf;
static size_t pollute_bytes;

/* One byte per line, read and written: the lines come back modified, as an application's data
 * would. A rotating start spreads the evictions over every set. */
static inline void pollute(size_t i)
{
	size_t start = (i * 4096) % (pollute_bytes ? pollute_bytes : 1);
	for (size_t o = 0; o < pollute_bytes; o += 64) {
		size_t at = start + o;
		if (at >= pollute_bytes)
			at -= pollute_bytes;
		pollute_buf[at]++;
	}
}

static double ns_per_tick;

/* With --pollute, only the calls are timed (the touching would drown them): fenced TSC reads
 * around each call, the same in both loops, so their own cost cancels out of "added". */
static double polluted_loop(int n, int reps)
{
	void *c;
	double best = 1e30;
	for (int r = 0; r < reps; r++) {
		unsigned long long sum = 0;
		unsigned aux;
		for (int i = 0; i < n; i++) {
			pollute(i);
			_mm_lfence();
			unsigned long long t0 = __rdtsc();
			_mm_lfence();
			cuCtxGetCurrent(&c);
			unsigned long long t1 = __rdtscp(&aux);
			_mm_lfence();
			sum += t1 - t0;
		}
		double dt = sum * ns_per_tick / n;
		if (dt < best)
			best = dt;
	}
	return best;
}

static double loop(int n, int reps)
{
	if (pollute_bytes)
		return polluted_loop(n, reps);
	return bench_best_loop(n, reps, 0);
}

int main(int argc, char **argv)
{
	int n = 200000, reps = 7;
	unsigned flush_ms = 60000;
	const char *agent = NULL, *out = "/tmp/cuhook-bench.bin";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--agent") && i + 1 < argc)
			agent = argv[++i];
		else if (!strcmp(argv[i], "--output") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--pollute") && i + 1 < argc)
			pollute_bytes = (size_t)atoi(argv[++i]) * 1024;
		else if (!strcmp(argv[i], "--flush-ms") && i + 1 < argc)
			flush_ms = (unsigned)atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--agent libcuhook.so] [--output trace.bin] [-n calls] [--pollute KB] [--flush-ms MS]\n", argv[0]);
			return 2;
		}
	}
	if (pollute_bytes && !(pollute_buf = calloc(1, pollute_bytes))) {
		fprintf(stderr, "no memory for --pollute\n");
		return 1;
	}
	ns_per_tick = bench_ns_per_tick();
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
	struct bench_agent ag;
	if (bench_agent_load(agent, &ag) != 0)
		return 1;
	int (*start)(const char *, unsigned) = ag.start;
	int (*stop)(unsigned) = ag.stop;
	/* Ring big enough for every timed call: the hook's cost, not the disk's, is measured (unless
	 * --flush-ms asks for the writer to drain while the loop runs, as it does in a real run). */
	/* Both sessions below, and every run, write the same scratch file: force=1 replaces it
	 * (never through a link: src/format/out_file.h). */
	char opts[1024];
	unsigned kb = 1024;
	while ((double)kb * 1024 < (double)n * reps * 160)
		kb *= 2;
	snprintf(opts, sizeof(opts), "output=%s;force=1;lib=libbench_standin.so;funcs=cuCtxGetCurrent;buffer_kb=%u;flush_ms=%u", out, kb, flush_ms);
	if (start(opts, 0) != 0) {
		fprintf(stderr, "agent start failed\n");
		return 1;
	}
	void *c;
	cuCtxGetCurrent(&c); /* the thread's first traced call creates its ring */
	double traced = loop(n, reps);
	stop(0);
	printf("cuhook %.2f\n", traced);
	/* A second session that counts the function instead (count=): one increment per call. */
	snprintf(opts, sizeof(opts), "output=%s;force=1;lib=libbench_standin.so;funcs=cuCtxGetCurrent;count=cuCtxGetCurrent;flush_ms=%u", out, flush_ms);
	if (start(opts, 0) != 0) {
		fprintf(stderr, "agent start (count) failed\n");
		return 1;
	}
	cuCtxGetCurrent(&c);
	double counted = loop(n, reps);
	stop(0);
	printf("counted %.2f\n", counted);
	return 0;
}
