/* A decoded trace (tr_open, trace_reader.h): the flat arrays the reader fills, the accessors and
 * the queries on them. The reader's own decoders (trace_gpu.c, trace_stacks.c, gpu_link.c) build
 * on this alone, below the reader that drives them; the report, the exporters, the tests and the
 * fuzzers read it. */
#ifndef CUHOOK_TRACE_DATA_H
#define CUHOOK_TRACE_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

#define TR_NONE UINT32_MAX
/* Converted times are clamped to +-(2^62 - 1) ns, so any difference of two fits in an int64_t
 * (with +-2^62, 2^62 - -2^62 = 2^63 did not: found by tests/fuzz/fuzz_trace, docs/fuzzing.md). */
#define TR_NS_LIMIT ((INT64_C(1) << 62) - 1)
/* A call whose EXIT comes later than this after its ENTRY (3.3 days) has a corrupt time: it is
 * kept with a zero duration and TR_CALL_CLAMPED. Sums of durations can still exceed int64_t in a
 * hostile file (2^15 such calls), so the report adds them with rp_sat_add(). */
#define TR_MAX_DURATION_NS (INT64_C(1) << 48)

/* A library block. Strings are NUL-terminated copies. */
struct tr_lib {
	uint32_t id;
	uint32_t flags;       /* CUHOOK_LIB_* */
	uint64_t base;
	const char *path;
	const char *version;  /* "" when the agent did not know it */
};

#define TR_FUNC_ARGS_BAD 0xffu

struct tr_func {
	const char *name;     /* NUL-terminated copy; "" for an id no FUNCS block defined */
	uint64_t offset;
	uint32_t size;
	uint32_t lib_id;
	uint16_t status;      /* enum cuhook_patch_status (< CUHOOK_STATUS_COUNT, else corrupt) */
	uint16_t patch_len;
	uint16_t decoder;     /* index into cuhook_decoders found by NAME (0: none); the file's
	                         numeric decoder id is informative only */
	uint8_t defined;      /* 1 if a FUNCS block listed this id */
	uint8_t nregs, nstack;/* version 5: the arguments its ENTRY5 records carry (FUNCS entry);
	                         nregs TR_FUNC_ARGS_BAD when the entry's counts are impossible */
	uint64_t counted;     /* calls counted by COUNTS blocks (agent option count=GLOBS: counted,
	                         not recorded), summed over the file, saturating at UINT64_MAX */
};

struct tr_thread {
	uint32_t tid;
	char name[17];        /* comm from the THREAD block, "" if none came */
	uint32_t ncalls;
	uint64_t events;      /* ENTRY + EXIT records of this thread */
	uint64_t dropped;     /* sum of its DROP records' counts */
	uint64_t counted;     /* calls it made of counted functions (its COUNTS entries, saturating) */
	/* private: matching state and the lazily built call index */
	uint32_t *stack_;
	uint32_t stack_len_, stack_cap_;
	uint32_t last_entry_, last_exit_;   /* calls DATA records attach to */
	uint8_t last_rec_;                  /* type of the last ENTRY/EXIT record, for DATA */
	uint32_t epoch_;                    /* version 5: the epoch its last TIME record set */
	uint32_t pending_;                  /* streaming: 1 + the slot of its finished call whose
	                                       DATA records may still come, 0: none */
	uint32_t *calls_;
};

enum tr_call_flags {
	TR_CALL_NO_EXIT = 0x1,    /* entry-only by design (CUHOOK_RF_NO_EXIT): no end, no return */
	TR_CALL_UNFINISHED = 0x2, /* its EXIT never came: the trace ends (truncated, or the thread
	                             was still inside), or the exit was lost (dropped records) */
	TR_CALL_CLAMPED = 0x4,    /* its EXIT's time was before its ENTRY's, or implausibly late
	                             (corrupt): end = start */
};

