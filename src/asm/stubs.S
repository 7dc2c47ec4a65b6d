/* The generic stubs every patched function goes through. Signature-agnostic: they know nothing
 * of the traced function's arguments beyond the x86-64 System V calling convention.
 *
 *   caller --call--> F: jmp thunk_F            (5 bytes written over F's first instructions)
 *   thunk_F:  push $id; jmp cuhook_entry_stub  (per function, in memory near F)
 *   cuhook_entry_stub: record the ENTRY, push the shadow-stack entry; then
 *                      drop the caller's return address and `call` F's relocated prologue
 *                      (which jumps back into F's body)
 *   F returns --ret--> cuhook_exit_stub (the instruction after that call)
 *   cuhook_exit_stub:  record the EXIT, pop the shadow-stack entry, put the real return address
 *                      back where it was and `ret` to it
 *
 * Why `call` + `ret` rather than overwriting the return slot and `jmp`-ing back: the CPU
 * predicts returns with its return stack buffer. Overwriting the slot makes F's ret mispredict
 * (the buffer says "the caller"), and the exit stub's indirect jmp then predicts poorly too.
 * With the call, the buffer holds "cuhook_exit_stub" on top of "the caller", both returns are
 * predicted, and F sees exactly what it saw before: the same stack pointer, the same slot, the
 * slot holding cuhook_exit_stub. The shadow stack still matches returns by slot (longjmp).
 *
 * Each stub has a fast path in assembly for the common case (thread state exists, not busy,
 * recording, TSC clock, hook flags exactly HOOK_RECORD, room in the ring without wrapping, no
 * drops to report, shadow stack not full, all six stack slots inside the thread's stack; at exit
 * the top shadow entry matches; DATA records only for one-value, string-less decoders). It
 * saves only the registers it uses. A counted function (HOOK_COUNT) reaches the entry stub only
 * when its count thunk (src/agent/hook_table.c) found no ring for the thread, or could not be written: the C
 * handler counts it. Anything else takes the slow path: the C handlers in record.c with
 * the full frame (a HOOK_* flag added later is thus handled in C until a fast path learns it).
 * A fast path bails out only before its first visible side effect (or after undoing `busy`),
 * so the C handler always starts from a clean state.
 *
 * r11 carries the jump target: at a function's entry and after its return r11 holds nothing the
 * caller may rely on (the ABI's scratch register; glibc's lazy-binding trampoline uses it the
 * same way). At exit only rax/rdx (and xmm0/xmm1) carry results; the other caller-saved
 * general registers are free. The status flags have no role at either boundary, so neither
 * stub keeps them (DF, which must be 0 at both, is never changed). Nothing here touches vector registers: the C handlers are built
 * with -mgeneral-regs-only, so xmm0-7 (float arguments) and xmm0/xmm1 (float results) pass
 * through untouched; their rare libc calls go through cuhook_call_saving_vectors. */
#include "stub_frame.h"

/* Room for a record of `len` bytes in the thread's ring (r10), without wrapping: rcx = where it
 * goes, rax = the head, or a jump to `full`. Only the ring's producer line is read: `limit` is
 * the tail as last seen plus the size, capped at the end of the current lap (record.c), so
 * below it a record neither overwrites unread ones nor straddles the end; a ring that looks
 * full may only need a fresh look at the tail, or padding to the lap's end, which the C
 * handlers do (and they wait, drop or pad). While drops wait to be reported in a DROP record,
 * `limit` is 0, so every record goes through C, which reports them first. */
.macro RING_RESERVE len, full
	mov RING_HEAD(%r10), %rax
	lea \len(%rax), %rcx
	cmp RING_LIMIT(%r10), %rcx
	ja \full                              /* full, the tail moved, or the lap ends */
	mov RING_SIZE(%r10), %ecx
	dec %ecx
	and %eax, %ecx                         /* pos (the size is at most 2^31) */
	add RING_DATA(%r10), %rcx
.endm

/* The exit fast path's record: room for `len` bytes (rcx = the record, or to .Lexit_unbusy),
 * the shadow stack popped (r8 = the real return address), and the record's word: `type`, the
 * depth (esi = k - 1), the function id (the shadow entry, rdi), the time's low bits (r9, in
 * place). Leaves the rest of the record and the commit to the caller. */
