#!/usr/bin/env python3
"""Tests of the streamed call-by-call exports, `cuhook report --stream --format jsonl|csv|chrome|
perfetto|sqlite|json` (docs/report.md, "Streaming report: bounded memory"): on the same traces, the streamed
output holds exactly the rows or events of a whole read (`--no-stream`), in another order, so
they are compared as sorted rows or as parsed slices; what streaming leaves out is said; memory
stays bounded.

    test_stream_exports.py --cuhook EXE --gen GEN_TRACE TEST

Exit 0 pass, 1 fail."""
import argparse
import json
import os
import sqlite3
import subprocess

import perfetto_decode
import test_report as tr  # the report tests' helpers: this file's directory is on sys.path
import test_stream as ts
from cuhooktest import run_case
from test_report import check, eq

A = None
TMP = None


def gen(name, *opts):
    tr.A, tr.TMP = A, TMP
    return tr.gen(name, *opts)


def run(args, rc=0):
    tr.A = A
    return tr.run(args, rc=rc)


def traces():
    """The report tests' traces: multi-thread with DATA records, nesting finishing out of start
    order, counted calls, kernel names, an entry-only call and calls left open at the end,
    version 5 records."""
    ts.TMP = TMP
    return {"vary": gen("vary", "big", "--calls", "30000", "--threads", "4", "--vary"),
            "vary5": gen("vary5", "big", "--calls", "20000", "--threads", "3", "--vary", "--tsc", "--v5"),
            "nest": ts.nest_trace(os.path.join(TMP, "nest.bin")),
            "counts": gen("counts", "hot", "--count", "--iterations", "48", "--tsc"),
            "basic": gen("basic", "basic"),
            "kernels": gen("kernels", "kernels"),
            "unfinished": gen("unfinished", "basic", "--unfinished", "--no-end")}


def cases(p):
    """Argument lists to export both ways: each trace, several files merged and --separate, filters."""
    out = [[path] for path in p.values()]
    out += [[p["vary"], p["basic"], p["kernels"]], ["--separate", p["basic"], p["nest"]],
            ["--thread", "w1,w3", "--funcs", "-cuMemAlloc*", p["vary"]], ["--time-range", "5ms:40ms", p["vary5"]]]
    return out


def both(fmt, args, binary=False):
    """The export of args read whole and streamed: (whole, streamed, streamed's stderr)."""
    outs = []
    for mode in ("--no-stream", "--stream"):
        if binary:
            path = os.path.join(TMP, f"out{mode}.{fmt}")
            _, err = run(["report", "-f", fmt, mode, "--force", "-o", path, *args], rc=None)
            with open(path, "rb") as f:
                outs.append((f.read(), err))
        else:
            outs.append(run(["report", "-f", fmt, mode, *args], rc=None))
    return outs[0][0], outs[1][0], outs[1][1]


def what(args):
    return " ".join(os.path.basename(a) for a in args)


def no_device(rows):
    """jsonl rows without their "device" (not attributed when streaming: null there)."""
    out = []
    for ln in rows:
        r = json.loads(ln)
        r.pop("device", None)
        out.append(json.dumps(r, sort_keys=True))
    return out


def test_jsonl():
    """Every call a row, the same rows (ids and parents those of the whole read; "device" null)."""
    p = traces()
    for args in cases(p):
        whole, stream, _ = both("jsonl", args)
        check(all(json.loads(ln)["device"] is None for ln in stream.splitlines()), f"jsonl {what(args)}: device null")
        w, s = no_device(whole.splitlines()), no_device(stream.splitlines())
        check(len(w) > 0, f"jsonl {what(args)}: rows to compare")
        eq(len(s), len(w), f"jsonl {what(args)}: rows")
        eq(sorted(s), sorted(w), f"jsonl {what(args)}: the rows")
    whole, stream, _ = both("jsonl", [p["nest"]])
    check(stream.splitlines() != whole.splitlines(), "nest: streamed in finish order (a call after its children)")
    whole, stream, _ = both("jsonl", [p["basic"]])
    eq(len(stream.splitlines()), sum(n for n, _ in tr.BASIC_CALLS.values()), "jsonl basic: one row per call")
    rows = [json.loads(ln) for ln in stream.splitlines()]
    check(any(r["decoded"] for r in rows) and any("vecAdd" in r["details"] for r in rows),
          "streamed rows carry the DATA records and the kernel names")


