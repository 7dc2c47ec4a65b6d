/* Memory for stubs within reach of a 5-byte jmp rel32 (+-2 GiB) of the functions that jump to
 * them: found by searching the gaps between this process's mappings (/proc/self/maps). */
#ifndef CUHOOK_NEAR_ALLOC_H
#define CUHOOK_NEAR_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/* Map `size` bytes (read-write, rounded up to pages) such that every byte of the block is within
 * rel32 reach of every address in [lo, hi]. Returns NULL if no such gap exists. The caller
 * flips it to read-execute once written; the block is never unmapped (threads may run in it). */
void *near_alloc(uintptr_t lo, uintptr_t hi, size_t size);

#endif
