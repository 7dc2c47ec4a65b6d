/* The flight recorder's requests and triggers (flight.h). The ring's overwriting is record.c's,
 * the dump writer.c's. */
#include "flight.h"

#include "clock_read.h"
#include "config.h"
#include "cuhook_agent.h"
#include "record.h"
#include "thread_state.h"
#include "to_writer.h"

#include <stddef.h>
#include <stdio.h>

int cuhook_flight;
struct trigger_error flight_trigger_error;
uint64_t flight_slow_ticks;

/* Read and written from outside the process (cuhook dump): the object's layout is the API. */
CUHOOK_API volatile struct cuhook_agent_control cuhook_agent_control = {.magic = CUHOOK_AGENT_CONTROL_MAGIC};

/* A trigger's state: the thread whose trigger fired first writes every ring's cut, then says it
 * is PENDING; the writer TAKES it, reads the cuts and sets it IDLE again, so a later trigger fires
 * a later dump. Cuts are never written while the writer reads them. */
enum { TRIG_IDLE, TRIG_CUTTING, TRIG_PENDING, TRIG_TAKEN };
static uint32_t trig_state;
static const char *trig_why;
static uint32_t trig_func;
static uint32_t requests_seen;  /* dump_requests as the dump under way took it */

void flight_trigger(const char *why, uint32_t func)
{
	uint32_t idle = TRIG_IDLE;
	if (!__atomic_compare_exchange_n(&trig_state, &idle, TRIG_CUTTING, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return; /* one is pending: its dump comes first, and holds this call too */
	for (struct ring *r = thread_rings(); r; r = r->next)
		__atomic_store_n(&r->cut, __atomic_load_n(&r->head, __ATOMIC_ACQUIRE), __ATOMIC_RELAXED);
	trig_why = why;
	trig_func = func;
	__atomic_store_n(&trig_state, TRIG_PENDING, __ATOMIC_RELEASE);
	writer_wake();
}

bool flight_dump_due(void)
{
	if (__atomic_load_n(&trig_state, __ATOMIC_ACQUIRE) == TRIG_PENDING)
		return true;
	return __atomic_load_n(&cuhook_agent_control.dump_requests, __ATOMIC_ACQUIRE) != requests_seen;
}

const char *flight_take_reason(uint32_t *func)
{
	uint32_t pending = TRIG_PENDING;
	requests_seen = __atomic_load_n(&cuhook_agent_control.dump_requests, __ATOMIC_ACQUIRE);
	if (__atomic_compare_exchange_n(&trig_state, &pending, TRIG_TAKEN, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
		*func = trig_func;
		return trig_why;
	}
	/* asked from outside, or at the end: every ring up to its head now */
	for (struct ring *r = thread_rings(); r; r = r->next)
		__atomic_store_n(&r->cut, __atomic_load_n(&r->head, __ATOMIC_ACQUIRE), __ATOMIC_RELAXED);
	*func = UINT32_MAX;
	return NULL;
}

void flight_cuts_read(void)
{
	uint32_t taken = TRIG_TAKEN;
	__atomic_compare_exchange_n(&trig_state, &taken, TRIG_IDLE, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

void flight_dump_written(void)
{
	__atomic_store_n(&cuhook_agent_control.requests_served, requests_seen, __ATOMIC_RELEASE);
	__atomic_add_fetch(&cuhook_agent_control.dumps_written, 1, __ATOMIC_RELEASE);
}

void flight_session(bool on)
{
	requests_seen = __atomic_load_n(&cuhook_agent_control.dump_requests, __ATOMIC_ACQUIRE);
	__atomic_store_n(&cuhook_agent_control.requests_served, requests_seen, __ATOMIC_RELEASE);
	__atomic_store_n(&trig_state, TRIG_IDLE, __ATOMIC_RELEASE);
	__atomic_store_n(&cuhook_agent_control.flight, on ? 1u : 0u, __ATOMIC_RELEASE);
}

struct trigger_slow flight_trigger_slow;

/* Trace-clock ticks in `ms` milliseconds: the TSC's rate measured against CLOCK_MONOTONIC over
 * 2 ms (off the traced path: at the preparation, and only for trigger_slow). */
static uint64_t ticks_in_ms(uint32_t ms)
{
	if (cuhook_clock_monotonic)
		return (uint64_t)ms * 1000000u;
	uint64_t n0 = monotonic_ns(), t0 = __builtin_ia32_rdtsc(), n1;
	while ((n1 = monotonic_ns()) - n0 < 2000000u)
		;
	uint64_t t1 = __builtin_ia32_rdtsc();
	return (uint64_t)((double)(t1 - t0) / (double)(n1 - n0) * 1e6 * ms);
}

int flight_configure(const struct cuhook_config *c, char *err, size_t errlen)
{
	cuhook_flight = c->flight != 0;
	if (trigger_error_parse(c->trigger_error, &flight_trigger_error, err, errlen) != 0 ||
	    trigger_slow_parse(c->trigger_slow, &flight_trigger_slow, err, errlen) != 0)
		return -1;
	if (!cuhook_flight && (flight_trigger_error.on || flight_trigger_slow.on)) {
		snprintf(err, errlen, "a trigger (trigger_error=, trigger_slow=) needs the flight recorder (flight=)");
		return -1;
	}
	if (cuhook_flight && c->gpu) {
		snprintf(err, errlen, "the flight recorder (flight=) does not record the GPU's work (gpu=1) yet");
		return -1;
	}
	cuhook_errors_to_c = flight_trigger_error.on;
	flight_slow_ticks = flight_trigger_slow.on ? ticks_in_ms(flight_trigger_slow.ms) : 0;
	return 0;
}