def test_csv():
    """The same header first, then the same rows (call_device, the last column, empty)."""
    p = traces()
    for args in cases(p):
        whole, stream, _ = both("csv", args)
        check(all(ln.endswith(",") for ln in stream.splitlines()[1:]), f"csv {what(args)}: call_device empty")
        w = [ln.rsplit(",", 1)[0] for ln in whole.splitlines()]
        s = [ln.rsplit(",", 1)[0] for ln in stream.splitlines()]
        check(len(w) > 1, f"csv {what(args)}: rows to compare")
        eq(s[0], w[0], f"csv {what(args)}: header")
        eq(len(s), len(w), f"csv {what(args)}: rows")
        eq(sorted(s[1:]), sorted(w[1:]), f"csv {what(args)}: the rows")


def chrome_slices(text):
    """A Chrome trace's events as a sorted list: each begin/end pair (matched per thread, nested)
    or complete event as one slice with its name, category, times and args; the others as they
    are. Fails on an end without its begin, or a begin left open."""
    doc = json.loads(text)
    out, open_ = [], {}
    for e in doc["traceEvents"]:
        key = (e.get("pid"), e.get("tid"))
        if e["ph"] == "B":
            open_.setdefault(key, []).append(e)
        elif e["ph"] == "E":
            check(open_.get(key), f"an end event without its begin: {e}")
            b = open_[key].pop()
            eq(b["name"], e["name"], "an end event closes the slice of its name")
            out.append(("slice", key, b["name"], b["cat"], b["ts"], e["ts"], json.dumps(e.get("args"), sort_keys=True)))
        elif e["ph"] == "X":
            out.append(("slice", key, e["name"], e["cat"], e["ts"], e["ts"] + e["dur"],
                        json.dumps(e.get("args"), sort_keys=True)))
        else:
            out.append((e["ph"], key, e["name"], e.get("cat"), e.get("ts"), None, json.dumps(e.get("args"), sort_keys=True)))
    check(all(not s for s in open_.values()), "every begin event ended")
    return sorted(out, key=repr), doc.get("otherData")


def test_chrome():
    """The same slices (begin/end pairs nested per thread, args on the end), instants, counters
    and names; the same time origin."""
    p = traces()
    for args in cases(p):
        whole, stream, _ = both("chrome", args)
        (w, wo), (s, so) = chrome_slices(whole), chrome_slices(stream)
        check(len(w) > 2, f"chrome {what(args)}: events to compare")
        eq(len(s), len(w), f"chrome {what(args)}: events")
        eq(s, w, f"chrome {what(args)}: the events")
        eq(so, wo, f"chrome {what(args)}: otherData")
    _, s = chrome_slices(both("chrome", [p["counts"]])[1])
    w, _ = chrome_slices(both("chrome", [p["counts"]])[0])
    check(any(e[0] == "C" for e in w), "counted calls as counters")


MEMORY_TRACK = 0xffffffff  # counter_uuid(k, UINT32_MAX): the memory in use, not streamed


