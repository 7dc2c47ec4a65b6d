#!/usr/bin/env python3
"""The register probe (tests/targets/reg_probe.c) untraced and traced in every way a call can go:
recorded (the stubs' fast paths, after the thread's first call in C), counted (the count thunk),
with clock=monotonic (every call through the C handlers), and stacked (stacks=: the entry
handler walks the stack with libunwind, which must leave the vector registers as they were). Each run must print "probe ok N";
each traced run's trace must hold the N calls (ENTRY records, or COUNTS), so the probe is known
to have gone through the path it checks.

  check_reg_probe.py --probe reg_probe --lib libcuda.so.1 --agent libcuhook.so [--calls N] [--workdir D]"""
import argparse
import os
import subprocess

from cuhooktest import Fail, run_main, work_directory
from cuhooktest.tracefile import read_trace

FN = "cuFakeRegProbe"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--workdir")
    a = ap.parse_args()
    work = work_directory(a.workdir, "cuhook-regprobe-")
    base = {k: v for k, v in os.environ.items() if not k.startswith("CUHOOK_")}
    runs = [("untraced", None), ("recorded", {}), ("counted", {"CUHOOK_COUNT": FN}),
            ("C handlers (clock=monotonic)", {"CUHOOK_CLOCK": "monotonic"}),
            ("stacked (stacks=, libunwind in the entry handler)", {"CUHOOK_STACKS": FN})]
    failed = 0
    for name, extra in runs:
        cmd = [a.probe]
        env = dict(base)
        trace = os.path.join(work, name.split()[0] + ".bin")
        if extra is not None:
            cmd += ["--agent", a.agent]
            env.update(extra, CUHOOK_OUTPUT=trace)
            if os.path.exists(trace):
                os.unlink(trace)
        p = subprocess.run(cmd + [a.lib, str(a.calls)], env=env, capture_output=True, text=True, timeout=120)
        ok = p.returncode == 0 and p.stdout.strip() == f"probe ok {a.calls}"
        detail = ""
        if ok and extra is not None:
            t = read_trace(trace)
            seen = t.counted.get(FN, 0) if "CUHOOK_COUNT" in extra else t.entries.get(FN, 0)
            stacks = t.stack_records if "CUHOOK_STACKS" in extra else 0
            ok = seen == a.calls and t.has_end and stacks == (a.calls if "CUHOOK_STACKS" in extra else 0)
            detail = f"; trace: {seen} calls of {FN}, {stacks} STACK records" + ("" if t.has_end else ", no END block")
        print(f"{'ok  ' if ok else 'FAIL'} {name}: exit {p.returncode}, {p.stdout.strip() or '-'}{detail}")
        if p.stderr.strip():
            print("     " + p.stderr.strip().replace("\n", "\n     "))
        failed += not ok
    print(f"{len(runs) - failed} of {len(runs)} runs ok")
    if failed:
        raise Fail(f"{failed} of {len(runs)} runs failed (above)")


if __name__ == "__main__":
    run_main(main)
