/* The objects the dynamic loader has loaded, as the agent's preparation saw them, and the check
 * at the start that this is still what is loaded (see loaded_objects.c). */
#ifndef CUHOOK_LOADED_OBJECTS_H
#define CUHOOK_LOADED_OBJECTS_H

#include <stdbool.h>
#include <stdint.h>

/* A new snapshot, filled by the preparation's dl_iterate_phdr walk: begin, one add per object
 * (its dlpi_addr and dlpi_name), end. Allocates nothing itself; begin may call dlsym. */
void loaded_snapshot_begin(void);
void loaded_snapshot_add(uintptr_t addr, const char *name);
void loaded_snapshot_end(void);

/* With every other thread of the process stopped: has an object been loaded or unloaded since
 * the snapshot, or is one being loaded or unloaded now? No lock, no allocation, no call into
 * the loader. False when it cannot tell (no loader debugger interface, more objects than the
 * snapshot holds). */
bool loaded_changed_since_snapshot(void);

#endif
