/* The library registry: the loaded libraries the agent patches (agent_state.h agent_libs), found
 * by scanning the loaded objects, and how each of their functions is traced (the classifier of
 * every library patched: recorded, counted, with stacks, watched by the flight recorder). */
#ifndef CUHOOK_LIB_REGISTRY_H
#define CUHOOK_LIB_REGISTRY_H

#include <stdbool.h>

#include "config.h"

/* A new session's options (kept by pointer: the life cycle's, for the process's life). */
void registry_configure(const struct cuhook_config *c);

/* Patch every loaded library that matches the configuration and is not patched yet.
 * plan_only (a preparation): plan them, or, known from an earlier session (unpatched since its
 * stop), plan what this session's options add and classify their functions again; the start
 * writes their jumps (registry_arm). It also takes the snapshot of every loaded object that
 * the start checks (loaded_objects.h). Else (a library loaded while tracing): patch it at once.
 * Takes agent_lock. */
void registry_scan(bool plan_only);

/* The start: write the jumps of the libraries the preparation planned. Under agent_lock. */
void registry_arm(void);

/* A library the agent traces (libcuda) is patched. */
bool registry_driver_patched(void);

#endif
