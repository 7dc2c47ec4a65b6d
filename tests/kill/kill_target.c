/* kill_target: the program the kill harness (test_kill.py) traces while it kills cuhook at every
 * phase of run, attach and detach. THREADS threads call the stand-in libcuda (tests/fakecuda)
 * round after round and check every result against what fakecuda.h says it must be, so a
 * register clobbered, a call returning into the wrong place or a lost write shows up as a wrong
 * result rather than going unseen.
 *
 *   kill_target LIBCUDA [THREADS [SETS [SLEEP_US]]]
 *
 * Each round of a thread makes SETS sets of 18 checked calls (a device memory round trip among
 * them), then sleeps SLEEP_US microseconds: the threads are in the driver's code often enough to
 * be caught in it, without the 12 of them taking the machine (defaults 12, 1, 1000).
 *
 * Prints "pid P" first thing in main (the harness learns the pid of a program cuhook run
 * started, and that its own code ran), "ready" once every thread has finished a round, and at
 * the end "rounds R bad B". Ends at a line or EOF on stdin: exit 0 when every result was right,
 * 3 when one was not (each wrong one is named on stderr); 4 when no line came within 120 s, so
 * that a program a broken harness forgot cannot stay behind.
 *
 * KILL_TARGET_NO_PIDFD=1 in the environment: a seccomp filter makes pidfd_open fail with ENOSYS
 * in the program, as on a kernel older than 5.3 (the agent's watch of cuhook then reads /proc). */
#include "fakecuda.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64
#define LIFETIME_S 120

#define FUNCS(X)                                                                                   \
	X(cuInit) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuCtxGetCurrent)                    \
	X(cuCtxGetDevice_v2) X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemcpyHtoD_v2) X(cuMemcpyDtoH_v2)    \
	X(cuFakeConstA) X(cuFakeConstB) X(cuFakeConstC) X(cuFakeSwitch) X(cuFakeRipCmp)                \
	X(cuFakeLoopBack) X(cuFakeAlEcho) X(cuFakeVarSum) X(cuFakeScale) X(cuFakeMulD) X(cuFakeOuter)   \
	X(cuFakeAlias) X(cuFakeCallFirst) X(cuFakeThunk)

static struct {
#define X(n) __typeof__(n) *n;
	FUNCS(X)
#undef X
} D;

static CUcontext ctx;
static int sets = 1, sleep_us = 1000;
static atomic_int stop, first_rounds;
static atomic_long rounds, bad;

/* One wrong result: named, counted. The calls go on (the harness wants the whole count). */
static void expect(long got, long want, const char *fn, int t, long k)
{
	if (got == want)
		return;
	if (atomic_fetch_add(&bad, 1) < 20)
		fprintf(stderr, "kill_target: thread %d call %ld: %s returned %ld, expected %ld\n", t, k, fn,
		        got, want);
}

