/* cuhook report: the pieces between a decoded trace (trace_data.h) and the output.
 *
 *   view.c       options applied to one trace: the selected calls in time order, each
 *                function's category, kernel handle -> name
 *   result.c     everything below analysed once for the writers (result.h)
 *   stats.c      per-function statistics (the API summary table)
 *   analysis.c   categories, transfers, pipeline stages, host gaps, nesting, errors
 *   findings.c   bottleneck findings from the analysis, with the numbers behind them
 *   describe.c   one call in words: kernel name, grid, bytes, direction, returned pointer...
 *   gpu_analysis.c  the GPU side: kernels, copies, busy time, idle gaps, latency, flows
 *   stack_analysis.c  call stacks: symbolized (symbolize.c), Python and native merged, call sites
 *   ioctls.c     the ioctls section (nvioctl.c: decoding one ioctl, the tables of names)
 *   text.c       the terminal report (text_gpu.c: its GPU sections; text_stacks.c: call sites)
 *   export_*.c   json, csv, jsonl, chrome, perfetto, folded, sqlite (export_stacks.c: the stacks' JSON)
 *   util.c       units, escaping, output helpers, the text report's section titles (put.c: text
 *                in a fixed buffer, for the reader too)
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
	RP_FMT_SQLITE,             /* a database file: -o FILE is required (cmd_report.c) */
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

/* --stream / --no-stream (rp_opts.stream). */
enum rp_stream_mode { RP_STREAM_AUTO, RP_STREAM_ON, RP_STREAM_OFF };

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
	enum rp_stream_mode stream;/* --stream / --no-stream: the text report in bounded memory */
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
	uint8_t graph_launch;      /* cuGraphLaunch (_ptsz): its argument 0 is the executable graph */
	uint8_t oneoff;            /* enum rp_oneoff: loading or initialization, done once */
	uint8_t names_kernel;      /* enum rp_namer: gives a kernel handle its name */
	uint8_t ioctl;             /* libc's ioctl on NVIDIA device files (a CUHOOK_LIB_IOCTL
	                              library): the driver boundary, not an API function */
	uint8_t ret_unknown;       /* its return value is not known to be a CUresult (a function
	                              behind an export table, "export:UUID[i]"): never an error */
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
	long rank, world;          /* its place in a multi-process job, from the agent's "job:" NOTE
	                              (the launcher's RANK/WORLD_SIZE...); -1: not known */
	struct rp_finfo *fi;       /* per function id: what the name says (categories.h) */
	uint8_t *func_ok;          /* per function id: --functions selects it; NULL without the option */
	uint8_t *thread_dup;       /* per thread: another thread has the same name */
	/* kernel handle (CUfunction / CUkernel) -> name, from cuModuleGetFunction & co */
	struct rp_name_slot *names;
	uint32_t names_cap, nnames;
	struct rp_name_copy *name_copies; /* a streamed view's: the names it keeps (rp_view_name_call) */
	/* analysed once for every writer by rp_result_build (result.h), freed by rp_result_free */
	struct rp_gpu *gpu;        /* the GPU side; NULL: no GPU block in the trace */
	struct rp_stacks *stacks;  /* the call stacks; NULL: the trace has none */
	struct rp_memory *memory;  /* memory in use; NULL: no allocation or free */
	struct rp_streams *streams;/* the streams the calls name; NULL: none */
	struct rp_devices *devices;/* the device of each call; NULL: no call */
	const struct rp_stream_counts *streamed; /* the streaming report's (text_stream.c): the calls
	                              were counted as they were read, none is in t->calls; NULL */
};

/* The calls a streaming report counted (it keeps none): all, ioctls among them, selected (xsel)
 * and selected API calls (sel). */
