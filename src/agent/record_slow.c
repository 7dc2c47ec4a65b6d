/* The rare paths of recording, reached from record.c through cuhook_call_saving_vectors: they
 * may call libc and sleep. */
#include "record.h"
#include "clock_read.h"

#include "flight.h"
#include "hook_table.h"
#include "thread_state.h"
#include "to_writer.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uintptr_t record_wait_for_space(void *p)
{
	const struct ring_wait_arg *a = p;
	struct ring *r = a->ring;
	/* Lossless mode: wait for the writer to drain, on the futex of the tail's low half, which
	 * the writer wakes when it moves the tail while we wait (writer.c): no sleep quanta that
	 * outlast the wait. Give up (the record is dropped and counted) only if the writer is
	 * gone; the timeout only bounds how long a writer that dies unseen could keep us. */
	uint32_t *word = (uint32_t *)&r->tail; /* x86-64: the low half */
	while (__atomic_load_n(a->writer_alive, __ATOMIC_ACQUIRE)) {
		uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
		if (tail >= a->want_tail)
			break;
		writer_wake();
		__atomic_store_n(&r->tail_waiting, 1, __ATOMIC_SEQ_CST);
		/* Dekker with the writer: our flag before its tail, its tail before our flag */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
		if (tail < a->want_tail) {
			struct timespec ts = {0, 20 * 1000 * 1000};
			syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, (uint32_t)tail, &ts, NULL, 0);
		}
		__atomic_store_n(&r->tail_waiting, 0, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) >= a->want_tail;
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

uintptr_t record_run_callback(void *callback_arg)
{
	const struct callback_arg *a = callback_arg;
	const struct hook_calls *hc = &hooks_calls[a->id];
	if (hc->on_exit)
		hc->on_exit();
	if (hc->on_return)
		hc->on_return(a->args, a->ret);
	return 0;
}

uintptr_t record_monotonic_ns(void *unused)
{
	(void)unused;
	return monotonic_ns();
}

uintptr_t record_flight_trigger(void *p)
{
	const struct flight_arg *a = p;
	flight_trigger(a->why, a->func);
	return 0;
}
