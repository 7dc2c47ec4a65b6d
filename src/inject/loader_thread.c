/* The agent's loading thread: the slow part of an attach (dlopen of the agent, a few ms, and
 * cuhook_agent_prepare, tens of ms on a real libcuda) runs on a thread of its own, created by
 * one short remote call of pthread_create on a program thread, rather than on that program
 * thread itself, which the program would feel as a stall of that length (issue 20). The thread
 * runs loader.S from the call gate's page with a data page of ours (loader_layout.h) while no
 * thread of the program is held; the injector polls that page through /proc/PID/mem. */
#include "internal.h"
#include "loader_layout.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern const unsigned char rloader_code[], rloader_code_end[];

static void adopt(struct itarget *tg, pid_t tid, int nice);

/* How often the data page is looked at while the thread works. */
#define POLL_NS 200000
/* A thread that has said it is done is gone from /proc within this time (it only returns into
 * libc and exits); waited for before its page may be unmapped or the process stopped. */
#define EXIT_WAIT_MS 1000
/* Like a remote call beside running threads (remote_call.c): a thread still using CPU gets up
 * to this many more timeouts. */
#define MAX_EXTENSIONS 10

int loader_find(struct itarget *tg, const struct maps *m, struct loader_job *j)
{
	const char *why = NULL;
	if (target_seccomp_mode(tg->pid) != 0)
		/* A filter that traps a system call (SIGSYS) would kill the process through a thread
		 * nobody watches; remote calls watch for that and fail the system call instead. */
		why = "the process has a seccomp filter";
	else if (j->dlopen_fn && !j->dlsym_fn)
		why = "no dlsym in its C library";
	else if (!maps_find_defining(tg->pid, m, "pthread_create", &j->pthread_create_fn) ||
	         !maps_find_defining(tg->pid, m, "pthread_self", &j->pthread_self_fn) ||
	         !maps_find_defining(tg->pid, m, "pthread_detach", &j->pthread_detach_fn))
		why = "no pthread_create in it";
	if (why) {
		inj_log("note: the agent is loaded and prepared on a program thread (%s): that thread is "
		        "held meanwhile", why);
		return -1;
	}
	return 0;
}

/* On caller (stopped): map the data page, fill it, write the code into the gate's page, and
 * call pthread_create. The caller stays stopped; the caller lets it go. 0, or -1 with a message
 * (no thread was created). */
int loader_start(struct itarget *tg, struct ithread *caller, struct loader_job *j, int timeout_ms)
{
	size_t olen = strlen(j->options) + 1, plen = strlen(j->path) + 1;
	size_t code = (size_t)(rloader_code_end - rloader_code);
	_Static_assert(LD_CODE_OFF >= 512 + 128, "after the entry stub in the gate page");
	if (plen > LD_PATH_MAX || LD_CODE_OFF + code > 4096) {
		inj_error("the agent's path is too long: %s", j->path);
		return -1;
	}
	j->data_len = (LD_OPTIONS + olen + 4095) & ~(size_t)4095;
	struct rcall rc;
	rcall_begin(&rc, tg, caller);
	uint64_t margs[6] = {0, j->data_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1, 0};
	uint64_t page = 0;
	if (rcall_probe(tg) < 0)
		return -1;
	if (rcall_invoke(&rc, tg->gate.mmap_fn, margs, 6, &page, timeout_ms,
	                 "mmap for the agent's loading thread") != RC_OK)
		return -1;
	if (page >= (uint64_t)-4095 || !page) {
		inj_error("process %d could not map a page for the agent's loading thread: %s", tg->pid,
		          strerror(page ? (int)-(int64_t)page : ENOMEM));
		return -1;
	}
	j->data = page;
	/* The data page, then the code: both before the thread exists. */
	static unsigned char d[LD_OPTIONS];
	memset(d, 0, sizeof(d));
	uint64_t words[] = {j->pthread_self_fn, j->pthread_detach_fn, j->dlopen_fn, j->dlerror_fn, j->dlsym_fn,
	                    j->mode, j->prepare_fn, j->last_error_fn, j->threads_obj};
	memcpy(d, words, sizeof(words));
	_Static_assert(LD_THREADS == 8 * 8, "the words above");
	strcpy((char *)d + LD_SYM_PREPARE, "cuhook_agent_prepare");
	strcpy((char *)d + LD_SYM_LAST_ERROR, "cuhook_agent_last_error");
	strcpy((char *)d + LD_SYM_THREADS, "cuhook_agent_threads");
	memcpy(d + LD_PATH, j->path, plen);
	if (mem_write(tg, page, d, sizeof(d)) < 0 || mem_write(tg, page + LD_OPTIONS, j->options, olen) < 0 ||
	    mem_write(tg, tg->gate.page + LD_CODE_OFF, rloader_code, code) < 0)
		return -1;
	uint64_t args[4] = {page + LD_PTHREAD, 0, tg->gate.page + LD_CODE_OFF, page}, rv = 0;
	rcall_begin(&rc, tg, caller);
	/* The new thread is traced by us from its birth (PTRACE_O_TRACECLONE for this call), and
	 * kept so, running: another tracer (a second cuhook attach) is refused its seize, as it is
	 * while we hold a program thread; and it cannot be taken for a program thread. */
	bool clone_traced = ptrace(PTRACE_SETOPTIONS, caller->tid, 0,
	                           (void *)(long)(INJ_SEIZE_OPTIONS | PTRACE_O_TRACECLONE)) == 0;
	int r = rcall_invoke(&rc, j->pthread_create_fn, args, 4, &rv, timeout_ms, "pthread_create");
	if (clone_traced && rc.th)
		ptrace(PTRACE_SETOPTIONS, caller->tid, 0, (void *)(long)INJ_SEIZE_OPTIONS);
	if (rc.cloned)
		adopt(tg, rc.cloned, j->nice);
	if (r != RC_OK)
		return -1;
	if (rv != 0) {
		inj_error("process %d could not create a thread to load the agent: %s", tg->pid, strerror((int)rv));
		return -1;
	}
	/* From here the thread returns into the gate's page: never unmapped under it. */
	j->started = true;
	j->t0 = inj_now_ns();
	return 0;
}

