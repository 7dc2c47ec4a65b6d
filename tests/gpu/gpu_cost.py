#!/usr/bin/env python3
"""What the GPU timeline costs (issue 16): GPT-2 generation tokens/s untraced, under
`cuhook run --gpu`, and under torch.profiler recording the GPU (activities=[CUDA], and
[CPU, CUDA], its usual setting), side by side in one run.

  python3 gpu_cost.py --cuhook BUILD/src/cli/cuhook [--rounds N] [--iters N] [--warm N] [--out DIR]
                     [--sides "untraced,cuhook --gpu,..."]

cuhook's GPU session and torch.profiler both use CUPTI, which serves one user per process, so
each side is its own process; the sides alternate within every round (the order rotates), so
the machine's drift reaches them alike. Each process runs WARM+ITERS generations; the median
tokens/s of the last ITERS is its figure. Prints every round, then per side the median over
rounds and its ratio to untraced, and the checksums (one value expected)."""
import argparse
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GPT2 = os.path.join(HERE, "gpt2_infer.py")
TORCHK = os.path.join(HERE, "torch_kernels.py")

ap = argparse.ArgumentParser()
ap.add_argument("--cuhook", required=True)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--iters", type=int, default=6)
ap.add_argument("--warm", type=int, default=2)
ap.add_argument("--out", default="/tmp")
ap.add_argument("--sides", default="", help="comma-separated side names to run (default: all)")
a = ap.parse_args()
n = str(a.warm + a.iters)
sides = {
    "untraced": [sys.executable, GPT2, "--iters", n],
    "cuhook --gpu": [a.cuhook, "run", "--gpu", "--force", "-o", os.path.join(a.out, "cost-gpu.bin"), "--",
                     sys.executable, GPT2, "--iters", n],
    "cuhook (API only)": [a.cuhook, "run", "--force", "-o", os.path.join(a.out, "cost-api.bin"), "--",
                          sys.executable, GPT2, "--iters", n],
    "cuhook --no-stacks": [a.cuhook, "run", "--no-stacks", "--force", "-o", os.path.join(a.out, "cost-nostk.bin"), "--",
                           sys.executable, GPT2, "--iters", n],
    "cuhook --stacks rare": [a.cuhook, "run", "--stacks", "rare", "--force", "-o", os.path.join(a.out, "cost-rare.bin"),
                             "--", sys.executable, GPT2, "--iters", n],
    "cuhook --stacks launches": [a.cuhook, "run", "--stacks", "cuMemAlloc*,cuLaunchKernel*", "--force", "-o",
                                 os.path.join(a.out, "cost-launch.bin"), "--", sys.executable, GPT2, "--iters", n],
    "torch.profiler CUDA": [sys.executable, TORCHK, "--out", os.path.join(a.out, "cost-tp.json"), GPT2,
                            "--iters", n],
    "torch.profiler CPU+CUDA": [sys.executable, TORCHK, "--cpu", "--out", os.path.join(a.out, "cost-tp2.json"),
                                GPT2, "--iters", n],
}
names = [k for k in sides if (not a.sides and "stacks" not in k) or k in a.sides.split(",")]
res = {k: [] for k in names}
sums = set()
for r in range(a.rounds):
    order = names[r % len(names):] + names[:r % len(names)]
    line = []
    for k in order:
        p = subprocess.run(sides[k], capture_output=True, text=True)
        its = re.findall(r"tokens/s ([0-9.]+) checksum (\w+)", p.stdout)
        if p.returncode or len(its) != a.warm + a.iters:
            print("side %r failed (status %d):\n%s\n%s" % (k, p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
            sys.exit(1)
        sums.update(c for _, c in its)
        v = statistics.median(float(t) for t, _ in its[a.warm:])
        res[k].append(v)
        line.append("%s %.1f" % (k, v))
    print("round %d: %s" % (r, ", ".join(line)), flush=True)
base = statistics.median(res["untraced"])
print("\nmedian tokens/s over %d rounds (each the median of %d generations after %d warm):" % (a.rounds, a.iters, a.warm))
for k in names:
    m = statistics.median(res[k])
    print("  %-24s %8.1f  %6.1f %% of untraced" % (k, m, 100 * m / base))
print("checksums: %s" % " ".join(sorted(sums)))
sys.exit(0 if len(sums) == 1 else 1)
