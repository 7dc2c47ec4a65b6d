/* Native stacks with libunwind, local unwinding, in the traced thread at the call's entry.
 *
 * Where the walk starts. The caller's callee-saved registers (rbx, rbp, r12-r15), which its
 * unwind rules may need (a frame-pointer CFA), are not in the stub's frame: by the time the C
 * handler runs they are wherever cuhook_on_entry's prologue saved them. So the walk does not
 * build a context from the entry frame; it starts here and unwinds out through our own frames
 * (this file's, cuhook_call_saving_vectors, cuhook_on_entry, cuhook_entry_stub, all with CFI) to
 * the frame whose ip is the traced call's return address: the caller's, with every register as
 * at the call.
 *
 * Two walks. The fast one (walk_traced) is libunwind's unw_backtrace, which remembers each pc's
 * frame rule per thread: after a call site's first call, no lock and no system call. The step
 * walk (walk_steps), unw_step frame by frame, is the path where the library lacks
 * unw_backtrace. Both end the same way on the same stack.
 *
 * Safety. Frames are kept while they have unwind information: where there is none for a pc (JIT
 * code, a stripped .eh_frame) the stack ends there, NO_INFO, as libunwind would otherwise guess
 * from rbp (the step walk never steps such a frame; the fast walk's guesses, each read checked
 * by the kernel first, are dropped). Each ip must be a user address, and in the step walk each
 * frame's sp must lie above the last (except across a signal frame, which may come from a
 * sigaltstack); the first frame that fails is not kept (BAD). The depth is bounded (stack_depth=).
 *
 * How libunwind is loaded. dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL), called through
 * pointers taken with dlsym from that handle: nothing of it enters the program's global scope,
 * and the agent itself links no unwinder, so its exports stay as agent.map says. A program that
 * links LLVM's libunwind (libunwind.so.1, whose functions are named unw_*) or GCC's unwinder
 * does not meet ours: the nongnu library's functions are named _ULx86_64_* (and unw_backtrace)
 * and are looked up in its own handle. A program that loaded libunwind.so.8 itself shares that
 * copy with us, which is the same library (its caching policy, set below, is then the
 * process's). RTLD_DEEPBIND is not used: it would bind libunwind's own malloc and libc calls past
 * a program's interposed allocator. RTLD_NOW: no lazy binding (and its loader lock) on the traced
 * path.
 *
 * Locks and allocations (docs/agent.md says the same): libunwind finds a pc's unwind information
 * through dl_iterate_phdr, which takes glibc's (recursive) loader lock, for the time of the
 * lookup, and its unw_step takes its global cache's lock with signals blocked (1.6 as Debian
 * builds it has no thread-local one): the step walk does both at every frame, the fast walk only
 * the first time a thread meets a pc. The fast walk's first call in a thread makes that thread's
 * rule cache: glibc's block for libunwind's thread-local variables (malloc), libunwind's mempool
 * (its lock, signals blocked) and an mmap of 256 KiB, freed when the thread exits. */
#include "stack_capture.h"

#include "py_stack.h"
#include "stack_table.h"
#include "stub_frame.h"
#include "thread_state.h"
#include "trace_format.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

static struct {
	int (*getcontext)(unw_context_t *);
	int (*init_local)(unw_cursor_t *, unw_context_t *);
	int (*step)(unw_cursor_t *);
	int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
	int (*get_proc_info_by_ip)(unw_addr_space_t, unw_word_t, unw_proc_info_t *, void *);
	int (*backtrace)(void **, int); /* the fast trace; NULL where the library lacks it */
	int (*set_caching_policy)(unw_addr_space_t, unw_caching_policy_t);
	unw_addr_space_t *local_as;
	int loaded; /* 1 loaded, -1 cannot be (kept for the process's life) */
} U;

static unsigned max_depth = STACK_DEPTH_DEFAULT;

/* Frames of our own between unw_getcontext and the traced call's caller (see above), with room
 * for a compiler that splits a function. */
#define OWN_FRAMES_MAX 8

/* The functions libunwind's header maps unw_* to in local-only mode. */
#define SYM(field, name)                                                                          \
	if (!(*(void **)&U.field = dlsym(h, name)))                                                 \
	return "libunwind.so.8 lacks " name

static const char *load_libunwind(void)
{
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return "libunwind.so.8 cannot be loaded";
	SYM(getcontext, "_Ux86_64_getcontext");
	SYM(init_local, "_ULx86_64_init_local");
	SYM(step, "_ULx86_64_step");
	SYM(get_reg, "_ULx86_64_get_reg");
	SYM(get_proc_info_by_ip, "_ULx86_64_get_proc_info_by_ip");
	SYM(set_caching_policy, "_ULx86_64_set_caching_policy");
	SYM(local_as, "_ULx86_64_local_addr_space");
	U.set_caching_policy(*U.local_as, UNW_CACHE_PER_THREAD);
	*(void **)&U.backtrace = dlsym(h, "unw_backtrace");
	return NULL;
}

