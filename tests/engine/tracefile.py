"""A second, independent reader of trace.bin for the engine tests (the authority is
src/format/trace_format.h): just enough to count what the agent wrote, so that a test of the
agent does not trust `cuhook report` for the numbers it checks.

read_trace(path) -> Trace with
  funcs:   {id: name}
  patched: names of the functions patched (status 0)
  entries: {name: ENTRY records}
  counted: {name: sum of the COUNTS blocks' calls}
  counted_by_tid: {(tid, name): calls}
  counts_blocks: number of COUNTS blocks
  counts_times: the COUNTS blocks' timestamps; event_times: (first, last) ENTRY/EXIT timestamp
  clock_source: 0 TSC, 1 CLOCK_MONOTONIC (what the timestamps are)
  last_clock: the last CLOCK block's reading in the file's clock (tsc, or monotonic ns)
  has_end: an END block closed the file; end_events: its ENTRY + EXIT count (None without END)
  end_dropped: its dropped-record count (None without END)
  drop_records: DROP records in the EVENTS blocks; dropped_reported: the sum of their counts
  notes: [(level, text)] of the NOTE blocks"""

import struct

BLOCK_MAGIC = 0x4B424843
BLOCK_CLOCK, BLOCK_FUNCS, BLOCK_EVENTS, BLOCK_NOTE, BLOCK_END, BLOCK_COUNTS = 1, 3, 5, 6, 7, 8
REC_ENTRY, REC_EXIT, REC_DROP = 1, 2, 4


class TraceError(Exception):
    pass


class Trace:
    def __init__(self):
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
        self.has_end = False
        self.end_events = None
        self.end_dropped = None
        self.drop_records = 0
        self.dropped_reported = 0
        self.notes = []


def _funcs(t, p):
    lib_id, first, count, _ = struct.unpack_from("<IIII", p, 0)
    off = 16
    for i in range(count):
        _offset, _size, status, name_len = struct.unpack_from("<QIHH", p, off)
        name = p[off + 24:off + 24 + name_len].decode()
        t.funcs[first + i] = name
        if status == 0:
            t.patched.add(name)
        off += (24 + name_len + 7) & ~7


def _events(t, p):
    _tid, nrec = struct.unpack_from("<II", p, 0)
    off = 8
    for _ in range(nrec):
        rtype, _flags, size, func = struct.unpack_from("<BBHI", p, off)
        if size < 8 or off + size > len(p):
            raise TraceError(f"bad record size {size}")
        if rtype == REC_ENTRY:
            name = t.funcs.get(func, f"#{func}")
            t.entries[name] = t.entries.get(name, 0) + 1
        if rtype == REC_DROP:
            t.drop_records += 1
            t.dropped_reported += struct.unpack_from("<Q", p, off + 16)[0]
        if rtype in (REC_ENTRY, REC_EXIT):
            ts = struct.unpack_from("<Q", p, off + 8)[0]
            lo, hi = t.event_times or (ts, ts)
            t.event_times = (min(lo, ts), max(hi, ts))
        off += size


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


def read_trace(path, growing=False):
    """growing: the file is being written; a last block not complete yet ends the reading."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"CUHOOKTR":
        raise TraceError(f"{path}: not a trace")
    t = Trace()
    t.version, header_size = struct.unpack_from("<II", data, 8)
    t.clock_source = struct.unpack_from("<I", data, 24)[0]
    off = header_size
    while off + 16 <= len(data):
        magic, btype, _flags, size, _seq = struct.unpack_from("<IHHII", data, off)
        if growing and magic == BLOCK_MAGIC and off + 16 + size > len(data):
            return t
        if magic != BLOCK_MAGIC or off + 16 + size > len(data):
            raise TraceError(f"{path}: damaged block at offset {off}")
        p = data[off + 16:off + 16 + size]
        if btype == BLOCK_CLOCK:
            tsc, mono = struct.unpack_from("<QQ", p, 0)
            t.last_clock = mono if t.clock_source == 1 else tsc
        elif btype == BLOCK_FUNCS:
            _funcs(t, p)
        elif btype == BLOCK_EVENTS:
            _events(t, p)
        elif btype == BLOCK_COUNTS:
            _counts(t, p)
        elif btype == BLOCK_NOTE:
            level, length = struct.unpack_from("<II", p, 0)
            t.notes.append((level, p[8:8 + length].decode(errors="replace")))
        elif btype == BLOCK_END:
            t.has_end = True
            t.end_events, t.end_dropped = struct.unpack_from("<QQ", p, 0)
        off += 16 + size
    if off != len(data) and not growing:
        raise TraceError(f"{path}: {len(data) - off} bytes after the last block")
    return t
