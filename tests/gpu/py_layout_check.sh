#!/bin/bash
# The layout table's row (src/agent/py_layout.c) for each CPython whose development headers are
# installed on this machine (python3.X-dev: /usr/include/python3.X/internal), checked field by
# field with offsetof by tests/unit/test_py_layout.c. For the GPU machine's 3.12, which CI
# cannot check. Run from the repository root: bash tests/gpu/py_layout_check.sh [3.12 ...]
# Exit 0: every version found matches; 1: a field differs (printed); 2: no headers found.
set -u
cd "$(dirname "$0")/../.."
versions=("$@")
[ ${#versions[@]} -eq 0 ] && versions=(3.10 3.11 3.12 3.13)
found=0 bad=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for v in "${versions[@]}"; do
  inc=""
  for d in "/usr/include/python$v" "/usr/local/include/python$v" \
           "$(python$v -c 'import sysconfig; print(sysconfig.get_path("include"))' 2>/dev/null)"; do
    [ -n "$d" ] && [ -f "$d/internal/pycore_frame.h" ] && { inc=$d; break; }
  done
  if [ -z "$inc" ]; then
    echo "python$v: no headers with internal/ (install python$v-dev)"
    continue
  fi
  found=$((found + 1))
  if ! cc -I"$inc" -Isrc/agent tests/unit/test_py_layout.c src/agent/py_layout.c -o "$tmp/t$v"; then
    echo "python$v: test_py_layout.c does not compile against $inc"
    bad=$((bad + 1))
    continue
  fi
  echo "python$v ($inc):"
  "$tmp/t$v" || bad=$((bad + 1))
done
[ $found -eq 0 ] && exit 2
[ $bad -eq 0 ]
