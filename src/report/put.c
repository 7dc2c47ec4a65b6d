/* rp_put (put.h): text built up in a fixed buffer. A file of its own below both the trace reader
 * and the report's formatting helpers (util.c), so that the reader depends on neither. */
#include "put.h"

#include <stdarg.h>
#include <stdio.h>

size_t rp_put(char *buf, size_t len, size_t pos, const char *fmt, ...)
{
	if (pos + 1 >= len)
		return pos;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf + pos, len - pos, fmt, ap);
	va_end(ap);
	if (n < 0)
		return pos;
	return pos + (size_t)n < len ? pos + (size_t)n : len - 1;
}
