/* stack_chain: calls of the stand-in libcuda (tests/fakecuda) from known places, for the stack
 * tests (tests/engine/check_stacks.py). Built with frame pointers off and unwind tables on, as
 * distributions build: every frame is found from .eh_frame.
 *
 *   stack_chain LIBCUDA chain N         main -> outer -> middle -> inner, which calls
 *                                       cuMemAlloc_v2 then cuDriverGetVersion, N times
 *   stack_chain LIBCUDA signal N        a SIGALRM handler (on_alarm) calls cuDriverGetVersion;
 *                                       the signal interrupts spin(), N times
 *   stack_chain LIBCUDA jit N           cuMemAlloc_v2 called from code copied into an anonymous
 *                                       executable mapping (no unwind information), N times
 *   stack_chain LIBCUDA sites N         site_call() calls cuMemAlloc_v2 from two call sites of
 *                                       two_sites(), N times; then a SIGALRM handler
 *                                       (on_alarm_info) calls cuDriverGetVersion N times. It
 *                                       prints each site's return address ("site K 0x..."), the
 *                                       signal trampoline's ("restorer 0x...") and each
 *                                       interrupted instruction's ("rip 0x...")
 *   stack_chain LIBCUDA threads T N     T threads run the chain N times each
 *   stack_chain LIBCUDA loop T MS [US]  T threads run the chain for MS milliseconds (attach),
 *                                       sleeping US microseconds after each (a window of
 *                                       10^4 calls rather than 10^6: the tests read it in Python)
 *   stack_chain LIBCUDA fork N          the chain N times, then fork: the child runs it N times
 *                                       and exits, the parent (after waiting) N times again
 *
 * It prints "checksum 0x..." of every value the driver returned (identical traced or not) and
 * "calls ALLOC VERSION": the cuMemAlloc_v2 and cuDriverGetVersion calls made. Exit 3 when a
 * driver call failed. */
#include "fakecuda.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

static __typeof__(cuInit) *p_cuInit;
static __typeof__(cuDeviceGet) *p_cuDeviceGet;
static __typeof__(cuDevicePrimaryCtxRetain) *p_cuDevicePrimaryCtxRetain;
static __typeof__(cuCtxSetCurrent) *p_cuCtxSetCurrent;
static __typeof__(cuMemAlloc_v2) *p_cuMemAlloc_v2;
static __typeof__(cuDriverGetVersion) *p_cuDriverGetVersion;

static _Atomic uint64_t checksum, n_alloc, n_version;
static atomic_int failed;
static CUcontext ctx;

static void add(uint64_t v)
{
	/* a sum of per-value hashes: the same whatever the threads' order */
	atomic_fetch_add(&checksum, (v + 0x9e3779b97f4a7c15ull) * 0xbf58476d1ce4e5b9ull);
}

static void check(CUresult rc)
{
	add((uint64_t)(unsigned)rc);
	if (rc != 0)
		atomic_store(&failed, 1);
}

