#!/usr/bin/env python3
"""Tests of `cuhook run` and `cuhook attach` against the dummy agent (tests/inject/dummy_agent.c)
and the test target (tests/inject/inj_target.c). Each case is a function case_NAME; meson runs
one process per case (--case NAME), or all of them without --case.

The dummy agent writes "start ... others_stopped=1 ..." / "tick" / "stop" lines into the trace
file it is given, which is what these tests look at; the checks of real traces are the engine's
tests' business."""
import argparse
import os
import pty
import re
import signal
import subprocess
import sys
import tempfile
import time

A = None  # the parsed arguments
TMP = None


class Fail(Exception):
    pass


class Skip(Exception):
    pass


def check(cond, what, detail=""):
    if not cond:
        raise Fail(what + (": " + detail if detail else ""))


class Target:
    """inj_target MODE ARGS, with stdin/stdout pipes; waits for its "ready" line."""

    def __init__(self, *args, exe=None, stdin=subprocess.PIPE, env=None):
        self.p = subprocess.Popen([exe or A.target] + [str(a) for a in args], stdin=stdin,
                                  stdout=subprocess.PIPE, text=True, env=env)
        line = self.p.stdout.readline()
        check(line.startswith("ready"), "target did not get ready", repr(line))
        self.pid = self.p.pid

    def finish(self, line="quit\n", timeout=30):
        try:
            out, _ = self.p.communicate(line, timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            raise Fail("target did not finish")
        return out

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def cuhook(*args, timeout=60, **kw):
    return subprocess.run([A.cuhook] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, **kw)


def attach(pid, *extra, out=None, timeout=60):
    out = out or os.path.join(TMP, "trace.txt")
    return cuhook("attach", "--agent", A.agent, "-o", out, *extra, pid, timeout=timeout)


def trace_lines(path=None, prepare=False):
    """The dummy agent's lines, without its ticks (and its prepare lines unless asked for)."""
    path = path or os.path.join(TMP, "trace.txt")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [l.rstrip("\n") for l in f
                if not l.startswith("tick") and (prepare or not l.startswith("prepare"))]


def parse_loop(out):
    m = re.search(r"rounds (\d+) mismatches (\d+) checksum ([0-9a-f]+)", out)
    check(m is not None, "no checksum line from the target", repr(out))
    return int(m.group(1)), int(m.group(2)), m.group(3)


_baseline = {}


def baseline(threads):
    """The loop checksum of an untouched run with that many threads."""
    if threads not in _baseline:
        t = Target("loop", threads)
        _baseline[threads] = parse_loop(t.finish())[2]
    return _baseline[threads]


def expect_fail(r, pattern):
    check(r.returncode != 0, "cuhook should have failed", r.stderr)
    check(re.search(pattern, r.stderr, re.I) is not None, "message should match %r" % pattern, r.stderr)


# ---- run ---------------------------------------------------------------------------------------

def case_run_exit_code():
    r = cuhook("run", "--agent", A.agent, "-o", os.path.join(TMP, "t"), "--", A.target, "exit", 7)
    check(r.returncode == 7, "exit 7 expected", "%d %s" % (r.returncode, r.stderr))
    r = cuhook("run", "--agent", A.agent, "-o", os.path.join(TMP, "t"), "--", A.target, "kill", 15)
    # cuhook dies of the same signal: -15 for Python, 143 for a shell
    check(r.returncode in (-15, 143), "death by SIGTERM expected", "%d %s" % (r.returncode, r.stderr))
    r = subprocess.run(["sh", "-c", '"$0" run --agent "$1" -o "$2" -- "$3" kill 15; echo "rc=$?"',
                        A.cuhook, A.agent, os.path.join(TMP, "t"), A.target], capture_output=True, text=True)
    check("rc=143" in r.stdout, "a shell should see 143", r.stdout + r.stderr)


def case_run_agent_started():
    out = os.path.join(TMP, "run.txt")
    r = cuhook("run", "--agent", A.agent, "-o", out, "--funcs", "cuLaunch*,cuMem*", "--opt", "ticker=0",
               "--count", "cuCtxGetDevice*", "--", A.target, "echo", input="hello\nworld\n")
    check(r.returncode == 0, "run failed", r.stderr)
    check(r.stdout == "hello\nworld\n", "stdin/stdout must pass through untouched", repr(r.stdout))
    lines = trace_lines(out)
    check(len(lines) == 1 and lines[0].startswith("start"), "one start line expected", repr(lines))
    check("flags=1 " in lines[0], "started with CUHOOK_START_THREADS_STOPPED", lines[0])
    check("others_stopped=1" in lines[0], "all other threads stopped during start", lines[0])
    check("options=output=%s;funcs=cuLaunch*,cuMem*;count=cuCtxGetDevice*;ticker=0" % out in lines[0],
          "options passed", lines[0])
    # --record-all: an empty count list (the agent's default list is then not used); no --count:
    # no count key, the agent's default applies
    for k, (extra, want) in enumerate(((["--record-all"], ";count=;ticker=0"), ([], ";ticker=0"))):
        out = os.path.join(TMP, "run%d.txt" % k)
        r = cuhook("run", "--agent", A.agent, "-o", out, "--opt", "ticker=0", *extra, "--", A.target, "exit", 0)
        check(r.returncode == 0, "run %s failed" % extra, r.stderr)
        lines = trace_lines(out)
        check(len(lines) == 1 and lines[0].endswith("options=output=%s%s" % (out, want)),
              "options passed with %s" % extra, repr(lines))


def case_run_relative_output():
    # the output path is made absolute against cuhook's directory, not the program's
    sub = os.path.join(TMP, "rel")
    os.makedirs(sub, exist_ok=True)
    r = cuhook("run", "--agent", A.agent, "-o", "rel.txt", "--opt", "ticker=0", "--", "sh", "-c",
               "cd / && exec \"$0\" exit 0", A.target, cwd=sub)
    check(r.returncode == 0, "run failed", r.stderr)
    check(os.path.exists(os.path.join(sub, "rel.txt")), "trace file in cuhook's working directory")


def case_run_signal_forward():
    p = subprocess.Popen([A.cuhook, "run", "--agent", A.agent, "-o", os.path.join(TMP, "t"), "--",
                          A.target, "sigint"], stdout=subprocess.PIPE, text=True)
    check(p.stdout.readline().startswith("ready"), "target ready")
    p.send_signal(signal.SIGINT)  # from a process (SI_USER): cuhook passes it on
    out, _ = p.communicate(timeout=10)
    check("sigint 1" in out, "the program gets exactly one SIGINT", out)
    check(p.returncode == 3, "exit status of the program", str(p.returncode))
    # SIGTERM to cuhook: the program dies of it, cuhook too
    p = subprocess.Popen([A.cuhook, "run", "--agent", A.agent, "-o", os.path.join(TMP, "t"), "--",
                          A.target, "sleep", "5000"], stdout=subprocess.PIPE, text=True)
    check(p.stdout.readline().startswith("ready"), "target ready")
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=10)
    check(p.returncode == -15, "killed by the forwarded SIGTERM", str(p.returncode))


