/* The injector: puts the agent (libcuhook.so) into a process with ptrace and a remote dlopen,
 * starts and stops it while every thread of the process is stopped, and leaves the process as it
 * found it. Used by `cuhook run` and `cuhook attach`; docs/injection.md tells how it works. */
#ifndef CUHOOK_INJECT_H
#define CUHOOK_INJECT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define CUHOOK_INJECT_CALL_TIMEOUT_MS 3000 /* --call-timeout's default */

struct cuhook_inject_opts {
	const char *agent_path;    /* absolute path of the agent library */
	const char *agent_options; /* "output=...;funcs=..." for cuhook_agent_start() */
	int call_timeout_ms;       /* a remote call that takes longer is abandoned (0: the default) */
	int verbose;               /* phases and timings on stderr */
	bool follow;               /* spawn: stay the tracer of the program and its descendants (the
	                            * options then hold follow=1), see cuhook_inject_follow() */
	volatile pid_t *spawned;   /* spawn: set to the program's pid right after fork (for a signal
	                            * handler that must know it before the injection is over) */
};

/* The steps of the agent's stop the agent times (cuhook_agent.h, CUHOOK_STOP_STEPS), and of
 * its GPU session's end (CUHOOK_GPU_STOP_STEPS). */
#define CUHOOK_INJECT_STOP_STEPS 6
#define CUHOOK_INJECT_GPU_STOP_STEPS 4

/* What one attach or detach took, for --verbose and the benchmarks. */
struct cuhook_inject_times {
	uint64_t seize_ns;   /* first PTRACE_INTERRUPT until every thread stopped (the last stop) */
	uint64_t load_ns;    /* remote dlopen (0 when the agent was already there) */
	uint64_t prepare_ns; /* remote cuhook_agent_prepare (0 when not called) */
	uint64_t call_ns;    /* remote cuhook_agent_start / _stop */
	uint64_t fixup_ns;   /* remote fixup_ip calls and moving threads */
	uint64_t detach_ns;  /* PTRACE_DETACH of every thread */
	uint64_t stopped_ns; /* first thread stopped until the last one resumed, for the last stop */
	int nthreads;
	int moved;           /* threads whose ip was moved */
	bool agent_reused;   /* the agent was already loaded (an earlier attach or run) */
	bool beside;         /* dlopen (and prepare) ran while the other threads ran: not part of
	                      * the stopped time */
	/* How long the program's threads were held (interrupted until let go), every stop of the
	 * attach or detach counted: the first stop, the remote calls, the start or stop, the
	 * detach. The thread held longest, and the most a thread was held in all. Per thread:
	 * cuhook_inject_held(). */
	int nheld;           /* threads held at least once */
	pid_t held_max_tid;
	uint64_t held_max_ns, held_total_max_ns;
	/* A detach: how long each step of the agent's stop took (cuhook_agent_stop_ns, read once
	 * the threads ran again: GPU, capture, jumps out, trace closed, watch, names); 0 when the
	 * agent does not say (an older one). */
	bool have_stop_steps;
	uint64_t stop_step_ns[CUHOOK_INJECT_STOP_STEPS];
	/* A detach with gpu=1 whose GPU session's end ran beside the program (beside): how long
	 * each of its steps took (cuhook_agent_gpu_stop_ns: flush, disable, flush again, finalize).
	 * No thread is held then, but the program's CUDA calls may wait on CUPTI. */
	bool have_gpu_stop_steps;
	uint64_t gpu_stop_step_ns[CUHOOK_INJECT_GPU_STOP_STEPS];
};

/* One thread of the last attach or detach: how many times it was held, its longest hold and
 * their sum (what the program measures as that thread's stall: a hold is a gap in its run). */
struct cuhook_thread_held {
	pid_t tid;
	int holds;
	uint64_t max_ns, total_ns;
};
/* Of the last cuhook_inject_attach or cuhook_inject_detach, longest first; *n of them. */
const struct cuhook_thread_held *cuhook_inject_held(int *n);
/* "TID LONGEST/TOTAL, ..." in ms, longest first, into buf (cut to len). */
void cuhook_inject_held_text(char *buf, size_t len);

/* Stop every thread of pid; if the agent is not there yet, let them run again while one of them
 * loads it and calls cuhook_agent_prepare(agent_options), then stop them all again; call
 * cuhook_agent_start(agent_options, CUHOOK_START_THREADS_STOPPED), move threads parked in
 * patched bytes, and let the process go. 0, or -1 and cuhook_inject_error() says why; on -1 the
 * process has been released unharmed (or, for RC_CRASH-like failures, the message says it may
 * not be). */
