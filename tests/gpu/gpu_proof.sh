#!/bin/bash
# The GPU timeline on a real GPU (issue 16). Run on the GPU machine from the project root:
#   source .devdeps/use-deps.sh && bash tests/gpu/gpu_proof.sh OUTDIR [steps...]
# Steps (default all but stacks, stackcost): build gpt2 report matmul cupy attach cost stacks stackcost
# Each step prints what it compared; the outputs and traces stay in OUTDIR. docs/validation.md
# records a run. Needs PyTorch, transformers and CuPy, and CUPTI (the toolkit's, for the
# ground-truth counter).
set -u
export PYTHONPATH="$PWD/tests/lib${PYTHONPATH:+:$PYTHONPATH}"  # the tests' helper library (cuhooktest)
OUT=${1:?output directory}; shift
mkdir -p "$OUT"
STEPS=${*:-"build gpt2 report matmul cupy attach cost"}
B=/tmp/build-gpu
CUHOOK=$B/src/cli/cuhook
HERE=tests/gpu
CUPTI_LIB=$(dirname "$(ls /usr/local/cuda/extras/CUPTI/lib64/libcupti.so /usr/local/cuda/lib64/libcupti.so 2>/dev/null | head -1)")
fail=0
step() { echo; echo "=== $*"; }

# compare: run SCRIPT ARGS under cuhook --gpu and under torch.profiler, compare the GPU records
torch_compare() {
	local tag=$1; shift
	step "$tag: cuhook run --gpu against torch.profiler (activities=[CUDA])"
	"$CUHOOK" run --gpu --force -o "$OUT/$tag.bin" -- python3 "$@" > "$OUT/$tag-cuhook.out" 2>&1 || { echo "cuhook run failed"; tail -20 "$OUT/$tag-cuhook.out"; fail=1; return; }
	tail -3 "$OUT/$tag-cuhook.out"
	python3 $HERE/torch_kernels.py --out "$OUT/$tag-torch.json" "$@" > "$OUT/$tag-torch.out" 2>&1 || { echo "torch.profiler run failed"; tail -20 "$OUT/$tag-torch.out"; fail=1; return; }
	tail -3 "$OUT/$tag-torch.out"
	python3 $HERE/gpu_check.py --trace "$OUT/$tag.bin" --torch "$OUT/$tag-torch.json" || fail=1
}

for s in $STEPS; do case $s in
build)
	step "build"
	{ meson setup $B -Dbuildtype=release >/dev/null && ninja -C $B >/dev/null; } || { echo "build failed"; exit 1; }
	gcc -shared -fPIC -O2 -I/usr/local/cuda/include -o $B/libcupti_activity_counter.so $HERE/cupti_activity_counter.c \
		-L$CUPTI_LIB -lcupti -Wl,-rpath,$CUPTI_LIB || { echo "counter build failed"; exit 1; }
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
	;;
gpt2) torch_compare gpt2 $HERE/gpt2_infer.py --iters 3 ;;
matmul) torch_compare matmul $HERE/matmul100.py ;;
cupy)
	step "cupy: cuhook run --gpu against CUPTI's own activity records (cupti_activity_counter)"
	CUDA_INJECTION64_PATH=$B/libcupti_activity_counter.so CUPTI_COUNTER_OUT="$OUT/cupy-cupti.json" \
		python3 $HERE/cupy_work.py --iters 5 > "$OUT/cupy-cupti.out" 2>&1 || { echo "counter run failed"; tail "$OUT/cupy-cupti.out"; fail=1; }
	tail -2 "$OUT/cupy-cupti.out"
	"$CUHOOK" run --gpu --force -o "$OUT/cupy.bin" -- python3 $HERE/cupy_work.py --iters 5 > "$OUT/cupy-cuhook.out" 2>&1 || { echo "cuhook run failed"; tail "$OUT/cupy-cuhook.out"; fail=1; }
	tail -2 "$OUT/cupy-cuhook.out"
	python3 $HERE/gpu_check.py --trace "$OUT/cupy.bin" --cupti "$OUT/cupy-cupti.json" || fail=1
	;;
attach)
	step "attach --gpu twice to a running GPT-2 loop; then under an active torch.profiler"
	python3 $HERE/gpu_attach.py --cuhook "$CUHOOK" --out "$OUT" || fail=1
	;;
cost)
	step "cost: GPT-2 tokens/s untraced, cuhook --gpu, torch.profiler, side by side"
	python3 $HERE/gpu_cost.py --cuhook "$CUHOOK" --out "$OUT" --rounds 3 || fail=1
	;;
stacks)
	step "stacks: GPT-2 under cuhook run --stacks 'cuMemAlloc*,cuLaunchKernel*' (issue 17)"
	python3 $HERE/gpt2_infer.py --iters 3 > "$OUT/stacks-untraced.out" 2>&1 || { echo "untraced run failed"; fail=1; }
	"$CUHOOK" run --stacks 'cuMemAlloc*,cuLaunchKernel*' --force -o "$OUT/gpt2-stacks.bin" -- python3 $HERE/gpt2_infer.py --iters 3 \
		> "$OUT/stacks-cuhook.out" 2>&1 || { echo "cuhook run failed"; tail -20 "$OUT/stacks-cuhook.out"; fail=1; }
	# the same token checksums traced and untraced
	a=$(grep -o 'checksum [0-9a-f]*' "$OUT/stacks-untraced.out" | sort -u); b=$(grep -o 'checksum [0-9a-f]*' "$OUT/stacks-cuhook.out" | sort -u)
	echo "checksums untraced: $a; traced: $b"; [ -n "$a" ] && [ "$a" = "$b" ] || { echo "outputs differ"; fail=1; }
	python3 $HERE/stacks_check.py --cuhook "$CUHOOK" --trace "$OUT/gpt2-stacks.bin" --globs 'cuMemAlloc*,cuLaunchKernel*' || fail=1
	"$CUHOOK" report "$OUT/gpt2-stacks.bin" > "$OUT/gpt2-stacks-report.txt" 2>&1
	sed -n '/^Call sites/,/^$/p' "$OUT/gpt2-stacks-report.txt" | head -40
	;;
stackcost)
	step "stackcost: a stacked call's cost (bench/stack_cost) and GPT-2 tokens/s with and without stacks"
	$B/bench/bench_stack_cost --agent $B/src/agent/libcuhook.so || fail=1
	python3 bench/py_stack_cost.py --cuhook "$CUHOOK" --lib libcuda.so.1 --rounds 5 || fail=1
	python3 $HERE/gpu_cost.py --cuhook "$CUHOOK" --out "$OUT" --rounds 3 \
		--sides "untraced,cuhook --no-stacks,cuhook --stacks rare,cuhook --stacks launches" || fail=1
	;;
report)
	step "report of the GPT-2 trace (GPU section and findings)"
	"$CUHOOK" report "$OUT/gpt2.bin" > "$OUT/gpt2-report.txt" 2>&1 || fail=1
	sed -n '/GPU/,$p' "$OUT/gpt2-report.txt" | head -120
	;;
*) echo "unknown step $s"; exit 2 ;;
esac; done
echo
[ $fail = 0 ] && echo "gpu_proof: PASS" || echo "gpu_proof: FAIL"
exit $fail