def case_run_ctrl_c_terminal():
    # Ctrl-C on a terminal reaches the whole foreground group: cuhook must not add a second one
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(A.cuhook, [A.cuhook, "run", "--agent", A.agent, "-o", os.path.join(TMP, "t"), "--",
                            A.target, "sigint"])
    buf = b""
    deadline = time.time() + 10
    while b"ready" not in buf and time.time() < deadline:
        buf += os.read(fd, 1024)
    os.write(fd, b"\x03")
    while time.time() < deadline:
        try:
            chunk = os.read(fd, 1024)
        except OSError:
            break
        if not chunk:
            break
        buf += chunk
    _, st = os.waitpid(pid, 0)
    text = buf.decode(errors="replace")
    check("sigint 1" in text, "one SIGINT from the terminal", text)
    check(os.waitstatus_to_exitcode(st) == 3, "exit status 3", str(st))


def case_run_not_found():
    r = cuhook("run", "--agent", A.agent, "--", "/nonexistent/prog")
    check(r.returncode == 127, "127 for a program that does not exist", "%d %s" % (r.returncode, r.stderr))


def case_run_static():
    r = cuhook("run", "--agent", A.agent, "--", A.static_target, "exit", 0)
    check(r.returncode == 125, "125 when the agent cannot go in", "%d" % r.returncode)
    expect_fail(r, "statically linked")


def case_run_bad_pattern():
    # a function pattern the agent cannot use is refused before the program runs (it used to
    # be skipped, which made the filter match every function)
    need_real("fakecuda")
    out = os.path.join(TMP, "bad.bin")
    for opt in ("--funcs", "--count"):
        r = cuhook("run", opt, "cu*," + "a" * 300, "--agent", A.real_agent, "-o", out, "--",
                   A.follow_target, "calls", A.fakecuda, "cuFakeConstA", 5)
        check(r.returncode == 125, opt + ": 125 when the agent refuses its options", "%d %s" % (r.returncode, r.stderr))
        expect_fail(r, "longer than 255 characters")
        check("role calls" not in r.stdout, opt + ": the program did not run", r.stdout)


# ---- run --follow --------------------------------------------------------------------------------

def report_calls(path):
    """(pid, {function: calls}, events, has END) of a trace, through cuhook report --format json."""
    import json
    r = cuhook("report", "--format", "json", path)
    check(r.returncode == 0, "cuhook report %s failed" % path, r.stderr)
    rep = json.loads(r.stdout)
    calls = {f["name"]: f["calls"] for f in rep.get("functions", []) if f.get("calls")}
    return rep["pid"], calls, rep.get("events"), "truncated" not in r.stderr


def follow_traces(d):
    """{file name: (pid, calls, events, closed)} for every trace file in d."""
    return {f: report_calls(os.path.join(d, f)) for f in sorted(os.listdir(d)) if ".bin" in f}


def roles(out):
    """{role: [pids]} from inj_follow's "pid P role R" lines."""
    got = {}
    for m in re.finditer(r"^pid (\d+) role (\w+)$", out, re.M):
        got.setdefault(m.group(2), []).append(int(m.group(1)))
    return got


def follow_run(*prog, rc=0):
    d = os.path.join(TMP, "follow")
    os.makedirs(d, exist_ok=True)
    r = cuhook("run", "--follow", "--agent", A.real_agent, "-o", os.path.join(d, "t.bin"), "--",
               A.follow_target, *prog)
    check(r.returncode == rc, "exit status %d expected" % rc, "%d %s" % (r.returncode, r.stderr))
    return d, r


def case_follow_fork():
    # a child forked without exec traces into a file of its own (the agent's follow=1); the
    # parent's file holds the parent's calls only; the program's exit status is cuhook's
    follow_parent_child("fork", {"cuFakeConstB": 50, "cuFakeConstC": 50}, "its own calls, both threads")


def follow_parent_child(mode, child_calls, what):
    """inj_follow MODE LIB 100 50 5 under --follow: one closed trace per process, the parent's
    with its 200 cuFakeConstA calls, the child's with child_calls."""
    need_real("follow_target", "fakecuda")
    d, r = follow_run(mode, A.fakecuda, 100, 50, 5, rc=5)
    ro = roles(r.stdout)
    parent, child = ro["parent"][0], ro["child"][0]
    tr = follow_traces(d)
    check(sorted(tr) == sorted(["t.%d.bin" % parent, "t.%d.bin" % child]), "one trace per process",
          repr(sorted(tr)))
    check(tr["t.%d.bin" % parent] == (parent, {"cuFakeConstA": 200}, 400, True),
          "the parent's trace: its own 200 calls, closed", repr(tr["t.%d.bin" % parent]))
    check(tr["t.%d.bin" % child] == (child, child_calls, 2 * sum(child_calls.values()), True),
          "the child's trace: " + what + ", closed", repr(tr["t.%d.bin" % child]))


def case_follow_fork_count():
    # --count across fork: the child inherits the forking thread's counters (cuFakeConstA was
    # counted 100 times before the fork) and must start its own file from them, not report them
    need_real("follow_target", "fakecuda")
    read_trace = engine_tracefile().read_trace
    d = os.path.join(TMP, "follow")
    os.makedirs(d, exist_ok=True)
    r = cuhook("run", "--follow", "--count", "cuFakeConstA,cuFakeConstB", "--agent", A.real_agent,
               "-o", os.path.join(d, "t.bin"), "--", A.follow_target, "fork", A.fakecuda, 100, 50, 0)
    check(r.returncode == 0, "exit status 0 expected", "%d %s" % (r.returncode, r.stderr))
    ro = roles(r.stdout)
    parent, child = ro["parent"][0], ro["child"][0]
    tp = read_trace(os.path.join(d, "t.%d.bin" % parent))
    tc = read_trace(os.path.join(d, "t.%d.bin" % child))
    check(tp.has_end and tc.has_end, "both traces closed")
    check(tp.counted == {"cuFakeConstA": 200} and not tp.entries.get("cuFakeConstA"),
          "the parent's trace: 200 counted cuFakeConstA", "%r %r" % (tp.counted, tp.entries))
    check(tc.counted == {"cuFakeConstB": 50}, "the child's trace: its own 50 counted cuFakeConstB only",
          repr(tc.counted))
    check(tc.entries.get("cuFakeConstC") == 50 and not tc.entries.get("cuFakeConstB"),
          "the child's cuFakeConstC recorded (50), cuFakeConstB not", repr(tc.entries))


