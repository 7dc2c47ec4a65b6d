#!/usr/bin/env python3
"""Robustness tests of the agent (tests/robust/meson.build lists them). Each runs one of the
rt_* targets untraced and with the agent (constructor mode: the target dlopens libcuhook.so
before the stand-in libcuda), then checks:

  - the program's behaviour: its stdout and exit status are those of the untraced run (every
    target checks each driver result itself and exits 3 on a wrong one);
  - what the agent says on stderr (the exact message lines, and nothing else);
  - the trace, read back with `cuhook report --format json|csv`: exact counts, depths, exits.

usage: check_robust.py TEST --agent LIBCUHOOK --cuhook CUHOOK --lib LIBCUDA --bindir DIR
                       [--workdir DIR]
TEST: output | diskfull | fork | recurse | signal | siglongjmp | sigkill | crash | longjmp |
      writer-malloc | firstsig | rss | own-threads | tracer-name"""

import argparse
import csv
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

from cuhooktest import (MASK32, Fatal, Problems, calls_by_name, check_trace_health,
                        case_function, clean_env, need_file, num, run_main, tail, work_directory)

TIMEOUT = 60


class Ctx:
    def __init__(self, a):
        self.agent, self.cuhook, self.lib, self.bindir, self.workdir = \
            a.agent, a.cuhook, a.lib, a.bindir, a.workdir
        self.problems = Problems()

    def exe(self, name):
        return os.path.join(self.bindir, name)

    def path(self, name):
        return os.path.join(self.workdir, name)


# ---- running things ---------------------------------------------------------------------------

def run_target(ctx, name, args, traced, output=None, env=None, preexec=None, timeout=TIMEOUT):
    """Runs bindir/name [--agent AGENT] args LIB; returns the CompletedProcess (never raises on
    a non-zero status: that is for the caller to judge)."""
    cmd = [ctx.exe(name)] + (["--agent", ctx.agent] if traced else []) + list(args) + [ctx.lib]
    e = clean_env(env)
    if output is not None:
        e["CUHOOK_OUTPUT"] = output
    try:
        return subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=preexec)
    except subprocess.TimeoutExpired:
        raise Fatal(f"{name} did not finish in {timeout} s (hung?): {' '.join(cmd)}")


def describe_status(rc):
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"


def untraced(ctx, name, args, want_rc=0):
    p = run_target(ctx, name, args, traced=False)
    if p.returncode != want_rc or p.stderr.strip():
        raise Fatal(f"{name} untraced: {describe_status(p.returncode)} (want {want_rc})\n"
                    f"--- stdout\n{tail(p.stdout)}\n--- stderr\n{tail(p.stderr)}")
    return p


def cuhook_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("cuhook:")]


def same_behaviour(ctx, what, plain, traced):
    """The traced run printed the same and exited the same as the untraced one."""
    pr = ctx.problems
    pr.check(traced.returncode == plain.returncode,
             f"{what}: {describe_status(traced.returncode)}, untraced: "
             f"{describe_status(plain.returncode)}\n--- stderr\n{tail(traced.stderr)}")
    pr.check(traced.stdout == plain.stdout,
             f"{what}: output changed under tracing:\n--- untraced\n{tail(plain.stdout, 600)}"
             f"\n--- traced\n{tail(traced.stdout, 600)}")


def report(ctx, trace, fmt, strict=False, extra=()):
    """`cuhook report --format fmt [--strict] trace`: (returncode, stdout, stderr)."""
    cmd = [ctx.cuhook, "report", "--format", fmt] + (["--strict"] if strict else []) + \
        list(extra) + [trace]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Fatal(f"cuhook report did not finish in {TIMEOUT} s: {' '.join(cmd)}")
    if p.returncode < 0:
        raise Fatal(f"cuhook report crashed ({describe_status(p.returncode)}): {' '.join(cmd)}\n"
                    f"--- stderr\n{tail(p.stderr)}")
    return p.returncode, p.stdout, p.stderr


def report_json(ctx, trace, strict=True, want_rc=0):
    rc, out, err = report(ctx, trace, "json", strict)
    if rc != want_rc:
        raise Fatal(f"cuhook report --format json{' --strict' if strict else ''} {trace}: "
                    f"exit status {rc}, expected {want_rc}\n--- stderr\n{tail(err)}")
    try:
        return json.loads(out)
    except ValueError as e:
        raise Fatal(f"cuhook report --format json printed invalid JSON: {e}\n{tail(out)}")


def report_csv(ctx, trace, strict=True, want_rc=0):
    rc, out, err = report(ctx, trace, "csv", strict)
    if rc != want_rc:
        raise Fatal(f"cuhook report --format csv {trace}: exit status {rc}, expected {want_rc}\n"
                    f"--- stderr\n{tail(err)}")
    return list(csv.DictReader(out.splitlines()))


def fresh(path):
    if os.path.exists(path):
        os.unlink(path)
    return path


def traced_ok(ctx, what, p):
    """A traced run that must be silent on stderr (no cuhook message at all)."""
    ctx.problems.check(not cuhook_lines(p.stderr),
                       f"{what}: unexpected agent messages: {cuhook_lines(p.stderr)}")


def kv(text):
    """'key value' lines of a target's output."""
    return dict(l.split(None, 1) for l in text.splitlines() if len(l.split()) == 2)


def i32(x):
    return x & MASK32


def row_desc(r):
    return (f"{r['func']}(arg0={r['arg0']}, arg1={r['arg1']}) depth={r['depth']} ret={r['ret'] or '-'} "
            f"end={r['end_ns'] or '-'}")


# ---- 1. unwritable output path ----------------------------------------------------------------

def drop_to_nobody():
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


def readable_by_all(path):
    """Every directory on the way to path is searchable and path readable by others."""
    p = os.path.abspath(path)
    while True:
        st = os.stat(p)
        if not (st.st_mode & 0o005 if os.path.isdir(p) else st.st_mode & 0o004):
            return False
        if p == "/":
            return True
        p = os.path.dirname(p)


EXISTS_HINT = "not replaced without force=1 (cuhook --force, CUHOOK_FORCE=1); or choose another name"


def plant(path, kind, content="precious\n", target=None):
    """A fresh entry at path: a regular file with content, a symbolic link to target, or a FIFO."""
    if os.path.lexists(path):
        os.unlink(path)
    if kind == "file":
        with open(path, "w") as f:
            f.write(content)
    elif kind == "link":
        os.symlink(target, path)
    else:
        os.mkfifo(path)
    return path


