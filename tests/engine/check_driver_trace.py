#!/usr/bin/env python3
"""Engine test on the stand-in libcuda (tests/fakecuda): run driver_user untraced and with the
agent, then check the trace against what the program says it did.

  - the checksum of everything the driver returned is the same traced or not (registers, xmm
    values, out-parameters and memory survive the hooks);
  - `cuhook report --format json`: exact call counts per function (upper bounds with
    --mode during), nothing dropped or damaged; cuFakeLoopBack, cuFakeLoopToStart and cuFakeShort
    refused with a reason and absent from the calls; one of the two alias names refused as an
    alias, the other counting the calls made through both; fakecuda_profiler_attach (not a cu*
    name) excluded by the filter; no other refusal;
  - the functions the agent counts (its default list, CUHOOK_COUNT_DEFAULT in
    src/agent/cuhook_agent.h, or --count GLOBS, the agent option count=, which replaces it;
    --count '' counts none) leave no ENTRY records and their calls in the COUNTS blocks equal
    the calls made, exactly (at most, with --mode during), read by a second reader of the file
    (tracefile.py), per thread blocks summed; every other function is checked as above;
  - with --csv (mode before only), `cuhook report --format csv`: per thread, the calls in order
    with their exact return values (driver_user --log), every cuLaunchKernel's 11 arguments
    (6 registers + 5 stack slots), only the registers a declared function takes, cuFakeInner at depth 1 inside each cuFakeOuter with the
    argument the outer body passed, the decoded out-parameters (device pointers, kernel
    names, driver version) and cuLaunchKernelEx's launch configuration (grid, block, shared
    memory, stream).

usage: check_driver_trace.py --driver-user PATH --lib LIBCUDA --agent LIBCUHOOK --cuhook CUHOOK
           [--mode before|after|during] [--threads N] [--iters M] [--csv] [--count GLOBS]
           [--clock tsc|monotonic] [--buffer-kb KB] [--drop] [--workdir DIR]"""

import argparse
import os
import re
import struct
import sys

from cuhooktest import (MASK32, Fatal, Problems, calls_by_name, check_trace_health, clean_env,
                        counted_names, default_count, need_file, num, parse_target_output,
                        refused_by_name, report_csv, report_json, run, run_main,
                        work_directory)
from cuhooktest.tracefile import read_trace

# Functions of the stand-in the engine must refuse, in both builds (fake_entry.S says why).
MUST_REFUSE = ("cuFakeLoopBack", "cuFakeLoopToStart", "cuFakeShort")
# Exported functions of the stand-in the default filter (cu*) leaves alone: its profiler
# interface (fakecuda_profiler.h) is no driver function and must never be hooked.
FILTERED_OUT = ("fakecuda_initialized", "fakecuda_profiler_attach", "fakecuda_profiler_kernels", "fakecuda_runtime_enter",
                "fakecuda_runtime_exit")
ALIASES = ("cuFakeAlias", "cuFakeAlias_v2")
# fakecuda.h
DPTR_BASE = 0x100000000000
DPTR_STRIDE = 0x1000000
DRIVER_VERSION = 13000
# cuLaunchKernel arguments that are 32-bit (gridDim*, blockDim*, sharedMemBytes): the upper half
# of their register or stack slot is undefined by the ABI.
LAUNCH_U32_ARGS = range(1, 8)
MODE_FLAGS = {"before": [], "after": ["--agent-after"], "during": ["--agent-during"]}


