#!/usr/bin/env python3
"""Capture ranges and recording windows (src/agent/capture_range.h; docs/agent.md, "Capture
ranges and recording windows"), on the stand-in libcuda.

--mode run|attach|env: tests/targets/profiler_ranges makes known numbers of calls from 3 threads
  in five phases around two capture ranges (cuProfilerStart/cuProfilerStop, made by different
  threads; barriers keep every call wholly on one side of each edge), traced with
  `cuhook run --capture-range cudaProfilerApi [--capture-range-end END]`, with `cuhook attach`
  (the same, attached before the first phase), or in constructor mode (CUHOOK_CAPTURE_RANGE,
  CUHOOK_CAPTURE_RANGE_END). Checked, exactly: the recorded calls per function and thread are
  those of the phases inside the ranges END keeps (repeat: both; stop or repeat:1: the first;
  none: from the first start to the end), every one with its exit; nothing else is recorded
  (cuProfilerStart/cuProfilerStop are not); cuCtxGetDevice (counted by default) is counted for
  those phases only, per thread; the trace's NOTEs say each range's edges, and every recorded
  call lies between the events' clock values they give; `cuhook report` shows them.
--mode fork: profiler_ranges --fork, one thread, forks inside range 1 under
  `cuhook run --follow --capture-range cudaProfilerApi`: the child goes on inside the parent's range
  until its own cuProfilerStop, the parent until its own. Checked, exactly, in each process's
  trace: the recorded and counted calls (the parent: range1 and range2; the child: between), the
  child's NOTE that it inherited an open range and no NOTE of the parent's edges.
--mode window: tests/targets/timed_calls calls the driver every 10 ms for 4.5 s and says when,
  traced with `cuhook run --delay 1 --duration 2` (clock=monotonic: the events' times are
  CLOCK_MONOTONIC, the target's clock). Checked, with wide margins for a loaded machine: no
  call that ended before the start + delay is recorded, every call well inside the window is,
  none well after it is; the recorded calls are one run of rounds; the counted calls match the
  recorded ones but for the two edges; every recorded call began inside the window the NOTE gives,
  which lasts at least the duration; the trace was closed (END) while the program ran on to its end.
--mode window-edge: timed_calls with two cuFakeSleep calls, one spanning the window's opening and
  one its close (`cuhook run --delay 1 --duration 1`): the first not recorded at all, the second
  whole, its EXIT after the close (recorded because its ENTRY was: record.c); no EXIT without its
  ENTRY, no ENTRY without its EXIT.
--mode refusals: the combinations and values cuhook and the agent refuse, with their messages."""

import argparse
import os
import re
import signal
import subprocess
import sys

from cuhooktest import (Fatal, Problems, case_function, check_trace_health, clean_env, need_files, report, report_json,
                        run, run_main, tail, work_directory)
from cuhooktest import tracefile
from cuhooktest.traceformat import CLOCK_MONOTONIC

RECORDED = ("cuCtxSynchronize", "cuFakeOuter", "cuFakeInner")
COUNTED = "cuCtxGetDevice"
PHASES = ("before", "range1", "between", "range2", "after")
KEPT = {"repeat": ("range1", "range2"), "stop": ("range1",), "repeat:1": ("range1",),
        "none": ("range1", "between", "range2", "after")}

OPENED = re.compile(r"capture range (\d+) opened at [\d.]+ s \(cuProfilerStart on thread (\d+); events' clock (\d+)\)")
CLOSED = re.compile(r"capture range (\d+) closed at [\d.]+ s \(cuProfilerStop on thread (\d+)\): recorded from "
                    r"[\d.]+ s to [\d.]+ s \(events' clock (\d+) to (\d+)\)")
STILL_OPEN = re.compile(r"capture range (\d+) still open at the end of the trace: recorded from [\d.]+ s "
                        r"\(events' clock (\d+)\) to the end")
WINDOW = re.compile(r"recording window closed at [\d.]+ s: recorded from [\d.]+ s to [\d.]+ s "
                    r"\(events' clock (\d+) to (\d+)\)")


def target_output(text):
    out = {"threads": None, "phases": {}, "bad": [], "calls": []}
    for line in text.splitlines():
        p = line.split()
        if p[:1] == ["threads"]:
            out["threads"] = int(p[1])
        elif p[:1] == ["phase"]:
            out["phases"][p[1]] = int(p[2])
        elif p[:1] == ["bad"]:
            out["bad"].append(line)
        elif p[:1] == ["call"]:
            out["calls"].append((int(p[2]), int(p[3])))
        elif p[:1] == ["sleep"]:
            out.setdefault("sleeps", []).append((int(p[1]), int(p[2])))
    return out


