#!/bin/bash
# Issue 5's proof, on the GPU machine (through the device tool, carrying .devdeps), from the
# repository root:
#
#   bash tests/gpu/proof.sh OUTDIR
#
# docs/validation-proof.md says what it does and how to read the results. In short:
#  1. builds cuhook (release) and the helpers of tests/gpu (nvcc/gcc there);
#  2. runs four workloads — driver_app (driver API), runtime_app (runtime API), an MLP and GPT-2
#     in PyTorch — untraced, under `cuhook run`, with the CUPTI counter, with the LD_PRELOAD
#     wrapper, and under `cuhook run` with the CUPTI counter in the same process; the looping
#     ones also under `cuhook attach` mid-run; checks their checksums are identical;
#  3. compares cuhook's call counts with CUPTI's (and, for the C programs, with the program's own
#     count and cuda-gdb breakpoint hits);
#  4. measures tokens/s and forward passes/s in each configuration, and the ns per call each
#     tracer adds to cuCtxGetCurrent;
#  5. writes OUTDIR/results.json, OUTDIR/results.md and OUTDIR/raw.tar.gz (every output, no
#     traces). A failing step is recorded and the script goes on; steps are skipped, and
#     recorded as such, once the time budget is spent.
#
# Parameters (environment), with defaults sized for about 6 minutes on an H200:
#   PROOF_BUDGET_S=500   no step starts after this many seconds (the device's limit is 600)
#   PROOF_PHASES="apps ctx gpt2 ab mlp attach gdb"   which phases to run, in this order
#   AB_ROUNDS=20 AB_PROCS=3 AB_COUNT=   phase ab: GPT-2 in one process (tests/gpu/ab_gpt2.py),
#                        untraced / recorded in full (count=, `--record-all`) / traced with the
#                        agent's default options (which count CUHOOK_COUNT_DEFAULT), or counting
#                        AB_COUNT instead when it is set, in AB_PROCS processes one after the other
#   AB_CPUS=             phase ab under `taskset -c AB_CPUS` (e.g. 2-5); empty: not pinned
#   AB_WARM=1            phase ab: untimed generations after each start and stop of the agent,
#                        every side (0: time the first generation after patching too)
#   PROOF_WORK=/tmp/cuhook-proof   work folder (emptied first); traces stay there
#   APP_LAUNCHES=500 APP_ELEMS=1048576 APP_SYNC_EVERY=100   driver_app / runtime_app arguments
#   GPT2_PROCS=2 GPT2_ITERS=12 GPT2_TOKENS=32   processes per configuration, iterations each
#   MLP_PROCS=2 MLP_ITERS=20 MLP_PASSES=200     (the first iteration of each is a warm-up)
#   CTX_REPS=3 CTX_N=200000   cuCtxGetCurrent bench: runs per configuration, calls per loop
#   ATTACH_LOOP_S=20 ATTACH_S=5   the attached loop's length, the attach window
#   GPT2_SCRIPT, MLP_SCRIPT, LIBCUDA   other workload scripts or driver (for trying this elsewhere)
set -u

OUT=${1:?usage: bash tests/gpu/proof.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 1
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)

: "${PROOF_BUDGET_S:=500}" "${PROOF_PHASES:=apps ctx gpt2 ab mlp attach gdb}" "${PROOF_WORK:=/tmp/cuhook-proof}"
: "${APP_LAUNCHES:=500}" "${APP_ELEMS:=1048576}" "${APP_SYNC_EVERY:=100}"
: "${GPT2_PROCS:=2}" "${GPT2_ITERS:=12}" "${GPT2_TOKENS:=32}"
: "${MLP_PROCS:=2}" "${MLP_ITERS:=20}" "${MLP_PASSES:=200}"
: "${AB_ROUNDS:=20}" "${AB_PROCS:=3}" "${AB_CPUS:=}" "${AB_WARM:=1}" "${AB_COUNT:=}"
: "${CTX_REPS:=3}" "${CTX_N:=200000}" "${ATTACH_LOOP_S:=20}" "${ATTACH_S:=5}"
: "${GPT2_SCRIPT:=tests/gpu/gpt2_infer.py}" "${MLP_SCRIPT:=tests/gpu/mlp_infer.py}"
export PYTHONUNBUFFERED=1
export PATH=$PATH:/usr/local/cuda/bin

