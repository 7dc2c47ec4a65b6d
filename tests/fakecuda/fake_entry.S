/* Entry points of the stand-in libcuda.so.1, in assembly because their first bytes are what the
 * patching engine reads, relocates or refuses. Semantics live in fake_driver.c (hidden
 * functions impl_*) where convenient; fakecuda.h lists what each function returns.
 *
 * Built twice: plain (the shapes measured in the real libcuda 580, which has no endbr64), and
 * with -DFAKE_ENDBR (every function but cuFakeShort starts with endbr64, as code built with
 * -fcf-protection does). Every function is .p2align 4 and has .type/.size, so st_size is exact.
 *
 * Comments use C syntax: this file goes through the C preprocessor. */
	.intel_syntax noprefix

#ifdef FAKE_ENDBR
#define ENDBR endbr64
#else
#define ENDBR
#endif

/* Devices the stand-in offers: fakecuda.h's FAKECUDA_DEVICES. */
#define FAKECUDA_DEVICES 2

/* The value libcuda's entry points compare a global against before taking the fast path. */
#define READY_MAGIC 0x321cba00

.macro FUNC_BEGIN name
	.globl \name
	.type \name, @function
	.p2align 4
\name:
.endm

.macro FUNC_END name
	.size \name, . - \name
.endm

/* The shape of most libcuda 580 entry points (measured):
 *   push rbp; mov rbp,rsp; push r12; sub rsp,8; cmp dword ptr [rip+N],imm32; je rel32;
 *   call qword ptr [rip+N]
 * a global check, then an indirect call through an internal table. Here the global starts
 * unset, the table's function (fake_lazy_init, which clobbers no register) sets it, so both
 * paths run. Then the frame is undone and the C body is entered with the caller's registers and
 * stack untouched (a tail jump), stack arguments included. */
.macro DRIVER_FN name, impl
	FUNC_BEGIN \name
	ENDBR
	push rbp
	mov rbp, rsp
	push r12
	sub rsp, 8
	cmp dword ptr [rip + fake_ready], READY_MAGIC
	{disp32} je 1f
	call qword ptr [rip + fake_slow_table]
1:
	add rsp, 8
	pop r12
	pop rbp
	jmp \impl
	FUNC_END \name
.endm

	.text

