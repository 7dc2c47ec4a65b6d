/* Native addresses of a trace's stacks -> function, offset and source line, after the traced
 * process is gone: the MAPS entry that holds an address names the file and where it was mapped;
 * the file's ELF symbols (libelf: .symtab, else .dynsym) name the function, its DWARF line table
 * (libdw) the file:line where it has one, and C++ names are demangled (demangle.cc).
 *
 * Never a wrong name: the file read is the one at the recorded path today, so when the MAPS entry
 * has a build id the file's must be the same; a file that is missing, not a regular ELF file, or
 * of another build gives no names at all (the caller prints "[path+0xoff]") and one note per
 * file says why. Each file is opened once (objects are cached by path and build id) and read with
 * read(2), never mapped: a file that shrinks while it is read cannot fault the report. Files are
 * opened only when they are regular files (O_NONBLOCK, then fstat): a trace naming a FIFO or a
 * device cannot make the report block or act on it. */
#include "symbolize.h"

#include "report.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NT_GNU_BUILD_ID_TYPE 3

struct sym {
	uint64_t value, size;
	const char *name;          /* as in the file (mangled) */
	char *demangled;           /* lazily: NULL not tried yet; == name when it does not demangle */
	int global;
};

struct load {
	uint64_t offset, filesz, vaddr;
};

struct object {
	char *path;
	uint8_t build_id[CUHOOK_MAP_BUILD_ID_MAX];
	uint8_t build_id_len;
	int usable;                /* opened, an ELF file of the expected build */
	int fd;
	Elf *elf;
	Dwarf *dwarf;              /* NULL: no DWARF */
	struct sym *syms;
	uint32_t nsyms;
	struct load *loads;
	uint32_t nloads;
	char *names;               /* the symbols' names, copied */
	char path_buf[4096];       /* the last source file name joined to its directory */
};

struct rp_symbolizer {
	struct object *objs;
	uint32_t nobjs, cap;
	char **notes;
	uint32_t nnotes;
};

static void add_note(struct rp_symbolizer *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_note(struct rp_symbolizer *s, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	char **n = realloc(s->notes, (s->nnotes + 1) * sizeof(*n));
	if (!n)
		return;
	s->notes = n;
	if ((n[s->nnotes] = strdup(buf)) != NULL)
		s->nnotes++;
}

struct rp_symbolizer *rp_sym_new(void)
{
	elf_version(EV_CURRENT);
	return calloc(1, sizeof(struct rp_symbolizer));
}

void rp_sym_free(struct rp_symbolizer *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->nobjs; i++) {
		struct object *o = &s->objs[i];
		for (uint32_t k = 0; k < o->nsyms; k++)
			if (o->syms[k].demangled != o->syms[k].name)
				free(o->syms[k].demangled);
		free(o->syms);
		free(o->loads);
		free(o->names);
		if (o->dwarf)
			dwarf_end(o->dwarf);
		if (o->elf)
			elf_end(o->elf);
		if (o->fd >= 0)
			close(o->fd);
		free(o->path);
	}
	free(s->objs);
	for (uint32_t i = 0; i < s->nnotes; i++)
		free(s->notes[i]);
	free(s->notes);
	free(s);
}

const char *const *rp_sym_notes(const struct rp_symbolizer *s, uint32_t *n)
{
	*n = s ? s->nnotes : 0;
	return s ? (const char *const *)s->notes : NULL;
}

static void hex_id(char *buf, const uint8_t *id, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		sprintf(buf + 2 * i, "%02x", id[i]);
	buf[2 * n] = 0;
}

/* The file's NT_GNU_BUILD_ID note (its SHT_NOTE sections); 0 when it has none. */
static unsigned file_build_id(Elf *elf, uint8_t *out)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;
		while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID_TYPE && nh.n_namesz == 4 &&
			    !memcmp((const char *)d->d_buf + name_off, "GNU", 4) && nh.n_descsz > 0) {
				unsigned n = nh.n_descsz > CUHOOK_MAP_BUILD_ID_MAX ? CUHOOK_MAP_BUILD_ID_MAX : nh.n_descsz;
				memcpy(out, (const char *)d->d_buf + desc_off, n);
				return n;
			}
		}
	}
	return 0;
}

