/* inj_prepare: the agent's prepare/start split, driven through its API from inside one process
 * (no injector), for the cases an attach cannot produce on demand:
 *
 *   inj_prepare AGENT LIBCUDA DIR
 *
 *   gap      prepare; LIBCUDA is dlopened; start (CUHOOK_START_THREADS_STOPPED) must refuse with
 *            EAGAIN: a library was loaded since the preparation, which the start cannot scan for
 *            (that takes the loader's lock) and must not miss; prepare again, start: 10 calls
 *            of cuFakeConstA, stop. DIR/gap.bin must hold the 10 calls.
 *   discard  prepare DIR/a.bin, then prepare DIR/b.bin (other options: a.bin's preparation is
 *            discarded), then stop (b.bin's is): the open files of the process are as before.
 *   again    prepare, start, 5 calls, stop: DIR/again.bin holds 5 calls.
 *
 * The only other thread while it starts is the agent's own writer: every thread of the program
 * is stopped, as CUHOOK_START_THREADS_STOPPED promises. Prints one line per step ("gap eagain
 * E active A start S", "discard fds B A", "again start S") and exits 0, or 1 if a call into the
 * API failed outright. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuhook_agent.h"

static int (*prepare)(const char *);
static int (*start)(const char *, unsigned);
static int (*stop)(unsigned);
static int (*active)(void);
static const char *(*last_error)(void);

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

static void options(char *buf, size_t len, const char *dir, const char *file)
{
	snprintf(buf, len, "output=%s/%s;lib=libcuda.so*;funcs=cuFakeConst*;count=", dir, file);
}

static int calls(void *lib, int n)
{
	int (*f)(void) = (int (*)(void))dlsym(lib, "cuFakeConstA");
	int wrong = 0;
	for (int i = 0; i < n; i++)
		wrong += f() != 0;
	return wrong;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: inj_prepare AGENT LIBCUDA DIR\n");
		return 2;
	}
	setenv("CUHOOK_DISABLE", "1", 1); /* no start of its own in the constructor */
	void *agent = dlopen(argv[1], RTLD_NOW);
	if (!agent) {
		fprintf(stderr, "inj_prepare: %s\n", dlerror());
		return 1;
	}
	prepare = (int (*)(const char *))dlsym(agent, "cuhook_agent_prepare");
	start = (int (*)(const char *, unsigned))dlsym(agent, "cuhook_agent_start");
	stop = (int (*)(unsigned))dlsym(agent, "cuhook_agent_stop");
	active = (int (*)(void))dlsym(agent, "cuhook_agent_active");
	last_error = (const char *(*)(void))dlsym(agent, "cuhook_agent_last_error");
	if (!prepare || !start || !stop || !active || !last_error)
		return 1;
	char o[4096], o2[4096];

	options(o, sizeof(o), argv[3], "gap.bin");
	if (prepare(o) != 0)
		return 1;
	void *lib = dlopen(argv[2], RTLD_NOW);
	if (!lib)
		return 1;
	int refused = start(o, CUHOOK_START_THREADS_STOPPED);
	printf("gap eagain %d active %d (%s)", refused == -EAGAIN, active(), last_error());
	if (prepare(o) != 0)
		return 1;
	int started = start(o, CUHOOK_START_THREADS_STOPPED);
	printf(" start %d wrong %d\n", started, calls(lib, 10));
	if (stop(CUHOOK_START_THREADS_STOPPED) != 0)
		return 1;

	int before = open_fds();
	options(o, sizeof(o), argv[3], "a.bin");
	options(o2, sizeof(o2), argv[3], "b.bin");
	if (prepare(o) != 0 || prepare(o2) != 0)
		return 1;
	int during = open_fds();
	int stopped = stop(CUHOOK_START_THREADS_STOPPED);
	printf("discard fds %d %d %d stop %d active %d\n", before, during, open_fds(), stopped, active());

	options(o, sizeof(o), argv[3], "again.bin");
	if (prepare(o) != 0)
		return 1;
	started = start(o, CUHOOK_START_THREADS_STOPPED);
	printf("again start %d wrong %d\n", started, calls(lib, 5));
	return stop(CUHOOK_START_THREADS_STOPPED) != 0;
}
