/* Every thread of a process: seize them all, including those born while we do it.
 *
 * ptrace works on threads, not processes: stopping a process means seizing and interrupting
 * each thread listed in /proc/PID/task. A thread we have not stopped yet may create another one
 * meanwhile, so we list again until a pass finds no new thread: once every listed thread is
 * stopped, nobody is left to create one. */
#include "internal.h"

#include "cuhook_agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

void target_init(struct itarget *tg, pid_t pid)
{
	memset(tg, 0, sizeof(*tg));
	tg->pid = pid;
	tg->memfd = -1;
}

void target_free(struct itarget *tg)
{
	if (tg->memfd >= 0)
		close(tg->memfd);
	free(tg->th);
	tg->th = NULL;
	free(tg->held);
	tg->held = NULL;
	if (tg->early) {
		maps_free(tg->early);
		free(tg->early);
		tg->early = NULL;
	}
	tg->nheld = tg->capheld = 0;
	tg->nth = tg->cap = 0;
	tg->memfd = -1;
}

static struct ithread *target_find(struct itarget *tg, pid_t tid)
{
	for (int i = 0; i < tg->nth; i++)
		if (tg->th[i].tid == tid)
			return &tg->th[i];
	return NULL;
}

struct ithread *target_add_thread(struct itarget *tg, pid_t tid)
{
	if (tg->nth == tg->cap) {
		int cap = tg->cap ? tg->cap * 2 : 16;
		struct ithread *n = realloc(tg->th, (size_t)cap * sizeof(*n));
		if (!n)
			return NULL;
		tg->th = n;
		tg->cap = cap;
	}
	struct ithread *t = &tg->th[tg->nth++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	return t;
}

static void target_remove(struct itarget *tg, int i)
{
	tg->th[i] = tg->th[--tg->nth];
}

/* The thread ids of pid now. */
static int list_tasks(pid_t pid, pid_t **out, int *n)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/task", pid);
	DIR *d = opendir(p);
	if (!d)
		return -errno;
	int cap = 64, cnt = 0;
	pid_t *v = malloc((size_t)cap * sizeof(*v));
	struct dirent *e;
	while (v && (e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		if (cnt == cap) {
			pid_t *nv = realloc(v, (size_t)(cap *= 2) * sizeof(*v));
			if (!nv) {
				free(v);
				v = NULL;
				break;
			}
			v = nv;
		}
		v[cnt++] = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	if (!v)
		return -ENOMEM;
	*out = v;
	*n = cnt;
	return 0;
}

bool task_stat(pid_t pid, pid_t tid, char *state, uint64_t *cpu)
{
	char p[96], buf[1024];
	snprintf(p, sizeof(p), "/proc/%d/task/%d/stat", pid, tid);
	FILE *f = fopen(p, "re");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *rp = strrchr(buf, ')'); /* the name may contain spaces and parentheses */
	char st = 0;
	unsigned long long ut = 0, stime = 0;
	/* after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
	 * utime stime */
	if (!rp || sscanf(rp + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &st, &ut,
	                  &stime) != 3)
		return false;
	if (state)
		*state = st;
	if (cpu)
		*cpu = ut + stime;
	return true;
}

/* One letter of /proc/PID/task/TID/stat: R, S, D, T, t, Z, X... or 0. */
static char thread_state(pid_t pid, pid_t tid)
{
	char s = 0;
	task_stat(pid, tid, &s, NULL);
	return s;
}

int agent_threads_read(struct itarget *tg, pid_t *tids)
{
	if (!tg->agent_threads)
		return 0;
	int fd = tg->memfd;
	if (fd < 0 && !tg->mem_ptrace) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/mem", tg->pid);
		fd = open(p, O_RDONLY | O_CLOEXEC);
	}
	/* The agent changes the list while we read it (a writer starting or leaving): a copy read
	 * between two equal readings of the generation is whole. */
	struct cuhook_agent_threads a, b;
	bool ok = false;
	for (int tries = 0; tries < 1000 && !ok; tries++)
		ok = live_mem(tg->pid, fd, tg->agent_threads, &a, sizeof(a), false) &&
		     live_mem(tg->pid, fd, tg->agent_threads + offsetof(struct cuhook_agent_threads, generation),
		              &b.generation, sizeof(b.generation), false) &&
		     a.generation == b.generation;
	int err = errno;
	if (fd >= 0 && fd != tg->memfd)
		close(fd);
	if (!ok || a.magic != CUHOOK_AGENT_THREADS_MAGIC) {
		inj_error("cannot read the list of the agent's own threads in process %d: %s", tg->pid,
		          ok ? "not the layout this cuhook knows (another version of the agent?)" : strerror(err));
		return -1;
	}
	int n = 0;
	for (int i = 0; i < CUHOOK_AGENT_THREADS_MAX; i++)
		if (a.tid[i] > 0)
			tids[n++] = a.tid[i];
	return n;
}

static bool listed(const pid_t *tids, int n, pid_t tid)
{
	for (int i = 0; i < n; i++)
		if (tids[i] == tid)
			return true;
	return false;
}

/* Is this thread traced by us already? */
static bool traced_by_us(pid_t pid, pid_t tid)
{
	char p[96], buf[4096];
	snprintf(p, sizeof(p), "/proc/%d/task/%d/status", pid, tid);
	FILE *f = fopen(p, "re");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *t = strstr(buf, "TracerPid:");
	return t && atoi(t + 10) == (int)getpid();
}

int threads_seize_all(struct itarget *tg, int stop_timeout_ms)
{
	for (int round = 0;; round++) {
		pid_t *tids = NULL;
		int n, r = list_tasks(tg->pid, &tids, &n);
		if (r < 0) {
			inj_error(r == -ENOENT ? "process %d exited" : "cannot list the threads of %d: %s",
			          tg->pid, strerror(-r));
			goto fail;
		}
		/* The agent's own threads (its writer) are left running: they never execute patched
		 * code, and cuhook_agent_stop() may wait for them to flush. Known by id (the agent
		 * lists them), never by name: a thread of the program may be called anything. */
		pid_t own[CUHOOK_AGENT_THREADS_MAX];
		int nown = agent_threads_read(tg, own);
		if (nown < 0) {
			free(tids);
			goto fail;
		}
		int first_new = tg->nth;
		for (int i = 0; i < n; i++) {
			if (target_find(tg, tids[i]) || listed(own, nown, tids[i]) || tids[i] == tg->loader_tid)
				continue;
			r = pt_seize(tids[i]);
			if (r == -ESRCH)
				continue; /* exited since the listing */
			if (r == -EPERM && traced_by_us(tg->pid, tids[i]))
				r = 0; /* ours already (cuhook run --follow traces every thread): interrupt it */
			if (r == -EPERM) {
				/* A zombie thread (a leader that called pthread_exit) cannot be seized, and
				 * needs not be: it runs no code. Nor can a thread that is exiting (gone
				 * from /proc by now: no state), which a program ending threads all the time
				 * always has. */
				char s = thread_state(tg->pid, tids[i]);
				if (s == 'Z' || s == 'X' || s == 0)
					continue;
			}
			if (r < 0) {
				free(tids);
				explain_seize_error(tg->pid, -r);
				goto fail;
			}
			if (!tg->first_stop_ns)
				tg->first_stop_ns = inj_now_ns();
			struct ithread *t = target_add_thread(tg, tids[i]);
			if (!t) {
				/* Seized but not tracked: detach it right away (it is not stopped yet, but a
				 * seized thread that was never interrupted can be detached only once it
				 * stops; interrupt it so it does). */
				pt_interrupt(tids[i]);
				int st;
				if (pt_wait(tids[i], &st, 1000) == 1)
					ptrace(PTRACE_DETACH, tids[i], 0, 0);
				free(tids);
				inj_error("out of memory");
				goto fail;
			}
			pt_interrupt(t->tid);
			t->held_since = inj_now_ns(); /* from here it cannot run, as the program sees it */
		}
		free(tids);
		if (tg->nth == first_new)
			break; /* a pass with every thread already stopped: nobody can start another */
		for (int i = first_new; i < tg->nth;) {
			r = pt_wait_first_stop(tg, &tg->th[i], stop_timeout_ms);
			if (r < 0)
				goto fail;
			if (r == 1)
				target_remove(tg, i); /* exited meanwhile */
			else
				i++;
		}
		if (tg->nth == 0) {
			inj_error("process %d exited", tg->pid);
			goto fail;
		}
		if (round > 10000) {
			inj_error("process %d keeps creating threads faster than they can be stopped", tg->pid);
			goto fail;
		}
	}
	for (int i = 0; i < tg->nth; i++)
		if (pt_getregs(tg->th[i].tid, &tg->th[i].regs) < 0)
			goto fail;
	return 0;
fail:
	threads_detach_all(tg);
	return -1;
}

/* Let a held thread go on (PTRACE_DETACH or PTRACE_CONT, `verb` for the warning) with its
 * registers written back if we changed them. The first signal that arrived while we held it goes
 * back with the request, the others by tgkill once it runs: the process gets each of them. A
 * SIGCONT goes back with the request, never by tgkill: its effect (the process continued) came
 * when it was sent; a new one would continue a stop that came after it. */
/* Count one hold of tid that lasted ns. */
static void held_add(struct itarget *tg, pid_t tid, uint64_t ns)
{
	struct held *h = NULL;
	for (int i = 0; i < tg->nheld && !h; i++)
		if (tg->held[i].tid == tid)
			h = &tg->held[i];
	if (!h) {
		if (tg->nheld == tg->capheld) {
			int cap = tg->capheld ? tg->capheld * 2 : 64;
			struct held *n = realloc(tg->held, (size_t)cap * sizeof(*n));
			if (!n)
				return; /* the figures are for the operator: missing one harms nothing */
			tg->held = n;
			tg->capheld = cap;
		}
		h = &tg->held[tg->nheld++];
		memset(h, 0, sizeof(*h));
		h->tid = tid;
	}
	if (ns > h->max_ns)
		h->max_ns = ns;
	h->total_ns += ns;
	h->holds++;
}

static void release_thread(struct itarget *tg, struct ithread *t, int request, const char *verb)
{
	if (t->regs_dirty && ptrace(PTRACE_SETREGS, t->tid, 0, &t->regs) != 0)
		fprintf(stderr, "cuhook: warning: thread %d: cannot write back its registers: %s\n",
		        t->tid, strerror(errno));
	int first = 0;
	for (int k = 0; k < t->npending; k++)
		if (t->pending[k] == SIGCONT)
			first = k;
	int sig = t->npending ? t->pending[first] : 0;
	if (t->held_since) /* until here it cannot have run, as the program sees it */
		held_add(tg, t->tid, inj_now_ns() - t->held_since);
	t->held_since = 0;
	if (ptrace(request, t->tid, 0, (void *)(long)sig) != 0 && errno != ESRCH)
		fprintf(stderr, "cuhook: warning: cannot %s thread %d: %s\n", verb, t->tid, strerror(errno));
	for (int k = 0; k < t->npending; k++)
		if (k != first)
			syscall(SYS_tgkill, tg->pid, t->tid, t->pending[k]);
	t->stopped = false;
	t->regs_dirty = false;
	t->npending = 0;
}

void threads_detach_all(struct itarget *tg)
{
	uint64_t since = UINT64_MAX;
	int n = 0;
	for (int i = 0; i < tg->nth; i++)
		if (tg->th[i].held_since && tg->th[i].held_since < since)
			since = tg->th[i].held_since;
	for (int i = 0; i < tg->nth; i++) {
		struct ithread *t = &tg->th[i];
		n++;
		if (!t->stopped) {
			/* Seized and interrupted, never waited for: PTRACE_DETACH needs a stopped
			 * thread. If it does not stop, the kernel detaches it when we exit. */
			if (pt_wait_first_stop(tg, t, 500) != 0)
				continue;
		}
		release_thread(tg, t, PTRACE_DETACH, "detach");
	}
	/* when, on the clock programs read (what a program that timestamps its work can match) */
	if (n && since != UINT64_MAX)
		inj_log("%d thread%s let go, held from %llu to %llu ns (CLOCK_MONOTONIC)", n, n == 1 ? "" : "s",
		        (unsigned long long)since, (unsigned long long)inj_now_ns());
	tg->nth = 0;
}

void threads_resume_all(struct itarget *tg, long options)
{
	for (int i = 0; i < tg->nth; i++) {
		struct ithread *t = &tg->th[i];
		if (!t->stopped && pt_wait_first_stop(tg, t, 500) != 0)
			continue;
		ptrace(PTRACE_SETOPTIONS, t->tid, 0, (void *)options);
		release_thread(tg, t, PTRACE_CONT, "resume");
	}
	tg->nth = 0;
}

/* Is addr inside the C library or the dynamic loader (where the locks a remote call may need,
 * malloc's and the loader's, are taken)? */
static bool in_libc(const struct maps *m, uint64_t addr)
{
	const struct mapping *mp = maps_find_addr(m, addr);
	if (!mp || !mp->path)
		return false;
	const char *b = strrchr(mp->path, '/');
	b = b ? b + 1 : mp->path;
	return !strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5) || !strncmp(b, "ld-linux", 8) ||
	       !strncmp(b, "libpthread", 10) || !strncmp(b, "ld-musl", 7) || !strncmp(b, "libc.musl", 9);
}

