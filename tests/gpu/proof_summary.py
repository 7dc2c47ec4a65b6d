"""Reads the work folder of tests/gpu/proof.sh and writes OUTDIR/results.json and results.md.

  python3 tests/gpu/proof_summary.py WORKDIR OUTDIR

proof.sh runs it after every phase, so a run cut short still leaves results. Nothing here runs
a workload: it parses what the runs left in WORKDIR/runs (NAME = WORKLOAD.CONFIG.REP):
  NAME.out               the run's stdout and stderr ("checksum C", "iter I tokens/s X ...")
  NAME.report.json       `cuhook report --format json` of its trace
  NAME.cupti.PID.json    the CUPTI counter's {function: count}
  NAME.wrap.PID.json     the LD_PRELOAD wrapper's {function: count}
and WORKDIR/steps.tsv (every step's exit status, seconds, command), WORKDIR/info/*."""
import fnmatch
import glob
import json
import os
import re
import statistics
import sys

FAMILIES = ["cuLaunchKernel*", "cuMemAlloc*", "cuMemcpy*", "cuStreamSynchronize*", "cuCtxSynchronize*",
            "cuModuleLoad*", "cuLibraryLoad*"]
WRAPPED = ["cuInit", "cuGetProcAddress_v2", "cuMemAlloc_v2", "cuMemcpyHtoD_v2", "cuLaunchKernel", "cuLaunchKernelEx"]
WORKLOADS = {"driver_app": "driver_app (driver API, C)", "runtime_app": "runtime_app (runtime API, CUDA C++)",
             "mlp": "MLP inference (PyTorch)", "gpt2": "GPT-2 generation (PyTorch, transformers)"}
CONFIGS = {"base": "untraced", "cuhook": "cuhook run", "cupti": "CUPTI callback counter",
           "wrap": "LD_PRELOAD wrapper", "both": "cuhook run + CUPTI counter (same process)",
           "attach": "cuhook attach mid-run", "cudagdb": "cuda-gdb breakpoints"}
RATE = {"gpt2": "tokens/s", "mlp": "passes/s"}
GPT2_TARGET = 0.98

work, outdir = sys.argv[1], sys.argv[2]
runs_dir = os.path.join(work, "runs")


def read(path, default=None):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return default


def load_json(path):
    text = read(path)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as e:
        return {"_error": f"{os.path.basename(path)}: {e}"}


def median(xs):
    return statistics.median(xs) if xs else None


def in_families(name):
    return any(fnmatch.fnmatchcase(name, f) for f in FAMILIES)


# ---- steps, machine ---------------------------------------------------------------------------
steps = {}
for line in (read(os.path.join(work, "steps.tsv"), "") or "").splitlines()[1:]:
    parts = line.split("\t")
    if len(parts) >= 4:
        steps[parts[0]] = {"status": parts[1], "seconds": float(parts[2] or 0), "command": parts[3]}

info_dir = os.path.join(work, "info")
machine = {
    "date": (read(os.path.join(info_dir, "date.txt"), "") or "").strip(),
    "gpu": (read(os.path.join(info_dir, "gpu.csv"), "") or "").strip(),
    "versions": (read(os.path.join(info_dir, "versions.txt"), "") or "").strip(),
    "python": load_json(os.path.join(info_dir, "python.json")) or {},
    "params": dict(l.split("=", 1) for l in (read(os.path.join(info_dir, "params.txt"), "") or "").splitlines() if "=" in l),
}
exports = set((read(os.path.join(info_dir, "libcuda_exports.txt"), "") or "").split())


# ---- one run ----------------------------------------------------------------------------------
def merged_counts(pattern):
    """Sum of the {name: count} files a run left (one per process that loaded the tool)."""
    files = sorted(glob.glob(os.path.join(runs_dir, pattern)))
    if not files:
        return None
    total = {}
    for f in files:
        d = load_json(f)
        if not isinstance(d, dict) or "_error" in d:
            continue
        for k, v in d.items():
            total[k] = total.get(k, 0) + int(v)
    return total


def cuhook_report(name):
    r = load_json(os.path.join(runs_dir, name + ".report.json"))
    if r is None:
        return None
    if "_error" in r:
        return {"error": r["_error"]}
    if "traces" in r:  # several files: not what proof.sh writes, but read the first
        r = r["traces"][0]
    # recorded and counted calls alike (the agent counts a few queries by default)
    return {"counts": {f["name"]: f["calls"] + f.get("counted_calls", 0) for f in r.get("functions", [])},
            "events": r.get("events"), "calls": r.get("calls"), "dropped": r.get("dropped"),
            "truncated": r.get("truncated"), "duration_ns": r.get("duration_ns"),
            # status 10: excluded by the function filter (cudbg* by default), not refused
            "refused": [f"{f.get('name')} ({f.get('reason')})" for f in r.get("refused", []) if f.get("status") != 10],
            "excluded_by_filter": sum(1 for f in r.get("refused", []) if f.get("status") == 10)}


