/* trace.bin: the one description of the file, shared by the writer (the agent inside the traced
 * process) and every reader (cuhook report, tests, fuzzers). docs/trace-format.md explains it in
 * prose; this header is the authority.
 *
 * Layout:  file header | block | block | ... | (END block, when the process exited cleanly)
 *
 * Every block is self-contained and starts with a struct cuhook_block. The writer only ever
 * appends whole blocks with one write(2) each, so a SIGKILLed target leaves a readable prefix: a
 * reader stops at the first block whose header is damaged or whose payload runs past the end of
 * the file and reports the trace as truncated.
 *
 * All integers are little-endian (x86-64 only). All blocks and records are 8-byte aligned. */
#ifndef CUHOOK_TRACE_FORMAT_H
#define CUHOOK_TRACE_FORMAT_H

#include <stdint.h>

#define CUHOOK_TRACE_MAGIC "CUHOOKTR" /* 8 bytes, no NUL */
#define CUHOOK_TRACE_VERSION 5u
#define CUHOOK_TRACE_VERSION_REC5 5u /* the first version with compact records */
/* Version 2 added CUHOOK_RF_VALUE (an EXIT record carrying its call's decoded value, in place of
 * a following DATA record); version 3 added COUNTS blocks (functions counted, not recorded:
 * agent option count=GLOBS); version 4 lets an ENTRY record omit the argument registers a
 * function does not take (cuhook_rec_entry.regs_omitted); version 5 replaces ENTRY and EXIT by
 * compact records (see "version 5 records" below: a successful call of a one-argument function
 * takes 24 bytes instead of 64) and says in FUNCS entries how many arguments an ENTRY carries. Readers
 * accept versions 1 to 5; older files simply never have the newer flag, block or field
 * (regs_omitted was a reserved zero byte). */
#define CUHOOK_TRACE_VERSION_MIN 1u

/* ---- file header ------------------------------------------------------------------------ */

enum cuhook_clock_source {
	CUHOOK_CLOCK_TSC = 0,       /* timestamps are rdtsc ticks; convert with the CLOCK blocks */
	CUHOOK_CLOCK_MONOTONIC = 1, /* timestamps are CLOCK_MONOTONIC nanoseconds already */
};

struct cuhook_file_header {
	char magic[8];            /* CUHOOK_TRACE_MAGIC */
	uint32_t version;         /* CUHOOK_TRACE_VERSION */
	uint32_t header_size;     /* sizeof(struct) + cmdline_len + exe_len, rounded up to 8 */
	uint32_t pid;
	uint32_t ppid;
	uint32_t clock_source;    /* enum cuhook_clock_source */
	uint32_t cmdline_len;     /* bytes of the command line that follow the struct: argv[i]
	                             separated by NUL (as in /proc/PID/cmdline) */
	uint32_t exe_len;         /* bytes of the executable's path that follow the command line */
	uint32_t flags;           /* CUHOOK_FILE_* */
	uint64_t start_realtime_ns;
	uint64_t start_monotonic_ns;
	uint64_t start_tsc;
	uint32_t buffer_bytes;    /* per-thread ring size the agent used */
	uint32_t reserved;
};

#define CUHOOK_FILE_LOSSY 0x1u /* CUHOOK_DROP=1: full buffers dropped events (counted in DROP
                                  records) instead of waiting for the writer */

/* ---- blocks --------------------------------------------------------------------------------- */

#define CUHOOK_BLOCK_MAGIC 0x4b424843u /* "CHBK" */
#define CUHOOK_BLOCK_MAX_PAYLOAD (64u << 20)

enum cuhook_block_type {
	CUHOOK_BLOCK_CLOCK = 1,  /* struct cuhook_clock_block */
	CUHOOK_BLOCK_LIB = 2,    /* struct cuhook_lib_block + path + version */
	CUHOOK_BLOCK_FUNCS = 3,  /* struct cuhook_funcs_block + entries */
	CUHOOK_BLOCK_THREAD = 4, /* struct cuhook_thread_block */
	CUHOOK_BLOCK_EVENTS = 5, /* struct cuhook_events_block + records */
	CUHOOK_BLOCK_NOTE = 6,   /* struct cuhook_note_block + text */
	CUHOOK_BLOCK_END = 7,    /* struct cuhook_end_block: the trace was closed cleanly */
	CUHOOK_BLOCK_COUNTS = 8, /* struct cuhook_counts_block + entries (version 3) */
	CUHOOK_BLOCK_GPU_SESSION = 9, /* struct cuhook_gpu_session_block + CUPTI's path (agent
	                                 option gpu=1; readers before it skip the block) */
	CUHOOK_BLOCK_GPU = 10,   /* struct cuhook_gpu_block + GPU records (agent option gpu=1) */
	CUHOOK_BLOCK_STACKS = 11,   /* struct cuhook_stacks_block + stacks (agent option stacks=) */
	CUHOOK_BLOCK_PYFRAMES = 12, /* struct cuhook_pyframes_block + Python frames (stacks=) */
	CUHOOK_BLOCK_MAPS = 13,     /* struct cuhook_maps_block + mappings (stacks=) */
	CUHOOK_BLOCK_KNAMES = 14,   /* struct cuhook_knames_block + kernel names the agent asked the
	                               driver for (readers before it skip the block) */
	CUHOOK_BLOCK_GRAPHS = 15,   /* struct cuhook_graphs_block + the kernel nodes of executable
	                               graphs (readers before it skip the block) */
};

