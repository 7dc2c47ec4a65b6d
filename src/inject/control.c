/* The agent's control object in a process whose threads run
 * (cuhook_agent_control, src/agent/cuhook_agent.h): `cuhook run` and `cuhook attach` read its
 * counters for their status line, and `cuhook dump PID` asks the agent's flight recorder for a dump
 * by adding 1 to a word of that object, found as the injector finds cuhook_agent_threads (its
 * symbol in the agent's dynamic symbol table), and waits for the agent to count the dump
 * written. Nothing is stopped, signalled or run in the process: the agent's writer looks at the
 * word by itself every flush_ms. */
#include "inject.h"
#include "internal.h"

#include "cuhook_agent.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DUMP_POLL_MS 20 /* a dump takes a writer round (50 ms by default) and the copy */

/* The process has ended (or is a zombie, whose memory is gone). */
static bool process_gone(pid_t pid)
{
	char p[64], state = 0;
	struct stat st;
	snprintf(p, sizeof(p), "/proc/%d", pid);
	if (stat(p, &st) < 0)
		return errno == ENOENT || errno == ESRCH;
	return task_stat(pid, pid, &state, NULL) && (state == 'Z' || state == 'X');
}

/* A read or write of the control object failed with err: why, in words and as a status. */
static enum cuhook_dump_status access_failed(pid_t pid, int err, const char *what)
{
	if (process_gone(pid)) {
		inj_error("process %d ended %s", pid, what);
		return CUHOOK_DUMP_NO_PROCESS;
	}
	if (err == EPERM || err == EACCES) {
		inj_error("not permitted to read and write the memory of process %d: run cuhook dump as root, or as "
		          "its owner where ptrace is permitted (yama ptrace_scope 0, or CAP_SYS_PTRACE)", pid);
		return CUHOOK_DUMP_NOT_PERMITTED;
	}
	inj_error("cannot access the memory of process %d: %s", pid, err ? strerror(err) : "short read or write");
	return CUHOOK_DUMP_FAILED;
}

static uint64_t now_ms(void)
{
	return inj_now_ns() / 1000000u;
}

static enum cuhook_dump_status dump_in(pid_t pid, int fd, uint64_t ctl, int timeout_ms, uint32_t *dumps)
{
	struct cuhook_agent_control c;
	if (!live_mem(pid, fd, ctl, &c, sizeof(c), false))
		return access_failed(pid, errno, "before its agent could be read");
	if (c.magic != CUHOOK_AGENT_CONTROL_MAGIC) {
		inj_error("the cuhook agent in process %d is another version than this cuhook (its control object is "
		          "not the layout this cuhook knows)", pid);
		return CUHOOK_DUMP_NO_AGENT;
	}
	if (c.flight != 1) {
		inj_error("the cuhook agent in process %d is not in flight-recorder mode (it writes every call as it "
		          "goes: nothing to dump; trace with --flight-recorder)", pid);
		return CUHOOK_DUMP_NOT_FLIGHT;
	}
	/* Read again right before the write: another cuhook dump may have asked meanwhile. Two at the
	 * same instant may make one request of two; both then see the one dump it brings. */
	uint32_t req;
	uint64_t at = ctl + offsetof(struct cuhook_agent_control, dump_requests);
	if (!live_mem(pid, fd, at, &req, sizeof(req), false))
		return access_failed(pid, errno, "before the dump could be asked for");
	req++;
	if (!live_mem(pid, fd, at, &req, sizeof(req), true))
		return access_failed(pid, errno, "before the dump could be asked for");

	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		struct timespec ts = {0, DUMP_POLL_MS * 1000000L};
		nanosleep(&ts, NULL);
		struct cuhook_agent_control now;
		if (!live_mem(pid, fd, ctl, &now, sizeof(now), false))
			return access_failed(pid, errno, "before its dump was written (its exit writes a last one)");
		if ((int32_t)(now.requests_served - req) >= 0 && (int32_t)(now.dumps_written - c.dumps_written) > 0) {
			*dumps = now.dumps_written;
			return CUHOOK_DUMP_WRITTEN;
		}
		if (now.flight != 1) {
			inj_error("the flight recorder of process %d ended before the dump was written (tracing stopped: "
			          "its stop writes a last dump)", pid);
			return CUHOOK_DUMP_NOT_FLIGHT;
		}
		if (now_ms() >= deadline) {
			inj_error("process %d's agent did not write the dump within %d.%03d s (asked for: it may still "
			          "come)", pid, timeout_ms / 1000, timeout_ms % 1000);
			return CUHOOK_DUMP_TIMEOUT;
		}
	}
}

enum cuhook_dump_status cuhook_inject_dump(pid_t pid, const char *agent_path, int timeout_ms, uint32_t *dumps)
{
	inj_error_clear();
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/mem", pid);
	int fd = open(p, O_RDWR | O_CLOEXEC);
	int err = errno;
	if (fd < 0 && (err == ENOENT || err == ESRCH || process_gone(pid))) {
		inj_error("no such process: %d", pid);
		return CUHOOK_DUMP_NO_PROCESS;
	}
	/* EACCES: another user's process and a cuhook with CAP_SYS_PTRACE alone (mem_open says why);
	 * process_vm_readv/writev need the ptrace right only. Without it they fail too, and say so. */
	if (fd < 0 && err != EACCES && err != EPERM) {
		inj_error("cannot open %s: %s", p, strerror(err));
		return CUHOOK_DUMP_FAILED;
	}
	uint64_t ctl;
	enum cuhook_dump_status st;
	int found = agent_object_at(pid, agent_path, "cuhook_agent_control", &ctl);
	if (found < 0) {
		/* /proc/PID/maps is readable with the ptrace right alone: without it, or gone */
		inj_error_clear();
		st = access_failed(pid, EACCES, "while its agent was looked for");
	} else if (!found) {
		inj_error("process %d has no cuhook agent in it (it was not started with cuhook run, nor attached to "
		          "with cuhook attach, nor has it loaded libcuhook.so)", pid);
		st = CUHOOK_DUMP_NO_AGENT;
	} else if (!ctl) {
		inj_error("the cuhook agent in process %d has no flight recorder (an older version of it)", pid);
		st = CUHOOK_DUMP_NO_AGENT;
	} else {
		st = dump_in(pid, fd, ctl, timeout_ms, dumps);
	}
	if (fd >= 0)
		close(fd);
	return st;
}

int cuhook_inject_progress_open(struct cuhook_progress_src *s, pid_t pid, const char *agent_path)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/mem", pid);
	s->pid = pid;
	s->fd = open(p, O_RDONLY | O_CLOEXEC);
	uint32_t magic;
	if (agent_object_at(pid, agent_path, "cuhook_agent_control", &s->ctl) == 1 && s->ctl &&
	    live_mem(pid, s->fd, s->ctl, &magic, sizeof(magic), false) && magic == CUHOOK_AGENT_CONTROL_MAGIC)
		return 0;
	inj_error_clear(); /* nothing to say: there is no status line, that is all */
	cuhook_inject_progress_close(s);
	return -1;
}

int cuhook_inject_progress_read(const struct cuhook_progress_src *s, struct cuhook_progress *p)
{
	struct cuhook_agent_control c;
	/* after an exec the address is another program's: its magic tells */
	if (!live_mem(s->pid, s->fd, s->ctl, &c, sizeof(c), false) || c.magic != CUHOOK_AGENT_CONTROL_MAGIC)
		return -1;
	*p = (struct cuhook_progress){c.events, c.counted, c.bytes, c.dropped};
	return 0;
}

void cuhook_inject_progress_close(struct cuhook_progress_src *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}
