#!/usr/bin/env python3
"""The kill harness (suite `kill`): SIGKILL cuhook at every phase of `cuhook run`, `cuhook attach`
and the detach, and at random delays, beside a 12-thread program that checks every result it
gets from the stand-in libcuda (kill_target.c); then see what became of the program.

    test_kill.py --cuhook C --agent A --target T --fakecuda F --case harness [--per-phase N]
    test_kill.py ... --case harness --full          (>= 500 kills; docs/injection.md has a run)
    test_kill.py ... --case harness --workers N     (N processes share the kills; default 3)

A phase is a line cuhook prints with -v (kill as soon as it appears, or a short random time
after it), or a random delay from cuhook's start or from the detach's beginning (SIGINT). After
each kill that landed (cuhook was still running):
  - the program must not die: it must answer, finish its rounds and exit 0 with every result
    right;
  - it must not be left stopped: no thread in state T or t once things settled (a process left in
    group-stop by a dead tracer would stay so);
  - after `attach`, the agent must not go on writing: the trace file, and any file in the
    program's working directory, must stop growing; and a new `cuhook attach` must work and
    record (no "already tracing");
  - no process may be left behind: the harness is a child subreaper, so whatever cuhook leaves
    (a stopped child it forked) becomes its child and is found, killed and counted.
Under `cuhook run` the same holds from the moment cuhook has seized its child: no
PTRACE_O_EXITKILL, the program's entry is reported by a stub that goes on by itself and remote
calls complete by themselves, so a program killed or stopped after the seize is a failure like
any other. Only a child that cuhook had not seized yet (it waits for cuhook's word on a pipe and
exits 125 at EOF, before the exec: not one instruction of the program ran), or none forked yet,
counts as "not started". Any of the others is a failure; the table printed at the end counts
them per phase, and the deaths per phase by how the program ended.

The other cases: run_orphan (defect 10: cuhook run killed between fork and the seize of its
child, made certain by fork_delay.c preloaded into cuhook), watch_killed and watch_deadline (the
agent notices that the cuhook attach that started it is gone, or late past its --duration, and
ends its trace by itself; watch_killed also under a size cap reached before, watch_deadline_full
with a write that failed before, which the late detach must still tell), watch_probe (the same watch in the cases cuhook cannot produce on cue,
with watch_probe.py starting the agent itself)."""
import argparse
import concurrent.futures
import ctypes
import json
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from cuhooktest import SKIP, Fatal, Problems, need_file, run_case
from cuhooktest import tracefile

A = None
THREADS = 12
SETTLE_S = 0.25        # after a kill, before looking at the program's state
GROWTH_S = 0.3         # the trace must not grow over this, once settled
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise Fatal("prctl(PR_SET_CHILD_SUBREAPER): errno %d" % ctypes.get_errno())


class Lines:
    """Lines from a pipe, read with deadlines (a child holding the pipe open must not hang us)."""

    def __init__(self, f):
        self.fd = f.fileno()
        self.buf = b""
        self.eof = False
        self.seen = []

    def next(self, deadline):
        while True:
            if b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                self.seen.append(line.decode(errors="replace"))
                return self.seen[-1]
            left = deadline - time.monotonic()
            if self.eof or left <= 0:
                return None
            r, _, _ = select.select([self.fd], [], [], left)
            if not r:
                return None
            chunk = os.read(self.fd, 65536)
            if chunk:
                self.buf += chunk
            else:
                self.eof = True

    def wait_for(self, pattern, timeout):
        deadline = time.monotonic() + timeout
        while True:
            line = self.next(deadline)
            if line is None:
                return None
            if re.search(pattern, line):
                return line

    def rest(self, timeout=0.5):
        deadline = time.monotonic() + timeout
        while self.next(deadline) is not None:
            pass
        return "\n".join(self.seen)


def children():
    """Our child processes now (reparented orphans included: we are a subreaper)."""
    pids = set()
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/children" % tid) as f:
                pids.update(int(p) for p in f.read().split())
        except OSError:
            pass
    return pids


