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

/* The entry stub of a program cuhook starts (`cuhook run`, an exec under --follow): the dynamic
 * loader jumps here instead of to the program's entry point (AT_ENTRY is redirected), once every
 * library is mapped and initialised. It reports with the same kind of signal and then goes on
 * to the real entry point. Traced, the thread stops on the report and cuhook puts the agent in
 * before one instruction of the program has run; untraced (cuhook gone), the program simply
 * starts. At an entry point only rsp and rdx (the loader's exit function) mean anything. The
 * three words after the code are filled in by cuhook. */
	.globl rentry_code, rentry_reported, rentry_target, rentry_code_end
	.hidden rentry_code, rentry_reported, rentry_target, rentry_code_end
rentry_code:
	mov %rdx, %r15
	mov rentry_pid(%rip), %rdi
	mov %rdi, %rsi              /* the thread that exec'd has the process's id */
	mov rentry_sig(%rip), %rdx
	mov $234, %eax              /* tgkill(pid, pid, sig) */
	syscall
rentry_reported:                /* rip at the report signal's stop */
	mov %r15, %rdx
	jmp *rentry_target(%rip)
	.balign 8
rentry_target: .quad 0          /* the program's entry point */
rentry_pid: .quad 0
rentry_sig: .quad 0
rentry_code_end:
	.section .note.GNU-stack, "", @progbits
