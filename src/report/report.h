/* cuhook report: the pieces between a decoded trace (trace_reader.h) and the output.
 *
 *   view.c       options applied to one trace: the selected calls in time order, each
 *                function's category, kernel handle -> name
 *   stats.c      per-function statistics (the API summary table)
 *   analysis.c   categories, transfers, pipeline stages, host gaps, nesting, errors
 *   findings.c   bottleneck findings from the analysis, with the numbers behind them
 *   describe.c   one call in words: kernel name, grid, bytes, direction, returned pointer...
 *   text.c       the terminal report
 *   export_*.c   json, csv, jsonl, chrome, perfetto, folded
 *   util.c       units, escaping, output helpers
 * cmd_report.c (src/cli) parses the command line into struct rp_opts and calls rp_main(). */
#ifndef CUHOOK_REPORT_H
#define CUHOOK_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "categories.h"
#include "put.h"
#include "trace_reader.h"

enum rp_format {
	RP_FMT_TEXT,
	RP_FMT_JSON,
	RP_FMT_CSV,
	RP_FMT_JSONL,
	RP_FMT_CHROME,
	RP_FMT_PERFETTO,
	RP_FMT_FOLDED,
};

enum rp_sort {
	RP_SORT_TOTAL,
	RP_SORT_CALLS,
	RP_SORT_AVG,
	RP_SORT_MED,
	RP_SORT_MIN,
	RP_SORT_MAX,
	RP_SORT_NAME,
};

struct rp_opts {
	enum rp_format format;
	enum rp_sort sort;
	const char *output;        /* -o FILE, NULL or "-": stdout; a new file (mode 0600), never
	                              written through a link (src/format/out_file.h) */
	int force;                 /* --force: replace an existing -o FILE */
	unsigned top;              /* rows of the slowest-calls list (--top) */
	unsigned width;            /* timeline columns */
	int all;                   /* --all: list every refused function */
	int color;                 /* ANSI colors in the text report */
	int strict;                /* --strict: exit RP_EXIT_TRUNCATED if a trace is damaged */
	const char *functions;     /* --functions GLOB[,GLOB...] */
	const char *threads;       /* --thread TID|NAME[,...] */
	int has_range;             /* --time-range: [range_start, range_end) from the trace start
	                              (several files: from the start of the common time axis) */
	int64_t range_start_ns, range_end_ns;
	int separate;              /* --separate: several files give one report after the other,
	                              each on its own time axis (the behaviour before merging) */
	int align_monotonic;       /* --align monotonic: line files up by CLOCK_MONOTONIC (one
	                              machine) instead of CLOCK_REALTIME (default) */
};

/* Functions whose DATA records name kernels (view.c builds handle -> name from them). */
enum rp_namer { RP_NAMER_NONE, RP_NAMER_GET_FUNCTION, RP_NAMER_GET_KERNEL, RP_NAMER_GET_NAME,
                RP_NAMER_KERNEL_TO_FUNCTION };

/* What the report knows about a function from its name, computed once per function id. */
enum rp_kind { RP_KIND_PLAIN, RP_KIND_XFER, RP_KIND_ALLOC, RP_KIND_LAUNCH, RP_KIND_RELEASE };
struct rp_finfo {
	uint8_t cat;               /* enum rp_cat */
	uint8_t kind;              /* enum rp_kind */
	uint8_t submission;        /* hands work to the GPU */
	uint8_t names_kernel;      /* enum rp_namer: gives a kernel handle its name */
	uint8_t ioctl;             /* libc's ioctl on NVIDIA device files (a CUHOOK_LIB_IOCTL
	                              library): the driver boundary, not an API function */
	int8_t alloc_arg, alloc_arg2;
	struct rp_xfer x;
	struct rp_launch l;
};