bool stack_capture_setup(unsigned depth, const char **why)
{
	static const char *load_error;
	max_depth = depth >= 1 && depth <= STACK_DEPTH_MAX ? depth : STACK_DEPTH_DEFAULT;
	stack_table_init();
	/* the process's CPython, if it has one already (agent_scan_libraries looks again after
	 * each dlopen) */
	py_stack_setup();
	if (!U.loaded) {
		load_error = load_libunwind();
		__atomic_store_n(&U.loaded, load_error ? -1 : 1, __ATOMIC_RELEASE);
	}
	*why = load_error;
	return U.loaded > 0;
}

/* What a frame is, for the walk: its pc without unwind information (the walk ends there,
 * NO_INFO), with it, or the signal trampoline (the next frame is the one the signal interrupted,
 * whose address is exact, and whose sp may lie anywhere: a sigaltstack). */
enum frame_kind { FRAME_NO_INFO, FRAME_INFO, FRAME_SIGRETURN };

/* x86-64 Linux's signal trampoline (glibc's __restore_rt): mov $15,%rax; syscall. libunwind
 * knows it by the same bytes where the trampoline has no unwind information. */
static const unsigned char sigreturn_code[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};

/* Each pc's kind, remembered: libunwind searches every loaded object each time (dl_iterate_phdr,
 * with every signal blocked around it: two system calls), and a program's call sites repeat.
 * Direct-mapped; each slot one word, the pc shifted left and the kind in the low two bits, so
 * that a racing writer never pairs one pc with another's kind. Process-wide, shared by the
 * threads without a lock; a wrong slot is only a miss. */
#define KIND_SLOTS 8192u
static uint64_t kind_cache[KIND_SLOTS];

/* pc: the frame's address as the stack keeps it (a return address less one, or exact); code:
 * the address the frame resumes at, where a trampoline's code would be. */
static int frame_kind(uint64_t pc, uint64_t code)
{
	uint64_t *slot = &kind_cache[((pc >> 4) ^ (pc >> 17)) & (KIND_SLOTS - 1)];
	uint64_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);
	if (v >> 2 == pc)
		return (int)(v & 3);
	unw_proc_info_t pi;
	int rc = U.get_proc_info_by_ip(*U.local_as, pc, &pi, NULL);
	if (rc < 0 && rc != -UNW_ENOINFO)
		return -1;
	int kind = rc < 0 ? FRAME_NO_INFO : FRAME_INFO;
	/* the code is read only inside a procedure that unwind information describes: mapped */
	if (kind == FRAME_INFO && code >= pi.start_ip && code + sizeof(sigreturn_code) <= pi.end_ip &&
	    !memcmp((const void *)(uintptr_t)code, sigreturn_code, sizeof(sigreturn_code)))
		kind = FRAME_SIGRETURN;
	__atomic_store_n(slot, pc << 2 | (uint64_t)kind, __ATOMIC_RELAXED);
	return kind;
}

static int user_address(uint64_t a)
{
	return a >= 4096 && a < (1ull << 47);
}

/* The fast walk: libunwind's unw_backtrace, which keeps per thread each pc's frame rule (the CFA
 * from rsp or rbp and an offset, rbp's save slot, signal frames) found by one unw_step the first
 * time it meets the pc; from then on a frame costs a hash lookup and two stack reads, with no
 * lock and no system call. Its list starts in itself and holds raw return addresses: our own
 * frames are skipped up to the traced call's return address (the entry frame's), and every
 * frame is checked here as the step walk checks it. Past a pc without unwind information
 * libunwind guesses from rbp (in the fast trace, or in the unw_step walk it starts again with
 * where the fast trace meets a rule of another form), each guessed read checked by the kernel
 * first, so no fault: the frames from the first pc without information on are dropped, and the
 * stack ends NO_INFO there, as the step walk ends. The sps are not given: the order of the
 * frames on the stack cannot be checked. */
