/* The hook table and the patcher: which functions are hooked, where their relocated prologues
 * live, and the code that writes and removes the jumps.
 *
 * Every hooked function gets a dense id. The per-call path (src/agent/record.c) reads only
 * hooks_hot[id]; everything else about a hook is in hooks_cold[id], used while patching, for the
 * trace's function table, and to move threads (fixup_ip). */
#ifndef CUHOOK_HOOKS_H
#define CUHOOK_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relocate.h"

#define HOOKS_MAX 16384
/* A function's slot: the thunk into the entry stub, the count thunk (HOOK_COUNT), then the
 * relocated prologue, which the count thunk falls into. */
#define HOOK_THUNK_SIZE 24
#define HOOK_RELOCATED 48      /* offset of the relocated code; the count thunk ends here */
#define HOOK_SLOT_SIZE 160     /* + RELOC_MAX_CODE, 16-aligned */

/* hooks_hot[].flags */
#define HOOK_RECORD 0x1u       /* record entry/exit events */
#define HOOK_CALLBACK 0x2u     /* call hooks_cold[].on_exit after the function returns */
#define HOOK_IOCTL 0x4u        /* libc's ioctl (with HOOK_RECORD): recorded only when its fd is an
                                  NVIDIA device file (src/agent/nvfd.h); at exit a DATA record with
                                  the argument's raw bytes. The stubs' fast paths never take it. */
#define HOOK_FDOP 0x8u         /* an internal hook on a libc call that closes, replaces or creates
                                  file descriptors: hooks_hot[].aux (NVFD_OP_*) says which fd the
                                  ioctl fd table forgets, at entry and at exit. Not recorded. */
#define HOOK_COUNT 0x10u       /* count the calls, record nothing (agent option count=GLOBS):
                                  hooks_hot[].aux is the counter's slot in the thread's ring
                                  (struct ring counts[]); the return is not taken. The jump goes
                                  to the function's count thunk (hooks.c), which adds 1 itself
                                  and reaches the entry stub only for a thread with no ring */
#define HOOK_PROC_EXIT 0x20u   /* an internal hook on libc's _exit: the trace is closed at its
                                  entry (src/agent/exit_watch.h). Not recorded. */
#define HOOK_STACK 0x40u       /* with HOOK_RECORD (agent option stacks=GLOBS): the caller's stack
                                  is taken at entry and named in a STACK record after the ENTRY
                                  (src/agent/stack_capture.h). Like any flag but HOOK_RECORD
                                  alone, it sends the stubs to the C handlers; the fast paths are
                                  those of the other functions still. */

struct hook_hot {
	uintptr_t relocated;   /* the relocated prologue: where the entry stub continues */
	uint16_t decoder;      /* cuhook_decoders index, 0 = none */
	uint8_t flags;         /* HOOK_* */
	uint8_t aux;           /* HOOK_FDOP: which descriptor the call affects (NVFD_OP_*);
	                          HOOK_COUNT: the counter slot (< RING_COUNT_SLOTS) */
	uint16_t lib_id;
	uint8_t nstack;        /* caller's stack slots to record at entry (0..6; 6 by default) */
	uint8_t fast_out;      /* 0, or how the fast exit stub reads the one decoded value
	                          (stub_frame.h FAST_OUT_*); set by the classifier */
	/* The ENTRY5 record as the fast entry stub writes it, precomputed from the id, nregs and
	 * nstack after each classification (hooks.c): its word without depth and time (type
	 * ENTRY5, func = id), and its length in bytes. */
	uint64_t entry_hdr;
	uint32_t entry_info;
	uint8_t nregs;         /* argument registers to record at entry (0..6; 6 by default) */
	uint8_t names_role;    /* what its successful exit tells the agent's kernel names
	                          (src/agent/kernel_names_hot.h enum kn_role); set by the classifier.
	                          Nonzero only for functions with a decoder (their exit reaches C) */
	uint8_t pad[2];
};

#define HOOK_SLOW 0x80u        /* with HOOK_RECORD (agent option trigger_slow=): the flight
                                  recorder's slow-call trigger watches it (C path: its entry time
                                  is kept) */
#define HOOK_REGS_DEFAULT 6  /* argument registers recorded for a function of unknown signature */

#define HOOK_STACK_DEFAULT 6 /* stack slots recorded for a function of unknown signature */

struct hook_cold {
	const char *name;      /* owned copy */
	uintptr_t addr;
	uint32_t size;
	uint16_t status;       /* enum patch_status */
	uint8_t patch_len;
	uint8_t n_insns;
	uint8_t orig[16];      /* the bytes the jump replaced */
	uint8_t orig_off[RELOC_MAX_INSNS + 1];
	uint8_t new_off[RELOC_MAX_INSNS + 1];
	bool patched;          /* the jump is in place now */
	uint8_t *slot;         /* thunk, count thunk, then the relocated code */
	uint16_t count_thunk;  /* 0, or 1 + the counter slot the count thunk was written for */
	void (*on_exit)(void); /* HOOK_CALLBACK */
	/* HOOK_CALLBACK, after on_exit: with the call's first argument registers (NULL unless the
	 * function has a decoder, whose shadow entry keeps them) and its return value */
	void (*on_return)(const uint64_t *args, uint64_t ret);
	char detail[96];       /* refusal detail */
};

