/* The layout table's row for the CPython whose headers this is compiled against
 * (src/agent/py_layout.c), field by field with offsetof: the 3.11 row in every build
 * (Debian's python3.11-dev), other versions by hand where their headers are installed
 * (tests/gpu/py_layout_check.sh). Compiled with Py_BUILD_CORE: the internal headers declare
 * the runtime, the interpreter and the interpreter frame. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "py_layout.h"

static int failed, checked;

static void eq(const char *what, size_t table, size_t headers)
{
	checked++;
	if (table != headers) {
		printf("FAIL 3.%d %s: table %zu, headers %zu\n", PY_MINOR_VERSION, what, table, headers);
		failed++;
	}
}

#define EQ(field, value) eq(#field, (size_t)L->field, (size_t)(value))

int main(void)
{
	const struct py_layout *L = py_layout_for(PY_MINOR_VERSION);
	if (!L) {
		printf("FAIL: no layout for 3.%d\n", PY_MINOR_VERSION);
		return 1;
	}
	EQ(rt_main_interp, offsetof(_PyRuntimeState, interpreters.main));
	EQ(rt_finalizing, offsetof(_PyRuntimeState, _finalizing));
	EQ(interp_runtime, offsetof(PyInterpreterState, runtime));
	EQ(ts_interp, offsetof(PyThreadState, interp));
	EQ(ts_thread_id, offsetof(PyThreadState, thread_id));
	EQ(co_filename, offsetof(PyCodeObject, co_filename));
	EQ(co_linetable, offsetof(PyCodeObject, co_linetable));
	EQ(co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
	EQ(str_ascii_size, sizeof(PyASCIIObject));
	EQ(str_compact_size, sizeof(PyCompactUnicodeObject));
	EQ(bytes_data, offsetof(PyBytesObject, ob_sval));
	eq("PY_OB_TYPE", PY_OB_TYPE, offsetof(PyObject, ob_type));
	eq("PY_OB_SIZE", PY_OB_SIZE, offsetof(PyVarObject, ob_size));
	eq("PY_STR_LENGTH", PY_STR_LENGTH, offsetof(PyASCIIObject, length));
	eq("PY_STR_STATE", PY_STR_STATE, offsetof(PyASCIIObject, state));
	/* the state's bit-fields where py_layout.h reads them */
	PyASCIIObject s;
	memset(&s, 0, sizeof s);
	s.state.kind = 4;
	s.state.compact = 1;
	s.state.ascii = 1;
	uint32_t bits;
	memcpy(&bits, (const char *)&s + PY_STR_STATE, sizeof bits);
	eq("PY_STR_KIND", PY_STR_KIND(bits), 4);
	eq("PY_STR_COMPACT", PY_STR_COMPACT(bits), 1);
	eq("PY_STR_ASCII", PY_STR_ASCII(bits), 1);
#if PY_MINOR_VERSION < 12
	EQ(rt_tss_key, offsetof(_PyRuntimeState, gilstate.autoTSSkey));
#else
	EQ(rt_tss_key, offsetof(_PyRuntimeState, autoTSSkey));
#endif
#if PY_MINOR_VERSION == 10
	eq("walk", L->walk, PY_WALK_FRAME_OBJECTS);
	EQ(ts_frame, offsetof(PyThreadState, frame));
	EQ(fr_previous, offsetof(PyFrameObject, f_back));
	EQ(fr_code, offsetof(PyFrameObject, f_code));
	EQ(fr_instr, offsetof(PyFrameObject, f_lasti));
	EQ(co_name, offsetof(PyCodeObject, co_name));
#else
	eq("walk", L->walk, PY_WALK_INTERP_FRAMES);
	EQ(fr_previous, offsetof(_PyInterpreterFrame, previous));
	EQ(fr_owner, offsetof(_PyInterpreterFrame, owner));
	EQ(co_name, offsetof(PyCodeObject, co_qualname));
	EQ(co_code, offsetof(PyCodeObject, co_code_adaptive));
#endif
#if PY_MINOR_VERSION == 11 || PY_MINOR_VERSION == 12
	EQ(ts_via_cframe, 1);
	EQ(ts_frame, offsetof(PyThreadState, cframe));
	EQ(cframe_current, offsetof(_PyCFrame, current_frame));
	EQ(fr_code, offsetof(_PyInterpreterFrame, f_code));
	EQ(fr_instr, offsetof(_PyInterpreterFrame, prev_instr));
#endif
#if PY_MINOR_VERSION == 11
	EQ(fr_is_entry, offsetof(_PyInterpreterFrame, is_entry));
	EQ(owner_cstack, -1);
#endif
#if PY_MINOR_VERSION >= 12
	EQ(fr_is_entry, 0);
	EQ(owner_cstack, FRAME_OWNED_BY_CSTACK);
#endif
#if PY_MINOR_VERSION >= 13
	EQ(ts_via_cframe, 0);
	EQ(ts_frame, offsetof(PyThreadState, current_frame));
	EQ(fr_code, offsetof(_PyInterpreterFrame, f_executable));
	EQ(fr_instr, offsetof(_PyInterpreterFrame, instr_ptr));
#endif
#if PY_MINOR_VERSION == 13
	const struct py_debug_offsets_313 *d = &py_debug_offsets_313;
#define DBG(field, member) eq("debug offsets " #member, d->field, offsetof(_Py_DebugOffsets, member))
	DBG(ts_interp, thread_state.interp);
	DBG(ts_current_frame, thread_state.current_frame);
	DBG(ts_thread_id, thread_state.thread_id);
	DBG(fr_previous, interpreter_frame.previous);
	DBG(fr_executable, interpreter_frame.executable);
	DBG(fr_instr_ptr, interpreter_frame.instr_ptr);
	DBG(fr_owner, interpreter_frame.owner);
	DBG(co_filename, code_object.filename);
	DBG(co_qualname, code_object.qualname);
	DBG(co_linetable, code_object.linetable);
	DBG(co_firstlineno, code_object.firstlineno);
	DBG(co_code_adaptive, code_object.co_code_adaptive);
#endif
	printf("3.%d layout: %d of %d fields as the headers say\n", PY_MINOR_VERSION, checked - failed,
	       checked);
	return failed ? 1 : 0;
}
