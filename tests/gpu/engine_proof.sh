#!/bin/bash
# The engine's proof on a GPU machine (run there through the device tool, from the repo root):
#   bash tests/gpu/engine_proof.sh OUTDIR
# Builds cuhook (build dependencies carried in .devdeps/, see ../shared/device/README.md), then:
#  1. plans every export of the real libcuda offline (cuhook funcs) and lists the refused;
#  2. runs 100 matrix products in PyTorch untraced and traced (agent loaded with ctypes before
#     torch touches CUDA): same checksum, launches counted from the trace;
#  3. counts the same launches with cuda-gdb breakpoints (ground truth);
#  4. times cuCtxGetCurrent untraced and traced on the real driver.
set -u
out=${1:-/tmp/proof}
mkdir -p "$out"
log() { echo "== $*"; }
source .devdeps/use-deps.sh
log "build"
(meson setup /tmp/build -Dbuildtype=release >/tmp/meson-setup.log 2>&1 && ninja -C /tmp/build >/tmp/ninja.log 2>&1) \
  || { tail -n 30 /tmp/meson-setup.log /tmp/ninja.log; exit 1; }
agent=/tmp/build/src/agent/libcuhook.so
cuhook=/tmp/build/src/cli/cuhook
libcuda=$(python3 -c "import ctypes,ctypes.util; print(ctypes.util.find_library('cuda') or '')")
libcuda=$(readlink -f /usr/local/nvidia/lib64/libcuda.so.1 2>/dev/null || echo "$libcuda")
log "machine"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
echo "libcuda: $libcuda"

log "1. offline plan of every export of $libcuda"
$cuhook funcs --funcs 'cu*' "$libcuda" | tee "$out/funcs.txt" | tail -15

log "2a. untraced"
python3 tests/gpu/matmul100.py | tee "$out/untraced.txt"
log "2b. traced (ctypes.CDLL of the agent before torch)"
CUHOOK_AGENT=$agent CUHOOK_FORCE=1 CUHOOK_OUTPUT=$out/matmul.bin CUHOOK_VERBOSE=1 python3 tests/gpu/matmul100.py | tee "$out/traced.txt"
if cmp -s <(grep checksum "$out/untraced.txt") <(grep checksum "$out/traced.txt"); then echo "checksums equal"; else echo "CHECKSUMS DIFFER"; fi
$cuhook report "$out/matmul.bin" > "$out/report.txt" 2>&1; head -60 "$out/report.txt"
$cuhook report --format json "$out/matmul.bin" > "$out/report.json"
python3 - "$out/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
calls = {f["name"]: f["calls"] for f in r["functions"]}
for k in ["cuLaunchKernelEx", "cuLaunchKernel", "cuGetProcAddress_v2", "cuMemAlloc_v2", "cuInit"]:
    print(f"traced {k}: {calls.get(k, 0)}")
print("events", r["events"], "dropped", r["dropped"])
print("refused:", len(r.get("refused", [])))
for f in r.get("refused", []):
    print("  ", f["name"], "-", f["reason"])
PY

log "3. ground truth: cuda-gdb breakpoint hits (untraced run)"
timeout 400 cuda-gdb -batch -ex 'set breakpoint pending on' -ex 'break cuLaunchKernelEx' -ex 'break cuLaunchKernel' \
  -ex 'ignore 1 1000000' -ex 'ignore 2 1000000' -ex run -ex 'info breakpoints' \
  --args python3 tests/gpu/matmul100.py > "$out/cudagdb.txt" 2>&1
grep -E "breakpoint already hit|^[0-9]+ +breakpoint|checksum" "$out/cudagdb.txt"

log "4. cuCtxGetCurrent on the real driver"
gcc -O2 -I/usr/local/cuda/include -o /tmp/ctxb tests/gpu/ctx_get_current_bench.c -L"$(dirname "$libcuda")" -l:libcuda.so.1 -ldl \
  && /tmp/ctxb "$agent" "$out/ctx.bin" 200000 | tee "$out/ctx_bench.txt"
