#!/bin/bash
# Kernel names in attach traces on a GPU machine (run there through the device tool, from the
# repo root):
#   bash tests/gpu/attach_names.sh OUTDIR        (carrying .devdeps, as the other GPU scripts)
# Builds cuhook (build dependencies carried in .devdeps/), then tests/gpu/attach_names.py:
# cuhook attach --duration 2 to a PyTorch GPT-2 loop and to a JAX loop; each prints
# "NAMES NAME: named N of M kernel launches (P %)" and the run ends with PASS when both reach 99 %.
set -u
out=${1:-/tmp/attach-names}
mkdir -p "$out"
if [ -f .devdeps/use-deps.sh ]; then
	# shellcheck disable=SC1091
	source .devdeps/use-deps.sh
	export LDFLAGS="-Wl,-rpath,/tmp/deps/usr/lib/x86_64-linux-gnu"
fi
echo "== build"
(meson setup /tmp/build -Dbuildtype=release >/tmp/meson-setup.log 2>&1 && ninja -C /tmp/build >/tmp/ninja.log 2>&1) \
  || { tail -n 30 /tmp/meson-setup.log /tmp/ninja.log; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" 2>&1 | tail -1
python3 -c "import jax; print('jax', jax.__version__, jax.devices())" 2>&1 | tail -1
python3 tests/gpu/attach_names.py --cuhook /tmp/build/src/cli/cuhook --out "$out" --duration 2
