#!/bin/bash
# The unstacked burst cost of two agents side by side (bench/overhead.c, one bench binary), in
# alternating runs: DIR holds bench_overhead and libbench_standin.so (bench/ of a release build)
# and old/libcuhook.so, new/libcuhook.so (the two agents to compare). Usage:
#   bash tests/gpu/burst_ab.sh DIR [RUNS]
# Prints each run's added ns per call and the medians (docs/validation/stacks-h100.txt).
set -eu
dir=$(readlink -f "${1:?directory}")
runs=${2:-10}
out=$(mktemp)
for i in $(seq "$runs"); do
	for s in old new; do
		r=$(LD_LIBRARY_PATH="$dir" "$dir/bench_overhead" --agent "$dir/$s/libcuhook.so" -n 200000)
		echo "$s $(echo "$r" | awk '$1=="plain"{p=$2} $1=="cuhook"{c=$2} END{printf "plain %s cuhook %s added %.2f", p, c, c-p}')"
	done
done | tee "$out"
python3 - "$out" <<'PY'
import statistics, sys
d = {"old": [], "new": []}
for line in open(sys.argv[1]):
    f = line.split()
    d[f[0]].append(float(f[6]))
for k in ("old", "new"):
    print(k, "median added ns", round(statistics.median(d[k]), 2), "min", min(d[k]), "max", max(d[k]))
print("new - old (medians): %.2f ns" % (statistics.median(d["new"]) - statistics.median(d["old"])))
PY
rm -f "$out"
