/* Patch libraries that are loaded after tracing started (see loader_watch.c). */
#ifndef CUHOOK_LOADER_WATCH_H
#define CUHOOK_LOADER_WATCH_H

#include <stdbool.h>

/* Hook dlopen/dlmopen so that every load is followed by on_load() (the life cycle's scan of
 * the loaded libraries), in two halves: prepare finds them and writes their stubs (the first
 * time; it takes agent_lock and calls dlsym, so never with the other threads stopped), arm
 * writes their jumps, at every start (after patch_unpatch_all(), the same stubs again): it
 * allocates and locks nothing, and is called with agent_lock held. 0, or -1 when dlopen cannot
 * be watched. */
int loader_watch_prepare(void (*on_load)(void));
int loader_watch_arm(bool threads_stopped);

#endif
