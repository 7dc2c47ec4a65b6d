"""A second, independent reader of trace.bin for the tests (the authority is
src/format/trace_format.h; the numbers are traceformat.py's, checked against it): just enough to
count what the agent wrote, so that a test of the agent does not trust `cuhook report` for the
numbers it checks.

read_trace(path) -> Trace with
  header:  the file header (read_header: struct cuhook_file_header's fields by name)
  funcs:   {id: name}
  patched: names of the functions patched (status 0)
  entries: {name: ENTRY records}
  counted: {name: sum of the COUNTS blocks' calls}
  counted_by_tid: {(tid, name): calls}
  counts_blocks: number of COUNTS blocks
  counts_times: the COUNTS blocks' timestamps; event_times: (first, last) ENTRY/EXIT timestamp
  clock_source: 0 TSC, 1 CLOCK_MONOTONIC (what the timestamps are)
  last_clock: the last CLOCK block's reading in the file's clock (tsc, or monotonic ns)
  clocks: every CLOCK block's (tsc, monotonic ns)
  has_end: an END block closed the file; end_events: its ENTRY + EXIT count (None without END)
  end_dropped: its dropped-record count (None without END)
  drop_records: DROP records in the EVENTS blocks; dropped_reported: the sum of their counts
  notes: [(level, text)] of the NOTE blocks
  calls:   [Call] every recorded call with its ENTRY and EXIT, in the order of their EXITs:
           tid, func id, name, entry and exit timestamps, depth, args (the argument values the
           ENTRY carried: nregs registers, then nstack stack slots), ret, value (the decoded
           value an EXIT carried, CUHOOK_RF_VALUE / EXIT5_VALUE, else None), data (the DATA
           records attached to it: [(at_exit, (values...), bytes)]), flags (CUHOOK_RF_*)
  entry_only: [Call] the calls recorded entry-only (CUHOOK_RF_NO_EXIT: exit and ret None)
  records: with read_trace(path, records=True), every EVENTS record as (file offset, tid, Rec)
Version 5 files (compact records, trace_format.h "version 5 records") give the same objects as
version 4 ones, checked as read: every EVENTS block starts with a TIME record, an ENTRY5's
function has a FUNCS entry (whose nregs/nstack say its length), no TIME record between an ENTRY
and its STACK record.

The GPU side (agent option gpu=1; trace_format.h, "the GPU side"):
  gpu_sessions: [GpuSession] the GPU_SESSION blocks in order (status, cupti_version, result,
                path, tsc, records, dropped)
  gpu_api, gpu_kernels, gpu_memcpys, gpu_memsets: [dict] the GPU records by type, each with
                "session" (index of the GPU_SESSION block before it) and "correlation"; kernels
                carry their "name" from the NAME records
  gpu_names:    {name_id: name}
  gpu_records:  GPU records of every type (NAME included) in the GPU blocks
  gpu_blocks:   GPU blocks read
Call stacks (agent option stacks=; trace_format.h, "call stacks"), checked as read: a STACK
record must follow an ENTRY of its function on its thread, and name a stack defined before its
EVENTS block; a STACKS entry's Python frames be defined before it:
  stacks:       {id: Stack} (native pcs innermost first, python ids, native_end, python_end,
                maps: the MAPS block in effect, an index into maps_blocks)
  pyframes:     {id: PyFrame} (file, func, line, first_line)
  maps_blocks:  [[MapEntry]] every MAPS block in order (start, end, offset, inode, path, build_id)
  entry_stacks: [(tid, name, stack id or None)] one per ENTRY record, in file order
  stack_records: STACK records read
and symbolize(trace, stack, pc) names the function an address lies in, from the ELF symbols of
the file the MAPS block says was mapped there (None where there is none: an anonymous mapping).

and gpu_link(trace) links every GPU work record to the call that submitted it, by the rule of
trace_format.h: its API record by correlation id within its session, then the one recorded call
of the same thread and function with entry <= start <= end <= exit."""

import bisect
import struct

from cuhooktest.traceformat import (  # the numbers, checked against trace_format.h
    BLOCK_CLOCK, BLOCK_COUNTS, BLOCK_END, BLOCK_EVENTS, BLOCK_FUNCS, BLOCK_GPU, BLOCK_GPU_SESSION,
    BLOCK_HEADER_SIZE, BLOCK_MAGIC, BLOCK_MAPS, BLOCK_NOTE, BLOCK_PYFRAMES, BLOCK_STACKS, CLOCK_MONOTONIC,
    FILE_HEADER_SIZE, GPU_API_RUNTIME, GPU_REC_API, GPU_REC_KERNEL, GPU_REC_MEMCPY, GPU_REC_MEMSET, GPU_REC_NAME,
    GPU_STATUS_NAMES, PATCHED, PYFRAME_ENTRY, PYFRAME_ID_MASK, REC5_ENTRY_X, REC5_EXIT_VALUE, REC5_EXIT_ZERO,
    REC5_EXIT_ZERO_VALUE, REC5_TIME, REC5_TSC_BITS, REC_DATA, REC_DROP, REC_ENTRY, REC_EXIT, REC_STACK,
    RF_NO_EXIT, RF_VALUE, STACK_END_NAMES, STACK_NONE, TRACE_MAGIC, TRACE_VERSION_REC5, fmt, size, unpack)

