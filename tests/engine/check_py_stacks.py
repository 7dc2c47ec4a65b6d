#!/usr/bin/env python3
"""Python frames in call stacks (cuhook run --stacks, issue 17) end to end: the stand-in
libcuda called through ctypes from tests/targets/py_chain.py's known call chain, under the
CPython running this test (this machine's python3: libpython3.X.so) and, where it is installed, Debian's
python3.11 (the interpreter linked into the executable). Read back with tracefile.py, which
checks the order trace_format.h requires (PYFRAMES before the STACKS naming them, STACKS before
the EVENTS naming them).

Every cuMemAlloc_v2 ENTRY (stacked) has a STACK record, cuDriverGetVersion's (not stacked)
none; each stack's Python frames are, innermost first, exactly f3, Chain.f2, f1 at the lines
py_chain.py marks, then main and <module> (main thread) or target and threading.py's frames
(second thread), python_end DONE, the outermost frame flagged as an entry. The program's output
is the same traced and untraced.

usage: check_py_stacks.py --cuhook CUHOOK --agent LIBCUHOOK --lib FAKECUDA --target PY_CHAIN
       --workdir DIR [--python ANOTHER_PYTHON]..."""
import argparse
import glob
import json
import os
import sys

from cuhooktest import tracefile as tf
from cuhooktest import Problems, clean_env, run, run_main, work_directory

N = 5


def marked_lines(path):
    lines = {}
    with open(path, encoding="utf-8") as f:
        for n, text in enumerate(f, 1):
            if "# @" in text:
                lines[text.split("# @")[1].strip()] = n
    return lines


def check_python(a, work, python, problems):
    what = os.path.basename(python)
    untraced = run([python, a.target, a.lib, str(N)], env=clean_env(), timeout=120,
                   what=f"{what} untraced").stdout
    trace = os.path.join(work, what + ".bin")
    if os.path.exists(trace):
        os.unlink(trace)
    p = run([a.cuhook, "run", "--agent", a.agent, "--stacks", "cuMemAlloc_v2", "-o", trace, "--",
             python, a.target, a.lib, str(N)], env=clean_env(), timeout=120, what=f"{what} traced")
    problems.check(p.stdout == untraced, f"{what}: traced output {p.stdout!r} != untraced {untraced!r}")
    t = tf.read_trace(trace)
    problems.check(t.has_end, f"{what}: no END block")
    L = marked_lines(a.target)
    target = a.target  # co_filename: the script's path as given
    minor = int(run([python, "-c", "import sys; print(sys.version_info[1])"], env=clean_env(),
                    what=what).stdout)
    v311 = minor >= 11
    check_report(a, trace, what, [("f1", L["f1"]), ("Chain.f2" if v311 else "f2", L["f2"]), ("f3", L["f3"])],
                 problems)
    os.unlink(trace)
    sids = []
    for _tid, name, sid in t.entry_stacks:
        if name == "cuMemAlloc_v2":
            sids.append(sid)
        else:
            problems.check(sid is None, f"{what}: a STACK record after {name}'s ENTRY")
    problems.check(len(sids) == 2 * N and t.stack_records == 2 * N,
                   f"{what}: {len(sids)} cuMemAlloc_v2 ENTRY records, {t.stack_records} STACK records, not {2 * N}")
    seen = {"main": 0, "thread": 0}
    for sid in sids:
        if sid is None or sid == tf.STACK_NONE:
            problems.add(f"{what}: a cuMemAlloc_v2 call without a stack ({sid})")
            continue
        st = t.stacks[sid]
        problems.check(st.python_end == "DONE", f"{what}: stack {sid} python_end {st.python_end}")
        frames = [t.pyframes[i & tf.PYFRAME_ID_MASK] for i in st.python]
        got = [(f.file, f.func, f.line) for f in frames]
        chain = [(target, "f3", L["f3"]), (target, "Chain.f2", L["f2"]), (target, "f1", L["f1"])]
        if not v311:  # 3.10 names functions by co_name
            chain[1] = (target, "f2", L["f2"])
        problems.check(got[:3] == chain, f"{what}: stack {sid} begins {got[:4]}, not {chain}")
        if got[3:] == [(target, "main", L["main"]), (target, "<module>", L["module"])]:
            seen["main"] += 1
        elif got[3:4] == [(target, "target", L["thread"])] and \
                all(f.file.endswith("threading.py") for f in frames[4:]) and len(frames) == 7:
            seen["thread"] += 1
        else:
            problems.add(f"{what}: stack {sid} below f1: {got[3:]}")
        problems.check(bool(st.python) and st.python[-1] & tf.PYFRAME_ENTRY != 0,
                       f"{what}: stack {sid}: the outermost Python frame is not flagged an entry")
        problems.check(all(i & tf.PYFRAME_ENTRY == 0 for i in st.python[:3]) or not v311,
                       f"{what}: stack {sid}: f3, f2 or f1 flagged an entry (Python calls them)")
    problems.check(seen == {"main": N, "thread": N}, f"{what}: stacks by thread {seen}, not {N} each")


