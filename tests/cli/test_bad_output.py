#!/usr/bin/env python3
"""A trace file that cannot be created (issue 23): `-o` in a directory that does not exist.

- run and attach refuse it before anything is done (the program not started, the process not
  touched): one line, "cuhook CMD: cannot create trace file 'F': No such file or directory", exit 2;
- a name the agent makes itself (%p: the process's id) reaches the agent, whose refusal is told
  once, with the reason once, and without a warning about the process's registers (the injector
  used to write them back into a process it had just killed); exit 125, the program not run;
- attach knows the pid, so refuses both before touching the process, which runs on unharmed.

usage: test_bad_output.py --cuhook PATH --sample PATH --timed PATH --lib LIBCUDA"""

import os
import re
import subprocess
import sys
import time

from cuhooktest import Problems, clean_env, parse_target_output, run_main, work_directory
from cuhooktest.cli import cuhook, path_args

MISSING = "No such file or directory"



def main():
    a = path_args("cuhook", "sample", "timed", "lib")
    work = work_directory(None, "cuhook-bad-output-")
    problems = Problems()
    gone = os.path.join(work, "no-such-dir")
    sample = [a.sample, "--layers", "1", "--batches", "1", a.lib]

    # refused by the command line: the program is not started
    bad = os.path.join(gone, "t.bin")
    p = cuhook(a, ["run", "-o", bad, "--"] + sample, work)
    want = f"cuhook run: cannot create trace file '{bad}': {MISSING}\n"
    problems.check((p.returncode, p.stderr, p.stdout) == (2, want, ""),
                   f"run -o {bad}: exit {p.returncode}, stderr {p.stderr!r}, stdout {p.stdout[:200]!r}; want 2, {want!r}")
    # a file in place of the directory
    plain = os.path.join(work, "plain")
    open(plain, "w").close()
    p = cuhook(a, ["run", "-o", os.path.join(plain, "t.bin"), "--"] + sample, work)
    want = f"cuhook run: cannot create trace file '{plain}/t.bin': Not a directory\n"
    problems.check((p.returncode, p.stderr, p.stdout) == (2, want, ""),
                   f"run -o FILE/t.bin: exit {p.returncode}, stderr {p.stderr!r}; want 2, {want!r}")

    # refused by the agent (the name depends on the pid): one message, no warning
    p = cuhook(a, ["run", "-o", os.path.join(gone, "t.%p.bin"), "--"] + sample, work)
    m = re.fullmatch(r"cuhook run: the agent in process (\d+) could not start: cannot create trace file "
                     rf"'{re.escape(gone)}/t\.(\d+)\.bin': {MISSING}\n", p.stderr)
    problems.check(p.returncode == 125 and m and m.group(1) == m.group(2) and p.stdout == "",
                   f"run -o DIR/t.%p.bin: exit {p.returncode}, stderr {p.stderr!r}, stdout {p.stdout[:200]!r}")
    problems.check("warning" not in p.stderr and p.stderr.count(MISSING) == 1, f"run: {p.stderr!r}")

    # attach: the process goes on unharmed, refused before or by its agent
    prog = subprocess.Popen([a.timed, a.lib, "3", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=clean_env())
    try:
        time.sleep(0.5)
        p = cuhook(a, ["attach", "-o", bad, "--duration", "0.5", str(prog.pid)], work)
        want = f"cuhook attach: cannot create trace file '{bad}': {MISSING}\n"
        problems.check((p.returncode, p.stderr) == (2, want), f"attach -o {bad}: exit {p.returncode}, {p.stderr!r}")
        p = cuhook(a, ["attach", "-o", os.path.join(gone, "t.%p.bin"), "--duration", "0.5", str(prog.pid)], work)
        want = f"cuhook attach: cannot create trace file '{gone}/t.{prog.pid}.bin': {MISSING}\n"
        problems.check((p.returncode, p.stderr) == (2, want), f"attach -o DIR/t.%p.bin: exit {p.returncode}, "
                                                               f"{p.stderr!r}; want 2, {want!r}")
        out, err = prog.communicate(timeout=60)
    finally:
        if prog.poll() is None:
            prog.kill()
            prog.wait()
    res = parse_target_output(out)
    calls = [line for line in out.splitlines() if line.startswith("call ")]
    problems.check(prog.returncode == 0 and not res["bad"] and len(calls) > 100 and err == "",
                   f"the attached program: exit {prog.returncode}, {len(calls)} rounds, stderr {err[-300:]!r}")
    problems.exit()


if __name__ == "__main__":
    run_main(main)
