/* The generic stubs every patched function goes through. Signature-agnostic: they know nothing
 * of the traced function's arguments beyond the x86-64 System V calling convention.
 *
 *   caller --call--> F: jmp thunk_F            (5 bytes written over F's first instructions)
 *   thunk_F:  push $id; jmp *cuhook_entry_stub (per function, in memory near F)
 *   cuhook_entry_stub: save registers, cuhook_on_entry(frame) -> address of F's relocated
 *                      prologue; restore; jmp there (which jumps back into F's body)
 *   F returns --ret--> cuhook_exit_stub (the entry handler swapped the return address)
 *   cuhook_exit_stub:  save rax/rdx, cuhook_on_exit(frame) -> the real return address; jmp there
 *
 * r11 carries the jump target: at a function's entry and after its return r11 holds nothing the
 * caller may rely on (the ABI's scratch register; glibc's lazy-binding trampoline uses it the
 * same way). The C handlers are built with -mgeneral-regs-only, so xmm0-7 (float arguments) and
 * xmm0/xmm1 (float results) pass through untouched; their rare libc calls go through
 * cuhook_call_saving_vectors. */
#include "stub_frame.h"

	.text
	.p2align 4
	.globl cuhook_entry_stub
	.hidden cuhook_entry_stub
	.type cuhook_entry_stub, @function
cuhook_entry_stub:
	.cfi_startproc
	/* [rsp] = id, [rsp+8] = return address. rsp is 16-byte aligned here. */
	.cfi_adjust_cfa_offset 8
	push %rax              /* al = number of vector registers used by a varargs call */
	push %rdi
	push %rsi
	push %rdx
	push %rcx
	push %r8
	push %r9
	push %r10              /* static chain pointer */
	push %r11
	.cfi_adjust_cfa_offset 72
	/* The status flags, without pushf/popf (popf is slow): lahf gets SF ZF AF PF CF into ah,
	 * seto gets OF into al. DF is 0 at any call boundary and nothing here changes it. */
	lahf
	seto %al
	push %rax
	.cfi_adjust_cfa_offset 8
	mov %rsp, %rdi         /* struct entry_frame * ; rsp is 16-byte aligned for the call */
	call cuhook_on_entry
	mov %rax, %r11         /* where to continue: the relocated prologue */
	pop %rax
	.cfi_adjust_cfa_offset -8
	add $0x7f, %al         /* OF = (al == 1) */
	sahf                   /* the other status flags */
	lea 8(%rsp), %rsp      /* skip saved r11 (lea keeps the flags) */
	pop %r10
	pop %r9
	pop %r8
	pop %rcx
	pop %rdx
	pop %rsi
	pop %rdi
	pop %rax
	lea 8(%rsp), %rsp      /* drop the id */
	.cfi_adjust_cfa_offset -80
	jmp *%r11
	.cfi_endproc
	.size cuhook_entry_stub, .-cuhook_entry_stub

	.p2align 4
	.globl cuhook_exit_stub
	.hidden cuhook_exit_stub
	.type cuhook_exit_stub, @function
cuhook_exit_stub:
	/* Reached by the traced function's ret. rsp is the caller's, 16-byte aligned. */
	push %rax
	push %rdx
	mov %rsp, %rdi         /* struct exit_frame * */
	call cuhook_on_exit    /* returns the real return address */
	mov %rax, %r11
	pop %rdx
	pop %rax
	jmp *%r11
	.size cuhook_exit_stub, .-cuhook_exit_stub

/* uintptr_t cuhook_call_saving_vectors(uintptr_t (*fn)(void *), void *arg) */
	.p2align 4
	.globl cuhook_call_saving_vectors
	.hidden cuhook_call_saving_vectors
	.type cuhook_call_saving_vectors, @function
cuhook_call_saving_vectors:
	.cfi_startproc
	push %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	push %rbx
	push %r12
	.cfi_rel_offset %rbx, -8
	.cfi_rel_offset %r12, -16
	mov %rdi, %rbx         /* fn */
	mov %rsi, %r12         /* arg */
	mov cuhook_xsave_size(%rip), %ecx
	test %ecx, %ecx
	jz 1f
	/* XSAVE area: size from CPUID leaf 0xD, 64-byte aligned, header zeroed (XRSTOR faults on
	 * a non-zero reserved header). */
	sub %rcx, %rsp
	and $-64, %rsp
	xor %eax, %eax
	mov %rax, 512(%rsp)
	mov %rax, 520(%rsp)
	mov %rax, 528(%rsp)
	mov %rax, 536(%rsp)
	mov %rax, 544(%rsp)
	mov %rax, 552(%rsp)
	mov %rax, 560(%rsp)
	mov %rax, 568(%rsp)
	mov cuhook_xsave_mask(%rip), %eax
	mov cuhook_xsave_mask+4(%rip), %edx
	xsave64 (%rsp)
	mov %r12, %rdi
	call *%rbx
	mov %rax, %r12
	mov cuhook_xsave_mask(%rip), %eax
	mov cuhook_xsave_mask+4(%rip), %edx
	xrstor64 (%rsp)
	mov %r12, %rax
	jmp 2f
1:	/* No XSAVE: FXSAVE covers x87, MMX, SSE (xmm0-15) and MXCSR. */
	sub $512, %rsp
	and $-16, %rsp
	fxsave64 (%rsp)
	mov %r12, %rdi
	call *%rbx
	fxrstor64 (%rsp)
2:	lea -16(%rbp), %rsp
	pop %r12
	pop %rbx
	pop %rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size cuhook_call_saving_vectors, .-cuhook_call_saving_vectors

	.section .note.GNU-stack,"",@progbits
