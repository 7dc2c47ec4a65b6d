"""The tests' Python helper library (tests/lib, on PYTHONPATH for every test; README, "Tests"):
run a target with or without the agent, read what it printed, read a trace back through
`cuhook report --format json|csv` (tracefile: without it), and the runner convention.

The runner convention of every Python test: the script runs under run_main (or run_case, which
picks the function a test's meson.build names); it exits 0 (pass), 1 (fail) or 77 (SKIP,
meson's "skipped": only for something absent from the machine, never for a failure), and its
last line says which: "PASS", "FAIL: why" or "SKIP: why". A check either collects its problems
in a Problems object and ends with problems.exit(), or stops at the first with Fail (check, eq)
or Fatal; Skip skips. Its work files live in its work_directory(): deleted when the check passes
or is skipped, kept (and named) when it fails."""

import csv
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

SKIP = 77
MASK64 = (1 << 64) - 1
MASK32 = (1 << 32) - 1


class Fatal(Exception):
    """A problem after which the rest of the checks make no sense."""


class Fail(Exception):
    """A failed check (check, eq): the test stops there."""


class Skip(Exception):
    """Something the test needs is absent from the machine: skipped (77)."""


def check(cond, msg, detail=""):
    if not cond:
        raise Fail(msg + (": " + detail if detail else ""))


def eq(got, want, what):
    if got != want:
        raise Fail(f"{what}: got {got!r}, want {want!r}")


# The agent's count list when no count= option is given, read from where the agent gets it.
SOURCE_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
AGENT_H = os.path.join(SOURCE_ROOT, "src", "agent", "cuhook_agent.h")


def default_count():
    with open(AGENT_H) as f:
        m = re.search(r'#define CUHOOK_COUNT_DEFAULT "([^"]*)"', f.read())
    if not m:
        raise Fatal(f"no CUHOOK_COUNT_DEFAULT in {AGENT_H}")
    return m.group(1)


def counted_names(globs, names):
    """The names the agent's count option selects: comma-separated globs, '-'/'!' excludes."""
    inc = [g for g in globs.split(",") if g and g[0] not in "-!"]
    exc = [g[1:] for g in globs.split(",") if g and g[0] in "-!"]
    return {n for n in names
            if any(fnmatch.fnmatchcase(n, g) for g in inc) and not any(fnmatch.fnmatchcase(n, g) for g in exc)}


class Problems:
    def __init__(self, limit=40):
        self.items = []
        self.limit = limit

    def add(self, msg):
        self.items.append(msg)

    def check(self, cond, msg):
        if not cond:
            self.add(msg)
        return cond

    def exit(self):
        """Ends the check: exit 0 without problems (run_main says PASS), else 1 after one line
        for each problem."""
        if not self.items:
            sys.exit(0)
        for msg in self.items[: self.limit]:
            print("FAIL: " + msg)
        if len(self.items) > self.limit:
            print(f"FAIL: ... and {len(self.items) - self.limit} more")
        sys.exit(1)


def run_main(fn):
    """Runs fn() (it returns, or calls Problems.exit or sys.exit, or raises); deletes the work
    directories on a pass or a skip, keeps them on a failure; exits 0, 1 or 77 after the last
    line: PASS, FAIL: why, or SKIP: why (the runner convention above)."""
    why = ""
    try:
        fn()
        code = 0
    except (Fatal, Fail) as e:
        code, why = 1, str(e)
    except Skip as e:
        code, why = SKIP, str(e)
    except SystemExit as e:
        code = 0 if e.code is None else e.code
        code = code if isinstance(code, int) else 1
    except Exception as e:  # a bug in the test, or anything unexpected: a failure, with its traceback
        traceback.print_exc(file=sys.stdout)
        code, why = 1, f"{type(e).__name__}: {e}"
    end_work_directories(code in (0, SKIP))
    if code == 0:
        print("PASS")
    elif code == SKIP:
        print("SKIP" + (": " + why if why else ""))
    else:
        print("FAIL: " + (why or "the problems above"))
    sys.stdout.flush()
    sys.exit(code)


