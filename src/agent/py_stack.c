/* The calling thread's Python frames (py_stack_capture), read from its own PyThreadState: the
 * one the gilstate's TSS key holds for the thread, which stays set while the thread has
 * released the GIL (as ctypes and PyTorch do around foreign calls). Only that thread changes
 * its frames, and it is here, inside a call it made: nothing moves under the walk. Every
 * pointer is checked (range, alignment, the type of the object) before it is read; a check
 * that fails ends the walk with END_BAD and the frames before it. */
#include "py_runtime.h"
#include "py_stack.h"

#include <pthread.h>

#include "trace_format.h"

/* The thread's PyThreadState, or 0 (not a Python thread: END_NONE), or 1 (a state that fails
 * the checks: END_BAD). */
static uintptr_t thread_state(uint8_t *end)
{
	const struct py_layout *L = py_rt.L;
	unsigned key;
	int r = py_runtime_check(&key);
	if (r != 0) {
		*end = r > 0 ? CUHOOK_STACK_END_NONE : CUHOOK_STACK_END_BAD;
		return 0;
	}
	uintptr_t ts = (uintptr_t)pthread_getspecific((pthread_key_t)key);
	if (!ts) {
		*end = CUHOOK_STACK_END_NONE;
		return 0;
	}
	/* Ours, and of this runtime's main interpreter (threads of sub-interpreters are not
	 * read: their state is another interpreter's, the check cannot tell it from a wrong one) */
	if (!py_ptr_ok(ts, L->ts_thread_id + 8u, 8) ||
	    py_read_ptr(ts + L->ts_interp) != py_read_ptr(py_rt.runtime + L->rt_main_interp) ||
	    py_read_ptr(ts + L->ts_thread_id) != (uintptr_t)pthread_self()) {
		*end = CUHOOK_STACK_END_BAD;
		return 0;
	}
	return ts;
}

/* 3.10: PyFrameObjects by f_back. Each has its own evaluation loop activation: every frame is
 * an entry frame. */
static unsigned walk_frame_objects(uintptr_t f, uint32_t *ids, unsigned max, uint8_t *end)
{
	const struct py_layout *L = py_rt.L;
	unsigned n = 0;
	for (; f; f = py_read_ptr(f + L->fr_previous)) {
		if (n == max) {
			*end = CUHOOK_STACK_END_DEPTH;
			return n;
		}
		if (!py_ptr_ok(f, L->fr_instr + 4u, 8) || py_read_ptr(f + PY_OB_TYPE) != py_rt.frame_type)
			break;
		int64_t id = py_frames_intern(py_read_ptr(f + L->fr_code), *(const int32_t *)(f + L->fr_instr));
		if (id < 0)
			break;
		ids[n++] = (uint32_t)id | CUHOOK_PYFRAME_ENTRY;
	}
	*end = f ? CUHOOK_STACK_END_BAD : CUHOOK_STACK_END_DONE;
	return n;
}

/* 3.11+: _PyInterpreterFrames by previous. The outermost frame of an evaluation loop
 * activation is the one 3.11 flags is_entry, and from 3.12 the one whose previous is the
 * activation's C-stack shim frame (or NULL, for the thread's first). */
static unsigned walk_interp_frames(uintptr_t f, uint32_t *ids, unsigned max, uint8_t *end)
{
	const struct py_layout *L = py_rt.L;
	unsigned n = 0;
	for (; f; f = py_read_ptr(f + L->fr_previous)) {
		if (!py_ptr_ok(f, L->fr_owner + 1u, 8))
			break;
		int owner = *(const int8_t *)(f + L->fr_owner);
		if (owner == L->owner_cstack) {
			if (n)
				ids[n - 1] |= CUHOOK_PYFRAME_ENTRY;
			continue;
		}
		if (n == max) {
			*end = CUHOOK_STACK_END_DEPTH;
			return n;
		}
		uintptr_t code = py_read_ptr(f + L->fr_code);
		uintptr_t instr = py_read_ptr(f + L->fr_instr);
		/* an instruction pointer into the code's instructions (3.11/3.12 may point one
		 * unit before the first, a frame not started: lasti -1) */
		intptr_t lasti = ((intptr_t)instr - (intptr_t)(code + L->co_code)) / 2;
		if (lasti < -1 || lasti > (1 << 30))
			break;
		int64_t id = py_frames_intern(code, (int)lasti);
		if (id < 0)
			break;
		ids[n++] = (uint32_t)id;
		if (L->fr_is_entry && *(const uint8_t *)(f + L->fr_is_entry))
			ids[n - 1] |= CUHOOK_PYFRAME_ENTRY;
	}
	if (f) {
		*end = CUHOOK_STACK_END_BAD;
		return n;
	}
	if (n && L->owner_cstack >= 0)
		ids[n - 1] |= CUHOOK_PYFRAME_ENTRY;
	*end = CUHOOK_STACK_END_DONE;
	return n;
}

unsigned py_stack_capture(uint32_t *ids, unsigned max, uint8_t *end)
{
	uint32_t state = __atomic_load_n(&py_rt.state, __ATOMIC_ACQUIRE);
	if (state != PY_READY) {
		*end = state == PY_UNSUPPORTED ? CUHOOK_STACK_END_UNSUPPORTED : CUHOOK_STACK_END_NONE;
		return 0;
	}
	const struct py_layout *L = py_rt.L;
	uintptr_t ts = thread_state(end);
	if (!ts)
		return 0;
	uintptr_t f = py_read_ptr(ts + L->ts_frame);
	if (L->ts_via_cframe) {
		if (!f) {
			*end = CUHOOK_STACK_END_NONE;
			return 0;
		}
		if (!py_ptr_ok(f, L->cframe_current + 8u, 8)) {
			*end = CUHOOK_STACK_END_BAD;
			return 0;
		}
		f = py_read_ptr(f + L->cframe_current);
	}
	if (!f) {
		*end = CUHOOK_STACK_END_NONE;
		return 0;
	}
	if (L->walk == PY_WALK_FRAME_OBJECTS)
		return walk_frame_objects(f, ids, max, end);
	return walk_interp_frames(f, ids, max, end);
}
