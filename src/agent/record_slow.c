/* The rare paths of recording, reached from record.c through cuhook_call_saving_vectors: they
 * may call libc and sleep. */
#include "record.h"
#include "clock_read.h"

#include "hooks.h"
#include "thread_state.h"
#include "writer.h"

#include <time.h>

uintptr_t record_wait_for_space(void *p)
{
	const struct ring_wait_arg *a = p;
	struct ring *r = a->ring;
	/* Lossless mode: wait for the writer to drain, waking it each time. Give up (the record is
	 * dropped and counted) only if the writer is gone. */
	for (unsigned spins = 0; __atomic_load_n(&cuhook_writer_alive, __ATOMIC_ACQUIRE); spins++) {
		uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
		uint32_t to_end = r->size - ((uint32_t)r->head & (r->size - 1));
		uint32_t total = a->need <= to_end ? a->need : a->need + to_end;
		if (r->head + total - tail <= r->size)
			return 1;
		writer_wake();
		struct timespec ts = {0, spins < 10 ? 20000 : 200000};
		nanosleep(&ts, NULL);
	}
	return 0;
}

uintptr_t record_kick_writer(void *unused)
{
	(void)unused;
	writer_wake();
	return 0;
}

uintptr_t record_ask_populate(void *unused)
{
	(void)unused;
	writer_wake_populate();
	return 0;
}

uintptr_t record_run_callback(void *hook_id)
{
	void (*cb)(void) = hooks_cold[(uintptr_t)hook_id].on_exit;
	if (cb)
		cb();
	return 0;
}

uintptr_t record_monotonic_ns(void *unused)
{
	(void)unused;
	return monotonic_ns();
}
