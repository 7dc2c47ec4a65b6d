#include "patcher.h"

#include "code_write.h"
#include "glob_filter.h"
#include "near_alloc.h"
#include "symbols.h"
#include "x86_insn.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct patch_site patch_sites[PATCH_SITES_MAX];
uint32_t patch_count;

struct candidates {
	struct patch_func *v;
	size_t n, cap;
};

static void collect(const struct found_func *f, void *ctx)
{
	struct candidates *c = ctx;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct patch_func *v = realloc(c->v, cap * sizeof(*v));
		if (!v)
			return;
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = (struct patch_func){f->name, f->addr, f->size};
}

static int by_addr(const void *a, const void *b)
{
	const struct patch_func *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The thunk, 24 bytes padded with int3: push $id; then a direct jmp rel32 to the entry when it
 * is within +-2 GB of the thunk (the usual case: the caller's code and the patched library are
 * both mapped in the same region), else jmp *[rip+0]; .quad entry. The direct jump needs no
 * load and no indirect-branch prediction. */
static void write_thunk(uint8_t *slot, uint32_t id, uintptr_t entry)
{
	memset(slot, 0xcc, PATCH_THUNK_SIZE);
	slot[0] = 0x68;
	memcpy(slot + 1, &id, 4);
	uintptr_t stub = entry;
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
	if (patch_count >= PATCH_SITES_MAX)
		return -1;
	return (int)patch_count++;
}

/* Plan one function into its slot; on success the thunk and relocated code are in the slot. */
static int plan_into_slot(csh cs, struct patch_site *hc, uint8_t *slot, uint32_t id, uintptr_t entry)
{
	struct reloc_plan plan;
	reloc_plan(cs, (const uint8_t *)hc->addr, hc->addr, hc->size,
	           (uintptr_t)slot + PATCH_RELOCATED, &plan);
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
	hc->prelude_len = 0;
	hc->prelude_tag = 0;
	hc->to_prelude = false;
	write_thunk(slot, id, entry);
	memset(slot + PATCH_THUNK_SIZE, 0xcc, PATCH_SLOT_SIZE - PATCH_THUNK_SIZE);
	memcpy(slot + PATCH_RELOCATED, plan.code, plan.code_len);
	return 0;
}

/* Where the jump of `id` goes: its prelude when it is to lead there, else the thunk. */
static uintptr_t jump_target(uint32_t id)
{
	const struct patch_site *hc = &patch_sites[id];
	if (hc->to_prelude && hc->prelude_len)
		return (uintptr_t)hc->slot + PATCH_RELOCATED - hc->prelude_len;
	return (uintptr_t)hc->slot;
}

/* Decide where the jumps of [first, first+n) that are still to be written lead, and write the
 * preludes the request asks for that are not there yet, before those jumps: one unlock per page
 * of slots. A prelude written with one tag is never rewritten (a thread may still run it); a
 * site asked for another later keeps the thunk. Returns true if any was written. */
static bool write_preludes(uint32_t first, uint32_t n, const struct patch_request *req)
{
	struct code_unlock ul;
	uintptr_t page = 0;
	bool any = false;
	for (uint32_t id = first; id < first + n; id++) {
		struct patch_site *hc = &patch_sites[id];
		if (hc->status != PATCH_OK || !hc->slot || hc->patched)
			continue;
		hc->to_prelude = false;
		uint8_t code[PATCH_PRELUDE_MAX];
		uint16_t tag = 0;
		unsigned len = req->prelude ? req->prelude(id, code, &tag, req->ctx) : 0;
		if (!len || !tag || len > PATCH_PRELUDE_MAX)
			continue;
		if (hc->prelude_tag) {
			hc->to_prelude = hc->prelude_tag == tag;
			continue;
		}
		uint8_t *at = hc->slot + PATCH_RELOCATED - len;
		uintptr_t lo = (uintptr_t)at & ~4095ul, hi = ((uintptr_t)at + len + 4095) & ~4095ul;
		if (lo != page || hi - lo > 4096) {
			if (page)
				code_lock(&ul);
			page = 0;
			if (code_unlock(&ul, lo, hi) != 0)
				continue;
			page = hi - lo > 4096 ? 1 : lo; /* a prelude across two pages: unlocked alone */
		}
		memcpy(at, code, len);
		hc->prelude_len = (uint8_t)len;
		hc->prelude_tag = tag;
		hc->to_prelude = true;
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
		struct patch_site *hc = &patch_sites[first + i];
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
			if (patch_sites[first + i].status == PATCH_OK)
				patch_sites[first + i].status = PATCH_PROTECT;
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = first + i;
		struct patch_site *hc = &patch_sites[id];
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
	if (write_preludes(first, n, req))
		code_sync_cores(); /* every core sees them before a jump can lead there */
	if (req->threads_stopped || code_single_threaded(req->own_tid)) {
		write_jumps(first, n, true);
		return;
	}
	int frozen = req->freeze ? req->freeze() : -1;
	write_jumps(first, n, frozen == 1);
	if (req->freeze && req->thaw)
		req->thaw();
}

/* Plan every id in [first, first+count) that passes the filter and has no stub yet into a
 * fresh pool near its library; mark the others filtered. Ids with a permanent refusal (their
 * code cannot be relocated) are left alone; those that failed only at write time get retried. */
static void plan_ids(uint32_t first, uint32_t count, const struct patch_request *req)
{
	size_t want = 0;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (uint32_t id = first; id < first + count; id++) {
		struct patch_site *hc = &patch_sites[id];
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
	uint8_t *pool = near_alloc(lo, hi, want * PATCH_SLOT_SIZE);
	csh cs;
	bool have_cs = pool && x86_open(&cs) == 0;
	size_t slot = 0;
	for (uint32_t id = first; id < first + count; id++) {
		struct patch_site *hc = &patch_sites[id];
		if (hc->status != PATCH_OK || hc->slot)
			continue;
		if (!have_cs) {
			hc->status = PATCH_OUT_OF_RANGE;
			snprintf(hc->detail, sizeof(hc->detail), "no free memory within 2 GB");
			continue;
		}
		if (plan_into_slot(cs, hc, pool + slot * PATCH_SLOT_SIZE, id, req->entry) == 0 && req->classify)
			req->classify(id, true, req->ctx);
		slot++;
	}
	if (have_cs)
		cs_close(&cs);
	if (pool) /* the stubs become executable; only a prelude is written later (write_preludes) */
		mprotect(pool, (want * PATCH_SLOT_SIZE + 4095) & ~4095ul, PROT_READ | PROT_EXEC);
}

static void count_result(struct patch_result *res)
{
	res->patched = res->refused = res->filtered = 0;
	for (uint32_t id = res->first_id; id < res->first_id + res->count; id++) {
		uint16_t st = patch_sites[id].status;
		if (st == PATCH_OK)
			res->patched++;
		else if (st == PATCH_FILTERED)
			res->filtered++;
		else
			res->refused++;
	}
}

int patch_library(const struct patch_request *req, struct patch_result *res)
{
	if (patch_plan_library(req, res) != 0)
		return -1;
	arm(res->first_id, res->count, req);
	count_result(res);
	return 0;
}

/* New ids for the functions of v, not planned yet (filtered until plan_ids): res->first_id and
 * res->count say which. A function at the address of the one before it (v sorted by address:
 * a second name) is refused as an alias. */
static void add_sites(const struct patch_func *v, size_t n, uint32_t lib_id, struct patch_result *res)
{
	res->first_id = patch_count;
	for (size_t i = 0; i < n; i++) {
		int id = new_id();
		if (id < 0)
			break;
		struct patch_site *hc = &patch_sites[id];
		memset(hc, 0, sizeof(*hc));
		hc->name = strdup(v[i].name);
		hc->addr = v[i].addr;
		hc->size = (uint32_t)v[i].size;
		hc->status = PATCH_FILTERED;
		hc->lib_id = (uint16_t)lib_id;
		res->count++;
		if (i > 0 && v[i].addr == v[i - 1].addr) {
			hc->status = PATCH_ALIAS;
			snprintf(hc->detail, sizeof(hc->detail), "same address as %s", v[i - 1].name);
		}
	}
}

int patch_plan_library(const struct patch_request *req, struct patch_result *res)
{
	memset(res, 0, sizeof(*res));
	struct candidates c = {0};
	if (symbols_for_each(req->base, req->phdr, req->phnum, collect, &c) < 0)
		return -1;
	qsort(c.v, c.n, sizeof(*c.v), by_addr);
	add_sites(c.v, c.n, req->lib_id, res);
	free(c.v);
	plan_ids(res->first_id, res->count, req);
	count_result(res);
	return 0;
}

int patch_functions(const struct patch_func *v, size_t n, const struct patch_request *req,
                    struct patch_result *res)
{
	memset(res, 0, sizeof(*res));
	add_sites(v, n, req->lib_id, res);
	plan_ids(res->first_id, res->count, req);
	arm(res->first_id, res->count, req);
	count_result(res);
	return 0;
}

int patch_replan(const struct patch_request *req, uint32_t first, uint32_t count)
{
	for (uint32_t id = first; id < first + count; id++)
		if (patch_sites[id].slot && !patch_sites[id].patched && req->classify) /* planned before, no jump in place */
			req->classify(id, false, req->ctx);
	plan_ids(first, count, req);
	return 0;
}

int patch_arm(const struct patch_request *req, uint32_t first, uint32_t count, struct patch_result *res)
{
	memset(res, 0, sizeof(*res));
	res->first_id = first;
	res->count = count;
	arm(first, count, req);
	count_result(res);
	return 0;
}

int patch_rearm(const struct patch_request *req, uint32_t first, uint32_t count,
                struct patch_result *res)
{
	patch_replan(req, first, count);
	return patch_arm(req, first, count, res);
}

int patch_plan_one(const char *name, uintptr_t addr, size_t size, uint32_t lib_id,
                   const struct patch_request *how)
{
	int id = new_id();
	if (id < 0)
		return -1;
	struct patch_site *hc = &patch_sites[id];
	memset(hc, 0, sizeof(*hc));
	hc->name = strdup(name);
	hc->addr = addr;
	hc->size = (uint32_t)size;
	hc->lib_id = (uint16_t)lib_id;
	uint8_t *pool = near_alloc(addr, addr + size, PATCH_SLOT_SIZE);
	csh cs;
	if (!pool || x86_open(&cs) != 0) {
		hc->status = PATCH_OUT_OF_RANGE;
		return -1;
	}
	int rc = plan_into_slot(cs, hc, pool, (uint32_t)id, how->entry);
	cs_close(&cs);
	code_sync_cores_prepare();
	mprotect(pool, PATCH_SLOT_SIZE, PROT_READ | PROT_EXEC);
	return rc == 0 ? id : -1;
}

int patch_rearm_one(uint32_t id, const struct patch_request *how)
{
	if (id >= patch_count || !patch_sites[id].slot)
		return -1;
	if (!patch_sites[id].patched) {
		patch_sites[id].status = PATCH_OK;
		arm(id, 1, how);
	}
	return patch_sites[id].patched ? 0 : -1;
}

void patch_snapshot_protections(void)
{
	code_prot_snapshot();
}

unsigned patch_unpatch_all(bool threads_stopped, int own_tid)
{
	unsigned restored = 0;
	bool plain = threads_stopped || code_single_threaded(own_tid);
	/* One unlock per library: ids of a library are consecutive and sorted by address. */
	for (uint32_t first = 0; first < patch_count;) {
		uint32_t last = first;
		uintptr_t lo = UINTPTR_MAX, hi = 0;
		for (; last < patch_count && patch_sites[last].lib_id == patch_sites[first].lib_id; last++) {
			const struct patch_site *hc = &patch_sites[last];
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
				struct patch_site *hc = &patch_sites[id];
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

bool patch_jumps_to_prelude(uint32_t id)
{
	return id < patch_count && patch_sites[id].patched && jump_target(id) != (uintptr_t)patch_sites[id].slot;
}

uintptr_t patch_fixup_ip(uintptr_t ip)
{
	for (uint32_t id = 0; id < patch_count; id++) {
		const struct patch_site *hc = &patch_sites[id];
		if (!hc->slot || hc->status != PATCH_OK)
			continue;
		if (ip > hc->addr && ip < hc->addr + hc->patch_len) {
			for (unsigned i = 0; i < hc->n_insns; i++)
				if (hc->addr + hc->orig_off[i] == ip)
					return (uintptr_t)hc->slot + PATCH_RELOCATED + hc->new_off[i];
			return ip; /* not an instruction boundary: cannot happen for a stopped thread */
		}
	}
	return ip;
}
