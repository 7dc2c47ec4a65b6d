"""What the command-line tests of tests/cli share: their arguments (paths, made absolute, since
they run cuhook from other directories) and running cuhook."""

import argparse
import os
import subprocess

from cuhooktest import clean_env, need_file


def path_args(*names):
    """The options --NAME PATH, each required, an existing file, made absolute."""
    ap = argparse.ArgumentParser()
    for n in names:
        ap.add_argument("--" + n, required=True)
    a = ap.parse_args()
    for n in names:
        need_file(getattr(a, n), getattr(a, n))
        setattr(a, n, os.path.abspath(getattr(a, n)))
    return a


def cuhook(a, args, cwd):
    """cuhook ARGS run in cwd; stdout and stderr as text."""
    return subprocess.run([a.cuhook] + args, cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=120)