/* ---- the usual prologue, C bodies ----------------------------------------------------------- */
	DRIVER_FN cuInit, impl_cuInit
	DRIVER_FN cuDriverGetVersion, impl_cuDriverGetVersion
	DRIVER_FN cuDeviceGet, impl_cuDeviceGet
	DRIVER_FN cuDeviceGetAttribute, impl_cuDeviceGetAttribute
	DRIVER_FN cuDevicePrimaryCtxRetain, impl_cuDevicePrimaryCtxRetain
	DRIVER_FN cuDevicePrimaryCtxRelease_v2, impl_cuDevicePrimaryCtxRelease_v2
	DRIVER_FN cuCtxSetCurrent, impl_cuCtxSetCurrent
	DRIVER_FN cuCtxGetCurrent, impl_cuCtxGetCurrent
	DRIVER_FN cuCtxPushCurrent_v2, impl_cuCtxPushCurrent_v2
	DRIVER_FN cuCtxPopCurrent_v2, impl_cuCtxPopCurrent_v2
	DRIVER_FN cuCtxCreate_v2, impl_cuCtxCreate_v2
	DRIVER_FN cuCtxDestroy_v2, impl_cuCtxDestroy_v2
	DRIVER_FN cuCtxSynchronize, impl_cuCtxSynchronize
	DRIVER_FN cuProfilerStart, impl_cuProfilerStart
	DRIVER_FN cuProfilerStop, impl_cuProfilerStop
	DRIVER_FN cuCtxGetDevice, impl_cuCtxGetDevice
	DRIVER_FN cuCtxGetDevice_v2, impl_cuCtxGetDevice_v2
	DRIVER_FN cuDevicePrimaryCtxGetState, impl_cuDevicePrimaryCtxGetState
	DRIVER_FN cuMemAlloc_v2, impl_cuMemAlloc_v2
	DRIVER_FN cuMemFree_v2, impl_cuMemFree_v2
	DRIVER_FN cuMemcpyHtoD_v2, impl_cuMemcpyHtoD_v2
	DRIVER_FN cuMemcpyDtoH_v2, impl_cuMemcpyDtoH_v2
	DRIVER_FN cuMemcpyDtoD_v2, impl_cuMemcpyDtoD_v2
	DRIVER_FN cuMemcpyAsync, impl_cuMemcpyAsync
	DRIVER_FN cuMemcpyHtoDAsync_v2, impl_cuMemcpyHtoDAsync_v2
	DRIVER_FN cuMemcpyDtoHAsync_v2, impl_cuMemcpyDtoHAsync_v2
	DRIVER_FN cuMemsetD8_v2, impl_cuMemsetD8_v2
	DRIVER_FN cuMemsetD32_v2, impl_cuMemsetD32_v2
	DRIVER_FN cuMemsetD32Async, impl_cuMemsetD32Async
	DRIVER_FN cuModuleLoadData, impl_cuModuleLoadData
	DRIVER_FN cuModuleGetFunction, impl_cuModuleGetFunction
	DRIVER_FN cuModuleUnload, impl_cuModuleUnload
	DRIVER_FN cuLaunchKernel, impl_cuLaunchKernel
	DRIVER_FN cuLaunchKernelEx, impl_cuLaunchKernelEx
	DRIVER_FN cuGraphCreate, impl_cuGraphCreate
	DRIVER_FN cuGraphAddKernelNode_v2, impl_cuGraphAddKernelNode_v2
	DRIVER_FN cuGraphInstantiateWithFlags, impl_cuGraphInstantiateWithFlags
	DRIVER_FN cuGraphLaunch, impl_cuGraphLaunch
	DRIVER_FN cuGraphExecDestroy, impl_cuGraphExecDestroy
	DRIVER_FN cuGraphDestroy, impl_cuGraphDestroy
	DRIVER_FN cuGraphGetNodes, impl_cuGraphGetNodes
	DRIVER_FN cuGraphNodeGetType, impl_cuGraphNodeGetType
	DRIVER_FN cuGraphKernelNodeGetParams_v2, impl_cuGraphKernelNodeGetParams_v2
	DRIVER_FN cuFuncGetName, impl_cuFuncGetName
	DRIVER_FN cuKernelGetName, impl_cuKernelGetName
	DRIVER_FN cuStreamCreate, impl_cuStreamCreate
	DRIVER_FN cuStreamDestroy_v2, impl_cuStreamDestroy_v2
	DRIVER_FN cuStreamSynchronize, impl_cuStreamSynchronize
	DRIVER_FN cuGetProcAddress_v2, impl_cuGetProcAddress_v2
	DRIVER_FN cuGetProcAddress, impl_cuGetProcAddress
	DRIVER_FN cuGetExportTable, impl_cuGetExportTable
	DRIVER_FN cuGetErrorString, impl_cuGetErrorString
	/* float arguments in xmm0/xmm1, and a double result in xmm0 */
	DRIVER_FN cuFakeScale, impl_cuFakeScale
	DRIVER_FN cuFakeMulD, impl_cuFakeMulD
	/* nesting: the outer body calls cuFakeInner through its exported (patched) entry */
	DRIVER_FN cuFakeOuter, impl_cuFakeOuter
	DRIVER_FN cuFakeInner, impl_cuFakeInner

/* Two names, one address (as symbol versions or _v2 aliases produce): one is hooked, the
 * other must be reported as an alias, and calls through either name counted once. */
	.globl cuFakeAlias_v2
	.type cuFakeAlias_v2, @function
	DRIVER_FN cuFakeAlias, impl_cuFakeAlias
	.set cuFakeAlias_v2, cuFakeAlias
	.size cuFakeAlias_v2, . - cuFakeAlias

/* ---- mov eax, imm32; ret: 6-byte functions exactly 16 bytes apart ---------------------------
 * The jump fills the mov; the ret after it stays, and the next function is 10 bytes further. */
FUNC_BEGIN cuFakeConstA
	ENDBR
	mov eax, 0
	ret
FUNC_END cuFakeConstA

FUNC_BEGIN cuFakeConstB
	ENDBR
	mov eax, 0x5a
	ret
FUNC_END cuFakeConstB

FUNC_BEGIN cuFakeConstC
	ENDBR
	mov eax, 999
	ret
FUNC_END cuFakeConstC

