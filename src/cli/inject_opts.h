/* The options `cuhook run` and `cuhook attach` share, and the agent option string built from
 * them (inject_opts.c). The command line's business: the injector (src/inject) takes what they
 * come to, struct cuhook_inject_opts and the option string. */
#ifndef CUHOOK_INJECT_OPTS_H
#define CUHOOK_INJECT_OPTS_H

#include "cuhook_agent.h" /* CUHOOK_COUNT_DEFAULT, for the help text */
#include "inject.h"

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
	int export_tables;         /* --export-tables: trace the functions behind cuGetExportTable */
	int force;                 /* --force: replace an existing trace file (agent option force=1) */
	uint64_t max_size;         /* --max-size SIZE: the trace's size cap in bytes (max_size=), 0 none */
	int injector;              /* attach: our pid, for the agent to watch (0: none) */
	unsigned deadline_ms;      /* attach --duration: when the agent ends the trace itself (0: never) */
	int gpu;                   /* --gpu: the GPU's work too, through CUPTI (agent option gpu=1) */
	int names_window_set;      /* --names-window SEC given: the names window, in ms */
	unsigned names_window_ms;  /* (names_window=; else the agent's default) */
	const char *cupti;         /* --cupti PATH: that libcupti (implies --gpu; made absolute) */
	const char *stacks;        /* --stacks GLOBS / --no-stacks (""): which calls get a stack */
	const char *stack_depth;   /* --stack-depth N: frames kept, native and Python each */
	const char *capture_range; /* --capture-range cudaProfilerApi (capture_range=) */
	const char *capture_end;   /* --capture-range-end repeat|stop|none (capture_range_end=), and */
	unsigned capture_ranges;   /* ... repeat:N: at most N ranges (capture_ranges=), 0 all */
	unsigned delay_ms;         /* run --delay SEC: record from SEC after the start (delay_ms=) */
	unsigned duration_ms;      /* run --duration SEC: record for SEC, then end the trace (duration_ms=) */
	uint64_t flight;           /* --flight-recorder[=SIZE]: each thread's ring, in bytes (flight=), 0 off */
	const char *trigger_error; /* --trigger error[=CODES]: "any" or the codes (trigger_error=) */
	const char *trigger_slow;  /* --trigger slow=GLOBS:MS (trigger_slow=) */
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
/* A process id given on the command line (NULL: none given): 0, or -1 (the caller says so). */
int cuhook_parse_pid(const char *v, pid_t *pid);
/* --flight-recorder without a size. */
#define CUHOOK_FLIGHT_DEFAULT "8M"
#define CUHOOK_INJECT_CLI_HELP \
	"  -o, --output FILE     trace file (made absolute; the target writes it): a new file,\n" \
	"                        mode 0600; one that exists is refused unless --force\n" \
	"  --funcs GLOBS         only these functions (comma-separated globs, e.g. 'cuLaunch*');\n" \
	"                        --functions: the same\n" \
	"  --count GLOBS         count these functions' calls exactly, without recording each call\n" \
	"                        (for very frequent, short calls; default: " CUHOOK_COUNT_DEFAULT ")\n" \
	"  --record-all          record every call, the default's counted functions too (--count '')\n" \
	"  --stacks GLOBS        record the caller's stack (native, and Python where it runs) at each\n" \
	"                        call of these functions; 'rare': allocation, free, module loading,\n" \
	"                        graph instantiation, synchronisation (run's default; attach: none,\n" \
	"                        as libunwind leaves a pipe open after the detach); under 1 us a call\n" \
	"                        once its call site was walked; --stacks '' or --no-stacks: none\n" \
	"  --stack-depth N       frames kept per stack, native and Python each (1 to 256; default 48)\n" \
	"  --ioctl               also trace ioctls on NVIDIA device files, nested under the cu* calls\n" \
	"  --export-tables       also trace the functions of the tables cuGetExportTable returns\n" \
	"  --gpu                 also record the GPU's work (kernels, copies, memsets, graph kernels)\n" \
	"                        with CUPTI, each linked to the call that submitted it\n" \
	"  --cupti PATH          the libcupti to load (implies --gpu; default: the one the program\n" \
	"                        loaded, next to its CUDA wheels, $CUDA_HOME, /usr/local/cuda)\n" \
	"  --names-window SEC    without --gpu: when a CUDA graph instantiated before tracing began\n" \
	"                        is launched, record the GPU's kernels (CUPTI) for SEC seconds to\n" \
	"                        name that graph's kernels; CUPTI stays loaded after (default 0: never)\n" \
	"  --capture-range cudaProfilerApi\n" \
	"                        record (and count) only between cuProfilerStart and cuProfilerStop\n" \
	"                        (torch.cuda.profiler.start/stop, cudaProfilerStart/Stop), as nsys does\n" \
	"  --capture-range-end repeat|repeat:N|stop|none\n" \
	"                        which ranges: every one (default), the first N, the first only, or from\n" \
	"                        the first start to the end (cuProfilerStop ignored)\n" \
	"  --force               replace the trace file if it exists (never written through a link)\n" \
	"  --max-size SIZE       stop writing the trace at SIZE bytes (K, M, G; at least 64K): later\n" \
	"                        records are counted as dropped, the program goes on\n" \
	"  --flight-recorder[=SIZE]\n" \
	"                        flight recorder: each thread keeps its newest SIZE of calls (default\n" \
	"                        " CUHOOK_FLIGHT_DEFAULT ", at least 64K; K, M, G) and nothing is written until a dump:\n" \
	"                        cuhook dump PID, a --trigger, or the program's exit (the last one)\n" \
	"  --trigger error[=CODES]\n" \
	"                        with --flight-recorder: dump when a traced call returns an error (any\n" \
	"                        but CUDA_ERROR_NOT_READY, or these comma-separated CUresult numbers)\n" \
	"  --trigger slow=GLOBS:MS\n" \
	"                        with --flight-recorder: dump when a call of these functions lasts\n" \
	"                        longer than MS milliseconds (1 to 3600000)\n" \
	"  --opt KEY=VALUE       another agent option (same keys as the CUHOOK_* variables)\n" \
	"  --call-timeout SEC    give up a remote call after SEC seconds (default 3)\n" \
	"  --agent PATH          use this agent library instead of the installed libcuhook.so\n" \
	"  -v, --verbose         tell the phases and how long the process was stopped\n"

#endif
