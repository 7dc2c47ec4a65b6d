#!/bin/bash
# Configures (once) and builds cuhook into ./build.
set -e
cd "$(dirname "$0")/.."
bash scripts/deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
