#!/usr/bin/env python3
"""The command line as a user meets it (issue 23): --version and -V on cuhook and each command,
`cuhook help CMD` (= `CMD --help`), one message prefix ("cuhook CMD: "), `cuhook report` without
a file reading ./trace.bin, a binary format refused on a terminal, `cuhook run` naming the trace
it wrote and refusing to replace one, --funcs/--functions as one option everywhere.

usage: test_cli.py --cuhook PATH --sample PATH --lib LIBCUDA --version V --format-header PATH"""

import argparse
import os
import pty
import re
import subprocess
import sys

from cuhooktest import Problems, calls_by_name, clean_env, need_file, report_json, run_main, work_directory

COMMANDS = ["run", "attach", "report", "funcs", "dump", "help"]


def cuhook(a, args, cwd=None, stdout=subprocess.PIPE):
    return subprocess.run([a.cuhook] + args, cwd=cwd, env=clean_env(), stdout=stdout, stderr=subprocess.PIPE,
                          text=True, timeout=120)


def check_version(a, problems):
    hdr = open(a.format_header).read()
    fmt = re.search(r"#define CUHOOK_TRACE_VERSION (\d+)u", hdr).group(1)
    fmt_min = re.search(r"#define CUHOOK_TRACE_VERSION_MIN (\d+)u", hdr).group(1)
    want = f"cuhook {a.version} (trace format {fmt}; reads formats {fmt_min} to {fmt})\n"
    for args in [["--version"], ["-V"]] + [[c, o] for c in COMMANDS for o in ("--version", "-V")]:
        p = cuhook(a, args)
        problems.check((p.returncode, p.stdout, p.stderr) == (0, want, ""),
                       f"cuhook {' '.join(args)}: exit {p.returncode}, {p.stdout!r} {p.stderr!r}, not {want!r}")


def check_help(a, problems):
    for c in COMMANDS:
        h = cuhook(a, ["help", c])
        o = cuhook(a, [c, "--help"])
        first = "usage: cuhook COMMAND" if c == "help" else f"usage: cuhook {c} "
        problems.check(h.returncode == 0 and h.stdout.startswith(first) and h.stdout == o.stdout and o.returncode == 0,
                       f"cuhook help {c}: exit {h.returncode}, {h.stdout[:60]!r}; {c} --help: exit {o.returncode}, "
                       f"{o.stdout[:60]!r}")
        # every command says its exit statuses
        problems.check("Exit status" in h.stdout, f"cuhook help {c}: no exit statuses")
    p = cuhook(a, ["help", "bogus"])
    problems.check((p.returncode, p.stdout) == (2, "") and p.stderr.startswith("cuhook help: no command 'bogus'"),
                   f"cuhook help bogus: exit {p.returncode}, {p.stdout!r} {p.stderr!r}")


def check_prefix(a, problems):
    tails = {"run": ["--", "true"], "attach": ["1"], "dump": ["1"], "report": ["x.bin"], "funcs": ["x.so"]}
    for c, rest in tails.items():
        p = cuhook(a, [c, "--bogus"] + rest)
        want = f"cuhook {c}: unknown option '--bogus'"
        problems.check(p.returncode == 2 and p.stderr.splitlines()[:1] == [want] and not p.stdout,
                       f"cuhook {c} --bogus: exit {p.returncode}, {p.stderr[:200]!r}, not {want!r}")
    # a shared option's message (inject_opts.c) names the command too
    for c, rest in (("run", ["--", "true"]), ("attach", ["1"])):
        p = cuhook(a, [c, "--call-timeout", "0"] + rest)
        want = f"cuhook {c}: --call-timeout wants seconds from 0.001 to 3600, not '0'"
        problems.check(p.returncode == 2 and p.stderr.splitlines()[:1] == [want],
                       f"cuhook {c} --call-timeout 0: exit {p.returncode}, {p.stderr[:200]!r}, not {want!r}")
    p = cuhook(a, ["report", "-o"])
    problems.check(p.returncode == 2 and p.stderr.splitlines()[:1] == ["cuhook report: -o needs a value"],
                   f"cuhook report -o: exit {p.returncode}, {p.stderr[:200]!r}")


def traced_sample(a, work, args=(), cwd=None):
    cmd = [a.sample, "--layers", "2", "--batches", "2", a.lib]
    return cuhook(a, ["run"] + list(args) + ["--"] + cmd, cwd=cwd or work)


