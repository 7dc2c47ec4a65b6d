/* cuhook dump [--timeout SEC] PID
 *
 * Ask the flight recorder of a traced process (cuhook run/attach --flight-recorder) to write
 * what its rings hold now into its trace file, and wait until it has. The process is never
 * stopped nor signalled: the request is a word of the agent's memory (src/inject/control.c). */
#include "cli_msg.h"
#include "commands.h"
#include "inject.h"
#include "inject_opts.h"
#include "text_safe.h"
#include "trace_format.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_S 10.0

/* Exit statuses (docs/injection.md, "cuhook dump"). */
enum {
	EXIT_DUMP_FAILED = 1,
	EXIT_USAGE = 2,
	EXIT_NO_PROCESS = 3,
	EXIT_NO_AGENT = 4,
	EXIT_NOT_FLIGHT = 5,
	EXIT_NOT_PERMITTED = 6,
	EXIT_TIMEOUT = 7,
};

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: cuhook dump [--timeout SEC] PID\n"
	        "Have the flight recorder of a process traced with --flight-recorder write the newest calls\n"
	        "of every thread into its trace file now (appended after earlier dumps), and wait until it\n"
	        "has. The process is neither stopped nor signalled; recording goes on. Needs ptrace rights\n"
	        "over PID (root, or its owner where ptrace is permitted).\n\n"
	        "  --timeout SEC         wait at most SEC seconds for the dump (default 10)\n"
	        "  --agent PATH          the agent library to look for first (the one run and attach were\n"
	        "                        given; default: the installed libcuhook.so, then any libcuhook*)\n\n"
	        "Exit status: 0 written; 1 failed; 2 usage; 3 no such process (or it ended meanwhile: its\n"
	        "exit writes a last dump); 4 no cuhook agent in it; 5 its agent is not in flight-recorder\n"
	        "mode; 6 not permitted; 7 not written within SEC (asked for: it may still come).\n");
}

/* Is the file open as fd in pid a trace of pid (its file header says so)? Opened read-only
 * through /proc/PID/fd, where only a regular file is ever opened. */
static bool is_its_trace(pid_t pid, const char *fd_path)
{
	struct stat st;
	if (stat(fd_path, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size < sizeof(struct cuhook_file_header))
		return false;
	int fd = open(fd_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return false;
	struct cuhook_file_header h;
	bool ok = pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
	          memcmp(h.magic, CUHOOK_TRACE_MAGIC, sizeof(h.magic)) == 0 && h.pid == (uint32_t)pid;
	close(fd);
	return ok;
}

/* Where the trace went, learnt from outside: the file the process has open that starts with a
 * trace header naming it (the agent keeps its trace open). 0, or -1 when none or several. */
static int find_trace_path(pid_t pid, char *buf, size_t len)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int found = 0;
	char first[PATH_MAX];
	struct dirent *e;
	while ((e = readdir(d)) && found < 2) {
		char fd_path[320], target[PATH_MAX];
		if (e->d_name[0] == '.')
			continue;
		snprintf(fd_path, sizeof(fd_path), "%s/%s", dir, e->d_name);
		ssize_t n = readlink(fd_path, target, sizeof(target) - 1);
		if (n <= 0 || target[0] != '/' || !is_its_trace(pid, fd_path))
			continue;
		target[n] = 0;
		if (found && strcmp(first, target) == 0)
			continue; /* the same file open twice */
		memcpy(first, target, (size_t)n + 1);
		found++;
	}
	closedir(d);
	if (found != 1)
		return -1;
	text_safe_n(buf, len, first, strlen(first)); /* a name from the process: made safe to show */
	return 0;
}

int cmd_dump(int argc, char **argv)
{
	double timeout = DEFAULT_TIMEOUT_S;
	const char *pid_arg = NULL, *agent_arg = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		int r;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (cuhook_version_opt(a)) {
			return cuhook_print_version();
		} else if ((r = cuhook_cli_opt_value(argc, argv, &i, "--timeout", &v)) != 0) {
			/* at least one poll (20 ms); at most a day: a longer wait is a typo */
			if (r < 0 || cuhook_parse_seconds("--timeout", v, 0.02, 86400, &timeout) < 0)
				return EXIT_USAGE;
		} else if ((r = cuhook_cli_opt_value(argc, argv, &i, "--agent", &agent_arg)) != 0) {
			if (r < 0)
				return EXIT_USAGE;
		} else if (a[0] == '-' || pid_arg) {
			char shown[64 * TEXT_SAFE_GROWTH + 1];
			text_safe_n(shown, sizeof(shown), a, strnlen(a, 64));
			fprintf(stderr, "cuhook dump: %s '%s'\n", a[0] == '-' ? "unknown option" : "unexpected argument", shown);
			usage(stderr);
			return EXIT_USAGE;
		} else {
			pid_arg = a;
		}
	}
	pid_t pid;
	if (cuhook_parse_pid(pid_arg, &pid) < 0) {
		fprintf(stderr, "cuhook dump: a process id is needed\n");
		usage(stderr);
		return EXIT_USAGE;
	}

	/* the agent given, or the one next to us, first; any other libcuhook in the process otherwise */
	char agent[PATH_MAX];
	if (agent_arg ? !realpath(agent_arg, agent) : cuhook_agent_path(agent, sizeof(agent)) < 0)
		agent[0] = 0;
	uint32_t dumps = 0;
	enum cuhook_dump_status st = cuhook_inject_dump(pid, agent, (int)(timeout * 1000 + 0.5), &dumps);
	static const int exit_of[] = {
		[CUHOOK_DUMP_WRITTEN] = 0,
		[CUHOOK_DUMP_FAILED] = EXIT_DUMP_FAILED,
		[CUHOOK_DUMP_NO_PROCESS] = EXIT_NO_PROCESS,
		[CUHOOK_DUMP_NO_AGENT] = EXIT_NO_AGENT,
		[CUHOOK_DUMP_NOT_FLIGHT] = EXIT_NOT_FLIGHT,
		[CUHOOK_DUMP_NOT_PERMITTED] = EXIT_NOT_PERMITTED,
		[CUHOOK_DUMP_TIMEOUT] = EXIT_TIMEOUT,
	};
	if (st != CUHOOK_DUMP_WRITTEN) {
		fprintf(stderr, "cuhook dump: %s\n", cuhook_inject_error());
		return exit_of[st];
	}
	char path[PATH_MAX * TEXT_SAFE_GROWTH + 1];
	if (find_trace_path(pid, path, sizeof(path)) == 0)
		printf("cuhook dump: process %d: dump %u written to %s\n", pid, dumps, path);
	else
		printf("cuhook dump: process %d: dump %u written to the process's trace file\n", pid, dumps);
	return 0;
}
