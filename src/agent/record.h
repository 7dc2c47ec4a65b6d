/* Recording: the handlers the stubs call (record.c, the hot path) and their rare paths
 * (record_slow.c). */
#ifndef CUHOOK_RECORD_H
#define CUHOOK_RECORD_H

#include <stdint.h>

#include "clock_read.h"
#include "stub_frame.h"

struct ring;

/* Called by cuhook_entry_stub / cuhook_exit_stub. */
uintptr_t cuhook_on_entry(struct entry_frame *f);
uintptr_t cuhook_on_exit(struct exit_frame *f);

/* Called by cuhook_exit_stub's fast path, busy set, right after the EXIT record of a successful
 * call to a function with a decoder the fast path does not handle: writes its DATA record. */
struct thread_state;
struct shadow_entry;
void cuhook_exit_data(struct thread_state *ts, const struct shadow_entry *s);

/* Global switches, set by the agent (agent.c), read on every call. The first three share one
 * cache line (defined in stubs.S) with the copy of cuhook_tls's TLS offset the stubs use, so a
 * call reads one line of globals; the fast paths test recording == 1 and clock_monotonic == 0
 * with one 8-byte compare, so cuhook_recording is only ever 0 or 1. */
extern volatile int cuhook_recording;      /* record events now */
extern int cuhook_clock_monotonic;         /* timestamps from CLOCK_MONOTONIC, not rdtsc */
extern uintptr_t cuhook_tls_offset;        /* cuhook_tls's offset from the thread pointer */
/* cuhook_tls_ring_offset: stub_frame.h (the count thunks read it too) */
extern int cuhook_lossy;                   /* CUHOOK_DROP: drop instead of waiting */
extern int cuhook_errors_to_c;             /* the exit stub sends calls that returned nonzero to
                                              C (a flight-recorder trigger, flight.h); in stubs.S */

/* Now, on the clock of the trace's events (trace_format.h: the file's clock source); off the
 * traced path (the stubs read their own). */
static inline uint64_t trace_clock_now(void)
{
	return cuhook_clock_monotonic ? monotonic_ns() : __builtin_ia32_rdtsc();
}
extern volatile int cuhook_writer_alive;   /* a writer drains the rings */
extern volatile uint32_t cuhook_session;   /* + 1 at each session started (writer_start) */

/* hooks_hot[].fast_out for a decoder: nonzero when the exit fast path can write its one value
 * inline in the EXIT record (one out-parameter, no string). */
uint8_t record_fast_out(uint16_t decoder);

/* Rare paths, called through cuhook_call_saving_vectors (record_slow.c). */
struct ring_wait_arg {
	struct ring *ring;
	uint64_t want_tail;  /* the writer's tail that makes room (record.c, ring_reserve) */
	const volatile int *writer_alive; /* &cuhook_writer_alive: waiting ends when it is 0 */
};
uintptr_t record_wait_for_space(void *ring_wait_arg);
uintptr_t record_kick_writer(void *unused);
uintptr_t record_ask_populate(void *unused);
/* A HOOK_CALLBACK function returned: its on_exit and on_return (hook_table.h hooks_calls) run. */
struct callback_arg {
	uint32_t id;
	const uint64_t *args; /* the first argument registers (shadow entry), or NULL if not kept */
	uint64_t ret;         /* rax */
};
uintptr_t record_run_callback(void *callback_arg);
uintptr_t record_monotonic_ns(void *unused);
struct flight_arg {
	const char *why;
	uint32_t func;
};
uintptr_t record_flight_trigger(void *flight_arg);

#endif