struct rp_stream_counts {
	uint64_t calls, ioctls, xsel, sel;
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
/* A call that returned an error: a timed call of a function returning a CUresult, not 0. */
static inline int rp_call_failed(const struct rp_view *v, const struct tr_call *c)
{
	return tr_call_timed(c) && (uint32_t)c->ret && !v->fi[c->func].ret_unknown;
}
/* Several views make one merged report (not --separate). */
static inline int rp_merged(const struct rp_view *views, unsigned n)
{
	return n > 1 && !views[0].o->separate;
}
/* Sums of durations saturate instead of overflowing (only a hostile file gets there). */
static inline int64_t rp_sat_add(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}
/* Differences of times, likewise. */
static inline int64_t rp_sat_sub(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}
/* An absolute time (ns) on the common axis: ns - base, saturating (hostile files). */
static inline int64_t rp_rel(const struct rp_view *v, int64_t ns)
{
	int64_t r;
	if (__builtin_sub_overflow(ns, v->base, &r))
		return ns > 0 ? INT64_MAX : INT64_MIN;
	return r;
}
/* CLOCK_REALTIME of an absolute time of v's trace (ns since the epoch, saturating): 1 with *rt
 * set, 0 when the trace has no plausible realtime pair (tr_trace.has_realtime). The exports' way
 * to absolute time: overlaying them on nsys, Kineto or perf traces of the same run. */
static inline int rp_realtime(const struct rp_view *v, int64_t ns, int64_t *rt)
{
	if (!v->t->has_realtime)
		return 0;
	*rt = rp_sat_add(ns, v->t->realtime_offset_ns);
	return 1;
}
void rp_view_free(struct rp_view *v);
/* Whether the options select a COUNTS entry by its thread and, with --time-range, the time the
 * writer read it (the function is for the caller to check: rp_view.counted). */
int rp_count_in_view(const struct rp_view *v, const struct tr_count *c);
/* Whether the options (--thread) select a thread. */
int rp_thread_selected(const struct rp_view *v, uint32_t thread);
/* Kernel name of a CUfunction or CUkernel handle: 1 with name and len set, 0 if unknown. */
int rp_kernel_name(const struct rp_view *v, uint64_t handle, const char **name, uint16_t *len);
/* A view of a trace read by the streaming reader (trace_stream.h) gets its kernel names as the
 * calls come: the name call c gives (copied), if any; 0, or -1 when out of memory. Calls come in
 * the order they finish, so a launch is named by the lookups finished before it, where a whole
 * read uses the last name given to the handle in the trace (the same unless a handle is named
 * after its launches, or named twice). rp_view_take_names moves src's names to dst. */
int rp_view_name_call(struct rp_view *v, const struct tr_call *c);
void rp_view_take_names(struct rp_view *dst, struct rp_view *src);
/* The kernel a launch call launched, as the trace names its handle (cuModuleGetFunction & co):
 * 1 with name and len set, 0 for a call that is not a launch or whose kernel is not named. */
int rp_call_kernel(const struct rp_view *v, const struct tr_call *c, const char **name, uint16_t *len);
/* The call-by-call exports' slices of one thread (chrome, perfetto): its selected calls (selected[]
 * per call index), in start order, as properly nested begin and end events: before a call
 * begins, the open calls that ended by then end, innermost first; a call that would outlive its
 * caller (corrupt times) ends its caller at its start; a call without an EXIT is an instant.
 * fn gets each event with its absolute time. 0, or -1 when out of memory. */
enum rp_slice_event { RP_SLICE_BEGIN, RP_SLICE_END, RP_SLICE_INSTANT };
/* The selection of a call of a streamed trace (no sel[]: the calls come one at a time), as
 * build_selection makes it: rp_call_in_selection checks --funcs and --time-range, and
 * rp_stream_selects the thread too, each thread's answer kept in cache (zeroed at first;
 * free(cache->thread_sel) after). 1 selected, 0 not, -1 out of memory. */
struct rp_sel_cache {
	uint8_t *thread_sel;       /* per thread index: 0 not looked at yet, 1 selected, 2 not */
	uint32_t cap;
};
int rp_call_in_selection(const struct rp_view *v, const struct tr_call *c);
/* A streamed trace's calls per thread index (its threads' ncalls stay 0): one more for thread;
 * 0, or -1 when out of memory. free(calls) after. */
struct rp_thread_calls {
	uint64_t *calls;
	uint32_t n;
};
int rp_thread_calls_add(struct rp_thread_calls *tc, const struct tr_trace *t, uint32_t thread);
int rp_stream_selects(const struct rp_view *v, struct rp_sel_cache *cache, const struct tr_call *c);
int rp_thread_slices(const struct rp_view *v, uint32_t thread, const uint8_t *selected,
                     void (*fn)(void *ctx, uint32_t call, enum rp_slice_event what, int64_t ns), void *ctx);
/* The counted calls the options select as counters: per function (in id order), the process's
 * running total at each time the agent's writer read the counters (the COUNTS entries of one time
 * and function add up to one point), after a first point of 0 at the trace's start on the common
 * axis (or the --time-range start). fn gets the function, the time (common axis) and the total.
 * 0, or -1 when out of memory. */
int rp_counted_series(const struct rp_view *v, void (*fn)(void *ctx, uint32_t func, int64_t rel, uint64_t total),
                      void *ctx);
/* The category name of a function for the exports: rp_cat_names[], or "ioctl". */
const char *rp_call_category(const struct rp_view *v, uint32_t func);
/* "pid 1234", or "rank 1 (pid 1234)" when the trace says its rank in a job. */
const char *rp_proc_label(const struct rp_view *v, char *buf, size_t len);
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
/* Sort s[0..n) by opts->sort as rp_func_stats() does (the streaming report's order too). */
void rp_sort_fstats(const struct rp_view *v, struct rp_fstat *s, uint32_t n);
/* The middle value(s) of d[0..n), n > 0, in O(n) (reorders d): *lo == *hi for an odd n, the
 * two middle values for an even n. */
void rp_middle(int64_t *d, size_t n, int64_t *lo, int64_t *hi);
/* The k-th smallest of d[0..n), k < n, in O(n) (reorders d). */
int64_t rp_kth(int64_t *d, size_t n, size_t k);
/* A distribution of durations: the statistics of the API summary's columns. */
struct rp_dist {
	int64_t total, min, max;   /* total saturates */
	double avg, med, stddev;   /* med of an even count: the mean of the two middle values;
	                              stddev: the sample standard deviation (n - 1), 0 for n < 2 */
};
/* The statistics of d[0..n) (reorders d); all 0 for n == 0. */
void rp_dist_of(struct rp_dist *s, int64_t *d, size_t n);
/* The API summary over several traces: functions matched by name. */
struct rp_mstat {
	const char *name;
	uint8_t cat;               /* enum rp_cat */
	uint32_t nproc;            /* traces with a selected call of it */
	struct rp_fstat s;         /* s.func: id in the first trace that has it (not meaningful) */
};
int rp_merged_stats(const struct rp_view *views, unsigned n, struct rp_mstat **out, uint32_t *nout);
/* The statistics of each merged function in each process, side by side: (*out)[i * n + k] is
 * ms[i]'s in views[k] (all zero when that process has no selected call of it). The caller frees
 * *out. 0, or -1 when out of memory. */
int rp_by_process(const struct rp_view *views, unsigned n, const struct rp_mstat *ms, uint32_t nms,
                  struct rp_fstat **out);

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
	int64_t load_in_gaps;      /* and in one-off loading and initialization (rp_oneoff_of): the
	                              host was starting up, not preparing the next step */
	uint32_t ntop;
	int64_t top[RP_MAX_TOP_GAPS];
	uint32_t top_before[RP_MAX_TOP_GAPS], top_after[RP_MAX_TOP_GAPS];  /* call indices */
	int64_t top_sync[RP_MAX_TOP_GAPS]; /* of each, the time its next call's thread spent in
	                                      outermost sync calls */
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
/* What rp_analyze() adds up for one selected call: categories, transfers, allocations, nesting
 * (c->parent read in v->t->calls), failures. The streaming report calls it as calls finish. */
void rp_tally_call(const struct rp_view *v, struct rp_analysis *a, const struct tr_call *c);

/* The k slowest selected calls with a duration, slowest first (ties: earlier first). Returns
 * their count and *out (indices in calls[], caller frees); 0 and NULL when none or no memory. */
uint32_t rp_slowest(const struct rp_view *v, uint32_t k, uint32_t **out);

/* ---- sync_across.c: several processes waiting for each other (the ranks of a job at a
 * collective). An episode: one blocking wait (a cu*Synchronize call, outermost) per process, all
 * of them overlapping, ending within RP_SYNC_WINDOW_NS of each other. ---- */
#define RP_SYNC_WINDOW_NS 500000
struct rp_sync_episode {
	int64_t start;             /* the first arrival (the earliest wait's start), common axis */
	int64_t last_arrival;      /* the slowest process's wait's start */
	int64_t end;               /* the earliest wait's end */
	uint32_t slowest;          /* index of the view that arrived last (ties: the first) */
};
struct rp_sync_proc {
	uint64_t waits;            /* its blocking waits (selected, outermost, timed) */
	uint64_t together;         /* of them, in an episode */
	uint64_t last;             /* episodes it arrived last in */
	int64_t waited;            /* over its episodes: the last arrival - its own arrival */
	int64_t caused;            /* over the episodes it arrived last in: every process's waited */
};
struct rp_syncs {
	int64_t window;
	unsigned nproc;
	struct rp_sync_proc *proc; /* per view */
	struct rp_sync_episode *ep;/* by end */
	size_t nep, cap;
};
/* The episodes of views[0..n) on their common axis. 0, or -1 when out of memory. */
int rp_sync_across(const struct rp_view *views, unsigned n, struct rp_syncs *s);
void rp_syncs_free(struct rp_syncs *s);

/* ---- streams.c: the streams the calls name, what each was given and how the host waited ---- */
#define RP_MAX_STREAMS 256
#define RP_STREAM_THREADS 8
struct rp_stream {
	uint64_t stream;           /* the program's handle: 0x0 legacy default, 0x2 per-thread default */
	uint64_t calls;            /* selected calls naming it */
	int64_t api;               /* their driver time */
	uint64_t launches, copies, memsets, graph_launches;
	uint64_t bytes;            /* copied or set */
	uint64_t syncs;            /* cuStreamSynchronize calls, and their time */
	int64_t sync_time;
	uint64_t queries, records, waits; /* cuStreamQuery, cuEventRecord on it, cuStreamWaitEvent */
	uint32_t nthreads;         /* threads that named it; the first RP_STREAM_THREADS in thread[] */
	uint32_t thread[RP_STREAM_THREADS];
};
struct rp_streams {
	struct rp_stream *s;       /* by driver time, most first */
	uint32_t n;
	uint64_t unnamed;          /* submissions naming no stream (synchronous copies, launches
	                              without their configuration) */
	uint64_t more;             /* calls on streams past RP_MAX_STREAMS */
};
/* The streams of a view's selected calls (rp_result_build: v->streams): NULL in *out (and 0) when
 * no call names one; -1 when out of memory. */
int rp_streams_analyze(const struct rp_view *v, struct rp_streams **out);
void rp_streams_free(struct rp_streams *s);
/* Where a function's calls name a stream (role 0: they name none), found once per function, and
 * the stream one call names: 1 with *s set, 0 when it names none the trace holds (devices.c
 * reads them too). */
struct rp_stream_ref {
	uint8_t role;              /* streams.c's own classes, 0: none */
	int8_t arg;                /* where the stream is (-1: in a DATA record or nowhere) */
};
struct rp_stream_ref rp_stream_ref_of(const struct rp_view *v, uint32_t func);
int rp_call_stream(const struct rp_view *v, const struct tr_call *c, struct rp_stream_ref r, uint64_t *s);

/* ---- devices.c: the device each call worked on, from the host side alone (the context current
 * on its thread, the device or context it names, its stream's context), and per device what the
 * calls did ---- */
#define RP_MAX_DEVICES 64          /* device numbers 0..63; a larger one counts as unknown */
#define RP_DEV_UNKNOWN (-1)        /* the trace does not say (a context set before it began) */
#define RP_DEV_NONE (-2)           /* the call concerns no device (cuInit, version and count
                                      queries, entry-point lookups) or no context was current */
