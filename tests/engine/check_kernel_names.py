#!/usr/bin/env python3
"""Kernel names for handles the program looked up before tracing began, and the kernels of graph
launches (src/agent/kernel_names.h), on tests/targets/names_user.c: three kernels looked up and
graph A instantiated before the agent starts; then, traced, direct launches of each kernel,
graph B (3 kernel nodes) instantiated and destroyed at once, launched M_B times, and graph A
launched M_A times. The report's "kernels" (JSON) must count exactly, by name: every direct
launch and every node of graph B's launches, all of them named; graph A's launches as unknown.

  --mode constructor   the agent dlopened by the program after its lookups (CUHOOK_OUTPUT)
  --mode attach        cuhook attach while the program waits, the work done inside the window;
                       the attach trace also carries the notes a run trace has (functions
                       patched, refused)
  --mode gpu           as attach, with --gpu and the stand-in CUPTI: graph A's launches
                       (instantiated before tracing) are counted by the GPU's kernel records
                       linked to them, 2 named kernels each
  --mode window        as attach, without --gpu: graph A's first launch opens the names window
                       (the stand-in CUPTI found through $CUDA_HOME), which records the GPU's
                       kernels for 0.5 s; every launch of graph A is counted with 2 named kernels,
                       those before and after the window by the kernels of a launch inside it

The constructor and attach modes turn the names window off (it is what they check without it)."""
import argparse
import os
import subprocess
import sys

from cuhooktest import Fatal, Problems, clean_env, report, report_json, run_attached, run_main, tail, work_directory


def expectations(out):
    direct, graph, other = {}, {}, {}
    for line in out.splitlines():
        if not line.startswith("expect "):
            continue
        body = line[len("expect "):]
        head, _, nums = body.rpartition(" ")
        if head.startswith("graph_"):
            other[head] = int(nums)
            continue
        name, d = head.rsplit(" ", 1)
        direct[name] = int(d)
        graph[name] = int(nums)
    return direct, graph, other


def check_report(a, work, trace, target_out, problems, what, gpu=False, window=False):
    direct, graph, other = expectations(target_out)
    if gpu:
        # graph A (fake_scale_add, fake_relu) from the GPU's records
        graph["fake_scale_add"] += other["graph_unknown"]
        graph["fake_relu"] += other["graph_unknown"]
    problems.check(len(direct) == 3, f"{what}: the program's expectations: {target_out!r}")
    rep = report_json(a.cuhook, trace, work)
    k = rep.get("kernels")
    if not problems.check(isinstance(k, dict), f"{what}: no kernels in the JSON report"):
        return ""
    nodes = 3 * (other["graph_calls"] - other["graph_unknown"]) + (2 * other["graph_unknown"] if gpu else 0)
    total = sum(direct.values()) + nodes
    problems.check(k["launches"] == total, f"{what}: {k['launches']} launches, not {total}")
    problems.check(k["named"] == total, f"{what}: {k['named']} of {k['launches']} launches named")
    problems.check(k["direct"] == sum(direct.values()), f"{what}: {k['direct']} direct launches")
    problems.check(k["graph_nodes"] == nodes, f"{what}: {k['graph_nodes']} graph-node launches, not {nodes}")
    problems.check(k["graph_calls"] == other["graph_calls"], f"{what}: {k['graph_calls']} graph launches")
    unknown = 0 if gpu else other["graph_unknown"]
    problems.check(k["graph_unknown"] == unknown,
                   f"{what}: {k['graph_unknown']} graph launches of unknown graphs, not {unknown}")
    problems.check(k["graph_from_gpu"] == other["graph_unknown"] - unknown,
                   f"{what}: {k['graph_from_gpu']} graph launches counted from GPU records")
    # the window: graph A's first launch (before it opened) and its last (after it closed) have
    # no GPU records of their own; the launches inside it may (the kinds are enabled one by one)
    if window:
        problems.check(2 <= k["graph_from_sibling"] < other["graph_unknown"],
                       f"{what}: {k['graph_from_sibling']} graph launches counted by another launch's records")
    else:
        problems.check(k["graph_from_sibling"] == 0, f"{what}: {k['graph_from_sibling']} counted by another launch's")
    got = {e["name"]: e for e in k["by_name"]}
    problems.check(sorted(got) == sorted(direct), f"{what}: kernels {sorted(got)}, not {sorted(direct)}")
    for name in direct:
        e = got.get(name)
        if not problems.check(e is not None, f"{what}: no row for {name}"):
            continue
        problems.check(e["named"] and e["direct"] == direct[name] and e["graph_nodes"] == graph[name] and
                       e["launches"] == direct[name] + graph[name],
                       f"{what}: {name}: {e}, want {direct[name]} direct + {graph[name]} graph nodes")
    # the relu launches (cuLaunchKernelEx) give their shape through the config DATA record
    # (the most launched; with GPU records graph A's node adds a third, (2,1,1)x(128,1,1), which
    # is the most launched when graph A is launched more than the 5 direct launches)
    relu = got.get("fake_relu", {})
    most = ([2, 1, 1], [128, 1, 1]) if gpu and other["graph_unknown"] > 5 else ([4, 2, 1], [64, 1, 1])
    problems.check((relu.get("grid"), relu.get("block")) == most and
                   relu.get("shapes") == (3 if gpu else 2), f"{what}: fake_relu's shapes: {relu}")
    text = report(a.cuhook, trace, "text", os.path.join(work, "report.txt"))
    problems.check(("--names-window 1 names them" in text) == (unknown > 0),
                   f"{what}: the Kernels section's hint on --names-window (for {unknown} unknown graph launches)")
    problems.check(f"  {total} kernel launches: {sum(direct.values())} by launch calls, {nodes} as nodes of "
                   f"{other['graph_calls'] - unknown} graph launches; {total} named (100.0 %)"
                   in text.splitlines(), f"{what}: the text report's Kernels line:\n{tail(text, 4000)}")
    return text


