"""Ctrl-C at any moment from the `abtlab` command's first instruction: one line and 130
(SIGTERM: 143), never a traceback of an import. The package installs its start-up handler
as its first statement when it is the command (its console script, `python -m abtlab`),
and leaves a notebook's or a program's handlers alone. `python -m benchmarks.faults
--kinds early` sends the signal at 0-300 ms after start over many trials."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# what pip writes for [project.scripts] abtlab = "abtlab.cli:main", signalling itself
# between the package's import and the command's (argparse, the undo stack, numpy)
SCRIPT = """import os, re, signal, sys
import abtlab
os.kill(os.getpid(), getattr(signal, {sig!r}))
from abtlab.cli import main
sys.exit(main())
"""


def _default_signals():
    """In the child before exec: SIGINT and SIGTERM at their defaults, as a terminal's
    command starts (a background job of a script, nohup or CI may start with SIGINT
    ignored, which Python, and so the package, then leave ignored)."""
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_DFL)


def _run(tmp_path, sig):
    script = tmp_path / "abtlab"
    script.write_text(SCRIPT.format(sig=sig))
    return subprocess.run([sys.executable, str(script), "run", "sim", "--reps", "1", "--out",
                           str(tmp_path / "r.nc")], env={**os.environ, "PYTHONPATH": ROOT},
                          capture_output=True, text=True, timeout=120, preexec_fn=_default_signals)


@pytest.mark.parametrize("sig, code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_before_the_command_is_imported_gives_one_line(tmp_path, sig, code):
    cp = _run(tmp_path, sig)
    assert cp.returncode == code and cp.stderr == f"abtlab: interrupted by {sig}\n", cp.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["abtlab"]


def test_importing_the_package_elsewhere_keeps_the_handlers():
    code = "import signal, abtlab; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    cp = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": ROOT},
                        capture_output=True, text=True, timeout=60, preexec_fn=_default_signals)
    assert cp.stdout.strip() == "True", cp.stderr