/* ---- mov eax,[rip+N]; add eax,1; mov [rip+N],eax; ret ---------------------------------------
 * The overwritten bytes are exactly one RIP-relative load whose displacement must be rebased. */
FUNC_BEGIN cuFakeNextSerial
	ENDBR
	mov eax, dword ptr [rip + fake_serial]
	add eax, 1
	mov dword ptr [rip + fake_serial], eax
	ret
FUNC_END cuFakeNextSerial

/* ---- lea rax,[rip+N]; ...; jne rel32 -------------------------------------------------------- */
FUNC_BEGIN cuDeviceGetCount
	ENDBR
	lea rax, [rip + fake_initialized]
	cmp dword ptr [rax], 0
	{disp32} jne .Lcount_init
	mov eax, 3                       /* CUDA_ERROR_NOT_INITIALIZED */
	ret
.Lcount_init:
	test rdi, rdi
	je .Lcount_null
	mov dword ptr [rdi], FAKECUDA_DEVICES
	xor eax, eax
	ret
.Lcount_null:
	mov eax, 1                       /* CUDA_ERROR_INVALID_VALUE */
	ret
FUNC_END cuDeviceGetCount

/* ---- cmp edi,1; je rel8; cmp edi,2; je rel32 -------------------------------------------------
 * Without endbr64 the first 5 bytes end with a rel8 je, which must be widened when moved. */
FUNC_BEGIN cuFakeSwitch
	ENDBR
	cmp edi, 1
	je .Lswitch_1
	cmp edi, 2
	{disp32} je .Lswitch_2
	lea eax, [rsi + 1000]
	ret
.Lswitch_1:
	lea eax, [rsi + rsi * 2]
	ret
.Lswitch_2:
	mov eax, esi
	xor eax, 0x5a5a
	ret
FUNC_END cuFakeSwitch

/* ---- cmp dword ptr [rip+N], imm8 first: the displacement is followed by an immediate ------ */
FUNC_BEGIN cuFakeRipCmp
	ENDBR
	cmp dword ptr [rip + fake_initialized], 0
	je .Lripcmp_not_init
	lea eax, [rdi + rdi + 1]
	ret
.Lripcmp_not_init:
	mov eax, 3
	ret
FUNC_END cuFakeRipCmp

/* ---- a loop back into the first 5 bytes -----------------------------------------------------
 * The loop head lies inside the bytes the jump would overwrite (offset 2; after endbr64, the
 * first real instruction at offset 4), so patching it would send every iteration into the
 * middle of the jump. The engine must REFUSE this function; it must keep working unpatched. */
FUNC_BEGIN cuFakeLoopBack
#ifdef FAKE_ENDBR
	endbr64
.Lloopback_top:
	add esi, edi
	dec edi
	jg .Lloopback_top
	mov eax, esi
	ret
#else
	mov eax, esi
.Lloopback_top:
	add eax, edi
	dec edi
	jg .Lloopback_top
	ret
#endif
FUNC_END cuFakeLoopBack

/* ---- a loop back to the function's own first byte -------------------------------------------
 * The loop head is the first instruction (offset 0; after endbr64, offset 4), overwritten too:
 * patched, each iteration would re-enter the hook (and a thread preempted at the second add
 * would resume inside the jump). An engine that only checks targets strictly after the
 * function's start misses this one. REFUSE. */
FUNC_BEGIN cuFakeLoopToStart
	ENDBR
.Lloopstart_top:
	add esi, edi
	add esi, edi
	dec edi
	jg .Lloopstart_top
	mov eax, esi
	ret
FUNC_END cuFakeLoopToStart

/* ---- 4 bytes: too small for a 5-byte jump (no endbr64 even in that build, on purpose) ---- */
FUNC_BEGIN cuFakeShort
	push 7
	pop rax
	ret
FUNC_END cuFakeShort

/* ---- relies on al, as varargs functions do: returns base + al ----------------------------
 * A hook that clobbers rax on the way in changes the result. */
FUNC_BEGIN cuFakeAlEcho
	ENDBR
	movzx eax, al
	add eax, edi
	ret
FUNC_END cuFakeAlEcho

/* ---- call rel32 as the first instruction ----------------------------------------------------
 * fake_state_ptr returns the address of a constant and touches no other register. */
