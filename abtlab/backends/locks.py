"""Spinlock vs mutex (Petersen, University of Wisconsin-Madison, Fig. 5): N threads x E critical-section
entries of W nops (option entries: Petersen's 100 by default), timed from the first
pthread_create to the last join (backends/locks/abt-locks).

Also holds the two helpers both syscall drivers use: run a program that prints one
`key=value` line, and turn its exit code into abtlab's errors.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from .. import trace
from ..errors import ConfigError, RunError
from ..data.result import RunResult
from .base import Backend
from ..machines import programs
from ..machines.programs import check_exit, parse_result, program

__all__ = ["LocksBackend", "run_kv", "int_in", "LOCKS", "MAX_THREADS", "MAX_WORK", "MAX_ENTRIES"]

LOCKS = ("spin", "mutex")
MAX_THREADS, MAX_WORK, MAX_ENTRIES = 100, 1_000_000, 1_000_000


def run_kv(argv, fields: dict, point: dict | None = None, timeout: float = 600) -> dict:
    """Run argv; return its `key: value` result lines as a dict of strings.

    A non-zero exit raises as programs.check_exit says (2, a bad option: ConfigError
    naming the factor that fields maps the option to, given: its value in point).
    """
    argv = [str(a) for a in argv]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RunError(f"{Path(argv[0]).name} ran longer than {timeout:g} s "
                       f"(options.timeout): {' '.join(argv[1:])}") from None
    check_exit(argv, proc.returncode, proc.stderr, fields, point)
    out = parse_result(proc.stdout)
    if not out:
        raise RunError(f"{Path(argv[0]).name} printed nothing")
    return out


def int_in(point, key, lo, hi):
    """The point's integer `key` in lo..hi; ConfigError naming the key."""
    v = point.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or not lo <= v <= hi:
        raise ConfigError(key, v, f"an integer from {lo} to {hi}")
    return int(v)


class LocksBackend(Backend):
    name = "locks"
    description = ("N threads x E critical-section entries (default 100) of W nops under a pthread "
                   "spinlock or mutex; elapsed from first create to last join (Petersen, University of Wisconsin-Madison)")
    factors = {"lock": "spin", "threads": 1, "work": 1}
    options = {"entries": f"critical-section entries per thread, an integer from 1 to {MAX_ENTRIES:,} "
                          "(default 100, Petersen's; lab 4 takes 10,000: with 100 a run times thread start-up)",
               "trace": "true or false: one record per entry (default true; its two clock reads an "
                        "entry lengthen runs with tiny critical sections)",
               "timeout": "seconds a run may take, a number > 0 (default 600)"}

    def available(self):
        return programs.availability("abt-locks")

    def validate_options(self, options):
        """entries, trace and timeout checked before anything runs (ConfigError naming the option)."""
        out = dict(options)
        if "entries" in out:
            out["entries"] = int_in(out, "entries", 1, MAX_ENTRIES)
        if "trace" in out and not isinstance(out["trace"], (bool, np.bool_)):
            raise ConfigError("trace", out["trace"], "true or false")
        t = out.get("timeout", 600)
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not t > 0:
            raise ConfigError("timeout", t, "a number of seconds > 0")
        return out

    def validate_point(self, point):
        if point.get("lock") not in LOCKS:
            raise ConfigError("lock", point.get("lock"), " | ".join(LOCKS))
        return {**point, "threads": int_in(point, "threads", 1, MAX_THREADS),
                "work": int_in(point, "work", 1, MAX_WORK)}

    def run_point(self, point, ctx):
        """options: entries (default 100), trace (default True: one record per entry,
        two clock reads each, which lengthens runs with tiny critical sections),
        timeout (s, default 600)."""
        point = self.validate_point(point)
        opts = ctx.options
        argv = [program("abt-locks"), "--lock", point["lock"],
                "--threads", point["threads"], "--work", point["work"],
                "--entries", int_in({"entries": opts.get("entries", 100)}, "entries", 1, MAX_ENTRIES)]
        traced = bool(opts.get("trace", True))
        with tempfile.TemporaryDirectory(dir=ctx.workdir) as tmp:
            tpath = Path(tmp) / "locks.trace"
            out = run_kv(argv + (["--trace", tpath] if traced else []), _LOCK_FIELDS, point,
                         timeout=float(opts.get("timeout", 600)))
            ops = trace.read(tpath, kind=trace.Kind.OPS) if traced else None
        attrs = {"freq_mode": "real", "filesystem": "none (CPU-only workload)",
                 "mount_options": "", "hardware_threads": os.cpu_count(),
                 "critical_section": "W x asm volatile(nop) in a counted loop",
                 "mutex_kind": "default pthread mutex (futex, no adaptive spinning)",
                 "entries_per_thread": int(out["entries"]), "traced": int(traced)}
        return RunResult(scalars={"elapsed": int(out["elapsed_ns"]) * 1e-9}, ops=ops, attrs=attrs)


_LOCK_FIELDS = {"--lock": "lock", "--threads": "threads", "--work": "work",
                "--entries": "entries", "--trace": "trace"}
