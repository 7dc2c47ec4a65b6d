/* Telling an exec that ended cuhook run's trace (run_exec.h). */
#include "run_exec.h"

#include "text_safe.h"
#include "trace_format.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void exe_of(pid_t pid, char *buf, size_t len)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/exe", pid);
	ssize_t n = readlink(p, buf, len - 1);
	buf[n > 0 ? n : 0] = 0;
}

void run_exec_begin(struct run_exec_watch *w, pid_t pid)
{
	w->pid = pid;
	exe_of(pid, w->first, sizeof(w->first));
	w->now[0] = 0;
}

void run_exec_look(struct run_exec_watch *w)
{
	char exe[PATH_MAX];
	exe_of(w->pid, exe, sizeof(exe));
	if (exe[0] && w->first[0] && strcmp(exe, w->first) != 0)
		memcpy(w->now, exe, sizeof(exe));
}

/* 1: a trace without an END block; 0: one with it; -1: not a trace we can read (nothing said). */
static int trace_unclosed(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	struct cuhook_file_header h;
	int ret = -1;
	if (pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) && !memcmp(h.magic, CUHOOK_TRACE_MAGIC, sizeof(h.magic))) {
		ret = 1;
		struct cuhook_block b;
		for (off_t off = h.header_size; pread(fd, &b, sizeof(b), off) == (ssize_t)sizeof(b); off += sizeof(b) + b.size) {
			if (b.magic != CUHOOK_BLOCK_MAGIC)
				break;
			if (b.type == CUHOOK_BLOCK_END) {
				ret = 0;
				break;
			}
		}
	}
	close(fd);
	return ret;
}

void run_exec_tell(const struct run_exec_watch *w, const char *trace)
{
	if (trace_unclosed(trace) != 1)
		return;
	if (!w->now[0]) {
		fprintf(stderr, "cuhook run: the trace has no END block though the program exited normally: it probably "
		                "exec'd another program (a script or a launcher?), which was not traced (cuhook run "
		                "--follow traces what it execs)\n");
		return;
	}
	char shown[PATH_MAX * TEXT_SAFE_GROWTH + 1];
	text_safe_n(shown, sizeof(shown), w->now, strlen(w->now));
	fprintf(stderr, "cuhook run: the program exec'd %s (a script or a launcher?), which was not traced: the trace "
	                "holds the calls before the exec and has no END block (cuhook run --follow traces what it "
	                "execs)\n", shown);
}
