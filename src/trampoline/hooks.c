#include "hooks.h"

#include "code_write.h"
#include "glob_filter.h"
#include "near_alloc.h"
#include "stub_frame.h"
#include "symbols.h"
#include "trace_format.h"
#include "x86_insn.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct hook_hot hooks_hot[HOOKS_MAX];
struct hook_cold hooks_cold[HOOKS_MAX];
uint32_t hooks_count;

struct candidates {
	struct hook_func *v;
	size_t n, cap;
};

static void collect(const struct found_func *f, void *ctx)
{
	struct candidates *c = ctx;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct hook_func *v = realloc(c->v, cap * sizeof(*v));
		if (!v)
			return;
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = (struct hook_func){f->name, f->addr, f->size};
}

static int by_addr(const void *a, const void *b)
{
	const struct hook_func *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The thunk, 24 bytes padded with int3: push $id; then a direct jmp rel32 to cuhook_entry_stub when
 * the stub is within +-2 GB of the thunk (the usual case: the agent and the traced library are
 * both mapped in the same region), else jmp *[rip+0]; .quad cuhook_entry_stub. The direct jump
 * needs no load and no indirect-branch prediction. */
static void write_thunk(uint8_t *slot, uint32_t id)
{
	memset(slot, 0xcc, HOOK_THUNK_SIZE);
	slot[0] = 0x68;
	memcpy(slot + 1, &id, 4);
	uintptr_t stub = (uintptr_t)cuhook_entry_stub;
	int64_t rel = (int64_t)(stub - ((uintptr_t)slot + 10));
	if (rel >= INT32_MIN && rel <= INT32_MAX) {
		int32_t rel32 = (int32_t)rel;
		slot[5] = 0xe9;
		memcpy(slot + 6, &rel32, 4);
		return;
	}
	slot[5] = 0xff;
	slot[6] = 0x25;
	memset(slot + 7, 0, 4);
	memcpy(slot + 11, &stub, 8);
}

static int new_id(void)
{
	if (hooks_count >= HOOKS_MAX)
		return -1;
	return (int)hooks_count++;
}

/* Plan one function into its slot; on success the thunk and relocated code are in the slot. */
static int plan_into_slot(csh cs, struct hook_cold *hc, uint8_t *slot, uint32_t id)
{
	struct reloc_plan plan;
	reloc_plan(cs, (const uint8_t *)hc->addr, hc->addr, hc->size,
	           (uintptr_t)slot + HOOK_RELOCATED, &plan);
	hc->status = (uint16_t)plan.status;
	if (plan.status != PATCH_OK) {
		memcpy(hc->detail, plan.detail, sizeof(hc->detail));
		return -1;
	}
	hc->patch_len = (uint8_t)plan.patch_len;
	hc->n_insns = (uint8_t)plan.n_insns;
	memcpy(hc->orig, (const void *)hc->addr, plan.patch_len);
	memcpy(hc->orig_off, plan.orig_off, sizeof(plan.orig_off));
	memcpy(hc->new_off, plan.new_off, sizeof(plan.new_off));
	hc->slot = slot;
	hc->count_thunk = 0;
	write_thunk(slot, id);
	memset(slot + HOOK_THUNK_SIZE, 0xcc, HOOK_SLOT_SIZE - HOOK_THUNK_SIZE);
	memcpy(slot + HOOK_RELOCATED, plan.code, plan.code_len);
	return 0;
}

/* The count thunk: a counted function's jump lands here instead of in the thunk, so its calls
 * never go through the entry stub. It does what the C handler does for a counted call, in the
 * function's own slot:
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
 * per function and counter, in place, before any jump leads there. */
#define COUNT_THUNK_LEN 21
_Static_assert(HOOK_THUNK_SIZE + COUNT_THUNK_LEN <= HOOK_RELOCATED, "the count thunk ends where the relocated code begins");

static bool count_thunk_encode(uint8_t out[COUNT_THUNK_LEN], uint8_t counter)
{
	int64_t tls = (int64_t)cuhook_tls_ring_offset;
	if (tls != (int32_t)tls)
		return false;
	int32_t tls32 = (int32_t)tls, disp = RING_COUNTS + 8 * (int32_t)counter;
	int8_t back = (int8_t)-(HOOK_RELOCATED - 7); /* from the end of jz (7 bytes before the end) to slot */
	uint8_t *p = out;
	*p++ = 0x64; *p++ = 0x4c; *p++ = 0x8b; *p++ = 0x1c; *p++ = 0x25; /* mov %fs:disp32, %r11 */
	memcpy(p, &tls32, 4);
	p += 4;
	*p++ = 0x4d; *p++ = 0x85; *p++ = 0xdb;                           /* test %r11, %r11 */
	*p++ = 0x74; *p++ = (uint8_t)back;                               /* jz slot */
	*p++ = 0x49; *p++ = 0xff; *p++ = 0x83;                           /* incq disp32(%r11) */
	memcpy(p, &disp, 4);
	return true;
}

/* Where the jump of `id` goes: the count thunk for a counted function that has one for its
 * counter, else the thunk. */
static uintptr_t jump_target(uint32_t id)
{
	const struct hook_cold *hc = &hooks_cold[id];
	const struct hook_hot *hh = &hooks_hot[id];
	if (hh->flags == HOOK_COUNT && hc->count_thunk == hh->aux + 1u)
		return (uintptr_t)hc->slot + HOOK_RELOCATED - COUNT_THUNK_LEN;
	return (uintptr_t)hc->slot;
}

/* Write the count thunks that the counted functions of [first, first+n) lack, before their
 * jumps: one unlock per page of slots. A thunk written for one counter is never rewritten (a
 * thread may still run it); a function given another counter later keeps the stub's path.
 * Returns true if any was written. */
static bool write_count_thunks(uint32_t first, uint32_t n)
{
	struct code_unlock ul;
	uintptr_t page = 0;
	bool any = false;
	for (uint32_t id = first; id < first + n; id++) {
		struct hook_cold *hc = &hooks_cold[id];
		const struct hook_hot *hh = &hooks_hot[id];
		if (hc->status != PATCH_OK || !hc->slot || hh->flags != HOOK_COUNT || hc->count_thunk)
			continue;
		uint8_t code[COUNT_THUNK_LEN];
		if (!count_thunk_encode(code, hh->aux))
			break; /* the TLS offset does not fit: no thunk at all, the stub counts */
		uint8_t *at = hc->slot + HOOK_RELOCATED - COUNT_THUNK_LEN;
		uintptr_t lo = (uintptr_t)at & ~4095ul, hi = ((uintptr_t)at + COUNT_THUNK_LEN + 4095) & ~4095ul;
		if (lo != page || hi - lo > 4096) {
			if (page)
				code_lock(&ul);
			page = 0;
			if (code_unlock(&ul, lo, hi) != 0)
				continue;
			page = hi - lo > 4096 ? 1 : lo; /* a thunk across two pages: unlocked alone */
		}
		memcpy(at, code, COUNT_THUNK_LEN);
		hc->count_thunk = (uint16_t)(hh->aux + 1u);
		any = true;
	}
	if (page)
		code_lock(&ul);
	return any;
}

/* Write the jumps of ids [first, first+n) that planned well; refuse those that cannot be
 * written atomically. */
static void write_jumps(uint32_t first, uint32_t n, bool plain)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct hook_cold *hc = &hooks_cold[first + i];
		if (hc->status != PATCH_OK)
			continue;
		if (hc->addr < lo)
			lo = hc->addr;
		if (hc->addr + hc->patch_len > hi)
			hi = hc->addr + hc->patch_len;
	}
	if (lo >= hi)
		return;
	struct code_unlock ul;
	if (code_unlock(&ul, lo, hi) != 0) {
		for (uint32_t i = 0; i < n; i++)
			if (hooks_cold[first + i].status == PATCH_OK)
				hooks_cold[first + i].status = PATCH_PROTECT;
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = first + i;
		struct hook_cold *hc = &hooks_cold[id];
		if (hc->status != PATCH_OK || hc->patched)
			continue;
		uint8_t jmp[16];
		memcpy(jmp, hc->orig, hc->patch_len);
		reloc_encode_jmp32(jmp, hc->addr, jump_target(id));
		/* Bytes after the jump up to patch_len stay as they were: nothing reaches them (the
		 * body scan proved it) and leaving them avoids a wider store. */
		if (code_write_atomic((uint8_t *)hc->addr, jmp, RELOC_JMP_LEN, plain) != 0) {
			hc->status = PATCH_NOT_ATOMIC;
			continue;
		}
		hc->patched = true;
	}
	code_lock(&ul);
	code_sync_cores();
}

