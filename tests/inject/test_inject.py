#!/usr/bin/env python3
"""Tests of `cuhook run` and `cuhook attach` against the dummy agent (tests/inject/dummy_agent.c)
and the test target (tests/inject/inj_target.c). Each case is a function case_NAME; meson runs
one process per case (--case NAME; tests/inject/meson.build lists them).

The dummy agent writes "start ... others_stopped=1 ..." / "tick" / "stop" lines into the trace
file it is given, which is what these tests look at; the checks of real traces are the engine's
tests' business."""
import argparse
import os
import pty
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

from cuhooktest import Fail, Skip, check, run_case
from cuhooktest import tracefile

A = None  # the parsed arguments
TMP = None


def as_user(uid):
    """For preexec_fn: the child runs as uid (gid the same, no groups)."""
    def become():
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    return become


class Target:
    """inj_target MODE ARGS, with stdin/stdout pipes; waits for its "ready" line."""

    def __init__(self, *args, exe=None, stdin=subprocess.PIPE, env=None, user=None):
        self.p = subprocess.Popen([exe or A.target] + [str(a) for a in args], stdin=stdin,
                                  stdout=subprocess.PIPE, text=True,
                                  env=dict(os.environ, **env) if env else None,
                                  preexec_fn=as_user(user) if user is not None else None)
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
    r = cuhook("run", "--agent", A.agent, "-o", os.path.join(TMP, "t1"), "--", A.target, "exit", 7)
    check(r.returncode == 7, "exit 7 expected", "%d %s" % (r.returncode, r.stderr))
    r = cuhook("run", "--agent", A.agent, "-o", os.path.join(TMP, "t2"), "--", A.target, "kill", 15)
    # cuhook dies of the same signal: -15 for Python, 143 for a shell
    check(r.returncode in (-15, 143), "death by SIGTERM expected", "%d %s" % (r.returncode, r.stderr))
    r = subprocess.run(["sh", "-c", '"$0" run --agent "$1" -o "$2" -- "$3" kill 15; echo "rc=$?"',
                        A.cuhook, A.agent, os.path.join(TMP, "t3"), A.target], capture_output=True, text=True)
    check("rc=143" in r.stdout, "a shell should see 143", r.stdout + r.stderr)


NO_TICKER = dict(os.environ, INJ_DUMMY_TICKER="0")  # the dummy agent's own knob (its environment)


def case_run_agent_started():
    out = os.path.join(TMP, "run.txt")
    r = cuhook("run", "--agent", A.agent, "-o", out, "--funcs", "cuLaunch*,cuMem*", "--opt", "flush_ms=20",
               "--count", "cuCtxGetDevice*", "--", A.target, "echo", input="hello\nworld\n", env=NO_TICKER)
    check(r.returncode == 0, "run failed", r.stderr)
    check(r.stdout == "hello\nworld\n", "stdin/stdout must pass through untouched", repr(r.stdout))
    lines = trace_lines(out)
    check(len(lines) == 1 and lines[0].startswith("start"), "one start line expected", repr(lines))
    check("flags=1 " in lines[0], "started with CUHOOK_START_THREADS_STOPPED", lines[0])
    check("others_stopped=1" in lines[0], "all other threads stopped during start", lines[0])
    check("options=output=%s;funcs=cuLaunch*,cuMem*;count=cuCtxGetDevice*;flush_ms=20" % out in lines[0],
          "options passed", lines[0])
    # --record-all: an empty count list (the agent's default list is then not used); no --count:
    # no count key, the agent's default applies
    for k, (extra, want) in enumerate(((["--record-all"], ";count=;flush_ms=20"), ([], ";flush_ms=20"))):
        out = os.path.join(TMP, "run%d.txt" % k)
        r = cuhook("run", "--agent", A.agent, "-o", out, "--opt", "flush_ms=20", *extra, "--", A.target, "exit", 0,
                   env=NO_TICKER)
        check(r.returncode == 0, "run %s failed" % extra, r.stderr)
        lines = trace_lines(out)
        check(len(lines) == 1 and lines[0].endswith("options=output=%s%s" % (out, want)),
              "options passed with %s" % extra, repr(lines))


