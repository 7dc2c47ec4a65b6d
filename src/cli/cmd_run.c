/* cuhook run [-o FILE] [--funcs GLOBS] [--follow] [options] -- PROG ARGS...
 *
 * Start PROG with the agent in it, then step aside: PROG runs untraced at full speed, with our
 * stdin/stdout/stderr, and our exit status is its. No LD_PRELOAD, no LD_AUDIT, no environment
 * variable: the agent is loaded at PROG's entry point by a remote dlopen (src/inject).
 *
 * --delay SEC, --duration SEC: record only from SEC after the start, for SEC (the agent's
 * delay_ms=, duration_ms=: src/agent/capture_range.h); after the duration the trace is closed
 * and PROG runs on untraced.
 *
 * While PROG runs, on a terminal and unless -q: a status line refreshed in place (status_line.h).
 * At the end, unless -q: one line on stderr naming the trace file written.
 *
 * --follow: PROG's children too, one trace file per process (FILE with .PID before its
 * extension). cuhook then stays the tracer of the whole tree, for its fork/exec events only,
 * until every process of it has ended (src/inject/follow.c). */
#include "agent_options.h"
#include "cli_msg.h"
#include "commands.h"
#include "inject_opts.h"
#include "run_exec.h"
#include "status_line.h"
#include "text_safe.h"
#include "trace_path.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: cuhook run [-o FILE] [--funcs GLOBS] [--follow] [options] -- PROG ARGS...\n"
	        "Run PROG with its CUDA driver calls traced. The exit status is PROG's; signals sent to\n"
	        "cuhook are passed on to PROG.\n\n"
	        "  --follow              trace the processes PROG starts too (fork, exec), one file per\n"
	        "                        process: FILE with .PID before its extension (trace.1234.bin);\n"
	        "                        cuhook returns when all of them have ended\n"
	        "  --delay SEC           record from SEC seconds after PROG starts (fractions allowed)\n"
	        "  --duration SEC        record for SEC seconds (after the delay), then close the trace;\n"
	        "                        PROG runs on untraced (attach --duration: the same, from the attach)\n"
	        "  -q, --quiet           no status line while tracing, no line at the end saying where the\n"
	        "                        trace was written\n"
	        "%s"
	        "Default output: trace.bin in the current directory; if it exists, PROG is not run\n"
	        "(unless --force). While PROG runs, a status line on stderr when it is a terminal (calls\n"
	        "written, the trace's size, records dropped; not with --follow); at the end, one line on\n"
	        "stderr names the trace written (neither with -q).\n\n"
	        "Exit status: PROG's (PROG killed by a signal: cuhook dies of the same); 2 usage, or the\n"
	        "trace file exists (PROG not run); 125 the agent could not be put into PROG (PROG not\n"
	        "run); 126/127 PROG cannot be executed / not found.\n",
	        CUHOOK_INJECT_CLI_HELP);
}

static volatile pid_t child = -1;   /* the program, once it runs on its own */
static volatile pid_t spawned = -1; /* the program, from its fork on */
static volatile sig_atomic_t held; /* signals that came before the child ran on its own */

static void forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	/* A terminal's Ctrl-C (or hangup, or Ctrl-\) goes to the whole foreground process group,
	 * the program included: passing it on as well would deliver it twice. The program's pid is
	 * known from its fork on, not only once the injection is over: the terminal may reach it
	 * (and us) in between. */
	if (si->si_code == SI_KERNEL && spawned > 0 && getpgid(spawned) == getpgrp())
		return;
	if (child > 0)
		kill(child, sig);
	else
		held |= 1 << sig;
}

/* The trace file of process pid: the agent in it named the file by the rule of trace_path.h
 * (with --follow, one file per process). false: none (no output= option). */
static bool trace_of(const char *options, pid_t pid, bool follow, char *path, size_t len)
{
	char out[PATH_MAX];
	if (!aopt_get(options, AOPT_OUTPUT, out, sizeof(out)))
		return false;
	cuhook_trace_path(out, (int)pid, follow, path, len);
	return true;
}

