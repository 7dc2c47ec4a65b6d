#!/bin/bash
# The fuzz suite (meson test --suite fuzz): builds the libFuzzer harnesses with clang
# (build.sh), makes seed corpora (tiny synthetic traces from gen_trace, small .so files of the
# build), replays every regression input (regress/), then fuzzes each harness for SECONDS.
#   run.sh BUILDDIR GEN_TRACE SECONDS SO_FILE...
#   run.sh --seconds-from-env BUILDDIR GEN_TRACE SO_FILE...   (CUHOOK_FUZZ_SECONDS, default 20)
# Exit 0: no crash; 1: a crash (the input is left in BUILDDIR/fuzz/artifacts); 77: skipped (no
# clang or no libFuzzer runtime). docs/fuzzing.md.
set -u
if [ "${1:-}" = --seconds-from-env ]; then
	build=${2:?}; gen=${3:?}; secs=${CUHOOK_FUZZ_SECONDS:-20}; shift 3
else
	build=${1:?}; gen=${2:?}; secs=${3:?}; shift 3
fi
here=$(cd "$(dirname "$0")" && pwd)
work="$build/fuzz"
mkdir -p "$work"
"$here/build.sh" "$work/bin" >"$work/build.log" 2>&1
rc=$?
if [ $rc -eq 77 ]; then
	cat "$work/build.log"
	exit 77
elif [ $rc -ne 0 ]; then
	cat "$work/build.log"
	echo "FAIL: building the fuzzers"
	exit 1
fi
rm -rf "$work/seeds" "$work/artifacts"
mkdir -p "$work/seeds/trace" "$work/seeds/elf" "$work/corpus/trace" "$work/corpus/elf" "$work/artifacts"
"$gen" basic "$work/seeds/trace/basic.bin" &&
	"$gen" basic "$work/seeds/trace/tsc.bin" --tsc --no-end &&
	"$gen" basic "$work/seeds/trace/one.bin" --one-clock --pid 7 --real-offset 1500000 &&
	"$gen" kernels "$work/seeds/trace/kernels.bin" &&
	"$gen" nocalls "$work/seeds/trace/nocalls.bin" &&
	"$gen" hot "$work/seeds/trace/counts.bin" --count --iterations 48 --tsc &&
	"$gen" big "$work/seeds/trace/small.bin" --calls 60 --threads 2 &&
	"$gen" gpu "$work/seeds/trace/gpu.bin" &&
	"$gen" gpu "$work/seeds/trace/gpu-tsc.bin" --tsc &&
	"$gen" basic "$work/seeds/trace/gpu-refused.bin" --gpu-session other-user &&
	"$gen" basic "$work/seeds/trace/v5.bin" --v5 &&
	"$gen" basic "$work/seeds/trace/v5-epoch.bin" --tsc --tsc-start $(((1 << 38) - 2603000)) --v5-long-exits &&
	"$gen" hot "$work/seeds/trace/v5-counts.bin" --count --iterations 48 --tsc --v5 &&
	"$gen" gpu "$work/seeds/trace/v5-gpu.bin" --v5 || { echo "FAIL: gen_trace"; exit 1; }
for so in "$@"; do
	cp "$so" "$work/seeds/elf/$(basename "$so")"
done
fail=0
# regressions: every input that once crashed must run clean
for h in trace elf; do
	if ls "$here/regress/$h"/* >/dev/null 2>&1; then
		if ! "$work/bin/fuzz_$h" "$here/regress/$h"/* >"$work/regress-$h.log" 2>&1; then
			tail -n 30 "$work/regress-$h.log"
			echo "FAIL: fuzz_$h on a regression input"
			fail=1
		else
			echo "fuzz_$h: $(ls "$here/regress/$h" | wc -l) regression input(s) ok"
		fi
	fi
done
for h in trace elf; do
	"$work/bin/fuzz_$h" -max_total_time="$secs" -print_final_stats=1 -timeout=25 \
		-artifact_prefix="$work/artifacts/$h-" "$work/corpus/$h" "$work/seeds/$h" >"$work/fuzz-$h.log" 2>&1
	r=$?
	runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/fuzz-$h.log" | grep -o '[0-9]*$')
	echo "fuzz_$h: ${runs:-?} executions in ${secs} s, exit $r"
	if [ $r -ne 0 ]; then
		grep -B5 -A30 -m1 'ERROR\|runtime error\|deadly signal' "$work/fuzz-$h.log" | head -60
		echo "FAIL: fuzz_$h found a crash: $(ls "$work/artifacts")"
		fail=1
	fi
done
exit $fail
