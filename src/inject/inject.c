/* The injection sequences (docs/injection.md has them in prose):
 *
 * attach:  check  ->  seize + interrupt every thread (to choose the thread for remote calls)  ->
 *          when the agent must be loaded: let every other thread run again, then remote
 *          dlopen(agent) and remote cuhook_agent_prepare(options) on the chosen thread alone,
 *          then seize + interrupt every thread again  ->
 *          remote cuhook_agent_start(options, THREADS_STOPPED)  ->  fix up each thread's ip  ->
 *          detach every thread
 * detach:  seize + interrupt every thread  ->  remote cuhook_agent_stop(0)  ->  fix up ips back
 *          ->  detach
 * spawn:   fork; the child waits for our word on a pipe, then execs; we seize it, send the word,
 *          stop it at its entry point (reported by a stub in the gate page), then the attach
 *          sequence on that (normally single-threaded) process.
 *
 * The agent is found after loading by its mapping in /proc/PID/maps and its API by the ELF
 * symbols of its file, so a second attach (agent already there) needs no dlopen at all. */
#include "agent_options.h"
#include "inject.h"
#include "internal.h"

#include "cuhook_agent.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STOP_TIMEOUT_MS 2000  /* a thread that does not stop in this time is in the kernel (D) */
#define FIXUP_TIMEOUT_MS 1000 /* fixup_ip takes no lock and returns at once */
/* glibc < 2.34 has no dlopen in libc.so; its private __libc_dlopen_mode needs this mode bit
 * (what dlopen adds itself) to run the constructors as dlopen would. */
#define GLIBC_RTLD_DLOPEN 0x80000000u

static int raise_priority(void);

struct agent_api {
	const char *path;
	uint64_t start, stop, fixup_ip, last_error, active;
	uint64_t fixup_ips; /* optional (0: an older agent; fixup_ip once per thread) */
	uint64_t prepare; /* optional (0: an agent without it; start then does all the work) */
	uint64_t prepare_stop; /* optional (0: an agent without it, or without the GPU side) */
	uint64_t prepare_stop_begin, gpu_done; /* optional: the same without holding the caller */
	uint64_t threads; /* cuhook_agent_threads (0: an agent without it, whose threads are stopped too) */
};

const char *cuhook_inject_error(void)
{
	return inj_error_text();
}

/* The agent's message after the last start (cuhook_agent_last_error). */
static char agent_message[1024];

const char *cuhook_inject_agent_notes(void)
{
	const char *nl = strchr(agent_message, '\n');
	return nl ? nl + 1 : "";
}

static int call_timeout(const struct cuhook_inject_opts *o)
{
	return o->call_timeout_ms > 0 ? o->call_timeout_ms : CUHOOK_INJECT_CALL_TIMEOUT_MS;
}

/* Look up the agent's API in the object mapped from path. */
static int agent_api_at(pid_t pid, const struct maps *m, const char *path, struct agent_api *api)
{
	api->path = path;
	api->start = target_symbol(pid, m, path, "cuhook_agent_start");
	api->stop = target_symbol(pid, m, path, "cuhook_agent_stop");
	api->fixup_ip = target_symbol(pid, m, path, "cuhook_agent_fixup_ip");
	api->last_error = target_symbol(pid, m, path, "cuhook_agent_last_error");
	api->active = target_symbol(pid, m, path, "cuhook_agent_active");
	api->prepare = target_symbol(pid, m, path, "cuhook_agent_prepare");
	api->fixup_ips = target_symbol(pid, m, path, "cuhook_agent_fixup_ips");
	api->prepare_stop = target_symbol(pid, m, path, "cuhook_agent_prepare_stop");
	api->prepare_stop_begin = target_symbol(pid, m, path, "cuhook_agent_prepare_stop_begin");
	api->gpu_done = target_symbol(pid, m, path, "cuhook_agent_gpu_done");
	api->threads = target_symbol(pid, m, path, "cuhook_agent_threads");
	return api->start && api->stop && api->fixup_ip && api->last_error ? 0 : -1;
}

/* The agent already in the process: ours by path first, else any object exporting the API (a
 * libcuhook.so from another build, or one loaded in constructor mode). */
static int find_agent(pid_t pid, const struct maps *m, const char *want, struct agent_api *api)
{
	for (int i = 0; i < m->n; i++)
		if (m->m[i].path && strcmp(m->m[i].path, want) == 0)
			return agent_api_at(pid, m, m->m[i].path, api);
	const char *p = maps_find_object(m, "libcuhook");
	if (p && agent_api_at(pid, m, p, api) == 0)
		return 0;
	return -1;
}

int agent_object_at(pid_t pid, const char *agent_path, const char *sym, uint64_t *addr)
{
	struct maps m;
	struct agent_api api;
	*addr = 0;
	if (maps_read(pid, &m) < 0)
		return -1;
	int found = find_agent(pid, &m, agent_path, &api) == 0;
	if (found)
		*addr = target_symbol(pid, &m, api.path, sym);
	maps_free(&m);
	return found;
}

/* Where the agent already in the process (if any) lists its own threads, so that stopping the
 * process leaves them running: looked up before anything is stopped. 0: no agent. */
static uint64_t agent_threads_at(pid_t pid, const char *agent_path)
{
	uint64_t a;
	if (agent_object_at(pid, agent_path, "cuhook_agent_threads", &a) < 0)
		inj_error_clear(); /* the process is gone, or unreadable: seizing it will say which */
	return a;
}

/* A string the target returned (dlerror(), cuhook_agent_last_error()). */
static void remote_message(struct itarget *tg, struct ithread *th, uint64_t fn, char *buf, size_t len,
                           int timeout_ms)
{
	snprintf(buf, len, "(no message)");
	if (!fn)
		return;
	struct rcall rc;
	rcall_begin(&rc, tg, th);
	uint64_t p = 0;
	if (rcall_invoke(&rc, fn, NULL, 0, &p, timeout_ms, "reading the error message") == RC_OK && p)
		mem_read_string(tg, p, buf, len);
}

static void slow_beside(struct rcall *rc)
{
	(void)rc;
	inj_log("dlopen slow while the other threads run: waiting once more");
}

/* The remote dlopen is slow: most likely another (stopped) thread holds a lock it waits for,
 * malloc's or the loader's. dlopen is made to run beside other threads, so let them run: the
 * holder finishes and releases the lock. They are stopped again once dlopen has returned. */
static void release_during_dlopen(struct rcall *rc)
{
	uint64_t t0 = inj_now_ns();
	rc->th = threads_release_others(rc->tg, rc->th->tid);
	inj_log("dlopen slow: the other threads run until it returns (released in %.2f ms)",
	        (inj_now_ns() - t0) / 1e6);
}

