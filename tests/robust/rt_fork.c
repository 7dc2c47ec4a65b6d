/* rt_fork: fork while tracing. Each process calls functions the others never call, so a trace
 * tells whose calls it holds:
 *   parent, before the forks:  cuFakeInner(i)          x BEFORE   (i ^ 0x1234)
 *   worker threads (parent):   cuFakeSwitch(1, i)      x WORK each (3i), running during the forks
 *   each child:                cuFakeConstB()          x CHILD    (0x5a)
 *                              cuFakeOuter(i)          x CHILD    (((3i) ^ 0x1234) + 7; nested
 *                                                                  cuFakeInner)
 *                              a thread of its own:    cuFakeConstB() x CHILD
 *                              then exit() (atexit handlers and the agent's destructor run)
 *   parent, after the forks:   cuFakeConstC()          x AFTER    (999)
 * The parent waits for each child and checks its exit status (0: every result right).
 *
 * usage: rt_fork [--agent PATH] [--forks F] [--threads T] [--before N] [--work N] [--child N]
 *                [--after N] LIBCUDA
 * prints: "before N", "work N" (all threads), "after N", "children_ok F", "bad N"; exit 3 if a
 * result or a child was wrong. */
#include "robust_common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

static void *lib;
static long n_work, n_child;
static atomic_long bad;
static atomic_int workers_done;

static void *worker(void *arg)
{
	(void)arg;
	__typeof__(cuFakeSwitch) *sw = RT_FN(lib, cuFakeSwitch);
	for (long i = 0; i < n_work; i++)
		if (sw(1, (int)i) != 3 * (int)i)
			atomic_fetch_add(&bad, 1);
	atomic_fetch_add(&workers_done, 1);
	return NULL;
}

static void *child_thread(void *arg)
{
	long *wrong = arg;
	__typeof__(cuFakeConstB) *cb = RT_FN(lib, cuFakeConstB);
	for (long i = 0; i < n_child; i++)
		if (cb() != 0x5a)
			(*wrong)++;
	return NULL;
}

static int child_main(void)
{
	long wrong = 0, twrong = 0;
	__typeof__(cuFakeConstB) *cb = RT_FN(lib, cuFakeConstB);
	__typeof__(cuFakeOuter) *outer = RT_FN(lib, cuFakeOuter);
	for (long i = 0; i < n_child; i++) {
		if (cb() != 0x5a)
			wrong++;
		if (outer((int)i) != (((3 * (int)i) ^ 0x1234) + 7))
			wrong++;
	}
	pthread_t t;
	if (pthread_create(&t, NULL, child_thread, &twrong) != 0)
		return 2;
	pthread_join(t, NULL);
	return wrong || twrong ? 3 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rt_fork [--agent PATH] [--forks F] ... LIBCUDA\n");
		return 2;
	}
	const char *agent = rt_opt(argc, argv, "--agent");
	long forks = rt_opt_long(argc, argv, "--forks", 8);
	long nthreads = rt_opt_long(argc, argv, "--threads", 2);
	long n_before = rt_opt_long(argc, argv, "--before", 1000);
	long n_after = rt_opt_long(argc, argv, "--after", 1000);
	n_work = rt_opt_long(argc, argv, "--work", 200000);
	n_child = rt_opt_long(argc, argv, "--child", 500);

	lib = rt_load(agent, argv[argc - 1]);
	__typeof__(cuFakeInner) *inner = RT_FN(lib, cuFakeInner);
	__typeof__(cuFakeConstC) *cc = RT_FN(lib, cuFakeConstC);

	for (long i = 0; i < n_before; i++)
		if (inner((int)i) != ((int)i ^ 0x1234))
			atomic_fetch_add(&bad, 1);

	pthread_t *ts = calloc((size_t)nthreads + 1, sizeof(*ts));
	for (long k = 0; k < nthreads; k++)
		if (pthread_create(&ts[k], NULL, worker, NULL) != 0) {
			perror("rt_fork: pthread_create");
			return 2;
		}

	long children_ok = 0;
	for (long f = 0; f < forks; f++) {
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0) {
			perror("rt_fork: fork");
			return 2;
		}
		if (pid == 0)
			exit(child_main());
		int st;
		if (waitpid(pid, &st, 0) != pid) {
			perror("rt_fork: waitpid");
			return 2;
		}
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			children_ok++;
		else
			fprintf(stderr, "rt_fork: child %ld: %s %d\n", f,
			        WIFEXITED(st) ? "exit status" : "killed by signal",
			        WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	}
	for (long k = 0; k < nthreads; k++)
		pthread_join(ts[k], NULL);
	free(ts);

	for (long i = 0; i < n_after; i++)
		if (cc() != 999)
			atomic_fetch_add(&bad, 1);

	printf("before %ld\nwork %ld\nafter %ld\nchildren_ok %ld\nbad %ld\n", n_before,
	       n_work * nthreads, n_after, children_ok, (long)atomic_load(&bad));
	return atomic_load(&bad) || children_ok != forks ? 3 : 0;
}
