/* The injector's internals, shared by its files:
 *   ptrace_util.c  one thread: seize, interrupt, wait with a timeout, registers, memory
 *   threads.c      every thread of a process: seize them all (and the ones born meanwhile), detach
 *   symbols.c      /proc/PID/maps and the dynamic symbols of the ELF files mapped there
 *   remote_call.c  call a function inside the target on one stopped thread
 *   checks.c       refuse early, with a clear message, what cannot work (no PID, debugger, ...)
 *   seize_refusal.c  why the kernel refused to let us trace it, and what to change
 *   inject.c       the sequences: load + start the agent, stop it, fix up instruction pointers
 * Errors: a failing function stores one message with inj_error() and returns a negative value;
 * the caller that prints is the CLI (cuhook_inject_error()). */
#ifndef CUHOOK_INJECT_INTERNAL_H
#define CUHOOK_INJECT_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>

/* ---- errors and logging ------------------------------------------------------------------ */

/* Keeps the first message since the last inj_error_clear(): the first failure is the cause,
 * later ones are usually consequences of the back-out. */
void inj_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void inj_error_clear(void);
const char *inj_error_text(void);
extern int inj_verbose;
void inj_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t inj_now_ns(void); /* CLOCK_MONOTONIC */

/* ---- one thread (ptrace_util.c) -------------------------------------------------------------- */

#define INJ_MAX_PENDING 8

struct ithread {
	pid_t tid;
	struct user_regs_struct regs; /* as found when it stopped: what it resumes with */
	bool regs_dirty;              /* regs changed on purpose (ip moved): write back at detach */
	bool stopped;                 /* in a ptrace-stop we can work in */
	uint64_t held_since;          /* when we interrupted it (inj_now_ns) */
	int pending[INJ_MAX_PENDING]; /* signals that arrived while we held it, given back at detach */
	int npending;
};

#define INJ_MAX_LENT 8 /* the agent lists at most CUHOOK_AGENT_THREADS_MAX (threads.c checks) */

/* Where remote calls return (remote_call.c): a page of ours in the target while a sequence of
 * calls runs, and what is needed to map it. */
struct rgate {
	uint64_t page;                /* the gate's page, 0 when not mapped */
	uint64_t restore_rt;          /* libc's __restore_rt (rt_sigreturn), 0 before the first look */
	uint64_t mmap_fn, munmap_fn;  /* libc's */
	int sig;                      /* the gate's report signal; 0: calls watched by system-call stops */
	bool keep;                    /* a call was left to finish on its own: never unmap the page */
};

/* One thread's time held by us (interrupted until let go): its longest hold and their sum. */
struct held {
	pid_t tid;
	uint64_t max_ns, total_ns;
	int holds;
};

struct maps;

struct itarget {
	pid_t pid;
	int memfd;                    /* /proc/PID/mem, O_RDWR */
	bool mem_ptrace;              /* no memfd: memory through PTRACE_PEEKDATA/POKEDATA (mem_open) */
	struct ithread *th;
	int nth, cap;
	uint64_t first_stop_ns;       /* when the first thread was interrupted (for the timings) */
	uint64_t agent_threads;       /* where the agent in the process lists its own threads
	                                 (cuhook_agent_threads); 0: no agent loaded */
	pid_t loader_tid;             /* the agent's loading thread while it runs: never stopped */
	int nice_normal;              /* our own nice level, which we leave while threads are held */
	struct held *held;            /* how long each thread was held, over the whole attach or detach */
	int nheld, capheld;
	pid_t lent[INJ_MAX_LENT];     /* the agent's threads we keep running (threads_lend_agent) */
	int nlent;
	struct rgate gate;
	/* The maps read before the threads were stopped (target_read_early), for the first look
	 * that needs them once they are: taken by begin_agent_calls, else freed with the target. */
	struct maps *early;
};

/* The x86 extended state (x87, SSE, AVX, AVX-512, AMX...): a remote call clobbers vector
 * registers, and the thread may have been stopped in the middle of code that uses them. */
struct xstate {
	size_t len;
	unsigned char buf[16384] __attribute__((aligned(64)));
	bool fp_only;                 /* NT_X86_XSTATE refused: the legacy FP area only */
};