/* Rows: device d at index d, then unknown, then none (rp_dev_slot). */
#define RP_DEV_SLOTS (RP_MAX_DEVICES + 2)
static inline unsigned rp_dev_slot(int dev)
{
	return dev >= 0 ? (unsigned)dev : dev == RP_DEV_UNKNOWN ? RP_MAX_DEVICES : RP_MAX_DEVICES + 1;
}
struct rp_device {
	uint64_t calls;            /* selected calls */
	uint64_t outer_calls;
	int64_t host;              /* their driver time, outermost calls only (as api_ns) */
	uint64_t launches;         /* outermost launch calls (as the analysis counts them) */
	uint64_t copies[RP_DIR_COUNT], bytes[RP_DIR_COUNT]; /* outermost copies and memsets by
	                              direction (enum rp_dir), with their known bytes */
	uint64_t alloc_calls, alloc_bytes; /* outermost allocation calls (any kind) */
	uint32_t nthreads;         /* threads whose calls it got */
};
struct rp_devices {
	int16_t *of_call;          /* per call in t->calls (all, selected or not): its device,
	                              RP_DEV_UNKNOWN or RP_DEV_NONE */
	struct rp_device d[RP_DEV_SLOTS]; /* by rp_dev_slot */
	uint32_t known;            /* device rows with a selected call */
};
/* The devices of a view's calls (rp_result_build: v->devices, before memory). NULL in *out (and
 * 0) when the trace has no call; -1 when out of memory. */
