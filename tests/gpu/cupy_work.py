"""A CuPy workload with a known shape (issue 16: the GPU timeline on a client other than
PyTorch): elementwise and reduction kernels CuPy compiles itself, cuBLAS matrix products,
copies both ways, memsets, and a CUDA graph captured from a stream and launched several times.

  python3 cupy_work.py [--iters N] [--seconds S]

Prints one checksum line per iteration (the same in every run: traced, untraced, attached).
With --seconds it loops that long (for `cuhook attach`)."""
import argparse
import hashlib
import time

import cupy as cp

ap = argparse.ArgumentParser()
ap.add_argument("--iters", type=int, default=5)
ap.add_argument("--seconds", type=float, default=0)
a = ap.parse_args()

rs = cp.random.RandomState(0)
x = rs.standard_normal((512, 512), dtype=cp.float32)
host = cp.asnumpy(x)
scale = cp.ElementwiseKernel("float32 v", "float32 y", "y = v * 0.5f + 1.0f", "cuhook_scale")

stream = cp.cuda.Stream(non_blocking=True)
with stream:
    g_in = cp.ones((1 << 16,), dtype=cp.float32)
    g_out = cp.empty_like(g_in)
    stream.begin_capture()
    cp.multiply(g_in, 2.0, out=g_out)
    cp.add(g_out, 1.0, out=g_out)
    graph = stream.end_capture()
stream.synchronize()

i, start = 0, time.time()
while True:
    y = cp.asarray(host)                 # HtoD copy
    z = scale(y) @ x                      # CuPy kernel + cuBLAS GEMM
    z += cp.tanh(z).sum(axis=0)           # elementwise + reduction
    m = cp.zeros((1 << 20,), dtype=cp.uint8)  # memset
    for _ in range(3):
        graph.launch(stream)              # 2 kernels each
    stream.synchronize()
    r = cp.asnumpy(z)                     # DtoH copy
    h = hashlib.sha256(r.tobytes() + cp.asnumpy(g_out).tobytes() + bytes([int(m.sum()) & 255])).hexdigest()[:16]
    print("iter %d checksum %s" % (i, h), flush=True)
    i += 1
    if a.seconds:
        if time.time() - start >= a.seconds:
            break
    elif i >= a.iters:
        break