def run(name):
    out = read(os.path.join(runs_dir, name + ".out"))
    st = steps.get(name)
    if out is None and st is None:
        return None
    out = out or ""
    d = {"name": name, "status": st["status"] if st else "?", "seconds": st["seconds"] if st else None,
         "command": st["command"] if st else None, "checksums": re.findall(r"checksum ([0-9a-f]+)", out)}
    rates = [(int(i), float(x)) for i, x in re.findall(r"iter (\d+) (?:tokens|passes)/s ([\d.]+)", out)]
    d["rates"] = [x for i, x in rates if i > 0]  # iteration 0 is the warm-up
    m = re.search(r"^calls (\{.*\})$", out, re.M)
    d["own_calls"] = json.loads(m.group(1)) if m else None
    d["cuhook"] = cuhook_report(name)
    d["cupti"] = merged_counts(name + ".cupti.*.json")
    d["wrap"] = merged_counts(name + ".wrap.*.json")
    d["cupti_error"] = "; ".join(sorted(set(re.findall(r"cupti_counter: .*failed.*", out)))) or None
    return d


def runs_of(w, cfg):
    names = sorted({os.path.basename(p)[:-4] for p in glob.glob(os.path.join(runs_dir, f"{w}.{cfg}.*.out"))}
                   | {n for n in steps if re.fullmatch(re.escape(f"{w}.{cfg}.") + r"\d+", n)},
                   key=lambda n: int(n.rsplit(".", 1)[1]))
    return [r for r in (run(n) for n in names) if r]


def ok(r):
    return r is not None and r["status"] == "0"


# ---- cuda-gdb ---------------------------------------------------------------------------------
def gdb_counts(w):
    name = f"{w}.cudagdb.1"
    out = read(os.path.join(runs_dir, name + ".out"))
    funcs = (read(os.path.join(runs_dir, name + ".funcs"), "") or "").split()
    if out is None or not funcs:
        return None
    # Breakpoint N was set on line N of the list (every `break` makes one, pending or not). Where
    # `info breakpoints` names the function ("<cuLaunchKernel+4>", "<PENDING>  cuMemAlloc_v2", or
    # a location row "1.1 ... <f+4>") and the name differs, that is reported, not trusted: two
    # exports at one address would show under one name.
    hits, names, cur = {}, {}, None
    for line in out.splitlines():
        m = re.match(r"^(\d+)(?:\.\d+)?\s+(breakpoint\s+keep\s+\S+\s+)?", line)
        if m and (m.group(2) or "." in line.split()[0]):
            if m.group(2):
                cur = int(m.group(1))
                hits.setdefault(cur, 0)
            f = re.search(r"<([A-Za-z_][A-Za-z_0-9]*)(?:\+\d+)?>", line) or re.search(r"<PENDING>\s+(\S+)", line)
            if f and cur is not None and f.group(1) not in ("MULTIPLE", "PENDING"):
                names.setdefault(cur, f.group(1))
            continue
        m = re.search(r"breakpoint already hit (\d+) time", line)
        if m and cur is not None:
            hits[cur] = int(m.group(1))
    if not hits:
        return None
    counts = {funcs[n - 1]: c for n, c in hits.items() if 0 < n <= len(funcs)}
    mismatch = [f"breakpoint {n} set on {funcs[n - 1]} shows as {names[n]}" for n in sorted(names)
                if 0 < n <= len(funcs) and names[n] != funcs[n - 1]]
    if len(hits) != len(funcs):
        mismatch.append(f"{len(funcs)} breakpoints set, {len(hits)} listed")
    return counts, mismatch


# ---- per workload -----------------------------------------------------------------------------
results = {"machine": machine, "steps": steps, "workloads": {}, "throughput": {}, "wrapper": {},
           "ctx_bench": {}, "attach": {}, "failures": []}

