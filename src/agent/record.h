/* Recording: the handlers the stubs call (record.c, the hot path) and their rare paths
 * (record_slow.c). */
#ifndef CUHOOK_RECORD_H
#define CUHOOK_RECORD_H

#include <stdint.h>

#include "stub_frame.h"

struct ring;

/* Called by cuhook_entry_stub / cuhook_exit_stub. */
uintptr_t cuhook_on_entry(struct entry_frame *f);
uintptr_t cuhook_on_exit(struct exit_frame *f);

/* Called by cuhook_exit_stub's fast path, busy set, right after the EXIT record of a successful
 * call to a function with a decoder: writes its DATA record. */
struct thread_state;
struct shadow_entry;
void cuhook_exit_data(struct thread_state *ts, const struct shadow_entry *s);

/* Global switches, set by the agent (agent.c), read on every call. */
extern volatile int cuhook_recording;      /* record events now */
extern int cuhook_lossy;                   /* CUHOOK_DROP: drop instead of waiting */
extern int cuhook_clock_monotonic;         /* timestamps from CLOCK_MONOTONIC, not rdtsc */
extern volatile int cuhook_writer_alive;   /* a writer drains the rings */

/* Rare paths, called through cuhook_call_saving_vectors (record_slow.c). */
struct ring_wait_arg {
	struct ring *ring;
	uint32_t need;
};
uintptr_t record_wait_for_space(void *ring_wait_arg);
uintptr_t record_run_callback(void *hook_id);
uintptr_t record_monotonic_ns(void *unused);

#endif