def proc_state(pid):
    """The states of every thread of pid ('R', 'S', 'T', 't', 'Z'...); [] when it is gone."""
    out = []
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                st = f.read()
            out.append(st[st.rindex(")") + 2])
        except (OSError, ValueError):
            pass
    return out


def stopped(states):
    return any(s in "Tt" for s in states)


def dir_sizes(paths, d):
    sizes = {p: os.path.getsize(p) for p in paths if os.path.exists(p)}
    for n in os.listdir(d):
        p = os.path.join(d, n)
        if os.path.isfile(p):
            sizes[p] = os.path.getsize(p)
    return sizes


def last_line(text):
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1] if lines else ""


def describe_status(rc):
    return "signal %s" % signal.Signals(-rc).name if rc < 0 else "exit %d" % rc


def results_ok(rc, last):
    m = re.match(r"rounds (\d+) bad (\d+)", last)
    return rc == 0 and m is not None and int(m.group(2)) == 0 and int(m.group(1)) > 0


# ---- one kill ---------------------------------------------------------------------------------

class Phase:
    def __init__(self, name, cmd, trigger=None, delay=(0, 0), detach=False):
        self.name, self.cmd, self.trigger, self.delay, self.detach = name, cmd, trigger, delay, detach


PHASES = [
    Phase("attach: first stop", "attach", r"\d+ threads? stopped in"),
    Phase("attach: threads released", "attach", r"run again while the agent"),
    Phase("attach: dlopen", "attach", r"dlopen at"),
    Phase("attach: dlopen+0.5-4 ms", "attach", r"dlopen at", (0.0005, 0.004)),
    Phase("attach: pthread_create", "attach", r"pthread_create at"),
    Phase("attach: own thread works", "attach", r"no thread held: a thread of the agent's own", (0, 0.004)),
    Phase("attach: stop again", "attach", r"agent prepared in"),
    Phase("attach: start", "attach", r"stopped again in"),
    Phase("attach: fixup", "attach", r"agent started:"),
    Phase("attach: window", "attach", r"tracing process", (0, 0.05)),
    Phase("attach: 1-200 ms", "attach", None, (0.001, 0.2)),
    Phase("detach: signalled", "attach", r"detaching", detach=True),
    Phase("detach: stop", "attach", r"detaching", (0, 0.001), detach=True),
    Phase("detach: 0-3 ms", "attach", None, (0, 0.003), detach=True),
    Phase("run: 0-3 ms", "run", None, (0, 0.003)),
    Phase("run: dlopen", "run", r"dlopen at"),
    Phase("run: dlopen+0.5-4 ms", "run", r"dlopen at", (0.0005, 0.004)),
    Phase("run: fixup", "run", r"agent started:"),
    Phase("run: 1-200 ms", "run", None, (0.001, 0.2)),
]

COUNTERS = ["kills", "missed", "not started", "deaths", "left stopped", "still writing",
            "reattach failed", "wrong results", "strays"]
FAILURES = ["deaths", "left stopped", "still writing", "reattach failed", "wrong results", "strays"]


class Tally:
    def __init__(self):
        self.by_phase = {p.name: dict.fromkeys(COUNTERS, 0) for p in PHASES}
        self.notes = []
        self.causes = {}  # phase name: {how the program ended: deaths}

    def add(self, phase, what, note=None):
        self.by_phase[phase.name][what] += 1
        if note and len(self.notes) < 40:
            self.notes.append("%s: %s: %s" % (phase.name, what, note))

    def death(self, phase, cause, note):
        self.add(phase, "deaths", note)
        by = self.causes.setdefault(phase.name, {})
        by[cause] = by.get(cause, 0) + 1

    def total(self, what):
        return sum(c[what] for c in self.by_phase.values())

    def table(self):
        w = max(len(n) for n in self.by_phase) + 1
        head = "%-*s" % (w, "phase") + "".join("%9s" % c.replace(" ", "-")[:8] for c in COUNTERS)
        rows = [head]
        for name, c in self.by_phase.items():
            rows.append("%-*s" % (w, name) + "".join("%9d" % c[k] for k in COUNTERS))
        rows.append("%-*s" % (w, "total") + "".join("%9d" % self.total(k) for k in COUNTERS))
        total = {}
        for name, by in self.causes.items():
            rows.append("deaths by cause, %s: %s" % (name, ", ".join("%s %d" % kv for kv in sorted(by.items()))))
            for cause, n in by.items():
                total[cause] = total.get(cause, 0) + n
        if total:
            rows.append("deaths by cause: " + ", ".join("%s %d" % kv for kv in sorted(total.items())))
        return "\n".join(rows)


