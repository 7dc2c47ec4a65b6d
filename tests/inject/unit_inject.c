/* Unit tests of the injector's parts that need no second process: the ELF checks and the
 * symbol resolver (checked against the dynamic linker's own answer, on ourselves). Prints
 * "N passed, N failed". */
#include "inject.h"
#include "internal.h"

#include <dlfcn.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int passed, failed;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                           \
		if (cond) {                                                                                \
			passed++;                                                                              \
		} else {                                                                                   \
			failed++;                                                                              \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                 \
			printf(__VA_ARGS__);                                                                   \
			printf("\n");                                                                          \
		}                                                                                          \
	} while (0)

static void write_elf(const char *path, int cls, int machine)
{
	unsigned char h[64] = {0};
	memcpy(h, ELFMAG, SELFMAG);
	h[EI_CLASS] = (unsigned char)cls;
	h[EI_DATA] = ELFDATA2LSB;
	h[EI_VERSION] = EV_CURRENT;
	h[16] = ET_EXEC;
	h[18] = (unsigned char)(machine & 0xff);
	h[19] = (unsigned char)(machine >> 8);
	FILE *f = fopen(path, "wb");
	fwrite(h, 1, sizeof(h), f);
	fclose(f);
}

static void test_elf_checks(const char *static_exe)
{
	char p[64];
	snprintf(p, sizeof(p), "/tmp/cuhook-unit-%d.elf", (int)getpid());
	struct {
		int cls, machine;
		const char *expect;
	} cases[] = {{ELFCLASS64, EM_AARCH64, "AArch64"},
	             {ELFCLASS32, EM_386, "32-bit x86"},
	             {ELFCLASS32, EM_X86_64, "x32"},
	             {ELFCLASS64, EM_RISCV, "machine 243"}};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_elf(p, cases[i].cls, cases[i].machine);
		inj_error_clear();
		CHECK(elf_check_x86_64(p, "prog") < 0, "case %u accepted", i);
		CHECK(strstr(inj_error_text(), cases[i].expect) && strstr(inj_error_text(), "x86-64 programs only"),
		      "message: %s", inj_error_text());
	}
	FILE *f = fopen(p, "w");
	fputs("#!/bin/sh\n", f);
	fclose(f);
	inj_error_clear();
	CHECK(elf_check_x86_64(p, "prog") < 0 && strstr(inj_error_text(), "not an ELF"), "%s", inj_error_text());
	unlink(p);
	inj_error_clear();
	CHECK(elf_check_x86_64("/proc/self/exe", "self") == 0, "%s", inj_error_text());
	CHECK(elf_has_interp("/proc/self/exe") == 1, "we are dynamically linked");
	if (static_exe)
		CHECK(elf_has_interp(static_exe) == 0, "%s is static", static_exe);
}

static void test_symbols(void)
{
	struct maps m;
	CHECK(maps_read(getpid(), &m) == 0, "maps");
	const char *libc = maps_find_object(&m, "libc.so.6");
	CHECK(libc != NULL, "libc mapped");
	if (!libc)
		return;
	const char *names[] = {"dlopen", "dlerror", "malloc", "printf", "environ"};
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		uint64_t ours = target_symbol(getpid(), &m, libc, names[i]);
		void *theirs = dlsym(RTLD_DEFAULT, names[i]);
		CHECK(ours && ours == (uint64_t)(uintptr_t)theirs, "%s: 0x%llx vs %p", names[i],
		      (unsigned long long)ours, theirs);
	}
	/* an IFUNC (memcpy) must not be returned: its symbol value is the resolver */
	CHECK(target_symbol(getpid(), &m, libc, "memcpy") == 0, "memcpy is an IFUNC");
	CHECK(target_symbol(getpid(), &m, libc, "no_such_symbol_here") == 0, "missing symbol");
	uint64_t a = 0;
	const char *def = maps_find_defining(getpid(), &m, "dlopen", &a);
	CHECK(def && strcmp(def, libc) == 0 && a == (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "dlopen"),
	      "dlopen found in libc first");
	const struct mapping *mp = maps_find_addr(&m, (uint64_t)(uintptr_t)&test_symbols);
	CHECK(mp && mp->perms[2] == 'x', "our code is in an executable mapping");
	maps_free(&m);
}

static void test_restart_detection(void)
{
	struct user_regs_struct r = {0};
	r.orig_rax = 0; /* read */
	r.rax = (unsigned long long)-512;
	CHECK(regs_in_restartable_syscall(&r), "ERESTARTSYS");
	r.rax = (unsigned long long)-516;
	CHECK(regs_in_restartable_syscall(&r), "ERESTART_RESTARTBLOCK");
	r.rax = (unsigned long long)-4;
	CHECK(!regs_in_restartable_syscall(&r), "EINTR is final");
	r.orig_rax = (unsigned long long)-1;
	r.rax = (unsigned long long)-512;
	CHECK(!regs_in_restartable_syscall(&r), "not in a system call");
}

int main(int argc, char **argv)
{
	test_elf_checks(argc > 1 ? argv[1] : NULL);
	test_symbols();
	test_restart_detection();
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
