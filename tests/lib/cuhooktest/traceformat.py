"""The numbers of trace.bin that the tests' reader (tracefile.py) and writer (tracewriter.py)
use, in one place. src/format/trace_format.h is the authority: the unit test unit-trace-constants
(tests/unit/test_trace_constants.py) compares every constant and every layout below with what
the C compiler makes of that header, so a change there that is not made here fails the suite.

Constants keep the header's names without the CUHOOK_ prefix. A layout is a struct's fields in
order as (name, struct module code); the structs have no implicit padding, so "<" + the codes
is the struct's exact byte layout: fmt(), offset() and size() derive from it."""

import struct

TRACE_MAGIC = b"CUHOOKTR"
TRACE_VERSION = 5
TRACE_VERSION_REC5 = 5   # the first version with compact records
TRACE_VERSION_MIN = 1

CLOCK_TSC, CLOCK_MONOTONIC = 0, 1
FILE_LOSSY = 0x1

BLOCK_MAGIC = 0x4B424843  # "CHBK"
BLOCK_MAX_PAYLOAD = 64 << 20
BLOCK_CLOCK, BLOCK_LIB, BLOCK_FUNCS, BLOCK_THREAD, BLOCK_EVENTS, BLOCK_NOTE, BLOCK_END = 1, 2, 3, 4, 5, 6, 7
BLOCK_COUNTS, BLOCK_GPU_SESSION, BLOCK_GPU = 8, 9, 10
BLOCK_STACKS, BLOCK_PYFRAMES, BLOCK_MAPS, BLOCK_KNAMES, BLOCK_GRAPHS = 11, 12, 13, 14, 15

PATCHED = 0

REC_PAD, REC_ENTRY, REC_EXIT, REC_DATA, REC_DROP, REC_STACK = 0, 1, 2, 3, 4, 5
RF_NO_EXIT, RF_VALUE = 0x1, 0x2
MAX_STACK_ARGS = 6
REC5_ENTRY, REC5_EXIT = 1, 2
REC5_ENTRY_X, REC5_EXIT_VALUE, REC5_TIME, REC5_EXIT_ZERO, REC5_EXIT_ZERO_VALUE = 6, 7, 8, 9, 10
REC5_TSC_BITS = 38
REC5_FUNC_MAX = 0x3FFF

STACK_NONE = 0xFFFFFFFF
STACK_END_DONE, STACK_END_DEPTH, STACK_END_NO_INFO, STACK_END_BAD, STACK_END_NONE, STACK_END_UNSUPPORTED = range(6)
PYFRAME_ENTRY, PYFRAME_ID_MASK = 0x80000000, 0x7FFFFFFF
MAP_BUILD_ID_MAX = 20

GPU_STARTED, GPU_STOPPED, GPU_NO_CUPTI, GPU_OTHER_USER, GPU_FAILED = range(5)
GPU_REC_API, GPU_REC_KERNEL, GPU_REC_MEMCPY, GPU_REC_MEMSET, GPU_REC_NAME = 1, 2, 3, 4, 5
GPU_API_RUNTIME = 0x01  # an API record's flag: CUPTI's record of a CUDA runtime call

# Names the readers print for enum values.
STACK_END_NAMES = {STACK_END_DONE: "DONE", STACK_END_DEPTH: "DEPTH", STACK_END_NO_INFO: "NO_INFO",
                   STACK_END_BAD: "BAD", STACK_END_NONE: "NONE", STACK_END_UNSUPPORTED: "UNSUPPORTED"}
GPU_STATUS_NAMES = {GPU_STARTED: "STARTED", GPU_STOPPED: "STOPPED", GPU_NO_CUPTI: "NO_CUPTI",
                    GPU_OTHER_USER: "OTHER_USER", GPU_FAILED: "FAILED"}

# The header's constants by their C names (without CUHOOK_), for the check against it.
CONSTANTS = {name: value for name, value in globals().items()
             if name.isupper() and isinstance(value, int) and not name.endswith("_NAMES")}

