# SPDX-License-Identifier: LGPL-2.1-or-later
"""The examples in bindings/python/examples run and report success."""
import os
import subprocess
import sys

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")


def run(name, *args):
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *args],
                       capture_output=True, text=True, timeout=120)
    print(p.stdout, p.stderr)
    assert p.returncode == 0
    return p.stdout


def test_numpy_workers():
    out = run("numpy_workers.py", "1")
    assert "consistent reads" in out and "; 0 failed" in out