__all__ = ["PYFRAME_ENTRY", "PYFRAME_ID_MASK", "STACK_NONE", "REC_ENTRY", "REC_EXIT", "Header", "Trace",
           "TraceError", "read_header", "read_trace", "read_end", "gpu_link", "symbolize"]


class TraceError(Exception):
    pass


class Call:
    """One recorded call: its thread, function (id and name), ENTRY/EXIT timestamps, nesting
    depth, arguments, return value, decoded values."""
    __slots__ = ("tid", "func", "name", "entry", "exit", "depth", "args", "nregs", "nstack", "flags",
                 "ret", "value", "data")

    def __init__(self, tid, func, name, entry, exit_, depth=0, args=(), nregs=0, nstack=0, flags=0):
        self.tid, self.func, self.name, self.entry, self.exit = tid, func, name, entry, exit_
        self.depth, self.args, self.nregs, self.nstack, self.flags = depth, args, nregs, nstack, flags
        self.ret, self.value, self.data = None, None, []

    def __repr__(self):
        return f"Call({self.name} tid {self.tid} [{self.entry}, {self.exit}])"


class Stack:
    __slots__ = ("id", "native", "python", "native_end", "python_end", "maps")

    def __repr__(self):
        return (f"Stack({self.id} native {[hex(a) for a in self.native]} {self.native_end} "
                f"python {self.python} {self.python_end})")


class PyFrame:
    __slots__ = ("file", "func", "line", "first_line")

    def __init__(self, file, func, line, first_line):
        self.file, self.func, self.line, self.first_line = file, func, line, first_line


class MapEntry:
    __slots__ = ("start", "end", "offset", "inode", "path", "build_id")

    def __init__(self, start, end, offset, inode, path, build_id):
        self.start, self.end, self.offset, self.inode = start, end, offset, inode
        self.path, self.build_id = path, build_id

    def __repr__(self):
        return f"Map({self.start:#x}-{self.end:#x} +{self.offset:#x} {self.path!r})"


class GpuSession:
    __slots__ = ("status", "cupti_version", "result", "path", "tsc", "records", "dropped")

    def __init__(self, p):
        (status, self.cupti_version, self.result, path_len, self.tsc, self.records,
         self.dropped) = struct.unpack_from(fmt("cuhook_gpu_session_block"), p, 0)
        self.status = GPU_STATUS_NAMES.get(status, f"#{status}")
        start = size("cuhook_gpu_session_block")
        self.path = p[start:start + path_len].decode(errors="replace")

    def __repr__(self):
        return f"GpuSession({self.status} {self.path!r} records {self.records} dropped {self.dropped})"


class Trace:
    def __init__(self):
        self.header = None
        self.version = 0
        self.funcs = {}
        self.patched = set()
        self.entries = {}
        self.counted = {}
        self.counted_by_tid = {}
        self.counts_blocks = 0
        self.counts_times = []
        self.event_times = None
        self.clock_source = 0
        self.last_clock = None
        self.clocks = []      # every CLOCK block's (tsc, monotonic ns)
        self.has_end = False
        self.end_events = None
        self.end_dropped = None
        self.drop_records = 0
        self.dropped_reported = 0
        self.notes = []
        self.calls = []
        self.entry_only = []
        self.func_args = {}   # id: (nregs, nstack) from the FUNCS entries (version 5)
        self.open_calls = {}  # tid: [Call] while reading
        self.last_call = {}   # tid: (record type, Call) the last ENTRY or EXIT, for DATA
        self.epoch = {}       # tid: the epoch of its last TIME record (version 5)
        self.records = None   # read_trace(records=True): [(file offset, tid, Rec)]
        self.gpu_sessions = []
        self.gpu_api, self.gpu_kernels, self.gpu_memcpys, self.gpu_memsets = [], [], [], []
        self.gpu_names = {}
        self.gpu_records = 0
        self.gpu_blocks = 0
        self.stacks = {}
        self.pyframes = {}
        self.maps_blocks = []
        self.entry_stacks = []
        self.stack_records = 0


def _funcs(t, p):
    lib_id, first, count, _ = struct.unpack_from(fmt("cuhook_funcs_block"), p, 0)
    off = size("cuhook_funcs_block")
    entry = size("cuhook_func_entry")
    for i in range(count):
        e = unpack("cuhook_func_entry", p, off)
        name = p[off + entry:off + entry + e["name_len"]].decode()
        t.funcs[first + i] = name
        t.func_args[first + i] = (e["nregs"], e["nstack"])
        if e["status"] == PATCHED:
            t.patched.add(name)
        off += (entry + e["name_len"] + 7) & ~7