/* dlopen and its companions in the target: libc's (glibc >= 2.34), __libc_dlopen_mode (older
 * glibc), or any mapped object's (musl, a loaded libdl). */
struct dl_fns {
	uint64_t dlopen_fn, dlerror_fn, dlsym_fn;
	unsigned mode;
	const char *lib; /* points into the maps */
};

static int find_dlopen(struct itarget *tg, const struct maps *m, struct dl_fns *f)
{
	memset(f, 0, sizeof(*f));
	f->mode = RTLD_NOW;
	const char *lib = maps_find_object(m, "libc.so.6");
	if (!lib)
		lib = maps_find_object(m, "libc-");
	if (lib) {
		f->dlopen_fn = target_symbol(tg->pid, m, lib, "dlopen");
		f->dlerror_fn = target_symbol(tg->pid, m, lib, "dlerror");
		f->dlsym_fn = target_symbol(tg->pid, m, lib, "dlsym");
		if (!f->dlopen_fn) {
			f->dlopen_fn = target_symbol(tg->pid, m, lib, "__libc_dlopen_mode");
			f->mode |= GLIBC_RTLD_DLOPEN;
			f->dlerror_fn = f->dlsym_fn = 0;
		}
	}
	if (!f->dlopen_fn) {
		/* musl (dlopen in its libc/loader), or an old glibc's libdl loaded by the program. */
		lib = maps_find_defining(tg->pid, m, "dlopen", &f->dlopen_fn);
		if (lib) {
			f->dlerror_fn = target_symbol(tg->pid, m, lib, "dlerror");
			f->dlsym_fn = target_symbol(tg->pid, m, lib, "dlsym");
		}
	}
	if (!f->dlopen_fn) {
		inj_error("no dlopen in process %d (no libc.so mapped: a static program?): the agent "
		          "cannot be loaded", tg->pid);
		return -1;
	}
	f->lib = lib;
	return 0;
}

/* dlopen(agent, RTLD_NOW) on thread *thp. If the call is slow, the other threads are let run
 * (*released is then true, and *thp updated): the caller stops them again. */
static int load_agent(struct itarget *tg, struct ithread **thp, const struct maps *m,
                      const struct cuhook_inject_opts *o, bool *released)
{
	struct ithread *th = *thp;
	struct dl_fns f;
	if (find_dlopen(tg, m, &f) < 0)
		return -1;
	uint64_t dlopen_fn = f.dlopen_fn, dlerror_fn = f.dlerror_fn;
	unsigned mode = f.mode;
	inj_log("dlopen at 0x%llx in %s, called on thread %d%s", (unsigned long long)dlopen_fn, f.lib,
	        th->tid, regs_in_restartable_syscall(&th->regs) ? " (stopped in a system call)" : "");

	struct rcall rc;
	rcall_begin(&rc, tg, th);
	uint64_t path = rcall_push_string(&rc, o->agent_path);
	if (!path)
		return -1;
	uint64_t args[2] = {path, mode}, handle = 0;
	/* With the other threads running already, a slow dlopen just gets a second timeout. */
	rc.on_slow = *released ? slow_beside : release_during_dlopen;
	rc.leave_on_timeout = *released;
	int r = rcall_invoke(&rc, dlopen_fn, args, 2, &handle, call_timeout(o), "dlopen of the agent");
	th = rc.th;
	*thp = th;
	if (rc.slow)
		*released = true;
	if (r != RC_OK)
		return -1; /* th may be NULL: left to finish its call */
	char sc[64];
	if (!handle) {
		char msg[1024];
		remote_message(tg, th, dlerror_fn, msg, sizeof(msg), call_timeout(o));
		if (rc.seccomp_denied)
			inj_error("a seccomp filter of process %d refuses %s, which loading the agent needs "
			          "(dlopen: %s). Backed out; the process goes on.",
			          tg->pid, syscall_name(rc.seccomp_nr, sc, sizeof(sc)), msg);
		else if (target_seccomp_mode(tg->pid) == 2)
			/* A filter that answers with an errno (SECCOMP_RET_ERRNO) sends no signal to see: dlopen
			 * just fails with that error, which alone reads like a file permission problem. */
			inj_error("process %d could not load the agent %s: %s. The process runs under a seccomp "
			          "filter (Seccomp: 2 in /proc/%d/status), which probably refused a system call "
			          "dlopen needs (openat, mmap, mprotect...) with that error; cuhook cannot load its "
			          "agent into it. Backed out; the process goes on.",
			          tg->pid, o->agent_path, msg, tg->pid);
		else
			inj_error("process %d could not load the agent %s: %s", tg->pid, o->agent_path, msg);
		return -1;
	}
	if (rc.seccomp_denied)
		inj_log("note: seccomp refused %d system call(s) during dlopen, the first %s", rc.seccomp_denied,
		        syscall_name(rc.seccomp_nr, sc, sizeof(sc)));
	return 0;
}

/* The agent as the target sees it: the same file, or at least a file at the same path. */
static int check_agent_visible(pid_t pid, const char *agent)
{
	char p[PATH_MAX + 64];
	struct stat a, b;
	if (stat(agent, &a) != 0) {
		inj_error("agent library %s: %s", agent, strerror(errno));
		return -1;
	}
	snprintf(p, sizeof(p), "/proc/%d/root%s", pid, agent);
	if (stat(p, &b) != 0) {
		inj_error("process %d does not see the agent library at %s (it runs in another mount "
		          "namespace, a container?): copy libcuhook.so to the same path inside it, or run "
		          "cuhook inside it", pid, agent);
		return -1;
	}
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		inj_log("note: process %d sees another file at %s than we do (container?); loading that one",
		        pid, agent);
	return 0;
}

/* Move every thread whose ip the agent maps elsewhere (into a relocated copy at start, back to
 * the original at stop). A thread stopped in a restartable system call resumes at ip - 2 (the
 * kernel re-executes the 2-byte `syscall`), so that is the address that must be mapped. One
 * remote call for all of them where the agent has cuhook_agent_fixup_ips (with 128 threads, a
 * call per thread held the process 25-40 ms here), else one per thread. */
