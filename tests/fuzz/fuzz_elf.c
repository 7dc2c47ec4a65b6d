/* libFuzzer harness: the ELF file reader of `cuhook funcs` (src/trampoline/elf_file.h) on
 * arbitrary bytes, then what cuhook funcs does with what it read: every exported function's
 * bytes (elf_file_bytes) through the relocation planner (reloc_plan).
 *
 * elf_file_open() takes a path (it maps the file), so the input goes into a memfd, opened as
 * /proc/self/fd/N: no file system traffic per input. */
#define _GNU_SOURCE
#include "elf_file.h"
#include "relocate.h"
#include "x86_insn.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static int memfd = -1;
static char path[64];
static csh cs;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (memfd < 0) {
		memfd = memfd_create("fuzz_elf", 0);
		if (memfd < 0 || x86_open(&cs))
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	}
	if (ftruncate(memfd, 0) || pwrite(memfd, data, size, 0) != (ssize_t)size)
		abort();
	struct elf_file ef;
	if (elf_file_open(&ef, path) != ELF_FILE_OK)
		return 0;
	struct elf_func *fns;
	size_t n;
	if (elf_file_funcs(&ef, &fns, &n) == 0) {
		volatile uint8_t sink = 0;
		for (size_t i = 0; i < n; i++) {
			const uint8_t *code = elf_file_bytes(&ef, fns[i].addr, fns[i].size);
			if (!code)
				continue;
			/* every byte it hands out must be readable: ASan checks these reads */
			for (uint64_t k = 0; k < fns[i].size; k++)
				sink ^= code[k];
			struct reloc_plan p;
			reloc_plan(cs, code, fns[i].addr, fns[i].size, fns[i].addr + 0x10000, &p);
		}
		(void)sink;
		elf_file_funcs_free(fns, n);
	}
	elf_file_close(&ef);
	return 0;
}
