"""Ctrl-C at any moment from the `abtlab` command's first instruction: one line and 130
(SIGTERM: 143), never a traceback of an import. The command is a launcher
(backends/start/abt-start.c, which setup.py compiles for the interpreter it installs into)
that starts Python with SIGINT and SIGTERM blocked; the package installs its start-up
handler as its first statement and unblocks them, so a signal sent during the
interpreter's own start-up is delivered then. Processes abtlab starts get the mask the
command was given. Without the launcher (`python -m abtlab`, a console script) the
handler still comes first; `import abtlab` in a notebook or a program leaves their
handlers and mask alone. `python -m benchmarks.faults --kinds early` sends the signal
at 0-300 ms after start over many trials."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCHER = os.path.join(ROOT, "backends", "start", "abt-start.c")
RUN = ["run", "sim", "--reps", "1"]
HELD = (1 << signal.SIGINT - 1) | (1 << signal.SIGTERM - 1)     # as /proc/PID/status shows a mask
# sitecustomize: imported by `site`, in the interpreter's own start-up, before any of
# abtlab's code; the process stops there until the test has sent its signal
STOP_IN_SITE = """import os, signal
if os.environ.pop("STOP_IN_SITE", None):
    os.kill(os.getpid(), signal.SIGSTOP)
"""
# a tool abtlab runs (`abtlab doctor` asks fio its version): writes the mask it was started with
PROBE = """#!{python} -S
import os
with open("/proc/self/status") as f:
    mask = next(line.split()[1] for line in f if line.startswith("SigBlk:"))
with open(os.environ["MASK_OUT"], "w") as f:
    f.write(mask)
print("fio-3.33")
"""
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


def _compile(out, python: str | None):
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        pytest.skip("no C compiler: the `abtlab` command is then scripts/abtlab (setup.py)")
    defines = [f'-DABT_PYTHON="{python}"'] if python else []
    subprocess.run([cc, "-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror", *defines, "-o", str(out),
                    LAUNCHER], check=True, timeout=120)
    return out


@pytest.fixture(scope="module")
def launcher(tmp_path_factory):
    """The `abtlab` command as setup.py builds it for this interpreter (no Python beside
    it here, so it starts the one it was built for)."""
    return _compile(tmp_path_factory.mktemp("launcher") / "abtlab", sys.executable)


def _status(pid: int) -> dict:
    with open(f"/proc/{pid}/status") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def _stopped_in_site(argv, tmp_path) -> subprocess.Popen:
    """argv started with the sitecustomize above, stopped in the interpreter's start-up."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(STOP_IN_SITE)
    p = subprocess.Popen([str(a) for a in argv], cwd=tmp_path, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, preexec_fn=_default_signals,
                         env={**os.environ, "PYTHONPATH": f"{site}:{ROOT}", "STOP_IN_SITE": "1"})
    _, status = os.waitpid(p.pid, os.WUNTRACED)      # until it stops (not a time)
    assert os.WIFSTOPPED(status), f"it did not stop in site: {p.communicate()[1]}"
    return p


@pytest.mark.parametrize("sig, code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_during_the_interpreters_start_up_waits_for_the_handler(launcher, tmp_path, sig, code):
    p = _stopped_in_site([launcher, *RUN, "--out", tmp_path / "r.nc"], tmp_path)
    assert int(_status(p.pid)["SigBlk"], 16) & HELD == HELD      # the launcher blocked both
    os.kill(p.pid, getattr(signal, sig))
    assert int(_status(p.pid)["ShdPnd"], 16) & 1 << getattr(signal, sig) - 1     # held, not lost
    os.kill(p.pid, signal.SIGCONT)
    err = p.communicate(timeout=120)[1]
    assert p.returncode == code and err == f"abtlab: interrupted by {sig}\n", err
    assert not (tmp_path / "r.nc").exists()


def test_without_the_launcher_the_same_signal_prints_a_traceback(tmp_path):
    """The control: `python -m abtlab`, the signal sent at the same point of start-up."""
    p = _stopped_in_site([sys.executable, "-P", "-m", "abtlab", *RUN, "--out", tmp_path / "r.nc"], tmp_path)
    os.kill(p.pid, signal.SIGINT)
    os.kill(p.pid, signal.SIGCONT)
    err = p.communicate(timeout=120)[1]
    assert "Traceback" in err and "KeyboardInterrupt" in err and p.returncode != 130, err


def _child_mask(launcher, tmp_path, preexec_fn) -> int:
    """The blocked-signal mask of a tool `abtlab doctor` runs (fio's version)."""
    probe = tmp_path / "fio"
    probe.write_text(PROBE.format(python=sys.executable))
    probe.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": ROOT, "ABTLAB_FIO": str(probe), "MASK_OUT": str(tmp_path / "mask")}
    cp = subprocess.run([str(launcher), "doctor"], env=env, capture_output=True, text=True, timeout=120,
                        preexec_fn=preexec_fn)
    assert f"{probe} (3.33)" in cp.stdout, cp.stdout + cp.stderr
    return int((tmp_path / "mask").read_text(), 16)


def test_the_processes_abtlab_starts_have_no_signal_blocked(launcher, tmp_path):
    assert _child_mask(launcher, tmp_path, _default_signals) == 0


def test_signals_the_caller_blocked_stay_blocked(launcher, tmp_path):
    """abtlab unblocks only what its launcher blocked (and this shows the probe sees a mask)."""
    def blocked():
        _default_signals()
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT, signal.SIGTERM])
    assert _child_mask(launcher, tmp_path, blocked) == HELD


def test_importing_the_package_elsewhere_keeps_the_mask_and_drops_a_stale_note():
    """A notebook kernel or a program given another process's note keeps its blocked
    signals, and passes no note on."""
    code = ("import os, signal, abtlab; print(sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])), "
            "os.environ.get('ABTLAB_START_BLOCKED'))")

    def term_blocked():
        _default_signals()
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
    cp = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                        env={**os.environ, "PYTHONPATH": ROOT, "ABTLAB_START_BLOCKED": "1:2,15"},
                        preexec_fn=term_blocked)
    assert cp.stdout.split() == ["[<Signals.SIGTERM:", "15>]", "None"], cp.stdout + cp.stderr


def test_the_launcher_finds_the_python_beside_it_or_says_why_not(tmp_path):
    bare = _compile(tmp_path / "abtlab", None)
    cp = subprocess.run([str(bare), "--version"], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 127 and cp.stderr.count("\n") == 1 and "no Python beside" in cp.stderr, cp.stderr
    # as in a virtual environment's bin/: python3 beside it (the interpreter itself: a
    # venv's python symlink finds its venv by its own path, which --version does not need)
    os.symlink(os.path.realpath(sys.executable), tmp_path / "python3")
    cp = subprocess.run([str(bare), "--version"], capture_output=True, text=True, timeout=60,
                        env={**os.environ, "PYTHONPATH": ROOT})
    assert cp.returncode == 0 and cp.stdout.startswith("abtlab "), cp.stdout + cp.stderr