def _pair(t, tid, r):
    """ENTRY/EXIT pairs into t.calls: an EXIT closes the innermost open call of its function and
    depth on its thread (calls left by longjmp stay open and are dropped)."""
    stack = t.open_calls.setdefault(tid, [])
    if r.kind == REC_ENTRY:
        c = Call(tid, r.func, t.funcs.get(r.func, f"#{r.func}"), r.ts, None, r.depth, r.args, r.nregs, r.nstack,
                 r.flags)
        t.last_call[tid] = (REC_ENTRY, c)
        if r.flags & RF_NO_EXIT:
            t.entry_only.append(c)
        else:
            stack.append(c)
        return
    t.last_call.pop(tid, None)
    for i in range(len(stack) - 1, -1, -1):
        c = stack[i]
        if c.func == r.func and c.depth == r.depth:
            c.exit, c.ret, c.value = r.ts, r.ret, r.value
            c.flags |= r.flags
            t.calls.append(c)
            t.last_call[tid] = (REC_EXIT, c)
            del stack[i:]
            return


def _data(t, tid, func, off, p):
    """A DATA record: the values of the call whose ENTRY (at_exit 0) or EXIT (1) came last."""
    _dec, nvalues, at_exit, str_len = struct.unpack_from("<HBBH", p, off + 8)
    values = struct.unpack_from(f"<{nvalues}Q", p, off + 16)
    s = p[off + 16 + 8 * nvalues:off + 16 + 8 * nvalues + str_len]
    rtype, c = t.last_call.get(tid, (None, None))
    if c is not None and c.func == func and rtype == (REC_EXIT if at_exit else REC_ENTRY):
        c.data.append((at_exit, values, s))


def _stack_record(t, tid, func, off, p, prev):
    """A STACK record: right after an ENTRY of the same function, naming a defined stack."""
    if prev is None or prev[0] != REC_ENTRY or prev[1] != func or not t.entry_stacks:
        raise TraceError(f"STACK record of function {func} on thread {tid} not right after its ENTRY")
    sid = struct.unpack_from("<I", p, off + 8)[0]
    if sid != STACK_NONE and sid not in t.stacks:
        raise TraceError(f"STACK record names stack {sid}, not defined before its EVENTS block")
    etid, name, _ = t.entry_stacks[-1]
    t.entry_stacks[-1] = (etid, name, sid)
    t.stack_records += 1


class Rec:
    """One record of an EVENTS block, of any version: off and size in the block's payload, kind
    (REC_ENTRY, REC_EXIT, REC_DATA, REC_DROP, REC_STACK, REC5_TIME), raw (the type the record's
    version gave it: EXIT5_ZERO is an EXIT of raw type REC5_EXIT_ZERO), flags, func, and for an
    ENTRY or EXIT depth, ts; ENTRY: args (nregs registers, then nstack stack slots); EXIT: ret,
    value (None without one)."""
    __slots__ = ("off", "size", "kind", "raw", "flags", "func", "depth", "ts", "args", "nregs", "nstack",
                 "ret", "value")

    def __init__(self, off, size, kind, raw, flags=0, func=None, depth=0, ts=None):
        self.off, self.size, self.kind, self.raw, self.flags, self.func = off, size, kind, raw, flags, func
        self.depth, self.ts, self.args, self.nregs, self.nstack, self.ret, self.value = depth, ts, (), 0, 0, None, None


def _records_v4(p, nrec, version):
    """The Recs of a version 1-4 EVENTS block."""
    off = 8
    for _ in range(nrec):
        rtype, flags, size, func = struct.unpack_from("<BBHI", p, off)
        if size < 8 or off + size > len(p):
            raise TraceError(f"bad record size {size}")
        r = Rec(off, size, rtype, rtype, flags, func)
        if rtype == REC_ENTRY:
            r.ts, r.depth, r.nstack, omitted = struct.unpack_from("<QHBB", p, off + 8)
            r.nregs = 6 - omitted if version >= 4 else 6  # a reserved byte before version 4
            if r.nregs < 0 or r.nstack > 6 or size < 24 + 8 * (r.nregs + r.nstack):
                raise TraceError(f"bad ENTRY record (size {size}, {r.nregs} registers, {r.nstack} stack slots)")
            r.args = struct.unpack_from(f"<{r.nregs + r.nstack}Q", p, off + 24)
        elif rtype == REC_EXIT:
            r.ts, r.depth, r.ret = struct.unpack_from("<QH6xQ", p, off + 8)
            if flags & RF_VALUE:
                r.value = struct.unpack_from("<Q", p, off + 32)[0]
        yield r
        off += size


# Version 5: bytes of the records whose length their type says (trace_format.h, cuhook_rec5_size).
_REC5_FIXED = {REC_EXIT: 16, REC5_EXIT_VALUE: 24, REC5_TIME: 8, REC5_EXIT_ZERO: 8, REC5_EXIT_ZERO_VALUE: 16}


