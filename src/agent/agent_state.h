/* The agent's shared state, in one place: the session's switches that the life cycle (agent.c)
 * sets and the other parts read, the libraries it patched, and the lock that serialises
 * patching against the writer's reading of the hook table (slow paths only, never per call).
 * The per-call switches the stubs read are record.h's; the hook table is hook_table.h's. */
#ifndef CUHOOK_AGENT_STATE_H
#define CUHOOK_AGENT_STATE_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define AGENT_MAX_LIBS 64

struct agent_lib {
	uint32_t lib_id;
	uintptr_t base;
	uint32_t first_id, count;  /* hook ids of its functions */
	bool internal;             /* hooked for cuhook's own use (dlopen watch) */
	bool ioctl;                /* libc listed for its traced ioctl (CUHOOK_LIB_IOCTL) */
	bool arm_at_start;         /* found loaded by the last preparation: the start writes its
	                              jumps */
	char path[PATH_MAX];
	char version[64];
};

extern pthread_mutex_t agent_lock;
extern struct agent_lib agent_libs[AGENT_MAX_LIBS];
extern unsigned agent_nlibs;

/* Set by the life cycle (agent.c) only. */
extern int agent_active;             /* a session is started (and not ended by the writer
                                        itself: writer_ended_itself) */
extern bool agent_prepared;          /* cuhook_agent_prepare done and no start yet: the trace
                                        file is open, its writer thread waits */
extern bool agent_threads_stopped;   /* during a start/stop with every other thread stopped */

#endif
