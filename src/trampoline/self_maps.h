/* Walking this process's own /proc/self/maps, with plain read(2) and a fixed buffer: it runs
 * inside other programs (no stdio of theirs disturbed, no allocation). */
#ifndef CUHOOK_SELF_MAPS_H
#define CUHOOK_SELF_MAPS_H

#include <stdbool.h>
#include <stdint.h>

/* Calls fn(start, end, rest, ctx) for each mapping in address order, `rest` being the line after
 * the range ("r-xp 00000000 00:00 0   [path]"), until fn returns true. Returns 0, or -1 when the
 * file cannot be read. */
int self_maps_each(bool (*fn)(uintptr_t start, uintptr_t end, const char *rest, void *ctx), void *ctx);

#endif
