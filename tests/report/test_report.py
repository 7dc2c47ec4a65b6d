#!/usr/bin/env python3
"""Tests of `cuhook report` on synthetic traces with exactly known content (gen_trace.c).

    test_report.py --cuhook EXE --gen GEN_TRACE --fuzz FUZZ_READER --bench BENCH_READER TEST

TEST is one of the functions below named test_TEST (tests/report/meson.build lists those run).
Every test asserts exact values: a wrong count, total, argument or exit status fails it. Exit
status and last line as every Python test's (cuhooktest.run_main).
"""
import argparse
import json
import os
import random
import re
import resource
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import time

import perfetto_decode
from cuhooktest import Fail, check, eq, run_case
from cuhooktest import tracefile as tf
from cuhooktest.traceformat import (
    BLOCK_COUNTS, BLOCK_EVENTS, BLOCK_GPU, BLOCK_GPU_SESSION, BLOCK_HEADER_SIZE, BLOCK_MAGIC, FILE_HEADER_SIZE,
    REC5_ENTRY, REC5_ENTRY_X, REC5_EXIT, REC5_EXIT_VALUE, REC5_EXIT_ZERO, REC5_EXIT_ZERO_VALUE, REC5_TIME, REC_DATA,
    REC_DROP, LAYOUTS, fmt, offset, unpack)

A = None          # parsed arguments
TMP = None        # scratch directory

MiB = 1 << 20
HEADER_AT = {name: offset("cuhook_file_header", name) for name, _ in LAYOUTS["cuhook_file_header"]}

# What scenario_basic() in gen_trace.c writes (the generator's --expect file says the same; the
# constants here keep the test independent of the generator's own bookkeeping).
BASIC_CALLS = {
    "cuInit": (1, 100000), "cuDriverGetVersion": (1, 500), "cuDeviceGet": (1, 300),
    "cuCtxCreate_v2": (1, 100000), "cuModuleLoad": (1, 500000), "cuModuleGetFunction": (1, 1000),
    "cuMemAlloc_v2": (3, 6000), "cuMemcpyHtoD_v2": (2, 100000), "cuLaunchKernel": (4, 20000),
    "cuGetProcAddress_v2": (1, 1000), "cuCtxSynchronize": (1, 1000000), "cuMemcpyDtoH_v2": (1, 100000),
    "cuMemFree_v2": (3, 9000), "cuModuleUnload": (1, 4000), "cuCtxDestroy_v2": (1, 50000),
    "cuStreamSynchronize": (3, 50000), "cuStreamQuery": (1, 700),
}
BASIC_REFUSED = [
    {"name": "cuGetErrorString", "reason": "too small for a 5-byte jump", "status": 1},
    {"name": "cuProfilerStart", "reason": "undecodable instruction", "status": 2},
    {"name": "cuMemcpy2D_v2", "reason": "a branch targets the overwritten bytes", "status": 3},
]


def run(args, rc=0, env=None):
    """Run cuhook with args; check the exit status; return (stdout, stderr)."""
    e = dict(os.environ, TZ="UTC")
    e.pop("NO_COLOR", None)
    if env:
        e.update(env)
    p = subprocess.run([A.cuhook] + args, capture_output=True, env=e, timeout=120)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    if p.returncode < 0 or p.returncode >= 128:
        raise Fail(f"cuhook {' '.join(args)} crashed (status {p.returncode}):\n{err}")
    if rc is not None and p.returncode != rc:
        raise Fail(f"cuhook {' '.join(args)}: exit status {p.returncode}, want {rc}\nstderr: {err}\nstdout: {out[:2000]}")
    return out, err


def gen(name, *opts, expect=False):
    path = os.path.join(TMP, name + ".bin")
    cmd = [A.gen, opts[0] if opts else "basic", path] + list(opts[1:])
    if expect:
        cmd += ["--expect", path + ".expect"]
    subprocess.run(cmd, check=True)
    if expect:
        with open(path + ".expect") as f:
            return path, json.load(f)
    return path


def report_json(path, *opts, rc=0):
    out, err = run(["report", "--format", "json", *opts, path], rc=rc)
    try:
        return json.loads(out), err
    except json.JSONDecodeError as e:
        raise Fail(f"--format json output does not parse: {e}\n{out[:2000]}")


def report_csv(path, *opts):
    out, _ = run(["report", "--format", "csv", *opts, path])
    lines = out.splitlines()
    eq(lines[0], "tid,func,start_ns,end_ns,dur_ns,depth,ret,arg0,arg1,arg2,arg3,arg4,arg5,"
                 "stack0,stack1,stack2,stack3,stack4,stack5,decoded,category,thread,kernel,start_realtime_ns,call_device",
       "CSV header")
    rows = [ln.split(",") for ln in lines[1:]]
    for r in rows:
        eq(len(r), 25, f"CSV columns in {r}")
    return rows


def funcs_by_name(j):
    return {f["name"]: f for f in j["functions"]}

# ---- tests -------------------------------------------------------------------------------------


def test_basic_text():
    path = gen("basic")
    out, err = run(["report", "--no-color", path])
    eq(err, "", "stderr of a clean report")
    for want in ["cuhook report: " + path,
                 "  program    ./infer --model resnet50.onnx",
                 "  executable /opt/app/infer",
                 "  pid        4242 (parent 1)",
                 "  started    2023-11-14 22:13:20",
                 "  duration   3.250 ms",
                 "  driver     /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04 (580.159.04)",
                 "  functions  17 traced, 3 not traced",
                 "  threads    2: 1000 main, 1001 worker",
                 "  events     53 (27 calls)",
                 "  truncated  no"]:
        check(want in out.splitlines(), f"header line {want!r} missing:\n{out}")
    check(re.search(r"^  dropped    5 ", out, re.M), "dropped 5 missing")
    check("\033[" not in out, "--no-color output has escape sequences")
    # The summary: sorted by total time, scaled units, every number exact.
    rows = re.findall(r"^ +(\d+\.\d) +(\S+ \S+) +(\d+) +(\S+ \S+) +(\S+ \S+) +(\S+ \S+) +(\S+ \S+) +(\S+ \S+)  (\S+)",
                      out, re.M)
    eq(len(rows), 17, "summary rows")
    eq(rows[0], ("49.0", "1.000 ms", "1", "1.000 ms", "1.000 ms", "1.000 ms", "1.000 ms", "0 ns", "cuCtxSynchronize"),
       "first summary row")
    ss = [r for r in rows if r[8] == "cuStreamSynchronize"][0]
    eq(ss, ("2.4", "50.000 us", "3", "25.000 us", "25.000 us", "20.000 us", "30.000 us", "7.071 us",
            "cuStreamSynchronize"), "cuStreamSynchronize row")
    eq(rows[-1][8], "cuDeviceGet", "last summary row")
    totals = [r[1] for r in rows]
    check("1 without exit" in out, "entry-only call not flagged in the summary")
    check("(1 failed)" in out, "failing cuStreamQuery not flagged")
    # Aligned: every row of the table has the Name column at the same offset.
    table = [ln for ln in out.splitlines() if re.match(r"^ +\d+\.\d +\S+ \S+ +\d+ ", ln)]
    offs = {ln.index("cu") for ln in table}
    eq(len(offs), 1, f"Name column aligned ({offs})")
    del totals
    # Functions not traced: the three refused driver functions, not the internal dlopen hook.
    check("3 functions of the driver could not be patched or were excluded" in out, "refused count")
    for r in BASIC_REFUSED:
        check(re.search(rf"^ +1  {re.escape(r['reason'])}: {r['name']}$", out, re.M), f"refused {r['name']}")
    check("dlopen" not in out, "internal hook listed as refused")


def test_json():
    path, exp = gen("basic", "basic", expect=True)
    j, _ = report_json(path)
    eq(j["events"], 53, "events")
    eq(j["events"], exp["events"], "events vs generator")
    eq(j["calls"], 27, "calls")
    eq(j["dropped"], 5, "dropped")
    eq(j["truncated"], False, "truncated")
    eq(j["complete"], True, "complete")
    eq(j["errors"], 0, "errors")
    eq(j["pid"], 4242, "pid")
    eq(j["cmdline"], "./infer --model resnet50.onnx", "cmdline")
    eq(j["duration_ns"], 3250000, "duration_ns")
    eq([(t["tid"], t["name"], t["calls"], t["dropped"]) for t in j["threads"]],
       [(1000, "main", 23, 0), (1001, "worker", 4, 5)], "threads")
    f = funcs_by_name(j)
    eq(sorted(f), sorted(BASIC_CALLS), "function names")
    for name, (calls, total) in BASIC_CALLS.items():
        eq((f[name]["calls"], f[name]["total_ns"]), (calls, total), name)
        eq((f[name]["calls"], f[name]["timed_calls"], f[name]["total_ns"]),
           (exp["functions"][name]["calls"], exp["functions"][name]["timed_calls"],
            exp["functions"][name]["total_ns"]), name + " vs generator")
    s = f["cuStreamSynchronize"]
    eq((s["timed_calls"], s["avg_ns"], s["med_ns"], s["min_ns"], s["max_ns"], s["stddev_ns"]),
       (2, 25000.0, 25000.0, 20000, 30000, 7071.1), "cuStreamSynchronize stats")
    eq(f["cuStreamQuery"]["failed"], 1, "failed cuStreamQuery")
    eq(f["cuLaunchKernel"]["category"], "launch", "category of cuLaunchKernel")
    eq([x["name"] for x in j["functions"]][:3], ["cuCtxSynchronize", "cuModuleLoad", "cuCtxCreate_v2"],
       "sorted by total time")
    eq(j["refused"], BASIC_REFUSED, "refused")
    eq([lib["path"] for lib in j["libraries"]],
       ["/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04", "/usr/lib/x86_64-linux-gnu/libc.so.6"], "libraries")
    # The analysis sections.
    cats = {c["name"]: c for c in j["categories"]}
    eq((cats["launch"]["calls"], cats["launch"]["total_ns"]), (4, 20000), "launch category (outermost calls)")
    eq((cats["sync"]["calls"], cats["sync"]["total_ns"]), (5, 1050700), "sync category")
    eq((cats["transfer"]["calls"], cats["transfer"]["total_ns"]), (3, 200000), "transfer category")
    eq((cats["init"]["calls"], cats["init"]["total_ns"]), (3, 100800), "init category")
    tr = {t["direction"]: t for t in j["transfers"]}
    eq((tr["H2D"]["calls"], tr["H2D"]["bytes"], tr["H2D"]["total_ns"]), (2, 2 * MiB, 100000), "H2D")
    eq(tr["H2D"]["gb_per_s"], round(2 * MiB / 100000, 3), "H2D GB/s")
    eq((tr["D2H"]["calls"], tr["D2H"]["bytes"]), (1, MiB), "D2H")
    top = j["slowest_calls"]
    eq(len(top), 10, "slowest calls (default --top 10)")
    eq((top[0]["name"], top[0]["dur_ns"], top[0]["tid"]), ("cuCtxSynchronize", 1000000, 1000), "slowest call")
    launch = [c for c in top if c["name"] == "cuLaunchKernel"]
    eq(launch, [], "launches are not among the 10 slowest")
    j5, _ = report_json(path, "--top", "30")
    l0 = [c for c in j5["slowest_calls"] if c["name"] == "cuLaunchKernel"][0]
    eq(l0["details"], "vecAdd grid (256,1,1) block (128,1,1) smem 0 stream 0x0", "launch details")
    alloc = [c for c in j5["slowest_calls"] if c["name"] == "cuMemAlloc_v2"][0]
    eq(alloc["details"], "1.00 MiB -> 0x7f0000000000", "alloc details")
    eq(j["gaps"]["submissions"], 7, "GPU submissions")
    eq((j["gaps"]["count"], j["gaps"]["total_ns"], j["gaps"]["max_ns"], j["gaps"]["median_ns"]),
       (6, 1780000, 1295000, 95000), "gaps")
    eq(j["nesting"], [{"parent": "cuLaunchKernel", "child": "cuGetProcAddress_v2", "count": 1, "child_total_ns": 1000}],
       "nesting")
    check(isinstance(j["findings"], list) and all("text" in x for x in j["findings"]), "findings")


def test_csv():
    path, exp = gen("basic", "basic", expect=True)
    rows = report_csv(path)
    eq(len(rows), 27, "CSV rows == calls")
    eq(len(rows), exp["csv_rows"], "CSV rows vs generator")
    starts = [int(r[2]) for r in rows]
    eq(starts, sorted(starts), "rows in start order")
    eq(rows[0], ["1000", "cuInit", "1000", "101000", "100000", "0", "0x0"] + ["0x0"] * 6 + [""] * 6 + [""] +
       ["init", "main", "", "1700000000000001000", ""], "cuInit row: its call_device empty (none)")
    l0 = [r for r in rows if r[1] == "cuLaunchKernel"][0]
    eq(l0, ["1000", "cuLaunchKernel", "1200000", "1205000", "5000", "0", "0x0",
            "0xf00d", "0x100", "0x1", "0x1", "0x80", "0x1", "0x1", "0x0", "0x0", "0x5000", "0x0", "", "",
            "launch", "main", "vecAdd", "1700000000001200000", "0"],
       "cuLaunchKernel row (stack args; device 0: the context cuCtxCreate_v2 made)")
    gf = [r for r in rows if r[1] == "cuModuleGetFunction"][0]
    eq(gf[19], "name=vecAdd;function=0xf00d", "decoded cuModuleGetFunction")
    eq([r[19] for r in rows if r[1] == "cuMemAlloc_v2"],
       ["dptr=0x7f0000000000", "dptr=0x7f0000100000", "dptr=0x7f0000200000"], "decoded allocations")
    eq([r for r in rows if r[1] == "cuModuleLoad"][0][19], "path=/tmp/k.cubin;module=0x1000", "decoded load")
    gpa = [r for r in rows if r[1] == "cuGetProcAddress_v2"][0]
    eq((gpa[2], gpa[3], gpa[5], gpa[19]), ("1301000", "1302000", "1", "symbol=cuLaunchKernel;pfn=0xabc"),
       "nested call")
    eo = [r for r in rows if r[1] == "cuStreamSynchronize" and r[3] == ""]
    eq(len(eo), 1, "one entry-only call")
    eq(eo[0][:8], ["1001", "cuStreamSynchronize", "1650000", "", "", "0", "", "0x5"], "entry-only row")
    q = [r for r in rows if r[1] == "cuStreamQuery"][0]
    eq(q[6], "0x258", "return value 600")
    # -o writes the same thing to a file
    out = os.path.join(TMP, "basic.csv")
    o, _ = run(["report", "--format", "csv", "-o", out, path])
    eq(o, "", "stdout with -o")
    with open(out) as f:
        eq(len(f.read().splitlines()), 28, "rows in the -o file")


def test_csv_columns():
    """The CSV's category, thread, kernel and start_realtime_ns columns; integer columns hold
    integers or nothing, also for calls without an EXIT (an entry-only call, calls a cut trace
    left unfinished): never a float such as 12.0, which a reader takes a whole column to be."""
    import csv
    import io
    path = gen("basic")
    j, _ = report_json(path)
    cats = {f["name"]: f["category"] for f in j["functions"]}
    rows = list(csv.DictReader(io.StringIO(run(["report", "--format", "csv", path])[0])))
    eq(len(rows), 27, "rows")
    eq([r["category"] for r in rows], [cats[r["func"]] for r in rows], "category: the function's, as json's")
    eq({(r["tid"], r["thread"]) for r in rows}, {("1000", "main"), ("1001", "worker")}, "thread names")
    eq([(r["func"], r["kernel"]) for r in rows if r["kernel"]], [("cuLaunchKernel", "vecAdd")] * 4,
       "kernel: the launches' kernel name")
    eq([int(r["start_realtime_ns"]) - int(r["start_ns"]) for r in rows], [1700000000000000000] * 27,
       "start_realtime_ns: the header's realtime at the start plus start_ns")
    # a trace whose last call never returned (the program killed in it), besides the entry-only call
    unf = gen("unfinished", "basic", "--no-end", "--unfinished")
    rows = list(csv.DictReader(io.StringIO(run(["report", "--format", "csv", unf])[0])))
    jl = [json.loads(ln) for ln in run(["report", "--format", "jsonl", unf])[0].splitlines()]
    eq(len(rows), len(jl), "rows of the unfinished trace")
    eq([(r["func"], r["end_ns"], r["dur_ns"], r["ret"]) for r in rows if r["end_ns"] == ""],
       [("cuStreamSynchronize", "", "", ""), ("cuCtxDestroy_v2", "", "", "")], "the calls without an EXIT")
    for r, x in zip(rows, jl):
        for c in ["tid", "start_ns", "end_ns", "dur_ns", "depth", "start_realtime_ns"]:
            check(re.fullmatch(r"-?[0-9]+", r[c]) or (r[c] == "" and c in ("end_ns", "dur_ns")),
                  f"{c} = {r[c]!r}: an integer or nothing, in {r}")
        check(re.fullmatch(r"0x[0-9a-f]+|", r["ret"]), f"ret {r['ret']!r}")
        eq(r["end_ns"] == "", x["end_ns"] is None, "no end exactly for the calls without an EXIT")
    eq([int(r["dur_ns"]) for r in rows if r["dur_ns"]], [x["dur_ns"] for x in jl if x["dur_ns"] is not None],
       "durations, integers as jsonl's")



# cuda.h's parameter counts of the basic scenario's functions (gen_trace --agent-regs).
BASIC_NREGS = {"cuInit": 1, "cuDriverGetVersion": 1, "cuDeviceGet": 2, "cuCtxCreate_v2": 3, "cuModuleLoad": 2,
               "cuModuleGetFunction": 3, "cuMemAlloc_v2": 2, "cuMemcpyHtoD_v2": 3, "cuCtxSynchronize": 0,
               "cuMemcpyDtoH_v2": 3, "cuMemFree_v2": 1, "cuModuleUnload": 1, "cuCtxDestroy_v2": 1,
               "cuStreamSynchronize": 1, "cuGetProcAddress_v2": 5, "cuStreamQuery": 1}


def test_arg_registers():
    """Version 4: an ENTRY carries only the argument registers its function takes. The report
    shows those (CSV: the others empty; jsonl: that many args) and describes every call as it
    does from six registers; a version 3 file whose reserved byte holds garbage (where
    regs_omitted is now) is read with all six."""
    six_path = gen("six", "basic")
    short_path = gen("short", "basic", "--agent-regs")
    v3_path = gen("v3", "basic", "--v3-reserved")
    six, short, v3 = report_csv(six_path), report_csv(short_path), report_csv(v3_path)
    eq(v3, six, "CSV of a version 3 file with a non-zero reserved byte")
    eq(len(short), len(six), "CSV rows")
    shortened = 0
    for a, b in zip(six, short):
        n = 6 if a[13] != "" else BASIC_NREGS.get(a[1], 6)  # stack slots: all six registers
        want = a[:7] + a[7:7 + n] + [""] * (6 - n) + a[13:]
        eq(b, want, f"{a[1]} row with {n} registers")
        shortened += n < 6
    check(shortened >= 20, f"only {shortened} rows had fewer than six registers")
    def text(path):  # without the first line, which names the file
        return run(["report", "--no-color", path])[0].split("\n", 1)[1]
    eq(text(short_path), text(six_path), "text report from short ENTRY records")
    rows = [json.loads(ln) for ln in run(["report", "--format", "jsonl", short_path])[0].splitlines()]
    calls = [r for r in rows if "func" in r]
    eq(len(calls), len(six), "jsonl calls")
    for c in calls:
        want = 11 if c["func"] == "cuLaunchKernel" else BASIC_NREGS.get(c["func"], 6)
        eq(len(c["args"]), want, f"jsonl args of {c['func']}")
    eq(text(v3_path), text(six_path), "text report of the version 3 file")


def same_as_monotonic(path):
    ref = gen("ref")
    j, _ = report_json(path)
    r, _ = report_json(ref)
    for k in ["functions", "events", "calls", "dropped", "duration_ns", "categories", "transfers", "stages", "gaps"]:
        eq(j[k], r[k], f"{k} with a TSC clock")
    eq(report_csv(path), report_csv(ref), "CSV with a TSC clock")


def test_kernels():
    path = gen("kernels", "kernels")
    j, _ = report_json(path, "--top", "20")
    details = [(c["name"], c["details"]) for c in j["slowest_calls"]]
    eq(details, [
        ("cuMemAllocPitch_v2", "4.00 KiB -> 0x7f0000100000"),
        ("cuMemcpyHtoDAsync_v2", "H2D 64.00 KiB async stream 0x77"),
        ("cuMemsetD2D8_v2", "memset 1.00 KiB 0.10 GB/s"),
        ("cuMemsetD32_v2", "memset 4.00 KiB 0.46 GB/s"),
        ("cuLaunchKernel", "function 0xf3 grid (1,1,1) block (64,1,1) smem 256 stream 0x77"),
        ("cuLaunchKernel", "softmax grid (1,1,1) block (64,1,1) smem 256 stream 0x77"),
        ("cuLaunchKernel", "gemm grid (2,3,4) block (32,8,1) smem 256 stream 0x77"),
        ("cuLaunchKernelEx", "gemm"),
        ("cuFuncGetName", "name=softmax"),
        ("cuKernelGetFunction", "function=0xf1"),
        ("cuLibraryGetKernel", "name=gemm kernel=0xe1"),
        ("cuLibraryLoadData", "library=0xaa"),
    ], "slowest calls with decoded arguments")
    tr = {t["direction"]: t for t in j["transfers"]}
    eq((tr["memset"]["calls"], tr["memset"]["bytes"], tr["memset"]["sync_bytes"]), (2, 5120, 5120), "memsets")
    eq((tr["H2D"]["calls"], tr["H2D"]["async_calls"], tr["H2D"]["bytes"], tr["H2D"]["gb_per_s"]),
       (1, 1, 65536, None), "async copy: bytes but no bandwidth")
    eq([s["name"] for s in j["stages"]], ["model load", "inference", "result retrieval"], "stages: no init, no teardown")
    eq(j["gaps"]["submissions"], 7, "submissions (4 launches, 2 memsets, 1 copy)")


def test_kernel_table():
    """The Kernels section from the agent's KNAMES and GRAPHS blocks (gen_trace's "names"): launches
    per name, graph launches as their kernel nodes, a handle named again (the later name), an
    unnamed handle, a failed launch left out, a graph launch of an unlisted graph apart."""
    path = gen("names", "names")
    j, _ = report_json(path)
    k = j["kernels"]
    eq({x: k[x] for x in ("launches", "direct", "graph_nodes", "graph_calls", "graph_unknown", "graph_from_gpu",
                          "named")},
       {"launches": 8, "direct": 4, "graph_nodes": 4, "graph_calls": 3, "graph_unknown": 1, "graph_from_gpu": 0,
        "named": 7}, "kernel totals")
    rows = [(r["name"], r["named"], r["launches"], r["direct"], r["graph_nodes"], r["shapes"], r.get("grid"),
             r.get("block")) for r in k["by_name"]]
    eq(rows, [("gemm(float const*, float const*, float*, int)", True, 5, 3, 2, 2, [2, 2, 1], [32, 1, 1]),
              ("relu", True, 2, 0, 2, 1, [4, 1, 1], [64, 1, 1]),
              ("function 0xf3", False, 1, 1, 0, 1, [1, 1, 1], [64, 1, 1])], "kernel rows")
    out, _ = run(["report", "--no-color", path])
    lines = out.splitlines()
    for want in ["Kernels (launches per kernel name; a graph launch adds a launch of each kernel node)",
                 "  8 kernel launches: 4 by launch calls, 4 as nodes of 2 graph launches; 7 named (87.5 %)",
                 "  1 graph launches of graphs instantiated before tracing began: their kernels are unknown and left out"]:
        check(want in lines, f"line {want!r} missing:\n{out}")
    check(re.search(r"^ +5 +3 +2 +6\.000 us +\(2,2,1\)x\(32,1,1\) +2  gemm\(float const\*, float const\*, "
                    r"float\*, int\)$", out, re.M), f"gemm's row:\n{out}")
    check(re.search(r"^ +2 +0 +2 +- +\(4,1,1\)x\(64,1,1\) +1  relu$", out, re.M), f"relu's row:\n{out}")


def test_tsc_clock():
    same_as_monotonic(gen("tsc", "basic", "--tsc"))


def test_one_clock():
    # only the last CLOCK block: the line goes through the header's start pair and that one
    same_as_monotonic(gen("oneclock", "basic", "--tsc", "--one-clock"))


