"""Whether something can run here, and why not: a machine's, a program's or a driver's
answer (truthy when it can; the reason says what is missing and how to get it)."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Availability"]


@dataclass
class Availability:
    ok: bool
    reason: str = ""

    def __bool__(self):
        return self.ok
