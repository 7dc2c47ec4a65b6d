/* profiler_ranges: calls the stand-in libcuda.so.1 (tests/fakecuda) in five phases, from the main
 * thread and WORKERS other threads, with two capture ranges between them, for the capture-range
 * tests (tests/engine/check_capture.py):
 *
 *   before   cuProfilerStart (main)   range 1   cuProfilerStop (main)   between
 *   cuProfilerStart (worker 1)   range 2   cuProfilerStop (worker 2)   after
 *
 * In each phase every thread makes the phase's number of calls of cuCtxSynchronize and of
 * cuFakeOuter (which calls cuFakeInner inside it, so each is two nested recorded calls), and
 * twice as many of cuCtxGetDevice (counted by the agent's default, not recorded). The threads
 * meet at a barrier before and after each edge, so every call of a phase lies wholly before or
 * after each edge: the counts a trace must show are exact. It prints
 *
 *   threads N
 *   phase NAME CALLS      for before, range1, between, range2, after
 *   bad TEXT              a call that returned something else than it must (exit 3)
 *
 * usage: profiler_ranges [--wait | --fork] LIBCUDA_PATH
 *   --wait   print "ready", wait for a line on stdin before the phases (cuhook attach comes in
 *            between), and after them print "done" and wait for another line before exiting.
 *   --fork   one thread, and a fork inside range 1 (for cuhook run --follow):
 *              before  cuProfilerStart  range1  fork()
 *              child:  between  cuProfilerStop  after  _exit
 *              parent: (waits for the child)  range2  cuProfilerStop  after
 *            so the parent's range 1 goes on in the child until the child's own cuProfilerStop.
 *            Prints "threads 1", the phases, "pid PARENT" and "child CHILD".
 *
 * cuProfilerStart and cuProfilerStop come from cuGetProcAddress_v2, as the CUDA runtime's
 * cudaProfilerStart (torch.cuda.profiler.start) reaches them. */
#include "fakecuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORKERS 2
#define THREADS (WORKERS + 1)

enum { BEFORE, RANGE1, BETWEEN, RANGE2, AFTER, NPHASES };
static const char *const phase_names[NPHASES] = {"before", "range1", "between", "range2", "after"};
/* distinct, so that a count from the wrong phase cannot pass for the right one */
static const unsigned phase_calls[NPHASES] = {3, 5, 7, 11, 13};

static struct {
	__typeof__(cuInit) *init;
	__typeof__(cuDeviceGet) *device_get;
	__typeof__(cuDevicePrimaryCtxRetain) *retain;
	__typeof__(cuCtxSetCurrent) *set_current;
	__typeof__(cuCtxSynchronize) *synchronize;
	__typeof__(cuCtxGetDevice) *get_device;
	__typeof__(cuFakeOuter) *outer;
	__typeof__(cuProfilerStart) *profiler_start;
	__typeof__(cuProfilerStop) *profiler_stop;
} D;

static CUcontext ctx;
static pthread_barrier_t barrier;
static int bad;

static void check(int ok, const char *what)
{
	if (!ok) {
		printf("bad %s\n", what);
		__atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
	}
}

static void phase(int p)
{
	for (unsigned i = 0; i < phase_calls[p]; i++) {
		CUdevice dev = -1;
		check(D.synchronize() == FAKE_SUCCESS, "cuCtxSynchronize");
		check(D.outer((int)i) == (int)((3 * i) ^ 0x1234) + 7, "cuFakeOuter");
		check(D.get_device(&dev) == FAKE_SUCCESS && dev == 0, "cuCtxGetDevice");
		check(D.get_device(&dev) == FAKE_SUCCESS && dev == 0, "cuCtxGetDevice");
	}
}

static void edge(CUresult (*fn)(void), const char *what)
{
	pthread_barrier_wait(&barrier);
	if (fn)
		check(fn() == FAKE_SUCCESS, what);
	pthread_barrier_wait(&barrier);
}

/* Thread t (0: main) runs every phase; the edges are made by main (range 1), worker 1 (the
 * start of range 2) and worker 2 (its stop): a range may begin and end on any thread. */