def test_end_dropped():
    """The END block counts drops no DROP record reported (a thread's last records); the report's
    total is that count, the threads' their DROP records'; without an END block, the DROP sum."""
    j, _ = report_json(gen("end-dropped", "basic", "--end-unreported", "7"))
    eq(j["dropped"], 5 + 7, "dropped: the END block's count")
    eq(sum(t["dropped"] for t in j["threads"]), 5, "threads' dropped: their DROP records")
    j, _ = report_json(gen("no-end-dropped", "basic", "--end-unreported", "7", "--no-end"))
    eq(j["dropped"], 5, "dropped without an END block: the DROP records'")


def test_no_end():
    path = gen("noend", "basic", "--no-end")
    j, err = report_json(path)
    eq(j["truncated"], True, "truncated without an END block")
    eq(j["complete"], False, "complete")
    check("no END block" in j["truncated_reason"], "truncated reason")
    check("warning" in err and "truncated" in err, "warning on stderr")
    eq(j["calls"], 27, "calls of a trace without END")
    run(["report", "--strict", path], rc=3)
    run(["report", "--strict", gen("basic")], rc=0)


def test_filters():
    path = gen("basic")
    j, _ = report_json(path, "--functions", "cuMem*")
    eq(sorted(f["name"] for f in j["functions"]),
       ["cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2"], "--functions cuMem*")
    eq(j["selected_calls"], 9, "selected calls")
    j, _ = report_json(path, "--functions", "cuInit,cuLaunch?ernel")
    eq(sorted((f["name"], f["calls"]) for f in j["functions"]), [("cuInit", 1), ("cuLaunchKernel", 4)], "glob list")
    # excludes, as run and attach take them (src/common/glob_filter.h): the 9 cuMem* calls of 27 go
    j, _ = report_json(path, "--functions", "cu*,-cuMem*")
    eq(sorted(f["name"] for f in j["functions"]),
       ["cuCtxCreate_v2", "cuCtxDestroy_v2", "cuCtxSynchronize", "cuDeviceGet", "cuDriverGetVersion",
        "cuGetProcAddress_v2", "cuInit", "cuLaunchKernel", "cuModuleGetFunction", "cuModuleLoad",
        "cuModuleUnload", "cuStreamQuery", "cuStreamSynchronize"], "--functions cu*,-cuMem*")
    eq(j["selected_calls"], 18, "--functions cu*,-cuMem*: selected calls")
    j, _ = report_json(path, "--functions", "!cuMem*, -cuLaunch*")
    eq(j["selected_calls"], 14, "--functions with excludes only")
    j, _ = report_json(path, "--thread", "worker")
    eq(sorted((f["name"], f["calls"]) for f in j["functions"]),
       [("cuStreamQuery", 1), ("cuStreamSynchronize", 3)], "--thread worker")
    j, _ = report_json(path, "--thread", "1000")
    eq(j["selected_calls"], 23, "--thread 1000")
    # a thread is excluded by its name or by its tid
    j, _ = report_json(path, "--thread", "-worker")
    eq(j["selected_calls"], 23, "--thread -worker")
    j, _ = report_json(path, "--thread", "*,-1000")
    eq(j["selected_calls"], 4, "--thread *,-1000")
    rows = report_csv(path, "--time-range", "1.2ms:1.6ms")
    eq([r[1] for r in rows], ["cuLaunchKernel", "cuStreamSynchronize", "cuLaunchKernel", "cuGetProcAddress_v2",
                              "cuLaunchKernel", "cuStreamSynchronize", "cuLaunchKernel", "cuStreamQuery"],
       "--time-range 1.2ms:1.6ms")
    eq(len(report_csv(path, "--time-range", "3ms:")), 5, "--time-range 3ms:")
    eq(len(report_csv(path, "--time-range", ":1000ns")), 0, "--time-range :1000ns")
    j, _ = report_json(path, "--sort", "name")
    names = [f["name"] for f in j["functions"]]
    eq(names, sorted(names), "--sort name")
    j, _ = report_json(path, "--sort", "calls")
    eq([f["calls"] for f in j["functions"]][:4], [4, 3, 3, 3], "--sort calls")
    j, _ = report_json(path, "--top", "3")
    eq([c["dur_ns"] for c in j["slowest_calls"]], [1000000, 500000, 100000], "--top 3")
    out, _ = run(["report", "--all", "--no-color", path])
    check("cuGetErrorString" in out, "--all")
    for bad in [["--format", "xml"], ["--sort", "speed"], ["--time-range", "5:1"], ["--time-range", "x"],
                ["--top", "-1"], ["--bogus"]]:
        _, err = run(["report", *bad, path], rc=2)
        check(err.strip(), f"message for {bad}")
    # colors: on with --color, off with NO_COLOR even when forced by nothing else
    out, _ = run(["report", "--color", path])
    check("\033[1m" in out, "--color")
    out, _ = run(["report", path], env={"NO_COLOR": "1"})
    check("\033[" not in out, "NO_COLOR")


def test_bad_values():
    """Values that used to be taken silently: a time that is not a number (nan, inf), a glob that
    matches nothing because it is malformed. Each is refused with exit 2 and names its option."""
    path = gen("basic")
    for opt, value in [("--time-range", "nan:"), ("--time-range", ":nan"), ("--time-range", "inf:"),
                       ("--time-range", "1ms:infms"), ("--time-range", "1e400:"), ("--time-range", "-nan:"),
                       ("--functions", "cu["), ("--functions", "cuInit,cuMem[A-"), ("--functions", "cu\\"),
                       ("--functions", "[[:bogus:]]*"), ("--thread", "work[er"), ("--threads", "1000,[")]:
        _, err = run(["report", opt, value, path], rc=2)
        check(opt.rstrip("s") in err or opt in err, f"{opt} {value}: the message names the option: {err}")
    # well-formed brackets and classes are globs like any other
    j, _ = report_json(path, "--functions", "cuMem[A]*,cu[[:upper:]]nit")
    eq(sorted(f["name"] for f in j["functions"]), ["cuInit", "cuMemAlloc_v2"], "bracket globs")


def test_hostile_names():
    """A trace whose program, executable, library, thread, function names and note carry terminal
    escape sequences (ESC, a C1 CSI as UTF-8, bytes that are not UTF-8): the text report, on stdout
    and stderr, holds no byte a terminal acts on; every such character is shown escaped."""
    path = gen("hostile", "hostile")
    e = dict(os.environ, TZ="UTC")
    for args in (["--no-color"], ["--color"], ["--no-color", "--all", "--top", "20"]):
        p = subprocess.run([A.cuhook, "report", *args, path], capture_output=True, timeout=60)
        eq(p.returncode, 0, f"report {args}: status ({p.stderr!r})")
        for name, raw in (("stdout", p.stdout), ("stderr", p.stderr)):
            try:
                text = raw.decode("utf-8")  # strict: the output is valid UTF-8
            except UnicodeDecodeError as e:
                raise Fail(f"report {args}: {name} is not valid UTF-8 ({e}): {raw!r}")
            if "--color" in args:
                text = re.sub("\033\\[[0-9;]*m", "", text)  # the report's own colours
            bad = sorted({c for c in text if c != "\n" and (ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f)})
            check(not bad, f"report {args}: {name} holds control characters {bad!r}:\n{text}")
        out = p.stdout.decode()
        for shown in ("libcuda.so.1\\u009b1m", "6601 w\\xff", "cuEvil", "cuRefused", "k\\u009b1()",
                      "evil?]0;x?\\xff", "CUPTI 13.0.1 /tmp/?]0;cupti?"):
            check(shown in out, f"report {args}: {shown!r} shown: {out}")


def parse_protobuf(buf):
    """Fields of a protobuf message: list of (field number, wire type, value)."""
    try:
        return perfetto_decode.parse(buf)
    except perfetto_decode.DecodeError as e:
        raise Fail(str(e))


def perfetto_trace(*args):
    """`cuhook report --format perfetto` of args (options and trace files), decoded with its sequences' state resolved
    (perfetto_decode.Trace); fails on anything the decoder could not resolve."""
    pf = os.path.join(TMP, "out.pftrace")  # replaced at each call
    run(["report", "--format", "perfetto", "--force", "-o", pf, *args])
    try:
        tr = perfetto_decode.load(pf)
    except perfetto_decode.DecodeError as e:
        raise Fail(f"{pf}: {e}")
    eq(tr.errors, [], "what the Perfetto trace names but does not define")
    return tr


def test_exports():
    path = gen("basic")
    # Chrome trace: a begin and an end event per timed call, an instant for the entry-only one
    out, _ = run(["report", "--format", "chrome", path])
    j = json.loads(out)
    ev = j["traceEvents"]
    eq(len([e for e in ev if e["ph"] == "B"]), 26, "chrome begin events")
    eq(len([e for e in ev if e["ph"] == "E"]), 26, "chrome end events")
    eq(len([e for e in ev if e["ph"] == "i"]), 1, "chrome instant events")
    eq(sorted(e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"),
       ["main", "worker"], "chrome thread names")
    sync = [e for e in ev if e.get("name") == "cuCtxSynchronize"]
    eq([(e["ph"], e["ts"], e["pid"], e["tid"], e.get("cat")) for e in sync],
       [("B", 1700.0, 4242, 1000, "sync"), ("E", 2700.0, 4242, 1000, None)], "chrome events of a call")
    launch = [e for e in ev if e.get("name") == "cuLaunchKernel" and e["ph"] == "E"][0]
    eq(launch["args"]["details"], "vecAdd grid (256,1,1) block (128,1,1) smem 0 stream 0x0", "chrome args")
    # the begin events, which open the frames, differ from call to call in time only: speedscope
    # keys a frame on an event's name and its args, and gets one per function
    keys = {(e["name"], json.dumps(e.get("args"))) for e in ev if e["ph"] == "B"}
    eq(len(keys), len({e["name"] for e in ev if e["ph"] == "B"}), "one frame key per function")
    check(all(set(e) == {"name", "cat", "ph", "pid", "tid", "ts"} for e in ev if e["ph"] == "B"),
          "nothing but the name, category, thread and time on a begin event")
    # every end closes the call its thread opened last (a stack per thread, as the viewers keep)
    stacks = {}
    for e in sorted((e for e in ev if e["ph"] in "BE"), key=lambda e: e["ts"]):
        st = stacks.setdefault(e["tid"], [])
        if e["ph"] == "B":
            st.append(e["name"])
        else:
            eq(st.pop() if st else None, e["name"], f"the end at {e['ts']} closes its begin")
    eq({k: v for k, v in stacks.items() if v}, {}, "every begin ended")
    eq(j["otherData"], {"ts_origin_monotonic_ns": "5000000000", "ts_origin_realtime_ns": "1700000000000000000"},
       "ts 0 in absolute time")
    # a call of no duration: one complete event (an end at the time of its begin would come first)
    ev = json.loads(run(["report", "--format", "chrome", gen("zero", "basic", "--zero-call")])[0])["traceEvents"]
    dg = [e for e in ev if e.get("name") == "cuDeviceGet"]
    eq([(e["ph"], e["ts"], e["dur"], e["args"]["ret"]) for e in dg], [("X", 103.0, 0.0, 0)], "a call of 0 ns")
    eq(len([e for e in ev if e["ph"] == "B"]), 25, "the other calls: begin and end events")
    # counted calls: counter events, the process's running total per function
    cnt = gen("hotc", "hot", "--count")
    ev = json.loads(run(["report", "--format", "chrome", cnt])[0])["traceEvents"]
    counters = {}
    for e in ev:
        if e["ph"] == "C":
            eq((e["pid"], e["cat"], list(e["args"])), (3000, "counted", ["calls"]), "a counter event")
            counters.setdefault(e["name"].removesuffix(" (counted)"), []).append((e["ts"], e["args"]["calls"]))
    eq({n: max(v for _, v in pts) for n, pts in counters.items()}, HOT_COUNTED, "chrome counters: totals per function")
    for n, pts in counters.items():
        vals = [v for _, v in sorted(pts)]
        check(vals[0] == 0 and vals == sorted(vals), f"{n}: a running total from 0: {vals}")
    # jsonl: one object per call
    out, _ = run(["report", "--format", "jsonl", path])
    lines = [json.loads(ln) for ln in out.splitlines()]
    eq(len(lines), 27, "jsonl lines")
    gf = [x for x in lines if x["func"] == "cuModuleGetFunction"][0]
    eq((gf["tid"], gf["start_ns"], gf["dur_ns"], gf["decoded"], gf["args"][1]),
       (1000, 801000, 1000, "name=vecAdd;function=0xf00d", "0x1000"), "jsonl call")
    eo = [x for x in lines if x["end_ns"] is None]
    eq(len(eo), 1, "jsonl entry-only call")
    # folded stacks: self time per stack
    out, _ = run(["report", "--format", "folded", path])
    folded = dict((ln.rsplit(" ", 1)[0], int(ln.rsplit(" ", 1)[1])) for ln in out.splitlines())
    eq(folded["main;cuLaunchKernel"], 19000, "folded self time of cuLaunchKernel")
    eq(folded["main;cuLaunchKernel;cuGetProcAddress_v2"], 1000, "folded nested")
    eq(folded["worker;cuStreamSynchronize"], 50000, "folded worker")
    eq(sum(folded.values()), sum(t for _, t in BASIC_CALLS.values()) - 1000, "folded total = outermost time")
    # perfetto: a Trace of TracePackets; slices begin and end on per-thread tracks
    tr = perfetto_trace(path)
    types = {1: 0, 2: 0, 3: 0, 4: 0}
    for e in tr.events:
        types[e["type"]] += 1
    # counters: the device memory in use, a point at the start and at each of its 6 changes
    eq(types, {1: 26, 2: 26, 3: 1, 4: 7}, "perfetto slice begin/end/instant, counter points")
    eq(len(tr.tracks), 4, "perfetto track descriptors (process + 2 threads + memory counter)")
    eq(tr.snapshot, {3: 5000000000, 1: 1700000000000000000}, "the clock snapshot: MONOTONIC and REALTIME at the start")
    eq(tr.primary, 3, "MONOTONIC is the trace's clock")
    by_tid = {t.get("tid"): u for u, t in tr.tracks.items()}
    sync = [e for e in tr.events if e["name"] == "cuCtxSynchronize"]
    eq([(e["ts"] - tr.origin(), e["track"], e["categories"]) for e in sync], [(1700000, by_tid[1000], ["sync"])],
       "perfetto event: time, track, category")
    ends = [e for e in tr.events if e["type"] == 2 and e["track"] == by_tid[1000] and e["ts"] - tr.origin() == 2700000]
    eq(len(ends), 1, "its end, from the incremental clock")
    launch = [e for e in tr.events if e["name"] == "cuLaunchKernel"]
    eq([e["annotations"] for e in launch],
       [{"details": "vecAdd grid (256,1,1) block (128,1,1) smem 0 stream 0x0"}] * 4, "launch annotations (interned)")
    q = [e for e in tr.events if e["name"] == "cuStreamQuery"][0]
    eq(q["annotations"]["ret"], 600, "a non-zero return")
    eq(len({e["seq"] for e in tr.events if e["type"] != 4}), 2, "a sequence per thread")


PERFETTO_SUBSET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "perfetto_subset.proto")
INTERNED_TABLES = {"event_names", "event_categories", "debug_annotation_names", "debug_annotation_string_values",
                   "callstacks"}


def protoc_decode(pf):
    """protoc --decode of a Perfetto trace against perfetto_subset.proto (Perfetto's field numbers,
    only the fields cuhook writes): its text, after checking that protoc read it without an error
    and met no field the subset does not define (protoc prints those as bare field numbers)."""
    protoc = shutil.which("protoc")
    check(protoc, "protoc not found: scripts/deps.sh installs it (Debian's protobuf-compiler)")
    with open(pf, "rb") as f:
        p = subprocess.run([protoc, "-I", os.path.dirname(PERFETTO_SUBSET), "--decode=perfetto.protos.Trace",
                            os.path.basename(PERFETTO_SUBSET)], stdin=f, capture_output=True, timeout=300)
    eq((p.returncode, p.stderr.decode()), (0, ""), f"protoc --decode of {os.path.basename(pf)}")
    text = p.stdout.decode()
    unknown = [ln.strip() for ln in text.splitlines() if ln.strip()[:1].isdigit()]
    eq(unknown[:5], [], f"{os.path.basename(pf)}: fields unknown to Perfetto's format (by number)")
    return text


def check_interning(text, what):
    """In protoc's text of a trace: every iid a packet uses (event name, category, annotation name
    and string value, callstack) is defined by interned data of the same sequence, in that packet
    or an earlier one since the sequence's state was last cleared. Returns the packets' count."""
    defined, stack, rec, npackets, nrefs = {}, [], [], 0, 0
    for ln in text.splitlines():
        ln = ln.strip()
        if ln.endswith("{"):
            stack.append(ln[:-1].strip())
            continue
        if ln == "}":
            stack.pop()
            if stack:
                continue
            npackets += 1
            top = {k: v for path, k, v in rec if path == ("packet",)}
            seq = top.get("trusted_packet_sequence_id")
            check(seq is not None, f"{what}: a packet without a sequence id")
            if int(top.get("sequence_flags", "0")) & 1:
                defined[seq] = set()
            d = defined.setdefault(seq, set())
            d |= {(path[2], v) for path, k, v in rec
                  if len(path) == 3 and path[1] == "interned_data" and path[2] in INTERNED_TABLES and k == "iid"}
            for path, k, v in rec:
                table = None
                if path == ("packet", "track_event"):
                    table = {"name_iid": "event_names", "category_iids": "event_categories",
                             "callstack_iid": "callstacks"}.get(k)
                elif path == ("packet", "track_event", "debug_annotations"):
                    table = {"name_iid": "debug_annotation_names",
                             "string_value_iid": "debug_annotation_string_values"}.get(k)
                if table:
                    nrefs += 1
                    check((table, v) in d, f"{what}: sequence {seq} uses {table} iid {v} before defining it")
            rec = []
            continue
        k, _, v = ln.partition(": ")
        rec.append((tuple(stack), k, v))
    check(nrefs > 0, f"{what}: no interned name used at all")
    return npackets


# the large trace of test_perfetto_valid: 4 threads of 12,500 calls, many more annotation values
# than a sequence's 4,096 interning slots (src/report/export_perfetto.c: collisions forget)
BIGP_CALLS = 50000


def test_perfetto_valid():
    """Every Perfetto trace of the report decodes with protoc against perfetto_subset.proto with no
    error and no unknown field, and every name it interns resolves in its sequence; the clock
    snapshot ties the trace to REALTIME; a large multi-thread trace takes at most 40 bytes a call;
    read whole or streamed."""
    a, b = gen("basic"), gen("procb", "basic", "--pid", "5151", "--mono-offset", "777000000000",
                               "--real-offset", "1500000")
    big = gen("bigp", "big", "--calls", str(BIGP_CALLS), "--threads", "4")
    cases = [("basic", [a]), ("two files", [a, b]), ("counted", [gen("hotc", "hot", "--count")]),
             ("gpu", [gen("gpu", "gpu")]), ("tsc", [gen("tsc", "basic", "--tsc")]), ("big", [big]),
             ("functions filter", ["--functions", "cuLaunch*", a])]
    # read whole, and streamed (docs/report.md "Streaming report": a sequence per thread written
    # at once, annotations of an early-begun call on its end)
    for (what, args), mode in [(c, m) for c in cases for m in ("--no-stream", "--stream")]:
        pf = os.path.join(TMP, "valid.pftrace")
        run(["report", "--format", "perfetto", mode, "--force", "-o", pf, *args])
        what = f"{what} {mode}"
        text = protoc_decode(pf)
        check_interning(text, what)
        check("primary_trace_clock: BUILTIN_CLOCK_MONOTONIC" in text, f"{what}: MONOTONIC is the trace clock")
        if what.startswith("big "):
            size = os.path.getsize(pf)
            check(size <= 40 * BIGP_CALLS, f"{what}: {size / BIGP_CALLS:.1f} bytes per call, over 40")
    # the realtime of the first file's start; times on its monotonic clock, B's moved by 1.5 ms
    tr = perfetto_trace(a, b)
    eq(tr.snapshot, {3: 5000000000, 1: 1700000000000000000}, "two files: the first file's clocks")
    sync = sorted((tr.tracks[tr.tracks[e["track"]]["parent"]]["pid"], e["ts"]) for e in tr.events
                  if e["name"] == "cuCtxSynchronize")
    eq(sync, [(4242, 5000000000 + 1700000), (5151, 5000000000 + 1700000 + 1500000)], "two files on one clock")
    # without protoc's help: the file is what the decoder of these tests reads, too
    eq(len([e for e in perfetto_trace(big).events if e["type"] in (1, 2)]), 2 * BIGP_CALLS,
       "begin and end of every call of the big trace")


def test_stages():
    path = gen("basic")
    j, _ = report_json(path)
    st = {s["name"]: s for s in j["stages"]}
    eq([s["name"] for s in j["stages"]], ["init", "model load", "inference", "result retrieval", "teardown"],
       "stages found")
    want = {"init": (1000, 204000, 4), "model load": (300000, 1050000, 7), "inference": (1200000, 2700000, 9),
            "result retrieval": (2800000, 2900000, 1), "teardown": (3000000, 3250000, 5)}
    for name, (s, e, n) in want.items():
        eq((st[name]["start_ns"], st[name]["end_ns"], st[name]["calls"]), (s, e, n), f"stage {name}")
    out, _ = run(["report", "--no-color", path])
    for name in want:
        check(re.search(rf"^  {re.escape(name)} ", out, re.M), f"stage {name} in the text report")
    check("Timeline" in out, "timeline section")
    tl = [ln for ln in out.splitlines() if re.match(r"^  (main|worker) +\|", ln)]
    eq(len(tl), 2, "a timeline row per thread")


