#!/usr/bin/env python3
"""The report's Devices section (src/report/devices.c) on tests/targets/devices_user.c: two
devices worked on from two threads, a context switch mid-thread, a created context pushed and
popped, a stream used from another context and from another thread. The program labels each of
its calls with the device it works on (0, 1, unknown, none) and prints per label what the report
must find ("expect" lines); the JSON report's "devices", the text report's Devices rows and the
csv/jsonl per-call device must say exactly that.

  --mode constructor   the agent dlopened by the program before its first call (CUHOOK_OUTPUT):
                       every call's device is known (or none)
  --mode attach        cuhook attach after both threads set their contexts: their calls are on
                       an unknown device until one retains and sets a context in the window"""
import argparse
import collections
import json
import os
import subprocess

from cuhooktest import (Fatal, Problems, check_trace_health, clean_env, report, report_csv, report_json, run_attached,
                        run_main, tail, work_directory)

LABELS = ["0", "1", "unknown", "none"]
DIRECTIONS = ["H2D", "D2H", "D2D", "memset"]


def expectations(out):
    """{label: {key: int}} from the lines "expect LABEL key value key value ..."."""
    want = {}
    for line in out.splitlines():
        words = line.split()
        if len(words) > 2 and words[0] == "expect":
            want[words[1]] = {k: int(v) for k, v in zip(words[2::2], words[3::2])}
    if sorted(want) != sorted(LABELS):
        raise Fatal(f"devices_user's expectations: {out!r}")
    return want


def fmt_bytes(b):
    """As the text report writes bytes (rp_fmt_bytes)."""
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    u, x = 0, float(b)
    while x >= 1024 and u + 1 < len(units):
        x /= 1024
        u += 1
    return f"{x:.0f} B" if u == 0 else f"{x:.2f} {units[u]}"


def json_rows(rep):
    d = rep.get("devices")
    if not isinstance(d, dict):
        raise Fatal(f"no devices in the JSON report: {sorted(rep)}")
    rows = {str(r["device"]): r for r in d["list"]}
    rows["unknown"], rows["none"] = d["unknown"], d["none"]
    return rows


def check_json(rep, want, problems, what):
    rows = json_rows(rep)
    problems.check(sorted(k for k in rows if k not in ("unknown", "none")) ==
                   sorted(k for k in ("0", "1") if want[k]["calls"]),
                   f"{what}: device rows {sorted(rows)} for {want}")
    for label in LABELS:
        w, r = want[label], rows.get(label)
        if r is None:
            continue
        by_dir = {t["direction"]: t["bytes"] for t in r["transfers"]}
        got = {"calls": r["calls"], "launches": r["launches"], "allocs": r["alloc_calls"],
               "peak": r["peak_alloc_bytes"], "threads": r["threads"],
               **{k: by_dir.get(k, 0) for k in DIRECTIONS}}
        problems.check(got == {k: w[k] for k in got}, f"{what}: device {label}: got {got}, want {w}")
        problems.check(r["outermost_calls"] == r["calls"], f"{what}: device {label}: nested calls {r}")
    # every selected call is in one row, and the rows' host time is the API time
    problems.check(sum(r["calls"] for r in rows.values()) == rep["selected_calls"],
                   f"{what}: the rows' calls {sum(r['calls'] for r in rows.values())} != {rep['selected_calls']}")
    problems.check(sum(r["host_ns"] for r in rows.values()) == rep["api_ns"],
                   f"{what}: the rows' host time != api_ns {rep['api_ns']}")


def check_text(text, want, problems, what):
    lines = text.splitlines()
    try:
        start = lines.index(next(ln for ln in lines if ln.startswith("Devices (")))
    except StopIteration:
        problems.check(False, f"{what}: no Devices section:\n{tail(text, 3000)}")
        return
    rows = {}
    for ln in lines[start + 2:]:
        if not ln.startswith("  ") or ln.startswith("  ("):
            break
        rows[ln.split()[0]] = ln
    for label in LABELS:
        w = want[label]
        if not w["calls"]:
            problems.check(label not in rows, f"{what}: a row for {label}, which has no call: {rows.get(label)}")
            continue
        ln = rows.get(label)
        if not problems.check(ln is not None, f"{what}: no text row for {label}:\n" + "\n".join(lines[start:start + 8])):
            continue
        # Device Calls Host-time(2 words) Launches H2D D2H D2D Other Memset Allocs Peak Threads
        words = ln.split()
        got = (words[1], words[4], " ".join(words[5:7]), " ".join(words[7:9]), " ".join(words[9:11]),
               " ".join(words[13:15]), words[15], " ".join(words[16:18]), words[18])
        exp = (str(w["calls"]), str(w["launches"]), fmt_bytes(w["H2D"]), fmt_bytes(w["D2H"]), fmt_bytes(w["D2D"]),
               fmt_bytes(w["memset"]), str(w["allocs"]), fmt_bytes(w["peak"]), str(w["threads"]))
        problems.check(got == exp, f"{what}: text row {label}: {ln!r}, want {exp}")


def check_exports(a, work, trace, want, problems, what):
    """csv's call_device and jsonl's device: per call, the same counts."""
    rows = report_csv(a.cuhook, trace, work)
    by = collections.Counter(r["call_device"] or "-" for r in rows)
    exp = {"0": want["0"]["calls"], "1": want["1"]["calls"], "-": want["unknown"]["calls"] + want["none"]["calls"]}
    problems.check(by == {k: v for k, v in exp.items() if v}, f"{what}: csv calls per call_device {dict(by)}, want {exp}")
    text = report(a.cuhook, trace, "jsonl", os.path.join(work, "report.jsonl"))
    jl = collections.Counter(json.loads(ln)["device"] for ln in text.splitlines())
    problems.check(jl == {int(k) if k != "-" else None: v for k, v in exp.items() if v},
                   f"{what}: jsonl calls per device {dict(jl)}, want {exp}")


def check_all(a, work, trace, out, problems, what):
    want = expectations(out)
    rep = report_json(a.cuhook, trace, work)
    check_trace_health(rep, problems)
    check_json(rep, want, problems, what)
    check_text(report(a.cuhook, trace, "text", os.path.join(work, "report.txt")), want, problems, what)
    check_exports(a, work, trace, want, problems, what)


def mode_constructor(a, work, problems):
    trace = os.path.join(work, "devices.bin")
    env = clean_env({"CUHOOK_OUTPUT": trace})
    p = subprocess.run([a.target, a.lib, "--agent", a.agent], env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise Fatal(f"devices_user exited with {p.returncode}:\n{p.stdout}\n{p.stderr}")
    check_all(a, work, trace, p.stdout, problems, "constructor")


def mode_attach(a, work, problems):
    trace = os.path.join(work, "attach.bin")
    out = run_attached(a.cuhook, a.agent, [a.target, a.lib, "--wait"], trace, problems)
    check_all(a, work, trace, out, problems, "attach")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", required=True, choices=["constructor", "attach"])
    ap.add_argument("--agent", required=True)
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--workdir")
    a = ap.parse_args()
    work = work_directory(a.workdir, "cuhook-devices-")
    problems = Problems()
    {"constructor": mode_constructor, "attach": mode_attach}[a.mode](a, work, problems)
    problems.exit()


if __name__ == "__main__":
    run_main(main)