/* One traced call. start_ns/end_ns are CLOCK_MONOTONIC nanoseconds; a call without an EXIT
 * (TR_CALL_NO_EXIT or TR_CALL_UNFINISHED) has end_ns == start_ns and ret == 0: use
 * tr_call_timed() before using its duration or return value. */
struct tr_call {
	int64_t start_ns;
	int64_t end_ns;
	uint64_t ret;
	const uint64_t *args_; /* its ENTRY's argument values, in the bytes read: use tr_call_arg() */
	uint32_t func;        /* id in funcs[] */
	uint32_t thread;      /* index in threads[] (not the tid) */
	uint32_t parent;      /* index in calls[] of the enclosing traced call, or TR_NONE */
	uint32_t data_first;  /* index in data[] of its first DATA record, TR_NONE if ndata == 0 */
	uint16_t depth;       /* from the ENTRY record */
	uint8_t flags;        /* TR_CALL_* */
	uint8_t ndata;        /* its DATA records: data[data_first .. data_first + ndata) */
	uint8_t nregs_;       /* argument registers its ENTRY carried (6 before version 4), then */
	uint8_t nstack_;      /* stack slots: args_[nregs_ ..]. Use tr_call_arg() */
};

/* A DATA record: values read by the agent for a known function (src/format/decoders.h). */
struct tr_data {
	uint32_t call;            /* index in calls[] */
	uint16_t decoder;         /* index into cuhook_decoders, from the CALL's function name */
	uint8_t at_exit;
	uint8_t nvalues;
	const uint64_t *values;   /* into the bytes read */
	const char *str;          /* into the bytes read, NOT NUL-terminated: str_len bytes */
	uint16_t str_len;
};

/* One entry of a COUNTS block: `calls` calls of `func` that thread `thread` made since its
 * previous COUNTS block, read by the agent's writer at `ns` (CLOCK_MONOTONIC, converted like event
 * times). Only entries naming a defined function are kept; calls may be 0 (tolerated). */
struct tr_count {
	int64_t ns;
	uint64_t calls;
	uint32_t func;            /* id in funcs[] */
	uint32_t thread;          /* index in threads[] (not the tid) */
};

struct tr_note {
	uint32_t level;           /* 0 info, 1 warning, 2 error */
	const char *text;         /* NUL-terminated copy */
};

/* A kernel handle's name the agent asked the driver for (KNAMES block), in file order. */
struct tr_kname {
	uint64_t handle;
	const char *name;         /* NUL-terminated copy */
	uint16_t len;
	uint8_t kind;             /* CUHOOK_KNAME_* */
};

/* An executable graph's kernel nodes (GRAPHS block), in file order. */
struct tr_graph {
	uint64_t exec, graph;
	uint32_t nnodes, nkernels, flags;
	struct cuhook_graph_kernel *kernels; /* malloc'd copy, nkernels of them */
};


/* ---- the GPU side (GPU_SESSION and GPU blocks, trace_gpu.c) -------------------------------- */

/* One GPU session: a GPU_SESSION block that opened it (STARTED, or why not: NO_CUPTI,
 * OTHER_USER, FAILED) and, for a started one, the STOPPED block that closed it. */
struct tr_gpu_session {
	uint32_t status;          /* enum cuhook_gpu_status of its first block (never STOPPED) */
	uint32_t cupti_version;   /* cuptiGetVersion(), 0 if unknown */
	uint32_t result;          /* FAILED: the CUptiResult */
	const char *path;         /* CUPTI's path (NO_CUPTI: what was tried), NUL-terminated, "" */
	int64_t start_ns;         /* when it started (or was refused) */
	int64_t stop_ns;          /* STOPPED block's time; start_ns when none came */
	int stopped;              /* a STOPPED block closed it */
	uint64_t records;         /* STOPPED: records the agent wrote in the session */
	uint64_t dropped;         /* STOPPED: records CUPTI dropped (its buffers were full) */
	uint64_t records_read;    /* GPU records of the session this reader kept */
};

