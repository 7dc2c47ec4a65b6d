#!/usr/bin/env python3
"""Tests of `cuhook report` on traces with call stacks (docs/report.md, "Call stacks").

    test_stacks.py --cuhook EXE --target STACK_TARGET [--fuzz FUZZ_READER] TEST

The traces are written by stacktrace.py; their native addresses point into STACK_TARGET
(stack_target.cc, built with -g -O0 and a build id), which prints where its known functions'
call sites are and on which line, so every frame's name, file and line is known exactly: the
function names and lines from the program itself, the source file's name as the DWARF of the
binary has it from binutils' addr2line (an independent reader). Exit 0 pass, 1 fail."""
import argparse
import json
import os
import struct
import subprocess
import sys

from cuhooktest import Fail, check, clean_env, eq, run_case
from cuhooktest import tracefile as tf
from cuhooktest import tracewriter as st
import perfetto_decode
import test_report as tr
from test_report import parse_protobuf

A = None
TMP = None

FORWARD, EVAL, INNER, OUTER, MAIN = range(5)
CUDART = "/nonexistent/cuhook-test/libcudart.so.12"
CUDART_START = 0x7f0000000000
ANON_START = 0x7e0000000000
F_ALLOC, F_LAUNCH, F_SYNC = 0, 1, 2
FUNCS = ["cuMemAlloc_v2", "cuLaunchKernel", "cuCtxSynchronize"]
PY = [(1, 12, 10, "/app/model.py", "forward"), (2, 3, 1, "/app/run.py", "<module>"),
      (3, 7, 7, "/app/x;y.py", "a;b\nc")]


def run(args, rc=0):
    """cuhook with args, its exit status checked (test_report.py's run): (stdout, stderr)."""
    tr.A = A
    return tr.run(args, rc)


def target():
    """What stack_target says about itself, with each site's source file from addr2line."""
    info = json.loads(subprocess.run([A.target], capture_output=True, check=True, timeout=30).stdout)
    for s in info["sites"]:
        p = subprocess.run(["addr2line", "-e", info["exe"], hex(s["pc"] - info["bias"])], capture_output=True,
                           text=True, check=True, timeout=30)
        src, _, line = p.stdout.strip().rpartition(":")
        eq(int(line.split()[0]), s["line"], f"addr2line's line of {s['func']} (the target's __LINE__)")
        s["file"] = src
        s["label"] = f"{s['func']} ({src}:{s['line']})"
        s["offset"] = s["pc"] - info["start"] + info["offset"]
    return info


def exe_map(info, build_id=None):
    bid = bytes.fromhex(info["build_id"]) if build_id is None else build_id
    return (info["start"], info["end"], info["offset"], info["inode"], info["exe"], bid)


def prologue(version=st.VERSION):
    """A trace's first blocks: libcuda, its functions FUNCS, thread 100 "main", a clock."""
    t = st.Trace(version=version)
    t.lib(0, "/usr/lib/x86_64-linux-gnu/libcuda.so.1")
    t.funcs(0, FUNCS)
    t.thread(100, "main")
    t.clock(0)
    return t


