/* The flight recorder (agent option flight=SIZE): every thread's ring keeps its newest records,
 * overwriting its oldest segment instead of waiting for the writer, and the writer writes
 * nothing until a dump: asked from outside (cuhook_agent_control, cuhook dump PID), by a trigger
 * (a traced call that returned an error, trigger_error=; a call that took too long,
 * trigger_slow=), or at the program's exit. */
#ifndef CUHOOK_FLIGHT_H
#define CUHOOK_FLIGHT_H

#include <stdbool.h>
#include <stdint.h>

#include "trigger_spec.h"

/* Set by the agent before a session starts, read on the rare paths (record.c). */
extern int cuhook_flight;                       /* 1: the rings overwrite, the writer waits for dumps */
extern struct trigger_error flight_trigger_error;
extern uint64_t flight_slow_ticks;              /* trigger_slow's MS on the trace clock, 0 off */

/* A trigger fired on this thread: every ring's head now is the cut of the dump the writer
 * makes next (what every thread had recorded when the trigger fired, and nothing after). No
 * lock, no allocation; a futex wake. `why` is a static string for the dump's NOTE. */
void flight_trigger(const char *why, uint32_t func);

/* Writer: is a dump due (asked from outside, by a trigger, or `at_exit`)? Takes the request. */
bool flight_dump_due(void);
/* Writer: the cut and reason of the pending trigger, if one fired (else the heads now). */
const char *flight_take_reason(uint32_t *func);
/* Writer: a dump is in the file. */
void flight_dump_written(void);

#endif
