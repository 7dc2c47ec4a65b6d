#!/bin/bash
# Two builds of the agent side by side on the GPU machine, in one run: this tree and an older one
# (a `git archive` tarball of it), each measured the same way, interleaved, so that the machine
# of the day is the same for both:
#   - cuCtxGetCurrent on the real driver (tests/gpu/ctx_get_current_bench.c), added ns per call;
#   - the stand-in loop of bench/overhead.c, hot and with --pollute (the caches a real program
#     leaves between two driver calls);
#   - GPT-2 generation traced against untraced in one process (tests/gpu/ab_gpt2.py).
# Usage (device tool, from the repository root, carrying .devdeps):
#   git archive OLD_REV -o old.tar        # here, before the run (untracked, so it travels)
#   bash tests/gpu/ab_compare.sh $OUT old.tar [NAME=OTHER.tar ...]
# (each NAME=OTHER.tar adds one more build, measured interleaved with the others)
# Environment: AB_PHASES ("ctx bench gpt2"), AB_ROUNDS (10), AB_SETTLE (seconds to wait after
# each start and stop of the agent in the GPT-2 runs, a list: "0 0.5" runs both), AB_OPTIONS
# (agent options to compare in the GPT-2 runs, separated by '|': "|buffer_kb=16384" runs the
# defaults and a 16 MiB ring; "count=|" every call recorded, then the defaults, which count the
# runtime's two per-launch queries), AB_TRACE_DIR (where the GPT-2 traces go; default the work folder),
# AB_GPT2_ARGS (more arguments for ab_gpt2.py, e.g. "--gc collect"), AB_CTX_REPS (3: rounds of the
# cuCtxGetCurrent phase).
# Writes $OUT/ab.txt (everything printed) and $OUT/ab-*.json (the GPT-2 summaries).
set -u
OUT=${1:?usage: ab_compare.sh OUT [OLD.tar]}
OLD_TAR=${2:-}
ROUNDS=${AB_ROUNDS:-10}
PHASES=${AB_PHASES:-ctx bench gpt2}
# agent options of the GPT-2 runs, ';'-separated within one entry, entries separated by '|'
IFS='|' read -r -a AB_OPTS <<< "${AB_OPTIONS:-}"
[ ${#AB_OPTS[@]} -eq 0 ] && AB_OPTS=("")
W=/tmp/cuhook-ab
rm -rf "$W" && mkdir -p "$W" "$OUT"
exec > >(tee "$OUT/ab.txt") 2>&1

if [ -f .devdeps/use-deps.sh ]; then
	# shellcheck disable=SC1091
	source .devdeps/use-deps.sh
	export LDFLAGS="-Wl,-rpath,/tmp/deps/usr/lib/x86_64-linux-gnu"
fi
build() { # SRC BUILD
	(cd "$1" && meson setup "$2" -Dbuildtype=release > "$2.log" 2>&1 &&
		ninja -C "$2" src/agent/libcuhook.so bench/bench_overhead >> "$2.log" 2>&1) ||
		{ echo "build of $1 failed:"; tail -n 30 "$2.log"; return 1; }
}
variants=(new)
build "$PWD" "$W/new" || exit 1
declare -A AGENT=([new]=$W/new/src/agent/libcuhook.so)
if [ -n "$OLD_TAR" ]; then
	mkdir -p "$W/old-src" && tar -xf "$OLD_TAR" -C "$W/old-src"
	if build "$W/old-src" "$W/old"; then
		variants=(old new)
		AGENT[old]=$W/old/src/agent/libcuhook.so
	fi
fi
for more in "${@:3}"; do
	name=${more%%=*}
	mkdir -p "$W/$name-src" && tar -xf "${more#*=}" -C "$W/$name-src"
	if build "$W/$name-src" "$W/$name"; then
		variants+=("$name")
		AGENT[$name]=$W/$name/src/agent/libcuhook.so
	fi
done
LIBCUDA_DIR=$(dirname "$(ldconfig -p | awk '/libcuda.so.1 /{print $NF; exit}')")
gcc -O2 -I/usr/local/cuda/include -o "$W/ctx_bench" tests/gpu/ctx_get_current_bench.c \
	-L"$LIBCUDA_DIR" -l:libcuda.so.1 -ldl || exit 1
gcc -O2 -shared -fPIC -fvisibility=hidden -I/usr/local/cuda/include -o "$W/libpreload_wrapper.so" \
	tests/gpu/preload_wrapper.c -ldl || exit 1
PY=python3
[ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3

echo "== machine"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
grep -m1 "model name" /proc/cpuinfo
echo "variants: ${variants[*]}"

has() { [[ " $PHASES " == *" $1 "* ]]; }
has ctx && echo "== cuCtxGetCurrent, real driver (best of 5 loops of 200000 calls per process)"
has ctx && echo "   ('with the wrapper': the LD_PRELOAD wrapper preloaded, compared with that build's agent inside"
has ctx && echo "    one process: ctx_get_current_bench.c)"
has ctx && for rep in $(seq 1 "${AB_CTX_REPS:-3}"); do
	for v in "${variants[@]}"; do
		echo -n "$v: "
		"$W/ctx_bench" "${AGENT[$v]}" "$W/ctx-$v.bin" 200000 | tail -n 1
	done
	for v in "${variants[@]}"; do
		echo -n "$v with the wrapper: "
		LD_PRELOAD=$W/libpreload_wrapper.so PRELOAD_WRAPPER_OUT=/dev/null \
			"$W/ctx_bench" "${AGENT[$v]}" "$W/ctx-$v.bin" 200000 | tail -n 2 | head -n 1
	done
done
# cuhook minus the wrapper inside one process, per build: the median over the rounds
has ctx && sleep 1 && for v in "${variants[@]}"; do
	grep "^$v with the wrapper: same process" "$OUT/ab.txt" | sed 's/[(),]/ /g' |
		awk '{ w = c = ""; for (i = 1; i <= NF; i++) { if ($i == "wrapper" && $(i+1) ~ /^[0-9]/ && w == "") w = $(i+1);
			if ($i == "cuhook" && $(i+1) ~ /^[0-9]/ && c == "") c = $(i+1) } print c - w }' | sort -g |
		awk -v v="$v" '{ d[NR] = $1 } END { if (NR) printf "%s: cuhook minus wrapper, same process, median of %d: %+.2f ns\n", v, NR,
			(NR % 2) ? d[(NR + 1) / 2] : (d[NR / 2] + d[NR / 2 + 1]) / 2 }'
