"""Free space for a dataset: checked before a sweep runs, and a full disk while it runs
(ENOSPC in a part, the resume state or the dataset) turned into one clear error.

The estimate is a floor, not a forecast: each run's op records (a thread's writes of
`file_size / record_size` records, 44 bytes each as stored: abtlab.data.schema's
TABLE_DTYPES and the op dimension's scale) and a few hundred bytes of its scalars. A
simulated IOzone sweep's file is ~1.5x that (the opens, fsyncs and closes, the commit
records), so a disk the estimate does not fit cannot hold the dataset.
"""
from __future__ import annotations

import errno
import os
from pathlib import Path

from ..errors import DiskFullError

__all__ = ["free_bytes", "human", "estimate_bytes", "check_free", "is_full", "full_error"]

OP_RECORD_BYTES = 44        # 4 int32 + 3 int64 columns and the op dimension's f4 scale
RUN_BYTES = 512             # a run's scalars and run id, ~25 variables of 8 bytes, rounded up
_FULL = (errno.ENOSPC, errno.EDQUOT)


def free_bytes(path) -> int | None:
    """Bytes an unprivileged writer may still use on the filesystem of path (or of its
    nearest existing parent); None when that cannot be told."""
    p = Path(os.path.abspath(path))
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        st = os.statvfs(p)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def human(n: float) -> str:
    """Bytes as a person reads them: '18.9 MB' (powers of 1000, as df -H)."""
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def _run_bytes(point: dict) -> int:
    def num(key, default):
        v = point.get(key, default)
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else default
    ops = num("threads", 1) * max(1, int(num("file_size", 1) // num("record_size", 1)))
    return int(ops * OP_RECORD_BYTES + RUN_BYTES)


def estimate_bytes(points: list[dict], runs_per_point: int) -> int:
    """A floor on the dataset's size: every point's runs' op records and scalars."""
    return sum(_run_bytes(p) for p in points) * max(1, int(runs_per_point))


def check_free(out, needed: int, what: str = "its dataset") -> None:
    """DiskFullError (before anything runs) when out's filesystem has less than needed."""
    free = free_bytes(out)
    if free is not None and free < needed:
        raise full_error(out, needed, what=what, free=free, before=True)


def is_full(exc: BaseException) -> bool:
    """exc is the OS saying the filesystem (or the user's quota) is full."""
    return isinstance(exc, OSError) and exc.errno in _FULL


def full_error(path, needed: int | None, what: str = "it", free: int | None = None,
               before: bool = False, kept: str = "") -> DiskFullError:
    """The one line a full disk gets: the path, the space needed and free, what to do."""
    free = free_bytes(path) if free is None else free
    need = f"{what} needs {'at least ' if before else ''}{human(needed)}" if needed else what
    have = f", {human(free)} free" if free is not None else ""
    head = "not enough space for" if before else "no space left on device writing"
    return DiskFullError(f"{head} {path} ({need}{have}){kept}")