/* Where the trace went, once PROG has ended (with --follow, the first process's is named). */
static void say_written(const char *options, pid_t pid, bool follow)
{
	char path[PATH_MAX + 32], shown[(PATH_MAX + 32) * TEXT_SAFE_GROWTH + 1];
	struct stat st;
	if (!trace_of(options, pid, follow, path, sizeof(path)))
		return;
	text_safe_n(shown, sizeof(shown), path, strlen(path));
	if (lstat(path, &st) < 0)
		fprintf(stderr, "cuhook run: no trace written (%s does not exist)\n", shown);
	else
		fprintf(stderr, "cuhook run: trace written to %s%s\n", shown,
		        follow ? " (and one per process it started, beside it)" : "");
}

static const int fwd_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

/* The agent takes milliseconds as an unsigned number (delay_ms=, duration_ms=). */
#define MAX_WINDOW_S (UINT_MAX / 1000.0)

/* --delay/--duration SEC (min: the least accepted) into *ms. 1 consumed, 0 not ours, -1 bad. */
static int window_opt(int argc, char **argv, int *i, const char *name, double min, unsigned *ms)
{
	const char *v;
	int r = cuhook_cli_opt_value(argc, argv, i, name, &v);
	double sec;
	if (r <= 0)
		return r;
	if (cuhook_parse_seconds(name, v, min, MAX_WINDOW_S, &sec) < 0)
		return -1;
	*ms = (unsigned)(sec * 1000 + 0.5);
	return 1;
}

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* When to look at what the program runs, in ms from the start, before the looks of every period:
 * a shim execs within milliseconds, and the program it becomes may end within the first one. */
static const int early_looks_ms[] = {20, 100, 400};

/* Wait until the program has ended (*status: how). Every period meanwhile: the status line
 * (when sl->on), and a look at what the program runs (an exec, run_exec.h; also a few times in
 * the first period). The program's end is seen through a pidfd (every 100 ms without one). */
static int wait_program(pid_t pid, int *status, struct status_line *sl, struct run_exec_watch *ew)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	int64_t t0 = now_ms(), next_ms = t0 + STATUS_LINE_PERIOD_MS;
	unsigned early = 0;
	int ret = 0;
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid && (WIFEXITED(*status) || WIFSIGNALED(*status)))
			break;
		if (r < 0 && errno != EINTR) {
			perror("cuhook run: waitpid");
			ret = -1;
			break;
		}
		if (r != 0)
			continue;
		int64_t now = now_ms(), left = next_ms - now;
		if (early < sizeof(early_looks_ms) / sizeof(early_looks_ms[0])) {
			int64_t look = t0 + early_looks_ms[early] - now;
			if (look <= 0) {
				run_exec_look(ew);
				early++;
				continue;
			}
			if (look < left)
				left = look;
		}
		if (now >= next_ms) {
			run_exec_look(ew);
			status_line_tick(sl);
			next_ms += STATUS_LINE_PERIOD_MS * (1 - left / STATUS_LINE_PERIOD_MS);
			continue;
		}
		struct pollfd p = {pfd, POLLIN, 0};
		poll(&p, pfd >= 0 ? 1 : 0, pfd >= 0 ? (int)left : (left < 100 ? (int)left : 100));
	}
	if (pfd >= 0)
		close(pfd);
	status_line_end(sl);
	return ret;
}

/* Die the way the program died, so that our parent (a shell, a job runner) sees the same. */
static int exit_like(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	int sig = WTERMSIG(status);
	struct rlimit no_core = {0, 0};
	setrlimit(RLIMIT_CORE, &no_core); /* the program dumped its core already, if it could */
	signal(sig, SIG_DFL);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	sigprocmask(SIG_UNBLOCK, &s, NULL);
	raise(sig);
	return 128 + sig; /* a signal that does not kill (SIGCHLD...) cannot be a cause of death */
}

