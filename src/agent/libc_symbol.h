/* Finding a function the agent hooks for its own use (dlopen, ioctl, close, _exit...) in the
 * libraries already loaded: its address and its size (the patcher must know where it ends). */
#ifndef CUHOOK_LIBC_SYMBOL_H
#define CUHOOK_LIBC_SYMBOL_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

/* 0 with *addr, *size and *info (the library it lies in) set; -1 when `name` is not loaded or
 * its symbol has no size. */
int libc_symbol(const char *name, uintptr_t *addr, size_t *size, Dl_info *info);

#endif
