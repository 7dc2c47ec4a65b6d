#!/usr/bin/env python3
"""The README's Install section: `meson install` of this build into a DESTDIR, then the
installed cuhook, run from another directory, traces the bundled sample with the installed agent
(the one its trace's mappings name) and reports ./trace.bin. The manual pages are installed in
share/man/man1, found by man(1) there and rendered by groff without a warning; the bash and zsh
completion files where bash-completion and zsh look; the bash one completes the commands, their
options and some options' values; zsh (when installed) parses the zsh one and takes it as cuhook's.

usage: test_install.py --build DIR --sample PATH --lib LIBCUDA"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys

from cuhooktest import Fatal, Problems, clean_env, need_file, run, run_main, work_directory
from cuhooktest import tracefile


def main():
    ap = argparse.ArgumentParser()
    for o in ("--build", "--sample", "--lib"):
        ap.add_argument(o, required=True)
    a = ap.parse_args()
    need_file(a.sample, "sample_app")
    need_file(a.lib, "the stand-in libcuda")
    meson = shutil.which("meson")
    if not meson:
        raise Fatal("meson not on PATH")
    work = work_directory(None, "cuhook-install-")
    problems = Problems()
    dest = os.path.join(work, "root")
    # --no-rebuild: the build is meson test's; the install must not start a second ninja in it
    run([meson, "install", "-C", a.build, "--no-rebuild", "--destdir", dest, "--quiet"], what="meson install")
    installed = run([meson, "introspect", a.build, "--installed"], what="meson introspect").stdout
    cuhook = agent = None
    for target in json.loads(installed).values():  # build file: where it is installed
        if target.endswith("/bin/cuhook"):
            cuhook = dest + target
        elif target.endswith("/libcuhook.so"):
            agent = dest + target
    if not (cuhook and agent and os.access(cuhook, os.X_OK) and os.path.isfile(agent)):
        raise Fatal(f"the install has no cuhook or libcuhook.so: {installed}")

    elsewhere = os.path.join(work, "elsewhere")
    os.mkdir(elsewhere)
    sample = [os.path.abspath(a.sample), "--layers", "2", "--batches", "2", os.path.abspath(a.lib)]
    p = subprocess.run([cuhook, "run", "--"] + sample, cwd=elsewhere, env=clean_env(), capture_output=True,
                       text=True, timeout=120)
    trace = os.path.join(elsewhere, "trace.bin")
    problems.check(p.returncode == 0 and p.stdout.startswith("sample_app: 2 batches x 2 layers, 12 kernel launches")
                   and p.stderr.splitlines()[-1:] == [f"cuhook run: trace written to {trace}"],
                   f"installed cuhook run: exit {p.returncode}, {p.stdout!r} {p.stderr[-400:]!r}")
    if os.path.exists(trace):
        t = tracefile.read_trace(trace)
        agents = {m.path for b in t.maps_blocks for m in b if os.path.basename(m.path) == "libcuhook.so"}
        problems.check(agents == {os.path.realpath(agent)}, f"the traced sample mapped the agents {agents}, "
                                                             f"not the installed {agent}")
        problems.check(t.entries.get("cuLaunchKernel") == 12, f"cuLaunchKernel calls {t.entries.get('cuLaunchKernel')}")
    p = subprocess.run([cuhook, "report", "--no-color"], cwd=elsewhere, env=clean_env(), capture_output=True,
                       text=True, timeout=120)
    problems.check(p.returncode == 0 and p.stdout.startswith("cuhook report: trace.bin\n"),
                   f"installed cuhook report: exit {p.returncode}, {p.stdout[:200]!r} {p.stderr[-300:]!r}")
    check_man_pages(dest, problems)
    check_completion(dest, problems)
    problems.exit()


MAN_PAGES = ["cuhook", "cuhook-run", "cuhook-attach", "cuhook-dump", "cuhook-report", "cuhook-funcs"]


def installed_share(dest):
    """DEST/PREFIX/share, from where the installed cuhook is."""
    for root, dirs, _files in os.walk(dest):
        if "man" in dirs and os.path.basename(root) == "share":
            return root
    raise Fatal(f"no share/man under {dest}")


def check_man_pages(dest, problems):
    share = installed_share(dest)
    man1 = os.path.join(share, "man", "man1")
    for page in MAN_PAGES:
        path = os.path.join(man1, page + ".1")
        if not problems.check(os.path.isfile(path), f"{path} not installed"):
            continue
        text = open(path).read()
        problems.check(text.count(".TH ") == 1 and ".SH NAME" in text and ".SH EXIT STATUS" in text,
                       f"{page}.1: no .TH, NAME or EXIT STATUS")
        groff = shutil.which("groff")
        if groff:  # every warning on (-ww), nothing printed (-z): the page must be clean
            p = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z", path], capture_output=True, text=True, timeout=60)
            problems.check(p.returncode == 0 and p.stderr == "", f"groff on {page}.1: {p.returncode} {p.stderr[:400]!r}")
        man = shutil.which("man")
        if man:
            # man(1) finds the installed page by its name, and renders it without a warning
            env = clean_env({"MANPATH": os.path.join(share, "man"), "MANWIDTH": "80"})
            w = subprocess.run([man, "-w", page], env=env, capture_output=True, text=True, timeout=60)
            problems.check(w.returncode == 0 and w.stdout.strip() == path, f"man -w {page}: {w.stdout!r} {w.stderr!r}")
            r = subprocess.run([man, "--warnings", "-l", path], env=env, capture_output=True, text=True, timeout=60)
            problems.check(r.returncode == 0 and r.stderr == "" and "EXIT STATUS" in r.stdout,
                           f"man -l {page}.1: exit {r.returncode}, {r.stderr[:400]!r}")


def complete(script, words):
    """COMPREPLY of the bash completion for the command line `words` (the last one being
    completed), as a set."""
    line = "cuhook " + " ".join(words)
    setup = (f"source {shlex.quote(script)}; COMP_WORDS=(cuhook {' '.join(shlex.quote(w) for w in words)}); "
             f"COMP_CWORD={len(words)}; COMP_LINE={shlex.quote(line)}; COMP_POINT=${{#COMP_LINE}}; _cuhook; "
             "printf '%s\\n' \"${COMPREPLY[@]}\"")
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", setup], capture_output=True, text=True, timeout=60)
    if p.returncode != 0 or p.stderr:
        raise Fatal(f"bash completion of {line!r}: exit {p.returncode}, {p.stderr!r}")
    return set(p.stdout.split())


def check_completion(dest, problems):
    share = installed_share(dest)
    bash = os.path.join(share, "bash-completion", "completions", "cuhook")
    zsh = os.path.join(share, "zsh", "site-functions", "_cuhook")
    problems.check(os.path.isfile(zsh) and open(zsh).readline() == "#compdef cuhook\n", f"{zsh} not installed")
    if shutil.which("zsh") and os.path.isfile(zsh):
        # zsh parses it, and compinit, given its directory, makes it cuhook's completion
        n = subprocess.run(["zsh", "-n", zsh], capture_output=True, text=True, timeout=60)
        problems.check(n.returncode == 0 and n.stderr == "", f"zsh -n {zsh}: {n.returncode} {n.stderr!r}")
        dump = os.path.join(os.path.dirname(os.path.dirname(share)), "zcompdump")
        c = subprocess.run(["zsh", "-f", "-c", f"fpath=({shlex.quote(os.path.dirname(zsh))} $fpath); autoload -U compinit; "
                            f"compinit -u -d {shlex.quote(dump)}; print -r -- ${{_comps[cuhook]}}"],
                           capture_output=True, text=True, timeout=60)
        problems.check(c.stdout == "_cuhook\n" and c.stderr == "", f"zsh compinit: {c.stdout!r} {c.stderr!r}")
    if not problems.check(os.path.isfile(bash), f"{bash} not installed") or not shutil.which("bash"):
        return
    commands = {"run", "attach", "dump", "report", "funcs", "help"}
    cases = [
        ([""], commands | {"-h", "--help", "-V", "--version"}),
        (["re"], {"report"}),
        (["help", ""], commands),
        (["run", "--fo"], {"--follow", "--force"}),
        (["run", "--stack"], {"--stacks", "--stack-depth"}),
        (["attach", "--du"], {"--duration"}),
        (["attach", "-q", "--st"], {"--stop", "--stacks", "--stack-depth"}),
        (["report", "--for"], {"--format", "--force"}),
        (["report", "-f", ""], {"text", "json", "csv", "jsonl", "chrome", "perfetto", "folded", "sqlite"}),
        (["report", "--sort", "m"], {"med", "min", "max"}),
        (["dump", "--"], {"--timeout", "--agent", "--help", "--version"}),
        (["funcs", "--f"], {"--funcs", "--functions"}),
        (["run", "--capture-range-end", ""], {"repeat", "stop", "none"}),
        (["run", "--funcs", ""], set()),  # a value of the user's: nothing offered
    ]
    for words, want in cases:
        got = complete(bash, words)
        problems.check(got == want, f"bash completion of 'cuhook {' '.join(words)}': {sorted(got)}, not {sorted(want)}")


if __name__ == "__main__":
    run_main(main)