def perfetto_slices(data):
    """A Perfetto trace's events (decoded with its sequences' state) as a sorted list: each
    begin/end pair of a track as one slice with its name, categories, times and annotations (an
    end's merged in, as trace_processor does); the other events as they are; the tracks. The
    memory counter track is set aside."""
    path = os.path.join(TMP, "decode.pftrace")
    with open(path, "wb") as f:
        f.write(data)
    t = perfetto_decode.load(path)
    eq(t.errors, [], "what the Perfetto trace names but does not define")
    out, open_ = [], {}
    for e in t.events:
        k = e["track"]
        if k is not None and k & 0xffffffff == MEMORY_TRACK and k >> 60 == 3:
            continue
        if e["type"] == 1:
            open_.setdefault(k, []).append(e)
        elif e["type"] == 2:
            check(open_.get(k), f"a slice end without its begin on track {k:#x}")
            b = open_[k].pop()
            ann = dict(b["annotations"], **e["annotations"])
            out.append(("slice", k, b["name"], tuple(b["categories"]), b["ts"], e["ts"], json.dumps(ann, sort_keys=True)))
        else:
            out.append((e["type"], k, e["name"], tuple(e["categories"]), e["ts"], e["counter"],
                        json.dumps(e["annotations"], sort_keys=True)))
    check(all(not s for s in open_.values()), "every slice ended")
    tracks = sorted((u, json.dumps(d, sort_keys=True, default=str)) for u, d in t.tracks.items()
                    if not (u & 0xffffffff == MEMORY_TRACK and u >> 60 == 3))
    return sorted(out, key=repr), tracks, t.snapshot


def test_perfetto():
    """The same slices (nested per thread track, with their annotations), instants, counted-call
    counters, tracks and clock snapshot; the memory track is left out, and said so."""
    p = traces()
    for args in cases(p):
        whole, stream, err = both("perfetto", args, binary=True)
        (w, wt, wc), (s, st, sc) = perfetto_slices(whole), perfetto_slices(stream)
        check(len(w) > 2, f"perfetto {what(args)}: events to compare")
        eq(len(s), len(w), f"perfetto {what(args)}: events")
        eq(s, w, f"perfetto {what(args)}: the events")
        eq(st, wt, f"perfetto {what(args)}: the tracks")
        eq(sc, wc, f"perfetto {what(args)}: the clock snapshot")
    _, _, err = both("perfetto", [p["basic"]], binary=True)
    check("memory counter track" in err and "left out" in err, f"the memory track said to be left out: {err}")


def json_same(w, s, what):
    """A streamed trace's json against the whole read's: every member the same but the sections
    it names in "left_out" (absent), the medians (a sketch: within 1/128) and the standard
    deviations (a running sum: within rounding)."""
    eq(s.get("streamed"), True, f"{what}: marked streamed")
    for key, value in w.items():
        if key in s["left_out"]:
            check(key not in s, f"{what}: {key} left out, and said so")
            continue
        check(key in s, f"{what}: {key} in the streamed json")
        if key != "functions":
            eq(s[key], value, f"{what}: {key}")
            continue
        eq([f["name"] for f in s[key]], [f["name"] for f in value], f"{what}: the functions, in order")
        for a, b in zip(value, s[key]):
            for col, x in a.items():
                if col == "med_ns":
                    check(abs(b[col] - x) <= x / 128 + 1, f"{what}: {a['name']}'s median {b[col]} for {x}")
                elif col == "stddev_ns":
                    check(abs(b[col] - x) <= x * 1e-6 + 0.1, f"{what}: {a['name']}'s stddev {b[col]} for {x}")
                else:
                    eq(b[col], x, f"{what}: {a['name']}'s {col}")
    check(set(s["left_out"]) >= {"stages", "gaps", "kernels", "findings", "gpu"}, f"{what}: left_out {s['left_out']}")