/* One trace with the options applied. */
struct rp_view {
	struct tr_trace *t;
	const struct rp_opts *o;
	uint32_t *sel;             /* selected API calls (indices in t->calls), sorted by start time:
	                              every section's statistics; ioctls are not among them */
	uint32_t nsel;
	uint32_t *xsel;            /* every selected call, ioctls included (the call-by-call exports
	                              and the ioctl section); the same array as sel when the trace
	                              has no ioctl */
	uint32_t nxsel;
	int has_ioctl;             /* the trace has a CUHOOK_LIB_IOCTL library */
	uint64_t *counted;         /* per function id: calls counted, not recorded (COUNTS entries,
	                              agent option count=GLOBS) that the options select; NULL when
	                              the trace has no COUNTS entry. --time-range places an entry at
	                              the time the writer read it (the agent: every 50 ms) */
	uint64_t ncounted;         /* their sum (saturating) */
	int64_t t0, t1;            /* the trace's span, absolute ns: tracing start .. last record
	                              (the last event, or the last COUNTS block if later) */
	int64_t shift;             /* where t0 lies on the common time axis of several files (ns
	                              from the earliest start, >= 0); 0 for one file */
	int64_t base;              /* t0 - shift: an absolute time minus base is its time on the
	                              common axis (rp_rel) */
	int axis_realtime;         /* several files lined up by their realtime offsets */
	struct rp_finfo *fi;       /* per function id: what the name says (categories.h) */
	uint8_t *thread_dup;       /* per thread: another thread has the same name */
	/* kernel handle (CUfunction / CUkernel) -> name, from cuModuleGetFunction & co */
	struct rp_name_slot *names;
	uint32_t names_cap, nnames;
};

int rp_view_init(struct rp_view *v, struct tr_trace *t, const struct rp_opts *o, char *err, size_t errlen);
/* The same with the trace's start at `shift` ns on the common axis of several files. */
int rp_view_init_at(struct rp_view *v, struct tr_trace *t, const struct rp_opts *o, int64_t shift, char *err,
                    size_t errlen);
/* The start of a trace's span (rp_view.t0) before a view exists. */
int64_t rp_trace_t0(const struct tr_trace *t);
/* Line several traces up on one axis: shift[k] = ns from the earliest start to trace k's start,
 * by each trace's realtime - monotonic offset (or by CLOCK_MONOTONIC alone with --align
 * monotonic, or when a trace has no realtime pair). Returns 1 if realtime was used. */
int rp_align(struct tr_trace *const *traces, unsigned n, const struct rp_opts *o, int64_t *shift);
/* Several views make one merged report (not --separate). */
static inline int rp_merged(const struct rp_view *views, unsigned n)
{
	return n > 1 && !views[0].o->separate;
}
/* An absolute time (ns) on the common axis: ns - base, saturating (hostile files). */
static inline int64_t rp_rel(const struct rp_view *v, int64_t ns)
{
	int64_t r;
	if (__builtin_sub_overflow(ns, v->base, &r))
		return ns > 0 ? INT64_MAX : INT64_MIN;
	return r;
}
void rp_view_free(struct rp_view *v);
/* Whether the options select a COUNTS entry by its thread and, with --time-range, the time the
 * writer read it (the function is for the caller to check: rp_view.counted). */
int rp_count_in_view(const struct rp_view *v, const struct tr_count *c);
/* Kernel name of a CUfunction or CUkernel handle: 1 with name and len set, 0 if unknown. */
int rp_kernel_name(const struct rp_view *v, uint64_t handle, const char **name, uint16_t *len);
/* The category name of a function for the exports: rp_cat_names[], or "ioctl". */
const char *rp_call_category(const struct rp_view *v, uint32_t func);
/* "main", or "worker/1234" when several threads share the name, or "1234" without a name. */
const char *rp_thread_label(const struct rp_view *v, uint32_t thread, char *buf, size_t len);

