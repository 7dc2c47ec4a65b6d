"""Writes trace.bin files with call stacks (STACKS, PYFRAMES, MAPS blocks and STACK records),
by the layouts of src/format/trace_format.h (the numbers are traceformat.py's), for the report's
tests (tests/report/test_stacks.py): every byte is
chosen here, so what the report must print is known exactly. The layouts are those of the
header's structs; a test that needs a damaged file changes the bytes this writes."""
import struct

from cuhooktest.traceformat import (  # the numbers, checked against trace_format.h
    BLOCK_CLOCK as CLOCK, BLOCK_END as END, BLOCK_EVENTS as EVENTS, BLOCK_FUNCS as FUNCS, BLOCK_LIB as LIB,
    BLOCK_MAGIC, BLOCK_MAPS as MAPS, BLOCK_NOTE as NOTE, BLOCK_PYFRAMES as PYFRAMES, BLOCK_STACKS as STACKS,
    BLOCK_THREAD as THREAD, FILE_HEADER_SIZE, PYFRAME_ENTRY, REC5_EXIT_ZERO, REC5_TIME, REC5_TSC_BITS,
    REC_ENTRY, REC_EXIT, REC_STACK, STACK_END_BAD as END_BAD, STACK_END_DEPTH as END_DEPTH,
    STACK_END_DONE as END_DONE, STACK_END_NO_INFO as END_NO_INFO, STACK_END_NONE as END_NONE,
    STACK_END_UNSUPPORTED as END_UNSUPPORTED, STACK_NONE, TRACE_MAGIC as MAGIC, fmt)

VERSION = 4  # Trace(version=5): version 5's compact records (ENTRY5 of no argument, EXIT5_ZERO)
START_NS = 5_000_000_000


def pad8(b):
    return b + b"\0" * (-len(b) % 8)


class Trace:
    def __init__(self, pid=4242, argv=("python3", "run.py"), exe="/usr/bin/python3", version=VERSION):
        self.version = version
        cmdline = b"".join(a.encode() + b"\0" for a in argv)
        exe = exe.encode()
        hsize = (FILE_HEADER_SIZE + len(cmdline) + len(exe) + 7) & ~7
        self.out = bytearray(struct.pack(fmt("cuhook_file_header"), MAGIC, version, hsize, pid, 1, 1, len(cmdline),
                                          len(exe), 0, 1_700_000_000_000_000_000, START_NS, 0, 1 << 20, 0))
        self.out += pad8(cmdline + exe)[: hsize - FILE_HEADER_SIZE]
        self.seq = 0
        self.events = 0
        self.block_at = {}   # block type -> file offsets of its blocks, in order

    def block(self, btype, payload):
        payload = pad8(bytes(payload))
        self.block_at.setdefault(btype, []).append(len(self.out))
        self.out += struct.pack(fmt("cuhook_block"), BLOCK_MAGIC, btype, 0, len(payload), self.seq) + payload
        self.seq += 1

    def clock(self, rel_ns=0):
        ns = START_NS + rel_ns
        self.block(CLOCK, struct.pack("<QQQ", ns, ns, 1_700_000_000_000_000_000 + rel_ns))

    def lib(self, lib_id, path, flags=0):
        p = path.encode()
        self.block(LIB, struct.pack("<IIQII", lib_id, flags, 0x7f5500000000, len(p), 0) + p)

    def funcs(self, lib_id, names):
        body = b""
        for i, n in enumerate(names):
            nb = n.encode()
            body += pad8(struct.pack("<QIHHHHI", 0x1000 * (i + 1), 64, 0, len(nb), 5, 0, 0) + nb)
        self.block(FUNCS, struct.pack("<IIII", lib_id, 0, len(names), 0) + body)

    def thread(self, tid, name):
        self.block(THREAD, struct.pack("<II16s", tid, 0, name.encode()))

    @staticmethod
    def map_entry(start, end, offset, inode, path, build_id=b""):
        p = path.encode()
        size = (64 + len(p) + 7) & ~7
        return pad8(struct.pack("<QQQQIHBB20sI", start, end, offset, inode, size, len(p), len(build_id), 0,
                                build_id.ljust(20, b"\0"), 0) + p)

    def maps(self, entries):
        self.block(MAPS, struct.pack("<II", len(entries), 0) + b"".join(self.map_entry(*e) for e in entries))

    @staticmethod
    def pyframe_entry(pid, line, first_line, file, func):
        f, n = file.encode(), func.encode()
        size = (24 + len(f) + len(n) + 7) & ~7
        return pad8(struct.pack("<IIiiHHI", pid, size, line, first_line, len(f), len(n), 0) + f + n)

    def pyframes(self, entries):
        self.block(PYFRAMES, struct.pack("<II", len(entries), 0) + b"".join(self.pyframe_entry(*e) for e in entries))

    @staticmethod
    def stack_entry(sid, pcs, pyrefs=(), native_end=END_DONE, python_end=END_NONE):
        body = b"".join(struct.pack("<Q", pc) for pc in pcs) + b"".join(struct.pack("<I", r) for r in pyrefs)
        size = (16 + len(body) + 7) & ~7
        return pad8(struct.pack("<IIHHBBH", sid, size, len(pcs), len(pyrefs), native_end, python_end, 0) + body)

    def stacks(self, entries):
        self.block(STACKS, struct.pack("<II", len(entries), 0) + b"".join(self.stack_entry(*e) for e in entries))

    def thread_events(self, tid, calls):
        """calls: (func, start_ns, dur_ns, stack id or None), each an outermost call."""
        recs, n = b"", 0
        v5 = self.version >= 5
        if v5:  # the epoch of every timestamp here (START_NS is far below 2^38)
            recs += struct.pack("<Q", REC5_TIME | (START_NS >> REC5_TSC_BITS) << 32)

        def word(rtype, func, ts):  # the FUNCS entries say no arguments: an ENTRY5 is this word
            return struct.pack("<Q", rtype | func << 12 | (ts << 26 & (1 << 64) - 1))
        for func, start, dur, sid in calls:
            if v5:
                recs += word(REC_ENTRY, func, START_NS + start)
            else:
                recs += struct.pack("<BBHIQHBB4s", REC_ENTRY, 0, 24, func, START_NS + start, 0, 0, 6, b"")
            n += 1
            if sid is not None:
                recs += struct.pack("<BBHIII", REC_STACK, 0, 16, func, sid, 0)
                n += 1
            if v5:
                recs += word(REC5_EXIT_ZERO, func, START_NS + start + dur)
            else:
                recs += struct.pack("<BBHIQH6sQ", REC_EXIT, 0, 32, func, START_NS + start + dur, 0, b"", 0)
            n += 1
            self.events += 2
        self.block(EVENTS, struct.pack("<II", tid, 0 if v5 else n) + recs)

    def end(self, threads=1):
        self.block(END, struct.pack("<QQII", self.events, 0, threads, 0))

    def write(self, path):
        with open(path, "wb") as f:
            f.write(self.out)