def _records_v5(t, tid, p):
    """The Recs of a version 5 EVENTS block, checked as read."""
    off = 8
    epoch = None
    while off < len(p):
        if off + 8 > len(p):
            raise TraceError("record cut at the end of its EVENTS block")
        w = struct.unpack_from("<Q", p, off)[0]
        raw = w & 0xF
        if raw == REC5_TIME:
            epoch = w >> 32
            t.epoch[tid] = epoch
            yield Rec(off, 8, REC5_TIME, raw)
            off += 8
            continue
        if epoch is None:
            raise TraceError(f"EVENTS block of thread {tid} does not start with a TIME record")
        r = Rec(off, _REC5_FIXED.get(raw), raw, raw, 0, (w >> 12) & 0x3FFF, (w >> 4) & 0xFF,
                epoch << REC5_TSC_BITS | w >> 26)
        if raw in (REC_ENTRY, REC5_ENTRY_X):
            r.kind, first = REC_ENTRY, off + 8
            if raw == REC_ENTRY:
                if r.func not in t.func_args:
                    raise TraceError(f"ENTRY5 of function {r.func}, which no FUNCS entry defines")
                r.nregs, r.nstack = t.func_args[r.func]
            else:
                r.flags, r.nregs, r.nstack = struct.unpack_from("<BBB", p, off + 8)
                first += 8
            if r.nregs > 6 or r.nstack > 6 or (r.nstack and r.nregs != 6):
                raise TraceError(f"ENTRY of function {r.func} with {r.nregs} registers and {r.nstack} stack slots")
            r.size = first - off + 8 * (r.nregs + r.nstack)
            if off + r.size > len(p):
                raise TraceError("ENTRY record past the end of its EVENTS block")
            r.args = struct.unpack_from(f"<{r.nregs + r.nstack}Q", p, first)
        elif raw in _REC5_FIXED:
            if off + r.size > len(p):
                raise TraceError("EXIT record past the end of its EVENTS block")
            vals = struct.unpack_from(f"<{r.size // 8 - 1}Q", p, off + 8)
            r.kind = REC_EXIT
            r.ret = 0 if raw in (REC5_EXIT_ZERO, REC5_EXIT_ZERO_VALUE) else vals[0]  # rax 0, not stored
            if raw in (REC5_EXIT_VALUE, REC5_EXIT_ZERO_VALUE):
                r.flags, r.value = RF_VALUE, vals[-1]
        elif raw in (REC_DATA, REC_DROP, REC_STACK):
            _t, r.flags, r.size, r.func = struct.unpack_from("<BBHI", p, off)
            if r.size < 8 or r.size % 8 or off + r.size > len(p):
                raise TraceError(f"bad record size {r.size}")
        else:
            raise TraceError(f"unknown version 5 record type {raw} (word {w:#x})")
        yield r
        off += r.size