int cuhook_inject_attach(pid_t pid, const struct cuhook_inject_opts *o, struct cuhook_inject_times *t);

/* Stop every thread again, cuhook_agent_stop(0), move threads back out of relocated code, let
 * the process go. 0; 1 when that went well but the agent could not write its whole trace (a full
 * disk: cuhook_inject_error() says why); -1 with a message. */
int cuhook_inject_detach(pid_t pid, const struct cuhook_inject_opts *o, struct cuhook_inject_times *t);

/* Start argv[0] (searched in PATH) as a child, stop it at its entry point (dynamic loader and
 * libc ready, no program code run yet), inject and start the agent, then release it. Returns the
 * child's pid (wait for it as usual), or -1 with a message; *exit_status, when the child already
 * ended (it could not be executed), is its wait status. */
pid_t cuhook_inject_spawn(char *const argv[], const struct cuhook_inject_opts *o,
                          struct cuhook_inject_times *t, int *exit_status);

/* After cuhook_inject_spawn() with o->follow: trace the program's process tree, event-only
 * (fork, vfork, clone, exec; signals passed on), and put the agent into every new program a
 * process of the tree execs, at its entry point, as spawn does. Processes that fork without
 * exec are the agent's business (follow=1). Returns when no process of the tree is left: 0 and
 * *status = the program's own wait status, or -1 with a message. */
int cuhook_inject_follow(pid_t pid, const struct cuhook_inject_opts *o, int *status);

/* Refuse what cannot work before touching the process (no such PID, a debugger attached, not
 * x86-64, a static binary, strict seccomp, stopped). 0 or -1 with a message. */
int cuhook_inject_check(pid_t pid);

/* Is `path` mapped in pid? (libcuda: "libcuda.so") 1 yes, 0 no, -1 unreadable. */
int cuhook_inject_has_object(pid_t pid, const char *name_prefix);

/* cuhook dump: ask the flight recorder of the agent in pid (cuhook_agent_control) for a dump and
 * wait at most timeout_ms for the agent to count it written (*dumps: its count of dumps then).
 * Nothing is stopped or signalled; the memory goes through /proc/PID/mem. agent_path: the agent
 * looked for first (any libcuhook exporting the API otherwise). Anything but WRITTEN comes with
 * a message (cuhook_inject_error()). */
enum cuhook_dump_status {
	CUHOOK_DUMP_WRITTEN,
	CUHOOK_DUMP_FAILED,
	CUHOOK_DUMP_NO_PROCESS,    /* no such process, or it ended meanwhile */
	CUHOOK_DUMP_NO_AGENT,      /* no cuhook agent in it, or one without a flight recorder */
	CUHOOK_DUMP_NOT_FLIGHT,    /* an agent, not in flight-recorder mode */
	CUHOOK_DUMP_NOT_PERMITTED, /* no ptrace right over it */
	CUHOOK_DUMP_TIMEOUT,       /* asked for, not written in time */
};
enum cuhook_dump_status cuhook_inject_dump(pid_t pid, const char *agent_path, int timeout_ms, uint32_t *dumps);

/* cuhook run's and attach's status line: the counters of the agent in a running process
 * (cuhook_agent_control), read through /proc/PID/mem without stopping or signalling it. Open
 * once the agent is in (its address is looked up then), read as often as wanted. */
struct cuhook_progress_src {
	pid_t pid;
	int fd;       /* /proc/PID/mem, or -1: process_vm_readv */
	uint64_t ctl; /* the control object's address in pid */
};
struct cuhook_progress {
	uint64_t events;  /* ENTRY + EXIT records written */
	uint64_t counted; /* counted calls written */
	uint64_t bytes;   /* the trace file's size */
	uint64_t dropped; /* records dropped */
};
/* 0, or -1 (no agent found, another version of it, no right to read the process's memory). */
int cuhook_inject_progress_open(struct cuhook_progress_src *s, pid_t pid, const char *agent_path);
/* 0, or -1 when the memory cannot be read (the process ended) or holds no agent now (an exec). */
int cuhook_inject_progress_read(const struct cuhook_progress_src *s, struct cuhook_progress *p);
void cuhook_inject_progress_close(struct cuhook_progress_src *s);

const char *cuhook_inject_error(void);

/* What the agent said for the operator at the last start besides where it traces to: lines
 * ("GPU: no CUPTI found ..."), or "". cuhook attach prints them: the process's stderr, where the
 * agent would say them itself, is not the operator's. */
const char *cuhook_inject_agent_notes(void);

/* One line of timings on stderr. */
void cuhook_inject_print_times(const char *what, const struct cuhook_inject_times *t);

#endif
