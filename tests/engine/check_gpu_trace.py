#!/usr/bin/env python3
"""The GPU side (`--gpu`, agent option gpu=1) on the stand-in libcuda and the stand-in libcupti
(tests/fakecupti), with tests/targets/gpu_work, whose GPU work is known exactly
(tests/targets/gpu_workload.h). The trace is read with tracefile.py, not `cuhook report`.

--mode run: `cuhook run --gpu --cupti STAND-IN` and `cuhook run` without --gpu, beside an
  untraced run. With --gpu: one session, STARTED (CUPTI's path) then STOPPED (the GPU records
  written, 0 dropped); every kernel, graph kernel, copy and memset gpu_work says it submitted is
  in the trace once, with its name, grid, block, shared memory, registers, stream, graph ids,
  bytes, kind and value; each is linked (tracefile.gpu_link: correlation id, then the one call
  of the same thread and function containing its API record) to a call of the function that
  submits it, 0 unlinked; every recorded submitting call has exactly one API record, and the
  work a call submits starts at or after the call's API start; the API trace is complete (each
  function's calls as gpu_work counts them: CUPTI's thread adds none). Without --gpu: no GPU
  block, and the same calls, thread by thread, as with it. The program's output is the
  untraced run's in both.
--mode attach: gpu_work --loop, `cuhook attach --gpu` twice (each window ended by SIGINT), then
  a third time, SIGKILLed (the agent ends the trace and the GPU session by itself): each trace
  has its own session (STARTED, STOPPED) with GPU work in it, 0 unlinked, every submitting call
  made inside the session's span has exactly one API record and its work; each window's
  correlation ids all come after the one before's (no work of one window in another); the
  stand-in is attached to the driver during each window and detached after each (cuptiFinalize:
  gpu_work's "profiler" line on SIGUSR1); the program ends as it should.
--mode fork: `cuhook run --follow --gpu` on tests/inject/inj_follow quit (a fork child that
  ends with _exit, a parent that ends with _exit): the parent's trace has its session, STARTED
  then STOPPED (the _exit hook stops it), the child's none, and one NOTE saying a fork child
  records no GPU work; both have their calls.
--mode subscribe: gpu_work --subscribe STAND-IN (another CUPTI user, there before the driver is
  loaded) under `cuhook run --gpu`: one session, OTHER_USER, no GPU record, a warning NOTE and
  one stderr line saying so, the API trace complete.
--mode version: `cuhook run --gpu --cupti OLD` with a libcupti whose cuptiGetVersion says 12.9
  (tests/engine/old_cupti.c): one session, FAILED with that version, a NOTE and one stderr line
  saying cuhook reads CUPTI 13's records, nothing else of that library called, the API trace
  complete.
--mode nocupti: `cuhook run --cupti no-such/libcupti.so.13` (relative; --cupti implies --gpu):
  one session, NO_CUPTI with that path made absolute, a NOTE and one stderr line naming it, the
  program's exit status (0), the API trace complete.
  --mode attach begins with the same under `cuhook attach`: the line on cuhook's own stderr;
  and ends with `cuhook attach --gpu` (no --cupti) to gpu_work --loop --subscribe STAND-IN: the
  libcupti the process loaded is taken (the search's rule 2), OTHER_USER, said on its stderr.

--mode slow-stop: gpu_work --loop whose stand-in CUPTI takes FLUSH_DELAY_MS more per flush
  (FAKECUPTI_FLUSH_DELAY_MS), then `cuhook attach --gpu -v`: the GPU session's end at the detach
  (its steps told by -v, each flush at least FLUSH_DELAY_MS)
  runs on the agent's own thread while every program thread runs (cuhook says "by a thread of
  its own"), so no program thread is held anywhere near the flushes' time (-v's detach line:
  longest hold below FLUSH_DELAY_MS), and the trace still has its session STOPPED with the work
  of the window, nothing dropped.
--runtime (modes run and attach): gpu_work --runtime makes every submitting call inside a call of
  the stand-in CUDA runtime (gpu_workload.h), as PyTorch's launches are made. Under cuhook run the
  session starts before cuInit and asks for the submitting functions' driver records one by one:
  CUPTI records the runtime's driver calls, and every work record links through a driver record,
  as without --runtime. Under cuhook attach the driver was initialised first: CUPTI records none
  of the runtime's driver calls, so the session also enables the runtime's records; every work
  record links through the runtime record holding its call (trace_format.h, CUHOOK_GPU_API_RUNTIME),
  every API record is a runtime one, and `cuhook report --format json` counts every work record
  linked and linked through the runtime.

usage: check_gpu_trace.py --mode MODE --gpu-work PATH --lib LIBCUDA --cupti LIBCUPTI
           --agent LIBCUHOOK --cuhook CUHOOK [--runtime] [--inj-follow PATH] [--old-cupti PATH]
           [--threads N] [--iters M] [--workdir DIR]"""

