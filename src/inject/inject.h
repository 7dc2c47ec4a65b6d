/* The injector: puts the agent (libcuhook.so) into a process with ptrace and a remote dlopen,
 * starts and stops it while every thread of the process is stopped, and leaves the process as it
 * found it. Used by `cuhook run` and `cuhook attach`; docs/injection.md tells how it works. */
#ifndef CUHOOK_INJECT_H
#define CUHOOK_INJECT_H

#include "cuhook_agent.h" /* CUHOOK_COUNT_DEFAULT, for the help text */

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
};

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

const char *cuhook_inject_error(void);

/* What the agent said for the operator at the last start besides where it traces to: lines
 * ("GPU: no CUPTI found ..."), or "". cuhook attach prints them: the process's stderr, where the
 * agent would say them itself, is not the operator's. */
const char *cuhook_inject_agent_notes(void);

/* ---- the options `run` and `attach` share ---------------------------------------------------- */

struct cuhook_inject_cli {
	const char *output;        /* -o FILE */
	const char *funcs;         /* --funcs GLOBS */
	const char *count;         /* --count GLOBS */
	const char *agent;         /* --agent PATH: another agent library (tests) */
	const char *extra[32];     /* --opt KEY=VALUE */
	int nextra;
	double call_timeout;       /* --call-timeout SEC */
	int verbose;               /* -v / --verbose */
	int ioctl;                 /* --ioctl: also trace ioctls on NVIDIA device files */
	int force;                 /* --force: replace an existing trace file (agent option force=1) */
	uint64_t max_size;         /* --max-size SIZE: the trace's size cap in bytes (max_size=), 0 none */
	int injector;              /* attach: our pid, for the agent to watch (0: none) */
	unsigned deadline_ms;      /* attach --duration: when the agent ends the trace itself (0: never) */
	int gpu;                   /* --gpu: the GPU's work too, through CUPTI (agent option gpu=1) */
	const char *cupti;         /* --cupti PATH: that libcupti (implies --gpu; made absolute) */
	const char *stacks;        /* --stacks GLOBS / --no-stacks (""): which calls get a stack */
	const char *stack_depth;   /* --stack-depth N: frames kept, native and Python each */
};

/* Consume argv[*i] (and its value) if it is one of the shared options. 1 consumed, 0 not ours,
 * -1 bad usage (message printed). */
int cuhook_inject_cli_opt(struct cuhook_inject_cli *c, int argc, char **argv, int *i);
/* cuhook attach: let the agent watch us (cuhook_inject_cli_options then passes injector= and, for
 * a duration >= 0, deadline_ms=): should we be killed or stopped past the duration, it ends the
 * trace by itself (docs/agent.md). Our pid is passed only if the target sees us under it: the
 * same pid namespace. */
void cuhook_inject_cli_watch(struct cuhook_inject_cli *c, pid_t target, double duration);
/* Build the agent option string ("output=ABS;funcs=...;key=value") into buf. The output path is
 * made absolute against our working directory: the target's may differ. 0 or -1 (printed). */
int cuhook_inject_cli_options(const struct cuhook_inject_cli *c, const char *default_output,
                              char *buf, size_t len);
/* Before anything is done to a process: refuse (a message on stderr naming the file, -1) when its
 * trace file exists already and may not be replaced (no force=1), or is something --force does
 * not replace (src/format/out_file.h). pid: the process, or 0 when not known yet; a name that
 * depends on it (%p, follow=1) is then left to the agent, which refuses the same way. */
int cuhook_inject_check_output(const char *cmd, const char *options, pid_t pid);
/* Fill o from c: the agent path (--agent or next to the executable), the timeouts. 0 or -1. */
int cuhook_inject_cli_setup(const struct cuhook_inject_cli *c, struct cuhook_inject_opts *o,
                            char *agent_buf, size_t agent_len);
/* A number of seconds given with option `name`: finite, from min to max. 0, or -1 with a message
 * that names the option. */
int cuhook_parse_seconds(const char *name, const char *v, double min, double max, double *out);
/* One line of timings on stderr. */
void cuhook_inject_print_times(const char *what, const struct cuhook_inject_times *t);
#define CUHOOK_INJECT_CLI_HELP \
	"  -o, --output FILE     trace file (made absolute; the target writes it): a new file,\n" \
	"                        mode 0600; one that exists is refused unless --force\n" \
	"  --funcs GLOBS         only these functions (comma-separated globs, e.g. 'cuLaunch*')\n" \
	"  --count GLOBS         count these functions' calls exactly, without recording each call\n" \
	"                        (for very frequent, short calls; default: " CUHOOK_COUNT_DEFAULT ")\n" \
	"  --record-all          record every call, the default's counted functions too (--count '')\n" \
	"  --stacks GLOBS        record the caller's stack (native, and Python where it runs) at each\n" \
	"                        call of these functions (default none; 'rare': allocation, free,\n" \
	"                        module loading, graph instantiation, synchronisation; 6-30 us a\n" \
	"                        call); --stacks '' or --no-stacks: none\n" \
	"  --stack-depth N       frames kept per stack, native and Python each (1 to 256; default 48)\n" \
	"  --ioctl               also trace ioctls on NVIDIA device files, nested under the cu* calls\n" \
	"  --gpu                 also record the GPU's work (kernels, copies, memsets, graph kernels)\n" \
	"                        with CUPTI, each linked to the call that submitted it\n" \
	"  --cupti PATH          the libcupti to load (implies --gpu; default: the one the program\n" \
	"                        loaded, next to its CUDA wheels, $CUDA_HOME, /usr/local/cuda)\n" \
	"  --force               replace the trace file if it exists (never written through a link)\n" \
	"  --max-size SIZE       stop writing the trace at SIZE bytes (K, M, G; at least 64K): later\n" \
	"                        records are counted as dropped, the program goes on\n" \
	"  --opt KEY=VALUE       another agent option (same keys as the CUHOOK_* variables)\n" \
	"  --call-timeout SEC    give up a remote call after SEC seconds (default 3)\n" \
	"  --agent PATH          use this agent library instead of the installed libcuhook.so\n" \
	"  -v, --verbose         tell the phases and how long the process was stopped\n"

#endif