struct cuhook_block {
	uint32_t magic;   /* CUHOOK_BLOCK_MAGIC */
	uint16_t type;    /* enum cuhook_block_type */
	uint16_t flags;   /* 0 */
	uint32_t size;    /* payload bytes after this header, a multiple of 8 */
	uint32_t seq;     /* block sequence number, 0, 1, 2... (detects gaps) */
};

/* A pair of clock readings taken together. Readers map a tsc t to monotonic nanoseconds through
 * the line that the first and the last CLOCK block of the file define. */
struct cuhook_clock_block {
	uint64_t tsc;
	uint64_t monotonic_ns;
	uint64_t realtime_ns;
};

/* A library the agent patched (libcuda, libc for the dlopen watch, ...). */
struct cuhook_lib_block {
	uint32_t lib_id;       /* small integer, referenced by FUNCS blocks */
	uint32_t flags;        /* CUHOOK_LIB_* */
	uint64_t base;         /* load address */
	uint32_t path_len;     /* bytes of path that follow (no NUL) */
	uint32_t version_len;  /* bytes of version that follow the path (e.g. "580.159.04"), may be 0 */
};

#define CUHOOK_LIB_INTERNAL 0x1u /* hooked for cuhook's own use (dlopen watch), not traced */
#define CUHOOK_LIB_IOCTL 0x2u    /* libc, listed for its traced `ioctl` (agent option ioctl=1):
                                    its calls are ioctls on NVIDIA device files, nested under the
                                    driver calls that made them; each EXIT is followed by a DATA
                                    record of decoder "ioctl" (decoders.h, CUHOOK_STR_RAW) */

/* Functions found in a library: patched ones get events; refused ones are listed with a reason
 * so the report can say what was not traced. Ids are dense, global to the file, and a FUNCS block
 * always precedes the first event naming one of its ids. */
struct cuhook_funcs_block {
	uint32_t lib_id;
	uint32_t first_id;
	uint32_t count;
	uint32_t reserved;
	/* then `count` struct cuhook_func_entry, each followed by its name, padded to 8 */
};

struct cuhook_func_entry {
	uint64_t offset;      /* address - lib base */
	uint32_t size;        /* symbol size in bytes */
	uint16_t status;      /* enum cuhook_patch_status */
	uint16_t name_len;    /* bytes of name that follow (no NUL); entry size is
	                         8-aligned(sizeof(struct cuhook_func_entry) + name_len) */
	uint16_t patch_len;   /* bytes overwritten by the jump (0 if refused) */
	uint16_t decoder;     /* enum cuhook_decoder_id or 0 */
	uint8_t nregs;        /* version 5: argument registers an ENTRY5 record of it carries (0..6) */
	uint8_t nstack;       /* version 5: stack slots after them (0..6; nonzero only if nregs 6).
	                         Both were a reserved zero word before version 5 */
	uint16_t reserved;
};

enum cuhook_patch_status {
	CUHOOK_PATCHED = 0,
	CUHOOK_REFUSED_TOO_SMALL = 1,        /* the jump does not fit inside the symbol */
	CUHOOK_REFUSED_UNDECODABLE = 2,      /* Capstone could not decode an instruction */
	CUHOOK_REFUSED_BRANCH_INTO_PATCH = 3,/* some branch of the function targets the overwritten bytes */
	CUHOOK_REFUSED_UNRELOCATABLE = 4,    /* an overwritten instruction cannot be moved (loop, jrcxz, xbegin...) */
	CUHOOK_REFUSED_RET_IN_PATCH = 5,     /* a ret/jmp ends control flow inside the overwritten bytes
	                                        before the function's end */
	CUHOOK_REFUSED_OUT_OF_RANGE = 6,     /* no stub memory within +-2 GB, or a displacement overflows */
	CUHOOK_REFUSED_NOT_ATOMIC = 7,       /* other threads run and the jump cannot be stored atomically */
	CUHOOK_REFUSED_PROTECT = 8,          /* mprotect refused to make the code writable */
	CUHOOK_REFUSED_ALIAS = 9,            /* another name for an already hooked address */
	CUHOOK_SKIPPED_FILTER = 10,          /* excluded by CUHOOK_FUNCS */
	CUHOOK_REFUSED_NO_MEMORY = 11,       /* the hook table or stub memory is exhausted */
	CUHOOK_STATUS_COUNT
};

