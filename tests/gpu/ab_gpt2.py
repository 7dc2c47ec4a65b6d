"""Traced against untraced in one process: GPT-2 generation (the model of gpt2_infer.py), the
agent started and stopped through its API between iterations, so both sides share the process,
its memory layout, its threads and the machine's state of the moment. Separate processes of the
same loop differ from each other by several percent on the GPU machine; this comparison does
not carry that noise.

  python3 ab_gpt2.py --agent libcuhook.so [--rounds N] [--tokens T] [--opts "k=v;..."]...
                     [--trace-dir DIR] [--json FILE] [--settle SEC] [--gc on|collect] [--warm N]

Each round runs one untraced generation and one traced generation per --opts (agent options;
several --opts compare several ways of tracing in the same rounds), the order rotating from round
to round. Prints each round, then per traced side: the medians, the median of the per-round
ratios, and the ratio of the best rounds (the machine's noise only ever slows a round down, so
the fastest rounds are the least disturbed), and the checksums (one distinct value expected).
Each round line also gives the milliseconds Python's cyclic garbage collector ran during each
generation (gc.callbacks), and the involuntary context switches of the process (another task
took the CPU), two causes of slow rounds that have nothing to do with tracing, and the CPU the
generating thread ended on. --gc collect
runs a full collection before every timed generation and keeps the collector off while it runs,
on both sides alike. --warm N runs N untimed generations after each switch (the agent started
or stopped), on every side alike, so the timed one measures a trace that is under way rather
than the first generation after patching (caches, the writer thread's start); --warm 0 (the
default) times the first.
The traces go to DIR/ab-ROUND[-SIDE].bin (--trace-dir, default /tmp); the calls they hold are
what the traced side paid for."""
import argparse
import ctypes
import gc
import hashlib
import json
import os
import statistics
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--agent", required=True)
p.add_argument("--rounds", type=int, default=20)
p.add_argument("--tokens", type=int, default=32)
p.add_argument("--opts", action="append", help="agent options of a traced side (repeatable)")
p.add_argument("--trace-dir", default="/tmp")
p.add_argument("--json", default="")
p.add_argument("--settle", type=float, default=0.0,
               help="seconds to sleep after each start and stop of the agent, before timing")
p.add_argument("--warm", type=int, default=0,
               help="untimed generations after each switch, before the timed one (every side)")
p.add_argument("--gc", choices=("on", "collect"), default="on",
               help="collect: gc.collect() before each timed generation, collector off during it")
a = p.parse_args()

# Loaded before torch, as `cuhook run` would have it; started only through the API below.
os.environ["CUHOOK_DISABLE"] = "1"
agent = ctypes.CDLL(os.path.abspath(a.agent))
agent.cuhook_agent_start.argtypes = [ctypes.c_char_p, ctypes.c_uint]
agent.cuhook_agent_stop.argtypes = [ctypes.c_uint]
agent.cuhook_agent_last_error.restype = ctypes.c_char_p

import torch  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

torch.manual_seed(0)
cfg = GPT2Config(n_layer=6, n_head=8, n_embd=512, vocab_size=8192, n_positions=256)
model = GPT2LMHeadModel(cfg).eval().to("cuda")
prompt = torch.arange(16, device="cuda").unsqueeze(0)


gc_ms = [0.0, None]  # collector time since reset, start of the running collection


def on_gc(phase, info):
    if phase == "start":
        gc_ms[1] = time.perf_counter()
    elif gc_ms[1] is not None:
        gc_ms[0] += (time.perf_counter() - gc_ms[1]) * 1e3
        gc_ms[1] = None


gc.callbacks.append(on_gc)


def involuntary_switches():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("nonvoluntary_ctxt_switches:"):
                return int(line.split()[1])
    return 0