def test_output(ctx):
    pr = ctx.problems
    args = ["--iters", "2000", "--exit", "42"]
    plain = untraced(ctx, "rt_loop", args, want_rc=42)

    # Control: with a writable path the agent traces every call (the agent is really loaded),
    # into a file of its own making, readable by its owner alone.
    good = fresh(ctx.path("good.bin"))
    p = run_target(ctx, "rt_loop", args, traced=True, output=good)
    same_behaviour(ctx, "writable output", plain, p)
    traced_ok(ctx, "writable output", p)
    rep = report_json(ctx, good)
    pr.check(calls_by_name(rep).get("cuFakeInner") == 2000,
             f"control run: {calls_by_name(rep).get('cuFakeInner')} calls traced, expected 2000")
    mode = os.stat(good).st_mode & 0o7777
    pr.check(mode == 0o600, f"the trace was created with mode {mode:o}, not 600")

    adir = ctx.path("a-directory")
    os.makedirs(adir, exist_ok=True)
    cases = [("missing directory", "/nonexistent/dir/t.bin", "No such file or directory", None),
             ("a directory", adir, "Is a directory", None)]

    rodir = ctx.path("read-only-dir")
    os.makedirs(rodir, exist_ok=True)
    os.chmod(rodir, 0o555)
    if os.geteuid() != 0:
        cases.append(("read-only directory", os.path.join(rodir, "t.bin"), "Permission denied", None))
    elif all(readable_by_all(x) for x in (ctx.exe("rt_loop"), ctx.agent, ctx.lib)):
        # root ignores file modes: run this case as nobody
        cases.append(("read-only directory (as nobody)", os.path.join(rodir, "t.bin"), "Permission denied",
                      drop_to_nobody))
    else:
        print("note: read-only directory case not run (root, and the build is not readable by nobody)")

    for what, path, why, preexec in cases:
        p = run_target(ctx, "rt_loop", args, traced=True, output=path, preexec=preexec)
        same_behaviour(ctx, what, plain, p)
        want = f"cuhook: cannot create trace file '{path}': {why}; not tracing"
        lines = p.stderr.splitlines()
        pr.check(lines == [want], f"{what}: stderr should be exactly {want!r}, got {lines!r}")
        print(f"{what}: {describe_status(p.returncode)}, stderr {lines!r}")
    pr.check(not os.path.exists("/nonexistent"), "/nonexistent was created")
    pr.check(os.listdir(adir) == [], f"files appeared in {adir}: {os.listdir(adir)}")
    pr.check(os.listdir(rodir) == [], f"files appeared in {rodir}: {os.listdir(rodir)}")
    test_output_existing(ctx, args, plain)


def test_output_existing(ctx, args, plain):
    """Something at the output path already: the agent, on its own (constructor mode), creates its
    file exclusively and never through a link: an existing file or link is refused and left as
    it was; CUHOOK_FORCE=1 replaces a file or the link itself (never what it points to), and
    nothing else (a FIFO here)."""
    pr = ctx.problems
    victim = plant(ctx.path("victim.txt"), "file", "the link's target\n")
    entries = {"an existing file": ("file", ctx.path("existing.bin")),
               "a link to a file": ("link", ctx.path("link.bin")),
               "a dangling link": ("link", ctx.path("dangling.bin")),
               "a FIFO": ("fifo", ctx.path("fifo.bin"))}
    targets = {"a link to a file": victim, "a dangling link": ctx.path("never-created.txt")}
    for force in (False, True):
        for what, (kind, path) in entries.items():
            plant(path, kind, target=targets.get(what))
            label = f"{what}{' with CUHOOK_FORCE=1' if force else ''}"
            try:
                p = run_target(ctx, "rt_loop", args, traced=True, output=path,
                               env={"CUHOOK_FORCE": "1"} if force else None, timeout=10)
            except Fatal as e:  # an agent that opens the FIFO waits for a reader for good
                pr.add(f"{label}: {e}")
                continue
            same_behaviour(ctx, label, plain, p)
            lines = p.stderr.splitlines()
            print(f"{label}: {describe_status(p.returncode)}, stderr {lines!r}")
            if force and kind != "fifo":
                traced_ok(ctx, label, p)
                st = os.lstat(path)
                if pr.check(stat.S_ISREG(st.st_mode) and st.st_mode & 0o7777 == 0o600,
                            f"{label}: the trace is not a new regular file of mode 600 (mode {st.st_mode:o})"):
                    rep = report_json(ctx, path)
                    pr.check(calls_by_name(rep).get("cuFakeInner") == 2000, f"{label}: calls traced: "
                             f"{calls_by_name(rep).get('cuFakeInner')}, expected 2000")
                continue
            if force:
                want = (f"cuhook: trace file '{path}' exists and is neither a regular file nor a symbolic link: "
                        "it is never replaced; not tracing")
            else:
                want = f"cuhook: trace file '{path}' exists; {EXISTS_HINT}; not tracing"
            pr.check(lines == [want], f"{label}: stderr should be exactly {want!r}, got {lines!r}")
            st = os.lstat(path)
            if kind == "file":
                with open(path, "rb") as f:
                    pr.check(f.read() == b"precious\n", f"{label}: the file was changed")
            elif kind == "link":
                pr.check(os.path.islink(path) and os.readlink(path) == targets[what],
                         f"{label}: the link was changed")
            else:
                pr.check(stat.S_ISFIFO(st.st_mode), f"{label}: the FIFO was replaced")
        with open(victim, "rb") as f:
            pr.check(f.read() == b"the link's target\n", "the file a planted link points to was changed")
        pr.check(not os.path.lexists(targets["a dangling link"]), "a dangling link's target was created")


# ---- 2. disk full -----------------------------------------------------------------------------

FSIZE = 64 * 1024
WRITE_FAILED = "cuhook: writing the trace failed (File too large); tracing stopped, the program goes on"


def limit_fsize():
    resource.setrlimit(resource.RLIMIT_FSIZE, (FSIZE, FSIZE))


def check_prefix_rows(ctx, what, rows, made):
    """rt_loop's calls: row i is cuFakeInner(i) returning i ^ 0x1234; only the last may lack its
    exit. Returns the number of rows."""
    pr = ctx.problems
    bad = 0
    for i, r in enumerate(rows):
        ok = r["func"] == "cuFakeInner" and num(r["arg0"]) is not None and i32(num(r["arg0"])) == i \
            and r["depth"] == "0"
        if r["ret"]:
            ok = ok and i32(num(r["ret"])) == i ^ 0x1234
        else:
            ok = ok and i == len(rows) - 1
        if not ok:
            bad += 1
            if bad <= 5:
                pr.add(f"{what}: row {i} is not call {i} of the program: {row_desc(r)}")
    pr.check(len(rows) <= made, f"{what}: {len(rows)} calls in the trace, only {made} made")
    return len(rows)


