"""Compares runs of one deterministic workload (issue 21): untraced, traced by default, and
traced twice with --export-tables. Prints, and fails (exit 1) on what does not hold:

  outputs     every run's checksum lines identical (the program computed the same)
  tables      per trace: each table cuGetExportTable returned, what the agent did with its slots
              (its NOTE), every slot accounted for (patched + refused + already hooked + not the
              driver's code + empty = slots) and every refusal with its reason (a NOTE naming the
              slot); also the UUIDs, written to --uuids for the relocation check
  counts      calls per table function equal in the two --export-tables runs
  speed       tokens/s (GPT-2: the median of the iterations after the first) or wall seconds, side
              by side

  python3 export_tables_compare.py --cuhook CUHOOK --plain P.out --default D.out --et A.out B.out
                                   --traces A.bin B.bin [--uuids FILE] [--time P D A B (seconds)]"""
import argparse
import json
import re
import statistics
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--cuhook", required=True)
ap.add_argument("--plain", required=True)
ap.add_argument("--default", required=True)
ap.add_argument("--et", nargs=2, required=True)
ap.add_argument("--traces", nargs=2, required=True)
ap.add_argument("--uuids")
ap.add_argument("--time", nargs=4, type=float)
a = ap.parse_args()
fail = 0


def bad(msg):
    global fail
    fail = 1
    print("FAIL: " + msg)


def checksums(path):
    with open(path) as f:
        return re.findall(r"checksum (\w+)", f.read())


def tokens(path):
    with open(path) as f:
        v = [float(x) for x in re.findall(r"tokens/s ([0-9.]+)", f.read())]
    return statistics.median(v[1:]) if len(v) > 1 else None


runs = {"untraced": a.plain, "default": a.default, "export-tables 1": a.et[0], "export-tables 2": a.et[1]}
sums = {k: checksums(p) for k, p in runs.items()}
ref = sums["untraced"]
print(f"outputs: {len(ref)} checksum lines untraced")
if not ref:
    bad("no checksum line in the untraced run's output")
for k, s in sums.items():
    if s != ref:
        bad(f"{k}: checksums {s} differ from the untraced run's {ref}")
print("outputs identical" if all(s == ref for s in sums.values()) else "outputs DIFFER")

speed = {k: tokens(p) for k, p in runs.items()}
if all(v is not None for v in speed.values()):
    print("speed (tokens/s, median of the iterations after the first): " +
          ", ".join(f"{k} {v:.1f}" for k, v in speed.items()))
    print(f"  --export-tables vs default: {100 * (speed['export-tables 1'] / speed['default'] - 1):+.1f}%, "
          f"{100 * (speed['export-tables 2'] / speed['default'] - 1):+.1f}%")
if a.time:
    print("wall seconds: " + ", ".join(f"{k} {t:.2f}" for k, t in zip(runs, a.time)))

uuids = set()
per_trace = []
for tr in a.traces:
    text = subprocess.run([a.cuhook, "report", tr], capture_output=True, text=True).stdout
    notes = [l.split(None, 1)[1] for l in text.splitlines() if l.startswith("  note ") or l.startswith("  warning ")]
    summaries = [n for n in notes if n.startswith("export table ") and " slots: " in n]
    print(f"{tr}: {len(summaries)} tables read")
    for s in summaries:
        print("  " + s)
        uuids.add(s.split()[2].rstrip(":"))
        m = re.search(r"(\d+) slots: (\d+) functions patched, (\d+) refused, (\d+) already hooked, (\d+) not in the "
                      r"driver's code, (\d+) empty", s)
        if not m:
            bad(f"unreadable table summary: {s}")
            continue
        n, p, r, al, sk, em = map(int, m.groups())
        if p + r + al + sk + em != n:
            bad(f"slots not all accounted for: {s}")
    refusals = [n for n in notes if re.match(r"export:\S+: refused: ", n)]
    skipped = [n for n in notes if re.match(r"export:\S+: skipped: ", n)]
    others = [n for n in notes if n.startswith("export table ") and " slots: " not in n]
    want_ref = sum(int(re.search(r"(\d+) refused", s).group(1)) for s in summaries)
    if len(refusals) != want_ref:
        bad(f"{tr}: {want_ref} refusals counted, {len(refusals)} said with a reason")
    for n in refusals + skipped + others:
        print("  " + n)
    for n in others:
        uuids.add(n.split()[2].rstrip(":"))
    rep = json.loads(subprocess.run([a.cuhook, "report", "--format", "json", tr], capture_output=True, text=True).stdout)
    sect = rep.get("export_tables") or {"calls": 0, "slots": []}
    counts = {s["name"]: s["calls"] for s in sect["slots"]}
    per_trace.append(counts)
    print(f"  {sect['calls']} calls to {len(counts)} table functions; report: cuhook report {tr}")
if per_trace[0] != per_trace[1]:
    diff = {k: (per_trace[0].get(k), per_trace[1].get(k)) for k in set(per_trace[0]) | set(per_trace[1])
            if per_trace[0].get(k) != per_trace[1].get(k)}
    bad(f"calls per table function differ between the two runs: {diff}")
else:
    print(f"counts: the same in both runs for all {len(per_trace[0])} table functions "
          f"({sum(per_trace[0].values())} calls)")
if a.uuids:
    with open(a.uuids, "a") as f:
        for u in sorted(uuids):
            f.write(u + "\n")
sys.exit(fail)