static const char *const cuhook_patch_status_names[CUHOOK_STATUS_COUNT] = {
	"patched",
	"too small for a 5-byte jump",
	"undecodable instruction",
	"a branch targets the overwritten bytes",
	"an overwritten instruction cannot be relocated",
	"control flow ends inside the overwritten bytes",
	"no stub memory or displacement within +-2 GB",
	"jump cannot be written atomically while threads run",
	"code page could not be made writable",
	"alias of an already hooked address",
	"excluded by filter",
	"hook table or stub memory exhausted",
};

struct cuhook_thread_block {
	uint32_t tid;
	uint32_t reserved;
	char name[16];    /* comm of the thread when it was first seen, NUL padded */
};

/* Events of one thread, in the order they happened. */
struct cuhook_events_block {
	uint32_t tid;
	uint32_t nrecords;  /* records that follow; version 5: 0 (the writer copies the thread's
	                       records without reading them one by one, so it does not count them) */
	/* then records: each starting with struct cuhook_rec before version 5; in version 5 with a
	 * TIME record first, then records as "version 5 records" below says */
};

/* Calls of count-only functions (agent option count=GLOBS): those calls leave no ENTRY/EXIT
 * records, only a number. Each block holds, for one thread, how many calls of each listed
 * function the thread made since that thread's previous COUNTS block in this file (or since
 * tracing started), read by the writer at `tsc`. The sum over a file's blocks is the exact
 * number of calls made while recording. A function is either counted or recorded for a whole
 * file; a thread's COUNTS block may precede its THREAD block's first EVENTS. */
struct cuhook_counts_block {
	uint32_t tid;
	uint32_t count;   /* struct cuhook_count_entry that follow */
	uint64_t tsc;     /* when the writer read the counters (same clock as the events) */
};

struct cuhook_count_entry {
	uint32_t func;    /* function id (FUNCS block) */
	uint32_t reserved;
	uint64_t calls;   /* calls since this thread's previous COUNTS entry for func, > 0 */
};

struct cuhook_note_block {
	uint32_t level;   /* 0 info, 1 warning, 2 error */
	uint32_t len;     /* bytes of text that follow */
};

struct cuhook_end_block {
	uint64_t events;   /* ENTRY + EXIT records written */
	uint64_t dropped;  /* records dropped (lossy mode, or a full ring when the writer is gone),
	                      and the ENTRY/EXIT records the size cap (agent option max_size) kept
	                      out; after a write error the file has no END block at all */
	uint32_t threads;
	uint32_t reserved;
};

/* ---- the GPU side (agent option gpu=1) -------------------------------------------------------
 *
 * The agent loads CUPTI and enables only the activity kinds of GPU work (concurrent kernels,
 * memcpy, memset) plus CUPTI's driver-API records of the submitting functions alone
 * (cuLaunch*, cuMemcpy*, cuMemset*, cuGraphLaunch*): no CUPTI callbacks. CUPTI's timestamps
 * come from the agent (cuptiActivityRegisterTimestampCallback) and the agent converts them back
 * to the trace's clock, so every `start`/`end` below is on the clock of the EVENTS records.
 *
 * Links: every GPU work record carries CUPTI's correlation id; the GPU_API record with the same
 * id says which thread and which function submitted it and when, inside that call as cuhook
 * recorded it (entry tsc <= start <= end <= exit tsc on the same thread, same function): the
 * reader links the work to that call. A correlation id is unique within one GPU session. Work
 * whose id has no GPU_API record, or whose GPU_API record falls in no recorded call, is
 * "unlinked" and counted as such, never matched by time alone.
 *
 * A GPU_SESSION block opens each session (status STARTED or why not) and another closes it
 * (STOPPED, with CUPTI's own drop count). GPU blocks come in between, written as CUPTI hands
 * over its buffers: records are in CUPTI's delivery order, not in time order. */
enum cuhook_gpu_status {
	CUHOOK_GPU_STARTED = 0,      /* activity recording is on */
	CUHOOK_GPU_STOPPED = 1,      /* recording ended, buffers flushed, CUPTI disabled */
	CUHOOK_GPU_NO_CUPTI = 2,     /* no libcupti found (path: what was tried, may be empty) */
	CUHOOK_GPU_OTHER_USER = 3,   /* another CUPTI user owns the process (a profiler, nsys, a
	                                CUDA_INJECTION64_PATH tool): API tracing goes on without it */
	CUHOOK_GPU_FAILED = 4,       /* CUPTI refused (detail in `result`, the CUptiResult) */
	CUHOOK_GPU_STATUS_COUNT
};

struct cuhook_gpu_session_block {
	uint32_t status;          /* enum cuhook_gpu_status */
	uint32_t cupti_version;   /* cuptiGetVersion(), 0 if unknown */
	uint32_t result;          /* CUptiResult of the failing step (FAILED), else 0 */
	uint32_t path_len;        /* bytes of CUPTI's path that follow (no NUL), padded to 8 */
	uint64_t tsc;             /* when the session started or stopped (trace clock) */
	uint64_t records;         /* STOPPED: GPU records written in this session */
	uint64_t dropped;         /* STOPPED: records CUPTI reported dropped (full buffers) */
};