def _events_v5(t, tid, p):
    """_events for a version 5 block when no Rec is kept (read_trace without records=True): the
    same checks and the same Trace, several times faster than through the Rec generator (the
    tests read traces of 10^6-10^7 records; a test of the agent spent most of its time here).
    The block's words are unpacked once; each record becomes its Call directly."""
    n = len(p)
    words = struct.unpack_from(f"<{n // 8}Q", p, 0)
    funcs, func_args = t.funcs, t.func_args
    stack = t.open_calls.setdefault(tid, [])
    last_call = t.last_call
    entry_stacks, calls, entry_only = t.entry_stacks, t.calls, t.entry_only
    by_func = {}
    lo = hi = None
    epoch = None
    prev_kind = prev_func = None
    i, nw = 1, n // 8
    while i < nw:
        w = words[i]
        raw = w & 0xF
        if raw == REC5_TIME:
            epoch = w >> 32
            t.epoch[tid] = epoch
            prev_kind = REC5_TIME  # never between an ENTRY and its STACK record
            i += 1
            continue
        if epoch is None:
            raise TraceError(f"EVENTS block of thread {tid} does not start with a TIME record")
        func, depth, ts = (w >> 12) & 0x3FFF, (w >> 4) & 0xFF, epoch << REC5_TSC_BITS | w >> 26
        if raw == REC_ENTRY or raw == REC5_ENTRY_X:
            flags, first = 0, i + 1
            if raw == REC_ENTRY:
                a = func_args.get(func)
                if a is None:
                    raise TraceError(f"ENTRY5 of function {func}, which no FUNCS entry defines")
                nregs, nstack = a
            else:
                if first >= nw:
                    raise TraceError("ENTRY record past the end of its EVENTS block")
                flags, nregs, nstack = struct.unpack_from("<BBB", p, 8 * first)
                first += 1
            if nregs > 6 or nstack > 6 or (nstack and nregs != 6):
                raise TraceError(f"ENTRY of function {func} with {nregs} registers and {nstack} stack slots")
            end = first + nregs + nstack
            if 8 * end > n:
                raise TraceError("ENTRY record past the end of its EVENTS block")
            c = Call(tid, func, funcs.get(func, f"#{func}"), ts, None, depth, words[first:end], nregs, nstack,
                     flags)
            last_call[tid] = (REC_ENTRY, c)
            if flags & RF_NO_EXIT:
                entry_only.append(c)
            else:
                stack.append(c)
            by_func[func] = by_func.get(func, 0) + 1
            entry_stacks.append((tid, c.name, None))
            i = end
        elif raw in _REC5_FIXED:
            sz = _REC5_FIXED[raw] // 8
            if i + sz > nw:
                raise TraceError("EXIT record past the end of its EVENTS block")
            ret = 0 if raw in (REC5_EXIT_ZERO, REC5_EXIT_ZERO_VALUE) else words[i + 1]  # rax 0, not stored
            flags, value = (RF_VALUE, words[i + sz - 1]) if raw in (REC5_EXIT_VALUE, REC5_EXIT_ZERO_VALUE) else (0, None)
            last_call.pop(tid, None)
            for k in range(len(stack) - 1, -1, -1):
                c = stack[k]
                if c.func == func and c.depth == depth:
                    c.exit, c.ret, c.value = ts, ret, value
                    c.flags |= flags
                    calls.append(c)
                    last_call[tid] = (REC_EXIT, c)
                    del stack[k:]
                    break
            i += sz
        elif raw in (REC_DATA, REC_DROP, REC_STACK):
            _t, _flags, size, func = struct.unpack_from("<BBHI", p, 8 * i)
            if size < 8 or size % 8 or 8 * i + size > n:
                raise TraceError(f"bad record size {size}")
            if raw == REC_STACK:
                _stack_record(t, tid, func, 8 * i, p, None if prev_kind is None else (prev_kind, prev_func))
            elif raw == REC_DATA:
                _data(t, tid, func, 8 * i, p)
            else:
                t.drop_records += 1
                t.dropped_reported += struct.unpack_from("<Q", p, 8 * i + 16)[0]
                last_call.pop(tid, None)
            i += size // 8
            prev_kind, prev_func = raw, func
            continue
        else:
            raise TraceError(f"unknown version 5 record type {raw} (word {w:#x})")
        prev_kind, prev_func = (REC_ENTRY if raw in (REC_ENTRY, REC5_ENTRY_X) else REC_EXIT), func
        if lo is None:
            lo = hi = ts
        elif ts < lo:
            lo = ts
        elif ts > hi:
            hi = ts
    if 8 * i < n:
        raise TraceError("record cut at the end of its EVENTS block")
    if lo is not None:
        if t.event_times:
            lo, hi = min(lo, t.event_times[0]), max(hi, t.event_times[1])
        t.event_times = (lo, hi)
    for func, k in by_func.items():
        name = funcs.get(func, f"#{func}")
        t.entries[name] = t.entries.get(name, 0) + k


def _events(t, p, base):
    tid, nrec = struct.unpack_from("<II", p, 0)
    if t.version >= TRACE_VERSION_REC5:
        if nrec:
            raise TraceError(f"version 5 EVENTS block with nrecords {nrec} (0 expected)")
        if t.records is None:
            return _events_v5(t, tid, p)
        records = _records_v5(t, tid, p)
    else:
        records = _records_v4(p, nrec, t.version)
    prev = None
    for r in records:
        if t.records is not None:
            t.records.append((base + r.off, tid, r))
        if r.kind == REC5_TIME:
            prev = (REC5_TIME, None)  # never between an ENTRY and its STACK record
            continue
        if r.kind == REC_STACK:
            _stack_record(t, tid, r.func, r.off, p, prev)
        prev = (r.kind, r.func)
        if r.kind in (REC_ENTRY, REC_EXIT):
            _pair(t, tid, r)
            lo, hi = t.event_times or (r.ts, r.ts)
            t.event_times = (min(lo, r.ts), max(hi, r.ts))
        if r.kind == REC_ENTRY:
            name = t.funcs.get(r.func, f"#{r.func}")
            t.entries[name] = t.entries.get(name, 0) + 1
            t.entry_stacks.append((tid, name, None))
        elif r.kind == REC_DATA:
            _data(t, tid, r.func, r.off, p)
        elif r.kind == REC_DROP:
            t.drop_records += 1
            t.dropped_reported += struct.unpack_from("<Q", p, r.off + 16)[0]
            t.last_call.pop(tid, None)


def _counts(t, p):
    tid, count, tsc = struct.unpack_from("<IIQ", p, 0)
    t.counts_times.append(tsc)
    if 16 + 16 * count > len(p):
        raise TraceError("COUNTS block shorter than its entries")
    for i in range(count):
        func, _, calls = struct.unpack_from("<IIQ", p, 16 + 16 * i)
        if calls == 0:
            raise TraceError("COUNTS entry with 0 calls")
        name = t.funcs.get(func, f"#{func}")
        t.counted[name] = t.counted.get(name, 0) + calls
        t.counted_by_tid[(tid, name)] = t.counted_by_tid.get((tid, name), 0) + calls
    t.counts_blocks += 1


