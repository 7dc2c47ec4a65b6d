/* The relocator: given a function's bytes, decide how many leading bytes a jump will overwrite,
 * whether that is provably safe, and produce a copy of those instructions that runs correctly at
 * another address followed by a jump back to the rest of the function.
 *
 * Pure code: no memory is mapped or written here, so it is unit-tested directly and run offline
 * on library files (`cuhook funcs LIB`). */
#ifndef CUHOOK_RELOCATE_H
#define CUHOOK_RELOCATE_H

#include <capstone.h>
#include <stddef.h>
#include <stdint.h>

#include "patch_status.h"

#define RELOC_JMP_LEN 5        /* jmp rel32: what a patch writes at the function's start */
#define RELOC_MAX_INSNS 8
#define RELOC_MAX_CODE 112     /* relocated instructions + the jump back */

struct reloc_plan {
	int status;                /* enum patch_status (patch_status.h) */
	char detail[96];           /* for a refusal: which instruction and where */
	unsigned patch_len;        /* bytes overwritten at the function start (>= RELOC_JMP_LEN) */
	unsigned n_insns;          /* instructions overwritten */
	uint8_t orig_off[RELOC_MAX_INSNS + 1]; /* instruction starts in the original, then patch_len */
	uint8_t new_off[RELOC_MAX_INSNS + 1];  /* the same instructions in the copy, then where the
	                                          jump back starts */
	uint8_t code[RELOC_MAX_CODE];
	unsigned code_len;
};

/* Plan the relocation of the function at `func_addr`, whose `func_size` bytes are readable at
 * `code`, into a copy that will live at `copy_addr`. The whole body is scanned for direct
 * branches into the overwritten bytes. Fills `plan`; returns plan->status (0 = patchable). */
int reloc_plan(csh cs, const uint8_t *code, uint64_t func_addr, size_t func_size,
               uint64_t copy_addr, struct reloc_plan *plan);

/* Encode `jmp rel32` from `from` to `to` into out[5]. Returns 0, or -1 if out of range. */
int reloc_encode_jmp32(uint8_t out[5], uint64_t from, uint64_t to);

#endif