FUNC_BEGIN cuFakeCallFirst
	ENDBR
	call fake_state_ptr
	mov eax, dword ptr [rax]
	add eax, edi
	ret
FUNC_END cuFakeCallFirst

/* ---- a whole function that is one jmp rel32 (5 bytes without endbr64) --------------------- */
FUNC_BEGIN cuFakeThunk
	ENDBR
	jmp impl_cuFakeThunk
FUNC_END cuFakeThunk

/* ---- internal, not exported ------------------------------------------------------------------ */
	.p2align 4
	.type fake_lazy_init, @function
fake_lazy_init:
	mov dword ptr [rip + fake_ready], READY_MAGIC
	ret
	.size fake_lazy_init, . - fake_lazy_init

	.p2align 4
	.type fake_state_ptr, @function
fake_state_ptr:
	lea rax, [rip + fake_call_first_value]
	ret
	.size fake_state_ptr, . - fake_state_ptr

	.section .rodata
	.p2align 2
fake_call_first_value:
	.long 0x700

	.section .data.rel.ro, "aw"
	.p2align 3
fake_slow_table:
	.quad fake_lazy_init

	.data
	.p2align 2
fake_ready:
	.long 0
fake_serial:
	.long 41

	.section .note.GNU-stack, "", @progbits

/* ==== robustness tests (tests/robust) ============================================================
 * Added for tests/robust; the usual libcuda prologue, C bodies in fake_driver.c (same block).
 *   cuFakeRecurse:  recursion through its own exported (patched) entry, deeper than the agent's
 *                   shadow stack
 *   cuFakeCallback: calls a caller-supplied function pointer, which may longjmp out past it */
	.text
	DRIVER_FN cuFakeRecurse, impl_cuFakeRecurse
	DRIVER_FN cuFakeCallback, impl_cuFakeCallback
	.section .note.GNU-stack, "", @progbits

/* ==== ioctl tests (tests/ioctl) =================================================================
 * Added for tests/ioctl; the usual libcuda prologue, C bodies in fake_driver.c (same block): the
 * functions that issue ioctls on the stand-in's "NVIDIA device files" (fakecuda.h). */
	.text
	DRIVER_FN cuFakeNvOpen, impl_cuFakeNvOpen
	DRIVER_FN cuFakeNvFd, impl_cuFakeNvFd
	DRIVER_FN cuFakeNvAlloc, impl_cuFakeNvAlloc
	DRIVER_FN cuFakeNvControl, impl_cuFakeNvControl
	DRIVER_FN cuFakeNvControlXfer, impl_cuFakeNvControlXfer
	DRIVER_FN cuFakeNvFree, impl_cuFakeNvFree
	DRIVER_FN cuFakeNvUvm, impl_cuFakeNvUvm
	DRIVER_FN cuFakeNvNested, impl_cuFakeNvNested
	DRIVER_FN cuFakeNvUnknown, impl_cuFakeNvUnknown
	DRIVER_FN cuFakeNvNotDevice, impl_cuFakeNvNotDevice
	DRIVER_FN cuFakeNvClose, impl_cuFakeNvClose
	.section .note.GNU-stack, "", @progbits

/* ==== flight recorder tests (tests/engine/check_flight.py) ======================================
 * The usual libcuda prologue, C bodies in fake_driver.c (same block): a call that fails on a
 * chosen argument (the error trigger) and one that lasts a chosen time (the slow trigger). */
	.text
	DRIVER_FN cuFakeStep, impl_cuFakeStep
	DRIVER_FN cuFakeSleep, impl_cuFakeSleep
	.section .note.GNU-stack, "", @progbits

/* ==== register probe (tests/engine/check_reg_probe.py) ==========================================
 * cuFakeRegProbe writes, at its entry, what the caller left in every general register (r11 and
 * rsp aside: the caller's stack pointer is stored instead) and in xmm0-7 to fake_probe_in
 * (exported data, 16 + 8 x 2 quadwords); then returns fixed values in rax, rdx, xmm0 and xmm1,
 * with every other caller-saved register clobbered, as a compiled function may. The caller
 * (tests/targets/reg_probe_call.S) checks the rest. Layout of fake_probe_in, in quadwords:
 *   0 rax  1 rbx  2 rcx  3 rdx  4 rsi  5 rdi  6 rbp  7 rsp after the call returns
 *   8 r8   9 r9  10 r10 11 (0) 12 r12 13 r13 14 r14 15 r15  16.. xmm0-7 (16 bytes each) */
	.bss
	.globl fake_probe_in
	.type fake_probe_in, @object
	.p2align 6
