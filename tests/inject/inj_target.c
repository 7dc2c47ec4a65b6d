/* inj_target: the process the injection tests attach to and run. One program, many modes, each
 * printing "ready" (flushed) once it is in the state the test wants to catch it in:
 *
 *   loop THREADS          THREADS workers call libinj_work in rounds; each round's checksum
 *                         must equal the first one. Stops at a line (or EOF) on stdin; prints
 *                         "rounds R mismatches M checksum C" (C is fixed for a given THREADS)
 *   read THREADS          THREADS-1 workers as in loop; the main thread blocks in read(0) and
 *                         prints "read: LINE" (THREADS=1: the only thread is the one in read)
 *   sleep MS              one thread in nanosleep(MS); prints "slept T ms" (measured)
 *   join                  a second thread blocks in read(0) and prints "read: LINE"; the main
 *                         thread waits for it in pthread_join (a futex): the injector then makes
 *                         its remote calls on the reader, never on the main thread
 *   exit N | kill SIG     exit with N / die by signal SIG (number)
 *   sigint                count SIGINTs; 300 ms after the first, print "sigint N" and exit 3
 *   echo                  copy stdin to stdout
 *   park | parkback       a thread spins on a 2-byte `jmp .` (inj_park_from / inj_back_from);
 *                         the dummy agent's fixup_ip maps it, at start / at stop, to code that
 *                         returns 42: prints "moved 42" once the thread was moved
 *   seccomp THREADS       loop, under a seccomp filter that traps openat (SIGSYS)
 *   seccomp-errno THREADS loop, under a seccomp filter that fails openat with EACCES
 *                         (SECCOMP_RET_ERRNO: no signal, the call just fails)
 *   nodump THREADS        loop, not dumpable (prctl(PR_SET_DUMPABLE, 0))
 *   lockheld LIB THREADS  loop, plus a thread stuck inside dlopen(LIB) (the loader lock held)
 *   traced [NAME]         a child process ptraces us (as a debugger would), named NAME if given
 *                         (PR_SET_NAME); then sleeps
 *   ignsegv               SIGSEGV ignored; then sleeps
 *   realpark LIB          a thread blocked in LIB's cuInjRead (a read whose syscall is within
 *                         the function's first bytes) on a pipe; a line on stdin feeds it a
 *                         byte ("first N C"), then it blocks in it again ("ready2"); the next
 *                         line feeds that one ("second N C")
 *   spawn THREADS [LIB]   THREADS threads create 8 threads and join them, round after round
 *                         (glibc's stack cache lock taken all the time, and held while stacks
 *                         are unmapped); LIB, if given, is dlopened first. Stops at a line on
 *                         stdin; prints "spawned N wrong W" (W: threads not created, or whose
 *                         join did not return their argument)
 *   phdr THREADS [LIB]    THREADS threads walk the loaded objects with dl_iterate_phdr, walk
 *                         after walk (the loader's lock taken all the time); prints "walks N
 *                         missed M" (M: walks that did not find the program itself)
 *
 * With INJ_THREAD_NAME=NAME in the environment, every thread the target starts names itself NAME
 * (the injector must tell the agent's threads from the program's by id, not by name). */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/filter.h>
#include <link.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint64_t inj_work(uint64_t x);

static const char *thread_name; /* INJ_THREAD_NAME */

static void name_self(void)
{
	if (thread_name)
		prctl(PR_SET_NAME, thread_name);
}

/* ---- workers --------------------------------------------------------------------------------- */

#define ROUND 20000

static atomic_int stop_workers;
static atomic_long rounds_done, mismatches;
static atomic_int first_done; /* workers that have their first round's checksum */

static void *worker(void *arg)
{
	name_self();
	uint64_t seed = (uint64_t)(uintptr_t)arg * 1000003u, first = 0;
	for (long r = 0; !atomic_load(&stop_workers); r++) {
		uint64_t acc = 0;
		for (uint64_t i = 0; i < ROUND; i++) {
			acc += inj_work(seed + i);
			if ((i & 4095) == 0) {
				/* now and then a system call, so that an attach finds threads in the kernel */
				struct timespec ts = {0, 20000};
				nanosleep(&ts, NULL);
			}
		}
		if (r == 0) {
			first = acc;
			atomic_fetch_add(&first_done, 1);
		} else if (acc != first)
			atomic_fetch_add(&mismatches, 1);
		atomic_fetch_add(&rounds_done, 1);
	}
	return (void *)(uintptr_t)first;
}