int pt_seize(pid_t tid);                         /* 0 or -errno (no message) */
int pt_interrupt(pid_t tid);
/* Wait for tid to change state. 1: *status filled; 0: timeout; -errno. timeout_ms < 0: forever.
 * Sleeps on SIGCHLD (blocked by inj_block_sigchld) rather than polling, so a stop is seen as soon
 * as the kernel reports it. */
int pt_wait(pid_t tid, int *status, int timeout_ms);
void inj_block_sigchld(void);
int pt_getregs(pid_t tid, struct user_regs_struct *r);
int pt_setregs(pid_t tid, const struct user_regs_struct *r);
int pt_get_xstate(pid_t tid, struct xstate *x);
int pt_set_xstate(pid_t tid, const struct xstate *x);
int pt_cont(pid_t tid, int sig);
/* Wait until a thread we interrupted reports a stop; records a signal it was about to take. A
 * job-control stop signal is not kept: it is passed on at once (see is_stop_signal), and the
 * wait goes on for the stop that follows. */
int pt_wait_first_stop(struct itarget *tg, struct ithread *t, int timeout_ms);
void ithread_add_pending(struct ithread *t, int sig);
/* SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU. Such a signal, reported by a thread we hold, is never kept
 * to be given back later: it is passed on in the stop that reported it (PTRACE_CONT with it),
 * where the kernel still checks whether a SIGCONT came since, and stops the process (all its
 * threads we hold report the group-stop, and a thread we detach while it is in effect stays
 * stopped) or not, exactly as without us. */
bool is_stop_signal(int sig);
/* While pt_wait waits for any thread, keep `tid` (traced by us) running: whatever stops it is
 * passed on and it is resumed; when it ends it is forgotten. For the agent's own threads, which
 * a group-stop must not hold while the agent's stop waits for them (threads_lend_agent). -1 if
 * too many. */
int pt_keep_running(pid_t tid);
void pt_keep_running_end(pid_t tid);
/* Resume whatever stopped the threads kept running, and forget those that ended. */
void pt_service_kept(void);
/* Is tid kept running (and not ended)? */
bool pt_kept(pid_t tid);

/* /proc/PID/mem, or when we may not open it (another user's process, cuhook with CAP_SYS_PTRACE
 * but not CAP_DAC_OVERRIDE) ptrace on a stopped thread of tg. 0, or -1 with a message. */
int mem_open(struct itarget *tg);
/* mem_open() was done and succeeded. */
bool mem_ready(const struct itarget *tg);
int mem_read(struct itarget *tg, uint64_t addr, void *buf, size_t len);
int mem_write(struct itarget *tg, uint64_t addr, const void *buf, size_t len);
/* Up to n bytes at addr, without a message: how many were read (0: none; fewer where readable
 * memory ends). */
size_t mem_read_some(struct itarget *tg, uint64_t addr, void *buf, size_t n);
/* A NUL-terminated string of the target, cut to len-1 bytes. */
int mem_read_string(struct itarget *tg, uint64_t addr, char *buf, size_t len);
/* len bytes at addr of a process whose threads may all be running (control.c, loader_thread.c):
 * through fd (/proc/PID/mem), or where that could not be opened (another user's process, cuhook
 * with CAP_SYS_PTRACE alone: mem_open) with process_vm_readv/writev, which need the ptrace right
 * only, and no stopped thread. false with errno when not all of it could be. */
bool live_mem(pid_t pid, int fd, uint64_t addr, void *buf, size_t len, bool write);

/* A thread stopped with a system call interrupted that the kernel will restart (or turn into
 * EINTR) when it resumes: orig_rax holds the call number and rax one of the -ERESTART* codes. */
bool regs_in_restartable_syscall(const struct user_regs_struct *r);

/* ---- all threads (threads.c) ----------------------------------------------------------------- */

void target_init(struct itarget *tg, pid_t pid);
void target_free(struct itarget *tg);
struct ithread *target_add_thread(struct itarget *tg, pid_t tid);
/* Seize and interrupt every thread of tg->pid, including threads created while doing so; read
 * their registers. Threads already in tg (and stopped) are kept. 0, or -1 with a message; on
 * failure the threads seized so far are detached again. */
int threads_seize_all(struct itarget *tg, int stop_timeout_ms);
/* Write back moved registers, detach every thread, hand back the signals they got meanwhile. */
void threads_detach_all(struct itarget *tg);
struct maps;
/* The thread to run remote calls on: the one least likely to hold a libc lock. */
struct ithread *threads_pick_caller(struct itarget *tg, const struct maps *m);
/* The agent's own threads, read from the process's memory at tg->agent_threads (left running
 * by threads_seize_all): how many ids were put in tids (room for CUHOOK_AGENT_THREADS_MAX), 0
 * when no agent is loaded; -1 with a message when the list cannot be read. */