def case_run_relative_output():
    # the output path is made absolute against cuhook's directory, not the program's
    sub = os.path.join(TMP, "rel")
    os.makedirs(sub, exist_ok=True)
    r = cuhook("run", "--agent", A.agent, "-o", "rel.txt", "--", "sh", "-c",
               "cd / && exec \"$0\" exit 0", A.target, cwd=sub, env=NO_TICKER)
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
    p = subprocess.Popen([A.cuhook, "run", "--agent", A.agent, "-o", os.path.join(TMP, "t2"), "--",
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
    # be skipped, which made the filter match every function): by cuhook itself, with the
    # agent's own check (src/common/agent_options.c), exit status 2 (usage)
    need_real("fakecuda")
    out = os.path.join(TMP, "bad.bin")
    for opt, value, why in (("--funcs", "cu*," + "a" * 300, "longer than 255 characters"),
                            ("--count", "cu*," + "a" * 300, "longer than 255 characters"),
                            ("--funcs", "cu[", r"pattern 'cu\[' has a '\[' without its '\]'"),
                            ("--count", "cuInit,cuMem[A-", r"pattern 'cuMem\[A-' has a '\[' without")):
        r = cuhook("run", opt, value, "--agent", A.real_agent, "-o", out, "--",
                   A.follow_target, "calls", A.fakecuda, "cuFakeConstA", 5)
        check(r.returncode == 2, opt + ": 2 when the options are refused", "%d %s" % (r.returncode, r.stderr))
        expect_fail(r, opt + ": .*" + why)
        check("role calls" not in r.stdout, opt + ": the program did not run", r.stdout)
        check(not os.path.exists(out), opt + ": no trace file")


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


def case_job_rank():
    # the agent says the process's rank in its job (launcher's environment, src/agent/job_env.c)
    # in a NOTE of every process's trace, the fork child's included, and the report shows it;
    # only decimal numbers are taken, RANK before Open MPI's variables
    need_real("follow_target", "fakecuda")
    read_trace = tracefile.read_trace
    cases = [({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "OMPI_COMM_WORLD_RANK": "7"},
              "job: rank=3 world=4 local_rank=1 (from RANK)", "rank 3 of 4"),
             ({"RANK": "3x", "OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "8"},
              "job: rank=2 world=8 (from OMPI_COMM_WORLD_RANK)", "rank 2 of 8"),
             ({"RANK": "\x1b[2J1", "SLURM_PROCID": "5"}, "job: rank=5 (from SLURM_PROCID)", "rank 5"),
             ({}, None, None)]
    for extra, note, line in cases:
        env = {k: v for k, v in os.environ.items()
               if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK") and not k.startswith(("OMPI_", "PMI_", "SLURM_"))}
        env.update(extra)
        d = os.path.join(TMP, "follow")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        r = cuhook("run", "--follow", "--agent", A.real_agent, "-o", os.path.join(d, "t.bin"), "--",
                   A.follow_target, "fork", A.fakecuda, 10, 5, 0, env=env)
        check(r.returncode == 0, "run with %r" % extra, r.stderr)
        files = sorted(f for f in os.listdir(d) if f.endswith(".bin"))
        check(len(files) == 2, "a trace for the parent and the fork child", repr(files))
        for f in files:
            jobs = [n for _, n in read_trace(os.path.join(d, f)).notes if n.startswith("job:")]
            check(jobs == ([note] if note else []), "%s with %r: its job note" % (f, extra), repr(jobs))
            rep = cuhook("report", "--no-color", os.path.join(d, f)).stdout
            got = re.findall(r"^  job +(.*)$", rep, re.M)
            check(got == ([line] if line else []), "%s: the report's job line" % f, repr(got))


def case_follow_fork_count():
    # --count across fork: the child inherits the forking thread's counters (cuFakeConstA was
    # counted 100 times before the fork) and must start its own file from them, not report them
    need_real("follow_target", "fakecuda")
    read_trace = tracefile.read_trace
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


# ---- output files --------------------------------------------------------------------------------

OUT_REFUSED = "trace file '%s' exists; pass --force to replace it, or choose another name with -o"


def plant_file(path, text="precious\n"):
    with open(path, "w") as f:
        f.write(text)
    return path


def read(path):
    """A file's content (bytes a trace holds show as \ufffd, never an exception)."""
    with open(path, "rb") as f:
        return f.read().decode(errors="replace")


def case_run_output_exists():
    # an existing trace file is refused before the program runs (exit 2, the file as it was, a
    # message naming it and --force); --force lets it through as force=1 (the agent replaces it
    # safely), --max-size as max_size=BYTES; a bad size is a usage error
    out = plant_file(os.path.join(TMP, "exists.txt"))
    r = cuhook("run", "--agent", A.agent, "-o", out, "--", A.target, "exit", 7)
    check(r.returncode == 2, "exit 2 for an existing output", "%d %s" % (r.returncode, r.stderr))
    check(r.stderr.strip() == "cuhook run: " + OUT_REFUSED % out, "the message names the file and --force", r.stderr)
    check(read(out) == "precious\n", "the existing file is unchanged (neither program nor agent ran)", read(out))
    r = cuhook("run", "--force", "--max-size", "2M", "--agent", A.agent, "-o", out, "--", A.target, "exit", 7,
               env=NO_TICKER)
    check(r.returncode == 7, "with --force the program runs", "%d %s" % (r.returncode, r.stderr))
    lines = trace_lines(out)  # the dummy agent appends to what is there
    check(lines[:1] == ["precious"] and len(lines) == 2 and
          lines[1].endswith("options=output=%s;force=1;max_size=2097152" % out),
          "force=1 and max_size passed to the agent", repr(lines))
    for bad in ("10K", "1.5M", "-1", "12Q", "", "99999999999999999999"):
        r = cuhook("run", "--max-size", bad, "--agent", A.agent, "-o", os.path.join(TMP, "m"), "--", A.target,
                   "exit", 7)
        check(r.returncode == 2 and "--max-size wants a size of at least 64K" in r.stderr,
              "--max-size %r refused" % bad, "%d %s" % (r.returncode, r.stderr))


def case_attach_output_exists():
    # attach: refused before the process is touched (no agent in it, no thread stopped)
    t = Target("loop", 2)
    try:
        out = plant_file(os.path.join(TMP, "exists.txt"))
        r = attach(t.pid, "--duration", 0.1, out=out)
        check(r.returncode == 2, "exit 2 for an existing output", "%d %s" % (r.returncode, r.stderr))
        check(r.stderr.strip() == "cuhook attach: " + OUT_REFUSED % out, "the message names the file and --force",
              r.stderr)
        maps = read("/proc/%d/maps" % t.pid)
        check(os.path.basename(A.agent) not in maps, "the agent was not put into the process")
        check(read(out) == "precious\n", "the existing file is unchanged", read(out))
        r = attach(t.pid, "--duration", 0.1, "--force", out=out)
        check(r.returncode == 0, "attach --force failed", r.stderr)
        lines = trace_lines(out)
        check(len(lines) == 3 and ";force=1" in lines[1] and lines[2].startswith("stop"),
              "attached with force=1", repr(lines))
        _, mism, _ = parse_loop(t.finish())
        check(mism == 0, "target unharmed")
    finally:
        t.kill()


def case_real_output_link():
    # the real agent under cuhook run: -o naming a planted link to a file of ours, or an existing
    # file: refused, both left as they were; with --force the name is replaced by a new trace
    # (mode 600), the link's target untouched. A new file is made with mode 600 too.
    need_real("follow_target", "fakecuda")
    victim = plant_file(os.path.join(TMP, "victim.txt"), "the link's target\n")
    prog = [A.follow_target, "calls", A.fakecuda, "cuFakeConstA", 25]
    for kind in ("new", "link", "file"):
        out = os.path.join(TMP, kind + ".bin")
        if kind == "link":
            os.symlink(victim, out)
        elif kind == "file":
            plant_file(out)
        else:
            r = cuhook("run", "--agent", A.real_agent, "-o", out, "--", *prog)
            check(r.returncode == 0, "run into a new file failed", r.stderr)
        if kind != "new":
            r = cuhook("run", "--agent", A.real_agent, "-o", out, "--", *prog)
            check(r.returncode == 2 and r.stderr.strip() == "cuhook run: " + OUT_REFUSED % out,
                  "%s: refused with exit 2" % kind, "%d %s" % (r.returncode, r.stderr))
            check("role calls" not in r.stdout, "%s: the program did not run" % kind, r.stdout)
            if kind == "link":
                check(os.path.islink(out) and os.readlink(out) == victim, "the link is unchanged")
            else:
                check(read(out) == "precious\n", "the file is unchanged", read(out))
            r = cuhook("run", "--force", "--agent", A.real_agent, "-o", out, "--", *prog)
            check(r.returncode == 0, "%s: run --force failed" % kind, r.stderr)
        st = os.lstat(out)
        check(stat.S_ISREG(st.st_mode) and st.st_mode & 0o7777 == 0o600,
              "%s: the trace is a new regular file of mode 600" % kind, "mode %o" % st.st_mode)
        pid, calls, _, closed = report_calls(out)
        check(calls == {"cuFakeConstA": 25} and closed, "%s: the trace holds the 25 calls" % kind,
              repr((calls, closed)))
        check(read(victim) == "the link's target\n", "the link's target is unchanged", read(victim))


def case_follow_set_aside_noclobber():
    # --follow sets a process's earlier trace aside as FILE.PID-N.EXT when it execs; what is
    # already there under those names is never replaced: the fork child plants a dangling link at
    # FILE.PID-1.bin and a file at FILE.PID-2.bin just before its exec; the trace must go to -3
    need_real("follow_target", "fakecuda")
    d = os.path.join(TMP, "follow")
    os.makedirs(d)
    stem = os.path.join(d, "t")
    r = cuhook("run", "--follow", "--agent", A.real_agent, "-o", stem + ".bin", "--", A.follow_target, "exec",
               A.fakecuda, 100, 30, A.follow_target, "calls", A.fakecuda, "cuFakeConstB", 40,
               env=dict(os.environ, INJ_FOLLOW_PLANT=stem))
    check(r.returncode == 0, "exit status 0 expected", "%d %s" % (r.returncode, r.stderr))
    kids = roles(r.stdout)["calls"]
    forked = [k for k in kids if os.path.lexists("%s.%d-2.bin" % (stem, k))]
    check(len(forked) == 1, "one fork child planted its entries", repr(sorted(os.listdir(d))))
    k = forked[0]
    link = "%s.%d-1.bin" % (stem, k)
    check(os.path.islink(link) and os.readlink(link) == stem + ".planted" and not os.path.lexists(stem + ".planted"),
          "the planted link is unchanged and nothing was written through it",
          "%s: %s" % (link, os.readlink(link) if os.path.islink(link) else "no longer a link"))
    check(read("%s.%d-2.bin" % (stem, k)) == "planted\n", "the planted file is unchanged")
    aside = "%s.%d-3.bin" % (stem, k)
    check(os.path.exists(aside), "the earlier trace set aside under the first free name", repr(sorted(os.listdir(d))))
    got = report_calls(aside)
    check(got[0] == k and got[1] == {"cuFakeConstC": 30}, "the earlier image's 30 calls", repr(got))
    got = report_calls("%s.%d.bin" % (stem, k))
    check(got[1] == {"cuFakeConstB": 40}, "the new image's trace", repr(got))


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
    t = Target("loop", 4, env={"INJ_DUMMY_PREPARE_MS": "300"})
    try:
        r = attach(t.pid, "--duration", 0.2, "-v")
        check(r.returncode == 0, "attach failed", r.stderr)
        lines = trace_lines(prepare=True)
        check([l.split()[0] for l in lines] == ["prepare", "start", "stop"], "prepare, start, stop", repr(lines))
        check("others_stopped=0" in lines[0], "the other threads ran during prepare", lines[0])
        check(re.search(r"options=output=%s;stacks=;injector=\d+;deadline_ms=\d+;stderr=0$" %
                        re.escape(os.path.join(TMP, "trace.txt")), lines[0]) is not None,
              "prepare got the options (attach: no stacks unless asked, nothing on the process's stderr; the agent's watch of "
              "cuhook)", lines[0])
        check("flags=1 others_stopped=1" in lines[1], "every other thread stopped during start", lines[1])
        n, ms, _ = stopped_ms(r.stderr)
        check(n == 5, "5 threads stopped at the end", r.stderr)
        m = re.search(r"before, while they ran: dlopen ([\d.]+), prepare ([\d.]+)", r.stderr)
        check(m is not None and float(m.group(2)) >= 300, "prepare's 300 ms told apart", r.stderr)
        check(ms < 150, "stopped time counts the final stop only: %.2f ms" % ms, r.stderr)
        # a second attach reuses the agent (no dlopen) and prepares it again beside the running
        # threads: the agent's start must not open its file or create its writer with every
        # thread stopped (a stopped thread may hold the locks that takes); INJ_DUMMY_PREPARE_MS
        # is in the target's environment, --force for the same file (the dummy agent appends)
        r = attach(t.pid, "--duration", 0.05, "-v", "--force")
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
            r = attach(t.pid, "--duration", 0.01, "--force")  # one file: the dummy agent appends
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
        r = attach(t.pid, "--duration", 0.01, "--force")
        expect_fail(r, "already tracing")
        r = cuhook("attach", "--agent", A.agent, "--stop", t.pid)
        check(r.returncode == 0, "--stop failed", r.stderr)
        r = attach(t.pid, "--duration", 0.01, "--force")
        check(r.returncode == 0, "attach after --stop", r.stderr)
        _, mism, _ = parse_loop(t.finish())
        check(mism == 0, "target unharmed")
    finally:
        t.kill()


def case_attach_watch_options():
    # cuhook attach passes its pid (injector=) for the agent to watch, and with --duration a
    # deadline (deadline_ms=: the duration plus 5 s and two call timeouts) after which the agent
    # ends the trace by itself; cuhook run passes neither (run_agent_started checks the string)
    t = Target("loop", 2)
    try:
        for extra, deadline in ((("--duration", 0.2), 11200), (("--duration", 0.5, "--call-timeout", 1), 7500),
                                ((), None)):
            # the dummy agent appends to one file: --force lets each attach take it
            p = subprocess.Popen([A.cuhook, "attach", "--agent", A.agent, "-o", os.path.join(TMP, "trace.txt"),
                                  "--force"] + [str(a) for a in extra] + [str(t.pid)], stderr=subprocess.PIPE,
                                 text=True)
            check("tracing process" in p.stderr.readline() + p.stderr.readline(), "attached")
            if not extra:
                p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=30)
            check(p.returncode == 0, "attach %s failed" % (extra,), err)
            start = [l for l in trace_lines() if l.startswith("start")][-1]
            check(";injector=%d" % p.pid in start, "our pid passed with %s" % (extra,), start)
            if deadline is None:
                check("deadline_ms=" not in start, "no deadline without --duration", start)
            else:
                check(";deadline_ms=%d" % deadline in start, "deadline_ms=%d with %s" % (deadline, extra), start)
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


# ---- the flight recorder's options and cuhook dump (with the dummy agent) -------------------------

def case_flight_options():
    # --flight-recorder[=SIZE] and --trigger become flight=, trigger_error=, trigger_slow=; bad ones
    # are refused with exit 2 before anything is done to a process
    t = Target("loop", 1)
    marker = os.path.join(TMP, "ran")
    try:
        for opts, why in ((["--trigger", "error"], "--trigger needs --flight-recorder"),
                          (["--trigger=slow=cuInit:5"], "--trigger needs --flight-recorder"),
                          (["--flight-recorder=10K"], "--flight-recorder wants a size of at least 64K"),
                          (["--flight-recorder=0"], "--flight-recorder wants a size of at least 64K"),
                          (["--flight-recorder=8Q"], "--flight-recorder wants a size"),
                          (["--flight-recorder", "--trigger", "oops"], "--trigger wants error, error=CODES or slow"),
                          (["--flight-recorder", "--trigger", "error=abc"], "not \"any\" nor a list"),
                          (["--flight-recorder", "--trigger", "error=0"], "not \"any\" nor a list"),
                          (["--flight-recorder", "--trigger", "slow=cuInit"], "is not GLOBS:MS"),
                          (["--flight-recorder", "--trigger", "slow=cuInit:0"], "is not GLOBS:MS"),
                          (["--flight-recorder", "--trigger", "slow=cu[:5"], "without its ']'"),
                          (["--flight-recorder", "--trigger", "error", "--trigger", "error=700"], "given twice"),
                          (["--flight-recorder", "--opt", "trigger_slow=cuInit:x"], "is not GLOBS:MS")):
            r = attach(t.pid, "--duration", 0.1, *opts)
            check(r.returncode == 2, "attach %s: exit 2" % opts, "%d %s" % (r.returncode, r.stderr))
            check(why in r.stderr, "attach %s: %r in the message" % (opts, why), r.stderr)
            check(not agent_mapped(t.pid, A.agent), "attach %s: the agent is not in the process" % opts)
            r = cuhook("run", "--agent", A.agent, "-o", os.path.join(TMP, "r.txt"), *opts, "--", "sh", "-c",
                       "touch " + marker)
            check(r.returncode == 2, "run %s: exit 2" % opts, "%d %s" % (r.returncode, r.stderr))
            check(why in r.stderr, "run %s: %r in the message" % (opts, why), r.stderr)
            check(not os.path.exists(marker), "run %s: the program did not run" % opts)
        for opts, want in ((["--flight-recorder"], ";flight=8388608;"),
                           (["--flight-recorder=1M", "--trigger", "error"], ";flight=1048576;trigger_error=any;"),
                           (["--trigger=error=700,719", "--flight-recorder=64K", "--trigger", "slow=cuLaunch*,cuMem*:250"],
                            ";flight=65536;trigger_error=700,719;trigger_slow=cuLaunch*,cuMem*:250;")):
            out = os.path.join(TMP, "o%d.txt" % len(want))
            r = cuhook("run", "--agent", A.agent, "-o", out, *opts, "--", A.target, "exit", 0)
            check(r.returncode == 0, "run %s" % opts, r.stderr)
            start = [l for l in trace_lines(out) if l.startswith("start")]
            check(len(start) == 1 and want in start[0] + ";", "run %s: %r in the options" % (opts, want), repr(start))
        _, mism, _ = parse_loop(t.finish())
        check(mism == 0, "target unharmed")
    finally:
        t.kill()


def dump(pid, *extra, user=None, exe=None, agent=None, timeout=60):
    """cuhook dump [--agent AGENT] EXTRA PID (as uid `user`)."""
    return subprocess.run([exe or A.cuhook, "dump", "--agent", agent or A.agent] + [str(a) for a in extra] + [str(pid)],
                          capture_output=True, text=True, timeout=timeout,
                          preexec_fn=as_user(user) if user is not None else None)


class Attached:
    """cuhook attach with the dummy agent into a new loop target, left attached (SIGINT ends it)."""

    def __init__(self, *extra, env=None):
        self.t = Target("loop", 2, env=env)
        self.out = os.path.join(TMP, "trace.txt")
        self.p = subprocess.Popen([A.cuhook, "attach", "--agent", A.agent, "-o", self.out] + list(extra) +
                                  [str(self.t.pid)], stderr=subprocess.PIPE, text=True)
        check("tracing process" in self.p.stderr.readline() + self.p.stderr.readline(), "attached")

    def end(self):
        """Detach; the target's mismatches (0: unharmed) and the agent's lines."""
        self.p.send_signal(signal.SIGINT)
        _, err = self.p.communicate(timeout=30)
        check(self.p.returncode == 0, "detach", err)
        return parse_loop(self.t.finish())[1], trace_lines()

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        self.t.kill()


def case_dump_no_such_pid():
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    r = dump(pid_max + 1)
    check(r.returncode == 3 and "no such process" in r.stderr, "exit 3, no such process",
          "%d %s" % (r.returncode, r.stderr))
    for args in (["notapid"], [], ["--timeout", "nan", "1"], ["--timeout", "0.001", "1"], ["--timeout"],
                 ["--bogus", "1"], ["1", "2"]):
        r = cuhook("dump", *args)
        check(r.returncode == 2, "dump %s: usage error, exit 2" % args, "%d %s" % (r.returncode, r.stderr))


def tracer_watch(pid, until):
    """The TracerPid values /proc/PID/status showed while until() was false (polled in a thread)."""
    import threading
    seen = set()
    done = threading.Event()

    def poll():
        while not done.is_set():
            try:
                seen.add(int(re.search(r"TracerPid:\s*(\d+)", open("/proc/%d/status" % pid).read()).group(1)))
            except (OSError, AttributeError):
                pass
            time.sleep(0.0005)

    th = threading.Thread(target=poll)
    th.start()
    try:
        return until(), seen
    finally:
        done.set()
        th.join()


def case_dump_no_agent():
    # a process without any agent: exit 4, and it was never traced meanwhile
    t = Target("loop", 2)
    try:
        r, tracers = tracer_watch(t.pid, lambda: dump(t.pid))
        check(r.returncode == 4 and "no cuhook agent" in r.stderr, "exit 4, no agent", "%d %s" % (r.returncode, r.stderr))
        check(tracers == {0}, "never traced by cuhook dump", repr(tracers))
        check(parse_loop(t.finish())[1] == 0, "target unharmed")
    finally:
        t.kill()


def case_dump_not_flight():
    # an agent traced without --flight-recorder: exit 5, no dump asked for
    a = Attached()
    try:
        r = dump(a.t.pid)
        check(r.returncode == 5 and "not in flight-recorder mode" in r.stderr, "exit 5, not a flight recorder",
              "%d %s" % (r.returncode, r.stderr))
        mism, lines = a.end()
        check(mism == 0, "target unharmed")
        check("dump" not in lines, "no dump asked for", repr(lines))
    finally:
        a.kill()


def case_dump_written():
    # a flight recorder: each cuhook dump adds one request and returns once the agent counted
    # the dump written; the process is never traced (stopped) by it
    a = Attached("--flight-recorder")
    try:
        for k in (1, 2):
            r, tracers = tracer_watch(a.t.pid, lambda: dump(a.t.pid))
            check(r.returncode == 0, "dump %d: exit 0" % k, "%d %s" % (r.returncode, r.stderr))
            want = "cuhook dump: process %d: dump %d written to the process's trace file" % (a.t.pid, k)
            check(r.stdout.strip() == want, "dump %d: %r" % (k, want), r.stdout)
            check(tracers == {0}, "dump %d: the process never traced meanwhile" % k, repr(tracers))
            check([l for l in trace_lines() if l == "dump"] == ["dump"] * k, "dump %d: %d dump lines" % (k, k),
                  repr(trace_lines()))
        mism, lines = a.end()
        check(mism == 0, "target unharmed")
        check([l.split()[0] for l in lines] == ["start", "dump", "dump", "stop"], "start, 2 dumps, stop", repr(lines))
    finally:
        a.kill()


def case_dump_timeout():
    # a request the agent does not answer: exit 7 after --timeout, not before
    a = Attached("--flight-recorder", env={"INJ_DUMMY_NO_DUMP": "1"})
    try:
        t0 = time.monotonic()
        r = dump(a.t.pid, "--timeout", 0.3)
        took = time.monotonic() - t0
        check(r.returncode == 7 and "did not write the dump within 0.300 s" in r.stderr, "exit 7, timeout",
              "%d %s" % (r.returncode, r.stderr))
        check(0.3 <= took < 10, "waited --timeout", "%.3f s" % took)
        mism, lines = a.end()
        check(mism == 0 and "dump" not in lines, "target unharmed, no dump")
    finally:
        a.kill()


def case_dump_permission():
    # another user without ptrace rights over the process: exit 6, said so
    if os.geteuid() != 0:
        raise Skip("needs root to run cuhook as another user")
    paths = unprivileged_copy()
    a = Attached("--flight-recorder")
    try:
        r = dump(a.t.pid, user=65534, exe=paths["cuhook"], agent=paths["agent"])
        check(r.returncode == 6 and "not permitted" in r.stderr and "root" in r.stderr, "exit 6, not permitted",
              "%d %s" % (r.returncode, r.stderr))
        mism, lines = a.end()
        check(mism == 0 and "dump" not in lines, "target unharmed, no dump")
    finally:
        a.kill()


# ---- cuhook killed in the middle of a remote call ---------------------------------------------------

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


def killed_mid_call(when, slow, after=0.0):
    """Attach with the dummy agent made slow by `slow` (its INJ_DUMMY_* variables, in the target's
    environment), SIGKILL cuhook `after` seconds once its stderr shows `when` (a regular
    expression): the remote call under way when cuhook dies must still come back, and the target
    go on with every result right and no thread left stopped."""
    base = baseline(4)
    t = Target("loop", 4, env=slow)
    try:
        p = subprocess.Popen([A.cuhook, "attach", "-v", "--agent", A.agent, "-o",
                              os.path.join(TMP, "trace.txt"), "--duration", "0.3", str(t.pid)],
                             stderr=subprocess.PIPE, text=True)
        seen = ""
        while not re.search(when, seen):
            line = p.stderr.readline()
            check(line != "", "cuhook ended before %r" % when, seen)
            seen += line
        time.sleep(after)
        check(p.poll() is None, "cuhook still in the call when killed", seen)
        p.kill()
        p.wait()
        time.sleep(0.3)
        check(t.p.poll() is None, "target survived the killed cuhook", "exit %s" % t.p.poll())
        states = list(thread_states(t.pid).values())
        check(not any(s in "tT" for s in states), "no thread left stopped", repr(states))
        out = t.finish()
        check(t.p.returncode == 0, "target ended normally", "exit status %d" % t.p.returncode)
        _, mism, ck = parse_loop(out)
        check(mism == 0 and ck == base, "target unharmed", "%d %s %s" % (mism, ck, base))
    finally:
        t.kill()


def case_kill_run_during_start():
    # cuhook run killed while the agent starts (everything stopped at the program's entry): the
    # program runs on, untraced, and ends normally. It is reparented to us (a subreaper).
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    check(libc.prctl(36, 1, 0, 0, 0) == 0, "PR_SET_CHILD_SUBREAPER")  # 36: PR_SET_CHILD_SUBREAPER
    base = baseline(2)
    # the dummy agent's start made slow: a variable of the program's environment, inherited from ours
    p = subprocess.Popen([A.cuhook, "run", "-v", "--agent", A.agent, "-o", os.path.join(TMP, "trace.txt"),
                          "--", A.target, "loop", "2"], env=dict(os.environ, INJ_DUMMY_START_MS="800"),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = ""
    while "dlopen at" not in seen:
        line = p.stderr.readline()
        check(line != "", "cuhook ended before its dlopen", seen)
        seen += line
    time.sleep(0.3)
    check(p.poll() is None, "cuhook still in the start when killed", seen)
    p.kill()
    p.wait()
    # the target is now our child (reparented); it prints "ready" once it runs its main
    line = p.stdout.readline()
    check(line.startswith("ready"), "the program started", repr(line))
    p.stdin.write("quit\n")
    p.stdin.flush()
    out = p.stdout.read()
    pid, status = os.waitpid(-1, 0)
    check(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "the program ended normally",
          "status 0x%x" % status)
    _, mism, ck = parse_loop(out)
    check(mism == 0 and ck == base, "program unharmed", "%d %s %s" % (mism, ck, base))


def case_kill_during_prepare():
    # prepare runs on a program thread while the others run; cuhook dies in it
    killed_mid_call(r"dlopen at", {"INJ_DUMMY_PREPARE_MS": "800"}, 0.3)


def case_kill_during_start():
    # every thread stopped, the start runs on one of them; cuhook dies in it
    killed_mid_call(r"stopped again", {"INJ_DUMMY_START_MS": "800"}, 0.3)


def case_kill_during_stop():
    # the detach's stop runs on a program thread, the others stopped; cuhook dies in it
    killed_mid_call(r"tracing process", {"INJ_DUMMY_STOP_MS": "1500"}, 0.9)


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
        r = subprocess.run([A.cuhook, "attach", "--agent", A.agent, "-o", os.path.join(TMP, "never"), "--duration", "0.1",
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


def seccomp_refused(mode, pattern):
    """An attach to a target in seccomp mode `mode` fails with `pattern`, the target unharmed."""
    base = baseline(2)
    t = Target(mode, 2)
    try:
        r = attach(t.pid, "--duration", 0.1)
        expect_fail(r, pattern)
        time.sleep(0.2)
        check(t.p.poll() is None, "target still running")
        _, mism, ck = parse_loop(t.finish())
        check(mism == 0 and ck == base, "target unharmed", "%d %s %s" % (mism, ck, base))
    finally:
        t.kill()


def case_err_seccomp():
    seccomp_refused("seccomp", "seccomp filter .* refuses openat")


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


def case_attach_slow_dlopen():
    # a dlopen still working (using CPU) after two call timeouts is given more time, not
    # interrupted: the attach succeeds. Before, it was interrupted and put back after 2 timeouts,
    # whatever it held (the loader's lock) left held.
    base = baseline(2)
    env = dict(os.environ, INJ_DUMMY_CTOR_SPIN_MS="1500")
    t = Target("loop", 2, env=env)
    try:
        r = attach(t.pid, "--duration", 0.1, "--call-timeout", 0.4, "-v")
        check(r.returncode == 0, "attach with a slow dlopen", r.stderr)
        check("still working" in r.stderr, "the slow dlopen was given more time", r.stderr)
        _, mism, ck = parse_loop(t.finish())
        check(mism == 0 and ck == base, "target unharmed", "%d %s %s" % (mism, ck, base))
    finally:
        t.kill()


def sig_ignored(pid, sig):
    with open("/proc/%d/status" % pid) as f:
        ign = int(re.search(r"^SigIgn:\s*([0-9a-f]+)", f.read(), re.M).group(1), 16)
    return bool(ign & (1 << (sig - 1)))


def case_attach_ignored_sigsegv():
    # remote calls return through the gate, not through a SIGSEGV: a process that ignores SIGSEGV
    # is attached like any other, and still ignores it afterwards (a fault on a thread would have
    # reset the disposition for the whole process)
    t = Target("ignsegv")
    try:
        r = attach(t.pid, "--duration", 0.1)
        check(r.returncode == 0, "attach failed", r.stderr)
        check(t.p.poll() is None and sig_ignored(t.pid, signal.SIGSEGV), "SIGSEGV still ignored")
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


def no_raw_escape(r, what):
    """cuhook's stderr holds no control character but newlines: what came from the target is shown
    escaped (a terminal would act on ESC ] 0 ; ... BEL: set its title, and worse)."""
    bad = sorted({c for c in r.stderr if c != "\n" and (ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f)})
    check(not bad, what + ": control characters %r reach the terminal" % bad, repr(r.stderr))


ESC_NAME = "\x1b]0;pwned\x07"  # sets a terminal's title; 10 bytes, fits a thread name


def case_err_escape_names():
    # names the target chooses, in cuhook's error lines: its tracer's name, its program's path
    t = Target("traced", ESC_NAME)
    try:
        r = attach(t.pid, "--duration", 0.1)
        expect_fail(r, r"already traced by process \d+ \(\\x1b\]0;pwned\\x07\)")
        no_raw_escape(r, "tracer name")
    finally:
        t.kill()
    exe = os.path.join(TMP, "st" + ESC_NAME)
    shutil.copy(A.static_target, exe)
    t = Target("loop", 1, exe=exe)
    try:
        r = attach(t.pid, "--duration", 0.1)
        expect_fail(r, r"statically linked program \(.*/st\\x1b\]0;pwned\\x07\)")
        no_raw_escape(r, "program path")
    finally:
        t.kill()


def case_err_seccomp_errno():
    # a filter answering openat with EACCES (SECCOMP_RET_ERRNO): no SIGSYS to see, dlopen just
    # fails with "Permission denied"; the message must name the seccomp filter all the same
    seccomp_refused("seccomp-errno", r"could not load the agent .*Permission denied.*runs under a seccomp "
                                     r"filter.*probably refused a system call dlopen needs")


def unprivileged_copy():
    """cuhook, the dummy agent and the target copied where any user can run them (the build tree
    may not be readable by others): {name: path}."""
    d = os.path.join(TMP, "bin")
    os.makedirs(d)
    os.chmod(d, 0o755)
    paths = {}
    for name, src in (("cuhook", A.cuhook), ("agent", A.agent), ("target", A.target)):
        paths[name] = os.path.join(d, os.path.basename(src))
        shutil.copy(src, paths[name])
        os.chmod(paths[name], 0o755)
    for lib in os.listdir(os.path.dirname(A.target)):  # the target's libinj_work.so ($ORIGIN)
        if lib == "libinj_work.so":
            shutil.copy(os.path.join(os.path.dirname(A.target), lib), d)
    return paths


def case_err_setcap():
    # The advice "setcap cap_sys_ptrace+ep": a copy of cuhook with that file capability, run by
    # one unprivileged user against another's process. /proc/PID/mem is 0600 and the other user's:
    # opening it needs CAP_DAC_OVERRIDE as well, so cuhook goes through ptrace for memory.
    if os.geteuid() != 0:
        raise Skip("needs root to give a file capability and to change users")
    if not shutil.which("setcap"):
        raise Skip("no setcap (apt-get install libcap2-bin)")
    b = unprivileged_copy()
    sc = subprocess.run(["setcap", "cap_sys_ptrace+ep", b["cuhook"]], capture_output=True, text=True)
    if sc.returncode != 0:
        raise Skip("setcap refused here: " + sc.stderr.strip())
    out = os.path.join(TMP, "cap.txt")
    base = baseline(3)
    t = Target("loop", 3, exe=b["target"], user=65533, env={"INJ_DUMMY_TICKER": "0"})
    try:
        r = subprocess.run([b["cuhook"], "attach", "-v", "--agent", b["agent"], "-o", out, "--duration", "0.2",
                            str(t.pid)], capture_output=True, text=True, timeout=60, preexec_fn=as_user(65534))
        check(r.returncode == 0, "attach with CAP_SYS_PTRACE as another user", r.stderr)
        check("PTRACE_PEEKDATA/POKEDATA instead" in r.stderr, "memory through ptrace", r.stderr)
        check([l.split()[0] for l in trace_lines(out)] == ["start", "stop"], "the agent started and stopped",
              repr(trace_lines(out)))
        _, mism, ck = parse_loop(t.finish())
        check(mism == 0 and ck == base, "target unharmed", "%d %s %s" % (mism, ck, base))
    finally:
        t.kill()


def case_err_nodump():
    # same uid, still refused: the process is not dumpable; the message says so instead of
    # "owned by uid U, you are uid U"
    if os.geteuid() != 0:
        raise Skip("needs root to run as another user")
    b = unprivileged_copy()
    t = Target("nodump", 1, exe=b["target"], user=65534)
    try:
        r = subprocess.run([b["cuhook"], "attach", "--agent", b["agent"], "-o", os.path.join(TMP, "n.txt"),
                            "--duration", "0.1", str(t.pid)], capture_output=True, text=True, timeout=60,
                           preexec_fn=as_user(65534))
        expect_fail(r, r"permission denied attaching to process \d+ \(uid 65534 like cuhook, cuhook lacks "
                       r"CAP_SYS_PTRACE\): it is not dumpable")
        check("you are uid" not in r.stderr, "not told its uid differs", r.stderr)
        _, mism, _ = parse_loop(t.finish())
        check(mism == 0, "target unharmed")
    finally:
        t.kill()


def case_err_init_refused():
    # pid 1 of a fresh pid namespace, root attaching without CAP_SYS_PTRACE (a container without
    # it): refused because the init holds capabilities cuhook lacks, not "uid 0, you are uid 0"
    if os.geteuid() != 0:
        raise Skip("needs root for a pid namespace")
    if not (shutil.which("unshare") and shutil.which("setpriv")):
        raise Skip("no unshare or setpriv (util-linux)")
    # unshare forks the target as pid 1 of the new namespace: it says "ready 1"
    try:
        t = Target("--pid", "--fork", "--mount-proc", A.target, "loop", 1, exe="unshare")
    except Fail as e:
        raise Skip("no pid namespace here: %s" % e)
    try:
        with open("/proc/%d/task/%d/children" % (t.pid, t.pid)) as f:
            init = int(f.read().split()[0])
        with open("/proc/%d/status" % init) as f:
            check(re.search(r"^NSpid:\s+%d\s+1$" % init, f.read(), re.M), "the target is pid 1 in its namespace")
        r = subprocess.run(["setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace", A.cuhook, "attach",
                            "--agent", A.agent, "-o", os.path.join(TMP, "i.txt"), "--duration", "0.1", str(init)],
                           capture_output=True, text=True, timeout=60)
        expect_fail(r, r"permission denied attaching to process %d \(the init of its pid namespace, uid 0 like "
                       r"cuhook, cuhook lacks CAP_SYS_PTRACE\): it holds capabilities cuhook does not "
                       r"\(cap_sys_ptrace.*CAP_SYS_PTRACE is not in cuhook's capability bounding set" % init)
        check("you are uid" not in r.stderr, "not 'owned by uid 0, you are uid 0'", r.stderr)
        _, mism, _ = parse_loop(t.finish())
        check(mism == 0, "target unharmed")
    finally:
        t.kill()


def case_err_attach_race():
    # two attaches at once: the second comes while the first holds only the thread loading its
    # agent (the reader, not the main thread: that one waits in a futex, which the injector
    # avoids), the main thread free again. Its seize of the reader is refused (EPERM); it must
    # name the other cuhook, not say "permission denied"
    t = Target("join", env={"INJ_DUMMY_PREPARE_MS": "1500"})
    first = os.path.join(TMP, "first.txt")
    try:
        p = subprocess.Popen([A.cuhook, "attach", "-v", "--agent", A.agent, "-o", first, "--duration", "0.2",
                              str(t.pid)], stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 20
        while not any(l.startswith("prepare") for l in trace_lines(first, prepare=True)):
            check(time.time() < deadline and p.poll() is None, "the first attach reached its prepare")
            time.sleep(0.01)
        r = attach(t.pid, "--duration", 0.1, out=os.path.join(TMP, "second.txt"))
        _, err1 = p.communicate(timeout=60)
        check(p.returncode == 0, "the first attach succeeded", err1)
        check(re.search(r"called on thread (?!%d\b)\d+" % t.pid, err1), "the first one held a thread other "
              "than the main one", err1)
        expect_fail(r, r"already traced by process %d \(cuhook\)" % p.pid)
        check("permission denied" not in r.stderr, "not told 'permission denied'", r.stderr)
        check(t.finish("quit\n") == "read: quit\n", "target unharmed")
    finally:
        t.kill()


def agent_mapped(pid, agent):
    with open("/proc/%d/maps" % pid) as f:
        return any(agent in l for l in f)


def case_bad_values():
    # numbers that are not (nan, inf, 1e400), out of range, and malformed globs: refused with exit
    # 2 and a message naming the option, before anything is done to a process
    t = Target("loop", 1)
    marker = os.path.join(TMP, "ran")
    try:
        for opts in (["--duration", "nan"], ["--duration", "1e400"], ["--duration", "inf"], ["--duration", "-1"],
                     ["--duration=nan"], ["--duration", "99999999999"], ["--call-timeout", "nan"],
                     ["--call-timeout", "0"], ["--call-timeout", "1e400"], ["--call-timeout", "0.0001"],
                     ["--funcs", "cu["], ["--count", "cuInit,cu[A-"], ["--funcs", "cu\\"]):
            r = attach(t.pid, *opts)
            check(r.returncode == 2, "attach %s: exit 2" % opts, "%d %s" % (r.returncode, r.stderr))
            check(opts[0].split("=")[0] in r.stderr, "attach %s: the message names the option" % opts, r.stderr)
            check(not agent_mapped(t.pid, A.agent), "attach %s: the agent is not in the process" % opts)
            if opts[0] in ("--duration", "--duration=nan"):
                continue
            r = cuhook("run", "--agent", A.agent, "-o", os.path.join(TMP, "r.txt"), *opts, "--", "sh", "-c",
                       "touch " + marker)
            check(r.returncode == 2, "run %s: exit 2" % opts, "%d %s" % (r.returncode, r.stderr))
            check(not os.path.exists(marker), "run %s: the program did not run" % opts)
        _, mism, _ = parse_loop(t.finish())
        check(mism == 0, "target unharmed")
    finally:
        t.kill()


def case_opt_typo():
    # --opt with a key or value the agent would refuse: refused by cuhook before it touches the
    # process (it used to be found by the agent, inside the target); the real agent's keys
    need_real()
    t = Target("loop", 1)
    marker = os.path.join(TMP, "ran")
    try:
        for opt, why in (("bogus=1", "unknown option 'bogus'"), ("buffer_kb=12", "'buffer_kb' must be a number"),
                         ("drop=maybe", "'drop' must be 0 or 1"), ("lib=libcuda.so[", "'lib': pattern"),
                         ("output=rel.bin", "use -o"), ("flush_ms=1;bogus=2", "cannot contain ';'")):
            r = cuhook("attach", "--agent", A.real_agent, "-o", os.path.join(TMP, "a.bin"), "--duration", 0.1,
                       "--opt", opt, t.pid)
            check(r.returncode == 2, "attach --opt %s: exit 2" % opt, "%d %s" % (r.returncode, r.stderr))
            check(why in r.stderr, "attach --opt %s: %r in the message" % (opt, why), r.stderr)
            check(not agent_mapped(t.pid, A.real_agent), "attach --opt %s: the agent is not in the process" % opt)
            r = cuhook("run", "--agent", A.real_agent, "-o", os.path.join(TMP, "r.bin"), "--opt", opt, "--",
                       "sh", "-c", "touch " + marker)
            check(r.returncode == 2, "run --opt %s: exit 2" % opt, "%d %s" % (r.returncode, r.stderr))
            check(why in r.stderr, "run --opt %s: %r in the message" % (opt, why), r.stderr)
            check(not os.path.exists(marker), "run --opt %s: the program did not run" % opt)
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
    return tracefile.read_end(path)[1]


def trace_closed(path):
    """Whether a trace.bin has its END block (block headers only: attach traces are large)."""
    return tracefile.read_end(path)[0]


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


def case_real_attach_flight():
    # the real agent: attach --flight-recorder writes nothing until cuhook dump, which names the
    # file; the detach writes a last dump and END; the agent left loaded is not a flight
    # recorder any more, nor is one attached without --flight-recorder
    need_real()
    t = Target("loop", 2)
    out = os.path.join(TMP, "flight.bin")
    try:
        p = subprocess.Popen([A.cuhook, "attach", "--agent", A.real_agent, "-o", out, "--flight-recorder=64K",
                              "--trigger", "error", str(t.pid)], stderr=subprocess.PIPE, text=True)
        said = p.stderr.readline() + p.stderr.readline() + p.stderr.readline()  # the libcuda note first
        check("tracing process" in said and "nothing is written until a dump (cuhook dump %d, a trigger" % t.pid
              in said, "attached, saying the file stays empty", said)
        time.sleep(0.3)
        check(os.path.getsize(out) == 0, "nothing written before a dump", str(os.path.getsize(out)))
        r = dump(t.pid, agent=A.real_agent)
        check(r.returncode == 0 and r.stdout.strip() == "cuhook dump: process %d: dump 1 written to %s" % (t.pid, out),
              "dump 1 written, to the trace file", "%d %r %s" % (r.returncode, r.stdout, r.stderr))
        size = os.path.getsize(out)
        check(size > 0, "the dump is in the file")
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
        check(p.returncode == 0, "detach", err)
        tr = tracefile.read_trace(out)
        notes = [n for _, n in tr.notes if n.startswith("flight recorder: dump")]
        check(notes == ["flight recorder: dump 1: asked for (cuhook dump)", "flight recorder: dump 2: the trace ends"],
              "two dumps: asked for, then the end", repr(notes))
        check(tr.has_end, "END after the detach")
        r = dump(t.pid, agent=A.real_agent)
        check(r.returncode == 5 and "not in flight-recorder mode" in r.stderr, "after the detach: exit 5",
              "%d %s" % (r.returncode, r.stderr))
        p = subprocess.Popen([A.cuhook, "attach", "--agent", A.real_agent, "-o", os.path.join(TMP, "plain.bin"),
                              str(t.pid)], stderr=subprocess.PIPE, text=True)
        check("tracing process" in p.stderr.readline() + p.stderr.readline(), "attached again, without --flight-recorder")
        r = dump(t.pid, agent=A.real_agent)
        check(r.returncode == 5 and "not in flight-recorder mode" in r.stderr, "not a flight recorder: exit 5",
              "%d %s" % (r.returncode, r.stderr))
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
        check(p.returncode == 0, "detach", err)
        check(parse_loop(t.finish())[1] == 0, "target unharmed")
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
        check(p.poll() is None, "driver_user outlasts the attaches (else give it more iterations)",
              "it ended with status %s" % p.returncode)
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
    # the agent's own figures of its stop, read after the detach: six steps, within the call
    steps = re.search(r"^cuhook: detach: the agent's stop: GPU ([\d.]+), capture ([\d.]+), jumps out ([\d.]+), "
                      r"trace closed ([\d.]+), watch ([\d.]+), names ([\d.]+) ms$", r.stderr, re.M)
    call = re.search(r"^cuhook: detach: .* call ([\d.]+),", r.stderr, re.M)
    check(steps is not None and call is not None, "-v gives the agent's stop steps", r.stderr)
    check(sum(float(x) for x in steps.groups()) <= float(call.group(1)) + 0.02,
          "the steps lie within the stop call", "%s vs call %s" % (steps.groups(), call.group(1)))
    check(float(steps.group(4)) > 0 and float(steps.group(3)) > 0, "the jumps taken out and the trace closed take time",
          steps.group(0))
    print("  traced %d of %d calls; %s" % (ev // 2, calls, " | ".join(l for l in r.stderr.splitlines() if "stopped for" in l)))


def case_real_cuhook_app():
    # driver_user called cuhook_app, traced for a window by the real agent: its 5 threads
    # stopped at attach and at detach, the agent's writer left running (the detach waits for
    # it), the results unchanged, the trace closed with calls in it
    need_real("driver_user", "fakecuda")
    exe = renamed_copy(A.driver_user, "cuhook_app")
    # long enough that no worker has finished by the detach: 300,000 iterations took 0.84 s on
    # an idle machine, about when the detach comes (0.3 s, the agent's loading, the 0.3 s
    # window), and a clean-clone CI run saw 4 threads at the detach
    iters = 1500000
    base = driver_run(iters, exe=exe)
    out = os.path.join(TMP, "app.bin")
    res = {}

    def att(pid):
        res["r"] = cuhook("attach", "-v", "--agent", A.real_agent, "-o", out, "--duration", 0.3, pid)

    got = driver_run(iters, att, exe=exe)
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
    read_trace = tracefile.read_trace
    # iterations enough for the program to outlast the three attaches on an idle machine too
    # (600000 ended before the third once: 'process has exited'); 1 M runs about 2.8 s on its
    # own here, against 0.5 s for the three attaches (printed)
    iters = 1000000
    base = driver_run(iters)
    outs = [os.path.join(TMP, "cnt%d.bin" % i) for i in range(3)]
    res = []
    counted = ("cuFakeConstA", "cuCtxGetCurrent")

    def att(pid):
        t0 = time.monotonic()
        for i, out in enumerate(outs):
            extra = ("--count", ",".join(counted)) if i == 1 else ()
            # only the functions checked: a session records millions of calls a second, and the
            # traces are read by a Python reader
            res.append(cuhook("attach", "--agent", A.real_agent, "-o", out, "--duration", 0.03,
                              "--funcs", "cuFakeConst*,cuCtxGetCurrent", *extra, pid))
        print("  three attaches in %.2f s" % (time.monotonic() - t0))

    got = driver_run(iters, att)
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
        t0 = time.monotonic()
        for delay in (0, 0.001, 0.003, 0.006, 0.01, 0.015, 0.025, 0.05):
            p = subprocess.Popen([A.cuhook, "attach", "--force", "--agent", A.real_agent, "-o", out, str(pid)],
                                 stderr=subprocess.PIPE, text=True)
            time.sleep(delay)
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=30)
            runs.append((delay, p.returncode, err.strip().splitlines()[-1:] if err.strip() else []))
        # and one surely during the injection, whatever the machine's load made of the delays
        # above (all of them came before cuhook blocked SIGINT once, on a busy machine): once
        # -v says the threads are stopped
        p = subprocess.Popen([A.cuhook, "attach", "-v", "--force", "--agent", A.real_agent, "-o", out, str(pid)],
                             stderr=subprocess.PIPE, text=True)
        err = ""
        while "threads stopped in" not in err:
            line = p.stderr.readline()
            if not line:
                break
            err += line
        p.send_signal(signal.SIGINT)
        rest = p.communicate(timeout=30)[1]
        runs.append(("stopped", p.returncode, (err + rest).strip().splitlines()[-1:]))
        # one function: the session records millions of calls a second, read by a Python reader
        last["r"] = cuhook("attach", "--force", "--agent", A.real_agent, "-o", out, "--duration", 0.2,
                           "--funcs", "cuFakeConstB", pid)
        print("  the attaches in %.2f s" % (time.monotonic() - t0))

    got = driver_run(iters, att)
    for delay, rc, err in runs:
        check(rc in (0, -signal.SIGINT), "SIGINT after %s s: a clean detach (0) or cuhook killed before "
              "it started (-2)" % delay, "%d %s" % (rc, err))
    check(runs[-1][1] == 0, "the SIGINT sent while the threads were stopped: a clean detach", repr(runs[-1]))
    check(driver_checksum(got) == driver_checksum(base), "the program's results are unchanged")
    check(last["r"].returncode == 0, "a later attach works", last["r"].stderr)
    t = tracefile.read_trace(out)
    check(t.has_end and sum(t.entries.values()) > 0, "the later session recorded and closed its trace",
          "%s entries, END %s" % (sum(t.entries.values()), t.has_end))
    print("  SIGINT delays and exits: %s" % [(d, rc) for d, rc, _ in runs])


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
    read_trace = tracefile.read_trace
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
                closed = trace_closed(out)
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
                   "-o", out, "--force", "--duration", 0.05, t.pid)
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
    each works, its -v stopped times (attach and detach) stay under 5 s (a start that needed the
    lock would wait for it without end; how long a stop takes on a loaded 2-core machine is
    bench/attach_stall.py's business: 1,017 ms was seen once under load), it leaves no open file
    in the target, and the program's results hold."""
    need_real("fakecuda")
    read_trace = tracefile.read_trace
    t = Target(mode, 4, A.fakecuda)
    out = os.path.join(TMP, "lock.bin")
    try:
        fds = fd_count(t.pid)
        worst = 0.0
        for i in range(cycles):
            r = cuhook("attach", "-v", "--agent", A.real_agent, "-o", out, "--force", "--duration", 0.02, t.pid)
            check(r.returncode == 0, "attach %d of %d failed" % (i + 1, cycles), r.stderr)
            for phase in ("attach", "detach"):
                _, ms, _ = stopped_ms(r.stderr, phase)
                check(ms < 5000, "%s %d: threads stopped for %.1f ms" % (phase, i + 1, ms), r.stderr)
                worst = max(worst, ms)
            check(fd_count(t.pid) == fds, "attach %d: %d open files in the target, %d before" %
                  (i + 1, fd_count(t.pid), fds))
            check(trace_closed(out), "attach %d: trace closed" % (i + 1))
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
    read_trace = tracefile.read_trace
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


def case_real_attach_disk_full():
    # -o on a full filesystem (a 64 KiB tmpfs): the agent's write fails. cuhook attach says so on
    # its own stderr and exits 3; the process's stderr (someone else's terminal, or log) gets
    # nothing from cuhook; the program's results are unchanged
    need_real("driver_user", "fakecuda")
    if os.geteuid() != 0:
        raise Skip("needs root to mount a tmpfs")
    mnt = os.path.join(TMP, "full")
    os.makedirs(mnt)
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt], capture_output=True, text=True)
    if m.returncode != 0:
        raise Skip("cannot mount a tmpfs: " + m.stderr.strip())
    try:
        iters = 1000000
        base = driver_run(iters)
        p = subprocess.Popen([A.driver_user, "--threads", "4", "--iters", str(iters), A.fakecuda],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.3)
        r = cuhook("attach", "--agent", A.real_agent, "-o", os.path.join(mnt, "t.bin"), "--duration", 1, p.pid)
        out, err = p.communicate(timeout=300)
        check(p.returncode == 0, "driver_user failed", err[-500:])
        check(r.returncode == 3, "exit status 3: detached, the trace incomplete", "%d %s" % (r.returncode, r.stderr))
        check(re.search(r"trace is incomplete: writing the trace failed \(No space left on device\)", r.stderr),
              "cuhook says why", r.stderr)
        check("cuhook" not in err, "nothing from cuhook on the program's stderr", err)
        check(driver_checksum(out) == driver_checksum(base), "the program's results are unchanged")
    finally:
        subprocess.run(["umount", mnt])


def case_real_cycles():
    need_real("driver_user", "fakecuda")
    iters = 3000000
    base = driver_run(iters)
    fails = []

    def cycles(pid):
        t0 = time.monotonic()
        for i in range(100):
            r = cuhook("attach", "--force", "--agent", A.real_agent, "-o", os.path.join(TMP, "c.bin"), "--duration",
                       0.01, pid)
            if r.returncode != 0:
                fails.append(r.stderr)
                break
        print("  %d cycles in %.2f s" % (i + 1, time.monotonic() - t0))

    got = driver_run(iters, cycles)
    check(not fails, "an attach/detach cycle failed", fails[0] if fails else "")
    check(driver_checksum(got) == driver_checksum(base), "results unchanged after 100 cycles")


def held_per_thread(stderr, what):
    """{tid: (longest ms, total ms)} from -v's "WHAT: N threads held, ...; per thread ..." line."""
    m = re.search(r"^cuhook: %s: \d+ threads? held, longest [\d.]+ ms \(thread \d+\), most in all [\d.]+ ms; "
                  r"per thread \(ms, longest/total\): (.*)$" % what, stderr, re.M)
    check(m is not None, "-v tells how long each thread was held at the %s" % what, stderr[-2000:])
    return {int(t): (float(a), float(b)) for t, a, b in re.findall(r"(\d+) ([\d.]+)/([\d.]+)", m.group(1))}


def stall_felt(threads, period_us=1000):
    """stall_probe THREADS: one attach/detach with the real agent. Each worker's felt stall (its
    longest gap between two readings of the clock that overlaps a time cuhook held threads, less
    the one period it sleeps in every gap) against the hold -v reports for it: never shorter
    than the hold (checked). Returns (felt ms by tid, reported ms by tid, the threads whose felt
    stall is more than 2 ms from their hold)."""
    need_real("fakecuda", "stall_probe")
    p = subprocess.Popen([A.stall_probe, str(threads), str(period_us), A.fakecuda], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        check(line.startswith("ready"), "stall_probe did not get ready", repr(line))
        time.sleep(0.3)
        r = cuhook("attach", "-v", "--force", "--agent", A.real_agent, "-o", os.path.join(TMP, "s.bin"), "--duration", 0.3,
                   p.pid)
        check(r.returncode == 0, "attach failed", r.stderr)
        check("on a thread of the agent's own" in r.stderr, "the agent loaded on its own thread", r.stderr)
        at, de = held_per_thread(r.stderr, "attach"), held_per_thread(r.stderr, "detach")
        # the trace tells the attach's figures too, exactly as -v did
        notes = [t for _, t in tracefile.read_trace(os.path.join(TMP, "s.bin")).notes
                 if t.startswith("cuhook attach held the program's threads: ")]
        check(len(notes) == 1, "one NOTE of the threads held at the attach", repr(notes))
        in_note = {int(t): (float(a), float(b)) for t, a, b in
                   re.findall(r"(\d+) ([\d.]+)/([\d.]+)", notes[0].split("longest/total): ", 1)[1])}
        check(in_note == at, "the NOTE's figures are -v's", "%r\n%r" % (notes[0], at))
        windows = re.findall(r"(\d+) threads? let go, held from (\d+) to (\d+) ns \(CLOCK_MONOTONIC\)", r.stderr)
        check(len(windows) >= 3, "-v tells when threads were held (first stop, caller, start, detach)", r.stderr)
        caller = int(re.search(r"pthread_create at \S+ called on thread (\d+)", r.stderr).group(1))

        def gaps(wins):
            p.stdin.write("gaps %s\n" % " ".join("%s %s" % (a, b) for _, a, b in wins))
            p.stdin.flush()
            got = {}
            while True:
                line = p.stdout.readline()
                check(line != "", "stall_probe ended early")
                if line.startswith("end"):
                    return got
                f = line.split()
                got[int(f[1])] = int(f[3]) / 1e6

        # the windows where every thread was held; the one where the thread making the remote
        # calls alone was (longer: other threads' natural gaps would fall into it) for that one
        gap = gaps([w for w in windows if w[0] != "1"])
        if caller in gap:
            gap[caller] = gaps(windows)[caller]
        check(len(gap) == threads, "%d workers reported" % threads, repr(gap))
        out, _ = p.communicate("quit\n", timeout=30)
        check(p.returncode == 0 and "iterations" in out, "stall_probe ran on", out)
        period = period_us / 1000
        keep = period + 0.3  # a gap shorter than this is not kept by the probe
        felt, reported, apart = {}, {}, []
        for tid in gap:
            check(tid in at and tid in de, "worker %d held at the attach and at the detach" % tid,
                  "attach %r detach %r" % (sorted(at), sorted(de)))
            reported[tid] = max(at[tid][0], de[tid][0])
            # every hold is felt: the thread cannot take a reading while held (0.1: the interrupt
            # lands a few us after it is sent, and the figures are rounded)
            check(reported[tid] <= max(gap[tid], keep) + 0.1,
                  "worker %d: held %.2f ms, its longest gap %.2f ms: held longer than it felt" %
                  (tid, reported[tid], gap[tid]))
            # what it felt, its iteration's excess over the period it sleeps, is the hold: a hold
            # that began while it slept shows up to one period shorter, one that ended before its
            # scheduler let it run longer; within 2 ms
            felt[tid] = max(gap[tid], period) - period
            # With more threads than cores (128 on this machine's 2, shared with other jobs), a
            # thread let go may wait for a CPU for milliseconds more: bench/attach_stall.py
            # measures that side
            if abs(felt[tid] - reported[tid]) > 2.0:
                apart.append("worker %d: felt %.2f ms (gap %.2f), reported %.2f ms: more than 2 ms apart" %
                             (tid, felt[tid], gap[tid], reported[tid]))
        return felt, reported, apart
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def case_real_stall_felt():
    # what -v reports per thread is what each of 16 threads of the program measured, within 2 ms.
    # Other jobs on this machine's 2 cores can keep a thread from running for longer after it is
    # let go: up to 3 attaches, one must have every thread within 2 ms
    for attempt in range(3):
        felt, rep, apart = stall_felt(16)
        print("felt max %.2f ms, reported max %.2f ms, %d threads more than 2 ms apart" %
              (max(felt.values()), max(rep.values()), len(apart)))
        if not apart:
            return
    check(False, "felt and reported within 2 ms in one of 3 attaches", "\n".join(apart))


def case_real_stall_felt128():
    # 128 threads: each held at the attach and at the detach, and each hold felt
    # (bench/attach_stall.py compares the figures and measures the stall)
    felt, rep, apart = stall_felt(128)
    print("felt max %.2f ms, reported max %.2f ms, %d threads more than 2 ms apart" %
          (max(felt.values()), max(rep.values()), len(apart)))


def case_attach_prepare_held():
    # the dummy's prepare takes 300 ms on the agent's own thread: no program thread is held
    # meanwhile (before, the thread making the calls was held for all of it)
    t = Target("loop", 4, env={"INJ_DUMMY_PREPARE_MS": "300"})
    try:
        r = attach(t.pid, "--duration", 0.05, "-v")
        check(r.returncode == 0, "attach failed", r.stderr)
        m = re.search(r"before, while they ran: dlopen ([\d.]+), prepare ([\d.]+)", r.stderr)
        check(m is not None and float(m.group(2)) >= 300, "prepare took its 300 ms", r.stderr)
        held = held_per_thread(r.stderr, "attach")
        check(len(held) == 5, "5 threads held", repr(held))
        worst = max(v[0] for v in held.values())
        check(worst < 150, "no thread held during prepare: longest hold %.2f ms" % worst, r.stderr)
        _, mism, _ = parse_loop(t.finish())
        check(mism == 0, "target unharmed")
    finally:
        t.kill()


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
    ap.add_argument("--stall-probe")
    ap.add_argument("--case", required=True, help="case_CASE below (tests/inject/meson.build lists them)")
    A = ap.parse_args()
    for k in ("cuhook", "agent", "agent_noprep", "target", "static_target", "slowctor", "real_agent", "park_lib",
              "driver_user", "fakecuda", "follow_target", "prepare_target", "stall_probe"):
        if getattr(A, k):
            setattr(A, k, os.path.abspath(getattr(A, k)))
    run_case(globals(), "case_", A.case, "cuhook-inject-", mode=0o777)  # some cases run as another user


if __name__ == "__main__":
    main()
