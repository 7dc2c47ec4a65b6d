/* cuhook run --follow: the program's whole process tree, one trace file per process.
 *
 * cuhook stays the tracer of every task of the tree, event-only: PTRACE_O_TRACEFORK, TRACEVFORK,
 * TRACECLONE (new tasks, threads included, are traced from their first instruction, so that
 * what they fork or exec is seen too) and TRACEEXEC. Everything else runs freely; a signal
 * that stops a task on its way in is passed on at once, and a group-stop (SIGSTOP, Ctrl-Z) is
 * kept with PTRACE_LISTEN until SIGCONT.
 *
 * Two ways a process gets a trace of its own:
 *  - it execs a program: at the exec event the loader is made to jump to a stub that reports
 *    the program's entry (rentry_install) and, when it does, the agent is put in exactly as
 *    `cuhook run` does (inject_at_entry), with the same options; follow=1 makes the agent write
 *    FILE.PID;
 *  - it forks without exec: the child inherits the agent, started, and (follow=1) the agent's
 *    atfork handler opens FILE.CHILDPID and starts a writer in the child (src/agent/agent.c).
 *    Nothing to do here.
 * A process that execs after its earlier image wrote a trace: that file is renamed
 * FILE.PID-1.EXT (-2...) so the new image's FILE.PID does not overwrite it; an earlier image
 * that recorded no call (a fork child that execs at once) leaves nothing behind. */
#include "agent_options.h"
#include "inject.h"
#include "internal.h"

#include "trace_format.h"
#include "text_safe.h"
#include "trace_path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct timespec follow_t0; /* CLOCK_REALTIME when following began */

void follow_begin(void)
{
	clock_gettime(CLOCK_REALTIME, &follow_t0);
}

/* A process whose new image has not reached its entry point yet. */
struct pending {
	pid_t pid;
	struct rentry entry;
	char exe[PATH_MAX];
};

static struct pending *pend;
static int npend, cap_pend;

static struct pending *pending_find(pid_t pid)
{
	for (int i = 0; i < npend; i++)
		if (pend[i].pid == pid)
			return &pend[i];
	return NULL;
}

static void pending_drop(pid_t pid)
{
	for (int i = 0; i < npend; i++)
		if (pend[i].pid == pid) {
			pend[i] = pend[--npend];
			return;
		}
}

static struct pending *pending_add(pid_t pid)
{
	pending_drop(pid);
	if (npend == cap_pend) {
		int cap = cap_pend ? cap_pend * 2 : 8;
		struct pending *n = realloc(pend, (size_t)cap * sizeof(*n));
		if (!n)
			return NULL;
		pend = n;
		cap_pend = cap;
	}
	struct pending *p = &pend[npend++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	return p;
}

/* A trace file of process pid: 1 if it holds recorded calls (an EVENTS block), 0 if not, -1 if
 * it is not such a file. */
static int trace_has_events(const char *path, pid_t pid)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct cuhook_file_header h;
	int ret = -1;
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    memcmp(h.magic, CUHOOK_TRACE_MAGIC, sizeof(h.magic)) != 0 || h.pid != (uint32_t)pid)
		goto out;
	ret = 0;
	for (off_t pos = h.header_size;;) {
		struct cuhook_block b;
		if (pread(fd, &b, sizeof(b), pos) != (ssize_t)sizeof(b) || b.magic != CUHOOK_BLOCK_MAGIC)
			break;
		if (b.type == CUHOOK_BLOCK_EVENTS) {
			ret = 1;
			break;
		}
		pos += (off_t)sizeof(b) + b.size;
	}
out:
	close(fd);
	return ret;
}

/* rename(from, to) unless `to` exists (whatever it is: a file, a dangling link): 0, or -errno,
 * -EEXIST when something is there. Never replaces: checking first and renaming after would let
 * an entry made in between be replaced. Where renameat2's RENAME_NOREPLACE is not supported (an
 * older kernel, some file systems), a hard link that fails on an existing name does the same,
 * and the old name is then removed. */