.macro EXIT_WORD len, type
	RING_RESERVE \len, .Lexit_unbusy
	mov SH_RET(%rdi), %r8                  /* the real return address, read before the pop */
	mov %esi, TS_DEPTH(%r11)               /* pop */
	shl $FAST_DEPTH_SHIFT, %esi
	mov SH_ID(%rdi), %eax
	shl $FAST_FUNC_SHIFT, %rax
	or %rsi, %rax
	or %r9, %rax
	or $\type, %rax
	mov %rax, 0(%rcx)
.endm

/* The switches every call reads, in one cache line (see record.h). */
	.data
	.p2align 6
	.globl cuhook_recording, cuhook_clock_monotonic, cuhook_tls_offset, cuhook_tls_ring_offset
	.hidden cuhook_recording, cuhook_clock_monotonic, cuhook_tls_offset, cuhook_tls_ring_offset
	.type cuhook_recording, @object
	.type cuhook_clock_monotonic, @object
	.type cuhook_tls_offset, @object
	.type cuhook_tls_ring_offset, @object
cuhook_recording:
	.long 0
	.size cuhook_recording, 4
cuhook_clock_monotonic:
	.long 0
	.size cuhook_clock_monotonic, 4
cuhook_tls_offset:
	.quad 0
	.size cuhook_tls_offset, 8
cuhook_tls_ring_offset:
	.quad 0
	.size cuhook_tls_ring_offset, 8
	.globl cuhook_errors_to_c
	.hidden cuhook_errors_to_c
	.type cuhook_errors_to_c, @object
cuhook_errors_to_c:
	.long 0
	.size cuhook_errors_to_c, 4
	.p2align 6

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
	push %rdx
	push %r10              /* static chain pointer */
	push %rcx
	/* The status flags are not kept: the calling convention gives them no role at a
	 * function's entry (they are not preserved across calls, and no argument is passed in
	 * them); DF is 0 at any call boundary and nothing here changes it. The slot keeps the slow
	 * path's call 16-byte aligned. */
	lea -8(%rsp), %rsp
	.cfi_adjust_cfa_offset FAST_SAVED
	/* Fast path. Scratch: r11 (thread state), r10, rax, rdx, rcx and the pad (EF_HOT). The
	 * argument registers rdi, rsi, r8, r9 are only read. */
	mov EF_ID(%rsp), %eax
	shl $HOT_SHIFT, %rax
	lea hooks_hot(%rip), %r10
	add %rax, %r10                         /* r10 = &hooks_hot[id] */
	cmpq $1, cuhook_recording(%rip)        /* recording 1 and clock_monotonic 0 (record.h) */
	jne .Lentry_slow
	cmpb $FAST_HOOK_FLAGS, HOT_FLAGS(%r10)
	jne .Lentry_slow                       /* any other flag (counted, callback, ioctl...): C */
	mov cuhook_tls_offset(%rip), %r11
	mov %fs:(%r11), %r11
	test %r11, %r11
	jz .Lentry_slow
	cmpq $0, TS_BUSY(%r11)                 /* busy and no_record, side by side */
	jne .Lentry_slow
	mov TS_DEPTH(%r11), %eax
	cmp $FAST_SHADOW_MAX, %eax
	jae .Lentry_slow                       /* entry-only degradation: C */
	cmpb $0, HOT_NSTACK(%r10)
	je 1f                                  /* no stack arguments to read */
	lea EF_STACK(%rsp), %rdx               /* the caller's stack slots: all six in this thread's stack */
	cmp TS_STACK_LO(%r11), %rdx
	jb .Lentry_slow
	add $48, %rdx
	cmp TS_STACK_HI(%r11), %rdx
	ja .Lentry_slow
1:
	/* A shadow entry at or below this call's return slot belongs to a frame left by longjmp:
	 * the C handler drops such entries. */
	test %eax, %eax
	jz 1f
	shl $SH_SHIFT, %rax
	mov TS_SHADOW+SH_SLOT-(1<<SH_SHIFT)(%r11,%rax), %rcx   /* shadow[depth - 1].slot */
	lea EF_RET(%rsp), %rax
	cmp %rax, %rcx
	jbe .Lentry_slow