extern struct hook_hot hooks_hot[HOOKS_MAX];
extern struct hook_cold hooks_cold[HOOKS_MAX];
extern uint32_t hooks_count; /* ids [0, hooks_count) are in use */

/* How a library's functions are chosen and described. */
struct patch_request {
	uintptr_t base;            /* load bias (dl_phdr_info.dlpi_addr) */
	const void *phdr;
	unsigned phnum;
	const char *filter;        /* glob_filter_match() patterns */
	uint32_t lib_id;
	bool threads_stopped;      /* every other thread is stopped: plain writes are safe */
	/* Optional, for a process whose other threads may be running: stop them around the jump
	 * writes (returns 1 if all stopped, 0 if some, -1 if none) and resume them after (moving
	 * any thread found inside overwritten bytes). No allocation happens in between. */
	int (*freeze)(void);
	void (*thaw)(void);
	/* Called for each function that will be hooked, before any jump is written: returns the
	 * HOOK_* flags and may set hh's decoder, nregs, nstack and fast_out (which start as 0,
	 * HOOK_REGS_DEFAULT, HOOK_STACK_DEFAULT and 0 for a function planned now, and keep what the
	 * last call set when hooks_rearm() classifies it again). */
	uint8_t (*classify)(const char *name, struct hook_hot *hh, void *ctx);
	void *ctx;
};

struct patch_result {
	uint32_t first_id, count;  /* ids of every function found (patched, refused, filtered) */
	uint32_t patched, refused, filtered;
};

/* Patch every exported function of one loaded library that passes the filter. Functions that
 * cannot be patched safely are refused with a reason, never patched wrong. Serialise calls. */
int hooks_patch_library(const struct patch_request *req, struct patch_result *res);

/* The first half of hooks_patch_library: find, plan and write the stubs, but no jump yet (it
 * reads code only, so it is safe while other threads run). hooks_rearm() writes the jumps. */
int hooks_plan_library(const struct patch_request *req, struct patch_result *res);

/* Patch again, after hooks_unpatch_all(), the library whose ids are [first, first+count)
 * (a second attach): stubs made before are reused, the filter may differ, and the functions
 * planned before are classified again (this session's options may differ too). It is
 * hooks_replan() then hooks_arm(). */
int hooks_rearm(const struct patch_request *req, uint32_t first, uint32_t count,
                struct patch_result *res);

/* The first half of hooks_rearm: classify again the functions of [first, first+count) planned
 * before, and plan those this filter now includes for the first time; no jump (safe while the
 * other threads run). */
int hooks_replan(const struct patch_request *req, uint32_t first, uint32_t count);

/* The second half: write the jumps of the planned functions of [first, first+count) that have
 * none. It allocates nothing, takes no lock and calls no libc function that does (the memory
 * protection changes and the core serialisation are system calls): with req->threads_stopped
 * it may run while every other thread is stopped, wherever they stopped. */
int hooks_arm(const struct patch_request *req, uint32_t first, uint32_t count, struct patch_result *res);

/* A function to patch that is given by address rather than found in a symbol table (the
 * functions behind cuGetExportTable's tables). */
struct hook_func {
	const char *name;
	uintptr_t addr;
	size_t size;               /* its exact extent: the planner scans the whole body */
};

/* Patch n such functions as hooks_patch_library() patches a library's: new ids in one stub pool
 * near them, the request's filter and classifier, refusals with their reasons, the jumps
 * written with the other threads stopped when they may run. res->first_id/count: their ids. */
int hooks_patch_functions(const struct hook_func *v, size_t n, const struct patch_request *req,
                          struct patch_result *res);

/* Plan one function by address for cuhook's own use (the dlopen watch, the ioctl watch, the
 * _exit hook), with the hot fields chosen by the caller (flags such as HOOK_CALLBACK,
 * HOOK_IOCTL | HOOK_RECORD or HOOK_FDOP, aux, decoder, lib_id) and `on_exit` run after every
 * call returns when HOOK_CALLBACK is set (else NULL): its stub is written, not its jump
 * (hooks_rearm_internal() writes it). Returns the id, or -1. */
int hooks_plan_internal(const char *name, uintptr_t addr, size_t size, uint8_t flags, uint8_t aux,
                        uint16_t decoder, uint32_t lib_id, void (*on_exit)(void));

/* Write the jump of an internal hook planned by hooks_plan_internal(), for the first time or
 * again after hooks_unpatch_all() (its stub is reused). Allocates nothing, as hooks_arm(). */
int hooks_rearm_internal(uint32_t id, const struct patch_request *how);

/* Remove every jump (restore the original bytes). Stubs stay mapped. Returns how many were
 * restored. */
unsigned hooks_unpatch_all(bool threads_stopped);

/* True when the jump of `id` is in place and leads to its count thunk (HOOK_COUNT). */
bool hooks_counted_in_place(uint32_t id);

/* The ip fixup for a thread stopped at `ip` while jumps are written (see cuhook_agent.h). */
uintptr_t hooks_fixup_ip(uintptr_t ip);

#endif
