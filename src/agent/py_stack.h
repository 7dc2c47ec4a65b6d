/* Python frames of the calling thread, read in-process from CPython's own interpreter state
 * (issue 17), and the table that interns them for the trace's PYFRAMES blocks. See
 * docs/agent.md, "Python frames". */
#ifndef CUHOOK_PY_STACK_H
#define CUHOOK_PY_STACK_H

#include <stddef.h>
#include <stdint.h>

/* Off the traced path (agent start, after each dlopen the loader watch sees): find a CPython
 * runtime in the process and check its layout. Idempotent. */
void py_stack_setup(void);

/* Traced path (entry handler, busy set): the calling thread's Python frames, innermost first,
 * as PYFRAMES ids (| CUHOOK_PYFRAME_ENTRY), at most max; *end = enum cuhook_stack_end.
 * No lock, no allocation, no Python API, bounded reads. */
unsigned py_stack_capture(uint32_t *ids, unsigned max, uint8_t *end);

/* Writer: append the PYFRAMES entries not yet written to buf (cap bytes); returns bytes and
 * sets *count; call again until it returns 0. py_frames_rewind(): a new file, all again.
 * One caller at a time (the writer). An entry takes at most PY_FRAME_ENTRY_MAX bytes: a
 * smaller cap may never fit the next one. */
size_t py_frames_take(uint8_t *buf, size_t cap, uint32_t *count);
void py_frames_rewind(void);

#define PY_FRAME_ENTRY_MAX 1024

#endif
