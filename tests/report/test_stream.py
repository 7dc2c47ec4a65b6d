#!/usr/bin/env python3
"""Tests of the streaming text report, `cuhook report --stream` (docs/report.md, "Streaming report:
bounded memory"): the same traces reported both ways give the same numbers for what the
streaming report shows (every section byte for byte, the API summary's medians within the
sketch's stated 1/128), it names the sections it leaves out, it keeps no call in memory, and
its options are refused where they cannot work.

    test_stream.py --cuhook EXE --gen GEN_TRACE TEST

Exit 0 pass, 1 fail."""
import argparse
import os
import re
import struct
import subprocess
import sys

import test_report as tr  # the report tests' helpers: this file's directory is on sys.path
from cuhooktest import run_case
from test_report import Fail, check, eq

A = None
TMP = None

SUMMARY = "CUDA driver API summary"
LEFT_OUT = "Left out by the streaming report"
# whole-read section titles (their start) -> the name the streaming report gives them
LEFT_OUT_NAMES = {"GPU": "GPU activity", "Memory in use": "memory in use", "Streams": "streams",
                  "Devices": "devices", "Pipeline stages": "pipeline stages", "Kernels": "kernels", "Findings": "findings",
                  "Host gaps": "host gaps", "Behind the API": "behind the API", "Call sites": "call sites",
                  "ioctl": "ioctls", "Timeline": "timeline"}
UNITS = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def gen(name, *opts):
    tr.A, tr.TMP = A, TMP
    return tr.gen(name, *opts)


def report(path, *opts, rc=0):
    tr.A = A
    out, _ = tr.run(["report", "--no-color", *opts, path], rc=rc)
    return out


def sections(text):
    """{title: lines} of a text report; the header is under "header"."""
    out, cur = {}, "header"
    for ln in text.splitlines():
        if ln and not ln.startswith(" ") and not ln.startswith("cuhook report:"):
            cur = ln
            out[cur] = []
        else:
            out.setdefault(cur, []).append(ln)
    return out


def summary_rows(lines):
    """The API summary's rows as {name: {column: cell}}, cut at the header's dash runs."""
    dash = next(i for i, ln in enumerate(lines) if ln.strip().startswith("---"))
    heads = re.findall(r"\S+(?: \S+)*", lines[dash - 1])
    spans = [m.span() for m in re.finditer(r"-+", lines[dash])]
    # right-aligned columns end where their dashes end; the last (Name) runs to the line's end
    rows = {}
    for ln in lines[dash + 1:]:
        if not ln.strip() or ln.strip().startswith("("):
            continue
        starts = [0] + [e for _, e in spans[:-1]]
        cells = [ln[s:e].strip() for s, (_, e) in zip(starts, spans[:-1])] + [ln[spans[-1][0]:].strip()]
        rows[cells[-1]] = dict(zip(heads, cells))
    return rows


def ns_of(cell):
    """A duration cell ("2.495 us") in ns, and half its last printed digit (the rounding)."""
    num, unit = cell.split()
    decimals = len(num.partition(".")[2])
    return float(num) * UNITS[unit], 0.5 * 10 ** -decimals * UNITS[unit]


def compare(path, *opts):
    """Report path both ways (with opts); every section the streaming report shows must be the
    whole read's, byte for byte, except the summary's medians: within 1/128 (and rounding)."""
    whole, stream = report(path, "--no-stream", *opts), report(path, "--stream", *opts)
    w, s = sections(whole), sections(stream)
    what = f"{os.path.basename(path)} {' '.join(opts)}"
    check(LEFT_OUT in s, f"{what}: the streaming report says what it leaves out")
    for title, lines in s.items():
        if title in (SUMMARY, LEFT_OUT):
            continue
        check(title in w, f"{what}: section {title!r} is not in the whole read's report")
        eq(lines, w[title], f"{what}: section {title!r}")
    if SUMMARY in w or SUMMARY in s:
        wr, sr = summary_rows(w[SUMMARY]), summary_rows(s[SUMMARY])
        eq(sorted(sr), sorted(wr), f"{what}: the summary's functions")
        eq(list(sr), list(wr), f"{what}: the summary's order")
        for name, row in wr.items():
            srow = sr[name]
            for col, cell in row.items():
                if col == "Med" and cell != "-":
                    (a, ra), (b, rb) = ns_of(srow[col]), ns_of(cell)
                    check(abs(a - b) <= b / 128 + ra + rb,
                          f"{what}: {name}'s median {srow[col]} is not within 1/128 of {cell}")
                else:
                    eq(srow[col], cell, f"{what}: {name}'s {col}")
    left = " ".join(s[LEFT_OUT])
    for title in w:
        if title in s or title == "header":
            continue
        name = next((n for k, n in LEFT_OUT_NAMES.items() if title.startswith(k)), None)
        check(name is not None and name in left,
              f"{what}: the whole read's section {title!r} is neither shown nor named as left out")
    return w, s


