/* Kernel names after the fact: the part on the traced path. A successful launch hands its
 * function handle to kn_enqueue, which only looks the handle up in a fixed open-addressed table
 * and, the first time, claims a slot with a compare-and-swap: no lock, no allocation, no system
 * call, general registers only (record.c includes it). The agent's names thread
 * (kernel_names.c) asks the driver for the name later, off the traced path.
 *
 * A slot's handle is written once (0 -> handle, by whichever thread claims it); its state moves
 * KN_PENDING -> KN_DONE on the names thread, and KN_DONE -> KN_RETRY when an unload may have
 * freed the handle (or a new file starts): the next launch of it re-arms it (KN_RETRY ->
 * KN_PENDING), so a name is only ever asked for a handle a launch has just used successfully,
 * with no unload seen since. */
#ifndef CUHOOK_KERNEL_NAMES_HOT_H
#define CUHOOK_KERNEL_NAMES_HOT_H

#include <stdbool.h>
#include <stdint.h>

#define KN_SLOTS 16384u /* distinct handles a process can have named; more are counted */
#define KN_PROBES 32u

enum { KN_CLAIMING = 0, KN_PENDING = 1, KN_DONE = 2, KN_RETRY = 3, KN_ARMING = 4 };

/* What a traced function's exit does for the names (hooks_hot[].names_role, set by the
 * classifier from kernel_names_role()). */
enum kn_role {
	KN_ROLE_NONE = 0,
	KN_ROLE_FUNC_ARG0,   /* cuLaunchKernel, cuLaunchCooperativeKernel: args[0] is the handle */
	KN_ROLE_FUNC_ARG1,   /* cuLaunchKernelEx: args[1] */
	KN_ROLE_UNLOAD,      /* cuModuleUnload, cuLibraryUnload: handles may have been freed */
	KN_ROLE_GRAPH_INST,  /* cuGraphInstantiate*: *(CUgraphExec *)args[0] made from args[1] */
	KN_ROLE_GRAPH_UPDATE, /* cuGraphExecUpdate*: args[0] now runs args[1]'s nodes */
	KN_ROLE_GRAPH_LAUNCH  /* cuGraphLaunch*: args[0] is the executable graph launched */
};

struct kn_slot {
	uint64_t handle;     /* 0: free */
	uint32_t state;      /* KN_* */
	uint32_t seq;        /* kn_unload_seq when the slot was (re-)armed */
	uint64_t name_hash;  /* the names thread's: hash of the name it last gave this file */
	uint64_t reserved;
};

extern struct kn_slot kn_table[KN_SLOTS];
extern uint32_t kn_unload_seq;   /* + 1 at every successful module or library unload */
extern uint32_t kn_pending;      /* 1: a slot was armed since the names thread last looked */
extern uint64_t kn_table_full;   /* launches whose handle found no slot */

static inline uint32_t kn_hash(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return (uint32_t)h;
}

static inline void kn_arm(struct kn_slot *s)
{
	s->seq = __atomic_load_n(&kn_unload_seq, __ATOMIC_ACQUIRE);
	__atomic_store_n(&s->state, KN_PENDING, __ATOMIC_RELEASE);
	if (!__atomic_load_n(&kn_pending, __ATOMIC_RELAXED))
		__atomic_store_n(&kn_pending, 1, __ATOMIC_RELEASE);
}

/* Handle h's slot in a table of mask + 1 slots: found, or claimed now (*claimed: the caller
 * arms it); NULL when KN_PROBES slots are taken by others. */
static inline struct kn_slot *kn_slot_of(struct kn_slot *table, uint32_t mask, uint64_t h, bool *claimed)
{
	*claimed = false;
	uint32_t i = kn_hash(h) & mask;
	for (uint32_t p = 0; p < KN_PROBES; p++, i = (i + 1) & mask) {
		struct kn_slot *s = &table[i];
		uint64_t cur = __atomic_load_n(&s->handle, __ATOMIC_ACQUIRE);
		if (cur == 0) {
			if (__atomic_compare_exchange_n(&s->handle, &cur, h, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
				*claimed = true;
				return s;
			}
			/* another thread claimed it meanwhile: cur is its handle */
		}
		if (cur == h)
			return s;
	}
	return NULL;
}

/* A launch of handle h succeeded. */
static inline void kn_enqueue(uint64_t h)
{
	if (!h)
		return;
	bool claimed;
	struct kn_slot *s = kn_slot_of(kn_table, KN_SLOTS - 1, h, &claimed);
	if (!s) {
		__atomic_add_fetch(&kn_table_full, 1, __ATOMIC_RELAXED);
		return;
	}
	if (claimed) {
		kn_arm(s);
		return;
	}
	uint32_t st = __atomic_load_n(&s->state, __ATOMIC_RELAXED);
	if (st == KN_RETRY &&
	    __atomic_compare_exchange_n(&s->state, &st, KN_ARMING, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		kn_arm(s);
}

/* Executable graphs launched: the names thread looks each one up once among the graphs listed
 * at their instantiation; one that was instantiated before tracing began (no listing) opens the
 * names window (kernel_names.h). A slot's handle is written once, by the launch that claims it;
 * its state moves KN_PENDING -> KN_DONE on the names thread. */
#define KN_EXEC_SLOTS 4096u
extern struct kn_slot kn_exec_table[KN_EXEC_SLOTS];
extern uint64_t kn_exec_table_full;   /* graph launches whose executable graph found no slot */
extern uint64_t kn_graph_launches;    /* successful graph launches (defined in record.c: the GPU
                                         session's stop asks) */

/* A launch of executable graph e succeeded. */
static inline void kn_exec_launched(uint64_t e)
{
	__atomic_add_fetch(&kn_graph_launches, 1, __ATOMIC_RELAXED);
	if (!e)
		return;
	bool claimed;
	struct kn_slot *s = kn_slot_of(kn_exec_table, KN_EXEC_SLOTS - 1, e, &claimed);
	if (!s)
		__atomic_add_fetch(&kn_exec_table_full, 1, __ATOMIC_RELAXED);
	else if (claimed)
		kn_arm(s);
}

#endif
