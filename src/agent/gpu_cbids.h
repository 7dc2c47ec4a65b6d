/* The submitting functions, as CUPTI numbers them: the driver callback ids whose names
 * (cuptiGetCallbackName) begin with cuLaunch, cuMemcpy, cuMemset or cuGraphLaunch (119 in CUDA
 * 13.0), whose driver-API records the GPU session enables one by one; and, for the writer, the
 * id cuhook gave the function of the same name, to put in each API record. */
#ifndef CUHOOK_GPU_CBIDS_H
#define CUHOOK_GPU_CBIDS_H

#include <stdbool.h>
#include <stdint.h>

#include "cupti_abi.h"

/* Ask CUPTI for the names once (a session's start, every other thread free to run). */
void gpu_cbids_learn(const struct cupti_fns *f);

/* The submitting functions' callback ids: count, i-th id and name. */
unsigned gpu_cbids_count(void);
uint32_t gpu_cbid(unsigned i);
const char *gpu_cbid_name(unsigned i);

/* The same set as a bitmap (bit cbid of byte cbid / 8) over cbids below *ncbids, for
 * gpu_conv's filter (gpu_records.h). */
const uint8_t *gpu_cbids_bitmap(uint32_t *ncbids);

/* The CUDA runtime's submitting functions (cudaLaunch*, cudaMemcpy*, cudaMemset*,
 * cudaGraphLaunch*: src/format/gpu_submit.h) as a bitmap of runtime callback ids, learnt with the
 * driver's. */
const uint8_t *gpu_runtime_cbids_bitmap(uint32_t *ncbids);

/* Writer: fill the func field of the API records in data (len bytes of GPU records) with
 * cuhook's id of the function of the same name, among ids below nfuncs (those whose FUNCS
 * entries are in the file), UINT32_MAX when there is none. */
void gpu_api_resolve(uint8_t *data, uint32_t len, uint32_t nfuncs);

#endif