/* Why a GPU record is linked to no call (docs/trace-format.md, "GPU records"). */
enum tr_gpu_link {
	TR_GPU_LINKED = 0,        /* work: its API record is in a recorded call; API: in a call */
	TR_GPU_NO_API = 1,        /* work: no API record with its correlation id in its session */
	TR_GPU_NO_CALL = 2,       /* the API record lies in no recorded call of its thread and
	                             function (the function is not traced or counted, the call began
	                             before tracing did, a thread the trace never saw) */
	TR_GPU_CALL_DROPPED = 3,  /* no recorded call holds it and its thread lost records (DROP
	                             records, or drops the END block counts that no DROP record
	                             says where), or the call that would hold it has no EXIT */
	TR_GPU_LINK_COUNT
};

/* A submitting call as CUPTI saw it (GPU_API record). */
struct tr_gpu_api {
	int64_t start_ns, end_ns;
	uint32_t session;         /* index in gpu_sessions[] */
	uint32_t correlation;
	uint32_t tid;
	uint32_t func;            /* function id (FUNCS), UINT32_MAX: none of that name */
	uint32_t cbid, ret;
	uint32_t call;            /* index in calls[] of the call it lies in (runtime: the call
	                             that lies in it), TR_NONE */
	uint8_t link;             /* enum tr_gpu_link (never TR_GPU_NO_API) */
	uint8_t runtime;          /* CUPTI's record of a CUDA runtime call (CUHOOK_GPU_API_RUNTIME):
	                             cbid is the runtime's, func UINT32_MAX */
};

enum tr_gpu_kind { TR_GPU_KERNEL, TR_GPU_MEMCPY, TR_GPU_MEMSET, TR_GPU_KIND_COUNT };

/* One piece of GPU work: a kernel, a copy or a memset, as the GPU ran it. */
struct tr_gpu_work {
	int64_t start_ns, end_ns; /* on the GPU, on the trace's clock; end >= start */
	uint8_t kind;             /* enum tr_gpu_kind */
	uint8_t copy_kind;        /* MEMCPY: enum cuhook_gpu_copy_kind */
	uint8_t src_kind, dst_kind; /* MEMCPY: CUpti_ActivityMemoryKind */
	uint16_t flags;           /* MEMCPY/MEMSET: CUPTI's flags */
	uint16_t mem_kind;        /* MEMSET: CUpti_ActivityMemoryKind */
	uint32_t session;         /* index in gpu_sessions[] */
	uint32_t correlation;
	uint32_t device, context, stream;
	uint32_t name_id;         /* KERNEL: gpu_names[name_id], 0 when unnamed (or the id is
	                             undefined: counted as an error) */
	int32_t grid[3], block[3];/* KERNEL */
	uint32_t shared_static, shared_dynamic; /* KERNEL: bytes per block */
	uint16_t registers;       /* KERNEL: per thread */
	uint32_t value;           /* MEMSET */
	uint64_t bytes;           /* MEMCPY/MEMSET */
	uint32_t graph_id;        /* 0 unless a graph launched it */
	uint64_t graph_node_id;
	/* the link (tr_gpu_link) */
	uint32_t api;             /* index in gpu_api[] of its API record, TR_NONE */
	uint32_t call;            /* index in calls[] of the call that submitted it, TR_NONE */
	uint8_t link;             /* enum tr_gpu_link */
};

struct tr_gpu_link_stats {
	uint64_t work[TR_GPU_LINK_COUNT];   /* work records by link status */
	uint64_t api[TR_GPU_LINK_COUNT];    /* API records by link status */
	uint64_t duplicate_api;             /* API records repeating a (session, correlation) pair
	                                       of their kind (driver, runtime): the first in the
	                                       file is the one work links to */
	uint64_t via_runtime;               /* work linked through a runtime API record */
};

/* ---- call stacks (STACKS, PYFRAMES and MAPS blocks, STACK records: trace_stacks.c) ------------ */

