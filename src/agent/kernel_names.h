/* Kernel names for launches whose handles the program looked up before tracing began (an
 * attach), and the kernels of executable graphs, so that a report can name every launch.
 *
 * - A successful launch enqueues its handle (kernel_names_hot.h: lock-free, on the traced
 *   path). The agent's names thread, "cuhook-names", asks the driver for the name of each new
 *   handle once (cuFuncGetName, else cuKernelGetName), through the functions' relocated
 *   prologues (never through the hooks: nothing it calls is recorded), and only for a handle a
 *   launch used with no module or library unload seen since; a failed query is skipped. Its
 *   answers go to the writer through a single-producer ring; the writer puts them in KNAMES
 *   blocks.
 * - A successful cuGraphInstantiate* or cuGraphExecUpdate* lists the graph's kernel nodes on the
 *   calling thread, at its exit (cuGraphGetNodes, cuGraphNodeGetType,
 *   cuGraphKernelNodeGetParams_v2): the program may destroy the graph as soon as the call
 *   returns (PyTorch does), so the names thread would be too late. The listing goes into an
 *   append-only arena that the writer puts in GRAPHS blocks (every file gets them all).
 * - A successful cuGraphLaunch hands its executable graph to a second table (kernel_names_hot.h);
 *   one with no listing (instantiated before tracing began) opens the names window: a GPU
 *   session of CUPTI's kernel records for a while (kernel_names.c, gpu_activity.h). */
#ifndef CUHOOK_KERNEL_NAMES_H
#define CUHOOK_KERNEL_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel_names_hot.h"

/* enum kn_role for a traced function's name. */
uint8_t kernel_names_role(const char *name);

struct cuhook_config;
/* Start the names thread (while the program's threads run), polling every c->flush_ms; the
 * names window (c->names_window_ms, never with c->gpu) opens when a graph instantiated before
 * tracing began is launched. */
void kernel_names_prepare(const struct cuhook_config *c);

/* Find the driver functions the agent calls (after libraries were patched; agent_lock held). */
void kernel_names_resolve(void);

/* The session ends: the names thread leaves; wait (the program's threads run): for at most
 * 200 ms, until it is gone. */
void kernel_names_stop(bool wait);

/* fork(): the child has no names thread (a follow=1 child's launches are not named). */
void kernel_names_after_fork_child(void);

/* A new trace file: every name and graph is given to it again. */
void kernel_names_new_file(void);

/* The exit of a successful graph instantiation or update (record.c, through
 * cuhook_call_saving_vectors): struct kn_graph_arg. */
struct kn_graph_arg {
	uint64_t exec;
	uint64_t graph;
};
uintptr_t kernel_names_graph(void *kn_graph_arg);

/* The writer's round: KNAMES and GRAPHS blocks for what is new, through put (the writer's
 * block writer). */
typedef bool (*kn_put_fn)(uint16_t type, const void *a, size_t alen, const void *b, size_t blen);
void kernel_names_put(kn_put_fn put);

/* For the closing note, over the process's life so far: launches whose handle (or graph
 * launches whose executable graph) found no slot, graphs not listed, handles the driver named
 * by neither query (and the CUresult of the last refused cuFuncGetName). */
void kernel_names_losses(uint64_t *table_full, uint64_t *graphs_unlisted, uint64_t *names_failed, int *last_error);

#endif