def _stacks(t, p):
    count, _ = struct.unpack_from("<II", p, 0)
    off = 8
    for _ in range(count):
        if off + 16 > len(p):
            raise TraceError("STACKS block shorter than its entries")
        sid, size, nn, npy, ne, pe = struct.unpack_from("<IIHHBB", p, off)
        if size % 8 or size < 16 + 8 * nn + 4 * npy or off + size > len(p):
            raise TraceError(f"bad STACKS entry size {size}")
        if not t.maps_blocks:
            raise TraceError(f"stack {sid} before any MAPS block")
        st = Stack()
        st.id = sid
        st.native = list(struct.unpack_from(f"<{nn}Q", p, off + 16))
        st.python = list(struct.unpack_from(f"<{npy}I", p, off + 16 + 8 * nn))
        st.native_end, st.python_end = STACK_END_NAMES.get(ne, f"#{ne}"), STACK_END_NAMES.get(pe, f"#{pe}")
        st.maps = len(t.maps_blocks) - 1
        for f in st.python:
            if f & PYFRAME_ID_MASK not in t.pyframes:
                raise TraceError(f"stack {sid} names Python frame {f & PYFRAME_ID_MASK}, not defined before it")
        if sid in t.stacks:
            raise TraceError(f"stack {sid} defined twice in one file")
        t.stacks[sid] = st
        off += size


def _pyframes(t, p):
    count, _ = struct.unpack_from("<II", p, 0)
    off = 8
    for _ in range(count):
        fid, size, line, first, flen, nlen = struct.unpack_from("<IIiiHH", p, off)
        if size % 8 or size < 24 + flen + nlen or off + size > len(p):
            raise TraceError(f"bad PYFRAMES entry size {size}")
        file = p[off + 24:off + 24 + flen].decode(errors="replace")
        func = p[off + 24 + flen:off + 24 + flen + nlen].decode(errors="replace")
        t.pyframes[fid] = PyFrame(file, func, line, first)
        off += size


def _maps(t, p):
    count, _ = struct.unpack_from("<II", p, 0)
    off = 8
    maps = []
    for _ in range(count):
        start, end, offset, inode, size, plen, blen = struct.unpack_from("<QQQQIHB", p, off)
        if size % 8 or size < 64 + plen or off + size > len(p) or blen > 20:
            raise TraceError(f"bad MAPS entry size {size}")
        build_id = p[off + 40:off + 40 + blen]
        path = p[off + 64:off + 64 + plen].decode(errors="replace")
        maps.append(MapEntry(start, end, offset, inode, path, build_id))
        off += size
    t.maps_blocks.append(maps)


_elf_cache = {}


