/* Finding the functions to patch in a library that is already mapped into this process, from
 * its dynamic symbol table in memory (what the loader itself uses: no file I/O, no libelf, and
 * exactly the code that runs). */
#ifndef CUHOOK_SYMBOLS_H
#define CUHOOK_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct found_func {
	const char *name;  /* points into the library's own string table */
	uintptr_t addr;
	size_t size;
};

/* Call `fn` for every defined, exported STT_FUNC symbol of the loaded object with load bias
 * `base` and program headers `phdr`/`phnum` (from dl_iterate_phdr). IFUNC resolvers are
 * skipped (their address is not the function). Returns the number visited, or -1 if the object
 * has no usable dynamic symbol table. */
int symbols_for_each(uintptr_t base, const void *phdr, unsigned phnum,
                     void (*fn)(const struct found_func *f, void *ctx), void *ctx);

/* The exported function or object `name` of that loaded object, through its GNU hash table
 * (a linear search where it has only DT_HASH): 0 with *addr and *size (st_size) set, -1 if it
 * has none. */
int symbols_find(uintptr_t base, const void *phdr, unsigned phnum, const char *name,
                 uintptr_t *addr, size_t *size);

#endif
