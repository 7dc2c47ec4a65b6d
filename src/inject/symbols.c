/* Where functions are in the target: /proc/PID/maps tells where each ELF object is loaded, the
 * object's own file tells the symbol's offset (its dynamic symbol table), and the difference
 * between the two is the load bias. No code runs in the target for this, so we can find dlopen
 * before we are able to call anything there.
 *
 * Files are opened as the target sees them: through /proc/PID/map_files (the very file mapped,
 * even if deleted or in another mount namespace), else /proc/PID/root/PATH, else PATH. */
#include "internal.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- /proc/PID/maps -------------------------------------------------------------------------- */

int maps_read(pid_t pid, struct maps *out)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/maps", pid);
	FILE *f = fopen(p, "re");
	out->m = NULL;
	out->n = 0;
	if (!f) {
		inj_error("cannot read %s: %s", p, strerror(errno));
		return -1;
	}
	int cap = 0;
	char line[4096 + 256];
	while (fgets(line, sizeof(line), f)) {
		struct mapping mp = {0};
		unsigned long long s, e, off;
		int pos = 0;
		if (sscanf(line, "%llx-%llx %4s %llx %*s %lu %n", &s, &e, mp.perms, &off, &mp.inode, &pos) < 5)
			continue;
		mp.start = s;
		mp.end = e;
		mp.offset = off;
		char *path = line + pos;
		path[strcspn(path, "\n")] = 0;
		if (path[0] == '/') {
			/* "(deleted)" files are still found through map_files; keep the name clean. */
			char *del = strstr(path, " (deleted)");
			if (del && del[10] == 0)
				*del = 0;
			mp.path = strdup(path);
		}
		if (out->n == cap) {
			cap = cap ? cap * 2 : 256;
			struct mapping *nm = realloc(out->m, (size_t)cap * sizeof(*nm));
			if (!nm) {
				free(mp.path);
				break;
			}
			out->m = nm;
		}
		out->m[out->n++] = mp;
	}
	fclose(f);
	return 0;
}

void maps_free(struct maps *m)
{
	for (int i = 0; i < m->n; i++)
		free(m->m[i].path);
	free(m->m);
	m->m = NULL;
	m->n = 0;
}

const struct mapping *maps_find_addr(const struct maps *m, uint64_t addr)
{
	for (int i = 0; i < m->n; i++)
		if (addr >= m->m[i].start && addr < m->m[i].end)
			return &m->m[i];
	return NULL;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

const char *maps_find_object(const struct maps *m, const char *prefix)
{
	size_t n = strlen(prefix);
	for (int i = 0; i < m->n; i++)
		if (m->m[i].path && strncmp(base_name(m->m[i].path), prefix, n) == 0)
			return m->m[i].path;
	return NULL;
}

/* The mapping of `path` with the lowest file offset (normally offset 0: the ELF header). */
static const struct mapping *first_mapping_of(const struct maps *m, const char *path)
{
	const struct mapping *best = NULL;
	for (int i = 0; i < m->n; i++)
		if (m->m[i].path && strcmp(m->m[i].path, path) == 0 && (!best || m->m[i].offset < best->offset))
			best = &m->m[i];
	return best;
}

/* ---- ELF files --------------------------------------------------------------------------------- */

struct elf_file {
	const unsigned char *data;
	size_t size;
	const Elf64_Ehdr *eh;
};

static int elf_open_fd(int fd, struct elf_file *ef)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return -1;
	}
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -1;
	ef->data = p;
	ef->size = (size_t)st.st_size;
	ef->eh = p;
	if (memcmp(ef->eh->e_ident, ELFMAG, SELFMAG) != 0 || ef->eh->e_ident[EI_CLASS] != ELFCLASS64) {
		munmap(p, ef->size);
		return -1;
	}
	return 0;
}