def case_follow_quit():
    # processes that end with _exit() (os._exit): no destructor runs, the agent's _exit hook
    # closes each trace with every call and the END block; the vfork child of a failed
    # posix_spawn also calls _exit, in the parent's memory, and must leave the parent's trace
    # alone (the parent's calls after it are in the parent's file)
    follow_parent_child("quit", {"cuFakeConstB": 50}, "its 50 calls before _exit")


def engine_tracefile():
    """tests/engine/tracefile.py: a second reader of trace.bin."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "engine"))
    import tracefile
    return tracefile


def case_follow_exec():
    # fork + exec and posix_spawn (vfork) of another traced program: each new program gets the
    # agent at its entry point; the fork child's calls before its exec stay in FILE.PID-1
    need_real("follow_target", "fakecuda")
    d, r = follow_run("exec", A.fakecuda, 100, 30, A.follow_target, "calls", A.fakecuda, "cuFakeConstB", 40)
    ro = roles(r.stdout)
    parent = ro["execparent"][0]
    kids = ro["calls"]
    check(len(kids) == 2, "two exec'd children", r.stdout)
    tr = follow_traces(d)
    forked = [k for k in kids if os.path.exists(os.path.join(d, "t.%d-1.bin" % k))]
    check(len(forked) == 1, "the fork child's earlier trace set aside", repr(sorted(tr)))
    want = {"t.%d.bin" % parent: (parent, {"cuFakeConstA": 100}),
            "t.%d-1.bin" % forked[0]: (forked[0], {"cuFakeConstC": 30})}
    for k in kids:
        want["t.%d.bin" % k] = (k, {"cuFakeConstB": 40})
    check(sorted(tr) == sorted(want), "one trace per program run", "%r vs %r" % (sorted(tr), sorted(want)))
    for f, (pid, calls) in want.items():
        got = tr[f]
        check(got[0] == pid and got[1] == calls and got[2] == 2 * sum(calls.values()),
              "%s: exact calls" % f, repr(got))
        check(got[3] or f.endswith("-1.bin"), "%s closed" % f, repr(got))


def case_follow_signals():
    # exit codes and signals as without --follow (dummy agent: no agent-side following needed)
    out = os.path.join(TMP, "t")
    r = cuhook("run", "--follow", "--agent", A.agent, "-o", out, "--", A.target, "exit", 7)
    check(r.returncode == 7, "exit 7 expected", "%d %s" % (r.returncode, r.stderr))
    r = cuhook("run", "--follow", "--agent", A.agent, "-o", out, "--", A.target, "kill", 15)
    check(r.returncode in (-15, 143), "death by SIGTERM expected", "%d %s" % (r.returncode, r.stderr))
    p = subprocess.Popen([A.cuhook, "run", "--follow", "--agent", A.agent, "-o", out, "--",
                          A.target, "sigint"], stdout=subprocess.PIPE, text=True)
    check(p.stdout.readline().startswith("ready"), "target ready")
    p.send_signal(signal.SIGINT)
    o, _ = p.communicate(timeout=10)
    check("sigint 1" in o and p.returncode == 3, "one SIGINT passed on, exit 3", "%s %d" % (o, p.returncode))
    # a group-stop (SIGSTOP) holds the program until SIGCONT, as without a tracer
    p = subprocess.Popen([A.cuhook, "run", "--follow", "--agent", A.agent, "-o", out, "--",
                          A.target, "loop", "2"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    check(line.startswith("ready"), "target ready", line)
    pid = int(line.split()[1])
    os.kill(pid, signal.SIGSTOP)
    time.sleep(0.3)

    def state(tid):
        st = open("/proc/%d/task/%d/stat" % (pid, tid)).read()
        return st[st.rindex(")") + 2]

    tids = [int(t) for t in os.listdir("/proc/%d/task" % pid)]
    states = [state(t) for t in tids]
    check(all(s in "tT" for s in states), "every thread stopped by SIGSTOP", repr(states))
    os.kill(pid, signal.SIGCONT)
    time.sleep(0.3)
    states = [state(t) for t in tids]
    check(not all(s in "tT" for s in states), "running again after SIGCONT", repr(states))
    o, _ = p.communicate("quit\n", timeout=20)
    _, mism, _ = parse_loop(o)
    check(p.returncode == 0 and mism == 0, "program unharmed", o)
    # the program's exit status, but only once its descendants have ended too
    t0 = time.time()
    r = cuhook("run", "--follow", "--agent", A.agent, "-o", out, "--", "sh", "-c",
               "(sleep 0.5; exit 0) & exit 4")
    check(r.returncode == 4 and time.time() - t0 >= 0.5, "exit 4 after the child's end",
          "%d after %.2f s %s" % (r.returncode, time.time() - t0, r.stderr))


def case_follow_no_flag():
    # without --follow, as before: one file, the parent's calls only
    need_real("follow_target", "fakecuda")
    d = os.path.join(TMP, "nofollow")
    os.makedirs(d)
    r = cuhook("run", "--agent", A.real_agent, "-o", os.path.join(d, "t.bin"), "--", A.follow_target, "fork",
               A.fakecuda, 100, 50)
    check(r.returncode == 0, "run failed", r.stderr)
    tr = follow_traces(d)
    check(list(tr) == ["t.bin"] and tr["t.bin"][1] == {"cuFakeConstA": 200}, "the parent's trace only", repr(tr))


# ---- attach ------------------------------------------------------------------------------------

def case_attach_loop():
    base = baseline(4)
    t = Target("loop", 4)
    try:
        r = attach(t.pid, "--duration", 0.3, "-v")
        check(r.returncode == 0, "attach failed", r.stderr)
        check("libcuda" in r.stderr, "says libcuda is not loaded", r.stderr)
        lines = trace_lines()
        check(len(lines) == 2 and lines[0].startswith("start") and lines[1].startswith("stop"),
              "start then stop", repr(lines))
        check("flags=1 others_stopped=1" in lines[0], "every other thread stopped during start", lines[0])
        ticks = open(os.path.join(TMP, "trace.txt")).read().count("tick")
        check(ticks >= 5, "the agent's thread ran while attached", str(ticks))
        m = re.search(r"attach: (\d+) threads stopped for ([\d.]+) ms", r.stderr)
        check(m is not None and int(m.group(1)) == 5, "verbose timings, 5 threads", r.stderr)
        _, mism, ck = parse_loop(t.finish())
        check(mism == 0, "no round of the target changed its result")
        check(ck == base, "checksum unchanged", "%s vs %s" % (ck, base))
    finally:
        t.kill()


def stopped_ms(stderr, what="attach"):
    m = re.search(what + r": (\d+) threads? stopped for ([\d.]+) ms \(stop ([\d.]+), (.*)\)", stderr)
    check(m is not None, "verbose timings of the %s" % what, stderr)
    return int(m.group(1)), float(m.group(2)), m.group(4)


def case_attach_prepare():
    # dlopen and prepare run while the other threads run; the stopped time printed by -v is the
    # final stop's alone (the dummy's prepare takes 300 ms: it must not be in it)
    base = baseline(4)
    t = Target("loop", 4)
    try:
        r = attach(t.pid, "--duration", 0.2, "-v", "--opt", "prepare_ms=300")
        check(r.returncode == 0, "attach failed", r.stderr)
        lines = trace_lines(prepare=True)
        check([l.split()[0] for l in lines] == ["prepare", "start", "stop"], "prepare, start, stop", repr(lines))
        check("others_stopped=0" in lines[0], "the other threads ran during prepare", lines[0])
        check("prepare_ms=300" in lines[0], "prepare got the options", lines[0])
        check("flags=1 others_stopped=1" in lines[1], "every other thread stopped during start", lines[1])
        n, ms, _ = stopped_ms(r.stderr)
        check(n == 5, "5 threads stopped at the end", r.stderr)
        m = re.search(r"before, while they ran: dlopen ([\d.]+), prepare ([\d.]+)", r.stderr)
        check(m is not None and float(m.group(2)) >= 300, "prepare's 300 ms told apart", r.stderr)
        check(ms < 150, "stopped time counts the final stop only: %.2f ms" % ms, r.stderr)
        # a second attach reuses the agent (no dlopen) and prepares it again beside the running
        # threads: the agent's start must not open its file or create its writer with every
        # thread stopped (a stopped thread may hold the locks that takes)
        r = attach(t.pid, "--duration", 0.05, "-v", "--opt", "prepare_ms=300")
        check(r.returncode == 0, "second attach failed", r.stderr)
        _, ms, _ = stopped_ms(r.stderr)
        m = re.search(r"before, while they ran: agent reused, prepare ([\d.]+)", r.stderr)
        check(m is not None and float(m.group(1)) >= 300, "reused, prepared beside the running threads", r.stderr)
        check(ms < 150, "the second stop does not count prepare either: %.2f ms" % ms, r.stderr)
        lines = trace_lines(prepare=True)
        check([l.split()[0] for l in lines] == ["prepare", "start", "stop", "prepare", "start", "stop"],
              "prepared again the second time", repr(lines))
        check("others_stopped=0" in lines[3] and "flags=1 others_stopped=1" in lines[4],
              "the second prepare beside the running threads, its start with them stopped", repr(lines))
        _, mism, ck = parse_loop(t.finish())
        check(mism == 0 and ck == base, "target unharmed", "%d %s %s" % (mism, ck, base))
    finally:
        t.kill()


def case_attach_noprepare():
    # an agent without cuhook_agent_prepare: dlopen still runs beside the other threads, start
    # does the rest with every thread stopped
    t = Target("loop", 3)
    try:
        r = cuhook("attach", "--agent", A.agent_noprep, "-o", os.path.join(TMP, "trace.txt"), "--duration",
                   0.1, "-v", t.pid)
        check(r.returncode == 0, "attach failed", r.stderr)
        lines = trace_lines(prepare=True)
        check([l.split()[0] for l in lines] == ["start", "stop"], "start, stop", repr(lines))
        check("flags=1 others_stopped=1" in lines[0], "every other thread stopped during start", lines[0])
        n, _, _ = stopped_ms(r.stderr)
        check(n == 4 and "before, while they ran: dlopen" in r.stderr, "dlopen outside the stop", r.stderr)
        _, mism, _ = parse_loop(t.finish())
        check(mism == 0, "target unharmed")
    finally:
        t.kill()


def case_attach_cycles():
    base = baseline(4)
    t = Target("loop", 4)
    try:
        for i in range(50):
            r = attach(t.pid, "--duration", 0.01)
            check(r.returncode == 0, "attach %d failed" % i, r.stderr)
        lines = trace_lines()
        check(sum(l.startswith("start") for l in lines) == 50 and sum(l.startswith("stop") for l in lines) == 50,
              "50 starts and 50 stops", "%d lines" % len(lines))
        check(t.p.poll() is None, "target still running")
        _, mism, ck = parse_loop(t.finish())
        check(mism == 0 and ck == base, "results unchanged after 50 cycles", "%d %s %s" % (mism, ck, base))
    finally:
        t.kill()


def read_case(threads):
    t = Target("read", threads)
    try:
        time.sleep(0.1)  # the main thread is inside read() now
        r = attach(t.pid, "--duration", 0.1, "-v")
        check(r.returncode == 0, "attach failed", r.stderr)
        if threads == 1:
            check("stopped in a system call" in r.stderr, "the only thread was in read()", r.stderr)
        time.sleep(0.1)
        out = t.finish("hello\n")
        check(out.strip() == "read: hello", "read() gets the data written after the detach", repr(out))
    finally:
        t.kill()


def case_attach_read_single():
    read_case(1)


def case_attach_read_mt():
    read_case(3)


def case_attach_nanosleep():
    t = Target("sleep", 1000)
    try:
        time.sleep(0.2)
        r = attach(t.pid, "--duration", 0.05, "-v")
        check(r.returncode == 0, "attach failed", r.stderr)
        check("stopped in a system call" in r.stderr, "the thread was in nanosleep()", r.stderr)
        out = t.finish("")
        m = re.search(r"slept ([\d.]+) ms", out)
        check(m is not None and "interrupted" not in out, "nanosleep not interrupted", out)
        ms = float(m.group(1))
        check(1000 <= ms < 1250, "nanosleep sleeps its full time, not more", "%.1f ms" % ms)
    finally:
        t.kill()


def case_attach_park(env=None):
    t = Target("park", env=env)
    try:
        r = attach(t.pid, "--duration", 0.2, "-v")
        check(r.returncode == 0, "attach failed", r.stderr)
        n, _, _ = stopped_ms(r.stderr)
        check(n == 2, "both threads stopped (main, and the parked one)", r.stderr)
        check("[1 moved]" in r.stderr, "one thread moved at start", r.stderr)
        out = t.finish("")
        check("moved 42" in out, "the parked thread ran on in the relocated code", out)
    finally:
        t.kill()


def case_attach_parkback():
    t = Target("parkback")
    try:
        r = attach(t.pid, "--duration", 0.2, "-v")
        check(r.returncode == 0, "attach failed", r.stderr)
        check(re.search(r"attach: .*\[0 moved\]", r.stderr) and re.search(r"detach: .*\[1 moved\]", r.stderr),
              "moved back at stop, not at start", r.stderr)
        out = t.finish("")
        check("moved 42" in out, "the thread ran on in the original code", out)
    finally:
        t.kill()


# ---- the agent's threads told apart from the program's by id, never by name -------------------

def named_threads(name):
    """The environment that makes inj_target's threads name themselves `name`."""
    return dict(os.environ, INJ_THREAD_NAME=name)