def ranges_from_notes(t):
    """[(range, start clock, end clock or None)] from the NOTEs, in order."""
    opened, closed = {}, {}
    for _, text in t.notes:
        if m := OPENED.fullmatch(text):
            opened[int(m[1])] = int(m[3])
        elif m := CLOSED.fullmatch(text):
            closed[int(m[1])] = (int(m[3]), int(m[4]))
        elif m := STILL_OPEN.fullmatch(text):
            closed[int(m[1])] = (int(m[2]), None)
    return opened, closed


def check_ranges(a, trace, out, problems):
    """The checks of a capture-range trace of profiler_ranges (module docstring)."""
    problems.check(not out["bad"], f"the target saw wrong results: {out['bad'][:3]}")
    threads = out["threads"]
    kept = KEPT[a.end]
    n = sum(out["phases"][p] for p in kept)
    t = tracefile.read_trace(trace)
    problems.check(t.has_end, "the trace has no END block")
    want = {name: threads * n for name in RECORDED}
    problems.check(t.entries == want, f"recorded calls (ENTRY records) {t.entries}, want exactly {want} "
                   f"(phases {', '.join(kept)} of {threads} threads)")
    done = {}
    for c in t.calls:
        done[c.name] = done.get(c.name, 0) + 1
    problems.check(done == want, f"complete calls (ENTRY and EXIT) {done}, want {want}")
    per_thread = {}
    for c in t.calls:
        per_thread[(c.tid, c.name)] = per_thread.get((c.tid, c.name), 0) + 1
    tids = sorted({tid for tid, _ in per_thread})
    problems.check(len(tids) == threads and all(per_thread.get((tid, name)) == n for tid in tids for name in RECORDED),
                   f"recorded calls per thread {per_thread}, want {n} of each function on each of {threads} threads")
    problems.check(t.counted == {COUNTED: 2 * threads * n},
                   f"counted calls {t.counted}, want exactly {{{COUNTED!r}: {2 * threads * n}}}")
    by_tid = {tid: calls for (tid, name), calls in t.counted_by_tid.items() if name == COUNTED}
    problems.check(sorted(by_tid.values()) == [2 * n] * threads,
                   f"counted calls per thread {by_tid}, want {2 * n} on each of {threads} threads")

    opened, closed = ranges_from_notes(t)
    nranges = {"repeat": 2, "stop": 1, "repeat:1": 1, "none": 1}[a.end]
    problems.check(sorted(opened) == list(range(1, nranges + 1)), f"NOTEs of opened ranges {opened}, want {nranges}")
    problems.check(sorted(closed) == list(range(1, nranges + 1)), f"NOTEs of closed ranges {closed}, want {nranges}")
    problems.check((closed.get(1, (0, 0))[1] is None) == (a.end == "none"),
                   "with --capture-range-end none the range is still open at the end, else it is closed")
    spans = [(opened[r], closed[r][1]) for r in sorted(opened) if r in closed and closed[r][0] == opened[r]]
    problems.check(len(spans) == nranges, f"the closing NOTEs repeat the opening clocks: {opened} {closed}")
    outside = [c for c in t.calls
               if not any(lo <= c.entry and (hi is None or c.exit <= hi) for lo, hi in spans)]
    problems.check(not outside, f"{len(outside)} recorded calls outside the noted ranges {spans}: {outside[:3]}")
    text = report(a.cuhook, trace, "text", os.path.join(os.path.dirname(trace), "report.txt"))
    problems.check("note    capture range cudaProfilerApi: calls are recorded" in text and
                   "note    capture range 1 opened at" in text,
                   f"cuhook report does not show the capture range's NOTEs:\n{tail(text)}")
    check_trace_health(report_json(a.cuhook, trace, os.path.dirname(trace)), problems)


def range_options(a):
    opts = ["--capture-range", "cudaProfilerApi"] + (["--funcs", a.funcs] if a.funcs else [])
    if a.end != "repeat":  # repeat is the default: left out once, to check that
        opts += ["--capture-range-end", a.end]
    return opts


def mode_run(a, work, problems):
    trace = os.path.join(work, "trace.bin")
    p = run([a.cuhook, "run", "--agent", a.agent, "-o", trace] + range_options(a) + ["--", a.target, a.lib],
            env=clean_env(), timeout=120, what="cuhook run profiler_ranges")
    check_ranges(a, trace, target_output(p.stdout), problems)


