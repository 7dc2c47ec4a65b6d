/* The layout table: one row per CPython minor version cuhook reads frames of. Offsets on
 * x86-64, from CPython's headers of that version (see py_layout.h for how they are checked). */
#include "py_layout.h"

#include <stddef.h>

static const struct py_layout layouts[] = {
	{
		.minor = 10, .walk = PY_WALK_FRAME_OBJECTS,
		.rt_tss_key = 584, .rt_main_interp = 40, .rt_finalizing = 16, .interp_runtime = 16,
		.ts_interp = 16, .ts_frame = 24, .ts_thread_id = 176,
		.fr_previous = 24, .fr_code = 32, .fr_instr = 96,
		.owner_cstack = -1,
		.co_filename = 104, .co_name = 112, .co_linetable = 120, .co_firstlineno = 40,
		.str_ascii_size = 48, .str_compact_size = 72, .bytes_data = 32,
	},
	{
		.minor = 11, .walk = PY_WALK_INTERP_FRAMES,
		.rt_tss_key = 592, .rt_main_interp = 48, .rt_finalizing = 24, .interp_runtime = 40,
		.ts_interp = 16, .ts_frame = 56, .cframe_current = 8, .ts_via_cframe = 1,
		.ts_thread_id = 152,
		.fr_previous = 48, .fr_code = 32, .fr_instr = 56, .fr_is_entry = 68, .fr_owner = 69,
		.owner_cstack = -1,
		.co_filename = 112, .co_name = 128, .co_linetable = 136, .co_firstlineno = 72,
		.co_code = 184,
		.str_ascii_size = 48, .str_compact_size = 72, .bytes_data = 32,
	},
	{
		.minor = 12, .walk = PY_WALK_INTERP_FRAMES,
		.rt_tss_key = 1544, .rt_main_interp = 48, .rt_finalizing = 24, .interp_runtime = 96,
		.ts_interp = 16, .ts_frame = 56, .cframe_current = 0, .ts_via_cframe = 1,
		.ts_thread_id = 136,
		.fr_previous = 8, .fr_code = 0, .fr_instr = 56, .fr_owner = 70,
		.owner_cstack = 3,
		.co_filename = 112, .co_name = 128, .co_linetable = 136, .co_firstlineno = 68,
		.co_code = 192,
		.str_ascii_size = 40, .str_compact_size = 56, .bytes_data = 32,
	},
	{
		.minor = 13, .walk = PY_WALK_INTERP_FRAMES,
		.rt_tss_key = 2160, .rt_main_interp = 640, .rt_finalizing = 608, .interp_runtime = 7376,
		.ts_interp = 16, .ts_frame = 72, .ts_thread_id = 152,
		.fr_previous = 8, .fr_code = 0, .fr_instr = 56, .fr_owner = 70,
		.owner_cstack = 3,
		.co_filename = 112, .co_name = 128, .co_linetable = 136, .co_firstlineno = 68,
		.co_code = 200,
		.str_ascii_size = 40, .str_compact_size = 56, .bytes_data = 32,
	},
};

/* Where 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h) keeps them: each a uint64_t
 * offset into the thread state, interpreter frame or code object. */
const struct py_debug_offsets_313 py_debug_offsets_313 = {
	.ts_interp = 176, .ts_current_frame = 184, .ts_thread_id = 192,
	.fr_previous = 232, .fr_executable = 240, .fr_instr_ptr = 248, .fr_owner = 264,
	.co_filename = 280, .co_qualname = 296, .co_linetable = 304, .co_firstlineno = 312,
	.co_code_adaptive = 344,
};

const struct py_layout *py_layout_for(unsigned minor)
{
	for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
		if (layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}