W=$PROOF_WORK
R=$W/runs   # one NAME.out per step, and what the runs leave: traces, reports, counts
B=$W/bin    # the helpers
case $W in /tmp/?* | /var/tmp/?* | /root/?*) ;; *) echo "PROOF_WORK must be under /tmp, /var/tmp or /root"; exit 1 ;; esac
rm -rf "$W" && mkdir -p "$R" "$B" "$W/info" || exit 1
printf 'name\tstatus\tseconds\tcommand\n' > "$W/steps.tsv"
for v in PROOF_BUDGET_S PROOF_PHASES APP_LAUNCHES APP_ELEMS APP_SYNC_EVERY GPT2_PROCS GPT2_ITERS \
	GPT2_TOKENS AB_ROUNDS AB_PROCS AB_CPUS AB_WARM AB_COUNT MLP_PROCS MLP_ITERS MLP_PASSES CTX_REPS CTX_N ATTACH_LOOP_S ATTACH_S GPT2_SCRIPT MLP_SCRIPT; do
	printf '%s=%s\n' "$v" "${!v}"
done > "$W/info/params.txt"

log() { printf '\n== [%3ds] %s\n' $(( $(date +%s) - T0 )) "$*"; }
left() { echo $(( T0 + PROOF_BUDGET_S - $(date +%s) )); }
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
record() { # NAME STATUS SECONDS COMMAND: one line of steps.tsv
	local c=${4//"$W"/\$WORK}
	c=${c//[$'\t\n']/ }
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${c//  / }" >> "$W/steps.tsv"
}
skip() { record "$1" "skipped: $2" 0 "${3:-}"; printf '   %-26s skipped: %s\n' "$1" "$2"; return 99; }
has_phase() { [[ " $PROOF_PHASES " == *" $1 "* ]]; }
summarize() {
	timeout 120 python3 tests/gpu/proof_summary.py "$W" "$OUT" > "$W/summary.log" 2>&1 \
		|| { echo "   summary failed:"; tail -n 5 "$W/summary.log"; }
}

# step NAME LIMIT CMD...: runs CMD, its output in runs/NAME.out, for at most LIMIT seconds and
# never past the budget; records the exit status (124: timed out) and the time in steps.tsv.
step() {
	local name=$1 lim=$2
	shift 2
	local l
	l=$(left)
	(( l < 20 )) && { skip "$name" "time budget spent" "$*"; return 99; }
	(( lim > l - 10 )) && lim=$(( l - 10 ))
	local t0=$EPOCHREALTIME
	timeout -k 5 "$lim" "$@" > "$R/$name.out" 2>&1
	local rc=$?
	local dt
	dt=$(elapsed "$t0")
	record "$name" "$rc" "$dt" "$*"
	printf '   %-26s rc %-3s %6ss  %s\n' "$name" "$rc" "$dt" "$(tail -n 1 "$R/$name.out" | cut -c1-90)"
	return $rc
}

# The JSON report of runs/NAME.bin, if that run left a trace.
report() {
	[ -n "$CUHOOK" ] && [ -s "$R/$1.bin" ] || return 0
	local lim
	lim=$(left)
	(( lim > 120 )) && lim=120
	(( lim < 15 )) && lim=15
	timeout "$lim" "$CUHOOK" report --format json -o "$R/$1.report.json" "$R/$1.bin" > "$R/$1.report.err" 2>&1 \
		|| echo "   report of $1 failed: $(tail -n 1 "$R/$1.report.err")"
}

# run_cfg WORKLOAD CONFIG REP LIMIT CMD...: one run of a workload, NAME = WORKLOAD.CONFIG.REP:
#   base    untraced
#   cuhook  under `cuhook run` (trace runs/NAME.bin, its report runs/NAME.report.json)
#   cupti   with the CUPTI counter, injected by the driver at cuInit (runs/NAME.cupti.PID.json)
#   both    under `cuhook run` with the CUPTI counter: both count the same process's calls
#   wrap    with the LD_PRELOAD wrapper (runs/NAME.wrap.PID.json)
# The counter is put in by CUDA_INJECTION64_PATH, so around `cuhook run` it is loaded by the
# traced program only (cuhook itself never calls cuInit).
run_cfg() {
	local w=$1 cfg=$2 rep=$3 lim=$4
	shift 4
	local name=$w.$cfg.$rep
	local cupti=(env "CUDA_INJECTION64_PATH=$COUNTER" "CUPTI_COUNTER_OUT=$R/$name.cupti.%p.json")
	case $cfg in
	cuhook | both) [ -n "$CUHOOK" ] || { skip "$name" "cuhook not built"; return; } ;;&
	cupti | both) [ -n "$COUNTER" ] || { skip "$name" "CUPTI counter not built"; return; } ;;&
	wrap) [ -n "$WRAPPER" ] || { skip "$name" "wrapper not built"; return; } ;;
	esac
	case $cfg in
	base) step "$name" "$lim" "$@" ;;
	cuhook) step "$name" "$lim" "$CUHOOK" run -o "$R/$name.bin" -- "$@" ;;
	cupti) step "$name" "$lim" "${cupti[@]}" "$@" ;;
	both) step "$name" "$lim" "${cupti[@]}" "$CUHOOK" run -o "$R/$name.bin" -- "$@" ;;
	wrap) step "$name" "$lim" env "LD_PRELOAD=$WRAPPER" "PRELOAD_WRAPPER_OUT=$R/$name.wrap.%p.json" "$@" ;;
	esac
	report "$name"
}

