"""A small data-parallel training job for torchrun (issue 24): a GPT-2-shaped transformer built
from a config (random weights, no download) trained with DistributedDataParallel on fixed
random batches, so every run gives the same losses.

  torchrun --standalone --nproc_per_node 2 ddp_job.py --out DIR [--steps N] [--slow-rank R]

Backend: NCCL when there is a GPU per rank, gloo otherwise (NCCL refuses two ranks on one GPU);
DDP_BACKEND overrides. Each rank writes DIR/rank{R}.txt: per step its loss (exact, as hex) and
the CLOCK_REALTIME nanoseconds just after loss.item() returned (the host waited for the step's
GPU work there), so a trace's time axis can be checked against the program's own clock; and,
once its second step begins, DIR/rank{R}.training with its pid (for an attach).
--slow-rank R makes rank R sleep 20 ms before every third step's backward: the other ranks then
wait for it at the all-reduce."""
import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--slow-rank", type=int, default=-1)
a = p.parse_args()

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
local = int(os.environ.get("LOCAL_RANK", rank))
ngpu = torch.cuda.device_count()
backend = os.environ.get("DDP_BACKEND") or ("nccl" if ngpu >= world else "gloo")
dev = torch.device("cuda", local % ngpu)
torch.cuda.set_device(dev)
dist.init_process_group(backend)

torch.manual_seed(0)
cfg = GPT2Config(n_layer=2, n_head=4, n_embd=256, vocab_size=4096, n_positions=128)
model = DDP(GPT2LMHeadModel(cfg).to(dev), device_ids=[dev.index])
opt = torch.optim.SGD(model.parameters(), lr=0.01)
g = torch.Generator().manual_seed(1000 + rank)
batches = [torch.randint(0, cfg.vocab_size, (4, 64), generator=g) for _ in range(8)]

lines = []
os.makedirs(a.out, exist_ok=True)
for step in range(a.steps):
    if step == 1:  # in the training loop: a test may attach now
        with open(os.path.join(a.out, f"rank{rank}.training"), "w") as f:
            f.write(f"{os.getpid()}\n")
    x = batches[step % len(batches)].to(dev)
    out = model(x, labels=x)
    if rank == a.slow_rank and step % 3 == 0:
        time.sleep(0.02)
    out.loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    loss = out.loss.item()
    lines.append(f"{step} {loss.hex()} {time.time_ns()}\n")

with open(os.path.join(a.out, f"rank{rank}.txt"), "w") as f:
    f.write(f"backend {backend} world {world} pid {os.getpid()} device {dev.index}\n")
    f.writelines(lines)
dist.destroy_process_group()