def check_counts(rep, expect, mode, problems):
    calls = calls_by_name(rep)
    refused = refused_by_name(rep)
    for name in MUST_REFUSE:
        if problems.check(name in refused, f"{name} was not refused (it must be: fake_entry.S)"):
            problems.check(refused[name].strip() != "", f"{name} refused without a reason")
        problems.check(calls.get(name, 0) == 0, f"{name} has {calls.get(name)} traced calls")

    alias_refused = [a for a in ALIASES if a in refused]
    hooked_alias = None
    if problems.check(len(alias_refused) == 1,
                      f"exactly one of {ALIASES} must be refused as an alias, refused: {alias_refused}"):
        problems.check("alias" in refused[alias_refused[0]].lower(),
                       f"{alias_refused[0]} refused for '{refused[alias_refused[0]]}', not as an alias")
        hooked_alias = ALIASES[1 - ALIASES.index(alias_refused[0])]

    for name in FILTERED_OUT:
        problems.check(refused.get(name) == "excluded by filter",
                       f"{name}: refused for {refused.get(name)!r}, expected 'excluded by filter'")

    for name, reason in sorted(refused.items()):
        if name not in MUST_REFUSE and name not in ALIASES and name not in FILTERED_OUT:
            problems.add(f"{name} refused ({reason}); the stand-in is built so that only "
                         f"{', '.join(MUST_REFUSE)} and one alias are")

    for name in sorted(set(calls) - set(expect)):
        problems.add(f"{calls[name]} traced calls of {name}, which the program never called")

    def compare(name, got, want):
        if mode == "during":
            problems.check(got <= want, f"{name}: {got} traced calls, more than the {want} made")
        else:
            problems.check(got == want, f"{name}: {got} traced calls, expected {want}")

    for name, want in sorted(expect.items()):
        if name in MUST_REFUSE or name in ALIASES:
            continue
        compare(name, calls.get(name, 0), want)
    if hooked_alias:
        compare(f"{ALIASES[0]}+{ALIASES[1]}", sum(calls.get(a, 0) for a in ALIASES),
                sum(expect.get(a, 0) for a in ALIASES))
    traced = sum(calls.values())
    made = sum(v for k, v in expect.items() if k not in MUST_REFUSE)
    print(f"traced {traced} calls of {made} made to patched functions ({mode})")
    if mode == "during" and traced == 0:
        print("note: the workers finished before the agent patched anything")


def check_dropped(trace_path, rep, expect, counted, problems):
    """Drop mode (CUHOOK_DROP) with rings too small for the writer's pace: records are dropped,
    never waited for, and every drop is accounted for. Per function, ENTRY records <= calls made;
    the calls without an ENTRY are at most the drops the END block counts; the DROP records in
    the stream report some of them (the rest are counted at close); the file is complete and
    undamaged."""
    t = read_trace(trace_path)
    problems.check(t.has_end, "no END block")
    problems.check(t.end_dropped is not None and t.end_dropped > 0,
                   f"no drops (END dropped {t.end_dropped}): the test provokes none, raise --iters")
    problems.check(t.drop_records > 0 and 0 < t.dropped_reported <= (t.end_dropped or 0),
                   f"{t.drop_records} DROP records reporting {t.dropped_reported}, END block {t.end_dropped}")
    problems.check(rep.get("dropped") == t.end_dropped,
                   f"the report says {rep.get('dropped')} dropped, the END block {t.end_dropped}")
    for key in ("unknown_function_ids", "orphan_exits", "corrupt_records", "block_gaps"):
        problems.check(rep.get(key, 0) == 0, f"report: {key} = {rep.get(key)}")
    missing = 0
    for name, want in sorted(expect.items()):
        if name in MUST_REFUSE or name in ALIASES or name in counted:  # counts are never dropped
            continue
        got = t.entries.get(name, 0)
        problems.check(got <= want, f"{name}: {got} ENTRY records, more than the {want} calls made")
        missing += max(0, want - got)
    aliases = sum(t.entries.get(a, 0) for a in ALIASES)
    missing += max(0, sum(expect.get(a, 0) for a in ALIASES) - aliases)
    problems.check(missing <= (t.end_dropped or 0),
                   f"{missing} calls left no ENTRY record, more than the {t.end_dropped} drops counted")
    print(f"drop mode: {sum(t.entries.values())} ENTRY records, {missing} calls without one, "
          f"{t.end_dropped} records dropped ({t.dropped_reported} in {t.drop_records} DROP records)")


