#!/usr/bin/env python3
"""The functions behind cuGetExportTable (--export-tables), on the stand-in driver's two tables
(tests/fakecuda/fakecuda.h) called by export_user a known number of times from 4 threads.

  --mode on    cuhook run --export-tables: the checksum is the untraced run's; each table
               function's calls, read from the trace by tracefile.py (not by cuhook report),
               equal the program's own count, under its name export:UUID[i]; the calls made
               inside cuFakeExportCall are nested under it (depth 1, inside its call on the same
               thread), the direct ones at depth 0; the function shared by both tables is hooked
               once (one FUNCS entry: the first table's name) and the second table's slot is
               said an alias; the slot at data is skipped and the function without an unwind
               entry refused, each with its reason in a NOTE; the export in a slot keeps its own
               name and count; each table is read once although 4 threads ask for it; and the
               report's section on the calls behind the API gives the same counts, the readable
               table name and the parent function (JSON), and its text section is there.
  --mode env   the same with the agent preloaded and CUHOOK_EXPORT_TABLES=1 (constructor mode).
  --mode count cuhook run --export-tables --count 'export:*': the table functions' calls counted
               exactly (COUNTS blocks), none recorded, the report's section and JSON with them.
  --mode off   cuhook run without the option: the checksum, no function named export:*, no NOTE
               about a table, cuGetExportTable recorded as always."""

import argparse
import os
import sys

from cuhooktest import (Fatal, Problems, check_trace_health, clean_env, need_files, parse_target_output,
                        report, report_json, run, run_main, work_directory)
from cuhooktest.tracefile import read_trace

T1 = "6bd5fb6c-5bf4-e74a-8987-d93912fd9df9"
T2 = "c0ffee00-1122-4344-8566-778899aabbcc"


def parse(text):
    out = parse_target_output(text)
    out["nested"] = {}
    out["absent"] = []
    for line in text.splitlines():
        p = line.split()
        if len(p) == 4 and p[0] == "nested":
            out["nested"][(p[1], p[2])] = int(p[3])
        elif len(p) == 2 and p[0] == "absent":
            out["absent"].append(p[1])
    return out