def check_report(a, trace, what, chain, problems):
    """The report's folded export and JSON name the chain, outermost first, as "func (file:line)",
    Python frames merged with the native ones, on every stacked call of both threads (run by hand
    with --python for 3.10, 3.12 and 3.13 too: docs/agent.md "Python frames")."""
    labels = [f"{fn} ({a.target}:{line})" for fn, line in chain]
    fold = run([a.cuhook, "report", "--format", "folded", trace], env=clean_env(), what=f"{what} folded").stdout
    lines = [x for x in fold.splitlines() if ";cuMemAlloc_v2" in x]
    def in_order(line):
        # CPython 3.10 calls each Python function through C: native frames may come between
        frames, at = line.rsplit(" ", 1)[0].split(";"), 0
        for want in labels:
            if want not in frames[at:]:
                return False
            at = frames.index(want, at) + 1
        return frames[at:] and frames[-1] == "cuMemAlloc_v2"
    problems.check(len(lines) >= 2 and all(in_order(x) for x in lines),
                   f"{what}: folded lines of cuMemAlloc_v2 without {', '.join(labels)} in this order: {lines}")
    problems.check(any(f";main ({a.target}:" in x for x in lines) and any(f";target ({a.target}:" in x for x in lines),
                   f"{what}: folded lines of the main thread's and the second thread's calls: {lines}")
    doc = json.loads(run([a.cuhook, "report", "--format", "json", trace], env=clean_env(), what=f"{what} json").stdout)
    stacks = {st["id"]: st for st in doc["stacks"]}
    calls = [json.loads(x) for x in run([a.cuhook, "report", "--format", "jsonl", trace], env=clean_env(),
                                        what=f"{what} jsonl").stdout.splitlines() if x.startswith("{")]
    good = 0
    for c in calls:
        if c.get("func") != "cuMemAlloc_v2":
            continue
        py = [(f["function"], f["file"], f["line"]) for f in stacks[c["stack"]]["frames"] if f["kind"] == "python"] \
            if c.get("stack") is not None else []
        want = [(fn, a.target, line) for fn, line in chain]
        good += any(py[i:i + 3] == want for i in range(len(py)))
    problems.check(good == 2 * N, f"{what}: {good} cuMemAlloc_v2 calls in JSON with the chain {chain}, not {2 * N}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--python", action="append", default=[])
    a = ap.parse_args()
    work = work_directory(a.workdir, "py-stacks")
    problems = Problems()
    pythons = [sys.executable] + a.python  # the interpreter running this test: not a wrapper
    # every other CPython version the agent reads (3.10-3.13) that this machine has, real binaries
    # (pyenv's shims are scripts): each checked the same way, none required
    for minor in (10, 11, 12, 13):
        found = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/3.{minor}.*/bin/python3.{minor}")))
        if found and os.path.realpath(found[-1]) not in {os.path.realpath(p) for p in pythons}:
            pythons.append(found[-1])
    for python in pythons:
        if os.path.exists(python):
            print(f"checking {python}")
            check_python(a, work, python, problems)
        else:
            print(f"{python}: not installed, not checked")
    problems.exit()


if __name__ == "__main__":
    run_main(main)
