#!/bin/bash
# On a GPU machine (through the device tool, from the repo root, .devdeps carried):
#   bash tests/inject/gpu_attach_phases.sh OUTDIR [ROUNDS] [BASE_OVERLAY]
# 1. Attach phases on PyTorch: ROUNDS times, two fresh GPT-2 inference loops (tests/gpu/
#    gpt2_infer.py); `cuhook attach -v` of this tree on one, of the baseline (this tree with the
#    files of BASE_OVERLAY laid over it, e.g. the injector before the change) on the other, in
#    alternating order; every attach loads the agent. Prints the -v lines and the medians.
# 2. cuhook run --follow on a PyTorch program with DataLoader workers (fork, no CUDA) and a
#    subprocess (exec) that runs 100 matrix products: one trace per process, launches counted.
set -u
out=${1:-/tmp/phases}
rounds=${2:-5}
overlay=${3:-}
mkdir -p "$out"
source .devdeps/use-deps.sh
export PYTHONUNBUFFERED=1
build() { # src builddir
  (meson setup "$2" "$1" -Dbuildtype=release >"$2.setup.log" 2>&1 &&
   ninja -C "$2" src/cli/cuhook src/agent/libcuhook.so >"$2.ninja.log" 2>&1) ||
    { tail -n 30 "$2.setup.log" "$2.ninja.log"; exit 1; }
}
echo "== build"
build . /tmp/bnew
if [ -n "$overlay" ]; then
  rm -rf /tmp/base-src && mkdir /tmp/base-src
  tar --exclude=./.git --exclude='./build*' --exclude=./.devdeps -cf - . | tar -xf - -C /tmp/base-src
  cp -r "$overlay"/. /tmp/base-src/
  rm -f /tmp/base-src/src/inject/follow.c
  build /tmp/base-src /tmp/bbase
fi

echo "== 1. attach phases, $rounds rounds"
wait_iter() { for _ in $(seq 1 240); do grep -q '^iter 2 ' "$1" && return 0; sleep 0.25; done; return 1; }
for i in $(seq 1 "$rounds"); do
  python3 tests/gpu/gpt2_infer.py --seconds 60 --tokens 16 >"$out/loopA$i.txt" 2>&1 &
  A=$!
  python3 tests/gpu/gpt2_infer.py --seconds 60 --tokens 16 >"$out/loopB$i.txt" 2>&1 &
  B=$!
  wait_iter "$out/loopA$i.txt" && wait_iter "$out/loopB$i.txt" || { echo "loops did not start"; tail "$out/loopA$i.txt"; exit 1; }
  echo "round $i: threads $(ls /proc/$A/task | wc -l) / $(ls /proc/$B/task | wc -l)"
  # fresh names: the baseline build (/tmp/bbase) may predate --force
  rm -f "$out/new$i.bin" "$out/base$i.bin"
  new() { /tmp/bnew/src/cli/cuhook attach -v --duration 1 -o "$out/new$i.bin" $A 2>&1 | grep -E 'stopped for' | sed 's/^/  new  /'; }
  base() { [ -n "$overlay" ] && /tmp/bbase/src/cli/cuhook attach -v --duration 1 -o "$out/base$i.bin" $B 2>&1 | grep -E 'stopped for' | sed 's/^/  base /'; }
  if [ $((i % 2)) -eq 1 ]; then new; base; else base; new; fi
  kill $A $B; wait $A $B 2>/dev/null
  # the loops must have kept their tokens while attached
  for f in "$out/loopA$i.txt" "$out/loopB$i.txt"; do
    n=$(grep -o 'checksum [0-9a-f]*' "$f" | sort -u | wc -l); [ "$n" = 1 ] || echo "  $f: $n distinct checksums!"
  done
done | tee "$out/phases.txt"
python3 - "$out/phases.txt" <<'PY'
import re, statistics, sys
rows = {"new": [], "base": []}
for l in open(sys.argv[1]):
    m = re.match(r"\s+(new|base)\s+cuhook: (attach|detach): (\d+) threads stopped for ([\d.]+) ms \((.*)\)(.*)", l)
    if not m or m.group(2) != "attach":
        continue
    d = {"stopped": float(m.group(4))}
    for k, v in re.findall(r"(stop|dlopen|call|fixup|detach|prepare) ([\d.]+)", m.group(5) + m.group(6)):
        d[k] = float(v)
    rows[m.group(1)].append(d)
for who, rs in rows.items():
    if rs:
        keys = ["stopped", "stop", "dlopen", "prepare", "call", "fixup", "detach"]
        print(who, "attach medians (ms) over", len(rs), ":",
              ", ".join("%s %.2f" % (k, statistics.median(r.get(k, 0) for r in rs)) for k in keys))
PY

echo "== 2. cuhook run --follow"
cat >/tmp/follow_gpu.py <<'PY'
import subprocess, sys, torch
from torch.utils.data import DataLoader, TensorDataset
n = sum(len(b[0]) for b in DataLoader(TensorDataset(torch.arange(64.0)), batch_size=8, num_workers=2))
r = subprocess.run([sys.executable, "tests/gpu/matmul100.py"])
x = torch.ones(10, device="cuda")
print("items", n, "sum", float(x.sum()), "child", r.returncode, flush=True)
sys.exit(r.returncode + 3)
PY
rm -rf "$out/follow" && mkdir "$out/follow"
/tmp/bnew/src/cli/cuhook run --follow -v -o "$out/follow/f.bin" -- python3 /tmp/follow_gpu.py 2>&1 | grep -v 'task .* forked\|^cuhook: dlopen at\|agent started'
echo "exit status ${PIPESTATUS[0]} (3 expected)"
for f in "$out"/follow/*.bin; do
  /tmp/bnew/src/cli/cuhook report --format json "$f" 2>/dev/null | python3 -c "
import json, sys
r = json.load(sys.stdin); c = {f['name']: f['calls'] for f in r['functions'] if f['calls']}
exe = r.get('exe') or r.get('cmdline') or ''
print('$(basename "$f")', 'pid', r['pid'], 'events', r['events'], 'launches', c.get('cuLaunchKernel', 0) + c.get('cuLaunchKernelEx', 0), 'functions', len(c), str(exe)[:60])"
done
