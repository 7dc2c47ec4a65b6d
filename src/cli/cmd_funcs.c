/* cuhook funcs LIB: which exported functions of a library file the engine would patch, and why
 * it would refuse the others, without running anything. Reads the file with libelf and runs the
 * same relocation planner the agent runs in memory. */
#include "commands.h"

#include "glob_filter.h"
#include "relocate.h"
#include "trace_format.h"
#include "x86_insn.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct fn {
	char *name;
	uint64_t addr, size;
};

static int by_addr(const void *a, const void *b)
{
	const struct fn *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* File bytes of [vaddr, vaddr+size) through the PT_LOAD segments; NULL if not all in the file. */
static const uint8_t *bytes_at(Elf *e, const uint8_t *file, size_t file_size, uint64_t vaddr, uint64_t size)
{
	size_t n;
	if (elf_getphdrnum(e, &n) != 0)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr + size <= ph.p_vaddr + ph.p_filesz) {
			uint64_t off = ph.p_offset + (vaddr - ph.p_vaddr);
			if (off + size <= file_size)
				return file + off;
		}
	}
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: cuhook funcs [--funcs GLOBS] [--all] LIB\n"
	           "  Plan the patching of every exported function of LIB (a shared library file)\n"
	           "  and print what would be patched and why the rest would be refused.\n"
	           "  --funcs GLOBS  comma-separated globs, '-' excludes (default: every function)\n"
	           "  --all          list every function with its patch length or refusal\n");
}

int cmd_funcs(int argc, char **argv)
{
	const char *filter = "";
	int all = 0;
	static const struct option opts[] = {
	    {"funcs", required_argument, 0, 'f'}, {"all", no_argument, 0, 'a'}, {"help", no_argument, 0, 'h'}, {0}};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "f:ah", opts, NULL)) != -1) {
		switch (c) {
		case 'f': filter = optarg; break;
		case 'a': all = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	const char *path = argv[optind];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "cuhook funcs: cannot open %s: %s\n", path, strerror(errno));
		return 1;
	}
	off_t fsize = lseek(fd, 0, SEEK_END);
	uint8_t *file = fsize > 0 ? malloc((size_t)fsize) : NULL;
	if (!file || pread(fd, file, (size_t)fsize, 0) != fsize) {
		fprintf(stderr, "cuhook funcs: cannot read %s\n", path);
		close(fd);
		free(file);
		return 1;
	}
	elf_version(EV_CURRENT);
	Elf *e = elf_memory((char *)file, (size_t)fsize);
	GElf_Ehdr eh;
	if (!e || !gelf_getehdr(e, &eh) || eh.e_machine != EM_X86_64 || gelf_getclass(e) != ELFCLASS64) {
		fprintf(stderr, "cuhook funcs: %s is not an x86-64 ELF file\n", path);
		if (e)
			elf_end(e);
		free(file);
		close(fd);
		return 1;
	}
	struct fn *fns = NULL;
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
			if (!name || !glob_filter_match(filter, name))
				continue;
			if (nf == cap) {
				cap = cap ? cap * 2 : 512;
				fns = realloc(fns, cap * sizeof(*fns));
			}
			fns[nf++] = (struct fn){strdup(name), s.st_value, s.st_size};
		}
	}
	qsort(fns, nf, sizeof(*fns), by_addr);

	csh cs;
	x86_open(&cs);
	unsigned counts[CUHOOK_STATUS_COUNT] = {0};
	for (size_t i = 0; i < nf; i++) {
		struct reloc_plan p;
		if (i > 0 && fns[i].addr == fns[i - 1].addr) {
			p.status = CUHOOK_REFUSED_ALIAS;
			snprintf(p.detail, sizeof(p.detail), "same address as %s", fns[i - 1].name);
		} else {
			const uint8_t *code = bytes_at(e, file, (size_t)fsize, fns[i].addr, fns[i].size);
			if (!code) {
				p.status = CUHOOK_REFUSED_TOO_SMALL;
				snprintf(p.detail, sizeof(p.detail), "bytes not in the file");
			} else {
				/* Stubs go within 2 GB of the library: plan for a copy 64 KiB after it. */
				reloc_plan(cs, code, fns[i].addr, fns[i].size, fns[i].addr + 0x10000, &p);
			}
		}
		counts[p.status]++;
		if (all)
			printf("%-48s %-8s %s%s%s\n", fns[i].name,
			       p.status == CUHOOK_PATCHED ? "patch" : "refuse",
			       p.status == CUHOOK_PATCHED ? "" : cuhook_patch_status_names[p.status],
			       p.status == CUHOOK_PATCHED ? "" : ": ", p.status == CUHOOK_PATCHED ? "" : p.detail);
		else if (p.status != CUHOOK_PATCHED && p.status != CUHOOK_REFUSED_ALIAS)
			printf("refused %-40s %s: %s\n", fns[i].name, cuhook_patch_status_names[p.status], p.detail);
		free(fns[i].name);
	}
	cs_close(&cs);
	printf("%s: %zu exported functions: %u patchable", path, nf, counts[CUHOOK_PATCHED]);
	for (int s = 1; s < CUHOOK_STATUS_COUNT; s++)
		if (counts[s])
			printf(", %u %s", counts[s], cuhook_patch_status_names[s]);
	printf("\n");
	free(fns);
	elf_end(e);
	free(file);
	close(fd);
	return 0;
}
