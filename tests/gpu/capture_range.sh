#!/bin/bash
# The capture range on a GPU machine (run there through the device tool, from the repo root):
#   bash tests/gpu/capture_range.sh OUTDIR
# Builds cuhook (build dependencies carried in .devdeps/), then runs tests/gpu/capture_range.py
# (PyTorch, two ranges marked with torch.cuda.profiler.start/stop) three times: untraced, traced
# in full with --record-all, and with --capture-range cudaProfilerApi; and compares, function by
# function, the calls of the full trace that lie inside the ranges (between cuProfilerStart's exit
# and cuProfilerStop's entry, on any thread) with what the capture-range trace recorded and
# counted. The checksums must be equal.
set -u
export PYTHONPATH="$PWD/tests/lib${PYTHONPATH:+:$PYTHONPATH}"  # the tests' helper library (cuhooktest)
out=${1:-/tmp/capture}
mkdir -p "$out"
log() { echo "== $*"; }
source .devdeps/use-deps.sh
log "build"
(meson setup /tmp/build -Dbuildtype=release >/tmp/meson-setup.log 2>&1 && ninja -C /tmp/build >/tmp/ninja.log 2>&1) \
  || { tail -n 30 /tmp/meson-setup.log /tmp/ninja.log; exit 1; }
cuhook=/tmp/build/src/cli/cuhook
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
libcuda=$(python3 -c "import ctypes,ctypes.util; print(ctypes.util.find_library('cuda') or '')")
libcuda=$(readlink -f /usr/local/nvidia/lib64/libcuda.so.1 2>/dev/null || echo "$libcuda")
$cuhook funcs --funcs 'cuProfiler*' "$libcuda" | tail -5

log "untraced"
python3 tests/gpu/capture_range.py | tee "$out/untraced.txt"
log "traced in full (--record-all)"
$cuhook run --force --record-all -o "$out/full.bin" -- python3 tests/gpu/capture_range.py | tee "$out/full.txt"
log "capture range"
$cuhook run --force --capture-range cudaProfilerApi -o "$out/range.bin" -- python3 tests/gpu/capture_range.py | tee "$out/range.txt"
$cuhook report "$out/range.bin" > "$out/range_report.txt" 2>&1
grep -E "note    (capture|traced)|events|counted" "$out/range_report.txt"
python3 - "$out" <<'PY'
import collections, os, sys
import cuhooktest
from cuhooktest import tracefile
out = sys.argv[1]
def checksum(name):
    return [l for l in open(os.path.join(out, name)) if l.startswith("checksum")]
same = checksum("untraced.txt") == checksum("full.txt") == checksum("range.txt") != []
print("checksums equal" if same else "CHECKSUMS DIFFER")
full = tracefile.read_trace(os.path.join(out, "full.bin"))
rng = tracefile.read_trace(os.path.join(out, "range.bin"))
starts = sorted(c.exit for c in full.calls if c.name == "cuProfilerStart")
stops = sorted(c.entry for c in full.calls if c.name == "cuProfilerStop")
spans = list(zip(starts, stops))
print("full trace: ranges", len(spans), "cuProfilerStart", len(starts), "cuProfilerStop", len(stops))
inside = collections.Counter()
for c in full.calls:
    if any(lo < c.entry and c.exit < hi for lo, hi in spans):
        inside[c.name] += 1
counted = set(cuhooktest.counted_names(cuhooktest.default_count(), set(full.funcs.values())))
want_rec = {n: k for n, k in inside.items() if n not in counted}
want_cnt = {n: k for n, k in inside.items() if n in counted}
got_rec = dict(rng.entries)
print("in the ranges (full trace), recorded:", dict(sorted(want_rec.items())))
print("in the ranges (full trace), counted: ", dict(sorted(want_cnt.items())))
print("capture-range trace, recorded:       ", dict(sorted(got_rec.items())))
print("capture-range trace, counted:        ", dict(sorted(rng.counted.items())))
ok = got_rec == want_rec and rng.counted == want_cnt and len(spans) == 2
print("CAPTURE RANGE EXACT" if ok else "CAPTURE RANGE DIFFERS")
PY
