#!/usr/bin/env python3
"""The status line of cuhook run and cuhook attach (issue 23): on a terminal (a pty here), once a
second, drawn in place ("\\r...\\033[K"): the time, the calls written so far, the counted ones,
the trace's size, the records dropped, as the agent's control object says them; taken off the
terminal at the end. The numbers must be the trace's: the last line's counts are non-zero and at
most what the trace's END block and COUNTS blocks hold at the end, and not far below (the program
makes its calls at a steady pace). None when stderr is not a terminal, none with -q.

usage: test_status.py --cuhook PATH --timed PATH --lib LIBCUDA"""

import os
import pty
import re
import subprocess
import sys
import threading
import time

from cuhooktest import Problems, clean_env, run_main, work_directory
from cuhooktest import tracefile
from cuhooktest.cli import path_args

LINE = re.compile(r"\r(cuhook (?:run|attach)): (\d+):(\d\d), (\d+) calls \((\d+) counted\), ([\d.]+) (B|KiB|MiB|GiB) "
                  r"written, (\d+) dropped\x1b\[K")
UNIT = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}


class PtyReader:
    """A pty for a child's stderr, read to its end by a thread."""

    def __init__(self):
        self.master, self.slave = pty.openpty()
        self.data = b""
        self.thread = threading.Thread(target=self._read, daemon=True)

    def start(self):
        os.close(self.slave)  # the child holds it now
        self.thread.start()

    def _read(self):
        while True:
            try:
                d = os.read(self.master, 4096)
            except OSError:  # EIO: every holder of the slave closed it
                break
            if not d:
                break
            self.data += d

    def text(self):
        self.thread.join(timeout=30)
        os.close(self.master)
        return self.data.decode(errors="replace")


def on_pty(args, cwd=None):
    """cuhook ARGS with its stderr on a terminal: (exit status, what it wrote there)."""
    tty = PtyReader()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=tty.slave, env=clean_env({"TERM": "xterm"}), cwd=cwd)
    tty.start()
    p.wait(timeout=120)
    return p.returncode, tty.text()


def status_lines(text):
    return [(m.group(1), int(m.group(2)) * 60 + int(m.group(3)), int(m.group(4)), int(m.group(5)),
             float(m.group(6)) * UNIT[m.group(7)], int(m.group(8))) for m in LINE.finditer(text)]


def check_against_trace(what, lines, trace, problems, least_share):
    """The last status line against the finished trace: at most its totals, at least a share."""
    if not problems.check(len(lines) >= 2, f"{what}: {len(lines)} status lines, not at least 2"):
        return
    t = tracefile.read_trace(trace)
    counted = sum(t.counted.values())
    calls = t.end_events // 2 + counted
    size = os.path.getsize(trace)
    _, sec, n, c, nbytes, dropped = lines[-1]
    problems.check([x[1] for x in lines] == sorted(x[1] for x in lines) and all(x[2] > 0 for x in lines),
                   f"{what}: times or counts not in order: {lines}")
    problems.check(least_share * calls <= n <= calls and 0 < c <= counted and dropped == t.end_dropped == 0,
                   f"{what}: last status line {n} calls ({c} counted), {dropped} dropped; the trace: {calls} "
                   f"calls ({counted} counted), END dropped {t.end_dropped}")
    problems.check(0 < nbytes <= size * 1.06, f"{what}: status says {nbytes:.0f} bytes written; the trace has {size}")


def main():
    a = path_args("cuhook", "timed", "lib")
    work = work_directory(None, "cuhook-status-")
    problems = Problems()
    prog = [a.timed, a.lib, "3.5", "1"]  # a round of two calls (one recorded, one counted) a ms

    # run on a terminal: the line, then taken off before the last line
    trace = os.path.join(work, "run.bin")
    rc, text = on_pty([a.cuhook, "run", "-o", trace, "--"] + prog, cwd=work)
    lines = status_lines(text)
    problems.check(rc == 0 and text.endswith(f"\r\x1b[Kcuhook run: trace written to {trace}\r\n")
                   and all(x[0] == "cuhook run" for x in lines),
                   f"run on a terminal: exit {rc}, stderr {text[-300:]!r}")
    check_against_trace("run", lines, trace, problems, 0.4)

    # not a terminal: no status line
    trace = os.path.join(work, "pipe.bin")
    p = subprocess.run([a.cuhook, "run", "-o", trace, "--", a.timed, a.lib, "2.5", "1"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, env=clean_env({"TERM": "xterm"}), timeout=120)
    problems.check(p.returncode == 0 and p.stderr == f"cuhook run: trace written to {trace}\n",
                   f"run, stderr a pipe: exit {p.returncode}, stderr {p.stderr[-300:]!r}")
    # -q on a terminal: nothing
    trace = os.path.join(work, "quiet.bin")
    rc, text = on_pty([a.cuhook, "run", "-q", "-o", trace, "--", a.timed, a.lib, "2.5", "1"])
    problems.check(rc == 0 and text == "" and os.path.getsize(trace) > 0,
                   f"run -q on a terminal: exit {rc}, stderr {text[-300:]!r}")

    # attach on a terminal, for 3 s of a program that runs 9
    target = subprocess.Popen([a.timed, a.lib, "9", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=clean_env())
    try:
        time.sleep(0.5)
        trace = os.path.join(work, "attach.bin")
        rc, text = on_pty([a.cuhook, "attach", "-o", trace, "--duration", "3", str(target.pid)])
        lines = status_lines(text)
        problems.check(rc == 0 and text.startswith(f"cuhook attach: tracing process {target.pid} into {trace};")
                       and text.endswith("\r\x1b[K") and all(x[0] == "cuhook attach" for x in lines),
                       f"attach on a terminal: exit {rc}, stderr {text[-400:]!r}")
        check_against_trace("attach", lines, trace, problems, 0.4)
        # -q: nothing at all
        trace = os.path.join(work, "attach-q.bin")
        rc, text = on_pty([a.cuhook, "attach", "-q", "-o", trace, "--duration", "1.5", str(target.pid)])
        problems.check(rc == 0 and text == "" and os.path.getsize(trace) > 0,
                       f"attach -q on a terminal: exit {rc}, stderr {text[-300:]!r}")
        # stderr a pipe: the one line saying where the trace goes, no status line
        trace = os.path.join(work, "attach-pipe.bin")
        p = subprocess.run([a.cuhook, "attach", "-o", trace, "--duration", "1.5", str(target.pid)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120,
                           env=clean_env({"TERM": "xterm"}))
        want = f"cuhook attach: tracing process {target.pid} into {trace}; until the duration is over\n"
        problems.check(p.returncode == 0 and p.stderr == want, f"attach, stderr a pipe: exit {p.returncode}, "
                                                               f"stderr {p.stderr[-300:]!r}, not {want!r}")
        target.wait(timeout=60)
        problems.check(target.returncode == 0, f"the attached program exited {target.returncode}")
    finally:
        if target.poll() is None:
            target.kill()
            target.wait()
    problems.exit()


if __name__ == "__main__":
    run_main(main)
