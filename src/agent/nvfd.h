/* The ioctl watch (agent option ioctl=1): libc's ioctl is hooked like a driver function and
 * recorded, at its natural nesting depth under the cu* call that made it, but only when its fd
 * is an NVIDIA device file (ioctl_paths, default /dev/nvidia*). Whether an fd is one is kept in
 * a table, so that the per-call check is one load and no system call:
 *
 *   nvfd_state[fd] = class | generation << 2   (fds below NVFD_MAX; beyond, every ioctl asks)
 *   class: NVFD_UNKNOWN (never looked at, or forgotten), NVFD_NVIDIA, NVFD_OTHER
 *
 * An unknown fd is classified on its first ioctl by nvfd_classify() (a rare path, through
 * cuhook_call_saving_vectors: readlink of /proc/self/fd/N, then the ioctl_paths globs). The
 * number of an fd that is closed, replaced or newly created is forgotten, so that its next ioctl
 * looks again. libc's calls that do that are internal hooks (HOOK_FDOP, not recorded), with
 * hooks_hot[].aux saying which descriptor they affect:
 *
 *   close(fd), __close_nocancel(fd),      forgotten at entry and again at exit
 *   close_range(lo, hi)
 *   dup2(old, fd), dup3(old, fd, flags)   fd forgotten at entry and at exit
 *   open, openat, creat, dup,             the returned fd forgotten at exit
 *   __open_nocancel
 *   fcntl(fd, F_DUPFD[_CLOEXEC], min)     the returned fd forgotten at exit
 *
 * (__close_nocancel and __open_nocancel are glibc's private entry points, which its own
 * functions use instead of the exported ones: fclose, closedir, fopen with "c"...)
 *
 * Why both ends. The kernel frees the number inside close(); another thread may get it from
 * open() before close's exit runs, and use it at once. Its open's own exit has forgotten the
 * number by then (the opening thread's ioctl comes after its open returned), so the ioctl looks
 * again. The entry side needs no thread state and always runs: it covers the calls whose exit
 * is not taken. These hooks never create thread state (a vfork child would make its parent's,
 * and a thread that never traces would carry a ring): in a thread without state, and in the
 * agent's own threads or while a handler is busy, only the entry side runs. That suffices for
 * closes (the number is forgotten before it is freed); creation-side forgetting is the second
 * net, for numbers freed where no hook sees it (raw syscalls). What remains (docs/agent.md):
 *   - an fd closed AND re-created where no hook sees it (a raw close syscall, then a socket,
 *     pipe, accept, eventfd, an fd received with SCM_RIGHTS, or a descriptor opened by a thread
 *     without agent state) keeps the old number's class until its number is closed or created
 *     through a hooked call again;
 *   - an ioctl made concurrently with close() of the same fd by another thread (a program race)
 *     may classify the file that is going away;
 *   - a classification racing with a forget never overwrites it: the generation must not have
 *     moved for the class to be stored (the racing call itself uses what it found).
 *
 * The inline functions here run in the per-call handlers (record.c, built without vector
 * registers or libc calls). */
#ifndef CUHOOK_NVFD_H
#define CUHOOK_NVFD_H

#include <stdbool.h>
#include <stdint.h>

#include "hook_table.h"
#include "record.h"
#include "stub_frame.h"
#include "decoders.h"

#define NVFD_MAX 65536u

enum { NVFD_UNKNOWN = 0, NVFD_NVIDIA = 1, NVFD_OTHER = 2 };

/* hooks_hot[].aux of the HOOK_FDOP hooks */
enum nvfd_op {
	NVFD_OP_NONE = 0,
	NVFD_OP_CLOSE = 1,       /* args[0] */
	NVFD_OP_CLOSE_RANGE = 2, /* args[0] .. args[1] */
	NVFD_OP_DUP2 = 3,        /* args[1] (and the result) */
	NVFD_OP_NEW = 4,         /* the result */
	NVFD_OP_FCNTL = 5,       /* the result when args[1] is F_DUPFD or F_DUPFD_CLOEXEC */
};

#define NVFD_F_DUPFD 0
#define NVFD_F_DUPFD_CLOEXEC 1030

extern uint32_t nvfd_state[NVFD_MAX];
extern uint32_t nvfd_high; /* 1 + the highest fd ever classified (forget_range stops there) */

/* Rare path (through cuhook_call_saving_vectors): classify fd (uintptr_t), store the class if no
 * forget raced with it, return it. */
uintptr_t nvfd_classify(void *fd);
/* Rare path: errno of the calling thread, for the DATA record of a failed ioctl. */
uintptr_t nvfd_errno(void *unused);

/* The hooks (libc's ioctl, and the HOOK_FDOP ones), in two halves as the dlopen watch
 * (loader_watch.h). nvfd_prepare(ioctl_paths): take the paths, find the functions and write
 * their stubs the first time (dlsym, agent_lock: never with the other threads stopped).
 * nvfd_arm: forget every classification made before (fds changed while the hooks were off) and
 * write the jumps, at every start; it allocates and locks nothing, with agent_lock held by the
 * caller. 0, or -1 when ioctl itself could not be hooked (a message was logged). */
int nvfd_prepare(const char *paths);
int nvfd_arm(bool threads_stopped);

/* Path globs: comma-separated, '*' any run of characters ('/' included), '?' one character; a
 * pattern starting with '-' or '!' excludes. Matches if some include and no exclude matches.
 * Async-signal-safe (no allocation). Exported for the unit test. */
int nvfd_path_match(const char *patterns, const char *path);

/* ---- per-call helpers (record.c) ------------------------------------------------------------ */

