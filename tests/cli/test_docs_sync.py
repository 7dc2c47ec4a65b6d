#!/usr/bin/env python3
"""The docs in step with the code (issue 23):

- every long option a command's --help names (and the command takes) is in that command's table
  in docs/cli.md, in its manual page (docs/man/cuhook-CMD.1) and in both completion files
  (completions/cuhook.bash, for that command; completions/_cuhook);
- every option docs/cli.md lists for a command is one the command takes;
- every option README.md names in code is one some command takes (a few named exceptions: other
  tools' options);
- README's numbers that are the code's constants: the default stack depth, the flight
  recorder's default size, the default counted functions, cudbg* left out by default, the 50 ms
  writer round; and docs/cli.md's defaults of --call-timeout and dump --timeout;
- no doc (README.md, docs/**/*.md) links to or names a file outside the repository, nor a file
  of it that does not exist.

An option is "taken" by a command when `cuhook CMD OPTION --help` (run in an empty directory)
does not answer "unknown option": --help ends a command's parsing before anything is done, or
the option takes "--help" as its value and the command stops at a usage error.

usage: test_docs_sync.py --cuhook PATH --source DIR"""

import argparse
import os
import re
import subprocess
import sys

from cuhooktest import Problems, clean_env, need_file, run_main, work_directory

COMMANDS = ["run", "attach", "dump", "report", "funcs"]
LONG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
# options README names that belong to other programs
FOREIGN = {"--cuda-trace-all-apis": "Nsight Systems' option", "--pollute": "build/bench/bench_overhead's option",
           "--suite": "meson test's option", "--list": "meson test's option"}


class Cli:
    def __init__(self, cuhook, work):
        self.cuhook, self.work, self.known = cuhook, work, {}

    def out(self, args):
        return subprocess.run([self.cuhook] + args, cwd=self.work, env=clean_env(), capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)

    def takes(self, cmd, opt):
        if (cmd, opt) not in self.known:
            p = self.out([cmd, opt, "--help"])
            self.known[(cmd, opt)] = "unknown option" not in p.stderr and "unrecognized option" not in p.stderr
        return self.known[(cmd, opt)]

    def help_options(self, cmd):
        p = self.out([cmd, "--help"])
        if p.returncode != 0:
            raise RuntimeError(f"cuhook {cmd} --help: exit {p.returncode}")
        return {o for o in LONG.findall(p.stdout) if self.takes(cmd, o)}


def cli_md_options(text):
    """{command: {options}} from the tables under '## Options of each command' in docs/cli.md:
    each '### ' heading names its commands in backquotes, each table row's first cell its options
    (`--name VALUE`, `--name[=VALUE]`, `-x`)."""
    part = text.split("## Options of each command", 1)[1].split("\n## ", 1)[0]
    opts, cmds = {}, []
    for line in part.splitlines():
        if line.startswith("### "):
            cmds = re.findall(r"`(\w+)`", line)
            for c in cmds:
                opts.setdefault(c, set())
        elif line.startswith("| `-") and cmds:
            cell = line.split("|")[1]
            for code in re.findall(r"`([^`]+)`", cell):
                name = re.split(r"[\s\[=]", code)[0]
                for c in cmds:
                    opts[c].add(name)
    return opts


def man_options(path):
    """(every long option the page names, the options its OPTIONS section describes: the tag
    lines after .TP)"""
    lines = open(path).read().replace("\\-", "-").splitlines()
    section, tagged = "", set()
    for i, line in enumerate(lines):
        if line.startswith(".SH "):
            section = line[4:].strip()
        elif section == "OPTIONS" and line == ".TP" and i + 1 < len(lines):
            tagged |= set(LONG.findall(lines[i + 1]))
    return set(LONG.findall("\n".join(lines))), tagged


def bash_options(script, cmd):
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", f'source "{script}"; _cuhook_options {cmd}'],
                       capture_output=True, text=True, timeout=60)
    return set(p.stdout.split())


def define(path, name):
    m = re.search(rf"#define {name}\s+(.+)", open(path).read())
    return m.group(1).split("/*")[0].strip() if m else None


def check_numbers(src, readme, cli_md, problems):
    depth = define(os.path.join(src, "src/agent/stack_capture.h"), "STACK_DEPTH_DEFAULT")
    problems.check(f"`--stack-depth N` (frames kept, default {depth})" in readme,
                   f"README: the default stack depth is not the code's {depth}")
    flight = define(os.path.join(src, "src/cli/inject_opts.h"), "CUHOOK_FLIGHT_DEFAULT").strip('"')
    problems.check(f"`--flight-recorder[=SIZE]` (keep each thread's newest SIZE of calls, default {flight}" in readme,
                   f"README: the flight recorder's default size is not the code's {flight}")
    count = define(os.path.join(src, "src/agent/cuhook_agent.h"), "CUHOOK_COUNT_DEFAULT").strip('"')
    problems.check(f"by default `{count}`" in readme, f"README: the default counted functions are not {count}")
    config = open(os.path.join(src, "src/agent/config.c")).read()
    problems.check('strcpy(c->funcs, "cu*,-cudbg*");' in config and "`cudbg*` debugger entry points are left out "
                   "by default" in readme, "README's cudbg* left out by default, and config.c's default funcs, differ")
    m = re.search(r"c->flush_ms = (\d+);", config)
    problems.check(m and f"ends its trace within {m.group(1)} ms" in readme,
                   f"README: the writer's round is not config.c's {m and m.group(1)} ms")
    ms = define(os.path.join(src, "src/inject/inject.h"), "CUHOOK_INJECT_CALL_TIMEOUT_MS").split()[0]
    problems.check(f"| `--call-timeout SEC` | give up a remote call after SEC seconds (default {int(ms) // 1000})"
                   in cli_md, f"docs/cli.md: --call-timeout's default is not {ms} ms")
    dump = re.search(r"#define DEFAULT_TIMEOUT_S ([\d.]+)", open(os.path.join(src, "src/cli/cmd_dump.c")).read())
    problems.check(dump and f"wait at most SEC seconds for the dump (default {float(dump.group(1)):g})" in cli_md,
                   "docs/cli.md: dump --timeout's default is not cmd_dump.c's")


