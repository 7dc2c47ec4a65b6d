#!/usr/bin/env python3
"""The ioctl watch (issue 6; tests/ioctl/meson.build lists the cases). Runs ioctl_user untraced
and with the agent (constructor mode, CUHOOK_IOCTL=1, CUHOOK_IOCTL_PATHS pointing at the work
directory's "device files"), checks that the program behaved the same, then reads the trace back
with `cuhook report` (jsonl, json, csv, chrome, folded, text) and checks every ioctl: count,
order, the caller it is nested under and its depth, the fd and request, the decoded details, the
argument bytes (or errno), and the report's "Driver boundary" section.

usage: check_ioctl_trace.py CASE --agent LIBCUHOOK --cuhook CUHOOK --lib LIBCUDA --user IOCTL_USER
                            --workdir DIR
CASE: emulated | enotty | default-paths | exclude | off | cycle"""

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys

from cuhooktest import (SKIP, Fatal, Problems, check_trace_health, clean_env,
                        case_function, need_file, report, run_main, tail, work_directory)

TIMEOUT = 60
FIONREAD, TCGETS = 0x541B, 0x5401
ENOTTY = 25


def iowr(nr, size):
    return (3 << 30) | (size << 16) | (0x46 << 8) | nr


REQ = {
    "CHECK_VERSION_STR": iowr(210, 72), "REGISTER_FD": iowr(201, 4), "RM_ALLOC": iowr(0x2B, 32),
    "RM_CONTROL": iowr(0x2A, 32), "XFER_CMD>RM_CONTROL": iowr(211, 16), "RM_FREE": iowr(0x29, 16),
    "UVM_INITIALIZE": 0x30000001, "UVM_REGISTER_GPU": 37, "'F' 0x99": iowr(0x99, 8),
    "0x00012345": 0x12345,
}
BASE = 0xCAF00000

# The ioctls ioctl_user makes, in order: (caller, its caller, depth, label, fd key, details that
# must appear when the "driver" answered, failed when emulated).
E = [
    ("cuFakeNvOpen", None, 1, "CHECK_VERSION_STR", "ctl", ['version "580.159.04"', "reply 1"], False),
    ("cuFakeNvOpen", None, 1, "REGISTER_FD", "dev", ["ctl_fd {ctl}"], False),
    ("cuFakeNvAlloc", None, 1, "RM_ALLOC", "ctl", ["class 0x41 NV01_ROOT_CLIENT", f"-> {BASE + 1:#x}", "NV_OK"], False),
    ("cuFakeNvAlloc", None, 1, "RM_ALLOC", "ctl", ["class 0x80 NV01_DEVICE_0", f"-> {BASE + 2:#x}", "NV_OK"], False),
    ("cuFakeNvAlloc", None, 1, "RM_ALLOC", "ctl", ["class 0x2080 NV20_SUBDEVICE_0", f"-> {BASE + 3:#x}", "NV_OK"], False),
    ("cuFakeNvAlloc", None, 1, "RM_ALLOC", "ctl", ["class 0xdead", "NV_ERR_INVALID_CLASS"], True),
    ("cuFakeNvControl", None, 1, "RM_CONTROL", "ctl",
     ["cmd 0x20800110 NV2080_CTRL_CMD_GPU_GET_NAME_STRING", f"client {BASE + 1:#x} object {BASE + 3:#x}", "NV_OK"], False),
] + [("cuFakeNvControl", None, 1, "RM_CONTROL", "ctl", ["cmd 0x20801201 NV2080_CTRL_CMD_GR_GET_INFO", "NV_OK"], False)] * 5 + [
    ("cuFakeNvControl", None, 1, "RM_CONTROL", "ctl", ["cmd 0xbad0bad0", "NV_ERR_NOT_SUPPORTED"], True),
    ("cuFakeNvControlXfer", None, 1, "XFER_CMD>RM_CONTROL", "ctl",
     ["cmd 0x20800102 NV2080_CTRL_CMD_GPU_GET_INFO_V2", "NV_OK"], False),
    ("cuFakeNvUvm", None, 1, "UVM_INITIALIZE", "uvm", ["NV_OK"], False),
    ("cuFakeNvUvm", None, 1, "UVM_REGISTER_GPU", "uvm", ["NV_OK"], False),
    ("cuFakeNvControl", "cuFakeNvNested", 2, "RM_CONTROL", "ctl", ["cmd 0x20800102", "NV_OK"], False),
    ("cuFakeNvControl", "cuFakeNvNested", 2, "RM_CONTROL", "ctl", ["cmd 0x20800102", "NV_OK"], False),
    ("cuFakeNvUnknown", None, 1, "'F' 0x99", "ctl", ["request 0xc0084699", "-> -1 ENOTTY (25)"], True),
    ("cuFakeNvUnknown", None, 1, "0x00012345", "ctl", ["0x00012345 -> -1 ENOTTY (25)"], True),
    (None, None, 0, "RM_CONTROL", "ctl", ["cmd 0x20800110", "NV_OK"], False),
    ("cuFakeNvFree", None, 1, "RM_FREE", "ctl", [f"client {BASE + 1:#x} object {BASE + 3:#x}", "NV_OK"], False),
    (None, None, 0, "CHECK_VERSION_STR", "rawctl", ['version "580.159.04"', "reply 1"], False),
    ("cuFakeNvOpen", None, 1, "CHECK_VERSION_STR", "reopen", ['version "580.159.04"'], False),
    ("cuFakeNvOpen", None, 1, "REGISTER_FD", "reopen_dev", [], False),
]
# the fd keys' values in ioctl_user's output
FD_KEYS = {"ctl": "fd_ctl", "dev": "fd_dev", "uvm": "fd_uvm", "reopen": "reopen_ctl", "rawctl": "raw_ctl"}
# argument bytes the agent copies for each request (min(_IOC_SIZE, 64); UVM: 64 in the page)
ARG_BYTES = {"CHECK_VERSION_STR": 64, "REGISTER_FD": 4, "RM_ALLOC": 32, "RM_CONTROL": 32,
             "XFER_CMD>RM_CONTROL": 16, "RM_FREE": 16, "UVM_INITIALIZE": 64, "UVM_REGISTER_GPU": 64}