/* Write the jumps of [first, first+n), stopping the other threads around it when they may be
 * running. Everything that allocates happened before. */
static void arm(uint32_t first, uint32_t n, const struct patch_request *req)
{
	if (write_count_thunks(first, n))
		code_sync_cores(); /* every core sees them before a jump can lead there */
	if (req->threads_stopped || code_single_threaded()) {
		write_jumps(first, n, true);
		return;
	}
	int frozen = req->freeze ? req->freeze() : -1;
	write_jumps(first, n, frozen == 1);
	if (req->freeze && req->thaw)
		req->thaw();
}

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

/* How a function is traced: its flags from the request's classifier (which may also set its
 * decoder, nregs, nstack and fast_out), and the ENTRY words those give. */
static void classify_hot(const struct patch_request *req, uint32_t id)
{
	struct hook_hot *hh = &hooks_hot[id];
	hh->flags = req->classify ? req->classify(hooks_cold[id].name, hh, req->ctx) : HOOK_RECORD;
	hot_layout(hh);
}

/* Plan every id in [first, first+count) that passes the filter and has no stub yet into a
 * fresh pool near its library; mark the others filtered. Ids with a permanent refusal (their
 * code cannot be relocated) are left alone; those that failed only at write time get retried. */
static void plan_ids(uint32_t first, uint32_t count, const struct patch_request *req)
{
	size_t want = 0;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (uint32_t id = first; id < first + count; id++) {
		struct hook_cold *hc = &hooks_cold[id];
		if (hc->status == PATCH_ALIAS)
			continue;
		if (!glob_filter_match(req->filter, hc->name)) {
			hc->status = PATCH_FILTERED;
			continue;
		}
		if (hc->slot) {
			hc->status = PATCH_OK; /* planned before: the stub is still valid */
			continue;
		}
		if (hc->status != PATCH_FILTERED && hc->status != PATCH_OK &&
		    hc->status != PATCH_OUT_OF_RANGE)
			continue;
		hc->status = PATCH_OK; /* to be planned */
		want++;
		if (hc->addr < lo)
			lo = hc->addr;
		if (hc->addr + hc->size > hi)
			hi = hc->addr + hc->size;
	}
	code_sync_cores_prepare();
	if (!want)
		return;
	uint8_t *pool = near_alloc(lo, hi, want * HOOK_SLOT_SIZE);
	csh cs;
	bool have_cs = pool && x86_open(&cs) == 0;
	size_t slot = 0;
	for (uint32_t id = first; id < first + count; id++) {
		struct hook_cold *hc = &hooks_cold[id];
		struct hook_hot *hh = &hooks_hot[id];
		if (hc->status != PATCH_OK || hc->slot)
			continue;
		if (!have_cs) {
			hc->status = PATCH_OUT_OF_RANGE;
			snprintf(hc->detail, sizeof(hc->detail), "no free memory within 2 GB");
			continue;
		}
		if (plan_into_slot(cs, hc, pool + slot * HOOK_SLOT_SIZE, id) == 0) {
			hh->decoder = 0;
			hh->nregs = HOOK_REGS_DEFAULT;
			hh->nstack = HOOK_STACK_DEFAULT;
			hh->fast_out = 0;
			classify_hot(req, id);
			hh->relocated = (uintptr_t)hc->slot + HOOK_RELOCATED;
		}
		slot++;
	}
	if (have_cs)
		cs_close(&cs);
	if (pool) /* the stubs become executable; only a count thunk is written later (write_count_thunks) */
		mprotect(pool, (want * HOOK_SLOT_SIZE + 4095) & ~4095ul, PROT_READ | PROT_EXEC);
}