static int rename_noreplace(const char *from, const char *to)
{
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
		return -errno;
	if (link(from, to) != 0)
		return -errno;
	unlink(from);
	return 0;
}

/* pid has just exec'd: its earlier image is gone, and with it any writer of FILE.PID. Keep a
 * trace that image recorded under another name; drop one with nothing in it. */
static void set_aside_earlier_trace(pid_t pid, const struct cuhook_inject_opts *o)
{
	char out[PATH_MAX], f[PATH_MAX + 32];
	aopt_get(o->agent_options, AOPT_OUTPUT, out, sizeof(out));
	if (!out[0])
		return;
	cuhook_trace_path(out, (int)pid, true, f, sizeof(f));
	struct stat sb;
	if (lstat(f, &sb) != 0 || !S_ISREG(sb.st_mode))
		return; /* not a file an agent wrote (a link someone put there is not ours to move) */
	/* Older than this run: a file of an earlier run and a recycled pid, left to the new image's
	 * agent (which replaces it with force=1 only). */
	if (sb.st_mtim.tv_sec < follow_t0.tv_sec ||
	    (sb.st_mtim.tv_sec == follow_t0.tv_sec && sb.st_mtim.tv_nsec < follow_t0.tv_nsec))
		return;
	int ev = trace_has_events(f, pid);
	if (ev < 0)
		return;
	if (ev == 0) {
		unlink(f);
		return;
	}
	/* FILE.PID.EXT -> FILE.PID-N.EXT, the first N free */
	const char *base = strrchr(f, '/');
	base = base ? base + 1 : f;
	const char *dot = strrchr(base, '.');
	size_t stem = dot && dot != base ? (size_t)(dot - f) : strlen(f);
	for (int n = 1; n < 1000; n++) {
		char g[PATH_MAX + 48];
		snprintf(g, sizeof(g), "%.*s-%d%s", (int)stem, f, n, f + stem);
		int r = rename_noreplace(f, g);
		if (r == 0)
			inj_log("process %d exec'd: the trace of its earlier program is now %s", pid, g);
		if (r != -EEXIST)
			return;
	}
}

/* why: an inj_error text (made safe already) or ours */
static void warn_untraced(pid_t pid, const char *exe, const char *why)
{
	char shown[PATH_MAX * TEXT_SAFE_GROWTH / 4];
	fprintf(stderr, "cuhook: process %d (%s) is not traced: %s\n", pid, text_safe(shown, sizeof(shown), exe), why);
}

/* PTRACE_EVENT_EXEC of pid (the thread that exec'd now has the process's id). */
static void on_exec(pid_t pid, const struct cuhook_inject_opts *o)
{
	pending_drop(pid); /* an image that exec'd before reaching its entry point */
	set_aside_earlier_trace(pid, o);
	char exe[PATH_MAX], link[64];
	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	ssize_t n = readlink(link, exe, sizeof(exe) - 1);
	snprintf(exe + (n > 0 ? n : 0), sizeof(exe) - (size_t)(n > 0 ? n : 0), "%s", n > 0 ? "" : "?");
	inj_log("process %d execs %s", pid, exe);

	struct itarget tg;
	target_init(&tg, pid);
	inj_error_clear();
	struct rentry entry;
	if (entry_breakpoint(&tg, exe, &entry) < 0) {
		/* Not traced itself (static, not x86-64...); what it execs later may be. */
		warn_untraced(pid, exe, inj_error_text());
		target_free(&tg);
		pt_cont(pid, 0);
		return;
	}
	struct pending *p = pending_add(pid);
	if (!p) {
		/* cannot remember it: the loader goes to the entry point itself again */
		mem_write(&tg, entry.auxv_slot, &entry.entry, 8);
		target_free(&tg);
		warn_untraced(pid, exe, "out of memory");
		pt_cont(pid, 0);
		return;
	}
	target_free(&tg);
	p->entry = entry;
	snprintf(p->exe, sizeof(p->exe), "%s", exe);
	pt_cont(pid, 0);
}

