#!/usr/bin/env python3
"""Checks a trace's GPU records (issue 16) against ground truth from the same workload:

  python3 gpu_check.py --trace T.bin [--torch TORCH.json | --cupti CUPTI.json]
                       [--min-kernels N] [--expect-other-user]

Always: every GPU work record (kernel, copy, memset) must be linked to the recorded call that
submitted it (tests/lib/cuhooktest/tracefile.py gpu_link: correlation id, then same thread, same
function, CUPTI's API interval inside the call): 0 unlinked. Prints the sessions, the counts and
the functions that submitted the work.
--torch: kernels per name must equal torch.profiler's (torch_kernels.py; kineto demangles, so
  cuhook's names go through c++filt first), copies per kind and memsets too.
--cupti: the same against cupti_activity_counter's JSON (mangled names, copy kinds by number).
--expect-other-user: the trace must say another CUPTI user owned the process (an OTHER_USER
  session, a NOTE), hold no GPU records, and still hold driver calls.
Exits 1 on any difference."""
import argparse
import collections
import json
import os
import subprocess
import sys

from cuhooktest import tracefile

COPY_KIND = {1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA", 8: "DtoD",
             9: "HtoH", 10: "PtoP"}


def demangle(names):
    names = list(names)
    if not names:
        return {}
    p = subprocess.run(["c++filt"], input="\n".join(names) + "\n", capture_output=True, text=True, check=True)
    return dict(zip(names, p.stdout.split("\n")))


def diff(tag, mine, truth):
    bad = 0
    for k in sorted(set(mine) | set(truth), key=str):
        if mine.get(k, 0) != truth.get(k, 0):
            bad += 1
            if bad <= 15:
                print("  %s differs: %r cuhook %d, truth %d" % (tag, k, mine.get(k, 0), truth.get(k, 0)))
    print("%s: cuhook %d in %d groups, truth %d in %d groups: %s" % (
        tag, sum(mine.values()), len(mine), sum(truth.values()), len(truth), "equal" if not bad else "%d differ" % bad))
    return bad == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", required=True)
    ap.add_argument("--torch")
    ap.add_argument("--cupti")
    ap.add_argument("--min-kernels", type=int, default=0)
    ap.add_argument("--expect-other-user", action="store_true")
    a = ap.parse_args()
    t = tracefile.read_trace(a.trace)
    ok = True
    for s in t.gpu_sessions:
        print("session:", s)
    nwork = len(t.gpu_kernels) + len(t.gpu_memcpys) + len(t.gpu_memsets)
    print("%s: %d calls recorded, %d kernels, %d copies, %d memsets, %d API records of CUPTI" % (
        a.trace, len(t.calls), len(t.gpu_kernels), len(t.gpu_memcpys), len(t.gpu_memsets), len(t.gpu_api)))
    if a.expect_other_user:
        other = [s for s in t.gpu_sessions if s.status == "OTHER_USER"]
        notes = [n for _, n in t.notes if "CUPTI" in n]
        print("other-user sessions %d, CUPTI notes %s" % (len(other), notes[:2]))
        return 0 if other and notes and nwork == 0 and len(t.calls) > 0 and \
            not any(s.status == "STARTED" for s in t.gpu_sessions) else 1
    links, unlinked = tracefile.gpu_link(t)
    by_func = collections.Counter(call.name for _, _, _, call in links)
    print("linked %d of %d work records, unlinked %d; submitted by: %s" % (
        len(links), nwork, len(unlinked), ", ".join("%s %d" % kv for kv in by_func.most_common())))
    for kind, r, why in unlinked[:10]:
        print("  unlinked %s corr %d: %s" % (kind, r["correlation"], why))
    ok &= not unlinked and len(t.gpu_kernels) >= a.min_kernels and \
        all(s.dropped == 0 for s in t.gpu_sessions)
    raw = collections.Counter(k["name"] for k in t.gpu_kernels)
    copies = collections.Counter(m["copy_kind"] for m in t.gpu_memcpys)
    if a.torch:
        truth = json.load(open(a.torch))
        dm = demangle(raw)
        mine = collections.Counter()
        for n, c in raw.items():
            mine[dm[n]] += c
        ok &= diff("kernels by name", mine, truth["kernels"])
        ok &= diff("copies by kind", {COPY_KIND.get(k, str(k)): c for k, c in copies.items()}, truth["memcpy"])
        ok &= diff("memsets", {"memset": len(t.gpu_memsets)}, {"memset": truth["memset"]})
    if a.cupti:
        truth = json.load(open(a.cupti))
        ok &= diff("kernels by name", dict(raw), truth["kernels"])
        ok &= diff("copies by kind", {str(k): c for k, c in copies.items()}, truth["memcpy"])
        ok &= diff("memsets", {"memset": len(t.gpu_memsets)}, {"memset": truth["memset"]})
    print("gpu_check:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


sys.exit(main())