def test_multi():
    """Several files, one report: two processes whose clocks differ (another machine: monotonic
    777 s apart) but whose realtime clocks say B started 1.5 ms after A."""
    a, b = gen("basic"), gen("procb", "basic", "--pid", "5151", "--mono-offset", "777000000000",
                               "--real-offset", "1500000")
    shift = 1500000
    # json: the per-trace objects as before, plus "merged"
    out, _ = run(["report", "--format", "json", a, b])
    j = json.loads(out)
    eq(len(j["traces"]), 2, "traces in json")
    m = j["merged"]
    eq(m["time_axis"], "realtime", "time axis")
    eq([(p["pid"], p["offset_ns"]) for p in m["processes"]], [(4242, 0), (5151, shift)], "offsets")
    eq(m["span_ns"], shift + 3250000, "merged span")
    mf = {f["name"]: f for f in m["functions"]}
    eq(set(mf), set(BASIC_CALLS), "merged functions")
    for name, (calls, total) in BASIC_CALLS.items():
        eq((mf[name]["calls"], mf[name]["total_ns"], mf[name]["processes"]), (2 * calls, 2 * total, 2),
           f"merged {name}")
    # csv: a pid column, every call of both files, in start order on the common axis
    out, _ = run(["report", "--format", "csv", a, b])
    lines = out.splitlines()
    eq(lines[0], "pid,tid,func,start_ns,end_ns,dur_ns,depth,ret,arg0,arg1,arg2,arg3,arg4,arg5,"
                 "stack0,stack1,stack2,stack3,stack4,stack5,decoded,category,thread,kernel,start_realtime_ns,call_device",
       "merged CSV header")
    rows = [ln.split(",") for ln in lines[1:]]
    eq(len(rows), 27 * 2, "CSV rows == calls of both files")
    starts = [int(r[3]) for r in rows]
    eq(starts, sorted(starts), "CSV rows in start order")
    ra = [r for r in rows if r[0] == "4242"]
    rb = [r for r in rows if r[0] == "5151"]
    eq(len(ra), 27, "rows of A")
    eq([int(r[3]) - shift for r in rb], [int(r[3]) for r in ra], "B's rows = A's moved by the offset")
    eq((rb[0][2], int(rb[0][3]), int(rb[0][4])), ("cuInit", 1000 + shift, 101000 + shift), "B's first call")
    eq([int(r[24]) - int(r[3]) for r in ra + rb], [1700000000000000000] * 54,
       "start_realtime_ns: each row's start in realtime, the axis lined up by realtime")
    # chrome: both pids, B's events shifted by exactly the offset
    out, _ = run(["report", "--format", "chrome", a, b])
    ev = json.loads(out)["traceEvents"]
    eq(sorted({e["pid"] for e in ev}), [4242, 5151], "chrome pids")
    eq(sorted(e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"),
       ["./infer", "./infer"], "chrome process names")
    sync = {e["pid"]: e for e in ev if e.get("name") == "cuCtxSynchronize" and e["ph"] == "B"}
    eq((sync[4242]["ts"], sync[5151]["ts"], sync[5151]["tid"]), (1700.0, 3200.0, 1000), "chrome ts aligned")
    eq(len([e for e in ev if e["ph"] in ("B", "i")]), 54, "chrome events")
    # --align monotonic: the raw monotonic clocks (777 s apart) line them up instead
    out, _ = run(["report", "--format", "chrome", "--align", "monotonic", a, b])
    sync = {e["pid"]: e for e in json.loads(out)["traceEvents"] if e.get("name") == "cuCtxSynchronize" and e["ph"] == "B"}
    eq((sync[4242]["ts"], sync[5151]["ts"]), (1700.0, 777001700.0), "chrome ts, monotonic axis")
    run(["report", "--align", "nonsense", a, b], rc=2)
    # jsonl: pid and shifted times
    out, _ = run(["report", "--format", "jsonl", a, b])
    lines = [json.loads(ln) for ln in out.splitlines()]
    eq(len(lines), 54, "jsonl lines")
    gf = {x["pid"]: x for x in lines if x["func"] == "cuModuleGetFunction"}
    eq((gf[4242]["start_ns"], gf[5151]["start_ns"]), (801000, 801000 + shift), "jsonl start")
    # perfetto: a process track per file
    pf = os.path.join(TMP, "multi.pftrace")
    run(["report", "--format", "perfetto", "-o", pf, a, b])
    with open(pf, "rb") as f:
        packets = parse_protobuf(f.read())
    descriptors = 0
    begins = []
    for _, _, p in packets:
        for fn, _, val in parse_protobuf(p):
            if fn == 60:
                descriptors += 1
    eq(descriptors, 8, "perfetto track descriptors (2 processes + 4 threads + their memory counters)")
    # the text report: one report, the timeline on one axis. Width 95 over 4.75 ms: 50 us per
    # column, B's rows are A's moved right by 30 columns.
    out, _ = run(["report", "--no-color", "--width", "95", a, b])
    eq(out.count("cuhook report: "), 1, "one text report")
    check("cuhook report: 2 processes" in out, "merged title")
    check(re.search(r"^process 4242: .*\n(.*\n)*?  starts at  \+0 ns on the common time axis$", out, re.M),
          "A's offset")
    check(re.search(r"^process 5151: .*\n(.*\n)*?  starts at  \+1\.500 ms on the common time axis$", out, re.M),
          "B's offset")
    check("Timeline (50.000 us per column, all processes on one time axis)" in out, "timeline scale")
    tl = re.findall(r"^(  pid \d+ .*|    (?:main|worker) +\|.*\|)$", out, re.M)
    eq([ln.split()[0] + (" " + ln.split()[1] if ln.startswith("  pid") else "") for ln in tl],
       ["pid 4242", "main", "worker", "pid 5151", "main", "worker"], "timeline rows grouped by process")
    row = lambda ln: ln.split("|")[1]
    amain, awork, bmain, bwork = row(tl[1]), row(tl[2]), row(tl[4]), row(tl[5])
    eq(len(amain), 95, "timeline width")
    eq(amain, "IIIII.IIIIIIIIIIM.T.T...K.K.K.K...SSSSSSSSSSSSSSSSSSSS..TT..M.I.I" + "." * 30, "A's main row")
    eq(bmain, "." * 30 + amain[:65], "B's main row = A's moved by 1.5 ms")
    eq(bwork, "." * 30 + awork[:65], "B's worker row = A's moved by 1.5 ms")
    summary = re.search(r"CUDA driver API summary \(all processes\)\n.*\n.*\n((?:   .*\n)+)", out).group(1)
    launch = [ln for ln in summary.splitlines() if ln.endswith(" cuLaunchKernel")][0].split()
    eq((launch[3], launch[-2]), ("8", "2"), "merged summary: calls and processes of cuLaunchKernel")
    # B first: the origin is the earliest start whichever file comes first
    a2 = gen("later", "basic", "--pid", "1", "--real-offset", "2000000")
    out, _ = run(["report", "--format", "csv", a2, b])
    rows = [ln.split(",") for ln in out.splitlines()[1:]]
    eq((rows[0][0], rows[0][3]), ("5151", "1000"), "earliest process first")
    eq([int(r[3]) for r in rows if r[0] == "1"][0], 1000 + 500000, "later process 0.5 ms after B")
    # --separate: the old behaviour, one report after the other, each on its own axis
    out, _ = run(["report", "--no-color", "--separate", a, b])
    eq(out.count("cuhook report: "), 2, "two text reports with --separate")
    out, _ = run(["report", "--format", "csv", "--separate", a, b])
    lines = out.splitlines()
    check(lines[0].startswith("tid,func,"), "--separate CSV has no pid column")
    eq(len(lines), 1 + 27 * 2, "CSV rows of two files")
    eq([ln.split(",")[2] for ln in lines[1:] if ln.split(",")[1] == "cuInit"], ["1000", "1000"],
       "--separate: each file from its own start")
    out, _ = run(["report", "--format", "json", "--separate", a, b])
    check("merged" not in json.loads(out), "--separate json has no merged object")
    # a truncated file among them is still merged, and flagged
    c = gen("noend", "basic", "--no-end")
    out, _ = run(["report", "--format", "json", a, c])
    eq([t["truncated"] for t in json.loads(out)["traces"]], [False, True], "per-trace truncated")


def test_errors():
    missing = os.path.join(TMP, "missing.bin")
    _, err = run(["report", missing], rc=1)
    check("No such file" in err and missing in err, f"missing file message: {err}")
    empty = os.path.join(TMP, "empty.bin")
    open(empty, "wb").close()
    _, err = run(["report", empty], rc=1)
    check("empty file" in err, f"empty file message: {err}")
    path = gen("basic")
    with open(path, "rb") as f:
        good = f.read()
    bad = os.path.join(TMP, "badmagic.bin")
    with open(bad, "wb") as f:
        f.write(b"NOTATRACE" + good[9:])
    _, err = run(["report", bad], rc=1)
    check("not a cuhook trace" in err, f"bad magic message: {err}")
    v9 = os.path.join(TMP, "v9.bin")
    with open(v9, "wb") as f:
        f.write(good[:8] + (9).to_bytes(4, "little") + good[12:])
    _, err = run(["report", v9], rc=1)
    check("unsupported trace version 9" in err, f"version message: {err}")
    # a version-1 trace (taken on the H200 before version 2 existed) still reads
    v1 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "h200-matmul100.bin")
    out, _ = run(["report", "--format", "json", v1], rc=0)
    eq(json.loads(out)["events"], 6708, "version-1 trace: events")
    v0 = os.path.join(TMP, "v0.bin")
    with open(v0, "wb") as f:
        f.write(good[:8] + (0).to_bytes(4, "little") + good[12:])
    _, err = run(["report", v0], rc=1)
    check("unsupported trace version 0" in err, f"version 0 message: {err}")
    _, err = run(["report", TMP], rc=1)
    check("is a directory" in err, f"directory message: {err}")
    run(["report"], rc=2)
    # one good file and one missing: the good one is reported, the status says something failed
    out, err = run(["report", "--format", "json", path, missing], rc=1)
    eq(json.loads(out)["events"], 53, "report of the good file")
    # -o into a directory that does not exist
    _, err = run(["report", "-o", os.path.join(TMP, "no", "such", "dir"), path], rc=1)
    check("No such file" in err, "-o error")
    # nocalls: a valid trace with nothing in it
    nc = gen("nocalls", "nocalls")
    j, _ = report_json(nc)
    eq((j["events"], j["calls"], j["functions"], j["truncated"]), (0, 0, [], False), "empty trace")
    out, _ = run(["report", "--no-color", nc])
    check("no calls traced" in out, "empty trace text")


def test_output_file():
    """-o FILE: a new file of mode 600; an existing file or a link (here to a file of ours, and a
    dangling one) is refused before any trace is read (exit 1, a message naming it and --force)
    and left as it was; --force replaces the name (a link itself, never its target); "-" is
    stdout."""
    path = gen("basic")
    want, _ = run(["report", "--no-color", path])
    new = os.path.join(TMP, "new.txt")
    run(["report", "--no-color", "-o", new, path])
    eq(oct(os.stat(new).st_mode & 0o7777), oct(0o600), "mode of a new -o file")
    with open(new) as f:
        eq(f.read(), want, "-o file content")
    victim = os.path.join(TMP, "victim.txt")
    with open(victim, "w") as f:
        f.write("the link's target\n")
    entries = {"file": os.path.join(TMP, "existing.txt"), "link": os.path.join(TMP, "link.txt"),
               "dangling link": os.path.join(TMP, "dangling.txt")}
    targets = {"link": victim, "dangling link": os.path.join(TMP, "never.txt")}
    for kind, out in entries.items():
        if kind == "file":
            with open(out, "w") as f:
                f.write("precious\n")
        else:
            os.symlink(targets[kind], out)
        # refused before reading: even with a trace that does not exist
        _, err = run(["report", "-o", out, path, os.path.join(TMP, "missing.bin")], rc=1)
        eq(err.strip(), f"cuhook report: output file '{out}' exists; pass --force to replace it, or choose "
                        "another name with -o", f"{kind}: message")
        if kind == "file":
            with open(out, "rb") as f:
                eq(f.read(), b"precious\n", "the existing file")
        else:
            eq(os.readlink(out), targets[kind], f"{kind}: the link")
        run(["report", "--no-color", "--force", "-o", out, path])
        st = os.lstat(out)
        check(stat.S_ISREG(st.st_mode) and st.st_mode & 0o7777 == 0o600,
              f"{kind}: --force made a new regular file of mode 600 (mode {st.st_mode:o})")
        with open(out) as f:
            eq(f.read(), want, f"{kind}: the report replaced it")
    with open(victim, "rb") as f:
        eq(f.read(), b"the link's target\n", "the link's target")
    check(not os.path.lexists(targets["dangling link"]), "a dangling link's target was created")
    # --force never removes anything but a file or a link
    fifo = os.path.join(TMP, "fifo")
    os.mkfifo(fifo)
    _, err = run(["report", "--force", "-o", fifo, path], rc=1)
    check("neither a regular file nor a symbolic link" in err and stat.S_ISFIFO(os.lstat(fifo).st_mode),
          f"FIFO with --force: {err}")
    out, _ = run(["report", "--no-color", "-o", "-", path])
    eq(out, want, "-o - is stdout")


def test_truncated():
    """Cut the trace at many offsets: every cut gives exit 1 with a clear message (header cut),
    or exit 0 with a report marked truncated; never a crash."""
    path = gen("basic")
    with open(path, "rb") as f:
        good = f.read()
    header_size = int.from_bytes(good[12:16], "little")
    offsets = sorted(set(list(range(0, 200)) + list(range(200, len(good), 24)) + [len(good) - 1]))
    cut = os.path.join(TMP, "cut.bin")
    for n in offsets:
        with open(cut, "wb") as f:
            f.write(good[:n])
        if n < header_size:
            _, err = run(["report", "--format", "json", cut], rc=1)
            check(re.search(r"empty file|truncated file header", err), f"cut at {n}: message {err!r}")
        else:
            out, err = run(["report", "--format", "json", cut], rc=0)
            j = json.loads(out)
            eq(j["truncated"], True, f"cut at {n}: truncated")
            check(j["calls"] <= 27 and j["events"] <= 53, f"cut at {n}: counts")
            check("truncated" in err, f"cut at {n}: warning")
            run(["report", "--strict", cut], rc=3)
    # The number of calls read grows with the prefix and reaches all of them.
    last_block = good.rfind(b"CHBK")  # the END block's header
    with open(cut, "wb") as f:
        f.write(good[:last_block])
    j, _ = report_json(cut)
    eq((j["calls"], j["events"], j["truncated"]), (27, 53, True), "everything but the END block")


def test_garbage():
    rnd = random.Random(1234)
    g = os.path.join(TMP, "garbage.bin")
    for n in [1, 7, 8, 100, 4096]:
        with open(g, "wb") as f:
            f.write(bytes(rnd.randrange(256) for _ in range(n)))
        _, err = run(["report", g], rc=1)
        check("not a cuhook trace" in err, f"garbage of {n} bytes: {err}")
    # a valid header followed by garbage: a report of nothing, truncated at the first block
    path = gen("basic")
    with open(path, "rb") as f:
        good = f.read()
    hs = int.from_bytes(good[12:16], "little")
    with open(g, "wb") as f:
        f.write(good[:hs] + bytes(rnd.randrange(256) for _ in range(5000)))
    j, _ = report_json(g)
    eq((j["truncated"], j["calls"]), (True, 0), "header + garbage")
    check(f"bad block magic at offset {hs}" in j["truncated_reason"], j["truncated_reason"])
    # flipped bytes all over a good trace: never a crash, output always parses
    for i in range(150):
        b = bytearray(good)
        for _ in range(rnd.randrange(1, 6)):
            b[rnd.randrange(hs, len(b))] = rnd.randrange(256)
        with open(g, "wb") as f:
            f.write(b)
        out, _ = run(["report", "--format", "json", g], rc=None)
        if out:
            json.loads(out)
        run(["report", "--no-color", g], rc=None)


# ---- input that is not a trace, or stops being one while it is read -------------------------

RSS_LIMIT_KIB = 64 * 1024  # the most `cuhook report` may use on the inputs below (it needs ~5 MiB)


def rss_kib(pid):
    """VmHWM (the peak RSS so far) of a running process, in KiB; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_rss(args, stdin=None, timeout=30):
    """Run cuhook with args: (exit status, stdout, stderr, its maximum RSS in KiB), checking that
    the RSS stays under RSS_LIMIT_KIB. Watched as it runs, and killed (failing the test) once past
    the limit or `timeout` s: a reader without bounds must not take the machine's memory."""
    def no_core():
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    what = f"cuhook {' '.join(args)}"
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen([A.cuhook] + args, stdin=stdin, stdout=out, stderr=err,
                             env=dict(os.environ, TZ="UTC"), preexec_fn=no_core)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            rss = rss_kib(p.pid)
            if rss >= RSS_LIMIT_KIB or time.monotonic() > deadline:
                p.kill()
                _, status, ru = os.wait4(p.pid, 0)
                p.returncode = -9
                raise Fail(f"{what}: killed at RSS {max(rss, ru.ru_maxrss)} KiB (limit {RSS_LIMIT_KIB}), "
                           f"after {timeout - (deadline - time.monotonic()):.1f} s")
            time.sleep(0.01)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        o, e = out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")
    if p.returncode < 0:
        raise Fail(f"{what} killed by signal {-p.returncode}:\n{e}")
    check(ru.ru_maxrss < RSS_LIMIT_KIB, f"{what}: max RSS {ru.ru_maxrss} KiB, want < {RSS_LIMIT_KIB}\n{e}")
    return p.returncode, o, e, ru.ru_maxrss


