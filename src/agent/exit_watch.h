/* Closing the trace when the process ends through _exit() (see exit_watch.c). */
#ifndef CUHOOK_EXIT_WATCH_H
#define CUHOOK_EXIT_WATCH_H

#include <stdbool.h>
#include <stdint.h>

/* Hook libc's _exit (HOOK_PROC_EXIT). After hooks_unpatch_all() (a stop), calling it again
 * writes the same hook's jump again. Returns 0, or -1 when _exit could not be hooked. */
int exit_watch_install(bool threads_stopped);

/* The hook's entry side, called by the C handler (through cuhook_call_saving_vectors): closes
 * this session's trace if this process started it (agent.c). */
uintptr_t exit_watch_on_exit(void *unused);

#endif
