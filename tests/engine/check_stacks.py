#!/usr/bin/env python3
"""Call stacks (agent option stacks=, cuhook run/attach --stacks) on tests/targets/stack_chain.c,
read back with tests/lib/cuhooktest/tracefile.py (which checks the order trace_format.h requires as it
reads: MAPS before STACKS, STACKS before the EVENTS naming them, each STACK record right after
its call's ENTRY) and symbolized from the ELF symbols of the files the MAPS block names.

  --mode chain    main -> outer -> middle -> inner -> cuMemAlloc_v2 (stacked) and
                  cuDriverGetVersion (not), on one thread and on 4: a STACK record after every
                  cuMemAlloc_v2 ENTRY and after no other; its stack's first frames are inner,
                  middle, outer, main, the walk DONE; the executable's MAPS entry carries its
                  build id. --stack-depth 2: exactly inner, middle, DEPTH. --no-stacks: none.
  --mode fork     cuhook run --follow: the parent's file and the fork child's each have a stack
                  after every cuMemAlloc_v2 ENTRY, defined in that file, with the chain's frames.
  --mode signal   a SIGALRM handler calls cuDriverGetVersion (stacked) while spin() runs: the
                  frames are on_alarm, the signal trampoline, spin, main.
  --mode sites    exact addresses: cuMemAlloc_v2 from two call sites of one function (two_sites):
                  two stacks, each naming site_call then its own site's return address less one
                  (the program prints them), the agent's own frames skipped; then a SA_SIGINFO
                  SIGALRM handler's call: on_alarm_info, the trampoline's address less one
                  (sa_restorer), then the interrupted instruction's address exactly (the
                  handler's ucontext), call by call, then spin.
  --mode jit      cuMemAlloc_v2 called from code in an anonymous executable mapping: the one
                  frame is the JIT code's call (its exact address), the walk ends NO_INFO, the
                  mapping is in MAPS without a path; the program's results are unchanged.
  --mode attach   cuhook attach --stacks twice (a new file each time) while 4 threads make
                  stacked calls in a loop: the program survives with every call successful;
                  each file defines the stacks its STACK records name, with the chain's frames.
  --mode options  bad --stack-depth and --stacks values refused with a message, nothing run.

Every traced run's program output (checksum, call counts) must equal the untraced run's."""
import argparse
import os
import re
import signal
import subprocess
import sys
import time

from cuhooktest import tracefile as tf
from cuhooktest import Problems, case_function, clean_env, run, run_main, tail, work_directory

CHAIN = ["inner", "middle", "outer", "main"]


def traced(a, work, name, mode_args, *opts):
    """cuhook run OPTS -o WORK/NAME.bin -- stack_chain LIB MODE_ARGS: (trace, stdout)."""
    trace = os.path.join(work, name + ".bin")
    if os.path.exists(trace):
        os.unlink(trace)
    p = run([a.cuhook, "run", "--agent", a.agent, *opts, "-o", trace, "--", a.target, a.lib, *mode_args],
            env=clean_env(), timeout=120, what=f"{name} (traced)")
    return tf.read_trace(trace), p.stdout


def untraced(a, mode_args):
    return run([a.target, a.lib, *mode_args], env=clean_env(), timeout=120, what="untraced").stdout


def names(t, st):
    return [tf.symbolize(t, st, pc) for pc in st.native]


def stacked_entries(t, problems, func):
    """The stacks of every ENTRY of func; problems for any STACK record after another function."""
    got = []
    for _tid, name, sid in t.entry_stacks:
        if name == func:
            got.append(sid)
        else:
            problems.check(sid is None, f"{name}: a STACK record after an unstacked function's ENTRY")
    return got


def check_chain_trace(t, problems, what, calls, chain):
    problems.check(t.has_end, f"{what}: no END block")
    sids = stacked_entries(t, problems, "cuMemAlloc_v2")
    problems.check(len(sids) == calls, f"{what}: {len(sids)} cuMemAlloc_v2 ENTRY records, not {calls}")
    problems.check(t.stack_records == calls, f"{what}: {t.stack_records} STACK records, not {calls}")
    problems.check(t.entries.get("cuDriverGetVersion") == calls,
                   f"{what}: {t.entries.get('cuDriverGetVersion')} cuDriverGetVersion calls, not {calls}")
    for sid in set(sids):
        if sid is None or sid == tf.STACK_NONE:
            problems.add(f"{what}: a cuMemAlloc_v2 call without a stack ({sid})")
            continue
        st = t.stacks[sid]
        frames = names(t, st)
        problems.check(frames[:4] == chain, f"{what}: stack {sid} begins {frames[:6]}, not {chain}")
        problems.check(st.native_end == "DONE", f"{what}: stack {sid} ends {st.native_end}: {frames}")
        problems.check(st.python == [] and st.python_end == "NONE",
                       f"{what}: stack {sid} has Python frames {st.python} ({st.python_end})")
    return sids