static int by_value(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	if (x->global != y->global)   /* of aliases, the global name first */
		return y->global - x->global;
	return strcmp(x->name, y->name);
}

/* The function symbols of one symbol table section (.symtab or .dynsym). */
static int load_symbols(struct object *o, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || !sh->sh_entsize)
		return 0;
	size_t n = sh->sh_size / sh->sh_entsize, names_len = 0;
	struct sym *syms = calloc(n ? n : 1, sizeof(*syms));
	if (!syms)
		return -1;
	uint32_t k = 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym es;
		if (!gelf_getsym(d, (int)i, &es))
			break;
		int type = GELF_ST_TYPE(es.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || es.st_shndx == SHN_UNDEF || !es.st_value || !es.st_size)
			continue;
		const char *name = elf_strptr(o->elf, sh->sh_link, es.st_name);
		if (!name || !*name)
			continue;
		syms[k].value = es.st_value;
		syms[k].size = es.st_size;
		syms[k].name = name;
		syms[k].global = GELF_ST_BIND(es.st_info) != STB_LOCAL;
		names_len += strlen(name) + 1;
		k++;
	}
	/* the names are copied: libelf's string table stays valid, but one buffer is simpler to own */
	char *names = malloc(names_len ? names_len : 1), *w = names;
	if (!names) {
		free(syms);
		return -1;
	}
	for (uint32_t i = 0; i < k; i++) {
		size_t l = strlen(syms[i].name) + 1;
		memcpy(w, syms[i].name, l);
		syms[i].name = w;
		w += l;
	}
	qsort(syms, k, sizeof(*syms), by_value);
	o->syms = syms;
	o->nsyms = k;
	o->names = names;
	return 0;
}

static void object_open(struct rp_symbolizer *s, struct object *o)
{
	o->fd = -1;
	if (o->path[0] != '/')
		return; /* "[vdso]" and the like: no file to read, nothing to say */
	/* look before opening (opening a device can act), and again at what was opened */
	struct stat st;
	if (stat(o->path, &st) < 0) {
		add_note(s, "%s: %s: its frames are shown as [path+0xoffset]", o->path, strerror(errno));
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		add_note(s, "%s: not a regular file: its frames are shown as [path+0xoffset]", o->path);
		return;
	}
	int fd = open(o->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		add_note(s, "%s: %s: its frames are shown as [path+0xoffset]", o->path, strerror(errno));
		return;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		add_note(s, "%s: not a regular file: its frames are shown as [path+0xoffset]", o->path);
		close(fd);
		return;
	}
	o->fd = fd;
	o->elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!o->elf || elf_kind(o->elf) != ELF_K_ELF) {
		add_note(s, "%s: not an ELF file: its frames are shown as [path+0xoffset]", o->path);
		return;
	}
	uint8_t id[CUHOOK_MAP_BUILD_ID_MAX];
	unsigned idn = file_build_id(o->elf, id);
	if (o->build_id_len && idn && (idn != o->build_id_len || memcmp(id, o->build_id, idn))) {
		char want[2 * CUHOOK_MAP_BUILD_ID_MAX + 1], have[2 * CUHOOK_MAP_BUILD_ID_MAX + 1];
		hex_id(want, o->build_id, o->build_id_len);
		hex_id(have, id, idn);
		add_note(s, "%s: build id %s, the traced process had %s (the file changed since): its frames are "
		         "shown as [path+0xoffset]", o->path, have, want);
		return;
	}
	size_t phnum;
	if (elf_getphdrnum(o->elf, &phnum) == 0 && phnum) {
		o->loads = calloc(phnum, sizeof(*o->loads));
		for (size_t i = 0; o->loads && i < phnum; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(o->elf, (int)i, &ph) && ph.p_type == PT_LOAD)
				o->loads[o->nloads++] = (struct load){ph.p_offset, ph.p_filesz, ph.p_vaddr};
		}
	}
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	GElf_Shdr sh, symtab_sh, dynsym_sh;
	while ((scn = elf_nextscn(o->elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			symtab = scn;
			symtab_sh = sh;
		} else if (sh.sh_type == SHT_DYNSYM) {
			dynsym = scn;
			dynsym_sh = sh;
		}
	}
	if (symtab)
		load_symbols(o, symtab, &symtab_sh);
	if (!o->nsyms && dynsym) {
		free(o->syms);
		free(o->names);
		o->syms = NULL;
		o->names = NULL;
		load_symbols(o, dynsym, &dynsym_sh);
	}
	o->dwarf = dwarf_begin_elf(o->elf, DWARF_C_READ, NULL);
	o->usable = 1;
}

