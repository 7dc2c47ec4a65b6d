"""GPT-2-style inference on the GPU with random weights (no download): transformers'
GPT2LMHeadModel built from a config, greedy generation of a fixed prompt.

  python3 gpt2_infer.py [--iters N] [--tokens T] [--seconds S]

Each iteration prints one line with the generated token ids' checksum, so runs can be compared
(traced, untraced, attached mid-run). With --seconds it loops until that much time has passed
(for `cuhook attach`). With CUHOOK_AGENT set, the agent is loaded first (constructor mode)."""
import argparse
import ctypes
import hashlib
import os
import sys
import time

if os.environ.get("CUHOOK_AGENT"):
    ctypes.CDLL(os.environ["CUHOOK_AGENT"])

import torch  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--iters", type=int, default=5)
p.add_argument("--tokens", type=int, default=32)
p.add_argument("--seconds", type=float, default=0)
a = p.parse_args()

torch.manual_seed(0)
cfg = GPT2Config(n_layer=6, n_head=8, n_embd=512, vocab_size=8192, n_positions=256)
t0 = time.time()
model = GPT2LMHeadModel(cfg).eval().to("cuda")
torch.cuda.synchronize()
print(f"model loaded in {time.time() - t0:.2f} s", flush=True)
prompt = torch.arange(16, device="cuda").unsqueeze(0)
i = 0
start = time.time()
while True:
    t = time.time()
    with torch.no_grad():
        out = model.generate(prompt, max_new_tokens=a.tokens, do_sample=False, pad_token_id=0)
    ids = out[0].tolist()
    dt = time.time() - t
    print(f"iter {i} tokens/s {a.tokens / dt:.1f} checksum {hashlib.sha256(str(ids).encode()).hexdigest()[:16]}", flush=True)
    i += 1
    if a.seconds:
        if time.time() - start >= a.seconds:
            break
    elif i >= a.iters:
        break
sys.stdout.flush()
