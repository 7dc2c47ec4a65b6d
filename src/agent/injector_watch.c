/* The watch on the cuhook attach that started the session (injector_watch.h says why).
 *
 * Gone: a pidfd of the injector, taken at the start, becomes readable when the injector exits
 * (a zombie included: a killed cuhook whose parent has not reaped it yet must count as gone).
 * Without a pidfd (kernel < 5.3), or once the program has closed ours behind our back (a
 * program may close descriptors it did not open, and reuse the number), the injector's line
 * in /proc/PID/stat says it instead: missing, a zombie, or another process under the same pid
 * (its start time differs from the one read at the start). cuhook passes its pid only when the
 * target sees it under that pid (the same pid namespace): otherwise only the deadline is
 * watched.
 *
 * Late: deadline_ms after the start (cuhook attach --duration SEC: SEC plus a grace for the
 * detach, src/cli/inject_opts.c). */
#include "injector_watch.h"
#include "clock_read.h"

#include "agent_log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

static struct {
	int armed;                      /* read by the writer thread: set last by begin */
	int pid;                        /* 0: no injector to watch */
	int pidfd;                      /* -1: none, or no longer ours */
	bool gone_before;               /* gone before the watch began: a start that finished after
	                                   the injector died, on its own */
	unsigned long long start_ticks; /* its start time in /proc/PID/stat; 0: unknown */
	uint64_t start_ns, deadline_ns; /* CLOCK_MONOTONIC; deadline 0: none */
} IW = {.pidfd = -1};


/* A small file of /proc, NUL-terminated. Its length, or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, cap - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = 0;
	return n;
}

/* The state letter and start time (field 22) of /proc/PID/stat. 0, -ENOENT when there is no
 * such process, another -errno when /proc cannot tell. */
static int proc_stat(int pid, char *state, unsigned long long *start)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	ssize_t n = read_small(path, buf, sizeof(buf));
	if (n < 0)
		return n == -ESRCH ? -ENOENT : (int)n;
	const char *p = strrchr(buf, ')'); /* the name in parentheses may hold anything */
	if (!p || p[1] != ' ' || !p[2])
		return -EINVAL;
	*state = p[2];
	p += 2;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -EINVAL;
		p++;
	}
	*start = strtoull(p, NULL, 10);
	return 0;
}

/* Is fd still the pidfd of IW.pid? Its fdinfo names the pid (-1 once the process is reaped). A
 * descriptor the program closed and reused is not ours to poll or close. When /proc cannot tell,
 * yes. */
static bool pidfd_still_ours(int fd)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	ssize_t n = read_small(path, buf, sizeof(buf));
	if (n == -ENOENT)
		return false;
	if (n < 0)
		return true;
	const char *p = strstr(buf, "\nPid:\t");
	if (!p)
		return false;
	long v = strtol(p + 6, NULL, 10);
	return v == IW.pid || v == -1;
}

void injector_watch_begin(int pid, unsigned deadline_ms)
{
	IW.pid = pid > 0 ? pid : 0;
	IW.pidfd = -1;
	IW.gone_before = false;
	IW.start_ticks = 0;
	IW.start_ns = monotonic_ns();
	IW.deadline_ns = deadline_ms ? IW.start_ns + (uint64_t)deadline_ms * 1000000ull : 0;
	if (IW.pid) {
		IW.pidfd = (int)syscall(SYS_pidfd_open, IW.pid, 0);
		int pidfd_err = IW.pidfd < 0 ? errno : 0;
		char state;
		unsigned long long ours;
		int r = proc_stat(IW.pid, &state, &IW.start_ticks);
		if (r != 0)
			IW.start_ticks = 0;
		/* cuhook passed its pid as we see it: no such process now means it is gone already
		 * (when /proc says so, if it can: it has our own line) */
		IW.gone_before = pidfd_err == ESRCH ||
		                 (pidfd_err && r == -ENOENT && proc_stat((int)getpid(), &state, &ours) == 0);
		if (IW.pidfd < 0 && !IW.start_ticks && !IW.gone_before)
			agent_log(1, "cannot watch cuhook attach (pid %d: no pidfd, not in /proc): should it be killed, "
			          "the trace ends %s", IW.pid, IW.deadline_ns ? "at its deadline" : "with the process");
	}
	__atomic_store_n(&IW.armed, 1, __ATOMIC_RELEASE);
}

static bool injector_exited(void)
{
	if (IW.gone_before)
		return true;
	if (IW.pidfd >= 0) {
		struct pollfd p = {IW.pidfd, POLLIN, 0};
		int n = poll(&p, 1, 0);
		if (n == 0 || (n < 0 && errno == EINTR))
			return false;
		if (n > 0 && !(p.revents & POLLNVAL) && pidfd_still_ours(IW.pidfd))
			return true;
		IW.pidfd = -1; /* closed or replaced behind our back: /proc from now on */
	}
	if (!IW.start_ticks)
		return false; /* no way to tell: the deadline alone */
	char state;
	unsigned long long start;
	int r = proc_stat(IW.pid, &state, &start);
	if (r == -ENOENT)
		return true;
	return r == 0 && (start != IW.start_ticks || state == 'Z' || state == 'X');
}

bool injector_watch_gone(char *why, size_t len)
{
	if (!__atomic_load_n(&IW.armed, __ATOMIC_ACQUIRE))
		return false;
	char who[32] = "";
	if (IW.pid)
		snprintf(who, sizeof(who), " (pid %d)", IW.pid);
	if (IW.deadline_ns && monotonic_ns() >= IW.deadline_ns) {
		snprintf(why, len, "cuhook attach%s did not end this trace by its deadline, %.1f s after the start "
		         "(its --duration and a grace for the detach): the agent stopped tracing by itself", who,
		         (double)(IW.deadline_ns - IW.start_ns) / 1e9);
		return true;
	}
	if (IW.pid && injector_exited()) {
		snprintf(why, len, "cuhook attach%s, which started this trace, is gone (killed?): the agent stopped "
		         "tracing by itself", who);
		return true;
	}
	return false;
}

void injector_watch_end(void)
{
	__atomic_store_n(&IW.armed, 0, __ATOMIC_RELEASE);
	if (IW.pidfd >= 0 && pidfd_still_ours(IW.pidfd))
		close(IW.pidfd);
	IW.pidfd = -1;
}
