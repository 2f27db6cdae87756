"""The mount table, read from /proc/self/mountinfo in one place (mount points unescaped
as the kernel escapes them: \\040 for a space)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Mount", "table", "holding"]

MOUNTINFO = Path("/proc/self/mountinfo")


@dataclass(frozen=True)
class Mount:
    point: str
    fstype: str
    source: str
    mount_options: str      # per mount point (rw, relatime, ...)
    super_options: str      # the filesystem's own (errors=, data=, journal ...)

    @property
    def options(self) -> str:
        return ",".join(o for o in (self.mount_options, self.super_options) if o)


def _unescape(field: str) -> str:
    return re.sub(r"\\(\d{3})", lambda m: chr(int(m.group(1), 8)), field)


def table(path=MOUNTINFO) -> list[Mount]:
    """Every mount, in the kernel's order (a mount after the mounts it covers)."""
    out = []
    for line in Path(path).read_text().splitlines():
        left, _, right = line.partition(" - ")
        pre = left.split()
        fstype, source, sopts = (right.split() + ["", "", ""])[:3]
        out.append(Mount(_unescape(pre[4]), fstype, _unescape(source), pre[5], sopts))
    return out


def holding(path, mounts=None) -> Mount | None:
    """The mount that holds path: the longest mount point above it (the last one
    mounted when two share a point)."""
    real, best = os.path.realpath(path), None
    for m in table() if mounts is None else mounts:
        if (real == m.point or real.startswith(m.point.rstrip("/") + "/")) and \
                (best is None or len(m.point) >= len(best.point)):
            best = m
    return best