int cmd_run(int argc, char **argv)
{
	struct cuhook_inject_cli cli = {0};
	bool follow = false, quiet = false;
	int i = 1;
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		int r = cuhook_inject_cli_opt(&cli, argc, argv, &i);
		if (r < 0)
			return 2;
		if (r > 0)
			continue;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		}
		if (cuhook_version_opt(argv[i]))
			return cuhook_print_version();
		if (!strcmp(argv[i], "--follow")) {
			follow = true;
			continue;
		}
		if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
			quiet = true;
			continue;
		}
		if ((r = window_opt(argc, argv, &i, "--delay", 0, &cli.delay_ms)) != 0 ||
		    (r = window_opt(argc, argv, &i, "--duration", 0.001, &cli.duration_ms)) != 0) {
			if (r < 0)
				return 2;
			continue;
		}
		if (argv[i][0] == '-') {
			fprintf(stderr, "cuhook run: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
		break; /* the program, without a "--" before it */
	}
	if (i >= argc) {
		fprintf(stderr, "cuhook run: no program to run\n");
		usage(stderr);
		return 2;
	}

	struct cuhook_inject_opts o = {0};
	char agent[PATH_MAX], options[8192];
	if (follow) {
		/* every process's agent: a file of its own, fork children included */
		if (cli.nextra >= (int)(sizeof(cli.extra) / sizeof(cli.extra[0]))) {
			fprintf(stderr, "cuhook run: too many --opt with --follow\n");
			return 2;
		}
		cli.extra[cli.nextra++] = "follow=1";
	}
	if (cuhook_inject_cli_setup(&cli, &o, agent, sizeof(agent)) < 0 ||
	    cuhook_inject_cli_options(&cli, "trace.bin", options, sizeof(options)) < 0)
		return 2;
	/* an existing trace file: refused here, before the program is started */
	if (cuhook_inject_check_output("run", options, 0) < 0)
		return 2;
	o.agent_options = options;
	o.follow = follow;
	o.spawned = &spawned;

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (unsigned k = 0; k < sizeof(fwd_sigs) / sizeof(fwd_sigs[0]); k++)
		sigaction(fwd_sigs[k], &sa, NULL);

	struct cuhook_inject_times t;
	int status;
	pid_t pid = cuhook_inject_spawn(argv + i, &o, &t, &status);
	if (pid < 0) {
		if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) >= 126)
			return WEXITSTATUS(status); /* the child said why it could not exec */
		fprintf(stderr, "cuhook run: %s\n", cuhook_inject_error());
		if (status != -1)
			return exit_like(status);
		return 125;
	}
	if (cli.verbose)
		cuhook_inject_print_times("run", &t);

	child = pid;
	for (unsigned k = 0; k < sizeof(fwd_sigs) / sizeof(fwd_sigs[0]); k++)
		if (held & (1 << fwd_sigs[k]))
			kill(pid, fwd_sigs[k]);

	if (follow) {
		if (cuhook_inject_follow(pid, &o, &status) < 0) {
			fprintf(stderr, "cuhook run: %s\n", cuhook_inject_error());
			return 125;
		}
		if (!quiet)
			say_written(options, pid, true);
		return exit_like(status);
	}
	struct status_line sl = {0};
	struct run_exec_watch ew;
	run_exec_begin(&ew, pid);
	if (status_line_wanted(quiet))
		status_line_begin(&sl, "cuhook run", pid, agent);
	if (wait_program(pid, &status, &sl, &ew) < 0)
		return 125;
	char path[PATH_MAX + 32];
	if (WIFEXITED(status) && trace_of(options, pid, false, path, sizeof(path)))
		run_exec_tell(&ew, path); /* a warning: even with -q */
	if (!quiet)
		say_written(options, pid, false);
	return exit_like(status);
}
