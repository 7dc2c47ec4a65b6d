/* Text built up in a fixed buffer: shared by the trace reader (tr_call_format_data) and the
 * report. Defined in put.c. */
#ifndef CUHOOK_PUT_H
#define CUHOOK_PUT_H

#include <stddef.h>

/* Append printf-style text at buf+pos, never past len-1 (always NUL-terminated); returns the new
 * position, which stays below len. */
size_t rp_put(char *buf, size_t len, size_t pos, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
