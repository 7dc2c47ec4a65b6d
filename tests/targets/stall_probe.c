/* stall_probe THREADS [PERIOD_US [LIB]]: what a program feels of an attach and a detach.
 *
 * THREADS workers each run a loop that reads CLOCK_MONOTONIC every iteration and then sleeps
 * PERIOD_US (default 1000); a gap between two readings longer than PERIOD_US + 300 us is kept
 * (its two readings, up to 256 per thread). A thread held by a tracer cannot take a reading, so
 * each hold shows as a gap at least as long as the hold and at most one period longer. LIB, if
 * given, is dlopened first (the stand-in libcuda: the agent then plans its functions). Prints
 * "ready PID" once every worker runs. Then, on stdin:
 *
 *   gaps T0 T1 ... for each worker, one line "tid TID felt NS gaps N outside NS iters I from T":
 *                  the
 *                  longest gap overlapping one of the windows [T0, T1] (up to 64 of them, ns of
 *                  CLOCK_MONOTONIC; 0 if none was kept) and when it began, how many kept gaps overlap one, and the
 *                  longest kept gap overlapping none; then "end"
 *   quit           (or EOF) stop the workers, print "iterations I", exit 0 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_GAPS 256

struct gap {
	uint64_t from, to;
};

struct worker {
	pthread_t t;
	_Atomic int tid;
	_Atomic int ngaps;
	struct gap gaps[MAX_GAPS];
	_Atomic uint64_t iters;
};

static struct worker *workers;
static int nworkers;
static long period_ns = 1000000;
static atomic_int running = 1, started;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	atomic_store(&w->tid, gettid());
	atomic_fetch_add(&started, 1);
	uint64_t keep = (uint64_t)period_ns + 300000, prev = now_ns();
	struct timespec p = {0, period_ns};
	while (atomic_load_explicit(&running, memory_order_relaxed)) {
		uint64_t t = now_ns();
		int n = atomic_load_explicit(&w->ngaps, memory_order_relaxed);
		if (t - prev > keep && n < MAX_GAPS) {
			w->gaps[n] = (struct gap){prev, t};
			atomic_store_explicit(&w->ngaps, n + 1, memory_order_release);
		}
		prev = t;
		atomic_fetch_add_explicit(&w->iters, 1, memory_order_relaxed);
		nanosleep(&p, NULL);
	}
	return NULL;
}

#define MAX_WINDOWS 64

static bool overlaps(const struct gap *g, const uint64_t *win, int nwin)
{
	for (int i = 0; i + 1 < nwin; i += 2)
		if (g->to >= win[i] && g->from <= win[i + 1])
			return true;
	return false;
}

static void report(const uint64_t *win, int nwin)
{
	for (int i = 0; i < nworkers; i++) {
		struct worker *w = &workers[i];
		int n = atomic_load_explicit(&w->ngaps, memory_order_acquire), in = 0;
		uint64_t felt = 0, outside = 0, from = 0;
		for (int k = 0; k < n; k++) {
			uint64_t len = w->gaps[k].to - w->gaps[k].from;
			if (overlaps(&w->gaps[k], win, nwin)) {
				in++;
				if (len > felt) {
					felt = len;
					from = w->gaps[k].from;
				}
			} else if (len > outside) {
				outside = len;
			}
		}
		printf("tid %d felt %llu gaps %d outside %llu iters %llu from %llu\n", atomic_load(&w->tid),
		       (unsigned long long)felt, in, (unsigned long long)outside,
		       (unsigned long long)atomic_load(&w->iters), (unsigned long long)from);
	}
	printf("end\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc < 2 || (nworkers = atoi(argv[1])) < 1) {
		fprintf(stderr, "usage: stall_probe THREADS [PERIOD_US [LIB]]\n");
		return 2;
	}
	if (argc > 2)
		period_ns = atol(argv[2]) * 1000;
	if (argc > 3 && !dlopen(argv[3], RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "stall_probe: %s\n", dlerror());
		return 2;
	}
	workers = calloc((size_t)nworkers, sizeof(*workers));
	if (!workers)
		return 1;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 << 10);
	for (int i = 0; i < nworkers; i++)
		if (pthread_create(&workers[i].t, &a, work, &workers[i]) != 0) {
			fprintf(stderr, "stall_probe: cannot create thread %d\n", i);
			return 1;
		}
	while (atomic_load(&started) < nworkers)
		usleep(1000);
	printf("ready %d\n", getpid());
	fflush(stdout);
	char line[4096];
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "gaps ", 5)) {
			uint64_t win[2 * MAX_WINDOWS];
			int nwin = 0;
			char *p = line + 5, *end;
			for (unsigned long long v; nwin < 2 * MAX_WINDOWS && (v = strtoull(p, &end, 10), end != p); p = end)
				win[nwin++] = v;
			report(win, nwin);
		} else if (!strncmp(line, "quit", 4)) {
			break;
		}
	}
	atomic_store(&running, 0);
	uint64_t iters = 0;
	for (int i = 0; i < nworkers; i++) {
		pthread_join(workers[i].t, NULL);
		iters += atomic_load(&workers[i].iters);
	}
	printf("iterations %llu\n", (unsigned long long)iters);
	return 0;
}