def scenario(info, path, version=st.VERSION):
    """The trace every test reads (see the expectations in test_folded)."""
    pc = [s["pc"] for s in info["sites"]]
    t = prologue(version)
    t.maps([exe_map(info), (CUDART_START, CUDART_START + 0x100000, 0, 77, CUDART, b""),
            (ANON_START, ANON_START + 0x10000, 0, 0, "", b"")])
    t.pyframes(PY)
    t.stacks([
        (1, [pc[FORWARD], pc[INNER], pc[OUTER], pc[MAIN]]),
        (2, [CUDART_START + 0x1234, pc[INNER], pc[MAIN]]),
        # one evaluation-loop frame, one activation: merged exactly
        (3, [pc[FORWARD], pc[EVAL], pc[MAIN]], [1, 2 | st.PYFRAME_ENTRY], st.END_DONE, st.END_DONE),
        # one loop frame, two activations: merged approximately
        (4, [pc[FORWARD], pc[EVAL], pc[MAIN]], [1 | st.PYFRAME_ENTRY, 2 | st.PYFRAME_ENTRY], st.END_DONE,
         st.END_DONE),
        (5, [ANON_START + 0x100, pc[MAIN]], [], st.END_NO_INFO),
        (6, [], [3 | st.PYFRAME_ENTRY], st.END_UNSUPPORTED, st.END_DONE),
    ])
    t.thread_events(100, [(F_ALLOC, 1000, 2000, 1), (F_ALLOC, 5000, 3000, 1), (F_ALLOC, 10000, 500, 2),
                          (F_LAUNCH, 20000, 100, 3), (F_LAUNCH, 21000, 200, 4), (F_LAUNCH, 22000, 300, 5),
                          (F_LAUNCH, 23000, 400, 6), (F_SYNC, 30000, 1000, None)])
    # the program was rebuilt since: the same path, another build id
    t.maps([exe_map(info, b"\x01" * 20)])
    t.stacks([(7, [pc[INNER], pc[MAIN]])])
    t.thread_events(100, [(F_ALLOC, 40000, 700, 7), (F_LAUNCH, 41000, 50, st.STACK_NONE)])
    t.end()
    t.write(path)
    return t


def expected_folded(info):
    s = info["sites"]
    lab = [x["label"] for x in s]
    exe = info["exe"]
    return sorted([
        f"main;{lab[MAIN]};{lab[OUTER]};{lab[INNER]};{lab[FORWARD]};cuMemAlloc_v2 5000",
        f"main;{lab[MAIN]};{lab[INNER]};[{CUDART}+0x1234];cuMemAlloc_v2 500",
        f"main;{lab[MAIN]};<module> (/app/run.py:3);forward (/app/model.py:12);{lab[FORWARD]};cuLaunchKernel 300",
        f"main;{lab[MAIN]};[anon:0x{ANON_START + 0x100:x}];cuLaunchKernel 300",
        "main;a:b?c (/app/x:y.py:7);cuLaunchKernel 400",
        "main;cuCtxSynchronize 1000",
        "main;cuLaunchKernel 50",
        f"main;[{exe}+0x{s[MAIN]['offset']:x}];[{exe}+0x{s[INNER]['offset']:x}];cuMemAlloc_v2 700",
    ])


def test_folded():
    info = target()
    path = os.path.join(TMP, "stacks.bin")
    scenario(info, path)
    out, _ = run(["report", "--format", "folded", path])
    eq(out.splitlines(), expected_folded(info), "folded lines")
    # version 5: STACK records after compact ENTRY5 records, the same stacks
    scenario(info, path, version=5)
    out, _ = run(["report", "--format", "folded", path])
    eq(out.splitlines(), expected_folded(info), "folded lines of the version 5 file")


def report_json(path):
    out, _ = run(["report", "--format", "json", path])
    return json.loads(out)