/* The loading thread, traced from its birth, in its first stop: it runs on, traced (its own
 * threads, the agent's writer, not), kept running whatever stops it (pt_keep_running). */
static void adopt(struct itarget *tg, pid_t tid, int nice)
{
	struct ithread t = {.tid = tid};
	tg->loader_tid = tid;
	if (nice != LOADER_NICE_KEEP) /* before it runs: not the boosted caller's -20 */
		setpriority(PRIO_PROCESS, (id_t)tid, nice);
	if (pt_wait_first_stop(tg, &t, 1000) != 0)
		return; /* gone, or not stopping: detached when we exit */
	ptrace(PTRACE_SETOPTIONS, tid, 0, (void *)(long)INJ_SEIZE_OPTIONS);
	if (pt_keep_running(tid) < 0) {
		ptrace(PTRACE_DETACH, tid, 0, (void *)(long)(t.npending ? t.pending[0] : 0));
		return;
	}
	pt_cont(tid, t.npending ? t.pending[0] : 0);
}

/* Let the loading thread go, if we still trace it. */
static void loader_release(struct itarget *tg)
{
	pid_t tid = tg->loader_tid;
	if (!tid || !pt_kept(tid))
		return;
	pt_keep_running_end(tid);
	struct ithread t = {.tid = tid};
	if (pt_interrupt(tid) == 0 && pt_wait_first_stop(tg, &t, 500) == 0)
		ptrace(PTRACE_DETACH, tid, 0, (void *)(long)(t.npending ? t.pending[0] : 0));
}

static bool read_word(struct itarget *tg, const struct loader_job *j, unsigned off, void *v, size_t len)
{
	return live_mem(tg->pid, tg->memfd, j->data + off, v, len, false);
}

/* Is the thread still there (not exited)? Traced by us, it is gone once we collected its end
 * (pt_service_kept), a zombie until then. */
static bool thread_alive(struct itarget *tg, pid_t tid)
{
	pt_service_kept();
	if (pt_kept(tid))
		return true;
	char s = 0;
	return task_stat(tg->pid, tid, &s, NULL) && s != 'Z' && s != 'X';
}

static void sleep_ns(long ns)
{
	struct timespec ts = {0, ns};
	nanosleep(&ts, NULL);
}