struct ithread *threads_pick_caller(struct itarget *tg, const struct maps *m)
{
	/* The remote call (dlopen, the agent's start) takes malloc's and the loader's locks; if the
	 * thread it runs on was stopped while holding one of them (inside malloc), it deadlocks on
	 * itself. And the program feels the time its thread is held as a stall, unless that thread
	 * was waiting anyway. So, best first:
	 *   0  blocked in a system call other than futex (read, poll, nanosleep...): the wrappers
	 *      hold no lock; the registers, orig_rax included, are put back exactly afterwards, so
	 *      the kernel restarts the call as after a signal handler; it was waiting: it loses
	 *      nothing unless what it waits for comes meanwhile
	 *   1  running code outside libc and the loader: it holds no libc lock
	 *   2  waiting in futex: for a lock (it might hold another) or a condition
	 *   3  anything else (inside libc, maybe inside malloc) */
	struct ithread *best = NULL;
	int best_rank = 4;
	for (int i = 0; i < tg->nth && best_rank > 0; i++) {
		struct ithread *t = &tg->th[i];
		int rank;
		if (regs_in_restartable_syscall(&t->regs))
			rank = t->regs.orig_rax == SYS_futex ? 2 : 0;
		else if ((long)t->regs.orig_rax < 0 && !in_libc(m, t->regs.rip))
			rank = 1;
		else
			rank = 3;
		if (rank < best_rank) {
			best = t;
			best_rank = rank;
		}
	}
	return best;
}

