/* The code every remote call returns into: copied into a page that the injector maps in the
 * target (remote_call.c), never run in cuhook itself. It makes a remote call complete on its own
 * when nobody is there to finish it: if cuhook is killed at any instant of a call, the thread
 * still comes back here and puts itself back exactly where it was.
 *
 * The caller's frame, built by remote_call.c on the thread's stack, is the kernel's signal frame
 * (struct rt_sigframe: return address, ucontext, siginfo): the called function returns here with
 * rsp at its ucontext, which holds the thread's registers, signal mask and vector state as they
 * were. rt_sigreturn restores all of that from it, as after a signal handler.
 *
 * Before that, if the frame names a report signal (RGATE_SIG), the thread sends it to itself:
 * a traced thread stops on it (ptrace sees a signal before it is delivered, even an ignored one),
 * and cuhook reads the result in r12 and puts the thread back itself. Untraced (cuhook gone), the
 * signal is one the process leaves at its default action "ignore", so the kernel discards it at
 * once and rt_sigreturn runs. Only rsp-relative addressing: the code runs at any address. */

#define RGATE_TGID 0x130 /* the siginfo area of the frame, as seen from rsp here */
#define RGATE_TID 0x138
#define RGATE_SIG 0x140

	.section .rodata
	.globl rgate_code, rgate_reported, rgate_returned, rgate_code_end
	.hidden rgate_code, rgate_reported, rgate_returned, rgate_code_end
rgate_code:
	mov %rax, %r12              /* the result, where the tracer reads it */
	mov RGATE_SIG(%rsp), %rdx
	test %rdx, %rdx
	jz rgate_reported
	mov RGATE_TGID(%rsp), %rdi
	mov RGATE_TID(%rsp), %rsi
	mov $234, %eax              /* tgkill(tgid, tid, sig) */
	syscall
rgate_reported:                 /* rip at the report signal's stop */
	mov $15, %eax               /* rt_sigreturn */
	syscall
rgate_returned:                 /* rip at rt_sigreturn's system-call-entry stop */
	ud2
rgate_code_end:
	.section .note.GNU-stack, "", @progbits