def renamed_copy(exe, name, libs=()):
    """A copy of exe called `name` in TMP (with the libraries it finds next to itself)."""
    import shutil
    for lib in libs:
        shutil.copy(lib, TMP)
    dst = os.path.join(TMP, name)
    shutil.copy(exe, dst)
    return dst


def case_attach_named_thread():
    # the same, the parked thread named like the agent's threads (cuhook-io): stopped and moved
    # like any other
    case_attach_park(named_threads("cuhook-io"))


def case_attach_cuhook_app():
    # a program called cuhook_app (every thread's name begins with "cuhook"): attached and
    # detached, every one of its threads stopped each time, the agent's own thread never
    base = baseline(3)
    exe = renamed_copy(A.target, "cuhook_app", [os.path.join(os.path.dirname(A.target), "libinj_work.so")])
    t = Target("loop", 3, exe=exe)
    try:
        r = attach(t.pid, "--duration", 0.3, "-v")
        check(r.returncode == 0, "attach failed", r.stderr)
        for what in ("attach", "detach"):
            n, _, _ = stopped_ms(r.stderr, what)
            check(n == 4, "%s: the 4 threads of cuhook_app stopped" % what, r.stderr)
        lines = trace_lines()
        check(len(lines) == 2 and "flags=1 others_stopped=1" in lines[0] and lines[1].startswith("stop"),
              "start with every other thread stopped, then stop", repr(lines))
        ticks = open(os.path.join(TMP, "trace.txt")).read().count("tick")
        check(ticks >= 5, "the agent's thread ran while attached", str(ticks))
        _, mism, ck = parse_loop(t.finish())
        check(mism == 0 and ck == base, "target unharmed", "%d %s %s" % (mism, ck, base))
    finally:
        t.kill()