_Static_assert(INJ_MAX_LENT >= CUHOOK_AGENT_THREADS_MAX, "room to lend every thread the agent lists");

int threads_lend_agent(struct itarget *tg)
{
	/* By the agent's own list, as threads_seize_all leaves them. Unreadable now (it was read
	 * for the seize): none is lent, and the message stays, as the likely cause should the stop
	 * then not finish. */
	pid_t tids[CUHOOK_AGENT_THREADS_MAX];
	int n = agent_threads_read(tg, tids), lent = 0;
	for (int i = 0; i < n && tg->nlent < INJ_MAX_LENT; i++) {
		if (target_find(tg, tids[i]))
			continue;
		/* Running, it runs on (seized, not interrupted); in a group-stop, the seize makes it
		 * report a stop, which pt_wait answers by resuming it, as any stop after this. */
		if (pt_keep_running(tids[i]) != 0)
			break;
		if (pt_seize(tids[i]) != 0) {
			pt_keep_running_end(tids[i]);
			continue;
		}
		tg->lent[tg->nlent++] = tids[i];
		lent++;
	}
	return lent;
}

void threads_unlend_agent(struct itarget *tg)
{
	for (int i = 0; i < tg->nlent; i++) {
		pid_t tid = tg->lent[i];
		pt_keep_running_end(tid);
		struct ithread t = {.tid = tid};
		if (pt_interrupt(tid) != 0 || pt_wait_first_stop(tg, &t, 500) != 0)
			continue; /* ended (reaped by the wait), or not stopping: detached when we exit */
		ptrace(PTRACE_DETACH, tid, 0, (void *)(long)(t.npending ? t.pending[0] : 0));
	}
	tg->nlent = 0;
}

struct ithread *threads_release_others(struct itarget *tg, pid_t keep)
{
	struct ithread kept;
	bool found = false;
	for (int i = 0; i < tg->nth; i++)
		if (tg->th[i].tid == keep) {
			kept = tg->th[i];
			tg->th[i] = tg->th[--tg->nth];
			found = true;
			break;
		}
	threads_detach_all(tg);
	if (!found)
		return NULL;
	tg->th[0] = kept;
	tg->nth = 1;
	return &tg->th[0];
}
