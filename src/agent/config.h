/* The agent's options: from CUHOOK_* environment variables (constructor mode) or from the
 * "key=value;key=value" string cuhook passes to cuhook_agent_start (injected mode), both read
 * with the option codec the CLI builds that string with (src/common/agent_options.h).
 * docs/agent.md lists them. */
#ifndef CUHOOK_CONFIG_H
#define CUHOOK_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent_options.h"

/* capture_range_end= (Nsight Systems' --capture-range-end, without its -shutdown forms: cuhook
 * never ends the program) */
enum capture_end { CAPTURE_END_REPEAT, CAPTURE_END_STOP, CAPTURE_END_NONE };

/* names_window='s default: off. A window loads CUPTI into the program, which stays loaded after
 * graph launches (gpu_activity.c: finalizing then breaks them), and JAX's iterations after
 * the detach were 1.07-1.24x those before it on an H200 (0.99-1.17x without): the user asks for
 * it (--names-window SEC). */
#define CUHOOK_NAMES_WINDOW_DEFAULT_MS 0u

struct cuhook_config {
	char output[AOPT_PATH_MAX + 1];       /* output: trace path; "%p" becomes the pid */
	char funcs[AOPT_GLOBS_MAX + 1];       /* funcs: glob filter of function names */
	char count[AOPT_GLOBS_MAX + 1];       /* count: globs of traced functions to count, not record
	                                         (default CUHOOK_COUNT_DEFAULT, empty: none); the calls
	                                         leave only per-thread totals (COUNTS blocks) */
	char lib[AOPT_GLOB_MAX + 1];          /* lib: basename glob of the libraries to patch */
	unsigned buffer_kb;                   /* buffer_kb: per-thread ring size */
	bool drop;                            /* drop: lossy (never wait for the writer) */
	unsigned flush_ms;                    /* flush_ms: writer period */
	bool monotonic;                       /* clock=monotonic instead of tsc */
	int verbose;                          /* verbose: 0 quiet, 1 summary, 2 every refusal */
	bool disable;                         /* disable: do nothing */
	bool ioctl;                           /* ioctl: also trace ioctls on NVIDIA device files */
	bool export_tables;                   /* export_tables: trace the functions of cuGetExportTable's tables */
	char ioctl_paths[AOPT_GLOBS_MAX + 1]; /* ioctl_paths: globs of the device files' paths */
	bool follow;                          /* follow: fork children trace into a file of their own,
	                                         and every file name gets ".PID" before its extension */
	bool quiet;                           /* stderr=0: nothing on the process's stderr (cuhook
	                                         attach: it is not the operator's); a failed write is
	                                         told at stop instead */
	bool force;                           /* force: replace an existing trace file
	                                         (src/format/out_file.h) */
	uint64_t max_size;                    /* max_size: the trace file's size cap in bytes, 0 none */
	int injector;                         /* injector: pid of the cuhook attach that started the
	                                         session (0: none); the agent ends the trace itself
	                                         once it is gone */
	unsigned deadline_ms;                 /* deadline_ms: ... or this long after the start (0:
	                                         never) */
	bool gpu;                             /* gpu: record the GPU's work with CUPTI
	                                         (gpu_activity.h) */
	unsigned names_window_ms;             /* names_window: GPU kernel records this long to name
	                                         the kernels of graphs instantiated before tracing
	                                         began (kernel_names.h), 0 never */
	char cupti[AOPT_PATH_MAX + 1];        /* cupti: the libcupti to load ("": search for one) */
	char stacks[AOPT_GLOBS_MAX + 1];      /* stacks: globs of recorded functions whose calls get
	                                         the caller's stack (default CUHOOK_STACKS_DEFAULT,
	                                         empty: none) */
	unsigned stack_depth;                 /* stack_depth: frames kept, native and Python each */
	uint64_t flight;                      /* flight: the flight recorder's ring per thread in
	                                         bytes (a power of two), 0 off (flight.h) */
	char trigger_error[256];              /* trigger_error: src/common/trigger_spec.h */
	char trigger_slow[AOPT_GLOBS_MAX + 1];/* trigger_slow: src/common/trigger_spec.h */
	bool capture_range;                   /* capture_range=cudaProfilerApi: record only between
	                                         cuProfilerStart and cuProfilerStop (capture_range.h) */
	enum capture_end capture_end;         /* capture_range_end: every range, the first, or from
	                                         the first start to the end */
	unsigned capture_ranges;              /* capture_ranges: record at most this many ranges
	                                         (0: every one) */
	unsigned delay_ms;                    /* delay_ms: record from this long after the start */
	unsigned duration_ms;                 /* duration_ms: ... for this long, then end the trace
	                                         (0: to the end) */
};

void config_defaults(struct cuhook_config *c);
/* Returns 0, or -1 with a message in err for an unknown key or a bad value. The environment is
 * read with secure_getenv: nothing in a process started with more privileges than its starter
 * (set-user-ID, set-group-ID, file capabilities). */
int config_from_env(struct cuhook_config *c, char *err, size_t errlen);
int config_from_string(struct cuhook_config *c, const char *opts, char *err, size_t errlen);
/* The trace file of this process (src/format/trace_path.h: %p, and ".PID" with follow). */
void config_output_path(const struct cuhook_config *c, char *out, size_t len);

/* Whether a GPU session may run in this trace: the user's (gpu=1), or a names window. */
static inline bool config_gpu_possible(const struct cuhook_config *c)
{
	return c->gpu || c->names_window_ms;
}

#endif
