"""A Python child that sets something up, says READY and waits: for cleanup-on-signal tests."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def spawn(code: str):
    """Start a python child running `code`; return (proc, lines) once it printed READY."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("READY"):
            return proc, lines
    proc.wait(30)
    raise AssertionError(f"child never got READY: {''.join(lines)} {proc.stderr.read()}")
