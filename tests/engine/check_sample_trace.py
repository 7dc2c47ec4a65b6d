#!/usr/bin/env python3
"""The README's main job on the bundled sample (samples/sample_app.c): trace it, either with the
agent preloaded (LD_PRELOAD, constructor mode) or with `cuhook run`, and check that its result
line is unchanged and the report counts exactly the driver calls it makes.

usage: check_sample_trace.py --sample PATH --lib LIBCUDA --agent LIBCUHOOK --cuhook CUHOOK
           [--via preload|run] [--layers L] [--batches B] [--workdir DIR]"""

import argparse
import os
import sys

from cuhooktest import (Fatal, Problems, calls_by_name, check_trace_health, clean_env, need_file,
                        report_json, run, run_main, work_directory)


def expected_calls(layers, batches):
    """What sample_app.c calls, function by function (its entry point table has 17 names)."""
    return {
        "cuGetProcAddress_v2": 17,
        "cuInit": 1, "cuDeviceGet": 1, "cuDevicePrimaryCtxRetain": 1, "cuCtxSetCurrent": 1,
        "cuModuleLoadData": 1, "cuModuleGetFunction": 3, "cuStreamCreate": 1,
        "cuMemAlloc_v2": layers + 2, "cuMemcpyHtoD_v2": layers + batches,
        "cuLaunchKernel": 3 * layers * batches, "cuStreamSynchronize": batches,
        "cuMemcpyDtoH_v2": batches, "cuMemFree_v2": layers + 2, "cuStreamDestroy_v2": 1,
        "cuModuleUnload": 1, "cuDevicePrimaryCtxRelease_v2": 1,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--via", choices=("preload", "run"), default="preload")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--workdir")
    a = ap.parse_args()
    for path, what in ((a.sample, "sample_app"), (a.lib, "the stand-in libcuda"),
                       (a.agent, "the agent libcuhook.so"), (a.cuhook, "the cuhook CLI")):
        need_file(path, what)
    workdir = work_directory(a.workdir, "cuhook-sample-")
    problems = Problems()

    cmd = [a.sample, "--layers", str(a.layers), "--batches", str(a.batches), a.lib]
    plain = run(cmd, env=clean_env(), what="sample_app (untraced)").stdout.strip()
    trace = os.path.join(workdir, "trace.bin")
    if os.path.exists(trace):
        os.unlink(trace)
    if a.via == "preload":
        env = clean_env({"CUHOOK_OUTPUT": trace})
        env["LD_PRELOAD"] = (a.agent + " " + env.get("LD_PRELOAD", "")).strip()
        traced = run(cmd, env=env, what="sample_app (LD_PRELOAD agent)").stdout.strip()
    else:
        out = run([a.cuhook, "run", "-o", trace, "--"] + cmd, env=clean_env(), what="cuhook run").stdout
        traced = next((l for l in out.splitlines() if l.startswith("sample_app:")), out.strip())
    problems.check(plain == traced, f"result changed under tracing: {plain!r} vs {traced!r}")
    need_file(trace, "the trace")

    rep = report_json(a.cuhook, trace, workdir)
    check_trace_health(rep, problems)
    calls = calls_by_name(rep)
    want = expected_calls(a.layers, a.batches)
    for name in sorted(set(calls) | set(want)):
        problems.check(calls.get(name, 0) == want.get(name, 0),
                       f"{name}: {calls.get(name, 0)} traced calls, expected {want.get(name, 0)}")
    problems.exit()


if __name__ == "__main__":
    run_main(main)