int rp_devices_analyze(const struct rp_view *v, struct rp_devices **out);
void rp_devices_free(struct rp_devices *d);
/* The device of call ci as the exports write it: 1 with *dev set (>= 0), 0 when unknown or none
 * (or the view has no device analysis: the streaming report's). */
static inline int rp_call_device(const struct rp_view *v, uint32_t ci, int *dev)
{
	if (!v->devices || v->devices->of_call[ci] < 0)
		return 0;
	*dev = v->devices->of_call[ci];
	return 1;
}

/* ---- memory.c: memory in use over the trace, from its allocations and frees ---- */
enum rp_mem_kind { RP_MEM_DEVICE, RP_MEM_PHYSICAL, RP_MEM_MANAGED, RP_MEM_HOST, RP_MEM_KIND_COUNT };
extern const char *const rp_mem_kind_names[RP_MEM_KIND_COUNT];
struct rp_mem_kind_stat {
	uint64_t allocs, alloc_bytes;  /* successful allocations, their bytes */
	uint64_t failed;               /* allocations that returned an error */
	uint64_t no_pointer;           /* successful ones whose returned pointer the trace lacks */
	uint64_t frees, freed_bytes;   /* frees of allocations the trace saw */
	uint64_t unknown_frees;        /* frees of what was allocated before the trace (no size) */
	uint64_t peak;                 /* the most in use at once, and when (ns from the view's start) */
	int64_t peak_at;
	uint64_t end_allocs, end_bytes;/* still allocated at the end */
	uint64_t largest;              /* the largest allocation */
};
struct rp_mem_step {
	int64_t at;                /* ns from the view's start */
	uint64_t bytes;            /* device + physical in use from then on */
};
struct rp_memory {
	struct rp_mem_kind_stat k[RP_MEM_KIND_COUNT];
	uint64_t peak;                 /* device + physical in use at once, at most, and when */
	int64_t peak_at;
	uint64_t dev_peak[RP_DEV_SLOTS]; /* device memory (cuMemAlloc & co) in use at once per device
	                                  (rp_dev_slot of the allocating call's device; physical
	                                  memory: unknown, its device is in a struct the agent does
	                                  not read) */
	int64_t span;                  /* the view's span (ns) */
	struct rp_mem_step *steps;     /* device + physical in use: a step at each change */
	uint32_t nsteps;
};
/* The memory of a view's selected calls (rp_result_build: v->memory): NULL in *out (and 0) when
 * they allocate and free nothing; -1 when out of memory. */
int rp_memory_analyze(const struct rp_view *v, struct rp_memory **out);
void rp_memory_free(struct rp_memory *m);
/* The device curve in n equal slices of the span: the most in use in each. */
void rp_memory_slices(const struct rp_memory *m, uint64_t *out, unsigned n);

/* ---- collectives.c: the ranks of a job at their NCCL collectives, the k-th NCCL kernel of each
 * process being one collective; who arrived last and what the others waited for it. ---- */
struct rp_coll {
	int64_t first, last;       /* the earliest and the latest arrival, common axis */
	uint32_t slowest;          /* index of the view that arrived last (ties: the first) */
	const char *name;          /* the kernel's name as recorded (mangled), not NUL-terminated */
	uint16_t len;
};
struct rp_coll_proc {
	uint64_t kernels;          /* its NCCL kernel launches (selected calls) */
	uint64_t last;             /* collectives it arrived last at */
	int64_t waited;            /* over the matched collectives: the last arrival - its own */
	int64_t caused;            /* over those it arrived last at: every process's waited */
};
struct rp_colls {
	unsigned nproc;
	int gpu;                   /* arrivals are the kernels' GPU starts (else the launch calls') */
	size_t mismatch;           /* where the processes' sequences first name different kernels,
	                              SIZE_MAX: they agree as far as the shortest goes */
	struct rp_coll *c;         /* the matched collectives, in order: n = the shortest sequence,
	                              or mismatch */
	size_t n;
	struct rp_coll_proc *proc; /* per view */
};
/* 1 when a kernel name (mangled or not) is one of NCCL's: ncclDevKernel_..., ncclKernel_... */
int rp_is_nccl_kernel(const char *name, size_t len);
/* The collectives of views[0..n) on their common axis. 0, or -1 when out of memory. */
int rp_collectives(const struct rp_view *views, unsigned n, struct rp_colls *s);
void rp_colls_free(struct rp_colls *s);