struct cuhook_gpu_block {
	uint32_t nrecords;
	uint32_t reserved;
	/* then records, each starting with struct cuhook_gpu_rec, 8-aligned */
};

enum cuhook_gpu_rec_type {
	CUHOOK_GPU_REC_API = 1,      /* struct cuhook_gpu_api: a submitting call as CUPTI saw it */
	CUHOOK_GPU_REC_KERNEL = 2,   /* struct cuhook_gpu_kernel */
	CUHOOK_GPU_REC_MEMCPY = 3,   /* struct cuhook_gpu_memcpy */
	CUHOOK_GPU_REC_MEMSET = 4,   /* struct cuhook_gpu_memset */
	CUHOOK_GPU_REC_NAME = 5,     /* struct cuhook_gpu_name: a kernel name, interned per file */
};

struct cuhook_gpu_rec {
	uint8_t type;             /* enum cuhook_gpu_rec_type */
	uint8_t flags;            /* API records: CUHOOK_GPU_API_*; others 0 */
	uint16_t size;            /* bytes of the whole record including this header, multiple of 8 */
	uint32_t correlation;     /* CUPTI's correlation id (0 in NAME records) */
};

/* An API record's flags. RUNTIME: CUPTI's record of a CUDA runtime call (kind RUNTIME; cbid is a
 * runtime callback id, func UINT32_MAX), kept in a session that started after the driver was
 * initialised, when CUPTI records the driver calls the runtime makes no more (gpu_activity.c).
 * The work of that runtime call carries its correlation id, and the runtime record holds the
 * submitting driver call cuhook traced for it: on the same thread, start <= entry tsc and exit tsc
 * <= end, the first such call of a function that submits work (src/format/gpu_submit.h) is the
 * one the reader links the work to. A driver record of the same correlation id comes first. */
#define CUHOOK_GPU_API_RUNTIME 0x01u

struct cuhook_gpu_api {
	struct cuhook_gpu_rec h;
	uint64_t start, end;      /* CUPTI's API record, on the trace clock */
	uint32_t tid;             /* the calling thread (system thread id) */
	uint32_t func;            /* cuhook's function id of the same name (FUNCS), or UINT32_MAX */
	uint32_t cbid;            /* CUPTI's driver callback id (runtime callback id: RUNTIME flag) */
	uint32_t ret;             /* CUresult the call returned */
};

struct cuhook_gpu_kernel {
	struct cuhook_gpu_rec h;
	uint64_t start, end;      /* on the GPU, converted to the trace clock */
	uint32_t device, context, stream; /* CUPTI's ids */
	uint32_t name_id;         /* a NAME record earlier in the file (0: no name) */
	int32_t grid[3], block[3];
	uint32_t shared_static, shared_dynamic; /* bytes per block */
	uint16_t registers;       /* per thread */
	uint16_t reserved;
	uint32_t graph_id;        /* 0 unless launched by a graph */
	uint64_t graph_node_id;   /* 0 unless launched by a graph */
};

enum cuhook_gpu_copy_kind {   /* CUpti_ActivityMemcpyKind's values */
	CUHOOK_COPY_UNKNOWN = 0, CUHOOK_COPY_HTOD = 1, CUHOOK_COPY_DTOH = 2, CUHOOK_COPY_HTOA = 3,
	CUHOOK_COPY_ATOH = 4, CUHOOK_COPY_ATOA = 5, CUHOOK_COPY_ATOD = 6, CUHOOK_COPY_DTOA = 7,
	CUHOOK_COPY_DTOD = 8, CUHOOK_COPY_HTOH = 9, CUHOOK_COPY_PTOP = 10,
};

struct cuhook_gpu_memcpy {
	struct cuhook_gpu_rec h;
	uint64_t start, end;
	uint32_t device, context, stream;
	uint8_t copy_kind;        /* enum cuhook_gpu_copy_kind */
	uint8_t src_kind, dst_kind; /* CUpti_ActivityMemoryKind's values */
	uint8_t flags;            /* CUpti_ActivityFlag's low byte (async...) */
	uint64_t bytes;
	uint32_t graph_id;
	uint32_t reserved;
	uint64_t graph_node_id;
};

struct cuhook_gpu_memset {
	struct cuhook_gpu_rec h;
	uint64_t start, end;
	uint32_t device, context, stream;
	uint32_t value;
	uint64_t bytes;
	uint16_t mem_kind;        /* CUpti_ActivityMemoryKind's value */
	uint16_t flags;
	uint32_t graph_id;
	uint64_t graph_node_id;
};

struct cuhook_gpu_name {
	struct cuhook_gpu_rec h;  /* correlation = 0 */
	uint32_t name_id;         /* 1, 2, ... in order of first use within the file */
	uint32_t len;             /* bytes of the (mangled) name that follow, no NUL, padded to 8 */
};

