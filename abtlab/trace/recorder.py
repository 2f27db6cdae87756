"""Run an unmodified program under libabtrace (LD_PRELOAD) and collect one trace.

The library writes one `abtrace.<pid>.trace` per process into a private
directory; `record` merges them by start time, reads the dropped-call counts
and removes the directory on every exit path.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import about
from . import readers
from .. import trace
from ..errors import ConfigError, TraceError, UnavailableError

__all__ = ["Recording", "library_path", "record"]

ROOT = about.ROOT


@dataclass
class Recording:
    returncode: int
    records: np.ndarray
    wall_s: float                       # wall time of the program, fork to exit
    pid: int                            # the program's own pid (its children have others)
    dropped: dict = field(default_factory=dict)  # {(pid, tid): calls not recorded}
    path: str | None = None             # the merged trace, when one was written

    @property
    def processes(self) -> int:
        return int(np.unique(self.records["pid"]).size)

    @property
    def threads(self) -> int:
        return int(np.unique(self.records[["pid", "tid"]]).size)


def library_path() -> Path:
    """libabtrace.so of this checkout; UnavailableError (with the fix) if not built."""
    lib = ROOT / "backends" / "trace" / "libabtrace.so"
    if not lib.exists():
        raise UnavailableError(f"{lib} is not built; run `make -C {ROOT / 'native'}`")
    return lib


def _check(command, max_records):
    if not command or not all(isinstance(c, (str, os.PathLike)) for c in command):
        raise ConfigError("command", command, "a non-empty list of program and arguments")
    if shutil.which(os.fspath(command[0])) is None:
        raise ConfigError("command", os.fspath(command[0]), "an executable file or a program on PATH")
    if max_records is not None and (isinstance(max_records, bool) or not isinstance(max_records, int)
                                    or not 1 <= max_records <= 2**32):
        raise ConfigError("max_records", max_records, "an integer in 1..4294967296 (per thread)")


def _run(command, env, cwd):
    t0 = time.perf_counter()
    proc = subprocess.Popen([os.fspath(c) for c in command], env=env, cwd=cwd)
    try:
        rc = proc.wait()
    except BaseException:  # interrupted: do not leave the program running
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    return rc, time.perf_counter() - t0, proc.pid


def record(command, out=None, max_records: int | None = None, env=None, cwd=None) -> Recording:
    """Run command under libabtrace; return its records (and write them to `out` if given).

    max_records bounds each thread's buffer (ABT_TRACE_MAX_RECORDS, default 1M);
    calls beyond it are counted in Recording.dropped. Statically linked programs
    cannot be preloaded and give a TraceError.
    """
    _check(command, max_records)
    run_env = dict(os.environ if env is None else env)
    preload = run_env.get("LD_PRELOAD", "")
    run_env["LD_PRELOAD"] = f"{library_path()}:{preload}" if preload else str(library_path())
    if max_records is not None:
        run_env["ABT_TRACE_MAX_RECORDS"] = str(max_records)
    tdir = tempfile.mkdtemp(prefix="abtrace.")
    try:
        run_env["ABT_TRACE_DIR"] = tdir
        rc, wall, pid = _run(command, run_env, cwd)
        if not any(n.endswith(".trace") for n in os.listdir(tdir)):
            raise TraceError(f"{os.fspath(command[0])!r} left no trace: statically linked, "
                             "killed by a signal, or LD_PRELOAD removed from its environment")
        recs = readers.read_trace_dir(tdir)
        dropped = readers.dropped_counts(tdir)
    finally:
        shutil.rmtree(tdir, ignore_errors=True)
    path = None
    if out is not None:
        path = os.fspath(out)
        if os.path.isdir(path):
            path = os.path.join(path, "abtrace.trace")
        trace.write(path, recs)
    return Recording(rc, recs, wall, pid, dropped, path)