def check_counted(trace_path, globs, counted, expect, mode, problems):
    """Counted functions: no ENTRY record, COUNTS equal to the calls made (the second reader)."""
    t = read_trace(trace_path)
    problems.check(t.version >= 3, f"trace version {t.version}, COUNTS blocks need 3")
    problems.check(t.has_end, "no END block")
    for name in sorted(counted):
        problems.check(t.entries.get(name, 0) == 0,
                       f"{name} is counted but has {t.entries.get(name)} ENTRY records")
        got, want = t.counted.get(name, 0), expect[name]
        if mode == "during":
            problems.check(got <= want, f"{name}: {got} counted calls, more than the {want} made")
        else:
            problems.check(got == want, f"{name}: {got} counted calls, expected {want}")
    # every counted function of the library is counted by its count thunk, not the entry stub
    # (the agent's note says how many of each; hooks.c)
    want_n = len(counted_names(globs, t.patched))
    got_notes = [text for _, text in t.notes if "functions counted" in text]
    problems.check(any(text.endswith(f": {want_n} functions counted, {want_n} of them by their count thunks")
                       for text in got_notes),
                   f"expected a note of {want_n} functions counted, all by count thunks; notes: {got_notes}")
    stray = sorted(set(t.counted) - counted)
    problems.check(not stray, f"COUNTS for functions not counted: {stray}")
    threads = {tid for tid, _ in t.counted_by_tid}
    print(f"counted {sum(t.counted.values())} calls of {len(counted)} functions on {len(threads)} "
          f"threads in {t.counts_blocks} COUNTS blocks")
    if mode != "during":
        problems.check(t.counts_blocks > 0, "no COUNTS block")
    # COUNTS times are on the events' clock (TSC or CLOCK_MONOTONIC, as the file says): after
    # the first event, before the closing CLOCK block
    if t.event_times and t.last_clock is not None:
        bad = [x for x in t.counts_times if not t.event_times[0] <= x <= t.last_clock]
        problems.check(not bad, f"{len(bad)} COUNTS blocks timed outside [{t.event_times[0]}, {t.last_clock}] "
                       f"(clock source {t.clock_source}), e.g. {bad[:1]}")


