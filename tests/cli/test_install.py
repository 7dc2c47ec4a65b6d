#!/usr/bin/env python3
"""The README's Install section: `meson install` of this build into a DESTDIR, then the
installed cuhook, run from another directory, traces the bundled sample with the installed agent
(the one its trace's mappings name) and reports ./trace.bin.

usage: test_install.py --build DIR --sample PATH --lib LIBCUDA"""

import argparse
import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "engine"))
from cuhooktest import Fatal, Problems, clean_env, need_file, run, run_main, work_directory  # noqa: E402
import tracefile  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    for o in ("--build", "--sample", "--lib"):
        ap.add_argument(o, required=True)
    a = ap.parse_args()
    need_file(a.sample, "sample_app")
    need_file(a.lib, "the stand-in libcuda")
    meson = shutil.which("meson")
    if not meson:
        raise Fatal("meson not on PATH")
    work = work_directory(None, "cuhook-install-")
    problems = Problems()
    dest = os.path.join(work, "root")
    # --no-rebuild: the build is meson test's; the install must not start a second ninja in it
    run([meson, "install", "-C", a.build, "--no-rebuild", "--destdir", dest, "--quiet"], what="meson install")
    installed = run([meson, "introspect", a.build, "--installed"], what="meson introspect").stdout
    cuhook = agent = None
    for target in json.loads(installed).values():  # build file: where it is installed
        if target.endswith("/bin/cuhook"):
            cuhook = dest + target
        elif target.endswith("/libcuhook.so"):
            agent = dest + target
    if not (cuhook and agent and os.access(cuhook, os.X_OK) and os.path.isfile(agent)):
        raise Fatal(f"the install has no cuhook or libcuhook.so: {installed}")

    elsewhere = os.path.join(work, "elsewhere")
    os.mkdir(elsewhere)
    sample = [os.path.abspath(a.sample), "--layers", "2", "--batches", "2", os.path.abspath(a.lib)]
    p = subprocess.run([cuhook, "run", "--"] + sample, cwd=elsewhere, env=clean_env(), capture_output=True,
                       text=True, timeout=120)
    trace = os.path.join(elsewhere, "trace.bin")
    problems.check(p.returncode == 0 and p.stdout.startswith("sample_app: 2 batches x 2 layers, 12 kernel launches")
                   and p.stderr.splitlines()[-1:] == [f"cuhook run: trace written to {trace}"],
                   f"installed cuhook run: exit {p.returncode}, {p.stdout!r} {p.stderr[-400:]!r}")
    if os.path.exists(trace):
        t = tracefile.read_trace(trace)
        agents = {m.path for b in t.maps_blocks for m in b if os.path.basename(m.path) == "libcuhook.so"}
        problems.check(agents == {os.path.realpath(agent)}, f"the traced sample mapped the agents {agents}, "
                                                             f"not the installed {agent}")
        problems.check(t.entries.get("cuLaunchKernel") == 12, f"cuLaunchKernel calls {t.entries.get('cuLaunchKernel')}")
    p = subprocess.run([cuhook, "report", "--no-color"], cwd=elsewhere, env=clean_env(), capture_output=True,
                       text=True, timeout=120)
    problems.check(p.returncode == 0 and p.stdout.startswith("cuhook report: trace.bin\n"),
                   f"installed cuhook report: exit {p.returncode}, {p.stdout[:200]!r} {p.stderr[-300:]!r}")
    problems.exit()


if __name__ == "__main__":
    run_main(main)