/* 18 calls whose answers fakecuda.h gives, with arguments from (t, k). */
static void one_set(int t, long k)
{
	int x = (int)(k % 1000) + t;
	expect(D.cuFakeConstA(), 0, "cuFakeConstA", t, k);
	expect(D.cuFakeConstB(), 0x5a, "cuFakeConstB", t, k);
	expect(D.cuFakeConstC(), 999, "cuFakeConstC", t, k);
	int sel = (int)(k % 3);
	expect(D.cuFakeSwitch(sel, x), sel == 1 ? 3 * x : sel == 2 ? x ^ 0x5a5a : x + 1000, "cuFakeSwitch", t, k);
	expect(D.cuFakeRipCmp(x), 2 * x + 1, "cuFakeRipCmp", t, k);
	expect(D.cuFakeLoopBack(3, (unsigned)x), x + 6, "cuFakeLoopBack", t, k);
	expect(D.cuFakeAlEcho(x, 1.0, 2.0), x + 2, "cuFakeAlEcho", t, k); /* al = 2 vector args */
	expect(D.cuFakeVarSum(2, 0.25, (double)t), (long)((0.25 + t) * 1000), "cuFakeVarSum", t, k);
	float a = 0.5f + (float)t;
	double b = 2.0 + (double)(k % 7);
	expect(D.cuFakeScale(a, b), (long)(a * b), "cuFakeScale", t, k);
	expect(D.cuFakeMulD(b, 4.0) == b * 4.0 + 0.5, 1, "cuFakeMulD", t, k);
	expect(D.cuFakeOuter(x), ((3 * x) ^ 0x1234) + 7, "cuFakeOuter", t, k);
	expect(D.cuFakeAlias(x), x * 5 + 1, "cuFakeAlias", t, k);
	expect(D.cuFakeCallFirst(x), 0x700 + x, "cuFakeCallFirst", t, k);
	expect(D.cuFakeThunk(x), x * 7 - 3, "cuFakeThunk", t, k);
	CUcontext c = NULL;
	expect(D.cuCtxGetCurrent(&c) == 0 && c == ctx, 1, "cuCtxGetCurrent", t, k);
	CUdevice dev = -1;
	expect(D.cuCtxGetDevice_v2(&dev, NULL) == 0 && dev == 0, 1, "cuCtxGetDevice_v2", t, k);
	/* device memory: what goes in comes back */
	uint32_t in[16], out[16];
	for (int i = 0; i < 16; i++)
		in[i] = (uint32_t)(t * 1000003 + k * 31 + i);
	CUdeviceptr d = 0;
	int ok = D.cuMemAlloc_v2(&d, sizeof(in)) == 0 && D.cuMemcpyHtoD_v2(d, in, sizeof(in)) == 0 &&
	         D.cuMemcpyDtoH_v2(out, d, sizeof(out)) == 0 && memcmp(in, out, sizeof(in)) == 0;
	expect(ok && D.cuMemFree_v2(d) == 0, 1, "device memory round trip", t, k);
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	if (D.cuCtxSetCurrent(ctx) != 0) {
		fprintf(stderr, "kill_target: cuCtxSetCurrent failed\n");
		exit(2);
	}
	struct timespec nap = {sleep_us / 1000000, (long)(sleep_us % 1000000) * 1000};
	for (long k = 0; !atomic_load_explicit(&stop, memory_order_relaxed);) {
		for (int s = 0; s < sets; s++)
			one_set(t, k++);
		atomic_fetch_add(&rounds, 1);
		if (k == sets)
			atomic_fetch_add(&first_rounds, 1);
		if (sleep_us)
			nanosleep(&nap, NULL);
	}
	return NULL;
}

static void refuse_pidfd_open(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 434 /* pidfd_open */, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		perror("kill_target: seccomp");
		exit(2);
	}
}

/* A line or EOF on stdin: 1; nothing within the lifetime: 0. */
static int wait_for_stdin(void)
{
	fd_set r;
	FD_ZERO(&r);
	FD_SET(0, &r);
	struct timeval tv = {LIFETIME_S, 0};
	int n;
	while ((n = select(1, &r, NULL, NULL, &tv)) < 0)
		;
	if (n == 0)
		return 0;
	char buf[64];
	if (read(0, buf, sizeof(buf)) < 0) {
		/* EOF and errors end the program too */
	}
	return 1;
}

int main(int argc, char **argv)
{
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	if (argc < 2 || argc > 5) {
		fprintf(stderr, "usage: kill_target LIBCUDA [THREADS [SETS [SLEEP_US]]]\n");
		return 2;
	}
	int nthreads = argc > 2 ? atoi(argv[2]) : 12;
	sets = argc > 3 ? atoi(argv[3]) : 1;
	sleep_us = argc > 4 ? atoi(argv[4]) : 1000;
	if (nthreads < 1 || nthreads > MAX_THREADS || sets < 1 || sleep_us < 0) {
		fprintf(stderr, "kill_target: bad THREADS, SETS or SLEEP_US\n");
		return 2;
	}
	const char *nopidfd = getenv("KILL_TARGET_NO_PIDFD");
	if (nopidfd && !strcmp(nopidfd, "1"))
		refuse_pidfd_open(); /* before any thread: they all inherit it */
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "kill_target: %s\n", dlerror());
		return 2;
	}
	void **slot = (void **)&D;
	static const char *const names[] = {
#define X(n) #n,
		FUNCS(X)
#undef X
	};
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!(slot[i] = dlsym(lib, names[i]))) {
			fprintf(stderr, "kill_target: %s\n", dlerror());
			return 2;
		}
	CUdevice dev = 0;
	if (D.cuInit(0) != 0 || D.cuDevicePrimaryCtxRetain(&ctx, dev) != 0) {
		fprintf(stderr, "kill_target: the stand-in driver did not initialise\n");
		return 2;
	}

	pthread_t th[MAX_THREADS];
	for (int t = 0; t < nthreads; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) != 0) {
			perror("kill_target: pthread_create");
			return 2;
		}
	while (atomic_load(&first_rounds) < nthreads)
		usleep(1000);
	printf("ready\n");
	fflush(stdout);

	int told = wait_for_stdin();
	atomic_store(&stop, 1);
	for (int t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	printf("rounds %ld bad %ld\n", atomic_load(&rounds), atomic_load(&bad));
	fflush(stdout);
	if (!told)
		return 4;
	return atomic_load(&bad) ? 3 : 0;
}