static void run_phases(int t)
{
	check(D.set_current(ctx) == FAKE_SUCCESS, "cuCtxSetCurrent");
	phase(BEFORE);
	edge(t == 0 ? D.profiler_start : NULL, "cuProfilerStart");
	phase(RANGE1);
	edge(t == 0 ? D.profiler_stop : NULL, "cuProfilerStop");
	phase(BETWEEN);
	edge(t == 1 ? D.profiler_start : NULL, "cuProfilerStart");
	phase(RANGE2);
	edge(t == 2 ? D.profiler_stop : NULL, "cuProfilerStop");
	phase(AFTER);
}

static void *worker(void *arg)
{
	pthread_barrier_wait(&barrier); /* the workers exist before (an attach), and start with main */
	run_phases((int)(intptr_t)arg);
	return NULL;
}

static void wait_line(void)
{
	char line[64];
	if (!fgets(line, sizeof(line), stdin))
		exit(4);
}

static int run_fork(void)
{
	check(D.set_current(ctx) == FAKE_SUCCESS, "cuCtxSetCurrent");
	phase(BEFORE);
	check(D.profiler_start() == FAKE_SUCCESS, "cuProfilerStart");
	phase(RANGE1);
	fflush(stdout);
	pid_t child = fork();
	if (child < 0)
		return 2;
	if (child == 0) {
		phase(BETWEEN);
		check(D.profiler_stop() == FAKE_SUCCESS, "cuProfilerStop");
		phase(AFTER);
		fflush(stdout);
		_exit(bad ? 3 : 0);
	}
	int status;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		check(0, "the child");
	phase(RANGE2);
	check(D.profiler_stop() == FAKE_SUCCESS, "cuProfilerStop");
	phase(AFTER);
	printf("pid %d\nchild %d\n", (int)getpid(), (int)child);
	return bad ? 3 : 0;
}

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);
	if (!p) {
		fprintf(stderr, "profiler_ranges: %s not found\n", name);
		exit(2);
	}
	return p;
}

int main(int argc, char **argv)
{
	int wait = argc == 3 && !strcmp(argv[1], "--wait");
	int forking = argc == 3 && !strcmp(argv[1], "--fork");
	if (argc != 2 + wait + forking) {
		fprintf(stderr, "usage: profiler_ranges [--wait | --fork] LIBCUDA_PATH\n");
		return 2;
	}
	void *h = dlopen(argv[argc - 1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "profiler_ranges: %s\n", dlerror());
		return 2;
	}
	D.init = sym(h, "cuInit");
	D.device_get = sym(h, "cuDeviceGet");
	D.retain = sym(h, "cuDevicePrimaryCtxRetain");
	D.set_current = sym(h, "cuCtxSetCurrent");
	D.synchronize = sym(h, "cuCtxSynchronize");
	D.get_device = sym(h, "cuCtxGetDevice");
	D.outer = sym(h, "cuFakeOuter");
	__typeof__(cuGetProcAddress_v2) *proc = sym(h, "cuGetProcAddress_v2");
	if (proc("cuProfilerStart", (void **)&D.profiler_start, 12080, 0, NULL) != FAKE_SUCCESS ||
	    proc("cuProfilerStop", (void **)&D.profiler_stop, 12080, 0, NULL) != FAKE_SUCCESS) {
		fprintf(stderr, "profiler_ranges: cuGetProcAddress_v2 does not know cuProfilerStart/Stop\n");
		return 2;
	}
	CUdevice dev;
	if (D.init(0) != FAKE_SUCCESS || D.device_get(&dev, 0) != FAKE_SUCCESS || D.retain(&ctx, dev) != FAKE_SUCCESS) {
		fprintf(stderr, "profiler_ranges: the stand-in driver did not start\n");
		return 2;
	}
	printf("threads %d\n", forking ? 1 : THREADS);
	for (int p = 0; p < NPHASES; p++)
		printf("phase %s %u\n", phase_names[p], phase_calls[p]);
	if (forking)
		return run_fork();
	pthread_barrier_init(&barrier, NULL, THREADS);
	pthread_t th[WORKERS];
	for (int t = 0; t < WORKERS; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)(t + 1)) != 0) {
			fprintf(stderr, "profiler_ranges: pthread_create failed\n");
			return 2;
		}
	if (wait) {
		printf("ready\n");
		fflush(stdout);
		wait_line();
	}
	pthread_barrier_wait(&barrier);
	run_phases(0);
	for (int t = 0; t < WORKERS; t++)
		pthread_join(th[t], NULL);
	if (wait) {
		printf("done\n");
		fflush(stdout);
		wait_line();
	}
	return bad ? 3 : 0;
}
