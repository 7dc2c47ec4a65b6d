#!/bin/bash
# Builds cuhook and runs every test (unit, engine, injector, report), then the sanitizer pass:
# a second tree build-asan (-Db_sanitize=address,undefined) running the suites that do not inject
# the agent into other processes: unit, report (not the `slow` speed test: sanitizers make it
# meaningless) and fuzz (the libFuzzer harnesses, which are sanitized by themselves; run only
# here). Only the targets those suites use are built there: the agent (libcuhook.so) lives in
# other processes and is never built sanitized, and the injector's static test target cannot be
# (-static with -fsanitize=address). CUHOOK_NO_ASAN=1 skips the sanitizer pass.
# Ends with a plain "N passed, N failed" line over both passes and exits non-zero if any test
# failed.
set -u
cd "$(dirname "$0")/.."
bash scripts/build.sh || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }
meson test -C build --print-errorlogs --num-processes 2 --no-suite fuzz "$@"
rc=$?
logs=(build/meson-logs/testlog.json)

if [ "${CUHOOK_NO_ASAN:-0}" != 1 ]; then
	asan_ok=1
	if [ ! -f build-asan/build.ninja ]; then
		meson setup -Db_sanitize=address,undefined -Db_lundef=false build-asan >build-asan.setup.log 2>&1 ||
			{ cat build-asan.setup.log; asan_ok=0; }
		rm -f build-asan.setup.log
	fi
	# a tree configured before the last change of a meson.build: regenerate it first, or the
	# list of targets below comes from the old configuration
	[ $asan_ok = 1 ] && { ninja -C build-asan build.ninja >/dev/null || asan_ok=0; }
	if [ $asan_ok = 1 ]; then
		# the targets the three suites depend on (tests' executables and their depends)
		targets=$(python3 - build-asan <<'PY'
import json, os, subprocess, sys
b = sys.argv[1]
intro = lambda what: json.loads(subprocess.check_output(["meson", "introspect", what, b]))
by_id = {t["id"]: t for t in intro("--targets")}
want = set()
for t in intro("--tests"):
    suites = {s.split(":")[-1] for s in t["suite"]}
    if suites & {"unit", "report", "fuzz"} and "slow" not in suites:
        want.update(t["depends"])
files = set()
for i in want:
    for f in by_id[i]["filename"]:
        files.add(os.path.relpath(f, os.path.abspath(b)))
print("\n".join(sorted(files)))
PY
)
		if [ -z "$targets" ] || ! ninja -C build-asan $targets >/dev/null; then
			echo "build-asan: building the sanitized targets failed"
			asan_ok=0
		fi
	fi
	if [ $asan_ok = 1 ]; then
		# halt_on_error: the first report fails the test; leaks are errors too
		ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
			UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
			meson test -C build-asan --no-rebuild --print-errorlogs --num-processes 2 \
			--suite unit --suite report --suite fuzz --no-suite slow
		[ $? -eq 0 ] || rc=1
		logs+=(build-asan/meson-logs/testlog.json)
	else
		echo "sanitizer pass: build failed"
		rc=1
		asan_build_failed=1
	fi
fi

python3 - "${logs[@]}" "${asan_build_failed:-0}" <<'PY'
import json, sys
passed = failed = skipped = 0
*logs, build_failed = sys.argv[1:]
for log in logs:
    for line in open(log):
        r = json.loads(line)
        res = r.get("result")
        if res in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif res == "SKIP":
            skipped += 1
        else:
            failed += 1
failed += int(build_failed)
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
PY
prc=$?
[ $rc -ne 0 ] || [ $prc -ne 0 ] && exit 1
exit 0