/* ---- call stacks (agent option stacks=GLOBS) ----------------------------------------------
 *
 * For a recorded call of a function the stacks= globs match, the agent writes a STACK record
 * (struct cuhook_rec_stack) right after the call's ENTRY record, on the same thread. It names an
 * interned stack: the caller's native stack and, where the calling thread runs CPython, its
 * Python frames at that moment. STACKS blocks define stacks by id, PYFRAMES blocks Python frames
 * by id, MAPS blocks the process's executable mappings, so a reader symbolizes native addresses
 * after the process is gone (the files at those paths, checked by build id where there is one).
 *
 * Ids are unique within one file and start again in a new file (the agent writes again what a
 * new file refers to). Order: every id is defined in a block that comes before the first EVENTS
 * block that refers to it; a PYFRAMES entry before the first STACKS entry that refers to it; a
 * MAPS block before the STACKS blocks whose addresses it covers. A reader symbolizes a STACKS
 * entry's addresses with the last MAPS block before that STACKS block (mappings change when
 * libraries are loaded and unloaded; each MAPS block is a complete list, not a change).
 * Readers before these blocks skip them and the STACK records with a warning. */

#define CUHOOK_STACK_NONE 0xffffffffu /* cuhook_rec_stack.stack: no stack could be kept (the
                                         agent's stack table is full: `why` says so) */

struct cuhook_stacks_block {
	uint32_t count;           /* struct cuhook_stack_entry that follow */
	uint32_t reserved;
};

/* Why a walk ended (cuhook_stack_entry.native_end, .python_end). */
enum cuhook_stack_end {
	CUHOOK_STACK_END_DONE = 0,      /* native: reached the outermost frame; Python: the thread's
	                                   first Python frame */
	CUHOOK_STACK_END_DEPTH = 1,     /* the depth limit (agent option stack_depth=) */
	CUHOOK_STACK_END_NO_INFO = 2,   /* native: no unwind information for the last address (JIT
	                                   code, a stripped .eh_frame): the walk stops there */
	CUHOOK_STACK_END_BAD = 3,       /* a frame failed a check (an address outside the thread's
	                                   stack, an unwinder error, a Python frame that does not
	                                   look like one): the frames before it are kept */
	CUHOOK_STACK_END_NONE = 4,      /* Python: the thread runs no Python code now (or the process
	                                   has no Python): npython 0 */
	CUHOOK_STACK_END_UNSUPPORTED = 5, /* not taken: native, no unwinder (libunwind could not be
	                                   loaded); Python, an interpreter whose layout cuhook does
	                                   not know (a NOTE says which, once) */
	CUHOOK_STACK_END_COUNT
};

struct cuhook_stack_entry {
	uint32_t id;
	uint32_t size;            /* bytes of this entry and what follows it, multiple of 8 */
	uint16_t nnative;         /* native addresses that follow */
	uint16_t npython;         /* Python frame references that follow the addresses */
	uint8_t native_end;       /* enum cuhook_stack_end */
	uint8_t python_end;       /* enum cuhook_stack_end */
	uint16_t reserved;
	/* uint64_t pc[nnative]: innermost first. pc[0] is in the function that called the traced
	 * function. Each is an address inside the instruction that made the call (its return address
	 * minus one) or, for the frame a signal interrupted, the interrupted instruction's address:
	 * a symbolizer looks each one up as it is.
	 * uint32_t pyframe[npython]: innermost first, a PYFRAMES id, with CUHOOK_PYFRAME_ENTRY set
	 * on a frame the interpreter's evaluation loop was entered for from C (each such frame is
	 * the outermost Python frame of one native _PyEval_EvalFrameDefault activation: how a reader
	 * merges the two stacks); padded to 8 bytes. */
};

#define CUHOOK_PYFRAME_ENTRY 0x80000000u
#define CUHOOK_PYFRAME_ID_MASK 0x7fffffffu

struct cuhook_pyframes_block {
	uint32_t count;           /* struct cuhook_pyframe_entry that follow */
	uint32_t reserved;
};

/* One Python frame position: a code object and the line its frame was executing. */
struct cuhook_pyframe_entry {
	uint32_t id;
	uint32_t size;            /* bytes of this entry and its strings, multiple of 8 */
	int32_t line;             /* the line of the instruction the frame was at; -1 unknown */
	int32_t first_line;       /* the code object's first line (co_firstlineno) */
	uint16_t file_len;        /* bytes of the file name (co_filename, UTF-8, no NUL) */
	uint16_t func_len;        /* bytes of the function's name (co_qualname; co_name before
	                             CPython 3.11) */
	uint32_t reserved;
	/* char file[file_len]; char func[func_len]; padded to 8 */
};

/* KNAMES: names of kernel handles (CUfunction, CUkernel) the program launched, asked of the
 * driver by the agent on a thread of its own (cuFuncGetName, cuKernelGetName), once per handle
 * per file; a handle asked again after a module or library unload may be named again (the later
 * entry wins). They mean what the names of a cuModuleGetFunction DATA record mean. */
struct cuhook_knames_block {
	uint32_t count;    /* entries that follow */
	uint32_t reserved;
};

