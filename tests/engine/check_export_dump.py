#!/usr/bin/env python3
"""tests/gpu/export_tables_check.c on the stand-in driver, as it runs on the real one: every slot
of both tables classified exactly (functions with their unwind extents, the shared function and
the export as aliases, the data and empty slots skipped, the function without an unwind entry
refused), and the relocation checker (where built) over the list it writes: every function
planned and run against its copy under Unicorn with no mismatch."""

import argparse
import os
import re

from cuhooktest import Fatal, Problems, clean_env, need_files, run, run_main, work_directory

T1 = "6bd5fb6c-5bf4-e74a-8987-d93912fd9df9"
T2 = "c0ffee00-1122-4344-8566-778899aabbcc"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--checker", default="")
    ap.add_argument("--workdir")
    a = ap.parse_args()
    need_files([(a.dump, "export_tables_check"), (a.lib, "stand-in libcuda")])
    wd = work_directory(a.workdir, "cuhook-export-dump-")
    lst = os.path.join(wd, "functions.txt")
    env = clean_env({"LD_LIBRARY_PATH": os.path.dirname(a.lib)})
    out = run([a.dump, "--list", lst, T2], env=env, what="export_tables_check").stdout
    slots = {}
    for line in out.splitlines():
        p = line.split(maxsplit=3)
        if p and p[0] == "slot":
            slots[p[1]] = p[3]
    problems = Problems()
    want = {
        f"export:{T1}[1]": r"fn \d+", f"export:{T1}[2]": r"fn \d+", f"export:{T1}[3]": r"fn \d+",
        f"export:{T1}[4]": "skipped", f"export:{T1}[5]": "skipped", f"export:{T1}[6]": "alias cuDriverGetVersion",
        f"export:{T2}[0]": r"fn \d+", f"export:{T2}[1]": re.escape(f"alias export:{T1}[3]"),
        f"export:{T2}[2]": "refused no unwind entry covers the address",
    }
    for name, pat in want.items():
        got = slots.get(name)
        problems.check(got is not None and re.match(pat, got), f"{name}: {got!r}, want {pat!r}")
    problems.check(set(slots) == set(want), f"slots {sorted(set(slots) ^ set(want))} unexpected or missing")
    with open(lst) as f:
        listed = [l.split()[0] for l in f if l.strip()]
    problems.check(sorted(listed) == sorted(n for n, p in want.items() if p.startswith("fn")),
                   f"the list holds {listed}")
    if a.checker and os.path.exists(a.checker):
        chk = run([a.checker, "--list", lst, a.lib], what="cuhook-check-relocation --list").stdout
        problems.check("4 functions, 4 patched, 0 refused" in chk, f"checker: {chk}")
        problems.check("mismatches: 0 functions, 0 states" in chk, f"checker: {chk}")
    problems.exit()


if __name__ == "__main__":
    run_main(main)