/* ---- gpu_analysis.c: the GPU side of a view, analysed once (rp_result_build) for every writer ---- */

/* What the program's threads were doing while a GPU ran nothing, by priority: a loading or
 * initialising call (module, library and function loading, cuInit, device queries, context
 * creation, and a function's first call when it lasted >= 10 times the function's median and
 * >= 100 us: first-call initialisation) on any thread, else a sync call, else any other driver
 * call, else none. */
enum rp_host_state { RP_HOST_LOADING, RP_HOST_SYNC, RP_HOST_DRIVER, RP_HOST_OUTSIDE, RP_HOST_COUNT };
extern const char *const rp_host_state_names[RP_HOST_COUNT];

/* Copies by kind (enum cuhook_gpu_copy_kind, 0..10), then memsets. */
#define RP_GPU_OP_MEMSET 11
#define RP_GPU_OP_COUNT 12
/* "memcpy HtoD", ..., "memset" */
const char *rp_gpu_op_name(unsigned op);
/* "kernel", "memcpy", "memset" */
extern const char *const rp_gpu_kind_names[TR_GPU_KIND_COUNT];
/* Why a record is not linked, in words ("linked", "no API record", ...), and as a token for the
 * exports ("linked", "no_api_record", "api_record_in_no_call", "call_dropped"). */
extern const char *const rp_gpu_link_names[TR_GPU_LINK_COUNT];
extern const char *const rp_gpu_link_keys[TR_GPU_LINK_COUNT];

struct rp_gpu_kernel_row {     /* the kernels of one name (cuda_gpu_kern_sum) */
	uint32_t name_id;          /* 0: unnamed */
	const char *name;          /* demangled when it demangles, else as recorded */
	uint64_t calls;
	struct rp_dist d;          /* GPU time */
};

struct rp_gpu_memop_row {      /* copies of one kind, or memsets (cuda_gpu_mem_time_sum and
	                              cuda_gpu_mem_size_sum) */
	uint8_t op;                /* copy kind, or RP_GPU_OP_MEMSET */
	uint64_t count, bytes;     /* bytes: saturating sum */
	struct rp_dist d;          /* GPU time */
	struct rp_dist size;       /* bytes per operation (ints beyond 2^63 clamp) */
};

struct rp_gpu_stream {
	uint32_t device, stream;
	uint64_t works;
	int64_t busy;              /* the union of its work's intervals */
	uint32_t nlanes;           /* tracks the exports need for it: work that overlaps on one
	                              stream (graph nodes) goes on further lanes */
};

struct rp_gpu_device {
	uint32_t device;
	uint64_t works;
	int64_t busy;              /* the union of its work's intervals (all streams) */
	int64_t active;            /* per session, its first work's start to its last work's end */
	uint64_t ngaps;            /* times it ran nothing between two pieces of work of a session */
	int64_t gap_total, gap_median, gap_max;
	int64_t gap_host[RP_HOST_COUNT]; /* the gaps' time by what the host was doing */
};

#define RP_GPU_TOP_GAPS 5
struct rp_gpu_gap {
	uint32_t device;
	int64_t start, end;        /* absolute ns */
	uint32_t before, after;    /* the work that ended it (indices in t->gpu_work) */
	int64_t host[RP_HOST_COUNT];
	uint32_t call[RP_HOST_COUNT]; /* the longest call in progress in the gap in each state
	                                 (RP_HOST_OUTSIDE: none), TR_NONE */
};

#define RP_LAT_BUCKETS 6       /* < 10 us, < 100 us, < 1 ms, < 10 ms, < 100 ms, more */
extern const int64_t rp_lat_bounds[RP_LAT_BUCKETS - 1];
struct rp_gpu_latency {        /* submission (the API record's start) to the GPU's start */
	uint64_t n;                /* selected work with an API record */
	uint64_t negative;         /* of them, started on the GPU before the API record began
	                              (counted as 0: clocks that disagree) */
	struct rp_dist d;
	int64_t p90, p99;          /* percentiles: nearest rank */
	uint64_t hist[RP_LAT_BUCKETS];
};

