/* cuhook attach [-o FILE] [--duration SEC] [--funcs GLOBS] PID
 *
 * Put the agent into a running process, let it trace until Ctrl-C, --duration or the process's
 * exit, then take the patches out and leave; the process goes on as if nothing happened. The
 * work is in src/inject (docs/injection.md). */
#include "agent_options.h"
#include "cli_msg.h"
#include "commands.h"
#include "inject_opts.h"
#include "status_line.h"
#include "text_safe.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_DURATION_S (366 * 86400.0) /* a year: anything longer is a typo */
#define EXIT_TRACE_INCOMPLETE 3        /* detached, but the agent could not write its whole trace */

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: cuhook attach [-o FILE] [--duration SEC] [--funcs GLOBS] [options] PID\n"
	        "Trace the CUDA driver calls of a running process until Ctrl-C, SEC seconds or its exit;\n"
	        "then leave it running as before. Needs ptrace rights over PID (root, or the same user\n"
	        "with CAP_SYS_PTRACE / yama ptrace_scope 0).\n\n"
	        "  --duration SEC        stop tracing after SEC seconds (fractions allowed)\n"
	        "  --stop                only stop an agent left tracing in PID (by a killed cuhook)\n"
	        "  -q, --quiet           no line saying where the trace goes, no status line while tracing\n"
	        "%s"
	        "While tracing, a status line on stderr when it is a terminal (calls written, the trace's\n"
	        "size, records dropped), refreshed every second.\n"
	        "Default output: trace.PID.bin in the current directory. If it exists, the process is\n"
	        "not touched and the exit status is 2 (unless --force). Exit status: 0 traced and\n"
	        "detached; 1 failed (the process is left as it was); 2 usage; 3 detached, but the trace\n"
	        "could not be written in full (a full disk: the message says why).\n",
	        CUHOOK_INJECT_CLI_HELP);
}

/* Wait for the end of the tracing window, with the status line meanwhile (when sl->on). 0: time
 * to detach; 1: the process exited. */
static int wait_window(pid_t pid, double duration, const sigset_t *sigs, struct status_line *sl)
{
	int sfd = signalfd(-1, sigs, SFD_CLOEXEC);
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int ret = 0;
	double next_tick = STATUS_LINE_PERIOD_MS / 1000.0;
	for (;;) {
		int timeout = -1;
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		double elapsed = (double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9;
		if (sl->on && elapsed >= next_tick) {
			status_line_tick(sl);
			while (next_tick <= elapsed)
				next_tick += STATUS_LINE_PERIOD_MS / 1000.0;
		}
		if (duration >= 0) {
			double left = duration - elapsed;
			if (left <= 0)
				break;
			/* at most an hour per wait: (int) of a longer time in ms would overflow */
			timeout = left > 3600 ? 3600 * 1000 : (int)(left * 1000) + 1;
		}
		if (sl->on && (timeout < 0 || timeout > (int)((next_tick - elapsed) * 1000) + 1))
			timeout = (int)((next_tick - elapsed) * 1000) + 1;
		/* Without pidfd (kernel < 5.3) look at the process every 200 ms. */
		if (pfd < 0 && (timeout < 0 || timeout > 200))
			timeout = 200;
		struct pollfd p[2] = {{sfd, POLLIN, 0}, {pfd, POLLIN, 0}};
		int n = poll(p, pfd >= 0 ? 2 : 1, timeout);
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && (p[0].revents & POLLIN)) {
			struct signalfd_siginfo si;
			status_line_clear(sl); /* the terminal's ^C stays on the line before */
			if (read(sfd, &si, sizeof(si)) > 0)
				fprintf(stderr, "\ncuhook attach: %s, detaching\n", strsignal((int)si.ssi_signo));
			break;
		}
		if ((n > 0 && pfd >= 0 && (p[1].revents & POLLIN)) || (pfd < 0 && kill(pid, 0) != 0 && errno == ESRCH)) {
			ret = 1;
			break;
		}
	}
	if (sfd >= 0)
		close(sfd);
	if (pfd >= 0)
		close(pfd);
	status_line_end(sl);
	return ret;
}

/* Take the agent out; our exit status. A trace the agent could not write in full (a full disk)
 * is told here, on our stderr: the process's is not ours, and the agent wrote nothing there. */
static int detach(pid_t pid, const struct cuhook_inject_opts *o, int verbose, const char *what)
{
	struct cuhook_inject_times t;
	int r = cuhook_inject_detach(pid, o, &t);
	if (r != 0)
		fprintf(stderr, "cuhook attach: %s\n", cuhook_inject_error());
	if (r < 0)
		return 1;
	if (verbose)
		cuhook_inject_print_times(what, &t);
	return r > 0 ? EXIT_TRACE_INCOMPLETE : 0;
}

