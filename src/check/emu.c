#include "emu.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unicorn/unicorn.h>

#define PAGE 4096ull

static const int gpr_ids[EMU_NGPR] = {
    UC_X86_REG_RAX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RBX,
    UC_X86_REG_RSP, UC_X86_REG_RBP, UC_X86_REG_RSI, UC_X86_REG_RDI,
    UC_X86_REG_R8,  UC_X86_REG_R9,  UC_X86_REG_R10, UC_X86_REG_R11,
    UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15,
};

static const char *const gpr_names[EMU_NGPR] = {
    "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
    "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};

const char *emu_gpr_name(unsigned i)
{
	return i < EMU_NGPR ? gpr_names[i] : "?";
}

const char *emu_strerror(int err)
{
	return uc_strerror((uc_err)err);
}

struct emu {
	uc_engine *uc;
	uc_hook hooks[4];
	uc_context *reset;        /* the CPU as created: every run starts from it */
	uint64_t *pages;          /* mapped in this run, unmapped before the next */
	bool *exec;               /* ... and whether they are code pages */
	size_t npages, cap;
	/* the run in progress */
	const struct emu_image *img;
	struct emu_result *r;
	uint64_t start, lo, hi, last;
	unsigned max_insns;
	bool reentry, done;
};

/* splitmix64: small, fast, good enough to fill registers and pages. */
static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* One number of the "interesting" kinds: zero, small, one of the prologue's values (or one
 * next to it), pointer-like, or any 64 bits; `r` picks the kind. */
static uint64_t pick(uint64_t *s, uint64_t r, const uint64_t *values, unsigned nvalues)
{
	unsigned kind = (unsigned)(r >> 60); /* 0..15 */
	uint64_t v = mix(s);
	if (kind < 3)
		return 0;
	if (kind < 5)
		return (uint64_t)((int64_t)(v & 0x1f) - 4);
	if (kind < 8 && nvalues) {
		unsigned near = (unsigned)(v >> 62); /* the value itself twice as often as either side */
		return values[(v & 0xffffffff) % nvalues] + (near == 0 ? (uint64_t)-1 : near == 1 ? 1 : 0);
	}
	if (kind < 10)
		return 0x00007f0000000000ull | (v & 0xfffffffff8ull);
	if (kind < 11)
		return v & 0xffffffffull;
	return v;
}

void emu_random_state(struct emu_state *st, uint64_t seed, const uint64_t *values, unsigned nvalues)
{
	uint64_t s = seed * 0x2545f4914f6cdd1dull + 0x1234567;
	memset(st, 0, sizeof(*st));
	for (unsigned i = 0; i < EMU_NGPR; i++)
		/* seed 0: every register fully random; others: the mix. */
		st->gpr[i] = seed == 0 ? mix(&s) : pick(&s, mix(&s), values, nvalues);
	/* A stack in its own region; at a function's entry rsp is 8 below a 16-byte boundary. */
	st->gpr[4] = 0x00007ffc00100000ull + (mix(&s) & 0xfff0) + 8;
	/* Random status flags (CF PF AF ZF SF OF); DF clear as the ABI guarantees; bit 1 is set. */
	st->rflags = 0x2 | (mix(&s) & 0x8d5);
	st->fs_base = 0x00007f5500000000ull | (mix(&s) & 0xfffffff000ull);
	st->gs_base = 0x00007f6600000000ull | (mix(&s) & 0xfffffff000ull);
	for (unsigned i = 0; i < EMU_NXMM; i++) {
		st->xmm[i][0] = mix(&s);
		st->xmm[i][1] = mix(&s);
	}
}

static void overlay(uint8_t *buf, uint64_t page, uint64_t at, const uint8_t *bytes, unsigned len)
{
	uint64_t lo = at > page ? at : page;
	uint64_t hi = at + len < page + PAGE ? at + len : page + PAGE;
	if (len && lo < hi)
		memcpy(buf + (lo - page), bytes + (lo - at), hi - lo);
}

static void fill_page(const struct emu_image *img, uint64_t page, uint8_t *buf, bool code)
{
	if (code) {
		memset(buf, 0xf4, PAGE); /* hlt */
		overlay(buf, page, img->func, img->orig, img->orig_len);
		overlay(buf, page, img->copy_addr, img->copy, img->copy_len);
		return;
	}
	uint64_t s = img->seed * 0x9e3779b97f4a7c15ull ^ page * 0xd1b54a32d192ed03ull;
	for (unsigned i = 0; i < PAGE / 8; i++) {
		uint64_t w = pick(&s, mix(&s), img->values, img->nvalues);
		memcpy(buf + i * 8, &w, 8);
	}
	const struct elf_file *f = img->elf;
	for (size_t i = 0; f && i < f->nsegs; i++) {
		const struct elf_segment *sg = &f->segs[i];
		if (!(sg->flags & PF_X))
			continue;
		uint64_t lo = sg->vaddr > page ? sg->vaddr : page;
		uint64_t hi = sg->vaddr + sg->filesz < page + PAGE ? sg->vaddr + sg->filesz : page + PAGE;
		if (lo < hi && sg->offset + (lo - sg->vaddr) + (hi - lo) <= f->size)
			memcpy(buf + (lo - page), f->data + sg->offset + (lo - sg->vaddr), hi - lo);
	}
}

