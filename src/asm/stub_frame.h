/* The stack frames that the assembly stubs (stubs.S) build and hand to the C handlers
 * (src/agent/record.c), and the structure offsets the stubs' fast paths read. One definition for
 * both sides; record.c checks every offset against the C structures (_Static_assert). */
#ifndef CUHOOK_STUB_FRAME_H
#define CUHOOK_STUB_FRAME_H

/* Entry frame, lowest address first, as cuhook_entry_stub leaves it for cuhook_on_entry:
 *   r11, r9, r8, rsi, rdi (pushed by the slow path only),
 *   a pad, rcx, r10, rdx, rax (pushed first: the fast path's scratch registers),
 *   hook id (pushed by the per-function thunk), the return address into the caller,
 *   then the caller's stack arguments (7th integer argument onward). */
#define FRAME_R11 0
#define FRAME_R9 8
#define FRAME_R8 16
#define FRAME_RSI 24
#define FRAME_RDI 32
#define FRAME_PAD 40        /* keeps the slow path's call 16-byte aligned; the fast entry's scratch */
#define FRAME_RCX 48
#define FRAME_R10 56
#define FRAME_RDX 64
#define FRAME_RAX 72
#define FRAME_ID 80
#define FRAME_RET 88
#define FRAME_STACK_ARGS 96

/* The fast path's view of the same frame before the slow path's five pushes: offsets from rsp. */
#define FAST_SAVED 40 /* bytes the fast path pushed: pad, rcx, r10, rdx, rax */
#define EF_HOT (FRAME_PAD - FAST_SAVED) /* the fast entry keeps &hooks_hot[id] in the pad */
#define EF_RCX (FRAME_RCX - FAST_SAVED)
#define EF_RDX (FRAME_RDX - FAST_SAVED)
#define EF_ID (FRAME_ID - FAST_SAVED)
#define EF_RET (FRAME_RET - FAST_SAVED)
#define EF_STACK (FRAME_STACK_ARGS - FAST_SAVED)

/* Offsets used by the fast paths (checked in record.c). */
#define TS_BUSY 0           /* struct thread_state */
#define TS_NO_RECORD 4
#define TS_DEPTH 8
#define TS_STACK_LO 16
#define TS_STACK_HI 24
#define TS_RING 32
#define TS_BUSY_SP 48
#define TS_SHADOW 64
#define SH_SHIFT 6          /* struct shadow_entry is 64 bytes */
#define SH_RET 0
#define SH_SLOT 8
#define SH_ID 16
#define SH_HAS_ARGS 20      /* a byte; the next one is `unrecorded` (0 on the fast paths) */
#define SH_ARGS 24
#define RING_HEAD 0         /* struct ring */
#define RING_LIMIT 16
#define RING_DATA 24
#define RING_SIZE 40
#define RING_EPOCH 44
#define RING_EVENTS 56
#define RING_COUNTS 1984    /* struct ring counts[] (the count thunks, hooks.c) */
#define HOT_SHIFT 5         /* struct hook_hot is 32 bytes */
#define HOT_RELOCATED 0
#define HOT_DECODER 8
#define HOT_FLAGS 10
#define HOT_NSTACK 14       /* stack slots to record (arity table) */
#define HOT_FAST_OUT 15     /* the fast exit's decoded value: FAST_OUT_* */
#define HOT_ENTRY_HDR 16    /* the ENTRY5 record's word without depth and time (type, func) */
#define HOT_ENTRY_INFO 24   /* the ENTRY5 record's length: 8 + 8 * (nregs + nstack) */
#define FAST_OUT_VALID 0x80 /* one out-parameter, no string: written inline in the EXIT record */
#define FAST_OUT_4BYTE 0x08 /* the value is 4 bytes (else 8) */
#define FAST_OUT_ARG 0x07   /* its argument index (< SHADOW_ARGS) */
#define FAST_HOOK_FLAGS 1   /* the hooks_hot[].flags value the fast paths record: HOOK_RECORD */
#define FAST_SHADOW_MAX 128 /* SHADOW_MAX */
#define FAST_ENTRY_MAX 104  /* an ENTRY5 with 6 registers and 6 stack slots: what the fast entry
                               reserves (it stores all six registers, commits entry_info bytes) */
#define FAST_EXIT_LEN 16    /* EXIT5 record */
#define FAST_EXITV_LEN 24   /* EXIT5_VALUE record */
#define FAST_EXITZ_LEN 8    /* EXIT5_ZERO record */
#define FAST_EXITZV_LEN 16  /* EXIT5_ZERO_VALUE record */
#define FAST_EXIT_TYPE 2    /* CUHOOK_REC5_EXIT */
#define FAST_EXITV_TYPE 7   /* CUHOOK_REC5_EXIT_VALUE */
#define FAST_EXITZ_TYPE 9   /* CUHOOK_REC5_EXIT_ZERO */
#define FAST_EXITZV_TYPE 10 /* CUHOOK_REC5_EXIT_ZERO_VALUE */
#define FAST_DEPTH_SHIFT 4  /* a version-5 record word: depth, func, the time's low bits */
#define FAST_FUNC_SHIFT 12
#define FAST_TSC_SHIFT 26
#define FAST_EPOCH_SHIFT 38 /* CUHOOK_REC5_TSC_BITS */

#ifndef __ASSEMBLER__
#include <stdint.h>

struct entry_frame {
	uint64_t r11, r9, r8, rsi, rdi, pad, rcx, r10, rdx, rax;
	uint64_t id;
	uint64_t ret;      /* the handler replaces it with cuhook_exit_stub to see the return */
	uint64_t stack[];  /* caller's stack arguments */
};

_Static_assert(__builtin_offsetof(struct entry_frame, rdi) == FRAME_RDI, "frame layout");
_Static_assert(__builtin_offsetof(struct entry_frame, pad) == FRAME_PAD, "frame layout");
_Static_assert(__builtin_offsetof(struct entry_frame, rcx) == FRAME_RCX, "frame layout");
_Static_assert(__builtin_offsetof(struct entry_frame, rax) == FRAME_RAX, "frame layout");
_Static_assert(__builtin_offsetof(struct entry_frame, id) == FRAME_ID, "frame layout");
_Static_assert(__builtin_offsetof(struct entry_frame, ret) == FRAME_RET, "frame layout");
_Static_assert(__builtin_offsetof(struct entry_frame, stack) == FRAME_STACK_ARGS, "frame layout");

/* Exit frame: what cuhook_exit_stub saved of the traced function's return registers. The
 * caller's stack pointer after the return is (uintptr_t)frame + sizeof(struct exit_frame). */
struct exit_frame {
	uint64_t rdx, rax;
};

/* Defined in stubs.S. */
extern uintptr_t cuhook_tls_ring_offset; /* cuhook_tls_ring's offset from the thread pointer:
                                            the count thunks (src/agent/hook_table.c) */
void cuhook_entry_stub(void);
void cuhook_exit_stub(void);
/* Call fn(arg) with every vector and x87 register saved and restored around it (XSAVE), for the
 * handlers' rare paths that call into libc (whose memcpy/memset use SSE/AVX registers that hold
 * the traced function's float arguments or return value). */
uintptr_t cuhook_call_saving_vectors(uintptr_t (*fn)(void *), void *arg);
#endif

#endif
