/* State the agent's parts share: the libraries it patched and the lock that serialises
 * patching against the writer's reading of the hook table (slow paths only, never per call). */
#ifndef CUHOOK_AGENT_STATE_H
#define CUHOOK_AGENT_STATE_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "thread_state.h"

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

/* Counted functions (HOOK_COUNT): the hook id behind each counter slot of the rings, slots
 * [0, agent_count_slots) in use. A slot, once given to an id, stays its own (a later session
 * may record that function again, and count it again in the same slot). Under agent_lock. */
extern uint32_t agent_count_func[RING_COUNT_SLOTS];
extern uint32_t agent_count_slots;

struct hook_classifier;
/* How a traced function's calls are recorded (the count, stacks and flight options): the
 * classifier of every library the agent patches (hook_table.h). Under agent_lock. */
extern const struct hook_classifier agent_classifier;

/* Patch every loaded library that matches the configuration and is not patched yet.
 * Called at start and after every dlopen. Takes agent_lock. */
void agent_scan_libraries(void);

/* A message: level 0 goes to stderr with CUHOOK_VERBOSE; 1 also becomes an info NOTE in the
 * trace; 2 a warning NOTE, and always goes to stderr. */
void agent_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The writer could not write the trace (errno err: a full disk...) and tracing stopped. Said on
 * stderr when that is the operator's (constructor mode, cuhook run), and kept for the answer of
 * cuhook_agent_stop() (cuhook attach, where stderr=0: the process's stderr is someone else's).
 * Called on the writer thread. */
void agent_trace_failed(int err);

#endif