for w in WORKLOADS:
    cfg_runs = {c: runs_of(w, c) for c in ["base", "cuhook", "cupti", "both", "wrap", "attach", "cudagdb"]}
    if not any(cfg_runs.values()):
        continue
    wr = {"runs": {c: [{k: r[k] for k in ("name", "status", "seconds", "checksums", "cupti_error")}
                       for r in rs] for c, rs in cfg_runs.items() if rs}}

    # Outputs identical: every checksum any run printed, by configuration.
    sums = {c: sorted({s for r in rs for s in r["checksums"]}) for c, rs in cfg_runs.items() if rs}
    distinct = sorted({s for v in sums.values() for s in v})
    without = [r["name"] for rs in cfg_runs.values() for r in rs if ok(r) and not r["checksums"]]
    wr["checksums"] = {"by_config": sums, "distinct": distinct, "completed_runs_without_checksum": without,
                       "identical": len(distinct) == 1}

    # Call counts against ground truth.
    first = lambda c: cfg_runs[c][0] if cfg_runs[c] else None  # noqa: E731
    both, alone_h, alone_c, base = first("both"), first("cuhook"), first("cupti"), first("base")
    sources = []
    if both and both["cuhook"] and "counts" in both["cuhook"]:
        sources.append(("cuhook (same process)", both["cuhook"]["counts"]))
    if both and both["cupti"] is not None:
        sources.append(("CUPTI (same process)", both["cupti"]))
    if alone_h and alone_h["cuhook"] and "counts" in alone_h["cuhook"]:
        sources.append(("cuhook run alone", alone_h["cuhook"]["counts"]))
    if alone_c and alone_c["cupti"] is not None:
        sources.append(("CUPTI alone", alone_c["cupti"]))
    if w == "driver_app" and base and base["own_calls"] is not None:
        sources.append(("program's own count", base["own_calls"]))
    g = gdb_counts(w) if w in ("driver_app", "runtime_app") else None
    gdb_notes = []
    if g is not None:
        sources.append(("cuda-gdb breakpoint hits", g[0]))  # covers the functions it had breakpoints on
        gdb_notes = g[1]
    # A run that completed but left no counts is a failure of that source: say so.
    missing = []
    for label, r, key in (("CUPTI (same process)", both, "cupti"), ("cuhook (same process)", both, "cuhook"),
                          ("CUPTI alone", alone_c, "cupti"), ("cuhook run alone", alone_h, "cuhook")):
        if r is not None and (r[key] is None or (key == "cuhook" and "counts" not in r[key])):
            why = (r["status"] if r["status"].startswith("skipped") else f"exit status {r['status']}, "
                   + (r["cupti_error"] if key == "cupti" and r["cupti_error"] else "no counts written"))
            missing.append({"source": label, "run": r["name"], "status": r["status"], "why": why})
    names = sorted({n for _, c in sources for n, v in c.items() if v and in_families(n)})
    rows = []
    for n in names:
        # a function a source does not count is absent from it (a count of 0); cuda-gdb only knows
        # the functions it had a breakpoint on
        vals = {s: c.get(n, None if s.startswith("cuda-gdb") else 0) for s, c in sources}
        vals = {s: v for s, v in vals.items() if v is not None}
        same = (vals["cuhook (same process)"] == vals["CUPTI (same process)"]
                if "cuhook (same process)" in vals and "CUPTI (same process)" in vals else None)
        rows.append({"function": n, "values": vals, "same_process_equal": same,
                     "all_equal": len(set(vals.values())) == 1, "exported": (n in exports) if exports else None})
    wr["counts"] = {"sources": [s for s, _ in sources], "rows": rows, "missing_sources": missing, "gdb_notes": gdb_notes,
                    "cupti_names_not_exported": [r["function"] for r in rows if r["exported"] is False]}
    wr["cuhook_trace"] = {k: v for k, v in ((both or {}).get("cuhook") or {}).items() if k != "counts"}
    results["workloads"][w] = wr

    # Throughput, from every iteration after the first of every process.
    if w in RATE:
        tp = {}
        for c in ["base", "cuhook", "cupti", "wrap", "both"]:
            samples = [x for r in cfg_runs[c] for x in r["rates"]]
            if samples:
                tp[c] = {"median": median(samples), "n": len(samples), "min": min(samples), "max": max(samples),
                         "per_process_medians": [median(r["rates"]) for r in cfg_runs[c] if r["rates"]],
                         # runs whose tracer left nothing (no trace, no counts): not a measurement of it
                         "runs_without_tracer_output": [r["name"] for r in cfg_runs[c] if r["rates"] and (
                             (c in ("cuhook", "both") and not (r["cuhook"] and "counts" in r["cuhook"]))
                             or (c in ("cupti", "both") and r["cupti"] is None)
                             or (c == "wrap" and r["wrap"] is None))]}
        if "base" in tp:
            for c in tp:
                tp[c]["ratio_to_untraced"] = tp[c]["median"] / tp["base"]["median"]
        results["throughput"][w] = {"unit": RATE[w], "configs": tp}

    # What the LD_PRELOAD wrapper caught, against cuhook's count of the same functions.
    wrap_run = first("wrap")
    if wrap_run and wrap_run["wrap"] is not None:
        ref = alone_h["cuhook"]["counts"] if alone_h and alone_h["cuhook"] and "counts" in alone_h["cuhook"] else None
        rows = [{"function": f, "wrapper": wrap_run["wrap"].get(f, 0), "cuhook": ref.get(f, 0) if ref else None}
                for f in WRAPPED]
        results["wrapper"][w] = {"rows": rows, "wrapper_total": sum(r["wrapper"] for r in rows),
                                 "cuhook_total": sum(r["cuhook"] for r in rows) if ref else None}

    # cuhook attach mid-run: the loop's iterations before, during and after the window.
    att = first("attach")
    if att:
        a = {"loop_status": att["status"], "attach_status": steps.get(f"{w}.attach.1.cuhook-attach", {}).get("status")}
        window = (read(os.path.join(runs_dir, f"{w}.attach.1.window"), "") or "").split()
        lines = re.findall(r"^([\d.]+) iter (\d+) (?:tokens|passes)/s ([\d.]+) checksum ([0-9a-f]+)",
                           read(os.path.join(runs_dir, f"{w}.attach.1.out"), "") or "", re.M)
        a["iterations"] = len(lines)
        a["distinct_checksums"] = sorted({l[3] for l in lines})
        if len(window) == 2:
            ta, td = float(window[0]), float(window[1])
            a["window_s"] = td - ta
            parts = {"before": [l for l in lines if float(l[0]) < ta and int(l[1]) > 0],
                     "during": [l for l in lines if ta <= float(l[0]) <= td],
                     "after": [l for l in lines if float(l[0]) > td]}
            a["by_part"] = {k: {"iterations": len(v), "median_rate": median([float(l[2]) for l in v])}
                            for k, v in parts.items()}
        txt = read(os.path.join(runs_dir, f"{w}.attach.1.attach.txt"), "") or ""
        for what in ("attach", "detach"):
            m = re.search(what + r": (\d+) threads? stopped for ([\d.]+) ms", txt)
            if m:
                a[what + "_threads"], a[what + "_stopped_ms"] = int(m.group(1)), float(m.group(2))
        a["attach_errors"] = [l for l in txt.splitlines() if re.search(r"error|fail|cannot", l, re.I)][:5]
        rep = att["cuhook"]
        if rep and "counts" in rep:
            a["trace"] = {"duration_s": (rep["duration_ns"] or 0) / 1e9, "calls": rep["calls"], "events": rep["events"],
                          "dropped": rep["dropped"],
                          "launches": sum(v for k, v in rep["counts"].items() if k.startswith("cuLaunchKernel"))}
        results["attach"][w] = a

