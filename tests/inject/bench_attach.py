#!/usr/bin/env python3
"""Attach/detach latencies of `cuhook attach` with the real agent, on driver_user driving the
stand-in libcuda (libcuda loaded and busy, as in the goal: attach to first event <= 100 ms,
threads stopped <= 20 ms, detach <= 50 ms). A measurement, not a test: prints a table.

  bench_attach.py --cuhook BUILD/src/cli/cuhook --agent BUILD/src/agent/libcuhook.so \
      --driver-user BUILD/tests/targets/driver_user --fakecuda BUILD/tests/fakecuda/libcuda.so.1 \
      [--threads 4] [--runs 10] [--fresh]

--fresh: a new target for every run, so that every attach loads the agent (dlopen + prepare while
the target's threads run, then start with them stopped); without it, runs after the first reuse
the agent loaded by the first.

attach->first event: from just before cuhook is started to the first ENTRY record of the trace
(CLOCK_MONOTONIC; tsc converted through the trace's CLOCK blocks). stopped: how long the target's
threads were held at attach and at detach (cuhook -v). detach: from the end of --duration to
cuhook's exit, i.e. stop + unpatch + flush + detach, wall clock."""
import argparse
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time

from cuhooktest import tracefile
from cuhooktest.traceformat import CLOCK_MONOTONIC


STALE = [0]


PREFIX = 4 << 20


def first_event_monotonic(path):
    """The first ENTRY's time, CLOCK_MONOTONIC ns; None without one. The records, of any version,
    are decoded by tests/lib/cuhooktest/tracefile.py, from the file's first PREFIX bytes (every
    thread's first EVENTS block and a CLOCK block lie there: decoding a whole window of a busy
    target in Python took minutes), or the whole file when those hold no answer."""
    with open(path, "rb") as f:
        head = f.read(PREFIX)
    if len(head) == PREFIX:
        with tempfile.NamedTemporaryFile(suffix=".bin") as cut:
            cut.write(head)
            cut.flush()
            first = first_event_in(cut.name)
        if first is not None:
            return first
    return first_event_in(path)


def first_event_in(path):
    try:
        t = tracefile.read_trace(path, growing=True, records=True)
    except (tracefile.TraceError, struct.error):
        return None
    clock_source = t.header.clock_source
    start_mono, start_tsc = t.header.start_monotonic_ns, t.header.start_tsc
    first = None
    for _, _, r in t.records:
        if r.kind == tracefile.REC_ENTRY:
            if clock_source == CLOCK_MONOTONIC or r.ts >= start_tsc:
                first = r.ts if first is None else min(first, r.ts)
            else:
                STALE[0] += 1  # older than the trace itself: left over from a previous one
    if first is None:
        return None
    if clock_source == CLOCK_MONOTONIC:  # timestamps are CLOCK_MONOTONIC ns already
        return first
    clocks = [(start_tsc, start_mono)] + t.clocks
    (t0, m0), (t1, m1) = clocks[0], clocks[-1]
    if t1 == t0:
        return None
    return m0 + (first - t0) * (m1 - m0) / (t1 - t0)


def main():
    ap = argparse.ArgumentParser()
    for a in ("--cuhook", "--agent", "--driver-user", "--fakecuda"):
        ap.add_argument(a, required=True)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--fresh", action="store_true")
    a = ap.parse_args()
    rows = []

    def new_target():
        t = subprocess.Popen([a.driver_user, "--threads", str(a.threads), "--iters", "100000000",
                              a.fakecuda], stdout=subprocess.DEVNULL)
        time.sleep(0.5)
        return t

    with tempfile.TemporaryDirectory() as tmp:
        target = new_target()
        try:
            for i in range(a.runs):
                if a.fresh and i > 0:
                    target.kill()
                    target.wait()
                    target = new_target()
                out = os.path.join(tmp, "t%d.bin" % i)
                t0 = time.monotonic_ns()
                p = subprocess.Popen([a.cuhook, "attach", "-v", "--agent", a.agent, "-o", out,
                                      "--duration", "0.2", str(target.pid)], stderr=subprocess.PIPE, text=True)
                err = p.communicate()[1]
                t_end = time.monotonic_ns()
                if p.returncode != 0:
                    print(err, file=sys.stderr)
                    return 1
                att = re.search(r"attach: (\d+) threads stopped for ([\d.]+) ms", err)
                det = re.search(r"detach: \d+ threads stopped for ([\d.]+) ms", err)
                fe = first_event_monotonic(out)
                beside = re.search(r"while they ran: dlopen ([\d.]+), prepare ([\d.]+)", err)
                rows.append({
                    "dlopen": float(beside.group(1)) if beside else float("nan"),
                    "prepare": float(beside.group(2)) if beside else float("nan"),
                    "first": (fe - t0) / 1e6 if fe else float("nan"),
                    "stop_a": float(att.group(2)),
                    "stop_d": float(det.group(1)),
                    # wall time after the 200 ms window: stop, flush, detach, exit
                    "detach": (t_end - t0) / 1e6 - 200 - ((fe - t0) / 1e6 if fe else 0),
                    "reused": "reused" in err,
                })
        finally:
            target.kill()
            target.wait()
    print("run  attach->first event  stopped(attach)  stopped(detach)  detach(wall)  agent   "
          "dlopen+prepare beside")
    for i, r in enumerate(rows):
        print("%3d  %17.2f ms  %12.2f ms  %12.2f ms  %9.2f ms  %-6s  %.2f + %.2f ms" % (
            i, r["first"], r["stop_a"], r["stop_d"], r["detach"], "reused" if r["reused"] else "dlopen",
            r["dlopen"], r["prepare"]))
    if STALE[0]:
        print("note: %d ENTRY records older than their trace's start were ignored" % STALE[0])
    for k, name in (("first", "attach->first event"), ("stop_a", "stopped at attach"),
                    ("dlopen", "dlopen (beside)"), ("prepare", "prepare (beside)"),
                    ("stop_d", "stopped at detach"), ("detach", "detach (wall)")):
        v = [r[k] for r in rows if r[k] == r[k]]
        if v:
            print("%-20s median %.2f ms, max %.2f ms" % (name, statistics.median(v), max(v)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