/* One executable mapping of the traced process (a MAPS entry). */
struct tr_map {
	uint64_t start, end;      /* [start, end) */
	uint64_t offset;          /* file offset mapped at start */
	uint64_t inode;           /* 0: anonymous (JIT code) */
	const char *path;         /* NUL-terminated copy, "" for an anonymous mapping */
	uint8_t build_id_len;     /* 0: none */
	uint8_t build_id[CUHOOK_MAP_BUILD_ID_MAX];
};

/* One MAPS block: the complete list of mappings at that point, maps[first .. first + n), sorted
 * by start. */
struct tr_map_set {
	uint32_t first, n;
};

/* A Python frame position (PYFRAMES entry). */
struct tr_pyframe {
	uint32_t id;              /* the file's id */
	int32_t line;             /* -1: unknown */
	int32_t first_line;
	const char *file;         /* NUL-terminated copies */
	const char *func;
};

/* An interned stack (STACKS entry). Native addresses and Python frame references point into
 * the bytes read (valid until tr_close). */
struct tr_stack {
	uint32_t id;              /* the file's id */
	uint32_t map_set;         /* index in map_sets[] of the last MAPS block before its STACKS
	                             block: what symbolizes pc[]; TR_NONE when none came before */
	uint16_t nnative, npython;
	uint8_t native_end, python_end; /* enum cuhook_stack_end */
	const uint64_t *pc;       /* nnative addresses, innermost first */
	const uint32_t *pyframe;  /* npython PYFRAMES ids (| CUHOOK_PYFRAME_ENTRY), innermost first;
	                             every id was defined before the stack (else an error) */
};

#define TR_MAX_ERROR_MSGS 8

