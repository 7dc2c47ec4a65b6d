"""MLP inference on the GPU in PyTorch, for issue 5's proof (tests/gpu/proof.sh).

  python3 mlp_infer.py [--iters N] [--passes P] [--batch B] [--seconds S]

The weights (seed 0, no download) go to the GPU once. Each iteration then copies an input batch
in (host to device), runs P forward passes over it, and copies the last result back (device to
host, which also waits for the GPU). One line per iteration:

  iter I passes/s X checksum C

X is P divided by the iteration's wall time; C is a hash of the result's bytes: the same in
every iteration and every run, so runs traced, untraced and attached to mid-run can be compared.
The layers are small (batch 64, width 1024-2048), so each pass is a few short kernels and the
rate is bound by the host: the cost of every driver call shows in it. With --seconds the loop
runs until that much time has passed (for `cuhook attach`). With CUHOOK_AGENT set, the agent is
loaded first (constructor mode), like the other scripts here."""
import argparse
import ctypes
import hashlib
import os
import time

if os.environ.get("CUHOOK_AGENT"):
    ctypes.CDLL(os.environ["CUHOOK_AGENT"])

import torch  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--iters", type=int, default=10)
p.add_argument("--passes", type=int, default=200, help="forward passes per iteration")
p.add_argument("--batch", type=int, default=64)
p.add_argument("--seconds", type=float, default=0)
a = p.parse_args()

torch.manual_seed(0)
dims = [1024, 2048, 2048, 1024, 256]
layers = []
for n_in, n_out in zip(dims, dims[1:]):
    layers += [torch.nn.Linear(n_in, n_out), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers[:-1]).eval()  # no ReLU after the last layer
x_host = torch.randn(a.batch, dims[0])  # made on the CPU: the same numbers on any machine

t0 = time.time()
model = model.to("cuda")
torch.cuda.synchronize()
print(f"model loaded in {time.time() - t0:.2f} s", flush=True)

i = 0
start = time.time()
with torch.inference_mode():
    while True:
        t = time.perf_counter()
        x = x_host.to("cuda")
        for _ in range(a.passes):
            y = model(x)
        out = y.cpu()
        dt = time.perf_counter() - t
        digest = hashlib.sha256(out.numpy().tobytes()).hexdigest()[:16]
        print(f"iter {i} passes/s {a.passes / dt:.1f} checksum {digest}", flush=True)
        i += 1
        if a.seconds:
            if time.time() - start >= a.seconds:
                break
        elif i >= a.iters:
            break
