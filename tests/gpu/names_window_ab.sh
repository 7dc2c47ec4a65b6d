#!/bin/bash
# Does the names window leave a cost in the program after the detach? On a GPU machine, from the
# repo root, carrying .devdeps:
#   bash tests/gpu/names_window_ab.sh OUTDIR [PAIRS [WORKLOAD]]
# Attaches to attach_stall.py's JAX loop (95 threads; WORKLOAD torchgraph: GPT-2 replayed from a
# CUDA graph captured before the attach) PAIRS times with the window off
# (--names-window 0) and PAIRS times with it on (--names-window 1), alternating so that a drift of
# the machine falls on both; each round is a new program. Prints each round's iterations after
# the detach against before (attach_stall.py's ratio), then the two sets side by side.
set -u
out=${1:-/tmp/names-window-ab}
pairs=${2:-5}
wl=${3:-jax}
mkdir -p "$out"
# shellcheck disable=SC1091
[ -f .devdeps/use-deps.sh ] && source .devdeps/use-deps.sh
B=/tmp/build-gpu
{ meson setup $B -Dbuildtype=release >/dev/null 2>&1 || meson setup --reconfigure $B -Dbuildtype=release >/dev/null; } &&
	ninja -C $B >/dev/null || { echo "build failed"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for p in $(seq 1 "$pairs"); do
	for w in 0 1; do
		python3 tests/gpu/attach_stall.py --cuhook $B/src/cli/cuhook --out "$out/w$w-$p" --workload "$wl" --rounds 1 \
			--attach-args="--names-window $w" >"$out/w$w-$p.txt" 2>&1
		r=$(grep -o 'ratio [0-9.]*' "$out/w$w-$p.txt" | cut -d' ' -f2)
		n=$($B/src/cli/cuhook report "$out/w$w-$p/$wl-1.bin" 2>/dev/null | grep -m1 -o 'names window[^;]*' | cut -c1-120)
		k=$($B/src/cli/cuhook report "$out/w$w-$p/$wl-1.bin" 2>/dev/null | grep -m1 -E 'graph launches' | sed 's/^ *//' | cut -c1-160)
		echo "pair $p window $w: ratio ${r:-?} ${n} | ${k}"
		rm -f "$out/w$w-$p"/*.bin
	done
done | tee "$out/ab.txt"
python3 - "$out/ab.txt" <<'PY'
import re, statistics, sys
r = {0: [], 1: []}
for line in open(sys.argv[1]):
    m = re.match(r"pair \d+ window (\d): ratio ([\d.]+)", line)
    if m:
        r[int(m.group(1))].append(float(m.group(2)))
for w in (0, 1):
    if r[w]:
        print("window %d: %d rounds, ratios %s, median %.3f" % (w, len(r[w]), " ".join("%.3f" % x for x in r[w]),
                                                               statistics.median(r[w])))
PY
