#!/usr/bin/env python3
"""Engine test on the CUDA toolkit's stub libcuda.so (every cu* export returns 34,
CUDA_ERROR_STUB_LIBRARY): stub_user calls each of them k % 3 + 1 times under the agent (its
default CUHOOK_LIB glob libcuda.so* matches the stub's file name), then:

  - every call still returned 34 (stub_user exits 0);
  - the stub's cu* functions (read here from its .dynsym, independently of stub_user) are each
    either traced with exactly the calls made (recorded, or counted for those of the agent's
    default count list), or refused with a reason and never traced;
  - no calls of anything else, nothing dropped or damaged.

Exits 77 (skipped) only when the stub library is not installed.

usage: check_stub_trace.py --stub-user PATH --stub STUB_LIBCUDA --agent LIBCUHOOK --cuhook CUHOOK
           [--workdir DIR]"""

import argparse
import os
import struct
import sys

from cuhooktest import (SKIP, Fatal, Problems, calls_by_name, check_trace_health, clean_env,
                        counted_by_name, counted_names, default_count, need_file,
                        parse_target_output, refused_by_name, report_json, run, run_main,
                        work_directory)

STUB_RESULT = 34


def dynsym_functions(path):
    """Names of the defined FUNC symbols starting with 'cu' in an ELF64 file's .dynsym."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise Fatal(f"{path}: not a 64-bit ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = []
    for (_, sh_type, _, _, off, size, link, _, _, entsize) in sections:
        if sh_type != 11:  # SHT_DYNSYM
            continue
        stroff = sections[link][4]
        for k in range(size // (entsize or 24)):
            st_name, st_info, _, st_shndx, _, _ = struct.unpack_from("<IBBHQQ", data, off + k * 24)
            end = data.index(b"\0", stroff + st_name)
            name = data[stroff + st_name:end].decode()
            if st_info & 0xf == 2 and st_shndx != 0 and name.startswith("cu"):  # STT_FUNC, defined
                names.append(name)
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stub-user", required=True)
    ap.add_argument("--stub", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--workdir")
    a = ap.parse_args()
    if not os.path.exists(a.stub):
        print(f"SKIP: no stub libcuda at {a.stub} (CUDA toolkit not installed)")
        sys.exit(SKIP)
    for path, what in ((a.stub_user, "stub_user"), (a.agent, "the agent libcuhook.so"),
                       (a.cuhook, "the cuhook CLI")):
        need_file(path, what)
    workdir = work_directory(a.workdir, "cuhook-stub-")
    problems = Problems()

    names = dynsym_functions(a.stub)
    plain = parse_target_output(run([a.stub_user, a.stub], env=clean_env(), what="stub_user (untraced)").stdout)
    if int(plain.get("functions", -1)) != len(names) or set(plain["expect"]) != set(names):
        raise Fatal(f"stub_user sees {plain.get('functions')} functions, .dynsym has {len(names)}")

    trace = os.path.join(workdir, "trace.bin")
    if os.path.exists(trace):
        os.unlink(trace)
    p = run([a.stub_user, "--agent", a.agent, a.stub], env=clean_env({"CUHOOK_OUTPUT": trace}),
            what="stub_user (traced; a nonzero exit means some call did not return 34)")
    traced = parse_target_output(p.stdout)
    problems.check(not traced["bad"], f"calls that did not return {STUB_RESULT}: {traced['bad'][:10]}")
    need_file(trace, "the trace the agent should have written (CUHOOK_OUTPUT)")

    rep = report_json(a.cuhook, trace, workdir)
    check_trace_health(rep, problems)
    calls = calls_by_name(rep)
    counts = counted_by_name(rep)
    counted = counted_names(default_count(), names)
    refused = refused_by_name(rep)
    patched = 0
    for name in names:
        want = traced["expect"][name]
        if name in refused:
            problems.check(refused[name].strip() != "", f"{name} refused without a reason")
            problems.check(calls.get(name, 0) == 0, f"{name} is refused but has {calls.get(name)} traced calls")
        elif problems.check(name in calls or name in counts, f"{name}: neither traced nor refused"):
            patched += 1
            if name in counted:
                problems.check((calls.get(name, 0), counts.get(name, 0)) == (0, want),
                               f"{name} (counted by default): {calls.get(name, 0)} recorded and "
                               f"{counts.get(name, 0)} counted calls, expected 0 and {want}")
            else:
                problems.check((calls[name], counts.get(name, 0)) == (want, 0),
                               f"{name}: {calls[name]} traced and {counts.get(name, 0)} counted calls, "
                               f"expected {want} and 0")
    for name in sorted(set(calls) - set(names)):
        problems.add(f"{calls[name]} traced calls of {name}, which is not a function of the stub")
    print(f"{len(names)} functions: {patched} traced ({len(counted)} counted by default: "
          f"{', '.join(sorted(counted))}), {len(refused)} refused")
    for name, reason in sorted(refused.items())[:20]:
        print(f"  refused {name}: {reason}")
    problems.exit()


if __name__ == "__main__":
    run_main(main)
