/* rt_signal: traced calls from a signal handler that interrupts the same thread's traced calls
 * (and the agent's own handler code) at a high rate.
 *   main thread:     ITERS x { cuFakeThunk(i) (7i-3), cuFakeMulD(i, 0.5) (0.5i + 0.5) }
 *   signal handler:  cuFakeSwitch(2, k) (k ^ 0x5a5a), cuFakeOuter(k) (((3k) ^ 0x1234) + 7, with a
 *                    nested cuFakeInner), cuFakeScale(1.5f, k) ((int)(1.5k))
 * Signals: --via tgkill (default): a second thread sends SIGUSR1 to the main thread in a loop;
 * --via itimer: setitimer(ITIMER_REAL) every --interval-us microseconds (SIGALRM).
 * --altstack: the handler runs on a sigaltstack.
 * --siglongjmp: the handler ends with siglongjmp back to the main loop's head (the interrupted
 * iteration is abandoned, wherever it was: in a traced call, or in the agent's own code), which
 * unblocks the signal once there.
 * After the loop, with the signal blocked: FINAL x cuFakeConstC() (999) on the main thread.
 * The main loop makes at least ITERS iterations, and goes on until MIN handlers have run (or
 * 10 s have passed). Every result is checked (in the handler too); the counts of calls made
 * are printed.
 *
 * usage: rt_signal [--agent PATH] [--iters N] [--min-signals MIN] [--via tgkill|itimer]
 *                  [--interval-us U] [--altstack 1] [--siglongjmp 1] [--spin S]
 *                  [--max-iters N] [--final N] LIBCUDA
 *   --spin S   S pause instructions between iterations (fewer calls per signal: smaller traces)
 * prints: "main_iters N" (iterations begun; with --siglongjmp some were abandoned),
 * "handler_runs H", "final N", "bad N"; exit 3 if a result was wrong. */
#include "robust_common.h"

#include <pthread.h>
#include <errno.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static __typeof__(cuFakeSwitch) *f_switch;
static __typeof__(cuFakeOuter) *f_outer;
static __typeof__(cuFakeScale) *f_scale;
static volatile long handler_runs, handler_bad;
static atomic_int done;
static pid_t main_tid;
static sem_t handled;
static volatile sig_atomic_t jump_mode, jump_armed;
static sigjmp_buf loop_env;

static void on_signal(int sig)
{
	(void)sig;
	int k = (int)handler_runs;
	if (f_switch(2, k) != (k ^ 0x5a5a))
		handler_bad++;
	if (f_outer(k) != (((3 * k) ^ 0x1234) + 7))
		handler_bad++;
	if (f_scale(1.5f, (double)k) != (int)(1.5 * (double)k))
		handler_bad++;
	handler_runs = k + 1;
	sem_post(&handled); /* async-signal-safe */
	if (jump_mode && jump_armed)
		siglongjmp(loop_env, 1);
}

/* One signal at a time: send, then wait until the handler has run (it posts a semaphore), so
 * that signals are not merged while pending and land all over the main thread's loop. Sleeping
 * rather than spinning keeps this going when the machine is busy (the woken sender preempts). */