def case_function(scope, prefix, name):
    """The test function scope[prefix + NAME] (NAME: the case a meson.build passes, '-' read as
    '_'). The list of cases is the meson.build's alone: an unknown name is a Fatal."""
    fn = scope.get(prefix + name.replace("-", "_"))
    if not callable(fn):
        raise Fatal(f"no test {name!r} ({prefix}{name.replace('-', '_')} is not defined)")
    return fn


def run_case(scope, prefix, name, work_prefix=None, mode=None):
    """Runs case_function(scope, prefix, name) under run_main; with work_prefix, in a new work
    directory set as scope["TMP"] (made with mode when given: tests that run programs as another
    user need 0o777)."""
    def case():
        fn = case_function(scope, prefix, name)
        if work_prefix:
            scope["TMP"] = work_directory(None, work_prefix)
            if mode is not None:
                os.chmod(scope["TMP"], mode)
        fn()
    run_main(case)


def need_file(path, what):
    if not path or not os.path.exists(path):
        raise Fatal(f"{what} not found at {path!r} (not built yet?)")


def need_files(paths):
    """need_file() for each (path, what)."""
    for path, what in paths:
        need_file(path, what)


_work_directories = []  # (the directory, the one it was made in when given)


def work_directory(workdir, prefix):
    """A new directory for this run's files, said on stdout: inside workdir when given (made if
    missing), so that two runs of one test at once (meson test --repeat) never share their
    files; else a temporary one named prefix.... run_main deletes it when the check passes."""
    if workdir:
        os.makedirs(workdir, exist_ok=True)
        run_dir = tempfile.mkdtemp(prefix="run-", dir=workdir)
    else:
        run_dir = tempfile.mkdtemp(prefix=prefix)
    print(f"work directory: {run_dir}")
    _work_directories.append((run_dir, workdir))
    return run_dir


def end_work_directories(passed):
    """A passed check leaves nothing behind (one suite run wrote 1.7 GB otherwise); a failed one
    keeps its traces and logs for diagnosis."""
    for d, parent in _work_directories:
        if not passed:
            print(f"work files kept for diagnosis in {d}")
            continue
        shutil.rmtree(d, ignore_errors=True)
        if parent:
            try:
                os.rmdir(parent)  # unless another run's files or kept ones are there
            except OSError:
                pass
    _work_directories.clear()


def tail(text, n=2000):
    return text if len(text) <= n else "..." + text[-n:]