struct tr_trace {
	const char *path;
	/* file header */
	uint32_t version, pid, ppid, clock_source, file_flags, buffer_bytes;
	uint64_t start_realtime_ns, start_monotonic_ns, start_tsc;
	char **argv;              /* NULL-terminated, from the NUL-separated command line */
	uint32_t argc;
	const char *cmdline;      /* argv joined with spaces, for display */
	const char *exe;
	/* clock: tsc -> ns is ns = clock_ns0 + (tsc - clock_tsc0) * ns_per_tick */
	uint32_t nclock;          /* CLOCK blocks seen */
	uint64_t clock_tsc0;
	int64_t clock_ns0;
	double ns_per_tick;
	int clock_guessed;        /* TSC clock but no two distinct clock pairs: 1 tick taken as 1 ns */
	/* CLOCK_REALTIME - CLOCK_MONOTONIC at the trace start, from the header's start pair (or the
	 * first CLOCK block when the header has no realtime): what lines up traces of different
	 * processes or machines (cuhook report with several files). has_realtime = 0 when neither
	 * gives a plausible pair. */
	int has_realtime;
	int64_t realtime_offset_ns;
	/* tables */
	struct tr_lib *libs;
	uint32_t nlibs;
	struct tr_func *funcs;    /* indexed by function id */
	uint32_t nfuncs;
	struct tr_thread *threads;
	uint32_t nthreads;
	struct tr_call *calls;    /* per thread in entry order; threads interleave (file order) */
	uint32_t ncalls;
	struct tr_data *data;     /* sorted by call */
	uint32_t ndata;
	struct tr_note *notes;
	uint32_t nnotes;
	struct tr_kname *knames;  /* KNAMES entries */
	uint32_t nknames;
	struct tr_graph *graphs;  /* GRAPHS entries */
	uint32_t ngraphs;
	struct tr_count *counts;  /* COUNTS entries in file order */
	uint32_t ncounts;
	/* totals */
	uint64_t nentry, nexit;   /* ENTRY and EXIT records decoded: events = nentry + nexit */
	uint64_t ndata_recs, ndrop_recs; /* DATA records (and EXIT records carrying a value) */
	uint64_t dropped;         /* records dropped: the END block's count, or the sum of the DROP
	                             records' counts without one (or where that is larger) */
	uint64_t counted_calls;   /* sum of every kept COUNTS entry's calls (saturating): calls
	                             counted besides the nentry recorded ones */
	uint64_t ncount_blocks;   /* COUNTS blocks read (corrupt ones included) */
	/* the GPU side (agent option gpu=1); all empty in a trace without GPU blocks */
	struct tr_gpu_session *gpu_sessions; /* in file order */
	uint32_t ngpu_sessions;
	struct tr_gpu_api *gpu_api;          /* GPU_API records, in file order */
	uint32_t ngpu_api;
	struct tr_gpu_work *gpu_work;        /* kernels, copies, memsets, in file order (CUPTI's
	                                        delivery order, not time order) */
	uint32_t ngpu_work;
	const char **gpu_names;   /* kernel names (mangled) by NAME record id; NULL: undefined */
	uint32_t ngpu_names;      /* slots: the largest id defined + 1 */
	uint64_t ngpu_blocks;     /* GPU_SESSION and GPU blocks read */
	struct tr_gpu_link_stats gpu_links;
	/* call stacks (agent option stacks=); all empty in a trace without them */
	struct tr_stack *stacks;  /* in file order; a re-emitted identical definition is kept once */
	uint32_t nstacks;
	struct tr_pyframe *pyframes;
	uint32_t npyframes;
	struct tr_map *maps;      /* every MAPS block's entries, block after block */
	uint32_t nmaps;
	struct tr_map_set *map_sets;
	uint32_t nmap_sets;
	uint64_t nstack_recs;     /* STACK records read (also those naming no stack) */
	uint64_t stack_none;      /* of them, CUHOOK_STACK_NONE: the agent could not keep the stack */
	uint64_t nstack_blocks;   /* STACKS, PYFRAMES and MAPS blocks read (damaged ones included) */
	uint64_t nblocks;
	int has_end;
	struct cuhook_end_block end;
	int64_t first_ns, last_ns;/* earliest and latest event time (0, 0 if no event) */
	/* damage: the trace is usable, but these say what could not be read */
	int truncated;            /* stopped at a damaged/cut block, or no END block */
	char truncated_reason[200];
	uint64_t truncated_at;    /* file offset where reading stopped (== size if it did not) */
	uint64_t seq_gaps;        /* blocks whose seq was not previous + 1 */
	uint64_t bad_records;     /* malformed records / blocks skipped (a COUNTS block whose entries
	                             do not fill it exactly is skipped whole) */
	uint64_t unknown_funcs;   /* records and COUNTS entries naming an id no FUNCS block defined */
	uint64_t orphan_exits;    /* EXITs with no matching ENTRY on their thread */
	uint64_t orphan_data;     /* DATA records with no call to attach to */
	uint64_t lost_exits;      /* calls TR_CALL_UNFINISHED */
	uint64_t errors;          /* all of the above that are errors (not truncation) */
	char error_msgs[TR_MAX_ERROR_MSGS][160];   /* the first few, for display */
	uint32_t nerror_msgs;

	/* private */
	uint8_t *map_;            /* the bytes read, at their file offsets (trace_input.h) */
	size_t size_;             /* where they end */
	size_t map_cap_;          /* bytes mapped */
	uint32_t header_size_;
	uint64_t end_at_;         /* offset of the END block */
	struct tr_arena_chunk *arena_;   /* string copies */
	uint32_t *tid_hash_;
	uint32_t tid_hash_cap_;
	uint32_t calls_cap_, data_cap_, threads_cap_, funcs_cap_, libs_cap_, notes_cap_, counts_cap_;
	uint32_t knames_cap_, graphs_cap_;
	size_t calls_bytes_;      /* calls[] is mmap'ed when calls_bytes_ != 0 */
	uint64_t events_bytes_;   /* EVENTS payload bytes found by pass 1 */
	uint32_t *thread_call_index_;
	uint32_t gpu_open_;       /* the started session GPU blocks go to, TR_NONE */
	uint32_t gpu_sessions_cap_, gpu_api_cap_, gpu_work_cap_, gpu_names_cap_;
	uint32_t stacks_cap_, pyframes_cap_, maps_cap_, map_sets_cap_;
	struct tr_id_hash *stack_ids_, *pyframe_ids_;  /* file id -> index */
	uint32_t *call_stack_;    /* per call: index in stacks[], TR_NONE; NULL without STACK records */
	struct tr_stream_state *stream_; /* streaming mode (trace_stream.h), NULL otherwise */
};

