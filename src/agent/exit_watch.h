/* Closing the trace when the process ends through _exit() (see exit_watch.c). */
#ifndef CUHOOK_EXIT_WATCH_H
#define CUHOOK_EXIT_WATCH_H

#include <stdbool.h>
#include <stdint.h>

/* Hook libc's _exit (HOOK_PROC_EXIT), in two halves as the dlopen watch (loader_watch.h):
 * prepare finds it and writes its stub the first time (dlsym, agent_lock: never with the other
 * threads stopped); arm writes its jump at every start, allocating and locking nothing, with
 * agent_lock held by the caller. 0, or -1 when _exit could not be hooked. */
int exit_watch_prepare(void (*on_exit)(void));
int exit_watch_arm(bool threads_stopped);

/* The hook's entry side, called by the C handler (through cuhook_call_saving_vectors): runs
 * prepare's on_exit, which closes this session's trace if this process started it (agent.c). */
uintptr_t exit_watch_on_exit(void *unused);

#endif
