#!/bin/bash
# cuhook run / cuhook attach / cuhook report on real PyTorch workloads (run on a GPU machine
# through the device tool, from the repo root):  bash tests/gpu/inject_proof.sh OUTDIR
#  1. GPT-2-style inference (random weights) untraced, then under `cuhook run`: same tokens;
#     the report of the traced run (stages, kernel names) is kept;
#  2. the same inference looping for 25 s, `cuhook attach --duration 5` mid-run: the loop keeps
#     running, every iteration's tokens identical before, during and after; the trace holds
#     only the launches of those 5 s;
#  3. 100 matrix products under `cuhook run`: launches counted (cuda-gdb says 100).
set -u
out=${1:-/tmp/proof}
mkdir -p "$out"
log() { echo "== $*"; }
source .devdeps/use-deps.sh
log "build"
(meson setup /tmp/build -Dbuildtype=release >/tmp/meson-setup.log 2>&1 && ninja -C /tmp/build >/tmp/ninja.log 2>&1) \
  || { tail -n 30 /tmp/meson-setup.log /tmp/ninja.log; exit 1; }
cuhook=/tmp/build/src/cli/cuhook
export PYTHONUNBUFFERED=1

log "1a. gpt2 untraced"
python3 tests/gpu/gpt2_infer.py --iters 3 | tee "$out/gpt2_untraced.txt"
log "1b. gpt2 under cuhook run"
$cuhook run -v --force -o "$out/gpt2_run.bin" -- python3 tests/gpu/gpt2_infer.py --iters 3 | tee "$out/gpt2_run.txt"
echo "exit status $?"
if diff <(grep -o 'checksum .*' "$out/gpt2_untraced.txt") <(grep -o 'checksum .*' "$out/gpt2_run.txt") >/dev/null; then
  echo "gpt2 tokens identical untraced / cuhook run"; else echo "GPT2 TOKENS DIFFER"; fi
$cuhook report "$out/gpt2_run.bin" > "$out/gpt2_report.txt" 2>&1
head -n 120 "$out/gpt2_report.txt"

log "2. attach for 5 s to a running inference loop"
python3 tests/gpu/gpt2_infer.py --seconds 30 --tokens 16 > "$out/gpt2_loop.txt" 2>&1 &
pid=$!
for i in $(seq 1 120); do grep -q '^iter 2 ' "$out/gpt2_loop.txt" && break; sleep 0.5; done
t_attach=$(date +%s.%N)
$cuhook attach -v --force --duration 5 -o "$out/gpt2_attach.bin" $pid 2>&1 | tee "$out/attach.txt"
echo "attach exit status ${PIPESTATUS[0]}"
t_detach=$(date +%s.%N)
wait $pid; echo "target exit status $?"
echo "attach window: $t_attach .. $t_detach"
python3 - "$out/gpt2_loop.txt" <<'PY'
import sys, re
lines = [l for l in open(sys.argv[1]) if l.startswith("iter ")]
sums = {re.search(r"checksum (\w+)", l).group(1) for l in lines}
print(f"{len(lines)} iterations, {len(sums)} distinct checksum(s): {sorted(sums)}")
PY
$cuhook report "$out/gpt2_attach.bin" > "$out/gpt2_attach_report.txt" 2>&1
head -n 40 "$out/gpt2_attach_report.txt"
$cuhook report --format json "$out/gpt2_attach.bin" | python3 -c "
import json,sys; r=json.load(sys.stdin); c={f['name']:f['calls'] for f in r['functions']}
print('attach window: launches', c.get('cuLaunchKernelEx',0), c.get('cuLaunchKernel',0), 'events', r['events'], 'dropped', r['dropped'])"

log "3. 100 matrix products under cuhook run"
$cuhook run --force -o "$out/matmul_run.bin" -- python3 tests/gpu/matmul100.py
$cuhook report --format json "$out/matmul_run.bin" | python3 -c "
import json,sys; r=json.load(sys.stdin); c={f['name']:f['calls'] for f in r['functions']}
print('cuhook run matmul100: cuLaunchKernelEx', c.get('cuLaunchKernelEx',0), 'cuLaunchKernel', c.get('cuLaunchKernel',0))"
