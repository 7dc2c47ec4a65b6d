"""Traced against untraced in one process: GPT-2 generation (the model of gpt2_infer.py), the
agent started and stopped through its API between iterations, so both sides share the process,
its memory layout, its threads and the machine's state of the moment. Separate processes of the
same loop differ from each other by several percent on the GPU machine; this comparison does
not carry that noise.

  python3 ab_gpt2.py --agent libcuhook.so [--rounds N] [--tokens T] [--opts "k=v;..."]
                     [--trace-dir DIR] [--json FILE]

Each round runs one untraced and one traced generation, the order alternating from round to
round. Prints each iteration, then the medians, the median of the per-round ratios and the
checksums (one distinct value expected). The traces go to DIR/ab-ROUND.bin (--trace-dir, default
/tmp); the calls they hold are what the traced side paid for."""
import argparse
import ctypes
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
p.add_argument("--opts", default="")
p.add_argument("--trace-dir", default="/tmp")
p.add_argument("--json", default="")
p.add_argument("--settle", type=float, default=0.0,
               help="seconds to sleep after each start and stop of the agent, before timing")
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


def generate():
    t = time.perf_counter()
    with torch.no_grad():
        out = model.generate(prompt, max_new_tokens=a.tokens, do_sample=False, pad_token_id=0)
    ids = out[0].tolist()
    dt = time.perf_counter() - t
    return a.tokens / dt, hashlib.sha256(str(ids).encode()).hexdigest()[:16]


for _ in range(3):  # warm-up: allocator, kernels, caches
    generate()

rates = {"untraced": [], "traced": []}
ratios, sums = [], set()
for r in range(a.rounds):
    order = ["untraced", "traced"] if r % 2 == 0 else ["traced", "untraced"]
    row = {}
    for side in order:
        if side == "traced":
            opts = f"output={a.trace_dir}/ab-{r}.bin" + (";" + a.opts if a.opts else "")
            if agent.cuhook_agent_start(opts.encode(), 0) != 0:
                print("agent start failed:", agent.cuhook_agent_last_error().decode(), file=sys.stderr)
                sys.exit(1)
        if a.settle:
            time.sleep(a.settle)
        rate, s = generate()
        if side == "traced":
            agent.cuhook_agent_stop(0)
            if a.settle:
                time.sleep(a.settle)
        row[side] = rate
        rates[side].append(rate)
        sums.add(s)
    ratios.append(row["traced"] / row["untraced"])
    print(f"round {r} untraced {row['untraced']:.1f} traced {row['traced']:.1f} "
          f"ratio {ratios[-1]:.4f}", flush=True)

res = {
    "untraced_median": statistics.median(rates["untraced"]),
    "traced_median": statistics.median(rates["traced"]),
    "ratio_of_medians": statistics.median(rates["traced"]) / statistics.median(rates["untraced"]),
    "median_ratio": statistics.median(ratios),
    "rounds": a.rounds,
    "checksums": sorted(sums),
}
print(f"untraced median {res['untraced_median']:.1f} tokens/s, traced median "
      f"{res['traced_median']:.1f}, ratio of medians {res['ratio_of_medians']:.4f}, "
      f"median of round ratios {res['median_ratio']:.4f}, distinct checksums {len(sums)}")
if a.json:
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)
