#!/usr/bin/env python3
"""The report's host-side device of each call (the Devices section, csv's call_device) against
the device CUPTI says the call's GPU work ran on, on a machine with 2 GPUs or more:

  python3 tests/gpu/devices_check.py --cuhook build/src/cli/cuhook --out DIR

runs this script's workload (--work) under `cuhook run --gpu`: two threads, one per device
(torch.cuda.set_device), each multiplying, copying to the host and filling memory, while the main
thread switches between the devices (torch.cuda.device) between its own steps. Then, in the
csv export, every GPU work record linked to its call must have call_device == device (the host
side's attribution equals the GPU's), none unknown, and both devices must have linked work.
Prints the text report's Devices section, the counts per (GPU device, call_device) and PASS or
FAIL; exits 0 on a pass, 1 on a failure, 77 with fewer than 2 GPUs."""
import argparse
import collections
import csv
import io
import os
import subprocess
import sys
import threading


def work():
    import torch
    if torch.cuda.device_count() < 2:
        print("devices_check: fewer than 2 GPUs")
        sys.exit(77)

    def steps(dev, n):
        torch.cuda.set_device(dev)
        x = torch.randn(512, 512, device=f"cuda:{dev}")
        for _ in range(n):
            x = torch.relu(x @ x)
            x = x / x.norm()
        host = x.cpu()
        z = torch.empty(1 << 18, device=f"cuda:{dev}")
        z.zero_()
        torch.cuda.synchronize(dev)
        return float(host.sum())

    threads = [threading.Thread(target=steps, args=(d, 20)) for d in (0, 1)]
    for t in threads:
        t.start()
    for k in range(6):  # the main thread switches devices between its steps
        with torch.cuda.device(k % 2):
            steps(k % 2, 3)
    for t in threads:
        t.join()
    print("devices_check: work done")


def check(a):
    os.makedirs(a.out, exist_ok=True)
    trace = os.path.join(a.out, "devices.bin")
    p = subprocess.run([a.cuhook, "run", "--gpu", "--force", "-o", trace, "--", sys.executable,
                        os.path.abspath(__file__), "--work"], capture_output=True, text=True)
    print(p.stdout + p.stderr)
    if p.returncode == 77 or "fewer than 2 GPUs" in p.stdout:
        print("SKIP: fewer than 2 GPUs")
        return 77
    if p.returncode != 0:
        print(f"FAIL: cuhook run exited with {p.returncode}")
        return 1
    text = subprocess.run([a.cuhook, "report", "--no-color", trace], capture_output=True, text=True, check=True).stdout
    with open(os.path.join(a.out, "report.txt"), "w") as f:
        f.write(text)
    sec = text.split("\nDevices (", 1)
    print("Devices (" + sec[1].split("\n\n", 1)[0] if len(sec) == 2 else "no Devices section")
    out = subprocess.run([a.cuhook, "report", "--format", "csv", trace], capture_output=True, text=True,
                         check=True).stdout
    rows = [r for r in csv.DictReader(io.StringIO(out)) if r["record"] != "call" and r["link"] == "linked"]
    pairs = collections.Counter((r["device"], r["call_device"] or "unknown") for r in rows)
    for (gpu, host), n in sorted(pairs.items()):
        print(f"  GPU device {gpu}, call_device {host}: {n} work records")
    bad = sum(n for (gpu, host), n in pairs.items() if gpu != host)
    devices = {gpu for (gpu, host) in pairs}
    if not rows or bad or len(devices) < 2:
        print(f"FAIL: {bad} of {len(rows)} linked work records on another device than their call's "
              f"(or unknown); devices with linked work: {sorted(devices)}")
        return 1
    print(f"PASS: {len(rows)} linked work records on {len(devices)} devices, each on its call's device")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", action="store_true", help="the workload itself (run under cuhook)")
    ap.add_argument("--cuhook")
    ap.add_argument("--out", default="/tmp/devices-check")
    a = ap.parse_args()
    if a.work:
        work()
        return 0
    if not a.cuhook:
        ap.error("--cuhook is required")
    return check(a)


if __name__ == "__main__":
    sys.exit(main())
