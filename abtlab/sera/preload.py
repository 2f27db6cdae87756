"""libsera.so (backends/sera): the table file it reads, its environment, its decisions.

Only entries a POSIX call can match go to libsera: individual, blocking, contiguous
read/write/sync. A call whose predicted time (fixed_ns + bytes / bytes_per_s) is below
guard_ns never switches; hold_ns delays the switch back up (hysteresis).
"""
from __future__ import annotations

import glob
from pathlib import Path

import numpy as np

from .. import about
from .. import trace
from ..errors import ConfigError
from .table import FrequencyTable

__all__ = ["LIBRARY", "write_table", "environment", "read_decisions"]

LIBRARY = about.NATIVE / "sera" / "libsera.so"
_POSIX_OPS = ("read", "write", "sync")


def _ns(value, field):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigError(field, value, "a number of nanoseconds >= 0")
    return int(value)


def write_table(table: FrequencyTable, path, guard_ns=1_000_000, hold_ns=0,
                fixed_ns=20_000, bytes_per_s=125e6):
    """Write libsera's line format. Defaults: a 1 ms guard (the type I threshold of the
    table), no hold, and a 125 MB/s, 20 us device (Ge et al., CCGrid 2012, Table III bandwidth)."""
    lines = ["# abtlab target-frequency table for libsera.so (format 1)",
             f"highest {round(table.highest * 1e6)}", f"guard_ns {_ns(guard_ns, 'guard_ns')}",
             f"hold_ns {_ns(hold_ns, 'hold_ns')}",
             f"predict {_ns(fixed_ns, 'fixed_ns')} {max(1, int(bytes_per_s))}"]
    skipped = 0
    for e in table.entries:
        if e.operation in _POSIX_OPS and not e.collective and e.blocking \
                and e.locality == "contiguous":
            lines.append(f"rule {e.operation} {e.size_min} {e.size_max} {round(e.freq_ghz * 1e6)}")
        else:
            skipped += 1
    lines.append(f"# {skipped} entries left out: collective, nonblocking or noncontiguous")
    Path(path).write_text("\n".join(lines) + "\n")
    return Path(path)


def environment(table_file, trace_prefix=None, cpufreq_root=None) -> dict:
    """Environment for a program run under libsera (one trace file per process)."""
    if not LIBRARY.exists():
        raise ConfigError("libsera", str(LIBRARY), "a built library: make -C backends")
    env = {"LD_PRELOAD": str(LIBRARY), "ABT_SERA_TABLE": str(table_file)}
    if trace_prefix is not None:
        env["ABT_SERA_TRACE"] = f"{trace_prefix}.%p"
    if cpufreq_root is not None:
        env["ABT_SERA_CPUFREQ_ROOT"] = str(cpufreq_root)
    return env


def read_decisions(trace_prefix) -> np.ndarray:
    """Every process's decisions (trace.RECORD_DTYPE), in time order. flags & ERROR set
    means the frequency was not applied (no cpufreq here, or the write was refused)."""
    files = sorted(glob.glob(f"{trace_prefix}.*"))
    parts = [trace.read(f, kind=trace.Kind.DECISIONS) for f in files]
    if not parts:
        return np.zeros(0, trace.RECORD_DTYPE)
    recs = np.concatenate(parts)
    return recs[np.argsort(recs["t_start_ns"], kind="stable")]
