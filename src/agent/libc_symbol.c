#include "libc_symbol.h"

#include <elf.h>
#include <link.h>

int libc_symbol(const char *name, uintptr_t *addr, size_t *size, Dl_info *info)
{
	void *a = dlsym(RTLD_DEFAULT, name);
	const ElfW(Sym) *sym = NULL;
	if (!a || !dladdr1(a, info, (void **)&sym, RTLD_DL_SYMENT) || !sym || !sym->st_size)
		return -1;
	*addr = (uintptr_t)a;
	*size = sym->st_size;
	return 0;
}