static int fixup_threads(struct itarget *tg, struct ithread *caller, const struct agent_api *api,
                         struct cuhook_inject_times *t)
{
	uint64_t *probe = calloc((size_t)tg->nth + 1, sizeof(*probe));
	if (!probe) {
		inj_error("out of memory");
		return -1;
	}
	for (int i = 0; i < tg->nth; i++) {
		const struct user_regs_struct *r = &tg->th[i].regs;
		probe[i] = regs_in_restartable_syscall(r) ? r->rip - 2 : r->rip;
	}
	int ret = -1;
	if (api->fixup_ips) {
		struct rcall rc;
		rcall_begin(&rc, tg, caller);
		size_t len = (size_t)tg->nth * sizeof(*probe);
		uint64_t at = rcall_push(&rc, probe, len), moved = 0;
		uint64_t args[2] = {at, (uint64_t)tg->nth};
		if (!at || rcall_invoke(&rc, api->fixup_ips, args, 2, &moved, FIXUP_TIMEOUT_MS,
		                        "cuhook_agent_fixup_ips") != RC_OK || mem_read(tg, at, probe + 0, len) < 0)
			goto out;
	}
	for (int i = 0; i < tg->nth; i++) {
		struct ithread *th = &tg->th[i];
		uint64_t ip = th->regs.rip;
		uint64_t p = regs_in_restartable_syscall(&th->regs) ? ip - 2 : ip, mapped = probe[i];
		if (!api->fixup_ips) {
			struct rcall rc;
			rcall_begin(&rc, tg, caller);
			uint64_t args[1] = {p};
			mapped = p;
			if (rcall_invoke(&rc, api->fixup_ip, args, 1, &mapped, FIXUP_TIMEOUT_MS,
			                 "cuhook_agent_fixup_ip") != RC_OK)
				goto out;
		}
		if (mapped != p) {
			th->regs.rip = mapped + (ip - p);
			th->regs_dirty = true;
			/* At once, not at detach: should we be killed before, the thread must not resume
			 * inside the bytes a jump overwrites (or will). */
			if (pt_setregs(th->tid, &th->regs) < 0)
				goto out;
			t->moved++;
			inj_log("thread %d moved from 0x%llx to 0x%llx", th->tid, (unsigned long long)ip,
			        (unsigned long long)th->regs.rip);
		}
	}
	ret = 0;
out:
	free(probe);
	return ret;
}

/* The thread that runs our remote calls competes for the CPU with everything else on the
 * machine (the target's other threads are stopped, but the agent's writer and other processes
 * are not), and each round trip waits for it to be scheduled. It gets our priority (nice -20,
 * when we may) for the sequence, and its own back after. */
struct boost {
	pid_t tid;
	int old;
	bool set;
};

static void boost_thread(struct boost *b, pid_t tid)
{
	b->tid = tid;
	errno = 0;
	b->old = getpriority(PRIO_PROCESS, (id_t)tid);
	b->set = errno == 0 && b->old > -20 && setpriority(PRIO_PROCESS, (id_t)tid, -20) == 0;
}

static void unboost(struct boost *b)
{
	if (b->set)
		setpriority(PRIO_PROCESS, (id_t)b->tid, b->old);
	b->set = false;
}

/* Threads the agent created during a boosted start (its writer) inherited nice -20 from the
 * caller; they get the nice level the caller has normally, as without us. */
static void unboost_new_threads(struct itarget *tg, const struct boost *b)
{
	pid_t own[CUHOOK_AGENT_THREADS_MAX];
	int n = b->set ? agent_threads_read(tg, own) : 0;
	for (int i = 0; i < n; i++) {
		errno = 0;
		if (own[i] != b->tid && getpriority(PRIO_PROCESS, (id_t)own[i]) == -20 && errno == 0)
			setpriority(PRIO_PROCESS, (id_t)own[i], b->old);
	}
}

static void already_tracing_error(pid_t pid)
{
	inj_error("the agent in process %d is already tracing: another cuhook attach is running, "
	          "or one was killed a moment ago (the agent ends that trace by itself within its "
	          "flush interval), or the process was started with the agent in constructor mode "
	          "(CUHOOK_* variables). Stop that first.", pid);
}

/* The thread of tg with this tid (pointers into tg->th do not survive threads_seize_all). */
static struct ithread *thread_by_tid(struct itarget *tg, pid_t tid)
{
	for (int i = 0; i < tg->nth; i++)
		if (tg->th[i].tid == tid)
			return &tg->th[i];
	return NULL;
}

/* cuhook_agent_prepare(options) on the caller, while the other threads run: the agent plans
 * and writes its stubs (it only reads code), so that start, later, only writes jumps. */
static int prepare_agent(struct itarget *tg, struct ithread *caller, const struct agent_api *api,
                         const struct cuhook_inject_opts *o)
{
	struct rcall rc;
	rcall_begin(&rc, tg, caller);
	uint64_t opts = rcall_push_string(&rc, o->agent_options ? o->agent_options : "");
	if (!opts)
		return -1;
	uint64_t args[1] = {opts}, rv = 0;
	rc.leave_on_timeout = true; /* only called while the other threads run */
	if (rcall_invoke(&rc, api->prepare, args, 1, &rv, call_timeout(o), "cuhook_agent_prepare") != RC_OK)
		return -1;
	int r = (int)(uint32_t)rv;
	if (r == -EALREADY) {
		already_tracing_error(tg->pid);
		return -1;
	}
	if (r < 0) {
		char msg[1024];
		remote_message(tg, caller, api->last_error, msg, sizeof(msg), call_timeout(o));
		inj_error("the agent in process %d could not prepare: %s (%s)", tg->pid, msg, strerror(-r));
		return -1;
	}
	return 0;
}

/* What start_agent and stop_agent both need first: the target's maps and the thread that makes
 * the remote calls, boosted. NULL if there is none (nothing to undo); else the caller unboosts
 * and frees the maps. */
static struct ithread *begin_agent_calls(struct itarget *tg, struct maps *m, struct boost *boost)
{
	if (tg->early) { /* read before the threads were stopped */
		*m = *tg->early;
		free(tg->early);
		tg->early = NULL;
	} else if (maps_read(tg->pid, m) < 0)
		return NULL;
	struct ithread *caller = threads_pick_caller(tg, m);
	if (!caller) {
		maps_free(m);
		return NULL;
	}
	boost_thread(boost, caller->tid);
	return caller;
}

/* cuhook_agent_stop(CUHOOK_START_THREADS_STOPPED) on the caller. The agent's stop waits for its
 * writer thread to finish the trace; a group-stop (the process was sent SIGSTOP) may hold that
 * thread, so it is lent from the kernel for the call (threads_lend_agent). */
static int call_agent_stop(struct itarget *tg, struct ithread *caller, const struct agent_api *api,
                           const struct cuhook_inject_opts *o, uint64_t *rv)
{
	int lent = threads_lend_agent(tg);
	if (lent)
		inj_log("%d thread%s of the agent kept running for its stop", lent, lent == 1 ? "" : "s");
	struct rcall rc;
	rcall_begin(&rc, tg, caller);
	/* The same promise as for start: every other thread is stopped, so the agent may restore the
	 * original bytes with plain writes (and needs no look at /proc for running threads). */
	uint64_t args[1] = {CUHOOK_START_THREADS_STOPPED};
	int r = rcall_invoke(&rc, api->stop, args, 1, rv, call_timeout(o), "cuhook_agent_stop");
	threads_unlend_agent(tg);
	return r;
}