# ---- cuCtxGetCurrent bench ------------------------------------------------------------------------
ctx = {}
for c in ["base", "cupti", "wrap"]:
    pairs = []
    for r in runs_of("ctx", c):
        m = re.search(r"untraced ([\d.]+) ns/call, traced ([\d.]+) ns/call.*rdtsc ([\d.]+) ns",
                      read(os.path.join(runs_dir, r["name"] + ".out"), "") or "")
        if m:
            pairs.append((float(m.group(1)), float(m.group(2)), float(m.group(3))))
    if pairs:
        ctx[c] = {"alone": median([p[0] for p in pairs]), "with_cuhook": median([p[1] for p in pairs]),
                  "rdtsc": median([p[2] for p in pairs]), "runs": len(pairs),
                  "samples": [{"alone": p[0], "with_cuhook": p[1]} for p in pairs]}
        cc = [r["cupti"] for r in runs_of("ctx", c) if r["cupti"]]
        if cc:
            ctx[c]["cupti_counted_cuCtxGetCurrent"] = cc[0].get("cuCtxGetCurrent")
        ww = [r["wrap"] for r in runs_of("ctx", c) if r["wrap"]]
        if ww:
            ctx[c]["wrapper_counted_cuCtxGetCurrent"] = ww[0].get("cuCtxGetCurrent")
        # the peer's own output: without it, the row measures nothing but the plain driver
        ctx[c]["peer_active"] = c == "base" or bool(cc if c == "cupti" else [w for w in ww if w.get("cuCtxGetCurrent")])
