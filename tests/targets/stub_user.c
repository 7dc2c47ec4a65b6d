/* stub_user: calls every cu* function of the CUDA toolkit's stub libcuda.so (each returns
 * CUDA_ERROR_STUB_LIBRARY, 34, without touching its arguments), a known number of times, so a
 * trace can be checked against the whole export list of a real-world library build.
 *
 * usage: stub_user [--agent PATH] STUB_LIBCUDA_PATH
 *
 * The function with index k in the file's .dynsym order (cu* functions only) is called
 * k % 3 + 1 times, with all six argument registers zero (NULL pointers: decoders that read
 * strings or out-parameters must cope). Prints "functions N", "expect NAME COUNT" per function,
 * and "bad NAME RET" for any call that did not return 34; exits 1 if there was one. */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define STUB_RESULT 34

typedef int (*stub_fn)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

/* The names of the defined cu* functions in the file's dynamic symbol table, in table order. */
static char **dynsym_cu_functions(const char *path, unsigned *count)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(Elf64_Ehdr)) {
		perror(path);
		exit(2);
	}
	const unsigned char *f = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (f == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	const Elf64_Ehdr *eh = (const void *)f;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > (uint64_t)st.st_size) {
		fprintf(stderr, "stub_user: %s: not a 64-bit ELF file\n", path);
		exit(2);
	}
	const Elf64_Shdr *sh = (const void *)(f + eh->e_shoff);
	char **names = NULL;
	unsigned n = 0;
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
			continue;
		const Elf64_Sym *sym = (const void *)(f + sh[i].sh_offset);
		const char *str = (const char *)(f + sh[sh[i].sh_link].sh_offset);
		size_t nsym = sh[i].sh_size / sizeof(Elf64_Sym);
		names = calloc(nsym, sizeof(*names));
		for (size_t k = 0; k < nsym; k++) {
			const char *name = str + sym[k].st_name;
			if (ELF64_ST_TYPE(sym[k].st_info) == STT_FUNC && sym[k].st_shndx != SHN_UNDEF &&
			    strncmp(name, "cu", 2) == 0)
				names[n++] = strdup(name);
		}
	}
	*count = n;
	return names;
}

int main(int argc, char **argv)
{
	const char *agent = NULL, *path = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--agent") && i + 1 < argc)
			agent = argv[++i];
		else if (argv[i][0] == '-' || path) {
			fprintf(stderr, "usage: stub_user [--agent PATH] STUB_LIBCUDA_PATH\n");
			return 2;
		} else
			path = argv[i];
	}
	if (!path) {
		fprintf(stderr, "usage: stub_user [--agent PATH] STUB_LIBCUDA_PATH\n");
		return 2;
	}
	if (agent && !dlopen(agent, RTLD_NOW | RTLD_LOCAL)) {
		fprintf(stderr, "stub_user: cannot load the agent: %s\n", dlerror());
		return 2;
	}
	unsigned n = 0;
	char **names = dynsym_cu_functions(path, &n);
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "stub_user: %s\n", dlerror());
		return 2;
	}
	int bad = 0;
	printf("functions %u\n", n);
	for (unsigned k = 0; k < n; k++) {
		stub_fn fn = (stub_fn)dlsym(lib, names[k]);
		if (!fn) {
			printf("bad %s dlsym\n", names[k]);
			bad = 1;
			continue;
		}
		unsigned times = k % 3 + 1;
		for (unsigned t = 0; t < times; t++) {
			int r = fn(0, 0, 0, 0, 0, 0);
			if (r != STUB_RESULT) {
				printf("bad %s %d\n", names[k], r);
				bad = 1;
			}
		}
		printf("expect %s %u\n", names[k], times);
	}
	return bad;
}
