/* The flight recorder (agent option flight=SIZE): every thread's ring keeps its newest records,
 * overwriting its oldest segment instead of waiting for the writer, and the writer writes
 * nothing until a dump: asked from outside (cuhook_agent_control, cuhook dump PID), by a trigger
 * (a traced call that returned an error, trigger_error=; a call that took too long,
 * trigger_slow=), or at the program's exit. */
#ifndef CUHOOK_FLIGHT_H
#define CUHOOK_FLIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trigger_spec.h"

/* Set by the agent before a session starts, read on the rare paths (record.c). */
extern int cuhook_flight;                       /* 1: the rings overwrite, the writer waits for dumps */
extern struct trigger_error flight_trigger_error;
extern uint64_t flight_slow_ticks;              /* trigger_slow's MS on the trace clock, 0 off */

struct cuhook_config;
extern struct trigger_slow flight_trigger_slow;  /* its globs mark functions HOOK_SLOW */

/* From the session's options: the mode, the triggers. 0, or -1 with a message (a trigger without
 * flight=, flight= with gpu=1). */
int flight_configure(const struct cuhook_config *c, char *err, size_t errlen);

/* A trigger fired on this thread: every ring's head now is the cut of the dump the writer
 * makes next (what every thread had recorded when the trigger fired, and nothing after). No
 * lock, no allocation; a futex wake. `why` is a static string for the dump's NOTE. */
void flight_trigger(const char *why, uint32_t func);

/* Writer: is a dump due (asked from outside, or by a trigger)? */
bool flight_dump_due(void);
/* Writer, starting a dump: every ring's `cut` says where it ends. A trigger that fired set them
 * at that moment: returns its reason and the function (*func), and the cuts stay the writer's
 * until flight_cuts_read(). Otherwise (asked from outside, or the end) they are set to the
 * heads now and it returns NULL, *func UINT32_MAX. Either way the outside request is taken. */
const char *flight_take_reason(uint32_t *func);
void flight_cuts_read(void);
/* Writer: a dump is in the file. */
void flight_dump_written(void);
/* A session starts (on: in flight mode) or ends: the requests seen so far are not for it. */
void flight_session(bool on);

#endif
