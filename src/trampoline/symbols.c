#include "symbols.h"

#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <string.h>

/* On x86-64 glibc relocates the d_ptr entries of a loaded object's dynamic section in place;
 * other loaders (and the vDSO) leave them as offsets. Accept both. */
static uintptr_t dyn_ptr(uintptr_t base, ElfW(Addr) v)
{
	return v < base ? base + v : v;
}

/* Number of dynamic symbols from a GNU hash table: the highest symbol index any chain reaches. */
static size_t gnu_hash_nsyms(const uint32_t *h)
{
	uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2];
	const ElfW(Addr) *bloom = (const ElfW(Addr) *)(h + 4);
	const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
	const uint32_t *chain = buckets + nbuckets;
	uint32_t last = 0;
	for (uint32_t i = 0; i < nbuckets; i++)
		if (buckets[i] > last)
			last = buckets[i];
	if (last < symoffset)
		return symoffset;
	while (!(chain[last - symoffset] & 1))
		last++;
	return last + 1;
}

/* The loaded object's dynamic symbol and string tables; -1 where it has none usable. */
struct dyn_tables {
	const ElfW(Sym) *symtab;
	const char *strtab;
	size_t strsz, nsyms;
	const uint32_t *gnu_hash; /* NULL where the object has only DT_HASH */
};

static int dyn_tables(uintptr_t base, const void *phdr_v, unsigned phnum, struct dyn_tables *t)
{
	const ElfW(Phdr) *phdr = phdr_v;
	const ElfW(Dyn) *dyn = NULL;
	for (unsigned i = 0; i < phnum; i++)
		if (phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(base + phdr[i].p_vaddr);
	if (!dyn)
		return -1;

	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	size_t strsz = 0, nsyms = 0;
	const uint32_t *gnu_hash = NULL, *sysv_hash = NULL;
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_ptr(base, d->d_un.d_ptr); break;
		case DT_STRTAB: strtab = (const char *)dyn_ptr(base, d->d_un.d_ptr); break;
		case DT_STRSZ: strsz = d->d_un.d_val; break;
		case DT_HASH: sysv_hash = (const uint32_t *)dyn_ptr(base, d->d_un.d_ptr); break;
		case DT_GNU_HASH: gnu_hash = (const uint32_t *)dyn_ptr(base, d->d_un.d_ptr); break;
		}
	}
	if (!symtab || !strtab)
		return -1;
	if (sysv_hash)
		nsyms = sysv_hash[1]; /* nchain == number of symbols */
	else if (gnu_hash)
		nsyms = gnu_hash_nsyms(gnu_hash);
	else
		return -1;
	*t = (struct dyn_tables){symtab, strtab, strsz, nsyms, gnu_hash};
	return 0;
}

/* Defined, exported (GLOBAL or WEAK, not hidden) and named inside the string table. */
static bool exported(const struct dyn_tables *t, const ElfW(Sym) *s)
{
	unsigned bind = ELF64_ST_BIND(s->st_info);
	if (s->st_shndx == SHN_UNDEF || s->st_value == 0)
		return false;
	if (bind != STB_GLOBAL && bind != STB_WEAK)
		return false;
	return ELF64_ST_VISIBILITY(s->st_other) != STV_HIDDEN && s->st_name < t->strsz;
}

static bool is_named(const struct dyn_tables *t, size_t i, const char *name)
{
	const ElfW(Sym) *s = &t->symtab[i];
	unsigned type = ELF64_ST_TYPE(s->st_info);
	return (type == STT_FUNC || type == STT_OBJECT) && exported(t, s) &&
	       strcmp(t->strtab + s->st_name, name) == 0;
}

/* The symbol index of `name` through the GNU hash table (what the loader does: a bloom filter,
 * then one bucket's chain), 0 where it is not there. */
static size_t gnu_lookup(const struct dyn_tables *t, const char *name)
{
	const uint32_t *h = t->gnu_hash;
	uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2], shift = h[3];
	const ElfW(Addr) *bloom = (const ElfW(Addr) *)(h + 4);
	const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
	const uint32_t *chain = buckets + nbuckets;
	uint32_t hv = 5381;
	for (const char *c = name; *c; c++)
		hv = hv * 33 + (uint8_t)*c;
	const unsigned bits = 8 * sizeof(ElfW(Addr));
	ElfW(Addr) word = bloom[(hv / bits) % bloom_size];
	ElfW(Addr) mask = ((ElfW(Addr))1 << (hv % bits)) | ((ElfW(Addr))1 << ((hv >> shift) % bits));
	if (nbuckets == 0 || (word & mask) != mask)
		return 0;
	for (uint32_t i = buckets[hv % nbuckets]; i >= symoffset && i < t->nsyms; i++) {
		uint32_t ch = chain[i - symoffset];
		if ((ch | 1) == (hv | 1) && is_named(t, i, name))
			return i;
		if (ch & 1)
			break;
	}
	return 0;
}

int symbols_find(uintptr_t base, const void *phdr, unsigned phnum, const char *name,
                 uintptr_t *addr, size_t *size)
{
	struct dyn_tables t;
	if (dyn_tables(base, phdr, phnum, &t) < 0)
		return -1;
	size_t found = 0;
	if (t.gnu_hash) {
		found = gnu_lookup(&t, name);
	} else {
		for (size_t i = 1; i < t.nsyms && !found; i++)
			if (is_named(&t, i, name))
				found = i;
	}
	if (!found)
		return -1;
	*addr = base + t.symtab[found].st_value;
	*size = t.symtab[found].st_size;
	return 0;
}

int symbols_for_each(uintptr_t base, const void *phdr, unsigned phnum,
                     void (*fn)(const struct found_func *f, void *ctx), void *ctx)
{
	struct dyn_tables t;
	if (dyn_tables(base, phdr, phnum, &t) < 0)
		return -1;
	int visited = 0;
	for (size_t i = 1; i < t.nsyms; i++) {
		const ElfW(Sym) *s = &t.symtab[i];
		if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || !exported(&t, s))
			continue;
		struct found_func f = {t.strtab + s->st_name, base + s->st_value, s->st_size};
		fn(&f, ctx);
		visited++;
	}
	return visited;
}
