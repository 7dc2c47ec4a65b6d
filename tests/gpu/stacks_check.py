#!/usr/bin/env python3
"""Call stacks on a real GPU program (issue 17): checks a `cuhook run --stacks GLOBS` trace of
a PyTorch model through the report's JSON and JSON-lines output.

  python3 stacks_check.py --cuhook BUILD/src/cli/cuhook --trace T.bin --globs 'cuMemAlloc*,cuLaunchKernel*'
                          [--model-file modeling_gpt2.py] [--model-func forward]

Checks, and prints every count it compares:
  - every recorded call of a stacked function has a stack, and no STACK record lacks one;
  - every stacked launch made on the Python thread carries Python frames; the launches made
    inside the model's forward carry a frame of MODEL_FILE in a function named MODEL_FUNC and
    torch's Module._call_impl (torch/nn/modules/module.py);
  - the top call sites of cuMemAlloc* are Python lines.
Exit status 0 when all hold."""
import argparse
import fnmatch
import json
import subprocess
import sys
from collections import Counter

ap = argparse.ArgumentParser()
ap.add_argument("--cuhook", required=True)
ap.add_argument("--trace", required=True)
ap.add_argument("--globs", required=True)
ap.add_argument("--model-file", default="transformers/models/gpt2/modeling_gpt2.py")
ap.add_argument("--model-func", default="forward")
a = ap.parse_args()
globs = a.globs.split(",")
fail = []


def report(fmt):
    p = subprocess.run([a.cuhook, "report", "--format", fmt, a.trace], capture_output=True, text=True)
    if p.returncode not in (0, 3):
        sys.exit("report --format %s failed (%d): %s" % (fmt, p.returncode, p.stderr[-2000:]))
    return p.stdout


def check(ok, what):
    print("%s %s" % ("ok  " if ok else "FAIL", what))
    if not ok:
        fail.append(what)


doc = json.loads(report("json"))
stacks = {s["id"]: s for s in doc.get("stacks", [])}
stacked_funcs = [f for f in doc["functions"] if any(fnmatch.fnmatchcase(f["name"], g) for g in globs)]
recorded = {f["name"]: f["calls"] for f in stacked_funcs}
with_stack = Counter()
per_func = {}
for line in report("jsonl").splitlines():
    if not line.startswith("{"):
        continue
    c = json.loads(line)
    fn = c.get("func")
    if fn not in recorded:
        continue
    sid = c.get("stack")
    if sid is not None:
        with_stack[fn] += 1
        per_func.setdefault(fn, []).append(stacks[sid])

print("stacks in the trace: %d; STACK records: %s" % (len(stacks), doc.get("stack_records")))
for fn in sorted(recorded):
    check(with_stack[fn] == recorded[fn], "%s: %d recorded calls, %d with a stack" % (fn, recorded[fn], with_stack[fn]))
check((doc.get("stack_records") or {}).get("without_stack", 0) == 0, "STACK records naming no stack: %s" %
      (doc.get("stack_records") or {}).get("without_stack"))
ends = Counter((s["native_end"], s["python_end"]) for s in stacks.values())
print("walk ends (native, python) over distinct stacks: %s" % dict(ends))
print("approximate merges: %d of %d stacks" % (sum(s["approximate"] for s in stacks.values()), len(stacks)))


def pyframes(s):
    return [f for f in s["frames"] if f["kind"] == "python"]


def has(s, file_end, func):
    return any(f["file"] and f["file"].endswith(file_end) and f["function"] and f["function"].split(".")[-1] == func
               for f in pyframes(s))


launches = [s for fn, ss in per_func.items() if fn.startswith("cuLaunchKernel") for s in ss]
if launches:
    py = [s for s in launches if pyframes(s)]
    model = [s for s in py if has(s, a.model_file, a.model_func)]
    both = [s for s in model if has(s, "torch/nn/modules/module.py", "_call_impl")]
    print("stacked launches: %d; with Python frames: %d; inside %s %s: %d; of those with Module._call_impl: %d" %
          (len(launches), len(py), a.model_file, a.model_func, len(model), len(both)))
    check(len(py) == len(launches), "every stacked launch carries Python frames (%d of %d)" % (len(py), len(launches)))
    check(len(model) > len(launches) // 2, "most launches are inside the model's %s (%d of %d)" %
          (a.model_func, len(model), len(launches)))
    check(len(both) == len(model), "each of those also names torch's Module._call_impl (%d of %d)" %
          (len(both), len(model)))
    if model:
        s = model[0]
        print("one launch's merged stack, outermost first (%d frames; native_end %s, python_end %s):" %
              (len(s["frames"]), s["native_end"], s["python_end"]))
        for f in s["frames"]:
            print("    %-7s %s" % (f["kind"], f["label"]))
for site_fn in (f for f in doc.get("call_sites", []) if f["function"].startswith("cuMemAlloc")):
    print("top call sites of %s (%d calls with a stack):" % (site_fn["function"], site_fn["calls"]))
    for s in site_fn["sites"][:5]:
        print("    %6d  %s" % (s["calls"], s["site"]))
    top = site_fn["sites"][:5]
    check(all(".py:" in s["site"] for s in top), "the top call sites of %s are Python lines" % site_fn["function"])
print("stacks_check: %s" % ("PASS" if not fail else "FAIL (%d)" % len(fail)))
sys.exit(1 if fail else 0)
