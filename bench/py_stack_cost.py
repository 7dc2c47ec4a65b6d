#!/usr/bin/env python3
"""The cost of a stacked call made from Python (issue 17: native + Python frames), side by side
in one run: the same ctypes call of cuCtxGetCurrent, from DEPTH nested Python functions,
untraced, under `cuhook run --no-stacks` (recorded, no stack) and under
`cuhook run --stacks cuCtxGetCurrent` (native and Python frames walked at every call).

  python3 bench/py_stack_cost.py --cuhook BUILD/src/cli/cuhook --lib LIBCUDA [--depth 20]
                                 [--rounds 3] [--calls 200000]

LIBCUDA: the stand-in (build/tests/fakecuda/libcuda.so) here, libcuda.so.1 on the GPU machine.
Each process times batches of 100 calls (perf_counter_ns around each batch) and gives the
median batch's ns per call; each side's figure is the median over rounds, the sides alternating
within each round. A ctypes call costs a few hundred ns of its own: the differences between the
sides are what cuhook adds."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

WORKER = r'''
import ctypes, sys, time, statistics
lib = ctypes.CDLL(sys.argv[1])
lib.cuInit(0)
get = lib.cuCtxGetCurrent
ctx = ctypes.c_void_p()
ref = ctypes.byref(ctx)
calls, depth = int(sys.argv[2]), int(sys.argv[3])
def timed():
    per = []
    for _ in range(calls // 100):
        t = time.perf_counter_ns()
        for _ in range(100):
            get(ref)
        per.append((time.perf_counter_ns() - t) / 100)
    return statistics.median(per)
def nest(n):
    return timed() if n == 0 else nest(n - 1)
print("per_call_ns %.1f" % nest(depth))
'''

ap = argparse.ArgumentParser()
ap.add_argument("--cuhook", required=True)
ap.add_argument("--lib", required=True)
ap.add_argument("--depth", type=int, default=20)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--calls", type=int, default=200000)
a = ap.parse_args()
work = tempfile.mkdtemp(prefix="cuhook-pystack-")
script = os.path.join(work, "worker.py")
with open(script, "w") as f:
    f.write(WORKER)
cmd = [sys.executable, script, a.lib, str(a.calls), str(a.depth)]
trace = os.path.join(work, "t.bin")
sides = {
    "untraced": cmd,
    "recorded, no stack": [a.cuhook, "run", "--no-stacks", "--force", "-o", trace, "--"] + cmd,
    "stacked": [a.cuhook, "run", "--stacks", "cuCtxGetCurrent", "--force", "-o", trace, "--"] + cmd,
}
res = {k: [] for k in sides}
names = list(sides)
try:
    for r in range(a.rounds):
        for k in names[r % 3:] + names[:r % 3]:
            p = subprocess.run(sides[k], capture_output=True, text=True)
            line = [x for x in p.stdout.splitlines() if x.startswith("per_call_ns ")]
            if p.returncode or not line:
                sys.exit("side %r failed (%d): %s %s" % (k, p.returncode, p.stdout[-1000:], p.stderr[-1000:]))
            res[k].append(float(line[0].split()[1]))
finally:
    for name in os.listdir(work):
        os.unlink(os.path.join(work, name))
    os.rmdir(work)
m = {k: statistics.median(v) for k, v in res.items()}
print("a ctypes call of cuCtxGetCurrent from %d nested Python functions, ns per call (median of %d rounds):"
      % (a.depth, a.rounds))
for k in names:
    print("  %-20s %9.1f   rounds: %s" % (k, m[k], " ".join("%.1f" % x for x in res[k])))
print("the stack (native + Python) adds %.0f ns per call; recording adds %.0f ns"
      % (m["stacked"] - m["recorded, no stack"], m["recorded, no stack"] - m["untraced"]))
print("stacks default rule (issue 17): a stacked call <= 2 us -> %s"
      % ("met" if m["stacked"] - m["untraced"] <= 2000 else "NOT met"))