def run_rss_piped(shell_cmd, args):
    """run_rss with stdin a pipe from `sh -c shell_cmd` (killed once cuhook ends)."""
    feeder = subprocess.Popen(["sh", "-c", shell_cmd], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        return run_rss(args, stdin=feeder.stdout)
    finally:
        feeder.stdout.close()
        feeder.kill()
        feeder.wait()


def test_special_files():
    """A device is refused before anything is read from it; a pipe is read as a stream, only as
    far as it is a trace."""
    rc, _, err, _ = run_rss(["report", "/dev/zero"])
    eq((rc, err), (1, "cuhook report: /dev/zero: is a character device, not a trace\n"), "/dev/zero")
    # endless zeros through a pipe: refused at the magic, after the header's 72 bytes
    rc, _, err, _ = run_rss_piped("exec cat /dev/zero", ["report", "/dev/stdin"])
    eq((rc, err), (1, "cuhook report: /dev/stdin: not a cuhook trace (bad magic)\n"), "a pipe of zeros")
    # a valid header, then endless zeros: a trace of nothing, truncated at its first block
    path = gen("basic")
    with open(path, "rb") as f:
        good = f.read()
    hs = int.from_bytes(good[12:16], "little")
    head = os.path.join(TMP, "head.bin")
    with open(head, "wb") as f:
        f.write(good[:hs])
    rc, out, err, _ = run_rss_piped(f"cat '{head}'; exec cat /dev/zero", ["report", "--format", "json", "/dev/stdin"])
    j = json.loads(out)
    eq((rc, j["truncated"], j["calls"], j["truncated_reason"]), (0, True, 0, f"bad block magic at offset {hs}"),
       "a pipe of a header and zeros")
    # a whole trace through a pipe: the same report as the file's
    want, _ = report_json(path)
    rc, out, err, _ = run_rss_piped(f"exec cat '{path}'", ["report", "--format", "json", "/dev/stdin"])
    j = json.loads(out)
    eq((rc, err), (0, ""), "a trace through a pipe")
    j["file"] = want["file"]
    eq(j, want, "the report of a trace read through a pipe")


def test_sparse_and_garbage():
    """Huge files that are not a trace, or only begin as one, are refused or cut quickly with
    bounded memory: nothing is read beyond what was checked (plus a few MiB of read-ahead)."""
    big = 5 << 30
    sparse = os.path.join(TMP, "sparse.bin")
    try:
        open(sparse, "wb").close()
        os.truncate(sparse, big)
        rc, _, err, _ = run_rss(["report", sparse])
        eq((rc, err), (1, f"cuhook report: {sparse}: not a cuhook trace (bad magic)\n"), "5 GiB of zeros")
        path = gen("basic")
        with open(path, "rb") as f:
            good = f.read()
        end_block = good.rfind(b"CHBK")
        rnd = random.Random(15)
        # everything but the END block, then 1 MiB of garbage, then zeros to 5 GiB
        with open(sparse, "wb") as f:
            f.write(good[:end_block] + rnd.randbytes(1 << 20))
        os.truncate(sparse, big)
        rc, out, _, _ = run_rss(["report", "--format", "json", sparse])
        j = json.loads(out)
        eq((rc, j["truncated"], j["calls"], j["events"], j["truncated_reason"]),
           (0, True, 27, 53, f"bad block magic at offset {end_block}"), "a trace, garbage, 5 GiB of zeros")
        # a header whose command line would be 2 GiB long
        header_size = FILE_HEADER_SIZE + (2 << 30) - 8
        hdr = bytearray(good[:FILE_HEADER_SIZE])
        struct.pack_into("<I", hdr, HEADER_AT["header_size"], header_size)
        struct.pack_into("<I", hdr, HEADER_AT["cmdline_len"], (2 << 30) - 8)
        struct.pack_into("<I", hdr, HEADER_AT["exe_len"], 0)
        with open(sparse, "wb") as f:
            f.write(hdr)
        os.truncate(sparse, big)
        rc, _, err, _ = run_rss(["report", sparse])
        eq((rc, err), (1, f"cuhook report: {sparse}: corrupt file header (header_size {header_size}, "
                          "more than the 1048576 bytes a header can have)\n"), "a 2 GiB header")
    finally:
        os.unlink(sparse)


def shrunk_reference(data, size):
    """The report (json, csv) of the first `size` bytes of a trace, cut before it was read."""
    cut = os.path.join(TMP, "cut-before.bin")
    with open(cut, "wb") as f:
        f.write(data[:size])
    j, _ = report_json(cut)
    out, _ = run(["report", "--format", "csv", cut])
    return j, out


def test_shrink_reading():
    """A trace truncated while `cuhook report` reads it (at a chosen read, truncate_at_read): no
    signal (SIGBUS was exit 135), the calls before the cut reported exactly as those of a file cut
    before it was read, the reason says the file shrank."""
    # (calls, the read that truncates: at least MIN_BYTES, where the reader is then). In pass 1
    # the reader reads block headers, not EVENTS payloads: it finds the next header gone, and
    # pass 2 the block cut, as when the file shrinks in pass 2.
    cases = [(100000, 0, "pass 1: the header was just read"),
             (100000, 1 << 20, "pass 2: the reader thread's first chunk"),
             (20000, 1 << 20, "pass 2 without a thread (a prefix under 8 MiB)")]
    for calls, min_bytes, where in cases:
        src = gen(f"shrink{calls}", "big", "--calls", str(calls), "--threads", "2")
        with open(src, "rb") as f:
            data = f.read()
        size = len(data) // 2 + 13
        ref_j, ref_csv = shrunk_reference(data, size)
        check(0 < ref_j["calls"] < calls, f"{where}: the half file holds {ref_j['calls']} of {calls} calls")
        m = re.fullmatch(r"EVENTS block at offset (\d+) cut: .*", ref_j["truncated_reason"])
        check(m, f"{where}: reason of the file cut before: {ref_j['truncated_reason']}")
        shrank = f"the file shrank while it was read ({len(data)} bytes when opened, {size} now): "
        want_reason = shrank + f"blocks from offset {m.group(1)} on could not be read"
        outs = {}
        for fmt in ["json", "csv"]:
            dyn = os.path.join(TMP, "shrinking.bin")
            shutil.copyfile(src, dyn)
            # LeakSanitizer cannot work in a traced process (a sanitized build)
            env = dict(os.environ, TZ="UTC", ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0")
            p = subprocess.run([A.truncate_at_read, dyn, str(size), str(min_bytes), "--",
                                A.cuhook, "report", "--format", fmt, dyn],
                               capture_output=True, timeout=120, env=env)
            err = p.stderr.decode("utf-8", "replace")
            check(f"{dyn} truncated to {size} bytes" in err, f"{where}: not truncated while read:\n{err}")
            eq(p.returncode, 0, f"{where}: exit status (135: SIGBUS) of report --format {fmt}; stderr:\n{err}")
            check(f"truncated: {want_reason}" in err, f"{where}: warning, want {want_reason!r}:\n{err}")
            outs[fmt] = p.stdout.decode()
        j = json.loads(outs["json"])
        eq((j["calls"], j["events"], j["truncated"], j["complete"], j["truncated_reason"]),
           (ref_j["calls"], ref_j["events"], True, False, want_reason), f"{where}: json")
        check(outs["csv"] == ref_csv, f"{where}: the CSV differs from the file's cut before it was read")


def test_changed_reading():
    """A trace cut to half and extended back with zeros (rewritten) after pass 1 read its block
    headers, as pass 2's reader thread reads its first MiB: pass 2 checks each block header again
    and stops at the first one that is no longer there; no signal, the records read before."""
    src = gen("changed", "big", "--calls", "100000", "--threads", "2")
    with open(src, "rb") as f:
        data = f.read()
    size = len(data) // 2 + 13
    after = [off for off, _, _, _ in blocks(data) if off >= size][0]  # the first header zeroed
    ref_j, _ = shrunk_reference(data, size)
    dyn = os.path.join(TMP, "rewritten.bin")
    shutil.copyfile(src, dyn)
    env = dict(os.environ, TZ="UTC", ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0")
    p = subprocess.run([A.truncate_at_read, dyn, str(size), str(1 << 20), str(len(data)), "--",
                        A.cuhook, "report", "--format", "json", dyn], capture_output=True, timeout=120, env=env)
    err = p.stderr.decode("utf-8", "replace")
    check(f"{dyn} regrown to {len(data)} bytes" in err, f"not rewritten while read:\n{err}")
    eq(p.returncode, 0, f"exit status; stderr:\n{err}")
    j = json.loads(p.stdout)
    want = f"the file changed while it was read: the block at offset {after} is not the one read before"
    eq((j["truncated"], j["complete"], j["truncated_reason"]), (True, False, want), "the reason")
    # the block that holds the cut was read in part: its records up to the zeros, then one corrupt
    check(ref_j["calls"] < j["calls"] < 100000 and j["errors"] >= 1,
          f"calls {j['calls']} (cut before: {ref_j['calls']}), errors {j['errors']}")


def test_shrink_output():
    """The trace is truncated after it was read, while the report writes its output (stdout is a
    full pipe): the report does not depend on the file any more (SIGBUS before: arguments were
    read from a mapping of the file)."""
    path = gen("written", "big", "--calls", "200000", "--threads", "2")
    want, _ = run(["report", "--format", "csv", path])
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen([A.cuhook, "report", "--format", "csv", path], stdout=subprocess.PIPE, stderr=err)
        first = p.stdout.readline()  # it writes: every trace was read; the pipe stops it soon
        os.truncate(path, 0)
        rest = p.stdout.read()
        p.wait()
        err.seek(0)
        e = err.read().decode("utf-8", "replace")
    eq(p.returncode, 0, f"exit status (-7: SIGBUS) after the file was truncated; stderr:\n{e}")
    check((first + rest).decode() == want, "the CSV written while the file was truncated differs")


GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")


def test_golden():
    """The text and JSON reports of the basic trace, byte for byte (the trace's path replaced by
    TRACE). After an intended change of the output: CUHOOK_UPDATE_GOLDEN=1 rewrites the files."""
    path = gen("basic")
    for name, args in [("basic.txt", ["--no-color"]), ("basic.json", ["--format", "json"]),
                       ("basic-all-top3.txt", ["--no-color", "--all", "--top", "3", "--width", "60"])]:
        out, _ = run(["report", *args, path])
        out = out.replace(path, "TRACE")
        golden = os.path.join(GOLDEN, name)
        if os.environ.get("CUHOOK_UPDATE_GOLDEN"):
            with open(golden, "w") as f:
                f.write(out)
            continue
        with open(golden) as f:
            want = f.read()
        if out != want:
            import difflib
            diff = "".join(difflib.unified_diff(want.splitlines(True), out.splitlines(True), "golden/" + name, "output"))
            raise Fail(f"{name} differs from the golden output:\n{diff}")


def test_old_format():
    """Traces without GPU blocks (the version-1 H200 trace, and the generated basic trace) give
    exactly the report they gave before the reader knew GPU blocks: the text and JSON of the H200
    trace byte for byte, every other format by its SHA-256 (golden/no-gpu.sha256, written by the
    report before the GPU section existed; CUHOOK_UPDATE_GOLDEN=1 rewrites it)."""
    import hashlib
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "h200-matmul100.bin")
    traces = {"h200": data, "basic": gen("basic")}
    got = {}
    for tname, path in traces.items():
        for fmt in ["text", "json", "csv", "jsonl", "chrome", "folded", "perfetto"]:
            out_path = os.path.join(TMP, f"{tname}.{fmt}")
            run(["report", "--no-color", "--format", fmt, "-o", out_path, path])
            with open(out_path, "rb") as f:
                out = f.read().replace(path.encode(), b"TRACE")
            got[f"{tname}.{fmt}"] = hashlib.sha256(out).hexdigest()
            if tname == "h200" and fmt in ("text", "json"):
                golden = os.path.join(GOLDEN, f"h200-matmul100.{'txt' if fmt == 'text' else fmt}")
                if os.environ.get("CUHOOK_UPDATE_GOLDEN"):
                    with open(golden, "wb") as f:
                        f.write(out)
                else:
                    with open(golden, "rb") as f:
                        eq(out.decode(), f.read().decode(), f"h200 {fmt} report (golden/{os.path.basename(golden)})")
    sums = os.path.join(GOLDEN, "no-gpu.sha256")
    if os.environ.get("CUHOOK_UPDATE_GOLDEN"):
        with open(sums, "w") as f:
            f.writelines(f"{v}  {k}\n" for k, v in sorted(got.items()))
        return
    with open(sums) as f:
        want = dict(ln.split()[::-1] for ln in f if ln.strip())
    eq(sorted(want), sorted(got), "outputs in golden/no-gpu.sha256")
    for k in sorted(want):
        eq(got[k], want[k], f"SHA-256 of the {k} report")


# ---- counted functions (trace format 3: COUNTS blocks) -------------------------------------------

# What scenario_hot() in gen_trace.c makes (24000 iterations): every function's calls; with
# --count the first two are counted, not recorded, per thread as HOT_THREAD_COUNTED says.
HOT_CALLS = {"cuCtxGetCurrent": 30005, "cuStreamGetCaptureInfo_v2": 15000, "cuLaunchKernel": 8000,
             "cuPointerGetAttribute": 3000, "cuStreamSynchronize": 600}
HOT_COUNTED = {"cuCtxGetCurrent": 30005, "cuStreamGetCaptureInfo_v2": 15000}
HOT_RECORDED = ["cuLaunchKernel", "cuPointerGetAttribute", "cuStreamSynchronize"]
HOT_THREAD_COUNTED = {3000: 36000, 3001: 9000, 3002: 5}
HOT_TOTAL = 45005
PERIOD = 50000000  # the writer's flush rounds: 50 ms, 100 ms, then the end


def hot_first_round():
    """Calls of the two counted functions started before the first round (main, worker), from
    the scenario's timeline: what the COUNTS blocks read at 50 ms hold."""
    main = [i for i in range(24000) if 10000 + 5000 * i < PERIOD]
    work = [j for j in range(6000) if 20000 + 20000 * j < PERIOD]
    return {"cuCtxGetCurrent": len(main) + len(work),
            "cuStreamGetCaptureInfo_v2": len([i for i in main if i % 2 == 0]) + len([j for j in work if j % 2 == 0])}


def blocks(data):
    """(offset, type, payload offset, payload size) of each block, up to the first bad one."""
    off, out = tf.read_header(data).header_size, []
    while off + BLOCK_HEADER_SIZE <= len(data):
        magic, typ, _, size, _ = struct.unpack_from(fmt("cuhook_block"), data, off)
        if magic != BLOCK_MAGIC or off + BLOCK_HEADER_SIZE + size > len(data):
            break
        out.append((off, typ, off + BLOCK_HEADER_SIZE, size))
        off += BLOCK_HEADER_SIZE + size
    return out


def counts_blocks(data):
    """Every COUNTS block: (offset, payload offset, size, tid, [(func, calls)...])."""
    out = []
    for off, typ, p, size in blocks(data):
        if typ == BLOCK_COUNTS:
            tid, n, _ = struct.unpack_from(fmt("cuhook_counts_block"), data, p)
            out.append((off, p, size, tid, [struct.unpack_from("<IIQ", data, p + 16 + 16 * i)[::2] for i in range(n)]))
    return out


def perfetto_counters(path, *opts):
    """`cuhook report --format perfetto`'s counter tracks: {function: [values in time order]}, each
    checked to be a counter track (CounterDescriptor, unit count) under the process's track."""
    tr = perfetto_trace(*opts, path)
    procs = {u for u, t in tr.tracks.items() if "process_name" in t}
    names, points = {}, {}
    for u, t in tr.tracks.items():
        if t["counter"] is not None:
            check(t["parent"] in procs, f"counter track {t['name']} under a process track")
            eq(t["counter"], {3: [2]}, "a counter of unit UNIT_COUNT")
            names[u] = t["name"].removesuffix(" (counted)")
    for e in tr.events:
        if e["type"] == 4:
            points.setdefault(e["track"], []).append((e["ts"], e["counter"]))
    check(set(points) <= set(names), "counter values on described tracks only")
    return {names[u]: [v for _, v in sorted(pts, key=lambda x: x[0])] for u, pts in points.items()}


def counted_by(j, key="functions"):
    return {f["name"]: f["counted_calls"] for f in j[key] if f["counted_calls"]}


def test_counts():
    rec, exp_r = gen("hot", "hot", expect=True)
    cnt, exp_c = gen("hotc", "hot", "--count", expect=True)
    with open(cnt, "rb") as f:
        data = f.read()
    cbs = counts_blocks(data)
    eq(len(cbs), 8, "COUNTS blocks written (3 rounds x main and worker, 2 for tid 3002)")
    eq(sum(c for b in cbs for _, c in b[4]), HOT_TOTAL, "calls in the COUNTS blocks")
    jr, _ = report_json(rec)
    jc, err = report_json(cnt)
    eq(err, "", "stderr of a clean report")
    eq((jc["errors"], jc["truncated"], jc["corrupt_records"], jc["unknown_function_ids"]), (0, False, 0, 0),
       "a trace with COUNTS blocks is clean")
    eq((jc["counted_calls"], jc["selected_counted_calls"], jc["count_blocks"]), (HOT_TOTAL, HOT_TOTAL, 8), "totals")
    eq(jc["counted_calls"], exp_c["counted_calls"], "counted total vs generator")
    eq((jc["events"], jc["calls"]), (23200, 11600), "recorded events and calls")
    eq((jr["events"], jr["calls"], jr["counted_calls"], jr["count_blocks"]), (113210, 56605, 0, 0),
       "the same run, all recorded")
    # per function: every call once, recorded or counted; counted ones have no time
    fc, fr = funcs_by_name(jc), funcs_by_name(jr)
    eq({n: f["calls"] + f["counted_calls"] for n, f in fc.items()}, HOT_CALLS, "calls per function, counted included")
    eq({n: f["calls"] for n, f in fr.items()}, HOT_CALLS, "calls per function, all recorded")
    eq(counted_by(jc), HOT_COUNTED, "counted calls per function")
    eq(counted_by(jr), {}, "nothing counted in the recorded run")
    for n in HOT_COUNTED:
        eq(exp_c["functions"][n]["counted_calls"], HOT_COUNTED[n], n + " vs generator")
        eq((fc[n]["calls"], fc[n]["timed_calls"], fc[n]["total_ns"], fc[n]["failed"]), (0, 0, 0, 0),
           n + ": no recorded call, no time")
    for n in HOT_RECORDED:
        eq(fc[n], fr[n], n + " unaffected by the counted functions")
    eq([f["name"] for f in jc["functions"]],
       ["cuLaunchKernel", "cuStreamSynchronize", "cuPointerGetAttribute", "cuCtxGetCurrent",
        "cuStreamGetCaptureInfo_v2"], "sorted by total time: counted ones last")
    j, _ = report_json(cnt, "--sort", "calls")
    eq([f["name"] for f in j["functions"]], list(HOT_CALLS), "--sort calls counts counted calls")
    # per thread: tid 3002 has no THREAD block and no events, only COUNTS blocks
    eq({t["tid"]: (t["name"], t["calls"], t["counted_calls"]) for t in jc["threads"]},
       {3000: ("main", 8000 + 3000, 36000), 3001: ("worker", 600, 9000), 3002: ("", 0, 5)}, "threads")
    eq({t["tid"]: t["counted_calls"] for t in jc["threads"]}, HOT_THREAD_COUNTED, "counted per thread")
    # the filters select counted calls like recorded ones
    j, _ = report_json(cnt, "--thread", "worker")
    eq((counted_by(j), j["selected_counted_calls"], j["counted_calls"]),
       ({"cuCtxGetCurrent": 6000, "cuStreamGetCaptureInfo_v2": 3000}, 9000, HOT_TOTAL), "--thread worker")
    eq([(f["name"], f["calls"]) for f in j["functions"] if not f["counted_calls"]], [("cuStreamSynchronize", 600)],
       "--thread worker: recorded")
    j, _ = report_json(cnt, "--thread", "3002")
    eq([(f["name"], f["calls"], f["counted_calls"]) for f in j["functions"]], [("cuCtxGetCurrent", 0, 5)],
       "--thread 3002")
    j, _ = report_json(cnt, "--functions", "cuCtx*")
    eq([(f["name"], f["counted_calls"]) for f in j["functions"]], [("cuCtxGetCurrent", 30005)], "--functions cuCtx*")
    eq(j["selected_counted_calls"], 30005, "--functions: selected counted calls")
    first = hot_first_round()
    eq(first, {"cuCtxGetCurrent": 12497, "cuStreamGetCaptureInfo_v2": 6249}, "first round (from the timeline)")
    j, _ = report_json(cnt, "--time-range", "0:60ms")
    eq(counted_by(j), first, "--time-range: the COUNTS blocks read in it")
    # a TSC clock: COUNTS times convert like events'
    tsc = gen("hotc-tsc", "hot", "--count", "--tsc")
    jt, _ = report_json(tsc)
    eq((jt["functions"], jt["threads"], jt["counted_calls"], jt["duration_ns"]),
       (jc["functions"], jc["threads"], jc["counted_calls"], jc["duration_ns"]), "TSC clock")
    eq(jc["duration_ns"], 120020000, "the span ends at the last COUNTS block")
    j, _ = report_json(tsc, "--time-range", "0:60ms")
    eq(counted_by(j), first, "--time-range with a TSC clock")
    # CSV lists calls: counted functions have none
    rows = report_csv(cnt)
    eq(len(rows), 11600, "CSV rows: recorded calls only")
    eq(sorted({r[1] for r in rows}), sorted(HOT_RECORDED), "CSV functions")
    # the text report
    out, _ = run(["report", "--no-color", cnt])
    lines = out.splitlines()
    for want in ["  events     23200 (11600 calls)",
                 "  counted    45005 calls of 2 functions besides the recorded ones (counted, not timed; --record-all records them)",
                 "  threads    3: 3000 main, 3001 worker, 3002",
                 "  (counted) = counted, not timed: the exact number of calls, no durations (--record-all records each call)"]:
        check(want in lines, f"line {want!r} missing:\n{out}")
    for name, calls in HOT_COUNTED.items():
        check(re.search(rf"^ +- +- +{calls} +- +- +- +- +-  {name} \(counted\)$", out, re.M),
              f"counted row of {name}:\n{out}")
    # percentages of time over the recorded functions only: 24 ms, 1.2 ms, 0.6 ms of 25.8 ms
    pcts = dict((m[1], m[0]) for m in re.findall(r"^ +(\d+\.\d) +\S+ \S+ +\d+ .*  (\S+)$", out, re.M))
    eq(pcts, {"cuLaunchKernel": "93.0", "cuStreamSynchronize": "4.7", "cuPointerGetAttribute": "2.3"},
       "Time (%) of the recorded functions")
    out, _ = run(["report", "--no-color", "--thread", "worker", cnt])
    check("  counted    45005 calls of 2 functions besides the recorded ones (counted, not timed; --record-all records them), "
          "9000 selected" in out.splitlines(), "selected counted calls in the header")
    out, _ = run(["report", "--no-color", rec])
    check("counted" not in out, "no counted row or line without COUNTS blocks")
    # perfetto: a counter track per counted function under the process, its running total from 0
    tracks = perfetto_counters(cnt)
    eq(sorted(tracks), sorted(HOT_COUNTED), "perfetto counter tracks: one per counted function")
    for name, vals in tracks.items():
        check(vals[0] == 0 and all(a <= b for a, b in zip(vals, vals[1:])), f"{name}: running total {vals}")
    eq({n: v[-1] for n, v in tracks.items()}, HOT_COUNTED, "perfetto counter totals per function")
    eq(len(tracks["cuCtxGetCurrent"]), 1 + 3, "a point per time the writer read the counters (3 rounds), from 0")
    tracks = perfetto_counters(cnt, "--thread", "worker")
    eq({k: v[-1] for k, v in tracks.items()}, {"cuCtxGetCurrent": 6000, "cuStreamGetCaptureInfo_v2": 3000},
       "perfetto counters, --thread worker")
    tracks = perfetto_counters(cnt, "--time-range", "0:60ms")
    eq({n: v[-1] for n, v in tracks.items()}, first, "perfetto counters, --time-range")
    eq(perfetto_counters(rec), {}, "no counter track without COUNTS blocks")
    # several files: counted and recorded calls of a function add up across processes
    j = json.loads(run(["report", "--format", "json", rec, cnt])[0])
    mf = {f["name"]: f for f in j["merged"]["functions"]}
    eq({n: (f["calls"], f["counted_calls"], f["processes"]) for n, f in mf.items()},
       {n: (2 * c - HOT_COUNTED.get(n, 0), HOT_COUNTED.get(n, 0), 2) for n, c in HOT_CALLS.items()},
       "merged functions")
    out, _ = run(["report", "--no-color", rec, cnt])
    check("  counted    45005 calls besides the recorded ones (counted, not timed; --record-all records them)" in out.splitlines(),
          "merged header")
    check(re.search(r"^ +[\d.]+ +\S+ \S+ +60010 .*  cuCtxGetCurrent \(30005 counted\)$", out, re.M),
          f"merged row of a function recorded in one process and counted in the other:\n{out}")


def test_counts_damage():
    """Damaged COUNTS blocks are skipped and reported, never trusted, never a crash; a cut file
    keeps exactly the counts of the blocks before the cut."""
    cnt = gen("hotc", "hot", "--count")
    with open(cnt, "rb") as f:
        good = f.read()
    base, _ = report_json(cnt)
    off, p, size, tid, entries = counts_blocks(good)[0]
    eq((tid, entries), (3000, [(0, 9998), (1, 4999)]), "the first COUNTS block (main, first round)")
    lost = 9998 + 4999
    bad = os.path.join(TMP, "bad.bin")

    def report(data, *opts, rc=0):
        with open(bad, "wb") as f:
            f.write(data)
        return report_json(bad, *opts, rc=rc)[0]

    def patched(at, fmt, value):
        b = bytearray(good)
        struct.pack_into(fmt, b, at, value)
        return bytes(b)

    def same_recorded(j, what):
        for n in HOT_RECORDED:
            eq(funcs_by_name(j)[n], funcs_by_name(base)[n], f"{what}: {n}")

    shrunk = good[:off] + struct.pack(fmt("cuhook_block"), BLOCK_MAGIC, BLOCK_COUNTS, 0, 8, struct.unpack_from("<I", good, off + 12)[0]) + \
        good[p:p + 8] + good[p + size:]
    for what, data in [("count + 1", patched(p + 4, "<I", 3)), ("count 2^32 - 1", patched(p + 4, "<I", 0xffffffff)),
                       ("count 0", patched(p + 4, "<I", 0)), ("payload of 8 bytes", shrunk)]:
        j = report(data)
        eq((j["corrupt_records"], j["errors"], j["truncated"]), (1, 1, False), f"{what}: damage counted")
        check(any("corrupt COUNTS block" in m for m in j["error_messages"]), f"{what}: {j['error_messages']}")
        eq(j["counted_calls"], HOT_TOTAL - lost, f"{what}: the block is skipped whole")
        eq(counted_by(j), {"cuCtxGetCurrent": 30005 - 9998, "cuStreamGetCaptureInfo_v2": 15000 - 4999}, what)
        eq({t["tid"]: t["counted_calls"] for t in j["threads"]}, {**HOT_THREAD_COUNTED, 3000: 36000 - lost},
           f"{what}: per thread")
        same_recorded(j, what)
        with open(bad, "wb") as f:
            f.write(data)
        run(["report", "--strict", bad], rc=3)
        run(["report", "--no-color", bad])
    # an entry naming a function no FUNCS block defined: that entry only is skipped
    j = report(patched(p + 16, "<I", 999))
    eq((j["unknown_function_ids"], j["errors"], j["corrupt_records"]), (1, 1, 0), "unknown function id")
    eq(counted_by(j), {"cuCtxGetCurrent": 30005 - 9998, "cuStreamGetCaptureInfo_v2": 15000}, "unknown id skipped")
    # counts that overflow 64 bits saturate
    top = (1 << 64) - 1
    data = patched(p + 24, "<Q", top)
    j = report(data)
    eq((j["errors"], j["counted_calls"], counted_by(j)["cuCtxGetCurrent"]), (0, top, top), "saturated sums")
    eq({t["tid"]: t["counted_calls"] for t in j["threads"]}[3000], top, "saturated thread sum")
    with open(bad, "wb") as f:
        f.write(data)
    out, _ = run(["report", "--no-color", bad])
    check(re.search(rf"^ +- +- +{top} .* cuCtxGetCurrent \(counted\)$", out, re.M), "saturated row")
    run(["report", "--no-color", "--sort", "calls", bad, cnt])
    # cuts: inside every COUNTS block and at 40 offsets over the file, the counts of the blocks
    # wholly before the cut, exactly
    ends = [(b[1] + b[2], sum(c for _, c in b[4])) for b in counts_blocks(good)]
    cuts = [x for b in counts_blocks(good) for x in (b[0] + 8, b[1] + 8, b[1] + b[2] - 1)]
    cuts += list(range(int.from_bytes(good[12:16], "little"), len(good), len(good) // 40))
    prev = -1
    for cut in sorted(cuts):
        j = report(good[:cut])
        eq(j["truncated"], True, f"cut at {cut}")
        eq(j["counted_calls"], sum(c for end, c in ends if end <= cut), f"counted calls, cut at {cut}")
        check(j["counted_calls"] >= prev, f"cut at {cut}: counts shrink with a longer prefix")
        prev = j["counted_calls"]
    j = report(good[:good.rfind(b"CHBK")])
    eq((j["counted_calls"], j["truncated"]), (HOT_TOTAL, True), "everything but the END block")


def test_count_finding():
    """The finding that suggests --count: fires when a few very short functions make most of the
    recorded calls, names them, and is gone once they are counted."""
    rec = gen("hot", "hot")
    j, _ = report_json(rec)
    hint = [f for f in j["findings"] if "--count" in f["text"]]
    eq(len(hint), 1, "one --count finding")
    eq(hint[0]["severity"], 0, "severity: info")
    check(hint[0]["text"].startswith(
        "Very short functions make most of the recorded calls: cuCtxGetCurrent (30005 calls, median 100 ns) "
        "and cuStreamGetCaptureInfo_v2 (15000 calls, median 50 ns), 80% of the 56605."), hint[0]["text"])
    check("--count 'cuCtxGetCurrent,cuStreamGetCaptureInfo_v2'" in hint[0]["text"], hint[0]["text"])
    out, _ = run(["report", "--no-color", rec])
    check("--count 'cuCtxGetCurrent,cuStreamGetCaptureInfo_v2'" in out.replace("\n    ", " "), "text finding")
    # counted: nothing left to suggest
    j, _ = report_json(gen("hotc", "hot", "--count"))
    eq([f for f in j["findings"] if "--count" in f["text"]], [], "no suggestion once counted")
    # one of them counted already (as the agent's default list counts the runtime's queries): the
    # suggested list keeps it, since --count replaces the list a trace was made with
    j, _ = report_json(gen("hotc1", "hot", "--count-capture"))
    hint = [f["text"] for f in j["findings"] if "--count" in f["text"]]
    eq(len(hint), 1, "one --count finding with one function counted")
    check("calls: cuCtxGetCurrent (30005 calls, median 100 ns), 72% of the 41605." in hint[0], hint[0])
    check("--count 'cuStreamGetCaptureInfo_v2,cuCtxGetCurrent' (cuhook" in hint[0], hint[0])
    # the thresholds: half the iterations leave cuStreamGetCaptureInfo_v2 under 10000 calls;
    # cuCtxGetCurrent alone still makes 53% of the calls
    j, _ = report_json(gen("hot2", "hot", "--iterations", "12000"))
    hint = [f["text"] for f in j["findings"] if "--count" in f["text"]]
    eq(len(hint), 1, "one --count finding")
    check("calls: cuCtxGetCurrent (15005 calls, median 100 ns), 53% of the 28305." in hint[0], hint[0])
    check("--count 'cuCtxGetCurrent'" in hint[0], hint[0])
    # the worker's 6000 calls of cuCtxGetCurrent are 61% of its selected calls, but under 10000
    j, _ = report_json(rec, "--functions", "cuCtxGetCurrent,cuStreamSync*", "--thread", "worker")
    eq([f for f in j["findings"] if "--count" in f["text"]], [], "under 10000 calls: no suggestion")
    # launches, allocations, copies, syncs are never suggested, however short (big: 20000 calls of
    # each of them and of cuGetProcAddress_v2, 20% of the calls)
    j, _ = report_json(gen("big", "big", "--calls", "100000", "--threads", "2"))
    eq([f for f in j["findings"] if "--count" in f["text"]], [], "no suggestion for analysed functions")


# ---- the GPU side (GPU_SESSION and GPU blocks: gen_trace gpu) ----------------------------------------

# scenario_gpu() in gen_trace.c, written again here: the calls (tid, function, start, end) and the
# GPU work (session, device, stream, start, end, kind, name, correlation, the start of the call
# that submitted it or the reason it has none). The expected numbers below are computed from
# these lists by the test's own code, not taken from the report.
GPU_MAIN, GPU_WORKER = 5200, 5201
GPU_CALLS = [
    (GPU_MAIN, "cuInit", 2000, 102000), (GPU_MAIN, "cuLibraryLoadData", 200000, 700000),
    (GPU_MAIN, "cuMemcpyHtoD_v2", 800000, 900000), (GPU_MAIN, "cuLaunchKernel", 1000000, 1005000),
    (GPU_MAIN, "cuLaunchKernel", 1100000, 1105000), (GPU_WORKER, "cuLaunchKernel", 1140000, 1145000),
    (GPU_MAIN, "cuLaunchKernelEx", 1200000, 1204000), (GPU_MAIN, "cuGraphLaunch", 1300000, 1310000),
    (GPU_MAIN, "cuMemsetD32_v2", 1500000, 1502000), (GPU_WORKER, "cuStreamSynchronize", 1510000, 1600000),
    (GPU_MAIN, "cuLibraryLoadData", 1600000, 1900000), (GPU_MAIN, "cuLaunchKernel", 1990000, 1995000),
    (GPU_MAIN, "cuMemcpyDtoH_v2", 2060000, 2260000),
    (GPU_MAIN, "cuLaunchKernel", 3100000, 3105000), (GPU_MAIN, "cuLaunchKernel", 3106000, 3109000),
    (GPU_MAIN, "cuMemcpyHtoDAsync_v2", 3220000, 3225000), (GPU_MAIN, "cuCtxSynchronize", 3226000, 3335000),
]
GEMM, SOFTMAX, RELU = ("gemm(float const*, float const*, float*, int)", "softmax(float const*, float*, int)",
                       "relu(float*, int)")
# (session, device, stream, start, end, kind, name, correlation, call start or link reason, api start)
GPU_WORK = [
    (1, 0, 7, 810000, 860000, "memcpy", "memcpy HtoD", 1, 800000, 801000),
    (1, 0, 7, 1010000, 1110000, "kernel", GEMM, 2, 1000000, 1001000),
    (1, 0, 7, 1110000, 1210000, "kernel", GEMM, 3, 1100000, 1101000),
    (1, 0, 9, 1150000, 1170000, "kernel", SOFTMAX, 12, 1140000, 1141000),
    (1, 0, 7, 1210000, 1240000, "kernel", SOFTMAX, 4, 1200000, 1201000),
    (1, 0, 7, 1320000, 1420000, "kernel", GEMM, 5, 1300000, 1301000),
    (1, 0, 7, 1420000, 1430000, "kernel", RELU, 5, 1300000, 1301000),
    (1, 0, 7, 1430000, 1440000, "kernel", RELU, 5, 1300000, 1301000),
    (1, 0, 7, 1505000, 1506000, "memset", "memset", 6, 1500000, 1501000),
    (1, 0, 9, 2000000, 2050000, "kernel", GEMM, 7, 1990000, 1991000),
    (1, 0, 7, 2100000, 2200000, "memcpy", "memcpy DtoH", 8, 2060000, 2061000),
    (1, 0, 7, 2300000, 2310000, "kernel", "init_kernel", 99, "no_api_record", None),
    (1, 0, 7, 2405000, 2415000, "kernel", RELU, 10, "api_record_in_no_call", 2400000),
    (1, 0, 7, 2505000, 2515000, "kernel", RELU, 11, "call_dropped", 2500000),
    (3, 0, 7, 3110000, 3210000, "kernel", GEMM, 1, 3100000, 3101000),
    (3, 1, 7, 3120000, 3170000, "kernel", GEMM, 3, 3106000, 3107000),
    (3, 0, 7, 3230000, 3330000, "memcpy", "memcpy HtoD", 2, 3220000, 3221000),
]
GPU_SESSIONS = {1: (1000, 2600000), 3: (3000000, 3500000)}   # the recorded ones (session 2: OTHER_USER)
GPU_LOADING = {"cuInit", "cuLibraryLoadData"}
GPU_SYNC = {"cuStreamSynchronize", "cuCtxSynchronize"}


def union(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def gpu_expected():
    """Busy time, active time and gaps per device, and each gap's time by what the host did."""
    dev = {}
    for d in sorted({w[1] for w in GPU_WORK}):
        busy = active = 0
        gaps = []
        for sess in GPU_SESSIONS:
            iv = union([(w[3], w[4]) for w in GPU_WORK if w[1] == d and w[0] == sess])
            if not iv:
                continue
            busy += sum(e - s for s, e in iv)
            active += iv[-1][1] - iv[0][0]
            gaps += [(iv[i][1], iv[i + 1][0]) for i in range(len(iv) - 1)]
        dev[d] = {"busy": busy, "active": active, "gaps": gaps}
    return dev


def host_state_split(a, b):
    """[a, b) by the host's state, by priority: loading, sync, another driver call, none."""
    cuts = sorted({a, b} | {t for _, _, s, e in GPU_CALLS for t in (s, e) if a < t < b})
    out = {"loading_ns": 0, "sync_ns": 0, "driver_ns": 0, "outside_ns": 0}
    for s, e in zip(cuts, cuts[1:]):
        live = {f for _, f, cs, ce in GPU_CALLS if cs <= s and e <= ce}
        key = ("loading_ns" if live & GPU_LOADING else "sync_ns" if live & GPU_SYNC else
               "driver_ns" if live else "outside_ns")
        out[key] += e - s
    return out


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return (xs[n // 2] + xs[(n - 1) // 2]) / 2


def test_gpu_json():
    """The GPU side in JSON: sessions, links, the kernel and copy tables, busy time, gaps with what
    the host was doing, launch latency and every record with its call, all exact."""
    path = gen("gpu", "gpu")
    j, err = report_json(path)
    eq(err, "", "stderr")
    eq((j["errors"], j["calls"], j["duration_ns"]), (0, len(GPU_CALLS), 3500000), "errors, calls, duration")
    g = j["gpu"]
    eq([(s["session"], s["status"], s["start_ns"], s["stop_ns"], s["records"], s["records_read"]) for s in g["sessions"]],
       [(1, "started", 1000, 2600000, 29, 29), (2, "other_user", 2700000, None, 0, 0),
        (3, "started", 3000000, 3500000, 6, 6)], "sessions")
    eq((g["work_records"], g["api_records"]), (len(GPU_WORK), 14), "records")
    reasons = [w[8] for w in GPU_WORK if isinstance(w[8], str)]
    want_links = {"linked": len(GPU_WORK) - len(reasons), "no_api_record": 1, "api_record_in_no_call": 1,
                  "call_dropped": 1}
    eq(g["links"], want_links, "links of the work records")
    eq(g["api_links"], {"linked": 12, "no_api_record": 0, "api_record_in_no_call": 1, "call_dropped": 1},
       "links of the API records")
    eq(g["selected"], {"work": 17, "kernels": 13, "memcpy": 3, "memset": 1, "links": want_links, "flows": 14},
       "selected")
    eq(g["window_ns"], sum(e - s for s, e in GPU_SESSIONS.values()), "window: the sessions' recorded time")
    # kernels: GPU time per name, nsys style
    by_name = {}
    for w in GPU_WORK:
        if w[5] == "kernel":
            by_name.setdefault(w[6], []).append(w[4] - w[3])
    kt = sum(sum(d) for d in by_name.values())
    eq(g["kernel_ns"], kt, "kernel time")
    rows = [(k["name"], k["instances"], k["total_ns"], k["min_ns"], k["max_ns"], k["med_ns"], k["percent"])
            for k in g["kernels"]]
    want = sorted(((n, len(d), sum(d), min(d), max(d), median(d), round(100 * sum(d) / kt, 1))
                   for n, d in by_name.items()), key=lambda r: (-r[2], r[0]))
    eq(rows, want, "kernel rows")
    eq([k["mangled"] for k in g["kernels"]], ["_Z4gemmPKfS0_Pfi", "_Z7softmaxPKfPfi", "_Z4reluPfi", "init_kernel"],
       "mangled names")
    eq(g["kernels"][0]["avg_ns"], 83333.3, "gemm average")
    eq(g["kernels"][0]["stddev_ns"], 25819.9, "gemm sample standard deviation")
    # copies and memsets: GPU time, bytes, bandwidth
    mem = {m["operation"]: m for m in g["memory"]}
    eq(sorted(mem), ["memcpy DtoH", "memcpy HtoD", "memset"], "operations")
    eq((mem["memcpy HtoD"]["count"], mem["memcpy HtoD"]["bytes"], mem["memcpy HtoD"]["total_ns"],
        mem["memcpy HtoD"]["min_bytes"], mem["memcpy HtoD"]["max_bytes"], mem["memcpy HtoD"]["gb_per_s"]),
       (2, 3 * MiB, 150000, MiB, 2 * MiB, round(3 * MiB / 150000, 3)), "HtoD")
    eq((mem["memcpy DtoH"]["bytes"], mem["memcpy DtoH"]["gb_per_s"]), (MiB, round(MiB / 100000, 3)), "DtoH")
    eq((mem["memset"]["bytes"], mem["memset"]["total_ns"], mem["memset"]["gb_per_s"]), (4096, 1000, 4.096), "memset")
    # busy, active, gaps per device
    exp = gpu_expected()
    window = g["window_ns"]
    for d in g["devices"]:
        e = exp[d["device"]]
        lens = [b - a for a, b in e["gaps"]]
        eq((d["busy_ns"], d["active_ns"], d["busy_percent"], d["gaps"]["count"], d["gaps"]["total_ns"],
            d["gaps"]["max_ns"]),
           (e["busy"], e["active"], round(100 * e["busy"] / window, 1), len(lens), sum(lens), max(lens, default=0)),
           f"device {d['device']}")
    d0 = g["devices"][0]
    eq((d0["busy_ns"], d0["active_ns"], d0["gaps"]["count"], d0["gaps"]["median_ns"]), (781000, 1925000, 9, 90000),
       "device 0 in numbers")
    eq([(s["stream"], s["work"], s["busy_ns"], s["lanes"]) for s in d0["streams"]], [(7, 14, 731000, 1), (9, 2, 70000, 1)],
       "device 0 streams (the softmax on stream 9 overlaps a gemm on 7: counted once in the device's busy time)")
    # what the host was doing in the gaps
    split = {k: 0 for k in ("loading_ns", "sync_ns", "driver_ns", "outside_ns")}
    for a, b in exp[0]["gaps"]:
        for k, x in host_state_split(a, b).items():
            split[k] += x
    gaps = g["gaps"]
    eq({k: gaps[k] for k in split}, split, "gap time by host state")
    eq(split, {"loading_ns": 300000, "sync_ns": 94000, "driver_ns": 167000, "outside_ns": 583000},
       "gap time by host state, in numbers")
    eq((gaps["count"], gaps["total_ns"], gaps["median_ns"], gaps["max_ns"]), (9, 1144000, 90000, 494000), "gaps")
    top = gaps["largest"][0]
    eq((top["start_ns"], top["gap_ns"], top["before"], top["after"]), (1506000, 494000, "memset", GEMM), "largest gap")
    eq({k: top[k] for k in split}, host_state_split(1506000, 2000000), "largest gap by host state")
    eq((top["calls"]["loading"]["func"], top["calls"]["loading"]["start_ns"], top["calls"]["sync"]["tid"]),
       ("cuLibraryLoadData", 1600000, GPU_WORKER), "the calls in progress in the largest gap")
    eq([x["gap_ns"] for x in gaps["largest"]], [494000, 150000, 100000, 95000, 90000], "the five largest")
    eq((gaps["host_bound"]["start_ns"], gaps["host_bound"]["gap_ns"], gaps["host_bound"]["outside_ns"]),
       (860000, 150000, 105000), "the most host-bound gap")
    # launch latency: API record start to GPU start
    lat = sorted(w[3] - w[9] for w in GPU_WORK if w[9] is not None)
    L = g["launch_latency"]
    eq((L["count"], L["min_ns"], L["max_ns"], L["med_ns"], L["negative"]),
       (len(lat), lat[0], lat[-1], median(lat), 0), "latency")
    eq((L["p90_ns"], L["p99_ns"]), (lat[-(-90 * len(lat) // 100) - 1], lat[-(-99 * len(lat) // 100) - 1]),
       "latency percentiles (nearest rank)")
    eq(L["avg_ns"], round(sum(lat) / len(lat), 1), "latency average")
    bounds = [10000, 100000, 1000000, 10000000, 100000000, None]
    eq([h["count"] for h in L["histogram"]],
       [sum(1 for x in lat if (b is None or x < b) and (i == 0 or x >= bounds[i - 1])) for i, b in enumerate(bounds)],
       "latency histogram")
    eq([h["below_ns"] for h in L["histogram"]], bounds, "histogram bounds")
    # every record, in GPU start order, with the call that submitted it
    recs = g["records"]
    want = sorted(GPU_WORK, key=lambda w: w[3])
    eq(len(recs), len(want), "records")
    for r, w in zip(recs, want):
        what = f"record {w[6]} at {w[3]}"
        eq((r["session"], r["device"], r["stream"], r["start_ns"], r["end_ns"], r["kind"], r["name"], r["correlation"]),
           w[:8], what)
        if isinstance(w[8], str):
            eq((r["link"], r["call"]), (w[8], None), what + ": unlinked")
        else:
            eq((r["link"], r["call"]["start_ns"]), ("linked", w[8]), what + ": its call")
            call = [c for c in GPU_CALLS if c[2] == w[8]][0]
            eq((r["call"]["tid"], r["call"]["func"], r["call"]["dur_ns"]), (call[0], call[1], call[3] - call[2]),
               what + ": its call's thread and function")
        eq(r["latency_ns"], None if w[9] is None else w[3] - w[9], what + ": latency")
    graph = [r for r in recs if r["graph_id"]]
    eq([(r["name"], r["graph_node_id"], r["call"]["func"]) for r in graph],
       [(GEMM, 11, "cuGraphLaunch"), (RELU, 12, "cuGraphLaunch"), (RELU, 13, "cuGraphLaunch")], "graph launch")
    eq((recs[1]["grid"], recs[1]["block"], recs[1]["shared_static"], recs[1]["registers"]), ([64, 8, 1], [256, 1, 1], 16384, 64),
       "kernel launch parameters")
    # the TSC clock gives the same GPU side
    jt, _ = report_json(gen("gpu-tsc", "gpu", "--tsc"))
    eq(jt["gpu"], g, "the GPU side with a TSC clock")


def test_gpu_text():
    """The GPU sections of the text report, line by line where the numbers are exact."""
    path = gen("gpu", "gpu")
    out, _ = run(["report", "--no-color", path])
    lines = out.splitlines()

    def has(line):
        check(line in lines, f"line {line!r} missing:\n{out}")
    has("  gpu        17 work records, 14 linked to their call, 3 unlinked (1 no API record, 1 API record in no "
        "recorded call, 1 call dropped); 3 GPU sessions, 2 recorded")
    has("CUDA GPU kernel summary (GPU time)")
    kern = re.findall(r"^ +([\d.]+) +(\S+ \S+) +(\d+) +(\S+ \S+) +(\S+ \S+) +(\S+ \S+) +(\S+ \S+) +(\S+ \S+)  (.+)$",
                      out[out.index("CUDA GPU kernel summary"):out.index("CUDA GPU copies and memsets by time")], re.M)
    eq(kern, [("83.3", "500.000 us", "6", "83.333 us", "100.000 us", "50.000 us", "100.000 us", "25.820 us", GEMM),
              ("8.3", "50.000 us", "2", "25.000 us", "25.000 us", "20.000 us", "30.000 us", "7.071 us", SOFTMAX),
              ("6.7", "40.000 us", "4", "10.000 us", "10.000 us", "10.000 us", "10.000 us", "0 ns", RELU),
              ("1.7", "10.000 us", "1", "10.000 us", "10.000 us", "10.000 us", "10.000 us", "0 ns", "init_kernel")],
       "kernel rows")
    size = out[out.index("CUDA GPU copies and memsets by size"):out.index("GPU busy")]
    eq(re.findall(r"^ +(\S+ \S+) +(\d+) .* ([\d.]+)  (memcpy \w+|memset)$", size, re.M),
       [("3.00 MiB", "2", "20.97", "memcpy HtoD"), ("1.00 MiB", "1", "10.49", "memcpy DtoH"),
        ("4.00 KiB", "1", "4.10", "memset")], "copies by size, GB/s")
    busy = out[out.index("GPU busy"):out.index("GPU idle gaps")]
    has("GPU busy (over the 3.099 ms the GPU sessions recorded)")
    eq(re.findall(r"^  (\d+|  ) +(all|\d+) +(\d+) +(\S+ \S+) +([\d.]+)", busy, re.M),
       [("0", "all", "16", "781.000 us", "25.2"), ("  ", "7", "14", "731.000 us", "23.6"),
        ("  ", "9", "2", "70.000 us", "2.3"), ("1", "all", "1", "50.000 us", "1.6"), ("  ", "7", "1", "50.000 us", "1.6")],
       "busy rows")
    check(re.search(r"^  0 +all .* 1\.925 ms +40\.6$", busy, re.M), f"device 0's active time:\n{busy}")
    has("  9 gaps: total 1.144 ms, median 90.000 us, max 494.000 us")
    has("  meanwhile the host was in: loading 300.000 us (26.2%) (cuLibraryLoadData, main), sync 94.000 us (8.2%) "
        "(cuStreamSynchronize, worker), other driver calls 167.000 us (14.6%) (cuMemcpyDtoH_v2, main), outside the "
        "driver 583.000 us (51.0%)")
    has(f"    494.000 us at   1.506 ms on device 0, after memset, before {GEMM}: loading 300.000 us "
        "(cuLibraryLoadData, main), sync 90.000 us (cuStreamSynchronize, worker), other driver calls 5.000 us "
        "(cuLaunchKernel, main), outside the driver 99.000 us")
    has("  device 1: no gap")
    has("  16 kernels, copies and memsets: min 4.000 us, median 9.000 us, p90 119.000 us, p99 129.000 us, max "
        "129.000 us, average 25.312 us")
    eq(re.findall(r"^ +(< 10 us|10-100 us|100 us-1 ms|1-10 ms|10-100 ms|>= 100 ms) +(\d+)", out, re.M),
       [("< 10 us", "11"), ("10-100 us", "3"), ("100 us-1 ms", "2"), ("1-10 ms", "0"), ("10-100 ms", "0"),
        (">= 100 ms", "0")], "latency histogram")
    has("  1  recorded from 1.000 us to 2.600 ms (2.599 ms), 29 records, 0 dropped by CUPTI; CUPTI 13.0.1 "
        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13")
    has("  2  not recorded at 2.700 ms: another CUPTI user owns the process (a profiler, nsys, a "
        "CUDA_INJECTION64_PATH tool); the API calls are traced; CUPTI /usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13")
    has("  17 work records (17 selected: 13 kernels, 3 copies, 1 memset), 14 API records; 14 linked to the call that "
        "submitted them, 3 not: 1 no API record, 1 API record in no recorded call, 1 call dropped")
    has("     init_kernel at 2.300 ms on device 0 (correlation id 99, session 1): no API record")
    has(f"     {RELU} at 2.505 ms on device 0 (correlation id 11, session 1): call dropped")
    # findings on GPU facts: host-bound only where the GPU idled with no sync and no loading going
    # on (583 + 167 us of the steady state: 1.975 ms active - 300 us of loading), loading apart
    j, _ = report_json(path)
    texts = [f["text"] for f in j["findings"]]
    hb = [t for t in texts if t.startswith("The GPU idled")]
    eq(len(hb), 1, f"one host-bound finding: {texts}")
    check(hb[0].startswith("The GPU idled 750.000 us, 45% of its steady state (1.675 ms), waiting for the host: no sync "
                           "call and no loading was in progress (583.000 us outside any driver call, 167.000 us in "
                           "other driver calls). The largest such gap, 150.000 us at 860.000 us between memcpy HtoD "
                           f"and {GEMM}, had 105.000 us outside the driver."), hb[0])
    eq([f["severity"] for f in j["findings"] if f["text"].startswith("The GPU idled")], [1], "host-bound severity (< 50%)")
    check(any(t.startswith("One-off loading: the GPU idled 300.000 us (26% of its idle time) while the host loaded "
                           "modules or libraries or initialised (most in cuLibraryLoadData).") for t in texts),
          f"one-off loading finding: {texts}")
    check(any(t.startswith("Copies DtoH through pageable host memory (1, 1.00 MiB) ran at 5.24 GB/s as the calls that "
                           "made them saw it (200.000 us in those calls), 10.49 GB/s on the GPU.") for t in texts),
          f"pageable copies: {texts}")
    check(not any("HtoD through pageable" in t for t in texts), "HtoD pageable at 10.49 GB/s as the call saw it: no finding")
    check(any(t.startswith("3 of 17 GPU records are not linked") for t in texts), "unlinked records finding")
    check(any(t.startswith("GPU session 2 recorded nothing: another CUPTI user") and "guesses" not in t for t in texts),
          f"the OTHER_USER session: {texts}")
    check(not any(t.startswith("Between GPU submissions") for t in texts), "no host-side guess with GPU records")
    check(not any("host-side guess" in t for t in texts), "nothing called a guess with GPU records")


def test_gpu_first_call():
    """First-call initialisation is loading: a first cuLaunchKernel of 105 us (21 times the median
    of the launches: the driver loading a module lazily) in a GPU gap counts as loading, not as
    host-bound; the same scenario with a first launch like the others does not."""
    j, _ = report_json(gen("gpu", "gpu"))
    gap = [x for x in j["gpu"]["gaps"]["largest"] if x["start_ns"] == 860000][0]
    eq((gap["loading_ns"], gap["driver_ns"], gap["outside_ns"]), (0, 45000, 105000), "an ordinary first launch")
    j, _ = report_json(gen("lazy", "gpu", "--lazy-first-launch"))
    gap = [x for x in j["gpu"]["gaps"]["largest"] if x["start_ns"] == 860000][0]
    eq({k: gap[k] for k in ("loading_ns", "sync_ns", "driver_ns", "outside_ns")},
       {"loading_ns": 105000, "sync_ns": 0, "driver_ns": 40000, "outside_ns": 5000}, "the gap with the first launch")
    eq((gap["calls"]["loading"]["func"], gap["calls"]["loading"]["start_ns"], gap["calls"]["loading"]["dur_ns"]),
       ("cuLaunchKernel", 900000, 105000), "the first launch, as loading")
    eq(j["gpu"]["gaps"]["loading_ns"], 300000 + 105000, "loading in all gaps")
    second = [x for x in j["gpu"]["gaps"]["largest"] if x["start_ns"] == 1506000][0]
    eq((second["driver_ns"], second["calls"]["driver"]["start_ns"]), (5000, 1990000), "later launches stay driver calls")


def test_gpu_csv():
    """CSV of a trace with GPU records: a record column, a row per GPU work record among the calls
    in start order, with the linked call's tid, function and entry time."""
    import csv
    import io
    path = gen("gpu", "gpu")
    out, _ = run(["report", "--format", "csv", path])
    rows = list(csv.reader(io.StringIO(out)))
    head = rows[0]
    eq(head[:3], ["record", "tid", "func"], "first columns")
    eq(head[-5:], ["category", "thread", "kernel", "start_realtime_ns", "call_device"], "the last columns")
    eq(head[21:-5], ["name", "device", "context", "stream", "correlation", "session", "grid", "block", "shared_static",
                   "shared_dynamic", "registers", "copy_kind", "bytes", "value", "graph_id", "graph_node_id",
                   "api_start_ns", "latency_ns", "link", "call_start_ns"], "GPU columns")
    for r in rows[1:]:
        eq(len(r), len(head), f"columns of {r}")
    col = {n: i for i, n in enumerate(head)}
    calls = [r for r in rows[1:] if r[0] == "call"]
    gpu = [r for r in rows[1:] if r[0] != "call"]
    eq((len(calls), len(gpu)), (len(GPU_CALLS), len(GPU_WORK)), "call and GPU rows")
    starts = [int(r[col["start_ns"]]) for r in rows[1:]]
    eq(starts, sorted(starts), "rows in start order")
    want = sorted(GPU_WORK, key=lambda w: w[3])
    for r, w in zip(gpu, want):
        what = f"GPU row {w[6]} at {w[3]}"
        eq((r[0], r[col["name"]], int(r[col["start_ns"]]), int(r[col["dur_ns"]]), int(r[col["device"]]),
            int(r[col["stream"]]), int(r[col["correlation"]]), int(r[col["session"]])),
           (w[5], w[6], w[3], w[4] - w[3], w[1], w[2], w[7], w[0]), what)
        if isinstance(w[8], str):
            eq((r[col["link"]], r[1], r[2], r[col["call_start_ns"]]), (w[8], "", "", ""), what + ": unlinked")
        else:
            call = [c for c in GPU_CALLS if c[2] == w[8]][0]
            eq((r[col["link"]], int(r[1]), r[2], int(r[col["call_start_ns"]])), ("linked", call[0], call[1], w[8]),
               what + ": its call")
        eq((r[col["category"]], r[col["kernel"]], int(r[col["start_realtime_ns"]])),
           ("", w[6] if w[5] == "kernel" else "", 1700000000000000000 + w[3]), what + ": last columns")
    k = [r for r in gpu if r[col["correlation"]] == "2" and r[col["session"]] == "1"][0]
    eq((k[col["grid"]], k[col["block"]], k[col["shared_static"]], k[col["registers"]]), ("64x8x1", "256x1x1", "16384", "64"),
       "kernel columns")
    m = [r for r in gpu if r[0] == "memcpy"][0]
    eq((m[col["copy_kind"]], m[col["bytes"]], m[col["grid"]]), ("HtoD", str(MiB), ""), "memcpy columns")
    # a trace without GPU blocks keeps its columns (test_old_format: byte for byte)
    eq(report_csv(gen("basic"))[0][:2], ["1000", "cuInit"], "basic CSV unchanged")


def gpu_perfetto(path, *opts):
    """The Perfetto trace's GPU side: track names by uuid and parent, slices (track, ts from the
    trace start, name, flows, terminating flows), and the flow ids on call slices and on GPU slices."""
    tr = perfetto_trace(*opts, path)
    tracks = {u: (t["name"], t["parent"]) for u, t in tr.tracks.items()}
    slices, starts, ends = [], {}, {}
    for e in tr.events:
        ts = e["ts"] - tr.origin()
        if e["type"] == 1:
            slices.append((e["track"], ts, e["name"], e["flows"], e["terminating"]))
        for fl in e["flows"]:
            starts[fl] = (e["track"], ts, e["name"])
        for fl in e["terminating"]:
            ends[fl] = (e["track"], ts, e["name"])
    return tracks, slices, starts, ends


def test_gpu_exports():
    """Chrome and Perfetto: a track per device and stream, a slice per piece of work, a flow from
    each submitting call to each piece of work it submitted: as many flows as linked records."""
    path = gen("gpu", "gpu")
    linked = [w for w in GPU_WORK if not isinstance(w[8], str)]
    out, _ = run(["report", "--format", "chrome", path])
    ev = json.loads(out)["traceEvents"]
    gpu_x = [e for e in ev if e["ph"] == "X" and e["cat"] in ("kernel", "memcpy", "memset")]
    eq(len(gpu_x), len(GPU_WORK), "chrome GPU slices")
    procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    eq(sorted(v for k, v in procs.items() if k != 5200), ["GPU 0 (pid 5200)", "GPU 1 (pid 5200)"], "a process per device")
    threads = sorted((procs[e["pid"]], e["args"]["name"]) for e in ev
                     if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] != 5200)
    eq(threads, [("GPU 0 (pid 5200)", "stream 7"), ("GPU 0 (pid 5200)", "stream 9"), ("GPU 1 (pid 5200)", "stream 7")],
       "a track per stream")
    eq(sorted((procs[e["pid"]], e["tid"], round(e["ts"] * 1000), round(e["dur"] * 1000), e["name"]) for e in gpu_x),
       sorted((f"GPU {w[1]} (pid 5200)", w[2], w[3], w[4] - w[3], w[6]) for w in GPU_WORK), "chrome GPU slices' places")
    s = {e["id"]: e for e in ev if e["ph"] == "s"}
    f = {e["id"]: e for e in ev if e["ph"] == "f"}
    eq((len(s), len(f), sorted(s)), (len(linked), len(linked), sorted(f)), "chrome flows: one per linked record")
    calls = {(e["tid"], round(e["ts"] * 1000)): e["name"] for e in ev if e["ph"] == "B" and e["pid"] == 5200}
    gpu_at = {(e["pid"], e["tid"], round(e["ts"] * 1000)): e["name"] for e in gpu_x}
    pairs = sorted((calls[(s[i]["tid"], round(s[i]["ts"] * 1000))], round(s[i]["ts"] * 1000),
                    gpu_at[(f[i]["pid"], f[i]["tid"], round(f[i]["ts"] * 1000))], round(f[i]["ts"] * 1000)) for i in s)
    eq(pairs, sorted(([c[1] for c in GPU_CALLS if c[2] == w[8]][0], w[8], w[6], w[3]) for w in linked),
       "each flow from the submitting call to its work")
    check(all(e["bp"] == "e" for e in f.values()), "flow ends bind to the enclosing GPU slice")
    # perfetto: a track per device under the process, a track per stream under its device
    tracks, slices, starts, ends = gpu_perfetto(path)
    names = {u: n for u, (n, _) in tracks.items()}
    dev_tracks = {u: n for u, (n, p) in tracks.items() if n.startswith("GPU ")}
    eq(sorted(dev_tracks.values()), ["GPU 0", "GPU 1"], "perfetto device tracks")
    stream_tracks = sorted((dev_tracks[p], n) for u, (n, p) in tracks.items() if p in dev_tracks)
    eq(stream_tracks, [("GPU 0", "stream 7"), ("GPU 0", "stream 9"), ("GPU 1", "stream 7")], "perfetto stream tracks")
    gpu_slices = [(names[t], ts, n) for t, ts, n, _, _ in slices if t in tracks and tracks[t][1] in dev_tracks]
    eq(len(gpu_slices), len(GPU_WORK), "perfetto GPU slices")
    eq(len(tracks), 1 + 2 + 2 + 3, "perfetto tracks: process, 2 threads, 2 devices, 3 streams")
    eq((len(starts), len(ends), sorted(starts)), (len(linked), len(linked), sorted(ends)),
       "perfetto flows: one per linked record, each begun and ended")
    pairs = sorted((starts[i][2], starts[i][1], ends[i][2], ends[i][1]) for i in starts)
    eq(pairs, sorted(([c[1] for c in GPU_CALLS if c[2] == w[8]][0], w[8], w[6], w[3]) for w in linked),
       "perfetto flows from the submitting call's slice to its work's")
    graph = [s for s in slices if len(s[3]) > 1]
    eq([(g[2], g[1], len(g[3])) for g in graph], [("cuGraphLaunch", 1300000, 3)], "the graph launch begins 3 flows")


def test_gpu_filters():
    """The options select GPU work: --time-range by its GPU start, --functions and --thread by the
    call that submitted it (unlinked work then goes)."""
    path = gen("gpu", "gpu")
    j, _ = report_json(path, "--time-range", "3ms:")
    eq([(r["session"], r["start_ns"]) for r in j["gpu"]["records"]], [(3, 3110000), (3, 3120000), (3, 3230000)],
       "--time-range 3ms:")
    eq(j["gpu"]["window_ns"], 500000, "window within the range")
    eq(j["gpu"]["selected"]["flows"], 3, "flows within the range")
    j, _ = report_json(path, "--thread", "worker")
    eq([(r["name"], r["call"]["tid"]) for r in j["gpu"]["records"]], [(SOFTMAX, GPU_WORKER)], "--thread worker")
    j, _ = report_json(path, "--functions", "cuGraph*")
    eq([r["graph_node_id"] for r in j["gpu"]["records"]], [11, 12, 13], "--functions cuGraph*")
    eq(j["gpu"]["selected"]["links"]["linked"], 3, "linked among the selected")
    eq(j["gpu"]["selected"]["flows"], 3, "flows of the selected")
    rows = [r.split(",")[0] for r in run(["report", "--format", "csv", "--functions", "cuGraph*", path])[0].splitlines()[1:]]
    eq(rows, ["call", "kernel", "kernel", "kernel"], "CSV rows with --functions cuGraph*")


def test_gpu_refused():
    """GPU sessions that recorded nothing (no CUPTI, another CUPTI user): listed, the reason in the
    findings, the old findings kept but called host-side guesses; the rest as without them."""
    base, _ = report_json(gen("basic"))
    for opt, words in [("no-cupti", "not recorded at 500 ns: no CUPTI library found (tried: libcupti.so.13)"),
                       ("other-user", "not recorded at 500 ns: another CUPTI user owns the process")]:
        path = gen("refused-" + opt, "basic", "--gpu-session", opt)
        out, _ = run(["report", "--no-color", path])
        check(f"  1  {words}" in out, f"{opt}: the session line: {out}")
        check("  gpu        0 work records, 0 linked to their call, 0 unlinked; 1 GPU session, 0 recorded" in out,
              f"{opt}: header line")
        j, _ = report_json(path)
        eq([s["status"] for s in j["gpu"]["sessions"]], [opt.replace("-", "_")], f"{opt}: JSON session")
        eq((j["gpu"]["records"], j["gpu"]["kernels"]), ([], []), f"{opt}: no records")
        for k in ["functions", "categories", "transfers", "stages", "gaps", "slowest_calls", "calls", "errors"]:
            eq(j[k], base[k], f"{opt}: {k} as without the session")
        texts = [f["text"] for f in j["findings"]]
        guess = " (A host-side guess: this trace has no GPU records to check it against.)"
        old = [f["text"] for f in base["findings"]]
        eq([t for t in texts if not t.startswith("GPU session")],
           [t + guess if t.startswith(("The host spends", "Between GPU submissions")) else t for t in old],
           f"{opt}: the old findings, the GPU guesses marked")
        eq(len([t for t in texts if t.startswith("GPU session 1 recorded nothing") and
                t.endswith("The findings about the GPU are host-side guesses.")]), 1, f"{opt}: why nothing was recorded")
        rows = run(["report", "--format", "csv", path])[0].splitlines()
        eq((rows[0].split(",")[0], len(rows) - 1, {r.split(",")[0] for r in rows[1:]}), ("record", 27, {"call"}),
           f"{opt}: CSV: the record column, calls only")


def gpu_blocks(data):
    """(offset, type, payload offset, size) of the GPU_SESSION and GPU blocks."""
    return [b for b in blocks(data) if b[1] in (BLOCK_GPU_SESSION, BLOCK_GPU)]


def gpu_records(data, p):
    """(offset, type, size) of the records of the GPU block whose payload is at p."""
    n = int.from_bytes(data[p:p + 4], "little")
    off, out = p + 8, []
    for _ in range(n):
        typ, _, size = struct.unpack_from("<BBH", data, off)
        out.append((off, typ, size))
        off += size
    return out


def test_gpu_damage():
    """Damaged GPU blocks: each fault skipped and counted, everything else read."""
    path = gen("gpu", "gpu")
    with open(path, "rb") as f:
        good = bytearray(f.read())
    gb = gpu_blocks(good)
    eq([t for _, t, _, _ in gb], [9, 10, 10, 10, 9, 9, 9, 10, 9], "GPU blocks of the scenario")
    first_gpu = gb[1][2]
    recs = gpu_records(good, first_gpu)
    eq([t for _, t, _ in recs], [5, 5, 1, 1, 1, 1, 1, 2, 2, 2, 2, 3], "records of the first GPU block")

    def report(data, name):
        p = os.path.join(TMP, name + ".bin")
        with open(p, "wb") as f:
            f.write(data)
        return report_json(p)[0]
    # the NAME record of gemm made an unknown type: skipped; the 6 gemm kernels lose their name
    bad = bytearray(good)
    bad[recs[0][0]] = 77
    j = report(bad, "unknown-type")
    check("unknown GPU record type 77 skipped" in j["error_messages"], j["error_messages"])
    check("6 GPU kernel records name ids no NAME record defines (first: id 1)" in j["error_messages"], j["error_messages"])
    eq(j["errors"], 1 + 6, "errors: the record, the 6 kernels")
    eq([(k["name"], k["instances"]) for k in j["gpu"]["kernels"]][0], ("(unnamed kernel)", 6), "unnamed kernels")
    eq(j["gpu"]["work_records"], 17, "all work read")
    # a record size that is not a multiple of 8: the rest of the block is skipped
    bad = bytearray(good)
    struct.pack_into("<H", bad, recs[7][0] + 2, 12)
    j = report(bad, "bad-size")
    eq(j["gpu"]["work_records"], 17 - 5, "the block's 5 work records are lost")
    eq(j["corrupt_records"], 1, "corrupt records")
    check(any(m.startswith(f"GPU block at offset {gb[1][0]}: corrupt record 7 (size 12,") for m in j["error_messages"]),
          j["error_messages"])
    # a record too short for its type (the 64-byte MEMCPY record called a KERNEL): skipped alone
    bad = bytearray(good)
    bad[recs[11][0]] = 2
    j = report(bad, "short-kernel")
    check("corrupt GPU KERNEL record (size 64, at least 88): skipped" in j["error_messages"], j["error_messages"])
    eq((j["gpu"]["work_records"], j["gpu"]["memory"][0]["count"]), (16, 1), "the copy lost, nothing else")
    # a NAME id out of range
    bad = bytearray(good)
    struct.pack_into("<I", bad, recs[1][0] + 8, 1 << 20)
    j = report(bad, "name-range")
    check("GPU NAME record with id 1048576 out of range (1..1048575): skipped" in j["error_messages"], j["error_messages"])
    eq([k["name"] for k in j["gpu"]["kernels"]].count("(unnamed kernel)"), 1, "softmax unnamed")
    # the first session's STARTED block of an unknown status: its GPU blocks are outside a session
    bad = bytearray(good)
    struct.pack_into("<I", bad, gb[0][2], 17)
    j = report(bad, "no-start")
    eq([s["session"] for s in j["gpu"]["sessions"]], [1, 2], "two sessions left")
    eq((j["gpu"]["work_records"], j["gpu"]["api_records"]), (3, 3), "session C's records only")
    check(any("outside a GPU session" in m for m in j["error_messages"]), j["error_messages"])
    check(any("STOPPED at offset" in m and "without a started session" in m for m in j["error_messages"]),
          j["error_messages"])
    eq(j["corrupt_records"], 3, "three GPU blocks skipped")
    # a GPU block cut short by the file's end: the trace is truncated there, the rest reported
    j = report(good[:gb[2][0] + 40], "cut")
    eq((j["truncated"], j["gpu"]["work_records"]), (True, 5), "cut in the second GPU block")


# ---- version 5: compact records (gen_trace --v5) -------------------------------------------------

# The TSC origin that puts an epoch boundary (2^38 ticks) 1301500 ns into the basic scenario:
# inside cuGetProcAddress_v2 (1301000..1302000), nested in cuLaunchKernel (1300000..1305000), in
# the middle of one EVENTS block of the main thread.
EPOCH_TSC = (1 << 38) - 2 * 1301500


def same_outputs(a, b, what, fmts=("text", "json", "csv", "jsonl")):
    """Each format of `cuhook report` gives the same bytes for traces a and b, paths aside."""
    for fmt in fmts:
        outs = []
        for path in (a, b):
            out, _ = run(["report", "--no-color", "--format", fmt, path])
            outs.append(out.replace(path, "TRACE").splitlines())
        for i, (x, y) in enumerate(zip(*outs)):
            eq(y, x, f"{what}: line {i + 1} of the {fmt} report")
        eq(len(outs[1]), len(outs[0]), f"{what}: lines of the {fmt} report")


def call_attrs(calls):
    return [(c.tid, c.func, c.entry, c.exit, c.depth, c.args, c.nregs, c.nstack, c.flags, c.ret, c.value, c.data)
            for c in calls]


def test_v5():
    """Version 5's compact records read exactly, by the report and by tests/lib/cuhooktest/tracefile.py:
    the basic scenario written with them (ENTRY5, ENTRY5_X for the entry-only call, EXIT5,
    EXIT5_ZERO, EXIT5_ZERO_VALUE, with --v5-long-exits EXIT5 and EXIT5_VALUE for rax 0, TIME,
    DATA, DROP records; an epoch that changes inside a call in the middle of a block) gives the
    report of its version 4 twin in every format, and the known numbers."""
    for opts in (["--v5"], ["--v5-long-exits"], ["--v5", "--agent-regs"]):
        what = " ".join(opts)
        base = ["basic", "--tsc", "--tsc-start", str(EPOCH_TSC)] + [o for o in opts if o == "--agent-regs"]
        p4 = gen("v4" + "".join(opts), *base)
        p5, exp = gen("v5" + "".join(opts), *(base + [o for o in opts if o != "--agent-regs"]), expect=True)
        with open(p4, "rb") as f:
            d4 = f.read()
        with open(p5, "rb") as f:
            d5 = f.read()
        eq((tf.read_header(d4).version, tf.read_header(d5).version), (4, 5), f"{what}: versions")
        check(len(d5) < len(d4), f"{what}: the version 5 file ({len(d5)} bytes) is not smaller ({len(d4)})")
        same_outputs(p4, p5, what)
        j, _ = report_json(p5)
        eq((j["events"], j["calls"], j["dropped"], j["errors"], j["data_records"], j["truncated"]),
           (53, 27, 5, 0, 11, False), f"{what}: counts")
        eq(j["events"], exp["events"], f"{what}: events vs generator")
        f = funcs_by_name(j)
        for name, (calls, total) in BASIC_CALLS.items():
            eq((f[name]["calls"], f[name]["total_ns"]), (calls, total), f"{what}: {name}")
        eq(f["cuStreamQuery"]["failed"], 1, f"{what}: failed cuStreamQuery (EXIT5 of 600)")
        # tracefile.py: the same calls as from version 4, and the values the scenario wrote
        t4, t5 = tf.read_trace(p4), tf.read_trace(p5, records=True)
        eq(call_attrs(t5.calls), call_attrs(t4.calls), f"{what}: tracefile calls")
        eq(call_attrs(t5.entry_only), call_attrs(t4.entry_only), f"{what}: tracefile entry-only calls")
        eq((t5.entries, t5.drop_records, t5.dropped_reported, t5.event_times),
           (t4.entries, t4.drop_records, t4.dropped_reported, t4.event_times), f"{what}: tracefile counts")
        by = {}
        for c in t5.calls:
            by.setdefault(c.name, []).append(c)
        eq({n: len(cs) for n, cs in by.items()},
           {n: k - (n == "cuStreamSynchronize") for n, (k, _) in BASIC_CALLS.items()}, f"{what}: tracefile calls")
        gpa = by["cuGetProcAddress_v2"][0]
        eq((gpa.entry >> 38, gpa.exit >> 38, gpa.exit - gpa.entry, gpa.depth), (0, 1, 2000, 1),
           f"{what}: cuGetProcAddress_v2 across the epoch boundary")
        eq(by["cuLaunchKernel"][1].exit - by["cuLaunchKernel"][1].entry, 10000, f"{what}: its cuLaunchKernel")
        eq(by["cuLaunchKernel"][0].args, (0xf00d, 256, 1, 1, 128, 1, 1, 0, 0, 0x5000, 0), f"{what}: launch args")
        six = "--agent-regs" not in opts
        eq(by["cuMemAlloc_v2"][1].args, (0x7ffc0058, MiB) + (0,) * 4 * six, f"{what}: cuMemAlloc_v2 args")
        eq([(c.value, c.data) for c in by["cuMemAlloc_v2"]],
           [(None, [(1, (0x7f0000000000,), b"")]), (0x7f0000100000, []), (None, [(1, (0x7f0000200000,), b"")])],
           f"{what}: cuMemAlloc_v2 values (an EXIT5 value, DATA after EXIT)")
        eq(by["cuModuleGetFunction"][0].data, [(0, (), b"vecAdd"), (1, (0xf00d,), b"")],
           f"{what}: cuModuleGetFunction DATA after its ENTRY and after its EXIT")
        eq([c.ret for c in by["cuStreamQuery"]] + [c.ret for c in by["cuInit"]], [600, 0], f"{what}: returns")
        eq([(c.name, c.flags, c.args, c.exit) for c in t5.entry_only],
           [("cuStreamSynchronize", 1, (5,) + (0,) * 5 * six, None)], f"{what}: the entry-only call")
        raws = {r.raw for _, _, r in t5.records}
        want = {REC5_ENTRY, REC5_ENTRY_X, REC5_EXIT, REC5_TIME, REC_DATA, REC_DROP}
        want |= {REC5_EXIT_VALUE} if "--v5-long-exits" in opts else {REC5_EXIT_ZERO, REC5_EXIT_ZERO_VALUE}
        eq(raws, want, f"{what}: record types written")
        mid = [off for off, _, r in t5.records if r.raw == REC5_TIME and r.off != 8]
        eq([struct.unpack_from("<Q", d5, off)[0] >> 32 for off in mid], [1], f"{what}: TIME records inside blocks")
    # An ENTRY5_X with fewer stack slots than the function's FUNCS entry says: the first
    # cuLaunchKernel's ENTRY5 (the word and 11 values) rewritten in place as one of 6 + 4.
    t5 = tf.read_trace(p5, records=True)
    off, _, r = next(x for x in t5.records if x[2].raw == REC5_ENTRY and t5.funcs[x[2].func] == "cuLaunchKernel")
    eq(r.size, 96, "cuLaunchKernel's ENTRY5")
    x = bytearray(d5)
    w = struct.unpack_from("<Q", d5, off)[0]
    x[off:off + 96] = struct.pack("<QBBB5x10Q", w & ~0xF | REC5_ENTRY_X, 0, 6, 4, *r.args[:10])
    path = os.path.join(TMP, "v5-entry-x.bin")
    with open(path, "wb") as f:
        f.write(x)
    j, _ = report_json(path)
    eq((j["calls"], j["errors"], funcs_by_name(j)["cuLaunchKernel"]["total_ns"]), (27, 0, 20000), "ENTRY5_X: counts")
    rows = [json.loads(ln) for ln in run(["report", "--format", "jsonl", path])[0].splitlines()]
    eq([len(c["args"]) for c in rows if c.get("func") == "cuLaunchKernel"], [10, 11, 11, 11], "ENTRY5_X: arguments")
    eq(tf.read_trace(path).calls[next(i for i, c in enumerate(t5.calls) if c.name == "cuLaunchKernel")].args,
       r.args[:10], "ENTRY5_X: tracefile arguments")


def test_v5_damage():
    """Damaged version 5 records: each counted and reported, what can still be read is read
    exactly, never a crash."""
    p5 = gen("v5", "basic", "--tsc", "--tsc-start", str(EPOCH_TSC), "--v5")
    with open(p5, "rb") as f:
        good = f.read()
    t = tf.read_trace(p5, records=True)
    recs = [(off, tid, r, off - r.off) for off, tid, r in t.records]  # (file offset, tid, Rec, block)
    ref, _ = report_json(p5)

    def report(data, name):
        path = os.path.join(TMP, name + ".bin")
        with open(path, "wb") as f:
            f.write(data)
        j, err = report_json(path)
        check(re.search(r"\d+ errors? while reading", err), f"{name}: no warning: {err}")
        return j

    def word(i):
        return struct.unpack_from("<Q", good, recs[i][0])[0]

    def with_word(i, w):
        b = bytearray(good)
        struct.pack_into("<Q", b, recs[i][0], w)
        return b

    def entries_after(i):
        """ENTRY records of record i's block from record i on: the calls a skipped rest loses."""
        return sum(1 for off, _, r, blk in recs if blk == recs[i][3] and off >= recs[i][0] and r.kind == 1)

    def first(pred):
        return next(i for i, (_, tid, r, _) in enumerate(recs) if pred(tid, r))

    def name(r):
        return t.funcs[r.func]

    # a block without its TIME record (the main thread's last block, whose epoch, 1, its previous
    # block's TIME left in force): one error, every call as before
    last_main = max(blk for _, tid, _, blk in recs if tid == 1000)
    i = next(k for k, x in enumerate(recs) if x[3] == last_main)
    eq((recs[i][2].raw, word(i) >> 32), (REC5_TIME, 1), "the last main block starts with TIME epoch 1")
    hdr = last_main - BLOCK_HEADER_SIZE
    block = unpack("cuhook_block", good, hdr)
    b = bytearray(good[:hdr]) + struct.pack(fmt("cuhook_block"), BLOCK_MAGIC, BLOCK_EVENTS, 0, block["size"] - 8, block["seq"])
    b += good[last_main:last_main + 8] + good[last_main + 16:]
    j = report(b, "v5-no-time")
    eq((j["errors"], j["calls"], j["corrupt_records"]), (1, 27, 0), "no TIME: counts")
    check(any("does not start with a TIME record" in m for m in j["error_messages"]), j["error_messages"])
    for k in ["functions", "duration_ns", "slowest_calls", "gaps"]:
        eq(j[k], ref[k], f"no TIME: {k} (the thread's previous epoch)")
    # a record of a type no version defines (the first cuInit's EXIT): the rest of its block skipped
    i = first(lambda tid, r: r.kind == 2 and name(r) == "cuInit")
    lost = entries_after(i)
    eq(lost, 3, "calls after cuInit in its block")
    j = report(with_word(i, word(i) & ~0xF | 11), "v5-type")
    eq((j["corrupt_records"], j["calls"], j["calls_without_exit"]), (1, 27 - lost, 1), "unknown type: counts")
    check(any("corrupt record" in m and "rest of the block skipped" in m for m in j["error_messages"]),
          j["error_messages"])
    # an ENTRY5 naming a function no FUNCS block defines: its length is unknown, the rest skipped
    i = first(lambda tid, r: tid == 1001 and r.raw == REC5_ENTRY)
    j = report(with_word(i, word(i) & ~(0x3FFF << 12) | 1000 << 12), "v5-entry-func")
    eq((j["unknown_function_ids"], j["corrupt_records"], j["calls"]), (1, 1, 27 - entries_after(i)),
       "ENTRY5 of an unknown function")
    check("ENTRY of unknown function id 1000" in j["error_messages"], j["error_messages"])
    # an EXIT5 naming an id beyond FUNCS (its length is known): skipped alone, its call unfinished
    i = first(lambda tid, r: r.raw == REC5_EXIT and name(r) == "cuStreamQuery")
    j = report(with_word(i, word(i) | 0x3FFF << 12), "v5-exit-func")
    eq((j["unknown_function_ids"], j["corrupt_records"], j["calls"], j["calls_without_exit"]), (1, 0, 27, 1),
       "EXIT5 of an unknown function")
    eq(funcs_by_name(j)["cuStreamQuery"]["timed_calls"], 0, "its call without an EXIT")
    # a FUNCS entry with impossible counts: an ENTRY5 of that function cannot be sized
    b = bytearray(good)
    e = good.index(b"cuMemAlloc_v2") - 24
    eq(b[e + 20], 6, "cuMemAlloc_v2's FUNCS nregs")
    b[e + 20] = 7
    i = first(lambda tid, r: r.raw == REC5_ENTRY and name(r) == "cuMemAlloc_v2")
    j = report(b, "v5-funcs-nregs")
    check("function cuMemAlloc_v2: impossible argument counts (7 registers, 0 stack slots)" in j["error_messages"],
          j["error_messages"])
    eq((j["corrupt_records"], j["calls"]), (1, 27 - entries_after(i)), "ENTRY5 of a function of impossible counts")
    # ENTRY5_X with impossible counts (stack slots after 2 registers), and with counts that run
    # past its block's end
    i = first(lambda tid, r: r.raw == REC5_ENTRY_X)
    for nregs, nstack, why in ((2, 1, "impossible"), (6, 6, "past the end")):
        b = bytearray(good)
        b[recs[i][0] + 9:recs[i][0] + 11] = bytes([nregs, nstack])
        j = report(b, "v5-entry-x")
        eq((j["corrupt_records"], j["calls"]), (1, 27 - entries_after(i)), f"ENTRY5_X of counts {why}")
    # a DROP whose size is not a multiple of 8
    i = first(lambda tid, r: r.raw == REC_DROP)
    b = bytearray(good)
    struct.pack_into("<H", b, recs[i][0] + 2, 20)
    j = report(b, "v5-drop")
    eq((j["corrupt_records"], j["calls"], j["dropped"]), (1, 27 - entries_after(i), 5), "DROP of a bad size")


# fuzz_reader (ASan/UBSan: every prefix of each seed, then CUHOOK_FUZZ_ITERATIONS mutations,
# default 1000) on the seeds in three tests of about a third of the work each rather than one: on
# a loaded machine (2 cores, load 13) one test of all of them took 235 s of its 280 s limit. The
# default was 3000 until the three took 124 s of the suite's 656 s of test time; the sanitizer
# pass's fuzz_libfuzzer mutates the same seeds, guided by coverage, for 20 s per harness, and a
# longer run here is CUHOOK_FUZZ_ITERATIONS=20000. Suite `fuzz` (tests/report/meson.build): these run
# once, in scripts/test.sh's sanitizer pass.
def fuzz(*seeds):
    p = subprocess.run([A.fuzz, "--iterations", os.environ.get("CUHOOK_FUZZ_ITERATIONS", "1000")] + list(seeds),
                       capture_output=True, timeout=280)
    sys.stdout.write(p.stdout.decode())
    if p.returncode:
        raise Fail(f"fuzz_reader failed (status {p.returncode}):\n{p.stderr.decode()[-4000:]}")


def test_fuzz():
    """Version 1-4 records: the basic scenario in each clock and register form, kernels, and a
    larger trace of several threads."""
    fuzz(gen("basic"), gen("tsc", "basic", "--tsc", "--no-end"), gen("kernels", "kernels"),
         gen("small", "big", "--calls", "200", "--threads", "3"),
         gen("short-regs", "basic", "--agent-regs"), gen("v3", "basic", "--v3-reserved"))


def test_fuzz_counts_gpu():
    """COUNTS blocks, the GPU side (its records, a refused session) and kernel names."""
    fuzz(gen("counts", "hot", "--count", "--iterations", "48", "--tsc"),
         gen("gpu", "gpu"), gen("gpu-tsc", "gpu", "--tsc"), gen("gpu-refused", "basic", "--gpu-session", "other-user"),
         gen("names", "names"))


def test_fuzz_v5():
    """Version 5's compact records: every type, an epoch change inside a block."""
    fuzz(gen("v5-epoch", "basic", "--tsc", "--tsc-start", str(EPOCH_TSC), "--v5"),
         gen("v5-long", "basic", "--v5-long-exits", "--agent-regs"), gen("v5-kernels", "kernels", "--v5"),
         gen("v5-counts", "hot", "--count", "--iterations", "48", "--tsc", "--v5"), gen("v5-gpu", "gpu", "--v5"),
         gen("v5-names", "names", "--v5"))


def test_big():
    """A 3 M-call, 4-thread trace read exactly (counts, per-function totals, CSV rows). How fast it
    is read is a benchmark's question, not a test's (bench/run.sh runs bench_reader on such a
    trace): a timed test fails on a loaded machine."""
    path, exp = gen("big", "big", "--calls", "3000000", "--threads", "4", "--tsc", expect=True)
    j, _ = report_json(path)
    eq((j["events"], j["calls"]), (exp["events"], exp["calls"]), "big trace counts")
    for name, e in exp["functions"].items():
        f = funcs_by_name(j)[name]
        eq((f["calls"], f["total_ns"]), (e["calls"], e["total_ns"]), name)
    rows = report_csv(path, "--functions", "cuMemAlloc_v2")
    eq(len(rows), exp["functions"]["cuMemAlloc_v2"]["calls"], "CSV rows of the big trace")

# ---- --format sqlite (export_sqlite.c, docs/report.md "SQLite export") ------------------------------

def sql(db, query):
    """Rows of a query, by the sqlite3 CLI (what users script with), as dicts."""
    p = subprocess.run(["sqlite3", "-bail", "-json", db, query], capture_output=True, timeout=60)
    if p.returncode:
        raise Fail(f"sqlite3 {db} {query!r}: status {p.returncode}: {p.stderr.decode(errors='replace')}")
    out = p.stdout.decode().strip()
    return json.loads(out) if out else []


def report_sqlite(name, *args):
    if not shutil.which("sqlite3"):
        raise Fail("the sqlite3 CLI is missing (scripts/deps.sh installs it)")
    db = os.path.join(TMP, name + ".sqlite")
    run(["report", "--format", "sqlite", "-o", db, *args])
    eq(oct(os.stat(db).st_mode & 0o7777), oct(0o600), "mode of the database")
    return db


def test_sqlite():
    """Three traces, one database: a multi-thread trace with counted calls and two processes of
    the basic scenario on different clocks. Per process and function, the calls, timed calls,
    total and extreme times and counted calls equal the JSON report's exactly; threads and
    processes are the JSON's; every call row is in the CSV export too."""
    hot, _ = gen("hotc", "hot", "--count", expect=True)
    a = gen("basic")
    b = gen("procb", "basic", "--pid", "5151", "--mono-offset", "777000000000", "--real-offset", "1500000")
    files = [hot, a, b]
    db = report_sqlite("three", *files)
    j = json.loads(run(["report", "--format", "json", *files])[0])["traces"]
    eq(len(j), 3, "traces in the JSON report")
    procs = sql(db, "SELECT * FROM processes ORDER BY id")
    eq([(p["id"], p["pid"], p["ppid"], p["cmdline"], p["exe"], p["trace_path"], p["start_realtime_ns"], p["clock"])
        for p in procs],
       [(k + 1, t["pid"], t["ppid"], t["cmdline"], t["exe"], f, t["start_realtime_ns"], t["clock"])
        for k, (t, f) in enumerate(zip(j, files))], "processes")
    eq(procs[2]["realtime_offset_ns"] - procs[1]["realtime_offset_ns"], -777000000000 + 1500000,
       "realtime offsets: B's monotonic clock 777 s ahead, its realtime 1.5 ms")
    threads = sql(db, "SELECT process, tid, name, calls, counted, dropped FROM threads ORDER BY process, id")
    eq([(r["process"], r["tid"], r["name"], r["calls"], r["counted"], r["dropped"]) for r in threads],
       [(k + 1, th["tid"], th["name"], th["calls"], th["counted_calls"], th["dropped"])
        for k, t in enumerate(j) for th in t["threads"]], "threads")
    # the call rows per thread: the threads table's counts, and every recorded call once
    per_thread = sql(db, "SELECT t.process, t.tid, count(*) AS n FROM calls c JOIN threads t ON t.id = c.thread "
                         "GROUP BY c.thread ORDER BY c.thread")
    eq([(r["process"], r["tid"], r["n"]) for r in per_thread],
       [(r["process"], r["tid"], r["calls"]) for r in threads if r["calls"]], "call rows per thread")
    eq(sql(db, "SELECT count(*) AS n FROM calls")[0]["n"], sum(t["calls"] for t in j), "call rows")
    got = sql(db, """
        SELECT f.process, f.name, count(c.id) AS calls, count(c.dur_ns) AS timed,
               coalesce(sum(c.dur_ns), 0) AS total, coalesce(min(c.dur_ns), 0) AS min,
               coalesce(max(c.dur_ns), 0) AS max, sum(c.ret != 0) AS failed,
               (SELECT coalesce(sum(n.calls), 0) FROM counted n WHERE n.function = f.id) AS counted
        FROM functions f LEFT JOIN calls c ON c.function = f.id
        GROUP BY f.id HAVING calls > 0 OR counted > 0""")
    eq(sorted((r["process"], r["name"], r["calls"], r["timed"], r["total"], r["min"], r["max"], r["failed"] or 0,
               r["counted"]) for r in got),
       sorted((k + 1, f["name"], f["calls"], f["timed_calls"], f["total_ns"], f["min_ns"], f["max_ns"], f["failed"],
               f["counted_calls"]) for k, t in enumerate(j) for f in t["functions"]),
       "per process and function: calls, timed calls, total, min, max, failed, counted")
    # counted calls per thread: the generator's, and the JSON's per thread
    cnt = sql(db, "SELECT t.tid, sum(n.calls) AS calls FROM counted n JOIN threads t ON t.id = n.thread "
                  "GROUP BY n.thread")
    eq({r["tid"]: r["calls"] for r in cnt}, HOT_THREAD_COUNTED, "counted calls per thread")
    eq(sql(db, "SELECT DISTINCT process FROM counted"), [{"process": 1}], "counted rows: the hot trace's only")
    # every call row against the CSV export of its file: thread, function, times, return value,
    # depth, arguments, on the trace's own axis (start_monotonic_ns is the trace's start)
    for k, f in enumerate(files):
        t0 = j[k]["start_monotonic_ns"]
        rows = sql(db, f"""SELECT t.tid, fn.name, c.start_ns - {t0} AS s, c.end_ns - {t0} AS e, c.dur_ns, c.depth,
                              c.ret, c.arg0, c.arg1, c.arg2, c.arg3, c.arg4, c.arg5, c.arg6, c.arg7, c.arg8, c.arg9,
                              c.arg10, c.arg11
                           FROM calls c JOIN threads t ON t.id = c.thread JOIN functions fn ON fn.id = c.function
                           WHERE c.process = {k + 1} ORDER BY c.start_ns, c.id""")

        def hx(v):
            return "" if v is None else hex(v & 0xffffffffffffffff)

        mine = [[str(r["tid"]), r["name"], str(r["s"]), "" if r["e"] is None else str(r["e"]),
                 "" if r["dur_ns"] is None else str(r["dur_ns"]), str(r["depth"]), hx(r["ret"])] +
                [hx(r[f"arg{i}"]) for i in range(12)] for r in rows]
        csv_rows = [r[:19] for r in report_csv(f)]
        eq(sorted(mine), sorted(csv_rows), f"{f}: call rows vs CSV")
    # nesting: a parent is a call of the same thread that encloses the child
    bad = sql(db, """SELECT count(*) AS n FROM calls c JOIN calls p ON p.id = c.parent
                     WHERE p.thread != c.thread OR p.start_ns > c.start_ns OR p.depth >= c.depth""")
    eq(bad[0]["n"], 0, "parents enclose their children")
    eq(sql(db, "SELECT count(*) AS n FROM calls WHERE parent IS NOT NULL AND process = 2")[0]["n"],
       sum(1 for r in report_csv(a) if int(r[5]) > 0), "nested calls of basic")
    # the decoded details: what the CSV's decoded column says, label for label
    dec = sql(db, "SELECT c.start_ns, d.label, d.value, d.text FROM details d JOIN calls c ON c.id = d.call "
                  f"WHERE c.process = 2 ORDER BY d.rowid")
    want = [kv for r in report_csv(a) if r[19] for kv in r[19].split(";")]
    eq([f"{d['label']}={d['text'] if d['text'] is not None else hex(d['value'] & 0xffffffffffffffff)}" for d in dec],
       want, "details of basic, in call order")
    check(len(want) > 0, "basic has DATA records")
    eq(sql(db, "SELECT count(*) AS n FROM notes"), [{"n": 0}], "no notes in these traces")
    rt = sql(db, "SELECT r.start_realtime_ns - c.start_ns AS off, p.realtime_offset_ns AS want FROM calls_realtime r "
                 "JOIN calls c ON c.id = r.call JOIN processes p ON p.id = c.process GROUP BY c.process")
    eq([r["off"] for r in rt], [r["want"] for r in rt], "calls_realtime")
    idx = {r["name"] for r in sql(db, "SELECT name FROM sqlite_master WHERE type = 'index'")}
    check({"calls_function", "calls_thread", "calls_start", "gpu_work_call"} <= idx, f"indexes: {idx}")
    # the options select as for every format: --functions
    db2 = report_sqlite("filtered", "--functions", "cuCtxGetCurrent,cuLaunchKernel", hot)
    eq(sql(db2, "SELECT f.name, count(c.id) AS calls, (SELECT sum(calls) FROM counted n WHERE n.function = f.id) AS "
                "counted FROM functions f LEFT JOIN calls c ON c.function = f.id GROUP BY f.id "
                "HAVING calls > 0 OR counted > 0 ORDER BY f.name"),
       [{"name": "cuCtxGetCurrent", "calls": 0, "counted": HOT_COUNTED["cuCtxGetCurrent"]},
        {"name": "cuLaunchKernel", "calls": HOT_CALLS["cuLaunchKernel"], "counted": None}], "--functions")


def test_sqlite_gpu():
    """A trace with GPU records: a gpu_work row per record (scenario_gpu, GPU_WORK), each linked
    one joined to the call that submitted it, launch calls named by their kernel."""
    path = gen("gpu", "gpu")
    db = report_sqlite("gpu", path)
    t0 = report_json(path)[0]["start_monotonic_ns"]
    rows = sql(db, f"""SELECT w.kind, w.name, w.start_ns - {t0} AS s, w.dur_ns, w.device, w.stream, w.correlation,
                          w.session, w.link, t.tid, f.name AS func, c.start_ns - {t0} AS call_start
                       FROM gpu_work w LEFT JOIN calls c ON c.id = w.call LEFT JOIN threads t ON t.id = c.thread
                       LEFT JOIN functions f ON f.id = c.function ORDER BY w.start_ns, w.id""")
    eq(len(rows), len(GPU_WORK), "gpu_work rows")
    for r, w in zip(rows, sorted(GPU_WORK, key=lambda w: w[3])):
        what = f"GPU row {w[6]} at {w[3]}"
        eq((r["kind"], r["name"], r["s"], r["dur_ns"], r["device"], r["stream"], r["correlation"], r["session"]),
           (w[5], w[6], w[3], w[4] - w[3], w[1], w[2], w[7], w[0]), what)
        if isinstance(w[8], str):
            eq((r["link"], r["tid"], r["func"]), (w[8], None, None), what + ": unlinked")
        else:
            call = [c for c in GPU_CALLS if c[2] == w[8]][0]
            eq((r["link"], r["tid"], r["func"], r["call_start"]), ("linked", call[0], call[1], w[8]), what + ": its call")
    k = sql(db, "SELECT grid_x, grid_y, grid_z, block_x, shared_static, registers, bytes FROM gpu_work "
                "WHERE correlation = 2 AND session = 1")
    eq(k, [{"grid_x": 64, "grid_y": 8, "grid_z": 1, "block_x": 256, "shared_static": 16384, "registers": 64,
            "bytes": None}], "kernel columns")
    eq(sql(db, "SELECT copy_kind, bytes, grid_x FROM gpu_work WHERE kind = 'memcpy' ORDER BY start_ns LIMIT 1"),
       [{"copy_kind": "HtoD", "bytes": MiB, "grid_x": None}], "memcpy columns")
    eq(sql(db, "SELECT count(*) AS n FROM calls"), [{"n": len(GPU_CALLS)}], "call rows")
    # scenario_gpu()'s NOTE block (session B: another CUPTI user)
    eq(sql(db, "SELECT process, level, text FROM notes"),
       [{"process": 1, "level": "warning", "text": "--gpu: another CUPTI user owns the process (CUDA_INJECTION64_PATH): "
         "GPU work is not recorded, the API is"}], "notes")


def test_sqlite_kernels():
    """Launch calls carry their kernel's name (looked up as the text report does)."""
    path = gen("kernels", "kernels")
    db = report_sqlite("kernels", path)
    got = [(r["name"], r["kernel"]) for r in sql(db, "SELECT f.name, c.kernel FROM calls c JOIN functions f ON "
                                                     "f.id = c.function WHERE f.name LIKE 'cuLaunch%' ORDER BY c.start_ns")]
    # scenario_kernels(): gemm by cuModuleGetFunction, softmax by cuKernelGetFunction, 0xf3 never named
    eq(got, [("cuLaunchKernelEx", "gemm"), ("cuLaunchKernel", "gemm"), ("cuLaunchKernel", "softmax"),
             ("cuLaunchKernel", None)], "kernel names of the launches")
    # and the JSONL export's details say the same
    out, _ = run(["report", "--format", "jsonl", path])
    eq([(e["func"], e["details"].split(" ")[0]) for e in map(json.loads, out.splitlines())
        if e["func"].startswith("cuLaunch") and not e["details"].startswith("function 0x")],
       [g for g in got if g[1]], "the JSONL details")


def test_sqlite_errors():
    """No -o (or -o -): a usage error; an existing file without --force, a link, a directory, a
    path in no directory: a clear message, exit 1, nothing written or left behind; --force
    replaces a file and a link (never its target)."""
    path = gen("basic")
    for args in ([], ["-o", "-"]):
        _, err = run(["report", "--format", "sqlite", *args, path], rc=2)
        eq(err.strip(), "cuhook report: --format sqlite writes a database file: give -o FILE.sqlite", "no -o")
    out = os.path.join(TMP, "existing.sqlite")
    with open(out, "w") as f:
        f.write("precious\n")
    _, err = run(["report", "--format", "sqlite", "-o", out, path], rc=1)
    eq(err.strip(), f"cuhook report: output file '{out}' exists; pass --force to replace it, or choose another "
                    "name with -o", "existing file")
    with open(out) as f:
        eq(f.read(), "precious\n", "the existing file")
    run(["report", "--format", "sqlite", "--force", "-o", out, path])
    eq(sql(out, "SELECT count(*) AS n FROM calls"), [{"n": sum(n for n, _ in BASIC_CALLS.values())}], "--force")
    victim = os.path.join(TMP, "victim")
    with open(victim, "w") as f:
        f.write("target\n")
    link = os.path.join(TMP, "link.sqlite")
    os.symlink(victim, link)
    run(["report", "--format", "sqlite", "-o", link, path], rc=1)
    eq(os.readlink(link), victim, "the link refused")
    run(["report", "--format", "sqlite", "--force", "-o", link, path])
    check(stat.S_ISREG(os.lstat(link).st_mode), "--force replaced the link by a file")
    with open(victim) as f:
        eq(f.read(), "target\n", "the link's target")
    nodir = os.path.join(TMP, "no", "such", "dir.sqlite")
    _, err = run(["report", "--format", "sqlite", "-o", nodir, path], rc=1)
    check(err.startswith(f"cuhook report: cannot create output file '{nodir}': ") and "No such file" in err,
          f"no directory: {err}")
    _, err = run(["report", "--format", "sqlite", "--force", "-o", TMP, path], rc=1)
    check(TMP in err and len(err.splitlines()) == 1, f"a directory: {err}")
    # a file that is no trace: nothing written
    junk = os.path.join(TMP, "junk.bin")
    with open(junk, "wb") as f:
        f.write(b"not a trace at all" * 10)
    nothing = os.path.join(TMP, "nothing.sqlite")
    run(["report", "--format", "sqlite", "-o", nothing, junk], rc=1)
    check(not os.path.lexists(nothing), "no database for no trace")


def test_ranks():
    """Several ranks of a job waiting for each other at every step (gen_trace ranks): the report
    finds each step's collective wait, names the rank that arrived last, and sums what each rank
    waited and made the others wait, exactly; waits that end close together but never overlap,
    polls and a rank's lone waits are not taken for one. Rank 2 runs on another machine (its
    monotonic clock 900 s off): the realtime axis still lines the ranks up."""
    world, steps = 3, 12
    paths = []
    for r in range(world):
        extra = ["--mono-offset", "900000000000"] if r == 2 else []
        p, want = gen(f"rank{r}", "ranks", "--rank", str(r), "--world", str(world), "--steps", str(steps), *extra,
                      expect=True)
        paths.append(p)
    out, _ = run(["report", "--format", "json", *paths])
    sy = json.loads(out)["merged"]["syncs"]
    eq(sy["episodes"], want["episodes"], "episodes where every rank waited")
    eq([e["slowest_pid"] for e in sy["list"]], want["slowest"], "the rank that arrived last, step by step")
    for p in sy["processes"]:
        w = want["processes"][str(p["pid"])]
        for k in ("waits", "together", "last", "waited_ns", "caused_ns"):
            eq(p[k], w[k], f"pid {p['pid']} {k}")
    for e in sy["list"]:
        check(e["start_ns"] <= e["last_arrival_ns"] <= e["end_ns"], f"episode in order: {e}")
    # the text report: the section, one row per rank with its counts, the longest wait first
    out, _ = run(["report", "--no-color", *paths])
    sec = out.split("Waiting for each other\n", 1)
    check(len(sec) == 2, "a 'Waiting for each other' section")
    body = sec[1]
    check(body.startswith(f"  {steps} times every process waited at once"), f"episode count line: {body[:120]!r}")
    for pid, w in want["processes"].items():
        rank = int(pid) - 4000 if int(pid) != 4002 else "-"
        check(re.search(rf"^ +{pid} +{rank} +{w['waits']} +{w['together']} +{w['last']} ", body, re.M),
              f"row of pid {pid}: rank {rank}, waits {w['waits']}, together {w['together']}, last {w['last']}")
    longest = max(range(steps), key=lambda s: (sy["list"][s]["last_arrival_ns"] - sy["list"][s]["start_ns"], -s))
    m = re.search(r"the longest waits.*\n +\+[\d.]+ \S+ +(rank \d+ \(pid (\d+)\)|pid (\d+)) arrived", body)
    pid = m and int(m.group(2) or m.group(3))
    check(pid == sy["list"][longest]["slowest_pid"], "the longest wait's rank listed first")
    check(m.group(1).startswith("rank") == (pid != 4002), f"labelled by its rank when it has one: {m.group(1)}")
    # ranks from the agent's "job:" notes: the header, the Processes table, json; none for rank 2
    for r in range(world):
        check(re.search(rf"^process {4000 + r}: .*\n(?:  .*\n)*?  job        rank {r} of {world}\n", out, re.M)
              if r != 2 else not re.search(rf"^process 4002: .*\n(?:  .*\n)*?  job ", out, re.M),
              f"header of rank {r}: its job line")
        check(re.search(rf"^ +{4000 + r} +{r if r != 2 else '-'} +\+", out, re.M), f"Processes row of rank {r}")
    j = json.loads(run(["report", "--format", "json", *paths])[0])
    eq([t.get("rank") for t in j["traces"]], [0, 1, None], "json traces' rank")
    eq([t.get("world") for t in j["traces"]], [world, world, None], "json traces' world")
    eq([p.get("rank") for p in j["merged"]["processes"]], [0, 1, None], "json merged processes' rank")
    # API time by process: each merged function in each process, as that process's own report has it
    singles = [json.loads(run(["report", "--format", "json", p])[0]) for p in paths]
    for fn in j["merged"]["functions"]:
        eq([x["pid"] for x in fn["by_process"]], [4000 + r for r in range(world)], f"{fn['name']}: by_process pids")
        for r, x in enumerate(fn["by_process"]):
            own = next((g for g in singles[r]["functions"] if g["name"] == fn["name"]), None)
            eq((x["calls"], x["timed_calls"], x["total_ns"]),
               (own["calls"], own["timed_calls"], own["total_ns"]) if own else (0, 0, 0), f"{fn['name']} in rank {r}")
    sec = re.search(r"^API time by process.*\n  Name +(.*)\n((?:  .*\n)+)", out, re.M)
    check(sec and re.split(r"\s{2,}", sec.group(1).strip()) == ["rank 0 (pid 4000)", "rank 1 (pid 4001)", "pid 4002"],
          f"API time by process: a column per process, by rank: {sec and sec.group(1)!r}")
    ctx = re.search(r"^  cuCtxSynchronize +(.*)$", sec.group(2), re.M)
    check(ctx and re.split(r"\s{2,}", ctx.group(1).strip())[1:] == ["-", "-"] and
          ctx.group(1).strip().split()[-3] == f"({(steps + 2) // 3})",
          f"cuCtxSynchronize: rank 0's calls, nothing in the others: {ctx and ctx.group(0)!r}")
    # one process alone has nobody to wait for: no section
    out, _ = run(["report", "--no-color", paths[0]])
    check("Waiting for each other" not in out, "no section for one process")
    # ranks that never wait together: every rank's waits kept, no episode
    out, _ = run(["report", "--format", "json", "--thread", "pt_worker", *paths])
    sy = json.loads(out)["merged"]["syncs"]
    eq(sy["episodes"], 0, "worker waits that end within the window but never overlap")
    eq([p["waits"] for p in sy["processes"]], [steps] * world, "each rank's worker waits")


def test_collectives():
    """The ranks' NCCL collectives matched by order (gen_trace ranks): per collective the rank that
    arrived last, per rank what it waited and made the others wait, exactly; by the launch calls on
    the host, and by the kernels' GPU starts when every collective has one (--gpu: rank 0's GPU is
    late every fourth step, so the slowest differs from the host's view); a non-NCCL kernel and
    unnamed launches are not collectives; matching stops where the ranks' kernels differ."""
    world, steps = 3, 12
    for mode, extra in (("host", []), ("gpu", ["--gpu"]), ("mismatch", ["--coll-mismatch", "5"])):
        paths = []
        for r in range(world):
            p, want = gen(f"coll-{mode}{r}", "ranks", "--rank", str(r), "--world", str(world), "--steps", str(steps),
                          *extra, expect=True)
            paths.append(p)
        want = want["collectives"]
        out, _ = run(["report", "--format", "json", *paths])
        c = json.loads(out)["merged"]["collectives"]
        for k in ("timing", "matched", "mismatch_at"):
            eq(c[k], want[k], f"{mode}: collectives {k}")
        eq([x["slowest_pid"] for x in c["list"]], want["slowest"], f"{mode}: the rank that arrived last, in order")
        for x in c["list"]:
            check(x["first_arrival_ns"] <= x["last_arrival_ns"], f"{mode}: arrivals in order: {x}")
            check(x["kernel"].startswith("_Z39ncclDevKernel_AllReduce"), f"{mode}: the collective's kernel: {x}")
        for pr in c["processes"]:
            w = want["processes"][str(pr["pid"])]
            for k in ("kernels", "last", "waited_ns", "caused_ns"):
                eq(pr[k], w[k], f"{mode}: pid {pr['pid']} {k}")
        out, _ = run(["report", "--no-color", *paths])
        sec = out.split("Collectives across processes\n", 1)
        check(len(sec) == 2, f"{mode}: a 'Collectives across processes' section")
        body = sec[1].split("\n\n", 1)[0]
        check(body.startswith(f"  {want['matched']} NCCL collectives matched by order"), f"{mode}: count line {body[:100]!r}")
        check(("on its GPU" in body) == (mode == "gpu"), f"{mode}: says how it timed them")
        check(("differ from collective 6 on" in body) == (mode == "mismatch"), f"{mode}: says where matching stopped")
        for pid, w in want["processes"].items():
            check(re.search(rf"^ +{pid} +(\d+|-) +{w['kernels']} +{w['last']} ", body, re.M),
                  f"{mode}: row of pid {pid}: kernels {w['kernels']}, last {w['last']}")
        m = re.search(r"the longest waits.*\n +\+[\d.]+ \S+ +#(\d+) +(?:rank \d+ \()?pid (\d+)\)? arrived .* "
                      r"ncclDevKernel_AllReduce_Sum_f32_RING_LL$", body, re.M)
        spread = [x["last_arrival_ns"] - x["first_arrival_ns"] for x in c["list"]]
        top = max(range(len(spread)), key=lambda i: (spread[i], -i))
        check(m and int(m.group(1)) == top + 1 and int(m.group(2)) == c["list"][top]["slowest_pid"],
              f"{mode}: the longest wait listed first, with its rank and kernel: {m and m.group(0)!r}")
    # the job's launcher (no NCCL kernel, no wait) among the files: the ranks are matched without it,
    # in both sections
    launcher = gen("coll-launcher", "nocalls")
    out, _ = run(["report", "--format", "json", launcher, *paths])
    j = json.loads(out)["merged"]
    c2 = j["collectives"]
    eq((c2["matched"], c2["mismatch_at"]), (want["matched"], want["mismatch_at"]), "launcher: matched as without it")
    eq(c2["processes"][0]["kernels"], 0, "launcher: no NCCL kernel")
    eq(c2["processes"][1:], c["processes"], "launcher: the ranks' figures as without it")
    eq(j["syncs"]["episodes"], steps, "launcher: every step's wait found without it")
    # one process: no section; a job without NCCL kernels (--funcs leaves the launches out): none
    out, _ = run(["report", "--no-color", paths[0]])
    check("Collectives across processes" not in out, "no section for one process")
    out, _ = run(["report", "--no-color", "--funcs", "-cuLaunchKernel", *paths])
    check("Collectives across processes" not in out, "no section without NCCL launches")


def test_memory():
    """Memory in use (gen_trace memory: see scenario_memory() for the calls and times): per kind the
    allocations, frees, peak and when, what is left, exactly; a failed allocation, a free of what
    was never seen and a release of an imported handle apart; physical memory freed only when its
    last reference (handle, retained handle, mapping) goes; the device + physical curve."""
    p = gen("memory", "memory")
    j, _ = report_json(p)
    m = j["memory"]
    MiB, ms = 1 << 20, 1000000
    want = {
        "device": dict(allocs=4, alloc_bytes=15 * MiB, failed=1, no_pointer=0, frees=2, freed_bytes=6 * MiB,
                       unknown_frees=1, peak_bytes=14 * MiB, peak_ns=4 * ms, end_allocs=2, end_bytes=9 * MiB,
                       largest_bytes=8 * MiB),
        "physical": dict(allocs=2, alloc_bytes=48 * MiB, failed=0, no_pointer=0, frees=2, freed_bytes=48 * MiB,
                         unknown_frees=1, peak_bytes=48 * MiB, peak_ns=13 * ms, end_allocs=0, end_bytes=0,
                         largest_bytes=32 * MiB),
        "managed": dict(allocs=1, alloc_bytes=64 * MiB, failed=0, no_pointer=0, frees=0, freed_bytes=0,
                        unknown_frees=0, peak_bytes=64 * MiB, peak_ns=17 * ms, end_allocs=1, end_bytes=64 * MiB,
                        largest_bytes=64 * MiB),
        "host": dict(allocs=2, alloc_bytes=4 * MiB, failed=0, no_pointer=0, frees=1, freed_bytes=1 * MiB,
                     unknown_frees=0, peak_bytes=4 * MiB, peak_ns=19 * ms, end_allocs=1, end_bytes=3 * MiB,
                     largest_bytes=3 * MiB),
    }
    for kind, w in want.items():
        for k, v in w.items():
            eq(m["kinds"][kind][k], v, f"memory {kind} {k}")
    eq((m["device_peak_bytes"], m["device_peak_ns"]), (58 * MiB, 13 * ms), "device + physical peak and when")
    # the curve: the most in use per slice; each slice's level from the calls' start times
    sl, curve = m["slice_ns"], m["device_in_use"]
    eq(len(curve), 100, "slices")
    events = [(1, 4), (2, 8), (4, 2), (5, -4), (8, 16), (13, 32), (14, -32), (15, -16), (21, -2), (22, 1)]
    for i, got in enumerate(curve):
        lo, hi = i * sl, (i + 1) * sl
        level = sum(b for t, b in events if t * ms < lo)  # in use as the slice begins
        peak = max([level] + [sum(b for t, b in events if t <= e) for e, _ in events if lo <= e * ms < hi])
        eq(got, peak * MiB, f"curve slice {i} [{lo}, {hi})")
    # the text section: a row per kind, the curve's row with the peak where it is
    out, _ = run(["report", "--no-color", p])
    sec = out.split("Memory in use (from the allocations and frees traced)\n", 1)
    check(len(sec) == 2, "a memory section")
    body = sec[1].split("\n\n", 1)[0]
    check(re.search(r"^  device +4 +15\.00 MiB +2 +6\.00 MiB +14\.00 MiB +4\.000 ms +2 +9\.00 MiB +8\.00 MiB$", body, re.M),
          f"device row: {body!r}")
    check(re.search(r"^  physical +2 +48\.00 MiB +2 +48\.00 MiB +48\.00 MiB +13\.000 ms +0 +0 B +32\.00 MiB$", body, re.M),
          "physical row")
    row = re.search(r"peak 58\.00 MiB at 13\.000 ms.*\n  \|(.{60})\|", body)
    span = j["duration_ns"]  # the peak's level holds from 13 ms to the next event's start, 14 ms
    check(row and [i for i, ch in enumerate(row.group(1)) if ch == "@"] ==
          list(range(int(13 * ms / span * 60), int(14 * ms / span * 60) + 1)),
          f"the curve's peak columns: {row and row.group(1)!r}")
    check("2 frees or releases of memory the trace did not see allocated" in body, "unknown frees counted")
    check("1 allocation failed" in body, "the failed allocation")
    # perfetto: a counter track in bytes under the process's track, a point at the start and at
    # each change of device + physical memory in use (absolute MONOTONIC times)
    tr = perfetto_trace(p)
    mt = [(u, t) for u, t in tr.tracks.items() if t["name"] == "device memory in use (allocations traced)"]
    eq(len(mt), 1, "one memory counter track")
    u, t = mt[0]
    eq(t["counter"], {3: [3]}, "a counter of unit UNIT_SIZE_BYTES")
    check("process_name" in tr.tracks[t["parent"]], "under the process's track")
    pts = sorted((e["ts"], e["counter"]) for e in tr.events if e["type"] == 4 and e["track"] == u)
    t0 = j["start_monotonic_ns"]
    level, want_pts = 0, [(t0, 0)]
    for t_ms, b in events:
        level += b
        want_pts.append((t0 + t_ms * ms, level * MiB))
    eq(pts, want_pts, "the memory counter's points")
    # no allocation at all: no section, no json member
    p2 = gen("memory-none", "nocalls")
    out, _ = run(["report", "--no-color", p2])
    check("Memory in use" not in out, "no memory section without allocations")
    check("memory" not in report_json(p2)[0], "no memory member without allocations")


def test_oneoff():
    """One-off work (module and library loading, initialization) told apart from the steady state:
    the finding's sums, where the one-off part ends and what the driver time after it goes to,
    recomputed from the trace's calls (jsonl); the host-gap finding leaves the loading out of the
    host-bound share. A run that is one-off work only (cuInit alone) gets no such finding."""
    def fmt(ns):
        a = abs(ns)
        return f"{ns:.0f} ns" if a < 1e3 else f"{ns / 1e3:.3f} us" if a < 1e6 else f"{ns / 1e6:.3f} ms" if a < 1e9 \
            else f"{ns / 1e9:.3f} s"
    path = gen("oneoff", "basic")
    j, _ = report_json(path)
    out, _ = run(["report", "--format", "jsonl", path])
    calls = [json.loads(ln) for ln in out.splitlines()]
    outer = [c for c in calls if c["parent"] is None and c["end_ns"] is not None]
    load_f = re.compile(r"^(cuModuleLoad|cuLibraryLoad|cuLinkCreate|cuLinkAdd|cuLinkComplete)")
    init_f = re.compile(r"^(cuInit|cuCtxCreate|cuDevicePrimaryCtxRetain)(_v\d+)?$")
    load = [c for c in outer if load_f.match(c["func"])]
    init = [c for c in outer if init_f.match(c["func"])]
    check(load and init, "the basic trace loads a module and initializes")
    once = sum(c["dur_ns"] for c in load + init)
    last_end = max(c["end_ns"] for c in load + init)
    api = sum(c["dur_ns"] for c in outer)
    steady = j["duration_ns"] - last_end
    after = [c for c in outer if c["start_ns"] >= last_end]
    per = {}
    for c in after:
        per[c["func"]] = per.get(c["func"], 0) + c["dur_ns"]
    top = max(per, key=lambda f: per[f])
    pct = lambda a, b: f"{100.0 * a / b:.0f}%"
    want = (f"One-off work takes {fmt(once)} of the {fmt(api)} driver time ({pct(once, api)}): loading modules and "
            f"libraries {fmt(sum(c['dur_ns'] for c in load))} in {len(load)} call{'' if len(load) == 1 else 's'}, "
            f"initialization and context setup {fmt(sum(c['dur_ns'] for c in init))} in {len(init)}. It ends at "
            f"{fmt(last_end)} ({pct(last_end, j['duration_ns'])} into the run); the steady state after it "
            f"({fmt(steady)}) spends {fmt(sum(per.values()))} in the driver ({pct(sum(per.values()), steady)} of it), "
            f"most in {top} ({fmt(per[top])}).")
    texts = [f["text"] for f in j["findings"]]
    check(any(t.startswith(want) for t in texts), f"the one-off finding: want {want!r} in {texts}")
    # the loading between submissions is not host-bound time: the H200 trace's first launches wait
    # for lazily loaded libraries
    h200 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "h200-matmul100.bin")
    hj, _ = report_json(h200)
    gap = next(f["text"] for f in hj["findings"] if f["text"].startswith("Between GPU submissions"))
    m = re.search(r"spends (\S+ \S+) neither.*?; (\S+ \S+) more of the gaps is spent in sync calls, and (\S+ \S+) in "
                  r"one-off loading", gap)
    check(m, f"the host-gap finding names the loading apart: {gap!r}")
    # recomputed: between consecutive submissions (outermost launches, copies, memsets), the time
    # in outermost one-off calls, capped by what the sync calls leave of the gap
    out, _ = run(["report", "--format", "jsonl", h200])
    hc = sorted((json.loads(ln) for ln in out.splitlines()), key=lambda c: (c["start_ns"], c["id"]))
    sub = re.compile(r"^(cuLaunch|cuMemcpy|cuMemset|cuGraphLaunch)")
    prev_end = None
    total = in_sync = in_load = pend_sync = pend_load = 0
    for c in hc:
        if c["parent"] is not None or c["end_ns"] is None:
            continue
        if not sub.match(c["func"]):
            if c["category"] == "sync":
                pend_sync += c["dur_ns"]
            elif load_f.match(c["func"]) or init_f.match(c["func"]):
                pend_load += c["dur_ns"]
            continue
        if prev_end is not None and c["start_ns"] > prev_end:
            gp = c["start_ns"] - prev_end
            s_ = min(pend_sync, gp)
            total, in_sync, in_load = total + gp, in_sync + s_, in_load + min(pend_load, gp - s_)
        pend_sync = pend_load = 0
        prev_end = c["end_ns"] if prev_end is None else max(prev_end, c["end_ns"])
    eq((hj["gaps"]["total_ns"], hj["gaps"]["sync_ns"], hj["gaps"]["load_ns"]), (total, in_sync, in_load),
       "gaps: total, in sync calls, in one-off loading")
    check(in_load > 0, "the H200 trace loads between submissions")
    eq((m.group(1), m.group(2), m.group(3)), (fmt(total - in_sync - in_load), fmt(in_sync), fmt(in_load)),
       "the host-gap finding's host, sync and loading parts")
    # one-off work only: no steady state, no finding
    only = gen("oneoff-only", "nocalls")
    check(not any(f["text"].startswith("One-off work") for f in report_json(only)[0]["findings"]),
          "no one-off finding without one-off work")


def test_devices():
    """The device of each call in a trace begun after the program chose its contexts (gen_trace
    devices: see scenario_devices()): a context learnt from cuCtxGetCurrent and its device from
    cuCtxGetDevice (on one thread, used by another), a pop onto an unknown stack, a thread told
    it has no context, a device argument past 64 and one with its upper half set; per device the
    calls, host time, launches, bytes, allocations, peak and threads exactly, in json, text, csv
    and jsonl; and per thread with --thread."""
    import csv
    import io
    p = gen("devices", "devices")
    j, _ = report_json(p)
    d = j["devices"]
    us, KiB = 1000, 1024

    def row(calls, launches=0, transfers=(), allocs=0, alloc_bytes=0, peak=0, threads=1):
        return dict(calls=calls, outermost_calls=calls, host_ns=calls * us, launches=launches,
                    transfers=[dict(direction=k, calls=1, bytes=b) for k, b in transfers], alloc_calls=allocs,
                    alloc_bytes=alloc_bytes, peak_alloc_bytes=peak, threads=threads)
    eq(d["list"], [dict(device=2, **row(1)), dict(device=3, **row(6, launches=1, transfers=[("H2D", KiB)], threads=2))],
       "devices 2 and 3")
    eq(d["unknown"], row(4, allocs=2, alloc_bytes=12 * KiB, peak=12 * KiB, threads=3), "unknown")
    eq(d["none"], row(2, transfers=[("D2H", 512)]), "none")
    out, _ = run(["report", "--no-color", p])
    sec = out.split("\nDevices (", 1)
    check(len(sec) == 2, "a Devices section")
    rows = [ln.split() for ln in sec[1].split("\n\n", 1)[0].splitlines()[2:6]]
    # device, calls, host time (2 words), launches, H2D, D2H, D2D, other, memset (2 words each),
    # allocs, peak (2), threads
    eq([(r[0], r[1], r[4], " ".join(r[5:7]), " ".join(r[7:9]), r[15], " ".join(r[16:18]), r[18]) for r in rows],
       [("2", "1", "0", "0 B", "0 B", "0", "0 B", "1"), ("3", "6", "1", "1.00 KiB", "0 B", "0", "0 B", "2"),
        ("unknown", "4", "0", "0 B", "0 B", "2", "12.00 KiB", "3"), ("none", "2", "0", "0 B", "512 B", "0", "0 B", "1")],
       "the table's rows")
    want = ["", "3", "3", "3", "3", "3", "3", "", "", "", "", "2", ""]  # in start order
    rows = list(csv.DictReader(io.StringIO(run(["report", "--format", "csv", p])[0])))
    eq([r["call_device"] for r in rows], want, "csv call_device")
    jl = [json.loads(ln) for ln in run(["report", "--format", "jsonl", p])[0].splitlines()]
    eq([x["device"] for x in jl], [int(w) if w else None for w in want], "jsonl device")
    # one thread's calls: its devices as in the whole trace (the contexts are learnt from all)
    j2, _ = report_json(p, "--thread", "t2")
    eq(([(r["device"], r["calls"]) for r in j2["devices"]["list"]], j2["devices"]["unknown"]["calls"],
        j2["devices"]["none"]["calls"]), ([(3, 3)], 1, 2), "--thread t2")


def test_streams():
    """The streams the calls name (gen_trace streams: see scenario_streams()): per stream its calls,
    driver time, launches (cuLaunchKernel's stack argument, cuLaunchKernelEx's configuration),
    copies, memsets and their bytes, graph launches, syncs and their time, queries, event records
    and waits, threads; submissions naming no stream counted apart; most driver time first."""
    p = gen("streams", "streams")
    j, _ = report_json(p)
    st = j["streams"]
    us, MiB = 1000, 1 << 20
    want = [
        dict(stream="0x10", calls=8, api_ns=132 * us, launches=4, copies=1, memsets=0, graph_launches=0, bytes=MiB,
             syncs=1, sync_ns=100 * us, queries=1, event_records=1, event_waits=0, threads=2),
        dict(stream="0x20", calls=6, api_ns=69 * us, launches=2, copies=0, memsets=1, graph_launches=1, bytes=1024,
             syncs=1, sync_ns=50 * us, queries=0, event_records=0, event_waits=1, threads=2),
        dict(stream="0x0", calls=2, api_ns=10 * us, launches=2, copies=0, memsets=0, graph_launches=0, bytes=0,
             syncs=0, sync_ns=0, queries=0, event_records=0, event_waits=0, threads=1),
    ]
    eq(st["list"], want, "streams")
    eq((st["unnamed_submissions"], st["calls_past_limit"]), (2, 0), "submissions naming no stream")
    out, _ = run(["report", "--no-color", p])
    sec = out.split("Streams (from the calls' stream arguments; 0x0 legacy default, 0x2 per-thread default)\n", 1)
    check(len(sec) == 2, "a streams section")
    rows = [ln.split() for ln in sec[1].split("\n\n", 1)[0].splitlines()[1:4]]
    # stream, calls, time (2 words), launches, copies, memsets, graphs, bytes (2), syncs, time (2),
    # queries, records, waits, threads
    eq([(r[0], r[1], r[4], r[5], r[6], r[7], r[10], r[13], r[14], r[15], r[16]) for r in rows],
       [("0x10", "8", "4", "1", "0", "0", "1", "1", "1", "0", "2"), ("0x20", "6", "2", "0", "1", "1", "1", "0", "0", "1", "2"),
        ("0x0", "2", "2", "0", "0", "0", "0", "0", "0", "0", "1")], "the table's rows")
    check("2 submissions named no stream" in sec[1], "the unnamed submissions")
    # --thread t2: only its calls
    j2, _ = report_json(p, "--thread", "t2")
    eq([(x["stream"], x["calls"], x["threads"]) for x in j2["streams"]["list"]], [("0x20", 1, 1), ("0x0", 2, 1), ("0x10", 2, 1)],
       "streams of thread t2")


def test_timeline_gpu():
    """The text timeline's GPU rows: one per device, after the threads, each column K where the
    device ran kernels longest, T where it copied or set memory longest (a tie: T), '.' where it
    ran nothing; computed here from the CSV's GPU rows on the same columns."""
    import csv as csvmod
    import io
    path = gen("gpu", "gpu")
    width = 60
    out, _ = run(["report", "--no-color", "--width", str(width), path])
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^  (GPU \d+) +\|(.*)\|$", out, re.M)}
    span = report_json(path)[0]["duration_ns"]
    recs = list(csvmod.DictReader(io.StringIO(run(["report", "--format", "csv", path])[0])))
    colw = span / width
    want = {}
    for r in recs:
        if r["record"] == "call":
            continue
        acc = want.setdefault(f"GPU {r['device']}", [[0.0, 0.0] for _ in range(width)])
        s, e = float(r["start_ns"]), float(r["end_ns"])
        k = 1 if r["record"] == "kernel" else 0
        c0 = min(int(s / colw), width - 1)
        if e <= s:
            acc[c0][k] += 1e-3
            continue
        for q in range(c0, min(int(e / colw), width - 1) + 1):
            ov = min(e, (q + 1) * colw) - max(s, q * colw)
            if ov > 0:
                acc[q][k] += ov
    check(len(want) >= 2, "the gpu scenario has work on two devices")
    eq(sorted(rows), sorted(want), "a timeline row per device")
    for dev, acc in want.items():
        line = "".join("." if x == 0 and k == 0 else "K" if k > x else "T" for x, k in acc)
        eq(rows[dev], line, f"the {dev} row")
    lines = out.splitlines()
    first_gpu = min(i for i, ln in enumerate(lines) if re.match(r"  GPU \d+ +\|", ln))
    check(lines[first_gpu - 1].startswith("  worker ") and "GPU rows: K running kernels" in out,
          "GPU rows after the threads, and in the legend")
    out, _ = run(["report", "--no-color", gen("basic")])
    check("GPU rows" not in out and not re.search(r"^  GPU \d", out, re.M), "no GPU row without GPU records")


def main():
    global A, TMP
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--fuzz")
    ap.add_argument("--bench")
    ap.add_argument("--truncate-at-read")
    ap.add_argument("test")
    A = ap.parse_args()
    run_case(globals(), "test_", A.test, "cuhook-report-test-")


if __name__ == "__main__":
    main()
