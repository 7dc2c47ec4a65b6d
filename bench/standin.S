/* A stand-in for libcuda's cuCtxGetCurrent, shaped like the real one (libcuda 580): a thin
 * wrapper that checks a global and calls the implementation through an internal table.
 *   push rbp; mov rbp,rsp; push r12; sub rsp,8; cmp dword ptr [rip+N], imm32; je; call [rip+N]
 * The implementation stores a fixed context handle through the out-pointer and returns 0. */
	.intel_syntax noprefix
	.text
	.p2align 4
	.globl cuCtxGetCurrent
	.type cuCtxGetCurrent, @function
cuCtxGetCurrent:
	push rbp
	mov rbp, rsp
	push r12
	sub rsp, 8
	cmp dword ptr [rip + initialized], 0x321cba00
	je 1f
	call qword ptr [rip + impl_table]
	add rsp, 8
	pop r12
	pop rbp
	ret
1:	mov eax, 3
	add rsp, 8
	pop r12
	pop rbp
	ret
	.size cuCtxGetCurrent, .-cuCtxGetCurrent

	.p2align 4
	.type ctx_get_current_impl, @function
ctx_get_current_impl:
	mov qword ptr [rdi], 0x5a5a0000
	xor eax, eax
	ret
	.size ctx_get_current_impl, .-ctx_get_current_impl

	.data
	.p2align 3
impl_table:
	.quad ctx_get_current_impl
initialized:
	.long 1
	.section .note.GNU-stack,"",@progbits
