/* inj_follow: a process tree for `cuhook run --follow` (tests/inject/test_inject.py, follow_*).
 * Every process calls functions of the stand-in libcuda that no other process of the tree calls,
 * so a trace tells whose calls it holds, and checks every result itself.
 *
 *   calls LIB FN N [EXIT]      FN (cuFakeConstA/B/C) N times, then exit EXIT (default 0)
 *   fork LIB N M [EXIT]        cuFakeConstA N times; fork: the child calls cuFakeConstB M times
 *                              and, on a second thread, cuFakeConstC M times, then exits 0;
 *                              the parent waits for it, calls cuFakeConstA N times more, exits
 *                              EXIT (3 if the child failed)
 *   quit LIB N M [EXIT]        cuFakeConstA N times; fork: the child calls cuFakeConstB M times and
 *                              ends at once with _exit(0) (no destructor, no exit handlers: as
 *                              Python's os._exit); the parent posix_spawns a program that does
 *                              not exist (its vfork child runs in the parent's memory and calls
 *                              _exit(127)), calls cuFakeConstA N times more and ends with
 *                              _exit(EXIT) (3 if something failed)
 *   exec LIB N K PROG ARGS...  cuFakeConstA N times; then a fork child that calls cuFakeConstC K
 *                              times, waits 300 ms (its writer writes them) and execs PROG ARGS;
 *                              and a posix_spawn (vfork) of PROG ARGS; waits for both, exits 0 if
 *                              both exited 0 (else 3)
 *                            With INJ_FOLLOW_PLANT=STEM in the environment, the fork child
 *                            first plants what `cuhook run --follow` must not clobber when it
 *                            sets the child's earlier trace aside: STEM.PID-1.bin, a link to
 *                            the missing STEM.planted, and STEM.PID-2.bin, a file holding
 *                            "planted" (PID: the child's)
 * Prints "pid P role R" for each process (roles: calls, parent, child, execparent). */
#include <dlfcn.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void *lib;
static int wrong;

typedef int (*const_fn)(void);

static const_fn fn(const char *name)
{
	const_fn f = (const_fn)(uintptr_t)dlsym(lib, name);
	if (!f) {
		fprintf(stderr, "inj_follow: %s: %s\n", name, dlerror());
		exit(2);
	}
	return f;
}

static int expect(const char *name)
{
	return !strcmp(name, "cuFakeConstA") ? 0 : !strcmp(name, "cuFakeConstB") ? 0x5a : 999;
}

static void call(const char *name, long n)
{
	const_fn f = fn(name);
	int want = expect(name);
	for (long i = 0; i < n; i++)
		if (f() != want)
			wrong++;
}

static void role(const char *r)
{
	printf("pid %d role %s\n", (int)getpid(), r);
	fflush(stdout);
}

/* exec mode's INJ_FOLLOW_PLANT (see the top) */
static void plant(const char *stem)
{
	char link[4096], target[4096], file[4096];
	snprintf(link, sizeof(link), "%s.%d-1.bin", stem, (int)getpid());
	snprintf(target, sizeof(target), "%s.planted", stem);
	snprintf(file, sizeof(file), "%s.%d-2.bin", stem, (int)getpid());
	FILE *f = fopen(file, "w");
	if (symlink(target, link) != 0 || !f || fputs("planted\n", f) < 0 || fclose(f) != 0) {
		perror("inj_follow: plant");
		_exit(2);
	}
}

static long child_m;

static void *child_thread(void *arg)
{
	(void)arg;
	call("cuFakeConstC", child_m);
	return NULL;
}

/* The parent's part before a fork: cuFakeConstA n times; then the child calls cuFakeConstB m
 * times. Returns the child's pid in the parent, 0 in the child. */
static pid_t parent_then_fork(long n, long m)
{
	role("parent");
	call("cuFakeConstA", n);
	fflush(stdout);
	pid_t c = fork();
	if (c < 0)
		exit(2);
	if (c == 0) {
		role("child");
		call("cuFakeConstB", m);
	}
	return c;
}

/* The child exited 0, or this process fails. */
static void wait_ok(pid_t c)
{
	int st;
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		wrong++;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: inj_follow calls|fork|quit|exec LIB ...\n");
		return 2;
	}
	const char *mode = argv[1];
	lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "inj_follow: %s\n", dlerror());
		return 2;
	}
	if (!strcmp(mode, "calls") && argc >= 5) {
		role("calls");
		call(argv[3], atol(argv[4]));
		return wrong ? 3 : argc > 5 ? atoi(argv[5]) : 0;
	}
	if (!strcmp(mode, "fork") && argc >= 5) {
		long n = atol(argv[3]);
		child_m = atol(argv[4]);
		pid_t c = parent_then_fork(n, child_m);
		if (c == 0) {
			pthread_t t;
			if (pthread_create(&t, NULL, child_thread, NULL) != 0)
				_exit(2);
			pthread_join(t, NULL);
			exit(wrong ? 3 : 0); /* exit(): the agent's destructor closes the child's trace */
		}
		wait_ok(c);
		call("cuFakeConstA", n);
		return wrong ? 3 : argc > 5 ? atoi(argv[5]) : 0;
	}
	if (!strcmp(mode, "quit") && argc >= 5) {
		long n = atol(argv[3]), m = atol(argv[4]);
		pid_t c = parent_then_fork(n, m);
		if (c == 0)
			_exit(wrong ? 3 : 0);
		wait_ok(c);
		char *missing[] = {"/nonexistent/cuhook-test-program", NULL};
		pid_t s;
		int st;
		if (posix_spawn(&s, missing[0], NULL, NULL, missing, environ) == 0 && (waitpid(s, &st, 0) != s ||
		                                                                       !WIFEXITED(st) || WEXITSTATUS(st) != 127))
			wrong++; /* older glibc reports the failed exec through the child's exit status */
		call("cuFakeConstA", n);
		fflush(stdout);
		_exit(wrong ? 3 : argc > 5 ? atoi(argv[5]) : 0);
	}
	if (!strcmp(mode, "exec") && argc >= 6) {
		long n = atol(argv[3]), k = atol(argv[4]);
		char **prog = argv + 5;
		role("execparent");
		call("cuFakeConstA", n);
		fflush(stdout);
		pid_t c = fork();
		if (c < 0)
			return 2;
		if (c == 0) {
			call("cuFakeConstC", k);
			struct timespec ts = {0, 300000000};
			nanosleep(&ts, NULL);
			if (getenv("INJ_FOLLOW_PLANT"))
				plant(getenv("INJ_FOLLOW_PLANT"));
			execv(prog[0], prog);
			perror("inj_follow: execv");
			_exit(127);
		}
		pid_t s;
		if (posix_spawn(&s, prog[0], NULL, NULL, prog, environ) != 0)
			return 2;
		int st1, st2;
		if (waitpid(c, &st1, 0) != c || waitpid(s, &st2, 0) != s)
			return 2;
		int ok = WIFEXITED(st1) && WEXITSTATUS(st1) == 0 && WIFEXITED(st2) && WEXITSTATUS(st2) == 0;
		return wrong || !ok ? 3 : 0;
	}
	fprintf(stderr, "inj_follow: bad arguments\n");
	return 2;
}