/* A raw timestamp from the file in CLOCK_MONOTONIC nanoseconds. Times are kept within
 * +-TR_NS_LIMIT so that the difference of any two never overflows (clock_ns0 is clamped the same
 * way by setup_clock, trace_reader.c). */
static inline int64_t tr_tsc_to_ns(const struct tr_trace *t, uint64_t tsc)
{
	if (t->clock_source == CUHOOK_CLOCK_MONOTONIC)
		return tsc > (uint64_t)TR_NS_LIMIT ? TR_NS_LIMIT : (int64_t)tsc;
	const double lim = (double)TR_NS_LIMIT;
	double d = (double)(int64_t)(tsc - t->clock_tsc0) * t->ns_per_tick;
	if (!(d >= -lim && d <= lim)) /* also NaN */
		d = d > 0 ? lim : -lim;
	int64_t r = t->clock_ns0 + (int64_t)d; /* exact for integer ns below 2^53 */
	return r > TR_NS_LIMIT ? TR_NS_LIMIT : r < -TR_NS_LIMIT ? -TR_NS_LIMIT : r;
}

/* A call has a duration and a return value only if its EXIT was read. */
static inline int tr_call_timed(const struct tr_call *c)
{
	return !(c->flags & (TR_CALL_NO_EXIT | TR_CALL_UNFINISHED));
}

static inline int64_t tr_call_dur(const struct tr_call *c)
{
	return c->end_ns - c->start_ns;
}

/* Arguments: 0..5 are the registers, 6.. the stack slots the ENTRY record carried. Since
 * version 4 the agent records only the registers a function declared in cuda.h takes (all six
 * for unknown ones), so cuCtxGetCurrent has one argument and cuLaunchKernel eleven; version 5's
 * ENTRY5 carries as many as the function's FUNCS entry says, an ENTRY5_X its own counts. */
static inline unsigned tr_call_nargs(const struct tr_call *c)
{
	return c->nstack_ ? 6u + c->nstack_ : c->nregs_;
}

/* Argument i, or 0 where the record has none. */
static inline uint64_t tr_call_arg(const struct tr_call *c, unsigned i)
{
	if (i < c->nregs_)
		return c->args_[i];
	if (i < 6)
		return 0;
	if (i - 6 < c->nstack_)
		return c->args_[c->nregs_ + (i - 6)];
	return 0;
}

/* Whether the ENTRY record carried register argument i (0..5). */
static inline bool tr_call_has_reg(const struct tr_call *c, unsigned i)
{
	return i < c->nregs_;
}