import argparse
import collections
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time

from cuhooktest import (Fatal, Problems, clean_env, need_files, parse_target_output, run,
                        run_main, tail, work_directory)
from cuhooktest.tracefile import gpu_link, read_trace

# gpu_workload.h: one iteration of one thread. Kernels: the function that launches each directly,
# its grid, block, dynamic shared memory and stream (None: the thread's own); fakecuda.h: its
# registers per thread and static shared memory.
KERNELS = {
    "fake_scale_add": ("cuLaunchKernel", (2, 1, 1), (128, 1, 1), 0, None, 16, 0),
    "fake_relu": ("cuLaunchKernelEx", (1, 1, 1), (256, 1, 1), 512, None, 8, 0),
    "_ZN4fake6fill32EPjjj": ("cuLaunchKernel", (4, 1, 1), (64, 1, 1), 0, 7, 12, 256),
    "fake_matvec": ("cuLaunchKernelEx", (1, 1, 1), (16, 1, 1), 0, None, 32, 1024),
}
GRAPH_NODES = 3
# Copies: function -> (CUPTI copy kind, on the NULL stream)
COPIES = {"cuMemcpyHtoD_v2": (1, True), "cuMemcpyHtoDAsync_v2": (1, False), "cuMemcpyAsync": (8, False),
          "cuMemcpyDtoHAsync_v2": (2, False), "cuMemcpyDtoH_v2": (2, True)}
COPY_BYTES = 1024
MEMSETS = {"cuMemsetD32Async": (1024, 0x01020304, False), "cuMemsetD8_v2": (512, 0x5A, True)}
NULL_STREAM = 7
# Work records per call of each submitting function.
WORK_PER_CALL = dict({"cuLaunchKernel": 1, "cuLaunchKernelEx": 1, "cuGraphLaunch": GRAPH_NODES},
                     **{f: 1 for f in COPIES}, **{f: 1 for f in MEMSETS})
STATUS_LINE = "cuhook: GPU: "


def target_cmd(a, extra=()):
    runtime = ["--runtime"] if a.runtime else []
    return [a.gpu_work, "--threads", str(a.threads), "--iters", str(a.iters)] + runtime + list(extra) + [a.lib]


def traced(a, workdir, name, gpu_args, extra=()):
    """gpu_work under `cuhook run GPU_ARGS -o WORKDIR/NAME`: (trace, output, stderr, exit status)."""
    trace = os.path.join(workdir, name)
    if os.path.exists(trace):
        os.unlink(trace)
    cmd = [a.cuhook, "run", "--agent", a.agent, "-o", trace] + gpu_args + ["--"] + target_cmd(a, extra)
    p = subprocess.run(cmd, env=clean_env(), capture_output=True, text=True, timeout=120)
    if not os.path.exists(trace):
        raise Fatal(f"no trace from {' '.join(cmd)} (exit {p.returncode})\n{tail(p.stderr)}")
    return trace, p.stdout, p.stderr, p.returncode


def api_complete(problems, t, expect, what):
    """Every function's calls as gpu_work counts them, and no others."""
    got = collections.Counter(t.entries)
    got.update(t.counted)
    for name in sorted(set(expect) | set(got)):
        problems.check(got.get(name, 0) == expect.get(name, 0),
                       f"{what}: {name}: {got.get(name, 0)} calls in the trace, gpu_work made {expect.get(name, 0)}")


def same_output(problems, plain, out, what):
    for key in ("iterations", "checksum", "gpu"):
        problems.check(out.get(key) == plain.get(key), f"{what}: {key} {out.get(key)}, untraced {plain.get(key)}")
    problems.check(out["expect"] == plain["expect"], f"{what}: calls {out['expect']}, untraced {plain['expect']}")