/* ---- stats.c ---- */
struct rp_fstat {
	uint32_t func;
	uint64_t calls;            /* all recorded calls, with or without an EXIT */
	uint64_t counted;          /* calls counted, not recorded (rp_view.counted): no times; the
	                              function's calls are calls + counted */
	uint64_t timed;            /* calls with a duration: what the times below are computed on */
	uint64_t failed;           /* timed calls that returned non-zero (a CUresult error) */
	int64_t total, min, max;   /* ns */
	double avg, med, stddev;   /* ns; med of an even count is the mean of the two middle
	                              values; stddev is the sample standard deviation (n - 1) */
};
/* Statistics of every function with at least one selected call, sorted by opts->sort. The
 * caller frees *out. Returns 0, -1 when out of memory. */
int rp_func_stats(const struct rp_view *v, struct rp_fstat **out, uint32_t *n);
/* The middle value(s) of d[0..n), n > 0, in O(n) (reorders d): *lo == *hi for an odd n, the
 * two middle values for an even n. */
void rp_middle(int64_t *d, size_t n, int64_t *lo, int64_t *hi);
/* The API summary over several traces: functions matched by name. */
struct rp_mstat {
	const char *name;
	uint8_t cat;               /* enum rp_cat */
	uint32_t nproc;            /* traces with a selected call of it */
	struct rp_fstat s;         /* s.func: id in the first trace that has it (not meaningful) */
};
int rp_merged_stats(const struct rp_view *views, unsigned n, struct rp_mstat **out, uint32_t *nout);

/* ---- analysis.c ---- */
struct rp_cat_stat {
	uint64_t calls;
	int64_t total;             /* outermost calls only, so categories never count time twice */
};

struct rp_dir_stat {
	uint64_t calls, async_calls;
	uint64_t bytes;            /* all copies with a known size */
	uint64_t sync_bytes;       /* synchronous ones: their duration is the copy's */
	int64_t total, sync_time;
};

enum rp_stage_id { RP_STAGE_INIT, RP_STAGE_LOAD, RP_STAGE_INFER, RP_STAGE_RESULT, RP_STAGE_TEARDOWN, RP_STAGE_COUNT };
extern const char *const rp_stage_names[RP_STAGE_COUNT];

struct rp_stage {
	int present;
	int64_t start, end;        /* absolute ns */
	uint64_t calls;
	int64_t api;               /* time inside outermost API calls during the stage */
	uint32_t first, last;      /* indices in calls[] */
};

#define RP_MAX_TOP_GAPS 5
struct rp_gaps {
	uint64_t submissions;      /* calls handing work to the GPU */
	uint64_t ngaps;
	int64_t total, max, median;
	int64_t span;              /* first submission start .. last submission end */
	int64_t sync_in_gaps;      /* of the gaps' total, time in outermost sync calls (any thread):
	                              the host was waiting for the GPU, not starving it */
	uint32_t ntop;
	int64_t top[RP_MAX_TOP_GAPS];
	uint32_t top_before[RP_MAX_TOP_GAPS], top_after[RP_MAX_TOP_GAPS];  /* call indices */
};

#define RP_MAX_NEST 16
struct rp_nest {
	uint32_t parent_func, child_func;
	uint64_t count;
	int64_t child_time;
};

struct rp_analysis {
	struct rp_cat_stat cat[RP_CAT_COUNT];
	struct rp_dir_stat dir[RP_DIR_COUNT];
	int64_t api_time;          /* sum over outermost selected calls */
	uint64_t outer_calls;
	struct rp_stage stage[RP_STAGE_COUNT];
	struct rp_gaps gaps;
	struct rp_nest nest[RP_MAX_NEST];
	uint32_t nnest;
	uint64_t nested_calls;
	uint64_t failed_calls;     /* returned non-zero */
	uint64_t launches;
	uint64_t alloc_calls, alloc_bytes, free_calls;
	int max_depth;
};
int rp_analyze(const struct rp_view *v, struct rp_analysis *a);
/* Time a thread spent in outermost sync calls within [from, to): how much of a gap was the
 * host waiting for the GPU rather than preparing work. */
int64_t rp_sync_time_in(const struct rp_view *v, uint32_t thread, int64_t from, int64_t to);

/* The k slowest selected calls with a duration, slowest first (ties: earlier first). Returns
 * their count and *out (indices in calls[], caller frees); 0 and NULL when none or no memory. */
