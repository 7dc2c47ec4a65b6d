#!/bin/bash
# Does anything of cuhook keep slowing a process down after it detaches? GPT-2 tokens/s
# (median of 12 iterations) untraced, with only a membarrier SYNC_CORE registration, with the
# agent loaded but nothing patched, traced, traced in drop mode; then a loop attached for 3 s.
# Run on the GPU machine from the repo root: bash tests/gpu/slowdown_check.sh
source .devdeps/use-deps.sh
rm -rf tests/ioctl
meson setup /tmp/b -Dbuildtype=release >/dev/null 2>&1 && ninja -C /tmp/b src/agent/libcuhook.so src/cli/cuhook >/dev/null 2>&1 || { echo build failed; exit 1; }
P=/opt/torch/.venv/bin/python3
A=/tmp/b/src/agent/libcuhook.so
med() { awk '/^iter/ && $2>1 {print $4}' | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)], "(n=" NR ")"}'; }
G="tests/gpu/gpt2_infer.py --iters 14 --tokens 32"
for round in 1 2; do
echo "base: $($P $G 2>/dev/null | med)"
echo "membarrier SYNC_CORE registered only: $($P -c "
import ctypes, runpy, sys
libc = ctypes.CDLL(None); print('reg', libc.syscall(324, 64, 0, 0), file=sys.stderr)
sys.argv = ['gpt2_infer.py', '--iters', '14', '--tokens', '32']
runpy.run_path('tests/gpu/gpt2_infer.py', run_name='__main__')" 2>/dev/null | med)"
echo "agent, nothing patched (funcs=-*): $(CUHOOK_AGENT=$A CUHOOK_FUNCS='-*' CUHOOK_FORCE=1 CUHOOK_OUTPUT=/tmp/n.bin $P $G 2>/dev/null | med)"
echo "agent, all traced: $(CUHOOK_AGENT=$A CUHOOK_FORCE=1 CUHOOK_OUTPUT=/tmp/t.bin $P $G 2>/dev/null | med)"
echo "agent, all traced, drop mode: $(CUHOOK_AGENT=$A CUHOOK_DROP=1 CUHOOK_FORCE=1 CUHOOK_OUTPUT=/tmp/t2.bin $P $G 2>/dev/null | med)"
done
# attach then detach: the rate after
$P tests/gpu/gpt2_infer.py --seconds 25 --tokens 32 > /tmp/loop.txt 2>/dev/null &
pid=$!
sleep 8
/tmp/b/src/cli/cuhook attach --force --duration 3 -o /tmp/a.bin $pid >/dev/null 2>&1
t=$(date +%s.%N); echo "detached at $t"
wait $pid
awk '/^iter/ {print $2, $4}' /tmp/loop.txt | awk '{printf "%s:%s ", $1, $2} END {print ""}'
