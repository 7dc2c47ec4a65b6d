/* The agent's own threads by id (own_threads.h). Lock-free: a slot is taken and given back with
 * a compare-and-swap, and the generation counts the changes, so that the injector, reading the
 * array from outside while it changes, knows whether its copy is consistent. */
#include "own_threads.h"

#include "cuhook_agent.h"

#include <signal.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

CUHOOK_API struct cuhook_agent_threads cuhook_agent_threads = {.magic = CUHOOK_AGENT_THREADS_MAGIC};

static bool listed(int32_t tid)
{
	for (unsigned i = 0; i < CUHOOK_AGENT_THREADS_MAX; i++)
		if (__atomic_load_n(&cuhook_agent_threads.tid[i], __ATOMIC_RELAXED) == tid)
			return true;
	return false;
}

/* Replace `from` by `to` in the first slot that holds it (every slot: all). */
static void swap_slots(int32_t from, int32_t to, bool all)
{
	for (unsigned i = 0; i < CUHOOK_AGENT_THREADS_MAX; i++) {
		int32_t want = from;
		if (__atomic_compare_exchange_n(&cuhook_agent_threads.tid[i], &want, to, false, __ATOMIC_RELEASE,
		                                __ATOMIC_RELAXED)) {
			__atomic_add_fetch(&cuhook_agent_threads.generation, 1, __ATOMIC_RELEASE);
			if (!all)
				return;
		}
	}
	/* No free slot: cannot happen, the agent runs its writer, and its GPU thread with gpu=1
	 * (gpu_activity.c); one more writer while a closing writer leaves and a new one starts, or
	 * while a preparation's waiting writer, discarded, leaves and the next preparation's
	 * starts. */
}

/* The creator and the thread itself may both add it, even at once: a duplicate slot is
 * harmless, since the thread's leaving clears every slot with its id. */
static void add(int32_t tid)
{
	if (tid > 0 && !listed(tid))
		swap_slots(0, tid, false);
}

void own_thread_add(pthread_t t)
{
	/* The thread's id, from its CPU-time clock: the kernel's encoding of a thread clock is
	 * (~tid << 3) | 6 (CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED), which glibc and musl build from the
	 * id the kernel stored at the thread's creation. */
	clockid_t c;
	if (pthread_getcpuclockid(t, &c) == 0 && (c & 7) == 6)
		add((int32_t)~(c >> 3));
}

int own_thread_create(pthread_t *t, void *(*fn)(void *), void *arg, const char *name)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return rc;
	/* It runs until it leaves by itself, which it cannot have done before it is listed: the
	 * handle is valid. Listed before it may even have run; its name is for people only. */
	own_thread_add(*t);
	pthread_setname_np(*t, name);
	return 0;
}

void own_thread_enter(void)
{
	add((int32_t)gettid());
}

void own_thread_leave(void)
{
	swap_slots((int32_t)gettid(), 0, true);
}

void own_threads_after_fork_child(void)
{
	for (unsigned i = 0; i < CUHOOK_AGENT_THREADS_MAX; i++)
		__atomic_store_n(&cuhook_agent_threads.tid[i], 0, __ATOMIC_RELAXED);
	__atomic_add_fetch(&cuhook_agent_threads.generation, 1, __ATOMIC_RELEASE);
}