struct rp_gpu {
	uint32_t *sel;             /* selected work (indices in t->gpu_work), by GPU start */
	uint32_t nsel;
	uint64_t nkind[TR_GPU_KIND_COUNT];
	uint64_t link[TR_GPU_LINK_COUNT];  /* the selected work by link status */
	uint32_t *lane;            /* per work record: its lane on its stream (exports) */
	int64_t window;            /* the sessions' recorded time, within --time-range */
	int64_t kernel_time, memop_time;   /* sums of GPU time */
	struct rp_gpu_kernel_row *kernels; /* by GPU time, largest first */
	uint32_t nkernels;
	struct rp_gpu_memop_row *memops;   /* by GPU time, largest first */
	uint32_t nmemops;
	struct rp_gpu_device *devices;     /* by device id */
	uint32_t ndevices;
	struct rp_gpu_stream *streams;     /* by device, stream */
	uint32_t nstreams;
	uint64_t ngaps;            /* every device's */
	int64_t gap_total, gap_median, gap_max;
	int64_t gap_host[RP_HOST_COUNT];
	uint32_t host_calls[RP_HOST_COUNT]; /* the longest call in progress in any gap, per state */
	struct rp_gpu_gap top[RP_GPU_TOP_GAPS]; /* the longest gaps, longest first */
	uint32_t ntop;
	struct rp_gpu_gap host_bound; /* the gap with the most time neither loading nor in sync
	                                 (host[RP_HOST_DRIVER] + host[RP_HOST_OUTSIDE]); end == start
	                                 when there is none */
	struct {                   /* copies to or from pageable host memory, by operation */
		uint64_t count, bytes;
		int64_t time;          /* on the GPU */
		int64_t call_time;     /* in the calls that made them (the linked ones', each call once) */
	} pageable[RP_GPU_OP_COUNT];
	struct rp_gpu_latency latency;
	uint32_t *flows;           /* selected linked work whose call the options select, by (call,
	                              start): a flow per entry from the call to the work */
	uint32_t nflows;
	char **names;              /* per NAME id: the name demangled (malloc'ed), NULL: as recorded */
	uint32_t nnames;
};

/* Analyse the GPU records of a view: NULL in *out (and 0) when the trace has no GPU block at
 * all; -1 when out of memory. */
int rp_gpu_analyze(struct rp_view *v, struct rp_gpu **out);
void rp_gpu_free(struct rp_gpu *g);
/* A work record's name for display: a kernel's demangled name (or as recorded, or
 * "(unnamed kernel)"), "memcpy HtoD", "memset". */
const char *rp_gpu_work_label(const struct rp_view *v, const struct tr_gpu_work *w);
/* A work record in words: "grid (64,8,1) block (256,1,1) smem 16384+0 regs 64 device 0 stream 7
 * from cuLaunchKernel", "1.00 MiB 20.97 GB/s device 0 stream 7 from cuMemcpyHtoD_v2"... */
size_t rp_gpu_describe(const struct rp_view *v, const struct tr_gpu_work *w, char *buf, size_t len);
/* The exports' GPU slices: every selected work record, by track (device, stream, lane), in start
 * order on each; times on the common axis (rp_rel), a start moved to its lane's previous end where
 * only a corrupt trace overlaps them. */
struct rp_gpu_slice {
	uint32_t work;             /* index in t->gpu_work */
	uint32_t stream_index;     /* in rp_gpu.streams */
	uint32_t lane;
	uint8_t new_track;         /* the first slice of its track */
	uint8_t flow;              /* it ends a flow (rp_gpu.flows): its call is selected */
	int64_t start, end;
};
/* nsel slices (caller frees), NULL when out of memory. */
struct rp_gpu_slice *rp_gpu_slices(const struct rp_view *v);
/* The flows of call ci: *n work records (indices in t->gpu_work) from rp_gpu.flows. */
const uint32_t *rp_gpu_call_flows(const struct rp_view *v, uint32_t ci, uint32_t *n);
/* A trace-wide unique flow id of work record wi of the k-th view (exports). */
static inline uint64_t rp_gpu_flow_id(unsigned k, uint32_t wi)
{
	return ((uint64_t)(k + 1) << 32) | wi;
}

/* ---- stack_analysis.c: the call stacks of a view, symbolized and merged once (rp_result_build) ---- */

enum rp_frame_kind {
	RP_FRAME_NATIVE,           /* an address in a file mapping: symbolized, or "[path+0xoff]" */
	RP_FRAME_PYTHON,           /* a Python frame: "func (file:line)" */
	RP_FRAME_ANON,             /* an address in an anonymous mapping (JIT code): "[anon:0xaddr]" */
	RP_FRAME_UNMAPPED,         /* an address no MAPS entry holds (or no MAPS block): "[0xaddr]" */
	RP_FRAME_KIND_COUNT
};
extern const char *const rp_frame_kind_names[RP_FRAME_KIND_COUNT];

struct rp_frame {
	const char *label;         /* how every output names it: "func", "func (file:line)",
	                              "[path+0xoff]", "[anon:0xaddr]", "[0xaddr]" */
	const char *func;          /* native: the symbol (demangled); Python: the function; NULL */
	const char *file;          /* source file (DWARF, or the code object's), NULL */
	int line;                  /* 0: unknown */
	const char *object;        /* native: the mapping's path; NULL */
	uint64_t pc;               /* native: the address */
	uint64_t offset;           /* native: its offset in the file (pc - start + map offset) */
	uint32_t map;              /* native, anon: index in t->maps of the mapping; TR_NONE */
	uint8_t kind;              /* enum rp_frame_kind */
	uint8_t cuda;              /* in a CUDA library, cuhook or the traced library: not a call site */
};

/* One stack of the trace (t->stacks[i]), Python and native frames merged, outermost first. */
struct rp_stack_frames {
	uint32_t first, n;         /* rp_stacks.frames[first .. first + n) */
	uint32_t site;             /* index in rp_stacks.frames of its call site: the innermost Python
	                              frame, else the innermost native frame not rp_frame.cuda; TR_NONE */
	uint8_t approximate;       /* Python frames did not pair with the evaluation loop's native
	                              frames: placed in place of the innermost one */
};