def test_json():
    """The json report streamed: the whole read's members, the sections needing every call named
    in "left_out" (and on stderr)."""
    p = traces()
    for args in [[path] for path in p.values()] + [["--separate", p["basic"], p["kernels"]],
                                                   ["--thread", "w1,w3", "--funcs", "-cuMemAlloc*", p["vary"]]]:
        whole, stream, err = both("json", args)
        check("left_out" in err, f"json {what(args)}: said on stderr: {err}")
        w, s = json.loads(whole), json.loads(stream)
        if "traces" in w:
            eq(len(s["traces"]), len(w["traces"]), f"json {what(args)}: traces")
            for a, b in zip(w["traces"], s["traces"]):
                json_same(a, b, f"json {what(args)}")
        else:
            json_same(w, s, f"json {what(args)}")
    w = json.loads(both("json", [p["kernels"]])[1])
    check(any(c["details"].startswith("gemm grid") for c in w["slowest_calls"]), "streamed slowest calls name their kernels")


def lost_exit_trace(path):
    """A call whose EXIT was lost (the next ENTRY at its depth) after a call nested in it ended."""
    import struct
    from cuhooktest import tracewriter as st
    t = st.Trace()
    t.lib(0, "/usr/lib/x86_64-linux-gnu/libcuda.so.1")
    t.funcs(0, ["cuParent", "cuChild", "cuNext"])
    t.thread(100, "main")
    t.clock(0)

    def entry(func, ns, depth):
        return struct.pack("<BBHIQHBB4s", st.REC_ENTRY, 0, 24, func, st.START_NS + ns, depth, 0, 6, b"")

    def exit_(func, ns, depth):
        return struct.pack("<BBHIQH6sQ", st.REC_EXIT, 0, 32, func, st.START_NS + ns, depth, b"", 0)
    recs = [entry(0, 1000, 0), entry(1, 1100, 1), exit_(1, 1200, 1), entry(2, 2000, 0), exit_(2, 2100, 0)]
    t.block(st.EVENTS, struct.pack("<II", 100, len(recs)) + b"".join(recs))
    t.events += len(recs)
    t.end(1)
    t.write(path)
    return path


def test_lost_exit():
    """A call whose EXIT was lost after its nested call was written: read whole it is an instant;
    streamed its begin went out with the nested call's, so it ends at that call's end (every
    begin ended); the other calls the same both ways."""
    path = lost_exit_trace(os.path.join(TMP, "lost.bin"))
    whole, stream, _ = both("chrome", [path])
    (w, _), (s, _) = chrome_slices(whole), chrome_slices(stream)
    wp = [e for e in w if e[2] == "cuParent"]
    sp = [e for e in s if e[2] == "cuParent"]
    eq([e[0] for e in wp], ["i"], "chrome whole: the call without its EXIT an instant")
    child = next(e for e in s if e[2] == "cuChild")
    eq([(e[0], e[4], e[5]) for e in sp], [("slice", wp[0][4], child[5])], "chrome streamed: it ends with its child")
    eq([e for e in s if e[2] != "cuParent"], [e for e in w if e[2] != "cuParent"], "chrome: the other calls")
    whole, stream, _ = both("perfetto", [path], binary=True)
    (w, _, _), (s, _, _) = perfetto_slices(whole), perfetto_slices(stream)
    eq([e[0] for e in w if e[2] == "cuParent"], [3], "perfetto whole: an instant")
    eq([e[0] for e in s if e[2] == "cuParent"], ["slice"], "perfetto streamed: a slice, ended")
    eq([e for e in s if e[2] != "cuParent"], [e for e in w if e[2] != "cuParent"], "perfetto: the other calls")