def check_work(problems, t, gpu):
    """The work records against gpu_work's 'gpu' line, field by field."""
    direct = collections.Counter(k["name"] for k in t.gpu_kernels if k["graph_id"] == 0)
    graph = collections.Counter(k["name"] for k in t.gpu_kernels if k["graph_id"] != 0)
    problems.check(dict(direct) == gpu["kernels"], f"direct kernels {dict(direct)}, submitted {gpu['kernels']}")
    problems.check(dict(graph) == gpu["graph_kernels"], f"graph kernels {dict(graph)}, submitted {gpu['graph_kernels']}")
    for k in t.gpu_kernels:
        if k["graph_id"] == 0:
            _, grid, block, dyn, stream, regs, static = KERNELS[k["name"]]
        else:
            grid, block, dyn, stream = (1, 1, 1), (32, 1, 1), 0, None
            regs, static = KERNELS[k["name"]][5:]
            problems.check(k["graph_node_id"] != 0, f"graph kernel {k['name']} without a node id")
        problems.check((k["grid"], k["block"], k["shared_dynamic"], k["shared_static"], k["registers"]) ==
                       (grid, block, dyn, static, regs),
                       f"kernel {k['name']}: grid {k['grid']} block {k['block']} shared {k['shared_dynamic']}/"
                       f"{k['shared_static']} registers {k['registers']}")
        problems.check((k["stream"] == NULL_STREAM) == (stream == NULL_STREAM) and k["device"] == 0 and
                       k["context"] == 1, f"kernel {k['name']}: device {k['device']} context {k['context']} "
                       f"stream {k['stream']}")
        problems.check(0 < k["start"] <= k["end"], f"kernel {k['name']}: start {k['start']} end {k['end']}")
    kinds = {1: "HtoD", 2: "DtoH", 8: "DtoD"}
    copies = {}
    for m in t.gpu_memcpys:
        c = copies.setdefault(kinds.get(m["copy_kind"], str(m["copy_kind"])), {"count": 0, "bytes": 0})
        c["count"] += 1
        c["bytes"] += m["bytes"]
    problems.check(copies == gpu["memcpy"], f"copies {copies}, submitted {gpu['memcpy']}")
    sets = {"count": len(t.gpu_memsets), "bytes": sum(m["bytes"] for m in t.gpu_memsets)}
    problems.check(sets == gpu["memset"], f"memsets {sets}, submitted {gpu['memset']}")
    problems.check(sorted(t.gpu_names.values()) == sorted(KERNELS),
                   f"NAME records {sorted(t.gpu_names.values())}, wanted the 4 kernels once each")


SUBMITTING = ("cuLaunch", "cuMemcpy", "cuMemset", "cuGraphLaunch")


def api_holds(t, a):
    """The recorded call an API record belongs to: a driver record lies in the call of its thread
    and function; a runtime record holds the first submitting call of its thread inside it."""
    if a["runtime"]:
        inside = sorted((c for c in t.calls if c.tid == a["tid"] and c.name.startswith(SUBMITTING) and
                         c.exit is not None and a["start"] <= c.entry and c.exit <= a["end"]), key=lambda c: c.entry)
        return inside[:1]
    return [c for c in t.calls if c.tid == a["tid"] and c.func == a["func"] and c.entry <= a["start"] <= a["end"] <= c.exit]


def check_links(problems, t, calls_in_span=None, runtime_records=False):
    """Every work record linked to a call of the function that submits it; every submitting call
    of calls_in_span (all when None) with exactly one API record and the work it submits.
    runtime_records: every API record is a runtime one (else none is)."""
    links, unlinked = gpu_link(t)
    problems.check(not unlinked, f"{len(unlinked)} GPU records unlinked, first: "
                   f"{[(k, r['correlation'], why) for k, r, why in unlinked[:3]]}")
    for kind, r, a, call in links:
        if kind == "kernel":
            want = {"cuGraphLaunch"} if r["graph_id"] else {KERNELS[r["name"]][0]}
        elif kind == "memcpy":
            want = {f for f, (ck, _) in COPIES.items() if ck == r["copy_kind"]}
        else:
            want = {f for f, (n, v, _) in MEMSETS.items() if (n, v) == (r["bytes"], r["value"])}
        problems.check(call.name in want and (a["runtime"] or a["name"] == call.name),
                       f"{kind} {r.get('name', '')} (correlation {r['correlation']}) linked to {call.name} "
                       f"(API record of {a['name']}), wanted one of {sorted(want)}")
        problems.check(r["start"] >= a["start"] and r["end"] >= r["start"],
                       f"{kind} {r['correlation']} runs [{r['start']}, {r['end']}] before its call's API start {a['start']}")
        problems.check(a["ret"] == 0, f"API record {a['correlation']} of {a['name']}: return {a['ret']}")
    api_in = collections.Counter()
    # a runtime call already under way when the session began has no runtime record: its driver
    # call may have a driver record of its own, begun before the session's STARTED block
    started = t.gpu_sessions[0].tsc if t.gpu_sessions else 0
    for a in t.gpu_api:
        problems.check(a["runtime"] == runtime_records or (runtime_records and a["start"] <= started),
                       f"API record {a['correlation']}: a {'runtime' if a['runtime'] else 'driver'} record")
        # only the submitting functions' records, however the session had to enable them
        problems.check(a["runtime"] or (a["name"] or "").startswith(SUBMITTING),
                       f"API record {a['correlation']} of {a['name']}: not a submitting function")
        inside = api_holds(t, a)
        problems.check(len(inside) == 1, f"API record {a['correlation']} of {a['name']} lies in {len(inside)} calls")
        if inside:
            api_in[id(inside[0])] += 1
    work = collections.Counter(id(c) for _, _, _, c in links)
    submitting = [c for c in t.calls if c.name in WORK_PER_CALL and (calls_in_span is None or calls_in_span(c))]
    problems.check(submitting, "no submitting call to check")
    bad = [(c.name, api_in[id(c)], work[id(c)]) for c in submitting
           if api_in[id(c)] != 1 or work[id(c)] != WORK_PER_CALL[c.name]]
    problems.check(not bad, f"{len(bad)} of {len(submitting)} submitting calls without exactly one API record and "
                   f"their work, first (function, API records, work): {bad[:5]}")
    corr = [a["correlation"] for a in t.gpu_api]
    problems.check(len(corr) == len(set(corr)), "correlation ids repeat")
    return links