def _elf_symbols(path):
    """(PT_LOAD segments, sorted [(value, size, name)]) of an ELF file's .symtab and .dynsym
    function symbols: a minimal reader of the ELF64 little-endian headers."""
    if path in _elf_cache:
        return _elf_cache[path]
    with open(path, "rb") as f:
        d = f.read()
    if d[:4] != b"\x7fELF" or d[4] != 2:
        raise TraceError(f"{path}: not an ELF64 file")
    phoff, shoff = struct.unpack_from("<QQ", d, 32)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", d, 54)
    loads = []
    for i in range(phnum):
        ptype, _flags, p_offset, p_vaddr, _pa, p_filesz = struct.unpack_from("<IIQQQQ", d, phoff + i * phentsize)
        if ptype == 1:
            loads.append((p_offset, p_vaddr, p_filesz))
    secs = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize) for i in range(shnum)]
    syms = []
    for _name, stype, _f, _a, s_off, s_size, link, _info, _al, entsize in secs:
        if stype not in (2, 11) or not entsize:  # SHT_SYMTAB, SHT_DYNSYM
            continue
        str_off = secs[link][4]
        for k in range(s_size // entsize):
            st_name, st_info, _o, shndx, value, size = struct.unpack_from("<IBBHQQ", d, s_off + k * entsize)
            if st_info & 0xF != 2 or not shndx or not value:  # STT_FUNC, defined
                continue
            end = d.index(b"\0", str_off + st_name)
            syms.append((value, size, d[str_off + st_name:end].decode()))
    syms.sort()
    _elf_cache[path] = (loads, syms)
    return loads, syms


def symbolize(t, stack, pc):
    """The function that address pc of a stack lies in (by the MAPS block in effect for that
    stack and the mapped file's ELF symbols), or None."""
    for m in t.maps_blocks[stack.maps]:
        if m.start <= pc < m.end:
            if not m.path or not m.inode:
                return None
            file_off = pc - m.start + m.offset
            loads, syms = _elf_symbols(m.path)
            for p_offset, p_vaddr, p_filesz in loads:
                if p_offset <= file_off < p_offset + p_filesz:
                    vaddr = file_off - p_offset + p_vaddr
                    i = bisect.bisect_right(syms, (vaddr, float("inf"), "")) - 1
                    while i >= 0 and syms[i][0] <= vaddr:
                        value, size, name = syms[i]
                        if vaddr < value + max(size, 1):
                            return name
                        i -= 1
                    return None
            return None
    return None


def _gpu(t, p):
    """A GPU block: its records by type (trace_format.h, struct cuhook_gpu_*)."""
    nrec, _ = struct.unpack_from("<II", p, 0)
    session = len(t.gpu_sessions) - 1
    off = 8
    for _ in range(nrec):
        if off + 8 > len(p):
            raise TraceError("GPU block shorter than its records")
        rtype, rflags, size, corr = struct.unpack_from("<BBHI", p, off)
        if size < 8 or size % 8 or off + size > len(p):
            raise TraceError(f"bad GPU record size {size}")
        r = {"session": session, "correlation": corr}
        if rtype == GPU_REC_API:
            r["start"], r["end"], r["tid"], r["func"], r["cbid"], r["ret"] = struct.unpack_from("<QQIIII", p, off + 8)
            r["runtime"] = bool(rflags & GPU_API_RUNTIME)
            r["name"] = t.funcs.get(r["func"]) if r["func"] != 0xFFFFFFFF and not r["runtime"] else None
            t.gpu_api.append(r)
        elif rtype == GPU_REC_KERNEL:
            v = struct.unpack_from("<QQIIII3i3iIIHHIQ", p, off + 8)
            r.update(start=v[0], end=v[1], device=v[2], context=v[3], stream=v[4], name_id=v[5],
                     grid=tuple(v[6:9]), block=tuple(v[9:12]), shared_static=v[12], shared_dynamic=v[13],
                     registers=v[14], graph_id=v[16], graph_node_id=v[17])
            r["name"] = t.gpu_names.get(r["name_id"])
            if r["name_id"] and r["name"] is None:
                raise TraceError(f"kernel name id {r['name_id']} before its NAME record")
            t.gpu_kernels.append(r)
        elif rtype == GPU_REC_MEMCPY:
            v = struct.unpack_from("<QQIIIBBBBQIIQ", p, off + 8)
            r.update(start=v[0], end=v[1], device=v[2], context=v[3], stream=v[4], copy_kind=v[5],
                     src_kind=v[6], dst_kind=v[7], flags=v[8], bytes=v[9], graph_id=v[10], graph_node_id=v[12])
            t.gpu_memcpys.append(r)
        elif rtype == GPU_REC_MEMSET:
            v = struct.unpack_from("<QQIIIIQHHIQ", p, off + 8)
            r.update(start=v[0], end=v[1], device=v[2], context=v[3], stream=v[4], value=v[5], bytes=v[6],
                     mem_kind=v[7], flags=v[8], graph_id=v[9], graph_node_id=v[10])
            t.gpu_memsets.append(r)
        elif rtype == GPU_REC_NAME:
            name_id, length = struct.unpack_from("<II", p, off + 8)
            if 16 + length > size:
                raise TraceError("NAME record shorter than its name")
            if name_id in t.gpu_names or name_id != len(t.gpu_names) + 1:
                raise TraceError(f"NAME id {name_id} out of order (ids are 1, 2, ... in the file)")
            t.gpu_names[name_id] = p[off + 16:off + 16 + length].decode(errors="replace")
        else:
            raise TraceError(f"unknown GPU record type {rtype}")
        t.gpu_records += 1
        off += size
    t.gpu_blocks += 1


SUBMITTING = ("cuLaunch", "cuMemcpy", "cuMemset", "cuGraphLaunch")  # src/format/gpu_submit.h


def gpu_link(t):
    """Links every GPU work record (kernel, memcpy, memset) to the recorded call that submitted
    it, by trace_format.h's rule, never by time alone. Returns (links, unlinked): links a list of
    (kind, record, api_record, Call), unlinked a list of (kind, record, why). A runtime API record
    links to the first submitting call of its thread that lies inside it; a driver record of the
    same correlation id goes first."""
    api = {}
    for a in t.gpu_api:
        key = (a["session"], a["correlation"], a["runtime"])
        if key in api:
            raise TraceError(f"correlation id {a['correlation']} on two API records of one session")
        api[key] = a
    by_thread_func = {}
    submitting = {}
    for c in t.calls:
        by_thread_func.setdefault((c.tid, c.func), []).append(c)
        if (t.funcs.get(c.func) or "").startswith(SUBMITTING):
            submitting.setdefault(c.tid, []).append(c)
    starts = {}
    for k, cs in by_thread_func.items():
        cs.sort(key=lambda c: c.entry)
        starts[k] = [c.entry for c in cs]
    sub_starts = {}
    for tid, cs in submitting.items():
        cs.sort(key=lambda c: c.entry)
        sub_starts[tid] = [c.entry for c in cs]
    links, unlinked = [], []
    for kind, recs in (("kernel", t.gpu_kernels), ("memcpy", t.gpu_memcpys), ("memset", t.gpu_memsets)):
        for r in recs:
            a = api.get((r["session"], r["correlation"], False))
            if a is None and (r["session"], r["correlation"], True) in api:
                a = api[(r["session"], r["correlation"], True)]
                cs = submitting.get(a["tid"], [])
                i = bisect.bisect_left(sub_starts.get(a["tid"], []), a["start"])
                first = cs[i] if i < len(cs) else None
                if first is None or first.exit is None or first.entry > a["end"] or first.exit > a["end"]:
                    unlinked.append((kind, r, "its runtime API record holds no recorded call"))
                else:
                    links.append((kind, r, a, first))
                continue
            if a is None:
                unlinked.append((kind, r, "no API record of its correlation id"))
                continue
            # Calls of one function on one thread are ordered by entry; only those entered at
            # or before the API record's start can hold it (a GPT-2 trace has 10^4 per key).
            key = (a["tid"], a["func"])
            cs = by_thread_func.get(key, [])
            i = bisect.bisect_right(starts.get(key, []), a["start"])
            inside = [c for c in cs[max(0, i - 2):i] if c.entry <= a["start"] <= a["end"] <= c.exit]
            if len(inside) != 1:
                unlinked.append((kind, r, f"its API record lies in {len(inside)} recorded calls"))
                continue
            links.append((kind, r, a, inside[0]))
    return links, unlinked


class Header:
    """The file header (struct cuhook_file_header): its fields as attributes, by their names."""

    def __init__(self, fields):
        self.__dict__.update(fields)


def read_header(data, path="trace"):
    """The Header at the start of a trace's bytes; TraceError if they do not begin with one."""
    if len(data) < FILE_HEADER_SIZE or data[:len(TRACE_MAGIC)] != TRACE_MAGIC:
        raise TraceError(f"{path}: not a trace")
    return Header(unpack("cuhook_file_header", data))


def _blocks(data, path, growing=False):
    """(file offset of the payload, block type, payload) of each block after the file header,
    checked: a damaged block header or one past the end is a TraceError, except a last block
    not complete yet when the file is still growing, which ends the blocks."""
    off = read_header(data, path).header_size
    while off + BLOCK_HEADER_SIZE <= len(data):
        magic, btype, _flags, payload, _seq = struct.unpack_from(fmt("cuhook_block"), data, off)
        start, end = off + BLOCK_HEADER_SIZE, off + BLOCK_HEADER_SIZE + payload
        if growing and magic == BLOCK_MAGIC and end > len(data):
            return
        if magic != BLOCK_MAGIC or end > len(data):
            raise TraceError(f"{path}: damaged block at offset {off}")
        yield start, btype, data[start:end]
        off = end
    if off != len(data) and not growing:
        raise TraceError(f"{path}: {len(data) - off} bytes after the last block")


def read_trace(path, growing=False, records=False):
    """growing: the file is being written; a last block not complete yet ends the reading.
    records: keep every EVENTS record in t.records as (offset in the file, tid, Rec)."""
    with open(path, "rb") as f:
        data = f.read()
    t = Trace()
    t.records = [] if records else None
    t.header = read_header(data, path)
    t.version, t.clock_source = t.header.version, t.header.clock_source
    for start, btype, p in _blocks(data, path, growing):
        if btype == BLOCK_CLOCK:
            tsc, mono = struct.unpack_from(fmt("cuhook_clock_block", last="monotonic_ns"), p, 0)
            t.last_clock = mono if t.clock_source == CLOCK_MONOTONIC else tsc
            t.clocks.append((tsc, mono))
        elif btype == BLOCK_FUNCS:
            _funcs(t, p)
        elif btype == BLOCK_EVENTS:
            _events(t, p, start)
        elif btype == BLOCK_COUNTS:
            _counts(t, p)
        elif btype == BLOCK_NOTE:
            level, length = struct.unpack_from(fmt("cuhook_note_block"), p, 0)
            text_at = size("cuhook_note_block")
            t.notes.append((level, p[text_at:text_at + length].decode(errors="replace")))
        elif btype == BLOCK_GPU_SESSION:
            t.gpu_sessions.append(GpuSession(p))
        elif btype == BLOCK_GPU:
            _gpu(t, p)
        elif btype == BLOCK_STACKS:
            _stacks(t, p)
        elif btype == BLOCK_PYFRAMES:
            _pyframes(t, p)
        elif btype == BLOCK_MAPS:
            _maps(t, p)
        elif btype == BLOCK_END:
            t.has_end = True
            t.end_events, t.end_dropped = struct.unpack_from(fmt("cuhook_end_block", last="dropped"), p, 0)
    return t


def read_end(path):
    """(has_end, end_events, end_dropped) from the block headers alone, without reading the
    records: for a test that only asks whether a (large) trace was closed, and with how many
    events. Checks every block header as read_trace does."""
    with open(path, "rb") as f:
        data = f.read()
    end = (False, None, None)
    for _start, btype, p in _blocks(data, path):
        if btype == BLOCK_END:
            end = (True,) + struct.unpack_from(fmt("cuhook_end_block", last="dropped"), p, 0)
    return end