static int find_page(const struct emu *em, uint64_t page)
{
	for (size_t i = 0; i < em->npages; i++)
		if (em->pages[i] == page)
			return (int)i;
	return -1;
}

/* Code pages (the function's, the copy's) are executable; pages made on first touch by a data
 * access are not: control that goes there has left, and Unicorn must not translate the random
 * bytes (some random byte strings abort its code generator). */
static bool map_page(struct emu *em, uint64_t page, uint32_t prot)
{
	if (find_page(em, page) >= 0)
		return true;
	if (page > UINT64_MAX - PAGE)
		return false;
	if (em->npages == em->cap) {
		size_t ncap = em->cap ? em->cap * 2 : 64;
		uint64_t *np = realloc(em->pages, ncap * sizeof(*np));
		bool *nx = np ? realloc(em->exec, ncap * sizeof(*nx)) : NULL;
		if (np)
			em->pages = np;
		if (!nx)
			return false;
		em->exec = nx;
		em->cap = ncap;
	}
	if (uc_mem_map(em->uc, page, PAGE, prot) != UC_ERR_OK)
		return false;
	em->exec[em->npages] = (prot & UC_PROT_EXEC) != 0;
	em->pages[em->npages++] = page;
	uint8_t buf[PAGE];
	fill_page(em->img, page, buf, (prot & UC_PROT_EXEC) != 0);
	return uc_mem_write(em->uc, page, buf, PAGE) == UC_ERR_OK;
}

static bool map_range(struct emu *em, uint64_t lo, uint64_t hi, uint32_t prot)
{
	if (hi <= lo)
		return true;
	for (uint64_t p = lo & ~(PAGE - 1); p < hi; p += PAGE) {
		if (!map_page(em, p, prot))
			return false;
		if (p > UINT64_MAX - PAGE)
			break;
	}
	return true;
}

static void on_code(uc_engine *uc, uint64_t addr, uint32_t size, void *user)
{
	struct emu *em = user;
	struct emu_result *r = em->r;
	if (em->done) {
		uc_emu_stop(uc);
		return;
	}
	if (addr < em->lo || addr >= em->hi || (em->reentry && addr == em->start && r->ninsns > 0)) {
		r->end = EMU_EXIT;
		r->addr = addr;
		em->done = true;
		uc_emu_stop(uc);
		return;
	}
	if (r->ninsns == em->max_insns) {
		r->end = EMU_LIMIT;
		r->addr = addr;
		em->done = true;
		uc_emu_stop(uc);
		return;
	}
	em->last = addr;
	r->ninsns++;
}

static void record(struct emu_result *r, bool write, uint64_t addr, int size, int64_t value)
{
	struct emu_access *a = write ? r->writes : r->reads;
	unsigned *n = write ? &r->nwrites : &r->nreads;
	if (*n == EMU_MAX_ACCESS) {
		r->overflow = true;
		return;
	}
	a[*n].addr = addr;
	a[*n].size = (uint32_t)size;
	a[*n].value = write ? (size < 8 ? (uint64_t)value & ((1ull << (size * 8)) - 1) : (uint64_t)value) : 0;
	(*n)++;
}

static void on_mem(uc_engine *uc, uc_mem_type type, uint64_t addr, int size, int64_t value, void *user)
{
	struct emu *em = user;
	if (em->done)
		return;
	record(em->r, type == UC_MEM_WRITE, addr, size, value);
}

static void left_at(struct emu *em, uint64_t addr)
{
	if (!em->done) {
		em->r->end = EMU_EXIT;
		em->r->addr = addr;
		em->done = true;
	}
}

static bool on_unmapped(uc_engine *uc, uc_mem_type type, uint64_t addr, int size, int64_t value, void *user)
{
	struct emu *em = user;
	if (type == UC_MEM_FETCH_UNMAPPED) {
		/* Unicorn translates ahead of what runs, up to the end of a page, and an instruction
		 * that straddles it fetches from the next page: the page after a code page is code
		 * too (hlt). Anything else is a branch out of the code pages: control has left. */
		uint64_t page = addr & ~(PAGE - 1);
		int prev = page >= PAGE ? find_page(em, page - PAGE) : -1;
		if (prev >= 0 && em->exec[prev] && map_page(em, page, UC_PROT_ALL))
			return true;
		left_at(em, addr);
		return false;
	}
	uint64_t end = addr + (uint64_t)(size > 0 ? size : 1);
	if (end < addr)
		end = UINT64_MAX;
	/* false for the very top page of the address space: the access faults */
	return map_range(em, addr, end, UC_PROT_READ | UC_PROT_WRITE);
}

static bool on_fetch_prot(uc_engine *uc, uc_mem_type type, uint64_t addr, int size, int64_t value, void *user)
{
	left_at(user, addr); /* a branch into a data page */
	return false;
}

