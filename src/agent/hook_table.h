/* The agent's hook table: what each hooked function's calls do. The hook engine
 * (src/trampoline/patcher.h) finds, relocates and patches the functions and gives each a dense
 * id; its thunks lead to the agent's entry stub (src/asm/stubs.S) with that id, and the per-call
 * path (record.c, the stubs' fast paths) reads only hooks_hot[id]. The callbacks a hook runs
 * after its function returns are in hooks_calls[id]. This file also gives the engine what it
 * asks of the agent: the entry, the classifier glue, and the count thunks (its preludes). */
#ifndef CUHOOK_HOOK_TABLE_H
#define CUHOOK_HOOK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "patcher.h"
#include "thread_state.h"

#define HOOKS_MAX PATCH_SITES_MAX

/* hooks_hot[].flags */
#define HOOK_RECORD 0x1u       /* record entry/exit events */
#define HOOK_CALLBACK 0x2u     /* call hooks_calls[].on_exit after the function returns */
#define HOOK_IOCTL 0x4u        /* libc's ioctl (with HOOK_RECORD): recorded only when its fd is an
                                  NVIDIA device file (src/agent/nvfd.h); at exit a DATA record with
                                  the argument's raw bytes. The stubs' fast paths never take it. */
#define HOOK_FDOP 0x8u         /* an internal hook on a libc call that closes, replaces or creates
                                  file descriptors: hooks_hot[].aux (NVFD_OP_*) says which fd the
                                  ioctl fd table forgets, at entry and at exit. Not recorded. */
#define HOOK_COUNT 0x10u       /* count the calls, record nothing (agent option count=GLOBS):
                                  hooks_hot[].aux is the counter's slot in the thread's ring
                                  (struct ring counts[]); the return is not taken. The jump goes
                                  to the function's count thunk (hook_table.c), which adds 1
                                  itself and reaches the entry stub only for a thread with no ring */
#define HOOK_PROC_EXIT 0x20u   /* an internal hook on libc's _exit: the trace is closed at its
                                  entry (src/agent/exit_watch.h). Not recorded. */
#define HOOK_STACK 0x40u       /* with HOOK_RECORD (agent option stacks=GLOBS): the caller's stack
                                  is taken at entry and named in a STACK record after the ENTRY
                                  (src/agent/stack_capture.h). Like any flag but HOOK_RECORD
                                  alone, it sends the stubs to the C handlers; the fast paths are
                                  those of the other functions still. */
#define HOOK_SLOW 0x80u        /* with HOOK_RECORD (agent option trigger_slow=): the flight
                                  recorder's slow-call trigger watches it (C path: its entry time
                                  is kept) */

struct hook_hot {
	uintptr_t relocated;   /* the relocated prologue: where the entry stub continues */
	uint16_t decoder;      /* cuhook_decoders index, 0 = none */
	uint8_t flags;         /* HOOK_* */
	uint8_t aux;           /* HOOK_FDOP: which descriptor the call affects (NVFD_OP_*);
	                          HOOK_COUNT: the counter slot (< RING_COUNT_SLOTS) */
	uint16_t reserved;     /* (its library is patch_sites[].lib_id) */
	uint8_t nstack;        /* caller's stack slots to record at entry (0..6; 6 by default) */
	uint8_t fast_out;      /* 0, or how the fast exit stub reads the one decoded value
	                          (stub_frame.h FAST_OUT_*); set by the classifier */
	/* The ENTRY5 record as the fast entry stub writes it, precomputed from the id, nregs and
	 * nstack after each classification (hook_table.c): its word without depth and time (type
	 * ENTRY5, func = id), and its length in bytes. */
	uint64_t entry_hdr;
	uint32_t entry_info;
	uint8_t nregs;         /* argument registers to record at entry (0..6; 6 by default) */
	uint8_t names_role;    /* what its successful exit tells the agent's kernel names
	                          (src/agent/kernel_names_hot.h enum kn_role); set by the classifier.
	                          Nonzero only for functions with a decoder (their exit reaches C) */
	uint8_t pad[2];
};

#define HOOK_REGS_DEFAULT 6  /* argument registers recorded for a function of unknown signature */
#define HOOK_STACK_DEFAULT 6 /* stack slots recorded for a function of unknown signature */

/* What a HOOK_CALLBACK hook runs after its function returns (record_slow.c). */
struct hook_calls {
	void (*on_exit)(void);
	/* after on_exit: with the call's first argument registers (NULL unless the function has a
	 * decoder, whose shadow entry keeps them) and its return value */
	void (*on_return)(const uint64_t *args, uint64_t ret);
};

extern struct hook_hot hooks_hot[HOOKS_MAX];
extern struct hook_calls hooks_calls[HOOKS_MAX];

/* Counted functions (HOOK_COUNT): the hook id behind each counter slot of the rings, slots
 * [0, hook_count_slots) in use. A slot, once given to an id, stays its own (a later session
 * may record that function again, and count it again in the same slot). Under agent_lock. */
extern uint32_t hook_count_func[RING_COUNT_SLOTS];
extern uint32_t hook_count_slots;

/* The writer thread's id (writer.c sets it, 0 before): it never runs hooked code, so patching
 * does not count it among the threads that may run. */
extern int hook_own_tid;

/* How the agent classifies the functions it patches: the HOOK_* flags of `name`, with the hot
 * fields it chooses set in hh (decoder, nregs, nstack, fast_out, aux, names_role). */
struct hook_classifier {
	uint8_t (*flags)(const char *name, struct hook_hot *hh);
};

/* The request every patch the agent makes starts from: its entry stub, its writer thread, the
 * freeze of the other threads, its count thunks, and `how` (NULL: every function recorded). */
struct patch_request hook_request(bool threads_stopped, const struct hook_classifier *how);

/* Plan one function by address for the agent's own use (the dlopen watch, the ioctl watch, the
 * _exit hook), with the hot fields chosen by the caller (flags such as HOOK_CALLBACK,
 * HOOK_IOCTL | HOOK_RECORD or HOOK_FDOP, aux, decoder, lib_id) and `on_exit` run after every
 * call returns when HOOK_CALLBACK is set (else NULL): its stub is written, not its jump
 * (patch_rearm_one() writes it). Returns the id, or -1. */
int hook_plan_internal(const char *name, uintptr_t addr, size_t size, uint8_t flags, uint8_t aux,
                       uint16_t decoder, uint32_t lib_id, void (*on_exit)(void));

/* True when the jump of `id` is in place and leads to its count thunk (HOOK_COUNT). */
bool hook_counted_in_place(uint32_t id);

#endif
