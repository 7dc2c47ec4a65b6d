#!/bin/bash
# The main job: build cuhook, trace the bundled sample app (a tiny inference on the stand-in
# driver), and print the report.
set -eu
cd "$(dirname "$0")/.."
bash scripts/build.sh
out=${CUHOOK_DEMO_OUTPUT:-build/demo-trace.bin}
# --force: the last demo's trace is replaced (the demo can run again and again)
echo "== cuhook run --force -o $out -- build/samples/sample_app" >&2
build/src/cli/cuhook run --force -o "$out" -- build/samples/sample_app
echo "== cuhook report $out" >&2
build/src/cli/cuhook report "$out"
