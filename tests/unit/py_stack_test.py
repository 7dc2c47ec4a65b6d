"""The agent's Python frame reader (src/agent/py_*.c) in a real CPython: py_stack_probe.so,
loaded through ctypes, captures the calling thread's frames from known call chains; every
frame's file, function, line and entry flag is checked, innermost first, and the line tables
are checked against CPython's own co_lines() for every instruction of many code objects.

ctypes.CDLL releases the GIL around the foreign call: that is the normal case the reader is
for (PyTorch does the same around its ops); ctypes.PyDLL keeps it, checked too.

usage: py_stack_test.py PROBE_SO"""
import ctypes
import sys
import threading
import types

from cuhooktest import Fail, run_main

SRC = __file__
LINES = {}
with open(SRC, encoding="utf-8") as f:
    for n, text in enumerate(f, 1):
        if "# @" in text:
            LINES[text.split("# @")[1].strip()] = n

lib = ctypes.CDLL(sys.argv[1])
pylib = ctypes.PyDLL(sys.argv[1])
for l in (lib, pylib):
    l.probe_stack.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint]
    l.probe_stack_native_thread.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    l.probe_notes.restype = ctypes.c_char_p
    l.probe_line_310.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int]
    l.probe_line_311.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int]

V311 = sys.version_info >= (3, 11)
failures = []
ALL_IDS = set()
passed = 0


def check(cond, what):
    global passed
    if cond:
        passed += 1
    else:
        failures.append(what)
        print("FAIL:", what)


def parse(raw):
    lines = raw.decode("utf-8").splitlines()
    head = lines[0].split()
    frames = []
    for l in lines[1:]:
        fid, file, func, line, first, entry = l.split("\t")
        frames.append((int(fid), file, func, int(line), int(first), entry == "E"))
    return int(head[1]), int(head[3]), frames


def probe(max_frames=256, dll=None):
    buf = ctypes.create_string_buffer(1 << 16)
    r = (dll or lib).probe_stack(buf, len(buf), max_frames)  # @probe
    assert r == 0, "probe output too long"
    end, took, frames = parse(buf.value)
    ALL_IDS.update(f[0] for f in frames)
    return end, took, frames


def name(fn):
    return fn.__code__.co_qualname if V311 else fn.__code__.co_name


# ---- the chain f1 -> Chain.f2 -> f3 --------------------------------------------------------

def f3(dll=None):
    return probe(dll=dll)  # @f3


class Chain:
    @staticmethod
    def f2(dll=None):
        return f3(dll)  # @f2


def f1(dll=None):
    return Chain.f2(dll)  # @f1


def f3_except():
    try:
        raise ValueError("in the handler")
    except ValueError:
        return probe()  # @except


def f3_entry(_):
    return probe()  # @entry


def f2_map():
    return list(map(f3_entry, [0]))[0]  # @map


def ünï_π():
    return probe()  # @unicode


def expect(frames, want, what):
    """want: (function, line key, entry) innermost first, below probe()'s own frame."""
    want = [("probe", "probe", entry(False))] + want
    got = [(f[2], f[3], f[5]) for f in frames[:len(want)]]
    exp = [(fn, LINES[key], e) for fn, key, e in want]
    check(got == exp, f"{what}: frames {got} != {exp}")
    for f in frames[:len(want)]:
        check(f[1] == SRC, f"{what}: file {f[1]!r} != {SRC!r}")


def entry(flag):
    # 3.10 enters the evaluation loop for every frame; 3.11+ only where C called Python
    return True if not V311 else flag


