#include "export_table.h"

#include "func_extent.h"

int export_table_slots(uintptr_t base, const void *phdr, unsigned phnum, const uint64_t *table, unsigned *first,
                       unsigned *end, const char **why)
{
	uintptr_t t = (uintptr_t)table;
	if (!t || (t & 7) || !object_contains(base, phdr, phnum, t, 8, false)) {
		*why = "the table is not in the driver's loaded segments";
		return -1;
	}
	uint64_t w0 = table[0];
	if (object_contains(base, phdr, phnum, (uintptr_t)w0, 1, true)) {
		unsigned n = 0;
		while (n < EXPORT_TABLE_MAX_SLOTS && object_contains(base, phdr, phnum, t + 8 * n, 8, false) &&
		       object_contains(base, phdr, phnum, (uintptr_t)table[n], 1, true))
			n++;
		*first = 0;
		*end = n;
		return 0;
	}
	if (w0 >= 16 && w0 % 8 == 0 && w0 / 8 <= EXPORT_TABLE_MAX_SLOTS &&
	    object_contains(base, phdr, phnum, t, (size_t)w0, false)) {
		*first = 1;
		*end = (unsigned)(w0 / 8);
		return 0;
	}
	*why = "its first word is neither a size (a multiple of 8, within the driver's segments) nor a function of "
	       "the driver";
	return -1;
}