static pthread_t workers[64];
static int nworkers;

static void start_workers(int n)
{
	nworkers = n < 64 ? n : 64;
	for (int i = 0; i < nworkers; i++)
		pthread_create(&workers[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	/* every worker has finished one round: the checksums exist before anyone attaches (counted
	 * per worker: on a loaded machine one worker may do two rounds before another starts) */
	while (atomic_load(&first_done) < nworkers)
		usleep(1000);
}

static uint64_t stop_and_join(void)
{
	atomic_store(&stop_workers, 1);
	uint64_t sum = 0;
	for (int i = 0; i < nworkers; i++) {
		void *r;
		pthread_join(workers[i], &r);
		sum = sum * 31 + (uint64_t)(uintptr_t)r;
	}
	return sum;
}

static void ready(void)
{
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
}

static int loop_until_stdin(int threads)
{
	start_workers(threads);
	ready();
	char line[256];
	if (!fgets(line, sizeof(line), stdin))
		line[0] = 0;
	uint64_t sum = stop_and_join();
	printf("rounds %ld mismatches %ld checksum %016" PRIx64 "\n", atomic_load(&rounds_done),
	       atomic_load(&mismatches), sum);
	fflush(stdout);
	return 0;
}

/* ---- park: a thread inside the first bytes of a "function" ----------------------------------- */

/* inj_park_from is 2 bytes that jump to themselves: a thread calling it stays at exactly that
 * address, as a thread stopped at the first instruction of a function the agent patches. The
 * dummy agent's fixup_ip maps inj_park_from to inj_park_to (its "relocated copy"). */
__asm__(".text\n"
        ".globl inj_park_from\n.type inj_park_from,@function\ninj_park_from:\n jmp inj_park_from\n"
        ".globl inj_park_to\n.type inj_park_to,@function\ninj_park_to:\n mov $42, %eax\n ret\n"
        ".globl inj_back_from\n.type inj_back_from,@function\ninj_back_from:\n jmp inj_back_from\n"
        ".globl inj_back_to\n.type inj_back_to,@function\ninj_back_to:\n mov $42, %eax\n ret\n");
int inj_park_from(void);
int inj_back_from(void);

static void *parked(void *arg)
{
	int (*fn)(void) = arg;
	name_self();
	return (void *)(uintptr_t)fn();
}

static int park(int (*fn)(void))
{
	pthread_t t;
	pthread_create(&t, NULL, parked, (void *)fn);
	usleep(20000); /* let it reach the loop */
	ready();
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 20;
	void *r;
	if (pthread_timedjoin_np(t, &r, &dl) != 0) {
		printf("stuck\n");
		fflush(stdout);
		_exit(1);
	}
	printf("moved %d\n", (int)(uintptr_t)r);
	return 0;
}

/* ---- the rest ---------------------------------------------------------------------------------- */

static atomic_int sigints;
static void on_sigint(int sig)
{
	(void)sig;
	atomic_fetch_add(&sigints, 1);
}

volatile int inj_ctor_running; /* set by libinj_slowctor.so's constructor */

static void *stuck_dlopen(void *lib)
{
#ifndef INJ_TARGET_STATIC /* (static glibc warns about any dlopen) */
	dlopen(lib, RTLD_NOW);
#endif
	return NULL;
}

/* openat gets `verdict` (SECCOMP_RET_TRAP, or SECCOMP_RET_ERRNO | errno), the rest is allowed. */
static int install_seccomp(unsigned verdict)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, verdict),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp");
		return -1;
	}
	return 0;
}

static void *line_reader(void *arg)
{
	(void)arg;
	char buf[256];
	ssize_t r = read(0, buf, sizeof(buf) - 1);
	buf[r > 0 ? r : 0] = 0;
	printf("read: %s", buf);
	fflush(stdout);
	return NULL;
}

static ssize_t (*inj_read)(int, void *, size_t);
static int park_pipe[2];
static atomic_int park_phase;

