/* A process that ends with _exit() runs no destructor: Python's multiprocessing workers end
 * with os._exit, and a fork child traced under follow=1 then left a trace without its last
 * flush interval (the writer's 50 ms) and without the END block, as after SIGKILL. The agent
 * hooks libc's _exit with the patching engine (an internal hook, not recorded) and closes the
 * trace at its entry, as the destructor would, before the call goes on into the kernel.
 *
 * Only the process that started the session does: a vfork or posix_spawn child shares the
 * parent's memory, agent included, and calls _exit when its exec fails; it must leave the
 * parent's trace alone (the close agent.c gives exit_watch_prepare compares the pid). And the
 * close never waits long: a writer held up behind a lock that the exiting thread holds (an
 * _exit from a signal handler that interrupted the agent) must not keep the process from
 * ending. exit() reaches _exit too,
 * after the destructor closed the trace: nothing is left to do then. */
#include "exit_watch.h"

#include "agent_state.h"
#include "hook_table.h"
#include "libc_symbol.h"

static int installed_id = -1;
static void (*handler)(void); /* exit_watch_prepare's on_exit */

uintptr_t exit_watch_on_exit(void *unused)
{
	(void)unused;
	void (*h)(void) = __atomic_load_n(&handler, __ATOMIC_ACQUIRE);
	if (h)
		h();
	return 0;
}

int exit_watch_prepare(void (*on_exit)(void))
{
	__atomic_store_n(&handler, on_exit, __ATOMIC_RELEASE);
	if (installed_id >= 0)
		return 0;
	uintptr_t addr;
	size_t size;
	Dl_info info;
	if (libc_symbol("_exit", &addr, &size, &info) != 0)
		return -1;
	pthread_mutex_lock(&agent_lock);
	uint32_t lib = 0; /* listed with the library of the dlopen watch when there is one */
	for (unsigned i = 0; i < agent_nlibs; i++)
		if (agent_libs[i].internal && agent_libs[i].base == (uintptr_t)info.dli_fbase)
			lib = agent_libs[i].lib_id;
	installed_id = hook_plan_internal("_exit", addr, size, HOOK_PROC_EXIT, 0, 0, lib, NULL);
	pthread_mutex_unlock(&agent_lock);
	return installed_id >= 0 ? 0 : -1;
}

int exit_watch_arm(bool threads_stopped)
{
	struct patch_request how = hook_request(threads_stopped, NULL);
	return installed_id >= 0 ? patch_rearm_one((uint32_t)installed_id, &how) : -1;
}