/* Open the file that the target maps at `mp` (or, without mp, the target's `path`). */
static int elf_open_target(pid_t pid, const struct mapping *mp, const char *path, struct elf_file *ef)
{
	char p[4200];
	int fd = -1;
	if (mp) {
		snprintf(p, sizeof(p), "/proc/%d/map_files/%llx-%llx", pid, (unsigned long long)mp->start,
		         (unsigned long long)mp->end);
		fd = open(p, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0 && pid > 0) {
		snprintf(p, sizeof(p), "/proc/%d/root%s", pid, path);
		fd = open(p, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	return elf_open_fd(fd, ef);
}

static void elf_close(struct elf_file *ef)
{
	if (ef->data)
		munmap((void *)ef->data, ef->size);
	ef->data = NULL;
}

static bool in_file(const struct elf_file *ef, uint64_t off, uint64_t len)
{
	return off <= ef->size && len <= ef->size - off;
}

static const Elf64_Shdr *elf_sections(const struct elf_file *ef, int *n)
{
	const Elf64_Ehdr *eh = ef->eh;
	*n = 0;
	if (!eh->e_shoff || eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    !in_file(ef, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
		return NULL;
	*n = eh->e_shnum;
	return (const Elf64_Shdr *)(ef->data + eh->e_shoff);
}

static const Elf64_Phdr *elf_segments(const struct elf_file *ef, int *n)
{
	const Elf64_Ehdr *eh = ef->eh;
	*n = 0;
	if (eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    !in_file(ef, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)))
		return NULL;
	*n = eh->e_phnum;
	return (const Elf64_Phdr *)(ef->data + eh->e_phoff);
}

/* The st_value of a defined dynamic symbol. The default version (foo@@V) wins over hidden old
 * ones (foo@V): glibc 2.34 keeps dlopen@GLIBC_2.2.5 for old binaries next to dlopen@@GLIBC_2.34. */
static int elf_lookup(const struct elf_file *ef, const char *name, uint64_t *value)
{
	int nsec;
	const Elf64_Shdr *sh = elf_sections(ef, &nsec);
	const Elf64_Shdr *dynsym = NULL, *versym = NULL;
	for (int i = 0; i < nsec; i++) {
		if (sh[i].sh_type == SHT_DYNSYM)
			dynsym = &sh[i];
		else if (sh[i].sh_type == SHT_GNU_versym)
			versym = &sh[i];
	}
	if (!dynsym || dynsym->sh_link >= (unsigned)nsec || dynsym->sh_entsize != sizeof(Elf64_Sym) ||
	    !in_file(ef, dynsym->sh_offset, dynsym->sh_size))
		return -1;
	const Elf64_Shdr *strs = &sh[dynsym->sh_link];
	if (!in_file(ef, strs->sh_offset, strs->sh_size))
		return -1;
	const Elf64_Sym *syms = (const Elf64_Sym *)(ef->data + dynsym->sh_offset);
	size_t nsyms = dynsym->sh_size / sizeof(Elf64_Sym);
	const char *strtab = (const char *)(ef->data + strs->sh_offset);
	const Elf64_Half *vers = NULL;
	if (versym && in_file(ef, versym->sh_offset, nsyms * sizeof(Elf64_Half)))
		vers = (const Elf64_Half *)(ef->data + versym->sh_offset);

	bool found_hidden = false;
	uint64_t hidden_value = 0;
	for (size_t i = 1; i < nsyms; i++) {
		const Elf64_Sym *s = &syms[i];
		if (s->st_shndx == SHN_UNDEF || s->st_name >= strs->sh_size)
			continue;
		if (strcmp(strtab + s->st_name, name) != 0)
			continue;
		int type = ELF64_ST_TYPE(s->st_info);
		bool hidden = vers && (vers[i] & 0x8000);
		if (type != STT_FUNC && type != STT_OBJECT) {
			/* An IFUNC's value is its resolver, not something to call; and its old hidden
			 * version is not what the name means today either. */
			if (!hidden)
				return -1;
			continue;
		}
		if (hidden) {
			if (!found_hidden) {
				found_hidden = true;
				hidden_value = s->st_value;
			}
			continue;
		}
		*value = s->st_value;
		return 0;
	}
	if (found_hidden) {
		*value = hidden_value;
		return 0;
	}
	return -1;
}

/* Load bias of an object whose lowest mapping is mp: the segment that file offset maps,
 * page-aligned as the loader maps it. */
static int elf_bias(const struct elf_file *ef, const struct mapping *mp, uint64_t *bias)
{
	int n;
	const Elf64_Phdr *ph = elf_segments(ef, &n);
	for (int i = 0; i < n; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		uint64_t align = 4096;
		uint64_t off0 = ph[i].p_offset & ~(align - 1);
		if (off0 == mp->offset) {
			*bias = mp->start - (ph[i].p_vaddr & ~(align - 1));
			return 0;
		}
	}
	return -1;
}

uint64_t target_symbol(pid_t pid, const struct maps *m, const char *path, const char *sym)
{
	const struct mapping *mp = first_mapping_of(m, path);
	if (!mp)
		return 0;
	struct elf_file ef = {0};
	if (elf_open_target(pid, mp, path, &ef) < 0)
		return 0;
	uint64_t value, bias, addr = 0;
	if (elf_lookup(&ef, sym, &value) == 0 && elf_bias(&ef, mp, &bias) == 0)
		addr = value + bias;
	elf_close(&ef);
	return addr;
}

static bool is_libc(const char *path)
{
	const char *b = base_name(path);
	return strcmp(b, "libc.so.6") == 0 || strncmp(b, "libc-2.", 7) == 0 || strncmp(b, "libc.musl", 9) == 0 ||
	       strncmp(b, "ld-musl", 7) == 0;
}

const char *maps_find_defining(pid_t pid, const struct maps *m, const char *sym, uint64_t *addr)
{
	/* libc first (where dlopen lives since glibc 2.34), then libdl and the rest, each once. */
	for (int pass = 0; pass < 2; pass++) {
		const char *last = NULL;
		for (int i = 0; i < m->n; i++) {
			const char *p = m->m[i].path;
			if (!p || (last && strcmp(p, last) == 0) || is_libc(p) != (pass == 0))
				continue;
			last = p;
			if (m->m[i].offset != 0 || first_mapping_of(m, p) != &m->m[i])
				continue;
			uint64_t a = target_symbol(pid, m, p, sym);
			if (a) {
				*addr = a;
				return p;
			}
		}
	}
	return NULL;
}

int elf_check_x86_64(const char *path, const char *what)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		inj_error("cannot open %s (%s): %s", path, what, strerror(errno));
		return -1;
	}
	unsigned char h[64];
	ssize_t n = read(fd, h, sizeof(h));
	close(fd);
	if (n < 20 || memcmp(h, ELFMAG, SELFMAG) != 0) {
		inj_error("%s is not an ELF program", what);
		return -1;
	}
	uint16_t machine = (uint16_t)(h[18] | h[19] << 8);
	if (h[EI_CLASS] != ELFCLASS64 || machine != EM_X86_64) {
		const char *kind = machine == EM_386 ? "32-bit x86 (i386)" :
		                   machine == EM_X86_64 ? "x32 (32-bit x86-64 ABI)" :
		                   machine == EM_AARCH64 ? "AArch64" : NULL;
		if (kind)
			inj_error("%s is a %s program; cuhook supports x86-64 programs only", what, kind);
		else
			inj_error("%s is an ELF program for machine %u, class %u; cuhook supports x86-64 "
			          "programs only", what, machine, h[EI_CLASS]);
		return -1;
	}
	return 0;
}

int elf_has_interp(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct elf_file ef = {0};
	if (elf_open_fd(fd, &ef) < 0)
		return -1;
	int n, has = 0;
	const Elf64_Phdr *ph = elf_segments(&ef, &n);
	for (int i = 0; i < n; i++)
		if (ph[i].p_type == PT_INTERP)
			has = 1;
	elf_close(&ef);
	return has;
}