static void count_result(struct patch_result *res)
{
	res->patched = res->refused = res->filtered = 0;
	for (uint32_t id = res->first_id; id < res->first_id + res->count; id++) {
		uint16_t st = hooks_cold[id].status;
		if (st == PATCH_OK)
			res->patched++;
		else if (st == PATCH_FILTERED)
			res->filtered++;
		else
			res->refused++;
	}
}

int hooks_patch_library(const struct patch_request *req, struct patch_result *res)
{
	if (hooks_plan_library(req, res) != 0)
		return -1;
	arm(res->first_id, res->count, req);
	count_result(res);
	return 0;
}

/* New ids for the functions of v, not planned yet (filtered until plan_ids): res->first_id and
 * res->count say which. A function at the address of the one before it (v sorted by address:
 * a second name) is refused as an alias. */
static void add_hooks(const struct hook_func *v, size_t n, uint32_t lib_id, struct patch_result *res)
{
	res->first_id = hooks_count;
	for (size_t i = 0; i < n; i++) {
		int id = new_id();
		if (id < 0)
			break;
		struct hook_cold *hc = &hooks_cold[id];
		struct hook_hot *hh = &hooks_hot[id];
		memset(hc, 0, sizeof(*hc));
		memset(hh, 0, sizeof(*hh));
		hc->name = strdup(v[i].name);
		hc->addr = v[i].addr;
		hc->size = (uint32_t)v[i].size;
		hc->status = PATCH_FILTERED;
		hh->lib_id = (uint16_t)lib_id;
		res->count++;
		if (i > 0 && v[i].addr == v[i - 1].addr) {
			hc->status = PATCH_ALIAS;
			snprintf(hc->detail, sizeof(hc->detail), "same address as %s", v[i - 1].name);
		}
	}
}