/* After the agent's dlopen: the maps read again, its API found there. 0, or -1 with a message. */
static int find_loaded_agent(struct itarget *tg, struct maps *m, struct agent_api *api,
                             const struct cuhook_inject_opts *o)
{
	maps_free(m);
	if (maps_read(tg->pid, m) < 0)
		return -1;
	if (find_agent(tg->pid, m, o->agent_path, api) < 0) {
		inj_error("%s was loaded into process %d but does not export the agent API "
		          "(cuhook_agent_start...): not a cuhook agent?", o->agent_path, tg->pid);
		return -1;
	}
	/* the threads it starts (its preparation's writer) are left running by the seizes below */
	tg->agent_threads = api->threads;
	return 0;
}

/* Can a thread of the agent's own load and prepare it here (load_on_own_thread)? */
static bool own_thread_possible(struct itarget *tg, const struct maps *m, bool loaded)
{
	struct loader_job j;
	struct dl_fns f;
	memset(&j, 0, sizeof(j));
	if (!loaded) {
		if (find_dlopen(tg, m, &f) < 0) {
			inj_error_clear(); /* the load says it again */
			return false;
		}
		j.dlopen_fn = f.dlopen_fn;
		j.dlsym_fn = f.dlsym_fn;
	}
	return loader_find(tg, m, &j) == 0;
}

/* Stop every thread again after the work beside them; *callerp: the thread for the calls that
 * follow (want: that one if it is still there; else the best one), boosted. */
static int stop_again(struct itarget *tg, struct ithread **callerp, pid_t want, const struct maps *m,
                      struct boost *boost, struct cuhook_inject_times *t)
{
	tg->first_stop_ns = 0;
	if (threads_seize_all(tg, STOP_TIMEOUT_MS) < 0)
		return -1;
	*callerp = want ? thread_by_tid(tg, want) : threads_pick_caller(tg, m);
	if (!*callerp) {
		inj_error(want ? "the thread that loaded the agent is gone" : "no thread of process %d can make "
		          "the agent's calls", tg->pid);
		return -1;
	}
	if (!want)
		boost_thread(boost, (*callerp)->tid);
	t->seize_ns = inj_now_ns() - tg->first_stop_ns;
	t->nthreads = tg->nth;
	inj_log("%d thread%s stopped again in %.2f ms", tg->nth, tg->nth == 1 ? "" : "s", t->seize_ns / 1e6);
	return 0;
}

/* The agent loaded (when it is not yet) and prepared by a thread of its own (loader_thread.c):
 * the caller, stopped, only creates it, and is let go with the others; nothing of the program is
 * held while the thread works. Then every thread is stopped again (*callerp: the thread chosen
 * for the start). 1: done; 0: not possible here (loader_find said why), nothing done; -1 with a
 * message. */
static int load_on_own_thread(struct itarget *tg, struct ithread **callerp, struct maps *m,
                              struct agent_api *api, bool *loaded, bool *prepared, struct boost *boost,
                              const struct cuhook_inject_opts *o, struct cuhook_inject_times *t)
{
	struct loader_job j;
	struct dl_fns f;
	memset(&j, 0, sizeof(j));
	memset(&f, 0, sizeof(f));
	if (*loaded && !api->prepare)
		return 0; /* an older agent loaded already: its start does everything */
	if (!*loaded && find_dlopen(tg, m, &f) < 0)
		return -1;
	j.path = o->agent_path;
	j.options = o->agent_options ? o->agent_options : "";
	j.dlopen_fn = f.dlopen_fn;
	j.dlerror_fn = f.dlerror_fn;
	j.dlsym_fn = f.dlsym_fn;
	j.mode = f.mode;
	if (*loaded) {
		j.prepare_fn = api->prepare;
		j.last_error_fn = api->last_error;
		j.threads_obj = api->threads;
	}
	if (loader_find(tg, m, &j) < 0)
		return 0;
	struct ithread *c = *callerp;
	if (!*loaded)
		inj_log("dlopen at 0x%llx in %s, on a thread of the agent's own", (unsigned long long)j.dlopen_fn, f.lib);
	inj_log("pthread_create at 0x%llx called on thread %d%s", (unsigned long long)j.pthread_create_fn, c->tid,
	        regs_in_restartable_syscall(&c->regs) ? " (stopped in a system call)" : "");
	/* The caller makes its two calls boosted (it is held meanwhile); the new thread gets the
	 * nice level the caller has normally, not ours. */
	j.nice = boost->set ? boost->old : LOADER_NICE_KEEP;
	int started = loader_start(tg, c, &j, call_timeout(o));
	unboost(boost);
	if (started < 0)
		return -1;
	threads_detach_all(tg); /* the caller too: nothing of the program is held from here */
	*callerp = NULL;
	/* Nothing held: our nice -20 would only keep the threads just let go off our CPU. */
	setpriority(PRIO_PROCESS, 0, tg->nice_normal);
	inj_log("no thread held: a thread of the agent's own loads and prepares it");
	if (loader_wait(tg, &j, call_timeout(o)) != RC_OK)
		return -1;
	int ret = -1;
	if (j.failed) {
		inj_error("process %d could not load the agent %s: %s", tg->pid, o->agent_path, j.msg);
		goto stop;
	}
	if (!*loaded) {
		t->load_ns += j.load_ns;
		if (find_loaded_agent(tg, m, api, o) < 0)
			goto stop;
		*loaded = true;
	}
	if (j.prepare_fn) {
		int r = (int)j.prepare_rc;
		uint64_t ns = j.done_ns - (j.dlopen_fn ? j.load_ns : 0);
		if (r == -EALREADY) {
			already_tracing_error(tg->pid);
			goto stop;
		}
		if (r < 0) {
			inj_error("the agent in process %d could not prepare: %s (%s)", tg->pid, j.msg, strerror(-r));
			goto stop;
		}
		*prepared = true;
		t->prepare_ns += ns;
		inj_log("agent prepared in %.2f ms on its own thread %d", ns / 1e6, j.tid);
	}
	ret = 1;
stop:
	/* Stopped again for the start, or (a failure) to unmap the thread's page: the caller of the
	 * sequence then detaches them all. */
	raise_priority();
	if (stop_again(tg, callerp, 0, m, boost, t) < 0)
		return -1;
	loader_unmap(tg, *callerp, &j, call_timeout(o));
	return ret;
}

/* Let every thread but the caller run, and meanwhile do what the start must not do with them
 * stopped: dlopen the agent when it is not loaded yet (*api is then found), then
 * cuhook_agent_prepare (when the agent has it), on a thread of the agent's own where possible
 * (load_on_own_thread), else on the caller. *callerp is updated (pointers into tg->th do not
 * survive). Then stop every thread again: the time every thread is stopped counts from here. 0,
 * or -1 with a message. */
