/* cuhook run without --follow traces the program it starts, not what that program execs: an
 * exec replaces the image, agent included, and the trace ends there without its END block (a
 * shell-script shim such as pyenv's python3 that execs the real interpreter leaves a trace of the
 * shell alone). cuhook cannot see an exec once it has stepped aside (it is no longer the tracer);
 * it looks at the program's executable (/proc/PID/exe) now and then while it waits, and at the
 * end, when the program exited normally and its trace has no END block, says that the program
 * exec'd, naming what it became when it saw that (else "probably": a trace the agent could not
 * write has no END either, and the agent said so), and that --follow traces it. docs/injection.md, "Programs that exec". */
#ifndef CUHOOK_RUN_EXEC_H
#define CUHOOK_RUN_EXEC_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

struct run_exec_watch {
	pid_t pid;
	char first[PATH_MAX]; /* the executable when the watch began ("" unknown) */
	char now[PATH_MAX];   /* the last other one seen ("" none) */
};

/* Right after the start (the agent in, the program running). */
void run_exec_begin(struct run_exec_watch *w, pid_t pid);
/* While the program runs, now and then (cheap: one readlink). */
void run_exec_look(struct run_exec_watch *w);
/* After the program exited normally: its trace at `trace` lacks its END block (exists, is a
 * trace, was not closed)? Then one message on stderr: the exec, and --follow. */
void run_exec_tell(const struct run_exec_watch *w, const char *trace);

#endif