static inline unsigned nvfd_class(uint64_t fd)
{
	if (fd >= NVFD_MAX)
		return NVFD_UNKNOWN;
	return __atomic_load_n(&nvfd_state[fd], __ATOMIC_ACQUIRE) & 3u;
}

/* Forget what is known of fd (a new generation, class unknown). */
static inline void nvfd_forget(uint64_t fd)
{
	fd = (uint32_t)fd; /* an int argument or result: -1 becomes large and is ignored */
	if (fd >= NVFD_MAX)
		return;
	uint32_t *p = &nvfd_state[fd];
	uint32_t s = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(p, &s, (s | 3u) + 1u, 1, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
	}
}

static inline void nvfd_forget_range(uint64_t lo, uint64_t hi)
{
	lo = (uint32_t)lo;
	hi = (uint32_t)hi;
	uint64_t high = __atomic_load_n(&nvfd_high, __ATOMIC_SEQ_CST);
	if (hi >= high)
		hi = high ? high - 1 : 0;
	for (uint64_t fd = lo; fd <= hi && high; fd++)
		nvfd_forget(fd);
}

/* At entry of a HOOK_IOCTL or HOOK_FDOP hook, before anything else: 1 to go on (record, or take
 * the return), 0 to pass the call straight through untraced. */
static inline int nvfd_entry(const struct hook_hot *hh, const struct entry_frame *f)
{
	if (!cuhook_recording)
		return 0;
	if (hh->flags & HOOK_IOCTL) {
		uint64_t fd = (uint32_t)f->rdi;
		if (fd >= 0x80000000u)
			return 0; /* negative: EBADF, not a device */
		unsigned c = nvfd_class(fd);
		if (__builtin_expect(c == NVFD_UNKNOWN, 0))
			c = (unsigned)cuhook_call_saving_vectors(nvfd_classify, (void *)(uintptr_t)fd);
		return c == NVFD_NVIDIA;
	}
	switch (hh->aux) {
	case NVFD_OP_CLOSE:
		nvfd_forget(f->rdi);
		break;
	case NVFD_OP_CLOSE_RANGE:
		nvfd_forget_range(f->rdi, f->rsi);
		break;
	case NVFD_OP_DUP2:
		nvfd_forget(f->rsi);
		break;
	default:
		break;
	}
	return 1;
}

/* At exit of a HOOK_FDOP hook: args are the entry's argument registers. */
static inline void nvfd_exit(const struct hook_hot *hh, const uint64_t *args, uint64_t ret)
{
	switch (hh->aux) {
	case NVFD_OP_CLOSE:
		nvfd_forget(args[0]);
		break;
	case NVFD_OP_CLOSE_RANGE:
		nvfd_forget_range(args[0], args[1]);
		break;
	case NVFD_OP_DUP2:
		nvfd_forget(args[1]);
		nvfd_forget(ret);
		break;
	case NVFD_OP_NEW:
		nvfd_forget(ret);
		break;
	case NVFD_OP_FCNTL:
		if ((int)args[1] == NVFD_F_DUPFD || (int)args[1] == NVFD_F_DUPFD_CLOEXEC)
			nvfd_forget(ret);
		break;
	default:
		break;
	}
}

/* ---- what an ioctl's DATA record copies (decoders.h, the "ioctl" decoder) ------------------- */

#define NVFD_PAGE 4096u
#define NVFD_XFER_NR 211u        /* NV_ESC_IOCTL_XFER_CMD: 'F', NV_IOCTL_BASE + 11 */
#define NVFD_NV_TYPE 0x46u       /* 'F' */
#define NVFD_UVM_INITIALIZE 0x30000001u

/* Bytes of the argument struct at argp to copy after an ioctl that returned 0. */
static inline unsigned nvfd_arg_bytes(uint64_t request, uintptr_t argp)
{
	uint32_t req = (uint32_t)request; /* the kernel's cmd is an unsigned int */
	if (!argp)
		return 0;
	unsigned dir = req >> 30, size = (req >> 16) & 0x3fffu;
	if (dir != 0) /* _IOC encoding: the driver copied `size` bytes from and/or to argp */
		return size < CUHOOK_IOCTL_MAX_BYTES ? size : CUHOOK_IOCTL_MAX_BYTES;
	if ((req >= 1 && req <= 2047) || req == NVFD_UVM_INITIALIZE) {
		/* nvidia-uvm's raw numbers: a params struct of a size the number does not say; stay
		 * inside argp's page (the driver touched its first bytes, so that page is mapped) */
		unsigned n = NVFD_PAGE - (unsigned)(argp & (NVFD_PAGE - 1));
		return n < CUHOOK_IOCTL_MAX_BYTES ? n : CUHOOK_IOCTL_MAX_BYTES;
	}
	return 0; /* another raw number: its argument may not be a pointer */
}

/* NV_ESC_IOCTL_XFER_CMD carries {u32 cmd; u32 size; u64 ptr} and the real struct at ptr, which
 * the driver copied in and out: how many of its bytes to copy too, and where they are. */
static inline unsigned nvfd_xfer_bytes(uint64_t request, const uint8_t *arg, unsigned n, const uint8_t **inner)
{
	uint32_t req = (uint32_t)request;
	*inner = 0;
	if ((req & 0xffu) != NVFD_XFER_NR || ((req >> 8) & 0xffu) != NVFD_NV_TYPE || (req >> 30) == 0 || n < 16)
		return 0;
	uint32_t size = *(const uint32_t *)(arg + 4);
	const uint8_t *p = (const uint8_t *)(uintptr_t) * (const uint64_t *)(arg + 8);
	if (!p || !size)
		return 0;
	*inner = p;
	return size < CUHOOK_IOCTL_MAX_BYTES ? size : CUHOOK_IOCTL_MAX_BYTES;
}

#endif
