#!/usr/bin/env python3
"""cuhook run on a shell-script shim that execs the real program (pyenv's python3 is one; issue
23): without --follow only the shell is traced; its trace has no END block, and cuhook run says
so at the end, naming what the program became when it saw it (it looks after 20, 100 and 400 ms,
then once a second; a program gone before is "probably" exec'd), and pointing at --follow, even
with -q. With --follow the exec'd program is traced, every call. A
program that does not exec gets no such line.

usage: test_exec_shim.py --cuhook PATH --sample PATH --timed PATH --lib LIBCUDA"""

import os
import sys

from cuhooktest import Problems, run_main, work_directory
from cuhooktest import tracefile
from cuhooktest.cli import cuhook, path_args


def exec_line(became):
    """What cuhook run says of a program that exec'd `became` (None: not seen)."""
    if became is None:
        return ("cuhook run: the trace has no END block though the program exited normally: it probably exec'd "
                "another program (a script or a launcher?), which was not traced (cuhook run --follow traces what "
                "it execs)\n")
    return (f"cuhook run: the program exec'd {became} (a script or a launcher?), which was not traced: the trace "
            "holds the calls before the exec and has no END block (cuhook run --follow traces what it execs)\n")


def main():
    a = path_args("cuhook", "sample", "timed", "lib")
    work = work_directory(None, "cuhook-exec-shim-")
    problems = Problems()
    shims = {}
    for name, real in (("sample", a.sample), ("timed", a.timed)):
        shims[name] = os.path.join(work, name + "-shim")
        with open(shims[name], "w") as f:
            f.write(f'#!/bin/sh\nexec "{real}" "$@"\n')
        os.chmod(shims[name], 0o755)
    sample_args = ["--layers", "2", "--batches", "2", a.lib]

    # the sample may end before cuhook's first look (20 ms): then the exec is said without a name
    trace = os.path.join(work, "sample.bin")
    p = cuhook(a, ["run", "-o", trace, "--", shims["sample"]] + sample_args, work)
    want = [exec_line(b) + f"cuhook run: trace written to {trace}\n" for b in (a.sample, None)]
    problems.check(p.returncode == 0 and p.stderr in want and "12 kernel launches" in p.stdout,
                   f"run on the sample's shim: exit {p.returncode}, stderr {p.stderr!r}, not {want!r}")
    t = tracefile.read_trace(trace)
    problems.check(not t.has_end and not t.entries, f"the shim's trace: END {t.has_end}, calls {t.entries}")

    # a program that runs past the first look: named; and said with -q too
    trace = os.path.join(work, "timed.bin")
    p = cuhook(a, ["run", "-q", "-o", trace, "--", shims["timed"], a.lib, "1.6", "2"], work)
    want = exec_line(a.timed)
    problems.check(p.returncode == 0 and p.stderr == want,
                   f"run -q on timed_calls' shim: exit {p.returncode}, stderr {p.stderr!r}, not {want!r}")

    # --follow: the exec'd sample traced, every launch
    trace = os.path.join(work, "follow.bin")
    p = cuhook(a, ["run", "--follow", "-o", trace, "--", shims["sample"]] + sample_args, work)
    files = [f for f in os.listdir(work) if f.startswith("follow.")]
    problems.check(p.returncode == 0 and "exec'd" not in p.stderr and len(files) == 1,
                   f"run --follow on the shim: exit {p.returncode}, files {files}, stderr {p.stderr!r}")
    if len(files) == 1:
        t = tracefile.read_trace(os.path.join(work, files[0]))
        problems.check(t.has_end and t.entries.get("cuLaunchKernel") == 12,
                       f"--follow: END {t.has_end}, cuLaunchKernel {t.entries.get('cuLaunchKernel')}")

    # no exec, no line
    trace = os.path.join(work, "direct.bin")
    p = cuhook(a, ["run", "-o", trace, "--", a.sample] + sample_args, work)
    problems.check(p.returncode == 0 and p.stderr == f"cuhook run: trace written to {trace}\n",
                   f"run on the sample itself: exit {p.returncode}, stderr {p.stderr!r}")
    problems.exit()


if __name__ == "__main__":
    run_main(main)