def mode_env(a, work, problems):
    trace = os.path.join(work, "trace.bin")
    env = clean_env({"LD_PRELOAD": a.agent, "CUHOOK_OUTPUT": trace, "CUHOOK_CAPTURE_RANGE": "cudaProfilerApi",
                     "CUHOOK_CAPTURE_RANGE_END": "stop" if a.end == "repeat:1" else a.end})
    if a.end == "repeat:1":
        env["CUHOOK_CAPTURE_RANGE_END"], env["CUHOOK_CAPTURE_RANGES"] = "repeat", "1"
    p = run([a.target, a.lib], env=env, timeout=120, what="profiler_ranges (agent preloaded)")
    check_ranges(a, trace, target_output(p.stdout), problems)


def mode_attach(a, work, problems):
    trace = os.path.join(work, "trace.bin")
    target = subprocess.Popen([a.target, "--wait", a.lib], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=clean_env())
    cuhook = None
    try:
        lines = []
        for line in target.stdout:
            lines.append(line)
            if line.strip() == "ready":
                break
        cuhook = subprocess.Popen([a.cuhook, "attach", "--agent", a.agent, "-o", trace] + range_options(a) +
                                  [str(target.pid)], stderr=subprocess.PIPE, text=True, env=clean_env())
        for line in cuhook.stderr:
            if line.startswith("cuhook attach: tracing process"):
                break
        else:
            raise Fatal(f"cuhook attach ended before tracing (exit {cuhook.wait()})")
        target.stdin.write("go\n")
        target.stdin.flush()
        for line in target.stdout:
            lines.append(line)
            if line.strip() == "done":
                break
        cuhook.send_signal(signal.SIGINT)
        err = cuhook.stderr.read()
        problems.check(cuhook.wait(timeout=60) == 0, f"cuhook attach exited {cuhook.returncode}: {tail(err)}")
        rest, _ = target.communicate("quit\n", timeout=60)
        problems.check(target.returncode == 0, f"profiler_ranges exited {target.returncode}")
    finally:
        for proc in (cuhook, target):
            if proc and proc.poll() is None:
                proc.kill()
                proc.wait()
    check_ranges(a, trace, target_output("".join(lines) + rest), problems)


def mode_fork(a, work, problems):
    trace = os.path.join(work, "trace.bin")
    p = run([a.cuhook, "run", "--agent", a.agent, "--follow", "-o", trace] + range_options(a) +
            ["--", a.target, "--fork", a.lib], env=clean_env(), timeout=120, what="cuhook run --follow profiler_ranges")
    out = target_output(p.stdout)
    problems.check(not out["bad"], f"the target saw wrong results: {out['bad'][:3]}")
    pids = dict(line.split() for line in p.stdout.splitlines() if line.split()[:1] in (["pid"], ["child"]))
    ph = out["phases"]
    for who, phases in (("pid", ("range1", "range2")), ("child", ("between",))):
        path = os.path.join(work, f"trace.{pids.get(who)}.bin")
        if not problems.check(os.path.exists(path), f"no trace of the {who} ({path})"):
            continue
        t = tracefile.read_trace(path)
        n = sum(ph[x] for x in phases)
        want = {name: n for name in RECORDED}
        problems.check(t.has_end, f"{who}: no END block")
        problems.check(t.entries == want, f"{who}: recorded {t.entries}, want exactly {want} ({', '.join(phases)})")
        problems.check(len(t.calls) == 3 * n, f"{who}: {len(t.calls)} complete calls, want {3 * n}")
        problems.check(t.counted == {COUNTED: 2 * n}, f"{who}: counted {t.counted}, want {{{COUNTED!r}: {2 * n}}}")
        opened, closed = ranges_from_notes(t)
        inherited = "fork child: the parent's capture range goes on here (recording at the fork)"
        problems.check((inherited in [x for _, x in t.notes]) == (who == "child"),
                       f"{who}: the NOTE of an inherited range only in the child: {t.notes}")
        problems.check(sorted(opened) == ([] if who == "child" else [1]) and sorted(closed) == [1],
                       f"{who}: range NOTEs opened {opened} closed {closed}")
        if 1 in closed and closed[1][1] is not None:
            lo, hi = closed[1]
            problems.check(all(lo <= c.entry and c.exit <= hi for c in t.calls),
                           f"{who}: a recorded call outside the noted range [{lo}, {hi}]")
        check_trace_health(report_json(a.cuhook, path, work), problems)


