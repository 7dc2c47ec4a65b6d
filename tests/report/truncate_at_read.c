/* Truncates a file at a chosen moment of a program's reading it: the tests of a trace that
 * shrinks while `cuhook report` reads it (test_report.py, shrink_reading).
 *
 *   truncate_at_read FILE SIZE MIN_BYTES [REGROW] -- PROGRAM ARGS...
 *
 * Runs PROGRAM under ptrace, all its threads, and when the first read(2), pread64(2) or mmap(2)
 * of FILE that asks for at least MIN_BYTES returns, truncates FILE to SIZE bytes before that
 * thread goes on (the program is not traced after that), then, with REGROW, extends it back to
 * REGROW bytes (zeros after SIZE: a file rewritten, not only cut). Deterministic: the program
 * cannot read FILE past that call before the file is cut. Says on stderr which call it was.
 *
 * Exits with the program's exit status, or 128 + the signal that killed it (as a shell does), or
 * 125 when the program never made such a call (the file was not truncated). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static struct stat target;
static unsigned long long min_bytes;

/* Whether the syscall a thread enters reads the target file, asking for enough bytes. */
static int reads_target(pid_t tid, const struct __ptrace_syscall_info *si, unsigned long long *count)
{
	unsigned long long nr = si->entry.nr, fd;
	if (nr == SYS_read || nr == SYS_pread64) {
		fd = si->entry.args[0];
		*count = si->entry.args[2];
	} else if (nr == SYS_mmap) {
		fd = si->entry.args[4];
		*count = si->entry.args[1];
	} else {
		return 0;
	}
	if ((long long)fd < 0 || *count < min_bytes)
		return 0;
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d/fd/%llu", (int)tid, fd);
	return stat(path, &st) == 0 && st.st_dev == target.st_dev && st.st_ino == target.st_ino;
}

int main(int argc, char **argv)
{
	int dashes = argc > 5 && !strcmp(argv[5], "--") ? 5 : 4;
	if (argc < dashes + 2 || strcmp(argv[dashes], "--")) {
		fprintf(stderr, "usage: truncate_at_read FILE SIZE MIN_BYTES [REGROW] -- PROGRAM ARGS...\n");
		return 2;
	}
	const char *file = argv[1];
	off_t size = (off_t)strtoll(argv[2], NULL, 10);
	min_bytes = strtoull(argv[3], NULL, 10);
	off_t regrow = dashes == 5 ? (off_t)strtoll(argv[4], NULL, 10) : -1;
	char **prog = argv + dashes + 1;
	if (stat(file, &target)) {
		perror(file);
		return 2;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 2;
	}
	if (pid == 0) {
		struct rlimit no_core = {0, 0}; /* a program killed by SIGBUS leaves no core file */
		setrlimit(RLIMIT_CORE, &no_core);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execvp(prog[0], prog);
		perror(prog[0]);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st)) { /* the exec's SIGTRAP */
		fprintf(stderr, "truncate_at_read: %s did not start\n", prog[0]);
		return 2;
	}
	ptrace(PTRACE_SETOPTIONS, pid, NULL,
	       (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL));
	ptrace(PTRACE_SYSCALL, pid, NULL, NULL);
	pid_t pending = 0; /* the thread inside the chosen call */
	int done = 0, status = 2;
	for (;;) {
		pid_t tid = waitpid(-1, &st, __WALL);
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (tid == pid) {
				status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
				break;
			}
			continue;
		}
		int sig = WSTOPSIG(st), deliver = 0;
		if (sig == (SIGTRAP | 0x80)) {
			struct __ptrace_syscall_info si;
			unsigned long long count;
			if (!done && ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(si), &si) > 0) {
				if (si.op == PTRACE_SYSCALL_INFO_ENTRY && !pending && reads_target(tid, &si, &count)) {
					pending = tid;
					fprintf(stderr, "truncate_at_read: syscall %llu of %llu bytes by thread %d\n",
					        (unsigned long long)si.entry.nr, count, (int)tid);
				} else if (si.op == PTRACE_SYSCALL_INFO_EXIT && tid == pending) {
					if (truncate(file, size) || (regrow >= 0 && truncate(file, regrow))) {
						perror("truncate_at_read: truncate");
						kill(pid, SIGKILL);
					}
					fprintf(stderr, "truncate_at_read: %s truncated to %lld bytes\n", file, (long long)size);
					if (regrow >= 0)
						fprintf(stderr, "truncate_at_read: %s regrown to %lld bytes\n", file, (long long)regrow);
					done = 1;
				}
			}
		} else if (st >> 16) {
			/* PTRACE_EVENT_CLONE: the new thread is traced as well */
		} else if (sig != SIGSTOP) { /* SIGSTOP: a new thread's first stop */
			deliver = sig;
		}
		ptrace(done ? PTRACE_CONT : PTRACE_SYSCALL, tid, NULL, (void *)(long)deliver);
	}
	if (!done) {
		fprintf(stderr, "truncate_at_read: %s never read %s with %llu bytes or more: not truncated\n",
		        prog[0], file, min_bytes);
		return 125;
	}
	return status;
}
