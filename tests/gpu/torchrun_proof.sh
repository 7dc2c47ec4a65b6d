#!/bin/bash
# A multi-process job traced (issue 24), on the GPU machine, from the project root:
#   source .devdeps/use-deps.sh && bash tests/gpu/torchrun_proof.sh OUTDIR
# torchrun starts NPROC (default 2) ranks of tests/gpu/ddp_job.py (DDP training of a small
# transformer; NCCL with a GPU per rank, gloo on one GPU), rank 1 made slow every third step.
# Runs, each printing its wall time:
#   base     untraced
#   follow   cuhook run --follow -- torchrun ...: every process traced, each into its own file
#   gpu      the same with --gpu (CUPTI activity records: each rank's device work on the timeline)
#   counted  the same with CUPTI's driver-API callbacks counting every call in the same processes
#            (tests/gpu/cupti_counter.c through CUDA_INJECTION64_PATH): the ground truth
#   attach   untraced, and cuhook attach -v --duration 2 to rank 1 while it trains
# Then checks and prints: every rank's losses bit-identical in all runs; per rank, cuhook's
# count of every function CUPTI saw against CUPTI's; the merged report of the ranks (processes,
# waiting for each other, the collectives: at least one collective per step rank 1 slept in (step
# 0 aside) that the other rank waited > 10 ms for, with rank 1 last; by the host launches and, in
# the --gpu run, by the GPU starts); the
# traces' time axis against the program's own CLOCK_REALTIME stamps
# (each step's end as the program saw it vs the trace's last call before it, per rank, and the
# ranks' difference by either clock). docs/validation.md records a run.
set -u
OUT=${1:?output directory}
mkdir -p "$OUT"
B=/tmp/build-gpu HERE=tests/gpu CUHOOK=/tmp/build-gpu/src/cli/cuhook
NP=${NPROC:-2} STEPS=${STEPS:-60}
fail=0
step() { echo; echo "=== $*"; }
if [ ! -x "$CUHOOK" ]; then
	bash $HERE/gpu_proof.sh "$OUT" build || exit 1