/* Sums of call counts saturate instead of wrapping (only a hostile file gets there). */
static inline uint64_t tr_sat_add_u64(uint64_t a, uint64_t b)
{
	uint64_t r;
	return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static inline const char *tr_func_name(const struct tr_trace *t, uint32_t id)
{
	return id < t->nfuncs && t->funcs[id].name ? t->funcs[id].name : "?";
}

/* Indices in calls[] of one thread's calls, in entry (= start) order; built on first use.
 * Returns NULL with *n = 0 when out of memory or the thread has no calls. */
const uint32_t *tr_thread_calls(struct tr_trace *t, uint32_t thread, uint32_t *n);

/* Link GPU work to the calls that submitted it, exactly (never by nearest time): work ->
 * the API record with its (session, correlation id); API record -> the call of the same thread
 * (by tid) and function whose ENTRY is at or before the record's start and whose EXIT is at or
 * after its end. Calls of one function on one thread never overlap, so the latest such call to
 * start is the only candidate. A runtime API record (api.runtime) is the other way round: the
 * call it holds, the first on its thread to start at or after the record's start, of a function
 * that submits work (submits[func] nonzero, func < nfuncs; submits NULL: none does), linked when
 * its EXIT is at or before the record's end. Work whose correlation id has both a driver and a
 * runtime record goes by the driver's. Sets api[].call/link and work[].api/call/link, and *st; reads
 * nothing else (threads: tid and dropped; calls: times, func, thread, flags), writes nothing
 * else. lost_unattributed: the trace lost records that no DROP record places on a thread (the
 * END block counts more), which makes a missing call "dropped" on any thread. Returns 0, or -1
 * when out of memory (nothing linked then). tr_open() calls it; tests call it on their own
 * arrays. */
int tr_gpu_link(const struct tr_call *calls, uint32_t ncalls, const struct tr_thread *threads, uint32_t nthreads,
                const uint8_t *submits, uint32_t nfuncs, int lost_unattributed, struct tr_gpu_api *api, uint32_t napi,
                struct tr_gpu_work *work, uint32_t nwork, struct tr_gpu_link_stats *st);

/* 1 when the GPU records hold what the report relies on (the fuzzers check it on every input):
 * indices in range, each link pointing to an API record of the work's session and correlation id
 * and to a timed call of the API record's thread and function that holds it, the counts by link
 * status adding up, kernel names defined. */
int tr_gpu_consistent(const struct tr_trace *t);

/* A kernel's (mangled) name, NULL when unnamed. */
static inline const char *tr_gpu_work_name(const struct tr_trace *t, const struct tr_gpu_work *w)
{
	return w->kind == TR_GPU_KERNEL && w->name_id && w->name_id < t->ngpu_names ? t->gpu_names[w->name_id] : NULL;
}

/* The stack of call ci (the STACK record after its ENTRY): NULL when it has none. */
static inline const struct tr_stack *tr_call_stack(const struct tr_trace *t, uint32_t ci)
{
	return t->call_stack_ && t->call_stack_[ci] != TR_NONE ? &t->stacks[t->call_stack_[ci]] : NULL;
}

/* The Python frame a STACKS entry's reference names (the CUHOOK_PYFRAME_ENTRY bit ignored);
 * NULL when no PYFRAMES entry defined it. */
const struct tr_pyframe *tr_pyframe_get(const struct tr_trace *t, uint32_t ref);

/* "done", "depth", "no_info", "bad", "none", "unsupported": why a walk ended. */
const char *tr_stack_end_name(unsigned end);

/* Look up the label of value i of a DATA record ("dptr", "function", ...) and of its string
 * ("name", "path"...). NULL when the decoder table has none (value printed unlabeled). */
const char *tr_data_value_label(const struct tr_data *d, unsigned i);
const char *tr_data_str_label(const struct tr_data *d);

/* "dptr=0x7f0012340000;name=vecAdd": every DATA record of the call, ';'-separated, values in
 * 0x hex, strings with ';' '=' and control characters replaced by '?'. Returns the length
 * (truncated to fit len, always NUL-terminated when len > 0). */
size_t tr_call_format_data(const struct tr_trace *t, const struct tr_call *c, char *buf, size_t len);

/* The first DATA string / first value with a given label of a call, e.g. ("name") for
 * cuModuleGetFunction. Return 0 if absent. */
int tr_call_data_str(const struct tr_trace *t, const struct tr_call *c, const char *label,
                     const char **str, uint16_t *len);
int tr_call_data_value(const struct tr_trace *t, const struct tr_call *c, const char *label,
                       uint64_t *value);

#endif