def mode_window(a, work, problems):
    delay, duration, margin, seconds = 1.0, 2.0, 0.7, 4.5
    trace = os.path.join(work, "trace.bin")
    p = run([a.cuhook, "run", "--agent", a.agent, "-o", trace, "--opt", "clock=monotonic", "--delay", str(delay),
             "--duration", str(duration), "--", a.timed, a.lib, str(seconds), "10"],
            env=clean_env(), timeout=120, what="cuhook run timed_calls")
    out = target_output(p.stdout)
    problems.check(not out["bad"], f"the target saw wrong results: {out['bad'][:3]}")
    rounds = out["calls"]
    t = tracefile.read_trace(trace)
    start = t.header.start_monotonic_ns  # the agent's start, before main
    problems.check(t.clock_source == CLOCK_MONOTONIC, "clock=monotonic: the events' clock is CLOCK_MONOTONIC")
    problems.check(t.has_end, "the trace was not closed (END) at the end of the window")
    problems.check(rounds and rounds[-1][1] - start >= (seconds - 0.5) * 1e9,
                   "the program ran on to its end after the window")
    recorded = set()
    for c in t.calls:
        inside = [i for i, (b, e) in enumerate(rounds) if b <= c.entry and c.exit <= e]
        if problems.check(len(inside) == 1, f"recorded call {c} lies in {len(inside)} of the target's rounds"):
            recorded.add(inside[0])
    problems.check(set(t.entries) == {"cuCtxSynchronize"} and t.entries["cuCtxSynchronize"] == len(t.calls),
                   f"recorded: {t.entries}, complete calls {len(t.calls)}")
    w0, w1 = start + delay * 1e9, start + (delay + duration) * 1e9
    early = [i for i in recorded if rounds[i][1] < w0]
    problems.check(not early, f"rounds {early[:5]} ended before the delay was over, and were recorded")
    missed = [i for i, (b, e) in enumerate(rounds) if b > w0 + margin * 1e9 and e < w1 and i not in recorded]
    problems.check(not missed, f"rounds {missed[:5]} well inside the window were not recorded")
    late = [i for i in recorded if rounds[i][0] > w1 + margin * 1e9]
    problems.check(not late, f"rounds {late[:5]} well after the window were recorded")
    problems.check(recorded and max(recorded) - min(recorded) + 1 == len(recorded),
                   f"the recorded rounds are not one run: {sorted(recorded)[:3]}..{sorted(recorded)[-3:]}")
    counted = t.counted.get("cuCtxGetDevice", 0)
    problems.check(abs(counted - len(recorded)) <= 1,
                   f"{counted} counted cuCtxGetDevice calls for {len(recorded)} recorded rounds (each round "
                   "calls both; the edges may split one round each)")
    windows = [WINDOW.match(text) for _, text in t.notes]
    windows = [(int(m[1]), int(m[2])) for m in windows if m]
    if problems.check(len(windows) == 1, f"one NOTE of the window's end, not {len(windows)}: {t.notes}"):
        lo, hi = windows[0]
        problems.check(lo >= w0 and hi - lo >= duration * 1e9,
                       f"the window noted [{lo}, {hi}] opens before the delay or is shorter than the duration")
        # a call that began in the window is recorded whole, its end perhaps after the close
        problems.check(all(lo <= c.entry <= hi for c in t.calls), "a recorded call began outside the window")
    check_trace_health(report_json(a.cuhook, trace, work), problems)


def mode_window_edge(a, work, problems):
    # One call spans the window's opening (0.5 s to 1.3 s; the window opens at 1 s) and one its
    # close (1.6 s to 2.5 s; it closes at 2 s): the first is not recorded at all (no EXIT without
    # its ENTRY), the second whole (its EXIT after the close: no ENTRY without its EXIT).
    trace = os.path.join(work, "trace.bin")
    p = run([a.cuhook, "run", "--agent", a.agent, "-o", trace, "--opt", "clock=monotonic", "--delay", "1",
             "--duration", "1", "--", a.timed, a.lib, "3", "10", "0.5", "800", "1.6", "900"],
            env=clean_env(), timeout=120, what="cuhook run timed_calls")
    out = target_output(p.stdout)
    problems.check(not out["bad"], f"the target saw wrong results: {out['bad'][:3]}")
    sleeps = out.get("sleeps", [])
    if not problems.check(len(sleeps) == 2, f"timed_calls made {len(sleeps)} cuFakeSleep calls, not 2"):
        return
    t = tracefile.read_trace(trace)
    windows = [WINDOW.match(text) for _, text in t.notes]
    windows = [(int(m[1]), int(m[2])) for m in windows if m]
    if not problems.check(len(windows) == 1, f"one NOTE of the window's end, not {len(windows)}: {t.notes}"):
        return
    lo, hi = windows[0]
    (a0, a1), (b0, b1) = sleeps
    problems.check(a0 < lo < a1 and b0 < hi < b1,
                   f"the sleeps [{a0}, {a1}] and [{b0}, {b1}] do not span the window's edges {lo} and {hi} (a machine "
                   "so loaded that the writer closed the window 0.5 s late?)")
    slept = [c for c in t.calls if c.name == "cuFakeSleep"]
    if problems.check(len(slept) == 1 and t.entries.get("cuFakeSleep") == 1,
                      f"the sleep that spans the close recorded once, whole, and the other not: {len(slept)} complete, "
                      f"{t.entries.get('cuFakeSleep')} entries"):
        c = slept[0]
        problems.check(b0 <= c.entry and c.exit <= b1 and c.exit > hi,
                       f"the recorded sleep [{c.entry}, {c.exit}] is not the one spanning the close at {hi}")
    check_trace_health(report_json(a.cuhook, trace, work), problems)