def check_session(problems, t, cupti):
    s = [x.status for x in t.gpu_sessions]
    problems.check(s == ["STARTED", "STOPPED"], f"GPU sessions {t.gpu_sessions}, wanted STARTED, STOPPED")
    if s == ["STARTED", "STOPPED"]:
        start, stop = t.gpu_sessions
        problems.check(start.path == cupti and start.cupti_version // 10000 == 13,
                       f"STARTED: path {start.path!r} version {start.cupti_version}")
        problems.check(stop.records == t.gpu_records and stop.dropped == 0,
                       f"STOPPED says {stop.records} records, {stop.dropped} dropped; the file has {t.gpu_records}")
        problems.check(start.tsc < stop.tsc, "STOPPED before STARTED")
    problems.check(t.has_end, "no END block")


def per_thread_calls(t):
    """The calls of each thread in order, threads in no particular order: comparable across runs."""
    seq = collections.defaultdict(list)
    for c in t.calls:
        seq[c.tid].append(c.name)
    return sorted(tuple(v) for v in seq.values())


def mode_run(a, workdir, problems):
    plain = parse_target_output(run(target_cmd(a), env=clean_env(), what="gpu_work (untraced)").stdout)
    gpu = json.loads(plain["gpu"])
    on, out_on, err_on, rc_on = traced(a, workdir, "gpu-on.bin", ["--gpu", "--cupti", a.cupti])
    off, out_off, err_off, rc_off = traced(a, workdir, "gpu-off.bin", [])
    problems.check(rc_on == 0 and rc_off == 0, f"exit {rc_on} with --gpu, {rc_off} without\n{tail(err_on)}")
    for text, what in ((out_on, "--gpu"), (out_off, "without --gpu")):
        same_output(problems, plain, parse_target_output(text), what)
    problems.check(STATUS_LINE not in err_on, f"--gpu said on stderr: {tail(err_on)}")
    t = read_trace(on)
    check_session(problems, t, a.cupti)
    check_work(problems, t, gpu)
    check_links(problems, t)
    api_complete(problems, t, plain["expect"], "--gpu")
    u = read_trace(off)
    problems.check(not u.gpu_sessions and not u.gpu_blocks, f"without --gpu: {len(u.gpu_sessions)} GPU sessions, "
                   f"{u.gpu_blocks} GPU blocks")
    problems.check(not any("GPU" in n for _, n in u.notes), "without --gpu: a NOTE about the GPU")
    api_complete(problems, u, plain["expect"], "without --gpu")
    problems.check(per_thread_calls(t) == per_thread_calls(u), "the calls, thread by thread, differ with --gpu")
    print(f"--gpu: {len(t.gpu_kernels)} kernels, {len(t.gpu_memcpys)} copies, {len(t.gpu_memsets)} memsets, "
          f"{len(t.gpu_api)} API records, {len(t.calls)} calls")