# Each output line of the attached loop, prefixed with the time it came out.
stamp() { while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done; }
alive() { [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2> /dev/null; }

# attach_run WORKLOAD CMD...: starts CMD (a loop printing "iter N ... checksum C" lines for
# ATTACH_LOOP_S seconds), attaches `cuhook attach --duration ATTACH_S` once iteration 2 is out,
# and waits for the loop's end. runs/WORKLOAD.attach.1.{out,attach.txt,window,bin,report.json}
attach_run() {
	local w=$1
	shift
	local name=$w.attach.1
	[ -n "$CUHOOK" ] || { skip "$name" "cuhook not built"; return; }
	(( $(left) > ATTACH_LOOP_S + 60 )) || { skip "$name" "time budget spent" "$*"; return; }
	local t0=$EPOCHREALTIME arc="not attached: iteration 2 never came" ready=0 pid
	"$@" > >(stamp > "$R/$name.out") 2>&1 &
	pid=$!
	for _ in $(seq 1 480); do
		grep -q ' iter 2 ' "$R/$name.out" 2> /dev/null && { ready=1; break; }
		alive $pid || break
		sleep 0.25
	done
	if (( ready )); then
		local ta=$EPOCHREALTIME
		timeout -k 5 $(( ATTACH_S + 60 )) "$CUHOOK" attach -v --duration "$ATTACH_S" -o "$R/$name.bin" "$pid" \
			> "$R/$name.attach.txt" 2>&1
		arc=$?
		echo "$ta $EPOCHREALTIME" > "$R/$name.window"
	fi
	# The loop ends by itself; a stuck one is killed after twice its length.
	local deadline=$(( $(date +%s) + ATTACH_LOOP_S + 60 ))
	while alive $pid; do
		(( $(date +%s) > deadline )) && { echo "   killing a stuck loop"; kill -9 $pid; }
		sleep 0.25
	done
	wait $pid
	local trc=$?
	sleep 0.5 # the stamping reader's last lines
	record "$name" "$trc" "$(elapsed "$t0")" "$* (the loop)"
	record "$name.cuhook-attach" "$arc" 0 "$CUHOOK attach -v --duration $ATTACH_S -o $R/$name.bin PID"
	printf '   %-26s loop rc %s, attach rc %s, %s lines\n' "$name" "$trc" "$arc" "$(grep -c ' iter ' "$R/$name.out")"
	report "$name"
}

# gdb_run WORKLOAD CMD...: CMD under cuda-gdb with a breakpoint on every libcuda export of the
# compared families, each ignored 10^9 times: `info breakpoints` then says how often each was hit.
# Breakpoint N is line N of runs/WORKLOAD.cudagdb.1.funcs.
gdb_run() {
	local w=$1
	shift
	local name=$w.cudagdb.1
	command -v cuda-gdb > /dev/null || { skip "$name" "no cuda-gdb"; return; }
	[ -s "$W/info/gdb_funcs.txt" ] || { skip "$name" "no function list (libcuda not read)"; return; }
	cp "$W/info/gdb_funcs.txt" "$R/$name.funcs"
	{
		echo "set pagination off"
		echo "set confirm off"
		echo "set breakpoint pending on"
		echo "set print thread-events off"
		local n=0 f
		while read -r f; do
			n=$(( n + 1 ))
			echo "break $f"
			echo "ignore $n 1000000000"
		done < "$R/$name.funcs"
		echo "run"
		echo "info breakpoints"
	} > "$R/$name.gdb"
	step "$name" 240 cuda-gdb -batch -x "$R/$name.gdb" --args "$@"
}

# ---------------------------------------------------------------------------------------------
log "machine"
date -u '+%Y-%m-%dT%H:%M:%SZ' > "$W/info/date.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader > "$W/info/gpu.csv" 2>&1
nvidia-smi > "$W/info/nvidia-smi.txt" 2>&1
{
	echo "kernel: $(uname -r)"
	echo "gcc: $(gcc --version 2>&1 | head -n 1)"
	echo "nvcc: $(nvcc --version 2>&1 | tail -n 1)"
	echo "cuda-gdb: $(cuda-gdb --version 2>&1 | head -n 1)"
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-) x $(nproc)"
} > "$W/info/versions.txt"
timeout 120 python3 -c '
import json, platform, sys
v = {"python": platform.python_version()}
try:
    import torch
    v.update(torch=torch.__version__, torch_cuda=torch.version.cuda)