static void *park_reader(void *arg)
{
	(void)arg;
	name_self();
	char c = 0;
	ssize_t r = inj_read(park_pipe[0], &c, 1);
	printf("first %zd %c\n", r, c);
	fflush(stdout);
	atomic_store(&park_phase, 1);
	r = inj_read(park_pipe[0], &c, 1);
	printf("second %zd %c\n", r, c);
	fflush(stdout);
	return NULL;
}

static int real_park(const char *lib)
{
#ifndef INJ_TARGET_STATIC
	void *h = dlopen(lib, RTLD_NOW);
	inj_read = h ? (ssize_t(*)(int, void *, size_t))dlsym(h, "cuInjRead") : NULL;
#endif
	if (!inj_read || pipe(park_pipe))
		return 1;
	pthread_t t;
	pthread_create(&t, NULL, park_reader, NULL);
	usleep(20000); /* it is inside the read now */
	ready();
	char line[64];
	if (!fgets(line, sizeof(line), stdin) || write(park_pipe[1], "A", 1) != 1)
		return 1;
	while (!atomic_load(&park_phase))
		usleep(1000);
	usleep(20000);
	printf("ready2\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin) || write(park_pipe[1], "B", 1) != 1)
		return 1;
	pthread_join(t, NULL);
	return 0;
}

/* ---- glibc's internal locks taken all the time: spawn, phdr ----------------------------------- */

static atomic_long lock_rounds, lock_wrong;

static void *spawned_child(void *arg)
{
	return arg;
}

/* Bursts of threads: more stacks at once than glibc's stack cache keeps (40 MiB), so that
 * joining them unmaps stacks with the cache's lock held, as a program with many short-lived
 * threads does. */
#define SPAWN_BURST 8

static void *spawner(void *arg)
{
	(void)arg;
	for (uintptr_t r = 1; !atomic_load(&stop_workers); r += SPAWN_BURST) {
		pthread_t t[SPAWN_BURST];
		int made = 0;
		for (; made < SPAWN_BURST; made++)
			if (pthread_create(&t[made], NULL, spawned_child, (void *)(r + made)) != 0)
				break;
		for (int k = 0; k < made; k++) {
			void *ret = NULL;
			if (pthread_join(t[k], &ret) != 0 || ret != (void *)(r + k))
				atomic_fetch_add(&lock_wrong, 1);
		}
		if (made < SPAWN_BURST)
			atomic_fetch_add(&lock_wrong, 1);
		atomic_fetch_add(&lock_rounds, made);
	}
	return NULL;
}

int main(int argc, char **argv);

/* Finds the program itself in the walk (the object one of whose segments holds main). */
static int phdr_found(struct dl_phdr_info *info, size_t size, void *found)
{
	(void)size;
	uintptr_t m = (uintptr_t)main;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && m >= info->dlpi_addr + ph->p_vaddr &&
		    m < info->dlpi_addr + ph->p_vaddr + ph->p_memsz)
			*(int *)found = 1;
	}
	return 0;
}

static void *phdr_walker(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_workers)) {
		int found = 0;
		dl_iterate_phdr(phdr_found, &found);
		if (!found)
			atomic_fetch_add(&lock_wrong, 1);
		atomic_fetch_add(&lock_rounds, 1);
	}
	return NULL;
}