def mode_refused(a, workdir, problems, status, gpu_args, extra, says):
    """One session of status, no GPU record, a warning NOTE and one stderr line containing says,
    the API complete and the output the untraced run's."""
    plain = parse_target_output(run(target_cmd(a, extra), env=clean_env(), what="gpu_work (untraced)").stdout)
    trace, out, err, rc = traced(a, workdir, f"gpu-{status.lower()}.bin", gpu_args, extra)
    problems.check(rc == 0, f"exit status {rc}, the program's is 0\n{tail(err)}")
    same_output(problems, plain, parse_target_output(out), status)
    t = read_trace(trace)
    problems.check([s.status for s in t.gpu_sessions] == [status], f"GPU sessions {t.gpu_sessions}, wanted {status}")
    problems.check(not t.gpu_blocks and not t.gpu_records, f"{t.gpu_records} GPU records in {t.gpu_blocks} blocks")
    notes = [n for lv, n in t.notes if lv == 1 and n.startswith("GPU: ") and says in n]
    problems.check(len(notes) == 1, f"{len(notes)} warning NOTEs with {says!r}: {t.notes}")
    problems.check("old_cupti:" not in err, f"a function of a refused CUPTI was called: {tail(err)}")
    lines = [ln for ln in err.splitlines() if ln.startswith(STATUS_LINE)]
    problems.check(len(lines) == 1 and says in lines[0], f"stderr lines about the GPU: {lines}, wanted one with {says!r}")
    problems.check(t.has_end, "no END block")
    api_complete(problems, t, plain["expect"], status)
    return t