int hooks_plan_library(const struct patch_request *req, struct patch_result *res)
{
	memset(res, 0, sizeof(*res));
	struct candidates c = {0};
	if (symbols_for_each(req->base, req->phdr, req->phnum, collect, &c) < 0)
		return -1;
	qsort(c.v, c.n, sizeof(*c.v), by_addr);
	add_hooks(c.v, c.n, req->lib_id, res);
	free(c.v);
	plan_ids(res->first_id, res->count, req);
	count_result(res);
	return 0;
}

int hooks_patch_functions(const struct hook_func *v, size_t n, const struct patch_request *req,
                          struct patch_result *res)
{
	memset(res, 0, sizeof(*res));
	add_hooks(v, n, req->lib_id, res);
	plan_ids(res->first_id, res->count, req);
	arm(res->first_id, res->count, req);
	count_result(res);
	return 0;
}

int hooks_replan(const struct patch_request *req, uint32_t first, uint32_t count)
{
	for (uint32_t id = first; id < first + count; id++)
		if (hooks_cold[id].slot && !hooks_cold[id].patched) /* planned before, no jump in place */
			classify_hot(req, id);
	plan_ids(first, count, req);
	return 0;
}

int hooks_arm(const struct patch_request *req, uint32_t first, uint32_t count, struct patch_result *res)
{
	memset(res, 0, sizeof(*res));
	res->first_id = first;
	res->count = count;
	arm(first, count, req);
	count_result(res);
	return 0;
}

int hooks_rearm(const struct patch_request *req, uint32_t first, uint32_t count,
                struct patch_result *res)
{
	hooks_replan(req, first, count);
	return hooks_arm(req, first, count, res);
}

