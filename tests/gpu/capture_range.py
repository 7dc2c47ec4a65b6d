"""The capture range on the real driver (tests/gpu/capture_range.sh): matrix products and
copies in PyTorch, with two ranges marked by torch.cuda.profiler.start()/stop() (the runtime's
cudaProfilerStart/cudaProfilerStop, which reach the driver's cuProfilerStart/cuProfilerStop).

  warm-up, 7 products | range 1: 20 products | 11 products | range 2: 30 products | 13 products

Run twice by capture_range.sh: traced in full with --record-all (the ranges' calls found in it
between cuProfilerStart's exit and cuProfilerStop's entry), and with --capture-range
cudaProfilerApi; the second trace must hold exactly those calls. Prints a checksum."""
import hashlib

import torch

torch.manual_seed(0)
a = torch.randn(512, 512, device="cuda")
b = torch.randn(512, 512, device="cuda")
c = torch.mm(a, b)
torch.cuda.synchronize()


def products(n):
    global c
    for _ in range(n):
        c = torch.mm(a, c) / 512
    torch.cuda.synchronize()


products(7)
torch.cuda.profiler.start()
products(20)
torch.cuda.profiler.stop()
products(11)
torch.cuda.profiler.start()
products(30)
torch.cuda.profiler.stop()
products(13)
print("checksum", hashlib.sha256(c.cpu().numpy().tobytes()).hexdigest()[:16], flush=True)