static int run_beside(struct itarget *tg, struct ithread **callerp, struct maps *m, struct agent_api *api,
                      bool *loaded, bool *prepared, struct boost *boost, const struct cuhook_inject_opts *o,
                      struct cuhook_inject_times *t)
{
	pid_t caller_tid = (*callerp)->tid;
	int n = tg->nth;
	uint64_t r0 = inj_now_ns();
	*callerp = threads_release_others(tg, caller_tid);
	inj_log("%d other thread%s run again while the agent is %s (first stop %.2f ms, released in "
	        "%.2f ms)", n - 1, n == 2 ? "" : "s", *loaded ? "prepared" : "loaded and prepared",
	        (inj_now_ns() - tg->first_stop_ns) / 1e6, (inj_now_ns() - r0) / 1e6);
	int own = load_on_own_thread(tg, callerp, m, api, loaded, prepared, boost, o, t);
	if (own != 0)
		return own < 0 ? -1 : 0;
	if (!*loaded) {
		bool released = true;
		uint64_t t0 = inj_now_ns();
		if (load_agent(tg, callerp, m, o, &released) < 0 || find_loaded_agent(tg, m, api, o) < 0)
			return -1;
		*loaded = true;
		t->load_ns += inj_now_ns() - t0;
	}
	if (api->prepare) {
		uint64_t t0 = inj_now_ns();
		if (prepare_agent(tg, *callerp, api, o) < 0)
			return -1;
		*prepared = true;
		t->prepare_ns += inj_now_ns() - t0;
		inj_log("agent prepared in %.2f ms", (inj_now_ns() - t0) / 1e6);
	}
	return stop_again(tg, callerp, caller_tid, m, boost, t);
}

/* A start that fails with EAGAIN (a library was loaded or unloaded between the preparation and
 * the start) is prepared and tried again, this many times in all. */
#define START_TRIES 3

/* With every thread of tg stopped: load (if needed) and start the agent, fix up the threads.
 *
 * beside: what must come before the start (dlopen of the agent when it is not there, and
 * cuhook_agent_prepare: the trace file, the agent's writer thread, planning every function of
 * libcuda) is done while the other threads run, holding only the thread that makes the calls;
 * then they are all stopped again for the start, which only writes jumps. That keeps the time
 * every thread is stopped short, and keeps that time free of anything that takes a lock of
 * libc or the loader (a stopped thread may hold one). Not for a spawned program at its entry
 * point: there nothing may run before the agent is started (and nothing else runs, so its start
 * may do everything). */
static int start_agent(struct itarget *tg, const struct cuhook_inject_opts *o, struct cuhook_inject_times *t,
                       bool beside)
{
	struct maps m;
	struct agent_api api = {0};
	struct boost boost;
	int ret = -1;
	struct ithread *caller = begin_agent_calls(tg, &m, &boost);
	if (!caller)
		return -1;
	pid_t caller_tid = caller->tid;
	bool loaded = false, prepared = false, calls_ok = false;

	if (find_agent(tg->pid, &m, o->agent_path, &api) == 0) {
		tg->agent_threads = api.threads;
		t->agent_reused = loaded = true;
		inj_log("agent already loaded: %s", api.path);
	} else if (check_agent_visible(tg->pid, o->agent_path) < 0) {
		goto out;
	}
	/* An agent without prepare (an older build) that is loaded already: its start does it all.
	 * A process of one thread: beside it only when a thread of the agent's own does the work
	 * (otherwise that one thread makes the calls in the stop, as good as beside). */
	beside = beside && (tg->nth > 1 || own_thread_possible(tg, &m, loaded)) && (!loaded || api.prepare);
	if (!loaded && !beside) {
		/* at the entry point, or a single thread: loaded in the stop (which a slow dlopen may
		 * still turn into a load beside the others) */
		bool released = false;
		uint64_t t0 = inj_now_ns();
		if (load_agent(tg, &caller, &m, o, &released) < 0 || find_loaded_agent(tg, &m, &api, o) < 0)
			goto out;
		loaded = true;
		t->load_ns = inj_now_ns() - t0;
		if (released) {
			/* dlopen let the others run: prepare too before they stop again */
			if (api.prepare && prepare_agent(tg, caller, &api, o) < 0)
				goto out;
			prepared = api.prepare != 0;
			t->beside = true;
			tg->first_stop_ns = 0;
			if (threads_seize_all(tg, STOP_TIMEOUT_MS) < 0 || !(caller = thread_by_tid(tg, caller_tid))) {
				inj_error("the threads of process %d could not be stopped again after loading the "
				          "agent", tg->pid);
				goto out;
			}
			t->seize_ns = inj_now_ns() - tg->first_stop_ns;
			t->nthreads = tg->nth;
		}
	}

	for (int try = 1;; try++) {
		if (beside) {
			calls_ok = false; /* the caller may be gone when this fails */
			if (run_beside(tg, &caller, &m, &api, &loaded, &prepared, &boost, o, t) < 0)
				goto out;
			caller_tid = caller->tid; /* another one after a load on the agent's own thread */
			t->beside = true;
		}
		/* With the functions planned already (prepared now, or by an earlier attach), threads
		 * inside bytes a jump will overwrite are moved to the relocated copies before the start
		 * writes it: a copy runs correctly with or without the jump, so there is no instant at
		 * which our death would leave a thread inside a jump. Functions planned by this start
		 * itself (no prepare, or other --funcs than before) are covered by the fixup after it. */
		uint64_t t0 = inj_now_ns();
		if ((t->agent_reused || prepared) && fixup_threads(tg, caller, &api, t) < 0)
			goto out;
		t->fixup_ns += inj_now_ns() - t0;
		t0 = inj_now_ns();
		struct rcall rc;
		rcall_begin(&rc, tg, caller);
		uint64_t opts = rcall_push_string(&rc, o->agent_options ? o->agent_options : "");
		if (!opts)
			goto out;
		uint64_t args[2] = {opts, CUHOOK_START_THREADS_STOPPED}, rv = 0;
		if (rcall_invoke(&rc, api.start, args, 2, &rv, call_timeout(o), "cuhook_agent_start") != RC_OK)
			goto out;
		calls_ok = true;
		int r = (int)(uint32_t)rv;
		char msg[1024];
		remote_message(tg, caller, api.last_error, msg, sizeof(msg), call_timeout(o));
		t->call_ns = inj_now_ns() - t0;
		if (r == -EAGAIN && beside && try < START_TRIES) {
			inj_log("not started: %s; preparing again", msg);
			continue;
		}
		if (r == -EALREADY) {
			already_tracing_error(tg->pid);
			prepared = false; /* another session's: not ours to discard */
			goto out;
		}
		if (r < 0) {
			/* the agent's message says why in words, errno included ("cannot create trace file
			 * 'F': No such file or directory"): its number only when it said nothing */
			inj_error("the agent in process %d could not start: %s", tg->pid, msg[0] ? msg : strerror(-r));
			goto out;
		}
		prepared = false; /* started: the session now */
		inj_log("agent started: %s", msg);
		snprintf(agent_message, sizeof(agent_message), "%s", msg);
		break;
	}

	uint64_t t0 = inj_now_ns();
	if (fixup_threads(tg, caller, &api, t) < 0) {
		/* Threads inside overwritten bytes cannot be left there: take the patches out again. */
		uint64_t rv;
		call_agent_stop(tg, caller, &api, o, &rv);
		goto out;
	}
	t->fixup_ns += inj_now_ns() - t0;
	ret = 0;
out:
	if (ret < 0 && prepared && calls_ok) {
		/* Prepared and not started (the start refused): let the agent close the trace file and
		 * end its waiting writer now rather than at the next attach. */
		uint64_t rv;
		struct rcall rc;
		rcall_begin(&rc, tg, caller);
		uint64_t args[1] = {CUHOOK_START_THREADS_STOPPED};
		rcall_invoke(&rc, api.stop, args, 1, &rv, call_timeout(o), "cuhook_agent_stop");
	}
	rcall_end_sequence(tg, thread_by_tid(tg, caller_tid));
	unboost_new_threads(tg, &boost);
	unboost(&boost);
	maps_free(&m);
	return ret;
}

