/* Native stacks with libunwind, local unwinding, in the traced thread at the call's entry.
 *
 * Where the walk starts. The caller's callee-saved registers (rbx, rbp, r12-r15), which its
 * unwind rules may need (a frame-pointer CFA), are not in the stub's frame: by the time the C
 * handler runs they are wherever cuhook_on_entry's prologue saved them. So the walk does not
 * build a context from the entry frame; it takes unw_getcontext here and steps out through our
 * own frames (this function, cuhook_call_saving_vectors, cuhook_on_entry, cuhook_entry_stub, all
 * with CFI) until the frame whose ip is the traced call's return address and whose sp is just
 * above it: the caller's frame, with every register as at the call. Those four steps are the
 * price (about a quarter of a stacked call's cost measured on this machine: bench/README.md).
 *
 * Safety. Every step reads only what unwind information says (saved registers on the stack, a
 * signal frame's ucontext). Where there is none for a pc (JIT code, a stripped .eh_frame),
 * libunwind would guess from rbp and the stack; the walk stops there instead, NO_INFO, having
 * asked unw_get_proc_info first. Each frame's sp must lie above the last (except across a signal
 * frame, which may come from a sigaltstack), each ip in user space; the first frame that fails is
 * not kept (BAD). The depth is bounded (stack_depth=).
 *
 * How libunwind is loaded. dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL), called through
 * pointers taken with dlsym from that handle: nothing of it enters the program's global scope,
 * and the agent itself links no unwinder, so its exports stay as agent.map says. A program that
 * links LLVM's libunwind (libunwind.so.1, whose functions are named unw_*) or GCC's unwinder
 * does not meet ours: the nongnu library's functions are named _ULx86_64_* and are looked up in
 * its own handle. A program that loaded libunwind.so.8 itself shares that copy with us, which is
 * the same library (its caching policy, set below, is then the process's). RTLD_DEEPBIND is not
 * used: it would bind libunwind's own malloc and libc calls past a program's interposed
 * allocator. RTLD_NOW: no lazy binding (and its loader lock) on the traced path.
 *
 * Locks (docs/agent.md says the same): libunwind finds a pc's unwind information through
 * dl_iterate_phdr, which takes glibc's (recursive) loader lock, for the time of the lookup; its
 * cache of unwind rules is asked to be per thread (UNW_CACHE_PER_THREAD) where libunwind was
 * built with thread-local storage, and is its global cache, under its own lock taken with
 * signals blocked, where not. */
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

static struct {
	int (*getcontext)(unw_context_t *);
	int (*init_local)(unw_cursor_t *, unw_context_t *);
	int (*step)(unw_cursor_t *);
	int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
	int (*is_signal_frame)(unw_cursor_t *);
	int (*get_proc_info)(unw_cursor_t *, unw_proc_info_t *);
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
	SYM(is_signal_frame, "_ULx86_64_is_signal_frame");
	SYM(get_proc_info, "_ULx86_64_get_proc_info");
	SYM(set_caching_policy, "_ULx86_64_set_caching_policy");
	SYM(local_as, "_ULx86_64_local_addr_space");
	U.set_caching_policy(*U.local_as, UNW_CACHE_PER_THREAD);
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

/* Whether libunwind has unwind information for a pc, remembered: unw_get_proc_info searches
 * every loaded object each time (dl_iterate_phdr, with every signal blocked around it: two system
 * calls), and a program's call sites repeat. Direct-mapped; each slot one word, the pc shifted
 * left and the answer in bit 0, so that a racing writer never pairs one pc with another's
 * answer. Process-wide, shared by the threads without a lock; a wrong slot is only a miss. */
#define INFO_SLOTS 8192u
static uint64_t info_cache[INFO_SLOTS];

static int has_unwind_info(unw_cursor_t *c, unw_word_t ip)
{
	uint64_t *slot = &info_cache[((ip >> 4) ^ (ip >> 17)) & (INFO_SLOTS - 1)];
	uint64_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);
	if (v >> 1 == ip)
		return (int)(v & 1);
	unw_proc_info_t pi;
	int rc = U.get_proc_info(c, &pi);
	if (rc < 0 && rc != -UNW_ENOINFO)
		return -1;
	/* libunwind answers a pc without unwind information with a made-up one-byte procedure and
	 * no unwind info, not with UNW_ENOINFO (it takes such a frame for the outermost, as for a
	 * _start without CFI): that is no information here */
	int has = rc >= 0 && !(!pi.unwind_info && pi.end_ip == pi.start_ip + 1);
	__atomic_store_n(slot, (uint64_t)ip << 1 | (uint64_t)has, __ATOMIC_RELAXED);
	return has;
}

static int user_address(uint64_t a)
{
	return a >= 4096 && a < (1ull << 47);
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

/* The native frames above the caller's: pcs[1..], at most max in all; the end. */
static uint8_t walk_native(const struct entry_frame *f, uint64_t *pcs, unsigned max, unsigned *n)
{
	unw_context_t ctx;
	unw_cursor_t c;
	*n = 0;
	if (U.loaded <= 0)
		return CUHOOK_STACK_END_UNSUPPORTED;
	/* the caller's frame needs no unwinder: its call's return address is in the entry frame */
	pcs[(*n)++] = f->ret - 1;
	if (U.getcontext(&ctx) < 0 || U.init_local(&c, &ctx) < 0 || to_caller(&c, f) < 0)
		return CUHOOK_STACK_END_BAD;
	unw_word_t last_sp = (unw_word_t)&f->ret + 8;
	for (;;) {
		int signal_frame = U.is_signal_frame(&c) > 0;
		if (!signal_frame) {
			unw_word_t ip;
			int has = U.get_reg(&c, UNW_REG_IP, &ip) < 0 ? -1 : has_unwind_info(&c, ip);
			if (has == 0)
				return CUHOOK_STACK_END_NO_INFO;
			if (has < 0)
				return CUHOOK_STACK_END_BAD;
		}
		int rc = U.step(&c);
		if (rc == 0)
			return CUHOOK_STACK_END_DONE;
		if (rc == -UNW_ENOINFO)
			return CUHOOK_STACK_END_NO_INFO;
		if (rc < 0)
			return CUHOOK_STACK_END_BAD;
		if (*n == max)
			return CUHOOK_STACK_END_DEPTH;
		unw_word_t ip, sp;
		if (U.get_reg(&c, UNW_REG_IP, &ip) < 0 || U.get_reg(&c, UNW_REG_SP, &sp) < 0)
			return CUHOOK_STACK_END_BAD;
		if (ip == 0)
			return CUHOOK_STACK_END_DONE; /* the outermost frame's return address: none */
		/* a stack grows down: callers lie above, but a signal frame may lead off a sigaltstack */
		if (!user_address(ip) || !user_address(sp) || (sp <= last_sp && !signal_frame))
			return CUHOOK_STACK_END_BAD;
		last_sp = sp;
		/* a return address less one is inside the call; an interrupted instruction is exact */
		pcs[(*n)++] = signal_frame ? ip : ip - 1;
	}
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