def test_diskfull(ctx):
    pr = ctx.problems

    # (a) The writer thread hits the limit mid-run: 200 calls are written during a pause, then
    # 200000 more (30 MB of events) cannot be.
    args = ["--iters", "200000", "--pause-after", "200", "--pause-ms", "300", "--exit", "42"]
    plain = untraced(ctx, "rt_loop", args, want_rc=42)
    trace = fresh(ctx.path("fsize-run.bin"))
    p = run_target(ctx, "rt_loop", args, traced=True, output=trace, preexec=limit_fsize)
    print(f"limit hit by the writer: {describe_status(p.returncode)}, stderr {p.stderr.splitlines()!r}")
    pr.check(p.returncode != -signal.SIGXFSZ, "writer hit RLIMIT_FSIZE: the program was killed by SIGXFSZ")
    same_behaviour(ctx, "writer hit RLIMIT_FSIZE", plain, p)
    pr.check(p.stderr.splitlines() == [WRITE_FAILED],
             f"writer hit RLIMIT_FSIZE: stderr should be exactly {WRITE_FAILED!r}, got "
             f"{p.stderr.splitlines()!r}")
    need_file(trace, "the partial trace")
    size = os.path.getsize(trace)
    pr.check(size <= FSIZE, f"trace is {size} bytes, over the {FSIZE}-byte limit")
    rep = report_json(ctx, trace, strict=False)
    print(f"partial trace: {size} bytes, {rep.get('calls')} calls, truncated={rep.get('truncated')} "
          f"({rep.get('truncated_reason')})")
    pr.check(rep.get("truncated") is True and rep.get("complete") is False,
             f"partial trace: truncated={rep.get('truncated')}, complete={rep.get('complete')}: "
             "a trace whose writing failed cannot be complete")
    rows = report_csv(ctx, trace, strict=False)
    n = check_prefix_rows(ctx, "partial trace", rows, 200000)
    pr.check(n >= 200, f"partial trace: {n} calls, expected at least the 200 made before the pause")
    pr.check(rep.get("calls") == n, f"json says {rep.get('calls')} calls, csv has {n} rows")
    rc, _, _ = report(ctx, trace, "json", strict=True)
    pr.check(rc == 3, f"cuhook report --strict on the partial trace: exit status {rc}, expected 3")

    # (b) The limit is hit only by the final flush, at exit, on the program's own thread: 3000
    # calls (450 KB) stay in the 1 MiB ring (the writer's period is 60 s; the pause after the
    # first call lets it finish its first round and go to sleep) until the destructor.
    args = ["--iters", "3000", "--pause-after", "1", "--pause-ms", "100", "--exit", "42"]
    plain = untraced(ctx, "rt_loop", args, want_rc=42)
    trace = fresh(ctx.path("fsize-exit.bin"))
    p = run_target(ctx, "rt_loop", args, traced=True, output=trace, preexec=limit_fsize,
                   env={"CUHOOK_FLUSH_MS": "60000"})
    print(f"limit hit by the final flush: {describe_status(p.returncode)}, stderr "
          f"{p.stderr.splitlines()!r}")
    pr.check(p.returncode != -signal.SIGXFSZ,
             "limit hit by the final flush at exit: the program was killed by SIGXFSZ (the flush "
             "runs on the exiting thread, where SIGXFSZ is not blocked)")
    same_behaviour(ctx, "final flush hit RLIMIT_FSIZE", plain, p)
    pr.check(p.stderr.splitlines() == [WRITE_FAILED],
             f"final flush hit RLIMIT_FSIZE: stderr should be exactly {WRITE_FAILED!r}, got "
             f"{p.stderr.splitlines()!r}")
    if os.path.exists(trace):
        rep = report_json(ctx, trace, strict=False)
        pr.check(rep.get("truncated") is True, "final flush: trace not reported as truncated")
        check_prefix_rows(ctx, "final flush trace", report_csv(ctx, trace, strict=False), 3000)

    # (c) and (d): a real full filesystem, a 64 KiB tmpfs (needs mount rights: root, as CI;
    # skipped with a note otherwise).
    mnt = ctx.path("tmpfs")
    os.makedirs(mnt, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt],
                      capture_output=True).returncode != 0:
        print("tmpfs: cannot mount here (not root?): cases (c) and (d) not run")
        return
    try:
        # (c) Full before the agent starts: the header cannot be written; the agent must give up
        # at start. (This was /dev/full, which exists: the agent now refuses it as an existing
        # file before writing.)
        filler = os.path.join(mnt, "filler")
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            while os.write(fd, b"x" * 4096) > 0:
                pass
        except OSError:
            pass  # ENOSPC: full
        os.close(fd)
        args = ["--iters", "2000", "--exit", "42"]
        plain = untraced(ctx, "rt_loop", args, want_rc=42)
        trace = os.path.join(mnt, "t0.bin")
        p = run_target(ctx, "rt_loop", args, traced=True, output=trace)
        same_behaviour(ctx, "full tmpfs at start", plain, p)
        want = f"cuhook: cannot write trace file '{trace}': No space left on device; not tracing"
        pr.check(p.stderr.splitlines() == [want],
                 f"full tmpfs at start: stderr should be exactly {want!r}, got {p.stderr.splitlines()!r}")
        print(f"full tmpfs at start: {describe_status(p.returncode)}, stderr {p.stderr.splitlines()!r}")
        for f in (filler, trace):
            if os.path.exists(f):
                os.unlink(f)

        # (d) The writer gets ENOSPC mid-run.
        args = ["--iters", "200000", "--pause-after", "200", "--pause-ms", "300", "--exit", "42"]
        plain = untraced(ctx, "rt_loop", args, want_rc=42)
        trace = os.path.join(mnt, "t.bin")
        p = run_target(ctx, "rt_loop", args, traced=True, output=trace)
        want = "cuhook: writing the trace failed (No space left on device); tracing stopped, the program goes on"
        print(f"tmpfs full: {describe_status(p.returncode)}, stderr {p.stderr.splitlines()!r}")
        same_behaviour(ctx, "full tmpfs", plain, p)
        pr.check(p.stderr.splitlines() == [want],
                 f"full tmpfs: stderr should be exactly {want!r}, got {p.stderr.splitlines()!r}")
        need_file(trace, "the trace on the full tmpfs")
        rows = report_csv(ctx, trace, strict=False)
        n = check_prefix_rows(ctx, "full tmpfs trace", rows, 200000)
        pr.check(n >= 200, f"full tmpfs: {n} calls, expected at least the 200 made before the pause")
    finally:
        subprocess.run(["umount", mnt], capture_output=True)


# ---- 3. fork ----------------------------------------------------------------------------------

