/* Where a function without a symbol begins and ends, in a loaded object: from the unwind table
 * the compiler emitted for it (PT_GNU_EH_FRAME: the sorted search table of .eh_frame_hdr and
 * the FDE it points to, whose pc_begin and pc_range are the function's exact extent). The
 * functions behind cuGetExportTable's tables have no symbol; the relocation planner must scan
 * a function's whole body (relocate.h), so it needs this extent, or refuses.
 *
 * Reads the object's mapped memory only: no file, no allocation, no lock. Every address read
 * is checked to lie inside one of the object's PT_LOAD segments first. */
#ifndef CUHOOK_FUNC_EXTENT_H
#define CUHOOK_FUNC_EXTENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Is [addr, addr+len) inside one loaded segment of the object (executable ones only when
 * exec)? */
bool object_contains(uintptr_t base, const void *phdr, unsigned phnum, uintptr_t addr, size_t len, bool exec);

/* The function that begins at `addr`: 0 with *size set; -1 with *why set (a fixed string:
 * no unwind table, no entry covers the address, the entry begins elsewhere, a malformed
 * entry). */
int func_extent(uintptr_t base, const void *phdr, unsigned phnum, uintptr_t addr, size_t *size,
                const char **why);

#endif