done

has bench && echo "== stand-in loop (bench/overhead.c): hot, then --pollute 256 and 1024 KB between calls"
has bench && for rep in 1 2 3; do
	for v in "${variants[@]}"; do
		for p in 0 256 1024; do
			if [ "$p" = 0 ]; then n=200000; else n=20000; fi
			echo -n "$v pollute $p: "
			"$W/new/bench/bench_overhead" --agent "${AGENT[$v]}" -n $n --pollute $p | tr '\n' ' '
			echo
		done
	done
done

has gpt2 && echo "== GPT-2, traced against untraced in one process ($ROUNDS rounds per process)"
has gpt2 && for settle in ${AB_SETTLE:-0}; do
	for rep in 1 2; do
		for v in "${variants[@]}"; do
			for opts in "${AB_OPTS[@]}"; do
				echo "-- $v, process $rep, settle $settle s, options '$opts'"
				timeout 250 "$PY" tests/gpu/ab_gpt2.py --agent "${AGENT[$v]}" --rounds "$ROUNDS" \
					--settle "$settle" --opts "$opts" --trace-dir "${AB_TRACE_DIR:-$W}" ${AB_GPT2_ARGS:-} |
					grep -v "^\[transformers\]"
			done
		done
	done
done
has gpt2 && ls -la "$W"/ab-*.bin | tail -n 2
echo "== done"