int cmd_attach(int argc, char **argv)
{
	struct cuhook_inject_cli cli = {0};
	double duration = -1;
	bool stop_only = false, quiet = false;
	const char *pid_arg = NULL;
	for (int i = 1; i < argc; i++) {
		int r = cuhook_inject_cli_opt(&cli, argc, argv, &i);
		if (r < 0)
			return 2;
		if (r > 0)
			continue;
		const char *a = argv[i], *v;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (cuhook_version_opt(a)) {
			return cuhook_print_version();
		} else if ((r = cuhook_cli_opt_value(argc, argv, &i, "--duration", &v)) != 0) {
			if (r < 0 || cuhook_parse_seconds("--duration", v, 0, MAX_DURATION_S, &duration) < 0)
				return 2;
		} else if (!strcmp(a, "--stop")) {
			stop_only = true;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			quiet = true;
		} else if (a[0] == '-' || pid_arg) {
			fprintf(stderr, "cuhook attach: %s '%s'\n", a[0] == '-' ? "unknown option" : "unexpected argument", a);
			usage(stderr);
			return 2;
		} else {
			pid_arg = a;
		}
	}
	pid_t pid;
	if (cuhook_parse_pid(pid_arg, &pid) < 0) {
		fprintf(stderr, "cuhook attach: a process id is needed\n");
		usage(stderr);
		return 2;
	}

	/* The process's stderr is not ours: the agent says nothing there, and a trace it could not
	 * write is told to us at the detach (cuhook_agent_stop), and by us. */
	if (cli.nextra >= (int)(sizeof(cli.extra) / sizeof(cli.extra[0]))) {
		fprintf(stderr, "cuhook attach: too many --opt\n");
		return 2;
	}
	cli.extra[cli.nextra++] = "stderr=0";
	/* No stacks unless asked: libunwind keeps a pipe of its own open in the program after the
	 * detach (src/agent/cuhook_agent.h, CUHOOK_STACKS_DEFAULT), and an attach must leave the
	 * program as it found it. */
	if (!cli.stacks)
		cli.stacks = "";

	struct cuhook_inject_opts o = {0};
	char agent[PATH_MAX], options[8192], defout[64];
	snprintf(defout, sizeof(defout), "trace.%d.bin", pid);
	cuhook_inject_cli_watch(&cli, pid, duration);
	if (cuhook_inject_cli_setup(&cli, &o, agent, sizeof(agent)) < 0 ||
	    cuhook_inject_cli_options(&cli, defout, options, sizeof(options)) < 0)
		return 2;
	o.agent_options = options;

	/* Ctrl-C and friends must not kill us while the process's threads are stopped in our hands
	 * (a remote call half done): they are blocked, and read from a signalfd while tracing. */
	sigset_t sigs;
	sigemptyset(&sigs);
	int stop_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	for (unsigned k = 0; k < sizeof(stop_sigs) / sizeof(stop_sigs[0]); k++)
		sigaddset(&sigs, stop_sigs[k]);
	sigprocmask(SIG_BLOCK, &sigs, NULL);

	struct cuhook_inject_times t;
	if (stop_only)
		return detach(pid, &o, cli.verbose, "stop");

	/* an existing trace file: refused before the process is touched */
	if (cuhook_inject_check_output("attach", options, pid) < 0)
		return 2;
	if (cuhook_inject_check(pid) < 0) {
		fprintf(stderr, "cuhook attach: %s\n", cuhook_inject_error());
		return 1;
	}
	if (cuhook_inject_has_object(pid, "libcuda.so") == 0)
		fprintf(stderr, "cuhook attach: note: process %d has not loaded libcuda (yet); the agent "
		                "patches it when the process loads it\n", pid);
	if (cuhook_inject_attach(pid, &o, &t) < 0) {
		fprintf(stderr, "cuhook attach: %s\n", cuhook_inject_error());
		return 1;
	}
	if (cli.verbose)
		cuhook_inject_print_times("attach", &t);
	char out[PATH_MAX];
	aopt_get(options, AOPT_OUTPUT, out, sizeof(out));
	if (!quiet)
		fprintf(stderr, "cuhook attach: tracing process %d into %s; %s\n", pid, out,
		        duration >= 0 ? "until the duration is over" : "Ctrl-C stops");
	if (cli.flight)
		fprintf(stderr, "cuhook attach: flight recorder: nothing is written until a dump (cuhook dump %d%s, or the "
		                "end)\n", pid, cli.trigger_error || cli.trigger_slow ? ", a trigger" : "");
	for (const char *n = cuhook_inject_agent_notes(); *n;) {
		const char *nl = strchr(n, '\n');
		size_t len = nl ? (size_t)(nl - n) : strlen(n);
		char shown[1024 * TEXT_SAFE_GROWTH + 1]; /* paths from the process: made safe to show */
		fprintf(stderr, "cuhook: %s\n", (text_safe_n(shown, sizeof(shown), n, len), shown));
		n += len + (nl ? 1 : 0);
	}

	struct status_line sl = {0};
	if (status_line_wanted(quiet))
		status_line_begin(&sl, "cuhook attach", pid, agent);
	if (wait_window(pid, duration, &sigs, &sl) == 1) {
		fprintf(stderr, "cuhook attach: process %d exited; the agent closed the trace\n", pid);
		return 0;
	}
	return detach(pid, &o, cli.verbose, "detach");
}