class Target:
    """gpu_work --loop, its output read line by line."""

    def __init__(self, a, extra=(), env=None):
        runtime = ["--runtime"] if a.runtime else []
        cmd = [a.gpu_work, "--loop", "--threads", str(a.threads)] + runtime + list(extra) + [a.lib]
        self.p = subprocess.Popen(cmd, env=clean_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.out = []

    def _read(self):
        for line in self.p.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _next(self, end):
        """The next line before time end: a line, None at its end of output, False at the time."""
        try:
            line = self.lines.get(timeout=max(0.01, end - time.monotonic()))
        except queue.Empty:
            return False
        if line is not None:
            self.out.append(line)
        return line

    def line(self, prefix, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            line = self._next(end)
            if line is None:
                raise Fatal(f"gpu_work ended while waiting for {prefix!r}: {self.out[-5:]}")
            if line and line.startswith(prefix):
                return line
        raise Fatal(f"gpu_work did not print {prefix!r} in {timeout} s")

    def finish(self, timeout=60):
        """SIGTERM, then everything it printed: (exit status, stderr)."""
        self.p.send_signal(signal.SIGTERM)
        end = time.monotonic() + timeout
        while time.monotonic() < end and self._next(end) not in (None, False):
            pass
        self.p.wait(timeout=max(1, end - time.monotonic()))
        return self.p.returncode, self.p.stderr.read()

    def ask(self):
        """SIGUSR1: (progress, kernels the stand-in CUPTI has recorded so far)."""
        self.p.send_signal(signal.SIGUSR1)
        progress = int(self.line("progress ").split()[1])
        return progress, int(self.line("recorded ").split()[1])


def wait_closed(trace, timeout=30):
    """Until the agent has closed the trace (its END block), which it does by itself when the
    cuhook attach that started it is killed."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if read_trace(trace, growing=True).has_end:
            return
        time.sleep(0.05)
    raise Fatal(f"the agent did not close {trace} within {timeout} s of its cuhook's death")


def attach_window(a, workdir, target, pid, n, problems, killed=False):
    """One window of cuhook attach --gpu, ended by SIGINT (a detach), or killed: SIGKILL, and
    the agent ends the trace, and the GPU session, by itself."""
    trace = os.path.join(workdir, f"window{n}.bin")
    if os.path.exists(trace):
        os.unlink(trace)
    cmd = [a.cuhook, "attach", "--agent", a.agent, "--gpu", "--cupti", a.cupti, "-o", trace, str(pid)]
    c = subprocess.Popen(cmd, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # the window is open once the session's STARTED block is in the file
        end = time.monotonic() + 60
        while time.monotonic() < end and c.poll() is None:
            if os.path.exists(trace) and read_trace(trace, growing=True).gpu_sessions:
                break
            time.sleep(0.05)
        if c.poll() is not None:
            raise Fatal(f"cuhook attach ended early ({c.returncode}): {tail(c.stderr.read())}")
        before, recorded = target.ask()
        while True:
            progress, now = target.ask()
            if progress >= before + 2 * a.threads:
                break
            time.sleep(0.05)
        problems.check(now > recorded, f"window {n}: the stand-in CUPTI recorded no kernel during it")
    finally:
        c.send_signal(signal.SIGKILL if killed else signal.SIGINT)
        _, err = c.communicate(timeout=60)
    if killed:
        wait_closed(trace)
    else:
        problems.check(c.returncode == 0, f"window {n}: cuhook attach exited {c.returncode}: {tail(err)}")
    problems.check(STATUS_LINE not in err, f"window {n}: cuhook attach said: {tail(err)}")
    # CUPTI stays loaded (never finalized while the program runs), with nothing enabled
    before, recorded = target.ask()
    while True:
        progress, now = target.ask()
        if progress >= before + 2 * a.threads:
            break
        time.sleep(0.05)
    problems.check(now == recorded, f"after window {n}: the stand-in CUPTI still records ({recorded} -> {now} kernels)")
    if not killed:
        # finalized (out of the driver) unless CUDA graphs were launched while it recorded: that
        # breaks their next launch on a real driver
        tr = read_trace(trace)
        graphs = any(name.startswith("cuGraphLaunch") and ents for name, ents in tr.entries.items())
        want = ("CUPTI left loaded with nothing enabled, not finalized: CUDA graphs were launched" if graphs
                else "GPU: recording stopped; CUPTI finalized")
        problems.check(any(want in text for _, text in tr.notes), f"window {n}: no note '{want}'")
    t = read_trace(trace)
    check_session(problems, t, a.cupti)
    if len(t.gpu_sessions) == 2:
        start, stop = t.gpu_sessions[0].tsc, t.gpu_sessions[1].tsc
        links = check_links(problems, t, lambda c: start <= c.entry and c.exit <= stop, runtime_records=a.runtime)
        problems.check(len(links) > 0, f"window {n}: no GPU work")
        if a.runtime and not killed:
            report_links(a, problems, trace, len(links), f"window {n}")
    print(f"window {n}: {len(t.gpu_kernels)} kernels, {len(t.gpu_memcpys)} copies, {len(t.gpu_memsets)} memsets")
    return t


def report_links(a, problems, trace, linked, what):
    """cuhook report's own reader links the same work, all of it through runtime records."""
    p = subprocess.run([a.cuhook, "report", "--format", "json", trace], env=clean_env(), capture_output=True,
                       text=True, timeout=120)
    problems.check(p.returncode == 0, f"{what}: cuhook report exited {p.returncode}: {tail(p.stderr)}")
    if p.returncode == 0:
        gpu = json.loads(p.stdout).get("gpu", {})
        got = (gpu.get("links", {}).get("linked"), gpu.get("links_via_runtime"))
        problems.check(got == (linked, linked), f"{what}: cuhook report links {got[0]} work records, "
                       f"{got[1]} through runtime records; wanted {linked} and {linked}")


def attach_no_cupti(a, workdir, pid, problems):
    """cuhook attach --cupti MISSING: the agent's line about it on cuhook's stderr (the process's
    is not the operator's), a NO_CUPTI session with that path, exit 0."""
    trace = os.path.join(workdir, "window-no-cupti.bin")
    missing = os.path.join(workdir, "no-such", "libcupti.so.13")
    if os.path.exists(trace):
        os.unlink(trace)
    p = subprocess.run([a.cuhook, "attach", "--agent", a.agent, "--cupti", missing, "--duration", "0.2", "-o",
                        trace, str(pid)], env=clean_env(), capture_output=True, text=True, timeout=120)
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith(STATUS_LINE)]
    problems.check(p.returncode == 0, f"cuhook attach --cupti MISSING exited {p.returncode}: {tail(p.stderr)}")
    problems.check(len(lines) == 1 and missing in lines[0], f"cuhook attach's lines about the GPU: {lines}")
    t = read_trace(trace)
    problems.check([(x.status, x.path) for x in t.gpu_sessions] == [("NO_CUPTI", missing)],
                   f"cuhook attach --cupti MISSING: sessions {t.gpu_sessions}")


def attach_other_user(a, workdir, problems):
    """gpu_work --loop --subscribe STAND-IN, then cuhook attach --gpu without --cupti: the agent
    takes the libcupti the process has loaded (the search's rule 2), finds its subscriber slot
    taken, and says so on cuhook's stderr; the session is OTHER_USER with that library's path."""
    target = Target(a, ["--subscribe", a.cupti])
    try:
        pid = int(target.line("pid ").split()[1])
        target.line("running")
        trace = os.path.join(workdir, "window-other-user.bin")
        if os.path.exists(trace):
            os.unlink(trace)
        p = subprocess.run([a.cuhook, "attach", "--agent", a.agent, "--gpu", "--duration", "0.2", "-o", trace,
                            str(pid)], env=clean_env(), capture_output=True, text=True, timeout=120)
        rc, err = target.finish()
    finally:
        if target.p.poll() is None:
            target.p.kill()
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith(STATUS_LINE)]
    problems.check(p.returncode == 0 and len(lines) == 1 and "another CUPTI user owns this process" in lines[0],
                   f"cuhook attach to a process with another CUPTI user: exit {p.returncode}, lines {lines}")
    t = read_trace(trace)
    problems.check([(x.status, x.path) for x in t.gpu_sessions] == [("OTHER_USER", os.path.realpath(a.cupti))],
                   f"attach to a process with another CUPTI user: sessions {t.gpu_sessions}, wanted OTHER_USER "
                   f"with the loaded {os.path.realpath(a.cupti)}")
    problems.check(t.entries.get("cuLaunchKernel", 0) > 0, "attach to a process with another CUPTI user: no API trace")
    problems.check(rc == 0, f"gpu_work --subscribe exited {rc}: {tail(err)}")


