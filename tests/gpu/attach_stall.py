#!/usr/bin/env python3
"""What a GPU program feels of `cuhook attach` and its detach (issue 20), on the GPU machine:

    python3 attach_stall.py --cuhook BUILD/src/cli/cuhook --out DIR [--workload torch|jax|both] [--rounds N]
                            [--attach-args=--gpu]

A workload runs a loop whose every iteration is timed on CLOCK_MONOTONIC by the thread that does
the work (torch: a GPT-2 forward pass built from a config, no download, ~34 threads; torchgraph: the
same captured in a CUDA graph before the attach and replayed; jax: a jitted
MLP step, XLA_PYTHON_CLIENT_PREALLOCATE=false, ~80 threads; cpu: pure Python, to try the script
without a GPU). cuhook attaches with -v --duration 2
while it runs. For the attach and for the detach this prints: the working thread's iteration that
overlaps cuhook's holds (its length against the median iteration: the spike), the hold cuhook
reports for that thread (longest/total), the longest hold of any thread and the all-stopped time;
then the verdicts: stall <= 20 ms, and the working thread's felt stall (the spike) within 2 ms of
its reported longest hold, and of what the release windows say it was held inside that iteration
(two holds of one attach can fall in one iteration of a few ms); with --gpu, whether that iteration
overlaps the detach's GPU stop, which runs beside the program; and the workload's own spikes away
from any hold (what needs no cuhook to happen). Exits 1 if a workload or an attach failed (the verdicts are told, not
enforced: they are timings)."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

WORKLOADS = {
    "torch": r'''
import json, sys, threading, time, torch
from transformers import GPT2Config, GPT2LMHeadModel
torch.manual_seed(0)
cfg = GPT2Config(n_layer=6, n_head=8, n_embd=512, vocab_size=8192, n_positions=256)
model = GPT2LMHeadModel(cfg).eval().to("cuda")
x = torch.arange(64, device="cuda").unsqueeze(0)
def step():
    with torch.no_grad():
        model(x).logits.sum().item()
''',
    # the same GPT-2 forward captured once in a CUDA graph before any attach, then replayed: the
    # graph's kernels can be named after an attach only by the names window (docs/agent.md)
    "torchgraph": r'''
import json, sys, threading, time, torch
from transformers import GPT2Config, GPT2LMHeadModel
torch.manual_seed(0)
cfg = GPT2Config(n_layer=6, n_head=8, n_embd=512, vocab_size=8192, n_positions=256)
model = GPT2LMHeadModel(cfg).eval().to("cuda")
x = torch.arange(64, device="cuda").unsqueeze(0)
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s), torch.no_grad():
    for _ in range(3):
        model(x)
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g), torch.no_grad():
    out = model(x).logits
def step():
    g.replay()
    torch.cuda.synchronize()
''',
    # no GPU: the script's own check, anywhere
    "cpu": r'''
import json, sys, threading, time
def step():
    sum(i * i for i in range(20000))
''',
    "jax": r'''
import json, sys, threading, time, jax, jax.numpy as jnp
k = jax.random.PRNGKey(0)
w = [jax.random.normal(jax.random.fold_in(k, i), (1024, 1024)) / 32 for i in range(8)]
x = jax.random.normal(k, (256, 1024))
@jax.jit
def mlp(x, w):
    for m in w:
        x = jnp.tanh(x @ m)
    return x.sum()
def step():
    mlp(x, w).block_until_ready()
''',
}

LOOP = r'''
seconds, out = float(sys.argv[1]), sys.argv[2]
for _ in range(20):
    step()
iters = []
print("ready", threading.get_native_id(), flush=True)
t_end = time.monotonic_ns() + int(seconds * 1e9)
while True:
    t0 = time.monotonic_ns()
    step()
    t1 = time.monotonic_ns()
    iters.append((t0, t1))
    if t1 >= t_end:
        break
with open(out, "w") as f:
    json.dump({"tid": threading.get_native_id(), "iters": iters,
               "threads": len(__import__("os").listdir("/proc/self/task"))}, f)
'''


def held(stderr, what):
    m = re.search(r"^cuhook: %s: .*per thread \(ms, longest/total\): (.*)$" % what, stderr, re.M)
    return {int(t): (float(a), float(b)) for t, a, b in re.findall(r"(\d+) ([\d.]+)/([\d.]+)", m.group(1))} if m else {}


def windows(part, tid):
    """The release windows of this part of -v's output that held thread tid: (from, to) ns on
    CLOCK_MONOTONIC. A window of every thread (the most threads let go at once) holds it; a
    one-thread window (the thread a remote call borrowed) only when the call named it."""
    ms = list(re.finditer(r"called on thread (\d+)|(\d+) threads? let go, held from (\d+) to (\d+) ns", part))
    every = max((int(m.group(2)) for m in ms if m.group(2)), default=0)
    out, borrowed = [], None
    for m in ms:
        if m.group(1):
            borrowed = int(m.group(1))
        elif int(m.group(2)) == every or (int(m.group(2)) == 1 and borrowed == tid):
            out.append((int(m.group(3)), int(m.group(4))))
    return out


def phase_report(name, what, stderr, part, rec, median):
    """The working thread's iteration overlapping this phase's holds, against what cuhook says:
    its longest hold, and what it was held inside that iteration (two holds a few ms apart fall
    in one iteration of a few ms: the program feels their sum)."""
    tid = rec["tid"]
    wins = windows(part, tid)
    stopped = re.search(r"^cuhook: %s: \d+ threads? stopped for ([\d.]+) ms" % what, stderr, re.M)
    h = held(stderr, what)
    # each stretch of the working thread's time that overlaps a hold: an iteration, or the gap
    # between two iterations (the working thread's too), as (felt ms, start, end)
    over = [((b - a) / 1e6, a, b) for a, b in rec["iters"] if any(b >= w0 and a <= w1 for w0, w1 in wins)]
    its = rec["iters"]
    for (a0, b0), (a1, b1) in zip(its, its[1:]):
        if any(a1 >= w0 and b0 <= w1 for w0, w1 in wins):
            over.append(((a1 - b0) / 1e6 + median, b0, a1))
    longest, a, b = max(over) if over else (0.0, 0, 0)
    spike = max(longest - median, 0.0)
    inside = sum(max(0, min(b, w1) - max(a, w0)) for w0, w1 in wins) / 1e6
    mine = h.get(tid, (0.0, 0.0))
    top = max((v[0] for v in h.values()), default=0.0)
    # With --gpu the detach ends the agent's GPU session (CUPTI) beside the running program,
    # between its first stop (every thread, then all but the caller let go) and the stop proper
    # (the last window): the program's CUDA calls may wait on CUPTI's locks then, unheld.
    every = sorted((int(x), int(y)) for x, y in re.findall(r"threads? let go, held from (\d+) to (\d+) ns", part))
    beside, felt = "", None
    m = re.search(r"the agent's GPU stop, beside the running program: .* the longest hold and the finalize together "
                  r"([\d.]+) ms", part)
    if m:
        felt = float(m.group(1))  # what cuhook says is felt at least: the longest hold + cuptiFinalize
    if what == "detach" and len(every) >= 2:
        g0, g1 = max(y for _, y in every[:-1]), every[-1][0]
        steps = re.search(r"the agent's GPU stop, beside the running program: (.*?) ms", part)
        beside = "; the agent's GPU stop ran beside the program for %.2f ms, %s that iteration%s" % (
            (g1 - g0) / 1e6, "inside" if b >= g0 and a <= g1 else "outside",
            " (%s ms)" % steps.group(1) if steps else "")
    print("  %s: %s; working thread %d: iteration %.2f ms (median %.2f, spike %.2f), reported held %.2f ms "
          "(total %.2f, %.2f of it inside that iteration in %d window%s); longest hold of any thread %.2f ms over "
          "%d threads%s" %
          (name, "all stopped %s ms" % stopped.group(1) if stopped else "no -v line", tid, longest, median, spike,
           mine[0], mine[1], inside, len(wins), "" if len(wins) == 1 else "s", top, len(h), beside))
    return spike, mine[0], top, inside, felt


def one(a, wl, rnd):
    out = os.path.join(a.out, "%s-%d" % (wl, rnd))
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    rec_path = out + ".json"
    prog = subprocess.Popen([sys.executable, "-c", WORKLOADS[wl] + LOOP, str(a.duration + 6), rec_path],
                            stdout=subprocess.PIPE, stderr=open(out + ".err", "w"), text=True, env=env)
    line = prog.stdout.readline()
    if not line.startswith("ready"):
        print("%s: the workload did not start (see %s.err)" % (wl, out))
        prog.kill()
        return False
    time.sleep(2)
    cmd = [a.cuhook, "attach", "-v", "--force", "--duration", str(a.duration), "-o", out + ".bin",
           *a.attach_args.split(), str(prog.pid)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    open(out + ".cuhook.err", "w").write(r.stderr)
    prog.wait(timeout=120)
    if r.returncode != 0 or prog.returncode != 0:
        print("%s round %d: attach status %d, workload status %d\n%s" % (wl, rnd, r.returncode, prog.returncode,
                                                                        r.stderr[-3000:]))
        return False
    rec = json.load(open(rec_path))
    durs = [(b - a_) / 1e6 for a_, b in rec["iters"]]
    median = statistics.median(durs)
    cut = r.stderr.find("tracing process")
    print("%s round %d: %d threads, %d iterations, median %.2f ms" % (wl, rnd, rec["threads"], len(durs), median))
    s1, h1, t1, i1, _ = phase_report("attach", "attach", r.stderr, r.stderr[:cut], rec, median)
    s2, h2, t2, i2, f2 = phase_report("detach", "detach", r.stderr, r.stderr[cut:], rec, median)
    # what the program's iterations cost before the attach and after the detach (CUPTI, once
    # loaded, stays: is anything of its cost left?)
    wins = [(int(x), int(y)) for x, y in re.findall(r"threads? let go, held from (\d+) to (\d+) ns", r.stderr)]
    if len(wins) >= 2:
        first, last = wins[0][0], wins[-1][1]
        pre = [(y - x) / 1e6 for x, y in rec["iters"] if y < first]
        post = [(y - x) / 1e6 for x, y in rec["iters"] if x > last + 500_000_000]
        if pre and post:
            print("  iterations before the attach: median %.3f ms (%d); after the detach (from 0.5 s on): median "
                  "%.3f ms (%d), ratio %.3f" % (statistics.median(pre), len(pre), statistics.median(post), len(post),
                                                 statistics.median(post) / statistics.median(pre)))
    # The workload's own jitter, far from any hold (before the attach's first stop by 0.1 s, after
    # the detach's last by 0.5 s): a spike of this size needs no cuhook to happen.
    if len(wins) >= 2:
        quiet = [(y - x) / 1e6 - median for x, y in rec["iters"]
                 if y < wins[0][0] - 100_000_000 or x > wins[-1][1] + 500_000_000]
        if quiet:
            quiet.sort()
            print("  the workload's own spikes, away from any hold: p99 %.2f ms, max %.2f ms, %d of %d iterations "
                  "over 2 ms" % (quiet[int(0.99 * (len(quiet) - 1))], quiet[-1], sum(q > 2 for q in quiet),
                                 len(quiet)))
    worst = max(s1, s2, t1, t2)
    print("  stall <= 20 ms: %s (worst %.2f ms); working thread's spike within 2 ms of its reported longest "
          "hold: attach %s (%.2f vs %.2f), detach %s (%.2f vs %.2f); of what it was held inside that iteration: "
          "attach %s (%.2f vs %.2f), detach %s (%.2f vs %.2f)" %
          ("met" if worst <= 20 else "NOT met", worst, "yes" if abs(s1 - h1) <= 2 else "NO", s1, h1,
           "yes" if abs(s2 - h2) <= 2 else "NO", s2, h2, "yes" if abs(s1 - i1) <= 2 else "NO", s1, i1,
           "yes" if abs(s2 - i2) <= 2 else "NO", s2, i2), flush=True)
    if f2 is not None:
        print("  detach with the GPU stop: spike within 2 ms of the longest hold and the finalize together: %s "
              "(%.2f vs %.2f)" % ("yes" if abs(s2 - f2) <= 2 else "NO", s2, f2), flush=True)
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--workload", default="both", choices=["torch", "torchgraph", "jax", "both", "cpu"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=2.0)
    ap.add_argument("--attach-args", default="", help="more options for cuhook attach (space-separated)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    ok = True
    for wl in (["torch", "jax"] if a.workload == "both" else [a.workload]):
        for rnd in range(1, a.rounds + 1):
            ok = one(a, wl, rnd) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