class Ctx:
    def __init__(self, a):
        self.a = a
        self.problems = Problems()
        self.devdir = os.path.join(a.workdir, "dev")

    def path(self, name):
        return os.path.join(self.a.workdir, name)


def run_user(ctx, traced, emulate, env=None, extra=()):
    cmd = [ctx.a.user] + (["--agent", ctx.a.agent] if traced else []) + \
          (["--emulate"] if emulate else []) + list(extra) + ["--dir", ctx.devdir, ctx.a.lib]
    try:
        p = subprocess.run(cmd, env=clean_env(env), capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Fatal(f"ioctl_user did not finish in {TIMEOUT} s: {' '.join(cmd)}")
    return p


def parse(text):
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        if k != "bad":
            out[k] = v
    return out


def same_behaviour(ctx, plain, traced):
    pb = ctx.problems
    pb.check(traced.returncode == plain.returncode,
             f"exit status {traced.returncode} traced, {plain.returncode} untraced\n{tail(traced.stderr)}")
    a, b = parse(plain.stdout), parse(traced.stdout)
    # fd numbers differ by the agent's own trace file; the rest must be identical
    skip = {"fd_ctl", "fd_dev", "fd_uvm", "reuse_fd", "plain_fd", "reopen_ctl", "raw_ctl"}
    for k in sorted(set(a) | set(b)):
        if k not in skip:
            pb.check(a.get(k) == b.get(k), f"output '{k}': untraced {a.get(k)!r}, traced {b.get(k)!r}")
    pb.check("bad 0" in traced.stdout, f"ioctl_user saw wrong results when traced:\n{tail(traced.stdout)}")
    noise = [ln for ln in traced.stderr.splitlines() if ln.strip()]
    pb.check(not noise, "unexpected messages on stderr:\n" + "\n".join(noise[:10]))
    return b


def traced_run(ctx, emulate, env, extra=()):
    if os.path.exists(ctx.devdir):
        shutil.rmtree(ctx.devdir)
    os.makedirs(ctx.devdir)
    plain = run_user(ctx, False, emulate, extra=extra)
    if plain.returncode == SKIP:
        print(f"SKIP: {plain.stdout.strip()}")
        sys.exit(SKIP)
    if plain.returncode != 0:
        raise Fatal(f"untraced ioctl_user exited {plain.returncode}\n{tail(plain.stdout)}\n{tail(plain.stderr)}")
    shutil.rmtree(ctx.devdir)
    os.makedirs(ctx.devdir)
    trace = ctx.path("trace.bin")
    if os.path.exists(trace):
        os.unlink(trace)
    e = {"CUHOOK_OUTPUT": trace}
    e.update(env)
    traced = run_user(ctx, True, emulate, e, extra)
    out = same_behaviour(ctx, plain, traced)
    need_file(trace, "the trace")
    return trace, out


def reports(ctx, trace):
    c = ctx.a.cuhook
    jl = [json.loads(line) for line in report(c, trace, "jsonl", ctx.path("r.jsonl")).splitlines() if line.strip()]
    js = json.loads(report(c, trace, "json", ctx.path("r.json")))
    rows = list(csv.DictReader(report(c, trace, "csv", ctx.path("r.csv")).splitlines()))
    chrome = json.loads(report(c, trace, "chrome", ctx.path("r.chrome.json")))
    folded = report(c, trace, "folded", ctx.path("r.folded"))
    text = report(c, trace, "text", ctx.path("r.txt"))
    check_trace_health(js, ctx.problems)
    return jl, js, rows, chrome, folded, text


def check_sequence(ctx, jl, out, emulated, expected, setup=True):
    pb = ctx.problems
    by_id = {c["id"]: c for c in jl}
    io = [c for c in jl if c["func"] == "ioctl"]
    if not pb.check(len(io) == len(expected), f"{len(io)} ioctl calls recorded, expected {len(expected)}: " +
                    "; ".join(f"{c['args'][1]} on fd {int(c['args'][0], 16)}" for c in io)):
        return io
    fds = {k: int(out[v]) for k, v in FD_KEYS.items() if v in out}
    fds["reopen_dev"] = None  # checked through the reopen's ctl fd only
    for i, (c, (caller, grand, depth, label, fdkey, details, failed)) in enumerate(zip(io, expected)):
        where = f"ioctl #{i + 1} ({label})"
        parent = by_id.get(c["parent"]) if c["parent"] is not None else None
        pb.check((parent["func"] if parent else None) == caller,
                 f"{where}: nested under {parent['func'] if parent else None}, expected {caller}")
        if grand:
            gp = by_id.get(parent["parent"]) if parent and parent["parent"] is not None else None
            pb.check(gp is not None and gp["func"] == grand, f"{where}: caller's caller {gp and gp['func']}, expected {grand}")
        pb.check(c["depth"] == depth, f"{where}: depth {c['depth']}, expected {depth}")
        if parent:
            pb.check(parent["depth"] == depth - 1, f"{where}: caller at depth {parent['depth']}")
            pb.check(parent["start_ns"] <= c["start_ns"] and c["end_ns"] <= parent["end_ns"],
                     f"{where}: [{c['start_ns']}, {c['end_ns']}] not inside its caller's "
                     f"[{parent['start_ns']}, {parent['end_ns']}]")
        pb.check(c["category"] == "ioctl", f"{where}: category {c['category']}")
        req = int(c["args"][1], 16) & 0xFFFFFFFF
        pb.check(req == REQ[label], f"{where}: request {req:#x}, expected {REQ[label]:#x}")
        if fds.get(fdkey) is not None:
            pb.check(int(c["args"][0], 16) == fds[fdkey], f"{where}: fd {int(c['args'][0], 16)}, expected {fds[fdkey]}")
        det = c["details"]
        shown = label if emulated or label != "XFER_CMD>RM_CONTROL" else "XFER_CMD"  # no bytes: no command
        pb.check(det.startswith(shown), f"{where}: details {det!r} do not start with {shown!r}")
        ret = int(c["ret"], 16) & 0xFFFFFFFF
        dec = c["decoded"]
        if emulated:
            for d in details:
                d = d.format(ctl=fds.get("ctl"))
                pb.check(d in det, f"{where}: {d!r} not in details {det!r}")
            want_ret = 0xFFFFFFFF if label in ("'F' 0x99", "0x00012345") else 0
            pb.check(ret == want_ret, f"{where}: ret {ret:#x}, expected {want_ret:#x}")
            if want_ret == 0:
                n = ARG_BYTES[label]
                pb.check(dec.startswith(f"arg_bytes={n:#x};errno=0x0;arg="),
                         f"{where}: decoded {dec[:60]!r}..., expected {n} argument bytes")
                raw = dec.partition(";arg=")[2]
                extra = 32 if label == "XFER_CMD>RM_CONTROL" else 0  # the NVOS54 the XFER carried
                pb.check(len(raw) == 2 * (n + extra), f"{where}: {len(raw) // 2} bytes recorded, expected {n + extra}")
                if label == "RM_CONTROL" and len(raw) >= 24:
                    cmd = int.from_bytes(bytes.fromhex(raw[16:24]), "little")
                    pb.check(f"cmd {cmd:#010x}" in det, f"{where}: raw cmd {cmd:#x} vs details {det!r}")
            else:
                pb.check(dec == f"arg_bytes=0x0;errno={ENOTTY:#x}", f"{where}: decoded {dec!r}")
            shows_failure = "NV_ERR" in det or "-> -1" in det
            pb.check(shows_failure == failed, f"{where}: details {det!r}, failure expected: {failed}")
        else:
            pb.check(ret == 0xFFFFFFFF, f"{where}: ret {ret:#x}, expected -1")
            pb.check(dec == f"arg_bytes=0x0;errno={ENOTTY:#x}", f"{where}: decoded {dec!r}")
            pb.check(det.endswith("-> -1 ENOTTY (25)"), f"{where}: details {det!r}")
            pb.check("NV_OK" not in det and "status" not in det, f"{where}: a status without bytes: {det!r}")
    # never a request of the files that are not devices
    for c in io:
        req = int(c["args"][1], 16) & 0xFFFFFFFF
        pb.check(req not in (FIONREAD, TCGETS), f"a non-NVIDIA ioctl was recorded: {req:#x}")
    if setup:
        pb.check(out.get("reuse_same_number") == "1",
                 f"test setup: reuse.dat did not get nvidiactl's old number ({out.get('reuse_fd')} vs {out.get('fd_ctl')})")
        pb.check(out.get("raw_same_number") == "1",
                 f"test setup: the raw nvidiactl did not get the fclose'd number ({out.get('raw_ctl')})")
        pb.check(out.get("reopen_same_number") == "1",
                 f"test setup: nvidiactl did not reuse the raw-closed number ({out.get('reopen_ctl')} vs {out.get('plain_fd')})")
    return io


def counts(rows, key):
    return {r[key]: r["count"] for r in rows}


def check_json(ctx, js, emulated, n_uvm=2):
    pb = ctx.problems
    names = {f["name"] for f in js.get("functions", [])}
    pb.check("ioctl" not in names, "the API summary lists ioctl")
    libs = [lib for lib in js.get("libraries", []) if lib.get("ioctl")]
    pb.check(len(libs) == 1 and "libc" in libs[0]["path"], f"libraries flagged ioctl: {libs}")
    s = js.get("ioctls")
    if not pb.check(s is not None, "json: no ioctls section"):
        return
    total = 23 + n_uvm
    pb.check(s["count"] == total, f"json ioctls.count {s['count']}, expected {total}")
    pb.check(s["outside_api"]["count"] == 2, f"json outside_api {s['outside_api']}")
    pb.check(s["failed"] == (4 if emulated else total), f"json failed {s['failed']}")
    pb.check(s["with_data"] == (total - 2 if emulated else 0), f"json with_data {s['with_data']}")
    want = {"RM_CONTROL": 10, "RM_ALLOC": 4, "CHECK_VERSION_STR": 3, "REGISTER_FD": 2, "XFER_CMD>RM_CONTROL": 1,
            "'F' 0x99": 1, "0x00012345": 1, "RM_FREE": 1}
    if n_uvm:
        want.update({"UVM_INITIALIZE": 1, "UVM_REGISTER_GPU": 1})
    if not emulated:  # without the argument bytes, what an XFER_CMD carried is unknown
        want["XFER_CMD"] = want.pop("XFER_CMD>RM_CONTROL")
    pb.check(counts(s["by_request"], "request") == want, f"json by_request {counts(s['by_request'], 'request')}")
    if emulated:
        pb.check(counts(s["rm_controls"], "cmd") ==
                 {"0x20800110": 2, "0x20801201": 5, "0xbad0bad0": 1, "0x20800102": 3},
                 f"json rm_controls {counts(s['rm_controls'], 'cmd')}")
        names = {r["cmd"]: r["name"] for r in s["rm_controls"]}
        pb.check(names.get("0x20801201") == "NV2080_CTRL_CMD_GR_GET_INFO" and names.get("0xbad0bad0") is None,
                 f"json rm_controls names {names}")
        pb.check(counts(s["alloc_classes"], "class") == {"0x41": 1, "0x80": 1, "0x2080": 1, "0xdead": 1},
                 f"json alloc_classes {counts(s['alloc_classes'], 'class')}")
        fails = {r["cmd"]: r["failed"] for r in s["rm_controls"]}
        pb.check(fails.get("0xbad0bad0") == 1 and sum(fails.values()) == 1, f"json rm_controls failed {fails}")
    else:
        pb.check(s["rm_controls"] == [] and s["alloc_classes"] == [], "json: commands decoded without bytes")
    fn = {r["name"]: r for r in s["by_function"]}
    want_fn = {"cuFakeNvOpen": (2, 2, 4), "cuFakeNvAlloc": (4, 4, 4), "cuFakeNvControl": (9, 9, 9),
               "cuFakeNvControlXfer": (1, 1, 1), "cuFakeNvUnknown": (1, 1, 2), "cuFakeNvFree": (1, 1, 1)}
    if n_uvm:
        want_fn["cuFakeNvUvm"] = (1, 1, 2)
    got_fn = {k: (v["calls"], v["calls_with_ioctls"], v["ioctls"]) for k, v in fn.items()}
    pb.check(got_fn == want_fn, f"json by_function {got_fn}, expected {want_fn}")
    for k, v in fn.items():
        pb.check(0 < v["in_driver_ns"] <= v["total_ns"], f"{k}: in_driver {v['in_driver_ns']} total {v['total_ns']}")
        pb.check(0 <= v["self_ns"] <= v["total_ns"] - v["in_driver_ns"],
                 f"{k}: self {v['self_ns']} > total - in_driver {v['total_ns'] - v['in_driver_ns']}")


def check_exports(ctx, rows, chrome, folded, text, n, emulated):
    pb = ctx.problems
    pb.check(sum(1 for r in rows if r["func"] == "ioctl") == n, "csv: ioctl rows")
    # a call is a begin event (B) and an end event (E) carrying its args, or one complete event (X)
    # when it took no time
    ev = [e for e in chrome["traceEvents"] if e.get("name") == "ioctl" and e.get("ph") in ("B", "X")]
    ends = [e for e in chrome["traceEvents"] if e.get("name") == "ioctl" and e.get("ph") == "E"]
    pb.check(len(ev) == n and all(e.get("cat") == "ioctl" for e in ev) and
             len(ends) == sum(1 for e in ev if e["ph"] == "B"), f"chrome: {len(ev)} ioctl slices, {len(ends)} ends")
    for stack in ("cuFakeNvNested;cuFakeNvControl;ioctl", "cuFakeNvAlloc;ioctl", "cuFakeNvUvm;ioctl"):
        pb.check(stack in folded, f"folded: no stack ending {stack}")
    for s in ("Driver boundary (ioctls)", f"{n} ioctls on NVIDIA device files", "(no traced caller)",
              "cuFakeNvControl", "RM_CONTROL", "XFER_CMD>RM_CONTROL" if emulated else "XFER_CMD",
              "and libc's ioctl, on NVIDIA device files"):
        pb.check(s in text, f"text report lacks {s!r}")
    if emulated:
        for s in ("RM control commands", "NV2080_CTRL_CMD_GR_GET_INFO", "Allocation classes", "NV01_ROOT_CLIENT",
                  "Failed ioctls", "NV_ERR_INVALID_CLASS"):
            pb.check(s in text, f"text report lacks {s!r}")


def case_emulated(ctx, emulated=True):
    env = {"CUHOOK_IOCTL": "1", "CUHOOK_IOCTL_PATHS": os.path.join(ctx.devdir, "nvidia*")}
    trace, out = traced_run(ctx, emulated, env)
    if emulated:
        ctx.problems.check(out.get("gpu_name") == "FakeGPU", f"gpu_name {out.get('gpu_name')}")
    jl, js, rows, chrome, folded, text = reports(ctx, trace)
    check_sequence(ctx, jl, out, emulated, E)
    check_json(ctx, js, emulated)
    check_exports(ctx, rows, chrome, folded, text, len(E), emulated)


def case_enotty(ctx):
    case_emulated(ctx, emulated=False)


def case_exclude(ctx):
    env = {"CUHOOK_IOCTL": "1",
           "CUHOOK_IOCTL_PATHS": os.path.join(ctx.devdir, "nvidia*") + ",-*/nvidia-uvm"}
    trace, out = traced_run(ctx, True, env)
    jl, js, rows, chrome, folded, text = reports(ctx, trace)
    check_sequence(ctx, jl, out, True, [e for e in E if e[4] != "uvm"])
    check_json(ctx, js, True, n_uvm=0)


def case_default_paths(ctx):
    trace, out = traced_run(ctx, True, {"CUHOOK_IOCTL": "1"})
    jl, js, rows, chrome, folded, text = reports(ctx, trace)
    pb = ctx.problems
    pb.check(not [c for c in jl if c["func"] == "ioctl"], "ioctls recorded on files outside /dev/nvidia*")
    pb.check(js.get("ioctls", {}).get("count") == 0, f"json ioctls {js.get('ioctls')}")
    pb.check(any(lib.get("ioctl") for lib in js.get("libraries", [])), "the ioctl library is not listed")
    pb.check(sum(1 for c in jl if c["func"] == "cuFakeNvControl") == 9, "cuFakeNvControl calls")


def case_off(ctx):
    trace, out = traced_run(ctx, True, {})
    jl, js, rows, chrome, folded, text = reports(ctx, trace)
    pb = ctx.problems
    pb.check(not [c for c in jl if c["func"] == "ioctl"], "ioctls recorded without ioctl=1")
    pb.check("ioctls" not in js, "json has an ioctls section without ioctl=1")
    pb.check(not any(lib.get("ioctl") for lib in js.get("libraries", [])), "an ioctl library without ioctl=1")
    pb.check("Driver boundary" not in text, "text report has the ioctl section without ioctl=1")
    pb.check(sum(1 for c in jl if c["func"] == "cuFakeNvAlloc") == 4, "cuFakeNvAlloc calls")


def case_cycle(ctx):
    """stop, a raw openat reusing nvidiactl's number while stopped, start again (a new trace)"""
    second = ctx.path("trace2.bin")
    if os.path.exists(second):
        os.unlink(second)
    env = {"CUHOOK_IOCTL": "1", "CUHOOK_IOCTL_PATHS": os.path.join(ctx.devdir, "nvidia*")}
    trace, out = traced_run(ctx, True, env, ["--cycle", second])
    pb = ctx.problems
    jl, js, *_ = reports(ctx, trace)
    first = E[:-3]  # up to RM_FREE: the agent stopped before the close
    check_sequence(ctx, jl, out, True, first, setup=False)
    pb.check(js["ioctls"]["count"] == len(first), f"first trace: {js['ioctls']['count']} ioctls")
    need_file(second, "the trace after the restart")
    c = ctx.a.cuhook
    jl2 = [json.loads(line) for line in report(c, second, "jsonl", ctx.path("r2.jsonl")).splitlines() if line.strip()]
    js2 = json.loads(report(c, second, "json", ctx.path("r2.json")))
    check_trace_health(js2, pb)
    check_sequence(ctx, jl2, out, True, E[-3:])
    pb.check(js2["ioctls"]["count"] == 3 and js2["ioctls"]["outside_api"]["count"] == 1,
             f"second trace: {js2['ioctls']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", help="case_CASE below (tests/ioctl/meson.build lists them)")
    for opt in ("--agent", "--cuhook", "--lib", "--user", "--workdir"):
        ap.add_argument(opt, required=True)
    a = ap.parse_args()
    for what, path in (("agent", a.agent), ("cuhook", a.cuhook), ("libcuda stand-in", a.lib), ("ioctl_user", a.user)):
        need_file(path, what)
    a.workdir = work_directory(a.workdir, "cuhook-ioctl-")
    ctx = Ctx(a)
    case_function(globals(), "case_", a.case)(ctx)
    ctx.problems.exit()


if __name__ == "__main__":
    run_main(main)
