#include "hook_table.h"

#include "freeze.h"
#include "stub_frame.h"
#include "trace_format.h"

#include <string.h>

struct hook_hot hooks_hot[HOOKS_MAX];
struct hook_calls hooks_calls[HOOKS_MAX];
uint32_t hook_count_func[RING_COUNT_SLOTS];
uint32_t hook_count_slots;
int hook_own_tid;

/* Fill hh's entry_hdr and entry_info (the ENTRY5 record's word without depth and time, and
 * its length) from its id, nregs and nstack. The values depend on
 * nothing else, so rewriting them while a stub may read them is harmless. */
static void hot_layout(struct hook_hot *hh)
{
	/* Stack slots follow all six registers in the record: a function with stack arguments has
	 * used them all. */
	unsigned nstack = hh->nstack > CUHOOK_MAX_STACK_ARGS ? CUHOOK_MAX_STACK_ARGS : hh->nstack;
	unsigned nregs = nstack || hh->nregs > 6 ? 6u : hh->nregs;
	hh->nregs = (uint8_t)nregs;
	hh->nstack = (uint8_t)nstack;
	_Static_assert(HOOKS_MAX - 1 <= CUHOOK_REC5_FUNC_MAX, "a hook id fits a record word");
	hh->entry_hdr = CUHOOK_REC5_WORD(CUHOOK_REC5_ENTRY, 0, (uint32_t)(hh - hooks_hot), 0);
	hh->entry_info = 8u + 8u * (nregs + nstack);
}

/* The engine planned function `id` (first: its stub was just written; else planned again for
 * a new session): how it is traced, from the classifier (which may also set its decoder,
 * nregs, nstack and fast_out), and the ENTRY words those give. */
static void classify(uint32_t id, bool first, void *ctx)
{
	const struct hook_classifier *how = ctx;
	struct hook_hot *hh = &hooks_hot[id];
	if (first) {
		hh->decoder = 0;
		hh->nregs = HOOK_REGS_DEFAULT;
		hh->nstack = HOOK_STACK_DEFAULT;
		hh->fast_out = 0;
	}
	hh->flags = how && how->flags ? how->flags(patch_sites[id].name, hh) : HOOK_RECORD;
	hot_layout(hh);
	if (first)
		hh->relocated = patch_relocated(id);
}

/* The count thunk: a counted function's jump lands here (the engine's prelude, right before
 * the relocated prologue in the function's slot) instead of in the thunk, so its calls never
 * go through the entry stub. It does what the C handler does for a counted call:
 *     mov %fs:cuhook_tls_ring_offset, %r11   the thread's ring (cuhook_tls_ring)
 *     test %r11, %r11
 *     jz slot                                 no ring (the thread's first call, cuhook's own
 *                                             thread, an exiting thread): the thunk, the stub, C
 *     incq RING_COUNTS + 8 * counter(%r11)    one instruction: a signal handler's count on this
 *                                             thread cannot be lost
 *   and falls into the relocated prologue right after it. Why: a counted call then touches the
 * slot's line, its TLS slot and its counter, not the stub's code, the global switches and
 * hooks_hot too, which a program that evicts the tracer's lines between two calls pays for.
 * It changes r11 and the status flags only; the calling convention gives neither a role at a
 * function's entry (r11 is scratch, the flags are not preserved across calls, DF is untouched)
 * and the stubs use r11 the same way.
 *   Unlike the stub, it counts whether or not a session is recording: between a session's stop
 * and the removal of its jumps (and in a fork child that does not trace) the counts go to the
 * thread's own ring, and the next session starts from their values (writer_start). Written once
 * per function and counter (its tag: 1 + the counter), in place, before any jump leads there. */
#define COUNT_THUNK_LEN 21
_Static_assert(COUNT_THUNK_LEN <= PATCH_PRELUDE_MAX, "the count thunk fits the slot's prelude");

static unsigned count_thunk(uint32_t id, uint8_t out[PATCH_PRELUDE_MAX], uint16_t *tag, void *ctx)
{
	(void)ctx;
	const struct hook_hot *hh = &hooks_hot[id];
	if (hh->flags != HOOK_COUNT)
		return 0;
	int64_t tls = (int64_t)cuhook_tls_ring_offset;
	if (tls != (int32_t)tls)
		return 0; /* the TLS offset does not fit: no thunk at all, the stub counts */
	int32_t tls32 = (int32_t)tls, disp = RING_COUNTS + 8 * (int32_t)hh->aux;
	/* the prelude ends at PATCH_RELOCATED: from the end of jz (7 bytes before it) to the slot */
	int8_t back = (int8_t)-(PATCH_RELOCATED - 7);
	uint8_t *p = out;
	*p++ = 0x64; *p++ = 0x4c; *p++ = 0x8b; *p++ = 0x1c; *p++ = 0x25; /* mov %fs:disp32, %r11 */
	memcpy(p, &tls32, 4);
	p += 4;
	*p++ = 0x4d; *p++ = 0x85; *p++ = 0xdb;                           /* test %r11, %r11 */
	*p++ = 0x74; *p++ = (uint8_t)back;                               /* jz slot */
	*p++ = 0x49; *p++ = 0xff; *p++ = 0x83;                           /* incq disp32(%r11) */
	memcpy(p, &disp, 4);
	*tag = (uint16_t)(hh->aux + 1u);
	return COUNT_THUNK_LEN;
}

struct patch_request hook_request(bool threads_stopped, const struct hook_classifier *how)
{
	return (struct patch_request){
	    .entry = (uintptr_t)cuhook_entry_stub, .threads_stopped = threads_stopped,
	    .own_tid = __atomic_load_n(&hook_own_tid, __ATOMIC_RELAXED),
	    .freeze = freeze_others, .thaw = thaw_others, .classify = classify,
	    .prelude = count_thunk, .ctx = (void *)how,
	};
}

int hook_plan_internal(const char *name, uintptr_t addr, size_t size, uint8_t flags, uint8_t aux,
                       uint16_t decoder, uint32_t lib_id, void (*on_exit)(void))
{
	struct patch_request how = hook_request(false, NULL);
	int id = patch_plan_one(name, addr, size, lib_id, &how);
	if (id < 0)
		return -1;
	struct hook_hot *hh = &hooks_hot[id];
	memset(hh, 0, sizeof(*hh));
	hooks_calls[id] = (struct hook_calls){.on_exit = on_exit};
	hh->flags = flags;
	hh->aux = aux;
	hh->decoder = decoder;
	hh->nregs = HOOK_REGS_DEFAULT;
	hh->nstack = HOOK_STACK_DEFAULT;
	hot_layout(hh);
	hh->relocated = patch_relocated((uint32_t)id);
	return id;
}

bool hook_counted_in_place(uint32_t id)
{
	return patch_jumps_to_prelude(id);
}