1:
	/* busy before the ring is read: a signal handler's traced calls from here on pass through
	 * (they cannot take the same ring space, nor land a record between this record's
	 * timestamp and the record). Every later bail-out clears it. */
	movl $1, TS_BUSY(%r11)
	mov %rsp, TS_BUSY_SP(%r11)
	/* The clock as early as busy allows: the ring's loads and the reservation run while the
	 * microcoded rdtsc completes. rdx holds the timestamp until it is stored. */
	rdtsc
	shl $32, %rdx
	or %rax, %rdx
	mov %r10, EF_HOT(%rsp)                 /* r10 is the ring's from here on */
	mov TS_RING(%r11), %r10                /* limit 0 while drops wait to be reported */
	mov %rdx, %rax
	shr $FAST_EPOCH_SHIFT, %rax
	cmp RING_EPOCH(%r10), %eax
	jne .Lentry_unbusy                     /* a new epoch: C writes its TIME record first */
	/* Room for the longest ENTRY5: all six registers and the six stack slots are stored whole
	 * (fewer instructions than choosing), and only the length entry_info says is committed. */
	RING_RESERVE FAST_ENTRY_MAX, .Lentry_unbusy   /* rcx = the record, or to .Lentry_unbusy */
	/* The record's word: type and id (entry_hdr), depth, the time's low bits. Stored before
	 * the arguments; nothing is visible before the commit. */
	shl $FAST_TSC_SHIFT, %rdx
	mov TS_DEPTH(%r11), %eax
	shl $FAST_DEPTH_SHIFT, %eax
	or %rax, %rdx
	mov EF_HOT(%rsp), %rax                 /* rax = &hooks_hot[id] */
	or HOT_ENTRY_HDR(%rax), %rdx
	mov %rdx, 0(%rcx)
	prefetchw 256(%rcx)                    /* the lines the next calls' records will need */
	mov %rdi, 8(%rcx)
	mov %rsi, 16(%rcx)
	mov EF_RDX(%rsp), %rdx
	mov %rdx, 24(%rcx)
	mov EF_RCX(%rsp), %rdx
	mov %rdx, 32(%rcx)
	mov %r8, 40(%rcx)
	mov %r9, 48(%rcx)
	cmpb $0, HOT_NSTACK(%rax)
	je 1f                                  /* nstack 0 */
	mov EF_STACK+0(%rsp), %rdx             /* nstack > 0: nregs is 6 and the slots follow */
	mov %rdx, 56(%rcx)
	mov EF_STACK+8(%rsp), %rdx
	mov %rdx, 64(%rcx)
	mov EF_STACK+16(%rsp), %rdx
	mov %rdx, 72(%rcx)
	mov EF_STACK+24(%rsp), %rdx
	mov %rdx, 80(%rcx)
	mov EF_STACK+32(%rsp), %rdx
	mov %rdx, 88(%rcx)
	mov EF_STACK+40(%rsp), %rdx
	mov %rdx, 96(%rcx)
1:	mov HOT_ENTRY_INFO(%rax), %edx         /* the record's length */
	incq RING_EVENTS(%r10)
	add %rdx, RING_HEAD(%r10)              /* commit (a plain store is a release on x86) */
	mov %rax, %r10                         /* r10 = &hooks_hot[id] */
	mov EF_ID(%rsp), %edx
	/* Shadow-stack entry. */
	mov TS_DEPTH(%r11), %ecx
	shl $SH_SHIFT, %rcx
	lea TS_SHADOW(%r11,%rcx), %rcx         /* rcx = &shadow[depth] */
	mov EF_RET(%rsp), %rax
	mov %rax, SH_RET(%rcx)
	lea EF_RET(%rsp), %rax
	mov %rax, SH_SLOT(%rcx)
	cmpw $0, HOT_DECODER(%r10)
	jne .Lentry_args
	mov %rdx, SH_ID(%rcx)                  /* id, has_args 0 */
.Lentry_push:
	incl TS_DEPTH(%r11)                    /* after the entry is complete (signal safety) */
	movl $0, TS_BUSY(%r11)
	mov HOT_RELOCATED(%r10), %r11
	jmp .Lentry_hijack