int agent_threads_read(struct itarget *tg, pid_t *tids);
/* A thread's state letter (R, S, D, T, t, Z...) and CPU time used (user + system, clock ticks),
 * from /proc/PID/task/TID/stat; either may be NULL. false if it cannot be read. */
bool task_stat(pid_t pid, pid_t tid, char *state, uint64_t *cpu);
/* Like threads_detach_all, but the threads stay traced: options set to `options`, resumed
 * with PTRACE_CONT (cuhook run --follow). */
void threads_resume_all(struct itarget *tg, long options);
/* The agent's own threads (its writer), which threads_seize_all leaves alone, may be held by a
 * group-stop (SIGSTOP to the process) when its stop must wait for them to finish the trace.
 * Lend them from the kernel: seized and resumed, they run in a group-stop too, and pt_wait keeps
 * them running whatever stops them, until threads_unlend_agent detaches them (back into the
 * group-stop if it is still in effect). Returns how many. */
int threads_lend_agent(struct itarget *tg);
void threads_unlend_agent(struct itarget *tg);
/* Detach every thread but `keep` (which stays stopped, now tg->th[0], returned). */
struct ithread *threads_release_others(struct itarget *tg, pid_t keep);

/* ---- symbols (symbols.c) ---------------------------------------------------------------------- */

struct mapping {
	uint64_t start, end, offset;
	char perms[5];
	unsigned long inode;
	char *path;                   /* NULL for anonymous mappings */
};

struct maps {
	struct mapping *m;
	int n;
};

int maps_read(pid_t pid, struct maps *out);
void maps_free(struct maps *m);
/* The mapping that contains addr, or NULL. */
const struct mapping *maps_find_addr(const struct maps *m, uint64_t addr);
/* What can be read of tg's process before its threads are stopped, so that it is not read while
 * they are: its maps (tg->early) and its C library's call gate (rcall_probe). A PyTorch process
 * has thousands of mappings: each read of them took 2-5 ms, and a detach read them three times
 * with every thread held. Opens tg's memory. 0, or -1 with a message (then retried stopped). */
int target_read_early(struct itarget *tg);

/* Address of `sym` (a defined function or object of the dynamic symbol table, default version
 * preferred) in the object mapped from `path` in the target: file value + load bias. 0 if the
 * object is not mapped or has no such symbol. */
uint64_t target_symbol(pid_t pid, const struct maps *m, const char *path, const char *sym);
/* The first mapped object whose file name (the part after the last '/') starts with prefix. */
const char *maps_find_object(const struct maps *m, const char *prefix);
/* The object that defines `sym`, searching every mapped ELF object (libc first). */
const char *maps_find_defining(pid_t pid, const struct maps *m, const char *sym, uint64_t *addr);

/* An ELF file's class/machine: 0 = x86-64 ELF, else -1 with a message naming what it is. */
int elf_check_x86_64(const char *path, const char *what);
/* 1 if the ELF file has a PT_INTERP (dynamically linked executable), 0 if not, -1 on error. */
int elf_has_interp(const char *path);

/* ---- remote calls (remote_call.c) ------------------------------------------------------------ */

#define RC_RED_ZONE 128

/* One call in preparation: data the call needs (strings) is copied below the thread's red zone;
 * the stack then continues below it. */
struct rcall {
	struct itarget *tg;
	struct ithread *th;
	uint64_t sp;                  /* lowest byte used so far */
	int seccomp_denied;           /* system calls a seccomp filter trapped during the call */
	long seccomp_nr;              /* the first of them */
	/* Called once if the call has not returned after timeout_ms; it may release the other
	 * threads (updating rc->th); the call then gets timeout_ms more. */
	void (*on_slow)(struct rcall *rc);
	void *ctx;
	bool slow;                    /* on_slow was called */
	/* The other threads run: if the call times out, let it finish on its own (the thread is
	 * detached and returns where it was when the call returns) rather than interrupt it, which
	 * would leave whatever it holds (the loader's lock) held. rc->th is NULL afterwards. */
	bool leave_on_timeout;
	/* The thread the call created, with PTRACE_O_TRACECLONE set on rc->th: traced by us from its
	 * first instruction (it starts in a ptrace stop). 0: none. */
	pid_t cloned;
};