def parents(calls):
    """{id(call): the call it was made inside (same thread, one level up), or None}."""
    by_tid = {}
    for c in calls:
        by_tid.setdefault(c.tid, []).append(c)
    up = {}
    for cs in by_tid.values():
        cs.sort(key=lambda c: (c.entry, c.depth))
        stack = []
        for c in cs:
            while stack and stack[-1].exit < c.entry:
                stack.pop()
            up[id(c)] = stack[-1] if stack and stack[-1].depth == c.depth - 1 else None
            stack.append(c)
    return up


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--mode", choices=("on", "env", "count", "off"), required=True)
    ap.add_argument("--threads", default="4")
    ap.add_argument("--iters", default="300")
    ap.add_argument("--workdir")
    a = ap.parse_args()
    need_files([(a.target, "export_user"), (a.lib, "stand-in libcuda"), (a.agent, "agent"),
                (a.cuhook, "cuhook")])
    wd = work_directory(a.workdir, "cuhook-export-")
    cmd = [a.target, "--threads", a.threads, "--iters", a.iters, a.lib]
    plain = parse(run(cmd, env=clean_env(), what="export_user (untraced)").stdout)
    trace = os.path.join(wd, "trace.bin")
    if a.mode == "env":
        env = clean_env({"CUHOOK_OUTPUT": trace, "CUHOOK_EXPORT_TABLES": "1"})
        env["LD_PRELOAD"] = a.agent
        out = run(cmd, env=env, what="export_user (agent preloaded)").stdout
    else:
        opt = {"on": ["--export-tables"], "count": ["--export-tables", "--count", "export:*"], "off": []}[a.mode]
        out = run([a.cuhook, "run", "--agent", a.agent, "-o", trace] + opt + ["--"] + cmd, env=clean_env(),
                  what="cuhook run").stdout
    traced = parse(out)
    problems = Problems()
    problems.check(traced.get("checksum") == plain.get("checksum"),
                   f"checksum traced {traced.get('checksum')} != untraced {plain.get('checksum')}")
    t = read_trace(trace)
    names = list(t.funcs.values())
    counts = {}
    for c in t.calls:
        counts[c.name] = counts.get(c.name, 0) + 1
    notes = [text for _level, text in t.notes]
    table_notes = [n for n in notes if n.startswith("export table ")]

    if a.mode == "off":
        problems.check(not [n for n in names if n.startswith("export:")],
                       f"functions named export:* without the option: {[n for n in names if n.startswith('export:')]}")
        problems.check(not table_notes, f"notes about tables without the option: {table_notes}")
        n = counts.get("cuGetExportTable", 0)
        problems.check(n == traced["expect"]["cuGetExportTable"],
                       f"cuGetExportTable: {n} calls traced, the program made {traced['expect']['cuGetExportTable']}")
        problems.exit()

    if a.mode == "count":
        for name, want in sorted(traced["expect"].items()):
            if not name.startswith("export:"):
                continue
            problems.check(counts.get(name, 0) == 0, f"{name}: {counts.get(name)} calls recorded, none expected")
            problems.check(t.counted.get(name, 0) == want, f"{name}: {t.counted.get(name, 0)} counted, want {want}")
        rep = report_json(a.cuhook, trace, wd)
        check_trace_health(rep, problems)
        sect = rep.get("export_tables") or {}
        got = {s["name"]: s.get("counted_calls") for s in sect.get("slots", [])}
        want = {k: v for k, v in traced["expect"].items() if k.startswith("export:")}
        problems.check(got == want, f"report: counted calls per slot {got}, want {want}")
        text = report(a.cuhook, trace, "text", os.path.join(wd, "report.txt"))
        problems.check(f"and {sum(want.values())} counted" in text, "the text section does not give the counted calls")
        problems.exit()

    for name, want in sorted(traced["expect"].items()):
        got = counts.get(name, 0)
        problems.check(got == want, f"{name}: {got} calls in the trace, the program made {want}")
        if name.startswith("export:"):
            problems.check(name in t.patched, f"{name} not patched")
            problems.check(names.count(name) == 1, f"{name}: {names.count(name)} FUNCS entries, not 1")
    for name in traced["absent"]:
        problems.check(name not in names, f"{name} has a FUNCS entry: it must not be hooked")
    # nesting: the parent of every call of a table function
    up = parents(t.calls)
    for (name, parent), want in traced["nested"].items():
        inside = [c for c in t.calls if c.name == name and up.get(id(c)) is not None]
        got = sum(1 for c in inside if up[id(c)].name == parent)
        problems.check(got == want, f"{name}: {got} calls inside {parent}, the program made {want}")
        problems.check(len(inside) == got, f"{name}: {len(inside) - got} calls inside something else")
        direct = [c for c in t.calls if c.name == name and c.depth == 0]
        problems.check(len(direct) + got == traced["expect"][name],
                       f"{name}: {len(direct)} direct + {got} nested != {traced['expect'][name]}")
    # what the agent said of each table, once per table
    t1 = [n for n in table_notes if n.startswith(f"export table {T1} (CUDART_INTERFACE): ")]
    t2 = [n for n in table_notes if n.startswith(f"export table {T2}: ")]
    problems.check(len(t1) == 1 and len(t2) == 1 and len(table_notes) == 2,
                   f"one summary per table expected, got {table_notes}")
    if t1:
        problems.check("6 slots: 3 functions patched, 0 refused, 1 already hooked, 1 not in the driver's code, "
                       "1 empty" in t1[0], f"table 1 summary: {t1[0]}")
    if t2:
        problems.check("3 slots: 1 functions patched, 1 refused, 1 already hooked, 0 not in the driver's code, "
                       "0 empty" in t2[0], f"table 2 summary: {t2[0]}")
    want_notes = [
        f"export:{T1}[4]: skipped: ",
        f"export:{T1}[6] is cuDriverGetVersion: hooked once, under that name",
        f"export:{T2}[1] is export:{T1}[3]: hooked once, under that name",
        f"export:{T2}[2]: refused: no unwind entry covers the address",
    ]
    for w in want_notes:
        problems.check(any(n.startswith(w) for n in notes), f"no NOTE beginning {w!r}")
    problems.check(any(f"export:{T1}[4]: skipped: " in n and "is not in" in n and "executable segments" in n
                       for n in notes), "the data slot's NOTE does not say why it was skipped")

    # the report: JSON section and text section
    rep = report_json(a.cuhook, trace, wd)
    check_trace_health(rep, problems)
    sect = rep.get("export_tables")
    if not problems.check(isinstance(sect, dict), "report JSON has no export_tables section"):
        problems.exit()
    slots = {(s["uuid"], s["slot"]): s for s in sect.get("slots", [])}
    for name, want in traced["expect"].items():
        if not name.startswith("export:"):
            continue
        uuid, slot = name[len("export:"):-1].split("[")
        s = slots.get((uuid, int(slot)))
        if not problems.check(s is not None, f"report: no slot {name}"):
            continue
        problems.check(s.get("calls") == want, f"report: {name} calls {s.get('calls')}, want {want}")
        problems.check(s.get("table") == ("CUDART_INTERFACE" if uuid == T1 else None),
                       f"report: {name} table name {s.get('table')!r}")
        par = {p["name"]: p["calls"] for p in s.get("parents", [])}
        want_par = {p: n for (nm, p), n in traced["nested"].items() if nm == name}
        direct = want - sum(want_par.values())
        if direct:
            want_par["(none)"] = direct
        problems.check(par == want_par, f"report: {name} parents {par}, want {want_par}")
    total = sum(v for k, v in traced["expect"].items() if k.startswith("export:"))
    problems.check(sect.get("calls") == total, f"report: export_tables.calls {sect.get('calls')}, want {total}")
    text = report(a.cuhook, trace, "text", os.path.join(wd, "report.txt"))
    problems.check("Calls behind the API" in text, "the text report has no 'Calls behind the API' section")
    problems.check(f"CUDART_INTERFACE" in text and f"export:{T1}[1]" in text,
                   "the text section does not name the table and slot")
    problems.exit()


if __name__ == "__main__":
    run_main(main)
