#!/bin/bash
# What a GPU program feels of cuhook attach and detach (issue 20). On the GPU machine, from the
# project root:
#   source .devdeps/use-deps.sh && bash tests/gpu/attach_stall.sh OUTDIR [ROUNDS]
# Builds this tree (release, /tmp/build-gpu), then runs tests/gpu/attach_stall.py on a PyTorch
# GPT-2 loop and on a JAX loop, ROUNDS attaches each (3): per attach and detach, the working
# thread's spike against the hold cuhook reports for it, the longest hold, the 20 ms verdict.
set -u
OUT=${1:?output directory}
ROUNDS=${2:-3}
mkdir -p "$OUT"
B=/tmp/build-gpu
{ meson setup $B -Dbuildtype=release >/dev/null 2>&1 || meson setup --reconfigure $B -Dbuildtype=release >/dev/null; } &&
	ninja -C $B >/dev/null || { echo "build failed"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 tests/gpu/attach_stall.py --cuhook $B/src/cli/cuhook --out "$OUT" --rounds "$ROUNDS" 2>&1 | tee "$OUT/attach_stall.txt"
exit "${PIPESTATUS[0]}"
