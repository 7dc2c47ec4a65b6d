#!/usr/bin/env python3
"""cuhook killed at random instants on a real PyTorch process (GPU machine, issue 15):

    python3 tests/gpu/kill_gpu.py --cuhook BUILD/src/cli/cuhook --out DIR [--attach-kills N]
                                  [--cycles N] [--run-kills N]

1. A GPT-2 generation loop (gpt2_infer.py --seconds) runs; `cuhook attach --duration 0.2`
   CYCLES times in a row: every attach and detach must succeed.
2. ATTACH_KILLS times: `cuhook attach -v` SIGKILLed at a random instant 0-80 ms after it starts
   (the injection on a real libcuda takes tens of ms: dlopen, prepare, start, fixup) or, one
   time in three, during its detach. After each: the loop process alive and not stopped, the trace file no longer
   growing 2 s later (the agent ends its trace itself), and the next attach working.
   At the end every iteration's checksum must be one and the same.
3. RUN_KILLS times: `cuhook run -- gpt2_infer.py --iters 1` SIGKILLed 0-0.1 s or 0.1-3 s after it starts
   (before, during or after the agent's start at the program's entry); the program, adopted by
   this script (a child subreaper), must end with status 0 and the untraced checksum (or, killed
   before the program was started, not run at all: counted apart).
Prints a table and exits 1 on any failure."""
import argparse
import ctypes
import os
import random
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GPT2 = os.path.join(HERE, "gpt2_infer.py")


def state(pid):
    """Letters of every thread's state, or None if the process is gone."""
    try:
        out = []
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                out.append(f.read().rsplit(")", 1)[1].split()[0])
        return "".join(out)
    except OSError:
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--attach-kills", type=int, default=30)
    ap.add_argument("--run-kills", type=int, default=12)
    ap.add_argument("--seed", type=int, default=15)
    a = ap.parse_args()
    random.seed(a.seed)
    os.makedirs(a.out, exist_ok=True)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    fails = []
    env = dict(os.environ, PYTHONUNBUFFERED="1")

    # untraced reference
    ref = subprocess.run([sys.executable, GPT2, "--iters", "1", "--tokens", "16"], capture_output=True,
                         text=True, env=env)
    want = re.search(r"checksum (\w+)", ref.stdout).group(1)
    print("untraced checksum", want, flush=True)

    log = open(os.path.join(a.out, "loop.txt"), "w")
    loop = subprocess.Popen([sys.executable, GPT2, "--seconds", "100000", "--tokens", "16"], stdout=log,
                            stderr=subprocess.STDOUT, env=env)
    while "iter 1 " not in open(os.path.join(a.out, "loop.txt")).read():
        time.sleep(0.5)
        if loop.poll() is not None:
            sys.exit("the loop died before starting")
    trace = os.path.join(a.out, "t.bin")

    def attach(*extra):
        return subprocess.run([a.cuhook, "attach", "--force", "-o", trace, *extra, str(loop.pid)],
                              capture_output=True, text=True)

    # 1. cycles
    t_cycles = time.time()
    for i in range(a.cycles):
        r = attach("--duration", "0.2")
        if r.returncode != 0:
            fails.append("cycle %d: exit %d: %s" % (i, r.returncode, r.stderr.strip()[-300:]))
    print("1. %d attach/detach cycles in %.1f s, %d failed" % (a.cycles, time.time() - t_cycles,
          sum(f.startswith("cycle") for f in fails)), flush=True)

    # 2. kills
    landed = 0
    phases = {}
    for i in range(a.attach_kills):
        detach_kill = i % 3 == 2
        p = subprocess.Popen([a.cuhook, "attach", "-v", "--force", "-o", trace] +
                             (["--duration", "0.5"] if detach_kill else []) + [str(loop.pid)],
                             stderr=subprocess.PIPE, text=True)
        # the injection takes tens of ms on a real libcuda: most kills land inside it
        delay = (0.5 + random.uniform(0.0, 0.06)) if detach_kill else random.uniform(0.0, 0.08)
        time.sleep(delay)
        if p.poll() is None:
            p.kill()
            landed += 1
        err = p.communicate()[1]
        last = [l for l in err.splitlines() if l.startswith("cuhook")][-1:] or ["(nothing printed)"]
        key = ("detach" if detach_kill else "attach") + ": " + re.sub(r"[\d.]+", "N", last[0])[:70]
        phases[key] = phases.get(key, 0) + 1
        time.sleep(0.5)
        st = state(loop.pid)
        if st is None or loop.poll() is not None:
            fails.append("kill %d (%.3f s): the loop died (%s)" % (i, delay, loop.poll()))
            break
        if "t" in st or "T" in st:
            fails.append("kill %d: a thread left stopped: %s" % (i, st))
        # the agent's watch ends its trace within a writer round of cuhook's death
        if os.path.exists(trace):
            s0 = os.path.getsize(trace)
            time.sleep(2.0)
            s1 = os.path.getsize(trace)
            if s1 != s0:
                fails.append("kill %d: trace still growing %d -> %d" % (i, s0, s1))
        r = attach("--duration", "0.1")
        if r.returncode != 0:
            fails.append("kill %d: next attach: %s" % (i, r.stderr.strip()[-300:]))
    print("2. %d attach/detach kills landed of %d" % (landed, a.attach_kills), flush=True)
    for k, n in sorted(phases.items()):
        print("   %3d  %s" % (n, k))
    loop.kill()
    loop.wait()
    log.close()
    sums = set(re.findall(r"checksum (\w+)", open(os.path.join(a.out, "loop.txt")).read()))
    n_iter = len(re.findall(r"^iter ", open(os.path.join(a.out, "loop.txt")).read(), re.M))
    print("   loop: %d iterations, checksums %s" % (n_iter, sorted(sums)), flush=True)
    if sums != {want}:
        fails.append("loop checksums %s, want %s" % (sorted(sums), want))

    # 3. cuhook run killed early
    counts = {"ran, right": 0, "not started": 0, "died": 0, "wrong": 0}
    for i in range(a.run_kills):
        out = os.path.join(a.out, "run%d.bin" % i)
        p = subprocess.Popen([a.cuhook, "run", "--force", "-o", out, "--", sys.executable, GPT2, "--iters", "1",
                              "--tokens", "16"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             env=env)
        # half in the first 100 ms (the exec, the entry stub, the agent's start), half later
        delay = random.uniform(0.0, 0.1) if i % 2 == 0 else random.uniform(0.1, 3.0)
        time.sleep(delay)
        if p.poll() is None:
            p.kill()
        p.wait()
        stdout = p.stdout.read()  # the program keeps the pipe; read until it ends
        # reap the adopted program
        status = None
        while True:
            try:
                pid, st = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            status = st
        m = re.search(r"checksum (\w+)", stdout)
        if m and m.group(1) == want:
            counts["ran, right"] += 1
        elif m:
            counts["wrong"] += 1
            fails.append("run kill %d: checksum %s" % (i, m.group(1)))
        elif "model loaded" not in stdout and (status is None or os.WIFEXITED(status) and os.WEXITSTATUS(status) == 125):
            counts["not started"] += 1
        else:
            counts["died"] += 1
            fails.append("run kill %d (%.2f s): no checksum, status %s: %r" % (i, delay, status, stdout[-200:]))
    print("3. cuhook run killed %d times: %s" % (a.run_kills, counts), flush=True)
    print("%d failure(s)" % len(fails))
    for f in fails:
        print("  FAIL", f)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