/* With gpu=1: cuhook_agent_prepare_stop on the caller while the other threads run (the agent
 * ends its GPU session there: CUPTI and the driver take locks a stopped thread may hold, and
 * the agent's GPU thread, which does the work, needs the program to move on), then every thread
 * is stopped again for the stop proper, whatever became of that call (one that did not return
 * in time finishes on its own: the stop then goes on without it, and the agent says in the
 * trace what it could not flush). *callerp: the thread for the stop's calls (the same one, or
 * another if it is gone or still busy). 0, or -1 with a message (the threads are not all
 * stopped). */
/* Wait, with every thread running, until the agent's GPU thread has done request r
 * (cuhook_agent_gpu_done: r, or a later session's request), at most ms. */
static bool gpu_done_wait(struct itarget *tg, uint64_t at, uint32_t r, int ms)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/mem", tg->pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	uint64_t deadline = inj_now_ns() + (uint64_t)ms * 1000000u;
	bool done = false;
	for (;;) {
		uint32_t d = 0;
		if (!live_mem(tg->pid, fd, at, &d, sizeof(d), false))
			break;
		if ((done = d == r || d >> 2 > r >> 2) || inj_now_ns() >= deadline)
			break;
		struct timespec nap = {0, 200000}; /* 0.2 ms: CUPTI's flush takes milliseconds */
		nanosleep(&nap, NULL);
	}
	if (fd >= 0)
		close(fd);
	return done;
}

static int prepare_stop_beside(struct itarget *tg, struct ithread **callerp, const struct maps *m,
                               const struct agent_api *api, const struct cuhook_inject_opts *o,
                               struct cuhook_inject_times *t)
{
	pid_t caller_tid = (*callerp)->tid;
	uint64_t t0 = inj_now_ns();
	*callerp = threads_release_others(tg, caller_tid);
	struct rcall rc;
	rcall_begin(&rc, tg, *callerp);
	rc.leave_on_timeout = true; /* only called while the other threads run */
	uint64_t rv = 0;
	/* An agent that can hand the work to its GPU thread without waiting holds the caller for
	 * the instant of the call only: the caller runs too while the injector watches for the end. */
	bool own = api->prepare_stop_begin && api->gpu_done;
	int r = rcall_invoke(&rc, own ? api->prepare_stop_begin : api->prepare_stop, NULL, 0, &rv, call_timeout(o),
	                     own ? "cuhook_agent_prepare_stop_begin" : "cuhook_agent_prepare_stop");
	if (r == RC_EXITED)
		return -1;
	bool done = r == RC_OK && rc.th;
	if (done && own) {
		threads_detach_all(tg);
		done = (uint32_t)rv == 0 || gpu_done_wait(tg, api->gpu_done, (uint32_t)rv, call_timeout(o));
	}
	t->prepare_ns = inj_now_ns() - t0;
	t->beside = true;
	inj_log("agent's stop %s in %.2f ms while the other threads ran%s", done ? "prepared" : "not prepared",
	        t->prepare_ns / 1e6, own ? ", by a thread of its own" : "");
	tg->first_stop_ns = 0;
	if (threads_seize_all(tg, STOP_TIMEOUT_MS) < 0)
		return -1;
	*callerp = done && !own ? thread_by_tid(tg, caller_tid) : NULL;
	if (!*callerp && !(*callerp = threads_pick_caller(tg, m))) {
		inj_error("no thread of process %d can make the agent's stop call", tg->pid);
		return -1;
	}
	t->seize_ns = inj_now_ns() - tg->first_stop_ns;
	t->nthreads = tg->nth;
	return 0;
}

/* The agent options ask for the GPU side (gpu=1, as the agent reads it). */
static bool wants_gpu(const struct cuhook_inject_opts *o)
{
	char v[16], err[128];
	union aopt_value val;
	return o->agent_options && aopt_get(o->agent_options, AOPT_GPU, v, sizeof(v)) &&
	       aopt_check(AOPT_GPU, v, &val, err, sizeof(err)) == 0 && val.b;
}

static int stop_agent(struct itarget *tg, const struct cuhook_inject_opts *o, struct cuhook_inject_times *t)
{
	struct maps m;
	struct agent_api api;
	struct boost boost;
	int ret = -1;
	struct ithread *caller = begin_agent_calls(tg, &m, &boost);
	if (!caller)
		return -1;
	if (find_agent(tg->pid, &m, o->agent_path, &api) < 0) {
		inj_error("the agent is not loaded in process %d (did it exec another program?)", tg->pid);
		goto out;
	}
	if (api.prepare_stop && wants_gpu(o) && prepare_stop_beside(tg, &caller, &m, &api, o, t) < 0) {
		caller = NULL;
		goto out;
	}
	uint64_t t0 = inj_now_ns(), rv = 0;
	if (call_agent_stop(tg, caller, &api, o, &rv) != RC_OK)
		goto out;
	t->call_ns = inj_now_ns() - t0;
	int r = (int)(uint32_t)rv;
	if (r < 0) {
		char msg[1024];
		remote_message(tg, caller, api.last_error, msg, sizeof(msg), call_timeout(o));
		inj_error("the agent in process %d could not stop: %s (%s)", tg->pid, msg, strerror(-r));
		/* still move threads out of relocated code if it did unpatch some */
	} else if (r == CUHOOK_STOP_TRACE_FAILED) {
		/* Stopped cleanly, but the trace is incomplete: ours to say (the process's stderr is not
		 * the operator's, and the agent said nothing there). */
		char msg[1024];
		remote_message(tg, caller, api.last_error, msg, sizeof(msg), call_timeout(o));
		inj_error("the agent in process %d stopped, but its trace is incomplete: %s", tg->pid, msg);
	}
	t0 = inj_now_ns();
	if (fixup_threads(tg, caller, &api, t) == 0 && r >= 0)
		ret = r == CUHOOK_STOP_TRACE_FAILED ? 1 : 0;
	t->fixup_ns = inj_now_ns() - t0;
out:
	rcall_end_sequence(tg, caller ? thread_by_tid(tg, caller->tid) : NULL);
	unboost(&boost);
	maps_free(&m);
	return ret;
}