int hooks_plan_internal(const char *name, uintptr_t addr, size_t size, uint8_t flags, uint8_t aux,
                        uint16_t decoder, uint32_t lib_id, void (*on_exit)(void))
{
	int id = new_id();
	if (id < 0)
		return -1;
	struct hook_cold *hc = &hooks_cold[id];
	struct hook_hot *hh = &hooks_hot[id];
	memset(hc, 0, sizeof(*hc));
	memset(hh, 0, sizeof(*hh));
	hc->name = strdup(name);
	hc->addr = addr;
	hc->size = (uint32_t)size;
	hc->on_exit = on_exit;
	uint8_t *pool = near_alloc(addr, addr + size, HOOK_SLOT_SIZE);
	csh cs;
	if (!pool || x86_open(&cs) != 0) {
		hc->status = PATCH_OUT_OF_RANGE;
		return -1;
	}
	int rc = plan_into_slot(cs, hc, pool, (uint32_t)id);
	cs_close(&cs);
	code_sync_cores_prepare();
	mprotect(pool, HOOK_SLOT_SIZE, PROT_READ | PROT_EXEC);
	if (rc != 0)
		return -1;
	hh->flags = flags;
	hh->aux = aux;
	hh->decoder = decoder;
	hh->lib_id = (uint16_t)lib_id;
	hh->nregs = HOOK_REGS_DEFAULT;
	hh->nstack = HOOK_STACK_DEFAULT;
	hot_layout(hh);
	hh->relocated = (uintptr_t)pool + HOOK_RELOCATED;
	return id;
}

int hooks_rearm_internal(uint32_t id, const struct patch_request *how)
{
	if (id >= hooks_count || !hooks_cold[id].slot)
		return -1;
	if (!hooks_cold[id].patched) {
		hooks_cold[id].status = PATCH_OK;
		arm(id, 1, how);
	}
	return hooks_cold[id].patched ? 0 : -1;
}

unsigned hooks_unpatch_all(bool threads_stopped)
{
	unsigned restored = 0;
	bool plain = threads_stopped || code_single_threaded();
	/* One unlock per library: ids of a library are consecutive and sorted by address. */
	for (uint32_t first = 0; first < hooks_count;) {
		uint32_t last = first;
		uintptr_t lo = UINTPTR_MAX, hi = 0;
		for (; last < hooks_count && hooks_hot[last].lib_id == hooks_hot[first].lib_id; last++) {
			const struct hook_cold *hc = &hooks_cold[last];
			if (!hc->patched)
				continue;
			if (hc->addr < lo)
				lo = hc->addr;
			if (hc->addr + hc->patch_len > hi)
				hi = hc->addr + hc->patch_len;
		}
		struct code_unlock ul;
		if (lo < hi && code_unlock(&ul, lo, hi) == 0) {
			for (uint32_t id = first; id < last; id++) {
				struct hook_cold *hc = &hooks_cold[id];
				if (hc->patched &&
				    code_write_atomic((uint8_t *)hc->addr, hc->orig, RELOC_JMP_LEN, plain) == 0) {
					hc->patched = false;
					restored++;
				}
			}
			code_lock(&ul);
		}
		first = last;
	}
	code_sync_cores();
	return restored;
}

bool hooks_counted_in_place(uint32_t id)
{
	return id < hooks_count && hooks_cold[id].patched && jump_target(id) != (uintptr_t)hooks_cold[id].slot;
}

uintptr_t hooks_fixup_ip(uintptr_t ip)
{
	for (uint32_t id = 0; id < hooks_count; id++) {
		const struct hook_cold *hc = &hooks_cold[id];
		if (!hc->slot || hc->status != PATCH_OK)
			continue;
		if (ip > hc->addr && ip < hc->addr + hc->patch_len) {
			for (unsigned i = 0; i < hc->n_insns; i++)
				if (hc->addr + hc->orig_off[i] == ip)
					return (uintptr_t)hc->slot + HOOK_RELOCATED + hc->new_off[i];
			return ip; /* not an instruction boundary: cannot happen for a stopped thread */
		}
	}
	return ip;
}
