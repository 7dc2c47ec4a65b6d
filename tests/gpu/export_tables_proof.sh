#!/bin/bash
# The functions behind cuGetExportTable on the real driver (issue 21). Run on the GPU machine from
# the project root, with the build dependencies carried in .devdeps (../shared/device/README.md),
# Unicorn's among them for the relocation check (apt-get download libunicorn-dev libunicorn2):
#   source .devdeps/use-deps.sh && bash tests/gpu/export_tables_proof.sh OUTDIR [steps...]
# Steps (default all, in this order): build gpt2 cupy check
#   gpt2, cupy  the workload untraced, under cuhook run (default options), and twice under
#               cuhook run --export-tables: outputs identical, every table's slots accounted for
#               and every refusal with its reason, calls per table function equal in the two
#               runs, tokens/s (GPT-2) or wall time (CuPy) side by side (export_tables_compare.py)
#   check       every function of every table the workloads asked for (their UUIDs, from the
#               traces' NOTEs) and of the tables export_names.c knows, read from the real libcuda
#               (export_tables_check.c), run against its relocated copy by cuhook-check-relocation:
#               0 mismatches expected
# Outputs and traces stay in OUTDIR; docs/validation.md records a run.
set -u
OUT=${1:?output directory}; shift
mkdir -p "$OUT"
STEPS=${*:-"build gpt2 cupy check"}
B=/tmp/build-gpu
CUHOOK=$B/src/cli/cuhook
HERE=tests/gpu
fail=0
step() { echo; echo "=== $*"; }

# workload NAME CMD...: the four runs and their comparison
workload() {
	local tag=$1; shift
	step "$tag: untraced, default, --export-tables twice"
	local t0 t1 t2 t3 t4
	t0=$(date +%s.%N)
	"$@" > "$OUT/$tag-plain.out" 2>&1 || { echo "untraced run failed"; tail -20 "$OUT/$tag-plain.out"; fail=1; return; }
	t1=$(date +%s.%N)
	"$CUHOOK" run --force -o "$OUT/$tag-default.bin" -- "$@" > "$OUT/$tag-default.out" 2>&1 || { echo "cuhook run failed"; tail -20 "$OUT/$tag-default.out"; fail=1; return; }
	t2=$(date +%s.%N)
	"$CUHOOK" run --export-tables --force -o "$OUT/$tag-et1.bin" -- "$@" > "$OUT/$tag-et1.out" 2>&1 || { echo "cuhook run --export-tables failed"; tail -20 "$OUT/$tag-et1.out"; fail=1; return; }
	t3=$(date +%s.%N)
	"$CUHOOK" run --export-tables --force -o "$OUT/$tag-et2.bin" -- "$@" > "$OUT/$tag-et2.out" 2>&1 || { echo "cuhook run --export-tables failed"; tail -20 "$OUT/$tag-et2.out"; fail=1; return; }
	t4=$(date +%s.%N)
	python3 $HERE/export_tables_compare.py --cuhook "$CUHOOK" --plain "$OUT/$tag-plain.out" \
		--default "$OUT/$tag-default.out" --et "$OUT/$tag-et1.out" "$OUT/$tag-et2.out" \
		--traces "$OUT/$tag-et1.bin" "$OUT/$tag-et2.bin" --uuids "$OUT/uuids.txt" \
		--time $(awk "BEGIN{print $t1-$t0, $t2-$t1, $t3-$t2, $t4-$t3}") || fail=1
	"$CUHOOK" report "$OUT/$tag-et1.bin" | sed -n '/^Calls behind the API/,/^$/p' | head -60
}

for s in $STEPS; do case $s in
build)
	step "build"
	{ { [ -d $B ] || meson setup $B -Dbuildtype=release >/dev/null; } && ninja -C $B >/dev/null; } || { echo "build failed"; exit 1; }
	gcc -O2 -Isrc/format -Isrc/trampoline $HERE/export_tables_check.c src/format/export_names.c \
		src/trampoline/export_table.c src/trampoline/func_extent.c -ldl -o $B/export_tables_check || { echo "export_tables_check build failed"; exit 1; }
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
	rm -f "$OUT/uuids.txt"
	;;
gpt2) workload gpt2 python3 $HERE/gpt2_infer.py --iters 6 ;;
cupy) workload cupy python3 $HERE/cupy_work.py --iters 20 ;;
check)
	step "check: every function of every table requested, on the real libcuda, under Unicorn"
	uu=$(sort -u "$OUT/uuids.txt" 2>/dev/null | tr '\n' ' ')
	$B/export_tables_check --list "$OUT/table-functions.txt" $uu > "$OUT/tables.out" 2>&1 || { echo "export_tables_check failed"; tail "$OUT/tables.out"; fail=1; continue; }
	grep -E '^(library|table|total)' "$OUT/tables.out"
	grep -E ' refused ' "$OUT/tables.out"
	lib=$(awk '/^library/ {print $2; exit}' "$OUT/tables.out")
	if [ ! -x $B/src/check/cuhook-check-relocation ]; then
		echo "cuhook-check-relocation not built (Unicorn missing: carry libunicorn-dev and libunicorn2 in .devdeps)"
		echo "the list is in $OUT/table-functions.txt: run it elsewhere against a copy of $lib"
		fail=1
		continue
	fi
	$B/src/check/cuhook-check-relocation --jobs 8 --list "$OUT/table-functions.txt" "$lib" | tee "$OUT/check.out" | grep -v '^    '
	grep -q 'mismatches: 0 functions, 0 states' "$OUT/check.out" || { echo "FAIL: relocation mismatches"; fail=1; }
	;;
*) echo "unknown step $s"; exit 2 ;;
esac; done
echo
[ $fail = 0 ] && echo "export tables proof: all checks passed" || echo "export tables proof: FAILED (see above)"
exit $fail