struct emu *emu_new(void)
{
	struct emu *em = calloc(1, sizeof(*em));
	if (!em)
		return NULL;
	if (uc_open(UC_ARCH_X86, UC_MODE_64, &em->uc) != UC_ERR_OK) {
		free(em);
		return NULL;
	}
	uc_hook_add(em->uc, &em->hooks[0], UC_HOOK_CODE, (void *)on_code, em, 1, 0);
	uc_hook_add(em->uc, &em->hooks[1], UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, (void *)on_mem, em, 1, 0);
	uc_hook_add(em->uc, &em->hooks[2], UC_HOOK_MEM_UNMAPPED, (void *)on_unmapped, em, 1, 0);
	uc_hook_add(em->uc, &em->hooks[3], UC_HOOK_MEM_FETCH_PROT, (void *)on_fetch_prot, em, 1, 0);
	if (uc_context_alloc(em->uc, &em->reset) != UC_ERR_OK || uc_context_save(em->uc, em->reset) != UC_ERR_OK) {
		emu_free(em);
		return NULL;
	}
	return em;
}

void emu_free(struct emu *em)
{
	if (!em)
		return;
	if (em->reset)
		uc_context_free(em->reset);
	uc_close(em->uc);
	free(em->pages);
	free(em->exec);
	free(em);
}

static void unmap_all(struct emu *em)
{
	/* Pages come back with other bytes at the same addresses: drop the code translated from
	 * them (per page: uc_ctl_flush_tlb, which drops everything, costs tens of milliseconds). */
	for (size_t i = 0; i < em->npages; i++) {
		uc_ctl_remove_cache(em->uc, em->pages[i], em->pages[i] + PAGE);
		uc_mem_unmap(em->uc, em->pages[i], PAGE);
	}
	em->npages = 0;
}

int emu_run(struct emu *em, const struct emu_image *img, const struct emu_state *st,
            uint64_t start, uint64_t lo, uint64_t hi, bool reentry_exits, unsigned max_insns,
            const uint64_t premap[4], struct emu_result *r)
{
	memset(r, 0, sizeof(*r));
	unmap_all(em);
	em->img = img;
	em->r = r;
	em->start = start;
	em->lo = lo;
	em->hi = hi;
	em->reentry = reentry_exits;
	em->max_insns = max_insns;
	em->done = false;
	em->last = start;
	if (!map_range(em, premap[0], premap[1], UC_PROT_ALL) || !map_range(em, premap[2], premap[3], UC_PROT_ALL))
		return -1;

	/* Nothing of the previous run may leak into this one: the x87 unit in particular keeps
	 * its stack top, tags and last-instruction pointer. */
	uc_context_restore(em->uc, em->reset);
	for (unsigned i = 0; i < EMU_NGPR; i++)
		uc_reg_write(em->uc, gpr_ids[i], &st->gpr[i]);
	uc_reg_write(em->uc, UC_X86_REG_EFLAGS, &st->rflags);
	uc_reg_write(em->uc, UC_X86_REG_FS_BASE, &st->fs_base);
	uc_reg_write(em->uc, UC_X86_REG_GS_BASE, &st->gs_base);
	for (unsigned i = 0; i < EMU_NXMM; i++)
		uc_reg_write(em->uc, UC_X86_REG_XMM0 + (int)i, st->xmm[i]);

	uc_err err = uc_emu_start(em->uc, start, UINT64_MAX, 0, 0);
	if (!em->done) {
		if (err != UC_ERR_OK) {
			r->end = EMU_FAULT;
			r->err = err;
			r->addr = em->last;
		} else {
			r->end = EMU_EXIT;
			uc_reg_read(em->uc, UC_X86_REG_RIP, &r->addr);
		}
	}
	for (unsigned i = 0; i < EMU_NGPR; i++)
		uc_reg_read(em->uc, gpr_ids[i], &r->gpr[i]);
	uc_reg_read(em->uc, UC_X86_REG_EFLAGS, &r->rflags);
	for (unsigned i = 0; i < EMU_NXMM; i++)
		uc_reg_read(em->uc, UC_X86_REG_XMM0 + (int)i, r->xmm[i]);
	uc_reg_read(em->uc, UC_X86_REG_MXCSR, &r->mxcsr);
	uint64_t w = 0;
	uc_reg_read(em->uc, UC_X86_REG_FPSW, &w);
	r->fpsw = (uint16_t)w;
	w = 0;
	uc_reg_read(em->uc, UC_X86_REG_FPCW, &w);
	r->fpcw = (uint16_t)w;
	w = 0;
	uc_reg_read(em->uc, UC_X86_REG_FPTAG, &w);
	r->fptag = (uint16_t)w;
	for (unsigned i = 0; i < 8; i++) {
		uint64_t f[2] = {0, 0}; /* 80 bits: mantissa, then sign and exponent */
		uc_reg_read(em->uc, UC_X86_REG_FP0 + (int)i, f);
		r->st[i][0] = f[0];
		r->st[i][1] = f[1] & 0xffff;
	}
	return 0;
}
