#!/usr/bin/env python3
"""The tests' trace reader and writer (tests/lib/cuhooktest/traceformat.py) against
src/format/trace_format.h as the C compiler reads it (trace_constants, built by meson): every
constant, the file magic, every struct's size and every field's offset and size the same on both
sides, and nothing on one side only.

    test_trace_constants.py TRACE_CONSTANTS_EXE"""
import struct
import subprocess
import sys

from cuhooktest import Problems, run_main
from cuhooktest import traceformat as tf


def main():
    problems = Problems()
    out = subprocess.run([sys.argv[1]], capture_output=True, text=True, check=True, timeout=60).stdout
    consts, sizes, fields, magic = {}, {}, {}, None
    for line in out.splitlines():
        kind, *rest = line.split()
        if kind == "magic":
            magic = rest[0].encode()
        elif kind == "const":
            consts[rest[0]] = int(rest[1])
        elif kind == "size":
            sizes[rest[0]] = int(rest[1])
        elif kind == "field":
            fields[(rest[0], rest[1])] = (int(rest[2]), int(rest[3]))
    problems.check(magic == tf.TRACE_MAGIC, f"magic: header {magic!r}, Python {tf.TRACE_MAGIC!r}")
    for name in sorted(set(consts) | set(tf.CONSTANTS)):
        c, p = consts.get(name), tf.CONSTANTS.get(name)
        problems.check(c == p, f"CUHOOK_{name}: header {c}, Python {p}")
    py_fields = {(s, n): (tf.offset(s, n), struct.calcsize("<" + code))
                 for s, layout in tf.LAYOUTS.items() for n, code in layout}
    for s in sorted(set(sizes) | set(tf.LAYOUTS)):
        c, p = sizes.get(s), tf.size(s) if s in tf.LAYOUTS else None
        problems.check(c == p, f"sizeof(struct {s}): header {c}, Python {p}")
    for key in sorted(set(fields) | set(py_fields)):
        c, p = fields.get(key), py_fields.get(key)
        problems.check(c == p, f"struct {key[0]}.{key[1]} (offset, size): header {c}, Python {p}")
    problems.check(len(consts) >= 60 and len(fields) >= 100, f"only {len(consts)} constants and {len(fields)} "
                   "fields printed: the C side lost its list")
    print(f"{len(consts)} constants, {len(sizes)} structs, {len(fields)} fields compared")
    problems.exit()


if __name__ == "__main__":
    run_main(main)
