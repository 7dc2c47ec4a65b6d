/* cuhook run: the program started under ptrace (the spawn sequence of inject.c's comment): fork;
 * the child waits for our word on a pipe, then execs; we seize it, send the word, stop it at its
 * entry point (entry_breakpoint) and put the agent in there (inject_at_entry). With --follow the
 * tree stays ours for cuhook_inject_follow (follow.c). */
#include "inject.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

/* Resume the child until `done` says the stop is the one we want; pass its signals on. 1: got
 * it, 0: the child ended (*status), -1 error. */
static int run_until(pid_t pid, int *status, bool (*done)(pid_t, int, uint64_t), uint64_t arg)
{
	for (;;) {
		int st;
		if (pt_wait(pid, &st, -1) < 0) {
			inj_error("waiting for process %d: %s", pid, strerror(errno));
			return -1;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			*status = st;
			return 0;
		}
		if (done(pid, st, arg))
			return 1;
		int event = st >> 16, sig = WSTOPSIG(st);
		/* Event stops (group-stop reports) and our own SIGCONT are swallowed; any other signal
		 * is the program's and goes on to it. */
		pt_cont(pid, event == 0 && sig != SIGCONT ? sig : 0);
	}
}

static bool is_exec_stop(pid_t pid, int st, uint64_t arg)
{
	return (st >> 16) == PTRACE_EVENT_EXEC;
}

static bool is_entry_report(pid_t pid, int st, uint64_t arg)
{
	return rentry_reached(pid, st, (const struct rentry *)(uintptr_t)arg);
}

/* The child of cuhook_inject_spawn, until its exec. */
static _Noreturn void spawn_child(char *const argv[], const sigset_t *mask, const int go[2])
{
	close(go[1]);
	/* The program gets the signal state it would have without us. */
	int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	for (unsigned i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	char byte;
	ssize_t n;
	while ((n = read(go[0], &byte, 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		_exit(125); /* cuhook died before it could trace us: the program is not run */
	execvp(argv[0], argv);
	int e = errno;
	fprintf(stderr, "cuhook: cannot execute %s: %s\n", argv[0], strerror(e));
	_exit(e == ENOENT ? 127 : 126);
}

pid_t cuhook_inject_spawn(char *const argv[], const struct cuhook_inject_opts *o,
                          struct cuhook_inject_times *t, int *exit_status)
{
	inj_error_clear();
	inj_verbose = o->verbose;
	memset(t, 0, sizeof(*t));
	*exit_status = -1;
	sigset_t old;
	sigprocmask(SIG_SETMASK, NULL, &old);
	inj_block_sigchld();
	if (o->follow)
		follow_begin();

	/* The child waits for a byte on this pipe before it execs: we send it once the child is
	 * seized, so that the exec runs under ptrace. Should we die before, the child reads EOF and
	 * exits: it never waits in a stop of its own, where a dead parent would leave it for good. */
	int go[2];
	if (pipe2(go, O_CLOEXEC) != 0) {
		inj_error("pipe: %s", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		inj_error("fork: %s", strerror(errno));
		close(go[0]);
		close(go[1]);
		return -1;
	}
	if (pid == 0)
		spawn_child(argv, &old, go);
	close(go[0]);
	if (o->spawned)
		*o->spawned = pid;

	/* No EXITKILL: should cuhook die from here on, the program runs on untraced (its entry is
	 * reported by a stub that goes on by itself, remote calls complete by themselves). Before
	 * the seize, the child waits on the pipe and exits unstarted (125) if we die. */
	if (ptrace(PTRACE_SEIZE, pid, 0, INJ_SEIZE_OPTIONS | PTRACE_O_TRACEEXEC) != 0) {
		inj_error("cannot trace the child: %s", strerror(errno));
		close(go[1]);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	char byte = 1;
	ssize_t sent = write(go[1], &byte, 1);
	close(go[1]);
	if (sent != 1) {
		/* the child is gone already: run_until collects its status */
	}
	int r = run_until(pid, exit_status, is_exec_stop, 0);
	if (r <= 0) {
		if (r == 0)
			inj_error("%s could not be executed", argv[0]);
		return -1;
	}

	struct itarget tg;
	target_init(&tg, pid);
	struct rentry entry;
	if (entry_breakpoint(&tg, argv[0], &entry) < 0)
		goto fail;
	pt_cont(pid, 0);
	r = run_until(pid, exit_status, is_entry_report, (uint64_t)(uintptr_t)&entry);
	if (r <= 0) {
		if (r == 0)
			inj_error("%s ended before reaching its entry point", argv[0]);
		target_free(&tg);
		return -1;
	}
	if (inject_at_entry(&tg, &entry, o, t) < 0)
		goto fail;
	uint64_t d0 = inj_now_ns();
	if (o->follow)
		threads_resume_all(&tg, INJ_FOLLOW_OPTIONS); /* still ours: cuhook_inject_follow() */
	else
		threads_detach_all(&tg);
	inject_finish_times(&tg, t, d0);
	target_free(&tg);
	return pid;

fail:
	/* The user asked for a traced run; one without the agent (or with a half-set-up one) is not
	 * what they asked for. Killed while still stopped under ptrace: detached first, it would
	 * run on (its main, its output, its side effects) until the signal arrived. */
	kill(pid, SIGKILL);
	/* Killed: its registers and its pending signals go nowhere; writing them back would only
	 * fail (the process is gone) and warn of a harm that is not one. */
	for (int i = 0; i < tg.nth; i++) {
		tg.th[i].regs_dirty = false;
		tg.th[i].npending = 0;
	}
	threads_detach_all(&tg);
	target_free(&tg);
	waitpid(pid, NULL, __WALL);
	return -1;
}