static int lock_takers(void *(*fn)(void *), int threads, const char *lib, const char *what, const char *wrong)
{
#ifndef INJ_TARGET_STATIC
	if (lib && !dlopen(lib, RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "inj_target: %s\n", dlerror());
		return 1;
	}
#endif
	nworkers = threads < 64 ? threads : 64;
	for (int i = 0; i < nworkers; i++)
		pthread_create(&workers[i], NULL, fn, NULL);
	while (atomic_load(&lock_rounds) < 100 * nworkers)
		usleep(1000);
	ready();
	char line[256];
	if (!fgets(line, sizeof(line), stdin))
		line[0] = 0;
	stop_and_join();
	printf("%s %ld %s %ld\n", what, atomic_load(&lock_rounds), wrong, atomic_load(&lock_wrong));
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: inj_target MODE [ARGS]\n");
		return 2;
	}
	const char *m = argv[1];
	thread_name = getenv("INJ_THREAD_NAME");
	int n = argc > 2 ? atoi(argv[2]) : 0;
	if (!strcmp(m, "loop"))
		return loop_until_stdin(n > 0 ? n : 4);
	if (!strcmp(m, "read")) {
		if (n > 1)
			start_workers(n - 1);
		ready();
		char buf[256];
		ssize_t r = read(0, buf, sizeof(buf) - 1);
		int e = errno;
		if (n > 1)
			stop_and_join();
		if (r < 0) {
			printf("read failed: %s\n", strerror(e));
			return 1;
		}
		buf[r] = 0;
		printf("read: %s", buf);
		return 0;
	}
	if (!strcmp(m, "sleep")) {
		ready();
		struct timespec a, b, ts = {n / 1000, (long)(n % 1000) * 1000000};
		clock_gettime(CLOCK_MONOTONIC, &a);
		int r = nanosleep(&ts, NULL);
		clock_gettime(CLOCK_MONOTONIC, &b);
		printf("slept %.1f ms%s\n", (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6,
		       r ? " (interrupted)" : "");
		return 0;
	}
	if (!strcmp(m, "join")) {
		pthread_t t;
		pthread_create(&t, NULL, line_reader, NULL);
		usleep(20000); /* it is inside the read now */
		ready();
		pthread_join(t, NULL);
		return 0;
	}
	if (!strcmp(m, "exit"))
		return n;
	if (!strcmp(m, "kill")) {
		signal(n, SIG_DFL);
		raise(n);
		return 99;
	}
	if (!strcmp(m, "sigint")) {
		signal(SIGINT, on_sigint);
		ready();
		while (!atomic_load(&sigints))
			usleep(1000);
		usleep(300000);
		printf("sigint %d\n", atomic_load(&sigints));
		return 3;
	}
	if (!strcmp(m, "echo")) {
		char buf[4096];
		ssize_t r;
		while ((r = read(0, buf, sizeof(buf))) > 0)
			if (write(1, buf, (size_t)r) != r)
				return 1;
		return 0;
	}
	if (!strcmp(m, "park"))
		return park(inj_park_from);
	if (!strcmp(m, "parkback"))
		return park(inj_back_from);
	if (!strcmp(m, "seccomp") || !strcmp(m, "seccomp-errno")) {
		if (install_seccomp(!strcmp(m, "seccomp") ? SECCOMP_RET_TRAP : SECCOMP_RET_ERRNO | EACCES) < 0)
			return 1;
		return loop_until_stdin(n > 0 ? n : 2);
	}
	if (!strcmp(m, "nodump")) {
		if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
			return 1;
		return loop_until_stdin(n > 0 ? n : 2);
	}
	if (!strcmp(m, "lockheld")) {
		pthread_t t;
		pthread_create(&t, NULL, stuck_dlopen, argv[2]);
		while (!inj_ctor_running)
			usleep(1000);
		int r = loop_until_stdin(argc > 3 ? atoi(argv[3]) : 2);
		fflush(stdout);
		_exit(r); /* exit() would wait for the loader lock in its destructors */
	}
	if (!strcmp(m, "traced")) {
		pid_t parent = getpid();
		int p[2];
		if (pipe(p))
			return 1;
		if (fork() == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (argc > 2)
				prctl(PR_SET_NAME, argv[2]);
			if (ptrace(PTRACE_SEIZE, parent, 0, 0) != 0)
				perror("PTRACE_SEIZE");
			if (write(p[1], "x", 1) != 1)
				_exit(1);
			for (;;)
				pause();
		}
		char c;
		if (read(p[0], &c, 1) != 1)
			return 1;
		ready();
		sleep(60);
		return 0;
	}
	if (!strcmp(m, "realpark"))
		return real_park(argv[2]);
	if (!strcmp(m, "spawn"))
		return lock_takers(spawner, n > 0 ? n : 4, argc > 3 ? argv[3] : NULL, "spawned", "wrong");
	if (!strcmp(m, "phdr"))
		return lock_takers(phdr_walker, n > 0 ? n : 4, argc > 3 ? argv[3] : NULL, "walks", "missed");
	if (!strcmp(m, "ignsegv")) {
		signal(SIGSEGV, SIG_IGN);
		ready();
		sleep(60);
		return 0;
	}
	fprintf(stderr, "inj_target: unknown mode %s\n", m);
	return 2;
}
