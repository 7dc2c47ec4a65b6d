/* A shared-library file read with libelf, for offline work on it (`cuhook funcs`, the
 * relocation checker): its PT_LOAD segments, the bytes at a virtual address, and its exported
 * functions. Nothing here runs the library or applies its relocations. */
#ifndef CUHOOK_ELF_FILE_H
#define CUHOOK_ELF_FILE_H

#include <stddef.h>
#include <stdint.h>

struct elf_segment {
	uint64_t vaddr, memsz;   /* where the loader maps it, relative to the load base */
	uint64_t offset, filesz; /* file bytes backing [vaddr, vaddr+filesz) */
	uint32_t flags;          /* PF_R | PF_W | PF_X */
};

struct elf_file {
	const char *path;
	uint8_t *data;           /* the whole file, mapped privately */
	size_t size;
	void *elf;               /* Elf * */
	struct elf_segment *segs; /* PT_LOAD segments in file order */
	size_t nsegs;
};

struct elf_func {
	char *name;
	uint64_t addr, size;     /* st_value, st_size */
};

enum elf_file_error {
	ELF_FILE_OK = 0,
	ELF_FILE_ERR_OPEN,       /* open(2) failed: errno says why */
	ELF_FILE_ERR_READ,       /* empty, or could not be mapped */
	ELF_FILE_ERR_NOT_X86_64, /* not an ELF64 x86-64 file */
};

/* Open and map `path`. Returns an enum elf_file_error; on error nothing needs closing. */
int elf_file_open(struct elf_file *f, const char *path);
void elf_file_close(struct elf_file *f);

/* The file bytes of [vaddr, vaddr+size), all inside one segment's file-backed part; NULL if
 * they are not all in the file. */
const uint8_t *elf_file_bytes(const struct elf_file *f, uint64_t vaddr, uint64_t size);

/* Every exported function: defined STT_FUNC symbols of .dynsym with GLOBAL or WEAK binding and
 * a non-zero value, sorted by address, then name (aliases end up next to each other).
 * Returns 0 and a malloc'd array (free it with elf_file_funcs_free), or -1 (out of memory). */
int elf_file_funcs(const struct elf_file *f, struct elf_func **out, size_t *n);
void elf_file_funcs_free(struct elf_func *fns, size_t n);

#endif
