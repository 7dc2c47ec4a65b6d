/* Who made the call: the caller's native stack at a traced call's entry (agent option stacks=),
 * walked with libunwind, and the thread's Python frames (src/agent/py_stack.h), interned into
 * the stack table (stack_table.h). The entry handler (record.c) calls stack_capture_call
 * through cuhook_call_saving_vectors, busy set. */
#ifndef CUHOOK_STACK_CAPTURE_H
#define CUHOOK_STACK_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>

#define STACK_DEPTH_DEFAULT 48 /* agent option stack_depth=: native and Python frames each */
#define STACK_DEPTH_MAX 256

/* Off the traced path (a start with stacks=, threads running): load libunwind (once, for the
 * process's life), map the stack table, set the depth. False when libunwind cannot be loaded:
 * stacks are then kept with native_end UNSUPPORTED, and *why says why (for one NOTE). */
bool stack_capture_setup(unsigned depth, const char **why);

/* The traced path, through cuhook_call_saving_vectors: the stack of the call whose entry frame
 * (struct entry_frame *) is `frame`, interned; returns its STACKS id, or CUHOOK_STACK_NONE. */
uintptr_t stack_capture_call(void *frame);

#endif
