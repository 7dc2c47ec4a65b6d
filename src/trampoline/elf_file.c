#include "elf_file.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int elf_file_open(struct elf_file *f, const char *path)
{
	memset(f, 0, sizeof(*f));
	f->path = path;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ELF_FILE_ERR_OPEN;
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size <= 0) {
		close(fd);
		return ELF_FILE_ERR_READ;
	}
	/* Private and writable: libelf may convert in place; nothing goes back to the file. */
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	int saved = errno;
	close(fd);
	if (m == MAP_FAILED) {
		errno = saved;
		return ELF_FILE_ERR_READ;
	}
	f->data = m;
	f->size = (size_t)st.st_size;

	elf_version(EV_CURRENT);
	Elf *e = elf_memory((char *)f->data, f->size);
	GElf_Ehdr eh;
	size_t nph;
	if (!e || !gelf_getehdr(e, &eh) || eh.e_machine != EM_X86_64 || gelf_getclass(e) != ELFCLASS64 ||
	    elf_getphdrnum(e, &nph) != 0) {
		if (e)
			elf_end(e);
		munmap(f->data, f->size);
		memset(f, 0, sizeof(*f));
		return ELF_FILE_ERR_NOT_X86_64;
	}
	f->elf = e;
	f->segs = calloc(nph ? nph : 1, sizeof(*f->segs));
	for (size_t i = 0; f->segs && i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		f->segs[f->nsegs++] = (struct elf_segment){ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz, ph.p_flags};
	}
	return ELF_FILE_OK;
}

void elf_file_close(struct elf_file *f)
{
	if (f->elf)
		elf_end(f->elf);
	if (f->data)
		munmap(f->data, f->size);
	free(f->segs);
	memset(f, 0, sizeof(*f));
}

const uint8_t *elf_file_bytes(const struct elf_file *f, uint64_t vaddr, uint64_t size)
{
	/* Every sum below could wrap with a hostile file's symbol or segment values (st_value near
	 * 2^64, p_offset + p_filesz past 2^64): compare differences only. */
	for (size_t i = 0; i < f->nsegs; i++) {
		const struct elf_segment *s = &f->segs[i];
		if (vaddr < s->vaddr)
			continue;
		uint64_t in = vaddr - s->vaddr;
		if (in > s->filesz || size > s->filesz - in)
			continue;
		if (s->offset > f->size || in > f->size - s->offset)
			continue;
		uint64_t off = s->offset + in;
		if (size <= f->size - off)
			return f->data + off;
	}
	return NULL;
}

static int by_addr(const void *a, const void *b)
{
	const struct elf_func *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->name, y->name);
}

int elf_file_funcs(const struct elf_file *f, struct elf_func **out, size_t *n)
{
	Elf *e = f->elf;
	struct elf_func *fns = NULL;
	size_t nf = 0, cap = 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t count = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 1; d && i < count; i++) {
			GElf_Sym s;
			if (!gelf_getsym(d, (int)i, &s))
				continue;
			int bind = GELF_ST_BIND(s.st_info);
			if (GELF_ST_TYPE(s.st_info) != STT_FUNC || s.st_shndx == SHN_UNDEF || !s.st_value ||
			    (bind != STB_GLOBAL && bind != STB_WEAK))
				continue;
			const char *name = elf_strptr(e, sh.sh_link, s.st_name);
			if (!name)
				continue;
			if (nf == cap) {
				size_t ncap = cap ? cap * 2 : 512;
				struct elf_func *nfns = realloc(fns, ncap * sizeof(*fns));
				if (!nfns)
					goto oom;
				fns = nfns;
				cap = ncap;
			}
			char *dup = strdup(name);
			if (!dup)
				goto oom;
			fns[nf++] = (struct elf_func){dup, s.st_value, s.st_size};
		}
	}
	if (nf)
		qsort(fns, nf, sizeof(*fns), by_addr);
	*out = fns;
	*n = nf;
	return 0;
oom:
	elf_file_funcs_free(fns, nf);
	*out = NULL;
	*n = 0;
	return -1;
}

void elf_file_funcs_free(struct elf_func *fns, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(fns[i].name);
	free(fns);
}