static struct cuhook_thread_held *held_last;
static int nheld_last;

const struct cuhook_thread_held *cuhook_inject_held(int *n)
{
	*n = nheld_last;
	return held_last;
}

static int by_longest(const void *a, const void *b)
{
	const struct cuhook_thread_held *x = a, *y = b;
	return x->max_ns < y->max_ns ? 1 : x->max_ns > y->max_ns ? -1 : x->tid - y->tid;
}

/* Keep tg's figures of the threads held for cuhook_inject_held() and the summary in t. */
static void keep_held(struct itarget *tg, struct cuhook_inject_times *t)
{
	free(held_last);
	held_last = tg->nheld ? malloc((size_t)tg->nheld * sizeof(*held_last)) : NULL;
	nheld_last = held_last ? tg->nheld : 0;
	for (int i = 0; i < nheld_last; i++)
		held_last[i] = (struct cuhook_thread_held){tg->held[i].tid, tg->held[i].holds, tg->held[i].max_ns,
		                                           tg->held[i].total_ns};
	qsort(held_last, (size_t)nheld_last, sizeof(*held_last), by_longest);
	t->nheld = nheld_last;
	t->held_max_tid = nheld_last ? held_last[0].tid : 0;
	t->held_max_ns = nheld_last ? held_last[0].max_ns : 0;
	t->held_total_max_ns = 0;
	for (int i = 0; i < nheld_last; i++)
		if (held_last[i].total_ns > t->held_total_max_ns)
			t->held_total_max_ns = held_last[i].total_ns;
}

void cuhook_inject_held_text(char *buf, size_t len)
{
	size_t pos = 0;
	buf[0] = 0;
	for (int i = 0; i < nheld_last && pos + 1 < len; i++) {
		int w = snprintf(buf + pos, len - pos, "%s%d %.2f/%.2f", i ? ", " : "", held_last[i].tid,
		                 held_last[i].max_ns / 1e6, held_last[i].total_ns / 1e6);
		if (w < 0 || (size_t)w >= len - pos)
			break; /* cut at a whole entry */
		pos += (size_t)w;
	}
}

void inject_finish_times(struct itarget *tg, struct cuhook_inject_times *t, uint64_t detach_start)
{
	uint64_t now = inj_now_ns();
	t->detach_ns = now - detach_start;
	t->stopped_ns = tg->first_stop_ns ? now - tg->first_stop_ns : 0;
}

/* While the target's threads are stopped, every millisecond we are preempted is a millisecond
 * the whole target waits: with more runnable threads than cores, the threads not yet stopped
 * would take the CPU from us between two ptrace calls. Run at the highest nice level for that
 * time (when allowed; root is), and back to the old one afterwards. */
static int raise_priority(void)
{
	errno = 0;
	int old = getpriority(PRIO_PROCESS, 0);
	if (errno == 0)
		setpriority(PRIO_PROCESS, 0, -20);
	return errno == 0 ? old : 0;
}

int target_read_early(struct itarget *tg)
{
	if (tg->memfd < 0 && !tg->mem_ptrace && mem_open(tg) < 0)
		return -1;
	struct maps *m = calloc(1, sizeof(*m));
	if (!m || maps_read(tg->pid, m) < 0) {
		free(m);
		return -1;
	}
	tg->early = m;
	/* where its memory is read through PTRACE_PEEKDATA (mem_open), only a stopped thread
	 * answers: the probe waits for the stop then */
	return tg->mem_ptrace ? 0 : rcall_probe(tg);
}

/* Seize everything, run `body`, let go: the frame of attach and detach. stopped_ok: a process
 * stopped by job control is taken too (a detach: the window may have ended while it was
 * stopped); its threads are stopped again when let go, as they were. */
static int with_process_stopped(pid_t pid, const struct cuhook_inject_opts *o, struct cuhook_inject_times *t,
                                bool stopped_ok,
                                int (*body)(struct itarget *, const struct cuhook_inject_opts *,
                                            struct cuhook_inject_times *))
{
	inj_error_clear();
	inj_verbose = o->verbose;
	memset(t, 0, sizeof(*t));
	inj_block_sigchld();
	if (check_target(pid, stopped_ok) < 0)
		return -1;
	struct itarget tg;
	target_init(&tg, pid);
	tg.agent_threads = agent_threads_at(pid, o->agent_path);
	if (target_read_early(&tg) < 0)
		inj_error_clear(); /* read again with the threads stopped, which says what fails */
	int prio = raise_priority();
	tg.nice_normal = prio;
	if (threads_seize_all(&tg, STOP_TIMEOUT_MS) < 0) {
		target_free(&tg);
		setpriority(PRIO_PROCESS, 0, prio);
		return -1;
	}
	t->seize_ns = inj_now_ns() - tg.first_stop_ns;
	t->nthreads = tg.nth;
	inj_log("%d thread%s stopped in %.2f ms", tg.nth, tg.nth == 1 ? "" : "s", t->seize_ns / 1e6);
	int r = tg.memfd >= 0 || tg.mem_ptrace ? 0 : mem_open(&tg);
	if (r == 0)
		r = body(&tg, o, t);
	uint64_t d0 = inj_now_ns();
	threads_detach_all(&tg);
	inject_finish_times(&tg, t, d0);
	keep_held(&tg, t);
	target_free(&tg);
	setpriority(PRIO_PROCESS, 0, prio);
	return r;
}

static int attach_body(struct itarget *tg, const struct cuhook_inject_opts *o, struct cuhook_inject_times *t)
{
	return start_agent(tg, o, t, true);
}

/* The attach's figures of the threads it held, for the trace: known only once every thread runs
 * again, so handed to the agent's writer through its inbox (cuhook_agent_inbox, written through
 * /proc/PID/mem: nothing is stopped), which writes them as a NOTE at its next round. The detach's
 * come after the trace is closed: -v only. An agent without the inbox (an older one) gets none. */