fake_probe_in:
.Lprobe_in:                     /* the local name: the code's rip-relative stores bind here */
	.zero 16 * 8 + 8 * 16
	.size fake_probe_in, . - fake_probe_in

	.text
	FUNC_BEGIN cuFakeRegProbe
	ENDBR
	push rbp
	mov rbp, rsp
	push r12
	sub rsp, 8
	mov [rip + .Lprobe_in + 0], rax
	mov [rip + .Lprobe_in + 8], rbx
	mov [rip + .Lprobe_in + 16], rcx
	mov [rip + .Lprobe_in + 24], rdx
	mov [rip + .Lprobe_in + 32], rsi
	mov [rip + .Lprobe_in + 40], rdi
	mov rax, [rbp]
	mov [rip + .Lprobe_in + 48], rax
	lea rax, [rbp + 16]
	mov [rip + .Lprobe_in + 56], rax
	mov [rip + .Lprobe_in + 64], r8
	mov [rip + .Lprobe_in + 72], r9
	mov [rip + .Lprobe_in + 80], r10
	mov [rip + .Lprobe_in + 96], r12
	mov [rip + .Lprobe_in + 104], r13
	mov [rip + .Lprobe_in + 112], r14
	mov [rip + .Lprobe_in + 120], r15
	movdqu [rip + .Lprobe_in + 128], xmm0
	movdqu [rip + .Lprobe_in + 144], xmm1
	movdqu [rip + .Lprobe_in + 160], xmm2
	movdqu [rip + .Lprobe_in + 176], xmm3
	movdqu [rip + .Lprobe_in + 192], xmm4
	movdqu [rip + .Lprobe_in + 208], xmm5
	movdqu [rip + .Lprobe_in + 224], xmm6
	movdqu [rip + .Lprobe_in + 240], xmm7
	movabs rax, 0x1122334455667788
	movabs rdx, 0x99aabbccddeeff01
	movq xmm0, rdx
	movq xmm1, rax
	mov rcx, -1
	mov rsi, -1
	mov rdi, -1
	mov r8, -1
	mov r9, -1
	mov r10, -1
	mov r11, -1
	add rsp, 8
	pop r12
	pop rbp
	ret
	FUNC_END cuFakeRegProbe
/* ---- functions behind the export tables (cuGetExportTable) --------------------------------------
 * Not exported (hidden: no dynamic symbol), reached only through the tables fake_driver.c builds,
 * as the real driver's are. They have the usual entry shape and an unwind entry (CFI), which the
 * agent takes their extent from; fake_et_nocfi has none, so the agent must refuse it. */
.macro TABLE_FN name, impl
	.globl \name
	.hidden \name
	.type \name, @function
	.p2align 4
\name:
	.cfi_startproc
	ENDBR
	push rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	mov rbp, rsp
	.cfi_def_cfa_register rbp
	push r12
	sub rsp, 8
	cmp dword ptr [rip + fake_ready], READY_MAGIC
	{disp32} je 1f
	call qword ptr [rip + fake_slow_table]
1:
	add rsp, 8
	pop r12
	pop rbp
	.cfi_def_cfa rsp, 8
	jmp \impl
	.cfi_endproc
	.size \name, . - \name
.endm

	.text
	TABLE_FN fake_et_mix, impl_et_mix
	TABLE_FN fake_et_add3, impl_et_add3
	TABLE_FN fake_et_shared, impl_et_shared
	TABLE_FN fake_et2_first, impl_et2_first

	.globl fake_et_nocfi
	.hidden fake_et_nocfi
	.type fake_et_nocfi, @function
	.p2align 4
fake_et_nocfi:
	ENDBR
	push rbp
	mov rbp, rsp
	push r12
	sub rsp, 8
	add rsp, 8
	pop r12
	pop rbp
	jmp impl_et_nocfi
	.size fake_et_nocfi, . - fake_et_nocfi

/* A public function that calls into an export table's function (fakecuda.h) */
	DRIVER_FN cuFakeExportCall, impl_cuFakeExportCall
	.section .note.GNU-stack, "", @progbits