/* The chain. Each level does something after its call, so that no call is a tail call. */
NOINLINE void inner(int i)
{
	CUdeviceptr p = 0;
	check(p_cuMemAlloc_v2(&p, 64 + (size_t)(i & 7)));
	add(p != 0);
	atomic_fetch_add(&n_alloc, 1);
	int v = 0;
	check(p_cuDriverGetVersion(&v));
	add((uint64_t)v);
	atomic_fetch_add(&n_version, 1);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void middle(int i)
{
	inner(i);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void outer(int i)
{
	middle(i);
	__asm__ volatile("" ::: "memory");
}

/* ---- a call from a signal handler -------------------------------------------------------- */

static volatile sig_atomic_t alarms;

/* Inlined: the handler's own frame makes the call. */
static inline __attribute__((always_inline)) void version_from_handler(void)
{
	int v = 0;
	check(p_cuDriverGetVersion(&v));
	add((uint64_t)v);
	atomic_fetch_add(&n_version, 1);
	alarms++;
}

NOINLINE void on_alarm(int sig)
{
	(void)sig;
	version_from_handler();
	__asm__ volatile("" ::: "memory");
}

/* Spins until the handler has run once more: the signal interrupts this function. */
NOINLINE void spin(int before)
{
	while (alarms == before)
		__asm__ volatile("" ::: "memory");
	__asm__ volatile("" ::: "memory");
}

static void run_signal(int n)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	for (int i = 0; i < n; i++) {
		struct itimerval t = {{0, 0}, {0, 2000}};
		setitimer(ITIMER_REAL, &t, NULL);
		spin(i);
	}
}

/* ---- exact addresses: two call sites of one function, and an interrupted instruction ------- */
static uintptr_t site_ret[2];

NOINLINE void site_call(int site)
{
	CUdeviceptr p = 0;
	check(p_cuMemAlloc_v2(&p, 32));
	add(p != 0);
	atomic_fetch_add(&n_alloc, 1);
	site_ret[site] = (uintptr_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void two_sites(void)
{
	site_call(0);
	site_call(1);
	__asm__ volatile("" ::: "memory");
}

static uintptr_t rips[64];

NOINLINE void on_alarm_info(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si;
	if (alarms < 64)
		rips[alarms] = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
	version_from_handler();
	__asm__ volatile("" ::: "memory");
}

static void run_sites(int n)
{
	for (int i = 0; i < n; i++)
		two_sites();
	printf("site 0 %#" PRIxPTR "\nsite 1 %#" PRIxPTR "\n", site_ret[0], site_ret[1]);
	struct sigaction sa, cur;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_alarm_info;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGALRM, &sa, NULL);
	sigaction(SIGALRM, NULL, &cur); /* glibc's trampoline, which it put in the kernel's action */
	printf("restorer %p\n", (void *)cur.sa_restorer);
	if (n > 64)
		n = 64;
	for (int i = 0; i < n; i++) {
		struct itimerval t = {{0, 0}, {0, 2000}};
		setitimer(ITIMER_REAL, &t, NULL);
		spin(i);
	}
	for (int i = 0; i < n; i++)
		printf("rip %#" PRIxPTR "\n", rips[i]);
}

/* ---- a call from code without unwind information ----------------------------------------- */

/* jit(fn, dptr, bytes): fn(dptr, bytes), from an anonymous mapping, as a JIT's code would. */
static const unsigned char jit_code[] = {
	0x48, 0x89, 0xf8,       /* mov rax, rdi */
	0x48, 0x89, 0xf7,       /* mov rdi, rsi */
	0x48, 0x89, 0xd6,       /* mov rsi, rdx */
	0x48, 0x83, 0xec, 0x08, /* sub rsp, 8 */
	0xff, 0xd0,             /* call rax */
	0x48, 0x83, 0xc4, 0x08, /* add rsp, 8 */
	0xc3,                   /* ret */
};

static void run_jit(int n)
{
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || (memcpy(m, jit_code, sizeof(jit_code)), mprotect(m, 4096, PROT_READ | PROT_EXEC)) != 0) {
		perror("jit mapping");
		exit(2);
	}
	CUresult (*jit)(void *, CUdeviceptr *, size_t) = (CUresult(*)(void *, CUdeviceptr *, size_t))m;
	printf("jit %p\n", m);
	for (int i = 0; i < n; i++) {
		CUdeviceptr p = 0;
		check(jit((void *)p_cuMemAlloc_v2, &p, 128));
		add(p != 0);
		atomic_fetch_add(&n_alloc, 1);
	}
}

/* ---- threads -------------------------------------------------------------------------------- */

static atomic_int stop_threads;
static long loop_ms, loop_pause_us;

static void *worker(void *arg)
{
	int n = (int)(intptr_t)arg;
	check(p_cuCtxSetCurrent(ctx));
	struct timespec pause = {0, loop_pause_us * 1000L};
	for (int i = 0; n ? i < n : !atomic_load(&stop_threads); i++) {
		outer(i);
		if (loop_pause_us)
			nanosleep(&pause, NULL);
	}
	return NULL;
}

static void run_threads(int nthreads, int n)
{
	pthread_t t[64];
	if (nthreads > 64)
		nthreads = 64;
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)n);
	if (!n) {
		struct timespec d = {loop_ms / 1000, (loop_ms % 1000) * 1000000L};
		nanosleep(&d, NULL);
		atomic_store(&stop_threads, 1);
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
}

#define SYM(name)                                                                                 \
	if (!(*(void **)&p_##name = dlsym(h, #name))) {                                             \
		fprintf(stderr, "no %s\n", #name);                                                     \
		return 2;                                                                              \
	}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: stack_chain LIBCUDA chain|signal|jit N | threads T N | loop T MS\n");
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 2;
	}
	SYM(cuInit) SYM(cuDeviceGet) SYM(cuDevicePrimaryCtxRetain) SYM(cuCtxSetCurrent) SYM(cuMemAlloc_v2)
	SYM(cuDriverGetVersion)
	CUdevice dev;
	check(p_cuInit(0));
	check(p_cuDeviceGet(&dev, 0));
	check(p_cuDevicePrimaryCtxRetain(&ctx, dev));
	check(p_cuCtxSetCurrent(ctx));
	const char *mode = argv[2];
	int n = atoi(argv[3]);
	if (!strcmp(mode, "chain")) {
		for (int i = 0; i < n; i++)
			outer(i);
	} else if (!strcmp(mode, "signal")) {
		run_signal(n);
	} else if (!strcmp(mode, "sites")) {
		run_sites(n);
	} else if (!strcmp(mode, "jit")) {
		run_jit(n);
	} else if (!strcmp(mode, "threads") && argc > 4) {
		run_threads(n, atoi(argv[4]));
	} else if (!strcmp(mode, "fork")) {
		for (int i = 0; i < n; i++)
			outer(i);
		fflush(stdout);
		pid_t child = fork();
		if (child == 0) {
			for (int i = 0; i < n; i++)
				outer(i);
			_exit(atomic_load(&failed) ? 3 : 0);
		}
		int status = 1;
		if (child < 0 || waitpid(child, &status, 0) != child || status != 0)
			atomic_store(&failed, 1);
		for (int i = 0; i < n; i++)
			outer(i);
	} else if (!strcmp(mode, "loop") && argc > 4) {
		loop_ms = atol(argv[4]);
		loop_pause_us = argc > 5 ? atol(argv[5]) % 1000000 : 0;
		run_threads(n, 0);
	} else {
		fprintf(stderr, "stack_chain: unknown mode '%s'\n", mode);
		return 2;
	}
	printf("checksum 0x%016" PRIx64 "\n", atomic_load(&checksum));
	printf("calls %" PRIu64 " %" PRIu64 "\n", atomic_load(&n_alloc), atomic_load(&n_version));
	return atomic_load(&failed) ? 3 : 0;
}
