/* MAPS blocks: the process's executable mappings with the build ids of the objects loaded there,
 * so a reader symbolizes a stack's addresses after the process is gone (trace_format.h). */
#ifndef CUHOOK_EXEC_MAPS_H
#define CUHOOK_EXEC_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Off the traced path and outside agent_lock, threads running (a start with stacks=, after each
 * dlopen the loader watch sees): learn the build ids of the loaded objects, from their
 * NT_GNU_BUILD_ID notes as loaded (dl_iterate_phdr: the loader's lock keeps them mapped while
 * read). Then publishes them under agent_lock. */
void exec_maps_learn(void);

/* The writer, under agent_lock: take the build ids published since the last call. */
void exec_maps_sync(void);

/* The writer: the executable mappings now (/proc/self/maps, no lock of the program's), as a
 * MAPS block's entries in buf (cap bytes). Returns the bytes (0: unreadable, or more than cap),
 * *count the entries, *digest a hash of the list (to tell whether it changed). */
size_t exec_maps_read(uint8_t *buf, size_t cap, uint32_t *count, uint64_t *digest);

#endif
