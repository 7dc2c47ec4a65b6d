#!/bin/bash
# Leave it on (issue 18) on a real GPU. Run on the GPU machine from the project root:
#   source .devdeps/use-deps.sh && bash tests/gpu/leave_proof.sh OUTDIR [steps...]
# Steps (default all): build gpt2 ab bytes sustained burst
#   build      release build in /tmp/build-gpu (and, when .ab/old holds an older tree, its agent
#              in /tmp/build-old for `burst`)
#   gpt2       GPT-2 under cuhook run --gpu against torch.profiler (tests/gpu/gpu_proof.sh's check)
#   ab         GPT-2 tokens/s in one process, side by side (ab_gpt2.py): untraced, the defaults,
#              recorded in full (count= empty), the flight recorder (flight=8M)
#   bytes      bytes per recorded call of those traces (the whole file over its ENTRY records)
#   sustained  bench/sustained (2 threads, 10^7 calls; bytes per call; drop mode)
#   burst      the burst cost of the old agent and this one, alternating (burst_ab.sh)
# docs/validation.md records a run.
set -u
export PYTHONPATH="$PWD/tests/lib${PYTHONPATH:+:$PYTHONPATH}"  # the tests' helper library (cuhooktest)
OUT=${1:?output directory}; shift
mkdir -p "$OUT"
STEPS=${*:-"build gpt2 ab bytes sustained burst"}
B=/tmp/build-gpu
HERE=tests/gpu
fail=0
step() { echo; echo "=== $*"; }
for s in $STEPS; do case $s in
build)
	bash $HERE/gpu_proof.sh "$OUT" build || exit 1
	if [ -d .ab/old ]; then
		step "build the older agent (.ab/old) for the burst comparison"
		(cd .ab/old && meson setup /tmp/build-old -Dbuildtype=release >/dev/null && ninja -C /tmp/build-old >/dev/null) ||
			{ echo "old build failed"; fail=1; }
	fi
	;;
gpt2) bash $HERE/gpu_proof.sh "$OUT" gpt2 || fail=1 ;;
ab)
	step "ab: GPT-2 tokens/s untraced, defaults, recorded in full, flight recorder (one process)"
	mkdir -p "$OUT/ab"
	python3 $HERE/ab_gpt2.py --agent $B/src/agent/libcuhook.so --rounds 12 --warm 1 --trace-dir "$OUT/ab" \
		--opts "" --opts "count=" --opts "flight=8M" --json "$OUT/ab.json" > "$OUT/ab.out" 2>&1 || fail=1
	tail -4 "$OUT/ab.out"
	;;
bytes)
	step "bytes: trace bytes per recorded call (whole file / ENTRY records), GPT-2 traces of 'ab'"
	python3 - "$OUT/ab" <<'PY'
import glob, os, sys, statistics
from cuhooktest import tracefile
names = {"0": "defaults", "1": "recorded in full", "2": "flight recorder (exit dump)"}
per = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "ab-*-*.bin"))):
    side = f.rsplit("-", 1)[1].split(".")[0]
    t = tracefile.read_trace(f)
    calls = sum(t.entries.values())
    if calls:
        per.setdefault(side, []).append((os.path.getsize(f) / calls, calls, os.path.getsize(f)))
for side, v in sorted(per.items()):
    b = [x[0] for x in v]
    print(f"{names.get(side, side):28s} {len(v)} traces: median {statistics.median(b):.2f} bytes per recorded "
          f"call (min {min(b):.2f}, max {max(b):.2f}); median {statistics.median(x[1] for x in v):.0f} calls, "
          f"{statistics.median(x[2] for x in v) / 1e6:.2f} MB")
PY
	;;
sustained)
	step "sustained: bench/sustained (1 and 2 threads, 10^7 calls; bytes per call; drop mode)"
	LD_LIBRARY_PATH=$B/bench $B/bench/bench_sustained --agent $B/src/agent/libcuhook.so || fail=1
	;;
burst)
	step "burst: the older agent and this one, alternating (bench_overhead, 200000 calls, 10 runs each)"
	if [ -f /tmp/build-old/src/agent/libcuhook.so ]; then
		d=$(mktemp -d)
		cp $B/bench/bench_overhead $B/bench/libbench_standin.so "$d"/
		mkdir -p "$d/old" "$d/new"
		cp /tmp/build-old/src/agent/libcuhook.so "$d/old/"; cp $B/src/agent/libcuhook.so "$d/new/"
		bash $HERE/burst_ab.sh "$d" 10 || fail=1
		rm -rf "$d"
	else
		echo "no older agent built (.ab/old)"; fail=1
	fi
	;;
*) echo "unknown step $s"; exit 2 ;;
esac; done
echo
[ $fail = 0 ] && echo "leave_proof: PASS" || echo "leave_proof: FAIL"
exit $fail
