"""100 matrix products on the GPU: the engine's proof workload.

Prints a checksum of the result, so a traced run can be compared with an untraced one. With
CUHOOK_AGENT set, the agent is loaded first (constructor mode, like any ctypes.CDLL), before
torch touches CUDA; it patches libcuda when the CUDA runtime dlopens it. With --os-exit it ends
with os._exit(0) right after printing, as multiprocessing workers do: no exit handler or
destructor runs (the agent's _exit hook closes the trace)."""
import ctypes
import hashlib
import os
import sys

if os.environ.get("CUHOOK_AGENT"):
    ctypes.CDLL(os.environ["CUHOOK_AGENT"])

import torch  # noqa: E402

torch.manual_seed(0)
a = torch.randn(1024, 1024, device="cuda")
b = torch.randn(1024, 1024, device="cuda")
torch.cuda.synchronize()
for _ in range(100):
    c = torch.mm(a, b)
torch.cuda.synchronize()
print("checksum", hashlib.sha256(c.cpu().numpy().tobytes()).hexdigest()[:16], flush=True)
if "--os-exit" in sys.argv[1:]:
    os._exit(0)
