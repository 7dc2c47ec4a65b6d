/* Sizes as users write them: "100000", "64K", "512M", "2G" (K, M, G, T: powers of 1024; a
 * trailing "B" or "iB" is accepted). Read by the agent option codec for its sizes (max_size=,
 * CUHOOK_MAX_SIZE, `cuhook run/attach --max-size`), so the agent and cuhook accept and refuse the
 * same strings. */
#ifndef CUHOOK_BYTE_SIZE_H
#define CUHOOK_BYTE_SIZE_H

#include <stdint.h>

/* 0 and *bytes set, or -1 for anything else (empty, a sign, a fraction, an unknown suffix, more
 * than 2^64 - 1 bytes). */
int cuhook_parse_size(const char *s, uint64_t *bytes);

#endif
