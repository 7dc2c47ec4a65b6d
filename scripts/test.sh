#!/bin/bash
# Builds cuhook and runs every test (unit, engine, injector, report). Ends with a plain
# "N passed, N failed" line and exits non-zero if any test failed.
set -u
cd "$(dirname "$0")/.."
bash scripts/build.sh || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }
meson test -C build --print-errorlogs --num-processes 2 "$@"
rc=$?
python3 - build/meson-logs/testlog.json <<'PY'
import json, sys
passed = failed = skipped = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    res = r.get("result")
    if res in ("OK", "EXPECTEDFAIL"):
        passed += 1
    elif res == "SKIP":
        skipped += 1
    else:
        failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
PY
prc=$?
[ $rc -ne 0 ] || [ $prc -ne 0 ] && exit 1
exit 0
