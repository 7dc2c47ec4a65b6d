/* The patcher: the functions it hooks (its sites), where their relocated prologues live, and the
 * code that writes and removes the jumps.
 *
 * Every site gets a dense id. Its jump leads to its slot: a thunk that pushes the id and jumps
 * to the request's entry (the caller's code, which continues at the relocated prologue), or,
 * where the caller asked for one, a prelude of the caller's code that falls into the relocated
 * prologue. What a hooked call does is the caller's business: the engine knows nothing of it. */
#ifndef CUHOOK_PATCHER_H
#define CUHOOK_PATCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "patch_status.h"
#include "relocate.h"

#define PATCH_SITES_MAX 16384
/* A site's slot: the thunk (push $id; jmp entry), room for a prelude, then the relocated
 * prologue, which a prelude falls into. */
#define PATCH_THUNK_SIZE 24
#define PATCH_RELOCATED 48     /* offset of the relocated code; a prelude ends here */
#define PATCH_PRELUDE_MAX (PATCH_RELOCATED - PATCH_THUNK_SIZE)
#define PATCH_SLOT_SIZE 160    /* + RELOC_MAX_CODE, 16-aligned */

struct patch_site {
	const char *name;      /* owned copy */
	uintptr_t addr;
	uint32_t size;
	uint16_t status;       /* enum patch_status */
	uint16_t lib_id;       /* the caller's number for its library: a library's ids are consecutive */
	uint8_t patch_len;
	uint8_t n_insns;
	uint8_t prelude_len;   /* bytes of the prelude written before the relocated code, or 0 */
	bool to_prelude;       /* the jump (written or to write) leads to the prelude */
	uint16_t prelude_tag;  /* 0, or the caller's tag of the prelude written (never rewritten) */
	uint8_t orig[16];      /* the bytes the jump replaced */
	uint8_t orig_off[RELOC_MAX_INSNS + 1];
	uint8_t new_off[RELOC_MAX_INSNS + 1];
	bool patched;          /* the jump is in place now */
	uint8_t *slot;         /* thunk, prelude, then the relocated code */
	char detail[96];       /* refusal detail */
};

extern struct patch_site patch_sites[PATCH_SITES_MAX];
extern uint32_t patch_count; /* ids [0, patch_count) are in use */

/* Where a planned site's calls continue after the caller's code: its relocated prologue. */
static inline uintptr_t patch_relocated(uint32_t id)
{
	return (uintptr_t)patch_sites[id].slot + PATCH_RELOCATED;
}

/* How a library's functions are chosen and patched. */
struct patch_request {
	uintptr_t base;            /* load bias (dl_phdr_info.dlpi_addr) */
	const void *phdr;
	unsigned phnum;
	const char *filter;        /* glob_filter_match() patterns */
	uint32_t lib_id;
	/* Where every thunk planned by this request jumps, with the site's id pushed (a 64-bit
	 * push of the 32-bit id) above the hooked function's return address: the caller's entry
	 * code, which must end by continuing at patch_relocated(id) with the stack as it was. */
	uintptr_t entry;
	bool threads_stopped;      /* every other thread is stopped: plain writes are safe */
	int own_tid;               /* a thread of the caller's that never runs hooked code (0: none):
	                              not counted when asking whether other threads may run */
	/* Optional, for a process whose other threads may be running: stop them around the jump
	 * writes (returns 1 if all stopped, 0 if some, -1 if none) and resume them after (moving
	 * any thread found inside overwritten bytes). No allocation happens in between. */
	int (*freeze)(void);
	void (*thaw)(void);
	/* Called for each site planned, before any jump is written: `first` when its stub was just
	 * written, else (patch_replan) when it is planned again for a new request. */
	void (*classify)(uint32_t id, bool first, void *ctx);
	/* Optional, before a site's jump is written: the prelude its jump should lead to, with a
	 * nonzero tag that names it; 0 for the thunk. A prelude is up to PATCH_PRELUDE_MAX bytes
	 * of code placed to end at PATCH_RELOCATED in the site's slot, so that it falls into the
	 * relocated prologue; it may branch back to the slot's start (the thunk), and nothing else
	 * in it may depend on where it is. It is written once per site: a site asked later for a
	 * prelude of another tag keeps the thunk. */
	unsigned (*prelude)(uint32_t id, uint8_t code[PATCH_PRELUDE_MAX], uint16_t *tag, void *ctx);
	void *ctx;
};

