/* Patch libraries that are loaded after tracing started (see loader_watch.c). */
#ifndef CUHOOK_LOADER_WATCH_H
#define CUHOOK_LOADER_WATCH_H

#include <stdbool.h>

/* Hook dlopen/dlmopen so that every load is followed by agent_scan_libraries(). After
 * hooks_unpatch_all() (a stop), calling it again writes the same hooks' jumps again. */
int loader_watch_install(bool threads_stopped);

#endif