uint32_t rp_slowest(const struct rp_view *v, uint32_t k, uint32_t **out);

/* ---- findings.c ---- */
#define RP_MAX_FINDINGS 16
struct rp_finding {
	int severity;              /* 0 info, 1 worth a look, 2 likely bottleneck */
	char text[512];
};
unsigned rp_findings(const struct rp_view *v, const struct rp_analysis *a, const struct rp_fstat *fs,
                     uint32_t nfs, struct rp_finding *out, unsigned max);

/* ---- describe.c ---- */
/* The call's interesting arguments in words ("vecAdd grid (256,1,1) block (128,1,1) smem 0
 * stream 0x0", "H2D 4.00 MiB -> 0x7f..", "1.00 MiB -> 0x7f00..."), "" if nothing known. */
size_t rp_describe_call(const struct rp_view *v, const struct tr_call *c, char *buf, size_t len);
/* Bytes a copy, memset or allocation moved or reserved; 0 and *known = 0 if not one. */
uint64_t rp_call_bytes(const struct rp_view *v, const struct tr_call *c, int *known);

/* ---- outputs ---- */
int rp_write_text(FILE *f, struct rp_view *v);
/* One text report over several traces: a header per process, the merged API summary with the
 * processes' share, one timeline, then each process's own sections. */
int rp_write_text_merged(FILE *f, struct rp_view *views, unsigned n, int realtime);
/* The timeline section of the text report (text_timeline.c): the threads of every view, rows
 * grouped by process, on the common time axis. */
void rp_text_timeline(FILE *f, struct rp_view *views, unsigned n);
int rp_write_json(FILE *f, struct rp_view *views, unsigned n);
int rp_write_csv(FILE *f, struct rp_view *views, unsigned n);
int rp_write_jsonl(FILE *f, struct rp_view *views, unsigned n);
int rp_write_chrome(FILE *f, struct rp_view *views, unsigned n);
int rp_write_perfetto(FILE *f, struct rp_view *views, unsigned n);
int rp_write_folded(FILE *f, struct rp_view *views, unsigned n);

/* ---- util.c ---- */
/* rp_put: put.h */
/* "12.345 ms": 3 decimals in the largest unit that keeps the value >= 1 (ns, us, ms, s). */
const char *rp_fmt_dur(char *buf, size_t len, double ns);
/* "4.00 MiB" */
const char *rp_fmt_bytes(char *buf, size_t len, double bytes);
/* A JSON string literal (with quotes) of n bytes of s: escapes quotes, backslashes, control
 * characters, and bytes >= 0x80 that are not valid UTF-8 (as \u00XX of the byte). */
void rp_json_str(FILE *f, const char *s, size_t n);
/* Parse "1.5", "1.5s", "200ms", "30us", "100ns" into ns; -1 if malformed, not finite (nan,
 * inf), negative or beyond 9e18 ns. */
int rp_parse_time(const char *s, int64_t *ns);
/* A string from a trace (a program, thread, function or library name, a note) as the text
 * report prints it: s itself when a terminal can take it as it is, else a copy with control
 * characters and invalid UTF-8 shown escaped (src/common/text_safe.h), valid until 8 more calls.
 * The exports escape in their own syntax and do not use it. */
const char *rp_safe(const char *s);
/* fnmatch-style '*' and '?' glob against a comma-separated list: 1 if any matches. */
int rp_glob_list_match(const char *globs, const char *name);

/* Sums of durations saturate instead of overflowing (only a hostile file gets there). */
static inline int64_t rp_sat_add(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* Runs the report on the trace files: returns the process exit status. */
int rp_main(const struct rp_opts *o, char **files, int nfiles);

/* Exit statuses of cuhook report (docs/report.md). */
#define RP_EXIT_OK 0
#define RP_EXIT_ERROR 1        /* a file could not be read as a trace at all */
#define RP_EXIT_USAGE 2
#define RP_EXIT_TRUNCATED 3    /* reported, but some file was truncated or corrupt (--strict) */

#endif