def db_tables(path):
    """Every table of a database as sorted rows, and per function its calls and total time."""
    db = sqlite3.connect(path)
    out = {t: sorted(db.execute(f"SELECT * FROM {t}").fetchall(), key=repr)
           for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    out["per function"] = sorted(db.execute("SELECT f.name, count(*), sum(c.dur_ns) FROM calls c JOIN functions f "
                                            "ON f.id = c.function GROUP BY f.name").fetchall())
    out["indexes and views"] = sorted(db.execute("SELECT name FROM sqlite_master WHERE type IN ('index', 'view')"))
    db.close()
    return out


def test_sqlite():
    """The same database: every table's rows (call ids and parents those of a whole read), the
    same per-function calls and total times, the same indexes."""
    p = traces()
    for args in cases(p):
        paths = [os.path.join(TMP, f"{m}.sqlite") for m in ("whole", "stream")]
        for mode, path in zip(("--no-stream", "--stream"), paths):
            run(["report", "-f", "sqlite", mode, "--force", "-o", path, *args], rc=None)
        w, s = db_tables(paths[0]), db_tables(paths[1])
        check(len(w["calls"]) > 0 and w["per function"], f"sqlite {what(args)}: calls to compare")
        eq(sorted(s), sorted(w), f"sqlite {what(args)}: tables")
        for table in w:
            eq(len(s[table]), len(w[table]), f"sqlite {what(args)}: rows of {table}")
            eq(s[table], w[table], f"sqlite {what(args)}: {table}")
    counted = os.path.join(TMP, "counted.sqlite")
    run(["report", "-f", "sqlite", "--stream", "--force", "-o", counted, p["counts"]])
    check(db_tables(counted)["counted"], "the counted calls' table filled")
    # an existing file is not replaced without --force, and stays as it was
    _, err = run(["report", "-f", "sqlite", "--stream", "-o", counted, p["basic"]], rc=1)
    check("--force" in err and db_tables(counted)["counted"], f"an existing database kept: {err}")


def test_left_out():
    """A trace with call stacks: streamed, the exports say on stderr (and chrome in otherData)
    that its stacks are left out."""
    path = ts.stacks_trace(os.path.join(TMP, "stacks.bin"))
    for fmt in ("jsonl", "csv", "chrome"):
        out, err = run(["report", "-f", fmt, "--stream", path])
        check("call stacks are not read when streaming" in err, f"{fmt}: the warning: {err}")
        if fmt == "chrome":
            eq(json.loads(out)["otherData"].get("left_out_by_streaming"), "call stacks", "chrome: otherData says it")
        if fmt == "jsonl":
            eq(len(out.splitlines()), 2, "jsonl: both calls")


def test_bounded():
    """Streamed, every export keeps no call: its peak memory stays under half the file's size,
    where a whole read takes more than the file (bounds 3x off the measured ones: not a benchmark)."""
    path = gen("big", "big", "--calls", "1500000", "--threads", "4", "--tsc")
    size_kib = os.path.getsize(path) // 1024

    # Under AddressSanitizer (the sanitizer pass) freed memory waits in its quarantine, up to
    # 256 MiB: the Perfetto export, which frees a buffer per call, then peaked at 432 MB (62 MB
    # without the quarantine). What is measured here is the report's own memory.
    env = dict(os.environ, ASAN_OPTIONS=":".join(x for x in (os.environ.get("ASAN_OPTIONS"), "quarantine_size_mb=0") if x))

    def peak(args):
        p = subprocess.Popen([A.cuhook] + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        eq(os.waitstatus_to_exitcode(status), 0, f"cuhook {' '.join(args)}")
        return ru.ru_maxrss
    whole = peak(["report", "-f", "jsonl", "--no-stream", path])
    check(whole > size_kib, f"a whole read holds the file: {whole} KiB for {size_kib} KiB")
    for fmt in ("json", "jsonl", "csv", "chrome", "perfetto", "sqlite"):
        out = ["--force", "-o", os.path.join(TMP, "big.sqlite")] if fmt == "sqlite" else []
        kib = peak(["report", "-f", fmt, "--stream", *out, path])
        check(kib < size_kib // 2, f"{fmt} streamed: {kib} KiB, want < {size_kib // 2} KiB (file {size_kib} KiB)")


def main():
    global A, TMP
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("test")
    A = ap.parse_args()
    run_case(globals(), "test_", A.test, "cuhook-stream-exports-test-")


if __name__ == "__main__":
    main()