def mode_attach(a, workdir, problems):
    target = Target(a)
    try:
        pid = int(target.line("pid ").split()[1])
        target.line("running")
        problems.check(target.ask()[1] == 0, "kernels recorded before any attach")
        attach_no_cupti(a, workdir, pid, problems)
        w1 = attach_window(a, workdir, target, pid, 1, problems)
        w2 = attach_window(a, workdir, target, pid, 2, problems)
        w3 = attach_window(a, workdir, target, pid, 3, problems, killed=True)
        for x, y in ((w1, w2), (w2, w3)):
            if x.gpu_api and y.gpu_api:
                problems.check(max(r["correlation"] for r in x.gpu_api) < min(r["correlation"] for r in y.gpu_api),
                               "the windows' correlation ids overlap: work of one window in another's trace")
        rc, err = target.finish()
    finally:
        if target.p.poll() is None:
            target.p.kill()
    attach_other_user(a, workdir, problems)
    out = parse_target_output("\n".join(target.out))
    problems.check(rc == 0 and not out["bad"], f"gpu_work exited {rc}: {tail(err)}")
    n = int(out.get("iterations", 0))
    problems.check(n > 0 and out["expect"].get("cuGraphLaunch") == n and out["expect"].get("cuLaunchKernel") == 2 * n,
                   f"gpu_work's totals: {n} iterations, {out['expect']}")


FLUSH_DELAY_MS = 600


def mode_slow_stop(a, workdir, problems):
    target = Target(a, env={"FAKECUPTI_FLUSH_DELAY_MS": str(FLUSH_DELAY_MS)})
    trace = os.path.join(workdir, "slow-stop.bin")
    try:
        pid = int(target.line("pid ").split()[1])
        target.line("running")
        p = subprocess.run([a.cuhook, "attach", "-v", "--agent", a.agent, "--gpu", "--cupti", a.cupti, "--duration",
                            "0.3", "-o", trace, str(pid)], env=clean_env(), capture_output=True, text=True,
                           timeout=120)
        rc, err = target.finish()
    finally:
        if target.p.poll() is None:
            target.p.kill()
    problems.check(p.returncode == 0, f"cuhook attach exited {p.returncode}: {tail(p.stderr)}")
    problems.check(re.search(r"agent's stop prepared in [\d.]+ ms while the other threads ran, by a thread of its own",
                             p.stderr), f"no line about the stop prepared by the agent's own thread: {tail(p.stderr)}")
    held = re.search(r"^cuhook: detach: \d+ threads? held, longest ([\d.]+) ms", p.stderr, re.M)
    problems.check(held and float(held.group(1)) < FLUSH_DELAY_MS,
                   f"detach: longest hold {held.group(1) if held else None} ms, the flushes take {FLUSH_DELAY_MS} ms "
                   "each: a program thread waited for them")
    # -v tells the GPU stop's own steps, which held no thread: both forced flushes took the
    # stand-in's delay (its cuptiFinalize takes no time: not checked)
    steps = re.search(r"^cuhook: detach: the agent's GPU stop, beside the running program: flush ([\d.]+), disable "
                      r"([\d.]+), flush again ([\d.]+), finalize ([\d.]+) ms \(no thread held, but a CUDA call made "
                      r"meanwhile may wait on CUPTI, on its finalize above all: the longest hold and the finalize "
                      r"together ([\d.]+) ms\)$", p.stderr, re.M)
    if problems.check(steps, f"-v does not tell the GPU stop's steps: {tail(p.stderr)}"):
        flush, disable, flush2, fin, felt = map(float, steps.groups())
        if held:
            # the figure is the longest hold plus the finalize (each rounded to 0.01 when printed)
            problems.check(abs(felt - (float(held.group(1)) + fin)) <= 0.02,
                           f"together {felt} ms, but the longest hold is {held.group(1)} ms and the finalize {fin}")
        problems.check(flush >= FLUSH_DELAY_MS and flush2 >= FLUSH_DELAY_MS and disable < FLUSH_DELAY_MS,
                       f"the GPU stop's steps: flush {flush}, disable {disable}, flush again {flush2} ms; each "
                       f"flush takes {FLUSH_DELAY_MS} ms more")
        print("GPU stop: flush %.2f, disable %.2f, flush again %.2f, finalize %.2f ms" % (flush, disable, flush2, fin))
    t = read_trace(trace)
    check_session(problems, t, a.cupti)
    problems.check(t.gpu_kernels, "no GPU work in the window")
    problems.check(rc == 0, f"gpu_work exited {rc}: {tail(err)}")
    print(f"detach: longest hold {held.group(1) if held else None} ms; {len(t.gpu_kernels)} kernels")