def check_chain():
    end, took, frames = f1()  # @chain
    check(end == 0, f"chain: end {end} != 0 (DONE)")
    want = [(name(f3), "f3", entry(False)), (name(Chain.f2), "f2", entry(False)),
            (name(f1), "f1", entry(False))] + [
        (name(check_chain), "chain", entry(False)), ("main", "main", entry(False)),
        ("<module>", "module", True)]
    check(len(frames) == 1 + len(want), f"chain: {len(frames)} frames != 1 + {len(want)}")
    expect(frames, want, "chain")
    check(took == len(frames), f"chain: first sight took {took} entries != {len(frames)}")
    firsts = [f[4] for f in frames[1:4]]
    check(firsts == [f3.__code__.co_firstlineno, Chain.f2.__code__.co_firstlineno,
                     f1.__code__.co_firstlineno], f"chain: first lines {firsts}")
    return frames


def check_repeat():
    seen = None
    for i in range(3):
        end, took, frames = f1()  # @repeat
        ids = [f[0] for f in frames]
        if seen is None:
            seen = ids
        else:
            check(ids == seen, f"repeat {i}: ids {ids} != {seen}")
            check(took == 0, f"repeat {i}: took {took} new entries, want 0")


def check_gil_held():
    end, took, frames = f1(pylib)  # @gil
    check(end == 0, f"GIL held: end {end}")
    want = [(name(f3), "f3", entry(False)), (name(Chain.f2), "f2", entry(False)),
            (name(f1), "f1", entry(False)), (name(check_gil_held), "gil", entry(False))]
    expect(frames, want, "GIL held")
    check(len(frames) == 7, f"GIL held: {len(frames)} frames")


def check_except():
    end, took, frames = f3_except()  # @call_except
    want = [(name(f3_except), "except", entry(False)),
            (name(check_except), "call_except", entry(False))]
    check(end == 0 and len(frames) == 5, f"exception handler: end {end}, {len(frames)} frames")
    expect(frames, want, "exception handler")


def check_entry():
    end, took, frames = f2_map()  # @call_map
    want = [(name(f3_entry), "entry", True), (name(f2_map), "map", entry(False)),
            (name(check_entry), "call_map", entry(False))]
    check(end == 0 and len(frames) == 6, f"entry: end {end}, {len(frames)} frames")
    expect(frames, want, "entry from C (map)")


def check_unicode():
    end, took, frames = ünï_π()  # @call_unicode
    expect(frames, [(name(ünï_π), "unicode", entry(False))], "non-ASCII name")
    check(name(ünï_π) == "ünï_π", "the name is what the test means")


def check_depth():
    end, took, frames = f3_depth()  # @call_depth
    check(end == 1 and len(frames) == 3, f"depth 3: end {end} (want 1, DEPTH), {len(frames)} frames")
    expect(frames, [(name(f3_depth), "depth", entry(False)),
                    (name(check_depth), "call_depth", entry(False))], "depth 3")


def f3_depth():
    return probe(3)  # @depth


def check_thread():
    out = {}

    def target():
        out["r"] = f1()  # @thread

    t = threading.Thread(target=target)
    t.start()
    t.join()
    end, took, frames = out["r"]
    check(end == 0, f"thread: end {end}")
    want = [(name(f3), "f3", entry(False)), (name(Chain.f2), "f2", entry(False)),
            (name(f1), "f1", entry(False)),
            # Thread.run calls its target with f(*args, **kwargs): through C in 3.11, inlined
            # from 3.12 on (seen on 3.12.3)
            (name(target), "thread", entry(sys.version_info < (3, 12)))]
    expect(frames, want, "second thread")
    rest = frames[1 + len(want):]
    check([f[1] for f in rest] == [threading.__file__] * len(rest) and len(rest) == 3,
          f"thread: below the target, threading.py's run, _bootstrap_inner, _bootstrap: {rest}")
    check(rest and rest[-1][2] == name(threading.Thread._bootstrap) and rest[-1][5],
          f"thread: outermost frame {rest[-1:]} is Thread._bootstrap, an entry")


def check_native_thread():
    buf = ctypes.create_string_buffer(4096)
    check(lib.probe_stack_native_thread(buf, len(buf)) == 0, "native thread probe")
    end, took, frames = parse(buf.value)
    check(end == 4 and frames == [], f"non-Python thread: end {end} (want 4, NONE), {frames}")