fi
CUPTI_LIB=$(ls /usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.[0-9]* 2>/dev/null | head -1)
gcc -O2 -Wall -shared -fPIC -fvisibility=hidden -I/usr/local/cuda/include -I/usr/local/cuda/extras/CUPTI/include \
	-o $B/libcupti_counter.so $HERE/cupti_counter.c -L"$(dirname "$CUPTI_LIB")" -l:"$(basename "$CUPTI_LIB")" \
	-Wl,-rpath,"$(dirname "$CUPTI_LIB")" || { echo "cupti_counter build failed"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
TR=(torchrun --standalone --nproc_per_node "$NP" $HERE/ddp_job.py --steps "$STEPS" --slow-rank 1)
timed() { # NAME CMD...: run, print its wall time and status
	local name=$1; shift
	local t0; t0=$(date +%s%N)
	"$@" > "$OUT/$name.out" 2>&1
	local rc=$?
	printf '%-9s rc %d  %d ms\n' "$name" "$rc" $((($(date +%s%N) - t0) / 1000000))
	[ $rc -eq 0 ] || { tail -20 "$OUT/$name.out"; fail=1; }
}
step "runs ($NP ranks, $STEPS steps)"
timed base "${TR[@]}" --out "$OUT/base"
mkdir -p "$OUT/follow" "$OUT/counted"
timed follow "$CUHOOK" run --follow -o "$OUT/follow/trace.bin" -- "${TR[@]}" --out "$OUT/follow"
mkdir -p "$OUT/gpu"
timed gpu "$CUHOOK" run --follow --gpu -o "$OUT/gpu/trace.bin" -- "${TR[@]}" --out "$OUT/gpu"
CUDA_INJECTION64_PATH=$B/libcupti_counter.so CUPTI_COUNTER_OUT="$OUT/counted/cupti.%p.json" \
	timed counted "$CUHOOK" run --follow -o "$OUT/counted/trace.bin" -- "${TR[@]}" --out "$OUT/counted"
# attach: a longer job; rank 1 attached once it is in its training loop
ATT_STEPS=$((STEPS * 6))
"${TR[@]:0:4}" $HERE/ddp_job.py --steps "$ATT_STEPS" --slow-rank 1 --out "$OUT/attach" > "$OUT/attach-job.out" 2>&1 &
JOB=$!
for _ in $(seq 1 240); do
	[ -s "$OUT/attach/rank1.training" ] && break
	sleep 0.25
done
R1=$(cat "$OUT/attach/rank1.training" 2>/dev/null)
if [ -n "$R1" ]; then
	"$CUHOOK" attach -v --duration 2 -o "$OUT/attach-rank1.bin" "$R1" > "$OUT/attach.out" 2>&1
	echo "attach to rank 1 (pid $R1): rc $?"; grep -E "stopped|held|written|trace" "$OUT/attach.out" | head -8
else
	echo "attach: rank 1 never reached its training loop"; fail=1
fi
wait $JOB || { echo "attached job failed"; tail "$OUT/attach-job.out"; fail=1; }
# the base run of the same length, to compare the attached job's losses with
timed base-long "${TR[@]:0:4}" $HERE/ddp_job.py --steps "$ATT_STEPS" --slow-rank 1 --out "$OUT/base-long"

step "reports"
python3 - "$OUT" "$CUHOOK" "$NP" <<'PY' || fail=1
import csv, glob, io, json, os, re, statistics, subprocess, sys
out, cuhook, np_ = sys.argv[1], sys.argv[2], int(sys.argv[3])
bad = 0
def ranks(d):
    r = {}
    for f in glob.glob(os.path.join(out, d, "rank*.txt")):
        lines = open(f).read().split("\n")
        hdr = lines[0].split()
        r[int(f[-5])] = {"pid": int(hdr[5]), "backend": hdr[1], "steps": [l.split() for l in lines[1:] if l]}
    return r
runs = {d: ranks(d) for d in ("base", "follow", "gpu", "counted", "attach", "base-long")}
print("backend:", runs["base"][0]["backend"] if runs["base"] else "?")
for d, ref in (("follow", "base"), ("gpu", "base"), ("counted", "base"), ("attach", "base-long")):
    for r in range(np_):
        a = [s[1] for s in runs[d].get(r, {}).get("steps", [])]
        b = [s[1] for s in runs[ref].get(r, {}).get("steps", [])]
        same = a == b and len(a) > 0
        bad += not same
        print(f"losses {d:8s} rank {r}: {len(a)} steps, {'bit-identical to ' + ref if same else 'DIFFER from ' + ref}")
def rep(fmt, *files):
    return subprocess.run([cuhook, "report", "--format", fmt, *files], capture_output=True, text=True, check=True).stdout
# counts: cuhook against CUPTI in the same processes. CUPTI is loaded by the first cuInit and
# sees nothing before that call's end: cuhook's recorded calls are counted from there (counted
# calls, which have no times, all come later in these programs: cuCtxGetDevice & co).
for r in range(np_):
    pid = runs["counted"][r]["pid"]
    cupti = json.load(open(os.path.join(out, "counted", f"cupti.{pid}.json")))
    tf = os.path.join(out, "counted", f"trace.{pid}.bin")
    j = json.loads(rep("json", tf))
    rows = list(csv.DictReader(io.StringIO(rep("csv", tf))))
    init_end = min(int(x["end_ns"]) for x in rows if x["func"] == "cuInit" and x["end_ns"])
    ch = {}
    for x in rows:
        if int(x["start_ns"]) > init_end:
            ch[x["func"]] = ch.get(x["func"], 0) + 1
    for f in j["functions"]:
        if f.get("counted_calls"):
            ch[f["name"]] = ch.get(f["name"], 0) + f["counted_calls"]
    before = len(rows) - sum(1 for x in rows if int(x["start_ns"]) > init_end)
    diff = {k: (ch.get(k, 0), v) for k, v in cupti.items() if ch.get(k, 0) != v and k != "cuInit"}
    bad += bool(diff)
    print(f"counts rank {r} (pid {pid}): {len(cupti)} functions CUPTI saw, {sum(cupti.values())} calls; cuhook "
          f"{sum(ch.get(k, 0) for k in cupti)} of them after cuInit ({before} calls before); "
          f"{len(diff)} differ {dict(list(diff.items())[:8])}")
    only = {k: v for k, v in ch.items() if k not in cupti}
    last = {k: max(int(x["start_ns"]) for x in rows if x["func"] == k) / 1e9 for k in only if any(x["func"] == k for x in rows)}
    print(f"   cuhook only (no CUPTI callback, or after CUPTI's counter wrote its file at exit): {only}; "
          f"their last call at {last} s, the trace ends at {j.get('duration_ns', 0) / 1e9:.2f} s")
# the merged report of the ranks of the follow run
files = [os.path.join(out, "follow", f"trace.{runs['follow'][r]['pid']}.bin") for r in range(np_)]
txt = rep("text", *files)
for sec in ("Processes", "Waiting for each other"):
    m = re.search(rf"^{sec}\n(.*?)(?=\n\n|\Z)", txt, re.M | re.S)
    print(f"--- {sec}\n{m.group(1) if m else '(none)'}")
mj = json.loads(rep("json", *files))
print("merged syncs:", {k: v for k, v in mj["merged"]["syncs"].items() if k != "list"})
# the collectives: rank 1 sleeps 20 ms before every third step's backward, so every collective
# that some rank waited > 10 ms for must have rank 1 arriving last
def collectives(fs, label):
    global bad
    txt = subprocess.run([cuhook, "report", "--no-color", *fs], capture_output=True, text=True).stdout
    m = re.search(r"^Collectives across processes\n(.*?)(?=\n\n|\Z)", txt, re.M | re.S)
    print(f"--- Collectives across processes ({label})\n{m.group(1) if m else '(none)'}")
    c = json.loads(rep("json", *fs))["merged"]["collectives"]
    r1 = runs[label][1]["pid"]
    long_ = [(i, x) for i, x in enumerate(c["list"]) if x["last_arrival_ns"] - x["first_arrival_ns"] > 10_000_000]
    by1 = sum(1 for _, x in long_ if x["slowest_pid"] == r1)
    others = [(i + 1, x["slowest_pid"], round((x["last_arrival_ns"] - x["first_arrival_ns"]) / 1e6, 1))
              for i, x in long_ if x["slowest_pid"] != r1]
    slow_steps = (len(runs[label][1]["steps"]) + 2) // 3
    print(f"collectives ({label}): {c['matched']} matched, timed by {c['timing']}, mismatch_at {c['mismatch_at']}; "
          f"{len(long_)} waited > 10 ms, rank 1 last in {by1} of them (rank 1 slept in {slow_steps} steps); "
          f"the others (#, last pid, ms): {others}")
    # every step rank 1 slept in must show up as a collective it arrived > 10 ms late at, but the
    # first: in step 0 both ranks load the kernels they use for the first time, which can take rank
    # 0 longer than rank 1's 20 ms sleep (seen by the GPU on 2 H200s: 19 of 20)
    bad += by1 < slow_steps - 1 or c["mismatch_at"] is not None
collectives(files, "follow")
# the --gpu run: one timeline of every rank's threads and its device's work
gfiles = [os.path.join(out, "gpu", f"trace.{runs['gpu'][r]['pid']}.bin") for r in range(np_) if r in runs["gpu"]]
if gfiles:
    txt = subprocess.run([cuhook, "report", "--no-color", "--width", "100", *gfiles], capture_output=True, text=True).stdout
    m = re.search(r"^Timeline.*?(?=\n\n|\Z)", txt, re.M | re.S)
    print(f"--- merged timeline of the --gpu run\n{m.group(0) if m else '(none)'}")
    collectives(gfiles, "gpu")
    for f in gfiles:
        g = json.loads(rep("json", f)).get("gpu", {})
        print(f"   {os.path.basename(f)}: GPU work records {g.get('work_records', g.get('records', '?'))}")
# time axis: each step's end by the program's realtime clock vs the trace's last call before it
ends = {}
for r in range(np_):
    pid = runs["follow"][r]["pid"]
    f = files[r]
    t0 = json.loads(rep("json", f))["start_realtime_ns"]
    rows = list(csv.DictReader(io.StringIO(rep("csv", f))))
    ce = sorted(t0 + int(x["end_ns"]) for x in rows if x["end_ns"] and int(x["tid"]) == pid)
    gaps, e = [], []
    import bisect
    for s in runs["follow"][r]["steps"]:
        rt = int(s[2])
        i = bisect.bisect_right(ce, rt) - 1
        gaps.append(rt - ce[i] if i >= 0 else None)
        e.append(ce[i] if i >= 0 else None)
    ends[r] = e
    g = [x for x in gaps if x is not None]
    print(f"time axis rank {r}: program's step end - trace's last call end before it: median "
          f"{statistics.median(g) / 1e3:.1f} us, max {max(g) / 1e3:.1f} us over {len(g)} steps")
    bad += max(g) > 5e6
if np_ >= 2:
    d = []
    for s in range(len(ends[0])):
        p0, p1 = int(runs["follow"][0]["steps"][s][2]), int(runs["follow"][1]["steps"][s][2])
        if ends[0][s] is not None and ends[1][s] is not None:
            d.append(abs((p1 - p0) - (ends[1][s] - ends[0][s])))
    print(f"ranks 0 and 1: |difference of step ends by the program's clocks - by the traces'|: median "
          f"{statistics.median(d) / 1e3:.1f} us, max {max(d) / 1e3:.1f} us over {len(d)} steps")
att = os.path.join(out, "attach-rank1.bin")
if os.path.exists(att):
    j = json.loads(rep("json", att))
    print(f"attach trace of rank 1: {sum(f['calls'] for f in j['functions'])} calls recorded, "
          f"{j.get('duration_ns', 0) / 1e9:.2f} s")
print("RESULT", "PASS" if not bad else f"FAIL ({bad})")
sys.exit(1 if bad else 0)
PY
step "step time (median ms per step, rank 0, from the program's own stamps)"
python3 - "$OUT" <<'PY'
import glob, os, statistics, sys
for d in ("base", "follow", "counted"):
    f = os.path.join(sys.argv[1], d, "rank0.txt")
    if os.path.exists(f):
        t = [int(l.split()[2]) for l in open(f).read().split("\n")[1:] if l]
        dt = [(b - a) / 1e6 for a, b in zip(t, t[1:])][5:]
        print(f"{d:8s} median {statistics.median(dt):.2f} ms per step over {len(dt)} steps")
PY
exit $fail
