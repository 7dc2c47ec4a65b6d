/* Which API functions submit GPU work, by name: the rule the agent uses to choose CUPTI's API
 * records (gpu_cbids.c) and the reader uses to find the traced driver call inside a CUDA runtime
 * API record (report/gpu_link.c). One rule for both sides, so that what the agent keeps is what
 * the reader looks for. */
#ifndef CUHOOK_GPU_SUBMIT_H
#define CUHOOK_GPU_SUBMIT_H

#include <stdbool.h>

/* A driver function (cuLaunch*, cuMemcpy*, cuMemset*, cuGraphLaunch*). */
bool cuhook_driver_submits(const char *name);

/* A CUDA runtime function (cudaLaunch*, cudaMemcpy*, cudaMemset*, cudaGraphLaunch*): one that
 * calls a submitting driver function for the work it starts. */
bool cuhook_runtime_submits(const char *name);

#endif
