#!/usr/bin/env python3
"""Kernel names in attach traces (issue 20): cuhook attach to a running PyTorch GPT-2 loop and to a
running JAX loop (XLA runs most of its work through CUDA graphs), and the fraction of the
window's kernel launches that the report names, a graph launch counted as its kernel nodes:

    python3 attach_names.py --cuhook BUILD/src/cli/cuhook --out DIR [--duration 2] [--only torch|jax]

For each loop: it runs until it has printed "iter 1", cuhook attach -v --duration D takes a
window, and `cuhook report --format json` gives "kernels": named / (launches + graph launches
whose graph was instantiated before the attach, which count as unnamed). Prints one line per
loop, "NAMES torch: named N of M kernel launches (P %) ...", the Kernels table's first lines,
whether the trace carries the "functions patched, refused" note, and PASS when every loop
reaches 99 %. The JAX loop is attached to with --names-window 1 (its graphs were instantiated
before the attach: the window's GPU records name them), then, said apart as INFO lines, plainly
(the window off: those launches stay unknown) and with --gpu (unless --no-gpu). A loop whose framework is not installed is skipped (said). Exits 1 on a failure.

    python3 attach_names.py --jax-loop --seconds S    (the JAX loop itself)"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GPT2 = os.path.join(HERE, "gpt2_infer.py")
TARGET = 99.0


def jax_loop(seconds):
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    import jax.numpy as jnp

    @jax.jit
    def step(x, w1, w2):
        for _ in range(8):  # several kernels per step: matmuls, activations, a reduction
            x = jnp.tanh(x @ w1) @ w2 + x
            x = x / (1.0 + jnp.abs(x).mean())
        return x

    k = jax.random.PRNGKey(0)
    x = jax.random.normal(k, (256, 512))
    w1 = jax.random.normal(k, (512, 1024)) * 0.03
    w2 = jax.random.normal(k, (1024, 512)) * 0.03
    start, i = time.time(), 0
    while True:
        t = time.time()
        y = step(x, w1, w2)
        s = float(y.sum().block_until_ready())
        i += 1
        print(f"iter {i} {(time.time() - t) * 1e3:.2f} ms checksum {s:.6f}", flush=True)
        if time.time() - start > seconds:
            break


def start_loop(cmd, log, env):
    f = open(log, "w")
    p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, text=True, env=env)
    t = time.time()
    while time.time() - t < 300:
        text = open(log).read()
        if "iter 1 " in text:
            time.sleep(2)  # past the first iterations: compiling, graph capture
            return p
        if p.poll() is not None:
            break
        time.sleep(0.2)
    print(open(log).read()[-3000:])
    if p.poll() is None:
        p.kill()
    return None


def one(a, name, cmd, env, gpu=False, window=False):
    tag = name + (" --gpu" if gpu else " --names-window 1" if window else "")
    suffix = "-gpu" if gpu else "-window" if window else ""
    log = os.path.join(a.out, f"names-{name}{suffix}.log")
    p = start_loop(cmd, log, env)
    if not p:
        return f"{tag}: the loop did not start (see {log})"
    trace = os.path.join(a.out, f"names-{name}{suffix}.bin")
    try:
        r = subprocess.run([a.cuhook, "attach", "-v", "--force", "--duration", str(a.duration), "-o", trace,
                            *(["--gpu"] if gpu else ["--names-window", "1"] if window else []), str(p.pid)],
                           capture_output=True, text=True, timeout=300)
        print(f"{tag}: cuhook attach status {r.returncode}\n{r.stderr.strip()}", flush=True)
    finally:
        p.kill()
        p.wait()
    name = tag
    if r.returncode != 0:
        return f"{name}: cuhook attach failed"
    rep = subprocess.run([a.cuhook, "report", "--format", "json", trace], capture_output=True, text=True)
    txt = subprocess.run([a.cuhook, "report", trace], capture_output=True, text=True).stdout
    try:
        k = json.loads(rep.stdout)["kernels"]
    except (ValueError, KeyError) as e:
        return f"{name}: no kernels in the JSON report ({e}): {rep.stderr[-500:]}"
    total = k["launches"] + k["graph_unknown"]
    frac = 100.0 * k["named"] / total if total else 0.0
    print(f"NAMES {name}: named {k['named']} of {total} kernel launches ({frac:.2f} %): {k['direct']} by launch "
          f"calls, {k['graph_nodes']} graph nodes of {k['graph_calls'] - k['graph_unknown']} graph launches "
          f"({k.get('graph_from_gpu', 0)} of them by GPU records, {k.get('graph_from_sibling', 0)} by another launch's), "
          f"{k['graph_unknown']} graph launches of graphs "
          f"instantiated before the attach with kernels unknown", flush=True)
    lines = txt.splitlines()
    if "Kernels" in txt:
        i = next(i for i, l in enumerate(lines) if l.startswith("Kernels"))
        print("\n".join(lines[i:i + 14]))
    for l in lines:
        if l.startswith("  note ") and ("names window" in l or "GPU:" in l):
            print(f"{name}: {l.strip()}")
    patched = any(l.startswith("  note ") and "functions patched," in l for l in lines)
    print(f"{name}: 'functions patched, refused' note in the trace: {'yes' if patched else 'NO'}", flush=True)
    fails = []
    if not total:
        fails.append(f"{name}: no kernel launch in the window")
    elif frac < TARGET:
        fails.append(f"{name}: {frac:.2f} % named, below {TARGET} %")
    if not patched:
        fails.append(f"{name}: the attach trace lacks the 'functions patched, refused' note")
    return "; ".join(fails) or None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuhook")
    ap.add_argument("--out")
    ap.add_argument("--duration", type=float, default=2.0)
    ap.add_argument("--only", choices=["torch", "jax"])
    ap.add_argument("--jax-loop", action="store_true")
    ap.add_argument("--no-gpu", action="store_true", help="skip the JAX attach with --gpu")
    ap.add_argument("--seconds", type=float, default=120)
    a = ap.parse_args()
    if a.jax_loop:
        jax_loop(a.seconds)
        return
    if not a.cuhook or not a.out:
        ap.error("--cuhook and --out are needed")
    os.makedirs(a.out, exist_ok=True)
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    env.pop("CUHOOK_AGENT", None)
    loops = []
    for name, module, cmd in [
            ("torch", "torch", [sys.executable, GPT2, "--seconds", "120", "--tokens", "16"]),
            ("jax", "jax", [sys.executable, os.path.abspath(__file__), "--jax-loop", "--seconds", "120"])]:
        if a.only and a.only != name:
            continue
        if subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode != 0:
            print(f"{name}: SKIPPED ({module} is not installed)", flush=True)
            continue
        loops.append((name, cmd))
    # JAX's graphs are instantiated before any attach: the names window (--names-window 1)
    # names them, and is what the target is checked on for JAX; the plain attach (no CUPTI)
    # and --gpu are said apart
    fails = [f for f in (one(a, name, cmd, env, window=name == "jax") for name, cmd in loops) if f]
    info = [one(a, name, cmd, env) for name, cmd in loops if name == "jax"]
    info += [one(a, name, cmd, env, gpu=True) for name, cmd in loops if name == "jax" and not a.no_gpu]
    for f in info:
        if f:
            print("INFO (not counted as a failure) " + f)
    if not loops:
        fails.append("no loop could run")
    for f in fails:
        print("FAIL " + f)
    print("PASS" if not fails else "FAILED")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
