/* rt_firstsig: threads whose FIRST traced call comes from a signal handler that interrupted
 * malloc or free.
 *
 * A thread's first traced call is where the agent makes the thread's state; if that needed
 * malloc (or any lock the interrupted code may hold), a handler interrupting malloc would wait
 * for the arena lock its own thread holds, forever. Each round starts THREADS victims that
 * allocate and free blocks of 2-60 KiB in a tight loop (above the per-thread cache's sizes, so
 * every malloc and free takes the arena's lock); a signaller sends each one SIGUSR1 at a random
 * moment of that loop, and the handler makes the thread's first traced call, cuFakeInner(k)
 * (k ^ 0x1234). In round 0 the main thread is a victim too (its first call is the main thread's
 * path). A victim leaves its loop once its handler has run.
 *
 * A hang is detected here, not by a test runner's timeout: if a round's victims have not all
 * run their handler within --deadline-ms, the program prints "hung ROUND N" (N victims still
 * inside it) and exits 4 at once (exit_group: nothing waits for the hung threads).
 *
 * usage: rt_firstsig [--agent PATH] [--threads N] [--rounds R] [--deadline-ms MS] LIBCUDA
 * prints: "victims V", "handled H", "bad B" (wrong results: exit 3); "hung R N" (exit 4) */
#include "robust_common.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256
#define LOOPING 64 /* allocations a victim has made before it may be signalled */

struct victim {
	pid_t tid;
	int k;                  /* its call's argument */
	atomic_long allocs;     /* allocations so far */
	atomic_int handled;     /* its handler has run */
};

static __typeof__(cuFakeInner) *f_inner;
static atomic_long bad;
static __thread struct victim *self; /* initial-exec TLS of the program: set before the loop */

static void on_signal(int sig)
{
	(void)sig;
	struct victim *v = self;
	if (!v)
		return;
	if (f_inner(v->k) != (v->k ^ 0x1234))
		atomic_fetch_add(&bad, 1);
	atomic_store(&v->handled, 1);
}

static unsigned long long rng(unsigned long long *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Allocate and free until the handler has run. Blocks of 2-60 KiB: not served by the per-thread
 * cache (at most ~1 KiB) nor by mmap (128 KiB and up), so each malloc and free locks the arena. */
static void victim_loop(struct victim *v)
{
	v->tid = (pid_t)syscall(SYS_gettid);
	self = v;
	void *slot[8] = {0};
	unsigned long long s = 0x9e3779b97f4a7c15ull ^ (unsigned long long)v->k;
	for (long i = 0; !atomic_load_explicit(&v->handled, memory_order_relaxed); i++) {
		unsigned j = (unsigned)(rng(&s) & 7);
		free(slot[j]);
		size_t n = 2048 + (size_t)(rng(&s) % (58 * 1024));
		slot[j] = malloc(n);
		if (slot[j])
			((volatile char *)slot[j])[n - 1] = 1;
		atomic_store_explicit(&v->allocs, i + 1, memory_order_release);
	}
	for (unsigned j = 0; j < 8; j++)
		free(slot[j]);
}

static void *victim_main(void *arg)
{
	victim_loop(arg);
	return NULL;
}

struct round {
	struct victim *v;
	int n;
	int number;
	long deadline_ms;
};

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void sleep_us(long us)
{
	struct timespec t = {us / 1000000, (us % 1000000) * 1000L};
	nanosleep(&t, NULL);
}

/* Signal each victim once it is looping, at a random moment; then wait for every handler. */
static void *signaller(void *arg)
{
	struct round *r = arg;
	unsigned long long s = 0x2545f4914f6cdd1dull + (unsigned long long)r->number;
	double t0 = now_ms();
	for (int i = 0; i < r->n; i++) {
		struct victim *v = &r->v[i];
		while (atomic_load_explicit(&v->allocs, memory_order_acquire) < LOOPING) {
			if (now_ms() - t0 > r->deadline_ms)
				break;
			sleep_us(50);
		}
		sleep_us((long)(rng(&s) % 200));
		syscall(SYS_tgkill, getpid(), v->tid, SIGUSR1);
	}
	for (;;) {
		int left = 0;
		for (int i = 0; i < r->n; i++)
			left += !atomic_load(&r->v[i].handled);
		if (!left)
			return NULL;
		if (now_ms() - t0 > r->deadline_ms) {
			/* write, not printf: stdio may allocate, and a hung thread holds an arena lock */
			char msg[64];
			int len = snprintf(msg, sizeof(msg), "hung %d %d\n", r->number, left);
			if (write(1, msg, (size_t)len) < 0)
				len = 0;
			syscall(SYS_exit_group, 4); /* the hung threads cannot be joined */
		}
		sleep_us(1000);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rt_firstsig [--agent PATH] [--threads N] [--rounds R] [--deadline-ms MS] LIBCUDA\n");
		return 2;
	}
	const char *agent = rt_opt(argc, argv, "--agent");
	int threads = (int)rt_opt_long(argc, argv, "--threads", 16);
	int rounds = (int)rt_opt_long(argc, argv, "--rounds", 8);
	long deadline_ms = rt_opt_long(argc, argv, "--deadline-ms", 5000);
	if (threads < 1 || threads > MAX_THREADS || rounds < 1) {
		fprintf(stderr, "rt_firstsig: 1..%d threads, 1 round at least\n", MAX_THREADS);
		return 2;
	}
	void *lib = rt_load(agent, argv[argc - 1]);
	f_inner = RT_FN(lib, cuFakeInner);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0) {
		perror("rt_firstsig: sigaction");
		return 2;
	}

	static struct victim v[MAX_THREADS + 1];
	long victims = 0, handled = 0;
	for (int round = 0; round < rounds; round++) {
		int main_too = round == 0; /* the main thread's first call, once */
		int n = threads + main_too;
		memset(v, 0, sizeof(v));
		for (int i = 0; i < n; i++)
			v[i].k = (int)(victims + i);
		pthread_t th[MAX_THREADS], sig;
		for (int i = 0; i < threads; i++)
			if (pthread_create(&th[i], NULL, victim_main, &v[i]) != 0) {
				perror("rt_firstsig: pthread_create");
				return 2;
			}
		struct round r = {v, n, round, deadline_ms};
		if (main_too)
			v[threads].tid = (pid_t)syscall(SYS_gettid); /* before the signaller looks */
		if (pthread_create(&sig, NULL, signaller, &r) != 0) {
			perror("rt_firstsig: pthread_create");
			return 2;
		}
		if (main_too)
			victim_loop(&v[threads]);
		pthread_join(sig, NULL);
		for (int i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
		for (int i = 0; i < n; i++)
			handled += atomic_load(&v[i].handled);
		victims += n;
	}
	self = NULL;
	printf("victims %ld\nhandled %ld\nbad %ld\n", victims, handled, atomic_load(&bad));
	return atomic_load(&bad) ? 3 : 0;
}
