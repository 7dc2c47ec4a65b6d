/* CUPTI's activity records (cupti_abi.h) into the trace's GPU records (trace_format.h, "the GPU
 * side"): one job, no CUPTI call, so that the conversion is tested on records made by hand
 * (tests/unit/test_gpu_records.c). Kernel names are interned per trace file: a kernel's name
 * goes into a NAME record the first time the file needs it, and kernels carry its id.
 *
 * Used by one thread at a time (gpu_activity.c holds its converter lock): CUPTI's buffer
 * thread, or the thread that flushes CUPTI. Never on the traced path: it may allocate. */
#ifndef CUHOOK_GPU_RECORDS_H
#define CUHOOK_GPU_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "cupti_abi.h"
#include "gpu_clock.h"

/* A kernel name longer than this is cut there in its NAME record. */
#define GPU_NAME_MAX 65536u

struct gpu_name_slot;

struct gpu_conv {
	struct gpu_clock clock;      /* CUPTI's timestamps back to the trace's clock */
	struct gpu_name_slot *slots; /* open addressing, cap a power of two (0: none yet) */
	uint32_t cap, used;
	uint32_t next_id;            /* the next NAME's id: 1, 2, ... in the file */
	/* NULL: every driver-API record is kept; else only those of the cbids whose bit is set
	 * (bit cbid of keep_cbid[cbid / 8]; cbids >= keep_ncbids are dropped). A session that had
	 * to enable every driver API's records (gpu_activity.c) keeps the submitting ones. */
	const uint8_t *keep_cbid;
	uint32_t keep_ncbids;
	/* The CUDA runtime API's records (kind RUNTIME) of the cbids whose bit is set, the same way;
	 * NULL: none kept. Written as API records flagged CUHOOK_GPU_API_RUNTIME. */
	const uint8_t *keep_runtime;
	uint32_t keep_nruntime;
};

/* A new trace file: no name known yet, ids from 1 again; timestamps converted with clock; every
 * driver-API record kept (keep_cbid NULL) until the caller sets a filter. */
void gpu_conv_reset(struct gpu_conv *cv, const struct gpu_clock *clock);

/* Append the trace records of one CUPTI record at out + *len (at most cap bytes in all): a
 * NAME record first for a kernel whose name the file does not have yet, then its own record.
 * Returns how many records were appended (0: not a kind cuhook keeps), or -1 when they do not
 * fit (nothing appended, nothing interned). The func field of an API record is UINT32_MAX:
 * cuhook's function id is the writer's to fill (gpu_activity.h, gpu_api_resolve). */
int gpu_conv_record(struct gpu_conv *cv, const struct cupti_record *rec, uint8_t *out, size_t cap, size_t *len);

#endif