struct cuhook_kname_entry {
	uint64_t handle;   /* the CUfunction or CUkernel handle, as the launch passed it */
	uint16_t name_len; /* bytes of name after the entry (no NUL) */
	uint8_t kind;      /* CUHOOK_KNAME_* : which query answered */
	uint8_t reserved[5];
	/* then the (mangled) name, padded so that entry + name is a multiple of 8 */
};

#define CUHOOK_KNAME_FUNCTION 1 /* cuFuncGetName */
#define CUHOOK_KNAME_KERNEL 2   /* cuKernelGetName */

/* GRAPHS: executable graphs and their kernel nodes, listed when the agent saw the graph
 * instantiated (cuGraphInstantiate*) or updated (cuGraphExecUpdate*): a cuGraphLaunch of `exec`
 * launches these kernels. An executable graph instantiated before tracing began has no entry
 * (the driver cannot list an executable graph's nodes). A file lists again every graph known
 * from an earlier session of the process. */
struct cuhook_graphs_block {
	uint32_t count;    /* entries that follow */
	uint32_t reserved;
};

struct cuhook_graph_entry {
	uint64_t exec;     /* the CUgraphExec handle */
	uint64_t graph;    /* the CUgraph it was made from */
	uint32_t nnodes;   /* nodes of the graph (all types) */
	uint32_t nkernels; /* kernel nodes that follow (at most nnodes) */
	uint32_t flags;    /* CUHOOK_GRAPH_* */
	uint32_t reserved;
	/* then nkernels struct cuhook_graph_kernel */
};

#define CUHOOK_GRAPH_TRUNCATED 0x1u /* more kernel nodes than the agent could list: the rest
                                       are left out (nkernels < kernel nodes) */

struct cuhook_graph_kernel {
	uint64_t func;       /* the node's CUfunction (CUDA_KERNEL_NODE_PARAMS_v2.func), or its
	                        CUkernel when func is NULL; named by KNAMES or the program's lookups */
	uint32_t grid[3];
	uint32_t block[3];
	uint32_t shared;     /* dynamic shared memory bytes */
	uint32_t reserved;
};

struct cuhook_maps_block {
	uint32_t count;           /* struct cuhook_map_entry that follow */
	uint32_t reserved;
};

#define CUHOOK_MAP_BUILD_ID_MAX 20

/* One executable mapping of the process (/proc/self/maps, r-x or --x). */
struct cuhook_map_entry {
	uint64_t start, end;      /* [start, end) */
	uint64_t offset;          /* the file offset mapped at start */
	uint64_t inode;           /* 0 for an anonymous mapping (JIT code): path_len 0 */
	uint32_t size;            /* bytes of this entry and its path, multiple of 8 */
	uint16_t path_len;        /* bytes of the path that follow (no NUL) */
	uint8_t build_id_len;     /* 0: none found (the ELF's NT_GNU_BUILD_ID note, as loaded) */
	uint8_t reserved;
	uint8_t build_id[CUHOOK_MAP_BUILD_ID_MAX];
	uint32_t reserved2;
	/* char path[path_len]; padded to 8 */
};

/* ---- records inside an EVENTS block ------------------------------------------------------ */

enum cuhook_rec_type {
	CUHOOK_REC_PAD = 0,    /* ring only, never in files: skips to the ring's end; its length is
	                          in `func` (it may exceed 16 bits) */
	CUHOOK_REC_ENTRY = 1,  /* struct cuhook_rec_entry + (6 - regs_omitted) + nstack u64 */
	CUHOOK_REC_EXIT = 2,   /* struct cuhook_rec_exit */
	CUHOOK_REC_DATA = 3,   /* struct cuhook_rec_data: decoded arguments, follows an ENTRY or EXIT */
	CUHOOK_REC_DROP = 4,   /* struct cuhook_rec_drop */
	CUHOOK_REC_STACK = 5,  /* struct cuhook_rec_stack: the call's stack, right after its ENTRY */
};

struct cuhook_rec {
	uint8_t type;     /* enum cuhook_rec_type */
	uint8_t flags;    /* CUHOOK_RF_* */
	uint16_t size;    /* bytes of the whole record including this header, multiple of 8 */
	uint32_t func;    /* function id (FUNCS block) */
};

#define CUHOOK_RF_NO_EXIT 0x1u /* ENTRY: no EXIT will follow (shadow stack full, or recursion
                                  too deep): the call is recorded entry-only */
#define CUHOOK_RF_VALUE 0x2u   /* EXIT (version 2): the record is a struct cuhook_rec_exit_value:
                                  the call's one decoded value (its function's decoder, FUNCS
                                  entry, with one out-parameter and no string) follows `ret`.
                                  Means exactly what the same EXIT followed by a DATA record of
                                  that decoder with nvalues 1, at_exit 1, str_len 0 means; it
                                  saves the agent a record per decoded call. */

#define CUHOOK_MAX_STACK_ARGS 6