def test_json():
    info = target()
    s = info["sites"]
    path = os.path.join(TMP, "stacks.bin")
    scenario(info, path)
    j = report_json(path)
    eq([x["id"] for x in j["stacks"]], [1, 2, 3, 4, 5, 6, 7], "stack ids")
    eq(j["stack_records"], {"records": 9, "without_stack": 1}, "STACK records")
    frames1 = [{"kind": "native", "label": s[k]["label"], "function": s[k]["func"], "file": s[k]["file"],
                "line": s[k]["line"], "object": info["exe"], "pc": hex(s[k]["pc"]), "offset": hex(s[k]["offset"])}
               for k in (MAIN, OUTER, INNER, FORWARD)]
    eq(j["stacks"][0], {"id": 1, "native_end": "done", "python_end": "none", "approximate": False, "site": 3,
                        "frames": frames1}, "stack 1")
    f2 = j["stacks"][1]["frames"]
    eq(f2[2], {"kind": "native", "label": f"[{CUDART}+0x1234]", "function": None, "file": None, "line": None,
               "object": CUDART, "pc": hex(CUDART_START + 0x1234), "offset": "0x1234"}, "a frame of a missing file")
    eq(j["stacks"][1]["site"], 1, "stack 2's call site: the first frame outside the CUDA libraries")
    py_fwd = {"kind": "python", "label": "forward (/app/model.py:12)", "function": "forward",
              "file": "/app/model.py", "line": 12}
    py_mod = {"kind": "python", "label": "<module> (/app/run.py:3)", "function": "<module>", "file": "/app/run.py",
              "line": 3}
    for k, approx in ((2, False), (3, True)):
        x = j["stacks"][k]
        eq([f["label"] for f in x["frames"]], [s[MAIN]["label"], py_mod["label"], py_fwd["label"], s[FORWARD]["label"]],
           f"stack {k + 1}: merged frames")
        eq(x["frames"][1], py_mod, f"stack {k + 1}: a Python frame")
        eq((x["approximate"], x["site"]), (approx, 2), f"stack {k + 1}: approximate, site")
    eq(j["stacks"][4]["frames"][1], {"kind": "anon", "label": f"[anon:0x{ANON_START + 0x100:x}]", "function": None,
                                     "file": None, "line": None, "object": None, "pc": hex(ANON_START + 0x100)},
       "an anonymous mapping's frame")
    eq(j["stacks"][4]["native_end"], "no_info", "stack 5's end")
    eq([f["label"] for f in j["stacks"][6]["frames"]],
       [f"[{info['exe']}+0x{s[MAIN]['offset']:x}]", f"[{info['exe']}+0x{s[INNER]['offset']:x}]"],
       "another build id: no names")
    sites = {c["function"]: (c["calls"], [(x["site"], x["calls"], x["total_ns"]) for x in c["sites"]])
             for c in j["call_sites"]}
    eq(sites, {
        "cuMemAlloc_v2": (4, [(s[FORWARD]["label"], 2, 5000), (f"[{info['exe']}+0x{s[INNER]['offset']:x}]", 1, 700),
                              (s[INNER]["label"], 1, 500)]),
        "cuLaunchKernel": (4, [("forward (/app/model.py:12)", 2, 300), ("a;b?c (/app/x;y.py:7)", 1, 400),
                               (f"[anon:0x{ANON_START + 0x100:x}]", 1, 300)]),
    }, "call sites")
    eq([c["function"] for c in j["call_sites"]], ["cuLaunchKernel", "cuMemAlloc_v2"], "call sites: order")
    notes = j["stack_notes"]
    eq(len(notes), 3, f"stack notes {notes}")
    check(notes[0].startswith(CUDART + ": No such file or directory"), f"missing file note: {notes[0]}")
    check(notes[1].startswith(f"{info['exe']}: build id {info['build_id']}, the traced process had {'01' * 20}"),
          f"build id note: {notes[1]}")
    check(notes[2].startswith("1 stack: the Python frames did not pair"), f"approximate note: {notes[2]}")
    eq(j["errors"], 0, "errors")
    # jsonl: each call's stack id
    out, _ = run(["report", "--format", "jsonl", path])
    eq([c.get("stack", "absent") for c in map(json.loads, out.splitlines())],
       [1, 1, 2, 3, 4, 5, 6, None, 7, None], "jsonl stack ids")


