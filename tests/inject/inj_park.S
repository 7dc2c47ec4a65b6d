/* libinj_park.so: one function, cuInjRead(fd, buf, n) = read(2), whose system call lies inside
 * its first five bytes. A thread blocked in it sits (for the kernel) at the `syscall`, offset 2:
 * inside the bytes a patch overwrites, deterministically. When the agent patches it (options
 * lib=libinj_park.so*;funcs=cuInj*), the injector must move that thread into the relocated copy,
 * where the kernel restarts the read; at detach, back. Without the move, the restarted read
 * would execute the middle of the jump. */
	.text
	.globl cuInjRead
	.type cuInjRead, @function
	.p2align 4
cuInjRead:
	xorl %eax, %eax         /* __NR_read */
	syscall
	nop
	nop
	nop
	ret
	.size cuInjRead, .-cuInjRead
	.section .note.GNU-stack, "", @progbits
