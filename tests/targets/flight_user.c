/* flight_user: threads that call the stand-in libcuda with a sequence number as the argument, for
 * the flight recorder's tests (tests/engine/check_flight.py). The test drives it through
 * stdin/stdout:
 *
 *   phase 1: every worker I (0..THREADS-1) calls cuFakeStep((I+1) << 24 | k) for k = 1..ITERS
 *            (mode slow: also cuFakeSleep(0) whenever k % 64 == 32, a fast call of the slow
 *            trigger's function), then waits. Printed:
 *              thread I TID LAST      the argument of the worker's last call
 *              main TID               the thread that makes the trigger's call
 *              ready                  then waits for a line on stdin
 *   trigger: mode error: the main thread calls cuFakeStep(FAKE_STEP_FAIL), which returns an error;
 *            mode slow: cuFakeSleep(SLOW_MS). Then it waits (up to 30 s, making no traced call)
 *            until the agent counts a dump written (cuhook_agent_control.dumps_written, read in
 *            the process as cuhook dump reads it from outside): "trigger RET", "dumped N".
 *            Modes dump and exit make no call here.
 *   phase 2: every worker calls cuFakeStep((I+1) << 24 | k) for k = ITERS+1..ITERS+PHASE2.
 *              thread2 I TID LAST
 *              ready2                 then waits for a line on stdin, and exits 0
 *   "bad ..." lines say what went wrong (exit 1).
 *
 * usage: flight_user LIBCUDA_PATH error|slow|dump|exit THREADS ITERS PHASE2 [SLOW_MS]
 * FLIGHT_USER_GAP_NS=N: N ns of untraced spinning before each call of phase 1. */
#include "fakecuda.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cuhook_agent.h" /* struct cuhook_agent_control */

static __typeof__(cuFakeStep) *step;
static __typeof__(cuFakeSleep) *sleep_ms;
static unsigned iters, phase2;
static int slow_mode;
static pthread_barrier_t phase_done, phase_go;

struct worker {
	pthread_t th;
	unsigned index;
	pid_t tid;
	unsigned last[2]; /* the argument of its last call in phase 1 and 2 */
	int bad;
};

static unsigned arg_of(unsigned index, unsigned k)
{
	return (index + 1) << 24 | k;
}

/* FLIGHT_USER_GAP_NS: untraced work (a spin) between two calls of phase 1, so that a run with a
 * given number of calls lasts as long as wanted (the 60-second run). */
static long gap_ns;

static void gap(void)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < gap_ns);
}

static void *work(void *p)
{
	struct worker *w = p;
	w->tid = (pid_t)syscall(SYS_gettid);
	for (unsigned k = 1; k <= iters; k++) {
		if (gap_ns)
			gap();
		if (slow_mode && k % 64 == 32 && sleep_ms(0) != FAKE_SUCCESS)
			w->bad = 1;
		if (step(arg_of(w->index, k)) != FAKE_SUCCESS)
			w->bad = 1;
		w->last[0] = arg_of(w->index, k);
	}
	pthread_barrier_wait(&phase_done);
	pthread_barrier_wait(&phase_go);
	for (unsigned k = iters + 1; k <= iters + phase2; k++) {
		if (step(arg_of(w->index, k)) != FAKE_SUCCESS)
			w->bad = 1;
		w->last[1] = arg_of(w->index, k);
	}
	pthread_barrier_wait(&phase_done);
	return NULL;
}

static int find_agent(struct dl_phdr_info *info, size_t size, void *out)
{
	(void)size;
	if (strstr(info->dlpi_name, "libcuhook")) {
		snprintf(out, PATH_MAX, "%s", info->dlpi_name);
		return 1;
	}
	return 0;
}

/* The agent's control object, as loaded by cuhook run (a dlopen of its own: not global). */
static volatile struct cuhook_agent_control *agent_control(void)
{
	char path[PATH_MAX] = "";
	if (!dl_iterate_phdr(find_agent, path))
		return NULL;
	void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	return h ? dlsym(h, "cuhook_agent_control") : NULL;
}

static void wait_line(void)
{
	char line[64];
	if (!fgets(line, sizeof(line), stdin)) {
		printf("bad no line on stdin\n");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "usage: flight_user LIBCUDA_PATH error|slow|dump|exit THREADS ITERS PHASE2 [SLOW_MS]\n");
		return 2;
	}
	const char *mode = argv[2];
	unsigned nthreads = (unsigned)atoi(argv[3]), slow = argc > 6 ? (unsigned)atoi(argv[6]) : 0;
	iters = (unsigned)atoi(argv[4]);
	phase2 = (unsigned)atoi(argv[5]);
	slow_mode = !strcmp(mode, "slow");
	if (nthreads < 1 || nthreads > 254 || iters < 1 || iters + phase2 >= 1u << 24) {
		fprintf(stderr, "flight_user: 1 to 254 threads, fewer than 2^24 calls each\n");
		return 2;
	}
	void *lib = dlopen(argv[1], RTLD_NOW);
	__typeof__(cuInit) *init = lib ? (__typeof__(cuInit) *)dlsym(lib, "cuInit") : NULL;
	step = lib ? (__typeof__(cuFakeStep) *)dlsym(lib, "cuFakeStep") : NULL;
	const char *g = getenv("FLIGHT_USER_GAP_NS");
	gap_ns = g ? atol(g) : 0;
	sleep_ms = lib ? (__typeof__(cuFakeSleep) *)dlsym(lib, "cuFakeSleep") : NULL;
	if (!init || !step || !sleep_ms || init(0) != FAKE_SUCCESS) {
		printf("bad cannot use %s: %s\n", argv[1], dlerror());
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	struct worker *w = calloc(nthreads, sizeof(*w));
	pthread_barrier_init(&phase_done, NULL, nthreads + 1);
	pthread_barrier_init(&phase_go, NULL, nthreads + 1);
	for (unsigned i = 0; i < nthreads; i++) {
		w[i].index = i;
		pthread_create(&w[i].th, NULL, work, &w[i]);
	}
	pthread_barrier_wait(&phase_done);
	for (unsigned i = 0; i < nthreads; i++)
		printf("thread %u %d %u\n", i, (int)w[i].tid, w[i].last[0]);
	printf("main %d\nready\n", (int)syscall(SYS_gettid));
	wait_line();

	if (slow_mode || !strcmp(mode, "error")) {
		volatile struct cuhook_agent_control *c = agent_control();
		if (!c) {
			printf("bad no cuhook_agent_control in the process\n");
			return 1;
		}
		uint32_t before = c->dumps_written;
		CUresult r = slow_mode ? sleep_ms(slow) : step(FAKE_STEP_FAIL);
		printf("trigger %d\n", r);
		struct timespec poll = {0, 5000000};
		for (int n = 0; c->dumps_written == before && n < 6000; n++)
			nanosleep(&poll, NULL);
		if (c->dumps_written == before) {
			printf("bad no dump within 30 s of the trigger\n");
			return 1;
		}
		printf("dumped %u\n", c->dumps_written);
	}

	pthread_barrier_wait(&phase_go);
	pthread_barrier_wait(&phase_done);
	int bad = 0;
	for (unsigned i = 0; i < nthreads; i++) {
		printf("thread2 %u %d %u\n", i, (int)w[i].tid, w[i].last[1]);
		bad |= w[i].bad;
	}
	if (bad)
		printf("bad a call returned an unexpected error\n");
	printf("ready2\n");
	wait_line();
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(w[i].th, NULL);
	return bad;
}
