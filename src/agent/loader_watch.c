/* Noticing libraries loaded after the agent started. The CUDA runtime dlopens libcuda late,
 * long after a constructor or an attach ran. Rather than interposing symbols (LD_PRELOAD) or
 * borrowing the debugger's r_brk breakpoint (a one-byte function, too small to patch), the
 * engine patches libc's own dlopen and dlmopen: after each returns, the loaded objects are
 * scanned again and new matches patched before the caller can dlsym anything from them. */
#include "loader_watch.h"

#include "agent_state.h"
#include "hook_table.h"
#include "libc_symbol.h"

#include <string.h>

static int installed_ids[2] = {-1, -1};
static void (*on_load)(void); /* loader_watch_prepare's */

static void after_dlopen(void)
{
	if (on_load)
		on_load();
}

/* Plan the hook of one loader function, the first time (its stub is reused after). */
static int plan(unsigned slot, const char *name)
{
	if (installed_ids[slot] >= 0)
		return 0;
	uintptr_t addr;
	size_t size;
	Dl_info info;
	if (libc_symbol(name, &addr, &size, &info) != 0)
		return -1;
	int id = hook_plan_internal(name, addr, size, HOOK_CALLBACK, 0, 0, 0, after_dlopen);
	installed_ids[slot] = id;
	if (id < 0)
		return -1;
	/* List the library in the trace as internal (once for both hooks), so that the function
	 * table stays complete. */
	for (unsigned i = 0; i < agent_nlibs; i++)
		if (agent_libs[i].internal && agent_libs[i].base == (uintptr_t)info.dli_fbase) {
			patch_sites[id].lib_id = agent_libs[i].lib_id;
			return 0;
		}
	if (agent_nlibs < AGENT_MAX_LIBS) {
		struct agent_lib *l = &agent_libs[agent_nlibs];
		memset(l, 0, sizeof(*l));
		l->lib_id = agent_nlibs + 1;
		l->base = (uintptr_t)info.dli_fbase;
		l->first_id = (uint32_t)id;
		l->count = 1;
		l->internal = true;
		strncpy(l->path, info.dli_fname ? info.dli_fname : "?", sizeof(l->path) - 1);
		patch_sites[id].lib_id = l->lib_id;
		agent_nlibs++;
	}
	return 0;
}

int loader_watch_prepare(void (*scan)(void))
{
	on_load = scan;
	pthread_mutex_lock(&agent_lock);
	int rc = plan(0, "dlopen");
	plan(1, "dlmopen"); /* rare; not fatal */
	pthread_mutex_unlock(&agent_lock);
	return rc;
}

int loader_watch_arm(bool threads_stopped)
{
	struct patch_request how = hook_request(threads_stopped, NULL);
	int rc = installed_ids[0] >= 0 ? patch_rearm_one((uint32_t)installed_ids[0], &how) : -1;
	if (installed_ids[1] >= 0)
		patch_rearm_one((uint32_t)installed_ids[1], &how);
	return rc;
}
