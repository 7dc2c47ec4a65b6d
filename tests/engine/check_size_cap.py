#!/usr/bin/env python3
"""The trace size cap (`cuhook run --max-size`, agent option max_size=): driver_user on the
stand-in libcuda traced under `cuhook run` twice, without a cap (the reference) and with one far
below the reference's size. With the cap:

  - the program's results are those of the untraced run, and it ends (no thread waits for
    room in a ring for good: the writer goes on draining and discarding);
  - the file is no larger than the cap (the agent keeps room below it for its closing blocks)
    and filled nearly up to it, ends with an END block and reads without damage (`cuhook report --strict`);
  - nothing is lost uncounted: the ENTRY/EXIT records written plus those the END block counts
    as dropped equal the reference's records, and the counted calls written plus those the
    cap's NOTE says were not equal the reference's counted calls; the report shows the drops.

usage: check_size_cap.py --driver-user PATH --lib LIBCUDA --agent LIBCUHOOK --cuhook CUHOOK
           [--cap SIZE] [--threads N] [--iters M] [--workdir DIR]"""

import argparse
import os
import re
import sys

from cuhooktest import (Fatal, Problems, clean_env, need_file, need_files, parse_target_output,
                        report_json, run, run_main, work_directory)
from cuhooktest.tracefile import read_trace

FILL_SLACK = 2048
CAP_NOTE = re.compile(r"trace size cap of (\d+) bytes reached: (\d+) event records \(counted as dropped\) "
                      r"and (\d+) counted calls after it were not written")


def traced(a, workdir, name, extra):
    """driver_user under `cuhook run -o WORKDIR/NAME EXTRA`: (trace path, the program's output)."""
    trace = os.path.join(workdir, name)
    if os.path.exists(trace):
        os.unlink(trace)
    cmd = [a.cuhook, "run", "--agent", a.agent, "-o", trace] + extra + \
          ["--", a.driver_user, "--threads", str(a.threads), "--iters", str(a.iters), a.lib]
    p = run(cmd, env=clean_env(), what=f"cuhook run {' '.join(extra)}", timeout=120)
    need_file(trace, f"the trace of cuhook run {' '.join(extra)}")
    return trace, parse_target_output(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--driver-user", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--cap", type=int, default=100003)  # not a multiple of 8: bytes, exactly
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--workdir")
    a = ap.parse_args()
    need_files(((a.driver_user, "driver_user"), (a.lib, "the stand-in libcuda"),
                (a.agent, "the agent libcuhook.so"), (a.cuhook, "the cuhook CLI")))
    workdir = work_directory(a.workdir, "cuhook-cap-")
    pb = Problems()

    plain = parse_target_output(run([a.driver_user, "--threads", str(a.threads), "--iters", str(a.iters), a.lib],
                                    env=clean_env(), what="driver_user (untraced)").stdout)
    ref_path, ref_out = traced(a, workdir, "reference.bin", [])
    cap_path, cap_out = traced(a, workdir, "capped.bin", ["--max-size", str(a.cap)])
    for what, out in (("reference", ref_out), ("capped", cap_out)):
        pb.check(out.get("checksum") == plain.get("checksum"),
                 f"{what}: checksum {out.get('checksum')}, untraced {plain.get('checksum')}")
    ref, cap = read_trace(ref_path), read_trace(cap_path)
    ref_size, cap_size = os.path.getsize(ref_path), os.path.getsize(cap_path)
    print(f"reference: {ref_size} bytes, {ref.end_events} events, {sum(ref.counted.values())} counted calls; "
          f"capped at {a.cap}: {cap_size} bytes, {cap.end_events} events, END dropped {cap.end_dropped}")
    if ref_size <= 2 * a.cap:
        raise Fatal(f"the reference trace is {ref_size} bytes: raise --iters so that a cap of {a.cap} "
                    "bytes keeps most of it out")
    pb.check(ref.has_end and ref.end_dropped == 0, f"reference: END {ref.has_end}, dropped {ref.end_dropped}")

    # the bound
    pb.check(cap_size <= a.cap, f"the capped trace is {cap_size} bytes, more than the {a.cap}-byte cap")
    # and filled up to it: the records that fit are written, only the closing blocks' room
    # (under 300 bytes) and the first block that did not fit (a few hundred bytes) are left
    pb.check(cap_size >= a.cap - FILL_SLACK,
             f"the capped trace is {cap_size} bytes: writing stopped more than {FILL_SLACK} bytes below the cap")
    pb.check(cap.has_end, "the capped trace has no END block")
    # every record accounted for
    pb.check(cap.end_events is not None and cap.end_dropped is not None and
             cap.end_events + cap.end_dropped == ref.end_events,
             f"capped: {cap.end_events} events written + {cap.end_dropped} dropped, "
             f"the reference has {ref.end_events}")
    pb.check(0 < (cap.end_dropped or 0) < ref.end_events, f"capped: {cap.end_dropped} dropped")
    notes = [m for _, text in cap.notes for m in [CAP_NOTE.search(text)] if m]
    if pb.check(len(notes) == 1, f"one NOTE saying the cap was reached expected; notes: {cap.notes}"):
        size, events, counted = (int(x) for x in notes[0].groups())
        pb.check(size == a.cap, f"the note names a cap of {size} bytes")
        pb.check(events == cap.end_dropped, f"the note says {events} records, the END block {cap.end_dropped}")
        pb.check(sum(cap.counted.values()) + counted == sum(ref.counted.values()),
                 f"capped: {sum(cap.counted.values())} counted calls written + {counted} not, "
                 f"the reference has {sum(ref.counted.values())}")
    ref_notes = [text for _, text in ref.notes if CAP_NOTE.search(text)]
    pb.check(not ref_notes, f"the reference (no cap) says a cap was reached: {ref_notes}")

    # readable, complete, the drops shown
    rep = report_json(a.cuhook, cap_path, workdir)  # --strict: exits 3 on a damaged trace
    pb.check(rep.get("complete") is True and not rep.get("truncated"),
             f"report: complete {rep.get('complete')}, truncated {rep.get('truncated')}")
    pb.check(rep.get("dropped") == cap.end_dropped, f"report: {rep.get('dropped')} dropped, END {cap.end_dropped}")
    pb.check(rep.get("events") == cap.end_events,
             f"report read {rep.get('events')} events, the END block says {cap.end_events} were written")
    for key in ("unknown_function_ids", "orphan_exits", "corrupt_records", "block_gaps"):
        pb.check(rep.get(key, 0) == 0, f"report: {key} = {rep.get(key)}")
    pb.exit()


if __name__ == "__main__":
    run_main(main)
