/* The agent's own threads, published by thread id in the API's cuhook_agent_threads
 * (cuhook_agent.h) for the injector, which must leave them running when it stops the process
 * and stop every other thread, whatever its name. */
#ifndef CUHOOK_OWN_THREADS_H
#define CUHOOK_OWN_THREADS_H

#include <pthread.h>

/* Called by the thread that created a thread of the agent, as soon as pthread_create returns:
 * its id takes a free slot before the new thread may have run at all (it may not run for a
 * while: under cuhook run --follow it starts stopped, until the injector lets it go). */
void own_thread_add(pthread_t t);

/* Create a thread of the agent: detached, with every signal blocked (the program's signals are
 * not for it), listed at once (own_thread_add) and named. 0, or pthread_create's error. It
 * takes glibc's locks (the thread list, the stack cache): while the program's threads run. */
int own_thread_create(pthread_t *t, void *(*fn)(void *), void *arg, const char *name);

/* Called by a thread of the agent first: its slot, if its creator could not give it one. */
void own_thread_enter(void);

/* Called by that thread last, while it still exists (its id cannot have been reused yet). */
void own_thread_leave(void);

/* fork(): the child has none of the parent's threads. */
void own_threads_after_fork_child(void);

#endif
