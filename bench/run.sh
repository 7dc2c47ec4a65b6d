#!/bin/bash
# Added nanoseconds per traced call, side by side in one run: untraced, cuhook, and an
# LD_PRELOAD wrapper that records the same fields; then a stacked call (--stacks) beside the same
# call recorded without a stack; then sustained recording (issue 18's targets).
# Usage: bash bench/run.sh [N]; SUSTAINED_N=CALLS sets the sustained runs' calls (10^7).
set -eu
cd "$(dirname "$0")/.."
bash scripts/build.sh
b=build/bench
n=${1:-200000}
agent=$(readlink -f build/src/agent/libcuhook.so)
r1=$("$b/bench_overhead" --agent "$agent" -n "$n")
r2=$(LD_PRELOAD=$(readlink -f $b/libbench_preload.so) "$b/bench_overhead" -n "$n")
get() { echo "$1" | awk -v k="$2" '$1 == k { print $2 }'; }
python3 - "$(get "$r1" rdtsc)" "$(get "$r1" plain)" "$(get "$r1" cuhook)" "$(get "$r2" plain)" "$(get "$r1" counted)" <<'PY'
import sys
rdtsc, plain, cuhook, preload, counted = map(float, sys.argv[1:])
print(f"timestamp read (rdtsc)      {rdtsc:7.2f} ns")
print(f"untraced call               {plain:7.2f} ns")
print(f"cuhook traced call          {cuhook:7.2f} ns   added {cuhook - plain:6.2f} ns  ({cuhook / plain:5.1f}x)")
print(f"cuhook, counted (--count)   {counted:7.2f} ns   added {counted - plain:6.2f} ns  (no per-call record)")
print(f"LD_PRELOAD wrapper          {preload:7.2f} ns   added {preload - plain:6.2f} ns  ({preload / plain:5.1f}x)")
goal = 2 * rdtsc + 5
print(f"goal: added <= 2 x rdtsc + 5 = {goal:.2f} ns -> {'met' if cuhook - plain <= goal else 'NOT met'}")
PY
# The cost of a stacked call (--stacks), native frames only, beside the same call recorded
# without a stack: medians of calls timed one by one (bench/stack_cost.c), and the first call.
r3=$("$b/bench_stack_cost" --agent "$agent")
python3 - "$(get "$r3" frames)" "$(get "$r3" plain)" "$(get "$r3" recorded)" "$(get "$r3" stacked)" \
  "$(get "$r3" first_stacked)" <<'PY'
import sys
frames, plain, recorded, stacked, first = sys.argv[1], *map(float, sys.argv[2:])
print(f"call from {frames} native frames, median of calls timed one by one:")
print(f"  untraced {plain:9.1f} ns   recorded {recorded:9.1f} ns   stacked {stacked:9.1f} ns"
      f"   (the stack adds {stacked - recorded:.0f} ns)")
print(f"  the first stacked call from that call site (one sample): {first:9.1f} ns")
print(f"stacks default rule (issue 17): a stacked call <= 2 us -> {'met' if stacked <= 2000 else 'NOT met'}")
PY
# The same from Python (ctypes, 20 nested Python functions): native and Python frames walked.
python3 bench/py_stack_cost.py --cuhook build/src/cli/cuhook --lib "$(readlink -f build/tests/fakecuda/libcuda.so)"
# Sustained recording (issue 18): 1 and 2 threads recording into a trace file with the agent's
# defaults beside the burst cost, trace bytes per call, drop mode at half the lossless rate
# (bench/sustained.c; docs/performance.md "Sustained recording").
"$b/bench_sustained" --agent "$agent" -n "${SUSTAINED_N:-10000000}"
# The report's reading speed: a 3 M-call, 4-thread synthetic trace (tests/report/gen_trace.c),
# best of 5 reads (tests/report/bench_reader.c; the goal is >= 50 M events/s), in version 4's
# records and in version 5's compact ones (the same calls).
big=$(mktemp -d)
for v in 4 5; do
	echo "version $v records:"
	build/tests/report/gen_trace big "$big/big.bin" --calls 3000000 --threads 4 --tsc $([ $v = 5 ] && echo --v5)
	build/tests/report/bench_reader --repeat 5 "$big/big.bin"
	rm -f "$big/big.bin"
done
rm -rf "$big"
