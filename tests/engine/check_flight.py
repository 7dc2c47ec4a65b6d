#!/usr/bin/env python3
"""The flight recorder (cuhook run --flight-recorder, --trigger, cuhook dump) on the stand-in
libcuda, driven through tests/targets/flight_user.c: THREADS workers call cuFakeStep with their
own sequence numbers, round their rings many times, log the last number each called and wait;
then a trigger (mode error: a call that returns an error; slow: a call longer than the
threshold; dump: `cuhook dump PID`; exit: none until the program's exit); then PHASE2 more calls
each, and the exit. Checked, exactly:

  - the trace file is 0 bytes while the workers wait (after their ITERS calls, before the
    trigger), and still as long as the first dump left it once phase 2 is over (nothing is
    written between dumps);
  - the first dump: each worker's LAST recorded ENTRY carries exactly the number it logged
    before the trigger, and its cuFakeStep calls in the dump are that number's immediate
    predecessors, each once (a contiguous window), holding at least half the ring; the main
    thread's calls are exactly cuInit and the trigger's call (none for dump and exit); one NOTE
    says why the dump was made;
  - mode error: `cuhook dump PID` then appends a second dump (the file before it unchanged) that
    holds exactly each worker's phase 2, right after the first dump's cut;
  - the end: the program's exit writes a last dump and END; over the whole file each worker's
    numbers form one contiguous run ending with the last one it logged, each exactly once (no
    call twice across dumps, none missing after the first cut); every recorded call is whole
    (`cuhook report --strict`: no EXIT without its ENTRY, no open call, nothing dropped or
    damaged), and END's event count is the file's;
  - `cuhook dump` says where the dump went: the trace file's path, exactly."""

import argparse
import json
import os
import subprocess
import sys
import time

from cuhooktest import (Fatal, Problems, check_trace_health, need_files, report_json, run,
                        run_main, tail, work_directory)
from cuhooktest import tracefile

STEP_FAIL = 0xFFFFFFFF
ERROR_ILLEGAL_ADDRESS = 700
QUIET_S = 0.25  # five writer rounds (flush_ms 50): time for a write that must not happen


def arg_of(index, k):
    return (index + 1) << 24 | k