struct cuhook_rec_entry {
	struct cuhook_rec h;
	uint64_t tsc;
	uint16_t depth;     /* nesting depth of traced calls on this thread, 0 = outermost */
	uint8_t nstack;     /* stack argument slots that follow regs (0..CUHOOK_MAX_STACK_ARGS): the
	                       agent records 6 for a function of unknown signature and, for the
	                       CUDA API functions cuda.h declares, only those the function takes */
	uint8_t regs_omitted; /* version 4: argument registers not recorded, from the end (0..6):
	                       a function cuda.h declares with n < 6 parameters has 6 - n. Stack
	                       slots come only after all six (nstack > 0 implies 0 here) */
	uint8_t reserved[4];
	uint64_t regs[];    /* rdi, rsi, rdx, rcx, r8, r9 (the integer argument registers), the
	                       first 6 - regs_omitted of them */
	/* uint64_t stack[nstack]: the caller's stack slots above the return address (args 7..) */
};

/* Bytes of an ENTRY record with `nregs` registers and `nstack` stack slots. */
#define CUHOOK_REC_ENTRY_SIZE(nregs, nstack) (24u + 8u * ((nregs) + (nstack)))

struct cuhook_rec_exit {
	struct cuhook_rec h;
	uint64_t tsc;
	uint16_t depth;
	uint8_t reserved[6];
	uint64_t ret;       /* rax */
};

struct cuhook_rec_exit_value {   /* an EXIT with CUHOOK_RF_VALUE */
	struct cuhook_rec_exit x;
	uint64_t value;
};

/* Values the decoder table (src/format/decoders.h) reads for known functions: out-parameters at
 * exit (cuMemAlloc's pointer, cuModuleGetFunction's handle) and strings (kernel names). */
struct cuhook_rec_data {
	struct cuhook_rec h;
	uint16_t decoder;   /* index into cuhook_decoders (by name: see decoders.h) */
	uint8_t nvalues;    /* u64 values that follow */
	uint8_t at_exit;    /* 1: read at exit (the agent reads everything at exit, after success) */
	uint16_t str_len;   /* bytes of string after the values (no NUL), padded to 8 */
	uint16_t reserved;
	/* uint64_t values[nvalues]; char str[str_len]; */
};

struct cuhook_rec_drop {
	struct cuhook_rec h;  /* func = 0 */
	uint64_t tsc;
	uint64_t count;       /* records lost on this thread just before this point */
};

struct cuhook_rec_stack {
	struct cuhook_rec h;  /* func = the ENTRY's */
	uint32_t stack;       /* STACKS id, or CUHOOK_STACK_NONE */
	uint32_t reserved;
};

/* ---- version 5 records ------------------------------------------------------------------
 *
 * In a version-5 file every record of an EVENTS block starts with a little-endian 64-bit word
 * whose low 4 bits are its type (enum cuhook_rec5_type). DATA, DROP and STACK records keep the
 * struct cuhook_rec header above (their type byte is below 16; `size` says their length). The
 * others pack their header into that one word:
 *
 *   ENTRY5, ENTRY5_X, EXIT5, EXIT5_VALUE, EXIT5_ZERO, EXIT5_ZERO_VALUE:
 *     bits  0-3   type
 *     bits  4-11  depth: nesting depth of traced calls on this thread, 0 = outermost (an EXIT's
 *                 is its ENTRY's)
 *     bits 12-25  func: function id (FUNCS block), below 2^14 (src/agent/hook_table.h: HOOKS_MAX)
 *     bits 26-63  the low 38 bits of the timestamp
 *   TIME:
 *     bits  0-3   type; bits 4-31 zero
 *     bits 32-63  epoch: the high bits of the timestamps that follow (timestamp >> 38)
 *
 * A record's full timestamp is epoch << 38 | low 38 bits, with the epoch of the last TIME record
 * before it in the same EVENTS block. Every version-5 EVENTS block starts with a TIME record,
 * and the agent writes another before the first record of a new epoch (every 2^38 ticks, about
 * 90 s at 3 GHz), so a reader needs nothing from earlier blocks. DROP records keep their full
 * 64-bit timestamp.
 *
 *   ENTRY5       the word, then the function's arguments: the nregs argument registers (rdi,
 *                rsi, rdx, rcx, r8, r9: the first nregs of them), then nstack stack slots, as
 *                the function's FUNCS entry says. 8 + 8 * (nregs + nstack) bytes.
 *   ENTRY5_X     an ENTRY that differs from what FUNCS says: the word, then struct
 *                cuhook_rec5_entry_info, then its own nregs + nstack values. For a call recorded
 *                entry-only (CUHOOK_RF_NO_EXIT) or with fewer readable stack slots.
 *   EXIT5        the word, then the return value (rax). 16 bytes.
 *   EXIT5_VALUE  the word, rax, then the call's one decoded value: means what an EXIT with
 *                CUHOOK_RF_VALUE means. 24 bytes.
 *   EXIT5_ZERO   an EXIT5 whose rax was 0 (CUDA_SUCCESS, the common case): the word alone.
 *                8 bytes.
 *   EXIT5_ZERO_VALUE  an EXIT5_VALUE whose rax was 0: the word, then the value. 16 bytes.
 *   TIME         the word alone. 8 bytes.
 *
 * Order and meaning are those of the version-4 records they replace: a STACK record right after
 * its call's ENTRY5/ENTRY5_X (a TIME record may come before the ENTRY, never between), DATA
 * records after the ENTRY or EXIT they belong to. */
