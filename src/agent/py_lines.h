/* The line a CPython code object's instruction belongs to, from the code object's line table
 * (co_linetable), decoded the way the interpreter itself does (PyCode_Addr2Line). Pure: no
 * reads beyond [table, table + len), no allocation, usable on the traced path. */
#ifndef CUHOOK_PY_LINES_H
#define CUHOOK_PY_LINES_H

#include <stddef.h>
#include <stdint.h>

/* CPython 3.10: (address delta in bytes, signed line delta) byte pairs; a line delta of -128
 * means "no line". `offset` is the instruction's offset in bytes. -1 where it has no line or
 * lies past the table; first_line for a negative offset (a frame not started yet). */
int py_line_310(const uint8_t *table, size_t len, int first_line, int offset);

/* CPython 3.11+: the location table (Objects/locations.md): entries of a header byte (bit 7
 * set, a 4-bit code, the length in code units - 1) and varint fields. `unit` is the
 * instruction's index in 2-byte code units. -1 where it has no line or lies past the table;
 * first_line for a negative unit. */
int py_line_311(const uint8_t *table, size_t len, int first_line, int unit);

#endif
