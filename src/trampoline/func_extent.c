#include "func_extent.h"

#include <elf.h>
#include <link.h>
#include <string.h>

#define DW_EH_PE_omit 0xff

struct obj {
	uintptr_t base;
	const ElfW(Phdr) *ph;
	unsigned n;
};

bool object_contains(uintptr_t base, const void *phdr, unsigned phnum, uintptr_t addr, size_t len, bool exec)
{
	const ElfW(Phdr) *ph = phdr;
	if (addr + len < addr)
		return false;
	for (unsigned i = 0; i < phnum; i++) {
		if (ph[i].p_type != PT_LOAD || (exec && !(ph[i].p_flags & PF_X)) || !(ph[i].p_flags & PF_R))
			continue;
		uintptr_t lo = base + ph[i].p_vaddr, hi = lo + ph[i].p_memsz;
		if (addr >= lo && addr + len <= hi)
			return true;
	}
	return false;
}

/* A cursor over the object's memory that refuses to leave its segments. */
struct rd {
	const struct obj *o;
	uintptr_t p;
	bool bad;
};

static bool ok(struct rd *r, size_t n)
{
	if (!r->bad && !object_contains(r->o->base, r->o->ph, r->o->n, r->p, n, false))
		r->bad = true;
	return !r->bad;
}

static uint64_t rd_u(struct rd *r, unsigned n)
{
	uint64_t v = 0;
	if (!ok(r, n))
		return 0;
	memcpy(&v, (const void *)r->p, n);
	r->p += n;
	return v;
}

static uint64_t rd_uleb(struct rd *r)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t b = (uint8_t)rd_u(r, 1);
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80) || r->bad)
			return v;
	}
	r->bad = true;
	return 0;
}

static int64_t rd_sleb(struct rd *r)
{
	int64_t v = 0;
	unsigned shift = 0;
	uint8_t b;
	do {
		b = (uint8_t)rd_u(r, 1);
		v |= (int64_t)(b & 0x7f) << shift;
		shift += 7;
	} while ((b & 0x80) && shift < 64 && !r->bad);
	if ((b & 0x40) && shift < 64)
		v |= -((int64_t)1 << shift);
	return v;
}

/* A pointer in DWARF's exception-header encoding `enc`; `data` is the base of datarel. */
static uintptr_t rd_enc(struct rd *r, uint8_t enc, uintptr_t data)
{
	uintptr_t at = r->p;
	int64_t v;
	switch (enc & 0x0f) {
	case 0x00: v = (int64_t)rd_u(r, 8); break;            /* absptr */
	case 0x02: v = (int64_t)rd_u(r, 2); break;            /* udata2 */
	case 0x03: v = (int64_t)rd_u(r, 4); break;            /* udata4 */
	case 0x04: v = (int64_t)rd_u(r, 8); break;            /* udata8 */
	case 0x0a: v = (int16_t)rd_u(r, 2); break;            /* sdata2 */
	case 0x0b: v = (int32_t)rd_u(r, 4); break;            /* sdata4 */
	case 0x0c: v = (int64_t)rd_u(r, 8); break;            /* sdata8 */
	default: r->bad = true; return 0;
	}
	switch (enc & 0x70) {
	case 0x00: return (uintptr_t)v;
	case 0x10: return at + (uintptr_t)v;                  /* pcrel */
	case 0x30: return data + (uintptr_t)v;                /* datarel */
	default: r->bad = true; return 0;
	}
}