LAYOUTS = {
    "cuhook_file_header": [
        ("magic", "8s"), ("version", "I"), ("header_size", "I"), ("pid", "I"), ("ppid", "I"),
        ("clock_source", "I"), ("cmdline_len", "I"), ("exe_len", "I"), ("flags", "I"),
        ("start_realtime_ns", "Q"), ("start_monotonic_ns", "Q"), ("start_tsc", "Q"),
        ("buffer_bytes", "I"), ("reserved", "I")],
    "cuhook_block": [("magic", "I"), ("type", "H"), ("flags", "H"), ("size", "I"), ("seq", "I")],
    "cuhook_clock_block": [("tsc", "Q"), ("monotonic_ns", "Q"), ("realtime_ns", "Q")],
    "cuhook_lib_block": [("lib_id", "I"), ("flags", "I"), ("base", "Q"), ("path_len", "I"),
                         ("version_len", "I")],
    "cuhook_funcs_block": [("lib_id", "I"), ("first_id", "I"), ("count", "I"), ("reserved", "I")],
    "cuhook_func_entry": [("offset", "Q"), ("size", "I"), ("status", "H"), ("name_len", "H"),
                          ("patch_len", "H"), ("decoder", "H"), ("nregs", "B"), ("nstack", "B"),
                          ("reserved", "H")],
    "cuhook_thread_block": [("tid", "I"), ("reserved", "I"), ("name", "16s")],
    "cuhook_events_block": [("tid", "I"), ("nrecords", "I")],
    "cuhook_counts_block": [("tid", "I"), ("count", "I"), ("tsc", "Q")],
    "cuhook_count_entry": [("func", "I"), ("reserved", "I"), ("calls", "Q")],
    "cuhook_note_block": [("level", "I"), ("len", "I")],
    "cuhook_end_block": [("events", "Q"), ("dropped", "Q"), ("threads", "I"), ("reserved", "I")],
    "cuhook_gpu_session_block": [("status", "I"), ("cupti_version", "I"), ("result", "I"), ("path_len", "I"),
                                 ("tsc", "Q"), ("records", "Q"), ("dropped", "Q")],
    "cuhook_gpu_block": [("nrecords", "I"), ("reserved", "I")],
    "cuhook_gpu_rec": [("type", "B"), ("flags", "B"), ("size", "H"), ("correlation", "I")],
    "cuhook_stacks_block": [("count", "I"), ("reserved", "I")],
    "cuhook_stack_entry": [("id", "I"), ("size", "I"), ("nnative", "H"), ("npython", "H"),
                           ("native_end", "B"), ("python_end", "B"), ("reserved", "H")],
    "cuhook_pyframes_block": [("count", "I"), ("reserved", "I")],
    "cuhook_pyframe_entry": [("id", "I"), ("size", "I"), ("line", "i"), ("first_line", "i"),
                             ("file_len", "H"), ("func_len", "H"), ("reserved", "I")],
    "cuhook_maps_block": [("count", "I"), ("reserved", "I")],
    "cuhook_map_entry": [("start", "Q"), ("end", "Q"), ("offset", "Q"), ("inode", "Q"), ("size", "I"),
                         ("path_len", "H"), ("build_id_len", "B"), ("reserved", "B"),
                         ("build_id", f"{MAP_BUILD_ID_MAX}s"), ("reserved2", "I")],
    "cuhook_rec": [("type", "B"), ("flags", "B"), ("size", "H"), ("func", "I")],
    "cuhook_rec_entry": [("type", "B"), ("flags", "B"), ("size", "H"), ("func", "I"), ("tsc", "Q"),
                         ("depth", "H"), ("nstack", "B"), ("regs_omitted", "B"), ("reserved", "4s")],
    "cuhook_rec_exit": [("type", "B"), ("flags", "B"), ("size", "H"), ("func", "I"), ("tsc", "Q"),
                        ("depth", "H"), ("reserved", "6s"), ("ret", "Q")],
    "cuhook_rec_data": [("type", "B"), ("flags", "B"), ("size", "H"), ("func", "I"), ("decoder", "H"),
                        ("nvalues", "B"), ("at_exit", "B"), ("str_len", "H"), ("reserved", "H")],
    "cuhook_rec_drop": [("type", "B"), ("flags", "B"), ("size", "H"), ("func", "I"), ("tsc", "Q"),
                        ("count", "Q")],
    "cuhook_rec_stack": [("type", "B"), ("flags", "B"), ("size", "H"), ("func", "I"), ("stack", "I"),
                         ("reserved", "I")],
    "cuhook_rec5_entry_info": [("flags", "B"), ("nregs", "B"), ("nstack", "B"), ("reserved", "5s")],
}


def fmt(struct_name, first=None, last=None):
    """The struct module format ("<...") of a layout's fields from first to last (names,
    inclusive; default: all of them)."""
    names = [n for n, _ in LAYOUTS[struct_name]]
    lo = names.index(first) if first else 0
    hi = names.index(last) + 1 if last else len(names)
    return "<" + "".join(code for _, code in LAYOUTS[struct_name][lo:hi])


def offset(struct_name, field):
    """A field's byte offset in its struct."""
    names = [n for n, _ in LAYOUTS[struct_name]]
    return struct.calcsize(fmt(struct_name, last=names[names.index(field) - 1])) if names.index(field) else 0


def size(struct_name):
    return struct.calcsize(fmt(struct_name))


def unpack(struct_name, data, at=0):
    """A struct's fields read from data at byte at, as a dict by name."""
    return dict(zip((n for n, _ in LAYOUTS[struct_name]), struct.unpack_from(fmt(struct_name), data, at)))


FILE_HEADER_SIZE = size("cuhook_file_header")
BLOCK_HEADER_SIZE = size("cuhook_block")