.Lentry_args:                                  /* a decoder reads them at exit */
	bts $32, %rdx
	mov %rdx, SH_ID(%rcx)                  /* id, has_args 1 */
	mov %rdi, SH_ARGS+0(%rcx)
	mov %rsi, SH_ARGS+8(%rcx)
	mov EF_RDX(%rsp), %rax
	mov %rax, SH_ARGS+16(%rcx)
	mov EF_RCX(%rsp), %rax
	mov %rax, SH_ARGS+24(%rcx)
	mov %r8, SH_ARGS+32(%rcx)
	jmp .Lentry_push
.Lentry_unbusy:
	movl $0, TS_BUSY(%r11)
.Lentry_slow:
	push %rdi
	push %rsi
	push %r8
	push %r9
	push %r11
	.cfi_adjust_cfa_offset 40
	mov %rsp, %rdi         /* struct entry_frame * ; rsp is 16-byte aligned for the call */
	call cuhook_on_entry
	mov %rax, %r11         /* where to continue: the relocated prologue */
	lea cuhook_exit_stub(%rip), %rax
	cmp %rax, FRAME_RET(%rsp)              /* did the handler take the return? */
	lea 8(%rsp), %rsp      /* skip saved r11 (lea and pop keep the flags) */
	pop %r9
	pop %r8
	pop %rsi
	pop %rdi
	.cfi_adjust_cfa_offset -40
	je .Lentry_hijack
.Lentry_plain:                 /* not traced to its return: straight in */
	lea 8(%rsp), %rsp      /* the pad */
	pop %rcx
	pop %r10
	pop %rdx
	pop %rax
	lea 8(%rsp), %rsp      /* drop the id */
	.cfi_adjust_cfa_offset -48
	jmp *%r11
	.cfi_adjust_cfa_offset 48
.Lentry_hijack:
	lea 8(%rsp), %rsp      /* the pad */
	pop %rcx
	pop %r10
	pop %rdx
	pop %rax
	lea 16(%rsp), %rsp     /* drop the id and the return address (kept in the shadow stack) */
	.cfi_adjust_cfa_offset -56
	/* The FDE ends before the call: F's return address (cuhook_exit_stub) then points just past
	 * it, outside any unwind information, as with an overwritten return slot. */
	.cfi_endproc
	call *%r11             /* pushes cuhook_exit_stub into the same slot */
	.size cuhook_entry_stub, .-cuhook_entry_stub

	/* Must directly follow the call above. */
	.globl cuhook_exit_stub
	.hidden cuhook_exit_stub
	.type cuhook_exit_stub, @function
cuhook_exit_stub:
	/* Reached by the traced function's ret. rsp is the caller's, 16-byte aligned; the slot
	 * just below it is where the real return address goes back. */
	push %rax
	push %rdx              /* struct exit_frame; rsp is 16-byte aligned */
	/* Fast path. Scratch: every caller-saved register but rax and rdx (xmm untouched). */
	mov cuhook_tls_offset(%rip), %r11
	mov %fs:(%r11), %r11
	cmpl $0, TS_BUSY(%r11)
	jne .Lexit_slow
	movl $1, TS_BUSY(%r11)                 /* busy, then the clock (see the entry) */
	mov %rsp, TS_BUSY_SP(%r11)
	rdtsc                                  /* early: on Intel its latency overlaps the checks */
	shl $32, %rdx
	or %rax, %rdx
	mov %rdx, %r9                          /* r9 = tsc */
	mov TS_DEPTH(%r11), %esi
	sub $1, %esi                           /* k - 1 */
	jb .Lexit_unbusy
	mov %esi, %edi
	shl $SH_SHIFT, %rdi
	lea TS_SHADOW(%r11,%rdi), %rdi         /* rdi = &shadow[depth - 1] */
	lea 8(%rsp), %rax                      /* the return address slot */
	cmp %rax, SH_SLOT(%rdi)
	jne .Lexit_unbusy                      /* frames left by longjmp: C searches */
	cmpq $1, cuhook_recording(%rip)        /* recording 1 and clock_monotonic 0 (record.h) */
	jne .Lexit_unbusy
	mov SH_ID(%rdi), %eax
	shl $HOT_SHIFT, %rax
	lea hooks_hot(%rip), %r8
	add %rax, %r8                          /* r8 = &hooks_hot[id] */
	cmpb $FAST_HOOK_FLAGS, HOT_FLAGS(%r8)
	jne .Lexit_unbusy                      /* any flag but HOOK_RECORD: C */
	mov TS_RING(%r11), %r10
	mov %r9, %rax
	shr $FAST_EPOCH_SHIFT, %rax
	cmp RING_EPOCH(%r10), %eax
	jne .Lexit_unbusy                      /* a new epoch: C writes its TIME record first */
	shl $FAST_TSC_SHIFT, %r9               /* r9 = the time's low bits, in place in the word */
	xor %edx, %edx                         /* edx 1: a DATA record from C follows the EXIT */
	cmpb $0, SH_HAS_ARGS(%rdi)
	jne .Lexit_args