def read_log(path):
    """driver_user --log: {tid: [(name, ret or None)]}, {tid: [(ret, [11 args])]}"""
    calls, launches = {}, {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if not p or p[0].startswith("#"):
                continue
            tid = int(p[1])
            if p[0] == "C":
                calls.setdefault(tid, []).append((p[2], None if p[3] == "-" else int(p[3], 16)))
            elif p[0] == "L":
                launches.setdefault(tid, []).append((int(p[2], 16), [int(x, 16) for x in p[3:14]]))
    return calls, launches


def ints_in(text):
    return [int(x, 0) for x in re.findall(r"0x[0-9a-fA-F]+|\d+", text or "")]


def norm(name):
    return ALIASES[0] if name in ALIASES else name


def describe(row):
    return f"{row['func']}(arg0={row['arg0']}) ret={row['ret']} depth={row['depth']} start={row['start_ns']}"


def check_sequences(by_tid, log_calls, problems):
    """Per thread, the traced outermost calls are exactly the program's calls to patched
    functions, in order, with the same return values."""
    for tid in sorted(set(by_tid) | set(log_calls)):
        if tid not in log_calls:
            problems.add(f"thread {tid}: {len(by_tid[tid])} traced calls, but the program made none there")
            continue
        want = [(norm(n), r) for n, r in log_calls[tid] if n not in MUST_REFUSE]
        got = [row for row in by_tid.get(tid, []) if row["depth"] == "0"]
        for i, (row, (name, ret)) in enumerate(zip(got, want)):
            if norm(row["func"]) != name:
                ctx = ", ".join(n for n, _ in want[max(0, i - 2):i + 3])
                problems.add(f"thread {tid}, call #{i}: traced {describe(row)}, program called {name} "
                             f"(program around there: {ctx})")
                break
            if ret is None:
                continue
            got_ret = num(row["ret"])
            if got_ret is None or got_ret & MASK32 != ret:
                problems.add(f"thread {tid}, call #{i}: {name} returned 0x{ret:x}, trace says {row['ret']!r}")
        else:
            problems.check(len(got) == len(want),
                           f"thread {tid}: {len(got)} traced outermost calls, program made {len(want)}")


def check_launches(by_tid, log_launches, problems):
    bad = 0
    for tid, want in sorted(log_launches.items()):
        got = [r for r in by_tid.get(tid, []) if r["func"] == "cuLaunchKernel" and r["depth"] == "0"]
        if not problems.check(len(got) == len(want),
                              f"thread {tid}: {len(got)} cuLaunchKernel rows, program made {len(want)}"):
            continue
        for i, (row, (ret, args)) in enumerate(zip(got, want)):
            vals = [num(row[f"arg{k}"]) for k in range(6)] + [num(row[f"stack{k}"]) for k in range(5)]
            for k, (g, w) in enumerate(zip(vals, args)):
                if g is None:
                    problems.add(f"thread {tid}, launch #{i}: argument {k} missing from the trace "
                                 f"(cuLaunchKernel passes 5 arguments on the stack)")
                    bad += 1
                    break
                if (g & MASK32 if k in LAUNCH_U32_ARGS else g) != w:
                    problems.add(f"thread {tid}, launch #{i}: argument {k} is 0x{g:x} in the trace, "
                                 f"the program passed 0x{w:x}")
                    bad += 1
                    break
            if bad >= 10:
                return


def check_arg_slots(by_tid, problems):
    """Argument registers and stack slots are recorded as the function's arity says
    (scripts/gen_arity.py): all six registers and exactly 5 stack slots for cuLaunchKernel (11
    parameters); as many registers as parameters and no stack slot for a function cuda.h
    declares with at most six (trace format version 4); everything for one it does not declare
    (signature unknown)."""
    want = {"cuLaunchKernel": (6, 5), "cuCtxGetCurrent": (1, 0), "cuMemAlloc_v2": (2, 0),
            "cuModuleGetFunction": (3, 0), "cuInit": (1, 0), "cuFakeOuter": (6, 6)}
    seen = set()
    for rows in by_tid.values():
        for r in rows:
            n = want.get(r["func"])
            if n is None:
                continue
            got = (sum(1 for k in range(6) if r[f"arg{k}"] != ""), sum(1 for k in range(6) if r[f"stack{k}"] != ""))
            if not problems.check(got == n, f"{r['func']}: {got[0]} registers and {got[1]} stack slots "
                                              f"recorded, want {n[0]} and {n[1]}"):
                return
            seen.add(r["func"])
    problems.check(seen == set(want), f"argument slots: no rows of {sorted(set(want) - seen)}")


def check_nesting(by_tid, problems):
    """cuFakeInner at depth 1 exactly once inside each cuFakeOuter, with the argument the outer
    body computed (3 * x) and its own result (arg ^ 0x1234)."""
    for tid, rows in sorted(by_tid.items()):
        outers = [r for r in rows if r["func"] == "cuFakeOuter" and r["depth"] == "0"]
        nested = [r for r in rows if r["depth"] != "0"]
        for r in nested:
            if r["depth"] != "1" or r["func"] != "cuFakeInner":
                problems.add(f"thread {tid}: unexpected nested call {describe(r)}")
                return
        if not problems.check(len(nested) == len(outers),
                              f"thread {tid}: {len(nested)} nested calls for {len(outers)} cuFakeOuter calls"):
            continue
        for outer, inner in zip(outers, nested):
            o_start, o_end = int(outer["start_ns"]), int(outer["end_ns"] or -1)
            i_start, i_end = int(inner["start_ns"]), int(inner["end_ns"] or -1)
            if not (o_start <= i_start <= i_end <= o_end):
                problems.add(f"thread {tid}: {describe(inner)} (end {i_end}) not inside "
                             f"{describe(outer)} (end {o_end})")
                return
            x = num(outer["arg0"]) & MASK32
            arg = num(inner["arg0"]) & MASK32
            if arg != (3 * x) & MASK32 or (num(inner["ret"]) or 0) & MASK32 != arg ^ 0x1234:
                problems.add(f"thread {tid}: inner call {describe(inner)} for outer arg 0x{x:x}")
                return


def check_decoded(rows, main_tid, problems):
    dptrs = []
    for r in rows:
        if r["func"] == "cuMemAlloc_v2" and r["depth"] == "0" and num(r["ret"]) == 0:
            vals = [v for v in ints_in(r["decoded"])
                    if v >= DPTR_BASE and (v - DPTR_BASE) % DPTR_STRIDE == 0]
            if not vals:
                problems.add(f"cuMemAlloc_v2 row without a decoded device pointer: decoded={r['decoded']!r}")
                return
            dptrs.append(vals[0])
    problems.check(len(set(dptrs)) == len(dptrs), "decoded cuMemAlloc_v2 pointers repeat")
    if dptrs:
        problems.check(max(dptrs) < DPTR_BASE + DPTR_STRIDE * len(dptrs),
                       f"decoded cuMemAlloc_v2 pointers beyond the {len(dptrs)} allocations")
    # decoded values are read only after a successful call (src/agent/record.c): the third
    # lookup (fake_matvec, not in the image) fails and has none
    kernels = [r["decoded"] for r in rows if r["func"] == "cuModuleGetFunction"
               and int(r["tid"]) == main_tid and num(r["ret"]) == 0]
    problems.check(len(kernels) == 2, f"{len(kernels)} successful cuModuleGetFunction rows, expected 2")
    for name, dec in zip(("fake_scale_add", "fake_relu"), kernels):
        problems.check(name in (dec or ""), f"cuModuleGetFunction decoded {dec!r}, expected the name {name}")
    ver = [r["decoded"] for r in rows if r["func"] == "cuDriverGetVersion"]
    if ver:
        problems.check(DRIVER_VERSION in ints_in(ver[0]),
                       f"cuDriverGetVersion decoded {ver[0]!r}, expected {DRIVER_VERSION}")


def check_launch_configs(by_tid, problems):
    """cuLaunchKernelEx's CUlaunchConfig, decoded from its DATA record (config=40 bytes in hex):
    driver_user passes grid (2 + t, 3, 4), block (32, 2, 1), smem 256 * t and the stream it
    then synchronizes."""
    seen = 0
    for tid, rows in sorted(by_tid.items()):
        for k, r in enumerate(rows):
            if r["func"] != "cuLaunchKernelEx" or num(r["ret"]) != 0:
                continue
            m = re.search(r"config=([0-9a-f]+)", r["decoded"] or "")
            if not problems.check(m is not None and len(m.group(1)) == 80,
                                  f"thread {tid}: cuLaunchKernelEx without 40 config bytes: {r['decoded']!r}"):
                return
            raw = bytes.fromhex(m.group(1))
            gx, gy, gz, bx, by, bz, smem = struct.unpack_from("<7I", raw, 0)
            stream = struct.unpack_from("<Q", raw, 32)[0]
            sync = next((x for x in rows[k + 1:] if x["func"] == "cuStreamSynchronize"), None)
            ok = ((gy, gz, bx, by, bz) == (3, 4, 32, 2, 1) and gx >= 2 and smem == 256 * (gx - 2)
                  and sync is not None and num(sync["arg0"]) == stream and stream != 0)
            if not problems.check(ok, f"thread {tid}: cuLaunchKernelEx config decoded as grid "
                                  f"({gx},{gy},{gz}) block ({bx},{by},{bz}) smem {smem} stream 0x{stream:x}"):
                return
            seen += 1
    problems.check(seen > 0, "no successful cuLaunchKernelEx row to check")


def check_csv(rows, log_path, counted, problems):
    log_calls, log_launches = read_log(log_path)
    # counted functions have no rows: the sequences are those of the recorded ones
    log_calls = {tid: [(n, r) for n, r in cs if n not in counted] for tid, cs in log_calls.items()}
    by_tid = {}
    for r in rows:
        by_tid.setdefault(int(r["tid"]), []).append(r)
        if r["end_ns"] and int(r["end_ns"]) < int(r["start_ns"]):
            problems.add(f"call ends before it starts: {describe(r)}")
    for rs in by_tid.values():
        rs.sort(key=lambda r: int(r["start_ns"]))  # stable: equal starts keep the report's order
    main_tid = next((t for t, cs in log_calls.items() if any(n == "cuInit" for n, _ in cs)), None)
    check_sequences(by_tid, log_calls, problems)
    check_launches(by_tid, log_launches, problems)
    check_arg_slots(by_tid, problems)
    check_nesting(by_tid, problems)
    check_decoded(rows, main_tid, problems)
    check_launch_configs(by_tid, problems)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--driver-user", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--mode", choices=MODE_FLAGS, default="before")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--csv", action="store_true")
    ap.add_argument("--count", default=None,
                    help="agent option count= (default: none given, the agent's default list)")
    ap.add_argument("--clock", choices=("tsc", "monotonic"), default="tsc")
    ap.add_argument("--buffer-kb", type=int, help="agent option buffer_kb (each thread's ring)")
    ap.add_argument("--drop", action="store_true",
                    help="drop mode (CUHOOK_DROP) with a writer round of 1 s: drops are expected")
    ap.add_argument("--workdir")
    a = ap.parse_args()
    if a.csv and a.mode != "before":
        raise Fatal("--csv needs --mode before (the call log starts before the agent otherwise)")
    for path, what in ((a.driver_user, "driver_user"), (a.lib, "the stand-in libcuda"),
                       (a.agent, "the agent libcuhook.so"), (a.cuhook, "the cuhook CLI")):
        need_file(path, what)
    workdir = work_directory(a.workdir, "cuhook-engine-")
    problems = Problems()

    base = [a.driver_user, "--threads", str(a.threads), "--iters", str(a.iters)]
    plain = parse_target_output(run(base + [a.lib], env=clean_env(), what="driver_user (untraced)").stdout)
    trace = os.path.join(workdir, "trace.bin")
    log = os.path.join(workdir, "calls.log")
    if os.path.exists(trace):
        os.unlink(trace)
    env = {"CUHOOK_OUTPUT": trace}
    if a.count is not None:
        env["CUHOOK_COUNT"] = a.count
    count_globs = default_count() if a.count is None else a.count
    if a.clock != "tsc":
        env["CUHOOK_CLOCK"] = a.clock
    if a.buffer_kb:
        env["CUHOOK_BUFFER_KB"] = str(a.buffer_kb)
    if a.drop:
        env.update({"CUHOOK_DROP": "1", "CUHOOK_FLUSH_MS": "1000"})
    p = run(base + ["--agent", a.agent] + MODE_FLAGS[a.mode] + ["--log", log, a.lib],
            env=clean_env(env), what="driver_user (traced)")
    traced = parse_target_output(p.stdout)
    if p.stderr.strip():
        print(p.stderr.strip())
    problems.check(plain.get("checksum") == traced.get("checksum"),
                   f"checksum changed under tracing: {plain.get('checksum')} untraced, "
                   f"{traced.get('checksum')} traced")
    if a.mode == "before":
        problems.check(plain["expect"] == traced["expect"], "the program's call counts differ between runs")
    need_file(trace, "the trace the agent should have written (CUHOOK_OUTPUT)")

    rep = report_json(a.cuhook, trace, workdir)
    expect = dict(traced["expect"])
    counted = set()
    if count_globs:
        counted = counted_names(count_globs, expect) - set(MUST_REFUSE) - set(ALIASES)
        problems.check(bool(counted), f"count={count_globs} names no function the program calls")
        check_counted(trace, count_globs, counted, expect, a.mode, problems)
    else:
        t = read_trace(trace)
        problems.check(not t.counted, f"count= empty, yet COUNTS for {sorted(t.counted)}")
    print(f"counted: {sorted(counted) or 'none'} (count={count_globs!r}"
          f"{', the default' if a.count is None else ''})")
    if a.drop:
        check_dropped(trace, rep, expect, counted, problems)
        problems.exit()
    for name in counted:
        expect[name] = 0  # recorded calls: none
    check_trace_health(rep, problems)
    libs = [lib["path"] for lib in rep.get("libraries", []) if not lib.get("internal")]
    problems.check([os.path.realpath(p) for p in libs] == [os.path.realpath(a.lib)],
                   f"traced libraries {libs}, expected just {a.lib}")
    check_counts(rep, expect, a.mode, problems)
    if a.csv:
        check_csv(report_csv(a.cuhook, trace, workdir), log, counted, problems)
        # the text report describes a cuLaunchKernelEx from its decoded configuration
        txt = run([a.cuhook, "report", "--functions", "cuLaunchKernelEx", "--top", "3", trace],
                  what="cuhook report --functions cuLaunchKernelEx").stdout
        problems.check(re.search(r"cuLaunchKernelEx +fake_relu grid \(\d+,3,4\) block \(32,2,1\) smem \d+ "
                                 r"stream 0x[0-9a-f]+", txt) is not None,
                       "the report's slowest cuLaunchKernelEx calls lack the kernel name, grid and block")
    problems.exit()


if __name__ == "__main__":
    run_main(main)