def mode_chain(a, work, problems):
    for name, args in (("chain", ["chain", "50"]), ("threads", ["threads", "4", "50"])):
        calls = 50 if name == "chain" else 200
        plain = untraced(a, args)
        t, out = traced(a, work, name, args, "--stacks", "cuMemAlloc*")
        problems.check(out == plain, f"{name}: output traced {out!r}, untraced {plain!r}")
        # a thread's chain starts in its start routine, the main thread's in main
        sids = check_chain_trace(t, problems, name, calls, CHAIN[:3] + ["main" if name == "chain" else "worker"])
        # one call site: one stack (per thread at most, should two threads intern it at once)
        problems.check(1 <= len(set(sids)) <= (1 if name == "chain" else 4),
                       f"{name}: {len(set(sids))} distinct stacks for one call site")
        exe = [m for m in t.maps_blocks[0] if m.path == os.path.realpath(a.target)]
        problems.check(exe and all(len(m.build_id) == 20 for m in exe),
                       f"{name}: the executable's MAPS entries {exe} lack its build id")
    t, out = traced(a, work, "depth", ["chain", "5"], "--stacks", "cuMemAlloc*", "--stack-depth", "2")
    for sid in set(stacked_entries(t, problems, "cuMemAlloc_v2")):
        st = t.stacks[sid]
        problems.check(names(t, st) == CHAIN[:2] and st.native_end == "DEPTH",
                       f"--stack-depth 2: {names(t, st)} {st.native_end}, not {CHAIN[:2]} DEPTH")
    t, out = traced(a, work, "nostacks", ["chain", "5"], "--stacks", "cuMemAlloc*", "--no-stacks")
    problems.check(t.stack_records == 0 and not t.stacks and not t.maps_blocks,
                   f"--no-stacks: {t.stack_records} STACK records, {len(t.stacks)} stacks")
    problems.check(t.entries.get("cuMemAlloc_v2") == 5, "--no-stacks: the calls are still recorded")
    # no option: cuhook run stacks the rare, costly calls (allocation among them), nothing else
    t, out = traced(a, work, "default", ["chain", "5"])
    stacked = sorted({name for _tid, name, sid in t.entry_stacks if sid is not None})
    problems.check(stacked == ["cuMemAlloc_v2"] and t.stack_records == 5 and t.entries.get("cuMemAlloc_v2") == 5,
                   f"default: {t.stack_records} STACK records on {stacked}, not 5 on cuMemAlloc_v2")
    for sid in set(stacked_entries(t, problems, "cuMemAlloc_v2")):
        problems.check(names(t, t.stacks[sid])[:4] == CHAIN[:3] + ["main"], f"default: stack {sid} is "
                       f"{names(t, t.stacks[sid])}")


def mode_fork(a, work, problems):
    """--follow: the fork child's file defines again the stacks it names (the table is the
    parent's, copied), with a MAPS block of its own."""
    n = 20
    plain = untraced(a, ["fork", str(n)])
    for f in os.listdir(work):
        if f.startswith("fork."):
            os.unlink(os.path.join(work, f))
    trace = os.path.join(work, "fork.bin")
    p = run([a.cuhook, "run", "--agent", a.agent, "--follow", "--stacks", "cuMemAlloc*", "-o", trace, "--", a.target,
             a.lib, "fork", str(n)], env=clean_env(), timeout=120, what="fork (traced)")
    problems.check(p.stdout == plain, f"fork: output traced {p.stdout!r}, untraced {plain!r}")
    files = sorted(f for f in os.listdir(work) if re.fullmatch(r"fork\.\d+\.bin", f))
    problems.check(len(files) == 2, f"fork: trace files {files}, not the parent's and the child's")
    calls = sorted(tf.read_trace(os.path.join(work, f)).entries.get("cuMemAlloc_v2", 0) for f in files)
    problems.check(calls == [n, 2 * n], f"fork: cuMemAlloc_v2 calls per file {calls}, not [{n}, {2 * n}]")
    for f in files:
        t = tf.read_trace(os.path.join(work, f))
        check_chain_trace(t, problems, f, t.entries.get("cuMemAlloc_v2", 0), CHAIN)