def mode_fork(a, workdir, problems):
    need_files([(a.inj_follow, "inj_follow")])
    d = os.path.join(workdir, "fork")
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    p = run([a.cuhook, "run", "--agent", a.agent, "--follow", "--gpu", "--cupti", a.cupti, "-o",
             os.path.join(d, "t.bin"), "--", a.inj_follow, "quit", a.lib, "10", "7", "0"], env=clean_env(),
            what="cuhook run --follow --gpu inj_follow quit")
    roles = {}
    for line in p.stdout.splitlines():
        w = line.split()
        if len(w) == 4 and w[0] == "pid" and w[2] == "role":
            roles[w[3]] = int(w[1])
    if "parent" not in roles or "child" not in roles:
        raise Fatal(f"inj_follow did not say its pids: {p.stdout}")
    parent, child = (read_trace(os.path.join(d, f"t.{roles[r]}.bin")) for r in ("parent", "child"))
    problems.check([x.status for x in parent.gpu_sessions] == ["STARTED", "STOPPED"],
                   f"the parent's GPU sessions {parent.gpu_sessions}, wanted STARTED, STOPPED")
    problems.check(parent.entries.get("cuFakeConstA") == 20 and parent.has_end,
                   f"the parent's calls {parent.entries}, END {parent.has_end}")
    problems.check(not child.gpu_sessions and not child.gpu_blocks, f"the child's GPU sessions {child.gpu_sessions}")
    notes = [n for _, n in child.notes if "fork child records no GPU work" in n]
    problems.check(len(notes) == 1, f"{len(notes)} NOTEs of the fork child's GPU: {child.notes}")
    problems.check(child.entries.get("cuFakeConstB") == 7 and child.has_end,
                   f"the child's calls {child.entries}, END {child.has_end}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["run", "attach", "fork", "subscribe", "version", "nocupti", "slow-stop"],
                    required=True)
    ap.add_argument("--inj-follow")
    ap.add_argument("--old-cupti")
    ap.add_argument("--gpu-work", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--cupti", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--runtime", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--workdir")
    a = ap.parse_args()
    need_files([(a.gpu_work, "gpu_work"), (a.lib, "the stand-in libcuda"), (a.cupti, "the stand-in libcupti"),
                (a.agent, "the agent"), (a.cuhook, "cuhook")])
    workdir = work_directory(a.workdir, "cuhook-gpu-")
    problems = Problems()
    if a.mode == "run":
        mode_run(a, workdir, problems)
    elif a.mode == "attach":
        mode_attach(a, workdir, problems)
    elif a.mode == "fork":
        mode_fork(a, workdir, problems)
    elif a.mode == "slow-stop":
        mode_slow_stop(a, workdir, problems)
    elif a.mode == "subscribe":
        mode_refused(a, workdir, problems, "OTHER_USER", ["--gpu", "--cupti", a.cupti], ["--subscribe", a.cupti],
                     "another CUPTI user owns this process")
    elif a.mode == "version":
        need_files([(a.old_cupti, "the libcupti of version 12.9")])
        t = mode_refused(a, workdir, problems, "FAILED", ["--gpu", "--cupti", a.old_cupti], [],
                         "is CUPTI version 120090; cuhook reads the records of CUPTI 13")
        problems.check(t.gpu_sessions and t.gpu_sessions[0].cupti_version == 0,
                       f"FAILED's version {t.gpu_sessions[0].cupti_version if t.gpu_sessions else None}: "
                       "no CUPTI of version 13 was loaded (0)")
    else:
        # given relative (cuhook makes it absolute, as -o), and alone (--cupti implies --gpu)
        missing = os.path.join(workdir, "no-such", "libcupti.so.13")
        t = mode_refused(a, workdir, problems, "NO_CUPTI", ["--cupti", os.path.relpath(missing)], [], missing)
        problems.check(t.gpu_sessions and t.gpu_sessions[0].path == missing,
                       f"NO_CUPTI's path {t.gpu_sessions[0].path if t.gpu_sessions else None!r}, wanted {missing!r}")
    problems.exit()


if __name__ == "__main__":
    run_main(main)
