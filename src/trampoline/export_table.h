/* Reading a table cuGetExportTable returned, without trusting it: which words are its slots.
 * The agent (src/agent/export_tables.c) and the GPU machine's checker (tests/gpu/
 * export_tables_check.c) read tables the same way with it.
 *
 * Two layouts are known (the tables public projects documented): size-prefixed (word 0 is the
 * table's size in bytes, a multiple of 8; the slots are words 1 to size/8 - 1) and without a
 * size (word 0 is already a function; the slots end at the first word that is not a function
 * of the driver: a NULL or ~0 terminator). The table must lie inside the driver's loaded
 * segments; no word outside them is read. */
#ifndef CUHOOK_EXPORT_TABLE_H
#define CUHOOK_EXPORT_TABLE_H

#include <stdint.h>

#define EXPORT_TABLE_MAX_SLOTS 1024

/* The slots [*first, *end) of `table` in the loaded object (base, phdr, phnum): 0, or -1 with
 * *why set (a fixed string) when the table is not one of the two layouts. */
int export_table_slots(uintptr_t base, const void *phdr, unsigned phnum, const uint64_t *table, unsigned *first,
                       unsigned *end, const char **why);

#endif