def case_attach_leftover():
    # a cuhook killed while tracing leaves the agent started: a new attach says so, --stop ends it
    t = Target("loop", 2)
    try:
        p = subprocess.Popen([A.cuhook, "attach", "--agent", A.agent, "-o", os.path.join(TMP, "trace.txt"),
                              str(t.pid)], stderr=subprocess.PIPE, text=True)
        check("tracing process" in p.stderr.readline() + p.stderr.readline(), "attached")
        p.kill()
        p.wait()
        r = attach(t.pid, "--duration", 0.01)
        expect_fail(r, "already tracing")
        r = cuhook("attach", "--agent", A.agent, "--stop", t.pid)
        check(r.returncode == 0, "--stop failed", r.stderr)
        r = attach(t.pid, "--duration", 0.01)
        check(r.returncode == 0, "attach after --stop", r.stderr)
        _, mism, _ = parse_loop(t.finish())
        check(mism == 0, "target unharmed")
    finally:
        t.kill()


def case_attach_sigint():
    # Ctrl-C (SIGINT) to cuhook attach ends the window; the target goes on
    t = Target("loop", 2)
    try:
        p = subprocess.Popen([A.cuhook, "attach", "--agent", A.agent, "-o", os.path.join(TMP, "trace.txt"),
                              str(t.pid)], stderr=subprocess.PIPE, text=True)
        check("tracing process" in p.stderr.readline() + p.stderr.readline(), "attached")
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=10)
        check(p.returncode == 0, "clean detach on SIGINT", err)
        check([l.split()[0] for l in trace_lines()] == ["start", "stop"], "stopped", repr(trace_lines()))
        _, mism, _ = parse_loop(t.finish())
        check(mism == 0, "target unharmed")
    finally:
        t.kill()


def case_attach_target_exits():
    t = Target("loop", 2)
    try:
        p = subprocess.Popen([A.cuhook, "attach", "--agent", A.agent, "-o", os.path.join(TMP, "trace.txt"),
                              str(t.pid)], stderr=subprocess.PIPE, text=True)
        check("tracing process" in p.stderr.readline() + p.stderr.readline(), "attached")
        t.finish()
        _, err = p.communicate(timeout=10)
        check(p.returncode == 0 and "exited" in err, "cuhook notices the exit", err)
    finally:
        t.kill()


# ---- errors ------------------------------------------------------------------------------------

def case_err_no_such_pid():
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    r = attach(pid_max + 1)
    expect_fail(r, "no such process")
    r = cuhook("attach", "--agent", A.agent, "notapid")
    check(r.returncode == 2, "usage error")


def case_err_permission():
    if os.geteuid() != 0:
        print("skip: needs root to run cuhook as another user")
        return
    t = Target("loop", 1)
    try:
        r = subprocess.run([A.cuhook, "attach", "--agent", A.agent, "-o", "/tmp/never", "--duration", "0.1",
                            str(t.pid)], capture_output=True, text=True,
                           preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))
        if "cannot find the agent" in r.stderr or "not found" in r.stderr:
            print("skip: the build tree is not readable by uid 65534")
            return
        expect_fail(r, "permission denied.*(root|CAP_SYS_PTRACE)")
        _, mism, _ = parse_loop(t.finish())
        check(mism == 0, "target unharmed")
    finally:
        t.kill()


def case_err_traced():
    t = Target("traced")
    try:
        r = attach(t.pid, "--duration", 0.1)
        expect_fail(r, r"already traced by process \d+")
    finally:
        t.kill()


def case_err_static():
    t = Target("loop", 1, exe=A.static_target)
    try:
        r = attach(t.pid, "--duration", 0.1)
        expect_fail(r, "statically linked")
        _, mism, _ = parse_loop(t.finish())
        check(mism == 0, "target unharmed")
    finally:
        t.kill()


def case_err_seccomp():
    base = baseline(2)
    t = Target("seccomp", 2)
    try:
        r = attach(t.pid, "--duration", 0.1)
        expect_fail(r, "seccomp filter .* refuses openat")
        time.sleep(0.2)
        check(t.p.poll() is None, "target still running")
        _, mism, ck = parse_loop(t.finish())
        check(mism == 0 and ck == base, "target unharmed", "%d %s %s" % (mism, ck, base))
    finally:
        t.kill()


def case_err_loader_lock():
    base = baseline(2)
    t = Target("lockheld", A.slowctor, 2)
    try:
        t0 = time.time()
        r = attach(t.pid, "--duration", 0.1, "--call-timeout", 0.5)
        expect_fail(r, "did not return within 1.0 s.*lock")
        check(time.time() - t0 < 5, "gave up in time")
        time.sleep(0.2)
        check(t.p.poll() is None, "target still running")
        _, mism, ck = parse_loop(t.finish())
        check(mism == 0 and ck == base, "target unharmed", "%d %s %s" % (mism, ck, base))
    finally:
        t.kill()


def case_err_ignored_sigsegv():
    t = Target("ignsegv")
    try:
        expect_fail(attach(t.pid, "--duration", 0.1), "ignores SIGSEGV")
    finally:
        t.kill()