if "base" in ctx:
    u = ctx["base"]["alone"]
    rows = [("no tracer (plain driver)", u)]
    rows.append(("cuhook", ctx["base"]["with_cuhook"]))
    if "cupti" in ctx and ctx["cupti"]["peer_active"]:
        rows += [("CUPTI callback subscriber", ctx["cupti"]["alone"]), ("CUPTI + cuhook", ctx["cupti"]["with_cuhook"])]
    if "wrap" in ctx and ctx["wrap"]["peer_active"]:
        rows += [("LD_PRELOAD wrapper", ctx["wrap"]["alone"]), ("LD_PRELOAD wrapper + cuhook", ctx["wrap"]["with_cuhook"])]
    ctx["inactive_peers"] = [c for c in ("cupti", "wrap") if c in ctx and not ctx[c]["peer_active"]]
    ctx["table"] = [{"tracer": t, "ns_per_call": v, "added_ns": v - u} for t, v in rows]
# The wrapper runs also compare the two tracers inside one process (ctx_get_current_bench.c):
# loops through libcuda's own entry point (plain, then cuhook) interleaved with loops through the
# wrapper (the wrapper, then both).
same = []
for r in runs_of("ctx", "wrap"):
    m = re.search(r"same process: plain ([\d.]+) ns/call, wrapper ([\d.]+) \(added [-\d.]+\), "
                  r"cuhook ([\d.]+) \(added [-\d.]+\), wrapper \+ cuhook ([\d.]+)",
                  read(os.path.join(runs_dir, r["name"] + ".out"), "") or "")
    if m:
        same.append(tuple(float(m.group(k)) for k in range(1, 5)))
if same:
    ctx["same_process"] = {
        "runs": len(same),
        "wrapper_added": median([w - pl for pl, w, _, _ in same]),
        "cuhook_added": median([c - pl for pl, _, c, _ in same]),
        "cuhook_minus_wrapper": median([c - w for _, w, c, _ in same]),
        "samples": [{"plain": pl, "wrapper": w, "cuhook": c, "both": b} for pl, w, c, b in same]}
results["ctx_bench"] = ctx

# ---- GPT-2 in one process (tests/gpu/ab_gpt2.py) ------------------------------------------------
# One or more processes (AB_PROCS), pooled: the median over every round of every process, the
# best traced generation against the best untraced one of them all.
ab_procs = []
for k in range(1, 100):
    try:
        with open(os.path.join(runs_dir, f"gpt2ab.{k}.json")) as f:
            ab_procs.append(json.load(f))
    except FileNotFoundError:
        break
    except (OSError, ValueError):
        continue
ab = None
if ab_procs:
    ab = {"processes": len(ab_procs), "rounds": sum(x["rounds"] for x in ab_procs),
          "checksums": sorted({c for x in ab_procs for c in x["checksums"]}),
          "untraced_median": statistics.median(r for x in ab_procs for r in x.get("untraced_rates", [x["untraced_median"]])),
          "untraced_best": max(x["untraced_best"] for x in ab_procs), "sides": {}}
    for name, d0 in ab_procs[0]["sides"].items():
        per = [x["sides"][name] for x in ab_procs if name in x["sides"]]
        ratios = [r for d in per for r in d.get("round_ratios", [d["median_ratio"]])]
        rates = [r for d in per for r in d.get("traced_rates", [d["traced_median"]])]
        ab["sides"][name] = {
            "opts": d0["opts"], "traced_median": statistics.median(rates),
            "median_ratio": statistics.median(ratios),
            "ratio_of_best": max(d["traced_best"] for d in per) / ab["untraced_best"],
            "per_process_median_ratio": [d["median_ratio"] for d in per]}
results["gpt2_one_process"] = ab

results["failures"] = [{"step": n, **s} for n, s in steps.items() if s["status"] != "0"]
results["failures"] += [{"step": m["run"], "status": f"no {m['source']} counts: {m['why']}"}
                        for wr in results["workloads"].values() for m in wr["counts"]["missing_sources"]]
with open(os.path.join(outdir, "results.json"), "w") as f:
    json.dump(results, f, indent=1, sort_keys=False)