/* pid stopped with status st: its entry stub's report? Then put the agent in. */
static bool on_entry_report(pid_t pid, int st, const struct cuhook_inject_opts *o)
{
	struct pending *p = pending_find(pid);
	if (!p || !rentry_reached(pid, st, &p->entry))
		return false;
	struct pending pe = *p;
	pending_drop(pid);

	struct itarget tg;
	target_init(&tg, pid);
	inj_error_clear();
	struct cuhook_inject_times t;
	memset(&t, 0, sizeof(t));
	if (mem_open(&tg) < 0 || inject_at_entry(&tg, &pe.entry, o, &t) < 0) {
		/* The threads still stopped in tg go on (the main one back on its restored entry
		 * instruction), traced for what they fork and exec, without the agent. Those that
		 * could not be stopped were detached: the process then runs on untraced. */
		warn_untraced(pid, pe.exe, inj_error_text());
		if (!mem_ready(&tg))
			pt_cont(pid, 0);
		threads_resume_all(&tg, INJ_FOLLOW_OPTIONS);
		target_free(&tg);
		return true;
	}
	uint64_t d0 = inj_now_ns();
	threads_resume_all(&tg, INJ_FOLLOW_OPTIONS);
	t.detach_ns = inj_now_ns() - d0;
	t.stopped_ns = inj_now_ns() - tg.first_stop_ns;
	target_free(&tg);
	if (o->verbose) {
		char what[PATH_MAX + 64];
		snprintf(what, sizeof(what), "exec %d (%s)", pid, pe.exe);
		cuhook_inject_print_times(what, &t);
	}
	return true;
}

int cuhook_inject_follow(pid_t pid, const struct cuhook_inject_opts *o, int *status)
{
	inj_verbose = o->verbose;
	bool have_status = false;
	for (;;) {
		int st;
		pid_t tid = waitpid(-1, &st, __WALL);
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD)
				break; /* no task of the tree is left */
			inj_error("waiting for the traced processes: %s", strerror(errno));
			return -1;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (tid == pid) {
				*status = st;
				have_status = true;
			}
			pending_drop(tid);
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		int sig = WSTOPSIG(st), event = st >> 16;
		switch (event) {
		case PTRACE_EVENT_FORK:
		case PTRACE_EVENT_VFORK:
		case PTRACE_EVENT_CLONE: {
			unsigned long child = 0;
			ptrace(PTRACE_GETEVENTMSG, tid, 0, &child);
			if (event != PTRACE_EVENT_CLONE)
				inj_log("task %d %s process %lu", tid, event == PTRACE_EVENT_FORK ? "forked" : "vforked",
				        child);
			pt_cont(tid, 0);
			break;
		}
		case PTRACE_EVENT_EXEC:
			on_exec(tid, o);
			break;
		case PTRACE_EVENT_STOP:
			if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
				/* group-stop: stay stopped, as without us; SIGCONT ends it */
				ptrace(PTRACE_LISTEN, tid, 0, 0);
			} else {
				/* a new task's first stop (or a leftover interrupt): the options it
				 * inherited are its parent's; make sure of ours */
				ptrace(PTRACE_SETOPTIONS, tid, 0, (void *)(long)INJ_FOLLOW_OPTIONS);
				pt_cont(tid, 0);
			}
			break;
		case 0:
			if (on_entry_report(tid, st, o))
				break;
			pt_cont(tid, sig); /* the process's signal: on its way */
			break;
		default:
			pt_cont(tid, 0);
			break;
		}
	}
	if (!have_status) {
		inj_error("the program's exit status was lost");
		return -1;
	}
	return 0;
}
