#!/bin/bash
# cuhook report at scale (issue 19's targets), in one run: time and peak RSS of the text report
# and of --format folded and each streamed export (streaming: the default for a file this size),
# of the same read whole, and of each export read whole, on an N-call, 4-thread trace from tests/report/gen_trace big (version 5 records, TSC
# clock, as the agent writes them), beside uftrace's report (uftrace record of
# bench/uftrace_calls.c, built with -pg, making N calls on 4 threads).
# Usage: bash bench/report_scale.sh [N] [EXPORT_N]
#   N         calls of the text reports and uftrace's (default 5e7)
#   EXPORT_N  calls of the trace the whole-read runs use (--no-stream and the exports; default N):
#             those keep every call, about 200 bytes each, so a smaller trace keeps them within
#             the machine's memory; 0 skips them.
# Every file is written under one mktemp -d directory, removed at the end; the streamed exports
# write to /dev/null (at 5x10^7 calls a jsonl export is about 15 GB).
# CUHOOK=EXE GEN_TRACE=EXE: measure those binaries (a copy, while the tree is rebuilt) instead of
# building the tree's.
set -eu
cd "$(dirname "$0")/.."
n=${1:-50000000}
xn=${2:-$n}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "${CUHOOK:-}" ]; then
	cuhook=$CUHOOK
	gen=${GEN_TRACE:?GEN_TRACE=EXE goes with CUHOOK}
else
	bash scripts/build.sh
	cuhook=build/src/cli/cuhook
	gen=build/tests/report/gen_trace
fi

# measure LABEL CMD...: wall time and peak RSS (GNU time: the child's getrusage); OUT=FILE: its
# stdout there (default: a file in $work)
measure() {
	local label=$1
	shift
	if ! /usr/bin/time -f "%e %M" -o "$work/time" "$@" > "${OUT:-$work/out}" 2> "$work/err"; then
		echo "$label: failed: $(tail -3 "$work/err")"
		return
	fi
	read -r s kb < <(tail -1 "$work/time")
	printf "  %-44s %8.2f s  %9.1f MiB\n" "$label" "$s" "$(echo "$kb / 1024" | bc -l)"
}

"$gen" big "$work/big.bin" --calls "$n" --threads 4 --tsc --v5
echo "cuhook trace: $n calls, 4 threads, $(($(stat -c %s "$work/big.bin") >> 20)) MiB"
if command -v uftrace > /dev/null; then
	cc -O2 -pg -o "$work/uftrace_calls" bench/uftrace_calls.c -lpthread
	uftrace record -d "$work/uftrace.data" "$work/uftrace_calls" "$n" 4
	echo "uftrace trace: $n calls of leaf() on 4 threads, $(du -sm "$work/uftrace.data" | cut -f1) MiB"
else
	echo "uftrace not installed (apt-get install uftrace): its report is not measured"
fi
echo "report of $n calls               time       peak RSS"
measure "cuhook report (text, streaming)" "$cuhook" report --no-color "$work/big.bin"
measure "cuhook report --format folded (streaming)" "$cuhook" report --format folded "$work/big.bin"
for f in json jsonl csv chrome perfetto; do
	OUT=/dev/null measure "cuhook report --format $f --stream" "$cuhook" report --stream --format "$f" "$work/big.bin"
done
measure "cuhook report --format sqlite --stream" "$cuhook" report --stream --format sqlite -o "$work/out.sqlite" "$work/big.bin"
echo "  (database: $(($(stat -c %s "$work/out.sqlite") >> 20)) MiB)"
rm -f "$work/out.sqlite"
if [ -d "$work/uftrace.data" ]; then
	measure "uftrace report" uftrace report -d "$work/uftrace.data"
	measure "cuhook report (text, streaming) again" "$cuhook" report --no-color "$work/big.bin"
	measure "uftrace report again" uftrace report -d "$work/uftrace.data"
	rm -rf "$work/uftrace.data"
fi
[ "$xn" = 0 ] && exit 0
if [ "$xn" != "$n" ]; then
	rm -f "$work/big.bin"
	"$gen" big "$work/big.bin" --calls "$xn" --threads 4 --tsc --v5
fi
echo "whole reads of $xn calls ($(($(stat -c %s "$work/big.bin") >> 20)) MiB)"
measure "cuhook report --stream (text)" "$cuhook" report --stream --no-color "$work/big.bin"
measure "cuhook report --no-stream (text)" "$cuhook" report --no-stream --no-color "$work/big.bin"
measure "cuhook report --format folded --no-stream" "$cuhook" report --format folded --no-stream "$work/big.bin"
for f in json csv jsonl chrome perfetto; do
	measure "cuhook report --format $f" "$cuhook" report --format "$f" -o "$work/out.$f" "$work/big.bin"
	rm -f "$work/out.$f"
done
measure "cuhook report --format sqlite" "$cuhook" report --format sqlite -o "$work/out.sqlite" "$work/big.bin"
