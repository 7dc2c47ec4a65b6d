/* rt_rss: how much memory the agent's rings hold when many threads each make a few calls.
 *
 * The main thread makes one traced call, then THREADS workers each make CALLS calls of
 * cuFakeInner(k) (k ^ 0x1234) and wait; while they all still live, and after HOLD_MS (the
 * writer's rounds: it populates rings ahead of their producers), the main thread reads its own
 * VmRSS; then the workers end. A ring the agent populated whole up front would show here as
 * THREADS x the ring size.
 *
 * usage: rt_rss [--agent PATH] [--threads N] [--calls K] [--hold-ms MS] LIBCUDA
 * prints: "rss_before KB" (after the main thread's call, before the workers), "rss_during KB",
 * "calls N", "bad B" (wrong results: exit 3) */
#include "robust_common.h"

#include <pthread.h>
#include <time.h>

#define MAX_THREADS 64

static __typeof__(cuFakeInner) *f_inner;
static pthread_barrier_t made, leave;
static long calls_per_thread;
static long bad[MAX_THREADS];

static void *worker(void *arg)
{
	long id = (long)(intptr_t)arg;
	for (long i = 0; i < calls_per_thread; i++) {
		int k = (int)(id * 1000 + i);
		if (f_inner(k) != (k ^ 0x1234))
			bad[id]++;
	}
	pthread_barrier_wait(&made);
	pthread_barrier_wait(&leave);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rt_rss [--agent PATH] [--threads N] [--calls K] [--hold-ms MS] LIBCUDA\n");
		return 2;
	}
	const char *agent = rt_opt(argc, argv, "--agent");
	int threads = (int)rt_opt_long(argc, argv, "--threads", 8);
	calls_per_thread = rt_opt_long(argc, argv, "--calls", 4);
	long hold_ms = rt_opt_long(argc, argv, "--hold-ms", 300);
	if (threads < 1 || threads > MAX_THREADS) {
		fprintf(stderr, "rt_rss: 1..%d threads\n", MAX_THREADS);
		return 2;
	}
	void *lib = rt_load(agent, argv[argc - 1]);
	f_inner = RT_FN(lib, cuFakeInner);
	long total_bad = f_inner(-1) != (-1 ^ 0x1234);
	long before = rt_proc_status("VmRSS");
	pthread_barrier_init(&made, NULL, (unsigned)threads + 1);
	pthread_barrier_init(&leave, NULL, (unsigned)threads + 1);
	pthread_t th[MAX_THREADS];
	for (int i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) != 0) {
			perror("rt_rss: pthread_create");
			return 2;
		}
	pthread_barrier_wait(&made);
	struct timespec t = {hold_ms / 1000, (hold_ms % 1000) * 1000000L};
	nanosleep(&t, NULL);
	long during = rt_proc_status("VmRSS");
	pthread_barrier_wait(&leave);
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		total_bad += bad[i];
	}
	printf("rss_before %ld\nrss_during %ld\ncalls %ld\nbad %ld\n", before, during,
	       1 + threads * calls_per_thread, total_bad);
	return total_bad ? 3 : 0;
}