def mode_constructor(a, work, problems):
    trace = os.path.join(work, "names.bin")
    env = clean_env({"CUHOOK_OUTPUT": trace, "CUHOOK_NAMES_WINDOW": "0"})
    p = subprocess.run([a.target, a.lib, "--agent", a.agent], env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise Fatal(f"names_user exited with {p.returncode}:\n{p.stdout}\n{p.stderr}")
    check_report(a, work, trace, p.stdout, problems, "constructor")


def mode_attach(a, work, problems, gpu=False, window=False):
    trace = os.path.join(work, "attach.bin")
    env = clean_env()
    if window:
        # the agent's CUPTI search finds $CUDA_HOME/extras/CUPTI/lib64/libcupti.so.13
        lib64 = os.path.join(work, "cuda", "extras", "CUPTI", "lib64")
        os.makedirs(lib64, exist_ok=True)
        link = os.path.join(lib64, "libcupti.so.13")
        if not os.path.lexists(link):
            os.symlink(os.path.abspath(a.cupti), link)
        env["CUDA_HOME"] = os.path.join(work, "cuda")
    extra = (["--gpu", "--cupti", a.cupti] if gpu else
             ["--names-window", "0.5"] if window else ["--names-window", "0"])
    # with --gpu, the GPU session starts on the agent's GPU thread once the threads run
    out = run_attached(a.cuhook, a.agent, [a.target, a.lib, "--wait", *(["--window"] if window else [])], trace,
                       problems, extra, duration=5 if gpu else 8 if window else 3, env=env, settle=2 if gpu else 0)
    text = check_report(a, work, trace, out, problems, "gpu" if gpu else "window" if window else "attach",
                        gpu or window, window)
    notes = [line for line in text.splitlines() if line.startswith("  note ")]
    if window:
        # graph A was launched while the window recorded: CUPTI is not finalized (that breaks
        # the next graph launch on a real driver), left loaded with nothing enabled
        problems.check(any("names window closed" in t for t in notes), f"no 'names window closed' note: {notes}")
        problems.check(any("CUPTI left loaded with nothing enabled, not finalized" in t for t in notes),
                       f"window: CUPTI finalized after graph launches, or no note: {notes}")
    problems.check(any("functions patched, " in t and " refused" in t for t in notes),
                   f"attach trace without the 'functions patched, refused' note: {notes}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", required=True, choices=["constructor", "attach", "gpu", "window"])
    ap.add_argument("--cupti")
    ap.add_argument("--agent", required=True)
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--workdir")
    a = ap.parse_args()
    work = work_directory(a.workdir, "cuhook-names-")
    problems = Problems()
    if a.mode in ("gpu", "window"):
        mode_attach(a, work, problems, gpu=a.mode == "gpu", window=a.mode == "window")
    else:
        {"constructor": mode_constructor, "attach": mode_attach}[a.mode](a, work, problems)
    problems.exit()


if __name__ == "__main__":
    run_main(main)