/* A function's calls from one call site (the selected calls that have a stack). */
struct rp_call_site {
	uint32_t func;
	const char *label;         /* the site's frame label */
	uint64_t calls;
	int64_t total;             /* time of the timed ones (saturating) */
};

struct rp_stack_func {         /* a function with selected calls that have a stack */
	uint32_t func;
	uint64_t calls;            /* its selected calls with a stack */
	uint32_t first, n;         /* rp_stacks.sites[first .. first + n): by calls, then time */
};

struct rp_stacks {
	struct rp_frame *frames;
	uint32_t nframes;
	struct rp_stack_frames *stacks;  /* per t->stacks index */
	struct rp_call_site *sites;
	uint32_t nsites;
	struct rp_stack_func *funcs;     /* by calls with a stack, then name */
	uint32_t nfuncs;
	uint64_t approximate;      /* stacks merged by approximation */
	char **notes;              /* files that could not be used, approximate merges: one line each */
	uint32_t nnotes;
	struct rp_arena *arena_;
};

/* Symbolize and merge every stack of v's trace, and count the selected calls' call sites: NULL
 * in *out (and 0) when the trace has no stack; -1 when out of memory. */
int rp_stacks_analyze(struct rp_view *v, struct rp_stacks **out);
void rp_stacks_free(struct rp_stacks *s);
/* text_stacks.c: the text report's "Call sites" section; nothing without stacks. */
void rp_stacks_write_text(FILE *f, const struct rp_view *v);
/* export_stacks.c: the "stacks", "call_sites" and "stack_notes" members of one trace's JSON
 * object (v->stacks must be set); a frame name for the folded export. */
void rp_stacks_write_json(FILE *f, const struct rp_view *v);
size_t rp_folded_frame(char *buf, size_t len, size_t pos, const char *name);
/* --format folded's stacks (export_trace.c), shared with the streaming report (text_stream.c):
 * the distinct stacks with their self times, summed by rp_folded_add (0, -1 out of memory);
 * rp_folded_key writes a call's key: "pid PID;" with_pid, its thread, the frames of its native
 * stack sf (or NULL), then funcs[nf - 1] (outermost) .. funcs[0] (the call); rp_folded_finish
 * writes them sorted (unless rc) and frees them, returning -1 on rc or a write error. */
#define RP_FOLDED_MAX_FRAMES 64
#define RP_FOLDED_KEY_MAX 16384 /* deep stacks with long C++ names */
struct rp_folded_slot;
struct rp_folded {
	struct rp_folded_slot *slot;
	uint32_t cap, n;
};
int rp_folded_add(struct rp_folded *st, const char *key, int64_t value);
size_t rp_folded_key(char *key, size_t len, const struct rp_view *v, int with_pid, uint32_t thread,
                     const struct rp_stack_frames *sf, const uint32_t *funcs, uint32_t nf);
int rp_folded_finish(FILE *f, struct rp_folded *st, int rc);
/* The merged frames of call ci's stack, outermost first: NULL when it has none. */
static inline const struct rp_stack_frames *rp_call_frames(const struct rp_view *v, uint32_t ci)
{
	if (!v->stacks || !v->t->call_stack_ || v->t->call_stack_[ci] == TR_NONE)
		return NULL;
	return &v->stacks->stacks[v->t->call_stack_[ci]];
}

/* ---- kernels.c ---- */
/* Launches per kernel: direct launches (cuLaunchKernel & co, successful ones) and the kernel
 * nodes of successful cuGraphLaunch calls (by the GRAPHS entry of their executable graph), by
 * name (demangled) or, unnamed, by handle; sorted by launches. */
struct rp_kstat {
	char *name;                /* demangled, as recorded, or "function 0x..." (malloc'ed) */
	int named;
	uint64_t direct, graph;    /* launches by launch calls, as graph nodes */
	int64_t call_ns;           /* the direct launch calls' total time */
	uint32_t shapes;           /* distinct grid x block shapes seen (0: none known) */
	uint32_t grid[3], block[3];/* the shape launched most */
};
struct rp_kernels {
	struct rp_kstat *k;
	uint32_t n;
	uint64_t launches, named, direct, graph_nodes;
	uint64_t graph_calls;      /* successful cuGraphLaunch calls */
	uint64_t graph_unknown;    /* ... whose executable graph has no GRAPHS entry, nor GPU
	                              kernel records linked to them */
	uint64_t graph_from_gpu;   /* ... without a GRAPHS entry, whose kernels are counted from the
	                              GPU's records (--gpu, the names window): linked to them, or
	                              (graph_from_sibling of them) to another launch of the same
	                              executable graph */
	uint64_t graph_from_sibling;
	int64_t graph_call_ns;
};
int rp_kernel_stats(const struct rp_view *v, struct rp_kernels *out);
void rp_kernels_free(struct rp_kernels *k);
/* The text report's Kernels section and the JSON member "kernels" (with its ",\n"), from the
 * statistics analysed once (result.h). */
void rp_kernels_write_text(FILE *f, const struct rp_view *v, const struct rp_kernels *ks);
void rp_kernels_write_json(FILE *f, const struct rp_kernels *ks);

/* ---- demangle.cc ---- */
/* A C++ name demangled (libstdc++'s abi::__cxa_demangle), malloc'ed; NULL when it is not a
 * mangled name, does not demangle, or is too long to try. */
