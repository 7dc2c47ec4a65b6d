#!/bin/bash
# The driver boundary's proof (issue 6) on the GPU machine (through the device tool, carrying
# .devdeps), from the repository root:
#
#   bash tests/gpu/ioctl_proof.sh OUTDIR
#
#  1. builds cuhook (release);
#  2. lists which libc functions the real libcuda imports that the ioctl watch hooks (ioctl and
#     the fd-changing calls) and whether it imports syscall() (a way around libc's ioctl);
#  3. runs PyTorch (tests/gpu/matmul100.py: 100 matrix products) untraced, traced without and
#     with the ioctl watch (constructor mode: CUHOOK_IOCTL=1), and with the watch under
#     `cuhook run --opt ioctl=1` (injected mode); checksums must be identical;
#  4. reports the traced runs (text and json) and summarizes the "Driver boundary (ioctls)"
#     section: ioctls per API function, requests, RM control commands, allocation classes,
#     undecoded requests, failures;
#  5. ground truth: runs the traced program once more under tests/gpu/ioctl_count.c (ptrace:
#     every ioctl system call on /dev/nvidia*, all threads, whatever path it took to the
#     kernel) and compares its per-request counts with the same run's trace.
# Outputs in OUTDIR (7 files): summary.txt (the numbers), report-ioctl.txt, report-ioctl.json,
# report-run.txt, imports.txt, ptrace-count.txt, outputs.txt (the end of each run's output).
#
# Environment: IOCTL_SCRIPT (default tests/gpu/matmul100.py), LIBCUDA, IOCTL_WORK (/tmp/ioctl-proof).
set -u
OUT=${1:?usage: bash tests/gpu/ioctl_proof.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 1
cd "$(dirname "$0")/../.." || exit 1
: "${IOCTL_SCRIPT:=tests/gpu/matmul100.py}" "${IOCTL_WORK:=/tmp/ioctl-proof}"
: > "$OUT/outputs.txt"
export PYTHONUNBUFFERED=1
W=$IOCTL_WORK
case $W in /tmp/?*) ;; *) echo "IOCTL_WORK must be under /tmp"; exit 1 ;; esac
rm -rf "$W" && mkdir -p "$W" || exit 1
T0=$(date +%s)
log() { printf '\n== [%3ds] %s\n' $(( $(date +%s) - T0 )) "$*" | tee -a "$OUT/summary.txt"; }
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
: > "$OUT/summary.txt"

log "build"
[ -f .devdeps/use-deps.sh ] && source .devdeps/use-deps.sh
(meson setup "$W/build" -Dbuildtype=release >"$W/meson.log" 2>&1 && ninja -C "$W/build" >"$W/ninja.log" 2>&1) \
	|| { tail -n 30 "$W/meson.log" "$W/ninja.log"; exit 1; }
agent=$W/build/src/agent/libcuhook.so
cuhook=$W/build/src/cli/cuhook
libcuda=${LIBCUDA:-$(readlink -f /usr/local/nvidia/lib64/libcuda.so.1 2>/dev/null)}
[ -n "$libcuda" ] || libcuda=$(python3 -c "import ctypes.util; print(ctypes.util.find_library('cuda') or '')")
say "libcuda: $libcuda"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee -a "$OUT/summary.txt"
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" 2>&1 | tee -a "$OUT/summary.txt"

log "2. what libcuda imports from libc (the watch sees calls made through these)"
nm -D --undefined-only "$libcuda" 2>/dev/null | awk '{print $NF}' | sed 's/@.*//' | sort -u > "$W/imports.all"
grep -xE 'ioctl|open|open64|openat|openat64|creat|creat64|close|close_range|dup|dup2|dup3|fcntl|fcntl64|syscall|__open_2|__open64_2|fopen|fopen64|socket|pipe|pipe2' \
	"$W/imports.all" | tee "$OUT/imports.txt" | tr '\n' ' ' | tee -a "$OUT/summary.txt"; echo | tee -a "$OUT/summary.txt"
grep -qx ioctl "$W/imports.all" && say "libcuda imports ioctl: yes" || say "libcuda imports ioctl: NO (its ioctls would bypass the watch)"
grep -qx syscall "$W/imports.all" && say "libcuda imports syscall(): yes (a raw syscall(SYS_ioctl) would not be seen)"

log "3. PyTorch: untraced, traced, traced with ioctls, cuhook run with ioctls"
run() { # NAME ENV... -- CMD...
	local name=$1; shift
	local t=$EPOCHREALTIME
	env "$@" > "$W/$name.out" 2>&1
	local rc=$?
	say "$name: exit $rc, $(awk -v a="$t" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }') s, $(grep -m1 checksum "$W/$name.out")"
	{ echo "---- $name (exit $rc)"; tail -n 25 "$W/$name.out"; } >> "$OUT/outputs.txt"
}
run untraced python3 "$IOCTL_SCRIPT"
run traced CUHOOK_AGENT="$agent" CUHOOK_OUTPUT="$W/plain.bin" python3 "$IOCTL_SCRIPT"
run traced-ioctl CUHOOK_AGENT="$agent" CUHOOK_OUTPUT="$W/ioctl.bin" CUHOOK_IOCTL=1 CUHOOK_VERBOSE=1 python3 "$IOCTL_SCRIPT"
run cuhook-run-ioctl "$cuhook" run -o "$W/run.bin" --opt ioctl=1 -- python3 "$IOCTL_SCRIPT"
ref=$(grep -m1 checksum "$W/untraced.out")
for n in traced traced-ioctl cuhook-run-ioctl; do
	[ -n "$ref" ] && [ "$(grep -m1 checksum "$W/$n.out")" = "$ref" ] && say "$n: checksum equal" || say "$n: CHECKSUM DIFFERS"