def clean_env(extra=None):
    """The environment without any CUHOOK_* setting inherited from the caller, plus extra."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUHOOK_")}
    env.update(extra or {})
    return env


def run(cmd, env=None, timeout=600, what=None):
    """Runs cmd; raises Fatal with its output if it does not exit 0."""
    what = what or os.path.basename(cmd[0])
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Fatal(f"{what} did not finish in {timeout} s: {' '.join(cmd)}")
    if p.returncode != 0:
        raise Fatal(f"{what} exited with {p.returncode}: {' '.join(cmd)}\n"
                    f"--- stdout\n{tail(p.stdout)}\n--- stderr\n{tail(p.stderr)}")
    return p


def parse_target_output(text):
    """What driver_user / stub_user print: 'key value' lines, 'expect NAME N' lines."""
    out = {"expect": {}, "bad": []}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "expect" and len(parts) == 3:
            out["expect"][parts[1]] = int(parts[2])
        elif parts[0] == "bad":
            out["bad"].append(" ".join(parts[1:]))
        elif len(parts) == 2:
            out[parts[0]] = parts[1]
    return out


def num(s):
    """A register value from the CSV (0x hex, or decimal) as an unsigned 64-bit int; None if empty."""
    s = (s or "").strip()
    if not s:
        return None
    return int(s, 0) & MASK64


def report(cuhook, trace, fmt, out_path):
    """Runs `cuhook report --format fmt --strict --force -o out_path trace` (out_path: the
    caller's scratch file, replaced); returns the output text."""
    run([cuhook, "report", "--format", fmt, "--strict", "--force", "-o", out_path, trace],
        what=f"cuhook report --format {fmt}")
    with open(out_path) as f:
        return f.read()


def report_json(cuhook, trace, workdir):
    text = report(cuhook, trace, "json", os.path.join(workdir, "report.json"))
    try:
        return json.loads(text)
    except ValueError as e:
        raise Fatal(f"cuhook report --format json printed invalid JSON: {e}\n{tail(text)}")


def report_csv(cuhook, trace, workdir):
    text = report(cuhook, trace, "csv", os.path.join(workdir, "report.csv"))
    rows = list(csv.DictReader(text.splitlines()))
    need = ["tid", "func", "start_ns", "end_ns", "depth", "ret"] + [f"arg{i}" for i in range(6)] + \
           [f"stack{i}" for i in range(6)] + ["decoded"]
    if rows and any(k not in rows[0] for k in need):
        raise Fatal(f"cuhook report --format csv: header lacks some of {need}: {list(rows[0])}")
    return rows


def check_trace_health(rep, problems):
    """The counters every clean, blocking-mode trace must show at zero."""
    problems.check(rep.get("dropped", 0) == 0, f"{rep.get('dropped')} events dropped")
    problems.check(not rep.get("truncated", False),
                   f"trace truncated: {rep.get('truncated_reason')}")
    problems.check(rep.get("complete", True), "trace has no END block (not closed cleanly)")
    for key in ("unknown_function_ids", "orphan_exits", "corrupt_records", "block_gaps",
                "calls_without_exit"):
        problems.check(rep.get(key, 0) == 0, f"report: {key} = {rep.get(key)}")


def calls_by_name(rep):
    return {f["name"]: f["calls"] for f in rep.get("functions", [])}


def counted_by_name(rep):
    return {f["name"]: f.get("counted_calls", 0) for f in rep.get("functions", []) if f.get("counted_calls")}


def refused_by_name(rep):
    return {r["name"]: r.get("reason", "") for r in rep.get("refused", [])}


def run_attached(cuhook, agent, cmd, trace, problems, attach_args=(), duration=3, env=None, settle=0):
    """cmd, a target that speaks the --wait protocol (prints "ready", waits for a line on stdin,
    works, prints "done", waits for another line, exits 0), traced by `cuhook attach` for
    `duration` s into trace: its work starts once cuhook says the window is open (and `settle`
    s more). Problems go to problems; returns what the target printed up to "done"."""
    name = os.path.basename(cmd[0])
    prog = subprocess.Popen(cmd, env=env or clean_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    out = ""
    try:
        problems.check(prog.stdout.readline().strip() == "ready", f"{name} did not say ready")
        att = subprocess.Popen([cuhook, "attach", "--agent", agent, "-o", trace, "--duration", str(duration),
                                *attach_args, str(prog.pid)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        deadline, said = time.time() + 60, ""
        while time.time() < deadline:  # the window is open once cuhook says so (its last line before the wait)
            line = att.stderr.readline()
            said += line
            if not line or "until the duration is over" in line:
                break
        problems.check("until the duration is over" in said, f"cuhook attach did not start: {said}")
        time.sleep(settle)
        prog.stdin.write("go\n")
        prog.stdin.flush()
        for line in prog.stdout:
            out += line
            if line.strip() == "done":
                break
        _, err = att.communicate(timeout=120)
        problems.check(att.returncode == 0, f"cuhook attach exited with {att.returncode}: {said}{err}")
        prog.stdin.write("quit\n")
        prog.stdin.flush()
        _, e2 = prog.communicate(timeout=60)
        problems.check(prog.returncode == 0, f"{name} exited with {prog.returncode}: {e2}")
    finally:
        if prog.poll() is None:
            prog.kill()
    return out
