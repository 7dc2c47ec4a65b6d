#include "gpu_clock.h"
#include "clock_read.h"

#include <time.h>

uint64_t gpu_clock_to_trace(const struct gpu_clock *c, uint64_t ns)
{
	if (c->identity || !ns || !c->mul)
		return ns;
	/* the least t with t * mul >= ns * 2^32 */
	unsigned __int128 scaled = (unsigned __int128)ns << 32;
	return (uint64_t)((scaled + c->mul - 1) / c->mul);
}


/* A tick and a CLOCK_MONOTONIC reading taken together: the tick halfway between two readings
 * around it. */
static void pair(uint64_t *tick, uint64_t *ns)
{
	uint64_t a = __builtin_ia32_rdtsc();
	*ns = monotonic_ns();
	uint64_t b = __builtin_ia32_rdtsc();
	*tick = a + (b - a) / 2;
}

int gpu_clock_calibrate(struct gpu_clock *c, bool monotonic, unsigned ms)
{
	c->identity = monotonic;
	c->mul = 0;
	if (monotonic)
		return 0;
	uint64_t t0, n0, t1, n1;
	pair(&t0, &n0);
	struct timespec d = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L}, left;
	while (nanosleep(&d, &left) != 0)
		d = left;
	pair(&t1, &n1);
	if (t1 <= t0 || n1 <= n0)
		return -1;
	c->mul = (uint64_t)(((unsigned __int128)(n1 - n0) << 32) / (t1 - t0));
	return c->mul ? 0 : -1;
}
