/* ioctl_count: the ground truth for the ioctl watch's counts (tests/gpu/ioctl_proof.sh), where
 * strace is not installed. Runs a program under ptrace, every thread and child included, and
 * counts the ioctl system calls made on files whose path starts with a prefix (default
 * /dev/nvidia), by request code: the kernel's view, whatever path the call took to get there
 * (libc's ioctl, syscall(), inline assembly).
 *
 *   ioctl_count [--prefix /dev/nvidia] [--out FILE] -- PROG ARGS...
 *
 * Prints (to FILE, default stderr) "total N", then "0xREQUEST COUNT" lines sorted by request.
 * The exit status is PROG's. Uses PTRACE_GET_SYSCALL_INFO (Linux 5.3). Its tracer name is not
 * "cuhook", so an agent in the program starts as in any process (its patching falls back to
 * atomic writes: the threads are already traced). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* PTRACE_GET_SYSCALL_INFO and its struct, spelled out (older C libraries lack them) */
#define GET_SYSCALL_INFO 0x420e
#define SYSCALL_INFO_ENTRY 1
struct syscall_info {
	uint8_t op;
	uint8_t pad[3];
	uint32_t arch;
	uint64_t ip, sp;
	union {
		struct {
			uint64_t nr, args[6];
		} entry;
		uint64_t space[16];
	};
};

#define MAX_REQ 4096
static struct {
	uint32_t req;
	unsigned long count;
} reqs[MAX_REQ];
static unsigned nreq;
static unsigned long total, other_reqs;

static void count(uint32_t req)
{
	total++;
	for (unsigned i = 0; i < nreq; i++)
		if (reqs[i].req == req) {
			reqs[i].count++;
			return;
		}
	if (nreq < MAX_REQ)
		reqs[nreq++] = (typeof(reqs[0])){req, 1};
	else
		other_reqs++;
}

static int cmp(const void *a, const void *b)
{
	uint32_t x = ((const typeof(reqs[0]) *)a)->req, y = ((const typeof(reqs[0]) *)b)->req;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *prefix = "/dev/nvidia", *out = NULL;
	int i = 1;
	for (; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--prefix") && i + 1 < argc)
			prefix = argv[++i];
		else if (!strcmp(argv[i], "--out") && i + 1 < argc)
			out = argv[++i];
	}
	if (i + 1 >= argc) {
		fprintf(stderr, "usage: ioctl_count [--prefix P] [--out FILE] -- PROG ARGS...\n");
		return 2;
	}
	char **prog = argv + i + 1;
	pid_t child = fork();
	if (child < 0)
		return 2;
	if (child == 0) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		raise(SIGSTOP);
		execvp(prog[0], prog);
		perror("ioctl_count: exec");
		_exit(127);
	}
	int st;
	if (waitpid(child, &st, 0) != child || !WIFSTOPPED(st))
		return 2;
	ptrace(PTRACE_SETOPTIONS, child, NULL,
	       (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK |
	                      PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL));
	ptrace(PTRACE_SYSCALL, child, NULL, NULL);
	int status = 0;
	size_t plen = strlen(prefix);
	for (;;) {
		pid_t pid = waitpid(-1, &st, __WALL);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: everyone is gone */
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (pid == child)
				status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		int sig = WSTOPSIG(st), deliver = 0;
		if (sig == (SIGTRAP | 0x80)) {
			struct syscall_info info;
			memset(&info, 0, sizeof(info));
			if (ptrace((enum __ptrace_request)GET_SYSCALL_INFO, pid, (void *)sizeof(info), &info) > 0 &&
			    info.op == SYSCALL_INFO_ENTRY && info.entry.nr == 16 /* ioctl */) {
				char link[64], path[4096];
				snprintf(link, sizeof(link), "/proc/%d/fd/%d", pid, (int)info.entry.args[0]);
				ssize_t n = readlink(link, path, sizeof(path) - 1);
				if (n > 0) {
					path[n] = 0;
					if (!strncmp(path, prefix, plen))
						count((uint32_t)info.entry.args[1]);
				}
			}
		} else if (st >> 16) {
			/* clone/fork/exec event stops: nothing to deliver */
		} else if (sig == SIGSTOP || sig == SIGTRAP) {
			/* a new thread's first stop, or a group stop: nothing to deliver */
		} else {
			deliver = sig;
		}
		ptrace(PTRACE_SYSCALL, pid, NULL, (void *)(long)deliver);
	}
	qsort(reqs, nreq, sizeof(reqs[0]), cmp);
	FILE *f = out ? fopen(out, "w") : stderr;
	if (!f)
		f = stderr;
	fprintf(f, "total %lu\n", total);
	for (unsigned k = 0; k < nreq; k++)
		fprintf(f, "0x%08x %lu\n", reqs[k].req, reqs[k].count);
	if (other_reqs)
		fprintf(f, "other %lu\n", other_reqs);
	if (f != stderr)
		fclose(f);
	return status;
}
