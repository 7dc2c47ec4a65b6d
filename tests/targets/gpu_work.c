/* gpu_work: GPU work with known numbers on the stand-in libcuda (tests/targets/gpu_workload.h
 * lists one iteration), for tests of cuhook's GPU side (--gpu) with the stand-in libcupti.
 *
 * usage: gpu_work [--threads N] [--iters M | --loop [--seconds S]] [--pause-us U]
 *                 [--subscribe LIBCUPTI] [--runtime] LIBCUDA_PATH
 *
 *   --threads N      worker threads (default 2), each on its own stream
 *   --iters M        iterations per thread (default 10)
 *   --loop           iterate until SIGTERM or SIGINT (or --seconds S have passed), then finish
 *                    the current iteration, clean up and print the totals; SIGUSR1 prints
 *                    "progress N" (iterations done so far, all threads) and "profiler P" (1
 *                    while a profiler, the stand-in libcupti with an activity enabled, is
 *                    attached to the stand-in driver; 0 when none is, as after cuptiFinalize)
 *                    at any time. For attach tests: prints "pid P" and "running" first.
 *   --pause-us U     sleep U microseconds after each iteration (default 0; 1000 with --loop, so
 *                    that a looping target leaves the machine's CPUs to others)
 *   --subscribe LIB  dlopen LIB (a libcupti) first, before the driver, and hold a
 *                    cuptiSubscribe for the whole run, as torch.profiler (kineto) does: another
 *                    CUPTI user, there before a profiler that starts when the driver is loaded.
 *                    Prints "subscribe R" (the CUptiResult, 0 on success); exit 4 if LIB cannot
 *                    be loaded or has no cuptiSubscribe.
 *   --runtime        make the submitting calls as the CUDA runtime does, each inside a call of
 *                    the stand-in runtime (gpu_work_through_runtime, gpu_workload.h)
 *
 * Prints at the end (gpu_workload.h, gpu_work_print): "iterations N", "checksum 0x...",
 * "expect NAME N" per driver function called, and one line "gpu {json}" with the exact GPU work
 * submitted: kernels (direct launches by name), graph_kernels (by name), memcpy (by kind: count,
 * bytes), memset (count, bytes), graph_launches, graph_nodes. Exit 0; 3 if a driver call failed or
 * returned wrong values; 2 on bad usage. */
#include "fakecuda_profiler.h"
#include "gpu_workload.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(void)
{
	fprintf(stderr, "usage: gpu_work [--threads N] [--iters M | --loop [--seconds S]] "
	                "[--pause-us U] [--subscribe LIBCUPTI] [--runtime] LIBCUDA_PATH\n");
	exit(2);
}

static unsigned long number(const char *s, unsigned long max)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max || s[0] == '-')
		usage();
	return v;
}

/* cuptiSubscribe through the library at `path`, never undone: the slot stays taken. */
static void subscribe(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "gpu_work: cannot load %s: %s\n", path, dlerror());
		exit(4);
	}
	int (*sub)(void **, void *, void *) = (int (*)(void **, void *, void *))dlsym(h, "cuptiSubscribe");
	if (!sub) {
		fprintf(stderr, "gpu_work: %s has no cuptiSubscribe\n", path);
		exit(4);
	}
	void *handle = NULL;
	printf("subscribe %d\n", sub(&handle, NULL, NULL));
	fflush(stdout);
}

/* The kernels the stand-in CUPTI has recorded so far (the stand-in driver counts them): a
 * session records while it is on, and nothing once its kinds are disabled. -1: not the
 * stand-in driver. */
static long profiler_kernels(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	unsigned long (*kernels)(void) = h ? (unsigned long (*)(void))dlsym(h, "fakecuda_profiler_kernels") : NULL;
	long n = kernels ? (long)kernels() : -1;
	if (h)
		dlclose(h);
	return n;
}

static volatile int stop;
static uint64_t progress; /* atomic */

struct run_args { int threads; unsigned pause_us; struct gpu_work_result result; int rc; };

static void *run_thread(void *arg)
{
	struct run_args *a = arg;
	a->rc = gpu_work_run(a->threads, 0, a->pause_us, &stop, &progress, &a->result);
	return NULL;
}

/* --loop: the main thread waits for signals while a helper thread runs the workload. */
static int loop(int threads, unsigned pause_us, unsigned long seconds, struct gpu_work_result *out)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* inherited by the workers: only sigwait takes them */
	struct run_args a = {.threads = threads, .pause_us = pause_us};
	pthread_t t;
	if (pthread_create(&t, NULL, run_thread, &a) != 0)
		return -1;
	printf("pid %d\nrunning\n", (int)getpid());
	fflush(stdout);
	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += (time_t)seconds;
	while (!stop) {
		int sig;
		if (seconds) {
			struct timespec now, left;
			clock_gettime(CLOCK_MONOTONIC, &now);
			left.tv_sec = deadline.tv_sec - now.tv_sec;
			left.tv_nsec = deadline.tv_nsec - now.tv_nsec;
			if (left.tv_nsec < 0) {
				left.tv_sec--;
				left.tv_nsec += 1000000000;
			}
			if (left.tv_sec < 0)
				break;
			sig = sigtimedwait(&set, NULL, &left);
			if (sig < 0) {
				if (errno == EAGAIN)
					break;
				continue;
			}
		} else if (sigwait(&set, &sig) != 0) {
			continue;
		}
		if (sig == SIGUSR1) {
			printf("progress %" PRIu64 "\nrecorded %ld\n", __atomic_load_n(&progress, __ATOMIC_RELAXED),
			       profiler_kernels());
			fflush(stdout);
		} else {
			break;
		}
	}
	stop = 1;
	pthread_join(t, NULL);
	*out = a.result;
	return a.rc;
}

int main(int argc, char **argv)
{
	int threads = 2, looping = 0;
	unsigned long iters = 10, seconds = 0;
	long pause_us = -1;
	const char *cupti = NULL;
	int i;
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = (int)number(argv[++i], 64);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = number(argv[++i], 1000000);
		else if (!strcmp(argv[i], "--loop"))
			looping = 1;
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = number(argv[++i], 86400);
		else if (!strcmp(argv[i], "--pause-us") && i + 1 < argc)
			pause_us = (long)number(argv[++i], 10000000);
		else if (!strcmp(argv[i], "--subscribe") && i + 1 < argc)
			cupti = argv[++i];
		else if (!strcmp(argv[i], "--runtime"))
			gpu_work_through_runtime(1);
		else
			usage();
	}
	if (i != argc - 1 || threads < 1 || (!looping && (iters == 0 || seconds)))
		usage();

	if (cupti)
		subscribe(cupti);
	if (gpu_work_open(argv[i]) != 0)
		return 3;
	struct gpu_work_result r = {0};
	if (pause_us < 0)
		pause_us = looping ? 1000 : 0;
	int rc = looping ? loop(threads, (unsigned)pause_us, seconds, &r)
	                 : gpu_work_run(threads, iters, (unsigned)pause_us, &stop, NULL, &r);
	gpu_work_close(&r);
	gpu_work_print(stdout, &r);
	return rc == 0 ? 0 : 3;
}