enum cuhook_rec5_type {
	CUHOOK_REC5_ENTRY = 1,
	CUHOOK_REC5_EXIT = 2,
	/* 3, 4, 5: CUHOOK_REC_DATA, CUHOOK_REC_DROP, CUHOOK_REC_STACK, as in earlier versions */
	CUHOOK_REC5_ENTRY_X = 6,
	CUHOOK_REC5_EXIT_VALUE = 7,
	CUHOOK_REC5_TIME = 8,
	CUHOOK_REC5_EXIT_ZERO = 9,
	CUHOOK_REC5_EXIT_ZERO_VALUE = 10,
};

#define CUHOOK_REC5_TYPE(w) ((unsigned)((w) & 0xfu))
#define CUHOOK_REC5_DEPTH(w) ((unsigned)(((w) >> 4) & 0xffu))
#define CUHOOK_REC5_FUNC(w) ((uint32_t)(((w) >> 12) & 0x3fffu))
#define CUHOOK_REC5_TSC_BITS 38u
#define CUHOOK_REC5_TSC_LOW(w) ((w) >> 26)
#define CUHOOK_REC5_EPOCH(tsc) ((uint32_t)((tsc) >> CUHOOK_REC5_TSC_BITS))
#define CUHOOK_REC5_TIME_EPOCH(w) ((uint32_t)((w) >> 32))
#define CUHOOK_REC5_FUNC_MAX 0x3fffu
/* The header word of a compact record; tsc is the full timestamp (its high bits drop out). */
#define CUHOOK_REC5_WORD(type, depth, func, tsc)                                              \
	((uint64_t)(type) | (uint64_t)(depth) << 4 | (uint64_t)(func) << 12 | (uint64_t)(tsc) << 26)
#define CUHOOK_REC5_TIME_WORD(epoch) ((uint64_t)CUHOOK_REC5_TIME | (uint64_t)(epoch) << 32)
/* A full timestamp from a record's word and the epoch in force. */
#define CUHOOK_REC5_TSC(w, epoch) ((uint64_t)(epoch) << CUHOOK_REC5_TSC_BITS | CUHOOK_REC5_TSC_LOW(w))

struct cuhook_rec5_entry_info {   /* ENTRY5_X's second word */
	uint8_t flags;    /* CUHOOK_RF_NO_EXIT */
	uint8_t nregs;    /* 0..6 */
	uint8_t nstack;   /* 0..CUHOOK_MAX_STACK_ARGS; nonzero only if nregs is 6 */
	uint8_t reserved[5];
};

/* Bytes of the version-5 record at q, of which `left` bytes (a multiple of 8) are readable;
 * func_nargs is FUNCS' nregs + nstack for the function its word names (only an ENTRY5 needs
 * it). 0 when the record is damaged: an unknown type, a length below its header or past `left`,
 * an ENTRY5_X with impossible counts. The agent (to find its records in a ring) and every
 * reader use this one rule. */
static inline uint32_t cuhook_rec5_size(const uint64_t *q, uint64_t left, unsigned func_nargs)
{
	if (left < 8)
		return 0;
	uint64_t n;
	switch (CUHOOK_REC5_TYPE(q[0])) {
	case CUHOOK_REC5_ENTRY: n = 8 + 8ull * func_nargs; break;
	case CUHOOK_REC5_EXIT: n = 16; break;
	case CUHOOK_REC5_EXIT_VALUE: n = 24; break;
	case CUHOOK_REC5_TIME: n = 8; break;
	case CUHOOK_REC5_EXIT_ZERO: n = 8; break;
	case CUHOOK_REC5_EXIT_ZERO_VALUE: n = 16; break;
	case CUHOOK_REC5_ENTRY_X: {
		if (left < 16)
			return 0;
		const struct cuhook_rec5_entry_info *i = (const struct cuhook_rec5_entry_info *)&q[1];
		if (i->nregs > 6 || i->nstack > CUHOOK_MAX_STACK_ARGS || (i->nstack && i->nregs != 6))
			return 0;
		n = 16 + 8ull * (i->nregs + i->nstack);
		break;
	}
	case CUHOOK_REC_DATA:
	case CUHOOK_REC_DROP:
	case CUHOOK_REC_STACK:
		n = (q[0] >> 16) & 0xffffu;
		if (n < 8 || n % 8)
			return 0;
		break;
	default:
		return 0;
	}
	return n <= left ? (uint32_t)n : 0;
}

#define CUHOOK_ALIGN8(x) (((x) + 7u) & ~(uint64_t)7u)

#endif