def test_fork(ctx):
    pr = ctx.problems
    forks, threads, before, work, after = 8, 2, 1000, 100000, 1000
    args = ["--forks", str(forks), "--threads", str(threads), "--before", str(before),
            "--work", str(work), "--child", "500", "--after", str(after)]
    plain = untraced(ctx, "rt_fork", args)
    trace = fresh(ctx.path("fork.bin"))
    cmd = [ctx.exe("rt_fork"), "--agent", ctx.agent] + args + [ctx.lib]
    proc = subprocess.Popen(cmd, env=clean_env({"CUHOOK_OUTPUT": trace}), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise Fatal("rt_fork traced did not finish in 30 s (a child or the parent hung)")
    p = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    same_behaviour(ctx, "fork", plain, p)
    traced_ok(ctx, "fork", p)
    got = kv(out)
    pr.check(got.get("children_ok") == str(forks), f"children ok: {got.get('children_ok')} of {forks}")

    rep = report_json(ctx, trace)  # --strict: exit 3 if truncated or damaged
    check_trace_health(rep, pr)
    pr.check(rep.get("pid") == proc.pid, f"trace pid {rep.get('pid')}, the parent is {proc.pid}")
    want = {"cuFakeInner": before, "cuFakeSwitch": work * threads, "cuFakeConstC": after}
    calls = calls_by_name(rep)
    for name in sorted(set(calls) | set(want)):
        pr.check(calls.get(name, 0) == want.get(name, 0),
                 f"{name}: {calls.get(name, 0)} traced calls, expected {want.get(name, 0)}"
                 + (" (children's calls must not be traced)" if name not in want else ""))
    tids = sorted(t["tid"] for t in rep.get("threads", []))
    pr.check(len(tids) == 1 + threads and proc.pid in tids,
             f"threads in the trace: {tids}; expected the parent's main thread {proc.pid} and "
             f"{threads} workers")
    pr.check(rep.get("events") == 2 * sum(want.values()),
             f"{rep.get('events')} events, expected {2 * sum(want.values())}")
    print(f"fork: {forks} children, parent trace: {calls}")


# ---- 4. deep nesting --------------------------------------------------------------------------

SHADOW_MAX = 128  # src/agent/thread_state.h


def recurse_ref(n, acc):
    """fakecuda.h: returns [(n, acc, result)] for each level, outermost first."""
    levels = []
    while True:
        levels.append([n, acc, None])
        if n <= 1:
            break
        acc = (acc * 31 + n) & MASK32
        n -= 1
    r = (levels[-1][1] * 31 + 1) & MASK32
    levels[-1][2] = r
    for lv in reversed(levels[:-1]):
        r = (r * 3 + lv[0]) & MASK32
        lv[2] = r
    return levels


def test_recurse(ctx):
    pr = ctx.problems
    repeat, follow = 3, 10
    for depth in (300, 129, 128):
        args = ["--depth", str(depth), "--repeat", str(repeat), "--follow", str(follow)]
        plain = untraced(ctx, "rt_recurse", args)
        trace = fresh(ctx.path(f"recurse-{depth}.bin"))
        p = run_target(ctx, "rt_recurse", args, traced=True, output=trace)
        same_behaviour(ctx, f"recursion {depth}", plain, p)
        traced_ok(ctx, f"recursion {depth}", p)
        if p.returncode != plain.returncode:
            continue

        # Derived from src/agent/record.c: an ENTRY at shadow depth d < 128 pushes a shadow entry
        # (depth d, an EXIT follows); at d >= 128 it is flagged CUHOOK_RF_NO_EXIT, records depth
        # 128 (the shadow stack's depth does not grow) and gets no EXIT.
        with_exit = min(depth, SHADOW_MAX)
        no_exit = depth - with_exit
        rep = report_json(ctx, trace)
        check_trace_health(rep, pr)  # calls_without_exit counts lost exits, not entry-only calls
        fn = {f["name"]: f for f in rep.get("functions", [])}
        rec = fn.get("cuFakeRecurse", {})
        pr.check(rec.get("calls") == depth * repeat,
                 f"depth {depth}: {rec.get('calls')} cuFakeRecurse calls, expected {depth * repeat}")
        pr.check(rec.get("timed_calls") == with_exit * repeat,
                 f"depth {depth}: {rec.get('timed_calls')} calls with an exit, expected "
                 f"{with_exit * repeat}")
        pr.check(fn.get("cuFakeInner", {}).get("calls") == follow * repeat,
                 f"depth {depth}: {fn.get('cuFakeInner', {}).get('calls')} cuFakeInner calls after "
                 f"the recursion, expected {follow * repeat}")
        want_events = (depth + with_exit + 2 * follow) * repeat
        pr.check(rep.get("events") == want_events,
                 f"depth {depth}: {rep.get('events')} events (ENTRY + EXIT), expected {want_events}")
        pr.check(rep.get("max_depth") == min(depth - 1, SHADOW_MAX),
                 f"depth {depth}: max_depth {rep.get('max_depth')}, expected {min(depth - 1, SHADOW_MAX)}")

        rows = report_csv(ctx, trace)
        expect = []
        for r in range(repeat):
            for i, (n, acc, res) in enumerate(recurse_ref(depth, 0x1000 + r)):
                expect.append(("cuFakeRecurse", n, acc, min(i, SHADOW_MAX), res if i < SHADOW_MAX else None))
            for k in range(follow):
                expect.append(("cuFakeInner", k, None, 0, k ^ 0x1234))
        pr.check(len(rows) == len(expect), f"depth {depth}: {len(rows)} csv rows, expected {len(expect)}")
        bad = 0
        for i, (r, (func, a0, a1, d, ret)) in enumerate(zip(rows, expect)):
            ok = r["func"] == func and i32(num(r["arg0"]) or 0) == a0 and r["depth"] == str(d)
            if a1 is not None:
                ok = ok and i32(num(r["arg1"]) or 0) == a1
            if ret is None:
                ok = ok and not r["ret"] and not r["end_ns"]
            else:
                ok = ok and r["ret"] != "" and i32(num(r["ret"])) == ret
            if not ok:
                bad += 1
                if bad <= 5:
                    pr.add(f"depth {depth}: row {i}: {row_desc(r)}; expected {func}(arg0={a0}"
                           f"{'' if a1 is None else f', arg1={a1:#x}'}) depth={d} ret="
                           f"{'-' if ret is None else hex(ret)}")
        print(f"depth {depth}: {rec.get('calls')} calls, {rec.get('timed_calls')} with an exit, "
              f"{no_exit * repeat} entry-only expected; {bad} rows wrong")


# ---- 5. signal handlers -----------------------------------------------------------------------

MIN_SIGNALS = 5000


def run_rt_signal(ctx, what, extra, trace_name):
    """rt_signal traced (20000 iterations, MIN_SIGNALS signals at least, plus extra): its
    key=value output and the trace, or None (a problem recorded) when it failed or saw a bad
    result."""
    args = ["--iters", "20000", "--min-signals", str(MIN_SIGNALS), "--spin", "50"] + extra
    trace = fresh(ctx.path(trace_name))
    p = run_target(ctx, "rt_signal", args, traced=True, output=trace)
    traced_ok(ctx, what, p)
    got = kv(p.stdout)
    if not ctx.problems.check(p.returncode == 0 and got.get("bad") == "0",
                              f"{what}: {describe_status(p.returncode)}, bad={got.get('bad')}\n"
                              f"--- stdout\n{tail(p.stdout)}\n--- stderr\n{tail(p.stderr)}"):
        return None, trace
    return got, trace


def test_signal(ctx):
    pr = ctx.problems
    variants = [("tgkill", ["--via", "tgkill"]), ("itimer", ["--via", "itimer", "--interval-us", "20"]),
                ("tgkill+altstack", ["--via", "tgkill", "--altstack", "1"])]
    for what, extra in variants:
        got, trace = run_rt_signal(ctx, what, extra, f"signal-{what.replace('+', '-')}.bin")
        if got is None:
            continue
        main_iters, runs = int(got["main_iters"]), int(got["handler_runs"])
        pr.check(runs >= MIN_SIGNALS, f"{what}: only {runs} signals handled in 10 s: the test did "
                                      "not exercise much")
        rep = report_json(ctx, trace)
        check_trace_health(rep, pr)  # no exit lost, no orphan exit, nothing damaged
        calls = calls_by_name(rep)
        for name in ("cuFakeThunk", "cuFakeMulD"):
            pr.check(calls.get(name, 0) == main_iters,
                     f"{what}: {calls.get(name, 0)} {name} calls traced, the main thread made {main_iters}")
        for name in ("cuFakeSwitch", "cuFakeOuter", "cuFakeScale"):
            pr.check(calls.get(name, 0) <= runs,
                     f"{what}: {calls.get(name, 0)} {name} calls traced, the handler made {runs}")
        pr.check(calls.get("cuFakeInner", 0) == calls.get("cuFakeOuter", 0),
                 f"{what}: {calls.get('cuFakeInner', 0)} cuFakeInner (nested) vs "
                 f"{calls.get('cuFakeOuter', 0)} cuFakeOuter traced")
        pr.check(calls.get("cuFakeConstC", 0) == int(got["final"]),
                 f"{what}: {calls.get('cuFakeConstC', 0)} cuFakeConstC calls traced after the signals, "
                 f"the main thread made {got['final']}")
        extra_names = set(calls) - {"cuFakeThunk", "cuFakeMulD", "cuFakeSwitch", "cuFakeOuter",
                                    "cuFakeScale", "cuFakeInner", "cuFakeConstC"}
        pr.check(not extra_names, f"{what}: calls of functions nobody called: {sorted(extra_names)}")

        rows = report_csv(ctx, trace)
        bad, nested_in_main, prev = 0, 0, None
        for i, r in enumerate(rows):
            a0 = i32(num(r["arg0"]) or 0)
            ret = None if not r["ret"] else i32(num(r["ret"]))
            d = int(r["depth"])
            f = r["func"]
            msg = None
            if not r["end_ns"] or ret is None:
                msg = "no exit"
            elif f == "cuFakeThunk":
                if d != 0 or ret != i32(7 * a0 - 3):
                    msg = "main thread call: depth must be 0, ret 7x-3"
            elif f == "cuFakeMulD":
                if d != 0:
                    msg = "main thread call: depth must be 0"
            elif f == "cuFakeConstC":
                if d != 0 or ret != 999:
                    msg = "main thread call after the signals: depth must be 0, ret 999"
            elif f in ("cuFakeSwitch", "cuFakeOuter", "cuFakeScale"):
                if d not in (0, 1):
                    msg = "handler call: depth must be 0 or 1 (inside a main-thread call)"
                elif f == "cuFakeSwitch" and (a0 != 2 or ret != i32(num(r["arg1"]) ^ 0x5a5a)):
                    msg = "cuFakeSwitch(2, k) must return k ^ 0x5a5a"
                elif f == "cuFakeOuter" and ret != i32(((3 * a0) ^ 0x1234) + 7):
                    msg = "cuFakeOuter(k) must return ((3k) ^ 0x1234) + 7"
                nested_in_main += d == 1 and f == "cuFakeSwitch"
            elif f == "cuFakeInner":
                if prev is None or prev["func"] != "cuFakeOuter" or d != int(prev["depth"]) + 1 \
                        or a0 != i32(3 * i32(num(prev["arg0"]))) or ret != a0 ^ 0x1234:
                    msg = "cuFakeInner must follow its cuFakeOuter, one level deeper, with 3k"
            if msg:
                bad += 1
                if bad <= 5:
                    pr.add(f"{what}: row {i}: {row_desc(r)}: {msg}")
            prev = r
        traced_h = calls.get("cuFakeSwitch", 0)
        print(f"{what}: {main_iters} main iterations, {runs} signals handled, {traced_h} handler runs "
              f"traced ({runs - traced_h} passed through untraced), {nested_in_main} inside a traced "
              f"main-thread call; {bad} rows wrong")


# ---- 5b. siglongjmp out of signal handlers ----------------------------------------------------

def test_siglongjmp(ctx):
    """The handler ends with siglongjmp to the main loop's head, wherever it interrupted the main
    thread: in a traced call, or inside the agent's own entry/exit code. Afterwards (signal
    blocked) the main thread makes FINAL plain calls: all must be traced, with an exit, at
    depth 0. (A handler that interrupts the agent and never returns to it must not leave the
    thread's tracing switched off, nor stale shadow-stack entries that deepen every later call.)"""
    pr = ctx.problems
    for what, extra in [("tgkill", ["--via", "tgkill"]),
                        ("itimer", ["--via", "itimer", "--interval-us", "20"])]:
        # the program is sound by itself (it once overflowed its stack in nested handlers)
        untraced(ctx, "rt_signal", ["--iters", "20000", "--min-signals", str(MIN_SIGNALS), "--spin", "50",
                                    "--siglongjmp", "1"] + extra)
        got, trace = run_rt_signal(ctx, what, ["--siglongjmp", "1"] + extra, f"siglongjmp-{what}.bin")
        if got is None:
            continue
        runs, final = int(got["handler_runs"]), int(got["final"])
        pr.check(runs >= MIN_SIGNALS, f"{what}: only {runs} signals handled in 10 s")
        rep = report_json(ctx, trace)
        for key in ("dropped", "corrupt_records", "orphan_exits", "unknown_function_ids", "block_gaps"):
            pr.check(rep.get(key, 0) == 0, f"{what}: report: {key} = {rep.get(key)}")
        pr.check(rep.get("complete") is True and not rep.get("truncated"), f"{what}: trace not complete")
        calls = calls_by_name(rep)
        pr.check(calls.get("cuFakeConstC", 0) == final,
                 f"{what}: {calls.get('cuFakeConstC', 0)} of the {final} cuFakeConstC calls made after "
                 f"the signals were traced (main loop: {calls.get('cuFakeThunk', 0)} of "
                 f"{got['main_iters']} iterations traced)")
        rows = [r for r in report_csv(ctx, trace) if r["func"] == "cuFakeConstC"]
        wrong = [r for r in rows if r["depth"] != "0" or not r["end_ns"] or i32(num(r["ret"]) or 0) != 999]
        pr.check(not wrong, f"{what}: {len(wrong)} of the traced final calls are not depth 0 with "
                            f"an exit returning 999, e.g. {row_desc(wrong[0]) if wrong else ''}")
        print(f"{what}: {runs} signals handled; main loop: {calls.get('cuFakeThunk', 0)} of "
              f"{got['main_iters']} iterations traced; final: {calls.get('cuFakeConstC', 0)} of {final} "
              f"traced, {len(wrong)} wrong")


# ---- 6. SIGKILL -------------------------------------------------------------------------------

def test_sigkill(ctx):
    pr = ctx.problems
    trace = fresh(ctx.path("killed.bin"))
    progress = fresh(ctx.path("progress"))
    cmd = [ctx.exe("rt_loop"), "--agent", ctx.agent, "--iters", "0", "--throttle", "20",
           "--progress", progress, ctx.lib]
    proc = subprocess.Popen(cmd, env=clean_env({"CUHOOK_OUTPUT": trace}), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    t0 = time.monotonic()
    made = 0
    while time.monotonic() - t0 < 10:
        time.sleep(0.05)
        if proc.poll() is not None:
            break
        if os.path.exists(progress) and os.path.getsize(progress) >= 8:
            with open(progress, "rb") as f:
                made = int.from_bytes(f.read(8), "little")
        if made > 1000 and time.monotonic() - t0 >= 0.5:
            break
    if proc.poll() is not None:
        out, err = proc.communicate()
        raise Fatal(f"rt_loop ended by itself ({describe_status(proc.returncode)})\n{tail(err.decode())}")
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=TIMEOUT)
    with open(progress, "rb") as f:
        made = int.from_bytes(f.read(8), "little")
    pr.check(proc.returncode == -signal.SIGKILL, f"rt_loop: {describe_status(proc.returncode)}")
    need_file(trace, "the trace of the killed process")
    size = os.path.getsize(trace)

    rep = report_json(ctx, trace, strict=False, want_rc=0)
    print(f"killed after {made} calls: trace {size} bytes, {rep.get('calls')} calls, "
          f"truncated={rep.get('truncated')} ({rep.get('truncated_reason')})")
    pr.check(rep.get("truncated") is True, f"truncated is {rep.get('truncated')}, expected true")
    pr.check(rep.get("complete") is False, f"complete is {rep.get('complete')}, expected false")
    pr.check("END" in rep.get("truncated_reason", "") or "cut" in rep.get("truncated_reason", ""),
             f"truncated_reason does not say why: {rep.get('truncated_reason')!r}")
    pr.check(0 < rep.get("calls", 0) <= made,
             f"{rep.get('calls')} calls in the trace; the program made {made} (must be 1..{made})")
    for key in ("corrupt_records", "orphan_exits", "unknown_function_ids", "block_gaps", "dropped"):
        pr.check(rep.get(key, 0) == 0, f"report: {key} = {rep.get(key)}")
    pr.check(rep.get("calls_without_exit", 0) <= 1,
             f"{rep.get('calls_without_exit')} calls without exit; at most the last one may lack it")

    rc, _, err = report(ctx, trace, "json", strict=True)
    pr.check(rc == 3, f"cuhook report --strict: exit status {rc}, expected 3 (truncated)")
    pr.check("truncated" in err.lower(), f"cuhook report --strict says nothing about truncation on "
                                         f"stderr: {err!r}")
    rc, text, err = report(ctx, trace, "text")
    pr.check(rc == 0, f"cuhook report (text): exit status {rc}, expected 0")
    pr.check("truncated" in (text + err).lower(), "the text report does not say the trace is truncated")

    rows = report_csv(ctx, trace, strict=False)
    n = check_prefix_rows(ctx, "killed trace", rows, made)
    pr.check(n == rep.get("calls"), f"csv has {n} rows, json says {rep.get('calls')} calls")


# ---- 6b. the target crashes on its own --------------------------------------------------------

def test_crash(ctx):
    """A target that dies of SIGSEGV by itself: it still dies the same way traced, and the calls
    it made before cuhook's last flush (a 300 ms pause after 4000 calls lets the writer drain)
    survive in the trace as an exact prefix."""
    pr = ctx.problems
    args = ["--iters", "0", "--pause-after", "4000", "--pause-ms", "300", "--crash-after", "5000"]
    plain = run_target(ctx, "rt_loop", args, traced=False)
    pr.check(plain.returncode == -signal.SIGSEGV, f"untraced rt_loop: {describe_status(plain.returncode)}, "
                                                   "expected SIGSEGV")
    trace = fresh(ctx.path("crashed.bin"))
    p = run_target(ctx, "rt_loop", args, traced=True, output=trace)
    pr.check(p.returncode == -signal.SIGSEGV, f"traced rt_loop: {describe_status(p.returncode)}, "
                                               "expected SIGSEGV as untraced")
    need_file(trace, "the trace of the crashed process")
    rep = report_json(ctx, trace, strict=False, want_rc=0)
    print(f"crashed after 5000 calls: {rep.get('calls')} calls in the trace, truncated={rep.get('truncated')}")
    pr.check(rep.get("truncated") is True, f"truncated is {rep.get('truncated')}, expected true (no END block)")
    pr.check(4000 <= rep.get("calls", 0) <= 5000,
             f"{rep.get('calls')} calls in the trace; the 4000 made before the pause must survive (at most 5000)")
    rows = report_csv(ctx, trace, strict=False)
    n = check_prefix_rows(ctx, "crashed trace", rows, 5000)
    pr.check(n == rep.get("calls"), f"csv has {n} rows, json says {rep.get('calls')} calls")


# ---- 7. longjmp -------------------------------------------------------------------------------

def test_longjmp(ctx):
    pr = ctx.problems
    inside, out, after = 20, 200, 20
    args = ["--inside", str(inside), "--out", str(out), "--after", str(after)]
    plain = untraced(ctx, "rt_longjmp", args)
    trace = fresh(ctx.path("longjmp.bin"))
    p = run_target(ctx, "rt_longjmp", args, traced=True, output=trace)
    same_behaviour(ctx, "longjmp", plain, p)
    traced_ok(ctx, "longjmp", p)
    if p.returncode != plain.returncode:
        return

    # (func, arg, depth, ret or None for "no exit": the frame was skipped by longjmp)
    expect = []
    for j in range(inside):
        expect += [("cuFakeCallback", j, 0, 2 * j + 1), ("cuFakeCallback", j, 1, None),
                   ("cuFakeInner", j + 100000, 2, (j + 100000) ^ 0x1234)]
    for j in range(out):
        expect += [("cuFakeCallback", j, 0, None), ("cuFakeInner", j + 200000, 1, (j + 200000) ^ 0x1234),
                   ("cuFakeInner", j, 0, j ^ 0x1234), ("cuFakeConstB", None, 0, 0x5a)]
    expect += [("cuFakeConstC", None, 0, 999)] * after

    rep = report_json(ctx, trace)
    for key in ("dropped", "corrupt_records", "orphan_exits", "unknown_function_ids", "block_gaps"):
        pr.check(rep.get(key, 0) == 0, f"report: {key} = {rep.get(key)}")
    pr.check(rep.get("complete") is True and not rep.get("truncated"), "trace not complete")
    pr.check(rep.get("calls_without_exit") == inside + out,
             f"calls_without_exit = {rep.get('calls_without_exit')}, expected {inside + out} (the "
             "calls longjmp skipped)")
    rows = report_csv(ctx, trace)
    pr.check(len(rows) == len(expect), f"{len(rows)} csv rows, expected {len(expect)}")
    bad, first_bad = 0, {}
    phase_of = ["inside"] * (3 * inside) + ["out"] * (4 * out) + ["after"] * after
    for i, (r, (func, arg, d, ret)) in enumerate(zip(rows, expect)):
        if func == "cuFakeCallback":
            a = i32(num(r["arg1"]) or 0)
        else:
            a = i32(num(r["arg0"]) or 0)
        ok = r["func"] == func and (arg is None or a == arg) and r["depth"] == str(d)
        if ret is None:
            ok = ok and not r["end_ns"]
        else:
            ok = ok and r["end_ns"] != "" and r["ret"] != "" and i32(num(r["ret"])) == ret
        if not ok:
            bad += 1
            first_bad.setdefault(phase_of[i], (i, r, (func, arg, d, ret)))
            if bad <= 6:
                pr.add(f"row {i} ({phase_of[i]}): {row_desc(r)}; expected {func} arg={arg} depth={d} "
                       f"ret={'- (no exit)' if ret is None else hex(ret)}")
    after_rows = rows[len(rows) - after:] if len(rows) >= after else []
    depths = sorted(set(r["depth"] for r in after_rows))
    no_exit = sum(1 for r in after_rows if not r["end_ns"])
    print(f"longjmp: {bad} rows wrong; phases with a wrong row: {sorted(first_bad)}; the last "
          f"{after} calls (after {out} longjmps out of traced calls): depths {depths}, "
          f"{no_exit} without an exit")


def test_writer_malloc(ctx):
    """The writer thread calls no malloc, calloc or realloc (a preloaded probe counts them by
    thread name): with every other thread stopped under ptrace, as during a detach, one of them
    may hold the arena lock the writer would need. A writer round every millisecond, the tables
    and notes of the start included; the calls all recorded."""
    pr = ctx.problems
    probe = ctx.exe("libwriter_malloc_probe.so")
    need_file(probe, "the malloc probe (tests/robust/writer_malloc_probe.c)")
    out = fresh(ctx.path("probe.txt"))
    trace = fresh(ctx.path("writer-malloc.bin"))
    iters = 40000
    args = ["--iters", str(iters), "--throttle", "40"]
    plain = untraced(ctx, "rt_loop", args)
    p = run_target(ctx, "rt_loop", args, True, output=trace,
                   env={"LD_PRELOAD": probe, "WRITER_MALLOC_PROBE_OUT": out, "CUHOOK_FLUSH_MS": "1"})
    same_behaviour(ctx, "rt_loop with the probe", plain, p)
    need_file(out, "the probe's count (written at exit)")
    with open(out) as f:
        got = f.read().split()
    writer, total = int(got[1]), int(got[3])
    print(f"malloc/calloc/realloc calls: {writer} from the writer thread, {total} in all")
    pr.check(total > 0, "the probe saw no call at all: not preloaded?")
    pr.check(writer == 0, f"the writer thread made {writer} malloc/calloc/realloc calls")
    rep = report_json(ctx, trace)
    pr.check(rep.get("calls") == iters, f"{rep.get('calls')} calls recorded, the program made {iters}")


# ---- 9. a thread's first traced call from a signal handler that interrupted malloc ----------

FIRSTSIG_THREADS, FIRSTSIG_ROUNDS, FIRSTSIG_DEADLINE_MS = 16, 4, 5000


def test_firstsig(ctx):
    """Threads make their first traced call from a signal handler that interrupted malloc or
    free (rt_firstsig: 16 threads a round, 4 rounds, and the main thread once). Making a thread's
    state must take no lock its own interrupted code may hold: a hang is detected by the target
    itself (a round not done in 5 s: "hung", exit 4) rather than by this script's timeout. Every
    handler's call is traced, once, with its result."""
    pr = ctx.problems
    args = ["--threads", str(FIRSTSIG_THREADS), "--rounds", str(FIRSTSIG_ROUNDS),
            "--deadline-ms", str(FIRSTSIG_DEADLINE_MS)]
    victims = FIRSTSIG_THREADS * FIRSTSIG_ROUNDS + 1
    plain = untraced(ctx, "rt_firstsig", args)
    trace = fresh(ctx.path("firstsig.bin"))
    p = run_target(ctx, "rt_firstsig", args, traced=True, output=trace, timeout=40)
    got = kv(p.stdout)
    hung = [l.split() for l in p.stdout.splitlines() if l.startswith("hung ")]
    if hung:
        rnd, left = hung[0][1:3]
        raise Fatal(f"traced: {left} of the threads of round {rnd} hung in their first traced call "
                    f"(a signal handler that interrupted malloc; {describe_status(p.returncode)})")
    same_behaviour(ctx, "first calls from signal handlers", plain, p)
    traced_ok(ctx, "first calls from signal handlers", p)
    pr.check(got.get("victims") == str(victims) and got.get("handled") == str(victims),
             f"victims {got.get('victims')}, handled {got.get('handled')}; expected {victims} each")
    rep = report_json(ctx, trace)
    check_trace_health(rep, pr)
    rows = report_csv(ctx, trace)
    args_seen = sorted(i32(num(r["arg0"]) or 0) for r in rows if r["func"] == "cuFakeInner")
    pr.check(args_seen == list(range(victims)),
             f"{len(args_seen)} cuFakeInner calls traced; expected one for each of the {victims} "
             f"threads (arguments 0..{victims - 1})")
    wrong = [r for r in rows if r["func"] != "cuFakeInner" or r["depth"] != "0" or not r["ret"]
             or i32(num(r["ret"])) != i32(num(r["arg0"])) ^ 0x1234]
    pr.check(not wrong, f"{len(wrong)} rows are not cuFakeInner(k) = k ^ 0x1234 at depth 0, e.g. "
                        f"{row_desc(wrong[0]) if wrong else ''}")
    print(f"first calls from signal handlers: {got.get('handled')} of {victims} threads, "
          f"{len(args_seen)} calls traced, {len(rep.get('threads', []))} threads in the trace")


# ---- 10. memory of the rings ------------------------------------------------------------------

RSS_THREADS, RSS_CALLS, RSS_RING_KB = 8, 4, 65536


def test_rss(ctx):
    """8 threads each make 4 traced calls with 64 MiB rings: the rings' memory grows with use
    (populated as they fill), so while the threads live the process holds far less than 8 x 64
    MiB more than before them: at most 4 MiB a thread beyond what the threads take untraced (a
    ring populated up front held 64; a huge page, where the system gives them unasked, 2)."""
    pr = ctx.problems
    args = ["--threads", str(RSS_THREADS), "--calls", str(RSS_CALLS), "--hold-ms", "300"]
    plain = untraced(ctx, "rt_rss", args)
    trace = fresh(ctx.path("rss.bin"))
    p = run_target(ctx, "rt_rss", args, traced=True, output=trace,
                   env={"CUHOOK_BUFFER_KB": str(RSS_RING_KB)})
    pr.check(p.returncode == plain.returncode == 0, f"rt_rss traced: {describe_status(p.returncode)}"
             f"\n--- stderr\n{tail(p.stderr)}")
    traced_ok(ctx, "rt_rss", p)
    got, base = kv(p.stdout), kv(plain.stdout)
    grew = int(got["rss_during"]) - int(got["rss_before"])
    grew_plain = int(base["rss_during"]) - int(base["rss_before"])
    limit = max(grew_plain, 0) + RSS_THREADS * 4096
    print(f"{RSS_THREADS} threads x {RSS_CALLS} calls, {RSS_RING_KB // 1024} MiB rings: resident memory "
          f"grew by {grew} KiB while they lived ({grew_plain} KiB untraced); limit {limit} KiB, "
          f"rings populated up front: {RSS_THREADS * RSS_RING_KB} KiB")
    pr.check(grew <= limit, f"resident memory grew by {grew} KiB with {RSS_THREADS} threads that made "
                            f"{RSS_CALLS} calls each: more than {limit} KiB (rings populated up front?)")
    rep = report_json(ctx, trace)
    check_trace_health(rep, pr)
    calls = calls_by_name(rep).get("cuFakeInner", 0)
    pr.check(calls == int(got["calls"]), f"{calls} cuFakeInner calls traced, the program made {got['calls']}")


# ---- 11. the agent's list of its own threads -------------------------------------------------

def test_own_threads(ctx):
    """The agent lists its own threads by id (cuhook_agent_threads) for the injector, which
    leaves them running and stops every other thread: after the start, exactly its writer and its
    kernel-names thread; in a
    fork child, none of the parent's (the child does not have them), or, with follow=1, the
    child's own new writer; after cuhook_agent_stop(), none."""
    pr = ctx.problems
    for follow, want_child in (("0", "0 0"), ("1", "1 1")):
        trace = fresh(ctx.path(f"own-{follow}.bin"))
        p = run_target(ctx, "rt_ownthreads", [], traced=True, output=trace, env={"CUHOOK_FOLLOW": follow})
        for f in os.listdir(ctx.workdir):
            if f.startswith(f"own-{follow}.") and f.endswith(".bin"):
                os.unlink(ctx.path(f))  # the child's trace (follow=1)
        lines = dict(l.split(None, 1) for l in p.stdout.splitlines() if " " in l)
        what = f"follow={follow}"
        if not pr.check(p.returncode == 0, f"{what}: rt_ownthreads: {describe_status(p.returncode)}\n"
                                           f"{tail(p.stdout)}\n{tail(p.stderr)}"):
            continue
        pr.check(lines.get("started") == "2" and lines.get("started_writers") == "1" and
                 lines.get("started_names") == "1",
                 f"{what}: after the start {lines.get('started')} ids listed, {lines.get('started_writers')} "
                 f"of them the process's writer, {lines.get('started_names')} its names thread; expected "
                 "those two alone")
        pr.check(lines.get("child") == want_child,
                 f"{what}: a fork child's list: {lines.get('child')!r} (listed, writers of the child); "
                 f"expected {want_child!r}")
        pr.check(lines.get("stopped") == "0", f"{what}: {lines.get('stopped')} ids listed after the stop")
        print(f"{what}: started {lines.get('started')} (writers {lines.get('started_writers')}), "
              f"fork child {lines.get('child')}, after stop {lines.get('stopped')}")


# ---- 12. a tracer whose name begins like the injector's -----------------------------------------

def test_tracer_name(ctx):
    """The agent's constructor leaves the start to the cuhook injector when that is its tracer,
    known by the injector's name, exactly "cuhook". A program that traces the process and whose
    name only begins so (this script, renamed cuhook_app, seizes rt_loop before it loads the
    agent) is not the injector: the agent starts from its CUHOOK_* variables, as under any other
    tracer, and records every call."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_NAME, PR_GET_NAME, PTRACE_SEIZE = 15, 16, 0x4206
    pr = ctx.problems
    iters = 2000
    trace = fresh(ctx.path("tracer-name.bin"))
    cmd = [ctx.exe("rt_loop"), "--agent", ctx.agent, "--wait-tracer", "1", "--iters", str(iters), ctx.lib]
    proc = subprocess.Popen(cmd, env=clean_env({"CUHOOK_OUTPUT": trace}), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    name = ctypes.create_string_buffer(16)
    libc.prctl(PR_GET_NAME, name)
    libc.prctl(PR_SET_NAME, b"cuhook_app")  # the agent reads it when it loads: kept till the end
    try:
        seized = libc.ptrace(PTRACE_SEIZE, proc.pid, None, None) == 0
        err = ctypes.get_errno()
        out, errout = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise Fatal("rt_loop under a tracer named cuhook_app did not finish")
    finally:
        libc.prctl(PR_SET_NAME, name)
    if not seized:
        print(f"note: cannot trace rt_loop here ({os.strerror(err)}): not run")
        return
    pr.check(proc.returncode == 0, f"rt_loop under a tracer: {describe_status(proc.returncode)}\n{tail(errout)}")
    if not pr.check(os.path.exists(trace), "no trace: the agent took a tracer named cuhook_app for the "
                                           "cuhook injector and left the start to it"):
        return
    rep = report_json(ctx, trace)
    calls = calls_by_name(rep).get("cuFakeInner", 0)
    pr.check(calls == iters, f"{calls} calls traced under a tracer named cuhook_app, {iters} made")
    print(f"under a tracer named cuhook_app: {calls} of {iters} calls traced")


# ---- set-user-ID / set-group-ID programs ---------------------------------------------------------

SKIP = 77
CALLER = 65533   # an unprivileged user of no group, not nobody
PRIVILEGED_REFUSAL = ("cuhook: the process runs with other privileges than its starter's (set-user-ID, "
                      "set-group-ID or file capabilities): no tracing from its environment; not tracing")


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def suid_capable_dir(ctx):
    """A directory for set-user-ID copies: on a file system mounted without nosuid, on a path
    every user can search. None if there is none."""
    for d in (ctx.workdir, "/var/tmp", "/tmp"):
        opts = subprocess.run(["findmnt", "-n", "-o", "OPTIONS", "-T", d], capture_output=True, text=True)
        if opts.returncode == 0 and "nosuid" not in opts.stdout.split(",") and readable_by_all(d):
            return d
    return None


def as_caller(cmd, env, cwd):
    """cmd run as uid/gid CALLER with no supplementary groups (setpriv)."""
    return subprocess.run(["setpriv", f"--reuid={CALLER}", f"--regid={CALLER}", "--clear-groups"] + cmd,
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)


def test_setuid(ctx):
    """A program that runs with more privileges than its caller (set-user-ID or set-group-ID)
    loads the agent in constructor mode, and the caller points CUHOOK_OUTPUT at a file only the
    program's privileges may write (as a set-user-ID root program could write root's files).
    The agent must take no option from that environment and trace nothing: the file stays as it
    was and no trace appears anywhere the program could write. Needs root (to make the copies
    and switch users) and a file system that honours set-user-ID bits; skipped otherwise."""
    pr = ctx.problems
    if os.geteuid() != 0:
        skip("needs root to make set-user-ID copies owned by another user and to run them as a third")
    if not shutil.which("setpriv") or not shutil.which("findmnt"):
        skip("setpriv and findmnt (util-linux) are needed")
    base = suid_capable_dir(ctx)
    if not base:
        skip("no directory searchable by everyone on a file system mounted without nosuid")
    d = tempfile.mkdtemp(prefix="cuhook-setuid-", dir=base)
    try:
        os.chmod(d, 0o755)
        for f in (ctx.exe("rt_loop"), ctx.agent, ctx.lib, shutil.which("id")):
            shutil.copy(f, d)
            os.chmod(os.path.join(d, os.path.basename(f)), 0o755)
        agent, lib = os.path.join(d, os.path.basename(ctx.agent)), os.path.join(d, os.path.basename(ctx.lib))
        cwd = os.path.join(d, "cwd")  # where a trace.bin by default would go: writable by all
        os.mkdir(cwd)
        os.chmod(cwd, 0o1777)
        env = clean_env()
        env.pop("LD_LIBRARY_PATH", None)

        # ids: (owner uid, owner gid, mode bits) of the privileged copy; the file its privileges
        # may write and the caller's may not
        kinds = {"set-user-ID": (65534, 0, 0o4755, 65534, 0, 0o600),
                 "set-group-ID": (0, 65534, 0o2755, 0, 65534, 0o660)}
        args = ["--iters", "2000", "--exit", "42"]
        plain = as_caller([os.path.join(d, "rt_loop")] + args + [lib], env, cwd)
        if plain.returncode != 42:
            raise Fatal(f"rt_loop as uid {CALLER}: {describe_status(plain.returncode)}\n{tail(plain.stderr)}")

        # control: the plain copy, run by the caller, is traced (the agent loads and works there)
        control = os.path.join(cwd, "control.bin")
        p = as_caller([os.path.join(d, "rt_loop"), "--agent", agent] + args + [lib],
                      dict(env, CUHOOK_OUTPUT=control), cwd)
        same_behaviour(ctx, "control (no privileges gained)", plain, p)
        if pr.check(os.path.exists(control), f"control: no trace written; stderr {p.stderr.splitlines()!r}"):
            pr.check(calls_by_name(report_json(ctx, control)).get("cuFakeInner") == 2000,
                     "control: 2000 calls expected in its trace")
            os.unlink(control)

        for what, (uid, gid, mode, fuid, fgid, fmode) in kinds.items():
            exe = os.path.join(d, "rt_loop-" + what)
            shutil.copy(ctx.exe("rt_loop"), exe)
            os.chown(exe, uid, gid)
            os.chmod(exe, mode)  # after chown, which clears the bits
            idexe = os.path.join(d, "id-" + what)
            shutil.copy(shutil.which("id"), idexe)
            os.chown(idexe, uid, gid)
            os.chmod(idexe, mode)
            ids = as_caller([idexe, "-u" if uid else "-g"], env, cwd).stdout.strip()
            if ids != "65534":
                skip(f"a {what} program does not get its owner's id here (id says {ids!r}): no_new_privs?")

            victim = os.path.join(d, "victim-" + what)
            with open(victim, "w") as f:
                f.write("what only the privileged program may write\n")
            os.chown(victim, fuid, fgid)
            os.chmod(victim, fmode)
            for force in ("0", "1"):
                e = dict(env, CUHOOK_OUTPUT=victim, CUHOOK_FORCE=force, CUHOOK_VERBOSE="1")
                p = as_caller([exe, "--agent", agent] + args + [lib], e, cwd)
                label = f"{what} copy, CUHOOK_FORCE={force}"
                print(f"{label}: {describe_status(p.returncode)}, stderr {p.stderr.splitlines()!r}")
                same_behaviour(ctx, label, plain, p)
                pr.check(p.stderr.splitlines() == [PRIVILEGED_REFUSAL],
                         f"{label}: stderr should be exactly {PRIVILEGED_REFUSAL!r}, got {p.stderr.splitlines()!r}")
                with open(victim, "rb") as f:
                    pr.check(f.read() == b"what only the privileged program may write\n",
                             f"{label}: the file CUHOOK_OUTPUT named was changed")
                st = os.stat(victim)
                pr.check((st.st_uid, st.st_gid, st.st_mode & 0o7777) == (fuid, fgid, fmode),
                         f"{label}: the file CUHOOK_OUTPUT named changed owner or mode")
                pr.check(os.listdir(cwd) == [], f"{label}: files appeared in the working directory: "
                         f"{os.listdir(cwd)}")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("test", help="test_TEST below (tests/robust/meson.build lists them)")
    ap.add_argument("--agent", required=True)
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--workdir")
    a = ap.parse_args()
    for path, what in ((a.agent, "the agent libcuhook.so"), (a.cuhook, "the cuhook CLI"),
                       (a.lib, "the stand-in libcuda")):
        need_file(path, what)
    a.workdir = work_directory(a.workdir, f"cuhook-robust-{a.test}-")
    ctx = Ctx(a)
    case_function(globals(), "test_", a.test)(ctx)
    ctx.problems.exit()


if __name__ == "__main__":
    run_main(main)
