/* rt_ownthreads: the agent's list of its own threads (cuhook_agent_threads, cuhook_agent.h), which
 * the injector reads to leave them running when it stops the process.
 *
 * Loads the agent (constructor mode: it starts, with its writer), then prints what the list
 * holds: in this process; in a fork child (whose copy must not list the parent's threads, which
 * the child does not have; with CUHOOK_FOLLOW=1 the child starts a writer of its own, which it
 * must list); and after cuhook_agent_stop() (the writer is gone: its slot too). A listed id
 * is described as "writer" when it is a thread of the process reading the list and is named
 * cuhook-writer, "stranger" otherwise.
 *
 * usage: rt_ownthreads --agent PATH LIBCUDA
 * prints: "started K" "started_writers W" "started_names N" (after the start: K ids listed, W
 * of them writers of this process, N its kernel-names threads), "child K W" (the same in a fork child), "stopped K" (after the stop) */
#include "robust_common.h"

#include "cuhook_agent.h"

#include <sys/wait.h>
#include <unistd.h>

static const struct cuhook_agent_threads *list;

/* How many ids are listed, and how many of them are this process's writer threads (names: its
 * kernel-names threads, cuhook-names). */
static int names;
static void count(int *listed, int *writers)
{
	*listed = *writers = names = 0;
	for (int i = 0; i < CUHOOK_AGENT_THREADS_MAX; i++) {
		int tid = __atomic_load_n(&list->tid[i], __ATOMIC_ACQUIRE);
		if (!tid)
			continue;
		(*listed)++;
		char p[64], comm[32] = "";
		snprintf(p, sizeof(p), "/proc/self/task/%d/comm", tid);
		FILE *f = fopen(p, "re");
		if (f && fgets(comm, sizeof(comm), f) && strcmp(comm, "cuhook-writer\n") == 0)
			(*writers)++;
		else if (!strcmp(comm, "cuhook-names\n"))
			names++;
		if (f)
			fclose(f);
	}
}

int main(int argc, char **argv)
{
	const char *agent = rt_opt(argc, argv, "--agent");
	if (argc < 2 || !agent) {
		fprintf(stderr, "usage: rt_ownthreads --agent PATH LIBCUDA\n");
		return 2;
	}
	void *lib = rt_load(agent, argv[argc - 1]);
	void *a = dlopen(agent, RTLD_NOW | RTLD_NOLOAD);
	list = a ? dlsym(a, "cuhook_agent_threads") : NULL;
	int (*stop)(unsigned) = a ? (int (*)(unsigned))dlsym(a, "cuhook_agent_stop") : NULL;
	if (!list || !stop || list->magic != CUHOOK_AGENT_THREADS_MAGIC) {
		fprintf(stderr, "rt_ownthreads: the agent exports no cuhook_agent_threads\n");
		return 2;
	}
	__typeof__(cuFakeInner) *inner = RT_FN(lib, cuFakeInner);
	if (inner(1) != (1 ^ 0x1234))
		return 3;
	int k, w;
	count(&k, &w);
	printf("started %d\nstarted_writers %d\nstarted_names %d\n", k, w, names);
	fflush(stdout);
	pid_t child = fork();
	if (child == 0) {
		count(&k, &w);
		printf("child %d %d\n", k, w);
		fflush(stdout);
		_exit(inner(2) == (2 ^ 0x1234) ? 0 : 3);
	}
	int st;
	if (child < 0 || waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 3;
	stop(0);
	count(&k, &w);
	printf("stopped %d\n", k);
	return 0;
}