int loader_wait(struct itarget *tg, struct loader_job *j, int timeout_ms)
{
	int32_t state = LD_RUNNING, tid = 0;
	uint64_t cpu_seen = 0, t_slice = j->t0;
	int extensions = 0;
	bool loaded_said = false;
	for (;;) {
		if (!read_word(tg, j, LD_STATE, &state, 4) || !read_word(tg, j, LD_TID, &tid, 4)) {
			inj_error("process %d ended while the agent was loaded (%s)", tg->pid, strerror(errno));
			loader_release(tg);
			return RC_EXITED;
		}
		j->tid = tid;
		if (tid && !tg->loader_tid)
			tg->loader_tid = tid; /* never stopped by us */
		pt_service_kept(); /* a group-stop, a signal: passed on, the thread goes on */
		if (state >= LD_LOADED && !loaded_said) {
			struct timespec a, b;
			j->load_ns = read_word(tg, j, LD_T_START, &a, sizeof(a)) && read_word(tg, j, LD_T_LOADED, &b, sizeof(b))
			                 ? (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u + (uint64_t)(b.tv_nsec - a.tv_nsec)
			                 : inj_now_ns() - j->t0;
			loaded_said = true;
			if (state == LD_LOADED)
				inj_log("agent loaded in %.2f ms on its own thread %d", j->load_ns / 1e6, tid);
		}
		if (state == LD_DONE || state == LD_FAILED)
			break;
		uint64_t now = inj_now_ns();
		if (now - t_slice > (uint64_t)timeout_ms * 1000000) {
			uint64_t cpu = 0;
			if (tid)
				task_stat(tg->pid, tid, NULL, &cpu);
			double secs = (now - j->t0) / 1e9;
			if (tid && !thread_alive(tg, tid)) {
				inj_error("the agent's loading thread in process %d ended without finishing", tg->pid);
				loader_release(tg);
				return RC_ERROR;
			}
			if (extensions < MAX_EXTENSIONS && (extensions == 0 || cpu > cpu_seen)) {
				/* once more in any case (a second timeout, as for a call beside running
				 * threads), then as long as it uses CPU */
				inj_log("%s still working after %.1f s: waiting on", state >= LD_LOADED ?
				        "cuhook_agent_prepare" : "dlopen of the agent", secs);
				cpu_seen = cpu;
				extensions++;
				t_slice = now;
				continue;
			}
			/* It keeps the page it runs from: never unmapped (leave_call's rule). */
			tg->gate.keep = true;
			j->abandoned = true;
			loader_release(tg);
			inj_error("%s in process %d did not return within %.1f s: %s, probably waiting for a lock "
			          "a thread of the process holds (the dynamic loader's, malloc's, or the agent's). "
			          "It runs on a thread of the agent's own, no program thread is held: it is left "
			          "to finish on its own, and the process goes on untraced.",
			          state >= LD_LOADED ? "cuhook_agent_prepare" : "dlopen of the agent", tg->pid, secs,
			          cpu > cpu_seen ? "it still uses CPU" : "it makes no progress");
			return RC_TIMEOUT;
		}
		sleep_ns(POLL_NS);
	}
	/* the thread's own times: ours, polling, come late */
	struct timespec ts[3];
	if (read_word(tg, j, LD_T_START, &ts[0], sizeof(ts[0])) && read_word(tg, j, LD_T_LOADED, &ts[1], sizeof(ts[1])) &&
	    read_word(tg, j, LD_T_DONE, &ts[2], sizeof(ts[2]))) {
		uint64_t ns[3];
		for (int k = 0; k < 3; k++)
			ns[k] = (uint64_t)ts[k].tv_sec * 1000000000u + (uint64_t)ts[k].tv_nsec;
		j->load_ns = ns[1] ? ns[1] - ns[0] : 0;
		j->done_ns = ns[2] ? ns[2] - ns[0] : j->load_ns;
	} else {
		j->done_ns = inj_now_ns() - j->t0;
	}
	if (!loaded_said && !j->load_ns)
		j->load_ns = j->done_ns;
	read_word(tg, j, LD_HANDLE, &j->handle, 8);
	read_word(tg, j, LD_PREPARE_RC, &j->prepare_rc, 8);
	read_word(tg, j, LD_PREPARE, &j->prepare_fn, 8);
	if (!read_word(tg, j, LD_MSG, j->msg, sizeof(j->msg)))
		snprintf(j->msg, sizeof(j->msg), "(no message)");
	j->msg[sizeof(j->msg) - 1] = 0;
	j->failed = state == LD_FAILED;
	/* It has only to return into libc and exit now; until it is gone it runs in our pages. */
	uint64_t w0 = inj_now_ns();
	while (thread_alive(tg, tid) && inj_now_ns() - w0 < (uint64_t)EXIT_WAIT_MS * 1000000)
		sleep_ns(POLL_NS / 4);
	if (thread_alive(tg, tid)) {
		tg->gate.keep = true;
		j->abandoned = true;
		loader_release(tg);
		inj_log("note: the agent's loading thread %d has not ended %d ms after its work; its "
		        "pages stay mapped", tid, EXIT_WAIT_MS);
	} else {
		tg->loader_tid = 0;
	}
	return RC_OK;
}

void loader_unmap(struct itarget *tg, struct ithread *caller, struct loader_job *j, int timeout_ms)
{
	if (!j->data || j->abandoned || !caller || !caller->stopped)
		return;
	struct rcall rc;
	rcall_begin(&rc, tg, caller);
	uint64_t args[2] = {j->data, j->data_len}, rv;
	rcall_invoke(&rc, tg->gate.munmap_fn, args, 2, &rv, timeout_ms, "munmap of the loading thread's page");
	j->data = 0;
}