static struct object *object_get(struct rp_symbolizer *s, const struct tr_map *m)
{
	for (uint32_t i = 0; i < s->nobjs; i++) {
		struct object *o = &s->objs[i];
		if (!strcmp(o->path, m->path) && o->build_id_len == m->build_id_len &&
		    !memcmp(o->build_id, m->build_id, m->build_id_len))
			return o;
	}
	if (s->nobjs == s->cap) {
		uint32_t ncap = s->cap ? s->cap * 2 : 16;
		struct object *n = realloc(s->objs, ncap * sizeof(*n));
		if (!n)
			return NULL;
		s->objs = n;
		s->cap = ncap;
	}
	struct object *o = &s->objs[s->nobjs];
	memset(o, 0, sizeof(*o));
	o->path = strdup(m->path);
	if (!o->path)
		return NULL;
	o->build_id_len = m->build_id_len;
	memcpy(o->build_id, m->build_id, m->build_id_len);
	s->nobjs++;
	object_open(s, o);
	return o;
}

/* The function symbol holding vaddr: the last one starting at or before it, or one of the few
 * before that (a symbol nested in a larger one), whose [value, value + size) holds it. */
static struct sym *sym_find(struct object *o, uint64_t vaddr)
{
	uint32_t lo = 0, hi = o->nsyms;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (o->syms[mid].value <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (uint32_t i = lo, tries = 0; i > 0 && tries < 8; i--, tries++) {
		struct sym *y = &o->syms[i - 1];
		if (vaddr - y->value < y->size) {
			/* the first of its aliases (sorted: the global one) */
			while (y > o->syms && y[-1].value == y->value && y[-1].size == y->size)
				y--;
			return y;
		}
	}
	return NULL;
}

int rp_sym_lookup(struct rp_symbolizer *s, const struct tr_map *m, uint64_t pc, struct rp_sym *out)
{
	memset(out, 0, sizeof(*out));
	out->file_off = pc - m->start + m->offset;
	struct object *o = object_get(s, m);
	if (!o || !o->usable)
		return 0;
	/* the file offset -> the address the file was linked at (its PT_LOAD segments) */
	uint64_t vaddr = 0;
	int found = 0;
	for (uint32_t i = 0; i < o->nloads && !found; i++) {
		const struct load *l = &o->loads[i];
		if (out->file_off >= l->offset && out->file_off - l->offset < l->filesz) {
			vaddr = out->file_off - l->offset + l->vaddr;
			found = 1;
		}
	}
	if (!found)
		return 1;
	struct sym *y = sym_find(o, vaddr);
	if (y) {
		if (!y->demangled) {
			y->demangled = rp_demangle(y->name);
			if (!y->demangled)
				y->demangled = (char *)y->name;
		}
		out->func = y->demangled;
		out->func_off = vaddr - y->value;
	}
	if (o->dwarf) {
		Dwarf_Die cu;
		if (dwarf_addrdie(o->dwarf, vaddr, &cu)) {
			Dwarf_Line *line = dwarf_getsrc_die(&cu, vaddr);
			int lineno = 0;
			const char *src = line ? dwarf_linesrc(line, NULL, NULL) : NULL;
			if (src && dwarf_lineno(line, &lineno) == 0 && lineno > 0) {
				out->file = src;
				out->line = lineno;
				/* a name relative to the compilation's directory: joined to it, as addr2line does */
				Dwarf_Attribute at;
				const char *dir = src[0] != '/' ? dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir, &at)) : NULL;
				if (dir && *dir) {
					snprintf(o->path_buf, sizeof(o->path_buf), "%s/%s", dir, src);
					out->file = o->path_buf;
				}
			}
		}
	}
	return 1;
}