def check_links(src, problems):
    """Every relative link of README.md and docs/**/*.md names an existing file of the repository;
    no doc (raw outputs under docs/ included) names the lent machines' tool or its README."""
    docs = [os.path.join(src, "README.md")]
    for root, _dirs, files in os.walk(os.path.join(src, "docs")):
        docs += [os.path.join(root, f) for f in files if f.endswith(".md")]
    everything = docs + [os.path.join(root, f) for root, _d, fs in os.walk(os.path.join(src, "docs")) for f in fs
                         if not f.endswith(".md")]
    for path in everything:
        text = open(path, errors="replace").read()
        rel = os.path.relpath(path, src)
        for bad in ("device tool", "`device` tool", "shared/device"):
            problems.check(bad not in text, f"{rel} names {bad!r}, outside the repository")
    for path in docs:
        text = open(path).read()
        rel = os.path.relpath(path, src)
        for t in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", t) or t.startswith("#"):
                continue  # a web address, or a place in the same page
            dest = os.path.normpath(os.path.join(os.path.dirname(path), t.split("#")[0]))
            inside = os.path.commonpath([dest, src]) == src
            problems.check(inside and os.path.exists(dest),
                           f"{rel} names {t}: {'not in the repository' if not inside else 'no such file'}")


def check_tree_map(src, problems):
    """docs/how-it-works.md's map of the tree names only files that exist: every source file it
    names (name.c, name.h, name.S, name.cc) is one of the repository's (headers of other projects
    excepted)."""
    text = open(os.path.join(src, "docs/how-it-works.md")).read()
    have = set()
    for root, _dirs, files in os.walk(src):
        if "/.git" in root or "/build" in root:
            continue
        have.update(files)
    for name in sorted(set(re.findall(r"[A-Za-z0-9_]+\.(?:c|h|S|cc)\b", text))):
        problems.check(name in have or name in FOREIGN_HEADERS,
                       f"docs/how-it-works.md names {name}, which the tree does not have")


FOREIGN_HEADERS = {"cuda.h", "cupti.h", "libunwind.h", "capstone.h", "elf.h", "sqlite3.h"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuhook", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    need_file(a.cuhook, "cuhook")
    src = os.path.abspath(a.source)
    work = work_directory(None, "cuhook-docs-sync-")
    cli = Cli(os.path.abspath(a.cuhook), work)
    problems = Problems()
    cli_md = open(os.path.join(src, "docs/cli.md")).read()
    readme = open(os.path.join(src, "README.md")).read()
    documented = cli_md_options(cli_md)
    zsh = set(LONG.findall(open(os.path.join(src, "completions/_cuhook")).read()))
    bash = os.path.join(src, "completions/cuhook.bash")
    taken = set()
    for cmd in COMMANDS:
        helped = cli.help_options(cmd)
        taken |= helped
        problems.check(len(helped) >= 2, f"cuhook {cmd} --help: only {sorted(helped)}")
        doc = documented.get(cmd, set())
        problems.check(helped <= doc, f"docs/cli.md lacks {sorted(helped - doc)} of cuhook {cmd} --help")
        for o in sorted(doc):
            problems.check(cli.takes(cmd, o), f"docs/cli.md lists {o} for cuhook {cmd}, which does not take it")
        man, described = man_options(os.path.join(src, "docs/man", f"cuhook-{cmd}.1"))
        problems.check(helped <= man, f"docs/man/cuhook-{cmd}.1 lacks {sorted(helped - man)}")
        for o in sorted(described):
            problems.check(cli.takes(cmd, o), f"docs/man/cuhook-{cmd}.1 describes {o}, which cuhook {cmd} does not take")
        b = bash_options(bash, cmd)
        problems.check(helped <= b, f"completions/cuhook.bash lacks {sorted(helped - b)} for {cmd}")
        for o in sorted(x for x in b if x.startswith("--")):
            problems.check(cli.takes(cmd, o), f"completions/cuhook.bash offers {o} for {cmd}, which does not take it")
        problems.check(helped <= zsh, f"completions/_cuhook lacks {sorted(helped - zsh)}")
    top = {o for o in LONG.findall(cli.out(["--help"]).stdout)}
    for code in re.findall(r"`([^`]*)`", readme):
        for o in LONG.findall(code):
            problems.check(o in taken or o in top or o in FOREIGN, f"README.md names {o} ({code!r}), which no command takes")
    check_numbers(src, readme, cli_md, problems)
    check_links(src, problems)
    check_tree_map(src, problems)
    problems.exit()


if __name__ == "__main__":
    run_main(main)
