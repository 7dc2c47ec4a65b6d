/* The agent's CLOCK_MONOTONIC readings off the traced path (the stubs read their own clock), in
 * one place; record.h's trace_clock_now() is "now" on the trace's clock. */
#ifndef CUHOOK_CLOCK_READ_H
#define CUHOOK_CLOCK_READ_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds (through the vDSO: no lock, no system call). */
static inline uint64_t monotonic_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* A step that ended now: its time since *t into *figure, for an injector that reads the agent's
 * step figures (cuhook_agent_stop_ns, cuhook_agent_gpu_stop_ns); t moves on to now. */
static inline void monotonic_step(volatile uint64_t *figure, uint64_t *t)
{
	uint64_t now = monotonic_ns();
	*figure = now - *t;
	*t = now;
}

#endif
