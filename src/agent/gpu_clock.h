/* The clock CUPTI stamps its records with (cuptiActivityRegisterTimestampCallback), and its way
 * back to the trace's clock.
 *
 * CUPTI wants nanoseconds; the trace's events are rdtsc ticks (clock=tsc, the default) or
 * CLOCK_MONOTONIC nanoseconds (clock=monotonic). With ticks, the callback answers
 * ns(t) = t * mul / 2^32, mul fixed at the session's start (gpu_clock_calibrate: ns per tick
 * measured against CLOCK_MONOTONIC), one rdtsc and one multiplication: no system call, no lock,
 * since CUPTI calls it inside every submitting call of the program. The writer puts every
 * CUPTI timestamp back on the trace's clock with gpu_clock_to_trace, the exact inverse of ns()
 * on its values: the first tick t' with ns(t') == ns(t), so t' <= t and t - t' is less than one
 * nanosecond's worth of ticks. An API record's end comes back at or before the tick CUPTI read
 * it at, so before cuhook's own exit reading of the same call (taken after the function
 * returned); its start comes back less than a nanosecond before CUPTI's reading, which the
 * driver takes well after cuhook's entry reading (the stub, then the driver's own prologue, run
 * in between). With clock=monotonic both ways are the identity. */
#ifndef CUHOOK_GPU_CLOCK_H
#define CUHOOK_GPU_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

struct gpu_clock {
	uint64_t mul;   /* nanoseconds per tick, times 2^32 */
	bool identity;  /* the trace's clock is nanoseconds already */
};

static inline uint64_t gpu_clock_ns(const struct gpu_clock *c, uint64_t t)
{
	return c->identity ? t : (uint64_t)(((unsigned __int128)t * c->mul) >> 32);
}

/* The first trace-clock value whose nanoseconds are ns (0 stays 0: CUPTI's "not known"). */
uint64_t gpu_clock_to_trace(const struct gpu_clock *c, uint64_t ns);

/* Measure ns per tick over `ms` milliseconds against CLOCK_MONOTONIC (sleeps meanwhile).
 * monotonic: the trace's clock is CLOCK_MONOTONIC (identity). 0, or -1 when the ticks did not
 * advance (no usable TSC). */
int gpu_clock_calibrate(struct gpu_clock *c, bool monotonic, unsigned ms);

#endif