def check_rewind(all_ids):
    lib.probe_rewind()
    end, took, frames = f1()  # @repeat2
    check(took == len(all_ids), f"rewind: took {took} entries, want every one so far: {len(all_ids)}")


# ---- line tables ---------------------------------------------------------------------------

def line_of(code, unit):
    t = code.co_linetable
    if V311:
        return lib.probe_line_311(t, len(t), code.co_firstlineno, unit)
    return lib.probe_line_310(t, len(t), code.co_firstlineno, unit * 2)


def codes_of(mod):
    def code(v):
        c = getattr(v, "__code__", None)
        return [c] if isinstance(c, types.CodeType) else []
    todo = [c for v in vars(mod).values() for c in code(v)]
    for cls in [v for v in vars(mod).values() if isinstance(v, type)]:
        todo += [c for v in vars(cls).values() for c in code(v)]
    seen = []
    while todo:
        c = todo.pop()
        seen.append(c)
        todo += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    return seen


def check_line_tables():
    import json.decoder, threading as th, dataclasses
    mods = [sys.modules[__name__], json.decoder, th, dataclasses]
    n = bad = 0
    for code in [c for m in mods for c in codes_of(m)]:
        for start, end, line in code.co_lines():
            for b in range(start, end, 2):
                n += 1
                got = line_of(code, b // 2)
                want = -1 if line is None else line
                if got != want:
                    bad += 1
                    if bad < 10:
                        print(f"line table: {code.co_qualname if V311 else code.co_name} "
                              f"unit {b // 2}: {got} != {want}")
    check(bad == 0 and n > 5000, f"line tables: {bad} of {n} instructions wrong")


def check_line_forms():
    # 3.10 pairs: 6 bytes line +1, 4 bytes no line, 2 bytes +2 (line goes on from before)
    t = bytes([6, 1, 4, 0x80, 2, 2])
    got = [lib.probe_line_310(t, len(t), 10, o) for o in (-2, 0, 5, 6, 9, 10, 11, 12)]
    check(got == [10, 11, 11, -1, -1, 13, 13, -1], f"3.10 table: {got}")
    # 3.11 entries: short (code 0, 2 units), one-line +2 (code 12, 1 unit), no columns -3
    # (code 13, svarint 7), long form +70 (code 14, svarint 140 = 2 groups), none (code 15)
    t = bytes([0x80 | 0 << 3 | 1, 5,
               0x80 | 12 << 3 | 0, 1, 2,
               0x80 | 13 << 3 | 0, 7,
               0x80 | 14 << 3 | 1, 0x40 | (140 & 63), 140 >> 6, 0, 1, 2,
               0x80 | 15 << 3 | 0])
    got = [lib.probe_line_311(t, len(t), 100, u) for u in range(-1, 8)]
    check(got == [100, 100, 100, 102, 99, 169, 169, -1, -1], f"3.11 table: {got}")
    # cut short inside an entry, and a byte where an entry's header should be
    check(lib.probe_line_311(t, 9, 100, 5) == -1, "3.11 table cut inside a varint")
    check(lib.probe_line_311(bytes([0x80, 5, 0x05]), 3, 1, 1) == -1, "3.11 table: no header")


def main():
    frames = check_chain()  # @main
    check_repeat()
    check_gil_held()
    check_except()
    check_entry()
    check_unicode()
    check_depth()
    check_thread()
    check_native_thread()
    check_line_forms()
    check_line_tables()
    check_rewind(ALL_IDS)
    notes = lib.probe_notes().decode()
    check(notes == "", f"a supported version gives no note: {notes!r}")


main()  # @module


def verdict():
    print(f"{passed} checks passed, {len(failures)} failed")
    if failures:
        raise Fail(f"{len(failures)} checks failed (above)")


run_main(verdict)
