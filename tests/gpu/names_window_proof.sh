#!/bin/bash
# The names window on a GPU machine (run there from the repo root,
# carrying .devdeps):
#   bash tests/gpu/names_window_proof.sh OUTDIR [ROUNDS]
# Builds cuhook (as attach_names.sh), then attaches to attach_stall.py's JAX loop (95 threads,
# its graphs instantiated before the attach) ROUNDS times each with the names window off
# (--names-window 0), with the window (--names-window 1, off by default since), and with --gpu; every round checks that the
# program ran to its end (workload status 0) and prints the stall figures; the traces' notes on
# the window and the GPU session, and the program's first error lines if any, follow.
set -u
out=${1:-/tmp/names-window}
rounds=${2:-2}
mkdir -p "$out"
if [ -f .devdeps/use-deps.sh ]; then
	# shellcheck disable=SC1091
	source .devdeps/use-deps.sh
	export LDFLAGS="-Wl,-rpath,/tmp/deps/usr/lib/x86_64-linux-gnu"
fi
if [ ! -x /tmp/build/src/cli/cuhook ]; then
	echo "== build"
	(meson setup /tmp/build -Dbuildtype=release >/tmp/meson-setup.log 2>&1 && ninja -C /tmp/build >/tmp/ninja.log 2>&1) \
	  || { tail -n 30 /tmp/meson-setup.log /tmp/ninja.log; exit 1; }
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for mode in off window gpu; do
	case $mode in
	off) args="--names-window 0" ;;
	window) args="--names-window 1" ;;
	gpu) args="--gpu" ;;
	esac
	echo "== $mode: cuhook attach $args"
	python3 tests/gpu/attach_stall.py --cuhook /tmp/build/src/cli/cuhook --out "$out/$mode" --workload jax \
		--rounds "$rounds" --attach-args="$args" 2>&1 | cut -c1-400
	for r in $(seq 1 "$rounds"); do
		b="$out/$mode/jax-$r"
		[ -f "$b.bin" ] && /tmp/build/src/cli/cuhook report "$b.bin" 2>&1 |
			grep -E '^  note .*(names window|GPU:)|^  gpu |graph launches' | cut -c1-300 | sed "s/^/$mode $r: /"
		grep -m3 -E 'Error|error:|Traceback' "$b.err" 2>/dev/null | cut -c1-300 | sed "s/^/$mode $r program: /"
		rm -f "$b.bin"
	done
done