# ---- results.md -----------------------------------------------------------------------------------
def fmt(v, nd=1):
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.{nd}f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(fmt(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


md = []
p = machine["params"]
total = steps.get("total", {}).get("seconds")
md.append("# Issue 5 proof: results of tests/gpu/proof.sh\n")
md.append(f"Date (UTC): {machine['date'] or '?'}" + (f"; the script took {total:.0f} s." if total else " (run incomplete)."))
md.append("")
md.append("Machine:\n")
md.append("```")
md.append("GPU (nvidia-smi: name, driver, memory, compute capability): " + (machine["gpu"] or "?"))
md.append(machine["versions"])
py = machine["python"]
md.append("python {python}, torch {torch} (CUDA {torch_cuda}), transformers {transformers}".format(
    **{k: py.get(k, "?") for k in ("python", "torch", "torch_cuda", "transformers")}))
md.append("```\n")
md.append("Command, from the repository root (build dependencies carried in `.devdeps/`):\n")
md.append("    bash tests/gpu/proof.sh $OUT\n")
md.append("Parameters: " + ", ".join(f"`{k}={v}`" for k, v in p.items()) + "\n")

md.append("## Outputs identical\n")
md.append("Every checksum each run printed (C programs: one per run; MLP and GPT-2: one per iteration), "
          "by configuration. Identical means one distinct value over every run of the workload.\n")
rows = []
for w, wr in results["workloads"].items():
    c = wr["checksums"]
    by = "; ".join(f"{CONFIGS[k]}: {', '.join(v) or 'none'}" for k, v in c["by_config"].items())
    verdict = "**identical**" if c["identical"] and not c["completed_runs_without_checksum"] else "**NOT identical**"
    if c["completed_runs_without_checksum"]:
        verdict += " (no checksum from " + ", ".join(c["completed_runs_without_checksum"]) + ")"
    rows.append((WORKLOADS[w], verdict, by))
md.append(table(["workload", "verdict", "checksums by configuration"], rows))

md.append("## Call counts against ground truth\n")
md.append("Functions of the families " + ", ".join(f"`{f}`" for f in FAMILIES) + " that any source saw. "
          "Names are those of the exported entry points (`cuMemAlloc_v2`, `cuLaunchKernel_ptsz`); CUPTI's callback "
          "names are the same names (see docs/validation-proof.md). *Same process*: `cuhook run` with the CUPTI "
          "counter injected in the traced program, both counting the very same calls. *Alone*: separate runs "
          "with the same arguments. *Program's own count*: what driver_app says it called. *cuda-gdb*: breakpoint "
          "hits on each export of the families in an untraced run.\n")
for w, wr in results["workloads"].items():
    cnt = wr["counts"]
    md.append(f"### {WORKLOADS[w]}\n")
    if cnt["missing_sources"]:
        md.append("Missing: " + "; ".join(f"{m['source']} from `{m['run']}`: {m['why']}"
                                          for m in cnt["missing_sources"]) + ".\n")
    if not cnt["rows"]:
        md.append("No counts (see the steps below).\n")
        continue
    head = ["function"] + cnt["sources"] + ["cuhook = CUPTI (same process)", "all sources agree"]
    rows = []
    for r in cnt["rows"]:
        same = {True: "equal", False: "**NOT equal**", None: "–"}[r["same_process_equal"]]
        rows.append([f"`{r['function']}`"] + [r["values"].get(s) for s in cnt["sources"]]
                    + [same, "yes" if r["all_equal"] else "**no**"])
    md.append(table(head, rows))
    n_eq = sum(1 for r in cnt["rows"] if r["same_process_equal"])
    n_cmp = sum(1 for r in cnt["rows"] if r["same_process_equal"] is not None)
    md.append((f"{n_eq} of {n_cmp} functions equal in the same process; " if n_cmp else "No same-process comparison; ")
              + f"{sum(1 for r in cnt['rows'] if r['all_equal'])} of {len(cnt['rows'])} agree across every source.")
    if cnt["gdb_notes"]:
        md.append(" cuda-gdb: " + "; ".join(cnt["gdb_notes"]) + ".")
    if cnt["cupti_names_not_exported"]:
        md.append(" Names not exported by this libcuda: " + ", ".join(cnt["cupti_names_not_exported"]) + ".")
    t = wr.get("cuhook_trace") or {}
    if t:
        md.append(f" Trace of the same-process run: {fmt(t.get('events'))} events, {fmt(t.get('dropped'))} dropped, "
                  f"truncated {t.get('truncated')}; functions refused: {', '.join(t.get('refused') or []) or 'none'}; "
                  f"excluded by the default filter: {t.get('excluded_by_filter')}.")
    md.append("\n")

md.append("## Throughput, traced and untraced\n")
md.append("Median over every iteration but the first (warm-up) of every process of a configuration; "
          "processes of the configurations interleaved. The ratio is to the untraced median. `cuhook run` "
          "has its default options: the two queries the CUDA runtime makes around every launch "
          "(`cuCtxGetDevice*`, `cuDevicePrimaryCtxGetState`) counted, every other call recorded.\n")
for w, tp in results["throughput"].items():
    md.append(f"### {WORKLOADS[w]}: {tp['unit']}\n")
    rows = []
    for c, v in tp["configs"].items():
        rows.append((CONFIGS[c], v["median"], v["n"], ", ".join(fmt(x) for x in v["per_process_medians"]),
                     f"{fmt(v['min'])} – {fmt(v['max'])}",
                     f"{v['ratio_to_untraced'] * 100:.1f}%" if "ratio_to_untraced" in v else "–"))
    md.append(table(["configuration", "median", "samples", "per-process medians", "min – max", "vs untraced"], rows))
    inactive = [n for v in tp["configs"].values() for n in v["runs_without_tracer_output"]]
    if inactive:
        md.append("**The tracer left no trace or counts in** " + ", ".join(f"`{n}`" for n in inactive)
                  + ": those rows do not measure it.\n")
    if w == "gpt2" and "cuhook" in tp["configs"] and "ratio_to_untraced" in tp["configs"]["cuhook"]:
        r = tp["configs"]["cuhook"]["ratio_to_untraced"]
        md.append(f"Target: traced >= {GPT2_TARGET * 100:.0f}% of untraced: **{'met' if r >= GPT2_TARGET else 'not met'}** "
                  f"({r * 100:.1f}%).\n")

md.append("## GPT-2 traced against untraced in one process\n")
ab = results.get("gpt2_one_process")
if ab and ab.get("sides"):
    cpus = p.get("AB_CPUS", "")
    warm = int(p.get("AB_WARM", "0") or 0)
    md.append(f"tests/gpu/ab_gpt2.py: {ab['rounds']} rounds in {ab['processes']} process(es)"
              + (f" pinned to CPUs {cpus} (`taskset`)" if cpus else "")
              + (f"; after each start and stop of the agent {warm} untimed generation(s), on every side" if warm else "") +
              f"; each round generates {p.get('GPT2_TOKENS', '?')} "
              "tokens untraced and once per traced side (the agent started and stopped through its API around the "
              "generation), the order rotating. *Median of round ratios*: each traced generation against the "
              "untraced one of its round. *Best rounds*: the fastest traced generation against the fastest untraced "
              "one (the machine's noise only ever slows a round down). Untraced: median "
              f"{fmt(ab['untraced_median'])}, best {fmt(ab['untraced_best'])} tokens/s; "
              f"{len(ab['checksums'])} distinct output checksum(s).\n")
    rows = []
    for name, d in ab["sides"].items():
        label = ("default options (counting `cuCtxGetDevice*,cuDevicePrimaryCtxGetState`)" if not d["opts"] else
                 "recorded in full (`count=`, `--record-all`)" if d["opts"] == "count=" else f"`{d['opts']}`")
        met = min(d["median_ratio"], d["ratio_of_best"]) >= GPT2_TARGET
        rows.append((label, fmt(d["traced_median"]), f"{d['median_ratio'] * 100:.1f}%",
                     ", ".join(f"{x * 100:.1f}%" for x in d["per_process_median_ratio"]),
                     f"{d['ratio_of_best'] * 100:.1f}%", f"**{'met' if met else 'not met'}**"))
    md.append(table(["traced side", "median tokens/s", "median of round ratios (all rounds)",
                     "per process", "best rounds", f">= {GPT2_TARGET * 100:.0f}% by both measures"], rows))
else:
    md.append("No results (phase ab not run, or it failed: see the steps below).\n")

md.append("## Peers: the LD_PRELOAD wrapper and the CUPTI callback tracer\n")
md.append("The wrapper (tests/gpu/preload_wrapper.c) interposes `" + "`, `".join(WRAPPED) + "` (and `cuCtxGetCurrent`) "
          "with dlsym(RTLD_NEXT). What it caught, against what `cuhook run` counted of the same functions in a run "
          "with the same arguments:\n")
rows = []
for w, v in results["wrapper"].items():
    for r in v["rows"]:
        rows.append((WORKLOADS[w], f"`{r['function']}`", r["cuhook"], r["wrapper"]))
    rows.append((WORKLOADS[w], "**all six**", v["cuhook_total"], v["wrapper_total"]))
md.append(table(["workload", "function", "cuhook", "LD_PRELOAD wrapper"], rows) if rows else "No wrapper runs.\n")
md.append("What the tracers cost is in the throughput tables above (rows *LD_PRELOAD wrapper* and *CUPTI callback "
          "counter*: the CUPTI subscriber counts every driver call and stores a timestamp at entry and exit) and "
          "per call below.\n")

md.append("## Added time per call: cuCtxGetCurrent on the real driver\n")
ctx_t = results["ctx_bench"].get("table")
if ctx_t:
    md.append("tests/gpu/ctx_get_current_bench.c: best of 5 loops of " + p.get("CTX_N", "?") + " calls, untraced then "
              "traced by cuhook in each process; median over " + str(results["ctx_bench"]["base"]["runs"]) + " processes "
              "per configuration. rdtsc costs " + fmt(results["ctx_bench"]["base"]["rdtsc"], 2) + " ns here.\n")
    md.append(table(["tracer", "ns per call", "added ns"], [(r["tracer"], f"{r['ns_per_call']:.2f}", f"{r['added_ns']:+.2f}")
                                                             for r in ctx_t]))
    sp = results["ctx_bench"].get("same_process")
    if sp:
        md.append("The same comparison inside one process (the wrapper runs: loops through libcuda's own entry point, "
                  "plain then traced by cuhook, interleaved with loops through the wrapper; medians over "
                  f"{sp['runs']} processes of the per-process differences): the wrapper adds "
                  f"{sp['wrapper_added']:+.2f} ns, cuhook {sp['cuhook_added']:+.2f} ns; cuhook minus wrapper "
                  f"{sp['cuhook_minus_wrapper']:+.2f} ns. Per process (plain / wrapper / cuhook / both, ns per call): "
                  + "; ".join(f"{x['plain']:.2f} / {x['wrapper']:.2f} / {x['cuhook']:.2f} / {x['both']:.2f}"
                              for x in sp["samples"]) + ".\n")
    if results["ctx_bench"].get("inactive_peers"):
        md.append("**Left out, their tool wrote no counts:** " + ", ".join(results["ctx_bench"]["inactive_peers"]) + ".\n")
    seen = results["ctx_bench"].get("cupti", {}).get("cupti_counted_cuCtxGetCurrent")
    if seen is not None and p.get("CTX_N", "").isdigit():
        md.append(f"The CUPTI subscriber counted {seen:,} `cuCtxGetCurrent` calls in one run; the bench makes "
                  f"{10 * int(p['CTX_N']) + 1:,} (5 loops untraced, 1, 5 loops traced).\n")
else:
    md.append("No results (see the steps below).\n")

md.append("## cuhook attach to a running loop\n")
rows = []
for w, a in results["attach"].items():
    parts = a.get("by_part", {})
    pr = lambda k: (f"{parts[k]['iterations']} it., {fmt(parts[k]['median_rate'])}" if k in parts else "–")  # noqa: E731
    tr = a.get("trace", {})
    rows.append((WORKLOADS[w], f"loop {a['loop_status']}, attach {a['attach_status'] or '–'}", a["iterations"],
                 len(a["distinct_checksums"]), pr("before"), pr("during"), pr("after"),
                 f"{fmt(a.get('attach_stopped_ms'), 2)} / {fmt(a.get('detach_stopped_ms'), 2)} ms "
                 f"({fmt(a.get('attach_threads'))} threads)",
                 f"{fmt(tr.get('duration_s'), 2)} s, {fmt(tr.get('calls'))} calls, {fmt(tr.get('launches'))} launches, "
                 f"{fmt(tr.get('dropped'))} dropped" if tr else "–"))
md.append(table(["workload", "exit status", "iterations", "distinct checksums", "before (median rate)", "during",
                 "after", "threads stopped attach / detach", "attach trace"], rows) if rows else "No attach runs.\n")

md.append("## Steps\n")
rows = [(n, s["status"] if s["status"] == "0" else f"**{s['status']}**", s["seconds"]) for n, s in steps.items()]
md.append(table(["step", "exit status", "seconds"], rows))
if results["failures"]:
    md.append("Failed, skipped or without counts: " + ", ".join(f"`{f['step']}` ({f['status']})" for f in results["failures"]) +
              ". Their outputs are in raw.tar.gz (runs/NAME.out).\n")
md.append("<details><summary>Commands ($WORK is the work folder)</summary>\n")
md.append("```")
md += [f"{n}: {s['command']}" for n, s in steps.items()]
md.append("```\n</details>\n")

with open(os.path.join(outdir, "results.md"), "w") as f:
    f.write("\n".join(md))
print(f"wrote {outdir}/results.json and results.md")