class Target:
    """cuhook run --flight-recorder ... flight_user, driven line by line."""

    def __init__(self, a, trace):
        self.a = a
        trig = {"error": ["--trigger", "error"], "slow": ["--trigger", f"slow=cuFakeSleep:{a.slow_ms}"]}
        cmd = [a.cuhook, "run", "--agent", a.agent, "-o", trace, f"--flight-recorder={a.size_k}K",
               *trig.get(a.mode, []), "--", a.target, a.lib, a.mode, str(a.threads), str(a.iters),
               str(a.phase2), str(3 * a.slow_ms)]
        self.cmd = " ".join(cmd)
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        self.lines = []

    def until(self, word):
        """The target's lines up to the one that is `word` (without it)."""
        got = []
        while True:
            line = self.p.stdout.readline()
            if not line:
                self.p.kill()
                _, err = self.p.communicate()
                raise Fatal(f"{self.cmd}: ended before '{word}'; printed {got}\n--- stderr\n{tail(err)}")
            line = line.strip()
            self.lines.append(line)
            if line.startswith("bad"):
                raise Fatal(f"flight_user: {line}")
            if line == word:
                return got
            got.append(line)

    def say(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def finish(self):
        try:
            _, err = self.p.communicate("quit\n", timeout=120)
        except subprocess.TimeoutExpired:
            self.p.kill()
            raise Fatal("flight_user did not exit")
        if self.p.returncode != 0:
            raise Fatal(f"{self.cmd} exited with {self.p.returncode}\n--- stderr\n{tail(err)}")


def logged(lines, key):
    """{tid: (worker index, number)} from 'KEY I TID LAST' lines."""
    out = {}
    for line in lines:
        w = line.split()
        if w[0] == key:
            out[int(w[2])] = (int(w[1]), int(w[3]))
    return out


def cuhook_dump(cuhook, pid, n, trace, problems):
    """`cuhook dump PID` writes dump n, and says it went into the trace file."""
    r = subprocess.run([cuhook, "dump", str(pid)], capture_output=True, text=True, timeout=60)
    want = f"cuhook dump: process {pid}: dump {n} written to {trace}"
    problems.check(r.returncode == 0 and r.stdout.strip() == want,
                   f"cuhook dump: exit {r.returncode}, printed {r.stdout.strip()!r} (not {want!r}); {r.stderr}")


def snapshot(path, data, name):
    """The bytes of the trace as they were, in a file of their own; its path."""
    p = os.path.join(os.path.dirname(path), name)
    with open(p, "wb") as f:
        f.write(data)
    return p


def by_thread(t):
    """{tid: [Call]} every ENTRY read (closed calls and those still open), in entry order."""
    out = {}
    for c in t.calls + [c for calls in t.open_calls.values() for c in calls]:
        out.setdefault(c.tid, []).append(c)
    for calls in out.values():
        calls.sort(key=lambda c: c.entry)
    return out


def steps(calls):
    return [c.args[0] & 0xFFFFFFFF for c in calls if c.name == "cuFakeStep"]


def dump_notes(t):
    return [text for _, text in t.notes if text.startswith("flight recorder: dump")]


def whole_calls(cuhook, trace, workdir, problems, what):
    """No EXIT without its ENTRY, nothing damaged, in a dump (no END yet: not --strict)."""
    out = os.path.join(workdir, "snap.json")
    run([cuhook, "report", "--format", "json", "--force", "-o", out, trace], what="cuhook report")
    with open(out) as f:
        rep = json.load(f)
    for key in ("orphan_exits", "corrupt_records", "unknown_function_ids", "block_gaps", "dropped"):
        problems.check(rep.get(key, 0) == 0, f"{what}: report {key} = {rep.get(key)}")


def check_window(a, t, first, problems, what):
    """The first dump: each worker's last ENTRY is its logged number, its window contiguous
    and at least half the ring; the main thread's calls exactly cuInit and the trigger's."""
    threads = by_thread(t)
    nregs, nstack = next((t.func_args[f] for f, n in t.funcs.items() if n == "cuFakeStep"), (6, 6))
    call_bytes = 8 + 8 * (nregs + nstack) + 8  # ENTRY5 with its arguments, EXIT5_ZERO
    for tid, (index, last) in sorted(first.items()):
        calls = threads.get(tid, [])
        if not problems.check(calls, f"{what}: worker {index} (tid {tid}) has no call in the dump"):
            continue
        end = calls[-1]
        problems.check(end.name == "cuFakeStep" and end.args[0] & 0xFFFFFFFF == last,
                       f"{what}: worker {index}'s last ENTRY is {end.name}({end.args[0] & 0xFFFFFFFF:#x}), "
                       f"it logged cuFakeStep({last:#x})")
        seq = steps(calls)
        problems.check(seq == list(range(last - len(seq) + 1, last + 1)),
                       f"{what}: worker {index}'s {len(seq)} calls are not the run of numbers up to {last:#x}")
        problems.check(len(seq) * call_bytes >= a.size_k * 1024 // 2,
                       f"{what}: worker {index}'s window holds {len(seq)} calls of {call_bytes} bytes, "
                       f"less than half the {a.size_k}K ring")
    main = [(c.name, c.args[0] & 0xFFFFFFFF if c.args else None) for c in threads.get(a.main_tid, [])]
    want = [("cuInit", 0)] + {"error": [("cuFakeStep", STEP_FAIL)], "slow": [("cuFakeSleep", 3 * a.slow_ms)]}.get(a.mode, [])
    problems.check(main == want, f"{what}: the main thread's calls are {main}, not {want}")


def check_continues(t, first, a, problems, what):
    """Over everything up to this point, each worker's numbers are one contiguous run from its
    window's start, each once, up to its phase 2's last."""
    threads = by_thread(t)
    for tid, (index, _) in sorted(first.items()):
        seq = steps(threads.get(tid, []))
        last = arg_of(index, a.iters + a.phase2)
        problems.check(seq and seq == list(range(seq[0], last + 1)),
                       f"{what}: worker {index}'s numbers are not one run up to {last:#x} (each once): "
                       f"{len(seq)} calls, {seq[:2]}...{seq[-2:]}")


def check(a):
    need_files([(a.cuhook, "cuhook"), (a.agent, "agent"), (a.target, "flight_user"), (a.lib, "stand-in libcuda")])
    workdir = work_directory(a.workdir, "cuhook-flight-")
    trace = os.path.join(workdir, "trace.bin")
    problems = Problems()
    t = Target(a, trace)
    try:
        first = logged(t.until("ready"), "thread")
        a.main_tid = int(next(line.split()[1] for line in t.lines if line.startswith("main ")))
        pid = a.main_tid
        problems.check(len(first) == a.threads, f"{len(first)} workers logged, {a.threads} expected")
        time.sleep(QUIET_S)
        if not problems.check(os.path.exists(trace) and os.path.getsize(trace) == 0,
                              f"the trace file is not empty before any dump: "
                              f"{os.path.getsize(trace) if os.path.exists(trace) else 'absent'}"):
            raise Fatal("the flight recorder wrote before a dump")

        if a.mode == "dump":
            cuhook_dump(a.cuhook, pid, 1, trace, problems)
        t.say("go")
        if a.mode in ("error", "slow"):
            ret = t.until("dumped 1")
            want = f"trigger {ERROR_ILLEGAL_ADDRESS if a.mode == 'error' else 0}"
            problems.check(ret == [want], f"the trigger's call printed {ret}, not {want!r}")
        snap1 = open(trace, "rb").read()
        second = logged(t.until("ready2"), "thread2")
        time.sleep(QUIET_S)
        problems.check(os.path.getsize(trace) == len(snap1),
                       f"the trace grew from {len(snap1)} to {os.path.getsize(trace)} bytes between dumps")
        snap2 = None
        if a.mode == "error":
            cuhook_dump(a.cuhook, pid, 2, trace, problems)
            snap2 = open(trace, "rb").read()
        t.finish()
    finally:
        if t.p.poll() is None:
            t.p.kill()
            t.p.wait()

    reasons = {"error": "cuFakeStep", "slow": "cuFakeSleep", "dump": "asked for (cuhook dump)"}
    if a.mode != "exit":
        t1 = tracefile.read_trace(snapshot(trace, snap1, "dump1.bin"))
        notes = dump_notes(t1)
        problems.check(len(notes) == 1 and notes[0].startswith("flight recorder: dump 1: ") and
                       reasons[a.mode] in notes[0], f"dump 1's notes: {notes}")
        check_window(a, t1, first, problems, "dump 1")
        whole_calls(a.cuhook, snapshot(trace, snap1, "dump1.bin"), workdir, problems, "dump 1")
    if snap2 is not None:
        problems.check(snap2[:len(snap1)] == snap1, "the second dump changed what the first wrote")
        t1, t2 = tracefile.read_trace(os.path.join(workdir, "dump1.bin")), tracefile.read_trace(
            snapshot(trace, snap2, "dump2.bin"))
        notes = dump_notes(t2)
        problems.check(len(notes) == 2 and notes[1].startswith("flight recorder: dump 2: asked for (cuhook dump)"),
                       f"dump 2's notes: {notes}")
        before, after = by_thread(t1), by_thread(t2)
        for tid, (index, _) in sorted(first.items()):
            new = steps(after.get(tid, []))[len(steps(before.get(tid, []))):]
            want = [arg_of(index, k) for k in range(a.iters + 1, a.iters + a.phase2 + 1)]
            problems.check(new == want, f"dump 2: worker {index}'s new calls are {len(new)} numbers "
                                        f"{new[:2]}...{new[-2:]}, not its phase 2 ({len(want)})")
        check_continues(t2, first, a, problems, "dump 2")
        whole_calls(a.cuhook, os.path.join(workdir, "dump2.bin"), workdir, problems, "dump 2")

    final = open(trace, "rb").read()
    last_snap = snap2 if snap2 is not None else snap1
    problems.check(final[:len(last_snap)] == last_snap, "the exit's dump changed what the dumps before wrote")
    tf = tracefile.read_trace(trace)
    want_dumps = {"error": 3, "slow": 2, "dump": 2, "exit": 1}[a.mode]
    notes = dump_notes(tf)
    problems.check(len(notes) == want_dumps and notes[-1] == f"flight recorder: dump {want_dumps}: the trace ends",
                   f"the notes of {want_dumps} dumps expected, the last at the end: {notes}")
    problems.check(tf.has_end, "no END block after the exit")
    if a.mode == "exit":
        check_window(a, tf, second, problems, "the exit's dump")
    check_continues(tf, first, a, problems, "the whole file")
    for tid, (index, last) in sorted(second.items()):
        problems.check(last == arg_of(index, a.iters + a.phase2), f"worker {index} logged {last:#x} last")
    problems.check(all(not calls for calls in tf.open_calls.values()), "calls left open at the end")
    entries = sum(tf.entries.values())
    problems.check(tf.end_events == entries + len(tf.calls),
                   f"END counts {tf.end_events} events, the file holds {entries} ENTRY + {len(tf.calls)} EXIT")
    rep = report_json(a.cuhook, trace, workdir)
    check_trace_health(rep, problems)
    print(f"mode {a.mode}: {len(tf.calls)} calls in {want_dumps} dumps, {len(final)} bytes")
    problems.exit()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--mode", choices=["error", "slow", "dump", "exit"], required=True)
    ap.add_argument("--threads", type=int, default=12)
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--phase2", type=int, default=50)
    ap.add_argument("--size-k", type=int, default=64)
    ap.add_argument("--slow-ms", type=int, default=250)
    ap.add_argument("--workdir")
    run_main(lambda: check(ap.parse_args()))


if __name__ == "__main__":
    main()