def mode_signal(a, work, problems):
    n = 20
    plain = untraced(a, ["signal", str(n)])
    t, out = traced(a, work, "signal", ["signal", str(n)], "--stacks", "cuDriverGetVersion")
    problems.check(out == plain, f"signal: output traced {out!r}, untraced {plain!r}")
    sids = stacked_entries(t, problems, "cuDriverGetVersion")
    problems.check(len(sids) == n and t.stack_records == n, f"signal: {len(sids)} calls, {t.stack_records} stacks")
    for sid in set(sids):
        st = t.stacks[sid]
        frames = names(t, st)
        # the handler, the signal trampoline (libc's __restore_rt), the interrupted function
        problems.check(frames[0] == "on_alarm" and frames[2:4] == ["spin", "main"] and st.native_end == "DONE",
                       f"signal: stack {sid} is {frames} ({st.native_end})")


def mode_sites(a, work, problems):
    n = 20
    printed = re.compile(r"^(site \d|restorer|rip) .*\n", re.M)
    plain = untraced(a, ["sites", str(n)])
    t, out = traced(a, work, "sites", ["sites", str(n)], "--stacks", "cuMemAlloc*,cuDriverGetVersion")
    problems.check(printed.sub("", out) == printed.sub("", plain), f"sites: output traced {out!r}, untraced {plain!r}")
    sites = [int(v, 16) for v in re.findall(r"^site \d (0x[0-9a-f]+)$", out, re.M)]
    restorer = int(re.search(r"^restorer (0x[0-9a-f]+)$", out, re.M).group(1), 16)
    rips = [int(v, 16) for v in re.findall(r"^rip (0x[0-9a-f]+)$", out, re.M)]
    problems.check(len(sites) == 2 and sites[0] != sites[1] and len(rips) == n, f"sites: printed {sites} {rips}")
    of = lambda func: [sid for _tid, name, sid in t.entry_stacks if name == func]  # noqa: E731
    sids = of("cuMemAlloc_v2")
    problems.check(len(sids) == 2 * n, f"sites: {len(sids)} stacked cuMemAlloc_v2 calls, not {2 * n}")
    for i, sid in enumerate(sids):
        st = t.stacks[sid]
        want = sites[i % 2] - 1
        problems.check(len(st.native) > 2 and st.native[1] == want and st.native_end == "DONE"
                       and names(t, st)[:3] == ["site_call", "two_sites", "run_sites"],
                       f"sites: call {i}: {names(t, st)} {[hex(p) for p in st.native[:3]]} {st.native_end}, "
                       f"not site_call, {want:#x} (two_sites), run_sites, DONE")
    problems.check(len(set(sids)) == 2, f"sites: {len(set(sids))} distinct stacks for two call sites")
    sids = of("cuDriverGetVersion")
    problems.check(len(sids) == n, f"sites: {len(sids)} stacked calls from the signal handler, not {n}")
    for i, (sid, rip) in enumerate(zip(sids, rips)):
        st = t.stacks[sid]
        frames = names(t, st)
        problems.check(len(st.native) > 3 and frames[0] == "on_alarm_info" and st.native[1] == restorer - 1
                       and st.native[2] == rip and frames[2:4] == ["spin", "run_sites"] and st.native_end == "DONE",
                       f"sites: signal {i}: {frames} {[hex(p) for p in st.native[:4]]} {st.native_end}, not "
                       f"on_alarm_info, {restorer - 1:#x}, {rip:#x} (spin), run_sites, DONE")


def mode_jit(a, work, problems):
    n = 10
    plain = untraced(a, ["jit", str(n)])
    t, out = traced(a, work, "jit", ["jit", str(n)], "--stacks", "cuMemAlloc*")
    strip = lambda s: re.sub(r"^jit .*\n", "", s, flags=re.M)  # noqa: E731 (its address differs)
    problems.check(strip(out) == strip(plain), f"jit: output traced {out!r}, untraced {plain!r}")
    jit = int(re.search(r"^jit (0x[0-9a-f]+)", out, re.M).group(1), 16)
    sids = stacked_entries(t, problems, "cuMemAlloc_v2")
    problems.check(len(sids) == n and t.stack_records == n, f"jit: {len(sids)} calls, {t.stack_records} stacks")
    for sid in set(sids):
        st = t.stacks[sid]
        # the call instruction at offset 13 of the copied code returns to offset 15
        problems.check(st.native == [jit + 14] and st.native_end == "NO_INFO",
                       f"jit: stack {sid} is {[hex(p) for p in st.native]} {st.native_end}, "
                       f"not [{jit + 14:#x}] NO_INFO")
        m = [m for m in t.maps_blocks[st.maps] if m.start <= jit < m.end]
        problems.check(len(m) == 1 and m[0].inode == 0 and m[0].path == "",
                       f"jit: the MAPS entry of the JIT code is {m}")