void rcall_begin(struct rcall *rc, struct itarget *tg, struct ithread *th);
/* "openat (257)" */
const char *syscall_name(long nr, char *buf, size_t len);
/* Copy len bytes onto the target's stack; returns their address, or 0 (message set). */
uint64_t rcall_push(struct rcall *rc, const void *data, size_t len);
uint64_t rcall_push_string(struct rcall *rc, const char *s);

enum rcall_result {
	RC_OK = 0,
	RC_ERROR = -1,      /* ptrace/memory failure; thread restored when possible */
	RC_TIMEOUT = -2,    /* no return within the timeout; interrupted and restored */
	RC_CRASH = -3,      /* a fault inside the called code; thread restored */
	RC_EXITED = -5,     /* the target died */
};

/* Call fn(args...) (up to 6 integer/pointer args) on rc->th, wait at most timeout_ms for it
 * to return, then put every register back as it was. *ret gets rax. A system call that a
 * seccomp filter traps (SIGSYS) fails with EPERM instead, and the call goes on; see
 * rc->seccomp_denied afterwards. The first call of a sequence maps the gate every call returns
 * through; should cuhook vanish at any instant, the call still completes and the thread goes on
 * where it was. */
int rcall_invoke(struct rcall *rc, uint64_t fn, const uint64_t *args, int nargs, uint64_t *ret,
                 int timeout_ms, const char *what);
/* Find libc's mmap, munmap and rt_sigreturn for the calls (done by the first call otherwise). */
int rcall_probe(struct itarget *tg);
/* The sequence of calls is over: unmap the gate (on th, stopped; NULL: leave it mapped). */
void rcall_end_sequence(struct itarget *tg, struct ithread *th);

/* A new program's entry, reported by a stub in the gate page (cuhook run, exec under --follow):
 * at the exec stop of tg->pid (memory open), map the gate page and point the loader's AT_ENTRY
 * at the stub, which stops the thread with a signal (SIGURG) before the program's first
 * instruction and then jumps to the entry point; untraced, it just starts the program. */
struct rentry {
	uint64_t entry;               /* the program's entry point */
	uint64_t auxv_slot;           /* where AT_ENTRY's value is on the initial stack */
	uint64_t stub, stop_ip;       /* the stub, and its rip at the report stop */
	uint64_t page;                /* the gate page it lives in, for the calls that follow */
};
int rentry_install(struct itarget *tg, uint64_t entry, struct rentry *e);
/* Is this wait status the stub's report? */
bool rentry_reached(pid_t pid, int status, const struct rentry *e);
/* At that stop: r (the thread's registers) moved to the program's entry point with the loader's
 * rdx, and AT_ENTRY put back. The thread stays in its stop. */
int rentry_finish(struct itarget *tg, struct user_regs_struct *r, const struct rentry *e);

/* ---- the agent's loading thread (loader_thread.c) ------------------------------------------- */

#define LOADER_NICE_KEEP 100

struct loader_job {
	/* in */
	const char *path, *options;
	uint64_t dlopen_fn, dlerror_fn, dlsym_fn, mode; /* dlopen_fn 0: the agent is loaded already */
	uint64_t prepare_fn, last_error_fn, threads_obj; /* known for an agent loaded already */
	uint64_t pthread_create_fn, pthread_self_fn, pthread_detach_fn;
	int nice;                     /* the thread's nice level, or LOADER_NICE_KEEP: its creator's */
	/* out */
	uint64_t data;                /* its data page in the target */
	size_t data_len;
	bool started, failed, abandoned;
	pid_t tid;
	uint64_t handle;
	int64_t prepare_rc;
	uint64_t t0, load_ns, done_ns; /* thread created; dlopen returned and all done, after t0 */
	char msg[1024];
};
/* The functions the thread needs (j->dlopen_fn etc. set): 0, or -1 (with a -v note why) when
 * the agent must be loaded on a program thread instead (no pthread_create, a seccomp filter). */
int loader_find(struct itarget *tg, const struct maps *m, struct loader_job *j);
/* On caller, stopped: map the thread's data page and call pthread_create (two short remote
 * calls). 0, or -1 with a message. */