static void post_held_note(pid_t pid, const struct cuhook_inject_opts *o, const struct cuhook_inject_times *t)
{
	uint64_t at = 0;
	if (!t->nheld || agent_object_at(pid, o->agent_path, "cuhook_agent_inbox", &at) != 1 || !at) {
		inj_error_clear();
		return;
	}
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/mem", pid);
	int fd = open(p, O_RDWR | O_CLOEXEC); /* or process_vm_writev, where it may not be opened */
	struct cuhook_agent_inbox head;
	size_t hl = offsetof(struct cuhook_agent_inbox, text);
	static char text[CUHOOK_AGENT_INBOX_TEXT];
	int n = snprintf(text, sizeof(text), "cuhook attach held the program's threads: %d, longest %.2f ms (thread "
	                 "%d), most in all %.2f ms (first stop, remote calls, start, release); per thread (ms, "
	                 "longest/total): ", t->nheld, t->held_max_ns / 1e6, t->held_max_tid,
	                 t->held_total_max_ns / 1e6);
	if (n > 0 && (size_t)n < sizeof(text))
		cuhook_inject_held_text(text + n, sizeof(text) - (size_t)n);
	if (live_mem(pid, fd, at, &head, hl, false) && head.magic == CUHOOK_AGENT_INBOX_MAGIC &&
	    live_mem(pid, fd, at + hl, text, strlen(text) + 1, true)) {
		uint32_t seq = head.seq + 1;
		live_mem(pid, fd, at + offsetof(struct cuhook_agent_inbox, seq), &seq, sizeof(seq), true);
	}
	if (fd >= 0)
		close(fd);
}

int cuhook_inject_attach(pid_t pid, const struct cuhook_inject_opts *o, struct cuhook_inject_times *t)
{
	int r = with_process_stopped(pid, o, t, false, attach_body);
	if (r == 0)
		post_held_note(pid, o, t);
	return r;
}

_Static_assert(CUHOOK_INJECT_STOP_STEPS == CUHOOK_STOP_STEPS, "the agent's stop steps, one figure each");
_Static_assert(CUHOOK_INJECT_GPU_STOP_STEPS == CUHOOK_GPU_STOP_STEPS, "the GPU stop's steps, one figure each");

/* An array of the agent's (`name`, n bytes) read through /proc/PID/mem with every thread running
 * again: at no cost to the holds. False when the agent has no such object (an older one). */
static bool read_agent_figures(pid_t pid, const struct cuhook_inject_opts *o, const char *name, uint64_t *out,
                               size_t n)
{
	uint64_t at = 0;
	if (agent_object_at(pid, o->agent_path, name, &at) != 1 || !at) {
		inj_error_clear();
		return false;
	}
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/mem", pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	bool ok = live_mem(pid, fd, at, out, n, false);
	if (fd >= 0)
		close(fd);
	return ok;
}

int cuhook_inject_detach(pid_t pid, const struct cuhook_inject_opts *o, struct cuhook_inject_times *t)
{
	int r = with_process_stopped(pid, o, t, true, stop_agent);
	if (r >= 0) {
		/* the agent's own timing of its stop: where a detach's hold went */
		t->have_stop_steps = read_agent_figures(pid, o, "cuhook_agent_stop_ns", t->stop_step_ns,
		                                        sizeof(t->stop_step_ns));
		/* and of its GPU session's end beside the program, when there was one (all 0: none ran) */
		t->have_gpu_stop_steps = t->beside && read_agent_figures(pid, o, "cuhook_agent_gpu_stop_ns",
		                                                         t->gpu_stop_step_ns,
		                                                         sizeof(t->gpu_stop_step_ns));
		bool any = false;
		for (int i = 0; i < CUHOOK_INJECT_GPU_STOP_STEPS; i++)
			any |= t->gpu_stop_step_ns[i] != 0;
		t->have_gpu_stop_steps &= any;
	}
	return r;
}

int cuhook_inject_has_object(pid_t pid, const char *name_prefix)
{
	struct maps m;
	if (maps_read(pid, &m) < 0)
		return -1;
	int r = maps_find_object(&m, name_prefix) != NULL;
	maps_free(&m);
	return r;
}

/* ---- a new program at its entry point (spawn.c, follow.c) ----------------------------------- */

static uint64_t auxv_entry(pid_t pid)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/auxv", pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	uint64_t v[2], entry = 0;
	while (read(fd, v, sizeof(v)) == sizeof(v) && v[0] != AT_NULL)
		if (v[0] == AT_ENTRY)
			entry = v[1];
	close(fd);
	return entry;
}

int entry_breakpoint(struct itarget *tg, const char *what, struct rentry *e)
{
	char exe[64];
	snprintf(exe, sizeof(exe), "/proc/%d/exe", tg->pid);
	uint64_t entry = auxv_entry(tg->pid);
	if (elf_check_x86_64(exe, what) < 0)
		return -1;
	if (elf_has_interp(exe) == 0) {
		inj_error("%s is statically linked: no dynamic loader and no dlopen to load the agent with",
		          what);
		return -1;
	}
	if (!entry || (!mem_ready(tg) && mem_open(tg) < 0)) {
		inj_error("cannot find the entry point of %s", what);
		return -1;
	}
	/* The loader jumps to a stub of ours instead of the entry point: by then it has mapped and
	 * relocated every library and run their constructors (libc is initialised, dlopen works),
	 * and not one instruction of the program itself has run. The stub reports and goes on to
	 * the entry point: should cuhook vanish, the program starts as if nothing happened (an int3
	 * there would kill it). */
	return rentry_install(tg, entry, e);
}

int inject_at_entry(struct itarget *tg, const struct rentry *e, const struct cuhook_inject_opts *o,
                    struct cuhook_inject_times *t)
{
	pid_t pid = tg->pid;
	uint64_t stop0 = inj_now_ns();
	struct ithread *main_th = target_add_thread(tg, pid);
	if (!main_th || pt_getregs(pid, &main_th->regs) < 0 || rentry_finish(tg, &main_th->regs, e) < 0)
		return -1;
	main_th->regs_dirty = true;
	main_th->stopped = true;
	if (pt_setregs(pid, &main_th->regs) < 0)
		return -1;
	/* Library constructors may have started threads: stop them too. */
	tg->first_stop_ns = stop0;
	if (threads_seize_all(tg, STOP_TIMEOUT_MS) < 0)
		return -1;
	t->seize_ns = inj_now_ns() - stop0;
	t->nthreads = tg->nth;
	/* Nothing of the program may run before the agent is started: everything in one stop (a
	 * program has one thread here, or a few that its libraries' constructors started). */
	return start_agent(tg, o, t, false);
}