def kill_at(phase, cu, err, t0, rng):
    """Wait for the phase's moment and SIGKILL cuhook. False if cuhook ended first, or never got
    there (it is killed anyway, and the kill does not count)."""
    if phase.trigger:
        line = err.wait_for(phase.trigger, 20)
        if line is None:
            cu.kill()
            return False
    lo, hi = phase.delay
    d = rng.uniform(lo, hi)
    if d:
        time.sleep(max(0.0, d - (time.monotonic() - t0 if not phase.trigger else 0)))
    if cu.poll() is not None:
        return False
    cu.send_signal(signal.SIGKILL)
    return True


def sweep_strays(tally, phase):
    """Children we did not start ourselves: what cuhook left behind."""
    for pid in children():
        states = proc_state(pid)
        if states and not all(s == "Z" for s in states):
            tally.add(phase, "strays", "pid %d states %s" % (pid, "".join(states)))
            if stopped(states):
                tally.add(phase, "left stopped", "orphan %d" % pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def say_quit(pipe):
    try:
        pipe.write(b"quit\n")
        pipe.flush()
    except BrokenPipeError:
        pass


def after_kill(tally, phase, pid, wait, stdin, out, err, trace, work, attach_again):
    """What must hold of a program that ran (pid) once cuhook was killed beside it: wait(timeout)
    gives its exit (a returncode) or None; stdin and out are its pipes."""
    time.sleep(SETTLE_S)
    states = proc_state(pid)
    if stopped(states):
        tally.add(phase, "left stopped", "states %s" % "".join(states))
        os.kill(pid, signal.SIGCONT)
    if wait(0) is None and attach_again:
        before = dir_sizes([trace], work)
        time.sleep(GROWTH_S)
        after = dir_sizes([trace], work)
        grew = {os.path.basename(p): (before.get(p, 0), s) for p, s in after.items() if s != before.get(p, 0)}
        if grew:
            tally.add(phase, "still writing", repr(grew))
        again = os.path.join(work, "again.bin")
        r = subprocess.run([A.cuhook, "attach", "--agent", A.agent, "-o", again, "--duration", "0.05", str(pid)],
                           capture_output=True, text=True, timeout=60)
        ok = r.returncode == 0
        if ok:
            t = tracefile.read_trace(again)
            ok = t.has_end and sum(t.entries.values()) > 0
        if not ok:
            tally.add(phase, "reattach failed", last_line(r.stderr) or "?")
    rc = wait(0)
    last = ""
    if rc is None:
        say_quit(stdin)
        rc = wait(30)
        last = out.wait_for(r"^rounds \d+ bad \d+", 2) or ""
    if rc is None:
        os.kill(pid, signal.SIGKILL)
        wait(10)
        tally.death(phase, "hung", "did not end when told")
    elif rc < 0:
        tally.death(phase, describe_status(rc), "%s; cuhook's last line: %s" % (describe_status(rc),
                                                                                last_line(err.rest())))
    elif not results_ok(rc, last):
        tally.add(phase, "wrong results", "%s %r" % (describe_status(rc), last))
    sweep_strays(tally, phase)


def one_attach(phase, tally, rng, work):
    trace = os.path.join(work, "trace.bin")
    prog = subprocess.Popen([A.target, A.fakecuda, str(THREADS)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, cwd=work)
    out = Lines(prog.stdout)
    if out.wait_for(r"^ready", 30) is None:
        prog.kill()
        prog.wait()
        raise Fatal("kill_target did not get ready: " + out.rest())
    cu = subprocess.Popen([A.cuhook, "attach", "-v", "--agent", A.agent, "-o", trace, str(prog.pid)],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = Lines(cu.stderr)
    t0 = time.monotonic()
    landed = False
    if phase.detach:
        if err.wait_for(r"tracing process", 30) is not None:
            cu.send_signal(signal.SIGINT)
            t0 = time.monotonic()
            landed = kill_at(phase, cu, err, t0, rng)
        else:
            cu.kill()
    else:
        landed = kill_at(phase, cu, err, t0, rng)
    rc_cu = cu.wait()
    landed = landed and rc_cu == -signal.SIGKILL
    if not landed:
        tally.add(phase, "missed", "cuhook %s: %s" % (describe_status(rc_cu), last_line(err.rest())))
    else:
        tally.add(phase, "kills")

    def wait(timeout):
        try:
            return prog.wait(timeout) if timeout else prog.poll()
        except subprocess.TimeoutExpired:
            return None

    after_kill(tally, phase, prog.pid, wait, prog.stdin, out, err, trace, work, attach_again=landed)


def one_run(phase, tally, rng, work):
    trace = os.path.join(work, "trace.bin")
    cu = subprocess.Popen([A.cuhook, "run", "-v", "--agent", A.agent, "-o", trace, "--", A.target, A.fakecuda,
                           str(THREADS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, cwd=work)
    err, out = Lines(cu.stderr), Lines(cu.stdout)
    t0 = time.monotonic()
    landed = kill_at(phase, cu, err, t0, rng)
    if not landed:
        # cuhook run ended by itself: it failed (it waits for the program, which waits for us)
        cu.kill()
        rc_cu = cu.wait()
        tally.add(phase, "missed", "cuhook %s: %s" % (describe_status(rc_cu), last_line(err.rest())))
        time.sleep(SETTLE_S)
        sweep_strays(tally, phase)
        return
    rc_cu = cu.wait()
    if rc_cu != -signal.SIGKILL:
        raise Fatal("cuhook run ended with %s rather than by our SIGKILL" % describe_status(rc_cu))
    tally.add(phase, "kills")
    # cuhook's child, if it forked one, is ours now (we are a subreaper), a zombie included
    kids = children()
    if not kids:
        tally.add(phase, "not started")  # killed before its fork
        return
    if len(kids) != 1:
        raise Fatal("cuhook run left %d processes, not one: %s" % (len(kids), sorted(kids)))
    pid = kids.pop()
    status = {}

    def wait(timeout):
        end = time.monotonic() + (timeout or 0)
        while "rc" not in status:
            try:
                p, st = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                raise Fatal("the program %d is not our child after cuhook died (no subreaper?)" % pid)
            if p == pid:
                status["rc"] = -os.WTERMSIG(st) if os.WIFSIGNALED(st) else os.WEXITSTATUS(st)
                break
            if time.monotonic() >= end:
                return None
            time.sleep(0.01)
        return status["rc"]

    # The program runs (it says its pid first thing), or the child, never seized or never told
    # to go on, exits 125 before its exec.
    started, deadline = None, time.monotonic() + 10
    while started is None and time.monotonic() < deadline and wait(0) is None:
        started = out.wait_for(r"^pid \d+", 0.05)
    if started is None:
        started = out.wait_for(r"^pid \d+", 0.05)
    if started is None and wait(0) == 125:
        tally.add(phase, "not started")
        sweep_strays(tally, phase)
        return
    if started is not None and int(started.split()[1]) != pid:
        raise Fatal("the program says it is %s, cuhook's child was %d" % (started, pid))
    after_kill(tally, phase, pid, wait, cu.stdin, out, err, trace, work, attach_again=False)


def harness_worker(order, seed):
    """One worker's share of the kills, in a process of its own: a subreaper of its own, so that
    what one worker's cuhook leaves behind is never counted against another's. Its tally."""
    become_subreaper()
    rng = random.Random(seed)
    tally = Tally()
    for name in order:
        phase = next(p for p in PHASES if p.name == name)
        work = tempfile.mkdtemp(prefix="cuhook-kill-")
        try:
            (one_attach if phase.cmd == "attach" else one_run)(phase, tally, rng, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return tally


def merge_tallies(tallies):
    tally = Tally()
    for t in tallies:
        for name, counts in t.by_phase.items():
            for k, n in counts.items():
                tally.by_phase[name][k] += n
        tally.notes += t.notes
        for name, by in t.causes.items():
            mine = tally.causes.setdefault(name, {})
            for cause, n in by.items():
                mine[cause] = mine.get(cause, 0) + n
    tally.notes = tally.notes[:40]
    return tally


def case_harness():
    # The kills are shared among --workers processes, each with its own program: most of a kill's
    # time is waiting (the program settling, the trace watched for growth), so three workers cut
    # the harness's time to a third, while each kill still lands at its phase (a trigger is a line
    # cuhook prints; the delays after it are a few ms).
    rng = random.Random(A.seed)
    per_phase = A.per_phase if not A.full else 36
    t_start = time.monotonic()
    order = [p.name for p in PHASES for _ in range(per_phase)]
    rng.shuffle(order)
    workers = max(1, min(A.workers, len(order)))
    pending = []
    sys.stdout.flush()
    for w in range(workers):
        r, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                res = {"tally": harness_worker(order[w::workers], A.seed + w).__dict__}
            except Fatal as e:
                res = {"fatal": str(e)}
            except BaseException as e:  # anything else: said, not lost in a child
                res = {"fatal": "worker %d: %r" % (w, e)}
            with os.fdopen(wfd, "w") as f:
                json.dump(res, f)
            os._exit(0)
        os.close(wfd)
        pending.append((pid, r))
    tallies, fatal = [], []
    for pid, r in pending:
        with os.fdopen(r) as f:
            text = f.read()
        _, st = os.waitpid(pid, 0)
        if not text:
            fatal.append("a worker ended without its tally (status %d)" % st)
            continue
        res = json.loads(text)
        if "fatal" in res:
            fatal.append(res["fatal"])
            continue
        t = Tally()
        t.__dict__.update(res["tally"])
        tallies.append(t)
    if fatal:
        raise Fatal("; ".join(fatal))
    tally = merge_tallies(tallies)
    print(tally.table())
    print("%d kills in %.0f s (seed %d, %d per phase, %d workers)" % (tally.total("kills"),
                                                                      time.monotonic() - t_start, A.seed,
                                                                      per_phase, workers))
    for n in tally.notes:
        print("  " + n)
    problems = Problems()
    for k in FAILURES:
        problems.check(tally.total(k) == 0, "%d %s" % (tally.total(k), k))
    if A.full:
        problems.check(tally.total("kills") >= 500, "only %d kills landed" % tally.total("kills"))
    problems.exit()


# ---- defect 10: cuhook run killed between fork and seize --------------------------------------

def case_run_orphan():
    """cuhook run is killed while its parent side sleeps right after fork() (fork_delay.c): the
    child must neither stay behind stopped nor run the program."""
    need_file(A.fork_delay, "fork_delay.so")
    become_subreaper()
    tally = Tally()
    phase = Phase("run: between fork and seize", "run")
    tally.by_phase = {phase.name: dict.fromkeys(COUNTERS, 0)}
    problems = Problems()
    env = dict(os.environ, LD_PRELOAD=A.fork_delay, KILL_FORK_DELAY_MS="300")
    runs = 10
    for i in range(runs):
        work = tempfile.mkdtemp(prefix="cuhook-kill-")
        try:
            cu = subprocess.Popen([A.cuhook, "run", "--agent", A.agent, "-o", os.path.join(work, "t.bin"), "--",
                                   A.target, A.fakecuda, "2"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, cwd=work, env=env)
            err, out = Lines(cu.stderr), Lines(cu.stdout)
            line = err.wait_for(r"fork_delay: child \d+", 20)
            problems.check(line is not None, "run %d: fork_delay.so said nothing (not preloaded?)" % i)
            time.sleep(0.02 + 0.1 * (i % 3))  # the child has long reached its wait by then
            cu.send_signal(signal.SIGKILL)
            if cu.wait() == -signal.SIGKILL:
                tally.add(phase, "kills")
            else:
                tally.add(phase, "missed")
            time.sleep(SETTLE_S)
            started = out.wait_for(r"^pid \d+", 0.1)
            if started:
                tally.add(phase, "wrong results", "the program ran although cuhook died before it seized it")
            sweep_strays(tally, phase)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print(tally.table())
    for n in tally.notes:
        print("  " + n)
    problems.check(tally.total("kills") == runs, "every kill landed")
    for k in FAILURES:
        problems.check(tally.total(k) == 0, "%d %s" % (tally.total(k), k))
    problems.exit()


# ---- the agent notices its injector is gone ---------------------------------------------------

class Target:
    def __init__(self, work, env=None):
        self.p = subprocess.Popen([A.target, A.fakecuda, str(THREADS)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, cwd=work, env=env)
        self.out = Lines(self.p.stdout)
        if self.out.wait_for(r"^ready", 30) is None:
            self.p.kill()
            raise Fatal("kill_target did not get ready")
        self.pid = self.p.pid

    def finish(self, problems):
        self.p.stdin.write(b"quit\n")
        self.p.stdin.flush()
        rc = self.p.wait(30)
        last = self.out.wait_for(r"^rounds", 2) or ""
        problems.check(results_ok(rc, last), "the program ended with every result right: %s %r" %
                       (describe_status(rc), last))


def size_settles(path, problems, bound):
    """The trace stops growing within `bound` seconds and then stays the same for 0.5 s."""
    end = time.monotonic() + bound
    last = -1
    while time.monotonic() < end:
        s = os.path.getsize(path)
        if s == last:
            break
        last = s
        time.sleep(0.2)
    s1 = os.path.getsize(path)
    time.sleep(0.5)
    s2 = os.path.getsize(path)
    return problems.check(s1 == s2, "the trace still grows %.1f s after: %d -> %d bytes" % (bound, s1, s2))


def check_closed_with_note(path, pattern, problems, recorded=True):
    t = tracefile.read_trace(path)
    problems.check(t.has_end, "the trace has its END block")
    notes = [n for _, n in t.notes]
    problems.check(any(re.search(pattern, n) for n in notes), "a note says why: %r in %r" % (pattern, notes))
    if recorded:
        problems.check(sum(t.entries.values()) > 0, "calls were recorded before")


def attach_again_works(pid, work, problems):
    again = os.path.join(work, "again.bin")
    r = subprocess.run([A.cuhook, "attach", "--agent", A.agent, "-o", again, "--duration", "0.2", str(pid)],
                       capture_output=True, text=True, timeout=60)
    if problems.check(r.returncode == 0, "a later attach works: " + r.stderr.strip()):
        t = tracefile.read_trace(again)
        problems.check(t.has_end and sum(t.entries.values()) > 0, "the later attach recorded and closed its trace")


def start_attach(pid, trace, *extra):
    """cuhook attach, once it says it traces; (its Popen, when it said so)."""
    cu = subprocess.Popen([A.cuhook, "attach", "--agent", A.agent, "-o", trace, *extra, str(pid)],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = Lines(cu.stderr)
    if err.wait_for(r"tracing process", 30) is None:
        cu.kill()
        raise Fatal("cuhook attach did not attach: " + err.rest())
    return cu, time.monotonic()


def case_watch_killed():
    """cuhook attach SIGKILLed while tracing: the agent ends the trace by itself (END and a note),
    the program runs on, and a later attach works. Three times: watching cuhook with a pidfd,
    with pidfd_open refused in the program (kernels < 5.3), through /proc, and with a size cap
    reached before the kill (--max-size 64K): the file stays within it and has both the cap's
    note and the one saying why the agent ended the trace (room is kept for both)."""
    problems = Problems()
    cap = 64 << 10

    # the three at once, each with its own program: most of each is waiting
    def one(no_pidfd, extra):
        work = tempfile.mkdtemp(prefix="cuhook-kill-")
        try:
            t = Target(work, dict(os.environ, KILL_TARGET_NO_PIDFD=no_pidfd))
            trace = os.path.join(work, "trace.bin")
            try:
                cu, _ = start_attach(t.pid, trace, *extra)
                # 12 threads fill 64K within a round or two; 0.5 s lets the cap be reached first
                time.sleep(0.5 if extra else 0.2)
                if extra:
                    problems.check(os.path.getsize(trace) > cap - 4096, "the cap is reached before the kill: "
                                   "%d bytes" % os.path.getsize(trace))
                cu.send_signal(signal.SIGKILL)
                cu.wait()
                # one writer round (flush_ms, 50) to notice, one to close: 1 s is ample
                if size_settles(trace, problems, 1.0):
                    check_closed_with_note(trace, r"cuhook attach \(pid %d\), which started this trace, is gone" %
                                           cu.pid, problems)
                    if extra:
                        problems.check(os.path.getsize(trace) <= cap, "within the cap: %d bytes" %
                                       os.path.getsize(trace))
                        check_closed_with_note(trace, r"trace size cap of %d bytes reached" % cap, problems)
                attach_again_works(t.pid, work, problems)
                t.finish(problems)
            finally:
                t.p.kill()
                t.p.wait()
        finally:
            shutil.rmtree(work, ignore_errors=True)

    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        for f in [pool.submit(one, no_pidfd, extra) for no_pidfd, extra in
                  (("0", ()), ("1", ()), ("0", ("--max-size", "64K")))]:
            f.result()  # a Fatal raised in a round is raised here
    problems.exit()


def watch_deadline(problems, work, trace_dir, full):
    """cuhook attach --duration, SIGSTOPped while tracing, its trace in trace_dir (full: a 64 KiB
    tmpfs, where the agent's writes fail). The agent ends the trace by itself at the deadline
    plus the grace (not before), and cuhook's late detach, once continued, still takes the jumps
    out and exits 0, or 3 with the agent's message when the trace could not be written."""
    duration, call_timeout = 0.3, 0.5
    grace = 5 + 2 * call_timeout  # src/cli/inject_opts.c: DEADLINE_GRACE_MS + 2 call timeouts
    t = Target(work)
    trace = os.path.join(trace_dir, "trace.bin")
    cu = None
    try:
        # the agent's deadline counts from its start: after t0, before cuhook says it traces
        t0 = time.monotonic()
        # one function: the trace grows for the whole grace (~6 s), and is read by a Python
        # reader (all 18 would be 3x10^6 records)
        cu, t_attached = start_attach(t.pid, trace, "--duration", str(duration), "--call-timeout",
                                      str(call_timeout), "--funcs", "cuMemAlloc_v2")
        cu.send_signal(signal.SIGSTOP)
        time.sleep(max(0.0, t0 + duration + grace - 1.5 - time.monotonic()))
        if not full:
            early = tracefile.read_trace(trace, growing=True)
            problems.check(not early.has_end, "the agent waits for the grace before ending the trace itself")
        time.sleep(max(0.0, t_attached + duration + grace + 0.3 - time.monotonic()))
        if size_settles(trace, problems, 1.0) and not full:
            check_closed_with_note(trace, r"cuhook attach \(pid %d\) did not end this trace by its deadline" % cu.pid,
                                   problems)
        cu.send_signal(signal.SIGCONT)
        _, e = cu.communicate(timeout=30)
        e = e.decode()
        if full:
            problems.check(cu.returncode == 3 and re.search(r"trace is incomplete: writing the trace failed \(No "
                                                            r"space left on device\)", e),
                           "cuhook's late detach tells the failed write, exit 3: %d %s" % (cu.returncode, e))
        else:
            problems.check(cu.returncode == 0, "cuhook's late detach succeeds: %d %s" % (cu.returncode, e))
        attach_again_works(t.pid, work, problems)
        t.finish(problems)
    finally:
        if cu and cu.poll() is None:
            cu.send_signal(signal.SIGCONT)
            cu.kill()
            cu.wait()
        t.p.kill()
        t.p.wait()


def case_watch_deadline():
    problems = Problems()
    work = tempfile.mkdtemp(prefix="cuhook-kill-")
    try:
        watch_deadline(problems, work, work, full=False)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    problems.exit()


def case_watch_deadline_full():
    """watch_deadline with the trace on a full file system (a 64 KiB tmpfs: needs root)."""
    if os.geteuid() != 0:
        print("SKIP: needs root to mount a tmpfs")
        sys.exit(SKIP)
    problems = Problems()
    work = tempfile.mkdtemp(prefix="cuhook-kill-")
    mnt = os.path.join(work, "full")
    os.makedirs(mnt)
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt], capture_output=True, text=True)
    if m.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        print("SKIP: cannot mount a tmpfs: " + m.stderr.strip())
        sys.exit(SKIP)
    try:
        watch_deadline(problems, work, mnt, full=True)
    finally:
        subprocess.run(["umount", mnt])
        shutil.rmtree(work, ignore_errors=True)
    problems.exit()


def case_watch_probe():
    """The watch where cuhook cannot misbehave on cue (watch_probe.py starts the agent itself):
    an injector gone before the watch began, and a pidfd the program closed and reused."""
    problems = Problems()
    probe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "watch_probe.py")
    for mode in ("gone-before", "pidfd-closed"):
        work = tempfile.mkdtemp(prefix="cuhook-kill-")
        try:
            trace = os.path.join(work, "trace.bin")
            r = subprocess.run([sys.executable, probe, A.agent, A.fakecuda, trace, mode], capture_output=True,
                               text=True, timeout=60)
            if not problems.check(r.returncode == 0, "%s: the probe failed: %s %s" % (mode, r.stdout, r.stderr)):
                continue
            if mode == "pidfd-closed":
                problems.check("active_before_kill 1" in r.stdout, "pidfd-closed: the watch went on through "
                               "/proc while the injector lived: %s" % r.stdout.strip())
                problems.check("fd_kept 1" in r.stdout, "pidfd-closed: the agent left the program's descriptor "
                               "alone: %s" % r.stdout.strip())
            if size_settles(trace, problems, 1.0):
                check_closed_with_note(trace, r"cuhook attach \(pid \d+\), which started this trace, is gone", problems,
                                       recorded=mode == "pidfd-closed")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    problems.exit()


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--agent", required=True, help="the real agent, libcuhook.so")
    ap.add_argument("--target", required=True, help="kill_target")
    ap.add_argument("--fakecuda", required=True)
    ap.add_argument("--fork-delay", help="fork_delay.so (run_orphan)")
    ap.add_argument("--case", required=True, help="case_CASE below (tests/kill/meson.build lists them)")
    ap.add_argument("--per-phase", type=int, default=3, help="kills per phase (run_orphan: 10 runs)")
    ap.add_argument("--full", action="store_true", help="36 kills per phase: >= 500 landed in all")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--workers", type=int, default=3, help="harness: processes sharing the kills, each with "
                    "its own program")
    A = ap.parse_args()
    for k in ("cuhook", "agent", "target", "fakecuda", "fork_delay"):
        if getattr(A, k):
            setattr(A, k, os.path.abspath(getattr(A, k)))
        if k != "fork_delay":
            need_file(getattr(A, k), k)
    if A.seed is None:
        A.seed = random.randrange(1 << 30)
    run_case(globals(), "case_", A.case)  # each case makes and deletes its own directories


if __name__ == "__main__":
    main()