def test_same_numbers():
    """Multi-thread traces with nesting, DATA records, counted calls, an entry-only call, a lost
    EXIT and refused functions, version 4 and 5 records: both ways the same numbers."""
    vary = gen("vary", "big", "--calls", "120000", "--threads", "4", "--vary")
    _, s = compare(vary)
    meds = [r["Med"] for r in summary_rows(s[SUMMARY]).values()]
    check(len(set(meds)) == 5 and all(m.endswith("us") or m.endswith("ns") for m in meds),
          "the varied trace has a median of its own per function")
    check("Call nesting" in s and "Slowest calls" in s and "Time by category (outermost calls)" in s,
          "nesting, slowest calls and categories are streamed")
    compare(gen("vary5", "big", "--calls", "60000", "--threads", "3", "--vary", "--tsc", "--v5"))
    _, s = compare(gen("counts", "hot", "--count", "--iterations", "48", "--tsc"))
    check(any("counted" in r["Name"] for r in summary_rows(s[SUMMARY]).values()), "counted calls in the summary")
    compare(gen("basic", "basic"))
    compare(gen("unfinished", "basic", "--unfinished", "--no-end"))
    compare(gen("kernels", "kernels"))


def nest_trace(path):
    """Two threads making 24 distinct (caller, callee) pairs of traced calls: the later-starting
    thread's EVENTS block first in the file, so the pairs finish in another order than they
    start, and more pairs than the report lists (16)."""
    from cuhooktest import tracewriter as st
    names = [f"cuParent{i}" for i in range(6)] + [f"cuChild{i}" for i in range(4)]
    t = st.Trace()
    t.lib(0, "/usr/lib/x86_64-linux-gnu/libcuda.so.1")
    t.funcs(0, names)
    t.thread(100, "early")
    t.thread(200, "late")
    t.clock(0)

    def nested(parents, t0):
        recs, now = b"", t0
        for p in parents:
            recs += struct.pack("<BBHIQHBB4s", st.REC_ENTRY, 0, 24, p, st.START_NS + now, 0, 0, 6, b"")
            for c in range(6, 10):
                recs += struct.pack("<BBHIQHBB4s", st.REC_ENTRY, 0, 24, c, st.START_NS + now + 10 * c, 1, 0, 6, b"")
                recs += struct.pack("<BBHIQH6sQ", st.REC_EXIT, 0, 32, c, st.START_NS + now + 10 * c + 5 + p, 1, b"", 0)
            recs += struct.pack("<BBHIQH6sQ", st.REC_EXIT, 0, 32, p, st.START_NS + now + 200, 0, b"", 0)
            now += 1000
        return recs
    late = nested([4, 5], 50_000)
    early = nested([0, 1, 2, 3, 4], 1_000)
    t.block(st.EVENTS, struct.pack("<II", 200, len(late) // 28) + late)   # record counts: 24 + 32 bytes per pair
    t.block(st.EVENTS, struct.pack("<II", 100, len(early) // 28) + early)
    t.events += (len(late) + len(early)) // 28
    t.end(2)
    t.write(path)
    return path


def test_nesting():
    """More nesting pairs than listed, finishing in another order than they start: the streaming
    report lists the whole read's pairs, with their counts and times."""
    w, s = compare(nest_trace(os.path.join(TMP, "nest.bin")))
    pairs = [ln for ln in s["Call nesting"] if " > " in ln]
    eq(len(pairs), 16, "pairs listed")
    check(pairs[0].startswith("  cuParent0 > cuChild0: 1 call"), f"the earliest pair first: {pairs[0]}")


def test_filters():
    """--funcs, --thread, --time-range and --sort select and order as in a whole read."""
    vary = gen("vary", "big", "--calls", "80000", "--threads", "4", "--vary")
    _, s = compare(vary, "--thread", "w1,w3")
    check(re.search(r"\(80000 calls, 40000 selected\)", "\n".join(s["header"])), "the thread filter selects half")
    compare(vary, "--funcs", "cuMem*,cuLaunch*", "--sort", "calls")
    compare(vary, "--time-range", "10ms:50ms", "--sort", "med", "--top", "3")
    compare(gen("counts", "hot", "--count", "--iterations", "48", "--tsc"), "--funcs", "-cuLaunchKernel")


def peak_rss(args):
    """Run cuhook with args: (stdout, its peak RSS in KiB)."""
    with open(os.path.join(TMP, "out.txt"), "w+") as out:
        p = subprocess.Popen([A.cuhook] + args, stdout=out, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        eq(os.waitstatus_to_exitcode(status), 0, f"cuhook {' '.join(args)}")
        out.seek(0)
        return out.read(), ru.ru_maxrss


def test_bounded():
    """The streaming report keeps no call: its peak memory stays under half the file's size, where
    a whole read takes more than the file (a bound 3x off the measured one: not a benchmark)."""
    path = gen("big", "big", "--calls", "1500000", "--threads", "4", "--tsc")
    size_kib = os.path.getsize(path) // 1024
    _, whole = peak_rss(["report", "--no-stream", path])
    out, stream = peak_rss(["report", "--stream", path])
    check(whole > size_kib, f"a whole read holds the file: {whole} KiB for {size_kib} KiB")
    check(stream < size_kib // 2, f"streaming: {stream} KiB, want < {size_kib // 2} KiB (file {size_kib} KiB)")
    check("(1500000 calls)" in out, "every call counted")
    check("DATA records" not in out, "the DATA records kept with their calls, not skipped")


def test_pipe():
    """A trace read from a pipe with --stream: its bytes go to an unnamed temporary file, not to
    memory (peak under half the trace's size, as for a file), and the report is the file's, but for
    the file's name. TMPDIR that cannot hold the file: a clear refusal."""
    path = gen("big", "big", "--calls", "1500000", "--threads", "4", "--tsc")
    size_kib = os.path.getsize(path) // 1024
    from_file, _ = peak_rss(["report", "--stream", "--no-color", path])
    with open(path, "rb") as src, open(os.path.join(TMP, "out.txt"), "w+") as out:
        p = subprocess.Popen([A.cuhook, "report", "--stream", "--no-color", "/dev/stdin"], stdin=subprocess.PIPE,
                             stdout=out, stderr=subprocess.DEVNULL)
        while chunk := src.read(1 << 20):
            p.stdin.write(chunk)
        p.stdin.close()
        _, status, ru = os.wait4(p.pid, 0)
        eq(os.waitstatus_to_exitcode(status), 0, "cuhook report --stream /dev/stdin")
        out.seek(0)
        from_pipe = out.read()
    check(ru.ru_maxrss < size_kib // 2, f"a pipe streamed: {ru.ru_maxrss} KiB, want < {size_kib // 2} KiB "
          f"(trace {size_kib} KiB)")
    eq(from_pipe.replace("/dev/stdin", path), from_file, "the piped report, but for the file's name")
    tr.A = A
    cat = subprocess.Popen(["cat", path], stdout=subprocess.PIPE)
    p = subprocess.run([A.cuhook, "report", "--stream", "/dev/stdin"], stdin=cat.stdout, capture_output=True,
                       text=True, env=dict(os.environ, TMPDIR=os.path.join(TMP, "no-such-dir")))
    cat.stdout.close()
    cat.wait()
    eq(p.returncode, 1, "a pipe with no room for its bytes")
    check("cannot keep the pipe's bytes in a temporary file" in p.stderr and "--no-stream" in p.stderr,
          f"why: {p.stderr}")


def test_options():
    """--stream with an export, or several files merged, is refused (exit 2); several files with
    --separate are streamed one after the other; a file that is not a trace is refused (exit 1)."""
    tr.A = A
    b = gen("basic", "basic")
    _, err = tr.run(["report", "--stream", "--format", "json", b, b], rc=2)
    check("add --separate" in err, "why --stream --format json with two merged files is refused")
    _, err = tr.run(["report", "--stream", b, b], rc=2)
    check("add --separate" in err, "why --stream with two merged files is refused")
    out, _ = tr.run(["report", "--stream", "--separate", "--no-color", b, b])
    eq(out.count(LEFT_OUT), 2, "two streamed reports")
    junk = os.path.join(TMP, "junk.bin")
    with open(junk, "wb") as f:
        f.write(b"not a trace" * 100)
    _, err = tr.run(["report", "--stream", junk], rc=1)
    check("not a cuhook trace" in err, f"a non-trace refused: {err}")
    out, _ = tr.run(["report", "--no-color", b])
    check(LEFT_OUT not in out, "a small file is read whole by default")
    # a file of 512 MiB or more streams by default: the trace, then sparse zeros (read as far as
    # the first bad block, so the test costs neither disk nor time)
    big = os.path.join(TMP, "sparse.bin")
    with open(b, "rb") as f, open(big, "wb") as g:
        g.write(f.read())
        g.truncate(512 << 20)
    out, err = tr.run(["report", "--no-color", big])
    check(LEFT_OUT in out and "bad block magic" in err, "a 512 MiB file streams by default")
    out, _ = tr.run(["report", "--no-color", "--no-stream", big])
    check(LEFT_OUT not in out and "Timeline" in out, "--no-stream reads it whole")
    out, _ = tr.run(["report", "-f", "folded", big])
    eq(out, tr.run(["report", "-f", "folded", "--no-stream", big])[0], "folded streams by default too, the same")
    _, err = tr.run(["report", "--stream", "--strict", "--no-color", gen("cut", "basic", "--no-end")], rc=3)
    check("truncated" in err, "--strict with a truncated trace: exit 3 and the warning")


def stacks_trace(path):
    """Two calls on one thread, the first with a call stack (agent option stacks=)."""
    from cuhooktest import tracewriter as st
    t = st.Trace()
    t.lib(0, "/usr/lib/x86_64-linux-gnu/libcuda.so.1")
    t.funcs(0, ["cuInit", "cuCtxSynchronize"])
    t.thread(100, "main")
    t.clock(0)
    t.stacks([(1, [0x401000, 0x402000])])
    t.thread_events(100, [(0, 1000, 500, 1), (1, 2000, 700, None)])
    t.end()
    t.write(path)
    return path


def test_folded():
    """--format folded streamed: the whole read's output byte for byte (one file, several files
    added up, filters); a trace with call stacks is folded without them, with a warning."""
    tr.A = A
    vary = gen("vary", "big", "--calls", "80000", "--threads", "4", "--vary", "--tsc", "--v5")
    paths = [vary, gen("basic", "basic"), gen("kernels", "kernels"), gen("counts", "hot", "--count", "--tsc"),
             gen("unfinished", "basic", "--unfinished", "--no-end")]
    for args in [[p] for p in paths] + [paths[:3], ["--thread", "w1,main", "--funcs", "-cuMemAlloc*", *paths[:2]],
                                        ["--time-range", "1ms:100ms", vary]]:
        whole, _ = tr.run(["report", "-f", "folded", "--no-stream", *args], rc=None)
        stream, _ = tr.run(["report", "-f", "folded", "--stream", *args], rc=None)
        check(whole.count("\n") > 2, f"folded {args}: stacks to compare")
        eq(stream, whole, f"folded {args} streamed")
    out, err = tr.run(["report", "-f", "folded", "--stream", stacks_trace(os.path.join(TMP, "stacks.bin"))])
    eq(out, "main;cuCtxSynchronize 700\nmain;cuInit 500\n", "folded stacks of a trace with call stacks, streamed")
    check("call stacks are not read when streaming" in err, f"the warning: {err}")


def main():
    global A, TMP
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("test")
    A = ap.parse_args()
    run_case(globals(), "test_", A.test, "cuhook-stream-test-")


if __name__ == "__main__":
    main()