int loader_start(struct itarget *tg, struct ithread *caller, struct loader_job *j, int timeout_ms);
/* With no thread of the process held: wait for the thread to finish (timeout_ms, extended while
 * it uses CPU) and to be gone. RC_OK with the results in j; RC_TIMEOUT (left to finish on its
 * own), RC_EXITED, RC_ERROR with a message. tg->loader_tid is the thread's id while it runs. */
int loader_wait(struct itarget *tg, struct loader_job *j, int timeout_ms);
/* The thread's data page unmapped on caller (stopped), unless the thread may still use it. */
void loader_unmap(struct itarget *tg, struct ithread *caller, struct loader_job *j, int timeout_ms);

/* ---- sequences shared by spawn.c and follow.c (inject.c) -------------------------------------- */

struct cuhook_inject_opts;
struct cuhook_inject_times;
/* Right after an exec of tg->pid (stopped): check that the new image can take the agent, find
 * its entry point and have it reported (rentry_install; opening tg->memfd). 0, or -1 with a
 * message naming the program as `what`. */
int entry_breakpoint(struct itarget *tg, const char *what, struct rentry *e);
/* tg->pid stopped on that report (rentry_reached; empty tg): move it to the entry point, stop
 * every thread, load and start the agent, fix up. 0: every thread stopped in tg, for the caller
 * to detach or resume; -1 with a message (the threads still in tg, if any, are stopped). */
int inject_at_entry(struct itarget *tg, const struct rentry *e, const struct cuhook_inject_opts *o,
                    struct cuhook_inject_times *t);
/* The times of a sequence that ends now: the detach (from detach_start) and the whole stop. */
void inject_finish_times(struct itarget *tg, struct cuhook_inject_times *t, uint64_t detach_start);

/* The address of `sym`, an object the agent in pid exports (cuhook_agent_threads,
 * cuhook_agent_control), found without stopping anything: the agent at agent_path, else any
 * libcuhook exporting the API. 1 with *addr (0: that agent has no such symbol); 0: no agent in
 * pid; -1 with a message when /proc/PID/maps cannot be read (gone, or no ptrace right). */
int agent_object_at(pid_t pid, const char *agent_path, const char *sym, uint64_t *addr);

/* ---- following a process tree (follow.c) ------------------------------------------------------ */

/* Every thread cuhook traces has PTRACE_O_TRACESYSGOOD: a thread at a system-call stop that we
 * have not collected yet keeps the stop's code, and if cuhook dies then, the kernel sends the
 * thread that code as a signal. Plain SIGTRAP would kill the program; SIGTRAP | 0x80 is no
 * signal, and the thread runs on. (cuhook makes system-call stops only during its own calls.) */
#define INJ_SEIZE_OPTIONS PTRACE_O_TRACESYSGOOD
/* What cuhook run --follow keeps on every task of the tree: fork, vfork, clone and exec events. */
#define INJ_FOLLOW_OPTIONS                                                                        \
	(INJ_SEIZE_OPTIONS | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE |         \
	 PTRACE_O_TRACEEXEC)
/* Remember when following began (a trace file older than that is not one of this run's). */
void follow_begin(void);

/* ---- /proc/PID/status and comm (proc_status.c) ------------------------------------------------ */

/* The value of "Key:" in /proc/PID/status (or /proc/DIR/status, DIR as "PID/task/TID") into buf,
 * or NULL. */
char *proc_status_field(pid_t pid, const char *key, char *buf, size_t len);
char *proc_status_field_at(const char *dir, const char *key, char *buf, size_t len);
/* /proc/PID/comm, or "?". */
void proc_comm(pid_t pid, char *buf, size_t len);

/* ---- checks (checks.c) ------------------------------------------------------------------------ */

/* Everything that can be refused before touching the target. 0, or -1 with a message.
 * stopped_ok: a process stopped by job control is not refused (a detach). */
int check_target(pid_t pid, bool stopped_ok);
/* "Seccomp:" of /proc/PID/status: 0 none, 1 strict, 2 filter; -1 unknown. */
int target_seccomp_mode(pid_t pid);

/* ---- refused ptrace (seize_refusal.c) ---------------------------------------------------------- */

/* -1 with a message naming it when a thread of pid has a tracer other than us. */
int check_no_other_tracer(pid_t pid);
/* The PTRACE_SEIZE of pid failed with err: the message that says why, and what to change. */
void explain_seize_error(pid_t pid, int err);

#endif
