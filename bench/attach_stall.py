#!/usr/bin/env python3
"""What a program feels of cuhook attach and detach (issue 20's target: <= 20 ms on a 128-thread
program, the reported hold within 2 ms of the felt stall).

    python3 bench/attach_stall.py [--threads 128] [--rounds 5] [--build build]

Each round starts tests/targets/stall_probe (THREADS threads, each reading CLOCK_MONOTONIC every
1 ms iteration, on the stand-in libcuda), attaches with -v --duration 0.3 and the real agent,
then asks the probe for each thread's longest gap overlapping a time cuhook held threads. (The window of the
thread that made the remote calls, held alone, counts for that thread only.) A thread's felt
stall is that gap less its 1 ms period; its reported figure is its longest hold at
the attach or the detach (-v). Prints, per round, the largest felt and reported figures, how
many threads felt within 2 ms of their figure, and the verdict on the 20 ms target. Timings
depend on the machine's load: a measurement, not a test (tests/inject real_stall_felt checks
the figures themselves)."""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time


def held(stderr, what):
    m = re.search(r"^cuhook: %s: .*per thread \(ms, longest/total\): (.*)$" % what, stderr, re.M)
    if not m:
        sys.exit("no per-thread figures for the %s in:\n%s" % (what, stderr))
    return {int(t): float(a) for t, a, _ in re.findall(r"(\d+) ([\d.]+)/([\d.]+)", m.group(1))}


def one_round(b, threads, work):
    probe = os.path.join(b, "tests/targets/stall_probe")
    lib = os.path.join(b, "tests/fakecuda/libcuda.so.1")
    p = subprocess.Popen([probe, str(threads), "1000", lib], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    try:
        p.stdout.readline()
        time.sleep(0.3)
        r = subprocess.run([os.path.join(b, "src/cli/cuhook"), "attach", "-v", "--agent",
                            os.path.abspath(os.path.join(b, "src/agent/libcuhook.so")), "-o",
                            os.path.join(work, "s.bin"), "--force", "--duration", "0.3", str(p.pid)],
                           stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            sys.exit("attach failed:\n" + r.stderr)
        at, de = held(r.stderr, "attach"), held(r.stderr, "detach")
        win = re.findall(r"(\d+) threads? let go, held from (\d+) to (\d+) ns", r.stderr)
        stopped = [float(x) for x in re.findall(r"threads stopped for ([\d.]+) ms", r.stderr)]
        caller = int(re.search(r"called on thread (\d+)", r.stderr).group(1))

        def gaps(ws):
            p.stdin.write("gaps %s\n" % " ".join("%s %s" % (a, b) for _, a, b in ws))
            p.stdin.flush()
            got = {}
            for line in iter(p.stdout.readline, ""):
                if line.startswith("end"):
                    break
                f = line.split()
                got[int(f[1])] = max(int(f[3]) / 1e6 - 1.0, 0.0)
            return got

        # the stops of every thread; the remote calls' window only for the thread that made them
        felt = gaps([w for w in win if w[0] != "1"])
        if caller in felt:
            felt[caller] = gaps(win)[caller]
        p.communicate("quit\n", timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    rep = {t: max(at.get(t, 0), de.get(t, 0)) for t in felt}
    close = sum(abs(felt[t] - rep[t]) <= 2.0 for t in felt)
    return max(felt.values()), max(rep.values()), max(at.values()), max(de.values()), stopped, close, len(felt)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="cuhook-stall-")
    worst = 0.0
    for i in range(a.rounds):
        f, r, at, de, stopped, close, n = one_round(a.build, a.threads, work)
        worst = max(worst, f, r)
        print("round %d: felt max %6.2f ms  reported max %6.2f ms (attach %.2f, detach %.2f)  all stopped %s  "
              "felt within 2 ms of reported: %d/%d threads" % (i + 1, f, r, at, de,
                                                               "/".join("%.2f" % s for s in stopped), close, n))
    for x in os.listdir(work):
        os.unlink(os.path.join(work, x))
    os.rmdir(work)
    print("target: stall <= 20 ms with %d threads -> %s (worst %.2f ms)" % (a.threads, "met" if worst <= 20 else
                                                                            "NOT met", worst))


if __name__ == "__main__":
    main()