static uint8_t walk_traced(const struct entry_frame *f, uint64_t *pcs, unsigned max, unsigned *n)
{
	uint64_t code = f->ret;
	int kind = frame_kind(pcs[0], code);
	if (kind <= FRAME_NO_INFO) /* a caller without information (JIT code): no guess made at all */
		return kind < 0 ? CUHOOK_STACK_END_BAD : CUHOOK_STACK_END_NO_INFO;
	void *raw[OWN_FRAMES_MAX + STACK_DEPTH_MAX + 1];
	int got = U.backtrace(raw, OWN_FRAMES_MAX + (int)max + 1); /* one more tells DEPTH */
	int k = 0;
	while (k < got && k < OWN_FRAMES_MAX && (uint64_t)(uintptr_t)raw[k] != f->ret)
		k++;
	if (k >= got || (uint64_t)(uintptr_t)raw[k] != f->ret)
		return CUHOOK_STACK_END_BAD;
	for (;;) {
		if (*n > 1)
			kind = frame_kind(pcs[*n - 1], code);
		if (kind <= FRAME_NO_INFO) /* or -1: libunwind failed */
			return kind < 0 ? CUHOOK_STACK_END_BAD : CUHOOK_STACK_END_NO_INFO;
		if (++k >= got)
			return CUHOOK_STACK_END_DONE;
		if (*n == max)
			return CUHOOK_STACK_END_DEPTH;
		code = (uint64_t)(uintptr_t)raw[k];
		if (code == 0)
			return CUHOOK_STACK_END_DONE; /* the outermost frame's return address: none */
		if (!user_address(code))
			return CUHOOK_STACK_END_BAD;
		/* a return address less one is inside the call; an interrupted instruction is exact */
		pcs[(*n)++] = kind == FRAME_SIGRETURN ? code : code - 1;
	}
}

/* From the frame the cursor is at, step to the traced call's caller, whose return address and
 * stack pointer the entry frame gives. */
static int to_caller(unw_cursor_t *c, const struct entry_frame *f)
{
	const unw_word_t want_sp = (unw_word_t)&f->ret + 8;
	for (unsigned i = 0; i < OWN_FRAMES_MAX; i++) {
		unw_word_t ip, sp;
		if (U.step(c) <= 0 || U.get_reg(c, UNW_REG_IP, &ip) < 0 || U.get_reg(c, UNW_REG_SP, &sp) < 0)
			return -1;
		if (ip == f->ret && sp == want_sp)
			return 0;
		if (sp > want_sp)
			return -1;
	}
	return -1;
}

/* The step walk, where libunwind has no unw_backtrace: unw_step frame by frame (each step takes
 * libunwind's cache lock, with every signal blocked), from unw_getcontext here out through our
 * own frames to the caller's. It checks, besides the frames' kinds, that each frame's sp lies
 * above the last but across a signal frame. */
static uint8_t walk_steps(const struct entry_frame *f, uint64_t *pcs, unsigned max, unsigned *n)
{
	unw_context_t ctx;
	unw_cursor_t c;
	if (U.getcontext(&ctx) < 0 || U.init_local(&c, &ctx) < 0 || to_caller(&c, f) < 0)
		return CUHOOK_STACK_END_BAD;
	unw_word_t ip = f->ret, last_sp = (unw_word_t)&f->ret + 8;
	for (;;) {
		int kind = frame_kind(pcs[*n - 1], ip);
		if (kind <= FRAME_NO_INFO) /* or -1: libunwind failed */
			return kind < 0 ? CUHOOK_STACK_END_BAD : CUHOOK_STACK_END_NO_INFO;
		int rc = U.step(&c);
		if (rc == 0)
			return CUHOOK_STACK_END_DONE;
		if (rc == -UNW_ENOINFO)
			return CUHOOK_STACK_END_NO_INFO;
		if (rc < 0)
			return CUHOOK_STACK_END_BAD;
		if (*n == max)
			return CUHOOK_STACK_END_DEPTH;
		unw_word_t sp;
		if (U.get_reg(&c, UNW_REG_IP, &ip) < 0 || U.get_reg(&c, UNW_REG_SP, &sp) < 0)
			return CUHOOK_STACK_END_BAD;
		if (ip == 0)
			return CUHOOK_STACK_END_DONE; /* the outermost frame's return address: none */
		/* a stack grows down: callers lie above, but a signal frame may lead off a sigaltstack */
		if (!user_address(ip) || !user_address(sp) || (sp <= last_sp && kind != FRAME_SIGRETURN))
			return CUHOOK_STACK_END_BAD;
		last_sp = sp;
		pcs[(*n)++] = kind == FRAME_SIGRETURN ? ip : ip - 1;
	}
}

/* The native frames from the caller's: pcs[0..], at most max; the end. */
static uint8_t walk_native(const struct entry_frame *f, uint64_t *pcs, unsigned max, unsigned *n)
{
	*n = 0;
	if (U.loaded <= 0)
		return CUHOOK_STACK_END_UNSUPPORTED;
	/* the caller's frame needs no unwinder: its call's return address is in the entry frame */
	pcs[(*n)++] = f->ret - 1;
	return U.backtrace ? walk_traced(f, pcs, max, n) : walk_steps(f, pcs, max, n);
}

uintptr_t stack_capture_call(void *frame)
{
	const struct entry_frame *f = frame;
	uint64_t pcs[STACK_DEPTH_MAX];
	uint32_t py[STACK_DEPTH_MAX];
	unsigned depth = max_depth, nn = 0;
	uint8_t ne = walk_native(f, pcs, depth, &nn);
	uint8_t pe;
	unsigned np = py_stack_capture(py, depth, &pe);
	return stack_table_intern(pcs, nn, py, np, ne, pe);
}
