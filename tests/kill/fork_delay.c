/* Preloaded into cuhook (never into the program it runs) by test_kill.py's run_orphan case: the
 * parent side of fork() says "fork_delay: child PID" on stderr and then sleeps
 * KILL_FORK_DELAY_MS milliseconds before returning, so that the harness can kill cuhook run at
 * a known point between fork and PTRACE_SEIZE of the child, every time instead of in one run of
 * ten. The constructor takes LD_PRELOAD out of cuhook's environment: the program that cuhook
 * execs inherits that environment and must run without this library. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long delay_ms;

__attribute__((constructor)) static void setup(void)
{
	const char *d = getenv("KILL_FORK_DELAY_MS");
	delay_ms = d ? atol(d) : 0;
	unsetenv("LD_PRELOAD");
	unsetenv("KILL_FORK_DELAY_MS");
}

pid_t fork(void)
{
	pid_t (*real_fork)(void) = (pid_t (*)(void))dlsym(RTLD_NEXT, "fork");
	pid_t pid = real_fork();
	if (pid > 0) {
		char line[64];
		int n = snprintf(line, sizeof(line), "fork_delay: child %d\n", (int)pid);
		if (write(2, line, (size_t)n) < 0) {
			/* the harness waits for this line; nothing else to do */
		}
		struct timespec t = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
		while (nanosleep(&t, &t) != 0)
			;
	}
	return pid;
}