def this_cpu():
    """the CPU this thread last ran on (/proc/thread-self/stat, field 39)"""
    with open("/proc/thread-self/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[36])


def generate():
    """tokens/s, checksum, ms of garbage collection and involuntary context switches during
    it, the CPU it ended on"""
    if a.gc == "collect":
        gc.collect()
        gc.disable()
    gc_ms[0] = 0.0
    sw = involuntary_switches()
    t = time.perf_counter()
    with torch.no_grad():
        out = model.generate(prompt, max_new_tokens=a.tokens, do_sample=False, pad_token_id=0)
    ids = out[0].tolist()
    dt = time.perf_counter() - t
    extra = (gc_ms[0], involuntary_switches() - sw, this_cpu())
    if a.gc == "collect":
        gc.enable()
    return a.tokens / dt, hashlib.sha256(str(ids).encode()).hexdigest()[:16], extra


for _ in range(3):  # warm-up: allocator, kernels, caches
    generate()

arms = a.opts or [""]
names = ["traced"] if len(arms) == 1 else [f"traced{i}" for i in range(len(arms))]
sides = ["untraced"] + names
rates = {side: [] for side in sides}
ratios = {name: [] for name in names}
sums = set()
for r in range(a.rounds):
    # rotated each round, reversed every other full turn: with two sides U T, T U, T U, U T, ...
    # (reversing on odd rounds alone would undo the rotation and keep U T always)
    order = sides[r % len(sides):] + sides[:r % len(sides)]
    if (r // len(sides)) % 2:
        order.reverse()
    row, noise = {}, {}
    for side in order:
        if side != "untraced":
            k = names.index(side)
            suffix = "" if len(arms) == 1 else f"-{k}"
            out = f"{a.trace_dir}/ab-{r}{suffix}.bin"
            if os.path.lexists(out):  # an earlier run's: the agent creates new files only
                os.unlink(out)
            opts = f"output={out}" + (";" + arms[k] if arms[k] else "")
            if agent.cuhook_agent_start(opts.encode(), 0) != 0:
                print("agent start failed:", agent.cuhook_agent_last_error().decode(), file=sys.stderr)
                sys.exit(1)
        if a.settle:
            time.sleep(a.settle)
        for _ in range(a.warm):
            generate()
        rate, s, extra = generate()
        if side != "untraced":
            agent.cuhook_agent_stop(0)
            if a.settle:
                time.sleep(a.settle)
        row[side] = rate
        noise[side] = extra
        rates[side].append(rate)
        sums.add(s)
    for name in names:
        ratios[name].append(row[name] / row["untraced"])
    print(f"round {r} untraced {row['untraced']:.1f} " +
          " ".join(f"{name} {row[name]:.1f} ratio {ratios[name][-1]:.4f}" for name in names) +
          "  gc ms " + "/".join(f"{noise[side][0]:.0f}" for side in sides) +
          " preempted " + "/".join(str(noise[side][1]) for side in sides) +
          " cpu " + "/".join(str(noise[side][2]) for side in sides), flush=True)

res = {"rounds": a.rounds, "warm": a.warm, "checksums": sorted(sums),
       "untraced_median": statistics.median(rates["untraced"]),
       "untraced_best": max(rates["untraced"]), "untraced_rates": rates["untraced"], "sides": {}}
for k, name in enumerate(names):
    res["sides"][name] = {
        "opts": arms[k],
        "traced_median": statistics.median(rates[name]),
        "traced_best": max(rates[name]),
        "ratio_of_medians": statistics.median(rates[name]) / res["untraced_median"],
        "median_ratio": statistics.median(ratios[name]),
        "ratio_of_best": max(rates[name]) / res["untraced_best"],
        "traced_rates": rates[name],
        "round_ratios": ratios[name],
    }
if len(names) == 1:  # the keys of the one-sided summary, as before
    res.update({k: v for k, v in res["sides"]["traced"].items() if k != "opts"})
for name, d in res["sides"].items():
    print(f"{name} '{d['opts']}': untraced median {res['untraced_median']:.1f} tokens/s, traced "
          f"median {d['traced_median']:.1f}, ratio of medians {d['ratio_of_medians']:.4f}, "
          f"median of round ratios {d['median_ratio']:.4f}, ratio of best rounds "
          f"{d['ratio_of_best']:.4f}, distinct checksums {len(sums)}")
if a.json:
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)