def mode_refusals(a, work, problems):
    def refused(args, message, env=None):
        p = subprocess.run([a.cuhook, "run", "--agent", a.agent, "-o", os.path.join(work, "no.bin")] + args +
                           ["--", a.target, a.lib], capture_output=True, text=True, env=env or clean_env(), timeout=60)
        problems.check(p.returncode == 2 and message in p.stderr and not p.stdout,
                       f"cuhook run {' '.join(args)}: exit {p.returncode}, program not run, saying '{message}'; "
                       f"got {tail(p.stderr)!r}")
    refused(["--capture-range", "cudaProfilerApi", "--delay", "1"],
            "--capture-range cannot be combined with --delay or --duration")
    refused(["--capture-range", "cudaProfilerApi", "--duration", "1"],
            "--capture-range cannot be combined with --delay or --duration")
    refused(["--capture-range", "nvtx"], "--capture-range must be one of none, cudaProfilerApi, not 'nvtx'")
    refused(["--capture-range", "cudaProfilerApi", "--capture-range-end", "repeat:0"],
            "--capture-range-end wants repeat, repeat:N (N from 1), stop or none, not 'repeat:0'")
    refused(["--capture-range", "cudaProfilerApi", "--capture-range-end", "stop-shutdown"],
            "--capture-range-end must be one of repeat, stop, none, not 'stop-shutdown'")
    refused(["--capture-range-end", "stop"], "--capture-range-end needs --capture-range cudaProfilerApi")
    refused(["--delay", "-1"], "--delay wants seconds from 0 to")
    refused(["--duration", "0"], "--duration wants seconds from 0.001 to")
    # The agent's own check, for options that do not come through cuhook's: nothing traced.
    trace = os.path.join(work, "env.bin")
    env = clean_env({"LD_PRELOAD": a.agent, "CUHOOK_OUTPUT": trace, "CUHOOK_CAPTURE_RANGE": "cudaProfilerApi",
                     "CUHOOK_DELAY_MS": "100"})
    p = subprocess.run([a.target, a.lib], capture_output=True, text=True, env=env, timeout=60)
    problems.check(p.returncode == 0 and "capture_range= cannot be combined with delay_ms= or duration_ms=" in p.stderr
                   and "not tracing" in p.stderr and not os.path.exists(trace),
                   f"CUHOOK_CAPTURE_RANGE with CUHOOK_DELAY_MS: the program runs untraced, the agent says why; "
                   f"got exit {p.returncode}, {tail(p.stderr)!r}, trace {os.path.exists(trace)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", required=True, help="mode_MODE below (tests/engine/meson.build lists them)")
    ap.add_argument("--end", default="repeat", choices=sorted(KEPT))
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--target", required=True, help="tests/targets/profiler_ranges")
    ap.add_argument("--timed", required=True, help="tests/targets/timed_calls")
    ap.add_argument("--funcs", help="--funcs GLOBS (the range's edges are hooked all the same)")
    ap.add_argument("--workdir")
    a = ap.parse_args()
    need_files([(a.cuhook, "cuhook"), (a.agent, "agent"), (a.lib, "stand-in libcuda"),
                (a.target, "profiler_ranges"), (a.timed, "timed_calls")])
    check_mode = case_function(globals(), "mode_", a.mode)
    work = work_directory(a.workdir, "capture-")
    problems = Problems()
    check_mode(a, work, problems)
    problems.exit()


if __name__ == "__main__":
    run_main(main)