done
grep -i "ioctl watch\|cuhook:" "$W/traced-ioctl.out" | head -5 | tee -a "$OUT/summary.txt"

log "4. reports"
"$cuhook" report "$W/ioctl.bin" > "$OUT/report-ioctl.txt" 2>&1
"$cuhook" report --format json "$W/ioctl.bin" > "$OUT/report-ioctl.json" 2>&1
"$cuhook" report "$W/run.bin" > "$OUT/report-run.txt" 2>&1
"$cuhook" report --format json "$W/run.bin" > "$W/report-run.json" 2>&1
"$cuhook" report --format json "$W/plain.bin" > "$W/report-plain.json" 2>&1
"$cuhook" report --format jsonl "$W/ioctl.bin" > "$W/ioctl.jsonl" 2>&1
sed -n '/^Driver boundary/,/^Timeline/p' "$OUT/report-ioctl.txt" | head -80 | tee -a "$OUT/summary.txt"
python3 - "$OUT/report-ioctl.json" "$W/report-run.json" "$W/report-plain.json" "$W/ioctl.jsonl" <<'PY' | tee -a "$OUT/summary.txt"
import collections, json, sys
ioc, run, plain = (json.load(open(p)) for p in sys.argv[1:4])
for name, r in (("constructor", ioc), ("cuhook run", run)):
    s = r.get("ioctls") or {}
    print(f"{name}: {s.get('count')} ioctls, {s.get('failed')} failed, {s.get('with_data')} with argument bytes, "
          f"{s.get('outside_api', {}).get('count')} outside API calls; events {r['events']}, dropped {r['dropped']}, "
          f"truncated {r['truncated']}, errors {r['errors']}")
calls = lambda r: {f["name"]: f["calls"] for f in r["functions"]}
a, b = calls(plain), calls(ioc)
diff = {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}
print("API call counts, traced vs traced with ioctls: " + ("identical" if not diff else f"differ {sorted(diff.items())[:10]}"))
unknown = [r for r in ioc["ioctls"]["by_request"] if not r["request"][0].isalpha()]
print("requests the tables do not name:", unknown or "none")
nonames = [r["cmd"] for r in ioc["ioctls"]["rm_controls"] if not r["name"]]
print(f"RM control commands: {len(ioc['ioctls']['rm_controls'])} distinct, {len(nonames)} without a name in the table")
print(f"allocation classes: {[(r['class'], r['name'], r['count']) for r in ioc['ioctls']['alloc_classes']]}")
# nesting: depth and caller of every ioctl
by = {}
depth = collections.Counter()
threads = collections.Counter()
for line in open(sys.argv[4]):
    c = json.loads(line)
    by[c["id"]] = c
for c in by.values():
    if c["func"] == "ioctl":
        depth[c["depth"]] += 1
        threads[c["thread"]] += 1
print("ioctls by depth:", dict(sorted(depth.items())), " by thread:", dict(threads.most_common(6)))
outside = collections.Counter(c["details"].split(" ")[0] for c in by.values() if c["func"] == "ioctl" and c["parent"] is None)
print("ioctls without a traced caller, by request:", dict(outside.most_common(8)))
PY

log "5. ground truth: the kernel's count of the same run's NVIDIA ioctls (ptrace, tests/gpu/ioctl_count.c)"
if gcc -O2 -o "$W/ioctl_count" tests/gpu/ioctl_count.c; then
	run counted "$W/ioctl_count" --out "$W/count.txt" -- env CUHOOK_AGENT="$agent" CUHOOK_OUTPUT="$W/counted.bin" \
		CUHOOK_IOCTL=1 python3 "$IOCTL_SCRIPT"
	cp "$W/count.txt" "$OUT/ptrace-count.txt"
	"$cuhook" report --format jsonl "$W/counted.bin" > "$W/counted.jsonl" 2>&1
	python3 - "$W/count.txt" "$W/counted.jsonl" <<'PY' | tee -a "$OUT/summary.txt"
import collections, json, sys
kernel = {}
for line in open(sys.argv[1]):
    k, v = line.split()
    if k.startswith("0x"):
        kernel[int(k, 16)] = int(v)
traced = collections.Counter()
for line in open(sys.argv[2]):
    c = json.loads(line)
    if c["func"] == "ioctl":
        traced[int(c["args"][1], 16) & 0xFFFFFFFF] += 1
print(f"same run: the kernel saw {sum(kernel.values())} ioctls on /dev/nvidia*, the trace has {sum(traced.values())}")
diff = {f"{r:#010x}": (kernel.get(r, 0), traced.get(r, 0)) for r in set(kernel) | set(traced) if kernel.get(r, 0) != traced.get(r, 0)}
print("per request code: " + ("identical" if not diff else f"DIFFER (kernel, trace): {diff}"))
PY
else
	say "gcc failed: no ground truth"
fi
log "done"
