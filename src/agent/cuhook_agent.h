/* The agent's public API: the only symbols libcuhook.so exports (everything else is hidden).
 *
 * Two ways in:
 *  - constructor mode: the library is loaded into a process (linked, dlopened, ctypes.CDLL) and
 *    its constructor starts tracing with the CUHOOK_* environment variables (docs/agent.md);
 *  - injected mode: `cuhook run` / `cuhook attach` load it with a remote dlopen while every
 *    thread is stopped under ptrace, then call cuhook_agent_start() remotely. The constructor
 *    does not autostart when the process's tracer is cuhook.
 * All functions are safe to call from any thread, and return quickly. */
#ifndef CUHOOK_AGENT_H
#define CUHOOK_AGENT_H

#include <stddef.h>
#include <stdint.h>

#define CUHOOK_API __attribute__((visibility("default")))

/* The first bytes of the page that cuhook's injector maps in a process for its remote calls
 * (src/inject/remote_call.c). While such a page exists, the agent is being (or was) loaded by
 * the injector: its constructor never starts tracing by itself then, even if the injector is
 * gone by the time a late dlopen runs it. */
#define CUHOOK_GATE_MAGIC "cuhook-call-gate/1"

#ifdef __cplusplus
extern "C" {
#endif

/* Start tracing. `options` is a ';'-separated list of key=value with the same keys as the
 * CUHOOK_* variables, lower case without the prefix ("output=/tmp/t.bin;funcs=cuLaunch*"), or
 * NULL for the environment. `flags`: CUHOOK_START_THREADS_STOPPED when the caller guarantees that
 * every other thread of the process is stopped (ptrace) for the duration of the call, so jumps
 * may be written without atomic stores. Returns 0, or a negative errno; a message is kept for
 * cuhook_agent_last_error(). Calling it while tracing returns -EALREADY. */
CUHOOK_API int cuhook_agent_start(const char *options, unsigned flags);
#define CUHOOK_START_THREADS_STOPPED 0x1u

/* The functions counted rather than recorded when no count= option is given: the two queries
 * the CUDA runtime makes around every kernel launch, ~90 % of a PyTorch program's driver calls
 * at 20-50 ns each, less than recording one costs. Every call is still counted exactly, per
 * thread; what they lose is their times, arguments and return values. "count=" (empty; `cuhook
 * run --record-all`) records them like any other function. Nsight Systems likewise skips such
 * calls unless --cuda-trace-all-apis is given, without counting them. */
#define CUHOOK_COUNT_DEFAULT "cuCtxGetDevice*,cuDevicePrimaryCtxGetState"

/* The functions whose calls get the caller's stack when no stacks= option is given: the rare,
 * costly calls (CUHOOK_STACKS_RARE, below). Issue 17 makes them the default if a stacked call
 * costs at most 2 us: measured (bench/stack_cost.c, bench/py_stack_cost.py, docs/agent.md "Call
 * stacks") one costs 0.47 us from 11 native frames here once its call site has been walked, about
 * 15 us the first time, and on the H100 docs/validation.md gives. `cuhook attach` passes an empty
 * stacks= unless --stacks is given: libunwind 1.6 keeps a pipe open in the program (its memory
 * checks), with itself, after the agent detaches, two descriptors the program did not have; a
 * process traced from its start (cuhook run, the constructor) keeps the agent to its end anyway. */
#define CUHOOK_STACKS_DEFAULT CUHOOK_STACKS_RARE
/* The rare, costly calls a user asks "who made this?" of: allocation and free, module and
 * library loading, graph instantiation, synchronisation (launches only on request: they are
 * frequent, and the walk costs more than they do). `--stacks rare` names this list. */
#define CUHOOK_STACKS_RARE                                                                       \
	"cuMemAlloc*,cuMemFree*,cuMemHostAlloc*,cuMemAllocHost*,cuMemAllocManaged,cuMemAllocAsync*," \
	"cuMemFreeAsync*,cuMemCreate,cuMemMap,cuModuleLoad*,cuLibraryLoad*,cuGraphInstantiate*,"     \
	"cuCtxSynchronize,cuStreamSynchronize,cuEventSynchronize"

/* The smallest size cap (max_size=, cuhook --max-size) accepted: room for the file header (the
 * command line and the executable's path, up to 8 KiB) and the closing blocks, with some left
 * for the tables and events. */
#define CUHOOK_MAX_SIZE_MIN (64u << 10)

/* Optional, before cuhook_agent_start() and while the other threads still run: everything of
 * the start that may take a lock another thread holds: create the trace file and the writer
 * thread (which waits), find and plan the functions of the libraries already loaded and write
 * their stubs, and those of the agent's own hooks, without writing any jump. A later
 * cuhook_agent_start() with the same options then only writes jumps: with every other thread
 * stopped it takes no lock, allocates nothing and is short. It returns -EAGAIN, starting
 * nothing, if a library was loaded or unloaded since the preparation (prepare again), -EBUSY if
 * the agent's lock is held. Called again with the same options, prepare reuses the file and the
 * writer; with others, it discards the earlier preparation. cuhook_agent_stop() without a
 * start discards it. */
CUHOOK_API int cuhook_agent_prepare(const char *options);

/* Stop tracing: restore every patched function's original bytes, flush all buffers, write the
 * END block and close the file. Stubs stay mapped (threads may still be inside them); threads
 * still inside traced calls return through them correctly. The agent can be started again.
 * Returns 0; CUHOOK_STOP_TRACE_FAILED when it stopped, but the trace could not be written in
 * full during the session (a full disk: tracing had stopped then), cuhook_agent_last_error()
 * saying why; or a negative errno (not tracing: -ENOENT). */
CUHOOK_API int cuhook_agent_stop(unsigned flags);
#define CUHOOK_STOP_TRACE_FAILED 1

/* How long each step of the last cuhook_agent_stop() took, in ns, for an injector that reads
 * it through /proc/PID/mem once the threads run again (cuhook attach -v: where a detach's hold
 * went, without a remote call). Written by the stop, before it returns; a step not taken is 0. */
enum {
	CUHOOK_STOP_STEP_GPU,     /* the GPU session's end (abandoned when the threads are stopped) */
	CUHOOK_STOP_STEP_CAPTURE, /* the capture range's end */
	CUHOOK_STOP_STEP_UNPATCH, /* the jumps taken out */
	CUHOOK_STOP_STEP_TRACE,   /* the writer's last round, the END block, the file closed */
	CUHOOK_STOP_STEP_WATCH,   /* the watch of the injector ended */
	CUHOOK_STOP_STEP_NAMES,   /* the kernel-names thread told to end */
	CUHOOK_STOP_STEPS
};
CUHOOK_API extern volatile uint64_t cuhook_agent_stop_ns[CUHOOK_STOP_STEPS];

/* Optional, before cuhook_agent_stop() and while the other threads still run: the part of the
 * stop that needs them running. With gpu=1 that is the GPU session's end: CUPTI flushed and
 * disabled (CUPTI and the driver take locks a stopped thread may hold), waited for at most 2 s
 * on the agent's own GPU thread. Without it, a stop made with the threads stopped leaves the
 * GPU records CUPTI had not delivered yet out of the trace (a NOTE says so). Returns 0. */
CUHOOK_API int cuhook_agent_prepare_stop(void);

/* The same without waiting on the calling thread, so that the injector borrows a program thread
 * only for the instant of the call: asks the agent's GPU thread to end the GPU session and
 * returns at once the request to wait for; the injector reads cuhook_agent_gpu_done until it
 * equals that value (or a later request's, whose value is larger), then stops the threads. 0:
 * nothing to wait for (nothing to end, or no GPU thread: then done on the calling thread). */
CUHOOK_API uint32_t cuhook_agent_prepare_stop_begin(void);
/* The last request the agent's GPU thread finished (see cuhook_agent_prepare_stop_begin). */
CUHOOK_API extern volatile uint32_t cuhook_agent_gpu_done;

/* How long each step of the last GPU session's end took, in ns, as cuhook_agent_stop_ns: with
 * gpu=1 this runs beside the program (cuhook_agent_prepare_stop), and the program's CUDA calls
 * may wait on CUPTI's and the driver's locks meanwhile without any thread being held: an
 * injector tells these figures with the holds (cuhook attach -v). Set by the agent's GPU thread
 * before it marks the request done (cuhook_agent_gpu_done); a step not taken is 0. */
enum {
	CUHOOK_GPU_STOP_FLUSH,    /* cuptiActivityFlushAll, forced */
	CUHOOK_GPU_STOP_DISABLE,  /* the kinds and driver records disabled, submitting calls waited for */
	CUHOOK_GPU_STOP_FLUSH2,   /* the second forced flush */
	CUHOOK_GPU_STOP_FINALIZE, /* cuptiFinalize (0: not called) */
	CUHOOK_GPU_STOP_STEPS
};
CUHOOK_API extern volatile uint64_t cuhook_agent_gpu_stop_ns[CUHOOK_GPU_STOP_STEPS];

/* For a thread stopped at `ip`: if ip lies inside the overwritten bytes of a patched function
 * (at an instruction boundary), the address of the same instruction in the relocated copy, so
 * the thread can be moved there before it resumes; otherwise `ip` unchanged. No mapping is
 * needed after cuhook_agent_stop(): a thread inside a relocated copy may stay there, since
 * copies stay mapped and jump back into the function's (restored) body. */
CUHOOK_API uintptr_t cuhook_agent_fixup_ip(uintptr_t ip);

/* cuhook_agent_fixup_ip for each of n addresses, in place: one call for every thread of a
 * process (a remote call costs the whole stopped process a round trip, 0.1-0.3 ms). Returns how
 * many changed. */
CUHOOK_API size_t cuhook_agent_fixup_ips(uintptr_t *ips, size_t n);

/* A NUL-terminated message describing the last failure (or the last start's summary). */
CUHOOK_API const char *cuhook_agent_last_error(void);

/* 1 while tracing. */
CUHOOK_API int cuhook_agent_active(void);

/* The agent's own threads (its writer), by thread id, for a tool that stops every thread of the
 * process from outside: the cuhook injector reads this object through /proc/PID/mem, at the
 * address of its symbol in the agent's dynamic symbol table, without running anything in the
 * process. Such a tool must leave these threads running (cuhook_agent_stop() waits for the
 * writer) and stop every other one, whatever its name. A slot holds a thread id or 0. A thread
 * of the agent is given its slot by the thread that creates it, as soon as pthread_create
 * returns (so before cuhook_agent_start() returns), and gives it back as the last thing it
 * does, while its id is still its own. `generation` grows by one after every change: a copy
 * read between two equal readings of it is consistent. A fork child starts with every slot
 * empty (the threads are not copied). */
#define CUHOOK_AGENT_THREADS_MAGIC 0x74686b63u /* "ckht" */
#define CUHOOK_AGENT_THREADS_MAX 8
struct cuhook_agent_threads {
	uint32_t magic;      /* CUHOOK_AGENT_THREADS_MAGIC: this layout */
	uint32_t generation;
	int32_t tid[CUHOOK_AGENT_THREADS_MAX];
};
CUHOOK_API extern struct cuhook_agent_threads cuhook_agent_threads;

/* The flight recorder's dump requests (agent option flight=, src/agent/flight.h), and how far
 * the trace has come, for a tool outside the process: it finds this object as it finds
 * cuhook_agent_threads and checks `magic`. `cuhook dump PID` adds 1 to `dump_requests` through
 * /proc/PID/mem (which needs the same rights as ptrace: nothing else can ask); the agent's writer
 * looks at the word every flush_ms, writes a dump when it grew, then sets `requests_served` to
 * the value it took and adds 1 to `dumps_written`. `cuhook run` and `cuhook attach` read the
 * session's counters for their status line: the writer thread sets them after each of its rounds
 * (every flush_ms), from its own counts, so a traced call does nothing for them. Each counter is
 * one aligned 64-bit word, read whole; the four together are not one snapshot. */
#define CUHOOK_AGENT_CONTROL_MAGIC 0x326c7463u /* "ctl2": this layout (with the counters) */
struct cuhook_agent_control {
	uint32_t magic;          /* CUHOOK_AGENT_CONTROL_MAGIC: this layout */
	uint32_t flight;         /* 1 while a flight-recorder session runs, else 0 */
	uint32_t dump_requests;  /* a tool adds 1 to ask for a dump */
	uint32_t dumps_written;  /* the agent adds 1 after each dump is in the trace file */
	uint32_t requests_served; /* the value of dump_requests the last dump written took: a tool
	                             that asked with value N waits until this reaches N (a dump
	                             already under way when it asked does not answer it) */
	uint32_t sessions;       /* sessions started: the counters below are the last one's */
	uint64_t events;         /* ENTRY + EXIT records written (the END block's `events` so far) */
	uint64_t counted;        /* calls of counted functions written in COUNTS blocks */
	uint64_t bytes;          /* the trace file's size */
	uint64_t dropped;        /* records dropped so far (the END block's `dropped` so far) */
};
CUHOOK_API extern volatile struct cuhook_agent_control cuhook_agent_control;

/* Notes for the trace from a tool outside the process: the cuhook injector, once an attach is
 * over and every thread runs again, tells how long it held each thread (it cannot know that
 * during the start). The tool finds this object as it finds cuhook_agent_threads, checks
 * `magic`, writes `text` (NUL-terminated) and then adds 1 to `seq`, through /proc/PID/mem; the
 * writer, at its next round or at the session's end, writes the text as a NOTE block and sets
 * `taken` to the `seq` it took. A note handed over before the session's start is dropped. */
#define CUHOOK_AGENT_INBOX_MAGIC 0x786f626eu /* "nbox" */
#define CUHOOK_AGENT_INBOX_TEXT 8192
struct cuhook_agent_inbox {
	uint32_t magic; /* CUHOOK_AGENT_INBOX_MAGIC: this layout */
	uint32_t seq;   /* the tool adds 1 after writing text */
	uint32_t taken; /* the writer: the seq of the last note it took */
	uint32_t pad;
	char text[CUHOOK_AGENT_INBOX_TEXT];
};
CUHOOK_API extern volatile struct cuhook_agent_inbox cuhook_agent_inbox;

#ifdef __cplusplus
}
#endif

#endif
