/* The agent's options: from CUHOOK_* environment variables (constructor mode) or from the
 * "key=value;key=value" string cuhook passes to cuhook_agent_start (injected mode).
 * docs/agent.md lists them. */
#ifndef CUHOOK_CONFIG_H
#define CUHOOK_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

struct cuhook_config {
	char output[PATH_MAX];   /* output: trace path; "%p" becomes the pid */
	char funcs[1024];        /* funcs: glob filter of function names */
	char count[1024];        /* count: globs of traced functions to count, not record (default
	                            CUHOOK_COUNT_DEFAULT, empty: none); the calls leave only
	                            per-thread totals (COUNTS blocks) */
	char lib[256];           /* lib: basename glob of the libraries to patch */
	unsigned buffer_kb;      /* buffer_kb: per-thread ring size */
	bool drop;               /* drop: lossy (never wait for the writer) */
	unsigned flush_ms;       /* flush_ms: writer period */
	bool monotonic;          /* clock=monotonic instead of tsc */
	int verbose;             /* verbose: 0 quiet, 1 summary, 2 every refusal */
	bool disable;            /* disable: do nothing */
	bool ioctl;              /* ioctl: also trace ioctls on NVIDIA device files */
	char ioctl_paths[1024];  /* ioctl_paths: globs of the device files' paths */
	bool follow;             /* follow: fork children trace into a file of their own, and every
	                            file name gets ".PID" before its extension */
	int injector;            /* injector: pid of the cuhook attach that started the session (0:
	                            none); the agent ends the trace itself once it is gone */
	unsigned deadline_ms;    /* deadline_ms: ... or this long after the start (0: never) */
};

void config_defaults(struct cuhook_config *c);
/* Returns 0, or -1 with a message in err for an unknown key or a bad value. */
int config_from_env(struct cuhook_config *c, char *err, size_t errlen);
int config_from_string(struct cuhook_config *c, const char *opts, char *err, size_t errlen);
/* The trace file of this process (src/format/trace_path.h: %p, and ".PID" with follow). */
void config_output_path(const struct cuhook_config *c, char *out, size_t len);

#endif
