/* The objects the dynamic loader has loaded, as the agent's preparation saw them.
 *
 * The preparation (cuhook_agent_prepare) scans the loaded objects with dl_iterate_phdr while
 * the program's threads run, and plans the libraries to patch; the start, later, with every
 * thread stopped, only writes jumps. A library loaded in between would be missed: its dlopen
 * ran before the dlopen watch was armed. The start cannot scan again: dl_iterate_phdr takes the
 * loader's lock, which a stopped thread may hold. It reads the loader's debugger interface
 * instead (_r_debug, the structure gdb reads from a stopped process): for each namespace, a
 * state (RT_CONSISTENT, or RT_ADD / RT_DELETE while an object is being added or removed) and
 * the list of link_maps, whose l_addr and l_name are what dl_iterate_phdr reports as dlpi_addr
 * and dlpi_name. The loader sets the state to RT_ADD / RT_DELETE before it changes a list and
 * back to RT_CONSISTENT after (with a call to _dl_debug_state in between, a compiler barrier),
 * so with every thread stopped a consistent state means a list that is whole. The start then
 * compares it with the snapshot; any difference (or a change under way) fails the start with
 * EAGAIN, and the injector prepares again. */
#include "loaded_objects.h"

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>

#define SNAPSHOT_MAX 8192 /* objects; beyond that the check cannot tell */

struct object {
	uintptr_t addr;
	const char *name;
};

static struct object seen[SNAPSHOT_MAX];
static unsigned nseen;
static bool overflow;
static struct r_debug *loader_debug; /* NULL: no such interface (the check cannot tell) */

/* r_debug_extended (glibc >= 2.35, r_version 2): one per namespace, chained. */
struct namespace_debug {
	struct r_debug base;
	struct namespace_debug *next;
};

static int by_object(const void *a, const void *b)
{
	const struct object *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->name == y->name ? 0 : (uintptr_t)x->name < (uintptr_t)y->name ? -1 : 1;
}

void loaded_snapshot_begin(void)
{
	if (!loader_debug)
		loader_debug = dlsym(RTLD_DEFAULT, "_r_debug");
	nseen = 0;
	overflow = false;
}

void loaded_snapshot_add(uintptr_t addr, const char *name)
{
	if (nseen == SNAPSHOT_MAX) {
		overflow = true;
		return;
	}
	seen[nseen++] = (struct object){addr, name};
}

void loaded_snapshot_end(void)
{
	qsort(seen, nseen, sizeof(seen[0]), by_object);
}

static bool in_snapshot(uintptr_t addr, const char *name)
{
	struct object key = {addr, name};
	size_t lo = 0, hi = nseen;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = by_object(&key, &seen[mid]);
		if (c == 0)
			return true;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return false;
}

bool loaded_changed_since_snapshot(void)
{
	if (!loader_debug || overflow)
		return false;
	unsigned found = 0, namespaces = 0;
	for (const struct namespace_debug *ns = (const void *)loader_debug; ns && namespaces < 256;
	     ns = ns->base.r_version >= 2 ? ns->next : NULL, namespaces++) {
		if (ns->base.r_state != RT_CONSISTENT)
			return true; /* an object is being added or removed right now */
		for (const struct link_map *l = ns->base.r_map; l; l = l->l_next) {
			if (!in_snapshot(l->l_addr, l->l_name) || ++found > nseen)
				return true;
		}
	}
	return found != nseen;
}