def test_text():
    info = target()
    s = info["sites"]
    path = os.path.join(TMP, "stacks.bin")
    scenario(info, path)
    out, _ = run(["report", "--no-color", path])
    check("\nCall sites (" in out, "a Call sites section")
    sec = out.split("\nCall sites (", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    exe = info["exe"]
    want = [
        "  cuLaunchKernel: 4 calls with a stack, 3 call sites",
        "       Calls        Total  Call site",
        "           2       300 ns  forward (/app/model.py:12)",
        "           1       400 ns  a;b?c (/app/x;y.py:7)",
        f"           1       300 ns  [anon:0x{ANON_START + 0x100:x}]",
        "  cuMemAlloc_v2: 4 calls with a stack, 3 call sites",
        "       Calls        Total  Call site",
        f"           2     5.000 us  {s[FORWARD]['label']}",
        f"           1       700 ns  [{exe}+0x{s[INNER]['offset']:x}]",
        f"           1       500 ns  {s[INNER]['label']}",
        "  1 call recorded without a stack: the agent's stack table was full",
    ]
    eq(sec[:len(want)], want, "Call sites section")
    eq(len(sec), len(want) + 3, "Call sites section: 3 notes after it")
    # --functions selects the calls the sites count
    out, _ = run(["report", "--no-color", "--functions", "cuMemAlloc*", path])
    sec = out.split("\nCall sites (", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    eq(sec[0], "  cuMemAlloc_v2: 4 calls with a stack, 3 call sites", "Call sites with --functions")
    check(not any("cuLaunchKernel" in line for line in sec), "no cuLaunchKernel with --functions cuMemAlloc*")


def perfetto_stacks(path):
    """--format perfetto: [(slice name, the frames of its callstack, outermost first)] for the slices
    with a callstack_iid, each frame as (label, mapping path, rel_pc, source file, line, kind), each
    resolved through the interned data of the slice's own sequence; the decoded trace, and the
    mappings and strings of the sequences' interned data."""
    pf = os.path.join(TMP, "stacks.pftrace")
    run(["report", "--format", "perfetto", "-o", pf, "--force", path])
    t = perfetto_decode.load(pf)
    eq(t.errors, [], "what the Perfetto trace names but does not define")
    out, mappings, strings = [], {}, {}
    for e in t.events:
        if e["callstack"] is None:
            continue
        i = e["interned"]
        for kind in (5, 16, 17, 18):
            strings.update({(kind, iid): g[2][0] for iid, g in i.get(kind, {}).items()})
        mappings.update(i.get(19, {}))

        def frame(iid):
            g = i[6][iid]
            mp = i[19][g[3][0]] if 3 in g else None
            return (i[5][g[2][0]][2][0].decode(),
                    i[17][mp[7][0]][2][0].decode() if mp else None, g[4][0] if mp else None,
                    i[18][g[5][0]][2][0].decode() if 5 in g else None, g[6][0] if 6 in g else None, g[7][0])
        out.append((e["name"], [frame(f) for f in i[7][e["callstack"]].get(2, [])]))
    return out, t, mappings, strings


def test_perfetto():
    info = target()
    s = info["sites"]
    path = os.path.join(TMP, "stacks.bin")
    scenario(info, path)
    slices, t, mappings, strings = perfetto_stacks(path)
    exe, rel = info["exe"], lambda k: s[k]["pc"] - info["start"]

    def nat(k):
        return (s[k]["label"], exe, rel(k), s[k]["file"], s[k]["line"], 1)
    fwd = ("forward (/app/model.py:12)", None, None, "/app/model.py", 12, 3)
    mod = ("<module> (/app/run.py:3)", None, None, "/app/run.py", 3, 3)
    eq([x[0] for x in slices], ["cuMemAlloc_v2"] * 3 + ["cuLaunchKernel"] * 4 + ["cuMemAlloc_v2"],
       "slices with a callstack")
    eq(slices[0][1], [nat(MAIN), nat(OUTER), nat(INNER), nat(FORWARD)], "cuMemAlloc_v2's callstack")
    eq(slices[1][1], slices[0][1], "the second call of the same stack")
    eq(slices[2][1], [nat(MAIN), nat(INNER), (f"[{CUDART}+0x1234]", CUDART, 0x1234, None, None, 1)],
       "a frame of a missing file")
    eq(slices[3][1], [nat(MAIN), mod, fwd, nat(FORWARD)], "Python frames merged")
    eq(slices[5][1], [nat(MAIN), (f"[anon:0x{ANON_START + 0x100:x}]", None, None, None, None, 4)], "JIT frame")
    eq(slices[6][1], [("a;b?c (/app/x;y.py:7)", None, None, "/app/x;y.py", 7, 3)], "Python only")
    eq(slices[7][1][1][:3], (f"[{exe}+0x{s[INNER]['offset']:x}]", exe, rel(INNER)), "another build id")
    exe_maps = [m for m in mappings.values() if strings[(17, m[7][0])].decode() == exe]
    eq(sorted(strings[(16, m[2][0])].hex() for m in exe_maps), sorted([info["build_id"], "01" * 20]),
       "the executable's mappings' build ids")
    seqs = {e["seq"] for e in t.events if e["callstack"] is not None}
    eq(sorted((q, f) for q, f, kinds in t.interned_packets if 7 in kinds), sorted((q, 2) for q in seqs),
       "the stacks interned once in each sequence that uses them, needing its incremental state")
    eq(len([e for e in t.events if e["callstack"] is not None]), 8, "8 events with a callstack")


def test_chrome():
    """Chrome JSON: a stacked call's "sf" names its innermost frame in "stackFrames", whose
    parents lead to the outermost."""
    info = target()
    path = os.path.join(TMP, "stacks.bin")
    scenario(info, path)
    out, _ = run(["report", "--format", "chrome", path])
    j = json.loads(out)
    frames = j["stackFrames"]

    def chain(sf):
        names = []
        while sf is not None:
            names.append(frames[sf]["name"])
            sf = frames[sf].get("parent")
        return ";".join(reversed(names))
    calls = [e for e in j["traceEvents"] if e.get("ph") in ("B", "i")]
    got = sorted(f"main;{chain(e['sf'])};{e['name']}" if "sf" in e else f"main;{e['name']}" for e in calls)
    # the folded export's lines, without the time and with its ';' escape undone
    want = sorted(line.rsplit(" ", 1)[0] for line in expected_folded(info) for _ in range(folded_calls(line)))
    want = [w.replace("a:b?c (/app/x:y.py:7)", "a;b?c (/app/x;y.py:7)") for w in want]
    eq(sorted(got), sorted(want), "chrome: each call's stack through stackFrames")


def folded_calls(line):
    """Calls behind one line of expected_folded: stack 1's two, and stacks 3 and 4 merged alike."""
    return 2 if line.endswith("cuMemAlloc_v2 5000") or "<module>" in line else 1


def test_e2e():
    """A real trace: cuhook run --stacks cuMemAlloc_v2 of tests/targets/stack_chain (main -> outer
    -> middle -> inner -> cuMemAlloc_v2 through the stand-in libcuda), its folded export exact:
    each frame as tests/lib/cuhooktest/tracefile.py names its function from the ELF symbols, with the
    file:line binutils' addr2line gives in the program itself, "[path+0xoffset]" where no symbol
    holds the address; the value the function's total time."""
    trace = os.path.join(TMP, "chain.bin")
    p = subprocess.run([A.cuhook, "run", "--agent", A.agent, "--stacks", "cuMemAlloc_v2", "-o", trace, "--", A.chain,
                        A.lib, "chain", "3"], capture_output=True, text=True, env=clean_env(), timeout=120)
    eq(p.returncode, 0, f"cuhook run --stacks (stderr {p.stderr[-2000:]})")
    t = tf.read_trace(trace)
    sids = {sid for _, name, sid in t.entry_stacks if name == "cuMemAlloc_v2"}
    eq(len([1 for _, name, _ in t.entry_stacks if name == "cuMemAlloc_v2"]), 3, "cuMemAlloc_v2 calls")
    eq(len(sids), 1, "one stack for the three calls from one place")
    stack = t.stacks[sids.pop()]
    labels = []
    for pc in reversed(stack.native):
        m = next(m for m in t.maps_blocks[stack.maps] if m.start <= pc < m.end)
        name = tf.symbolize(t, stack, pc)
        off = pc - m.start + m.offset
        if name and os.path.realpath(m.path) == os.path.realpath(A.chain):
            a2l = subprocess.run(["addr2line", "-e", m.path, hex(off - exe_load_delta(m.path, off))],
                                 capture_output=True, text=True, check=True, timeout=30).stdout.strip()
            where = a2l.split(" ")[0]
            # no line information (crt1's _start): the name alone
            labels.append(name if where.startswith("??") or where.endswith(":?") else f"{name} ({where})")
        else:
            labels.append(name if name else f"[{m.path}+0x{off:x}]")
    names = [x.split(" (")[0] for x in labels]
    i = names.index("main")
    eq(names[i:], ["main", "outer", "middle", "inner"], "the chain, outermost first")
    j = report_json(trace)
    total = next(f["total_ns"] for f in j["functions"] if f["name"] == "cuMemAlloc_v2")
    out, _ = run(["report", "--format", "folded", trace])
    lines = [x for x in out.splitlines() if "cuMemAlloc_v2" in x]
    eq(len(lines), 1, f"one folded line of cuMemAlloc_v2: {lines}")
    head = lines[0].split(";", 1)[0]
    eq(lines[0], f"{head};{';'.join(labels)};cuMemAlloc_v2 {total}", "the folded line of the stacked calls")
    eq(head, "stack_chain", "the thread")
    for x in out.splitlines():
        if "cuMemAlloc_v2" not in x:
            eq(x.count(";"), 1, f"an unstacked call's line has no frames: {x}")
    out, _ = run(["report", "--no-color", trace])
    sec = out.split("\nCall sites (", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    eq(sec[:3], ["  cuMemAlloc_v2: 3 calls with a stack, 1 call site", "       Calls        Total  Call site",
                 f"           3 {sec[2][13:25]}  {labels[-1]}"], "the Call sites section: inner's line")
    for fmt in ("json", "jsonl", "csv", "chrome", "perfetto"):
        run(["report", "--format", fmt, "-o", os.path.join(TMP, "out." + fmt), trace])


def exe_load_delta(path, off):
    """file offset - ELF address of the PT_LOAD segment holding off (addr2line wants addresses)."""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True, check=True, timeout=30).stdout
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            p_off, p_vaddr, p_filesz = int(f[1], 16), int(f[2], 16), int(f[4], 16)
            if p_off <= off < p_off + p_filesz:
                return p_off - p_vaddr
    raise Fail(f"{path}: no PT_LOAD holds offset 0x{off:x}")


def damaged(info, kind):
    """The scenario's first blocks, then one kind of damage."""
    pc = [x["pc"] for x in info["sites"]]
    t = prologue()
    # empty_maps: a MAPS block listing no mapping (the reader's map table stays empty: UBSan
    # once caught an offset taken from its NULL pointer)
    t.maps([] if kind == "empty_maps" else [exe_map(info)])
    t.pyframes(PY[:2])
    t.stacks([(1, [pc[INNER], pc[MAIN]])])
    if kind == "unknown_stack":
        t.thread_events(100, [(F_ALLOC, 1000, 10, 99)])
    elif kind == "twice":
        t.stacks([(1, [pc[OUTER], pc[MAIN]]), (2, [pc[MAIN]])])
        t.thread_events(100, [(F_ALLOC, 1000, 10, 1), (F_ALLOC, 2000, 10, 2)])
    elif kind == "same_twice":  # what a new file's re-emission looks like: no error
        t.stacks([(1, [pc[INNER], pc[MAIN]])])
        t.thread_events(100, [(F_ALLOC, 1000, 10, 1)])
    elif kind == "unknown_pyframe":
        t.stacks([(2, [pc[MAIN]], [5 | st.PYFRAME_ENTRY])])
        t.thread_events(100, [(F_ALLOC, 1000, 10, 2)])
    elif kind == "sizes":
        e = bytearray(st.Trace.stack_entry(2, [pc[MAIN]]))
        struct.pack_into("<H", e, 8, 9)  # nnative 9: more than its size holds
        t.block(st.STACKS, struct.pack("<II", 2, 0) + bytes(e) + st.Trace.stack_entry(3, [pc[MAIN]]))
        t.thread_events(100, [(F_ALLOC, 1000, 10, 1)])
    elif kind == "empty_maps":  # the stacks' addresses are in no mapping: kept, not symbolized
        t.thread_events(100, [(F_ALLOC, 1000, 10, 1)])
    elif kind == "stray":  # a STACK record that follows no ENTRY
        t.block(st.EVENTS, struct.pack("<II", 100, 1) + struct.pack("<BBHIII", st.REC_STACK, 0, 16, 0, 1, 0))
    t.end()
    return t


def test_damage():
    info = target()
    path = os.path.join(TMP, "damaged.bin")
    cases = {
        "unknown_stack": (1, "STACK record of cuMemAlloc_v2 names stack id 99, which no STACKS block before it "
                             "defined"),
        "twice": (1, "stack id 1 defined twice differently"),
        "same_twice": (0, None),
        "empty_maps": (0, None),
        # the stack is skipped, so the STACK record naming it is an error too
        "unknown_pyframe": (2, "stack id 2 names Python frame id 5, which no PYFRAMES entry before it defined"),
        "sizes": (1, "entry 0 of 2 does not fit (sizes do not add up)"),
        "stray": (1, "STACK record (tid 100, function id 0) not right after its call's ENTRY"),
    }
    for kind, (nerr, msg) in cases.items():
        damaged(info, kind).write(path)
        j = report_json(path)
        eq(j["errors"], nerr, f"{kind}: errors")
        if msg:
            check(any(msg in m for m in j["error_messages"]), f"{kind}: message {msg!r} in {j['error_messages']}")
        run(["report", "--strict", path], rc=3 if nerr else 0)
    # the call keeps its first stack; the redefinition does not replace it
    damaged(info, "twice").write(path)
    j = report_json(path)
    eq([len(x["frames"]) for x in j["stacks"]], [2, 1], "twice: stack 1 as first defined, stack 2")
    # cut anywhere inside the stack blocks: a readable prefix, never a crash
    scenario(info, path)
    data = open(path, "rb").read()
    header_size = struct.unpack_from("<I", data, 12)[0]  # a cut header is refused (exit 1): cut after it
    for cut in range(len(data) - 1, header_size, -37):
        with open(path, "wb") as f:
            f.write(data[:cut])
        run(["report", "--format", "folded", path])


def test_fuzz():
    """fuzz_reader mutates traces with every stack block as seeds (under ASan/UBSan)."""
    info = target()
    seeds = [os.path.join(TMP, "seed-stacks.bin"), os.path.join(TMP, "seed-twice.bin"),
             os.path.join(TMP, "seed-empty-maps.bin")]
    scenario(info, seeds[0])
    damaged(info, "twice").write(seeds[1])
    damaged(info, "empty_maps").write(seeds[2])
    p = subprocess.run([A.fuzz, "--iterations", os.environ.get("CUHOOK_FUZZ_ITERATIONS", "1000")] + seeds,
                       capture_output=True, timeout=280)
    sys.stdout.write(p.stdout.decode())
    if p.returncode:
        raise Fail(f"fuzz_reader failed (status {p.returncode}):\n{p.stderr.decode()[-4000:]}")


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--fuzz")
    ap.add_argument("--agent")
    ap.add_argument("--lib", help="the stand-in libcuda (e2e)")
    ap.add_argument("--chain", help="tests/targets/stack_chain (e2e)")
    ap.add_argument("test")
    A = ap.parse_args()
    run_case(globals(), "test_", A.test, "cuhook-stacks-test-")

if __name__ == "__main__":
    main()
