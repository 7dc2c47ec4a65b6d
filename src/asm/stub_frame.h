/* The stack frames that the assembly stubs (stubs.S) build and hand to the C handlers
 * (src/agent/record.c). One definition for both sides. */
#ifndef CUHOOK_STUB_FRAME_H
#define CUHOOK_STUB_FRAME_H

/* Entry frame, lowest address first, as cuhook_entry_stub leaves it:
 *   saved status flags, r11, r10, r9, r8, rcx, rdx, rsi, rdi, rax,
 *   hook id (pushed by the per-function thunk), the return address into the caller,
 *   then the caller's stack arguments (7th integer argument onward). */
#define FRAME_FLAGS 0
#define FRAME_R11 8
#define FRAME_R10 16
#define FRAME_R9 24
#define FRAME_R8 32
#define FRAME_RCX 40
#define FRAME_RDX 48
#define FRAME_RSI 56
#define FRAME_RDI 64
#define FRAME_RAX 72
#define FRAME_ID 80
#define FRAME_RET 88
#define FRAME_STACK_ARGS 96

#ifndef __ASSEMBLER__
#include <stdint.h>

struct entry_frame {
	uint64_t flags, r11, r10, r9, r8, rcx, rdx, rsi, rdi, rax;
	uint64_t id;
	uint64_t ret;      /* the handler replaces it with cuhook_exit_stub to see the return */
	uint64_t stack[];  /* caller's stack arguments */
};

_Static_assert(__builtin_offsetof(struct entry_frame, rdi) == FRAME_RDI, "frame layout");
_Static_assert(__builtin_offsetof(struct entry_frame, ret) == FRAME_RET, "frame layout");
_Static_assert(__builtin_offsetof(struct entry_frame, stack) == FRAME_STACK_ARGS, "frame layout");

/* Exit frame: what cuhook_exit_stub saved of the traced function's return registers. The
 * caller's stack pointer after the return is (uintptr_t)frame + sizeof(struct exit_frame). */
struct exit_frame {
	uint64_t rdx, rax;
};

/* Defined in stubs.S. */
void cuhook_entry_stub(void);
void cuhook_exit_stub(void);
/* Call fn(arg) with every vector and x87 register saved and restored around it (XSAVE), for the
 * handlers' rare paths that call into libc (whose memcpy/memset use SSE/AVX registers that hold
 * the traced function's float arguments or return value). */
uintptr_t cuhook_call_saving_vectors(uintptr_t (*fn)(void *), void *arg);
#endif

#endif
