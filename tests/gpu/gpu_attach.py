#!/usr/bin/env python3
"""`cuhook attach --gpu` on a running PyTorch process (issue 16):

    python3 gpu_attach.py --cuhook BUILD/src/cli/cuhook --out DIR [--windows N] [--duration S]

1. A GPT-2 generation loop runs (gpt2_infer.py --seconds); cuhook attaches with --gpu WINDOWS
   times for DURATION seconds each. Every window's trace must hold kernels, all linked to the
   recorded call that submitted them (gpu_check.py), and every iteration's checksum must be the
   same before, during and after the windows.
2. The same loop under torch.profiler (torch_kernels.py, which holds CUPTI for the whole run):
   cuhook attach --gpu must say that another CUPTI user owns the process (stderr and the trace's
   NOTE), record no GPU session of its own, and still trace the driver API; torch.profiler's own
   result must still come out at the end (its JSON written, kernels in it).
Exits 1 on any failure."""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GPT2 = os.path.join(HERE, "gpt2_infer.py")
TORCHK = os.path.join(HERE, "torch_kernels.py")
CHECK = os.path.join(HERE, "gpu_check.py")


def start_loop(cmd, log):
    f = open(log, "w")
    p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, text=True)
    t = time.time()
    while time.time() - t < 120:
        if "iter 1 " in open(log).read():
            return p
        if p.poll() is not None:
            break
        time.sleep(0.2)
    print(open(log).read()[-3000:])
    sys.exit("the loop did not start")


def attach(a, pid, out, tag):
    cmd = [a.cuhook, "attach", "--gpu", "-v", "--force", "--duration", str(a.duration), "-o", out, str(pid)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    print("%s: %s -> status %d\n%s" % (tag, " ".join(cmd[1:]), p.returncode, p.stderr.strip()), flush=True)
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--windows", type=int, default=2)
    ap.add_argument("--duration", type=float, default=2.0)
    a = ap.parse_args()
    fails = []

    log = os.path.join(a.out, "attach-loop.log")
    loop = start_loop([sys.executable, GPT2, "--seconds", str(12 + 6 * a.windows)], log)
    for w in range(a.windows):
        tr = os.path.join(a.out, "attach-gpu-%d.bin" % w)
        p = attach(a, loop.pid, tr, "window %d" % w)
        if p.returncode:
            fails.append("attach %d failed" % w)
            continue
        c = subprocess.run([sys.executable, CHECK, "--trace", tr, "--min-kernels", "1"], capture_output=True, text=True)
        print(c.stdout.strip(), c.stderr.strip(), flush=True)
        if c.returncode:
            fails.append("window %d: gpu_check failed" % w)
        time.sleep(2)
    loop.wait()
    sums = set(re.findall(r"checksum (\w+)", open(log).read()))
    iters = len(re.findall(r"^iter ", open(log).read(), re.M))
    print("loop: status %d, %d iterations, checksums %s" % (loop.returncode, iters, sorted(sums)))
    if loop.returncode or len(sums) != 1:
        fails.append("loop: status %d, %d distinct checksums" % (loop.returncode, len(sums)))

    log2 = os.path.join(a.out, "attach-profiled-loop.log")
    tpj = os.path.join(a.out, "attach-profiled-torch.json")
    loop = start_loop([sys.executable, TORCHK, "--out", tpj, GPT2, "--seconds", "14"], log2)
    tr = os.path.join(a.out, "attach-under-profiler.bin")
    p = attach(a, loop.pid, tr, "under torch.profiler")
    if p.returncode or "CUPTI" not in p.stderr:
        fails.append("under torch.profiler: status %d, no CUPTI message on stderr" % p.returncode)
    c = subprocess.run([sys.executable, CHECK, "--trace", tr, "--expect-other-user"], capture_output=True, text=True)
    print(c.stdout.strip(), c.stderr.strip(), flush=True)
    if c.returncode:
        fails.append("under torch.profiler: gpu_check --expect-other-user failed")
    loop.wait()
    try:
        k = json.load(open(tpj))
        nk = sum(k["kernels"].values())
    except (OSError, ValueError, KeyError):
        nk = 0
    sums = set(re.findall(r"checksum (\w+)", open(log2).read()))
    print("profiled loop: status %d, torch.profiler saw %d kernels, checksums %s" % (loop.returncode, nk, sorted(sums)))
    if loop.returncode or nk == 0 or len(sums) != 1:
        fails.append("profiled loop: status %d, torch.profiler kernels %d" % (loop.returncode, nk))

    print("\n%s" % ("PASS" if not fails else "FAIL:\n  " + "\n  ".join(fails)))
    return 1 if fails else 0


sys.exit(main())