def case_err_stopped():
    t = Target("loop", 1)
    try:
        os.kill(t.pid, signal.SIGSTOP)
        time.sleep(0.1)
        expect_fail(attach(t.pid, "--duration", 0.1), "is stopped")
        os.kill(t.pid, signal.SIGCONT)
        _, mism, _ = parse_loop(t.finish())
        check(mism == 0, "target unharmed")
    finally:
        t.kill()


# ---- with the real agent (libcuhook.so) ----------------------------------------------------------

def need_real(*what):
    for w in ("real_agent",) + what:
        if not getattr(A, w):
            raise Skip("no --%s given" % w.replace("_", "-"))


def trace_end_events(path):
    """ENTRY + EXIT records per the END block of a trace.bin, None if absent."""
    return engine_tracefile().read_trace(path).end_events


def case_real_park(env=None):
    # a thread blocked in a system call inside the first bytes of a function the real agent
    # patches: moved into the relocated copy, and its read() completes there
    need_real("park_lib")
    t = Target("realpark", A.park_lib, env=env)
    out = os.path.join(TMP, "park.bin")
    try:
        p = subprocess.Popen([A.cuhook, "attach", "-v", "--agent", A.real_agent, "--opt", "lib=libinj_park.so*",
                              "--funcs", "cuInj*", "-o", out, str(t.pid)], stderr=subprocess.PIPE, text=True)
        err = ""
        while "tracing process" not in err:
            line = p.stderr.readline()
            check(line != "", "attach failed", err)
            err += line
        check(re.search(r"attach: .*\[1 moved\]", err) is not None, "the blocked thread was moved", err)
        t.p.stdin.write("go\n")
        t.p.stdin.flush()
        check(t.p.stdout.readline().strip() == "first 1 A", "the moved thread's read() got its byte")
        check(t.p.stdout.readline().strip() == "ready2", "second read")
        p.send_signal(signal.SIGINT)
        _, err2 = p.communicate(timeout=10)
        check(p.returncode == 0, "detach failed", err2)
        rest = t.finish("go\n")
        check("second 1 B" in rest and t.p.returncode == 0, "the traced read() completed after detach", rest)
        ev = trace_end_events(out)
        check(ev is not None and ev >= 1, "the trace was closed with events", str(ev))
    finally:
        t.kill()


def case_real_park_named():
    # the same, the blocked thread named cuhook-io: stopped and moved like any other (left
    # running, it returned from read() into the jump written over its instructions: SIGILL)
    case_real_park(named_threads("cuhook-io"))


def driver_run(iters, attach_fn=None, exe=None):
    """driver_user on the stand-in libcuda; attach_fn(pid) runs while it does. Its output."""
    p = subprocess.Popen([exe or A.driver_user, "--threads", "4", "--iters", str(iters), A.fakecuda],
                         stdout=subprocess.PIPE, text=True)
    if attach_fn:
        time.sleep(0.3)
        attach_fn(p.pid)
    out, _ = p.communicate(timeout=300)
    check(p.returncode == 0, "driver_user failed", out[-500:])
    return out


def driver_checksum(out):
    m = re.search(r"checksum (0x[0-9a-f]+)", out)
    check(m is not None, "no checksum from driver_user")
    return m.group(1)


