/* The GPU session (agent option gpu=1): CUPTI's activity records of the GPU's work (kernels,
 * copies, memsets, graph kernels) and of the driver calls that submitted it, into the trace's
 * GPU blocks (trace_format.h), on the trace's clock. docs/agent.md, "The GPU side", says why
 * this mechanism and how it starts and stops.
 *
 * Nothing of it is on the traced path: CUPTI calls the agent's timestamp callback inside the
 * program's submitting calls (one rdtsc and a multiplication), and its buffer callbacks on its
 * own threads. Every call into CUPTI (which takes CUPTI's and the driver's locks) is made while
 * the program's threads run: inline at a start that prepared itself (cuhook run at the entry
 * point, constructor mode) and at the process's end; otherwise (cuhook attach) on the agent's
 * GPU thread, created by the preparation and listed among the agent's own threads, which
 * cuhook never stops, while the caller waits for it a bounded time. */
#ifndef CUHOOK_GPU_ACTIVITY_H
#define CUHOOK_GPU_ACTIVITY_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/* Where the calls into CUPTI of a preparation and a start are made:
 *  - GPU_HERE: on the calling thread (constructor mode; an injected start at a program's entry
 *    point, before any libcuda is loaded, where no thread can hold the driver's locks);
 *  - GPU_BESIDE_WAIT: on the GPU thread, the caller waiting at most GPU_PREPARE_WAIT_MS (an
 *    injector's preparation, on a thread of the program that may be inside the driver);
 *  - GPU_BESIDE: on the GPU thread, without waiting (a start with the threads stopped, which
 *    the GPU thread does as soon as they run). */
enum gpu_how { GPU_HERE, GPU_BESIDE_WAIT, GPU_BESIDE };

/* The preparation of a session (threads running): find and load CUPTI (once per process), make
 * sure no other CUPTI user owns the process. scan_libraries: the life cycle's scan of the loaded
 * libraries, run on the GPU thread after CUPTI started (it may have loaded a libcuda). */
void gpu_prepare(const struct cuhook_config *c, enum gpu_how how, void (*scan_libraries)(void));

/* The start, after the jumps are written: the clock map, the callbacks, the activity kinds and
 * the submitting functions' driver records; a GPU_SESSION block (STARTED, or why not, with a
 * warning NOTE and one line on stderr). Without a driver loaded yet (cuhook run at the entry
 * point: CUPTI has nothing to record from), it waits for gpu_driver_loaded. */
void gpu_start(enum gpu_how how, bool driver_loaded);

/* The program has just loaded its driver (the dlopen watch patched a libcuda): a start that
 * waits for it happens now, on this thread or, waited for, on the GPU thread. */
void gpu_driver_loaded(void);

/* The end, with the program's threads running (cuhook_agent_prepare_stop, the process's end,
 * the writer ending the session itself): CUPTI flushed, its kinds and driver records disabled,
 * cuptiFinalize when cuhook was its only user, a GPU_SESSION block STOPPED. Nothing when no
 * session runs. */
void gpu_stop(void);
/* gpu_stop without waiting for the GPU thread: the request it asked for, which the GPU thread
 * publishes in cuhook_agent_gpu_done once done; 0 when there is nothing to wait for (done here
 * when there is no GPU thread). */
uint32_t gpu_stop_begin(void);

/* The end of the trace with the program's threads stopped (cuhook_agent_stop without a
 * preparation of the stop): CUPTI cannot be called now. What the writer has is all the file
 * gets; a NOTE says so; the GPU thread disables CUPTI as soon as the threads run again. */
void gpu_abandon(void);

/* fork(): the child records no GPU work (the GPU thread is the parent's, and so are CUPTI's
 * buffers and the driver's state). */
void gpu_after_fork_child(void);

/* The names window (kernel_names.h), on the names thread, with no session of gpu=1: open
 * starts a session of its own on the GPU thread (CUPTI found as c->cupti and the search say)
 * and waits for it a bounded time: true when it records; close stops it and waits the same.
 * gpu_stop and gpu_abandon close the window for good; gpu_window_allow (a new session's
 * preparation) lets one open again. */
bool gpu_window_open(const struct cuhook_config *c);
void gpu_window_close(void);
void gpu_window_allow(void);

/* For the start's message: what keeps the GPU's work out of the trace when that is known by
 * now ("" when nothing does). */
const char *gpu_problem(void);

/* The writer's side: the current session (of the file being written); GPU blocks of another
 * are dropped. (gpu_cbids.h fills in the API records' function ids.) */
uint32_t gpu_session_gen(void);

#endif