struct patch_result {
	uint32_t first_id, count;  /* ids of every function found (patched, refused, filtered) */
	uint32_t patched, refused, filtered;
};

/* Patch every exported function of one loaded library that passes the filter. Functions that
 * cannot be patched safely are refused with a reason, never patched wrong. Serialise calls. */
int patch_library(const struct patch_request *req, struct patch_result *res);

/* The first half of patch_library: find, plan and write the stubs, but no jump yet (it reads
 * code only, so it is safe while other threads run). patch_rearm() writes the jumps. */
int patch_plan_library(const struct patch_request *req, struct patch_result *res);

/* Patch again, after patch_unpatch_all(), the library whose ids are [first, first+count)
 * (a second attach): stubs made before are reused, the filter may differ, and the functions
 * planned before are classified again (this session's options may differ too). It is
 * patch_replan() then patch_arm(). */
int patch_rearm(const struct patch_request *req, uint32_t first, uint32_t count,
                struct patch_result *res);

/* The first half of patch_rearm: classify again the functions of [first, first+count) planned
 * before, and plan those this filter now includes for the first time; no jump (safe while the
 * other threads run). */
int patch_replan(const struct patch_request *req, uint32_t first, uint32_t count);

/* The second half: write the preludes asked for and the jumps of the planned functions of
 * [first, first+count) that have none. It allocates nothing, takes no lock and calls no libc
 * function that does (the memory protection changes and the core serialisation are system
 * calls): with req->threads_stopped it may run while every other thread is stopped, wherever
 * they stopped. */
int patch_arm(const struct patch_request *req, uint32_t first, uint32_t count, struct patch_result *res);

/* A function to patch that is given by address rather than found in a symbol table. */
struct patch_func {
	const char *name;
	uintptr_t addr;
	size_t size;               /* its exact extent: the planner scans the whole body */
};

/* Patch n such functions as patch_library() patches a library's: new ids in one stub pool near
 * them, the request's filter and classifier, refusals with their reasons, the jumps written
 * with the other threads stopped when they may run. res->first_id/count: their ids. */
int patch_functions(const struct patch_func *v, size_t n, const struct patch_request *req,
                    struct patch_result *res);

/* Plan one function by address, unfiltered and unclassified (the caller sets up what its calls
 * do): its stub is written, not its jump (patch_rearm_one() writes it). `how` gives the entry.
 * Returns the id, or -1. */
int patch_plan_one(const char *name, uintptr_t addr, size_t size, uint32_t lib_id,
                   const struct patch_request *how);

/* Write the jump of a site planned by patch_plan_one(), for the first time or again after
 * patch_unpatch_all() (its stub is reused). Allocates nothing, as patch_arm(). */
int patch_rearm_one(uint32_t id, const struct patch_request *how);

/* Remove every jump (restore the original bytes). Stubs stay mapped. own_tid as in
 * struct patch_request. Returns how many were restored. */
unsigned patch_unpatch_all(bool threads_stopped, int own_tid);

/* Read the protections of the code it writes into (libraries' text, stub pools) now, while
 * other threads run, so that writing jumps or taking them out later with the threads stopped
 * does not read /proc/self/maps meanwhile (code_write.h: code_prot_snapshot). */
void patch_snapshot_protections(void);

/* True when the jump of `id` is in place and leads to its prelude. */
bool patch_jumps_to_prelude(uint32_t id);

/* Where a thread stopped at `ip` while jumps are written should continue: the same
 * instruction in the relocated copy when ip is inside overwritten bytes, else ip. */
uintptr_t patch_fixup_ip(uintptr_t ip);

#endif
