/* The one translation from the hook engine's status codes (src/trampoline/patch_status.h) to the
 * trace file's (trace_format.h enum cuhook_patch_status): the function table the writer writes,
 * the agent's refusal messages, and the offline tools that name a refusal as a trace would
 * (cuhook funcs, the relocation checker). Every engine code has its own trace code
 * (tests/unit/test_patch_status_map.c checks it); the trace file's values never change. */
#ifndef CUHOOK_PATCH_STATUS_MAP_H
#define CUHOOK_PATCH_STATUS_MAP_H

#include <stdint.h>

#include "patch_status.h"
#include "trace_format.h"

_Static_assert((int)PATCH_STATUS_COUNT == (int)CUHOOK_STATUS_COUNT, "one trace code for each engine code");

/* enum cuhook_patch_status of an engine status (enum patch_status); out of range: no memory,
 * which cannot happen for a code the engine gave. */
static inline uint16_t patch_status_trace(int status)
{
	static const uint16_t map[PATCH_STATUS_COUNT] = {
		[PATCH_OK] = CUHOOK_PATCHED,
		[PATCH_TOO_SMALL] = CUHOOK_REFUSED_TOO_SMALL,
		[PATCH_UNDECODABLE] = CUHOOK_REFUSED_UNDECODABLE,
		[PATCH_BRANCH_INTO_PATCH] = CUHOOK_REFUSED_BRANCH_INTO_PATCH,
		[PATCH_UNRELOCATABLE] = CUHOOK_REFUSED_UNRELOCATABLE,
		[PATCH_RET_IN_PATCH] = CUHOOK_REFUSED_RET_IN_PATCH,
		[PATCH_OUT_OF_RANGE] = CUHOOK_REFUSED_OUT_OF_RANGE,
		[PATCH_NOT_ATOMIC] = CUHOOK_REFUSED_NOT_ATOMIC,
		[PATCH_PROTECT] = CUHOOK_REFUSED_PROTECT,
		[PATCH_ALIAS] = CUHOOK_REFUSED_ALIAS,
		[PATCH_FILTERED] = CUHOOK_SKIPPED_FILTER,
		[PATCH_NO_MEMORY] = CUHOOK_REFUSED_NO_MEMORY,
	};
	return status >= 0 && status < PATCH_STATUS_COUNT ? map[status] : CUHOOK_REFUSED_NO_MEMORY;
}

/* What the trace calls an engine status (cuhook_patch_status_names). */
static inline const char *patch_status_name(int status)
{
	return cuhook_patch_status_names[patch_status_trace(status)];
}

#endif