char *rp_demangle(const char *mangled);

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
/* text_gpu.c: the header's "gpu" line (records, linked, unlinked, sessions) and the GPU sections
 * of the text report; nothing without GPU blocks. */
void rp_gpu_header_line(FILE *f, const struct rp_view *v);
void rp_gpu_write_text(FILE *f, const struct rp_view *v);
/* The text report's sections the streaming report (text_stream.c) shares: header, API summary
 * (none_selected: the options left calls out), categories and transfers, slowest calls (in
 * order), nesting, functions not traced. */
void rp_text_header(FILE *f, const struct rp_view *v);
void rp_text_summary(FILE *f, const struct rp_view *v, const struct rp_fstat *fs, uint32_t n, int none_selected);
void rp_text_categories(FILE *f, const struct rp_view *v, const struct rp_analysis *a);
void rp_text_slowest(FILE *f, const struct rp_view *v, const struct tr_call *const *calls, uint32_t n);
void rp_text_nesting(FILE *f, const struct rp_view *v, const struct rp_analysis *a);
void rp_text_refused(FILE *f, const struct rp_view *v);

/* The streaming text report (text_stream.c): rp_stream_read() reads the file at `path` once
 * (trace_stream.h), keeping per-function aggregates, a quantile sketch per function, the --top
 * slowest calls and the per-call tallies, never the calls, so its memory does not grow with the
 * trace; NULL with a reason in err as tr_open(). rp_stream_write_text() writes the sections it
 * can give and names those it leaves out (0, or -1 when out of memory or the write failed).
 * rp_stream_free() before tr_close(). */
struct rp_stream_report;
struct tr_stream_skipped;
/* folded: for --format folded, each selected call's self time is added there (rp_folded_add,
 * "pid PID;" first with with_pid) instead of the text report's aggregates. */
struct tr_trace *rp_stream_read(const struct rp_opts *o, const char *path, struct rp_folded *folded, int with_pid,
                                struct rp_stream_report **r, char *err, size_t errlen);
const struct tr_stream_skipped *rp_stream_skipped(const struct rp_stream_report *r);
int rp_stream_write_text(FILE *f, struct rp_stream_report *r);
/* The json report of what rp_stream_read kept (export_json.c, rp_write_json_streamed). */
int rp_stream_write_json(FILE *f, struct rp_stream_report *r);
/* A streamed trace's json (one trace object, as rp_write_json's for one file): the header with
 * the streaming report's counts (n: calls, selected; per thread index its calls), the summary's
 * rows, the analysis rp_tally_call gives (categories, transfers, nesting), the slowest calls
 * (their DATA records t->data), the functions not traced, and "left_out": the sections that need
 * every call at once. */
struct rp_json_streamed {
	const struct rp_stream_counts *n;
	const uint64_t *thread_calls;
	uint32_t nthread_calls;
	const struct tr_call *const *slow;
	uint32_t nslow;
};
int rp_write_json_streamed(FILE *f, struct rp_view *v, const struct rp_fstat *fs, uint32_t nfs,
                           const struct rp_analysis *a, const struct rp_json_streamed *js);
void rp_stream_free(struct rp_stream_report *r);
/* Whether rp_main streams: --stream; by default (RP_STREAM_AUTO) a text report of one regular
 * file (or several with --separate), or folded stacks of any number of files, when one of them
 * has RP_STREAM_AUTO_BYTES or more. */
#define RP_STREAM_AUTO_BYTES (512ull << 20)
int rp_should_stream(const struct rp_opts *o, char **files, int nfiles);
/* The timeline section of the text report (text_timeline.c): the threads of every view, rows
 * grouped by process, on the common time axis. */
void rp_text_timeline(FILE *f, struct rp_view *views, unsigned n);
/* export_gpu_json.c: the "gpu" member of one trace's JSON object (v->gpu must be set). */
void rp_gpu_write_json(FILE *f, const struct rp_view *v);
int rp_write_csv(FILE *f, struct rp_view *views, unsigned n);
int rp_write_jsonl(FILE *f, struct rp_view *views, unsigned n);
int rp_write_chrome(FILE *f, struct rp_view *views, unsigned n);
int rp_write_perfetto(FILE *f, struct rp_view *views, unsigned n);
int rp_write_folded(FILE *f, struct rp_view *views, unsigned n);
/* export_sqlite.c: creates o->output (out_file.h; hint: what the message says when it exists)
 * and writes the database; messages on stderr. Returns 0, or -1 with nothing left behind. */
int rp_write_sqlite(const struct rp_opts *o, const char *hint, struct rp_view *views, unsigned n);

/* ---- util.c ---- */
/* A section title of the text report (bold with --color): every text section's first line. */
void rp_text_section(FILE *f, const struct rp_view *v, const char *title);
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
/* FNV-1a of a NUL-terminated string: the exports' hash tables of names. */
uint64_t rp_str_hash(const char *s);

/* Runs the report on the trace files: returns the process exit status. */
int rp_main(const struct rp_opts *o, char **files, int nfiles);

/* Exit statuses of cuhook report (docs/report.md). */
#define RP_EXIT_OK 0
#define RP_EXIT_ERROR 1        /* a file could not be read as a trace at all */
#define RP_EXIT_USAGE 2
#define RP_EXIT_TRUNCATED 3    /* reported, but some file was truncated or corrupt (--strict) */

#endif
