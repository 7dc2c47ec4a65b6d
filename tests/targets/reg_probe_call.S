/* void reg_probe_call(void (*fn)(void), uint64_t out[16])
 *
 * Calls fn (cuFakeRegProbe of the stand-in libcuda) with a known value in every general register
 * but rsp and r11, and in xmm0-7 (reg_probe.c lists them), then writes what the call left:
 *   out[0] rax  out[1] rdx  out[2..3] xmm0  out[4..5] xmm1
 *   out[6] rbx  out[7] rbp  out[8] r12  out[9] r13  out[10] r14  out[11] r15
 *   out[12] rsp before the call  out[13] rsp after it
 * In AT&T syntax. */
	.text
	.globl reg_probe_call
	.type reg_probe_call, @function
	.p2align 4
reg_probe_call:
	push %rbp
	push %rbx
	push %r12
	push %r13
	push %r14
	push %r15
	push %rsi                      /* out; rsp is now 16-byte aligned for the call */
	mov %rsp, 96(%rsi)             /* out[12] */
	mov %rdi, %r11
	movdqu probe_vec+0(%rip), %xmm0
	movdqu probe_vec+16(%rip), %xmm1
	movdqu probe_vec+32(%rip), %xmm2
	movdqu probe_vec+48(%rip), %xmm3
	movdqu probe_vec+64(%rip), %xmm4
	movdqu probe_vec+80(%rip), %xmm5
	movdqu probe_vec+96(%rip), %xmm6
	movdqu probe_vec+112(%rip), %xmm7
	movabs $0xc0de000000000000, %rax
	movabs $0xc0de000000000101, %rbx
	movabs $0xc0de000000000202, %rcx
	movabs $0xc0de000000000303, %rdx
	movabs $0xc0de000000000404, %rsi
	movabs $0xc0de000000000505, %rdi
	movabs $0xc0de000000000606, %rbp
	movabs $0xc0de000000000808, %r8
	movabs $0xc0de000000000909, %r9
	movabs $0xc0de000000000a0a, %r10
	movabs $0xc0de000000000c0c, %r12
	movabs $0xc0de000000000d0d, %r13
	movabs $0xc0de000000000e0e, %r14
	movabs $0xc0de000000000f0f, %r15
	call *%r11
	mov (%rsp), %r11               /* out */
	mov %rax, 0(%r11)
	mov %rdx, 8(%r11)
	movdqu %xmm0, 16(%r11)
	movdqu %xmm1, 32(%r11)
	mov %rbx, 48(%r11)
	mov %rbp, 56(%r11)
	mov %r12, 64(%r11)
	mov %r13, 72(%r11)
	mov %r14, 80(%r11)
	mov %r15, 88(%r11)
	mov %rsp, 104(%r11)
	pop %rsi
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbx
	pop %rbp
	ret
	.size reg_probe_call, . - reg_probe_call

	.section .rodata
	.globl probe_vec
	.p2align 4
probe_vec:                             /* xmm0-7: 16 bytes each, byte j of xmm k = 0x40 + 16 k + j */
	.irp k, 0, 1, 2, 3, 4, 5, 6, 7
	.irp j, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	.byte 0x40 + 16 * \k + \j
	.endr
	.endr

	.section .note.GNU-stack, "", @progbits
