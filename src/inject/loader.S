/* The start routine of the agent's loading thread: the injector has a program thread call
 * pthread_create with this code (copied into the call gate's page, loader_thread.c) and its data
 * page, then lets that thread go. The new thread, of the agent's own, does the slow part of an
 * attach while every thread of the program runs: dlopen(agent), cuhook_agent_prepare(options),
 * and leaves the results in the data page for the injector. It lists itself in the agent's
 * cuhook_agent_threads as soon as the agent is loaded (so that stopping the process leaves it
 * running), and takes itself off the list before it ends. Should cuhook be gone, it does the
 * same: nothing here waits for cuhook. Only rbx-relative data: the code runs at any address. */
#include "loader_layout.h"

	.section .rodata
	.globl rloader_code, rloader_code_end
	.hidden rloader_code, rloader_code_end
rloader_code:
	push %rbx                       /* also aligns the stack for the calls */
	mov %rdi, %rbx
	mov $186, %eax                  /* gettid */
	syscall
	mov %eax, LD_TID(%rbx)
	lea LD_T_START(%rbx), %rdi
	call clock_now
	call *LD_PTHREAD_SELF(%rbx)     /* detached: nobody joins it */
	mov %rax, %rdi
	call *LD_PTHREAD_DETACH(%rbx)
	mov LD_DLOPEN(%rbx), %rax
	test %rax, %rax
	jz 2f                           /* loaded already: its API is in the page */
	lea LD_PATH(%rbx), %rdi
	mov LD_MODE(%rbx), %rsi
	call *%rax
	mov %rax, LD_HANDLE(%rbx)
	test %rax, %rax
	jnz 1f
	mov LD_DLERROR(%rbx), %rcx
	call keep_message
	movl $LD_FAILED, LD_STATE(%rbx)
	jmp 9f
1:	lea LD_T_LOADED(%rbx), %rdi
	call clock_now
	movl $LD_LOADED, LD_STATE(%rbx)
	mov LD_HANDLE(%rbx), %rdi
	lea LD_SYM_PREPARE(%rbx), %rsi
	call *LD_DLSYM(%rbx)
	mov %rax, LD_PREPARE(%rbx)
	mov LD_HANDLE(%rbx), %rdi
	lea LD_SYM_LAST_ERROR(%rbx), %rsi
	call *LD_DLSYM(%rbx)
	mov %rax, LD_LAST_ERROR(%rbx)
	mov LD_HANDLE(%rbx), %rdi
	lea LD_SYM_THREADS(%rbx), %rsi
	call *LD_DLSYM(%rbx)
	mov %rax, LD_THREADS(%rbx)
2:	/* list this thread in a free slot of cuhook_agent_threads */
	mov LD_THREADS(%rbx), %rdi
	test %rdi, %rdi
	jz 4f
	mov LD_TID(%rbx), %edx
	lea LD_AT_TID(%rdi), %rsi
	mov $LD_AT_SLOTS, %ecx
3:	xor %eax, %eax
	lock cmpxchg %edx, (%rsi)
	je 6f
	add $4, %rsi
	dec %ecx
	jnz 3b
	jmp 4f                          /* no free slot: not listed (cannot happen) */
6:	mov %rsi, LD_SLOT(%rbx)
	lock incl LD_AT_GENERATION(%rdi)
4:	mov LD_PREPARE(%rbx), %rax
	test %rax, %rax
	jz 8f                           /* an agent without prepare: its start does it all */
	lea LD_OPTIONS(%rbx), %rdi
	call *%rax
	movslq %eax, %rax
	mov %rax, LD_PREPARE_RC(%rbx)
	test %rax, %rax
	jns 8f
	mov LD_LAST_ERROR(%rbx), %rcx
	call keep_message
8:	/* off the list, then done: the injector may stop the process from then on */
	mov LD_SLOT(%rbx), %rsi
	test %rsi, %rsi
	jz 10f
	movl $0, (%rsi)
	mov LD_THREADS(%rbx), %rdi
	lock incl LD_AT_GENERATION(%rdi)
10:	lea LD_T_DONE(%rbx), %rdi
	call clock_now
	movl $LD_DONE, LD_STATE(%rbx)
9:	pop %rbx
	xor %eax, %eax
	ret

/* clock_gettime(CLOCK_MONOTONIC, rdi), by the system call (no libc needed) */
clock_now:
	mov %rdi, %rsi
	mov $1, %edi
	mov $228, %eax
	syscall
	ret

/* The message the function at rcx returns (dlerror, cuhook_agent_last_error; rcx 0: none) into
 * LD_MSG. Called with the stack as at the calls above (16-byte aligned before the call). */
keep_message:
	sub $8, %rsp
	xor %eax, %eax
	test %rcx, %rcx
	jz 1f
	call *%rcx
1:	add $8, %rsp
	/* fall through */

/* The NUL-terminated string at rax (or none: NULL) into LD_MSG, cut to fit. */
copy_message:
	lea LD_MSG(%rbx), %rdi
	mov $LD_MSG_MAX - 1, %ecx
	test %rax, %rax
	jz 2f
1:	movzbl (%rax), %edx
	test %dl, %dl
	jz 2f
	mov %dl, (%rdi)
	inc %rax
	inc %rdi
	dec %ecx
	jnz 1b
2:	movb $0, (%rdi)
	ret
rloader_code_end:
	.section .note.GNU-stack, "", @progbits
