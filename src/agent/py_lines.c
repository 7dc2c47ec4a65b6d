/* Line tables of CPython code objects, 3.10 and the 3.11+ location table. The tables come from
 * a live process and are not trusted: every read is bounded by the table's length, and a table
 * that ends early or has no entry header where one should be gives -1. */
#include "py_lines.h"

int py_line_310(const uint8_t *table, size_t len, int first_line, int offset)
{
	if (offset < 0)
		return first_line;
	int line = first_line, start = 0;
	for (size_t i = 0; i + 1 < len; i += 2) {
		int end = start + table[i];
		int delta = (int8_t)table[i + 1];
		/* a -128 range has no line, but the running line is unchanged by it */
		if (delta != -128)
			line += delta;
		if (offset >= start && offset < end)
			return delta == -128 ? -1 : line;
		start = end;
	}
	return -1;
}

/* 6-bit groups, least significant first; bit 6 says another group follows. */
static int read_varint(const uint8_t *t, size_t len, size_t *i, unsigned *out)
{
	unsigned v = 0, shift = 0;
	for (;;) {
		if (*i >= len || shift > 30 || (t[*i] & 0x80))
			return -1;
		uint8_t b = t[(*i)++];
		v |= (unsigned)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	*out = v;
	return 0;
}

static int read_svarint(const uint8_t *t, size_t len, size_t *i, int *out)
{
	unsigned u;
	if (read_varint(t, len, i, &u) < 0)
		return -1;
	*out = (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
	return 0;
}

/* Codes of an entry's header (Objects/locations.md). */
enum {
	LOC_SHORT_MAX = 9,    /* 0..9: same line, one byte of columns */
	LOC_ONE_LINE_0 = 10,  /* 10..12: line delta code - 10, two bytes of columns */
	LOC_ONE_LINE_2 = 12,
	LOC_NO_COLUMNS = 13,  /* svarint line delta */
	LOC_LONG = 14,        /* svarint line delta, varint end line delta, varint columns x2 */
	LOC_NONE = 15,        /* no location */
};

int py_line_311(const uint8_t *table, size_t len, int first_line, int unit)
{
	if (unit < 0)
		return first_line;
	int line = first_line;
	long start = 0;
	size_t i = 0;
	while (i < len) {
		uint8_t h = table[i++];
		if (!(h & 0x80))
			return -1;
		unsigned code = (h >> 3) & 15;
		long end = start + (h & 7) + 1;
		int delta = 0, has_line = 1;
		unsigned skip;
		if (code <= LOC_SHORT_MAX) {
			i += 1;
		} else if (code <= LOC_ONE_LINE_2) {
			delta = (int)code - LOC_ONE_LINE_0;
			i += 2;
		} else if (code == LOC_NO_COLUMNS) {
			if (read_svarint(table, len, &i, &delta) < 0)
				return -1;
		} else if (code == LOC_LONG) {
			if (read_svarint(table, len, &i, &delta) < 0 || read_varint(table, len, &i, &skip) < 0 ||
			    read_varint(table, len, &i, &skip) < 0 || read_varint(table, len, &i, &skip) < 0)
				return -1;
		} else {
			has_line = 0;
		}
		line += delta;
		if (unit >= start && unit < end)
			return has_line ? line : -1;
		start = end;
	}
	return -1;
}
