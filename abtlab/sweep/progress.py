"""A small progress line with ETA on stderr (quiet mode for papermill and tests)."""
from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


class Progress:
    def __init__(self, total: int, label: str = "", quiet: bool = False, stream=None):
        self.total, self.label, self.quiet = total, label, quiet
        self.stream = stream or sys.stderr
        self.done = 0
        self.t0 = time.monotonic()

    def step(self, note: str = "", n: int = 1):
        self.done += n
        if self.quiet:
            return
        el = time.monotonic() - self.t0
        eta = el / self.done * (self.total - self.done) if self.done else 0.0
        width = 20
        fill = int(width * self.done / max(self.total, 1))
        bar = "#" * fill + "." * (width - fill)
        end = "\n" if self.done >= self.total else ""
        self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total} "
                          f"{el:5.0f}s, ETA {eta:5.0f}s {note[:36]:<36}{end}")
        self.stream.flush()