except Exception as e:
    v["torch"] = "not importable: %s" % e
try:
    import transformers
    v["transformers"] = transformers.__version__
except Exception as e:
    v["transformers"] = "not importable: %s" % e
print(json.dumps(v))' > "$W/info/python.json" 2> "$W/info/python.err"
cat "$W/info/gpu.csv" "$W/info/versions.txt" "$W/info/python.json"
# The interpreter itself, not a wrapper script (a pyenv shim, say) that would exec it: `cuhook run`
# puts the agent into the program it starts, and an exec drops it.
PY=$(python3 -c 'import sys; print(sys.executable)' 2> /dev/null)
PY=${PY:-python3}
echo "python: $PY" >> "$W/info/versions.txt"

# The driver: the file a process gets when it loads libcuda.so.1 (as the CUDA runtime does).
if [ -z "${LIBCUDA:-}" ]; then
	LIBCUDA=$(python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")
print(next(l.split()[-1] for l in open("/proc/self/maps") if "/libcuda.so" in l))' 2> /dev/null)
	[ -n "$LIBCUDA" ] || LIBCUDA=/usr/local/nvidia/lib64/libcuda.so.1
fi
LIBCUDA=$(readlink -f "$LIBCUDA")
LIBCUDA_DIR=$(dirname "$LIBCUDA")
echo "libcuda: $LIBCUDA" | tee -a "$W/info/versions.txt"
readelf -W --dyn-syms "$LIBCUDA" 2> /dev/null | awk '$4 == "FUNC" && $7 != "UND" { n = $8; sub(/@.*/, "", n); print n }' \
	| sort -u > "$W/info/libcuda_exports.txt"
grep -E '^(cuLaunchKernel|cuMemAlloc|cuMemcpy|cuStreamSynchronize|cuCtxSynchronize|cuModuleLoad|cuLibraryLoad)' \
	"$W/info/libcuda_exports.txt" > "$W/info/gdb_funcs.txt"
echo "exports: $(wc -l < "$W/info/libcuda_exports.txt"), of the compared families: $(wc -l < "$W/info/gdb_funcs.txt")"
SM=$(awk -F', *' 'NR == 1 && $4 ~ /^[0-9]+\.[0-9]+$/ { sub(/\./, "", $4); print "sm_" $4 }' "$W/info/gpu.csv")
SM=${SM:-sm_90}

# ---------------------------------------------------------------------------------------------
log "build"
BUILD=$W/build
# use-deps.sh unpacks the carried -dev packages into /tmp/deps; an rpath there lets cuhook find
# libcapstone/libelf without LD_LIBRARY_PATH, so traced and untraced runs get the same
# environment.
# shellcheck disable=SC2016 # expanded by the inner bash
step build.cuhook 300 bash -c '
	set -e
	if [ -f .devdeps/use-deps.sh ]; then
		source .devdeps/use-deps.sh
		export LDFLAGS="-Wl,-rpath,/tmp/deps/usr/lib/x86_64-linux-gnu"
	fi
	meson setup "$1" -Dbuildtype=release
	ninja -C "$1" src/agent/libcuhook.so src/cli/cuhook' _ "$BUILD"
CUHOOK="" AGENT=""
if [ -x "$BUILD/src/cli/cuhook" ] && [ -f "$BUILD/src/agent/libcuhook.so" ]; then
	CUHOOK=$BUILD/src/cli/cuhook AGENT=$BUILD/src/agent/libcuhook.so
	if ! "$CUHOOK" --version > /dev/null 2>&1; then
		echo "   cuhook does not start even with the rpath: exporting LD_LIBRARY_PATH (every run gets it)"
		export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
		echo "LD_LIBRARY_PATH exported for cuhook's libraries" >> "$W/info/versions.txt"
	fi
fi

CUDA_INC=/usr/local/cuda/include
step build.driver_app 60 gcc -O2 -Wall -std=gnu11 -I"$CUDA_INC" -o "$B/driver_app" tests/gpu/driver_app.c \
	-L"$LIBCUDA_DIR" -l:libcuda.so.1
step build.runtime_app 120 nvcc -O2 -arch="$SM" -o "$B/runtime_app" tests/gpu/runtime_app.cu
step build.ctx_bench 60 gcc -O2 -I"$CUDA_INC" -o "$B/ctx_bench" tests/gpu/ctx_get_current_bench.c \
	-L"$LIBCUDA_DIR" -l:libcuda.so.1 -ldl
step build.wrapper 60 gcc -O2 -Wall -shared -fPIC -fvisibility=hidden -I"$CUDA_INC" \
	-o "$B/libpreload_wrapper.so" tests/gpu/preload_wrapper.c -ldl

# CUPTI: the toolkit's if it is there, else the one pip installed with torch; the headers beside
# it. The counter gets an rpath to that folder (the driver dlopens it with a plain environment).
python3 - > "$W/info/cupti.txt" 2> "$W/info/cupti.err" << 'PY'
import glob, os, site
toolkit = ["/usr/local/cuda/extras/CUPTI/lib64", "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"]
pip = sorted({os.path.dirname(f) for sp in site.getsitepackages()
              for f in glob.glob(sp + "/nvidia/**/libcupti.so.[0-9]*", recursive=True)})
lib = ""
for d in toolkit + pip:
    found = sorted(glob.glob(os.path.join(d, "libcupti.so.[0-9]*")), key=len)
    if found:
        lib = found[0]  # the shortest name is the soname (libcupti.so.13): what the loader looks for
        break
incs = [os.path.join(os.path.dirname(os.path.dirname(lib)), "include")] if lib else []
incs += ["/usr/local/cuda/extras/CUPTI/include", "/usr/local/cuda/include"]
incs += [os.path.dirname(h) for sp in site.getsitepackages() for h in glob.glob(sp + "/nvidia/**/cupti.h", recursive=True)]
print(lib)
print(next((os.path.realpath(i) for i in incs if os.path.isfile(os.path.join(i, "cupti.h"))), ""))
PY
CUPTI_LIB=$(sed -n 1p "$W/info/cupti.txt") CUPTI_INC=$(sed -n 2p "$W/info/cupti.txt")
echo "cupti: ${CUPTI_LIB:-not found}, headers: ${CUPTI_INC:-not found}" | tee -a "$W/info/versions.txt"
if [ -n "$CUPTI_LIB" ] && [ -n "$CUPTI_INC" ]; then
	step build.cupti_counter 60 gcc -O2 -Wall -shared -fPIC -fvisibility=hidden -I"$CUPTI_INC" -I"$CUDA_INC" \
		-o "$B/libcupti_counter.so" tests/gpu/cupti_counter.c \
		-L"$(dirname "$CUPTI_LIB")" -l:"$(basename "$CUPTI_LIB")" -Wl,-rpath,"$(dirname "$CUPTI_LIB")"
else
	skip build.cupti_counter "libcupti or cupti.h not found"
fi
COUNTER="" WRAPPER=""
[ -f "$B/libcupti_counter.so" ] && COUNTER=$B/libcupti_counter.so
[ -f "$B/libpreload_wrapper.so" ] && WRAPPER=$B/libpreload_wrapper.so
summarize

# ---------------------------------------------------------------------------------------------
APP_ARGS=("$APP_LAUNCHES" "$APP_ELEMS" "$APP_SYNC_EVERY")
if has_phase apps; then
	log "C programs: untraced, cuhook run, CUPTI, cuhook run + CUPTI, LD_PRELOAD wrapper"
	for app in driver_app runtime_app; do
		if [ ! -x "$B/$app" ]; then
			skip "$app" "not built"
			continue
		fi
		for cfg in base cuhook cupti both wrap; do
			run_cfg "$app" "$cfg" 1 120 "$B/$app" "${APP_ARGS[@]}"
		done
	done
	summarize
fi

if has_phase ctx; then
	log "cuCtxGetCurrent: ns per call, untraced then traced in each run (alone, with CUPTI, with the wrapper)"
	if [ -x "$B/ctx_bench" ] && [ -n "$AGENT" ]; then
		# The bench's own trace goes to the work folder's root: it is not a workload's.
		for rep in $(seq 1 "$CTX_REPS"); do
			step "ctx.base.$rep" 60 "$B/ctx_bench" "$AGENT" "$W/ctx.bin" "$CTX_N"
			if [ -n "$COUNTER" ]; then
				step "ctx.cupti.$rep" 60 env "CUDA_INJECTION64_PATH=$COUNTER" "CUPTI_COUNTER_OUT=$R/ctx.cupti.$rep.cupti.%p.json" \
					"$B/ctx_bench" "$AGENT" "$W/ctx.bin" "$CTX_N"
			fi
			if [ -n "$WRAPPER" ]; then
				step "ctx.wrap.$rep" 60 env "LD_PRELOAD=$WRAPPER" "PRELOAD_WRAPPER_OUT=$R/ctx.wrap.$rep.wrap.%p.json" \
					"$B/ctx_bench" "$AGENT" "$W/ctx.bin" "$CTX_N"
			fi
		done
		rm -f "$W/ctx.bin"
	else
		skip ctx "bench or agent not built"
	fi
	summarize
fi

# throughput_runs WORKLOAD PROCS LIMIT CMD...: PROCS processes of each configuration, interleaved
# (base, cuhook, cupti, wrap, base, ...) so that a drift of the machine does not land on one of
# them, then one of cuhook and CUPTI in the same process.
throughput_runs() {
	local w=$1 procs=$2 lim=$3 rep cfg
	shift 3
	for rep in $(seq 1 "$procs"); do
		for cfg in base cuhook cupti wrap; do
			run_cfg "$w" "$cfg" "$rep" "$lim" "$@"
		done
	done
	run_cfg "$w" both 1 "$lim" "$@"
	summarize
}

if has_phase gpt2; then
	log "GPT-2: $GPT2_PROCS process(es) per configuration, $GPT2_ITERS iterations of $GPT2_TOKENS tokens each"
	throughput_runs gpt2 "$GPT2_PROCS" 240 "$PY" "$GPT2_SCRIPT" --iters "$GPT2_ITERS" --tokens "$GPT2_TOKENS"
fi

# GPT-2 with the agent started and stopped through its API between generations of one process:
# every round one untraced generation, one recorded in full, one with the default options (which
# count the queries the CUDA runtime makes around every launch) or AB_COUNT counted, the order
# rotating. Separate processes differ by several percent on these machines; this comparison does
# not carry that.
if has_phase ab; then
	ab_side=${AB_COUNT:+count=$AB_COUNT}
	log "GPT-2 in one process: $AB_ROUNDS rounds of untraced / recorded in full / traced with ${ab_side:-the default options}, $AB_PROCS processes${AB_CPUS:+, on CPUs $AB_CPUS}, $AB_WARM untimed generation(s) after each switch"
	pin=()
	[ -n "$AB_CPUS" ] && pin=(taskset -c "$AB_CPUS")
	for i in $(seq 1 "$AB_PROCS"); do
		if [ -n "$AGENT" ]; then
			step gpt2ab.$i 300 "${pin[@]}" "$PY" tests/gpu/ab_gpt2.py --agent "$AGENT" --rounds "$AB_ROUNDS" \
				--tokens "$GPT2_TOKENS" --warm "$AB_WARM" --trace-dir "$R" --json "$R/gpt2ab.$i.json" \
				--opts "count=" --opts "$ab_side"
			rm -f "$R"/ab-*.bin
		else
			skip gpt2ab.$i "cuhook not built"
		fi
	done
	summarize
fi

if has_phase mlp; then
	log "MLP: $MLP_PROCS process(es) per configuration, $MLP_ITERS iterations of $MLP_PASSES forward passes each"
	throughput_runs mlp "$MLP_PROCS" 180 "$PY" "$MLP_SCRIPT" --iters "$MLP_ITERS" --passes "$MLP_PASSES"
fi

if has_phase attach; then
	log "cuhook attach --duration $ATTACH_S to running loops of ${ATTACH_LOOP_S}s"
	attach_run gpt2 "$PY" "$GPT2_SCRIPT" --seconds "$ATTACH_LOOP_S" --tokens "$GPT2_TOKENS"
	attach_run mlp "$PY" "$MLP_SCRIPT" --seconds "$ATTACH_LOOP_S" --passes "$MLP_PASSES"
	summarize
fi

if has_phase gdb; then
	log "cuda-gdb breakpoint counts on the C programs ($(wc -l < "$W/info/gdb_funcs.txt") functions)"
	for app in driver_app runtime_app; do
		if [ -x "$B/$app" ]; then
			gdb_run "$app" "$B/$app" "${APP_ARGS[@]}"
		else
			skip "$app.cudagdb.1" "not built"
		fi
	done
fi

# ---------------------------------------------------------------------------------------------
log "results"
record total 0 "$(( $(date +%s) - T0 ))" "bash tests/gpu/proof.sh OUTDIR"
summarize
# Every output, report and count; not the traces (the work folder keeps them).
tar -czf "$OUT/raw.tar.gz" -C "$W" --exclude='*.bin' --exclude=build --exclude=bin . 2> /dev/null
cat "$OUT/results.md" 2> /dev/null || { echo "no results.md:"; cat "$W/summary.log"; }
ls -l "$OUT"