def check_run_and_report(a, work, problems):
    d = os.path.join(work, "d")
    os.mkdir(d)
    p = cuhook(a, ["report"], cwd=d)
    problems.check(p.returncode == 2 and p.stderr.startswith(
        "cuhook report: no trace file given, and no ./trace.bin (cuhook run's default output) here"),
        f"cuhook report with no file and no trace.bin: exit {p.returncode}, {p.stderr[:200]!r}")

    trace = os.path.join(d, "trace.bin")
    p = traced_sample(a, work, cwd=d)
    problems.check(p.returncode == 0 and p.stderr.splitlines()[-1:] == [f"cuhook run: trace written to {trace}"]
                   and os.path.getsize(trace) > 0, f"cuhook run: exit {p.returncode}, stderr {p.stderr[-300:]!r}")
    before = open(trace, "rb").read()
    p = traced_sample(a, work, cwd=d)
    want = (f"cuhook run: trace file '{trace}' exists; pass --force to replace it, or choose another name with -o")
    problems.check(p.returncode == 2 and p.stderr.strip() == want and "sample_app:" not in p.stdout,
                   f"cuhook run over an existing trace: exit {p.returncode}, {p.stderr!r}, not {want!r}")
    problems.check(open(trace, "rb").read() == before, "the existing trace was changed")

    # report without a file reads ./trace.bin: the same report as naming it
    named = cuhook(a, ["report", "--no-color", "trace.bin"], cwd=d)
    default = cuhook(a, ["report", "--no-color"], cwd=d)
    problems.check(default.returncode == 0 and named.returncode == 0 and default.stdout == named.stdout
                   and "cuLaunchKernel" in default.stdout,
                   f"cuhook report (no file): exit {default.returncode}, differs from report trace.bin")

    # -q: no line at the end; --force replaces; --functions is --funcs
    p = traced_sample(a, work, ["-q", "--force", "--functions", "cuMemAlloc*,cuInit"], cwd=d)
    problems.check(p.returncode == 0 and "cuhook run:" not in p.stderr, f"cuhook run -q: {p.stderr[-300:]!r}")
    calls = calls_by_name(report_json(a.cuhook, trace, work))
    problems.check(calls == {"cuInit": 1, "cuMemAlloc_v2": 4}, f"run --functions: calls {calls}")
    p = traced_sample(a, work, ["-q", "--force", "--funcs", "cuMemAlloc*,cuInit"], cwd=d)
    problems.check(calls_by_name(report_json(a.cuhook, trace, work)) == calls, "run --funcs differs from --functions")

    # report: --funcs and --functions the same option
    traced_sample(a, work, ["-q", "--force"], cwd=d)
    r1 = cuhook(a, ["report", "--no-color", "--funcs", "cuMem*", "trace.bin"], cwd=d)
    r2 = cuhook(a, ["report", "--no-color", "--functions", "cuMem*", "trace.bin"], cwd=d)
    r3 = cuhook(a, ["report", "--no-color", "trace.bin"], cwd=d)
    problems.check(r1.returncode == 0 and r1.stdout == r2.stdout and r1.stdout != r3.stdout
                   and "cuLaunchKernel" not in r1.stdout, "report --funcs and --functions differ, or filter nothing")

    # perfetto: refused on a terminal, written with -o or into a pipe
    master, slave = pty.openpty()
    try:
        p = subprocess.run([a.cuhook, "report", "-f", "perfetto", "trace.bin"], cwd=d, stdout=slave,
                           stderr=subprocess.PIPE, text=True, timeout=60, env=clean_env())
    finally:
        os.close(slave)
        os.close(master)
    problems.check(p.returncode == 2 and p.stderr.startswith("cuhook report: --format perfetto is binary: not "
                                                             "written to a terminal; give -o FILE"),
                   f"report -f perfetto to a terminal: exit {p.returncode}, {p.stderr[:200]!r}")
    p = cuhook(a, ["report", "-f", "perfetto", "-o", "t.pftrace", "trace.bin"], cwd=d)
    problems.check(p.returncode == 0 and os.path.getsize(os.path.join(d, "t.pftrace")) > 0,
                   f"report -f perfetto -o: exit {p.returncode}, {p.stderr[:200]!r}")
    p = subprocess.run([a.cuhook, "report", "-f", "perfetto", "trace.bin"], cwd=d, capture_output=True,
                       timeout=60, env=clean_env())
    problems.check(p.returncode == 0 and len(p.stdout) > 0, f"report -f perfetto | pipe: exit {p.returncode}")


def main():
    ap = argparse.ArgumentParser()
    for o in ("--cuhook", "--sample", "--lib", "--version", "--format-header"):
        ap.add_argument(o, required=True)
    a = ap.parse_args()
    for path in (a.cuhook, a.sample, a.lib, a.format_header):
        need_file(path, path)
    a.cuhook, a.sample, a.lib = (os.path.abspath(p) for p in (a.cuhook, a.sample, a.lib))  # run from elsewhere
    work = work_directory(None, "cuhook-cli-")
    problems = Problems()
    check_version(a, problems)
    check_help(a, problems)
    check_prefix(a, problems)
    check_run_and_report(a, work, problems)
    problems.exit()


if __name__ == "__main__":
    run_main(main)
