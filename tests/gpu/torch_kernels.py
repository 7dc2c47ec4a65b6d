#!/usr/bin/env python3
"""Ground truth for cuhook's GPU records on PyTorch: run a workload script under torch.profiler
(activities=[CUDA] only: kineto's CUPTI activity records, no CPU op tracing) and write what the
GPU ran, per kernel name, copy kind and memset, as JSON (issue 16, tests/gpu/gpu_proof.sh).

  python3 torch_kernels.py --out FILE.json [--cpu] -- SCRIPT.py [ARGS...]

The script runs in this process (runpy), as __main__, with sys.argv = [SCRIPT, ARGS...], inside
one profiler context. --cpu adds ProfilerActivity.CPU (torch.profiler's usual setting; for the
cost comparison). Output: {"kernels": {name: count}, "memcpy": {kind: count}, "memset": count,
"wall_s": seconds}. Kernel names are kineto's, demangled."""
import argparse
import json
import runpy
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--cpu", action="store_true")
ap.add_argument("script")
ap.add_argument("args", nargs=argparse.REMAINDER)
a = ap.parse_args()
args = a.args[1:] if a.args[:1] == ["--"] else a.args

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

acts = [ProfilerActivity.CUDA] + ([ProfilerActivity.CPU] if a.cpu else [])
sys.argv = [a.script] + args
t = time.time()
with profile(activities=acts) as prof:
    runpy.run_path(a.script, run_name="__main__")
    torch.cuda.synchronize()
wall = time.time() - t

kernels, memcpy, memset = {}, {}, 0
for e in prof.events():
    if e.device_type.name != "CUDA":
        continue
    n = e.name
    if n.startswith("Memcpy "):
        k = n.split()[1]  # HtoD, DtoH, DtoD, ...
        memcpy[k] = memcpy.get(k, 0) + 1
    elif n.startswith("Memset"):
        memset += 1
    else:
        kernels[n] = kernels.get(n, 0) + 1
with open(a.out, "w") as f:
    json.dump({"kernels": kernels, "memcpy": memcpy, "memset": memset, "wall_s": wall}, f, indent=1)
print("torch_kernels: %d kernels (%d names), %d copies, %d memsets -> %s" %
      (sum(kernels.values()), len(kernels), sum(memcpy.values()), memset, a.out), file=sys.stderr)