/* The FDE encoding ('R' augmentation) of the CIE at `cie`. */
static int cie_fde_enc(const struct obj *o, uintptr_t cie, uint8_t *enc)
{
	struct rd r = {o, cie, false};
	uint32_t len = (uint32_t)rd_u(&r, 4);
	if (len == 0 || len == 0xffffffffu || (uint32_t)rd_u(&r, 4) != 0)
		return -1;
	uint8_t version = (uint8_t)rd_u(&r, 1);
	char aug[8];
	unsigned n = 0;
	for (;;) {
		char c = (char)rd_u(&r, 1);
		if (r.bad || n == sizeof(aug))
			return -1;
		aug[n++] = c;
		if (!c)
			break;
	}
	if (version >= 4)
		rd_u(&r, 2); /* address size, segment selector size */
	rd_uleb(&r);         /* code alignment */
	rd_sleb(&r);         /* data alignment */
	if (version == 1)
		rd_u(&r, 1);
	else
		rd_uleb(&r); /* return address register */
	*enc = 0x00;         /* absptr unless 'R' says otherwise */
	if (aug[0] != 'z')
		return r.bad || aug[0] ? -1 : 0;
	rd_uleb(&r);
	for (unsigned i = 1; aug[i]; i++) {
		if (aug[i] == 'R') {
			*enc = (uint8_t)rd_u(&r, 1);
		} else if (aug[i] == 'P') {
			uint8_t penc = (uint8_t)rd_u(&r, 1);
			rd_enc(&r, penc & 0x7f, 0);
		} else if (aug[i] == 'L') {
			rd_u(&r, 1);
		} else if (aug[i] != 'S' && aug[i] != 'B') {
			return -1;
		}
	}
	return r.bad ? -1 : 0;
}

int func_extent(uintptr_t base, const void *phdr, unsigned phnum, uintptr_t addr, size_t *size,
                const char **why)
{
	const struct obj o = {base, phdr, phnum};
	uintptr_t hdr = 0;
	for (unsigned i = 0; i < phnum; i++)
		if (o.ph[i].p_type == PT_GNU_EH_FRAME)
			hdr = base + o.ph[i].p_vaddr;
	if (!hdr) {
		*why = "the library has no unwind table (PT_GNU_EH_FRAME): the function's extent is unknown";
		return -1;
	}
	struct rd r = {&o, hdr, false};
	uint8_t version = (uint8_t)rd_u(&r, 1), ptr_enc = (uint8_t)rd_u(&r, 1);
	uint8_t count_enc = (uint8_t)rd_u(&r, 1), table_enc = (uint8_t)rd_u(&r, 1);
	if (r.bad || version != 1 || table_enc != 0x3b || count_enc == DW_EH_PE_omit) {
		*why = "the unwind table has no search table this reader knows";
		return -1;
	}
	rd_enc(&r, ptr_enc, hdr);
	uintptr_t count = rd_enc(&r, count_enc, hdr);
	uintptr_t table = r.p;
	if (r.bad || !count || !object_contains(base, phdr, phnum, table, count * 8, false)) {
		*why = "the unwind table's search table is malformed";
		return -1;
	}
	/* (initial location, FDE), each a 4-byte offset from the header, sorted by location */
	const int32_t *t = (const int32_t *)table;
	size_t lo = 0, hi = count;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (hdr + (uintptr_t)(intptr_t)t[2 * mid] <= addr)
			lo = mid;
		else
			hi = mid;
	}
	uintptr_t loc = hdr + (uintptr_t)(intptr_t)t[2 * lo];
	uintptr_t fde = hdr + (uintptr_t)(intptr_t)t[2 * lo + 1];
	if (loc > addr) {
		*why = "no unwind entry covers the address: the function's extent is unknown";
		return -1;
	}
	struct rd f = {&o, fde, false};
	uint32_t len = (uint32_t)rd_u(&f, 4);
	uintptr_t cie_field = f.p;
	uint32_t cie_off = (uint32_t)rd_u(&f, 4);
	uint8_t enc;
	if (f.bad || len == 0 || len == 0xffffffffu || cie_off == 0 ||
	    cie_fde_enc(&o, cie_field - cie_off, &enc) != 0) {
		*why = "a malformed unwind entry";
		return -1;
	}
	uintptr_t begin = rd_enc(&f, enc, 0);
	uintptr_t range = rd_enc(&f, enc & 0x0f, 0);
	if (f.bad || begin != loc) {
		*why = "a malformed unwind entry";
		return -1;
	}
	if (addr >= begin + range) {
		*why = "no unwind entry covers the address: the function's extent is unknown";
		return -1;
	}
	if (begin != addr) {
		*why = "the address is inside a function, not at its start (unwind table)";
		return -1;
	}
	*size = range;
	return 0;
}
