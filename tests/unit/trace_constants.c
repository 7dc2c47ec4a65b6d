/* Prints what the C compiler makes of src/format/trace_format.h, one item a line, for
 * test_trace_constants.py to compare with the tests' Python reader (tests/lib/cuhooktest/
 * traceformat.py):
 *   const NAME VALUE              a #define or enum value (NAME without CUHOOK_)
 *   magic STRING                  the file magic
 *   size STRUCT BYTES             sizeof(struct STRUCT)
 *   field STRUCT NAME OFFSET BYTES  a member's offsetof and sizeof (a record's header fields
 *                                 by their own names: type, not h.type) */
#include <stddef.h>
#include <stdio.h>

#include "trace_format.h"

#define C(name) printf("const %s %llu\n", #name, (unsigned long long)(CUHOOK_##name))
#define S(s) printf("size %s %zu\n", #s, sizeof(struct s))
#define FIELD(s, name, member) \
	printf("field %s %s %zu %zu\n", #s, #name, offsetof(struct s, member), sizeof(((struct s *)0)->member))
#define F(s, m) FIELD(s, m, m)
#define H(s, m) FIELD(s, m, h.m) /* a field of the record header the struct starts with */

int main(void)
{
	printf("magic %s\n", CUHOOK_TRACE_MAGIC);
	C(TRACE_VERSION); C(TRACE_VERSION_REC5); C(TRACE_VERSION_MIN);
	C(CLOCK_TSC); C(CLOCK_MONOTONIC); C(FILE_LOSSY);
	C(BLOCK_MAGIC); C(BLOCK_MAX_PAYLOAD);
	C(BLOCK_CLOCK); C(BLOCK_LIB); C(BLOCK_FUNCS); C(BLOCK_THREAD); C(BLOCK_EVENTS); C(BLOCK_NOTE);
	C(BLOCK_END); C(BLOCK_COUNTS); C(BLOCK_GPU_SESSION); C(BLOCK_GPU); C(BLOCK_STACKS);
	C(BLOCK_PYFRAMES); C(BLOCK_MAPS); C(BLOCK_KNAMES); C(BLOCK_GRAPHS);
	C(PATCHED);
	C(REC_PAD); C(REC_ENTRY); C(REC_EXIT); C(REC_DATA); C(REC_DROP); C(REC_STACK);
	C(RF_NO_EXIT); C(RF_VALUE); C(MAX_STACK_ARGS);
	C(REC5_ENTRY); C(REC5_EXIT); C(REC5_ENTRY_X); C(REC5_EXIT_VALUE); C(REC5_TIME);
	C(REC5_EXIT_ZERO); C(REC5_EXIT_ZERO_VALUE); C(REC5_TSC_BITS); C(REC5_FUNC_MAX);
	C(STACK_NONE); C(STACK_END_DONE); C(STACK_END_DEPTH); C(STACK_END_NO_INFO); C(STACK_END_BAD);
	C(STACK_END_NONE); C(STACK_END_UNSUPPORTED);
	C(PYFRAME_ENTRY); C(PYFRAME_ID_MASK); C(MAP_BUILD_ID_MAX);
	C(GPU_STARTED); C(GPU_STOPPED); C(GPU_NO_CUPTI); C(GPU_OTHER_USER); C(GPU_FAILED);
	C(GPU_REC_API); C(GPU_REC_KERNEL); C(GPU_REC_MEMCPY); C(GPU_REC_MEMSET); C(GPU_REC_NAME);
	C(GPU_API_RUNTIME);

	S(cuhook_file_header);
	F(cuhook_file_header, magic); F(cuhook_file_header, version); F(cuhook_file_header, header_size);
	F(cuhook_file_header, pid); F(cuhook_file_header, ppid); F(cuhook_file_header, clock_source);
	F(cuhook_file_header, cmdline_len); F(cuhook_file_header, exe_len); F(cuhook_file_header, flags);
	F(cuhook_file_header, start_realtime_ns); F(cuhook_file_header, start_monotonic_ns);
	F(cuhook_file_header, start_tsc); F(cuhook_file_header, buffer_bytes); F(cuhook_file_header, reserved);
	S(cuhook_block);
	F(cuhook_block, magic); F(cuhook_block, type); F(cuhook_block, flags); F(cuhook_block, size);
	F(cuhook_block, seq);
	S(cuhook_clock_block);
	F(cuhook_clock_block, tsc); F(cuhook_clock_block, monotonic_ns); F(cuhook_clock_block, realtime_ns);
	S(cuhook_lib_block);
	F(cuhook_lib_block, lib_id); F(cuhook_lib_block, flags); F(cuhook_lib_block, base);
	F(cuhook_lib_block, path_len); F(cuhook_lib_block, version_len);
	S(cuhook_funcs_block);
	F(cuhook_funcs_block, lib_id); F(cuhook_funcs_block, first_id); F(cuhook_funcs_block, count);
	F(cuhook_funcs_block, reserved);
	S(cuhook_func_entry);
	F(cuhook_func_entry, offset); F(cuhook_func_entry, size); F(cuhook_func_entry, status);
	F(cuhook_func_entry, name_len); F(cuhook_func_entry, patch_len); F(cuhook_func_entry, decoder);
	F(cuhook_func_entry, nregs); F(cuhook_func_entry, nstack); F(cuhook_func_entry, reserved);
	S(cuhook_thread_block);
	F(cuhook_thread_block, tid); F(cuhook_thread_block, reserved); F(cuhook_thread_block, name);
	S(cuhook_events_block);
	F(cuhook_events_block, tid); F(cuhook_events_block, nrecords);
	S(cuhook_counts_block);
	F(cuhook_counts_block, tid); F(cuhook_counts_block, count); F(cuhook_counts_block, tsc);
	S(cuhook_count_entry);
	F(cuhook_count_entry, func); F(cuhook_count_entry, reserved); F(cuhook_count_entry, calls);
	S(cuhook_note_block);
	F(cuhook_note_block, level); F(cuhook_note_block, len);
	S(cuhook_end_block);
	F(cuhook_end_block, events); F(cuhook_end_block, dropped); F(cuhook_end_block, threads);
	F(cuhook_end_block, reserved);
	S(cuhook_gpu_session_block);
	F(cuhook_gpu_session_block, status); F(cuhook_gpu_session_block, cupti_version);
	F(cuhook_gpu_session_block, result); F(cuhook_gpu_session_block, path_len);
	F(cuhook_gpu_session_block, tsc); F(cuhook_gpu_session_block, records); F(cuhook_gpu_session_block, dropped);
	S(cuhook_gpu_block);
	F(cuhook_gpu_block, nrecords); F(cuhook_gpu_block, reserved);
	S(cuhook_gpu_rec);
	F(cuhook_gpu_rec, type); F(cuhook_gpu_rec, flags); F(cuhook_gpu_rec, size); F(cuhook_gpu_rec, correlation);
	S(cuhook_stacks_block);
	F(cuhook_stacks_block, count); F(cuhook_stacks_block, reserved);
	S(cuhook_stack_entry);
	F(cuhook_stack_entry, id); F(cuhook_stack_entry, size); F(cuhook_stack_entry, nnative);
	F(cuhook_stack_entry, npython); F(cuhook_stack_entry, native_end); F(cuhook_stack_entry, python_end);
	F(cuhook_stack_entry, reserved);
	S(cuhook_pyframes_block);
	F(cuhook_pyframes_block, count); F(cuhook_pyframes_block, reserved);
	S(cuhook_pyframe_entry);
	F(cuhook_pyframe_entry, id); F(cuhook_pyframe_entry, size); F(cuhook_pyframe_entry, line);
	F(cuhook_pyframe_entry, first_line); F(cuhook_pyframe_entry, file_len); F(cuhook_pyframe_entry, func_len);
	F(cuhook_pyframe_entry, reserved);
	S(cuhook_maps_block);
	F(cuhook_maps_block, count); F(cuhook_maps_block, reserved);
	S(cuhook_map_entry);
	F(cuhook_map_entry, start); F(cuhook_map_entry, end); F(cuhook_map_entry, offset); F(cuhook_map_entry, inode);
	F(cuhook_map_entry, size); F(cuhook_map_entry, path_len); F(cuhook_map_entry, build_id_len);
	F(cuhook_map_entry, reserved); F(cuhook_map_entry, build_id); F(cuhook_map_entry, reserved2);
	S(cuhook_rec);
	F(cuhook_rec, type); F(cuhook_rec, flags); F(cuhook_rec, size); F(cuhook_rec, func);
	S(cuhook_rec_entry);
	H(cuhook_rec_entry, type); H(cuhook_rec_entry, flags); H(cuhook_rec_entry, size); H(cuhook_rec_entry, func);
	F(cuhook_rec_entry, tsc); F(cuhook_rec_entry, depth); F(cuhook_rec_entry, nstack);
	F(cuhook_rec_entry, regs_omitted); F(cuhook_rec_entry, reserved);
	S(cuhook_rec_exit);
	H(cuhook_rec_exit, type); H(cuhook_rec_exit, flags); H(cuhook_rec_exit, size); H(cuhook_rec_exit, func);
	F(cuhook_rec_exit, tsc); F(cuhook_rec_exit, depth); F(cuhook_rec_exit, reserved); F(cuhook_rec_exit, ret);
	S(cuhook_rec_data);
	H(cuhook_rec_data, type); H(cuhook_rec_data, flags); H(cuhook_rec_data, size); H(cuhook_rec_data, func);
	F(cuhook_rec_data, decoder); F(cuhook_rec_data, nvalues); F(cuhook_rec_data, at_exit);
	F(cuhook_rec_data, str_len); F(cuhook_rec_data, reserved);
	S(cuhook_rec_drop);
	H(cuhook_rec_drop, type); H(cuhook_rec_drop, flags); H(cuhook_rec_drop, size); H(cuhook_rec_drop, func);
	F(cuhook_rec_drop, tsc); F(cuhook_rec_drop, count);
	S(cuhook_rec_stack);
	H(cuhook_rec_stack, type); H(cuhook_rec_stack, flags); H(cuhook_rec_stack, size); H(cuhook_rec_stack, func);
	F(cuhook_rec_stack, stack); F(cuhook_rec_stack, reserved);
	S(cuhook_rec5_entry_info);
	F(cuhook_rec5_entry_info, flags); F(cuhook_rec5_entry_info, nregs); F(cuhook_rec5_entry_info, nstack);
	F(cuhook_rec5_entry_info, reserved);
	return 0;
}