static void *sender(void *arg)
{
	(void)arg;
	pid_t pid = getpid();
	while (!atomic_load_explicit(&done, memory_order_relaxed)) {
		syscall(SYS_tgkill, pid, main_tid, SIGUSR1);
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_nsec += 10 * 1000000L;
		if (t.tv_nsec >= 1000000000L) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000L;
		}
		while (sem_timedwait(&handled, &t) != 0 && errno == EINTR)
			;
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rt_signal [--agent PATH] [--iters N] ... LIBCUDA\n");
		return 2;
	}
	const char *agent = rt_opt(argc, argv, "--agent");
	long iters = rt_opt_long(argc, argv, "--iters", 100000);
	long min_signals = rt_opt_long(argc, argv, "--min-signals", 0);
	long spin = rt_opt_long(argc, argv, "--spin", 0);
	const char *via = rt_opt(argc, argv, "--via");
	int itimer = via && strcmp(via, "itimer") == 0;
	long interval_us = rt_opt_long(argc, argv, "--interval-us", 20);
	int altstack = (int)rt_opt_long(argc, argv, "--altstack", 0);
	long max_iters = rt_opt_long(argc, argv, "--max-iters", 500000);
	long n_final = rt_opt_long(argc, argv, "--final", 1000);
	jump_mode = (int)rt_opt_long(argc, argv, "--siglongjmp", 0);

	void *lib = rt_load(agent, argv[argc - 1]);
	__typeof__(cuFakeThunk) *thunk = RT_FN(lib, cuFakeThunk);
	__typeof__(cuFakeMulD) *muld = RT_FN(lib, cuFakeMulD);
	__typeof__(cuFakeConstC) *constc = RT_FN(lib, cuFakeConstC);
	f_switch = RT_FN(lib, cuFakeSwitch);
	f_outer = RT_FN(lib, cuFakeOuter);
	f_scale = RT_FN(lib, cuFakeScale);
	main_tid = (pid_t)syscall(SYS_gettid);
	sem_init(&handled, 0, 0);

	/* One traced call of each kind before any signal (a thread's first traced call creates the
	 * agent's state for it; that is not what this test is about). Counted in the totals. */
	static volatile long bad; /* survives siglongjmp */
	if (thunk(1) != 4 || muld(2.0, 0.5) != 1.5)
		bad++;

	if (altstack) {
		stack_t ss = {.ss_sp = malloc(1 << 16), .ss_size = 1 << 16, .ss_flags = 0};
		if (!ss.ss_sp || sigaltstack(&ss, NULL) != 0) {
			perror("rt_signal: sigaltstack");
			return 2;
		}
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART | (altstack ? SA_ONSTACK : 0);
	sigemptyset(&sa.sa_mask);
	if (sigaction(itimer ? SIGALRM : SIGUSR1, &sa, NULL) != 0) {
		perror("rt_signal: sigaction");
		return 2;
	}

	pthread_t th;
	if (itimer) {
		struct itimerval it = {{0, interval_us}, {0, interval_us}};
		setitimer(ITIMER_REAL, &it, NULL);
	} else if (pthread_create(&th, NULL, sender, NULL) != 0) {
		perror("rt_signal: pthread_create");
		return 2;
	}

	static volatile double t0;
	t0 = now_s();
	static volatile long i; /* survives siglongjmp */
	if (jump_mode) {
		/* The handler comes back here with its signal still blocked (the mask is not saved, so
		 * siglongjmp leaves it as it is), and only here, its frames gone, is the signal unblocked.
		 * Had siglongjmp restored the mask, it would unblock the signal on the handler's stack
		 * before jumping: a signal pending by then (the sender's next one, sent as soon as the
		 * handler posted) runs the handler again on top of it, which does the same, until the
		 * stack overflows. That crashed rt_signal in about half its runs, with cuhook or without. */
		if (sigsetjmp(loop_env, 0)) {
			sigset_t sig;
			sigemptyset(&sig);
			sigaddset(&sig, itimer ? SIGALRM : SIGUSR1);
			sigprocmask(SIG_UNBLOCK, &sig, NULL);
		}
		jump_armed = 1;
	}
	/* max_iters caps the loop once min_signals came, not before: on an idle machine 500,000
	 * iterations once went by with 4,905 of 5,000 signals handled. The 10 s bound below ends it
	 * either way. */
	for (; (i < iters && i < max_iters) || handler_runs < min_signals; i++) {
		long k = i;
		if (thunk((int)k) != 7 * (int)k - 3)
			bad++;
		if (muld((double)k, 0.5) != (double)k * 0.5 + 0.5)
			bad++;
		for (long s = 0; s < spin; s++)
			__builtin_ia32_pause();
		if ((k & 1023) == 0 && k >= iters && now_s() - t0 > 10.0)
			break;
	}
	if (jump_mode)
		jump_mode = 0; /* a signal still in flight returns normally */
	if (itimer) {
		struct itimerval off = {{0, 0}, {0, 0}};
		setitimer(ITIMER_REAL, &off, NULL);
	} else {
		atomic_store(&done, 1);
		pthread_join(th, NULL);
	}
	/* no signal is delivered from here on: the counts are final */
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, itimer ? SIGALRM : SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, NULL);

	for (long k = 0; k < n_final; k++)
		if (constc() != 999)
			bad++;

	bad += handler_bad;
	printf("main_iters %ld\nhandler_runs %ld\nfinal %ld\nbad %ld\n", i + 1, (long)handler_runs,
	       n_final, bad);
	return bad ? 3 : 0;
}
