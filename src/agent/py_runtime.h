/* What py_stack_setup found of the process's CPython, shared by the frame walk (py_stack.c)
 * and the frame table (py_frames.c). Written once, before `state` is published with release;
 * read on the traced path after an acquire load of `state`. */
#ifndef CUHOOK_PY_RUNTIME_H
#define CUHOOK_PY_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "py_layout.h"

enum py_state {
	PY_NONE = 0,        /* no CPython found (yet) */
	PY_UNSUPPORTED = 1, /* found, a version whose layout cuhook does not know */
	PY_READY = 2,       /* found, layout known, checked: frames are read */
};

struct py_runtime {
	uint32_t state;                /* enum py_state, atomic */
	const struct py_layout *L;
	uintptr_t runtime;             /* &_PyRuntime */
	uintptr_t code_type, str_type, bytes_type, frame_type; /* &PyCode_Type ... (frame: 3.10) */
	unsigned minor;
};

extern struct py_runtime py_rt;

/* A pointer the walk may read `size` bytes at: in the user half of the address space, not in
 * the first page, aligned to `align`. */
static inline bool py_ptr_ok(uintptr_t p, uintptr_t size, uintptr_t align)
{
	return p >= 4096 && p < 0x7ffffffff000ull - size && (p & (align - 1)) == 0;
}

static inline uintptr_t py_read_ptr(uintptr_t p)
{
	return *(const uintptr_t *)p;
}

/* The runtime as it is now: 0 with the gilstate's TSS key in *key where Python is initialized
 * and the runtime's main interpreter points back at the runtime (the layout's runtime offsets
 * hold); 1 where Python is not initialized (yet, or any more); -1 where the check fails. */
int py_runtime_check(unsigned *key);

/* The id of the frame position (code object, instruction index in code units, or in 3.10 the
 * f_lasti) in the frame table, interning it on first sight; -1 where the code object does not
 * look like one or the table is full. Traced path: no lock, no allocation. */
int64_t py_frames_intern(uintptr_t code, int lasti);

/* Off the traced path: map the frame table (idempotent). false if it could not be mapped. */
bool py_frames_setup(void);

#endif