def case_real_attach_driver():
    need_real("driver_user", "fakecuda")
    base = driver_run(300000)
    out = os.path.join(TMP, "drv.bin")
    res = {}

    def att(pid):
        res["r"] = cuhook("attach", "-v", "--agent", A.real_agent, "-o", out, "--duration", 0.3, pid)

    got = driver_run(300000, att)
    r = res["r"]
    check(r.returncode == 0, "attach failed", r.stderr)
    check(driver_checksum(got) == driver_checksum(base), "the program's results are unchanged by the attach")
    calls = int(re.search(r"^calls (\d+)", got, re.M).group(1))
    ev = trace_end_events(out)
    check(ev is not None and 0 < ev // 2 < calls, "events only from the window: %s of %d calls" % (ev, calls))
    print("  traced %d of %d calls; %s" % (ev // 2, calls, " | ".join(l for l in r.stderr.splitlines() if "stopped for" in l)))


def case_real_cuhook_app():
    # driver_user called cuhook_app, traced for a window by the real agent: its 5 threads
    # stopped at attach and at detach, the agent's writer left running (the detach waits for
    # it), the results unchanged, the trace closed with calls in it
    need_real("driver_user", "fakecuda")
    exe = renamed_copy(A.driver_user, "cuhook_app")
    base = driver_run(300000, exe=exe)
    out = os.path.join(TMP, "app.bin")
    res = {}

    def att(pid):
        res["r"] = cuhook("attach", "-v", "--agent", A.real_agent, "-o", out, "--duration", 0.3, pid)

    got = driver_run(300000, att, exe=exe)
    r = res["r"]
    check(r.returncode == 0, "attach failed", r.stderr)
    for what in ("attach", "detach"):
        n, _, _ = stopped_ms(r.stderr, what)
        check(n == 5, "%s: the 5 threads of cuhook_app stopped" % what, r.stderr)
    check(driver_checksum(got) == driver_checksum(base), "the program's results are unchanged by the attach")
    ev = trace_end_events(out)
    check(ev is not None and ev > 0, "the trace was closed with events", str(ev))


def case_real_attach_count():
    # three sessions in one process: recorded, counted (--count), recorded again; the functions
    # planned in the first session are classified again at each attach
    need_real("driver_user", "fakecuda")
    read_trace = engine_tracefile().read_trace
    base = driver_run(600000)
    outs = [os.path.join(TMP, "cnt%d.bin" % i) for i in range(3)]
    res = []
    counted = ("cuFakeConstA", "cuCtxGetCurrent")

    def att(pid):
        for i, out in enumerate(outs):
            extra = ("--count", ",".join(counted)) if i == 1 else ()
            res.append(cuhook("attach", "--agent", A.real_agent, "-o", out, "--duration", 0.2, *extra, pid))

    got = driver_run(600000, att)
    for r in res:
        check(r.returncode == 0, "attach failed", r.stderr)
    check(driver_checksum(got) == driver_checksum(base), "the program's results are unchanged")
    traces = [read_trace(o) for o in outs]
    for i, t in enumerate(traces):
        check(t.has_end, "trace %d closed" % i)
        for f in counted:
            if i == 1:
                check(t.entries.get(f, 0) == 0 and t.counted.get(f, 0) > 0,
                      "session 2 counts %s" % f, "%s entries, %s counted" % (t.entries.get(f), t.counted.get(f)))
            else:
                check(t.entries.get(f, 0) > 0 and f not in t.counted,
                      "session %d records %s" % (i + 1, f), "%s entries, %s counted" % (t.entries.get(f), t.counted.get(f)))
        check(t.entries.get("cuFakeConstB", 0) > 0, "cuFakeConstB recorded in session %d" % (i + 1))
    print("  counted in session 2: %s" % {f: traces[1].counted.get(f) for f in counted})


def case_real_attach_sigint_early():
    # Ctrl-C while cuhook attach is still injecting (threads stopped, remote calls under way):
    # the signal waits until the agent is in and started, then ends the window with a clean
    # detach (or, sent before cuhook blocked it, kills cuhook before it touched the process).
    # Sent at delays across the injection's ~15 ms; the program's results stay the same, and a
    # normal session afterwards records.
    need_real("driver_user", "fakecuda")
    iters = 1500000
    base = driver_run(iters)
    out = os.path.join(TMP, "early.bin")
    runs, last = [], {}

    def att(pid):
        for delay in (0, 0.001, 0.003, 0.006, 0.01, 0.015, 0.025, 0.05):
            p = subprocess.Popen([A.cuhook, "attach", "--agent", A.real_agent, "-o", out, str(pid)],
                                 stderr=subprocess.PIPE, text=True)
            time.sleep(delay)
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=30)
            runs.append((delay, p.returncode, err.strip().splitlines()[-1:] if err.strip() else []))
        last["r"] = cuhook("attach", "--agent", A.real_agent, "-o", out, "--duration", 0.2, pid)

    got = driver_run(iters, att)
    for delay, rc, err in runs:
        check(rc in (0, -signal.SIGINT), "SIGINT after %.3f s: a clean detach (0) or cuhook killed before "
              "it started (-2)" % delay, "%d %s" % (rc, err))
    check(any(rc == 0 for _, rc, _ in runs), "some SIGINT came during or after the injection", repr(runs))
    check(driver_checksum(got) == driver_checksum(base), "the program's results are unchanged")
    check(last["r"].returncode == 0, "a later attach works", last["r"].stderr)
    t = engine_tracefile().read_trace(out)
    check(t.has_end and sum(t.entries.values()) > 0, "the later session recorded and closed its trace",
          "%s entries, END %s" % (sum(t.entries.values()), t.has_end))
    print("  SIGINT delays and exits: %s" % [(d, rc) for d, rc, _ in runs])


def thread_states(pid):
    """{tid: state letter of /proc/PID/task/TID/stat} of every thread of pid."""
    got = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            st = open("/proc/%d/task/%s/stat" % (pid, tid)).read()
        except OSError:
            continue  # ended meanwhile
        got[int(tid)] = st[st.rindex(")") + 2]
    return got


def wait_states(pid, stopped, timeout=2.0):
    """Poll until every thread of pid is stopped (T, or t: traced), or none is; the states of the
    last look."""
    deadline = time.time() + timeout
    while True:
        st = thread_states(pid)
        if all((s in "tT") == stopped for s in st.values()) or time.time() > deadline:
            return st


def jobctl_attach(pid, out, delay, signals):
    """cuhook attach -v with the real agent counting inj_work (a loop target's library) for a
    10 ms window; `delay` s after its first stop (the checks passed), send the target each of
    `signals` (a signal, or a pause in seconds). (exit status, stderr)."""
    p = subprocess.Popen([A.cuhook, "attach", "-v", "--agent", A.real_agent, "--opt", "lib=libinj_work.so*",
                          "--funcs", "inj_work", "--count", "inj_work", "-o", out, "--duration", "0.01",
                          str(pid)], stderr=subprocess.PIPE, text=True)
    err = ""
    while "threads stopped in" not in err:
        line = p.stderr.readline()
        if not line:
            break
        err += line
    time.sleep(delay)
    for s in signals:
        if isinstance(s, float):
            time.sleep(s)
        else:
            os.kill(pid, s)
    _, rest = p.communicate(timeout=60)
    return p.returncode, err + rest


def jobctl_cycles(signals, want_stopped):
    """Job-control signals (signals(k) for try k) sent to a 4-thread loop target at 40 delays from
    0 to 30 ms after the first stop of an attach (through the loading and preparing, the start,
    the window and the detach: the remote calls are 1-10 ms of it): every
    attach exits 0 with its trace closed (END block), the program is left stopped exactly when
    the last signal was SIGSTOP (then runs on after SIGCONT), a next attach works (the agent was
    stopped), and the program's results are unchanged. Tries that fail are counted, the program
    recovered, and all of them reported at the end."""
    need_real()
    base = baseline(4)
    read_trace = engine_tracefile().read_trace
    t = Target("loop", 4)
    out = os.path.join(TMP, "jobctl.bin")
    fails = []
    tries = 40
    try:
        for k in range(tries):
            delay = 0.00075 * k
            if os.path.exists(out):
                os.unlink(out)
            rc, err = jobctl_attach(t.pid, out, delay, signals(k))
            st = wait_states(t.pid, want_stopped)
            stopped = sorted(s for s in st.values() if s in "tT")
            problems = []
            if rc != 0:
                problems.append("exit %d: %s" % (rc, err.strip().splitlines()[-1] if err.strip() else ""))
            if want_stopped and len(stopped) != len(st):
                problems.append("not stopped: %s" % "".join(sorted(st.values())))
            if not want_stopped and stopped:
                problems.append("left stopped: %s" % "".join(sorted(st.values())))
            try:
                closed = read_trace(out).has_end
            except Exception as e:  # no file, or not a trace
                closed = False
            if not closed:
                problems.append("trace without END")
            os.kill(t.pid, signal.SIGCONT)
            st = wait_states(t.pid, False)
            if any(s in "tT" for s in st.values()):
                problems.append("still stopped after SIGCONT")
            if problems:
                fails.append("%.1f ms: %s" % (delay * 1e3, "; ".join(problems)))
                # recover, so that the next tries count on their own
                cuhook("attach", "--agent", A.real_agent, "--stop", t.pid)
        r = cuhook("attach", "--agent", A.real_agent, "--opt", "lib=libinj_work.so*", "--funcs", "inj_work",
                   "-o", out, "--duration", 0.05, t.pid)
        check(not fails, "%d of %d tries failed" % (len(fails), tries), "\n  " + "\n  ".join(fails))
        check(r.returncode == 0, "an attach after them works", r.stderr)
        _, mism, ck = parse_loop(t.finish())
        check(mism == 0 and ck == base, "target unharmed", "%d %s %s" % (mism, ck, base))
    finally:
        t.kill()


def case_real_jobctl_cont():
    # SIGSTOP then SIGCONT (0, 0.5 or 1 ms apart) during an attach: the program runs on, as
    # without cuhook
    jobctl_cycles(lambda k: (signal.SIGSTOP, 0.0005 * (k % 3), signal.SIGCONT), want_stopped=False)


def case_real_jobctl_stopped():
    # SIGSTOP during an attach, left stopped through the end of the window: the detach works,
    # the trace is complete, the program stays stopped until SIGCONT
    jobctl_cycles(lambda k: (signal.SIGSTOP,), want_stopped=True)


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def lock_cycles(mode, what, cycles):
    """inj_target MODE 4 LIBCUDA: threads that take one of glibc's internal locks all the time
    (the agent's start must not need it). `cycles` attach/detach cycles with the real agent:
    each works, its -v stopped times (attach and detach) stay under 500 ms, it leaves no open
    file in the target, and the program's results hold."""
    need_real("fakecuda")
    read_trace = engine_tracefile().read_trace
    t = Target(mode, 4, A.fakecuda)
    out = os.path.join(TMP, "lock.bin")
    try:
        fds = fd_count(t.pid)
        worst = 0.0
        for i in range(cycles):
            r = cuhook("attach", "-v", "--agent", A.real_agent, "-o", out, "--duration", 0.02, t.pid)
            check(r.returncode == 0, "attach %d of %d failed" % (i + 1, cycles), r.stderr)
            for phase in ("attach", "detach"):
                _, ms, _ = stopped_ms(r.stderr, phase)
                check(ms < 500, "%s %d: threads stopped for %.1f ms" % (phase, i + 1, ms), r.stderr)
                worst = max(worst, ms)
            check(fd_count(t.pid) == fds, "attach %d: %d open files in the target, %d before" %
                  (i + 1, fd_count(t.pid), fds))
            check(read_trace(out).has_end, "attach %d: trace closed" % (i + 1))
        out_text = t.finish()
        m = re.search(r"%s (\d+) \w+ (\d+)" % what, out_text)
        check(m is not None and int(m.group(1)) > 0 and int(m.group(2)) == 0, "the program's results hold",
              out_text)
        print("  %d cycles, longest stop %.2f ms; %s" % (cycles, worst, out_text.strip()))
    finally:
        t.kill()


def case_real_lock_spawn():
    # threads creating and joining threads: a stopped one may hold glibc's thread-stack lock,
    # which pthread_create (the writer's start) takes
    lock_cycles("spawn", "spawned", 20)


def case_real_lock_phdr():
    # threads walking the loaded objects: a stopped one may hold the loader's lock, which
    # dl_iterate_phdr, dlsym and dlopen take
    lock_cycles("phdr", "walks", 20)


def case_real_prepare_api():
    # the agent's prepare/start split through its API (tests/inject/inj_prepare.c): a library
    # loaded between prepare and start makes the start refuse (EAGAIN) rather than miss it, and
    # a second preparation traces it; a preparation that is replaced, or ended by a stop without
    # a start, closes its file
    need_real("prepare_target", "fakecuda")
    read_trace = engine_tracefile().read_trace
    r = subprocess.run([A.prepare_target, A.real_agent, A.fakecuda, TMP], capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 0, "inj_prepare failed", r.stdout + r.stderr)
    m = re.search(r"^gap eagain (\d) active (\d) \((.*)\) start (-?\d+) wrong (\d+)$", r.stdout, re.M)
    check(m is not None, "gap line", r.stdout)
    check(m.group(1) == "1" and m.group(2) == "0", "start refused with EAGAIN, not tracing", m.group(0))
    check("loaded or unloaded since the preparation" in m.group(3), "the refusal says why", m.group(3))
    check(m.group(4) == "0" and m.group(5) == "0", "prepared again, started; results right", m.group(0))
    t = read_trace(os.path.join(TMP, "gap.bin"))
    check(t.has_end and t.entries == {"cuFakeConstA": 10}, "the library loaded in between is traced",
          "%s %s" % (t.has_end, t.entries))
    m = re.search(r"^discard fds (\d+) (\d+) (\d+) stop (-?\d+) active (\d)$", r.stdout, re.M)
    check(m is not None, "discard line", r.stdout)
    before, during, after = int(m.group(1)), int(m.group(2)), int(m.group(3))
    check(during == before + 1, "one preparation's file open (the replaced one closed)", m.group(0))
    check(after == before and m.group(4) == "0" and m.group(5) == "0",
          "a stop without a start closes the preparation's file", m.group(0))
    m = re.search(r"^again start (-?\d+) wrong (\d+)$", r.stdout, re.M)
    check(m is not None and m.group(1) == "0" and m.group(2) == "0", "a later prepare and start work", r.stdout)
    t = read_trace(os.path.join(TMP, "again.bin"))
    check(t.has_end and t.entries == {"cuFakeConstA": 5}, "and trace", "%s %s" % (t.has_end, t.entries))


def case_real_cycles():
    need_real("driver_user", "fakecuda")
    iters = 3000000
    base = driver_run(iters)
    fails = []

    def cycles(pid):
        for i in range(100):
            r = cuhook("attach", "--agent", A.real_agent, "-o", os.path.join(TMP, "c.bin"), "--duration", 0.01, pid)
            if r.returncode != 0:
                fails.append(r.stderr)
                break

    got = driver_run(iters, cycles)
    check(not fails, "an attach/detach cycle failed", fails[0] if fails else "")
    check(driver_checksum(got) == driver_checksum(base), "results unchanged after 100 cycles")


def main():
    global A, TMP
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--agent-noprep")
    ap.add_argument("--target", required=True)
    ap.add_argument("--static-target", required=True)
    ap.add_argument("--slowctor", required=True)
    ap.add_argument("--real-agent")
    ap.add_argument("--park-lib")
    ap.add_argument("--driver-user")
    ap.add_argument("--fakecuda")
    ap.add_argument("--follow-target")
    ap.add_argument("--prepare-target")
    ap.add_argument("--case", action="append")
    A = ap.parse_args()
    for k in ("cuhook", "agent", "agent_noprep", "target", "static_target", "slowctor", "real_agent", "park_lib",
              "driver_user", "fakecuda", "follow_target", "prepare_target"):
        if getattr(A, k):
            setattr(A, k, os.path.abspath(getattr(A, k)))
    names = A.case or sorted(n[5:] for n in globals() if n.startswith("case_"))
    passed = failed = skipped = 0
    for n in names:
        with tempfile.TemporaryDirectory(prefix="cuhook-inject-") as TMP:
            os.chmod(TMP, 0o777)
            t0 = time.time()
            try:
                globals()["case_" + n]()
                passed += 1
                print("ok   %s (%.2f s)" % (n, time.time() - t0), flush=True)
            except Skip as e:
                skipped += 1
                print("skip %s: %s" % (n, e), flush=True)
            except Exception as e:  # a failed check or anything unexpected
                failed += 1
                print("FAIL %s: %s: %s" % (n, type(e).__name__, e), flush=True)
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else (77 if skipped and not passed else 0)


if __name__ == "__main__":
    sys.exit(main())