.Lexit_plain:
	cmpq $0, 8(%rsp)                       /* rax 0 (success): the word alone */
	je .Lexit_zero
	cmpl $0, cuhook_errors_to_c(%rip)      /* a flight-recorder trigger watches errors: C */
	jne .Lexit_unbusy
	EXIT_WORD FAST_EXIT_LEN, FAST_EXIT_TYPE
	mov 8(%rsp), %rax
	mov %rax, 8(%rcx)                      /* ret */
	incq RING_EVENTS(%r10)
	addq $FAST_EXIT_LEN, RING_HEAD(%r10)   /* commit */
	test %edx, %edx
	jnz .Lexit_data_c
.Lexit_done:
	movl $0, TS_BUSY(%r11)
	pop %rdx
	pop %rax
	push %r8
	ret                    /* predicted: the buffer's next entry is the caller's call */
.Lexit_zero:
	EXIT_WORD FAST_EXITZ_LEN, FAST_EXITZ_TYPE
	incq RING_EVENTS(%r10)
	addq $FAST_EXITZ_LEN, RING_HEAD(%r10)  /* commit */
	test %edx, %edx
	jnz .Lexit_data_c
	jmp .Lexit_done
.Lexit_args:                   /* a function with a decoder: its out-parameter after success */
	cmpl $0, 8(%rsp)       /* the low 32 bits of rax (CUresult): failed, nothing to read */
	jne .Lexit_plain
	movzbl HOT_FAST_OUT(%r8), %ecx
	mov $1, %edx
	test $FAST_OUT_VALID, %cl
	jz .Lexit_plain        /* not one plain value: the C writes the DATA record */
	mov %ecx, %eax
	and $FAST_OUT_ARG, %eax
	mov SH_ARGS(%rdi,%rax,8), %rax         /* the out-parameter's address */
	test %rax, %rax
	jz 2f                                  /* NULL: value 0 */
	test $FAST_OUT_4BYTE, %cl
	jnz 1f
	mov (%rax), %rax
	jmp 2f
1:	mov (%rax), %eax
2:	mov %rax, %rdx                         /* rdx = the value */
	cmpq $0, 8(%rsp)
	je .Lexit_zero_value
	EXIT_WORD FAST_EXITV_LEN, FAST_EXITV_TYPE
	mov 8(%rsp), %rax
	mov %rax, 8(%rcx)                      /* ret */
	mov %rdx, 16(%rcx)                     /* value */
	incq RING_EVENTS(%r10)
	addq $FAST_EXITV_LEN, RING_HEAD(%r10)  /* commit */
	jmp .Lexit_done
.Lexit_zero_value:
	EXIT_WORD FAST_EXITZV_LEN, FAST_EXITZV_TYPE
	mov %rdx, 8(%rcx)                      /* value */
	incq RING_EVENTS(%r10)
	addq $FAST_EXITZV_LEN, RING_HEAD(%r10) /* commit */
	jmp .Lexit_done
.Lexit_data_c:
	push %r8
	push %r11              /* rsp stays 16-byte aligned */
	mov %rdi, %rsi         /* the shadow entry: intact while busy */
	mov %r11, %rdi
	call cuhook_exit_data  /* C, general registers only: xmm0/xmm1 pass through */
	pop %r11
	pop %r8
	jmp .Lexit_done
.Lexit_unbusy:
	movl $0, TS_BUSY(%r11)
.Lexit_slow:
	mov %rsp, %rdi         /* struct exit_frame * */
	call cuhook_on_exit    /* returns the real return address */
	mov %rax, %r11
	pop %rdx
	pop %rax
	push %r11
	ret
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
