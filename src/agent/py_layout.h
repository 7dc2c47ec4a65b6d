/* Where CPython keeps what the Python frame walk reads, per minor version (3.10 to 3.13, x86-64
 * builds without Py_DEBUG, not free-threaded). The numbers come from each version's own headers
 * (Include/internal/pycore_runtime.h, pycore_frame.h, cpython/pystate.h, cpython/code.h,
 * cpython/unicodeobject.h); tests/unit/test_py_layout.c checks the 3.11 row against Debian's
 * python3.11-dev with offsetof, tests/gpu/py_layout_check.c checks a machine's 3.12. */
#ifndef CUHOOK_PY_LAYOUT_H
#define CUHOOK_PY_LAYOUT_H

#include <stdint.h>

enum py_walk_kind {
	PY_WALK_FRAME_OBJECTS, /* 3.10: tstate->frame, PyFrameObject chained by f_back */
	PY_WALK_INTERP_FRAMES, /* 3.11+: _PyInterpreterFrame chained by previous */
};

struct py_layout {
	unsigned minor;               /* 3.minor */
	enum py_walk_kind walk;
	/* _PyRuntimeState */
	uint16_t rt_tss_key;          /* Py_tss_t of the gilstate: the thread's own PyThreadState */
	uint16_t rt_main_interp;      /* interpreters.main */
	uint16_t rt_finalizing;       /* _finalizing: non-NULL once Py_Finalize has begun */
	/* PyInterpreterState */
	uint16_t interp_runtime;      /* runtime: points back at _PyRuntime (a check at setup) */
	/* PyThreadState */
	uint16_t ts_interp;
	uint16_t ts_frame;            /* 3.10 frame; 3.11/3.12 cframe; 3.13 current_frame */
	uint16_t cframe_current;      /* 3.11/3.12: _PyCFrame.current_frame; else unused */
	uint8_t ts_via_cframe;        /* ts_frame is a _PyCFrame * (3.11/3.12) */
	uint16_t ts_thread_id;        /* pthread_self() of the thread the state belongs to */
	/* PyFrameObject (3.10) or _PyInterpreterFrame (3.11+) */
	uint16_t fr_previous;         /* f_back / previous */
	uint16_t fr_code;             /* f_code / f_executable */
	uint16_t fr_instr;            /* 3.10 f_lasti (int, in code units); else prev_instr
	                                 (3.11/3.12) or instr_ptr (3.13): a pointer into the code */
	uint16_t fr_is_entry;         /* 3.11: is_entry (bool); 0 where the version has none */
	uint16_t fr_owner;            /* 3.11+: owner (char) */
	int8_t owner_cstack;          /* FRAME_OWNED_BY_CSTACK (3.12+), -1 where there is none */
	/* PyCodeObject */
	uint16_t co_filename;
	uint16_t co_name;             /* co_qualname from 3.11, co_name in 3.10 */
	uint16_t co_linetable;        /* bytes: 3.10 address/line pairs; 3.11+ location table */
	uint16_t co_firstlineno;      /* int */
	uint16_t co_code;             /* 3.11+: co_code_adaptive, where the instructions start */
	/* str (compact objects) and bytes */
	uint16_t str_ascii_size;      /* sizeof(PyASCIIObject): compact ASCII data follows */
	uint16_t str_compact_size;    /* sizeof(PyCompactUnicodeObject): other compact data */
	uint16_t bytes_data;          /* PyBytesObject.ob_sval */
};

/* 3.13's _PyRuntime starts with _Py_DebugOffsets, CPython's own table of offsets for
 * debuggers: where in it (3.13.x) the offsets the walk uses are, to compare with the row. */
#define PY_DBG_COOKIE "xdebugpy"
struct py_debug_offsets_313 {
	uint16_t ts_interp, ts_current_frame, ts_thread_id;
	uint16_t fr_previous, fr_executable, fr_instr_ptr, fr_owner;
	uint16_t co_filename, co_qualname, co_linetable, co_firstlineno, co_code_adaptive;
};
extern const struct py_debug_offsets_313 py_debug_offsets_313;

/* The layout of CPython 3.minor, or NULL where cuhook does not know it. */
const struct py_layout *py_layout_for(unsigned minor);

/* Common to every version: PyObject, PyVarObject, PyASCIIObject's length and state. */
#define PY_OB_TYPE 8
#define PY_OB_SIZE 16     /* PyVarObject.ob_size (bytes: the length) */
#define PY_STR_LENGTH 16  /* code points */
#define PY_STR_STATE 32   /* interned:2 kind:3 compact:1 ascii:1 ... from bit 0 */
#define PY_STR_KIND(state) (((state) >> 2) & 7u)
#define PY_STR_COMPACT(state) (((state) >> 5) & 1u)
#define PY_STR_ASCII(state) (((state) >> 6) & 1u)

#endif