def mode_attach(a, work, problems):
    target = subprocess.Popen([a.target, a.lib, "loop", "4", "6000", "50"], stdout=subprocess.PIPE, text=True,
                              env=clean_env())
    try:
        time.sleep(0.5)
        # both windows first, then the files read: each attach needs the program still running
        traces = [os.path.join(work, f"attach{i}.bin") for i in range(2)]
        for i, trace in enumerate(traces):
            if os.path.exists(trace):
                os.unlink(trace)
            run([a.cuhook, "attach", "--agent", a.agent, "--stacks", "cuMemAlloc*", "--duration", "0.25", "-o",
                 trace, str(target.pid)], env=clean_env(), timeout=60, what=f"attach {i}")
        # no --stacks: an attach stacks nothing (libunwind would leave its pipe in the program)
        plain = os.path.join(work, "attach-default.bin")
        if os.path.exists(plain):
            os.unlink(plain)
        run([a.cuhook, "attach", "--agent", a.agent, "--duration", "0.1", "-o", plain, str(target.pid)],
            env=clean_env(), timeout=60, what="attach without --stacks")
        for i, trace in enumerate(traces):
            t = tf.read_trace(trace)
            os.unlink(trace)
            calls = t.entries.get("cuMemAlloc_v2", 0)
            problems.check(calls > 0, f"attach {i}: no cuMemAlloc_v2 call recorded")
            sids = [s for s in stacked_entries(t, problems, "cuMemAlloc_v2") if s is not None]
            # a call in flight at the start may have its ENTRY without a stack, never more than
            # one per thread
            problems.check(len(sids) >= calls - 4 and t.stack_records == len(sids),
                           f"attach {i}: {len(sids)} stacks for {calls} calls")
            for sid in set(sids):
                frames = names(t, t.stacks[sid])
                problems.check(frames[:4] == CHAIN[:3] + ["worker"],
                               f"attach {i}: stack {sid} is {frames}")
        t = tf.read_trace(plain)
        os.unlink(plain)
        # none, but for a call per thread whose walk began in the last window and whose records
        # were committed after this one started (the reader checks that the file defines them)
        problems.check(t.entries.get("cuMemAlloc_v2", 0) > 0 and t.stack_records <= 4,
                       f"attach without --stacks: {t.stack_records} STACK records for "
                       f"{t.entries.get('cuMemAlloc_v2', 0)} calls, not at most 4")
        out, _ = target.communicate(timeout=30)
    finally:
        if target.poll() is None:
            target.send_signal(signal.SIGKILL)
            target.wait()
    problems.check(target.returncode == 0, f"the target exited {target.returncode} (3: a driver call failed)")
    m = re.search(r"^calls (\d+) (\d+)$", out, re.M)
    problems.check(m and m.group(1) == m.group(2) and int(m.group(1)) > 0, f"the target printed {out!r}")


def mode_options(a, work, problems):
    trace = os.path.join(work, "never.bin")
    cases = [(["--stack-depth", "0"], "cuhook: --stack-depth must be a number from 1 to 256, not '0'"),
             (["--stack-depth", "257"], "cuhook: --stack-depth must be a number from 1 to 256, not '257'"),
             (["--stack-depth", "-3"], "cuhook: --stack-depth must be a number from 1 to 256, not '-3'"),
             (["--stacks", "cu[Mem"], "cuhook: --stacks: pattern 'cu[Mem' has a '[' without its ']'"),
             (["--opt", "stack_depth=x"], "cuhook: --opt stack_depth=x: 'stack_depth' must be a number from 1 to 256, "
                                          "not 'x'")]
    for opts, msg in cases:
        for cmd in ("run", "attach"):
            tail_args = ["--", a.target, a.lib, "chain", "1"] if cmd == "run" else [str(os.getpid())]
            p = subprocess.run([a.cuhook, cmd, "--agent", a.agent, "-o", trace, *opts, *tail_args],
                               capture_output=True, text=True, timeout=60, env=clean_env())
            want = msg.replace("cuhook:", f"cuhook {cmd}:", 1)  # every message names its command
            problems.check(p.returncode != 0 and want in p.stderr.splitlines() and not p.stdout,
                           f"{cmd} {opts}: exit {p.returncode}, stderr {tail(p.stderr, 300)!r}, not {want!r}")
            problems.check(not os.path.exists(trace), f"{cmd} {opts}: a trace was written")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", required=True, help="mode_MODE below (tests/engine/meson.build lists them)")
    ap.add_argument("--target", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--workdir")
    a = ap.parse_args()
    check_mode = case_function(globals(), "mode_", a.mode)
    work = work_directory(a.workdir, "cuhook-stacks-")
    problems = Problems()
    check_mode(a, work, problems)
    problems.exit()


if __name__ == "__main__":
    run_main(main)
